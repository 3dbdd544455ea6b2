"""Anomaly detection switched on and left on in training code (AGL304).

``torch.autograd.set_detect_anomaly(True)`` turns anomaly detection on for
the whole process: every forward op records its stack trace and every
backward checks each gradient for NaN. Training runs several times slower
(7.8x on a small MLP, torch 2.13), and nothing warns: only the
``torch.autograd.detect_anomaly()`` context manager does.

An observer of the interpreter. The evidence, all of it needed:

- a call the qualified-name resolution (imports, aliases) gives as
  ``torch.autograd.set_detect_anomaly``, with a literal ``True`` as its
  mode (first argument or ``mode=``), as a statement of its own (as a
  ``with`` item it is scoped: its exit restores the mode);
- no ``if`` around it but the script guard ``if __name__ == "__main__":``
  (any other condition may be the debug flag that asks for it);
- no path from it reaches another ``set_detect_anomaly`` call in the same
  function (``False``, or a mode the code computes), and no other function
  of the module makes one (a callback that switches it off at the end);
- the module trains: it runs a backward (``loss.backward()``,
  ``torch.autograd.grad``, ``accelerator.backward(loss)``) or an
  optimizer's ``step()``;
- not test code: not in a file pytest collects (``test_*.py``,
  ``*_test.py``, ``conftest.py``) nor in a test function (test_code.py).
"""

from __future__ import annotations

from dataclasses import dataclass

from autograd_lint.analysis import ir
from autograd_lint.analysis import torch_api as lib
from autograd_lint.analysis.interp import Program, Run
from autograd_lint.analysis.observer import CallEvent, Observer
from autograd_lint.analysis.test_code import is_test_module, is_test_function


@dataclass(frozen=True, slots=True)
class AnomalySite:
    """``set_detect_anomaly(True)`` at ``node``, left on in a module that
    trains (``trains``: a backward or step of it, cited in the message)."""

    node: object
    fn: ir.Function
    trains: object = None


def _mode(c: ir.Call) -> ir.Expr | None:
    args = c.positional()
    return args[0] if args else c.keyword(lib.ANOMALY_MODE_ARGUMENT)


def _is_true(e: ir.Expr | None) -> bool:
    return type(e) is ir.Const and e.value is True  # type: ignore[union-attr]


def _script_guard(test: ir.Expr) -> bool:
    """``__name__ == "__main__"``: runs whenever the script does."""
    if type(test) is not ir.Compare or test.ops != ("==",) or len(test.comparators) != 1:
        return False
    sides = (test.left, test.comparators[0])
    return any(type(s) is ir.Name and s.id == "__name__" for s in sides) and any(type(s) is ir.Const and s.value == "__main__" for s in sides)  # type: ignore[attr-defined]


class Anomaly(Observer):
    def __init__(self) -> None:
        # id(call node) -> the site, for every unguarded `set_detect_anomaly(True)`
        self.sites: dict[int, AnomalySite] = {}
        # ids of the sites a later call in their function may switch off
        self.switched: set[int] = set()
        # function index -> the calls that set another mode there
        self.other_modes: dict[int, int] = {}
        self.trains: object = None  # the first backward or step met
        self.found: list[AnomalySite] = []

    def join_state(self, a: object, b: object) -> object:
        assert isinstance(a, frozenset) and isinstance(b, frozenset)
        return a | b

    def forget(self, fn: int) -> None:
        self.switched -= {k for k, s in self.sites.items() if s.fn.index == fn}
        self.sites = {k: s for k, s in self.sites.items() if s.fn.index != fn}
        self.other_modes.pop(fn, None)

    def call(self, run: Run, e: CallEvent) -> None:
        c = e.call
        if e.qual not in lib.SET_DETECT_ANOMALY:
            if self.trains is None and _trains(e):
                self.trains = c.node
            return
        if not _is_true(_mode(c)):
            # `set_detect_anomaly(False)`, or a mode the code decides: what
            # was switched on before may be off from here.
            self.switched |= run.frame.observed.get(self) or frozenset()
            self.other_modes[run.index] = self.other_modes.get(run.index, 0) + 1
            return
        if not e.discarded or is_test_function(run.fn) or not all(_script_guard(g) for g in run.guards):
            return
        self.sites.setdefault(id(c.node), AnomalySite(c.node, run.fn))
        run.frame.observed[self] = (run.frame.observed.get(self) or frozenset()) | {id(c.node)}

    def finish(self, prog: Program) -> None:
        if self.trains is None or is_test_module(prog.file, prog.ir):
            self.found = []
            return
        self.found = [
            AnomalySite(s.node, s.fn, self.trains)
            for k, s in self.sites.items()
            if k not in self.switched and not any(fn != s.fn.index for fn in self.other_modes)
        ]


def _trains(e: CallEvent) -> bool:
    """A backward (``loss.backward()``, ``torch.autograd.grad``,
    ``accelerator.backward(loss)``) or an optimizer's step."""
    return e.resolved.autograd or e.resolved.backward or e.resolved.steps
