"""AGL403: gradients zeroed by hand (`p.grad.zero_()`)."""

from __future__ import annotations

from typing import Iterator

from autograd_lint.analysis.module import ModuleAnalysis
from autograd_lint.rules.base import Report, Rule


class ManualGradZeroing(Rule):
    code = "AGL403"
    name = "manual-grad-zeroing"
    summary = "A gradient is zeroed by hand (`p.grad.zero_()`); setting it to `None` frees it and costs no kernel."
    fix_title = "Assign `None` to the gradient"
    triggers = (b".grad",)

    def check(self, analysis: ModuleAnalysis) -> Iterator[Report]:
        for z in analysis.program.ir.grad_zeroings:
            yield Report(
                self.code,
                z.node,
                f"`{z.target}` is zeroed in place, keeping its memory and launching a kernel — set `{z.target.removesuffix('.data')} = None` "
                "(or call the optimizer's `zero_grad()`)",
            )
