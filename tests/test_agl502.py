"""AGL502 fixtures under torch (CPU): a tensor made to require grad and then
moved, cast or scaled is not a leaf, and where it goes shows it.

On a machine without a GPU, `.to(device)` to the CPU and `.cuda()` are not
moves (the first returns the tensor itself, the second fails), so each
fixture runs with both made to copy, as a move to another device does
(``Tensor.to(..., copy=True)``). A positive then shows one of torch's
effects: the optimizer refuses the tensor (``ValueError: can't optimize a
non-leaf Tensor``), the UserWarning of a non-leaf's ``.grad`` read (then a
TypeError from the None it gave), or a module whose tensor attribute that
requires grad is not among its parameters, or a frozen parameter's copy
that is not in its ``state_dict()``. A negative shows none, and the
golden file of a fixed positive runs clean of them too.
"""

from __future__ import annotations

import runpy
import warnings
from pathlib import Path

import pytest
from _fixture_support import is_layout

torch = pytest.importorskip("torch")

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "AGL502"
POSITIVES = sorted(p for p in FIXTURES.glob("pos_*.py") if not p.name.endswith(".fixed.py") and not is_layout(p))
GOLDENS = sorted(p for p in FIXTURES.glob("pos_*.fixed.py") if not p.name.startswith("pos_layout_"))
NEGATIVES = sorted(p for p in FIXTURES.glob("neg_*.py") if not is_layout(p))
NON_LEAF_GRAD = "is not a leaf Tensor is being accessed"


def _effects(path: Path, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """What of AGL502's effects running the fixture's ``main()`` shows."""
    real_to = torch.Tensor.to

    def moving_to(self, *args, **kwargs):
        # A move to the CPU of a tensor made there (the fixtures make theirs
        # there) returns it on any machine; every other move is taken as
        # one to another device, as on a GPU.
        to_cpu = (args, kwargs) in ((("cpu",), {}), ((), {"device": "cpu"}))
        if not to_cpu:
            kwargs.setdefault("copy", True)
        return real_to(self, *args, **kwargs)

    seen: list[str] = []
    with monkeypatch.context() as m, warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        m.setattr(torch.Tensor, "to", moving_to)
        m.setattr(torch.Tensor, "cuda", lambda self, *a, **k: real_to(self, "cpu", copy=True))
        namespace = runpy.run_path(str(path), run_name="agl502_fixture")
        try:
            result = namespace["main"]()
        except ValueError as e:
            assert "can't optimize a non-leaf Tensor" in str(e), e
            seen.append("optimizer refuses a non-leaf")
            result = None
        except TypeError as e:
            assert "NoneType" in str(e), e
            seen.append("None gradient used")
            result = None
    if any(NON_LEAF_GRAD in str(w.message) for w in caught):
        seen.append("non-leaf .grad read")
    if isinstance(result, torch.nn.Module):
        registered = {id(p) for p in result.parameters()}
        saved = result.state_dict(keep_vars=True)
        for name, v in vars(result).items():
            if isinstance(v, torch.Tensor) and v.requires_grad and id(v) not in registered:
                assert not v.is_leaf and v.grad_fn is not None
                seen.append(f"self.{name} not registered, never trained")
            elif isinstance(v, torch.Tensor) and not isinstance(v, torch.nn.Parameter) and name not in saved:
                # A frozen `nn.Parameter(..., requires_grad=False)` copied by
                # the move: a plain attribute, not saved with the module.
                seen.append(f"self.{name} a plain tensor, not in state_dict()")
    return seen


def test_premise_a_copy_of_a_leaf_is_not_one() -> None:
    w = torch.randn(3, requires_grad=True)
    for copy in (w.double(), w.to("cpu", copy=True), w * 0.01, torch.nn.Parameter(torch.ones(1)).double()):
        assert copy.requires_grad and not copy.is_leaf and copy.grad_fn is not None
    with pytest.raises(ValueError, match="non-leaf"):
        torch.optim.SGD([w.double()], lr=0.1)


@pytest.mark.parametrize("path", POSITIVES, ids=lambda p: p.name)
def test_positive_shows_the_effect(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert _effects(path, monkeypatch), f"{path.name}: no effect of a non-leaf trainable tensor"


@pytest.mark.parametrize("path", NEGATIVES + GOLDENS, ids=lambda p: p.name)
def test_negative_and_golden_show_none(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert _effects(path, monkeypatch) == []


def test_every_fixed_positive_has_a_golden() -> None:
    fixable = {"pos_weights_moved_to_device", "pos_parameter_moved_on_self", "pos_scaled_random_init", "pos_double_precision_grad_read", "pos_parameter_group_cast", "pos_frozen_statistics_moved_on_self"}
    assert {p.name.removesuffix(".fixed.py") for p in GOLDENS} == fixable
