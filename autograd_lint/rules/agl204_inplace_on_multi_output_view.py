"""AGL204: one of the views `split`/`chunk`/`unbind` returned is written in place while it requires grad."""

from __future__ import annotations

from typing import Iterable, Iterator

from autograd_lint.analysis.inplace import InplaceFinding, InplaceKind
from autograd_lint.analysis.module import ModuleAnalysis
from autograd_lint.rules.base import Report, Rule
from autograd_lint.rules.fixes import FixSpec, out_of_place
from autograd_lint.rules.inplace_messages import returned_by
from autograd_lint.settings import Settings


class InplaceOnMultiOutputView(Rule):
    code = "AGL204"
    name = "inplace-on-multi-output-view"
    summary = "A view that `split`, `chunk` or `unbind` returned is written in place while it requires grad (torch raises at once)."
    fix_title = "Rewrite to the out-of-place op"
    triggers = (b"split", b"chunk", b"unbind", b"import *")

    def candidates(self, analysis: ModuleAnalysis) -> Iterable:
        return analysis.inplace.findings(InplaceKind.MULTI_VIEW)

    def check(self, analysis: ModuleAnalysis, settings: Settings) -> Iterator[Report]:
        for f in self.selected(analysis, settings):
            yield Report(self.code, f.node, self.message(analysis, f), f.name, self.fix(analysis, f), f.conditions)

    @staticmethod
    def message(analysis: ModuleAnalysis, f: InplaceFinding):
        by = returned_by(analysis.module, f)

        def render(line_of) -> str:
            return (
                f"`{f.name}` is one of several views returned by{by(line_of)}; torch forbids writing them in place while they "
                f"require grad, so `{f.how}` raises — use the out-of-place op"
            )

        return render

    def fix(self, analysis: ModuleAnalysis, f: InplaceFinding) -> FixSpec | None:
        """The out-of-place op, as for AGL201. Unsafe: another name for
        the same view would no longer see the write."""
        return out_of_place(analysis, f, self.fix_title)
