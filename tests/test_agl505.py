"""AGL505 fixtures under torch (CPU): a clip (or norm) before `unscale_`
sees the gradients multiplied by the loss scale.

Each fixture runs twice with the same seed: as written, and with every
GradScaler built disabled (``enabled=False``: the same code, no scaling).
The first gradients read are those of the same first batch through the same
weights, so the ratio of the norm read in the two runs is the scale the read
saw: the scaler's initial scale (2**16, exact: a power of two) for a
positive, 1 for a negative and for a positive's fixed golden. What is read
is the norm of the gradients handed to `clip_grad_norm_` /
`clip_grad_value_` (measured just before the real clip runs), or, for a
fixture that logs the norm itself, what its `main()` returns.
"""

from __future__ import annotations

import math
import runpy
from pathlib import Path

import pytest
from _fixture_support import is_layout

torch = pytest.importorskip("torch")

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "AGL505"
SCALE = 2.0**16  # GradScaler's default init_scale, which every fixture keeps
POSITIVES = sorted(p for p in FIXTURES.glob("pos_*.py") if not p.name.endswith(".fixed.py") and not is_layout(p))
GOLDENS = sorted(p for p in FIXTURES.glob("pos_*.fixed.py") if not p.name.startswith("pos_layout_"))
NEGATIVES = sorted(p for p in FIXTURES.glob("neg_*.py") if not is_layout(p))


def _first_norm_read(path: Path, monkeypatch: pytest.MonkeyPatch, disable_scaler: bool) -> float:
    seen: list[float] = []
    utils = torch.nn.utils

    def recording(real):
        def clip(parameters, *args, **kwargs):
            params = [p for p in (parameters if not isinstance(parameters, torch.Tensor) else [parameters])]
            grads = [p.grad for p in params if p.grad is not None]
            seen.append(float(torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(g.float()) for g in grads]))))
            return real(params, *args, **kwargs)

        return clip

    with monkeypatch.context() as m:
        m.setattr(utils, "clip_grad_norm_", recording(utils.clip_grad_norm_))
        m.setattr(utils, "clip_grad_value_", recording(utils.clip_grad_value_))
        if disable_scaler:
            real_scaler = torch.amp.GradScaler

            class Disabled(real_scaler):  # type: ignore[misc, valid-type]
                def __init__(self, *args, **kwargs):
                    kwargs["enabled"] = False
                    super().__init__(*args, **kwargs)

            m.setattr(torch.amp, "GradScaler", Disabled)
        namespace = runpy.run_path(str(path), run_name="agl505_fixture")
        returned = namespace["main"]() if "main" in namespace else None
    if seen:
        return seen[0]
    assert isinstance(returned, list) and returned, f"{path.name}: no clip ran and main() returned no norms"
    return float(returned[0])


def _ratio(path: Path, monkeypatch: pytest.MonkeyPatch) -> float:
    scaled = _first_norm_read(path, monkeypatch, disable_scaler=False)
    true = _first_norm_read(path, monkeypatch, disable_scaler=True)
    assert true > 0 and math.isfinite(scaled)
    return scaled / true


def test_cpu_grad_scaler_scales() -> None:
    """The premise: on CPU, `torch.amp.GradScaler("cpu")` multiplies the loss."""
    w = torch.ones(3, requires_grad=True)
    scaler = torch.amp.GradScaler("cpu")
    scaler.scale((w * 2).sum()).backward()
    assert torch.equal(w.grad, torch.full((3,), 2 * SCALE))


@pytest.mark.parametrize("path", POSITIVES, ids=lambda p: p.name)
def test_positive_reads_scaled_gradients(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert _ratio(path, monkeypatch) == pytest.approx(SCALE, rel=1e-4)


@pytest.mark.parametrize("path", GOLDENS + NEGATIVES, ids=lambda p: p.name)
def test_negative_and_fixed_read_true_gradients(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert _ratio(path, monkeypatch) == pytest.approx(1.0, rel=1e-4)


def test_every_positive_has_a_golden() -> None:
    """Every positive whose fix is offered has its golden; one with no fix
    (an `unscale_` may already run before the read on another path, so a
    second would raise) has none, and the fix leaves it as it is."""
    from autograd_lint import catalog
    from autograd_lint.fix import fix_source
    from autograd_lint.settings import Settings

    assert len(POSITIVES) >= 4 and len(NEGATIVES) >= 4
    settings = Settings(enabled=catalog.resolve_selection(None))
    unfixed = {p.name.removesuffix(".py") for p in POSITIVES if fix_source(str(p), p.read_bytes(), settings, unsafe=True).fixed_source is None}
    assert unfixed == {"pos_unscale_only_when_logging"}
    assert {p.name.removesuffix(".fixed.py") for p in GOLDENS} == {p.name.removesuffix(".py") for p in POSITIVES} - unfixed
