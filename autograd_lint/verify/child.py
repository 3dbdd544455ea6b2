"""The verifier's child process: install the probes, run the user's command
in-process, write the verdicts.

    PYTHON .../autograd_lint/verify/child.py FINDINGS.json RESULT.json -- python script.py ARGS
    PYTHON .../autograd_lint/verify/child.py FINDINGS.json RESULT.json -- python -m module ARGS

Run by its file path with the program's interpreter, which has torch but
need not have autograd-lint: this file imports nothing of the package.

The result file is rewritten atomically whenever a verdict or a hit count
changes, so whatever was decided survives a crash, a hang (the parent kills the
process group) or an out-of-memory kill.

Probes (all cheap when the flagged lines do not run):

* a ``sys.settrace`` tracer that returns a local tracer only for code objects
  of flagged files; the local tracer acts on the 'line' event of a flagged
  statement (before it runs) and on the next 'line'/'return' event of the same
  frame (after it ran), and on 'exception' events raised by it;
* AGL201/AGL203: a global ``saved_tensors_hooks`` pair. Pack keeps the tensor,
  its version and the user line that saved it; the records live exactly as
  long as autograd keeps the saved tensor (they are freed by backward), so the
  live records are the saves of not-yet-run backward graphs. While these hooks
  are installed PyTorch skips its own version check, so unpack does it: a
  record tainted by a flagged line and read by backward confirms the finding.
* AGL202: the in-place on a leaf that requires grad, with grad mode on. By
  default the statement runs under ``no_grad`` so the program keeps going
  (``--strict``: it raises, as without the verifier);
* AGL101/AGL102/AGL103: the container / accumulator the statement writes to is
  measured after each hit (graph nodes reachable from it, saved bytes);
* AGL301: a global module forward hook (outermost call at the flagged line);
* AGL204: the write raises autograd's "is a view and is being modified
  inplace" error;
* AGL205: the same saved-tensor records as AGL201: the ones the flagged
  ``step()`` changed are tainted, and a backward that reads one confirms;
* AGL303: grad mode read before and after the flagged line;
* AGL304: anomaly mode read after the flagged line (anomaly_probes.py);
* AGL206: the snapshot the flagged line binds, watched until a load or save
  reads it after a step changed it (snapshot_probes.py);
* AGL4xx: ``Optimizer.zero_grad`` / ``Module.zero_grad`` wrappers and the
  gradient a manual zeroing leaves allocated;
* AGL501: the value the line makes require grad is read after it: a leaf
  with no ``grad_fn``, so a backward from it reaches no parameter.
* AGL502: what the flagged line binds, read after it (non_leaf_probes.py):
  a tensor that requires grad and is not a leaf.
* AGL503/AGL504: the module and container read after the flagged line
  (module_probes.py): parameters a module does not list, or a "freeze"
  that left them requiring grad.
* AGL104/AGL505: the carried state and the GradScaler read around the
  flagged line (loop_probes.py): state the previous execution returned,
  still attached, after a backward; a clip while the scaler still scales.
* AGL506: the parameter the line reads out of the graph is watched
  (parameter_probes.py): no gradient on it at a later optimizer step.
"""

from __future__ import annotations

import ast
import json
import os
import sys
import threading
import time
import traceback
import weakref

CONFIRMED, LATENT, NOT_REPRODUCED, UNVERIFIABLE = "confirmed", "latent", "not reproduced", "unverifiable"
MAX_HITS = 3
MAX_NODES = 200_000
SNAPSHOT_BYTES = 64 << 20
COMPREHENSIONS = frozenset({"<listcomp>", "<dictcomp>", "<setcomp>", "<genexpr>", "<lambda>"})
EXIT_VERIFIER_ERROR = 3

torch = None  # imported in main(), after the result file says we started


class _StopRun(KeyboardInterrupt):
    """Raised into the user's program once every flagged line is decided.
    A KeyboardInterrupt so that ``except Exception`` in user code and pytest's
    per-test error handling do not swallow it."""


def _kib(n: float) -> str:
    if abs(n) >= 1 << 20:
        return f"{n / (1 << 20):.1f} MiB"
    return f"{n / 1024:.1f} KiB"


# --- source helpers ------------------------------------------------------------


def _statements(tree: ast.AST):
    """Every statement with its span; a compound statement's span is its header."""
    for node in ast.walk(tree):
        if isinstance(node, ast.stmt):
            end = node.end_lineno or node.lineno
            body = getattr(node, "body", None)
            if isinstance(body, list) and body and isinstance(body[0], ast.stmt):
                end = max(node.lineno, body[0].lineno - 1)
            yield node, node.lineno, end


def _statement_at(tree: ast.AST, row: int):
    best = None
    for node, start, end in _statements(tree):
        if start <= row <= end and (best is None or start > best[1] or (start == best[1] and end <= best[2])):
            best = (node, start, end)
    return best


def _simple_expr(node) -> bool:
    """Name / attribute / subscript chains only: safe to evaluate in the user's frame."""
    while True:
        if isinstance(node, ast.Name):
            return True
        if isinstance(node, ast.Attribute):
            node = node.value
        elif isinstance(node, ast.Subscript):
            if not isinstance(node.slice, (ast.Constant, ast.Name, ast.UnaryOp)):
                return False
            node = node.value
        else:
            return False


def _eval_in(frame, expr: str):
    return eval(compile(expr, "<autograd-lint verify>", "eval"), frame.f_globals, dict(frame.f_locals))


def _resolve(frame, expr: str | None):
    """(True, value) or (False, why) for a name or a simple dotted / subscript expression."""
    if not expr:
        return False, "the finding names nothing to watch"
    try:
        node = ast.parse(expr, mode="eval").body
    except SyntaxError:
        return False, f"cannot parse `{expr}`"
    if not _simple_expr(node):
        return False, f"`{expr}` is not a plain name"
    try:
        return True, _eval_in(frame, expr)
    except Exception as e:
        return False, f"`{expr}` not found in the frame ({type(e).__name__})"


def _first_tensor(value, depth: int = 0):
    if isinstance(value, torch.Tensor):
        return value
    if depth > 3:
        return None
    if isinstance(value, dict):
        value = list(value.values())
    elif hasattr(value, "to_tuple"):
        try:
            value = value.to_tuple()
        except Exception:
            return None
    if isinstance(value, (list, tuple)):
        for v in value[:16]:
            t = _first_tensor(v, depth + 1)
            if t is not None:
                return t
    return None


def _tensors_in(value, out: list, depth: int = 0, limit: int = 100_000) -> list:
    if len(out) >= limit:
        return out
    if isinstance(value, torch.Tensor):
        out.append(value)
    elif depth < 5:
        if isinstance(value, dict):
            value = list(value.values())
        elif _user_object(value):
            # A meter or logger of the user's (in any module): what its
            # attributes hold is what it keeps.
            value = list(vars(value).values())
        if isinstance(value, (list, tuple, set, frozenset)) or type(value).__name__ == "deque":
            for v in list(value):
                _tensors_in(v, out, depth + 1, limit)
                if len(out) >= limit:
                    break
    return out


def _user_object(value) -> bool:
    """An instance of a class the user's code defines (not a module, an
    optimizer, a class, a function or a library object)."""
    t = type(value)
    if not hasattr(value, "__dict__") or isinstance(value, (type, torch.nn.Module, torch.optim.Optimizer)):
        return False
    mod = getattr(t, "__module__", "") or ""
    return mod.split(".", 1)[0] not in ("torch", "builtins", "numpy", "types", "functools", "collections", "typing")


def _storage(t) -> int:
    try:
        return t.untyped_storage().data_ptr()
    except Exception:
        return -1


# --- state --------------------------------------------------------------------


class Probe:
    def __init__(self, spec: dict, stmt) -> None:
        self.id = spec["id"]
        self.code = spec["code"]
        self.path = spec["path"]
        self.row = spec["line"]
        self.subject = spec.get("subject")
        self.stmt = stmt  # (ast node, start, end) or None
        self.hits = 0
        self.status: str | None = None
        self.evidence = ""
        self.numbers: dict = {}
        self.observations: list = []  # per-code raw facts
        self.extra: dict = {}  # per-code working state (what a wrapped call saw at the line)
        self.tainted = False  # AGL201/203: the hazard happened at least once

    @property
    def settled(self) -> bool:
        if self.code in ("AGL101", "AGL102", "AGL103") and self.status == CONFIRMED:
            return self.hits >= MAX_HITS
        if self.code == "AGL206":
            # Decided by a later load or save, however often the line ran.
            return self.status in (CONFIRMED, UNVERIFIABLE)
        return self.status in (CONFIRMED, UNVERIFIABLE) or self.hits >= MAX_HITS

    def set(self, status: str, evidence: str, **numbers) -> None:
        if self.status == CONFIRMED and status != CONFIRMED:
            return
        self.status, self.evidence = status, evidence
        self.numbers.update(numbers)
        STATE.dirty = True

    def to_json(self) -> dict:
        return {"id": self.id, "status": self.status, "evidence": self.evidence, "hits": self.hits, "numbers": self.numbers}


class SavedRecord:
    """What the pack hook returns: autograd keeps it exactly as long as the saved tensor."""

    __slots__ = ("t", "version", "site", "taint", "__weakref__")

    def __init__(self, t, version, site) -> None:
        self.t, self.version, self.site, self.taint = t, version, site, None


class State:
    def __init__(self) -> None:
        self.result_path = ""
        self.probes: list[Probe] = []
        self.by_file: dict[str, dict[int, list[Probe]]] = {}  # realpath -> line -> probes
        self.code_files: dict[str, dict | None] = {}  # co_filename -> by_file entry (or None)
        self.pending: dict = {}  # frame -> list of (probe, before-state)
        self.live: "weakref.WeakValueDictionary[int, SavedRecord]" = weakref.WeakValueDictionary()
        self.counter = 0
        self.in_probe = False
        self.strict = False
        self.device = "cpu"
        self.dirty = True
        self.program: dict = {"state": "starting"}
        self.notes: list[str] = []
        self.stop_requested = False
        self.lock = threading.RLock()
        self.t0 = time.monotonic()

    def write(self, force: bool = False) -> None:
        if not (self.dirty or force):
            return
        with self.lock:
            self.dirty = False
            data = {
                "started": True,
                "program": self.program,
                "probes": [p.to_json() for p in self.probes],
                "notes": self.notes[:20],
                "elapsed_s": round(time.monotonic() - self.t0, 3),
            }
            tmp = self.result_path + ".tmp"
            with open(tmp, "w") as f:
                json.dump(data, f)
            os.replace(tmp, self.result_path)

    def note(self, message: str) -> None:
        if message not in self.notes and len(self.notes) < 20:
            self.notes.append(message)
            self.dirty = True

    def probe_error(self, probe: Probe, e: BaseException) -> None:
        probe.set(UNVERIFIABLE, f"verifier error in the {probe.code} probe: {type(e).__name__}: {e}")

    def site_probes(self, frame):
        """The first frame in a flagged file, from ``frame`` up: (frame, probes at its line)."""
        f = frame
        while f is not None:
            entry = self._entry(f.f_code.co_filename)
            if entry is not None:
                return f, entry.get(f.f_lineno, ())
            f = f.f_back
        return None, ()

    def _entry(self, co_filename: str):
        try:
            return self.code_files[co_filename]
        except KeyError:
            entry = self.by_file.get(os.path.realpath(co_filename)) if not co_filename.startswith("<") else None
            self.code_files[co_filename] = entry
            return entry


STATE = State()


# --- the tracer -------------------------------------------------------------------


def _global_trace(frame, event, arg):
    code = frame.f_code
    if STATE._entry(code.co_filename) is None or code.co_name in COMPREHENSIONS:
        return None
    return _local_trace


def _local_trace(frame, event, arg):
    st = STATE
    if event == "line":
        pend = st.pending.get(frame)
        lineno = frame.f_lineno
        if pend is not None and not (pend[0] <= lineno <= pend[1]):
            del st.pending[frame]
            _after(frame, pend)
            pend = None
        if st.stop_requested:
            st.write()
            raise _StopRun()
        if pend is None:
            probes = st.code_files[frame.f_code.co_filename].get(lineno)
            if probes:
                _before(frame, probes)
    elif event == "return":
        pend = st.pending.pop(frame, None)
        if pend is not None:
            _after(frame, pend)
    elif event == "exception":
        pend = st.pending.get(frame)
        if pend is not None and pend[0] <= frame.f_lineno <= pend[1]:
            _exception(frame, pend, arg)
    return _local_trace


def _before(frame, probes) -> None:
    st = STATE
    stmt = probes[0].stmt
    start, end = (stmt[1], stmt[2]) if stmt else (frame.f_lineno, frame.f_lineno)
    states = []
    st.in_probe = True
    try:
        for p in probes:
            if p.code in ("AGL201", "AGL203", "AGL205"):
                # Keep watching, confirmed or not: a hazard is confirmed only
                # when a backward reads it, which may be a later hit's graph,
                # and a later hit's writes must stay marked as this line's, or
                # the backward that reads them reports a hazard no finding
                # points at.
                skip = p.status == UNVERIFIABLE
            elif p.code == "AGL202":
                skip = st.strict and p.settled  # keep-going needs every hit
            elif p.code in ("AGL101", "AGL102", "AGL103"):
                skip = p.hits >= MAX_HITS  # measure every sampled hit, confirmed or not
            else:
                skip = p.settled
            if skip:
                continue
            before = BEFORE.get(p.code)
            try:
                states.append((p, before(p, frame) if before else None))
            except Exception as e:
                st.probe_error(p, e)
    finally:
        st.in_probe = False
    if states:
        st.pending[frame] = (start, end, states, {"raised": None})


def _after(frame, pend) -> None:
    st = STATE
    st.in_probe = True
    try:
        for p, before in pend[2]:
            p.hits += 1
            st.dirty = True
            after = AFTER.get(p.code)
            try:
                if pend[3]["raised"] is not None and p.code not in RAISING:
                    p.set(p.status or UNVERIFIABLE, p.evidence or f"the line raised {pend[3]['raised']}")
                elif after is not None:
                    after(p, frame, before, pend[3])
                elif p.status is None:
                    p.set(UNVERIFIABLE, f"no runtime probe for {p.code}")
            except Exception as e:
                st.probe_error(p, e)
    finally:
        st.in_probe = False
    st.write()
    if all(p.settled for p in st.probes):
        st.stop_requested = True


def _exception(frame, pend, arg) -> None:
    exc = arg[1]
    pend[3]["raised"] = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
    for p, before in pend[2]:
        if p.code in RAISING and isinstance(exc, RuntimeError) and RAISING[p.code] in str(exc):
            p.set(CONFIRMED, f"the line raised: {str(exc).splitlines()[0]}")
            STATE.write()


# What autograd raises at the flagged line itself, by code.
RAISING = {"AGL202": "leaf Variable", "AGL204": "is a view and is being modified inplace"}


def _multi_view_after(p: Probe, frame, before, extra) -> None:
    # After the line: `_exception` confirmed it already if the write raised.
    if p.status != CONFIRMED:
        p.set(NOT_REPRODUCED, f"line {p.row} wrote the view in place without error (grad mode off there, or the view does not require grad)")


# --- AGL201 / AGL203: in-place on a tensor saved for backward ------------------------


def _pack(t):
    st = STATE
    site = None
    f = sys._getframe(1)
    while f is not None:
        entry = st._entry(f.f_code.co_filename)
        if entry is not None:
            site = f"{os.path.basename(f.f_code.co_filename)}:{f.f_lineno}"
            break
        f = f.f_back
    rec = SavedRecord(t, t._version, site)
    st.counter += 1
    st.live[st.counter] = rec
    return rec


def _unpack(rec):
    t = rec.t
    st = STATE
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


def _version_message(t, rec) -> str:
    return (f"one of the variables needed for gradient computation has been modified by an inplace operation: "
            f"[{t.type()} {list(t.shape)}] is at version {t._version}; expected version {rec.version} instead.")


def _snapshot(t):
    d = t.detach()
    if d.numel() * d.element_size() <= SNAPSHOT_BYTES:
        return d.clone()
    return (float(d.sum(dtype=torch.float64)), float(d.abs().sum(dtype=torch.float64)))


def _changed(t, snap) -> bool:
    d = t.detach()
    if isinstance(snap, tuple):
        return snap != (float(d.sum(dtype=torch.float64)), float(d.abs().sum(dtype=torch.float64)))
    if snap.shape != d.shape:
        return True
    diff = snap != d
    if d.is_floating_point() or d.is_complex():
        diff &= ~(snap.isnan() & d.isnan())
    return bool(diff.any())


def _inplace_before(p: Probe, frame):
    ok, t = _resolve(frame, p.subject)
    if not ok or not isinstance(t, torch.Tensor):
        return {"error": t if not ok else f"`{p.subject}` is a {type(t).__name__}, not a tensor"}
    with torch.no_grad():
        snap = _snapshot(t) if p.code.startswith("AGL203") else None
    return {"t": t, "version": t._version, "storage": _storage(t), "snap": snap}


def _matching_saves(storage: int, version: int | None):
    out = []
    for rec in list(STATE.live.values()):
        try:
            if _storage(rec.t) == storage and (version is None or rec.version == version):
                out.append(rec)
        except Exception:
            continue
    return out


def _inplace_after(p: Probe, frame, before, extra) -> None:
    if "error" in before:
        if p.status is None:
            p.set(UNVERIFIABLE, before["error"])
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
        saves = [r for r in _matching_saves(before["storage"], None) if r.version <= v0 and r.t._version != r.version]
        if not saves:
            if not p.tainted:
                p.set(NOT_REPRODUCED, f"`{name}` went from version {v0} to {v1} at line {p.row}, but no pending backward had saved it")
            return
        _latent(p, saves, f"`{name}` (saved by {_sites(saves)}) went from version {v0} to {v1} at line {p.row}", version_before=v0, version_after=v1)
        return
    # AGL203: a write through .data does not bump the version; compare the values.
    with torch.no_grad():
        changed = _changed(t, before["snap"])
    if not changed:
        if not p.tainted:
            p.set(NOT_REPRODUCED, f"the values of `{name}` did not change at line {p.row}")
        return
    if v1 != v0:
        if not p.tainted:
            p.set(NOT_REPRODUCED, f"`{name}` changed at line {p.row} and its version went {v0} -> {v1}, so autograd sees the write")
        return
    saves = [r for r in _matching_saves(before["storage"], None) if r.t._version == r.version]
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


# --- AGL202: in-place on a leaf that requires grad ------------------------------------


def _leaf_before(p: Probe, frame):
    ok, t = _resolve(frame, p.subject)
    if not ok or not isinstance(t, torch.Tensor):
        return {"error": t if not ok else f"`{p.subject}` is a {type(t).__name__}, not a tensor"}
    hazard = t.is_leaf and t.requires_grad and torch.is_grad_enabled()
    state = {"t": t, "version": t._version, "hazard": hazard, "grad": torch.is_grad_enabled()}
    if hazard and not STATE.strict:
        # Keep going: run the statement as its fix would (under no_grad); the
        # version bump after it shows the in-place write really happened.
        torch._C._set_grad_enabled(False)
        state["restore"] = True
    return state


def _leaf_after(p: Probe, frame, before, extra) -> None:
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


# --- AGL1xx: graphs kept alive ------------------------------------------------------


def _store_target(p: Probe) -> str | None:
    """The container / accumulator the flagged statement writes to."""
    node = p.stmt[0] if p.stmt else None
    target = None
    if isinstance(node, ast.AugAssign):
        target = node.target
        # `running[name] += value` over several names: the dict holds them all.
        while isinstance(target, ast.Subscript) and not isinstance(target.slice, ast.Constant):
            target = target.value
    elif isinstance(node, (ast.Assign, ast.AnnAssign)):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        for tg in targets:
            if isinstance(tg, ast.Subscript):
                target = tg.value
            elif isinstance(tg, (ast.Attribute, ast.Name)):
                target = tg
    elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Call) and isinstance(node.value.func, ast.Attribute):
        recv = node.value.func.value
        # `history.setdefault(k, []).append(loss)`: the dict holds it.
        while isinstance(recv, ast.Call) and isinstance(recv.func, ast.Attribute):
            recv = recv.func.value
        target = recv
    if target is not None and _simple_expr(target):
        return ast.unparse(target)
    return None


def _graph_stats(roots) -> dict:
    seen: set = set()
    storages: set = set()
    saved = freed = 0
    stack = list(roots)
    while stack and len(seen) < MAX_NODES:
        node = stack.pop()
        if node is None or node in seen:
            continue
        seen.add(node)
        names = _SAVED_ATTRS.get(type(node))
        if names is None:
            names = _SAVED_ATTRS[type(node)] = [a for a in dir(node) if a.startswith("_saved_")]
        for a in names:
            try:
                v = getattr(node, a)
            except RuntimeError:
                freed += 1
                continue
            except Exception:
                continue
            for tv in (v if isinstance(v, (tuple, list)) else (v,)):
                if isinstance(tv, torch.Tensor):
                    key = _storage(tv)
                    if key not in storages:
                        storages.add(key)
                        saved += tv.untyped_storage().nbytes()
        for nxt, _ in getattr(node, "next_functions", ()):
            if nxt is not None and nxt not in seen:
                stack.append(nxt)
    return {"nodes": len(seen), "saved_bytes": saved, "freed_saves": freed, "truncated": len(seen) >= MAX_NODES}


_SAVED_ATTRS: dict = {}


def _retention_after(p: Probe, frame, before, extra) -> None:
    target = _store_target(p)
    expr = target or p.subject
    ok, value = _resolve(frame, expr)
    if not ok:
        if p.status is None:
            p.set(UNVERIFIABLE, value)
        return
    tensors = _tensors_in(value, [])
    roots = []
    ids = set()
    for t in tensors:
        fn = t.grad_fn
        if fn is not None and id(fn) not in ids:
            ids.add(id(fn))
            roots.append(fn)
    if not roots:
        if not p.observations:
            p.set(NOT_REPRODUCED, f"`{expr}` holds no tensor with a grad_fn after line {p.row}: no graph is kept")
        return
    stats = _graph_stats(roots)
    stats["graphs"] = len(roots)
    if STATE.device == "cuda" and torch.cuda.is_available():
        stats["cuda_allocated"] = torch.cuda.memory_allocated()
    p.observations.append(stats)
    obs = p.observations
    n = len(obs)
    kind = ("graphs with their saved tensors" if stats["saved_bytes"] else
            "graphs (autograd nodes only: backward already freed their saved tensors)")
    numbers = {"graphs": stats["graphs"], "nodes": stats["nodes"], "saved_bytes": stats["saved_bytes"]}
    if n >= 2:
        per_it = (obs[-1]["saved_bytes"] - obs[0]["saved_bytes"]) / (n - 1)
        growing = all(b["nodes"] > a["nodes"] or b["saved_bytes"] > a["saved_bytes"] for a, b in zip(obs, obs[1:]))
        numbers["saved_bytes_per_hit"] = int(per_it)
        nodes_per = (obs[-1]["nodes"] - obs[0]["nodes"]) / (n - 1)
        numbers["nodes_per_hit"] = nodes_per
        g = stats["graphs"]
        ev = (f"`{expr}` retains {g} {kind if g != 1 else kind.replace('graphs', 'graph', 1)} after {n} executions of line {p.row}: "
              f"{stats['nodes']} autograd nodes ({nodes_per:+g} per iteration)")
        if stats["saved_bytes"] or per_it:
            ev += f", {_kib(stats['saved_bytes'])} saved ({'+' if per_it >= 0 else ''}{_kib(per_it)} per iteration)"
        if "cuda_allocated" in stats and "cuda_allocated" in obs[0]:
            cuda_per = (obs[-1]["cuda_allocated"] - obs[0]["cuda_allocated"]) / (n - 1)
            numbers["cuda_allocated_per_hit"] = int(cuda_per)
            ev += f", CUDA memory {'+' if cuda_per >= 0 else ''}{_kib(cuda_per)} per iteration"
        if growing:
            p.set(CONFIRMED, ev, **numbers)
        else:
            p.set(NOT_REPRODUCED, f"`{expr}` holds {stats['graphs']} graph(s) but they did not grow over {n} executions of line {p.row}", **numbers)
    else:
        p.set(LATENT, f"`{expr}` holds {stats['graphs']} {kind} ({stats['nodes']} nodes, {_kib(stats['saved_bytes'])} saved) "
                      f"after line {p.row} ran once; growth not observed", **numbers)


# --- AGL301: model called in eval code with grad on ---------------------------------------


def _forward_hook(module, args, output) -> None:
    st = STATE
    if st.in_probe:
        return
    try:
        # The flagged line's frame: the first user frame with an AGL301 probe
        # running, through helpers (`self.shared_step(batch)` runs the model
        # a few frames down); the module must be the outermost one called.
        f = sys._getframe(1)
        calls = 0
        probes: list = []
        while f is not None:
            co = f.f_code
            if co.co_name == "_call_impl" and co.co_filename.endswith(os.path.join("nn", "modules", "module.py")):
                calls += 1
            entry = st._entry(co.co_filename)
            if entry is not None and f in st.pending:
                probes = [p for p in entry.get(f.f_lineno, ()) if p.code == "AGL301"]
                if probes:
                    break
            f = f.f_back
        if not probes or calls != 1:
            return
        out = _first_tensor(output)
        has_graph = out is not None and out.grad_fn is not None
        stats = None
        if has_graph:
            st.in_probe = True
            try:
                stats = _graph_stats([out.grad_fn])
            finally:
                st.in_probe = False
        for p in probes:
            p.observations.append({"training": module.training, "grad": torch.is_grad_enabled(), "graph": has_graph, "stats": stats,
                                   "module": type(module).__name__, "params": next(module.parameters(), None) is not None})
    except Exception as e:  # never into the user's forward
        st.note(f"verifier error in the forward hook: {type(e).__name__}: {e}")


_HOOK = {"handle": None, "users": 0}


def _eval_before(p: Probe, frame):
    # A global forward hook sends every module call down nn.Module's slow
    # path: install it only while a flagged line runs.
    if _HOOK["users"] == 0:
        _HOOK["handle"] = torch.nn.modules.module.register_module_forward_hook(_forward_hook)
    _HOOK["users"] += 1
    state = {"hooked": True}
    if p.subject:
        # A shared train/eval pass: the subject is the flag whose false
        # value makes it evaluation.
        ok, flag = _resolve(frame, p.subject)
        if ok:
            state["training_run"] = bool(flag)
    return state


def _eval_after(p: Probe, frame, before, extra) -> None:
    if before and before.get("hooked"):
        _HOOK["users"] -= 1
        if _HOOK["users"] == 0 and _HOOK["handle"] is not None:
            _HOOK["handle"].remove()
            _HOOK["handle"] = None
    if before and before.get("training_run"):
        # The training run of a shared pass backpropagates: not this hit.
        p.hits -= 1
        p.observations.clear()
        return
    if not p.observations:
        if p.status is None:
            p.set(UNVERIFIABLE, f"no nn.Module was called at line {p.row}")
        return
    # The model, rather than a loss module called on its output at the same line.
    o = next((x for x in reversed(p.observations) if x.get("params")), p.observations[-1])
    mode = "eval mode" if not o["training"] else "training mode"
    if o["grad"] and o["graph"]:
        s = o["stats"] or {}
        p.set(CONFIRMED, f"{o['module']} ran at line {p.row} in {mode} with grad enabled; its output has a grad_fn "
                         f"({s.get('nodes', 0)} autograd nodes, {_kib(s.get('saved_bytes', 0))} of activations saved for a backward that eval code never runs)",
              training=o["training"], nodes=s.get("nodes", 0), saved_bytes=s.get("saved_bytes", 0))
    elif p.status != CONFIRMED:
        why = "grad mode was off" if not o["grad"] else "its output has no grad_fn"
        p.set(NOT_REPRODUCED, f"{o['module']} ran at line {p.row} in {mode} but {why}", training=o["training"])


# --- AGL4xx: gradient zeroing ---------------------------------------------------------------


def _grad_bytes(params) -> int:
    total = 0
    for prm in params:
        g = getattr(prm, "grad", None)
        if g is not None:
            total += g.untyped_storage().nbytes()
    return total


def _wrap_zero_grad(cls, params_of):
    orig = cls.zero_grad

    def zero_grad(self, *args, **kwargs):
        result = orig(self, *args, **kwargs)
        st = STATE
        if not st.in_probe:
            try:
                f, probes = st.site_probes(sys._getframe(1))
                probes = [p for p in probes if p.code in ("AGL401", "AGL402")]
                if probes:
                    set_to_none = kwargs.get("set_to_none", args[0] if args else None)
                    kept = _grad_bytes(params_of(self))
                    for p in probes:
                        p.observations.append({"set_to_none": set_to_none, "kept": kept})
            except Exception as e:
                st.note(f"verifier error in the zero_grad wrapper: {type(e).__name__}: {e}")
        return result

    zero_grad.__wrapped__ = orig
    cls.zero_grad = zero_grad
    return lambda: setattr(cls, "zero_grad", orig)


def _optimizer_params(opt):
    return [p for g in opt.param_groups for p in g["params"]]


def _zero_grad_after(p: Probe, frame, before, extra) -> None:
    if not p.observations:
        if p.status is None:
            p.set(UNVERIFIABLE, f"no Optimizer.zero_grad / Module.zero_grad call was seen at line {p.row}")
        return
    o = p.observations[-1]
    if o["kept"] > 0:
        p.set(CONFIRMED, f"zero_grad(set_to_none={o['set_to_none']!r}) at line {p.row} kept {_kib(o['kept'])} of zero-filled "
                         f"gradients allocated (set_to_none=True frees them)", kept_bytes=o["kept"])
    else:
        p.set(NOT_REPRODUCED, f"zero_grad at line {p.row} left no gradient allocated (torch {torch.__version__})", kept_bytes=0)


def _foreach_zero_after(p: Probe, frame, node) -> bool:
    """``torch._foreach_zero_(grads)``: each tensor of the named list is
    still allocated, all zeros. False when the line is not such a call."""
    call = node.value if isinstance(node, ast.Expr) else None
    if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and call.func.attr == "_foreach_zero_" and len(call.args) == 1):
        return False
    arg = call.args[0]
    if not _simple_expr(arg):
        if p.status is None:
            p.set(UNVERIFIABLE, "the zeroed list is not a plain name (re-evaluating it could have effects)")
        return True
    ok, xs = _resolve(frame, ast.unparse(arg))
    if not ok or not isinstance(xs, (list, tuple)) or not xs or not all(isinstance(t, torch.Tensor) for t in xs):
        if p.status is None:
            p.set(UNVERIFIABLE, xs if not ok else f"`{ast.unparse(arg)}` is not a non-empty list of tensors")
        return True
    if not any(bool(t.detach().any()) for t in xs):
        n = sum(t.untyped_storage().nbytes() for t in xs)
        p.set(CONFIRMED, f"the {len(xs)} gradients in `{ast.unparse(arg)}` ({_kib(n)}) stay allocated, filled with zeros, after line {p.row}; "
                         "setting each `.grad = None` frees them", kept_bytes=n)
    elif p.status != CONFIRMED:
        p.set(NOT_REPRODUCED, f"`{ast.unparse(arg)}` is not all zeros after line {p.row}")
    return True


def _manual_zero_after(p: Probe, frame, before, extra) -> None:
    node = p.stmt[0] if p.stmt else None
    if _foreach_zero_after(p, frame, node):
        return
    grad_expr = None
    for sub in ast.walk(node) if node is not None else ():
        if isinstance(sub, ast.Attribute) and sub.attr == "grad" and _simple_expr(sub):
            grad_expr = ast.unparse(sub)
            break
    if grad_expr is None:
        if p.status is None:
            p.set(UNVERIFIABLE, "cannot tell which .grad the line zeroes")
        return
    ok, g = _resolve(frame, grad_expr)
    if not ok:
        if p.status is None:
            p.set(UNVERIFIABLE, g)
        return
    if isinstance(g, torch.Tensor) and not bool(g.detach().any()):
        n = g.untyped_storage().nbytes()
        p.set(CONFIRMED, f"`{grad_expr}` ({_kib(n)}) stays allocated, filled with zeros, after line {p.row}; "
                         f"`{grad_expr} = None` frees it", kept_bytes=n)
    elif p.status != CONFIRMED:
        p.set(NOT_REPRODUCED, f"`{grad_expr}` is {'None' if g is None else 'not all zeros'} after line {p.row}")


# --- AGL205: an optimizer step between a forward and a later backward ---------------------


def _step_before(p: Probe, frame):
    return {"versions": [(rec, rec.t._version) for rec in list(STATE.live.values())]}


def _step_after(p: Probe, frame, before, extra) -> None:
    changed = [rec for rec, v in before["versions"] if rec.t._version != v]
    if changed:
        _latent(p, changed, f"line {p.row} updated in place {len(changed)} tensor(s) (saved by {_sites(changed)}) that a pending backward holds")
    elif not p.tainted:
        p.set(NOT_REPRODUCED, f"line {p.row} changed no tensor that a pending backward had saved")


# --- AGL303: a grad-mode guard that guards nothing --------------------------------------------


def _guard_before(p: Probe, frame):
    return {"grad": torch.is_grad_enabled()}


def _guard_after(p: Probe, frame, before, extra) -> None:
    was, now = (before or {}).get("grad"), torch.is_grad_enabled()
    if was and now:
        p.set(CONFIRMED, f"grad mode was on before line {p.row} and is still on after it: the guard changed nothing")
    elif p.status != CONFIRMED:
        p.set(NOT_REPRODUCED, f"grad mode was {'on' if was else 'off'} before line {p.row} and {'on' if now else 'off'} after it")


# --- AGL501: a computed loss made a new leaf ----------------------------------------------


def _made_leaf_target(node) -> str | None:
    """What the line makes a leaf: `x` of `x.requires_grad = True` /
    `x.requires_grad_()`, or the name `loss = Variable(...)` binds."""
    if isinstance(node, ast.Assign) and len(node.targets) == 1:
        t = node.targets[0]
        if isinstance(t, ast.Attribute) and t.attr == "requires_grad":
            t = t.value
        return ast.unparse(t) if _simple_expr(t) else None
    call = node.value if isinstance(node, ast.Expr) else None
    if isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and call.func.attr == "requires_grad_" and _simple_expr(call.func.value):
        return ast.unparse(call.func.value)
    return None


def _made_leaf_after(p: Probe, frame, before, extra) -> None:
    expr = _made_leaf_target(p.stmt[0]) if p.stmt else None
    ok, t = _resolve(frame, expr)
    if not ok:
        if p.status is None:
            p.set(UNVERIFIABLE, t)
        return
    if isinstance(t, torch.Tensor) and t.requires_grad and t.grad_fn is None:
        p.set(CONFIRMED, f"`{expr}` is a leaf with no grad_fn after line {p.row}: a backward from it reaches no parameter")
    elif p.status != CONFIRMED:
        p.set(NOT_REPRODUCED, f"`{expr}` is not a new leaf that requires grad after line {p.row}")


# --- probes kept in files beside this one -------------------------------------------------

_SIBLINGS: dict = {}


def _sibling(name: str):
    """``<name>.py`` beside this file, loaded by path once, as this file is
    run: the child imports nothing of the package."""
    mod = _SIBLINGS.get(name)
    if mod is None:
        import importlib.util

        path = os.path.join(os.path.dirname(os.path.realpath(__file__)), f"{name}.py")
        spec = importlib.util.spec_from_file_location(f"_autograd_lint_{name}", path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        _SIBLINGS[name] = mod
    return mod


# --- AGL502: a trainable tensor that is not a leaf (non_leaf_probes.py) -------------------------


def _non_leaf_after(p: Probe, frame, before, extra) -> None:
    status, evidence = _sibling("non_leaf_probes").check(torch, frame, p.stmt[0] if p.stmt else None, p.row, _resolve)
    if status == CONFIRMED or p.status is None:
        p.set(status, evidence)


# --- AGL503/AGL504: what a module registers (module_probes.py) ---------------------------------


def _module_after(p: Probe, frame, before, extra) -> None:
    status, evidence = _sibling("module_probes").check(p.code, torch, frame, p.stmt[0] if p.stmt else None, p.subject, p.row, _resolve)
    if status != UNVERIFIABLE or p.status is None:
        p.set(status, evidence)


# --- AGL104/AGL505: what a training iteration leaves to the next (loop_probes.py) -------------


def _loop_before(p: Probe, frame):
    return _sibling("loop_probes").before(p.code, torch, frame, p.stmt[0] if p.stmt else None, p.subject, p.row, p.observations, _resolve)


def _loop_after(p: Probe, frame, before, extra) -> None:
    probes = _sibling("loop_probes")
    verdict = probes.after(p.code, torch, frame, p.stmt[0] if p.stmt else None, p.subject, p.row, p.observations, before, _resolve)
    if verdict is not None and (verdict[0] != UNVERIFIABLE or p.status is None):
        p.set(verdict[0], verdict[1], **verdict[2])
    if p.settled:
        probes.release(p.observations)


def _loop_after_run(p: Probe) -> None:
    verdict = _sibling("loop_probes").after_run(p.code, p.path, p.row, p.observations, STATE.program)
    if verdict is not None:
        p.set(verdict[0], verdict[1], **verdict[2])


# --- AGL206: a state_dict() snapshot that aliases the live parameters (snapshot_probes.py) ----


def _snapshot_probes_at(frame) -> list:
    entry = STATE._entry(frame.f_code.co_filename) if frame is not None else None
    return [p for p in (entry or {}).get(frame.f_lineno, ()) if p.code == "AGL206"] if entry else []


def _on_state_dict(frame, result) -> None:
    if STATE.in_probe:
        return
    for p in _snapshot_probes_at(frame):
        p.extra.setdefault("returned", set()).update(_sibling("snapshot_probes").storages(torch, result))


def _on_snapshot_use(frame, obj, how: str) -> None:
    if STATE.in_probe:
        return
    for p in STATE.probes:
        if p.code == "AGL206" and p.status != CONFIRMED and p.observations:
            verdict = _sibling("snapshot_probes").used(torch, p.observations, obj, how, frame, p.row)
            if verdict is not None:
                p.set(*verdict)
                p.observations.clear()  # they hold the snapshot's tensors: let them go
                STATE.write()


def _snapshot_after(p: Probe, frame, before, extra) -> None:
    returned = p.extra.pop("returned", None)
    if returned is None or p.status == CONFIRMED:
        return
    p.extra["seen"] = True
    rec = _sibling("snapshot_probes").bound(torch, frame, p.stmt[0] if p.stmt else None, returned, _resolve)
    if rec is not None:
        # The latest snapshots: a load or save reads what the line bound last.
        p.observations[:] = p.observations[-(MAX_HITS - 1):] + [rec]
    if p.status is None:
        p.set(LATENT, f"a snapshot was taken at line {p.row}; watching for a load or save of it after a step")


def _snapshot_final(p: Probe) -> None:
    p.set(*_sibling("snapshot_probes").final(p.observations, p.row, bool(p.extra.get("seen"))))
    p.observations.clear()


# --- AGL304: anomaly detection switched on (anomaly_probes.py) -----------------------------------


def _anomaly_after(p: Probe, frame, before, extra) -> None:
    p.set(*_sibling("anomaly_probes").check(torch, p.row))


# --- AGL506: a parameter read out of the graph (parameter_probes.py) --------------------------


def _parameter_after(p: Probe, frame, before, extra) -> None:
    _sibling("parameter_probes").after_line(torch, frame, p, _resolve)


BEFORE = {"AGL201": _inplace_before, "AGL203": _inplace_before, "AGL202": _leaf_before, "AGL301": _eval_before, "AGL303": _guard_before, "AGL205": _step_before,
          "AGL104": _loop_before, "AGL505": _loop_before}
AFTER = {
    "AGL303": _guard_after, "AGL204": _multi_view_after, "AGL205": _step_after,
    "AGL201": _inplace_after, "AGL203": _inplace_after, "AGL202": _leaf_after,
    "AGL101": _retention_after, "AGL102": _retention_after, "AGL103": _retention_after,
    "AGL301": _eval_after, "AGL304": _anomaly_after, "AGL401": _zero_grad_after, "AGL402": _zero_grad_after, "AGL403": _manual_zero_after,
    "AGL206": _snapshot_after,
    "AGL501": _made_leaf_after,
    "AGL502": _non_leaf_after,
    "AGL503": _module_after, "AGL504": _module_after,
    "AGL104": _loop_after, "AGL505": _loop_after,
    "AGL506": _parameter_after,
}
# Decided once the program ended, from how it ended.
AFTER_RUN = {"AGL104": _loop_after_run, "AGL206": _snapshot_final}


# --- running the program ------------------------------------------------------------------


def _load_probes(findings: list[dict]) -> None:
    trees: dict[str, ast.AST | None] = {}
    for spec in findings:
        path = os.path.realpath(spec["path"])
        if path not in trees:
            try:
                with open(path, "rb") as fh:
                    trees[path] = ast.parse(fh.read(), filename=path)
            except (OSError, SyntaxError, ValueError):
                trees[path] = None
        tree = trees[path]
        stmt = _statement_at(tree, spec["line"]) if tree is not None else None
        p = Probe(spec, stmt)
        STATE.probes.append(p)
        if p.code not in AFTER:
            p.set(UNVERIFIABLE, "advice about performance or style: nothing to observe at runtime"
                  if p.code == "AGL302" else f"no runtime probe for {p.code}")
            continue
        if stmt is None:
            p.set(UNVERIFIABLE, "cannot map the finding to a statement")
            continue
        lines = STATE.by_file.setdefault(path, {})
        for ln in range(stmt[1], stmt[2] + 1):
            lines.setdefault(ln, []).append(p)


def _user_location(tb) -> str | None:
    loc = None
    for fs in traceback.extract_tb(tb):
        if not fs.filename.startswith("<") and "site-packages" not in fs.filename and "autograd_lint" not in fs.filename:
            loc = f"{fs.filename}:{fs.lineno}"
    return loc


def _run_program(argv: list[str]) -> None:
    import runpy

    argv = list(argv)
    if argv and os.path.basename(argv[0]).startswith("python"):
        argv = argv[1:]
        while argv and argv[0].startswith("-") and argv[0] != "-m":
            argv = argv[1:]  # interpreter flags (-u, -O, ...)
    if argv and argv[0] == "-m":
        module, args = argv[1], argv[2:]
        sys.argv = [module, *args]
        runpy.run_module(module, run_name="__main__", alter_sys=True)
    elif argv and os.path.basename(argv[0]) == "pytest":
        sys.argv = ["pytest", *argv[1:]]
        runpy.run_module("pytest", run_name="__main__", alter_sys=True)
    else:
        script, args = argv[0], argv[1:]
        sys.argv = [script, *args]
        sys.path[0] = os.path.dirname(os.path.abspath(script))
        runpy.run_path(script, run_name="__main__")


def main(argv: list[str] | None = None) -> int:
    global torch, MAX_HITS
    argv = list(sys.argv[1:] if argv is None else argv)
    if "--" not in argv or argv.index("--") < 2:
        print("usage: python child.py FINDINGS.json RESULT.json -- COMMAND...", file=sys.stderr)
        return EXIT_VERIFIER_ERROR
    sep = argv.index("--")
    findings_path, result_path = argv[0], argv[1]
    command = argv[sep + 1:]
    st = STATE
    st.result_path = result_path
    cleanups = []
    try:
        with open(findings_path) as f:
            spec = json.load(f)
        st.strict = bool(spec.get("strict"))
        st.device = spec.get("device", "cpu")
        MAX_HITS = max(1, int(spec.get("max_hits", MAX_HITS)))
        _load_probes(spec["findings"])
        # The verifier's child is, with the ledger generator, the only code
        # that needs torch; it runs in its own process, never on `check`.
        import torch
        codes = {p.code for p in st.probes if p.status is None}
        if codes & {"AGL401", "AGL402"}:
            cleanups.append(_wrap_zero_grad(torch.optim.Optimizer, _optimizer_params))
            cleanups.append(_wrap_zero_grad(torch.nn.Module, lambda m: list(m.parameters())))
        if "AGL206" in codes:
            cleanups.append(_sibling("snapshot_probes").install(torch, _on_state_dict, _on_snapshot_use))
        hooks = None
        if codes & {"AGL201", "AGL203", "AGL205"}:
            hooks = torch.autograd.graph.saved_tensors_hooks(_pack, _unpack)
        st.program = {"state": "running", "command": command}
        st.write(force=True)
    except Exception as e:
        _write_error(result_path, f"{type(e).__name__}: {e}")
        return EXIT_VERIFIER_ERROR

    exit_code = 0
    try:
        if hooks is not None:
            hooks.__enter__()
        if codes and any(st.by_file.values()):
            threading.settrace(_global_trace)
            sys.settrace(_global_trace)
        try:
            _run_program(command)
            st.program.update(state="completed")
        except _StopRun:
            st.program.update(state="stopped early", detail="every flagged line was decided")
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
            if st.stop_requested:
                st.program.update(state="stopped early", detail="every flagged line was decided")
            elif code == 0:
                st.program.update(state="completed")
            else:
                st.program.update(state="exited", exit_code=code)
                exit_code = 0
        except BaseException as e:  # the user's program raised
            if st.stop_requested:
                st.program.update(state="stopped early", detail="every flagged line was decided")
            else:
                msg = str(e).splitlines()[0] if str(e) else ""
                st.program.update(state="raised", exception=f"{type(e).__name__}{': ' + msg if msg else ''}",
                                  location=_user_location(e.__traceback__))
        finally:
            sys.settrace(None)
            threading.settrace(None)
            if hooks is not None:
                hooks.__exit__(None, None, None)
        for c in cleanups:
            c()
        for frame, pend in list(st.pending.items()):
            _after(frame, pend)
        st.pending.clear()
        for p in st.probes:
            if p.code in AFTER_RUN and p.status != CONFIRMED and p.hits:
                AFTER_RUN[p.code](p)
        st.write(force=True)
    except BaseException as e:
        _write_error(result_path, f"{type(e).__name__}: {e}", keep=True)
        return EXIT_VERIFIER_ERROR
    return exit_code


def _write_error(result_path: str, message: str, keep: bool = False) -> None:
    try:
        data = {}
        if keep and os.path.exists(result_path):
            with open(result_path) as f:
                data = json.load(f)
        data["verifier_error"] = message
        tmp = result_path + ".tmp"
        with open(tmp, "w") as f:
            json.dump(data, f)
        os.replace(tmp, result_path)
    except Exception:
        print(f"autograd-lint verify: verifier error: {message}", file=sys.stderr)


if __name__ == "__main__":
    # Run by path, this file's folder heads sys.path: the program must see
    # what `python -m ...` would give it there, the working directory (a
    # script's run replaces it with the script's folder).
    if sys.path and os.path.realpath(sys.path[0] or ".") == os.path.dirname(os.path.realpath(__file__)):
        sys.path[0] = os.getcwd()
    sys.exit(main())
