"""A call resolved once: what ``recv.name(...)`` or ``f(...)`` is, for the
rule families to ask (mypy's ``checkmember`` result, kept with the event).

The interpreter resolves each call into a ``Callee`` when it reports it:
the API model's rows for the kinds the receiver is shown to be (a tensor,
a module of a class the analysis does not see, an optimizer, a scaler, a
container, a string, a number), whether some of what the receiver is has
no such kind here (a symbol of unseen code, an instance of a project class,
a NumPy array: the member is that object's own), and the library function
called, by qualified name. An observer asks the callee what the call does
(``steps``, ``backpropagates``, ``mode``); none compares the member's name.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from autograd_lint.analysis import api
from autograd_lint.analysis import torch_api as lib
from autograd_lint.analysis.api import Gives, Member
from autograd_lint.analysis.values import (
    TENSOR_FACTS,
    Container,
    Module,
    MultiView,
    OptimizerKind,
    Plain,
    ScalerKind,
    Value,
)


@dataclass(frozen=True, slots=True)
class Callee:
    """``name``: the member called (None for a call of a value: ``f(x)``,
    ``model(x)``). ``rows``: the API rows of ``name`` for the kinds the
    receiver is shown to be, in owner order. ``open``: some of what the
    receiver is has no kind in the API model (its own code, or code the
    analysis does not see, decides what the member does). ``qual``: the
    library function called, qualified (``torch.autograd.grad``).

    The rest is what the call does, computed once for each distinct
    callee (``_callee``), so asking costs an attribute read:

    - ``tensor``: what the member does as a tensor's (``.detach()``,
      ``.item()``, ``.to(device)``), whatever the receiver turns out to be.
    - ``forward``: ``m.forward(x)`` / ``m.__call__(x)`` runs the module itself.
    - ``backward``: ``x.backward()``, ``accelerator.backward(loss)``,
      ``self.manual_backward(loss)``: backpropagates, whatever ``x`` is.
    - ``autograd``: ``torch.autograd.backward(...)`` or ``torch.autograd.grad(...)``;
      ``gradient_of``: the latter, which gives gradients and fills no ``.grad``.
    - ``steps``: steps an optimizer: an optimizer's ``step``, or a
      GradScaler's, which steps the optimizer it is given. ``may_step``: or
      may: the member is an optimizer's step and the receiver is not shown
      to be something whose member of that name is not one
      (``trainer.step()``, ``opt.step()`` of a parameter).
    - ``mode``: sets a module's mode when it is one: True training
      (``train()``, unless given False), False evaluation (``eval()``).
    - ``zeroes_grad``: ``zero_grad(...)`` of an optimizer or a module, or of
      an object that wraps one. ``zeroing``: as a tensor's, zeroes it in
      place (``zero_()``); ``zeroing_given``: only when given 0 (``fill_``,
      ``mul_``).
    - ``makes_leaf``: ``requires_grad_(...)``: the tensor becomes a leaf that
      requires grad, or (given False) a module's parameters stop requiring it.
    - ``pure``: runs no code of the user's (it cannot hide a backward),
      whether the receiver is a tensor, a container or a string.
    - ``module_own``: a member every module has (``to``, ``eval``,
      ``register_buffer``), other than calling it.
    - ``restores``: loads a state dict into a module; the receiver is not an
      optimizer or a scaler (whose ``load_state_dict`` takes their own state).
    - ``norm``: as a tensor's, takes a norm of it (``p.grad.norm()``).
    - ``parameter_list``: a module's ``parameters()``/``named_parameters()``.
    - ``refuses_graph``: raises on a tensor that requires grad: the receiver
      (``x.numpy()``, unless given ``refuses_graph_unless`` true:
      ``numpy(force=True)``), or, for a library function, its first
      argument (``np.asarray(x)``: ``converts_argument``).
    """

    name: str | None
    rows: tuple[Member, ...] = ()
    open: bool = False
    qual: str | None = None
    tensor: Member | None = None
    forward: bool = False
    backward: bool = False
    autograd: bool = False
    gradient_of: bool = False
    steps: bool = False
    may_step: bool = False
    mode: bool | None = None
    zeroes_grad: bool = False
    zeroing: bool = False
    zeroing_given: bool = False
    makes_leaf: bool = False
    pure: bool = False
    module_own: bool = False
    restores: bool = False
    norm: bool = False
    parameter_list: bool = False
    refuses_graph: bool = False
    refuses_graph_unless: str | None = None
    converts_argument: bool = False

    def row(self, owner: str) -> Member | None:
        """The row of the member for receivers of kind ``owner``, when the
        receiver is shown to be one."""
        for r in self.rows:
            if r.owner == owner:
                return r
        return None


@lru_cache(maxsize=16384)
def _callee(name: str | None, owners: tuple[str, ...], open_: bool, qual: str | None) -> Callee:
    rows = tuple(api.member(o, name) for o in owners) if name is not None else ()
    autograd = qual in lib.BACKWARD_FUNCTIONS
    gradient_of = qual == lib.AUTOGRAD_GRAD
    if name is None:
        return Callee(None, rows, open_, qual, autograd=autograd, gradient_of=gradient_of, refuses_graph=qual in lib.REFUSE_GRAPH_FUNCTIONS, converts_argument=True)
    tensor = api.member(api.TENSOR, name)
    module = api.member(api.MODULE, name)
    steps = any(r.steps for r in rows if r.owner in (api.OPTIMIZER, api.SCALER))
    owner_kinds = {r.owner for r in rows}
    return Callee(
        name, rows, open_, qual,
        tensor=tensor,
        forward=module.gives is Gives.FORWARD,
        backward=api.backpropagates(name),
        autograd=autograd,
        gradient_of=gradient_of,
        steps=steps,
        may_step=steps or (open_ and any(api.member(o, name).steps for o in api.OWNERS)),
        mode=module.mode,
        zeroes_grad=api.member(api.OPTIMIZER, name).zeroes_grads,
        zeroing=tensor.zeroes or tensor.zeroes_given_zero,
        zeroing_given=tensor.zeroes_given_zero,
        makes_leaf=tensor.gives is Gives.LEAF,
        pure=api.known_pure(name),
        module_own=api.inherited_method(api.MODULE, name),
        restores=module.restores and api.OPTIMIZER not in owner_kinds and api.SCALER not in owner_kinds,
        norm=name in lib.NORM_METHODS,
        parameter_list=module.gives in (Gives.PARAMETERS, Gives.NAMED_PARAMETERS),
        refuses_graph=tensor.refuses_graph or qual in lib.REFUSE_GRAPH_FUNCTIONS,
        refuses_graph_unless=None if qual in lib.REFUSE_GRAPH_FUNCTIONS else tensor.refuses_graph_unless,
        converts_argument=qual in lib.REFUSE_GRAPH_FUNCTIONS,
    )


NO_CALLEE = Callee(None)


def _owners(recv: Value) -> tuple[frozenset[str], bool]:
    owners: set[str] = set()
    open_ = False
    for f in recv:
        t = type(f)
        if t in TENSOR_FACTS or t is MultiView:
            owners.add(api.TENSOR)
        elif t is Module:
            owners.add(api.MODULE)
        elif t is OptimizerKind:
            owners.add(api.OPTIMIZER)
        elif t is ScalerKind:
            owners.add(api.SCALER)
        elif t is Container:
            owners.add(api.CONTAINER_OWNERS.get(f.kind, api.LIST))  # type: ignore[attr-defined]
        elif t is Plain:
            owners.add(api.STR if f.kind == "str" else api.NUMBER)  # type: ignore[attr-defined]
        else:
            open_ = True
    return frozenset(owners), open_ or not recv


def resolve(name: str | None, recv: Value | None, qual: str | None) -> Callee:
    """The callee of ``recv.name(...)`` (``name`` None: of a call of a
    value, whose library function is ``qual`` when it is one)."""
    if name is None or recv is None:
        return _callee(name, (), recv is None and name is not None, qual)
    owners, open_ = _owners(recv)
    return _callee(name, tuple(sorted(owners)), open_, qual)
