"""Applying fixes: `--fix`, `--unsafe-fixes`, `--diff`.

Per file: parse, lint, apply every offered fix that is allowed and does not
overlap another, re-parse the result (a result that does not parse is never
kept), re-lint, and repeat until nothing changes (bounded). The file's
encoding, BOM, newline style, indentation and comments are kept (LibCST
regenerates only the rewritten nodes), and writes are atomic: a temporary
file in the same folder, with the original's mode, renamed over it.
"""

from __future__ import annotations

import codecs
import difflib
import io
import os
import stat
import tokenize
from dataclasses import dataclass, field

import libcst as cst

from autograd_lint.engine import check_module, lint_source
from autograd_lint import files
from autograd_lint.files import NOTEBOOK_SUFFIX, DecodeError, decode_source, split_lines
from autograd_lint.finding import Applicability, Finding
from autograd_lint.parsing import Unparsable, parse_module
from autograd_lint.rules.fixes import apply_fixes
from autograd_lint.settings import Settings
from autograd_lint.triage import crashed

MAX_ROUNDS = 10


@dataclass
class FixResult:
    path: str
    original: bytes
    fixed_source: bytes | None = None  # None: nothing changed
    fixed: list[Finding] = field(default_factory=list)  # as reported before their fix
    remaining: list[Finding] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)  # fixes that were not applied, and why
    before: list[Finding] = field(default_factory=list)  # the findings of the file as read
    # A notebook: (cell, old source, new source) of each changed cell.
    cells: list[tuple[int, str, str]] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return self.fixed_source is not None and self.fixed_source != self.original

    def diff(self) -> str:
        if not self.changed:
            return ""
        if self.cells:  # a diff per cell, named like ruff's: path:cell N
            return "".join(
                "".join(difflib.unified_diff(_cell_lines(old), _cell_lines(new), f"a/{self.path}:cell {cell}", f"b/{self.path}:cell {cell}"))
                for cell, old, new in self.cells
            )
        old = _text(self.original)
        new = _text(self.fixed_source or b"")
        return "".join(
            difflib.unified_diff(split_lines(old, keepends=True), split_lines(new, keepends=True), f"a/{self.path}", f"b/{self.path}")
        )


def _cell_lines(source: str) -> list[str]:
    # A cell's last line has no line break in the notebook; in a diff of
    # several cells each line needs one.
    lines = split_lines(source, keepends=True)
    if lines and not lines[-1].endswith(("\n", "\r")):
        lines[-1] += "\n"
    return lines


def _text(source: bytes) -> str:
    try:
        return decode_source(source)
    except DecodeError:
        return source.decode("utf-8", "replace")


def _encoding(source: bytes) -> str:
    try:
        enc, _ = tokenize.detect_encoding(io.BytesIO(source).readline)
    except SyntaxError:
        return "utf-8"
    return "utf-8" if enc == "utf-8-sig" else enc


def fix_source(path: str, source: bytes, settings: Settings, unsafe: bool = False) -> FixResult:
    """Fix one file's source in memory. Never raises for bad input."""
    result = FixResult(path, source)
    # Most files have nothing to fix: lint once (with the trigger pre-filter
    # that skips the parse) and stop there.
    findings = lint_source(path, source, settings)
    result.before = findings
    if not any(_allowed(f, unsafe) for f in findings):
        result.remaining = findings
        return result
    text = decode_source(source)
    fixed = fix_text(path, text, settings, unsafe)
    result.fixed, result.problems = fixed.fixed, fixed.problems
    if fixed.text != text:
        bom = codecs.BOM_UTF8 if source.startswith(codecs.BOM_UTF8) else b""
        result.fixed_source = bom + fixed.text.encode(_encoding(source))
        result.remaining = lint_source(path, result.fixed_source, settings)
    else:
        result.remaining = findings
    return result


@dataclass
class TextFix:
    text: str  # the fixed text (the input when nothing applied)
    fixed: list[Finding] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


def _allowed(finding: Finding, unsafe: bool) -> bool:
    return finding.fix is not None and (unsafe or finding.fix.applicability is Applicability.SAFE)


def fix_text(path: str, text: str, settings: Settings, unsafe: bool = False) -> TextFix:
    """Apply every allowed fix to decoded text, re-parsing and re-linting
    after each round until nothing changes (bounded). A round whose result
    does not parse is dropped and recorded in ``problems``."""
    result = TextFix(text)
    for _ in range(MAX_ROUNDS):
        try:
            module = parse_module(text, path)
        except (cst.ParserSyntaxError, Unparsable):
            break
        pairs = check_module(path, text, module, settings)
        candidates = [(f, spec) for f, spec in pairs if spec is not None and _allowed(f, unsafe)]
        if not candidates:
            break
        new_module, applied = apply_fixes(module, [spec for _, spec in candidates])
        if not applied:
            break
        new_text = new_module.code
        try:
            parse_module(new_text, path)
        except (cst.ParserSyntaxError, Unparsable) as e:
            codes = ", ".join(sorted({f.code for f, s in candidates if s in applied}))
            result.problems.append(f"{path}: the fixes for {codes} produced code that does not parse ({e.message.splitlines()[0]}); not applied")
            break
        applied_ids = {id(s) for s in applied}
        result.fixed.extend(f for f, s in candidates if id(s) in applied_ids)
        if new_text == text:
            break
        text = new_text
    result.text = text
    return result


class NotWritten(Exception):
    """The fixed file was left alone, and why."""


def write_fixed(path: str, original: bytes, data: bytes) -> None:
    """Write a fixed file over the one read, unless that would overwrite
    what the user did not give us: a read-only file, or one changed on
    disk since it was read (an editor, another tool). Raises NotWritten
    or OSError."""
    # No write bit at all is read-only by intent, even to a user (root)
    # whom the system would let write.
    if not os.access(path, os.W_OK) or not stat.S_IMODE(os.stat(path).st_mode) & 0o222:
        raise NotWritten("the file is read-only; not fixed")
    with open(path, "rb") as fh:
        if fh.read() != original:
            raise NotWritten("the file changed on disk during the run; not fixed")
    write_atomic(path, data)


def write_atomic(path: str, data: bytes) -> None:
    """Replace a user's file so that an interrupted run leaves either the old
    file or the new one, with the original's permission bits."""
    files.write_atomic(path, data, mode=stat.S_IMODE(os.stat(path).st_mode), durable=True)


def crashed_fix(path: str, how: str) -> FixResult:
    """A file whose worker process died: left alone, reported as AGL001."""
    try:
        with open(path, "rb") as fh:
            original = fh.read()
    except OSError:
        original = b""
    result = FixResult(path, original)
    result.remaining = result.before = [crashed(path, how)]
    return result


@dataclass
class CellsFix:
    sources: dict[int, str] = field(default_factory=dict)  # new source by 0-based cell index
    fixed: list[Finding] = field(default_factory=list)  # placed in their cells
    problems: list[str] = field(default_factory=list)


def fix_cells(path: str, cells: list[tuple[str, str]], settings: Settings, unsafe: bool = False) -> CellsFix:
    """Fix a notebook's cells ((type, source) in order) as one program
    (notebook.py): the new sources of the cells that changed. Fixes that
    cannot be cut back into cells exactly are not applied (``problems``)."""
    from autograd_lint import notebook

    result = CellsFix()
    prog = notebook.program_of(cells, notebook.separator_for(cells))
    fixed = fix_text(path, prog.text, settings, unsafe)
    result.problems = fixed.problems
    if fixed.text == prog.text:
        return result
    try:
        result.sources = notebook.fixed_cells(cells, prog, fixed.text)
    except notebook.NotebookError as e:
        result.problems.append(f"{path}: the fixes were not applied: {e}")
        return result
    result.fixed = [notebook.in_cell(f, prog) for f in fixed.fixed]
    return result


def fix_notebook(path: str, source: bytes, settings: Settings, unsafe: bool = False) -> FixResult:
    """Fix a notebook in memory (``fix_cells``), writing only the changed
    cells' sources back into the file's JSON (notebook_json.py): outputs,
    metadata, ids, the other cells and the file's layout stay byte for
    byte. A result that nbformat cannot read, or that no longer validates,
    is not kept."""
    from autograd_lint import notebook, notebook_json
    from autograd_lint.runner import lint_bytes

    result = FixResult(path, source)
    result.remaining = result.before = lint_bytes(path, source, settings).findings
    # A notebook finding keeps its fix (its edits when they lie in its cell).
    if not any(_allowed(f, unsafe) for f in result.before):
        return result
    try:
        cells = notebook.cell_sources(source)
        fixed = fix_cells(path, cells, settings, unsafe)
        result.problems = fixed.problems
        if not fixed.sources:
            return result
        data = notebook_json.with_sources(source.decode("utf-8"), fixed.sources).encode("utf-8")
        notebook.check_rewrite(source, data, {i: fixed.sources.get(i, text) for i, (_, text) in enumerate(cells)})
    except (notebook.NotebookError, notebook_json.LayoutError, UnicodeDecodeError) as e:
        result.problems.append(f"{path}: the fixes were not applied: {e}")
        return result
    result.fixed = fixed.fixed
    result.cells = [(i + 1, cells[i][1], fixed.sources[i]) for i in sorted(fixed.sources)]
    result.fixed_source = data
    result.remaining = lint_bytes(path, data, settings).findings
    return result


def fix_bytes(path: str, source: bytes, settings: Settings, unsafe: bool = False) -> FixResult:
    """``fix_source``, or ``fix_notebook`` for a path named like a notebook."""
    if path.endswith(NOTEBOOK_SUFFIX):
        return fix_notebook(path, source, settings, unsafe)
    return fix_source(path, source, settings, unsafe)


def fix_file(path: str, settings: Settings, unsafe: bool = False) -> FixResult:
    """Read and fix one file in memory (for a process pool); never raises
    for a bad file: the problem is recorded on the result."""
    try:
        with open(path, "rb") as fh:
            source = fh.read()
    except OSError as e:
        result = FixResult(path, b"")
        result.problems.append(f"{path}: cannot read file: {e.strerror or e}")
        return result
    try:
        return fix_bytes(path, source, settings, unsafe)
    except Exception as e:  # one file's failure must not stop the others
        result = FixResult(path, source)
        result.problems.append(f"{path}: internal error while fixing: {type(e).__name__}: {e}")
        return result
