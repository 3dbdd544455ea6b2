"""The command line, run in-process through ``cli.main`` (and once for real
through ``python -m autograd_lint``). Findings come from AGL001 (syntax and
decoding errors), which needs no analysis rule."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from _cli_support import run, CLEAN_SOURCE, SYNTAX_ERROR_SOURCE, pyproject, write
from autograd_lint import __version__, catalog


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project folder (cwd) with one clean and one broken file."""
    write(tmp_path / "pyproject.toml", "[project]\nname = 'demo'\n")
    write(tmp_path / "src" / "clean.py", CLEAN_SOURCE)
    write(tmp_path / "src" / "broken.py", SYNTAX_ERROR_SOURCE)
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("NO_COLOR", raising=False)
    return tmp_path


# --- exit codes and formats -------------------------------------------------


def test_clean_run_exits_0(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "src/clean.py")
    assert (code, out, err) == (0, "All checks passed!\n", "")


def test_findings_exit_1_full_format(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "src")
    assert code == 1 and err == ""
    assert out == (
        "src/broken.py:3:7: AGL001 SyntaxError: invalid syntax; the file was not checked\n"
        "3 | def f(:\n"
        "  |       ^\n"
        "\n"
        "Found 1 finding in 1 file.\n"
    )


def test_check_subcommand_is_the_default(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(capsys, "check", "src") == run(capsys, "src")


def test_no_path_means_cwd(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "--format", "concise")
    assert code == 1 and out.startswith("src/broken.py:3:7: AGL001 ")


def test_exit_zero(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "--exit-zero", "src")
    assert code == 0 and "AGL001" in out


def test_concise_and_quiet(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "--format", "concise", "-q", "src")
    assert code == 1
    assert out == "src/broken.py:3:7: AGL001 SyntaxError: invalid syntax; the file was not checked\n"


def test_quiet_clean_prints_nothing(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(capsys, "-q", "src/clean.py") == (0, "", "")


def test_json_format(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "--format", "json", "src")
    assert code == 1
    data = json.loads(out)
    assert len(data) == 1
    item = data[0]
    assert set(item) == {"cell", "code", "end_location", "filename", "fix", "location", "message", "noqa_row", "url"}
    assert item["filename"] == str(project / "src" / "broken.py")
    assert item["location"] == {"column": 7, "row": 3}
    assert item["fix"] is None and item["cell"] is None
    assert item["url"] == catalog.url("AGL001")


def test_json_clean_is_empty_array(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "--format", "json", "src/clean.py")
    assert code == 0 and json.loads(out) == []


def test_statistics(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write(project / "src" / "broken2.py", SYNTAX_ERROR_SOURCE)
    code, out, _ = run(capsys, "--statistics", "src")
    assert code == 1
    # ruff's layout: the table, then the summary (no fix column: nothing is fixable).
    assert out == "2\tAGL001\tsyntax-error\nFound 2 findings in 2 files.\n"
    assert run(capsys, "--statistics", "-q", "src")[1] == "2\tAGL001\tsyntax-error\n"
    code, out, _ = run(capsys, "--statistics", "--format", "json", "src")
    assert json.loads(out) == [{"code": "AGL001", "name": "syntax-error", "count": 2, "fixable": False}]


def test_no_color_when_not_a_tty(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _, out, _ = run(capsys, "src")
    assert "\x1b[" not in out


def test_color_rules_on_a_tty(project: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)
    _, out, _ = run(capsys, "src")
    assert "\x1b[" in out
    _, out, _ = run(capsys, "--no-color", "src")
    assert "\x1b[" not in out
    monkeypatch.setenv("NO_COLOR", "1")
    _, out, _ = run(capsys, "src")
    assert "\x1b[" not in out


def test_undecodable_file_is_agl001(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write(project / "bin.py", b"\xff\xfe\x00bad")
    code, out, err = run(capsys, "--format", "concise", "bin.py")
    assert code == 1 and err == ""
    assert out.startswith("bin.py:1:1: AGL001 cannot decode this file")


def test_unknown_coding_cookie_is_read_as_utf8(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`# -*- coding: future_fstrings -*-` names a codec Python does not
    have (a source transform of old projects): the file is UTF-8 and is
    checked, not reported as undecodable."""
    src = (
        "# -*- coding: future_fstrings -*-\n"
        "import torch\n"
        "def train(model, opt, loader):\n"
        "    losses = []\n"
        "    for x, y in loader:\n"
        "        loss = torch.nn.functional.mse_loss(model(x), y)\n"
        "        opt.zero_grad()\n"
        "        loss.backward()\n"
        "        opt.step()\n"
        "        losses.append(loss)\n"
    )
    write(project / "old.py", src.encode("utf-8"))
    code, out, err = run(capsys, "--format", "concise", "old.py")
    assert err == "" and "AGL001" not in out
    assert out.startswith("old.py:10:9: AGL101 "), out


def test_bad_bytes_under_an_unknown_cookie_are_agl001(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write(project / "old.py", b"# -*- coding: future_fstrings -*-\nx = '\xff'\n")
    code, out, err = run(capsys, "--format", "concise", "old.py")
    assert code == 1 and out.startswith("old.py:1:1: AGL001 ")


# --- errors: exit 2, one line, no traceback -----------------------------------


def test_missing_path(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "src", "nope.py")
    assert code == 2 and out == ""
    assert err == "autograd-lint: error: nope.py: no such file or directory\n"


def test_unknown_code_on_cli(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "--select", "AGL001,AGL999", "src")
    assert code == 2 and out == ""
    assert err == "autograd-lint: error: --select: unknown rule code or prefix 'AGL999'\n"


def test_unknown_code_in_config(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cfg = pyproject(project, 'ignore = ["AGL042"]\n')
    code, out, err = run(capsys, "src")
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and str(cfg) in err and "AGL042" in err


def test_unknown_config_key(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cfg = pyproject(project, 'line-length = 88\n')
    code, _, err = run(capsys, "src")
    assert code == 2
    assert err == f"autograd-lint: error: {cfg}: unknown key 'line-length' in [tool.autograd-lint]\n"


def test_wrong_type_in_config(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cfg = pyproject(project, 'select = "AGL001"\n')
    code, _, err = run(capsys, "src")
    assert code == 2 and str(cfg) in err and "'select' must be a list of strings" in err


def test_bad_toml(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write(project / "pyproject.toml", "[tool.autograd-lint\n")
    code, _, err = run(capsys, "src")
    assert code == 2 and err.count("\n") == 1
    assert "pyproject.toml: invalid TOML:" in err and "Traceback" not in err


def test_usage_error_exits_2(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "--format", "xml", "src")
    assert code == 2 and "usage:" in err
    code, _, err = run(capsys, "-j", "-3", "src")
    assert code == 2


def test_stdin_mixed_with_paths_is_usage_error(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "-", "src")
    assert code == 2 and "stdin" in err


def test_unreadable_file_reported_others_linted(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # A dangling symlink is found by the walk but cannot be opened (even by
    # root, unlike a chmod 000 file).
    (project / "src" / "dangling.py").symlink_to(project / "nowhere.py")
    code, out, err = run(capsys, "--format", "concise", "src")
    assert code == 2
    assert out.startswith("src/broken.py:3:7: AGL001")
    assert "1 file could not be checked" in out
    assert err == "autograd-lint: error: src/dangling.py: cannot read file: No such file or directory\n"


def test_unreadable_file_in_the_pool(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for i in range(10):
        write(project / "src" / f"ok{i}.py", CLEAN_SOURCE)
    (project / "src" / "dangling.py").symlink_to(project / "nowhere.py")
    code, out, err = run(capsys, "--format", "concise", "-q", "-j", "2", "src")
    assert code == 2
    assert out == "src/broken.py:3:7: AGL001 SyntaxError: invalid syntax; the file was not checked\n"
    assert "src/dangling.py: cannot read file" in err


def test_internal_error_in_one_file(project: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    from autograd_lint import triage

    real = triage.decoded

    def flaky(path: str, source: bytes, settings):  # type: ignore[no-untyped-def]
        if path.endswith("clean.py"):
            raise RuntimeError("boom\nsecond line")
        return real(path, source, settings)

    monkeypatch.setattr(triage, "decoded", flaky)
    code, out, err = run(capsys, "--format", "concise", "-j", "1", "src")
    assert code == 2
    assert "src/broken.py:3:7: AGL001" in out
    assert err == "autograd-lint: internal error while linting src/clean.py: RuntimeError: boom\n"


def test_unexpected_error_is_one_line(project: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    from autograd_lint import discovery

    def explode(*args, **kwargs):  # type: ignore[no-untyped-def]
        raise RuntimeError("kaput")

    monkeypatch.setattr(discovery, "discover_files", explode)
    code, out, err = run(capsys, "src")
    assert (code, out, err) == (2, "", "autograd-lint: internal error: RuntimeError: kaput\n")


def test_keyboard_interrupt_exits_130_quietly(project: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    from autograd_lint import runner

    def interrupted(*args, **kwargs):  # type: ignore[no-untyped-def]
        raise KeyboardInterrupt

    monkeypatch.setattr(runner, "lint_paths", interrupted)
    assert run(capsys, "src") == (130, "", "")


# --- configuration through the CLI --------------------------------------------


def test_config_discovered_from_parent(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pyproject(project, 'ignore = ["AGL001"]\n')
    assert run(capsys, "-q", "src")[0] == 0


def test_cli_select_overrides_config(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pyproject(project, 'select = ["AGL1"]\n')
    assert run(capsys, "-q", "src")[0] == 0
    assert run(capsys, "-q", "--select", "AGL001,AGL1", "src")[0] == 1
    assert run(capsys, "-q", "--extend-select", "AGL0", "src")[0] == 1
    assert run(capsys, "-q", "--select", "ALL", "--ignore", "AGL0", "src")[0] == 0


def test_select_only_agl001_reports_syntax_errors(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(capsys, "-q", "--select", "AGL001", "src")[0] == 1


def test_explicit_config(project: Path, tmp_path_factory: pytest.TempPathFactory, capsys: pytest.CaptureFixture[str]) -> None:
    other = tmp_path_factory.mktemp("cfg") / "autograd-lint.toml"
    write(other, 'ignore = ["AGL001"]\n')
    assert run(capsys, "-q", "--config", str(other), "src")[0] == 0
    code, _, err = run(capsys, "--config", str(other.parent / "missing.toml"), "src")
    assert code == 2 and "missing.toml: config file not found" in err


def test_per_file_ignores(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pyproject(project, '[tool.autograd-lint.per-file-ignores]\n"src/broken*.py" = ["AGL0"]\n')
    write(project / "other" / "broken.py", SYNTAX_ERROR_SOURCE)
    code, out, _ = run(capsys, "--format", "concise", ".")
    assert code == 1
    assert out == (
        "other/broken.py:3:7: AGL001 SyntaxError: invalid syntax; the file was not checked\n"
        "Found 1 finding in 1 file.\n"
    )


def test_excludes_and_explicit_files(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pyproject(project, 'extend-exclude = ["src/broken.py"]\n')
    assert run(capsys, "-q", ".")[0] == 0
    # A file named on the command line is linted even though it is excluded.
    assert run(capsys, "-q", "src/broken.py")[0] == 1
    # --exclude replaces the config's exclude; --extend-exclude adds to it.
    write(project / "gen" / "broken.py", SYNTAX_ERROR_SOURCE)
    assert run(capsys, "-q", "--extend-exclude", "gen", ".")[0] == 0
    assert run(capsys, "-q", "--exclude", "gen", ".")[0] == 0  # config extend-exclude still applies
    assert run(capsys, "-q", "--exclude", "src", ".")[0] == 1
    # Default excludes: a virtualenv and build output are never walked.
    write(project / "build" / "broken.py", SYNTAX_ERROR_SOURCE)
    write(project / "env2" / "pyvenv.cfg", "")
    write(project / "env2" / "lib" / "broken.py", SYNTAX_ERROR_SOURCE)
    assert run(capsys, "-q", "--extend-exclude", "gen", ".")[0] == 0


def _stdin(monkeypatch: pytest.MonkeyPatch, data: bytes) -> None:
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))


def test_stdin_with_filename(project: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    _stdin(monkeypatch, SYNTAX_ERROR_SOURCE.encode())
    code, out, _ = run(capsys, "--stdin-filename", "pkg/mod.py", "-")
    assert code == 1
    assert out.startswith("pkg/mod.py:3:7: AGL001 SyntaxError: invalid syntax")
    assert "3 | def f(:\n" in out


def test_stdin_filename_drives_per_file_ignores(project: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    pyproject(project, '[tool.autograd-lint.per-file-ignores]\n"gen/*" = ["AGL001"]\n')
    _stdin(monkeypatch, SYNTAX_ERROR_SOURCE.encode())
    assert run(capsys, "-q", "--stdin-filename", "gen/x.py", "-")[0] == 0
    _stdin(monkeypatch, SYNTAX_ERROR_SOURCE.encode())
    assert run(capsys, "-q", "--stdin-filename", "src/x.py", "-")[0] == 1


def test_stdin_without_filename(project: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    _stdin(monkeypatch, SYNTAX_ERROR_SOURCE.encode())
    code, out, _ = run(capsys, "--format", "json", "-")
    assert code == 1 and json.loads(out)[0]["filename"] == "-"


# --- parallel runs -------------------------------------------------------------


def test_jobs_2_matches_jobs_1(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for i in range(12):
        write(project / "many" / f"m{i:02}.py", SYNTAX_ERROR_SOURCE if i % 3 == 0 else CLEAN_SOURCE)
    write(project / "many" / "undecodable.py", b"\xff\xfe\x00bad")
    serial = run(capsys, "--format", "json", "-j", "1", "many")
    parallel = run(capsys, "--format", "json", "-j", "2", "many")
    assert serial == parallel
    assert serial[0] == 1 and len(json.loads(serial[1])) == 5


# --- rules, explain, version ----------------------------------------------------


def test_rules_lists_every_code(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "rules")
    assert code == 0
    lines = out.splitlines()
    assert lines[0].split() == ["CODE", "NAME", "FIXABLE", "SUMMARY"]
    for entry, line in zip(catalog.all_entries(), lines[1:]):
        assert line.split()[:3] == [entry.code, entry.name, "yes" if entry.fixable else "no"]
    assert len(lines) == 1 + len(catalog.all_entries())


def test_rules_json(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "rules", "--format", "json")
    data = json.loads(out)
    assert code == 0 and [d["code"] for d in data] == catalog.all_codes()
    assert set(data[0]) == {"code", "name", "fixable", "default_enabled", "summary", "url"}


def test_explain_prints_the_page(capsys: pytest.CaptureFixture[str]) -> None:
    first = catalog.all_entries()[0].code
    code, out, err = run(capsys, "explain", first.lower())
    assert (code, err) == (0, "")
    assert out.startswith("#") and out == catalog.read_page(first)


def test_explain_unknown_code(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "explain", "AGL999")
    assert code == 2 and out == "" and "unknown rule code 'AGL999'" in err


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "--version")
    assert code == 0 and out.strip() == f"autograd-lint {__version__}"


# --- the real entry point -------------------------------------------------------------


def test_python_dash_m_entry_point(project: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "autograd_lint", "--format", "concise", "src"],
        capture_output=True,
        text=True,
        cwd=project,
        env={**os.environ, "NO_COLOR": ""},
    )
    assert proc.returncode == 1, proc.stderr
    assert proc.stdout.startswith("src/broken.py:3:7: AGL001 ")
    assert "Traceback" not in proc.stderr
    proc = subprocess.run([sys.executable, "-m", "autograd_lint", "missing/"], capture_output=True, text=True, cwd=project)
    assert proc.returncode == 2 and proc.stderr == "autograd-lint: error: missing/: no such file or directory\n"


def test_check_never_imports_torch_or_the_language_server(project: Path) -> None:
    code = (
        "import sys; from autograd_lint.cli import main; rc = main(['-q', 'src']); "
        "print(rc, any(m in sys.modules for m in ('torch', 'pygls', 'lsprotocol', 'autograd_lint.lsp')))"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=project)
    assert proc.stdout.split()[-2:] == ["1", "False"], proc.stderr


def test_server_without_the_lsp_extra_says_what_to_install(monkeypatch, capsys) -> None:
    # Where pygls is not installed: the import fails, the message says how to get it.
    monkeypatch.setitem(sys.modules, "pygls", None)
    code, out, err = run(capsys, "server")
    assert code == 2 and out == ""
    assert err == "autograd-lint: the language server needs pygls: pip install 'autograd-lint[lsp]'\n"
