"""What linting one file gives before the other modules are known: plain
data that a process pool sends back, the cache stores, and the runner
decides with the whole project (``FileAnalysis.resolve``).

Free of LibCST and of the analysis: a run whose files all come from the
cache imports neither.
"""

from __future__ import annotations

import sys

from autograd_lint.record import Record

TYPE_CHECKING = False  # typing costs 4 ms at start-up; type checkers take this name as true
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Union

    from autograd_lint.analysis.resolve import CallRecord, Condition, Project
    from autograd_lint.finding import Finding
    from autograd_lint.analysis.summaries import ModuleSummary

    Outline = tuple[ModuleSummary | None, tuple[CallRecord, ...]]


class Pending(Record):
    """A finding that holds only if ``conditions`` do (plain data). A
    deferred report has no ``finding`` yet: the file's reports were left
    unmade, since each waits on other modules and most do not hold
    (``FileAnalysis.resolve`` redoes the file when one does)."""

    def __init__(self, finding: Finding | None, conditions: tuple[Condition, ...]) -> None:
        self._store(locals())


class OutlineIndex(Record):
    """What the project needs of a file's outline without reading it: the
    last names its calls reach functions by (``evaluate`` for
    ``metrics.evaluate(...)``: which files to read when a function's callers
    are asked for), and whether it keeps gradients allocated between steps."""

    def __init__(self, called: tuple[str, ...] = (), static_grad_memory: bool = False) -> None:
        self._store(locals())

    def __setstate__(self, state: dict) -> None:
        # Read back once per file in a run: the same names, kept once.
        self.__dict__.update(state, called=tuple(map(sys.intern, state.get("called", ()))))


EMPTY_INDEX = OutlineIndex()


class FileAnalysis:
    """A file's findings, those pending on other modules, and its outline:
    what other modules see of it (its summary) and the calls it makes to
    functions they may define. The outline may be stored elsewhere (a
    cache entry, read again each time a finding elsewhere needs it: a
    project's outlines do not all fit in memory); its index is always at
    hand."""

    __slots__ = ("path", "findings", "pending", "_outline", "_index")

    def __init__(
        self,
        path: str,
        findings: list[Finding] | None = None,
        pending: list[Pending] | None = None,
        summary: ModuleSummary | None = None,
        calls: tuple[CallRecord, ...] = (),
        outline: Union["Outline", Callable[[], "Outline"], None] = None,
        index: OutlineIndex | None = None,
    ) -> None:
        self.path = path
        self.findings = findings if findings is not None else []
        self.pending = pending if pending is not None else []
        self._outline = outline if outline is not None else (summary, tuple(calls))
        self._index = index

    def __getstate__(self):
        # A stored outline travels as its reference (plain data), not read.
        return (self.path, self.findings, self.pending, self._outline, self._index)

    def __setstate__(self, state) -> None:
        self.path, self.findings, self.pending, self._outline, self._index = state

    @property
    def outline(self) -> "Outline":
        """The summary and calls; read from where they are stored on every
        call (the caller keeps what it needs)."""
        if callable(self._outline):
            return self._outline()
        return self._outline

    @property
    def summary(self) -> ModuleSummary | None:
        return self.outline[0]

    @property
    def calls(self) -> tuple[CallRecord, ...]:
        # A stored outline reads its calls without its summary.
        read = getattr(self._outline, "calls", None)
        return read() if read is not None else self.outline[1]

    @property
    def index(self) -> OutlineIndex:
        if self._index is None:
            summary, calls = self.outline
            if summary is None and not calls:
                self._index = EMPTY_INDEX
            else:
                from autograd_lint.analysis.resolve import called_names

                self._index = OutlineIndex(called_names(calls), summary is not None and summary.static_grad_memory)
        return self._index

    def stored(self, reference: Callable[[], "Outline"]) -> "FileAnalysis":
        """This analysis with its outline left where ``reference`` reads it
        from (its index computed first, while the outline is at hand)."""
        return FileAnalysis(self.path, self.findings, self.pending, outline=reference, index=self.index)

    def resolve(self, project: Project | None, redo: Callable[[], FileAnalysis] | None = None) -> list[Finding]:
        """Every finding, the pending ones decided with ``project`` (None:
        the file alone). Deferred reports (``engine.parse_and_analyse``'s
        ``defer``): when one holds (``to_redo``), the file's analysis made
        by ``redo`` (without deferring) is resolved instead."""
        if not self.pending:
            return self.findings
        if self.deferred:
            if not self.to_redo(project):
                return self.findings
            if redo is None:
                raise ValueError(f"{self.path}: its reports were deferred, and nothing can redo them")
            return redo().resolve(project)
        from autograd_lint.analysis.resolve import Resolver

        resolver = Resolver(None, project, self.summary) if project is not None else None
        out = list(self.findings)
        for p in self.pending:
            if resolver is not None and resolver.all_hold(p.conditions):
                out.append(p.finding)
        return sorted(out, key=lambda f: f.sort_key())

    def to_redo(self, project: Project | None) -> bool:
        """A deferred report holds with ``project``: the file must be
        analysed again, its reports made."""
        if not self.deferred or project is None:
            return False
        from autograd_lint.analysis.resolve import Resolver

        resolver = Resolver(None, project, self.summary)
        return any(resolver.all_hold(p.conditions) for p in self.pending)

    @property
    def deferred(self) -> bool:
        """The reports were left unmade (every one waits on other modules)."""
        return bool(self.pending) and self.pending[0].finding is None
