"""Resolving symbols and deciding what findings depend on.

A finding may depend on something its own module cannot show: what an
imported helper keeps, whether an imported class is an nn.Module, whether
an imported context manager turns grad off, whether every caller (in other
files too) runs a function under ``no_grad``. The rule families state such
dependencies as ``Condition``s (plain data); a ``Resolver`` decides them:
first from the module itself (a parameter's value from the module's call
sites), then, in a whole-project run, from the other modules' summaries and
call sites. A condition nobody can decide is taken as not shown (precision
first), except ``EntryGradOn``, which without other evidence holds: grad is
on by default.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Iterable, Protocol

from autograd_lint.analysis.summaries import ClassSummary, FunctionSummary, ModuleSummary, class_parametric, exported
from autograd_lint.analysis.outcome import CallArgs, Site
from autograd_lint.analysis.transfer import call_value, find_method, substitute, wrapper_mode
from autograd_lint.analysis.canonical import sorted_canonically
from autograd_lint.analysis.joins import join
from autograd_lint.analysis.values import (
    pickle_as_calls,
    NOTHING,
    AttrStep,
    CallStep,
    ClassObj,
    FunctionObj,
    GradContext,
    GradMode,
    Graph,
    HookArg,
    ImportRoot,
    Instance,
    Leaf,
    Module,
    ParamRoot,
    Plain,
    ProjectModule,
    Qual,
    Ref,
    Saved,
    Sym,
    TensorKind,
    Value,
    attached,
    syms_in,
)
from autograd_lint.analysis import torch_api as api
from autograd_lint.slotted import construct_fast

MAX_DEPTH = 5


# -- conditions ------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Attached:
    """The value holds a tensor attached to a step's graph."""

    value: Value


@dataclass(frozen=True, slots=True)
class IsModel:
    """The value is a module with parameters (its call builds a graph).
    ``detached``: what the call gives is `.detach()`ed, so the code takes it
    for carrying a graph: where nothing, this module or another, shows what
    the value is, that holds it."""

    value: Value
    detached: bool = False
    # Every value it may be must be a module: one that may be a tensor (a
    # parameter, `clip.logit_scale`) refutes it.
    only: bool = False
    # Run for its output only (AGL301): a model that may differentiate
    # itself in its forward (a force field's `autograd.grad` of its energy)
    # refutes it, as it needs grad on to run.
    evaluated: bool = False


@dataclass(frozen=True, slots=True)
class RequiresGrad:
    """One of the values requires grad (so an op on it saved its inputs)."""

    values: tuple[Value, ...]


@dataclass(frozen=True, slots=True)
class SavedFor:
    """The value (a tensor) was saved for backward (as a module's output)."""

    value: Value


@dataclass(frozen=True, slots=True)
class KeepsArgument:
    """Calling ``callee`` with ``args`` keeps argument ``index`` (``kind``
    "store" or "accumulate")."""

    callee: Value
    args: CallArgs
    index: int
    kind: str


@dataclass(frozen=True, slots=True)
class GradNotOff:
    """The context manager (``decorator``: the decorator) ``value`` leaves
    grad on."""

    value: Value
    decorator: bool = False


@dataclass(frozen=True, slots=True)
class Undifferentiated:
    """Calling ``callee`` differentiates nothing of its positional argument
    ``index``: a module run, or a function whose summary neither
    backpropagates that parameter nor hands it to code no module shows (an
    imported `update(fabric, loss, optimizer)` that runs
    `fabric.backward(loss)` refutes it)."""

    callee: Value
    index: int


@dataclass(frozen=True, slots=True)
class NoStaticGradMemory:
    """No module of the run captures CUDA graphs (or compiles in a mode
    that does): gradients need not keep their storage."""


@dataclass(frozen=True, slots=True)
class NotModule:
    """The value, an instance of a class whose base another module
    defines, is no nn.Module (a method of one named for evaluation is
    evaluation code; a module's own methods run inside its forward, in
    whatever mode its callers run it). Fails only where a module shows the
    class is one."""

    value: Value


@dataclass(frozen=True, slots=True)
class EntryGradOn:
    """Function ``fn`` (``ref`` in its module) is entered with grad on."""

    fn: int
    ref: Ref


Condition = Attached | IsModel | RequiresGrad | SavedFor | KeepsArgument | GradNotOff | EntryGradOn | NoStaticGradMemory | NotModule | Undifferentiated


@dataclass(frozen=True, slots=True)
class CallRecord:
    """A call a module makes to a function another module may see (one of
    its own top-level functions or methods, or an imported one), and the
    grad mode it is made in: what a whole-project run joins into each
    function's entry grad mode."""

    target: Value
    grad: GradMode
    conds: tuple[Condition, ...]


# -- where other modules' facts come from -----------------------------------------


class Project(Protocol):
    """The modules of a whole-project run."""

    def module(self, importer: str, module: str, level: int) -> ModuleSummary | None:
        """The summary of the project module ``importer`` imports as
        ``module`` (at relative ``level``); None for a module that is not
        the project's (a library) or cannot be found."""

    def summary_of(self, file: str) -> ModuleSummary | None:
        """The summary of the module at ``file``."""

    def external_grads(self, ref: Ref) -> list[GradMode] | None:
        """The grad modes at the calls of ``ref`` in the other modules of
        the run (None: the run does not know the other modules)."""

    def static_grad_memory(self, file: str | None) -> bool:
        """Does ``file``, or a project module it imports (directly or
        through others), capture CUDA graphs? (None: any module of the
        run.)"""


class _NoProject:
    def module(self, importer: str, module: str, level: int) -> ModuleSummary | None:
        return None

    def summary_of(self, file: str) -> ModuleSummary | None:
        return None

    def external_grads(self, ref: Ref) -> list[GradMode] | None:
        return None

    def static_grad_memory(self, file: str | None) -> bool:
        return False


NO_PROJECT: Project = _NoProject()


class InFile(Protocol):
    """What the module itself knows (interp.Program)."""

    file: str

    def local_function(self, ref: Ref) -> FunctionSummary | None: ...

    def local_class(self, ref: Ref) -> ClassSummary | None: ...

    def local_module_class(self, ref: Ref) -> bool | None: ...

    def param_values(self, fn: int) -> list[tuple[Value, ...]] | None: ...

    def entry_sites(self, fn: int) -> list[tuple[GradMode, tuple]] | None: ...

    def exported(self, fn: int) -> bool: ...


class Resolver:
    """A transfer.Lookup that sees the module and, when given, the project."""

    def __init__(self, here: InFile | None, project: Project | None = None, summary: ModuleSummary | None = None, closed: bool = True) -> None:
        self.here = here
        self.project = project if project is not None else NO_PROJECT
        self.summary = summary  # this module's own exported summary (cross-module use)
        # Closed: the module is all there is (no other module calls it).
        self.closed = closed
        self._entry: dict[int, GradMode] = {}
        # Parameters' values and resolved values, each by what it was and
        # the set of parameters and imports being resolved when it was made
        # (``_active``): a cycle among them is cut where it closes, so what
        # one resolves to depends on the resolution it is made within. Read
        # back under another, it would follow whichever was asked first (the
        # order of a set of facts): another value from process to process.
        self._params: dict[tuple, Value] = {}
        self._values: dict[tuple, Value] = {}
        self._active: set = set()
        self._module_cls: dict[Ref, bool | None] = {}
        self._parametric: dict[Ref, bool | None] = {}

    # -- transfer.Lookup --------------------------------------------------------------

    def _module_summary(self, file: str) -> ModuleSummary | None:
        if self.summary is not None and self.summary.file == file:
            return self.summary
        return self.project.summary_of(file)

    def function(self, ref: Ref) -> FunctionSummary | None:
        if self.here is not None and ref.file == self.here.file:
            return self.here.local_function(ref)
        m = self._module_summary(ref.file)
        return m.functions.get(ref.qualname) if m is not None else None

    def klass(self, ref: Ref) -> ClassSummary | None:
        if self.here is not None and ref.file == self.here.file:
            return self.here.local_class(ref)
        m = self._module_summary(ref.file)
        return m.classes.get(ref.qualname) if m is not None else None

    def is_module_class(self, ref: Ref) -> bool | None:
        if ref in self._module_cls:
            return self._module_cls[ref]
        self._module_cls[ref] = None  # cycles
        local = self.here.local_module_class(ref) if self.here is not None and ref.file == self.here.file else None
        info = self.klass(ref)
        result = local
        if result is None and info is not None:
            result = info.module
            if result is None:
                result = self._module_from_bases(info)
        self._module_cls[ref] = result
        return result

    def parametric(self, ref: Ref) -> bool | None:
        return class_parametric(ref, self.klass, self.value, self._parametric)

    def _module_from_bases(self, info: ClassSummary) -> bool | None:
        unknown = False
        for b in info.bases:
            for f in self.value(b):
                t = type(f)
                if t is ClassObj:
                    m = self.is_module_class(f.cls)
                    if m:
                        return True
                    if m is None:
                        unknown = True
                elif t is Qual and api.is_base_module_class(f.name):
                    return True
                elif t is Sym:
                    unknown = True
        if info.methods.get("forward") is not None:
            # A forward() and a base we cannot see: a module in practice.
            return True
        return None if unknown else False

    def imported(self, root: ImportRoot) -> Value | None:
        m = self.project.module(root.file, root.module, root.level)
        if m is None:
            if root.name is not None:
                # `from pkg import sub`: a submodule.
                sub = self.project.module(root.file, f"{root.module}.{root.name}" if root.module else root.name, root.level)
                if sub is not None:
                    return frozenset({ProjectModule(sub.file)})
            return None
        if root.name is None:
            return frozenset({ProjectModule(m.file)})
        hit = m.exports.get(root.name)
        if hit is None:
            sub = self.project.module(root.file, f"{root.module}.{root.name}" if root.module else root.name, root.level)
            if sub is not None:
                return frozenset({ProjectModule(sub.file)})
            return None
        key = ("import", m.file, root.name)
        if key in self._active:
            return NOTHING
        self._active.add(key)
        try:
            # Re-exports: the exported value may itself be another module's.
            return self._in_module(m, hit)
        finally:
            self._active.discard(key)

    def export(self, file: str, name: str) -> Value | None:
        m = self._module_summary(file)
        if m is None:
            return None
        hit = m.exports.get(name)
        if hit is None:
            return None
        return self._in_module(m, hit)

    def _in_module(self, m: ModuleSummary, v: Value) -> Value:
        if not any(type(f) is Sym for f in v):
            return v
        inner = Resolver(None, self.project, m)
        inner._active = self._active
        return inner.value(v)

    def param(self, root: ParamRoot) -> Value | None:
        key = (root.fn, root.index)
        memo = (key, frozenset(self._active))
        if memo in self._params:
            return self._params[memo]
        if self.here is None or key in self._active or len(self._active) > MAX_DEPTH:
            return None
        sites = self.here.param_values(root.fn)
        if not sites:
            return None
        self._active.add(key)
        try:
            out: Value = NOTHING
            for args in sites:
                if root.index < len(args):
                    out = join(out, self.value(args[root.index]))
        finally:
            self._active.discard(key)
        self._params[memo] = out
        return out

    # -- values ----------------------------------------------------------------------

    def value(self, v: Value) -> Value:
        """``v`` with every symbol resolved as far as this resolver can."""
        if not v or not any(type(f) is Sym for f in v) and not syms_in(v):
            return v
        memo = (v, frozenset(self._active))
        hit = self._values.get(memo)
        if hit is None:
            hit = self._values[memo] = substitute(v, -2, {}, Site(None, -1, GradMode.ON), self)
        return hit

    # -- conditions ------------------------------------------------------------------

    def holds(self, c: Condition) -> bool | None:
        """True / False, or None when this resolver cannot tell."""
        t = type(c)
        if t is Attached:
            v = self.value(c.value)
            if attached(v):
                return True
            return None if _unresolved(v) else False
        if t is IsModel:
            v = self.value(c.value)
            if c.only and any(type(f) in (Leaf, Graph, TensorKind) for f in v):
                return False
            if c.evaluated and differentiates_itself(v, self):
                return False
            if c.evaluated and self.here is not None and any(type(f) is Sym and type(f.root) is ImportRoot for f in v):
                return None  # (a class another module defines, or builds, may differentiate itself: there it is decided)
            if holds_trainable(v, self):
                return True
            if not _unresolved(v):
                return False
            if c.detached and (self.here is None or not _decidable_elsewhere(c)):
                return True  # (no module shows more: the detach decides)
            return None
        if t is RequiresGrad:
            unknown = False
            for x in c.values:
                v = self.value(x)
                if any(type(f) in (Graph, Leaf, HookArg) for f in v):
                    return True
                unknown = unknown or _unresolved(v)
            return None if unknown else False
        if t is SavedFor:
            v = self.value(c.value)
            if any(type(f) is Saved for f in v):
                return True
            return None if _unresolved(v) else False
        if t is KeepsArgument:
            return self._keeps(c)
        if t is Undifferentiated:
            return self._undifferentiated(c)
        if t is GradNotOff:
            return self._grad_not_off(c)
        if t is EntryGradOn:
            mode = self.entry_mode(c.fn, c.ref)
            if mode is None:
                return None
            return mode is not GradMode.OFF
        if t is NotModule:
            kinds = {self.is_module_class(f.cls) for f in c.value if type(f) is Instance}
            if True in kinds:
                return False
            if kinds == {False}:
                return True
            # Unknown: another module of the project may show it; where none
            # can (the file alone, a base from a package unseen), the name
            # decides, as for any function.
            return None if self.here is not None and not self.closed else True
        if t is NoStaticGradMemory:
            if self.here is not None:
                return None if not self.closed else True
            return not self.project.static_grad_memory(self.summary.file if self.summary is not None else None)
        return None

    def _keeps(self, c: KeepsArgument) -> bool | None:
        callee = self.value(c.callee)
        known = False
        for f in callee:
            if type(f) is not FunctionObj:
                continue
            summary = self.function(f.fn)
            if summary is None:
                continue
            known = True
            offset = 1 if f.bound is not None and summary.kind not in ("staticmethod",) else 0
            for r in summary.retains:
                if r.param - offset == c.index and (r.into_param == 0 or r.into_param is None) and r.kind == c.kind:
                    return True
        if known:
            return False
        return None if _unresolved(callee) else False

    def _undifferentiated(self, c: Undifferentiated) -> bool | None:
        # (What no module shows stays what the interpreter took it for, a
        # module run, which differentiates nothing of what it is given: a
        # pipeline's `self.unet(latents)`. Only a function shown to
        # backpropagate the argument, or to hand it on, refutes it.)
        unknown = False
        for f in self.value(c.callee):
            t = type(f)
            if t is FunctionObj:
                summary = self.function(f.fn)
                if summary is None:
                    unknown = True
                    continue
                param = c.index + (1 if f.bound is not None and summary.kind != "staticmethod" else 0)
                if param in summary.backprops:
                    return False
                # (Handed on to code no module shows: that code decides.)
                mine = ParamRoot(summary.index, param)
                if any(type(s) is Sym and s.root == mine for e in summary.effects for a in (*e.args, *(v for _, v in e.kwargs)) for s in a):
                    unknown = True
            elif t is Sym and self.here is not None:
                unknown = True  # (the module that defines it decides)
            elif t is Qual and f.name in api.BACKWARD_FUNCTIONS:
                return False
        return None if unknown else True

    def _grad_not_off(self, c: GradNotOff) -> bool | None:
        v = self.value(c.value)
        if c.decorator:
            probe = frozenset({FunctionObj(Ref("<probe>", "<probe>"))})
            decorators = v
            v = call_value(v, CallArgs((probe,)), Site(None, -1, GradMode.ON), self).value
            if any(type(f) is FunctionObj and (f.wrapped or wrapper_mode(f, decorators, self)) is GradMode.OFF for f in v):
                return False
            v = frozenset(f for f in v if not _torch_free_decorator(f))
        else:
            for f in v:
                if type(f) is GradContext and f.mode is GradMode.OFF:
                    return False
                if type(f) is Instance:
                    info = self.klass(f.cls)
                    if info is not None and info.context is GradMode.OFF:
                        return False
        return None if _unresolved(v) else True

    def entry_mode(self, fn: int, ref: Ref) -> GradMode | None:
        """The grad mode ``fn`` is entered with: the join over its call sites
        (this module's, and the project's when known); on without any. None
        when other modules may call it and this one does not settle it."""
        if fn in self._entry:
            return self._entry[fn]
        key = ("entry", fn)
        if key in self._active:
            return GradMode.ON
        self._active.add(key)
        try:
            out = self._entry_mode(fn, ref)
        finally:
            self._active.discard(key)
        self._entry[fn] = out  # type: ignore[assignment]
        return out

    def _entry_mode(self, fn: int, ref: Ref) -> GradMode | None:
        if self.here is None:
            # Across modules: the project joined every call site already.
            modes = self.project.external_grads(ref)
            return _join_modes(modes) if modes else GradMode.ON
        modes: list[GradMode] = []
        unknown = False
        for grad, conds in self.here.entry_sites(fn) or ():
            m: GradMode | None = grad
            for cond in conds:
                if type(cond) is EntryGradOn:
                    inner = self.entry_mode(cond.fn, cond.ref)
                    if inner is None:
                        m = None if m is not GradMode.OFF else m
                    elif inner is GradMode.OFF:
                        m = GradMode.OFF
                    elif inner is GradMode.MAYBE and m is GradMode.ON:
                        m = GradMode.MAYBE
                elif type(cond) is GradNotOff:
                    h = self._grad_not_off(cond)
                    if h is False:
                        m = GradMode.OFF
                    elif h is None and m is not GradMode.OFF:
                        m = None
            if m is None:
                unknown = True
            else:
                modes.append(m)
        if self.closed or not self.here.exported(fn):
            if unknown and not modes:
                return GradMode.ON
            return _join_modes(modes) if modes else GradMode.ON
        # Other modules may call it: only an unconditional call with grad on
        # here settles that grad can be on.
        if any(m is not GradMode.OFF for m in modes):
            return _join_modes([m for m in modes if m is not GradMode.OFF])
        return None

    def undecided(self, conds: Iterable[Condition]) -> tuple[Condition, ...] | None:
        """None when a condition fails; else the ones still to decide, with
        what this resolver knows filled in (plain data, for another module's
        resolver)."""
        out = []
        for c in conds:
            h = self.holds(c)
            if h is False:
                return None
            if h is None:
                e = self._export(c)
                if not _decidable_elsewhere(e):
                    return None
                out.append(e)
        return tuple(out)

    def _export(self, c: Condition) -> Condition:
        t = type(c)
        if t is IsModel:
            return dataclasses.replace(c, value=exported(self.value(c.value)))  # type: ignore[type-var]
        if t is Attached or t is SavedFor:
            return t(exported(self.value(c.value)))  # type: ignore[call-arg]
        if t is RequiresGrad:
            # ("One of them": made in the order of a set, with repeats; each
            # once, in an order of its own.)
            return RequiresGrad(tuple(sorted_canonically({exported(self.value(v)) for v in c.values})))
        if t is GradNotOff:
            return GradNotOff(exported(self.value(c.value)), c.decorator)
        if t is Undifferentiated:
            return Undifferentiated(exported(self.value(c.callee)), c.index)
        if t is KeepsArgument:
            args = CallArgs(tuple(exported(self.value(a)) for a in c.args.args), tuple((k, exported(self.value(a))) for k, a in c.args.kwargs), dict(c.args.literals), c.args.star)
            return KeepsArgument(exported(self.value(c.callee)), args, c.index, c.kind)
        return c

    def all_hold(self, conds: Iterable[Condition]) -> bool | None:
        """True when every condition holds, False when one does not, None
        when some cannot be decided here (and none fails)."""
        unknown = False
        for c in conds:
            h = self.holds(c)
            if h is False:
                return False
            if h is None:
                unknown = True
        return None if unknown else True


@dataclass(frozen=True, slots=True)
class _ModuleObj:
    """A project module (``import utils``): its attributes are its exports."""

    file: str


def _attribute_module_objects(v: Value, r: Resolver) -> Value:
    return frozenset(f for f in v if type(f) is not _ModuleObj)


def likely(c: Condition) -> bool:
    """Conditions that usually hold (decided by callers and project-wide
    facts, not by another module's summary)."""
    return type(c) in (EntryGradOn, NoStaticGradMemory)


def _decidable_elsewhere(c: Condition) -> bool:
    """Can another module's summary decide it? Only what rests on an
    imported name (or a class with an imported base) can: a parameter's
    value from callers in other modules is not followed."""
    t = type(c)
    if t is EntryGradOn or t is NoStaticGradMemory or t is NotModule:
        return True
    if t is RequiresGrad:
        values: tuple = c.values
    elif t is KeepsArgument or t is Undifferentiated:
        values = (c.callee,)
    else:
        values = (c.value,)  # type: ignore[union-attr]
    return any(type(s.root) is not ParamRoot for v in values for s in syms_in(v))


def holds_trainable(v: Value, lookup) -> bool:
    """A module with trainable parameters is among what ``v`` may be. (An
    instance of a project class comes with the module it is, `Module(True)`
    of no torch class: where every such class is shown to hold no
    parameter, a metric or a padding written as a module, so is that.)"""
    free = False
    for f in v:
        if type(f) is Instance and lookup.is_module_class(f.cls):
            if lookup.parametric(f.cls) is not False:
                return True
            free = True
    return any(type(f) is Module and f.parametric and not f.frozen and not (free and f.qual is None) for f in v)


def differentiates_itself(v: Value, lookup) -> bool:
    """A module among what ``v`` may be whose `forward` takes gradients
    itself (a force field's `torch.autograd.grad` of its energy with
    respect to positions): it needs grad on to run, so running it with
    grad on is no waste."""
    for f in v:
        if type(f) is Instance and lookup.is_module_class(f.cls):
            ref = find_method(f.cls, "forward", lookup)
            summary = lookup.function(ref) if ref is not None else None
            if summary is not None and (summary.steps or summary.asks_graph):
                return True
    return False


def _join_modes(modes: list[GradMode]) -> GradMode:
    out = modes[0]
    for m in modes[1:]:
        if m is not out:
            out = GradMode.MAYBE
    return out


def _torch_free_decorator(f: object) -> bool:
    """A decorator (applied) of a library that never imports torch, made
    from plain arguments only: it cannot turn grad off."""
    if type(f) is not Sym or type(f.root) is not ImportRoot or f.root.level != 0 or not api.torch_free(f.root.module):
        return False
    for step in f.path:
        if type(step) is CallStep:
            given = (*step.args, *(a for _, a in step.kwargs), step.rest)
            # (The probe function it is applied to is no argument of its.)
            if any(type(x) is not Plain and type(x) is not FunctionObj for a in given for x in a):
                return False
    return True


def _unresolved(v: Value) -> bool:
    return any(type(f) is Sym for f in v) or bool(syms_in(v))


__all__ = [
    "Attached",
    "Condition",
    "EntryGradOn",
    "GradNotOff",
    "IsModel",
    "KeepsArgument",
    "NO_PROJECT",
    "NoStaticGradMemory",
    "Project",
    "RequiresGrad",
    "Resolver",
    "SavedFor",
]


pickle_as_calls(globals())
construct_fast(globals())


def called_name(target: Value) -> str | None:
    """The last name a call's callee is reached by (``evaluate`` in
    ``metrics.evaluate(...)``, ``from metrics import evaluate``, or
    ``self.model.evaluate``); None for a callee reached otherwise (the
    result of another call). Of a callee reached by several, the first by
    name (not the first the set yields: another from process to process)."""
    out: str | None = None
    for f in target:
        t = type(f)
        name = None
        if t is FunctionObj:
            name = f.fn.qualname.rsplit(".", 1)[-1]
        elif t is Sym:
            if f.path:
                last = f.path[-1]
                if type(last) is AttrStep:
                    name = last.name
            elif type(f.root) is ImportRoot and f.root.name is not None:
                name = f.root.name
        if name is not None and (out is None or name < out):
            out = name
    return out


def called_names(calls: Iterable[CallRecord]) -> tuple[str, ...]:
    """The distinct names ``calls`` reach their callees by, sorted."""
    return tuple(sorted({n for r in calls if (n := called_name(r.target)) is not None}))
