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
    library function called, qualified (``torch.autograd.grad``)."""

    name: str | None
    rows: tuple[Member, ...] = ()
    open: bool = False
    qual: str | None = None

    def row(self, owner: str) -> Member | None:
        """The row of the member for receivers of kind ``owner``, when the
        receiver is shown to be one."""
        for r in self.rows:
            if r.owner == owner:
                return r
        return None

    @property
    def tensor(self) -> Member | None:
        """What the member does as a tensor's (``.detach()``, ``.item()``,
        ``.to(device)``), whatever the receiver turns out to be; None for a
        call of a value."""
        return api.member(api.TENSOR, self.name) if self.name is not None else None

    @property
    def forward(self) -> bool:
        """``m.forward(x)`` / ``m.__call__(x)``: runs the module itself."""
        return self.name is not None and api.member(api.MODULE, self.name).gives is Gives.FORWARD

    @property
    def backward(self) -> bool:
        """``x.backward()``, ``accelerator.backward(loss)``,
        ``self.manual_backward(loss)``: backpropagates, whatever ``x`` is."""
        return self.name is not None and api.backpropagates(self.name)

    @property
    def autograd(self) -> bool:
        """``torch.autograd.backward(...)`` or ``torch.autograd.grad(...)``."""
        return self.qual in lib.BACKWARD_FUNCTIONS

    @property
    def gradient_of(self) -> bool:
        """``torch.autograd.grad(...)``: gives gradients, fills no ``.grad``."""
        return self.qual == lib.AUTOGRAD_GRAD

    @property
    def steps(self) -> bool:
        """Steps an optimizer: an optimizer's ``step``, or a GradScaler's,
        which steps the optimizer it is given."""
        return any(r.steps for r in self.rows if r.owner in (api.OPTIMIZER, api.SCALER))

    @property
    def may_step(self) -> bool:
        """Steps an optimizer, or may: the member is an optimizer's step and
        the receiver is not shown to be something whose member of that name
        is not one (``trainer.step()``, ``opt.step()`` of a parameter)."""
        return self.steps or (self.open and self.name is not None and _steps_somewhere(self.name))

    @property
    def mode(self) -> bool | None:
        """Sets a module's mode when it is one: True training (``train()``,
        unless given False), False evaluation (``eval()``); None otherwise."""
        return api.member(api.MODULE, self.name).mode if self.name is not None else None

    @property
    def zeroes_grad(self) -> bool:
        """``zero_grad(...)``: of an optimizer or a module, or of an object
        that wraps one."""
        return self.name is not None and api.member(api.OPTIMIZER, self.name).zeroes_grads

    @property
    def zeroing(self) -> bool:
        """As a tensor's, zeroes it in place: ``zero_()``; ``fill_(0)`` and
        ``mul_(0)`` (``zeroing_given`` says when)."""
        t = self.tensor
        return t is not None and (t.zeroes or t.zeroes_given_zero)

    @property
    def zeroing_given(self) -> bool:
        """Zeroes only when given 0 (``fill_``, ``mul_``)."""
        t = self.tensor
        return t is not None and t.zeroes_given_zero

    @property
    def makes_leaf(self) -> bool:
        """``requires_grad_(...)``: the tensor becomes a leaf that requires
        grad, or (given False) a module's parameters stop requiring it."""
        t = self.tensor
        return t is not None and t.gives is Gives.LEAF

    @property
    def pure(self) -> bool:
        """Runs no code of the user's (it cannot hide a backward), whether
        the receiver is a tensor, a container or a string (``x.tolist()``)."""
        return self.name is not None and api.known_pure(self.name)

    @property
    def module_own(self) -> bool:
        """A member every module has (``to``, ``eval``, ``register_buffer``),
        other than calling it: not code of the module's class."""
        return self.name is not None and api.inherited_method(api.MODULE, self.name)

    @property
    def restores(self) -> bool:
        """Loads a state dict into a module: the module row says so, and
        the receiver is not an optimizer or a scaler (whose
        ``load_state_dict`` takes their own state)."""
        return (
            self.name is not None and api.member(api.MODULE, self.name).restores
            and self.row(api.OPTIMIZER) is None and self.row(api.SCALER) is None
        )

    @property
    def norm(self) -> bool:
        """As a tensor's, takes a norm of it (``p.grad.norm()``)."""
        return self.name in lib.NORM_METHODS

    @property
    def parameter_list(self) -> bool:
        """A module's ``parameters()``/``named_parameters()``."""
        return self.name is not None and api.member(api.MODULE, self.name).gives in (Gives.PARAMETERS, Gives.NAMED_PARAMETERS)


NO_CALLEE = Callee(None)


@lru_cache(maxsize=None)
def _steps_somewhere(name: str) -> bool:
    return any(api.member(owner, name).steps for owner in api.OWNERS)


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
        return Callee(name, (), recv is None and name is not None, qual)
    owners, open_ = _owners(recv)
    rows = tuple(api.member(o, name) for o in sorted(owners))
    return Callee(name, rows, open_, qual)
