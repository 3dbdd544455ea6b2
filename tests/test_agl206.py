"""AGL206 fixtures under torch (CPU): a `state_dict()` kept as a snapshot
holds the live parameter tensors, so an optimizer step after it changes
what is later loaded, saved or returned.

Each fixture runs with `nn.Module.state_dict`, `nn.Module.load_state_dict`
and `torch.save` watched: every tensor a `state_dict()` returns is recorded
with its value then (by storage address); at each load or save, and for
what `main()` returns, every tensor of the mapping handed over that is
storage of a recorded one is compared with its value when the
`state_dict()` holding it was last taken. A positive hands over at least
one such tensor changed since (the "best" checkpoint is the later weights,
equal to the live ones); a negative and a fixed golden hand over none.
"""

from __future__ import annotations

import runpy
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "AGL206"
POSITIVES = sorted(p for p in FIXTURES.glob("pos_*.py") if not p.name.endswith(".fixed.py"))
GOLDENS = sorted(FIXTURES.glob("pos_*.fixed.py"))
NEGATIVES = sorted(FIXTURES.glob("neg_*.py"))


def _tensors(obj: object, depth: int = 0) -> list:
    if isinstance(obj, torch.Tensor):
        return [obj]
    if depth > 3:
        return []
    if isinstance(obj, dict):
        return [t for v in obj.values() for t in _tensors(v, depth + 1)]
    if isinstance(obj, (list, tuple)):
        return [t for v in obj for t in _tensors(v, depth + 1)]
    return []


class _Watch:
    def __init__(self) -> None:
        self.taken: dict[int, object] = {}  # data_ptr -> value when last returned by state_dict()
        self.handed = 0  # tensors of snapshots handed over
        self.changed = 0  # of those, changed since their snapshot was taken

    def take(self, sd: dict) -> None:
        for t in _tensors(sd):
            self.taken[t.data_ptr()] = t.detach().clone()

    def hand(self, obj: object) -> None:
        for t in _tensors(obj):
            then = self.taken.get(t.data_ptr())
            if then is None or then.shape != t.shape:
                continue
            self.handed += 1
            if not torch.equal(then, t.detach()):
                self.changed += 1


def _run(path: Path, monkeypatch: pytest.MonkeyPatch) -> _Watch:
    watch = _Watch()
    module = torch.nn.Module
    real_state_dict, real_load, real_save = module.state_dict, module.load_state_dict, torch.save

    def state_dict(self, *args, **kwargs):
        sd = real_state_dict(self, *args, **kwargs)
        watch.take(sd)
        return sd

    def load_state_dict(self, sd, *args, **kwargs):
        watch.hand(sd)
        return real_load(self, sd, *args, **kwargs)

    def save(obj, *args, **kwargs):
        watch.hand(obj)
        return real_save(obj, *args, **kwargs)

    with monkeypatch.context() as m:
        m.setattr(module, "state_dict", state_dict)
        m.setattr(module, "load_state_dict", load_state_dict)
        m.setattr(torch, "save", save)
        namespace = runpy.run_path(str(path), run_name="agl206_fixture")
        returned = namespace["main"]()
        watch.hand(returned)
    return watch


def test_state_dict_shares_storage() -> None:
    """The premise: `state_dict()` (and `.copy()`, `dict()`) hold the
    parameters' storage, which a step writes; `copy.deepcopy` does not."""
    import copy

    lin = torch.nn.Linear(2, 1)
    kept = {"plain": lin.state_dict(), "copy": lin.state_dict().copy(), "dict": dict(lin.state_dict()), "deep": copy.deepcopy(lin.state_dict())}
    before = lin.weight.detach().clone()
    lin(torch.ones(1, 2)).sum().backward()
    torch.optim.SGD(lin.parameters(), lr=1.0).step()
    for name in ("plain", "copy", "dict"):
        assert kept[name]["weight"].data_ptr() == lin.weight.data_ptr()
        assert torch.equal(kept[name]["weight"], lin.weight.detach())
    assert torch.equal(kept["deep"]["weight"], before)


@pytest.mark.parametrize("path", POSITIVES, ids=lambda p: p.name)
def test_positive_hands_over_later_weights(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    watch = _run(path, monkeypatch)
    assert watch.changed > 0, f"{path.name}: every snapshot handed over still held its values ({watch.handed} tensors)"


@pytest.mark.parametrize("path", NEGATIVES + GOLDENS, ids=lambda p: p.name)
def test_negative_and_fixed_keep_their_snapshot(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    watch = _run(path, monkeypatch)
    assert watch.changed == 0, f"{path.name}: {watch.changed} tensors handed over changed since their snapshot"


def test_every_positive_has_a_golden() -> None:
    assert [p.name.replace(".py", ".fixed.py") for p in POSITIVES] == [g.name for g in GOLDENS]
