"""Fixes proven by running them.

Every positive fixture that ``--fix --unsafe-fixes`` changes has its
golden result checked in beside it (``pos_x.fixed.py``, as TorchFix keeps
``.in``/``.out`` pairs). For each:

* the fix makes exactly the golden file; a fixture without fixes has none;
* the golden compiles, a second ``--fix`` changes nothing, and the findings
  the fix removed are gone from it;
* where the fixture runs on its own, the golden runs with the hazard gone:
  an AGL2xx positive's ``main()`` no longer raises, and for the other
  families the verifier, asked about the same statements in the golden,
  confirms none of them; the program prints the same as before.

To regenerate after a deliberate change of a fix: ``python
tests/test_fix_goldens.py`` (then read the diff).
"""

from __future__ import annotations

import json
import subprocess
import sys
import warnings
from collections import Counter
from pathlib import Path

import pytest
from _fixture_support import SCRIPT_CODES, is_golden, runnable

from autograd_lint import catalog
from autograd_lint.engine import lint_source
from autograd_lint.fix import fix_source
from autograd_lint.settings import Settings

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"
SETTINGS = Settings(enabled=catalog.resolve_selection(None))
POSITIVES = sorted(p for p in FIXTURES.glob("AGL*/pos_*.py") if not is_golden(p) and p.parent.name != "AGL001")
RAISING_CODES = ("AGL201", "AGL202", "AGL204", "AGL205")  # their positives raise autograd's error
EXPECT = "# expect:"


def golden_of(path: Path) -> Path:
    return path.with_name(path.stem + ".fixed.py")


def _fix(path: Path):
    return fix_source(str(path), path.read_bytes(), SETTINGS, unsafe=True)


GOLDENS = [p for p in POSITIVES if golden_of(p).exists()]


def _id(p: Path) -> str:
    return p.relative_to(FIXTURES).as_posix()


@pytest.mark.parametrize("path", POSITIVES, ids=_id)
def test_fix_makes_the_golden_file(path: Path) -> None:
    result = _fix(path)
    golden = golden_of(path)
    if not result.changed:
        assert not golden.exists(), f"{_id(golden)}: no fix applies any more; remove it"
        return
    assert golden.exists(), f"{_id(path)}: fixed, but no golden {golden.name} (run this module to write it)"
    assert result.fixed_source == golden.read_bytes(), f"{_id(path)}: the fix no longer makes {golden.name}"
    assert not result.problems


@pytest.mark.parametrize("path", GOLDENS, ids=_id)
def test_golden_compiles_is_stable_and_lints_clean_of_what_was_fixed(path: Path) -> None:
    golden = golden_of(path)
    text = golden.read_text()
    compile(text, str(golden), "exec")
    again = fix_source(str(golden), golden.read_bytes(), SETTINGS, unsafe=True)
    assert not again.changed, f"{golden.name}: a second --fix changes it again"
    before = Counter(f.code for f in lint_source(str(path), path.read_bytes(), SETTINGS))
    after = Counter(f.code for f in lint_source(str(golden), golden.read_bytes(), SETTINGS))
    fixed = Counter(f.code for f in _fix(path).fixed)
    for code, n in fixed.items():
        # (A fix may remove findings that rested on what it fixed: a meter
        # keeps nothing once its callers hand it numbers.)
        assert after[code] <= before[code] - n, f"{golden.name}: {code} still reported after its fix"


RAISING = [p for p in GOLDENS if p.parent.name in RAISING_CODES]
SCRIPTS = [p for p in GOLDENS if p.parent.name in SCRIPT_CODES and runnable(p)]

# Runs scripts one after the other in one interpreter (torch is imported
# once), each as `__main__`, and says how each ended and what it printed.
BATCH = """\
import contextlib, io, json, runpy, sys, warnings
warnings.simplefilter("ignore")
out = {}
for path in sys.argv[1:]:
    buf = io.StringIO()
    try:
        with contextlib.redirect_stdout(buf):
            runpy.run_path(path, run_name="__main__")
        error = None
    except BaseException as e:
        error = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
    out[path] = {"error": error, "stdout": buf.getvalue()}
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict:
    """How every runnable positive and its golden ran (two interpreters:
    the originals, then the goldens, in the same order)."""
    pytest.importorskip("torch")
    driver = tmp_path_factory.mktemp("goldens") / "batch.py"
    driver.write_text(BATCH)
    out: dict = {}
    for paths in ([str(p) for p in RAISING + SCRIPTS], [str(golden_of(p)) for p in RAISING + SCRIPTS]):
        proc = subprocess.run([sys.executable, str(driver), *paths], capture_output=True, text=True, timeout=600, cwd=ROOT,
                              env={"PATH": "/usr/bin:/bin", "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)})
        assert proc.returncode == 0, proc.stderr[-2000:]
        out.update(json.loads(proc.stdout.strip().splitlines()[-1]))
    return out


@pytest.mark.parametrize("path", RAISING, ids=_id)
def test_golden_of_a_raising_positive_runs_clean(path: Path, runs: dict) -> None:
    assert runs[str(path)]["error"], f"{_id(path)}: the positive itself runs clean"
    assert runs[str(golden_of(path))]["error"] is None, f"{golden_of(path).name} still fails: {runs[str(golden_of(path))]['error']}"


@pytest.mark.parametrize("path", SCRIPTS, ids=_id)
def test_golden_of_a_script_prints_the_same(path: Path, runs: dict) -> None:
    before, after = runs[str(path)], runs[str(golden_of(path))]
    assert before["error"] is None and after["error"] is None, after["error"]
    assert after["stdout"] == before["stdout"]


def test_verifier_confirms_no_hazard_in_the_goldens(tmp_path: Path) -> None:
    # The findings the fixes removed, asked of the golden files at the
    # statements they moved to (their `# expect:` comments travel with them).
    pytest.importorskip("torch")
    claims = []
    for path in SCRIPTS:
        golden = golden_of(path)
        fixed = _fix(path).fixed
        left = {f.code for f in lint_source(str(golden), golden.read_bytes(), SETTINGS)}
        subjects = {f.code: f.subject for f in fixed}
        for row, line in enumerate(golden.read_text().splitlines(), 1):
            if EXPECT in line:
                for code in line.split(EXPECT, 1)[1].replace(",", " ").split():
                    if code in subjects and code not in left:  # fixed, and no finding of it left to confuse
                        claims.append({"path": str(golden), "line": row, "code": code, "subject": subjects[code]})
    assert len(claims) >= 10
    spec = tmp_path / "claims.json"
    spec.write_text(json.dumps(claims))
    driver = tmp_path / "driver.py"
    driver.write_text(
        "import runpy, sys, warnings\nwarnings.simplefilter('ignore')\n"
        "for p in sys.argv[1:]:\n    runpy.run_path(p, run_name='__main__')\n"
    )
    proc = subprocess.run(
        [sys.executable, "-m", "autograd_lint", "verify", "--format", "json", "--findings", str(spec), "--", sys.executable, str(driver),
         *(str(golden_of(p)) for p in SCRIPTS)],
        capture_output=True, text=True, timeout=600, cwd=ROOT,
        env={"PATH": "/usr/bin:/bin", "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)},
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    data = json.loads(proc.stdout)
    confirmed = [f for f in data["findings"] if f["verification"]["status"] == "confirmed"]
    assert not confirmed, confirmed


if __name__ == "__main__":  # regenerate the golden files
    with warnings.catch_warnings():
        for p in POSITIVES:
            r = _fix(p)
            g = golden_of(p)
            if r.changed:
                g.write_bytes(r.fixed_source)
            elif g.exists():
                g.unlink()
