"""Plain-data classes for what every run loads (settings, findings, the
cache's entries), without the ``dataclasses`` module: importing it (it
imports ``inspect``, ``ast``, ``dis``, ``tokenize``) and building the
classes cost a quarter of a cached run's start-up, more than pyflakes'
whole start-up leaves for anything beyond the interpreter's own.

A ``Record`` subclass writes its ``__init__``: its parameters (positional,
in order) are its fields, which it stores with ``self._store(locals())``
(frozen or not). From them the record gets what ``@dataclass`` (or
``@dataclass(frozen=True)``) would give it: equality field by field with
an instance of the same class, a hash of the fields when frozen (none when
not, as a dataclass), ``AttributeError`` on assignment when frozen, a
``Name(field=value, ...)`` repr, ``__match_args__``. Fields live in the
instance's ``__dict__``, so pickling and ``copy`` work as for a dataclass.
And ``dataclasses.fields``, ``replace``, ``asdict`` and ``is_dataclass``
take it for the dataclass it stands for: its ``__dataclass_fields__`` are
made from ``__init__`` the first time something asks for them (importing
``dataclasses`` then, for a caller that already uses it).

Free of everything else in the package (plain data at the bottom layer).
"""

from __future__ import annotations

from operator import attrgetter

TYPE_CHECKING = False  # typing costs 4 ms at start-up; type checkers take this name as true
if TYPE_CHECKING:
    from typing import Any, Callable, NoReturn


def _frozen_setattr(self: Record, name: str, value: object) -> NoReturn:
    # dataclasses.FrozenInstanceError's words; it is an AttributeError too.
    raise AttributeError(f"cannot assign to field {name!r}")


def _frozen_delattr(self: Record, name: str) -> NoReturn:
    raise AttributeError(f"cannot delete field {name!r}")


class _AsDataclass:
    """``__dataclass_fields__`` or ``__dataclass_params__`` of a record:
    those of an equivalent dataclass, made on first use."""

    def __init__(self, attribute: str) -> None:
        self.attribute = attribute

    def __get__(self, obj: object, cls: type) -> Any:
        if cls is Record:
            raise AttributeError(self.attribute)  # the base class is no dataclass
        shadow = _SHADOWS.get(cls)
        if shadow is None:
            shadow = _SHADOWS[cls] = _equivalent_dataclass(cls)
        return getattr(shadow, self.attribute)


_SHADOWS: dict[type, type] = {}


def _equivalent_dataclass(cls: type[Record]) -> type:
    """The dataclass ``cls`` stands for: the same fields, types and
    defaults (a ``factories`` entry stands for its default factory)."""
    import dataclasses

    defaults = cls.__init__.__defaults__ or ()
    first_default = len(cls._fields) - len(defaults)
    annotations = cls.__init__.__annotations__
    specs = []
    for i, name in enumerate(cls._fields):
        if name in cls.factories:
            field = dataclasses.field(default_factory=cls.factories[name])
        elif i >= first_default:
            field = dataclasses.field(default=defaults[i - first_default])
        else:
            field = dataclasses.field()
        specs.append((name, annotations.get(name, "Any"), field))
    return dataclasses.make_dataclass(cls.__name__, specs, frozen=cls._frozen)


class Record:
    """Base of the plain-data classes on the start-up path (see the module's
    docstring). ``class Name(Record)`` is frozen; ``class Name(Record,
    frozen=False)`` is not. ``factories``: the fields whose default is a
    new object each time (``None`` in ``__init__`` stands for it), by name."""

    _fields: tuple[str, ...] = ()
    _frozen = True
    _values: Callable[[Any], tuple] = staticmethod(lambda obj: ())
    factories: dict[str, Callable[[], Any]] = {}

    __dataclass_fields__ = _AsDataclass("__dataclass_fields__")
    __dataclass_params__ = _AsDataclass("__dataclass_params__")

    def __init_subclass__(cls, frozen: bool = True, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        code = cls.__init__.__code__
        cls._fields = fields = code.co_varnames[1 : code.co_argcount]
        cls._frozen = frozen
        cls.__match_args__ = fields
        if len(fields) > 1:
            cls._values = attrgetter(*fields)
        elif fields:
            get = attrgetter(fields[0])
            cls._values = staticmethod(lambda obj: (get(obj),))
        if frozen:
            cls.__setattr__ = _frozen_setattr  # type: ignore[method-assign,assignment]
            cls.__delattr__ = _frozen_delattr  # type: ignore[method-assign,assignment]
        else:
            cls.__hash__ = None  # type: ignore[assignment]  # as a mutable dataclass

    def _store(self, arguments: dict[str, Any]) -> None:
        """Keep ``__init__``'s arguments (its ``locals()``) as the fields; a
        ``None`` for a field in ``factories`` stands for a new default."""
        factories = self.factories
        for name in self._fields:
            value = arguments[name]
            if value is None and name in factories:
                value = factories[name]()
            self.__dict__[name] = value

    def __eq__(self, other: object) -> bool:
        if other.__class__ is self.__class__:
            return self._values(self) == other._values(other)  # type: ignore[attr-defined]
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self._values(self))

    def __repr__(self) -> str:
        fields = ", ".join(f"{name}={getattr(self, name)!r}" for name in self._fields)
        return f"{type(self).__qualname__}({fields})"
