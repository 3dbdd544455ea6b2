"""How a run calls: arguments, the callee's outcome (through summaries
and the transfer functions), what flows out of the call, and its effects
(backward, stores into containers, in-place writes, kept arguments, call
sites). The ``Calls`` part of ``Run``, with the helpers only it uses, and
``RunCore``: what it asks of the run."""

from __future__ import annotations

import dataclasses
from functools import lru_cache
from typing import Any, Protocol

from autograd_lint.analysis import ir
from autograd_lint.analysis import api, members
from autograd_lint.analysis import torch_api as lib
from autograd_lint.analysis.api import Member
from autograd_lint.analysis.canonical import sorted_canonically
from autograd_lint.analysis.paths import is_static, path_key
from autograd_lint.analysis.callee import Callee, resolve
from autograd_lint.analysis.observer import CallEvent, Keep, Point, Store
from autograd_lint.analysis.state import ESCAPE, AttrOf, ClassAttr, Frame, Global, Handed, Local, Loc, Ret
from autograd_lint.analysis.summaries import CallEffect
from autograd_lint.analysis.outcome import (
    MAY_RUN_MODULE,
    CallArgs,
    CalledFunction,
    RunsInit,
    Keeps,
    Outcome,
    SavesArg,
    Site,
    StaticGradMemory,
    Steps,
    AsksGraph,
    SymCall,
    WritesArg,
    WritesSaved,
    BackpropagatesArg,
)
from autograd_lint.analysis.tensor_ops import blocks_of, op
from autograd_lint.analysis.transfer import apply, call_method, call_qual, call_value, find_method, iterate
from autograd_lint.analysis.joins import all_values, join
from autograd_lint.analysis.values import (
    frozen_modules,
    AttrStep,
    NOTHING,
    TENSOR,
    ClassObj,
    Container,
    FunctionObj,
    GradMode,
    Graph,
    ImportRoot,
    Instance,
    InstanceRoot,
    Leaf,
    Module,
    OpStep,
    ParamRoot,
    Plain,
    Qual,
    Part,
    Saved,
    Sym,
    Value,
    container,
    attached,
    plain_only,
    tensorish,
)
from autograd_lint.analysis.records import CallSite, EMPTY, Origin, _LoopContext, reads_loop_items
from autograd_lint.analysis.run_proofs import Effects, Proofs, _Key
from autograd_lint.analysis.syntax_facts import _NO_LITERAL, _literal, _root_name
from autograd_lint.analysis.value_facts import _fresh_without_grad


class RunCore(Protocol):
    """What ``Calls`` reads and changes of the run it belongs to (run.py's
    ``Run``, with its statements, assignments and expressions)."""

    prog: Any  # interp.Program
    fn: ir.Function
    index: int
    frame: Frame
    cls: ir.Class | None
    family: str | None
    self_name: str | None
    comp: dict[str, tuple[Value, frozenset]]
    conds: tuple
    forced: bool
    loops: list[_LoopContext]
    statement_call: ir.Call | None
    effects: Effects
    proofs: Proofs

    # Scopes and state.
    def loc(self, name: str) -> Loc: ...
    def read(self, loc: Loc) -> Value: ...
    def write(self, loc: Loc, value: Value, strong: bool = True) -> None: ...
    def point(self, node: object) -> Point: ...
    def site(self, node: object) -> Site: ...
    def self_attr(self, e: ir.Expr) -> str | None: ...
    def root_loc(self, e: ir.Expr | None) -> Loc | None: ...
    def view_root(self, e: ir.Expr) -> tuple[Loc | None, str, str]: ...
    def written_into(self, base: ir.Expr, value: ir.Expr, v: Value) -> tuple[Value, object]: ...

    # Evaluation and what it reports.
    def ev(self, e: ir.Expr | None) -> tuple[Value, frozenset]: ...
    def sink(self, sources: frozenset, elements: frozenset = EMPTY, key: "_Key | None" = None) -> None: ...
    def mark_steps(self) -> None: ...
    def mark_saved(self, target: ir.Expr, fact: Saved) -> None: ...
    def mark_rebind(self, loc: Loc) -> None: ...
    def mutate(
        self, root: Loc, path: str, node: object, how: str, via: str, rhs: Value = NOTHING, asked: object = None, rhs_node: object = None, chained: bool = False,
        facts: Value | None = None,
    ) -> None: ...
    def mutate_temporary(self, target: ir.Call | str, value: Value, node: object, how: str, asked: object = None) -> None: ...
    def accumulate(self, target: ir.Expr, v: Value, src: frozenset, node: object, value_node: object) -> None: ...
    def assign_attr(self, target: ir.Attr, v: Value, src: frozenset, node: object, value_expr: ir.Expr | None) -> None: ...
    def _stored(self, container: Loc, value_expr: ir.Expr) -> None: ...
    def _keeps_param(self, v: Value, kind: str, into: str, into_param: int | None) -> None: ...
    def _param_index(self, e: ir.Expr) -> int | None: ...


def _returned_params(summary, index: int) -> set[int]:
    """The parameters a function returns as they are, or an op on them."""
    return {
        f.root.index for f in summary.returns
        if type(f) is Sym and type(f.root) is ParamRoot and f.root.fn == index and all(type(st) is OpStep for st in f.path)
    }


class Calls:
    """A run's calls (run.py's ``Run`` owns one): what each call gives and
    does. What it reads and changes of the run goes through ``RunCore``;
    its own state is what its function's summary says of its calls
    (``outer_argument_modes``). (It holds its run only while the run runs:
    ``close`` lets go of it, so that no reference cycle keeps the module's
    tree alive.)"""

    __slots__ = ("run", "outer_argument_modes")

    def __init__(self, run: "RunCore") -> None:
        self.run = run
        # The grad modes this function calls the first parameter of the
        # function it is nested in with: a decorator's wrapper calling the
        # function it decorates (`with torch.no_grad(): return fn(*a)`).
        self.outer_argument_modes: set[GradMode | None] = set()

    def close(self) -> None:
        self.run = None  # type: ignore[assignment]

    # -- calls ------------------------------------------------------------------------

    def call(self, c: ir.Call) -> tuple[Value, frozenset]:
        prog = self.run.prog
        func = c.func
        args: list[Value] = []
        arg_src: list[frozenset] = []
        kwargs: list[tuple[str, Value]] = []
        kw_src: dict[str, frozenset] = {}
        literals: dict = {}
        src: frozenset = EMPTY
        star = False
        rest: Value = NOTHING
        for a in c.args:
            v, s = self.run.ev(a.value)
            src = src | s
            if a.star:
                star = True
                if a.star == "*":
                    rest = join(rest, v)
                if a.star == "**":
                    for f in v:
                        if type(f) is Container:
                            kwargs.extend((k, x) for k, x in f.items if isinstance(k, str))
                continue
            lit = _literal(a.value)
            if a.keyword is not None:
                kwargs.append((a.keyword, v))
                kw_src[a.keyword] = s
                if lit is not _NO_LITERAL:
                    literals[a.keyword] = lit
            elif not star:
                if lit is not _NO_LITERAL:
                    literals[len(args)] = lit
                args.append(v)
                arg_src.append(s)
        cargs = CallArgs(tuple(args), tuple(kwargs), literals, star, rest)
        site = self.run.site(c.node)
        method: str | None = None
        recv: Value | None = None
        rsrc: frozenset = EMPTY
        if type(func) is ir.Attr:
            method = func.attr
            if type(func.value) is ir.Call and type(func.value.func) is ir.Name and func.value.func.id == "super" and self.run.cls is not None:
                recv = self.run.read(self.run.loc(self.run.self_name)) if self.run.self_name else NOTHING
                outcome = self._super_call(method, recv, cargs, site)
            elif self.run.self_attr(func) is not None and self.run.cls is not None and prog.find_method_ir(self.run.cls, method) is None and not self._subclass_method(method) and not self._module_method(method):
                # `self.net(x)`: calling what the attribute holds (a module).
                return self._call_held(c, func, args, arg_src, kw_src, cargs, src, site)
            else:
                recv, rsrc = self.run.ev(func.value)
                if method in prog.module_path_attrs and all(type(f) is Sym for f in recv) and path_key(self.run.fn, self.run.family, func) in prog.module_paths:
                    # `wrapper.model(x)` of a receiver nothing is known of,
                    # where `wrapper.model` is shown to hold a module: a call
                    # of what the attribute holds, as `self.net(x)` is.
                    return self._call_held(c, func, args, arg_src, kw_src, cargs, src, site)
                outcome = call_method(recv, method, cargs, site, prog.lookup)
            callee = recv
        else:
            callee, rsrc = self.run.ev(func)
            outcome = call_value(callee, cargs, site, prog.lookup)
            outer = self.run.fn.parent
            if outer is not None and not outer.is_module and any(type(f) is Sym and not f.path and f.root == ParamRoot(outer.index, 0) for f in callee):
                # (Grad on is the callers' mode, unless shown otherwise: a
                # timing wrapper sets no mode of its own.)
                self.outer_argument_modes.add(GradMode.OFF if self.run.frame.grad is GradMode.OFF else None)
        rc = self._call_effects(c, method, recv, callee, cargs, outcome, src | rsrc, rsrc, arg_src)
        return self._call_result(c, func, method, callee, args, arg_src, kw_src, cargs, outcome, src, rsrc, site, rc, recv)

    def _call_held(self, c: ir.Call, func: ir.Attr, args: list, arg_src: list, kw_src: dict, cargs: CallArgs, src: frozenset, site: Site) -> tuple[Value, frozenset]:
        """``x.attr(...)`` as a call of what the attribute holds."""
        callee, rsrc = self.run.ev(func)
        outcome = call_value(callee, cargs, site, self.run.prog.lookup)
        rc = self._call_effects(c, None, None, callee, cargs, outcome, src | rsrc, arg_src=arg_src)
        return self._call_result(c, func, None, callee, args, arg_src, kw_src, cargs, outcome, src, rsrc, site, rc)

    def _call_result(self, c: ir.Call, func: ir.Expr, method: str | None, callee: Value, args: list, arg_src: list, kw_src: dict,
                     cargs: CallArgs, outcome: Outcome, src: frozenset, rsrc: frozenset, site: Site, rc: Callee, recv: Value | None = None) -> tuple[Value, frozenset]:
        prog = self.run.prog
        value = outcome.value
        # A later .backward() proved this call builds a graph; or the same
        # callee did so elsewhere in the file and gets an attached input here.
        if not site.off and not plain_only(value) and not any(type(f) is Graph or type(f) is Container for f in value):
            if c.node in prog.proven:
                g = Graph(c.node, self.run.index, "backward")
                value = value | {g}
                if c.node in prog.proven_values:
                    value = value | container("dict", elem=frozenset({g}))
                self._mark_data(src | rsrc)
                if method is None:
                    self._proven_arguments(func, cargs, arg_src)
            elif method is None and self._proven_callee(func) and any(type(f) is Graph and f.how != "leaf" for a in args for f in a):
                value = value | {Graph(c.node, self.run.index, "backward")}
            elif method is None and self._proven_callee(func) and self._as_proven(func, cargs, arg_src):
                # (Given what the proven call was given, a batch of its own
                # included: it builds its graph here, as that one did.)
                value = value | {Graph(c.node, self.run.index, "call")}
                self._mark_data(src | rsrc)
        elif not site.off and c.node in prog.proven and any(type(f) is Container for f in value) and not attached(value):
            # A tuple a backward proved (`loss, stats = step(b)`): each item
            # may be the attached one (a binding keeps it where it was proven).
            value = _with_graph(value, Graph(c.node, self.run.index, "backward"), None)
            self._mark_data(src | rsrc)
        paths = prog.proven_keys.get(c.node)
        if paths and not site.off:
            value = _with_graph(value, Graph(c.node, self.run.index, "backward"), paths)
        module_call = self._is_module_call(callee, rc)
        # (A function of this file given the batch that gives back a graph
        # of its own, `loss = policy_loss(mb["obs"])`, runs a model on it as
        # a module call does: its loop is over data, and where its output
        # goes is followed from the call.)
        runs_model = module_call or (not site.off and any(type(f) is Graph and f.node is c.node and f.how == "call" for f in value))
        if runs_model:
            self._mark_data(src)
        # What flows out: a value computed from the inputs carries them (an
        # in-file function's result comes from its return, its arguments
        # flow into its parameters); numbers, strings and cut tensors carry
        # nothing.
        called = [prog.fn_by_qualname.get(e.ref.qualname) for e in outcome.effects if type(e) is CalledFunction and e.ref.file == prog.file]
        called = [f for f in called if f is not None]
        if plain_only(value) or (method is not None and _cuts_method(method)) or _fresh_without_grad(value, site):
            # (`xs.append(x)` gives None: what it stores stays in `xs`.) A
            # model's output made with grad off carries none of its inputs,
            # but where it goes is followed all the same (a function that
            # returns it, on one path, returns what nothing differentiates).
            out_src = frozenset({Origin(c.node)}) if module_call and site.off and not plain_only(value) else EMPTY
        else:
            out_src = src | rsrc
            if called and module_call:
                # (`runner.forward(batch)` of a parameter annotated with a
                # class that is not a module: the call may run a module
                # given in its place, and runs that class's method, whose
                # return is followed.)
                out_src = out_src | {Ret(f.index) for f in called if f.cls is not None and prog.is_module_class(f.cls) is False}
            elif called:
                out_src = rsrc | {Ret(f.index) for f in called}
                # What the function gives back of its arguments comes from
                # them here too (`scaler.scale(loss)` of a class whose `scale`
                # returns the loss: a backward of it is one of `loss`).
                for f in called:
                    summary = prog.summaries.get(f.index)
                    offset = 1 if _binds_receiver(f, method, callee) else 0
                    for p in _returned_params(summary, f.index) if summary is not None else ():
                        if 0 <= p - offset < len(arg_src):
                            out_src = out_src | arg_src[p - offset]
            if runs_model:
                out_src = out_src | {Origin(c.node)}
            elif _of_unknown_kind(recv if method is not None and recv is not None else callee):
                # (A call of something of unknown kind, `self.model.embed(t)`,
                # may run a model too: what it gives is its own output, not
                # only what it was given, when the evaluation rule asks whose
                # output a `.detach()` reads.)
                out_src = out_src | {Origin(c.node)}
                prog.unknown_calls.add(c.node)
        # The arguments flow into the parameters of the functions it runs,
        # whatever those give back (a `train_step` returning `loss.item()`
        # is handed the model all the same).
        for f in called:
            offset = 1 if _binds_receiver(f, method, callee) else 0
            names = f.param_names
            for i, s in enumerate(arg_src):
                if i + offset < len(names):
                    for x in s:
                        prog.edge(x, Local(f.index, names[i + offset]))
            for k, s in kw_src.items():
                if k in names:
                    for x in s:
                        prog.edge(x, Local(f.index, k))
        if not module_call and not plain_only(value) and (method is None or api.independent(method) is None):
            # Arguments handed to code the analysis cannot see, which may
            # keep or differentiate them.
            # (Not a function of this file whose summary is not made yet:
            # once it is, this run runs again and follows it.)
            unknown = not outcome.value and all(x is MAY_RUN_MODULE for x in outcome.effects) and not self._summary_pending(callee, method)
            # (What a function of this file calls in turn, its own run
            # follows from its parameters, which the arguments reach.)
            here_only = bool(called) and all(e.ref.file == prog.file for e in outcome.effects if type(e) is CalledFunction)
            if (unknown or any(type(e) is SymCall and not (e.nested and here_only) for e in outcome.effects)) and not _inert(rc):
                for x in src:
                    prog.edge(x, ESCAPE)
        elif module_call and not plain_only(value) and any(type(f) is Sym and type(f.root) is not ParamRoot for f in callee) and not _inert(rc):
            # A value of unknown kind called as a module is (its output is
            # followed from the call): what it is given stops at the call,
            # where the module that defines it may show it differentiates it
            # (an imported `update(fabric, loss, optimizer)` that runs
            # backward). (A parameter called, `loss_fn(pred, y)`, is what
            # its callers give: taken for a criterion, as before.)
            for i, s in enumerate(arg_src):
                for x in s:
                    prog.edge(x, Handed(id(c.node), i))
                prog.handed[Handed(id(c.node), i)] = callee
        if prog.listening["call"]:
            e = CallEvent(self.run.point(c.node), c, callee, recv, method, tuple(args), outcome, src | rsrc, src, self.run.statement_call is c, rc.qual, rc)
            for o in prog.listening["call"]:
                o.call(self.run, e)
        return value, out_src

    def _element_key(self, e: ir.Expr) -> "_Key | None":
        """``x["loss"]`` / ``xs[-1]`` of a name: that element, for proofs."""
        if type(e) is not ir.Subscript or type(e.value) is not ir.Name or e.value.id in self.run.comp:
            return None
        key = _literal(e.key) if e.key is not None else _NO_LITERAL
        if key is _NO_LITERAL or not isinstance(key, (str, int)) or isinstance(key, bool):
            return None
        return _Key(self.run.loc(e.value.id), key)

    def _module_method(self, name: str) -> bool:
        """``self.register_buffer(...)``, ``self.to(device)`` in a module
        class, ``self.post_init()`` in a class shown to be one: a method it
        inherits from ``nn.Module`` (or a base), not a call of an attribute
        — unless the class holds an attribute of that name. (In a class
        whose bases are not seen, `self.net(x)` of an attribute set there is
        the likelier reading of a name the API model does not know.)"""
        cls = self.run.cls
        if cls is None or self.run.family is None:
            return False
        module = self.run.prog.is_module_class(cls)
        if module is False or (module is None and not api.inherited_method(api.MODULE, name)):
            return False
        self.run.prog.depend(("loc", ClassAttr(self.run.family, name)))
        return name not in self.run.prog.class_attrs.get(self.run.family, {})

    def _subclass_method(self, name: str) -> bool:
        """A subclass of this method's class (in this module) defines ``name``."""
        cls = self.run.cls
        return cls is not None and bool(self.run.prog.class_summary(cls).overrides.get(name))

    def _summary_pending(self, callee: Value, method: str | None) -> bool:
        """``callee`` is a function of this file not summarised yet (a
        module's code run before the functions it calls): what it does to
        its arguments is not unknown, only not known yet."""
        if method is not None:
            return False
        prog = self.run.prog
        for f in callee:
            if type(f) is FunctionObj and f.fn.file == prog.file:
                fn = prog.fn_by_qualname.get(f.fn.qualname)
                if fn is not None and fn.index not in prog.summaries:
                    return True
        return False

    def _proven_callee(self, func: ir.Expr) -> bool:
        self.run.prog.depend(("proven",))
        return ir.dotted(func) in self.run.prog.proven_callees

    def _proven_arguments(self, func: ir.Expr, cargs: CallArgs, arg_src: list | None) -> None:
        """Keep what a proven call's arguments were made from (a few per
        callee: the first calls proven)."""
        name = ir.dotted(func)
        if name is None:
            return
        kept = self.run.prog.proven_args.setdefault(name, set())
        sig = arg_signature(cargs, self._items_given(arg_src))
        if sig not in kept and len(kept) < MAX_PROVEN_ARGS:
            kept.add(sig)
            self.run.prog.bump(("proven",))

    def _as_proven(self, func: ir.Expr, cargs: CallArgs, arg_src: list | None) -> bool:
        """Called with arguments made from what a call of the same callee
        that a backward proved was given: the same parameters, models and
        objects, data cut from the same source. What built the graph there
        is given here too."""
        name = ir.dotted(func)
        kept = self.run.prog.proven_args.get(name) if name is not None else None
        return bool(kept) and arg_signature(cargs, self._items_given(arg_src)) in kept  # type: ignore[operator]

    def _items_given(self, arg_src: list | None) -> tuple[bool, ...]:
        """Which positional arguments are what a loop (not a comprehension)
        reads from its items: a batch, whichever loader it comes from."""
        if arg_src is None:
            return ()
        return tuple(reads_loop_items(self.run.loops, s) for s in arg_src)

    def _super_call(self, method: str, recv: Value, cargs: CallArgs, site: Site) -> Outcome:
        """``super().method(...)``: the method of a base, with ``self``."""
        cls = self.run.cls
        assert cls is not None
        forward = api.member(api.MODULE, method).gives is api.Gives.FORWARD
        for b in self.run.prog.class_bases.get(cls.id, ()):
            # (A base that may be one of several: the first in a canonical
            # order, not the first the set yields.)
            for f in b if len(b) < 2 else sorted_canonically(b):
                if type(f) is ClassObj:
                    ref = find_method(f.cls, method, self.run.prog.lookup)
                    if ref is not None:
                        summary = self.run.prog.lookup.function(ref)
                        if summary is not None:
                            return apply(summary, CallArgs((recv,) + cargs.args, cargs.kwargs, {}, cargs.star), site, self.run.prog.lookup, True)
                elif type(f) is Sym:
                    callee = f.then(AttrStep(method))
                    if callee is not None:
                        out = call_value(frozenset({callee}), CallArgs((recv,) + cargs.args, cargs.kwargs), site, self.run.prog.lookup)
                        if forward and self.run.prog.is_module_class(cls) is not False and not site.off:
                            # A module's forward of a base not seen: its output is this call's graph.
                            out.value = out.value | {Graph(site.node, self.run.index, "call")}
                        return out
                elif type(f) is Qual and lib.is_base_module_class(f.name) and forward:
                    return Outcome(frozenset({Graph(site.node, self.run.index, "call")}))
        return Outcome()

    def _is_module_call(self, callee: Value | None, rc: Callee) -> bool:
        if callee is None:
            return False
        if rc.name is not None and not rc.forward:
            return False
        for f in callee:
            t = type(f)
            if t is Module or t is Sym:
                return True
            if t is Instance and self.run.prog.lookup.is_module_class(f.cls) is not False:
                return True
        return False

    def _mark_data(self, sources: frozenset) -> None:
        """A loop whose items are fed to a module (or a proven helper) is a
        loop over data."""
        for lc in self.run.loops:
            lf = lc.facts
            if not lf.data and not lf.over_model and not lc.items.isdisjoint(sources):
                lf.data = True

    def _call_effects(
        self, c: ir.Call, method: str | None, recv: Value | None, callee: Value, cargs: CallArgs, outcome: Outcome, sources: frozenset, recv_src: frozenset = EMPTY,
        arg_src: list | None = None,
    ) -> Callee:
        prog = self.run.prog
        func = c.func
        recv_expr = func.value if type(func) is ir.Attr else None
        qual = call_qual(method, recv, callee)
        rc = resolve(method, recv, qual)
        if rc.backward and recv and all(
            (type(f) is Module and f.qual is None)
            or (type(f) is Instance and prog.lookup.is_module_class(f.cls) and find_method(f.cls, method, prog.lookup) is not None)  # type: ignore[arg-type]
            for f in recv
        ):
            # `flow.backward(z)` of a module whose class defines it, or of
            # a user's module of unseen class (an `nn.Module` has no
            # `backward` of its own): the model's own inverse pass, not
            # autograd's backward. (Not a torch layer's: `nn.MSELoss(a,
            # b).backward()` is a loss misused, meant as autograd's.)
            rc = dataclasses.replace(rc, backward=False)
        if rc.parameter_list:
            prog.parameter_lists.add(c.node)
        if method is not None and type(recv_expr) in (ir.BinOp, ir.Call) and recv is not None and tensorish(recv) and api.independent(method) is not None:
            # `w.std().detach()`, `loss.sum().item()`: the op's output ends
            # here, so no backward reaches the op or what it saved.
            prog.op_cut.add(recv_expr.node)  # type: ignore[union-attr]
        if rc.refuses_graph and not (rc.refuses_graph_unless and cargs.literal(rc.refuses_graph_unless) is not False and c.keyword(rc.refuses_graph_unless) is not None):
            converted = (cargs.args[0] if cargs.args else None) if rc.converts_argument else recv
            prog.refused_graphs.update(f.node for f in converted or () if type(f) is Graph and f.how != "leaf" and f.node is not None)
        # Backward: a sink for everything it reads.
        if rc.backward or rc.autograd:
            # `losses[-1].backward()`: the backward of one element of what
            # `losses` holds, not of the others.
            element = recv_src if type(recv_expr) is ir.Subscript and recv_expr.key is not None else EMPTY
            backpropagated = sources
            if recv is not None and cargs.args and not element and recv and not tensorish(recv) and (
                not any(type(f) is Sym for f in recv) or attached(cargs.args[0])
            ):
                # `accelerator.backward(loss)`, `self.manual_backward(loss)`:
                # the argument is backpropagated, not what the receiver was
                # made from. (A receiver of unknown kind given a gradient,
                # `out.backward(torch.ones_like(out))`, is the tensor: a
                # gradient has no graph of its own.)
                backpropagated = sources - recv_src
            self.run.sink(backpropagated - element, element, self._element_key(recv_expr) if element else None)
        elif recv is not None and rc.tensor is not None and rc.tensor.gives is api.Gives.DETACHED and type(recv_expr) is not ir.Subscript:
            # (`out["loss"].detach()` shows one element attached, not what
            # else the call gave.)
            self.run.read_detached(recv, recv_expr)
        if rc.mode is not None and (rc.mode is False or cargs.literal(0) is False or cargs.literal("mode") is False) and recv is not None and members.switches_mode(recv, rc.mode, len(c.args), prog.lookup):
            if self.run.index not in prog.calls_eval:
                prog.calls_eval.add(self.run.index)
                prog.bump(("stepping",))
        if rc.makes_leaf and recv_expr is not None and (cargs.literal(0) is False or cargs.literal("requires_grad") is False):
            self.freeze(recv_expr)
        elif not rc.makes_leaf and qual is not None and not qual.startswith("torch.nn.") and any(type(f) is Leaf and f.node is c.node for f in outcome.value):
            # `torch.tensor(v, requires_grad=True)`, `Variable(t, requires_grad=True)`
            # (not a module's parameter being built): the code asks for a graph.
            self.run.forced = True
        elif rc.makes_leaf and any(type(f) is Leaf and f.node is c.node for f in outcome.value):
            self.run.forced = True  # a tensor made to require grad here: the code asks for a graph
            # It acts in place: the receiver is that leaf from here on (as
            # after `x.requires_grad = True`).
            root = self.run.root_loc(recv_expr) if type(recv_expr) is ir.Name else None
            if root is not None:
                self.run.write(root, join(self.run.read(root), frozenset({Leaf(c.node, self.run.index)})))
        elif rc.makes_leaf and recv and not any(type(f) in (Module, Instance, ClassObj) for f in recv):
            # `data["pos"].requires_grad_(True)` of what its callers give: a
            # tensor (a module's would be one of those), made to require
            # grad. Their value asks for a graph: so does any caller's run
            # (a force field's forward preparing its input, ``asks_graph``).
            self.run.forced = True
            self.run.asks_graph = self.run.asks_graph or any(type(f) is Sym and type(f.root) is ParamRoot for f in recv)
        # Container stores: `c.append(v)`, `d.setdefault(k, v)`, `s.add(v)`.
        if method is not None and recv_expr is not None and recv is not None:
            row = members.stores(recv, method)
            idx = row.stores if row is not None else None
            if row is not None and idx is not None and len(c.args) > idx and not c.args[idx].star and c.args[idx].keyword is None:
                self._store_call(c, row, recv_expr, idx)
            if members.sets_attribute(recv, method, prog.lookup):
                self._set_attribute_call(c, recv_expr, api.member(api.MODULE, method).sets_buffer)
            if api.member(api.LIST, method).clears:
                root = self.run.root_loc(recv_expr)
                if root is not None:
                    self.run.mark_rebind(root)
        for eff in outcome.effects:
            t = type(eff)
            if t is WritesArg:
                target = recv_expr if eff.index < 0 else _positional(c, eff.index)
                if target is not None and (eff.index >= 0 or method is None or lib.writes_in_place(method)):
                    root, path, via = self.run.view_root(target)
                    if root is None and type(target) is ir.Call and eff.index >= 0 and eff.index < len(cargs.args):
                        # `F.dropout(torch.sigmoid(y), inplace=True)`: the
                        # tensor written is the inner call's result, which
                        # that op may have saved.
                        self.run.mutate_temporary(target, cargs.args[eff.index], c.node, eff.how, eff.node)
                    if root is not None:
                        if eff.index < 0 and arg_src is not None:
                            # `out.add_(y)`, `acc.index_add_(0, i, y)`: what
                            # is written flows into the receiver.
                            for s in arg_src:
                                for x in s:
                                    self.run.prog.edge(x, root)
                        rhs, first = self._written_operand(c, cargs, target) if eff.index < 0 and method is not None else (NOTHING, None)
                        chained = type(target) is ir.Call and type(target.func) is ir.Attr and lib.writes_in_place(target.func.attr)
                        self.run.mutate(root, path, c.node, eff.how, via, rhs, asked=eff.node, rhs_node=first, chained=chained)
            elif t is BackpropagatesArg:
                # A helper backpropagates what it is given: a backward of
                # the argument, here.
                given = recv_src if eff.index < 0 else arg_src[eff.index] if arg_src is not None and eff.index < len(arg_src) else EMPTY
                if given:
                    self.run.sink(given)
                target = recv_expr if eff.index < 0 else _positional(c, eff.index)
                if type(target) is ir.Call:
                    # `helper(criterion(out, y))`: that call is shown to
                    # build a graph (as `criterion(out, y).backward()`).
                    self.run.proofs.calls.add(target.node)
            elif t is WritesSaved:
                # `nn.Sequential(..., nn.Sigmoid(), nn.ReLU(inplace=True))`:
                # the call writes what one of its layers saved.
                self.run.mutate_temporary(eff.saved.op, frozenset({eff.saved}), c.node, eff.how, eff.node)
            elif t is SavesArg:
                target = recv_expr if eff.index < 0 else c.keyword(eff.keyword) if eff.keyword is not None else _positional(c, eff.index)
                if target is not None:
                    self.run.mark_saved(target, eff.fact)
            elif t is Keeps:
                self._helper_keeps(c, method, recv_expr, eff, cargs)
            elif t is SymCall:
                self._sym_call(c, method, recv_expr, eff)
            elif t is Steps:
                self.run.mark_steps()
            elif t is AsksGraph:
                # (`data = self._preprocess(data)`, which makes a field of
                # what it is given require grad: so does this code.)
                self.run.asks_graph = True
            elif t is CalledFunction:
                fn = prog.fn_by_qualname.get(eff.ref.qualname) if eff.ref.file == prog.file else None
                bound = method is not None if fn is None else _binds_receiver(fn, method, callee)
                self._call_site(c.node, eff, callee if method is None else recv, cargs, bound)
                summary = prog.summaries.get(fn.index) if fn is not None else None
                for p in summary.freezes if summary is not None else ():
                    # `self.fix_network(self.vit)`: the helper froze what it was given.
                    arg = _positional(c, p - 1 if bound else p)
                    if arg is not None:
                        self.freeze(arg)
            elif t is RunsInit:
                self._init_site(c.node, eff, outcome.value, cargs, arg_src)
            elif t is StaticGradMemory:
                prog.static_grad_memory = True
        out = c.keyword("out")
        if out is not None and qual is not None and qual.startswith("torch."):
            root, path, via = self.run.view_root(out)
            if root is not None:
                self.run.mutate(root, path, c.node, "out=", via)
        self._accumulated_in_place(c, method, recv, recv_expr, cargs, sources)
        # Calling an in-file module saves what its forward saves of its own
        # attributes (`critic.w1` after `critic(x)`), until backward.
        if method is None and type(func) in (ir.Name, ir.Attr) and not self.run.frame.grad is GradMode.OFF:
            self._forward_saved_attrs(c, callee)
        return rc

    def _accumulated_in_place(self, c: ir.Call, method: str | None, recv: Value | None, recv_expr: ir.Expr | None, cargs: CallArgs, sources: frozenset) -> None:
        """``total.add_(loss)`` accumulates into ``total`` as ``total +=
        loss`` does. (``torch.add(total, loss, out=total)`` is not one:
        with an attached operand torch raises, `out=` being outside
        autograd.)"""
        if method is None or not api.member(api.TENSOR, method).accumulates or type(recv_expr) not in (ir.Name, ir.Attr) or not cargs.args or c.has_star:
            return
        # A local tensor outside any loop (a residual `out.add_(x)` in a
        # forward) outlives no iteration: not an accumulation to follow.
        if not self.run.loops and type(recv_expr) is ir.Name and type(self.run.loc(recv_expr.id)) is Local:
            return
        pos = c.positional()
        if not pos:
            return
        if recv is not None and tensorish(recv):
            self.run.accumulate(recv_expr, op(cargs.args[0], self.run.site(c.node)), sources, c.node, pos[0].node)  # type: ignore[arg-type]

    def _written_operand(self, c: ir.Call, cargs: CallArgs, receiver: ir.Expr) -> tuple[Value, object]:
        """What a tensor's in-place method writes into its receiver, and
        its node: the first operand that may carry a graph, else the first
        that is not a number (`buf.lerp_(target, 0.1)`,
        `buf.index_add_(0, idx, src)`), less what the receiver held
        (`buf.copy_(0.9 * buf + 0.1 * m)` brings `m`)."""
        operands = [(v, a) for a, v in zip(c.positional(), cargs.args) if v and not plain_only(v)]
        for v, a in operands:
            if any(type(f) in (Graph, Leaf, Sym) for f in v):
                return self.run.written_into(receiver, a, v)
        return (operands[0][0], operands[0][1].node) if operands else (NOTHING, None)

    def _set_attribute_call(self, c: ir.Call, recv_expr: ir.Expr, buffer: bool = False) -> None:
        """``self.register_buffer("avg", t)``: the assignment ``self.avg =
        t``, for a literal name. (A buffer is a tensor, never a trainable
        parameter: whatever it is given, `torch.tensor` of an array, it holds
        a tensor, attached where what it is given is.)"""
        pos = c.positional()
        if len(pos) < 2 or c.has_star:
            return
        name = _literal(pos[0])
        if type(name) is not str or not name.isidentifier():
            return
        v, src = self.run.ev(pos[1])
        if buffer:
            v = frozenset(f for f in v if type(f) is Graph) | {TENSOR}
        self.run.assign_attr(ir.Attr(recv_expr, name, c.node), v, src, c.node, pos[1])

    def freeze(self, e: ir.Expr) -> None:
        """``model.requires_grad_(False)``: its parameters no longer require
        grad; calling it builds no graph of its own."""
        loc = self.run.root_loc(e) if type(e) in (ir.Name, ir.Attr) else None
        if loc is None:
            return
        names = self.run.fn.param_names
        if type(loc) is Local and loc.fn == self.run.index and type(e) is ir.Name and e.id in names:
            self.run.param_freezes.add(names.index(e.id))
        old = self.run.read(loc)
        if type(loc) is ClassAttr and type(e) is ir.Attr and self.run.self_attr(e) is not None and self.run.fn.name in lib.ONCE_METHODS:
            # `self.backbone.requires_grad_(False)` in `__init__`: the
            # attribute holds a frozen module for every method, what this
            # method writes to it included (the flow-insensitive state of
            # `self` would otherwise keep the module it held before). Not
            # one layer of it, `self.layers[0]`: the others still train.
            self.run.prog.freeze_attr(loc)
        if any(type(f) is Module for f in old):
            self.run.write(loc, frozen_modules(old))

    def _store_call(self, c: ir.Call, row: Member, recv_expr: ir.Expr, idx: int) -> None:
        method = row.name
        container_loc = self.run.root_loc(recv_expr)
        if container_loc is None:
            return
        value_expr = c.args[idx].value
        v, src = self.run.ev(value_expr)
        if row.owner == api.MODULE:
            # `self.stages.append(Block(c))`: a layer of the container, not
            # a value stored; calling a layer taken out of it runs its class.
            self._add_layers(container_loc, iterate(v, self.run.site(c.node)) if row.spread else v)
            return
        keyed = row.owner == api.DICT
        # `history.update(losses)` with the same keys every time replaces
        # one set of slots (the last iteration's values), as `d["k"] = v` does.
        dicts = [f for f in v if type(f) is Container]
        fixed_keys = keyed and row.spread and bool(dicts) and all(f.kind == "dict" and f.items and not f.elem for f in dicts)
        if row.spread:
            v = _dict_values(v) if keyed else iterate(v, self.run.site(c.node))
        # Keep the container's element facts (when the receiver is the
        # container itself, not an element of it: `d[k].append(v)`).
        if type(recv_expr) is ir.Name or self.run.self_attr(recv_expr) is not None:
            old = self.run.read(container_loc)
            if any(type(f) is Container for f in old):
                self.run.write(container_loc, frozenset(Container(f.kind, f.items, join(f.elem, v)) if type(f) is Container else f for f in old), strong=type(container_loc) is Local)
            elif type(container_loc) is not Local:
                self.run.write(container_loc, container("list", elem=v), strong=False)
        overwrites = fixed_keys
        if keyed and not row.spread:
            # `d.setdefault(k, v)`: one slot per literal key.
            key = _literal(c.args[0].value) if c.args else _NO_LITERAL
            overwrites = key is not _NO_LITERAL
        for x in src:
            self.run.prog.edge(x, container_loc)
        if not row.spread:
            self.run._stored(container_loc, value_expr)
        shown = value_expr
        if keyed and row.spread and type(value_expr) is ir.DictX and len(value_expr.values) == 1 and value_expr.keys[0] is not None:
            shown = value_expr.values[0]  # `history.update({f"loss/{step}": loss})`: the message names `loss`
        elif row.spread and type(value_expr) is ir.Seq and len(value_expr.elts) == 1:
            shown = value_expr.elts[0]  # `history.extend([loss])`: the message names `loss`
        e = Store(self.run.point(c.node), container_loc, ir.dotted(ir.container_root(recv_expr)) or "?", v, src, shown.node, method, overwrites)
        for o in self.run.prog.listening["store"]:
            o.store(self.run, e)
        if type(container_loc) is not Local or container_loc.fn != self.run.index or _root_name(recv_expr) in self.run.fn.param_names:
            self.run._keeps_param(v, "store", ir.dotted(ir.container_root(recv_expr)) or "?", self.run._param_index(recv_expr))

    def _add_layers(self, loc: Loc, layers: Value) -> None:
        """The module container at ``loc`` is given ``layers``: the classes
        of this analysis among them join those it runs."""
        blocks = blocks_of((layers,))
        old = self.run.read(loc)
        if blocks and any(type(f) is Module and not blocks <= f.runs for f in old):
            new = frozenset(dataclasses.replace(f, runs=f.runs | blocks) if type(f) is Module else f for f in old)
            self.run.write(loc, new, strong=type(loc) is Local)

    def _helper_keeps(self, c: ir.Call, method: str | None, recv_expr: ir.Expr | None, eff: Keeps, cargs: CallArgs) -> None:
        """What a helper keeps of its arguments (a meter's ``update``)."""
        bound = method is not None and recv_expr is not None
        r = eff.retain
        arg_index = r.param - 1 if bound else r.param
        if arg_index < 0 or arg_index >= len(cargs.args):
            return
        kept = cargs.args[arg_index]
        value_expr = _positional(c, arg_index)
        if r.into_param == 0 and bound:
            container_loc = self.run.root_loc(recv_expr) if recv_expr is not None else None
            text = ir.dotted(ir.container_root(recv_expr)) if recv_expr is not None else None
        elif r.into_param is not None:
            j = r.into_param - 1 if bound else r.into_param
            target = _positional(c, j)
            container_loc = self.run.root_loc(target) if target is not None else None
            text = ir.dotted(target) if target is not None else None
        else:
            container_loc, text = Global(f"<{eff.via.qualname}>"), eff.via.qualname
        e = Keep(self.run.point(c.node), container_loc, text or eff.via.qualname, kept, value_expr.node if value_expr is not None else c.node, r.kind, eff.via.qualname.rsplit(".", 1)[-1] if bound else eff.via.qualname)
        for o in self.run.prog.listening["keep"]:
            o.keep(self.run, e)
        # A helper of ours that passes its parameter on to one that keeps it.
        if r.into_param == 0 and bound and recv_expr is not None:
            self.run._keeps_param(kept, r.kind, text or "?", self.run._param_index(recv_expr))

    def _sym_call(self, c: ir.Call, method: str | None, recv_expr: ir.Expr | None, eff: SymCall) -> None:
        """A call on a parameter or an imported object: part of the summary,
        and, when it may keep an argument, an event decided later."""
        callee = eff.callee
        relevant = [f for f in callee if type(f) is Sym and ((type(f.root) is ParamRoot and f.root.fn == self.run.index) or type(f.root) in (ImportRoot, InstanceRoot))]
        if relevant:
            ce = CallEffect(frozenset(relevant), eff.args.args, eff.args.kwargs)
            self.run.effects.add(ce, c.node)
        if not eff.nested:
            self.run.prog.add_call_site(c.node, CallSite(self.run.index, None, callee, self.run.frame.grad, self.run.conds, eff.args.args, eff.args.kwargs, False))
        if method is None or recv_expr is None or eff.nested:
            return
        container_loc = self.run.root_loc(recv_expr)
        for i, a in enumerate(eff.args.args):
            if not a or plain_only(a):
                continue
            value_expr = _positional(c, i)
            e = Keep(self.run.point(c.node), container_loc, ir.dotted(ir.container_root(recv_expr)) or "?", a, value_expr.node if value_expr is not None else c.node, "", method, (callee, eff.args, i))
            for o in self.run.prog.listening["keep"]:
                o.keep(self.run, e)

    def _call_site(self, node: object, eff: CalledFunction, target: Value | None, cargs: CallArgs, bound: bool) -> None:
        prog = self.run.prog
        callee = prog.fn_by_qualname.get(eff.ref.qualname) if eff.ref.file == prog.file else None
        if callee is not None and callee.index in prog.summaries and prog.summaries[callee.index].steps:
            self.run.mark_steps()
        args = cargs.args
        if bound:
            recv = next((f for f in (target or ()) if type(f) is Instance), None)
            args = (frozenset({recv}) if recv is not None else NOTHING,) + args
        looped = any(not lc.facts.comprehension for lc in self.run.loops)
        prog.add_call_site(
            node, CallSite(self.run.index, callee.index if callee is not None else None, frozenset({FunctionObj(eff.ref)}), eff.grad, self.run.conds, args, cargs.kwargs, bound, looped)
        )

    def _init_site(self, node: object, eff: RunsInit, made: Value, cargs: CallArgs, arg_src: list | None) -> None:
        """``Trainer(model, optimizer)`` runs ``Trainer.__init__`` with the
        new instance as ``self``: a call site of it, bound to that instance
        (what its callers give its parameters: the model and the optimizer
        `main()` built), and the arguments flow into its parameters."""
        prog = self.run.prog
        init = prog.fn_by_qualname.get(eff.ref.qualname) if eff.ref.file == prog.file else None
        if init is None:
            return
        self._call_site(node, CalledFunction(eff.ref, eff.grad), made, cargs, True)
        names = init.param_names
        for i, s in enumerate(arg_src or ()):
            if i + 1 < len(names):
                for x in s:
                    prog.edge(x, Local(init.index, names[i + 1]))

    def _forward_saved_attrs(self, c: ir.Call, callee: Value) -> None:
        root = self.run.root_loc(c.func) if type(c.func) in (ir.Name, ir.Attr) else None
        if root is None:
            return
        for f in callee:
            if type(f) is Instance and f.cls.file == self.run.prog.file:
                cls = self.run.prog.class_by_qualname.get(f.cls.qualname)
                if cls is None:
                    continue
                fam = self.run.prog.family_of[cls.id]
                for attr in self.run.prog.forward_saves.get(fam, ()):
                    loc = AttrOf(root, attr)
                    self.run.frame.env[loc] = join(self.run.frame.env.get(loc, NOTHING), frozenset({Saved(c.node, f"{cls.name}.forward", self.run.index)}))


def _with_graph(v: Value, g: Graph, paths: set | None) -> Value:
    """``v`` attached (``g``) at the key ``paths`` (``(0, "loss")``: key
    "loss" of item 0) of the containers it may be, and at the items equal
    to a proven one (``(loss, loss)``); ``paths`` None: at the top and at
    every item of its tuples and lists."""
    if paths is None:
        out: list = [g]
        for f in v:
            if type(f) is Container and f.kind in ("tuple", "list"):
                f = Container(f.kind, tuple((k, x | {g}) for k, x in f.items), f.elem)
            out.append(f)
        return frozenset(out)
    heads: dict = {}
    for p in paths:
        heads.setdefault(p[0], set()).add(p[1:])
    out = []
    known: set = set()
    for f in v:
        if type(f) is not Container:
            out.append(f)
            continue
        items = dict(f.items)
        known.update(k for k in heads if k in items)
        done = {k: _at(items[k], g, rest) for k, rest in heads.items() if k in items}
        proven = {items[k] for k in done}
        out.append(Container(f.kind, tuple((k, done.get(k) or (x | {g} if x in proven else x)) for k, x in f.items), f.elem))
    for k, rest in heads.items():
        if k not in known:
            out.append(Part(k, _at(NOTHING, g, rest)))
    return frozenset(out)


def _at(v: Value, g: Graph, rests: set) -> Value:
    """``v`` with ``g`` at the paths ``rests`` (``()``: at ``v`` itself)."""
    deeper = {r for r in rests if r}
    if () in rests:
        v = v | {g}
    return _with_graph(v, g, deeper) if deeper else v


def _binds_receiver(f: ir.Function, method: str | None, callee: Value) -> bool:
    """Calling ``f`` this way hands it its receiver as the first parameter:
    a method called on an object (`m.encode(x)`), or a module's `forward`
    run by calling the instance (`block(x)`: `self` is `block`)."""
    if f.cls is None or is_static(f):
        return False
    return method is not None or any(type(x) is Instance for x in callee)


def _of_unknown_kind(v: Value | None) -> bool:
    """``v`` may be a model: a module, or a symbol of unknown kind (an
    instance made elsewhere or handed in: `self.model`, `tokenizer`), not
    an imported module's name (`np`), whose functions are library code."""
    return bool(v) and any(type(f) is Module or (type(f) is Sym and (f.path or type(f.root) is not ImportRoot)) for f in v)  # type: ignore[union-attr]


@lru_cache(maxsize=None)
def _cuts_method(name: str) -> bool:
    """What ``x.name(...)`` gives carries nothing of ``x`` onward: a number,
    an integer tensor, a detached copy (``.item()``, ``.argmax()``,
    ``.detach()``), or nothing at all (``xs.append(v)`` gives None: what it
    stores stays in ``xs``)."""
    if api.independent(name) is not None:
        return True
    row = api.member(api.LIST, name)
    return row.stores is not None or row.clears


# Argument signatures kept per proven callee.
MAX_PROVEN_ARGS = 4


def arg_signature(cargs: CallArgs, items: tuple[bool, ...] = ()) -> tuple:
    """What each argument is made from, for comparing two calls: the
    roots of its symbols (a parameter, an import: `ts[idx]` and `ts` are
    both the generator's examples) and its facts other than plain tensors
    and numbers (a module, an instance, a graph of its own). A loop's item
    (``items``: by position) with no graph or leaf of its own is a batch,
    from whichever loader."""

    def of(v: Value) -> frozenset:
        out = set()
        for f in v:
            t = type(f)
            if t is Sym:
                out.add(f.root)
            elif t is not Plain and f is not TENSOR:
                out.add(f)
        return frozenset(out)

    def batch(i: int, v: Value) -> bool:
        return i < len(items) and items[i] and not any(type(f) in (Graph, Leaf) for f in v)

    return (
        tuple("batch" if batch(i, a) else of(a) for i, a in enumerate(cargs.args)),
        tuple(sorted((k, of(v)) for k, v in cargs.kwargs if k)),
        bool(cargs.rest),
    )




def _positional(c: ir.Call, i: int) -> ir.Expr | None:
    args = c.positional()
    return args[i] if 0 <= i < len(args) else None


def _dict_values(v: Value) -> Value:
    out: Value = NOTHING
    for f in v:
        if type(f) is Container:
            out = join(out, all_values(f))
        elif type(f) is not Plain:
            out = join(out, frozenset({f}))
    return out


def _inert(rc: Callee) -> bool:
    """The call keeps and differentiates nothing it is given (its library
    function, resolved once with the call, says so)."""
    qual = rc.qual
    if qual is not None and qual.startswith("builtins."):
        qual = qual[9:]
    return lib.is_inert_call(qual, rc.name)
