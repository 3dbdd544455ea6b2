"""``autograd-lint verify``, the parent side: lint, launch the child in its own
process group (timeout, memory cap), read the verdicts, report.

    autograd-lint verify [OPTIONS] [PATHS] -- python train.py --max-steps 3
    autograd-lint verify [OPTIONS] script.py [ARGS]

Without PATHS, a script's run lints the script and the project modules it
imports (``targets``). Never imports torch: only the child does, in the
interpreter ``interpreter`` picks.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from typing import Sequence

from autograd_lint.verify import NOT_REACHED, STATUSES, UNVERIFIABLE
from autograd_lint.verify.interpreter import CHILD, InterpreterError, check_python, program_python

PROG = "autograd-lint verify"
EXIT_OK, EXIT_ERROR, EXIT_INTERRUPTED = 0, 2, 130
CHILD_VERIFIER_ERROR = 3
UNVERIFIABLE_CODES = ("AGL001",)


class UsageError(Exception):
    pass


@dataclass
class Outcome:
    """How the run went, from the parent's point of view."""

    state: str = "not run"  # completed | stopped early | raised | exited | timeout | killed | verifier error
    detail: str = ""
    elapsed_s: float = 0.0
    verifier_error: str | None = None
    notes: list = field(default_factory=list)
    command: list = field(default_factory=list)
    python: str = ""

    def describe(self) -> str:
        if self.state == "completed":
            return "your program completed"
        if self.state == "stopped early":
            return "stopped early: every flagged line was decided"
        if self.state == "raised":
            return f"your program raised {self.detail}"
        if self.state == "exited":
            return f"your program exited with code {self.detail}"
        if self.state == "timeout":
            return f"your program did not finish within {self.detail} s and was killed"
        if self.state == "killed":
            return f"your program was killed by {self.detail}"
        return f"verifier error: {self.verifier_error or self.detail}"


def build_parser(shorthand: bool) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Run a program and check each finding dynamically: confirmed, latent, not reproduced, "
        "not reached or unverifiable. Runs your code (check never does).",
        usage=f"{PROG} [options] [PATH ...] -- python script.py [ARGS]\n       {PROG} [options] script.py [ARGS]",
        epilog="Without PATH, a script's run lints the script and the project modules it imports (a `-m` or pytest run: "
        "the current folder). The program runs with --python, else the command's own `python` as found on PATH, "
        "else (the shorthand, pytest) the interpreter running autograd-lint; torch must be installed there.",
    )
    parser.add_argument("--python", metavar="PATH",
                        help="the interpreter that runs the program; it needs torch, not autograd-lint "
                        "(default: the command's own `python` as found on PATH; the shorthand: the one running autograd-lint)")
    parser.add_argument("--timeout", type=float, default=120.0, metavar="SECONDS", help="kill the program after this long (default: 120)")
    parser.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto",
                        help="where the program runs: cuda adds CUDA memory growth to AGL1xx evidence and lifts the memory cap")
    parser.add_argument("--memory-limit", type=float, default=None, metavar="GIB",
                        help="address-space cap for CPU runs, in GiB (default: physical memory; 0: none)")
    parser.add_argument("--format", choices=("text", "json"), default="text")
    parser.add_argument("--config", metavar="PATH", help="use this pyproject.toml or autograd-lint.toml")
    parser.add_argument("--findings", metavar="FILE",
                        help="verify these findings (JSON list of {path, line, code, subject}) instead of linting")
    parser.add_argument("--strict", action="store_true",
                        help="let autograd's errors happen (AGL201/AGL202 stop the program) instead of keeping going")
    parser.add_argument("--max-hits", type=int, default=3, help=argparse.SUPPRESS)
    if shorthand:
        parser.add_argument("script", metavar="script.py")
        parser.add_argument("args", nargs=argparse.REMAINDER)
    else:
        parser.add_argument("paths", nargs="*", metavar="PATH")
    return parser


@dataclass
class Request:
    """What the command line asks for."""

    args: argparse.Namespace
    paths: list[str]  # to lint
    command: list[str]
    typed: bool  # the command came after `--` (its `python` word is the user's)
    follow_imports: bool  # lint the project modules the script imports too


def parse(argv: list[str]) -> Request:
    if "--" in argv:
        i = argv.index("--")
        args = build_parser(False).parse_args(argv[:i])
        command = argv[i + 1:]
        if not command:
            raise UsageError("nothing to run after `--`")
        paths, typed = args.paths, True
    else:
        args = build_parser(True).parse_args(argv)
        command = ["python", args.script, *args.args]
        paths, typed = [], False
    script, module = _target(command)
    follow = not paths and script is not None
    if not paths:
        paths = [script] if script else ["."]
    return Request(args, paths, command, typed, follow)


def _target(command: list[str]) -> tuple[str | None, str | None]:
    """The script or module the command runs; UsageError for anything else."""
    argv = list(command)
    if argv and os.path.basename(argv[0]).startswith("python"):
        argv = argv[1:]
        while argv and argv[0].startswith("-") and argv[0] != "-m":
            if argv[0] == "-c":
                raise UsageError("`python -c` cannot be verified; put the code in a file")
            argv = argv[1:]
        if not argv:
            raise UsageError("no script or module to run")
        if argv[0] == "-m":
            if len(argv) < 2:
                raise UsageError("`-m` needs a module name")
            return None, argv[1]
        return argv[0], None
    if argv and os.path.basename(argv[0]) == "pytest":
        return None, "pytest"
    if argv and argv[0].endswith(".py"):
        return argv[0], None
    raise UsageError(f"only `python script.py ...`, `python -m module ...` and `pytest ...` can be verified, not `{shlex.join(command)}`")


# --- findings --------------------------------------------------------------------


def collect_findings(paths: list[str], config: str | None, imported: Sequence[str] = ()):
    """The findings to verify in ``paths`` and ``imported`` (the project
    modules a script imports, linted with it)."""
    from autograd_lint.config import load_settings
    from autograd_lint.discovery import discover_files
    from autograd_lint.runner import lint_paths

    settings, discovery_options = load_settings(paths, config)
    discovered = discover_files(paths, discovery_options)
    if discovered.missing:
        raise UsageError(f"{discovered.missing[0]}: no such file or directory")
    known = {os.path.realpath(f) for f in discovered.files}
    files = discovered.files + [p for p in imported if os.path.realpath(p) not in known]
    results = lint_paths(files, settings, jobs=1, roots=[p for p in paths if os.path.isdir(p)])
    findings = [f for r in results for f in r.findings]
    # A notebook's cells are not a program this command runs: its findings
    # are said to be left out, never shown as not reproduced.
    in_notebooks = [f for f in findings if f.cell is not None]
    if in_notebooks:
        n = len(in_notebooks)
        print(f"autograd-lint: verify does not run notebooks: {n} finding{'' if n == 1 else 's'} in notebooks not verified", file=sys.stderr)
    return sorted((f for f in findings if f.code not in UNVERIFIABLE_CODES and f.cell is None), key=lambda f: f.sort_key())


def load_findings_file(path: str):
    from autograd_lint.finding import Finding, Location

    try:
        with open(path) as fh:
            rows = json.load(fh)
        out = []
        for r in rows:
            loc = Location(int(r["line"]), int(r.get("column", 1)))
            out.append(Finding(r["code"], r.get("message", ""), r["path"], loc, loc, subject=r.get("subject"), noqa_row=loc.row))
        return out
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise UsageError(f"--findings {path}: {e}") from None


# --- the child ---------------------------------------------------------------------


def _default_memory_limit() -> int | None:
    try:
        return max(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"), 4 << 30)
    except (ValueError, OSError, AttributeError):
        return None


def _resolve_device(device: str) -> str:
    if device != "auto":
        return device
    return "cuda" if os.path.exists("/dev/nvidiactl") else "cpu"


def child_env() -> dict[str, str]:
    """The environment of the child (and of the interpreter check)."""
    return dict(os.environ, TORCHDYNAMO_DISABLE="1")


def run_child(findings, command: list[str], args, device: str, python: str, stdout=None) -> tuple[dict, Outcome]:
    outcome = Outcome(command=command, python=python)
    with tempfile.TemporaryDirectory(prefix="autograd-lint-verify-") as tmp:
        spec_path, result_path = os.path.join(tmp, "findings.json"), os.path.join(tmp, "result.json")
        spec = {
            "strict": args.strict,
            "device": device,
            "max_hits": args.max_hits,
            "findings": [
                {"id": i, "path": os.path.abspath(f.path), "line": f.watch_row or f.start.row, "code": f.code, "subject": f.subject}
                for i, f in enumerate(findings)
            ],
        }
        with open(spec_path, "w") as fh:
            json.dump(spec, fh)

        env = child_env()
        limit = None
        if device == "cpu":
            limit = _default_memory_limit() if args.memory_limit is None else int(args.memory_limit * (1 << 30)) or None

        def preexec() -> None:
            if limit:
                import resource

                resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

        # By its file path: the program's interpreter need not have
        # autograd-lint installed, and nothing of this one's environment
        # (its site-packages on PYTHONPATH) leaks into the program's.
        argv = [python, CHILD, spec_path, result_path, "--", *command]
        t0 = time.monotonic()
        try:
            proc = subprocess.Popen(argv, env=env, start_new_session=True, preexec_fn=preexec, stdout=stdout)
        except OSError as e:
            outcome.state, outcome.verifier_error = "verifier error", f"cannot start {python}: {e}"
            return {}, outcome
        timed_out = False
        try:
            rc = proc.wait(timeout=args.timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            _kill_group(proc)
            rc = proc.wait()
        except KeyboardInterrupt:
            _kill_group(proc)
            proc.wait()
            raise
        outcome.elapsed_s = time.monotonic() - t0
        result = {}
        try:
            with open(result_path) as fh:
                result = json.load(fh)
        except (OSError, ValueError):
            result = {}

    program = result.get("program") or {}
    outcome.notes = result.get("notes") or []
    if result.get("verifier_error"):
        outcome.state, outcome.verifier_error = "verifier error", result["verifier_error"]
    elif timed_out:
        outcome.state, outcome.detail = "timeout", f"{args.timeout:g}"
    elif not result.get("started"):
        outcome.state = "verifier error"
        outcome.verifier_error = f"the verifier's child process ended (exit status {rc}) before starting your program"
    elif rc < 0:
        try:
            name = signal.Signals(-rc).name
        except ValueError:
            name = f"signal {-rc}"
        outcome.state, outcome.detail = "killed", name + (" (out of memory?)" if -rc == signal.SIGKILL else "")
    elif program.get("state") == "raised":
        loc = program.get("location")
        outcome.state, outcome.detail = "raised", program.get("exception", "") + (f" (at {loc})" if loc else "")
    elif program.get("state") == "exited":
        outcome.state, outcome.detail = "exited", str(program.get("exit_code"))
    elif program.get("state") in ("completed", "stopped early"):
        outcome.state = program["state"]
    elif rc == CHILD_VERIFIER_ERROR:
        outcome.state, outcome.verifier_error = "verifier error", "the verifier's child process failed"
    else:
        # The child vanished mid-run without an error of its own: os._exit in
        # the program, or the process was killed from outside.
        outcome.state, outcome.detail = "exited", f"{rc} (the process ended abruptly)"
    if outcome.state == "raised" and "allocate" in outcome.detail and limit:
        outcome.detail += f" [memory cap: {limit / (1 << 30):.1f} GiB]"
    return result, outcome


def _kill_group(proc: subprocess.Popen) -> None:
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(proc.pid, sig)
        except (ProcessLookupError, PermissionError):
            return
        try:
            proc.wait(timeout=2)
            return
        except subprocess.TimeoutExpired:
            continue


def verdicts(findings, result: dict, outcome: Outcome) -> list[dict]:
    by_id = {p["id"]: p for p in result.get("probes") or []}
    out = []
    abnormal = outcome.state not in ("completed", "stopped early")
    for i, f in enumerate(findings):
        p = by_id.get(i) or {}
        status, evidence, hits = p.get("status"), p.get("evidence", ""), p.get("hits", 0)
        if status is None:
            if hits:
                status, evidence = UNVERIFIABLE, f"line {f.start.row} ran {hits} time(s) but nothing could be observed"
            elif outcome.state == "verifier error":
                status, evidence = UNVERIFIABLE, "verifier error before this line was reached"
            else:
                status = NOT_REACHED
                evidence = f"line {f.start.row} never ran" + (f" ({outcome.describe()})" if abnormal else "")
        out.append({"status": status, "evidence": evidence, "hits": hits, **(p.get("numbers") or {})})
    return out


# --- report ------------------------------------------------------------------------


def _relpath(path: str) -> str:
    try:
        rel = os.path.relpath(path)
    except ValueError:
        return path
    return path if rel.startswith("..") else rel


def render_text(findings, results: list[dict], outcome: Outcome) -> str:
    lines = []
    for f, v in zip(findings, results):
        message = " ".join(f.message.split())
        lines.append(f"{_relpath(f.path)}:{f.start.row}:{f.start.column}: {f.code} {message} [{v['status']}]")
        if v["evidence"]:
            lines.append(f"    {v['evidence']}")
    counts = {s: sum(1 for v in results if v["status"] == s) for s in STATUSES}
    summary = ", ".join(f"{n} {s}" for s, n in counts.items() if n)
    lines.append("")
    lines.append(f"Ran `{shlex.join(outcome.command)}` with {outcome.python} in {outcome.elapsed_s:.1f} s: {outcome.describe()}.")
    for note in outcome.notes:
        lines.append(f"note: {note}")
    n = len(findings)
    lines.append(f"{n} finding{'' if n == 1 else 's'}: {summary}." if n else "No findings to verify.")
    return "\n".join(lines) + "\n"


def render_json(findings, results: list[dict], outcome: Outcome, linted: list[str]) -> str:
    from autograd_lint.report.machine import finding_to_dict

    rows = []
    for f, v in zip(findings, results):
        d = finding_to_dict(f)
        d["verification"] = v
        rows.append(d)
    run = {
        "command": outcome.command,
        "python": outcome.python,
        "linted": linted,
        "state": outcome.state,
        "detail": outcome.detail,
        "message": outcome.describe(),
        "elapsed_s": round(outcome.elapsed_s, 3),
        "notes": outcome.notes,
    }
    if outcome.verifier_error:
        run["verifier_error"] = outcome.verifier_error
    return json.dumps({"run": run, "findings": rows}, indent=2) + "\n"


def main(argv: list[str]) -> int:
    try:
        try:
            request = parse(argv)
        except SystemExit as e:
            return e.code if isinstance(e.code, int) else EXIT_ERROR
        args, paths, command = request.args, request.paths, request.command
        if args.max_hits < 1:
            raise UsageError("--max-hits must be at least 1")
        linted: list[str] = []
        python = ""
        if args.findings:
            findings = load_findings_file(args.findings)
        else:
            from autograd_lint.config import ConfigError
            from autograd_lint.verify.targets import imported_modules, linted_line

            imported = imported_modules(paths[0]) if request.follow_imports and os.path.isfile(paths[0]) else []
            try:
                findings = collect_findings(paths, args.config, imported)
            except ConfigError as e:
                raise UsageError(str(e)) from None
            linted = [*paths, *imported]
            print(f"autograd-lint: {linted_line(paths, imported)}", file=sys.stderr)
        if findings:  # only a run needs the interpreter
            python = program_python(command, request.typed, args.python)
            check_python(python, child_env())
    except (UsageError, InterpreterError) as e:
        print(f"autograd-lint: error: {e}", file=sys.stderr)
        return EXIT_ERROR
    if not findings:
        if args.format == "json":
            run = {"state": "not run", "message": "no findings to verify", "linted": linted}
            sys.stdout.write(json.dumps({"run": run, "findings": []}) + "\n")
        else:
            print("No findings to verify; the program was not run.")
        return EXIT_OK
    device = _resolve_device(args.device)
    sys.stdout.flush()
    result, outcome = run_child(findings, command, args, device, python, stdout=sys.stderr if args.format == "json" else None)
    results = verdicts(findings, result, outcome)
    if args.format == "json":
        sys.stdout.write(render_json(findings, results, outcome, linted))
    else:
        sys.stdout.write(render_text(findings, results, outcome))
    if outcome.state == "verifier error":
        print(f"autograd-lint: verifier error: {outcome.verifier_error}", file=sys.stderr)
        return EXIT_ERROR
    return EXIT_OK
