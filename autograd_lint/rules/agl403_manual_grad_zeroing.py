"""AGL403: gradients zeroed by hand (`p.grad.zero_()`)."""

from __future__ import annotations

from typing import Iterable, Iterator

import libcst as cst

from autograd_lint.analysis.module import ModuleAnalysis
from autograd_lint.rules.base import Report, Rule
from autograd_lint.settings import Settings
from autograd_lint.rules.fixes import SAFE, UNSAFE, FixSpec, reads_grad


class ManualGradZeroing(Rule):
    code = "AGL403"
    name = "manual-grad-zeroing"
    summary = "A gradient is zeroed by hand (`p.grad.zero_()`); setting it to `None` frees it and costs no kernel."
    fix_title = "Assign `None` to the gradient"
    triggers = (b".grad",)

    def candidates(self, analysis: ModuleAnalysis) -> Iterable:
        return analysis.zeroing.manual.values()

    def check(self, analysis: ModuleAnalysis, settings: Settings) -> Iterator[Report]:
        for z in self.selected(analysis, settings):
            yield Report(self.code, z.node, self.message(z), fix=self.fix(analysis, z))

    @staticmethod
    def message(z) -> str:
        if z.grad_expr is None:  # `torch._foreach_zero_(grads)`
            what = f"the gradients in `{z.target}` are" if z.target else "a list of gradients is"
            return f"{what} zeroed in place, keeping their memory — set each parameter's `.grad = None` (or call the optimizer's `zero_grad()`)"
        return (
            f"`{z.target}` is zeroed in place, keeping its memory and launching a kernel — set `{z.target.removesuffix('.data')} = None` "
            "(or call the optimizer's `zero_grad()`)"
        )

    def fix(self, analysis: ModuleAnalysis, z) -> FixSpec | None:
        """`p.grad.zero_()` -> `p.grad = None`. Unsafe where the file
        touches `.grad` elsewhere (it may find None instead of zeros). None
        for a list zeroed at once (`torch._foreach_zero_`): the parameters
        the list came from are not at hand."""
        if z.grad_expr is None:
            return None
        line = analysis.statement_line(z.node)
        if line is None or not isinstance(line.body[0], cst.Expr) or line.body[0].value is not z.node:
            return None
        grad = z.node.func.value
        if isinstance(grad, cst.Attribute) and grad.attr.value == "data":
            grad = grad.value
        new = cst.Assign(targets=[cst.AssignTarget(target=grad)], value=cst.Name("None"))
        uses = len(analysis.zeroing.manual)  # the zeroings the fixes remove
        safety = UNSAFE if reads_grad(analysis.module, allowed=uses) else SAFE
        return FixSpec(safety, self.fix_title or "", ((line.body[0], new),))
