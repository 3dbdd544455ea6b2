"""What the analysis knows about a value: its possible kinds and facts.

A value is a frozenset of facts, each a small frozen dataclass; the join of
two values (where branches meet, across call sites) is their union
(joins.py), so a value lists everything it *may* be. The kinds:

- plain Python values: ``NUMBER``, ``STR``, ``BOOL``, ``NONE`` (never carry
  a graph), ``Foreign`` (an array of another framework: NumPy, MXNet...);
- tensors: ``TENSOR`` (known a tensor), ``Graph`` (attached to an autograd
  graph, and where it was made), ``Leaf`` (a leaf that requires grad),
  ``Saved`` (autograd saved it for backward), ``HookArg``;
- ``Container`` (dict/list/tuple/set) with per-key facts where the keys are
  known, and the join of the other elements;
- ``ParamStorage``: a tensor sharing storage with a module's live
  parameters (an element of its ``state_dict()``);
- objects: ``Module``, ``OptimizerKind``, ``ScalerKind``, ``Instance`` / ``ClassObj`` /
  ``FunctionObj`` (of classes and functions the analysis has summaries
  of), ``GradContext`` (a grad-mode context manager or decorator),
  ``Qual`` (an object of a library, by qualified name: ``torch.nn.Linear``);
- symbolic: ``Sym`` - the value of a function parameter or of a name
  imported from another project module, and what was done to it; resolved
  at a call site (parameters) or once the other module's summary is known
  (imports).

An empty value is unknown. Nothing here knows about torch's API; that is
torch_api.py.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Iterable, Union

from autograd_lint.slotted import construct_fast


def pickle_as_calls(namespace: dict[str, Any]) -> None:
    """Pickle every frozen, slotted dataclass defined in ``namespace`` (a
    module's globals) as a call of its class with its fields. Unpickled the
    default way, such an object costs a Python-level ``__setstate__`` that
    looks up its fields: ten times more, for the hundreds of thousands of
    facts a project's summaries hold (the cache, the process pool)."""
    for obj in list(namespace.values()):
        if isinstance(obj, type) and dataclasses.is_dataclass(obj) and obj.__module__ == namespace["__name__"] and "__slots__" in obj.__dict__:
            obj.__reduce__ = _reduce_by(tuple(f.name for f in dataclasses.fields(obj) if f.init))  # type: ignore[method-assign]


def _reduce_by(names: tuple[str, ...]):
    def __reduce__(self):
        return type(self), tuple([getattr(self, n) for n in names])

    return __reduce__

class GradMode(Enum):
    ON = "on"
    OFF = "off"
    MAYBE = "maybe"  # e.g. torch.set_grad_enabled(is_train): on in some runs

    def join(self, other: "GradMode") -> "GradMode":
        return self if self is other else GradMode.MAYBE


# -- plain values ---------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Plain:
    """A Python number, string, bool or None: never attached to a graph."""

    kind: str  # "number", "str", "bool", "none"


NUMBER = Plain("number")
STR = Plain("str")
BOOL = Plain("bool")
NONE = Plain("none")
META = Plain("meta")  # a dtype, a device, a grad_fn: never a tensor


@dataclass(frozen=True, slots=True)
class Foreign:
    """A value of another array framework (``numpy``, ``mxnet``...): not a
    torch tensor, whatever is done to it."""

    lib: str


# -- tensors --------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TensorKind:
    """Known to be a tensor (made by a torch factory or op), with or
    without grad."""


TENSOR = TensorKind()


@dataclass(frozen=True, slots=True)
class Graph:
    """Attached to an autograd graph created at ``node`` in function ``fn``.
    ``how``: "call" (a module call), "op" (an op on an attached value),
    "leaf" (an op on a parameter only: bookkeeping, not a step's graph),
    "backward" (a later ``.backward()`` proved it). ``node`` is None in a
    summary read from another module (the caller re-roots it at its call)."""

    node: object = field(repr=False)
    fn: int = -1
    how: str = "op"
    _hash: int = field(default=0, init=False, repr=False, compare=False)

    def __hash__(self) -> int:
        # Hashed on every set operation: computed once, when first needed.
        h = self._hash
        if not h:
            h = hash((self.node, self.fn, self.how,)) or 1
            object.__setattr__(self, "_hash", h)
        return h


@dataclass(frozen=True, slots=True)
class Leaf:
    """A leaf tensor that requires grad (a parameter). ``fn``: the function
    that made it (-1: not made in this file, e.g. a module's weight).
    ``device`` / ``dtype``: where it was made and as what, where shown
    (``torch.zeros(n, requires_grad=True)``: ``cpu`` and ``float32``,
    torch's defaults); None: not shown. A move or cast to where it already
    is gives the leaf itself, anywhere else a copy that is not a leaf."""

    node: object = field(repr=False)
    fn: int = -1
    device: str | None = None
    dtype: str | None = None


@dataclass(frozen=True, slots=True)
class Saved:
    """Saved for backward by the op at ``node`` (``op``: its ledger name):
    writing this tensor in place before that backward breaks it.
    ``result``: saved as the op's output (else as one of its inputs)."""

    node: object = field(repr=False)
    op: str = ""
    fn: int = -1
    result: bool = False
    # Saved only if one of these (parameters, imported values) requires
    # grad: decided where they are known.
    needs: tuple["Sym", ...] = ()
    _hash: int = field(default=0, init=False, repr=False, compare=False)

    def __hash__(self) -> int:
        # Hashed on every set operation: computed once, when first needed.
        h = self._hash
        if not h:
            h = hash((self.node, self.op, self.fn, self.result, self.needs,)) or 1
            object.__setattr__(self, "_hash", h)
        return h


# -- containers ---------------------------------------------------------------

Key = Union[str, int]


@dataclass(frozen=True, slots=True)
class Container:
    """A dict, list, tuple or set. ``items``: the values at known keys (dict
    keys, tuple positions); ``elem``: the join of every other element."""

    kind: str  # "dict", "list", "tuple", "set"
    items: tuple[tuple[Key, frozenset], ...] = ()
    elem: frozenset = frozenset()

    def get(self, key: Key) -> frozenset | None:
        for k, v in self.items:
            if k == key:
                return v
        return None

    def all_values(self) -> frozenset:
        # (Their plain union, to ask what it holds: ``joins.all_values``
        # for a value to keep.)
        out = self.elem
        for _, v in self.items:
            out = out | v
        return out
    _hash: int = field(default=0, init=False, repr=False, compare=False)

    def __hash__(self) -> int:
        # Hashed on every set operation: computed once, when first needed.
        h = self._hash
        if not h:
            h = hash((self.kind, self.items, self.elem,)) or 1
            object.__setattr__(self, "_hash", h)
        return h


@dataclass(frozen=True, slots=True)
class Part:
    """What the value holds at ``key`` (a dict key, a tuple position) of a
    structure nothing else is known of: a backward of ``out["loss"]``
    shows that element attached, not the others. Read back by that key
    only (iterating the structure gives its unknown parts)."""

    key: Key
    value: frozenset


# -- objects --------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Module:
    """An ``nn.Module`` instance. ``parametric``: calling it builds a graph
    even from inputs that do not require grad (it owns parameters);
    ``qual``: its torch class (to look up what it saves); ``inplace``: built
    with ``inplace=True`` (writes its input); ``output_op``: the ledger op
    whose result its output is (an ``nn.Sequential`` ending in ``ReLU``);
    ``frozen``: its parameters were set not to require grad."""

    parametric: bool
    qual: str | None = None
    inplace: bool = False
    output_op: str | None = None
    frozen: bool = False
    # Where ``inplace=True`` was written (the layer's construction, or its
    # first layer's): where the write it makes is reported, and fixed.
    inplace_node: object = field(default=None, repr=False)
    inplace_layer: str | None = None  # the layer that writes in place (a Sequential's first)
    # A Sequential ending in a block of a class the analysis has the forward
    # of: what its output is, is that forward's (read at each call).
    last_layer: "Ref | None" = None
    # Built to draw random numbers when it runs (a dropout with p > 0, or a
    # Sequential holding one): a recomputation without the RNG state differs.
    draws: bool = False
    # The classes of this analysis (Refs) whose forward running it, or a
    # layer of it, runs: the blocks of an `nn.ModuleList`/`Sequential`, kept
    # by the layers taken out of it (`for block in self.blocks`).
    runs: frozenset = frozenset()
    # A Sequential's first layer's torch class: what it saves of the
    # Sequential's input (a `Linear` first saves it, for its weight's grad).
    input_op: str | None = None
    # A Sequential one layer of which writes in place what the layer before
    # it saved as its output (`Sigmoid()` then `ReLU(inplace=True)`): where
    # that `inplace=True` is written, the writing layer's class, the saving
    # op.
    inner_write: "tuple[object, str, str] | None" = field(default=None, repr=False)


@dataclass(frozen=True, slots=True)
class OptimizerKind:
    """A ``torch.optim`` optimizer. ``node``: the call that made it (None
    in a summary read from another module): which parameters it updates is
    read there."""

    node: object = field(default=None, repr=False)


@dataclass(frozen=True, slots=True)
class ScalerKind:
    """A ``GradScaler`` (``torch.amp``, ``torch.cuda.amp``): ``scale(loss)``
    multiplies the loss, so the gradients it gives are scaled until
    ``unscale_``/``step``. ``node``: the call that made it (None in a
    summary); ``disabled``: built with a literal ``enabled=False`` (it
    scales nothing)."""

    node: object = field(default=None, repr=False)
    disabled: bool = False


@dataclass(frozen=True, slots=True)
class ParamStorage:
    """A tensor that shares storage with the live parameters (and buffers)
    of a module: an element of what ``module.state_dict()`` at ``node``
    returned. An optimizer step writes those parameters in place, so a
    value holding it changes with them. A copy of the container keeps it
    (the same tensors); a clone of the tensor does not. ``node``: the
    ``state_dict()`` call (None in a summary)."""

    node: object = field(default=None, repr=False)


@dataclass(frozen=True, slots=True)
class Ref:
    """A class or function the analysis has a summary of: ``file`` (the
    module's path as linted) and ``qualname`` in it."""

    file: str
    qualname: str


@dataclass(frozen=True, slots=True)
class Instance:
    """An instance of a class the analysis has a summary of. ``sub``: maybe
    of a subclass (``self`` in a method): a method call dispatches to the
    subclasses' overrides too."""

    cls: Ref
    sub: bool = False


@dataclass(frozen=True, slots=True)
class ClassObj:
    cls: Ref


@dataclass(frozen=True, slots=True)
class FunctionObj:
    """A function value. ``wrapped``: a decorator or context object made it
    run with this grad mode (``torch.no_grad()(fn)``)."""

    fn: Ref
    wrapped: GradMode | None = None
    bound: "frozenset | None" = None  # the receiver of a bound method


@dataclass(frozen=True, slots=True)
class GradContext:
    """A grad-mode context manager or decorator (``torch.no_grad()``...);
    ``source``: its qualified name. ``mode`` None: a context that leaves
    grad mode as it is (``nullcontext()``, ``autocast()``)."""

    mode: GradMode | None
    source: str = ""


@dataclass(frozen=True, slots=True)
class Qual:
    """An object of a library by qualified name: ``torch``, ``torch.nn.Linear``,
    ``numpy.asarray``."""

    name: str


@dataclass(frozen=True, slots=True)
class ProjectModule:
    """A module of the project (``import utils``): its attributes are what
    it exports."""

    file: str


@dataclass(frozen=True, slots=True)
class HookArg:
    """An input or output a forward hook receives (attached)."""

    fn: int


@dataclass(frozen=True, slots=True)
class StructureKind:
    """The output of a model whose return structure is not shown (a tuple,
    a dict, a ``ModelOutput``): maybe not a tensor itself, so no tensor
    method (``.detach()``) may be written on it. An op on it is a tensor:
    the mark is not carried on."""


MAYBE_STRUCTURE = StructureKind()


@dataclass(frozen=True, slots=True)
class MultiView:
    """One of the views a multi-output view op (``split``, ``chunk``,
    ``unbind``) returned from a tensor that requires grad: torch refuses to
    write it in place while grad is on. ``node``: the op's call (None in a
    summary read from another module); ``op``: its name."""

    node: object = field(repr=False)
    fn: int = -1
    op: str = ""
    _hash: int = field(default=0, init=False, repr=False, compare=False)

    def __hash__(self) -> int:
        # As Graph's: hashed on every set operation, computed once.
        h = self._hash
        if not h:
            h = hash((self.node, self.fn, self.op)) or 1
            object.__setattr__(self, "_hash", h)
        return h


# -- symbolic ---------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Activation:
    """``forward``'s first input: an activation that may require grad.
    ``block``: the module is a block of another module of this file (built
    or handed over in its code): its input is the output of earlier layers,
    which requires grad (a whole model's input may be raw data)."""

    block: bool = False


ACTIVATION = Activation()
BLOCK_INPUT = Activation(block=True)


@dataclass(frozen=True, slots=True)
class ParamRoot:
    fn: int  # the function's id in its file (ir.Function.index)
    index: int


@dataclass(frozen=True, slots=True)
class ImportRoot:
    """``from module import name`` (``name`` None: ``import module``) as
    written in ``file``, at relative ``level``."""

    file: str
    module: str
    level: int
    name: str | None


@dataclass(frozen=True, slots=True)
class InstanceRoot:
    """An instance of a class whose behaviour depends on a base class in
    another module (is it an nn.Module? which methods does it inherit?)."""

    cls: "Ref"


@dataclass(frozen=True, slots=True)
class AttrStep:
    name: str


@dataclass(frozen=True, slots=True)
class ItemStep:
    key: Key | None  # None: some element (iteration, unknown key)


@dataclass(frozen=True, slots=True)
class OpStep:
    """An operation on it (a new tensor); ``off``: done under no_grad."""

    off: bool = False


@dataclass(frozen=True, slots=True)
class CallStep:
    """Called with these argument values. ``node``: the call (None in a
    summary read from another module); ``literals``: keyword arguments
    given as literal constants (``inplace=True``); ``rest``: what ``*args``
    passed, at positions not known (``loss_fn(*tensors)``)."""

    args: tuple[frozenset, ...] = ()
    kwargs: tuple[tuple[str, frozenset], ...] = ()
    node: object = field(default=None, repr=False)
    literals: tuple[tuple[str, object], ...] = ()
    rest: frozenset = frozenset()
    _hash: int = field(default=0, init=False, repr=False, compare=False)

    def __hash__(self) -> int:
        # Hashed on every set operation: computed once, when first needed.
        h = self._hash
        if not h:
            h = hash((self.args, self.kwargs, self.node, self.literals, self.rest)) or 1
            object.__setattr__(self, "_hash", h)
        return h


@dataclass(frozen=True, slots=True)
class WrapStep:
    """Passed to a grad-mode decorator: ``torch.no_grad()(fn)``."""

    mode: "GradMode"


Step = Union[AttrStep, ItemStep, OpStep, CallStep, WrapStep]
MAX_PATH = 6


@dataclass(frozen=True, slots=True)
class Sym:
    root: Union[ParamRoot, ImportRoot, InstanceRoot]
    path: tuple[Step, ...] = ()

    def then(self, step: Step) -> "Sym | None":
        if type(step) is OpStep and self.path and type(self.path[-1]) is OpStep:
            last = self.path[-1]
            return self if last.off == step.off else Sym(self.root, self.path[:-1] + (OpStep(last.off and step.off),))
        if len(self.path) >= MAX_PATH:
            return None
        return Sym(self.root, self.path + (step,))
    _hash: int = field(default=0, init=False, repr=False, compare=False)

    @property
    def calls(self) -> bool:
        """Its path calls something (what it was given may hold other
        symbols). Asked rarely: computed when asked, not at every creation."""
        for st in self.path:
            if type(st) is CallStep:
                return True
        return False

    def __hash__(self) -> int:
        # Hashed on every set operation: computed once, when first needed.
        h = self._hash
        if not h:
            h = hash((self.root, self.path,)) or 1
            object.__setattr__(self, "_hash", h)
        return h


# -- bookkeeping --------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Bounded:
    """A mark on a value a join cut (joins.py: more facts than it keeps,
    the first graph origins and simplest symbols kept): whatever it is
    joined with is cut alike, so a join of many values keeps the same facts
    whatever order they come in. Says nothing of what the value is."""


BOUNDED = Bounded()


Fact = Union[
    Plain, Foreign, TensorKind, Graph, Leaf, Saved, Container, Part, Module, OptimizerKind, ScalerKind, ParamStorage, Instance, ClassObj,
    FunctionObj, GradContext, Qual, ProjectModule, HookArg, MultiView, StructureKind, Sym, Bounded,
]
Value = frozenset
NOTHING: Value = frozenset()
NUMBER_V: Value = frozenset({NUMBER})
STR_V: Value = frozenset({STR})
BOOL_V: Value = frozenset({BOOL})
NONE_V: Value = frozenset({NONE})
TENSOR_V: Value = frozenset({TENSOR})
META_V: Value = frozenset({META})

# -- queries --------------------------------------------------------------------

# The facts that make a value a tensor.
TENSOR_FACTS = (TensorKind, Graph, Leaf, Saved, HookArg)


def tensorish(v: Value) -> bool:
    """Known to hold a tensor (with or without grad). That an op saved an
    operand only if some input requires grad (``Saved.needs``) says it is
    a tensor only if it is one: `n * k` of two unknown numbers saves
    nothing."""
    for f in v:  # a loop, not any(): called on every value the interpreter makes
        t = type(f)
        if t in TENSOR_FACTS and (t is not Saved or f.result or not f.needs):
            return True
    return False


def plain_only(v: Value) -> bool:
    """Shown to be a Python number, string, bool or None (or another
    framework's value): never a tensor."""
    if not v:
        return False
    for f in v:  # a loop, not all(): called on every value the interpreter makes
        t = type(f)
        if t is not Plain and t is not Foreign:
            return False
    return True


def unseen_call_outputs(v: Value) -> list["Sym"]:
    """What a call of something another module defines gave (a block's
    output, saved if that module shows its last layer saves it)."""
    return [f for f in v if type(f) is Sym and f.path and type(f.path[-1]) is CallStep]


def attached(v: Value, depth: int = 0) -> bool:
    """Holds a tensor attached to a step's graph (not only parameters),
    directly or in a container."""
    for f in v:
        t = type(f)
        if (t is Graph and f.how != "leaf") or t is HookArg:
            return True
        if t is Container and depth < 4:
            if attached(f.elem, depth + 1) or any(attached(x, depth + 1) for _, x in f.items):
                return True
        elif t is Part and depth < 4 and attached(f.value, depth + 1):
            return True
    return False


def graphs_of(v: Value, depth: int = 0) -> list[Graph]:
    """Every graph origin, inside containers too."""
    out: list[Graph] = []
    for f in v:
        t = type(f)
        if t is Graph:
            out.append(f)
        elif t is Container and depth < 4:
            out.extend(graphs_of(f.elem, depth + 1))
            for _, x in f.items:
                out.extend(graphs_of(x, depth + 1))
        elif t is Part and depth < 4:
            out.extend(graphs_of(f.value, depth + 1))
    return out


def graphs_within(v: Value, depth: int = 0) -> list[Graph]:
    """Every graph origin, also those in what calls of unknown functions
    were given (`adversarial_loss(D(fake))` of an imported loss: the graph
    of `D(fake)` is in it, whatever else the loss does)."""
    out = graphs_of(v)
    if depth < 3:
        for s in syms_in(v):
            for st in s.path:
                if type(st) is CallStep:
                    for a in st.args:
                        out.extend(graphs_within(a, depth + 1))
                    for _, a in st.kwargs:
                        out.extend(graphs_within(a, depth + 1))
    return out


def modules_in(v: Value) -> list[Module]:
    return [f for f in v if type(f) is Module]


def of_type(v: Value, t: type) -> list:
    return [f for f in v if type(f) is t]


def syms_in(v: Value, depth: int = 0) -> list[Sym]:
    out: list[Sym] = []
    for f in v:
        t = type(f)
        if t is Sym:
            out.append(f)
        elif t is Container and depth < 4:
            out.extend(syms_in(f.elem, depth + 1))
            for _, x in f.items:
                out.extend(syms_in(x, depth + 1))
        elif t is Part and depth < 4:
            out.extend(syms_in(f.value, depth + 1))
    return out


def has_syms(v: Value) -> bool:
    return any(type(f) is Sym or (type(f) is Container and syms_in(frozenset({f}))) for f in v)


def without(v: Value, *types: type) -> Value:
    return frozenset(f for f in v if type(f) not in types)


def container(kind: str, items: Iterable[tuple[Key, Value]] = (), elem: Value = NOTHING) -> Value:
    return frozenset({Container(kind, tuple(items), elem)})


pickle_as_calls(globals())
construct_fast(globals())


def frozen_modules(v: Value) -> Value:
    """``v`` with every module frozen (its parameters require no grad)."""
    if not any(type(f) is Module and not f.frozen for f in v):
        return v
    return frozenset(dataclasses.replace(f, frozen=True) if type(f) is Module else f for f in v)
