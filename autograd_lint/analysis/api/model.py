"""The API model: what a member of an object does, keyed by what the object is.

mypy's ``checkmember`` decides ``x.name`` from the type of ``x``; Pysa and
TorchFix keep library behaviour in tables. This is the same for the
analysis: a row per (owner kind, member) says what reading the attribute or
calling the method gives (``torch.nn.Module.to`` -> the receiver,
``torch.Tensor.argmax`` -> an integer tensor without graph), what it does
to its receiver and arguments (``builtins.list.append`` stores its
argument, ``torch.Tensor.backward`` backpropagates the receiver) and
whether calling it proves what the receiver is (only a module has
``named_parameters``). The rows are data (tables.py); the facts of the
saved-tensor ledger (views, in-place variants, differentiable ops) are
rows of the same model, merged in when a member is looked up; each owner
kind states what an unknown member does (``unknown``).

The interpreter asks ``member(owner, name)`` (api/__init__.py); nothing
else in the analysis decides a call by the member's bare name.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


class Gives(Enum):
    """What a member gives, in terms of the value kinds of values.py."""

    RECEIVER = "receiver"  # the receiver itself (a module moved to a device, a tensor cast)
    NUMBER = "number"  # a Python number
    BOOL = "bool"
    STR = "str"
    NONE = "none"
    META = "meta"  # a dtype, a device, a grad_fn: never a tensor
    SHAPE = "shape"  # a torch.Size (a tuple of numbers); a number when given a dim
    NUMBERS = "numbers"  # a list of Python numbers (``tolist``)
    NO_GRAD_TENSOR = "no_grad_tensor"  # an integer or boolean tensor: no graph
    NEW_TENSOR = "new_tensor"  # a new tensor without graph (``new_zeros``)
    GRADIENT = "gradient"  # the gradient buffer (``p.grad``): a tensor without graph
    DETACHED = "detached"  # the same storage without graph (``detach``; ``data``)
    VIEW = "view"  # the same storage, still in the graph (``view``, ``T``)
    CAST = "cast"  # the receiver, maybe converted: same graph, same saved state (``to``, ``float``)
    OP = "op"  # a new tensor computed from the receiver and the arguments
    VALUES_INDICES = "values_indices"  # (values, indices): ``topk``, ``sort``
    # (values, indices) given a dim, else one tensor: ``max(1)`` / ``max()``
    # (and ``max(other)``, elementwise).
    DIM_PAIR = "dim_pair"
    MULTI_VIEW = "multi_view"  # several views: ``split``, ``chunk``, ``unbind``
    FOREIGN = "foreign"  # a NumPy array
    LEAF = "leaf"  # the receiver made a leaf that requires grad (``requires_grad_()``)
    FORWARD = "forward"  # runs the module on the arguments
    # A method of a module whose class is not seen (``model.predict(x)``):
    # it runs the module when it is given data; without data (``num_params()``)
    # nothing is known.
    RUNS = "runs"
    PART = "part"  # a field of the value (``outputs.logits``): attached when the value is
    SUBMODULE = "submodule"  # one of the module's submodules
    PARAMETER = "parameter"  # one of the module's parameters (a leaf that requires grad)
    PARAMETERS = "parameters"
    NAMED_PARAMETERS = "named_parameters"
    BUFFERS = "buffers"
    NAMED_BUFFERS = "named_buffers"
    SUBMODULES = "submodules"
    NAMED_SUBMODULES = "named_submodules"
    STATE_DICT = "state_dict"
    ELEMENT = "element"  # one of the container's elements (``d.get(k)``, ``xs.pop()``); ``item``: at that position
    KEYS = "keys"
    VALUES = "values"
    ITEMS = "items"
    COPY = "copy"  # a shallow copy: the same elements
    STRINGS = "strings"  # a list of strings (``str.split``)
    UNKNOWN = "unknown"  # nothing known
    # The first argument, multiplied by a number: the same graph
    # (``scaler.scale(loss)``).
    ARGUMENT = "argument"


# What a member gives that carries nothing of its receiver onward: numbers,
# strings, metadata, tensors without graph. A value read through one of
# these cannot reach autograd (flows stop there).
CUT = frozenset(
    {
        Gives.NUMBER, Gives.BOOL, Gives.STR, Gives.NONE, Gives.META, Gives.SHAPE, Gives.NUMBERS, Gives.NO_GRAD_TENSOR,
        Gives.NEW_TENSOR, Gives.GRADIENT, Gives.DETACHED, Gives.FOREIGN, Gives.STRINGS,
    }
)


@dataclass(frozen=True, slots=True)
class Member:
    """One row: ``owner.name`` (a method, or an attribute when ``attribute``).

    ``stores``: the positional argument the receiver keeps (a container's
    ``append``); ``spread``: it keeps the argument's elements (``extend``,
    ``update``). ``writes``: writes the receiver's data in place;
    ``accumulates``: adds the argument into the receiver (``total.add_(x)``).
    ``clears``: empties the receiver. ``detaches``: cuts the receiver
    itself off its graph, in place (``detach_``). ``reads_out``: gives the
    receiver's values cut off its graph (``item``, ``tolist``, ``detach``,
    ``.data``, ``__float__`` of ``float(t)``): what is computed from it
    gives the receiver no gradient. ``steps``: an optimizer step.
    ``scales``: a GradScaler's ``scale``: what is backpropagated from its
    result leaves the gradients scaled; ``unscales``: divides them back.
    ``freezes``: with a false argument, the receiver's parameters stop
    requiring grad. ``aliases``: what it gives holds the receiver's live
    parameter tensors, not copies (``state_dict``); ``restores``: copies the
    tensors of its first argument into the receiver's parameters
    (``load_state_dict``). ``copies``: a move or cast that gives a new
    tensor when it changes anything (``to``, ``cuda``, ``double``): a leaf's
    copy is not a leaf. ``leaf_only``: an attribute autograd fills on leaves
    only (``grad``). ``walks_graph``: reading it reaches into the autograd
    graph the tensor carries (``grad_fn``): the code uses that graph, as a
    backward does. ``evidence``: only an object of this owner kind has
    this member, so calling it shows what an unknown receiver is. ``pure``:
    runs no code of the user's (it cannot hide a backward). (What
    backpropagates, whatever its receiver, is ``api.backpropagates``'s.)"""

    owner: str
    name: str
    gives: Gives
    attribute: bool = False
    stores: int | None = None
    spread: bool = False
    writes: bool = False
    accumulates: bool = False
    clears: bool = False
    detaches: bool = False
    reads_out: bool = False
    steps: bool = False
    scales: bool = False
    unscales: bool = False
    freezes: bool = False
    aliases: bool = False
    restores: bool = False
    copies: bool = False
    leaf_only: bool = False
    walks_graph: bool = False
    evidence: bool = False
    pure: bool = True
    # The ledger's facts, for tensor ops: what it saves is read from the
    # entry of this qualified name (``Tensor.mul``).
    ledger: str | None = None
    # The arguments count for their shape or type only (``expand_as``).
    like: bool = False
    # Called with this keyword, only this owner kind has it
    # (`load_state_dict(sd, strict=False)`: an optimizer's takes no `strict`).
    evidence_keyword: str | None = None
    item: int | None = None  # ELEMENT of a fixed position (``.values`` of a (values, indices) pair)
    # Calling it shows the receiver holds exactly one element, since it
    # raises on any other (``loss.item()``) — unless this argument is given,
    # by position 0 or by keyword (``loss.backward(gradient)``).
    one_element: bool = False
    one_element_unless: str | None = None
    # Raises on a tensor that requires grad, unless this keyword is given
    # true (``numpy()``: "Can't call numpy() on Tensor that requires grad",
    # unless ``force=True``): code that calls it on a value shows that value
    # carries no graph wherever the code works.
    refuses_graph: bool = False
    refuses_graph_unless: str | None = None
    # Assigning this attribute on an object of this kind only sets a plain
    # Python attribute; this method is what does what the assignment means
    # (``module.requires_grad = False`` -> ``module.requires_grad_(False)``).
    assigned_instead: str | None = None
    # Called with (name, value), it assigns ``receiver.<name> = value``
    # (``module.register_buffer("avg", t)`` is ``module.avg = t``).
    sets_attribute: bool = False
    # What it sets is a buffer: a tensor that is never a trainable parameter
    # (``register_buffer``), whatever the value it is given.
    sets_buffer: bool = False
    # A move or cast to what it names (``double()``: dtype ``float64``;
    # ``cuda()``: device ``"cuda"``), or to what its arguments say
    # (``to(device, dtype)``: ``moves_by_arguments``).
    dtype: str | None = None
    device: str | None = None
    moves_by_arguments: bool = False
    # Puts a module (and its submodules) in training mode (True: ``train()``,
    # unless given False) or evaluation mode (False: ``eval()``).
    mode: bool | None = None
    # Zeroes the gradients of the parameters it holds (``zero_grad``).
    zeroes_grads: bool = False
    # Zeroes the tensor in place (``zero_``); ``zeroes_given_zero``: when
    # its argument is 0 (``fill_(0)``, ``mul_(0)``).
    zeroes: bool = False
    zeroes_given_zero: bool = False

    @property
    def cuts(self) -> bool:
        """What it gives carries nothing of the receiver (see ``CUT``)."""
        return self.gives in CUT


# Owner kinds: the qualified name of the class whose members a row describes.
TENSOR = "torch.Tensor"
MODULE = "torch.nn.Module"
OPTIMIZER = "torch.optim.Optimizer"
SCALER = "torch.amp.GradScaler"
LIST = "builtins.list"
TUPLE = "builtins.tuple"
DICT = "builtins.dict"
SET = "builtins.set"
STR = "builtins.str"
NUMBER = "builtins.float"
OWNERS = (TENSOR, MODULE, OPTIMIZER, SCALER, LIST, TUPLE, DICT, SET, STR, NUMBER)
CONTAINER_OWNERS = {"list": LIST, "tuple": TUPLE, "dict": DICT, "set": SET}
