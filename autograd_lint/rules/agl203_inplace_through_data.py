"""AGL203: A tensor autograd saved for backward is written through `.data`, so its gradients are silently wrong."""

from __future__ import annotations

from typing import Iterator

from autograd_lint.analysis.inplace import InplaceKind
from autograd_lint.analysis.module import ModuleAnalysis
from autograd_lint.rules.base import Report, Rule


class InplaceThroughData(Rule):
    code = "AGL203"
    name = "inplace-through-data-on-saved-tensor"
    summary = "A tensor autograd saved for backward is written through `.data`, so its gradients are silently wrong."
    fix_title = None
    triggers = (b"torch",)

    def check(self, analysis: ModuleAnalysis) -> Iterator[Report]:
        for f in analysis.inplace.findings(InplaceKind.DATA):
            yield Report(self.code, f.node, f.message(), subject=f.name)
