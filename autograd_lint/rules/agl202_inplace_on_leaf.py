"""AGL202: A leaf tensor that requires grad is modified in place while grad mode is on."""

from __future__ import annotations

from typing import Iterable, Iterator

from autograd_lint.analysis.inplace import InplaceFinding, InplaceKind
from autograd_lint.analysis.module import ModuleAnalysis
from autograd_lint.rules.base import MODEL_TRIGGERS, Report, Rule
from autograd_lint.rules.fixes import SAFE, UNSAFE, FixSpec, no_grad_with
from autograd_lint.settings import Settings


class InplaceOnLeaf(Rule):
    code = "AGL202"
    name = "inplace-on-leaf-requiring-grad"
    summary = "A leaf tensor that requires grad is modified in place while grad mode is on."
    fix_title = "Wrap the update in `with torch.no_grad():`"
    triggers = MODEL_TRIGGERS

    def candidates(self, analysis: ModuleAnalysis) -> Iterable:
        return analysis.inplace.findings(InplaceKind.LEAF)

    def check(self, analysis: ModuleAnalysis, settings: Settings) -> Iterator[Report]:
        for f in self.selected(analysis, settings):
            if f.writes_graph is True:
                advice = "write into a tensor that does not require grad, or build it out of place (`torch.stack`)"
            else:
                advice = "do the update under `with torch.no_grad():`"
            message = f"`{f.name}` is a leaf tensor that requires grad; writing it in place (`{f.how}`) with grad enabled raises a RuntimeError — {advice}"
            yield Report(self.code, f.node, message, f.name, self.fix(analysis, f), f.conditions)

    def fix(self, analysis: ModuleAnalysis, f: InplaceFinding) -> FixSpec | None:
        """Safe: the update is meant to change the parameter's value, not to
        be recorded by autograd (which refuses it anyway). None where what is
        written carries a graph: under `no_grad` the write would silently
        drop the gradient it carries; unsafe where it may (a value of code
        unseen)."""
        if f.writes_graph is True:
            return None
        line = analysis.statement_line(f.node)
        if line is None:
            return None
        torch_local = analysis.torch_name
        new = no_grad_with(torch_local or "torch", [line], line)
        return FixSpec(SAFE if f.writes_graph is False else UNSAFE, self.fix_title, ((line, new),), import_torch=torch_local is None)
