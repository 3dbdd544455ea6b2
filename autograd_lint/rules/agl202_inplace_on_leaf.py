"""AGL202: A leaf tensor that requires grad is modified in place while grad mode is on."""

from __future__ import annotations

from typing import Iterator

from autograd_lint.analysis.inplace import InplaceKind
from autograd_lint.analysis.module import ModuleAnalysis
from autograd_lint.rules.base import Report, Rule


class InplaceOnLeaf(Rule):
    code = "AGL202"
    name = "inplace-on-leaf-requiring-grad"
    summary = "A leaf tensor that requires grad is modified in place while grad mode is on."
    fix_title = "Wrap the update in `with torch.no_grad():`"
    triggers = (b"torch",)

    def check(self, analysis: ModuleAnalysis) -> Iterator[Report]:
        for f in analysis.inplace.findings(InplaceKind.LEAF):
            yield Report(self.code, f.node, f.message(), subject=f.name)
