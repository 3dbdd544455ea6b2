"""AGL401: `zero_grad(set_to_none=False)`."""

from __future__ import annotations

from typing import Iterable, Iterator

import libcst as cst

from autograd_lint.analysis.module import ModuleAnalysis
from autograd_lint.analysis.resolve import Condition, NoStaticGradMemory
from autograd_lint.rules.base import Report, Rule
from autograd_lint.settings import Settings
from autograd_lint.rules.fixes import SAFE, UNSAFE, FixSpec, reads_grad


class ZeroGradSetToNoneFalse(Rule):
    code = "AGL401"
    name = "zero-grad-set-to-none-false"
    summary = "`zero_grad(set_to_none=False)` writes zeros into every gradient and keeps their memory; `None` is cheaper."
    fix_title = "Use `set_to_none=True`"
    triggers = (b"zero_grad",)

    def candidates(self, analysis: ModuleAnalysis) -> Iterable:
        return analysis.zeroing.zero_grads.values()

    def selected(self, analysis: ModuleAnalysis, settings: Settings) -> Iterable:
        # CUDA-graph capture replays kernels on fixed addresses: gradients
        # must keep their storage, so `set_to_none=False` is deliberate
        # there, in this module or another of the project.
        if analysis.zeroing.static_grad_memory:
            return ()
        return [z for z in self.candidates(analysis) if z.set_to_none is False]

    def conditions(self, item: object) -> tuple[Condition, ...]:
        return (NoStaticGradMemory(),)

    def check(self, analysis: ModuleAnalysis, settings: Settings) -> Iterator[Report]:
        for z in self.selected(analysis, settings):
            if z.default:
                call = f"zero_grad(set_to_none={z.via})` (`{z.via}` is False unless the caller passes it)"
            else:
                call = f"zero_grad(set_to_none={z.via})` (`{z.via}` is always False here)" if z.via else "zero_grad(set_to_none=False)`"
            yield Report(
                self.code,
                z.node,
                f"`{call} launches a kernel per parameter to write zeros and keeps every "
                "gradient allocated — use `set_to_none=True` (the default since torch 2.0)",
                fix=None if z.default else self.fix(analysis, z),
                conditions=self.conditions(z),
            )

    def fix(self, analysis: ModuleAnalysis, z) -> FixSpec | None:
        """`False` (or the local name that is always False) -> `True`.
        Unsafe where the function reads `.grad`: after the fix it may find
        None instead of zeros."""
        args = []
        for a in z.node.args:
            says = a.keyword is None or a.keyword.value == "set_to_none"
            if says and isinstance(a.value, cst.Name) and a.value.value in ("False", z.via):
                a = a.with_changes(value=cst.Name("True"))
            args.append(a)
        safety = UNSAFE if reads_grad(analysis.module) else SAFE
        return FixSpec(safety, self.fix_title or "", ((z.node, z.node.with_changes(args=args)),))
