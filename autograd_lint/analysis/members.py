"""Member access by what the receiver is (mypy's ``checkmember``): reading
``x.name`` or calling ``x.name(...)`` where ``x`` is a tensor, a module of a
class the analysis does not see, an optimizer, a container or a string.
Each decision reads the API model's row for (the receiver's kind, the
member): what it gives (api.Gives) and what it does. Members of instances
of classes the analysis has summaries of are transfer.py's.
"""

from __future__ import annotations

import dataclasses

from autograd_lint.analysis import api
from autograd_lint.analysis import torch_api as lib
from autograd_lint.analysis.api import Gives, Member
from autograd_lint.analysis.outcome import MAY_RUN_MODULE, RUNS_MODULE, STEPS, CallArgs, Lookup, Outcome, Site, WritesArg
from autograd_lint.analysis.tensor_ops import ledger_saves, module_call, multi_views, op, values_indices
from autograd_lint.analysis.joins import all_values, join
from autograd_lint.analysis.values import (
    BOOL_V,
    META_V,
    NONE_V,
    NOTHING,
    NUMBER_V,
    STR_V,
    TENSOR,
    TENSOR_V,
    Container,
    Foreign,
    Graph,
    HookArg,
    Instance,
    Leaf,
    Module,
    OptimizerKind,
    ParamStorage,
    ScalerKind,
    Plain,
    Qual,
    Saved,
    Sym,
    TensorKind,
    Value,
    container,
    plain_only,
)

# What a member giving a plain result gives, whatever the receiver.
_PLAIN: dict[Gives, Value] = {
    Gives.NUMBER: NUMBER_V,
    Gives.BOOL: BOOL_V,
    Gives.STR: STR_V,
    Gives.NONE: NONE_V,
    Gives.META: META_V,
    Gives.NO_GRAD_TENSOR: TENSOR_V,
    Gives.NEW_TENSOR: TENSOR_V,
    Gives.GRADIENT: TENSOR_V,
    Gives.NUMBERS: container("list", elem=NUMBER_V),
    Gives.STRINGS: container("list", elem=STR_V),
    Gives.FOREIGN: frozenset({Foreign("numpy")}),
}


# -- tensors ----------------------------------------------------------------------------


def tensor_attribute(f: object, name: str) -> Value:
    """``x.name`` of a tensor fact ``f``."""
    row = api.member(api.TENSOR, name, attribute=True)
    g = row.gives
    plain = _PLAIN.get(g)
    if plain is not None:
        return plain
    if g is Gives.SHAPE:
        return container("tuple", elem=NUMBER_V)
    if g is Gives.DETACHED:
        # The same storage, detached from the graph: what was saved stays saved.
        return frozenset({f}) if type(f) is Saved else TENSOR_V
    if g is Gives.VIEW:
        return frozenset({f})
    # A field of an attached value of unknown structure (`outputs.logits`)
    # carries its graph, as far as anything shows.
    return frozenset({f}) if type(f) in (Graph, HookArg) else NOTHING


def tensor_method(recv: Value, name: str, args: CallArgs, site: Site) -> Outcome:
    """``x.name(args)`` for the tensor facts ``recv``."""
    return _tensor_call(api.member(api.TENSOR, name), recv, args, site)


def _tensor_call(row: Member, recv: Value, args: CallArgs, site: Site) -> Outcome:
    g = row.gives
    plain = _PLAIN.get(g)
    if plain is not None:
        return Outcome(plain)
    if g is Gives.SHAPE:
        return Outcome(NUMBER_V if args.args else container("tuple", elem=NUMBER_V))
    if g is Gives.DETACHED:
        # A view without a graph: what was saved stays saved.
        return Outcome(frozenset({TENSOR} | {f for f in recv if type(f) is Saved}))
    if g is Gives.LEAF:
        if args.literal(0) is False or args.literal("requires_grad") is False:
            return Outcome(TENSOR_V)
        return Outcome(frozenset({Leaf(site.node, site.fn)}))
    if row.writes:
        # In place: the same tensor, written; with grad on, what is written
        # in (`index_add_(0, i, src)`) brings its graph along.
        value = recv
        if not site.off:
            value = value | frozenset(f for f in op(args.all_values(), site) if type(f) is Graph or type(f) is HookArg)
        return Outcome(value, [WritesArg(-1, f"{row.name}()")])
    if g in (Gives.CAST, Gives.VIEW, Gives.MULTI_VIEW):
        if site.off:
            return Outcome(frozenset({TENSOR} | {f for f in recv if type(f) is Saved}))
        if g is Gives.MULTI_VIEW:
            return Outcome(multi_views(recv, row.name, site))
        if g is Gives.CAST:
            if row.copies and any(type(f) is Leaf for f in recv):
                return Outcome(_cast_leaves(recv, _cast_target(row, args), site))
            return Outcome(recv)
        return Outcome(views_of(recv, site))
    out = Outcome()
    if site.off:
        out.value = TENSOR_V
        return out
    value = set(op(recv, site))
    if not row.like:
        value |= {f for f in op(args.all_values(), site) if type(f) is not Plain}
    value.add(TENSOR)
    out.value = values_indices(g, frozenset(value), args, 0)
    ledger_saves(row.ledger or f"Tensor.{row.name}", args, site, out, receiver=recv)
    return out


# A move or cast that leaves the device or the dtype as it is; one that
# always copies (`to(..., copy=True)`).
_KEEP = "keep"
_COPY = ("copy", "copy")


def placement(args: CallArgs, defaults: bool) -> tuple[str | None, str | None]:
    """Where a torch factory given ``args`` makes its tensor and as what:
    (device, dtype), each None where the call does not show it.
    ``defaults``: a factory that, given neither, uses torch's (`cpu`,
    `float32`)."""
    given = {k for k, _ in args.kwargs}
    device = _device(args.literal("device")) if "device" in given else ("cpu" if defaults else None)
    dtype = _dtype(args.kw("dtype") or NOTHING) if "dtype" in given else ("float32" if defaults else None)
    return device, dtype


def _device(literal: object) -> str | None:
    # (`"cuda:1"` is another device than the current one `.cuda()` moves to,
    # or the same: not shown.)
    return literal if literal in ("cpu", "cuda") else None


def _dtype(v: Value) -> str | None:
    names = {lib.FLOAT_DTYPES.get(f.name) if type(f) is Qual else None for f in v}
    return names.pop() if len(names) == 1 else None


def _cast_target(row: Member, args: CallArgs) -> tuple[str, str] | None:
    """Where ``row`` moves a tensor given ``args``: (device, dtype), each
    ``_KEEP`` where it stays; ``_COPY`` for a forced copy; None where the
    arguments do not show it (`to(device)` of a variable, `to(other)`)."""
    if row.device is not None:
        return row.device, _KEEP
    if row.dtype is not None:
        return _KEEP, row.dtype
    if not row.moves_by_arguments or args.star:
        return None
    device, dtype = _KEEP, _KEEP
    named = [(i, a) for i, a in enumerate(args.args)] + [(k, a) for k, a in args.kwargs]
    for key, a in named:
        lit = args.literal(key)
        if key == "copy":
            if lit is True:
                return _COPY
            if lit is not False:
                return None
        elif key in ("non_blocking", "memory_format"):
            continue
        elif isinstance(lit, str) and key in (0, "device"):
            if (device := _device(lit)) is None:
                return None
        elif key in (0, 1, "dtype") and (t := _dtype(a)) is not None:
            dtype = t
        else:
            return None
    return device, dtype


def _cast_leaves(recv: Value, target: tuple[str, str] | None, site: Site) -> Value:
    """A move or cast of what holds leaves: each leaf stays itself where it
    already is where ``target`` says, becomes a copy that is not a leaf (a
    ``Graph`` made at the cast) where it is shown to be elsewhere, and
    either where not shown."""
    out = set()
    copied = False
    for f in recv:
        if type(f) is not Leaf:
            out.add(f)
            continue
        stays = _stays(f, target)
        if stays is not False:
            out.add(f)
        if stays is not True:
            copied = True
    if copied:
        out.add(Graph(site.node, site.fn, "leaf"))
    return frozenset(out)


def _stays(leaf: Leaf, target: tuple[str, str] | None) -> bool | None:
    if target is None:
        return None
    if target is _COPY:
        return False
    pairs = [(want, have) for want, have in zip(target, (leaf.device, leaf.dtype)) if want is not _KEEP]
    if any(have is not None and have != want for want, have in pairs):
        return False
    return None if any(have is None for _, have in pairs) else True


def views_of(recv: Value, site: Site) -> Value:
    """What a view of ``recv`` is, with grad on: the same facts; a view of a
    parameter is still one for torch's leaf check (writing it in place
    raises as writing the parameter does), and an op on it for graphs."""
    out = set(recv)
    if any(type(f) is Leaf for f in recv):
        out.add(Graph(site.node, site.fn, "leaf"))
    return frozenset(out)


def independent_method(name: str, args: CallArgs, site: Site) -> Outcome | None:
    """``x.name(args)`` where what ``x`` is does not matter (``.item()``):
    its outcome, or None when it does matter."""
    row = api.independent(name)
    return None if row is None else _tensor_call(row, TENSOR_V, args, site)


def independent_attribute(name: str) -> Value | None:
    """``x.name`` where what ``x`` is does not matter (``x.shape``)."""
    return None if api.independent(name, attribute=True) is None else tensor_attribute(TENSOR, name)


# -- modules of unseen classes -----------------------------------------------------------


def module_attribute(m: Module, name: str) -> Value:
    row = api.member(api.MODULE, name, attribute=True)
    g = row.gives
    if g is Gives.PARAMETER:
        return frozenset({Leaf(m.qual or "module")})
    if g is Gives.RECEIVER:
        return frozenset({m})
    if g is Gives.SUBMODULE:
        # A submodule (`model.encoder`), as far as anything shows.
        return frozenset({Module(m.parametric and not m.frozen)})
    return _PLAIN.get(g, NOTHING)


def module_method(m: Module, name: str, args: CallArgs, site: Site) -> Outcome:
    row = api.member(api.MODULE, name)
    g = row.gives
    if g is Gives.FORWARD:
        return module_call(m, args, site)
    if g is Gives.RUNS:
        # A method of a model whose class is not seen, given data
        # (`model.predict(x)`): it runs the model.
        if any(a and not plain_only(a) for a in args.args) or any(a and not plain_only(a) for _, a in args.kwargs):
            # What it returns is not known: computed from what it is given.
            value = frozenset(f for f in op(args.all_values(), site) if type(f) is not Plain)
            return Outcome(value, [RUNS_MODULE])
        return Outcome(NOTHING, [MAY_RUN_MODULE])
    if g is Gives.PARAMETERS:
        return Outcome(container("list", elem=frozenset({Leaf(site.node)})))
    if g is Gives.NAMED_PARAMETERS:
        return Outcome(container("list", elem=container("tuple", ((0, STR_V), (1, frozenset({Leaf(site.node)}))))))
    if g is Gives.BUFFERS:
        return Outcome(container("list", elem=TENSOR_V))
    if g is Gives.NAMED_BUFFERS:
        return Outcome(container("list", elem=container("tuple", ((0, STR_V), (1, TENSOR_V)))))
    if g is Gives.RECEIVER:
        if row.freezes and (args.literal(0) is False or args.literal("requires_grad") is False):
            return Outcome(frozenset({dataclasses.replace(m, frozen=True)}))
        return Outcome(frozenset({m}))
    if g is Gives.STATE_DICT:
        return Outcome(container("dict", elem=frozenset({TENSOR, ParamStorage(site.node)}) if row.aliases else TENSOR_V))
    if g is Gives.SUBMODULES:
        return Outcome(container("list", elem=frozenset({Module(True)})))
    if g is Gives.NAMED_SUBMODULES:
        return Outcome(container("list", elem=container("tuple", ((0, STR_V), (1, frozenset({Module(True)}))))))
    if g is Gives.SUBMODULE:
        return Outcome(frozenset({Module(True)}))
    return Outcome(_PLAIN.get(g, NOTHING))


def runs_module(name: str | None) -> bool:
    """Calling ``name`` of a module runs it (its forward, or a method of an
    unseen class given data)."""
    return name is None or api.member(api.MODULE, name).gives in (Gives.FORWARD, Gives.RUNS)


# -- optimizers ----------------------------------------------------------------------------


def optimizer_method(name: str) -> Outcome:
    row = api.member(api.OPTIMIZER, name)
    return Outcome(_PLAIN.get(row.gives, NOTHING), [STEPS] if row.steps else [])


def scaler_method(name: str, args: CallArgs) -> Outcome:
    """``scaler.name(...)`` of a GradScaler: ``scale(loss)`` is the loss
    times a number (the same graph: its backward is the loss's)."""
    row = api.member(api.SCALER, name)
    if row.gives is Gives.ARGUMENT:
        return Outcome(args.args[0] if args.args else NOTHING)
    return Outcome(_PLAIN.get(row.gives, NOTHING))


# Kinds that never store an argument into themselves.
_NOT_CONTAINERS = frozenset({TensorKind, Graph, Leaf, Saved, HookArg, Module, OptimizerKind, ScalerKind})


# -- containers and strings ---------------------------------------------------------------


def container_attribute(c: Container, name: str) -> Value:
    row = api.member(api.CONTAINER_OWNERS[c.kind], name, attribute=True)
    if row.gives is Gives.ELEMENT and row.item is not None:
        return item_at(c, row.item)
    return NOTHING


def item_at(c: Container, key: int | str | None) -> Value:
    """The value at ``key`` (None: any element)."""
    if key is not None:
        hit = c.get(key)
        if hit is not None:
            return hit
        if c.kind == "tuple" and isinstance(key, int) and key < 0 and c.items and not c.elem:
            hit = c.get(len(c.items) + key)
            if hit is not None:
                return hit
        if c.kind == "dict" and c.items and not c.elem:
            return NOTHING  # a key the dict does not have
        return c.elem if c.elem or not c.items else all_values(c)
    return all_values(c)


def dict_keys(c: Container) -> Value:
    out: Value = NOTHING
    for k, _ in c.items:
        out = join(out, STR_V if isinstance(k, str) else NUMBER_V)
    return out


def container_method(c: Container, name: str, args: CallArgs) -> Value:
    row = api.member(api.CONTAINER_OWNERS[c.kind], name)
    g = row.gives
    if g is Gives.ITEMS:
        keys = dict_keys(c) or STR_V
        return container("list", elem=container("tuple", ((0, keys), (1, all_values(c)))))
    if g is Gives.VALUES:
        return container("list", elem=all_values(c))
    if g is Gives.KEYS:
        return container("list", elem=dict_keys(c) or STR_V)
    if g is Gives.ELEMENT:
        key = args.literal(0)
        if c.kind == "dict" and name != "popitem" and isinstance(key, (str, int)):
            hit = c.get(key)
            v = hit if hit is not None else c.elem
            if len(args.args) > 1:
                v = join(v, args.args[1])  # the default
            return v
        return all_values(c)
    if g is Gives.COPY:
        return frozenset({c})
    return _PLAIN.get(g, NOTHING)


def str_method(name: str) -> Value:
    return _PLAIN.get(api.member(api.STR, name).gives, STR_V)


def stores(recv: Value, name: str) -> Member | None:
    """The row of ``recv.name(...)`` that stores an argument into ``recv``:
    a container's (``append``, a dict's ``update``), or, for a receiver of
    unknown kind, a member only containers have (``append``, not ``add``
    or ``update``, which a meter or a tensor has too)."""
    known = False
    # (One row whatever order the set yields its facts in: a module
    # container's, else the container's of the first kind by name. The
    # first met would be another from process to process: `self.layers`
    # a `ModuleList` its `__init__` made and the list an `append` in a
    # helper run before it assumed, its layers then joining what it runs
    # or not.)
    found: Member | None = None
    kind = ""
    for f in recv:
        t = type(f)
        if t is Container:
            known = True
            row = api.member(api.CONTAINER_OWNERS[f.kind], name)
            if row.stores is not None and (found is None or f.kind < kind):
                found, kind = row, f.kind
        elif t is Module and f.qual in lib.MODULE_CONTAINERS:
            known = True
            row = api.member(api.MODULE, name)
            if row.stores is not None:
                return row
        elif t in _NOT_CONTAINERS:
            known = True
    if found is not None:
        return found
    owner = api.evidence(name)
    if owner in (api.LIST, api.DICT) and not known:
        row = api.member(owner, name)
        return row if row.stores is not None else None
    return None


def sets_attribute(recv: Value, name: str, lookup: Lookup) -> bool:
    """``recv.name(attr, value)`` assigns ``recv.<attr> = value``
    (``register_buffer``): a module's row says so, on a receiver that may
    be a module (one of unknown kind: only modules have these members)."""
    return api.member(api.MODULE, name).sets_attribute and holds_module(recv, lookup) is not False


def holds_module(recv: Value, lookup: Lookup) -> bool | None:
    """Does ``recv`` hold a module: True, False (something else is known of
    it), or None (nothing is: only symbols)."""
    unknown = not recv
    for f in recv:
        t = type(f)
        if t is Module:
            return True
        if t is Instance:
            m = lookup.is_module_class(f.cls)
            if m:
                return True
            if m is None:
                unknown = True
        elif t is Sym:
            unknown = True
    return None if unknown else False


def switches_mode(recv: Value, mode: bool | None, nargs: int, lookup: Lookup) -> bool:
    """A call of the member whose row sets ``mode`` (``Member.mode``) puts
    ``recv`` in training or evaluation mode: a module's ``eval()``/
    ``train(...)``; on a receiver of unknown kind, ``eval()`` (only modules
    have it) or ``train(flag)`` (a trainer's ``train()`` or
    ``train(loader, model)`` is not one)."""
    if mode is None:
        return False
    kind = holds_module(recv, lookup)
    if kind is None:
        return (mode is False and nargs == 0) or (mode is True and nargs == 1)
    return kind
