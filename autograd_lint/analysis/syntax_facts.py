"""What the IR alone says, shared by the program and the parts of a run:
a literal's value, a method's class, the name an expression starts from,
whether a subscript indexes a tensor. Pure functions of the syntax, in a
module of their own so that each of those imports them from below."""

from __future__ import annotations

from autograd_lint.analysis import ir


def _literal(e: ir.Expr) -> object:
    if type(e) is ir.Const:
        return e.value
    if type(e) is ir.UnaryOp and e.op == "neg" and type(e.operand) is ir.Const and isinstance(e.operand.value, (int, float)):
        return -e.operand.value  # type: ignore[operator]
    return _NO_LITERAL


_NO_LITERAL = object()


def method_class(fn: ir.Function | None) -> ir.Class | None:
    while fn is not None:
        if fn.cls is not None:
            return fn.cls
        fn = fn.parent
    return None


def _is_classmethod(fn: ir.Function) -> bool:
    return any(ir.dotted(d) == "classmethod" for d in fn.decorators)


def _root_name(e: ir.Expr | None) -> str | None:
    while e is not None:
        t = type(e)
        if t is ir.Name:
            return e.id
        if t is ir.Attr or t is ir.Subscript:
            e = e.value
        elif t is ir.Call and type(e.func) is ir.Attr:
            e = e.func.value
        else:
            return None
    return None


def _tensor_index(sub: ir.Subscript) -> bool:
    """``x[:, 0]``, ``x[mask > 0]``, ``x[..., None]`` index a tensor;
    ``x[i]`` may just as well pick an element of a list or a dict."""
    if len(sub.index) > 1:
        return True
    ix = sub.index[0]
    if ix.is_slice:
        return True
    v = ix.value
    if type(v) is ir.UnaryOp:
        return v.op == "invert"  # `x[~mask]`; `xs[-1]` is an element
    return type(v) is ir.Compare or (type(v) is ir.Const and v.kind in ("ellipsis", "none"))
