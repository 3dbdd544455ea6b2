"""Which files to lint: walk the given paths for ``*.py`` files, pruning
default-excluded folders (VCS, virtualenvs, build output, caches) and the
configured ``exclude`` / ``extend-exclude`` globs.

Files named explicitly on the command line are always linted: the user asked
for them (as with ruff without ``--force-exclude``).
"""

from __future__ import annotations

import fnmatch
import os
from dataclasses import dataclass, field
from typing import Callable, Iterable, Sequence

# Folder (or file) names never descended into. Matched against the basename.
DEFAULT_EXCLUDES: tuple[str, ...] = (
    ".git",
    ".hg",
    ".svn",
    ".bzr",
    ".venv",
    "venv",
    ".env",
    "env",
    "virtualenvs",
    ".virtualenvs",
    "build",
    "dist",
    "__pycache__",
    "site-packages",
    "node_modules",
    ".tox",
    ".nox",
    ".mypy_cache",
    ".pytest_cache",
    ".ruff_cache",
    ".ipynb_checkpoints",
    ".autograd-lint-cache",
    ".eggs",
    "*.egg-info",
    "__pypackages__",
    "_build",
    "buck-out",
)


# The files a folder's walk lints (matched against the file name): Python
# files and Jupyter notebooks, as with ruff.
DEFAULT_INCLUDE: tuple[str, ...] = ("*.py", "*.ipynb")


@dataclass(frozen=True)
class DiscoveryOptions:
    # User globs (config exclude + extend-exclude, or their CLI overrides),
    # matched against the path relative to ``root`` and against the basename.
    exclude: tuple[str, ...] = ()
    # The project root: the folder of the config file used, else the cwd.
    root: str = "."
    use_default_excludes: bool = True
    # File-name globs of the files a folder's walk lints (config include +
    # extend-include).
    include: tuple[str, ...] = DEFAULT_INCLUDE


@dataclass
class Discovered:
    files: list[str] = field(default_factory=list)
    # Paths given that do not exist: the run stops before linting anything,
    # since a typo must not turn into a clean run of the rest.
    missing: list[str] = field(default_factory=list)
    # Folders that could not be read: reported, the rest is still linted.
    errors: list[str] = field(default_factory=list)


def _is_virtualenv(path: str) -> bool:
    # Any folder holding pyvenv.cfg is a virtualenv, whatever its name.
    return os.path.isfile(os.path.join(path, "pyvenv.cfg"))


class _Excluder:
    def __init__(self, options: DiscoveryOptions) -> None:
        self.root = os.path.abspath(options.root)
        self.defaults = DEFAULT_EXCLUDES if options.use_default_excludes else ()
        self.patterns = tuple(p.rstrip("/").replace(os.sep, "/") for p in options.exclude if p.strip())
        self.include = options.include

    def _candidates(self, path: str) -> set[str]:
        abspath = os.path.abspath(path)
        out = {os.path.basename(abspath), abspath.replace(os.sep, "/")}
        rel = os.path.relpath(abspath, self.root)
        if not rel.startswith(".."):
            out.add(rel.replace(os.sep, "/"))
        # "./src/gen" in a config means "src/gen"
        return out | {c[2:] for c in out if c.startswith("./")}

    def excluded(self, path: str, name: str) -> bool:
        if any(fnmatch.fnmatchcase(name, p) for p in self.defaults):
            return True
        if not self.patterns:
            return False
        candidates = self._candidates(path)
        return any(
            fnmatch.fnmatchcase(c, p.removeprefix("./"))
            for c in candidates
            for p in self.patterns
        )


def _walk(top: str, excluder_for: Callable[[str], _Excluder], errors: list[str]) -> Iterable[str]:
    def on_error(err: OSError) -> None:
        errors.append(f"{err.filename or top}: cannot read directory: {err.strerror or err}")

    for dirpath, dirnames, filenames in os.walk(top, onerror=on_error):
        excluder = excluder_for(dirpath)
        # Prune in place so os.walk never descends into excluded folders.
        dirnames[:] = sorted(
            d
            for d in dirnames
            if not excluder.excluded(os.path.join(dirpath, d), d)
            and not (excluder.defaults and _is_virtualenv(os.path.join(dirpath, d)))
        )
        for name in filenames:
            if not any(fnmatch.fnmatchcase(name, p) for p in excluder.include):
                continue
            path = os.path.normpath(os.path.join(dirpath, name))  # "./a.py" -> "a.py"
            if not excluder.excluded(path, name):
                yield path


def discover_files(paths: Sequence[str], options: DiscoveryOptions | Callable[[str], DiscoveryOptions]) -> Discovered:
    """Every file to lint under ``paths``, deduplicated and sorted. Missing
    paths and unreadable folders are reported in the result, not raised.
    ``options``: for every folder, or the options of each folder (the
    configuration nearest to it)."""
    if isinstance(options, DiscoveryOptions):
        fixed = _Excluder(options)
        excluder_for: Callable[[str], _Excluder] = lambda folder: fixed  # noqa: E731
    else:
        excluders: dict[DiscoveryOptions, _Excluder] = {}

        def excluder_for(folder: str) -> _Excluder:
            o = options(folder)
            if o not in excluders:
                excluders[o] = _Excluder(o)
            return excluders[o]
    result = Discovered()
    seen: set[str] = set()
    found: list[str] = []
    for raw in paths:
        path = os.path.normpath(raw)
        if os.path.isdir(path):
            candidates: Iterable[str] = _walk(path, excluder_for, result.errors)
        elif os.path.exists(path):
            candidates = [path]  # explicit file: linted even if excluded
        else:
            result.missing.append(raw)
            continue
        for c in candidates:
            key = os.path.realpath(c)
            if key not in seen:
                seen.add(key)
                found.append(c)
    result.files = sorted(found)
    return result
