"""Two parts of a run (run.py), each holding its own state behind a typed
interface: ``Effects``, the calls on parameters and imported objects its
summary keeps, and ``Proofs``, which calls a later ``backward()`` shows to
build a graph, from what each binding was made of. ``summarize`` makes the
run's summary. The proof-shape helpers the assignment part uses are here
too."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from autograd_lint.analysis import ir
from autograd_lint.analysis import api
from autograd_lint.analysis.paths import is_static
from autograd_lint.analysis.resolve import GradNotOff
from autograd_lint.analysis.state import base_loc, ClassAttr, Def, Frame, Global, Local, Loc
from autograd_lint.analysis.summaries import CallEffect, FunctionSummary
from autograd_lint.analysis.canonical import NODE_ORDER, sorted_canonically
from autograd_lint.analysis.values import TENSOR, AttrStep, CallStep, Container, GradMode, Graph, HookArg, ImportRoot, Instance, ItemStep, Leaf, Module, OpStep, ParamRoot, Qual, Sym, Value, container
from autograd_lint.analysis.syntax_facts import _NO_LITERAL, _is_classmethod, _literal

# run.Run, the class the proof-shape helpers are handed (run imports this
# module, not the other way).
Run = Any


class RunView(Protocol):
    """What the parts here read of the run they belong to."""

    fn: ir.Function
    index: int
    prog: Any  # interp.Program
    frame: Frame


class SummaryView(RunView, Protocol):
    """What ``summarize`` reads of a run."""

    returns: Value
    yields: list[tuple[Value, GradMode]]
    keeps: list
    effects: "Effects"
    steps: bool
    entry: GradMode | None
    param_writes: dict[int, str]
    param_backprops: set[int]
    outer_argument_modes: set[GradMode | None]  # (run_calls.Calls's)


# The calls on parameters and imported objects a function's summary keeps.
MAX_EFFECTS = 16


class Effects:
    """The calls on a parameter or an imported object a run made, for its
    summary: the first ``MAX_EFFECTS``, in the order the calls are made,
    each with the call it was heard at."""

    __slots__ = ("_effects", "_sites")

    def __init__(self) -> None:
        self._effects: list[CallEffect] = []
        self._sites: list[object] = []

    def add(self, ce: CallEffect, site: object) -> None:
        """One call may make several effects (one per symbol its callee may
        be), in the order of a set of facts: those are put in a canonical
        order (``_canonical_effects``), and which of them are kept follows
        it, so the summary is the same in every process."""
        effects = self._effects
        if ce in effects:
            return
        sites = self._sites
        if len(effects) >= MAX_EFFECTS and sites[-1] is not site:
            return
        effects.append(ce)
        sites.append(site)
        if len(effects) > MAX_EFFECTS:
            # Full: this call's own effects (the last ones) compete.
            i = len(sites) - 1
            while i > 0 and sites[i - 1] is site:
                i -= 1
            effects[i:] = _canonical_effects(effects[i:], NODE_ORDER.get())
            del effects[MAX_EFFECTS:]
            del sites[MAX_EFFECTS:]

    def in_call_order(self) -> tuple[CallEffect, ...]:
        """The effects in the order their calls were made, each call's own
        in a canonical order."""
        return tuple(_by_call(self._effects, self._sites))


def summarize(run: SummaryView) -> FunctionSummary:
    """The summary of what ``run`` found its function does, for any caller."""
    fn = run.fn
    prog = run.prog
    kind = "function"
    if fn.cls is not None:
        kind = "staticmethod" if is_static(fn) else "classmethod" if _is_classmethod(fn) else "method"
        if any(ir.dotted(d) in ("property", "functools.cached_property", "cached_property") for d in fn.decorators):
            kind = "property"
    context = None
    context_param = None
    if fn.is_generator and run.yields and any(ir.dotted(d) and ir.dotted(d).split(".")[-1] == "contextmanager" for d in fn.decorators):
        modes = {g for _, g, _ in run.yields}
        if len(modes) == 1:
            context = modes.pop()
        params = {p for _, _, p in run.yields}
        if context is GradMode.MAYBE and len(params) == 1:
            context_param = params.pop()
    if fn.name == "__enter__" and run.frame.reachable is not None:
        if run.frame.grad is not GradMode.ON or run.entry is not None:
            context = run.frame.grad if run.frame.grad is not GradMode.ON else None
    returns = run.returns
    if fn.is_generator:
        returns = container("list", elem=returns)
    return FunctionSummary(
        prog.fn_ref[fn.index],
        fn.index,
        tuple(fn.param_names),
        returns,
        tuple(_sort(run.keeps)),
        run.effects.in_call_order(),
        run.steps or fn.index in prog.stepping,
        frozenset(),
        run.entry,
        context,
        next(iter(run.outer_argument_modes)) if len(run.outer_argument_modes) == 1 else None,
        kind,
        fn.index in prog.calls_eval,
        tuple(sorted(run.param_writes.items())),
        prog.update_pairs(fn),
        tuple(sorted(run.param_backprops | prog.proven_params.get(fn.index, set()))),
        context_param,
        tuple(sorted(run.param_freezes)),
        run.asks_graph,
    )


class Proofs:
    """What a backward in this run proves: the names fed to it hold
    graphs, so do the values they were read from and the calls that made
    them.

    ``binds``: for each binding, (the location bound, what it was read
    from, the single call that made it, stored as an element of the
    location, the item of the call's value it was bound to, the binding's
    flow node, and, when an operator computed the value, the unresolved
    contexts around it, else None). ``evidence``: the locations (and
    elements, ``_Key``) fed to a backward. ``calls``: calls whose value a
    helper given it backpropagates. (It is handed its run where it reads
    it: holding it would make a reference cycle that keeps the module's
    tree alive until the cycle collector runs.)"""

    __slots__ = ("binds", "evidence", "calls", "detached")

    def __init__(self) -> None:
        self.binds: list[tuple[Loc, tuple, tuple, bool, int | None, object, tuple | None]] = []
        self.evidence: set = set()
        self.calls: set = set()
        # What a `.detach()` reads of a value of unknown origin: whoever
        # wrote it took it for one that carries a graph. It proves attached
        # what a backward would, but not that the function backpropagates
        # what it is given (`history.append(loss.detach())` logs the
        # caller's loss, it does not train on it).
        self.detached: set = set()

    def fed(self, sources: frozenset, elements: frozenset, key: "_Key | None") -> None:
        """``sources`` reach a backward; of ``elements`` (what locations
        hold), only ``key`` when it is known."""
        self.evidence |= sources
        if key is not None:
            self.evidence.add(key)
        else:
            self.evidence |= elements

    def prove(self, run: RunView) -> bool:
        """Names fed to backward hold graphs; so do the values they were
        read from, and the calls that made them. True when this found a
        call of this function proved anew."""
        prog = run.prog
        index = run.index
        # A script's own names (module level) are its locals.
        mine = Global if run.fn.is_module else Local
        # (And a function's `global loss` names: it binds them itself.)
        declared = run.fn.globals
        def own(k: object) -> bool:
            t = type(k)
            return (t is mine and (mine is Global or k.fn == index)) or t is ClassAttr or (t is Global and k.name in declared)  # type: ignore[attr-defined]

        new = False
        for node in self.calls:
            if node not in prog.proven:
                prog.proven.add(node)
                new = True
        seen = {k for k in self.evidence if own(k.loc if type(k) is _Key else base_loc(k))}
        if seen:
            new = self._prove(run, seen, True) or new
        # (Only bindings: `val = val.detach()` in a meter detaches what its
        # callers give, which proves nothing of the name's other values.)
        seen = {k for k in self.detached if type(k) is Def and own(k.loc)}
        if seen:
            new = self._prove(run, seen, False) or new
        return new

    def _prove(self, run: RunView, seen: set, backward: bool) -> bool:
        """What ``seen`` holds is attached: so are the values it was read
        from and the calls that made them. ``backward``: it is fed to a
        backward, so what the function is given that it is made of, the
        function backpropagates. True when this found something anew."""
        prog = run.prog
        index = run.index
        new = False
        # The parameters whose own given value a backward here is made of
        # (`loss = loss / n; loss.backward()`: `loss` as given).
        params = run.fn.param_names
        given = {k for k in seen if type(k) is Local and k.fn == index and k.name in params}
        changed = True
        while changed:
            changed = False
            # (`losses[it].backward()`: an element of what a binding of
            # `losses` holds; what is stored into it, at whatever index.)
            bound = {k.loc for k in seen if type(k) is Def}
            for loc, access, calls, element, position, flow, contexts in reversed(self.binds):
                if self._holds_module(run, loc):
                    continue  # a model called in the loss is not attached itself (nor what built it)
                keys = {k.key for k in seen if type(k) is _Key and k.loc == loc}
                if flow not in seen and loc not in seen and _ValuesOf(loc) not in seen and not (element and keys) and not (element and loc in bound):
                    if keys and len(access) + len(calls) == 1 and calls:
                        # `out = step(b); out["loss"].backward()`: the call's
                        # value is attached at that key (`losses, n =
                        # step(b); losses[0].backward()`: at item 0 of its
                        # item 0).
                        node = calls[0][0]
                        paths = {(k,) if position is None else (position, k) for k in keys}
                        if not paths <= prog.proven_keys.get(node, set()):
                            prog.proven_keys.setdefault(node, set()).update(paths)
                            new = True
                    continue
                # `loss = actor + critic` under `with timer("update"):` (a
                # context the analysis cannot see into), then backpropagated:
                # an operator's result holds a graph only where grad is on,
                # so that context leaves it on (and so for what else runs
                # inside it). Only an operator: a call may return a graph
                # made elsewhere.
                if not backward and contexts is not None:
                    # (A `.detach()` shows the value carries a graph, not
                    # which operand gave it one: what arithmetic computed,
                    # `self.coeff *= 0.5`, proves nothing of its operands.)
                    continue
                for c in contexts or ():
                    prog.grad_on_contexts.add(c)
                single = len(access) + len(calls) == 1
                given.update(a for a in access if type(a) is Local and a.fn == index and a.name in params)
                # (A binding an operator computed holds its own graph, the
                # backward shows: `loss += reg` from `loss = 0`, read later.)
                if backward and (not single or contexts is not None) and not element and type(flow) is Def and flow not in prog.proven_binds:
                    prog.proven_binds.add(flow)
                    new = True
                for a in access:
                    if a not in seen and a != loc:
                        seen.add(a)
                        changed = True
                if single and calls:
                    node, callee = calls[0]
                    targets = prog.proven_targets.setdefault(id(node), set())
                    if node not in prog.proven or loc not in targets:
                        new = True
                    if _ValuesOf(loc) in seen and node not in prog.proven_values:
                        prog.proven_values.add(node)
                        new = True
                    prog.proven.add(node)
                    # `loss, acc = step(...)`: only `loss` is proven attached.
                    targets.add(loc)
                    if callee and callee not in prog.proven_callees:
                        prog.proven_callees.add(callee)
                        prog.bump(("proven",))
        if not backward:
            return new
        # The function backpropagates what it is given: its summary tells
        # its callers.
        positions = {params.index(k.name) for k in given}
        known = prog.proven_params.setdefault(index, set())
        if not positions <= known:
            known |= positions
            new = True
        return new


    @staticmethod
    def _holds_module(run: RunView, loc: Loc) -> bool:
        """``loc`` is shown to hold a module (a layer, an instance of a
        module class, or by a method only modules have: `model.parameters()`)."""
        prog = run.prog
        if loc in prog.module_paths:
            return True
        v = run.frame.env.get(loc) or prog.shared.get(loc) or ()
        return any(type(f) is Module or (type(f) is Instance and prog.lookup.is_module_class(f.cls)) for f in v)


def _sort(items: list) -> list:
    """``items`` (a run's retains) sorted in place in a canonical order
    (they arrive in the order of sets of facts)."""
    if len(items) > 1:
        items[:] = sorted_canonically(items, NODE_ORDER.get())
    return items


def _by_call(effects: list, sites: list | None) -> list:
    """``effects`` in the order their calls were made, each call's own in
    a canonical order (in place)."""
    n = len(effects)
    i = 0
    while i < n - 1:
        j = i + 1
        while j < n and sites[j] is sites[i]:  # type: ignore[index]
            j += 1
        if j - i > 1:
            effects[i:j] = _canonical_effects(effects[i:j], None)
        i = j
    return effects


def _canonical_effects(effects: list, order) -> list:
    """One call's effects in a canonical order: by what they call (its
    symbols' roots and steps), the arguments' count and keywords; effects
    alike in all that, by ``order_cmp`` (which reads the values through:
    dearer), with ``order`` (``NODE_ORDER``'s) for the syntax nodes in
    them. Without it, effects that differ only in their nodes stay as
    they came: they are one effect once exported (nodes become None), and
    finding where nodes stand costs a walk of the module (so it is asked
    only where a cap keeps some of them: ``add_effect``)."""
    keys = [(_effect_key(e), i) for i, e in enumerate(effects)]
    keys.sort()
    out = []
    i = 0
    while i < len(keys):
        k = keys[i][0]
        j = i + 1
        while j < len(keys) and keys[j][0] == k:
            j += 1
        same = [effects[n] for _, n in keys[i:j]]
        out.extend(sorted_canonically(same, order) if j - i > 1 else same)
        i = j
    return out


def _effect_key(e: CallEffect) -> tuple:
    return (sorted([_sym_key(s) for s in e.callee if type(s) is Sym]), len(e.args), tuple([k for k, _ in e.kwargs]))


def _sym_key(s: Sym) -> tuple:
    r = s.root
    t = type(r)
    if t is ParamRoot:
        root: tuple = (0, r.fn, r.index)
    elif t is ImportRoot:
        root = (1, r.file, r.module, r.level, r.name or "")
    else:
        root = (2, r.cls.file, r.cls.qualname)
    steps = []
    for st in s.path:
        ts = type(st)
        if ts is AttrStep:
            steps.append((0, st.name))
        elif ts is ItemStep:
            k = st.key
            steps.append((1, -1 if k is None else 0 if type(k) is int else 1, "" if k is None else str(k)))
        elif ts is OpStep:
            steps.append((2, st.off))
        elif ts is CallStep:
            # (Not where the call stands: finding that builds the module's
            # order of nodes, which is dear.)
            steps.append((3, len(st.args), len(st.kwargs)))
        else:
            steps.append((4, str(getattr(st, "mode", ""))))
    return root, tuple(steps)


def computing_contexts(e: ir.Expr | None, run: Run) -> tuple | None:
    """For a binding whose value ``e`` an operator computes (``a + b``,
    ``-x``): the unresolved contexts around it (``with timer():``), each of
    which a backward of the value shows leaves grad on. None for any other
    binding."""
    if type(e) not in (ir.BinOp, ir.UnaryOp):
        return None
    return open_contexts(run)


def open_contexts(run: Run) -> tuple:
    """The unresolved contexts the run is inside of (``with timer():``)."""
    if not run.conds:
        return ()
    return tuple([c for c in run.conds if type(c) is GradNotOff and not c.decorator])


def _proof_shape(e: ir.Expr, run: Run) -> tuple[tuple, tuple]:
    """What a bound value was read from, for proofs: plain accesses
    (``loss = out.loss``) and single calls (``loss = criterion(...)``)."""
    t = type(e)
    if t is ir.Name:
        if e.id in run.comp:
            return (), ()
        loc = run.loc(e.id)
        return tuple(run.frame.defs.get(loc, (loc,))), ()
    if t is ir.Attr:
        if run.self_attr(e) is not None:
            return (run.attr_loc(e),), ()
        return _proof_shape(e.value, run)
    if t is ir.Subscript:
        return _proof_shape(e.value, run)
    if t is ir.Call:
        callee = ir.dotted(e.func) if type(e.func) is ir.Name or (type(e.func) is ir.Attr and type(e.func.value) is ir.Name) else None
        if type(e.func) is ir.Attr and api.independent(e.func.attr) is not None:
            return (), ()
        # `loss = per_token.mean()`, `torch.sum(pg_loss)`, `out.logits.float()`:
        # a tensor computed from one tensor and arguments that carry no
        # graph holds one only if that tensor does.
        through = _graph_source(e, run)
        if through is not None:
            return _proof_shape(through, run)
        # `sum(losses.values())`: every value of the dict is a term of the loss.
        if callee == "sum" and e.args and not e.args[0].star and e.args[0].keyword is None:
            inner = e.args[0].value
            if type(inner) is ir.Call and type(inner.func) is ir.Attr and inner.func.attr == "values" and type(inner.func.value) is ir.Name and not inner.args:
                name = inner.func.value.id
                if name not in run.comp:
                    return (_ValuesOf(run.loc(name)),), ()
        return (), ((e.node, callee if type(e.func) is ir.Name else None),)
    if t is ir.UnaryOp and e.op == "neg":
        return _proof_shape(e.operand, run)
    if t is ir.IfExp:
        # `sum(parts) if isinstance(parts, tuple) else parts`: what either
        # branch reads (backward proves the one taken, and both read `parts`).
        a_access, a_calls = _proof_shape(e.body, run)
        b_access, b_calls = _proof_shape(e.orelse, run)
        return a_access + b_access, a_calls + b_calls
    if t is ir.BinOp and e.op in ("add", "sub", "mul", "truediv"):
        # `loss_fn(...) * n_tokens`: what backward proves is the side that
        # can carry a graph, when the other is shown not to.
        if _inert(e.right, run) or (e.op in ("truediv", "mul") and _stored_count(e.right, run)):
            return _proof_shape(e.left, run)
        if _inert(e.left, run) or (e.op == "mul" and _stored_count(e.left, run)):
            return _proof_shape(e.right, run)
        # `total = recon + kl + aux` (terms unpacked from a model's output,
        # each summed into the loss): every term is one of the loss's,
        # attached. Only plain sums of names: `ce + w * reg` proves no `w`.
        terms = _sum_terms(e)
        if terms is not None and len(terms) >= 2 and not any(n.id in run.comp for n in terms):
            return tuple(d for n in terms for d in run.frame.defs.get(run.loc(n.id), (run.loc(n.id),))), ()
    return (), ()


def detached_names(e: ir.Expr, out: list) -> bool:
    """The names ``e`` computes its tensor from, through torch's tensor
    methods (receiver and arguments), the arguments of torch functions and
    both sides of arithmetic, into ``out``; False where another expression
    may give it a graph (an attribute, a subscript, a call of something
    else). (For a `.detach()`'s evidence. ``_proof_shape`` reads the same
    expressions for a backward's, through ``_graph_source``, but stops at
    `torch.cat(outs)` where this goes on to `outs`: the two differ on
    purpose until proofs of a backward follow a concatenated list too.)"""
    t = type(e)
    if t is ir.Name:
        out.append(e)
        return True
    if t is ir.Const:
        return True
    if t is ir.BinOp:
        return detached_names(e.left, out) and detached_names(e.right, out)  # type: ignore[attr-defined]
    if t is ir.UnaryOp:
        return detached_names(e.operand, out)  # type: ignore[attr-defined]
    if t is ir.Call:
        f = e.func  # type: ignore[attr-defined]
        dotted = ir.dotted(f) or ""
        if dotted.startswith("torch."):
            return all(a.keyword is None and not a.star and detached_names(a.value, out) for a in e.args)  # type: ignore[attr-defined]
        if type(f) is ir.Attr and api.member(api.TENSOR, f.attr).ledger is not None:
            # (A method torch's tensors have, `x.mean()`; not `dist.entropy()`.)
            return detached_names(f.value, out) and all(a.keyword is None and not a.star and detached_names(a.value, out) for a in e.args)  # type: ignore[attr-defined]
    return False


def _graph_source(e: ir.Call, run: Run) -> ir.Expr | None:
    """The one tensor whose graph ``e``'s result holds, if any: the
    receiver of a tensor method torch has, or the first argument of a
    torch function, the other arguments all inert. (Not a container:
    `torch.cat(outs)` holds the graphs of all of `outs`' elements.)"""
    func = e.func
    args = e.args
    if any(a.star for a in args):
        return None
    qual = _qualified(func, run)
    if qual is not None:
        if not args or args[0].keyword is not None or not api.graph_from_first_argument(qual):
            return None
        source, rest = args[0].value, args[1:]
    elif type(func) is ir.Attr and type(func.value) in (ir.Name, ir.Attr, ir.Subscript, ir.Call) and api.graph_from_receiver(func.attr):
        source, rest = func.value, args
    else:
        return None
    if type(source) is ir.Name and (source.id in run.comp or any(type(f) is Container for f in run.read(run.loc(source.id)))):
        return None
    if not all(_inert(a.value, run) for a in rest):
        return None
    return source


def _qualified(e: ir.Expr, run: Run) -> str | None:
    """``torch.sum`` / ``F.pad`` read through the names the module bound
    (``import torch.nn.functional as F``): the library object's qualified
    name."""
    if type(e) is ir.Name:
        if e.id in run.comp:
            return None
        return next((f.name for f in run.read(run.loc(e.id)) if type(f) is Qual), None)
    if type(e) is ir.Attr:
        base = _qualified(e.value, run)
        return f"{base}.{e.attr}" if base is not None else None
    return None


@dataclass(frozen=True, slots=True)
class _Key:
    """For proofs: the element ``key`` of what ``loc`` holds was fed to
    backward (``out["loss"].backward()``)."""

    loc: Loc
    key: object


@dataclass(frozen=True, slots=True)
class _ValuesOf:
    """For proofs: every value of the dict at ``loc`` was fed to backward."""

    loc: Loc


def _sum_terms(e: ir.Expr) -> "list[ir.Name] | None":
    """The names of ``a + b - c`` (None when it is not such a sum)."""
    if type(e) is ir.Name:
        return [e]
    if type(e) is ir.BinOp and e.op in ("add", "sub"):
        left, right = _sum_terms(e.left), _sum_terms(e.right)
        if left is not None and right is not None:
            return left + right
    return None


def _inert(e: ir.Expr, run: Run) -> bool:
    """A constant, or a name whose value is known and carries no graph
    (a count, a token total, a detached tensor)."""
    if _literal(e) is not _NO_LITERAL:
        return True  # `2`, `-1`
    if type(e) is ir.Call and type(e.func) is ir.Attr and api.independent(e.func.attr) is not None:
        return True  # `mask.bool()`, `x.numel()`, `t.detach()`: no graph, whatever `mask` is
    if type(e) is ir.Attr and api.independent(e.attr, attribute=True) is not None:
        return True  # `x.shape`
    if type(e) is ir.Name and e.id not in run.comp:
        v = run.read(run.loc(e.id))
        return bool(v) and not any(type(f) in (Graph, Sym, Leaf, HookArg) for f in v)
    return False


def _stored_count(e: ir.Expr, run: Run) -> bool:
    """``self.accum_steps`` as a divisor or factor: an attribute of ``self`` that this
    file never shows holding a tensor. A loss is divided by stored counts
    (accumulation steps, world size); a learnable divisor would be a
    parameter the class assigns, seen as such."""
    if type(e) is not ir.Attr or run.self_attr(e) is None:
        return False
    v = run.read(run.attr_loc(e))
    return not any(type(f) in (Graph, Leaf, HookArg) or f is TENSOR for f in v)
