"""Attributes assigned on a module that only set a plain Python attribute
(AGL504): ``model.encoder.requires_grad = False`` freezes nothing.

An observer of attribute assignments (``SetAttribute``): it reports one
when everything the receiver may be is a module (a torch layer, or an
instance of a class of this file shown to be an ``nn.Module``) and the API
model says assigning that attribute on a module does nothing of what it
means (``assigned_instead``: the method that does). A receiver that may be
a tensor or a parameter (``p.requires_grad = False`` is right), or is not
known, is not reported. A project class that declares or reads the
attribute itself (its own ``requires_grad`` flag) is not either.
"""

from __future__ import annotations

from dataclasses import dataclass

from autograd_lint.analysis import ir
from autograd_lint.analysis.api import MODULE, Gives, member
from autograd_lint.analysis.interp import Program, Run
from autograd_lint.analysis.observer import Observer, SetAttribute
from autograd_lint.analysis.resolve import IsModel
from autograd_lint.analysis.state import Local
from autograd_lint.analysis.values import AttrStep, CallStep, ImportRoot, Instance, ItemStep, Module, ParamRoot, Sym, Value


@dataclass(frozen=True, slots=True)
class PlainAttribute:
    """``target = value`` on a module: ``method`` does what was meant."""

    node: object  # the assignment statement
    fn: ir.Function
    target: str  # as written: "model.encoder.requires_grad"
    receiver: str  # "model.encoder"
    attr: str
    method: str
    value: ir.Expr | None
    # What another module must show: that an instance of a class it defines
    # (and the attribute read off it) is a module.
    conditions: tuple = ()


class PlainAttributes(Observer):
    def __init__(self) -> None:
        self.found: dict[int, PlainAttribute] = {}
        # The receivers (as written) whose `.requires_grad`-like attribute the
        # file reads: code that reads back what the assignment set.
        self.read_receivers: set[str] = set()

    def forget(self, fn: int) -> None:
        self.found = {k: f for k, f in self.found.items() if f.fn.index != fn}

    def set_attribute(self, run: Run, e: SetAttribute) -> None:
        attr = e.target.attr
        row = member(MODULE, attr, attribute=True)
        if row.assigned_instead is None:
            return
        shown = _only_modules(run.prog, e.receiver, attr)
        if shown is None:
            return
        node = e.at.node
        receiver = _text(e.target.value)
        conditions = (IsModel(shown, only=True),) if shown else ()
        self.found.setdefault(id(node), PlainAttribute(node, run.fn, f"{receiver}.{attr}", receiver, attr, row.assigned_instead, e.value, conditions))

    def finish(self, prog: Program) -> None:
        if not self.found:
            return
        attrs = {f.attr for f in self.found.values()}
        for fn in prog.ir.functions:
            for s in ir.statements(fn.body):
                for e in ir.statement_exprs(s):
                    if type(e) is ir.Attr and e.attr in attrs and not _assigned(s, e):
                        self.read_receivers.add(_text(e.value))


def _only_modules(prog: Program, v: Value, attr: str) -> frozenset | None:
    """Everything ``v`` may be is a module, none of whose classes has an
    ``attr`` of its own: None when not shown, else the symbols another
    module must show to be modules (an instance of a class it defines,
    `Classifier().backbone`), empty when none."""
    if not v:
        return None
    syms: set = set()
    for f in v:
        t = type(f)
        if t is Module:
            continue
        if t is Sym and type(f.root) is ParamRoot and _module_param(prog, f.root) and _submodule_path(f.path):
            continue  # a parameter shown to be a module (or a submodule of it), whoever its callers are
        if t is Sym and type(f.root) is ImportRoot and any(type(st) is CallStep for st in f.path) and all(type(st) in (CallStep, AttrStep) for st in f.path):
            syms.add(f)  # an instance of a class another module defines, or a part of it
            continue
        if t is Instance and prog.lookup.is_module_class(f.cls) is True:
            cls = prog.class_by_qualname.get(f.cls.qualname) if f.cls.file == prog.file else None
            if cls is None or _has_own(prog, cls, attr):
                return None
            continue
        return None
    return frozenset(syms)


def _module_param(prog: Program, root: ParamRoot) -> bool:
    """The parameter is annotated with a module class, or the function
    calls on it a method only modules have (`model.modules()`)."""
    if (root.fn, root.index) in prog.annotated_modules:
        return True
    fn = prog.functions[root.fn] if root.fn < len(prog.functions) else None
    return fn is not None and root.index < len(fn.params) and Local(root.fn, fn.params[root.index].name) in prog.module_paths


def _submodule_path(path: tuple) -> bool:
    """What a path from a module gives is a module: nothing, one
    attribute (`model.encoder`), or an element of what a member listing
    submodules gives (`model.modules()`, `model.children()`)."""
    if not path:
        return True
    if len(path) == 1:
        return type(path[0]) is AttrStep
    return (
        len(path) == 3
        and type(path[0]) is AttrStep
        and member(MODULE, path[0].name).gives is Gives.SUBMODULES
        and type(path[1]) is CallStep
        and type(path[2]) is ItemStep
    )


def _has_own(prog: Program, cls: ir.Class, attr: str) -> bool:
    """The class (or a base of it in this file) defines ``attr`` or reads
    it off ``self``: a flag of its own, not a mistaken freeze."""
    for c in (cls, *prog.in_file_bases(cls)):
        if attr in c.methods or any(_mentions_self_attr(f, attr) for f in c.methods.values()):
            return True
        for s in c.body:
            if type(s) is ir.Assign and any(type(t) is ir.Name and t.id == attr for t in s.targets):
                return True
    return False


def _mentions_self_attr(fn: ir.Function, attr: str) -> bool:
    """``self.<attr>`` is read in ``fn`` (not only assigned)."""
    self_name = fn.param_names[0] if fn.param_names else None
    if self_name is None:
        return False
    return any(type(e) is ir.Attr and e.attr == attr and type(e.value) is ir.Name and e.value.id == self_name for s in ir.statements(fn.body) for e in ir.statement_exprs(s) if not _assigned(s, e))


def _assigned(s: object, e: ir.Expr) -> bool:
    return type(s) is ir.Assign and any(t is e for t in s.targets)


def _text(e: ir.Expr) -> str:
    """``model[0].encoder`` as written (a receiver the interpreter reports
    on has only names, attributes and constant or name subscripts)."""
    t = type(e)
    if t is ir.Name:
        return e.id  # type: ignore[attr-defined]
    if t is ir.Attr:
        return f"{_text(e.value)}.{e.attr}"  # type: ignore[attr-defined]
    if t is ir.Subscript:
        keys = ", ".join(_text(i.value) if type(i.value) is not ir.Const else repr(i.value.value) for i in e.index)  # type: ignore[attr-defined, union-attr]
        return f"{_text(e.value)}[{keys}]"  # type: ignore[attr-defined]
    return "…"
