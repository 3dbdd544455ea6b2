"""Parse a file's text with LibCST, never letting an input crash the process.

LibCST's native parser recurses on the C stack: a file with ~1,500 nested
brackets, or an expression chain of ~4,000 lambdas or ~8,000 operators,
attribute accesses, calls or ``and``s (generated code, a fuzzer, a data file
saved as ``.py``) makes it overflow and the process dies with SIGSEGV,
taking every other file's findings with it (measured on an 8 MB stack,
LibCST 1.x). CPython's parser refuses these cleanly ("too many nested
parentheses", "maximum recursion depth exceeded"), and Python itself cannot
run such a file either.

Asking CPython costs a tenth of LibCST's parse on every file, so it is
asked only when it can matter: nesting N deep takes at least N brackets, or
N operator characters and keywords, in the file. A file with fewer of them
than a safe margin below LibCST's limits (counted in C, over the bytes) goes
straight to LibCST; the others are parsed by CPython first (``symtable``,
which parses without building Python objects for the tree), and what it
refuses for nesting or size never reaches LibCST. A flat chain CPython
accepts but LibCST nests (``a and b and ...``) is counted apart.

A plain syntax error CPython reports is still handed to LibCST: it may be
newer syntax than the running Python's (LibCST parses 3.0-3.14), and
LibCST reports a real error itself.

The parse skips LibCST's node validation. Every node checks its fields as
it is built (``CSTNode.__post_init__``), which is for trees built by hand:
the parser's nodes are valid by construction (LibCST's own comment there
says validation could move out of parsing), and the checks cost a seventh
of the parse. Nodes built outside the parse (the fixes') are still
validated, and every fixed text is parsed again before it is kept.

While it parses, each node class also gets an ``__init__`` that stores its
fields through their slots (``slotted.fast_init``) instead of the frozen
dataclass's ``object.__setattr__`` per field: another tenth of the parse
(measured on the corpus subset: 9.9 s validation skipped, 9.1 s with both,
11.5 s LibCST's own). Each class gets its own ``__init__`` back after.
"""

from __future__ import annotations

import ast
import symtable
from typing import TYPE_CHECKING

from autograd_lint.slotted import fast_init

if TYPE_CHECKING:
    import libcst as cst

# Below these counts no construct nests deep enough to overflow LibCST
# (brackets overflow at ~1,500 levels, lambdas at ~4,000, other chains at
# ~8,000 and more): such a file is not asked of CPython first.
SAFE_BRACKETS = 1000
SAFE_CHAIN = 3000

_ALL_BYTES = bytes(range(256))
_NOT_BRACKETS = bytes(b for b in _ALL_BYTES if b not in b"([{")
_NOT_OPERATORS = bytes(b for b in _ALL_BYTES if b not in b".+-*/%@&|^~<>")
_NESTING_WORDS = (b"lambda", b"not ", b" if ", b"elif", b"await", b"yield")
_FLAT_IN_CPYTHON = (b" and ", b" or ")

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


def precheck(text: str, path: str = "<unknown>", source: bytes | None = None) -> Unparsable | None:
    """What makes ``text`` unsafe to give LibCST; None when it is safe (also
    for a plain syntax error: LibCST reports it). ``source``: its bytes, when
    at hand (counted without encoding ``text`` again)."""
    if source is None:
        source = text.encode("utf-8", "surrogatepass")
    brackets = len(source.translate(None, _NOT_BRACKETS))
    chain = len(source.translate(None, _NOT_OPERATORS)) + sum(source.count(w) for w in _NESTING_WORDS)
    flat = sum(source.count(w) for w in _FLAT_IN_CPYTHON)
    if brackets < SAFE_BRACKETS and chain < SAFE_CHAIN and flat < SAFE_CHAIN:
        return None
    try:
        if flat >= SAFE_CHAIN:
            _refuse_long_bool_chains(ast.parse(text, filename=path))
        else:
            symtable.symtable(text, path, "exec")
    except (SyntaxError, ValueError, RecursionError, MemoryError) as e:
        return unparsable(e)
    except Unparsable as e:
        return e
    return None


def _refuse_long_bool_chains(tree: ast.AST) -> None:
    """CPython keeps ``a and b and ...`` flat; LibCST nests one level per
    operator. Raise Unparsable for a chain LibCST cannot take."""
    for node in ast.walk(tree):
        if isinstance(node, ast.BoolOp) and _bool_operators(node) >= SAFE_CHAIN:
            raise Unparsable("an expression chains too many `and`/`or` operators to parse", node.lineno, node.col_offset + 1)


def _bool_operators(node: ast.BoolOp) -> int:
    """The operators of the ``and``/``or`` chain ``node`` heads (its
    operands that are chains themselves included)."""
    return len(node.values) - 1 + sum(_bool_operators(v) for v in node.values if isinstance(v, ast.BoolOp))


# (fast, original): each LibCST node class's two initializers.
_INITS: "tuple[dict[type, object], dict[type, object]] | None" = None


def _parse_inits() -> "tuple[dict[type, object], dict[type, object]]":
    """For every LibCST node class that has its own ``__init__``, one that
    stores the fields and skips the checks (``slotted.fast_init``), and its
    own; built once per process."""
    global _INITS
    if _INITS is None:
        from libcst._nodes.base import CSTNode

        out: dict[type, object] = {}
        stack: list[type] = [CSTNode]
        while stack:
            for sub in stack.pop().__subclasses__():
                if sub not in out:
                    stack.append(sub)
                    # No __post_init__: that is the node's validation.
                    out[sub] = fast_init(sub, post_init=False)
        fast = {c: f for c, f in out.items() if f is not None}
        _INITS = fast, {c: c.__dict__["__init__"] for c in fast}
    return _INITS


def _unvalidated(cst, text: str) -> "cst.Module":
    """``cst.parse_module`` with node classes that store their fields and
    skip their checks (``CSTNode.__post_init__``) while it runs. The parse
    is synchronous and the analysis builds no nodes from other threads, so
    the swap is seen by the parser alone; every class gets its own
    ``__init__`` back after."""
    from libcst._nodes.base import CSTNode

    fast, saved = _parse_inits()
    validate = CSTNode.__post_init__
    try:
        # (Inside the try: an interrupt half-way through still restores.)
        CSTNode.__post_init__ = _skip_validation  # type: ignore[method-assign]  # classes left with their own __init__
        for c, init in fast.items():
            type.__setattr__(c, "__init__", init)
        return cst.parse_module(text)
    finally:
        CSTNode.__post_init__ = validate  # type: ignore[method-assign]
        for c, init in saved.items():
            type.__setattr__(c, "__init__", init)


def _skip_validation(self: object) -> None:
    pass


def parse_module(text: str, path: str = "<unknown>", source: bytes | None = None) -> cst.Module:
    """``cst.parse_module`` behind the check above. Raises ``Unparsable``
    or ``cst.ParserSyntaxError``; never crashes the process."""
    import libcst as cst  # 0.3 s to import: only where a file is parsed

    bad = precheck(text, path, source)
    if bad is not None:
        raise bad
    try:
        return _unvalidated(cst, text)
    except RecursionError:
        raise Unparsable("the file is nested too deeply to parse") from None
