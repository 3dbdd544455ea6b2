"""Parse a file's text with LibCST, never letting an input crash the process.

LibCST's native parser recurses on the C stack: a file with ~1,500 nested
brackets, or an expression chain of ~10,000 operators, attribute accesses
or calls (generated code, a fuzzer, a data file saved as ``.py``) makes it
overflow and the process dies with SIGSEGV, taking every other file's
findings with it. CPython's parser, about ten times faster, rejects all of
these cleanly ("too many nested parentheses", "maximum recursion depth
exceeded during ast construction"), and Python itself cannot run such a
file either. So CPython parses first; what it refuses for its nesting or
size never reaches LibCST.

A plain syntax error CPython reports is still handed to LibCST: it may be
newer syntax than the running Python's (LibCST parses 3.0-3.14), and
LibCST reports a real error itself.
"""

from __future__ import annotations

import ast

import libcst as cst

# CPython's messages for a file nested past its parser's limits.
_NESTING = ("too many nested parentheses", "too many levels of indentation", "too many statically nested blocks", "too complex")


class Unparsable(Exception):
    """The file cannot be parsed at all (not a plain syntax error)."""

    def __init__(self, message: str, row: int = 1, column: int = 1) -> None:
        super().__init__(message)
        self.message, self.row, self.column = message, row, column


def unparsable(e: BaseException) -> Unparsable | None:
    """What ``ast.parse`` raising ``e`` says of the file: Unparsable, or
    None for a plain syntax error (LibCST's to judge)."""
    if isinstance(e, SyntaxError):
        if any(m in (e.msg or "") for m in _NESTING):
            return Unparsable(f"SyntaxError: {e.msg}", max(e.lineno or 1, 1), max(e.offset or 1, 1))
        return None
    if isinstance(e, (RecursionError, MemoryError)):
        return Unparsable("the file is nested too deeply or is too large for Python's parser")
    return Unparsable(f"cannot parse this file: {e}")  # ValueError: NUL bytes


def precheck(text: str, path: str = "<unknown>") -> Unparsable | None:
    """What makes ``text`` unsafe to give LibCST, from CPython's parser;
    None when it is safe (also for a plain syntax error: LibCST reports it)."""
    try:
        ast.parse(text, filename=path)
    except (SyntaxError, ValueError, RecursionError, MemoryError) as e:
        return unparsable(e)
    return None


def parse_module(text: str, path: str = "<unknown>") -> cst.Module:
    """``cst.parse_module`` behind CPython's check. Raises ``Unparsable``
    or ``cst.ParserSyntaxError``; never crashes the process."""
    bad = precheck(text, path)
    if bad is not None:
        raise bad
    try:
        return cst.parse_module(text)
    except RecursionError:
        raise Unparsable("the file is nested too deeply to parse") from None
