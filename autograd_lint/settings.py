"""Settings: what the engine needs to lint one file (plain data; config.py
loads them)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping


@dataclass(frozen=True)
class Settings:
    # Codes enabled after select/extend-select/ignore resolution.
    enabled: frozenset[str]
    # (glob pattern, codes) pairs from per-file-ignores.
    per_file_ignores: tuple[tuple[str, frozenset[str]], ...] = ()
    # The torch version the project targets, e.g. (1, 13); None when unknown.
    torch_version: tuple[int, int] | None = None
    # Per-rule options, keyed by rule option name.
    rule_options: Mapping[str, Any] = field(default_factory=dict)
    # The project root (the folder of the pyproject.toml used), for relative
    # matching of per-file-ignores and excludes.
    root: str | None = None
