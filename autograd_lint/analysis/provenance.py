"""Graph provenance and grad mode: an abstract interpretation of the IR.

For every function, statements are interpreted in order (branches merged,
loop bodies run twice so loop-carried values settle), tracking for each name
the facts of facts.py: does it hold a tensor attached to a graph, where was
that graph made, is it a module, a grad-mode context... Grad mode is part of
the state, so values computed under ``no_grad`` carry no graph.

The whole module is interpreted a few rounds: each round refines what the
next one knows across functions (what a function returns given its
arguments, which parameters it keeps, the grad mode its call sites give it,
which calls a later ``.backward()`` proves to build graphs).

The last round also records, for the retention analysis, every store and
accumulation with the facts of the stored value, and a flow graph between
names (who feeds whom) that ends in backward sinks and returns.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

import libcst as cst

from autograd_lint.analysis.facts import (
    NOTHING,
    OPTIMIZER,
    TENSOR,
    ArgGrad,
    GradContext,
    GradMode,
    Graph,
    HookArg,
    Instance,
    LeafTensor,
    ModuleValue,
    Optimizer,
    Param,
    Saved,
    TensorValue,
    tensorish,
)
from autograd_lint.analysis.ir import (
    Accum,
    Drop,
    Bind,
    Call,
    Class,
    Eval,
    Flow,
    Function,
    If,
    Leaf,
    Loop,
    LoopStmt,
    ModuleIR,
    Mutate,
    Ref,
    Return,
    Store,
    Val,
    With,
)
from autograd_lint.analysis.build import TENSOR_BINARY_METHODS, VIEW_METHODS
from autograd_lint.analysis.ledger import Ledger, load_ledger
from autograd_lint.analysis.eval_tracking import NO_GRAD_ONLY, EvalTracking, NoGradBlock
from autograd_lint.analysis.inplace_tracking import InplaceTracking, Mutation
from autograd_lint.analysis.names import ImportTable

Key = tuple
SINK: Key = ("sink",)
MODULE_EVIDENCE = frozenset({ModuleValue(True)})
TYPE_FACTS = (ModuleValue, Instance, Optimizer, TensorValue)

ROUNDS = 3

NO_GRAD_CONTEXTS = frozenset(
    {
        "torch.no_grad",
        "torch.autograd.no_grad",
        "torch.autograd.grad_mode.no_grad",
        "torch.inference_mode",
        "torch.autograd.inference_mode",
        "torch.autograd.grad_mode.inference_mode",
    }
)
ENABLE_GRAD_CONTEXTS = frozenset({"torch.enable_grad", "torch.autograd.enable_grad", "torch.autograd.grad_mode.enable_grad"})
SET_GRAD_ENABLED = frozenset({"torch.set_grad_enabled", "torch.autograd.set_grad_enabled", "torch.autograd.grad_mode.set_grad_enabled"})
BACKWARD_FUNCTIONS = frozenset({"torch.autograd.grad", "torch.autograd.backward"})
BACKWARD_METHODS = frozenset({"backward", "manual_backward"})

# torch.* functions whose result never carries a graph.
TORCH_CUT = frozenset(
    """argmax argmin argsort eq ne gt lt ge le equal allclose isclose isnan isinf isfinite numel
    is_tensor is_floating_point count_nonzero nonzero bucketize searchsorted unique logical_and
    logical_or logical_not logical_xor sign manual_seed get_default_dtype device dtype Size
    is_grad_enabled no_grad inference_mode enable_grad""".split()
)
# torch.* factories: a leaf, requiring grad only with requires_grad=True.
TORCH_FACTORIES = frozenset(
    """tensor as_tensor zeros ones empty full rand randn randint randperm arange linspace logspace eye
    zeros_like ones_like empty_like full_like rand_like randn_like randint_like from_numpy
    frombuffer normal bernoulli multinomial""".split()
)
# nn.Module classes without parameters: their output is attached only when
# their input is.
FUNCTIONAL_MODULES = frozenset(
    """ReLU ReLU6 LeakyReLU PReLU_ ELU SELU CELU GELU SiLU Mish Sigmoid Tanh Softmax LogSoftmax Softmin
    Softplus Softsign Hardtanh Hardswish Hardsigmoid Tanhshrink Threshold GLU Dropout Dropout1d
    Dropout2d Dropout3d AlphaDropout Identity Flatten Unflatten MaxPool1d MaxPool2d MaxPool3d
    AvgPool1d AvgPool2d AvgPool3d AdaptiveAvgPool1d AdaptiveAvgPool2d AdaptiveAvgPool3d
    AdaptiveMaxPool1d AdaptiveMaxPool2d AdaptiveMaxPool3d Upsample PixelShuffle PixelUnshuffle
    ZeroPad2d ConstantPad1d ConstantPad2d ReflectionPad2d ReplicationPad2d CosineSimilarity
    PairwiseDistance""".split()
)
PASS_THROUGH_FUNCTIONS = frozenset(
    {
        "torch.compile",
        "torch.nn.DataParallel",
        "torch.nn.parallel.DataParallel",
        "torch.nn.parallel.DistributedDataParallel",
        "torch.jit.script",
        "torch.jit.trace",
        "torch.distributed.fsdp.FullyShardedDataParallel",
    }
)
BUILTIN_CUT = frozenset(
    """float int bool len str repr print isinstance issubclass type id hash format range open hasattr
    callable ord chr bin hex oct divmod all any vars dir locals globals super""".split()
)
BUILTIN_OP = frozenset("sum max min abs pow".split())
BUILTIN_ACCESS = frozenset("list tuple sorted reversed enumerate zip iter next dict set frozenset filter map".split())
KEEP_METHODS = frozenset(
    "to cuda cpu train eval half float double bfloat16 requires_grad_ share_memory_ type module contiguous".split()
)
MODEL_LIBRARIES = ("transformers.", "diffusers.", "timm.", "torchvision.models", "peft.", "sentence_transformers.")

LIGHTNING_NO_GRAD = frozenset(
    """validation_step test_step predict_step validation_epoch_end test_epoch_end on_validation_epoch_end
    on_test_epoch_end on_predict_epoch_end on_validation_batch_end on_test_batch_end
    on_predict_batch_end""".split()
)


@dataclass
class Event:
    """A store or an accumulation, with what the analysis knew there."""

    kind: str  # "store" or "accumulate"
    fn: Function
    container: Key
    container_path: str
    facts: frozenset
    node: cst.CSTNode
    value_node: cst.CSTNode
    loops: tuple[Loop, ...]
    grad: GradMode
    how: str
    attr_assign: bool = False
    conditional: bool = False
    sources: frozenset = frozenset()
    # For a store through an in-file helper (``meter.update(loss)``).
    via: Function | None = None


@dataclass
class Program:
    ir: ModuleIR
    imports: ImportTable
    module_functions: dict[str, Function] = field(default_factory=dict)
    nested: dict[tuple[int, str], Function] = field(default_factory=dict)
    shared: dict[Key, frozenset] = field(default_factory=dict)
    returns: dict[int, frozenset] = field(default_factory=dict)
    return_sources: dict[int, set] = field(default_factory=dict)
    retains: dict[int, dict[int, str]] = field(default_factory=dict)
    call_grads: dict[int, list[GradMode]] = field(default_factory=dict)
    callers: dict[int, int] = field(default_factory=dict)
    proven: set = field(default_factory=set)  # Call nodes proven to build a graph
    entry: dict[int, GradMode] = field(default_factory=dict)
    hook_args: dict[int, set[int]] = field(default_factory=dict)  # fn id -> param indexes
    hook_fns: set[int] = field(default_factory=set)
    hook_owner: dict[int, Function] = field(default_factory=dict)
    edges: dict[Key, set] = field(default_factory=dict)
    events: dict[tuple, Event] = field(default_factory=dict)
    mutations: dict[tuple, Mutation] = field(default_factory=dict)
    # class family -> attributes its forward saves for backward (`F.linear(x, self.w)`)
    forward_saves: dict[str, set[str]] = field(default_factory=dict)
    ledger: Ledger = field(default_factory=load_ledger)
    recording: bool = False
    # (function id, parameter) -> module/instance facts of the arguments
    param_types: dict[tuple[int, str], frozenset] = field(default_factory=dict)
    # Callee spellings (`criterion`, `self.loss_fn`) whose result a backward
    # proved attached somewhere in this file.
    proven_callees: set[str] = field(default_factory=set)
    proven_targets: dict = field(default_factory=dict)  # call node -> keys it was proven for
    # AGL301: evaluation regions -> their first model call with grad on
    eval_calls: dict = field(default_factory=dict)
    eval_regions_stepping: set = field(default_factory=set)
    options: Mapping[str, Any] = field(default_factory=dict)
    # AGL302: `with torch.no_grad():` blocks and what they did
    nograd_blocks: list = field(default_factory=list)
    forced_grad: set = field(default_factory=set)  # functions decorated with enable_grad
    # function id -> ids of in-file functions calling it with grad on
    grad_on_callers: dict[int, set[int]] = field(default_factory=dict)
    # Functions that backpropagate (directly or through a call).
    stepping: set[int] = field(default_factory=set)
    # function id -> local names that are receivers of module-only methods
    evidence_names: dict[int, set[str]] = field(default_factory=dict)
    _module_cls: dict[str, bool] = field(default_factory=dict)
    _lightning_cls: dict[str, bool] = field(default_factory=dict)

    # -- classes ---------------------------------------------------------------

    def base_quals(self, cls: Class) -> list[str]:
        return [self.imports.qualify_path(b) or b for b in cls.base_paths]

    def in_file_bases(self, cls: Class) -> list[Class]:
        out = []
        for b in cls.base_paths:
            c = self.ir.classes.get(b)
            if c is not None and c is not cls:
                out.append(c)
        return out

    def is_module_class(self, cls: Class, depth: int = 0) -> bool:
        if cls.name in self._module_cls:
            return self._module_cls[cls.name]
        self._module_cls[cls.name] = False  # cycles
        result = False
        for q in self.base_quals(cls):
            last = q.split(".")[-1]
            if (q.startswith("torch.nn.") and last[:1].isupper()) or last.endswith("LightningModule") or (
                q.startswith(MODEL_LIBRARIES) and (last.endswith(("Model", "Module")) or "PreTrainedModel" in last)
            ):
                result = True
        if not result and depth < 20:
            result = any(self.is_module_class(b, depth + 1) for b in self.in_file_bases(cls))
        # A class with a forward() and a base class is a module in practice
        # (a base we cannot resolve, e.g. `from .modeling_utils import ...`).
        if not result and "forward" in cls.methods and cls.base_paths:
            result = True
        self._module_cls[cls.name] = result
        return result

    def is_lightning_class(self, cls: Class, depth: int = 0) -> bool:
        if cls.name in self._lightning_cls:
            return self._lightning_cls[cls.name]
        self._lightning_cls[cls.name] = False
        result = any(q.split(".")[-1] in ("LightningModule",) for q in self.base_quals(cls))
        if not result and depth < 20:
            result = any(self.is_lightning_class(b, depth + 1) for b in self.in_file_bases(cls))
        self._lightning_cls[cls.name] = result
        return result

    def family(self, cls: Class) -> str:
        """Attributes set in an in-file base class are the subclass's too."""
        seen = {cls.name}
        while True:
            bases = self.in_file_bases(cls)
            if not bases or bases[0].name in seen:
                return cls.name
            cls = bases[0]
            seen.add(cls.name)

    def find_method(self, cls: Class, name: str) -> Function | None:
        seen: set[str] = set()
        todo = [cls]
        while todo:
            c = todo.pop(0)
            if c.name in seen:
                continue
            seen.add(c.name)
            m = c.methods.get(name)
            if m is not None:
                return m
            todo.extend(self.in_file_bases(c))
        return None

    def method_class(self, fn: Function) -> Class | None:
        while fn is not None:
            if fn.cls is not None:
                return fn.cls
            fn = fn.parent  # type: ignore[assignment]
        return None

    # -- scopes -----------------------------------------------------------------

    def lookup_function(self, fn: Function, name: str) -> Function | None:
        f: Function | None = fn
        while f is not None:
            hit = self.nested.get((f.id, name))
            if hit is not None:
                return hit
            if name in f.assigned:
                return None
            f = f.parent
        return self.module_functions.get(name)

    def lightning_no_grad(self, fn: Function) -> bool:
        return fn.cls is not None and fn.name in LIGHTNING_NO_GRAD and self.is_lightning_class(fn.cls)

    def returns_to_backward(self, fn: Function) -> bool:
        """Frameworks backpropagate what these return."""
        if fn.cls is None:
            return False
        if fn.name == "training_step" and self.is_lightning_class(fn.cls):
            return True
        if fn.name in ("compute_loss", "training_step"):
            return any(q.split(".")[-1].endswith("Trainer") for q in self.base_quals(fn.cls))
        return False

    def add_edge(self, src: Key, dst: Key) -> None:
        if src != dst:
            self.edges.setdefault(src, set()).add(dst)


def _merge(a: dict, b: dict) -> dict:
    out = dict(a)
    for k, v in b.items():
        old = out.get(k)
        out[k] = v if old is None else old | v
    return out


class Run(InplaceTracking, EvalTracking):
    """One interpretation of one function."""

    def __init__(self, prog: Program, fn: Function) -> None:
        self.prog = prog
        self.fn = fn
        self.env: dict[Key, frozenset] = {}
        self.grad = prog.entry.get(fn.id, GradMode.ON)
        self.keys: dict[str, Key] = {}
        self._memo: dict[int, tuple] = {}
        self.eval_region: cst.CSTNode | None = None  # the `.eval()` call in force
        self.forced = fn.id in prog.forced_grad  # grad explicitly enabled
        self.blocks: list[NoGradBlock] = []
        # keys holding what a finished no_grad block computed -> those blocks
        self.taint: dict[Key, tuple] = {}
        self.binds: list[tuple[Key, Val]] = []
        self.evidence: set[Key] = set()
        self.ret_facts: set = set()
        self.ret_sources: set = set()
        self.evidence_names = prog.evidence_names
        self.cls = prog.method_class(fn)
        self.family = prog.family(self.cls) if self.cls is not None else None
        self.self_name: str | None = None
        self.in_forward = fn.cls is not None and fn.name == "forward" and prog.is_module_class(fn.cls)
        f: Function | None = fn
        while f is not None:
            if f.cls is not None:
                self.self_name = f.self_name
                break
            f = f.parent

    # -- names ------------------------------------------------------------------

    def key(self, path: str) -> Key:
        k = self.keys.get(path)
        if k is not None:
            return k
        head, _, attr = path.partition(".")
        if attr and self.self_name is not None and head == self.self_name and self.family is not None and self._is_self_head(head):
            k = ("c", self.family, attr)
        elif attr:
            k = self.key(head)
        else:
            k = self._scope_key(head)
        self.keys[path] = k
        return k

    def _is_self_head(self, head: str) -> bool:
        f: Function | None = self.fn
        while f is not None:
            if f.cls is not None:
                return True
            if head in f.assigned:
                return False
            f = f.parent
        return False

    def _scope_key(self, name: str) -> Key:
        fn = self.fn
        if name in fn.globals or fn.is_module_level:
            return ("g", name)
        if name in fn.assigned and name not in fn.nonlocals:
            return ("l", fn.id, name)
        f = fn.parent
        while f is not None:
            if name in f.assigned and name not in f.nonlocals and name not in f.globals:
                return ("l", f.id, name)
            f = f.parent
        return ("g", name)

    def local(self, k: Key) -> bool:
        return k[0] == "l" and k[1] == self.fn.id

    def lookup(self, k: Key) -> frozenset:
        # Receivers of .parameters()/.eval()/... are modules, whatever they
        # were bound from.
        if k[0] == "l" and k[2] in self.evidence_names.get(k[1], ()):
            return self._lookup(k) | MODULE_EVIDENCE
        return self._lookup(k)

    def _lookup(self, k: Key) -> frozenset:
        v = self.env.get(k)
        if v is not None:
            if not self.local(k):
                return v | self.prog.shared.get(k, NOTHING)
            return v
        return self.prog.shared.get(k, NOTHING)

    def assign(self, k: Key, facts: frozenset, strong: bool = True) -> None:
        if strong:
            self.env[k] = facts
        else:
            self.env[k] = self.lookup(k) | facts
        if not self.local(k):
            self.prog.shared[k] = self.prog.shared.get(k, NOTHING) | facts

    # -- values -----------------------------------------------------------------

    def val(self, v: Val) -> tuple[frozenset, set]:
        # Within one statement a value is evaluated once, however many
        # analyses ask (nested calls would otherwise be re-evaluated at every
        # level).
        if not v:
            return NOTHING, set()
        hit = self._memo.get(id(v))
        if hit is not None:
            return hit[0], set(hit[1])
        out = self._val(v)
        self._memo[id(v)] = (out[0], frozenset(out[1]), v)
        return out

    def _val(self, v: Val) -> tuple[frozenset, set]:
        facts: set = set()
        sources: set = set()
        for a in v:
            t = type(a)
            if t is Ref:
                k = self.key(a.path)
                sources.add(k)
                if a.flow is Flow.WEAK:
                    continue
                f = self.lookup(k)
                if a.flow is Flow.OP:
                    if self.grad is GradMode.OFF:
                        continue
                    f = self.op(f)
                facts |= f
            elif t is Leaf:
                facts.add(LeafTensor(a.node, self.fn.id))
            elif t is Drop:
                self.val(a.val)  # for its calls' effects only
            else:
                f, s = self.call(a)
                facts |= f
                sources |= s
        return frozenset(facts), sources

    def op(self, facts: frozenset) -> frozenset:
        """What an operation on a value with these facts yields."""
        out = set()
        for f in facts:
            t = type(f)
            if t is Graph or t is Param or t is HookArg or t is ArgGrad or t is TensorValue:
                out.add(f)
            elif t is LeafTensor:
                out.add(Graph(f.node, self.fn.id, "leaf"))
        return frozenset(out)

    def vals(self, vs) -> tuple[frozenset, set]:
        facts: frozenset = NOTHING
        sources: set = set()
        for v in vs:
            f, s = self.val(v)
            facts |= f
            sources |= s
        return facts, sources

    def call(self, c: Call) -> tuple[frozenset, set]:
        if c.method in ("eval", "train") and c.receiver is not None:
            self.track_mode(c)
        self.call_writes(c)
        facts, sources = self._call(c)
        facts = self.saving(c, facts)
        # A later .backward() proved this call builds a graph; or the same
        # callee did so elsewhere in the file and gets an attached input here.
        if self.grad is not GradMode.OFF and not any(type(f) is Graph for f in facts):
            if c.node in self.prog.proven:
                facts = facts | {Graph(c.node, self.fn.id, "backward")}
                self.mark_data(sources)
            elif c.callee_path in self.prog.proven_callees and c.method is None and any(
                type(f) is Graph and f.how != "leaf" for f in self.vals(c.args)[0]
            ):
                facts = facts | {Graph(c.node, self.fn.id, "backward")}
        return facts, sources

    def qual_of(self, c: Call) -> str | None:
        return self.prog.imports.qualify_path(c.callee_path) if c.callee_path else None

    def _call(self, c: Call) -> tuple[frozenset, set]:
        prog = self.prog
        if c.op is not None:
            all_f, all_s = self.vals(c.args)
            if self.grad is GradMode.OFF:
                return (frozenset({TENSOR}) if tensorish(all_f) else NOTHING), all_s
            return self.op(all_f), all_s
        args_f, args_s = self.vals(c.args)
        kw_f, kw_s = self.vals(v for _, v in c.kwargs)
        all_f, all_s = args_f | kw_f, args_s | kw_s
        recv_f, recv_s = self.val(c.receiver) if c.receiver is not None else (NOTHING, set())
        grad_on = self.grad is not GradMode.OFF
        method = c.method
        qual = prog.imports.qualify_path(c.callee_path) if c.callee_path else None

        # Backward: a sink for everything it reads.
        if method in BACKWARD_METHODS or qual in BACKWARD_FUNCTIONS:
            sources = all_s | (recv_s if method == "backward" and not c.args else set())
            if method == "backward" and c.args == () and c.receiver is not None:
                sources = recv_s | all_s
            self.sink(sources)
            if qual == "torch.autograd.grad" and "create_graph" in c.true_kwargs:
                return self.op(all_f), all_s
            return NOTHING, set()
        if method == "step" and any(type(f) is Optimizer for f in recv_f):
            self.mark_steps()
            return NOTHING, set()

        if qual is not None:
            hit = self.qualified(c, qual, all_f, all_s, args_f)
            if hit is not None:
                return hit

        # Calls of functions and classes defined in this file.
        target: Function | None = None
        bound_self = False
        if c.callee_path is not None and "." not in c.callee_path:
            if c.callee_path in prog.ir.classes and self._scope_key(c.callee_path)[0] == "g":
                cls = prog.ir.classes[c.callee_path]
                facts = {Instance(cls.name)}
                if prog.is_module_class(cls):
                    facts.add(ModuleValue(True))
                else:
                    # An output dataclass holds what it was built from.
                    facts |= all_f
                return frozenset(facts), all_s
            target = prog.lookup_function(self.fn, c.callee_path)
            if target is None and c.callee_path in BUILTIN_CUT and self._scope_key(c.callee_path)[0] == "g":
                return NOTHING, set()
            if target is None and c.callee_path in BUILTIN_OP and self._scope_key(c.callee_path)[0] == "g":
                return (self.op(all_f) if grad_on else NOTHING), all_s
            if target is None and c.callee_path in BUILTIN_ACCESS and self._scope_key(c.callee_path)[0] == "g":
                return all_f, all_s
        elif method is not None and self.cls is not None and c.callee_path == f"{self.self_name}.{method}":
            target = prog.find_method(self.cls, method)
            bound_self = target is not None
        if target is None and method is not None:
            for f in recv_f:
                if type(f) is Instance:
                    cls = prog.ir.classes.get(f.cls)
                    if cls is not None:
                        target = prog.find_method(cls, method)
                        bound_self = target is not None
                        break
        if target is not None and target is not self.fn:
            return self.call_function(c, target, bound_self, recv_s)

        # Calling a module instance: `model(x)`, `self.net(x)`, `self(x)`.
        callee_f, callee_s = self.val(c.callee)
        module = [f for f in callee_f if type(f) is ModuleValue]
        if c.callee_path is not None and c.callee_path == self.self_name and self.cls is not None and prog.is_module_class(self.cls):
            module = [ModuleValue(True)]
        if module and (method is None or c.callee_path == f"{self.self_name}.{method}" or method in ("forward", "__call__", "module")):
            self.mark_data(all_s)
            self.forward_saved_attrs(c, callee_f)
            if any(m.parametric for m in module):
                self.eval_call(c)
            if not grad_on:
                return frozenset({TENSOR}), all_s | callee_s
            out = set(self.op(all_f))
            if any(m.parametric for m in module):
                out.add(Graph(c.node, self.fn.id, "call"))
            return frozenset(out), all_s | callee_s

        if method is not None:
            if method == "detach":
                return frozenset(f for f in recv_f if type(f) is Saved), set()
            if method in KEEP_METHODS:
                return recv_f, recv_s | all_s
            if method in VIEW_METHODS and method != "detach":
                # A view shares storage and version counter with its base.
                if grad_on:
                    return frozenset(f for f in recv_f if type(f) in (Graph, Saved, HookArg, Param, LeafTensor, ArgGrad, TensorValue)), recv_s | all_s
                return frozenset(f for f in recv_f if type(f) is Saved) | ({TENSOR} if tensorish(recv_f) else set()), recv_s | all_s
            if method == "requires_grad_" and c.recv_root is not None and "requires_grad" not in c.false_kwargs:
                k = self.key(c.recv_root)
                self.env[k] = self.lookup(k) | {LeafTensor(c.node, self.fn.id)}
            if method in ("get", "pop", "values", "items", "copy", "popleft", "popitem", "setdefault"):
                return recv_f, recv_s
            if method in ("parameters", "named_parameters"):
                return frozenset({LeafTensor(c.node)}), recv_s
            if not grad_on:
                return (frozenset({TENSOR}) if tensorish(recv_f) else NOTHING), recv_s | all_s
            # A method of a tensor: an op on the receiver (and, for binary
            # tensor methods, on the arguments).
            facts = self.op(recv_f)
            if method in TENSOR_BINARY_METHODS and facts:
                facts |= self.op(all_f)
            return facts, recv_s | all_s
        # Something we cannot see: its result is unknown, but what flowed into
        # it still counts as used.
        return NOTHING, all_s | callee_s

    def qualified(self, c: Call, qual: str, all_f: frozenset, all_s: set, args_f: frozenset):
        grad_on = self.grad is not GradMode.OFF
        last = qual.rsplit(".", 1)[-1]
        if qual in NO_GRAD_CONTEXTS:
            on = any(isinstance(a.value, cst.Name) and a.value.value == "False" for a in c.node.args)
            return frozenset({GradContext(GradMode.ON if on and "inference" in qual else GradMode.OFF, qual)}), set()
        if qual in ENABLE_GRAD_CONTEXTS:
            return frozenset({GradContext(GradMode.ON, qual)}), set()
        if qual in SET_GRAD_ENABLED:
            arg = c.node.args[0].value if c.node.args else None
            if isinstance(arg, cst.Name) and arg.value in ("True", "False"):
                return frozenset({GradContext(GradMode.ON if arg.value == "True" else GradMode.OFF, qual)}), set()
            return frozenset({GradContext(GradMode.MAYBE, qual)}), set()
        if qual in PASS_THROUGH_FUNCTIONS:
            return args_f, all_s
        if qual.startswith("torch.optim.") and last[:1].isupper() and "lr_scheduler" not in qual:
            return frozenset({OPTIMIZER}), all_s
        if qual.startswith("torch.nn.") and not qual.startswith("torch.nn.functional.") and last[:1].isupper():
            if last in ("Parameter", "ParameterList", "ParameterDict"):
                return (NOTHING if "requires_grad" in c.false_kwargs else frozenset({LeafTensor(c.node)})), all_s
            parametric = not (last.endswith("Loss") or last in FUNCTIONAL_MODULES)
            return frozenset({ModuleValue(parametric, qual, "inplace" in c.true_kwargs)}), all_s
        owner = qual.split(".")[-2] if qual.count(".") >= 1 else ""
        if any(w in owner for w in ("Tokenizer", "Processor", "Config", "FeatureExtractor", "Scheduler", "Pipeline")):
            return None  # loaded like a model, but not a module
        if qual.startswith(MODEL_LIBRARIES) and (last in ("from_pretrained", "create_model", "from_config") or last[:1].isupper()):
            if last[:1].isupper() and not any(s in last for s in ("Model", "Net", "For", "UNet", "VAE", "Transformer")):
                return None
            return frozenset({ModuleValue(True)}), all_s
        if qual.startswith("torch.distributions."):
            # A distribution holds its parameters' graph; its methods are ops.
            return (all_f if grad_on else NOTHING), all_s
        if qual.startswith("torch."):
            if qual.startswith("torch.nn.functional."):
                if last == "one_hot":
                    return NOTHING, all_s
                return (self.op(all_f) if grad_on else NOTHING), all_s
            if last in TORCH_CUT:
                return NOTHING, all_s
            if last in TORCH_FACTORIES or qual in ("torch.autograd.Variable",):
                if "requires_grad" in c.true_kwargs:
                    return frozenset({LeafTensor(c.node, self.fn.id)}), all_s
                if last in ("as_tensor", "tensor") and grad_on:
                    return self.op(all_f) | {TENSOR}, all_s
                return frozenset({TENSOR}), all_s
            if last[:1].isupper():
                return NOTHING, all_s
            return (self.op(all_f) if grad_on else NOTHING) | {TENSOR}, all_s
        if qual.startswith(("numpy.", "math.", "statistics.", "random.", "logging.", "json.", "os.", "time.")):
            return NOTHING, all_s
        return None

    def call_function(self, c: Call, target: Function, bound_self: bool, recv_s: set) -> tuple[frozenset, set]:
        prog = self.prog
        offset = 1 if bound_self else 0
        arg_facts = [self.val(a) for a in c.args]
        params = target.params[offset:] if bound_self else target.params
        # Arguments flow into the callee's parameters.
        for i, (f, s) in enumerate(arg_facts):
            if i < len(params):
                for src in s:
                    prog.add_edge(src, ("l", target.id, params[i]))
        # What kind of object each argument is (a module, an instance of an
        # in-file class...) becomes known of the parameter in the next round.
        for i, (f, s) in enumerate(arg_facts):
            if i < len(params):
                types = frozenset(x for x in f if type(x) in TYPE_FACTS)
                if any(type(x) in (Graph, HookArg, ArgGrad, LeafTensor) for x in f):
                    types = types | {ArgGrad(target.id)}
                if types:
                    pk = (target.id, params[i])
                    prog.param_types[pk] = prog.param_types.get(pk, NOTHING) | types
        for name, v in c.kwargs:
            f, s = self.val(v)
            if name in target.params:
                for src in s:
                    prog.add_edge(src, ("l", target.id, name))
                types = frozenset(x for x in f if type(x) in TYPE_FACTS)
                if types:
                    pk = (target.id, name)
                    prog.param_types[pk] = prog.param_types.get(pk, NOTHING) | types
        # Calling a function that backpropagates is a training step.
        if target.id in prog.stepping:
            self.mark_steps()
        prog.call_grads.setdefault(target.id, []).append(self.grad)
        if self.grad is GradMode.ON:
            prog.grad_on_callers.setdefault(target.id, set()).add(self.fn.id)
        prog.callers[target.id] = prog.callers.get(target.id, 0) + 1
        # What it keeps of its arguments (a meter's update()).
        retains = prog.retains.get(target.id)
        if retains and prog.recording:
            for idx, kind in retains.items():
                j = idx - offset
                if 0 <= j < len(arg_facts) and arg_facts[j][0]:
                    container = self.key(c.callee_path.rsplit(".", 1)[0]) if c.callee_path and "." in c.callee_path else ("g", target.name)
                    self.record(
                        Event(kind, self.fn, container, (c.callee_path or target.name).rsplit(".", 1)[0], arg_facts[j][0], c.node,
                              c.node.args[j].value if j < len(c.node.args) else c.node, self.loops, self.grad, "call", via=target)
                    )
        ret = prog.returns.get(target.id, NOTHING)
        out: set = set()
        grad_on = self.grad is not GradMode.OFF
        for f in ret:
            t = type(f)
            if t is Param:
                if f.fn == target.id:
                    j = f.index - offset
                    if 0 <= j < len(arg_facts):
                        out |= arg_facts[j][0]
            elif t is Graph:
                if grad_on:
                    out.add(Graph(c.node, self.fn.id, "call"))
            elif t is not HookArg:
                out.add(f)
        return frozenset(out), {("ret", target.id)} | recv_s

    # -- effects ----------------------------------------------------------------

    loops: tuple[Loop, ...] = ()

    def sink(self, sources: set) -> None:
        for k in sources:
            self.use_tainted(k, always=True)
        for s in sources:
            self.prog.add_edge(s, SINK)
            self.evidence.add(s)
        self.prog.stepping.add(self.fn.id)
        if self.eval_region is not None:
            self.prog.eval_regions_stepping.add(("mode", self.eval_region))
        self.mark_steps()
        # After backward the saved tensors are released: writes are safe.
        for k, v in list(self.env.items()):
            if any(type(f) is Saved for f in v):
                self.env[k] = frozenset(f for f in v if type(f) is not Saved)

    def mark_data(self, sources: set) -> None:
        """A loop whose items are fed to a module (or a helper) is a loop
        over data."""
        for loop in self.loops:
            if not loop.data and any(self.key(p) in sources for p in loop.targets):
                loop.data = True

    def mark_steps(self) -> None:
        for loop in self.loops:
            loop.steps = True

    def record(self, ev: Event) -> None:
        k = (ev.node, ev.kind, ev.container)
        old = self.prog.events.get(k)
        if old is not None:
            old.facts = old.facts | ev.facts
            old.sources = old.sources | ev.sources
            if ev.grad is not GradMode.OFF:
                old.grad = ev.grad
        else:
            self.prog.events[k] = ev

    # -- statements -------------------------------------------------------------

    @property
    def rebound_params(self) -> set[str]:
        if self._rebound is None:
            self._rebound = {p for p in self.fn.params if any(b.path == p for b in _binds(self.fn.body))}
        return self._rebound

    _rebound: set[str] | None = None

    def start(self) -> None:
        prog, fn = self.prog, self.fn
        hook_idx = prog.hook_args.get(fn.id, set())
        for i, p in enumerate(fn.params):
            k = ("l", fn.id, p)
            if i == 0 and fn.cls is not None and fn.self_name == p:
                facts = {Instance(fn.cls.name)}
                if prog.is_module_class(fn.cls):
                    facts.add(ModuleValue(True))
                self.env[k] = frozenset(facts)
            elif i in hook_idx:
                self.env[k] = frozenset({HookArg(fn.id), Param(fn.id, i)})
            else:
                self.env[k] = frozenset({Param(fn.id, i)}) | self.annotated(fn.annotations.get(p)) | prog.param_types.get((fn.id, p), NOTHING)

    def annotated(self, path: str | None) -> frozenset:
        """Facts a parameter's type annotation gives (``model: nn.Module``)."""
        if not path:
            return NOTHING
        cls = self.prog.ir.classes.get(path)
        if cls is not None:
            facts = {Instance(cls.name)}
            if self.prog.is_module_class(cls):
                facts.add(ModuleValue(True))
            return frozenset(facts)
        q = self.prog.imports.qualify_path(path) or ""
        last = q.rsplit(".", 1)[-1]
        if q.startswith("torch.nn.") and last[:1].isupper() and not q.startswith("torch.nn.parameter"):
            return frozenset({ModuleValue(not (last.endswith("Loss") or last in FUNCTIONAL_MODULES))})
        if last == "LightningModule" or (q.startswith(MODEL_LIBRARIES) and last.endswith(("Model", "PreTrainedModel"))):
            return MODULE_EVIDENCE
        return NOTHING

    def run(self) -> None:
        self.start()
        deco = self.nograd_decorator()
        if deco is not None:
            self.blocks.append(NoGradBlock(self.fn, deco))
        self.block(self.fn.body)
        if deco is not None:
            self.prog.nograd_blocks.append(self.blocks.pop())
        if self.prog.returns_to_backward(self.fn):
            self.sink(self.ret_sources)

    def block(self, stmts: list) -> None:
        for s in stmts:
            self.stmt(s)

    def stmt(self, s) -> None:
        self._memo = {}
        t = type(s)
        if self.blocks:
            self.block_effects(s, t)
        elif self.taint:
            self.track_taint(s, t)
        self.loops = getattr(s, "loops", self.loops)
        if t is Bind:
            facts, sources = self.val(s.val)
            if s.path is None:
                return
            k = self.key(s.path)
            if "." in s.path and k[0] != "c":
                # `obj.attr = v` stores into obj; it does not rebind obj.
                if any(type(f) is LeafTensor for f in facts):
                    self.assign(k, facts, strong=False)
                for src in sources:
                    self.prog.add_edge(src, k)
                return
            pt = self.prog.proven_targets
            if pt and any(type(f) is Graph and f.how == "backward" and k not in pt.get(f.node, (k,)) for f in facts):
                facts = frozenset(f for f in facts if not (type(f) is Graph and f.how == "backward" and k not in pt.get(f.node, (k,))))
            if s.inplace:
                # `w += d` on a tensor writes the same object: still a leaf,
                # still saved where it was; what d was saved as does not carry.
                old = self.lookup(k)
                facts = frozenset(f for f in facts if type(f) is not Saved) | frozenset(f for f in old if type(f) in (LeafTensor, Saved))
            self.assign(k, facts, strong=self.local(k) or k[0] == "c")
            self.binds.append((k, s.val))
            for src in sources:
                self.prog.add_edge(src, k)
        elif t is Mutate:
            if s.val:
                self.val(s.val)  # the right-hand side runs first (it may save the target)
            self.mutate(s.path, s.node, s.how, s.via)
        elif t is Eval:
            facts, sources = self.val(s.val)
            # `torch.set_grad_enabled(False)` as a statement.
            if len(s.val) == 1 and type(s.val[0]) is Call:
                qual = self.prog.imports.qualify_path(s.val[0].callee_path) if s.val[0].callee_path else None
                if qual in SET_GRAD_ENABLED:
                    modes = {f.mode for f in facts if type(f) is GradContext}
                    if len(modes) == 1:
                        self.grad = modes.pop()
        elif t is Store or t is Accum:
            facts, sources = self.val(s.val)
            path = s.container if t is Store else s.target
            k = self.key(path)
            if not s.attr_assign if t is Store else True:
                # A container of a leaf is not a leaf, nor is it saved.
                held = frozenset(Graph(f.node, self.fn.id, "leaf") if type(f) is LeafTensor else f for f in facts if type(f) is not Saved)
                self.assign(k, held, strong=False)
            for src in sources:
                self.prog.add_edge(src, k)
            # What a helper keeps of its arguments: `self.sum += val` in a
            # meter's update(). A parameter the helper rebinds first
            # (`val = val.item()`) is not kept as given.
            if not self.local(k) and not (t is Store and s.attr_assign):
                for f in facts:
                    if type(f) is Param and f.fn == self.fn.id and self.fn.params[f.index] not in self.rebound_params:
                        kinds = self.prog.retains.setdefault(self.fn.id, {})
                        if kinds.get(f.index) != "accumulate":
                            kinds[f.index] = "accumulate" if t is Accum else "store"
            if self.prog.recording:
                self.record(
                    Event(
                        "store" if t is Store else "accumulate",
                        self.fn,
                        k,
                        path,
                        facts,
                        s.node,
                        s.value_node,
                        s.loops,
                        self.grad,
                        s.how if t is Store else "augmented",
                        attr_assign=s.attr_assign if t is Store else False,
                        conditional=s.conditional if t is Store else False,
                        sources=frozenset(sources),
                    )
                )
        elif t is Return:
            facts, sources = self.val(s.val)
            self.ret_facts |= facts
            self.ret_sources |= sources
            for src in sources:
                self.prog.add_edge(src, ("ret", self.fn.id))
        elif t is If:
            before = dict(self.env)
            grad = self.grad
            self.block(s.body)
            after_body, grad_body = self.env, self.grad
            self.env, self.grad = dict(before), grad
            self.block(s.orelse)
            self.env = _merge(after_body, self.env)
            if grad_body is not self.grad:
                self.grad = GradMode.MAYBE if GradMode.ON in (grad_body, self.grad) or GradMode.MAYBE in (grad_body, self.grad) else GradMode.OFF
        elif t is LoopStmt:
            before = dict(self.env)
            self.block(s.body)
            first = self.env
            self.block(s.body)
            self.env = _merge(_merge(before, first), self.env)
            self.block(s.orelse)
        elif t is With:
            modes: set = set()
            sources: set = set()
            for ctx in s.contexts:
                facts, _ = self.val(ctx)
                modes |= {f.mode for f in facts if type(f) is GradContext}
                sources |= {f.source for f in facts if type(f) is GradContext}
            saved, forced = self.grad, self.forced
            if modes:
                self.grad = modes.pop() if len(modes) == 1 else GradMode.MAYBE
                if self.grad is GradMode.ON:
                    self.forced = True
            block = None
            if self.prog.recording and s.node is not None and sources and sources <= NO_GRAD_ONLY and self.grad is GradMode.OFF:
                block = NoGradBlock(self.fn, s.node)
                self.blocks.append(block)
            self.block(s.body)
            if block is not None:
                self.blocks.pop()
                self.prog.nograd_blocks.append(block)
                for k in block.written:
                    self.taint[k] = self.taint.get(k, ()) + (block,)
                if self.blocks:  # an outer block sees what the inner one did
                    outer = self.blocks[-1]
                    outer.written |= block.written
                    outer.escapes |= block.escapes
                    outer.writes_outer |= block.writes_outer
            self.grad, self.forced = saved, forced

    # -- evidence -----------------------------------------------------------------

    def prove(self) -> None:
        """Names fed to backward hold graphs; so do the values they were read
        from, and the calls that made them."""
        seen = set(k for k in self.evidence if k[0] == "l" and k[1] == self.fn.id or k[0] == "c")
        changed = True
        while changed:
            changed = False
            for k, v in reversed(self.binds):
                if k not in seen:
                    continue
                refs = {self.key(a.path) for a in v if type(a) is Ref and a.flow is not Flow.WEAK}
                calls = [a for a in v if type(a) is Call]
                # `loss = outputs.loss` or `loss = criterion(out, y)`: the one
                # source must be attached. With several (`loss / n`,
                # `a + b`) only plain accesses are followed.
                single = len(refs) + len(calls) == 1
                for a in v:
                    if type(a) is Ref and a.flow is not Flow.WEAK and (single or a.flow is Flow.ACCESS):
                        rk = self.key(a.path)
                        if rk not in seen and rk != k:
                            seen.add(rk)
                            changed = True
                if single and calls:
                    a = calls[0]
                    self.prog.proven.add(a.node)
                    # `loss, acc = step(...)`: only `loss` is proven attached.
                    self.prog.proven_targets.setdefault(a.node, set()).add(k)
                    if a.callee_path and a.method is None:
                        self.prog.proven_callees.add(a.callee_path)


def _binds(stmts: list):
    for s in stmts:
        t = type(s)
        if t is Bind:
            yield s
        elif t is If:
            yield from _binds(s.body)
            yield from _binds(s.orelse)
        elif t is LoopStmt:
            yield from _binds(s.body)
            yield from _binds(s.orelse)
        elif t is With:
            yield from _binds(s.body)


def _entry_grad(prog: Program, fn: Function) -> GradMode:
    for path in fn.decorator_paths:
        q = prog.imports.qualify_path(path) if path else None
        if q in NO_GRAD_CONTEXTS:
            return GradMode.OFF
        if q in ENABLE_GRAD_CONTEXTS:
            prog.forced_grad.add(fn.id)
            return GradMode.ON
    if prog.lightning_no_grad(fn):
        return GradMode.OFF
    # A custom autograd.Function's forward/backward run with grad disabled.
    if fn.cls is not None and fn.name in ("forward", "backward") and any(q.endswith("autograd.Function") for q in prog.base_quals(fn.cls)):
        return GradMode.OFF
    if fn.id in prog.hook_fns:
        # Hooks registered by inference code (it puts the model in eval mode
        # and never backpropagates) see no graphs.
        owner = prog.hook_owner.get(fn.id)
        if owner is not None and owner.calls_eval:
            cls = prog.method_class(owner)
            scope = list(cls.methods.values()) if cls is not None else [owner]
            if not any(f.id in prog.stepping for f in scope):
                return GradMode.OFF
        return GradMode.ON
    sites = prog.call_grads.get(fn.id)
    if sites and all(g is GradMode.OFF for g in sites):
        return GradMode.OFF
    if fn.parent is not None and not sites:
        return prog.entry.get(fn.parent.id, GradMode.ON)
    return GradMode.ON


def _resolve_hooks(prog: Program) -> None:
    for reg in prog.ir.hooks:
        if reg.kind not in ("forward", "forward_pre"):
            continue
        hit = _hook_function(prog, reg.fn_node, reg.owner)
        if hit is None:
            continue
        fn, bound = hit
        prog.hook_fns.add(fn.id)
        prog.hook_owner[fn.id] = reg.owner
        off = (1 if fn.cls is not None and fn.self_name is not None else 0) + bound
        # (module, input, output), with_kwargs: (module, args, kwargs, output);
        # pre-hooks: (module, input). Extra trailing parameters are the
        # hook's own (bound with functools.partial).
        if reg.kind == "forward_pre":
            idx = {off + 1}
        elif reg.with_kwargs:
            idx = {off + 1, off + 3}
        else:
            idx = {off + 1, off + 2}
        prog.hook_args[fn.id] = {i for i in idx if i < len(fn.params)}


def _hook_function(prog: Program, node: cst.CSTNode, owner: Function, depth: int = 0) -> tuple[Function, int] | None:
    """The function a hook registration passes, and how many of its leading
    parameters ``functools.partial`` already bound."""
    if depth > 3:
        return None
    found: Function | None = None
    if isinstance(node, cst.Lambda):
        found = prog.ir.by_node.get(node)
    elif isinstance(node, cst.Name):
        found = prog.lookup_function(owner, node.value)
    elif isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name):
        cls = prog.method_class(owner)
        if cls is not None:
            found = prog.find_method(cls, node.attr.value)
    elif isinstance(node, cst.Call):
        func = node.func
        if node.args and ((isinstance(func, cst.Name) and func.value == "partial") or (isinstance(func, cst.Attribute) and func.attr.value == "partial")):
            hit = _hook_function(prog, node.args[0].value, owner, depth + 1)
            if hit is None:
                return None
            bound = sum(1 for a in node.args[1:] if a.keyword is None and not a.star)
            return hit[0], hit[1] + bound
        # A factory: `get_activation(name)` returns the nested hook.
        hit = _hook_function(prog, func, owner, depth + 1)
        if hit is not None:
            factory = hit[0]
            for s in factory.body:
                if type(s) is Return:
                    for a in s.val:
                        if type(a) is Ref and "." not in a.path:
                            inner = prog.nested.get((factory.id, a.path))
                            if inner is not None:
                                return inner, 0
            lam = [f for f in prog.ir.functions if f.parent is factory and f.name == "<lambda>"]
            if lam:
                return lam[0], 0
    return (found, 0) if found is not None else None


def analyse(ir: ModuleIR, imports: ImportTable, options: Mapping[str, Any] | None = None) -> Program:
    prog = Program(ir, imports)
    prog.options = options or {}
    for fn in ir.functions:
        if fn.is_module_level:
            continue
        if fn.parent is None and fn.cls is None and fn.name != "<lambda>":
            prog.module_functions.setdefault(fn.name, fn)
        elif fn.parent is not None and fn.cls is None and fn.name != "<lambda>":
            prog.nested.setdefault((fn.parent.id, fn.name), fn)
    _resolve_hooks(prog)
    for fn in ir.functions:
        prog.evidence_names[fn.id] = {p for p in fn.module_evidence if "." not in p}
    for cls in ir.classes.values():
        fam = prog.family(cls)
        for attr in cls.module_evidence:
            k = ("c", fam, attr)
            prog.shared[k] = prog.shared.get(k, NOTHING) | MODULE_EVIDENCE
    for round_no in range(ROUNDS):
        last = round_no == ROUNDS - 1
        prog.recording = last
        if last:
            prog.edges = {}
        for fn in ir.functions:
            prog.entry[fn.id] = _entry_grad(prog, fn)
        call_grads: dict[int, list[GradMode]] = {}
        callers: dict[int, int] = {}
        prog.call_grads, prog.callers = call_grads, callers
        for loop_fn in ir.functions:
            for loop in loop_fn.loops:
                loop.steps = loop.data = False
        for fn in ir.functions:
            run = Run(prog, fn)
            run.run()
            prog.returns[fn.id] = frozenset(run.ret_facts)
            prog.return_sources[fn.id] = run.ret_sources
            run.prove()
    return prog
