"""The contract every rule implements.

A rule never walks the syntax tree itself: it reads what the analysis
decided in the file's single pass and reports nodes, with its own message
and fix. Positions are resolved by the engine, only for nodes that become
findings.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, ClassVar, Iterable, Iterator, Union

import libcst as cst

if TYPE_CHECKING:
    from autograd_lint.analysis.module import ModuleAnalysis
    from autograd_lint.analysis.resolve import Condition
    from autograd_lint.rules.fixes import FixSpec
    from autograd_lint.settings import Settings

LineOf = Callable[[cst.CSTNode], int]


@dataclass(frozen=True)
class Report:
    """What a rule reports: the node to point at and what to say.
    ``conditions``: what the finding still depends on that this module
    alone cannot show (another module's helper, a caller in another file);
    the engine decides them."""

    code: str
    node: cst.CSTNode
    # A message that cites other lines is rendered once positions are known:
    # it receives a function giving the line of a node.
    message: Union[str, Callable[[LineOf], str]]
    subject: str | None = None
    fix: "FixSpec | None" = None
    conditions: "tuple[Condition, ...]" = ()
    # Where what it claims happens, when not at ``node`` (Finding.watch_row).
    watch: cst.CSTNode | None = None
    # The statement ``node`` is part of, where the finding is the
    # statement's: a statement written over several lines is reported from
    # its first line (where a reader, and a `# noqa`, looks for it).
    statement: cst.CSTNode | None = None


# Words without one of which a file can hold no tensor or model the analysis
# knows of: torch itself, what only modules have (`.eval()`,
# `.parameters()`...), the model libraries, and a star import (which may
# bring any of them). The rules that report on tensors and models trigger
# on these too, so that a rule selected alone reports what it reports
# beside the others (the pre-filter is a fast path, never a decision).
MODEL_TRIGGERS: tuple[bytes, ...] = (
    b"torch", b"import *", b"nn.", b"eval(", b"train(", b"parameters(", b"modules(", b"children(", b"register_",
    b"add_module", b"get_submodule", b"load_state_dict", b"from_pretrained", b"transformers", b"timm", b"diffusers",
    b"lightning", b"einops", b"forward",
)


class Rule:
    code: ClassVar[str]
    name: ClassVar[str]  # kebab-case, e.g. "graph-stored-in-container"
    summary: ClassVar[str]  # one line, used by `autograd-lint rules`
    fix_title: ClassVar[str | None] = None  # what the fix does, when there is one
    default_enabled: ClassVar[bool] = True
    # Byte strings of which at least one must occur in a file for the rule to
    # possibly fire there; files without any are never parsed for this rule.
    triggers: ClassVar[tuple[bytes, ...]] = ()

    @property
    def fixable(self) -> bool:
        return self.fix_title is not None

    def candidates(self, analysis: "ModuleAnalysis") -> Iterable:
        """What the analysis decided that this rule reports from."""
        raise NotImplementedError

    def selected(self, analysis: "ModuleAnalysis", settings: "Settings") -> Iterable:
        """The candidates ``check`` reports, one report each, in order: read
        without the syntax tree, so that the engine can tell from CPython's
        tree alone whether a file has anything to report (if not, LibCST
        is not needed for it). A rule whose ``check`` skips candidates
        (by settings, by a project-wide fact) says so here."""
        return self.candidates(analysis)

    def conditions(self, item: object) -> "tuple[Condition, ...]":
        """What the report made from ``item`` still depends on (its
        ``Report.conditions``)."""
        return getattr(item, "conditions", ())

    def check(self, analysis: "ModuleAnalysis", settings: "Settings") -> Iterator[Report]:
        raise NotImplementedError
