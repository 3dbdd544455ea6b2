"""AGL502's fix: make the leaf after the move, not before.

- ``torch.randn(4, requires_grad=True).to(device)`` -> ``torch.randn(4,
  requires_grad=True, device=device)`` (also ``.cuda()``, ``.cpu()``,
  ``.double()``, ``.float()``, ``.half()``, ``.bfloat16()``, ``.to(dtype)``),
  when the move is a plain device or dtype move the factory takes as a
  keyword it is not given yet. Safe for factories whose values do not
  depend on a random generator (``zeros``, ``ones``, ``full``, ``eye``,
  ``arange``, ``tensor``...); unsafe for ``rand``/``randn``/...: drawn on
  the device (or in the dtype) directly, the numbers a seed gives change.
- ``nn.Parameter(t).to(device)`` -> ``nn.Parameter(t.to(device))``: safe.
- ``torch.randn(4, requires_grad=True) * 0.01`` ->
  ``(torch.randn(4) * 0.01).requires_grad_()``: safe (the same numbers).

Other shapes (``Variable``, arithmetic on a name, ``w = w - lr * w.grad``)
get no fix: what was meant needs rewriting by hand.
"""

from __future__ import annotations

import libcst as cst

from autograd_lint.analysis import api, ir
from autograd_lint.analysis.module import ModuleAnalysis
from autograd_lint.analysis.non_leaf import NonLeaf
from autograd_lint.rules.fixes import SAFE, UNSAFE, FixSpec, method_call, parenthesize

# The dtype each dtype-converting method gives.
_DTYPES = frozenset(
    "float64 float32 float16 bfloat16 double float half complex64 complex128 cfloat cdouble".split()
)
# Factories taking `device=` and `dtype=` keywords, and whose values no
# random generator draws.
_DETERMINISTIC = frozenset("tensor zeros ones empty full arange linspace logspace eye zeros_like ones_like empty_like full_like".split())
_RANDOM = frozenset("rand randn rand_like randn_like normal".split())


def fix_non_leaf(analysis: ModuleAnalysis, f: NonLeaf, title: str) -> FixSpec | None:
    wrap = f.wrap
    node = wrap.node
    made = wrap.made.call.node
    if not isinstance(node, cst.CSTNode) or not isinstance(made, cst.Call):
        return None
    if isinstance(node, cst.Call) and type(wrap.expr) is ir.Call:
        if wrap.made.kind == "factory":
            return _into_factory(node, made, wrap.made.qual, title)
        if wrap.made.kind in ("parameter", "frozen"):
            return _into_parameter(node, made, title)
        return None
    if isinstance(node, cst.BinaryOperation) and wrap.made.kind == "factory" and (node.left is made or node.right is made):
        return _requires_grad_after(node, made, title)
    return None


def _into_factory(wrap: cst.Call, made: cst.Call, qual: str, title: str) -> FixSpec | None:
    """`torch.zeros(1, requires_grad=True).cuda()` -> `torch.zeros(1, requires_grad=True, device="cuda")`."""
    last = qual.rsplit(".", 1)[-1]
    if last not in _DETERMINISTIC and last not in _RANDOM:
        return None
    if not isinstance(wrap.func, cst.Attribute) or wrap.func.value is not made:
        return None
    moved = _moves(wrap)
    if not moved:
        return None
    given = {a.keyword.value for a in made.args if a.keyword is not None}
    if any(k in given for k, _ in moved) or any(a.star for a in made.args):
        return None
    args = list(made.args)
    if args:
        args[-1] = args[-1].with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
    for i, (k, v) in enumerate(moved):
        last_arg = i == len(moved) - 1
        args.append(cst.Arg(keyword=cst.Name(k), value=v, equal=cst.AssignEqual(cst.SimpleWhitespace(""), cst.SimpleWhitespace("")),
                            comma=cst.MaybeSentinel.DEFAULT if last_arg else cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))))
    new = made.with_changes(args=args, lpar=wrap.lpar, rpar=wrap.rpar)
    return FixSpec(SAFE if last in _DETERMINISTIC else UNSAFE, title, ((wrap, new),))


def _moves(wrap: cst.Call) -> list[tuple[str, cst.BaseExpression]] | None:
    """What the copying call asks for, as the factory's keywords
    (``device=``, ``dtype=``); None when it is not a plain move."""
    assert isinstance(wrap.func, cst.Attribute)
    row = api.member(api.TENSOR, wrap.func.attr.value)
    args = wrap.args
    if row.dtype is not None:
        if args:
            return None
        return [("dtype", cst.Attribute(value=_torch_of(wrap), attr=cst.Name(row.dtype)))] if _torch_of(wrap) is not None else None
    if row.device is not None:
        return None if args else [("device", cst.SimpleString(f'"{row.device}"'))]
    if not row.moves_by_arguments or not args or len(args) > 2:
        return None
    out: list[tuple[str, cst.BaseExpression]] = []
    for a in args:
        if a.star:
            return None
        if a.keyword is not None:
            if a.keyword.value not in ("device", "dtype"):
                return None
            out.append((a.keyword.value, a.value))
            continue
        kind = _positional_kind(a.value)
        if kind is None:
            return None
        out.append((kind, a.value))
    if len({k for k, _ in out}) != len(out):
        return None
    return out


def _positional_kind(e: cst.BaseExpression) -> str | None:
    """``device`` or ``dtype``, for a positional argument of ``.to`` whose
    spelling says which: ``torch.float64``, ``"cuda"``, ``device``,
    ``self.dtype``..."""
    if isinstance(e, cst.SimpleString):
        return "device"
    name = e.attr.value if isinstance(e, cst.Attribute) else e.value if isinstance(e, cst.Name) else None
    if name is None:
        return None
    if isinstance(e, cst.Attribute) and name in _DTYPES:
        return "dtype"
    low = name.lower()
    if "dtype" in low:
        return "dtype"
    if "device" in low or low in ("dev", "gpu"):
        return "device"
    return None


def _torch_of(wrap: cst.Call) -> cst.BaseExpression | None:
    """The expression naming torch in the factory call (``torch`` of ``torch.randn``)."""
    assert isinstance(wrap.func, cst.Attribute)
    made = wrap.func.value
    if isinstance(made, cst.Call) and isinstance(made.func, cst.Attribute):
        base = made.func.value
        if isinstance(base, cst.Name):
            return cst.Name(base.value)
    return None


def _into_parameter(wrap: cst.Call, made: cst.Call, title: str) -> FixSpec | None:
    """`nn.Parameter(t).to(device)` -> `nn.Parameter(t.to(device))`."""
    if not isinstance(wrap.func, cst.Attribute) or wrap.func.value is not made or not made.args:
        return None
    first = made.args[0]
    if first.keyword is not None or first.star:
        return None
    moved = method_call(first.value, wrap.func.attr.value, tuple(wrap.args))
    args = [first.with_changes(value=moved), *made.args[1:]]
    return FixSpec(SAFE, title, ((wrap, made.with_changes(args=args, lpar=wrap.lpar, rpar=wrap.rpar)),))


def _requires_grad_after(op: cst.BinaryOperation, made: cst.Call, title: str) -> FixSpec | None:
    """`torch.randn(3, requires_grad=True) * 0.01` -> `(torch.randn(3) * 0.01).requires_grad_()`."""
    flags = [a for a in made.args if a.keyword is not None and a.keyword.value == "requires_grad"]
    if len(flags) != 1 or not isinstance(flags[0].value, cst.Name) or flags[0].value.value != "True":
        return None
    args = [a for a in made.args if a is not flags[0]]
    if args:
        args[-1] = args[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
    plain = made.with_changes(args=args)
    inner = op.with_changes(left=plain if op.left is made else op.left, right=plain if op.right is made else op.right, lpar=[], rpar=[])
    new = method_call(parenthesize(inner), "requires_grad_")
    return FixSpec(SAFE, title, ((op, new.with_changes(lpar=op.lpar, rpar=op.rpar)),))
