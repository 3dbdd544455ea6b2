"""What the AGL1xx rules say about a retention the analysis found."""

from __future__ import annotations

from typing import Callable

import libcst as cst

from autograd_lint.analysis.names import callee_text, short_code
from autograd_lint.analysis.retention import RetentionFinding, RetentionKind
from autograd_lint.rules.base import LineOf


def value_text(module: cst.Module, r: RetentionFinding) -> str | None:
    return short_code(module, r.value_node) if isinstance(r.value_node, cst.CSTNode) else None


# Expressions a method call binds to whole (`loss.item()`); any other needs
# parentheses (`(loss * n).item()`).
_ATOMS = (cst.Name, cst.Attribute, cst.Subscript, cst.Call)


def retention_message(module: cst.Module, r: RetentionFinding) -> Callable[[LineOf], str]:
    text = value_text(module, r)
    origins = [(o, callee_text(module, o)) for o in r.origins if isinstance(o, cst.CSTNode)]
    origins = [(o, t) for o, t in origins if t]

    def render(line_of: LineOf) -> str:
        v = f"`{text}`" if text else "the value"
        origin = ""
        if origins:
            line, first = min((line_of(o), t) for o, t in origins)
            origin = f" (from `{first}` at line {line})"
        by = f" by `{r.via}`" if r.via else ""
        operand = text if text is None or isinstance(r.value_node, _ATOMS) else f"({text})"
        fix_item = f"`{operand}.item()`" if text else "`.item()`"
        fix_detach = f"`{operand}.detach()`" if text else "`.detach()`"
        if r.holds_many:
            fix_item, fix_detach = "each tensor's `.item()`", "`.detach()`"
        if r.kind is RetentionKind.STORE:
            return (
                f"{v} is stored in `{r.container}`{by} with its autograd graph{origin}; "
                f"every {r.per}'s graph stays alive — store {fix_item} or {fix_detach}"
            )
        if r.kind is RetentionKind.ACCUMULATE:
            return (
                f"{v} is accumulated into `{r.container}`{by} with its autograd graph{origin}; "
                f"every {r.per}'s graph stays alive — accumulate {fix_item} or {fix_detach}"
            )
        return f"{r.where} keeps {v} in `{r.container}` with its autograd graph; the graph outlives the call — keep {fix_detach}"

    return render
