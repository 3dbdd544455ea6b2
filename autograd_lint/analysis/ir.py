"""The intermediate form the one pass over a module produces.

Each function becomes a small tree of statements that keep only what the
analyses need (bindings, container stores, accumulations, backward calls,
returns, loops, branches, grad-mode contexts), each pointing back at its
syntax node. Every analysis then runs over this form, never over the syntax
tree again. Names are kept as written (``x``, ``self.net``); qualification and
scope resolution happen later, once the whole module has been seen.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from enum import IntEnum
from typing import Union

import libcst as cst


class Flow(IntEnum):
    """How a name's value reaches an expression's value."""

    ACCESS = 0  # the same object, or an attribute/element of it (survives no_grad)
    OP = 1  # the result of an operation on it (a new tensor; none under no_grad)
    WEAK = 2  # passed to something unknown: counts for "is it used", not for "is it attached"


@dataclass(frozen=True, slots=True)
class Ref:
    path: str  # "loss", "self.outputs"
    flow: Flow


@dataclass(frozen=True, slots=True)
class Leaf:
    """A new tensor created with ``requires_grad=True`` (or a Parameter)."""

    node: cst.CSTNode


@dataclass(slots=True, eq=False)
class Call:
    node: cst.Call
    callee: "Val"  # value of the callee expression (a module instance, a function...)
    callee_path: str | None  # "model", "self.net", "F.relu", "torch.stack"
    method: str | None  # for ``recv.meth(...)``: "meth"
    receiver: "Val | None"
    args: tuple["Val", ...]
    kwargs: tuple[tuple[str, "Val"], ...]
    true_kwargs: frozenset[str]  # keyword arguments given as the literal True
    false_kwargs: frozenset[str]
    has_star: bool = False
    op: str | None = None  # "operator.mul" for `a * b`
    # The tensors a mutation would write, as paths (through views): the
    # receiver (`y[:, 0].zero_()` -> "y"), the positional arguments, `out=`.
    recv_root: str | None = None
    recv_via: str = ""  # the receiver goes through `.data` / `.detach()`
    arg_roots: tuple = ()  # views that an op would save (see build.saved_root)
    out_root: str | None = None
    arg0_write: str | None = None  # what an in-place op on argument 0 writes
    recv_saved: str | None = None  # the receiver, when an op saves it


@dataclass(frozen=True, slots=True)
class Drop:
    """A value computed only to be cut (`model(x).item()`, `f(x) == y`): its
    calls still run (a model call, an in-place write), its graph does not
    flow on."""

    val: tuple


Atom = Union[Ref, Leaf, Call, Drop]
Val = tuple[Atom, ...]
CUT: Val = ()


_ids = itertools.count()


@dataclass(eq=False)
class Loop:
    node: cst.CSTNode
    # Paths bound, or cleared, anywhere in the loop body: a container bound
    # there is re-created every iteration.
    rebinds: set[str] = field(default_factory=set)
    # The body runs backward/an optimizer step itself: a training loop.
    steps: bool = False
    # Paths that stand for the loop's items (its target; for a
    # comprehension, what it iterates over).
    targets: set[str] = field(default_factory=set)
    # An item is fed to a module or a helper: a loop over data (batches),
    # not over layers or adapters.
    data: bool = False
    entry_branch: int = 0  # the builder's branch depth where the loop starts
    iter_path: str | None = None  # what a for loop iterates over (`val_loader`)
    id: int = field(default_factory=lambda: next(_ids))


# -- statements ---------------------------------------------------------------


@dataclass(eq=False, slots=True)
class Bind:
    path: str | None  # None: a target we do not track (a[i].x = ...)
    val: Val
    node: cst.CSTNode
    loops: tuple[Loop, ...]
    inplace: bool = False  # `x += v`: a tensor stays the same object


@dataclass(eq=False, slots=True)
class Store:
    """``c.append(v)``, ``c[k] = v``, ``c.setdefault(k, v)``, ``c.add(v)``..."""

    container: str
    val: Val
    node: cst.CSTNode  # the call or the assignment: where a finding points
    value_node: cst.CSTNode  # the stored expression
    loops: tuple[Loop, ...]
    how: str  # "append", "subscript", ...
    attr_assign: bool = False  # ``self.x = v`` (only hooks/forward care)
    conditional: bool = False  # inside an if/else branch


@dataclass(eq=False, slots=True)
class Accum:
    """``t += v``, ``t = t + v``, ``d[k] += v``."""

    target: str
    val: Val
    node: cst.CSTNode
    value_node: cst.CSTNode
    loops: tuple[Loop, ...]


@dataclass(eq=False, slots=True)
class Eval:
    """An expression evaluated for its effects (calls)."""

    val: Val
    node: cst.CSTNode
    loops: tuple[Loop, ...]


@dataclass(eq=False, slots=True)
class Return:
    val: Val
    node: cst.CSTNode


@dataclass(eq=False, slots=True)
class Mutate:
    """An in-place write to the tensor ``path`` holds: ``y += 1``,
    ``y[:, 0] = 0`` (calls like ``y.mul_(2)`` are recognised when the call
    is interpreted)."""

    path: str
    node: cst.CSTNode
    how: str  # "+=", "[...] =", ...
    via: str  # "", "data", "detach" (see build.view_root)
    loops: tuple[Loop, ...]
    val: Val = ()  # the right-hand side, evaluated before the write


@dataclass(eq=False, slots=True)
class If:
    body: list
    orelse: list


@dataclass(eq=False, slots=True)
class LoopStmt:
    loop: Loop
    body: list
    orelse: list


@dataclass(eq=False, slots=True)
class With:
    contexts: tuple[Val, ...]  # the context manager expressions
    body: list
    node: cst.CSTNode | None = None


Stmt = Union[Bind, Store, Accum, Eval, Mutate, Return, If, LoopStmt, With]


@dataclass(eq=False)
class Function:
    name: str
    node: cst.CSTNode  # FunctionDef or Lambda; the module for "<module>"
    params: list[str]
    parent: "Function | None"
    cls: "Class | None"  # set for methods
    body: list = field(default_factory=list)
    decorators: list[Val] = field(default_factory=list)
    decorator_paths: list[str] = field(default_factory=list)
    annotations: dict[str, str] = field(default_factory=dict)  # param -> dotted annotation
    assigned: set[str] = field(default_factory=set)
    globals: set[str] = field(default_factory=set)
    nonlocals: set[str] = field(default_factory=set)
    # Paths that are receivers of calls only modules have (.parameters()...).
    module_evidence: set[str] = field(default_factory=set)
    loops: list[Loop] = field(default_factory=list)
    # Puts a module in eval mode (`model.eval()`): evaluation code, whose
    # results nobody backpropagates.
    calls_eval: bool = False
    is_module_level: bool = False
    id: int = field(default_factory=lambda: next(_ids))

    @property
    def self_name(self) -> str | None:
        if self.cls is not None and self.params and not self.is_static:
            return self.params[0]
        return None

    is_static: bool = False

    def qualname(self) -> str:
        if self.cls is not None:
            return f"{self.cls.name}.{self.name}"
        return self.name


@dataclass(eq=False)
class Class:
    name: str
    node: cst.ClassDef
    base_paths: list[str]
    methods: dict[str, Function] = field(default_factory=dict)
    module_evidence: set[str] = field(default_factory=set)


@dataclass(frozen=True, slots=True)
class HookRegistration:
    """``x.register_forward_hook(fn)`` and friends."""

    kind: str  # "forward", "forward_pre", "backward", "full_backward", "tensor"
    fn_node: cst.CSTNode
    owner: Function  # where the registration happens
    with_kwargs: bool = False


@dataclass(frozen=True, slots=True)
class ZeroGrad:
    """A ``x.zero_grad(...)`` call: ``set_to_none`` is True/False as written,
    None when left to the default."""

    node: cst.Call
    fn: Function
    set_to_none: bool | None


@dataclass(frozen=True, slots=True)
class GradZeroing:
    """Zeroing a gradient by hand: ``p.grad.zero_()``, ``p.grad.fill_(0)``."""

    node: cst.Call
    fn: Function
    target: str  # the gradient expression, e.g. "p.grad"


@dataclass(eq=False)
class ModuleIR:
    functions: list[Function]
    classes: dict[str, Class]
    top: Function  # module-level statements
    hooks: list[HookRegistration]
    # Nested/inner defs and lambdas by their node, for hook resolution.
    by_node: dict[cst.CSTNode, Function]
    zero_grads: list[ZeroGrad] = field(default_factory=list)
    grad_zeroings: list[GradZeroing] = field(default_factory=list)
