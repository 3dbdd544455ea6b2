"""What a file needs before LibCST: decoding, ``skip-file``, and the trigger
pre-filter. A file with no trigger word of any enabled rule cannot produce
a finding: it is done here, with CPython's own parser (~10x faster) for its
syntax errors, and LibCST is never imported for it.

Free of LibCST, of the rules and of the analysis (the triggers come from
the generated ``rule_codes`` table).
"""

from __future__ import annotations

import ast

from autograd_lint.file_analysis import FileAnalysis
from autograd_lint.files import DecodeError, decode_source
from autograd_lint.finding import Finding, Location
from autograd_lint.parsing import Unparsable, unparsable
from autograd_lint.rule_codes import TRIGGERS
from autograd_lint.settings import Settings, enabled_for
from autograd_lint.suppress import skip_file

SYNTAX_ERROR = "AGL001"


def syntax_finding(path: str, message: str, row: int = 1, column: int = 1) -> Finding:
    """AGL001 at ``row:column``: the file was not checked."""
    loc = Location(max(row, 1), max(column, 1))
    return Finding(SYNTAX_ERROR, f"{message}; the file was not checked", path, loc, loc, noqa_row=loc.row)


def unparsable_finding(path: str, e: Unparsable) -> Finding:
    return syntax_finding(path, e.message, e.row, e.column)


def crashed(path: str, how: str) -> Finding:
    """AGL001 for a file whose parse or analysis ended its process (a
    signal, out of memory): the file is reported, the run goes on."""
    return syntax_finding(path, f"the linter's process {how} on this file")


def decoded(path: str, source: bytes, settings: Settings) -> str | FileAnalysis:
    """The file's text; or, when it cannot be decoded, its analysis."""
    try:
        return decode_source(source)
    except DecodeError as e:
        if SYNTAX_ERROR not in enabled_for(path, settings):
            return FileAnalysis(path)
        return FileAnalysis(path, [syntax_finding(path, f"cannot decode this file ({e})")])


def needs_parse(source: bytes, enabled: frozenset[str]) -> bool:
    """Some enabled rule may fire in a file with these bytes."""
    for code in enabled:
        triggers = TRIGGERS.get(code)
        if triggers is not None and (not triggers or any(t in source for t in triggers)):
            return True
    return False


def without_parse(path: str, text: str, source: bytes, enabled: frozenset[str]) -> FileAnalysis | None:
    """The file's analysis when LibCST is not needed for it; None when it is."""
    if skip_file(text):
        return FileAnalysis(path)
    if needs_parse(source, enabled):
        return None
    if SYNTAX_ERROR not in enabled:
        return FileAnalysis(path)
    try:
        ast.parse(text, filename=path)
    except SyntaxError as e:
        return FileAnalysis(path, [syntax_finding(path, f"SyntaxError: {e.msg}", e.lineno or 1, e.offset or 1)])
    except (ValueError, RecursionError, MemoryError) as e:
        return FileAnalysis(path, [unparsable_finding(path, unparsable(e) or Unparsable(f"cannot parse this file: {e}"))])
    return FileAnalysis(path)
