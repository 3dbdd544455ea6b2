"""What lowering records besides the tree, the same for LibCST's tree
(lower.py) and CPython's (lower_ast.py): the module's functions and classes
in source order, its imports, and each function's scope (its locals; a
class body's bindings are not the enclosing function's)."""

from __future__ import annotations

from typing import Callable

from autograd_lint.analysis import ir


class ScopeRecorder:
    """The base of both lowerers: ``fn`` is the function whose body is
    being lowered, ``cls`` the class whose body is (None in a function)."""

    def __init__(self) -> None:
        self.functions: list[ir.Function] = []
        self.classes: list[ir.Class] = []
        self.imports: list[ir.ImportName] = []
        self.star_imports: list[ir.ImportName] = []
        self.fn: ir.Function = None  # type: ignore[assignment]
        self.cls: ir.Class | None = None

    def module_ir(self, node: object, lower_body: Callable[[], list]) -> ir.ModuleIR:
        top = ir.Function("<module>", node, (), None, None, is_module=True)
        self._add_function(top)
        self.fn = top
        top.body = lower_body()
        return ir.ModuleIR(top, self.functions, self.classes, self.imports, self.star_imports)

    def star_import(self, module: str, level: int, node: object) -> None:
        """``from module import *`` (only at module level is it Python)."""
        self.star_imports.append(ir.ImportName("*", module, level, "*", node))  # type: ignore[arg-type]

    def _add_function(self, fn: ir.Function) -> None:
        fn.index = len(self.functions)
        self.functions.append(fn)

    def bind(self, name: str) -> None:
        self.fn.locals.add(name)

    def assign(self, name: str) -> str:
        """``name`` as an assignment target: a local the function assigns
        (returned, for the target's IR node)."""
        self.bind(name)
        self.fn.assigned.add(name)
        return name

    def call(self, call: ir.Call) -> ir.Call:
        """Record what ``call`` calls: a name, or a method by its name."""
        func = call.func
        if type(func) is ir.Name:
            self.fn.called.add(func.id)
            self.fn.name_calls.add(func.id)
        elif type(func) is ir.Attr:
            self.fn.called.add(func.attr)
            self.fn.method_calls.setdefault(func.attr, []).append(call)
        return call

    def function_body(self, fn: ir.Function, lower_body: Callable[[], list]) -> ir.Function:
        """Record ``fn`` (a method of the class being lowered, unless a
        lambda) and lower its body in its own scope."""
        self._add_function(fn)
        if self.cls is not None and not fn.is_lambda:
            self.cls.methods[fn.name] = fn
        saved = (self.fn, self.cls)
        self.fn, self.cls = fn, None
        fn.locals.update(p.name for p in fn.params)
        fn.body = lower_body()
        self.fn, self.cls = saved
        return fn

    def class_body(self, cls: ir.Class, lower_body: Callable[[], list]) -> ir.Class:
        """Record ``cls`` and lower its body: class-level statements run
        once, in the class's own namespace, so their bindings are not the
        enclosing function's locals."""
        self.classes.append(cls)
        saved = self.cls
        self.cls = cls
        saved_locals = self.fn.locals
        self.fn.locals = set(saved_locals)
        cls.body = lower_body()
        self.fn.locals = saved_locals
        self.cls = saved
        return cls
