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
