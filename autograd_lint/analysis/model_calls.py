"""What a call is to the evaluation rule (AGL301): where the model it runs
is held, whether what it is given is data, whether it may backpropagate,
and what shows that a call of something of unknown kind runs a model.
Kept apart from ``evaluation``, which decides the regions and the
findings."""

from __future__ import annotations

from autograd_lint.analysis import ir
from autograd_lint.analysis.interp import Program, Run
from autograd_lint.analysis.observer import CallEvent
from autograd_lint.analysis.outcome import MAY_RUN_MODULE, RUNS_MODULE, CalledFunction
from autograd_lint.analysis.paths import is_static
from autograd_lint.analysis.records import reads_loop_items
from autograd_lint.analysis.resolve import Condition, IsModel
from autograd_lint.analysis.state import ClassAttr, Global
from autograd_lint.analysis.values import NOTHING, ImportRoot, Module, ParamRoot, Qual, Sym, Value, plain_only, tensorish

def receiver(run: Run, c: ir.Call, callee: bool = False) -> frozenset:
    """The location of ``model`` in ``model.eval()`` (or, ``callee``, in
    ``model(x)``), if it has one."""
    e = c.func if callee else (c.func.value if type(c.func) is ir.Attr else None)
    if type(e) not in (ir.Name, ir.Attr):
        return frozenset()
    loc = run.root_loc(e)  # type: ignore[attr-defined]
    return frozenset() if loc is None else frozenset({loc})


def model_locs(run: Run, e: CallEvent) -> frozenset:
    """The location of the model a call runs: the receiver of a method
    (`self.vocoder.decode(x)`, `teacher.forward(x)`), else what is called
    (`self.model(x)`, or `model` where `model.net(x)` calls a submodule
    that has no location of its own)."""
    if e.method is not None:
        return receiver(run, e.call)
    return receiver(run, e.call, callee=True) or receiver(run, e.call)


def held_locations(locs: frozenset) -> frozenset:
    """The locations among ``locs`` that outlive a call: ``self`` attributes
    and module globals."""
    return frozenset(k for k in locs if type(k) is ClassAttr or type(k) is Global)


def is_forward(prog: Program, index: int) -> bool:
    fn = prog.fn_at(index)
    return fn.cls is not None and fn.name == "forward" and prog.is_module_class(fn.cls) is not False


def fed_data(run: Run, e: CallEvent) -> bool:
    """The call is given what a loop (not a comprehension building the
    batches) reads from its items (a batch)."""
    return reads_loop_items(run.loops, e.arg_sources)  # type: ignore[attr-defined]


def runs_if_detached(prog: Program, e: CallEvent) -> tuple[Condition, ...] | None:
    """A method call that runs a model where its output is at once read
    without its graph (`.detach()`, `.data`), and what then shows the model:
    a method of a module of unseen class given only numbers
    (`flow.sample(500)`), or of an instance of unknown kind, made by
    another module or handed in (`self.vocoder.decode(codes)` of a class a
    package defines): the code takes what it gives for carrying a graph,
    which only a model makes. (Not a function of an imported module,
    `np.mean(x)`: a name, not an instance; not a method of this module's
    code, `self.embed(x)`: its own code shows what it runs.)"""
    if MAY_RUN_MODULE in e.outcome.effects or RUNS_MODULE in e.outcome.effects:
        return ()
    recv = e.receiver
    # (A member that runs no user code, a tensor's `.cpu()` or `.float()`,
    # explains a value read out at once: `action.cpu().detach()`.)
    if e.method is None or e.resolved.forward or e.resolved.pure or not recv or any(type(x) is CalledFunction for x in e.outcome.effects):
        return None
    for f in recv:
        if type(f) is not Sym or (not f.path and (type(f.root) is ImportRoot or (type(f.root) is ParamRoot and receiver_param(prog, f.root)))):
            return None
    return (IsModel(recv, detached=True, evaluated=True),)


def steps_or_backpropagates(e: CallEvent) -> bool:
    """An optimizer's ``step`` (nothing or a closure that it runs) or a
    ``backward``. Not ``env.step(action)``: a ``step`` given what is shown
    not to be a function (a tensor, an array, a number) runs no backward."""
    if e.resolved.may_step:
        return not (e.args and all(plain_only(a) or tensorish(a) for a in e.args))
    return e.resolved.backward


def receiver_param(prog: Program, root: ParamRoot) -> bool:
    """``root`` is a method's own instance (``self``), not a parameter
    its callers give."""
    if root.index != 0 or root.fn >= len(prog.functions):
        return False
    fn = prog.functions[root.fn]
    return fn.cls is not None and not is_static(fn)


def handed_in(prog: Program, s: Sym) -> bool:
    """``s`` is something of unknown kind handed to this code, not the
    method's own instance, nor a parameter annotated ``Callable`` (a
    function). (An attribute a base class in another module sets stays for
    that module to show: ``IsModel`` is decided there first.)"""
    root = s.root
    if type(root) is not ParamRoot:
        return True
    if root.fn >= len(prog.functions) or (not s.path and receiver_param(prog, root)):
        return False
    params = prog.functions[root.fn].params
    ann = params[root.index].annotation if root.index < len(params) else None
    return ann is None or ann.rsplit(".", 1)[-1] != "Callable"


def given_model(callee: Value, func: ir.Expr, prog: Program) -> bool:
    """The model called (``func``, valued ``callee``) is a whole model, not
    a layer the module builds: one handed in through a parameter (of the
    constructor that stored it, or of this function), typed ``nn.Module``
    or not typed, whatever the callers here give it, or one of no known
    class (a pretrained model a factory built). Not ``self``, and not a
    layer taken out of a container (`self.layers[i]`, through a helper
    that moves it to a device or not): its class is lost there, not
    unknown."""
    if any(type(x) is ir.Subscript for x in ir.walk_expr(func)):
        return False
    syms = [f for f in callee if type(f) is Sym]
    if syms:
        return all(type(f.root) is ParamRoot and not f.path and not receiver_param(prog, f.root) for f in syms)
    return bool(callee) and all(type(f) is Module and f.qual is None and f.last_layer is None and not f.runs and f.input_op is None for f in callee)


def may_backpropagate(e: CallEvent) -> bool:
    """A call that may run a backward the analysis does not see: an
    optimizer's ``step`` (its closure), a ``backward`` of any object, or
    code given as a parameter or imported from the project (a
    ``train_step`` helper, ``trainer.fit()``). A library function, a
    tensor's method and running a model are not."""
    if steps_or_backpropagates(e):
        return True
    v = e.callee if e.method is None else (e.receiver or NOTHING)
    if any(type(f) is Module or type(f) is Qual for f in v):
        return False
    if e.method is not None and (e.resolved.pure or tensorish(v)):
        return False  # `ids.tolist()`, `out.argmax(-1)`: a tensor's
    if any(type(x) is CalledFunction for x in e.outcome.effects):
        return False  # a function this module has (its steps are its summary's)
    return any(type(f) is Sym for f in v)
