"""AGL201: A tensor autograd saved for backward is modified in place before that backward."""

from __future__ import annotations

from typing import Iterable, Iterator

from autograd_lint.analysis.inplace import InplaceFinding, InplaceKind
from autograd_lint.analysis.module import ModuleAnalysis
from autograd_lint.rules.base import MODEL_TRIGGERS, Report, Rule
from autograd_lint.rules.fixes import FixSpec, out_of_place
from autograd_lint.rules.inplace_messages import saved_by, written_by
from autograd_lint.settings import Settings



class InplaceOnSavedTensor(Rule):
    code = "AGL201"
    name = "inplace-on-saved-tensor"
    summary = "A tensor autograd saved for backward is modified in place before that backward."
    fix_title = "Rewrite to the out-of-place op"
    triggers = MODEL_TRIGGERS

    def candidates(self, analysis: ModuleAnalysis) -> Iterable:
        return analysis.inplace.findings(InplaceKind.SAVED)

    def check(self, analysis: ModuleAnalysis, settings: Settings) -> Iterator[Report]:
        for f in self.selected(analysis, settings):
            yield Report(self.code, f.node, self.message(analysis, f), f.name, self.fix(analysis, f), f.conditions, f.call)

    @staticmethod
    def message(analysis: ModuleAnalysis, f: InplaceFinding):
        by = saved_by(analysis.module, f)
        written = written_by(analysis.module, f)

        def render(line_of) -> str:
            if f.temporary:
                return (
                    f"The result of `{f.name}` is saved for backward by that op; writing it in place ({written(line_of)}) makes backward fail "
                    f"with 'modified by an inplace operation' — use the out-of-place op"
                )
            return (
                f"`{f.name}` was saved for backward{by(line_of)}; writing it in place ({written(line_of)}) makes backward fail "
                f"with 'modified by an inplace operation' — use the out-of-place op or `.clone()` it first"
            )

        return render

    def fix(self, analysis: ModuleAnalysis, f: InplaceFinding) -> FixSpec | None:
        return out_of_place(analysis, f, self.fix_title)
