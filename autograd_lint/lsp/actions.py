"""Code actions and hover for one linted document.

Everything here reads a ``Linted`` snapshot (the text that was linted and its
findings), so the positions of the actions always match the text they were
computed from; the server decides whether the snapshot is current.
"""

from __future__ import annotations

import ast
import io
import tokenize
from dataclasses import dataclass, field
from functools import lru_cache

from lsprotocol import types

from autograd_lint import catalog
from autograd_lint.settings import Settings
from autograd_lint.engine import SYNTAX_ERROR, text_edits
from autograd_lint.files import split_lines
from autograd_lint.finding import Applicability, Edit, Finding, Location
from autograd_lint.lsp import convert
from autograd_lint.suppress import Suppressions, with_noqa

FIX_ALL_KIND = "source.fixAll.autograd-lint"
FIX_ALL_TITLE = "Fix all autograd-lint issues"


@dataclass
class Linted:
    """One document as it was linted."""

    uri: str
    version: int | None
    text: str
    findings: list[Finding]
    encoding: str
    path: str = ""
    settings: Settings | None = None
    # A notebook cell: its text with the IPython lines masked (the Python a
    # `# noqa` edit is checked against); row for row the same as ``text``.
    python_text: str | None = None
    lines: list[str] = field(init=False)  # with their line ends
    diagnostics: list[types.Diagnostic] = field(init=False)

    def __post_init__(self) -> None:
        self.lines = split_lines(self.text, keepends=True)
        self.diagnostics = [convert.diagnostic(self.lines, f, self.encoding) for f in self.findings]

    def in_range(self, rng: types.Range) -> list[tuple[Finding, types.Diagnostic]]:
        return [(f, d) for f, d in zip(self.findings, self.diagnostics) if convert.overlaps(d.range, rng)]

    def at(self, pos: types.Position) -> list[Finding]:
        return [f for f, d in zip(self.findings, self.diagnostics) if convert.contains(d.range, pos)]

    def edits(self, edits: tuple[Edit, ...] | list[Edit]) -> list[types.TextEdit]:
        return [convert.text_edit(self.lines, e, self.encoding) for e in edits]


def workspace_edit(doc: Linted, edits: list[types.TextEdit], versioned: bool) -> types.WorkspaceEdit:
    if versioned:
        ident = types.OptionalVersionedTextDocumentIdentifier(uri=doc.uri, version=doc.version)
        return types.WorkspaceEdit(document_changes=[types.TextDocumentEdit(text_document=ident, edits=edits)])
    return types.WorkspaceEdit(changes={doc.uri: edits})


def fix_title(finding: Finding) -> str:
    assert finding.fix is not None
    unsafe = finding.fix.applicability is Applicability.UNSAFE
    return f"{finding.code}: {finding.fix.message}" + (" (unsafe fix)" if unsafe else "")


def quick_fixes(doc: Linted, rng: types.Range, versioned: bool) -> list[types.CodeAction]:
    """Per finding under ``rng``: its fix (safe ones preferred), then a way
    to silence it on its line."""
    actions: list[types.CodeAction] = []
    for finding, diag in doc.in_range(rng):
        if finding.fix is not None and finding.fix.edits:
            actions.append(
                types.CodeAction(
                    title=fix_title(finding),
                    kind=types.CodeActionKind.QuickFix,
                    diagnostics=[diag],
                    is_preferred=finding.fix.applicability is Applicability.SAFE,
                    edit=workspace_edit(doc, doc.edits(finding.fix.edits), versioned),
                )
            )
    for finding, diag in doc.in_range(rng):
        edit = noqa_edit(doc.python_text or doc.text, finding)
        if edit is not None:
            actions.append(
                types.CodeAction(
                    title=f"Disable {finding.code} for this line",
                    kind=types.CodeActionKind.QuickFix,
                    diagnostics=[diag],
                    edit=workspace_edit(doc, doc.edits([edit]), versioned),
                )
            )
    return actions


def noqa_edit(text: str, finding: Finding) -> Edit | None:
    """The edit adding ``# noqa: CODE`` to the finding's line (or the code to
    the line's ``# noqa: ...`` list). None where a comment cannot go (the
    line ends inside a string or after a backslash) or for AGL001."""
    if finding.code == SYNTAX_ERROR:
        return None
    row = finding.noqa_row or finding.start.row
    new_text = _with_noqa(text, row, finding.code)
    if new_text is None:
        return None
    lines = split_lines(text, keepends=True)
    old_line = lines[row - 1].rstrip("\r\n")
    new_line = split_lines(new_text, keepends=True)[row - 1].rstrip("\r\n")
    return Edit(new_line, Location(row, 1), Location(row, len(old_line) + 1))


@lru_cache(maxsize=64)
def _with_noqa(text: str, row: int, code: str) -> str | None:
    lines = split_lines(text, keepends=True)
    if not 1 <= row <= len(lines):
        return None
    line = lines[row - 1]
    body = line.rstrip("\r\n")
    end = line[len(body) :]
    body = with_noqa(body, code)
    new_text = "".join(lines[: row - 1]) + body + end + "".join(lines[row:])
    # Re-checked like every fix: the result must parse, the comment must be
    # a comment (not text inside a string that ends on a later line), and
    # it must silence the code.
    try:
        ast.parse(new_text)
        comments = [
            tok.string
            for tok in tokenize.generate_tokens(io.StringIO(new_text).readline)
            if tok.type == tokenize.COMMENT and tok.start[0] == row
        ]
    except (SyntaxError, ValueError, RecursionError, tokenize.TokenError):
        return None
    if not any(Suppressions(c).is_suppressed(code, 1) for c in comments):
        return None
    if not Suppressions(new_text).is_suppressed(code, row):
        return None
    return new_text


def can_fix_all(doc: Linted, unsafe: bool) -> bool:
    return any(f.fix is not None and (unsafe or f.fix.applicability is Applicability.SAFE) for f in doc.findings)


def fix_all_action(data: dict | None = None, edit: types.WorkspaceEdit | None = None, unsafe: bool = False) -> types.CodeAction:
    return types.CodeAction(
        title=FIX_ALL_TITLE + (" (including unsafe fixes)" if unsafe else ""),
        kind=FIX_ALL_KIND,
        data=data,
        edit=edit,
    )


def fix_all_edit(doc: Linted, fixed_text: str, versioned: bool) -> types.WorkspaceEdit:
    return workspace_edit(doc, doc.edits(text_edits(doc.text, fixed_text)), versioned)


def cells_edit(changes: list[tuple[Linted, str]], versioned: bool) -> types.WorkspaceEdit:
    """One edit over several notebook cells: (the cell as linted, its new text)."""
    edits = [(doc, doc.edits(text_edits(doc.text, new))) for doc, new in changes]
    if versioned:
        return types.WorkspaceEdit(
            document_changes=[
                types.TextDocumentEdit(text_document=types.OptionalVersionedTextDocumentIdentifier(uri=doc.uri, version=doc.version), edits=e)
                for doc, e in edits
            ]
        )
    return types.WorkspaceEdit(changes={doc.uri: e for doc, e in edits})


def hover(doc: Linted, pos: types.Position, markdown: bool = True) -> types.Hover | None:
    """The rule page's summary and first paragraph for each finding under
    the cursor, with a link to the page."""
    found = doc.at(pos)
    if not found:
        return None
    entries = {e.code: e for e in catalog.all_entries()}
    parts = []
    for code in dict.fromkeys(f.code for f in found):
        entry = entries.get(code)
        if entry is None:
            continue
        text = f"**{code}** `{entry.name}`: {' '.join(str(entry.summary).split())}"
        para = catalog.first_paragraph(catalog.read_page(code))
        if para:
            text += f"\n\n{para}"
        if entry.fix_title:
            text += f"\n\nFix: {entry.fix_title}."
        text += f"\n\n[{code} rule page]({catalog.url(code)})"
        parts.append(text)
    if not parts:
        return None
    kind = types.MarkupKind.Markdown if markdown else types.MarkupKind.PlainText
    value = "\n\n---\n\n".join(parts)
    if not markdown:
        value = value.replace("**", "").replace("`", "")
    return types.Hover(contents=types.MarkupContent(kind=kind, value=value))
