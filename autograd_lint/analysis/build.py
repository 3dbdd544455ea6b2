"""The one pass over a module's syntax tree that produces the IR (ir.py).

A hand-written recursive walk rather than a CSTVisitor: each statement and
expression is visited exactly once, and no metadata (scopes, positions) is
resolved; positions are computed later, only for nodes that become findings.
"""

from __future__ import annotations

import libcst as cst

from autograd_lint.analysis.ir import (
    CUT,
    Drop,
    Accum,
    Bind,
    Call,
    Class,
    Eval,
    Flow,
    Function,
    HookRegistration,
    If,
    Leaf,
    Loop,
    LoopStmt,
    ModuleIR,
    Mutate,
    Ref,
    Return,
    Store,
    Val,
    With,
    ZeroGrad,
    GradZeroing,
)
from autograd_lint.analysis.names import ImportTable, dotted

# Methods whose result never carries a graph.
CUT_METHODS = frozenset(
    """item tolist detach numpy argmax argmin argsort eq ne gt lt ge le long int bool short byte char
    nonzero size dim numel ndimension nelement element_size data_ptr is_contiguous isnan isinf isfinite
    all any count_nonzero equal allclose get_device stride storage_offset tobytes keys __len__ __str__
    __repr__ format startswith endswith split join lower upper strip is_floating_point is_complex
    isclose sign signbit logical_and logical_or logical_not logical_xor bitwise_and bitwise_or
    floor_divide indices""".split()
)
# Attributes whose value never carries a graph.
CUT_ATTRS = frozenset(
    "shape dtype device data grad requires_grad is_leaf grad_fn ndim is_cuda layout names __class__ training indices".split()
)
# Tensor methods whose arguments flow into the result, like binary operators.
TENSOR_BINARY_METHODS = frozenset(
    """add sub mul div matmul mm bmm pow where masked_fill expand_as view_as type_as reshape_as
    addmm addcmul addcdiv lerp maximum minimum dot mv outer cross true_divide subtract multiply
    divide rsub scatter scatter_add index_add index_copy gather""".split()
)
# Store methods: the stored value is the argument at this index.
STORE_METHODS = {"append": 0, "extend": 0, "appendleft": 0, "extendleft": 0, "insert": 1, "setdefault": 1}
# Store methods that need the receiver known to be a set/dict/queue (else
# ``meter.update(loss)`` or ``tensor.add(x)`` would read as a store).
TYPED_STORE_METHODS = {"add": 0, "update": 0, "put": 0, "put_nowait": 0}
CLEAR_METHODS = frozenset({"clear"})
MODULE_EVIDENCE_METHODS = frozenset(
    """parameters named_parameters modules named_modules children named_children register_forward_hook
    register_forward_pre_hook register_full_backward_hook register_backward_hook register_module
    load_state_dict requires_grad_ train eval apply buffers named_buffers""".split()
)
HOOK_METHODS = {
    "register_forward_hook": "forward",
    "register_forward_pre_hook": "forward_pre",
    "register_full_backward_hook": "full_backward",
    "register_backward_hook": "backward",
    "register_full_backward_pre_hook": "full_backward_pre",
}
# Tuple targets of these calls: the second element is indices, not values.
VALUES_INDICES = frozenset({"max", "min", "topk", "sort", "kthvalue", "mode", "median", "cummax", "cummin"})


def _ops(val: Val, flow: Flow) -> Val:
    """The value after an operation: references are demoted to ``flow``."""
    out: list = []
    for a in val:
        if isinstance(a, Ref):
            out.append(a if a.flow >= flow else Ref(a.path, flow))
        else:
            out.append(a)
    return tuple(out)


def _drop(val: Val) -> Val:
    """Cut the value but keep its calls for their effects."""
    calls = tuple(a for a in val if not isinstance(a, Ref))
    return (Drop(calls),) if calls else CUT


def root_path(expr: cst.BaseExpression) -> str | None:
    """The object a store lands in: ``history["loss"]`` -> ``history``,
    ``self.outs[k]`` -> ``self.outs``, ``d.setdefault(k, [])`` -> ``d``."""
    while True:
        if isinstance(expr, cst.Subscript):
            expr = expr.value
        elif isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute):
            expr = expr.func.value
        elif isinstance(expr, cst.Attribute):
            if isinstance(expr.value, cst.Name):
                return f"{expr.value.value}.{expr.attr.value}"
            expr = expr.value
        elif isinstance(expr, cst.Name):
            return expr.value
        else:
            return None


def attr_path(expr: cst.BaseExpression) -> str | None:
    """``x`` or ``obj.attr`` (one level): the paths the analysis tracks."""
    if isinstance(expr, cst.Name):
        return expr.value
    if isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Name):
        return f"{expr.value.value}.{expr.attr.value}"
    return None


# Methods whose result shares storage and version counter with the receiver.
VIEW_METHODS = frozenset(
    """view view_as reshape reshape_as transpose t permute unsqueeze squeeze narrow expand expand_as
    select diagonal flatten unflatten movedim moveaxis swapaxes swapdims unfold split chunk unbind
    as_strided detach real imag T mT H mH""".split()
)
BINARY_OPERATORS = {
    cst.Add: "operator.add",
    cst.Subtract: "operator.sub",
    cst.Multiply: "operator.mul",
    cst.Divide: "operator.truediv",
    cst.FloorDivide: "operator.floordiv",
    cst.Modulo: "operator.mod",
    cst.Power: "operator.pow",
    cst.MatrixMultiply: "operator.matmul",
}


_AUG = {
    cst.AddAssign: "+=",
    cst.SubtractAssign: "-=",
    cst.MultiplyAssign: "*=",
    cst.DivideAssign: "/=",
    cst.PowerAssign: "**=",
    cst.MatrixMultiplyAssign: "@=",
    cst.FloorDivideAssign: "//=",
    cst.ModuloAssign: "%=",
    cst.BitAndAssign: "&=",
    cst.BitOrAssign: "|=",
    cst.BitXorAssign: "^=",
}


def _tensor_index(sub: cst.Subscript) -> bool:
    """`x[:, 0]`, `x[mask > 0]`, `x[..., None]` index a tensor; `x[i]` may
    just as well pick an element of a list or a dict."""
    if len(sub.slice) > 1:
        return True
    el = sub.slice[0].slice
    if isinstance(el, cst.Slice):
        return True
    v = el.value
    if isinstance(v, cst.UnaryOperation):
        return isinstance(v.operator, cst.BitInvert)  # `x[~mask]`; `xs[-1]` is an element
    return isinstance(v, (cst.Comparison, cst.Ellipsis)) or (isinstance(v, cst.Name) and v.value == "None")


def _basic_index(sub: cst.Subscript) -> bool:
    """Basic indexing (slices, integers, None, ...) returns a view; a mask
    or an index tensor returns a copy."""
    for el in sub.slice:
        s = el.slice
        if isinstance(s, cst.Slice):
            continue
        v = s.value
        if isinstance(v, (cst.Integer, cst.Ellipsis)) or (isinstance(v, cst.Name) and v.value == "None"):
            continue
        if isinstance(v, cst.UnaryOperation) and isinstance(v.operator, cst.Minus) and isinstance(v.expression, cst.Integer):
            continue
        return False
    return True


def saved_root(expr: cst.BaseExpression) -> str | None:
    """The tensor (as a path) an argument is a view of, when the op saves it:
    ``x``, ``x[:, 0]``, ``x.view(-1)`` -> x; ``x[mask]`` is a copy -> None."""
    while True:
        if isinstance(expr, cst.Subscript):
            if not _basic_index(expr):
                return None
            expr = expr.value
        elif isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) and expr.func.attr.value in VIEW_METHODS:
            expr = expr.func.value
        elif isinstance(expr, cst.Attribute) and expr.attr.value in ("T", "mT", "H", "mH", "real", "imag"):
            expr = expr.value
        elif isinstance(expr, cst.Attribute) and expr.attr.value in ("grad", "data") or isinstance(expr, cst.Attribute) and expr.attr.value in CUT_ATTRS:
            return None  # `x.shape[1]` is a number, not a view of x
        elif isinstance(expr, (cst.Name, cst.Attribute)):
            return dotted(expr)
        else:
            return None


def view_root(expr: cst.BaseExpression) -> tuple[str | None, str]:
    """The tensor (as a path) whose storage ``expr`` writes through, and how:
    ``""``, ``"data"`` (through ``.data``: autograd does not see it) or
    ``"detach"`` (through ``.detach()``: no leaf check, same version counter).
    ``y[:, 0]`` -> y; ``y.view(-1)`` -> y; ``self.h.data`` -> (self.h,
    "data"); ``y.clone()`` -> None (a copy); ``xs[i]`` -> None unless it goes
    through ``.data`` (an element of a list, as likely as a tensor row)."""
    via = ""
    while True:
        if isinstance(expr, cst.Subscript):
            if not via and not _tensor_index(expr) and (isinstance(expr.value, cst.Name) or attr_path(expr.value)):
                return None, via
            expr = expr.value
        elif isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) and expr.func.attr.value == "detach":
            via = via or "detach"
            expr = expr.func.value
        elif isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) and expr.func.attr.value in VIEW_METHODS:
            expr = expr.func.value
        elif isinstance(expr, cst.Attribute) and expr.attr.value in ("data", "T", "mT", "H", "mH", "real", "imag"):
            if expr.attr.value == "data":
                via = "data"
            expr = expr.value
        elif isinstance(expr, cst.Attribute) and (expr.attr.value == "grad" or expr.attr.value in CUT_ATTRS):
            return None, via  # a gradient buffer or metadata, not the tensor
        elif isinstance(expr, (cst.Name, cst.Attribute)):
            return dotted(expr), via
        else:
            return None, via


def _target_names(target: cst.BaseExpression) -> set[str]:
    if isinstance(target, cst.Name):
        return {target.value}
    if isinstance(target, (cst.Tuple, cst.List)):
        out: set[str] = set()
        for el in target.elements:
            out |= _target_names(el.value)
        return out
    if isinstance(target, cst.StarredElement):
        return _target_names(target.value)
    return set()


def _iter_name(expr: cst.BaseExpression) -> str | None:
    """The data a loop walks: `val_loader` in `for b in tqdm(enumerate(self.val_loader))`."""
    for _ in range(4):
        if isinstance(expr, cst.Call) and expr.args:
            expr = expr.args[0].value
        else:
            break
    d = dotted(expr)
    return d.rsplit(".", 1)[-1] if d else None


def _literal_zero(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, (cst.Integer, cst.Float)) and float(expr.value.replace("_", "")) == 0.0


def _grad_expr(expr: cst.BaseExpression) -> str | None:
    """`p.grad` or `p.grad.data`: a gradient buffer, as text."""
    if isinstance(expr, cst.Attribute) and expr.attr.value == "data":
        expr = expr.value
    if isinstance(expr, cst.Attribute) and expr.attr.value == "grad":
        return dotted(expr) or "…grad"
    return None


def _block(body: cst.BaseSuite) -> list:
    return list(body.body)


class Builder:
    def __init__(self) -> None:
        self.imports = ImportTable()
        self.functions: list[Function] = []
        self.classes: dict[str, Class] = {}
        self.hooks: list[HookRegistration] = []
        self.zero_grads: list[ZeroGrad] = []
        self.grad_zeroings: list[GradZeroing] = []
        self.by_node: dict[cst.CSTNode, Function] = {}
        self.fn: Function = None  # type: ignore[assignment]
        self.loops: tuple[Loop, ...] = ()
        # Comprehension targets -> the value they iterate over.
        self.subst: dict[str, Val] = {}
        # Paths known to hold a dict/set/deque in the current function.
        self.typed: set[str] = set()

    # -- entry ----------------------------------------------------------------

    def build(self, module: cst.Module) -> ModuleIR:
        top = Function("<module>", module, [], None, None, is_module_level=True)
        self.functions.append(top)
        self.fn = top
        top.body = self.stmts(module.body)
        return ModuleIR(self.functions, self.classes, top, self.hooks, self.by_node, self.zero_grads, self.grad_zeroings)

    # -- statements -----------------------------------------------------------

    def stmts(self, nodes) -> list:
        out: list = []
        for node in nodes:
            self.stmt(node, out)
        return out

    def stmt(self, node: cst.CSTNode, out: list) -> None:
        if isinstance(node, cst.SimpleStatementLine):
            for small in node.body:
                self.small(small, out)
        elif isinstance(node, cst.FunctionDef):
            self.fn.assigned.add(node.name.value)
            self.function(node)
        elif isinstance(node, cst.ClassDef):
            self.fn.assigned.add(node.name.value)
            self.klass(node)
        elif isinstance(node, cst.If):
            out.append(Eval(self.expr(node.test), node.test, self.loops))
            orelse: list = []
            self.branch += 1
            if isinstance(node.orelse, cst.If):
                self.stmt(node.orelse, orelse)
            elif isinstance(node.orelse, cst.Else):
                orelse = self.stmts(_block(node.orelse.body))
            self.branch -= 1
            self.branch += 1
            body = self.stmts(_block(node.body))
            self.branch -= 1
            out.append(If(body, orelse))
        elif isinstance(node, (cst.For, cst.While)):
            self.loop(node, out)
        elif isinstance(node, cst.With):
            contexts = []
            for item in node.items:
                v = self.expr(item.item)
                contexts.append(v)
                if item.asname is not None:
                    self.bind_target(item.asname.name, _ops(v, Flow.WEAK), node, out)
            out.append(With(tuple(contexts), self.stmts(_block(node.body)), node))
        elif isinstance(node, (cst.Try, cst.TryStar)):
            out.extend(self.stmts(_block(node.body)))
            branches: list[list] = []
            for h in node.handlers:
                if h.name is not None:
                    self.bind_target(h.name.name, CUT, h, [])
                branches.append(self.stmts(_block(h.body)))
            if node.orelse is not None:
                branches.append(self.stmts(_block(node.orelse.body)))
            for b in branches:
                out.append(If(b, []))
            if node.finalbody is not None:
                out.extend(self.stmts(_block(node.finalbody.body)))
        elif isinstance(node, cst.Match):
            out.append(Eval(self.expr(node.subject), node.subject, self.loops))
            for case in node.cases:
                out.append(If(self.stmts(_block(case.body)), []))
        elif isinstance(node, cst.BaseSmallStatement):
            self.small(node, out)

    def loop(self, node: cst.For | cst.While, out: list) -> None:
        loop = Loop(node)
        loop.entry_branch = self.branch
        self.fn.loops.append(loop)
        body: list = []
        outer = self.loops
        if isinstance(node, cst.For):
            it = self.expr(node.iter)
            self.loops = outer + (loop,)
            self.bind_loop_target(node.target, node.iter, _ops(it, Flow.ACCESS), node, body)
            loop.targets = _target_names(node.target)
            loop.iter_path = _iter_name(node.iter)
        else:
            self.loops = outer + (loop,)
            body.append(Eval(self.expr(node.test), node.test, self.loops))
        body.extend(self.stmts(_block(node.body)))
        self.loops = outer
        orelse = self.stmts(_block(node.orelse.body)) if node.orelse is not None else []
        out.append(LoopStmt(loop, body, orelse))

    def bind_loop_target(self, target: cst.BaseExpression, it: cst.BaseExpression, v: Val, node: cst.CSTNode, out: list) -> None:
        """`for i, x in enumerate(xs)`, `for k, v in d.items()`, `for a, b in
        zip(xs, ys)`: each name gets what it iterates over, not everything."""
        if isinstance(target, (cst.Tuple, cst.List)) and isinstance(it, cst.Call):
            els = [e.value for e in target.elements]
            func = it.func
            name = func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else None
            args = [a.value for a in it.args if a.keyword is None and not a.star]
            if name == "enumerate" and isinstance(func, cst.Name) and len(els) == 2 and args:
                self.bind_target(els[0], CUT, node, out)
                self.bind_loop_target(els[1], args[0], _ops(self.expr(args[0]), Flow.ACCESS), node, out)
                return
            if name == "items" and isinstance(func, cst.Attribute) and len(els) == 2:
                self.bind_target(els[0], CUT, node, out)
                self.bind_target(els[1], v, node, out)
                return
            if name == "zip" and isinstance(func, cst.Name) and len(els) == len(args):
                for el, arg in zip(els, args):
                    self.bind_loop_target(el, arg, _ops(self.expr(arg), Flow.ACCESS), node, out)
                return
        self.bind_target(target, v, node, out)

    def small(self, node: cst.CSTNode, out: list) -> None:
        if isinstance(node, cst.Expr):
            self.expr_stmt(node.value, out)
        elif isinstance(node, cst.Assign):
            self.assign(node, out)
        elif isinstance(node, cst.AnnAssign):
            if node.value is not None:
                v = self.expr(node.value)
                self.assign_one(node.target, node.value, v, node, out)
        elif isinstance(node, cst.AugAssign):
            self.aug_assign(node, out)
        elif isinstance(node, cst.Return):
            out.append(Return(self.expr(node.value) if node.value is not None else CUT, node))
        elif isinstance(node, (cst.Import, cst.ImportFrom)):
            self.imports.add(node)
            if isinstance(node, cst.Import):
                for a in node.names:
                    if a.asname is not None and isinstance(a.asname.name, cst.Name):
                        self.fn.assigned.add(a.asname.name.value)
                    else:
                        self.fn.assigned.add((dotted(a.name) or "").split(".")[0])
            elif not isinstance(node.names, cst.ImportStar):
                for a in node.names:
                    n = a.asname.name if a.asname is not None else a.name
                    if isinstance(n, cst.Name):
                        self.fn.assigned.add(n.value)
        elif isinstance(node, cst.Global):
            self.fn.globals.update(n.name.value for n in node.names)
        elif isinstance(node, cst.Nonlocal):
            self.fn.nonlocals.update(n.name.value for n in node.names)
        elif isinstance(node, cst.Del):
            self.delete(node.target)
        elif isinstance(node, (cst.Raise, cst.Assert)):
            pass

    def delete(self, target: cst.BaseExpression) -> None:
        # `del losses[:]` empties the container like `.clear()`.
        if isinstance(target, cst.Subscript):
            p = root_path(target)
            if p:
                self.mark_rebind(p)
        elif isinstance(target, (cst.Tuple, cst.List)):
            for el in target.elements:
                self.delete(el.value)

    def mark_rebind(self, path: str) -> None:
        # Only an unconditional rebinding re-creates the container every
        # iteration; `if step % n == 0: losses = []` keeps n iterations' worth.
        for loop in self.loops:
            if self.branch == loop.entry_branch:
                loop.rebinds.add(path)

    # -- assignments ------------------------------------------------------------

    def assign(self, node: cst.Assign, out: list) -> None:
        v = self.expr(node.value)
        for t in node.targets:
            self.assign_one(t.target, node.value, v, node, out)

    def assign_one(self, target: cst.BaseExpression, value: cst.BaseExpression, v: Val, node: cst.CSTNode, out: list) -> None:
        # `running = running + loss`: an accumulation, whatever the spelling.
        acc = self._accumulated_operands(target, value)
        if acc is not None:
            path = root_path(target)
            if path is not None:
                out.append(Accum(path, acc[0], node, acc[1], self.loops))
                if isinstance(target, cst.Subscript):
                    return
                if isinstance(target, cst.Name):
                    self.bind_target(target, v, node, out, accumulates=True)
                    return
        if isinstance(target, cst.Subscript):
            mroot, via = view_root(target)
            if mroot is not None:
                out.append(Mutate(mroot, node, "[...] =", via, self.loops, v))
            path = root_path(target)
            if path is not None:
                out.append(Store(path, v, node, value, self.loops, "subscript"))
            return
        if isinstance(target, cst.Attribute) and target.attr.value == "requires_grad" and isinstance(value, cst.Name) and value.value == "True":
            # `x.requires_grad = True` makes x a leaf that requires grad.
            root = attr_path(target.value)
            if root is not None:
                out.append(Bind(root, (Ref(root, Flow.ACCESS), Leaf(node)), node, self.loops))
            return
        if isinstance(target, (cst.Tuple, cst.List)) and isinstance(value, (cst.Tuple, cst.List)) and len(target.elements) == len(value.elements) and not any(isinstance(e, cst.StarredElement) for e in (*target.elements, *value.elements)):
            # `a, b = x, f(x)`: each name gets its own value.
            for t_el, v_el in zip(target.elements, value.elements):
                self.bind_target(t_el.value, self.expr(v_el.value), node, out)
            return
        if isinstance(target, (cst.Tuple, cst.List)) and isinstance(value, cst.Call):
            method = value.func.attr.value if isinstance(value.func, cst.Attribute) else dotted(value.func)
            if method and method.split(".")[-1] in VALUES_INDICES and len(target.elements) == 2:
                self.bind_target(target.elements[0].value, v, node, out)
                self.bind_target(target.elements[1].value, CUT, node, out)
                return
        if isinstance(value, (cst.ListComp, cst.SetComp, cst.DictComp)):
            self.bind_target(target, v, node, out)
            path = attr_path(target)
            if path is not None:
                self.typed.add(path)
                comp_loop = self._last_comp_loop
                if comp_loop is not None:
                    elt = value.value if isinstance(value, cst.DictComp) else value.elt
                    out.append(Store(path, v, value, elt, self.loops + (comp_loop,), "comprehension"))
            return
        if isinstance(value, (cst.Dict, cst.Set)) or (
            isinstance(value, cst.Call) and (dotted(value.func) or "").split(".")[-1] in ("dict", "set", "defaultdict", "OrderedDict", "deque", "Counter", "Queue")
        ):
            p = attr_path(target)
            if p:
                self.typed.add(p)
        self.bind_target(target, v, node, out)

    def _accumulated_operands(self, target: cst.BaseExpression, value: cst.BaseExpression) -> tuple[Val, cst.CSTNode] | None:
        if not isinstance(value, cst.BinaryOperation) or not isinstance(value.operator, (cst.Add, cst.Subtract)):
            return None
        # Flatten a + b + c; the target must be one of the operands.
        operands: list[cst.BaseExpression] = []
        stack = [value]
        while stack:
            e = stack.pop()
            if isinstance(e, cst.BinaryOperation) and isinstance(e.operator, (cst.Add, cst.Subtract)):
                stack.extend((e.right, e.left))
            else:
                operands.append(e)
        rest = [o for o in operands if not o.deep_equals(target)]
        if len(rest) == len(operands) or not rest:
            return None
        val: tuple = ()
        for o in rest:
            val += _ops(self.expr(o), Flow.OP)
        return val, rest[0] if len(rest) == 1 else value

    def aug_assign(self, node: cst.AugAssign, out: list) -> None:
        v = self.expr(node.value)
        target = node.target
        # On a tensor, `y += 1` writes y in place.
        mroot, via = view_root(target)
        if mroot is not None:
            out.append(Mutate(mroot, node, _AUG.get(type(node.operator), "op="), via, self.loops, v))
        path = root_path(target)
        if path is None:
            return
        if isinstance(node.operator, (cst.AddAssign, cst.SubtractAssign)):
            out.append(Accum(path, _ops(v, Flow.OP), node, node.value, self.loops))
        if isinstance(target, cst.Name):
            out.append(Bind(path, (Ref(path, Flow.OP),) + _ops(v, Flow.OP), node, self.loops, inplace=True))

    def bind_target(self, target: cst.BaseExpression, v: Val, node: cst.CSTNode, out: list, accumulates: bool = False) -> None:
        if isinstance(target, cst.Name):
            self.fn.assigned.add(target.value)
            self.typed.discard(target.value)
            # `running = running + loss` extends, it does not re-create.
            if not accumulates:
                self.mark_rebind(target.value)
            out.append(Bind(target.value, v, node, self.loops))
        elif isinstance(target, (cst.Tuple, cst.List)):
            for el in target.elements:
                self.bind_target(el.value, v, node, out)
        elif isinstance(target, cst.StarredElement):
            self.bind_target(target.value, v, node, out)
        elif isinstance(target, cst.Attribute):
            path = attr_path(target)
            if path is not None:
                self.mark_rebind(path)
                self.typed.discard(path)
                out.append(Bind(path, v, node, self.loops))
                # Keeping a value on an object is a store into that object:
                # only hooks and forward() care (AGL103).
                out.append(Store(path, v, node, node.value if isinstance(node, cst.Assign) else target, self.loops, "attribute", attr_assign=True, conditional=self.branch > 0))
            else:
                root = root_path(target)
                if root is not None:
                    out.append(Store(root, v, node, target, self.loops, "attribute", attr_assign=True))
        elif isinstance(target, cst.Subscript):
            root = root_path(target)
            if root is not None:
                out.append(Store(root, v, node, target, self.loops, "subscript"))

    # -- expression statements: stores, clears, hooks ----------------------------

    def expr_stmt(self, value: cst.BaseExpression, out: list) -> None:
        if isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute):
            method = value.func.attr.value
            recv = value.func.value
            container = root_path(recv)
            idx = STORE_METHODS.get(method)
            if idx is None and container is not None and container in self.typed:
                idx = TYPED_STORE_METHODS.get(method)
            args = [a for a in value.args if a.keyword is None]
            if idx is not None and container is not None and len(args) > idx and not args[idx].star:
                v = self.call(value)
                stored = args[idx].value
                out.append(Eval(v, value, self.loops))
                sv = v[0].args[idx] if v and isinstance(v[0], Call) and len(v[0].args) > idx else CUT
                if method in ("extend", "extendleft", "update"):
                    sv = _ops(sv, Flow.ACCESS)
                out.append(Store(container, sv, value, stored, self.loops, method))
                return
            if method in CLEAR_METHODS and container is not None:
                self.mark_rebind(container)
        out.append(Eval(self.expr(value), value, self.loops))

    # -- definitions --------------------------------------------------------------

    def function(self, node: cst.FunctionDef) -> Function:
        params = [p.name.value for p in (*node.params.posonly_params, *node.params.params)]
        if isinstance(node.params.star_arg, cst.Param):
            star = [node.params.star_arg.name.value]
        else:
            star = []
        kwonly = [p.name.value for p in node.params.kwonly_params]
        cls = self._enclosing_class
        fn = Function(node.name.value, node, params + star + kwonly, self.fn if not self.fn.is_module_level else None, cls)
        for p in (*node.params.posonly_params, *node.params.params, *node.params.kwonly_params):
            if p.annotation is not None:
                ann = p.annotation.annotation
                if isinstance(ann, cst.SimpleString):
                    ann = cst.Name(ann.evaluated_value) if ann.evaluated_value.isidentifier() else ann
                path = dotted(ann)
                if path:
                    fn.annotations[p.name.value] = path
        for d in node.decorators:
            dec = d.decorator
            path = dotted(dec.func) if isinstance(dec, cst.Call) else dotted(dec)
            fn.decorator_paths.append(path or "")
            if path in ("staticmethod",):
                fn.is_static = True
        self.functions.append(fn)
        self.by_node[node] = fn
        if cls is not None:
            cls.methods[fn.name] = fn
        saved = (self.fn, self.loops, self.subst, self.typed, self._enclosing_class)
        self.fn, self.loops, self.subst, self.typed = fn, (), {}, set()
        saved_branch, self.branch = self.branch, 0
        self._enclosing_class = None
        fn.assigned.update(fn.params)
        fn.body = self.stmts(_block(node.body))
        self.branch = saved_branch
        self.fn, self.loops, self.subst, self.typed, self._enclosing_class = saved
        return fn

    branch = 0  # depth of if/else branches in the current function
    _enclosing_class: Class | None = None
    _class_fn: Function | None = None
    _last_comp_loop: Loop | None = None

    def klass(self, node: cst.ClassDef) -> None:
        bases = [dotted(b.value) or "" for b in node.bases if b.keyword is None]
        cls = Class(node.name.value, node, bases)
        # A later class of the same name wins, as at run time.
        self.classes[cls.name] = cls
        saved = (self._enclosing_class, self._class_fn)
        self._enclosing_class, self._class_fn = cls, self.fn
        body: list = []
        for stmt in _block(node.body):
            if isinstance(stmt, cst.FunctionDef):
                self.function(stmt)
            elif isinstance(stmt, cst.ClassDef):
                inner_saved = self._enclosing_class
                self.klass(stmt)
                self._enclosing_class = inner_saved
            else:
                # Class-level statements run once: evaluate for calls, keep no binds.
                self.stmt(stmt, body)
        self._enclosing_class, self._class_fn = saved

    # -- expressions --------------------------------------------------------------

    def expr(self, node: cst.BaseExpression | None) -> Val:
        if node is None:
            return CUT
        t = type(node)
        if t is cst.Name:
            name = node.value
            if name in self.subst:
                return self.subst[name]
            if name in ("True", "False", "None"):
                return CUT
            return (Ref(name, Flow.ACCESS),)
        if t is cst.Attribute:
            if node.attr.value in CUT_ATTRS:
                return _drop(self.expr(node.value))
            # `self.net` is tracked as its own path; `out.loss` reads `out`.
            if isinstance(node.value, cst.Name) and self.is_self(node.value.value):
                return (Ref(f"{node.value.value}.{node.attr.value}", Flow.ACCESS),)
            return _ops(self.expr(node.value), Flow.ACCESS)
        if t is cst.Call:
            return self.call(node)
        if t is cst.Subscript:
            v = self.expr(node.value)
            for el in node.slice:
                if isinstance(el.slice, cst.Index):
                    self.expr(el.slice.value)
            return v
        if t is cst.BinaryOperation:
            left, right = self.expr(node.left), self.expr(node.right)
            op = BINARY_OPERATORS.get(type(node.operator))
            if op is None:
                return _ops(left + right, Flow.OP)
            roots = (saved_root(node.left), saved_root(node.right))
            return (Call(node, CUT, None, None, None, (left, right), (), frozenset(), frozenset(), op=op, arg_roots=roots),)
        if t is cst.UnaryOperation:
            v = self.expr(node.expression)
            if isinstance(node.operator, cst.Not):
                return _drop(v)
            if isinstance(node.operator, cst.Minus):
                return (Call(node, CUT, None, None, None, (v,), (), frozenset(), frozenset(), op="operator.neg", arg_roots=(saved_root(node.expression),)),)
            return _ops(v, Flow.OP)
        if t is cst.BooleanOperation:
            return self.expr(node.left) + self.expr(node.right)
        if t is cst.Comparison:
            v = self.expr(node.left)
            for c in node.comparisons:
                v += self.expr(c.comparator)
            return _drop(v)
        if t is cst.IfExp:
            self.expr(node.test)
            return self.expr(node.body) + self.expr(node.orelse)
        if t in (cst.Tuple, cst.List, cst.Set):
            out: tuple = ()
            for el in node.elements:
                out += self.expr(el.value)
            return out
        if t is cst.Dict:
            out = ()
            for el in node.elements:
                if isinstance(el, cst.DictElement):
                    self.expr(el.key)
                out += self.expr(el.value)
            return out
        if t in (cst.ListComp, cst.SetComp, cst.GeneratorExp, cst.DictComp):
            return self.comprehension(node)
        if t is cst.Lambda:
            self.lambda_(node)
            return CUT
        if t is cst.Await:
            return self.expr(node.expression)
        if t is cst.NamedExpr:
            v = self.expr(node.value)
            if isinstance(node.target, cst.Name):
                self.fn.assigned.add(node.target.value)
            return v
        if t in (cst.Yield,):
            v = self.expr(node.value) if isinstance(node.value, cst.BaseExpression) else CUT
            return v
        if t is cst.StarredElement:
            return self.expr(node.value)
        if t is cst.FormattedString:
            v: tuple = ()
            for part in node.parts:
                if isinstance(part, cst.FormattedStringExpression):
                    v += self.expr(part.expression)
            return _drop(v)
        return CUT

    def is_self(self, name: str) -> bool:
        """Is ``name`` the ``self`` of the method we are in (or that a nested
        function or lambda closes over)?"""
        if name in self.subst:
            return False
        fn: Function | None = self.fn
        while fn is not None:
            if fn.cls is not None:
                return fn.self_name == name
            if name in fn.assigned:
                return False
            fn = fn.parent
        return False

    def comprehension(self, node) -> Val:
        saved = dict(self.subst)
        loop = Loop(node)
        loop.entry_branch = self.branch
        self.fn.loops.append(loop)
        for_in = node.for_in
        while for_in is not None:
            it = self.expr(for_in.iter)
            loop.targets |= {a.path for a in it if isinstance(a, Ref)}
            self._subst_target(for_in.target, _ops(it, Flow.ACCESS))
            for cond in for_in.ifs:
                self.expr(cond.test)
            for_in = for_in.inner_for_in
        outer = self.loops
        self.loops = outer + (loop,)
        if isinstance(node, cst.DictComp):
            self.expr(node.key)
            v = self.expr(node.value)
        else:
            v = self.expr(node.elt)
        self.loops = outer
        self.subst = saved
        self._last_comp_loop = loop
        return v

    def _subst_target(self, target: cst.BaseExpression, v: Val) -> None:
        if isinstance(target, cst.Name):
            self.subst[target.value] = v
        elif isinstance(target, (cst.Tuple, cst.List)):
            for el in target.elements:
                self._subst_target(el.value, v)

    def lambda_(self, node: cst.Lambda) -> Function:
        params = [p.name.value for p in (*node.params.posonly_params, *node.params.params)]
        fn = Function("<lambda>", node, params, self.fn if not self.fn.is_module_level else None, None)
        self.functions.append(fn)
        self.by_node[node] = fn
        saved = (self.fn, self.loops, self.subst, self.typed)
        self.fn, self.loops, self.subst, self.typed = fn, (), {}, set()
        fn.assigned.update(params)
        body: list = []
        self.expr_stmt(node.body, body)
        # The lambda's value is its body's value (None for `outs.append(o)`).
        b = node.body
        stores = isinstance(b, cst.Call) and isinstance(b.func, cst.Attribute) and (b.func.attr.value in STORE_METHODS or b.func.attr.value in TYPED_STORE_METHODS)
        body.append(Return(CUT if stores else self.expr(b), node))
        fn.body = body
        self.fn, self.loops, self.subst, self.typed = saved
        return fn

    def call(self, node: cst.Call) -> Val:
        func = node.func
        method = None
        receiver: Val | None = None
        if isinstance(func, cst.Attribute):
            method = func.attr.value
            receiver = self.expr(func.value)
            if isinstance(func.value, cst.Name) and self.is_self(func.value.value):
                callee: Val = (Ref(f"{func.value.value}.{method}", Flow.ACCESS),)
            else:
                callee = receiver
            recv_path = attr_path(func.value) or root_path(func.value)
            if recv_path is not None:
                if method in MODULE_EVIDENCE_METHODS:
                    self._module_evidence(recv_path)

            if method == "zero_grad":
                stn = None
                for a in node.args:
                    if (a.keyword is None or a.keyword.value == "set_to_none") and isinstance(a.value, cst.Name) and a.value.value in ("True", "False"):
                        stn = a.value.value == "True"
                if not any(a.keyword is not None and a.keyword.value != "set_to_none" for a in node.args) and (stn is not None or not node.args):
                    self.zero_grads.append(ZeroGrad(node, self.fn, stn))
            grad = _grad_expr(func.value)
            if grad is not None and (
                method == "zero_"
                or (method in ("fill_", "mul_") and node.args and _literal_zero(node.args[0].value))
            ):
                self.grad_zeroings.append(GradZeroing(node, self.fn, grad))
            if (method == "eval" and not node.args) or (
                method == "train" and len(node.args) == 1 and isinstance(node.args[0].value, cst.Name) and node.args[0].value.value == "False"
            ):
                self.fn.calls_eval = True
            if method in HOOK_METHODS and node.args:
                with_kwargs = any(a.keyword is not None and a.keyword.value == "with_kwargs" and isinstance(a.value, cst.Name) and a.value.value == "True" for a in node.args)
                self.hooks.append(HookRegistration(HOOK_METHODS[method], node.args[0].value, self.fn, with_kwargs))
        else:
            callee = self.expr(func)
        args: list[Val] = []
        kwargs: list[tuple[str, Val]] = []
        true_kw: set[str] = set()
        false_kw: set[str] = set()
        has_star = False
        for a in node.args:
            v = self.expr(a.value)
            if a.star:
                has_star = True
            if a.keyword is not None:
                kwargs.append((a.keyword.value, v))
                if isinstance(a.value, cst.Name) and a.value.value in ("True", "False"):
                    (true_kw if a.value.value == "True" else false_kw).add(a.keyword.value)
            else:
                args.append(v)
        # `.detach()` carries no graph but shares the version counter: kept
        # as a call so in-place writes through it are still seen.
        if method in CUT_METHODS and method not in ("indices", "detach"):
            return _drop((receiver or ()) + tuple(a for v in args for a in v))
        path = dotted(func)
        if path is not None and path.split(".")[-1] in ("Parameter",) and "requires_grad" not in false_kw:
            return (Leaf(node),)
        recv_root, via = view_root(func.value) if isinstance(func, cst.Attribute) else (None, "")
        out_root = None
        for a in node.args:
            if a.keyword is not None and a.keyword.value == "out":
                out_root = view_root(a.value)[0]
        return (
            Call(
                node,
                callee,
                path,
                method,
                receiver,
                tuple(args),
                tuple(kwargs),
                frozenset(true_kw),
                frozenset(false_kw),
                has_star,
                recv_root=recv_root,
                recv_via=via,
                arg_roots=tuple(saved_root(a.value) for a in node.args if a.keyword is None and not a.star),
                arg0_write=view_root(node.args[0].value)[0] if node.args and node.args[0].keyword is None else None,
                recv_saved=saved_root(func.value) if isinstance(func, cst.Attribute) else None,
                out_root=out_root,
            ),
        )

    def _module_evidence(self, path: str) -> None:
        fn = self.fn
        while fn is not None:
            fn.module_evidence.add(path)
            if fn.cls is not None and "." in path:
                fn.cls.module_evidence.add(path.split(".", 1)[1])
            fn = fn.parent


def build_ir(module: cst.Module) -> tuple[ModuleIR, ImportTable]:
    b = Builder()
    ir = b.build(module)
    return ir, b.imports
