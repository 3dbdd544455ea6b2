"""What ``check`` prints and where: fixability in every format, ``--output-file``,
``--color``, ``--show-settings``, the progress line, stdin's configuration."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path

import pytest

from _cli_support import RETENTION_LOOP, SYNTAX_ERROR_SOURCE, pyproject, run, write
from autograd_lint import cli_output

ROOT = Path(__file__).resolve().parent.parent
# A validation loop under no_grad: AGL302 (off by default), whose fix is unsafe.
INFERENCE_MODE = (ROOT / "fixtures" / "AGL302" / "pos_eval_metrics_logged.py").read_text(encoding="utf-8")

FIXABLE_LINE = "[*] 1 fixable with the `--fix` option (1 hidden fix can be enabled with the `--unsafe-fixes` option).\n"


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project (cwd) with one safe fix (AGL101) and one unsafe one (AGL302)."""
    pyproject(tmp_path, 'extend-select = ["AGL302"]\n')
    write(tmp_path / "src" / "loop.py", RETENTION_LOOP)
    write(tmp_path / "src" / "val.py", INFERENCE_MODE)
    monkeypatch.chdir(tmp_path)
    for name in ("NO_COLOR", "FORCE_COLOR", "CI"):
        monkeypatch.delenv(name, raising=False)
    return tmp_path


# --- fixability -------------------------------------------------------------------


def test_text_marks_safe_fixes_and_counts_them(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "src")
    assert code == 1 and err == ""
    assert "src/loop.py:10:9: AGL101 [*] `loss` is stored" in out
    assert "src/val.py:20:9: AGL302 nothing computed" in out  # unsafe: no marker
    assert out.endswith("Found 2 findings in 2 files.\n" + FIXABLE_LINE)
    _, out, _ = run(capsys, "--format", "concise", "--unsafe-fixes", "src")
    assert "AGL302 [*] " in out and out.endswith("[*] 2 fixable with the `--fix` option.\n")
    # -q: the findings only.
    assert "fixable" not in run(capsys, "-q", "src")[1]


def test_json_fix_has_its_applicability(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _, out, _ = run(capsys, "--format", "json", "src")
    fixes = {item["code"]: item["fix"] for item in json.loads(out)}
    assert fixes["AGL101"]["applicability"] == "safe" and fixes["AGL302"]["applicability"] == "unsafe"
    assert fixes["AGL101"]["edits"] and fixes["AGL101"]["message"]


def test_statistics_mark_only_codes_with_a_safe_fix(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "--statistics", "src")
    assert code == 1
    assert out == (
        "1\tAGL101\t[*] graph-stored-in-container\n"
        "1\tAGL302\t[ ] no-grad-could-be-inference-mode\n"
        "Found 2 findings in 2 files.\n" + FIXABLE_LINE
    )
    rows = json.loads(run(capsys, "--statistics", "--format", "json", "src")[1])
    assert {r["code"]: r["fixable"] for r in rows} == {"AGL101": True, "AGL302": False}


def test_after_fix_the_hidden_fixes_are_counted(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "--fix", "src")
    assert code == 1
    assert "[*]" not in out
    assert out.endswith(
        "Found 2 findings (1 fixed, 1 remaining).\n"
        "No fixes available (1 hidden fix can be enabled with the `--unsafe-fixes` option).\n"
    )


# --- --output-file ------------------------------------------------------------------


def test_output_file_takes_the_report(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    expected = run(capsys, "--format", "json", "src")
    code, out, err = run(capsys, "--format", "json", "--output-file", "reports/lint.json", "src")
    assert (code, out, err) == (1, "", "")
    assert (project / "reports" / "lint.json").read_text(encoding="utf-8") == expected[1]
    # Messages stay on stderr.
    write(project / "src" / "broken.py", b"\xff\xfe\x00bad")
    (project / "src" / "gone.py").symlink_to(project / "nowhere.py")
    code, out, err = run(capsys, "-o", "report.txt", "src")
    assert code == 2 and out == "" and "gone.py" in err
    assert (project / "report.txt").read_text(encoding="utf-8").endswith("1 file could not be checked.\n" + FIXABLE_LINE)


def test_output_file_that_cannot_be_written(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write(project / "file.txt", "")
    code, out, err = run(capsys, "--output-file", "file.txt/report.json", "src")
    assert code == 2 and out == ""
    assert err.startswith("autograd-lint: error: file.txt/report.json: cannot write the output file: ")


# --- colour ---------------------------------------------------------------------------


def test_color_always_in_a_pipe_never_on_a_tty(project: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    assert "\x1b[" not in run(capsys, "src")[1]
    assert "\x1b[" in run(capsys, "--color", "always", "src")[1]
    # The last of --color / --no-color wins.
    assert "\x1b[" not in run(capsys, "--color", "always", "--no-color", "src")[1]
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)
    assert "\x1b[" in run(capsys, "src")[1]
    assert "\x1b[" not in run(capsys, "--color", "never", "src")[1]


def test_color_environment(project: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FORCE_COLOR", "1")
    assert "\x1b[" in run(capsys, "src")[1]
    assert "\x1b[" not in run(capsys, "--color", "never", "src")[1]
    monkeypatch.setenv("NO_COLOR", "1")  # NO_COLOR wins over FORCE_COLOR
    assert "\x1b[" not in run(capsys, "src")[1]
    assert "\x1b[" in run(capsys, "--color", "always", "src")[1]


def test_no_color_in_an_output_file_unless_always(project: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FORCE_COLOR", "1")
    run(capsys, "-o", "plain.txt", "src")
    assert "\x1b[" not in (project / "plain.txt").read_text(encoding="utf-8")
    run(capsys, "-o", "colored.txt", "--color", "always", "src")
    assert "\x1b[" in (project / "colored.txt").read_text(encoding="utf-8")


def test_use_color_decision() -> None:
    tty, pipe = _Tty(), io.StringIO()
    assert cli_output.use_color("auto", tty, env={}) is True
    assert cli_output.use_color("auto", pipe, env={}) is False
    assert cli_output.use_color("auto", pipe, env={"FORCE_COLOR": "1"}) is True
    assert cli_output.use_color("auto", tty, env={"NO_COLOR": "1", "FORCE_COLOR": "1"}) is False
    assert cli_output.use_color("auto", tty, to_file=True, env={"FORCE_COLOR": "1"}) is False
    assert cli_output.use_color("always", pipe, to_file=True, env={"NO_COLOR": "1"}) is True
    assert cli_output.use_color("never", tty, env={"FORCE_COLOR": "1"}) is False


# --- --show-settings --------------------------------------------------------------------


def test_show_settings(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "--show-settings", "src/loop.py")
    assert code == 0 and err == ""
    lines = out.splitlines()
    assert lines[0] == f'Resolved settings for: "{project / "src" / "loop.py"}"'
    assert lines[1] == f'Settings path: "{project / "pyproject.toml"}"'
    enabled = out.split("\nenabled = [\n", 1)[1].split("\n]", 1)[0].split("\n")
    assert "\tAGL302 (no-grad-could-be-inference-mode)," in enabled and "\tAGL101 (graph-stored-in-container)," in enabled
    assert enabled == sorted(enabled)
    assert "\nextend_select = [\n\tAGL302 (no-grad-could-be-inference-mode),\n]\n" in out
    assert f'\ncache_dir = "' in out and "\nuse_default_excludes = true\n" in out


def test_show_settings_every_field_is_printed(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Printed from the dataclasses: a setting added later shows up."""
    import dataclasses

    from autograd_lint.config import CliOverrides, FileConfig
    from autograd_lint.discovery import DiscoveryOptions
    from autograd_lint.settings import Settings

    out = run(capsys, "--show-settings", "src")[1]
    keys = {line.split(" = ", 1)[0] for line in out.splitlines() if " = " in line and not line.startswith("\t")}
    for cls in (Settings, DiscoveryOptions, FileConfig, CliOverrides):
        assert {f.name for f in dataclasses.fields(cls)} - {"path"} <= keys, cls


def test_show_settings_nearest_config_and_cli(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pyproject(project / "sub", 'select = ["AGL4"]\nignore = ["AGL403"]\ntorch-version = "1.13"\n')
    write(project / "sub" / "z.py", "import torch\n")
    # A folder shows its first file's settings; the trailing form names no path.
    code, out, _ = run(capsys, "--ignore", "AGL402", "sub", "--show-settings")
    assert code == 0
    assert f'Resolved settings for: "{project / "sub" / "z.py"}"' in out
    assert f'Settings path: "{project / "sub" / "pyproject.toml"}"' in out
    enabled = out.split("\nenabled = [\n", 1)[1].split("\n]", 1)[0]
    assert enabled == "\tAGL401 (zero-grad-set-to-none-false),\n\tAGL404 (gradients-never-zeroed),\n\tAGL405 (zero-grad-discards-accumulation),"
    assert "\ntorch_version = 1.13\n" in out


def test_show_settings_without_config_and_missing_path(project: Path, tmp_path_factory: pytest.TempPathFactory, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    bare = tmp_path_factory.mktemp("bare")
    write(bare / "a.py", "import torch\n")
    monkeypatch.chdir(bare)
    out = run(capsys, "--show-settings")[1]
    assert "\nSettings path: none (defaults)\n" in out
    code, out, err = run(capsys, "--show-settings", "nope.py")
    assert code == 2 and out == "" and "nope.py: no such file or directory" in err


# --- stdin ------------------------------------------------------------------------------


def test_stdin_without_a_name_uses_the_config_of_the_current_folder(project: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    pyproject(project, 'ignore = ["AGL001"]\n')
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(SYNTAX_ERROR_SOURCE.encode())))
    assert run(capsys, "-") == (0, "All checks passed!\n", "")
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(SYNTAX_ERROR_SOURCE.encode())))
    assert '"AGL001" = ' not in run(capsys, "--show-settings", "-")[1]
    assert f'Settings path: "{project / "pyproject.toml"}"' in run(capsys, "--show-settings", "-")[1]


# --- progress ----------------------------------------------------------------------------


class _Tty(io.StringIO):
    encoding = "utf-8"

    def isatty(self) -> bool:
        return True


@pytest.fixture
def many(project: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Five files and a threshold of three."""
    for i in range(3):
        write(project / "src" / f"m{i}.py", "import torch\n")
    monkeypatch.setattr(cli_output, "PROGRESS_MIN_FILES", 3)
    return project


def _terminal_on_stderr(monkeypatch: pytest.MonkeyPatch) -> _Tty:
    # In the test itself: capsys puts its own stderr back at each phase.
    tty = _Tty()
    monkeypatch.setattr(sys, "stderr", tty)
    return tty


def test_progress_on_a_terminal(many: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    tty = _terminal_on_stderr(monkeypatch)
    code, out, _ = run(capsys, "-j", "1", "--format", "concise", "src")
    assert code == 1
    err = tty.getvalue()
    assert err.startswith("\rLinting 1/5 files…") and err.endswith("\r\x1b[K")
    assert "Linting" not in out
    # The rerun reads every file from the cache: nothing left to count.
    tty.seek(0)
    tty.truncate()
    run(capsys, "-j", "1", "src")
    assert tty.getvalue() == ""


def test_progress_while_fixing(many: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    tty = _terminal_on_stderr(monkeypatch)
    run(capsys, "--fix", "--no-cache", "-j", "1", "src")
    assert tty.getvalue().startswith("\rFixing 1/5 files…") and tty.getvalue().endswith("\r\x1b[K")


@pytest.mark.parametrize(
    "argv, env",
    [
        (["--format", "json"], {}),
        (["--format", "github"], {}),
        (["-q"], {}),
        ([], {"CI": "true"}),
    ],
)
def test_no_progress_for_machines_ci_or_quiet(many: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, argv: list[str], env: dict[str, str]) -> None:
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    tty = _terminal_on_stderr(monkeypatch)
    run(capsys, "--no-cache", "-j", "1", *argv, "src")
    assert "Linting" not in tty.getvalue()


def test_no_progress_in_a_pipe(project: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cli_output, "PROGRESS_MIN_FILES", 1)
    _, _, err = run(capsys, "--no-cache", "src")
    assert err == ""


def test_map_files_tells_progress_of_each_result_in_order(tmp_path: Path) -> None:
    from autograd_lint.runner import map_files
    from autograd_lint.settings import Settings

    seen: list[tuple[int, int]] = []
    out = map_files(lambda path, settings: path.upper(), ["a", "b", "c"], Settings(enabled=frozenset()), jobs=1, progress=lambda done, total: seen.append((done, total)))
    assert out == ["A", "B", "C"] and seen == [(1, 3), (2, 3), (3, 3)]


def test_output_file_with_diff_and_stdin_fix(project: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    code, out, err = run(capsys, "--diff", "-o", "fix.diff", "src")
    assert code == 1 and out == "" and err == "Would fix 1 finding.\n"
    assert (project / "fix.diff").read_text(encoding="utf-8").startswith("--- a/src/loop.py\n+++ b/src/loop.py\n")
    # stdin --fix: the fixed code on stdout, the report in the file.
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(RETENTION_LOOP.encode())))
    code, out, err = run(capsys, "--fix", "--stdin-filename", "loop.py", "-o", "report.txt", "-")
    assert code == 0 and "losses.append(loss.detach())" in out and err == ""
    assert (project / "report.txt").read_text(encoding="utf-8") == "Found 1 finding (1 fixed, 0 remaining).\n"
