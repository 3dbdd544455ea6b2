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
from autograd_lint.analysis.interp import Program, Run
from autograd_lint.analysis.observer import Accumulate, CallEvent, Keep, Observer, Store
from autograd_lint.analysis.steps import called_here
from autograd_lint.analysis.values import CallStep, Container, Graph, ItemStep, ParamRoot, Part, Sym, Value, syms_in

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
    # Where in ``fn`` it runs, when the backward is in a function ``fn``
    # calls (`self.backward(ce, entropy)` in `fit()`'s loop): that call;
    # and the graphs the backwards after it in that function go through.
    at: object = None
    later: set = field(default_factory=set)


# An origin the analysis cannot place: a function's parameter or an
# attribute it reads, that may be attached to a graph made before the loop.
ELSEWHERE = 0


def origins(v: Value, depth: int = 0) -> set[int]:
    """Where the graphs ``v`` is attached to were made: ids of the nodes of
    the model calls and ops (``Graph`` facts; the last ``CallStep`` of a
    symbol: ``model(x)`` of a parameter ``model``), and ``ELSEWHERE`` for a symbol
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
            # The value is the last call's result; the calls before it made
            # what that one is called on (`Net()` of `Net()(x)`): no graph.
            last = calls[-1]
            out.add(id(last.node) if last.node is not None else ELSEWHERE)
            for st in calls:
                for a in (*st.args, st.rest):
                    out |= origins(a, depth + 1)
                for _, a in st.kwargs:
                    out |= origins(a, depth + 1)
    return out


def _root(e: CallEvent) -> Value | None:
    """What a backward call backpropagates from."""
    if e.resolved.autograd:
        return e.args[0] if e.args else None  # torch.autograd.backward(loss), torch.autograd.grad(loss, x)
    if e.resolved.backward:
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
        # Function -> its backward calls, outside any loop of its own, of
        # what it is given (by parameter position), in source order, and
        # whether each keeps its graph: its callers' loops decide them.
        self.param_sites: dict[int, list[tuple[object, frozenset, bool]]] = {}

    def forget(self, fn: int) -> None:
        self.backwards = {k: b for k, b in self.backwards.items() if b.fn != fn}
        self.sites = {k: s for k, s in self.sites.items() if s.fn.index != fn}
        self.param_sites.pop(fn, None)

    def store(self, run: Run, e: Store) -> None:
        self.escaped.append(e.value)

    def accumulate(self, run: Run, e: Accumulate) -> None:
        self.escaped.append(e.value)

    def keep(self, run: Run, e: Keep) -> None:
        self.escaped.append(e.value)

    def returned(self, run: Run, value: Value, sources: frozenset) -> None:
        self.escaped.append(value)

    def call(self, run: Run, e: CallEvent) -> None:
        if run.loops:
            for callee, offset in called_here(run, e):
                backs = [(node, set().union(*(origins(e.args[i - offset]) for i in params if 0 <= i - offset < len(e.args))), keeps)
                         for node, params, keeps in self.param_sites.get(callee, ())]
                for j, (node, keys, keeps) in enumerate(backs):
                    if keeps:
                        site = self._site(run, node, keys, e.call.node)
                        for _, later, _ in backs[j + 1:]:
                            site.later |= later
        root = _root(e)
        if root is None:
            return
        c = e.call
        keys = origins(root)
        b = self.backwards.setdefault(id(c.node), _Backward(run.index))
        b.graphs |= keys
        retain = c.keyword(RETAIN_GRAPH)
        keeps = not e.resolved.autograd and type(retain) is ir.Const and retain.value is True and c.keyword("create_graph") is None
        if not run.loops:
            params = frozenset(f.root.index for f in syms_in(root) if type(f.root) is ParamRoot and f.root.fn == run.index)
            if params and keys <= {ELSEWHERE} and not any(n is c.node for n, _, _ in self.param_sites.get(run.index, ())):
                self.param_sites.setdefault(run.index, []).append((c.node, params, keeps))
            return
        # (A higher-order gradient, `create_graph=True`: the kept graph is the point.)
        if keeps:
            self._site(run, c.node, keys, None)

    def _site(self, run: Run, node: object, keys: set[int], at: object) -> RetainedSite:
        """A `backward(retain_graph=True)` at ``node`` through the graphs
        ``keys``, in the innermost loop of ``run`` (``at``: the call there
        that runs it)."""
        lc = run.loops[-1]
        site = self.sites.setdefault(id(node), RetainedSite(node, run.fn, lc.facts.loop, at=at))
        site.graphs |= keys
        env = run.frame.env
        for loc in lc.carried:
            if not (keys - {ELSEWHERE}).isdisjoint(origins(env.get(loc, frozenset()))):
                site.carried = True
        return site

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
            at = order[fn.index].get(id(site.at if site.at is not None else site.node), -1)
            if not (site.later - {ELSEWHERE}).isdisjoint(site.graphs):
                continue  # a later backward of the function it is in goes through it
            if any(
                k != id(site.node) and not (b.graphs - {ELSEWHERE}).isdisjoint(site.graphs) and (b.fn != fn.index or order[fn.index].get(k, -1) > at)
                for k, b in self.backwards.items()
            ):
                continue  # a later backward goes through the kept graph
            self.found.append(site)
        self.backwards, self.sites, self.escaped, self.param_sites = {}, {}, [], {}


def _layout(fn: ir.Function) -> tuple[dict[int, int], dict[ir.Loop, set[int]]]:
    """The order of the function's expressions (by id of their node, in
    source order), and the expressions of each loop's body."""
    order: dict[int, int] = {}
    loops: dict[ir.Loop, set[int]] = {}
    # (Not every part of a statement has a node: a `with` item does not.)
    for s in ir.statements(fn.body):
        for e in ir.statement_exprs(s):
            node = getattr(e, "node", None)
            if node is not None:
                order.setdefault(id(node), len(order))
        if type(s) is ir.For or type(s) is ir.While:
            loops[s.loop] = {id(e.node) for st in ir.statements(s.body) for e in ir.statement_exprs(st) if getattr(e, "node", None) is not None}
    return order, loops
