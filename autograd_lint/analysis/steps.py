"""An optimizer step between a forward and a later backward of its graph
(AGL205).

``opt.step()`` updates its parameters in place. A graph built before the
step through a module whose parameters it updates saved those parameters
(every layer after the first saves its weight; the first does when its
input requires grad), so a later ``backward()`` of that graph fails with
"modified by an inplace operation". The GAN shape: ``d_loss.backward(
retain_graph=True); opt_D.step(); g_loss.backward()`` where ``g_loss`` went
through ``D`` before the step; or two losses of one forward, stepped
between their backwards.

An observer of the interpreter. The frame state (joined at branches, so a
step on one branch and a backward on the other are apart) keeps the module
calls whose graph may still be backpropagated and the steps that came
after them. Module calls are known by the graph origins a value carries
(``Graph(how="call")``); which modules an optimizer updates is read from
the call that made it (``Adam(D.parameters())``) and decided once every
function has run, so an optimizer made in ``__init__`` counts in
``train_step``.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from autograd_lint.analysis import ir
from autograd_lint.analysis import torch_api as api
from autograd_lint.analysis.canonical import in_order
from autograd_lint.analysis.observer import CallEvent, Observer, Program, Run
from autograd_lint.analysis.resolve import Condition
from autograd_lint.analysis.state import AttrOf, Loc, base_loc
from autograd_lint.analysis.api import SCALER
from autograd_lint.analysis.outcome import CalledFunction
from autograd_lint.analysis.paths import is_static
from autograd_lint.analysis.values import CallStep, GradMode, Instance, Module, OptimizerKind, ParamRoot, Sym, Value, attached, graphs_of, syms_in


@dataclass(frozen=True, slots=True)
class _Forward:
    """A module call whose graph saved the module's parameters; ``carried``:
    the loops in which the call takes in what it returned the iteration
    before (``out, hidden = rnn(x, hidden)``)."""

    call: object  # the call's LibCST node
    module: Loc | None  # None: a call of what this module does not show (an imported model, a parameter)
    carried: frozenset = frozenset()


@dataclass(frozen=True, slots=True)
class _Stepped:
    """``forward``'s graph is still pending when ``step`` runs one of
    ``optimizers`` (the ids of the calls that made them)."""

    forward: _Forward
    step: object
    optimizers: frozenset
    # The forwards a ``retain_graph=True`` backward just before the step
    # went through (its optimizer's gradients came from there): where the
    # optimizer's parameters are not shown, they are these forwards'.
    retained: frozenset = frozenset()


@dataclass(frozen=True, slots=True)
class _Pending:
    live: frozenset  # of _Forward
    stepped: frozenset  # of _Stepped
    retained: frozenset = frozenset()  # of _Forward: those the last `retain_graph=True` backward went through
    # (step node, optimizers) of the steps run so far, forwards or not: a
    # backward after them of a graph made before this function ran (kept in
    # `self` by another method) is a hazard its callers decide.
    steps: frozenset = frozenset()


_NONE = _Pending(frozenset(), frozenset())


@dataclass(frozen=True, slots=True)
class StepFinding:
    node: object  # the step() call
    forward: object  # the module call whose graph saved the parameters it updates
    backward: object  # the backward that then fails
    conditions: tuple[Condition, ...] = ()
    next_iteration: bool = False  # the backward fails in the next iteration, through the carried graph


@dataclass(frozen=True, slots=True)
class _Candidate:
    fn: int
    stepped: _Stepped
    backward: object
    conditions: tuple[Condition, ...]
    next_iteration: bool = False
    reached: frozenset = frozenset()  # ids of the forward calls the backward goes through


def within(a: Loc, b: Loc) -> bool:
    """``a`` is ``b`` or an attribute path below it (``model.disc`` in ``model``)."""
    while True:
        if a == b:
            return True
        if type(a) is not AttrOf:
            return False
        a = a.base  # type: ignore[assignment]


def updates_module(prog: Program, modules: frozenset, module: Loc) -> bool:
    """An optimizer over the parameters of ``modules`` (where its making
    call reads them) updates ``module``: the same location or one below
    it, or what a call here hands it as a parameter (the model `main()`
    builds and passes to `train_one_epoch`)."""
    return any(within(a, module) or within(module, a) for m in modules for a in prog.aliases(m))


def _saves_weights(run: Run, callee: Value, args: tuple[Value, ...]) -> bool:
    """Calling this module saves its parameters for backward: a model or
    block of several layers always does (a later layer's input requires
    grad); a single torch layer only when its input requires grad (a
    ``Linear`` on data saves the data, not its weight)."""
    for f in callee:
        t = type(f)
        if t is Module and f.parametric and not f.frozen:
            if f.qual is None or f.qual in api.MODULE_CONTAINERS or any(attached(a) for a in args):
                return True
        elif t is Instance and run.prog.lookup.is_module_class(f.cls):
            return True
    return False


def _params_of(run: Run, c: ir.Call) -> frozenset:
    """The modules ``X`` whose ``X.parameters()`` an optimizer is made of,
    wherever they sit in its arguments (``[{"params": X.parameters()}]``,
    ``chain(A.parameters(), B.parameters())``)."""
    out = set()
    for a in c.args:
        for e in ir.walk_expr(a.value):
            if type(e) is ir.Call and type(e.func) is ir.Attr and e.func.attr in ("parameters", "named_parameters"):
                loc = module_loc(run, e.func.value)  # type: ignore[attr-defined]
                if loc is not None:
                    out.add(loc)
    return frozenset(out)


def module_loc(run: Run, e: ir.Expr) -> Loc | None:
    """Where the module ``e`` is held: a name or attribute path, or the
    container an element is taken from by a variable index
    (``self.q_nets[i]``: one of the ensemble's members, each with its
    optimizer in ``self.q_opts[i]``). A constant index (``nets[0]``,
    ``nets["D"]``) names one member apart from the others: not the
    container."""
    while type(e) is ir.Subscript:
        key = e.key
        if key is None or type(key) is ir.Const:
            return None
        e = e.value
    return run.root_loc(e) if type(e) in (ir.Name, ir.Attr) else None


def called_here(run: Run, e: CallEvent) -> list[tuple[int, int]]:
    """The functions of this module the call runs, each with the offset of
    its parameters in the call's arguments (1 for a bound method: `self`)."""
    prog = run.prog
    out = []
    for x in e.outcome.effects:
        if type(x) is CalledFunction and x.ref.file == prog.file:
            fn = prog.fn_by_qualname.get(x.ref.qualname)
            if fn is not None and fn.index != run.index:
                out.append((fn.index, 1 if e.method is not None and fn.cls is not None and not is_static(fn) else 0))
    return out


def _own_params(run: Run, v: Value | None) -> frozenset:
    """The parameters of the running function ``v`` is (or is computed
    from: `loss * w` of a parameter `loss`), by position."""
    return frozenset(f.root.index for f in syms_in(v or frozenset()) if type(f.root) is ParamRoot and f.root.fn == run.index)


def _carried_loops(run: Run, e: CallEvent, call: object) -> frozenset:
    """The loops around this call in which an argument is the call's own
    output of an earlier iteration: read before this iteration bound it,
    and attached to the graph this call made."""
    out = set()
    env = run.frame.env
    for lc in run.loops:
        for s in e.arg_sources:
            loc = base_loc(s)
            if loc not in lc.written and any(g.how == "call" and g.node is call for g in graphs_of(env.get(loc, frozenset()))):
                out.add(lc.facts.loop)
                break
    return frozenset(out)


def _unknown_callee(callee: Value) -> bool:
    """What is called is not shown here: symbols only (a parameter, an
    import, an attribute of one), nothing known."""
    return bool(callee) and all(type(f) is Sym for f in callee)


def _calls_within(v: Value, depth: int = 0) -> set[int]:
    """The calls whose graph ``v`` holds: graph origins rooted at a call,
    and the calls of what is not shown that a symbolic value went through
    (``model(x)[0]`` of a parameter ``model``), also in what those were
    given."""
    out = {id(g.node) for g in graphs_of(v) if g.how == "call" and g.node is not None}
    if depth < 3:
        for s in syms_in(v):
            for st in s.path:
                if type(st) is CallStep:
                    if st.node is not None:
                        out.add(id(st.node))
                    for a in st.args:
                        out |= _calls_within(a, depth + 1)
                    for _, a in st.kwargs:
                        out |= _calls_within(a, depth + 1)
    return out


def _retained_through(s: _Stepped, reached: frozenset) -> bool:
    """Which parameters the step updates is not shown (an optimizer made
    of a list built elsewhere, or given as a parameter, or a module not
    shown): the step came right after a ``retain_graph=True`` backward, so
    its gradients, and its parameters, are those of the forwards that
    backward went through; the later backward goes through every one of
    them again (whichever the optimizer updates, a graph it saved is
    used)."""
    return bool(s.retained) and s.forward in s.retained and all(id(f.call) in reached for f in s.retained)


class Steps(Observer):
    """AGL205: a step between a forward and a later backward through it."""

    def __init__(self) -> None:
        self.updates: dict[int, frozenset] = {}  # id(optimizer's making call) -> module locations
        self.candidates: list[_Candidate] = []
        # What this module's functions do that their callers see (a forward
        # returned, a backward of an argument, a step): their runs come
        # first. id(forward call) -> the module it ran; function -> the
        # optimizers it steps (ids of their making calls) and the
        # parameters holding optimizers it steps; function -> the
        # parameters it backpropagates, and whether that frees the graph.
        self.forward_module: dict[int, Loc] = {}
        self.fn_steps: dict[int, frozenset] = {}
        self.fn_step_params: dict[int, frozenset] = {}
        self.fn_step_node: dict[int, object] = {}  # the (first) step call it makes: where a finding points
        # id(step call) -> the loop over an ensemble's members it steps one
        # of (`self.opts[i].step()` in `for i in ...`): a backward later in
        # that loop is of another member's graph.
        self.member_steps: dict[int, object] = {}
        self.fn_forwards: dict[int, frozenset] = {}  # function -> the modules whose forward's graph it returns
        # function -> the forwards still pending when it ends (their graph
        # kept in `self` for another method); the graphs of forwards it did
        # not make that it backpropagates (id(forward call) -> backward);
        # those it backpropagates after a step of its own, or of a callee's
        # (id(forward call), step, optimizers, backward).
        self.fn_kept: dict[int, frozenset] = {}
        self.fn_back_calls: dict[int, dict[int, object]] = {}
        self.fn_hazards: dict[int, set] = {}
        self.fn_backwards: dict[int, dict[int, bool]] = {}
        # (function, id(forward call)) -> the first backward through its graph
        self.backwards: dict[tuple[int, int], object] = {}
        self.order: dict[int, int] = {}
        # function -> receivers not shown to be anything (a parameter, a
        # base class's `self.optimizer["D"]`) it called `zero_grad()` on:
        # one of them stepped after is an optimizer.
        self.zeroed: dict[int, set] = {}
        self.found: list[StepFinding] = []

    def join_state(self, a: object, b: object) -> object:
        assert isinstance(a, _Pending) and isinstance(b, _Pending)
        return _Pending(a.live | b.live, a.stepped | b.stepped, a.retained | b.retained, a.steps | b.steps)

    def end(self, run: Run) -> None:
        # A method's forwards still pending at its end: their graphs may be
        # kept in `self` for the methods its callers run next.
        state = run.frame.observed.get(self)
        if run.fn.cls is not None and state is not None and state.live:
            self.fn_kept[run.index] = self.fn_kept.get(run.index, frozenset()) | state.live

    def forget(self, fn: int) -> None:
        self.candidates = [c for c in self.candidates if c.fn != fn]
        self.zeroed.pop(fn, None)
        self.backwards = {k: v for k, v in self.backwards.items() if k[0] != fn}

    def call(self, run: Run, e: CallEvent) -> None:
        rc = e.resolved
        c = e.call
        for callee, offset in called_here(run, e):
            self._callee_effects(run, e, callee, offset)
        if any(type(f) is OptimizerKind for f in e.outcome.value):
            # `torch.optim.Adam(D.parameters())` (a method of `torch.optim`).
            self.updates[id(c.node)] = self.updates.get(id(c.node), frozenset()) | _params_of(run, c)
            return
        retain = c.keyword("retain_graph") or c.keyword("create_graph")
        frees = retain is None or (type(retain) is ir.Const and retain.value is False)
        if rc.autograd:
            # `torch.autograd.backward(loss)`, `torch.autograd.grad(loss, x)`.
            if e.args:
                self._backward(run, e, e.args[0], frees)
            return
        if rc.backward:
            if rc.qual is None and e.receiver is not None:
                self._backward(run, e, e.receiver, frees)
            return
        if rc.zeroes_grad and e.receiver is not None and _unknown_callee(e.receiver):
            self.zeroed.setdefault(run.index, set()).add(e.receiver)
            return
        if e.receiver is not None and e.receiver in self.zeroed.get(run.index, ()) and rc.may_step:
            # Zeroed, then stepped: the optimizer idiom, whose parameters
            # are not shown (``finish`` asks a retained backward before it).
            self._step(run, e, frozenset({("unknown", id(c.node))}), c.node)
            return
        if rc.steps:
            # `opt.step()`, or `scaler.step(opt)`, which steps `opt`.
            stepped = e.args[0] if rc.row(SCALER) is not None and e.args else e.receiver
            opts = frozenset(id(f.node) for f in stepped or () if type(f) is OptimizerKind and f.node is not None)
            self.fn_steps[run.index] = self.fn_steps.get(run.index, frozenset()) | opts
            self.fn_step_params[run.index] = self.fn_step_params.get(run.index, frozenset()) | _own_params(run, stepped)
            self.fn_step_node.setdefault(run.index, c.node)
            recv = c.func.value if type(c.func) is ir.Attr else None  # type: ignore[attr-defined]
            if type(recv) is ir.Subscript and e.at.loops and module_loc(run, recv) is not None:
                self.member_steps[id(c.node)] = e.at.loops[-1]
            self._step(run, e, opts, c.node)
            return
        if e.method is not None and not rc.forward:
            return
        if e.at.grad is GradMode.OFF:
            return
        if not _saves_weights(run, e.callee, e.args):
            # A call of what this module does not show (a parameter, an
            # imported model, `self.models["disc"]`) that gives a graph: a
            # forward whose module is unknown. Only a backward kept with
            # `retain_graph=True` just before a step tells what the step
            # updates there (``finish``).
            if _unknown_callee(e.callee):
                self._forward(run, _Forward(c.node, None))
            return
        target = c.func if e.method is None else c.func.value  # type: ignore[attr-defined]
        loc = module_loc(run, target)
        if loc is not None:
            self.forward_module[id(c.node)] = loc
        self._forward(run, _Forward(c.node, loc, _carried_loops(run, e, c.node) if loc is not None else frozenset()))

    def returned(self, run: Run, value: Value, sources: frozenset) -> None:
        state = run.frame.observed.get(self)
        unknown = {id(f.call) for f in state.live if f.module is None} if state is not None else set()
        locs: set[Loc | None] = {self.forward_module[id(g.node)] for g in graphs_of(value) if g.how == "call" and id(g.node) in self.forward_module}
        if any(g.how == "call" and id(g.node) in unknown for g in graphs_of(value)):
            locs.add(None)
        if locs:
            self.fn_forwards[run.index] = self.fn_forwards.get(run.index, frozenset()) | locs

    def _forward(self, run: Run, fwd: _Forward) -> None:
        state = run.frame.observed.get(self) or _NONE
        self._first_seen(fwd.call)
        # A new forward through the same call: its graph is this one.
        run.frame.observed[self] = replace(
            state,
            live=frozenset(f for f in state.live if f.call is not fwd.call) | {fwd},
            stepped=frozenset(s for s in state.stepped if s.forward.call is not fwd.call),
            retained=frozenset(f for f in state.retained if f.call is not fwd.call),
        )

    def _step(self, run: Run, e: CallEvent, opts: frozenset, node: object) -> None:
        """``opts`` step at ``node`` (this call, or the step a function it
        calls makes)."""
        state = run.frame.observed.get(self) or _NONE
        if not opts:
            return
        self._first_seen(node)
        run.frame.observed[self] = replace(
            state, stepped=state.stepped | {_Stepped(f, node, opts, state.retained) for f in state.live}, steps=state.steps | {(node, opts)}
        )
        self._step_into_next_iteration(run, e, state, opts, node)

    def _callee_effects(self, run: Run, e: CallEvent, callee: int, offset: int) -> None:
        """A call of one of this module's functions (`self.forward_pass(x)`,
        `self.backward(loss)`, `self.step()`, `train_one_epoch(model, loader,
        optimizer)`): what it does, in the order a training step does it:
        the forwards it returns, the backwards of what it is given, its
        steps."""
        # (The graph a function's summary returns is rooted at this call.)
        for loc in sorted(self.fn_forwards.get(callee, ()), key=repr):
            self._forward(run, _Forward(e.call.node, loc))
        # The graphs it leaves pending (kept in `self`: `self.fake =
        # self.netG(z)` in `forward()`), at its own calls.
        for f in in_order(self.fn_kept.get(callee, ()), key=lambda f: run.prog.node_order(f.call)):
            self._forward(run, f)
        self._entry_backwards(run, e, callee)
        for i, frees in sorted(self.fn_backwards.get(callee, {}).items()):
            if 0 <= i - offset < len(e.args):
                self._backward(run, e, e.args[i - offset], frees)
        opts, node = self.callee_steps(e, callee, offset)
        # (What it steps of what it is given, this function steps of what
        # it is given in turn: `fit(model, opt)` handing `opt` to
        # `train_step`.)
        passed = frozenset().union(*(_own_params(run, e.args[i - offset]) for i in self.fn_step_params.get(callee, ()) if 0 <= i - offset < len(e.args)))
        if passed:
            self.fn_step_params[run.index] = self.fn_step_params.get(run.index, frozenset()) | passed
            self.fn_step_node.setdefault(run.index, node)
        if opts:
            self._step(run, e, opts, node)

    def _entry_backwards(self, run: Run, e: CallEvent, callee: int) -> None:
        """The backwards the callee makes of graphs it did not make: of a
        forward pending here and stepped since, a hazard; after a step of
        the callee's own, a hazard where the forward is pending here.
        Passed on to this function's callers where the forward is not
        pending here either."""
        state = run.frame.observed.get(self) or _NONE
        live = {id(f.call): f for f in state.live}
        conds = tuple(run.prog.conditions_at(e.at))
        order = run.prog.node_order
        for i, back in in_order(self.fn_back_calls.get(callee, {}).items(), key=lambda kv: (self.order.get(kv[0], 0), order(kv[1]))):
            if i in live:
                for s in state.stepped:
                    if id(s.forward.call) == i:
                        self.candidates.append(_Candidate(run.index, s, back, conds, reached=frozenset({i})))
            else:
                self.fn_back_calls.setdefault(run.index, {}).setdefault(i, back)
                self.fn_hazards.setdefault(run.index, set()).update((i, node, opts, back) for node, opts in state.steps)
        for i, node, opts, back in in_order(self.fn_hazards.get(callee, ()), key=lambda h: (self.order.get(h[0], 0), order(h[1]), order(h[3]))):
            f = live.get(i)
            if f is not None:
                self.candidates.append(_Candidate(run.index, _Stepped(f, node, opts), back, conds, reached=frozenset({i})))
            else:
                self.fn_hazards.setdefault(run.index, set()).add((i, node, opts, back))

    def callee_steps(self, e: CallEvent, callee: int, offset: int) -> tuple[frozenset, object]:
        """The optimizers the call of function ``callee`` steps (those it
        holds, and those it is given), and the step to point at."""
        opts = set(self.fn_steps.get(callee, ()))
        for i in self.fn_step_params.get(callee, ()):
            if 0 <= i - offset < len(e.args):
                opts |= {id(f.node) for f in e.args[i - offset] if type(f) is OptimizerKind and f.node is not None}
        return frozenset(opts), self.fn_step_node.get(callee, e.call.node)

    def _first_seen(self, node: object) -> None:
        # Program order of forwards and steps: which forward a finding names
        # does not depend on how a set of nodes happens to iterate.
        self.order.setdefault(id(node), len(self.order))

    def _step_into_next_iteration(self, run: Run, e: CallEvent, state: _Pending, opts: frozenset, node: object) -> None:
        """The step runs in a loop that carries a forward's graph, kept by
        ``retain_graph=True``, into the next iteration: the next forward
        takes in what this one returned, so the next backward runs into
        this graph too, after the step changed the parameters it saved."""
        loops = frozenset(e.at.loops)
        for f in state.live:
            back = self.backwards.get((run.index, id(f.call)))
            if back is not None and not f.carried.isdisjoint(loops):
                conds = tuple(run.prog.conditions_at(e.at))
                self.candidates.append(_Candidate(run.index, _Stepped(f, node, opts), back, conds, True))

    def _backward(self, run: Run, e: CallEvent, graph: Value, frees: bool) -> None:
        params = _own_params(run, graph)
        if params:
            # (What its callers see: a backward of what they give it.)
            known = self.fn_backwards.setdefault(run.index, {})
            for i in params:
                known[i] = known.get(i, True) and frees
        state = run.frame.observed.get(self)
        calls = _calls_within(graph)
        if not calls:
            return
        # What its callers see: the graphs it backpropagates of forwards it
        # did not make (kept in `self` by another method), and those it
        # backpropagates after a step of its own.
        mine = {id(f.call) for f in state.live} if state is not None else set()
        entry = sorted(i for i in calls if i not in mine)
        if entry:
            self.fn_back_calls.setdefault(run.index, {}).update((i, e.call.node) for i in entry)
            if state is not None:
                self.fn_hazards.setdefault(run.index, set()).update((i, node, opts, e.call.node) for node, opts in state.steps for i in entry)
        if state is None or not state.live:
            return
        for i in calls:
            self.backwards.setdefault((run.index, i), e.call.node)
        conds = tuple(run.prog.conditions_at(e.at))
        reached = frozenset(calls)
        for s in state.stepped:
            if id(s.forward.call) in calls:
                if self.member_steps.get(id(s.step)) in e.at.loops:
                    continue  # another member's backward, in the loop stepping each in turn
                self.candidates.append(_Candidate(run.index, s, e.call.node, conds, reached=reached))
        # Without `retain_graph=True` this backward frees the graph: a later
        # one through it fails for that reason instead, not this one's.
        if frees:
            run.frame.observed[self] = replace(
                state,
                live=frozenset(f for f in state.live if id(f.call) not in calls),
                stepped=frozenset(s for s in state.stepped if id(s.forward.call) not in calls),
                retained=frozenset(f for f in state.retained if id(f.call) not in calls),
            )
        else:
            run.frame.observed[self] = replace(state, retained=frozenset(f for f in state.live if id(f.call) in calls))

    def finish(self, prog: Program) -> None:
        by_step: dict[int, StepFinding] = {}
        order = self.order
        # (Ties, the same step and forward with several backwards after it:
        # the first backward in the source names it, whatever order the
        # candidates came in.)
        for c in in_order(self.candidates, key=lambda c: (order[id(c.stepped.step)], order[id(c.stepped.forward.call)], prog.node_order(c.backward))):
            s = c.stepped
            modules = frozenset().union(*(self.updates.get(o, frozenset()) for o in s.optimizers))
            if modules:
                if s.forward.module is None or not updates_module(prog, modules, s.forward.module):
                    continue
            elif not _retained_through(s, c.reached):
                continue
            if id(s.step) not in by_step:
                by_step[id(s.step)] = StepFinding(s.step, s.forward.call, c.backward, c.conditions, c.next_iteration)
        self.found = list(by_step.values())

