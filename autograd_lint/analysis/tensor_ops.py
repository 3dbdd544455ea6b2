"""Tensor semantics: what an operation on tensors gives (a graph flows from
attached inputs, none under ``no_grad``), what a module call gives, and
what an op saves for backward, read from the saved-tensor ledger.
"""

from __future__ import annotations

from typing import Iterable

from autograd_lint.analysis import torch_api as api
from autograd_lint.analysis.api import TENSOR as TENSOR_OWNER
from autograd_lint.analysis.api import Gives, member
from autograd_lint.analysis.canonical import sorted_canonically
from autograd_lint.analysis.outcome import CallArgs, Outcome, SavesArg, Site, WritesArg, WritesSaved
from autograd_lint.analysis.joins import join, merge_containers
from autograd_lint.analysis.values import (
    BLOCK_INPUT,
    BOOL_V,
    MAYBE_STRUCTURE,
    NOTHING,
    NUMBER,
    NUMBER_V,
    STR,
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
    MultiView,
    OpStep,
    Plain,
    Ref,
    Saved,
    Sym,
    TensorKind,
    Value,
    container,
    plain_only,
    tensorish,
)


# -- operations -----------------------------------------------------------------


def op(v: Value, site: Site) -> Value:
    """The value of an operation on ``v`` (a new tensor computed from it)."""
    if not v:
        return v
    out = []
    off = site.off
    for f in v:
        t = type(f)
        if t is Graph or t is HookArg:
            out.append(TENSOR if off else f)
        elif t is TensorKind or t is Foreign:
            out.append(f)
        elif t is Leaf:
            out.append(TENSOR if off else Graph(site.node, site.fn, "leaf"))
        elif t is Saved:
            out.append(TENSOR)
        elif t is Plain:
            if f.kind == "str":
                out.append(STR)
            elif f.kind != "none":
                out.append(NUMBER)
        elif t is Sym:
            s = f.then(OpStep(off))
            if s is not None:
                out.append(s)
        elif t is Container:
            # `torch.cat([a, b])`, `torch.stack(xs)`: a tensor computed from
            # the elements, not the list.
            out.extend(op(f.all_values(), site))
    return frozenset(out)


def binop(name: str, a: Value, b: Value, site: Site) -> Value:
    if name in ("add", "mul"):
        # `xs + ys`, `[x] * n`: a list or tuple (a tensor operand aside).
        seqs = frozenset(f for f in a | b if type(f) is Container and f.kind in ("list", "tuple"))
        if len(seqs) > 1:
            # (One list of what both hold, as a join would merge them: a
            # value holds one container of each kind. Left two, the join
            # they next meet would merge them or not as the order it meets
            # values in had it: the order of a set, in each process another.)
            seqs = merge_containers(seqs)
        if seqs:
            rest = frozenset(f for f in a | b if type(f) is not Container and type(f) is not Plain)
            return join(seqs, op(rest, site)) if rest else seqs
    if name == "mod" and STR in a:
        return STR_V  # "%.3f" % value
    if (STR in a or STR in b) and name in ("add", "mul") and not (tensorish(a) or tensorish(b)):
        return STR_V
    if plain_only(a) and plain_only(b):
        if any(type(f) is Foreign for f in a | b):
            return frozenset(f for f in a | b if type(f) is Foreign)
        return NUMBER_V
    if not a or not b:
        # An unknown operand: the result is known only as far as the other
        # side makes it a tensor.
        known = op(a or b, site)
        return frozenset(f for f in known if type(f) is not Plain)
    out = join(op(a, site), op(b, site))
    if any(type(f) is not Plain for f in out):
        out = frozenset(f for f in out if type(f) is not Plain)
    return out


def compare(values: list[Value]) -> Value:
    return TENSOR_V if any(tensorish(v) for v in values) else BOOL_V


def unary(name: str, v: Value, site: Site) -> Value:
    if name == "not":
        return BOOL_V
    if name == "invert" and tensorish(v) and not any(type(f) is Graph for f in v):
        return TENSOR_V
    return op(v, site)


# -- modules ---------------------------------------------------------------------


def module_call(m: Module, args: CallArgs, site: Site) -> Outcome:
    inputs = args.args[0] if args.args else NOTHING
    out = Outcome()
    if m.inplace and args.args:
        out.effects.append(WritesArg(0, f"{(m.inplace_layer or m.qual or 'module').rsplit('.', 1)[-1]}(inplace=True)", m.inplace_node))
    if site.off:
        out.value = TENSOR_V
        return out
    value = {x for x in op(args.all_values(), site) if type(x) is not Plain}
    if m.parametric and not m.frozen:
        value.add(Graph(site.node, site.fn, "call"))
    value.add(TENSOR)
    if m.qual is None or m.qual in api.TUPLE_OUTPUT_MODULES:
        value.add(MAYBE_STRUCTURE)  # a model of unknown class, an LSTM: maybe a tuple or a dict
    out.value = frozenset(value)
    # What the module saves, from the ledger (its class's entry; for a
    # Sequential, its last layer's output), when anything requires grad:
    # its parameters, or its input.
    own = m.parametric and not m.frozen
    syms = grad_syms(inputs)
    if not (own or needs_grad(inputs) or syms):
        return out
    needs = () if own or needs_grad(inputs) else syms
    if m.inner_write is not None:
        node, layer, saver = m.inner_write
        out.effects.append(WritesSaved(node, f"{layer.rsplit('.', 1)[-1]}(inplace=True)", Saved(site.node, saver, site.fn, result=True, needs=needs)))
    result_op = m.output_op or m.qual
    entry = api.ledger_entry(result_op) if result_op else None
    if entry is not None and (entry.saves_result or (m.inplace and m.output_op is None and entry.inplace_saves_result)):
        saved = frozenset({Saved(site.node, entry.name, site.fn, result=True, needs=needs)})
        if m.qual in api.TUPLE_OUTPUT_MODULES and m.output_op is None:
            # `out, (h, c) = lstm(x)`: what it keeps is its output, the
            # first item; the states after it are other tensors.
            state = container("tuple", ((0, out.value), (1, out.value))) if m.qual in api.PAIRED_STATE_MODULES else out.value
            out.value = container("tuple", ((0, join(out.value, saved)), (1, state)))
        else:
            out.value = join(out.value, saved)
    # (A Sequential saves what its first layer saves of its input.)
    entry = api.ledger_entry(m.input_op or m.qual) if (m.input_op or m.qual) else None
    if args.args:
        if entry is not None:
            if entry.positional and entry.positional[0] in entry.saved_inputs:
                out.effects.append(SavesArg(0, Saved(site.node, m.qual or "module", site.fn, needs=needs)))
        elif own and (m.qual is None or m.qual not in api.MODULE_CONTAINERS):
            # A block we cannot see into: its first layer (Linear, Conv,
            # Embedding...) saves its input.
            out.effects.append(SavesArg(0, Saved(site.node, "module input", site.fn)))
    return out


def needs_grad(v: Value) -> bool:
    """May this value require grad (attached, a parameter, a hook's input,
    a block's input)?"""
    return any(type(f) in (Graph, Leaf, HookArg) or f is BLOCK_INPUT for f in v)


def grad_syms(v: Value) -> tuple[Sym, ...]:
    """The symbols whose requiring grad would make ``v`` require grad (in
    ``needs_order``'s order)."""
    return needs_order(f for f in v if type(f) is Sym)


def needs_order(syms: Iterable[Sym]) -> tuple[Sym, ...]:
    """``syms``, what a Saved fact needs (a set at heart), without repeats
    and in a canonical order: the same fact whatever order the sets they
    came from yield them in. (In another order, it is another fact in the
    analysis, though one once exported: which of two calls' effects sorts
    first would follow the sets' order.)"""
    out = tuple(syms)
    if len(out) > 1:
        out = tuple(sorted_canonically(set(out)))
    return out


# -- torch functions and the ledger -------------------------------------------------


def nn_module(q: str, args: CallArgs, site: Site) -> Module:
    """The module ``q(args)`` makes at ``site``."""
    if q == "torch.nn.Sequential":
        # Parametric when a layer is (or may be); its output is what its last
        # layer's op saves as result (ReLU, Sigmoid, Softmax...); it writes
        # its input in place when its first layer does.
        layers = [[f for f in a if type(f) is Module] for a in args.args]
        parametric = not layers or any(not mods or any(m.parametric for m in mods) for mods in layers)
        output_op = None
        # (A last layer that may be one of several: the first of its
        # classes by name, and the op its output is where every candidate
        # agrees, never the first its set yields: another from process to
        # process.)
        last = min((f.cls for f in args.args[-1] if type(f) is Instance), key=_ref_key, default=None) if args.args else None
        if layers and layers[-1]:
            ops = {_output_op(m) for m in layers[-1]}
            output_op = ops.pop() if len(ops) == 1 else None
        first = layers[0] if layers and len(layers[0]) == 1 else []
        inplace = bool(first) and first[0].inplace
        inner = _inner_write(layers)
        draws = any(m.draws for mods in layers for m in mods)
        input_op = (first[0].input_op or first[0].qual) if first else None
        if not inplace:
            return Module(parametric, q, False, output_op, last_layer=last, draws=draws, runs=blocks_of(args.args), input_op=input_op, inner_write=inner)
        return Module(
            parametric, q, True, output_op, inplace_node=first[0].inplace_node, inplace_layer=first[0].inplace_layer or first[0].qual,
            last_layer=last, draws=draws, runs=blocks_of(args.args), input_op=input_op, inner_write=inner,
        )
    inplace = args.literal("inplace") is True
    runs = blocks_of(args.args) if q in api.MODULE_CONTAINERS else frozenset()
    return Module(api.is_parametric_module(q), q, inplace, inplace_node=site.node if inplace else None, draws=_draws(q, args), runs=runs)


def _output_op(m: Module) -> str | None:
    """The ledger op whose result ``m``'s output is, if it saves it."""
    entry = api.ledger_entry(m.qual) if m.qual else None
    return m.output_op or (m.qual if entry is not None and _saves_output(entry, m.inplace) else None)


def _ref_key(r: Ref) -> tuple[str, str]:
    return (r.file, r.qualname)


def _saves_output(entry, inplace: bool) -> bool:
    """The op (a layer's class) saves its output: run out of place, or in
    place (`inplace=True`: its output is its input, written), as the
    ledger measured each."""
    return entry.inplace_saves_result if inplace else entry.saves_result


def _inner_write(layers: list[list[Module]]) -> tuple[object, str, str] | None:
    """The first layer of a Sequential that writes in place what the layer
    before it saved as its output (``nn.Sigmoid()`` then
    ``nn.ReLU(inplace=True)``; a nested Sequential's own, too)."""
    for before, after in zip(layers, layers[1:]):
        if len(before) != 1 or len(after) != 1:
            continue
        a, b = before[0], after[0]
        if a.inner_write is not None:
            return a.inner_write
        if not b.inplace or b.inplace_node is None:
            continue
        saver = a.output_op or a.qual
        entry = api.ledger_entry(saver) if saver else None
        if entry is not None and _saves_output(entry, a.inplace and not a.output_op):
            return (b.inplace_node, b.inplace_layer or b.qual or "module", entry.name)
    if layers and len(layers[-1]) == 1 and layers[-1][0].inner_write is not None:
        return layers[-1][0].inner_write
    return None


def blocks_of(values: tuple[Value, ...], depth: int = 0) -> frozenset:
    """The classes of this analysis among a container module's layers
    (``nn.ModuleList(Block() for _ in range(n))``, ``nn.Sequential(a, b)``)."""
    out: set = set()
    for v in values:
        for f in v:
            t = type(f)
            if t is Instance:
                out.add(f.cls)
            elif t is Module:
                out |= f.runs
            elif t is Container and depth < 2:
                out |= blocks_of((f.elem, *(x for _, x in f.items)), depth + 1)
    return frozenset(out)


def _draws(q: str, args: CallArgs) -> bool:
    """Built to draw random numbers when it runs (``nn.Dropout(0.1)``)."""
    if q not in api.RANDOM_DRAWS:
        return False

    def arg(position: int, keyword: str) -> tuple[bool, object]:
        if args.kw(keyword) is not None:
            return True, args.literal(keyword)
        if args.star:
            return True, None
        return position < len(args.args), args.literal(position)

    return api.shown_to_draw(api.RANDOM_DRAWS[q], arg)


def multi_views(t: Value, name: str, site: Site) -> Value:
    """What ``t.split(...)`` / ``torch.split(t, ...)`` (``name``) returns
    with grad on: views of ``t``; of a tensor that requires grad, a tuple
    whose every view carries the ``MultiView`` mark (`q, k, v =
    qkv.chunk(3)`)."""
    views = frozenset(f if type(f) is not Leaf else Graph(site.node, site.fn, "leaf") for f in t)
    if any(type(f) is Graph or type(f) is HookArg for f in views):
        return container("tuple", elem=views | {MultiView(site.node, site.fn, name)})
    return views


def torch_op(q: str, last: str, args: CallArgs, site: Site, functional: bool) -> Outcome:
    out = Outcome()
    if not functional and args.args and not site.off and api.is_multi_output_view_function(q) and any(type(f) in (Graph, HookArg, Leaf) for f in args.args[0]):
        # `torch.chunk(h, 2)` of a tensor that requires grad: views that carry
        # the mark (else an op's result, as before: what it may be is kept).
        out.value = multi_views(args.args[0], last, site)
        return out
    if functional and last == "one_hot":
        out.value = TENSOR_V
        return out
    base = api.inplace_base(last)
    if base is not None and not functional and args.args and q.count(".") == 1:
        # torch.relu_(x): writes its first argument.
        out.effects.append(WritesArg(0, f"{q.split('.', 1)[1]}()"))
        out.value = args.args[0]
        return out
    if functional and args.literal("inplace") is True and args.args:
        out.effects.append(WritesArg(0, f"{last}(inplace=True)"))
    values = args.all_values()
    if site.off:
        out.value = TENSOR_V if (tensorish(values) or not values) else frozenset(f for f in values if type(f) is Foreign) or TENSOR_V
        return out
    result = {f for f in op(values, site) if type(f) is not Plain}
    result.add(TENSOR)
    out.value = frozenset(result)
    if q.count(".") == 1:
        # `torch.topk(x, k)`, `torch.max(x, 1)`: as the tensor method.
        out.value = values_indices(member(TENSOR_OWNER, last).gives, out.value, args, 1)
    ledger_saves(q, args, site, out)
    return out


def dim_form(args: CallArgs, dim_at: int) -> bool | None:
    """Is the call the form along a dimension (``x.max(1)``,
    ``torch.max(x, dim=1)``): True; the whole-tensor form (``x.max()``):
    False; not known (``x.max(other)``, an argument of unknown kind): None.
    ``dim_at``: where a positional dim would be."""
    if args.kw("dim") is not None:
        return True
    given = args.args[dim_at] if len(args.args) > dim_at else None
    if given is None:
        return False
    return True if given and plain_only(given) else None


def values_indices(g: Gives, value: Value, args: CallArgs, dim_at: int) -> Value:
    """What a call that may return (values, indices) gives: the pair, whose
    indices are an integer tensor without graph; ``value`` as well where
    the call may be the one-tensor form (``x.max(other)``)."""
    if g is not Gives.VALUES_INDICES and g is not Gives.DIM_PAIR:
        return value
    pair = Container("tuple", ((0, value), (1, TENSOR_V)))
    form = True if g is Gives.VALUES_INDICES else dim_form(args, dim_at)
    if form is None:
        return value | {pair}
    return frozenset({pair}) if form else value


def _overload(qual: str, args: CallArgs, method: bool) -> str:
    """The ledger's key for this form of the call: ``torch.max[dim]`` for
    ``torch.max(x, 1)`` / ``x.max(dim=1)``, which saves other tensors than
    ``torch.max(x)``."""
    dim = f"{qual}[dim]"
    if api.ledger_entry(dim) is not None and dim_form(args, 0 if method else 1):
        return dim
    return qual


def ledger_saves(qual: str, args: CallArgs, site: Site, out: Outcome, receiver: Value | None = None) -> None:
    """What the op saves for backward, from the ledger: its result (a fact
    of the value), and its saved inputs (effects on the arguments)."""
    entry = api.ledger_entry(_overload(qual, args, receiver is not None))
    if entry is None or not entry.saves:
        return
    values = list(args.args)
    positional = entry.positional
    if receiver is not None and positional and positional[0] == "self":
        values = [receiver] + values
        offset = -1
    else:
        offset = 0
    # Arguments passed by the ledger's names for them (`src=w`) stand where
    # their names do; torch's functions name ATen's `self` `input`
    # (`torch.sigmoid(input=h)`).
    keywords: dict[int, str] = {}
    for name, v in args.kwargs:
        schema_name = "self" if name == "input" and offset == 0 else name
        if schema_name in positional:
            i = positional.index(schema_name)
            if i >= len(values):
                values.extend([NOTHING] * (i + 1 - len(values)))
                values[i] = v
                keywords[i] = name
    grads = [needs_grad(v) for v in values]
    syms = needs_order(s for v in values for s in grad_syms(v))
    if not any(grads) and not syms:
        return
    needs = () if any(grads) else syms
    g = member(TENSOR_OWNER, qual.rsplit(".", 1)[-1]).gives
    # (Of a (values, indices) pair, what the ledger calls the result is one
    # of the pair: not the tuple.)
    in_place = receiver is None and args.literal("inplace") is True
    if (entry.inplace_saves_result if in_place else entry.saves_result) and not (g is Gives.VALUES_INDICES or (g is Gives.DIM_PAIR and entry.name.endswith("[dim]"))):
        out.value = join(out.value, frozenset({Saved(site.node, entry.name, site.fn, result=True, needs=needs)}))
    inputs = entry.saved_inputs
    saved_positions = [i for i, name in enumerate(positional) if name and name in inputs and i < len(values)]
    for i in saved_positions:
        # Of two saved operands (a * b), each is kept for the other's
        # gradient: saved only when the other may require grad.
        others = [j for j in saved_positions if j != i]
        if others and not any(grads[j] or grad_syms(values[j]) for j in others):
            continue
        if plain_only(values[i]):
            continue  # a Python number: torch keeps its value, not a tensor of the caller's
        # (Saved for the others' gradients: it rests on them requiring
        # grad, not on this one.)
        if not others:
            saved_needs = needs
        elif any(grads[j] for j in others):
            saved_needs = ()
        else:
            saved_needs = needs_order(s for j in others for s in grad_syms(values[j]))
        out.effects.append(SavesArg(i + offset, Saved(site.node, entry.name, site.fn, needs=saved_needs), keywords.get(i)))
