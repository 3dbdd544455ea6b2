"""Evaluation code and no_grad blocks, as the interpreter meets them (AGL3xx).

A mixin of provenance.Run: the evaluation regions (after `model.eval()`, in
functions named like evaluation, in loops over validation loaders) and their
first model call with grad on; `torch.no_grad()` blocks, what they compute
and whether any of it meets autograd afterwards.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import libcst as cst

from autograd_lint.analysis.facts import GradMode, tensorish
from autograd_lint.analysis.ir import Accum, Bind, Call, Eval, Flow, Function, Ref, Return, Store

if TYPE_CHECKING:
    from autograd_lint.analysis.provenance import Key
    from autograd_lint.analysis.provenance import Run as _Run
else:
    _Run = object

NO_GRAD_ONLY = frozenset({"torch.no_grad", "torch.autograd.no_grad", "torch.autograd.grad_mode.no_grad"})


@dataclass(eq=False)
class NoGradBlock:
    """A `with torch.no_grad():` block (or a function decorated with it)."""

    fn: Function
    node: cst.CSTNode  # the With statement or the decorator
    written: set = field(default_factory=set)  # keys bound or updated inside
    created: set = field(default_factory=set)  # keys bound inside to new values
    escapes: bool = False  # returns a tensor or stores onto self/module state
    writes_outer: bool = False  # writes in place a tensor made outside
    reached: bool = False  # something it computed is later used with grad on


DEFAULT_EVAL_FUNCTIONS = (
    r"(^|_)(evaluate|evaluation|eval|validate|validation|val|valid|test|testing|predict|prediction|inference|infer|generate|score)(_|$)",
)
DEFAULT_EVAL_LOADERS = (
    r"^(val|valid|validation|eval|evaluation|test|testing|dev)_?(loader|dl|dataloader|data_loader|iter|batches|dataset|ds|set|data)s?$",
)


def _all_refs(vals) -> set[str]:
    """Every path a value (or tuple of values) reads, inside calls too."""
    out: set[str] = set()
    stack = list(vals) if isinstance(vals, tuple) else [vals]
    while stack:
        v = stack.pop()
        if isinstance(v, tuple):
            stack.extend(v)
        elif type(v) is Ref:
            out.add(v.path)
        elif type(v) is Call:
            stack.extend(v.args)
            stack.extend(val for _, val in v.kwargs)
            if v.receiver is not None:
                stack.append(v.receiver)
    return out


def _matches(name: str, patterns) -> bool:
    return any(re.search(p, name) for p in patterns)


class EvalTracking(_Run):
    """The evaluation part of the interpreter (see provenance.Run)."""

    def track_mode(self, c: Call) -> None:
        """`model.eval()` starts evaluation code, `model.train()` ends it."""
        arg = c.node.args[0].value if c.node.args else None
        off = isinstance(arg, cst.Name) and arg.value == "False"
        if c.method == "eval" and not c.node.args or c.method == "train" and off:
            self.eval_region = c.node
        elif c.method == "train":
            self.eval_region = None

    def eval_call(self, c: Call) -> None:
        """A model call: remember it when it is the first one of an
        evaluation region running with grad on."""
        prog = self.prog
        if not prog.recording or self.grad is not GradMode.ON or self.forced:
            return
        fn = self.fn
        if re.match(r"_*test_", fn.name) or (fn.cls is not None and "Test" in fn.cls.name):
            return  # tests and test helpers check behaviour; their cost is not the point
        if self.eval_region is not None:
            key = ("mode", self.eval_region)
        elif self.eval_named(fn):
            key = ("fn", fn.id)
        else:
            loop = next(
                (l for l in reversed(self.loops) if l.iter_path and _matches(l.iter_path, prog.options.get("eval-loader-patterns", DEFAULT_EVAL_LOADERS))),
                None,
            )
            if loop is None:
                return
            key = ("loop", loop)
        prog.eval_calls.setdefault(key, (self.fn, c.node))

    def eval_named(self, fn: Function) -> bool:
        """Named like evaluation code. A module's own methods (`predict_*`,
        `generate_*` heads) are part of its forward, whatever their name."""
        if fn.cls is not None and self.prog.is_module_class(fn.cls):
            return False
        return _matches(fn.name, self.prog.options.get("eval-function-patterns", DEFAULT_EVAL_FUNCTIONS))

    def nograd_decorator(self) -> cst.CSTNode | None:
        if not self.prog.recording or not isinstance(self.fn.node, cst.FunctionDef):
            return None
        for path, d in zip(self.fn.decorator_paths, self.fn.node.decorators):
            if path and self.prog.imports.qualify_path(path) in NO_GRAD_ONLY:
                return d
        return None

    def use_tainted(self, k: Key, always: bool = False) -> None:
        """A value a no_grad block computed meets autograd (an op with grad
        on, a return, a store on self): that block needs `no_grad`. Python
        numbers the block produced (`total += loss.item()`) do not count."""
        blocks = self.taint.get(k)
        if not blocks:
            return
        if always or tensorish(self.lookup(k)):
            for b in blocks:
                b.reached = True

    def track_taint(self, s, t) -> None:
        """Follow what finished no_grad blocks computed: through bindings,
        into uses that need autograd (returns, stores on self, backward)."""
        if t is Bind and s.path is not None:
            k = self.key(s.path)
            srcs = {self.key(a.path) for a in s.val if type(a) is Ref}
            blocks = tuple({b for sk in srcs for b in self.taint.get(sk, ())})
            if blocks:
                self.taint[k] = blocks
            else:
                self.taint.pop(k, None)
        elif t is Return or t is Store or t is Accum:
            if t is not Return:
                k = self.key(s.container if t is Store else s.target)
                if self.local(k):
                    return
            for path in _all_refs(s.val):
                self.use_tainted(self.key(path))

    def block_effects(self, s, t) -> None:
        block = self.blocks[-1]
        if t is Bind and s.path is not None:
            k = self.key(s.path)
            block.written.add(k)
            # A loop target or an alias names an existing tensor, not a new one.
            if not isinstance(s.node, cst.For) and not any(type(a) is Ref and a.flow is Flow.ACCESS for a in s.val):
                block.created.add(k)
        elif t is Store or t is Accum:
            k = self.key(s.container if t is Store else s.target)
            # Stores into self/module state or into the caller's objects
            # (`module._parameters[name] = value`) keep what the block made.
            if not self.local(k) or k[2] in self.fn.params:
                block.escapes = True
            block.written.add(k)
        elif t is Eval:
            for a in s.val:
                if type(a) is not Call or not a.callee_path:
                    continue
                # `init.zeros_(module.bias)`: a trailing `_` writes in place.
                if a.callee_path.endswith("_") and not a.callee_path.endswith("__"):
                    block.writes_outer = True
                # `convert_model(model)`: a call made for its effect on the
                # function's own arguments may rewrite them.
                if a.method is None and any(p.split(".")[0] in self.fn.params for p in _all_refs(a.args)):
                    block.writes_outer = True
        elif t is Return and s.val:
            # What it returns may reach autograd in a caller; integer and
            # bool tensors (`labels`, `x > t`) look like numbers here, so any
            # returned value counts.
            block.escapes = True
