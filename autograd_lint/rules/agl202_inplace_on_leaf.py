"""AGL202: A leaf tensor that requires grad is modified in place while grad mode is on."""

from __future__ import annotations

from typing import Iterator

from autograd_lint.analysis.inplace import InplaceFinding, InplaceKind
from autograd_lint.analysis.module import ModuleAnalysis
from autograd_lint.rules.base import Report, Rule
from autograd_lint.rules.fixes import SAFE, FixSpec, no_grad_with


class InplaceOnLeaf(Rule):
    code = "AGL202"
    name = "inplace-on-leaf-requiring-grad"
    summary = "A leaf tensor that requires grad is modified in place while grad mode is on."
    fix_title = "Wrap the update in `with torch.no_grad():`"
    triggers = (b"torch",)

    def check(self, analysis: ModuleAnalysis) -> Iterator[Report]:
        for f in analysis.inplace.findings(InplaceKind.LEAF):
            yield Report(self.code, f.node, f.message(), subject=f.name, fix=self.fix(analysis, f))

    def fix(self, analysis: ModuleAnalysis, f: InplaceFinding) -> FixSpec | None:
        """Safe: the update is meant to change the parameter's value, not to
        be recorded by autograd (which refuses it anyway)."""
        line = analysis.statement_line(f.node)
        if line is None:
            return None
        torch_local = analysis.torch_name
        new = no_grad_with(torch_local or "torch", [line], line)
        return FixSpec(SAFE, "Wrap the update in `with torch.no_grad():`", ((line, new),), import_torch=torch_local is None)
