"""AGL201: A tensor autograd saved for backward is modified in place before that backward."""

from __future__ import annotations

from typing import Iterator

import libcst as cst

from autograd_lint.analysis import torch_api as api
from autograd_lint.analysis.inplace import InplaceFinding, InplaceKind
from autograd_lint.analysis.module import ModuleAnalysis
from autograd_lint.analysis.names import dotted
from autograd_lint.analysis.values import GradMode
from autograd_lint.rules.base import Report, Rule
from autograd_lint.rules.fixes import UNSAFE, FixSpec, parenthesize
from autograd_lint.rules.inplace_messages import saved_by
from autograd_lint.settings import Settings

_BINARY = {
    cst.AddAssign: cst.Add,
    cst.SubtractAssign: cst.Subtract,
    cst.MultiplyAssign: cst.Multiply,
    cst.DivideAssign: cst.Divide,
    cst.PowerAssign: cst.Power,
    cst.MatrixMultiplyAssign: cst.MatrixMultiply,
    cst.FloorDivideAssign: cst.FloorDivide,
    cst.ModuloAssign: cst.Modulo,
}


class InplaceOnSavedTensor(Rule):
    code = "AGL201"
    name = "inplace-on-saved-tensor"
    summary = "A tensor autograd saved for backward is modified in place before that backward."
    fix_title = "Rewrite to the out-of-place op"
    triggers = (b"torch",)

    def check(self, analysis: ModuleAnalysis, settings: Settings) -> Iterator[Report]:
        for f in analysis.inplace.findings(InplaceKind.SAVED):
            yield Report(self.code, f.node, self.message(analysis, f), f.name, self.fix(analysis, f), f.conditions)

    @staticmethod
    def message(analysis: ModuleAnalysis, f: InplaceFinding):
        by = saved_by(analysis.module, f)

        def render(line_of) -> str:
            return (
                f"`{f.name}` was saved for backward{by(line_of)}; writing it in place (`{f.how}`) makes backward fail "
                f"with 'modified by an inplace operation' — use the out-of-place op or `.clone()` it first"
            )

        return render

    def fix(self, analysis: ModuleAnalysis, f: InplaceFinding) -> FixSpec | None:
        """`y += 1` -> `y = y + 1`; `y.mul_(2)` -> `y = y.mul(2)`;
        `torch.clamp_(e, ...)` -> `e = torch.clamp(e, ...)`. Unsafe: any other
        name for the same tensor (a view, an alias) no longer sees the
        change. Not offered under no_grad (the new tensor would leave the
        graph) nor where no out-of-place op exists (`copy_`, `zero_`)."""
        node = f.node
        if f.grad is GradMode.OFF:
            return None
        if isinstance(node, cst.AugAssign) and isinstance(node.target, (cst.Name, cst.Attribute)):
            op = _BINARY.get(type(node.operator))
            if op is None:
                return None
            value = cst.BinaryOperation(left=node.target, operator=op(), right=parenthesize(node.value))
            new = cst.Assign(targets=[cst.AssignTarget(target=node.target)], value=value)
            return FixSpec(UNSAFE, self.fix_title, ((node, new),))
        if not (isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute)):
            return None
        base = api.inplace_base(node.func.attr.value)
        line = analysis.statement_line(node)
        if base is None or line is None or not isinstance(line.body[0], cst.Expr) or line.body[0].value is not node:
            return None
        receiver = dotted(node.func.value)
        if receiver == f.name and api.method_entry(base) is not None:
            target: cst.BaseExpression = node.func.value  # y.mul_(2) -> y = y.mul(2)
        elif node.args and dotted(node.args[0].value) == f.name and receiver == analysis.torch_name and api.ledger_entry(f"torch.{base}") is not None:
            target = node.args[0].value  # torch.clamp_(e, ...) -> e = torch.clamp(e, ...)
        else:
            return None
        call = node.with_changes(func=node.func.with_changes(attr=cst.Name(base)))
        new = cst.Assign(targets=[cst.AssignTarget(target=target)], value=call)
        return FixSpec(UNSAFE, self.fix_title, ((line.body[0], new),))
