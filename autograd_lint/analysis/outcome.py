"""What an operation gives, and where: the plain data the value semantics
pass around (transfer.py, tensor_ops.py, members.py).

``Site`` is where an operation happens (its node, function, grad mode);
``CallArgs`` the argument values of a call; ``Outcome`` a call's value and
the effects it has on locations (a saved input, an in-place write, an
argument a helper keeps), which the interpreter applies. ``Lookup`` is
where summaries of classes and functions come from.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from autograd_lint.analysis.summaries import ClassSummary, FunctionSummary, Retain
from autograd_lint.analysis.joins import join
from autograd_lint.analysis.values import NOTHING, GradMode, ImportRoot, ParamRoot, Ref, Saved, Value
from autograd_lint.slotted import construct_fast


class Lookup(Protocol):
    """Where summaries come from: the module being analysed (in-file
    classes and functions), or the project (resolve.py)."""

    def function(self, ref: Ref) -> FunctionSummary | None: ...

    def klass(self, ref: Ref) -> ClassSummary | None: ...

    def is_module_class(self, ref: Ref) -> bool | None: ...

    def imported(self, root: ImportRoot) -> Value | None: ...

    def param(self, root: ParamRoot) -> Value | None: ...

    def export(self, file: str, name: str) -> Value | None: ...


@dataclass(slots=True)
class Site:
    """Where an operation happens: the node it is reported at (None when
    evaluating another module's summary), the function, the grad mode."""

    node: object
    fn: int
    grad: GradMode
    depth: int = 0

    @property
    def off(self) -> bool:
        return self.grad is GradMode.OFF


@dataclass(slots=True)
class CallArgs:
    args: tuple[Value, ...] = ()
    kwargs: tuple[tuple[str, Value], ...] = ()
    # Arguments given as literal constants: position or keyword -> value.
    literals: dict = field(default_factory=dict)
    star: bool = False
    rest: Value = NOTHING  # what `*args` passed, at positions not known

    def literal(self, key: int | str, default: object = None) -> object:
        return self.literals.get(key, default)

    def all_values(self) -> Value:
        out: Value = NOTHING
        for a in self.args:
            out = join(out, a)
        for _, a in self.kwargs:
            out = join(out, a)
        return out

    def kw(self, name: str) -> Value | None:
        for k, v in self.kwargs:
            if k == name:
                return v
        return None


# -- effects of calls ---------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SavesArg:
    """The op saves positional argument ``index`` (-1: the receiver), or
    the argument passed as ``keyword`` (`scatter_reduce(..., src=w)`)."""

    index: int
    fact: Saved
    keyword: str | None = None


@dataclass(frozen=True, slots=True)
class WritesSaved:
    """A layer of the module called writes in place the output of the layer
    before it, which that layer's op saved (``saved``): ``node`` is where
    its `inplace=True` is written, ``how`` the write."""

    node: object
    how: str
    saved: Saved


@dataclass(frozen=True, slots=True)
class WritesArg:
    """The call writes argument ``index`` (-1: the receiver) in place.
    ``node``: where the write is asked for, when not at the call (the
    ``inplace=True`` of a layer's construction)."""

    index: int
    how: str
    node: object = field(default=None, repr=False, compare=False)


@dataclass(frozen=True, slots=True)
class BackpropagatesArg:
    """The call runs a backward of argument ``index`` (-1: the receiver),
    as its summary says (`backward_and_step(loss, opt)`): the value given
    is shown attached."""

    index: int


@dataclass(frozen=True, slots=True)
class Keeps:
    """A helper keeps argument ``index`` (-1: the receiver) beyond the call
    (a meter's ``update``), as its summary says."""

    index: int
    retain: Retain
    via: Ref


@dataclass(frozen=True, slots=True)
class Steps:
    """The call runs backward or an optimizer step."""


@dataclass(frozen=True, slots=True)
class AsksGraph:
    """The call makes a tensor it is given require grad
    (`data["pos"].requires_grad_()`), itself or through what it calls: it
    asks for a graph of its input."""


@dataclass(frozen=True, slots=True)
class SymCall:
    """A call on a symbol (a parameter, an imported object): its effects are
    known only once the symbol is resolved. ``nested``: made inside a
    function this call runs, not by the call itself."""

    callee: Value
    args: CallArgs
    nested: bool = False


@dataclass(frozen=True, slots=True)
class StaticGradMemory:
    """CUDA-graph capture, or a compile mode that uses it."""


@dataclass(frozen=True, slots=True)
class CalledFunction:
    """An in-file or project function ran (for call graphs)."""

    ref: Ref
    grad: GradMode


@dataclass(frozen=True, slots=True)
class RunsInit:
    """Making an instance of a class of this module runs its ``__init__``
    (the new instance its receiver): a call of it, for call graphs and for
    what its callers give its parameters."""

    ref: Ref
    grad: GradMode


@dataclass(frozen=True, slots=True)
class RunsModule:
    """The call runs a module of a class the analysis does not see, given
    data (``model.predict(x)``): a model run, though what it returns is
    not known (it may be detached metrics)."""


@dataclass(frozen=True, slots=True)
class MayRunModule:
    """A method of a module of a class the analysis does not see, given no
    data, only numbers or strings (``flow.sample(500)``,
    ``rnn.init_hidden(4)``): it may run the model or only make a value.
    Where its output is ``.detach()``ed the code takes it for one that
    carries a graph, which only a run of the model makes."""


STEPS = Steps()
ASKS_GRAPH = AsksGraph()
RUNS_MODULE = RunsModule()
MAY_RUN_MODULE = MayRunModule()
STATIC = StaticGradMemory()


@dataclass(slots=True)
class Outcome:
    value: Value = NOTHING
    effects: list = field(default_factory=list)

    def add(self, other: "Outcome") -> None:
        self.value = join(self.value, other.value)
        self.effects.extend(other.effects)


construct_fast(globals())
