"""Faster construction of frozen, slotted dataclasses: the analysis builds
millions of facts per run, LibCST's parser a node per token.

A frozen dataclass's ``__init__`` stores each field with
``object.__setattr__(self, name, value)``, which finds the field's slot
descriptor again on every call. The ``__init__`` made here calls each
slot's own ``__set__``, found once when the class is set up: the same
fields, the same defaults, a third cheaper (measured on LibCST's ``Name``).

Free of LibCST and of the analysis (plain data at the bottom layer).
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable


class _Factory:
    """Stands for "not given" where a field's default comes from a factory."""

    def __repr__(self) -> str:
        return "<factory default>"


_FACTORY = _Factory()


def fast_init(cls: type, post_init: bool = True) -> Callable[..., None] | None:
    """An ``__init__`` for the slotted dataclass ``cls`` that stores its
    fields as the dataclass's own would (positional or by keyword, defaults
    and default factories alike; fields outside ``__init__`` get their
    default); then calls ``__post_init__`` when ``post_init`` and the class
    has one. None when ``cls`` is not a slotted dataclass this can build
    (a keyword-only field, a field outside ``__init__`` without a plain
    default, a field that is not a slot)."""
    if not dataclasses.is_dataclass(cls) or "__slots__" not in cls.__dict__ or "__init__" not in cls.__dict__:
        return None
    env: dict[str, Any] = {"_FACTORY": _FACTORY}
    params, body = ["self"], []
    for i, f in enumerate(dataclasses.fields(cls)):
        slot = getattr(cls, f.name, None)  # a base class's slot too
        if f.kw_only or type(slot).__name__ != "member_descriptor":
            return None
        env[f"_s{i}"] = slot.__set__
        if not f.init:
            if f.default is dataclasses.MISSING:
                return None
            env[f"_d{i}"] = f.default
            body.append(f"    _s{i}(self, _d{i})")
            continue
        value = f.name
        if f.default is not dataclasses.MISSING:
            env[f"_d{i}"] = f.default
            params.append(f"{f.name}=_d{i}")
        elif f.default_factory is not dataclasses.MISSING:
            env[f"_f{i}"] = f.default_factory
            params.append(f"{f.name}=_FACTORY")
            value = f"_f{i}() if {f.name} is _FACTORY else {f.name}"
        else:
            params.append(f.name)
        body.append(f"    _s{i}(self, {value})")
    if post_init and hasattr(cls, "__post_init__"):
        body.append("    self.__post_init__()")
    namespace: dict[str, Any] = {}
    exec(f"def __init__({', '.join(params)}):\n" + "\n".join(body or ["    pass"]) + "\n", env, namespace)
    init = namespace["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    return init


def construct_fast(namespace: dict[str, Any]) -> None:
    """Give every frozen, slotted dataclass defined in ``namespace`` (a
    module's globals) the faster ``__init__``."""
    for obj in list(namespace.values()):
        if isinstance(obj, type) and obj.__module__ == namespace["__name__"] and dataclasses.is_dataclass(obj):
            params = obj.__dataclass_params__  # type: ignore[attr-defined]
            if params.frozen:
                init = fast_init(obj)
                if init is not None:
                    obj.__init__ = init  # type: ignore[misc]
