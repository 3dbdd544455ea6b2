"""Graph retention: which stores keep a graph alive beyond its iteration.

Reads the events and the flow graph that provenance.py recorded and decides,
for every store or accumulation of an attached value:

- does the container outlive the iteration (defined outside the loop and not
  re-created or cleared inside it; or on ``self``/module level, filled by a
  method that runs every step)?
- is it consumed by autograd after all (reduced and backpropagated, passed to
  ``torch.autograd.grad``, returned to a caller that does so, or returned by a
  module's forward)? Then keeping the graph is the point, not a leak.

Shared by AGL101 (stores), AGL102 (accumulations) and AGL103 (hooks and
forward keeping their tensors).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from enum import Enum
from typing import Callable, Iterator

import libcst as cst

from autograd_lint.analysis.facts import GradMode, Graph, HookArg
from autograd_lint.analysis.names import callee_text, short_code
from autograd_lint.analysis.ir import Function, Loop
from autograd_lint.analysis.provenance import SINK, Event, Key, Program

LineOf = Callable[[cst.CSTNode], int]

# Methods that run once, not per step: what they store is set-up state.
ONCE_METHODS = frozenset({"__init__", "__post_init__", "setup", "configure_model", "build", "reset_parameters", "_init_weights", "init_weights"})


class RetentionKind(Enum):
    STORE = "store"
    ACCUMULATE = "accumulate"
    HOOK = "hook"


@dataclass
class RetentionFinding:
    kind: RetentionKind
    node: cst.CSTNode
    value_text: str | None
    container_text: str
    origin: Graph | None
    origin_text: str | None
    per: str  # "iteration" or "call"
    where: str = ""  # for hooks: "forward hook" / "`forward`"
    value_node: cst.CSTNode | None = None  # the stored expression (what a fix detaches)

    @property
    def value_name(self) -> str | None:
        return self.value_text

    def message(self) -> Callable[[LineOf], str]:
        def render(line_of: LineOf) -> str:
            v = f"`{self.value_text}`" if self.value_text else "the value"
            origin = ""
            if self.origin is not None and self.origin_text:
                origin = f" (from `{self.origin_text}` at line {line_of(self.origin.node)})"
            fix_item = f"`{self.value_text}.item()`" if self.value_text else "`.item()`"
            fix_detach = f"`{self.value_text}.detach()`" if self.value_text else "`.detach()`"
            if self.kind is RetentionKind.STORE:
                return (
                    f"{v} is stored in `{self.container_text}` with its autograd graph{origin}; "
                    f"every {self.per}'s graph stays alive — store {fix_item} or {fix_detach}"
                )
            if self.kind is RetentionKind.ACCUMULATE:
                return (
                    f"{v} is accumulated into `{self.container_text}` with its autograd graph{origin}; "
                    f"every {self.per}'s graph stays alive — accumulate {fix_item} or {fix_detach}"
                )
            return (
                f"{self.where} keeps {v} in `{self.container_text}` with its autograd graph; "
                f"the graph outlives the call — keep {fix_detach}"
            )

        return render


class Retention:
    def __init__(self, program: Program, module: cst.Module) -> None:
        self.prog = program
        self.module = module
        self._found: list[RetentionFinding] | None = None

    def findings(self, kind: RetentionKind) -> Iterator[RetentionFinding]:
        if self._found is None:
            self._found = list(self._decide())
        return (f for f in self._found if f.kind is kind)

    # -- decision -------------------------------------------------------------------

    def _decide(self) -> Iterator[RetentionFinding]:
        prog = self.prog
        for ev in prog.events.values():
            # Graphs built only from ops on parameters (p * 2, p.norm()) are
            # bookkeeping, not a step's graph: not reported.
            if ev.grad is GradMode.OFF or not any(type(f) is HookArg or (type(f) is Graph and f.how != "leaf") for f in ev.facts):
                continue
            fn = ev.fn
            hook_where = self._hook_context(fn)
            if hook_where is not None:
                f = self._hook_finding(ev, fn, hook_where)
                if f is not None:
                    yield f
                continue
            # Containers are names and `self` state; `w.data += d` or
            # `layer.weight += d` write tensors in place (AGL2xx), they keep
            # no per-step graph.
            if ev.attr_assign or (ev.container[0] == "l" and "." in ev.container_path):
                continue
            loop = self._outliving_loop(ev)
            per = "iteration"
            if loop is None:
                if not self._per_call_store(ev):
                    continue
                per = "call"
            # In a training loop the iteration's graph was already used; in
            # evaluation code nobody backpropagates: a return consumes nothing.
            if self._consumed(ev.container, (loop is not None and loop.steps) or fn.calls_eval):
                continue
            kind = RetentionKind.ACCUMULATE if ev.kind == "accumulate" else RetentionKind.STORE
            yield self._finding(kind, ev, per)

    def _outliving_loop(self, ev: Event) -> Loop | None:
        """The innermost enclosing loop over data (or one that steps), when
        the container outlives its iterations. Loops over layers, heads or
        adapters build one graph together: not a retention."""
        for loop in reversed(ev.loops):
            if loop.steps or loop.data:
                return None if ev.container_path in loop.rebinds else loop
        return None

    def _per_call_store(self, ev: Event) -> bool:
        """A store into ``self``/module state from a method that runs every
        step, of a graph that method built itself."""
        fn = ev.fn
        k = ev.container
        if fn.is_module_level or fn.name in ONCE_METHODS or k[0] not in ("c", "g"):
            return False
        if k[0] == "g" and ev.container_path not in fn.globals and ev.how == "augmented":
            return False
        if fn.cls is not None and fn.name == "forward" and self.prog.is_module_class(fn.cls):
            return False
        if ev.container in self._rebound_in(fn):
            return False
        return any(type(f) is Graph and f.fn == fn.id for f in ev.facts)

    def _rebound_in(self, fn: Function) -> set[Key]:
        out: set[Key] = set()
        for e in self.prog.events.values():
            if e.fn is fn and e.attr_assign and e.how == "attribute":
                out.add(e.container)
        return out

    def _hook_context(self, fn: Function) -> str | None:
        prog = self.prog
        f: Function | None = fn
        while f is not None:
            if f.id in prog.hook_fns:
                return "forward hook"
            f = f.parent
        if fn.cls is not None and fn.name == "forward" and prog.is_module_class(fn.cls):
            return "`forward`"
        return None

    def _hook_finding(self, ev: Event, fn: Function, where: str) -> RetentionFinding | None:
        k = ev.container
        if k[0] == "l" and k[1] == fn.id:
            return None  # a local of the hook itself dies with the call
        if where == "forward hook":
            if not any(type(f) in (HookArg, Graph) for f in ev.facts):
                return None
        else:
            # forward keeps a tensor of this call's graph on self. State kept
            # only on some paths (`if use_cache:`) is a cache for inference.
            if k[0] != "c" or ev.conditional or not any(type(f) is Graph and f.how != "leaf" for f in ev.facts):
                return None
        # Reading it back in the next call (an RNN state, a memory) is the
        # retention itself, not a consumer.
        if self._consumed(k, False, exclude_return=fn.id if where == "`forward`" else None):
            return None
        return self._finding(RetentionKind.HOOK, ev, "call", where)

    # -- consumers ----------------------------------------------------------------

    def _consumed(self, start: Key, training_loop: bool, exclude_return: int | None = None) -> bool:
        """Does what is kept in ``start`` reach autograd again? In a training
        loop (one that backpropagates every iteration) a return does not
        count: that iteration's graph has already been used."""
        prog = self.prog
        seen = {start}
        todo = deque([start])
        while todo:
            k = todo.popleft()
            for nxt in prog.edges.get(k, ()):
                if nxt == SINK:
                    return True
                if nxt in seen:
                    continue
                seen.add(nxt)
                if nxt[0] == "ret" and nxt[1] == exclude_return:
                    continue
                if nxt[0] == "ret" and not training_loop and self._return_consumes(nxt[1]):
                    return True
                todo.append(nxt)
        return False

    def _return_consumes(self, fn_id: int) -> bool:
        """A value returned from this function may reach autograd: it is a
        module's method (forward and its helpers), or no caller in this file
        shows otherwise (callers elsewhere are followed through the flow
        graph when they are here)."""
        prog = self.prog
        fn = next((f for f in prog.ir.functions if f.id == fn_id), None)
        if fn is None:
            return True
        cls = prog.method_class(fn)
        if cls is not None and prog.is_module_class(cls):
            return True
        return prog.callers.get(fn_id, 0) == 0

    # -- reporting ----------------------------------------------------------------

    def _finding(self, kind: RetentionKind, ev: Event, per: str, where: str = "") -> RetentionFinding:
        origin = self._origin(ev)
        origin_text = callee_text(self.module, origin.node) if origin is not None else None
        return RetentionFinding(
            kind,
            ev.node,
            short_code(self.module, ev.value_node),
            ev.container_path,
            origin,
            origin_text,
            per,
            where,
            ev.value_node,
        )

    def _origin(self, ev: Event) -> Graph | None:
        gs = [f for f in ev.facts if type(f) is Graph]
        if not gs:
            return None
        own = [g for g in gs if g.fn == ev.fn.id and g.how != "leaf"] or gs
        # Stable choice: prefer calls, then anything.
        own.sort(key=lambda g: (g.how != "call", g.how))
        return own[0]
