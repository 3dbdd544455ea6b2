"""Computed values forced back into the graph (AGL501), as the interpreter
meets them.

``loss.requires_grad = True``, ``loss.requires_grad_()``,
``Variable(loss, requires_grad=True)`` and
``torch.tensor(loss.item(), requires_grad=True)`` make a new leaf: a
backward from it stops there, and no parameter gets a gradient. Torch
refuses the first two on a tensor that still has a graph, so where they run
the graph was already cut (``.detach()``, ``.item()``, ``no_grad``...).

A site counts only with evidence on both sides: what is made a leaf was
computed (a model, a loss function, an op; or a number read out of one),
not made by a factory from constants (a test's dummy loss), and the leaf it
gives reaches a ``backward`` (the interpreter carries it as a ``Leaf`` fact
made at the site). Whatever cannot be traced to its assignments in the
function (a parameter, a loop target) is unknown, and not reported.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from autograd_lint.analysis import ir
from autograd_lint.analysis import torch_api as lib
from autograd_lint.analysis.interp import Program, Run
from autograd_lint.analysis.observer import CallEvent, Observer, SetAttribute
from autograd_lint.analysis.values import Leaf, Value

_TENSOR_FROM_DATA = frozenset({"torch.tensor", "torch.as_tensor", "torch.asarray", "torch.from_numpy", "torch.Tensor", "torch.FloatTensor"})
# Reading a number out of a tensor: `loss.item()`, `float(loss)`.
_READ_OUT_METHODS = frozenset({"item", "tolist"})
_READ_OUT_BUILTINS = frozenset({"float", "int"})


class Origin(Enum):
    COMPUTED = "computed"  # the result of a model, a loss, an op
    MADE = "made"  # a factory's fresh tensor or a constant
    UNKNOWN = "unknown"


@dataclass(frozen=True, slots=True)
class ForcedLeaf:
    """A computed value made a leaf at ``node``, then backwarded at ``backward``."""

    node: object  # the statement or call that makes the leaf
    fn: ir.Function
    target: str  # the value as written ("loss")
    how: str  # "requires_grad = True", "requires_grad_()", "Variable(...)", "torch.tensor(....item())"
    backward: object = None
    backward_fn: int = -1  # the function whose run saw that backward


class MadeLeaves(Observer):
    def __init__(self) -> None:
        # id(site node) -> the site, until a backward is seen of it
        self.sites: dict[int, ForcedLeaf] = {}
        self.found: dict[int, ForcedLeaf] = {}
        # id(call node) -> the library function it calls, for every call met
        self.quals: dict[int, str | None] = {}

    def forget(self, fn: int) -> None:
        # (A leaf made in `fn` and backwarded by a caller stays found when
        # `fn` alone runs again, in its callers' context: the caller's run,
        # which saw the backward, is not repeated.)
        self.sites = {k: s for k, s in self.sites.items() if s.fn.index != fn}
        self.found = {k: s for k, s in self.found.items() if s.backward_fn != fn and (s.fn.index != fn or s.backward_fn != s.fn.index)}

    def set_attribute(self, run: Run, e: SetAttribute) -> None:
        # `x.requires_grad = True`: x made, in place, a leaf that requires
        # grad (the interpreter gives it a `Leaf` fact at this node).
        v = e.value
        if e.target.attr == "requires_grad" and type(v) is ir.Const and v.value is True:
            self._site(run, e.at.node, e.target.value, "requires_grad = True")

    def call(self, run: Run, e: CallEvent) -> None:
        c = e.call
        self.quals[id(c.node)] = e.qual
        if e.resolved.autograd:
            # `torch.autograd.grad(loss, x)`: the roots are the first
            # argument; `x` is what is differentiated (a leaf on purpose).
            self._backward(run, c, None, e.args[:1])
            return
        if e.resolved.backward:
            self._backward(run, c, e.receiver, e.args[:1])  # `loss.backward()`, `accelerator.backward(loss)`
            return
        if e.resolved.makes_leaf and type(c.func) is ir.Attr:
            if any(type(f) is Leaf and f.node is c.node for f in e.outcome.value):
                self._site(run, c.node, c.func.value, "requires_grad_()")
            return
        if not _asks_grad(c):
            return
        args = c.positional()
        if not args:
            return
        qual = e.qual
        if qual in lib.VARIABLE:
            self._site(run, c.node, args[0], "Variable(..., requires_grad=True)")
        elif qual in _TENSOR_FROM_DATA:
            inner = _read_out(args[0])
            if inner is not None:
                read = args[0].func.id + "(...)" if type(args[0].func) is ir.Name else "...." + args[0].func.attr + "()"  # type: ignore[attr-defined]
                self._site(run, c.node, inner, f"{ir.dotted(c.func) or 'torch.tensor'}({read}, requires_grad=True)")
            elif type(args[0]) is ir.Name:
                # A number computed earlier (`value = -sum(... logp.tolist() ...)`).
                self._site(run, c.node, args[0], f"{ir.dotted(c.func) or 'torch.tensor'}({args[0].id}, requires_grad=True)")

    def _site(self, run: Run, node: object, target: ir.Expr, how: str) -> None:
        if origin(target, run.fn, self.quals) is Origin.COMPUTED and id(node) not in self.found:
            self.sites.setdefault(id(node), ForcedLeaf(node, run.fn, ir.dotted(target) or "the tensor", how))

    def _backward(self, run: Run, c: ir.Call, receiver: Value | None, args: tuple[Value, ...]) -> None:
        for v in (receiver or frozenset(), *args):
            for f in v:
                if type(f) is Leaf:
                    site = self.sites.get(id(f.node))
                    if site is not None and site.node is f.node and id(f.node) not in self.found:
                        self.found[id(f.node)] = ForcedLeaf(site.node, site.fn, site.target, site.how, c.node, run.index)

    def finish(self, prog: Program) -> None:
        self.sites, self.quals = {}, {}


def _asks_grad(c: ir.Call) -> bool:
    return any(a.keyword == "requires_grad" and type(a.value) is ir.Const and a.value.value is True for a in c.args)


def _read_out(e: ir.Expr) -> ir.Expr | None:
    """``x`` of ``x.item()`` / ``float(x)``: the tensor a number is read from."""
    if type(e) is not ir.Call:
        return None
    if type(e.func) is ir.Attr and e.func.attr in _READ_OUT_METHODS and not e.args:
        return e.func.value
    if type(e.func) is ir.Name and e.func.id in _READ_OUT_BUILTINS and len(e.args) == 1 and e.args[0].keyword is None:
        return e.args[0].value
    return None


def origin(e: ir.Expr, fn: ir.Function, quals: dict[int, str | None], depth: int = 0) -> Origin:
    """Where the value of ``e`` comes from, as far as ``fn``'s own
    assignments show. ``quals``: the library function each call met so
    far calls (by id of its node)."""
    if depth > 4:
        return Origin.UNKNOWN
    t = type(e)
    if t is ir.Const:
        return Origin.MADE
    if t is ir.Name:
        if e.id in fn.param_names or e.id not in fn.locals:  # type: ignore[attr-defined]
            return Origin.UNKNOWN
        values = ir.assigned_values(fn.body, e.id)
        if not values:
            return Origin.UNKNOWN
        seen = {origin(v, fn, quals, depth + 1) for v in values}
        # Computed on some path: reported (that path loses every gradient).
        if Origin.COMPUTED in seen:
            return Origin.COMPUTED
        return Origin.MADE if seen == {Origin.MADE} else Origin.UNKNOWN
    if t is ir.Call:
        return _call_origin(e, fn, depth, quals)  # type: ignore[arg-type]
    if t in (ir.BinOp, ir.UnaryOp):
        parts = (e.left, e.right) if t is ir.BinOp else (e.operand,)  # type: ignore[attr-defined]
        seen = {origin(p, fn, quals, depth + 1) for p in parts}
        if Origin.COMPUTED in seen:
            return Origin.COMPUTED
        return Origin.MADE if seen == {Origin.MADE} else Origin.UNKNOWN
    if t in (ir.Attr, ir.Subscript):
        # `out.loss`, `losses["total"]`: an element of what its base is.
        base = origin(e.value, fn, quals, depth + 1)  # type: ignore[attr-defined]
        return Origin.COMPUTED if base is Origin.COMPUTED else Origin.UNKNOWN
    return Origin.UNKNOWN


def _call_origin(c: ir.Call, fn: ir.Function, depth: int, quals: dict[int, str | None]) -> Origin:
    qual = quals.get(id(c.node)) or ""
    if qual.startswith("torch.") and qual.rsplit(".", 1)[-1] in lib.TORCH_FACTORIES:
        if qual in _TENSOR_FROM_DATA:
            # The data it copies decides: `torch.tensor(loss.item())` is computed.
            args = c.positional()
            return origin(args[0], fn, quals, depth + 1) if args else Origin.MADE
        return Origin.MADE  # a fresh tensor (its arguments are a shape or a fill value)
    if type(c.func) is ir.Name and c.func.id in _READ_OUT_BUILTINS and len(c.args) == 1:
        return origin(c.args[0].value, fn, quals, depth + 1)
    if type(c.func) is ir.Attr and origin(c.func.value, fn, quals, depth + 1) is Origin.MADE:
        # A method of a fresh tensor (`torch.zeros(1).to(device)`): still made of constants.
        return Origin.MADE
    # A model, a loss function, any other op.
    return Origin.COMPUTED
