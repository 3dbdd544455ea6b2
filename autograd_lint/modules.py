"""Project modules: the file an import names, and the whole run's view of
them (resolve.Project) that decides what a finding depends on in other
modules.

A linted file's imports are found the way Python would find them when the
file runs or is imported: relative imports against the file's package;
absolute ones in the file's own folder (a script's ``from meters import
AverageMeter``), above its package, in the project root and its ``src/``,
in the folders named on the command line, and, for a namespace package
(no ``__init__.py``), above the folder that bears the package's name. Never in installed packages
(``site-packages``) or virtual environments: those are libraries, known to
the analysis by name only.

Every module is parsed once per run: the summaries of linted files come
with their lint; a module only imported is summarised when a finding first
needs it.
"""

from __future__ import annotations

import os
from collections import OrderedDict
from functools import lru_cache
from typing import TYPE_CHECKING, Callable, Iterable, Mapping, Protocol

from autograd_lint.analysis.resolve import CallRecord, called_name
from autograd_lint.analysis.resolve import EntryGradOn, GradNotOff, Resolver
from autograd_lint.analysis.summaries import ModuleSummary
from autograd_lint.analysis.values import FunctionObj, GradMode, Ref

if TYPE_CHECKING:
    from autograd_lint.file_analysis import OutlineIndex

PROJECT_MARKERS = ("pyproject.toml", "setup.py", "setup.cfg", ".git")
_LIBRARY_DIRS = frozenset({"site-packages", "dist-packages", "node_modules"})


def _key(path: str) -> str:
    return os.path.realpath(os.path.abspath(path))


class ModuleFinder:
    """Finds the project file an import statement names."""

    def __init__(self, roots: Iterable[str] = ()) -> None:
        self.roots = [_key(r) for r in roots if os.path.isdir(r)]
        self._cache: dict[tuple, str | None] = {}
        self._keys: dict[str, str] = {}

    def key(self, path: str) -> str:
        """``path`` as the project knows it (absolute, links resolved):
        asked for every module a condition names, hundreds of thousands of
        times in a large project, and each answer costs a system call per
        folder of the path. Kept for the run (the finder's life)."""
        hit = self._keys.get(path)
        if hit is None:
            hit = self._keys[path] = _key(path)
        return hit

    def resolve(self, importer: str, module: str, level: int) -> str | None:
        key = (os.path.dirname(self.key(importer)), module, level)
        if key in self._cache:
            return self._cache[key]
        hit = self._resolve(key[0], module, level)
        self._cache[key] = hit
        return hit

    def _resolve(self, folder: str, module: str, level: int) -> str | None:
        parts = [p for p in module.split(".") if p]
        if level > 0:
            base = folder
            for _ in range(level - 1):
                base = os.path.dirname(base)
            return _find(base, parts) if parts else _package_init(base)
        if not parts:
            return None
        for root in self._search_path(folder):
            hit = _find(root, parts)
            if hit is not None:
                return hit
        # A namespace package (PEP 420, no `__init__.py`): a file inside
        # `flood_forecast/` importing `flood_forecast.series_id_helper` is
        # run with the folder above that package on the path.
        d = folder
        while True:
            if os.path.basename(d) == parts[0]:
                hit = _find(os.path.dirname(d), parts)
                if hit is not None:
                    return hit
            parent = os.path.dirname(d)
            if parent == d:
                return None
            d = parent

    def _search_path(self, folder: str) -> list[str]:
        out = [folder]
        # Above the package the file belongs to (absolute imports inside a
        # package name it from its parent folder).
        top = folder
        while os.path.isfile(os.path.join(top, "__init__.py")):
            top = os.path.dirname(top)
        out.append(top)
        root = _project_root(folder)
        if root is not None:
            out.extend([root, os.path.join(root, "src")])
        out.extend(self.roots)
        seen: set[str] = set()
        return [d for d in out if not (d in seen or seen.add(d)) and os.path.isdir(d)]  # type: ignore[func-returns-value]


def _find(base: str, parts: list[str]) -> str | None:
    path = os.path.join(base, *parts)
    if any(p in _LIBRARY_DIRS for p in path.split(os.sep)):
        return None
    if os.path.isfile(path + ".py"):
        return path + ".py"
    return _package_init(path)


def _package_init(path: str) -> str | None:
    init = os.path.join(path, "__init__.py")
    return init if os.path.isfile(init) else None


@lru_cache(maxsize=4096)
def _project_root(folder: str) -> str | None:
    d = folder
    while True:
        if any(os.path.exists(os.path.join(d, m)) for m in PROJECT_MARKERS):
            return d
        parent = os.path.dirname(d)
        if parent == d:
            return None
        d = parent


class Outlined(Protocol):
    """A linted file as the project sees it (file_analysis.FileAnalysis):
    its index always at hand, its outline read when asked for."""

    @property
    def outline(self) -> tuple[ModuleSummary | None, tuple[CallRecord, ...]]: ...

    @property
    def calls(self) -> tuple[CallRecord, ...]: ...

    @property
    def index(self) -> OutlineIndex: ...


# How many outlines (and imported modules' summaries) stay read at once. A
# project's outlines do not all fit in memory (up to a few hundred KiB each once read), and
# the ones a run needs cluster: the modules a few files import, the callers
# of a few functions. One read again costs a cache entry's read.
OUTLINES_KEPT = 32
# How many modules a project-wide fact of one module follows through its
# imports (a CUDA-graph capture in a module it imports).
IMPORTS_FOLLOWED = 256


class ProjectIndex:
    """The modules of one run (resolve.Project): summaries of the linted
    files, of the modules they import (loaded when first needed, kept while
    used), and the calls the linted files make, joined into each function's
    entry grad mode."""

    def __init__(self, finder: ModuleFinder, outlines: Mapping[str, Outlined], load: Callable[[str], ModuleSummary | None]) -> None:
        """``outlines``: the linted files (their outlines read only when a
        finding needs them); ``load``: the summary of a module only
        imported."""
        self.finder = finder
        self._outlines = {finder.key(p): o for p, o in outlines.items()}
        self._load = load
        self._read: OrderedDict[str, tuple[ModuleSummary | None, tuple[CallRecord, ...]]] = OrderedDict()
        self._loaded: OrderedDict[str, ModuleSummary | None] = OrderedDict()
        self._by_name: dict[str, list[str]] | None = None
        self._named: dict[str, list[tuple[CallRecord, frozenset[Ref]]]] = {}
        self._modes: dict[Ref, GradMode] = {}
        self._active: set[Ref] = set()

    # -- resolve.Project -------------------------------------------------------------

    def module(self, importer: str, module: str, level: int) -> ModuleSummary | None:
        path = self.finder.resolve(importer, module, level)
        return self.summary_of(path) if path is not None else None

    def summary_of(self, file: str) -> ModuleSummary | None:
        key = self.finder.key(file)
        if key in self._outlines:
            summary = self._outline_of(key)[0]
            if summary is not None:
                return summary
        if key in self._loaded:
            self._loaded.move_to_end(key)
            return self._loaded[key]
        summary = self._load(key) if os.path.isfile(key) else None
        _keep(self._loaded, key, summary)
        return summary

    def external_grads(self, ref: Ref) -> list[GradMode] | None:
        sites = self._sites_of(ref)
        if not sites:
            return None
        return [self._site_mode(r) for r in sites]

    def static_grad_memory(self, file: str | None) -> bool:
        if file is None:
            return any(o.index.static_grad_memory for o in self._outlines.values())
        # The module and the project modules it imports, transitively
        # (bounded: a fact past the bound is not known, so not taken).
        start = self.finder.key(file)
        seen = {start}
        todo = [start]
        while todo and len(seen) <= IMPORTS_FOLLOWED:
            key = todo.pop()
            summary = self.summary_of(key)
            if summary is None:
                continue
            if summary.static_grad_memory:
                return True
            for module, level in summary.imports:
                path = self.finder.resolve(key, module, level)
                if path is not None:
                    path = self.finder.key(path)
                    if path not in seen:
                        seen.add(path)
                        todo.append(path)
        return False

    def _outline_of(self, key: str) -> tuple[ModuleSummary | None, tuple[CallRecord, ...]]:
        got = self._read.get(key)
        if got is None:
            got = self._outlines[key].outline
            _keep(self._read, key, got)
        else:
            self._read.move_to_end(key)
        return got

    # -- entry grad modes ------------------------------------------------------------

    def _sites_of(self, ref: Ref) -> list[CallRecord]:
        """The calls in the linted files that reach ``ref``. Only the files
        whose index names a call by ``ref``'s last name are read, once per
        name, and only their records called by that name are resolved:
        resolving every call of a large project through its summaries
        would cost more than linting it."""
        name = ref.qualname.rsplit(".", 1)[-1]
        named = self._named.get(name)
        if named is None:
            named = self._named[name] = self._calls_named(name)
        return [r for r, reached in named if ref in reached]

    def _calls_named(self, name: str) -> list[tuple[CallRecord, frozenset[Ref]]]:
        """Every call the linted files make by ``name``, with the functions
        it reaches, in file and call order."""
        if self._by_name is None:
            self._by_name = {}
            for file, linted in self._outlines.items():
                for called in linted.index.called:
                    self._by_name.setdefault(called, []).append(file)
        out = []
        for file in self._by_name.get(name, ()):
            # The calls alone: the caller's own summary is read (kept with the
            # others, ``summary_of``) only where a call reaches into it.
            held = self._read.get(file)
            calls = held[1] if held is not None else self._outlines[file].calls
            for r in calls:
                if called_name(r.target) == name:
                    reached = Resolver(None, self).value(r.target)
                    out.append((r, frozenset(f.fn for f in reached if type(f) is FunctionObj)))
        return out

    def _site_mode(self, r: CallRecord) -> GradMode:
        """The grad mode a call is made in, once what it inherits from its
        caller (and imported context managers) is known."""
        m = r.grad
        for c in r.conds:
            if type(c) is EntryGradOn:
                caller = self.mode(c.ref)
                if caller is GradMode.OFF:
                    m = GradMode.OFF
                elif caller is GradMode.MAYBE and m is GradMode.ON:
                    m = GradMode.MAYBE
            elif type(c) is GradNotOff and Resolver(None, self).holds(c) is False:
                m = GradMode.OFF
        return m

    def mode(self, ref: Ref) -> GradMode:
        if ref in self._modes:
            return self._modes[ref]
        if ref in self._active:
            return GradMode.ON
        self._active.add(ref)
        try:
            modes = self.external_grads(ref) or [GradMode.ON]
        finally:
            self._active.discard(ref)
        out = modes[0]
        for m in modes[1:]:
            if m is not out:
                out = GradMode.MAYBE
        self._modes[ref] = out
        return out


def _keep(kept: OrderedDict, key: str, value) -> None:
    kept[key] = value
    if len(kept) > OUTLINES_KEPT:
        kept.popitem(last=False)
