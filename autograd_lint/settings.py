"""Settings: what the engine needs to lint one file (plain data; config.py
loads them)."""

from __future__ import annotations

import fnmatch
import os

from autograd_lint.record import Record

TYPE_CHECKING = False  # typing costs 4 ms at start-up; type checkers take this name as true
if TYPE_CHECKING:
    from typing import Any, Mapping


class Settings(Record):
    factories = {"rule_options": dict}

    def __init__(
        self,
        # Codes enabled after select/extend-select/ignore resolution.
        enabled: frozenset[str],
        # (glob pattern, codes) pairs from per-file-ignores.
        per_file_ignores: tuple[tuple[str, frozenset[str]], ...] = (),
        # The torch version the project targets, e.g. (1, 13); None when unknown.
        torch_version: tuple[int, int] | None = None,
        # Per-rule options, keyed by rule option name.
        rule_options: Mapping[str, Any] | None = None,
        # The project root (the folder of the pyproject.toml used), for relative
        # matching of per-file-ignores and excludes.
        root: str | None = None,
    ) -> None:
        self._store(locals())


class FileSettings(Record):
    """Each file's settings, by its path as named (the configuration nearest
    to each file); ``default`` for any other file (a module only imported).
    Sent once to a process pool's workers."""

    def __init__(self, by_path: Mapping[str, Settings], default: Settings) -> None:
        self._store(locals())

    def __call__(self, path: str) -> Settings:
        return self.by_path.get(path, self.default)


def settings_of(settings: "Settings | FileSettings", path: str) -> Settings:
    """The settings of ``path``: ``settings`` itself, or its entry for it."""
    return settings(path) if isinstance(settings, FileSettings) else settings


def _matches(path: str, pattern: str, root: str | None) -> bool:
    """``path`` (as named, by its file name, or relative to ``root``) matches
    a per-file-ignores glob."""
    candidates = {path, os.path.basename(os.path.normpath(path))}
    if root:
        try:
            candidates.add(os.path.relpath(os.path.abspath(path), root))
        except ValueError:
            pass
    candidates = {c.replace(os.sep, "/") for c in candidates}
    return any(fnmatch.fnmatch(c, pattern) or fnmatch.fnmatch(c, pattern.rstrip("/") + "/*") for c in candidates)


def enabled_for(path: str, settings: Settings) -> frozenset[str]:
    """The codes enabled for ``path``: ``enabled`` less its per-file-ignores."""
    enabled = set(settings.enabled)
    for pattern, codes in settings.per_file_ignores:
        if _matches(path, pattern, settings.root):
            enabled = {c for c in enabled if not any(c.startswith(x) for x in codes)}
    return frozenset(enabled)
