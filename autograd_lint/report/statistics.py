"""``--statistics``: how many findings per code, most frequent first, in
ruff's (and Flake8's) layout: ``count<TAB>code<TAB>[*] name``."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from typing import Iterable, Sequence

from autograd_lint.finding import Finding
from autograd_lint.report.fixes import applies

_RESET = "\x1b[0m"
_BOLD = "\x1b[1m"
_RED = "\x1b[31m"
_CYAN = "\x1b[36m"


@dataclass(frozen=True)
class CodeCount:
    code: str
    name: str
    count: int
    # `--fix` (with `--unsafe-fixes` when asked) fixes findings of this code:
    # an unsafe fix alone does not make a code fixable.
    fixable: bool


def count_by_code(findings: Iterable[Finding], unsafe: bool = False) -> list[CodeCount]:
    from autograd_lint.catalog import all_entries

    entries = {e.code: e for e in all_entries()}
    counts: Counter[str] = Counter()
    fixable: set[str] = set()
    for f in findings:
        counts[f.code] += 1
        if applies(f, unsafe):
            fixable.add(f.code)
    rows = [CodeCount(code, getattr(entries.get(code), "name", ""), n, code in fixable) for code, n in counts.items()]
    return sorted(rows, key=lambda r: (-r.count, r.code))


def render_statistics_text(findings: Sequence[Finding], color: bool = False, unsafe: bool = False) -> str:
    """One row per code; the ``[*]`` / ``[ ]`` column only when some code is
    fixable (as ruff)."""
    rows = count_by_code(findings, unsafe)
    if not rows:
        return ""

    def paint(text: str, *codes: str) -> str:
        return "".join(codes) + text + _RESET if color else text

    width = max(len(str(r.count)) for r in rows)
    code_width = max(len(r.code) for r in rows)
    any_fixable = any(r.fixable for r in rows)
    marker = f"[{paint('*', _CYAN)}] "
    return "".join(
        f"{paint(f'{r.count:>{width}}', _BOLD)}\t{paint(f'{r.code:<{code_width}}', _RED, _BOLD)}\t"
        f"{(marker if r.fixable else '[ ] ') if any_fixable else ''}{r.name}\n"
        for r in rows
    )


def render_statistics_json(findings: Iterable[Finding], unsafe: bool = False) -> str:
    rows = [
        {"code": r.code, "name": r.name, "count": r.count, "fixable": r.fixable}
        for r in count_by_code(findings, unsafe)
    ]
    return json.dumps(rows, indent=2) + "\n"
