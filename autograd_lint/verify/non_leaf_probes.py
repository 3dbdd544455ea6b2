"""The verifier's probe for a trainable tensor that is not a leaf (AGL502).

Loaded by the child (child.py) by its file path, like module_probes.py: it
imports nothing of the package, and is given torch and the child's
``resolve``. Run after the flagged statement, it reads what the statement
bound (``w = ...``, ``self.alpha = ...``): a tensor that requires grad but
has a ``grad_fn`` is not a leaf, so its ``.grad`` is never filled and an
optimizer refuses it; on a module, it is then not among the parameters.
A frozen parameter (``requires_grad=False``) bound to a module's attribute
is confirmed when it is no longer an ``nn.Parameter``. A move to the device
the tensor is already on returns the leaf itself (on a machine without a
GPU, ``.to("cpu")``): not reproduced there.
"""

from __future__ import annotations

import ast

CONFIRMED, NOT_REPRODUCED, UNVERIFIABLE = "confirmed", "not reproduced", "unverifiable"


def check(torch, frame, stmt, row: int, resolve) -> tuple[str, str]:
    target = stmt.targets[0] if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 else None
    if not isinstance(target, (ast.Name, ast.Attribute)):
        return UNVERIFIABLE, "cannot tell what the line binds"
    expr = ast.unparse(target)
    ok, t = resolve(frame, expr)
    if not ok:
        return UNVERIFIABLE, t
    if isinstance(t, torch.Tensor) and not t.requires_grad and isinstance(target, ast.Attribute):
        # `self.mean = nn.Parameter(t, requires_grad=False).to(device)`: a
        # frozen parameter, which the move may have turned into a plain
        # tensor that the module neither saves nor moves.
        ok, owner = resolve(frame, ast.unparse(target.value))
        if ok and isinstance(owner, torch.nn.Module):
            if isinstance(t, torch.nn.Parameter):
                return NOT_REPRODUCED, f"`{expr}` is still a parameter after line {row} (the move returned it itself)"
            return CONFIRMED, f"`{expr}` is a plain tensor after line {row}, not a registered parameter: `state_dict()` does not save it"
    if not isinstance(t, torch.Tensor) or not t.requires_grad:
        return NOT_REPRODUCED, f"`{expr}` is not a tensor that requires grad after line {row}"
    if t.is_leaf:
        return NOT_REPRODUCED, f"`{expr}` is a leaf after line {row} (the move returned the tensor itself)"
    where = ""
    if isinstance(target, ast.Attribute):
        ok, owner = resolve(frame, ast.unparse(target.value))
        if ok and isinstance(owner, torch.nn.Module) and all(p is not t for p in owner.parameters()):
            where = f"; `{ast.unparse(target.value)}.parameters()` does not list it"
    return CONFIRMED, (
        f"`{expr}` is not a leaf after line {row} (grad_fn={type(t.grad_fn).__name__}): "
        f"backward never fills its `.grad` and an optimizer refuses it{where}"
    )
