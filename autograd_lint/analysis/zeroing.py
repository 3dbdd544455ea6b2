"""Gradient zeroing (AGL4xx): ``zero_grad`` calls and gradients zeroed by
hand, as the interpreter meets them.

An observer of the calls: ``x.zero_grad(...)`` with what ``set_to_none``
says (written there, or a local constant), and ``p.grad.zero_()`` /
``fill_(0)`` / ``mul_(0)`` on a gradient buffer, or
``torch._foreach_zero_`` on a list of them. An optimizer's own
``zero_grad`` zeroing in its ``set_to_none=False`` branch is not reported:
its caller's ``zero_grad(set_to_none=False)`` is. Whether the module
captures CUDA graphs (where gradients must keep their storage) is the
interpreter's ``static_grad_memory``.
"""

from __future__ import annotations

from dataclasses import dataclass

from autograd_lint.analysis import ir
from autograd_lint.analysis import torch_api as api
from autograd_lint.analysis.api import OPTIMIZER, TENSOR, Gives, member
from autograd_lint.analysis.interp import Program, Run
from autograd_lint.analysis.observer import CallEvent, Observer


@dataclass(frozen=True, slots=True)
class ZeroGrad:
    """A ``x.zero_grad(...)`` call: ``set_to_none`` is True/False as
    written, None when left to the default."""

    node: object
    fn: ir.Function
    set_to_none: bool | None
    via: str | None = None  # the local name that says it (`keep_buffers`), when not written as a constant
    # `via` is a parameter of the function: ``set_to_none`` is its value when
    # the caller leaves it out (a wrapper's `zero_grad(self, set_to_none=None)`).
    default: bool = False


@dataclass(frozen=True, slots=True)
class GradZeroing:
    """Zeroing a gradient by hand: ``p.grad.zero_()``, ``p.grad.fill_(0)``."""

    node: object
    fn: ir.Function
    target: str  # the gradient expression, e.g. "p.grad"; for a list of them, the list's name ("grads", "" if none)
    grad_expr: ir.Expr | None  # `p.grad` (without a trailing `.data`); None for a list


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
        rc = e.resolved
        if rc.zeroes_grad:
            stn, via, default = None, None, False
            for a in c.args:
                if a.keyword is None or a.keyword == api.SET_TO_NONE:
                    stn = _constant_bool(a.value, run.fn)
                    if stn is None and _zero_grad_method(run.fn) and type(a.value) is ir.Name and a.value.id in run.fn.param_names:
                        # A wrapper's own `zero_grad(self, set_to_none=False)`
                        # passing its flag on: plain `opt.zero_grad()` calls
                        # (the optimizer API) get its default.
                        stn, default = _default_bool(run.fn, a.value.id), True
                    via = a.value.id if type(a.value) is ir.Name and stn is not None else None
            if not any(a.keyword is not None and a.keyword != api.SET_TO_NONE for a in c.args) and (stn is not None or not c.args):
                self.zero_grads.setdefault(id(c.node), ZeroGrad(c.node, run.fn, stn, via, default))
            return
        foreach = e.qual == api.FOREACH_ZERO
        if not (foreach or rc.zeroing) or type(c.func) is not ir.Attr or _implements_zero_grad(run):
            return
        if foreach:
            args = c.positional()
            if len(args) == 1 and _grad_list(args[0], run.fn):
                self.manual.setdefault(id(c.node), GradZeroing(c.node, run.fn, ir.dotted(args[0]) or "", None))
            return
        grad = _grad_expr(c.func.value)
        if grad is None:
            return
        args = c.positional()
        if not rc.zeroing_given or (args and type(args[0]) is ir.Const and args[0].kind == "number" and args[0].value == 0):
            self.manual.setdefault(id(c.node), GradZeroing(c.node, run.fn, ir.dotted(c.func.value) or "…grad", grad))

    def finish(self, prog: Program) -> None:
        self.static_grad_memory = prog.static_grad_memory


def _zero_grad_method(fn: ir.Function) -> bool:
    """``fn`` is a ``zero_grad`` of its own (an optimizer's or a wrapper's)."""
    return member(OPTIMIZER, fn.name).zeroes_grads


def _implements_zero_grad(run: Run) -> bool:
    """Inside a ``zero_grad(self, set_to_none=...)`` of its own (an
    optimizer or wrapper), in a branch its ``set_to_none`` decides: zeroing
    in place is what its caller asked for with ``set_to_none=False``, and
    that call is where the finding belongs."""
    fn = run.fn
    if not _zero_grad_method(fn) or api.SET_TO_NONE not in fn.param_names:
        return False
    # Unless its own default zeroes in place: a plain `zero_grad()` does then.
    return _default_bool(fn, api.SET_TO_NONE) is not False and any(api.SET_TO_NONE in _names(g) for g in run.guards)


def _names(e: ir.Expr) -> set[str]:
    t = type(e)
    if t is ir.Name:
        return {e.id}  # type: ignore[attr-defined]
    if t is ir.UnaryOp:
        return _names(e.operand)  # type: ignore[attr-defined]
    if t is ir.BoolOp:
        return set().union(*(_names(v) for v in e.values))  # type: ignore[attr-defined]
    if t is ir.Compare:
        return set().union(*(_names(v) for v in (e.left, *e.comparators)))  # type: ignore[attr-defined]
    return set()


def _constant_bool(e: ir.Expr, fn: ir.Function) -> bool | None:
    """``True``/``False`` written there, or a local name every assignment
    of which writes the same one (``keep = False`` ... ``set_to_none=keep``).
    A parameter is not a constant: its callers decide."""
    if type(e) is ir.Const:
        return bool(e.value) if e.kind == "bool" else None
    if type(e) is not ir.Name or e.id in fn.param_names or e.id in fn.globals or e.id in fn.nonlocals or e.id not in fn.locals:
        return None
    values = ir.assigned_values(fn.body, e.id)
    if not values:
        return None
    seen = {_constant_bool(v, fn) if type(v) is ir.Const else None for v in values}
    return seen.pop() if len(seen) == 1 else None


def _default_bool(fn: ir.Function, name: str) -> bool | None:
    """The value parameter ``name`` has where the caller leaves it out: its
    default (``set_to_none=False``), or what the body sets every time it
    does (``if set_to_none is None: set_to_none = False``)."""
    param = next((p for p in fn.params if p.name == name), None)
    if param is None or param.default is None or type(param.default) is not ir.Const:
        return None
    values = ir.assigned_values(fn.body, name)
    if values is None:
        return None
    default = param.default
    consts = {_constant_bool(v, fn) if type(v) is ir.Const else None for v in values}
    if default.kind == "bool":
        return bool(default.value) if consts <= {bool(default.value)} else None
    if default.kind == "none" and len(consts) == 1:
        return consts.pop()
    return None


def _grad_list(e: ir.Expr, fn: ir.Function) -> bool:
    """A list of gradient buffers: ``[p.grad for p in ps]``, ``[a.grad,
    b.grad]``, or a local name only ever bound to one."""
    t = type(e)
    if t is ir.Comp:
        return e.kind != "dict" and _grad_expr(e.elt) is not None  # type: ignore[attr-defined]
    if t is ir.Seq:
        return bool(e.elts) and all(_grad_expr(x) is not None for x in e.elts)  # type: ignore[attr-defined]
    if t is ir.Name and e.id in fn.locals and e.id not in fn.param_names:  # type: ignore[attr-defined]
        values = ir.assigned_values(fn.body, e.id)
        return bool(values) and all(type(v) is not ir.Name and _grad_list(v, fn) for v in values)
    return False


def _grad_expr(e: ir.Expr) -> ir.Expr | None:
    """`p.grad` or `p.grad.data`: a gradient buffer."""
    if type(e) is ir.Attr and member(TENSOR, e.attr, attribute=True).gives is Gives.DETACHED:
        e = e.value
    if type(e) is ir.Attr and member(TENSOR, e.attr, attribute=True).gives is Gives.GRADIENT:
        return e
    return None

