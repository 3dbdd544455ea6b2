"""File discovery: default and configured excludes, explicit files, order."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from _cli_support import write
from autograd_lint.discovery import DiscoveryOptions, discover_files


def rel(files: list[str], root: Path) -> list[str]:
    return [Path(os.path.relpath(f, root)).as_posix() for f in files]


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    for name in [
        "a.py",
        "b.pyi",
        "notes.txt",
        "pkg/__init__.py",
        "pkg/z.py",
        "pkg/m.py",
        "pkg/__pycache__/m.cpython-311.py",
        ".git/hooks/x.py",
        ".venv/lib/x.py",
        "venv/x.py",
        "build/x.py",
        "dist/x.py",
        "node_modules/x.py",
        ".tox/x.py",
        "lib/site-packages/x.py",
        "foo.egg-info/x.py",
        "myenv/pyvenv.cfg",
        "myenv/lib/x.py",
        "gen/out.py",
        "tests/fixtures/data.py",
        "tests/test_x.py",
    ]:
        write(tmp_path / name, "")
    return tmp_path


def test_default_excludes_and_order(tree: Path) -> None:
    found = discover_files([str(tree)], DiscoveryOptions(root=str(tree)))
    assert found.errors == []
    assert rel(found.files, tree) == [
        "a.py",
        "gen/out.py",
        "pkg/__init__.py",
        "pkg/m.py",
        "pkg/z.py",
        "tests/fixtures/data.py",
        "tests/test_x.py",
    ]


def test_configured_excludes_relative_and_basename(tree: Path) -> None:
    options = DiscoveryOptions(exclude=("tests/fixtures", "gen/", "z.py"), root=str(tree))
    found = discover_files([str(tree)], options)
    assert rel(found.files, tree) == ["a.py", "pkg/__init__.py", "pkg/m.py", "tests/test_x.py"]


def test_glob_patterns(tree: Path) -> None:
    options = DiscoveryOptions(exclude=("pkg/*", "test_*.py"), root=str(tree))
    found = discover_files([str(tree)], options)
    assert rel(found.files, tree) == ["a.py", "gen/out.py", "tests/fixtures/data.py"]


def test_explicit_files_always_linted(tree: Path) -> None:
    explicit = [str(tree / "build" / "x.py"), str(tree / "notes.txt"), str(tree / "gen" / "out.py")]
    found = discover_files(explicit, DiscoveryOptions(exclude=("gen",), root=str(tree)))
    assert rel(found.files, tree) == ["build/x.py", "gen/out.py", "notes.txt"]


def test_duplicates_removed(tree: Path) -> None:
    found = discover_files([str(tree / "pkg"), str(tree / "pkg" / "m.py")], DiscoveryOptions(root=str(tree)))
    assert rel(found.files, tree) == ["pkg/__init__.py", "pkg/m.py", "pkg/z.py"]


def test_missing_path_is_error(tree: Path) -> None:
    found = discover_files([str(tree / "nope"), str(tree / "a.py")], DiscoveryOptions(root=str(tree)))
    assert found.missing == [str(tree / "nope")] and found.errors == []
    assert rel(found.files, tree) == ["a.py"]


def test_relative_paths_are_normalised(tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tree / "pkg")
    found = discover_files(["."], DiscoveryOptions(root=str(tree)))
    assert found.files == ["__init__.py", "m.py", "z.py"]


def test_unreadable_folder_reported(tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real_scandir = os.scandir

    def scandir(path):  # type: ignore[no-untyped-def]
        if os.path.basename(path) == "gen":
            raise PermissionError(13, "Permission denied", path)
        return real_scandir(path)

    # os.walk lists folders with os.scandir; root may read any folder, so a
    # chmod would not do.
    monkeypatch.setattr(os, "scandir", scandir)
    found = discover_files([str(tree)], DiscoveryOptions(root=str(tree)))
    assert len(found.errors) == 1 and "gen" in found.errors[0] and "Permission denied" in found.errors[0]
    assert "a.py" in rel(found.files, tree)
