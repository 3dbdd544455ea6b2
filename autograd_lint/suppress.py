"""Inline suppressions: ``# noqa``, ``# autograd-lint: ignore[...]``, skip-file."""

from __future__ import annotations

import re

from autograd_lint.files import split_lines

# `# noqa` alone suppresses every code on the line; `# noqa: AGL101, AGL102`
# only those (flake8 semantics; codes may also be separated by spaces).
_NOQA = re.compile(r"#\s*noqa(?::\s*(?P<codes>[A-Z]+[0-9]+(?:[\s,]+[A-Z]+[0-9]+)*))?", re.IGNORECASE)
_IGNORE = re.compile(r"#\s*autograd-lint:\s*ignore(?:\[(?P<codes>[^\]]*)\])?", re.IGNORECASE)
_SKIP_FILE = re.compile(r"#\s*autograd-lint:\s*skip-file\b", re.IGNORECASE)
_CODE = re.compile(r"[A-Z]+[0-9]+", re.IGNORECASE)

ALL = frozenset({"*"})


def _line_codes(line: str) -> frozenset[str] | None:
    """Codes suppressed on this line: None for none, ALL for every code."""
    if "#" not in line:
        return None
    found: set[str] = set()
    for regex in (_NOQA, _IGNORE):
        for m in regex.finditer(line):
            codes = m.group("codes")
            if not codes or not codes.strip():
                return ALL
            found.update(c.upper() for c in _CODE.findall(codes))
    return frozenset(found) if found else None


class Suppressions:
    """Per-line suppressions of one file, parsed lazily (only files with
    findings pay for it)."""

    def __init__(self, text: str) -> None:
        self._lines = split_lines(text)

    def is_suppressed(self, code: str, row: int) -> bool:
        if not 1 <= row <= len(self._lines):
            return False
        codes = _line_codes(self._lines[row - 1])
        if codes is None:
            return False
        return codes is ALL or code in codes or any(code.startswith(c) for c in codes)


def skip_file(text: str, head_lines: int = 30) -> bool:
    """True when a ``# autograd-lint: skip-file`` comment stands among the
    file's first lines (before or inside its leading comments and docstring)."""
    for i, line in enumerate(text.splitlines()):
        if i >= head_lines:
            break
        if _SKIP_FILE.search(line):
            return True
    return False


def with_noqa(line: str, code: str) -> str:
    """``line`` (without its line end) with ``code`` added to its
    ``# noqa: ...`` list, or with a new ``# noqa: CODE`` comment."""
    m = next((m for m in _NOQA.finditer(line) if m.group("codes")), None)
    if m is not None:
        return line[: m.end("codes")] + f", {code}" + line[m.end("codes") :]
    return line.rstrip() + f"  # noqa: {code}"
