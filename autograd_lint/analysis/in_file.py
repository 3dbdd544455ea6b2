"""What a module's analysis reads of its own functions and classes: their
summaries as ``transfer.Lookup`` asks for them, and a class's attribute
facts, each read recorded as a dependency of the run that made it (so the
run is repeated when what it read changes)."""

from __future__ import annotations

from typing import Iterator, Mapping, Protocol

from autograd_lint.analysis import ir
from autograd_lint.analysis.state import ClassAttr
from autograd_lint.analysis.summaries import ClassSummary, FunctionSummary, class_parametric
from autograd_lint.analysis.values import ImportRoot, ParamRoot, Ref, Value


class Program(Protocol):
    """What these read of ``program.Program`` (which imports this module)."""

    file: str
    fn_by_qualname: dict[str, ir.Function]
    class_by_qualname: dict[str, ir.Class]
    summaries: dict[int, FunctionSummary]

    def depend(self, key: tuple) -> None: ...

    def class_summary(self, cls: ir.Class) -> ClassSummary: ...

    def is_module_class(self, cls: ir.Class) -> bool | None: ...


class TrackedAttrs(Mapping):
    """A class's ``self.<attr>`` facts, as a mapping that tells the run
    reading one which attribute it depends on."""

    def __init__(self, prog: Program, family: str, attrs: dict) -> None:
        self._prog = prog
        self._family = family
        self._attrs = attrs

    def __getitem__(self, name: str) -> Value:
        self._prog.depend(("loc", ClassAttr(self._family, name)))
        return self._attrs[name]

    def get(self, name: str, default: object = None) -> object:  # type: ignore[override]
        self._prog.depend(("loc", ClassAttr(self._family, name)))
        return self._attrs.get(name, default)

    def __iter__(self) -> Iterator[str]:
        return iter(self._attrs)

    def __len__(self) -> int:
        return len(self._attrs)


class InFileLookup:
    """Summaries of this module's functions and classes (transfer.Lookup)."""

    def __init__(self, prog: Program) -> None:
        self.prog = prog

    def function(self, ref: Ref) -> FunctionSummary | None:
        if ref.file != self.prog.file:
            return None
        fn = self.prog.fn_by_qualname.get(ref.qualname)
        if fn is None:
            return None
        self.prog.depend(("fn", fn.index))
        return self.prog.summaries.get(fn.index)

    def klass(self, ref: Ref) -> ClassSummary | None:
        if ref.file != self.prog.file:
            return None
        cls = self.prog.class_by_qualname.get(ref.qualname)
        if cls is None:
            return None
        self.prog.depend(("cls", cls.id))
        return self.prog.class_summary(cls)

    def is_module_class(self, ref: Ref) -> bool | None:
        if ref.file != self.prog.file:
            return None
        cls = self.prog.class_by_qualname.get(ref.qualname)
        if cls is None:
            return False
        self.prog.depend(("cls", cls.id))
        return self.prog.is_module_class(cls)

    def parametric(self, ref: Ref) -> bool | None:
        # (Not memoized: the class's attributes grow while the runs settle.)
        return class_parametric(ref, self.klass, lambda v: v, {})

    def imported(self, root: ImportRoot) -> Value | None:
        return None

    def param(self, root: ParamRoot) -> Value | None:
        return None

    def export(self, file: str, name: str) -> Value | None:
        return None
