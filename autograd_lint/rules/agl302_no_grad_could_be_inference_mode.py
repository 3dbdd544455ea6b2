"""AGL302 (opt-in): `torch.no_grad()` where `torch.inference_mode()` would do."""

from __future__ import annotations

from typing import Iterator

import libcst as cst

from autograd_lint.analysis.module import ModuleAnalysis
from autograd_lint.rules.base import Report, Rule
from autograd_lint.rules.fixes import UNSAFE, FixSpec


class NoGradCouldBeInferenceMode(Rule):
    code = "AGL302"
    name = "no-grad-could-be-inference-mode"
    summary = "`torch.no_grad()` whose results never reach autograd again could be `torch.inference_mode()`."
    fix_title = "Use `torch.inference_mode()`"
    default_enabled = False
    triggers = (b"no_grad",)

    def check(self, analysis: ModuleAnalysis) -> Iterator[Report]:
        for f in analysis.evaluation.inference_mode_findings():
            yield Report(self.code, f.node, f.message(), fix=self.fix(f.node))

    @staticmethod
    def fix(node: cst.CSTNode) -> FixSpec | None:
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
                return FixSpec(UNSAFE, "Use `torch.inference_mode()`", ((call, new),))
        return None
