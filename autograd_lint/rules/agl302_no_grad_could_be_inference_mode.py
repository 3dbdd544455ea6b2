"""AGL302 (opt-in): `torch.no_grad()` where `torch.inference_mode()` would do."""

from __future__ import annotations

from typing import Iterable, Iterator

import libcst as cst

from autograd_lint.analysis.module import ModuleAnalysis
from autograd_lint.rules.base import Report, Rule
from autograd_lint.rules.fixes import UNSAFE, FixSpec
from autograd_lint.settings import Settings

MESSAGE = (
    "nothing computed under this `torch.no_grad()` is used by autograd later; `torch.inference_mode()` "
    "also skips view tracking and version counting — use it instead"
)


class NoGradCouldBeInferenceMode(Rule):
    code = "AGL302"
    name = "no-grad-could-be-inference-mode"
    summary = "`torch.no_grad()` whose results never reach autograd again could be `torch.inference_mode()`."
    fix_title = "Use `torch.inference_mode()`"
    default_enabled = False
    triggers = (b"no_grad",)

    def candidates(self, analysis: ModuleAnalysis) -> Iterable:
        return analysis.no_grad_blocks.findings()

    def check(self, analysis: ModuleAnalysis, settings: Settings) -> Iterator[Report]:
        for block in self.selected(analysis, settings):
            yield Report(self.code, block.node, MESSAGE, fix=self.fix(block.node))

    def fix(self, node: cst.CSTNode) -> FixSpec | None:
        """Unsafe: an inference tensor that later meets autograd raises."""
        calls: list[cst.CSTNode] = []
        if isinstance(node, cst.With):
            calls = [i.item for i in node.items]
        elif isinstance(node, cst.Decorator):
            calls = [node.decorator]
        for call in calls:
            func = call.func if isinstance(call, cst.Call) else call
            if isinstance(func, cst.Attribute) and func.attr.value == "no_grad":
                new_func = func.with_changes(attr=cst.Name("inference_mode"))
                new = call.with_changes(func=new_func) if isinstance(call, cst.Call) else cst.Call(func=new_func)
                return FixSpec(UNSAFE, self.fix_title or "", ((call, new),))
        return None
