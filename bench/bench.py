"""Benchmark autograd-lint against LibCST's parser on the pinned corpus subset.

Usage: python bench/bench.py [--corpus DIR] [--files N] [--python PATH] [--repeat K] [--full]

Prints a Markdown table of ratios (cold / floor, cold / ast.parse, cold /
pyflakes, warm / cold, one changed file / cold, -j 2 / -j 1, start-up /
pyflakes start-up) with the raw seconds, the peak memory of the -j 2 run's
process tree, and the machine they came from. --full adds one cold -j 2 run
on the whole corpus. A benchmark, not a test: it exits 0 whatever the
timings are (it exits 2 only when the linter itself or the corpus fetch
fails, since then there is nothing to report). See bench/README.md for what
each figure means.
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
# Often enough to see a worker's peak (each holds one file's trees for far
# longer than this), rarely enough that the sampling costs next to nothing.
SAMPLE_SECONDS = 0.05
# pyflakes exits 1 when it reports anything, which on a real corpus it does.
PYFLAKES_OK = (0, 1)

# Runs in the measured interpreter: only the parse loop is timed, so neither
# interpreter start-up nor the parser's import counts. `{parse}` is the
# parser called on each file's bytes.
_PARSE_LOOP = """\
import sys, time, warnings
{imports}
warnings.simplefilter("ignore")  # SyntaxWarnings (bad escapes) are not parsing
paths = open(sys.argv[1], encoding="utf-8").read().splitlines()
start = time.process_time()
for p in paths:
    with open(p, "rb") as f:
        data = f.read()
    try:
        {parse}(data)
    except Exception:
        pass
print(time.process_time() - start)
"""

# The floor: LibCST's parse, which no linter built on LibCST goes below.
FLOOR_SCRIPT = _PARSE_LOOP.format(imports="import libcst", parse="libcst.parse_module")

# CPython's own parser: what a linter built on the ast module (pyflakes,
# say) pays before it does anything else.
AST_SCRIPT = _PARSE_LOOP.format(imports="import ast", parse="ast.parse")


class BenchError(Exception):
    """The linter (or the floor script) did not run; nothing to measure."""


@dataclass(frozen=True)
class Memory:
    """Peaks over the samples of one run's process tree, in KiB of VmRSS."""

    tree_kib: int  # the largest sum over the root and all its descendants
    largest_kib: int  # the largest single process at any sample
    samples: int


@dataclass
class Run:
    cpu: float  # user + sys of the child and the children it waited for
    wall: float
    stdout: str
    memory: Memory | None = None  # only when the run was sampled


@dataclass
class Samples:
    """Every run of one figure; the table reports the median."""

    cpu: list[float] = field(default_factory=list)
    wall: list[float] = field(default_factory=list)
    outputs: list[str] = field(default_factory=list)
    memory: list[Memory] = field(default_factory=list)

    def add(self, run: Run) -> None:
        self.cpu.append(run.cpu)
        self.wall.append(run.wall)
        self.outputs.append(run.stdout)
        if run.memory is not None:
            self.memory.append(run.memory)

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


def run_measured(cmd: Sequence[str], cwd: Path, ok_codes: tuple[int, ...] = (0,), sample_memory: bool = False) -> Run:
    """Run cmd to completion; its whole-process CPU and wall seconds.

    RUSAGE_CHILDREN only grows when a child is reaped, and runs are strictly
    sequential, so the delta around one process is that process alone (plus
    any workers it waited for, which is what -j N should be charged). The
    sampling (sample_memory) runs here, in this process, so its own CPU is
    never charged to the child.
    """
    cpu_before = _children_cpu()
    start = time.perf_counter()
    memory = None
    with subprocess.Popen(list(cmd), cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_ENV) as proc:
        try:
            if sample_memory:
                (stdout, stderr), memory = _communicate_sampling(proc)
            else:
                stdout, stderr = proc.communicate()
        except BaseException:  # as subprocess.run does: never leave it running
            proc.kill()
            raise
    wall = time.perf_counter() - start
    cpu = _children_cpu() - cpu_before
    if proc.returncode not in ok_codes:
        tail = stderr.strip().splitlines()[-10:]
        raise BenchError(f"exit {proc.returncode} from: {' '.join(cmd)}\n" + "\n".join(tail))
    return Run(cpu=cpu, wall=wall, stdout=stdout, memory=memory)


# --- the memory of a process tree (Linux /proc) -----------------------------


def memory_sampling_supported() -> bool:
    # Both files are Linux's; `children` also needs CONFIG_PROC_CHILDREN.
    me = os.getpid()
    return Path(f"/proc/{me}/status").is_file() and Path(f"/proc/{me}/task/{me}/children").is_file()


def _rss_kib(pid: int) -> int:
    # A zombie (exited, not yet reaped) has no VmRSS line: it holds no memory.
    # A process may also be gone between being listed and being read.
    try:
        with open(f"/proc/{pid}/status", encoding="ascii", errors="replace") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return 0


def _children(pid: int) -> list[int]:
    # Each thread lists only the children it forked itself, and a pool may
    # fork its workers from a thread other than the main one: read them all.
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return []
    kids: list[int] = []
    for tid in tids:
        try:
            kids += [int(c) for c in Path(f"/proc/{pid}/task/{tid}/children").read_text().split()]
        except (OSError, ValueError):
            continue
    return kids


def tree_rss_kib(root: int) -> list[int]:
    """VmRSS (KiB) of root and of every descendant alive now, one per process."""
    seen: set[int] = set()
    pending, sizes = [root], []
    while pending:
        pid = pending.pop()
        if pid in seen:  # a pid reused mid-walk must not loop
            continue
        seen.add(pid)
        sizes.append(_rss_kib(pid))
        pending += _children(pid)
    return sizes


def _communicate_sampling(proc: subprocess.Popen[str]) -> tuple[tuple[str, str], Memory]:
    """proc.communicate(), sampling the tree's memory every SAMPLE_SECONDS.

    communicate with a timeout keeps reading the pipes (so a large JSON
    report cannot block the child), and may be called again after it times
    out without losing output.
    """
    peak_tree = peak_one = count = 0
    while True:
        sizes = tree_rss_kib(proc.pid)
        peak_tree, peak_one, count = max(peak_tree, sum(sizes)), max(peak_one, max(sizes)), count + 1
        try:
            out = proc.communicate(timeout=SAMPLE_SECONDS)
        except subprocess.TimeoutExpired:
            continue
        return out, Memory(tree_kib=peak_tree, largest_kib=peak_one, samples=count)


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


def pyflakes_command(python: Path) -> list[str] | None:
    """`PYTHON -m pyflakes`, or None when that interpreter cannot import it.

    Asked of the measured interpreter, not this one: that is where it runs.
    """
    found = subprocess.run([str(python), "-c", "import pyflakes"], capture_output=True)
    return [str(python), "-m", "pyflakes"] if found.returncode == 0 else None


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


def machine_info(python: Path, lint: Sequence[str], pyflakes: Sequence[str] | None) -> dict[str, str]:
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
        "pyflakes": _output([str(python), "-c", "import pyflakes; print(pyflakes.__version__)"]) if pyflakes else "not installed",
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
    ast_floor: Samples
    cold: Samples
    jobs2: Samples
    startup: Samples
    pyflakes: Samples | None = None  # None: not importable, or it failed (see notes)
    pyflakes_startup: Samples | None = None
    warm: Samples | None = None
    changed: Samples | None = None
    changed_file: Path | None = None
    startup_file: Path | None = None
    full: Run | None = None  # --full: one cold -j 2 run on the whole corpus
    full_files: int = 0
    notes: list[str] = field(default_factory=list)  # figures skipped, and why


def measure_floor(python: Path, files: Sequence[Path], work: Path, times: int, script: str = FLOOR_SCRIPT) -> Samples:
    listing = work / "files.txt"
    listing.write_text("".join(f"{f}\n" for f in files), encoding="utf-8")
    samples = Samples()
    for _ in range(times):
        run = run_measured([str(python), "-c", script, str(listing)], cwd=work)
        # The CPU figure is the script's own process_time of the loop.
        samples.add(Run(cpu=float(run.stdout.strip()), wall=run.wall, stdout=""))
    return samples


def run_comparison(cmd: Sequence[str], work: Path, notes: list[str]) -> Run | None:
    """run_measured for pyflakes; None (and a note) when it fails.

    Its failure skips its figures instead of failing the benchmark, which
    exits 2 only when the linter itself (or the corpus fetch) fails.
    """
    try:
        return run_measured(cmd, cwd=work, ok_codes=PYFLAKES_OK)
    except BenchError as e:
        notes.append(f"pyflakes figures skipped, it failed: {e}")
        return None


def measure(
    python: Path, lint: list[str], flags: CacheFlags, files: list[Path], tree: Path, work: Path, times: int, pyflakes: list[str] | None, sample_memory: bool
) -> Results:
    check = [*lint, "check", "--format", "json", "-q", "--exit-zero"]
    no_cache = ["--no-cache"] if flags.usable else []

    def lint_run(*extra: str, sample: bool = False) -> Run:
        return run_measured([*check, *extra, str(tree)], cwd=work, sample_memory=sample)

    # One untimed run first: the first run after the linter's code changed
    # also compiles its bytecode, which is not what any figure is about.
    _log("warm-up run (untimed)")
    run_measured([*check, *no_cache, "-j", "1", str(files[0])], cwd=work)
    if pyflakes is not None:  # the same for pyflakes' own bytecode
        run_comparison([*pyflakes, str(files[0])], work, [])
    # The floors, pyflakes and the cold run alternate, each ratio taken
    # within a round: a shared machine's speed drifts by a quarter over
    # minutes, which would otherwise land on one figure and not the other.
    floor, ast_floor, cold = Samples(), Samples(), Samples()
    flakes: Samples | None = Samples() if pyflakes is not None else None
    notes: list[str] = []
    for i in range(times):
        _log(f"floor (libcst.parse_module), ast.parse, pyflakes, then cold -j 1: round {i + 1} of {times}")
        floor.add(Run(cpu=measure_floor(python, files, work, 1).cpu[0], wall=0.0, stdout=""))
        ast_floor.add(Run(cpu=measure_floor(python, files, work, 1, AST_SCRIPT).cpu[0], wall=0.0, stdout=""))
        if pyflakes is not None and flakes is not None:
            run = run_comparison([*pyflakes, str(tree)], work, notes)
            if run is None:  # failed: no pyflakes figure at all from here on
                pyflakes = flakes = None
            else:
                flakes.add(run)
        cold.add(lint_run("-j", "1", *no_cache))
    _log("cold: -j 2" + (f" (memory sampled every {SAMPLE_SECONDS * 1000:.0f} ms)" if sample_memory else ""))
    jobs2 = repeat(times, lambda: lint_run("-j", "2", *no_cache, sample=sample_memory))
    results = Results(floor=floor, ast_floor=ast_floor, cold=cold, jobs2=jobs2, startup=Samples(), pyflakes=flakes, notes=notes)

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
    results.startup, results.pyflakes_startup = measure_startup(lint, flags, results.startup_file, work, pyflakes, notes)
    return results


def measure_startup(
    lint: list[str], flags: CacheFlags, path: Path, work: Path, pyflakes: list[str] | None, notes: list[str]
) -> tuple[Samples, Samples | None]:
    """The linter's start-up runs, and pyflakes' on the same file when it is there.

    The two alternate run by run, for the same reason as the CPU rounds.
    """
    cache = ["--cache-dir", str(work / "startup-cache")] if flags.usable else []
    cmd = [*lint, "check", *cache, "-q", str(path)]
    _log(f"start-up: {STARTUP_RUNS} runs on {path.name}" + (", each beside one of pyflakes" if pyflakes else ""))
    # Exit 1 just means the file has findings.
    run_measured(cmd, cwd=work, ok_codes=(0, 1))  # fills the cache
    linter = Samples()
    flakes: Samples | None = Samples() if pyflakes is not None else None
    for _ in range(STARTUP_RUNS):
        linter.add(run_measured(cmd, cwd=work, ok_codes=(0, 1)))
        if pyflakes is not None and flakes is not None:
            run = run_comparison([*pyflakes, str(path)], work, notes)
            if run is None:
                pyflakes = flakes = None
            else:
                flakes.add(run)
    return linter, flakes


def measure_full(lint: list[str], flags: CacheFlags, src: Path, work: Path, sample_memory: bool) -> tuple[Run, int]:
    """One cold -j 2 run on the whole corpus, and the number of files in it.

    It reads DIR/src in place, with no copy: --no-cache writes nothing, and
    DIR/src holds only .py files, so no configuration there points a cache
    into it either (without --no-cache the default cache lands in cwd, work).
    """
    n_files = len(corpus_files(src))
    no_cache = ["--no-cache"] if flags.usable else []
    cmd = [*lint, "check", "--format", "json", "-q", "--exit-zero", *no_cache, "-j", "2", str(src)]
    _log(f"--full: cold -j 2 on all {n_files} files of {src} (several minutes)")
    return run_measured(cmd, cwd=work, sample_memory=sample_memory), n_files


# --- the report ------------------------------------------------------------


def _s(seconds: float) -> str:
    return f"{seconds:.3f} s"


def _ratio(a: float, b: float) -> str:
    return f"{a / b:.3f}" if b > 0 else "n/a"


def _per_round(num: Samples, den: Samples) -> str:
    # The median of the per-round ratios (the two alternate, round by round).
    ratios = [n / d for n, d in zip(num.cpu, den.cpu) if d > 0]
    return f"{statistics.median(ratios):.3f}" if ratios else "n/a"


def _samples(values: Sequence[float]) -> str:
    return ", ".join(f"{v:.3f}" for v in values)


def _mib(kib: float) -> str:
    return f"{kib / 1024:.1f} MiB"


def _per_file(kib: float, n_files: int) -> str:
    return f"{kib / n_files:.0f} KiB" if n_files else "n/a"


def _median_memory(memory: Sequence[Memory]) -> tuple[float, float]:
    """(tree, largest) peaks in KiB: the median over the runs of each."""
    return statistics.median(m.tree_kib for m in memory), statistics.median(m.largest_kib for m in memory)


def report_table(r: Results, flags: CacheFlags) -> list[str]:
    skipped = "skipped (no --cache-dir)"
    no_flakes = "skipped (no pyflakes: see note)"
    floor, cold = r.floor.cpu_median, r.cold.cpu_median
    rows = [
        ("floor: `libcst.parse_module`, CPU", "—", _s(floor)),
        ("cold CPU ÷ floor", _per_round(r.cold, r.floor), f"cold {_s(cold)}"),
        ("cold CPU ÷ `ast.parse` CPU", _per_round(r.cold, r.ast_floor), f"`ast.parse` {_s(r.ast_floor.cpu_median)}"),
    ]
    if r.pyflakes is not None:
        rows.append(("cold CPU ÷ pyflakes CPU", _per_round(r.cold, r.pyflakes), f"pyflakes {_s(r.pyflakes.cpu_median)}"))
    else:
        rows.append(("cold CPU ÷ pyflakes CPU", no_flakes, ""))
    if r.warm is not None and r.changed is not None:
        rows.append(("warm CPU ÷ cold CPU", _ratio(r.warm.cpu_median, cold), f"warm {_s(r.warm.cpu_median)}"))
        rows.append(("one changed file CPU ÷ cold CPU", _ratio(r.changed.cpu_median, cold), f"changed {_s(r.changed.cpu_median)}"))
    else:
        rows += [("warm CPU ÷ cold CPU", skipped, ""), ("one changed file CPU ÷ cold CPU", skipped, "")]
    rows.append(("-j 2 wall ÷ -j 1 wall", _ratio(r.jobs2.wall_median, r.cold.wall_median), f"{_s(r.jobs2.wall_median)} / {_s(r.cold.wall_median)}"))
    startup_what = "cached file" if flags.usable else "file, no cache"
    rows.append((f"start-up wall (1 {startup_what}, median of {STARTUP_RUNS})", "—", _s(r.startup.wall_median)))
    if r.pyflakes_startup is not None:
        flakes_startup = r.pyflakes_startup.wall_median
        rows.append(("start-up wall ÷ pyflakes start-up wall", _ratio(r.startup.wall_median, flakes_startup), f"pyflakes {_s(flakes_startup)}"))
    else:
        rows.append(("start-up wall ÷ pyflakes start-up wall", no_flakes, ""))
    lines = ["| figure | ratio | seconds |", "|---|---:|---:|"]
    lines += [f"| {a} | {b} | {c} |" for a, b, c in rows]
    return lines


def memory_table(title: str, memory: Sequence[Memory], n_files: int) -> list[str]:
    tree, largest = _median_memory(memory)
    rows = [
        ("whole process tree (sum of VmRSS)", _mib(tree)),
        ("largest single process", _mib(largest)),
        (f"per file (tree ÷ {n_files} files)", _per_file(tree, n_files)),
    ]
    lines = [f"| {title} | peak |", "|---|---:|"]
    lines += [f"| {a} | {b} |" for a, b in rows]
    return lines


def full_table(run: Run, n_files: int) -> list[str]:
    rows = [("wall", _s(run.wall)), ("CPU (user + sys, all processes)", _s(run.cpu))]
    if run.memory is not None:
        rows += [
            ("peak RSS, whole process tree", _mib(run.memory.tree_kib)),
            ("peak RSS, largest single process", _mib(run.memory.largest_kib)),
            (f"peak RSS per file (tree ÷ {n_files} files)", _per_file(run.memory.tree_kib, n_files)),
        ]
    rows.append(("findings", str(len(json.loads(run.stdout)))))
    lines = ["| figure | value |", "|---|---:|"]
    lines += [f"| {a} | {b} |" for a, b in rows]
    return lines


def report_raw(r: Results) -> list[str]:
    lines = [
        f"- floor CPU: {_samples(r.floor.cpu)}",
        f"- `ast.parse` CPU: {_samples(r.ast_floor.cpu)}",
    ]
    if r.pyflakes is not None:
        lines.append(f"- pyflakes CPU: {_samples(r.pyflakes.cpu)}; wall: {_samples(r.pyflakes.wall)}")
    lines += [
        f"- cold -j 1 CPU: {_samples(r.cold.cpu)}; wall: {_samples(r.cold.wall)}",
        f"- cold -j 2 CPU: {_samples(r.jobs2.cpu)}; wall: {_samples(r.jobs2.wall)}",
    ]
    if r.jobs2.memory:
        peaks = ", ".join(f"{m.tree_kib / 1024:.1f}/{m.largest_kib / 1024:.1f} ({m.samples} samples)" for m in r.jobs2.memory)
        lines.append(f"- cold -j 2 peak RSS, tree/largest MiB: {peaks}")
    if r.warm is not None and r.changed is not None:
        lines.append(f"- warm CPU: {_samples(r.warm.cpu)}; wall: {_samples(r.warm.wall)}")
        lines.append(f"- one changed file CPU: {_samples(r.changed.cpu)}; wall: {_samples(r.changed.wall)}")
    lines.append(f"- start-up wall: {_samples(r.startup.wall)}")
    if r.pyflakes_startup is not None:
        lines.append(f"- pyflakes start-up wall: {_samples(r.pyflakes_startup.wall)}")
    if r.full is not None and r.full.memory is not None:
        lines.append(f"- --full: {r.full.memory.samples} memory samples")
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
    if r.jobs2.memory:
        title = f"memory, cold -j 2 (sampled every {SAMPLE_SECONDS * 1000:.0f} ms, median of {len(r.jobs2.memory)} run(s))"
        print("\n".join(memory_table(title, r.jobs2.memory, n_files)))
        print()
    for note in r.notes:
        print(f"note: {note}")
    compared, verdict = findings_check(r)
    print(f"identical findings ({compared}): {verdict}")
    print(f"findings in the cold run: {len(json.loads(r.cold.outputs[0]))}")
    if r.changed_file is not None:
        print(f"changed file: {r.changed_file.relative_to(tree)}")
    if r.startup_file is not None:
        print(f"start-up file: {r.startup_file.relative_to(tree)} ({r.startup_file.stat().st_size} bytes)")
    if r.full is not None:
        print(f"\n### whole corpus (--full): {r.full_files} files, one cold -j 2 run\n")
        print("\n".join(full_table(r.full, r.full_files)))
    print("\nraw figures (every run):\n")
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
    p.add_argument("--full", action="store_true", help="also run the cold -j 2 linter once on the whole corpus DIR/src (several minutes)")
    args = p.parse_args(argv)
    if args.files is not None and args.files < 1:
        p.error("--files must be at least 1")
    if args.repeat < 1:
        p.error("--repeat must be at least 1")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    # The untimed warm-up run writes the bytecode every timed run reads; with
    # PYTHONDONTWRITEBYTECODE set, every run would compile the modules
    # changed since their .pyc was last written (seen: 6 ms of a 60 ms start-up).
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
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
        pyflakes = pyflakes_command(python)
        if pyflakes is None:
            print(f"note: {python} cannot import pyflakes; skipping the pyflakes CPU and start-up figures\n")
        sample_memory = memory_sampling_supported()
        if not sample_memory:
            print("note: no /proc/PID/status and /proc/PID/task/TID/children here (Linux only); skipping the memory figures\n")
        src, small = ensure_corpus(args.corpus)
        with tempfile.TemporaryDirectory(prefix="agl-bench-") as tmp:
            work = Path(tmp)
            tree = work / "tree"
            files = build_tree(small, args.files, tree)
            if not files:
                raise BenchError(f"no .py files in {small}")
            results = measure(python, lint, flags, files, tree, work, args.repeat, pyflakes, sample_memory)
            if args.full:
                results.full, results.full_files = measure_full(lint, flags, src, work, sample_memory)
            print_report(results, flags, machine_info(python, lint, pyflakes), len(files), tree, args.repeat)
    except (BenchError, CorpusError) as e:
        print(f"bench: error: {e}", file=sys.stderr)
        return 2
    except json.JSONDecodeError as e:
        print(f"bench: error: the linter's --format json output is not JSON ({e})", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
