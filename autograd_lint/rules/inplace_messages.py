"""What the AGL2xx rules say about an in-place write the analysis found."""

from __future__ import annotations

from typing import Callable

import libcst as cst

from autograd_lint.analysis.inplace import InplaceFinding
from autograd_lint.analysis.names import callee_text
from autograd_lint.rules.base import LineOf


def saved_by(module: cst.Module, f: InplaceFinding) -> Callable[[LineOf], str]:
    """`` by `sigmoid(...)` at line 12`` (empty when nothing is known)."""
    savers = [s for s in f.savers if isinstance(s.node, cst.CSTNode)]
    if not savers:
        return lambda line_of: ""

    def render(line_of: LineOf) -> str:
        # The first in the file of the equally good savers.
        line, text = min((line_of(s.node), callee_text(module, s.node) or s.op) for s in savers)
        by = f" by `{text}`" if text else ""
        return f"{by} at line {line}"

    return render


def returned_by(module: cst.Module, f: InplaceFinding) -> Callable[[LineOf], str]:
    """`` `qkv.chunk(...)` at line 12`` for AGL204."""
    view = f.view
    if view is None or not isinstance(view.node, cst.CSTNode):
        return lambda line_of: f" `{view.op}()`" if view is not None and view.op else " a multi-output view op"
    text = callee_text(module, view.node) or f"{view.op}(...)"
    return lambda line_of: f" `{text}` at line {line_of(view.node)}"


def written_by(module: cst.Module, f: InplaceFinding) -> Callable[[LineOf], str]:
    """`` `ReLU(inplace=True)`, run by `self.act(...)` at line 30`` for a
    write reported at the layer's construction; `` `mul_()` `` otherwise."""
    if f.call is None or not isinstance(f.call, cst.CSTNode):
        return lambda line_of: f"`{f.how}`"
    text = callee_text(module, f.call)
    return lambda line_of: f"`{f.how}`, run by `{text}` at line {line_of(f.call)}" if text else f"`{f.how}`, run at line {line_of(f.call)}"
