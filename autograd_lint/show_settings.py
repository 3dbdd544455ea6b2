"""``check --show-settings [PATH]``: the configuration one file is linted
with, as ruff's ``--show-settings`` prints it: where it came from, then
every field of each settings object, read from the dataclasses themselves so
that a setting added later is printed without a change here."""

from __future__ import annotations

import dataclasses
import json
import os
from types import MappingProxyType
from typing import Any, Iterable, Mapping

_NO_NAMES: Mapping[str, str] = MappingProxyType({})


def _scalar(value: Any, names: Mapping[str, str]) -> str:
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        # A rule code gets its name, as in ruff's `unused-import (F401)`.
        return f"{value} ({names[value]})" if value in names else json.dumps(value)
    return str(value)


def _is_version(value: Any) -> bool:
    return isinstance(value, tuple) and bool(value) and all(isinstance(v, int) and not isinstance(v, bool) for v in value)


def format_value(value: Any, names: Mapping[str, str] = _NO_NAMES, indent: str = "") -> str:
    """One value, nested collections one item a line (sets sorted)."""
    inner = indent + "\t"
    if _is_version(value):
        return ".".join(map(str, value))
    if isinstance(value, Mapping):
        if not value:
            return "{}"
        rows = [f"{inner}{_scalar(str(k), names)} = {format_value(v, names, inner)}," for k, v in sorted(value.items(), key=lambda kv: str(kv[0]))]
        return "{\n" + "\n".join(rows) + f"\n{indent}}}"
    if isinstance(value, (frozenset, set)):
        value = sorted(value, key=str)
    if isinstance(value, (list, tuple)):
        if not value:
            return "[]"
        rows = []
        for item in value:
            if isinstance(item, tuple) and len(item) == 2 and isinstance(item[0], str) and not _is_version(item):
                # (pattern, codes) pairs, e.g. per-file-ignores.
                rows.append(f"{inner}{json.dumps(item[0])} = {format_value(item[1], names, inner)},")
            else:
                rows.append(f"{inner}{format_value(item, names, inner)},")
        return "[\n" + "\n".join(rows) + f"\n{indent}]"
    return _scalar(value, names)


def format_fields(obj: Any, skip: Iterable[str] = (), names: Mapping[str, str] = _NO_NAMES) -> list[str]:
    """``name = value`` for every dataclass field of ``obj``."""
    return [
        f"{f.name} = {format_value(getattr(obj, f.name), names)}"
        for f in dataclasses.fields(obj)
        if f.name not in set(skip)
    ]


def render_settings(
    target: str,
    config_path: str | None,
    sections: Iterable[tuple[str, Any]],
    extra: Iterable[tuple[str, Any]] = (),
    names: Mapping[str, str] = _NO_NAMES,
) -> str:
    """The report: its header, a ``# title`` block per dataclass in
    ``sections``, then ``extra`` (name, value) pairs under ``# Run``."""
    lines = [
        f"Resolved settings for: {json.dumps(os.path.abspath(target))}",
        f"Settings path: {json.dumps(os.path.abspath(config_path)) if config_path else 'none (defaults)'}",
    ]
    for title, obj in sections:
        lines += ["", f"# {title}", *format_fields(obj, skip=("path",), names=names)]
    extra = list(extra)
    if extra:
        lines += ["", "# Run", *(f"{k} = {format_value(v, names)}" for k, v in extra)]
    return "\n".join(lines) + "\n"
