"""`verify` for AGL206 on the fixtures, under torch (CPU): every positive's
snapshot is confirmed where it is loaded or saved after a step changed it
(latent where it is only returned: the probe sees no use), and claims
placed on the `state_dict()` lines of the negatives and of the fixed
positives are never confirmed (a copy, a snapshot saved before any step)."""

from __future__ import annotations

import ast
import json
import sys
from pathlib import Path

import pytest
from _fixture_support import is_golden
from test_verify import DRIVER, FIXTURES, ROOT, by_line, expected_lines, verify

pytest.importorskip("torch")

CODE = "AGL206"


@pytest.fixture(scope="module")
def driver(tmp_path_factory) -> Path:
    p = tmp_path_factory.mktemp("verify") / "driver.py"
    p.write_text(DRIVER)
    return p


def test_positive_fixtures_confirmed(driver: Path) -> None:
    files = sorted(p for p in (FIXTURES / CODE).glob("pos_*.py") if not is_golden(p))
    rel = [str(f.relative_to(ROOT)) for f in files]
    rc, data, err = verify(*rel, "--", sys.executable, str(driver), *rel)
    assert rc == 0, err
    got = by_line(data)
    expected = [(f.name, row, CODE) for f in files for row in expected_lines(f, CODE)]
    assert len(expected) >= 5
    used = {f.name for f in files if "load_state_dict(" in f.read_text() or "torch.save(" in f.read_text()}
    assert len(used) >= 4
    # A snapshot replaced before any load (`best_state` bound again when an
    # epoch improves) changed but was never loaded: latent, not confirmed.
    wrong = [(k, got.get(k)) for k in expected if not (
        got.get(k, {}).get("status") == "confirmed" and "changed in place after it was taken" in got[k]["evidence"]
        or got.get(k, {}).get("status") == "latent" and "changed after it was taken" in got[k]["evidence"]
    )]
    wrong += [name for name in used if not any(got.get(k, {}).get("status") == "confirmed" for k in expected if k[0] == name)]
    assert not wrong, wrong


def _snapshot_claims(path: Path) -> list[dict]:
    """Every statement that calls `state_dict()` of something."""
    out = []
    for st in ast.walk(ast.parse(path.read_text())):
        if isinstance(st, (ast.Assign, ast.Expr, ast.Return)) and any(
            isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "state_dict" for n in ast.walk(st)
        ):
            out.append({"path": str(path), "line": st.lineno, "code": CODE})
    return out


def test_negative_and_fixed_never_confirmed(driver: Path, tmp_path: Path) -> None:
    files = sorted((FIXTURES / CODE).glob("neg_*.py")) + sorted((FIXTURES / CODE).glob("pos_*.fixed.py"))
    claims = [c for f in files for c in _snapshot_claims(f)]
    assert len(claims) >= 8
    spec = tmp_path / "claims.json"
    spec.write_text(json.dumps(claims))
    rc, data, err = verify("--findings", str(spec), "--", sys.executable, str(driver), *map(str, files))
    assert rc == 0, err
    statuses = [f["verification"]["status"] for f in data["findings"]]
    assert "confirmed" not in statuses, [f for f in data["findings"] if f["verification"]["status"] == "confirmed"]
    assert statuses.count("not reproduced") >= len(files) - 1, data["findings"]
