"""AGL402: bare `zero_grad()` in a project that targets torch < 2.0."""

from __future__ import annotations

from typing import Iterable, Iterator

import libcst as cst

from autograd_lint.analysis.module import ModuleAnalysis
from autograd_lint.rules.base import Report, Rule
from autograd_lint.settings import Settings
from autograd_lint.rules.fixes import SAFE, UNSAFE, FixSpec, reads_grad


class ZeroGradDefaultBeforeTorch2(Rule):
    code = "AGL402"
    name = "zero-grad-default-before-torch-2"
    summary = "Bare `zero_grad()` in a project that targets torch < 2.0, where the default was `set_to_none=False`."
    fix_title = "Pass `set_to_none=True`"
    triggers = (b"zero_grad",)

    def candidates(self, analysis: ModuleAnalysis) -> Iterable:
        return analysis.zeroing.zero_grads.values()

    def selected(self, analysis: ModuleAnalysis, settings: Settings) -> Iterable:
        target = settings.torch_version
        # No information: assume torch >= 2.0, where None is the default.
        if target is None or target >= (2, 0):
            return ()
        return [z for z in self.candidates(analysis) if z.set_to_none is None]

    def check(self, analysis: ModuleAnalysis, settings: Settings) -> Iterator[Report]:
        target = settings.torch_version
        for z in self.selected(analysis, settings):
            assert target is not None
            yield Report(
                self.code,
                z.node,
                f"this project targets torch {target[0]}.{target[1]}, where `zero_grad()` writes zeros into every gradient "
                "(`set_to_none=False` before 2.0) — pass `set_to_none=True`",
                fix=self.fix(analysis, z),
            )

    def fix(self, analysis: ModuleAnalysis, z) -> FixSpec:
        """Unsafe where the function reads `.grad` (None instead of zeros)."""
        arg = cst.Arg(keyword=cst.Name("set_to_none"), value=cst.Name("True"), equal=cst.AssignEqual(
            whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace("")))
        safety = UNSAFE if reads_grad(analysis.module) else SAFE
        return FixSpec(safety, self.fix_title or "", ((z.node, z.node.with_changes(args=[arg])),))
