"""`autograd-lint verify`: run the code, check each finding dynamically.

Each verify run starts a child process that imports torch (~2 s), so the
fixtures are run in batches: one child per code runs every fixture of that
code through a small driver script (the verifier follows findings across
files). Negative fixtures have no findings; they get synthetic claims at each
of their in-place statements, which must never be confirmed.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from _fixture_support import is_golden, runnable_fixtures

pytest.importorskip("torch")

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"
CODES = ("AGL201", "AGL202", "AGL203", "AGL204", "AGL205")
EXPECT = "# expect:"

DRIVER = """\
import runpy, sys, warnings
warnings.simplefilter("ignore")
for path in sys.argv[1:]:
    try:
        runpy.run_path(path, run_name="__main__")
    except Exception as e:
        print("fixture raised", path, type(e).__name__, file=sys.stderr)
"""


def verify(*args: str, cwd: Path | None = None, timeout: float = 300) -> tuple[int, dict, str]:
    proc = subprocess.run(
        [sys.executable, "-m", "autograd_lint", "verify", "--format", "json", *args],
        capture_output=True, text=True, cwd=cwd or ROOT, timeout=timeout,
        env={"PATH": "/usr/bin:/bin", "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)},
    )
    try:
        data = json.loads(proc.stdout)
    except ValueError:
        data = {}
    return proc.returncode, data, proc.stderr


def by_line(data: dict) -> dict[tuple[str, int, str], dict]:
    return {(Path(f["filename"]).name, f["location"]["row"], f["code"]): f["verification"] for f in data["findings"]}


def expected_lines(path: Path, code: str) -> list[int]:
    return [i for i, line in enumerate(path.read_text().splitlines(), 1) if EXPECT in line and code in line.split(EXPECT, 1)[1]]


@pytest.fixture(scope="module")
def driver(tmp_path_factory) -> Path:
    p = tmp_path_factory.mktemp("verify") / "driver.py"
    p.write_text(DRIVER)
    return p


@pytest.mark.parametrize("code", CODES)
def test_positive_fixtures_confirmed(code: str, driver: Path) -> None:
    files = sorted(p for p in (FIXTURES / code).glob("pos_*.py") if not is_golden(p))
    rel = [str(f.relative_to(ROOT)) for f in files]
    rc, data, err = verify(*rel, "--", sys.executable, str(driver), *rel)
    assert rc == 0, err
    got = by_line(data)
    missing = []
    for f in files:
        for row in expected_lines(f, code):
            v = got.get((f.name, row, code))
            if v is None or v["status"] != "confirmed":
                missing.append((f.name, row, v))
    assert not missing, missing
    assert data["run"]["state"] in ("completed", "stopped early")


def test_later_hits_of_a_confirmed_line_stay_its_own() -> None:
    # The flagged step runs every iteration: what its later hits change is
    # still that finding's hazard, not "a hazard no finding points at".
    rc, data, err = verify("fixtures/AGL205/pos_auxiliary_loss_backward_after_step.py")
    assert rc == 0, err
    # (The same loop's auxiliary backward is also AGL404's: its own finding.)
    assert [v["status"] for (_, _, code), v in by_line(data).items() if code == "AGL205"] == ["confirmed"]
    notes = data["run"]["notes"]
    assert not [n for n in notes if "no finding points at" in n], notes


def test_runnable_positive_fixtures_confirmed(driver: Path) -> None:
    # The other families' positives that run on their own: every expected
    # finding is confirmed by running them.
    files = runnable_fixtures(FIXTURES, "pos_")
    assert len(files) >= 2
    rel = [str(f.relative_to(ROOT)) for f in files]
    rc, data, err = verify(*rel, "--", sys.executable, str(driver), *rel)
    assert rc == 0, err
    got = by_line(data)
    missing = [(f.name, row, got.get((f.name, row, f.parent.name))) for f in files for row in expected_lines(f, f.parent.name)]
    missing = [m for m in missing if m[2] is None or m[2]["status"] != "confirmed"]
    assert not missing, missing


PROJECT_POSITIVES = sorted(d for d in FIXTURES.glob("*/pos_*") if d.is_dir() and (d / "main.py").is_file())


@pytest.mark.parametrize("project", PROJECT_POSITIVES, ids=lambda d: d.relative_to(FIXTURES).as_posix())
def test_project_positive_fixtures_confirmed(project: Path) -> None:
    # Across modules: a meter or a loss of another module keeps the graph
    # (the verifier follows values into the objects that hold them).
    rc, data, err = verify(".", "--", sys.executable, "main.py", cwd=project)
    assert rc == 0, err
    got = {(Path(f["filename"]).name, f["location"]["row"], f["code"]): f["verification"] for f in data["findings"]}
    expected = [(f.name, row, code) for f in sorted(project.rglob("*.py"))
                for row, line in enumerate(f.read_text().splitlines(), 1) if EXPECT in line
                for code in line.split(EXPECT, 1)[1].replace(",", " ").split()]
    assert expected
    missing = [(k, got.get(k)) for k in expected if got.get(k, {}).get("status") != "confirmed"]
    assert not missing, missing


def _inplace_claims(path: Path, code: str) -> list[dict]:
    """A claim at every plain in-place statement (`x.op_(...)`, `x += ...`,
    `x[...] = ...`); for AGL205, at every `opt.step()`."""
    out = []
    for st in ast.walk(ast.parse(path.read_text())):
        target = None
        if code == "AGL205":
            if isinstance(st, ast.Expr) and isinstance(st.value, ast.Call) and isinstance(st.value.func, ast.Attribute) and st.value.func.attr == "step":
                out.append({"path": str(path), "line": st.lineno, "code": code, "subject": ast.unparse(st.value.func.value)})
            continue
        if isinstance(st, ast.AugAssign):
            target = st.target
        elif isinstance(st, ast.Assign) and isinstance(st.targets[0], ast.Subscript):
            target = st.targets[0]
        elif isinstance(st, ast.Expr) and isinstance(st.value, ast.Call) and isinstance(st.value.func, ast.Attribute):
            if st.value.func.attr.endswith("_") and not st.value.func.attr.startswith("_"):
                target = st.value.func.value
        while isinstance(target, ast.Subscript) or (isinstance(target, ast.Attribute) and target.attr == "data"):
            target = target.value
        if target is None or ((".data" in ast.unparse(st)) != (code == "AGL203")):
            continue
        out.append({"path": str(path), "line": st.lineno, "code": code, "subject": ast.unparse(target)})
    return out


@pytest.mark.parametrize("code", CODES)
def test_negative_fixtures_never_confirmed(code: str, driver: Path, tmp_path: Path) -> None:
    files = sorted((FIXTURES / code).glob("neg_*.py"))
    claims = [c for f in files for c in _inplace_claims(f, code)]
    assert len(claims) >= 8
    spec = tmp_path / "claims.json"
    spec.write_text(json.dumps(claims))
    rc, data, err = verify("--findings", str(spec), "--", sys.executable, str(driver), *map(str, files))
    assert rc == 0, err
    statuses = [f["verification"]["status"] for f in data["findings"]]
    assert "confirmed" not in statuses, [f for f in data["findings"] if f["verification"]["status"] == "confirmed"]
    assert "not reproduced" in statuses


TRAIN = """\
import torch
from torch import nn


def main() -> None:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    losses = []
    for _ in range(6):
        loss = model(torch.randn(32, 8)).pow(2).mean()
        losses.append(loss{fix})
        opt.zero_grad()
        loss.backward()
        opt.step()


if __name__ == "__main__":
    main()
"""


def test_graph_retention_confirmed_and_fix_not_reproduced(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(TRAIN.format(fix=""))
    rc, data, err = verify("train.py", cwd=tmp_path)
    assert rc == 0, err
    v = by_line(data)[("train.py", 12, "AGL101")]
    assert v["status"] == "confirmed", v
    assert v["hits"] == 3 and v["graphs"] == 3 and v["nodes_per_hit"] > 0
    assert data["run"]["state"] == "stopped early"

    (tmp_path / "fixed.py").write_text(TRAIN.format(fix=".detach()"))
    claim = [{"path": str(tmp_path / "fixed.py"), "line": 12, "code": "AGL101", "subject": "loss"}]
    (tmp_path / "claim.json").write_text(json.dumps(claim))
    rc, data, err = verify("--findings", "claim.json", "fixed.py", cwd=tmp_path)
    assert rc == 0, err
    assert data["findings"][0]["verification"]["status"] == "not reproduced"


EVAL = """\
import torch
from torch import nn

model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
model.eval()
for _ in range(2):
    preds = model(torch.randn(16, 4)).argmax(1)
print(preds.shape)
"""


def test_eval_with_grad_confirmed(tmp_path: Path) -> None:
    (tmp_path / "evaluate.py").write_text(EVAL)
    rc, data, err = verify("evaluate.py", cwd=tmp_path)
    assert rc == 0, err
    v = by_line(data)[("evaluate.py", 7, "AGL301")]
    assert v["status"] == "confirmed", v
    assert v["training"] is False


# A confirmed AGL202 line first, then trouble, then a line that is never reached.
TROUBLE = """\
import torch

w = torch.zeros(3, requires_grad=True)
w.add_(1.0)
{trouble}
w.mul_(2.0)
"""


@pytest.mark.parametrize(
    "trouble, state, extra",
    [
        ("int('boom')", "raised", []),
        # A hang that costs no CPU; the limit leaves a busy machine time to
        # import torch and reach line 4. Without the limit the run would last
        # an hour: the run's own deadline (300 s) would fail the test.
        ("import time; time.sleep(3600)", "timeout", ["--timeout", "30"]),
        ("big = torch.ones(10 * 2**30, dtype=torch.uint8)", "raised", ["--memory-limit", "3"]),
    ],
    ids=["crash", "hang", "memory"],
)
def test_program_failures_keep_verdicts(tmp_path: Path, trouble: str, state: str, extra: list[str]) -> None:
    (tmp_path / "bad.py").write_text(TROUBLE.format(trouble=trouble))
    rc, data, err = verify(*extra, "bad.py", cwd=tmp_path)
    assert rc == 0, err  # the program failed, not the verifier
    assert data["run"]["state"] == state, data["run"]
    assert "verifier error" not in data["run"]["message"]
    got = by_line(data)
    assert got[("bad.py", 4, "AGL202")]["status"] == "confirmed"
    assert got[("bad.py", 6, "AGL202")]["status"] == "not reached"
    if state == "timeout":
        assert "did not finish within 30 s" in data["run"]["message"], data["run"]
    if trouble.startswith("raise"):
        assert "ValueError: boom" in data["run"]["message"]


def test_usage_errors(tmp_path: Path) -> None:
    (tmp_path / "x.py").write_text("import torch\nw = torch.zeros(1, requires_grad=True)\nw.add_(1)\n")
    proc = subprocess.run([sys.executable, "-m", "autograd_lint", "verify", "x.py", "--", "bash", "-c", "true"],
                          capture_output=True, text=True, cwd=tmp_path, env={"PYTHONPATH": str(ROOT)})
    assert proc.returncode == 2 and "can be verified" in proc.stderr


def test_check_never_imports_torch() -> None:
    code = textwrap.dedent("""
        import sys
        import autograd_lint.cli, autograd_lint.verify.runner
        assert "torch" not in sys.modules
    """)
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)
