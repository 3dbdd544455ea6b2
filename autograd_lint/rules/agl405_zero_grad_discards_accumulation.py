"""AGL405: `zero_grad()` every iteration of a loop that steps only every k-th: gradient accumulation undone."""

from __future__ import annotations

from typing import Iterable, Iterator

import libcst as cst

from autograd_lint.analysis.module import ModuleAnalysis
from autograd_lint.analysis.names import short_code
from autograd_lint.analysis.unzeroed import DiscardedFinding
from autograd_lint.rules.base import Report, Rule
from autograd_lint.settings import Settings


class ZeroGradDiscardsAccumulation(Rule):
    code = "AGL405"
    name = "zero-grad-discards-accumulation"
    summary = "`zero_grad()` throws away the gradients the next step was to apply: it runs every iteration of a loop that steps only every k-th, or between the backward and the step."
    triggers = (b"zero_grad",)

    def candidates(self, analysis: ModuleAnalysis) -> Iterable:
        return analysis.unzeroed.discarded

    def check(self, analysis: ModuleAnalysis, settings: Settings) -> Iterator[Report]:
        for f in self.selected(analysis, settings):
            yield Report(self.code, f.node, self.message(analysis, f), self.subject(analysis, f))

    @staticmethod
    def subject(analysis: ModuleAnalysis, f: DiscardedFinding) -> str | None:
        """What is zeroed, as written (`optimizer`)."""
        func = f.node.func if isinstance(f.node, cst.Call) else None
        return short_code(analysis.module, func.value) if isinstance(func, cst.Attribute) else None

    @classmethod
    def message(cls, analysis: ModuleAnalysis, f: DiscardedFinding):
        zeroed = cls.subject(analysis, f)
        step = f.step.func if isinstance(f.step, cst.Call) else None
        opt = short_code(analysis.module, step.value) if isinstance(step, cst.Attribute) else None

        def render(line_of) -> str:
            what = f"`{zeroed}.zero_grad()`" if zeroed else "this zeroing"
            stepper = f"`{opt}.step()`" if opt else "the step"
            if f.backward is not None:
                return (
                    f"{what} runs after the backward at line {line_of(f.backward)} and before {stepper} at line {line_of(f.step)}: "
                    f"the step applies zeroed gradients, so the model does not learn from the backward — zero them after the step or before the backward"
                )
            return (
                f"{what} runs with every backward but {stepper} at line {line_of(f.step)} only every few: the gradients accumulated "
                f"in between are thrown away, each step applies one batch's — zero them after the step, under its `if`"
            )

        return render
