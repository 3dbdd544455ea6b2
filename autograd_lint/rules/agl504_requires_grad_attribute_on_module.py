"""AGL504: `module.requires_grad = False` on an `nn.Module`: a plain
attribute, nothing frozen."""

from __future__ import annotations

from typing import Iterable, Iterator

import libcst as cst

from autograd_lint.analysis import ir
from autograd_lint.analysis.module import ModuleAnalysis
from autograd_lint.analysis.plain_attributes import PlainAttribute
from autograd_lint.rules.base import Report, Rule
from autograd_lint.rules.fixes import SAFE, UNSAFE, FixSpec, method_call
from autograd_lint.settings import Settings


class RequiresGradAttributeOnModule(Rule):
    code = "AGL504"
    name = "requires-grad-attribute-on-module"
    summary = "`module.requires_grad = False` sets a plain attribute on an `nn.Module` and freezes nothing; call `module.requires_grad_(False)`."
    fix_title = "Call `requires_grad_(...)` on the module"
    triggers = (b"requires_grad",)

    def candidates(self, analysis: ModuleAnalysis) -> Iterable:
        return analysis.plain_attributes.found.values()

    def check(self, analysis: ModuleAnalysis, settings: Settings) -> Iterator[Report]:
        for p in self.selected(analysis, settings):
            yield Report(self.code, p.node, self.message(p), subject=p.target, fix=self.fix(analysis, p), conditions=p.conditions)

    @staticmethod
    def message(p: PlainAttribute) -> str:
        v = p.value
        flag = str(v.value) if type(v) is ir.Const and v.kind == "bool" else "…"
        effect = {
            "False": "its parameters still require grad (nothing is frozen)",
            "True": "parameters that do not require grad still do not (nothing is unfrozen)",
        }.get(flag, f"its parameters' `{p.attr}` is unchanged")
        return f"`{p.receiver}` is a module: assigning `{p.attr}` only sets a plain attribute, {effect} — call `{p.receiver}.{p.method}({flag})`"

    def fix(self, analysis: ModuleAnalysis, p: PlainAttribute) -> FixSpec | None:
        """`m.requires_grad = flag` -> `m.requires_grad_(flag)`. Unsafe where
        the file reads `.requires_grad` off the same receiver: the attribute
        it read is no longer set; and on `self` in a method (in `__init__`,
        it freezes only the parameters made before it)."""
        line = analysis.statement_line(p.node) if isinstance(p.node, cst.CSTNode) else None
        if line is None:
            return None
        stmt = line.body[0]
        if not isinstance(stmt, cst.Assign) or len(stmt.targets) != 1 or not isinstance(stmt.targets[0].target, cst.Attribute):
            return None
        target = stmt.targets[0].target
        call = method_call(target.value, p.method, (cst.Arg(value=stmt.value),))
        on_self = p.fn.cls is not None and p.fn.param_names[:1] == [p.receiver]
        safety = UNSAFE if on_self or p.receiver in analysis.plain_attributes.read_receivers else SAFE
        return FixSpec(safety, self.fix_title or "", ((stmt, cst.Expr(value=call, semicolon=stmt.semicolon)),))
