"""Each file uses the configuration nearest to it (as ruff resolves it):
two projects linted in one run keep their own settings, in any argument
order, in the CLI, ``--fix`` and the server; ``--config`` forces one for
all; excludes are relative to the configuration that holds them; the
torch version is inferred per project root."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _cli_support import RETENTION_LOOP, pyproject, run, write

# AGL402: `zero_grad()` without set_to_none where the project targets torch < 2.
ZERO_GRAD = """\
import torch


def step(model, opt, x):
    opt.zero_grad()
    model(x).sum().backward()
    opt.step()
"""


def _monorepo(root: Path) -> Path:
    pyproject(root / "a", 'ignore = ["AGL101"]\nextend-exclude = ["generated"]\n')
    pyproject(root / "b", "")
    for project in ("a", "b"):
        write(root / project / "train.py", RETENTION_LOOP)
        write(root / project / "generated" / "loop.py", RETENTION_LOOP)
        for i in range(4):  # enough files for a process pool with -j 2
            write(root / project / f"clean_{i}.py", "import torch\n\nx = torch.zeros(3)\n")
    return root


def _found(out: str) -> list[tuple[str, str]]:
    return sorted((Path(f["filename"]).relative_to(Path.cwd()).as_posix(), f["code"]) for f in json.loads(out))


@pytest.mark.parametrize("order", [("a", "b"), ("b", "a")])
@pytest.mark.parametrize("jobs", ["1", "2"])
def test_each_project_keeps_its_settings(tmp_path: Path, capsys, monkeypatch, order, jobs) -> None:
    monkeypatch.chdir(_monorepo(tmp_path))
    code, out, err = run(capsys, "--format", "json", "--no-cache", "-j", jobs, *order)
    assert code == 1, err
    # a ignores AGL101 and excludes its generated/ folder; b does neither.
    assert _found(out) == [("b/generated/loop.py", "AGL101"), ("b/train.py", "AGL101")]


def test_config_forces_one_configuration_for_all(tmp_path: Path, capsys, monkeypatch) -> None:
    monkeypatch.chdir(_monorepo(tmp_path))
    code, out, _ = run(capsys, "--format", "json", "--no-cache", "--config", "a/pyproject.toml", "b", "a")
    assert code == 0 and _found(out) == []


@pytest.mark.parametrize("order", [("a", "b"), ("b", "a")])
def test_fix_uses_each_files_configuration(tmp_path: Path, capsys, monkeypatch, order) -> None:
    root = _monorepo(tmp_path)
    monkeypatch.chdir(root)
    run(capsys, "--fix", "--no-cache", "-j", "1", *order)
    assert "losses.append(loss.detach())" in (root / "b" / "train.py").read_text()
    assert (root / "a" / "train.py").read_text() == RETENTION_LOOP  # AGL101 is ignored there


def test_per_file_ignores_are_relative_to_their_configuration(tmp_path: Path, capsys, monkeypatch) -> None:
    pyproject(tmp_path / "a", '[tool.autograd-lint.per-file-ignores]\n"train.py" = ["AGL101"]\n')
    pyproject(tmp_path / "b", "")
    write(tmp_path / "a" / "train.py", RETENTION_LOOP)
    write(tmp_path / "b" / "train.py", RETENTION_LOOP)
    monkeypatch.chdir(tmp_path)
    _, out, _ = run(capsys, "--format", "json", "--no-cache", "b", "a")
    assert _found(out) == [("b/train.py", "AGL101")]


@pytest.mark.parametrize("order", [("old", "new"), ("new", "old")])
def test_torch_version_is_inferred_per_project(tmp_path: Path, capsys, monkeypatch, order) -> None:
    write(tmp_path / "old" / "requirements.txt", "torch>=1.12,<2\n")
    write(tmp_path / "new" / "requirements.txt", "torch>=2.1\n")
    for project in ("old", "new"):
        write(tmp_path / project / "step.py", ZERO_GRAD)
    monkeypatch.chdir(tmp_path)
    _, out, _ = run(capsys, "--format", "json", "--no-cache", "--select", "AGL402", *order)
    assert _found(out) == [("old/step.py", "AGL402")]
