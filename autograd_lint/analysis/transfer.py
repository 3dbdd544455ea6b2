"""Value semantics: what an operation, an attribute, an index or a call
gives, as a function of the values involved (values.py).

Used by the interpreter for every expression, and by the resolver to
evaluate symbolic values once the summaries they depend on are known, so a
value means the same wherever it is computed. Calls report, besides their
value, the effects that concern locations (a saved input, an in-place
write, an argument kept by a helper): the interpreter applies those.
"""

from __future__ import annotations

import dataclasses
from typing import Callable, TypeVar

from autograd_lint.analysis import api, members
from autograd_lint.analysis import torch_api as lib
from autograd_lint.analysis.outcome import (
    STATIC,
    STEPS,
    ASKS_GRAPH,
    AsksGraph,
    BackpropagatesArg,
    CallArgs,
    CalledFunction,
    RunsInit,
    Keeps,
    Lookup,
    Outcome,
    Site,
    Steps,
    SymCall,
    WritesArg,
)
from autograd_lint.analysis.summaries import ClassSummary, FunctionSummary, Retain
from autograd_lint.analysis.tensor_ops import grad_syms, module_call, needs_grad, needs_order, nn_module, op, torch_op
from autograd_lint.analysis.joins import all_values, elements, join, join_all
from autograd_lint.analysis.canonical import sorted_canonically
from autograd_lint.analysis.values import (
    BOOL_V,
    TENSOR_FACTS,
    NOTHING,
    NONE_V,
    NUMBER_V,
    STR_V,
    TENSOR,
    TENSOR_V,
    AttrStep,
    MAYBE_STRUCTURE,
    CallStep,
    MultiView,
    ClassObj,
    Container,
    Foreign,
    FunctionObj,
    GradContext,
    GradMode,
    Graph,
    HookArg,
    ImportRoot,
    Instance,
    InstanceRoot,
    ItemStep,
    Key,
    Leaf,
    Module,
    OpStep,
    OptimizerKind,
    ScalerKind,
    ParamRoot,
    Part,
    Plain,
    ProjectModule,
    Qual,
    Ref,
    Saved,
    Sym,
    Value,
    WrapStep,
    container,
    plain_only,
)

MAX_DEPTH = 6  # nested summary applications


# -- attributes, items, iteration ----------------------------------------------


def attribute(v: Value, name: str, site: Site, lookup: Lookup) -> Value:
    out: Value = NOTHING
    for f in v:
        t = type(f)
        if t in TENSOR_FACTS:
            out = join(out, members.tensor_attribute(f, name))
        elif t is Module:
            out = join(out, members.module_attribute(f, name))
        elif t is Instance:
            out = join(out, instance_attribute(f.cls, name, frozenset({f}), lookup))
        elif t is ClassObj:
            out = join(out, _class_attribute(f.cls, name, lookup))
        elif t is Qual:
            out = join(out, frozenset({Qual(f"{f.name}.{name}")}))
        elif t is Sym:
            plain = members.independent_attribute(name)
            s = f.then(AttrStep(name)) if plain is None else None
            if plain is not None:
                out = join(out, plain)
            elif s is not None:
                out = join(out, frozenset({s}))
        elif t is Foreign:
            out = join(out, frozenset({f}))
        elif t is ProjectModule:
            hit = lookup.export(f.file, name)
            if hit is not None:
                out = join(out, hit)
        elif t is Container:
            out = join(out, members.container_attribute(f, name))
        elif t is Part and f.key == name:
            out = join(out, f.value)  # a dataclass's field
    return out


def instance_attribute(cls: Ref, name: str, recv: Value, lookup: Lookup) -> Value:
    info = lookup.klass(cls)
    if info is None:
        return NOTHING
    method = find_method(cls, name, lookup)
    if method is not None:
        summary = lookup.function(method)
        if summary is not None and summary.kind == "property":
            return apply(summary, CallArgs((recv,)), Site(None, -1, GradMode.ON), lookup).value
        return frozenset({FunctionObj(method, bound=recv)})
    found = class_attr(cls, name, lookup)
    if found is not None:
        return found
    if lookup.is_module_class(cls) is None or info.module is None:
        s = Sym(InstanceRoot(cls), (AttrStep(name),))
        return frozenset({s})
    return NOTHING


T = TypeVar("T")


def _through_bases(cls: Ref, lookup: Lookup, pick: Callable[[ClassSummary], T | None], depth: int = 0) -> T | None:
    """What ``pick`` finds on ``cls`` or, failing that, on its bases, in
    order (a class's own definition hides its bases')."""
    info = lookup.klass(cls)
    if info is None or depth > 8:
        return None
    hit = pick(info)
    if hit is not None:
        return hit
    for base in info.bases:
        for f in _base_classes(base, lookup):
            hit = _through_bases(f.cls, lookup, pick, depth + 1)
            if hit is not None:
                return hit
    return None


def _base_classes(base: Value, lookup: Lookup) -> list[ClassObj]:
    """The classes a base names: of this module, or imported from another
    of the project (`class AgentSAC(AgentBase)` of `from base import
    AgentBase`, or `base.AgentBase`), where the lookup sees the project."""
    out = []
    for f in base:
        if type(f) is ClassObj:
            out.append(f)
        elif type(f) is Sym and type(f.root) is ImportRoot and len(f.path) <= 1:
            got = lookup.imported(f.root) or NOTHING
            if f.path:
                step = f.path[0]
                if type(step) is not AttrStep:
                    continue
                got = frozenset(g for m in got if type(m) is ProjectModule for g in (lookup.export(m.file, step.name) or NOTHING))
            out.extend(g for g in sorted_canonically(got) if type(g) is ClassObj)
    return out


def class_attr(cls: Ref, name: str, lookup: Lookup) -> Value | None:
    """``self.<name>`` of instances of ``cls``, through its bases."""
    return _through_bases(cls, lookup, lambda info: info.attrs.get(name))


def _class_attribute(cls: Ref, name: str, lookup: Lookup) -> Value:
    method = find_method(cls, name, lookup)
    if method is not None:
        return frozenset({FunctionObj(method)})
    found = class_attr(cls, name, lookup)
    return found if found is not None else NOTHING


def wrapper_mode(made: FunctionObj, decorators: Value, lookup: Lookup) -> GradMode | None:
    """The grad mode ``made``, what one of ``decorators`` returned for the
    function it decorates, runs that function in: a wrapper nested in the
    decorator that calls the decorator's first parameter (the function)
    always in one mode (its summary's ``runs_outer_argument``)."""
    for d in decorators:
        if type(d) is not FunctionObj or made.fn.file != d.fn.file:
            continue
        inner = d.fn.qualname + ".<locals>."
        if made.fn.qualname.startswith(inner) and "." not in made.fn.qualname[len(inner) :]:
            summary = lookup.function(made.fn)
            if summary is not None and summary.runs_outer_argument is not None:
                return summary.runs_outer_argument
    return None


def known_kind(f: object, lookup: Lookup) -> bool:
    """A fact that says what a value is (a module, or something else):
    not a symbol, an instance of a class whose kind is not settled, or a
    name of a package nothing is known of."""
    t = type(f)
    if t is Sym:
        return False
    if t is Instance:
        return lookup.is_module_class(f.cls) is not None  # type: ignore[attr-defined]
    if t is Qual:
        return lib.is_known_library(f.name)  # type: ignore[attr-defined]
    return True


def _closed(cls: Ref, lookup: Lookup) -> bool:
    info = lookup.klass(cls)
    return info is not None and info.closed


def find_method(cls: Ref, name: str, lookup: Lookup) -> Ref | None:
    return _through_bases(cls, lookup, lambda info: info.methods.get(name))


def subscript(v: Value, key: Key | None, site: Site, lookup: Lookup) -> Value:
    out: Value = NOTHING
    # `out["n_tokens"]` of a model's output of unknown structure: a field of
    # a dict-like output, maybe a count: not shown to be a tensor (a tensor
    # is not indexed by a string).
    field = isinstance(key, str) and MAYBE_STRUCTURE in v
    for f in v:
        t = type(f)
        if t is Container:
            out = join(out, members.item_at(f, key))
        elif t is Part:
            if f.key == key:
                out = join(out, f.value)
        elif t in TENSOR_FACTS or t is Foreign:
            if not field:
                out = join(out, frozenset({f}))
        elif t is Module:
            out = join(out, _layer_of(f, f.parametric and not f.frozen))
        elif t is Sym:
            s = f.then(ItemStep(key))
            if s is not None:
                out = join(out, frozenset({s}))
        elif t is Plain and f.kind == "str":
            out = join(out, STR_V)
        elif t is Instance:
            method = find_method(f.cls, "__getitem__", lookup)
            if method is not None:
                summary = lookup.function(method)
                if summary is not None:
                    out = join(out, apply(summary, CallArgs((frozenset({f}), NOTHING)), site, lookup).value)
            elif lookup.is_module_class(f.cls) is None:
                s = Sym(InstanceRoot(f.cls), (ItemStep(key),))
                out = join(out, frozenset({s}))
    return out


def _layer_of(f: Module, parametric: bool) -> Value:
    """A layer taken out of the container module ``f`` (``self.blocks[i]``,
    ``for block in self.blocks``): a module, and an instance of each class
    of this analysis among its layers, so that calling it runs their
    ``forward`` (what they return, save and write) besides what any layer
    does."""
    layer = Module(parametric, runs=f.runs)
    if not f.runs:
        return frozenset({layer})
    return frozenset({layer, *(Instance(c) for c in f.runs)})


def iterate(v: Value, site: Site) -> Value:
    out: Value = NOTHING
    for f in v:
        t = type(f)
        if t is Container:
            if f.kind == "dict":
                out = join(out, members.dict_keys(f))
            else:
                out = join(out, all_values(f))
        elif t in TENSOR_FACTS or t is Foreign:
            out = join(out, frozenset({f}))
        elif t is Module:
            out = join(out, _layer_of(f, f.parametric))
        elif t is Sym:
            s = f.then(ItemStep(None))
            if s is not None:
                out = join(out, frozenset({s}))
        elif t is Plain and f.kind == "str":
            out = join(out, STR_V)
    return out


def unpack(v: Value, n: int, site: Site) -> list[Value] | None:
    """``a, b = v``: each target's value. Tuples and lists of known length
    give each position its own item (a function returning ``x, y``); a
    symbol gives its ``i``-th item, resolved where it is known (``for name,
    p in named_tensors(m)``: ``name`` is item 0 of an element); anything
    else gives every target what iterating it gives. None for nothing known."""
    if not v:
        return None
    out = [NOTHING] * n
    for f in v:
        t = type(f)
        if t is Container and f.kind in ("tuple", "list") and len(f.items) == n and not f.elem:
            for i in range(n):
                out[i] = join(out[i], f.get(i) or NOTHING)
        elif t is Sym:
            for i in range(n):
                s = f.then(ItemStep(i))
                if s is not None:
                    out[i] = join(out[i], frozenset({s}))
        else:
            each = iterate(frozenset({f}), site)
            for i in range(n):
                out[i] = join(out[i], each)
    return out


# -- calls ------------------------------------------------------------------------


def call_value(callee: Value, args: CallArgs, site: Site, lookup: Lookup) -> Outcome:
    """Calling a value: a library function, a summarised function or class,
    a module, an instance, a symbol."""
    out = Outcome()
    step: CallStep | None = None
    saved_outputs: list[frozenset] = []
    writes: list[bool] = []
    # An instance of a module class whose forward we know is described
    # better by that forward than by the bare "a module" fact beside it.
    known = (
        len(callee) > 1
        and any(type(f) is Module for f in callee)
        and any(type(f) is Instance and lookup.is_module_class(f.cls) and find_method(f.cls, "forward", lookup) is not None for f in callee)
    )
    for f in callee:
        t = type(f)
        if t is Qual:
            out.add(qual_call(f.name, args, site, lookup))
        elif t is FunctionObj:
            out.add(call_function(f, args, site, lookup))
        elif t is ClassObj:
            out.add(construct(f.cls, args, site, lookup))
        elif t is Module:
            if not known:
                if f.last_layer is not None and f.output_op is None:
                    # A Sequential ending in a block of ours: its output is the block's.
                    f = dataclasses.replace(f, output_op=_block_saves(f.last_layer, lookup))
                o = module_call(f, args, site)
                saved_outputs.append(frozenset(x for x in o.value if type(x) is Saved))
                writes.append(any(type(e) is WritesArg for e in o.effects))
                out.add(o)
        elif t is Instance:
            o = call_instance(f, args, site, lookup)
            saved_outputs.append(frozenset(x for x in o.value if type(x) is Saved))
            writes.append(any(type(e) is WritesArg for e in o.effects))
            out.add(o)
        elif t is GradContext and f.mode is not None:
            out.add(Outcome(_wrap(args.args[0] if args.args else NOTHING, f.mode)))
        elif t is Foreign:
            out.value = join(out.value, frozenset({f}))
        elif t is Sym:
            if step is None:
                step = CallStep(
                    tuple(shallow(a) for a in args.args), tuple((k, shallow(v)) for k, v in args.kwargs), site.node,
                    tuple((k, v) for k, v in args.literals.items() if isinstance(k, str)), shallow(args.rest),
                )
            s = f.then(step)
            if s is not None:
                out.value = join(out.value, frozenset({s}))
            out.effects.append(SymCall(frozenset({f}), args))
    if len(saved_outputs) > 1:
        # One of several layers (`for layer in self.layers: h = layer(h)`):
        # its output is saved only if every candidate's is.
        every = frozenset.intersection(*saved_outputs)
        if not every and all(saved_outputs):
            # Each saves its output, by an op of its own (`ReLU` or
            # `Sigmoid`, taken from a dict of activations by a key not
            # known): saved whichever runs; named by the first canonically.
            every = frozenset(sorted_canonically(frozenset.union(*saved_outputs))[:1])
        out.value = out.value - (frozenset.union(*saved_outputs) - every)
        # ...and it writes its input in place only if every candidate does.
        if not all(writes):
            out.effects = [e for e in out.effects if type(e) is not WritesArg]
    return out


def shallow(v: Value, depth: int = 0) -> Value:
    """``v`` as an argument of a symbolic call: the symbols in it keep only
    concrete facts about what they were given, so calls on the results of
    calls do not nest without bound."""
    if not v:
        return v
    for f in v:
        if type(f) is Container or (type(f) is Sym and f.calls):
            break
    else:
        return v
    out = []
    changed = False
    for f in v:
        t = type(f)
        if t is Sym and f.calls:
            if depth >= 1:
                changed = True
                continue
            path = tuple(
                CallStep(tuple(shallow(a, depth + 1) for a in st.args), tuple((k, shallow(a, depth + 1)) for k, a in st.kwargs), st.node, st.literals, shallow(st.rest, depth + 1))
                if type(st) is CallStep else st
                for st in f.path
            )
            g = Sym(f.root, path)
            changed = changed or g != f
            out.append(g)
        elif t is Container and depth < 2:
            g = Container(f.kind, tuple((k, shallow(x, depth + 1)) for k, x in f.items), shallow(f.elem, depth + 1))
            changed = True
            out.append(g)
        elif t is Container:
            changed = True
        else:
            out.append(f)
    return frozenset(out) if changed else v


def _wrap(v: Value, mode: GradMode) -> Value:
    out = []
    for f in v:
        if type(f) is FunctionObj:
            out.append(FunctionObj(f.fn, mode, f.bound))
        elif type(f) is Sym:
            s = f.then(WrapStep(mode))
            if s is not None:
                out.append(s)
    return frozenset(out)


def call_function(f: FunctionObj, args: CallArgs, site: Site, lookup: Lookup) -> Outcome:
    summary = lookup.function(f.fn)
    if summary is None:
        return Outcome()
    bound = f.bound is not None and summary.kind not in ("staticmethod",)
    if bound:
        args = CallArgs((f.bound,) + args.args, args.kwargs, _shift(args.literals), args.star)
    inner = site
    mode = f.wrapped or summary.entry
    if mode is not None:
        inner = Site(site.node, site.fn, mode, site.depth)
    return apply(summary, args, inner, lookup, bound)


def _context_mode(summary: FunctionSummary, args: CallArgs) -> GradMode:
    p = summary.context_param
    if summary.context is GradMode.MAYBE and p is not None and p < len(summary.params):
        given = args.literal(p) if p < len(args.args) else args.literal(summary.params[p])
        if isinstance(given, bool):
            return GradMode.ON if given else GradMode.OFF
    return summary.context  # type: ignore[return-value]


def _shift(literals: dict) -> dict:
    return {(k + 1 if isinstance(k, int) else k): v for k, v in literals.items()}


def apply(summary: FunctionSummary, args: CallArgs, site: Site, lookup: Lookup, bound: bool = False) -> Outcome:
    """What calling a summarised function gives at ``site``: its return
    value with the arguments in place of its parameters, and its effects.
    ``bound``: ``args`` begin with the receiver the call is made on (its
    effects on arguments are then counted from the receiver, -1)."""
    if site.depth > MAX_DEPTH:
        return Outcome()  # recursion, or a chain too long to follow
    if _budget[0] >= 0:
        if _budget[0] == 0:
            raise _OutOfBudget
        _budget[0] -= 1
    binding = bind_arguments(summary, args)
    deeper = Site(site.node, site.fn, site.grad, site.depth + 1)
    sub = _Substitution(summary.index, binding, deeper, lookup)
    value = sub.value(summary.returns, True, 0)
    if summary.context is not None:
        # A @contextmanager helper: what it gives sets this grad mode (the
        # one its argument asks for, `self._set_training_mode(False)`).
        value = join(value, frozenset({GradContext(_context_mode(summary, args), summary.ref.qualname)}))
    out = Outcome(value)
    out.effects.append(CalledFunction(summary.ref, site.grad))
    name = summary.ref.qualname.rsplit(".", 1)[-1]
    for i, how in summary.writes:
        out.effects.append(WritesArg(i - 1 if bound else i, f"{name}(): {how}"))
    for i in summary.backprops:
        out.effects.append(BackpropagatesArg(i - 1 if bound else i))
    for r in summary.retains:
        out.effects.append(Keeps(r.param, r, summary.ref))
    for e in summary.effects:
        callee = sub.value(e.callee, False, 0)
        eargs = CallArgs(tuple(sub.value(a, False, 0) for a in e.args), tuple((k, sub.value(a, False, 0)) for k, a in e.kwargs))
        inner = call_value(callee, eargs, deeper, lookup)
        # What the inner call keeps of its arguments is kept of ours when
        # they are the same values.
        for eff in inner.effects:
            if type(eff) is Keeps:
                src = e.args[eff.index - 1] if 0 < eff.index <= len(e.args) and eff.retain.into_param == 0 else None
                for fct in src or ():
                    if type(fct) is Sym and type(fct.root) is ParamRoot and fct.root.fn == summary.index and not fct.path:
                        out.effects.append(Keeps(fct.root.index, Retain(fct.root.index, eff.retain.kind, eff.retain.into, None), eff.via))
            elif type(eff) is SymCall:
                out.effects.append(SymCall(eff.callee, eff.args, True))
            elif type(eff) is Steps or type(eff) is AsksGraph:
                out.effects.append(eff)
    if summary.steps:
        out.effects.append(STEPS)
    if summary.asks_graph:
        out.effects.append(ASKS_GRAPH)
    return out


def construct(cls: Ref, args: CallArgs, site: Site, lookup: Lookup) -> Outcome:
    info = lookup.klass(cls)
    facts: set = {Instance(cls)}
    module = lookup.is_module_class(cls)
    if module:
        facts.add(Module(True))
    elif module is None:
        facts.add(Sym(InstanceRoot(cls)))
    elif info is not None and info.fields and not args.star:
        # A dataclass: each field holds what it was given (`r.nodes` is the
        # count passed as `nodes`, not the loss beside it).
        given = list(zip(info.fields, args.args)) + [(k, v) for k, v in args.kwargs if k in info.fields]
        facts |= {Part(name, v) for name, v in given if v}
    elif info is not None and not info.foreign:
        # A plain class (an output record) holds what it was built from.
        facts |= {f for f in args.all_values() if type(f) in (Graph, HookArg)}
    out = Outcome(frozenset(facts))
    init = find_method(cls, "__init__", lookup)
    if init is not None:
        out.effects.append(RunsInit(init, site.grad))
    return out


def call_instance(f: Instance, args: CallArgs, site: Site, lookup: Lookup) -> Outcome:
    recv = frozenset({f})
    module = lookup.is_module_class(f.cls)
    if module:
        forward = find_method(f.cls, "forward", lookup)
        summary = lookup.function(forward) if forward is not None else None
        if summary is not None:
            # What its forward returns, with the graphs it builds re-rooted here.
            return apply(summary, CallArgs((recv,) + args.args, args.kwargs, _shift(args.literals), args.star), site, lookup, True)
        out = Outcome()
        if not site.off:
            out.value = frozenset({Graph(site.node, site.fn, "call"), TENSOR, MAYBE_STRUCTURE})
        return out
    method = find_method(f.cls, "__call__", lookup)
    if method is not None:
        summary = lookup.function(method)
        if summary is not None:
            return apply(summary, CallArgs((recv,) + args.args, args.kwargs, _shift(args.literals), args.star), site, lookup, True)
    if module is None:
        s = Sym(InstanceRoot(f.cls), (CallStep(args.args, args.kwargs, site.node),))
        return Outcome(frozenset({s}))
    return Outcome()


# -- library calls ----------------------------------------------------------------


def call_qual(method: str | None, recv: Value | None, callee: Value) -> str | None:
    """The qualified name of a library function called: ``F.relu(x)`` ->
    ``torch.nn.functional.relu``."""
    if method is None:
        return next((f.name for f in callee if type(f) is Qual), None)
    q = next((f.name for f in recv or () if type(f) is Qual), None)
    return f"{q}.{method}" if q is not None else None


def _parameters_of_a_module(v: Value) -> bool:
    """``v`` is what ``model.parameters()`` gives: a list of parameters."""
    return any(type(f) is Container and f.kind == "list" and any(type(e) is Leaf for e in f.all_values()) for f in v)


def qual_call(q: str, args: CallArgs, site: Site, lookup: Lookup) -> Outcome:
    if q.startswith("builtins."):
        return builtin_call(q[9:], args, site, lookup)
    if q in lib.DICT_CLASSES:
        # `OrderedDict([(name, AverageMeter(name)) for name in names])`: a dict.
        return builtin_call("dict", args, site, lookup)
    first = args.literal(0)
    mode = lib.grad_context_mode(q, first if isinstance(first, bool) else args.literal("mode") if isinstance(args.literal("mode"), bool) else None)
    if mode is not None:
        return Outcome(frozenset({GradContext(GradMode(mode), q)}))
    if q in lib.NOT_GRAD_CONTEXTS or q in lib.NEUTRAL_CONTEXTS:
        # A context that leaves grad mode as it is (autocast, nullcontext).
        return Outcome(frozenset({GradContext(None, q)}))
    if q in lib.BACKWARD_FUNCTIONS:
        if q == "torch.autograd.grad" and args.literal("create_graph") is True:
            return Outcome(op(args.all_values(), site))
        return Outcome(NONE_V)
    if q in lib.VIEW_FUNCTIONS and args.args:
        # `rearrange(t, ...)`: a view of `t` (a reshape or a permute).
        return Outcome(members.views_of(args.args[0], site) if not site.off else TENSOR_V)
    if q in lib.OP_FUNCTIONS:
        # `einops.repeat(t, ...)`, `hvd.allreduce(t)`: a tensor computed from `t`.
        return Outcome(frozenset(f for f in op(args.args[0] if args.args else NOTHING, site) if type(f) is not Plain) | TENSOR_V)
    if q in lib.PASS_THROUGH:
        out = Outcome(args.args[0] if args.args else NOTHING)
        if q in lib.MODULE_WRAPPERS and not any(known_kind(f, lookup) for f in out.value):
            # (`DataParallel(load_model(path))`: a module, since it took one.)
            out.value = out.value | {Module(True)}
        if q == "torch.compile" and args.literal("mode") in lib.STATIC_COMPILE_MODES:
            out.effects.append(STATIC)
        return out
    if q in lib.STATIC_GRAD_MEMORY:
        return Outcome(effects=[STATIC])
    if q in lib.GRAD_SCALERS:
        return Outcome(frozenset({ScalerKind(site.node, args.literal("enabled") is False)}))
    if lib.is_optimizer_class(q):
        out = Outcome(frozenset({OptimizerKind(site.node)}))
        if args.literal("capturable") is True:
            out.effects.append(STATIC)
        return out
    if not lib.is_known_library(q) and args.args and _parameters_of_a_module(args.args[0]):
        # Built over a module's parameters by a library the API model does
        # not know (`AnalogSGD(model.parameters(), lr=0.1)`, `Lion(...)`):
        # an optimizer, which takes its parameters first as torch's do.
        return Outcome(frozenset({OptimizerKind(site.node)}))
    if q in lib.PARAMETER_CONTAINERS:
        return Outcome(container(lib.PARAMETER_CONTAINERS[q], elem=frozenset({Leaf(site.node, site.fn)})))
    if q in lib.VARIABLE:
        # `Variable(t)` is `t` itself since torch 0.4: a leaf that requires
        # grad only when asked for.
        if args.literal("requires_grad") is True:
            return Outcome(frozenset({Leaf(site.node, site.fn)}))
        return Outcome(args.args[0] if args.args else TENSOR_V)
    if q in lib.PARAMETER_CLASSES:
        if args.literal("requires_grad") is False:
            return Outcome(TENSOR_V)
        return Outcome(frozenset({Leaf(site.node, site.fn)}))
    if q in lib.SHALLOW_MAPPING_COPIES:
        # `OrderedDict(sd)`, `copy.copy(sd)`: the same elements, in a dict
        # (`OrderedDict(pairs)` and copies of other objects: not followed).
        a0 = args.args[0] if len(args.args) == 1 and not args.kwargs else NOTHING
        return Outcome(frozenset(f for f in a0 if type(f) is Container and f.kind == "dict"))
    if q in lib.DEEP_COPIES:
        return Outcome()  # new objects: nothing of the argument's identity
    if q in lib.ARGUMENT_RETURNERS:
        i = lib.ARGUMENT_RETURNERS[q]
        return Outcome(args.args[i] if i < len(args.args) else NOTHING)
    if q in lib.LOADERS:
        return Outcome()  # whatever was saved: a state dict, a model, a tensor
    if q in lib.MODULE_LOADERS:
        return Outcome(frozenset({Module(True)}))
    if lib.is_module_class(q):
        return Outcome(frozenset({nn_module(q, args, site)}))
    if lib.is_model_factory(q):
        return Outcome(frozenset({Module(True)}))
    if lib.is_foreign(q):
        return Outcome(frozenset({Foreign(lib.top_package(q))}))
    if q in lib.LEGACY_TENSOR_CONSTRUCTORS:
        return Outcome(TENSOR_V)
    last = q.rsplit(".", 1)[-1]
    if q.startswith("torch.distributions."):
        return Outcome(op(args.all_values(), site))
    if q.startswith("torch.nn.functional."):
        return torch_op(q, last, args, site, functional=True)
    if q.startswith("torch."):
        if last in lib.TORCH_CUT:
            return Outcome(TENSOR_V)
        if last in lib.TORCH_FACTORIES:
            if args.literal("requires_grad") is True:
                device, dtype = members.placement(args, defaults=last in lib.DEFAULT_PLACED_FACTORIES)
                return Outcome(frozenset({Leaf(site.node, site.fn, device, dtype)}))
            if last in ("tensor", "as_tensor") and not site.off:
                return Outcome(join(frozenset(f for f in op(args.all_values(), site) if type(f) is not Plain), TENSOR_V))
            return Outcome(TENSOR_V)
        if last[:1].isupper() or q.startswith(("torch.cuda.", "torch.backends.", "torch.distributed.", "torch.utils.", "torch.jit.", "torch.optim.")):
            return Outcome()
        return torch_op(q, last, args, site, functional=False)
    if q.startswith(("math.", "statistics.", "random.")):
        return Outcome(NUMBER_V)
    return Outcome()


def _block_saves(cls: Ref, lookup: Lookup) -> str | None:
    """The op whose result the forward of ``cls`` returns saved (a block
    ending in ``relu``)."""
    ref = find_method(cls, "forward", lookup)
    summary = lookup.function(ref) if ref is not None else None
    if summary is None:
        return None
    saved = [x for x in summary.returns if type(x) is Saved and x.result]
    return min(s.op for s in saved) if saved else None


def builtin_call(name: str, args: CallArgs, site: Site, lookup: Lookup) -> Outcome:
    a0 = args.args[0] if args.args else NOTHING
    if name in lib.BUILTIN_NUMBER:
        return Outcome(NUMBER_V)
    if name in lib.BUILTIN_STR:
        return Outcome(STR_V)
    if name in lib.BUILTIN_BOOL:
        return Outcome(BOOL_V)
    if name in lib.BUILTIN_NONE:
        return Outcome(NONE_V)
    if name in lib.BUILTIN_OP:
        src = elements(a0) if len(args.args) == 1 else args.all_values()
        if name in ("max", "min") and plain_only(src):
            return Outcome(NUMBER_V)
        v = op(src, site)
        if len(args.args) == 2 and name == "sum":
            v = join(v, op(args.args[1], site))
        if any(type(f) is not Plain for f in v):
            v = frozenset(f for f in v if type(f) is not Plain)
        return Outcome(v)
    if name in ("list", "sorted", "reversed", "filter"):
        return Outcome(container("list", elem=_elements_of(a0, site)) if args.args else container("list"))
    if name in ("tuple",):
        return Outcome(container("tuple", elem=_elements_of(a0, site)) if args.args else container("tuple"))
    if name in ("set", "frozenset"):
        return Outcome(container("set", elem=_elements_of(a0, site)) if args.args else container("set"))
    if name in ("iter",):
        return Outcome(a0)
    if name == "next":
        return Outcome(iterate(a0, site))
    if name == "dict":
        items = []
        elem: Value = NOTHING
        for k, v in args.kwargs:
            if k:
                items.append((k, v))
            else:
                elem = join(elem, _values_of(v))
        if args.args:
            elem = join(elem, _mapping_values(a0, site))
        return Outcome(container("dict", items, elem))
    if name == "map" and len(args.args) == 2:
        # `map(f, xs)`: f of each element.
        each = call_value(args.args[0], CallArgs((_elements_of(args.args[1], site),)), site, lookup)
        return Outcome(container("list", elem=each.value))
    if name == "zip":
        items = tuple((i, _elements_of(a, site)) for i, a in enumerate(args.args))
        return Outcome(container("list", elem=container("tuple", items)))
    if name == "enumerate":
        return Outcome(container("list", elem=container("tuple", ((0, NUMBER_V), (1, _elements_of(a0, site))))))
    if name == "range":
        return Outcome(container("list", elem=NUMBER_V))
    if name == "getattr" and isinstance(args.literal(1), str):
        return Outcome(attribute(a0, args.literal(1), site, lookup))  # type: ignore[arg-type]
    if name == "getattr" and len(args.args) == 2:
        # `getattr(torchvision.models, args.arch)`: one of a namespace's
        # functions; `getattr(optim, args.optim)`: one of its optimizers.
        spaces = lib.MODEL_FUNCTION_NAMESPACES | lib.OPTIMIZER_NAMESPACES
        return Outcome(frozenset(Qual(f"{f.name}.{lib.ANY_ATTR}") for f in a0 if type(f) is Qual and f.name in spaces))
    return Outcome()


def _elements_of(v: Value, site: Site) -> Value:
    return iterate(v, site)


def _mapping_values(v: Value, site: Site) -> Value:
    """The values of the dict ``dict(v)`` makes: of a dict, its values; of
    pairs (`[(name, meter) for name in names]`), their second items."""
    out: Value = NOTHING
    for f in v:
        if type(f) is not Container:
            continue
        if f.kind == "dict":
            out = join(out, all_values(f))
            continue
        for pair in iterate(frozenset({f}), site):
            if type(pair) is Container and pair.kind in ("tuple", "list"):
                second = [x for k, x in pair.items if k == 1]
                out = join(out, second[0] if second else pair.elem)
    return out


def _values_of(v: Value) -> Value:
    out: Value = NOTHING
    for f in v:
        if type(f) is Container:
            out = join(out, all_values(f))
    return out


# -- methods ------------------------------------------------------------------------


def call_method(recv: Value, name: str, args: CallArgs, site: Site, lookup: Lookup) -> Outcome:
    """``recv.name(args)``, over every kind ``recv`` may be."""
    out = Outcome()
    # (A view of one of the views `chunk` returned is one too: the mark
    # goes along with the tensor's facts.)
    tensor_facts = [f for f in recv if type(f) in TENSOR_FACTS or type(f) is MultiView]
    # What an op computed from parameters (`v = A @ B`) is a tensor; so is
    # the rest of a value shown to be one: what the op saves, it saves if
    # they require grad, and its methods are a tensor's.
    as_tensor = frozenset(f for f in recv if type(f) is Sym and (tensor_facts or (f.path and type(f.path[-1]) is OpStep)))
    if tensor_facts or as_tensor:
        out.add(members.tensor_method(frozenset(tensor_facts) | as_tensor, name, args, site))
    # A module whose class is seen is described by that class (its methods,
    # then nn.Module's), not by the policy for modules of unseen classes.
    seen = any(type(f) is Instance and lookup.is_module_class(f.cls) for f in recv)
    for f in recv:
        t = type(f)
        if t is Container:
            out.add(Outcome(members.container_method(f, name, args)))
        elif t is Plain:
            if f.kind == "str":
                out.add(Outcome(members.str_method(name)))
        elif t is Module:
            if not seen:
                out.add(members.module_method(f, name, args, site))
        elif t is OptimizerKind:
            out.add(members.optimizer_method(name))
        elif t is ScalerKind:
            out.add(members.scaler_method(name, args))
        elif t is Instance:
            out.add(_instance_method(f, name, args, site, lookup))
        elif t is ClassObj:
            method = find_method(f.cls, name, lookup)
            if method is not None:
                summary = lookup.function(method)
                if summary is not None:
                    a = args
                    if summary.kind == "classmethod":
                        a = CallArgs((frozenset({f}),) + args.args, args.kwargs, _shift(args.literals), args.star)
                    out.add(apply(summary, a, site, lookup, a is not args))
            elif lib.builds_an_instance(name) and lookup.is_module_class(f.cls) is True:
                # `Encoder.from_pretrained(path)` of a project model class
                # (a `PreTrainedModel`'s subclass): the classmethod it
                # inherits from the library builds an instance of it.
                out.value = join(out.value, frozenset({Instance(f.cls)}))
        elif t is Qual:
            out.add(qual_call(f"{f.name}.{name}", args, site, lookup))
        elif t is Sym and f not in as_tensor:
            known = members.independent_method(name, args, site)
            if known is not None:
                # `.item()`, `.tolist()`, `.argmax()`: what they give does not
                # depend on what the receiver turns out to be.
                out.add(known)
                continue
            if api.member(api.TENSOR, name).ledger is not None and not api.member(api.TENSOR, name).writes:
                # A tensor op the ledger knows (`.pow(2)`, `.mean()`): an
                # operation on it, and on the tensors it is given.
                s = f.then(OpStep(site.off))
                if s is not None:
                    out.value = join(out.value, frozenset({s}))
                out.value = join(out.value, frozenset(x for x in op(args.all_values(), site) if type(x) is not Plain))
                continue
            callee = f.then(AttrStep(name))
            if callee is not None:
                out.add(call_value(frozenset({callee}), args, site, lookup))
        elif t is Foreign:
            out.value = join(out.value, frozenset({f}))
        elif t is FunctionObj and name in ("__call__", "apply"):
            out.add(call_function(f, args, site, lookup))
        elif t is GradContext and name == "__enter__" and f.mode is not None:
            # (Python's context protocol, called by hand.)
            out.value = join(out.value, frozenset({GradContext(f.mode, lib.ENTERED_CONTEXT)}))
    return out


def _instance_method(f: Instance, name: str, args: CallArgs, site: Site, lookup: Lookup) -> Outcome:
    recv = frozenset({f})
    method = find_method(f.cls, name, lookup)
    overrides: tuple[Ref, ...] = ()
    if f.sub:
        info = lookup.klass(f.cls)
        overrides = info.overrides.get(name, ()) if info is not None else ()
    if method is not None or overrides:
        # `self.step(b)` in a base class runs its own `step` or a subclass's.
        out = Outcome()
        for ref in (method,) + overrides if method is not None else overrides:
            summary = lookup.function(ref)
            if summary is None:
                continue
            a = args
            if summary.kind not in ("staticmethod",):
                a = CallArgs((recv,) + args.args, args.kwargs, _shift(args.literals), args.star)
            out.add(apply(summary, a, site, lookup, a is not args))
        if name == "forward" and lookup.is_module_class(f.cls) and not site.off:
            out.value = join(out.value, frozenset({Graph(site.node, site.fn, "call")}))
        return out
    held = class_attr(f.cls, name, lookup)
    if held is not None:
        # `model.encoder(x)`: calling what the attribute holds.
        return call_value(held, args, site, lookup)
    module = lookup.is_module_class(f.cls)
    if module and not api.inherited_method(api.MODULE, name) and _closed(f.cls, lookup):
        # No class of its family defines it: an attribute set from outside
        # (`model.metric_fn = lambda p, y: ...`), holding what that shows.
        return call_value(frozenset({Sym(InstanceRoot(f.cls), (AttrStep(name),))}), args, site, lookup)
    if module:
        # A member of nn.Module (or of a base the analysis does not see).
        out = members.module_method(Module(True), name, args, site)
        if any(type(x) is Module and not x.frozen for x in out.value):
            # `Net().to(device)`: the same object, still a `Net`.
            out.value = frozenset({f}) | (out.value - {Module(True)})
        return out
    if module is None:
        callee = Sym(InstanceRoot(f.cls), (AttrStep(name),))
        return call_value(frozenset({callee}), args, site, lookup)
    return Outcome()


# -- substitution ---------------------------------------------------------------


def bind_arguments(summary: FunctionSummary, args: CallArgs) -> dict[int, Value]:
    """Parameter index -> the argument value a call gives it."""
    binding: dict[int, Value] = {}
    names = summary.params
    for i, a in enumerate(args.args):
        if i < len(names):
            binding[i] = a
    for k, v in args.kwargs:
        if k in names:
            binding[names.index(k)] = v
    return binding


def substitute(v: Value, fn: int, binding: dict[int, Value], site: Site, lookup: Lookup, reroot: bool = False) -> Value:
    """``v`` (a summary's value) at a call: parameters of function ``fn``
    replaced by ``binding``'s values, other symbols resolved as far as
    ``lookup`` can, and (``reroot``) graphs made inside the callee re-rooted
    at the call, which under no_grad makes none."""
    if not v:
        return v
    outer = _budget[0]
    if outer >= 0:
        return _Substitution(fn, binding, site, lookup).value(v, reroot, 0)
    _budget[0] = RESOLVE_BUDGET
    try:
        return _Substitution(fn, binding, site, lookup).value(v, reroot, 0)
    except _OutOfBudget:
        return v  # left unresolved: what depends on it stays undecided
    finally:
        _budget[0] = outer


# Summary applications one resolution may make (-1: no resolution under
# way). Each application follows its callee's effects too, so chains of
# helpers fan out; past the budget the value stays unresolved, and a
# finding that needs it is not reported.
RESOLVE_BUDGET = 100
_budget = [-1]


class _OutOfBudget(Exception):
    pass


def follow(base: Value, path: tuple, fn: int, binding: dict[int, Value], site: Site, lookup: Lookup) -> Value:
    """Apply a symbol's steps to the value its root resolved to."""
    return _Substitution(fn, binding, site, lookup).follow(base, path, 0)


class _Substitution:
    """One substitution, with each value it meets done once (values are
    shared between the places that hold them)."""

    __slots__ = ("fn", "binding", "site", "lookup", "memo", "cuts", "deepest")

    def __init__(self, fn: int, binding: dict[int, Value], site: Site, lookup: Lookup) -> None:
        self.fn = fn
        self.binding = binding
        self.site = site
        self.lookup = lookup
        # (A value, reroot) -> what it became and how much deeper than it
        # the deepest value done in it stood, where none stood past depth 4;
        # (a value, reroot, its depth) -> what it became, where one did
        # (left as it was).
        self.memo: dict[tuple, tuple[Value, int] | Value] = {}
        self.cuts = 0  # values left as they are for their depth, so far
        self.deepest = 0  # the depth of the deepest value done, so far

    def value(self, v: Value, reroot: bool, depth: int) -> Value:
        if not v:
            return v
        symbolic = reroot or any(type(f) in _SYMBOLIC for f in v)
        if depth > 4:
            if symbolic:
                self.cuts += 1
            return v
        if not symbolic:
            return v
        # What a value becomes depends on how deep it stands only where a
        # value in it would stand past depth 4 (left as it is): a result is
        # read back at any depth that leaves room for the values done in it,
        # one where a value was left so at its own depth only. (Read back at
        # any depth, a value met first deep would be read back shallow, or
        # not, as the order the sets yield their facts in had it: another
        # value in each process. Keyed by depth, most values, which reach
        # nowhere near it, would be done again at each depth.)
        if depth > self.deepest:
            self.deepest = depth
        memo = self.memo
        hit = memo.get((v, reroot))
        if hit is not None:
            reach = depth + hit[1]  # type: ignore[index]
            if reach <= 4:
                if reach > self.deepest:
                    self.deepest = reach
                return hit[0]  # type: ignore[index]
        hit = memo.get((v, reroot, depth))
        if hit is not None:
            self.cuts += 1
            return hit  # type: ignore[return-value]
        cuts, deepest = self.cuts, self.deepest
        self.deepest = depth
        site = self.site
        # What each symbol resolves to, joined at the end all at once.
        resolved: list[Value] = []
        plain = []
        for f in v:
            t = type(f)
            if t is Sym:
                resolved.append(self.sym(f, depth))
            elif t is Graph:
                if reroot:
                    plain.append(TENSOR if site.off else Graph(site.node, site.fn, "leaf" if f.how == "leaf" else "call"))
                else:
                    plain.append(f)
            elif t is Saved:
                g = self.saved(f, reroot, depth)
                if g is not None:
                    plain.append(g)
            elif t is Container:
                plain.append(
                    Container(
                        f.kind,
                        tuple((k, self.value(x, reroot, depth + 1)) for k, x in f.items),
                        self.value(f.elem, reroot, depth + 1),
                    )
                )
            elif t is FunctionObj and f.bound is not None:
                plain.append(FunctionObj(f.fn, f.wrapped, self.value(f.bound, reroot, depth + 1)))
            elif t is Part:
                plain.append(Part(f.key, self.value(f.value, reroot, depth + 1)))
            else:
                plain.append(f)
        resolved.append(frozenset(plain))
        result = join_all(resolved)
        if self.cuts == cuts:
            memo[(v, reroot)] = (result, self.deepest - depth)
        else:
            memo[(v, reroot, depth)] = result
        if deepest > self.deepest:
            self.deepest = deepest
        return result

    def saved(self, f: Saved, reroot: bool, depth: int) -> Saved | None:
        needs: list[Sym] = []
        for s in f.needs:
            v = self.sym(s, depth)
            if needs_grad(v):
                needs = []
                break
            needs.extend(grad_syms(v))
        else:
            if f.needs and not needs:
                return None  # none of the inputs requires grad: nothing saved
        node = self.site.node if reroot else f.node
        fn_id = self.site.fn if reroot else f.fn
        return Saved(node, f.op, fn_id, f.result, needs_order(needs))

    def sym(self, s: Sym, depth: int) -> Value:
        root = s.root
        lookup = self.lookup
        base: Value | None
        if type(root) is ParamRoot and root.fn == self.fn:
            base = self.binding.get(root.index, NOTHING)
        elif type(root) is ParamRoot:
            base = lookup.param(root)
        elif type(root) is ImportRoot:
            base = lookup.imported(root)
        else:
            base = None
            if type(root) is InstanceRoot and lookup.is_module_class(root.cls) is not None:
                base = construct(root.cls, CallArgs(), self.site, lookup).value - {Sym(root)}
        if base is None:
            # Not resolvable here: keep the symbol, with what it was given
            # resolved as far as possible.
            if not any(type(st) is CallStep and (st.args or st.kwargs) for st in s.path):
                return frozenset({s})
            path = tuple(
                CallStep(
                    tuple(self.value(a, False, depth + 1) for a in st.args), tuple((k, self.value(a, False, depth + 1)) for k, a in st.kwargs), st.node,
                    st.literals, self.value(st.rest, False, depth + 1),
                )
                if type(st) is CallStep else st
                for st in s.path
            )
            return frozenset({Sym(root, path)})
        return self.follow(base, s.path, depth)

    def follow(self, base: Value, path: tuple, depth: int) -> Value:
        site, lookup = self.site, self.lookup
        v = base
        method: str | None = None  # `x.name(...)`: a method call, not a call of what `x.name` holds
        for st in path:
            if not v:
                return NOTHING
            t = type(st)
            if method is not None and t is not CallStep:
                v = attribute(v, method, site, lookup)
            if t is AttrStep:
                method = st.name
                continue
            name, method = method, None
            if t is ItemStep:
                v = subscript(v, st.key, site, lookup)
            elif t is OpStep:
                v = op(v, Site(site.node, site.fn, GradMode.OFF) if st.off else site)
            elif t is CallStep:
                cargs = CallArgs(
                    tuple(self.value(a, False, depth + 1) for a in st.args),
                    tuple((k, self.value(a, False, depth + 1)) for k, a in st.kwargs),
                    dict(st.literals),
                )
                at = Site(st.node if st.node is not None else site.node, site.fn, site.grad, site.depth + 1)
                if name is None:
                    v = call_value(v, cargs, at, lookup).value
                else:
                    # A module's or tensor's method (`m.named_parameters()`)
                    # is not a call of a submodule `m.named_parameters`.
                    direct = frozenset(f for f in v if type(f) is Module or type(f) in TENSOR_FACTS)
                    rest = v - direct
                    v = join(
                        call_method(direct, name, cargs, at, lookup).value if direct else NOTHING,
                        call_value(attribute(rest, name, site, lookup), cargs, at, lookup).value if rest else NOTHING,
                    )
            elif t is WrapStep:
                v = _wrap(v, st.mode)
        if method is not None and v:
            v = attribute(v, method, site, lookup)
        return v


_SYMBOLIC = (Sym, Container, Part, Saved, FunctionObj)
