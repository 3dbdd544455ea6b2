"""AGL101: a tensor attached to its graph is stored in a container that
outlives the iteration."""

from __future__ import annotations

from typing import Iterable, Iterator

from autograd_lint.analysis.module import ModuleAnalysis
from autograd_lint.analysis.retention import RetentionKind
from autograd_lint.rules.base import MODEL_TRIGGERS, Report, Rule
from autograd_lint.rules.fixes import detach_fix
from autograd_lint.rules.retention_messages import retention_message, value_text
from autograd_lint.settings import Settings


class GraphStoredInContainer(Rule):
    code = "AGL101"
    name = "graph-stored-in-container"
    summary = "A tensor still attached to its autograd graph is stored in a container that outlives the iteration."
    fix_title = "Store `.detach()` of the value"
    triggers = (b"backward", b"hook", *MODEL_TRIGGERS)

    def candidates(self, analysis: ModuleAnalysis) -> Iterable:
        return analysis.retention.findings(RetentionKind.STORE)

    def check(self, analysis: ModuleAnalysis, settings: Settings) -> Iterator[Report]:
        for r in self.selected(analysis, settings):
            fix = detach_fix(r.value_node, self.fix_title, r.detach, r.parts) if r.via is None else None
            yield Report(self.code, r.node, retention_message(analysis.module, r), value_text(analysis.module, r), fix, r.conditions)
