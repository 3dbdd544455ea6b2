"""The API model (analysis/api): what a member of an object of each kind
does, from its rows, the generated ledger's facts and each kind's policy for
members no row names; and the forms of calls whose result depends on their
arguments (`x.max()` / `x.max(1)`)."""

from __future__ import annotations

import pytest

from autograd_lint.analysis import api, members
from autograd_lint.analysis import torch_api as lib
from autograd_lint.analysis.api import Gives
from autograd_lint.analysis.api.tables import ROWS
from autograd_lint.analysis.outcome import CallArgs, SavesArg, Site
from autograd_lint.analysis.callee import resolve
from autograd_lint.analysis.values import (
    NUMBER_V, TENSOR, TENSOR_V, Container, GradMode, Graph, ImportRoot, Module, OptimizerKind, Saved, ScalerKind, Sym,
)

ON = Site(None, 0, GradMode.ON)
ATTACHED = frozenset({Graph(None, 0, "call"), TENSOR})


@pytest.mark.parametrize(
    ("owner", "name", "gives"),
    [
        (api.MODULE, "to", Gives.RECEIVER),
        (api.MODULE, "cuda", Gives.RECEIVER),
        (api.MODULE, "eval", Gives.RECEIVER),
        (api.MODULE, "train", Gives.RECEIVER),
        (api.MODULE, "requires_grad_", Gives.RECEIVER),
        (api.MODULE, "parameters", Gives.PARAMETERS),
        (api.TENSOR, "argmax", Gives.NO_GRAD_TENSOR),
        (api.TENSOR, "gt", Gives.NO_GRAD_TENSOR),
        (api.TENSOR, "item", Gives.NUMBER),
        (api.TENSOR, "size", Gives.SHAPE),
        (api.TENSOR, "detach", Gives.DETACHED),
        (api.TENSOR, "topk", Gives.VALUES_INDICES),
        (api.TENSOR, "max", Gives.DIM_PAIR),
        (api.STR, "split", Gives.STRINGS),
    ],
)
def test_rows(owner: str, name: str, gives: Gives) -> None:
    assert api.member(owner, name).gives is gives


def test_container_rows_say_what_they_keep() -> None:
    assert api.member(api.LIST, "append").stores == 0
    assert api.member(api.LIST, "insert").stores == 1
    assert api.member(api.DICT, "update").spread
    assert api.member(api.LIST, "clear").clears
    assert api.member(api.OPTIMIZER, "step").steps
    assert api.backpropagates("backward") and api.backpropagates("manual_backward")


def test_attributes_and_methods_are_different_rows() -> None:
    # `x.shape` is an attribute; `x.shape()` is not a tensor method row.
    assert api.member(api.TENSOR, "shape", attribute=True).gives is Gives.SHAPE
    assert api.member(api.TENSOR, "shape").gives is not Gives.SHAPE
    assert api.member(api.MODULE, "training", attribute=True).gives is Gives.BOOL


def test_ledger_facts_are_rows_of_the_tensor_kind() -> None:
    """What no hand-written row names comes from the generated ledger:
    ops, views, several views, in-place variants."""
    sig = api.member(api.TENSOR, "sigmoid")
    assert sig.gives is Gives.OP and sig.ledger == "Tensor.sigmoid"
    assert api.member(api.TENSOR, "transpose").gives is Gives.VIEW
    assert api.member(api.TENSOR, "chunk").gives is Gives.MULTI_VIEW
    assert api.member(api.TENSOR, "mul_").writes
    assert api.member(api.TENSOR, "masked_fill_").writes


def test_every_ledger_reference_exists() -> None:
    for (owner, name), row in ROWS.items():
        if row.ledger is not None:
            assert lib.ledger_entry(row.ledger) is not None, (owner, name, row.ledger)


def test_no_member_is_both_a_row_and_a_ledger_guess() -> None:
    """A hand-written tensor row for an op the ledger knows would say the
    same fact twice; rows exist only where they say more (what the result
    is: a number, a pair, a cast)."""
    for (owner, name), row in ROWS.items():
        if owner == api.TENSOR and not row.attribute and lib.method_entry(name) is not None:
            assert row.gives is not Gives.OP, name


@pytest.mark.parametrize(
    ("owner", "name", "attribute", "gives"),
    [
        # A module of an unseen class: an attribute is a submodule as far as
        # anything shows; a method runs the module when given data.
        (api.MODULE, "encoder", True, Gives.SUBMODULE),
        (api.MODULE, "predict", False, Gives.RUNS),
        # A field of an attached value of unknown structure (`out.logits`).
        (api.TENSOR, "logits", True, Gives.PART),
        # A tensor method nobody listed computes a tensor from the receiver.
        (api.TENSOR, "some_new_op", False, Gives.OP),
        (api.TENSOR, "new_zeros", False, Gives.NEW_TENSOR),
        (api.STR, "casefold", False, Gives.STR),
        (api.LIST, "frobnicate", False, Gives.UNKNOWN),
        (api.OPTIMIZER, "frobnicate", False, Gives.UNKNOWN),
    ],
)
def test_unknown_member_policy(owner: str, name: str, attribute: bool, gives: Gives) -> None:
    assert api.member(owner, name, attribute=attribute).gives is gives


def test_unknown_tensor_method_with_trailing_underscore_writes() -> None:
    row = api.member(api.TENSOR, "frobnicate_")
    assert row.writes and row.gives is Gives.RECEIVER


def test_evidence() -> None:
    assert api.evidence("named_parameters") == api.MODULE
    assert api.evidence("eval") == api.MODULE
    assert api.evidence("append") == api.LIST
    # `load_state_dict` alone is an optimizer's too; with `strict=` only a module's.
    assert api.evidence("load_state_dict") is None
    assert api.evidence("load_state_dict", ["strict"]) == api.MODULE
    assert api.evidence("forward") is None


def test_independent_members() -> None:
    assert api.independent("item") is not None
    assert api.independent("argmax") is not None
    assert api.independent("shape", attribute=True) is not None
    assert api.independent("ndim", attribute=True) is not None
    # `batch.data` of an unknown object is any field; `x.to()` depends on x.
    assert api.independent("data", attribute=True) is None
    assert api.independent("to") is None
    # A name a module has too is not independent.
    assert api.independent("eval") is None


def test_shape_of_an_unknown_value_is_numbers() -> None:
    v = members.independent_attribute("shape")
    assert v is not None and all(type(f) is Container for f in v)
    assert members.independent_attribute("data") is None


def _call(name: str, *args, **kwargs) -> object:
    a = CallArgs(tuple(args), tuple(kwargs.items()))
    return members.tensor_method(ATTACHED, name, a, ON)


def _pair(value) -> bool:
    return len(value) == 1 and type(next(iter(value))) is Container


def test_values_indices_by_form() -> None:
    assert not _pair(_call("max").value)  # one tensor
    assert _pair(_call("max", NUMBER_V).value)  # (values, indices) along a dim
    assert _pair(_call("max", dim=NUMBER_V).value)
    assert not _pair(_call("max", ATTACHED).value)  # elementwise with another tensor
    assert _pair(_call("topk", NUMBER_V).value)
    assert _pair(_call("sort").value)
    pair = next(iter(_call("topk", NUMBER_V).value))
    assert pair.items[1][1] == TENSOR_V  # indices: an integer tensor without graph


def _saves_receiver(outcome) -> bool:
    return any(type(e) is SavesArg and e.index == -1 for e in outcome.effects)


def test_ledger_overloads_decide_what_is_saved() -> None:
    """`x.max()` saves `x` and its result; `x.max(dim)` saves only its
    indices (the ledger's `Tensor.max[dim]` entry, measured on torch)."""
    assert lib.ledger_entry("Tensor.max[dim]") is not None
    whole = _call("max")
    assert _saves_receiver(whole)
    assert any(type(f) is Saved and f.result for f in whole.value)
    along = _call("max", NUMBER_V)
    assert not _saves_receiver(along)
    assert not any(type(f) is Saved for f in along.value)
    # amax keeps what it saves whatever the form.
    assert _saves_receiver(_call("amax", NUMBER_V))


# -- the resolved callee (analysis/callee.py) ------------------------------------------

OPT = frozenset({OptimizerKind()})
SCALER_V = frozenset({ScalerKind()})
UNSEEN = frozenset({Sym(ImportRoot("train.py", "trainers", 0, "Trainer"))})
MODULE_V = frozenset({Module(True)})


def test_a_callee_has_the_rows_of_the_kinds_its_receiver_is_shown_to_be() -> None:
    rc = resolve("step", OPT | ATTACHED, None)
    assert [r.owner for r in rc.rows] == sorted([api.OPTIMIZER, api.TENSOR])
    assert rc.row(api.OPTIMIZER) is api.member(api.OPTIMIZER, "step")
    assert rc.row(api.SCALER) is None
    assert not rc.open
    # A symbol of code the analysis does not see has no kind: its own code decides.
    assert resolve("step", UNSEEN, None).open
    # A call of a value has no member and no rows.
    assert resolve(None, None, "torch.autograd.grad").rows == ()


@pytest.mark.parametrize(
    ("recv", "steps", "may_step"),
    [
        (OPT, True, True),
        (SCALER_V, True, True),  # `scaler.step(opt)` steps the optimizer it is given
        (UNSEEN, False, True),  # `trainer.step()`: may be an optimizer's
        (MODULE_V, False, False),  # a module's `step` is a method of its own class, run as one
        (ATTACHED, False, False),
    ],
)
def test_a_step_is_decided_by_what_the_receiver_is(recv: frozenset, steps: bool, may_step: bool) -> None:
    rc = resolve("step", recv, None)
    assert (rc.steps, rc.may_step) == (steps, may_step)


def test_what_the_callee_says_a_call_does() -> None:
    assert resolve("eval", MODULE_V, None).mode is False
    assert resolve("train", UNSEEN, None).mode is True
    assert resolve("to", MODULE_V, None).mode is None
    assert resolve("backward", ATTACHED, None).backward
    assert resolve("manual_backward", UNSEEN, None).backward
    assert resolve("grad", frozenset(), "torch.autograd.grad").autograd
    assert resolve(None, None, "torch.autograd.grad").gradient_of
    assert not resolve(None, None, "torch.autograd.backward").gradient_of
    assert resolve("zero_grad", UNSEEN, None).zeroes_grad
    assert resolve("zero_", ATTACHED, None).zeroing and not resolve("zero_", ATTACHED, None).zeroing_given
    assert resolve("fill_", ATTACHED, None).zeroing_given
    assert not resolve("add_", ATTACHED, None).zeroing
    assert resolve("forward", UNSEEN, None).forward and resolve("__call__", MODULE_V, None).forward
    assert not resolve("predict", MODULE_V, None).forward
    assert resolve("requires_grad_", ATTACHED, None).makes_leaf
    assert resolve("load_state_dict", MODULE_V, None).restores
    assert not resolve("load_state_dict", OPT, None).restores  # an optimizer's own state
    assert resolve("named_parameters", UNSEEN, None).parameter_list
    assert resolve("to", ATTACHED, None).tensor is api.member(api.TENSOR, "to")
    assert resolve(None, None, None).tensor is None


def test_casts_say_what_they_cast_to() -> None:
    """A fix that folds a cast into the factory that made the tensor
    (AGL502) reads what the cast asks for from its row."""
    assert api.member(api.TENSOR, "double").dtype == "float64"
    assert api.member(api.TENSOR, "half").dtype == "float16"
    assert api.member(api.TENSOR, "cuda").device == "cuda"
    assert api.member(api.TENSOR, "to").moves_by_arguments
    row = api.member(api.TENSOR, "type")  # a copy, to what its argument names as a class
    assert row.copies and row.dtype is None and row.device is None and not row.moves_by_arguments
