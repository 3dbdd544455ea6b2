"""Project modules: the file an import names, and the whole run's view of
them (resolve.Project) that decides what a finding depends on in other
modules.

A linted file's imports are found the way Python would find them when the
file runs or is imported: relative imports against the file's package;
absolute ones in the file's own folder (a script's ``from meters import
AverageMeter``), above its package, in the project root and its ``src/``,
and in the folders named on the command line. Never in installed packages
(``site-packages``) or virtual environments: those are libraries, known to
the analysis by name only.

Every module is parsed once per run: the summaries of linted files come
with their lint; a module only imported is summarised when a finding first
needs it.
"""

from __future__ import annotations

import os
from functools import lru_cache
from typing import Callable, Iterable, Mapping, Protocol

from autograd_lint.analysis.resolve import CallRecord
from autograd_lint.analysis.resolve import EntryGradOn, GradNotOff, Resolver
from autograd_lint.analysis.summaries import ModuleSummary
from autograd_lint.analysis.values import AttrStep, FunctionObj, GradMode, ImportRoot, Ref, Sym, Value

PROJECT_MARKERS = ("pyproject.toml", "setup.py", "setup.cfg", ".git")
_LIBRARY_DIRS = frozenset({"site-packages", "dist-packages", "node_modules"})


def _key(path: str) -> str:
    return os.path.realpath(os.path.abspath(path))


class ModuleFinder:
    """Finds the project file an import statement names."""

    def __init__(self, roots: Iterable[str] = ()) -> None:
        self.roots = [_key(r) for r in roots if os.path.isdir(r)]
        self._cache: dict[tuple, str | None] = {}

    def resolve(self, importer: str, module: str, level: int) -> str | None:
        key = (os.path.dirname(_key(importer)), module, level)
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
        return None

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
    """A linted file as the project sees it (file_analysis.FileAnalysis)."""

    @property
    def summary(self) -> ModuleSummary | None: ...

    @property
    def calls(self) -> tuple[CallRecord, ...]: ...


class ProjectIndex:
    """The modules of one run (resolve.Project): summaries of the linted
    files, of the modules they import (loaded once, when first needed), and
    every call the linted files make, joined into each function's entry
    grad mode."""

    def __init__(self, finder: ModuleFinder, outlines: Mapping[str, Outlined], load: Callable[[str], ModuleSummary | None]) -> None:
        """``outlines``: the linted files (their summaries and calls, read
        only when a finding needs them); ``load``: the summary of a module
        only imported."""
        self.finder = finder
        self._outlines = {_key(p): o for p, o in outlines.items()}
        self._load = load
        self._loaded: dict[str, ModuleSummary | None] = {}
        self._by_name: dict[str, list[tuple[str, CallRecord]]] | None = None
        self._resolved: dict[tuple[str, CallRecord], frozenset[Ref]] = {}
        self._modes: dict[Ref, GradMode] = {}
        self._active: set[Ref] = set()

    # -- resolve.Project -------------------------------------------------------------

    def module(self, importer: str, module: str, level: int) -> ModuleSummary | None:
        path = self.finder.resolve(importer, module, level)
        return self.summary_of(path) if path is not None else None

    def summary_of(self, file: str) -> ModuleSummary | None:
        key = _key(file)
        linted = self._outlines.get(key)
        if linted is not None and linted.summary is not None:
            return linted.summary
        if key not in self._loaded:
            self._loaded[key] = self._load(key) if os.path.isfile(key) else None
        return self._loaded[key]

    def external_grads(self, ref: Ref) -> list[GradMode] | None:
        sites = self._sites_of(ref)
        if not sites:
            return None
        return [self._site_mode(r) for r in sites]

    def static_grad_memory(self) -> bool:
        return any(o.summary is not None and o.summary.static_grad_memory for o in self._outlines.values())

    # -- entry grad modes ------------------------------------------------------------

    def _sites_of(self, ref: Ref) -> list[CallRecord]:
        """The calls in the linted files that reach ``ref``. Only records
        that name a function called like ``ref`` (its last name) are
        resolved, each once: resolving every call of a large project
        through its summaries would cost more than linting it."""
        if self._by_name is None:
            self._by_name = {}
            for file, linted in self._outlines.items():
                for r in linted.calls:
                    name = _called_name(r.target)
                    if name is not None:
                        self._by_name.setdefault(name, []).append((file, r))
        out = []
        for file, r in self._by_name.get(ref.qualname.rsplit(".", 1)[-1], ()):
            key = (file, r)
            if key not in self._resolved:
                resolver = Resolver(None, self, self._outlines[file].summary)
                self._resolved[key] = frozenset(f.fn for f in resolver.value(r.target) if type(f) is FunctionObj)
            if ref in self._resolved[key]:
                out.append(r)
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


def _called_name(target: Value) -> str | None:
    """The last name a call's callee is reached by (``evaluate`` in
    ``metrics.evaluate(...)``, ``from metrics import evaluate``, or
    ``self.model.evaluate``); None for a callee reached otherwise (the
    result of another call)."""
    for f in target:
        t = type(f)
        if t is FunctionObj:
            return f.fn.qualname.rsplit(".", 1)[-1]
        if t is Sym:
            if f.path:
                last = f.path[-1]
                if type(last) is AttrStep:
                    return last.name
            elif type(f.root) is ImportRoot and f.root.name is not None:
                return f.root.name
    return None
