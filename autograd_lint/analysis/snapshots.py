"""A ``state_dict()`` kept as a snapshot across optimizer steps (AGL206).

``model.state_dict()`` returns the module's parameter tensors themselves
(detached, sharing storage), not copies; ``.copy()``, ``dict(...)`` and
``OrderedDict(...)`` copy the mapping, not the tensors. ``opt.step()``
updates the parameters in place, so a "best" snapshot taken before a step
and loaded, saved or returned after it holds the weights of the last step:
the tutorial shape ``best = model.state_dict()`` in the epoch loop, then
``model.load_state_dict(best)``.

An observer of the calls. That a value is such a snapshot comes from the
values: the API row of ``state_dict`` makes its elements ``ParamStorage``
(kept by shallow copies, lost by a clone or a deep copy). The frame state
(joined at branches and around loops) holds the snapshots taken on the
path, and the steps run since each was taken; a new ``state_dict()`` at
the same call makes that snapshot fresh again. A load (``load_state_dict``),
a save (``torch.save``) or a return of a snapshot with a step since is a
candidate; it is a finding once every function has run and the stepped
optimizer is known to update that module (the optimizers' modules are
AGL205's, from steps.py). A step of an optimizer whose parameters are not
seen, or a step in a function called: unknown, no finding.
"""

from __future__ import annotations

from dataclasses import dataclass

from autograd_lint.analysis import ir
from autograd_lint.analysis import torch_api as lib
from autograd_lint.analysis.api import SCALER
from autograd_lint.analysis.observer import CallEvent, Observer, Program, Run
from autograd_lint.analysis.resolve import Condition
from autograd_lint.analysis.state import Loc
from autograd_lint.analysis.steps import Steps, called_here, updates_module, within
from autograd_lint.analysis.values import Container, OptimizerKind, ParamStorage, Part, Value


@dataclass(frozen=True, slots=True)
class _Stepped:
    """``step`` (of ``optimizers``: the ids of the calls that made them) ran
    after the snapshot taken at ``snapshot``."""

    snapshot: object
    step: object
    optimizers: frozenset


@dataclass(frozen=True, slots=True)
class _State:
    taken: frozenset  # of state_dict() call nodes
    stepped: frozenset  # of _Stepped


_EMPTY = _State(frozenset(), frozenset())


@dataclass(frozen=True, slots=True)
class SnapshotFinding:
    """AGL206: the snapshot taken at ``node`` (the ``state_dict()`` call)
    is read by ``use`` (a call; None: returned) after ``step`` changed the
    parameters it holds."""

    node: object
    step: object
    use: object
    how: str  # "loaded", "saved", "returned"
    conditions: tuple[Condition, ...] = ()


@dataclass(frozen=True, slots=True)
class _Candidate:
    fn: int
    stepped: _Stepped
    use: object
    how: str
    conditions: tuple[Condition, ...]


def snapshots_in(v: Value | None, depth: int = 0) -> frozenset:
    """The ``state_dict()`` calls whose tensors ``v`` holds, in containers
    nested in it (``torch.save({"model": best, ...})``)."""
    out: set = set()
    if depth > 3:
        return frozenset()
    for f in v or ():
        t = type(f)
        if t is Container:
            for x in (f.elem, *(x for _, x in f.items)):
                out.update(g.node for g in x if type(g) is ParamStorage and g.node is not None)
                out.update(snapshots_in(x, depth + 1))
        elif t is Part:
            out.update(snapshots_in(f.value, depth + 1))
    return frozenset(out)


class Snapshots(Observer):
    """AGL206: a snapshot read after a step that changed it."""

    def __init__(self, steps: Steps) -> None:
        self.steps = steps  # which optimizer updates which module: AGL205's
        self.modules: dict[int, Loc] = {}  # id(state_dict() node) -> the module's location
        self.nodes: dict[int, object] = {}
        self.candidates: list[_Candidate] = []
        self.found: list[SnapshotFinding] = []

    def join_state(self, a: object, b: object) -> object:
        assert isinstance(a, _State) and isinstance(b, _State)
        return _State(a.taken | b.taken, a.stepped | b.stepped)

    def forget(self, fn: int) -> None:
        self.candidates = [c for c in self.candidates if c.fn != fn]

    def call(self, run: Run, e: CallEvent) -> None:
        rc = e.resolved
        c = e.call
        if e.method is not None and any(type(f) is ParamStorage and f.node is c.node for f in _elements(e.outcome.value)):
            self._take(run, c)
            return
        state = run.frame.observed.get(self)
        if state is None or not state.taken:
            return
        for callee, offset in called_here(run, e):
            # A function of this module that steps (`train_one_epoch(...)`,
            # `self.step()`), after its forwards and backwards.
            opts, step = self.steps.callee_steps(e, callee, offset)
            if opts:
                state = _State(state.taken, state.stepped | {_Stepped(s, step, opts) for s in state.taken})
                run.frame.observed[self] = state
        if rc.steps:
            # `opt.step()`, or `scaler.step(opt)`, which steps `opt`.
            stepped = e.receiver if rc.row(SCALER) is None else (e.args[0] if e.args else None)
            opts = frozenset(id(f.node) for f in stepped or () if type(f) is OptimizerKind and f.node is not None)
            if opts:
                run.frame.observed[self] = _State(state.taken, state.stepped | {_Stepped(s, c.node, opts) for s in state.taken})
            return
        if rc.restores and e.args:
            self._use(run, state, e.args[0], c.node, "loaded", e)
        elif e.qual in lib.SERIALIZERS and e.args:
            self._use(run, state, e.args[0], c.node, "saved", e)

    def returned(self, run: Run, value: Value, sources: frozenset) -> None:
        state = run.frame.observed.get(self)
        if state is not None and state.stepped:
            self._use(run, state, value, None, "returned", None)

    def _take(self, run: Run, c: ir.Call) -> None:
        """A ``state_dict()`` call: its snapshot is fresh on this path."""
        target = c.func.value  # type: ignore[attr-defined]
        loc = run.root_loc(target) if type(target) in (ir.Name, ir.Attr) else None
        if loc is None:
            return
        key = id(c.node)
        self.modules[key] = loc
        self.nodes[key] = c.node
        state = run.frame.observed.get(self) or _EMPTY
        # A fresh snapshot of the module (or of a part of it, or of what
        # holds it: `net.module.state_dict()` in one branch, `net.state_dict()`
        # in the other) replaces what an earlier one of it was stepped past.
        def fresh(s: _Stepped) -> bool:
            m = self.modules.get(id(s.snapshot))
            return s.snapshot is c.node or (m is not None and (within(m, loc) or within(loc, m)))

        run.frame.observed[self] = _State(state.taken | {c.node}, frozenset(s for s in state.stepped if not fresh(s)))

    def _use(self, run: Run, state: _State, value: Value, use: object, how: str, e: CallEvent | None) -> None:
        held = snapshots_in(value)
        if not held:
            return
        conds = tuple(run.prog.conditions_at(e.at)) if e is not None else ()
        for s in state.stepped:
            if s.snapshot in held:
                self.candidates.append(_Candidate(run.index, s, use, how, conds))

    def finish(self, prog: Program) -> None:
        by_snapshot: dict[int, SnapshotFinding] = {}
        for c in self.candidates:
            s = c.stepped
            module = self.modules.get(id(s.snapshot))
            if module is None:
                continue
            updated = frozenset().union(*(self.steps.updates.get(o, frozenset()) for o in s.optimizers))
            if not updates_module(prog, updated, module):
                continue
            if id(s.snapshot) not in by_snapshot:
                by_snapshot[id(s.snapshot)] = SnapshotFinding(s.snapshot, s.step, c.use, c.how, c.conditions)
        self.found = list(by_snapshot.values())


def _elements(v: Value) -> Value:
    """The elements of the dicts ``v`` may be."""
    out: set = set()
    for f in v:
        if type(f) is Container:
            out.update(f.all_values())
    return frozenset(out)
