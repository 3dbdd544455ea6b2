"""AGL205: `optimizer.step()` updates in place parameters that a graph still to be backpropagated saved."""

from __future__ import annotations

from typing import Iterable, Iterator

import libcst as cst

from autograd_lint.analysis.module import ModuleAnalysis
from autograd_lint.analysis.names import callee_text, short_code
from autograd_lint.analysis.steps import StepFinding
from autograd_lint.rules.base import Report, Rule
from autograd_lint.settings import Settings


class StepBeforeBackward(Rule):
    code = "AGL205"
    name = "step-before-backward"
    summary = "`optimizer.step()` runs between a forward and a later `backward()` of its graph, which saved the parameters the step updates in place."
    triggers = (b"step",)

    def candidates(self, analysis: ModuleAnalysis) -> Iterable:
        return analysis.steps.found

    def check(self, analysis: ModuleAnalysis, settings: Settings) -> Iterator[Report]:
        for f in self.selected(analysis, settings):
            yield Report(self.code, f.node, self.message(analysis, f), self.subject(analysis, f), None, f.conditions)

    @staticmethod
    def subject(analysis: ModuleAnalysis, f: StepFinding) -> str | None:
        """The optimizer, as written (`opt_D`)."""
        func = f.node.func if isinstance(f.node, cst.Call) else None
        return short_code(analysis.module, func.value) if isinstance(func, cst.Attribute) else None

    @classmethod
    def message(cls, analysis: ModuleAnalysis, f: StepFinding):
        opt = cls.subject(analysis, f) or "the optimizer"
        module = analysis.module
        fwd = callee_text(module, f.forward) if isinstance(f.forward, cst.CSTNode) else None
        back = callee_text(module, f.backward) if isinstance(f.backward, cst.CSTNode) else None

        def render(line_of) -> str:
            through = f" `{fwd}` at line {line_of(f.forward)}" if fwd else " the forward"
            later = f"`{back}` at line {line_of(f.backward)}" if back else f"the `backward()` at line {line_of(f.backward)}"
            if f.next_iteration:
                # The forward takes in its own output of the iteration before,
                # and `retain_graph=True` keeps that graph for the next backward.
                return (
                    f"`{opt}.step()` updates in place the parameters that{through} saved for backward, and the next "
                    f"iteration's forward takes in this one's output, so {later} fails there with 'modified by an inplace "
                    f"operation' — detach the carried state at the start of each iteration and drop `retain_graph=True`"
                )
            return (
                f"`{opt}.step()` updates in place the parameters that{through} saved for backward, so {later} fails "
                f"with 'modified by an inplace operation' — run every backward through that forward before the step, or recompute it after"
            )

        return render
