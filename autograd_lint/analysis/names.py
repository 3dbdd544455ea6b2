"""Names and short source text of LibCST nodes: dotted names (``a.b.c``)
for lowering and fixes, one-line snippets for messages."""

from __future__ import annotations

import libcst as cst


def dotted(expr: cst.BaseExpression) -> str | None:
    """``a.b.c`` for a Name/Attribute chain, else None."""
    parts: list[str] = []
    while isinstance(expr, cst.Attribute):
        parts.append(expr.attr.value)
        expr = expr.value
    if not isinstance(expr, cst.Name):
        return None
    parts.append(expr.value)
    return ".".join(reversed(parts))


def short_code(module: cst.Module, node: cst.CSTNode, limit: int = 40) -> str | None:
    """The node's source on one line, for messages; None when too long."""
    text = " ".join(module.code_for_node(node).split())
    return text if len(text) <= limit else None


def callee_text(module: cst.Module, node: cst.CSTNode) -> str | None:
    """`criterion(...)` for a call node, else the node's short source."""
    if isinstance(node, cst.Call):
        callee = short_code(module, node.func, 30)
        return f"{callee}(...)" if callee else None
    return short_code(module, node, 30)
