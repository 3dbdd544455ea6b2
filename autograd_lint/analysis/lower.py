"""LibCST -> IR (ir.py), in one recursive pass over the module.

A hand-written walk rather than a CSTVisitor: each statement and expression
is visited exactly once and no LibCST metadata is resolved (positions are
computed later, only for nodes that become findings). Besides the tree,
the pass records each function's scope: the names it assigns (its locals),
and its ``global``/``nonlocal`` declarations.
"""

from __future__ import annotations

import libcst as cst

from autograd_lint.analysis import ir
from autograd_lint.analysis.names import dotted
from autograd_lint.analysis.scopes import ScopeRecorder

_BINARY = {
    cst.Add: "add",
    cst.Subtract: "sub",
    cst.Multiply: "mul",
    cst.Divide: "truediv",
    cst.FloorDivide: "floordiv",
    cst.Modulo: "mod",
    cst.Power: "pow",
    cst.MatrixMultiply: "matmul",
    cst.LeftShift: "lshift",
    cst.RightShift: "rshift",
    cst.BitOr: "or",
    cst.BitAnd: "and",
    cst.BitXor: "xor",
}
_AUGMENTED = {
    cst.AddAssign: "add",
    cst.SubtractAssign: "sub",
    cst.MultiplyAssign: "mul",
    cst.DivideAssign: "truediv",
    cst.FloorDivideAssign: "floordiv",
    cst.ModuloAssign: "mod",
    cst.PowerAssign: "pow",
    cst.MatrixMultiplyAssign: "matmul",
    cst.LeftShiftAssign: "lshift",
    cst.RightShiftAssign: "rshift",
    cst.BitOrAssign: "or",
    cst.BitAndAssign: "and",
    cst.BitXorAssign: "xor",
}
_UNARY = {cst.Minus: "neg", cst.Plus: "pos", cst.Not: "not", cst.BitInvert: "invert"}
_COMPARE = {
    cst.Equal: "==",
    cst.NotEqual: "!=",
    cst.LessThan: "<",
    cst.LessThanEqual: "<=",
    cst.GreaterThan: ">",
    cst.GreaterThanEqual: ">=",
    cst.In: "in",
    cst.NotIn: "not in",
    cst.Is: "is",
    cst.IsNot: "is not",
}
_CONSTANT_NAMES = {"True": ("bool", True), "False": ("bool", False), "None": ("none", None)}


def annotation_text(node: cst.BaseExpression | None) -> str | None:
    """``torch.Tensor`` for a simple (possibly quoted) annotation, else None."""
    if node is None:
        return None
    if isinstance(node, cst.SimpleString):
        try:
            text = node.evaluated_value
        except Exception:
            return None
        if isinstance(text, str) and all(p.isidentifier() for p in text.split(".")):
            return text
        return None
    return dotted(node)


def _block(suite: cst.BaseSuite) -> list:
    return list(suite.body)


def _number(node: cst.BaseNumber) -> object:
    """A number literal's value, without compiling it (``evaluated_value``
    parses the literal with CPython each time)."""
    t = type(node)
    try:
        if t is cst.Integer:
            return int(node.value, 0)
        if t is cst.Float:
            return float(node.value)  # underscores too, as in the literal
        if t is cst.Imaginary:
            return complex(node.value)
    except ValueError:
        pass
    try:
        return node.evaluated_value
    except Exception:
        return None


def _string(node: cst.SimpleString) -> object:
    """A string literal's value, without compiling it when it is plain: no
    escape to decode (or a raw string), not bytes, no carriage return (the
    tokenizer turns it into a newline). Docstrings are most of them."""
    text = node.value
    i = 0
    while i < len(text) and text[i] not in "'\"":
        i += 1
    prefix, body = text[:i].lower(), text[i:]
    q = body[:3] if body[:3] in ('"""', "'''") else body[:1]
    if q and len(body) >= 2 * len(q) and "b" not in prefix:
        inner = body[len(q) : len(body) - len(q)]
        if "\r" not in inner and ("r" in prefix or "\\" not in inner):
            return inner
    try:
        return node.evaluated_value
    except Exception:
        return None


class Lowerer(ScopeRecorder):
    def module(self, module: cst.Module) -> ir.ModuleIR:
        return self.module_ir(module, lambda: self.stmts(module.body))

    # -- statements -----------------------------------------------------------

    def stmts(self, nodes) -> list:
        out: list = []
        for node in nodes:
            self.stmt(node, out)
        return out

    def stmt(self, node: cst.CSTNode, out: list) -> None:
        t = type(node)
        if t is cst.SimpleStatementLine:
            for small in node.body:
                self.small(small, out)
        elif t is cst.FunctionDef:
            self.bind(node.name.value)
            out.append(ir.Def(self.function(node)))
        elif t is cst.ClassDef:
            self.bind(node.name.value)
            out.append(ir.ClassDef(self.klass(node)))
        elif t is cst.If:
            out.append(self.if_(node))
        elif t is cst.For:
            target = self.target(node.target)
            loop = ir.Loop(node)
            out.append(
                ir.For(target, self.expr(node.iter), self.stmts(_block(node.body)), self.stmts(_block(node.orelse.body)) if node.orelse else [], loop)
            )
        elif t is cst.While:
            out.append(
                ir.While(self.expr(node.test), self.stmts(_block(node.body)), self.stmts(_block(node.orelse.body)) if node.orelse else [], ir.Loop(node))
            )
        elif t is cst.With:
            items = []
            for item in node.items:
                ctx = self.expr(item.item)
                target = self.target(item.asname.name) if item.asname is not None else None
                items.append(ir.WithItem(ctx, target))
            out.append(ir.With(tuple(items), self.stmts(_block(node.body)), node))
        elif t is cst.Try or t is cst.TryStar:
            handlers = []
            for h in node.handlers:
                name = h.name.name.value if h.name is not None and isinstance(h.name.name, cst.Name) else None
                if name:
                    self.bind(name)
                if h.type is not None:
                    self.expr(h.type)
                handlers.append(ir.Handler(name, self.stmts(_block(h.body))))
            out.append(
                ir.Try(
                    self.stmts(_block(node.body)),
                    tuple(handlers),
                    self.stmts(_block(node.orelse.body)) if node.orelse is not None else [],
                    self.stmts(_block(node.finalbody.body)) if node.finalbody is not None else [],
                )
            )
        elif t is cst.Match:
            cases = []
            for case in node.cases:
                self._bind_pattern(case.pattern)
                cases.append(self.stmts(_block(case.body)))
            out.append(ir.Match(self.expr(node.subject), tuple(cases), node))
        elif isinstance(node, cst.BaseSmallStatement):
            self.small(node, out)

    def _bind_pattern(self, pattern: cst.CSTNode) -> None:
        """Capture names of a ``case`` pattern are locals."""
        stack = [pattern]
        while stack:
            p = stack.pop()
            if isinstance(p, cst.MatchAs) and p.name is not None:
                self.bind(p.name.value)
            elif isinstance(p, cst.MatchStar) and p.name is not None:
                self.bind(p.name.value)
            elif isinstance(p, cst.MatchMapping) and p.rest is not None:
                self.bind(p.rest.value)
            for c in p.children:
                if isinstance(c, cst.CSTNode) and not isinstance(c, cst.BaseExpression):
                    stack.append(c)
                elif isinstance(c, (cst.MatchPattern,)):
                    stack.append(c)

    def if_(self, node: cst.If) -> ir.If:
        test = self.expr(node.test)
        body = self.stmts(_block(node.body))
        orelse: list = []
        if isinstance(node.orelse, cst.If):
            orelse = [self.if_(node.orelse)]
        elif isinstance(node.orelse, cst.Else):
            orelse = self.stmts(_block(node.orelse.body))
        return ir.If(test, body, orelse, node)

    def small(self, node: cst.CSTNode, out: list) -> None:
        t = type(node)
        if t is cst.Expr:
            out.append(ir.ExprStmt(self.expr(node.value), node))
        elif t is cst.Assign:
            value = self.expr(node.value)
            targets = tuple(self.target(t.target) for t in node.targets)
            out.append(ir.Assign(targets, value, node))
        elif t is cst.AnnAssign:
            target = self.target(node.target)
            ann = annotation_text(node.annotation.annotation)
            if node.value is not None:
                out.append(ir.Assign((target,), self.expr(node.value), node, annotation=ann))
        elif t is cst.AugAssign:
            value = self.expr(node.value)
            target = self.target(node.target)
            out.append(ir.AugAssign(target, _AUGMENTED.get(type(node.operator), "add"), value, node))
        elif t is cst.Return:
            out.append(ir.Return(self.expr(node.value) if node.value is not None else None, node))
        elif t is cst.Import:
            names = []
            for alias in node.names:
                full = dotted(alias.name) or ""
                if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                    local = alias.asname.name.value
                    names.append(ir.ImportName(local, full, 0, None, node))
                else:
                    # `import a.b` binds `a` (to package a).
                    local = full.split(".")[0]
                    names.append(ir.ImportName(local, local, 0, None, node))
                self.bind(local)
            self.imports.extend(names)
            out.append(ir.Import(tuple(names), node))
        elif t is cst.ImportFrom:
            module = (dotted(node.module) or "") if node.module is not None else ""
            level = len(node.relative)
            names = []
            if not isinstance(node.names, cst.ImportStar):
                for alias in node.names:
                    name = dotted(alias.name) or ""
                    local = alias.asname.name.value if alias.asname is not None and isinstance(alias.asname.name, cst.Name) else name
                    names.append(ir.ImportName(local, module, level, name, node))
                    self.bind(local)
            else:
                self.star_import(module, level, node)
            self.imports.extend(names)
            out.append(ir.Import(tuple(names), node))
        elif t is cst.Global:
            self.fn.globals.update(n.name.value for n in node.names)
        elif t is cst.Nonlocal:
            self.fn.nonlocals.update(n.name.value for n in node.names)
        elif t is cst.Del:
            out.append(ir.Delete(self._del_targets(node.target), node))
        elif t is cst.Raise:
            out.append(ir.Raise(self.expr(node.exc) if node.exc is not None else None, node))
        elif t is cst.Break:
            out.append(ir.Break(node))
        elif t is cst.Continue:
            out.append(ir.Continue(node))
        elif t is cst.Assert:
            self.fn.asserts = True
            out.append(ir.ExprStmt(self.expr(node.test), node))

    def _del_targets(self, target: cst.BaseExpression) -> tuple:
        if isinstance(target, (cst.Tuple, cst.List)):
            out: tuple = ()
            for el in target.elements:
                out += self._del_targets(el.value)
            return out
        return (self.target(target),)

    # -- targets ----------------------------------------------------------------

    def target(self, node: cst.BaseExpression) -> ir.Expr:
        t = type(node)
        if t is cst.Name:
            return ir.Name(self.assign(node.value), node)
        if t is cst.Tuple or t is cst.List:
            return ir.Seq("tuple" if t is cst.Tuple else "list", tuple(self.target(e.value) for e in node.elements), node)
        if t is cst.StarredElement:
            return ir.Starred(self.target(node.value), node)
        return self.expr(node)

    # -- definitions --------------------------------------------------------------

    def _params(self, params: cst.Parameters) -> tuple[ir.Param, ...]:
        out: list[ir.Param] = []

        def add(p: cst.Param, kind: str) -> None:
            default = self.expr(p.default) if p.default is not None else None
            ann = annotation_text(p.annotation.annotation) if p.annotation is not None else None
            out.append(ir.Param(p.name.value, kind, default, ann))

        for p in (*params.posonly_params, *params.params):
            add(p, "pos")
        if isinstance(params.star_arg, cst.Param):
            add(params.star_arg, "vararg")
        for p in params.kwonly_params:
            add(p, "kwonly")
        if params.star_kwarg is not None:
            add(params.star_kwarg, "kwarg")
        return tuple(out)

    def function(self, node: cst.FunctionDef) -> ir.Function:
        # Defaults and decorators run in the enclosing scope.
        decorators = tuple(self.expr(d.decorator) for d in node.decorators)
        params = self._params(node.params)
        fn = ir.Function(
            node.name.value, node, params, self.fn, self.cls, decorators=decorators, is_async=node.asynchronous is not None, decorator_nodes=tuple(node.decorators)
        )
        return self.function_body(fn, lambda: self.stmts(_block(node.body)))

    def lambda_(self, node: cst.Lambda) -> ir.Function:
        params = self._params(node.params)
        fn = ir.Function("<lambda>", node, params, self.fn, None, is_lambda=True)
        return self.function_body(fn, lambda: [ir.Return(self.expr(node.body), node)])

    def klass(self, node: cst.ClassDef) -> ir.Class:
        decorators = tuple(self.expr(d.decorator) for d in node.decorators)
        bases = tuple(self.expr(b.value) for b in node.bases if b.keyword is None and not b.star)
        keywords = tuple(ir.Arg(self.expr(b.value), b.keyword.value if b.keyword else None, b.star) for b in node.bases if b.keyword is not None or b.star)
        fields = tuple(
            small.target.value
            for line in _block(node.body)
            if type(line) is cst.SimpleStatementLine
            for small in line.body
            if type(small) is cst.AnnAssign and type(small.target) is cst.Name and not (annotation_text(small.annotation.annotation) or "").startswith(("ClassVar", "typing.ClassVar"))
        )
        cls = ir.Class(node.name.value, node, bases, keywords, self.fn, outer=self.cls, decorators=decorators, fields=fields)
        return self.class_body(cls, lambda: self.stmts(_block(node.body)))

    # -- expressions --------------------------------------------------------------

    def expr(self, node: cst.BaseExpression | None) -> ir.Expr:
        if node is None:
            return ir.Const("none", None, cst.Name("None"))
        t = type(node)
        if t is cst.Name:
            const = _CONSTANT_NAMES.get(node.value)
            if const is not None:
                return ir.Const(const[0], const[1], node)
            self.fn.reads.add(node.value)
            return ir.Name(node.value, node)
        if t is cst.Attribute:
            return ir.Attr(self.expr(node.value), node.attr.value, node)
        if t is cst.Call:
            args = tuple(ir.Arg(self.expr(a.value), a.keyword.value if a.keyword is not None else None, a.star) for a in node.args)
            return self.call(ir.Call(self.expr(node.func), args, node))
        if t is cst.Subscript:
            index = []
            for el in node.slice:
                s = el.slice
                if isinstance(s, cst.Slice):
                    index.append(ir.Index(None, self._opt(s.lower), self._opt(s.upper), self._opt(s.step)))
                else:
                    index.append(ir.Index(self.expr(s.value)))
            return ir.Subscript(self.expr(node.value), tuple(index), node)
        if t is cst.BinaryOperation:
            return ir.BinOp(_BINARY.get(type(node.operator), "add"), self.expr(node.left), self.expr(node.right), node)
        if t is cst.UnaryOperation:
            return ir.UnaryOp(_UNARY.get(type(node.operator), "pos"), self.expr(node.expression), node)
        if t is cst.BooleanOperation:
            values = []
            stack = [node]
            while stack:
                n = stack.pop()
                if isinstance(n, cst.BooleanOperation):
                    stack.extend((n.right, n.left))
                else:
                    values.append(self.expr(n))
            return ir.BoolOp(tuple(values), node)
        if t is cst.Comparison:
            ops = tuple(_COMPARE.get(type(c.operator), "==") for c in node.comparisons)
            return ir.Compare(self.expr(node.left), ops, tuple(self.expr(c.comparator) for c in node.comparisons), node)
        if t is cst.IfExp:
            return ir.IfExp(self.expr(node.test), self.expr(node.body), self.expr(node.orelse), node)
        if t is cst.Integer or t is cst.Float or t is cst.Imaginary:
            return ir.Const("number", _number(node), node)
        if t is cst.SimpleString:
            value = _string(node)
            return ir.Const("bytes" if isinstance(value, bytes) else "str", value, node)
        if t is cst.ConcatenatedString:
            parts: list[ir.Expr] = []
            stack2: list[cst.CSTNode] = [node]
            while stack2:
                n = stack2.pop()
                if isinstance(n, cst.ConcatenatedString):
                    stack2.extend((n.right, n.left))
                elif isinstance(n, cst.FormattedString):
                    parts.append(self.expr(n))
            try:
                value = node.evaluated_value
            except Exception:
                value = None
            if parts:
                return ir.FString(tuple(p for part in parts if isinstance(part, ir.FString) for p in part.values), node)
            return ir.Const("bytes" if isinstance(value, bytes) else "str", value, node)
        if t is cst.FormattedString:
            values = tuple(self.expr(p.expression) for p in node.parts if isinstance(p, cst.FormattedStringExpression))
            return ir.FString(values, node)
        if t is cst.Tuple or t is cst.List or t is cst.Set:
            kind = "tuple" if t is cst.Tuple else "list" if t is cst.List else "set"
            return ir.Seq(kind, tuple(self.expr(e.value) if not isinstance(e, cst.StarredElement) else ir.Starred(self.expr(e.value), e) for e in node.elements), node)
        if t is cst.Dict:
            keys: list[ir.Expr | None] = []
            vals: list[ir.Expr] = []
            for el in node.elements:
                if isinstance(el, cst.DictElement):
                    keys.append(self.expr(el.key))
                    vals.append(self.expr(el.value))
                else:
                    keys.append(None)
                    vals.append(self.expr(el.value))
            return ir.DictX(tuple(keys), tuple(vals), node)
        if t in (cst.ListComp, cst.SetComp, cst.GeneratorExp, cst.DictComp):
            return self.comprehension(node)
        if t is cst.Lambda:
            return ir.Lambda(self.lambda_(node), node)
        if t is cst.Await:
            return ir.Await(self.expr(node.expression), node)
        if t is cst.Yield:
            self.fn.is_generator = True
            v = node.value
            if isinstance(v, cst.From):
                return ir.Yield(self.expr(v.item), node, from_=True)
            return ir.Yield(self.expr(v) if v is not None else None, node)
        if t is cst.NamedExpr:
            value = self.expr(node.value)
            target = node.target
            if isinstance(target, cst.Name):
                self.bind(target.value)
                return ir.NamedExpr(ir.Name(target.value, target), value, node)
            return value
        if t is cst.StarredElement:
            return ir.Starred(self.expr(node.value), node)
        if t is cst.Ellipsis:
            return ir.Const("ellipsis", None, node)
        parts3 = tuple(self.expr(c) for c in node.children if isinstance(c, cst.BaseExpression))
        return ir.Opaque(parts3, node)

    def _opt(self, node: cst.BaseExpression | None) -> ir.Expr | None:
        return self.expr(node) if node is not None else None

    def comprehension(self, node) -> ir.Comp:
        gens = []
        for_in = node.for_in
        while for_in is not None:
            it = self.expr(for_in.iter)
            target = self._comp_target(for_in.target)
            ifs = tuple(self.expr(c.test) for c in for_in.ifs)
            gens.append(ir.Generator(target, it, ifs))
            for_in = for_in.inner_for_in
        if isinstance(node, cst.DictComp):
            key = self.expr(node.key)
            elt = self.expr(node.value)
            return ir.Comp("dict", tuple(gens), elt, key, node)
        kind = "list" if isinstance(node, cst.ListComp) else "set" if isinstance(node, cst.SetComp) else "gen"
        return ir.Comp(kind, tuple(gens), self.expr(node.elt), None, node)

    def _comp_target(self, node: cst.BaseExpression) -> ir.Expr:
        """A comprehension's targets live in the comprehension's own scope:
        not locals of the enclosing function."""
        if isinstance(node, cst.Name):
            return ir.Name(node.value, node)
        if isinstance(node, (cst.Tuple, cst.List)):
            return ir.Seq("tuple", tuple(self._comp_target(e.value) for e in node.elements), node)
        if isinstance(node, cst.StarredElement):
            return ir.Starred(self._comp_target(node.value), node)
        return self.expr(node)


def lower(module: cst.Module) -> ir.ModuleIR:
    return Lowerer().module(module)
