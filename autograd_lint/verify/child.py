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
* AGL201/AGL203/AGL205: a global ``saved_tensors_hooks`` pair records each
  tensor saved for a backward not yet run (saved_tensor_probes.py); the
  probe of a flagged line marks the saved tensors the line changed (in
  place, through ``.data``, or by an optimizer ``step()``), and a backward
  that reads one confirms. While these hooks are installed PyTorch skips
  its own version check, so unpack does it;
* AGL202: the in-place on a leaf that requires grad, with grad mode on
  (leaf_probes.py). By default the statement runs under ``no_grad`` so the
  program keeps going (``--strict``: it raises, as without the verifier);
* AGL101/AGL102/AGL103: the container / accumulator the statement writes to is
  measured after each hit (graph nodes reachable from it, saved bytes;
  graph_probes.py);
* AGL301: a global module forward hook (outermost call at the flagged line;
  graph_probes.py);
* AGL204: the write raises autograd's "is a view and is being modified
  inplace" error;
* AGL303: grad mode read before and after the flagged line;
* AGL304: anomaly mode read after the flagged line (anomaly_probes.py);
* AGL206: the snapshot the flagged line binds, watched until a load or save
  reads it after a step changed it (snapshot_probes.py);
* AGL4xx: ``Optimizer.zero_grad`` / ``Module.zero_grad`` wrappers and the
  gradient a manual zeroing leaves allocated (zeroing_probes.py);
* AGL501: the value the line makes require grad is read after it
  (leaf_probes.py): a leaf with no ``grad_fn``, so a backward from it
  reaches no parameter.
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


class State:
    def __init__(self) -> None:
        self.result_path = ""
        self.probes: list[Probe] = []
        self.by_file: dict[str, dict[int, list[Probe]]] = {}  # realpath -> line -> probes
        self.code_files: dict[str, dict | None] = {}  # co_filename -> by_file entry (or None)
        self.pending: dict = {}  # frame -> list of (probe, before-state)
        # The records the saved-tensor pack hook made (saved_tensor_probes.py)
        # that autograd still holds: the saves of backwards not yet run.
        self.live: weakref.WeakValueDictionary = weakref.WeakValueDictionary()
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


# --- AGL303: a grad-mode guard that guards nothing --------------------------------------------


def _guard_before(p: Probe, frame):
    return {"grad": torch.is_grad_enabled()}


def _guard_after(p: Probe, frame, before, extra) -> None:
    was, now = (before or {}).get("grad"), torch.is_grad_enabled()
    if was and now:
        p.set(CONFIRMED, f"grad mode was on before line {p.row} and is still on after it: the guard changed nothing")
    elif p.status != CONFIRMED:
        p.set(NOT_REPRODUCED, f"grad mode was {'on' if was else 'off'} before line {p.row} and {'on' if now else 'off'} after it")


# --- probes kept in files beside this one -------------------------------------------------

# name -> module, so that a probe's wrapper below costs a dict lookup per hit.
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


# --- AGL202 / AGL501: a leaf written in place, or made from a computed value (leaf_probes.py) --


def _leaf_before(p: Probe, frame):
    return _sibling("leaf_probes").leaf_before(torch, frame, p, STATE.strict, _resolve)


def _leaf_after(p: Probe, frame, before, extra) -> None:
    _sibling("leaf_probes").leaf_after(torch, p, before, extra)


def _made_leaf_after(p: Probe, frame, before, extra) -> None:
    _sibling("leaf_probes").made_leaf_after(torch, frame, p, _resolve, _simple_expr)


# --- AGL201 / AGL203 / AGL205: a saved tensor changed before backward (saved_tensor_probes.py) --


def _inplace_before(p: Probe, frame):
    return _sibling("saved_tensor_probes").inplace_before(torch, frame, p, _resolve, _storage, STATE.live)


def _inplace_after(p: Probe, frame, before, extra) -> None:
    _sibling("saved_tensor_probes").inplace_after(torch, p, before, STATE.live, _storage)


def _step_before(p: Probe, frame):
    return _sibling("saved_tensor_probes").step_before(STATE.live)


def _step_after(p: Probe, frame, before, extra) -> None:
    _sibling("saved_tensor_probes").step_after(p, before)


# --- AGL101-AGL103, AGL301: graphs kept alive, or built by eval code (graph_probes.py) ---------


def _retention_after(p: Probe, frame, before, extra) -> None:
    _sibling("graph_probes").retention_after(torch, frame, p, STATE.device, _resolve, _simple_expr, _storage, _kib)


def _eval_before(p: Probe, frame):
    return _sibling("graph_probes").eval_before(torch, frame, p, STATE, _resolve, _storage)


def _eval_after(p: Probe, frame, before, extra) -> None:
    _sibling("graph_probes").eval_after(p, before, _kib)


# --- AGL401-AGL403: zeroing that keeps the gradients allocated (zeroing_probes.py) -------------


def _zero_grad_after(p: Probe, frame, before, extra) -> None:
    _sibling("zeroing_probes").zero_grad_after(torch, p, _kib)


def _manual_zero_after(p: Probe, frame, before, extra) -> None:
    _sibling("zeroing_probes").manual_zero_after(torch, frame, p, _resolve, _simple_expr, _kib)


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


def _snapshot_after(p: Probe, frame, before, extra) -> None:
    _sibling("snapshot_probes").after_line(torch, frame, p, MAX_HITS, _resolve)


def _snapshot_final(p: Probe) -> None:
    _sibling("snapshot_probes").after_run(p)


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
            cleanups.append(_sibling("zeroing_probes").install(torch, st))
        if "AGL206" in codes:
            cleanups.append(_sibling("snapshot_probes").watch(torch, st))
        hooks = None
        if codes & {"AGL201", "AGL203", "AGL205"}:
            hooks = torch.autograd.graph.saved_tensors_hooks(*_sibling("saved_tensor_probes").hooks(st))
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
