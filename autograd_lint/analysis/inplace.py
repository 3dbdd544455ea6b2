"""In-place writes to tensors autograd needs: the decision shared by AGL201
(a saved tensor written in place), AGL202 (a leaf that requires grad written
in place with grad on), AGL203 (a saved tensor written through ``.data``)
and AGL204 (one of the views ``split``/``chunk``/``unbind`` returned,
written in place with grad on).

An observer of the interpreter: it hears every in-place write, with the
facts of the tensor written (what saved it, whether it is a leaf), and
classifies them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum
from typing import Iterator

from autograd_lint.analysis import api, ir
from autograd_lint.analysis.interp import Program, Run
from autograd_lint.analysis.observer import AUGMENTED_WRITES, Mutation, Observer
from autograd_lint.analysis.resolve import Condition, RequiresGrad, SavedFor
from autograd_lint.analysis.state import Def, Local, Ret
from autograd_lint.analysis.joins import elements, join
from autograd_lint.analysis.values import TENSOR, Activation, AttrStep, Container, GradMode, Leaf, MultiView, Plain, Saved, Sym, Value, attached, plain_only, tensorish, unseen_call_outputs


class InplaceKind(Enum):
    SAVED = "saved"  # AGL201
    LEAF = "leaf"  # AGL202
    DATA = "data"  # AGL203
    MULTI_VIEW = "multi_view"  # AGL204


@dataclass
class InplaceFinding:
    kind: InplaceKind
    node: object
    name: str  # the tensor, as written
    how: str  # the write: "+=", "mul_()", "ReLU(inplace=True)"
    savers: tuple[Saved, ...]  # what saved it: every equally good one (the message names the first in the file)
    grad: GradMode  # grad mode at the write
    conditions: tuple[Condition, ...] = ()
    view: MultiView | None = None  # AGL204: the op that returned the view
    call: object = None  # reported at a layer's `inplace=True`: the call that runs it
    # The tensor written is held in no name: the result of the call ``name``
    # (`F.dropout(torch.sigmoid(y), inplace=True)`).
    temporary: bool = False
    # AGL202: what is written carries a graph (`errs[i] = 1 - ssim(x, recon)`):
    # the code means autograd to record it, so doing the write under
    # `no_grad` would cut the gradient it carries. None: it may (a value of
    # code unseen); False: shown to carry none (numbers, another's `.grad`).
    writes_graph: bool | None = False


# `_inference_forward`, `infer_step`: a function that says it is the
# inference path (often chosen by an `inplace_safe` flag) writes in place on
# purpose; no backward runs through it.
_INFERENCE_NAME = re.compile(r"(^|_)(inference|infer)(_|$)")


def _inference_only(fn: ir.Function) -> bool:
    f: ir.Function | None = fn
    while f is not None:
        if _INFERENCE_NAME.search(f.name):
            return True
        f = f.parent
    return False




def _carries_graph(v: Value) -> bool | None:
    """What is written carries a graph: True where it is attached or a leaf
    that requires grad; None where it may (``_may_carry_graph``: a value of
    unseen code); False where it cannot (numbers, constant tensors, another
    tensor's `.grad`: `p.add_(p.grad, alpha=-lr)`)."""
    if attached(v) or any(type(f) is Leaf for f in v):
        return True
    return None if _may_carry_graph(v) else False


class Inplace(Observer):
    def __init__(self) -> None:
        self.mutations: dict[tuple, Mutation] = {}
        self.found: list[InplaceFinding] = []

    def forget(self, fn: int) -> None:
        self.mutations = {k: m for k, m in self.mutations.items() if m.at.fn.index != fn}

    def mutate(self, run: Run, e: Mutation) -> None:
        if e.chained:
            return  # the write before it in the chain is the one that breaks
        key = (id(e.at.node), e.path)
        old = self.mutations.get(key)
        if old is None:
            self.mutations[key] = e
        else:
            self.mutations[key] = Mutation(old.at, old.path, old.loc, join(old.facts, e.facts), old.how, old.via, old.in_forward, join(old.rhs, e.rhs), old.asked)

    def finish(self, prog: Program) -> None:
        self.prog = prog
        found = []
        # `out += x` on a name: its fix (`out = out + x`) makes `out` a new
        # tensor, so a later in-place write of it in the same function
        # (`self.relu(out)`, inplace) no longer meets what was saved: one
        # finding, at the first write.
        rebinding: set[tuple] = set()
        for m in self.mutations.values():
            f = self._classify(m)
            if f is None:
                continue
            key = (m.at.fn.index, m.loc, frozenset(s.node for s in f.savers))
            if f.kind is InplaceKind.SAVED and key in rebinding:
                continue
            if f.kind is InplaceKind.SAVED and m.how in AUGMENTED_WRITES and "." not in m.path and "[" not in m.path:
                rebinding.add(key)
            found.append(f)
        self.found = found

    def findings(self, kind: InplaceKind) -> Iterator[InplaceFinding]:
        return (f for f in self.found if f.kind is kind)

    def _classify(self, m: Mutation) -> InplaceFinding | None:
        if _inference_only(m.at.fn):
            return None
        facts = m.facts
        saved = [f for f in facts if type(f) is Saved]
        # Saved as an op's input: only a tensor's in-place write matters
        # (`n += 1` on an int that went through `n % k` is a rebinding). A
        # write only a tensor takes shows it is one: through `.data`, by a
        # tensor method (`mul_()`), or of a tensor (`x += y`).
        if saved and not any(s.result for s in saved) and not (
            tensorish(facts) or any(type(f) is Activation for f in facts) or m.via == "data" or m.how.endswith("()") or tensorish(m.rhs)
        ):
            saved = []
        conditions: list[Condition] = []
        if saved:
            unconditional = [s for s in saved if not s.needs]
            if unconditional:
                saved = unconditional
            else:
                conditions.append(RequiresGrad(tuple(frozenset({n}) for s in saved for n in s.needs)))
            # An op saves only with grad on: where this function's grad mode
            # comes from its callers (`merge_bn` called from a `@no_grad`
            # method), the saver ran as they did.
            if all(s.fn == m.at.fn.index for s in saved):
                conditions.extend(self.prog.conditions_at(m.at))
        leaf = any(type(f) is Leaf for f in facts)
        at = m.at
        if m.via == "data":
            if saved:
                return None if self._graph_dies_here(m, saved) else self._finding(InplaceKind.DATA, m, saved, conditions)
            # The output of a block built in another module, as below.
            calls = unseen_call_outputs(facts)
            return self._finding(InplaceKind.DATA, m, [], [SavedFor(frozenset(calls))]) if calls else None
        if m.via == "detach":
            leaf = False  # a detached alias has no leaf check
        # `parts[0].mul_()`: the facts are the tuple's; its views are its elements'.
        views = [f for f in (elements(facts) if m.path.endswith("]") else facts) if type(f) is MultiView]
        if views and not m.via and at.grad is GradMode.ON:
            # Raises at the write itself, before any backward: first.
            view = min(views, key=lambda v: (v.fn != at.fn.index, v.node is None, v.op))
            conds = list(self.prog.conditions_at(at)) if view.fn == at.fn.index else []
            f = self._finding(InplaceKind.MULTI_VIEW, m, [], conds)
            f.view = view
            return f
        # The leaf check fires first at run time, whatever was saved. It
        # fires at once, so code that runs at all runs it under no_grad
        # unless this function shows grad is on: it made the leaf itself, or
        # it backpropagates (training code).
        if leaf and at.grad is GradMode.ON:
            prog = self.prog
            made_here = any(type(f) is Leaf and f.fn == at.fn.index for f in facts)
            called_in_training = any(s.caller in prog.stepping for s in prog.callers_of(at.fn.index) if s.grad is GradMode.ON)
            if made_here or at.fn.index in prog.stepping or called_in_training:
                f = self._finding(InplaceKind.LEAF, m, [], list(prog.conditions_at(at)))
                f.writes_graph = _carries_graph(m.rhs)
                return f
            return None
        if saved:
            # `state.copy_(new)` into a tensor the caller passed in is how a
            # function updates its caller's state (a decoding cache, a
            # running buffer); whether that caller backpropagates through
            # the old value is not shown here.
            if m.how == "copy_()" and type(m.loc) is Local and m.loc.name in at.fn.param_names and not any(s.result for s in saved):
                return None
            if self._graph_dies_here(m, saved):
                return None
            return self._finding(InplaceKind.SAVED, m, saved, conditions)
        # A module output we cannot see here (a block built in another
        # module): saved if the block's last layer saves its output. Only a
        # write that is a tensor's (`out += x` with a tensor `x`, `out.mul_()`)
        # counts: `count += 1` on an unknown value is a counter.
        calls = unseen_call_outputs(facts)
        if calls and (m.how.endswith(")") or m.how == "out=" or (tensorish(m.rhs) and not plain_only(m.rhs))):
            return self._finding(InplaceKind.SAVED, m, [], [SavedFor(frozenset(calls))])
        return None

    def _graph_dies_here(self, m: Mutation, saved: list[Saved]) -> bool:
        """The outputs the ops saved (`block = scores.amax(-1)`, then
        `block.scatter_(...)`) reach nothing that leaves their function with
        a graph: not returned but as numbers or integer tensors (`return
        block.topk(k).indices`), not stored beyond the call, not given to
        code unseen, not backpropagated. Backward never reaches those ops,
        so the write cannot break one. (A backward starts from what is
        computed after the save; what was computed before it and given away
        does not lead back to it.)"""
        fn = m.at.fn
        prog = self.prog
        start: set = set()
        for s in saved:
            # (An input it saved: what the op's output reaches, when the
            # op's output was bound to a name.)
            bound = prog.saved_outputs.get(s.node) if s.result else prog.op_outputs.get(s.node)
            if s.fn == fn.index and not bound and not s.result and s.node in prog.op_cut:
                continue  # its output, bound nowhere, ended where it was made (`w.std().detach()`)
            if s.fn != fn.index or not bound:
                return False
            start |= bound
        for k in prog.reaches(start, set()):
            t = type(k)
            if t is Def or (t is Local and k.fn == fn.index):
                continue
            if t is Ret and k.fn == fn.index:
                summary = prog.summaries.get(fn.index)
                if summary is None or _may_carry_graph(summary.returns):
                    return False
                continue
            return False  # escapes, backward, state beyond the call, another function
        return True

    def _finding(self, kind: InplaceKind, m: Mutation, saved: list[Saved], conditions: list[Condition]) -> InplaceFinding:
        savers: tuple[Saved, ...] = ()
        if saved:
            # Prefer the savers in this function, and known ops; any is
            # correct. Saves have no stable order (nodes hash by identity):
            # every equally good one is kept, and the message, which knows
            # lines, names the first.
            def rank(s: Saved) -> tuple:
                return (s.fn != m.at.fn.index, s.node is None, s.op)

            best = min(rank(s) for s in saved)
            savers = tuple(s for s in saved if rank(s) == best)
        # A layer built with `inplace=True` here: reported where that is
        # written (the fix is there), whatever call runs it.
        temporary = m.loc is None
        if m.asked is not None:
            return InplaceFinding(kind, m.asked, m.path, m.how, savers, m.at.grad, tuple(conditions), call=m.at.node, temporary=temporary)
        return InplaceFinding(kind, m.at.node, m.path, m.how, savers, m.at.grad, tuple(conditions), temporary=temporary)


def _may_carry_graph(v: Value, depth: int = 0) -> bool:
    """Anything but numbers, strings, None, tensors shown to have no graph
    (an integer tensor of indices) and what a member that cuts the graph
    gives of a value of unseen code (`p.grad`, `x.shape`)."""
    for f in v:
        t = type(f)
        if t is Plain or f is TENSOR or (t is Sym and _read_through_cut(f)):
            continue
        if t is Container and depth < 4:
            if _may_carry_graph(f.all_values(), depth + 1):
                return True
            continue
        return True
    return False


def _read_through_cut(s: Sym) -> bool:
    last = s.path[-1] if s.path else None
    return type(last) is AttrStep and api.member(api.TENSOR, last.name, attribute=True).cuts
