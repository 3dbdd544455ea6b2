"""Import resolution: which local names stand for which qualified names.

``import torch as th`` binds ``th`` -> ``torch``; ``from torch import nn``
binds ``nn`` -> ``torch.nn``; ``import torch.nn.functional as F`` binds ``F``
-> ``torch.nn.functional``. Rules then match APIs by qualified name, never by
how the file happens to spell them.
"""

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


def _module_name(node: cst.BaseExpression | None) -> str:
    if node is None:
        return ""
    return dotted(node) or ""


class ImportTable:
    """Local name -> qualified name, for every import in the file (module
    level and inside functions; a file rarely binds one name two ways)."""

    def __init__(self) -> None:
        self.bound: dict[str, str] = {}

    def add(self, node: cst.Import | cst.ImportFrom) -> None:
        if isinstance(node, cst.Import):
            for alias in node.names:
                full = _module_name(alias.name)
                if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                    self.bound[alias.asname.name.value] = full
                else:
                    head = full.split(".")[0]
                    self.bound[head] = head
            return
        if node.relative:  # `from . import x`: a project module, not torch
            base = "." * len(node.relative) + _module_name(node.module)
        else:
            base = _module_name(node.module)
        if isinstance(node.names, cst.ImportStar):
            return
        for alias in node.names:
            name = _module_name(alias.name)
            local = alias.asname.name.value if alias.asname is not None and isinstance(alias.asname.name, cst.Name) else name
            self.bound[local] = f"{base}.{name}" if base else name

    def qualify_path(self, path: str) -> str | None:
        head, _, rest = path.partition(".")
        q = self.bound.get(head)
        if q is None:
            return None
        return f"{q}.{rest}" if rest else q



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
