"""``--statistics``: how many findings per code, most frequent first."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from typing import Iterable

from autograd_lint.finding import Finding


@dataclass(frozen=True)
class CodeCount:
    code: str
    name: str
    count: int
    fixable: bool


def count_by_code(findings: Iterable[Finding]) -> list[CodeCount]:
    from autograd_lint.catalog import all_entries

    entries = {e.code: e for e in all_entries()}
    counts = Counter(f.code for f in findings)
    fixable = Counter(f.code for f in findings if f.fix is not None)
    rows = [
        CodeCount(code, getattr(entries.get(code), "name", ""), n, fixable[code] > 0)
        for code, n in counts.items()
    ]
    return sorted(rows, key=lambda r: (-r.count, r.code))


def render_statistics_text(findings: Iterable[Finding]) -> str:
    rows = count_by_code(findings)
    if not rows:
        return ""
    width = max(len(str(r.count)) for r in rows)
    code_width = max(len(r.code) for r in rows)
    return "".join(
        f"{r.count:>{width}}\t{r.code:<{code_width}}\t{'[*] ' if r.fixable else ''}{r.name}\n" for r in rows
    )


def render_statistics_json(findings: Iterable[Finding]) -> str:
    rows = [
        {"code": r.code, "name": r.name, "count": r.count, "fixable": r.fixable}
        for r in count_by_code(findings)
    ]
    return json.dumps(rows, indent=2) + "\n"
