"""`--fix` reports what `check` would report on the fixed code: the same
findings, counted the same, with the same exit code, findings that wait on
other modules of the project included (a model class imported from the
project's own module, an `AverageMeter` defined in another file). The
pre-commit hooks `autograd-lint` and `autograd-lint-fix` then agree."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from _cli_support import run

ROOT = Path(__file__).resolve().parent.parent
PROJECTS = sorted(p for p in (ROOT / "fixtures").glob("AGL*/*") if p.is_dir() and any(p.glob("*.py")))
FINDING = re.compile(r"^(\S+?):(\d+):(\d+): (AGL\d+) ")


def _findings(out: str) -> list[tuple[str, str, str]]:
    return sorted((Path(m[1]).name, m[2], m[4]) for m in map(FINDING.match, out.splitlines()) if m)


@pytest.mark.parametrize("project", PROJECTS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_fix_reports_what_check_reports_on_the_fixed_project(project: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    fixed = tmp_path / project.name
    shutil.copytree(project, fixed, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.chdir(tmp_path)
    fix_code, fix_out, _ = run(capsys, "--fix", "--no-cache", "-j", "1", "--format", "concise", project.name)
    check_code, check_out, _ = run(capsys, "check", "--no-cache", "-j", "1", "--format", "concise", project.name)
    assert _findings(fix_out) == _findings(check_out)
    assert fix_code == check_code
    n = len(_findings(check_out))
    if n:
        assert f"{n} remaining" in fix_out
    else:
        assert "All checks passed!" in fix_out or "0 remaining" in fix_out


@pytest.mark.parametrize("project", PROJECTS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_stdin_fix_reports_what_stdin_check_reports(project: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """The same through standard input, file by file, in the project's folder
    (the modules it imports are read from there)."""
    copy = tmp_path / project.name
    shutil.copytree(project, copy, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.chdir(copy)
    for path in sorted(copy.glob("*.py")):
        monkeypatch.setattr("sys.stdin", _Stdin(path.read_text()))
        # (`--fix -` prints the fixed code, and its report on stderr.)
        fix_code, fixed_text, fix_err = run(capsys, "--fix", "--no-cache", "--format", "concise", "--stdin-filename", path.name, "-")
        monkeypatch.setattr("sys.stdin", _Stdin(fixed_text))
        check_code, check_out, _ = run(capsys, "check", "--no-cache", "--format", "concise", "--stdin-filename", path.name, "-")
        assert _findings(fix_err) == _findings(check_out), path.name
        assert fix_code == check_code, path.name


class _Stdin:
    """Standard input holding ``text``, as bytes (`sys.stdin.buffer`)."""

    def __init__(self, text: str) -> None:
        import io

        self.buffer = io.BytesIO(text.encode())

    def read(self) -> str:
        return self.buffer.getvalue().decode()
