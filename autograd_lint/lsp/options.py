"""What the server is told: the client's options, and each document's
settings (the same ``pyproject.toml`` discovery as the CLI).

Options come from ``initializationOptions`` and ``workspace/didChangeConfiguration``
(either bare or under an ``"autograd-lint"`` key)::

    {"select": ["AGL1"], "extendSelect": [], "ignore": ["AGL103"],
     "unsafeFixes": false, "debounceMs": 150, "lintTimeoutSeconds": 20,
     "configPollSeconds": 2}

``select`` / ``extendSelect`` / ``ignore`` act like the CLI flags of the same
names (on top of the project's config); ``unsafeFixes`` lets "Fix all" apply
unsafe fixes too.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from typing import Any

from autograd_lint import catalog
from autograd_lint.config import CliOverrides, ConfigError, Settings, load_settings
from autograd_lint.project import infer_torch_version

SECTION = "autograd-lint"


@dataclass(frozen=True)
class Options:
    select: tuple[str, ...] | None = None
    extend_select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    unsafe_fixes: bool = False
    debounce_s: float = 0.15
    lint_timeout_s: float = 20.0
    config_poll_s: float = 2.0
    problems: tuple[str, ...] = field(default=(), compare=False)

    def overrides(self, path: str) -> CliOverrides:
        return CliOverrides(
            select=list(self.select) if self.select is not None else None,
            extend_select=list(self.extend_select),
            ignore=list(self.ignore),
            stdin_filename=path,
        )


_CODES = {"select": "select", "extendSelect": "extend_select", "ignore": "ignore"}
_NUMBERS = {"debounceMs": ("debounce_s", 1000.0), "lintTimeoutSeconds": ("lint_timeout_s", 1.0), "configPollSeconds": ("config_poll_s", 1.0)}
KNOWN = {*_CODES, *_NUMBERS, "unsafeFixes"}


def parse_options(raw: Any, base: Options | None = None) -> Options:
    """Options from the client's JSON; a bad value is reported in
    ``problems`` and keeps its previous value."""
    opts = base or Options()
    if isinstance(raw, dict) and isinstance(raw.get(SECTION), dict):
        raw = raw[SECTION]
    elif isinstance(raw, dict) and not any(key in KNOWN for key in raw):
        # Some clients send every setting they have: none of it is ours.
        raw = None
    if not isinstance(raw, dict):
        return replace(opts, problems=())
    problems: list[str] = []
    changes: dict[str, Any] = {}
    for key, value in raw.items():
        if key in _CODES:
            if value is None and key == "select":
                changes["select"] = None
                continue
            if isinstance(value, str):
                value = [value]
            if not (isinstance(value, list) and all(isinstance(v, str) for v in value)):
                problems.append(f"{key}: expected a list of codes")
                continue
            unknown = [v for v in value if not _known(v)]
            if unknown:
                problems.append(f"{key}: unknown rule code or prefix '{unknown[0]}'")
                continue
            changes[_CODES[key]] = tuple(value)
        elif key in _NUMBERS:
            name, scale = _NUMBERS[key]
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
                problems.append(f"{key}: expected a number >= 0")
                continue
            changes[name] = value / scale
        elif key == "unsafeFixes":
            if not isinstance(value, bool):
                problems.append("unsafeFixes: expected true or false")
                continue
            changes["unsafe_fixes"] = value
        else:
            problems.append(f"unknown option '{key}'")
    return replace(opts, problems=tuple(problems), **changes)


def _known(selector: str) -> bool:
    try:
        catalog.expand(selector)
    except catalog.UnknownSelector:
        return False
    return True


def settings_for(path: str, options: Options) -> tuple[Settings, str | None]:
    """The settings the CLI would use for ``path`` with these options, and
    the config error when the project's config is broken (the defaults are
    used then, so that the editor keeps working)."""
    try:
        settings, _ = load_settings([path], None, options.overrides(path))
        return settings, None
    except ConfigError as e:
        folder = os.path.dirname(os.path.abspath(path))
        enabled = catalog.resolve_selection(options.select, list(options.extend_select), list(options.ignore))
        return Settings(enabled=enabled, torch_version=infer_torch_version(folder), root=folder), str(e)
