"""The analysis's plain data: the faster constructors (``slotted``) build
what the dataclasses' own ``__init__`` builds, and a summary's export keeps
every field of every fact but its LibCST node."""

from __future__ import annotations

import dataclasses
import pickle
from dataclasses import dataclass, field

import pytest

from autograd_lint.analysis import observer, outcome, resolve, summaries, values
from autograd_lint.analysis.summaries import exported
from autograd_lint.analysis.values import (
    CallStep,
    Container,
    FunctionObj,
    GradMode,
    Graph,
    Leaf,
    MultiView,
    OptimizerKind,
    ParamRoot,
    Ref,
    Saved,
    Sym,
)
from autograd_lint.slotted import fast_init

NODE = object()  # stands for a LibCST node


@dataclass(frozen=True, slots=True)
class _Sample:
    a: int
    b: str = "b"
    c: list = field(default_factory=list)
    d: int = field(default=7, init=False, compare=False)


@dataclass(frozen=True, slots=True)
class _Child(_Sample):
    e: tuple = ()


def _built_both_ways(cls, *args, **kwargs):
    init = fast_init(cls)
    assert init is not None
    plain = cls(*args, **kwargs)
    fast = object.__new__(cls)
    init(fast, *args, **kwargs)
    return plain, fast


@pytest.mark.parametrize(
    "args, kwargs",
    [((1,), {}), ((1, "x"), {}), ((1,), {"c": [2]}), ((), {"a": 3, "b": "y", "c": [4]})],
)
def test_the_fast_init_builds_what_the_dataclass_builds(args, kwargs) -> None:
    plain, fast = _built_both_ways(_Sample, *args, **kwargs)
    assert plain == fast
    assert [getattr(fast, f.name) for f in dataclasses.fields(_Sample)] == [getattr(plain, f.name) for f in dataclasses.fields(_Sample)]
    plain, fast = _built_both_ways(_Child, *args, **kwargs)
    assert plain == fast and fast.d == 7


def test_the_fast_init_gives_each_factory_default_its_own_object() -> None:
    init = fast_init(_Sample)
    one, two = object.__new__(_Sample), object.__new__(_Sample)
    init(one, 1)
    init(two, 1)
    assert one.c == [] and one.c is not two.c


def test_the_fast_init_refuses_what_it_cannot_build() -> None:
    @dataclass(frozen=True)
    class NoSlots:
        a: int

    @dataclass(frozen=True, slots=True, kw_only=True)
    class KeywordOnly:
        a: int

    assert fast_init(NoSlots) is None
    assert fast_init(KeywordOnly) is None
    with pytest.raises(TypeError):
        fast_init(_Sample)(object.__new__(_Sample))  # `a` is required, as in the dataclass


@pytest.mark.parametrize("module", [values, summaries, resolve, outcome, observer])
def test_every_frozen_slotted_class_of_the_analysis_has_the_fast_init(module) -> None:
    classes = [c for c in vars(module).values() if isinstance(c, type) and c.__module__ == module.__name__ and dataclasses.is_dataclass(c)]
    frozen = [c for c in classes if c.__dataclass_params__.frozen and "__slots__" in c.__dict__]
    assert frozen
    for c in frozen:
        assert "_FACTORY" in c.__init__.__globals__, c  # built by slotted.fast_init
        assert c.__init__.__qualname__ == f"{c.__qualname__}.__init__"


def test_facts_survive_a_pickle_round_trip() -> None:
    sym = Sym(ParamRoot(0, 1), (CallStep((frozenset({Graph(None, 2, "call")}),), (("k", frozenset()),), None, (("inplace", True),)),))
    for fact in [sym, Saved(None, "mul", 3, True, (sym,)), Container("dict", (("loss", frozenset({Graph(None)})),), frozenset())]:
        assert pickle.loads(pickle.dumps(fact)) == fact


def test_the_export_drops_only_the_nodes() -> None:
    ref = Ref("m.py", "f")
    sym = Sym(ParamRoot(0, 1), (CallStep((frozenset({Graph(NODE, 2, "call")}),), (("k", frozenset({Leaf(NODE, 4)})),), NODE, (("inplace", True),)),))
    facts = frozenset(
        {
            Graph(NODE, 5, "call"),
            Saved(NODE, "mul", 3, True, (sym,)),
            Leaf(NODE, 6),
            MultiView(NODE, 7, "split"),
            OptimizerKind(NODE),
            Container("dict", (("loss", frozenset({Graph(NODE, 8, "op")})),), frozenset({Leaf(NODE, 9)})),
            FunctionObj(ref, GradMode.OFF, frozenset({Graph(NODE, 10, "leaf")})),
            sym,
        }
    )
    out = exported(facts)

    def shown(f) -> object:
        """The fact as compared: every field, its node as None."""
        if isinstance(f, frozenset):
            return frozenset(shown(x) for x in f)
        if isinstance(f, tuple):
            return tuple(shown(x) for x in f)
        if dataclasses.is_dataclass(f):
            return (type(f), tuple(None if x.name == "node" else shown(getattr(f, x.name)) for x in dataclasses.fields(f) if x.compare))
        return f

    assert shown(out) == shown(facts)
    assert not _holds_node(out)
    assert exported(out) == out


def _holds_node(v) -> bool:
    if v is NODE:
        return True
    if isinstance(v, (frozenset, tuple)):
        return any(_holds_node(x) for x in v)
    if dataclasses.is_dataclass(v):
        return any(_holds_node(getattr(v, f.name)) for f in dataclasses.fields(v))
    return False
