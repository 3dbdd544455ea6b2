"""In-place writes to tensors autograd needs: the decision shared by AGL201
(a saved tensor written in place), AGL202 (a leaf that requires grad written
in place with grad on) and AGL203 (a saved tensor written through ``.data``).

provenance.py records every in-place write to a tensor that carried a
``Saved`` or ``LeafTensor`` fact at that point; this module classifies them.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Callable, Iterator

import libcst as cst

from autograd_lint.analysis.facts import ArgGrad, GradMode, Graph, HookArg, LeafTensor, Param, Saved, TensorValue
from autograd_lint.analysis.names import callee_text
from autograd_lint.analysis.inplace_tracking import Mutation
from autograd_lint.analysis.provenance import Program

LineOf = Callable[[cst.CSTNode], int]


class InplaceKind(Enum):
    SAVED = "saved"  # AGL201
    LEAF = "leaf"  # AGL202
    DATA = "data"  # AGL203


@dataclass
class InplaceFinding:
    kind: InplaceKind
    node: cst.CSTNode
    name: str
    how: str
    saver: Saved | None
    saver_text: str | None
    mutation: Mutation | None = None

    def message(self) -> Callable[[LineOf], str]:
        def render(line_of: LineOf) -> str:
            n = f"`{self.name}`"
            by = ""
            if self.saver is not None:
                by = f" by `{self.saver_text}`" if self.saver_text else ""
                by += f" at line {line_of(self.saver.node)}"
            if self.kind is InplaceKind.SAVED:
                return (
                    f"{n} was saved for backward{by}; writing it in place (`{self.how}`) makes backward fail "
                    f"with 'modified by an inplace operation' — use the out-of-place op or `.clone()` it first"
                )
            if self.kind is InplaceKind.LEAF:
                return (
                    f"{n} is a leaf tensor that requires grad; writing it in place (`{self.how}`) with grad enabled "
                    f"raises a RuntimeError — do the update under `with torch.no_grad():`"
                )
            return (
                f"{n} was saved for backward{by}; writing it through `.data` (`{self.how}`) is invisible to autograd, "
                f"so its gradients are silently wrong — compute the new value out of place or `.clone()` it first"
            )

        return render


class Inplace:
    def __init__(self, program: Program, module: cst.Module) -> None:
        self.prog = program
        self.module = module
        self._found: list[InplaceFinding] | None = None

    def findings(self, kind: InplaceKind) -> Iterator[InplaceFinding]:
        if self._found is None:
            self._found = [f for m in self.prog.mutations.values() if (f := self._classify(m)) is not None]
        return (f for f in self._found if f.kind is kind)

    def _classify(self, m: Mutation) -> InplaceFinding | None:
        saved = [f for f in m.facts if type(f) is Saved]
        # Saved as an op's input: only a tensor's in-place write matters
        # (`n += 1` on an int that went through `n % k` is a rebinding).
        if saved and not any(s.result for s in saved) and not self._tensorish(m):
            saved = []
        leaf = any(type(f) is LeafTensor for f in m.facts)
        if m.via == "data":
            if not saved:
                return None
            return self._finding(InplaceKind.DATA, m, saved)
        if m.via == "detach":
            leaf = False  # a detached alias has no leaf check
        # The leaf check fires first at run time, whatever was saved. It
        # fires at once, so code that runs at all runs it under no_grad
        # unless this function shows grad is on: it made the leaf itself,
        # or it backpropagates (training code).
        if leaf and m.grad is GradMode.ON:
            made_here = any(type(f) is LeafTensor and f.fn == m.fn.id for f in m.facts)
            stepping = self.prog.stepping
            called_in_training = any(c in stepping for c in self.prog.grad_on_callers.get(m.fn.id, ()))
            if made_here or m.fn.id in stepping or called_in_training:
                return self._finding(InplaceKind.LEAF, m, [])
            return None
        if saved:
            return self._finding(InplaceKind.SAVED, m, saved)
        return None

    @staticmethod
    def _tensorish(m: Mutation) -> bool:
        return any(type(f) in (Graph, LeafTensor, HookArg, ArgGrad, TensorValue) or (type(f) is Param and m.in_forward and f.index == 1) for f in m.facts)

    def _finding(self, kind: InplaceKind, m: Mutation, saved: list[Saved]) -> InplaceFinding:
        saver = None
        text = None
        if saved:
            # Prefer the saver in this function; any is correct.
            saved.sort(key=lambda s: (s.fn != m.fn.id, s.op))
            saver = saved[0]
            text = callee_text(self.module, saver.node) or saver.op
        return InplaceFinding(kind, m.node, m.path, m.how, saver, text, m)
