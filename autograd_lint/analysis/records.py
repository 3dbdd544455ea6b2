"""The records runs leave on their module's ``Program`` (call sites, the
facts of each loop, hook registrations, the flow node of a call's result)
and the context a run keeps of the loop it is in. Plain classes of their
own, below both ``Program`` and ``Run``, so that each imports them without
importing the other."""

from __future__ import annotations

from dataclasses import dataclass, field

from autograd_lint.analysis import ir
from autograd_lint.analysis.state import Frame
from autograd_lint.analysis.values import GradMode, Value


EMPTY: frozenset = frozenset()


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
    # It iterates over a model's own structure, its parameters
    # (`named_parameters()`) or its layers (`for layer in self.flows`): one
    # step's per-parameter or per-layer work (a gradient each,
    # `autograd.grad(kl, p)`; a log-determinant summed over the flow's
    # layers), not a loop over data or steps.
    over_model: bool = False


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
    looped: bool = False  # made in a loop (not a comprehension): once per iteration


@dataclass
class HookInfo:
    fn: ir.Function
    owner: ir.Function
    args: frozenset[int]  # parameter indexes receiving attached tensors
    # The registering function removes the hook before it returns
    # (`h = m.register_forward_hook(f)` ... `h.remove()`): the hook runs
    # within that call only.
    scoped: bool = False


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


def reads_loop_items(loops: list[_LoopContext], sources: frozenset) -> bool:
    """``sources`` read what a loop (not a comprehension building the
    batches) reads from its items: a batch."""
    return any(not lc.facts.comprehension and not lc.items.isdisjoint(sources) for lc in loops)
