"""Every fact about PyTorch's (and Python's) API that the analysis uses, in
one place. Which ops are views, which have in-place variants and what each
op saves for backward are read from the saved-tensor ledger (generated from
torch itself); the tables here are what no probe can measure: names of
grad-mode contexts, factories, APIs whose results carry no graph,
parameter-free module classes, framework conventions.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Callable, NamedTuple

from autograd_lint.analysis.ledger import Entry, Ledger, load_ledger

# -- grad mode ------------------------------------------------------------------

NO_GRAD = frozenset({"torch.no_grad", "torch.autograd.no_grad", "torch.autograd.grad_mode.no_grad"})
INFERENCE_MODE = frozenset({"torch.inference_mode", "torch.autograd.inference_mode", "torch.autograd.grad_mode.inference_mode"})
ENABLE_GRAD = frozenset({"torch.enable_grad", "torch.autograd.enable_grad", "torch.autograd.grad_mode.enable_grad"})
SET_GRAD_ENABLED = frozenset({"torch.set_grad_enabled", "torch.autograd.set_grad_enabled", "torch.autograd.grad_mode.set_grad_enabled"})
# True only while a model is traced, scripted or exported: code under them
# runs for export, and no backward ever runs through it.
EXPORT_ONLY_PREDICATES = frozenset(
    {
        "torch.jit.is_tracing", "torch._C._get_tracing_state", "torch.jit.is_scripting", "torch.onnx.is_in_onnx_export",
        "torch.onnx.is_onnx_export",
    }
)
# A grad-mode context entered by hand (`torch.no_grad().__enter__()`): its
# mode holds from there on, as `set_grad_enabled(False)`'s does.
ENTERED_CONTEXT = "builtins.object.__enter__"
# Calls that switch grad mode as statements of their own.
SWITCHES_AS_STATEMENT = SET_GRAD_ENABLED | {ENTERED_CONTEXT}
# Context managers that look like grad control but are not (issue: ruled out
# as evidence of no_grad).
# `Variable(x, volatile=True)`: the flag that turned grad off before torch
# 0.4; since then it only warns.
VARIABLE = frozenset({"torch.autograd.Variable", "torch.autograd.variable.Variable"})
VARIABLE_NAME = "Variable"
VOLATILE = "volatile"
NOT_GRAD_CONTEXTS = frozenset({"torch.autocast", "torch.cuda.amp.autocast", "torch.cpu.amp.autocast", "torch.amp.autocast"})
# Context managers that leave grad mode as it is: `ctx = torch.no_grad() if
# eval else nullcontext()` may or may not turn it off.
NEUTRAL_CONTEXTS = frozenset({"contextlib.nullcontext", "contextlib.ExitStack", "contextlib.AsyncExitStack", "contextlib.suppress"})

# -- backward ---------------------------------------------------------------------

AUTOGRAD_GRAD = "torch.autograd.grad"
BACKWARD_FUNCTIONS = frozenset({AUTOGRAD_GRAD, "torch.autograd.backward"})
# Library functions that convert their first argument through
# ``Tensor.__array__``, which calls ``numpy()``: they raise on a tensor that
# requires grad, as ``numpy()`` does.
REFUSE_GRAPH_FUNCTIONS = frozenset({"numpy.asarray", "numpy.array", "numpy.asanyarray", "numpy.ascontiguousarray"})
# Element-wise extremes of two tensors: `best = torch.max(best, v)` keeps a
# running maximum, whose graph chains through every `v` it was given.
RUNNING_EXTREMES = frozenset({"torch.max", "torch.maximum", "torch.min", "torch.minimum", "torch.fmax", "torch.fmin"})
# Class decorators that write the class an `__init__` setting each of its
# annotated fields from the arguments, in order.
RECORD_DECORATORS = frozenset({"dataclasses.dataclass"})
# Out-of-place running updates: (the position of what is updated, of what
# it moves toward). `self.avg = torch.lerp(self.avg, v, w)` chains as
# `self.avg = self.avg + w * (v - self.avg)` does.
RUNNING_UPDATES = {"torch.lerp": (0, 1)}
BACKWARD_METHODS = frozenset({"backward", "manual_backward"})

# Anomaly detection switched for the rest of the process by a call (its
# first argument or `mode=`): every backward then records and checks each
# op's forward trace, silently (only the `detect_anomaly()` context warns).
SET_DETECT_ANOMALY = frozenset({"torch.autograd.set_detect_anomaly", "torch.autograd.anomaly_mode.set_detect_anomaly"})
ANOMALY_MODE_ARGUMENT = "mode"

# -- mixed precision ----------------------------------------------------------------

GRAD_SCALERS = frozenset(
    {
        "torch.amp.GradScaler", "torch.cuda.amp.GradScaler", "torch.amp.grad_scaler.GradScaler", "torch.cuda.amp.grad_scaler.GradScaler",
        "torch.distributed.fsdp.sharded_grad_scaler.ShardedGradScaler",
    }
)
# What reads the gradients' values: a clip sees their norm (or their
# elements), so scaled gradients give it a norm ``scale`` times too large.
GRADIENT_CLIPS = frozenset(
    {
        "torch.nn.utils.clip_grad_norm_", "torch.nn.utils.clip_grad_value_", "torch.nn.utils.clip_grad_norm",
        "torch.nn.utils.clip_grad.clip_grad_norm_", "torch.nn.utils.clip_grad.clip_grad_value_",
    }
)
# Norms taken of a gradient (`torch.norm(p.grad)`, `p.grad.norm()`).
GRADIENT_NORMS = frozenset({"torch.norm", "torch.linalg.norm", "torch.linalg.vector_norm"})
NORM_METHODS = frozenset({"norm"})

# -- torch functions -------------------------------------------------------------

# torch.* functions whose result carries no graph (integers, booleans,
# metadata, or no tensor at all).
TORCH_CUT = frozenset(
    """argmax argmin argsort eq ne gt lt ge le equal allclose isclose isnan isinf isfinite numel is_tensor
    is_floating_point is_complex count_nonzero nonzero bucketize searchsorted unique unique_consecutive
    logical_and logical_or logical_not logical_xor bitwise_and bitwise_or bitwise_xor bitwise_not sign
    manual_seed seed get_default_dtype set_default_dtype device dtype Size is_grad_enabled multinomial
    randint randint_like randperm bernoulli poisson topk_indices histc bincount tril_indices triu_indices
    floor_divide""".split()
)
# torch.* factories: a new leaf, requiring grad only with requires_grad=True.
TORCH_FACTORIES = frozenset(
    """tensor as_tensor zeros ones empty full rand randn arange linspace logspace eye zeros_like ones_like
    empty_like full_like rand_like randn_like from_numpy frombuffer normal empty_strided sparse_coo_tensor
    scalar_tensor""".split()
)
# Factories that, given no `device` and no `dtype`, make a float32 tensor
# on the default device (the others follow their data or another tensor).
DEFAULT_PLACED_FACTORIES = frozenset("zeros ones empty rand randn eye linspace logspace empty_strided".split())
# The dtypes a floating tensor is moved to, by the names torch gives them.
FLOAT_DTYPES = {
    "torch.float64": "float64", "torch.double": "float64", "torch.float32": "float32", "torch.float": "float32",
    "torch.float16": "float16", "torch.half": "float16", "torch.bfloat16": "bfloat16",
}
# The legacy typed constructors (`torch.Tensor([0.0])`, `torch.FloatTensor(n)`,
# `torch.cuda.FloatTensor(...)`): a new tensor, without graph.
_LEGACY_TYPES = "Tensor FloatTensor DoubleTensor HalfTensor BFloat16Tensor LongTensor IntTensor ShortTensor ByteTensor CharTensor BoolTensor"
LEGACY_TENSOR_CONSTRUCTORS = frozenset(f"torch.{t}" for t in _LEGACY_TYPES.split()) | frozenset(
    f"torch.cuda.{t}" for t in _LEGACY_TYPES.split() if t != "Tensor"
)
# Wrappers that take a module only (a function or a tensor raises) and
# return it wrapped: what they are given is a module, as far as nothing says
# otherwise.
MODULE_WRAPPERS = frozenset(
    {
        "torch.nn.DataParallel",
        "torch.nn.parallel.DataParallel",
        "torch.nn.parallel.DistributedDataParallel",
        "torch.distributed.fsdp.FullyShardedDataParallel",
        "torch.nn.utils.parametrizations.weight_norm",
        "torch.nn.utils.weight_norm",
        "torch.nn.utils.spectral_norm",
    }
)
# Calls returning their (first) argument, wrapped: a module stays a module.
PASS_THROUGH = MODULE_WRAPPERS | {"torch.compile", "torch.jit.script", "torch.jit.trace"}
# The type test whose false branch shows a value is no tensor.
IS_TENSOR = "torch.is_tensor"
# Optimizers whose `step(closure)` evaluates the closure several times in
# one step (a line search): a closure that backpropagates must zero first.
CLOSURE_EVALUATING_OPTIMIZERS = frozenset({"torch.optim.LBFGS", "torch.optim.lbfgs.LBFGS"})
# Loading what was saved: anything (`torch.load`); a model (a TorchScript
# module, a hub entry point).
LOADERS = frozenset({"torch.load", "torch.hub.load_state_dict_from_url", "safetensors.torch.load_file"})
MODULE_LOADERS = frozenset({"torch.jit.load", "torch.hub.load"})
# Functions of other libraries returning a view of their first argument.
VIEW_FUNCTIONS = frozenset({"einops.rearrange"})
# ...and a tensor computed from it, differentiably: einops, and the
# collectives of Horovod and torch.distributed.nn (autograd Functions).
OP_FUNCTIONS = frozenset(
    {
        "einops.repeat", "einops.reduce", "einops.einsum", "einops.pack", "horovod.torch.allreduce", "horovod.torch.allgather",
        "horovod.torch.broadcast", "horovod.torch.alltoall", "horovod.torch.reducescatter", "horovod.torch.grouped_allreduce",
        "torch.distributed.nn.all_reduce", "torch.distributed.nn.all_gather", "torch.distributed.nn.functional.all_reduce",
        "torch.distributed.nn.functional.all_gather", "torch.distributed.nn.functional.reduce_scatter",
    }
)
# Other libraries' names for torch.nn's own classes: OpenMMLab's module
# bases and containers subclass them adding only weight initialisation, so
# what holds for the torch class holds for them (a block of an mmcv
# `ModuleList` is registered and runs when called).
TORCH_NN_ALIASES = {
    f"{package}.{name}": f"torch.nn.{torch_name}"
    for package in ("mmcv.runner", "mmcv.runner.base_module", "mmengine.model", "mmengine.model.base_module")
    for name, torch_name in (("BaseModule", "Module"), ("ModuleList", "ModuleList"), ("Sequential", "Sequential"), ("ModuleDict", "ModuleDict"))
}


def canonical_name(qual: str) -> str:
    """``qual`` as torch names it, where another library re-exports one of
    torch's classes (``TORCH_NN_ALIASES``); else ``qual``."""
    return TORCH_NN_ALIASES.get(qual, qual)


# torch.nn classes without parameters: their output is attached only when
# their input is.
FUNCTIONAL_MODULES = frozenset(
    """ReLU ReLU6 LeakyReLU ELU SELU CELU GELU SiLU Mish Sigmoid Tanh Softmax LogSoftmax Softmin Softmax2d
    Softplus Softsign Hardtanh Hardswish Hardsigmoid Hardshrink Softshrink Tanhshrink Threshold GLU LogSigmoid
    RReLU Dropout Dropout1d Dropout2d Dropout3d AlphaDropout FeatureAlphaDropout Identity Flatten Unflatten
    MaxPool1d MaxPool2d MaxPool3d AvgPool1d AvgPool2d AvgPool3d AdaptiveAvgPool1d AdaptiveAvgPool2d
    AdaptiveAvgPool3d AdaptiveMaxPool1d AdaptiveMaxPool2d AdaptiveMaxPool3d LPPool1d LPPool2d Upsample
    UpsamplingNearest2d UpsamplingBilinear2d PixelShuffle PixelUnshuffle ZeroPad1d ZeroPad2d ZeroPad3d
    ConstantPad1d ConstantPad2d ConstantPad3d ReflectionPad1d ReflectionPad2d ReflectionPad3d
    ReplicationPad1d ReplicationPad2d ReplicationPad3d CircularPad1d CircularPad2d CosineSimilarity
    PairwiseDistance ChannelShuffle Fold Unfold""".split()
)
# torch.nn containers: what they save is what their layers save.
MODULE_CONTAINERS = frozenset({"torch.nn.ModuleList", "torch.nn.ModuleDict", "torch.nn.Sequential"})
# torch.nn layers whose call returns a tuple, not a tensor.
TUPLE_OUTPUT_MODULES = frozenset({"torch.nn.RNN", "torch.nn.LSTM", "torch.nn.GRU", "torch.nn.MultiheadAttention"})
# Of those, the ones whose second item is itself a pair: `out, (h, c) = lstm(x)`.
PAIRED_STATE_MODULES = frozenset({"torch.nn.LSTM"})
PARAMETER_CLASSES = frozenset({"torch.nn.Parameter", "torch.nn.parameter.Parameter", "torch.autograd.Variable"})
# `isinstance(x, torch.Tensor)`: the classes whose instances are tensors.
TENSOR_CLASSES = frozenset({"torch.Tensor", "torch.nn.Parameter", "torch.nn.parameter.Parameter", "torch.FloatTensor", "torch.LongTensor", "torch.BoolTensor"})
# Containers of parameters: a store into one (`pd[name] = nn.Parameter(...)`)
# registers a parameter, it writes no tensor.
PARAMETER_CONTAINERS = {"torch.nn.ParameterList": "list", "torch.nn.ParameterDict": "dict"}
# Calls that register the modules or parameters they are given on a module
# (by the called name: a module's method, the builtin `setattr`, or a
# torch.nn container class): what passes through one is in `parameters()`.
REGISTERING_CALLS = frozenset(
    {"add_module", "register_module", "register_parameter", "setattr"}
    | {q.rsplit(".", 1)[1] for q in (*MODULE_CONTAINERS, *PARAMETER_CONTAINERS)}
)
# Calls that set a module's attribute by a name the code computes: a class
# that makes one has members no definition shows.
ATTRIBUTE_SETTERS = frozenset({"add_module", "register_module", "register_parameter", "setattr", "__setattr__"})
# APIs whose use means gradients must keep their storage between steps:
# CUDA-graph capture replays kernels on fixed addresses (AGL401 stays quiet).
STATIC_GRAD_MEMORY = frozenset(
    {"torch.cuda.graph", "torch.cuda.CUDAGraph", "torch.cuda.make_graphed_callables", "torch.cuda.graphs.make_graphed_callables"}
)
STATIC_COMPILE_MODES = frozenset({"reduce-overhead", "max-autotune"})

# -- members ------------------------------------------------------------------------

# What members of tensors, modules, optimizers and containers do is the API
# model's (api/: `zero_grad` zeroes gradients, `zero_()` zeroes a tensor).
# The keyword of `Optimizer.zero_grad(set_to_none=...)`.
SET_TO_NONE = "set_to_none"
# `torch._foreach_zero_(tensors)`: zeroes each tensor of a list.
FOREACH_ZERO = "torch._foreach_zero_"
# Methods ending in `_` that do not write the tensor's data.
NOT_WRITES = frozenset({"requires_grad_", "share_memory_", "detach_", "retain_grad_", "record_stream_", "names_", "rename_", "resize_"})
# -- modules ----------------------------------------------------------------------

# hook registration method -> (what the hook receives: indexes of attached
# arguments for a plain hook; for with_kwargs=True)
HOOK_METHODS = {
    "register_forward_hook": ((1, 2), (1, 3)),
    "register_forward_pre_hook": ((1,), (1,)),
    "register_full_backward_hook": ((), ()),
    "register_backward_hook": ((), ()),
    "register_full_backward_pre_hook": ((), ()),
}
FORWARD_HOOKS = frozenset({"register_forward_hook", "register_forward_pre_hook"})
# Methods of a module that run once (set-up), not at every step.
ONCE_METHODS = frozenset(
    {"__init__", "__post_init__", "setup", "configure_model", "build", "reset_parameters", "_init_weights", "init_weights", "configure_optimizers"}
)
# Lightning methods Lightning runs under no_grad.
LIGHTNING_NO_GRAD = frozenset(
    """validation_step test_step predict_step validation_epoch_end test_epoch_end on_validation_epoch_end
    on_test_epoch_end on_predict_epoch_end on_validation_batch_end on_test_batch_end on_predict_batch_end""".split()
)
LIGHTNING_BASES = ("LightningModule",)
# Frameworks that call these methods of their subclasses with grad off:
# the name of the framework's base class -> the methods. (transformers'
# `Pipeline.forward` runs `_forward` under its inference context.)
NO_GRAD_METHODS_OF_BASES: dict[str, frozenset[str]] = {
    "Pipeline": frozenset({"_forward"}),
}
# Lightning runs its callbacks' validation/test/predict hooks in the same
# loops, under no_grad too.
LIGHTNING_CALLBACK_PACKAGES = ("lightning.pytorch.", "pytorch_lightning.", "lightning.")
LIGHTNING_CALLBACK_BASES = ("Callback", "PredictionWriter")
# Libraries whose model classes and `from_pretrained` give nn.Modules.
MODEL_LIBRARIES = ("transformers.", "diffusers.", "timm.", "torchvision.models", "peft.", "sentence_transformers.", "torchaudio.models")
MODEL_CLASS_WORDS = ("Model", "Net", "For", "UNet", "VAE", "Transformer", "Encoder", "Decoder")
NOT_MODEL_WORDS = ("Tokenizer", "Processor", "Config", "FeatureExtractor", "Scheduler", "Pipeline", "Output")
MODEL_FACTORIES = frozenset({"from_pretrained", "create_model", "from_config", "load_model"})
# Packages whose public functions each build a model: `getattr(models,
# args.arch)(...)` picks one by name.
MODEL_FUNCTION_NAMESPACES = frozenset({"torchvision.models", "torchaudio.models"})
# Namespaces whose attribute picked by a name the code does not spell
# (`getattr(optim, args.optim)`) is a class of one kind: an optimizer.
OPTIMIZER_NAMESPACES = frozenset({"torch.optim"})
ANY_ATTR = "<any>"  # the attribute of a `getattr(obj, name)` whose name is not a literal
# Methods of a Trainer subclass whose return value the framework backpropagates.
TRAINER_LOSS_METHODS = frozenset({"compute_loss", "training_step"})

# -- other frameworks -----------------------------------------------------------

# Values from these are never torch tensors.
FOREIGN_LIBRARIES = ("numpy", "mxnet", "jax", "jaxlib", "tensorflow", "keras", "cupy", "pandas", "scipy", "sklearn", "paddle", "oneflow", "mindspore")
# Packages that are never project modules: names imported from them are
# library objects (qualified names), not summaries to look up.
KNOWN_LIBRARIES = FOREIGN_LIBRARIES + (
    "torch", "torchvision", "torchaudio", "torchtext", "transformers", "diffusers", "timm", "peft", "accelerate",
    "lightning", "pytorch_lightning", "datasets", "einops", "tqdm", "wandb", "logging", "os", "sys", "math", "json",
    "time", "random", "re", "typing", "collections", "functools", "itertools", "dataclasses", "argparse", "pathlib",
    "abc", "contextlib", "warnings", "copy", "pickle", "inspect", "enum", "operator", "statistics", "torchmetrics",
    "sentence_transformers", "safetensors", "huggingface_hub", "PIL", "cv2", "matplotlib", "yaml", "omegaconf",
    "hydra", "deepspeed", "apex", "triton", "horovod",
)

# What these names mean in PyTorch code, whatever module they come through
# (`from utils import *` where utils did `import torch.nn as nn`).
CONVENTIONAL_NAMES = {"torch": "torch", "nn": "torch.nn", "F": "torch.nn.functional", "optim": "torch.optim", "np": "numpy"}

# -- Python ---------------------------------------------------------------------

BUILTIN_NUMBER = frozenset("float int len hash id ord round divmod abs_int".split())
BUILTIN_STR = frozenset("str repr format chr bin hex oct ascii".split())
BUILTIN_BOOL = frozenset("bool isinstance issubclass hasattr callable all any".split())
BUILTIN_NONE = frozenset("print setattr delattr exec".split())
# Builtins that only format what they are given (no gradient can come of it).
BUILTIN_SHOWS = frozenset({"print", "repr", "str", "format"})
# Builtins computing on their arguments' values (a graph flows through).
BUILTIN_OP = frozenset("sum max min abs pow".split())
# Builtins that rearrange their arguments' elements.
BUILTIN_ELEMENTS = frozenset("list tuple sorted reversed iter next set frozenset filter".split())
BUILTIN_OPAQUE = frozenset("type range open vars dir locals globals super getattr map object slice memoryview bytearray bytes".split())
# Container constructors the analysis models as dicts / sets / deques.
DICT_FACTORIES = frozenset({"dict", "collections.defaultdict", "collections.OrderedDict", "collections.Counter", "defaultdict", "OrderedDict", "Counter"})
# Copies of a mapping: a shallow one (`copy.copy(d)`, `OrderedDict(d)`)
# holds the same elements (a state dict's tensors: still the parameters'
# storage); a deep one holds new ones, which the analysis does not follow.
SHALLOW_MAPPING_COPIES = frozenset({"copy.copy", "collections.OrderedDict"})
DEEP_COPIES = frozenset({"copy.deepcopy"})
# Functions that give back one of their arguments as it is, by position:
# `typing.cast(torch.Tensor, x)` is `x`.
ARGUMENT_RETURNERS = {"typing.cast": 1, "typing_extensions.cast": 1}
# Functions that write what they are given out as it is at the call (a
# state dict saved is its tensors' values then).
SERIALIZERS = frozenset({"torch.save"})
LIST_FACTORIES = frozenset({"list", "collections.deque", "deque", "queue.Queue", "Queue"})
SET_FACTORIES = frozenset({"set", "frozenset"})
# Functions and methods that only read what they are given (to print, log,
# format or compare it): a value reaching them is not differentiated.
INERT_FUNCTIONS = frozenset(
    {
        "print", "str", "repr", "format", "float", "int", "bool", "len", "round", "isinstance", "hash", "id",
        "sorted", "min", "max", "sum", "abs", "any", "all", "enumerate", "zip", "range",
    }
)
# Initialisers: they fill the tensor they are given in place, under
# no_grad; nothing they do gives it a gradient.
INITIALIZER_PREFIX = "torch.nn.init."
INERT_PREFIXES = ("logging.", "math.", "json.", "numpy.", "sklearn.", "scipy.", "torchmetrics.", "wandb.", "warnings.", "pandas.", "statistics.")
INERT_METHODS = frozenset(
    {"info", "debug", "warning", "error", "log", "log_dict", "add_scalar", "add_scalars", "set_postfix", "set_description", "write", "writerow", "format", "log_metrics"}
)


# -- the ledger: views, in-place variants, what each op saves ---------------------


@lru_cache(maxsize=1)
def ledger() -> Ledger:
    return load_ledger()


def ledger_entry(qual: str) -> Entry | None:
    return ledger().get(qual)


def method_entry(name: str) -> Entry | None:
    return ledger().get(f"Tensor.{name}")


@lru_cache(maxsize=None)
def is_view_method(name: str) -> bool:
    """``x.<name>(...)`` shares storage with ``x`` (a view or x itself)."""
    e = method_entry(name)
    return e is not None and e.view


@lru_cache(maxsize=None)
def is_view_function(qual: str) -> bool:
    e = ledger_entry(qual)
    return e is not None and e.view


# The backward nodes of views torch creates as one of several outputs
# (CreationMeta::MULTI_OUTPUT_NODE): writing such a view in place while it
# requires grad raises at once. `tensor_split`/`hsplit` views (sliced one by
# one) are not among them. Checked against torch 2.13.
MULTI_OUTPUT_VIEW_GRAD_FNS = frozenset({"SplitBackward0", "SplitWithSizesBackward0", "UnbindBackward0"})


@lru_cache(maxsize=None)
def is_multi_output_view_method(name: str) -> bool:
    """``x.<name>(...)`` returns several views of ``x`` that torch forbids
    writing in place (``split``, ``chunk``, ``unbind``)."""
    return is_multi_output_view_function(f"Tensor.{name}")


@lru_cache(maxsize=None)
def is_multi_output_view_function(qual: str) -> bool:
    """``torch.split(x, ...)`` and the like: the function forms."""
    e = ledger_entry(qual)
    return e is not None and e.view and bool(MULTI_OUTPUT_VIEW_GRAD_FNS.intersection(e.grad_fn))


def inplace_base(name: str) -> str | None:
    """The out-of-place op of an in-place method name (torch's convention:
    in-place ops end in ``_``): ``mul_`` -> ``mul``. None for names that are
    not in-place style (no trailing ``_``, a dunder, a private name)."""
    if not name.endswith("_") or name.endswith("__") or name.startswith("_") or name in NOT_WRITES:
        return None
    base = name[:-1]
    return base if base.isidentifier() else None


def writes_in_place(method: str) -> bool:
    return inplace_base(method) is not None


# -- classification of qualified names ------------------------------------------


def top_package(qual: str) -> str:
    return qual.split(".", 1)[0]


def is_foreign(qual: str) -> bool:
    return top_package(qual) in FOREIGN_LIBRARIES


def is_known_library(module: str) -> bool:
    return top_package(module) in KNOWN_LIBRARIES


_NN_NOT_MODULES = ("torch.nn.functional.", "torch.nn.init.", "torch.nn.utils.", "torch.nn.parameter.")


def is_module_class(qual: str) -> bool:
    """Calling ``qual`` makes an nn.Module: a torch.nn class, or a model
    class of a model library."""
    last = qual.rsplit(".", 1)[-1]
    if not last[:1].isupper():
        return False
    if qual.startswith("torch.nn."):
        return qual not in PARAMETER_CLASSES and qual not in PARAMETER_CONTAINERS and not qual.startswith(_NN_NOT_MODULES)
    if qual.startswith(MODEL_LIBRARIES):
        return not any(w in last for w in NOT_MODEL_WORDS) and (any(w in last for w in MODEL_CLASS_WORDS) or "PreTrainedModel" in last)
    return False


def is_base_module_class(qual: str) -> bool:
    """A base class that makes its subclasses nn.Modules."""
    last = qual.rsplit(".", 1)[-1]
    if last.endswith(LIGHTNING_BASES):
        return True
    if qual.startswith("torch.nn."):
        return last[:1].isupper() and qual not in PARAMETER_CLASSES and not qual.startswith(_NN_NOT_MODULES)
    return qual.startswith(MODEL_LIBRARIES) and (last.endswith(("Model", "Module")) or "PreTrainedModel" in last)


def is_parametric_module(qual: str) -> bool:
    last = qual.rsplit(".", 1)[-1]
    return not (last.endswith("Loss") or last in FUNCTIONAL_MODULES)


def is_lightning_callback(qual: str) -> bool:
    """A base class of Lightning's callbacks (``BasePredictionWriter``)."""
    return qual.startswith(LIGHTNING_CALLBACK_PACKAGES) and qual.rsplit(".", 1)[-1].endswith(LIGHTNING_CALLBACK_BASES)


# The standard library's dict classes that `dict(...)` describes.
DICT_CLASSES = frozenset({"collections.OrderedDict"})

# Optimizer classes a package re-exports at its top level.
REEXPORTED_OPTIMIZERS = frozenset({"transformers.AdamW", "transformers.Adafactor"})


def is_optimizer_class(qual: str) -> bool:
    last = qual.rsplit(".", 1)[-1]
    if qual in REEXPORTED_OPTIMIZERS:
        return True
    if last == ANY_ATTR:
        return qual.rsplit(".", 1)[0] in OPTIMIZER_NAMESPACES
    return qual.startswith("torch.optim.") and last[:1].isupper() and "lr_scheduler" not in qual and last != "Optimizer" or (
        qual.startswith(("bitsandbytes.optim.", "apex.optimizers.", "transformers.optimization.")) and last[:1].isupper() and "Scheduler" not in last
    )


def builds_an_instance(member: str) -> bool:
    """``Cls.<member>(...)`` of a model class (``from_pretrained``,
    ``from_config``) gives an instance of that class."""
    return member in MODEL_FACTORIES


def is_model_factory(qual: str) -> bool:
    """``AutoModel.from_pretrained``, ``timm.create_model``: returns a module."""
    parts = qual.split(".")
    last = parts[-1]
    if not qual.startswith(MODEL_LIBRARIES):
        return False
    owner = parts[-2] if len(parts) >= 2 else ""
    if any(w in owner for w in NOT_MODEL_WORDS):
        return False
    if last in MODEL_FACTORIES:
        return True
    # torchvision.models.resnet50(...), getattr(torchvision.models, arch)(...)
    if last == ANY_ATTR:
        return qual.rsplit(".", 1)[0] in MODEL_FUNCTION_NAMESPACES
    return qual.startswith(("torchvision.models", "torchaudio.models")) and last[:1].islower() and not last.startswith("_")


# Libraries that never import torch (the standard library's decorator
# modules, command-line, logging, config, caching and retry libraries): a
# decorator of theirs cannot change torch's grad mode, so the function runs
# in its callers' mode (`@app.command()` of typer, `@logger.catch` of
# loguru, `@hydra.main(...)`). By top-level package.
TORCH_FREE_LIBRARIES = frozenset(
    {
        # standard library
        "functools", "dataclasses", "abc", "typing", "typing_extensions", "atexit", "logging", "warnings",
        "unittest", "time", "timeit", "cProfile", "profile", "threading", "asyncio", "signal", "enum",
        # command lines, configuration
        "typer", "click", "fire", "hydra", "omegaconf", "gin", "absl", "jsonargparse", "simple_parsing",
        # logging, profiling, caching, retrying, checking
        "loguru", "memory_profiler", "line_profiler", "cachetools", "joblib", "tenacity", "retry", "retrying",
        "backoff", "deprecated", "deprecation", "attr", "attrs", "pydantic", "beartype", "typeguard", "pytest",
        # web and app frameworks serving a model
        "flask", "fastapi", "streamlit", "gradio", "celery",
    }
)


def torch_free(module: str) -> bool:
    """``module`` (as imported, ``hydra.main``) belongs to a library that
    never imports torch."""
    return module.split(".", 1)[0] in TORCH_FREE_LIBRARIES


def grad_context_mode(qual: str, enabled_literal: bool | None) -> str | None:
    """The grad mode a context manager / decorator sets: "off", "on",
    "maybe"; None when ``qual`` is not a grad-mode context.
    ``enabled_literal``: its first argument when a literal bool."""
    if qual in NO_GRAD:
        return "off"
    if qual in INFERENCE_MODE:
        return "on" if enabled_literal is False else "off"
    if qual in ENABLE_GRAD:
        return "on"
    if qual in SET_GRAD_ENABLED:
        if enabled_literal is None:
            return "maybe"
        return "on" if enabled_literal else "off"
    return None


def is_inert_call(qual: str | None, method: str | None) -> bool:
    """A call that only reads its arguments (printing, logging, metrics)."""
    if qual is not None:
        if qual in INERT_FUNCTIONS or qual.startswith(INERT_PREFIXES):
            return True
    return method is not None and method in INERT_METHODS

# Calls that draw from the random number generator each time the code runs,
# so a recomputation (activation checkpointing) that does not restore the
# RNG state draws differently from the forward it stands for. The value says
# where the call's drop probability is; it draws only where that is not 0
# (and, for the functional dropouts, where `training` is not False). None:
# every call draws. A module class draws when the module runs, with the
# probability it was built with.
class RandomDraw(NamedTuple):
    position: int
    keyword: str
    default: float
    training: int | None = None  # the position of a `training` flag


RANDOM_DRAWS: dict[str, RandomDraw | None] = {
    **{
        f"torch.nn.{c}": RandomDraw(0, "p", 0.5)
        for c in ("Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout", "FeatureAlphaDropout")
    },
    **{
        f"torch.nn.functional.{f}": RandomDraw(1, "p", 0.5, training=2)
        for f in ("dropout", "dropout1d", "dropout2d", "dropout3d", "alpha_dropout", "feature_alpha_dropout")
    },
    "torch.nn.TransformerEncoderLayer": RandomDraw(3, "dropout", 0.1),
    "torch.nn.TransformerDecoderLayer": RandomDraw(3, "dropout", 0.1),
    "torch.nn.Transformer": RandomDraw(5, "dropout", 0.1),
    "torch.nn.MultiheadAttention": RandomDraw(2, "dropout", 0.0),
    "torch.nn.functional.scaled_dot_product_attention": RandomDraw(4, "dropout_p", 0.0),
    **{
        f"torch.{f}": None
        for f in ("rand", "randn", "rand_like", "randn_like", "randint", "randint_like", "randperm", "bernoulli", "multinomial", "normal", "poisson")
    },
}


def shown_to_draw(spec: RandomDraw | None, arg: "Callable[[int, str], tuple[bool, object]]") -> bool:
    """A call of a ``RANDOM_DRAWS`` entry is shown to draw: its probability
    is a non-zero literal, or left at a non-zero default; a functional
    dropout is not told ``training=False``. ``arg(position, keyword)``: is
    that argument given, and its literal value (None: not a literal)."""
    if spec is None:
        return True
    if spec.training is not None:
        given, flag = arg(spec.training, "training")
        if given and flag is False:
            return False
    given, p = arg(spec.position, spec.keyword)
    if not given:
        return spec.default > 0
    return isinstance(p, (int, float)) and not isinstance(p, bool) and p > 0


# Activation checkpointing: recomputes its first argument in the backward.
CHECKPOINT_FUNCTIONS = frozenset({"torch.utils.checkpoint.checkpoint", "torch.utils.checkpoint.checkpoint_sequential"})
