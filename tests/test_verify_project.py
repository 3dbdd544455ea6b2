"""The verifier on a two-file project (a library with buggy `train` and
`evaluate`, a script and a pytest test calling them): both ways of running
it give the same verdicts. Plus the CUDA evidence, where CUDA exists."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

ROOT = Path(__file__).resolve().parent.parent
PROJECT = ROOT / "examples" / "verify_project"


def _verify(cwd: Path, *command: str, device: str = "cpu") -> dict:
    env = dict(os.environ, PYTHONPATH=str(cwd), OMP_NUM_THREADS="1")
    proc = subprocess.run(
        [sys.executable, "-m", "autograd_lint", "verify", "--format", "json", "--device", device, "--timeout", "120", "trainlib", "--", *command],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout)


def _verdicts(report: dict) -> dict[tuple[str, int], str]:
    return {(f["code"], f["location"]["row"]): f["verification"]["status"] for f in report["findings"]}


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    dest = tmp_path_factory.mktemp("proj") / "verify_project"
    shutil.copytree(PROJECT, dest, ignore=shutil.ignore_patterns("__pycache__"))
    return dest


def test_script_and_pytest_give_the_same_verdicts(project: Path) -> None:
    by_script = _verify(project, sys.executable, "run.py")
    by_pytest = _verify(project, sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/test_loops.py")
    expected = {("AGL101", 23): "confirmed", ("AGL301", 31): "confirmed"}
    assert _verdicts(by_script) == expected
    assert _verdicts(by_pytest) == expected
    retention = next(f for f in by_script["findings"] if f["code"] == "AGL101")["verification"]
    assert retention["graphs"] >= 3 and retention["nodes_per_hit"] > 0


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_cuda_run_reports_memory_growth(project: Path, tmp_path: Path) -> None:
    script = tmp_path / "cuda_run.py"
    script.write_text(
        "import torch\nfrom trainlib.loops import train\n"
        "model = torch.nn.Sequential(torch.nn.Linear(8, 256), torch.nn.ReLU(), torch.nn.Linear(256, 1)).cuda()\n"
        "batches = [(torch.randn(512, 8, device='cuda'), torch.randn(512, 1, device='cuda')) for _ in range(4)]\n"
        "train(model, batches)\n"
    )
    report = _verify(project, sys.executable, str(script), device="cuda")
    retention = next(f for f in report["findings"] if f["code"] == "AGL101")["verification"]
    assert retention["status"] == "confirmed"
    assert "cuda_allocated_per_hit" in retention


def test_shorthand_confirms_a_bug_in_an_imported_module(tmp_path: Path) -> None:
    # `verify train.py` lints the project modules train.py imports, and the
    # child watches them: the loss list in mypkg/model.py is confirmed.
    (tmp_path / "mypkg").mkdir()
    (tmp_path / "mypkg" / "__init__.py").write_text("")
    (tmp_path / "mypkg" / "model.py").write_text(
        "import torch\n"
        "def fit(steps):\n"
        "    model = torch.nn.Linear(4, 1)\n"
        "    losses = []\n"
        "    for _ in range(steps):\n"
        "        loss = model(torch.randn(8, 4)).pow(2).mean()\n"
        "        losses.append(loss)\n"
        "        loss.backward()\n"
        "    return losses\n"
    )
    # The child is run by its file path: the package itself is not imported
    # into the program's interpreter.
    (tmp_path / "train.py").write_text("import sys\nassert 'autograd_lint' not in sys.modules\nfrom mypkg.model import fit\nfit(5)\n")
    proc = subprocess.run(
        [sys.executable, "-m", "autograd_lint", "verify", "--format", "json", "--device", "cpu", "train.py"],
        cwd=tmp_path, env=dict(os.environ, PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1"),
        capture_output=True, text=True, timeout=180,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "autograd-lint: linted train.py and the project modules it imports: mypkg/__init__.py, mypkg/model.py\n" in proc.stderr
    report = json.loads(proc.stdout)
    assert report["run"]["linted"] == ["train.py", "mypkg/__init__.py", "mypkg/model.py"]
    assert report["run"]["python"] == sys.executable
    assert report["run"]["state"] == "stopped early", report["run"]
    got = {(Path(f["filename"]).resolve(), f["code"], f["location"]["row"]): f["verification"]["status"] for f in report["findings"]}
    assert got == {((tmp_path / "mypkg" / "model.py").resolve(), "AGL101", 7): "confirmed"}
