"""Gradient zeroing (AGL4xx): ``zero_grad`` calls and gradients zeroed by
hand, as the interpreter meets them.

An observer of the calls: ``x.zero_grad(...)`` with what ``set_to_none``
says, and ``p.grad.zero_()`` / ``fill_(0)`` / ``mul_(0)`` on a gradient
buffer. Whether the module captures CUDA graphs (where gradients must keep
their storage) is the interpreter's ``static_grad_memory``.
"""

from __future__ import annotations

from dataclasses import dataclass

from autograd_lint.analysis import ir
from autograd_lint.analysis import torch_api as api
from autograd_lint.analysis.interp import Program, Run
from autograd_lint.analysis.observer import CallEvent, Observer


@dataclass(frozen=True, slots=True)
class ZeroGrad:
    """A ``x.zero_grad(...)`` call: ``set_to_none`` is True/False as
    written, None when left to the default."""

    node: object
    fn: ir.Function
    set_to_none: bool | None


@dataclass(frozen=True, slots=True)
class GradZeroing:
    """Zeroing a gradient by hand: ``p.grad.zero_()``, ``p.grad.fill_(0)``."""

    node: object
    fn: ir.Function
    target: str  # the gradient expression, e.g. "p.grad"
    grad_expr: ir.Expr  # `p.grad` (without a trailing `.data`)


class Zeroing(Observer):
    def __init__(self) -> None:
        self.zero_grads: dict[int, ZeroGrad] = {}
        self.manual: dict[int, GradZeroing] = {}
        self.static_grad_memory = False

    def forget(self, fn: int) -> None:
        self.zero_grads = {k: z for k, z in self.zero_grads.items() if z.fn.index != fn}
        self.manual = {k: z for k, z in self.manual.items() if z.fn.index != fn}

    def call(self, run: Run, e: CallEvent) -> None:
        c = e.call
        method = e.method
        if method == "zero_grad":
            stn = None
            for a in c.args:
                if (a.keyword is None or a.keyword == "set_to_none") and type(a.value) is ir.Const and a.value.kind == "bool":
                    stn = bool(a.value.value)
            if not any(a.keyword is not None and a.keyword != "set_to_none" for a in c.args) and (stn is not None or not c.args):
                self.zero_grads.setdefault(id(c.node), ZeroGrad(c.node, run.fn, stn))
            return
        if method not in ("zero_", "fill_", "mul_") or type(c.func) is not ir.Attr:
            return
        grad = _grad_expr(c.func.value)
        if grad is None:
            return
        args = c.positional()
        if method == "zero_" or (args and type(args[0]) is ir.Const and args[0].kind == "number" and args[0].value == 0):
            self.manual.setdefault(id(c.node), GradZeroing(c.node, run.fn, ir.dotted(c.func.value) or "…grad", grad))

    def finish(self, prog: Program) -> None:
        self.static_grad_memory = prog.static_grad_memory


def _grad_expr(e: ir.Expr) -> ir.Expr | None:
    """`p.grad` or `p.grad.data`: a gradient buffer."""
    if type(e) is ir.Attr and e.attr == api.DATA_ATTR:
        e = e.value
    if type(e) is ir.Attr and e.attr == api.GRAD_ATTR:
        return e
    return None

