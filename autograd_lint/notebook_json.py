"""Editing the cells' sources in a notebook's JSON text, and nothing else.

Writing a notebook back through ``nbformat`` would re-serialise the whole
file: key order, indentation, escapes and every output would be rewritten
in nbformat's style, and a user's ``git diff`` would show the whole
notebook. Instead the JSON is scanned for the positions of each cell's
``"source"`` value, and only the values of changed cells are replaced, in
the layout the file already uses (a list of lines with the file's
indentation, or one string). A line a fix did not change keeps its exact
JSON text, escapes included.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from json.decoder import scanstring

_DECODER = json.JSONDecoder()
_SPACE = re.compile(r"[ \t\n\r]*")


class LayoutError(ValueError):
    """The text is not the JSON of a notebook with a ``cells`` list."""


@dataclass(frozen=True)
class SourceValue:
    """Where one cell's ``"source"`` value is in the file's text."""

    start: int
    end: int
    lines: tuple[tuple[str, str], ...] | None  # (decoded, raw JSON) per element; None: one string


def _space(s: str, i: int) -> int:
    return _SPACE.match(s, i).end()


def _members(s: str, i: int):
    """(key, start, end) of each member of the object at ``s[i]``."""
    if s[i : i + 1] != "{":
        raise LayoutError("expected an object")
    i = _space(s, i + 1)
    if s[i : i + 1] == "}":
        return
    while True:
        if s[i : i + 1] != '"':
            raise LayoutError("expected a key")
        key, i = scanstring(s, i + 1)
        i = _space(s, i)
        if s[i : i + 1] != ":":
            raise LayoutError("expected ':'")
        start = _space(s, i + 1)
        _, end = _DECODER.raw_decode(s, start)
        yield key, start, end
        i = _space(s, end)
        if s[i : i + 1] == ",":
            i = _space(s, i + 1)
        elif s[i : i + 1] == "}":
            return
        else:
            raise LayoutError("expected ',' or '}'")


def _elements(s: str, i: int):
    """(start, end) of each element of the array at ``s[i]``."""
    if s[i : i + 1] != "[":
        raise LayoutError("expected an array")
    i = _space(s, i + 1)
    if s[i : i + 1] == "]":
        return
    while True:
        _, end = _DECODER.raw_decode(s, i)
        yield i, end
        i = _space(s, end)
        if s[i : i + 1] == ",":
            i = _space(s, i + 1)
        elif s[i : i + 1] == "]":
            return
        else:
            raise LayoutError("expected ',' or ']'")


def source_values(text: str) -> list[SourceValue | None]:
    """Each cell's source value, in order (None for a cell without one).
    Raises LayoutError."""
    try:
        top = _space(text, 0)
        cells = next((start for key, start, _ in _members(text, top) if key == "cells"), None)
        if cells is None:
            raise LayoutError("no cells")
        out: list[SourceValue | None] = []
        for cell_start, _ in _elements(text, cells):
            found = None
            for key, start, end in _members(text, cell_start):
                if key == "source":
                    found = SourceValue(start, end, _lines(text, start, end))
            out.append(found)
        return out
    except (json.JSONDecodeError, StopIteration) as e:
        raise LayoutError(str(e)) from None


def _lines(text: str, start: int, end: int) -> tuple[tuple[str, str], ...] | None:
    if text[start] != "[":
        return None
    out = []
    for a, b in _elements(text, start):
        value = json.loads(text[a:b])
        if not isinstance(value, str):
            raise LayoutError("a source line is not a string")
        out.append((value, text[a:b]))
    return tuple(out)


def with_sources(text: str, sources: dict[int, str]) -> str:
    """``text`` with the sources of the cells in ``sources`` (by 0-based
    index) replaced, and every other byte as it was. Raises LayoutError."""
    values = source_values(text)
    ascii_only = text.isascii()
    pieces, at = [], 0
    for index in sorted(sources):
        value = values[index] if index < len(values) else None
        if value is None:
            raise LayoutError(f"cell {index + 1} has no source to replace")
        pieces += [text[at : value.start], _render(text, value, sources[index], ascii_only)]
        at = value.end
    pieces.append(text[at:])
    return "".join(pieces)


def _render(text: str, value: SourceValue, source: str, ascii_only: bool) -> str:
    if value.lines is None:
        return json.dumps(source, ensure_ascii=ascii_only)
    raw = {decoded: raw for decoded, raw in reversed(value.lines)}
    # nbformat stores a source as its lines, each keeping its line break.
    items = [raw.get(line) or json.dumps(line, ensure_ascii=ascii_only) for line in source.splitlines(True)]
    if not items:
        return "[]"
    inside = list(_elements(text, value.start))
    if inside:
        opening = text[value.start + 1 : inside[0][0]]
        closing = text[inside[-1][1] : value.end - 1]
        between = text[inside[0][1] : inside[1][0]] if len(inside) > 1 else "," + opening
    else:
        # `"source": []` gives no layout to copy: nbformat's (one more
        # space of indentation than the key's line).
        line_start = text.rfind("\n", 0, value.start) + 1
        indent = re.match(r"[ \t]*", text[line_start:]).group(0)
        opening, closing = f"\n{indent} ", f"\n{indent}"
        between = "," + opening
    return "[" + opening + between.join(items) + closing + "]"
