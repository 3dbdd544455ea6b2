"""Benchmark autograd-lint against LibCST's parser on the pinned corpus subset.

Usage: python bench/bench.py [--corpus DIR] [--files N] [--python PATH] [--repeat K]

Prints a Markdown table of ratios (cold / floor, warm / cold, one changed
file / cold, -j 2 / -j 1) with the raw seconds, and the machine they came
from. A benchmark, not a test: it exits 0 whatever the timings are (it exits
2 only when the linter itself fails, since then there is nothing to report).
See bench/README.md for what each figure means.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

sys.path.insert(0, str(Path(__file__).resolve().parent))
from corpus import CorpusError, corpus_files, default_dir, ensure_corpus  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
STARTUP_RUNS = 11

# Runs in the measured interpreter: only the parse loop is timed, so neither
# interpreter start-up nor `import libcst` counts towards the floor.
FLOOR_SCRIPT = """\
import sys, time
import libcst
paths = open(sys.argv[1], encoding="utf-8").read().splitlines()
start = time.process_time()
for p in paths:
    with open(p, "rb") as f:
        data = f.read()
    try:
        libcst.parse_module(data)
    except Exception:
        pass
print(time.process_time() - start)
"""


class BenchError(Exception):
    """The linter (or the floor script) did not run; nothing to measure."""


@dataclass
class Run:
    cpu: float  # user + sys of the child and the children it waited for
    wall: float
    stdout: str


@dataclass
class Samples:
    """Every run of one figure; the table reports the median."""

    cpu: list[float] = field(default_factory=list)
    wall: list[float] = field(default_factory=list)
    outputs: list[str] = field(default_factory=list)

    def add(self, run: Run) -> None:
        self.cpu.append(run.cpu)
        self.wall.append(run.wall)
        self.outputs.append(run.stdout)

    @property
    def cpu_median(self) -> float:
        return statistics.median(self.cpu)

    @property
    def wall_median(self) -> float:
        return statistics.median(self.wall)


# --- running things --------------------------------------------------------


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


# Children may write bytecode: with PYTHONDONTWRITEBYTECODE set (some CI
# images set it) every run would compile the linter's modules again, which
# is not what any figure is about (an installed wheel has its bytecode).
_ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def run_measured(cmd: Sequence[str], cwd: Path, ok_codes: tuple[int, ...] = (0,)) -> Run:
    """Run cmd to completion; its whole-process CPU and wall seconds.

    RUSAGE_CHILDREN only grows when a child is reaped, and runs are strictly
    sequential, so the delta around one subprocess.run is that process alone
    (plus any workers it waited for, which is what -j N should be charged).
    """
    cpu_before = _children_cpu()
    start = time.perf_counter()
    proc = subprocess.run(list(cmd), cwd=cwd, capture_output=True, text=True, env=_ENV)
    wall = time.perf_counter() - start
    cpu = _children_cpu() - cpu_before
    if proc.returncode not in ok_codes:
        tail = proc.stderr.strip().splitlines()[-10:]
        raise BenchError(f"exit {proc.returncode} from: {' '.join(cmd)}\n" + "\n".join(tail))
    return Run(cpu=cpu, wall=wall, stdout=proc.stdout)


def repeat(times: int, once: Callable[[], Run]) -> Samples:
    samples = Samples()
    for _ in range(times):
        samples.add(once())
    return samples


# --- the interpreter and the linter ----------------------------------------


def _can_import(*modules: str) -> bool:
    return all(importlib.util.find_spec(m) is not None for m in modules)


def find_python(requested: str | None) -> Path:
    """The interpreter that has autograd-lint and libcst installed."""
    if requested:
        return Path(requested)
    if _can_import("autograd_lint", "libcst"):
        return Path(sys.executable)
    venv = REPO / ".venv" / "bin" / "python"
    if venv.exists():
        return venv
    raise BenchError("no interpreter with autograd-lint and libcst found; pass --python PATH")


def linter_command(python: Path) -> list[str]:
    # Prefer the console script users run; never resolve symlinks, a venv's
    # python is a link and resolving it would leave the venv.
    script = python.parent / "autograd-lint"
    if script.is_file() and os.access(script, os.X_OK):
        return [str(script)]
    return [str(python), "-m", "autograd_lint"]


def _output(cmd: Sequence[str]) -> str:
    proc = subprocess.run(list(cmd), capture_output=True, text=True)
    return (proc.stdout or proc.stderr).strip()


@dataclass(frozen=True)
class CacheFlags:
    cache_dir: bool
    no_cache: bool

    @property
    def usable(self) -> bool:
        return self.cache_dir and self.no_cache


def detect_cache_flags(lint: Sequence[str]) -> CacheFlags:
    help_text = _output([*lint, "check", "--help"])
    return CacheFlags(cache_dir="--cache-dir" in help_text, no_cache="--no-cache" in help_text)


def machine_info(python: Path, lint: Sequence[str]) -> dict[str, str]:
    model = platform.processor() or "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    cores = str(os.cpu_count())
    if hasattr(os, "sched_getaffinity"):
        cores += f" ({len(os.sched_getaffinity(0))} usable)"
    versions = _output([str(python), "-c", "import sys, importlib.metadata as m; print(sys.version.split()[0], m.version('libcst'))"]).split()
    return {
        "CPU": model,
        "cores": cores,
        "Python": versions[0] if versions else "?",
        "LibCST": versions[1] if len(versions) > 1 else "?",
        "autograd-lint": _output([*lint, "--version"]),
        "OS": platform.platform(),
    }


# --- the tree under test ---------------------------------------------------


def build_tree(small: Path, n: int | None, tree: Path) -> list[Path]:
    """Copy the first n subset files (all when None) into tree; their paths.

    Always a copy, never links: the changed-file step appends to a file, and
    a hard link would write that change into the corpus itself.
    """
    rels = corpus_files(small)
    if n is not None:
        rels = rels[:n]
    copied = []
    for rel in rels:
        target = tree / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(small / rel, target)
        copied.append(target)
    return copied


def smallest_nonempty(files: Sequence[Path]) -> Path:
    sized = [(f.stat().st_size, str(f)) for f in files]
    nonempty = [s for s in sized if s[0] > 0] or sized
    return Path(min(nonempty)[1])


def file_with_findings(json_text: str, files: Sequence[Path]) -> Path:
    # Prefer a file with findings: the cache must then re-lint it and still
    # report exactly what it reported before.
    ours = {str(f): f for f in files}
    names = sorted({d["filename"] for d in json.loads(json_text)} & ours.keys())
    return ours[names[0]] if names else files[0]


def append_comment(path: Path) -> None:
    # A trailing comment on its own line changes the file's bytes (so the
    # cache must notice) but no finding's position.
    data = path.read_bytes()
    prefix = b"" if data.endswith(b"\n") or not data else b"\n"
    with open(path, "ab") as f:
        f.write(prefix + b"# changed\n")


def canonical_findings(json_text: str) -> list[str]:
    # Sorted, so that a different report order (say, from -j 2) is not a difference.
    return sorted(json.dumps(d, sort_keys=True) for d in json.loads(json_text))


# --- the measurements ------------------------------------------------------


@dataclass
class Results:
    floor: Samples
    cold: Samples
    jobs2: Samples
    startup: Samples
    warm: Samples | None = None
    changed: Samples | None = None
    changed_file: Path | None = None
    startup_file: Path | None = None


def measure_floor(python: Path, files: Sequence[Path], work: Path, times: int) -> Samples:
    listing = work / "files.txt"
    listing.write_text("".join(f"{f}\n" for f in files), encoding="utf-8")
    samples = Samples()
    for _ in range(times):
        run = run_measured([str(python), "-c", FLOOR_SCRIPT, str(listing)], cwd=work)
        # The CPU figure is the script's own process_time of the loop.
        samples.add(Run(cpu=float(run.stdout.strip()), wall=run.wall, stdout=""))
    return samples


def measure(python: Path, lint: list[str], flags: CacheFlags, files: list[Path], tree: Path, work: Path, times: int) -> Results:
    check = [*lint, "check", "--format", "json", "-q", "--exit-zero"]
    no_cache = ["--no-cache"] if flags.usable else []

    def lint_run(*extra: str) -> Run:
        return run_measured([*check, *extra, str(tree)], cwd=work)

    # One untimed run first: the first run after the linter's code changed
    # also compiles its bytecode, which is not what any figure is about.
    _log("warm-up run (untimed)")
    run_measured([*check, *no_cache, "-j", "1", str(files[0])], cwd=work)
    # The floor and the cold run alternate, each ratio taken within a round:
    # a shared machine's speed drifts by a quarter over minutes, which would
    # otherwise land on one figure and not the other.
    floor, cold = Samples(), Samples()
    for i in range(times):
        _log(f"floor (libcst.parse_module), then cold -j 1: round {i + 1} of {times}")
        floor.add(Run(cpu=measure_floor(python, files, work, 1).cpu[0], wall=0.0, stdout=""))
        cold.add(lint_run("-j", "1", *no_cache))
    _log("cold: -j 2")
    jobs2 = repeat(times, lambda: lint_run("-j", "2", *no_cache))
    results = Results(floor=floor, cold=cold, jobs2=jobs2, startup=Samples())

    if flags.usable:
        cache = work / "cache"
        _log("warm: fill the cache, then again")
        lint_run("--cache-dir", str(cache), "-j", "1")
        results.warm = repeat(times, lambda: lint_run("--cache-dir", str(cache), "-j", "1"))
        target = file_with_findings(cold.outputs[0], files)
        results.changed_file = target

        def changed_once() -> Run:
            append_comment(target)  # a fresh change every repeat
            return lint_run("--cache-dir", str(cache), "-j", "1")

        _log(f"one changed file: {target.relative_to(tree)}")
        results.changed = repeat(times, changed_once)

    results.startup_file = smallest_nonempty(files)
    results.startup = measure_startup(lint, flags, results.startup_file, work)
    return results


def measure_startup(lint: list[str], flags: CacheFlags, path: Path, work: Path) -> Samples:
    cache = ["--cache-dir", str(work / "startup-cache")] if flags.usable else []
    cmd = [*lint, "check", *cache, "-q", str(path)]
    _log(f"start-up: {STARTUP_RUNS} runs on {path.name}")
    # Exit 1 just means the file has findings.
    run_measured(cmd, cwd=work, ok_codes=(0, 1))  # fills the cache
    return repeat(STARTUP_RUNS, lambda: run_measured(cmd, cwd=work, ok_codes=(0, 1)))


# --- the report ------------------------------------------------------------


def _s(seconds: float) -> str:
    return f"{seconds:.3f} s"


def _ratio(a: float, b: float) -> str:
    return f"{a / b:.3f}" if b > 0 else "n/a"


def _samples(values: Sequence[float]) -> str:
    return ", ".join(f"{v:.3f}" for v in values)


def report_table(r: Results, flags: CacheFlags) -> list[str]:
    skipped = "skipped (no --cache-dir)"
    floor, cold = r.floor.cpu_median, r.cold.cpu_median
    # The median of the per-round ratios (floor and cold alternate).
    per_round = statistics.median(c / f for c, f in zip(r.cold.cpu, r.floor.cpu))
    rows = [
        ("floor: `libcst.parse_module`, CPU", "—", _s(floor)),
        ("cold CPU ÷ floor", f"{per_round:.3f}", f"cold {_s(cold)}"),
    ]
    if r.warm is not None and r.changed is not None:
        rows.append(("warm CPU ÷ cold CPU", _ratio(r.warm.cpu_median, cold), f"warm {_s(r.warm.cpu_median)}"))
        rows.append(("one changed file CPU ÷ cold CPU", _ratio(r.changed.cpu_median, cold), f"changed {_s(r.changed.cpu_median)}"))
    else:
        rows += [("warm CPU ÷ cold CPU", skipped, ""), ("one changed file CPU ÷ cold CPU", skipped, "")]
    rows.append(("-j 2 wall ÷ -j 1 wall", _ratio(r.jobs2.wall_median, r.cold.wall_median), f"{_s(r.jobs2.wall_median)} / {_s(r.cold.wall_median)}"))
    startup_what = "cached file" if flags.usable else "file, no cache"
    rows.append((f"start-up wall (1 {startup_what}, median of {STARTUP_RUNS})", "—", _s(r.startup.wall_median)))
    lines = ["| figure | ratio | seconds |", "|---|---:|---:|"]
    lines += [f"| {a} | {b} | {c} |" for a, b, c in rows]
    return lines


def report_raw(r: Results) -> list[str]:
    lines = [
        f"- floor CPU: {_samples(r.floor.cpu)}",
        f"- cold -j 1 CPU: {_samples(r.cold.cpu)}; wall: {_samples(r.cold.wall)}",
        f"- cold -j 2 CPU: {_samples(r.jobs2.cpu)}; wall: {_samples(r.jobs2.wall)}",
    ]
    if r.warm is not None and r.changed is not None:
        lines.append(f"- warm CPU: {_samples(r.warm.cpu)}; wall: {_samples(r.warm.wall)}")
        lines.append(f"- one changed file CPU: {_samples(r.changed.cpu)}; wall: {_samples(r.changed.wall)}")
    lines.append(f"- start-up wall: {_samples(r.startup.wall)}")
    return lines


def findings_check(r: Results) -> tuple[str, str]:
    """(which runs were compared, 'yes'/'no ...') for the JSON outputs."""
    runs: dict[str, list[str]] = {"cold": r.cold.outputs, "-j 2": r.jobs2.outputs}
    if r.warm is not None and r.changed is not None:
        runs["warm"] = r.warm.outputs
        runs["after change"] = r.changed.outputs
    reference = canonical_findings(r.cold.outputs[0])
    differing = sorted({name for name, outs in runs.items() for out in outs if canonical_findings(out) != reference})
    verdict = "yes" if not differing else f"no (differs from cold: {', '.join(differing)})"
    return ", ".join(runs), verdict


def print_report(r: Results, flags: CacheFlags, machine: dict[str, str], n_files: int, tree: Path, times: int) -> None:
    print(f"## autograd-lint benchmark: {n_files} files, median of {times} run(s) per CPU figure\n")
    print("\n".join(f"- {k}: {v}" for k, v in machine.items()))
    print()
    print("\n".join(report_table(r, flags)))
    print()
    compared, verdict = findings_check(r)
    print(f"identical findings ({compared}): {verdict}")
    print(f"findings in the cold run: {len(json.loads(r.cold.outputs[0]))}")
    if r.changed_file is not None:
        print(f"changed file: {r.changed_file.relative_to(tree)}")
    if r.startup_file is not None:
        print(f"start-up file: {r.startup_file.relative_to(tree)} ({r.startup_file.stat().st_size} bytes)")
    print("\nraw seconds (every run):\n")
    print("\n".join(report_raw(r)))


# --- command line ----------------------------------------------------------


def _log(message: str) -> None:
    print(f"bench: {message}", file=sys.stderr, flush=True)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description="Benchmark autograd-lint on the pinned corpus subset.")
    p.add_argument("--corpus", type=Path, default=default_dir(), metavar="DIR", help="corpus cache folder (default: %(default)s)")
    p.add_argument("--files", type=int, default=None, metavar="N", help="use only the first N files of the 500-file subset (a quick run)")
    p.add_argument("--python", default=None, metavar="PATH", help="interpreter with autograd-lint and libcst (default: this one if it has them, else the repo's .venv)")
    p.add_argument("--repeat", type=int, default=1, metavar="K", help="runs per CPU figure; the median is reported (default: 1)")
    args = p.parse_args(argv)
    if args.files is not None and args.files < 1:
        p.error("--files must be at least 1")
    if args.repeat < 1:
        p.error("--repeat must be at least 1")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        python = find_python(args.python)
        lint = linter_command(python)
        flags = detect_cache_flags(lint)
        if not flags.usable:
            print(
                "note: `autograd-lint check --help` does not mention --cache-dir / --no-cache; "
                "skipping the warm and one-changed-file figures (cold runs without --no-cache, "
                "start-up runs uncached)\n"
            )
        _, small = ensure_corpus(args.corpus)
        with tempfile.TemporaryDirectory(prefix="agl-bench-") as tmp:
            work = Path(tmp)
            tree = work / "tree"
            files = build_tree(small, args.files, tree)
            if not files:
                raise BenchError(f"no .py files in {small}")
            results = measure(python, lint, flags, files, tree, work, args.repeat)
            print_report(results, flags, machine_info(python, lint), len(files), tree, args.repeat)
    except (BenchError, CorpusError) as e:
        print(f"bench: error: {e}", file=sys.stderr)
        return 2
    except json.JSONDecodeError as e:
        print(f"bench: error: the linter's --format json output is not JSON ({e})", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
