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


def update_params(fn: ir.Function) -> tuple[tuple[int, int], ...]:
    """The pair of parameters (by position) that every ``return`` of ``fn``
    moves one toward the other: a sum with a term that reads one and not
    the other and a term that reads the other and not the one (``old *
    decay + new * (1 - decay)``, ``old + new``), or one of the two given
    back (``old.lerp_(new, w); return old``). A caller writing the result
    back where one came from (``self.avg = ema(self.avg, v, d)``) keeps a
    running update. Empty when no single pair fits every return."""
    params = fn.param_names
    pairs: set[tuple[int, int]] | None = None
    given_back: set[int] = set()
    for s in ir.statements(fn.body):
        if type(s) is not ir.Return:
            continue
        e = s.value
        if e is None:
            return ()
        if type(e) is ir.Name and e.id in params:
            given_back.add(params.index(e.id))
            continue
        found = _update_pairs(e, params)
        pairs = found if pairs is None else pairs & found
        if not pairs:
            return ()
    if not pairs or len(pairs) != 1:
        return ()
    pair = next(iter(pairs))
    return (pair,) if given_back <= set(pair) else ()


def sum_operands(e: ir.Expr) -> list[ir.Expr] | None:
    """The terms of the chain of `+` and `-` ``e`` is, in order (None when
    it is not one)."""
    if type(e) is not ir.BinOp or e.op not in ("add", "sub"):
        return None
    operands: list[ir.Expr] = []
    stack: list[ir.Expr] = [e]
    while stack:
        x = stack.pop()
        if type(x) is ir.BinOp and x.op in ("add", "sub"):
            stack.extend((x.right, x.left))
        else:
            operands.append(x)
    return operands


def _update_pairs(e: ir.Expr, params: list[str]) -> set[tuple[int, int]]:
    operands = sum_operands(e)
    if operands is None:
        return set()
    reads = [{n.id for n in ir.walk_expr(o) if type(n) is ir.Name and n.id in params} for o in operands]
    out = set()
    for i, a in enumerate(params):
        for j in range(i + 1, len(params)):
            b = params[j]
            if any(a in r and b not in r for r in reads) and any(b in r and a not in r for r in reads):
                out.add((i, j))
    return out
