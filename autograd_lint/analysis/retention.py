"""Graph retention: which stores keep a graph alive beyond its iteration.

An observer of the interpreter: it hears every store, accumulation and
argument a helper keeps, and then decides, for each of an attached value:

- does the container outlive the iteration (defined outside the loop and
  not re-created or cleared inside it; or on ``self``/module level, filled by
  a method that runs every step)? A fixed slot (``state["loss"] = loss``, an
  attribute) that is overwritten each time keeps one graph, not one per
  step: not a retention.
- is it consumed by autograd after all (reduced and backpropagated, passed
  to ``torch.autograd.grad``, returned to a caller that does so, or returned
  by a module's forward)? Then keeping the graph is the point, not a leak.

Shared by AGL101 (stores), AGL102 (accumulations) and AGL103 (hooks and
forward keeping their tensors).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from enum import Enum
from typing import Iterator, Protocol

from autograd_lint.analysis import ir
from autograd_lint.analysis import torch_api as api
from autograd_lint.analysis.api import TENSOR, member
from autograd_lint.analysis.interp import HookInfo, LoopFacts, Program, Run
from autograd_lint.analysis.observer import AUGMENTED_WRITES, Accumulate, BySite, CallEvent, Keep, Mutation, Observer, Point, Store
from autograd_lint.analysis.resolve import Attached, Condition, KeepsArgument, Resolver, Undifferentiated
from autograd_lint.analysis.state import BACKWARD, ELEMENT_BACKWARD, ESCAPE, AttrOf, ClassAttr, Global, Local, Loc, Ret, base_loc
from autograd_lint.analysis.joins import join
from autograd_lint.analysis.values import (
    AttrStep,
    CallStep,
    Container,
    GradMode,
    Graph,
    HookArg,
    MultiView,
    OpStep,
    ParamRoot,
    Plain,
    Sym,
    TENSOR_FACTS,
    TensorKind,
    Value,
    attached,
    graphs_of,
    syms_in,
)


class RetentionKind(Enum):
    STORE = "store"  # AGL101
    ACCUMULATE = "accumulate"  # AGL102
    HOOK = "hook"  # AGL103


@dataclass
class RetentionFinding:
    kind: RetentionKind
    node: object  # where to report: the store, the accumulation, the call
    value_node: object  # the stored expression (what a fix detaches)
    container: str  # as written: "losses", "self.history"
    origins: tuple[object, ...]  # the calls that made the graph, when known (equally good: the message names the first in the file)
    per: str  # "iteration" or "call"
    where: str = ""  # for hooks: "forward hook" / "`forward`"
    via: str | None = None  # a helper that does the keeping (`update`)
    conditions: tuple[Condition, ...] = ()
    holds_many: bool = False  # the value is a dict/list/tuple of tensors, not one
    # What `.detach()` on the value would be: "safe" (a tensor, and what
    # keeps it never reaches autograd again), "unsafe" (a tensor, maybe
    # differentiated later or not shown to be one alone), None (maybe not a
    # tensor: `.detach()` could raise).
    detach: str | None = None
    # For a dict, tuple or list written out at the store (`{"loss": loss,
    # "n": n}`): the same for each element known by key or position that
    # holds a graph; the others need no `.detach()`.
    parts: tuple[tuple[object, str | None], ...] = ()
    # The value is shown to hold one element (its own `.item()` or
    # `.backward()` is called): a number is what to keep. Else only
    # `.detach()` is safe to suggest (`logits.item()` raises).
    one_element: bool = False
    # What it keeps is differentiated later (`losses[it].backward()`): the
    # value must keep its graph until then, so no `.detach()` at the store.
    differentiated_later: bool = False


@dataclass
class _Event:
    kind: str  # "store", "accumulate", "keep"
    at: Point
    container: Loc | None
    container_text: str
    value: Value
    sources: frozenset
    value_node: object
    how: str
    overwrites: bool = False
    attr_assign: bool = False
    via: str | None = None
    deferred: tuple = ()
    keep_kind: str = ""


class Covering(Protocol):
    def covers(self, fn: int, loops: tuple) -> bool:
        """A graph made in function ``fn`` (inside ``loops``) would not be
        made once another finding is fixed."""

    def covers_return(self, prog: Program, fn: int) -> bool:
        """What function ``fn`` returns would carry no graph once another
        finding is fixed."""


_NUMBER_ANNOTATIONS = ("int", "float", "bool", "complex")

# The facts of a value shown to be a tensor.
_TENSOR_KINDS = frozenset(TENSOR_FACTS) | {MultiView}


def _made_by_forward(v: Value, forward: ir.Function) -> bool:
    """Computed in ``forward`` (a module's, where the caller checked that)
    from its parameters (an op on one) or from its inputs (an op on an
    argument: in training, activations)."""
    if forward.name != "forward":
        return False
    for f in v:
        t = type(f)
        if t is Graph and f.how == "leaf" and f.fn == forward.index:
            return True
        if t is Sym and type(f.root) is ParamRoot and f.root.fn == forward.index and f.root.index >= 1 and any(type(st) is OpStep for st in f.path):
            # (Not through what reads the values out: `mean.data`, `m.item()`.)
            if not any(type(st) is AttrStep and (member(TENSOR, st.name, attribute=True).reads_out or member(TENSOR, st.name).reads_out) for st in f.path):
                return True
    return False


class Retention(Observer):
    """``covered``: what else the analysis reports that a retention can be
    a symptom of (an evaluation model call with grad on): its ``finish``
    runs first."""

    def __init__(self, covered: "Covering | None" = None) -> None:
        self.events: BySite = BySite(lambda e: e.at.fn.index)
        self.found: list[RetentionFinding] = []
        self.prog: Program | None = None
        self.covered = covered
        # The variables shown to hold a one-element tensor.
        self.one_element: set[Loc] = set()

    # -- listening --------------------------------------------------------------

    def _record(self, key: tuple, ev: _Event) -> None:
        old = self.events.get(key)
        if old is None:
            self.events[key] = ev
            return
        old.value = join(old.value, ev.value)
        old.sources = old.sources | ev.sources
        if ev.at.grad is not GradMode.OFF and old.at.grad is GradMode.OFF:
            old.at = ev.at
        if ev.deferred != old.deferred or ev.via != old.via:
            # One call heard once per thing its callee may be (a symbol, a
            # helper of ours), in the order of a set: the argument is kept
            # if any of them keeps it. Not the first heard's alone (another
            # from process to process): a helper that keeps it decides; else
            # every symbol is asked.
            if not ev.deferred and (old.deferred or (ev.via or "") < (old.via or "")):
                old.deferred, old.via = (), ev.via
            elif ev.deferred and old.deferred:
                old.deferred = (old.deferred[0] | ev.deferred[0], *old.deferred[1:])

    def call(self, run: Run, e: CallEvent) -> None:
        # `loss.item()`, `loss.backward()`: both raise unless the tensor
        # holds one element, so a message may suggest `loss.item()` for what
        # that variable holds. (Graph origins do not tell tensors apart:
        # `logits` and the loss computed from it share theirs.)
        func = e.call.func
        if e.method is None or type(func) is not ir.Attr or type(func.value) not in (ir.Name, ir.Attr):
            return  # not a variable's own method (`x.mean().backward()` shows nothing of `x`)
        row = e.resolved.tensor
        if row is not None and row.one_element and not (row.one_element_unless and (e.call.positional() or e.call.keyword(row.one_element_unless) is not None)):
            receiver = e.sources - e.arg_sources
            if len(receiver) == 1:
                self.one_element |= receiver

    def forget(self, fn: int) -> None:
        self.events.forget(fn)

    def store(self, run: Run, e: Store) -> None:
        self._record(
            (id(e.at.node), "store", e.container),
            _Event("store", e.at, e.container, e.container_text, e.value, e.sources, e.value_node, e.how, e.overwrites, e.how == "attribute"),
        )

    def accumulate(self, run: Run, e: Accumulate) -> None:
        self._record(
            (id(e.at.node), "accumulate", e.target),
            _Event("accumulate", e.at, e.target, e.target_text, e.value, e.sources, e.value_node, "augmented"),
        )

    def mutate(self, run: Run, e: Mutation) -> None:
        # In a module's `forward`, a tensor held on `self` written in place (`self.avg.mul_(d).add_(v)`,
        # `self.buf[:] = v`, `self.buf.copy_(v)`): it joins the graph of
        # what is written, and its earlier history stays chained to the new
        # one (CopyBackwards, CopySlices), so every call adds a graph: an
        # accumulation into module state. (`+=` is heard as an accumulation;
        # a write through `.data`/`.detach()` is outside autograd.)
        if not e.in_forward or e.via or type(e.loc) is not ClassAttr or not e.rhs or e.how in AUGMENTED_WRITES or e.at.grad is GradMode.OFF:
            return
        self._record(
            (id(e.at.node), "accumulate", e.loc),
            _Event("accumulate", e.at, e.loc, e.path.split("[", 1)[0], e.rhs, frozenset(), e.rhs_node, "in place"),
        )

    def keep(self, run: Run, e: Keep) -> None:
        kinds = (e.kind,) if e.kind else ("store", "accumulate")
        for kind in kinds:
            self._record(
                (id(e.at.node), "keep", e.container, kind, id(e.value_node)),
                _Event("keep", e.at, e.container, e.container_text, e.value, frozenset(), e.value_node, "call", via=e.via, deferred=e.deferred, keep_kind=kind),
            )

    # -- deciding -----------------------------------------------------------------

    def finish(self, prog: Program) -> None:
        self.prog = prog
        self.resolver = Resolver(prog)
        decided = [(ev, f) for ev in self.events.values() if (f := self._decide(ev)) is not None]
        # Report the cause, not its symptoms: a store of a running total
        # another finding reports the accumulation of (`history.append(total
        # / n)` after `total += loss`), or of graphs that exist only because
        # a model runs with grad on in evaluation code AGL301 reports (its
        # `no_grad` removes them too).
        totals = {ev.container for ev, f in decided if f.kind is RetentionKind.ACCUMULATE}
        total_graphs = {g for ev, f in decided if f.kind is RetentionKind.ACCUMULATE for g in graphs_of(ev.value)}
        self.found = [f for ev, f in decided if not self._symptom(ev, totals, total_graphs)]

    def _symptom(self, ev: _Event, totals: set, total_graphs: set) -> bool:
        graphs = [g for g in graphs_of(ev.value) if g.how != "leaf"]
        if not graphs:
            return False
        if ev.container not in totals and not totals.isdisjoint(map(base_loc, ev.sources)) and all(g in total_graphs for g in graphs):
            return True
        return self.covered is not None and all(self.covered.covers(g.fn, ev.at.loops) or self._made_by_covered_helper(g) for g in graphs)

    def _made_by_covered_helper(self, g: Graph) -> bool:
        """``g`` is what a helper of this module gave (`preds =
        self._predict_proba(x)`), and that helper's own model call is
        reported for running with grad on in evaluation code: with that
        fixed, it gives no graph."""
        if g.how != "call" or self.covered is None or self.prog is None:
            return False
        # (Of the overrides it may run, those that give a graph: not a
        # base's `raise NotImplementedError`.)
        summaries = self.prog.summaries
        callees = [c for c in self.prog.callees_at(g.node) if c in summaries and attached(summaries[c].returns)]
        return bool(callees) and all(self.covered.covers_return(self.prog, c) for c in callees)

    def findings(self, kind: RetentionKind) -> Iterator[RetentionFinding]:
        return (f for f in self.found if f.kind is kind)

    def _decide(self, ev: _Event) -> RetentionFinding | None:
        prog = self.prog
        assert prog is not None
        at = ev.at
        fn = at.fn
        # Under `no_grad` nothing new is attached, but a value made before
        # keeps its graph (`with torch.no_grad(): history.append(loss)`):
        # only a graph shown made here counts, not what a caller's values
        # may make of its symbols, nor a hook's output (the forward that
        # gives it runs under the same mode).
        if at.grad is GradMode.OFF and not any(g.how != "leaf" for g in graphs_of(ev.value)):
            return None
        # Every graph it keeps is converted to NumPy undetached elsewhere,
        # which raises on a tensor that carries one: where the code works,
        # they were made with grad off.
        made = [g for g in graphs_of(ev.value) if g.how != "leaf"]
        if made and all(g.node in prog.refused_graphs for g in made):
            return None
        conditions: list[Condition] = list(prog.conditions_at(at))
        # Graphs built only from ops on parameters (p * 2, p.norm()) are
        # bookkeeping, not a step's graph; values shown to be numbers or
        # strings never carry one.
        if not attached(ev.value):
            if syms_in(ev.value):
                conditions.append(Attached(ev.value))
            elif not (ev.kind == "accumulate" and _made_by_forward(ev.value, fn) and self._hook_context(fn) == "`forward`"):
                # (A running update in `forward` of what it computed from
                # its parameters alone, `self.avg = 0.9 * self.avg + 0.1 *
                # self.embed[idx]`, chains every call's graph: not
                # bookkeeping.)
                return None
        if ev.kind == "keep" and ev.deferred:
            callee, args, index = ev.deferred[0], ev.deferred[1], ev.deferred[2]
            conditions.append(KeepsArgument(callee, args, index, ev.keep_kind))
        hook_where = self._hook_context(fn)
        if hook_where is not None:
            return self._hook_finding(ev, hook_where, conditions)
        # Containers are names and `self` state; `w.data += d` or
        # `layer.weight += d` write tensors in place (AGL2xx), they keep no
        # per-step graph. A fixed slot overwritten each time keeps one.
        if ev.attr_assign or ev.overwrites or ev.container is None or type(ev.container) is AttrOf:
            return None
        lf = self._outliving_loop(ev)
        per = "iteration"
        if lf is None:
            if not self._per_call_store(ev):
                return None
            per = "call"
        # In a training loop the iteration's graph was already used; in
        # evaluation code nobody backpropagates: a return consumes nothing.
        if self._consumed(ev.container, (lf is not None and lf.steps) or fn.index in prog.calls_eval):
            return None
        # Handed to a helper of unknown kind called as a module is (an
        # imported `update(fabric, loss, optimizer)`): the module that
        # defines it says whether it backpropagates what it is given.
        conditions.extend(self._handed_conditions(ev.container))
        kind = RetentionKind.ACCUMULATE if (ev.kind == "accumulate" or ev.keep_kind == "accumulate") else RetentionKind.STORE
        return self._finding(kind, ev, per, "", conditions)

    def _outliving_loop(self, ev: _Event) -> LoopFacts | None:
        """The innermost enclosing loop over data (or one that steps), when
        the container outlives its iterations. Loops over layers, heads or
        adapters build one graph together: not a retention."""
        prog = self.prog
        assert prog is not None
        for loop in reversed(ev.at.loops):
            lf = prog.loop_facts.get(loop)
            if lf is None:
                continue
            if lf.steps or lf.data:
                return None if ev.container in lf.rebinds else lf
        return None

    def _per_call_store(self, ev: _Event) -> bool:
        """A store into ``self``/module state from a method that runs every
        step, of a graph that method built itself, or of what it was given
        (a meter's ``update(loss)``: its callers in this module decide
        whether that is attached)."""
        prog = self.prog
        assert prog is not None
        fn = ev.at.fn
        k = ev.container
        if fn.is_module or fn.name in api.ONCE_METHODS or type(k) not in (ClassAttr, Global):
            return False
        if type(k) is Global and k.name not in fn.globals and ev.kind == "accumulate":
            return False
        if fn.cls is not None and fn.name == "forward" and prog.is_module_class(fn.cls):
            return False
        if self._rebound_in(fn, k):
            return False
        # Every caller shown assigns the state afresh (`self.log_probs = []`
        # at the top of the `forward` that calls `choose_action` each time
        # step), and trains nothing itself: what it holds is one caller's
        # run, which that run's loss may read; the project bounds it. (Not a
        # training loop that resets a running total each epoch and calls
        # the step that adds to it each batch: that keeps every batch's
        # graph to the epoch's end.)
        sites = prog.callers_of(fn.index)
        if sites and all(self._rebound_in(prog.functions[s.caller], k) and s.caller not in prog.stepping for s in sites):
            return False
        if any(g.how != "leaf" and (g.fn == fn.index or self._built_per_call_by_sibling(g.fn, fn)) for g in graphs_of(ev.value)):
            return True
        # (Not of a parameter the method rebinds first: `val = val.item()`;
        # nor of one only a number is given: `n: int`.)
        if fn.cls is None or not prog.callers_of(fn.index):
            return False
        params = [fn.params[s.root.index] for s in syms_in(ev.value) if type(s.root) is ParamRoot and s.root.fn == fn.index]
        rebound = prog.rebound.get(fn.index, set())
        if any(p.name in rebound for p in params):
            return False
        return any(p.annotation not in _NUMBER_ANNOTATIONS for p in params)

    def _built_per_call_by_sibling(self, maker: int, fn: ir.Function) -> bool:
        """A graph made by another method of ``fn``'s class, one that runs
        every step rather than once (`select_action` putting the policy's
        log-probability in `self.transition` for `train_model` to store):
        each call stores that step's graph."""
        prog = self.prog
        assert prog is not None
        if fn.cls is None or not 0 <= maker < len(prog.functions):
            return False
        other = prog.functions[maker]
        return other.cls is not None and prog.family_of.get(other.cls.id) == prog.family_of.get(fn.cls.id) and other.name not in api.ONCE_METHODS

    def _rebound_in(self, fn: ir.Function, k: Loc) -> bool:
        return any(e.at.fn is fn and e.attr_assign and e.container == k for e in self.events.values())

    def _hook_context(self, fn: ir.Function) -> str | None:
        prog = self.prog
        assert prog is not None
        if self._hook_of(fn) is not None:
            return "forward hook"
        if fn.cls is not None and fn.name == "forward" and prog.is_module_class(fn.cls):
            return "`forward`"
        return None

    def _hook_of(self, fn: ir.Function) -> HookInfo | None:
        """The registration of the hook ``fn`` is, or is nested in."""
        prog = self.prog
        assert prog is not None
        f: ir.Function | None = fn
        while f is not None:
            info = prog.hooks.get(f.index)
            if info is not None:
                return info
            f = f.parent
        return None

    def _hook_finding(self, ev: _Event, where: str, conditions: list[Condition]) -> RetentionFinding | None:
        k = ev.container
        fn = ev.at.fn
        if k is None or (type(k) is Local and k.fn == fn.index) or ev.kind == "keep":
            return None  # a local of the hook itself dies with the call
        if where == "forward hook":
            if not any(type(f) in (HookArg, Graph) for f in ev.value) and not attached(ev.value):
                return None
            # A hook removed before its registering call returns, replacing
            # one slot of that call's locals (`captured["h"] = output`): it
            # keeps one value as long as the call, and what the call returns
            # is its caller's to keep or not. (Appending there still grows
            # with every forward the call runs.)
            info = self._hook_of(fn)
            if info is not None and info.scoped and ev.overwrites and type(k) is Local and k.fn == info.owner.index:
                return None
        else:
            # forward keeps a tensor of this call's graph on self (on some
            # paths too: `if self.track: self.last = y` keeps it whenever the
            # flag is on).
            if type(k) is not ClassAttr:
                return None
            if not any(g.how != "leaf" for g in graphs_of(ev.value)):
                # Module state updated from what this call computed of its
                # input or its parameters (a running statistic, an EMA
                # codebook): in training that is attached, and an update
                # chains every call's graph to the last one.
                if ev.kind != "accumulate" or not _made_by_forward(ev.value, fn):
                    return None
                conditions = [c for c in conditions if type(c) is not Attached]
        # A slot that another hook empties (`self._stash = None` in the exit
        # hook) hands a tensor from one hook to the next within one forward:
        # it is released there, not kept.
        if where == "forward hook" and type(k) is ClassAttr and any(
            e.attr_assign and e.container == k and e.at.fn is not fn and e.at.fn.index in self.prog.hooks and e.value and all(type(f) is Plain and f.kind == "none" for f in e.value)
            for e in self.events.values()
        ):
            return None
        # Reading it back in the next call (an RNN state, a memory) is the
        # retention itself, not a consumer. An update chained onto the last
        # one (a running statistic) that nothing resets grows every call,
        # whoever reads it: a reader differentiates one step's state, not
        # the chain of all of them.
        reset = self._reset(k, fn)
        chain = where == "`forward`" and ev.kind == "accumulate" and not reset
        if not chain and self._consumed(k, False, exclude_return=fn.index if where == "`forward`" else None):
            return None
        # State the project resets between steps and `forward` reads back to
        # build its output (a membrane potential, a recurrence over the time
        # steps of one sequence): the graph is this step's computation,
        # differentiated through it; detaching it would stop the training.
        if reset and where == "`forward`" and Ret(fn.index) in self.prog.reaches({k}, {BACKWARD, ESCAPE}):
            return None
        return self._finding(RetentionKind.HOOK, ev, "call", where, conditions)

    def _reset(self, k: Loc, fn: ir.Function) -> bool:
        """State ``k``, which ``fn`` updates, is assigned afresh by another
        method that a loop here calls (`self.mem = None` in
        `reset_state()`, called before each sequence): the project bounds
        what it holds."""
        prog = self.prog
        assert prog is not None
        return any(
            e.kind == "store" and e.attr_assign and e.container == k and e.at.fn is not fn and any(s.looped for s in prog.callers_of(e.at.fn.index))
            for e in self.events.values()
        )

    # -- consumers --------------------------------------------------------------

    def _consumed(self, start: Loc, training_loop: bool, exclude_return: int | None = None) -> bool:
        """Does what is kept in ``start`` reach autograd again? In a training
        loop (one that backpropagates every iteration) a return does not
        count: that iteration's graph has already been used."""
        prog = self.prog
        assert prog is not None
        seen = {start}
        todo = deque([start])
        while todo:
            k = todo.popleft()
            for nxt in prog.flow.get(k, ()):
                if nxt is BACKWARD:
                    return True
                if nxt is ELEMENT_BACKWARD and training_loop:
                    continue  # each iteration backpropagates its own element; the others stay kept
                if nxt in seen:
                    continue
                seen.add(nxt)
                if type(nxt) is Ret and nxt.fn == exclude_return:
                    continue
                if type(nxt) is Ret and not training_loop and self._return_consumes(nxt.fn):
                    return True
                todo.append(nxt)
        return False

    def _handed_conditions(self, start: Loc) -> list[Condition]:
        """What the calls that what ``start`` holds is handed to must not do
        (``Undifferentiated``), in the order the calls were made."""
        prog = self.prog
        assert prog is not None
        if not prog.handed:
            return []
        reach = prog.reaches({start}, {BACKWARD})
        return [Undifferentiated(callee, k.index) for k, callee in prog.handed.items() if k in reach]

    def _return_consumes(self, index: int) -> bool:
        """A value returned from this function may reach autograd: it is a
        module's method (forward and its helpers), or no caller in this file
        shows otherwise (callers elsewhere are followed through the flow
        graph when they are here)."""
        prog = self.prog
        assert prog is not None
        fn = prog.fn_at(index)
        cls = fn.cls
        f = fn
        while cls is None and f.parent is not None:
            f = f.parent
            cls = f.cls
        if cls is not None and prog.is_module_class(cls):
            return True
        if any(ir.dotted(d) in ("property", "functools.cached_property", "cached_property") for d in fn.decorators):
            return False  # read as an attribute (`meter.avg`): its readers here are followed
        return not prog.callers_of(index)

    # -- reporting ------------------------------------------------------------------

    def _finding(self, kind: RetentionKind, ev: _Event, per: str, where: str, conditions: list[Condition]) -> RetentionFinding:
        many = not any(type(f) is Graph for f in ev.value) and any(type(f) is Container for f in ev.value)
        later = self._differentiated_later(ev)
        parts: tuple = ()
        if many:
            items = [(k, x) for f in ev.value if type(f) is Container for k, x in f.items]
            parts = tuple((k, self._detach(ev, x, later)) for k, x in items if attached(x))
        return RetentionFinding(
            kind, ev.at.node, ev.value_node, ev.container_text, self._origin(ev), per, where, ev.via, tuple(conditions), many,
            self._detach(ev, ev.value, later), parts, len(ev.sources) == 1 and ev.sources <= self.one_element, later,
        )

    def _differentiated_later(self, ev: _Event) -> bool:
        return ev.container is not None and self.prog is not None and BACKWARD in self.prog.reaches({ev.container}, {BACKWARD, ESCAPE})

    def _detach(self, ev: _Event, value: Value, differentiated_later: bool) -> str | None:
        """Is writing `.detach()` on ``value``, kept by ``ev``, safe (see
        RetentionFinding.detach)? (``differentiated_later``: what keeps it is
        differentiated later, `_differentiated_later`.)"""
        kinds = {type(f) for f in value}
        if not kinds or kinds - _TENSOR_KINDS - {Sym}:
            return None  # a container, a number, a model's output object: maybe no `.detach()`
        fn = ev.at.fn
        syms = [f for f in value if type(f) is Sym]
        # (A tensor the callers here give an unannotated parameter is theirs,
        # not the helper's: other callers may give it a number.)
        given = kinds == {Sym} or (kinds == {Sym, TensorKind} and all(not fn.params[f.root.index].annotation for f in syms if type(f.root) is ParamRoot and f.root.fn == fn.index and f.root.index < len(fn.params)))
        if given and all(type(f.root) is ParamRoot and f.root.fn == fn.index for f in syms) and not (
            self._hook_context(ev.at.fn) == "`forward`" and _made_by_forward(value, ev.at.fn)
        ):
            # What a helper is given: a tensor from some callers, maybe a
            # number from others. (An op on `forward`'s input is a tensor.)
            return None
        if differentiated_later:
            # (A detached copy there breaks that backward: the value is to be
            # kept only after it, which no edit at the store says.)
            return None
        # A symbol that ends in an op is computed from a parameter (an op's
        # result: a tensor); one that ends in a call or an access is whatever
        # that returns: a tensor only as far as a backward through it shows.
        if ev.container is None or any(type(f) is Sym and (not f.path or type(f.path[-1]) is not OpStep) for f in value):
            return "unsafe"
        prog = self.prog
        assert prog is not None
        if self._consumed(ev.container, False) or ESCAPE in prog.reaches({ev.container}, {BACKWARD, ESCAPE}):
            return "unsafe"  # later code may differentiate what it keeps
        return "safe"

    def _origin(self, ev: _Event) -> tuple[object, ...]:
        gs = [g for g in graphs_of(ev.value) if g.node is not None]
        own = [g for g in gs if g.fn == ev.at.fn.index and g.how != "leaf"] or [g for g in gs if g.how != "leaf"]
        if own:
            # Prefer calls, then anything. Sets have no stable order (nodes
            # hash by identity): every equally good one is kept, and the
            # message, which knows lines, names the first.
            best = min((g.how != "call", g.how) for g in own)
            return tuple(g.node for g in own if (g.how != "call", g.how) == best)
        # Each symbol's first call (the message names the first in the file:
        # symbols have no stable order either).
        out = []
        for s in syms_in(ev.value):
            for st in s.path:
                if type(st) is CallStep and st.node is not None:
                    if st.node not in out:
                        out.append(st.node)
                    break
        return tuple(out)
