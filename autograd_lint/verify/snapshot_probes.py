"""The verifier's probe for a ``state_dict()`` snapshot that aliases the live
parameters (AGL206).

Loaded by the child (child.py) by its file path, like the child itself: it
imports nothing of the package and is given torch, the child's state and
its ``resolve``. ``state_dict()`` returns the parameters themselves (detached
views sharing storage and the version counter), so an optimizer step that
updates a parameter in place moves the snapshot too. The probe:

- notes the storages a ``state_dict()`` called at the flagged line returned
  (``Module.state_dict`` is wrapped while the program runs);
- after the line, reads what the statement bound (``best = ...``,
  ``self.best_state = ...``) and keeps those of its tensors that are such
  storages, with their versions: a deep copy or a clone keeps none;
- confirms when one of those snapshots is loaded (``load_state_dict``) or
  saved (``torch.save``, both wrapped) after a tensor of it changed: what is
  loaded or saved is then the later weights. A snapshot that changed but
  was never seen loaded or saved (returned, say) stays latent; one nothing
  changed is not reproduced.
"""

from __future__ import annotations

import ast
import os
import sys

CONFIRMED, LATENT, NOT_REPRODUCED, UNVERIFIABLE = "confirmed", "latent", "not reproduced", "unverifiable"


def install(torch, on_state_dict, on_use):
    """Wrap ``Module.state_dict`` (``on_state_dict(caller_frame, result)``),
    ``Module.load_state_dict`` and ``torch.save`` (``on_use(caller_frame,
    obj, how)``); returns the function that undoes the wraps."""
    undo = []

    def wrap(owner, name, after=None, before=None):
        orig = getattr(owner, name)

        def wrapper(*args, **kwargs):
            if before is not None:
                _quietly(before, sys._getframe(1), args, kwargs)
            result = orig(*args, **kwargs)
            if after is not None:
                _quietly(after, sys._getframe(1), result)
            return result

        wrapper.__wrapped__ = orig
        setattr(owner, name, wrapper)
        undo.append(lambda: setattr(owner, name, orig))

    wrap(torch.nn.Module, "state_dict", after=on_state_dict)
    wrap(torch.nn.Module, "load_state_dict", before=lambda f, a, k: on_use(f, a[1] if len(a) > 1 else k.get("state_dict"), "loaded"))
    wrap(torch, "save", before=lambda f, a, k: on_use(f, a[0] if a else k.get("obj"), "saved"))
    return lambda: [u() for u in reversed(undo)]


def _quietly(fn, *args) -> None:
    try:
        fn(*args)
    except Exception:
        pass  # the probe never breaks the program it watches


def storages(torch, result) -> set:
    """The storages of the tensors a ``state_dict()`` returned."""
    return {t.untyped_storage().data_ptr() for t in _tensors(torch, result)}


def _tensors(torch, obj, depth: int = 0) -> list:
    if isinstance(obj, torch.Tensor):
        return [obj]
    if depth > 2:
        return []
    if isinstance(obj, dict):
        return [t for v in obj.values() for t in _tensors(torch, v, depth + 1)]
    if isinstance(obj, (list, tuple)):
        return [t for v in obj for t in _tensors(torch, v, depth + 1)]
    return []


def bound(torch, frame, stmt, returned: set, resolve) -> dict | None:
    """After the flagged statement: the tensors of what it bound that are
    the live ones a ``state_dict()`` returned, with their versions (None:
    nothing readable was bound)."""
    targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target] if isinstance(stmt, ast.AnnAssign) else []
    names = [ast.unparse(n) for t in targets for n in (t.elts if isinstance(t, ast.Tuple) else [t])]
    kept, seen = [], False
    for name in names:
        ok, value = resolve(frame, name)
        if not ok or not isinstance(value, dict):
            continue
        seen = True
        kept.extend((t, t._version) for t in _tensors(torch, value) if t.untyped_storage().data_ptr() in returned)
    return {"tensors": kept} if seen else None


def used(torch, records: list, obj, how: str, frame, row: int) -> tuple[str, str] | None:
    """A load or save of ``obj``: confirmed when it holds a snapshot's tensor
    that changed after the snapshot was taken at ``row``."""
    held = {id(t) for t in _tensors(torch, obj)}
    for rec in records:
        changed = [t for t, v in rec["tensors"] if id(t) in held and t._version != v]
        if changed:
            where = f"{os.path.basename(frame.f_code.co_filename)}:{frame.f_lineno}" if frame is not None else "a later line"
            return CONFIRMED, (
                f"the snapshot bound at line {row} holds the live parameter tensors: {len(changed)} of them were changed in "
                f"place after it was taken (by optimizer steps) and it was {how} at {where} holding the later weights"
            )
    return None


def final(records: list, row: int, seen: bool) -> tuple[str, str]:
    """Once the program ended, for a snapshot never confirmed."""
    if not seen:
        return UNVERIFIABLE, f"no `state_dict()` call was seen at line {row}"
    tensors = [x for rec in records for x in rec["tensors"]]
    if not tensors:
        return NOT_REPRODUCED, f"what line {row} bound holds no live parameter tensor (a copy)"
    if any(t._version != v for t, v in tensors):
        return LATENT, f"the snapshot bound at line {row} changed after it was taken, but no load or save of it was seen"
    return NOT_REPRODUCED, f"nothing changed the snapshot bound at line {row} after it was taken"


# --- the probes' side: what the child calls, with its state and probes ------------------


def watch(torch, state):
    """``install`` with callbacks that feed the AGL206 probes of ``state``."""
    return install(torch, lambda frame, result: _on_state_dict(torch, state, frame, result),
                   lambda frame, obj, how: _on_use(torch, state, frame, obj, how))


def _probes_at(state, frame) -> list:
    entry = state._entry(frame.f_code.co_filename) if frame is not None else None
    return [p for p in (entry or {}).get(frame.f_lineno, ()) if p.code == "AGL206"] if entry else []


def _on_state_dict(torch, state, frame, result) -> None:
    if state.in_probe:
        return
    for p in _probes_at(state, frame):
        p.extra.setdefault("returned", set()).update(storages(torch, result))


def _on_use(torch, state, frame, obj, how: str) -> None:
    if state.in_probe:
        return
    for p in state.probes:
        if p.code == "AGL206" and p.status != CONFIRMED and p.observations:
            verdict = used(torch, p.observations, obj, how, frame, p.row)
            if verdict is not None:
                p.set(*verdict)
                p.observations.clear()  # they hold the snapshot's tensors: let them go
                state.write()


def after_line(torch, frame, p, max_hits: int, resolve) -> None:
    returned = p.extra.pop("returned", None)
    if returned is None or p.status == CONFIRMED:
        return
    p.extra["seen"] = True
    rec = bound(torch, frame, p.stmt[0] if p.stmt else None, returned, resolve)
    if rec is not None:
        # The latest snapshots: a load or save reads what the line bound last.
        p.observations[:] = p.observations[-(max_hits - 1):] + [rec]
    if p.status is None:
        p.set(LATENT, f"a snapshot was taken at line {p.row}; watching for a load or save of it after a step")


def after_run(p) -> None:
    p.set(*final(p.observations, p.row, bool(p.extra.get("seen"))))
    p.observations.clear()
