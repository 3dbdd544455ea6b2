"""AGL401: `zero_grad(set_to_none=False)`."""

from __future__ import annotations

from typing import Iterator

from autograd_lint.analysis.module import ModuleAnalysis
from autograd_lint.rules.base import Report, Rule


class ZeroGradSetToNoneFalse(Rule):
    code = "AGL401"
    name = "zero-grad-set-to-none-false"
    summary = "`zero_grad(set_to_none=False)` writes zeros into every gradient and keeps their memory; `None` is cheaper."
    fix_title = "Use `set_to_none=True`"
    triggers = (b"zero_grad",)

    def check(self, analysis: ModuleAnalysis) -> Iterator[Report]:
        for z in analysis.program.ir.zero_grads:
            if z.set_to_none is False:
                yield Report(
                    self.code,
                    z.node,
                    "`zero_grad(set_to_none=False)` launches a kernel per parameter to write zeros and keeps every "
                    "gradient allocated — use `set_to_none=True` (the default since torch 2.0)",
                )
