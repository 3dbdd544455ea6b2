"""Activation checkpointing that recomputes random draws without the RNG
state (AGL305).

``checkpoint(fn, x, preserve_rng_state=False)`` runs ``fn`` in the forward,
keeps nothing, and runs it again in the backward. The flag skips stashing
and restoring the random number generator's state, which is right only
when ``fn`` draws nothing: a dropout inside it draws a new mask in the
recomputation, so the backward differentiates a different forward from the
one that produced the loss. Nothing raises; the gradients are wrong (the
study measured them 104% off).

An observer of the calls. The evidence, all of it needed:

- a checkpoint call (``torch_api.CHECKPOINT_FUNCTIONS``) with a literal
  ``preserve_rng_state=False``, run with grad on (under ``no_grad`` it
  recomputes nothing);
- what it checkpoints is seen: an instance of a class of this file, a
  function of this file, or a method bound to such an instance;
- that code draws random numbers when it runs: it calls a function listed
  in ``torch_api.RANDOM_DRAWS`` shown to draw (a drop probability that is a
  non-zero literal, or a non-zero default), or runs a module built to draw
  (``self.drop = nn.Dropout(0.1)``: the module value says so), in its own
  body or in the code of this file it runs (an instance's ``forward``, a
  function, a method of ``self``).

A probability read from a variable (``nn.Dropout(config.dropout)``) shows
nothing; neither does code in another module: no finding.
"""

from __future__ import annotations

from dataclasses import dataclass

from autograd_lint.analysis import ir
from autograd_lint.analysis import torch_api as lib
from autograd_lint.analysis.observer import CallEvent, Observer, Program, Run
from autograd_lint.analysis.resolve import Condition
from autograd_lint.analysis.values import FunctionObj, GradMode, Instance, Module, Ref, Value


@dataclass(frozen=True, slots=True)
class RecomputeFinding:
    node: object  # the checkpoint call
    draw: object  # a call that draws random numbers in what it recomputes (the checkpoint call: a layer it holds)
    draw_name: str  # that call's or layer's library name (`torch.nn.Dropout`)
    conditions: tuple[Condition, ...] = ()


@dataclass(frozen=True, slots=True)
class _Candidate:
    fn: int
    node: object
    targets: frozenset  # of Ref: the classes and functions it recomputes
    conditions: tuple[Condition, ...]
    holds: str | None = None  # the checkpointed module itself holds a layer that draws (its class)


def _draws(c: ir.Call, spec: lib.RandomDraw | None) -> bool:
    pos = c.positional()

    def arg(position: int, keyword: str) -> tuple[bool, object]:
        e = c.keyword(keyword)
        if e is None and position < len(pos):
            e = pos[position]
        if e is None:
            return c.has_star, None
        return True, e.value if type(e) is ir.Const else None

    return lib.shown_to_draw(spec, arg)


def _runs(v: Value) -> set[Ref]:
    """The code of this analysis that calling ``v`` runs: an instance's class
    (its ``forward``), a function or a bound method, the blocks of a
    container module or of the layer taken out of one."""
    out: set[Ref] = set()
    for f in v:
        t = type(f)
        if t is Instance:
            out.add(f.cls)
        elif t is FunctionObj:
            out.add(f.fn)
        elif t is Module:
            out |= f.runs
    return out


def _forward(prog: Program, cls: ir.Class, depth: int = 0) -> ir.Function | None:
    hit = cls.methods.get("forward")
    if hit is not None or depth > 8:
        return hit
    return next((f for b in prog.in_file_bases(cls) if (f := _forward(prog, b, depth + 1)) is not None), None)


class Recomputes(Observer):
    """AGL305: a checkpoint told not to restore the RNG state, around code
    that draws random numbers."""

    def __init__(self) -> None:
        # Function index -> the first call in it that draws (the call node, its name).
        self.draws: dict[int, tuple[object, str]] = {}
        # Function index -> the classes (their forward) and functions of this file it calls.
        self.uses: dict[int, set[Ref]] = {}
        self.candidates: list[_Candidate] = []
        self.found: list[RecomputeFinding] = []

    def forget(self, fn: int) -> None:
        self.draws.pop(fn, None)
        self.uses.pop(fn, None)
        self.candidates = [c for c in self.candidates if c.fn != fn]

    def call(self, run: Run, e: CallEvent) -> None:
        qual = e.qual
        c = e.call
        if qual in lib.RANDOM_DRAWS and not any(type(f) is Module for f in e.outcome.value):
            if _draws(c, lib.RANDOM_DRAWS[qual]):
                self.draws.setdefault(run.index, (c.node, qual))
            return
        if e.method is None or e.resolved.forward:
            built = next((f for f in (e.callee if e.method is None else e.receiver or ()) if type(f) is Module and f.draws), None)
            if built is not None:
                self.draws.setdefault(run.index, (c.node, built.qual or "a dropout"))
                return
        if qual in lib.CHECKPOINT_FUNCTIONS:
            flag = c.keyword("preserve_rng_state")
            if type(flag) is ir.Const and flag.value is False and e.at.grad is not GradMode.OFF and e.args:
                held = next((f for f in e.args[0] if type(f) is Module and f.draws), None)
                if held is not None:
                    # A Sequential holding a dropout (`checkpoint_sequential(self.layers, ...)`).
                    self.candidates.append(_Candidate(run.index, c.node, frozenset(), tuple(run.prog.conditions_at(e.at)), held.qual or "Dropout"))
                    return
                targets = frozenset(_runs(e.args[0]))
                if not targets:
                    # A function or method named where it is passed
                    # (`checkpoint(self._attend, x)`), as a hook is.
                    hit = run.prog.hook_function(c.positional()[0], run.fn) if c.positional() else None
                    targets = frozenset({run.prog.fn_ref[hit[0].index]}) if hit is not None else frozenset()
                if targets:
                    self.candidates.append(_Candidate(run.index, c.node, targets, tuple(run.prog.conditions_at(e.at))))
            return
        used = _runs(e.callee) if e.method is None else _runs(e.callee) | (_runs(e.receiver or frozenset()) if e.resolved.forward else set())
        if used:
            self.uses.setdefault(run.index, set()).update(used)

    def finish(self, prog: Program) -> None:
        # What running a class or function of this file runs: a function's
        # body; an instance's forward (its class's or an in-file base's).
        fn_of: dict[Ref, list[int]] = {}
        for index, ref in prog.fn_ref.items():
            fn_of.setdefault(ref, []).append(index)
        for cls in prog.ir.classes:
            forward = _forward(prog, cls)
            if forward is not None:
                fn_of.setdefault(prog.class_ref[cls.id], []).append(forward.index)

        def first_draw(targets: frozenset) -> tuple[object, str] | None:
            seen: set[Ref] = set()
            todo = sorted(targets, key=lambda r: r.qualname)
            while todo:
                ref = todo.pop(0)
                if ref in seen:
                    continue
                seen.add(ref)
                for index in sorted(fn_of.get(ref, ())):
                    hit = self.draws.get(index)
                    if hit is not None:
                        return hit
                    todo.extend(sorted(self.uses.get(index, set()) - seen, key=lambda r: r.qualname))
            return None

        found: dict[int, RecomputeFinding] = {}
        for c in self.candidates:
            hit = (c.node, c.holds) if c.holds is not None else first_draw(c.targets)
            if hit is not None and id(c.node) not in found:
                found[id(c.node)] = RecomputeFinding(c.node, hit[0], hit[1], c.conditions)
        self.found = list(found.values())
