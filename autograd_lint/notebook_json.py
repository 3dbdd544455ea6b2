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


def _entries(s: str, i: int):
    """(key, start, end, value) of each member of the object, or element of
    the array (key None), at ``s[i]``."""
    close = {"{": "}", "[": "]"}.get(s[i : i + 1])
    if close is None:
        raise LayoutError("expected an object or an array")
    i = _space(s, i + 1)
    if s[i : i + 1] == close:
        return
    while True:
        key = None
        if close == "}":
            if s[i : i + 1] != '"':
                raise LayoutError("expected a key")
            key, i = scanstring(s, i + 1)
            i = _space(s, i)
            if s[i : i + 1] != ":":
                raise LayoutError("expected ':'")
            i = _space(s, i + 1)
        value, end = _DECODER.raw_decode(s, i)
        yield key, i, end, value
        i = _space(s, end)
        if s[i : i + 1] == ",":
            i = _space(s, i + 1)
        elif s[i : i + 1] == close:
            return
        else:
            raise LayoutError(f"expected ',' or '{close}'")


def source_values(text: str) -> list[SourceValue | None]:
    """Each cell's source value, in order (None for a cell without one).
    Raises LayoutError."""
    try:
        cells = next((start for key, start, _, _ in _entries(text, _space(text, 0)) if key == "cells"), None)
        if cells is None:
            raise LayoutError("no cells")
        out: list[SourceValue | None] = []
        for _, cell_start, _, _ in _entries(text, cells):
            found = None
            for key, start, end, value in _entries(text, cell_start):
                if key == "source":
                    found = SourceValue(start, end, _lines(text, start, value))
            out.append(found)
        return out
    except json.JSONDecodeError as e:
        raise LayoutError(str(e)) from None


def _lines(text: str, start: int, value: object) -> tuple[tuple[str, str], ...] | None:
    if not isinstance(value, list):
        return None
    out = []
    for _, a, b, line in _entries(text, start):
        if not isinstance(line, str):
            raise LayoutError("a source line is not a string")
        out.append((line, text[a:b]))
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
    inside = [(a, b) for _, a, b, _ in _entries(text, value.start)]
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
