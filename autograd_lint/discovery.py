"""Which files to lint: walk the given paths for ``*.py`` files, pruning
default-excluded folders (VCS, virtualenvs, build output, caches), the
configured ``exclude`` / ``extend-exclude`` globs and, inside a git
repository, what git ignores (``respect-gitignore``, gitignore.py).

Paths named on the command line are linted even when excluded or ignored: the
user asked for them (as with ruff), unless ``force-exclude`` is set (for
pre-commit, which names every file).
"""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Callable, Iterable, Sequence

from autograd_lint.gitignore import GitIgnore
from autograd_lint.record import Record

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


class DiscoveryOptions(Record):
    def __init__(
        self,
        # User globs (config exclude + extend-exclude, or their CLI overrides),
        # matched against the path relative to ``root`` and against the basename.
        exclude: tuple[str, ...] = (),
        # The project root: the folder of the config file used, else the cwd.
        root: str = ".",
        use_default_excludes: bool = True,
        # File-name globs of the files a folder's walk lints (config include +
        # extend-include).
        include: tuple[str, ...] = DEFAULT_INCLUDE,
        # Skip what git ignores (.gitignore files, .git/info/exclude, the global
        # excludes file), inside a git repository.
        respect_gitignore: bool = True,
        # Paths named on the command line are excluded and ignored too.
        force_exclude: bool = False,
    ) -> None:
        self._store(locals())


class Discovered(Record, frozen=False):
    factories = {"files": list, "missing": list, "errors": list}

    def __init__(
        self,
        files: list[str] | None = None,
        # Paths given that do not exist: the run stops before linting anything,
        # since a typo must not turn into a clean run of the rest.
        missing: list[str] | None = None,
        # Folders that could not be read: reported, the rest is still linted.
        errors: list[str] | None = None,
    ) -> None:
        self._store(locals())


def _is_virtualenv(path: str) -> bool:
    # Any folder holding pyvenv.cfg is a virtualenv, whatever its name.
    return os.path.isfile(os.path.join(path, "pyvenv.cfg"))


class _Excluder:
    def __init__(self, options: DiscoveryOptions, gitignore: GitIgnore) -> None:
        self.root = os.path.abspath(options.root)
        self.defaults = DEFAULT_EXCLUDES if options.use_default_excludes else ()
        self.patterns = tuple(p.rstrip("/").replace(os.sep, "/") for p in options.exclude if p.strip())
        self.include = options.include
        self.gitignore = gitignore if options.respect_gitignore else None
        self.force_exclude = options.force_exclude

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

    gitignore = excluder_for(top).gitignore
    if gitignore is not None:
        gitignore.enter(os.path.abspath(top))
    for dirpath, dirnames, filenames in os.walk(top, onerror=on_error):
        excluder = excluder_for(dirpath)
        ignored = excluder.gitignore.folder(os.path.abspath(dirpath)) if excluder.gitignore is not None else None
        # Prune in place so os.walk never descends into excluded folders.
        dirnames[:] = sorted(
            d
            for d in dirnames
            if not excluder.excluded(os.path.join(dirpath, d), d)
            and not (excluder.defaults and _is_virtualenv(os.path.join(dirpath, d)))
            and not (ignored is not None and ignored.prunes(d))
        )
        for name in filenames:
            if not any(fnmatch.fnmatchcase(name, p) for p in excluder.include):
                continue
            if ignored is not None and ignored.ignores_file(name):
                continue
            path = os.path.normpath(os.path.join(dirpath, name))  # "./a.py" -> "a.py"
            if not excluder.excluded(path, name):
                yield path


def _force_excluded(path: str, excluder: _Excluder) -> bool:
    """Whether a walk would skip ``path``, a file or folder named on the
    command line: it, or a folder above it (below the project root), is
    excluded, or git ignores it."""
    abspath = os.path.abspath(path)
    is_dir = os.path.isdir(abspath)
    current = abspath
    while True:
        name = os.path.basename(current)
        if excluder.excluded(current, name):
            return True
        if excluder.defaults and (is_dir or current != abspath) and _is_virtualenv(current):
            return True
        parent = os.path.dirname(current)
        # The root's own name (a project in a folder named "build") and the
        # folders above it are not the project's to exclude.
        if parent == current or not _strictly_below(parent, excluder.root):
            break
        current = parent
    return excluder.gitignore is not None and excluder.gitignore.ignores_path(abspath, is_dir)


def _strictly_below(path: str, root: str) -> bool:
    return path != root and path.startswith(root.rstrip(os.sep) + os.sep)


def discover_files(paths: Sequence[str], options: DiscoveryOptions | Callable[[str], DiscoveryOptions]) -> Discovered:
    """Every file to lint under ``paths``, deduplicated and sorted. Missing
    paths and unreadable folders are reported in the result, not raised.
    ``options``: for every folder, or the options of each folder (the
    configuration nearest to it)."""
    gitignore = GitIgnore()  # each ignore file read once per run
    if isinstance(options, DiscoveryOptions):
        fixed = _Excluder(options, gitignore)
        excluder_for: Callable[[str], _Excluder] = lambda folder: fixed  # noqa: E731
    else:
        excluders: dict[DiscoveryOptions, _Excluder] = {}

        def excluder_for(folder: str) -> _Excluder:
            o = options(folder)
            if o not in excluders:
                excluders[o] = _Excluder(o, gitignore)
            return excluders[o]
    result = Discovered()
    seen: set[str] = set()
    found: list[str] = []
    for raw in paths:
        path = os.path.normpath(raw)
        is_dir = os.path.isdir(path)
        if not is_dir and not os.path.exists(path):
            result.missing.append(raw)
            continue
        excluder = excluder_for(path if is_dir else os.path.dirname(path) or ".")
        if excluder.force_exclude and _force_excluded(path, excluder):
            continue
        # A file named explicitly is linted whatever its name or excludes
        # (without force-exclude).
        candidates: Iterable[str] = _walk(path, excluder_for, result.errors) if is_dir else [path]
        for c in candidates:
            key = os.path.realpath(c)
            if key not in seen:
                seen.add(key)
                found.append(c)
    result.files = sorted(found)
    return result
