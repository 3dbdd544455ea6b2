"""What the interpreter tells the rule families, and how they listen.

Each family (retention, in-place, evaluation, zeroing) is an ``Observer``:
the interpreter calls its hooks while it runs the module's functions for
the last time, with an event describing what happened and what the
analysis knew there; after the run the family decides. An observer never
re-walks the tree or keeps its own copy of values or grad mode; one that
needs flow-sensitive state of its own (the ``.eval()`` in force) keeps it in
the frame (``run.frame.observed[self]``) and says how two such states join.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from autograd_lint.analysis import ir
from autograd_lint.analysis.callee import NO_CALLEE, Callee
from autograd_lint.analysis.resolve import Condition
from autograd_lint.analysis.state import Frame, Loc
from autograd_lint.analysis.outcome import Outcome
from autograd_lint.analysis.values import GradMode, Value
from autograd_lint.slotted import construct_fast


class Run(Protocol):
    """What an observer may read of the run it listens to (interp.Run)."""

    fn: ir.Function
    index: int
    frame: Frame
    forced: bool
    prog: Any  # interp.Program
    guards: list[ir.Expr]  # the tests of the `if` statements around the statement running
    sides: list[bool]  # for each guard: in its `if` branch (True) or its `else` (False)
    # The loops around it, innermost last (records._LoopContext: what this
    # iteration has bound so far, the loop's facts).
    loops: list[Any]

    def read(self, loc: Loc) -> Value: ...

    def root_loc(self, e: ir.Expr | None) -> Loc | None: ...


Program = Any  # interp.Program (interp imports this module, not the other way)


def settings_of(run: Run) -> frozenset[tuple[str, bool]]:
    """The settings the running statement is guarded by, with the branch
    taken: `("use_amp", True)` inside `if use_amp:`, `("args.amp", False)`
    in its `else`, `("scaler", True)` inside `if scaler is not None:`.
    Only a name or an attribute path the loops around do not assign: a
    setting that goes the same way every iteration."""
    out = set()
    for test, side in zip(run.guards, run.sides):
        if type(test) is ir.UnaryOp and test.op == "not":  # type: ignore[attr-defined]
            test, side = test.operand, not side  # type: ignore[attr-defined]
        if type(test) is ir.Compare and len(test.ops) == 1 and test.ops[0] in ("is", "is not") and type(test.comparators[0]) is ir.Const and test.comparators[0].value is None:
            # `if scaler is not None:`: the setting is whether it is given.
            test, side = test.left, side is (test.ops[0] == "is not")
        text = ir.dotted(test)
        if text is None:
            continue
        loc = run.root_loc(test) if type(test) in (ir.Name, ir.Attr) else None
        if loc is not None and any(loc in lc.written for lc in run.loops):
            continue
        out.add((text, side))
    return frozenset(out)


@dataclass(frozen=True, slots=True)
class Point:
    """Where an event happened and the grad mode in force: ``grad`` as far
    as this function shows, ``conds`` what must hold besides."""

    fn: ir.Function
    node: object
    loops: tuple[ir.Loop, ...]
    grad: GradMode
    conds: tuple[Condition, ...]
    branch: int  # depth of if/else/try branches around it


@dataclass(frozen=True, slots=True)
class Store:
    """A value put into a container: ``c.append(v)``, ``c[k] = v``,
    ``self.x = v`` (``attribute``), a comprehension over a loop."""

    at: Point
    container: Loc
    container_text: str
    value: Value
    sources: frozenset
    value_node: object
    how: str  # "append", "extend", "insert", "setdefault", "add", "update", "subscript", "attribute", "comprehension"
    overwrites: bool  # a fixed key or an attribute: one slot, replaced each time


@dataclass(frozen=True, slots=True)
class Accumulate:
    """``t += v``, ``t = t + v``, ``d[k] += v``."""

    at: Point
    target: Loc
    target_text: str
    value: Value
    sources: frozenset
    value_node: object


@dataclass(frozen=True, slots=True)
class Keep:
    """A helper keeps an argument beyond the call (a meter's ``update``):
    ``kind`` "store" or "accumulate", into ``container`` of the caller.
    ``deferred``: the helper is in another module and may not keep it at
    all; decided once its summary is known."""

    at: Point
    container: Loc | None
    container_text: str
    value: Value
    value_node: object
    kind: str
    via: str  # the helper, for messages
    deferred: tuple = ()  # (callee value, argument index) when not known here


# The ``how`` of the in-place writes an augmented assignment makes
# (interp's ``aug_assign``): also heard as an accumulation when it adds.
AUGMENTED_WRITES = frozenset({"+=", "-=", "*=", "/=", "**=", "@=", "//=", "%=", "op="})


@dataclass(frozen=True, slots=True)
class Mutation:
    """An in-place write, with what was known of the tensor written."""

    at: Point
    path: str  # as written: "y", "self.h"
    loc: Loc | None
    facts: Value
    how: str  # "+=", "[...] =", "mul_()", "ReLU(inplace=True)", "out="
    via: str  # "", "data", "detach"
    in_forward: bool
    rhs: Value  # what is written (the right-hand side), when there is one
    # Where the write was asked for, when not at ``at`` (a layer's
    # `inplace=True`): where it is reported and fixed.
    asked: object = None
    # The expression written, when it is one (`v` in `buf[:] = v`,
    # `buf.add_(v)`): what a fix would detach.
    rhs_node: object = None
    # The tensor is the result of a write just made to it (`add_` in
    # `p.mul_(d).add_(v)`): the same tensor, written again.
    chained: bool = False


@dataclass(frozen=True, slots=True)
class SetAttribute:
    """``x.attr = value`` for an attribute the API model names (one
    assigning sets something else than meant, or one torch fills: a
    leaf's ``grad``), on an object that is not ``self`` being given a
    field of its own:
    ``receiver`` is what ``x`` was known to be there, before the assignment
    (``model.requires_grad = False`` on a module sets a plain attribute;
    ``loss.requires_grad = True`` makes a tensor a new leaf)."""

    at: Point
    receiver: Value
    target: ir.Attr  # `self.encoder.requires_grad`
    value: "ir.Expr | None"


@dataclass(frozen=True, slots=True)
class ReadAttribute:
    """``x.attr`` read, for an attribute the API model says only some
    receivers fill (``grad``, a leaf's only) or that gives a tensor's value
    without its graph (``data``): ``receiver`` is what ``x`` was known to
    be there, ``sources`` where it came from."""

    at: Point
    receiver: Value
    target: ir.Attr
    sources: frozenset = frozenset()


@dataclass(frozen=True, slots=True)
class CallEvent:
    """A call, with what it was resolved to once (``resolved``): families
    ask it what the call does, never compare ``method``, which is kept for
    messages and fixes."""

    at: Point
    call: ir.Call
    callee: Value  # the called value (for a method: the bound attribute's receiver)
    receiver: Value | None
    method: str | None
    args: tuple[Value, ...]
    outcome: Outcome
    sources: frozenset  # what flows into the call (arguments and callee)
    arg_sources: frozenset  # what flows in through the arguments
    discarded: bool  # a statement of its own: made for its effects
    # The library function called, qualified (``torch._foreach_zero_``):
    # computed once, every family reads it.
    qual: str | None = None
    resolved: Callee = NO_CALLEE


class BySite(dict):
    """What runs told, keyed by site, each made by one function's run: a
    dict that also knows which keys each function made, so forgetting a
    function (it runs again) costs its own entries, not a walk over all of
    them (a module of many functions re-run would cost their square). The
    entries left keep their order."""

    def __init__(self, fn_of) -> None:
        super().__init__()
        self._fn_of = fn_of
        self._keys: dict[int, list] = {}

    def __setitem__(self, key, value) -> None:
        old = self.get(key)
        if old is None or self._fn_of(old) != self._fn_of(value):
            self._keys.setdefault(self._fn_of(value), []).append(key)
        super().__setitem__(key, value)

    def forget(self, fn: int) -> None:
        for key in self._keys.pop(fn, ()):
            value = self.get(key)
            if value is not None and self._fn_of(value) == fn:
                del self[key]


class Observer:
    """Hooks default to doing nothing; a family overrides what it needs."""

    def join_state(self, a: object, b: object) -> object:
        return a if a == b else None

    def start(self, run: Run) -> None:
        pass

    def forget(self, fn: int) -> None:
        """Function ``fn`` runs again, knowing more: drop what its earlier
        run told (the grad mode it is entered with may have changed)."""

    def end(self, run: Run) -> None:
        pass

    def store(self, run: Run, e: Store) -> None:
        pass

    def accumulate(self, run: Run, e: Accumulate) -> None:
        pass

    def keep(self, run: Run, e: Keep) -> None:
        pass

    def mutate(self, run: Run, e: Mutation) -> None:
        pass

    def call(self, run: Run, e: CallEvent) -> None:
        pass

    def set_attribute(self, run: Run, e: SetAttribute) -> None:
        pass

    def read_attribute(self, run: Run, e: ReadAttribute) -> None:
        pass

    def bind(self, run: Run, loc: Loc, value: Value, sources: frozenset, alias: bool) -> None:
        """``loc`` is bound; ``alias``: to an existing object (a loop
        target, a plain name or attribute), not a newly computed one."""

    def returned(self, run: Run, value: Value, sources: frozenset) -> None:
        pass

    def enter_grad_block(self, run: Run, node: object, source: str) -> object:
        """A ``with torch.no_grad():`` (or a decorated function) starts; the
        token is given back to ``exit_grad_block``."""
        return None

    def exit_grad_block(self, run: Run, token: object) -> None:
        pass

    def finish(self, prog: Program) -> None:
        """Every function has run: decide."""


construct_fast(globals())
