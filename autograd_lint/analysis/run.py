"""One run of one function: ``Run``, its scopes, its entry (grad mode,
parameters), its effects and the roots of expressions. The statements,
assignments and expressions it runs are mixins, each in a module of its
own (run_statements.py, run_assignment.py, run_expressions.py), so that no
one file holds the whole interpreter. Its calls, its proofs and the
effects its summary keeps are parts it owns (run_calls.py: ``Calls``;
run_proofs.py: ``Proofs``, ``Effects``), each behind a typed interface."""

from __future__ import annotations

from typing import Any

from autograd_lint.analysis import ir
from autograd_lint.analysis import api
from autograd_lint.analysis import torch_api as lib
from autograd_lint.analysis.api import Gives
from autograd_lint.analysis.paths import self_name, static_loc
from autograd_lint.analysis.observer import Mutation, Point
from autograd_lint.analysis.resolve import Condition, EntryGradOn, GradNotOff
from autograd_lint.analysis.state import BACKWARD, ELEMENT_BACKWARD, AttrOf, ClassAttr, Frame, Local, Loc
from autograd_lint.analysis.summaries import Retain
from autograd_lint.analysis.outcome import CallArgs, Outcome, SavesArg, Site
from autograd_lint.analysis.tensor_ops import ledger_saves
from autograd_lint.analysis.transfer import call_qual, call_value, wrapper_mode
from autograd_lint.analysis.joins import elements, join
from autograd_lint.analysis.values import (
    ACTIVATION,
    BLOCK_INPUT,
    NOTHING,
    TENSOR,
    ClassObj,
    Container,
    FunctionObj,
    GradMode,
    HookArg,
    Instance,
    InstanceRoot,
    Leaf,
    Module,
    MultiView,
    ParamRoot,
    Plain,
    Qual,
    Saved,
    Sym,
    Value,
    attached,
    container,
    plain_only,
    syms_in,
    tensorish,
    unseen_call_outputs,
)
from autograd_lint.analysis.records import EMPTY, _LoopContext
from autograd_lint.analysis.run_assignment import AssignmentMixin
from autograd_lint.analysis.run_calls import Calls
from autograd_lint.analysis.run_expressions import ExpressionsMixin
from autograd_lint.analysis.run_proofs import Effects, Proofs, _Key, detached_names
from autograd_lint.analysis.run_statements import StatementsMixin
from autograd_lint.analysis.syntax_facts import _is_classmethod, _tensor_index, method_class
from autograd_lint.analysis.value_facts import _decorator_modes, _tensor_attr

# program.Program, which makes the runs (program imports this module, not
# the other way).
Program = Any


# -- one run of one function --------------------------------------------------------


class Run(StatementsMixin, AssignmentMixin, ExpressionsMixin):
    """One interpretation of one function."""

    def __init__(self, prog: Program, fn: ir.Function) -> None:
        self.prog = prog
        self.fn = fn
        self.index = fn.index
        self.frame = Frame()
        self.conds: tuple[Condition, ...] = ()
        self.loops: list[_LoopContext] = []
        self.branch = 0
        # The tests of the `if` statements around the statement running
        # (an observer asks what a branch depends on).
        self.guards: list[ir.Expr] = []
        self.sides: list[bool] = []  # for each of ``guards``: in its `if` branch (True) or its `else`
        self.cls = method_class(fn)
        self.family = prog.family_of[self.cls.id] if self.cls is not None else None
        # (A nested function or lambda of a method closes over its `self`.)
        self.self_name: str | None = self_name(fn)
        self.in_forward = fn.cls is not None and fn.name == "forward" and prog.is_module_class(fn.cls) is not False
        self.returns: Value = NOTHING
        self.ret_sources: frozenset = EMPTY
        # What each `yield` gives, the grad mode there, and the parameter
        # whose truth set it.
        self.yields: list[tuple[Value, GradMode, int | None]] = []
        # The parameter whose truth sets the grad mode here, where a `with
        # torch.set_grad_enabled(<parameter>):` set it (else None).
        self.grad_param: int | None = None
        self.keeps: list[Retain] = []
        # The calls its summary keeps (run_proofs.Effects).
        self.effects = Effects()
        self.steps = False
        self.backward_calls = 0
        # What a backward here proves (run_proofs.Proofs).
        self.proofs = Proofs()
        # Its calls (run_calls.Calls).
        self.calls = Calls(self)
        # Comprehension targets -> (value, sources): what they iterate over.
        self.comp: dict[str, tuple[Value, frozenset]] = {}
        self.last_comp: tuple | None = None
        self.statement_call: ir.Call | None = None
        self.class_scope: ir.Class | None = None
        self.class_scope_names: set[str] = set()
        self.entry: GradMode | None = None
        # Grad explicitly enabled (`torch.enable_grad()`, a decorator): code
        # that asks for a graph.
        self.forced = False
        # The code makes a tensor its callers give require grad, or calls
        # what does (`data["pos"].requires_grad_()`): it asks for a graph of
        # what it is given (the summary's ``asks_graph``).
        self.asks_graph = False
        # Paths whose `requires_grad` this run set to False (`w.requires_grad
        # = False` before `w.copy_(new)`): no leaf check on their writes.
        self.flag_off: set[str] = set()
        # What this run read of other functions and shared state, with the
        # version it saw (Program.run_all runs it again when one changes).
        self.deps: dict[tuple, int] = {}
        self.bumped: set[tuple] = set()
        self._locs: dict[str, Loc] = {}
        self._srcs: dict[Loc, frozenset] = {}
        # Names bound to a view of another tensor (`tok = x[:, 0].view(n, c)`)
        # -> the location of the tensor they view.
        self.views: dict[Loc, Loc] = {}
        # Parameters written in place with grad on -> how (its summary's `writes`).
        self.param_writes: dict[int, str] = {}
        # Parameters whose value as given reaches a backward here.
        self.param_backprops: set[int] = set()
        # Parameters, by position, whose module's parameters it freezes.
        self.param_freezes: set[int] = set()

    # -- scopes --------------------------------------------------------------------

    def loc(self, name: str) -> Loc:
        if self.class_scope is None:
            hit = self._locs.get(name)
            if hit is None:
                hit = self._locs[name] = self._loc(name)
            return hit
        return self._loc(name)

    def _loc(self, name: str) -> Loc:
        if self.class_scope is not None and name in self.class_scope_names:
            return ClassAttr(self.prog.family_of[self.class_scope.id], name)
        return static_loc(self.fn, name)

    def read(self, loc: Loc) -> Value:
        for lc in self.loops:
            if loc not in lc.written:
                lc.carried.add(loc)
        v = self.frame.env.get(loc)
        if type(loc) is Local and loc.fn == self.index:
            if v is None:
                return NOTHING
            return v
        if v is not None:
            return v
        self.prog.depend(("loc", loc))
        return self.prog.shared.get(loc, NOTHING)

    def write(self, loc: Loc, value: Value, strong: bool = True) -> None:
        for lc in self.loops:
            lc.written.add(loc)
        env = self.frame.env
        if not strong:
            value = join(self.read(loc), value)
        value = self.prog.held(loc, value)
        env[loc] = value
        if type(loc) is not Local or loc.fn != self.index or (loc.fn, loc.name) in self.prog.captured:
            shared = self.prog.shared
            old = shared.get(loc)
            new = value if old is None else join(old, value)
            if new != old:
                shared[loc] = new
                self.prog.bump(("loc", loc))
                if type(loc) is ClassAttr:
                    self.prog.class_attr_written(loc, value)

    # -- the run -------------------------------------------------------------------

    def point(self, node: object) -> Point:
        return Point(self.fn, node, tuple([lc.facts.loop for lc in self.loops]) if self.loops else (), self.frame.grad, self.conds, self.branch)

    def site(self, node: object) -> Site:
        return Site(node, self.index, self.frame.grad)

    def run(self) -> None:
        prog, fn = self.prog, self.fn
        grad, conds, forced = self._entry()
        self.frame.grad = grad
        self.conds = conds
        self.entry = forced
        self.forced = forced is GradMode.ON
        self._bind_params()
        if fn.is_module:
            # A script's imports bind their names before any statement reads
            # them (code above `import torch` that uses `torch` runs only
            # where it was bound: an earlier cell, a star import).
            for st in fn.body:
                if type(st) is ir.Import:
                    self.bind_import(st)
        block = None
        for o in prog.listening["start"]:
            o.start(self)
        if forced is GradMode.OFF and self._no_grad_decorator() is not None:
            block = [(o, o.enter_grad_block(self, self._no_grad_decorator(), "decorator")) for o in prog.observers]
        self.block(fn.body)
        if self._returns_to_backward():
            self.sink(self.ret_sources)
        if block is not None:
            for o, token in block:
                o.exit_grad_block(self, token)
        for o in prog.listening["end"]:
            o.end(self)
        self.calls.close()

    def _returns_to_backward(self) -> bool:
        """Frameworks backpropagate what these return (Lightning's
        ``training_step``, a Trainer subclass's ``compute_loss``)."""
        fn = self.fn
        if fn.cls is None:
            return False
        if fn.name == "training_step" and self.prog.is_lightning(fn.cls):
            return True
        if fn.name in lib.TRAINER_LOSS_METHODS:
            return any((ir.dotted(b) or "").split(".")[-1].endswith("Trainer") for b in fn.cls.bases)
        return False

    @property
    def outer_argument_modes(self) -> set[GradMode | None]:
        return self.calls.outer_argument_modes

    def _no_grad_decorator(self) -> object:
        fn = self.fn
        for d, expr in zip(fn.decorator_nodes, fn.decorators):
            q = self._qual_of(expr.func if type(expr) is ir.Call else expr)
            if q in lib.NO_GRAD:
                return d
        return None

    def _qual_of(self, e: ir.Expr) -> str | None:
        """The qualified name ``e`` is (the first by name, of several: not
        the first its set yields, another from process to process)."""
        v, _ = self.ev(e)
        names = [f.name for f in v if type(f) is Qual]
        return min(names) if names else None

    def _entry(self) -> tuple[GradMode, tuple, GradMode | None]:
        """The grad mode the function starts in, what it depends on, and a
        mode its decorators force (None if none)."""
        prog, fn = self.prog, self.fn
        prog.depend(("deco", fn.index))
        syms: list[Sym] = []
        # Innermost first: the decorator nearest the `def` wraps the body,
        # so the grad mode it sets is the one the body runs in, whatever the
        # outer ones (a CLI's `@app.command()` above `@torch.no_grad()`).
        for dv in reversed(prog.decorators.get(fn.index, ())):
            modes = _decorator_modes(dv)
            if any(type(f) is FunctionObj for f in dv):
                # A decorator of this module's: what it makes of the function.
                probe = frozenset({FunctionObj(prog.fn_ref[fn.index])})
                made = call_value(frozenset(f for f in dv if type(f) is FunctionObj), CallArgs((probe,)), Site(None, fn.index, GradMode.ON), prog.lookup).value
                wrapped = {f.wrapped or wrapper_mode(f, dv, prog.lookup) for f in made if type(f) is FunctionObj}
                if wrapped and None not in wrapped:
                    modes |= wrapped  # type: ignore[arg-type]
            if len(modes) == 1:
                mode = modes.pop()
                return mode, (), mode
            syms.extend(f for f in dv if type(f) is Sym)
        if syms:
            return GradMode.ON, (self._entry_cond(), GradNotOff(frozenset(syms), decorator=True)), None
        if fn.cls is not None:
            if prog.framework_runs_without_grad(fn.cls, fn.name):
                return GradMode.OFF, (), GradMode.OFF
            # A custom autograd.Function's forward/backward run with grad off.
            if fn.name in ("forward", "backward") and any((ir.dotted(b) or "").endswith("autograd.Function") or (ir.dotted(b) or "") == "Function" for b in fn.cls.bases):
                return GradMode.OFF, (), GradMode.OFF
        hook = prog.hooks.get(fn.index)
        if hook is not None:
            prog.depend(("stepping",))
            # Hooks registered by inference code (it puts the model in eval
            # mode and never backpropagates) see no graphs.
            owner = hook.owner
            if owner.index in prog.calls_eval:
                cls = method_class(owner)
                scope = list(cls.methods.values()) if cls is not None else [owner]
                if not any(f.index in prog.stepping for f in scope):
                    return GradMode.OFF, (), GradMode.OFF
            return GradMode.ON, (), None
        if fn.is_module:
            return GradMode.ON, (), None
        return GradMode.ON, (self._entry_cond(),), None

    def _entry_cond(self) -> EntryGradOn:
        return EntryGradOn(self.index, self.prog.fn_ref[self.index])

    def _bind_params(self) -> None:
        prog, fn = self.prog, self.fn
        hook = prog.hooks.get(fn.index)
        for i, p in enumerate(fn.params):
            loc = Local(fn.index, p.name)
            if i == 0 and fn.cls is not None and _is_classmethod(fn):
                # (`cls`: the class, not an instance; `cls(specs)` builds one.)
                v = frozenset({ClassObj(prog.class_ref[fn.cls.id])})
            elif i == 0 and self.self_name == p.name and fn.cls is not None:
                v = self._self_value(fn.cls)
            else:
                facts: set = {Sym(ParamRoot(fn.index, i))}
                if hook is not None and i in hook.args:
                    facts.add(HookArg(fn.index))
                if self.in_forward and i == 1:
                    facts.add(BLOCK_INPUT if prog.is_block(fn.cls) else ACTIVATION)  # type: ignore[arg-type]
                kind = self.annotated(p.annotation)
                if kind and all(type(f) is Plain for f in kind):
                    facts = set(kind)  # `n: int`: a number, whatever its callers pass
                elif kind and all(type(f) is Module or (type(f) is Instance and prog.is_module_class_ref(f.cls)) for f in kind):
                    prog.annotated_modules.add((fn.index, i))  # `model: TextClassifier`: a module, whoever calls
                facts |= kind
                context = prog.context.get(fn.index)
                if context is not None and i < len(context) and p.kind not in ("vararg", "kwarg"):
                    facts |= context[i]  # what this module's callers give it (``Program._run_in_context``)
                if p.kind == "vararg":
                    v = container("tuple", elem=frozenset(facts))
                elif p.kind == "kwarg":
                    v = container("dict", elem=frozenset(facts))
                else:
                    v = frozenset(facts)
                if p.default is not None and fn.index != -1:
                    # A default that is a number, a layer class
                    # (`norm_layer=nn.LayerNorm`), an optimizer class
                    # (`optimizer_class=optim.Adam`) or a model the module
                    # built (`network=brnn`): what callers that leave it out
                    # give.
                    dv, _ = self.ev(p.default)
                    if plain_only(dv) or (dv and all(type(f) is Qual and (lib.is_module_class(f.name) or lib.is_optimizer_class(f.name)) for f in dv)) or (
                        dv and all(type(f) is Module or (type(f) is Instance and prog.is_module_class_ref(f.cls)) for f in dv)
                    ):
                        v = join(v, dv)
            self.frame.env[loc] = v
            if (fn.index, p.name) in prog.captured:
                prog.shared[loc] = join(prog.shared.get(loc, NOTHING), v)

    def _self_value(self, cls: ir.Class) -> Value:
        ref = self.prog.class_ref[cls.id]
        facts: set = {Instance(ref, sub=True)}
        module = self.prog.is_module_class(cls)
        if module:
            facts.add(Module(True))
        elif module is None:
            facts.add(Sym(InstanceRoot(ref)))
        return frozenset(facts)

    def annotated(self, text: str | None) -> set:
        """Facts a parameter's type annotation gives (``model: nn.Module``)."""
        if not text:
            return set()
        if text in ("int", "float", "complex"):
            return {Plain("number")}
        if text == "str":
            return {Plain("str")}
        if text == "bool":
            return {Plain("bool")}
        cls = self.prog.class_by_qualname.get(text)
        if cls is not None:
            return set(self._self_value(cls))
        v, _ = self.ev(ir.Name(text.split(".")[0], None)) if "." not in text else self.ev(_attr_chain(text))
        out: set = set()
        for f in v:
            if type(f) is Qual:
                q = f.name
                if q in ("torch.Tensor", "torch.FloatTensor", "torch.LongTensor"):
                    out.add(TENSOR)
                elif lib.is_base_module_class(q):
                    last = q.rsplit(".", 1)[-1]
                    out.add(Module(lib.is_parametric_module(q) or last in ("Module",), q if q.startswith("torch.nn.") and last != "Module" else None))
            elif type(f) is ClassObj:
                out.add(Instance(f.cls))
        return out

    # -- effects ------------------------------------------------------------------

    def read_detached(self, value: Value, expr: ir.Expr) -> None:
        """``expr`` (valued ``value``) is read through `.detach()`: where its
        origin is unknown (another module's function, a package's
        distribution), the code takes it for one that carries a graph, and
        so the analysis does (``Proofs.detached``), of the one name it is
        computed from that may carry one (`entropy.detach()`,
        `torch.mean(torch.cat(losses)).detach()`). Where two may
        (`x.index_select(0, idx).detach()`: `x` or `idx`), it says which of
        them does no more than arithmetic does. (Not `.data`: code written
        for `Variable` reads it of every value.)"""
        if not any(type(f) is Sym for f in value) or attached(value):
            return
        names: list[ir.Name] = []
        if not detached_names(expr, names):
            return
        # (Of those, the ones whose values may hold a graph made elsewhere:
        # a symbol, in a list or not; not a number, not a tensor made here.)
        unknown = [n for n in names if self.loc(n.id) is not None and syms_in(self.read(self.loc(n.id)))]
        if len(unknown) == 1:
            src = self.frame.defs.get(self.loc(unknown[0].id))
            if src:
                self.proofs.detached |= src

    def sink(self, sources: frozenset, elements: frozenset = EMPTY, key: "_Key | None" = None) -> None:
        """A backward of what ``sources`` hold (``elements``: of one element
        of what they hold; ``key``: that element, when its key is known)."""
        prog = self.prog
        for s in sources:
            prog.edge(s, BACKWARD)
        if elements:
            prog.edge(ELEMENT_BACKWARD, BACKWARD)
            for s in elements:
                prog.edge(s, ELEMENT_BACKWARD)
        self.proofs.fed(sources, elements, key)
        params = self.fn.param_names
        for s in sources:
            # (The parameter's own value: its location, bound by no
            # statement on the paths here.)
            if type(s) is Local and s.fn == self.index and s.name in params:
                self.param_backprops.add(params.index(s.name))
        self.mark_steps()
        # After backward the saved tensors are released: writes are safe.
        env = self.frame.env
        for k, v in list(env.items()):
            if any(type(f) is Saved for f in v):
                env[k] = frozenset(f for f in v if type(f) is not Saved)

    def mark_steps(self) -> None:
        self.steps = True
        self.backward_calls += 1
        if self.index not in self.prog.stepping:
            self.prog.stepping.add(self.index)
            self.prog.bump(("stepping",))
        for lc in self.loops:
            if not lc.facts.over_model:
                lc.facts.steps = True

    def mutate(
        self, root: Loc, path: str, node: object, how: str, via: str, rhs: Value = NOTHING, asked: object = None, rhs_node: object = None, chained: bool = False,
        facts: Value | None = None,
    ) -> None:
        """An in-place write of the tensor at ``path`` (from ``root``);
        ``facts``: what is known of it, where the location's own value does
        not say (an element of a list: `feats[0] += x`)."""
        fn = self.fn
        if not via and type(root) is Local and root.fn == self.index and path == root.name and root.name in fn.param_names and self.frame.grad is not GradMode.OFF:
            # (The very object given: not a copy bound to the name since.)
            i = fn.param_names.index(root.name)
            if any(type(f) is Sym and f.root == ParamRoot(self.index, i) and not f.path for f in self.read(root)):
                self.param_writes.setdefault(i, how)
        if not self.prog.listening["mutate"]:
            return
        if facts is None:
            facts = self._path_facts(root, path)
        if path in self.flag_off:
            facts = frozenset(f for f in facts if type(f) is not Leaf)
        e = Mutation(self.point(node), path, root, facts, how, via, self.in_forward, rhs, asked, rhs_node, chained)
        for o in self.prog.listening["mutate"]:
            o.mutate(self, e)

    def mutate_temporary(self, target: ir.Call | str, value: Value, node: object, how: str, asked: object = None) -> None:
        """An in-place write of what the call ``target`` returned, held in
        no name (``F.dropout(torch.sigmoid(y), inplace=True)``), or of the
        output of the layer ``target`` (a torch class) inside a module: only
        what it is known to be saved as matters (nothing else reads it)."""
        # (Or the output of a call of something another module defines,
        # `self.act(h)` with `self.act = ACTIVATIONS[name]()` imported:
        # saved where that module shows it is.)
        saved = any(type(f) is Saved and f.result for f in value)
        if not self.prog.listening["mutate"] or not (saved or unseen_call_outputs(value)):
            return
        if isinstance(target, str):
            path = f"{target.rsplit('.', 1)[-1]}()"
        else:
            func = target.func
            callee = ir.dotted(func) or (f"{ir.dotted(func.value)}[...]" if type(func) is ir.Subscript and ir.dotted(func.value) else None)
            path = f"{callee}(...)" if callee else "(...)"
        e = Mutation(self.point(node), path, None, value, how, "", self.in_forward, NOTHING, asked)
        for o in self.prog.listening["mutate"]:
            o.mutate(self, e)

    def _path_facts(self, root: Loc, path: str) -> Value:
        """What is known of the tensor at ``path``: its location's facts,
        and attributes read through modules and instances
        (``model.embedding.weight`` is a parameter)."""
        v = self.read(root)
        parts = path.split(".")
        if len(parts) > 1 and not (self.self_name == parts[0] and len(parts) == 2):
            ev, _ = self.ev(_attr_chain(path))
            v = join(v, ev)
        return v

    def mark_saved(self, target: ir.Expr, fact: Saved) -> None:
        root = self.saved_root(target)
        if root is None:
            return
        loc = root
        self.frame.env[loc] = join(self.read(loc), frozenset({fact}))
        base = self.views.get(loc)
        if base is not None:
            # A view held in a name (`tok = x[:, 0]`), or another name for it
            # (`cur = h`): saving it saves the storage of the tensor it views
            # (one version counter), and so of the other views of it.
            self.frame.env[base] = join(self.read(base), frozenset({fact}))
        storage = base if base is not None else loc
        for other, b in list(self.views.items()):
            if b == storage and other != loc:
                self.frame.env[other] = join(self.read(other), frozenset({fact}))
        if type(loc) is ClassAttr and self.fn.name == "forward":
            saves = self.prog.forward_saves.setdefault(loc.family, set())
            if loc.attr not in saves:
                saves.add(loc.attr)
                self.prog.class_changed(loc.family)

    # -- roots of expressions ---------------------------------------------------------

    def root_loc(self, e: ir.Expr | None) -> Loc | None:
        """The location a store lands in: ``history["loss"]`` -> history,
        ``self.outs[k]`` -> self.outs, ``d.setdefault(k, [])`` -> d."""
        while e is not None:
            t = type(e)
            if t is ir.Subscript:
                e = e.value
            elif t is ir.Call and type(e.func) is ir.Attr:
                e = e.func.value
            elif t is ir.Attr:
                if self.self_attr(e) is not None:
                    return self.attr_loc(e)
                base = self.root_loc(e.value)
                return AttrOf(base, e.attr) if base is not None else None
            elif t is ir.Name:
                comp = self.comp.get(e.id)
                if comp is not None:
                    return None
                return self.loc(e.id)
            else:
                return None
        return None

    def view_root(self, e: ir.Expr) -> tuple[Loc | None, str, str]:
        """The tensor (its location, its path as written) whose storage
        ``e`` writes through, and how: ``""``, ``"data"`` (through
        ``.data``: autograd does not see it) or ``"detach"`` (through
        ``.detach()``: no leaf check, same version counter). ``y[:, 0]`` ->
        y; ``y.view(-1)`` -> y; ``self.h.data`` -> (self.h, "data");
        ``y.clone()`` -> None (a copy)."""
        via = ""
        while True:
            t = type(e)
            if t is ir.Subscript:
                base, _ = self.ev(e.value)
                if not via and not _tensor_index(e) and not tensorish(base):
                    # An element of a list or dict; of the tuple `split`
                    # returned (`parts[0].mul_(2)`), one of its views: the
                    # write is the tuple's, for AGL204.
                    path = ir.dotted(e.value)
                    if path is None or type(e.value) is not ir.Name or not any(type(f) is MultiView for f in elements(base)):
                        return None, "", via
                    key = e.key
                    index = repr(key.value) if type(key) is ir.Const and type(key.value) is int else "..."
                    return self.loc(e.value.id), f"{path}[{index}]", via
                e = e.value
            elif t is ir.Call and type(e.func) is ir.Attr and api.member(api.TENSOR, e.func.attr).gives is Gives.DETACHED:
                via = via or "detach"
                e = e.func.value
            elif t is ir.Call and type(e.func) is ir.Attr and (lib.is_view_method(e.func.attr) or lib.writes_in_place(e.func.attr)):
                # (An in-place method returns its receiver: `buf.mul_(m).add_(v)`
                # writes `buf` twice.)
                e = e.func.value
            elif t is ir.Attr and _tensor_attr(e.attr) in (Gives.DETACHED, Gives.VIEW):
                if _tensor_attr(e.attr) is Gives.DETACHED:
                    via = "data"
                e = e.value
            elif t is ir.Attr and _tensor_attr(e.attr) is not Gives.PART:
                return None, "", via  # a gradient buffer or metadata, not the tensor
            elif t is ir.Name or t is ir.Attr:
                path = ir.dotted(e)
                if path is None:
                    return None, "", via
                if t is ir.Name and e.id in self.comp:
                    return None, "", via
                loc = self.loc(e.id) if t is ir.Name else self._path_loc(e)
                return loc, path, via
            else:
                return None, "", via

    def _path_loc(self, e: ir.Attr) -> Loc | None:
        attr = self.self_attr(e)
        if attr is not None:
            return ClassAttr(self.family, attr)  # type: ignore[arg-type]
        base = e.value
        if type(base) is ir.Name:
            return AttrOf(self.loc(base.id), e.attr)
        if type(base) is ir.Attr:
            inner = self._path_loc(base)
            return AttrOf(inner, e.attr) if inner is not None else None
        return None

    def saved_root(self, e: ir.Expr) -> Loc | None:
        """The tensor (location) an argument is a view of, when the op saves
        it: ``x``, ``x[:, 0]``, ``x.view(-1)`` -> x; ``x[mask]`` is a copy,
        and ``feats[0]`` of a list is an element, not a view of the list."""
        indexed = False
        while True:
            t = type(e)
            if t is ir.Subscript:
                if not _basic_index(e, self):
                    return None
                indexed = True
                e = e.value
            elif t is ir.Call and type(e.func) is ir.Attr and lib.is_view_method(e.func.attr) and api.member(api.TENSOR, e.func.attr).gives is not Gives.DETACHED:
                e = e.func.value
            elif t is ir.Call and e.args and not e.args[0].star and e.args[0].keyword is None and call_qual(*self._callee_parts(e.func)) in lib.VIEW_FUNCTIONS:
                e = e.args[0].value  # `rearrange(x, ...)`
            elif t is ir.Attr and _tensor_attr(e.attr) is Gives.VIEW:
                e = e.value
            elif t is ir.Attr and _tensor_attr(e.attr) is not Gives.PART:
                return None  # `x.shape[1]` is a number, not a view of x
            elif t is ir.Name:
                if e.id in self.comp:
                    return None
                return self._tensor_root(self.loc(e.id), indexed)
            elif t is ir.Attr:
                return self._tensor_root(self._path_loc(e), indexed)
            else:
                return None

    def _tensor_root(self, loc: Loc | None, indexed: bool) -> Loc | None:
        if loc is not None and indexed:
            v = self.read(loc)
            if any(type(f) is Container for f in v) and not tensorish(v):
                return None
        return loc

    def _operator_saves(self, qual: str, operands: tuple, values: tuple, result: Value, site: Site) -> Value:
        out = Outcome(result)
        ledger_saves(qual, CallArgs(tuple(values)), site, out)
        for eff in out.effects:
            if type(eff) is SavesArg and 0 <= eff.index < len(operands):
                self.mark_saved(operands[eff.index], eff.fact)
        return out.value


def _attr_chain(text: str) -> ir.Expr:
    parts = text.split(".")
    e: ir.Expr = ir.Name(parts[0], None)
    for p in parts[1:]:
        e = ir.Attr(e, p, None)
    return e


def _basic_index(sub: ir.Subscript, run: Run) -> bool:
    """Basic indexing (slices, integers, None, ...) returns a view; a mask
    or an index tensor returns a copy. A name holding a Python number
    indexes basically too, beside a slice (`v[:, i]`); alone (`xs[i]`) it
    may as well pick an element of a list."""
    sliced = any(ix.is_slice for ix in sub.index)
    for ix in sub.index:
        if ix.is_slice:
            continue
        v = ix.value
        if type(v) is ir.Const and v.kind in ("number", "ellipsis", "none"):
            continue
        if type(v) is ir.UnaryOp and v.op == "neg" and type(v.operand) is ir.Const and v.operand.kind == "number":
            continue
        if sliced and type(v) is ir.Name and _number(run.ev(v)[0]):
            continue
        return False
    return True


def _number(v: Value) -> bool:
    return bool(v) and all(type(f) is Plain and f.kind == "number" for f in v)
