"""The saved-tensor ledger: which tensors each PyTorch op keeps for backward.

``saved_tensors.json`` in the rule catalogue is generated from the installed
torch by ``python -m autograd_lint.ledger``; this module only reads it (json and
the standard library, never torch), for the AGL2xx rules about in-place ops on
tensors autograd saved.

Keys are qualified names: ``torch.sigmoid``, ``Tensor.sigmoid`` (the method),
``torch.nn.functional.softmax``, ``torch.linalg.det``, ``torch.nn.Linear``,
``operator.mul`` (``a * b``), ``operator.getitem`` (``a[1:]``), ``Tensor.T``.
Each entry's ``saves`` lists the inputs (ATen names such as ``self``/``other``
for ``torch.*``/``Tensor.*``/``operator.*``, Python parameter names such as
``input``/``weight`` for ``torch.nn.functional.*``, ``torch.linalg.*`` and
modules) and ``"result"`` when the op's output is saved.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import lru_cache
from types import MappingProxyType
from typing import Any, Mapping

from autograd_lint.files import ledger_path

RESULT = "result"


@dataclass(frozen=True)
class Entry:
    """What one op saves for backward, measured on the installed torch."""

    name: str
    saves: frozenset[str]
    view: bool
    inplace: str | None
    grad_fn: tuple[str, ...] = ()
    call: str = ""
    # Run with `inplace=True`, it saves its output (its input, written).
    inplace_saves_result: bool = False

    @property
    def saves_result(self) -> bool:
        return RESULT in self.saves

    @property
    def saved_inputs(self) -> frozenset[str]:
        return self.saves - {RESULT}

    @property
    def has_inplace(self) -> bool:
        return self.inplace is not None

    @property
    def positional(self) -> tuple[str, ...]:
        """The names of the op's positional tensor arguments, in call order
        (a method's receiver is ``self``), read from the probe's ``call``:
        ``torch.matmul(self, other)`` -> (self, other); ``self.mul(other)``
        -> (self, other); ``Linear(4, 3)(input)`` -> (input,)."""
        return _positional(self.call)

    @classmethod
    def from_json(cls, name: str, data: Mapping[str, Any]) -> "Entry":
        inplace = data.get("inplace")
        return cls(
            name=name,
            saves=frozenset(data.get("saves", ())),
            view=bool(data.get("view", False)),
            inplace=inplace if isinstance(inplace, str) and inplace else ("inplace" if inplace is True else None),
            grad_fn=tuple(data.get("grad_fn", ())),
            call=str(data.get("call", "")),
            inplace_saves_result=bool(data.get("inplace_saves_result", False)),
        )


@dataclass(frozen=True)
class Ledger:
    torch_version: str
    entries: Mapping[str, Entry] = field(default_factory=dict)

    def __contains__(self, qualname: object) -> bool:
        return qualname in self.entries

    def __len__(self) -> int:
        return len(self.entries)

    def get(self, qualname: str) -> Entry | None:
        return self.entries.get(qualname)

    def saves(self, qualname: str) -> frozenset[str] | None:
        """What the op saves (inputs and/or ``"result"``); None if unknown."""
        e = self.entries.get(qualname)
        return None if e is None else e.saves

    def saves_result(self, qualname: str) -> bool:
        e = self.entries.get(qualname)
        return e is not None and e.saves_result

    def saved_inputs(self, qualname: str) -> frozenset[str]:
        """The op's inputs saved for backward (empty if none or unknown)."""
        e = self.entries.get(qualname)
        return frozenset() if e is None else e.saved_inputs

    def is_view(self, qualname: str) -> bool:
        """Whether the op's (first) output aliases its input's storage."""
        e = self.entries.get(qualname)
        return e is not None and e.view

    def has_inplace(self, qualname: str) -> bool:
        e = self.entries.get(qualname)
        return e is not None and e.has_inplace

    def method(self, name: str) -> Entry | None:
        """The entry for the Tensor method ``name`` (``Tensor.<name>``)."""
        return self.entries.get(f"Tensor.{name}")

    def function(self, name: str) -> Entry | None:
        """The entry for ``torch.<name>``."""
        return self.entries.get(f"torch.{name}")


def _positional(call: str) -> tuple[str, ...]:
    call = call.strip()
    if "(" not in call:  # an operator: "self * other", "-self", "self[1:]"
        head = call.split("[", 1)[0]
        return tuple(t for t in head.replace("-", " ").replace("+", " ").split() if t.isidentifier())
    # the last top-level parenthesised group holds the call's arguments
    depth, start, groups = 0, -1, []
    for i, ch in enumerate(call):
        if ch == "(":
            if depth == 0:
                start = i
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth == 0 and start >= 0:
                groups.append((start, i))
    if not groups:
        return ()
    a, b = groups[-1]
    inner = call[a + 1 : b]
    parts, depth, cur = [], 0, ""
    for ch in inner:
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if cur.strip():
        parts.append(cur.strip())
    names: list[str] = ["self"] if call.startswith("self.") else []
    for p in parts:
        if "=" in p:
            break
        names.append(p if p.isidentifier() else "")
    return tuple(names)


def parse(data: Mapping[str, Any]) -> Ledger:
    ops = data.get("ops", {})
    entries = {k: Entry.from_json(k, v) for k, v in sorted(ops.items())}
    return Ledger(torch_version=str(data.get("torch_version", "")), entries=MappingProxyType(entries))


@lru_cache(maxsize=1)
def load_ledger() -> Ledger:
    """The ledger shipped in the rule catalogue (cached). An empty ledger when
    the file is missing, so rules degrade to flagging nothing."""
    p = ledger_path()
    if p is None:
        return Ledger(torch_version="", entries=MappingProxyType({}))
    return parse(json.loads(p.read_text(encoding="utf-8")))
