"""Which findings ``--fix`` would fix, as ruff tells it: a ``[*]`` after
the code of each one, and a line after the summary counting them and the
unsafe fixes that ``--unsafe-fixes`` would add ("hidden" fixes)."""

from __future__ import annotations

from collections.abc import Iterable

from autograd_lint.finding import Applicability, Finding
from autograd_lint.record import Record


def applies(f: Finding, unsafe: bool = False) -> bool:
    """``--fix`` (with ``--unsafe-fixes`` when ``unsafe``) fixes ``f``."""
    return f.fix is not None and (unsafe or f.fix.applicability is Applicability.SAFE)


class FixCounts(Record):
    def __init__(
        self,
        applicable: int,  # fixed by `--fix` as given
        hidden: int,  # unsafe fixes left out for want of `--unsafe-fixes`
    ) -> None:
        self._store(locals())


def count_fixes(findings: Iterable[Finding], unsafe: bool = False) -> FixCounts:
    applicable = hidden = 0
    for f in findings:
        if applies(f, unsafe):
            applicable += 1
        elif f.fix is not None and f.fix.applicability is Applicability.UNSAFE:
            hidden += 1
    return FixCounts(applicable, hidden)


def _hidden(n: int) -> str:
    return f"{n} hidden fix{'' if n == 1 else 'es'} can be enabled with the `--unsafe-fixes` option"


def fix_summary(counts: FixCounts, marker: str = "[*]") -> str:
    """ruff's line under the summary; "" when there is no fix at all.
    ``marker`` is the ``[*]`` (coloured or not)."""
    if counts.applicable and counts.hidden:
        return f"{marker} {counts.applicable} fixable with the `--fix` option ({_hidden(counts.hidden)}).\n"
    if counts.applicable:
        return f"{marker} {counts.applicable} fixable with the `--fix` option.\n"
    if counts.hidden:
        return f"No fixes available ({_hidden(counts.hidden)}).\n"
    return ""
