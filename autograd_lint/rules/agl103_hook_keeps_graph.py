"""AGL103: a forward hook or a module's forward keeps its output or input
(with its graph) beyond the call."""

from __future__ import annotations

from typing import Iterable, Iterator

from autograd_lint.analysis.module import ModuleAnalysis
from autograd_lint.analysis.retention import RetentionKind
from autograd_lint.rules.base import Report, Rule
from autograd_lint.rules.fixes import detach_fix
from autograd_lint.rules.retention_messages import retention_message, value_text
from autograd_lint.settings import Settings


class HookKeepsGraph(Rule):
    code = "AGL103"
    name = "hook-keeps-graph"
    summary = "A forward hook or a module's `forward` keeps its output or input, with its graph, on `self` or in a closure."
    fix_title = "Keep `.detach()` of the value"
    triggers = (b"hook", b"forward")

    def candidates(self, analysis: ModuleAnalysis) -> Iterable:
        return analysis.retention.findings(RetentionKind.HOOK)

    def check(self, analysis: ModuleAnalysis, settings: Settings) -> Iterator[Report]:
        for r in self.selected(analysis, settings):
            fix = detach_fix(r.value_node, self.fix_title, r.detach, r.parts)
            yield Report(self.code, r.node, retention_message(analysis.module, r), value_text(analysis.module, r), fix, r.conditions)
