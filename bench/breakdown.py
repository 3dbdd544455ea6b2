"""Where a cold run's CPU goes, part by part, and what ratio to pyflakes
removing each part would leave: the bound any speed-up of that part can
reach (issue 27's "cold CPU ≤ 2.0× pyflakes").

Usage: python bench/breakdown.py [--corpus DIR] [--files N] [--repeat K]

Unlike bench.py, which only runs the linter as a subprocess, this script
also runs the engine's stages in its own process, one file at a time, each
timed alone: CPython's parse, the lowering to the IR, the interpretation
with the rules' observers and again without them, the summary and calls a
project run exports. It tells apart the files in which some enabled rule
has a candidate (an item a rule reports unless a condition refutes it) from
those in which none has: a linter that knew, at no cost, which files have
no candidate could skip interpreting them (as far as no other file needs
their summary), and no linter that interprets them can go below the ratio
left without them. So run it with the interpreter that has autograd-lint
installed (the repository's .venv); pyflakes is run with the same one.

The cold run and pyflakes are whole processes (user + sys CPU), run like
bench.py's and alternated round by round; the parts are CPU seconds of this
process. "The rest" is what the cold run spends besides the parts measured
here (start-up, discovery, the LibCST pass of files with a finding, cache
and output); it is the cold run minus the parts, so noise between the two
measurements lands there. A benchmark, not a test: it exits 0 whatever the
numbers are (2 when the linter or the corpus fetch fails).
"""

from __future__ import annotations

import argparse
import ast
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench import BenchError, build_tree, linter_command, pyflakes_command, run_measured  # noqa: E402
from corpus import CorpusError, default_dir, ensure_corpus  # noqa: E402

# The parts timed, in the table's order.
PARTS = ("parse", "lower", "interpret_candidates", "interpret_quiet", "export")
LABELS = {
    "parse": "CPython's parse (`ast.parse`)",
    "lower": "lowering to the IR",
    "interpret_candidates": "interpretation, files where a rule has a candidate",
    "interpret_quiet": "interpretation, files where no rule has one",
    "export": "summary and calls exported",
}


@dataclass
class Parts:
    """CPU seconds of each stage over the files, and how many files each
    kind of file was."""

    seconds: dict[str, float] = field(default_factory=lambda: dict.fromkeys(PARTS, 0.0))
    # Of the interpretation, what the rules' observers add: in files with a
    # candidate, and in the others.
    observers: dict[str, float] = field(default_factory=lambda: {"interpret_candidates": 0.0, "interpret_quiet": 0.0})
    with_candidates: int = 0
    quiet: int = 0
    not_parsed: int = 0  # not decoded, skipped (`skip-file`, no trigger word of an enabled rule), or CPython cannot parse it


def measure_parts(paths: Sequence[Path], settings=None) -> Parts:
    """Each engine stage timed alone over ``paths``, with the default rule
    selection (or ``settings``), as a command-line run lints a file whose
    every report needs another module or none (no LibCST pass)."""
    from autograd_lint import catalog
    from autograd_lint.analysis.lower_ast import lower
    from autograd_lint.analysis.module import ModuleAnalysis
    from autograd_lint.runner import batch_collection, collected_after
    from autograd_lint.settings import Settings, enabled_for
    from autograd_lint.triage import decoded, without_parse

    if settings is None:
        settings = Settings(enabled=catalog.resolve_selection(None))
    rules = catalog.rule_instances()
    out = Parts()
    clock = time.process_time
    batch_collection()
    for path in paths:
        source = path.read_bytes()
        enabled = enabled_for(str(path), settings)
        # The engine's own triage: what it does not parse is not timed.
        text = decoded(str(path), source, settings)
        if not isinstance(text, str) or without_parse(str(path), text, source, enabled) is not None:
            out.not_parsed += 1
            continue
        with collected_after():
            t = clock()
            try:
                tree = ast.parse(text, filename=str(path))
            except (SyntaxError, ValueError, RecursionError):
                out.not_parsed += 1
                continue
            out.seconds["parse"] += clock() - t
            t = clock()
            lowered = lower(tree, text)
            out.seconds["lower"] += clock() - t
            t = clock()
            analysis = ModuleAnalysis(None, str(path), settings.rule_options, lowered=lowered)
            interpreted = clock() - t
            candidate = any(next(iter(rule.selected(analysis, settings)), None) is not None for rule in rules if rule.code in enabled)
            t = clock()
            _ = analysis.summary, analysis.call_records  # (computed when first read)
            out.seconds["export"] += clock() - t
            analysis.close()
        kind = "interpret_candidates" if candidate else "interpret_quiet"
        out.seconds[kind] += interpreted
        if candidate:
            out.with_candidates += 1
        else:
            out.quiet += 1
        # The same file without observers (a fresh IR: closing the analysis unlinked it).
        with collected_after():
            lowered = lower(tree, text)
            t = clock()
            bare = ModuleAnalysis(None, str(path), settings.rule_options, observe=False, lowered=lowered)
            out.observers[kind] += interpreted - (clock() - t)
            bare.close()
    return out


def bounds(cold: float, pyflakes: float, parts: Parts) -> list[tuple[str, float]]:
    """Cold ÷ pyflakes with each part removed (never below the parts left)."""

    def without(seconds: float) -> float:
        return max(cold - seconds, 0.0) / pyflakes

    quiet = parts.seconds["interpret_quiet"]
    observers = sum(parts.observers.values())
    return [
        ("nothing (today)", cold / pyflakes),
        ("every observer's work (the rules' share of the interpretation)", without(observers)),
        ("the interpretation of every file where no rule has a candidate, known beforehand at no cost", without(quiet)),
        ("both", without(quiet + parts.observers["interpret_candidates"])),
        ("all of the interpretation", without(quiet + parts.seconds["interpret_candidates"])),
    ]


def table(cold: float, pyflakes: float, parts: Parts) -> list[str]:
    rows = ["| part | CPU s | of the cold run |", "|---|---:|---:|", f"| cold run, whole process (`check --no-cache -j 1`) | {cold:.2f} | 100% |"]
    counts = {"interpret_candidates": parts.with_candidates, "interpret_quiet": parts.quiet}
    for name in PARTS:
        label = LABELS[name] + (f" ({counts[name]})" if name in counts else "")
        rows.append(f"| {label} | {parts.seconds[name]:.2f} | {parts.seconds[name] / cold:.0%} |")
        if name == "interpret_quiet":
            observers = sum(parts.observers.values())
            rows.append(f"| of the interpretation (both kinds): the rules' observers | {observers:.2f} | {observers / cold:.0%} |")
    rest = cold - sum(parts.seconds.values())
    rows.append(f"| the rest (start-up, discovery, LibCST for files with a finding, cache, output) | {rest:.2f} | {rest / cold:.0%} |")
    rows.append(f"| pyflakes, whole process | {pyflakes:.2f} | {pyflakes / cold:.0%} |")
    rows += ["", "| removed | cold ÷ pyflakes left |", "|---|---:|"]
    rows += [f"| {what} | {ratio:.2f} |" for what, ratio in bounds(cold, pyflakes, parts)]
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="Where autograd-lint's cold CPU goes on the corpus subset, and the bounds it leaves.")
    p.add_argument("--corpus", type=Path, default=default_dir(), metavar="DIR", help="corpus cache folder (default: %(default)s)")
    p.add_argument("--files", type=int, default=None, metavar="N", help="use only the first N files of the subset")
    p.add_argument("--repeat", type=int, default=1, metavar="K", help="rounds of the cold run and pyflakes; medians are reported (default: 1)")
    args = p.parse_args(argv)
    python = Path(sys.executable)
    try:
        pyflakes = pyflakes_command(python)
        if pyflakes is None:
            raise BenchError(f"{python} cannot import pyflakes (pip install pyflakes)")
        _, small = ensure_corpus(args.corpus)
        with tempfile.TemporaryDirectory(prefix="agl-breakdown-") as tmp:
            tree = Path(tmp) / "tree"
            files = build_tree(small, args.files, tree)
            if not files:
                raise BenchError(f"no .py files in {small}")
            lint = linter_command(python)
            cold, flakes = [], []
            for _ in range(max(args.repeat, 1)):
                cold.append(run_measured([*lint, "check", "--no-cache", "-j", "1", "--format", "json", "-q", "--exit-zero", str(tree)], tree).cpu)
                flakes.append(run_measured([*pyflakes, str(tree)], tree, ok_codes=(0, 1)).cpu)
            parts = measure_parts(files)
    except (BenchError, CorpusError) as e:
        print(f"breakdown: error: {e}", file=sys.stderr)
        return 2
    print(f"{len(files)} files ({parts.not_parsed} not parsed: not decoded, skip-file, no trigger word, or a syntax error), python {sys.version.split()[0]}\n")
    print("\n".join(table(statistics.median(cold), statistics.median(flakes), parts)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
