"""The rows of the API model (model.py): what members of tensors, modules,
optimizers, containers and strings do, by owner kind.

Kept as data: one call of ``_rows`` per group of members that behave alike.
What the ledger measures (which tensor methods are views, which are
in-place variants, what an op saves) is not repeated here: ``tensor_member``
reads it for every tensor member this table does not name.
"""

from __future__ import annotations

from autograd_lint.analysis.api.model import (
    DICT,
    LIST,
    MODULE,
    NUMBER,
    OPTIMIZER,
    SCALER,
    SET,
    STR,
    TENSOR,
    TUPLE,
    Gives,
    Member,
)

ROWS: dict[tuple[str, str], Member] = {}


def _rows(owners: str | tuple[str, ...], names: str, gives: Gives, **facts: object) -> None:
    for owner in (owners,) if isinstance(owners, str) else owners:
        for name in names.split():
            ROWS[(owner, name)] = Member(owner, name, gives, **facts)  # type: ignore[arg-type]


# -- torch.Tensor ------------------------------------------------------------------

# Reading the values out (a number, a list, a detached tensor): what is
# computed from them is cut off the receiver's graph.
_rows(TENSOR, "item", Gives.NUMBER, one_element=True, reads_out=True)
_rows(TENSOR, "__int__ __float__", Gives.NUMBER, reads_out=True)
_rows(TENSOR, "dim numel ndimension nelement element_size data_ptr get_device storage_offset __len__ __index__", Gives.NUMBER)
_rows(TENSOR, "is_contiguous is_floating_point is_complex is_pinned is_shared is_set_to equal allclose", Gives.BOOL)
_rows(TENSOR, "__str__ __repr__ __format__", Gives.STR)
_rows(TENSOR, "tolist", Gives.NUMBERS, reads_out=True)
_rows(TENSOR, "size stride", Gives.SHAPE)
# Integer and boolean results: no graph (torch refuses to make them require grad).
_rows(
    TENSOR,
    """argmax argmin argsort eq ne gt lt ge le long int bool short byte char nonzero isnan isinf isfinite
    isneginf isposinf isreal all any count_nonzero isclose sign signbit logical_and logical_or logical_not
    logical_xor bitwise_and bitwise_or bitwise_xor bitwise_not floor_divide indices bincount unique multinomial""",
    Gives.NO_GRAD_TENSOR,
)
_rows(TENSOR, "numpy", Gives.FOREIGN, refuses_graph=True, refuses_graph_unless="force")
_rows(TENSOR, "detach", Gives.DETACHED, reads_out=True)
_rows(TENSOR, "detach_", Gives.DETACHED, detaches=True)
_rows(TENSOR, "requires_grad_", Gives.LEAF)
# Conversions that return the tensor itself when it already has the device
# or dtype asked for: the same graph, the same saved state. Those that move
# or convert make a copy otherwise: of a leaf, a tensor that is not one.
_rows(TENSOR, "type", Gives.CAST, copies=True)
_rows(TENSOR, "to", Gives.CAST, copies=True, moves_by_arguments=True)
for _device in ("cuda", "cpu"):
    _rows(TENSOR, _device, Gives.CAST, copies=True, device=_device)
for _method, _dtype in (("double", "float64"), ("float", "float32"), ("half", "float16"), ("bfloat16", "bfloat16")):
    _rows(TENSOR, _method, Gives.CAST, copies=True, dtype=_dtype)
del _device, _method, _dtype
_rows(TENSOR, "contiguous pin_memory share_memory_ rename_ resize_", Gives.CAST)
_rows(TENSOR, "retain_grad record_stream register_hook", Gives.NONE)
_rows(TENSOR, "backward", Gives.NONE, one_element=True, one_element_unless="gradient")
# (values, indices) when given a dim; else one tensor.
_rows(TENSOR, "topk sort kthvalue mode cummax cummin", Gives.VALUES_INDICES)
_rows(TENSOR, "max min median nanmedian", Gives.DIM_PAIR)
# `total.add_(loss)`: accumulates into the tensor as `total += loss` does.
_rows(TENSOR, "add_ sub_", Gives.RECEIVER, writes=True, accumulates=True)
# Zeroing in place (on a gradient: zeroing it by hand).
_rows(TENSOR, "zero_", Gives.RECEIVER, writes=True, zeroes=True)
_rows(TENSOR, "fill_ mul_", Gives.RECEIVER, writes=True, zeroes_given_zero=True)
# Attributes.
_rows(TENSOR, "shape", Gives.SHAPE, attribute=True)
_rows(TENSOR, "ndim itemsize nbytes", Gives.NUMBER, attribute=True)
_rows(TENSOR, "requires_grad is_leaf is_cuda is_sparse is_quantized is_meta", Gives.BOOL, attribute=True)
_rows(TENSOR, "dtype device layout names __class__", Gives.META, attribute=True)
_rows(TENSOR, "grad_fn", Gives.META, attribute=True, walks_graph=True)
_rows(TENSOR, "indices", Gives.NO_GRAD_TENSOR, attribute=True)
# Filled by backward on a leaf only: a non-leaf's reads None (with a warning).
_rows(TENSOR, "grad", Gives.GRADIENT, attribute=True, leaf_only=True)
# The same storage, detached: writes through it are invisible to autograd.
_rows(TENSOR, "data", Gives.DETACHED, attribute=True, reads_out=True)
_rows(TENSOR, "T mT H mH real imag", Gives.VIEW, attribute=True)

# -- torch.nn.Module -----------------------------------------------------------------

_rows(MODULE, "forward __call__", Gives.FORWARD, pure=False)
# Only a module has these: calling one shows an unknown receiver is a module.
_rows(MODULE, "parameters", Gives.PARAMETERS, evidence=True)
_rows(MODULE, "named_parameters", Gives.NAMED_PARAMETERS, evidence=True)
_rows(MODULE, "buffers", Gives.BUFFERS, evidence=True)
_rows(MODULE, "named_buffers", Gives.NAMED_BUFFERS, evidence=True)
_rows(MODULE, "modules children", Gives.SUBMODULES, evidence=True)
_rows(MODULE, "named_modules named_children", Gives.NAMED_SUBMODULES, evidence=True)
_rows(MODULE, "get_submodule", Gives.SUBMODULE, evidence=True)
_rows(
    MODULE,
    """register_forward_hook register_forward_pre_hook register_full_backward_hook register_backward_hook
    register_full_backward_pre_hook""",
    Gives.UNKNOWN,
    evidence=True,
)
_rows(MODULE, "register_parameter add_module register_module", Gives.NONE, evidence=True, sets_attribute=True)
_rows(MODULE, "register_buffer", Gives.NONE, evidence=True, sets_attribute=True, sets_buffer=True)
# A container module's own (`nn.ModuleList`, `nn.Sequential`): the module
# it is given becomes one of its layers (read by ``members.stores`` only
# for a receiver shown to be such a container).
_rows(MODULE, "append", Gives.RECEIVER, stores=0)
_rows(MODULE, "extend", Gives.RECEIVER, stores=0, spread=True)
_rows(MODULE, "insert", Gives.NONE, stores=1)
# `model.eval()` is a module's (an object with an `eval` of its own is an
# instance of a class the analysis sees, not an unknown receiver).
_rows(MODULE, "eval", Gives.RECEIVER, evidence=True, mode=False)
# `trainer.train()` is common: `train` proves nothing by itself.
_rows(MODULE, "train", Gives.RECEIVER, mode=True)
_rows(MODULE, "to cuda cpu half float double bfloat16 type apply share_memory", Gives.RECEIVER)
_rows(MODULE, "requires_grad_", Gives.RECEIVER, freezes=True)
# A module has no `requires_grad` of its own: assigning one sets a plain
# attribute and freezes nothing (its parameters keep requiring grad).
_rows(MODULE, "requires_grad", Gives.BOOL, attribute=True, assigned_instead="requires_grad_")
# The tensors of `state_dict()` are the parameters and buffers themselves
# (detached, same storage): a step changes them; `load_state_dict` copies
# what it is given into the parameters.
_rows(MODULE, "state_dict", Gives.STATE_DICT, aliases=True)
_rows(MODULE, "load_state_dict", Gives.NONE, evidence_keyword="strict", restores=True)
_rows(MODULE, "zero_grad", Gives.NONE, zeroes_grads=True)
_rows(MODULE, "extra_repr __repr__ __str__", Gives.STR)
_rows(MODULE, "training", Gives.BOOL, attribute=True)
_rows(MODULE, "weight bias", Gives.PARAMETER, attribute=True)
# What `nn.utils.weight_norm(module)` registers in place of `weight`: its
# magnitude and direction, parameters (not submodules).
_rows(MODULE, "weight_g weight_v", Gives.PARAMETER, attribute=True)
_rows(MODULE, "dtype device __class__", Gives.META, attribute=True)
# transformers' `generate` (and most models' own) runs under no_grad by
# itself: not shown to run the model with grad on.
_rows(MODULE, "generate", Gives.UNKNOWN, pure=False)
# `DistributedDataParallel(model).module`: the module it wraps (kept as the
# module itself by the wrapper's row).
_rows(MODULE, "module", Gives.RECEIVER, attribute=True)

# -- torch.optim.Optimizer -----------------------------------------------------------

_rows(OPTIMIZER, "step", Gives.NONE, steps=True, pure=False)
_rows(OPTIMIZER, "zero_grad", Gives.NONE, zeroes_grads=True)
_rows(OPTIMIZER, "add_param_group load_state_dict", Gives.NONE)

# -- torch.amp.GradScaler ------------------------------------------------------------

_rows(SCALER, "scale", Gives.ARGUMENT, scales=True)
_rows(SCALER, "unscale_", Gives.NONE, unscales=True)
# `scaler.step(opt)` unscales (when `unscale_` was not called) and steps.
_rows(SCALER, "step", Gives.NONE, steps=True, unscales=True, pure=False)
_rows(SCALER, "update load_state_dict", Gives.NONE)
_rows(SCALER, "get_scale get_growth_factor get_backoff_factor get_growth_interval", Gives.NUMBER)
_rows(SCALER, "is_enabled", Gives.BOOL)

# -- builtins: containers and strings ---------------------------------------------------

# Only lists (and deques) have these: they store whatever the receiver.
_rows(LIST, "append appendleft", Gives.NONE, stores=0, evidence=True)
_rows(LIST, "extend extendleft", Gives.NONE, stores=0, spread=True, evidence=True)
_rows(LIST, "insert", Gives.NONE, stores=1, evidence=True)
_rows(LIST, "put put_nowait", Gives.NONE, stores=0)  # a queue
_rows(LIST, "pop popleft get get_nowait", Gives.ELEMENT)
_rows(LIST, "remove sort reverse", Gives.NONE)
_rows((LIST, DICT, SET), "clear", Gives.NONE, clears=True)
_rows((LIST, TUPLE, DICT, SET), "copy", Gives.COPY)
_rows((LIST, TUPLE), "index count", Gives.NUMBER)
_rows(DICT, "setdefault", Gives.ELEMENT, stores=1, evidence=True)
_rows(DICT, "update", Gives.NONE, stores=0, spread=True)
_rows(DICT, "get pop popitem", Gives.ELEMENT)
_rows(DICT, "items", Gives.ITEMS)
_rows(DICT, "keys", Gives.KEYS)
_rows(DICT, "values", Gives.VALUES)
_rows(SET, "add", Gives.NONE, stores=0)
_rows(SET, "update", Gives.NONE, stores=0, spread=True)
_rows(SET, "discard", Gives.NONE)
# A (values, indices) result of `max(dim)`, `topk`, `sort`.
ROWS[(TUPLE, "values")] = Member(TUPLE, "values", Gives.ELEMENT, attribute=True, item=0)
ROWS[(TUPLE, "indices")] = Member(TUPLE, "indices", Gives.ELEMENT, attribute=True, item=1)
_rows(STR, "join lower upper strip lstrip rstrip replace format capitalize title zfill ljust rjust center", Gives.STR)
_rows(STR, "startswith endswith isdigit isalpha isspace isidentifier", Gives.BOOL)
_rows(STR, "split rsplit splitlines", Gives.STRINGS)
_rows(NUMBER, "is_integer", Gives.BOOL)
_rows(NUMBER, "real imag", Gives.NUMBER, attribute=True)

# -- lookups the API model derives ---------------------------------------------------

# A member only one owner kind has: the kind it proves an unknown receiver is
# (with a keyword only that kind's takes, for members others have too).
EVIDENCE: dict[str, str] = {name: row.owner for (owner, name), row in ROWS.items() if row.evidence}
EVIDENCE_KEYWORDS: dict[tuple[str, str], str] = {(name, row.evidence_keyword): row.owner for (owner, name), row in ROWS.items() if row.evidence_keyword}

# Attributes that, assigned on an object of some owner kind, do nothing of
# what the assignment means there (the interpreter reports assignments of
# these names only).
ASSIGNED_INSTEAD: frozenset[str] = frozenset(name for (owner, name), row in ROWS.items() if row.assigned_instead)

# Attributes whose reads the interpreter reports (what the receiver is there
# decides whether the read gives what it means): those torch fills on a leaf
# only.
LEAF_ONLY: frozenset[str] = frozenset(name for (owner, name), row in ROWS.items() if row.leaf_only)
# ...and those that give a tensor's value without its graph (`.data`):
# whoever reads one took the tensor for one that may carry a graph.
OBSERVED_ATTRIBUTES: frozenset[str] = LEAF_ONLY | frozenset(
    name for (owner, name), row in ROWS.items() if owner == TENSOR and row.attribute and row.gives is Gives.DETACHED
)

# Members whose result does not depend on which kind having them the
# receiver is (`.item()`, `.argmax()`, `.numpy()`; `.shape`, `.ndim` of
# arrays and tensors alike): decided for an unknown receiver too. Of
# attributes, only the numeric ones: `batch.data` of an unknown object is
# any field.
INDEPENDENT: dict[tuple[str, bool], Member] = {
    (name, row.attribute): row
    for (owner, name), row in ROWS.items()
    if owner == TENSOR
    and row.gives in ((Gives.NUMBER, Gives.BOOL, Gives.SHAPE) if row.attribute else (Gives.NUMBER, Gives.BOOL, Gives.STR, Gives.NUMBERS, Gives.SHAPE, Gives.NO_GRAD_TENSOR, Gives.FOREIGN, Gives.DETACHED))
    # (A row kept for what assigning the attribute does, giving what the
    # tensor's gives, leaves reading it independent: `x.requires_grad`.)
    and not any(o != TENSOR and n == name and not (r.assigned_instead and r.gives is row.gives) for (o, n), r in ROWS.items())
}
