"""CPython's ``ast`` -> the same IR as lower.py gives from LibCST.

CPython parses a file about ten times faster than LibCST. The analysis does
not look at syntax nodes (only at their identity), so it runs alike on
either lowering; LibCST is needed only where a finding is reported (its
positions, its fix). The engine first runs the analysis on this lowering
and parses with LibCST only a file in which some rule has something to
decide (``Rule.candidates``). A test lowers every fixture and corpus-like
file both ways and compares the two IRs field by field.

Each function mirrors its namesake in lower.py; where the trees differ the
comment says how the LibCST shape is rebuilt (argument order, a
parenthesised tuple in a subscript, nested ``and``/``or``).
"""

from __future__ import annotations

import ast
import re

from autograd_lint.analysis import ir
from autograd_lint.analysis.scopes import ScopeRecorder

_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$")

_BINARY = {
    ast.Add: "add",
    ast.Sub: "sub",
    ast.Mult: "mul",
    ast.Div: "truediv",
    ast.FloorDiv: "floordiv",
    ast.Mod: "mod",
    ast.Pow: "pow",
    ast.MatMult: "matmul",
    ast.LShift: "lshift",
    ast.RShift: "rshift",
    ast.BitOr: "or",
    ast.BitAnd: "and",
    ast.BitXor: "xor",
}
_UNARY = {ast.USub: "neg", ast.UAdd: "pos", ast.Not: "not", ast.Invert: "invert"}
_COMPARE = {
    ast.Eq: "==",
    ast.NotEq: "!=",
    ast.Lt: "<",
    ast.LtE: "<=",
    ast.Gt: ">",
    ast.GtE: ">=",
    ast.In: "in",
    ast.NotIn: "not in",
    ast.Is: "is",
    ast.IsNot: "is not",
}


def _dotted(node: ast.expr) -> str | None:
    parts: list[str] = []
    while type(node) is ast.Attribute:
        parts.append(node.attr)
        node = node.value
    if type(node) is not ast.Name:
        return None
    parts.append(node.id)
    return ".".join(reversed(parts))


def annotation_text(node: ast.expr | None) -> str | None:
    """lower.annotation_text: a dotted (possibly quoted) annotation."""
    if node is None:
        return None
    if type(node) is ast.Constant:
        text = node.value
        if text is None or text is True or text is False:
            return str(text)  # a name to LibCST: `-> None`
        if isinstance(text, str) and all(p.isidentifier() for p in text.split(".")):
            return text
        return None
    return _dotted(node)


def _position(node: ast.AST) -> tuple[int, int]:
    return (node.lineno, node.col_offset)  # type: ignore[attr-defined]


class Lowerer(ScopeRecorder):
    def __init__(self, source: str) -> None:
        super().__init__()
        self.source = source
        self._lines: list[str] | None = None

    def module(self, module: ast.Module) -> ir.ModuleIR:
        return self.module_ir(module, lambda: self.stmts(module.body))

    # -- statements -----------------------------------------------------------

    def stmts(self, nodes: list) -> list:
        out: list = []
        for node in nodes:
            self.stmt(node, out)
        return out

    def stmt(self, node: ast.stmt, out: list) -> None:
        t = type(node)
        if t is ast.FunctionDef or t is ast.AsyncFunctionDef:
            self.bind(node.name)
            out.append(ir.Def(self.function(node)))
        elif t is ast.ClassDef:
            self.bind(node.name)
            out.append(ir.ClassDef(self.klass(node)))
        elif t is ast.If:
            out.append(self.if_(node))
        elif t is ast.For or t is ast.AsyncFor:
            target = self.target(node.target)
            loop = ir.Loop(node)
            out.append(ir.For(target, self.expr(node.iter), self.stmts(node.body), self.stmts(node.orelse), loop))
        elif t is ast.While:
            out.append(ir.While(self.expr(node.test), self.stmts(node.body), self.stmts(node.orelse), ir.Loop(node)))
        elif t is ast.With or t is ast.AsyncWith:
            items = []
            for item in node.items:
                ctx = self.expr(item.context_expr)
                target = self.target(item.optional_vars) if item.optional_vars is not None else None
                items.append(ir.WithItem(ctx, target))
            out.append(ir.With(tuple(items), self.stmts(node.body), node))
        elif t is ast.Try or t.__name__ == "TryStar":
            handlers = []
            for h in node.handlers:
                name = h.name
                if name:
                    self.bind(name)
                if h.type is not None:
                    self.expr(h.type)
                handlers.append(ir.Handler(name, self.stmts(h.body)))
            out.append(ir.Try(self.stmts(node.body), tuple(handlers), self.stmts(node.orelse), self.stmts(node.finalbody)))
        elif t is ast.Match:
            cases = []
            for case in node.cases:
                self._bind_pattern(case.pattern)
                cases.append(self.stmts(case.body))
            out.append(ir.Match(self.expr(node.subject), tuple(cases), node))
        else:
            self.small(node, out)

    def _bind_pattern(self, pattern: ast.pattern) -> None:
        stack = [pattern]
        while stack:
            p = stack.pop()
            t = type(p)
            if (t is ast.MatchAs or t is ast.MatchStar) and p.name is not None:
                self.bind(p.name)
            elif t is ast.MatchMapping and p.rest is not None:
                self.bind(p.rest)
            stack.extend(c for c in ast.iter_child_nodes(p) if isinstance(c, ast.pattern))

    def if_(self, node: ast.If) -> ir.If:
        test = self.expr(node.test)
        body = self.stmts(node.body)
        # `elif` and `else: if` lower alike in lower.py: [If].
        orelse = self.stmts(node.orelse)
        return ir.If(test, body, orelse, node)

    def small(self, node: ast.stmt, out: list) -> None:
        t = type(node)
        if t is ast.Expr:
            out.append(ir.ExprStmt(self.expr(node.value), node))
        elif t is ast.Assign:
            value = self.expr(node.value)
            targets = tuple(self.target(x) for x in node.targets)
            out.append(ir.Assign(targets, value, node))
        elif t is ast.AnnAssign:
            target = self.target(node.target)
            ann = annotation_text(node.annotation)
            if node.value is not None:
                out.append(ir.Assign((target,), self.expr(node.value), node, annotation=ann))
        elif t is ast.AugAssign:
            value = self.expr(node.value)
            target = self.target(node.target)
            out.append(ir.AugAssign(target, _BINARY.get(type(node.op), "add"), value, node))
        elif t is ast.Return:
            out.append(ir.Return(self.expr(node.value) if node.value is not None else None, node))
        elif t is ast.Import:
            names = []
            for alias in node.names:
                full = alias.name
                if alias.asname is not None:
                    local = alias.asname
                    names.append(ir.ImportName(local, full, 0, None, node))
                else:
                    local = full.split(".")[0]
                    names.append(ir.ImportName(local, local, 0, None, node))
                self.bind(local)
            self.imports.extend(names)
            out.append(ir.Import(tuple(names), node))
        elif t is ast.ImportFrom:
            module = node.module or ""
            level = node.level or 0
            names = []
            if not (len(node.names) == 1 and node.names[0].name == "*"):
                for alias in node.names:
                    name = alias.name
                    local = alias.asname if alias.asname is not None else name
                    names.append(ir.ImportName(local, module, level, name, node))
                    self.bind(local)
            else:
                self.star_import(module, level, node)
            self.imports.extend(names)
            out.append(ir.Import(tuple(names), node))
        elif t is ast.Global:
            self.fn.globals.update(node.names)
        elif t is ast.Nonlocal:
            self.fn.nonlocals.update(node.names)
        elif t is ast.Delete:
            targets: tuple = ()
            # LibCST holds `del a, b` as one tuple target; both flatten.
            for x in node.targets:
                targets += self._del_targets(x)
            out.append(ir.Delete(targets, node))
        elif t is ast.Raise:
            out.append(ir.Raise(self.expr(node.exc) if node.exc is not None else None, node))
        elif t is ast.Break:
            out.append(ir.Break(node))
        elif t is ast.Continue:
            out.append(ir.Continue(node))
        elif t is ast.Assert:
            self.fn.asserts = True
            out.append(ir.ExprStmt(self.expr(node.test), node))

    def _del_targets(self, target: ast.expr) -> tuple:
        if type(target) in (ast.Tuple, ast.List):
            out: tuple = ()
            for el in target.elts:
                out += self._del_targets(_unstarred(el))
            return out
        return (self.target(target),)

    # -- targets ----------------------------------------------------------------

    def target(self, node: ast.expr) -> ir.Expr:
        t = type(node)
        if t is ast.Name:
            return ir.Name(self.assign(node.id), node)
        if t is ast.Tuple or t is ast.List:
            # lower.py lowers each element's value: `a, *b` as `a, b`.
            return ir.Seq("tuple" if t is ast.Tuple else "list", tuple(self.target(_unstarred(e)) for e in node.elts), node)
        if t is ast.Starred:
            return ir.Starred(self.target(node.value), node)
        return self.expr(node)

    # -- definitions --------------------------------------------------------------

    def _params(self, args: ast.arguments) -> tuple[ir.Param, ...]:
        out: list[ir.Param] = []
        positional = [*args.posonlyargs, *args.args]
        defaults: list = [None] * (len(positional) - len(args.defaults)) + list(args.defaults)

        def add(p: ast.arg, kind: str, default: ast.expr | None) -> None:
            value = self.expr(default) if default is not None else None
            out.append(ir.Param(p.arg, kind, value, annotation_text(p.annotation)))

        for p, d in zip(positional, defaults):
            add(p, "pos", d)
        if args.vararg is not None:
            add(args.vararg, "vararg", None)
        for p, d in zip(args.kwonlyargs, args.kw_defaults):
            add(p, "kwonly", d)
        if args.kwarg is not None:
            add(args.kwarg, "kwarg", None)
        return tuple(out)

    def function(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> ir.Function:
        decorators = tuple(self.expr(d) for d in node.decorator_list)
        params = self._params(node.args)
        fn = ir.Function(
            node.name, node, params, self.fn, self.cls, decorators=decorators, is_async=type(node) is ast.AsyncFunctionDef,
            decorator_nodes=tuple(node.decorator_list),
        )
        return self.function_body(fn, lambda: self.stmts(node.body))

    def lambda_(self, node: ast.Lambda) -> ir.Function:
        params = self._params(node.args)
        fn = ir.Function("<lambda>", node, params, self.fn, None, is_lambda=True)
        return self.function_body(fn, lambda: [ir.Return(self.expr(node.body), node)])

    def klass(self, node: ast.ClassDef) -> ir.Class:
        decorators = tuple(self.expr(d) for d in node.decorator_list)
        bases = tuple(self.expr(b) for b in node.bases if type(b) is not ast.Starred)
        # lower.py's keywords are the starred bases (LibCST keeps
        # `metaclass=` apart).
        keywords = tuple(ir.Arg(self.expr(b.value), None, "*") for b in node.bases if type(b) is ast.Starred)
        fields = tuple(
            stmt.target.id
            for stmt in node.body
            if type(stmt) is ast.AnnAssign and type(stmt.target) is ast.Name and not (annotation_text(stmt.annotation) or "").startswith(("ClassVar", "typing.ClassVar"))
        )
        cls = ir.Class(node.name, node, bases, keywords, self.fn, outer=self.cls, decorators=decorators, fields=fields)
        return self.class_body(cls, lambda: self.stmts(node.body))

    # -- expressions --------------------------------------------------------------

    def expr(self, node: ast.expr | None) -> ir.Expr:
        if node is None:
            return ir.Const("none", None, object())  # a node of its own, as lower.py's `cst.Name("None")`
        t = type(node)
        if t is ast.Name:
            self.fn.reads.add(node.id)
            return ir.Name(node.id, node)
        if t is ast.Attribute:
            return ir.Attr(self.expr(node.value), node.attr, node)
        if t is ast.Call:
            args = self._call_args(node)  # before the callee, as lower.py
            return self.call(ir.Call(self.expr(node.func), args, node))
        if t is ast.Subscript:
            index = [self._index(s) for s in self._subscript_elements(node)]
            value = self.expr(node.value)
            return ir.Subscript(value, tuple(index), node)
        if t is ast.BinOp:
            return ir.BinOp(_BINARY.get(type(node.op), "add"), self.expr(node.left), self.expr(node.right), node)
        if t is ast.UnaryOp:
            return ir.UnaryOp(_UNARY.get(type(node.op), "pos"), self.expr(node.operand), node)
        if t is ast.BoolOp:
            # LibCST nests `a and b or c` pairwise; lower.py flattens every
            # nested and/or into one list, left to right: so does this.
            values: list[ir.Expr] = []
            stack: list[ast.expr] = [node]
            while stack:
                n = stack.pop()
                if type(n) is ast.BoolOp:
                    stack.extend(reversed(n.values))
                else:
                    values.append(self.expr(n))
            return ir.BoolOp(tuple(values), node)
        if t is ast.Compare:
            ops = tuple(_COMPARE.get(type(o), "==") for o in node.ops)
            return ir.Compare(self.expr(node.left), ops, tuple(self.expr(c) for c in node.comparators), node)
        if t is ast.IfExp:
            return ir.IfExp(self.expr(node.test), self.expr(node.body), self.expr(node.orelse), node)
        if t is ast.Constant:
            v = node.value
            if v is True or v is False:
                return ir.Const("bool", v, node)
            if v is None:
                return ir.Const("none", None, node)
            if v is Ellipsis:
                return ir.Const("ellipsis", None, node)
            if isinstance(v, (int, float, complex)):
                return ir.Const("number", v, node)
            return ir.Const("bytes" if isinstance(v, bytes) else "str", v, node)
        if t is ast.JoinedStr:
            return ir.FString(tuple(self.expr(p.value) for p in node.values if type(p) is ast.FormattedValue), node)
        if t is ast.Tuple or t is ast.List or t is ast.Set:
            kind = "tuple" if t is ast.Tuple else "list" if t is ast.List else "set"
            return ir.Seq(kind, tuple(ir.Starred(self.expr(e.value), e) if type(e) is ast.Starred else self.expr(e) for e in node.elts), node)
        if t is ast.Dict:
            keys: list[ir.Expr | None] = []
            vals: list[ir.Expr] = []
            for k, v in zip(node.keys, node.values):
                keys.append(self.expr(k) if k is not None else None)
                vals.append(self.expr(v))
            return ir.DictX(tuple(keys), tuple(vals), node)
        if t in (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp):
            return self.comprehension(node)
        if t is ast.Lambda:
            return ir.Lambda(self.lambda_(node), node)
        if t is ast.Await:
            return ir.Await(self.expr(node.value), node)
        if t is ast.Yield:
            self.fn.is_generator = True
            return ir.Yield(self.expr(node.value) if node.value is not None else None, node)
        if t is ast.YieldFrom:
            self.fn.is_generator = True
            return ir.Yield(self.expr(node.value), node, from_=True)
        if t is ast.NamedExpr:
            value = self.expr(node.value)
            target = node.target
            if type(target) is ast.Name:
                self.bind(target.id)
                return ir.NamedExpr(ir.Name(target.id, target), value, node)
            return value
        if t is ast.Starred:
            return ir.Starred(self.expr(node.value), node)
        parts = tuple(self.expr(c) for c in ast.iter_child_nodes(node) if isinstance(c, ast.expr))
        return ir.Opaque(parts, node)

    def _call_args(self, node: ast.Call) -> tuple[ir.Arg, ...]:
        """In source order, as LibCST keeps them (ast puts ``*b`` of
        ``f(a, k=1, *b)`` with the positional ones), lowered in that order."""
        items: list[tuple[tuple[int, int], str | None, str, ast.expr]] = []
        for a in node.args:
            if type(a) is ast.Starred:
                items.append((_position(a), None, "*", a.value))
            else:
                items.append((_position(a), None, "", a))
        for k in node.keywords:
            items.append((_position(k), k.arg, "**" if k.arg is None else "", k.value))
        if node.keywords and node.args and _position(node.keywords[0]) < _position(node.args[-1]):
            items.sort(key=lambda p: p[0])
        return tuple(ir.Arg(self.expr(value), keyword, star) for _, keyword, star, value in items)

    def _subscript_elements(self, node: ast.Subscript) -> list[ast.expr]:
        """``x[a, b]`` has two elements (LibCST), ``x[(a, b)]`` one tuple:
        ast gives a tuple for both, told apart by the bracket that opens
        the parenthesised one."""
        s = node.slice
        if type(s) is ast.Tuple and s.elts and not self._parenthesised(s):
            return list(s.elts)
        return [s]

    def _parenthesised(self, node: ast.Tuple) -> bool:
        """The tuple is written in brackets of its own: its text opens with
        a bracket that closes only at its end (``(a, b)``, not ``(a), b``)."""
        if _position(node.elts[0]) == _position(node):
            return False
        if self._lines is None:
            # Lines as ast numbers them (not str.splitlines: a form feed is no line break).
            self._lines = _LINE.findall(self.source)
        text = _segment(self._lines, node)
        if not text.startswith("(") or not text.endswith(")"):
            return False
        depth, quote = 0, ""
        for i, ch in enumerate(text):
            if quote:
                if ch == quote:
                    quote = ""
            elif ch in "'\"":
                quote = ch
            elif ch in "([{":
                depth += 1
            elif ch in ")]}":
                depth -= 1
                if depth == 0:
                    return i == len(text) - 1
        return False

    def _index(self, s: ast.expr) -> ir.Index:
        if type(s) is ast.Slice:
            return ir.Index(None, self._opt(s.lower), self._opt(s.upper), self._opt(s.step))
        return ir.Index(self.expr(s))

    def _opt(self, node: ast.expr | None) -> ir.Expr | None:
        return self.expr(node) if node is not None else None

    def comprehension(self, node) -> ir.Comp:
        gens = []
        for g in node.generators:
            it = self.expr(g.iter)
            target = self._comp_target(g.target)
            ifs = tuple(self.expr(c) for c in g.ifs)
            gens.append(ir.Generator(target, it, ifs))
        if type(node) is ast.DictComp:
            key = self.expr(node.key)
            elt = self.expr(node.value)
            return ir.Comp("dict", tuple(gens), elt, key, node)
        kind = "list" if type(node) is ast.ListComp else "set" if type(node) is ast.SetComp else "gen"
        return ir.Comp(kind, tuple(gens), self.expr(node.elt), None, node)

    def _comp_target(self, node: ast.expr) -> ir.Expr:
        t = type(node)
        if t is ast.Name:
            return ir.Name(node.id, node)
        if t is ast.Tuple or t is ast.List:
            return ir.Seq("tuple", tuple(self._comp_target(_unstarred(e)) for e in node.elts), node)
        if t is ast.Starred:
            return ir.Starred(self._comp_target(node.value), node)
        return self.expr(node)


def _unstarred(e: ast.expr) -> ast.expr:
    return e.value if type(e) is ast.Starred else e  # type: ignore[attr-defined]


def _segment(lines: list[str], node: ast.expr) -> str:
    """The node's source text (ast's offsets count UTF-8 bytes)."""
    first, last = node.lineno - 1, node.end_lineno - 1  # type: ignore[attr-defined]
    if first >= len(lines) or last >= len(lines):
        return ""
    if first == last:
        return lines[first].encode("utf-8")[node.col_offset : node.end_col_offset].decode("utf-8", "replace")  # type: ignore[attr-defined]
    parts = [lines[first].encode("utf-8")[node.col_offset :].decode("utf-8", "replace"), *lines[first + 1 : last]]
    parts.append(lines[last].encode("utf-8")[: node.end_col_offset].decode("utf-8", "replace"))  # type: ignore[attr-defined]
    return "".join(parts)


def lower(module: ast.Module, source: str) -> ir.ModuleIR:
    return Lowerer(source).module(module)
