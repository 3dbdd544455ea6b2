"""The verifier's probes for what a module registers (AGL503, AGL504).

Loaded by the child (child.py) by its file path, like the child itself:
it imports nothing of the package, and is given torch and the child's
``resolve`` (a name or plain dotted expression, evaluated in the user's
frame). Each check runs after the flagged statement and returns a verdict:
``(status, evidence)`` with the child's status words.
"""

from __future__ import annotations

import ast

CONFIRMED, NOT_REPRODUCED, UNVERIFIABLE = "confirmed", "not reproduced", "unverifiable"


def check(code: str, torch, frame, stmt, subject: str | None, row: int, resolve) -> tuple[str, str]:
    if code == "AGL503":
        return _unregistered(torch, frame, subject, row, resolve)
    return _plain_flag(torch, frame, stmt, row, resolve)


def _unregistered(torch, frame, subject: str | None, row: int, resolve) -> tuple[str, str]:
    """After the line, the container ``self.<attr>`` holds modules or
    parameters whose tensors ``self.parameters()`` does not list."""
    if not subject or "." not in subject:
        return UNVERIFIABLE, "the finding names no attribute to read"
    ok, held = resolve(frame, subject)
    if not ok:
        return UNVERIFIABLE, held
    ok, owner = resolve(frame, subject.rsplit(".", 1)[0])
    if not ok or not isinstance(owner, torch.nn.Module):
        return UNVERIFIABLE, f"`{subject.rsplit('.', 1)[0]}` is not a module here"
    items = list(held.values()) if isinstance(held, dict) else list(held) if isinstance(held, (list, tuple)) else []
    tensors = []
    for x in items:
        if isinstance(x, torch.nn.Module):
            tensors.extend(x.parameters())
        elif isinstance(x, torch.nn.Parameter):
            tensors.append(x)
    if not tensors:
        return NOT_REPRODUCED, f"`{subject}` holds no module or parameter after line {row}"
    registered = {id(t) for t in owner.parameters()}
    missing = [t for t in tensors if id(t) not in registered]
    if missing:
        n = sum(t.numel() for t in missing)
        return CONFIRMED, (
            f"after line {row}, `{subject}` holds {len(missing)} parameter tensor(s) ({n} values) that "
            f"`{subject.rsplit('.', 1)[0]}.parameters()` does not list: never trained, moved or saved"
        )
    return NOT_REPRODUCED, f"every parameter in `{subject}` is registered on the module after line {row}"


def _plain_flag(torch, frame, stmt, row: int, resolve) -> tuple[str, str]:
    """After ``m.requires_grad = flag``, ``m`` is a module some of whose
    parameters do not have ``requires_grad == flag``."""
    target = stmt.targets[0] if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 else None
    if not isinstance(target, ast.Attribute):
        return UNVERIFIABLE, "cannot tell which module the line assigns to"
    receiver = ast.unparse(target.value)
    ok, m = resolve(frame, receiver)
    if not ok:
        return UNVERIFIABLE, m
    if not isinstance(m, torch.nn.Module):
        return NOT_REPRODUCED, f"`{receiver}` is a {type(m).__name__}, not a module, at line {row}"
    flag = bool(getattr(m, target.attr, False))
    params = list(m.parameters())
    unchanged = [p for p in params if p.requires_grad != flag]
    if unchanged:
        return CONFIRMED, (
            f"after line {row}, {len(unchanged)} of the {len(params)} parameters of `{receiver}` still have "
            f"requires_grad={not flag}: the assignment changed none of them"
        )
    return NOT_REPRODUCED, f"every parameter of `{receiver}` has requires_grad={flag} after line {row}"
