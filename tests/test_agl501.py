"""AGL501 fixtures run under torch (CPU): a positive backwards a loss made a
new leaf, and at every optimizer step no parameter has a gradient; a
negative runs clean and, where it steps an optimizer, its parameters get
gradients. The static side (which line is reported) is test_fixtures.py's."""

from __future__ import annotations

import runpy
import warnings
from pathlib import Path

import pytest
from _fixture_support import is_golden, is_layout

torch = pytest.importorskip("torch")
optimizer = pytest.importorskip("torch.optim.optimizer")

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "AGL501"
POSITIVES = sorted(p for p in FIXTURES.glob("pos_*.py") if not is_golden(p) and not is_layout(p))
NEGATIVES = sorted(p for p in FIXTURES.glob("neg_*.py") if not is_layout(p))


def _run_counting_grads(path: Path) -> list[tuple[int, int]]:
    """Run the fixture as a script; for each optimizer step, (parameters
    with a gradient, parameters)."""
    seen: list[tuple[int, int]] = []

    def before_step(opt, args, kwargs) -> None:
        params = [p for g in opt.param_groups for p in g["params"]]
        seen.append((sum(p.grad is not None for p in params), len(params)))

    handle = optimizer.register_optimizer_step_pre_hook(before_step)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            runpy.run_path(str(path), run_name="__main__")
    finally:
        handle.remove()
    return seen


def test_fixtures_exist() -> None:
    assert len(POSITIVES) >= 4 and len(NEGATIVES) >= 4


@pytest.mark.parametrize("path", POSITIVES, ids=lambda p: p.name)
def test_positive_trains_nothing(path: Path) -> None:
    steps = _run_counting_grads(path)
    assert steps, "the fixture never steps an optimizer"
    assert all(with_grad == 0 and total > 0 for with_grad, total in steps), steps


@pytest.mark.parametrize("path", NEGATIVES, ids=lambda p: p.name)
def test_negative_keeps_gradients(path: Path) -> None:
    steps = _run_counting_grads(path)
    # (Not every one: a penalty on the input's gradient gives the last bias none.)
    assert all(with_grad > 0 for with_grad, _ in steps), steps
