"""AGL505: gradients clipped (or their norm read) while a GradScaler still has them scaled."""

from __future__ import annotations

from typing import Iterable, Iterator

import libcst as cst

from autograd_lint.analysis.module import ModuleAnalysis
from autograd_lint.analysis.names import callee_text, short_code
from autograd_lint.analysis.scaling import ScaledRead
from autograd_lint.rules.base import Report, Rule
from autograd_lint.rules.fixes import SAFE, FixSpec, insert_before, method_call
from autograd_lint.settings import Settings


class ClipBeforeUnscale(Rule):
    code = "AGL505"
    name = "clip-before-unscale"
    summary = "Gradients are clipped or measured between `scaler.scale(loss).backward()` and `scaler.step(opt)` without `scaler.unscale_(opt)`: they are still multiplied by the scale."
    fix_title = "Call `scaler.unscale_(opt)` before the clip"
    # A finding needs `scaler.scale(loss)`, wherever the scaler is made.
    triggers = (b"scale(",)

    def candidates(self, analysis: ModuleAnalysis) -> Iterable:
        return analysis.scaling.found.values()

    def check(self, analysis: ModuleAnalysis, settings: Settings) -> Iterator[Report]:
        for f in self.selected(analysis, settings):
            yield Report(self.code, f.node, self.message(analysis, f), self.subject(analysis, f), self.fix(analysis, f))

    @staticmethod
    def _step_parts(f: ScaledRead) -> tuple[cst.BaseExpression, cst.BaseExpression | None] | None:
        """The scaler and the optimizer of ``scaler.step(opt)``, as written."""
        step = f.step
        if not isinstance(step, cst.Call) or not isinstance(step.func, cst.Attribute):
            return None
        args = [a for a in step.args if a.keyword is None and not a.star]
        return step.func.value, (args[0].value if len(args) == 1 and len(step.args) == 1 else None)

    @classmethod
    def subject(cls, analysis: ModuleAnalysis, f: ScaledRead) -> str | None:
        parts = cls._step_parts(f)
        return short_code(analysis.module, parts[0]) if parts else None

    @classmethod
    def message(cls, analysis: ModuleAnalysis, f: ScaledRead):
        parts = cls._step_parts(f)
        scaler = short_code(analysis.module, parts[0]) if parts else "scaler"
        opt = short_code(analysis.module, parts[1]) if parts and parts[1] is not None else "optimizer"
        what = callee_text(analysis.module, f.node) if isinstance(f.node, cst.CSTNode) else None
        reads = f"`{what}`" if what else "this"
        effect = "clips gradients still multiplied by the loss scale, so the step is shrunk by that scale" if f.clip else "measures gradients still multiplied by the loss scale"

        def render(line_of) -> str:
            return f"{reads} {effect} (`{scaler}.step()` at line {line_of(f.step)} unscales only after) — call `{scaler}.unscale_({opt})` before it"

        return render

    def fix(self, analysis: ModuleAnalysis, f: ScaledRead) -> FixSpec | None:
        """Insert `scaler.unscale_(opt)` on the line before the read. Only
        where it runs once per step: not after another `unscale_` of the
        same step, not in a loop (or function) the step is outside of."""
        parts = self._step_parts(f)
        if f.unscaled_after or parts is None or parts[1] is None or not isinstance(f.node, cst.CSTNode):
            return None
        if not all(_plain_path(e) for e in parts):
            return None
        line = analysis.statement_line(f.node)
        if line is None or not _runs_once_per(analysis, line, f.step):
            return None
        call = method_call(parts[0], "unscale_", (cst.Arg(parts[1]),))
        return FixSpec(SAFE, self.fix_title or "", (insert_before(line, cst.Expr(call)),))


def _plain_path(e: cst.BaseExpression) -> bool:
    """`scaler`, `self.scaler`: reads the same object before the read as at the step."""
    while isinstance(e, cst.Attribute):
        e = e.value
    return isinstance(e, cst.Name)


_BLOCKS = (cst.IndentedBlock, cst.Module)


def _runs_once_per(analysis: ModuleAnalysis, line: cst.SimpleStatementLine, step: object) -> bool:
    """The block holding ``step`` holds ``line`` with no loop or function
    between them: the line runs at most once for each step."""
    parents = analysis.parents
    home: cst.CSTNode | None = parents.get(step)  # type: ignore[arg-type]
    while home is not None and not isinstance(home, _BLOCKS):
        home = parents.get(home)
    n: cst.CSTNode | None = parents.get(line)
    while n is not None and n is not home:
        if isinstance(n, (cst.For, cst.While, cst.FunctionDef, cst.Lambda, cst.ClassDef, cst.CompFor)):
            return False
        n = parents.get(n)
    return n is not None
