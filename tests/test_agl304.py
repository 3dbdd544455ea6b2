"""AGL304 fixtures under torch (CPU): a positive switches anomaly detection
on and trains with it on (every backward runs in anomaly mode, and it is
still on when the script ends); a negative's training ends with it off.
Nothing here times anything: the mode is read, not the slowdown. The
verifier confirms each positive (the mode is on after the flagged line),
and never a look-alike whose mode argument is not `True`. The static side
(which line is reported) is test_fixtures.py's."""

from __future__ import annotations

import json
import runpy
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from autograd_lint.analysis.test_code import is_test_file

torch = pytest.importorskip("torch")

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures" / "AGL304"
POSITIVES = sorted(p for p in FIXTURES.glob("pos_*.py") if not p.name.endswith(".fixed.py"))
NEGATIVES = sorted(FIXTURES.glob("neg_*.py"))
EXPECT = "# expect: AGL304"


def _run(path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[list[bool], bool]:
    """Run the fixture as a script: (anomaly mode at each backward, anomaly
    mode when it ends). The mode is restored to off afterwards."""
    modes: list[bool] = []
    real = torch.autograd.backward

    def backward(*args, **kwargs):
        modes.append(torch.is_anomaly_enabled())
        return real(*args, **kwargs)

    torch.autograd.set_detect_anomaly(False)
    try:
        with monkeypatch.context() as m, warnings.catch_warnings():
            warnings.simplefilter("ignore")
            m.setattr(torch.autograd, "backward", backward)
            runpy.run_path(str(path), run_name="__main__")
        return modes, torch.is_anomaly_enabled()
    finally:
        torch.autograd.set_detect_anomaly(False)


def test_fixtures_exist() -> None:
    assert len(POSITIVES) >= 3 and len(NEGATIVES) >= 5


@pytest.mark.parametrize("path", POSITIVES, ids=lambda p: p.name)
def test_positive_trains_in_anomaly_mode(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    modes, left_on = _run(path, monkeypatch)
    assert modes, "the fixture never runs a backward"
    assert all(modes), modes
    assert left_on


@pytest.mark.parametrize("path", NEGATIVES, ids=lambda p: p.name)
def test_negative_trains_without_it(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    modes, _ = _run(path, monkeypatch)
    # The training's last backward runs with anomaly mode off (a fixture
    # that checks one step in anomaly mode, or trains nothing, included).
    assert not modes or not modes[-1], modes


def test_test_files_are_pytests_names() -> None:
    assert all(is_test_file(p) for p in ("tests/test_train.py", "train_test.py", "conftest.py", "a/b/test_x.py"))
    assert not any(is_test_file(p) for p in ("train.py", "testing.py", "latest.py", "contest.py", "test_notes.txt"))


DRIVER = """\
import runpy, sys, warnings
import torch
warnings.simplefilter("ignore")
for path in sys.argv[1:]:
    torch.autograd.set_detect_anomaly(False)
    runpy.run_path(path, run_name="__main__")
"""


def _verify(tmp_path: Path, files: list[Path], *args: str) -> dict:
    driver = tmp_path / "driver.py"
    driver.write_text(DRIVER)
    proc = subprocess.run(
        [sys.executable, "-m", "autograd_lint", "verify", "--format", "json", *args, "--", sys.executable, str(driver), *map(str, files)],
        capture_output=True, text=True, cwd=ROOT, timeout=300,
        env={"PATH": "/usr/bin:/bin", "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)},
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_verifier_confirms_positives_not_lookalikes(tmp_path: Path) -> None:
    data = _verify(tmp_path, POSITIVES, *(str(p.relative_to(ROOT)) for p in POSITIVES))
    got = {(Path(f["filename"]).name, f["location"]["row"]): f["verification"]["status"] for f in data["findings"] if f["code"] == "AGL304"}
    expected = {(p.name, i) for p in POSITIVES for i, line in enumerate(p.read_text().splitlines(), 1) if EXPECT in line}
    assert expected and {k: got.get(k) for k in expected} == {k: "confirmed" for k in expected}
    # Claims at the look-alikes' switches whose mode is not `True`.
    lookalikes = [FIXTURES / "neg_mode_false.py", FIXTURES / "neg_mode_from_config.py"]
    claims = [
        {"path": str(p), "line": i, "code": "AGL304"}
        for p in lookalikes for i, line in enumerate(p.read_text().splitlines(), 1) if "set_detect_anomaly(" in line
    ]
    assert len(claims) == 2
    spec = tmp_path / "claims.json"
    spec.write_text(json.dumps(claims))
    data = _verify(tmp_path, lookalikes, "--findings", str(spec))
    assert [f["verification"]["status"] for f in data["findings"]] == ["not reproduced", "not reproduced"]
