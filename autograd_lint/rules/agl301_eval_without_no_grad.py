"""AGL301: a model is run in evaluation code with grad mode on."""

from __future__ import annotations

from typing import Iterator

from autograd_lint.analysis.module import ModuleAnalysis
from autograd_lint.rules.base import Report, Rule


class EvalWithoutNoGrad(Rule):
    code = "AGL301"
    name = "eval-without-no-grad"
    summary = "A model is run in evaluation code with grad mode on: a graph is built and activations are kept for nothing."
    fix_title = "Decorate the function with `@torch.no_grad()` (or wrap the loop)"
    triggers = (b"eval", b"val", b"test", b"predict", b"infer", b"generate", b"score")

    def check(self, analysis: ModuleAnalysis) -> Iterator[Report]:
        for f in analysis.evaluation.eval_findings():
            yield Report(self.code, f.node, f.message())
