"""AGL203: A tensor autograd saved for backward is written through `.data`, so its gradients are silently wrong."""

from __future__ import annotations

from typing import Iterable, Iterator

from autograd_lint.analysis.inplace import InplaceFinding, InplaceKind
from autograd_lint.analysis.module import ModuleAnalysis
from autograd_lint.rules.base import MODEL_TRIGGERS, Report, Rule
from autograd_lint.rules.inplace_messages import saved_by
from autograd_lint.settings import Settings


class InplaceThroughData(Rule):
    code = "AGL203"
    name = "inplace-through-data-on-saved-tensor"
    summary = "A tensor autograd saved for backward is written through `.data`, so its gradients are silently wrong."
    fix_title = None
    triggers = MODEL_TRIGGERS

    def candidates(self, analysis: ModuleAnalysis) -> Iterable:
        return analysis.inplace.findings(InplaceKind.DATA)

    def check(self, analysis: ModuleAnalysis, settings: Settings) -> Iterator[Report]:
        for f in self.selected(analysis, settings):
            yield Report(self.code, f.node, self.message(analysis, f), f.name, conditions=f.conditions)

    @staticmethod
    def message(analysis: ModuleAnalysis, f: InplaceFinding):
        by = saved_by(analysis.module, f)

        def render(line_of) -> str:
            return (
                f"`{f.name}` was saved for backward{by(line_of)}; writing it through `.data` (`{f.how}`) is invisible to autograd, "
                f"so its gradients are silently wrong — compute the new value out of place or `.clone()` it first"
            )

        return render
