"""No input ends a run early or loses another file's findings: files that
would crash LibCST's native parser are refused by CPython's first, and a
worker process that dies anyway costs only its own file."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from _cli_support import RETENTION_LOOP, run, write
from _crash_support import crashed, die_on_marked

from autograd_lint.parsing import Unparsable, parse_module, precheck
from autograd_lint.runner import map_files
from autograd_lint.settings import Settings

DEEP_BRACKETS = "import torch\nx = " + "(" * 2000 + "1" + ")" * 2000 + "\n"
LONG_CHAIN = "import torch\nx = " + "+".join(["1"] * 100_000) + "\n"
CALL_CHAIN = "import torch\nx = f" + "()" * 50_000 + "\n"


@pytest.mark.parametrize("text", [DEEP_BRACKETS, LONG_CHAIN, CALL_CHAIN], ids=["brackets", "operators", "calls"])
def test_refused_before_libcst(text: str) -> None:
    assert precheck(text) is not None
    with pytest.raises(Unparsable):
        parse_module(text)


def test_newer_syntax_still_goes_to_libcst() -> None:
    # A plain syntax error of the running Python is LibCST's to judge.
    assert precheck("def f(:\n    pass\n") is None
    assert precheck("x = (" * 150 + "1" + ")" * 150) is None


def _tree(tmp_path: Path, n_clean: int = 8) -> Path:
    write(tmp_path / "deep.py", DEEP_BRACKETS)
    write(tmp_path / "chain.py", LONG_CHAIN)
    write(tmp_path / "buggy.py", RETENTION_LOOP)
    for i in range(n_clean):  # enough files for a process pool
        write(tmp_path / f"clean_{i}.py", "import torch\n\nx = torch.zeros(3)\n")
    return tmp_path


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_deep_file_next_to_a_buggy_one(tmp_path: Path, jobs: str) -> None:
    # In a subprocess: were LibCST given the deep file, the process would die.
    root = _tree(tmp_path)
    proc = subprocess.run([sys.executable, "-m", "autograd_lint", "-j", jobs, "--format", "concise", str(root)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 1, proc.stderr
    out = proc.stdout
    assert "buggy.py:10:9: AGL101" in out
    assert "deep.py:2:" in out and "AGL001 SyntaxError: too many nested parentheses" in out
    assert "chain.py:1:1: AGL001" in out
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_fix_next_to_a_deep_file(tmp_path: Path, jobs: str) -> None:
    root = _tree(tmp_path)
    deep = (root / "deep.py").read_bytes()
    proc = subprocess.run([sys.executable, "-m", "autograd_lint", "-j", jobs, "--fix", "--unsafe-fixes", str(root)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 1, proc.stderr  # the AGL001 findings remain
    assert "losses.append(loss.detach())" in (root / "buggy.py").read_text()
    assert (root / "deep.py").read_bytes() == deep
    assert "Traceback" not in proc.stderr


def test_a_dying_worker_costs_only_its_file(tmp_path: Path) -> None:
    files = [str(write(tmp_path / f"f{i}.py", "DIE\n" if i == 3 else "x = 1\n")) for i in range(10)]
    got = map_files(die_on_marked, files, Settings(enabled=frozenset()), jobs=2, on_crash=crashed)
    assert got[3].startswith("crashed f3.py: died")
    assert [g for i, g in enumerate(got) if i != 3] == [f"ok f{i}.py" for i in range(10) if i != 3]


def test_in_process_lint_reports_the_deep_file(tmp_path: Path, capsys) -> None:
    root = _tree(tmp_path, n_clean=0)
    code, out, _ = run(capsys, "-j", "1", "--format", "concise", str(root))
    assert code == 1
    assert "AGL101" in out and out.count("AGL001") == 2
