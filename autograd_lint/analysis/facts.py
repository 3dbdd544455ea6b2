"""What the analysis can know about a value: the facts of the abstract
interpretation (plain, hashable data)."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

import libcst as cst


class GradMode(Enum):
    ON = "on"
    OFF = "off"
    MAYBE = "maybe"  # e.g. torch.set_grad_enabled(is_train): on in some runs


@dataclass(frozen=True, slots=True)
class Graph:
    """Attached to an autograd graph created at ``node`` (a module call, a
    loss, an op on a tensor that requires grad) in function ``fn``."""

    node: cst.CSTNode
    fn: int
    how: str  # "call", "op", "backward" (proven by a later backward)


@dataclass(frozen=True, slots=True)
class LeafTensor:
    """A leaf that requires grad (a parameter): no graph of its own, but any
    op on it builds one. ``fn``: the function that created it (-1: unknown,
    e.g. a module's weight)."""

    node: cst.CSTNode
    fn: int = -1


@dataclass(frozen=True, slots=True)
class TensorValue:
    """Known to be a tensor (made by a torch factory or op), with or without
    grad: an in-place write to it is a write to tensor memory."""


TENSOR = TensorValue()


@dataclass(frozen=True, slots=True)
class ArgGrad:
    """A parameter that callers in this file pass tensors with a graph."""

    fn: int


@dataclass(frozen=True, slots=True)
class Param:
    """The value of parameter ``index`` of function ``fn`` (symbolic: used to
    summarise what a function does with its arguments)."""

    fn: int
    index: int


@dataclass(frozen=True, slots=True)
class HookArg:
    """An input or output that a forward hook receives."""

    fn: int


@dataclass(frozen=True, slots=True)
class ModuleValue:
    """An ``nn.Module`` instance. ``parametric``: calling it builds a graph
    even from inputs that do not require grad (it owns parameters)."""

    parametric: bool
    qual: str | None = None  # e.g. "torch.nn.ReLU", to look up what it saves
    inplace: bool = False  # built with inplace=True: writes its input


@dataclass(frozen=True, slots=True)
class Saved:
    """Saved for backward by the op at ``node`` (``op``: its ledger name):
    writing this tensor in place before that backward breaks it."""

    node: cst.CSTNode
    op: str
    fn: int
    result: bool = False  # saved as the op's output (else as one of its inputs)


@dataclass(frozen=True, slots=True)
class Instance:
    """An instance of a class defined in this file."""

    cls: str


@dataclass(frozen=True, slots=True)
class GradContext:
    """A grad-mode context manager (``torch.no_grad()`` ...); ``source``:
    its qualified name."""

    mode: GradMode
    source: str = ""


@dataclass(frozen=True, slots=True)
class Optimizer:
    pass


Fact = Graph | LeafTensor | TensorValue | ArgGrad | Param | HookArg | ModuleValue | Instance | GradContext | Optimizer | Saved

NOTHING: frozenset = frozenset()
OPTIMIZER = Optimizer()


def tensorish(facts: frozenset) -> bool:
    """Known to hold a tensor (with or without grad)."""
    return any(type(f) in (TensorValue, Graph, HookArg, ArgGrad, LeafTensor, Saved) for f in facts)
