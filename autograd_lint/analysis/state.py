"""The interpreter's state: typed locations, and frames with one join.

A location names where a value lives: a function's local, a module-level
name, an attribute shared by every instance of a class family (``self.x``
in any method), or an attribute of another location (``obj.x``). Locations
are small typed tuples of distinct shapes (int/str, str, str/str,
tuple/str), so two kinds never compare equal.

A frame holds the values of the locations a run has bound, the grad mode in
force, and the flow-sensitive state of observers; branches fork frames and
``join`` merges them, as mypy's binder does. A frame that ended in
``return``/``raise``/``break``/``continue`` is unreachable and drops out of
joins.
"""

from __future__ import annotations

from typing import Callable, NamedTuple, Union

from autograd_lint.analysis.joins import join, join_paths
from autograd_lint.analysis.values import NOTHING, GradMode, Value


class Local(NamedTuple):
    fn: int  # ir.Function.index
    name: str


class Global(NamedTuple):
    name: str


class ClassAttr(NamedTuple):
    """``self.<attr>`` of a class family (a class and its in-file bases)."""

    family: str  # qualname of the family's root class
    attr: str


class AttrOf(NamedTuple):
    """``<base>.<attr>`` of a local or global object."""

    base: tuple
    attr: str


class Ret(NamedTuple):
    """What a function returns (a node of the flow graph)."""

    fn: int


Loc = Union[Local, Global, ClassAttr, AttrOf]


class _Sink:
    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"<{self.name}>"


# Flow-graph sinks: autograd consumes the value (backward, autograd.grad),
# or it leaves for code the analysis cannot see.
BACKWARD = _Sink("backward")
# The backward of one element of a container (`losses[-1].backward()`): it
# leads on to BACKWARD, but consumes only what that element holds.
ELEMENT_BACKWARD = _Sink("backward of an element")
ESCAPE = _Sink("escape")


class Def(NamedTuple):
    """One binding of a local (a node of the flow graph): what flows out of
    a name read is what its reaching bindings got, so `loss` of a
    validation loop is not the `loss` of the training loop before it."""

    loc: Loc
    node: int  # id of the binding's syntax node


class Handed(NamedTuple):
    """Positional argument ``index`` of the call at ``node`` (a flow node
    with no way out), where the callee is a value of unknown kind taken
    for a module (`update(fabric, loss, opt)` of an imported helper): its
    output is followed from the call, and whether it differentiates what
    it is given is the module that defines it to say
    (``Program.handed``)."""

    node: int  # id of the call's syntax node
    index: int


def base_loc(k: object) -> object:
    """The location a flow node stands for (a binding: its local)."""
    return k.loc if type(k) is Def else k  # type: ignore[attr-defined]


class Frame:
    __slots__ = ("env", "grad", "reachable", "observed", "defs")

    def __init__(self, env: dict | None = None, grad: GradMode = GradMode.ON, observed: dict | None = None, defs: dict | None = None) -> None:
        self.env: dict[Loc, Value] = env if env is not None else {}
        self.grad = grad
        self.reachable = True
        # observer -> its flow-sensitive state (joined with the frame)
        self.observed: dict = observed if observed is not None else {}
        # local -> the bindings of it that reach here (flow nodes)
        self.defs: dict[Loc, frozenset] = defs if defs is not None else {}

    def fork(self) -> "Frame":
        f = Frame(dict(self.env), self.grad, dict(self.observed), dict(self.defs))
        f.reachable = self.reachable
        return f


StateJoin = Callable[[object, object], object]


def join_frames(frames: list[Frame], joins: dict[object, StateJoin], paths: bool = True) -> Frame:
    """The frame after control flow from ``frames`` meets. Frames are forked
    from a common one, so a location bound on some paths only still holds
    its earlier value on the others, and the join sees both."""
    live = [f for f in frames if f.reachable]
    if not live:
        out = frames[0].fork() if frames else Frame()
        out.reachable = False
        return out
    if len(live) == 1:
        return live[0].fork()
    first = live[0]
    env = dict(first.env)
    grad = first.grad
    observed = dict(first.observed)
    defs = first.defs
    for f in live[1:]:
        for k, v in f.env.items():
            old = env.get(k)
            env[k] = v if old is None else join_paths(old, v) if paths else join(old, v)
        grad = grad.join(f.grad) if grad is not f.grad else grad
        for key, state in f.observed.items():
            old = observed.get(key)
            observed[key] = state if old is None else joins[key](old, state)
    if any(f.defs != defs for f in live[1:]):
        # A local bound on some paths only still has its value from before
        # (its entry value, the location itself) on the others.
        keys = set().union(*(f.defs.keys() for f in live))
        defs = {k: frozenset().union(*(f.defs.get(k, frozenset({k})) for f in live)) for k in keys}
    else:
        defs = dict(defs)
    return Frame(env, grad, observed, defs)


def env_get(frame: Frame, loc: Loc) -> Value:
    return frame.env.get(loc, NOTHING)
