"""AGL503 and AGL504 fixtures, run under torch (CPU): the silent effect each
positive claims happens, and each negative shows it absent.

* AGL503 (``build()``, ``intended(model)``, ``train(model)``): in a
  positive, some of the tensors ``intended`` names (the ones the plain
  container holds) are missing from ``model.parameters()`` and from
  ``state_dict()``, and ``train`` leaves them exactly as they were; in a
  negative every one is listed and training changes it.
* AGL504 (``build()``, ``meant_frozen(model)``): in a positive, after the
  "freeze" the tensors still require grad and a backward gives them a
  gradient; in a negative none requires grad and none gets a gradient.

The static side (which line is reported) is test_fixtures.py's; that the
verifier confirms each positive is test_verify.py's.
"""

from __future__ import annotations

import runpy
import warnings
from pathlib import Path

import pytest
from _fixture_support import is_golden, is_layout

torch = pytest.importorskip("torch")

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


def _files(code: str, prefix: str) -> list[Path]:
    return sorted(p for p in (FIXTURES / code).glob(f"{prefix}*.py") if not is_golden(p) and not is_layout(p))


def _load(path: Path) -> dict:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return runpy.run_path(str(path), run_name="fixture")


def _id(p: Path) -> str:
    return p.relative_to(FIXTURES).as_posix()


@pytest.fixture(autouse=True)
def _seeded_single_thread():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


def test_enough_fixtures() -> None:
    for code in ("AGL503", "AGL504"):
        assert len(_files(code, "pos_")) >= 5 and len(_files(code, "neg_")) >= 5, code


def _unregistered(model, tensors) -> tuple[list, list]:
    listed = {id(p) for p in model.parameters()}
    saved = {id(v) for v in model.state_dict(keep_vars=True).values()} if isinstance(model, torch.nn.Module) else listed
    return [t for t in tensors if id(t) not in listed], [t for t in tensors if id(t) not in saved]


@pytest.mark.parametrize("path", _files("AGL503", "pos_"), ids=_id)
def test_agl503_positive_leaves_the_container_untrained(path: Path) -> None:
    ns = _load(path)
    model = ns["build"]()
    held = ns["intended"](model)
    assert held
    not_listed, not_saved = _unregistered(model, held)
    assert not_listed and not_saved, "every tensor in the container is registered"
    before = [t.detach().clone() for t in not_listed]
    trained_before = [p.detach().clone() for p in model.parameters()]
    ns["train"](model)
    assert all(torch.equal(b, t.detach()) for b, t in zip(before, not_listed)), "an unregistered tensor changed"
    # The rest of the model did train: the optimizer ran.
    assert any(not torch.equal(b, p.detach()) for b, p in zip(trained_before, model.parameters()))


@pytest.mark.parametrize("path", _files("AGL503", "neg_"), ids=_id)
def test_agl503_negative_trains_what_it_holds(path: Path) -> None:
    ns = _load(path)
    model = ns["build"]()
    held = ns["intended"](model)
    assert held
    not_listed, not_saved = _unregistered(model, held)
    assert not not_listed and not not_saved
    before = [t.detach().clone() for t in held]
    ns["train"](model)
    assert all(not torch.equal(b, t.detach()) for b, t in zip(before, held)), "a registered tensor did not train"


def _backward(model) -> None:
    # Any differentiable use of every parameter: a loss that reaches them all.
    loss = sum((p * p).sum() for p in model.parameters())
    loss.backward()


@pytest.mark.parametrize("path", _files("AGL504", "pos_"), ids=_id)
def test_agl504_positive_freezes_nothing(path: Path) -> None:
    ns = _load(path)
    model = ns["build"]()
    frozen = ns["meant_frozen"](model)
    assert frozen
    assert all(p.requires_grad for p in frozen)
    _backward(model)
    assert all(p.grad is not None for p in frozen)


@pytest.mark.parametrize("path", [p for p in _files("AGL504", "neg_") if "meant_frozen" in p.read_text()], ids=_id)
def test_agl504_negative_freezes(path: Path) -> None:
    ns = _load(path)
    model = ns["build"]()
    frozen = ns["meant_frozen"](model)
    assert frozen
    assert not any(p.requires_grad for p in frozen)
    for p in model.parameters():
        p.grad = None
    if any(p.requires_grad for p in model.parameters()):
        _backward(model)
    assert all(p.grad is None for p in frozen)


@pytest.mark.parametrize("path", _files("AGL503", "") + _files("AGL504", ""), ids=_id)
def test_fixture_main_runs(path: Path) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        runpy.run_path(str(path), run_name="fixture")["main"]()
