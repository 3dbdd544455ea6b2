"""Joins of values: where paths meet, across call sites, over the facts of
a value (values.py has the facts).

The join of two values is their union, with at most one container of each
kind (``merge_containers``) and bounded (``_bound``): a value of more than
``MAX_FACTS`` facts keeps the first few graph origins and the simplest
symbols. A join is the same whatever order values are joined in (it is
associative and commutative), so a value made by joining what each fact of
a set gives, one by one in the order the set yields its facts (an
attribute of each thing a value may be, what each symbol of a summary
resolves to), is the same in every process, whatever the hash seed: a
file's summary and its cache entry are the same bytes. Two things make
that so:

- which facts a cut keeps is decided by ``order_cmp``'s order (source
  position, then the facts' fields), never by the order a set yields them;
  so the first few of a union are the first few of the first few of its
  parts and the rest;
- a value once cut is marked (``BOUNDED``), and whatever it is joined with
  is cut alike. (Else a union cut on the way, then joined with a few
  facts more, would stay under ``MAX_FACTS`` and keep them all, where the
  same values joined in another order would be cut at the end.)
"""

from __future__ import annotations

from functools import cmp_to_key
from typing import Iterable

from autograd_lint.analysis.canonical import NODE_ORDER, order_cmp, order_key
from autograd_lint.analysis.values import BOUNDED, NONE_V, NOTHING, Container, Graph, Saved, Sym, Value

MAX_FACTS = 48
# What a cut keeps: this many graph origins, this many symbols.
MAX_GRAPHS = 8
MAX_SYMS = 16


def join(a: Value, b: Value, depth: int = 0) -> Value:
    if a is b or not b:
        return a
    if not a:
        return b
    out = a | b
    if len(out) > len(a) and any(type(f) is Container for f in b) and sum(1 for f in out if type(f) is Container) > 1:
        out = merge_containers(out, depth)
    # (Of at most MAX_GRAPHS facts, a value is as a cut leaves it.)
    n = len(out)
    if n > MAX_GRAPHS and (n > MAX_FACTS or BOUNDED in out):
        out = _bound(out)
    return out


def join_paths(a: Value, b: Value) -> Value:
    """What a location holds where two paths meet. Graph facts are "may":
    one path suffices. Saved is "must": backward fails only if the tensor
    was saved on every path, so a tensor saved on one branch only (`relu(h)
    if i < n - 1 else layer(h)`, the last layer of an MLP) is not saved."""
    out = join(a, b)
    if a is b or not a or not b or a == b:
        return out
    # (Either side bound to something: a value of its own on that path,
    # known a tensor or not. A side that holds None is no tensor anyone
    # writes in place: `if acc is None: acc = out`, then `acc += x`.)
    if a == NONE_V or b == NONE_V:
        return out
    drop = [f for f in a ^ b if type(f) is Saved]
    if drop:
        out = out - frozenset(drop)
    return out


def join_all(values: Iterable[Value], depth: int = 0) -> Value:
    """The join of ``values``: their union, its containers merged and the
    whole bounded once (cheaper than one join after another)."""
    parts = [v for v in values if v]
    if len(parts) < 2:
        return parts[0] if parts else NOTHING
    out = frozenset().union(*parts)
    # A union that adds nothing to one of the values is that value, the same
    # object, as ``join`` gives it: equal parts that are one object compare
    # at once, where copies are compared all the way down.
    largest = max(parts, key=len)
    if len(out) == len(largest):
        out = largest
    else:
        kinds = [f.kind for f in out if type(f) is Container]
        if len(kinds) > len(set(kinds)):  # (containers of one kind to merge)
            out = merge_containers(out, depth)
    n = len(out)
    if n > MAX_GRAPHS and (n > MAX_FACTS or BOUNDED in out):
        out = _bound(out)
    return out


MAX_NESTING = 3  # containers of containers deeper than this are flattened


def merge_containers(v: Value, depth: int = 0) -> Value:
    """At most one Container fact per container kind: keys known in both
    keep their joined values; keys known in only one join ``elem``."""
    by_kind: dict[str, list[Container]] = {}
    rest = []
    for f in v:
        if type(f) is Container:
            by_kind.setdefault(f.kind, []).append(f)
        else:
            rest.append(f)
    for kind, cs in by_kind.items():
        if len(cs) == 1:
            rest.append(cs[0])
            continue
        if depth >= MAX_NESTING:
            # Deep inside containers: what they hold, not where.
            rest.append(Container(kind, (), join_all((flattened(c.all_values()) for c in cs), depth + 1)))
            continue
        maps = [dict(c.items) for c in cs]
        common = [k for k, _ in cs[0].items if all(k in m for m in maps[1:])]
        if len(common) > 1 and any(list(m) != list(maps[0]) for m in maps[1:]):
            # Keys in other orders: the order of whichever container the
            # set yielded first would make the same content two facts (and
            # differ from process to process). Where each key stands in
            # all of them decides (then the key itself): one order, whatever
            # the set's.
            where = [{k: i for i, k in enumerate(m)} for m in maps]
            common.sort(key=lambda k: (sum(w[k] for w in where), order_key(k)))
        items = tuple((k, join_all((m[k] for m in maps), depth + 1)) for k in common)
        # (``cs`` is in the order the set yields: joined all at once.)
        shared = set(common)
        elem = join_all([c.elem for c in cs] + [val for c in cs for k, val in c.items if k not in shared], depth + 1)
        rest.append(Container(kind, items, elem))
    return frozenset(rest)


def flattened(v: Value) -> Value:
    """``v`` with the containers in it replaced by what they hold."""
    if not any(type(f) is Container for f in v):
        return v
    out = []
    for f in v:
        if type(f) is Container:
            out.extend(x for x in f.all_values() if type(x) is not Container)
        else:
            out.append(f)
    return frozenset(out)


def _bound(v: Value) -> Value:
    """Keep a value small: many graph origins say no more than a few do
    (findings cite one, the first in the file), many symbols no more than
    the simplest. Which are kept is decided by ``order_cmp`` (source
    position, then the facts' fields), never by the order the set yields
    them in: the same value is bounded alike in every process. A value cut
    is marked ``BOUNDED``: what it is joined with is cut alike."""
    graphs = [f for f in v if type(f) is Graph]
    syms = [f for f in v if type(f) is Sym]
    if len(graphs) <= MAX_GRAPHS and len(syms) <= MAX_SYMS:
        return v
    order = NODE_ORDER.get()
    if len(graphs) > MAX_GRAPHS:
        graphs.sort(key=lambda g: (g.how, g.fn, order_key(g.node, order)))
        del graphs[MAX_GRAPHS:]
    if len(syms) > MAX_SYMS:
        # The simplest (shortest paths), then in order_cmp's order: only
        # those of the length the cut falls in are compared (the dear part).
        syms.sort(key=_path_length)
        n = len(syms[MAX_SYMS - 1].path)
        lo = hi = MAX_SYMS - 1
        while lo > 0 and len(syms[lo - 1].path) == n:
            lo -= 1
        while hi + 1 < len(syms) and len(syms[hi + 1].path) == n:
            hi += 1
        if hi >= MAX_SYMS:
            syms[lo:] = sorted(syms[lo : hi + 1], key=cmp_to_key(lambda a, b: order_cmp(a, b, order)))
        del syms[MAX_SYMS:]
    return frozenset(f for f in v if type(f) is not Graph and type(f) is not Sym) | frozenset(graphs) | frozenset(syms) | {BOUNDED}


def all_values(c: Container) -> Value:
    """What the container holds, at any key: its values joined (where
    ``Container.all_values``, their plain union, may hold two containers
    of one kind: enough to ask what it holds, not a value to keep)."""
    if not c.items:
        return c.elem
    return join_all([c.elem, *[v for _, v in c.items]])


def _path_length(s: Sym) -> int:
    return len(s.path)


def elements(v: Value) -> Value:
    """What iterating over / indexing into the value gives: the elements of
    a container; a tensor's rows are tensors like it."""
    out: Value = NOTHING
    rest = []
    for f in v:
        if type(f) is Container:
            out = join(out, all_values(f))
        else:
            rest.append(f)
    return join(out, frozenset(rest))
