"""Plain data shared by every layer: findings, fixes and edits.

Nothing here imports anything else from the package but the ``Record``
base (record.py). Rows are 1-based and columns are 1-based (as in ruff's
JSON output); end positions are exclusive.
"""

from __future__ import annotations

from enum import Enum

from autograd_lint.record import Record


class Applicability(str, Enum):
    SAFE = "safe"
    UNSAFE = "unsafe"


class Location(Record):
    def __init__(self, row: int, column: int) -> None:
        self._store(locals())


class Edit(Record):
    """Replace the text between ``start`` and ``end`` with ``content``."""

    def __init__(self, content: str, start: Location, end: Location) -> None:
        self._store(locals())


class Fix(Record):
    def __init__(self, applicability: Applicability, message: str, edits: tuple[Edit, ...] = ()) -> None:
        self._store(locals())


class Finding(Record):
    def __init__(
        self,
        code: str,
        message: str,
        path: str,
        start: Location,
        end: Location,
        fix: Fix | None = None,
        # The name the finding concerns (store target, mutated tensor): the
        # verifier uses it to know what to watch at this line.
        subject: str | None = None,
        noqa_row: int | None = None,
        # In a notebook: the 1-based index of the cell (rows count in the cell).
        cell: int | None = None,
        # Where what the finding claims happens, when not at its position (a
        # write reported at a layer's `inplace=True` happens where the layer
        # runs): the row the verifier watches.
        watch_row: int | None = None,
    ) -> None:
        self._store(locals())

    def sort_key(self) -> tuple[str, int, int, int, str]:
        return (self.path, self.cell or 0, self.start.row, self.start.column, self.code)


def lines_for(f: Finding, lines_of):
    """The source lines ``f``'s rows count in: ``lines_of(path)`` for a
    file, ``lines_of(path, cell)`` for a cell of a notebook."""
    return lines_of(f.path) if f.cell is None else lines_of(f.path, f.cell)


class FileResult(Record, frozen=False):
    factories = {"findings": list}

    # ``error`` is set when the file could not be read at all (I/O error):
    # reported as an error, not as a finding.
    def __init__(self, path: str, findings: list[Finding] | None = None, error: str | None = None) -> None:
        self._store(locals())
