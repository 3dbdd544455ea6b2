"""``backward(retain_graph=True)`` where nothing backpropagates through the
kept graph again (AGL105).

``retain_graph=True`` keeps the graph and every activation it saved after
the backward, so that another backward can go through it. On the last
backward of a training iteration nothing does: the graph stays alive until
the names holding it are bound again in the next iteration, a peak-memory
cost every step. It is often added to silence "Trying to backward through
the graph a second time", where the real cause is a graph carried into the
next iteration (AGL104).

An observer of the interpreter. The evidence, all of it needed:

- a ``backward`` call with a literal ``retain_graph=True``, in a loop that
  backpropagates (``LoopFacts.steps``);
- every graph its root is attached to was made in that loop's body, in the
  same function (a graph made before the loop is backpropagated again by
  the next iteration: that is what ``retain_graph=True`` is for);
- no backward (``.backward()``, ``torch.autograd.grad``,
  ``torch.autograd.backward``) that comes after it in the function, nor any
  backward of another function, goes through one of those graphs (the GAN's
  ``d_loss.backward(retain_graph=True); g_loss.backward()`` through the
  shared fake score);
- none of those graphs is kept beyond its statement: put in a container
  or an attribute (``graphs.append(loss)``, ``self.last = out``),
  accumulated (``total += loss``), or returned;
- no value of the previous iteration that the root is attached to was read
  in the iteration before it ran (the interpreter's loop-carried reads:
  ``out, h = rnn(x, h)``, AGL104's case, or ``loss = mse(out, prev_out)``):
  then the next iteration's backward goes through this graph.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from autograd_lint.analysis import ir
from autograd_lint.analysis import torch_api as lib
from autograd_lint.analysis.interp import Program, Run
from autograd_lint.analysis.observer import Accumulate, CallEvent, Keep, Observer, Store
from autograd_lint.analysis.values import CallStep, Container, Graph, ItemStep, Part, Sym, Value

RETAIN_GRAPH = "retain_graph"


@dataclass
class _Backward:
    fn: int
    graphs: set = field(default_factory=set)  # the origins of the graphs it goes through


@dataclass
class RetainedSite:
    """``node``: the backward call that keeps its graph for nothing."""

    node: object
    fn: ir.Function
    loop: ir.Loop
    graphs: set = field(default_factory=set)
    carried: bool = False  # a previous iteration's value feeds its root


# An origin the analysis cannot place: a function's parameter or an
# attribute it reads, that may be attached to a graph made before the loop.
ELSEWHERE = 0


def origins(v: Value, depth: int = 0) -> set[int]:
    """Where the graphs ``v`` is attached to were made: ids of the nodes of
    the model calls and ops (``Graph`` facts; a ``CallStep`` of a symbol:
    ``model(x)`` of a parameter ``model``), and ``ELSEWHERE`` for a symbol
    that may bring a graph of its own from outside the function. A loop
    item or an element of one (``ItemStep``) is data; a backward's proof
    that a value is attached (``Graph(how="backward")``) says nothing of
    where."""
    out: set[int] = set()
    if depth > 4:
        return {ELSEWHERE}
    for f in v:
        t = type(f)
        if t is Graph:
            if f.how != "backward":
                out.add(id(f.node) if f.node is not None else ELSEWHERE)
        elif t is Container:
            out |= origins(f.elem, depth + 1)
            for _, x in f.items:
                out |= origins(x, depth + 1)
        elif t is Part:
            out |= origins(f.value, depth + 1)
        elif t is Sym:
            calls = [st for st in f.path if type(st) is CallStep]
            if not calls:
                if not any(type(st) is ItemStep for st in f.path):
                    out.add(ELSEWHERE)
                continue
            for st in calls:
                out.add(id(st.node) if st.node is not None else ELSEWHERE)
                for a in (*st.args, st.rest):
                    out |= origins(a, depth + 1)
                for _, a in st.kwargs:
                    out |= origins(a, depth + 1)
    return out


def _root(e: CallEvent) -> Value | None:
    """What a backward call backpropagates from."""
    if e.qual in lib.BACKWARD_FUNCTIONS:
        return e.args[0] if e.args else None  # torch.autograd.backward(loss), torch.autograd.grad(loss, x)
    if e.method in lib.BACKWARD_METHODS:
        if e.qual is None and e.receiver is not None and origins(e.receiver):
            return e.receiver  # loss.backward()
        return e.args[0] if e.args else None  # accelerator.backward(loss)
    return None


class RetainedGraphs(Observer):
    def __init__(self) -> None:
        self.backwards: dict[int, _Backward] = {}  # id(call node) -> every backward met
        self.sites: dict[int, RetainedSite] = {}
        # Values kept beyond the statement that holds them: put in a
        # container or an attribute, accumulated, returned (a caller, or a
        # later step, may backpropagate through their graphs). Their
        # origins are worked out only if a site needs them.
        self.escaped: list[Value] = []
        self.found: list[RetainedSite] = []

    def forget(self, fn: int) -> None:
        self.backwards = {k: b for k, b in self.backwards.items() if b.fn != fn}
        self.sites = {k: s for k, s in self.sites.items() if s.fn.index != fn}

    def store(self, run: Run, e: Store) -> None:
        self.escaped.append(e.value)

    def accumulate(self, run: Run, e: Accumulate) -> None:
        self.escaped.append(e.value)

    def keep(self, run: Run, e: Keep) -> None:
        self.escaped.append(e.value)

    def returned(self, run: Run, value: Value, sources: frozenset) -> None:
        self.escaped.append(value)

    def call(self, run: Run, e: CallEvent) -> None:
        root = _root(e)
        if root is None:
            return
        c = e.call
        keys = origins(root)
        b = self.backwards.setdefault(id(c.node), _Backward(run.index))
        b.graphs |= keys
        retain = c.keyword(RETAIN_GRAPH)
        if not run.loops or e.qual in lib.BACKWARD_FUNCTIONS or type(retain) is not ir.Const or retain.value is not True:
            return
        if c.keyword("create_graph") is not None:
            return  # a higher-order gradient: the kept graph is the point
        lc = run.loops[-1]
        site = self.sites.setdefault(id(c.node), RetainedSite(c.node, run.fn, lc.facts.loop))
        site.graphs |= keys
        env = run.frame.env
        for loc in lc.carried:
            if not (keys - {ELSEWHERE}).isdisjoint(origins(env.get(loc, frozenset()))):
                site.carried = True

    def finish(self, prog: Program) -> None:
        self.found = []
        escaped: set[int] | None = None
        order: dict[int, dict[int, int]] = {}
        bodies: dict[int, dict[ir.Loop, set[int]]] = {}
        for site in self.sites.values():
            lf = prog.loop_facts.get(site.loop)
            if site.carried or lf is None or not lf.steps or not site.graphs:
                continue
            if escaped is None:
                escaped = set().union(*(origins(v) for v in self.escaped))
            if not site.graphs.isdisjoint(escaped):
                continue  # kept beyond its statement: a caller or a later step may go through it
            fn = site.fn
            if fn.index not in order:
                order[fn.index], bodies[fn.index] = _layout(fn)
            made_here = bodies[fn.index].get(site.loop, set())
            if not site.graphs <= made_here:
                continue  # a graph made before the loop: the next iteration goes through it again
            at = order[fn.index].get(id(site.node), -1)
            if any(
                k != id(site.node) and not (b.graphs - {ELSEWHERE}).isdisjoint(site.graphs) and (b.fn != fn.index or order[fn.index].get(k, -1) > at)
                for k, b in self.backwards.items()
            ):
                continue  # a later backward goes through the kept graph
            self.found.append(site)
        self.backwards, self.sites, self.escaped = {}, {}, []


def _layout(fn: ir.Function) -> tuple[dict[int, int], dict[ir.Loop, set[int]]]:
    """The order of the function's expressions (by id of their node, in
    source order), and the expressions of each loop's body."""
    order: dict[int, int] = {}
    loops: dict[ir.Loop, set[int]] = {}
    for s in ir.statements(fn.body):
        for e in ir.statement_exprs(s):
            order.setdefault(id(e.node), len(order))
        if type(s) is ir.For or type(s) is ir.While:
            loops[s.loop] = {id(e.node) for st in ir.statements(s.body) for e in ir.statement_exprs(st)}
    return order, loops
