"""Jupyter notebooks: the code cells, in order, as one program, and the
program's positions mapped back to cells.

A value defined in cell 2 and misused in cell 5 is one program's flow, so
the code cells are joined into one text, one cell after the other, and
linted like a file. IPython syntax that is not Python (line and cell
magics, shell escapes, ``?`` help) is masked line by line with a statement
that does nothing (``pass``, at the line's indentation; ``x = !ls`` keeps
its target: ``x = None``), so every row of a cell keeps its row in the
program and columns elsewhere are untouched. A cell magic that runs its
cell as Python (``%%time``) masks only its own line; any other
(``%%bash``, ``%%writefile``) masks the cell. A cell that does not parse
is reported on its own (AGL001 in that cell) and left out of the program
(blank rows), so the other cells are still checked. Markdown and raw
cells are not code.

Notebooks are read with ``nbformat``, the Jupyter project's own library,
imported only when a notebook is linted.
"""

from __future__ import annotations

import ast
import re
import warnings
from dataclasses import dataclass

from autograd_lint.files import split_lines

SUFFIX = ".ipynb"

# Cell magics whose body is Python run as usual (timed, captured, profiled).
PYTHON_CELL_MAGICS = frozenset({"time", "timeit", "capture", "prun", "debug", "memit", "py", "python", "python3"})

_LINE_MAGIC = re.compile(r"^(\s*)(?:%|!|\?)")
_ASSIGNED_MAGIC = re.compile(r"^(\s*[A-Za-z_][\w.]*(?:\s*,\s*[A-Za-z_][\w.]*)*\s*=\s*)[%!]")
_HELP = re.compile(r"^(\s*)[\w.\[\]()]*\?\??\s*$")


class NotebookError(ValueError):
    """The file is not a notebook nbformat can read."""


@dataclass(frozen=True)
class CellSpan:
    """Where a code cell's rows are in the program."""

    cell: int  # 1-based index among all the notebook's cells (ruff's convention)
    first_row: int  # the program row of its first row
    rows: int


@dataclass(frozen=True)
class BrokenCell:
    """A code cell that does not parse: reported in the cell, left out."""

    cell: int
    row: int
    column: int
    message: str


@dataclass(frozen=True)
class NotebookProgram:
    text: str
    spans: tuple[CellSpan, ...]
    broken: tuple[BrokenCell, ...]

    def locate(self, row: int) -> tuple[int, int] | None:
        """(cell, row in the cell) of a program row; None past the last cell."""
        for span in self.spans:
            if span.first_row <= row < span.first_row + span.rows:
                return span.cell, row - span.first_row + 1
        return None


def cell_sources(source: bytes) -> list[tuple[str, str]]:
    """Every cell's (type, source), in order. Raises NotebookError."""
    try:
        import nbformat
    except ImportError as e:  # pragma: no cover - a dependency
        raise NotebookError(f"nbformat is needed to read notebooks ({e})") from None
    try:
        with warnings.catch_warnings():
            # Old notebooks lack cell ids; nbformat warns and reads them fine.
            warnings.simplefilter("ignore")
            nb = nbformat.reads(source.decode("utf-8"), as_version=4)
    except Exception as e:  # nbformat raises JSON, schema and version errors of its own
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise NotebookError(f"cannot read this notebook: {first}") from None
    out = []
    for cell in nb.get("cells", []):
        text = cell.get("source", "")
        if isinstance(text, list):  # tolerated by readers of older files
            text = "".join(text)
        out.append((str(cell.get("cell_type", "")), str(text)))
    return out


def mask_ipython(cell: str) -> str:
    """The cell with its IPython-only lines replaced by no-op statements,
    row for row."""
    lines = split_lines(cell)
    if not lines:
        return ""
    first = lines[0].strip()
    if first.startswith("%%"):
        name = first[2:].split(maxsplit=1)[0] if len(first) > 2 else ""
        if name not in PYTHON_CELL_MAGICS:
            return "\n".join("pass" if i == 0 else "" for i in range(len(lines)))
        lines[0] = "pass"
    out = []
    for line in lines:
        assigned = _ASSIGNED_MAGIC.match(line)
        if assigned:
            out.append(assigned.group(1) + "None")
            continue
        m = _LINE_MAGIC.match(line) or _HELP.match(line)
        out.append(m.group(1) + "pass" if m else line)
    return "\n".join(out)


def program(source: bytes) -> NotebookProgram:
    """The notebook's code cells as one program. Raises NotebookError."""
    rows: list[str] = []
    spans: list[CellSpan] = []
    broken: list[BrokenCell] = []
    for index, (kind, text) in enumerate(cell_sources(source), start=1):
        if kind != "code":
            continue
        masked = mask_ipython(text)
        cell_rows = split_lines(masked) or [""]
        try:
            ast.parse(masked)
        except SyntaxError as e:
            broken.append(BrokenCell(index, max(e.lineno or 1, 1), max(e.offset or 1, 1), f"SyntaxError: {e.msg}"))
            cell_rows = [""] * len(cell_rows)
        except (ValueError, RecursionError, MemoryError) as e:
            broken.append(BrokenCell(index, 1, 1, f"cannot parse this cell: {e}"))
            cell_rows = [""] * len(cell_rows)
        spans.append(CellSpan(index, len(rows) + 1, len(cell_rows)))
        rows.extend(cell_rows)
    return NotebookProgram("\n".join(rows) + "\n" if rows else "", tuple(spans), tuple(broken))


def cell_lines(source: bytes) -> dict[int, list[str]]:
    """Each cell's source lines, by 1-based cell index (for snippets and
    baseline fingerprints)."""
    return {i: split_lines(text) for i, (_, text) in enumerate(cell_sources(source), start=1)}
