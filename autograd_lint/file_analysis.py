"""What linting one file gives before the other modules are known: plain
data that a process pool sends back, the cache stores, and the runner
decides with the whole project (``FileAnalysis.resolve``).

Free of LibCST and of the analysis: a run whose files all come from the
cache imports neither.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Union

from autograd_lint.finding import Finding

if TYPE_CHECKING:
    from autograd_lint.analysis.resolve import CallRecord, Condition, Project
    from autograd_lint.analysis.summaries import ModuleSummary

    Outline = tuple[ModuleSummary | None, tuple[CallRecord, ...]]


@dataclass(frozen=True)
class Pending:
    """A finding that holds only if ``conditions`` do (plain data)."""

    finding: Finding
    conditions: tuple[Condition, ...]


class FileAnalysis:
    """A file's findings, those pending on other modules, and its outline:
    what other modules see of it (its summary) and the calls it makes to
    functions they may define. The outline may be deferred (a cache entry
    not read further until a finding elsewhere needs it)."""

    __slots__ = ("path", "findings", "pending", "_outline")

    def __init__(
        self,
        path: str,
        findings: list[Finding] | None = None,
        pending: list[Pending] | None = None,
        summary: ModuleSummary | None = None,
        calls: tuple[CallRecord, ...] = (),
        outline: Union["Outline", Callable[[], "Outline"], None] = None,
    ) -> None:
        self.path = path
        self.findings = findings if findings is not None else []
        self.pending = pending if pending is not None else []
        self._outline = outline if outline is not None else (summary, tuple(calls))

    def __getstate__(self):
        return (self.path, self.findings, self.pending, self.outline)

    def __setstate__(self, state) -> None:
        self.path, self.findings, self.pending, self._outline = state

    @property
    def outline(self) -> "Outline":
        if callable(self._outline):
            self._outline = self._outline()
        return self._outline

    @property
    def summary(self) -> ModuleSummary | None:
        return self.outline[0]

    @property
    def calls(self) -> tuple[CallRecord, ...]:
        return self.outline[1]

    def resolve(self, project: Project | None) -> list[Finding]:
        """Every finding, the pending ones decided with ``project`` (None:
        the file alone)."""
        if not self.pending:
            return self.findings
        from autograd_lint.analysis.resolve import Resolver

        resolver = Resolver(None, project, self.summary) if project is not None else None
        out = list(self.findings)
        for p in self.pending:
            if resolver is not None and resolver.all_hold(p.conditions):
                out.append(p.finding)
        return sorted(out, key=lambda f: f.sort_key())
