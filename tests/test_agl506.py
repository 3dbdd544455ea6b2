"""AGL506 fixtures run under torch (CPU). A positive trains a model whose
reported parameter reaches the output only read out of the graph: after
every backward its `.grad` is None, and after the optimizer steps it still
holds its initial value. A negative's parameters that require grad all get
a gradient, and the verifier confirms none of their read-outs (that it
confirms each positive is test_verify.py's). The static side (which line is
reported) is test_fixtures.py's."""

from __future__ import annotations

import json
import re
import runpy
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
from _fixture_support import is_golden, is_layout

torch = pytest.importorskip("torch")
optimizer = pytest.importorskip("torch.optim.optimizer")

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures" / "AGL506"
POSITIVES = sorted(p for p in FIXTURES.glob("pos_*.py") if not is_golden(p) and not is_layout(p))
NEGATIVES = sorted(p for p in FIXTURES.glob("neg_*.py") if not is_layout(p))


def _train(path: Path):
    """Run the fixture's ``main()`` (it returns the trained model); the
    values of every parameter at the first optimizer step, by identity,
    and how many steps ran."""
    first: dict[int, object] = {}
    steps = [0]

    def before_step(opt, args, kwargs) -> None:
        steps[0] += 1
        for g in opt.param_groups:
            for p in g["params"]:
                first.setdefault(id(p), p.detach().clone())

    handle = optimizer.register_optimizer_step_pre_hook(before_step)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = runpy.run_path(str(path), run_name="fixture")["main"]()
    finally:
        handle.remove()
    return model, first, steps[0]


def _reported_parameter(path: Path, model):
    """The parameter the reported line reads (`self.<name>`)."""
    line = next(ln for ln in path.read_text(encoding="utf-8").splitlines() if "# expect: AGL506" in ln)
    params = [getattr(model, n) for n in re.findall(r"self\.(\w+)", line) if isinstance(getattr(model, n, None), torch.nn.Parameter)]
    assert len(params) == 1, line
    return params[0]


def test_fixtures_exist() -> None:
    assert len(POSITIVES) >= 4 and len(NEGATIVES) >= 5


@pytest.mark.parametrize("path", POSITIVES, ids=lambda p: p.name)
def test_positive_parameter_never_trains(path: Path) -> None:
    model, first, steps = _train(path)
    assert steps >= 2
    param = _reported_parameter(path, model)
    assert param.requires_grad
    assert param.grad is None
    assert torch.equal(param.detach(), first[id(param)])
    # The rest of the model did train: the effect is this parameter's alone.
    others = [p for p in model.parameters() if p is not param]
    assert others and all(p.grad is not None for p in others)
    assert any(not torch.equal(p.detach(), first[id(p)]) for p in others)


@pytest.mark.parametrize("path", NEGATIVES, ids=lambda p: p.name)
def test_negative_parameters_get_gradients(path: Path) -> None:
    model, first, steps = _train(path)
    assert steps >= 2
    trainable = [p for p in model.parameters() if p.requires_grad]
    assert trainable and all(p.grad is not None for p in trainable)
    assert all(not torch.equal(p.detach(), first[id(p)]) for p in trainable)


def _read_out_claims(path: Path) -> list[dict]:
    """A claim at every line that reads a `self.<name>` out of the graph."""
    out = []
    for row, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        m = re.search(r"self\.(\w+)\.(?:\w+\([^)]*\)\.)?(?:item|tolist|detach)\(\)|self\.(\w+)\.data\b|(?:float|int)\(self\.(\w+)\)", line)
        if m:
            out.append({"path": str(path), "line": row, "code": "AGL506", "subject": "self." + next(g for g in m.groups() if g)})
    return out


def test_verifier_confirms_no_negative(tmp_path: Path) -> None:
    # Each read-out of a parameter in the negatives, claimed as a finding:
    # the verifier sees a gradient on it at the step, or grad off, or no
    # parameter that requires grad; never "confirmed".
    claims = [c for p in NEGATIVES for c in _read_out_claims(p)]
    assert len(claims) >= 6
    spec = tmp_path / "claims.json"
    spec.write_text(json.dumps(claims))
    driver = tmp_path / "driver.py"
    driver.write_text("import runpy, sys\nfor p in sys.argv[1:]:\n    runpy.run_path(p, run_name='__main__')\n")
    proc = subprocess.run(
        [sys.executable, "-m", "autograd_lint", "verify", "--format", "json", "--findings", str(spec), "--", sys.executable, str(driver), *map(str, NEGATIVES)],
        capture_output=True, text=True, cwd=ROOT, timeout=300,
        env={"PATH": "/usr/bin:/bin", "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT), "PYTHONWARNINGS": "ignore"},
    )
    assert proc.returncode == 0, proc.stderr
    statuses = [f["verification"]["status"] for f in json.loads(proc.stdout)["findings"]]
    assert len(statuses) == len(claims)
    assert set(statuses) == {"not reproduced"}, statuses
