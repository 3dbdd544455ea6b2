"""What `autograd-lint verify` lints and which interpreter runs the program:
the project modules a script imports are linted with it, and an interpreter
without torch is refused once, before anything runs. No torch needed (the
program never runs here; test_verify_project.py runs it)."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

import pytest
from _cli_support import write

from autograd_lint.verify.runner import main as verify_main
from autograd_lint.verify.targets import imported_modules, linted_line

# A loss kept with its graph (AGL101) in a module the script imports.
MODEL = """\
import torch
from torch import nn


def fit(steps: int) -> list:
    model = nn.Linear(4, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    losses = []
    for _ in range(steps):
        loss = model(torch.randn(8, 4)).pow(2).mean()
        losses.append(loss)
        opt.zero_grad()
        loss.backward()
        opt.step()
    return losses
"""
TRAIN = "from mypkg.model import fit\n\nfit(5)\n"


def two_module_project(root: Path) -> Path:
    write(root / "mypkg" / "__init__.py", "")
    write(root / "mypkg" / "model.py", MODEL)
    return write(root / "train.py", TRAIN)


def python_without_torch(path: Path) -> Path:
    """This interpreter, isolated and without site-packages: no torch,
    whatever is installed where the tests run."""
    write(path, f"#!/bin/sh\nexec {shlex.quote(sys.executable)} -I -S \"$@\"\n")
    path.chmod(0o755)
    return path


def test_imports_followed_transitively_through_the_project_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    write(tmp_path / "train.py", "import os\nimport torch\nfrom mypkg.model import fit\n\ndef main():\n    import mypkg.util as u\n")
    write(tmp_path / "mypkg" / "__init__.py", "")
    write(tmp_path / "mypkg" / "model.py", "from .layers import Block\nfrom . import helpers\n")
    write(tmp_path / "mypkg" / "layers.py", "from mypkg import model\n\nclass Block: ...\n")  # a cycle back
    write(tmp_path / "mypkg" / "helpers.py", "")
    write(tmp_path / "mypkg" / "util.py", "")
    write(tmp_path / "mypkg" / "unused.py", "")
    write(tmp_path / "other.py", "")
    assert imported_modules("train.py") == [
        "mypkg/__init__.py", "mypkg/helpers.py", "mypkg/layers.py", "mypkg/model.py", "mypkg/util.py",
    ]
    assert imported_modules("other.py") == []


def test_a_broken_module_is_linted_but_not_followed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    write(tmp_path / "train.py", "import broken\n")
    write(tmp_path / "broken.py", "import deeper\ndef f(:\n")
    write(tmp_path / "deeper.py", "")
    assert imported_modules("train.py") == ["broken.py"]


def test_linted_line_names_the_imported_modules() -> None:
    assert linted_line(["train.py"], []) == "linted train.py"
    assert linted_line(["train.py"], ["a.py"]) == "linted train.py and the project modules it imports: a.py"
    many = [f"m{i}.py" for i in range(10)]
    assert linted_line(["train.py"], many).endswith("m6.py, m7.py and 2 more")


def test_an_interpreter_without_torch_is_one_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    two_module_project(tmp_path)
    bare = python_without_torch(tmp_path / "bin" / "bare-python")
    assert verify_main(["--python", str(bare), "train.py"]) == 2
    out, err = capsys.readouterr()
    assert out == ""  # no per-finding "unverifiable" blocks: nothing ran
    assert err.splitlines() == [
        "autograd-lint: linted train.py and the project modules it imports: mypkg/__init__.py, mypkg/model.py",
        f"autograd-lint: error: verify runs your program with {bare}; install torch there or pass --python PATH",
    ]


def test_the_commands_python_is_found_on_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    two_module_project(tmp_path)
    bare = python_without_torch(tmp_path / "bin" / "python")
    monkeypatch.setenv("PATH", str(bare.parent))
    assert verify_main(["--", "python", "train.py"]) == 2
    assert f"verify runs your program with {bare};" in capsys.readouterr().err

    monkeypatch.setenv("PATH", str(tmp_path / "nowhere"))
    assert verify_main(["--", "python", "train.py"]) == 2
    assert "`python` is not on PATH" in capsys.readouterr().err

    assert verify_main(["--python", str(tmp_path / "missing"), "train.py"]) == 2
    assert "no such executable" in capsys.readouterr().err


def test_explicit_paths_are_linted_as_given(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    # PATHs given: only they are linted (here the script, which has no
    # finding of its own), whatever the script imports.
    monkeypatch.chdir(tmp_path)
    two_module_project(tmp_path)
    assert verify_main(["train.py", "--", "python", "train.py"]) == 0
    out, err = capsys.readouterr()
    assert "autograd-lint: linted train.py\n" in err
    assert "No findings to verify" in out
