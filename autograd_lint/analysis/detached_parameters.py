"""Parameters read out of the graph in ``forward`` and nowhere else (AGL506).

``t = self.log_t.exp().item()`` in a module's ``forward``, then
``return self.lin(x) / t``: the output depends on ``log_t`` as a Python
number, not through autograd, so ``log_t.grad`` stays None and the
optimizer never changes it. Silent: nothing warns.

Stop-gradient is idiomatic (a target network, an EMA copy, a
straight-through estimator), so a site counts only with evidence on every
side:

- what is read out (``.item()``, ``.tolist()``, ``.detach()``, ``.data``,
  ``float(t)``/``int(t)``: the API rows marked ``reads_out``) is computed
  from parameters only (its value is a ``Leaf`` or a ``Graph`` made from
  leaves, nothing attached to an activation), while grad is on, and it
  reads ``self.P`` of the class where ``self.P`` holds a leaf that
  requires grad (an ``nn.Parameter`` made in the class; not one made with
  ``requires_grad=False``, not a buffer);
- what the site gives reaches what ``forward`` returns (the flow graph:
  the statement's binding, or its ``return``, reaches ``Ret(forward)``);
- ``P`` gets no gradient any other way: every read of an attribute named
  ``P`` in the file is inside such a read-out (a use anywhere else, in any
  method or outside the class, may be attached), and every
  ``parameters()``/``named_parameters()`` of the file is handed straight to
  torch (an optimizer, a clip): a loop over them may put each into a loss.

``torch.tensor(self.P)`` is not a site: torch warns there ("To copy
construct from a tensor..."), and ``torch.as_tensor`` keeps the graph.
"""

from __future__ import annotations

from dataclasses import dataclass

from autograd_lint.analysis import ir
from autograd_lint.analysis import torch_api as lib
from autograd_lint.analysis.api import TENSOR, member
from autograd_lint.analysis.interp import Program, Run
from autograd_lint.analysis.observer import CallEvent, Observer
from autograd_lint.analysis.outcome import CalledFunction
from autograd_lint.analysis.paths import self_name
from autograd_lint.analysis.state import BACKWARD, ESCAPE, ClassAttr, Def, Local, Ret
from autograd_lint.analysis.values import GradMode, Graph, Leaf, Value, attached, has_syms

# `float(t)` calls `t.__float__()`: the builtin is read as that member.
_BUILTIN_MEMBERS = {"builtins.float": "__float__", "builtins.int": "__int__"}


@dataclass(frozen=True, slots=True)
class DetachedParameter:
    """``self.<attr>`` read out of the graph at ``node`` (``how``: "`.item()`")
    in ``fn``, and what that gives reaches ``forward``'s output."""

    node: object  # the syntax node of the read-out (the call, the `.data` attribute)
    fn: ir.Function
    attr: str
    how: str
    receiver: object  # the syntax node of the read-out's receiver (`self.log_t.exp()`)


@dataclass(frozen=True, slots=True)
class _Site:
    fn: ir.Function
    expr: ir.Expr  # the read-out: a call, or a `.data` attribute
    receiver: ir.Expr
    how: str


class DetachedParameters(Observer):
    def __init__(self) -> None:
        # id(read-out node) -> the site: reads out of parameter-only values under grad
        self._sites: dict[int, _Site] = {}
        # functions run under a no_grad decorator; `with` blocks of no_grad
        self._off_fns: set[int] = set()
        self._off_blocks: set[int] = set()
        # `model.parameters()` calls (their ir nodes), and what was handed
        # straight to torch (`SGD(model.parameters())`, `clip_grad_norm_(...)`)
        self._lists: dict[int, ir.Call] = {}
        self._to_torch: set[int] = set()
        # what was handed to an initialiser (`nn.init.trunc_normal_(self.P)`)
        self._initialized: set[int] = set()
        # function index -> (calling function, the call): the flow graph
        # carries no number out of a call, so a helper's `return float(...)`
        # is followed to its callers here
        self._callers: dict[int, list[tuple[ir.Function, ir.Call]]] = {}
        self.found: list[DetachedParameter] = []

    def forget(self, fn: int) -> None:
        self._sites = {k: s for k, s in self._sites.items() if s.fn.index != fn}

    def enter_grad_block(self, run: Run, node: object, source: str) -> object:
        if source == "decorator":
            self._off_fns.add(run.fn.index)
        else:
            self._off_blocks.add(id(node))
        return None

    def call(self, run: Run, e: CallEvent) -> None:
        c = e.call
        if e.resolved.parameter_list:
            # (Hands a module's parameters out one by one, to a loop or a
            # regulariser: what is done with them is not followed.)
            self._lists[id(c)] = c
        if (e.qual or "").startswith("torch."):
            self._to_torch.update(id(a.value) for a in c.args)
            if e.qual.startswith(lib.INITIALIZER_PREFIX):  # type: ignore[union-attr]
                self._initialized.update(id(a.value) for a in c.args)
        for eff in e.outcome.effects:
            if type(eff) is CalledFunction and eff.ref.file == run.prog.file:
                callee = run.prog.fn_by_qualname.get(eff.ref.qualname)
                if callee is not None and (run.fn, c) not in self._callers.get(callee.index, ()):
                    self._callers.setdefault(callee.index, []).append((run.fn, c))
        if run.fn.cls is None or e.at.grad is not GradMode.ON:
            return
        if e.method is not None and type(c.func) is ir.Attr and e.receiver is not None:
            if e.resolved.tensor.reads_out and _parameters_only(e.receiver):  # type: ignore[union-attr]
                self._sites[id(c.node)] = _Site(run.fn, c, c.func.value, f"`.{e.method}()`")
            return
        name = _BUILTIN_MEMBERS.get(e.qual or "")
        args = c.positional()
        if name is not None and len(c.args) == 1 and args and member(TENSOR, name).reads_out and e.args and _parameters_only(e.args[0]):
            self._sites[id(c.node)] = _Site(run.fn, c, args[0], f"`{e.qual.rsplit('.', 1)[-1]}(...)`")  # type: ignore[union-attr]

    def finish(self, prog: Program) -> None:
        if any(k not in self._to_torch for k in self._lists):
            # A loop or a comprehension over a module's parameters may put
            # each into a loss (a regulariser): not followed.
            self._sites, self._lists = {}, {}
            return
        # Only a read-out in a class with a `forward` can be reported: a file
        # without one (most) is not walked again.
        forwards = _forwards(prog)
        sites = dict(self._sites)
        if forwards:
            self._add_data_reads(prog, sites, set(forwards))
        if not forwards or not sites:
            self._sites, self._lists, self._callers = {}, {}, {}
            return
        inside: dict[int, _Site] = {}  # id(attribute read) -> the read-out around it
        for s in sites.values():
            for x in ir.walk_expr(s.receiver):
                inside[id(x)] = s
        other = _reads_elsewhere(prog, inside, self._initialized)
        for s in sites.values():
            family = prog.family_of.get(s.fn.cls.id) if s.fn.cls is not None else None
            attrs = _own_parameters(prog, s, family)
            if not attrs or any(a in other for a in attrs):
                continue
            rets = forwards.get(family or "", set())
            if not rets or not self._reaches(prog, s.fn, s.expr, family, rets):
                continue
            self.found.append(DetachedParameter(s.expr.node, s.fn, attrs[0], s.how, s.receiver.node))
        self._sites, self._lists, self._callers = {}, {}, {}

    def _reaches(self, prog: Program, fn: ir.Function, e: ir.Expr, family: str | None, rets: set, depth: int = 0) -> bool:
        """What ``e`` gives reaches one of ``rets``: through the flow
        graph, and from a method's return on to where its callers in the
        class use what it returned."""
        reached = prog.reaches(_starts(prog, fn, e, family), {BACKWARD, ESCAPE})
        if reached & rets:
            return True
        if depth >= 3:
            return False
        for r in reached:
            if type(r) is Ret:
                for caller, call in self._callers.get(r.fn, ()):
                    if caller.cls is not None and prog.family_of.get(caller.cls.id) == family and self._reaches(prog, caller, call, family, rets, depth + 1):
                        return True
        return False

    def _add_data_reads(self, prog: Program, sites: dict[int, _Site], families: set[str]) -> None:
        """``self.P.data``: an attribute read, which the interpreter tells
        no observer of; found here, under grad (not in a no_grad block or
        a no_grad-decorated method), in the methods of ``families``."""
        for fn in prog.ir.functions:
            if fn.cls is None or fn.index in self._off_fns or prog.family_of.get(fn.cls.id) not in families:
                continue
            for s, off in _statements(fn.body, self._off_blocks):
                if off:
                    continue
                for x in ir.statement_exprs(s):
                    if type(x) is ir.Attr and member(TENSOR, x.attr, attribute=True).reads_out and type(x.value) is ir.Attr and type(x.value.value) is ir.Name:
                        sites.setdefault(id(x.node), _Site(fn, x, x.value, f"`.{x.attr}`"))


def _parameters_only(v: Value) -> bool:
    """Computed from leaves that require grad only: a parameter, or an op
    on parameters (nothing attached to an activation, nothing unknown)."""
    return any(type(f) is Leaf or (type(f) is Graph and f.how == "leaf") for f in v) and not attached(v) and not has_syms(v)


def _own_parameters(prog: Program, s: _Site, family: str | None) -> list[str]:
    """The ``self.<attr>`` the read-out's receiver reads that hold a leaf
    requiring grad (a parameter of the class, made in its code)."""
    me = self_name(s.fn)
    if family is None or me is None:
        return []
    out = []
    for x in ir.walk_expr(s.receiver):
        if type(x) is ir.Attr and type(x.value) is ir.Name and x.value.id == me:
            v = prog.shared.get(ClassAttr(family, x.attr), frozenset())
            if any(type(f) is Leaf for f in v) and x.attr not in out:
                out.append(x.attr)
    return out


def _reads_elsewhere(prog: Program, inside: dict[int, _Site], initialized: set[int]) -> set[str]:
    """Attribute names read anywhere in the file outside a read-out's
    receiver. Not reads that can give a gradient: an assignment's target,
    a test against None (`if self.P is not None`), what an initialiser
    fills (`nn.init.trunc_normal_(self.P)`), what is printed."""
    out: set[str] = set()
    for fn in prog.ir.functions:
        for s in ir.statements(fn.body):
            skip: set[int] = set(initialized)
            if type(s) is ir.Assign:
                skip.update(id(t) for t in s.targets)
            exprs = list(ir.statement_exprs(s))
            for x in exprs:
                if type(x) is ir.Call and type(x.func) is ir.Name and x.func.id in lib.BUILTIN_SHOWS and x.func.id not in fn.locals:
                    skip.update(id(a.value) for a in x.args)  # `print(layer.alpha)`: shown, not used
                if type(x) is ir.Compare and all(op in ("is", "is not") for op in x.ops):
                    operands = (x.left, *x.comparators)
                    if any(type(o) is ir.Const and o.value is None for o in operands):
                        skip.update(id(o) for o in operands)
            for x in exprs:
                if type(x) is ir.Attr and id(x) not in inside and id(x) not in skip:
                    out.add(x.attr)
    for cls in prog.ir.classes:
        for s in ir.statements(cls.body):
            for x in ir.statement_exprs(s):
                if type(x) is ir.Attr:
                    out.add(x.attr)
    return out


def _forwards(prog: Program) -> dict[str, set]:
    """Class family -> the return nodes of its ``forward`` methods."""
    out: dict[str, set] = {}
    for fn in prog.ir.functions:
        if fn.name == "forward" and fn.cls is not None and fn.cls.id in prog.family_of:
            out.setdefault(prog.family_of[fn.cls.id], set()).add(Ret(fn.index))
    return out


def _starts(prog: Program, fn: ir.Function, e: ir.Expr, family: str | None) -> set:
    """The flow nodes what ``e`` gives goes to: its statement's return, or
    the binding it makes (a local, or ``self.x``)."""
    stmt = ir.statement_holding(fn, e)
    if type(stmt) is ir.Return:
        return {Ret(fn.index)}
    out: set = set()
    if type(stmt) is ir.Assign:
        me = self_name(fn)
        for t in stmt.targets:
            # (`wa, wb = ....tolist()`: each name it unpacks into.)
            for name in sorted(ir.bound_names(t)):
                loc = Local(fn.index, name)
                d = Def(loc, id(stmt.node))
                out.add(d if d in prog.flow else loc)
            if type(t) is ir.Attr and type(t.value) is ir.Name and t.value.id == me and family is not None:
                out.add(ClassAttr(family, t.attr))
    return out


def _statements(body: list, off_blocks: set[int], off: bool = False):
    """Every statement with whether a no_grad ``with`` block holds it."""
    for s in body:
        yield s, off
        inner = off or (type(s) is ir.With and id(s.node) in off_blocks)
        for block in ir.sub_blocks(s):
            yield from _statements(block, off_blocks, inner)
