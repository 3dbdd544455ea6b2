"""AGL506: a parameter read out of the graph in `forward` (`self.log_t.exp().item()`), and used nowhere else: it never gets a gradient."""

from __future__ import annotations

from typing import Iterable, Iterator

import libcst as cst

from autograd_lint.analysis.detached_parameters import DetachedParameter
from autograd_lint.analysis.module import ModuleAnalysis
from autograd_lint.analysis.names import short_code
from autograd_lint.rules.base import Report, Rule
from autograd_lint.settings import Settings


class ParameterDetachedInForward(Rule):
    code = "AGL506"
    name = "parameter-detached-in-forward"
    summary = (
        "A parameter reaches `forward`'s output only through `.item()`, `.detach()`, `.data` or `float()`: "
        "it never gets a gradient, and the optimizer never changes it."
    )
    triggers = (b"Parameter",)

    def candidates(self, analysis: ModuleAnalysis) -> Iterable:
        return analysis.detached_parameters.found

    def check(self, analysis: ModuleAnalysis, settings: Settings) -> Iterator[Report]:
        for f in self.selected(analysis, settings):
            yield Report(self.code, f.node, self.message(analysis, f), subject=f"self.{f.attr}")

    @staticmethod
    def message(analysis: ModuleAnalysis, f: DetachedParameter) -> str:
        receiver = (short_code(analysis.module, f.receiver) or f"self.{f.attr}") if analysis.module is not None and isinstance(f.receiver, cst.CSTNode) else f"self.{f.attr}"
        return (
            f"`self.{f.attr}` reaches the output only through {f.how}, which cuts it off the graph: "
            f"`self.{f.attr}.grad` stays None and the optimizer never changes it — "
            f"keep it a tensor (drop {f.how} and compute with `{receiver}`)"
        )
