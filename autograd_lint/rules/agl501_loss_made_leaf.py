"""AGL501: a computed loss forced back into the graph (`loss.requires_grad = True`)."""

from __future__ import annotations

from typing import Iterable, Iterator

from autograd_lint.analysis.made_leaf import ForcedLeaf
from autograd_lint.analysis.module import ModuleAnalysis
from autograd_lint.rules.base import Report, Rule
from autograd_lint.settings import Settings


class LossMadeLeaf(Rule):
    code = "AGL501"
    name = "loss-made-leaf"
    summary = "A computed loss is made a new leaf (`loss.requires_grad = True`) and backwarded: no parameter gets a gradient."
    triggers = (b"requires_grad",)

    def candidates(self, analysis: ModuleAnalysis) -> Iterable:
        return analysis.made_leaves.found.values()

    def check(self, analysis: ModuleAnalysis, settings: Settings) -> Iterator[Report]:
        for site in self.selected(analysis, settings):
            yield Report(self.code, site.node, self.message(site), subject=site.target)

    @staticmethod
    def message(site: ForcedLeaf) -> str:
        return (
            f"`{site.target}` is made a new leaf here (`{site.how}`), so its backward reaches no parameter and every gradient stays None — "
            "remove this and keep the graph: find where it was cut (`.item()`, `.detach()`, `.data`, `torch.no_grad()`, NumPy)"
        )
