"""AGL305 fixtures run under torch (CPU): each positive's checkpointed
gradient differs from the gradient of the same forward run without
checkpointing (the recomputation drew a different dropout mask), and after
the fix (`preserve_rng_state=True`) the two agree; each negative's agree
as written."""

from __future__ import annotations

import runpy
from pathlib import Path

import pytest
from _fixture_support import is_golden, is_layout

torch = pytest.importorskip("torch")

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "AGL305"
POSITIVES = sorted(p for p in FIXTURES.glob("pos_*.py") if not is_golden(p) and not is_layout(p))
NEGATIVES = sorted(p for p in FIXTURES.glob("neg_*.py") if not is_golden(p) and not is_layout(p))


@pytest.fixture(autouse=True)
def _single_threaded_torch():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


def relative_error(path: Path) -> float:
    got, reference = runpy.run_path(str(path), run_name="agl305_fixture")["gradients"]()
    return float((got - reference).norm() / reference.norm().clamp_min(1e-12))


def test_every_positive_has_a_golden() -> None:
    assert len(POSITIVES) >= 3 and len(NEGATIVES) >= 5
    assert all(p.with_suffix(".fixed.py").is_file() for p in POSITIVES)


@pytest.mark.parametrize("path", POSITIVES, ids=lambda p: p.name)
def test_positive_gradient_belongs_to_another_forward(path: Path) -> None:
    assert relative_error(path) > 0.05
    assert relative_error(path.with_suffix(".fixed.py")) < 1e-5


@pytest.mark.parametrize("path", NEGATIVES, ids=lambda p: p.name)
def test_negative_gradient_matches(path: Path) -> None:
    assert relative_error(path) < 1e-5
