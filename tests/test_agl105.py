"""AGL105 fixtures under torch (CPU). A positive's flagged backward keeps
its graph past the iteration for nothing: once the script has run, the
last graph it kept is still alive (the tensors its nodes saved for
backward can still be read; reading them from a freed graph raises
"backward through the graph a second time"), and the script with `retain_graph=True` dropped at the flagged line runs clean. A
negative needs what it keeps: with `retain_graph=True` dropped at every
backward, it raises "backward through the graph a second time". The static
side (which line is reported) is test_fixtures.py's."""

from __future__ import annotations

import runpy
import sys
import warnings
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "AGL105"
POSITIVES = sorted(p for p in FIXTURES.glob("pos_*.py") if not p.name.endswith(".fixed.py"))
NEGATIVES = sorted(FIXTURES.glob("neg_*.py"))
EXPECT = "# expect: AGL105"
SECOND_TIME = "backward through the graph a second time"


def _run(path: Path, monkeypatch: pytest.MonkeyPatch, drop_at: set[int] | None) -> list[tuple[int, torch.Tensor]]:
    """Run the fixture as a script, recording `(line, tensor)` for each
    `backward(retain_graph=True)` it makes; at the lines in ``drop_at``
    (every line: None) `retain_graph=True` is dropped."""
    kept: list[tuple[int, torch.Tensor]] = []
    real = torch.Tensor.backward
    where = str(path)

    def backward(self, *args, **kwargs):
        frame = sys._getframe(1)
        if frame.f_code.co_filename == where and kwargs.get("retain_graph"):
            if drop_at is None or frame.f_lineno in drop_at:
                kwargs.pop("retain_graph")
            else:
                kept.append((frame.f_lineno, self))
        return real(self, *args, **kwargs)

    with monkeypatch.context() as m, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m.setattr(torch.Tensor, "backward", backward)
        runpy.run_path(where, run_name="__main__")
    return kept


def _flagged(path: Path) -> set[int]:
    return {i for i, line in enumerate(path.read_text().splitlines(), 1) if EXPECT in line}


def _saved_tensors_read(t: torch.Tensor) -> int:
    """Read every tensor the graph behind ``t`` saved for backward (raises
    once a backward without `retain_graph=True` freed them). A saved
    parameter that `opt.step()` changed since is still held: reading it
    raises the version check instead, and counts."""
    seen, stack, n = set(), [t.grad_fn], 0
    while stack:
        node = stack.pop()
        if node is None or node in seen:
            continue
        seen.add(node)
        for name in dir(node):
            if not name.startswith("_saved_"):
                continue
            try:
                n += isinstance(getattr(node, name), torch.Tensor)
            except RuntimeError as e:
                if "modified by an inplace operation" not in str(e):
                    raise
                n += 1
        stack.extend(f for f, _ in node.next_functions)
    return n


def test_fixtures_exist() -> None:
    assert len(POSITIVES) >= 3 and len(NEGATIVES) >= 4


@pytest.mark.parametrize("path", POSITIVES, ids=lambda p: p.name)
def test_positive_keeps_the_graph_for_nothing(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    flagged = _flagged(path)
    kept = [t for line, t in _run(path, monkeypatch, drop_at=set()) if line in flagged]
    assert kept, "the flagged backward never ran"
    # The last graph the flagged line kept is alive after the script ended.
    assert _saved_tensors_read(kept[-1]) > 0
    # Without `retain_graph=True` there, the script runs clean.
    _run(path, monkeypatch, drop_at=flagged)


def test_freed_graph_cannot_be_read() -> None:
    # What the positive test relies on: a freed graph's saved tensors raise.
    loss = torch.nn.Linear(3, 1)(torch.randn(2, 3)).tanh().sum()
    loss.backward()
    with pytest.raises(RuntimeError, match=SECOND_TIME):
        _saved_tensors_read(loss)


@pytest.mark.parametrize("path", NEGATIVES, ids=lambda p: p.name)
def test_negative_needs_what_it_keeps(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(RuntimeError, match=SECOND_TIME):
        _run(path, monkeypatch, drop_at=None)
