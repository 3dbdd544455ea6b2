"""Trainable tensors that are not leaves (AGL502), as the interpreter meets
them.

``torch.randn(..., requires_grad=True).to(device)``, ``.cuda()``,
``.double()``, ``* 0.01``, ``nn.Parameter(t).to(device)``: the leaf that
requires grad is made, then copied or computed into a new tensor, and that
copy (not a leaf: it has a ``grad_fn``) is what the name holds. What
happens depends on where it goes: an optimizer refuses it (``ValueError:
can't optimize a non-leaf Tensor``), its ``.grad`` stays None (with a
UserWarning) and ``w = w - lr * w.grad`` fails on the next iteration, and a
module attribute assigned such a "parameter" is a plain tensor, not
registered, never trained.

A site counts only with evidence on both sides. The leaf is made right
there by a torch factory given ``requires_grad=True``, ``nn.Parameter(...)``
or ``Variable(..., requires_grad=True)`` (seen by the calls observed), and
wrapped by a member the API model says copies (``Tensor.to``, ``cuda``,
``double``...: the interpreter gives the result a ``Graph`` fact of how
"leaf" made at the wrap) or by arithmetic on it. The copy reaches a sink:
the parameters handed to an optimizer's constructor (directly, in a list,
in a param group), a read of its ``.grad`` (the API model's ``leaf_only``
attribute), or, for an ``nn.Parameter``, an assignment to an attribute of
``self`` in an ``nn.Module`` class. Without a sink nothing is reported: a
test input, a dummy loss, a tensor only fed to a model.
"""

from __future__ import annotations

from dataclasses import dataclass

from autograd_lint.analysis import ir
from autograd_lint.analysis import torch_api as lib
from autograd_lint.analysis.api import TENSOR, member
from autograd_lint.analysis.interp import Program, Run
from autograd_lint.analysis.observer import CallEvent, Observer, ReadAttribute, Store
from autograd_lint.analysis.state import ClassAttr
from autograd_lint.analysis.values import Graph, Leaf, Value, graphs_of


@dataclass(frozen=True, slots=True)
class Made:
    """A leaf that requires grad made at ``call``: ``kind`` "factory",
    "parameter" or "variable"; or "frozen", an ``nn.Parameter`` made with
    ``requires_grad=False`` (a leaf of no graph); ``qual`` the function
    called."""

    call: ir.Call
    kind: str
    qual: str


@dataclass(frozen=True, slots=True)
class Wrap:
    """The leaf made at ``made`` turned into a non-leaf at ``node``: a call of
    a copying member (``expr`` an ``ir.Call``, ``how`` "`.to(...)`") or
    arithmetic (``expr`` an ``ir.BinOp``/``ir.UnaryOp``, ``how`` "`*`")."""

    node: object
    fn: int
    expr: object
    made: Made
    how: str
    # Arithmetic on a name bound to the leaf (`w = w - lr * w.grad`), not
    # on the factory call itself.
    rebinds: bool = False


@dataclass(frozen=True, slots=True)
class NonLeaf:
    """A wrap whose copy reaches ``sink``: "optimizer", "grad" or
    "attribute" (``attr``: the attribute of ``self`` it is assigned to)."""

    wrap: Wrap
    sink: str
    sink_node: object
    attr: str = ""


_ARITHMETIC = {"add": "+", "sub": "-", "mul": "*", "truediv": "/", "pow": "**", "matmul": "@", "neg": "-"}


class NonLeafTrainables(Observer):
    def __init__(self) -> None:
        self.made: dict[int, Made] = {}  # id(call node) -> the leaf it makes
        self.wraps: dict[int, Wrap] = {}  # id(wrap node) -> the wrap
        self.found: dict[int, NonLeaf] = {}  # id(wrap node) -> the first sink it reaches
        self._exprs: dict[int, dict[int, ir.Expr]] = {}  # per function: id(node) -> expression

    def forget(self, fn: int) -> None:
        self.found = {k: f for k, f in self.found.items() if f.wrap.fn != fn}

    def call(self, run: Run, e: CallEvent) -> None:
        c = e.call
        qual = e.qual
        made = _made(c, qual, e.outcome.value) or _frozen_parameter(c, qual)
        if made is not None:
            self.made[id(c.node)] = made
            return
        if e.receiver is not None and (row := e.resolved.tensor) is not None and row.copies:
            inner = c.func.value if type(c.func) is ir.Attr else None
            if type(inner) is ir.Call and (frozen := self.made.get(id(inner.node))) is not None and frozen.kind == "frozen":
                # `nn.Parameter(t, requires_grad=False).to(device)`: no
                # graph, but the copy is a plain tensor all the same.
                self.wraps.setdefault(id(c.node), Wrap(c.node, run.fn.index, c, frozen, f"`.{e.method}({'...' if c.args else ''})`"))
                return
            if any(type(f) is Graph and f.node is c.node for f in e.outcome.value):
                for f in e.receiver:
                    if type(f) is Leaf and id(f.node) in self.made:
                        self.wraps.setdefault(id(c.node), Wrap(c.node, run.fn.index, c, self.made[id(f.node)], f"`.{e.method}({'...' if c.args else ''})`"))
                        break
            return
        if qual is not None and lib.is_optimizer_class(qual) and e.args:
            self._sink(run, e.args[0], "optimizer", c.node)

    def read_attribute(self, run: Run, e: ReadAttribute) -> None:
        if member(TENSOR, e.target.attr, attribute=True).leaf_only:
            self._sink(run, e.receiver, "grad", e.target.node)

    def store(self, run: Run, e: Store) -> None:
        # `self.alpha = nn.Parameter(t).to(device)` in a module: a plain
        # tensor attribute, not a registered parameter.
        cls = run.fn.cls
        if e.how != "attribute" or type(e.container) is not ClassAttr or cls is None or run.prog.is_module_class(cls) is not True:
            return
        wrap = self.wraps.get(id(e.value_node))
        if wrap is not None and wrap.made.kind == "frozen" and id(wrap.node) not in self.found:
            self.found[id(wrap.node)] = NonLeaf(wrap, "attribute", e.at.node, e.container.attr)
            return
        self._sink(run, e.value, "attribute", e.at.node, e.container.attr)

    def _sink(self, run: Run, v: Value, sink: str, node: object, attr: str = "") -> None:
        for g in graphs_of(v):
            if g.how != "leaf" or id(g.node) in self.found:
                continue
            wrap = self.wraps.get(id(g.node)) or self._arithmetic(run, g)
            if wrap is None or (sink == "attribute" and wrap.made.kind != "parameter"):
                continue
            self.found[id(g.node)] = NonLeaf(wrap, sink, node, attr)

    def _arithmetic(self, run: Run, g: Graph) -> Wrap | None:
        """``g`` made by arithmetic on a leaf made in its function:
        ``torch.randn(..., requires_grad=True) * 0.01``, or ``w - lr * w.grad``
        of a ``w`` the function binds to such a leaf."""
        fn = _function(run.prog, g.fn)
        if fn is None:
            return None
        expr = self._expr(fn, g.node)
        t = type(expr)
        if t is ir.BinOp:
            operands = (expr.left, expr.right)  # type: ignore[union-attr]
        elif t is ir.UnaryOp and expr.op == "neg":  # type: ignore[union-attr]
            operands = (expr.operand,)  # type: ignore[union-attr]
        else:
            return None
        if expr.op not in _ARITHMETIC:  # type: ignore[union-attr]
            return None
        for x in operands:
            made = self._made_by(fn, x)
            if made is not None:
                wrap = Wrap(g.node, g.fn, expr, made, f"`{_ARITHMETIC[expr.op]}`", type(x) is ir.Name)  # type: ignore[union-attr]
                self.wraps[id(g.node)] = wrap
                return wrap
        return None

    def _made_by(self, fn: ir.Function, x: ir.Expr) -> Made | None:
        """The leaf ``x`` is, as made in ``fn``: the factory call itself, or a
        local name some assignment of ``fn`` binds to one."""
        if type(x) is ir.Call:
            return self.made.get(id(x.node))
        if type(x) is ir.Name and x.id in fn.locals and x.id not in fn.param_names:
            for v in ir.assigned_values(fn.body, x.id) or ():
                if type(v) is ir.Call and id(v.node) in self.made:
                    return self.made[id(v.node)]
        return None

    def _expr(self, fn: ir.Function, node: object) -> ir.Expr | None:
        table = self._exprs.get(fn.index)
        if table is None:
            table = self._exprs[fn.index] = {}
            for s in ir.statements(fn.body):
                for x in ir.statement_exprs(s):
                    for y in ir.walk_expr(x):
                        table.setdefault(id(getattr(y, "node", None)), y)
        return table.get(id(node))

    def finish(self, prog: Program) -> None:
        self.made, self._exprs = {}, {}


def _made(c: ir.Call, qual: str | None, value: Value) -> Made | None:
    """The leaf that requires grad ``c`` makes (the interpreter gave its
    result a ``Leaf`` fact made here), by a factory, ``nn.Parameter`` or
    ``Variable``."""
    if qual is None or not any(type(f) is Leaf and f.node is c.node for f in value):
        return None
    if qual in lib.VARIABLE:
        return Made(c, "variable", qual)
    if qual in lib.PARAMETER_CLASSES:
        return Made(c, "parameter", qual)
    if qual.startswith("torch.") and qual.rsplit(".", 1)[-1] in lib.TORCH_FACTORIES:
        return Made(c, "factory", qual)
    return None


def _frozen_parameter(c: ir.Call, qual: str | None) -> Made | None:
    """``nn.Parameter(t, requires_grad=False)``: a parameter that is no
    leaf of any graph, but a registered parameter all the same (saved,
    moved with its module) only as long as it stays the object made."""
    if qual is None or qual not in lib.PARAMETER_CLASSES:
        return None
    flag = c.keyword("requires_grad")
    if flag is None and len(c.args) > 1 and c.args[1].keyword is None and not c.args[1].star:
        flag = c.args[1].value
    if type(flag) is ir.Const and flag.value is False:
        return Made(c, "frozen", qual)
    return None


def _function(prog: Program, index: int) -> ir.Function | None:
    fns = prog.functions
    if 0 <= index < len(fns) and fns[index].index == index:
        return fns[index]
    return next((f for f in fns if f.index == index), None)
