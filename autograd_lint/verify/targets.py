"""What ``verify`` lints when it is given a script and no PATH: the script and
the project modules it imports, transitively (the modules that run with it,
so a finding in any of them can be confirmed).

The file each import names is found by the project index's own resolution
(``modules.ModuleFinder``, as ``autograd-lint <folder>`` links modules); only
the import statements are read here, with the standard library's parser.
Installed packages are never followed (the finder does not look there).
"""

from __future__ import annotations

import ast
import os
from typing import Iterator, Sequence

# The "linted ..." line names at most this many imported modules.
MAX_NAMED = 8


def imported_modules(script: str, roots: Sequence[str] = ()) -> list[str]:
    """The project files ``script`` imports, directly or through each other,
    sorted; not ``script`` itself. A file that cannot be read or parsed is
    still returned (linting it says why) but not followed."""
    from autograd_lint.modules import ModuleFinder

    finder = ModuleFinder(roots)
    start = os.path.realpath(script)
    seen = {start}
    todo = [start]
    while todo:
        importer = todo.pop()
        tree = _parse(importer)
        if tree is None:
            continue
        for module, level in _loaded_modules(tree):
            hit = finder.resolve(importer, module, level)
            if hit is None:
                continue
            key = os.path.realpath(hit)
            if key not in seen:
                seen.add(key)
                todo.append(key)
    seen.discard(start)
    return sorted(_display(p) for p in seen)


def _parse(path: str) -> ast.AST | None:
    try:
        with open(path, "rb") as fh:
            return ast.parse(fh.read(), filename=path)
    except (OSError, SyntaxError, ValueError):
        return None


def _loaded_modules(tree: ast.AST) -> Iterator[tuple[str, int]]:
    """(module, relative level) of every module an import statement loads,
    as Python loads them: each package on the way (``import a.b`` runs
    ``a/__init__.py`` then ``a/b.py``) and, for ``from m import x``, ``m.x``
    in case ``x`` is a submodule. Imports inside functions count: they run
    when the function does."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield from _with_packages(alias.name, 0)
        elif isinstance(node, ast.ImportFrom):
            module, level = node.module or "", node.level or 0
            yield from _with_packages(module, level)
            for alias in node.names:
                if alias.name != "*":
                    yield (f"{module}.{alias.name}" if module else alias.name), level


def _with_packages(module: str, level: int) -> Iterator[tuple[str, int]]:
    parts = module.split(".") if module else []
    if not parts:
        yield "", level  # `from . import x`: the package itself
    for i in range(1, len(parts) + 1):
        yield ".".join(parts[:i]), level


def _display(path: str) -> str:
    """``path`` relative to the working directory when it lies below it
    (as the script is named), else absolute."""
    rel = os.path.relpath(path)
    return path if rel.startswith("..") else rel


def linted_line(paths: Sequence[str], imported: Sequence[str]) -> str:
    """The one line that says what was linted: the paths given (or the
    script), then the modules followed from the script's imports."""
    given = ", ".join(paths)
    if not imported:
        return f"linted {given}"
    named = ", ".join(imported[:MAX_NAMED])
    more = len(imported) - MAX_NAMED
    if more > 0:
        named += f" and {more} more"
    return f"linted {given} and the project modules it imports: {named}"
