"""A canonical order of analysis facts: the same in every process.

Facts are frozen dataclasses held in sets, whose order follows hashes
(object identity for syntax nodes, seeded string hashes): wherever a
choice depends on order (a cap keeps some facts, a summary is written
out), this order decides instead, so a file's summary and its cache entry
are the same bytes from run to run. Nothing here knows the fact classes:
they are ordered by their compared fields.
"""

from __future__ import annotations

import dataclasses
from contextvars import ContextVar
from enum import Enum
from functools import cmp_to_key
from typing import Any, Callable, Iterable, TypeVar

T = TypeVar("T")


# Where the nodes values point at stand in their module (an int per node,
# in source order), for the one choice made here that a message shows:
# which graph origins a bounded value keeps. Without it, the graphs a set
# happened to yield first (nodes hash by identity) would be kept, and a
# message would cite another origin from run to run. Set while a module's
# functions run (``Program.run_all``).
NODE_ORDER: ContextVar = ContextVar("node_order", default=None)


# The fields a fact is ordered by (those it compares by), per class.
_ORDER_FIELDS: dict[type, tuple[str, ...] | None] = {}


def _order_fields(t: type) -> tuple[str, ...] | None:
    try:
        return _ORDER_FIELDS[t]
    except KeyError:
        names = tuple(f.name for f in dataclasses.fields(t) if f.compare) if dataclasses.is_dataclass(t) else None
        _ORDER_FIELDS[t] = names
        return names


def order_key(x: object, order: Any = None) -> tuple:
    """A key that sorts facts, values and their parts alike in every
    process: by their fields (strings, numbers, nested values and steps),
    syntax nodes by where they stand in their module (``order``: a
    ``NODE_ORDER`` function; without one, all nodes tie). Never by object
    identity or string hashes. Keys of different kinds compare (each starts
    with a tag of its kind), so a value of mixed facts sorts. A set sorts by
    its size, then its sorted elements. Builds the whole key: for large
    values, ``order_cmp`` (the same order) stops at the first difference."""
    t = type(x)
    if t is str:
        return (4, x)
    if t is int:
        return (2, x)
    if x is None:
        return (0,)
    if t is bool:
        return (1, x)
    if t is tuple:
        return (6, tuple([order_key(e, order) for e in x]))
    if isinstance(x, frozenset):
        return (7, len(x), tuple(sorted([order_key(e, order) for e in x])))
    if t is float:
        return (3, x)
    if isinstance(x, Enum):
        return (5, t.__name__, order_key(x.value))
    names = _order_fields(t)
    if names is not None:
        return (8, t.__name__, tuple([order_key(getattr(x, n), order) for n in names]))
    if t is dict:
        return (9, tuple([(order_key(k, order), order_key(v, order)) for k, v in x.items()]))
    # A syntax node: where it stands in its module.
    return (10, order(x) if order is not None else 0)


_TAGS: dict[type, tuple] = {}


def _tag(x: object) -> tuple:
    """The first items of ``order_key(x)``: its kind (and class)."""
    t = type(x)
    tag = _TAGS.get(t)
    if tag is None:
        if t is str:
            tag = (4,)
        elif t is int:
            tag = (2,)
        elif x is None:
            tag = (0,)
        elif t is bool:
            tag = (1,)
        elif t is tuple:
            tag = (6,)
        elif isinstance(x, frozenset):
            tag = (7,)
        elif t is float:
            tag = (3,)
        elif isinstance(x, Enum):
            tag = (5, t.__name__)
        elif _order_fields(t) is not None:
            tag = (8, t.__name__)
        elif t is dict:
            tag = (9,)
        else:
            tag = (10,)
        _TAGS[t] = tag
    return tag


def order_cmp(a: object, b: object, order: Any = None) -> int:
    """-1, 0 or 1 as ``order_key(a, order)`` is below, equal to or above
    ``order_key(b, order)``, found without building the keys: it reads the
    two side by side and stops at the first difference (cheap where values
    are large and differ early)."""
    if a is b:
        return 0
    ta = type(a)
    if ta is not type(b):
        ka, kb = _tag(a), _tag(b)
        if ka != kb:
            return -1 if ka < kb else 1
    if ta is str or ta is int or ta is bool or ta is float:
        return -1 if a < b else 1 if b < a else 0  # type: ignore[operator]
    if a is None:
        return 0
    if ta is tuple:
        for x, y in zip(a, b):  # type: ignore[call-overload]
            c = order_cmp(x, y, order)
            if c:
                return c
        return -1 if len(a) < len(b) else 1 if len(b) < len(a) else 0  # type: ignore[arg-type]
    if isinstance(a, frozenset):
        if len(a) != len(b):  # type: ignore[arg-type]
            return -1 if len(a) < len(b) else 1  # type: ignore[arg-type]
        if a == b:
            return 0
        # Their sorted elements first differ where the least of the
        # elements only one of them holds stands: whichever holds it is
        # below (found without sorting either).
        c = order_cmp(_least(a - b, order), _least(b - a, order), order)  # type: ignore[operator]
        if c:
            return c
        # ...unless those two tie: facts that differ in their syntax nodes
        # alone, where nodes are not ordered (``order`` None, or nodes it
        # does not know). Then the sets may yet differ further on, and
        # which of the tied facts ``_least`` met first follows the order
        # the set yields them in: their sorted elements, compared one by
        # one, decide (as ``order_key``'s would). Rare: sorting is dear.
        for x, y in zip(sorted_canonically(a, order), sorted_canonically(b, order)):  # type: ignore[arg-type]
            c = order_cmp(x, y, order)
            if c:
                return c
        return 0
    if isinstance(a, Enum):
        return order_cmp(a.value, b.value)  # type: ignore[attr-defined]
    names = _order_fields(ta)
    if names is not None:
        for n in names:
            c = order_cmp(getattr(a, n), getattr(b, n), order)
            if c:
                return c
        return 0
    if ta is dict:
        return order_cmp(tuple(a.items()), tuple(b.items()), order)  # type: ignore[attr-defined]
    if order is None:
        return 0
    oa, ob = order(a), order(b)
    return -1 if oa < ob else 1 if ob < oa else 0


def _least(items: Iterable, order: Any) -> object:
    it = iter(items)
    least = next(it)
    for x in it:
        if order_cmp(x, least, order) < 0:
            least = x
    return least


def sorted_canonically(items: Iterable, order: Any = None) -> list:
    """``items`` in ``order_cmp``'s order: by kind first (a value's facts
    are mostly of different kinds), then each run of one kind compared."""
    out = sorted(items, key=_tag)
    n = len(out)
    i = 0
    while i < n - 1:
        tag = _tag(out[i])
        j = i + 1
        while j < n and _tag(out[j]) == tag:
            j += 1
        if j - i > 1:
            out[i:j] = sorted(out[i:j], key=cmp_to_key(lambda x, y: order_cmp(x, y, order)))
        i = j
    return out


def in_order(items: Iterable[T], key: Callable[[T], Any]) -> list[T]:
    """``items`` sorted by ``key``; none asked for with fewer than two (a
    key of syntax nodes builds the module's node order, when first asked)."""
    out = list(items)
    if len(out) > 1:
        out.sort(key=key)
    return out
