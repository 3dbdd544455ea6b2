"""Grad mode in evaluation code: AGL301 (a model run with grad on where
nothing will backpropagate) and AGL302 (a `no_grad` block that could be
`inference_mode`).

provenance.py records, while interpreting with grad mode tracked, the first
model call of every evaluation region (after `model.eval()`, in a function
named like evaluation, in a loop over a validation loader) and every
`torch.no_grad()` block with what it wrote; this module applies the
exclusions and shapes the findings.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

import libcst as cst

from autograd_lint.analysis.ir import Function
from autograd_lint.analysis.names import short_code
from autograd_lint.analysis.eval_tracking import NoGradBlock
from autograd_lint.analysis.provenance import SINK, Program


@dataclass
class EvalFinding:
    fn: Function
    node: cst.CSTNode  # the model call
    callee: str | None
    region: str  # "mode", "fn", "loop"

    def message(self) -> str:
        call = f"`{self.callee}(...)`" if self.callee else "The model call"
        fn = self.fn
        if self.region in ("fn", "mode") and not fn.is_module_level and fn.name != "<lambda>" and self.region_is_function:
            fix = f"decorate `{fn.name}` with `@torch.no_grad()` (or `@torch.inference_mode()`)"
        else:
            fix = "wrap the evaluation loop in `with torch.inference_mode():`"
        return (
            f"{call} runs in evaluation code with grad enabled; autograd records a graph and keeps activations "
            f"for every batch for nothing — {fix}"
        )

    region_is_function: bool = True
    loop_node: cst.CSTNode | None = None  # for a loop region: the loop


@dataclass
class InferenceModeFinding:
    block: NoGradBlock

    @property
    def node(self) -> cst.CSTNode:
        return self.block.node

    def message(self) -> str:
        return (
            "nothing computed under this `torch.no_grad()` is used by autograd later; `torch.inference_mode()` "
            "also skips view tracking and version counting — use it instead"
        )


class Evaluation:
    def __init__(self, program: Program, module: cst.Module) -> None:
        self.prog = program
        self.module = module

    def _used_in_training(self, fn: Function) -> bool:
        """A helper whose result the same file backpropagates (`predict()`
        also used to compute a training loss)."""
        prog = self.prog
        start = ("ret", fn.id)
        seen, todo = {start}, deque([start])
        while todo:
            k = todo.popleft()
            for nxt in prog.edges.get(k, ()):
                if nxt == SINK:
                    return True
                if nxt not in seen:
                    seen.add(nxt)
                    todo.append(nxt)
        return False

    def eval_findings(self) -> list[EvalFinding]:
        prog = self.prog
        out: list[EvalFinding] = []
        flagged: set[int] = set()
        for key, (fn, node) in prog.eval_calls.items():
            kind = key[0]
            if kind == "fn" and fn.id in prog.stepping:
                continue  # saliency maps, adversarial evaluation: they need the graph
            if kind == "mode" and key in prog.eval_regions_stepping:
                continue
            if kind == "loop" and key[1].steps:
                continue
            if self._used_in_training(fn) or fn.id in flagged:
                continue
            flagged.add(fn.id)
            callee = short_code(self.module, node.func, 30) if isinstance(node, cst.Call) else None
            f = EvalFinding(fn, node, callee, kind)
            # Evaluation that is only part of a function (a validation loop in
            # a training function): wrap it rather than decorate the function.
            f.region_is_function = kind == "fn" or (kind == "mode" and fn.id not in prog.stepping)
            if kind == "loop":
                f.loop_node = key[1].node
            out.append(f)
        return out

    def inference_mode_findings(self) -> list[InferenceModeFinding]:
        prog = self.prog
        out = []
        for block in prog.nograd_blocks:
            # Anything it returns, keeps on self, writes in place or later
            # feeds to an op with grad on would break as an inference tensor.
            if block.escapes or block.writes_outer or block.reached:
                continue
            out.append(InferenceModeFinding(block))
        return out
