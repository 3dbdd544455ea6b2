"""The verifier's probes for a tensor saved for backward and then changed
before the backward read it (AGL201, AGL203, AGL205).

Loaded by the child (child.py) by its file path, like module_probes.py: it
imports nothing of the package, and is given torch, the child's state and
helpers (``resolve``, ``storage``).

``hooks`` makes the global ``saved_tensors_hooks`` pair. Pack keeps the
tensor, its version and the user line that saved it; the records live
exactly as long as autograd keeps the saved tensor (they are freed by
backward), so the live records (``state.live``) are the saves of
not-yet-run backward graphs. While these hooks are installed PyTorch skips
its own version check, so unpack does it.

Around a flagged line, the probe marks ("taints") the live records the line
changed: AGL201 an in-place write that bumped a saved tensor's version,
AGL203 a write through ``.data`` that changed its values but not its
version, AGL205 an optimizer step that changed any saved tensor. The line
is then latent; a backward that unpacks a tainted record confirms it.
"""

from __future__ import annotations

import ast
import os
import sys

CONFIRMED, LATENT, NOT_REPRODUCED, UNVERIFIABLE = "confirmed", "latent", "not reproduced", "unverifiable"
# Above this, AGL203 compares two sums instead of a full copy of the values.
SNAPSHOT_BYTES = 64 << 20


class SavedRecord:
    """What the pack hook returns: autograd keeps it exactly as long as the saved tensor."""

    __slots__ = ("t", "version", "site", "taint", "__weakref__")

    def __init__(self, t, version, site) -> None:
        self.t, self.version, self.site, self.taint = t, version, site, None


def hooks(state):
    """The (pack, unpack) pair for ``saved_tensors_hooks``. They run for
    every tensor autograd saves or reads: closures over what they use, so a
    call looks nothing up beyond its own frame."""
    getframe, basename, entry_of, live = sys._getframe, os.path.basename, state._entry, state.live

    def pack(t):
        site = None
        f = getframe(1)
        while f is not None:
            entry = entry_of(f.f_code.co_filename)
            if entry is not None:
                site = f"{basename(f.f_code.co_filename)}:{f.f_lineno}"
                break
            f = f.f_back
        rec = SavedRecord(t, t._version, site)
        state.counter += 1
        live[state.counter] = rec
        return rec

    def unpack(rec):
        t = rec.t
        st = state
        if st.in_probe:
            return t
        for probe in rec.taint or ():
            if probe.status == CONFIRMED:
                continue
            if probe.code in ("AGL201", "AGL205"):
                ev = probe.observations[-1] if probe.observations else ""
                probe.set(CONFIRMED, f"{ev}; backward then read the modified tensor", versions=[rec.version, t._version])
            else:
                ev = probe.observations[-1] if probe.observations else ""
                probe.set(CONFIRMED, f"{ev}; backward then read the changed values (silently wrong gradient)")
            with st.lock:
                st.write()
        if rec.taint:
            if st.strict and t._version != rec.version:
                raise RuntimeError(_version_message(t, rec))
        elif t._version != rec.version:
            st.note(f"backward read a tensor saved at {rec.site or 'an unflagged line'} (version {rec.version}) that was "
                    f"modified in place (now version {t._version}): a hazard no finding points at")
            if st.strict:
                raise RuntimeError(_version_message(t, rec))
        return t

    return pack, unpack


def _version_message(t, rec) -> str:
    # PyTorch's own words, for --strict: the check the hooks switched off.
    return (f"one of the variables needed for gradient computation has been modified by an inplace operation: "
            f"[{t.type()} {list(t.shape)}] is at version {t._version}; expected version {rec.version} instead.")


# --- AGL201 / AGL203: in-place on a tensor saved for backward ------------------------


def _snapshot(torch, t):
    d = t.detach()
    if d.numel() * d.element_size() <= SNAPSHOT_BYTES:
        return d.clone()
    return (float(d.sum(dtype=torch.float64)), float(d.abs().sum(dtype=torch.float64)))


def _changed(torch, t, snap) -> bool:
    d = t.detach()
    if isinstance(snap, tuple):
        return snap != (float(d.sum(dtype=torch.float64)), float(d.abs().sum(dtype=torch.float64)))
    if snap.shape != d.shape:
        return True
    diff = snap != d
    if d.is_floating_point() or d.is_complex():
        diff &= ~(snap.isnan() & d.isnan())
    return bool(diff.any())


def _temporary(subject) -> bool:
    """The finding's tensor is a call's result held in no name
    (`torch.sigmoid(...)`, a layer's output `Tanh()`)."""
    try:
        return isinstance(ast.parse(subject or "", mode="eval").body, ast.Call)
    except SyntaxError:
        return False


def inplace_before(torch, frame, p, resolve, storage, live=None):
    if p.code.startswith("AGL201") and live is not None and _temporary(p.subject):
        # No name to watch: any saved tensor the line writes after its save
        # (made and written on this line, or earlier) is the hazard.
        return {"temporary": {id(r) for r in list(live.values()) if r.t._version != r.version}}
    ok, t = resolve(frame, p.subject)
    if not ok or not isinstance(t, torch.Tensor):
        return {"error": t if not ok else f"`{p.subject}` is a {type(t).__name__}, not a tensor"}
    with torch.no_grad():
        snap = _snapshot(torch, t) if p.code.startswith("AGL203") else None
    return {"t": t, "version": t._version, "storage": storage(t), "snap": snap}


def _matching_saves(live, storage, key: int, version: int | None):
    out = []
    for rec in list(live.values()):
        try:
            if storage(rec.t) == key and (version is None or rec.version == version):
                out.append(rec)
        except Exception:
            continue
    return out


def inplace_after(torch, p, before, live, storage) -> None:
    if "error" in before:
        if p.status is None:
            p.set(UNVERIFIABLE, before["error"])
        return
    if "temporary" in before:
        saves = [r for r in list(live.values()) if r.t._version != r.version and id(r) not in before["temporary"]]
        if not saves:
            if not p.tainted:
                p.set(NOT_REPRODUCED, f"no tensor a pending backward saved was written in place at line {p.row}")
            return
        _latent(p, saves, f"the result of `{p.subject}` (saved by {_sites(saves)}) was written in place at line {p.row}")
        return
    t, v0 = before["t"], before["version"]
    v1 = t._version
    name = p.subject
    if p.code.startswith("AGL201"):
        if v1 == v0:
            if not p.tainted:
                p.set(NOT_REPRODUCED, f"`{name}` stayed at version {v0} at line {p.row}: nothing was written in place")
            return
        # Saved before this line (at v0 or earlier) and still held by a pending backward.
        saves = [r for r in _matching_saves(live, storage, before["storage"], None) if r.version <= v0 and r.t._version != r.version]
        if not saves:
            if not p.tainted:
                p.set(NOT_REPRODUCED, f"`{name}` went from version {v0} to {v1} at line {p.row}, but no pending backward had saved it")
            return
        _latent(p, saves, f"`{name}` (saved by {_sites(saves)}) went from version {v0} to {v1} at line {p.row}", version_before=v0, version_after=v1)
        return
    # AGL203: a write through .data does not bump the version; compare the values.
    with torch.no_grad():
        changed = _changed(torch, t, before["snap"])
    if not changed:
        if not p.tainted:
            p.set(NOT_REPRODUCED, f"the values of `{name}` did not change at line {p.row}")
        return
    if v1 != v0:
        if not p.tainted:
            p.set(NOT_REPRODUCED, f"`{name}` changed at line {p.row} and its version went {v0} -> {v1}, so autograd sees the write")
        return
    saves = [r for r in _matching_saves(live, storage, before["storage"], None) if r.t._version == r.version]
    if not saves:
        if not p.tainted:
            p.set(NOT_REPRODUCED, f"`{name}` changed at line {p.row} (version unchanged) but no pending backward had saved it")
        return
    _latent(p, saves, f"`{name}` (saved by {_sites(saves)}) changed through .data at line {p.row} while its version stayed {v0}", version=v0)


def _sites(saves) -> str:
    return ", ".join(sorted({r.site for r in saves if r.site}) or ["library code"])


def _latent(p, saves, ev: str, **numbers) -> None:
    """The hazard happened: mark the saved tensors so a later backward that
    reads them confirms the finding; until then it is latent."""
    for r in saves:
        if p not in (r.taint or ()):
            r.taint = (*(r.taint or ()), p)
    p.tainted = True
    p.observations.append(ev)
    p.set(LATENT, ev + "; no backward has read it yet", **numbers)


# --- AGL205: an optimizer step between a forward and a later backward ---------------------


def step_before(live):
    return {"versions": [(rec, rec.t._version) for rec in list(live.values())]}


def step_after(p, before) -> None:
    changed = [rec for rec, v in before["versions"] if rec.t._version != v]
    if changed:
        _latent(p, changed, f"line {p.row} updated in place {len(changed)} tensor(s) (saved by {_sites(changed)}) that a pending backward holds")
    elif not p.tainted:
        p.set(NOT_REPRODUCED, f"line {p.row} changed no tensor that a pending backward had saved")
