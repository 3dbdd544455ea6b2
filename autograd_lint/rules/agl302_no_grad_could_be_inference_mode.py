"""AGL302 (opt-in): `torch.no_grad()` where `torch.inference_mode()` would do."""

from __future__ import annotations

from typing import Iterator

from autograd_lint.analysis.module import ModuleAnalysis
from autograd_lint.rules.base import Report, Rule


class NoGradCouldBeInferenceMode(Rule):
    code = "AGL302"
    name = "no-grad-could-be-inference-mode"
    summary = "`torch.no_grad()` whose results never reach autograd again could be `torch.inference_mode()`."
    fix_title = "Use `torch.inference_mode()`"
    default_enabled = False
    triggers = (b"no_grad",)

    def check(self, analysis: ModuleAnalysis) -> Iterator[Report]:
        for f in analysis.evaluation.inference_mode_findings():
            yield Report(self.code, f.node, f.message())
