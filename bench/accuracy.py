"""Score autograd-lint on a labelled set of real bug fixes.

Usage: python bench/accuracy.py CASES LABELS [--classes R1,R3] [--linter CMD]
                                 [--json] [--compare OLD.json] [-q]

CASES is a folder of files, LABELS a JSON list of labels in the realbugs
format (see bench/README.md): each names a file, a 1-based line, a class
(R1 graph retention, R2 in-place / step order, R3 grad mode in evaluation,
R4 zeroing), whether a finding there is wanted (`positive`), and whether it
is merely allowed (`optional`, or `needs_other_files`: a bug only other
files of its repository can show).

A finding of class C on a line with a required positive label of class C
is a true positive (once per line); on a line with an optional label, or
a negative one already counted wrong, it is neither required nor wrong; on
any other line of a labelled file it is a false alarm. Files with no label
are not scored. Prints precision and recall per class and overall, every
miss (with its label's note) and every false alarm (with the message), and
with --compare, the change against an earlier --json result.

Uses only the standard library; exits 2 when the linter fails.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

REPO = Path(__file__).resolve().parent.parent
CLASSES = ("R1", "R2", "R3", "R4", "R5")
# A rule code's family digit is its class: AGL1xx -> R1 ... AGL5xx -> R5.
FAMILY = {"1": "R1", "2": "R2", "3": "R3", "4": "R4", "5": "R5"}


@dataclass(frozen=True)
class Finding:
    file: str
    line: int
    code: str
    message: str

    @property
    def cls(self) -> str | None:
        c = self.code
        return FAMILY.get(c[3]) if c.startswith("AGL") and len(c) > 3 else None


@dataclass
class Tally:
    tp: int = 0
    fp: int = 0
    fn: int = 0
    optional_hit: int = 0

    def precision(self) -> float | None:
        return self.tp / (self.tp + self.fp) if self.tp + self.fp else None

    def recall(self) -> float | None:
        return self.tp / (self.tp + self.fn) if self.tp + self.fn else None


@dataclass
class Score:
    tallies: dict[str, Tally] = field(default_factory=lambda: {c: Tally() for c in CLASSES})
    misses: list[tuple[str, int, str, str]] = field(default_factory=list)  # file, line, class, note
    alarms: list[Finding] = field(default_factory=list)

    def total(self) -> Tally:
        t = Tally()
        for x in self.tallies.values():
            t.tp += x.tp
            t.fp += x.fp
            t.fn += x.fn
            t.optional_hit += x.optional_hit
        return t


def default_linter() -> list[str]:
    """The linter of this checkout, run by the interpreter running this script."""
    return [sys.executable, "-m", "autograd_lint"]


def run_linter(cmd: Sequence[str], cases: Path) -> list[Finding]:
    env = dict(os.environ)
    if list(cmd[1:3]) == ["-m", "autograd_lint"]:
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH", "")) if p)
    argv = [*cmd, "check", "--format", "json", "--exit-zero", "--no-cache", str(cases)]
    p = subprocess.run(argv, capture_output=True, text=True, env=env)
    try:
        data = json.loads(p.stdout or "null")
    except json.JSONDecodeError:
        data = None
    if not isinstance(data, list):
        sys.stderr.write(p.stdout[-2000:] + p.stderr[-2000:])
        raise SystemExit(2)
    out = []
    for f in data:
        loc = f.get("location") or {}
        out.append(Finding(os.path.basename(f.get("filename", "")), int(loc.get("row") or 0), f.get("code") or "", f.get("message") or ""))
    return out


def score(findings: Sequence[Finding], labels: Sequence[dict], classes: Sequence[str]) -> Score:
    required: dict[tuple[str, str], dict[int, str]] = defaultdict(dict)
    allowed: dict[tuple[str, str], set[int]] = defaultdict(set)
    files = set()
    for lab in labels:
        files.add(lab["file"])
        if lab.get("class") not in classes or not lab.get("positive"):
            continue
        key = (lab["file"], lab["class"])
        if lab.get("optional") or lab.get("needs_other_files"):
            allowed[key].add(int(lab["line"]))
        else:
            required[key][int(lab["line"])] = lab.get("note", "")
    s = Score()
    hit: set[tuple[str, str, int]] = set()
    counted: set[tuple[str, str, int]] = set()
    for f in sorted(findings, key=lambda f: (f.file, f.line, f.code)):
        cls = f.cls
        if cls not in classes or f.file not in files:
            continue
        key = (f.file, cls, f.line)
        t = s.tallies[cls]
        if f.line in required.get((f.file, cls), {}):
            if key not in hit:
                hit.add(key)
                t.tp += 1
        elif f.line in allowed.get((f.file, cls), set()):
            if key not in counted:
                counted.add(key)
                t.optional_hit += 1
        elif key not in counted:
            # Two codes of one family on one line are one wrong report.
            counted.add(key)
            t.fp += 1
            s.alarms.append(f)
    for (file, cls), lines in sorted(required.items()):
        for line, note in sorted(lines.items()):
            if (file, cls, line) not in hit:
                s.tallies[cls].fn += 1
                s.misses.append((file, line, cls, note))
    return s


def _fmt(x: float | None) -> str:
    return "—" if x is None else f"{x:.3f}"


def as_json(s: Score, classes: Sequence[str]) -> dict:
    def one(t: Tally) -> dict:
        return {"tp": t.tp, "fp": t.fp, "fn": t.fn, "optional_hit": t.optional_hit, "precision": t.precision(), "recall": t.recall()}

    return {
        "classes": {c: one(s.tallies[c]) for c in classes},
        "all": one(s.total()),
        "misses": [{"file": f, "line": n, "class": c, "note": note} for f, n, c, note in s.misses],
        "alarms": [{"file": f.file, "line": f.line, "code": f.code, "message": f.message} for f in s.alarms],
    }


def report(s: Score, classes: Sequence[str], quiet: bool, old: dict | None) -> str:
    lines = ["| class | tp | fp | fn | precision | recall |" + (" recall before |" if old else ""), "|---|---|---|---|---|---|" + ("---|" if old else "")]
    rows = [(c, s.tallies[c]) for c in classes] + [("all", s.total())]
    for name, t in rows:
        before = ""
        if old:
            o = old["all"] if name == "all" else old["classes"].get(name)
            before = f" {_fmt(o['recall']) if o else '—'} |"
        lines.append(f"| {name} | {t.tp} | {t.fp} | {t.fn} | {_fmt(t.precision())} | {_fmt(t.recall())} |{before}")
    if not quiet:
        lines.append("")
        for file, line, cls, note in s.misses:
            lines.append(f"  miss  {file}:{line} {cls}  {note}")
        for f in s.alarms:
            lines.append(f"  alarm {f.file}:{f.line} {f.code}  {f.message}")
    if old:
        was = {(m["file"], m["line"], m["class"]) for m in old["misses"]}
        now = {(f, n, c) for f, n, c, _ in s.misses}
        for f, n, c in sorted(was - now):
            lines.append(f"  found now   {f}:{n} {c}")
        for f, n, c in sorted(now - was):
            lines.append(f"  missed now  {f}:{n} {c}")
    t = s.total()
    lines.append(f"precision={_fmt(t.precision())} recall={_fmt(t.recall())}")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("cases", type=Path)
    ap.add_argument("labels", type=Path)
    ap.add_argument("--classes", default=",".join(CLASSES), help="comma-separated classes to score (default: all)")
    ap.add_argument("--linter", help="the command that runs autograd-lint (default: this checkout's, with this interpreter)")
    ap.add_argument("--json", action="store_true", help="print the score as JSON (for --compare later)")
    ap.add_argument("--compare", type=Path, help="an earlier --json result: list what is found or missed now that was not then")
    ap.add_argument("-q", "--quiet", action="store_true", help="the table only, no misses or alarms")
    a = ap.parse_args(argv)
    classes = [c for c in a.classes.split(",") if c]
    unknown = [c for c in classes if c not in CLASSES]
    if unknown:
        ap.error(f"unknown class {unknown[0]!r} (known: {', '.join(CLASSES)})")
    labels = json.loads(a.labels.read_text(encoding="utf-8"))
    cmd = shlex.split(a.linter) if a.linter else default_linter()
    s = score(run_linter(cmd, a.cases), labels, classes)
    if a.json:
        print(json.dumps(as_json(s, classes), indent=1))
        return 0
    old = json.loads(a.compare.read_text(encoding="utf-8")) if a.compare else None
    print(report(s, classes, a.quiet, old))
    return 0


if __name__ == "__main__":
    sys.exit(main())
