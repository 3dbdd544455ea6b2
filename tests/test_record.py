"""``record.Record``: plain-data classes that behave as the dataclasses they
stand for (equality, hash, repr, frozenness, pickling, and what the
``dataclasses`` functions see), without importing ``dataclasses``."""

from __future__ import annotations

import copy
import dataclasses
import pickle

import pytest

from autograd_lint.record import Record


class _Point(Record):
    factories = {"tags": list}

    def __init__(self, x: int, y: int = 0, tags: list[str] | None = None) -> None:
        self.__dict__.update(x=x, y=y, tags=[] if tags is None else tags)


class _Box(Record, frozen=False):
    def __init__(self, item: object = None) -> None:
        self.__dict__.update(item=item)


@dataclasses.dataclass(frozen=True)
class _DataPoint:
    x: int
    y: int = 0
    tags: list[str] = dataclasses.field(default_factory=list)


def test_equality_hash_and_repr_are_a_dataclass_s() -> None:
    p = _Point(1, 2)
    assert p == _Point(1, 2, []) and p != _Point(1, 3) and p != (1, 2, [])
    assert _Point(1, tags=("a",)) == _Point(1, 0, ("a",))
    assert hash(_Point(1, 2, ("a",))) == hash(_Point(1, 2, ("a",)))
    assert repr(p) == repr(_DataPoint(1, 2)).replace("_DataPoint", "_Point")
    assert _Point(1).tags is not _Point(1).tags  # a new list each time
    assert _Point.__match_args__ == ("x", "y", "tags")


def test_frozen_or_not() -> None:
    p = _Point(1)
    with pytest.raises(AttributeError):
        p.x = 2
    with pytest.raises(AttributeError):
        del p.x
    box = _Box()
    box.item = 3
    assert box == _Box(3)
    with pytest.raises(TypeError):
        hash(box)  # mutable, so unhashable (as a dataclass)


def test_pickle_and_copy_round_trips() -> None:
    p = _Point(1, 2, ["a"])
    for protocol in range(2, pickle.HIGHEST_PROTOCOL + 1):
        assert pickle.loads(pickle.dumps(p, protocol)) == p
    assert copy.copy(p) == p and copy.deepcopy(p) == p


def test_the_dataclasses_functions_take_it_for_the_dataclass() -> None:
    p = _Point(1, 2, ["a"])
    assert dataclasses.is_dataclass(_Point) and dataclasses.is_dataclass(p)
    assert not dataclasses.is_dataclass(Record)
    ours, theirs = dataclasses.fields(_Point), dataclasses.fields(_DataPoint)
    assert [(f.name, f.default, f.default_factory, f.init, f.compare) for f in ours] == [(f.name, f.default, f.default_factory, f.init, f.compare) for f in theirs]
    assert _Point.__dataclass_params__.frozen and not _Box.__dataclass_params__.frozen
    assert dataclasses.replace(p, y=5) == _Point(1, 5, ["a"])
    assert dataclasses.asdict(p) == {"x": 1, "y": 2, "tags": ["a"]}
    assert dataclasses.astuple(p) == (1, 2, ["a"])


def test_the_start_up_path_s_classes_are_records() -> None:
    """What every run loads: none of it may need ``dataclasses``."""
    from autograd_lint import cache, catalog, config, discovery, file_analysis, finding, settings
    from autograd_lint.report import fixes

    for module in (cache, catalog, config, discovery, file_analysis, finding, settings, fixes):
        classes = [c for c in vars(module).values() if isinstance(c, type) and c.__module__ == module.__name__ and dataclasses.is_dataclass(c)]
        assert classes and all(issubclass(c, Record) for c in classes), module
