"""``--format github``: GitHub Actions workflow commands and their escaping."""

from __future__ import annotations

from pathlib import Path

import pytest

from _cli_support import CLEAN_SOURCE, SYNTAX_ERROR_SOURCE, write
from autograd_lint import cli
from autograd_lint.finding import Finding, Location
from autograd_lint.report.github import command, escape_data, escape_property, render_github


def test_escape_data() -> None:
    assert escape_data("100% sure\r\nnext") == "100%25 sure%0D%0Anext"
    # `%` first, so escapes are not escaped twice; `:` and `,` stay in data.
    assert escape_data("%0A, a: b") == "%250A, a: b"


def test_escape_property() -> None:
    assert escape_property("a:b,c%d\ne\rf") == "a%3Ab%2Cc%25d%0Ae%0Df"


def test_command_shape_and_levels(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    f = Finding("AGL101", "`loss` kept: 100%,\nreally", "src/a,b:c.py", Location(3, 5), Location(3, 9))
    assert command(f) == (
        "::warning file=src/a%2Cb%3Ac.py,line=3,col=5,endLine=3,endColumn=9,title=AGL101"
        "::`loss` kept: 100%25, really"
    )
    g = Finding("AGL201", "in-place", str(tmp_path / "x.py"), Location(1, 1), Location(2, 4))
    assert command(g) == "::error file=x.py,line=1,col=1,endLine=2,endColumn=4,title=AGL201::in-place"
    h = Finding("AGL001", "SyntaxError", "y.py", Location(1, 1), Location(1, 1))
    assert command(h).startswith("::error ")
    assert render_github([f, g]) == command(f) + "\n" + command(g) + "\n"
    assert render_github([]) == ""


def test_cli_github_format(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    write(tmp_path / "src" / "broken.py", SYNTAX_ERROR_SOURCE)
    write(tmp_path / "src" / "clean.py", CLEAN_SOURCE)
    assert cli.main(["--format", "github", "src"]) == 1
    out, err = capsys.readouterr()
    assert err == ""
    assert out == (
        "::error file=src/broken.py,line=3,col=7,endLine=3,endColumn=7,title=AGL001"
        "::SyntaxError: invalid syntax; the file was not checked\n"
    )
    # No summary line: only workflow commands, and nothing at all when clean.
    assert cli.main(["--format", "github", "src/clean.py"]) == 0
    assert capsys.readouterr() == ("", "")
