"""AGL206: a `state_dict()` kept as a snapshot aliases the live parameters, which later optimizer steps change."""

from __future__ import annotations

from typing import Iterable, Iterator

import libcst as cst

from autograd_lint.analysis.module import ModuleAnalysis
from autograd_lint.analysis.names import short_code
from autograd_lint.analysis.snapshots import SnapshotFinding
from autograd_lint.rules.base import Report, Rule
from autograd_lint.rules.fixes import SAFE, FixSpec
from autograd_lint.settings import Settings


class SnapshotAliasesParameters(Rule):
    code = "AGL206"
    name = "snapshot-aliases-parameters"
    summary = "A `state_dict()` kept as a snapshot holds the live parameter tensors: optimizer steps after it change it, so what is later loaded, saved or returned is the latest weights."
    fix_title = "Snapshot copies of the tensors"
    triggers = (b"state_dict(",)

    def candidates(self, analysis: ModuleAnalysis) -> Iterable:
        return analysis.snapshots.found

    def check(self, analysis: ModuleAnalysis, settings: Settings) -> Iterator[Report]:
        for f in self.selected(analysis, settings):
            yield Report(self.code, f.node, self.message(analysis, f), self.subject(analysis, f), self.fix(analysis, f), f.conditions)

    @staticmethod
    def subject(analysis: ModuleAnalysis, f: SnapshotFinding) -> str | None:
        """The module, as written (`model`)."""
        func = f.node.func if isinstance(f.node, cst.Call) else None
        return short_code(analysis.module, func.value) if isinstance(func, cst.Attribute) else None

    @classmethod
    def message(cls, analysis: ModuleAnalysis, f: SnapshotFinding):
        module = cls.subject(analysis, f) or "model"
        step = f.step.func if isinstance(f.step, cst.Call) else None
        step_text = f"`{short_code(analysis.module, step)}()`" if isinstance(step, cst.CSTNode) else "the optimizer step"

        def render(line_of) -> str:
            use = f"{f.how} at line {line_of(f.use)}" if f.use is not None else f.how
            return (
                f"`{module}.state_dict()` holds the live parameter tensors, not copies: {step_text} at line {line_of(f.step)} "
                f"changes them in place before the snapshot is {use}, so it holds the latest weights — "
                f"keep `copy.deepcopy({module}.state_dict())`"
            )

        return render

    def fix(self, analysis: ModuleAnalysis, f: SnapshotFinding) -> FixSpec | None:
        """`copy.deepcopy(model.state_dict())` where the file imports
        `copy` (or `deepcopy` from it); else a dict of detached clones,
        which needs no import."""
        node = f.node
        if not isinstance(node, cst.Call) or analysis.module is None:
            return None
        deepcopy = _deepcopy_name(analysis)
        new: cst.BaseExpression
        if deepcopy is not None:
            new = cst.Call(func=cst.parse_expression(deepcopy), args=[cst.Arg(node)])
        else:
            new = cst.parse_expression(f"{{k: v.detach().clone() for k, v in {analysis.module.code_for_node(node)}.items()}}")
        return FixSpec(SAFE, self.fix_title or "", ((node, new),))


def _deepcopy_name(analysis: ModuleAnalysis) -> str | None:
    """How this file's top level names `copy.deepcopy`, if it imports it
    there (an import inside a function binds nothing elsewhere)."""
    assert analysis.module is not None
    top = {id(s) for line in analysis.module.body if isinstance(line, cst.SimpleStatementLine) for s in line.body}
    for name in analysis.ir.imports:
        if id(name.node) not in top:
            continue
        if name.level == 0 and name.module == "copy" and name.name is None and name.local:
            return f"{name.local}.deepcopy"
        if name.level == 0 and name.module == "copy" and name.name == "deepcopy":
            return name.local
    return None
