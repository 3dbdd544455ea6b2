"""How a run evaluates expressions to abstract values and their flow
sources: names, attributes, subscripts, operators, containers,
comprehensions. The ``ExpressionsMixin`` part of ``Run``, with the helpers
only it uses."""

from __future__ import annotations

import builtins
from functools import lru_cache
from typing import Any

from autograd_lint.analysis import ir
from autograd_lint.analysis import api
from autograd_lint.analysis import torch_api as lib
from autograd_lint.analysis.api import Gives
from autograd_lint.analysis.observer import ReadAttribute
from autograd_lint.analysis.paths import ELEMENT, path_key
from autograd_lint.analysis.state import BACKWARD, AttrOf, Global, Loc, Ret
from autograd_lint.analysis.tensor_ops import binop, compare, unary
from autograd_lint.analysis.transfer import attribute, iterate, known_kind, subscript, unpack
from autograd_lint.analysis.joins import join, join_paths
from autograd_lint.analysis.values import (
    AttrStep,
    BOOL_V,
    NONE_V,
    NOTHING,
    NUMBER_V,
    STR_V,
    TENSOR,
    Container,
    FunctionObj,
    GradMode,
    Graph,
    HookArg,
    InstanceRoot,
    Leaf,
    Module,
    Plain,
    Qual,
    Sym,
    Value,
    container,
    plain_only,
)
from autograd_lint.analysis.records import EMPTY, LoopFacts, _LoopContext
from autograd_lint.analysis.syntax_facts import _NO_LITERAL, _literal
from autograd_lint.analysis.value_facts import _fresh_without_grad, _tensor_attr

# run.Run, the class these functions are handed (run imports this module,
# not the other way).
Run = Any


_SHOWN_MODULE = frozenset({Module(True)})
_BUILTINS = frozenset(dir(builtins))


class ExpressionsMixin:
    """Expressions of ``Run`` (run.py)."""

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
                alias = lib.CONVENTIONAL_NAMES.get(name)
                if alias is not None:
                    # `torch.no_grad()` in a module that never binds `torch`:
                    # it comes from outside (an earlier cell, an `exec`, a
                    # forgotten import), and every PyTorch project means the
                    # same library by it.
                    return frozenset({Qual(alias)}), EMPTY
            if name in self.prog.module_path_attrs:
                v = self._shown_module(loc, v)
            src = self.frame.defs.get(loc)
            if src is None:
                src = self._srcs.get(loc)
                if src is None:
                    src = frozenset({loc})
                    if type(loc) is Global and not self.fn.is_module:
                        src = src | self.prog.global_defs.get(loc, frozenset())
                    self._srcs[loc] = src
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
            base_src = src
            if api.member(api.TENSOR, attr, attribute=True).walks_graph:
                # (`out.grad_fn` walked to trace a model: its graph is used.)
                for x in src:
                    self.prog.edge(x, BACKWARD)
            if _cuts_attribute(attr):
                src = EMPTY
            v = attribute(base, attr, self.site(e.node), self.prog.lookup)
            if attr in api.OBSERVED_ATTRIBUTES:
                listeners = self.prog.listening["read_attribute"]
                if listeners:
                    event = ReadAttribute(self.point(e.node), base, e, base_src)
                    for o in listeners:
                        o.read_attribute(self, event)
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
            return self.calls.call(e)
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
            for x in (e.left, *e.comparators):
                if type(x) in (ir.BinOp, ir.Call):
                    self.prog.op_cut.add(x.node)  # a comparison gives a bool: no backward reaches the op
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
            graph_test = _graph_test(e.test) or self._type_test(e.test)
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
            self.yields.append((v, self.frame.grad, self.grad_param if self.frame.grad is GradMode.MAYBE else None))
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
        if loc not in self.prog.module_paths or any(known_kind(f, self.prog.lookup) for f in v):
            return v  # (a module already, or known to be something else)
        return v | _SHOWN_MODULE

    def _type_test(self, test: ir.Expr) -> tuple[str, bool] | None:
        """``(name, False)`` for `torch.is_tensor(name)`: where it is false,
        ``name`` is no tensor, so it holds no graph (`x.item() if
        torch.is_tensor(x) else x`)."""
        if type(test) is not ir.Call or len(test.args) != 1 or type(test.args[0].value) is not ir.Name or test.args[0].keyword:
            return None
        func, _ = self.ev(test.func)
        if any(type(f) is Qual and f.name == lib.IS_TENSOR for f in func):
            return test.args[0].value.id, False, True  # (a type test: not a tensor at all there)
        return None

    def _without_graph(self, e: ir.Expr, test: tuple | None, orelse: bool) -> tuple[Value, frozenset]:
        """``e``, a branch of ``x if test else y`` where ``test`` tells
        whether a name holds an attached tensor (``v.grad_fn is not
        None``): on the branch where it does not, the name is read without
        graph facts (``v.detach() if v.requires_grad else v``). Where a type
        test shows it is no tensor (``torch.is_tensor(v)`` false), the name
        itself is read as what holds no graph: what its callers give it
        there is not a tensor (`v.item() if torch.is_tensor(v) else v`)."""
        if test is None or test[1] is orelse:
            return self.ev(e)
        name = test[0]
        if len(test) > 2 and type(e) is ir.Name and e.id == name:
            v, _ = self.ev(e)
            return frozenset(f for f in v if type(f) is Plain), EMPTY
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


@lru_cache(maxsize=None)
def _cuts_attribute(name: str) -> bool:
    """``x.name`` of a tensor carries nothing of ``x`` onward (its shape, its
    dtype, its gradient). (``.data`` still names the tensor's storage.)"""
    return api.member(api.TENSOR, name, attribute=True).cuts and _tensor_attr(name) is not Gives.DETACHED


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
