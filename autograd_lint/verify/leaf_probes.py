"""The verifier's probes about leaves: an in-place write to a leaf that
requires grad (AGL202), and a computed value made into a new leaf (AGL501).

Loaded by the child (child.py) by its file path, like module_probes.py: it
imports nothing of the package, and is given torch, the probe and the
child's helpers (``resolve``, ``simple_expr``).

- AGL202: before the line, the tensor it writes is read; a leaf that
  requires grad, with grad mode on, is the hazard. By default the line then
  runs under ``no_grad`` so the program keeps going, and a version bump
  after it confirms (``strict``: it runs as is and raises, as without the
  verifier, which the child's tracer confirms from the exception).
- AGL501: after the line, the value it made require grad is read: a leaf
  with no ``grad_fn``, so a backward from it reaches no parameter.
"""

from __future__ import annotations

import ast

CONFIRMED, NOT_REPRODUCED, UNVERIFIABLE = "confirmed", "not reproduced", "unverifiable"


# --- AGL202: in-place on a leaf that requires grad ------------------------------------


def leaf_before(torch, frame, p, strict: bool, resolve):
    ok, t = resolve(frame, p.subject)
    if not ok or not isinstance(t, torch.Tensor):
        return {"error": t if not ok else f"`{p.subject}` is a {type(t).__name__}, not a tensor"}
    hazard = t.is_leaf and t.requires_grad and torch.is_grad_enabled()
    state = {"t": t, "version": t._version, "hazard": hazard, "grad": torch.is_grad_enabled()}
    if hazard and not strict:
        # Keep going: run the statement as its fix would (under no_grad); the
        # version bump after it shows the in-place write really happened.
        torch._C._set_grad_enabled(False)
        state["restore"] = True
    return state


def leaf_after(torch, p, before, extra) -> None:
    if before.get("restore"):
        torch._C._set_grad_enabled(before["grad"])
    if "error" in before:
        if p.status is None:
            p.set(UNVERIFIABLE, before["error"])
        return
    if p.status == CONFIRMED:
        return
    t = before["t"]
    if before["hazard"] and t._version > before["version"]:
        p.set(CONFIRMED,
              f"in-place write to `{p.subject}`, a leaf that requires grad, with grad mode on (version "
              f"{before['version']} -> {t._version}): PyTorch raises \"a leaf Variable that requires grad is being "
              f"used in an in-place operation.\" here; the verifier ran the line under no_grad to keep going")
    elif extra.get("raised"):
        p.set(UNVERIFIABLE, f"the line raised {extra['raised']}")
    elif not before["hazard"]:
        why = ("grad mode was off" if not before["grad"] else
               "it does not require grad" if not t.requires_grad else "it is not a leaf")
        p.set(NOT_REPRODUCED, f"`{p.subject}` is safe to modify in place here: {why}")
    else:
        p.set(NOT_REPRODUCED, f"`{p.subject}` is a leaf that requires grad, but the line did not write to it in place")


# --- AGL501: a computed loss made a new leaf ----------------------------------------------


def _made_leaf_target(node, simple_expr) -> str | None:
    """What the line makes a leaf: `x` of `x.requires_grad = True` /
    `x.requires_grad_()`, or the name `loss = Variable(...)` binds."""
    if isinstance(node, ast.Assign) and len(node.targets) == 1:
        t = node.targets[0]
        if isinstance(t, ast.Attribute) and t.attr == "requires_grad":
            t = t.value
        return ast.unparse(t) if simple_expr(t) else None
    call = node.value if isinstance(node, ast.Expr) else None
    if isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and call.func.attr == "requires_grad_" and simple_expr(call.func.value):
        return ast.unparse(call.func.value)
    return None


def made_leaf_after(torch, frame, p, resolve, simple_expr) -> None:
    expr = _made_leaf_target(p.stmt[0], simple_expr) if p.stmt else None
    ok, t = resolve(frame, expr)
    if not ok:
        if p.status is None:
            p.set(UNVERIFIABLE, t)
        return
    if isinstance(t, torch.Tensor) and t.requires_grad and t.grad_fn is None:
        p.set(CONFIRMED, f"`{expr}` is a leaf with no grad_fn after line {p.row}: a backward from it reaches no parameter")
    elif p.status != CONFIRMED:
        p.set(NOT_REPRODUCED, f"`{expr}` is not a new leaf that requires grad after line {p.row}")
