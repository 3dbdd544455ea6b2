"""Grad mode in evaluation code: AGL301 (a model run with grad on where
nothing will backpropagate).

An observer of the interpreter. ``Evaluation`` hears model calls in
evaluation code (after ``model.eval()``, in a function named like
evaluation, in a loop over a validation loader) and reports one only when
the analysis shows both halves of the claim: grad mode is on there, and the
call's outputs are never differentiated - every path from them ends in a
number, an integer tensor, a print or a metric, never in ``backward``, a
caller, module state or code the analysis cannot see. A name or an
``.eval()`` call is where to look, not proof. (AGL302 and AGL303, the
grad-mode blocks and guards, are ``grad_blocks.py``'s.)
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterator
from dataclasses import dataclass

from autograd_lint.analysis import ir
from autograd_lint.analysis import torch_api as api
from autograd_lint.analysis.api import TENSOR, Gives, member
from autograd_lint.analysis.members import switches_mode
from autograd_lint.analysis.outcome import RUNS_MODULE, STEPS, CalledFunction, Lookup
from autograd_lint.analysis.interp import Origin, Program, Run
from autograd_lint.analysis.model_calls import (
    fed_data,
    given_model,
    handed_in,
    held_locations,
    is_forward,
    may_backpropagate,
    model_locs,
    receiver,
    runs_if_detached,
    steps_or_backpropagates,
)
from autograd_lint.analysis.observer import CallEvent, Observer, ReadAttribute, Store
from autograd_lint.analysis.resolve import Condition, EntryGradOn, IsModel, NotModule, Resolver, Undifferentiated, holds_trainable
from autograd_lint.analysis.state import BACKWARD, ESCAPE, AttrOf, ClassAttr, Global, Handed, Ret, base_loc
from autograd_lint.analysis.test_code import is_test_module, is_test_helper
from autograd_lint.analysis.values import GradContext, GradMode, Instance, Module, ParamRoot, Sym, attached, graphs_of, syms_in, tensorish
from autograd_lint.rule_options import option


def _shown_model(c: Condition, lookup: Lookup) -> bool:
    """``c`` asks for a model this module shows holds trainable parameters,
    unless another module shows that its forward differentiates itself."""
    return type(c) is IsModel and c.evaluated and holds_trainable(c.value, lookup)


def _matches(name: str, patterns) -> bool:
    return any(re.search(p, name) for p in patterns)


@dataclass
class EvalFinding:
    fn: ir.Function
    node: object  # the model call
    call: ir.Call
    # "mode", "fn", "loop" (over a val loader), "data-loop" (any loop feeding
    # the model, never stepping), "eval-mode", "flag", "unused" (anywhere:
    # nothing differentiates the output)
    region: str
    region_is_function: bool = True
    loop_node: object | None = None  # for a loop region: the loop
    conditions: tuple[Condition, ...] = ()
    flag: str | None = None  # a shared pass ("flag"): the name `model.train(flag)` reads


@dataclass(frozen=True)
class _EvalState:
    """What the frame knows of eval mode: the ``.eval()`` call that began
    the evaluation region (None outside one), the models put in eval mode
    and not back in training mode, by location, and a ``torch.no_grad()``
    written as a statement (``guard``): it turns nothing off, but says the
    code after it was meant to run without grad."""

    region: object | None
    eval_locs: frozenset
    guard: object | None = None


_NO_EVAL = _EvalState(None, frozenset())


@dataclass
class _ModelCall:
    fn: ir.Function
    call: ir.Call
    region: tuple
    conditions: tuple[Condition, ...]
    # How well the call is shown to run a model: (another module must show
    # it, only a method of a model of unseen class given data). The first
    # call of a region shown best is the one reported.
    rank: tuple[bool, bool] = (False, False)
    # A whole model handed in from outside: of a class this module does not
    # show (a parameter typed `nn.Module`, or unannotated), not a layer it
    # builds.
    given: bool = False


class Evaluation(Observer):
    """AGL301: the first model call of each evaluation region."""

    def __init__(self, options: dict | None = None) -> None:
        options = options or {}
        self.fn_patterns = option(options, "eval-function-patterns")
        self.loader_patterns = option(options, "eval-loader-patterns")
        # The model calls of each region, in the order the code runs them.
        self.calls: dict[tuple, list[_ModelCall]] = {}
        self._this_run: set = set()
        self.stepping_regions: set = set()
        self._region_fn: dict[int, int] = {}
        self.found: list[EvalFinding] = []
        self.in_eval_mode: dict[int, _ModelCall] = {}
        self.flags: dict[int, str] = {}  # id(`model.train(flag)` call) -> the flag's name
        # Functions that call what may backpropagate out of sight (`opt.step(
        # closure)`, `accelerator.backward(...)`), and loops that hand a batch
        # to unseen code: never "code that never steps".
        self.opaque: set[int] = set()
        self.opaque_loops: set = set()
        self.flag_loops: dict[tuple, object] = {}  # a flag region -> the loop around its model call
        self.module_guard: object | None = None  # a module-level `torch.no_grad()` statement
        self.module_grad_off = False  # the module's code ends with grad switched off
        # Models kept in state (self attributes, module globals) put in eval
        # mode, and put back in training mode, anywhere in the module.
        self.evaled: set = set()
        self.trained: set = set()
        # The flow nodes some call reads (`.detach()`, `.argmax()`, `print`).
        self.read: set = set()
        # Those a `.detach()` reads: whoever wrote it took the value for
        # one that carries a graph.
        self.detached: set = set()
        self._model_outputs: set | None = None  # the flow nodes a model call's output feeds
        self._lookup: Lookup | None = None  # the module's, once every run is done (``finish``)
        # For each function of this module, whether each call of it
        # (caller, call) is made in evaluation code.
        self.caller_eval: dict[int, dict[tuple, bool]] = {}
        # Functions that ask for a graph somewhere (`x.requires_grad_()`,
        # `torch.tensor(v, requires_grad=True)`): what they compute is meant
        # to be differentiated, whatever the flow shows.
        self.forced: set[int] = set()
        # function -> (model location, call node) of the model calls it
        # makes with grad off: what it returns of those, its callers cannot
        # differentiate (``_returned_without_grad``).
        self.off_calls: dict[int, set[tuple]] = {}
        # function -> ids of the model calls it makes with grad off, wherever
        # the model is (``_retried_with_grad``).
        self.off_models: dict[int, set[int]] = {}
        self._model_loc: dict[int, object] = {}  # id(model call) -> the model's location
        # id(call) -> (event, state, what shows a model) of a call that runs
        # a model once its output is `.detach()`ed (`_runs_if_detached`).
        self._may_run: dict[int, tuple[CallEvent, _EvalState, tuple[Condition, ...]]] = {}
        # By model call: what the calls its output is handed to must not do
        # (``_hands_on``).
        self._handed: dict[int, tuple[Condition, ...]] = {}

    def join_state(self, a: object, b: object) -> object:
        assert isinstance(a, _EvalState) and isinstance(b, _EvalState)
        return _EvalState(a.region if a.region == b.region else None, a.eval_locs & b.eval_locs, a.guard if a.guard == b.guard else None)

    def _detaches(self, sources: frozenset) -> None:
        """What ``sources`` hold is read without its graph: the calls whose
        output it is, where it is one's (`label_smoother(out, y).detach()`:
        that call's, not what it was given), else the values themselves."""
        origins = {k for k in sources if type(k) is Origin}
        self.detached |= origins or sources

    def store(self, run: Run, e: Store) -> None:
        # `self.vocoder = vocoder` after `vocoder.eval()` (a loader that
        # builds the model, puts it in eval mode and keeps it): the module
        # keeps a model in eval mode, as `self.vocoder.eval()` would.
        if e.how == "attribute" and (held := held_locations(frozenset({e.container}))):
            state: _EvalState = run.frame.observed.get(self) or _NO_EVAL
            if not state.eval_locs.isdisjoint(map(base_loc, e.sources)):
                self.evaled |= held

    def read_attribute(self, run: Run, e: ReadAttribute) -> None:
        # `q_v.data.cpu().numpy()`: read as `.detach()` reads it.
        if member(TENSOR, e.target.attr, attribute=True).gives is Gives.DETACHED:
            self.read |= e.sources
            self._detaches(e.sources)
            self._detached_call(run, e.target.value)

    def call(self, run: Run, e: CallEvent) -> None:
        c = e.call
        self.read |= e.sources
        if e.receiver is not None and (row := e.resolved.tensor) is not None and row.gives is Gives.DETACHED:
            self._detaches(e.sources - e.arg_sources)
            if type(c.func) is ir.Attr:
                self._detached_call(run, c.func.value)
        # `model.eval()` starts evaluation code, `model.train()` ends it.
        # Which models are in eval mode is kept too: a frozen teacher inside
        # training code.
        state: _EvalState = run.frame.observed.get(self) or _NO_EVAL
        if may_backpropagate(e):
            if steps_or_backpropagates(e):
                self.opaque.add(run.index)
            else:
                # A helper of unseen code given a batch (`train_step(batch)`)
                # may run a step: not in that loop.
                self.opaque_loops.update(lc.facts.loop for lc in run.loops if not lc.facts.comprehension and not lc.items.isdisjoint(e.arg_sources))
        if e.discarded and any(type(f) is GradContext and f.mode is GradMode.OFF and f.source not in api.SWITCHES_AS_STATEMENT for f in e.outcome.value):
            # `torch.no_grad()` as a statement (AGL303): what follows was
            # meant to run without grad (at module level: the whole module).
            if run.fn.is_module:
                self.module_guard = self.module_guard or c.node
            else:
                run.frame.observed[self] = dataclasses.replace(state, guard=c.node)
            return
        mode = e.resolved.mode
        switches = e.receiver is not None and switches_mode(e.receiver, mode, len(c.args), run.prog.lookup)
        if mode is False and switches:
            self.evaled |= held_locations(receiver(run, c))
            run.frame.observed[self] = _EvalState(c.node, state.eval_locs | receiver(run, c), state.guard)
            return
        if mode is True and switches:
            arg = c.args[0].value if c.args else c.keyword("mode")
            off = type(arg) is ir.Const and arg.value is False
            locs = state.eval_locs | receiver(run, c) if off else state.eval_locs - receiver(run, c)
            (self.evaled if off else self.trained).update(held_locations(receiver(run, c)))
            # `model.train(is_train)`: a shared train/eval pass, evaluating
            # when the flag is false.
            if type(arg) is ir.Name:
                self.flags[id(c.node)] = arg.id
            run.frame.observed[self] = _EvalState(c.node if off or type(arg) is ir.Name else None, locs, state.guard)
            return
        region_node = state.region
        if e.resolved.backward and region_node is not None:
            # In a shared pass, `if is_train: loss.backward()` is the
            # training run's: the evaluation run never reaches it.
            flag = self.flags.get(id(region_node))
            if flag is None or not any(type(g) is ir.Name and g.id == flag for g in run.guards):
                self.stepping_regions.add(region_node)
                self._region_fn[id(region_node)] = run.index
        self._helper_call(run, e, state)
        model = self._model(run, e)
        if model is None:
            runs = runs_if_detached(run.prog, e)
            if runs is not None:
                self._may_run[id(c.node)] = (e, state, runs)
            return
        self._model_call(run, e, state, model)

    def _detached_call(self, run: Run, expr: ir.Expr) -> None:
        """``expr`` is read without its graph (`flow.sample(500).detach()`):
        where it is a call ``runs_if_detached`` held back (a module method
        given only numbers, a method of an instance of unknown kind),
        whoever wrote it took its output for one that carries a graph,
        which only a run of a model makes: the call is a model run."""
        if type(expr) is ir.Call and (held := self._may_run.pop(id(expr.node), None)) is not None:
            self._model_call(run, *held)

    def _model_call(self, run: Run, e: CallEvent, state: _EvalState, model: tuple[Condition, ...]) -> None:
        """``e`` runs a model (what shows it: ``model``) in evaluation state
        ``state``: recorded in the regions it belongs to."""
        c = e.call
        region_node = state.region
        at = e.at
        runs = model_locs(run, e)
        if at.grad is GradMode.OFF:
            self.off_models.setdefault(run.index, set()).add(id(c.node))
        for loc in runs:
            if at.grad is GradMode.OFF:
                self.off_calls.setdefault(run.index, set()).add((loc, c.node))
            else:
                self._model_loc[id(c.node)] = loc
        if at.grad is not GradMode.ON or run.forced or self._retried_with_grad(run.fn, c):
            return
        fn = at.fn
        if is_test_helper(fn, run.prog.ir, run.prog.file) or fn.name in api.ONCE_METHODS:
            # Tests and test helpers check behaviour, and construction runs
            # once (a dummy forward for shapes): their cost is not the point.
            return
        if not e.discarded:
            # Any model call, wherever it is: reported when nothing
            # differentiates what it gives (decided in `finish`). A call made
            # for its effects (hooks that capture features) is not one.
            self._candidate(run, e, ("unused", c.node), model)
        in_eval = state.eval_locs and runs & state.eval_locs
        if in_eval:
            # A model put in eval mode, called here: in training code, a
            # teacher (decided in `finish`, once the function's role is known).
            self.in_eval_mode[id(c.node)] = _ModelCall(fn, c, ("eval-mode", next(iter(in_eval))), tuple(run.prog.conditions_at(at)) + model)
        if region_node is not None:
            key: tuple = ("flag" if id(region_node) in self.flags else "mode", region_node)
            if key[0] == "flag" and at.loops:
                self.flag_loops[key] = at.loops[-1].node
        elif self._eval_named(run.prog, fn):
            key = ("fn", fn.index)
            if fn.cls is not None and run.prog.is_module_class(fn.cls) is None:
                # (Its base is another module's: evaluation code only if
                # that shows the class is no nn.Module.)
                model = model + (NotModule(frozenset({Instance(run.prog.class_ref[fn.cls.id])})),)
        elif state.guard is not None or self.module_guard is not None:
            key = ("guard", fn.index)
        elif self._in_val_loop(run, at) is not None:
            key = ("loop", self._in_val_loop(run, at))
        else:
            # (Evaluation code if every caller here runs it in evaluation
            # code: decided in `finish`.)
            self._candidate(run, e, ("callers", fn.index), model)
            # Any loop that feeds data to the model, in code that never
            # backpropagates (an inference or scoring script): decided in
            # `finish`, once the loop's facts are known. Not a loop over
            # layers (`for layer in self.layers: x = layer(x)`).
            loops = [l for l in at.loops if l in run.prog.loop_facts and not run.prog.loop_facts[l].comprehension]
            held = held_locations(runs)
            module_class = run.prog.is_module_class(fn.cls) if fn.cls is not None else False
            in_module = module_class is not False
            # (A class shown to be a module runs its blocks in its forward:
            # a frozen feature extractor of a loss.)
            if held and module_class is not True and (not loops or not fn.is_module):
                # A model kept in state (`self.net`), which the module may
                # have put in eval mode for good (decided in `finish`), in a
                # loop or not (a generator yielding audio per batch). (A
                # script's own loops run in order: they are in eval mode
                # after its `.eval()`, not before.)
                self._candidate(run, e, ("held", fn.index, min(held, key=repr)), model)
            if not loops:
                return
            lf = run.prog.loop_facts[loops[-1]]
            if runs & lf.targets or (in_module and fn.name == "forward"):
                return
            key = ("data-loop", lf.loop)
        self._candidate(run, e, key, model)

    def _candidate(self, run: Run, e: CallEvent, key: tuple, model: tuple[Condition, ...]) -> None:
        """The model call ``e`` in region ``key``."""
        c = e.call
        conditions = tuple(run.prog.conditions_at(e.at)) + model
        # The first model call of the region in this run (a later run of the
        # same function knows more: it replaces what an earlier one said);
        # the first shown to be one, rather than one that another module
        # would have to show is one (`iterator(dataset)` of an imported
        # class) or a method that may not run it (`model.load(path)`).
        # (A model shown here, whose class another module may show to
        # differentiate itself, is shown: ``_shown_model``.)
        shown = all(_shown_model(m, run.prog.lookup) for m in model)
        rank = (not shown, RUNS_MODULE in e.outcome.effects)
        if key not in self._this_run:
            self._this_run.add(key)
            self.calls[key] = []
        if not any(mc.call is c for mc in self.calls[key]):
            given = given_model(e.callee, c.func, run.prog)
            self.calls[key].append(_ModelCall(run.fn, c, key, conditions, rank, given))

    def _in_val_loop(self, run: Run, at) -> object | None:
        """The innermost loop around ``at`` over a validation loader."""
        prog = run.prog
        for l in reversed(at.loops):
            lf = prog.loop_facts.get(l)
            if lf is not None and lf.iter_text and _matches(lf.iter_text.rsplit(".", 1)[-1], self.loader_patterns):
                return lf.loop
        return None

    def _helper_call(self, run: Run, e: CallEvent, state: _EvalState) -> None:
        """A call of one of this module's functions: whether it is made in
        evaluation code (after `.eval()`, in a function named for
        evaluation, in a loop over validation data), with grad on."""
        called = [x.ref for x in e.outcome.effects if type(x) is CalledFunction and x.ref.file == run.prog.file]
        if not called:
            return
        in_eval = e.at.grad is GradMode.ON and not run.forced and not is_test_helper(run.fn, run.prog.ir, run.prog.file) and (
            state.region is not None or self._eval_named(run.prog, run.fn) or self._in_val_loop(run, e.at) is not None
        )
        for ref in called:
            fn = run.prog.fn_by_qualname.get(ref.qualname)
            if fn is not None:
                self.caller_eval.setdefault(fn.index, {})[(run.index, id(e.call.node))] = in_eval

    def start(self, run: Run) -> None:
        self._this_run: set = set()
        self._may_run = {}

    def end(self, run: Run) -> None:
        if run.forced:
            self.forced.add(run.index)
        if run.fn.is_module:
            # `torch.set_grad_enabled(False)` left in force by the module's
            # own code (an inference script or library switching grad off at
            # import): its functions run with grad off.
            self.module_grad_off = run.frame.reachable and run.frame.grad is GradMode.OFF

    def forget(self, fn: int) -> None:
        self.opaque.discard(fn)
        self.forced.discard(fn)
        self.off_calls.pop(fn, None)
        self.off_models.pop(fn, None)
        for sites in self.caller_eval.values():
            for k in [k for k in sites if k[0] == fn]:
                del sites[k]
        self.calls = {k: cs for k, cs in self.calls.items() if cs[0].fn.index != fn}
        self.in_eval_mode = {k: c for k, c in self.in_eval_mode.items() if c.fn.index != fn}
        self.stepping_regions = {r for r in self.stepping_regions if self._region_fn.get(id(r)) != fn}

    def _model(self, run: Run, e: CallEvent) -> tuple[Condition, ...] | None:
        """Is the callee a model (a module with parameters)? () when shown,
        (IsModel,) when that depends on another module, None when not."""
        if e.method is not None and not e.resolved.forward:
            # `net.encoder(x)`, `self.shared_step(batch)`, `model.predict(x)`:
            # a submodule, or a method that runs a model, shown by the graph
            # its result roots at this very call.
            node = e.call.node
            # (Not a helper that runs the training step itself,
            # `self._train_batch(batch)`: what it returns was differentiated
            # inside.)
            if any(g.node is node and g.how == "call" for g in graphs_of(e.outcome.value)) and STEPS not in e.outcome.effects:
                return ()
            # A method of a model of unseen class (`model.predict(batch)`)
            # runs it when what it is given is data: a tensor, or what a loop
            # reads from its items (not `model.init_hidden(batch_size)`).
            if RUNS_MODULE in e.outcome.effects and (any(tensorish(a) for a in e.args) or fed_data(run, e)):
                return ()
            return None
        callee = e.callee
        if holds_trainable(callee, run.prog.lookup):
            # (Whether the model's own forward takes gradients, which needs
            # grad on, is decided once every run is done, or by the module
            # that defines its class: where its class may be known.)
            class_known = any(type(f) is Instance or (type(f) is Sym and type(f.root) is not ParamRoot) for f in callee)
            return (IsModel(callee, evaluated=True),) if class_known else ()
        # An instance made from something another module defines (a model
        # built by an imported class or factory), or a parameter its callers
        # here give a model. Calling a bare imported function or class is not
        # running a model.
        syms = frozenset(f for f in callee if type(f) is Sym and (f.path or type(f.root) is ParamRoot))
        if syms:
            return (IsModel(syms, evaluated=True),)
        return None

    def _eval_named(self, prog: Program, fn: ir.Function) -> bool:
        """Named like evaluation code. A module's own methods (`predict_*`,
        `generate_*` heads) are part of its forward, whatever their name."""
        if fn.cls is not None and prog.is_module_class(fn.cls):
            return False
        return _matches(fn.name, self.fn_patterns)

    def finish(self, prog: Program) -> None:
        out: list[EvalFinding] = []
        if self.module_grad_off or is_test_module(prog.file, prog.ir):
            # (A module pytest collects is test code, its helpers included.)
            self.found = []
            return
        self._hooked = self._hooks_capture(prog)
        self._lookup = prog.lookup
        # One finding per function: its region whose model call is shown best
        # (ties: the first region, in the order the code runs).
        best: dict[int, tuple[tuple, _ModelCall]] = {}
        resolver = Resolver(prog)
        # (A call whose output nothing differentiates, outside any region,
        # only where the function has no region of its own reported.)
        ordered = [k for k in self.calls if k[0] not in ("unused", "callers")] + [k for k in self.calls if k[0] in ("unused", "callers")]
        for key in ordered:
            calls = self.calls[key]
            # The region's call shown best to run a model: not one this
            # module shows is not one (a parameter its callers give a
            # function), the first of those equally well shown.
            shown = [mc for mc in (self._shown_by_detach(prog, resolver, m) for m in calls) if not self._refuted(resolver, mc)]
            if not shown:
                continue
            mc = min(shown, key=lambda m: m.rank)
            old = best.get(mc.fn.index)
            if key[0] in ("unused", "callers") and old is not None and old[0][0] not in ("unused", "callers"):
                continue
            if self._decided(prog, key, mc):
                if old is None or mc.rank < old[1].rank:
                    best[mc.fn.index] = (key, mc)
        for key, mc in best.values():
            fn = mc.fn
            kind = key[0]
            f = EvalFinding(fn, mc.call.node, mc.call, kind, conditions=mc.conditions + self._handed.get(id(mc.call.node), ()))
            if kind == "flag":
                f.flag = self.flags[id(key[1])]
                f.loop_node = self.flag_loops.get(key)
            # Evaluation that is only part of a function (a validation loop in
            # a training function): wrap it rather than decorate the function.
            f.region_is_function = kind in ("fn", "guard", "callers") or (kind == "mode" and fn.index not in prog.stepping)
            if kind in ("loop", "data-loop"):
                f.loop_node = key[1].node
            out.append(f)
        flagged = set(best)
        # Training code (it backpropagates) that runs a model it put in eval
        # mode, whose output is never differentiated (a teacher's logits
        # used `.detach()`ed): that one call needs `no_grad`, not the
        # function. A model differentiated anywhere in the function (an
        # adversarial attack, a saliency map) is not a teacher: its other
        # calls are part of the same computation.
        differentiated = {(mc.fn.index, mc.region) for mc in self.in_eval_mode.values() if not self._never_differentiated(prog, mc.call, home=mc.fn.index)}
        for mc in self.in_eval_mode.values():
            fn = mc.fn
            if fn.index in flagged or fn.index not in prog.stepping or (fn.index, mc.region) in differentiated:
                continue
            flagged.add(fn.index)
            out.append(EvalFinding(fn, mc.call.node, mc.call, "eval-mode", region_is_function=False, conditions=mc.conditions))
        # `self.predict(x)` in `evaluate`, where `predict` has its own finding:
        # one fix (in `predict`) covers both; report it once.
        # (The callee is the flagged function this one calls under that
        # name: not a namesake in another class.)
        called = {(s.caller, s.callee) for s in prog.call_sites if s.callee is not None}
        self.found = [f for f in out if not (type(f.call.func) is ir.Attr and any(g.fn is not f.fn and g.fn.name == f.call.func.attr and (f.fn.index, g.fn.index) in called for g in out))]

    def _shown_by_detach(self, prog: Program, resolver: Resolver, mc: _ModelCall) -> _ModelCall:
        """A call of something of unknown kind (a teacher handed to the
        constructor, a sampler's denoiser) whose own output is `.detach()`ed:
        the code takes what it gives for carrying a graph, which a model
        (trainable parameters) makes from data. Its ``IsModel`` is marked so:
        it holds where no module shows what the value is, and fails where
        one shows something else (a method of a base class). Not in code
        that steps or backpropagates: there `.detach()` stops a gradient at
        a model trained by another step (a GAN's generator in the
        discriminator's update), or reads a loss a closure already
        differentiated."""
        if mc.fn.index in prog.stepping or mc.fn.index in self.opaque:
            return mc
        unresolved = [c for c in mc.conditions if type(c) is IsModel and not c.detached and resolver.holds(c) is None]
        if not unresolved or not all(handed_in(prog, s) for c in unresolved for s in syms_in(c.value)):
            return mc
        # (What is detached must be this call's output, not another model's
        # made from it: `outputs = model(**self._prepare_inputs(batch))`.)
        if self._own_flow(prog, Origin(mc.call.node)).isdisjoint(self.detached):
            return mc
        return dataclasses.replace(mc, conditions=tuple(dataclasses.replace(c, detached=True) if c in unresolved else c for c in mc.conditions))

    def _own_flow(self, prog: Program, origin: Origin) -> set:
        """Where the output of the call at ``origin`` goes, up to the output
        of another model call made from it (a binding another call's output
        feeds)."""
        if self._model_outputs is None:
            self._model_outputs = {n for k, dsts in prog.flow.items() if type(k) is Origin for n in dsts}
        mine = prog.flow.get(origin, set())
        seen = {origin}
        todo = [origin]
        while todo:
            for n in prog.flow.get(todo.pop(), ()):
                if n not in seen and (n in mine or n not in self._model_outputs):
                    seen.add(n)
                    todo.append(n)
        return seen

    @staticmethod
    def _refuted(resolver: Resolver, mc: _ModelCall) -> bool:
        """This module shows the call runs no model: its ``IsModel`` rests
        on parameters only, and their values at the calls here are not one."""
        for c in mc.conditions:
            if type(c) is IsModel and all(type(s.root) is ParamRoot for s in syms_in(c.value)) and resolver.holds(c) is not True:
                return True
        return False

    def _decided(self, prog: Program, key: tuple, mc: _ModelCall) -> bool:
        """The region's model call is reported: what shows the region is
        evaluation code holds, and nothing shows its output differentiated."""
        fn = mc.fn
        kind = key[0]
        if mc.call.node in prog.refused_graphs:
            # What it gives is converted to NumPy undetached, which raises
            # where it carries a graph: where the code works, grad is off
            # here (a caller's `no_grad` this module does not show).
            return False
        if kind in ("fn", "guard") and fn.index in prog.stepping:
            return False  # saliency maps, adversarial evaluation: they need the graph
        if kind in ("mode", "flag") and key[1] in self.stepping_regions:
            return False
        if kind == "loop" and prog.loop_facts[key[1]].steps:
            return False
        if kind == "data-loop" and (not prog.loop_facts[key[1]].data or key[1] in self.opaque_loops or self._may_step(prog, fn) or self._in_forward(prog, fn)):
            return False
        if kind == "held" and (key[2] not in self.evaled or key[2] in self.trained or self._may_step(prog, fn)):
            return False
        if kind == "callers":
            # Every call of it here is made in evaluation code (and there is
            # one): it is evaluation code too.
            sites = self.caller_eval.get(fn.index)
            if not sites or not all(sites.values()) or self._may_step(prog, fn) or is_forward(prog, fn.index) or self._in_forward(prog, fn):
                return False
            return self._never_differentiated(prog, mc.call, home=mc.fn.index)
        if kind == "unused":
            # No region shows evaluation code: only where its output goes
            # does. Every path from it must end where nothing differentiates
            # (a number, an integer tensor, `.detach()`, a print); code the
            # analysis cannot see, state, and a return to callers it does
            # not show may differentiate it. (Its output must be followed: a
            # call of a module, whose result the flow graph roots at the
            # call.)
            # Only where grad is on: code that backpropagates itself (a
            # training step), a script, or a function or a method of a
            # plain class, which runs as its callers call it (grad on
            # unless one shown turns it off: the conditions). Not a
            # module's methods: `forward`, and the methods that compute
            # with its layers (`encode`, `_predict`), run inside whatever
            # their callers run, a pipeline under `no_grad` or a training
            # forward, neither of which this module shows.
            origin = Origin(mc.call.node)
            # (Detached at once, `policy(obs).detach()`, it flows nowhere
            # else: followed all the same.)
            # (Not a call of something of unknown kind: the flow graph roots
            # its output at the call only to tell whose output a `.detach()`
            # reads, ``_own_flow``.)
            if fn.index in self.forced or (origin not in prog.flow and origin not in self.detached) or mc.call.node in prog.unknown_calls or self._hooked:
                return False
            in_module = fn.cls is not None and prog.is_module_class(fn.cls) is not False
            if in_module and fn.index not in prog.stepping:
                # A module's method runs as its callers run it: under
                # `no_grad` in a pipeline, with grad on in training. Two
                # shapes show a whole model run for nothing with grad on,
                # where what it gives never leaves the method (only read
                # out: `argmax`, `.detach()`, a print): a model handed to
                # the module (a teacher whose logits are detached), and the
                # module's own forward run by a helper that this module's
                # code calls, always with grad on (a tokenizer's
                # `get_codebook_indices` called by another model's forward).
                # Not its own layers: a head whose output refines detached
                # reference points is trained through another call.
                if not self._kept_local(prog, origin):
                    return False
                sites = prog.callers_of(fn.index)
                own = self._runs_own_forward(fn, mc.call) and bool(sites) and all(s.grad is GradMode.ON for s in sites) and self._trained_through(prog, fn)
                # (`_kept_local` leaves nothing for `_never_differentiated`
                # to find: no backward, return, state or unseen code.)
                return mc.given or own
            if self._in_forward(prog, fn) or is_forward(prog, fn.index):
                return False
            if fn.index not in prog.stepping and not fn.is_module:
                # A private helper (`_forward_and_sample`) is called by its
                # own package, in ways this module may not show (through a
                # variable, from a `no_grad` loop elsewhere): only a public
                # entry point is called as users call it, grad on.
                if fn.name.startswith("_") and not (fn.name.startswith("__") and fn.name.endswith("__")) and not prog.callers_of(fn.index):
                    return False
            # Its output is read somewhere (by `.detach()`, `.argmax()`,
            # `print`...): a call whose every output is bound and never read
            # is made for its effects (a forward hook captures what it
            # wants). (Of a tuple, the parts left unread differentiate
            # nothing.)
            reach = prog.reaches({origin}, {BACKWARD, ESCAPE})
            ends = [k for k in reach if not prog.flow.get(k)]
            if ends and all(k not in self.read and type(k) is not Handed for k in ends):
                return False
            # Returned to a caller that asks for a graph (a
            # `loss.requires_grad_()` there): gradients are wanted, and the
            # output's detaching is that caller's bug (AGL501), not this.
            if any(s.caller in self.forced for k in reach if type(k) is Ret for s in prog.callers_of(k.fn)):
                return False
            return self._never_differentiated(prog, mc.call, shown=False, returned=True, home=mc.fn.index) and self._hands_on(prog, mc)
        # In a shared pass every backward is the training run's (above). A
        # loop nobody backpropagates in, or a model kept in eval mode, is
        # evaluation code only as far as what its outputs reach shows. So is
        # a module's own `forward` (and what it calls) that puts a submodule
        # in eval mode (frozen batch norm, a generator the latents train
        # through): what it returns, its callers may differentiate.
        in_forward = is_forward(prog, fn.index) or self._in_forward(prog, fn)
        return self._never_differentiated(
            prog, mc.call, backward_ok=kind == "flag", shown=kind != "data-loop", returned=kind == "held" or in_forward, home=mc.fn.index
        ) and (kind != "data-loop" or self._hands_on(prog, mc))

    def _hands_on(self, prog: Program, mc: _ModelCall) -> bool:
        """Where only what the output reaches shows nothing differentiates
        it, the calls of values of unknown kind it is handed to (taken for
        modules: `update(fabric, loss, optimizer)` of an imported helper)
        must differentiate nothing of it, which the modules that define
        them decide: the finding waits on them (``Undifferentiated``)."""
        reach = prog.reaches_matched({Origin(mc.call.node)}, {BACKWARD, ESCAPE}, mc.fn.index)
        # (In the order the calls were made: `prog.handed` is filled as the
        # runs go.)
        self._handed[id(mc.call.node)] = tuple(Undifferentiated(callee, k.index) for k, callee in prog.handed.items() if k in reach)
        return True

    def _retried_with_grad(self, fn: ir.Function, call: ir.Call) -> bool:
        """The call is the retry, in a `try`'s handler, of the same call the
        `try` made with grad off (`except RuntimeError:` after `with
        torch.no_grad():`): it runs because the model failed without grad
        (its forward takes `autograd.grad`), so grad is wanted here."""
        name = ir.dotted(call.func)
        off = self.off_models.get(fn.index, ())
        if name is None or not off:
            return False
        for s in ir.statements(fn.body):
            if type(s) is not ir.Try:
                continue
            handled = any(call is e for h in s.handlers for st in ir.statements(h.body) for e in ir.statement_exprs(st))
            if handled and any(
                type(e) is ir.Call and id(e.node) in off and ir.dotted(e.func) == name for st in ir.statements(s.body) for e in ir.statement_exprs(st)
            ):
                return True
        return False

    def covers(self, fn: int, loops: tuple) -> bool:
        """A graph made in function ``fn`` would not be made with this
        observer's findings fixed: the function runs under ``no_grad``, or
        the loop around its model call does (``loops``: those around the
        graph's use)."""
        return any(
            f.region_is_function or (f.loop_node is not None and any(loop.node is f.loop_node for loop in loops)) for f in self._standing(fn)
        )

    def covers_return(self, prog: Program, fn: int) -> bool:
        """What function ``fn`` returns would carry no graph with this
        observer's findings fixed: the function runs under ``no_grad``, or
        it never trains and what it returns is the output of a model call
        reported here (the call wrapped in ``no_grad``)."""
        # (Not a function that also trains: what it returns may be the
        # training loss, `return train_loss, eval_loss`.)
        return any(
            f.region_is_function or (fn not in prog.stepping and Ret(fn) in prog.reaches({Origin(f.node)}, {Ret(fn)})) for f in self._standing(fn)
        )

    def _standing(self, fn: int) -> Iterator[EvalFinding]:
        """This observer's findings in function ``fn`` that rest on this
        module alone (what another finding may count on being fixed); or
        on what holds unless another module shows otherwise (the callers'
        grad mode, a class's base being no module)."""
        lookup = self._lookup
        return (
            f for f in self.found if f.fn.index == fn and all(type(c) is EntryGradOn or type(c) is NotModule or (lookup is not None and _shown_model(c, lookup)) for c in f.conditions)
        )

    @staticmethod
    def _hooks_capture(prog: Program) -> bool:
        """This module registers forward hooks: a model run may be made for
        what they capture (intermediate features a loss differentiates),
        whatever becomes of its output."""
        return any(not api.FORWARD_HOOKS.isdisjoint(f.method_calls) for f in prog.functions)

    @staticmethod
    def _trained_through(prog: Program, fn: ir.Function) -> bool:
        """``fn`` is called, through this module's calls, by code that
        trains: a function that backpropagates, or a module's ``forward``
        that returns a graph (its callers differentiate it)."""
        seen = {fn.index}
        todo = [fn.index]
        while todo and len(seen) < 32:
            for s in prog.callers_of(todo.pop()):
                if s.caller in seen:
                    continue
                seen.add(s.caller)
                if s.caller in prog.stepping:
                    return True
                summary = prog.summaries.get(s.caller)
                if is_forward(prog, s.caller) and summary is not None and attached(summary.returns):
                    return True
                todo.append(s.caller)
        return False

    @staticmethod
    def _runs_own_forward(fn: ir.Function, call: ir.Call) -> bool:
        """``call`` is ``self(...)`` or ``self.forward(...)`` in method ``fn``."""
        if not fn.param_names:
            return False
        func = call.func
        if type(func) is ir.Attr and func.attr == "forward":
            func = func.value
        return type(func) is ir.Name and func.id == fn.param_names[0]

    def _kept_local(self, prog: Program, origin: Origin) -> bool:
        """What the call at ``origin`` gives is read, and every path from it
        ends in its own function: no return, no state, nothing unseen."""
        reach = prog.reaches({origin}, {BACKWARD, ESCAPE})
        if any(k is BACKWARD or k is ESCAPE or type(k) in (Ret, ClassAttr, Global, AttrOf) for k in reach):
            return False
        ends = [k for k in reach if not prog.flow.get(k)]
        return bool(ends) and any(k in self.read for k in ends)

    @staticmethod
    def _in_forward(prog: Program, fn: ir.Function) -> bool:
        """A method of a module class its ``forward`` calls (a recurrence
        unrolled over time steps builds the forward's graph)."""
        if fn.cls is None or prog.is_module_class(fn.cls) is False:
            return False
        return any(prog.fn_at(s.caller).name == "forward" for s in prog.callers_of(fn.index))

    def _may_step(self, prog: Program, fn: ir.Function) -> bool:
        """``fn`` backpropagates, or may: it calls what may, or a function
        nested in it does (a closure handed to ``optimizer.step``), or it
        calls one of this module's functions that does."""
        if fn.index in prog.stepping or fn.index in self.opaque:
            return True
        for f in prog.functions:
            p = f.parent
            while p is not None and p is not fn:
                p = p.parent
            if p is fn and (f.index in prog.stepping or f.index in self.opaque):
                return True
        return any(s.caller == fn.index and s.callee is not None and (s.callee in prog.stepping or s.callee in self.opaque) for s in prog.call_sites)

    def _returned_without_grad(self, prog: Program, call: ir.Call, ret: Ret) -> bool:
        """What the model call gives is returned (``ret``) where the function
        also returns, on another path, what
        the same model gave with grad off (`get_image_embeddings`: one
        branch under `torch.no_grad()`, the other not, both appended to the
        list it returns): its callers cannot differentiate what it returns,
        or that path would be their bug."""
        fn = prog.fn_at(ret.fn) if ret.fn < len(prog.functions) else None
        if fn is None or fn.cls is not None and prog.is_module_class(fn.cls) is not False:
            return False
        model = self._model_loc.get(id(call.node))
        if model is None:
            return False
        for loc, node in self.off_calls.get(ret.fn, ()):
            if loc == model and node is not call.node and ret in prog.reaches({Origin(node)}, {BACKWARD, ESCAPE}):
                return True
        return False

    def _never_differentiated(
        self, prog: Program, call: ir.Call, backward_ok: bool = False, shown: bool = True, returned: bool = False, home: int | None = None
    ) -> bool:
        """Nothing the code shows differentiates the call's output: no path
        from it reaches ``backward`` (``backward_ok``: a backward that run
        does not reach), through locals, state, returns to callers in this
        module and the helpers it follows. Code the analysis cannot see, a
        return to callers it does not show and state nobody here reads are
        not counter-evidence (unknown is neither), where the code is shown
        to be evaluation code (``shown``); where it is only a loop nobody
        backpropagates in, they are (the loop's role rests on what is seen).
        ``returned``: a return to callers it does not show is (a model kept
        in eval mode may be a frozen feature extractor of a loss). ``home``:
        the function the call is in; a value it hands a helper comes back
        only to it (``Program.reaches_matched``)."""
        reach = prog.reaches_matched({Origin(call.node)}, {BACKWARD, ESCAPE}, home)
        for k in reach:
            if k is BACKWARD and backward_ok:
                continue
            if k is BACKWARD:
                return False
            if type(k) is Ret and self._returned_without_grad(prog, call, k):
                continue
            if returned and type(k) is Ret and (not prog.callers_of(k.fn) or is_forward(prog, k.fn)):
                # Returned to callers it does not show, or by a module's
                # `forward` (its callers run the module: their use of what
                # it returns is not followed through this return).
                return False
            if shown:
                continue
            if k is ESCAPE:
                return False
            t = type(k)
            if t is ClassAttr or t is Global or t is AttrOf:
                return False
            if t is Ret and not prog.callers_of(k.fn):
                return False
        return True
