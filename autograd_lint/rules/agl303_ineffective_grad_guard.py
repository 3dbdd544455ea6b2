"""AGL303: a grad-mode guard that guards nothing (`torch.no_grad()` as a statement, `volatile=True`)."""

from __future__ import annotations

from typing import Iterable, Iterator

from autograd_lint.analysis.grad_blocks import IneffectiveGuard
from autograd_lint.analysis.module import ModuleAnalysis
from autograd_lint.rules.base import Report, Rule
from autograd_lint.settings import Settings


class IneffectiveGradGuard(Rule):
    code = "AGL303"
    name = "ineffective-grad-guard"
    summary = "A grad-mode guard that changes nothing: `torch.no_grad()` called as a statement, or `Variable(..., volatile=True)`."
    fix_title = None
    triggers = (b"no_grad", b"inference_mode", b"enable_grad", b"volatile")

    def candidates(self, analysis: ModuleAnalysis) -> Iterable:
        return analysis.ineffective_guards.findings()

    def check(self, analysis: ModuleAnalysis, settings: Settings) -> Iterator[Report]:
        for g in self.selected(analysis, settings):
            yield Report(self.code, g.node, self.message(g))

    @staticmethod
    def message(g: IneffectiveGuard) -> str:
        if g.volatile:
            return (
                f"`{g.what}` does nothing since torch 0.4: the code after it still records a graph — "
                "run it under `with torch.no_grad():` instead"
            )
        return (
            f"`{g.what}` as a statement makes a context manager and drops it: grad mode does not change — "
            f"use `with {g.what}:` around the code it should cover (or decorate the function)"
        )
