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
imported only when a notebook is linted. ``analyse_notebook`` lints the
program (triage, then the engine) and places each finding in its cell.
"""

from __future__ import annotations

import ast
import dataclasses
import re
import warnings
from dataclasses import dataclass

from autograd_lint import triage
from autograd_lint.file_analysis import FileAnalysis, Pending
from autograd_lint.files import split_lines
from autograd_lint.finding import Finding, Location
from autograd_lint.settings import Settings, enabled_for

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


# -- linting ------------------------------------------------------------------------


def analyse_notebook(path: str, source: bytes, settings: Settings) -> FileAnalysis:
    """A notebook's code cells linted as one program (notebook.py), each
    finding placed in its cell."""
    enabled = enabled_for(path, settings)
    try:
        prog = program(source)
    except NotebookError as e:
        return FileAnalysis(path, [triage.syntax_finding(path, str(e))] if triage.SYNTAX_ERROR in enabled else [])
    broken = [
        Finding(triage.SYNTAX_ERROR, f"{b.message}; this cell was not checked", path, Location(b.row, b.column), Location(b.row, b.column), noqa_row=b.row, cell=b.cell)
        for b in prog.broken
        if triage.SYNTAX_ERROR in enabled
    ]
    data = prog.text.encode("utf-8", "surrogatepass")
    analysis = triage.without_parse(path, prog.text, data, enabled)
    if analysis is None:
        from autograd_lint.engine import parse_and_analyse

        analysis = parse_and_analyse(path, prog.text, settings, data)
    findings = [*broken, *(_in_cell(f, prog) for f in analysis.findings)]
    pending = [Pending(_in_cell(p.finding, prog), p.conditions) for p in analysis.pending]
    return FileAnalysis(path, sorted(findings, key=lambda f: f.sort_key()), pending, outline=analysis.outline)


# A message cites other rows of the program as "at line N" (rules/*_messages):
# in a notebook, a row of another cell is named with its cell.
_AT_LINE = re.compile(r"\bat line (\d+)\b")


def _in_cell(f: Finding, prog: NotebookProgram) -> Finding:
    """``f`` (in program rows) placed in its cell, rows counted in the cell.
    Its fix is dropped: fixes are edits of the program, not of the cells."""
    cell, row = prog.locate(f.start.row) or (None, f.start.row)
    end_cell, end_row = prog.locate(f.end.row) or (cell, f.end.row)
    end = Location(end_row, f.end.column) if end_cell == cell else Location(row, f.start.column)

    def cite(m: re.Match) -> str:
        where = prog.locate(int(m.group(1)))
        if where is None:
            return m.group(0)
        return f"at line {where[1]}" if where[0] == cell else f"in cell {where[0]} at line {where[1]}"

    noqa = prog.locate(f.noqa_row) if f.noqa_row else None
    return dataclasses.replace(
        f, message=_AT_LINE.sub(cite, f.message), start=Location(row, f.start.column), end=end, fix=None, cell=cell,
        noqa_row=noqa[1] if noqa else row,
    )
