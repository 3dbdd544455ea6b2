"""Loading settings (settings.py): the nearest pyproject.toml with a
[tool.autograd-lint] table (or ``--config``), validated key by key, merged
with command-line overrides.
"""

from __future__ import annotations

import os
import re
import sys

from autograd_lint.discovery import DEFAULT_INCLUDE, DiscoveryOptions
from autograd_lint.record import Record
from autograd_lint.settings import Settings

TYPE_CHECKING = False  # typing costs 4 ms at start-up; type checkers take this name as true
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any, Mapping


# ---------------------------------------------------------------------------
# Loading: pyproject.toml [tool.autograd-lint] (or a standalone toml), merged
# with command-line overrides.
# ---------------------------------------------------------------------------

TABLE = "autograd-lint"
STANDALONE_NAMES = ("autograd-lint.toml", ".autograd-lint.toml")

# key -> expected shape, checked in parse_table.
_KEYS: dict[str, str] = {
    "select": "codes",
    "extend-select": "codes",
    "ignore": "codes",
    "include": "globs",
    "extend-include": "globs",
    "exclude": "globs",
    "extend-exclude": "globs",
    "respect-gitignore": "bool",
    "force-exclude": "bool",
    "per-file-ignores": "per-file",
    "torch-version": "version",
    "rule-options": "rule-options",
}


class ConfigError(Exception):
    """A problem with configuration or selectors; its message is one line that
    names the file (or flag) and the offending key or code."""


class CliOverrides(Record, frozen=False):
    """Command-line values; None / empty means "not given, use the config"."""

    factories = {"extend_select": list, "ignore": list, "extend_exclude": list}

    def __init__(
        self,
        select: list[str] | None = None,
        extend_select: list[str] | None = None,
        ignore: list[str] | None = None,
        exclude: list[str] | None = None,
        extend_exclude: list[str] | None = None,
        respect_gitignore: bool | None = None,
        force_exclude: bool | None = None,
        torch_version: str | None = None,
        # Where stdin input claims to live; it anchors config discovery.
        stdin_filename: str | None = None,
    ) -> None:
        self._store(locals())


class FileConfig(Record):
    """The validated contents of one config table."""

    factories = {"rule_options": dict}

    def __init__(
        self,
        path: str | None = None,
        select: tuple[str, ...] | None = None,
        extend_select: tuple[str, ...] = (),
        ignore: tuple[str, ...] = (),
        include: tuple[str, ...] | None = None,
        extend_include: tuple[str, ...] = (),
        exclude: tuple[str, ...] | None = None,
        extend_exclude: tuple[str, ...] = (),
        respect_gitignore: bool | None = None,
        force_exclude: bool | None = None,
        per_file_ignores: tuple[tuple[str, frozenset[str]], ...] = (),
        torch_version: tuple[int, int] | None = None,
        rule_options: Mapping[str, Any] | None = None,
    ) -> None:
        self._store(locals())


def _load_toml(path: str) -> dict[str, Any]:
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - exercised on 3.10 only
        import tomli as tomllib
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise ConfigError(f"{path}: cannot read config file: {e.strerror or e}") from None
    try:
        return tomllib.loads(data.decode("utf-8"))
    except UnicodeDecodeError as e:
        raise ConfigError(f"{path}: invalid TOML: not UTF-8 ({e.reason})") from None
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"{path}: invalid TOML: {e}") from None


def _tool_table(data: dict[str, Any]) -> dict[str, Any] | None:
    tool = data.get("tool")
    if isinstance(tool, dict) and TABLE in tool:
        return tool[TABLE]
    return None


def parse_torch_version(value: str) -> tuple[int, int]:
    """"1.13", "2.1.0", "2.1.0+cu118" -> (major, minor). Raises ValueError."""
    m = re.fullmatch(r"\s*(\d+)(?:\.(\d+))?(?:[.+\-a-zA-Z0-9]*)\s*", value)
    if not m:
        raise ValueError(value)
    return int(m.group(1)), int(m.group(2) or 0)


def _unknown_key_message(where: str, key: str) -> str:
    import difflib  # only a misspelt key pays for importing it

    msg = f"{where}: unknown key '{key}' in [tool.{TABLE}]"
    guess = difflib.get_close_matches(key.replace("_", "-"), list(_KEYS), n=1)
    if guess:
        msg += f" (did you mean '{guess[0]}'?)"
    return msg


def _check_selectors(where: str, key: str, selectors: list[str]) -> None:
    from autograd_lint import catalog

    for s in selectors:
        try:
            catalog.expand(s)
        except catalog.UnknownSelector:
            raise ConfigError(f"{where}: {key}: unknown rule code or prefix '{s}'") from None


def _string_list(where: str, key: str, value: Any) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{where}: '{key}' must be a list of strings, got {_type_name(value)}")
    return value


def _type_name(value: Any) -> str:
    if isinstance(value, list):
        return "a list containing " + ", ".join(sorted({_type_name(v) for v in value if not isinstance(v, str)}) or ["strings"])
    return {bool: "a boolean", int: "an integer", float: "a float", str: "a string", dict: "a table"}.get(type(value), type(value).__name__)


def _ignore_codes(selectors: list[str]) -> frozenset[str]:
    # The engine matches per-file-ignores by prefix, so prefixes are kept as
    # written; "ALL" becomes every code.
    from autograd_lint import catalog

    out: set[str] = set()
    for s in selectors:
        s = s.strip().upper()
        out |= set(catalog.all_codes()) if s == "ALL" else {s}
    return frozenset(out)


def parse_table(table: Mapping[str, Any], where: str) -> FileConfig:
    """Validate one [tool.autograd-lint] table. ``where`` names its file."""
    values: dict[str, Any] = {}
    for key, value in table.items():
        kind = _KEYS.get(key)
        if kind is None:
            raise ConfigError(_unknown_key_message(where, key))
        attr = key.replace("-", "_")
        if kind == "codes":
            codes = _string_list(where, key, value)
            _check_selectors(where, key, codes)
            values[attr] = tuple(c.strip().upper() for c in codes)
        elif kind == "globs":
            values[attr] = tuple(_string_list(where, key, value))
        elif kind == "bool":
            if not isinstance(value, bool):
                raise ConfigError(f"{where}: '{key}' must be true or false, got {_type_name(value)}")
            values[attr] = value
        elif kind == "per-file":
            if not isinstance(value, dict):
                raise ConfigError(f"{where}: '{key}' must be a table of glob = [codes], got {_type_name(value)}")
            pairs = []
            for pattern, codes in value.items():
                codes = _string_list(where, f"{key}.\"{pattern}\"", codes)
                _check_selectors(where, f"{key}.\"{pattern}\"", codes)
                pairs.append((pattern, _ignore_codes(codes)))
            values[attr] = tuple(pairs)
        elif kind == "version":
            if not isinstance(value, str):
                raise ConfigError(f"{where}: '{key}' must be a string like \"2.1\", got {_type_name(value)}")
            try:
                values[attr] = parse_torch_version(value)
            except ValueError:
                raise ConfigError(f"{where}: '{key}' is not a version like \"2.1\": {value!r}") from None
        elif kind == "rule-options":
            if not isinstance(value, dict):
                raise ConfigError(f"{where}: '{key}' must be a table, got {_type_name(value)}")
            from autograd_lint.rule_options import OptionError, validate

            try:
                values[attr] = validate(value, key)
            except OptionError as e:
                raise ConfigError(f"{where}: {e}") from None
    return FileConfig(path=where, **values)


def read_config_file(path: str | os.PathLike[str]) -> FileConfig:
    """Read an explicitly named config file: a pyproject.toml (its
    [tool.autograd-lint] table, empty when absent) or a standalone toml (its
    [tool.autograd-lint] table when present, else its top level)."""
    from pathlib import Path  # ``--config``'s path as messages name it ("./a//b" is "a/b")

    return _read_config(str(Path(path)))


def _read_config(p: str) -> FileConfig:
    """``read_config_file`` for a path already in normal form (found by
    the search, from an absolute folder)."""
    if not os.path.isfile(p):
        raise ConfigError(f"{p}: config file not found")
    data = _load_toml(p)
    table = _tool_table(data)
    if table is None:
        table = {} if os.path.basename(p) == "pyproject.toml" else data
    if not isinstance(table, dict):
        raise ConfigError(f"{p}: [tool.{TABLE}] must be a table")
    return parse_table(table, p)


def find_config_file(start: str | os.PathLike[str]) -> Path | None:
    """The nearest config at or above ``start``: a standalone autograd-lint.toml,
    or a pyproject.toml that has a [tool.autograd-lint] table (a pyproject
    without one does not stop the search, as with ruff)."""
    from pathlib import Path

    folder = os.path.abspath(start)
    while True:
        here = config_in(folder)
        if here is not None:
            return Path(here)
        parent = os.path.dirname(folder)
        if parent == folder:
            return None
        folder = parent


def config_in(folder: str) -> str | None:
    """The configuration file ``folder`` (absolute) itself holds, if any."""
    for name in STANDALONE_NAMES:
        if os.path.isfile(os.path.join(folder, name)):
            return os.path.join(folder, name)
    pyproject = os.path.join(folder, "pyproject.toml")
    if os.path.isfile(pyproject) and _tool_table(_load_toml(pyproject)) is not None:
        return pyproject
    return None


def first_folder(paths: list[str], stdin_filename: str | None) -> str:
    """The folder whose configuration the run starts from: the first path's
    (a file's own folder); for stdin, the folder of ``--stdin-filename``,
    else the current folder."""
    first = paths[0] if paths else "."
    if first == "-":
        # Without a name, stdin lives in the current folder itself (not in
        # its parent, as the dirname of "." would say).
        return os.path.dirname(os.path.abspath(stdin_filename)) if stdin_filename else os.path.abspath(".")
    if os.path.isdir(first):
        return first
    return os.path.dirname(os.path.abspath(first))


def load_settings(
    paths: list[str],
    config_path: str | None,
    overrides: CliOverrides | None = None,
) -> tuple[Settings, DiscoveryOptions]:
    """The settings and discovery options of the first path (``config_path``
    wins over discovery). Raises ConfigError with a one-line message."""
    cli = overrides or CliOverrides()
    resolver = ConfigResolver(config_path, cli)
    start = first_folder(paths, cli.stdin_filename)
    return resolver.settings_for_folder(start), resolver.discovery_for(start)


class ConfigResolver:
    """Each file's settings from the configuration nearest to it (as ruff
    resolves them), or from ``config_path`` for every file; the command
    line's overrides apply to all. Each configuration is read once, and the
    torch version is inferred once per project root. Raises ConfigError
    (one line) for bad selectors or a broken configuration file."""

    def __init__(self, config_path: str | None, overrides: CliOverrides | None = None) -> None:
        from autograd_lint import catalog

        self.cli = overrides or CliOverrides()
        for flag, values in (("--select", self.cli.select or []), ("--extend-select", self.cli.extend_select), ("--ignore", self.cli.ignore)):
            for s in values:
                try:
                    catalog.expand(s)
                except catalog.UnknownSelector:
                    raise ConfigError(f"{flag}: unknown rule code or prefix '{s}'") from None
        self.cli_torch: tuple[int, int] | None = None
        if self.cli.torch_version is not None:
            try:
                self.cli_torch = parse_torch_version(self.cli.torch_version)
            except ValueError:
                raise ConfigError(f"--torch-version: not a version like \"2.1\": {self.cli.torch_version!r}") from None
        self._forced: tuple[FileConfig, str] | None = None
        if config_path is not None:
            self._forced = (read_config_file(config_path), os.path.dirname(os.path.abspath(config_path)))
        self._nearest: dict[str, str | None] = {}  # folder -> its nearest config file
        self._configs: dict[str | None, tuple[FileConfig, str]] = {}  # config file -> (config, its root)
        self._settings: dict[tuple, Settings] = {}
        self._by_folder: dict[str, Settings] = {}
        self._torch: dict[str | None, tuple[int, int] | None] = {}
        self._roots: dict[str, str | None] = {}

    def _config_of(self, folder: str) -> tuple[FileConfig, str]:
        if self._forced is not None:
            return self._forced
        found = self._nearest_config(folder)
        hit = self._configs.get(found)
        if hit is None:
            hit = self._configs[found] = (_read_config(found), os.path.dirname(found)) if found else (FileConfig(), os.getcwd())
        return hit

    def _nearest_config(self, folder: str) -> str | None:
        # Each folder is looked at once, whatever the number of files below it.
        if folder in self._nearest:
            return self._nearest[folder]
        here = config_in(folder)
        if here is None:
            parent = os.path.dirname(folder)
            here = self._nearest_config(parent) if parent != folder else None
        self._nearest[folder] = here
        return here

    def _torch_version(self, config: FileConfig, folder: str) -> tuple[int, int] | None:
        if self.cli_torch is not None:
            return self.cli_torch
        if config.torch_version is not None:
            return config.torch_version
        # Neither the config nor the command line names it: the project's
        # own torch pin (None when unpinned), per project root.
        from autograd_lint.project import project_requirements, torch_version_from_requirements

        root = self._project_root(folder)
        if root not in self._torch:
            self._torch[root] = torch_version_from_requirements(project_requirements(root)) if root is not None else None
        return self._torch[root]

    def _project_root(self, folder: str) -> str | None:
        """``project.find_project_root``, each folder looked at once."""
        from autograd_lint.project import has_marker

        if folder in self._roots:
            return self._roots[folder]
        if has_marker(folder):
            root: str | None = folder
        elif os.path.exists(os.path.join(folder, ".git")):
            root = None  # the repository's top: no project above it counts
        else:
            parent = os.path.dirname(folder)
            root = self._project_root(parent) if parent != folder else None
        self._roots[folder] = root
        return root

    def settings_for_folder(self, folder: str) -> Settings:
        """The settings of the files in ``folder`` (found once per folder)."""
        folder = os.path.abspath(folder)
        known = self._by_folder.get(folder)
        if known is not None:
            return known
        config, root = self._config_of(folder)
        torch_version = self._torch_version(config, folder)
        key = (config.path, root, torch_version)
        hit = self._settings.get(key)
        if hit is None:
            hit = self._settings[key] = self._make(config, root, torch_version)
        self._by_folder[folder] = hit
        return hit

    def settings_for(self, path: str) -> Settings:
        """The settings of the file at ``path``."""
        return self.settings_for_folder(path if os.path.isdir(path) else os.path.dirname(os.path.abspath(path)))

    def config_for(self, path: str) -> tuple[FileConfig, str]:
        """The configuration the file (or folder) at ``path`` uses, and its
        project root (``--show-settings``)."""
        return self._config_of(os.path.abspath(path if os.path.isdir(path) else os.path.dirname(os.path.abspath(path))))

    def _make(self, config: FileConfig, root: str, torch_version: tuple[int, int] | None) -> Settings:
        from autograd_lint import catalog

        select = self.cli.select if self.cli.select is not None else config.select
        enabled = catalog.resolve_selection(select, [*config.extend_select, *self.cli.extend_select], [*config.ignore, *self.cli.ignore])
        return Settings(enabled=enabled, per_file_ignores=config.per_file_ignores, torch_version=torch_version, rule_options=dict(config.rule_options), root=root)

    def discovery_for(self, folder: str) -> DiscoveryOptions:
        """How folders under ``folder`` are walked: the excludes of the
        configuration nearest to it, relative to that configuration."""
        config, root = self._config_of(os.path.abspath(folder))
        exclude = tuple(self.cli.exclude) if self.cli.exclude is not None else (config.exclude or ())
        include = config.include if config.include is not None else DEFAULT_INCLUDE
        return DiscoveryOptions(
            exclude=(*exclude, *config.extend_exclude, *self.cli.extend_exclude),
            root=root,
            include=(*include, *config.extend_include),
            respect_gitignore=_first_set(self.cli.respect_gitignore, config.respect_gitignore, True),
            force_exclude=_first_set(self.cli.force_exclude, config.force_exclude, False),
        )


def _first_set(*values: bool | None) -> bool:
    """The command line's value, else the configuration's, else the default."""
    return next(v for v in values if v is not None)
