"""AGL404: a training loop backpropagates and steps an optimizer every iteration and never zeroes its gradients."""

from __future__ import annotations

from typing import Iterable, Iterator

import libcst as cst

from autograd_lint.analysis.module import ModuleAnalysis
from autograd_lint.analysis.names import callee_text, short_code
from autograd_lint.analysis.unzeroed import UnzeroedFinding
from autograd_lint.rules.base import Report, Rule
from autograd_lint.settings import Settings


class GradientsNeverZeroed(Rule):
    code = "AGL404"
    name = "gradients-never-zeroed"
    summary = "A training loop backpropagates and steps an optimizer every iteration but nothing in it zeroes the gradients, so each step applies the sum of all earlier ones."
    triggers = (b"step",)

    def candidates(self, analysis: ModuleAnalysis) -> Iterable:
        return analysis.unzeroed.found

    def check(self, analysis: ModuleAnalysis, settings: Settings) -> Iterator[Report]:
        for f in self.selected(analysis, settings):
            yield Report(self.code, f.zeroed_before or f.node, self.message(analysis, f), self.subject(analysis, f))

    @staticmethod
    def subject(analysis: ModuleAnalysis, f: UnzeroedFinding) -> str | None:
        """The optimizer, as written (`optimizer`, also in `scaler.step(optimizer)`)."""
        if isinstance(f.optimizer, cst.CSTNode):
            return short_code(analysis.module, f.optimizer)
        func = f.step.func if isinstance(f.step, cst.Call) else None
        return short_code(analysis.module, func.value) if isinstance(func, cst.Attribute) else None

    @classmethod
    def message(cls, analysis: ModuleAnalysis, f: UnzeroedFinding):
        opt = cls.subject(analysis, f)
        back = callee_text(analysis.module, f.node) if isinstance(f.node, cst.CSTNode) else None

        def render(line_of) -> str:
            stepped = short_code(analysis.module, f.step.func) if isinstance(f.step, cst.Call) else None
            stepper = f"`{stepped}()`" if stepped else "the optimizer step"
            zero = f"`{opt}.zero_grad()`" if opt else "`optimizer.zero_grad()`"
            if f.closure:
                what = f"`{back}`" if back else "the backward"
                return (
                    f"{what} in the closure adds to the gradients of the closure's earlier evaluations: {stepper} at line "
                    f"{line_of(f.step)} evaluates it several times (a line search) and nothing zeroes them — call {zero} at the top of the closure"
                )
            if f.after_step is not None:
                what = f"`{back}`" if back else "the backward"
                return (
                    f"{what} adds to the gradients that {stepper} at line {line_of(f.after_step)} already applied: nothing zeroes them in between, "
                    f"so {stepper} at line {line_of(f.step)} applies them again — call {zero} before this backward"
                )
            if f.zeroed_before is not None:
                once = callee_text(analysis.module, f.zeroed_before) if isinstance(f.zeroed_before, cst.CSTNode) else None
                what = f"`{back}`" if back else ("the backward" if f.direct else "the call that backpropagates")
                return (
                    f"`{once or 'zero_grad(...)'}` runs before the loop, not in it: {what} at line {line_of(f.node)} adds to the gradients "
                    f"of every earlier iteration and {stepper} at line {line_of(f.step)} applies their sum — move the zeroing into the loop"
                )
            if f.setting is not None and isinstance(f.setting_node, cst.CSTNode):
                flag = short_code(analysis.module, f.setting_node)
                what = f"`{back}`" if back else ("this backward" if f.direct else "this call")
                return (
                    f"where `{flag}` is {'true' if f.setting[1] else 'false'}, nothing in the loop zeroes the gradients: {what} adds to those "
                    f"of every earlier iteration and {stepper} at line {line_of(f.step)} applies their sum — call {zero} on that branch too"
                )
            if f.direct:
                what, where = (f"`{back}`" if back else "this backward"), "the backward"
                does = "adds to the gradients of every earlier iteration"
            else:
                what, where = (f"`{back}`" if back else "this call"), "its backward"
                does = "backpropagates, adding to the gradients of every earlier iteration"
            return (
                f"{what} {does}: nothing in the loop zeroes them, so {stepper} at line {line_of(f.step)} applies their sum "
                f"— call {zero} before {where}"
            )

        return render
