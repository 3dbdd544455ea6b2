"""Everything the rules read about one module, built in one pass.

``ModuleAnalysis.build`` walks the syntax tree once (build.py) and runs the
shared analyses over the result: provenance and grad mode (provenance.py),
then graph retention (retention.py), in-place writes (inplace.py) and
grad mode in evaluation code (evaluation.py). Rules only read these.
"""

from __future__ import annotations

from functools import cached_property

import libcst as cst

from autograd_lint.analysis.build import build_ir
from autograd_lint.analysis.evaluation import Evaluation
from autograd_lint.analysis.inplace import Inplace
from autograd_lint.analysis.provenance import Program, analyse
from autograd_lint.analysis.retention import Retention
from autograd_lint.analysis.tree import child_nodes
from autograd_lint.config import Settings


class ModuleAnalysis:
    def __init__(self, module: cst.Module, settings: Settings, program: Program) -> None:
        self.module = module
        self.settings = settings
        self.program = program

    @classmethod
    def build(cls, module: cst.Module, settings: Settings) -> "ModuleAnalysis":
        ir, imports = build_ir(module)
        return cls(module, settings, analyse(ir, imports, settings.rule_options))

    @cached_property
    def retention(self) -> Retention:
        return Retention(self.program, self.module)

    @cached_property
    def inplace(self) -> Inplace:
        return Inplace(self.program, self.module)

    @cached_property
    def evaluation(self) -> Evaluation:
        return Evaluation(self.program, self.module)

    @cached_property
    def parents(self) -> dict[cst.CSTNode, cst.CSTNode]:
        """Each node's parent: built (one extra walk) only when a fix needs
        the statement around a finding."""
        out: dict[cst.CSTNode, cst.CSTNode] = {}
        stack: list[cst.CSTNode] = [self.module]
        while stack:
            n = stack.pop()
            for c in child_nodes(n):
                out[c] = n
                stack.append(c)
        return out

    def statement_line(self, node: cst.CSTNode) -> cst.SimpleStatementLine | None:
        """The one-statement line holding ``node`` (None when the line holds
        several statements, or the node is not in a simple statement)."""
        parents = self.parents
        n: cst.CSTNode | None = node
        while n is not None and not isinstance(n, cst.SimpleStatementLine):
            if isinstance(n, cst.BaseCompoundStatement):
                return None
            n = parents.get(n)
        if n is None or len(n.body) != 1:
            return None
        return n

    @property
    def torch_name(self) -> str | None:
        for local, qual in self.program.imports.bound.items():
            if qual == "torch":
                return local
        return None
