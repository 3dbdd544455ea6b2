"""The analysis of one module: ``Program``, what all runs share (set-up,
classes, what the resolver reads, the order and passes of runs, what runs
depend on, the flow graph), with its lookups of the module's own functions
and classes."""

from __future__ import annotations

from typing import Iterable

from autograd_lint.analysis import ir
from autograd_lint.analysis import api
from autograd_lint.analysis import torch_api as lib
from autograd_lint.analysis.paths import is_static, path_key, static_loc
from autograd_lint.analysis.observer import Observer, Point
from autograd_lint.analysis.resolve import Condition, GradNotOff, Resolver
from autograd_lint.analysis.state import AttrOf, ClassAttr, Def, Local, Loc, Ret, base_loc
from autograd_lint.analysis.summaries import ClassSummary, FunctionSummary
from autograd_lint.analysis.canonical import NODE_ORDER
from autograd_lint.analysis.joins import join
from autograd_lint.analysis.values import (
    NOTHING,
    frozen_modules,
    ClassObj,
    Container,
    Foreign,
    GradContext,
    GradMode,
    ImportRoot,
    Instance,
    Module,
    OptimizerKind,
    Plain,
    Qual,
    Ref,
    ScalerKind,
    Sym,
    TENSOR,
    Graph,
    Leaf,
    TensorKind,
    Value,
)
from autograd_lint.analysis.records import CallSite, HookInfo, LoopFacts
from autograd_lint.analysis.in_file import InFileLookup, TrackedAttrs
from autograd_lint.analysis.run import Run
from autograd_lint.analysis.run_proofs import summarize
from autograd_lint.analysis.syntax_facts import method_class, update_params


PASSES = 3


def _removes_handle(owner: ir.Function, call: ir.Call) -> bool:
    """``owner`` keeps the handle ``call`` returns in a name and calls its
    ``remove()`` itself (``h = m.register_forward_hook(f)``, then
    ``h.remove()``, in a ``finally`` or not)."""
    names: set[str] = set()
    stack = [owner.body]
    while stack:
        for st in stack.pop():
            if type(st) is ir.Assign and st.value is call and len(st.targets) == 1 and type(st.targets[0]) is ir.Name:
                names.add(st.targets[0].id)
            stack.extend(ir.sub_blocks(st))
    return any(type(c.func) is ir.Attr and type(c.func.value) is ir.Name and c.func.value.id in names and not c.args for c in owner.method_calls.get("remove", ()))


def _fn_of(k: object) -> int | None:
    """The function a flow node is a local of (a name, a binding of a name,
    a return), or None (state, globals, a call's result)."""
    t = type(k)
    if t is Local or t is Ret:
        return k.fn  # type: ignore[attr-defined]
    if t is Def:
        loc = k.loc  # type: ignore[attr-defined]
        return loc.fn if type(loc) is Local else None
    return None


class Program:
    """The analysis of one module: what all runs share."""

    def __init__(self, module_ir: ir.ModuleIR, file: str, observers: Iterable[Observer] = ()) -> None:
        self.ir = module_ir
        self.file = file
        self.observers = list(observers)
        self.functions = module_ir.functions
        self.class_ref: dict[int, Ref] = {c.id: Ref(file, c.qualname) for c in module_ir.classes}
        self.class_by_qualname: dict[str, ir.Class] = {}
        for c in module_ir.classes:
            self.class_by_qualname.setdefault(c.qualname, c)
        self.fn_ref: dict[int, Ref] = {f.index: Ref(file, f.qualname) for f in self.functions}
        self.fn_by_qualname: dict[str, ir.Function] = {}
        for f in self.functions:
            if not f.is_module:
                self.fn_by_qualname.setdefault(f.qualname, f)
        self.shared: dict[Loc, Value] = {}
        self.summaries: dict[int, FunctionSummary] = {}
        self.class_bases: dict[int, tuple[Value, ...]] = {}
        self.decorators: dict[int, list[Value]] = {}
        self.family_of: dict[int, str] = {}
        self.forward_saves: dict[str, set[str]] = {}
        # Locations shown to hold modules by a method only modules have
        # (`model.eval()`): what they hold is a module where nothing else
        # is known of it. (And the last part of each path, to skip the
        # look-up for most reads.)
        self.module_paths: set[Loc] = set()
        self.module_path_attrs: set[str] = set()
        self.rebound: dict[int, set[str]] = {}  # function -> parameters it assigns
        self.proven: set = set()
        # Calls whose result is a dict every value of which backward proved
        # (`loss = sum(losses.values()); loss.backward()`).
        self.proven_values: set = set()
        # Calls whose value is attached at these keys (`out["loss"].backward()`).
        self.proven_keys: dict = {}
        self.proven_callees: set[str] = set()
        # What the arguments of a proven call of each of those callees were
        # made from (``arg_signature``): another call of it made from the
        # same (`calculate_loss(ts, net)` backpropagated in the batch loop,
        # called again on the whole set after it) builds a graph too.
        self.proven_args: dict[str, set[tuple]] = {}
        self.proven_targets: dict = {}
        # Bindings (``Def``s) of a sum a backward proved (`loss = a + b();
        # loss.backward()`): the value is attached whichever term holds the
        # graph, though no one term is shown to.
        self.proven_binds: set = set()
        # Per function: the parameters whose given value a backward there
        # is made of (found by its proofs).
        self.proven_params: dict[int, set[int]] = {}
        self._update_pairs: dict[int, tuple[tuple[int, int], ...]] = {}
        # Classes a decorator gives an `__init__` of their fields (`@dataclass`).
        self.record_classes: set[int] = set()
        self.current: "Run | None" = None
        self.version: dict[tuple, int] = {}
        self.flow: dict[object, set] = {}
        # The flow nodes of the bindings that hold an op's output it saved
        # (`Saved.node` -> Def...): where that output's graph goes from.
        self.saved_outputs: dict[object, set] = {}
        # The same for an op bound directly to a name (`r = a / b`), by the
        # op's node: where a backward through the inputs it saved starts.
        self.op_outputs: dict[object, set] = {}
        # The ops whose output, bound to no name, is consumed at once where
        # the graph ends: compared (`(a - b) / c > r`), detached or read
        # out (`w.std().detach()`, `loss.sum().item()`).
        self.op_cut: set = set()
        # The nodes of the graphs (model calls, ops) whose values the code
        # converts to NumPy without detaching (`out.cpu().numpy()`), which
        # raises where they carry a graph: wherever the code works, grad
        # was off where they were made (a caller's `no_grad`), or nothing
        # they were made from requires grad.
        self.refused_graphs: set = set()
        # What each ``Handed`` flow node was handed to: the callee's value.
        self.handed: dict = {}
        self._call_sites: dict[tuple, CallSite] = {}
        # The same sites by callee, in the same order: a callee's sites are
        # asked for at every resolution of its parameters.
        self._sites_by_callee: dict[int, dict[tuple, CallSite]] = {}
        self.loop_facts: dict[ir.Loop, LoopFacts] = {}
        self.stepping: set[int] = set()
        # Calls of a module's `parameters()`/`named_parameters()`, by node.
        self.parameter_lists: set = set()
        # The calls of something of unknown kind (`self.model.embed(t)`)
        # whose output the flow graph roots at the call, as a model run's
        # is (``Origin``), without their being taken for one.
        self.unknown_calls: set = set()
        # `self.<attr>` frozen once, in `__init__`: it holds frozen modules.
        self.frozen_attrs: set = set()
        self.calls_eval: set[int] = set()
        self.hooks: dict[int, HookInfo] = {}
        self.static_grad_memory = False
        # Unresolved `with` contexts a backward() inside them showed to leave grad on.
        self.grad_on_contexts: set[GradNotOff] = set()
        self.captured: set[tuple[int, str]] = set()
        # The flow node of each binding of a module-level name (functions
        # that read the name read them all).
        self.global_defs: dict[Loc, set] = {}
        self.comp_loops: dict[int, ir.Loop] = {}  # id(comprehension node) -> its loop
        self.lookup = InFileLookup(self)
        self.state_joins = {o: o.join_state for o in self.observers}
        # hook -> the observers that listen to it (the others are not called)
        self.listening: dict[str, list[Observer]] = {
            name: [o for o in self.observers if getattr(type(o), name) is not getattr(Observer, name)]
            for name in ("start", "end", "store", "accumulate", "keep", "mutate", "call", "bind", "returned", "set_attribute", "read_attribute")
        }
        self._module_class: dict[int, bool | None] = {}
        self._blocks: set[int] | None = None
        self._class_cache: dict[int, ClassSummary] = {}
        # What depends only on the module's classes as written, kept once.
        self._bases_cache: dict[int, list[ir.Class]] = {}
        self._overrides_cache: dict[int, dict[str, tuple[Ref, ...]]] = {}
        self._order: list[ir.Function] | None = None
        self._node_order: dict[int, int] | None = None
        self.class_attrs: dict[str, dict[str, Value]] = {}
        # What the calls here give each parameter of a function, for its run
        # in its callers' context (``_run_in_context``).
        self.context: dict[int, tuple[Value, ...]] = {}
        self._param_edges: dict[object, set[Local]] | None = None  # (built when first asked, after the runs)
        # Parameters (function, position) annotated with a module class.
        self.annotated_modules: set[tuple[int, int]] = set()
        self.family_members: dict[str, list[int]] = {}
        self._scan()

    # -- set-up -------------------------------------------------------------------

    def _scan(self) -> None:
        """What lowering gathered, put to use: module evidence (the paths a
        method only modules have is called on: ``model.eval()``,
        ``self.nets[k].parameters()``), names nested functions capture,
        hook registrations, parameters a function rebinds."""
        for cls in self.ir.classes:
            fam = self.family_of[cls.id] = self._family(cls)
            self.family_members.setdefault(fam, []).append(cls.id)
        # `x.train()` is a trainer's too: with `x(...)` called as well, it is
        # a module's (a trainer is not called).
        trained: set[Loc] = set()
        called: set[Loc] = set()
        for fn in self.functions:
            cls = method_class(fn)
            family = self.family_of[cls.id] if cls is not None else None
            for method, calls in fn.method_calls.items():
                for c in calls:
                    evidence = api.evidence(method, (a.keyword for a in c.args)) == api.MODULE
                    key = path_key(fn, family, c.func)  # `self.net(x)`: `self.net` is called
                    if key is not None:
                        called.add(key)
                    row = api.member(api.MODULE, method)
                    if evidence or row.mode is True or row.gives is api.Gives.FORWARD:
                        key = path_key(fn, family, c.func.value)
                        if key is not None:
                            (self.module_paths if evidence else trained if row.mode is True else called).add(key)
            called.update(static_loc(fn, name) for name in fn.name_calls)
        self.module_paths |= trained & called
        self.module_paths |= self._handed_to_module_parameters()
        self.module_path_attrs = {k.attr if type(k) in (AttrOf, ClassAttr) else k.name for k in self.module_paths}  # type: ignore[union-attr]
        for fn in self.functions:
            self.rebound[fn.index] = fn.assigned & set(fn.param_names)
            f = fn.parent
            while f is not None and not f.is_module:
                for n in fn.reads & f.locals:
                    self.captured.add((f.index, n))
                f = f.parent
            # (Registrations of forward hooks, in a canonical order.)
            for method in sorted(lib.FORWARD_HOOKS & fn.method_calls.keys()):
                for call in fn.method_calls[method]:
                    wk = call.keyword("with_kwargs")
                    self._register_hook(fn, call, method, type(wk) is ir.Const and wk.value is True)

    def _handed_to_module_parameters(self) -> set[Loc]:
        """Module evidence from this module's own annotations: the paths
        handed to a parameter of one of its functions annotated as a module
        (`_gradcam(model=model.model, ...)` of `def _gradcam(model:
        torch.nn.Module, ...)`): what the caller holds there is a module."""
        annotated: dict[int, list[tuple[int, str]]] = {}
        for f in self.functions:
            if f.cls is None and not f.is_lambda and not f.is_module:
                found = [(i, p.name) for i, p in enumerate(f.params) if p.kind in ("pos", "kwonly") and self._module_annotation(p.annotation)]
                if found:
                    annotated[f.index] = found
        if not annotated:
            return set()
        names = {self.functions[i].name for i in annotated}
        out: set[Loc] = set()
        for g in self.functions:
            if not (g.name_calls & names):
                continue
            cls = method_class(g)
            family = self.family_of[cls.id] if cls is not None else None
            for st in ir.statements(g.body):
                for e in ir.statement_exprs(st):
                    if type(e) is not ir.Call or type(e.func) is not ir.Name or e.func.id not in names:  # type: ignore[attr-defined]
                        continue
                    f = self.function_named(g, e.func.id)  # type: ignore[attr-defined]
                    if f is None or f.index not in annotated:
                        continue
                    positional = e.positional() if not e.has_star else []
                    for i, name in annotated[f.index]:
                        arg = e.keyword(name) or (positional[i] if i < len(positional) and f.params[i].kind == "pos" else None)
                        key = path_key(g, family, arg) if arg is not None else None
                        if key is not None:
                            out.add(key)
        return out

    def _module_annotation(self, text: str | None) -> bool:
        """An annotation, as written, that names a module class: a base that
        makes modules (`torch.nn.Module`, `nn.Module`, through this
        module's imports) or a module class of this module."""
        if not text:
            return False
        cls = self.class_by_qualname.get(text)
        if cls is not None:
            return self.is_module_class(cls) is True
        first, _, rest = text.partition(".")
        for imp in self.ir.imports:
            if imp.local == first and imp.level == 0:
                base = imp.module if imp.name is None else f"{imp.module}.{imp.name}"
                return lib.is_base_module_class(f"{base}.{rest}" if rest else base)
        return False

    def _register_hook(self, owner: ir.Function, call: ir.Call, method: str, with_kwargs: bool) -> None:
        args = call.positional()
        if not args:
            return
        hit = self.hook_function(args[0], owner)
        if hit is None:
            return
        fn, bound = hit
        plain, kw = lib.HOOK_METHODS[method]
        offset = (1 if fn.cls is not None and fn.params and not is_static(fn) else 0) + bound
        idx = frozenset(offset + i for i in (kw if with_kwargs else plain) if offset + i < len(fn.params))
        self.hooks[fn.index] = HookInfo(fn, owner, idx, _removes_handle(owner, call))

    def hook_function(self, e: ir.Expr, owner: ir.Function, depth: int = 0) -> tuple[ir.Function, int] | None:
        """The function a hook registration passes, and how many of its
        leading parameters ``functools.partial`` already bound."""
        if depth > 3:
            return None
        t = type(e)
        if t is ir.Lambda:
            return e.fn, 0
        if t is ir.Name:
            fn = self.function_named(owner, e.id)
            return (fn, 0) if fn is not None else None
        if t is ir.Attr and type(e.value) is ir.Name:
            cls = method_class(owner)
            if cls is not None:
                m = self.find_method_ir(cls, e.attr)
                return (m, 0) if m is not None else None
            return None
        if t is ir.Call:
            name = ir.dotted(e.func)
            args = e.positional()
            if name is not None and name.split(".")[-1] == "partial" and args:
                hit = self.hook_function(args[0], owner, depth + 1)
                if hit is None:
                    return None
                return hit[0], hit[1] + len(args) - 1
            # A factory: `get_activation(name)` returns the nested hook.
            hit = self.hook_function(e.func, owner, depth + 1)
            if hit is not None:
                factory = hit[0]
                for s in factory.body:
                    if type(s) is ir.Return and type(s.value) is ir.Name:
                        inner = self.function_named(factory, s.value.id)
                        if inner is not None and inner.parent is factory:
                            return inner, 0
                lambdas = [f for f in self.functions if f.parent is factory and f.is_lambda]
                if lambdas:
                    return lambdas[0], 0
        return None

    def function_named(self, fn: ir.Function, name: str) -> ir.Function | None:
        """The function ``name`` refers to inside ``fn`` (nested, enclosing
        or module level)."""
        f: ir.Function | None = fn
        while f is not None:
            for g in self.functions:
                if g.parent is f and g.name == name and g.cls is None and not g.is_lambda:
                    return g
            if name in f.locals and not f.is_module:
                return None
            f = f.parent
        return None

    def find_method_ir(self, cls: ir.Class, name: str, depth: int = 0) -> ir.Function | None:
        if depth > 8:
            return None
        m = cls.methods.get(name)
        if m is not None:
            return m
        for b in self.in_file_bases(cls):
            hit = self.find_method_ir(b, name, depth + 1)
            if hit is not None:
                return hit
        return None

    def framework_runs_without_grad(self, cls: ir.Class, defined: str) -> bool:
        """A framework calls the method ``cls`` defines as ``defined`` with
        grad off: Lightning's evaluation hooks of its modules and callbacks,
        or a base class's entry point in ``NO_GRAD_METHODS_OF_BASES`` (named
        as written, or by an in-file base)."""
        if defined in lib.LIGHTNING_NO_GRAD and self.is_lightning(cls):
            return True
        return self._named_base_runs_without_grad(cls, defined)

    def _named_base_runs_without_grad(self, cls: ir.Class, defined: str, depth: int = 0) -> bool:
        if depth > 8:
            return False
        for b in cls.bases:
            name = ir.dotted(b)
            if name and defined in lib.NO_GRAD_METHODS_OF_BASES.get(name.rsplit(".", 1)[-1], ()):
                return True
        return any(self._named_base_runs_without_grad(b, defined, depth + 1) for b in self.in_file_bases(cls))

    def in_file_bases(self, cls: ir.Class) -> list[ir.Class]:
        hit = self._bases_cache.get(cls.id)
        if hit is not None:
            return hit
        out = self._bases_cache[cls.id] = []
        for b in cls.bases:
            name = ir.dotted(b)
            c = self.class_by_qualname.get(name) if name else None
            if c is not None and c is not cls:
                out.append(c)
        return out

    def _family(self, cls: ir.Class) -> str:
        """Attributes set in an in-file base class are the subclass's too:
        a class family shares its `self.<attr>` locations."""
        seen = {cls.id}
        while True:
            bases = self.in_file_bases(cls)
            if not bases or bases[0].id in seen:
                return cls.qualname
            cls = bases[0]
            seen.add(cls.id)

    # -- classes ---------------------------------------------------------------------

    def conditions_at(self, at: Point) -> tuple[Condition, ...]:
        """What must hold besides what this module shows for grad to be on
        at ``at``: its conditions, less unresolved contexts that a
        ``backward()`` inside them showed to leave grad on."""
        if not self.grad_on_contexts:
            return at.conds
        return tuple(c for c in at.conds if c not in self.grad_on_contexts)

    def is_module_class(self, cls: ir.Class) -> bool | None:
        """True / False, or None when it depends on a base in another
        project module."""
        if cls.id in self._module_class:
            return self._module_class[cls.id]
        self._module_class[cls.id] = False  # cycles
        result: bool | None = False
        unresolved = False
        foreign = False
        for b in self.class_bases.get(cls.id, ()):
            for f in b:
                t = type(f)
                if t is Qual:
                    if lib.is_base_module_class(f.name):
                        result = True
                    elif lib.is_foreign(f.name):
                        foreign = True
                    elif not f.name.startswith("builtins.") and not lib.is_known_library(f.name):
                        unresolved = True
                elif t is ClassObj:
                    inner = self.class_by_qualname.get(f.cls.qualname) if f.cls.file == self.file else None
                    sub = self.is_module_class(inner) if inner is not None else None
                    if sub:
                        result = True
                    elif sub is None:
                        unresolved = True
                elif t is Sym:
                    unresolved = True
            if result:
                break
        if not result and not foreign and "forward" in cls.methods and "__call__" not in cls.methods and cls.bases:
            # A class with a forward() and a base we cannot see is a module
            # in practice (`from .modeling_utils import PreTrainedModel`).
            # One that defines `__call__` itself (a pipeline calling its own
            # forward) is not: a module's `__call__` is nn.Module's.
            result = True
        elif not result and unresolved and not foreign:
            result = None
        self._module_class[cls.id] = result
        return result

    def is_block(self, cls: ir.Class) -> bool:
        """A module class another module class of this file builds or hands
        on in its own code (``self.pool = Pool(c)``, ``super().__init__(...,
        Pool)``): a block inside a model, not a whole model."""
        blocks = self._blocks
        if blocks is None:
            blocks = self._blocks = set()
            for fn in self.functions:
                owner = method_class(fn)
                if owner is None or self.is_module_class(owner) is False:
                    continue
                for c in self.ir.classes:
                    if c is not owner and c.name in fn.reads and c.name in self.ir.top.locals:
                        blocks.add(c.id)
        return cls.id in blocks

    def is_lightning(self, cls: ir.Class, depth: int = 0) -> bool:
        if depth > 8:
            return False
        for b in cls.bases:
            name = ir.dotted(b)
            if name and name.split(".")[-1].endswith(lib.LIGHTNING_BASES):
                return True
        for b in self.class_bases.get(cls.id, ()):
            if any(type(f) is Qual and lib.is_lightning_callback(f.name) for f in b):
                return True
        return any(self.is_lightning(b, depth + 1) for b in self.in_file_bases(cls))

    def class_summary(self, cls: ir.Class) -> ClassSummary:
        hit = self._class_cache.get(cls.id)
        if hit is not None:
            return hit
        family = self.family_of[cls.id]
        attrs = TrackedAttrs(self, family, self.class_attrs.get(family, {}))
        methods = {name: self.fn_ref[m.index] for name, m in cls.methods.items()}
        context = None
        enter = cls.methods.get("__enter__")
        if enter is not None and enter.index in self.summaries:
            context = self.summaries[enter.index].context
        bases = self.class_bases.get(cls.id, ())
        foreign = any(type(f) is Qual and lib.is_foreign(f.name) for b in bases for f in b)
        out = ClassSummary(
            self.class_ref[cls.id],
            bases,
            methods,
            attrs,
            frozenset(self.forward_saves.get(family, ())),
            self.is_module_class(cls),
            self.is_lightning(cls),
            context,
            foreign,
            self._overrides(cls),
            cls.fields if cls.id in self.record_classes and "__init__" not in cls.methods else (),
            self._closed(cls, bases),
        )
        self._class_cache[cls.id] = out
        return out

    def _closed(self, cls: ir.Class, bases: tuple[Value, ...]) -> bool:
        """``ClassSummary.closed``: a module class whose family is all
        shown and sets no attribute by name."""
        if not bases or "__getattr__" in cls.methods:
            return False
        if any(n in m.name_calls or n in m.method_calls for m in cls.methods.values() for n in lib.ATTRIBUTE_SETTERS):
            return False
        for b in bases:
            if len(b) != 1:
                return False
            (f,) = b
            if type(f) is Qual and f.name == api.MODULE:
                continue
            if type(f) is not ClassObj:
                return False
            info = self.lookup.klass(f.cls)
            if info is None or not info.closed:
                return False
        return True

    def _overrides(self, cls: ir.Class) -> dict[str, tuple[Ref, ...]]:
        """The methods of ``cls``'s subclasses in this module, by name."""
        hit = self._overrides_cache.get(cls.id)
        if hit is None:
            hit = self._overrides_cache[cls.id] = self._find_overrides(cls)
        return hit

    def _find_overrides(self, cls: ir.Class) -> dict[str, tuple[Ref, ...]]:
        out: dict[str, list[Ref]] = {}
        for c in self.ir.classes:
            if c is not cls and self._derives(c, cls):
                for name, m in c.methods.items():
                    out.setdefault(name, []).append(self.fn_ref[m.index])
        return {k: tuple(v) for k, v in out.items()}

    def _derives(self, c: ir.Class, base: ir.Class, depth: int = 0) -> bool:
        if depth > 8:
            return False
        return any(b is base or self._derives(b, base, depth + 1) for b in self.in_file_bases(c))

    def class_attr_written(self, loc: ClassAttr, value: Value) -> None:
        attrs = self.class_attrs.setdefault(loc.family, {})
        old = attrs.get(loc.attr)
        attrs[loc.attr] = value if old is None else join(old, value)
        for cid in self.family_members.get(loc.family, ()):
            self._class_cache.pop(cid, None)

    def freeze_attr(self, loc: ClassAttr) -> None:
        """``self.<attr>`` is frozen once, in `__init__`: from now on it
        holds frozen modules, whatever module is assigned to it, what it
        held already included (``held``)."""
        if loc in self.frozen_attrs:
            return
        self.frozen_attrs.add(loc)
        if loc in self.shared:
            self.shared[loc] = frozen_modules(self.shared[loc])
        attrs = self.class_attrs.get(loc.family)
        if attrs is not None and loc.attr in attrs:
            attrs[loc.attr] = frozen_modules(attrs[loc.attr])
            for cid in self.family_members.get(loc.family, ()):
                self._class_cache.pop(cid, None)
        self.bump(("loc", loc))

    def held(self, loc: Loc, value: Value) -> Value:
        """What ``loc`` holds once ``value`` is written to it."""
        return frozen_modules(value) if loc in self.frozen_attrs else value

    def update_pairs(self, fn: ir.Function) -> tuple[tuple[int, int], ...]:
        """``syntax_facts.update_params`` of ``fn``, read once."""
        pairs = self._update_pairs.get(fn.index)
        if pairs is None:
            pairs = self._update_pairs[fn.index] = update_params(fn)
        return pairs

    def import_value(self, name: ir.ImportName) -> Value:
        """What an import binds: a library's name, or a symbol of a project
        module (resolved once its summary is known)."""
        if name.level == 0 and lib.is_known_library(name.module):
            full = f"{name.module}.{name.name}" if name.name else name.module
            return frozenset({Qual(lib.canonical_name(full))})
        root = Sym(ImportRoot(self.file, name.module, name.level, name.name))
        if name.level == 0:
            full = f"{name.module}.{name.name}" if name.name else name.module
            alias = lib.canonical_name(full)
            if alias != full:
                return frozenset({Qual(alias)})
            return frozenset({root, Qual(full)})
        return frozenset({root})

    def star_value(self, name: str) -> Value:
        """``name``, bound by none of this module's statements, from its
        ``from m import *``: the name of each such module (``torch.nn``'s
        ``Linear``); through a project module, what that module binds
        (``from utils import *`` bringing ``torch``), and, for the names
        every PyTorch project gives the same library, that library."""
        out: set = set()
        for star in self.ir.star_imports:
            out |= self.import_value(ir.ImportName(name, star.module, star.level, name, star.node))
        alias = lib.CONVENTIONAL_NAMES.get(name)
        if alias is not None:
            out.add(Qual(alias))
        return frozenset(out)

    def class_changed(self, family: str) -> None:
        self._blocks = None
        for cid in self.family_members.get(family, ()):
            self._class_cache.pop(cid, None)
            self._module_class.pop(cid, None)
            self.bump(("cls", cid))

    # -- what the resolver reads (resolve.InFile) ----------------------------------

    def local_function(self, ref: Ref) -> FunctionSummary | None:
        return self.lookup.function(ref)

    def local_class(self, ref: Ref) -> ClassSummary | None:
        return self.lookup.klass(ref)

    def is_module_class_ref(self, ref: Ref) -> bool:
        return self.lookup.is_module_class(ref) is True

    def local_module_class(self, ref: Ref) -> bool | None:
        return self.lookup.is_module_class(ref)

    def param_values(self, fn: int) -> list[tuple[Value, ...]] | None:
        """The argument values each call site in this module gives ``fn``'s
        parameters, in parameter order."""
        names = self.functions[fn].param_names
        out = [self._site_params(site, names) for site in self.callers_of(fn)]
        return out or None

    @staticmethod
    def _site_params(site: CallSite, names: list[str]) -> tuple[Value, ...]:
        values = list(site.args[: len(names)]) + [NOTHING] * max(0, len(names) - len(site.args))
        for k, v in site.kwargs:
            if k in names:
                values[names.index(k)] = join(values[names.index(k)], v)
        return tuple(values)

    def exported(self, fn: int) -> bool:
        """Can another module call it? (top-level functions and methods)"""
        f = self.functions[fn]
        return not f.is_lambda and not f.is_module and (f.cls is not None or f.parent is None or f.parent.is_module)

    def close(self) -> None:
        """Forget everything once the module's results are taken: the
        helpers (lookups, tracked attributes, runs) point back at the
        program, and dropping its state breaks those cycles."""
        self.__dict__.clear()

    def entry_sites(self, fn: int) -> list[tuple[GradMode, tuple]] | None:
        sites = [(s.grad, s.conds) for s in self.callers_of(fn)]
        return sites or None

    # -- scheduling --------------------------------------------------------------------

    def order(self) -> list[ir.Function]:
        """The module's code first (it defines what functions read), then
        set-up methods, then callees before callers."""
        if self._order is not None:
            return self._order
        funcs = [f for f in self.functions if not f.is_module]
        by_name: dict[str, list[ir.Function]] = {}
        for f in funcs:
            by_name.setdefault(f.name, []).append(f)
        calls: dict[int, set[int]] = {}
        for f in funcs:
            calls[f.index] = {g.index for n in f.called for g in by_name.get(n, ()) if g is not f}
        done: set[int] = set()
        out: list[ir.Function] = [self.ir.top]
        index = {f.index: f for f in funcs}

        for f in sorted(funcs, key=lambda f: (f.name not in lib.ONCE_METHODS, f.index)):
            _postorder(f, calls, index, done, out)
        self._order = out
        return out

    def run_all(self) -> None:
        """Run every function, callees first; then, until nothing changes
        (at most ``PASSES`` in all), run again those whose inputs changed
        after they ran: a callee's summary, an attribute of ``self``, a
        module-level name, a call a later ``backward()`` proved. Everything
        the runs learn only grows, so observers join what the runs tell
        them."""
        token = NODE_ORDER.set(self.node_order)
        try:
            self._run_all()
        finally:
            NODE_ORDER.reset(token)

    def node_order(self, node: object) -> int:
        """Where ``node`` (an expression's) stands in the module: the IR's
        functions in order, each one's expressions in order; built when
        first asked (a value bounded: rare)."""
        if self._node_order is None:
            self._node_order = {}
            for fn in self.ir.functions:
                for s in ir.statements(fn.body):
                    for x in ir.statement_exprs(s):
                        n = getattr(x, "node", None)
                        if n is not None:
                            self._node_order.setdefault(id(n), len(self._node_order))
        return self._node_order.get(id(node), len(self._node_order))

    def _run_all(self) -> None:
        todo = self.order()
        seen: dict[int, dict] = {}
        ran: set[int] = set()
        for _ in range(PASSES):
            for fn in todo:
                if fn.index in ran:
                    for o in self.observers:
                        o.forget(fn.index)
                ran.add(fn.index)
                run = Run(self, fn)
                self.current = run
                run.run()
                self.current = None
                # (Proofs first: what they find of its parameters is in
                # its summary at once.)
                proved = run.proofs.prove(run)
                summary = summarize(run)
                if self.summaries.get(fn.index) != summary:
                    self.summaries[fn.index] = summary
                    self.bump(("fn", fn.index))
                # What the run changed itself (`self.n += 1` read then
                # written) does not call for running it again.
                for k in run.bumped & run.deps.keys():
                    run.deps[k] = self.version[k]
                if proved:
                    run.deps[("proofs", fn.index)] = -1  # its own calls proved: run it again
                seen[fn.index] = run.deps
            todo = [f for f in self.order() if any(self.version.get(k, 0) != v for k, v in seen.get(f.index, {}).items())]
            if not todo:
                break
        self._run_in_context(seen)
        for o in self.observers:
            o.finish(self)

    def _run_in_context(self, deps: dict[int, dict]) -> None:
        """Run again, for the observers, each function whose calls here
        give its parameters what their symbols do not show (`main()` builds
        the model, the optimizer and the GradScaler and hands them to
        `train_one_epoch`), its parameters bound to their symbols joined with
        what the callers give; then its callers. The summaries stay those of
        the symbolic runs (what the function does for any caller), so no
        caller's facts reach another caller. What a run in context writes
        into the class's attributes (`__init__` given the model and the
        optimizer `main()` built) reaches the methods that read them
        (``deps``: what each function's last symbolic run read): they run
        again, once, after it."""
        if not self.observers:
            return
        self._param_values_by_callee: dict[int, list[tuple[Value, ...]]] = {}
        for site in self.call_sites:
            if site.callee is not None:
                self._param_values_by_callee.setdefault(site.callee, []).append(self._site_params(site, self.functions[site.callee].param_names))
        # Callees first: a caller run again afterwards hears what they now
        # tell of their effects (the optimizer a `train_one_epoch` steps is
        # known only in its callers' context).
        ran: set[int] = set()
        callees: dict[int, set[int]] = {}
        for site in self.call_sites:
            if site.callee is not None:
                callees.setdefault(site.caller, set()).add(site.callee)
        # The class attributes runs in context wrote, and where each
        # function stood when it last ran (its runs' count of those). A
        # second pass runs again only what a write it had not yet seen
        # reaches (a method ordered before the `__init__` that was given
        # the model).
        written: list[tuple] = []
        at: dict[int, int] = {}
        order = self.order()
        # One resolver while nothing runs: what it has resolved of the
        # callers' arguments holds until a run changes the call sites or
        # the attributes they read.
        self._facts_resolver: Resolver | None = None
        for fn, second in [(f, False) for f in order] + [(f, True) for f in order]:
            if fn.index not in self.summaries and not fn.is_module:
                continue
            stale = any(k in deps.get(fn.index, ()) for k in written[at.get(fn.index, 0):])
            if second and not stale:
                continue
            context = None if fn.is_module else self._caller_facts(fn)
            if context is None and ran.isdisjoint(callees.get(fn.index, ())) and not stale:
                continue
            for o in self.observers:
                o.forget(fn.index)
            if context is not None:
                self.context[fn.index] = context
                # (Its callers hear it again only where what it does with
                # what they give shows in their own steps: an optimizer it
                # steps, a scaler it scales with.)
                if any(type(f) in (OptimizerKind, ScalerKind) for v in context for f in v):
                    ran.add(fn.index)
            run = Run(self, fn)
            self.current = run
            run.run()
            self.current = None
            self._facts_resolver = None
            at[fn.index] = len(written)
            written.extend(sorted((k for k in run.bumped if k[0] == "loc" and type(k[1]) is ClassAttr), key=lambda k: (k[1].family, k[1].attr)))

    def _caller_facts(self, fn: ir.Function) -> tuple[Value, ...] | None:
        """What the calls of ``fn`` here give each of its parameters beyond
        its symbol, resolved through their own callers' facts; None when
        they give nothing more."""
        sites = self._param_values_by_callee.get(fn.index)
        if not sites:
            return None
        resolver = self._facts_resolver
        if resolver is None:
            resolver = self._facts_resolver = Resolver(self)
        out: list[Value] = []
        newly_tensor: set[int] = set()
        # (`self` is the class's instance whoever calls the method.)
        first = 1 if fn.cls is not None and not is_static(fn) else 0
        for i in range(len(fn.params)):
            v: Value = NOTHING
            if i < first:
                out.append(v)
                continue
            tensors = True
            for args in sites:
                if i < len(args):
                    given = resolver.value(args[i])
                    v = join(v, frozenset(f for f in given if _kind_fact(f)))
                    tensors = tensors and any(type(f) in _TENSOR_FACTS for f in given) and all(type(f) in _TENSOR_FACTS or type(f) is Sym for f in given)
                else:
                    tensors = False
            if tensors:
                # Every call here gives it a tensor (`_pd(x * self.w)`):
                # its methods are a tensor's (`djast.prod(-1)` saves its
                # result), whether it requires grad still resting on what
                # each caller gives.
                v = join(v, frozenset({TENSOR}))
                if not fn.params[i].annotation:
                    newly_tensor.add(i)
            out.append(v)
        # (Worth a run only for what the observers decide on: the model, the
        # optimizer, the scaler, an instance of a class here, a tensor where
        # the parameter alone does not show one.)
        if any(type(f) in _OBJECT_FACTS for v in out for f in v):
            return tuple(out)
        return tuple(out) if newly_tensor else None

    # -- what runs depend on ---------------------------------------------------------

    def depend(self, key: tuple) -> None:
        """The run in progress reads ``key`` (a summary, a shared location,
        a class's facts...)."""
        run = self.current
        if run is not None and key not in run.deps:
            run.deps[key] = self.version.get(key, 0)

    def bump(self, key: tuple) -> None:
        self.version[key] = self.version.get(key, 0) + 1
        if self.current is not None:
            self.current.bumped.add(key)

    # -- flow graph ------------------------------------------------------------------

    def edge(self, src: object, dst: object) -> None:
        if src != dst:
            s = self.flow.get(src)
            if s is None:
                self.flow[src] = {dst}
            else:
                s.add(dst)

    def reaches(self, start: Iterable[object], stop: set) -> set:
        """Every flow node reachable from ``start``."""
        seen = set(start)
        todo = list(seen)
        while todo:
            k = todo.pop()
            for nxt in self.flow.get(k, ()):
                if nxt not in seen:
                    seen.add(nxt)
                    if nxt not in stop:
                        todo.append(nxt)
        return seen

    def reaches_matched(self, start: Iterable[object], stop: set, home: int | None = None) -> set:
        """Every flow node reachable from ``start``, where what enters one of
        this module's functions through a parameter leaves through its
        return only to the functions it entered from: a value handed to a
        shared helper (`loss_fn(pred, y)` in an evaluation loop) does not
        reach what the helper's other callers do with their own results (a
        training loop's `loss.backward()`). Entered another way (state, a
        start inside it, ``home``: the function ``start`` is in), a return
        goes to every caller, as in ``reaches``. Entered by no edge at all,
        likewise (what is not followed is not restricted)."""
        seen: set = set()
        entered: dict[int, set] = {}  # function -> the functions it was entered from
        free: set[int] = {home} if home is not None else set()  # entered other than by a parameter
        todo = list(start)
        for k in todo:
            fn = _fn_of(k)
            if fn is not None:
                free.add(fn)
        seen.update(todo)
        params = None
        while todo:
            k = todo.pop()
            if type(k) is Ret:
                allowed = None if k.fn in free or k.fn not in entered else entered[k.fn]
                for nxt in self.flow.get(k, ()):
                    if allowed is not None and _fn_of(nxt) not in allowed and _fn_of(nxt) is not None:
                        continue
                    if nxt not in seen:
                        seen.add(nxt)
                        if nxt not in stop:
                            todo.append(nxt)
                continue
            here = _fn_of(k)
            for nxt in self.flow.get(k, ()):
                if type(nxt) is Local and nxt.fn != here:
                    if params is None:
                        params = {(f.index, n) for f in self.functions for n in f.param_names}
                    if (nxt.fn, nxt.name) in params and here is not None:
                        before = entered.setdefault(nxt.fn, set())
                        if here not in before:
                            before.add(here)
                            r = Ret(nxt.fn)
                            if r in seen:
                                todo.append(r)  # (its return now goes back here too)
                    elif nxt.fn not in free:
                        free.add(nxt.fn)
                        if Ret(nxt.fn) in seen:
                            todo.append(Ret(nxt.fn))
                if nxt not in seen:
                    seen.add(nxt)
                    if nxt not in stop:
                        todo.append(nxt)
        return seen

    def aliases(self, loc: Loc) -> set[Loc]:
        """``loc`` and the parameters of this module's functions that what
        it holds is handed to by the calls here, transitively (`main()`'s
        `model` is `train_one_epoch`'s `model`)."""
        if self._param_edges is None:
            self._param_edges = {}
            params = {(f.index, n) for f in self.functions for n in f.param_names}
            for src, dsts in self.flow.items():
                for d in dsts:
                    if type(d) is Local and (d.fn, d.name) in params:
                        self._param_edges.setdefault(base_loc(src), set()).add(d)
                    elif type(d) is ClassAttr:
                        # `self.model = model`: what a parameter is given
                        # is what the attribute holds (`Trainer(model, opt)`
                        # in `main()`, `self.model(x)` in `train_step`).
                        b = base_loc(src)
                        if type(b) is Local and (b.fn, b.name) in params:
                            self._param_edges.setdefault(b, set()).add(d)
        out = {loc}
        todo = [loc]
        while todo and len(out) < 64:
            for d in self._param_edges.get(todo.pop(), ()):
                if d not in out:
                    out.add(d)
                    todo.append(d)
        return out

    def fn_at(self, index: int) -> ir.Function:
        return self.functions[index]

    @property
    def call_sites(self) -> list[CallSite]:
        return list(self._call_sites.values())

    def add_call_site(self, node: object, site: CallSite) -> None:
        key = (site.caller, id(node), site.callee, site.target if site.callee is None else None)
        self._call_sites[key] = site
        if site.callee is not None:
            self._sites_by_callee.setdefault(site.callee, {})[key] = site

    def callees_at(self, node: object) -> list[int]:
        """The functions of this module the call at ``node`` runs."""
        return sorted({k[2] for k in self._call_sites if k[1] == id(node) and k[2] is not None})

    def callers_of(self, index: int) -> list[CallSite]:
        sites = self._sites_by_callee.get(index)
        return list(sites.values()) if sites else []


# What a caller's argument says of the object a parameter holds (a module,
# an optimizer, a scaler, an instance, a number, a tensor). Whether a tensor
# is attached or a leaf is decided by the conditions findings carry
# (`Attached`, resolved over the call sites), and what a function given as
# an argument returns is its summary's for every caller: neither is taken
# into the callee's run.
_KIND_FACTS = (Module, OptimizerKind, ScalerKind, Instance, ClassObj, Qual, GradContext, Plain, Foreign, TensorKind)
_OBJECT_FACTS = (Module, OptimizerKind, ScalerKind, Instance)
# What only a tensor is: a tensor of known kind, one with a graph, a leaf.
_TENSOR_FACTS = (TensorKind, Graph, Leaf)


def _kind_fact(f: object, depth: int = 0) -> bool:
    t = type(f)
    if t in _KIND_FACTS:
        return True
    if t is Container and depth < 2:
        return all(_kind_fact(x, depth + 1) for x in f.all_values())  # type: ignore[attr-defined]
    return False


def _postorder(f: ir.Function, calls: dict[int, set[int]], index: dict[int, ir.Function], done: set[int], out: list[ir.Function]) -> None:
    """Append ``f`` to ``out`` after its callees (depth first, callees in
    index order; a call back into the path is skipped). With an explicit
    stack: a generated module's call chains run deeper than Python's
    recursion limit."""
    if f.index in done:
        return
    on_path = {f.index}
    path = [(f, iter(sorted(calls.get(f.index, ()))))]
    while path:
        g, callees = path[-1]
        for c in callees:
            if c not in done and c not in on_path:
                on_path.add(c)
                path.append((index[c], iter(sorted(calls.get(c, ())))))
                break
        else:
            path.pop()
            on_path.discard(g.index)
            done.add(g.index)
            out.append(g)
