"""AGL201: A tensor autograd saved for backward is modified in place before that backward."""

from __future__ import annotations

from typing import Iterator

from autograd_lint.analysis.inplace import InplaceKind
from autograd_lint.analysis.module import ModuleAnalysis
from autograd_lint.rules.base import Report, Rule


class InplaceOnSavedTensor(Rule):
    code = "AGL201"
    name = "inplace-on-saved-tensor"
    summary = "A tensor autograd saved for backward is modified in place before that backward."
    fix_title = "Rewrite to the out-of-place op"
    triggers = (b"torch",)

    def check(self, analysis: ModuleAnalysis) -> Iterator[Report]:
        for f in analysis.inplace.findings(InplaceKind.SAVED):
            yield Report(self.code, f.node, f.message(), subject=f.name)
