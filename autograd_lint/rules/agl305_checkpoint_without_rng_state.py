"""AGL305: a checkpoint told not to restore the RNG state around code that
draws random numbers (a dropout): the backward recomputes another forward."""

from __future__ import annotations

from typing import Iterable, Iterator

import libcst as cst

from autograd_lint.analysis.module import ModuleAnalysis
from autograd_lint.analysis.names import callee_text, short_code
from autograd_lint.analysis.recompute import RecomputeFinding
from autograd_lint.rules.base import Report, Rule
from autograd_lint.rules.fixes import SAFE, FixSpec
from autograd_lint.settings import Settings


class CheckpointWithoutRngState(Rule):
    code = "AGL305"
    name = "checkpoint-without-rng-state"
    summary = (
        "`checkpoint(..., preserve_rng_state=False)` recomputes code that draws random numbers (a dropout) without "
        "restoring the RNG state, so the backward differentiates a different forward."
    )
    fix_title = "Pass `preserve_rng_state=True`"
    triggers = (b"preserve_rng_state",)

    def candidates(self, analysis: ModuleAnalysis) -> Iterable:
        return analysis.recomputes.found

    def check(self, analysis: ModuleAnalysis, settings: Settings) -> Iterator[Report]:
        for f in self.selected(analysis, settings):
            yield Report(self.code, f.node, self.message(analysis, f), self.subject(analysis, f), self.fix(f), f.conditions)

    @staticmethod
    def subject(analysis: ModuleAnalysis, f: RecomputeFinding) -> str | None:
        """What is checkpointed, as written (`self.block`)."""
        args = f.node.args if isinstance(f.node, cst.Call) else ()
        return short_code(analysis.module, args[0].value) if args else None

    @classmethod
    def message(cls, analysis: ModuleAnalysis, f: RecomputeFinding):
        what = f"`{cls.subject(analysis, f)}`" if cls.subject(analysis, f) else "the checkpointed code"
        draw = callee_text(analysis.module, f.draw) if isinstance(f.draw, cst.CSTNode) and f.draw is not f.node else None
        kind = f.draw_name.rsplit(".", 1)[-1]

        def render(line_of) -> str:
            if draw is None:
                by = "a layer it holds draws them" if kind == "Sequential" else f"it is a `{kind}`"
            elif draw.split("(")[0].rsplit(".", 1)[-1] == kind:
                by = f"`{draw}` at line {line_of(f.draw)}"
            else:
                by = f"`{draw}`, a `{kind}`, at line {line_of(f.draw)}"
            return (
                f"the backward recomputes {what} without restoring the RNG state, and it draws random numbers ({by}): "
                "the recomputation draws different ones, so the gradients belong to another forward — "
                "pass `preserve_rng_state=True` (the default)"
            )

        return render

    def fix(self, f: RecomputeFinding) -> FixSpec | None:
        """`preserve_rng_state=False` -> `True`: the default, which restores
        the state so the recomputation draws what the forward drew."""
        node = f.node
        if not isinstance(node, cst.Call):
            return None
        args = []
        for a in node.args:
            if a.keyword is not None and a.keyword.value == "preserve_rng_state" and isinstance(a.value, cst.Name):
                a = a.with_changes(value=cst.Name("True"))
            args.append(a)
        return FixSpec(SAFE, self.fix_title, ((node, node.with_changes(args=args)),))
