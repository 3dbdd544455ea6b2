"""Access paths: the location a name, an attribute or an element names,
read off the IR alone (scopes resolved as Python does). The interpreter's
runs resolve names the same way; facts gathered before any run (which
paths a module-only method is called on) use these keys.
"""

from __future__ import annotations

from autograd_lint.analysis import ir
from autograd_lint.analysis.state import AttrOf, ClassAttr, Global, Local, Loc

# The pseudo attribute of "an element of" (`self.models[k]`).
ELEMENT = "[]"


def static_loc(fn: ir.Function, name: str) -> Loc:
    """Where ``name`` lives when read in ``fn`` (a class body aside)."""
    if fn.is_module or name in fn.globals:
        return Global(name)
    if name in fn.locals and name not in fn.nonlocals:
        return Local(fn.index, name)
    f = fn.parent
    while f is not None and not f.is_module:
        if name in f.locals and name not in f.nonlocals and name not in f.globals:
            return Local(f.index, name)
        f = f.parent
    return Global(name)


def is_static(fn: ir.Function) -> bool:
    return any(ir.dotted(d) == "staticmethod" for d in fn.decorators)


def self_name(fn: ir.Function) -> str | None:
    """The name ``self`` has in a method, or in a function nested in one."""
    if fn.cls is not None:
        return fn.params[0].name if fn.params and not is_static(fn) else None
    f = fn.parent
    while f is not None and f.cls is None:
        f = f.parent
    if f is not None and f.params and not is_static(f):
        return f.params[0].name
    return None


def path_key(fn: ir.Function, family: str | None, e: ir.Expr) -> Loc | None:
    """The location ``e`` names in ``fn`` (``family``: the class family of
    its ``self``): ``x``, ``self.model`` (a class attribute), ``cfg.net``,
    ``self.models[k]`` (an element of ``self.models``). None for anything
    else (a call's result)."""
    t = type(e)
    if t is ir.Name:
        return static_loc(fn, e.id)
    if t is ir.Attr:
        base = e.value
        if family is not None and type(base) is ir.Name and base.id == self_name(fn) and static_loc(fn, base.id) == Local(_self_scope(fn), base.id):
            return ClassAttr(family, e.attr)
        inner = path_key(fn, family, base)
        return AttrOf(inner, e.attr) if inner is not None else None
    if t is ir.Subscript:
        inner = path_key(fn, family, e.value)
        return AttrOf(inner, ELEMENT) if inner is not None else None
    return None


def _self_scope(fn: ir.Function) -> int:
    """The function whose parameter ``self`` is (the method itself, or the
    method a nested function closes over)."""
    f: ir.Function | None = fn
    while f is not None and f.cls is None:
        f = f.parent
    return f.index if f is not None else fn.index
