"""Recurrent state carried, still attached, into the next iteration of a
training loop (AGL104).

An observer of the interpreter. The interpreter runs a loop body until what
it reads before binding settles, so the second pass sees what the first one
left. The evidence, all of it needed:

- a name is bound in the loop to a value attached to a graph made there
  (a module call's output, an op on one; not an op on parameters only);
- a later pass calls something with that name read *before* the pass bound
  it again (the value of the previous iteration: no `.detach()`, no
  re-initialisation in between), with grad on, and the call's result is
  attached to a graph that the name is bound to again (the recurrence:
  ``out, hidden = rnn(x, hidden)``; a helper that detaches returns nothing
  attached, so it is no such call);
- the loop backpropagates (``LoopFacts.steps``, as for AGL101/102), and the
  name's binding reaches a backward (the flow graph): each backward then
  runs into the graph of the iteration before.

The graph of iteration i is then either freed by iteration i's backward
(iteration i+1 raises "backward through the graph a second time") or kept
by ``retain_graph=True`` (every graph since the first stays alive and every
backward walks all of them).
"""

from __future__ import annotations

from dataclasses import dataclass

from autograd_lint.analysis.interp import Program, Run
from autograd_lint.analysis.observer import CallEvent, Observer
from autograd_lint.analysis.state import BACKWARD, Loc, base_loc
from autograd_lint.analysis.values import Container, GradMode, Graph, Value, graphs_of


@dataclass
class CarriedFinding:
    node: object  # the call that takes the previous iteration's state
    names: tuple[str, ...]  # the carried variables (the rule orders them as the call reads them)
    loop: object  # the ir.Loop carrying them
    grouped: tuple[str, ...] = ()  # those that hold a tuple or list of states (an LSTM's `(h, c)`)


def _graphs(v: Value) -> set[Graph]:
    # A step's graph: made by a module call or an op on an attached value,
    # not bookkeeping on parameters alone (`how == "leaf"`), nor a proof.
    return {g for g in graphs_of(v) if g.how in ("call", "op") and g.node is not None}


class Carried(Observer):
    def __init__(self) -> None:
        # (loop, location) -> the graphs bound to it in that loop, and the
        # flow nodes of those bindings.
        self.made: dict[tuple, set[Graph]] = {}
        self.defs: dict[tuple, set] = {}
        # (loop, location) -> (the call node, the graphs it returned, the function index)
        self.reads: dict[tuple, list[tuple[object, set[Graph], int]]] = {}
        self.names: dict[Loc, str] = {}
        self.grouped: set[Loc] = set()  # carried locations holding a tuple or list (no `.detach()` of their own)
        # (loop, location, function): cut off its graph in place somewhere in
        # the loop (`h.detach_()`): before the next iteration reads it, or
        # before this one does.
        self.cut: set[tuple] = set()
        self.found: list[CarriedFinding] = []

    def forget(self, fn: int) -> None:
        self.made = {k: v for k, v in self.made.items() if k[2] != fn}
        self.defs = {k: v for k, v in self.defs.items() if k[2] != fn}
        self.reads = {k: v for k, v in self.reads.items() if k[2] != fn}
        self.cut = {k for k in self.cut if k[2] != fn}

    def bind(self, run: Run, loc: Loc, value: Value, sources: frozenset, alias: bool) -> None:
        loops = run.loops
        if not loops:
            return
        gs = _graphs(value)
        if not gs:
            return
        defs = run.frame.defs.get(loc) or frozenset({loc})
        for lc in loops:
            key = (lc.facts.loop, loc, run.index)
            self.made.setdefault(key, set()).update(gs)
            self.defs.setdefault(key, set()).update(defs)

    def call(self, run: Run, e: CallEvent) -> None:
        loops = run.loops
        if not loops:
            return
        if (row := e.resolved.tensor) is not None and row.detaches:
            for s in e.sources - e.arg_sources:
                for lc in loops:
                    self.cut.add((lc.facts.loop, base_loc(s), run.index))
            return
        if e.at.grad is GradMode.OFF or not e.arg_sources:
            return
        out = _graphs(e.outcome.value)
        if not out:
            return  # nothing attached comes out (`repackage_hidden(h)`, `h.detach()`)
        env = run.frame.env
        for lc in loops:
            for s in e.arg_sources:
                loc = base_loc(s)
                if loc in lc.written:
                    continue  # bound earlier in this iteration: not the previous one's
                key = (lc.facts.loop, loc, run.index)
                made = self.made.get(key)
                if not made or made.isdisjoint(graphs_of(env.get(loc, frozenset()))):
                    continue
                self.reads.setdefault(key, []).append((e.call.node, out, run.index))
                name = getattr(loc, "name", None)
                if isinstance(name, str):
                    self.names[loc] = name
                if any(type(f) is Container for f in env.get(loc, frozenset())):
                    self.grouped.add(loc)

    def finish(self, prog: Program) -> None:
        by_call: dict[int, CarriedFinding] = {}
        for key, reads in self.reads.items():
            loop, loc, _fn = key
            lf = prog.loop_facts.get(loop)
            if lf is None or not lf.steps:
                continue  # no backward in the loop: evaluation, or one backward after it
            if key in self.cut:
                continue
            made = self.made.get(key, set())
            # The recurrence: what the call returns is bound to the name again.
            node = next((n for n, out, _ in reads if not out.isdisjoint(made)), None)
            if node is None:
                continue
            if BACKWARD not in prog.reaches(self.defs.get(key, set()), {BACKWARD}):
                continue  # the state never reaches a backward: nothing runs into the old graph
            name = self.names.get(loc)
            if name is None:
                continue
            f = by_call.get(id(node))
            if f is None:
                f = by_call[id(node)] = CarriedFinding(node, (), loop)
            if name not in f.names:
                f.names = f.names + (name,)
            if loc in self.grouped and name not in f.grouped:
                f.grouped = f.grouped + (name,)
        self.found = list(by_call.values())
