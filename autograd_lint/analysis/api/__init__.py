"""The API model: ``member(owner, name)`` is what ``name`` of an object of
kind ``owner`` does (model.py), from the rows of tables.py, the facts of
the saved-tensor ledger, and each owner's policy for members no row names.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Iterable

from autograd_lint.analysis import torch_api as lib
from autograd_lint.analysis.api.model import (
    CONTAINER_OWNERS,
    CUT,
    DICT,
    LIST,
    MODULE,
    NUMBER,
    OPTIMIZER,
    OWNERS,
    SCALER,
    SET,
    STR,
    TENSOR,
    TUPLE,
    Gives,
    Member,
)
from autograd_lint.analysis.api.tables import ASSIGNED_INSTEAD, EVIDENCE, EVIDENCE_KEYWORDS, INDEPENDENT, LEAF_ONLY, OBSERVED_ATTRIBUTES, ROWS


@lru_cache(maxsize=None)
def member(owner: str, name: str, attribute: bool = False) -> Member:
    """``name`` of an object of kind ``owner``, read as an attribute or
    called as a method: its row, else the ledger's facts (tensors), else
    the owner's policy for unknown members."""
    row = ROWS.get((owner, name))
    if row is not None and row.attribute is attribute:
        return row
    if owner == TENSOR:
        return _tensor_member(name, attribute)
    if owner == MODULE:
        # Of a module whose class is not seen: an attribute is a submodule
        # as far as anything shows; a method runs the module when given data.
        return Member(owner, name, Gives.SUBMODULE if attribute else Gives.RUNS, attribute=attribute, pure=False)
    if owner == STR and not attribute:
        return Member(owner, name, Gives.STR)
    return Member(owner, name, Gives.UNKNOWN, attribute=attribute, pure=False)


def inherited_method(owner: str, name: str) -> bool:
    """A row names ``name`` as a method every object of kind ``owner``
    has (``register_buffer``, ``to``, ``eval`` of a module), other than
    calling the object itself."""
    row = ROWS.get((owner, name))
    return row is not None and not row.attribute and row.gives is not Gives.FORWARD


def _tensor_member(name: str, attribute: bool) -> Member:
    if attribute:
        # A field of an attached value of unknown structure (`out.logits`).
        return Member(TENSOR, name, Gives.PART, attribute=True)
    if name.startswith("new_"):
        return Member(TENSOR, name, Gives.NEW_TENSOR)
    if lib.inplace_base(name) is not None:
        # torch's convention: a trailing `_` writes the tensor in place.
        return Member(TENSOR, name, Gives.RECEIVER, writes=True)
    entry = lib.method_entry(name)
    if entry is not None and entry.view:
        return Member(TENSOR, name, Gives.MULTI_VIEW if lib.is_multi_output_view_method(name) else Gives.VIEW, ledger=entry.name)
    # Any other tensor method computes a tensor from the receiver (and its
    # tensor arguments, unless it reads only their shape: `expand_as`).
    return Member(TENSOR, name, Gives.OP, ledger=entry.name if entry is not None else None, like=name.endswith("_as"))


def evidence(name: str, keywords: Iterable[str | None] = ()) -> str | None:
    """The owner kind a call of ``name`` (with these keyword arguments)
    shows its receiver is, when only one kind has such a member
    (``named_parameters`` -> a module; ``load_state_dict(..., strict=...)``)."""
    owner = EVIDENCE.get(name)
    if owner is None and keywords:
        for k in keywords:
            owner = EVIDENCE_KEYWORDS.get((name, k))  # type: ignore[arg-type]
            if owner is not None:
                break
    return owner


def independent(name: str, attribute: bool = False) -> Member | None:
    """A member whose result does not depend on what the receiver turns out
    to be (``.item()`` is a number, ``.argmax()`` an integer tensor, ``.shape``
    a tuple of numbers: arrays and tensors alike)."""
    return INDEPENDENT.get((name, attribute))


@lru_cache(maxsize=None)
def known_pure(name: str) -> bool:
    """``x.<name>(...)`` of a tensor, a container or a string runs no code
    of the user's (it cannot hide a backward), whichever of them ``x`` is."""
    if any(row.pure and not row.attribute for (owner, n), row in ROWS.items() if n == name and owner != MODULE):
        return True
    return lib.method_entry(name) is not None or lib.inplace_base(name) is not None or lib.is_view_method(name)


@lru_cache(maxsize=None)
def graph_from_receiver(name: str) -> bool:
    """``x.<name>(...)``, a tensor method torch has (a row, or the ledger's),
    gives a tensor computed from ``x`` (a reduction, a view, a cast): when
    its arguments carry no graph, what it gives holds one only if ``x``
    does (``loss = per_token.mean()``; ``loss.backward()`` shows
    ``per_token`` attached)."""
    known = (TENSOR, name) in ROWS or lib.method_entry(name) is not None
    return known and member(TENSOR, name).gives in (Gives.OP, Gives.VIEW, Gives.CAST)


def graph_from_first_argument(qual: str) -> bool:
    """``torch.sum(x, ...)``: a torch function the ledger has, computed
    from its arguments; when the others carry no graph, what it gives holds
    one only if its first does."""
    return lib.ledger_entry(qual) is not None and not lib.is_module_class(qual)


def backpropagates(name: str) -> bool:
    """``x.<name>(...)`` runs backward from what it is given, whatever ``x``
    is: a tensor's ``backward()``, ``accelerator.backward(loss)``,
    Lightning's ``manual_backward(loss)``."""
    return name in lib.BACKWARD_METHODS


__all__ = [
    "ASSIGNED_INSTEAD", "CONTAINER_OWNERS", "CUT", "DICT", "LEAF_ONLY", "LIST", "MODULE", "NUMBER", "OBSERVED_ATTRIBUTES", "OPTIMIZER", "OWNERS", "SCALER", "SET", "STR", "TENSOR", "TUPLE",
    "Gives", "Member", "backpropagates", "evidence", "graph_from_first_argument", "graph_from_receiver", "independent", "known_pure", "member",
]
