"""Building blocks for the rules' fixes: small LibCST rewrites, expressed as
node replacements on the analysed module (no tree is walked again).

A rule attaches a ``FixSpec`` to its report; the engine turns it into text
edits (by applying it to the tree and diffing), and ``fix.py`` applies the
fixes of a file together, re-parsing and re-linting until nothing changes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import libcst as cst

from autograd_lint.analysis import torch_api as api
from autograd_lint.analysis.names import dotted
from autograd_lint.analysis.tree import child_nodes
from autograd_lint.analysis.values import GradMode
from autograd_lint.finding import Applicability

if TYPE_CHECKING:
    from autograd_lint.analysis.inplace import InplaceFinding
    from autograd_lint.analysis.module import ModuleAnalysis

SAFE = Applicability.SAFE
UNSAFE = Applicability.UNSAFE


@dataclass(frozen=True)
class FixSpec:
    applicability: Applicability
    title: str
    # (old node, new node) pairs, by identity in the analysed module; a
    # statement may be replaced by several (``insert_before``).
    replacements: tuple[tuple[cst.CSTNode, "cst.CSTNode | cst.FlattenSentinel"], ...]
    # Add `import torch` at the top when the file binds no name for torch.
    import_torch: bool = False
    extra: dict = field(default_factory=dict, compare=False)


_ATOMIC = (cst.Name, cst.Attribute, cst.Call, cst.Subscript)


def parenthesize(expr: cst.BaseExpression) -> cst.BaseExpression:
    """`a + b` -> `(a + b)` where an attribute or operator would bind tighter."""
    if isinstance(expr, _ATOMIC) or expr.lpar:
        return expr
    return expr.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])


def method_call(receiver: cst.BaseExpression, method: str, args: tuple[cst.Arg, ...] = ()) -> cst.Call:
    """`receiver.method(args)`, parenthesising the receiver when needed."""
    return cst.Call(func=cst.Attribute(value=parenthesize(receiver), attr=cst.Name(method)), args=list(args))


def torch_name(bound: dict[str, str]) -> str | None:
    """The name this file binds to the torch package (`torch`, `th`...)."""
    for local, qual in bound.items():
        if qual == "torch":
            return local
    return None


def torch_attr(torch_local: str, attr: str) -> cst.Attribute:
    return cst.Attribute(value=cst.Name(torch_local), attr=cst.Name(attr))


def no_grad_with(torch_local: str, body: list[cst.BaseStatement], like: cst.BaseStatement, context: cst.BaseExpression | None = None) -> cst.With:
    """`with torch.no_grad():` (or ``context``) around ``body``, at the place of ``like``."""
    return cst.With(
        items=[cst.WithItem(item=context if context is not None else cst.Call(func=torch_attr(torch_local, "no_grad")))],
        body=cst.IndentedBlock(body=[s.with_changes(leading_lines=[]) if hasattr(s, "leading_lines") else s for s in body]),
        leading_lines=getattr(like, "leading_lines", ()),
    )


def insert_before(stmt: cst.SimpleStatementLine, new: cst.BaseSmallStatement) -> tuple[cst.CSTNode, cst.FlattenSentinel]:
    """A replacement putting ``new`` on a line of its own before ``stmt``
    (the comments above ``stmt`` stay above both)."""
    line = cst.SimpleStatementLine(body=[new], leading_lines=stmt.leading_lines)
    return stmt, cst.FlattenSentinel([line, stmt.with_changes(leading_lines=[])])


def add_import_torch(module: cst.Module) -> cst.Module:
    """`import torch` after the module docstring, `__future__` imports and
    the first block of imports."""
    body = list(module.body)
    idx = 0
    # (A notebook's program starts with `pass` where its first cell's magic,
    # `%%time`, stood: the import goes below it, as in the cell.)
    while idx < len(body) and isinstance(body[idx], cst.SimpleStatementLine) and all(isinstance(s, cst.Pass) for s in body[idx].body):
        idx += 1
    if idx < len(body) and _is_docstring(body[idx]):
        idx += 1
    while idx < len(body) and _is_import(body[idx]):
        idx += 1
    stmt = cst.SimpleStatementLine(body=[cst.Import(names=[cst.ImportAlias(name=cst.Name("torch"))])])
    body.insert(idx, stmt)
    return module.with_changes(body=body)


def _is_docstring(stmt: cst.BaseStatement) -> bool:
    return (
        isinstance(stmt, cst.SimpleStatementLine)
        and len(stmt.body) == 1
        and isinstance(stmt.body[0], cst.Expr)
        and isinstance(stmt.body[0].value, (cst.SimpleString, cst.ConcatenatedString))
    )


def _is_import(stmt: cst.BaseStatement) -> bool:
    return isinstance(stmt, cst.SimpleStatementLine) and all(isinstance(s, (cst.Import, cst.ImportFrom)) for s in stmt.body)


class _Replace(cst.CSTTransformer):
    """Swap nodes by identity, all in one pass over the original tree (node
    identity does not survive a rewrite, so one pass is the only sound way
    to apply several replacements)."""

    def __init__(self, mapping: dict[int, cst.CSTNode]) -> None:
        super().__init__()
        self.mapping = mapping

    def on_leave(self, original_node, updated_node):  # type: ignore[override]
        return self.mapping.get(id(original_node), updated_node)


def apply_fixes(module: cst.Module, specs: list[FixSpec]) -> tuple[cst.Module, list[FixSpec]]:
    """Apply as many of ``specs`` as do not overlap; return the new module
    and the specs applied. A spec whose nodes contain, or lie inside, those of
    an earlier one is left for the next round."""
    applied: list[FixSpec] = []
    touched: list[cst.CSTNode] = []
    mapping: dict[int, cst.CSTNode] = {}
    need_import = False
    for spec in specs:
        olds = [old for old, _ in spec.replacements]
        if not olds or any(_overlaps(old, t) for old in olds for t in touched):
            continue
        for old, new in spec.replacements:
            mapping[id(old)] = new
        touched.extend(olds)
        applied.append(spec)
        need_import = need_import or spec.import_torch
    if mapping:
        module = module.visit(_Replace(mapping))
    if need_import:
        module = add_import_torch(module)
    return module, applied


def apply_fix_within(node: cst.CSTNode, spec: FixSpec) -> cst.CSTNode:
    """``spec``'s replacements applied inside ``node`` alone (a statement
    that holds all of them); ``spec`` must not add an import."""
    out = node.visit(_Replace({id(old): new for old, new in spec.replacements}))
    if isinstance(out, cst.FlattenSentinel):
        # A top-level statement given others before it: their code, as a module's.
        return cst.Module(body=list(out), header=[], footer=[])
    return out


def _overlaps(a: cst.CSTNode, b: cst.CSTNode) -> bool:
    if a is b:
        return True
    return _contains(a, b) or _contains(b, a)


def _contains(outer: cst.CSTNode, inner: cst.CSTNode) -> bool:
    stack = [outer]
    while stack:
        n = stack.pop()
        if n is inner:
            return True
        stack.extend(child_nodes(n))
    return False


# -- shared fixes -----------------------------------------------------------------

_CONTAINER_LITERALS = (cst.Tuple, cst.List, cst.Dict, cst.Set, cst.ListComp, cst.DictComp, cst.SetComp, cst.GeneratorExp)


def _detach_elements(value: cst.Tuple | cst.List | cst.Dict, title: str, parts: dict) -> FixSpec | None:
    """`{"loss": loss, "n": n}` -> `{"loss": loss.detach(), "n": n}`: each
    element that holds a graph detached where the display is written. None
    when one of them may not be a tensor, or cannot be matched to its
    element (a `**spread`, a computed key, a starred item)."""
    new_elements = []
    safeties = []
    for i, el in enumerate(value.elements):
        if isinstance(el, (cst.StarredElement, cst.StarredDictElement)):
            return None
        key: object = i
        if isinstance(el, cst.DictElement):
            if not isinstance(el.key, cst.SimpleString):
                return None
            key = el.key.evaluated_value
        if key not in parts:
            new_elements.append(el)
            continue
        if parts[key] is None or (isinstance(el.value, cst.Call) and isinstance(el.value.func, cst.Attribute) and el.value.func.attr.value in ("detach", "item")):
            return None
        safeties.append(parts[key])
        new_elements.append(el.with_changes(value=method_call(el.value, "detach")))
    if not safeties or len(safeties) != len(parts):
        return None
    return FixSpec(SAFE if all(s == "safe" for s in safeties) else UNSAFE, title, ((value, value.with_changes(elements=new_elements)),))


def detach_fix(value: object, title: str, safety: str | None, parts: tuple = ()) -> FixSpec | None:
    """`losses.append(loss)` -> `losses.append(loss.detach())`, on a value
    the analysis shows to be a tensor (``safety``, from
    ``RetentionFinding.detach``); a tuple, list or dict written out there
    gets it on each element that holds a graph (``parts``), any other
    container none. Safe when what keeps it never reaches autograd again: the
    value keeps its data, device, dtype and shape, and only loses the graph
    nothing uses. Unsafe when later code may differentiate it, or it is a
    tensor only as far as a backward through it shows."""
    if isinstance(value, (cst.Tuple, cst.List, cst.Dict)) and parts:
        return _detach_elements(value, title, dict(parts))
    if safety is None or not isinstance(value, cst.BaseExpression) or isinstance(value, _CONTAINER_LITERALS):
        return None
    if isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and value.func.attr.value in ("detach", "item"):
        return None
    return FixSpec(SAFE if safety == "safe" else UNSAFE, title, ((value, method_call(value, "detach")),))


# Gradients kept at fixed addresses: `None` there breaks a captured graph.
_STATIC_GRADS = ("torch.cuda.graph", "CUDAGraph", "make_graphed_callables", "capturable")


def reads_grad(module: cst.Module, allowed: int = 0) -> bool:
    """Might code expect the gradients to stay tensors (zeros) rather than
    become None? Any other `.grad` use in the file than the ``allowed`` ones
    a fix removes (a read after zeroing, in this function or another: a
    logger of gradient norms, a hook), or gradients kept static for CUDA
    graph capture anywhere in the file."""
    code = module.code
    return code.count(".grad") > allowed or any(s in code for s in _STATIC_GRADS)


# `y += x` -> `y = y + x`: the out-of-place operator of each augmented one.
_BINARY = {
    cst.AddAssign: cst.Add,
    cst.SubtractAssign: cst.Subtract,
    cst.MultiplyAssign: cst.Multiply,
    cst.DivideAssign: cst.Divide,
    cst.PowerAssign: cst.Power,
    cst.MatrixMultiplyAssign: cst.MatrixMultiply,
    cst.FloorDivideAssign: cst.FloorDivide,
    cst.ModuloAssign: cst.Modulo,
}


def out_of_place(analysis: "ModuleAnalysis", f: "InplaceFinding", title: str) -> FixSpec | None:
    """`y += 1` -> `y = y + 1`; `y.mul_(2)` -> `y = y.mul(2)`;
    `torch.clamp_(e, ...)` -> `e = torch.clamp(e, ...)`. Unsafe: any other
    name for the same tensor (a view, an alias) no longer sees the
    change. Not offered under no_grad (the new tensor would leave the
    graph) nor where no out-of-place op exists (`copy_`, `zero_`)."""
    node = f.node
    if f.grad is GradMode.OFF:
        return None
    if f.call is not None and isinstance(node, cst.Call):
        # A layer built with `inplace=True`: built without it.
        args = [a.with_changes(value=cst.Name("False")) if a.keyword is not None and a.keyword.value == "inplace" else a for a in node.args]
        return FixSpec(UNSAFE, title, ((node, node.with_changes(args=args)),))
    if isinstance(node, cst.AugAssign) and isinstance(node.target, (cst.Name, cst.Attribute)):
        op = _BINARY.get(type(node.operator))
        if op is None:
            return None
        value = cst.BinaryOperation(left=node.target, operator=op(), right=parenthesize(node.value))
        new = cst.Assign(targets=[cst.AssignTarget(target=node.target)], value=value)
        return FixSpec(UNSAFE, title, ((node, new),))
    if not (isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute)):
        return None
    base = api.inplace_base(node.func.attr.value)
    line = analysis.statement_line(node)
    if base is None or line is None or not isinstance(line.body[0], cst.Expr) or line.body[0].value is not node:
        return None
    receiver = dotted(node.func.value)
    if receiver == f.name and api.method_entry(base) is not None:
        target: cst.BaseExpression = node.func.value  # y.mul_(2) -> y = y.mul(2)
    elif node.args and dotted(node.args[0].value) == f.name and receiver == analysis.torch_name and api.ledger_entry(f"torch.{base}") is not None:
        target = node.args[0].value  # torch.clamp_(e, ...) -> e = torch.clamp(e, ...)
    else:
        return None
    call = node.with_changes(func=node.func.with_changes(attr=cst.Name(base)))
    new = cst.Assign(targets=[cst.AssignTarget(target=target)], value=call)
    return FixSpec(UNSAFE, title, ((line.body[0], new),))
