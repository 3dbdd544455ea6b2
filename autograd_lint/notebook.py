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

Fixing edits the program too: built with a comment row between cells, it
is fixed like a file (``fix.fix_text``), then cut back into cells at those
rows, with the masked lines put back (``fixed_cells``); ``notebook_json``
writes the new sources into the file's JSON and leaves the rest as it was.
"""

from __future__ import annotations

import ast
import dataclasses
import difflib
import re
import warnings
from dataclasses import dataclass

from autograd_lint import triage
from autograd_lint.file_analysis import FileAnalysis, Pending
from autograd_lint.files import split_lines
from autograd_lint.finding import Edit, Finding, Fix, Location
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
    # Program rows whose text is not the cell's (an IPython line masked).
    masked: frozenset[int] = frozenset()
    # The comment row between cells, when the program was built to be fixed.
    separator: str | None = None

    def locate(self, row: int) -> tuple[int, int] | None:
        """(cell, row in the cell) of a program row; None past the last cell
        (or on a separator row)."""
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


def program_of(cells: list[tuple[str, str]], separator: str | None = None) -> NotebookProgram:
    """The code cells of ``cells`` ((type, source) in order) as one program.
    With ``separator``, that comment row follows every code cell but the
    last, so that a fixed program can be cut back into its cells."""
    rows: list[str] = []
    spans: list[CellSpan] = []
    broken: list[BrokenCell] = []
    masked: set[int] = set()
    for index, (kind, text) in enumerate(cells, start=1):
        if kind != "code":
            continue
        if separator is not None and spans:
            rows.append(separator)
        masked_text = mask_ipython(text)
        cell_rows = split_lines(masked_text) or [""]
        try:
            ast.parse(masked_text)
        except SyntaxError as e:
            broken.append(BrokenCell(index, max(e.lineno or 1, 1), max(e.offset or 1, 1), f"SyntaxError: {e.msg}"))
            cell_rows = [""] * len(cell_rows)
        except (ValueError, RecursionError, MemoryError) as e:
            broken.append(BrokenCell(index, 1, 1, f"cannot parse this cell: {e}"))
            cell_rows = [""] * len(cell_rows)
        first = len(rows) + 1
        original = split_lines(text) or [""]
        masked.update(first + i for i, (a, b) in enumerate(zip(original, cell_rows)) if a != b)
        spans.append(CellSpan(index, first, len(cell_rows)))
        rows.extend(cell_rows)
    text = "\n".join(rows) + "\n" if rows else ""
    return NotebookProgram(text, tuple(spans), tuple(broken), frozenset(masked), separator)


def separator_for(cells: list[tuple[str, str]]) -> str:
    """A comment row that no cell contains."""
    # Not an `autograd-lint:` directive (suppress.py reads those).
    separator = "# -- autograd-lint cell boundary --"
    while any(separator in text for _, text in cells):
        separator += " -"
    return separator


def check_rewrite(before: bytes, after: bytes, sources: dict[int, str]) -> None:
    """Raise NotebookError unless ``after`` reads as a notebook whose cells
    have ``sources`` (by 0-based index) and validates as ``before`` did."""
    import nbformat

    def read(data: bytes):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return nbformat.reads(data.decode("utf-8"), as_version=nbformat.NO_CONVERT)

    def valid(nb) -> bool:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                nbformat.validate(nb)
        except nbformat.ValidationError:
            return False
        return True

    try:
        new = read(after)
    except Exception as e:
        raise NotebookError(f"the fixed notebook does not read ({type(e).__name__})") from None
    got = {i: text for i, (_, text) in enumerate(cell_sources(after))}
    if got != sources:
        raise NotebookError("the fixed notebook's cells are not the ones expected")
    if not valid(new) and valid(read(before)):
        raise NotebookError("the fixed notebook does not validate")


def cell_lines(source: bytes) -> dict[int, list[str]]:
    """Each cell's source lines, by 1-based cell index (for snippets and
    baseline fingerprints)."""
    return {i: split_lines(text) for i, (_, text) in enumerate(cell_sources(source), start=1)}


# -- linting ------------------------------------------------------------------------


def analyse_notebook(path: str, source: bytes, settings: Settings) -> FileAnalysis:
    """A notebook's code cells linted as one program (notebook.py), each
    finding placed in its cell."""
    try:
        cells = cell_sources(source)
    except NotebookError as e:
        enabled = enabled_for(path, settings)
        return FileAnalysis(path, [triage.syntax_finding(path, str(e))] if triage.SYNTAX_ERROR in enabled else [])
    return analyse_cells(path, cells, settings)


def analyse_cells(path: str, cells: list[tuple[str, str]], settings: Settings) -> FileAnalysis:
    """``analyse_notebook`` for cells at hand ((type, source) in order: an
    editor's notebook document)."""
    enabled = enabled_for(path, settings)
    prog = program_of(cells)
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
    findings = [*broken, *(in_cell(f, prog) for f in analysis.findings)]
    pending = [Pending(in_cell(p.finding, prog), p.conditions) for p in analysis.pending]
    return FileAnalysis(path, sorted(findings, key=lambda f: f.sort_key()), pending, outline=analysis.outline)


# A message cites other rows of the program as "at line N" (rules/*_messages):
# in a notebook, a row of another cell is named with its cell.
_AT_LINE = re.compile(r"\bat line (\d+)\b")


def in_cell(f: Finding, prog: NotebookProgram) -> Finding:
    """``f`` (in program rows) placed in its cell, rows counted in the cell.
    Its fix keeps its edits when every one lies in that cell and leaves its
    IPython lines alone; otherwise (an ``import torch`` added to the first
    cell) the fix is kept without edits: ``--fix`` and fix-all, which edit
    the whole notebook (``fix.fix_cells``), still apply it."""
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
        f, message=_AT_LINE.sub(cite, f.message), start=Location(row, f.start.column), end=end,
        fix=_fix_in_cell(f.fix, cell, prog), cell=cell, noqa_row=noqa[1] if noqa else row,
    )


def _fix_in_cell(fix: Fix | None, cell: int | None, prog: NotebookProgram) -> Fix | None:
    span = next((s for s in prog.spans if s.cell == cell), None)
    if fix is None or span is None:
        return None
    return dataclasses.replace(fix, edits=_edits_in_cell(fix.edits, span, prog))


def _edits_in_cell(program_edits: tuple[Edit, ...], span: CellSpan, prog: NotebookProgram) -> tuple[Edit, ...]:
    """``program_edits`` in rows of the cell of ``span``; () where one is not
    in that cell or would change an IPython line."""
    last = span.first_row + span.rows - 1
    rows: list[str] | None = None
    edits = []
    for edit in program_edits:
        content, end = edit.content, edit.end
        if end.row == last + 1 and end.column == 1 and content.endswith("\n"):
            # A whole-line edit of the cell's last row ends where the next
            # row starts, which is not the cell's: end it at the row's end
            # (the cell's line break, if it has one, stays).
            rows = rows or prog.text.split("\n")
            content, end = content[:-1], Location(last, len(rows[last - 1]) + 1)
        if not span.first_row <= edit.start.row <= end.row <= last:
            return ()
        if any(r in prog.masked for r in range(edit.start.row, end.row + 1)):
            return ()
        first = span.first_row - 1
        edits.append(Edit(content, Location(edit.start.row - first, edit.start.column), Location(end.row - first, end.column)))
    return tuple(edits)


# -- fixing ---------------------------------------------------------------------------


def fixed_cells(cells: list[tuple[str, str]], before: NotebookProgram, after: str) -> dict[int, str]:
    """The new source of every cell a fix changed, by 0-based index in
    ``cells``: ``after`` (the fixed text of ``before``, a program built with
    a separator) cut back into its cells at the separator rows, with each
    masked IPython line restored. Raises NotebookError where that cannot be
    done exactly (a fix moved a boundary, or edited a masked line)."""
    if before.separator is None:
        raise ValueError("the program was built without a separator")
    old_rows, new_rows = split_lines(before.text), split_lines(after)
    chunks: list[list[str]] = [[]]
    for line in new_rows:
        if line == before.separator:
            chunks.append([])
        else:
            chunks[-1].append(line)
    if len(chunks) != len(before.spans):
        raise NotebookError("a fix moved the boundary between two cells")
    broken = {b.cell for b in before.broken}
    out = {}
    for span, new in zip(before.spans, chunks):
        old = old_rows[span.first_row - 1 : span.first_row - 1 + span.rows]
        if new == old:
            continue
        if span.cell in broken:
            raise NotebookError(f"a fix edited cell {span.cell}, which does not parse")
        source = cells[span.cell - 1][1]
        original = split_lines(source) or [""]
        rows: list[str] = []
        for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, old, new, autojunk=False).get_opcodes():
            if tag == "equal":
                rows.extend(original[i1:i2])
                continue
            if any(span.first_row + i in before.masked for i in range(i1, i2)):
                raise NotebookError(f"a fix would edit an IPython line in cell {span.cell}")
            rows.extend(new[j1:j2])
        # The program holds the cell's rows up to its last text: the line
        # breaks (and blank rows) after it are the cell's own tail.
        ends = split_lines(source, keepends=True) or [""]
        covered = ends[: len(old)]
        body_end = sum(map(len, covered)) - (len(covered[-1]) - len(covered[-1].rstrip("\r\n")))
        newline = next((line[len(line.rstrip("\r\n")) :] for line in ends if line.endswith(("\n", "\r"))), "\n")
        out[span.cell - 1] = newline.join(rows) + source[body_end:]
    return out
