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


def _subject(module: cst.Module, r: RetentionFinding, text: str | None) -> str:
    """What the message is about, in code: the value as written, or, when
    that is too long for one line, its beginning."""
    if text is not None:
        return f"`{text}`"
    if isinstance(r.value_node, cst.CSTNode):
        head = " ".join(module.code_for_node(r.value_node).split())[:30]
        cut = max(head.rfind(c) for c in "([{, ")  # end at a token's edge
        return f"`{(head[: cut + 1] if cut > 10 else head).rstrip()}…`"
    return "the value"


def retention_message(module: cst.Module, r: RetentionFinding) -> Callable[[LineOf], str]:
    text = value_text(module, r)
    subject = _subject(module, r, text)
    origins = [(o, callee_text(module, o)) for o in r.origins if isinstance(o, cst.CSTNode)]
    origins = [(o, t) for o, t in origins if t]

    def render(line_of: LineOf) -> str:
        origin = ""
        if origins:
            line, first = min((line_of(o), t) for o, t in origins)
            origin = f" (from `{first}` at line {line})"
        by = f" by `{r.via}`" if r.via else ""
        if r.holds_many:
            detach = item = "each tensor's `.detach()`"  # (one element is shown of a tensor only)
        elif text is None:
            detach, item = "its `.detach()`", "its `.item()` or `.detach()`"
        else:
            operand = text if isinstance(r.value_node, _ATOMS) else f"({text})"
            detach, item = f"`{operand}.detach()`", f"`{operand}.item()` or `{operand}.detach()`"
        # `.item()` only for a value shown to hold one element: on a batch
        # (`logits.item()`) it raises.
        fix = item if r.one_element else detach
        if r.differentiated_later:
            # (Its backward reads it out of the container: detaching at the
            # store would break that backward.)
            fix = f"{item if r.one_element else detach} only after its backward"
        if r.kind is RetentionKind.STORE:
            return (
                f"{subject} is stored in `{r.container}`{by} with its autograd graph{origin}; "
                f"every {r.per}'s graph stays alive — store {fix}"
            )
        if r.kind is RetentionKind.ACCUMULATE:
            return (
                f"{subject} is accumulated into `{r.container}`{by} with its autograd graph{origin}; "
                f"every {r.per}'s graph stays alive — accumulate {fix}"
            )
        return f"{r.where} keeps {subject} in `{r.container}` with its autograd graph; the graph outlives the call — keep {detach}"

    return render
