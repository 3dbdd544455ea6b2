"""Grad-mode blocks and guards: AGL302 (a ``no_grad`` block that could be
``inference_mode``) and AGL303 (a grad-mode guard that guards nothing).

Two observers of the interpreter. ``NoGradBlocks`` follows what each
``torch.no_grad()`` block computes, to see whether any of it meets autograd
afterwards. ``IneffectiveGuards`` hears calls whose value is a grad-mode
context dropped on the floor, and ``volatile=True``. (AGL301, a model run
with grad on where nothing backpropagates, is ``evaluation.py``'s.)
"""

from __future__ import annotations

from dataclasses import dataclass, field

from autograd_lint.analysis import ir
from autograd_lint.analysis import torch_api as api
from autograd_lint.analysis.interp import Run
from autograd_lint.analysis.observer import Accumulate, CallEvent, Mutation, Observer, Store
from autograd_lint.analysis.state import Local, Loc, base_loc
from autograd_lint.analysis.values import Container, GradContext, GradMode, Value, tensorish


@dataclass(eq=False)
class NoGradBlock:
    """A ``with torch.no_grad():`` block (or a function decorated with it)."""

    fn: ir.Function
    node: object  # the With statement or the decorator
    written: set = field(default_factory=set)  # locations bound or updated inside
    created: set = field(default_factory=set)  # locations bound inside to new values
    escapes: bool = False  # returns a value or stores onto self/module state
    writes_outer: bool = False  # writes in place a tensor made outside
    reached: bool = False  # something it computed is later used with grad on


class NoGradBlocks(Observer):
    """AGL302: ``no_grad`` blocks whose results never meet autograd."""

    def __init__(self) -> None:
        self.blocks: dict[int, NoGradBlock] = {}  # by id of the node: a later run replaces an earlier
        self._open: list[NoGradBlock] = []
        # location -> the finished blocks whose results it holds
        self.taint: dict[Loc, tuple[NoGradBlock, ...]] = {}
        self._run: Run | None = None

    def start(self, run: Run) -> None:
        self._run = run
        self._open = []
        self.taint = {}

    def forget(self, fn: int) -> None:
        self.blocks = {k: b for k, b in self.blocks.items() if b.fn.index != fn}

    def enter_grad_block(self, run: Run, node: object, source: str) -> object:
        b = NoGradBlock(run.fn, node)
        self._open.append(b)
        return b

    def exit_grad_block(self, run: Run, token: object) -> None:
        b = token
        assert isinstance(b, NoGradBlock)
        if self._open and self._open[-1] is b:
            self._open.pop()
        self.blocks[id(b.node)] = b
        for k in b.written:
            self.taint[k] = self.taint.get(k, ()) + (b,)
        if self._open:  # an outer block sees what the inner one did
            outer = self._open[-1]
            outer.written |= b.written
            outer.escapes |= b.escapes
            outer.writes_outer |= b.writes_outer

    # -- inside blocks, and after them ------------------------------------------------

    def bind(self, run: Run, loc: Loc, value: Value, sources: frozenset, alias: bool) -> None:
        if self._open:
            b = self._open[-1]
            b.written.add(loc)
            # A loop target or an alias names an existing tensor, not a new one.
            if not alias:
                b.created.add(loc)
        elif self.taint:
            blocks = tuple({x for s in map(base_loc, sources) if s in self.taint for x in self.taint[s]})
            if blocks:
                self.taint[loc] = blocks
            else:
                self.taint.pop(loc, None)

    def store(self, run: Run, e: Store) -> None:
        self._kept(run, e.container, e.sources)

    def accumulate(self, run: Run, e: Accumulate) -> None:
        self._kept(run, e.target, e.sources)

    def _kept(self, run: Run, k: Loc, sources: frozenset) -> None:
        local = type(k) is Local and k.fn == run.index
        if self._open:
            b = self._open[-1]
            # Stores into self/module state or into the caller's objects
            # (`module._parameters[name] = value`) keep what the block made.
            if not local or k.name in run.fn.param_names:
                b.escapes = True
            b.written.add(k)
        elif self.taint and not local:
            self._use(run, sources, always=False)

    def returned(self, run: Run, value: Value, sources: frozenset) -> None:
        if self._open:
            # What it returns may reach autograd in a caller; integer and bool
            # tensors (`labels`, `x > t`) look like numbers here, so any
            # returned value counts.
            if value:
                self._open[-1].escapes = True
        elif self.taint:
            self._use(run, sources, always=False)

    def mutate(self, run: Run, e: Mutation) -> None:
        if self._open and e.loc is not None and e.loc not in self._open[-1].created:
            # A tensor method (`p.mul_()`) always writes tensor memory; `n += 1`
            # or `d[k] = v` only when n/d is known to be a tensor.
            if e.how.endswith("()") or e.how == "out=" or e.how.endswith("(inplace=True)") or tensorish(e.facts):
                self._open[-1].writes_outer = True
        if self.taint and e.loc is not None:
            self._use(run, frozenset({e.loc}), always=False)

    def call(self, run: Run, e: CallEvent) -> None:
        if self._open:
            b = self._open[-1]
            name = ir.dotted(e.call.func)
            # `init.zeros_(module.bias)`: a trailing `_` writes in place.
            if name and name.endswith("_") and not name.endswith("__"):
                b.writes_outer = True
            # `convert_model(model)`: a call made for its effect on the
            # function's own arguments may rewrite them.
            if e.discarded and e.method is None and any(type(s) is Local and s.fn == run.index and s.name in run.fn.param_names for s in map(base_loc, e.arg_sources)):
                b.writes_outer = True
            return
        if not self.taint:
            return
        if e.resolved.backward:
            self._use(run, e.sources, always=True)
        elif e.at.grad is not GradMode.OFF and e.outcome.value and not all(type(f).__name__ == "Plain" for f in e.outcome.value):
            self._use(run, e.sources, always=False)

    def _use(self, run: Run, sources: frozenset, always: bool) -> None:
        """A value a no_grad block computed meets autograd (an op with grad
        on, a return, a store on self): that block needs `no_grad`. Python
        numbers the block produced (`total += loss.item()`) do not count."""
        for k in map(base_loc, sources):
            blocks = self.taint.get(k)
            if not blocks:
                continue
            v = run.read(k)
            # (A list of what the block computed, returned or kept, is too.)
            if always or tensorish(v) or any(type(f) is Container and tensorish(f.all_values()) for f in v):
                for b in blocks:
                    b.reached = True

    def findings(self) -> list[NoGradBlock]:
        # Anything it returns, keeps on self, writes in place or later feeds
        # to an op with grad on would break as an inference tensor.
        return [b for b in self.blocks.values() if not (b.escapes or b.writes_outer or b.reached)]


@dataclass(frozen=True, slots=True)
class IneffectiveGuard:
    """A grad-mode switch that switches nothing: ``torch.no_grad()`` as a
    statement (a context manager made and dropped), ``Variable(x,
    volatile=True)`` (ignored since torch 0.4). ``what``: as written."""

    node: object
    fn: ir.Function
    what: str
    volatile: bool


class IneffectiveGuards(Observer):
    """AGL303: grad-mode guards that do not guard."""

    def __init__(self) -> None:
        self.found: dict[int, IneffectiveGuard] = {}

    def forget(self, fn: int) -> None:
        self.found = {k: g for k, g in self.found.items() if g.fn.index != fn}

    def call(self, run: Run, e: CallEvent) -> None:
        c = e.call
        if e.discarded:
            # `torch.set_grad_enabled(False)` switches as a statement too;
            # the others only in a `with` or as a decorator.
            ctx = [f for f in e.outcome.value if type(f) is GradContext and f.mode is not None and f.source not in api.SWITCHES_AS_STATEMENT]
            if ctx:
                self.found.setdefault(id(c.node), IneffectiveGuard(c.node, run.fn, f"{ir.dotted(c.func) or ctx[0].source}()", False))
            return
        # (The name first: a qualified name costs a lookup, and this hears
        # every call.)
        last = c.func.attr if type(c.func) is ir.Attr else c.func.id if type(c.func) is ir.Name else None
        if last == api.VARIABLE_NAME and e.qual in api.VARIABLE:
            flag = c.keyword(api.VOLATILE)
            if type(flag) is ir.Const and flag.kind == "bool" and flag.value:
                self.found.setdefault(id(c.node), IneffectiveGuard(c.node, run.fn, f"{ir.dotted(c.func) or 'Variable'}(..., volatile=True)", True))

    def findings(self) -> list[IneffectiveGuard]:
        return list(self.found.values())
