"""The lowered form of a module that the interpreter runs over.

A small, regular tree: statements and expressions keep only what matters
for evaluation (no whitespace, no formatting, one node type per concept),
each pointing back at the LibCST node it came from so that findings and
fixes can be placed. Scopes are resolved here: every function knows its
local, global and nonlocal names. What a statement *means* (a store into a
container, an accumulation, an in-place write) is decided by the
interpreter from the values involved, never here.
"""

from __future__ import annotations

import dataclasses
import itertools
from dataclasses import dataclass, field
from typing import Iterator, Union

import libcst as cst

# -- expressions --------------------------------------------------------------


@dataclass(eq=False, slots=True)
class Name:
    id: str
    node: cst.CSTNode = field(repr=False)


@dataclass(eq=False, slots=True)
class Attr:
    value: "Expr"
    attr: str
    node: cst.CSTNode = field(repr=False)


@dataclass(eq=False, slots=True)
class Index:
    """One element of a subscript: an index expression, or a slice."""

    value: "Expr | None"  # None for a slice
    lower: "Expr | None" = None
    upper: "Expr | None" = None
    step: "Expr | None" = None

    @property
    def is_slice(self) -> bool:
        return self.value is None


@dataclass(eq=False, slots=True)
class Subscript:
    value: "Expr"
    index: tuple[Index, ...]
    node: cst.CSTNode = field(repr=False)

    @property
    def key(self) -> "Expr | None":
        """The single index expression (``d[k]``), None for slices/tuples."""
        if len(self.index) == 1 and not self.index[0].is_slice:
            return self.index[0].value
        return None


@dataclass(eq=False, slots=True)
class Arg:
    value: "Expr"
    keyword: str | None = None
    star: str = ""  # "", "*" or "**"


@dataclass(eq=False, slots=True)
class Call:
    func: "Expr"
    args: tuple[Arg, ...]
    node: cst.Call = field(repr=False)

    def positional(self) -> list["Expr"]:
        return [a.value for a in self.args if a.keyword is None and not a.star]

    def keyword(self, name: str) -> "Expr | None":
        for a in self.args:
            if a.keyword == name:
                return a.value
        return None

    @property
    def has_star(self) -> bool:
        return any(a.star for a in self.args)


@dataclass(eq=False, slots=True)
class BinOp:
    op: str  # "add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul", "and", "or", "xor", "lshift", "rshift"
    left: "Expr"
    right: "Expr"
    node: cst.CSTNode = field(repr=False)


@dataclass(eq=False, slots=True)
class UnaryOp:
    op: str  # "neg", "pos", "not", "invert"
    operand: "Expr"
    node: cst.CSTNode = field(repr=False)


@dataclass(eq=False, slots=True)
class Compare:
    left: "Expr"
    ops: tuple[str, ...]  # "==", "is", "in", "<", ...
    comparators: tuple["Expr", ...]
    node: cst.CSTNode = field(repr=False)


@dataclass(eq=False, slots=True)
class BoolOp:
    values: tuple["Expr", ...]
    node: cst.CSTNode = field(repr=False)


@dataclass(eq=False, slots=True)
class IfExp:
    test: "Expr"
    body: "Expr"
    orelse: "Expr"
    node: cst.CSTNode = field(repr=False)


@dataclass(eq=False, slots=True)
class Const:
    """A literal. ``kind``: "number", "str", "bytes", "bool", "none",
    "ellipsis"; ``value``: the Python value where it is a plain literal
    (numbers, strings), else None."""

    kind: str
    value: object
    node: cst.CSTNode = field(repr=False)


@dataclass(eq=False, slots=True)
class Seq:
    kind: str  # "tuple", "list", "set"
    elts: tuple["Expr", ...]
    node: cst.CSTNode = field(repr=False)


@dataclass(eq=False, slots=True)
class DictX:
    keys: tuple["Expr | None", ...]  # None: a ``**mapping`` spread
    values: tuple["Expr", ...]
    node: cst.CSTNode = field(repr=False)


@dataclass(eq=False, slots=True)
class Generator:
    target: "Expr"
    iter: "Expr"
    ifs: tuple["Expr", ...]


@dataclass(eq=False, slots=True)
class Comp:
    kind: str  # "list", "set", "dict", "gen"
    generators: tuple[Generator, ...]
    elt: "Expr"  # the value (for a dict comprehension)
    key: "Expr | None"
    node: cst.CSTNode = field(repr=False)


@dataclass(eq=False, slots=True)
class Lambda:
    fn: "Function"
    node: cst.CSTNode = field(repr=False)


@dataclass(eq=False, slots=True)
class FString:
    values: tuple["Expr", ...]
    node: cst.CSTNode = field(repr=False)


@dataclass(eq=False, slots=True)
class Starred:
    value: "Expr"
    node: cst.CSTNode = field(repr=False)


@dataclass(eq=False, slots=True)
class Await:
    value: "Expr"
    node: cst.CSTNode = field(repr=False)


@dataclass(eq=False, slots=True)
class Yield:
    value: "Expr | None"
    node: cst.CSTNode = field(repr=False)
    from_: bool = False


@dataclass(eq=False, slots=True)
class NamedExpr:
    target: Name
    value: "Expr"
    node: cst.CSTNode = field(repr=False)


@dataclass(eq=False, slots=True)
class Opaque:
    """An expression the analysis does not model (its sub-expressions are
    still evaluated for their effects)."""

    parts: tuple["Expr", ...]
    node: cst.CSTNode = field(repr=False)


@dataclass(eq=False, slots=True)
class Evaluated:
    """An operand the interpreter has already evaluated, when it runs a
    statement as the call Python makes for it (``obj[k] = v`` is
    ``obj.__setitem__(k, v)`` on an object whose class defines it):
    ``value`` and ``sources`` as it found them."""

    value: object
    sources: frozenset
    node: cst.CSTNode = field(repr=False)


Expr = Union[
    Name, Attr, Subscript, Call, BinOp, UnaryOp, Compare, BoolOp, IfExp, Const, Seq, DictX, Comp, Lambda, FString,
    Starred, Await, Yield, NamedExpr, Opaque, Evaluated,
]

# -- statements ---------------------------------------------------------------


@dataclass(eq=False, slots=True)
class Assign:
    targets: tuple[Expr, ...]  # Name / Attr / Subscript / Seq / Starred
    value: Expr
    node: cst.CSTNode = field(repr=False)
    annotation: str | None = None  # ``x: torch.Tensor = ...``


@dataclass(eq=False, slots=True)
class AugAssign:
    target: Expr
    op: str  # as BinOp.op
    value: Expr
    node: cst.AugAssign = field(repr=False)


@dataclass(eq=False, slots=True)
class ExprStmt:
    value: Expr
    node: cst.CSTNode = field(repr=False)


@dataclass(eq=False, slots=True)
class Return:
    value: Expr | None
    node: cst.CSTNode = field(repr=False)


@dataclass(eq=False, slots=True)
class If:
    test: Expr
    body: list
    orelse: list
    node: cst.CSTNode = field(repr=False)


@dataclass(eq=False)
class Loop:
    """A ``for``/``while`` loop or a comprehension: what the analyses learn
    about it while running (does it backpropagate, does it feed data to a
    module) lives in the interpreter's loop facts, keyed by this object."""

    node: cst.CSTNode = field(repr=False)
    id: int = field(default_factory=lambda: next(_ids))


@dataclass(eq=False, slots=True)
class For:
    target: Expr
    iter: Expr
    body: list
    orelse: list
    loop: Loop


@dataclass(eq=False, slots=True)
class While:
    test: Expr
    body: list
    orelse: list
    loop: Loop


@dataclass(eq=False, slots=True)
class WithItem:
    context: Expr
    target: Expr | None


@dataclass(eq=False, slots=True)
class With:
    items: tuple[WithItem, ...]
    body: list
    node: cst.CSTNode = field(repr=False)


@dataclass(eq=False, slots=True)
class Handler:
    name: str | None
    body: list


@dataclass(eq=False, slots=True)
class Try:
    body: list
    handlers: tuple[Handler, ...]
    orelse: list
    finalbody: list


@dataclass(eq=False, slots=True)
class Raise:
    value: Expr | None
    node: cst.CSTNode = field(repr=False)


@dataclass(eq=False, slots=True)
class Break:
    node: cst.CSTNode = field(repr=False)


@dataclass(eq=False, slots=True)
class Continue:
    node: cst.CSTNode = field(repr=False)


@dataclass(eq=False, slots=True)
class Delete:
    targets: tuple[Expr, ...]
    node: cst.CSTNode = field(repr=False)


@dataclass(eq=False, slots=True)
class Def:
    """A ``def`` statement: binds ``fn.name`` to the function."""

    fn: "Function"


@dataclass(eq=False, slots=True)
class ClassDef:
    cls: "Class"


@dataclass(eq=False, slots=True)
class ImportName:
    """One name an import binds: ``import a.b as c`` binds ``c`` to module
    ``a.b``; ``from .m import x`` binds ``x`` to name ``x`` of module ``m``
    at relative level 1."""

    local: str
    module: str
    level: int
    name: str | None  # None: the module itself
    node: cst.CSTNode = field(repr=False)


@dataclass(eq=False, slots=True)
class Import:
    names: tuple[ImportName, ...]
    node: cst.CSTNode = field(repr=False)


@dataclass(eq=False, slots=True)
class Match:
    subject: Expr
    cases: tuple[list, ...]
    node: cst.CSTNode = field(repr=False)


Stmt = Union[
    Assign, AugAssign, ExprStmt, Return, If, For, While, With, Try, Raise, Break, Continue, Delete, Def, ClassDef,
    Import, Match,
]

# -- definitions --------------------------------------------------------------

_ids = itertools.count()


@dataclass(eq=False, slots=True)
class Param:
    name: str
    kind: str  # "pos", "vararg", "kwonly", "kwarg"
    default: Expr | None = None
    annotation: str | None = None  # dotted text of a simple annotation


@dataclass(eq=False)
class Function:
    name: str
    node: cst.CSTNode = field(repr=False)  # FunctionDef or Lambda; the Module for "<module>"
    params: tuple[Param, ...] = ()
    parent: "Function | None" = field(default=None, repr=False)  # the enclosing function (None at module level)
    cls: "Class | None" = field(default=None, repr=False)  # the class whose body defines it (a method)
    body: list = field(default_factory=list, repr=False)
    decorators: tuple[Expr, ...] = field(default=(), repr=False)
    # The syntax node of each decorator (where a finding about it points).
    decorator_nodes: tuple[object, ...] = field(default=(), repr=False)
    locals: set[str] = field(default_factory=set, repr=False)
    globals: set[str] = field(default_factory=set, repr=False)
    nonlocals: set[str] = field(default_factory=set, repr=False)
    # What its own body does, gathered while lowering (nested functions
    # have their own): names it calls (`f(...)`, `x.f(...)`), names it reads,
    # names it assigns, method calls by method name.
    called: set[str] = field(default_factory=set, repr=False)
    reads: set[str] = field(default_factory=set, repr=False)
    assigned: set[str] = field(default_factory=set, repr=False)
    method_calls: dict[str, list] = field(default_factory=dict, repr=False)
    name_calls: set[str] = field(default_factory=set, repr=False)  # names it calls (`f(...)`)
    is_lambda: bool = False
    is_module: bool = False
    asserts: bool = False  # its own body has an `assert` statement
    is_generator: bool = False
    is_async: bool = False
    index: int = 0  # position in ModuleIR.functions: stable within a file
    id: int = field(default_factory=lambda: next(_ids))

    @property
    def param_names(self) -> list[str]:
        names = self._param_names
        if names is None:
            names = self._param_names = [p.name for p in self.params]
        return names

    _param_names: list[str] | None = field(default=None, repr=False, compare=False)

    @property
    def qualname(self) -> str:
        # Lambdas are told apart by their place in the module.
        parts = [f"<lambda#{self.index}>" if self.is_lambda else self.name]
        f = self
        while True:
            if f.cls is not None:
                parts.append(f.cls.qualname)
                break
            if f.parent is None or f.parent.is_module:
                break
            f = f.parent
            parts.append(f"{f.name}.<locals>")
        return ".".join(reversed(parts))


@dataclass(eq=False)
class Class:
    name: str
    node: cst.ClassDef = field(repr=False)
    bases: tuple[Expr, ...] = field(repr=False)
    keywords: tuple[Arg, ...] = field(repr=False)
    parent: Function = field(repr=False)  # where the class statement runs
    outer: "Class | None" = field(default=None, repr=False)  # the class whose body defines this one
    body: list = field(default_factory=list, repr=False)  # class-level statements (methods excluded)
    methods: dict[str, Function] = field(default_factory=dict, repr=False)
    decorators: tuple[Expr, ...] = ()
    # The names its body annotates (`loss: torch.Tensor`), in order: a
    # dataclass's fields.
    fields: tuple[str, ...] = ()
    id: int = field(default_factory=lambda: next(_ids))

    @property
    def qualname(self) -> str:
        if self.outer is not None:
            return f"{self.outer.qualname}.{self.name}"
        if self.parent is not None and not self.parent.is_module:
            return f"{self.parent.qualname}.<locals>.{self.name}"
        return self.name


@dataclass(eq=False)
class ModuleIR:
    top: Function  # the module's own statements, as a function
    functions: list[Function]  # every function, lambda and method, in source order (top first)
    classes: list[Class]
    imports: list[ImportName]
    # `from m import *`: the modules whose names come in unnamed (``name`` "*").
    star_imports: list[ImportName] = field(default_factory=list)

    def function_at(self, node: cst.CSTNode) -> Function | None:
        for f in self.functions:
            if f.node is node:
                return f
        return None

    def unlink(self) -> None:
        """Drop the back references (a function's enclosing function and
        class, a class's enclosing function and class, a class's methods):
        without them the IR is a tree, freed by reference counting. Call
        only when nothing reads this IR again."""
        for f in self.functions:
            f.parent = f.cls = None
        for c in self.classes:
            c.parent = c.outer = None  # type: ignore[assignment]
            c.methods = {}


def dotted(e: "Expr | None") -> str | None:
    """``a.b.c`` for a Name/Attr chain, else None."""
    parts = []
    while type(e) is Attr:
        parts.append(e.attr)
        e = e.value
    if type(e) is not Name:
        return None
    parts.append(e.id)
    return ".".join(reversed(parts))


def bound_names(target: "Expr") -> set[str]:
    """The plain names an assignment target binds (`a`, `a, *b`)."""
    t = type(target)
    if t is Name:
        return {target.id}  # type: ignore[attr-defined]
    if t is Seq:
        return set().union(*(bound_names(x) for x in target.elts))  # type: ignore[attr-defined]
    if t is Starred:
        return bound_names(target.value)  # type: ignore[attr-defined]
    return set()


def sub_blocks(s: object) -> list[list]:
    """The statement lists nested in a compound statement, in order."""
    t = type(s)
    if t is If:
        return [s.body, s.orelse]  # type: ignore[attr-defined]
    if t is For or t is While:
        return [s.body, s.orelse]  # type: ignore[attr-defined]
    if t is With:
        return [s.body]  # type: ignore[attr-defined]
    if t is Try:
        return [s.body, *(h.body for h in s.handlers), s.orelse, s.finalbody]  # type: ignore[attr-defined]
    if t is Match:
        return list(s.cases)  # type: ignore[attr-defined]
    return []


_CHILD_SLOTS: dict[type, tuple[str, ...]] = {}


def _child_slots(t: type) -> tuple[str, ...]:
    try:
        return _CHILD_SLOTS[t]
    except KeyError:
        names = _CHILD_SLOTS[t] = tuple(n for n in t.__slots__ if n != "node")
        return names


def walk_expr(e: "Expr") -> "list[Expr]":
    """``e`` and every expression inside it (arguments, elements, keys),
    not into lambdas or comprehensions' own scopes' bodies."""
    out: list = []
    stack: list = [e]
    leaves = _LEAVES
    while stack:
        x = stack.pop()
        t = type(x)
        if t is Arg or t is Index or t is Generator:
            stack.extend(getattr(x, n) for n in _child_slots(t))
            continue
        if t is tuple:
            stack.extend(x)
            continue
        if x is None or t in leaves or not hasattr(t, "__slots__"):
            continue
        out.append(x)
        for n in _child_slots(t):
            v = getattr(x, n)
            if v is not None and type(v) not in leaves:
                stack.append(v)
    return out


# (Never expressions themselves, nor holders of any.)
_LEAVES = frozenset({str, bool, int, float, Lambda})


def statements(body: list) -> "Iterator[object]":
    """Every statement of ``body`` and of the blocks nested in it, in order
    (not into nested functions or classes)."""
    stack = list(reversed(body))
    while stack:
        s = stack.pop()
        yield s
        for block in reversed(sub_blocks(s)):
            stack.extend(reversed(block))


def container_root(e: "Expr") -> "Expr":
    """The expression a store's container is reached from: `self.summary`
    of `self.summary['audios'][key]` or of `self.stats.get(k)`."""
    while True:
        if type(e) is Subscript:
            e = e.value  # type: ignore[attr-defined]
        elif type(e) is Call and type(e.func) is Attr:  # type: ignore[attr-defined]
            e = e.func.value  # type: ignore[attr-defined]
        else:
            return e


def statement_holding(fn: "Function", e: "Expr") -> object | None:
    """The statement of ``fn``'s body (nested blocks included) one of whose
    expressions is ``e``."""
    for s in statements(fn.body):
        if any(x is e for x in statement_exprs(s)):
            return s
    return None


_NOT_EXPRESSIONS = frozenset({"node", "body", "orelse", "loop", "handlers", "finalbody", "cases", "id"})


_STATEMENT_FIELDS: dict[type, tuple[str, ...]] = {}


def statement_exprs(s: object) -> "Iterator[Expr]":
    """Every expression of the statement itself (not of its nested blocks)."""
    t = type(s)
    names = _STATEMENT_FIELDS.get(t)
    if names is None:
        if not dataclasses.is_dataclass(s):
            return
        names = _STATEMENT_FIELDS[t] = tuple(f.name for f in dataclasses.fields(s) if f.name not in _NOT_EXPRESSIONS)
    for n in names:
        v = getattr(s, n)
        if v is not None and type(v) not in (str, bool, int):
            yield from walk_expr(v)


def assigned_values(body: list, name: str) -> list[Expr] | None:
    """Every value assigned to the plain name ``name`` in a function body
    (nested blocks included, nested functions not); None if the name is
    also bound another way (a loop target, an augmented assignment, an
    unpacking, a `with ... as`)."""
    out: list[Expr] = []
    for s in body:
        t = type(s)
        if t is Assign:
            for target in s.targets:
                if type(target) is Name and target.id == name:
                    out.append(s.value)
                elif name in bound_names(target):
                    return None
        elif t is AugAssign and type(s.target) is Name and s.target.id == name:
            return None
        elif t is For and name in bound_names(s.target):
            return None
        elif t is With and any(i.target is not None and name in bound_names(i.target) for i in s.items):
            return None
        for sub in sub_blocks(s):
            inner = assigned_values(sub, name)
            if inner is None:
                return None
            out += inner
    return out
