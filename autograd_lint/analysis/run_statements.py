"""How a run executes statements: control flow (branches, ``try``,
``match``), definitions, expression statements, isinstance narrowing, loops
to a fixpoint, ``with`` blocks and their grad modes. The ``StatementsMixin``
part of ``Run``, with the helpers only it uses."""

from __future__ import annotations

from autograd_lint.analysis import ir
from autograd_lint.analysis import torch_api as lib
from autograd_lint.analysis.resolve import GradNotOff
from autograd_lint.analysis.state import Frame, Local, Loc, Ret, join_frames
from autograd_lint.analysis.transfer import iterate
from autograd_lint.analysis.canonical import sorted_canonically
from autograd_lint.analysis.joins import join
from autograd_lint.analysis.values import (
    NONE,
    NONE_V,
    NOTHING,
    ClassObj,
    Container,
    FunctionObj,
    GradContext,
    GradMode,
    Instance,
    Module,
    Qual,
    TENSOR_FACTS,
    TENSOR_V,
    Sym,
    Value,
)
from autograd_lint.analysis.records import EMPTY, LoopFacts, _LoopContext
from autograd_lint.analysis.syntax_facts import _literal
from autograd_lint.analysis.value_facts import _decorator_modes


LOOP_ITERATIONS = 2


class StatementsMixin:
    """Statements, loops and ``with`` blocks of ``Run`` (run.py)."""

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
            narrowing = self._isinstance(s.test) or self._none_test(s.test)
            export = self._export_only(s.test)
            before = self.frame
            self.branch += 1
            self.guards.append(s.test)
            self.sides.append(True)
            self.frame = before.fork()
            if narrowing is not None:
                self._narrow(*narrowing, True)
            self._branch(s.body, export is True)
            after_body = self.frame
            self.frame = before.fork()
            self.sides[-1] = False
            if narrowing is not None:
                self._narrow(*narrowing, False)
            self._branch(s.orelse, export is False)
            self.guards.pop()
            self.sides.pop()
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
            self.bind_import(s)
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

    def bind_import(self, s: ir.Import) -> None:
        for name in s.names:
            self.write(self.loc(name.local), self.prog.import_value(name))

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
        for dv in reversed(values):  # (innermost first: it sets the body's mode)
            modes = _decorator_modes(dv)
            if len(modes) == 1:
                value = frozenset({FunctionObj(ref, modes.pop())})
                break
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
            dv, _ = self.ev(d.func if type(d) is ir.Call else d)
            if type(d) is ir.Call:
                self.ev(d)
            if any(type(f) is Qual and f.name in lib.RECORD_DECORATORS for f in dv) and cls.id not in self.prog.record_classes:
                # `@dataclass`: its `__init__` sets its fields.
                self.prog.record_classes.add(cls.id)
                self.prog.class_changed(self.prog.family_of[cls.id])
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

    def _branch(self, stmts: list, export: bool) -> None:
        """A branch of an `if`; ``export``: it runs only while the model is
        traced or exported, where no backward runs (as under `no_grad`)."""
        if not export:
            self.block(stmts)
            return
        saved = self.frame.grad
        self.frame.grad = GradMode.OFF
        self.block(stmts)
        if self.frame.reachable:
            self.frame.grad = saved

    def _export_only(self, test: ir.Expr) -> bool | None:
        """True: the test holds only during export (`torch.jit.is_tracing()`,
        `is_tracing() or torch.onnx.is_in_onnx_export()`); False: only
        outside it (`not torch.jit.is_tracing()`); None: neither."""
        if type(test) is ir.UnaryOp and test.op == "not":
            inner = self._export_only(test.operand)
            return None if inner is None else not inner
        if type(test) is ir.BoolOp:
            # (`and`/`or` of export predicates alone: export only either way.)
            return True if all(self._export_only(v) is True for v in test.values) else None
        if type(test) is ir.Call and not test.args:
            return True if self._qual_of(test.func) in lib.EXPORT_ONLY_PREDICATES else None
        return None

    # -- expression statements ---------------------------------------------------------

    def expr_stmt(self, s: ir.ExprStmt) -> None:
        self.statement_call = s.value if type(s.value) is ir.Call else None
        v, _ = self.ev(s.value)
        self.statement_call = None
        # `torch.set_grad_enabled(False)` as a statement.
        if type(s.value) is ir.Call:
            modes = {f.mode for f in v if type(f) is GradContext and f.source in lib.SWITCHES_AS_STATEMENT}
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
                # `(nn.Module, nn.Parameter)`: one kind each, the first class
                # written standing for them (not the first its set of values
                # yields: that follows string hashes, from process to process).
                first = f.items[0][1] if f.items else f.all_values()
                if not first:
                    return None
                f = sorted_canonically(first)[0]
            if type(f) is Qual and f.name in lib.TENSOR_CLASSES:
                kinds.add("tensor")
            elif type(f) is Qual and lib.is_base_module_class(f.name):
                kinds.add("module")
            else:
                return None
        if len(kinds) != 1:
            return None
        return self.loc(args[0].id), kinds.pop(), positive

    def _none_test(self, test: ir.Expr) -> tuple[Loc, str, bool] | None:
        """``x is None`` / ``x is not None`` on a local: the local, "none",
        and whether it is None in the ``if`` branch."""
        if type(test) is ir.Compare and len(test.ops) == 1 and test.ops[0] in ("is", "is not"):
            right = test.comparators[0]
            if type(test.left) is ir.Name and test.left.id not in self.comp and type(right) is ir.Const and right.kind == "none":
                loc = self.loc(test.left.id)
                # (A local only this function binds: a global or a name a
                # nested function rebinds may be set where this run does
                # not see.)
                if type(loc) is Local and loc.fn == self.index and not self.fn.is_module and (loc.fn, loc.name) not in self.prog.captured:
                    return loc, "none", test.ops[0] == "is"
        return None

    def _narrow(self, loc: Loc, kind: str, positive: bool, holds: bool) -> None:
        """What ``loc`` can hold in a branch where the isinstance test
        ``holds`` (or not): the facts of that kind only, or all but them.
        Instances of classes we cannot see stay (either may be), and symbols,
        except where the value is shown not to be a module."""
        v = self.read(loc)
        inside = positive is holds
        if not v and not (kind == "tensor" and inside):
            return
        if kind == "none":
            if not inside and v == NONE_V:
                # `if acc is None: acc = out` / `else: acc += out` where
                # `acc` is only ever None here: the other branch is not
                # taken (yet: a later iteration may bind it).
                self.frame.reachable = False
            elif not inside and NONE in v:
                self.frame.env[loc] = v - NONE_V
            return

        def of_kind(f: object) -> bool | None:
            t = type(f)
            if kind == "tensor":
                return t in TENSOR_FACTS
            if t is Module:
                return True
            if t is Instance:
                return self.prog.lookup.is_module_class(f.cls)
            return False

        # (Where it is shown not to be a module, a symbol stays only as what
        # it is besides: calling it there runs no model.)
        keep_syms = inside or kind != "module"
        kept = frozenset(f for f in v if (type(f) is Sym and keep_syms) or (type(f) is not Sym and ((k := of_kind(f)) is None or k is inside)))
        if kind == "tensor" and inside and not any(type(f) in TENSOR_FACTS for f in kept):
            # (A symbol shown to be a tensor here, `elif isinstance(module,
            # nn.Parameter):` of a parameter used as a module elsewhere: a
            # tensor, whatever else the function shows of it.)
            kept = kept | TENSOR_V
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
            lf.over_model = s.iter.node in prog.parameter_lists or _layers(it, prog.lookup)
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
        self.frame = (end if type(s) is ir.For and (_layers(it, prog.lookup) or _runs_once(s.iter)) else head).fork()
        frozen = _freezes_parameters(s, prog.parameter_lists)
        if frozen is not None:
            self.calls.freeze(frozen)
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
        # (`with torch.set_grad_enabled(training):` in a function: the
        # parameter whose truth sets the mode, for a `@contextmanager`'s
        # callers to decide.)
        deciding: set = set()
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
                        deciding.add(self._deciding_param(item.context, f))
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
        saved_grad, saved_conds, saved_forced, saved_param = self.frame.grad, self.conds, self.forced, self.grad_param
        if mode is not None:
            self.frame.grad = mode
            self.grad_param = deciding.pop() if mode is GradMode.MAYBE and len(deciding) == 1 else None
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
        self.frame.grad, self.conds, self.forced, self.grad_param = saved_grad, saved_conds, saved_forced, saved_param

    def _deciding_param(self, e: ir.Expr, f: GradContext) -> int | None:
        """`torch.set_grad_enabled(training)` given a parameter of this
        function as it is: the parameter's index (its truth decides)."""
        if f.mode is not GradMode.MAYBE or f.source not in lib.SET_GRAD_ENABLED or type(e) is not ir.Call or len(e.args) != 1:
            return None
        a = e.args[0]
        if a.star or a.keyword not in (None, "mode") or type(a.value) is not ir.Name or a.value.id in self.comp:
            return None
        names = self.fn.param_names
        return names.index(a.value.id) if a.value.id in names else None

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


def _runs_once(e: ir.Expr) -> bool:
    """Iterating ``e`` gives at least one item, as its literals show:
    ``range(5)``, ``range(1, 4)``, a non-empty list or tuple display."""
    if type(e) is ir.Seq:
        return bool(e.elts) and not any(type(x) is ir.Starred for x in e.elts)
    if type(e) is not ir.Call or ir.dotted(e.func) != "range" or not e.args or len(e.args) > 2 or any(a.star or a.keyword for a in e.args):
        return False
    bounds = [_literal(a.value) for a in e.args]
    if not all(type(b) is int for b in bounds):
        return False
    return bounds[0] > 0 if len(bounds) == 1 else bounds[1] > bounds[0]


def _layers(v: Value, lookup) -> bool:
    """Iterating ``v`` goes over modules: a ModuleList or Sequential, or
    a list (or ``enumerate``/``zip``) of modules (torch layers, or instances
    of classes shown to be modules)."""
    if not v:
        return False

    def module(e: object) -> bool:
        return type(e) is Module or (type(e) is Instance and lookup.is_module_class(e.cls) is True)

    for f in v:
        t = type(f)
        if t is Module:
            continue
        if t is Container and f.kind in ("list", "tuple"):
            elems = f.all_values()
            if elems and all(module(e) or (type(e) is Container and e.kind == "tuple" and any(module(x) for x in e.all_values())) for e in elems):
                continue
        return False
    return True


def _freezes_parameters(s: ir.For | ir.While, parameter_lists: set) -> ir.Expr | None:
    """``for p in model.parameters(): p.requires_grad = False`` (or
    ``p.requires_grad_(False)``): the module whose parameters the loop
    freezes, all of them (``parameter_lists``: the calls resolved as a
    module's parameter list)."""
    if type(s) is not ir.For or type(s.iter) is not ir.Call or type(s.iter.func) is not ir.Attr:
        return None
    if s.iter.node not in parameter_lists or s.iter.args:
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


def _class_level_names(cls: ir.Class) -> set[str]:
    names: set[str] = set()
    for s in cls.body:
        if type(s) is ir.Assign:
            for t in s.targets:
                names.update(_names(t))
        elif type(s) is ir.ClassDef:
            names.add(s.cls.name)
    return names
