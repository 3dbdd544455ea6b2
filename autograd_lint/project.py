"""The torch version a project targets, inferred from its own dependency pins.

Used when the configuration gives no ``torch-version``: the project root is
the nearest folder at or above the linted path that holds ``pyproject.toml``,
``setup.cfg``, ``setup.py`` or a ``requirements*.txt`` (the search stops at the
filesystem root and does not go above a folder holding ``.git``). Pins are read
from:

- ``pyproject.toml``: ``[project] dependencies`` (optional dependencies are
  extras, not targets, and are ignored);
- ``requirements*.txt`` in the root, following ``-r``/``--requirement``
  includes;
- ``setup.cfg``: ``[options] install_requires``.

The result is the *minimum* version the pins allow, as ``(major, minor)``, or
None when torch is unpinned or the pin cannot be read (``torch @ <url>``).
"""

from __future__ import annotations

import os
import re
import sys

TYPE_CHECKING = False  # typing costs 4 ms at start-up; type checkers take this name as true
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any, Iterable, Iterator

Version = tuple[int, int]

PROJECT_MARKERS = ("pyproject.toml", "setup.cfg", "setup.py")
REQUIREMENTS_GLOB = "requirements*.txt"

# The first version whose zero_grad() defaults to set_to_none=True, and the
# stand-in answer for "only an upper bound at or below it": some 1.x.
_TORCH_2: tuple[int, ...] = (2, 0)
_SOME_1X: Version = (1, 0)

# Compiled by `re` when first used (its cache keeps them): a run whose
# project pins nothing never pays for them.
_NAME = r"\s*([A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?)\s*"
_CLAUSE = r"\s*(===|==|~=|!=|>=|<=|>|<)\s*([^\s,;]+)\s*"
_RELEASE = r"v?(\d+(?:\.(?:\d+|\*))*)"


# ---------------------------------------------------------------------------
# Finding the project root
# ---------------------------------------------------------------------------


def has_marker(folder: str | os.PathLike[str]) -> bool:
    """``folder`` holds a project marker (its root, for the torch pin)."""
    if any(os.path.isfile(os.path.join(folder, name)) for name in PROJECT_MARKERS):
        return True
    return any(os.path.isfile(p) for p in _requirements_files(folder))


def _requirements_files(folder: str | os.PathLike[str]) -> list[str]:
    """The ``requirements*.txt`` entries of ``folder``, sorted (what
    ``Path.glob`` finds, without importing pathlib)."""
    try:
        names = os.listdir(folder)
    except OSError:
        return []
    # REQUIREMENTS_GLOB tested as strings: fnmatch would compile it to a
    # regular expression, at every start (0.2 ms).
    prefix, suffix = REQUIREMENTS_GLOB.split("*")
    return sorted(os.path.join(folder, n) for n in names if n.startswith(prefix) and n.endswith(suffix))


def find_project_root(start: Path | str) -> Path | None:
    """The nearest folder at or above ``start`` (a file or a folder) holding a
    project marker; None when there is none up to the repository root (the
    folder holding ``.git``) or the filesystem root."""
    from pathlib import Path

    p = Path(os.path.abspath(start))
    if not p.is_dir():
        p = p.parent
    for folder in (p, *p.parents):
        if has_marker(folder):
            return folder
        if (folder / ".git").exists():
            return None
    return None


# ---------------------------------------------------------------------------
# Requirement strings and specifiers
# ---------------------------------------------------------------------------


def _normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def parse_requirement(text: str) -> tuple[str, str | None] | None:
    """``"torch[cuda]>=1.10,<2; python_version<'3.12'"`` -> ``("torch", ">=1.10,<2")``.

    Returns ``(normalized name, specifier)``; the specifier is ``""`` when the
    requirement is unpinned and None for a direct reference (``name @ url``).
    None when the text is not a requirement."""
    text = text.split(";", 1)[0].strip()
    m = re.match(_NAME, text)
    if not m:
        return None
    name = _normalize(m.group(1))
    rest = text[m.end():]
    if rest.startswith("["):
        close = rest.find("]")
        if close < 0:
            return None
        rest = rest[close + 1:]
    rest = rest.strip()
    if rest.startswith("@"):
        return name, None
    if rest.startswith("(") and rest.endswith(")"):
        rest = rest[1:-1].strip()
    return name, rest


def _release(text: str) -> tuple[tuple[int, ...], bool] | None:
    """``"1.13.1+cu117"`` -> ``((1, 13, 1), False)``; ``"1.13.*"`` ->
    ``((1, 13), True)``. None when there is no release number."""
    m = re.match(_RELEASE, text.strip())
    if not m:
        return None
    parts = m.group(1).split(".")
    wildcard = "*" in parts
    if wildcard:
        parts = parts[: parts.index("*")]
    if not parts:
        return None
    return tuple(int(x) for x in parts), wildcard


def _major_minor(release: tuple[int, ...]) -> Version:
    return release[0], release[1] if len(release) > 1 else 0


def min_allowed_version(spec: str) -> Version | None:
    """The lowest ``(major, minor)`` a specifier such as ``">=1.10,<2.0"``
    allows.

    ``==``/``===``/``~=``/``>=``/``>`` give the lower bound (``>1.13`` still
    allows 1.13.x, so it gives ``(1, 13)``); ``!=`` is ignored. With only
    ``<``/``<=`` bounds the answer is ``(1, 0)`` ("some 1.x") when the bound is
    at or below 2.0, and None (unknown) above it. None for an empty or
    unreadable specifier."""
    lower: Version | None = None
    upper: tuple[int, ...] | None = None
    for clause in spec.split(","):
        if not clause.strip():
            continue
        m = re.fullmatch(_CLAUSE, clause)
        if not m:
            return None
        op, raw = m.groups()
        rel = _release(raw)
        if rel is None:
            return None
        release, _wildcard = rel
        if op == "!=":
            continue
        if op in ("<", "<="):
            upper = release if upper is None else min(upper, release)
            continue
        bound = _major_minor(release)
        lower = bound if lower is None else max(lower, bound)
    if lower is not None:
        return lower
    if upper is not None and upper <= _TORCH_2:
        return _SOME_1X
    return None


# ---------------------------------------------------------------------------
# Reading the pins
# ---------------------------------------------------------------------------


def _load_toml(path: str) -> dict[str, Any] | None:
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - exercised on 3.10 only
        import tomli as tomllib
    try:
        with open(path, encoding="utf-8") as f:
            return tomllib.loads(f.read())
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return None


def _pyproject_requirements(path: str) -> list[str]:
    data = _load_toml(path) or {}
    project = data.get("project")
    deps = project.get("dependencies") if isinstance(project, dict) else None
    if not isinstance(deps, list):
        return []
    return [d for d in deps if isinstance(d, str)]


def _logical_lines(text: str) -> Iterator[str]:
    pending = ""
    for line in text.splitlines():
        line = re.split(r"(?:^|\s)#", line, maxsplit=1)[0].rstrip()
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        yield (pending + line).strip()
        pending = ""
    if pending.strip():
        yield pending.strip()


_INCLUDE = r"(?:-r|--requirement)(?:\s*=\s*|\s+|(?=\S))(?P<file>\S+)"


def _requirements_file(path: str, seen: set[str]) -> list[str]:
    path = os.path.realpath(path)
    if path in seen:
        return []
    seen.add(path)
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except (OSError, UnicodeDecodeError):
        return []
    out: list[str] = []
    for line in _logical_lines(text):
        if not line:
            continue
        if line.startswith("-"):
            m = re.fullmatch(_INCLUDE, line)
            if m:
                out.extend(_requirements_file(os.path.join(os.path.dirname(path), m.group("file")), seen))
            continue  # other options: -c, -e, --index-url, -f, ...
        out.append(line)
    return out


def _setup_cfg_requirements(path: str) -> list[str]:
    import configparser  # only a project with a setup.cfg pays for importing it

    parser = configparser.ConfigParser(interpolation=None)
    try:
        parser.read(path, encoding="utf-8")
    except (configparser.Error, UnicodeDecodeError):
        return []
    if not parser.has_option("options", "install_requires"):
        return []
    value = parser.get("options", "install_requires")
    return [line for line in _logical_lines(value) if line and not line.startswith("-")]


def project_requirements(root: str | os.PathLike[str]) -> list[str]:
    """Every requirement string the project declares as a (non-optional)
    dependency, from all three sources."""
    out: list[str] = []
    pyproject, setup_cfg = os.path.join(root, "pyproject.toml"), os.path.join(root, "setup.cfg")
    if os.path.isfile(pyproject):
        out.extend(_pyproject_requirements(pyproject))
    seen: set[str] = set()
    for req in _requirements_files(root):
        if os.path.isfile(req):
            out.extend(_requirements_file(req, seen))
    if os.path.isfile(setup_cfg):
        out.extend(_setup_cfg_requirements(setup_cfg))
    return out


def torch_version_from_requirements(requirements: Iterable[str]) -> Version | None:
    """The lowest version any ``torch`` requirement allows; None when no torch
    requirement carries a readable pin."""
    found: list[Version] = []
    for text in requirements:
        req = parse_requirement(text)
        if req is None or req[0] != "torch" or req[1] is None:
            continue
        v = min_allowed_version(req[1])
        if v is not None:
            found.append(v)
    return min(found) if found else None


def infer_torch_version(start: Path | str) -> Version | None:
    """The minimum torch ``(major, minor)`` the project at or above ``start``
    allows, from its own dependency pins; None when unknown."""
    root = find_project_root(start)
    if root is None:
        return None
    return torch_version_from_requirements(project_requirements(root))
