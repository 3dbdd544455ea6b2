"""Summaries: what a function, a class and a module do, as plain data.

A summary is computed from its own module alone, independent of who calls
or imports it: parameters stand as symbols (``Sym(ParamRoot)``), names
imported from other project modules as ``Sym(ImportRoot)``. A caller
substitutes its argument values for the parameters; the names of other
modules are resolved once their summaries are known (resolve.py). So each
module is parsed once, in any order, in any worker, and its summary can be
cached by the hash of its content.

The summaries of another module never hold LibCST nodes: ``exported``
replaces every node in their values by None (a caller re-roots graphs at
its own call).
"""

from __future__ import annotations

from _pickle import Pickler
from dataclasses import dataclass, field, fields, is_dataclass, replace
from io import BytesIO
from operator import attrgetter
from sys import intern
from typing import Callable, Mapping

from autograd_lint.analysis.canonical import sorted_canonically
from autograd_lint.analysis.values import (
    pickle_as_calls,
    NOTHING,
    AttrStep,
    Module,
    MultiView,
    OptimizerKind,
    ParamStorage,
    ScalerKind,
    CallStep,
    Container,
    FunctionObj,
    Graph,
    GradMode,
    ItemStep,
    Leaf,
    OpStep,
    Part,
    Ref,
    Saved,
    Sym,
    Value,
    WrapStep,
    ClassObj,
    Instance,
    Plain,
    Qual,
    TensorKind,
)
from autograd_lint.slotted import construct_fast


@dataclass(frozen=True, slots=True)
class Retain:
    """The function keeps argument ``param`` beyond the call: stores it
    (``self.items.append(x)``) or accumulates it (``self.sum += x * n``)
    into ``into``: its receiver (``self``, ``param`` 0), another parameter
    (``into_param``), or module state."""

    param: int
    kind: str  # "store" or "accumulate"
    into: str  # what it is kept in, for messages: "self.sum"
    into_param: int | None = None  # the parameter holding the container (0: self)


@dataclass(frozen=True, slots=True)
class CallEffect:
    """A call the function makes on a parameter or an imported object
    (``meter.update(v)`` with ``meter`` a parameter): what it does is known
    only where the function is called."""

    callee: Value
    args: tuple[Value, ...]
    kwargs: tuple[tuple[str, Value], ...] = ()


@dataclass(frozen=True)
class FunctionSummary:
    ref: Ref
    index: int  # ir.Function.index: the ParamRoot.fn of its parameters
    params: tuple[str, ...]
    returns: Value = NOTHING
    retains: tuple[Retain, ...] = ()
    effects: tuple[CallEffect, ...] = ()
    # Runs backward or an optimizer step (directly or through a call).
    steps: bool = False
    # Parameters whose values only reach code that does not differentiate
    # them (metrics, `.item()`, printing): evaluation helpers.
    inert: frozenset[int] = frozenset()
    # A decorator fixes the grad mode it runs in (`@torch.no_grad()`).
    entry: GradMode | None = None
    # Calling it gives a context manager that sets this grad mode
    # (`@contextmanager` yielding under `torch.no_grad()`).
    context: GradMode | None = None
    # It calls the first parameter of the function it is nested in, always
    # in this grad mode: a decorator's wrapper (`def wrapper(*a): with
    # torch.no_grad(): return fn(*a)`), so what it decorates runs so.
    runs_outer_argument: GradMode | None = None
    kind: str = "function"  # "function", "method", "staticmethod", "classmethod", "property"
    calls_eval: bool = False  # puts a module in eval mode
    # Parameters it writes in place with grad on (`x.relu_()`, `x += b` of a
    # parameter it did not rebind), by position, and how: what its callers
    # check against what they saved.
    writes: tuple[tuple[int, str], ...] = ()
    # Pairs of parameters (by position) every return moves one toward the
    # other (`old * d + new * (1 - d)`, `old + new`) or gives one back
    # unchanged: a running update (`syntax_facts.update_params`).
    updates: tuple[tuple[int, int], ...] = ()
    # Parameters, by position, whose value as given it backpropagates
    # (`loss.backward()` of its `loss`): its callers' arguments are attached.
    backprops: tuple[int, ...] = ()
    # ``context`` MAYBE, set by this parameter (by position): `with
    # torch.set_grad_enabled(training): yield`; a call giving it a literal
    # bool decides the mode.
    context_param: int | None = None
    # Parameters, by position, whose module it freezes (every parameter
    # stops requiring grad: `fix_network(model)`): its callers' arguments
    # are frozen modules after the call.
    freezes: tuple[int, ...] = ()
    # Makes a tensor it is given require grad (`data["pos"].requires_grad_()`),
    # itself or through what it calls: it asks for a graph of its input, so
    # it needs grad on (a force field's forward, before its `autograd.grad`).
    asks_graph: bool = False


@dataclass(frozen=True)
class ClassSummary:
    ref: Ref
    bases: tuple[Value, ...]
    methods: Mapping[str, Ref] = field(default_factory=dict)
    # `self.<attr>` as every method of the class assigns it.
    attrs: Mapping[str, Value] = field(default_factory=dict)
    # Attributes its forward saves for backward (`F.linear(x, self.w)`).
    forward_saves: frozenset[str] = frozenset()
    # Is it an nn.Module, judged from this module alone: True/False, or
    # None when that depends on a base class in another module.
    module: bool | None = None
    lightning: bool | None = None
    # `with Instance(...):` sets this grad mode (`__enter__`).
    context: GradMode | None = None
    foreign: bool = False  # a class of another framework (gluon.Block)
    # The methods of its subclasses in the same module, by name: what
    # `self.name(...)` in one of its methods may run.
    overrides: Mapping[str, tuple[Ref, ...]] = field(default_factory=dict)
    # A record a decorator writes the `__init__` of (`@dataclass`): the
    # fields it sets from its arguments, in order.
    fields: tuple[str, ...] = ()
    # Its members are all shown: every class of its family is shown (this
    # project's) or is `torch.nn.Module` (whose members the API model rows),
    # and none sets attributes by name (`setattr`, `add_module`) or defines
    # `__getattr__`. A member none of them defines is then no method: an
    # attribute set from outside (`model.metric_fn = lambda ...`).
    closed: bool = False


@dataclass(frozen=True)
class ModuleSummary:
    file: str
    exports: Mapping[str, Value] = field(default_factory=dict)
    functions: Mapping[str, FunctionSummary] = field(default_factory=dict)
    classes: Mapping[str, ClassSummary] = field(default_factory=dict)
    # Uses CUDA-graph capture (or a compile mode that does): gradients must
    # keep their storage.
    static_grad_memory: bool = False
    # The modules it imports, as written: (module, relative level), in
    # source order (what a project-wide fact follows from it).
    imports: tuple[tuple[str, int], ...] = ()


# -- exporting: no LibCST nodes in another module's view -----------------------


def exported(v: Value, depth: int = 0) -> Value:
    """``v`` with every LibCST node replaced by None (plain data)."""
    if not v:
        return v
    hit = _EXPORTED.get(v)
    if hit is not None:
        return hit
    memo = _EXPORTED_AT[depth if depth < 5 else 5]
    hit = memo.get(v)
    if hit is not None:
        return hit
    changed = False
    nested = False
    out = []
    for f in v:
        g = _export_fact(f, depth)
        changed = changed or g is not f
        out.append(g)
        t = type(f)
        if t is Container or t is Part or t is FunctionObj or t is Saved or (t is Sym and g is not f):
            nested = True
    result = frozenset(out) if changed else v
    if not nested:
        memo = _EXPORTED
    if len(memo) > 20000:
        memo.clear()
    memo[v] = result
    return result


# Values (and symbols) repeat within a module (one object shared by many
# locations): each is exported once. What a value holding containers or
# calls is exported to depends on how deep it is (containers deeper than 4
# are left empty): such a value is kept per depth (5: any deeper), since
# one first exported deep must not be read back shallow, the others once.
_EXPORTED: dict = {}
_EXPORTED_AT: tuple[dict, ...] = tuple({} for _ in range(6))


def _export_fact(f, depth: int):
    # Each fact built again with its fields, not with `dataclasses.replace`
    # (which looks the fields up on every call: a third of the export).
    t = type(f)
    if t is Graph:
        return f if f.node is None else Graph(None, f.fn, f.how)
    if t is Saved:
        needs = [_export_sym(s, depth) for s in f.needs]
        if len(needs) > 1:
            # (A set at heart, in the order some set yielded it.)
            needs = sorted_canonically(set(needs))
        return Saved(None, f.op, f.fn, f.result, tuple(needs))
    if t is Leaf:
        return f if f.node is None or isinstance(f.node, str) else replace(f, node=None)
    if t is MultiView:
        return f if f.node is None else MultiView(None, f.fn, f.op)
    if t is OptimizerKind:
        return f if f.node is None else OptimizerKind(None)
    if t is ScalerKind:
        return f if f.node is None else ScalerKind(None, f.disabled)
    if t is ParamStorage:
        return f if f.node is None else ParamStorage(None)
    if t is Module:
        return f if f.inplace_node is None else Module(f.parametric, f.qual, f.inplace, f.output_op, f.frozen, None, f.inplace_layer, f.last_layer, f.draws, f.runs)
    if t is Container:
        if depth > 4:
            return Container(f.kind)
        return Container(f.kind, tuple([(k, exported(x, depth + 1)) for k, x in f.items]), exported(f.elem, depth + 1))
    if t is Sym:
        return _export_sym(f, depth)
    if t is Part:
        return Part(f.key, exported(f.value, depth + 1))
    if t is FunctionObj and f.bound is not None:
        return FunctionObj(f.fn, f.wrapped, exported(f.bound, depth + 1))
    return f


def _export_sym(s: Sym, depth: int) -> Sym:
    if not s.calls:
        return s
    memo = _EXPORTED_AT[depth if depth < 5 else 5]
    hit = memo.get(s)
    if hit is not None:
        return hit
    path = []
    for st in s.path:
        if type(st) is CallStep:
            st = CallStep(
                tuple([exported(a, depth + 1) for a in st.args]),
                tuple([(k, exported(a, depth + 1)) for k, a in st.kwargs]),
                None,
                st.literals,
                exported(st.rest, depth + 1),
            )
        path.append(st)
    out = memo[s] = Sym(s.root, tuple(path))
    return out


def export_function(s: FunctionSummary) -> FunctionSummary:
    effects = tuple([CallEffect(exported(e.callee), tuple([exported(a) for a in e.args]), tuple([(k, exported(a)) for k, a in e.kwargs])) for e in s.effects])
    return replace(s, returns=exported(s.returns), effects=effects)


def export_class(s: ClassSummary) -> ClassSummary:
    return replace(s, bases=tuple(exported(b) for b in s.bases), attrs={k: exported(v) for k, v in s.attrs.items()})


# -- canonical bytes ----------------------------------------------------------------


def canonical_dumps(obj: object) -> bytes:
    """``obj`` (a summary, call records, a cache entry) pickled canonically:
    the same bytes in every process for equal data, whatever the hash seed,
    the object addresses, or what the process analysed before.

    Besides the values, two things decide a pickle's bytes: the order a
    set yields its elements in (string hashes, object identities), and
    which equal objects are one object (pickle writes an object once, then
    refers back to it). Here each set is written in ``order_cmp``'s order
    (and read back as a plain frozenset), equal facts, sets and strings are
    written once however many objects hold them, and a tuple is written
    wherever it stands (whether two facts share one tuple object is an
    accident of how they were made)."""
    out = BytesIO()
    _CanonicalPickler(out).dump(obj)
    return out.getvalue()


class _Ordered:
    """A set as written: its elements in a canonical order."""

    __slots__ = ("order",)

    def __init__(self, order: tuple) -> None:
        self.order = order

    def __reduce__(self):
        return frozenset, (self.order,)


_ATOMS = frozenset({type(None), int, bool, float, GradMode})
# The classes written field by field, as a call of the class with its
# fields' parts: the analysis's plain data (facts, steps, summaries,
# conditions). Their fields' getter, or None for another class.
_FIELDS: dict[type, object] = {}
# A set's elements in order_cmp's order, by the set's identity (the set
# kept beside them: its id is no other's while it is there). The summary,
# the calls and the entry of a file share their set objects. Not by value:
# a set equal to one met before but another object (the same module
# analysed again to summarize it, an equal value of another file) would be
# compared with it all the way down, none of their parts one object either:
# for nested values an unfolding of their shared parts, minutes for one
# file (modeling_uvit.py, a few hundred files into a process).
_ORDERED: dict[int, tuple[frozenset, tuple]] = {}


def _fields_of(t: type):
    names = None
    if t.__module__.startswith("autograd_lint.analysis.") and is_dataclass(t):
        names = tuple(f.name for f in fields(t) if f.init)
    if not names:
        get = None
    elif len(names) == 1:
        one = attrgetter(names[0])
        get = lambda obj: (one(obj),)  # noqa: E731
    else:
        get = attrgetter(*names)
    _FIELDS[t] = get
    return get


def _ordered(s: frozenset) -> tuple:
    hit = _ORDERED.get(id(s))
    if hit is not None and hit[0] is s:
        return hit[1]
    if len(_ORDERED) > 50000:
        _ORDERED.clear()
    out = tuple(sorted_canonically(s))
    _ORDERED[id(s)] = (s, out)  # (the set kept alive: its id is not reused)
    return out


class _CanonicalPickler(Pickler):
    def __init__(self, file) -> None:
        super().__init__(file, protocol=5)
        # A fact or a set -> the one object written for its value.
        self.reps: dict = {}

    def reducer_override(self, obj):
        # (The C pickler asks this first of every object of a class of its
        # own. A fact is written as ``pickle_as_calls`` writes it.)
        t = type(obj)
        get = _FIELDS.get(t, _UNSEEN)
        if get is _UNSEEN:
            get = _fields_of(t)
        if get is None:
            if t is _Ordered:
                return frozenset, (obj.order,)
            return NotImplemented
        return t, self.parts(get(obj))  # type: ignore[operator]

    def dump(self, obj) -> None:
        super().dump(self.part(obj))

    def parts(self, values) -> tuple:
        """``part`` of each of ``values`` (a tuple, a fact's fields): the
        common cases here, the others in ``part``."""
        reps = self.reps
        out = []
        for v in values:
            t = type(v)
            if t in _ATOMS or v is _EMPTY:
                out.append(v)
            elif t is str:
                out.append(intern(v))
            elif t is tuple:
                out.append(self.parts(v))
            else:
                try:
                    hit = reps.get(v)
                except TypeError:  # a dict, or what holds one
                    hit = None
                out.append(hit if hit is not None else self.part(v))
        return tuple(out)

    def part(self, x):
        """What is written for ``x``: the one object of its value (a fact,
        a set: its elements ordered), a tuple or dict of parts, a string
        interned. (Tuples are written anew wherever they are: what holds
        them is shared by value.)"""
        t = type(x)
        if t is str:
            return intern(x)
        if t in _ATOMS:
            return x
        if t is tuple:
            return self.parts(x)
        if t is dict:
            part = self.part
            return {part(k): part(v) for k, v in x.items()}
        if t is list:
            return [self.part(v) for v in x]
        reps = self.reps
        try:
            hit = reps.get(x)
        except TypeError:  # it holds a dict (a class's summary): never shared
            return x
        if hit is not None:
            return hit
        if isinstance(x, frozenset):
            rep = _Ordered(self.parts(x if len(x) < 2 else _ordered(x)))
        else:
            rep = x  # a fact: written with its fields' parts (reducer_override)
        reps[x] = rep
        return rep


_UNSEEN = object()
_EMPTY = ()


__all__ = [
    "AttrStep",
    "CallEffect",
    "CallStep",
    "ClassSummary",
    "FunctionSummary",
    "ItemStep",
    "ModuleSummary",
    "OpStep",
    "Retain",
    "WrapStep",
    "export_class",
    "export_function",
    "canonical_dumps",
    "exported",
]


pickle_as_calls(globals())
construct_fast(globals())


def class_parametric(ref: Ref, klass: Callable[[Ref], ClassSummary | None], value: Callable[[Value], Value], memo: dict) -> bool | None:
    """Does an instance of the class hold trainable parameters? False only
    where every attribute its methods set is shown to hold none (numbers,
    strings, plain tensors, parameter-free layers: a metric or a padding
    written as a module), its family is closed (nothing set by name) and
    every base is `nn.Module` or such a class. ``value`` resolves what
    another module decides; ``memo`` also cuts cycles."""
    if ref in memo:
        return memo[ref]
    memo[ref] = None
    info = klass(ref)
    result: bool | None = None
    if info is not None and info.closed:
        result = False
        for b in info.bases:
            for f in value(b):
                t = type(f)
                r = class_parametric(f.cls, klass, value, memo) if t is ClassObj else False if t is Qual and f.name == "torch.nn.Module" else None
                result = _either(result, r)
        for v in info.attrs.values():
            result = _either(result, _holds_parameters(value(v), klass, value, memo))
    memo[ref] = result
    return result


def _holds_parameters(v: Value, klass: Callable[[Ref], ClassSummary | None], value: Callable[[Value], Value], memo: dict) -> bool | None:
    out: bool | None = False
    for f in v:
        t = type(f)
        if t is Container:
            r = _holds_parameters(f.all_values(), klass, value, memo)
        elif t is Module:
            r = f.parametric and not f.frozen
        elif t is Instance:
            r = class_parametric(f.cls, klass, value, memo)
        elif t is Leaf:
            r = True
        elif t in (Plain, TensorKind, FunctionObj, ClassObj):
            r = False
        else:
            r = None
        out = _either(out, r)
    return out


def _either(a: bool | None, b: bool | None) -> bool | None:
    """True if either is, else unknown if either is."""
    return True if a is True or b is True else None if a is None or b is None else False
