"""`verify` for AGL104 (state carried, attached, into the next iteration) and
AGL505 (gradients read while a GradScaler has them scaled): the probes of
autograd_lint/verify/loop_probes.py.

Every positive fixture's expected finding is confirmed with evidence. The
negatives (and, for AGL505, the positives as fixed) get synthetic claims at
each line of the shape the rule reports, which must never be confirmed.
"""

from __future__ import annotations

import ast
import importlib.util
import json
import sys
import textwrap
from pathlib import Path

import pytest
from _fixture_support import is_golden, is_layout
from test_verify import DRIVER, FIXTURES, ROOT, by_line, expected_lines, verify

torch = pytest.importorskip("torch")

# What each code's evidence says when it confirms.
EVIDENCE = {"AGL104": "still attached to the graph the previous execution returned", "AGL505": "times the true ones"}


@pytest.fixture(scope="module")
def driver(tmp_path_factory) -> Path:
    p = tmp_path_factory.mktemp("verify_loop") / "driver.py"
    p.write_text(DRIVER)
    return p


@pytest.mark.parametrize("code", sorted(EVIDENCE))
def test_positive_fixtures_confirmed(code: str, driver: Path) -> None:
    files = sorted(p for p in (FIXTURES / code).glob("pos_*.py") if not is_golden(p) and not is_layout(p))
    rel = [str(f.relative_to(ROOT)) for f in files]
    rc, data, err = verify(*rel, "--", sys.executable, str(driver), *rel)
    assert rc == 0, err
    got = by_line(data)
    expected = [(f.name, row, code) for f in files for row in expected_lines(f, code)]
    assert len(expected) >= 5
    wrong = [(k, got.get(k)) for k in expected if got.get(k, {}).get("status") != "confirmed" or EVIDENCE[code] not in got[k]["evidence"]]
    assert not wrong, wrong


def _carried_claims(path: Path) -> list[dict]:
    """`out, hidden = rnn(x, hidden)`: a call that reads a name and binds it again."""
    out = []
    for st in ast.walk(ast.parse(path.read_text())):
        if not (isinstance(st, ast.Assign) and isinstance(st.value, ast.Call)):
            continue
        bound = {n.id for t in st.targets for n in ast.walk(t) if isinstance(n, ast.Name)}
        read = [n.id for a in st.value.args for n in ast.walk(a) if isinstance(n, ast.Name) and n.id in bound]
        if read:
            out.append({"path": str(path), "line": st.lineno, "code": "AGL104", "subject": ", ".join(dict.fromkeys(read))})
    return out


def _clip_claims(path: Path) -> list[dict]:
    """Each clip or gradient norm, naming the scaler whose `scale(...)` the file calls (None without one)."""
    tree = ast.parse(path.read_text())
    scalers = [ast.unparse(n.func.value) for n in ast.walk(tree)
               if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "scale"]
    out = []
    for st in ast.walk(tree):
        if isinstance(st, (ast.Expr, ast.Assign)) and any(
            isinstance(n, ast.Attribute) and n.attr in ("clip_grad_norm_", "clip_grad_value_") or
            isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "norm" and ".grad" in ast.unparse(n.func.value)
            for n in ast.walk(st)
        ):
            out.append({"path": str(path), "line": st.lineno, "code": "AGL505", "subject": scalers[0] if scalers else None})
    return out


@pytest.mark.parametrize("code", sorted(EVIDENCE))
def test_negative_and_fixed_never_confirmed(code: str, driver: Path, tmp_path: Path) -> None:
    files = [p for p in sorted((FIXTURES / code).glob("neg_*.py")) + sorted((FIXTURES / code).glob("pos_*.fixed.py")) if not p.name.startswith(("neg_layout_", "pos_layout_"))]
    claims = [c for f in files for c in (_carried_claims(f) if code == "AGL104" else _clip_claims(f))]
    assert len(claims) >= 6
    spec = tmp_path / "claims.json"
    spec.write_text(json.dumps(claims))
    rc, data, err = verify("--findings", str(spec), "--", sys.executable, str(driver), *map(str, files))
    assert rc == 0, err
    statuses = [f["verification"]["status"] for f in data["findings"]]
    assert "confirmed" not in statuses, [f for f in data["findings"] if f["verification"]["status"] == "confirmed"]
    assert statuses.count("not reproduced") >= len(files) - 1, data["findings"]


def test_carried_without_backward_between_is_not_confirmed(driver: Path, tmp_path: Path) -> None:
    # Full BPTT carries the graph across the steps of one sequence: no
    # backward between two executions, so nothing runs into a used graph.
    path = FIXTURES / "AGL104" / "neg_full_bptt_one_backward.py"
    spec = tmp_path / "claims.json"
    spec.write_text(json.dumps(_carried_claims(path)))
    rc, data, err = verify("--findings", str(spec), "--", sys.executable, str(driver), str(path))
    assert rc == 0, err
    [v] = [f["verification"] for f in data["findings"]]
    assert v["status"] == "not reproduced" and "no backward ran" in v["evidence"], v


CUDA_SCALER = """\
import torch
from torch import nn


def main() -> None:
    model = nn.Linear(3, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    scaler = torch.amp.GradScaler("cuda")
    for _ in range(2):
        opt.zero_grad()
        scaler.scale(model(torch.randn(4, 3)).pow(2).mean()).backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        scaler.step(opt)
        scaler.update()


if __name__ == "__main__":
    main()
"""


@pytest.mark.skipif(torch.cuda.is_available(), reason="the CUDA scaler disables itself only without CUDA")
def test_cuda_scaler_without_cuda_is_unverifiable(tmp_path: Path) -> None:
    script = tmp_path / "train.py"
    script.write_text(CUDA_SCALER)
    rc, data, err = verify(str(script), cwd=tmp_path)
    assert rc == 0, err
    [v] = [f["verification"] for f in data["findings"] if f["code"] == "AGL505"]
    assert v["status"] == "unverifiable" and "without CUDA" in v["evidence"], v


def _loop_probes():
    path = ROOT / "autograd_lint" / "verify" / "loop_probes.py"
    spec = importlib.util.spec_from_file_location("_loop_probes_under_test", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_loud_outcome_confirms_only_after_attached_state(tmp_path: Path) -> None:
    # The backward that runs into the used graph raises: evidence when the
    # line fed it attached state and the error is raised in that file.
    probes = _loop_probes()
    path = str(tmp_path / "train.py")
    raised = {"state": "raised", "exception": "RuntimeError: Trying to backward through the graph a second time (or directly "
              "access saved tensors after they have already been freed).", "location": f"{path}:12"}
    verdict = probes.after_run("AGL104", path, 9, [{"attached": True}], raised)
    assert verdict is not None and verdict[0] == "confirmed" and "backward through the graph a second time" in verdict[1]
    assert probes.after_run("AGL104", path, 9, [{"attached": False}], raised) is None
    assert probes.after_run("AGL104", str(tmp_path / "other.py"), 9, [{"attached": True}], raised) is None
    assert probes.after_run("AGL104", path, 9, [{"attached": True}], {**raised, "exception": "ValueError: bad shape"}) is None
    assert probes.after_run("AGL104", path, 9, [{"attached": True}], {"state": "completed"}) is None


def test_state_cloned_from_the_previous_graph_is_still_carried(driver: Path, tmp_path: Path) -> None:
    # `memory.clone()` is a new tensor on the same graph: still carried.
    script = tmp_path / "clone.py"
    script.write_text(textwrap.dedent("""\
        import torch
        from torch import nn

        cell = nn.GRUCell(3, 4)
        opt = torch.optim.SGD(cell.parameters(), lr=0.1)
        memory = torch.zeros(2, 4)
        for _ in range(3):
            memory = memory.clone()
            memory = cell(torch.randn(2, 3), memory)
            opt.zero_grad()
            memory.pow(2).mean().backward(retain_graph=True)
    """))
    spec = tmp_path / "claims.json"
    spec.write_text(json.dumps([{"path": str(script), "line": 9, "code": "AGL104", "subject": "memory"}]))
    rc, data, err = verify("--findings", str(spec), "--", sys.executable, str(driver), str(script))
    assert rc == 0, err
    [v] = [f["verification"] for f in data["findings"]]
    assert v["status"] == "confirmed", v
