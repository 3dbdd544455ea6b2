"""AGL104 fixtures run under torch (CPU): each positive shows what carrying
attached recurrent state into the next iteration does, each negative shows
it does not happen.

The growth is measured by the autograd nodes reachable from each loss a
backward is called on (a deterministic count, never time): constant when
every iteration's graph is its own, growing when iteration i's graph hangs
off iteration i+1's.
"""

from __future__ import annotations

import runpy
from pathlib import Path

import pytest
from _fixture_support import is_golden, is_layout

torch = pytest.importorskip("torch")

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "AGL104"

# What each positive does when run: the error autograd raises, or "grows"
# (no error; the graph each backward walks gets bigger every iteration).
EFFECTS = {
    "pos_gru_hidden_retain_graph_step.py": r"modified by an inplace operation",
    "pos_lstm_tuple_state.py": r"backward through the graph a second time",
    "pos_char_rnn_accumulate_retain.py": "grows",
    "pos_custom_cell_memory.py": r"backward through the graph a second time",
    "pos_grucell_script.py": r"backward through the graph a second time",
}
POSITIVES = sorted(p for p in FIXTURES.glob("pos_*.py") if not is_golden(p) and not is_layout(p))
NEGATIVES = sorted(p for p in FIXTURES.glob("neg_*.py") if not is_golden(p) and not is_layout(p))


def graph_size(t) -> int:
    """Autograd nodes reachable from ``t.grad_fn``."""
    seen: set[int] = set()
    todo = [t.grad_fn]
    while todo:
        fn = todo.pop()
        if fn is None or id(fn) in seen:
            continue
        seen.add(id(fn))
        todo.extend(nxt for nxt, _ in fn.next_functions)
    return len(seen)


@pytest.fixture
def sizes(monkeypatch):
    """Records the graph size of every tensor `.backward()` is called on."""
    seen: list[int] = []
    original = torch.Tensor.backward

    def backward(self, *args, **kwargs):
        seen.append(graph_size(self))
        return original(self, *args, **kwargs)

    monkeypatch.setattr(torch.Tensor, "backward", backward)
    return seen


def run(path: Path) -> None:
    ns = runpy.run_path(str(path), run_name="agl104_fixture")
    if "main" in ns:
        ns["main"]()
    else:  # a flat script runs as it is loaded
        runpy.run_path(str(path), run_name="__main__")


def test_every_positive_has_its_effect_listed() -> None:
    assert len(POSITIVES) >= 5 and len(NEGATIVES) >= 5
    assert sorted(p.name for p in POSITIVES) == sorted(EFFECTS)


@pytest.mark.parametrize("path", POSITIVES, ids=lambda p: p.name)
def test_positive(path: Path, sizes: list[int]) -> None:
    effect = EFFECTS[path.name]
    if effect == "grows":
        run(path)
        assert len(sizes) >= 3
        assert all(b > a for a, b in zip(sizes, sizes[1:])), sizes
    else:
        with pytest.raises(RuntimeError, match=effect):
            run(path)
        # Before it fails, each backward already reached the graphs before it.
        assert len(sizes) >= 2
        assert all(b > a for a, b in zip(sizes, sizes[1:])), sizes


@pytest.mark.parametrize("path", NEGATIVES, ids=lambda p: p.name)
def test_negative(path: Path, sizes: list[int]) -> None:
    run(path)
    assert len(sizes) >= 3
    assert len(set(sizes)) == 1, sizes
