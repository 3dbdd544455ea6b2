"""Findings and edits as LSP objects.

The engine counts columns in code points (1-based); LSP counts them in the
code units of the position encoding agreed at initialize: UTF-16 unless the
client offered UTF-8 or UTF-32. A line holding "é" or an emoji before a
finding is where the two differ.
"""

from __future__ import annotations

from lsprotocol import types

from autograd_lint import catalog
from autograd_lint.finding import Edit, Finding, Location

SOURCE = "autograd-lint"

_SEVERITY = {"error": types.DiagnosticSeverity.Error, "warning": types.DiagnosticSeverity.Warning}


def code_units(prefix: str, encoding: str) -> int:
    """The length of ``prefix`` in the encoding's code units."""
    if encoding == types.PositionEncodingKind.Utf8:
        return len(prefix.encode("utf-8", "surrogatepass"))
    if encoding == types.PositionEncodingKind.Utf32:
        return len(prefix)
    return len(prefix.encode("utf-16-le", "surrogatepass")) // 2


def position(lines: list[str], loc: Location, encoding: str) -> types.Position:
    """A 1-based (row, code-point column) as an LSP position. A row past the
    last line (an edit that runs to the end of the text) is the end of the
    document."""
    row = loc.row - 1
    if row >= len(lines):
        if not lines:
            return types.Position(0, 0)
        last = lines[-1]
        if last.endswith(("\n", "\r")):
            return types.Position(len(lines), 0)
        return types.Position(len(lines) - 1, code_units(last, encoding))
    line = lines[row].rstrip("\r\n")
    col = min(max(loc.column - 1, 0), len(line))
    return types.Position(row, code_units(line[:col], encoding))


def finding_range(lines: list[str], finding: Finding, encoding: str) -> types.Range:
    start = position(lines, finding.start, encoding)
    end = position(lines, finding.end, encoding)
    if (end.line, end.character) <= (start.line, start.character):
        # A point (a syntax error): underline the rest of its line, or one
        # character, so that editors have something to draw.
        row = finding.start.row - 1
        line = lines[row].rstrip("\r\n") if row < len(lines) else ""
        width = code_units(line, encoding)
        end = types.Position(start.line, width if width > start.character else start.character + 1)
    return types.Range(start, end)


def diagnostic(lines: list[str], finding: Finding, encoding: str) -> types.Diagnostic:
    data = {"fixable": finding.fix is not None}
    if finding.fix is not None:
        data["applicability"] = finding.fix.applicability.value
    return types.Diagnostic(
        range=finding_range(lines, finding, encoding),
        message=finding.message,
        severity=_SEVERITY[catalog.level(finding.code)],
        code=finding.code,
        code_description=types.CodeDescription(href=catalog.url(finding.code)),
        source=SOURCE,
        data=data,
    )


def text_edit(lines: list[str], edit: Edit, encoding: str) -> types.TextEdit:
    return types.TextEdit(
        range=types.Range(position(lines, edit.start, encoding), position(lines, edit.end, encoding)),
        new_text=edit.content,
    )


def contains(rng: types.Range, pos: types.Position) -> bool:
    return (rng.start.line, rng.start.character) <= (pos.line, pos.character) <= (rng.end.line, rng.end.character)


def overlaps(a: types.Range, b: types.Range) -> bool:
    return (a.start.line, a.start.character) <= (b.end.line, b.end.character) and (b.start.line, b.start.character) <= (
        a.end.line,
        a.end.character,
    )
