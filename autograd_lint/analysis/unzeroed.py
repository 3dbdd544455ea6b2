"""Gradients never zeroed in a training loop (AGL404).

``backward()`` adds into ``.grad``; an optimizer step applies whatever is
there. A loop that backpropagates and steps an optimizer every iteration
with nothing in it that zeroes that optimizer's gradients applies, at step
``n``, the sum of the gradients of all ``n`` iterations: the update grows
each step and training diverges or stalls, with no error. (Zeroing once
before the loop is the same bug: the second iteration adds to the first.)

An observer of the interpreter's calls. For every call it keeps which
loops it runs in and what it does to gradients: a backward; a step of an
optimizer (the call that made it, as the ``Steps`` observer reads it); a
zeroing (``zero_grad()`` of an optimizer, of a module, or of anything not
shown; gradients zeroed or set to ``None`` by hand); a call of one of this
module's functions (what that function does counts wherever the call is);
and the calls that may zero where this module does not show it: a function
or method not shown that is handed the optimizer, a module or ``self``, a
method of ``self`` not shown. Decided once every function has run, loop by
loop, innermost first: a loop whose iterations backpropagate and step an
optimizer made outside it, with no zeroing of it and nothing that may
zero, is reported at the zeroing left before it (what to move), else at
its backward. A loop that zeroes on one branch of a setting it does not
assign (`if args.amp:`) only is decided again for the other branch.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from autograd_lint.analysis import ir
from autograd_lint.analysis import torch_api as api
from autograd_lint.analysis.api import OPTIMIZER, SCALER, TENSOR, member
from autograd_lint.analysis.canonical import in_order
from autograd_lint.analysis.observer import CallEvent, Observer, Program, Run, SetAttribute, settings_of
from autograd_lint.analysis.outcome import MAY_RUN_MODULE, SymCall
from autograd_lint.analysis.state import Loc
from autograd_lint.analysis.steps import Steps, called_here, updates_module
from autograd_lint.analysis.values import FunctionObj, Instance, InstanceRoot, Module, OptimizerKind, ParamRoot, Sym, Value

# What a call does to gradients.
_BACKWARD = "backward"
_STEP = "step"
# `x.step()` with no argument, of a parameter no caller here fills
# (``receiver``): an optimizer when it is the only thing a loop that
# backpropagates steps.
_STEP_OF_UNKNOWN = "step of unknown"
_ZERO = "zero"  # ``opts``: the optimizers it zeroes; ``modules``: the modules; neither: all (not shown)
_MAKES = "makes"  # makes an optimizer (``opts``: that call)
_CALLS = "calls"  # runs one of this module's functions (``callee``)
_OPAQUE = "opaque"  # may zero where this module does not show it


@dataclass(frozen=True, slots=True)
class _Event:
    kind: str
    node: object
    loops: tuple  # the loops around it in its function, innermost last
    opts: frozenset = frozenset()
    modules: frozenset = frozenset()
    callee: int | None = None
    branch: int = 0  # depth of the `if`/`try` branches around it in its function
    receiver: frozenset = frozenset()  # of a step of something not shown; of `x.backward(loss)`
    every: bool = False  # under an `if` that tests a remainder (`(i + 1) % k == 0`): every k-th iteration
    settings: frozenset = frozenset()  # the loop-invariant settings it runs under (`observer.settings_of`)
    # Of a step: the expression that names the optimizer stepped (`opt` in
    # `opt.step()`, in `scaler.step(opt)`).
    optimizer: object | None = None
    guard: int | None = None  # id of the innermost `if` test around it: events of one block share it


@dataclass(frozen=True, slots=True)
class DiscardedFinding:
    """AGL405: ``node`` zeroes an optimizer's gradients every iteration of
    a loop that steps it only every k-th (``step``): what the iterations
    in between accumulated is thrown away. ``backward``: where set, the
    zeroing runs between that backward and the step, in the same block:
    the step applies nothing of it."""

    node: object  # the zero_grad()
    step: object
    fn: ir.Function
    backward: object | None = None


@dataclass(frozen=True, slots=True)
class UnzeroedFinding:
    node: object  # the backward that adds to the gradients of earlier iterations
    step: object  # the step that applies them
    fn: ir.Function
    loop_node: object  # the loop
    direct: bool = True  # the backward itself, not a call of a function that backpropagates
    opts: frozenset = frozenset()  # the optimizers of the step
    # The zeroing that runs once before the loop instead of in it (what to
    # move), where there is one: the finding is reported there.
    zeroed_before: object | None = None
    # The setting under which the loop never zeroes (`("args.amp", False)`)
    # where it zeroes on the other branch only.
    setting: tuple[str, bool] | None = None
    setting_node: object | None = None  # the test of that setting's `if`
    # The closure an optimizer's step evaluates several times (LBFGS), that
    # backpropagates without zeroing: ``node`` is its backward, ``step``
    # the `step(closure)`.
    closure: bool = False
    optimizer: object | None = None  # the expression naming the optimizer stepped
    # The earlier step of the same optimizer in the iteration whose
    # gradients ``step`` applies again (nothing zeroes them in between).
    after_step: object | None = None


class Unzeroed(Observer):
    """AGL404: a training loop that never zeroes the gradients it steps;
    AGL405: one that zeroes them every iteration but steps only every k-th."""

    def __init__(self, steps: Steps) -> None:
        self.steps = steps
        self.events: dict[int, list[_Event]] = {}
        self.found: list[UnzeroedFinding] = []
        self.discarded: list[DiscardedFinding] = []
        self.line_search: set[int] = set()  # id(constructor call) of optimizers that evaluate a closure several times
        # `opt.step(closure)` of one of those, with a closure of this module,
        # by the function making it and the step's id: (the step, the
        # closure's function, its optimizers)
        self.closures: dict[int, dict[int, tuple[object, int, frozenset]]] = {}

    def forget(self, fn: int) -> None:
        self.events.pop(fn, None)
        self.closures.pop(fn, None)

    def _add(self, run: Run, e: CallEvent | SetAttribute, kind: str, node: object, **kw) -> None:
        every = kind == _STEP and any(type(x) is ir.BinOp and x.op == "mod" for g in run.guards for x in ir.walk_expr(g))
        self.events.setdefault(run.index, []).append(
            _Event(kind, node, tuple(e.at.loops), branch=e.at.branch, every=every, settings=settings_of(run), guard=id(run.guards[-1]) if run.guards else None, **kw)
        )

    def set_attribute(self, run: Run, e: SetAttribute) -> None:
        # `p.grad = None`: a gradient set by hand (to None or to anything
        # else) is not added to.
        if member(TENSOR, e.target.attr, attribute=True).leaf_only:
            self._add(run, e, _ZERO, e.target.node)

    def call(self, run: Run, e: CallEvent) -> None:
        c = e.call
        rc = e.resolved
        for callee, _ in called_here(run, e):
            self._add(run, e, _CALLS, c.node, callee=callee)
        if any(type(f) is OptimizerKind for f in e.outcome.value):
            self._add(run, e, _MAKES, c.node, opts=frozenset({id(c.node)}))
            if e.qual in api.CLOSURE_EVALUATING_OPTIMIZERS:
                self.line_search.add(id(c.node))
            return
        if rc.backward or (rc.autograd and not rc.gradient_of):
            # (`engine.backward(loss)`: what backpropagates is handed over;
            # its receiver is an engine that may step and zero itself.)
            self._add(run, e, _BACKWARD, c.node, receiver=e.receiver if c.args and e.receiver else frozenset())
            return
        if rc.zeroes_grad:
            recv = e.receiver or frozenset()
            opts = frozenset(id(f.node) for f in recv if type(f) is OptimizerKind and f.node is not None)
            modules = frozenset(loc for loc in [_module_loc(run, c)] if loc is not None) if any(type(f) in (Module, Instance) for f in recv) else frozenset()
            # (Of something not shown, or an optimizer not made here: all.)
            self._add(run, e, _ZERO, c.node, opts=opts if len(opts) == sum(1 for f in recv if type(f) is OptimizerKind) else frozenset(), modules=modules)
            return
        if e.qual == api.FOREACH_ZERO or (rc.zeroing and _touches_grad(c)):
            self._add(run, e, _ZERO, c.node)
            return
        if rc.steps:
            scaler = rc.row(SCALER) is not None
            stepped = e.args[0] if scaler and e.args else e.receiver
            opts = frozenset(id(f.node) for f in stepped or () if type(f) is OptimizerKind and f.node is not None)
            if opts:
                named = c.args[0].value if scaler and c.args else (c.func.value if type(c.func) is ir.Attr else None)
                self._add(run, e, _STEP, c.node, opts=opts, optimizer=named.node if named is not None else None)
            if c.args and not scaler:
                # `opt.step(closure)`: the closure (which zeroes, as LBFGS's
                # do) runs inside the step.
                self._add(run, e, _OPAQUE, c.node)
                closure = _closure_of(run, e.args[0]) if e.args else None
                if closure is not None and opts and opts <= self.line_search:
                    self.closures.setdefault(run.index, {})[id(c.node)] = (c.node, closure, opts)
            return
        if not c.args and rc.may_step and _a_parameter(e.receiver):
            self._add(run, e, _STEP_OF_UNKNOWN, c.node, receiver=e.receiver)
            return
        if _may_zero(run, e):
            self._add(run, e, _OPAQUE, c.node)

    def finish(self, prog: Program) -> None:
        found: dict[int, UnzeroedFinding] = {}
        self.discarded = []
        order = prog.node_order
        reach = _Reach(self.events)
        for fn_index in sorted(self.events):
            fn = prog.functions[fn_index] if fn_index < len(prog.functions) else None
            if fn is None:
                continue
            events = self.events[fn_index]
            # (A function that steps every k-th call is an iteration's body
            # of its own: `train_step(itr)` called from a loop elsewhere.)
            self._discarding_in(prog, fn, 0, [ev for ev in events if not ev.loops])
            loops = {loop for ev in events for loop in ev.loops}
            # Innermost first: a loop inside another that is reported is the
            # one to fix.
            for loop in in_order(loops, key=lambda lp: (-_depth(events, lp), order(lp.node))):
                facts = prog.loop_facts.get(loop)
                if facts is not None and facts.comprehension:
                    continue
                inside = [ev for ev in events if loop in ev.loops]
                self._discarding(prog, fn, loop, inside)
                # A loop inside this one already reported for its optimizer
                # is that optimizer's fix; another optimizer this loop steps
                # unzeroed (a GAN's generator around its student's loop) is
                # still this loop's finding.
                inner = [x for x in found.values() if x.loop_node is not loop.node and _within(events, x.loop_node, loop)]
                if any(not x.opts for x in inner):
                    continue
                reported = frozenset().union(*(x.opts for x in inner))
                f = (
                    self._decide(prog, fn, loop, inside, reach, reported)
                    or self._decide_by_setting(prog, fn, loop, inside, reach, reported)
                    or self._stale_step(prog, fn, loop, inside)
                )
                for g in [f, *self._other_branches(prog, fn, loop, inside, reach, reported, f)] if f is not None else ():
                    g = self._anchored(prog, g, loop, events)
                    if g is not None and id(g.node) not in found:
                        found[id(g.node)] = g
        for step_node, closure, opts in (x for fn_index in sorted(self.closures) for x in self.closures[fn_index].values()):
            f = self._unzeroed_closure(prog, reach, step_node, closure, opts)
            if f is not None and id(f.node) not in found:
                found[id(f.node)] = f
        self.found = in_order(found.values(), key=lambda f: order(f.node))
        self.discarded = in_order({id(d.node): d for d in self.discarded}.values(), key=lambda d: order(d.node))

    def _discarding(self, prog: Program, fn: ir.Function, loop: ir.Loop, inside: list[_Event]) -> None:
        """Gradient accumulation undone: in this loop's own code, a zeroing
        and a backward on every iteration (at the loop's branch depth), and
        a step of an optimizer that zeroing zeroes only under an `if` on
        a remainder (every k-th iteration), and on no other."""
        facts = prog.loop_facts.get(loop)
        if facts is not None:
            # (The backward may run in a loop of its own inside this one, a
            # sequence's chunks: it runs on every iteration all the same.)
            nested = [ev for ev in inside if ev.kind == _BACKWARD and ev.loops and ev.loops[-1] is not loop]
            self._discarding_in(prog, fn, facts.branch, [ev for ev in inside if ev.loops and ev.loops[-1] is loop], nested)

    def _discarding_in(self, prog: Program, fn: ir.Function, level: int, here: list[_Event], nested: Sequence[_Event] = ()) -> None:
        self._zeroed_before_step(prog, fn, [*here, *nested])
        if not any(ev.kind == _BACKWARD and ev.branch == level for ev in [*here, *nested]):
            return
        for z in here:
            if z.kind != _ZERO or z.branch != level:
                continue
            for s in here:
                if s.kind == _STEP and s.every and s.branch > level and self._zeroes(prog, z, s.opts, shown=True) and not any(
                    t.kind == _STEP and t.branch == level and t.opts & s.opts for t in here
                ):  # (stepped on every iteration too: nothing is accumulated)
                    self.discarded.append(DiscardedFinding(z.node, s.node, fn))
                    break

    def _stale_step(self, prog: Program, fn: ir.Function, loop: ir.Loop, inside: list[_Event]) -> UnzeroedFinding | None:
        """An optimizer stepped twice in an iteration (a VAE-GAN's
        generator: its reconstruction step, then its adversarial step)
        and zeroed before only one of them: the other backward adds to what
        the previous step applied, and its step applies that again. Only
        straight-line code in the loop's own body (one block: no `if`
        between), in the order it runs, the previous iteration's last step
        before the first."""
        if any(ev.kind == _OPAQUE for ev in inside):
            return None
        order = prog.node_order
        own = sorted((ev for ev in inside if ev.loops and ev.loops[-1] is loop), key=lambda ev: order(ev.node))
        steps = [ev for ev in own if ev.kind == _STEP]
        # (Optimizers in the order the loop first steps them, not by identity.)
        for opt in sorted({o for s in steps for o in s.opts}, key=lambda o: min(order(s.node) for s in steps if o in s.opts)):
            mine = [s for s in steps if opt in s.opts]
            zeros = [z for z in own if z.kind == _ZERO and self._zeroes(prog, z, frozenset({opt}), shown=True)]
            if len(mine) < 2 or not zeros or len({ev.guard for ev in [*mine, *zeros]}) != 1:
                continue
            for k, s in enumerate(mine):
                prev = mine[k - 1]  # (the first: the last of the previous iteration)
                lo, hi = order(prev.node), order(s.node)
                between = [ev for ev in own if (lo < order(ev.node) < hi if lo < hi else (order(ev.node) > lo or order(ev.node) < hi))]
                backs = [ev for ev in between if ev.kind == _BACKWARD]
                if backs and not any(z in between for z in zeros):
                    # (The backward that feeds it: the last before it.)
                    return UnzeroedFinding(backs[-1].node, s.node, fn, loop.node, True, s.opts, optimizer=s.optimizer, after_step=prev.node)
        return None

    def _zeroed_before_step(self, prog: Program, fn: ir.Function, events: list[_Event]) -> None:
        """`loss.backward(); optimizer.zero_grad(); optimizer.step()`: the
        zeroing runs after the backward and before the step of the same
        optimizer, in the same block, with no backward in between: the step
        applies zero gradients."""
        order = prog.node_order
        backwards = [ev for ev in events if ev.kind == _BACKWARD]
        for s in events:
            if s.kind != _STEP:
                continue
            for z in events:
                if z.kind != _ZERO or z.guard != s.guard or z.loops != s.loops or not order(z.node) < order(s.node) or not self._zeroes(prog, z, s.opts, shown=True):
                    continue
                fed = [b for b in backwards if order(b.node) < order(z.node)]
                if fed and not any(order(z.node) < order(b.node) < order(s.node) for b in backwards):
                    self.discarded.append(DiscardedFinding(z.node, s.node, fn, max(fed, key=lambda b: order(b.node)).node))
                    break

    def _decide(
        self, prog: Program, fn: ir.Function, loop: ir.Loop, inside: list[_Event], reach: "_Reach", reported: frozenset = frozenset()
    ) -> UnzeroedFinding | None:
        everything = reach.all(inside)
        if any(ev.kind == _OPAQUE for ev in everything):
            return None
        made = frozenset().union(*(ev.opts for ev in everything if ev.kind == _MAKES))
        steps = [ev for ev in everything if ev.kind == _STEP and not ev.opts <= made]
        backwards = [ev for ev in everything if ev.kind == _BACKWARD]
        if not backwards:
            return None
        zeros = [ev for ev in everything if ev.kind == _ZERO]
        if not steps:
            # Nothing shown to be an optimizer is stepped: a loop that
            # backpropagates steps one, so where it steps one thing only
            # (no argument: not `env.step(action)`), that is the optimizer,
            # unless it is what backpropagates too (an engine's
            # `engine.backward(loss)` then `engine.step()`, which zeroes).
            unknown = [ev for ev in everything if ev.kind == _STEP_OF_UNKNOWN]
            receivers = {ev.receiver for ev in unknown}
            if len(receivers) != 1 or any(ev.receiver in receivers for ev in backwards) or zeros:
                return None
            steps = unknown
        unzeroed = [s for s in steps if not any(self._zeroes(prog, z, s.opts - made) for z in zeros) and not (s.opts and s.opts <= reported)]
        if not unzeroed:
            return None
        order = prog.node_order
        # Where the loop's own code backpropagates (or calls what does), in
        # the order it runs; the step it feeds.
        own = [ev for ev in inside if ev.kind == _BACKWARD or (ev.kind == _CALLS and any(x.kind == _BACKWARD for x in reach.all([ev])))]
        own.sort(key=lambda ev: order(ev.node))
        if not own:
            return None
        step = min(unzeroed, key=lambda s: order(s.node))
        # The backward that feeds that step: the last before it (a GAN's
        # discriminator loss, not the generator's), else the first.
        before = [ev for ev in own if order(ev.node) <= order(step.node)]
        back = before[-1] if before else own[0]
        return UnzeroedFinding(back.node, step.node, fn, loop.node, back.kind == _BACKWARD, step.opts, optimizer=step.optimizer)

    def _unzeroed_closure(self, prog: Program, reach: "_Reach", step: object, closure: int, opts: frozenset) -> UnzeroedFinding | None:
        """A closure that an optimizer evaluates several times in one step
        (LBFGS's line search), which backpropagates and zeroes nothing:
        each evaluation adds its gradients to the earlier ones'."""
        fn = prog.functions[closure] if closure < len(prog.functions) else None
        own = self.events.get(closure, [])
        if fn is None:
            return None
        everything = reach.all(own)
        if any(ev.kind == _OPAQUE for ev in everything) or any(self._zeroes(prog, z, opts) for z in everything if z.kind == _ZERO):
            return None
        backwards = in_order((ev for ev in own if ev.kind == _BACKWARD), key=lambda ev: prog.node_order(ev.node))
        if not backwards:
            return None
        return UnzeroedFinding(backwards[0].node, step, fn, None, True, opts, closure=True)

    def _decide_by_setting(
        self, prog: Program, fn: ir.Function, loop: ir.Loop, inside: list[_Event], reach: "_Reach", reported: frozenset
    ) -> UnzeroedFinding | None:
        """A loop that zeroes on one branch of a setting only: `if args.amp:
        optimizer.zero_grad(); scaler.scale(loss).backward() ... else:
        loss.backward(); optimizer.step()`. The setting goes the same way on
        every iteration (the loop does not assign it), so on its other
        branch the loop never zeroes. Only a setting that chooses between
        ways of training (its branch that zeroes also backpropagates or
        steps): a zeroing that is optional by itself (`if args.zero:`) is
        a choice, not a forgotten call."""
        own = [ev for ev in inside if ev.loops and ev.loops[-1] is loop]
        candidates = sorted(
            {
                s
                for z in own
                if z.kind == _ZERO
                for s in z.settings
                if any(ev.kind in (_BACKWARD, _STEP) and s in ev.settings for ev in own)
            }
        )
        for setting in candidates:
            # (The training on the other branch runs under that setting
            # alone, or none: under another setting too, `if not args.amp:`
            # after `if use_amp:`, the two may be one.)
            f = self._decide_on_other_branch(prog, fn, loop, inside, reach, reported, setting, alone=True)
            if f is not None:
                return f
        return None

    def _decide_on_other_branch(
        self, prog: Program, fn: ir.Function, loop: ir.Loop, inside: list[_Event], reach: "_Reach", reported: frozenset,
        setting: tuple, alone: bool,
    ) -> UnzeroedFinding | None:
        """``_decide`` for the loop's training on the other branch of
        ``setting`` (its test's text, the side taken): the events not on
        ``setting``'s side, its backwards and steps those that run on the
        other side (``alone``: under no other setting). None where nothing
        trains there (`else: continue`)."""
        text, side = setting
        other = (text, not side)
        kept = [
            ev for ev in inside
            if setting not in ev.settings and (ev.kind not in (_BACKWARD, _STEP) or (ev.settings <= {other} if alone else other in ev.settings))
        ]
        if not any(other in ev.settings for ev in kept if ev.kind in (_BACKWARD, _STEP)):
            return None
        f = self._decide(prog, fn, loop, kept, reach, reported)
        return replace(f, setting=other, setting_node=_setting_test(fn, text)) if f is not None else None

    def _other_branches(
        self, prog: Program, fn: ir.Function, loop: ir.Loop, inside: list[_Event], reach: "_Reach", reported: frozenset, f: UnzeroedFinding
    ) -> list[UnzeroedFinding]:
        """The same loop trains on another branch of a setting its finding's
        backward runs under (`if scaler is not None: scaler.scale(loss)
        .backward() ... else: loss.backward(); optimizer.step()`), and
        zeroes there neither: that branch's backward is a finding too (one
        fix per way of training)."""
        back = next((ev for ev in inside if ev.node is f.node), None)
        if back is None:
            return []
        out = []
        for setting in sorted(back.settings):
            g = self._decide_on_other_branch(prog, fn, loop, inside, reach, reported, setting, alone=False)
            if g is not None and g.node is not f.node:
                out.append(g)
        return out

    def _anchored(self, prog: Program, f: UnzeroedFinding, loop: ir.Loop, events: list[_Event]) -> UnzeroedFinding:
        """The finding reported at the zeroing that runs once before the
        loop (in the function, outside the loop, before it, in the loops
        around it or in none), which is what to move into it."""
        if f.setting is not None:
            return f
        order = prog.node_order
        around = next((ev.loops[: ev.loops.index(loop)] for ev in events if loop in ev.loops), ())
        # (Where the loop starts: its first event; a statement has no order.)
        start = min(order(ev.node) for ev in events if loop in ev.loops)
        before = [
            z
            for z in events
            if z.kind == _ZERO and z.loops == around and order(z.node) < start and (self._zeroes(prog, z, f.opts, shown=True) if f.opts else not z.opts and not z.modules)
        ]
        if not before:
            return f
        return replace(f, zeroed_before=max(before, key=lambda z: order(z.node)).node)

    def _zeroes(self, prog: Program, z: _Event, opts: frozenset, shown: bool = False) -> bool:
        """Zeroing ``z`` zeroes the gradients of (one of) the optimizers
        ``opts``: zeroes all (not shown what), one of them, or a module
        one of them updates (or may: its parameters are not shown).
        ``shown``: only where that is shown (not what may be)."""
        if not z.opts and not z.modules:
            return not shown
        if z.opts & opts:
            return True
        for o in opts:
            updated = self.steps.updates.get(o, frozenset())
            if z.modules and (not updated or any(updates_module(prog, updated, m) for m in z.modules)):
                return not shown or bool(updated)
        return False


class _Reach:
    """What a list of events does, the functions of this module they call
    included (each function's events, wherever they run in it)."""

    def __init__(self, events: dict[int, list[_Event]]) -> None:
        self.events = events

    def all(self, start: list[_Event]) -> list[_Event]:
        """``start`` and what the functions it calls do. A backward or a
        step inside a loop of the function called belongs to that loop
        (`train_one_epoch` iterates itself, `main()`'s epochs around it do
        not make another training loop); any zeroing counts wherever."""
        out = list(start)
        seen: set[int] = set()
        todo = [ev.callee for ev in start if ev.kind == _CALLS and ev.callee is not None]
        while todo:
            f = todo.pop()
            if f in seen:
                continue
            seen.add(f)
            for ev in self.events.get(f, ()):
                if ev.kind in (_BACKWARD, _STEP, _STEP_OF_UNKNOWN) and ev.loops:
                    continue
                out.append(ev)
                if ev.kind == _CALLS and ev.callee is not None:
                    todo.append(ev.callee)
        return out


def _depth(events: list[_Event], loop: ir.Loop) -> int:
    return max((ev.loops.index(loop) for ev in events if loop in ev.loops), default=0)


def _within(events: list[_Event], inner: object, outer: ir.Loop) -> bool:
    """The loop at ``inner`` (a node) runs inside ``outer``."""
    return any(outer in ev.loops and any(lp.node is inner for lp in ev.loops[ev.loops.index(outer) + 1 :]) for ev in events)


def _module_loc(run: Run, c: ir.Call) -> Loc | None:
    func = c.func
    if type(func) is not ir.Attr:
        return None
    base = func.value  # type: ignore[attr-defined]
    return run.root_loc(base) if type(base) in (ir.Name, ir.Attr) else None


def _touches_grad(c: ir.Call) -> bool:
    """A gradient written by hand (``p.grad.zero_()``, ``p.grad.data.fill_(0)``):
    the receiver is read through a leaf's ``grad``."""
    e: ir.Expr | None = c.func.value if type(c.func) is ir.Attr else None  # type: ignore[attr-defined]
    while type(e) is ir.Attr:
        if member(TENSOR, e.attr, attribute=True).leaf_only:  # type: ignore[attr-defined]
            return True
        e = e.value  # type: ignore[attr-defined]
    return False


def _a_parameter(v: Value | None) -> bool:
    """A parameter of the function, as its callers give it (none here
    shows what): not an instance of a class another module defines, whose
    own `step()` may zero (a project's optimizer wrapper)."""
    return bool(v) and all(type(f) is Sym and type(f.root) is ParamRoot and not f.path for f in v)  # type: ignore[union-attr]


def _setting_test(fn: ir.Function, text: str) -> object | None:
    """The syntax node of the first `if` test of ``fn`` on the setting
    ``text`` (`args.amp`, also under `not`): where the message names it."""
    for st in ir.statements(fn.body):
        if type(st) is ir.If:
            test = st.test.operand if type(st.test) is ir.UnaryOp and st.test.op == "not" else st.test  # type: ignore[attr-defined]
            if ir.dotted(test) == text:
                return test.node
    return None


def _closure_of(run: Run, v: Value) -> int | None:
    """The function of this module ``v`` is (a closure handed to a step)."""
    fns = [f for f in v if type(f) is FunctionObj and f.fn.file == run.prog.file]
    if len(fns) != 1 or len(v) != 1:
        return None
    hit = run.prog.fn_by_qualname.get(fns[0].fn.qualname)
    return hit.index if hit is not None else None


def _holds_optimizer(v: Value | None) -> bool:
    return any(type(f) is OptimizerKind for f in v or ())


def _module_or_self(f: object) -> bool:
    """A fact that says a module or ``self`` is handed over."""
    t = type(f)
    return t in (Module, Instance) or (t is Sym and type(f.root) is InstanceRoot)  # type: ignore[attr-defined]


def _may_zero(run: Run, e: CallEvent) -> bool:
    """A call of code this module does not show (the interpreter's
    verdict: a call on a symbol, or one it knows nothing of) that may zero
    the gradients: handed the optimizer; or, made for its effects (its
    result unused), handed a module or ``self``, or a method of ``self``.
    (A call whose result is used, `loss = compute_loss(model, batch)`, is
    made for that value.) A method of an optimizer the API model does not
    name may too."""
    row = e.resolved.row(OPTIMIZER)
    if row is not None:
        return not row.pure
    if e.resolved.pure or (e.resolved.module_own and any(type(f) in (Module, Instance) for f in e.receiver or ())):
        return False  # (`model.train()`, `x.detach()`: what the API model says it does)
    outcome = e.outcome
    # (A method of a module of unseen class given only numbers says only
    # that it may run the model: what else it does is not known.)
    known = [x for x in outcome.effects if x is not MAY_RUN_MODULE]
    if (outcome.value or known) and not any(type(x) is SymCall for x in known):
        return False
    if any(_holds_optimizer(a) for a in e.args) or _holds_optimizer(e.receiver):
        return True
    if not e.discarded:
        return False
    callee = e.callee or frozenset()
    if any(type(f) is Sym and (type(f.root) is InstanceRoot or (type(f.root) is ParamRoot and f.root.index == 0 and run.fn.cls is not None)) for f in callee):
        return True
    return any(_module_or_self(f) for a in e.args for f in a) or any(_module_or_self(f) for f in e.receiver or ())
