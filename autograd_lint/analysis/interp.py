"""The interpreter: one abstract interpretation of a module's IR.

Every function is run over abstract values (values.py) with its parameters
as symbols, so one run gives both what the function does for any caller (its
summary) and what happened inside it (the events observers hear about).
Statements update a frame of typed locations (state.py): branches fork and
join frames, loops run to a fixpoint, ``return``/``raise``/``break`` end a
path. Grad mode is part of the frame; values made under ``no_grad`` carry no
graph. Functions run callees first; a function whose inputs changed after
it ran (a callee's summary, an attribute of ``self``, a module-level name,
a call a later ``.backward()`` proved to build a graph) runs again, up to
``PASSES`` passes in all. Observers hear every run; a re-run first tells
them to ``forget`` what the function's earlier run said.

Alongside values the interpreter records a flow graph between locations
(who feeds whom, down to backward and to returns), the call sites of the
module's functions, and facts about loops (does a loop backpropagate, does
it feed data to a module).
"""

from __future__ import annotations

import builtins
import dataclasses
from dataclasses import dataclass, field
from typing import Iterable, Mapping

from autograd_lint.analysis import ir
from autograd_lint.analysis import api, members
from autograd_lint.analysis import torch_api as lib
from autograd_lint.analysis.api import Gives, Member
from autograd_lint.analysis.paths import ELEMENT, is_static, path_key, self_name, static_loc
from autograd_lint.analysis.observer import (
    Accumulate,
    CallEvent,
    Keep,
    Mutation,
    Observer,
    Point,
    Store,
)
from autograd_lint.analysis.resolve import Condition, EntryGradOn, GradNotOff
from autograd_lint.analysis.state import BACKWARD, ELEMENT_BACKWARD, ESCAPE, AttrOf, Def, base_loc, ClassAttr, Frame, Global, Local, Loc, Ret, join_frames
from autograd_lint.analysis.summaries import CallEffect, ClassSummary, FunctionSummary, Retain
from autograd_lint.analysis.outcome import (
    CallArgs,
    CalledFunction,
    Keeps,
    Outcome,
    SavesArg,
    Site,
    StaticGradMemory,
    Steps,
    SymCall,
    WritesArg,
)
from autograd_lint.analysis.tensor_ops import binop, compare, ledger_saves, op, unary
from autograd_lint.analysis.transfer import (
    apply,
    attribute,
    call_method,
    call_qual,
    call_value,
    find_method,
    iterate,
    subscript,
    unpack,
)
from autograd_lint.analysis.values import (
    ACTIVATION,
    BLOCK_INPUT,
    AttrStep,
    BOOL_V,
    NONE_V,
    NOTHING,
    NUMBER_V,
    STR_V,
    TENSOR,
    ClassObj,
    Container,
    FunctionObj,
    GradContext,
    GradMode,
    Graph,
    HookArg,
    ImportRoot,
    Instance,
    InstanceRoot,
    Leaf,
    Module,
    MultiView,
    ParamRoot,
    Plain,
    Qual,
    Ref,
    Part,
    Saved,
    TENSOR_FACTS,
    Sym,
    Value,
    container,
    elements,
    join,
    join_paths,
    attached,
    plain_only,
    tensorish,
)

PASSES = 3
_SHOWN_MODULE = frozenset({Module(True)})
LOOP_ITERATIONS = 2
EMPTY: frozenset = frozenset()
_BUILTINS = frozenset(dir(builtins))


class Origin(tuple):
    """A call's result as a node of the flow graph (to follow where a model
    call's output goes)."""

    __slots__ = ()

    def __new__(cls, node: object) -> "Origin":
        return tuple.__new__(cls, ("origin", id(node)))


@dataclass
class LoopFacts:
    loop: ir.Loop
    fn: ir.Function
    steps: bool = False  # the body backpropagates or steps an optimizer
    data: bool = False  # an item is fed to a module or a proven helper
    rebinds: set = field(default_factory=set)  # locations re-created every iteration
    targets: set = field(default_factory=set)  # the loop's item locations
    iter_text: str | None = None  # what it iterates over (`val_loader`)
    branch: int = 0  # branch depth where the loop starts
    comprehension: bool = False


@dataclass(frozen=True, slots=True)
class CallSite:
    """A call of one of this module's functions, or of a symbol."""

    caller: int
    callee: int | None  # ir.Function.index, None for a symbol
    target: Value  # the callee value (a FunctionObj or a Sym)
    grad: GradMode
    conds: tuple
    args: tuple[Value, ...]
    kwargs: tuple[tuple[str, Value], ...]
    bound: bool  # the receiver is the first argument


@dataclass
class HookInfo:
    fn: ir.Function
    owner: ir.Function
    args: frozenset[int]  # parameter indexes receiving attached tensors
    # The registering function removes the hook before it returns
    # (`h = m.register_forward_hook(f)` ... `h.remove()`): the hook runs
    # within that call only.
    scoped: bool = False


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


def _literal(e: ir.Expr) -> object:
    if type(e) is ir.Const:
        return e.value
    if type(e) is ir.UnaryOp and e.op == "neg" and type(e.operand) is ir.Const and isinstance(e.operand.value, (int, float)):
        return -e.operand.value  # type: ignore[operator]
    return _NO_LITERAL


_NO_LITERAL = object()


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
        self.proven_targets: dict = {}
        self.current: "Run | None" = None
        self.version: dict[tuple, int] = {}
        self.flow: dict[object, set] = {}
        # The flow nodes of the bindings that hold an op's output it saved
        # (`Saved.node` -> Def...): where that output's graph goes from.
        self.saved_outputs: dict[object, set] = {}
        self._call_sites: dict[tuple, CallSite] = {}
        self.loop_facts: dict[ir.Loop, LoopFacts] = {}
        self.stepping: set[int] = set()
        self.calls_eval: set[int] = set()
        self.hooks: dict[int, HookInfo] = {}
        self.static_grad_memory = False
        # Unresolved `with` contexts a backward() inside them showed to leave grad on.
        self.grad_on_contexts: set[GradNotOff] = set()
        self.captured: set[tuple[int, str]] = set()
        self.comp_loops: dict[int, ir.Loop] = {}  # id(comprehension node) -> its loop
        self.lookup = InFileLookup(self)
        self.state_joins = {o: o.join_state for o in self.observers}
        # hook -> the observers that listen to it (the others are not called)
        self.listening: dict[str, list[Observer]] = {
            name: [o for o in self.observers if getattr(type(o), name) is not getattr(Observer, name)]
            for name in ("start", "end", "store", "accumulate", "keep", "mutate", "call", "bind", "returned")
        }
        self._module_class: dict[int, bool | None] = {}
        self._blocks: set[int] | None = None
        self._class_cache: dict[int, ClassSummary] = {}
        self._order: list[ir.Function] | None = None
        self.class_attrs: dict[str, dict[str, Value]] = {}
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
                    if evidence or method in ("train", "forward"):
                        key = path_key(fn, family, c.func.value)
                        if key is not None:
                            (self.module_paths if evidence else trained if method == "train" else called).add(key)
            called.update(static_loc(fn, name) for name in fn.name_calls)
        self.module_paths |= trained & called
        self.module_path_attrs = {k.attr if type(k) in (AttrOf, ClassAttr) else k.name for k in self.module_paths}  # type: ignore[union-attr]
        for fn in self.functions:
            self.rebound[fn.index] = fn.assigned & set(fn.param_names)
            f = fn.parent
            while f is not None and not f.is_module:
                for n in fn.reads & f.locals:
                    self.captured.add((f.index, n))
                f = f.parent
            for method in lib.HOOK_METHODS.keys() & fn.method_calls.keys():
                for call in fn.method_calls[method]:
                    wk = call.keyword("with_kwargs")
                    self._register_hook(fn, call, method, type(wk) is ir.Const and wk.value is True)

    def _register_hook(self, owner: ir.Function, call: ir.Call, method: str, with_kwargs: bool) -> None:
        if method not in lib.FORWARD_HOOKS:
            return
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

    def framework_runs_without_grad(self, cls: ir.Class, method: str, depth: int = 0) -> bool:
        """A base class of ``cls`` (named as written, or of an in-file base)
        is a framework's that calls ``method`` with grad off."""
        if depth > 8:
            return False
        for b in cls.bases:
            name = ir.dotted(b)
            if name and method in lib.NO_GRAD_METHODS_OF_BASES.get(name.rsplit(".", 1)[-1], ()):
                return True
        return any(self.framework_runs_without_grad(b, method, depth + 1) for b in self.in_file_bases(cls))

    def in_file_bases(self, cls: ir.Class) -> list[ir.Class]:
        out = []
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
        attrs = _TrackedAttrs(self, family, self.class_attrs.get(family, {}))
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
        )
        self._class_cache[cls.id] = out
        return out

    def _overrides(self, cls: ir.Class) -> dict[str, tuple[Ref, ...]]:
        """The methods of ``cls``'s subclasses in this module, by name."""
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

    def import_value(self, name: ir.ImportName) -> Value:
        """What an import binds: a library's name, or a symbol of a project
        module (resolved once its summary is known)."""
        if name.level == 0 and lib.is_known_library(name.module):
            full = f"{name.module}.{name.name}" if name.name else name.module
            return frozenset({Qual(full)})
        root = Sym(ImportRoot(self.file, name.module, name.level, name.name))
        if name.level == 0:
            full = f"{name.module}.{name.name}" if name.name else name.module
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

    def local_module_class(self, ref: Ref) -> bool | None:
        return self.lookup.is_module_class(ref)

    def param_values(self, fn: int) -> list[tuple[Value, ...]] | None:
        """The argument values each call site in this module gives ``fn``'s
        parameters, in parameter order."""
        names = self.functions[fn].param_names
        out = []
        for site in self.call_sites:
            if site.callee != fn:
                continue
            values = list(site.args[: len(names)]) + [NOTHING] * max(0, len(names) - len(site.args))
            for k, v in site.kwargs:
                if k in names:
                    values[names.index(k)] = join(values[names.index(k)], v)
            out.append(tuple(values))
        return out or None

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
        sites = [(s.grad, s.conds) for s in self.call_sites if s.callee == fn]
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
                summary = run.summary()
                if self.summaries.get(fn.index) != summary:
                    self.summaries[fn.index] = summary
                    self.bump(("fn", fn.index))
                # What the run changed itself (`self.n += 1` read then
                # written) does not call for running it again.
                for k in run.bumped & run.deps.keys():
                    run.deps[k] = self.version[k]
                if run.prove():
                    run.deps[("proofs", fn.index)] = -1  # its own calls proved: run it again
                seen[fn.index] = run.deps
            todo = [f for f in self.order() if any(self.version.get(k, 0) != v for k, v in seen.get(f.index, {}).items())]
            if not todo:
                break
        for o in self.observers:
            o.finish(self)

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

    def fn_at(self, index: int) -> ir.Function:
        return self.functions[index]

    @property
    def call_sites(self) -> list[CallSite]:
        return list(self._call_sites.values())

    def add_call_site(self, node: object, site: CallSite) -> None:
        self._call_sites[(site.caller, id(node), site.callee, site.target if site.callee is None else None)] = site

    def callers_of(self, index: int) -> list[CallSite]:
        return [s for s in self._call_sites.values() if s.callee == index]


class _TrackedAttrs(Mapping):
    """A class's ``self.<attr>`` facts, as a mapping that tells the run
    reading one which attribute it depends on."""

    def __init__(self, prog: Program, family: str, attrs: dict) -> None:
        self._prog = prog
        self._family = family
        self._attrs = attrs

    def __getitem__(self, name: str) -> Value:
        self._prog.depend(("loc", ClassAttr(self._family, name)))
        return self._attrs[name]

    def get(self, name: str, default: object = None) -> object:  # type: ignore[override]
        self._prog.depend(("loc", ClassAttr(self._family, name)))
        return self._attrs.get(name, default)

    def __iter__(self):
        return iter(self._attrs)

    def __len__(self) -> int:
        return len(self._attrs)


class InFileLookup:
    """Summaries of this module's functions and classes (transfer.Lookup)."""

    def __init__(self, prog: Program) -> None:
        self.prog = prog

    def function(self, ref: Ref) -> FunctionSummary | None:
        if ref.file != self.prog.file:
            return None
        fn = self.prog.fn_by_qualname.get(ref.qualname)
        if fn is None:
            return None
        self.prog.depend(("fn", fn.index))
        return self.prog.summaries.get(fn.index)

    def klass(self, ref: Ref) -> ClassSummary | None:
        if ref.file != self.prog.file:
            return None
        cls = self.prog.class_by_qualname.get(ref.qualname)
        if cls is None:
            return None
        self.prog.depend(("cls", cls.id))
        return self.prog.class_summary(cls)

    def is_module_class(self, ref: Ref) -> bool | None:
        if ref.file != self.prog.file:
            return None
        cls = self.prog.class_by_qualname.get(ref.qualname)
        if cls is None:
            return False
        self.prog.depend(("cls", cls.id))
        return self.prog.is_module_class(cls)

    def imported(self, root: ImportRoot) -> Value | None:
        return None

    def param(self, root: ParamRoot) -> Value | None:
        return None

    def export(self, file: str, name: str) -> Value | None:
        return None


def method_class(fn: ir.Function | None) -> ir.Class | None:
    while fn is not None:
        if fn.cls is not None:
            return fn.cls
        fn = fn.parent
    return None


def _is_classmethod(fn: ir.Function) -> bool:
    return any(ir.dotted(d) == "classmethod" for d in fn.decorators)


# -- one run of one function --------------------------------------------------------


class _LoopContext:
    __slots__ = ("facts", "breaks", "continues", "written", "carried", "items")

    def __init__(self, facts: LoopFacts) -> None:
        self.facts = facts
        self.breaks: list[Frame] = []
        self.continues: list[Frame] = []
        self.written: set = set()  # locations bound in this iteration so far
        self.carried: set = set()  # locations read before this iteration bound them
        # The loop's items and the locations bound from them (`x =
        # torch.tensor(batch["x"])`): what feeding data to a model reads.
        self.items: set = set(facts.targets)


def _postorder(f: ir.Function, calls: dict[int, set[int]], index: dict[int, ir.Function], done: set[int], out: list[ir.Function], stack: set[int] | None = None) -> None:
    """Append ``f`` to ``out`` after its callees (depth first; a call back
    into the path is skipped). A function, not a closure: a recursive
    closure is a reference cycle, and this one would keep the module's IR
    (and its tree) alive until the cycle collector runs."""
    stack = set() if stack is None else stack
    if f.index in done or f.index in stack:
        return
    stack.add(f.index)
    for c in sorted(calls.get(f.index, ())):
        _postorder(index[c], calls, index, done, out, stack)
    stack.discard(f.index)
    done.add(f.index)
    out.append(f)


class Run:
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
        self.cls = method_class(fn)
        self.family = prog.family_of[self.cls.id] if self.cls is not None else None
        # (A nested function or lambda of a method closes over its `self`.)
        self.self_name: str | None = self_name(fn)
        self.in_forward = fn.cls is not None and fn.name == "forward" and prog.is_module_class(fn.cls) is not False
        self.returns: Value = NOTHING
        self.ret_sources: frozenset = EMPTY
        self.yields: list[tuple[Value, GradMode]] = []
        self.keeps: list[Retain] = []
        self.effects: list[CallEffect] = []
        self.steps = False
        self.backward_calls = 0
        # For proofs: (location bound, what it was read from, the single
        # call that made it, stored as an element of the location, the item
        # of the call's value it was bound to, the binding's flow node).
        self.binds: list[tuple[Loc, tuple, tuple, bool, int | None, object]] = []
        self.evidence_locs: set = set()
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
        # What this run read of other functions and shared state, with the
        # version it saw (Program.run_all runs it again when one changes).
        self.deps: dict[tuple, int] = {}
        self.bumped: set[tuple] = set()
        self._locs: dict[str, Loc] = {}
        self._srcs: dict[Loc, frozenset] = {}
        # Names bound to a view of another tensor (`tok = x[:, 0].view(n, c)`)
        # -> the location of the tensor they view.
        self.views: dict[Loc, Loc] = {}

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

    def _no_grad_decorator(self) -> object:
        fn = self.fn
        for d, expr in zip(fn.decorator_nodes, fn.decorators):
            q = self._qual_of(expr.func if type(expr) is ir.Call else expr)
            if q in lib.NO_GRAD:
                return d
        return None

    def _qual_of(self, e: ir.Expr) -> str | None:
        v, _ = self.ev(e)
        for f in v:
            if type(f) is Qual:
                return f.name
        return None

    def _entry(self) -> tuple[GradMode, tuple, GradMode | None]:
        """The grad mode the function starts in, what it depends on, and a
        mode its decorators force (None if none)."""
        prog, fn = self.prog, self.fn
        prog.depend(("deco", fn.index))
        for dv in prog.decorators.get(fn.index, ()):
            modes = _decorator_modes(dv)
            if any(type(f) is FunctionObj for f in dv):
                # A decorator of this module's: what it makes of the function.
                probe = frozenset({FunctionObj(prog.fn_ref[fn.index])})
                made = call_value(frozenset(f for f in dv if type(f) is FunctionObj), CallArgs((probe,)), Site(None, fn.index, GradMode.ON), prog.lookup).value
                wrapped = {f.wrapped for f in made if type(f) is FunctionObj}
                if wrapped and None not in wrapped:
                    modes |= wrapped  # type: ignore[arg-type]
            if len(modes) == 1:
                mode = modes.pop()
                return mode, (), mode
            syms = [f for f in dv if type(f) is Sym]
            if syms:
                return GradMode.ON, (self._entry_cond(), GradNotOff(frozenset(syms), decorator=True)), None
        if fn.cls is not None:
            if (fn.name in lib.LIGHTNING_NO_GRAD and prog.is_lightning(fn.cls)) or prog.framework_runs_without_grad(fn.cls, fn.name):
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
            if i == 0 and self.self_name == p.name and fn.cls is not None:
                v = self._self_value(fn.cls)
            elif i == 0 and fn.cls is not None and _is_classmethod(fn):
                v = frozenset({ClassObj(prog.class_ref[fn.cls.id])})
            else:
                facts: set = {Sym(ParamRoot(fn.index, i))}
                if hook is not None and i in hook.args:
                    facts.add(HookArg(fn.index))
                if self.in_forward and i == 1:
                    facts.add(BLOCK_INPUT if prog.is_block(fn.cls) else ACTIVATION)  # type: ignore[arg-type]
                kind = self.annotated(p.annotation)
                if kind and all(type(f) is Plain for f in kind):
                    facts = set(kind)  # `n: int`: a number, whatever its callers pass
                facts |= kind
                if p.kind == "vararg":
                    v = container("tuple", elem=frozenset(facts))
                elif p.kind == "kwarg":
                    v = container("dict", elem=frozenset(facts))
                else:
                    v = frozenset(facts)
                if p.default is not None and fn.index != -1:
                    # A default that is a number, or a layer class
                    # (`norm_layer=nn.LayerNorm`): what callers that leave
                    # it out give.
                    dv, _ = self.ev(p.default)
                    if plain_only(dv) or (dv and all(type(f) is Qual and lib.is_module_class(f.name) for f in dv)):
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

    # -- statements -----------------------------------------------------------------

    def block(self, stmts: list) -> None:
        for s in stmts:
            if not self.frame.reachable:
                return
            self.stmt(s)

    def stmt(self, s) -> None:
        t = type(s)
        if t is ir.Assign:
            self.assign(s)
        elif t is ir.ExprStmt:
            self.expr_stmt(s)
        elif t is ir.AugAssign:
            self.aug_assign(s)
        elif t is ir.Return:
            v, src = self.ev(s.value) if s.value is not None else (NONE_V, EMPTY)
            self.returns = join(self.returns, v)
            self.ret_sources |= src
            ret = Ret(self.index)
            for x in src:
                self.prog.edge(x, ret)
            for o in self.prog.listening["returned"]:
                o.returned(self, v, src)
            self.frame.reachable = False
        elif t is ir.If:
            self.ev(s.test)
            narrowing = self._isinstance(s.test)
            before = self.frame
            self.branch += 1
            self.guards.append(s.test)
            self.frame = before.fork()
            if narrowing is not None:
                self._narrow(*narrowing, True)
            self.block(s.body)
            after_body = self.frame
            self.frame = before.fork()
            if narrowing is not None:
                self._narrow(*narrowing, False)
            self.block(s.orelse)
            self.guards.pop()
            self.branch -= 1
            self.frame = self.join([after_body, self.frame])
        elif t is ir.For or t is ir.While:
            self.loop(s)
        elif t is ir.With:
            self.with_(s)
        elif t is ir.Try:
            before = self.frame.fork()
            self.block(s.body)
            after = self.frame
            branches = [after]
            self.branch += 1
            for h in s.handlers:
                self.frame = self.join([before, after]) if after.reachable else before.fork()
                if h.name:
                    self.write(self.loc(h.name), NOTHING)
                self.block(h.body)
                branches.append(self.frame)
            if s.orelse:
                self.frame = after.fork()
                self.block(s.orelse)
                branches[0] = self.frame
            self.branch -= 1
            self.frame = self.join(branches)
            if s.finalbody:
                reachable = self.frame.reachable
                self.frame.reachable = True
                self.block(s.finalbody)
                self.frame.reachable = self.frame.reachable and reachable
        elif t is ir.Raise:
            if s.value is not None:
                self.ev(s.value)
            self.frame.reachable = False
        elif t is ir.Break:
            if self.loops:
                self.loops[-1].breaks.append(self.frame.fork())
            self.frame.reachable = False
        elif t is ir.Continue:
            if self.loops:
                self.loops[-1].continues.append(self.frame.fork())
            self.frame.reachable = False
        elif t is ir.Delete:
            for target in s.targets:
                if type(target) is ir.Subscript:
                    root = self.root_loc(target.value)
                    if root is not None:
                        self.mark_rebind(root)
                    self.ev(target.value)
                elif type(target) is ir.Name:
                    self.frame.env.pop(self.loc(target.id), None)
        elif t is ir.Def:
            self.define(s.fn)
        elif t is ir.ClassDef:
            self.define_class(s.cls)
        elif t is ir.Import:
            for name in s.names:
                self.write(self.loc(name.local), self.prog.import_value(name))
        elif t is ir.Match:
            self.ev(s.subject)
            before = self.frame
            frames = [before.fork()]
            self.branch += 1
            for case in s.cases:
                self.frame = before.fork()
                self.block(case)
                frames.append(self.frame)
            self.branch -= 1
            self.frame = self.join(frames)

    def join(self, frames: list[Frame], paths: bool = True) -> Frame:
        """``paths``: frames of different paths meeting (Saved must hold on
        each); False for a loop head, where a later iteration follows an
        earlier one."""
        return join_frames(frames, self.prog.state_joins, paths)

    def define(self, fn: ir.Function) -> None:
        """A ``def``: its decorators run here, in the enclosing scope."""
        values = []
        for d in fn.decorators:
            v, _ = self.ev(d)
            values.append(v)
        if values:
            old = self.prog.decorators.get(fn.index)
            new = values if old is None or len(old) != len(values) else [join(a, b) for a, b in zip(old, values)]
            if new != old:
                self.prog.decorators[fn.index] = new
                self.prog.bump(("deco", fn.index))
        ref = self.prog.fn_ref[fn.index]
        value: Value = frozenset({FunctionObj(ref)})
        for dv in reversed(values):
            modes = _decorator_modes(dv)
            if len(modes) == 1:
                value = frozenset({FunctionObj(ref, modes.pop())})
        if self.class_scope is None:
            self.write(self.loc(fn.name), value)

    def define_class(self, cls: ir.Class) -> None:
        bases = []
        for b in cls.bases:
            v, _ = self.ev(b)
            bases.append(v)
        old = self.prog.class_bases.get(cls.id)
        new = tuple(bases) if old is None or len(old) != len(bases) else tuple(join(a, b) for a, b in zip(old, bases))
        if new != old:
            self.prog.class_bases[cls.id] = new
            self.prog.class_changed(self.prog.family_of[cls.id])
        for d in cls.decorators:
            self.ev(d)
        # The class body runs once, in the class's namespace.
        saved_scope, saved_names = self.class_scope, self.class_scope_names
        self.class_scope = cls
        self.class_scope_names = _class_level_names(cls)
        for m in cls.methods.values():
            self.define(m)
        self.block([s for s in cls.body if type(s) is not ir.Def])
        self.class_scope, self.class_scope_names = saved_scope, saved_names
        if self.class_scope is None:
            self.write(self.loc(cls.name), frozenset({ClassObj(self.prog.class_ref[cls.id])}))

    # -- assignment ---------------------------------------------------------------

    def assign(self, s: ir.Assign) -> None:
        self.last_comp = None
        v, src = self.ev(s.value)
        comp = self.last_comp if type(s.value) is ir.Comp and s.value.kind != "gen" else None
        if s.annotation:
            extra = self.annotated(s.annotation)
            if extra and not v:
                v = frozenset(extra)
        for target in s.targets:
            acc = self._accumulated(target, s.value)
            if acc is not None:
                operand, operand_node = acc
                av, asrc = self.ev(operand) if operand is not s.value else (v, src)
                self.accumulate(target, av, asrc, s.node, operand_node)
                if type(target) is not ir.Name:
                    continue
                # `running = running + loss` extends, it does not re-create.
                self.bind(self.loc(target.id), v, src, s.node, s.value, rebinds=False)
                continue
            self.assign_to(target, v, src, s.node, s.value)
            if comp is not None and type(target) in (ir.Name, ir.Attr):
                self._comprehension_store(target, comp, s.node)

    def _comprehension_store(self, target: ir.Expr, comp: tuple, node: object) -> None:
        """``xs = [f(b) for b in loader]``: a store into ``xs`` over the
        comprehension's loop."""
        loop, v, vs, elt_node = comp
        loc = self.loc(target.id) if type(target) is ir.Name else self.attr_loc(target)  # type: ignore[attr-defined]
        if loc is None:
            return
        lf = self.prog.loop_facts[loop]
        self.loops.append(_LoopContext(lf))
        at = self.point(node)
        self.loops.pop()
        e = Store(at, loc, ir.dotted(target) or "?", v, vs, elt_node, "comprehension", False)
        for o in self.prog.listening["store"]:
            o.store(self, e)

    def _accumulated(self, target: ir.Expr, value: ir.Expr) -> tuple[ir.Expr, object] | None:
        """``t = t + v``: an accumulation, whatever the spelling (the
        target is one of the operands of a chain of + and -, maybe scaled
        by a constant: ``ema = 0.9 * ema + 0.1 * loss``); a running
        extreme (``best = torch.max(best, v)``); either branch of
        ``v if t is None else t + v``. The new value is computed from the
        old one: what it holds chains across iterations."""
        text = ir.dotted(target)
        if text is None:
            return None
        if type(value) is ir.IfExp:
            # What to detach is the whole choice: its first branch (`loss`)
            # would start the chain again.
            acc = self._accumulated(target, value.orelse) or self._accumulated(target, value.body)
            return (acc[0], value.node) if acc is not None else None
        if type(value) is ir.Call and len(value.args) == 2 and not value.has_star and all(a.keyword is None for a in value.args):
            first, second = (a.value for a in value.args)
            if text in (ir.dotted(first), ir.dotted(second)) and call_qual(*self._callee_parts(value.func)) in lib.RUNNING_EXTREMES:
                other = second if ir.dotted(first) == text else first
                return other, other.node
            return None
        if type(value) is not ir.BinOp or value.op not in ("add", "sub"):
            return None
        operands: list[ir.Expr] = []
        stack: list[ir.Expr] = [value]
        while stack:
            e = stack.pop()
            if type(e) is ir.BinOp and e.op in ("add", "sub"):
                stack.extend((e.right, e.left))
            else:
                operands.append(e)
        rest = [o for o in operands if ir.dotted(self._unscaled(o, text)) != text]
        if len(rest) == len(operands) or not rest:
            return None
        if len(rest) == 1:
            return rest[0], rest[0].node
        # Several operands: the value added is the whole expression's.
        return value, value.node

    def _unscaled(self, e: ir.Expr, target: str) -> ir.Expr:
        """``t`` of ``t`` times a factor that is not a tensor (``0.9 * t``,
        ``(1 - self.alpha) * t``: a running average), else ``e``. (``h *
        gate`` with a tensor ``gate`` is a recurrence, not a total.)"""
        if type(e) is not ir.BinOp or e.op != "mul":
            return e
        for mine, other in ((e.left, e.right), (e.right, e.left)):
            if ir.dotted(mine) == target and _plain_factor(other) and not self._tensor_factor(other):
                return mine
        return _unscaled(e)

    def _tensor_factor(self, e: ir.Expr) -> bool:
        """A name or attribute read in ``e`` (a ``_plain_factor``) is known to
        be a tensor. (That an op saved an unknown value, if it is a tensor,
        says nothing of its kind.)"""
        t = type(e)
        if t is ir.Name or t is ir.Attr:
            return any(type(f) in TENSOR_FACTS and type(f) is not Saved for f in self.ev(e)[0])
        if t is ir.BinOp:
            return self._tensor_factor(e.left) or self._tensor_factor(e.right)
        if t is ir.UnaryOp:
            return self._tensor_factor(e.operand)
        return False

    def assign_to(self, target: ir.Expr, v: Value, src: frozenset, node: object, value_expr: ir.Expr | None) -> None:
        t = type(target)
        if t is ir.Name:
            self.bind(self.loc(target.id), v, src, node, value_expr)
        elif t is ir.Attr:
            self.assign_attr(target, v, src, node, value_expr)
        elif t is ir.Subscript:
            self.assign_item(target, v, src, node, value_expr)
        elif t is ir.Seq:
            els = target.elts
            if type(value_expr) is ir.Seq and len(value_expr.elts) == len(els) and not any(type(e) is ir.Starred for e in (*els, *value_expr.elts)):
                # `a, b = x, f(x)`: each name gets its own value.
                for el, ve in zip(els, value_expr.elts):
                    ev, es = self.ev(ve)
                    self.assign_to(el, ev, es, node, ve)
                return
            parts = unpack(v, len(els), self.site(node)) if not any(type(e) is ir.Starred for e in els) else None
            item = iterate(v, self.site(node)) if parts is None else None
            for i, el in enumerate(els):
                if type(el) is ir.Starred:
                    self.assign_to(el.value, container("list", elem=item if item is not None else NOTHING), src, node, None)
                elif type(el) is ir.Name and type(value_expr) is ir.Call:
                    # `recon, kl = model(x)`: each name is read from the call
                    # (for proofs: a backward of `recon` proves the call).
                    self.bind(self.loc(el.id), parts[i] if parts is not None else (item or NOTHING), src, node, value_expr, position=i)
                else:
                    part = parts[i] if parts is not None else (item or NOTHING)
                    if type(value_expr) is ir.Call:
                        # A backward proved the call through a name it bound:
                        # not what it puts anywhere else (`costs[i]`).
                        part = frozenset(f for f in part if not (type(f) is Graph and f.how == "backward" and f.node is value_expr.node))
                    self.assign_to(el, part, src, node, None)
        elif t is ir.Starred:
            self.assign_to(target.value, v, src, node, None)

    def bind(self, loc: Loc, v: Value, src: frozenset, node: object, value_expr: ir.Expr | None, rebinds: bool = True, position: int | None = None) -> None:
        """``loc = value_expr`` (``position``: ``loc`` is that item of it:
        ``a, loc = value_expr``)."""
        prog = self.prog
        pt = prog.proven_targets
        if pt:
            # `loss, acc = step(...)`: only `loss` is proven attached.
            # (A dict all of whose values were summed into the loss: each is.)
            drop = [f for f in v if type(f) is Graph and f.how == "backward" and loc not in pt.get(id(f.node), (loc,)) and f.node not in prog.proven_values]
            if drop:
                v = v - frozenset(drop)
        self.write(loc, v)
        if rebinds:
            self.mark_rebind(loc)
        # (What the value was read from, before this binding is what the
        # name holds: `x = x + 1` reads the earlier `x`.)
        shape = _proof_shape(value_expr, self) if value_expr is not None else ((), ())
        base = self.saved_root(value_expr) if value_expr is not None and type(value_expr) in (ir.Subscript, ir.Call, ir.Attr) else None
        if base is not None and base != loc and not plain_only(v):
            self.views[loc] = self.views.get(base, base)
        else:
            self.views.pop(loc, None)
        flow = self.defined(loc, node, src)
        for f in v:
            if type(f) is Saved and f.result:
                prog.saved_outputs.setdefault(f.node, set()).add(flow)
        for lc in self.loops:
            if not lc.items.isdisjoint(src) or loc in lc.facts.targets:
                lc.items.add(loc)
                lc.items.add(flow)
        if prog.listening["bind"]:
            alias = value_expr is None or type(value_expr) in (ir.Name, ir.Attr)
            for o in prog.listening["bind"]:
                o.bind(self, loc, v, src, alias)
        self.binds.append((loc,) + shape + (False, position, flow))

    def defined(self, loc: Loc, node: object, src: frozenset) -> object:
        """``loc`` is bound at ``node`` from ``src``: the flow node of this
        binding. A local of this function (not one a nested function reads)
        gets one of its own, which its later reads see until the next
        binding; anything else is one node for all its bindings."""
        prog = self.prog
        if self.fn.is_module or type(loc) is not Local or loc.fn != self.index or (loc.fn, loc.name) in prog.captured:
            for x in src:
                prog.edge(x, loc)
            return loc
        d = Def(loc, id(node))
        for x in src:
            prog.edge(x, d)
        # What is done to the object later (`xs.append(v)`) reaches what
        # reads this binding.
        prog.edge(loc, d)
        self.frame.defs[loc] = frozenset({d})
        return d

    def _stored(self, container: Loc, value_expr: ir.Expr) -> None:
        """For proofs: ``xs.append(call(...))`` or ``xs[i] = call(...)`` puts
        what the call made into ``xs``; a backward of an element of ``xs``
        shows the call builds a graph."""
        self.binds.append((container,) + _proof_shape(value_expr, self) + (True, None, container))

    def mark_rebind(self, loc: Loc) -> None:
        # Only an unconditional rebinding re-creates a container every
        # iteration; `if step % n == 0: losses = []` keeps n iterations' worth.
        for lc in self.loops:
            if self.branch == lc.facts.branch:
                lc.facts.rebinds.add(loc)

    def self_attr(self, e: ir.Expr) -> str | None:
        """``attr`` for ``self.attr`` in a method (or a function nested in one)."""
        if type(e) is ir.Attr and type(e.value) is ir.Name and self.self_name is not None and e.value.id == self.self_name and self.family is not None:
            if self.loc(self.self_name) == Local(self.index, self.self_name) or self.fn.cls is None:
                return e.attr
        return None

    def attr_loc(self, e: ir.Attr) -> Loc | None:
        attr = self.self_attr(e)
        if attr is not None:
            return ClassAttr(self.family, attr)  # type: ignore[arg-type]
        base = self.root_loc(e.value) if type(e.value) in (ir.Name, ir.Attr) else None
        return AttrOf(base, e.attr) if base is not None else None

    def assign_attr(self, target: ir.Attr, v: Value, src: frozenset, node: object, value_expr: ir.Expr | None) -> None:
        if target.attr == "requires_grad" and type(value_expr) is ir.Const and value_expr.value is True:
            # `x.requires_grad = True` makes x a leaf that requires grad: the
            # code asks for a graph from here on.
            root = self.root_loc(target.value)
            if root is not None:
                self.write(root, join(self.read(root), frozenset({Leaf(node, self.index)})))
            self.forced = True
            return
        self.ev(target.value)
        loc = self.attr_loc(target)
        if loc is None:
            return
        is_self = type(loc) is ClassAttr
        if is_self:
            self.write(loc, v)
            self.mark_rebind(loc)
        else:
            self.write(loc, v, strong=False)
        for x in src:
            self.prog.edge(x, loc)
        e = Store(self.point(node), loc, ir.dotted(target) or target.attr, v, src, value_expr.node if value_expr is not None else target.node, "attribute", True)
        for o in self.prog.listening["store"]:
            o.store(self, e)

    def assign_item(self, target: ir.Subscript, v: Value, src: frozenset, node: object, value_expr: ir.Expr | None) -> None:
        base, bsrc = self.ev(target.value)
        key_expr = target.key
        key = _literal(key_expr) if key_expr is not None else _NO_LITERAL
        kv, ksrc = self.ev(key_expr) if key_expr is not None else (NOTHING, EMPTY)
        if key_expr is not None and value_expr is not None and type(target.value) in (ir.Name, ir.Attr) and self._own_setitem(base):
            # `stats["loss"] = loss` on an object whose class defines
            # `__setitem__` (a collector that appends): that method runs.
            args = (ir.Arg(ir.Evaluated(kv, ksrc, key_expr.node)), ir.Arg(ir.Evaluated(v, src, value_expr.node)))
            self.call(ir.Call(ir.Attr(target.value, "__setitem__", target.node), args, node))  # type: ignore[arg-type]
            return
        # `y[:, 0] = 0` writes tensor y in place.
        if tensorish(base) or any(type(f) in (Sym,) for f in base) or (not base and _tensor_index(target)):
            root, path, via = self.view_root(target)
            if root is not None and (tensorish(base) or _tensor_index(target)):
                self.mutate(root, path, node, "[...] =", via, v)
        root = self.root_loc(target.value)
        if root is None:
            return
        overwrites = key is not _NO_LITERAL or self._key_is_fixed(key_expr)
        if any(type(f) is Container or type(f) is Part for f in base) and type(target.value) in (ir.Name, ir.Attr):
            self._update_item(root, key, v)
        for x in src:
            self.prog.edge(x, root)
        if value_expr is not None:
            self._stored(root, value_expr)
        e = Store(self.point(node), root, ir.dotted(target.value) or "?", v, src, value_expr.node if value_expr is not None else target.node, "subscript", overwrites)
        for o in self.prog.listening["store"]:
            o.store(self, e)
        if not overwrites and (type(root) is not Local or root.fn != self.index or _root_name(target.value) in self.fn.param_names):
            self._keeps_param(v, "store", ir.dotted(target.value) or "?", self._param_index(target.value))

    def _own_setitem(self, base: Value) -> bool:
        lookup = self.prog.lookup
        return any(type(f) is Instance and find_method(f.cls, "__setitem__", lookup) is not None for f in base)

    def _key_is_fixed(self, key_expr: ir.Expr | None) -> bool:
        """A key that names one of a fixed set of slots: a name bound to a
        constant, or the key of iterating over a dict's items."""
        if type(key_expr) is not ir.Name:
            return False
        v = self.read(self.loc(key_expr.id))
        return bool(v) and all(type(f) is Plain and f.kind == "str" for f in v) and self._from_dict_keys(key_expr.id)

    def _from_dict_keys(self, name: str) -> bool:
        for lc in self.loops:
            if Local(self.index, name) in lc.facts.targets and lc.facts.iter_text and lc.facts.iter_text.endswith((".items", ".keys")):
                return True
        return False

    def _update_item(self, loc: Loc, key: object, v: Value) -> None:
        old = self.read(loc)
        out = []
        for f in old:
            if type(f) is Part and f.key == key:
                continue  # replaced
            if type(f) is Container:
                if isinstance(key, (str, int)) and not isinstance(key, bool) and f.kind in ("dict", "list", "tuple"):
                    items = tuple((k, x) for k, x in f.items if k != key) + ((key, v),)
                    out.append(Container(f.kind, items, f.elem))
                else:
                    out.append(Container(f.kind, f.items, join(f.elem, v)))
            else:
                out.append(f)
        self.write(loc, frozenset(out), strong=type(loc) is Local)

    def _callee_parts(self, func: ir.Expr) -> tuple[str | None, Value | None, Value]:
        """(method, receiver, callee) of a call's function, for its qualified
        name. Only names and attributes are read (no effects); anything
        else has no qualified name here."""
        if type(func) is ir.Attr and ir.dotted(func.value) is not None:
            recv, _ = self.ev(func.value)
            return func.attr, recv, NOTHING
        if type(func) is ir.Name:
            callee, _ = self.ev(func)
            return None, None, callee
        return None, None, NOTHING

    def accumulate(self, target: ir.Expr, v: Value, src: frozenset, node: object, value_node: object) -> None:
        root = self.root_loc(target) if type(target) is not ir.Subscript else self.root_loc(target.value)
        if root is None:
            return
        text = ir.dotted(target) if type(target) is not ir.Subscript else ir.dotted(target.value)
        for x in src:
            self.prog.edge(x, root)
        e = Accumulate(self.point(node), root, text or "?", v, src, value_node)
        for o in self.prog.listening["accumulate"]:
            o.accumulate(self, e)
        if type(root) is not Local or root.fn != self.index:
            self._keeps_param(v, "accumulate", text or "?", self._param_index(target))

    def _param_index(self, e: ir.Expr) -> int | None:
        name = _root_name(e)
        if name is None:
            return None
        if name == self.self_name:
            return 0
        names = self.fn.param_names
        return names.index(name) if name in names and self.loc(name) == Local(self.index, name) else None

    def _keeps_param(self, v: Value, kind: str, into: str, into_param: int | None) -> None:
        """A value derived from a parameter kept beyond the call: part of
        the function's summary (a meter's ``update``)."""
        if self.fn.name in lib.ONCE_METHODS:
            return
        if any(type(f) is Sym and type(f.root) is ParamRoot and f.root.fn == self.index for f in v):
            rebound = self.prog.rebound.get(self.index, ())
            kept = frozenset(f for f in v if type(f) is Sym and type(f.root) is ParamRoot and f.root.fn == self.index)
            for f in kept:
                # A parameter the helper rebinds (`val = val.item()`) is not
                # kept as given.
                if self.fn.params[f.root.index].name in rebound:
                    continue
                r = Retain(f.root.index, kind, into, into_param)
                if r not in self.keeps:
                    self.keeps.append(r)

    def aug_assign(self, s: ir.AugAssign) -> None:
        v, src = self.ev(s.value)
        target = s.target
        how = {"add": "+=", "sub": "-=", "mul": "*=", "truediv": "/=", "pow": "**=", "matmul": "@=", "floordiv": "//=", "mod": "%="}.get(s.op, "op=")
        old, osrc = self.ev(target)
        # On a tensor, `y += 1` writes y in place.
        if type(target) is ir.Name or type(target) is ir.Attr or type(target) is ir.Subscript:
            root, path, via = self.view_root(target)
            if root is not None and (tensorish(old) or (type(target) is ir.Subscript and _tensor_index(target)) or not plain_only(old)):
                self.mutate(root, path, s.node, how, via, v)
        if s.op in ("add", "sub"):
            self.accumulate(target, op(v, self.site(s.node)), src, s.node, s.value.node)
        new = binop(s.op, old, v, self.site(s.node))
        if tensorish(old):
            # `w += d` on a tensor writes the same object: still a leaf,
            # still saved where it was; what d was saved as does not carry.
            new = frozenset(f for f in new if type(f) is not Saved) | frozenset(f for f in old if type(f) in (Leaf, Saved))
        if type(target) is ir.Name:
            loc = self.loc(target.id)
            self.write(loc, new)
            flow = self.defined(loc, s.node, src | osrc)
            # (For proofs: `loss += reg` then `loss.backward()`: the earlier
            # `loss` is a term of what was backpropagated.)
            self.binds.append((loc, tuple(osrc) if s.op in ("add", "sub") else (), (), False, None, flow))
        elif type(target) is ir.Attr:
            loc = self.attr_loc(target)
            if loc is not None:
                self.write(loc, new, strong=type(loc) is ClassAttr)
                for x in src:
                    self.prog.edge(x, loc)

    # -- expression statements ---------------------------------------------------------

    def expr_stmt(self, s: ir.ExprStmt) -> None:
        self.statement_call = s.value if type(s.value) is ir.Call else None
        v, _ = self.ev(s.value)
        self.statement_call = None
        # `torch.set_grad_enabled(False)` as a statement.
        if type(s.value) is ir.Call:
            modes = {f.mode for f in v if type(f) is GradContext and f.source in lib.SET_GRAD_ENABLED}
            if len(modes) == 1:
                self.frame.grad = modes.pop()
                self.conds = ()

    # -- isinstance narrowing -----------------------------------------------------------

    def _isinstance(self, test: ir.Expr) -> tuple[Loc, str, bool] | None:
        """``isinstance(x, nn.Module)`` / ``isinstance(x, torch.Tensor)``
        (or its ``not``): the local it tests, the kind ("module" or
        "tensor"), and whether the test holds in the ``if`` branch."""
        positive = True
        if type(test) is ir.UnaryOp and test.op == "not":
            test, positive = test.operand, False
        if type(test) is not ir.Call or type(test.func) is not ir.Name or test.func.id != "isinstance":
            return None
        args = test.positional()
        if len(args) != 2 or type(args[0]) is not ir.Name or args[0].id in self.comp:
            return None
        classes, _ = self.ev(args[1])
        kinds = set()
        for f in classes:
            if type(f) is Container:
                f = next(iter(f.all_values()), None)  # `(nn.Module, nn.Parameter)`: one kind each
                if f is None:
                    return None
            if type(f) is Qual and f.name in lib.TENSOR_CLASSES:
                kinds.add("tensor")
            elif type(f) is Qual and lib.is_base_module_class(f.name):
                kinds.add("module")
            else:
                return None
        if len(kinds) != 1:
            return None
        return self.loc(args[0].id), kinds.pop(), positive

    def _narrow(self, loc: Loc, kind: str, positive: bool, holds: bool) -> None:
        """What ``loc`` can hold in a branch where the isinstance test
        ``holds`` (or not): the facts of that kind only, or all but them.
        Symbols and instances of classes we cannot see stay: either may be."""
        v = self.read(loc)
        if not v:
            return
        inside = positive is holds

        def of_kind(f: object) -> bool | None:
            t = type(f)
            if kind == "tensor":
                return t in TENSOR_FACTS
            if t is Module:
                return True
            if t is Instance:
                return self.prog.lookup.is_module_class(f.cls)
            return False

        kept = frozenset(f for f in v if type(f) is Sym or (k := of_kind(f)) is None or k is inside)
        if kept != v:
            self.frame.env[loc] = kept

    # -- loops -----------------------------------------------------------------------

    def loop(self, s: ir.For | ir.While) -> None:
        prog = self.prog
        lf = prog.loop_facts.get(s.loop)
        if lf is None:
            lf = prog.loop_facts[s.loop] = LoopFacts(s.loop, self.fn)
        lf.branch = self.branch
        if type(s) is ir.For:
            it, isrc = self.ev(s.iter)
            lf.iter_text = _iter_text(s.iter)
            lf.targets = {self.loc(n) for n in _names(s.target)}
        ctx = _LoopContext(lf)
        self.loops.append(ctx)
        entry = self.frame
        head = entry.fork()
        end = head
        for _ in range(LOOP_ITERATIONS):
            self.frame = head.fork()
            ctx.continues = []
            ctx.written = set()
            ctx.carried = set()
            if type(s) is ir.For:
                self.assign_to(s.target, iterate(it, self.site(s.loop.node)), isrc, s.loop.node, None)
            else:
                self.ev(s.test)
            self.block(s.body)
            end = self.join([self.frame, *ctx.continues])
            new_head = self.join([entry, end], paths=False)
            # Another iteration sees something new only through what this
            # one read before binding it (a running total, a hidden state).
            settled = _same_on(new_head, head, ctx.carried)
            head = new_head
            if settled:
                break
        self.loops.pop()
        # A loop over a model's layers (`for layer in self.layers`) runs at
        # least once: its input does not leave the loop unchanged.
        self.frame = (end if type(s) is ir.For and _layers(it) else head).fork()
        frozen = _freezes_parameters(s)
        if frozen is not None:
            self._freeze(frozen)
        if s.orelse:
            self.block(s.orelse)
        self.frame = self.join([self.frame, *ctx.breaks])

    # -- with ---------------------------------------------------------------------

    def with_(self, s: ir.With) -> None:
        # The items enter in order: each one that sets a grad mode sets it
        # for the rest (`with torch.no_grad(), nullcontext():` is off); one
        # that may set it or leave it (`no_grad() if eval else nullcontext()`)
        # joins the two.
        mode: GradMode | None = None
        sources: set[str] = set()
        unresolved: list = []
        for item in s.items:
            v, src = self.ev(item.context)
            modes: set[GradMode] = set()
            neutral = False
            for f in v:
                t = type(f)
                if t is GradContext:
                    if f.mode is None:
                        neutral = True
                    else:
                        modes.add(f.mode)
                        sources.add(f.source)
                elif t is Sym:
                    unresolved.append(f)
            modes |= self._context_modes(v)
            if modes and neutral:
                modes.add(mode if mode is not None else self.frame.grad)
            if modes:
                mode = modes.pop() if len(modes) == 1 else GradMode.MAYBE
            if item.target is not None:
                enter = frozenset(f for f in v if type(f) is not GradContext)
                self.assign_to(item.target, enter if not modes and not neutral else NOTHING, src, s.node, None)
        saved_grad, saved_conds, saved_forced = self.frame.grad, self.conds, self.forced
        if mode is not None:
            self.frame.grad = mode
            self.conds = ()
            if mode is GradMode.ON:
                self.forced = True
        unknown: GradNotOff | None = None
        if mode is None and unresolved:
            unknown = GradNotOff(frozenset(unresolved))
            self.conds = self.conds + (unknown,)
        backward_calls = self.backward_calls
        tokens = None
        if sources and sources <= lib.NO_GRAD and self.frame.grad is GradMode.OFF:
            tokens = [(o, o.enter_grad_block(self, s.node, "with")) for o in self.prog.observers]
        self.block(s.body)
        if unknown is not None and self.backward_calls > backward_calls:
            # `backward()` inside a context we cannot see (a profiler, an
            # instantiated wrapper) shows that it leaves grad on.
            self.prog.grad_on_contexts.add(unknown)
        if tokens is not None:
            for o, token in tokens:
                o.exit_grad_block(self, token)
        self.frame.grad, self.conds, self.forced = saved_grad, saved_conds, saved_forced

    def _context_modes(self, v: Value) -> set[GradMode]:
        """A project helper used as a context manager: ``@contextmanager``
        functions yielding under ``no_grad``."""
        out: set[GradMode] = set()
        for f in v:
            if type(f) is Instance:
                info = self.prog.lookup.klass(f.cls)
                if info is not None and info.context is not None:
                    out.add(info.context)
        return out

    # -- expressions -------------------------------------------------------------------

    def ev(self, e: ir.Expr | None) -> tuple[Value, frozenset]:
        if e is None:
            return NOTHING, EMPTY
        t = type(e)
        if t is ir.Name:
            name = e.id
            comp = self.comp.get(name)
            if comp is not None:
                return comp
            loc = self.loc(name)
            v = self.read(loc)
            if not v and type(loc) is Global and name not in self.prog.ir.top.locals and loc not in self.prog.shared:
                if name in _BUILTINS:
                    return frozenset({Qual(f"builtins.{name}")}), EMPTY
                if self.prog.ir.star_imports:
                    return self.prog.star_value(name), EMPTY
            if name in self.prog.module_path_attrs:
                v = self._shown_module(loc, v)
            src = self.frame.defs.get(loc)
            if src is None:
                src = self._srcs.get(loc)
                if src is None:
                    src = self._srcs[loc] = frozenset({loc})
            return v, src
        if t is ir.Attr:
            attr = e.attr
            loc = self.attr_loc(e) if self.self_attr(e) is not None else None
            if loc is not None:
                v = self.read(loc)
                if not v and self.cls is not None and self.prog.is_module_class(self.cls) is None:
                    # Set by a base class in another module, as far as we know.
                    v = frozenset({Sym(InstanceRoot(self.prog.class_ref[self.cls.id]), (AttrStep(attr),))})
                if attr in self.prog.module_path_attrs:
                    v = self._shown_module(loc, v)
                return v, frozenset({loc})
            base, src = self.ev(e.value)
            if _cuts_attribute(attr):
                src = EMPTY
            v = attribute(base, attr, self.site(e.node), self.prog.lookup)
            if type(e.value) in (ir.Name, ir.Attr):
                root = self.root_loc(e.value)
                if root is not None:
                    extra = self.read(AttrOf(root, attr))
                    if extra:
                        v = join(v, extra)
            if attr in self.prog.module_path_attrs:
                key = path_key(self.fn, self.family, e)
                if key is not None:
                    v = self._shown_module(key, v)
            return v, src
        if t is ir.Call:
            return self.call(e)
        if t is ir.Subscript:
            base, src = self.ev(e.value)
            key: object = None
            k = e.key
            if k is not None:
                lit = _literal(k)
                if lit is not _NO_LITERAL and isinstance(lit, (str, int)) and not isinstance(lit, bool):
                    key = lit
                else:
                    kv, _ = self.ev(k)
            else:
                for ix in e.index:
                    for part in (ix.value, ix.lower, ix.upper, ix.step):
                        if part is not None:
                            self.ev(part)
            if len(e.index) == 1 and e.index[0].is_slice:
                # A slice of a list is a list like it; of a tensor, a view.
                return base, src
            v = subscript(base, key, self.site(e.node), self.prog.lookup)  # type: ignore[arg-type]
            if ELEMENT in self.prog.module_path_attrs:
                key = path_key(self.fn, self.family, e)
                if key is not None:
                    v = self._shown_module(key, v)
            return v, src
        if t is ir.Const:
            kind = e.kind
            if kind == "number":
                return NUMBER_V, EMPTY
            if kind == "str" or kind == "bytes":
                return STR_V, EMPTY
            if kind == "bool":
                return BOOL_V, EMPTY
            if kind == "none":
                return NONE_V, EMPTY
            return NOTHING, EMPTY
        if t is ir.BinOp:
            a, asrc = self.ev(e.left)
            b, bsrc = self.ev(e.right)
            site = self.site(e.node)
            v = binop(e.op, a, b, site)
            if plain_only(v) or _fresh_without_grad(v, site):
                return v, EMPTY
            if not site.off and e.op in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul"):
                v = self._operator_saves(f"operator.{e.op}", (e.left, e.right), (a, b), v, site)
            return v, asrc | bsrc
        if t is ir.UnaryOp:
            v, src = self.ev(e.operand)
            r = unary(e.op, v, self.site(e.node))
            if e.op == "neg" and not self.frame.grad is GradMode.OFF:
                r = self._operator_saves("operator.neg", (e.operand,), (v,), r, self.site(e.node))
            return r, (EMPTY if e.op == "not" or plain_only(r) else src)
        if t is ir.Compare:
            vals = [self.ev(e.left)[0]] + [self.ev(c)[0] for c in e.comparators]
            return compare(vals), EMPTY
        if t is ir.BoolOp:
            v: Value = NOTHING
            src: frozenset = EMPTY
            for x in e.values:
                xv, xs = self.ev(x)
                v = join(v, xv)
                src = src | xs
            return v, src
        if t is ir.IfExp:
            self.ev(e.test)
            graph_test = _graph_test(e.test)
            a, asrc = self._without_graph(e.body, graph_test, False)
            b, bsrc = self._without_graph(e.orelse, graph_test, True)
            return join_paths(a, b), asrc | bsrc
        if t is ir.Seq:
            return self._sequence(e)
        if t is ir.DictX:
            items = []
            elem: Value = NOTHING
            src = EMPTY
            for k, val in zip(e.keys, e.values):
                vv, vs = self.ev(val)
                src = src | vs
                if k is None:
                    for f in vv:
                        if type(f) is Container:
                            items.extend(f.items)
                            elem = join(elem, f.elem)
                    continue
                lit = _literal(k)
                if lit is not _NO_LITERAL and isinstance(lit, (str, int)) and not isinstance(lit, bool):
                    items = [(kk, x) for kk, x in items if kk != lit]
                    items.append((lit, vv))
                else:
                    self.ev(k)
                    elem = join(elem, vv)
            return container("dict", items, elem), src
        if t is ir.Comp:
            return self.comprehension(e)
        if t is ir.Lambda:
            return frozenset({FunctionObj(self.prog.fn_ref[e.fn.index])}), EMPTY
        if t is ir.FString:
            for x in e.values:
                self.ev(x)
            return STR_V, EMPTY
        if t is ir.Starred:
            return self.ev(e.value)
        if t is ir.Await:
            return self.ev(e.value)
        if t is ir.Yield:
            v, src = self.ev(e.value) if e.value is not None else (NONE_V, EMPTY)
            if e.from_:
                v = iterate(v, self.site(e.node))  # `yield from xs` yields the elements of xs
            self.yields.append((v, self.frame.grad))
            self.returns = join(self.returns, v)
            for x in src:
                self.prog.edge(x, Ret(self.index))
            return NOTHING, EMPTY
        if t is ir.NamedExpr:
            v, src = self.ev(e.value)
            self.bind(self.loc(e.target.id), v, src, e.node, e.value)
            return v, src
        if t is ir.Opaque:
            for p in e.parts:
                self.ev(p)
            return NOTHING, EMPTY
        if t is ir.Evaluated:
            return e.value, e.sources  # type: ignore[return-value]
        return NOTHING, EMPTY

    def _shown_module(self, loc: Loc, v: Value) -> Value:
        """``v`` read at ``loc``: a module as well, when a method only
        modules have is called on ``loc`` (``model.eval()``) and nothing
        known of ``v`` says what else it is (evidence fills in what is
        unknown, it overrides nothing)."""
        if loc not in self.prog.module_paths:
            return v
        for f in v:
            t = type(f)
            if t is Sym:
                continue
            if t is Instance and self.prog.lookup.is_module_class(f.cls) is None:
                continue
            if t is Qual and not lib.is_known_library(f.name):
                continue  # a name of a package nothing is known of (`import model`)
            return v  # a module already, or known to be something else
        return v | _SHOWN_MODULE

    def _without_graph(self, e: ir.Expr, test: tuple[str, bool] | None, orelse: bool) -> tuple[Value, frozenset]:
        """``e``, a branch of ``x if test else y`` where ``test`` tells
        whether a name holds an attached tensor (``v.grad_fn is not
        None``): on the branch where it does not, the name is read without
        graph facts (``v.detach() if v.requires_grad else v``)."""
        if test is None or test[1] is orelse:
            return self.ev(e)
        name = test[0]
        comp = self.comp.get(name)
        loc = self.loc(name)
        saved = comp if comp is not None else self.frame.env.get(loc)
        if saved is None:
            return self.ev(e)
        if comp is not None:
            self.comp[name] = (_no_graph(comp[0]), comp[1])
        else:
            self.frame.env[loc] = _no_graph(saved)
        try:
            return self.ev(e)
        finally:
            if comp is not None:
                self.comp[name] = comp
            else:
                self.frame.env[loc] = saved

    def _sequence(self, e: ir.Seq) -> tuple[Value, frozenset]:
        items = []
        elem: Value = NOTHING
        src: frozenset = EMPTY
        known = True
        for i, x in enumerate(e.elts):
            if type(x) is ir.Starred:
                v, s = self.ev(x.value)
                elem = join(elem, iterate(v, self.site(x.node)))
                known = False
            else:
                v, s = self.ev(x)
                items.append((i, v))
            src = src | s
        kind = e.kind
        if kind == "set" or not known:
            for _, v in items:
                elem = join(elem, v)
            items = []
        return container(kind, items, elem), src

    def comprehension(self, e: ir.Comp) -> tuple[Value, frozenset]:
        saved = dict(self.comp)
        src: frozenset = EMPTY
        lf = _comp_facts(self, e)
        for g in e.generators:
            # What it iterates over flows into the result through the
            # targets the elements read.
            it, isrc = self.ev(g.iter)
            lf.targets |= set(isrc)
            self._comp_bind(g.target, iterate(it, self.site(e.node)), isrc)
            for c in g.ifs:
                self.ev(c)
        ctx = _LoopContext(lf)
        self.loops.append(ctx)
        if e.kind == "dict":
            self.ev(e.key)
        v, vs = self.ev(e.elt)
        self.loops.pop()
        self.comp = saved
        self.last_comp = (lf.loop, v, vs, e.elt.node)
        src = src | vs
        if e.kind == "dict":
            return container("dict", elem=v), src
        return container("list" if e.kind != "set" else "set", elem=v), src

    def _comp_bind(self, target: ir.Expr, v: Value, src: frozenset) -> None:
        if type(target) is ir.Name:
            self.comp[target.id] = (v, src)
        elif type(target) is ir.Seq:
            parts = unpack(v, len(target.elts), self.site(None))
            for i, el in enumerate(target.elts):
                self._comp_bind(el.value if type(el) is ir.Starred else el, parts[i] if parts is not None else iterate(v, self.site(None)), src)

    # -- calls ------------------------------------------------------------------------

    def call(self, c: ir.Call) -> tuple[Value, frozenset]:
        prog = self.prog
        func = c.func
        args: list[Value] = []
        arg_src: list[frozenset] = []
        kwargs: list[tuple[str, Value]] = []
        kw_src: dict[str, frozenset] = {}
        literals: dict = {}
        src: frozenset = EMPTY
        star = False
        for a in c.args:
            v, s = self.ev(a.value)
            src = src | s
            if a.star:
                star = True
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
        cargs = CallArgs(tuple(args), tuple(kwargs), literals, star)
        site = self.site(c.node)
        method: str | None = None
        recv: Value | None = None
        rsrc: frozenset = EMPTY
        if type(func) is ir.Attr:
            method = func.attr
            if type(func.value) is ir.Call and type(func.value.func) is ir.Name and func.value.func.id == "super" and self.cls is not None:
                recv = self.read(self.loc(self.self_name)) if self.self_name else NOTHING
                outcome = self._super_call(method, recv, cargs, site)
            elif self.self_attr(func) is not None and self.cls is not None and prog.find_method_ir(self.cls, method) is None and not self._subclass_method(method):
                # `self.net(x)`: calling what the attribute holds (a module).
                callee, rsrc = self.ev(func)
                method = None
                outcome = call_value(callee, cargs, site, prog.lookup)
                self._call_effects(c, method, None, callee, cargs, outcome, src | rsrc)
                return self._call_result(c, func, None, callee, args, arg_src, kw_src, cargs, outcome, src, rsrc, site)
            else:
                recv, rsrc = self.ev(func.value)
                outcome = call_method(recv, method, cargs, site, prog.lookup)
            callee = recv
        else:
            callee, rsrc = self.ev(func)
            outcome = call_value(callee, cargs, site, prog.lookup)
        self._call_effects(c, method, recv, callee, cargs, outcome, src | rsrc, rsrc)
        return self._call_result(c, func, method, callee, args, arg_src, kw_src, cargs, outcome, src, rsrc, site, recv)

    def _call_result(self, c: ir.Call, func: ir.Expr, method: str | None, callee: Value, args: list, arg_src: list, kw_src: dict,
                     cargs: CallArgs, outcome: Outcome, src: frozenset, rsrc: frozenset, site: Site, recv: Value | None = None) -> tuple[Value, frozenset]:
        prog = self.prog
        value = outcome.value
        # A later .backward() proved this call builds a graph; or the same
        # callee did so elsewhere in the file and gets an attached input here.
        if not site.off and not plain_only(value) and not any(type(f) is Graph or type(f) is Container for f in value):
            if c.node in prog.proven:
                g = Graph(c.node, self.index, "backward")
                value = value | {g}
                if c.node in prog.proven_values:
                    value = value | container("dict", elem=frozenset({g}))
                self._mark_data(src | rsrc)
            elif method is None and self._proven_callee(func) and any(type(f) is Graph and f.how != "leaf" for a in args for f in a):
                value = value | {Graph(c.node, self.index, "backward")}
        elif not site.off and c.node in prog.proven and any(type(f) is Container for f in value) and not attached(value):
            # A tuple a backward proved (`loss, stats = step(b)`): each item
            # may be the attached one (a binding keeps it where it was proven).
            value = _with_graph(value, Graph(c.node, self.index, "backward"), None)
            self._mark_data(src | rsrc)
        paths = prog.proven_keys.get(c.node)
        if paths and not site.off:
            value = _with_graph(value, Graph(c.node, self.index, "backward"), paths)
        module_call = self._is_module_call(callee, method)
        if module_call:
            self._mark_data(src)
        # What flows out: a value computed from the inputs carries them (an
        # in-file function's result comes from its return, its arguments
        # flow into its parameters); numbers, strings and cut tensors carry
        # nothing.
        if plain_only(value) or (method is not None and _cuts_method(method)) or _fresh_without_grad(value, site):
            # (`xs.append(x)` gives None: what it stores stays in `xs`.)
            out_src = EMPTY
        else:
            out_src = src | rsrc
            called = [prog.fn_by_qualname.get(e.ref.qualname) for e in outcome.effects if type(e) is CalledFunction and e.ref.file == prog.file]
            called = [f for f in called if f is not None]
            if called and not module_call:
                out_src = rsrc | {Ret(f.index) for f in called}
            if module_call:
                out_src = out_src | {Origin(c.node)}
            for f in called:
                offset = 1 if method is not None and f.cls is not None and not is_static(f) else 0
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
            unknown = not outcome.value and not outcome.effects
            if (unknown or any(type(e) is SymCall for e in outcome.effects)) and not self._inert(callee, method):
                for x in src:
                    prog.edge(x, ESCAPE)
        if prog.listening["call"]:
            e = CallEvent(self.point(c.node), c, callee, recv, method, tuple(args), outcome, src | rsrc, src, self.statement_call is c)
            for o in prog.listening["call"]:
                o.call(self, e)
        return value, out_src

    def _element_key(self, e: ir.Expr) -> "_Key | None":
        """``x["loss"]`` / ``xs[-1]`` of a name: that element, for proofs."""
        if type(e) is not ir.Subscript or type(e.value) is not ir.Name or e.value.id in self.comp:
            return None
        key = _literal(e.key) if e.key is not None else _NO_LITERAL
        if key is _NO_LITERAL or not isinstance(key, (str, int)) or isinstance(key, bool):
            return None
        return _Key(self.loc(e.value.id), key)

    def _subclass_method(self, name: str) -> bool:
        """A subclass of this method's class (in this module) defines ``name``."""
        cls = self.cls
        return cls is not None and bool(self.prog.class_summary(cls).overrides.get(name))

    def _inert(self, callee: Value, method: str | None) -> bool:
        qual = call_qual(method, callee if method is not None else None, callee)
        if qual is not None and qual.startswith("builtins."):
            qual = qual[9:]
        return lib.is_inert_call(qual, method)

    def _proven_callee(self, func: ir.Expr) -> bool:
        self.prog.depend(("proven",))
        return ir.dotted(func) in self.prog.proven_callees

    def _super_call(self, method: str, recv: Value, cargs: CallArgs, site: Site) -> Outcome:
        """``super().method(...)``: the method of a base, with ``self``."""
        cls = self.cls
        assert cls is not None
        for b in self.prog.class_bases.get(cls.id, ()):
            for f in b:
                if type(f) is ClassObj:
                    ref = find_method(f.cls, method, self.prog.lookup)
                    if ref is not None:
                        summary = self.prog.lookup.function(ref)
                        if summary is not None:
                            return apply(summary, CallArgs((recv,) + cargs.args, cargs.kwargs, {}, cargs.star), site, self.prog.lookup)
                elif type(f) is Sym:
                    callee = f.then(AttrStep(method))
                    if callee is not None:
                        out = call_value(frozenset({callee}), CallArgs((recv,) + cargs.args, cargs.kwargs), site, self.prog.lookup)
                        if method == "forward" and self.prog.is_module_class(cls) is not False and not site.off:
                            # A module's forward of a base not seen: its output is this call's graph.
                            out.value = out.value | {Graph(site.node, self.index, "call")}
                        return out
                elif type(f) is Qual and lib.is_base_module_class(f.name) and method == "forward":
                    return Outcome(frozenset({Graph(site.node, self.index, "call")}))
        return Outcome()

    def _is_module_call(self, callee: Value | None, method: str | None) -> bool:
        if callee is None:
            return False
        if method is not None and method not in ("forward", "__call__"):
            return False
        for f in callee:
            t = type(f)
            if t is Module or t is Sym:
                return True
            if t is Instance and self.prog.lookup.is_module_class(f.cls) is not False:
                return True
        return False

    def _mark_data(self, sources: frozenset) -> None:
        """A loop whose items are fed to a module (or a proven helper) is a
        loop over data."""
        for lc in self.loops:
            lf = lc.facts
            if not lf.data and not lc.items.isdisjoint(sources):
                lf.data = True

    def _call_effects(
        self, c: ir.Call, method: str | None, recv: Value | None, callee: Value, cargs: CallArgs, outcome: Outcome, sources: frozenset, recv_src: frozenset = EMPTY
    ) -> None:
        prog = self.prog
        func = c.func
        recv_expr = func.value if type(func) is ir.Attr else None
        qual = call_qual(method, recv, callee)
        # Backward: a sink for everything it reads.
        if (method is not None and api.backpropagates(method)) or (qual in lib.BACKWARD_FUNCTIONS):
            # `losses[-1].backward()`: the backward of one element of what
            # `losses` holds, not of the others.
            element = recv_src if type(recv_expr) is ir.Subscript and recv_expr.key is not None else EMPTY
            self.sink(sources - element, element, self._element_key(recv_expr) if element else None)
        if (method == "eval" or cargs.literal(0) is False or cargs.literal("mode") is False) and recv is not None and members.switches_mode(recv, method, len(c.args), prog.lookup):
            if self.index not in prog.calls_eval:
                prog.calls_eval.add(self.index)
                prog.bump(("stepping",))
        if method == "requires_grad_" and recv_expr is not None and (cargs.literal(0) is False or cargs.literal("requires_grad") is False):
            self._freeze(recv_expr)
        elif method == "requires_grad_" and any(type(f) is Leaf and f.node is c.node for f in outcome.value):
            self.forced = True  # a tensor made to require grad here: the code asks for a graph
        # Container stores: `c.append(v)`, `d.setdefault(k, v)`, `s.add(v)`.
        if method is not None and recv_expr is not None and recv is not None:
            row = members.stores(recv, method)
            idx = row.stores if row is not None else None
            if row is not None and idx is not None and len(c.args) > idx and not c.args[idx].star and c.args[idx].keyword is None:
                self._store_call(c, row, recv_expr, idx)
            if api.member(api.LIST, method).clears:
                root = self.root_loc(recv_expr)
                if root is not None:
                    self.mark_rebind(root)
        for eff in outcome.effects:
            t = type(eff)
            if t is WritesArg:
                target = recv_expr if eff.index < 0 else _positional(c, eff.index)
                if target is not None and (eff.index >= 0 or method is None or lib.writes_in_place(method)):
                    root, path, via = self.view_root(target)
                    if root is not None:
                        self.mutate(root, path, c.node, eff.how, via, asked=eff.node)
            elif t is SavesArg:
                target = recv_expr if eff.index < 0 else _positional(c, eff.index)
                if target is not None:
                    self.mark_saved(target, eff.fact)
            elif t is Keeps:
                self._helper_keeps(c, method, recv_expr, eff, cargs)
            elif t is SymCall:
                self._sym_call(c, method, recv_expr, eff)
            elif t is Steps:
                self.mark_steps()
            elif t is CalledFunction:
                self._call_site(c.node, eff, callee if method is None else recv, cargs, method is not None)
            elif t is StaticGradMemory:
                prog.static_grad_memory = True
        out = c.keyword("out")
        if out is not None and qual is not None and qual.startswith("torch."):
            root, path, via = self.view_root(out)
            if root is not None:
                self.mutate(root, path, c.node, "out=", via)
        self._accumulated_in_place(c, method, recv, recv_expr, cargs, sources)
        # Calling an in-file module saves what its forward saves of its own
        # attributes (`critic.w1` after `critic(x)`), until backward.
        if method is None and type(func) in (ir.Name, ir.Attr) and not self.frame.grad is GradMode.OFF:
            self._forward_saved_attrs(c, callee)

    def _accumulated_in_place(self, c: ir.Call, method: str | None, recv: Value | None, recv_expr: ir.Expr | None, cargs: CallArgs, sources: frozenset) -> None:
        """``total.add_(loss)`` accumulates into ``total`` as ``total +=
        loss`` does. (``torch.add(total, loss, out=total)`` is not one:
        with an attached operand torch raises, `out=` being outside
        autograd.)"""
        if method is None or not api.member(api.TENSOR, method).accumulates or type(recv_expr) not in (ir.Name, ir.Attr) or not cargs.args or c.has_star:
            return
        # A local tensor outside any loop (a residual `out.add_(x)` in a
        # forward) outlives no iteration: not an accumulation to follow.
        if not self.loops and type(recv_expr) is ir.Name and type(self.loc(recv_expr.id)) is Local:
            return
        pos = c.positional()
        if not pos:
            return
        if recv is not None and tensorish(recv):
            self.accumulate(recv_expr, op(cargs.args[0], self.site(c.node)), sources, c.node, pos[0].node)  # type: ignore[arg-type]

    def _freeze(self, e: ir.Expr) -> None:
        """``model.requires_grad_(False)``: its parameters no longer require
        grad; calling it builds no graph of its own."""
        loc = self.root_loc(e) if type(e) in (ir.Name, ir.Attr) else None
        if loc is None:
            return
        old = self.read(loc)
        if any(type(f) is Module for f in old):
            self.write(loc, frozenset(dataclasses.replace(f, frozen=True) if type(f) is Module else f for f in old))

    def _store_call(self, c: ir.Call, row: Member, recv_expr: ir.Expr, idx: int) -> None:
        method = row.name
        container_loc = self.root_loc(recv_expr)
        if container_loc is None:
            return
        value_expr = c.args[idx].value
        v, src = self.ev(value_expr)
        keyed = row.owner == api.DICT
        # `history.update(losses)` with the same keys every time replaces
        # one set of slots (the last iteration's values), as `d["k"] = v` does.
        dicts = [f for f in v if type(f) is Container]
        fixed_keys = keyed and row.spread and bool(dicts) and all(f.kind == "dict" and f.items and not f.elem for f in dicts)
        if row.spread:
            v = _dict_values(v) if keyed else iterate(v, self.site(c.node))
        # Keep the container's element facts (when the receiver is the
        # container itself, not an element of it: `d[k].append(v)`).
        if type(recv_expr) is ir.Name or self.self_attr(recv_expr) is not None:
            old = self.read(container_loc)
            if any(type(f) is Container for f in old):
                self.write(container_loc, frozenset(Container(f.kind, f.items, join(f.elem, v)) if type(f) is Container else f for f in old), strong=type(container_loc) is Local)
            elif type(container_loc) is not Local:
                self.write(container_loc, container("list", elem=v), strong=False)
        overwrites = fixed_keys
        if keyed and not row.spread:
            # `d.setdefault(k, v)`: one slot per literal key.
            key = _literal(c.args[0].value) if c.args else _NO_LITERAL
            overwrites = key is not _NO_LITERAL
        for x in src:
            self.prog.edge(x, container_loc)
        if not row.spread:
            self._stored(container_loc, value_expr)
        shown = value_expr
        if keyed and row.spread and type(value_expr) is ir.DictX and len(value_expr.values) == 1 and value_expr.keys[0] is not None:
            shown = value_expr.values[0]  # `history.update({f"loss/{step}": loss})`: the message names `loss`
        e = Store(self.point(c.node), container_loc, ir.dotted(_strip_subscripts(recv_expr)) or "?", v, src, shown.node, method, overwrites)
        for o in self.prog.listening["store"]:
            o.store(self, e)
        if type(container_loc) is not Local or container_loc.fn != self.index or _root_name(recv_expr) in self.fn.param_names:
            self._keeps_param(v, "store", ir.dotted(_strip_subscripts(recv_expr)) or "?", self._param_index(recv_expr))

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
            container_loc = self.root_loc(recv_expr) if recv_expr is not None else None
            text = ir.dotted(_strip_subscripts(recv_expr)) if recv_expr is not None else None
        elif r.into_param is not None:
            j = r.into_param - 1 if bound else r.into_param
            target = _positional(c, j)
            container_loc = self.root_loc(target) if target is not None else None
            text = ir.dotted(target) if target is not None else None
        else:
            container_loc, text = Global(f"<{eff.via.qualname}>"), eff.via.qualname
        e = Keep(self.point(c.node), container_loc, text or eff.via.qualname, kept, value_expr.node if value_expr is not None else c.node, r.kind, eff.via.qualname.rsplit(".", 1)[-1] if bound else eff.via.qualname)
        for o in self.prog.listening["keep"]:
            o.keep(self, e)
        # A helper of ours that passes its parameter on to one that keeps it.
        if r.into_param == 0 and bound and recv_expr is not None:
            self._keeps_param(kept, r.kind, text or "?", self._param_index(recv_expr))

    def _sym_call(self, c: ir.Call, method: str | None, recv_expr: ir.Expr | None, eff: SymCall) -> None:
        """A call on a parameter or an imported object: part of the summary,
        and, when it may keep an argument, an event decided later."""
        callee = eff.callee
        relevant = [f for f in callee if type(f) is Sym and ((type(f.root) is ParamRoot and f.root.fn == self.index) or type(f.root) in (ImportRoot, InstanceRoot))]
        if relevant:
            ce = CallEffect(frozenset(relevant), eff.args.args, eff.args.kwargs)
            if ce not in self.effects and len(self.effects) < 16:
                self.effects.append(ce)
        if not eff.nested:
            self.prog.add_call_site(c.node, CallSite(self.index, None, callee, self.frame.grad, self.conds, eff.args.args, eff.args.kwargs, False))
        if method is None or recv_expr is None or eff.nested:
            return
        container_loc = self.root_loc(recv_expr)
        for i, a in enumerate(eff.args.args):
            if not a or plain_only(a):
                continue
            value_expr = _positional(c, i)
            e = Keep(self.point(c.node), container_loc, ir.dotted(_strip_subscripts(recv_expr)) or "?", a, value_expr.node if value_expr is not None else c.node, "", method, (callee, eff.args, i))
            for o in self.prog.listening["keep"]:
                o.keep(self, e)

    def _call_site(self, node: object, eff: CalledFunction, target: Value | None, cargs: CallArgs, bound: bool) -> None:
        prog = self.prog
        callee = prog.fn_by_qualname.get(eff.ref.qualname) if eff.ref.file == prog.file else None
        if callee is not None and callee.index in prog.summaries and prog.summaries[callee.index].steps:
            self.mark_steps()
        args = cargs.args
        if bound:
            recv = next((f for f in (target or ()) if type(f) is Instance), None)
            args = (frozenset({recv}) if recv is not None else NOTHING,) + args
        prog.add_call_site(node, CallSite(self.index, callee.index if callee is not None else None, frozenset({FunctionObj(eff.ref)}), eff.grad, self.conds, args, cargs.kwargs, bound))

    def _forward_saved_attrs(self, c: ir.Call, callee: Value) -> None:
        root = self.root_loc(c.func) if type(c.func) in (ir.Name, ir.Attr) else None
        if root is None:
            return
        for f in callee:
            if type(f) is Instance and f.cls.file == self.prog.file:
                cls = self.prog.class_by_qualname.get(f.cls.qualname)
                if cls is None:
                    continue
                fam = self.prog.family_of[cls.id]
                for attr in self.prog.forward_saves.get(fam, ()):
                    loc = AttrOf(root, attr)
                    self.frame.env[loc] = join(self.frame.env.get(loc, NOTHING), frozenset({Saved(c.node, f"{cls.name}.forward", self.index)}))

    # -- effects ------------------------------------------------------------------

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
        self.evidence_locs |= sources
        if key is not None:
            self.evidence_locs.add(key)
        else:
            self.evidence_locs |= elements
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
            lc.facts.steps = True

    def mutate(self, root: Loc, path: str, node: object, how: str, via: str, rhs: Value = NOTHING, asked: object = None) -> None:
        if not self.prog.listening["mutate"]:
            return
        facts = self._path_facts(root, path)
        e = Mutation(self.point(node), path, root, facts, how, via, self.in_forward, rhs, asked)
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
            # A view held in a name (`tok = x[:, 0]`): saving it saves the
            # storage of the tensor it views (one version counter).
            self.frame.env[base] = join(self.read(base), frozenset({fact}))
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
            elif t is ir.Call and type(e.func) is ir.Attr and lib.is_view_method(e.func.attr):
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

    # -- summary and proofs ------------------------------------------------------------

    def summary(self) -> FunctionSummary:
        fn = self.fn
        kind = "function"
        if fn.cls is not None:
            kind = "staticmethod" if is_static(fn) else "classmethod" if _is_classmethod(fn) else "method"
            if any(ir.dotted(d) in ("property", "functools.cached_property", "cached_property") for d in fn.decorators):
                kind = "property"
        context = None
        if fn.is_generator and self.yields and any(ir.dotted(d) and ir.dotted(d).split(".")[-1] == "contextmanager" for d in fn.decorators):
            modes = {g for _, g in self.yields}
            if len(modes) == 1:
                context = modes.pop()
        if fn.name == "__enter__" and self.frame.reachable is not None:
            if self.frame.grad is not GradMode.ON or self.entry is not None:
                context = self.frame.grad if self.frame.grad is not GradMode.ON else None
        returns = self.returns
        if fn.is_generator:
            returns = container("list", elem=returns)
        return FunctionSummary(
            self.prog.fn_ref[fn.index],
            fn.index,
            tuple(fn.param_names),
            returns,
            tuple(self.keeps),
            tuple(self.effects),
            self.steps or fn.index in self.prog.stepping,
            frozenset(),
            self.entry,
            context,
            None,
            kind,
            fn.index in self.prog.calls_eval,
        )

    def prove(self) -> bool:
        """Names fed to backward hold graphs; so do the values they were
        read from, and the calls that made them. True when this found a
        call of this function proved anew."""
        prog = self.prog
        # A script's own names (module level) are its locals.
        mine = Global if self.fn.is_module else Local
        def own(k: object) -> bool:
            return (type(k) is mine and (mine is Global or k.fn == self.index)) or type(k) is ClassAttr  # type: ignore[attr-defined]

        seen = {k for k in self.evidence_locs if own(k.loc if type(k) is _Key else base_loc(k))}
        if not seen:
            return False
        new = False
        changed = True
        while changed:
            changed = False
            for loc, access, calls, element, position, flow in reversed(self.binds):
                keys = {k.key for k in seen if type(k) is _Key and k.loc == loc}
                if flow not in seen and loc not in seen and _ValuesOf(loc) not in seen and not (element and keys):
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
                single = len(access) + len(calls) == 1
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
        return new


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


def _graph_test(test: ir.Expr) -> tuple[str, bool] | None:
    """``(name, negated)`` when ``test`` holds exactly when ``name`` is a
    tensor attached to a graph (``v.grad_fn is not None``, ``v.requires_grad``,
    with type tests on ``v`` beside them: ``torch.is_tensor(v) and ...``);
    ``negated``: when it does not (``v.grad_fn is None``)."""
    if type(test) is ir.UnaryOp and test.op == "not":
        inner = _graph_test(test.operand)
        return (inner[0], not inner[1]) if inner is not None else None
    if type(test) is ir.Attr and test.attr == "requires_grad" and type(test.value) is ir.Name:
        return test.value.id, False
    if type(test) is ir.Compare and len(test.ops) == 1 and test.ops[0] in ("is", "is not") and type(test.comparators[0]) is ir.Const and test.comparators[0].kind == "none":
        left = test.left
        if type(left) is ir.Attr and left.attr == "grad_fn" and type(left.value) is ir.Name:
            return left.value.id, test.ops[0] == "is"
        return None
    if type(test) is ir.BoolOp:
        # Each part a graph test or a type test on the same name, none
        # negated: false together (either way `and`/`or` reads) only where
        # the name holds no graph.
        tests = [_graph_test(v) for v in test.values]
        names = {t[0] for t in tests if t is not None}
        if len(names) != 1 or any(t is not None and t[1] for t in tests):
            return None
        name = names.pop()
        if all(t is not None or _tensor_type_test(v, name) for t, v in zip(tests, test.values)):
            return name, False
    return None


def _tensor_type_test(e: ir.Expr, name: str) -> bool:
    """``torch.is_tensor(name)`` / ``isinstance(name, ...)``."""
    if type(e) is not ir.Call or not e.args or type(e.args[0].value) is not ir.Name or e.args[0].value.id != name:
        return False
    func = ir.dotted(e.func)
    return func is not None and func.rsplit(".", 1)[-1] in ("is_tensor", "isinstance")


def _no_graph(v: Value) -> Value:
    return frozenset(TENSOR if type(f) in (Graph, Leaf, HookArg) else f for f in v)


def _fresh_without_grad(v: Value, site: Site) -> bool:
    """A tensor computed under ``no_grad``: nothing it was computed from
    can reach autograd through it."""
    if not site.off or not tensorish(v):
        return False
    for f in v:
        if type(f) is Container:
            return False
    return True


def _tensor_attr(name: str) -> Gives:
    return api.member(api.TENSOR, name, attribute=True).gives


def _cuts_attribute(name: str) -> bool:
    """``x.name`` of a tensor carries nothing of ``x`` onward (its shape, its
    dtype, its gradient). (``.data`` still names the tensor's storage.)"""
    return api.member(api.TENSOR, name, attribute=True).cuts and _tensor_attr(name) is not Gives.DETACHED


def _cuts_method(name: str) -> bool:
    """What ``x.name(...)`` gives carries nothing of ``x`` onward: a number,
    an integer tensor, a detached copy (``.item()``, ``.argmax()``,
    ``.detach()``), or nothing at all (``xs.append(v)`` gives None: what it
    stores stays in ``xs``)."""
    if api.independent(name) is not None:
        return True
    row = api.member(api.LIST, name)
    return row.stores is not None or row.clears


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
        if _inert(e.right, run) or (e.op == "truediv" and _stored_count(e.right, run)):
            return _proof_shape(e.left, run)
        if _inert(e.left, run):
            return _proof_shape(e.right, run)
        # `total = recon + kl + aux` (terms unpacked from a model's output,
        # each summed into the loss): every term is one of the loss's,
        # attached. Only plain sums of names: `ce + w * reg` proves no `w`.
        terms = _sum_terms(e)
        if terms is not None and len(terms) >= 2 and not any(n.id in run.comp for n in terms):
            return tuple(d for n in terms for d in run.frame.defs.get(run.loc(n.id), (run.loc(n.id),))), ()
    return (), ()


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


def _unscaled(e: ir.Expr) -> ir.Expr:
    """``t`` of ``0.9 * t`` or ``t * 0.9`` (a constant factor), else ``e``."""
    if type(e) is ir.BinOp and e.op == "mul":
        if type(e.left) is ir.Const:
            return e.right
        if type(e.right) is ir.Const:
            return e.left
    return e


def _plain_factor(e: ir.Expr) -> bool:
    """A factor read without running code: a constant, a name, an
    attribute, arithmetic of those (``1.0 - self.alpha``)."""
    t = type(e)
    if t is ir.Const or t is ir.Name:
        return True
    if t is ir.Attr:
        return _plain_factor(e.value)
    if t is ir.BinOp:
        return _plain_factor(e.left) and _plain_factor(e.right)
    if t is ir.UnaryOp:
        return _plain_factor(e.operand)
    return False


def _sum_terms(e: ir.Expr) -> "list[ir.Name] | None":
    """The names of ``a + b - c`` (None when it is not such a sum)."""
    if type(e) is ir.Name:
        return [e]
    if type(e) is ir.BinOp and e.op in ("add", "sub"):
        left, right = _sum_terms(e.left), _sum_terms(e.right)
        if left is not None and right is not None:
            return left + right
    return None


def _layers(v: Value) -> bool:
    """Iterating ``v`` goes over modules: a ModuleList or Sequential, or
    a list (or ``enumerate``/``zip``) of modules."""
    if not v:
        return False
    for f in v:
        t = type(f)
        if t is Module:
            continue
        if t is Container and f.kind in ("list", "tuple"):
            elems = f.all_values()
            if elems and all(type(e) is Module or (type(e) is Container and e.kind == "tuple" and any(type(x) is Module for x in e.all_values())) for e in elems):
                continue
        return False
    return True


def _inert(e: ir.Expr, run: Run) -> bool:
    """A constant, or a name whose value is known and carries no graph
    (a count, a token total, a detached tensor)."""
    if _literal(e) is not _NO_LITERAL:
        return True  # `2`, `-1`
    if type(e) is ir.Name and e.id not in run.comp:
        v = run.read(run.loc(e.id))
        return bool(v) and not any(type(f) in (Graph, Sym, Leaf, HookArg) for f in v)
    return False


def _stored_count(e: ir.Expr, run: Run) -> bool:
    """``self.accum_steps`` as a divisor: an attribute of ``self`` that this
    file never shows holding a tensor. A loss is divided by stored counts
    (accumulation steps, world size); a learnable divisor would be a
    parameter the class assigns, seen as such."""
    if type(e) is not ir.Attr or run.self_attr(e) is None:
        return False
    v = run.read(run.attr_loc(e))
    return not any(type(f) in (Graph, Leaf, HookArg) or f is TENSOR for f in v)


def _freezes_parameters(s: ir.For | ir.While) -> ir.Expr | None:
    """``for p in model.parameters(): p.requires_grad = False`` (or
    ``p.requires_grad_(False)``): the module whose parameters the loop
    freezes, all of them."""
    if type(s) is not ir.For or type(s.iter) is not ir.Call or type(s.iter.func) is not ir.Attr:
        return None
    if s.iter.func.attr not in ("parameters", "named_parameters") or s.iter.args:
        return None
    names = _names(s.target)
    if not names:
        return None
    p = names[-1]
    for stmt in s.body:
        if type(stmt) is ir.Assign and len(stmt.targets) == 1:
            t = stmt.targets[0]
            if type(t) is ir.Attr and t.attr == "requires_grad" and type(t.value) is ir.Name and t.value.id == p and _literal(stmt.value) is False:
                return s.iter.func.value
        if type(stmt) is ir.ExprStmt and type(stmt.value) is ir.Call and type(stmt.value.func) is ir.Attr:
            call = stmt.value
            if call.func.attr == "requires_grad_" and type(call.func.value) is ir.Name and call.func.value.id == p and call.args and _literal(call.args[0].value) is False:
                return s.iter.func.value
    return None


def _decorator_modes(v: Value) -> set[GradMode]:
    """The grad modes a decorator sets: ``@torch.no_grad()`` and the bare
    ``@torch.no_grad``."""
    out = {f.mode for f in v if type(f) is GradContext and f.mode is not None}
    for f in v:
        if type(f) is Qual:
            mode = lib.grad_context_mode(f.name, None)
            if mode in ("on", "off"):
                out.add(GradMode(mode))
    return out


def _same_on(a: Frame, b: Frame, locs: set) -> bool:
    if a.reachable != b.reachable or a.grad is not b.grad or a.observed != b.observed:
        return False
    ea, eb, da, db = a.env, b.env, a.defs, b.defs
    return all(ea.get(k) == eb.get(k) and da.get(k) == db.get(k) for k in locs)


def _names(target: ir.Expr) -> list[str]:
    t = type(target)
    if t is ir.Name:
        return [target.id]
    if t is ir.Seq:
        out: list[str] = []
        for el in target.elts:
            out.extend(_names(el))
        return out
    if t is ir.Starred:
        return _names(target.value)
    return []


def _iter_text(e: ir.Expr) -> str | None:
    """The data a loop walks: ``val_loader`` in ``for b in
    tqdm(enumerate(self.val_loader))``; ``d.items`` for ``d.items()``."""
    for _ in range(4):
        if type(e) is ir.Call:
            if type(e.func) is ir.Attr and e.func.attr in ("items", "keys", "values"):
                base = ir.dotted(e.func.value)
                return f"{base}.{e.func.attr}" if base else f".{e.func.attr}"
            args = e.positional()
            if not args:
                break
            e = args[0]
        else:
            break
    d = ir.dotted(e)
    return d.rsplit(".", 1)[-1] if d else None


def _strip_subscripts(e: ir.Expr) -> ir.Expr:
    while True:
        if type(e) is ir.Subscript:
            e = e.value
        elif type(e) is ir.Call and type(e.func) is ir.Attr:
            e = e.func.value
        else:
            return e


def _root_name(e: ir.Expr | None) -> str | None:
    while e is not None:
        t = type(e)
        if t is ir.Name:
            return e.id
        if t is ir.Attr or t is ir.Subscript:
            e = e.value
        elif t is ir.Call and type(e.func) is ir.Attr:
            e = e.func.value
        else:
            return None
    return None


def _positional(c: ir.Call, i: int) -> ir.Expr | None:
    args = c.positional()
    return args[i] if 0 <= i < len(args) else None


def _tensor_index(sub: ir.Subscript) -> bool:
    """``x[:, 0]``, ``x[mask > 0]``, ``x[..., None]`` index a tensor;
    ``x[i]`` may just as well pick an element of a list or a dict."""
    if len(sub.index) > 1:
        return True
    ix = sub.index[0]
    if ix.is_slice:
        return True
    v = ix.value
    if type(v) is ir.UnaryOp:
        return v.op == "invert"  # `x[~mask]`; `xs[-1]` is an element
    return type(v) is ir.Compare or (type(v) is ir.Const and v.kind in ("ellipsis", "none"))


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


def _dict_values(v: Value) -> Value:
    out: Value = NOTHING
    for f in v:
        if type(f) is Container:
            out = join(out, f.all_values())
        elif type(f) is not Plain:
            out = join(out, frozenset({f}))
    return out


def _class_level_names(cls: ir.Class) -> set[str]:
    names: set[str] = set()
    for s in cls.body:
        if type(s) is ir.Assign:
            for t in s.targets:
                names.update(_names(t))
        elif type(s) is ir.ClassDef:
            names.add(s.cls.name)
    return names


def _attr_chain(text: str) -> ir.Expr:
    parts = text.split(".")
    e: ir.Expr = ir.Name(parts[0], None)
    for p in parts[1:]:
        e = ir.Attr(e, p, None)
    return e


def _comp_facts(run: Run, e: ir.Comp) -> LoopFacts:
    """Comprehensions are loops too (a store over a loop of batches)."""
    prog = run.prog
    key = prog.comp_loops.get(id(e.node))
    if key is None:
        key = prog.comp_loops[id(e.node)] = ir.Loop(e.node)
    lf = prog.loop_facts.get(key)
    if lf is None:
        lf = prog.loop_facts[key] = LoopFacts(key, run.fn, comprehension=True)
    lf.branch = run.branch
    return lf
