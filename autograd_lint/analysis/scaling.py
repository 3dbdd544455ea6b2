"""Gradients read while a GradScaler still has them scaled (AGL505).

``scaler.scale(loss).backward()`` leaves every gradient multiplied by the
scale (65536 at first). ``scaler.step(opt)`` divides them back before it
steps, unless ``scaler.unscale_(opt)`` already did. A clip
(``clip_grad_norm_``, ``clip_grad_value_``) or a norm of ``p.grad`` taken
between the two sees the scaled values: the clip cuts a norm ``scale``
times too large down to ``max_norm``, and the step that follows is
``scale`` times too small, with no error.

An observer of the calls. What a scaler is comes from the values
(``ScalerKind``: made by ``GradScaler(...)``, here or in an attribute set
elsewhere); what its members do from the API rows (``scales``,
``unscales``, ``steps``). The frame state (joined at branches, so an
``unscale_`` on one branch does not cover the other) holds the scalers
whose gradients are scaled and the reads made since; a read becomes a
finding when that scaler's ``step`` follows it on the same path.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from autograd_lint.analysis import ir
from autograd_lint.analysis import torch_api as lib
from autograd_lint.analysis.api import SCALER, TENSOR, Gives, member
from autograd_lint.analysis.observer import CallEvent, Observer, Run, settings_of
from autograd_lint.analysis.steps import called_here
from autograd_lint.analysis.values import ScalerKind, Value


@dataclass(frozen=True, slots=True)
class _Read:
    """A read of the gradients while ``scalers`` had them scaled."""

    node: object  # the clip or norm call
    scalers: frozenset
    clip: bool  # a clip (else a norm taken)
    unscaled_after: bool = False  # an `unscale_` of its scaler came between it and the step
    # (scaler, flags): an `unscale_` of that scaler ran before it on the
    # paths where those flags hold (`if use_amp: scaler.unscale_(opt)`).
    unscaled_if: frozenset = frozenset()


@dataclass(frozen=True, slots=True)
class _State:
    scaled: frozenset  # of ScalerKind
    reads: frozenset  # of _Read
    # Reads made before this function scaled anything: scaled if its caller
    # left the gradients scaled (`step()` after `backward()`, two methods);
    # their ``scalers``: those this function had unscaled before the read.
    entry: frozenset = frozenset()  # of _Read
    cleared: frozenset = frozenset()  # scalers this function unscaled before scaling any
    # (scaler, the flags the scaled backward ran under): a read under the
    # opposite of one of them cannot see it (`if use_amp: scaler.scale(loss)
    # .backward() else: loss.backward()` ... `else: clip(...)`).
    under: frozenset = frozenset()
    # (scaler, flags): unscaled under those flags since it was scaled.
    unscaled_if: frozenset = frozenset()


_EMPTY = _State(frozenset(), frozenset())


@dataclass(frozen=True, slots=True)
class ScaledRead:
    """AGL505: ``node`` reads gradients that ``step`` (``scaler.step(opt)``)
    then unscales. ``backward``: the scaled backward before it."""

    node: object
    step: object
    clip: bool
    # An `unscale_` of the scaler runs between the read and the step, or
    # before the read on some paths: one more before the read would raise
    # (it may run once per step).
    unscaled_after: bool
    fn: int


def _scalers(v: Value | None) -> frozenset:
    """The GradScalers a value may be that scale (not built with a literal
    ``enabled=False``)."""
    return frozenset(f for f in v or () if type(f) is ScalerKind and not f.disabled)


def _is_grad(e: ir.Expr) -> bool:
    """`p.grad` (or `p.grad.data`): a gradient buffer."""
    if type(e) is ir.Attr and member(TENSOR, e.attr, attribute=True).gives is Gives.DETACHED:
        e = e.value  # type: ignore[attr-defined]
    return type(e) is ir.Attr and member(TENSOR, e.attr, attribute=True).gives is Gives.GRADIENT  # type: ignore[attr-defined]


def _seen(state: _State, flags: frozenset) -> frozenset:
    """The scalers whose scaled backward a statement under ``flags`` may
    come after: not one that ran only under the opposite of one of them."""
    out = set()
    for sc in state.scaled:
        under = [f for s, f in state.under if s == sc]
        if not under or any(not any((text, not side) in flags for text, side in f) for f in under):
            out.add(sc)
    return frozenset(out)


class Scaling(Observer):
    def __init__(self) -> None:
        self._scale_calls: dict[int, frozenset] = {}  # id(`scaler.scale(...)` node) -> its scalers
        self._scale_flags: dict[int, frozenset] = {}  # id(`scaler.scale(...)` node) -> the flags it runs under
        self.found: dict[int, ScaledRead] = {}
        # What this module's functions tell their callers: the scalers whose
        # gradients they leave scaled, and the reads they make before a
        # step of theirs (scaled if the caller's were): (read, step, clip,
        # unscaled between, the scalers stepped).
        self.exit_scaled: dict[int, frozenset] = {}
        self.entry_reads: dict[int, set] = {}

    def join_state(self, a: object, b: object) -> object:
        assert isinstance(a, _State) and isinstance(b, _State)
        return _State(a.scaled | b.scaled, a.reads | b.reads, a.entry | b.entry, a.cleared & b.cleared, a.under | b.under, a.unscaled_if | b.unscaled_if)

    def forget(self, fn: int) -> None:
        self.found = {k: f for k, f in self.found.items() if f.fn != fn}
        self.entry_reads.pop(fn, None)

    def end(self, run: Run) -> None:
        state = run.frame.observed.get(self)
        if state is not None and state.scaled:
            self.exit_scaled[run.index] = self.exit_scaled.get(run.index, frozenset()) | state.scaled

    def call(self, run: Run, e: CallEvent) -> None:
        c = e.call
        rc = e.resolved
        for callee, _ in called_here(run, e):
            self._callee(run, callee)
        row = rc.row(SCALER)
        scalers = _scalers(e.receiver) if row is not None else frozenset()
        if row is not None and scalers:
            if row.scales:
                self._scale_calls[id(c.node)] = scalers
                self._scale_flags[id(c.node)] = settings_of(run)
            elif row.unscales:
                self._unscale(run, c.node, scalers, steps=row.steps)
            return
        if rc.backward and type(c.func) is ir.Attr:
            inner = c.func.value  # type: ignore[attr-defined]
            scaled = self._scale_calls.get(id(inner.node)) if type(inner) is ir.Call else None
            if scaled:
                state = run.frame.observed.get(self) or _EMPTY
                flags = self._scale_flags.get(id(inner.node), frozenset())
                run.frame.observed[self] = replace(
                    state, scaled=state.scaled | scaled, under=state.under | {(sc, flags) for sc in scaled},
                    unscaled_if=frozenset(u for u in state.unscaled_if if u[0] not in scaled),
                )
            return
        clip = e.qual in lib.GRADIENT_CLIPS
        norm = (e.qual in lib.GRADIENT_NORMS and bool(c.positional()) and _is_grad(c.positional()[0])) or (
            rc.norm and e.qual is None and type(c.func) is ir.Attr and _is_grad(c.func.value)  # type: ignore[attr-defined]
        )
        if not (clip or norm):
            return
        state = run.frame.observed.get(self) or _EMPTY
        scaled = _seen(state, settings_of(run))
        if scaled:
            read = _Read(c.node, scaled, clip, unscaled_if=frozenset(u for u in state.unscaled_if if u[0] in scaled))
            run.frame.observed[self] = replace(state, reads=state.reads | {read})
        elif not run.fn.is_module:
            run.frame.observed[self] = replace(state, entry=state.entry | {_Read(c.node, state.cleared, clip)})

    def _callee(self, run: Run, callee: int) -> None:
        """A call of one of this module's functions: the reads it makes
        before its step are of scaled gradients when they are here; what it
        leaves scaled is scaled here after it."""
        state = run.frame.observed.get(self) or _EMPTY
        for read, step, clip, after, scalers in sorted(self.entry_reads.get(callee, ()), key=lambda r: id(r[0])):
            if state.scaled & scalers:  # (`scalers`: stepped after the read, and not unscaled before it)
                old = self.found.get(id(read))
                self.found[id(read)] = ScaledRead(read, step, clip, after or (old is not None and old.unscaled_after), callee)
        left = self.exit_scaled.get(callee)
        if left:
            run.frame.observed[self] = replace(state, scaled=state.scaled | left)

    def _unscale(self, run: Run, node: object, scalers: frozenset, steps: bool) -> None:
        """``unscale_`` (or ``step``, which unscales first) of ``scalers``:
        their gradients are true again; a ``step`` reports the reads made
        while they were scaled."""
        state = run.frame.observed.get(self) or _EMPTY
        if state.entry:
            if steps:
                found = self.entry_reads.setdefault(run.index, set())
                found.update((r.node, node, r.clip, r.unscaled_after, scalers - r.scalers) for r in state.entry if scalers - r.scalers)
                entry = frozenset()
            else:
                entry = frozenset(_Read(r.node, r.scalers, r.clip, True) for r in state.entry)
            state = replace(state, entry=entry)
        if not steps and not (state.scaled & scalers):
            state = replace(state, cleared=state.cleared | scalers)
        mine = {r for r in state.reads if r.scalers & scalers}
        flags = settings_of(run)
        if steps:
            for r in mine:
                if any(sc in scalers and f <= flags for sc, f in r.unscaled_if):
                    # The step runs only where the flags an `unscale_`
                    # before the read ran under hold (`if amp: unscale_`
                    # ... `if amp: scaler.step(opt) else: opt.step()`):
                    # on its paths the read saw true gradients.
                    continue
                key = id(r.node)
                old = self.found.get(key)
                # (An `unscale_` before the read on some paths counts too:
                # one more there would raise, so no `unscale_` is added.)
                after = r.unscaled_after or bool(r.unscaled_if) or (old is not None and old.unscaled_after)
                self.found[key] = ScaledRead(r.node, node, r.clip, after, run.index)
            reads = state.reads - mine
        else:
            reads = (state.reads - mine) | {_Read(r.node, r.scalers, r.clip, True, r.unscaled_if) for r in mine}
        unscaled_if = state.unscaled_if
        if not steps and flags:
            unscaled_if = unscaled_if | {(sc, flags) for sc in scalers}
        run.frame.observed[self] = replace(
            state, scaled=state.scaled - scalers, reads=frozenset(reads), under=frozenset(u for u in state.under if u[0] not in scalers), unscaled_if=unscaled_if
        )
