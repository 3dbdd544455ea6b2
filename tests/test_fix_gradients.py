"""A fix never cuts a gradient the code uses.

Every runnable positive fixture with a golden (``pos_x.fixed.py``: what
``--fix --unsafe-fixes`` makes of ``pos_x.py``) is run twice under torch,
as written and as fixed, and the parameters that receive a gradient are
compared: after each backward (``torch.autograd.backward``, which
``Tensor.backward`` calls), every leaf its graph reaches that has a
``.grad`` is noted, a module's parameter by its module's class and its
name, another leaf (a tensor made with ``requires_grad=True``) by its
shape.
The fixed run must give gradients to the same parameters as the run as
written, and raise nothing. The AGL5xx fixes are the exception they state:
they change what trains on purpose (AGL504's `requires_grad_(False)`
freezes what the code meant to freeze), so there the fixed run gives
gradients to no parameter the run as written did not. A positive that raises as written (an in-place
write autograd refuses, AGL2xx) has no run to compare with: the fixed one
must run, and give a gradient to some parameter where it backpropagates.
"""

from __future__ import annotations

import contextlib
import io
import runpy
import warnings
from pathlib import Path

import pytest
from _fixture_support import runnable

torch = pytest.importorskip("torch")

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"
GOLDENS = sorted(p for p in FIXTURES.glob("*/pos_*.fixed.py") if runnable(p.with_name(p.name.replace(".fixed.py", ".py"))))


class _Gradients:
    """The leaves given a gradient during a run, by name (the objects
    differ between the two runs, the names do not)."""

    def __init__(self) -> None:
        self.modules: list = []
        self.seen: set[int] = set()
        self.given: set[tuple] = set()
        self.backwards = 0

    def forward_hook(self, module, args, output) -> None:
        if id(module) not in self.seen:
            self.seen.add(id(module))
            self.modules.append(module)

    def leaves(self, tensors) -> list:
        """The leaves the graphs of ``tensors`` reach (their AccumulateGrad
        nodes' variables)."""
        if isinstance(tensors, torch.Tensor):
            tensors = [tensors]
        todo = [t.grad_fn for t in tensors if isinstance(t, torch.Tensor) and t.grad_fn is not None]
        seen: set[int] = set()
        out = []
        while todo:
            node = todo.pop()
            if node is None or id(node) in seen:
                continue
            seen.add(id(node))
            if hasattr(node, "variable"):
                out.append(node.variable)
            todo.extend(n for n, _ in node.next_functions)
        return out

    def after_backward(self, leaves: list) -> None:
        self.backwards += 1
        names = {id(p): (type(m).__name__, name) for m in self.modules for name, p in m.named_parameters(recurse=False)}
        for leaf in leaves:
            if leaf.grad is not None:
                self.given.add(names.get(id(leaf), ("leaf", tuple(leaf.shape))))


def _run(path: Path) -> tuple[_Gradients, BaseException | None]:
    record = _Gradients()
    backward = torch.autograd.backward

    def recording_backward(tensors, *args, **kwargs):
        leaves = record.leaves(tensors)
        out = backward(tensors, *args, **kwargs)
        record.after_backward(leaves)
        return out

    hook = torch.nn.modules.module.register_module_forward_hook(record.forward_hook)
    torch.autograd.backward = recording_backward
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    error = None
    try:
        with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
            warnings.simplefilter("ignore")
            ns = runpy.run_path(str(path), run_name="fixture")
            torch.manual_seed(0)
            ns["main"]()
    except Exception as e:  # the run as written may raise what the rule reports
        error = e
    finally:
        torch.autograd.backward = backward
        hook.remove()
        torch.set_num_threads(threads)
    return record, error


def _id(path: Path) -> str:
    return path.relative_to(FIXTURES).as_posix()


def test_goldens_to_run_exist() -> None:
    assert len(GOLDENS) >= 100
    assert {p.parent.name for p in GOLDENS} >= {"AGL101", "AGL102", "AGL103", "AGL201", "AGL202", "AGL301"}


@pytest.mark.parametrize("golden", GOLDENS, ids=_id)
def test_fix_keeps_the_gradients(golden: Path) -> None:
    original = golden.with_name(golden.name.replace(".fixed.py", ".py"))
    before, raised = _run(original)
    after, error = _run(golden)
    assert error is None, f"{_id(golden)}: the fixed code raises {type(error).__name__}: {error}"
    if raised is None and golden.parent.name.startswith("AGL5"):
        assert after.given <= before.given, (
            f"{_id(golden)}: the fix gives gradients to parameters the code as written did not: {sorted(after.given - before.given)}"
        )
    elif raised is None:
        assert after.given == before.given, (
            f"{_id(golden)}: parameters given a gradient as written {sorted(before.given)}, after the fix {sorted(after.given)}"
        )
    elif after.backwards:
        assert after.given, f"{_id(golden)}: the fixed code backpropagates but no leaf gets a gradient"
