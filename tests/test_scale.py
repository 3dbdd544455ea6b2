"""Scale: what a run keeps does not grow with the project, and a module's
size in functions costs in proportion (issue 27).

Memory itself is not measured here (that is bench/bench.py's job, and no
test may depend on the machine): these tests pin the mechanisms, and that
they change no finding.
"""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest
from test_fixtures import PROJECT_FIXTURES

from autograd_lint import catalog, modules, runner
from autograd_lint.analysis.observer import BySite
from autograd_lint.cache import Scratch
from autograd_lint.engine import lint_source
from autograd_lint.runner import analyse_file, lint_paths
from autograd_lint.settings import Settings

ALL = Settings(enabled=catalog.resolve_selection(["ALL"]))


def _findings(results) -> list[tuple]:
    return [(f.path, f.code, f.start.row, f.start.column, f.message) for r in results for f in r.findings]


def _lint(project: Path) -> list[tuple]:
    files = sorted(str(f) for f in project.rglob("*.py"))
    return _findings(lint_paths(files, ALL, jobs=1, roots=[str(project)]))


@pytest.mark.parametrize("project", PROJECT_FIXTURES, ids=lambda p: str(p.relative_to(p.parents[1])))
def test_outlines_read_on_demand_decide_as_outlines_kept(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The same findings whether every outline stays in memory (no store),
    or each is read back from the run's store, with room for one only."""
    stored = _lint(project)
    monkeypatch.setattr(modules, "OUTLINES_KEPT", 1)
    assert _lint(project) == stored

    def no_store(*args, **kwargs):
        raise OSError("no temporary folder")

    monkeypatch.setattr(Scratch, "__init__", no_store)
    assert _lint(project) == stored


def test_a_worker_hands_back_the_outline_by_reference(tmp_path: Path) -> None:
    """What crosses from a worker to the parent is the findings and the
    index, not the summary and the calls (they stay in the store)."""
    src = tmp_path / "helpers.py"
    src.write_text(
        "import torch\n\n"
        "class Meter:\n"
        "    def __init__(self):\n        self.items = []\n\n"
        "    def update(self, v):\n        self.items.append(v)\n\n"
        "def evaluate(model, batches):\n    return [model(b) for b in batches]\n\n"
        "def train(model, batches, opt):\n"
        "    for b in batches:\n        loss = model(b).sum()\n        loss.backward()\n        opt.step()\n"
        "    evaluate(model, batches)\n"
    )
    in_memory = analyse_file(str(src), ALL)
    store = Scratch()
    try:
        handed = analyse_file(str(src), ALL, store)
        sent = pickle.dumps(handed)
        assert len(sent) < len(pickle.dumps(in_memory)) / 2
        back = pickle.loads(sent)
        assert back.outline == in_memory.outline
        assert back.index == in_memory.index and "evaluate" in back.index.called
    finally:
        store.close()


def test_by_site_forgets_one_function_and_keeps_the_order() -> None:
    seen = BySite(lambda v: v[0])
    for key, fn in (("a", 1), ("b", 2), ("c", 1), ("d", 3)):
        seen[key] = (fn, key)
    seen["b"] = (1, "b")  # the same site, now told by function 1
    seen.forget(1)
    assert list(seen) == ["d"]
    seen.forget(2)  # "b" moved to 1 and is gone already: nothing else goes
    assert list(seen) == ["d"]


def _chain(n: int) -> str:
    return "".join(f"def f{i}(x):\n    return f{i + 1}(x) + 1\n\n" for i in range(n)) + f"def f{n}(x):\n    return x\n"


def test_a_call_chain_deeper_than_the_recursion_limit() -> None:
    """Callees are scheduled before callers with an explicit stack: a
    generated module's chain of 3,000 calls is linted, not an error."""
    assert lint_source("chain.py", ("import torch\n\n" + _chain(3000)).encode(), ALL) == []


def test_memory_is_given_back_above_the_threshold(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(runner, "TRIM_ABOVE_BYTES", 0)
    runner.give_back_memory()  # glibc: trims; elsewhere: does nothing, never raises
