"""The verifier's probes of what one iteration of a training loop leaves to
the next (AGL104) and of gradients read while still scaled (AGL505).

Loaded by the child (child.py) by its file path, like the child itself: it
imports nothing of the package, and is given torch and the child's
``resolve`` (a name or plain dotted expression, evaluated in the user's
frame). ``before`` runs when the flagged statement is about to run and
returns what it saw; ``after`` runs once it ran and returns a verdict,
``(status, evidence, numbers)`` with the child's status words, or None when
this execution decides nothing. ``memory`` is the probe's own list, kept
across executions of the line.
"""

from __future__ import annotations

import ast
import os

CONFIRMED, LATENT, NOT_REPRODUCED, UNVERIFIABLE = "confirmed", "latent", "not reproduced", "unverifiable"
MAX_NODES = 200_000
# What autograd raises when a backward runs into a graph an earlier
# backward used: freed by it, or with weights an optimizer step changed.
CARRIED_ERRORS = ("Trying to backward through the graph a second time", "modified by an inplace operation")

_BACKWARDS = {"count": 0, "installed": False}


def before(code: str, torch, frame, stmt, subject: str | None, row: int, memory: list, resolve) -> dict:
    if code == "AGL104":
        return _carried_before(torch, frame, subject, memory, resolve)
    return _scaler_before(torch, frame, subject, resolve)


def after(code: str, torch, frame, stmt, subject: str | None, row: int, memory: list, seen: dict, resolve):
    if code == "AGL104":
        return _carried_after(torch, frame, subject, row, memory, seen, resolve)
    return _scaler_after(torch, frame, stmt, subject, row, seen, resolve)


def after_run(code: str, path: str, row: int, memory: list, program: dict):
    """Once the program ended: a run that raised autograd's error for a
    graph used twice, in this file, after the line fed the previous
    iteration's attached state, confirms AGL104 when nothing did before."""
    if code != "AGL104" or program.get("state") != "raised" or not memory or not memory[0].get("attached"):
        return None
    exc, where = program.get("exception", ""), program.get("location") or ""
    message = next((m for m in CARRIED_ERRORS if m in exc), None)
    if message is None or not exc.startswith("RuntimeError") or os.path.realpath(where.rsplit(":", 1)[0]) != os.path.realpath(path):
        return None
    return CONFIRMED, (
        f"line {row} fed the state the previous execution returned, still attached to its graph, and the run then raised at "
        f"{os.path.basename(where)}: RuntimeError: {message}"
    ), {}


def release(memory: list) -> None:
    """The line is decided: stop holding its last graph."""
    for entry in memory:
        if isinstance(entry, dict):
            entry.pop("made", None)


# --- AGL104: recurrent state carried, attached, into the next iteration -----------------


def _count_backwards(torch) -> None:
    """Count ``torch.autograd.backward`` calls (``Tensor.backward`` goes
    through it): a backward between two executions of the line is what
    makes carrying the graph a hazard (full BPTT carries it with none)."""
    if _BACKWARDS["installed"]:
        return
    orig = torch.autograd.backward

    def backward(*args, **kwargs):
        _BACKWARDS["count"] += 1
        return orig(*args, **kwargs)

    backward.__wrapped__ = orig
    torch.autograd.backward = backward
    _BACKWARDS["installed"] = True


def _tensors(torch, value, out: list, depth: int = 0) -> list:
    if isinstance(value, torch.Tensor):
        out.append(value)
    elif depth < 4:
        if isinstance(value, dict):
            value = list(value.values())
        if isinstance(value, (list, tuple)):
            for v in value[:64]:
                _tensors(torch, v, out, depth + 1)
    return out


def _carried(torch, frame, subject: str | None, resolve) -> tuple[list, str | None]:
    """The tensors the names of the finding hold in the frame, or why not."""
    names = [n.strip() for n in (subject or "").split(",") if n.strip()]
    if not names:
        return [], "the finding names no carried state"
    out = []
    for name in names:
        ok, value = resolve(frame, name)
        if not ok:
            return [], value
        out.extend(_tensors(torch, value, []))
    return out, None


def _carried_before(torch, frame, subject: str | None, memory: list, resolve) -> dict:
    _count_backwards(torch)
    tensors, why = _carried(torch, frame, subject, resolve)
    if why:
        return {"error": why}
    last = memory[-1] if memory else None
    roots = [t.grad_fn for t in tensors if t.grad_fn is not None]
    # Attached to the graph the previous execution returned: that tensor
    # itself, or one computed from it (`hidden.clone()`, `h[:, :n]`).
    _, carried, cut = _walk(roots, last.get("made", ()), first=True) if last and roots else (0, False, False)
    return {
        "carried": carried,
        "cut": cut,
        "roots": roots,
        "backwards": _BACKWARDS["count"] - last["backwards"] if last else 0,
    }


def _walk(roots, targets, first: bool = False) -> tuple[int, bool, bool]:
    """Nodes reachable from ``roots`` (at most MAX_NODES), whether one of
    ``targets`` is among them, and whether the walk was cut short;
    ``first``: stop at the first target found."""
    want = set(targets)
    seen: set = set()
    stack = [r for r in roots if r is not None]
    found = False
    while stack and len(seen) < MAX_NODES:
        node = stack.pop()
        if node in seen:
            continue
        seen.add(node)
        if node in want:
            found = True
            if first:
                break
        stack.extend(n for n, _ in getattr(node, "next_functions", ()) if n is not None and n not in seen)
    return len(seen), found, bool(stack) and not found


def _saved_state(torch, roots, limit: int = 2_000) -> str | None:
    """What became of the tensors the graph saved, as the next backward
    would find them: "freed" (by the backward before), "modified" (in place
    since, e.g. by an optimizer step), "kept", or None when the first
    ``limit`` nodes save no tensor."""
    seen: set = set()
    stack = [r for r in roots if r is not None]
    state = None
    while stack and len(seen) < limit:
        node = stack.pop()
        if node in seen:
            continue
        seen.add(node)
        for name in dir(node):
            if not name.startswith("_saved_"):
                continue
            try:
                value = getattr(node, name)  # unpacking checks what backward checks
            except RuntimeError as e:
                if "inplace" in str(e):
                    state = "modified"
                    continue
                return "freed"
            except Exception:
                continue
            if state is None and any(isinstance(v, torch.Tensor) for v in (value if isinstance(value, (tuple, list)) else (value,))):
                state = "kept"
        stack.extend(n for n, _ in getattr(node, "next_functions", ()) if n is not None and n not in seen)
    return state


def _carried_after(torch, frame, subject: str | None, row: int, memory: list, seen: dict, resolve):
    if "error" in seen:
        return UNVERIFIABLE, seen["error"], {}
    made, why = _carried(torch, frame, subject, resolve)
    if why:
        return UNVERIFIABLE, why, {}
    last = memory[-1] if memory else {"runs": 0, "attached": False}
    roots = [t.grad_fn for t in made if t.grad_fn is not None]
    n = last["runs"] + 1
    # Only the last execution's graph matters; its nodes are held (not the
    # tensors, which a `hidden = hidden.clone()` may drop) until the next.
    entry = {"made": roots, "backwards": _BACKWARDS["count"], "runs": n, "attached": last["attached"]}
    memory[:] = [entry]
    listed = [x.strip() for x in (subject or "").split(",")]
    names = " and ".join(f"`{x}`" for x in listed) if len(listed) > 1 else f"`{subject}`"
    is_ = "are" if len(listed) > 1 else "is"
    has = "have" if len(listed) > 1 else "has"
    if n == 1:
        return NOT_REPRODUCED, f"line {row} ran once: no state was carried into a next execution", {}
    if not seen["roots"]:
        return NOT_REPRODUCED, f"at execution {n} of line {row}, {names} {has} no grad_fn: detached (or made without grad)", {}
    if not seen["carried"] and seen["cut"]:
        return LATENT, (
            f"at execution {n} of line {row}, {names} {is_} attached to a graph too large to tell whether it is the one "
            f"the previous execution returned ({MAX_NODES}+ nodes)"
        ), {}
    if not seen["carried"]:
        return NOT_REPRODUCED, (
            f"at execution {n} of line {row}, {names} {is_} attached to a graph, but not to the one the previous execution "
            "returned (re-initialised or computed afresh)"
        ), {}
    if not seen["backwards"]:
        return NOT_REPRODUCED, (
            f"at execution {n} of line {row}, {names} {is_} still attached to the previous execution's graph, but no backward ran "
            "in between (backpropagation through the whole sequence)"
        ), {}
    entry["attached"] = True
    nodes, reaches, cut = _walk(roots, seen["roots"])
    numbers = {"nodes": nodes, "backwards_between": seen["backwards"]}
    if not reaches:
        if cut:
            return LATENT, (
                f"at execution {n} of line {row}, {names} {is_} still attached to the previous execution's graph after a backward; "
                f"the graph is too large to tell whether this call extends it ({nodes}+ nodes)"
            ), numbers
        return NOT_REPRODUCED, f"at execution {n} of line {row}, {names} {'were' if len(listed) > 1 else 'was'} attached, but what the line returned does not reach that graph", numbers
    outcome = {
        "freed": "the backward before freed its saved tensors, so the next backward raises 'Trying to backward through the graph a second time'",
        "modified": "tensors it saved were modified in place since (an optimizer step), so the next backward raises "
                    "'one of the variables needed for gradient computation has been modified by an inplace operation'",
        "kept": "its saved tensors were kept (retain_graph=True), so every backward walks every graph since the first",
    }.get(_saved_state(torch, seen["roots"]) or "", "so every backward walks every graph since the first")
    grad_fn = type(seen["roots"][0]).__name__
    return CONFIRMED, (
        f"at execution {n} of line {row}, {names} {is_} still attached to the graph the previous execution "
        f"returned (grad_fn {grad_fn}) after {seen['backwards']} backward(s); what the line returned reaches that graph "
        f"({nodes} autograd nodes): {outcome}"
    ), numbers


# --- AGL505: gradients read while a GradScaler has them scaled ----------------------------


def _scaler_before(torch, frame, subject: str | None, resolve) -> dict:
    if not subject:
        return {"verdict": (UNVERIFIABLE, "the finding names no GradScaler")}
    ok, scaler = resolve(frame, subject)
    if not ok:
        return {"verdict": (UNVERIFIABLE, scaler)}
    grad_scaler = getattr(getattr(torch, "amp", None), "GradScaler", None)
    if grad_scaler is None or not isinstance(scaler, grad_scaler):
        return {"verdict": (UNVERIFIABLE, f"`{subject}` is a {type(scaler).__name__}, not a torch.amp.GradScaler")}
    device = getattr(scaler, "_device", "cuda")
    if not scaler.is_enabled():
        if device == "cuda" and not torch.cuda.is_available():
            return {"verdict": (UNVERIFIABLE, (
                f"`{subject}` is a CUDA GradScaler on a machine without CUDA: it disabled itself and scales nothing here; "
                "run the verifier where CUDA is available"
            ))}
        return {"verdict": (NOT_REPRODUCED, f"`{subject}` is disabled in this run (enabled=False): it scales nothing")}
    states = getattr(scaler, "_per_optimizer_states", None)
    if not isinstance(states, dict):
        return {"verdict": (UNVERIFIABLE, f"cannot read which optimizers `{subject}` has unscaled (torch {torch.__version__})")}
    unscaled = sum(1 for s in states.values() if getattr(s.get("stage"), "name", None) == "UNSCALED")
    # `_scale` is made by the first `scale()`: before it, nothing was scaled.
    started = getattr(scaler, "_scale", True) is not None
    return {"scale": float(scaler.get_scale()), "unscaled": unscaled, "started": started}


def _returned_norm(torch, frame, stmt, resolve) -> float | None:
    """What `name = <the read>` bound, when it is a number: the norm seen."""
    if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name)):
        return None
    ok, value = resolve(frame, stmt.targets[0].id)
    if ok and isinstance(value, torch.Tensor) and value.numel() == 1:
        value = value.item()
    return float(value) if ok and isinstance(value, (int, float)) else None


def _scaler_after(torch, frame, stmt, subject: str | None, row: int, seen: dict, resolve):
    if "verdict" in seen:
        status, evidence = seen["verdict"]
        return status, evidence, {}
    scale = seen["scale"]
    if not seen["started"]:
        return NOT_REPRODUCED, f"`{subject}` had not scaled any loss yet when line {row} ran", {}
    if seen["unscaled"]:
        return NOT_REPRODUCED, f"`{subject}` had unscaled the gradients of {seen['unscaled']} optimizer(s) in this step before line {row}", {"scale": scale}
    if scale == 1.0:
        return NOT_REPRODUCED, f"the scale of `{subject}` is 1.0 at line {row}: the gradients are their true values", {"scale": scale}
    evidence = (
        f"at line {row}, `{subject}` has scale {scale:g} and had not unscaled any optimizer's gradients in this step: "
        f"the gradients read here are {scale:g} times the true ones"
    )
    norm = _returned_norm(torch, frame, stmt, resolve)
    numbers = {"scale": scale}
    if norm is not None:
        evidence += f" (the norm it returned, {norm:.6g}, is {norm / scale:.6g} unscaled)"
        numbers["norm_seen"] = norm
    return CONFIRMED, evidence, numbers
