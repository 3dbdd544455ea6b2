"""Content fingerprints of findings, and the baseline file built from them.

A fingerprint identifies a finding by what it is about, not by where it is,
so it survives lines being added or removed above it:

    sha256("autograd-lint/v1" NUL code NUL path NUL line-text NUL index)

- ``path``: the file's path relative to the current folder (the project root
  in CI), with forward slashes; a path outside it stays absolute.
- ``line-text``: the source line the finding starts on, stripped, with runs of
  whitespace collapsed to one space (re-indenting does not change it).
- ``index``: how many earlier findings (in file order) share the same code,
  path and line text, so identical lines (``losses.append(loss)`` in two
  loops) still get distinct fingerprints.

The same fingerprints are SARIF's ``partialFingerprints`` and the baseline's
keys. A baseline (``--write-baseline FILE``) stores one entry per finding;
``--baseline FILE`` hides a finding while an unused entry with its fingerprint
remains, so a file with two baselined copies of a bug and a new third copy
reports exactly one.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections import Counter
from pathlib import Path
from typing import Callable, Sequence

from autograd_lint.finding import Finding, lines_for

FINGERPRINT_VERSION = "autograd-lint/v1"
BASELINE_VERSION = 1

# Returns a file's lines (without line endings), or None when unavailable.
LineSource = Callable[[str], "Sequence[str] | None"]


class BaselineError(Exception):
    """A baseline file that cannot be read or is not a baseline (one line)."""


def relative_path(path: str, root: str | None = None) -> str:
    """``path`` relative to ``root`` (default: the current folder) with
    forward slashes, or absolute (still forward slashes) when it lies outside
    ``root``. Stdin without a name stays ``-``."""
    if path == "-":
        return path
    root = os.path.abspath(root if root is not None else os.getcwd())
    absolute = os.path.abspath(path)
    try:
        rel = os.path.relpath(absolute, root)
    except ValueError:  # another drive (Windows)
        return Path(absolute).as_posix()
    if rel == os.pardir or rel.startswith(os.pardir + os.sep):
        return Path(absolute).as_posix()
    return Path(rel).as_posix()


def normalize_line(line: str | None) -> str:
    return " ".join((line or "").split())


def line_text(f: Finding, lines_of: LineSource) -> str:
    lines = lines_for(f, lines_of)
    if not lines or not 1 <= f.start.row <= len(lines):
        return ""
    return normalize_line(lines[f.start.row - 1])


def _hash(code: str, path: str, text: str, index: int) -> str:
    h = hashlib.sha256()
    for part in (FINGERPRINT_VERSION, code, path, text, str(index)):
        h.update(part.encode("utf-8", "surrogatepass"))
        h.update(b"\x00")
    return h.hexdigest()


def fingerprints(findings: Sequence[Finding], lines_of: LineSource, root: str | None = None) -> list[str]:
    """One fingerprint per finding, in the order given. The occurrence index
    counts in file order (row, column), whatever order ``findings`` is in."""
    keys = [(f.code, relative_path(f.path, root), line_text(f, lines_of)) for f in findings]
    order = sorted(range(len(findings)), key=lambda i: findings[i].sort_key())
    seen: Counter[tuple[str, str, str]] = Counter()
    out = [""] * len(findings)
    for i in order:
        key = keys[i]
        out[i] = _hash(*key, seen[key])
        seen[key] += 1
    return out


# --- the baseline file -----------------------------------------------------------


def render_baseline(findings: Sequence[Finding], lines_of: LineSource, root: str | None = None) -> str:
    prints = fingerprints(findings, lines_of, root)
    entries = sorted(
        (
            {
                "code": f.code,
                "path": relative_path(f.path, root),
                "fingerprint": fp,
                # For people reading the file; matching ignores it.
                "row": f.start.row,
            }
            for f, fp in zip(findings, prints)
        ),
        key=lambda e: (e["path"], e["row"], e["code"], e["fingerprint"]),
    )
    data = {"version": BASELINE_VERSION, "tool": "autograd-lint", "findings": entries}
    return json.dumps(data, indent=2) + "\n"


def write_baseline(path: str, findings: Sequence[Finding], lines_of: LineSource, root: str | None = None) -> None:
    text = render_baseline(findings, lines_of, root)
    try:
        with open(path, "w", encoding="utf-8", newline="\n") as f:
            f.write(text)
    except OSError as e:
        raise BaselineError(f"cannot write baseline {path}: {e.strerror or e}") from None


def load_baseline(path: str) -> Counter[str]:
    """The baseline's fingerprints, with how many times each occurs."""
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except OSError as e:
        raise BaselineError(f"cannot read baseline {path}: {e.strerror or e}") from None
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        detail = str(e).splitlines()[0] if str(e) else type(e).__name__
        raise BaselineError(f"invalid baseline {path}: not JSON ({detail})") from None
    if not isinstance(data, dict) or not isinstance(data.get("findings"), list):
        raise BaselineError(f"invalid baseline {path}: expected an object with a 'findings' list")
    if data.get("version") != BASELINE_VERSION:
        raise BaselineError(f"invalid baseline {path}: unsupported version {data.get('version')!r} (expected {BASELINE_VERSION})")
    counts: Counter[str] = Counter()
    for i, entry in enumerate(data["findings"]):
        fp = entry.get("fingerprint") if isinstance(entry, dict) else None
        if not isinstance(fp, str) or not fp:
            raise BaselineError(f"invalid baseline {path}: findings[{i}] has no 'fingerprint' string")
        counts[fp] += 1
    return counts


def filter_new(
    findings: Sequence[Finding], baseline: Counter[str], lines_of: LineSource, root: str | None = None
) -> list[Finding]:
    """The findings the baseline does not cover, in the order given."""
    remaining = Counter(baseline)
    out = []
    for f, fp in zip(findings, fingerprints(findings, lines_of, root)):
        if remaining[fp] > 0:
            remaining[fp] -= 1
        else:
            out.append(f)
    return out

