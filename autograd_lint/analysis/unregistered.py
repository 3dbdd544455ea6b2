"""Submodules and parameters kept in a plain list, dict or tuple attribute
of an ``nn.Module`` (AGL503): ``self.layers = [nn.Linear(..) for ...]``.

``nn.Module.__setattr__`` registers a module or a parameter assigned to an
attribute, never one inside a Python container: those are not in
``parameters()``, not trained, not moved by ``.to()``, not saved.

An observer of the stores into ``self.<attr>`` in the methods of a class
shown to be an ``nn.Module`` (in this file): an assignment of a list,
tuple or dict display or comprehension, or an ``append``/``insert``/item
store into an attribute that holds a plain container. The evidence is the
elements: made right there by a call of a torch.nn module class that owns
parameters (not a loss or an activation), of a module class of this file,
or of ``nn.Parameter`` (seen by the calls observed), or a local name bound
to such a call. A reference to a module
that lives elsewhere (``[self.conv1, self.conv2]``, an ``__init__``
argument kept out of ``parameters()`` on purpose) is not reported.

The container is exempt when its elements are registered after all:
passed to ``add_module``/``register_module``/``register_parameter``/
``setattr`` (directly or in a loop or comprehension over it), wrapped
into ``nn.ModuleList``/``ModuleDict``/``Sequential``/``ParameterList``/
``ParameterDict`` anywhere in the file, or (for a local name) registered
or stored into another attribute or item in the same method. Elements put
into an attribute that the class family also assigns something other than
a display (``self.w = nn.ParameterDict({})``, which the analysis knows as a
dict) are not reported either: that container may register them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator

from autograd_lint.analysis import api, ir
from autograd_lint.analysis import torch_api as lib
from autograd_lint.analysis.interp import Program, Run
from autograd_lint.analysis.observer import CallEvent, Observer, Store
from autograd_lint.analysis.state import ClassAttr
from autograd_lint.analysis.values import ClassObj, Container


@dataclass(frozen=True, slots=True)
class Unregistered:
    """``self.<attr>`` holds modules (or parameters) in a plain container."""

    node: object  # where the plain container is made (its display), else where they are put in
    fn: ir.Function
    cls: ir.Class
    attr: str
    kind: str  # "list", "tuple", "dict"
    what: str  # "modules", "parameters", "modules and parameters"
    how: str  # "attribute" (assigned a display or comprehension), "append", "insert", "subscript"...
    display: ir.Expr | None  # the display or comprehension that made the container, when seen
    put: object = None  # the call or item store that put them in (not "attribute")


_STORES = frozenset({"attribute", "append", "insert", "extend", "subscript", "setdefault"})


class UnregisteredSubmodules(Observer):
    def __init__(self) -> None:
        self.found: dict[str, Unregistered] = {}  # one per class family and attribute
        # id(call node) -> "module" / "parameter": a call that makes one.
        self._made: dict[int, str] = {}
        self._exprs: dict[int, dict[int, ir.Expr]] = {}  # per function: id(node) -> expression
        self._displays: dict[ClassAttr, ir.Expr] = {}  # the display each attribute was last assigned

    def forget(self, fn: int) -> None:
        self.found = {k: f for k, f in self.found.items() if f.fn.index != fn}

    def call(self, run: Run, e: CallEvent) -> None:
        made = _makes(run.prog, e)
        if made is not None:
            self._made[id(e.call.node)] = made

    def store(self, run: Run, e: Store) -> None:
        fn = run.fn
        cls = fn.cls
        if e.how not in _STORES or type(e.container) is not ClassAttr or cls is None or run.prog.is_module_class(cls) is not True:
            return
        held = run.read(e.container)
        if not held or not all(type(f) is Container and f.kind in ("list", "tuple", "dict") for f in held):
            return
        expr = self._expr(fn, e.value_node)
        if expr is None:
            return
        if e.how == "attribute":
            if type(expr) in (ir.Seq, ir.DictX, ir.Comp):
                self._displays[e.container] = expr
            elements = _elements(expr)
        else:
            elements = [expr]
        made = {self._element_made(fn, x) for x in elements} - {None}
        if not made:
            return
        attr = e.container.attr
        kind = next(iter(held)).kind  # type: ignore[attr-defined]
        what = " and ".join(sorted(made)).replace("module", "modules").replace("parameter", "parameters")
        display = self._displays.get(e.container)
        if e.how == "attribute":
            found = Unregistered(expr.node, fn, cls, attr, kind, what, e.how, expr)
        else:
            found = Unregistered(display.node if display is not None else e.at.node, fn, cls, attr, kind, what, e.how, display, e.at.node)
        self.found.setdefault(f"{e.container.family}.{attr}", found)

    def finish(self, prog: Program) -> None:
        if not self.found:
            return
        registered = _registered_attrs(prog.ir)
        # What is put into an attribute that is somewhere assigned something
        # else than a plain display (`nn.ParameterDict({})`, which the
        # analysis knows as a dict) may be put into a registering container.
        self.found = {
            k: f for k, f in self.found.items()
            if f.attr not in registered and (f.put is None or f.attr not in _assigned_otherwise(prog, k.rsplit(".", 1)[0]))
        }

    # -- helpers ---------------------------------------------------------------------

    def _expr(self, fn: ir.Function, node: object) -> ir.Expr | None:
        table = self._exprs.get(fn.index)
        if table is None:
            table = self._exprs[fn.index] = {}
            for s in ir.statements(fn.body):
                for x in ir.statement_exprs(s):
                    table.setdefault(id(getattr(x, "node", None)), x)
        return table.get(id(node))

    def _element_made(self, fn: ir.Function, x: ir.Expr) -> str | None:
        """What the element ``x`` is made as right there ("module",
        "parameter"), else None. A local name counts when this method binds
        it to such a call and registers it nowhere else."""
        t = type(x)
        if t is ir.Call:
            return self._made.get(id(x.node))
        if t is ir.Starred:
            return self._element_made(fn, x.value)
        if t is ir.Name:
            made = None
            for s in ir.statements(fn.body):
                if type(s) is ir.Assign and type(s.value) is ir.Call and any(type(tg) is ir.Name and tg.id == x.id for tg in s.targets):
                    made = made or self._made.get(id(s.value.node))
            if made is not None and _name_registered(fn, x.id):
                return None
            return made
        return None


def _makes(prog: Program, e: CallEvent) -> str | None:
    """The call constructs a torch.nn module, a module class of this file,
    or a parameter."""
    qual = e.qual
    if qual is not None:
        if qual in lib.PARAMETER_CLASSES and qual != "torch.autograd.Variable":
            return "parameter"
        if qual.startswith("torch.nn.") and lib.is_module_class(qual) and lib.is_parametric_module(qual):
            # (A loss or an activation in a list has nothing to train.)
            return "module"
        return None
    if e.method is None:
        for f in e.callee:
            if type(f) is ClassObj and f.cls.file == prog.file and prog.lookup.is_module_class(f.cls) is True:
                return "module"
    return None


def _elements(e: ir.Expr) -> list[ir.Expr]:
    """The elements a display or comprehension builds (``[]`` builds none)."""
    t = type(e)
    if t is ir.Seq and e.kind in ("list", "tuple"):  # type: ignore[attr-defined]
        return list(e.elts)  # type: ignore[attr-defined]
    if t is ir.DictX:
        return [v for k, v in zip(e.keys, e.values) if k is not None]  # type: ignore[attr-defined]
    if t is ir.Comp and e.kind in ("list", "dict"):  # type: ignore[attr-defined]
        return [e.elt]  # type: ignore[attr-defined]
    return []


def _last_name(e: ir.Expr) -> str | None:
    t = type(e)
    if t is ir.Name:
        return e.id  # type: ignore[attr-defined]
    if t is ir.Attr:
        return e.attr  # type: ignore[attr-defined]
    return None


def _registers(c: ir.Call) -> bool:
    """A call that registers what it is given on a module: a module's
    ``add_module``/``register_*``, ``setattr``, or a torch.nn container."""
    return _last_name(c.func) in lib.REGISTERING_CALLS


def _attrs_in(e: object) -> set[str]:
    return {x.attr for x in ir.walk_expr(e) if type(x) is ir.Attr}  # type: ignore[arg-type]


def _registered_attrs(module: ir.ModuleIR) -> set[str]:
    """Attribute names whose elements some code of the file registers: an
    argument of a registering call, or what a loop or comprehension
    registering its items iterates over."""
    out: set[str] = set()
    for fn in module.functions:
        for s in ir.statements(fn.body):
            exprs = list(ir.statement_exprs(s))
            for x in exprs:
                if type(x) is ir.Call and _registers(x):
                    for a in x.args:
                        out |= _attrs_in(a.value)
                        if type(a.value) is ir.Name:
                            out |= _gathered_into(fn, a.value.id)
                elif type(x) is ir.Comp and any(type(y) is ir.Call and _registers(y) for y in ir.walk_expr(x.elt)):
                    for g in x.generators:
                        out |= _attrs_in(g.iter)
            if type(s) is ir.For and any(type(y) is ir.Call and _registers(y) for b in s.body for y in _all_exprs(b)):
                out |= _attrs_in(s.iter)
    return out


def _gathered_into(fn: ir.Function, name: str) -> set[str]:
    """Attributes whose elements ``fn`` gathers into the local list
    ``name`` (then registered: `nn.Sequential(*layers)`): bound to it, or
    put into it (`layers.append(self.blocks[-1])`), also in a loop over
    them (`for block in self.blocks: layers.append(block)`)."""
    out: set[str] = set()
    for s in ir.statements(fn.body):
        if type(s) is ir.Assign and any(type(t) is ir.Name and t.id == name for t in s.targets):
            out |= _attrs_in(s.value)
        elif type(s) is ir.For and any(_puts_into(x, name) for b in s.body for x in _all_exprs(b)):
            out |= _attrs_in(s.iter)
        for x in ir.statement_exprs(s):
            if _puts_into(x, name):
                for a in x.args:  # type: ignore[attr-defined]
                    out |= _attrs_in(a.value)
    return out


def _puts_into(x: ir.Expr, name: str) -> bool:
    """``x`` is ``name.append(...)``, ``.extend(...)`` or ``.insert(...)``."""
    if type(x) is not ir.Call or type(x.func) is not ir.Attr or type(x.func.value) is not ir.Name or x.func.value.id != name:
        return False
    row = api.member(api.LIST, x.func.attr)
    return row.stores is not None


def _assigned_otherwise(prog: Program, family: str) -> set[str]:
    """Attributes of ``self`` that the methods of a class family (a class
    and its bases and subclasses in the file) assign, somewhere, a value
    that is not a list, tuple or dict display or comprehension."""
    members = set(prog.family_members.get(family, ()))
    out: set[str] = set()
    for fn in prog.ir.functions:
        if fn.cls is None or fn.cls.id not in members or not fn.param_names:
            continue
        me = fn.param_names[0]
        for s in ir.statements(fn.body):
            if type(s) is ir.Assign and type(s.value) not in (ir.Seq, ir.DictX, ir.Comp):
                out |= {t.attr for t in s.targets if type(t) is ir.Attr and type(t.value) is ir.Name and t.value.id == me}
    return out


def _all_exprs(s: object) -> Iterator[ir.Expr]:
    for x in ir.statements([s]):
        yield from ir.statement_exprs(x)


def _name_registered(fn: ir.Function, name: str) -> bool:
    """The local ``name`` is registered in ``fn`` besides: given to a
    registering call, or assigned to an attribute or an item
    (``self.conv1 = conv``, ``self.blocks[name] = conv`` of a
    ``ModuleDict``)."""
    for s in ir.statements(fn.body):
        if type(s) is ir.Assign and type(s.value) is ir.Name and s.value.id == name and any(type(t) in (ir.Attr, ir.Subscript) for t in s.targets):
            return True
        for x in ir.statement_exprs(s):
            if type(x) is ir.Call and _registers(x) and any(type(y) is ir.Name and y.id == name for a in x.args for y in ir.walk_expr(a.value)):
                return True
    return False
