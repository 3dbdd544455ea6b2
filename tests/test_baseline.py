"""``--write-baseline`` / ``--baseline`` and the content fingerprint."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from _cli_support import run, RETENTION_LOOP, CLEAN_SOURCE, write
from autograd_lint.baseline import fingerprints, relative_path
from autograd_lint.finding import Finding, Location

LOOP = RETENTION_LOOP

# The same bug twice, on identical lines: two findings, one fingerprint key.
TWICE = LOOP + """

def evaluate(model, loader, opt):
    losses = []
    for x, y in loader:
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        losses.append(loss)
        opt.zero_grad()
    return losses
"""


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    write(tmp_path / "pyproject.toml", "[project]\nname = 'demo'\n")
    write(tmp_path / "src" / "train.py", LOOP)
    write(tmp_path / "src" / "clean.py", CLEAN_SOURCE)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def codes_and_rows(out: str) -> list[tuple[str, int]]:
    return [(f["code"], f["location"]["row"]) for f in json.loads(out)]


# --- the fingerprint ----------------------------------------------------------


def test_fingerprint_ignores_row_and_indentation_but_not_code_path_or_text(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)

    def fp(code: str, path: str, row: int, lines: list[str]) -> str:
        return fingerprints([Finding(code, "m", path, Location(row, 1), Location(row, 2))], {path: lines}.get)[0]

    base = fp("AGL101", "a.py", 1, ["losses.append(loss)"])
    assert fp("AGL101", "a.py", 3, ["", "", "    losses.append(loss)  "]) == base
    assert fp("AGL101", str(tmp_path / "a.py"), 1, ["losses.append(loss)"]) == base
    assert fp("AGL101", "./a.py", 1, ["losses.append(loss)"]) == base
    assert fp("AGL102", "a.py", 1, ["losses.append(loss)"]) != base
    assert fp("AGL101", "b.py", 1, ["losses.append(loss)"]) != base
    assert fp("AGL101", "a.py", 1, ["losses.append(loss2)"]) != base


def test_identical_lines_get_distinct_fingerprints_in_file_order() -> None:
    lines = ["x.append(l)", "x.append(l)"]
    a = Finding("AGL101", "m", "a.py", Location(1, 1), Location(1, 2))
    b = Finding("AGL101", "m", "a.py", Location(2, 1), Location(2, 2))
    fa, fb = fingerprints([a, b], {"a.py": lines}.get)
    assert fa != fb
    assert fingerprints([b, a], {"a.py": lines}.get) == [fb, fa]


def test_relative_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert relative_path("src/a.py") == "src/a.py"
    assert relative_path(str(tmp_path / "src" / "a.py")) == "src/a.py"
    assert relative_path("-") == "-"
    assert relative_path(str(tmp_path.parent / "x.py")) == (tmp_path.parent / "x.py").as_posix()


# --- the CLI --------------------------------------------------------------------


def test_write_then_rerun_is_clean(project: Path, capsys) -> None:
    code, out, err = run(capsys, "--write-baseline", "baseline.json", "src")
    assert (code, out, err) == (0, "Wrote 1 finding to baseline.json.\n", "")
    data = json.loads((project / "baseline.json").read_text())
    assert data["version"] == 1
    (entry,) = data["findings"]
    assert entry["code"] == "AGL101" and entry["path"] == "src/train.py" and len(entry["fingerprint"]) == 64
    assert run(capsys, "--baseline", "baseline.json", "src") == (0, "All checks passed!\n", "")
    # Without the baseline the finding is still there.
    assert run(capsys, "src")[0] == 1


def test_lines_inserted_above_still_match(project: Path, capsys) -> None:
    run(capsys, "--write-baseline", "baseline.json", "src")
    write(project / "src" / "train.py", '"""Docstring."""\n\nimport os\n\n' + LOOP.replace("    ", "\t"))
    code, out, _ = run(capsys, "--baseline", "baseline.json", "--format", "json", "src")
    assert (code, out) == (0, "[]\n")


def test_a_new_bug_is_the_only_one_reported(project: Path, capsys) -> None:
    run(capsys, "--write-baseline", "baseline.json", "src")
    write(project / "src" / "train.py", LOOP.replace("        losses.append(loss)\n", "        losses.append(loss)\n        history.append(loss)\n").replace("    losses = []\n", "    losses = []\n    history = []\n"))
    code, out, _ = run(capsys, "--baseline", "baseline.json", "--format", "json", "src")
    assert code == 1
    assert codes_and_rows(out) == [("AGL101", 12)]
    # A new file with the old bug is new too.
    write(project / "src" / "other.py", LOOP)
    code, out, _ = run(capsys, "--baseline", "baseline.json", "--format", "concise", "-q", "src/other.py")
    assert code == 1 and out.startswith("src/other.py:10:9: AGL101")


def test_duplicates_are_counted(project: Path, capsys) -> None:
    write(project / "src" / "train.py", TWICE)
    assert codes_and_rows(run(capsys, "--format", "json", "src")[1]) == [("AGL101", 10), ("AGL101", 21)]
    run(capsys, "--write-baseline", "baseline.json", "src")
    assert len(json.loads((project / "baseline.json").read_text())["findings"]) == 2
    assert run(capsys, "--baseline", "baseline.json", "src")[0] == 0
    # A third copy of the same line: exactly one is new.
    third = LOOP.replace("def train", "def validate").split("\n\n\n", 1)[1]
    write(project / "src" / "train.py", TWICE + "\n\n" + third)
    code, out, _ = run(capsys, "--baseline", "baseline.json", "--format", "json", "src")
    assert code == 1 and len(json.loads(out)) == 1
    # Fixing one of two baselined copies leaves nothing reported.
    write(project / "src" / "train.py", LOOP)
    assert run(capsys, "--baseline", "baseline.json", "src")[0] == 0


def test_baseline_from_another_folder_and_stdin(project: Path, capsys, monkeypatch) -> None:
    run(capsys, "--write-baseline", "baseline.json", str(project / "src" / "train.py"))
    assert run(capsys, "--baseline", "baseline.json", "./src/train.py")[0] == 0
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(("\n" + LOOP).encode())))
    assert run(capsys, "--baseline", "baseline.json", "--stdin-filename", "src/train.py", "-")[0] == 0


@pytest.mark.parametrize(
    "content, message",
    [
        (None, "cannot read baseline missing.json: No such file or directory"),
        ("{not json", "invalid baseline missing.json: not JSON"),
        ("[]", "invalid baseline missing.json: expected an object with a 'findings' list"),
        ('{"version": 9, "findings": []}', "invalid baseline missing.json: unsupported version 9"),
        ('{"version": 1, "findings": [{"code": "AGL101"}]}', "invalid baseline missing.json: findings[0] has no 'fingerprint'"),
        (b"\xff\xfe", "invalid baseline missing.json: not JSON"),
    ],
)
def test_bad_baseline_is_a_one_line_error(project: Path, capsys, content, message) -> None:
    if content is not None:
        write(project / "missing.json", content)
    code, out, err = run(capsys, "--baseline", "missing.json", "src")
    assert code == 2 and out == ""
    assert err.startswith(f"autograd-lint: error: {message}") and err.count("\n") == 1


def test_write_baseline_errors(project: Path, capsys) -> None:
    code, out, err = run(capsys, "--write-baseline", "no/such/dir/b.json", "src")
    assert code == 2 and err.startswith("autograd-lint: error: cannot write baseline no/such/dir/b.json")
    assert run(capsys, "--baseline", "a", "--write-baseline", "b", "src")[0] == 2
