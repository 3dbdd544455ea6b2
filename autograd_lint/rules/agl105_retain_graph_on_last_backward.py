"""AGL105: `backward(retain_graph=True)` where no later backward goes through the kept graph."""

from __future__ import annotations

from typing import Iterable, Iterator

from autograd_lint.analysis.module import ModuleAnalysis
from autograd_lint.rules.base import Report, Rule
from autograd_lint.settings import Settings


class RetainGraphOnLastBackward(Rule):
    code = "AGL105"
    name = "retain-graph-on-last-backward"
    summary = (
        "`backward(retain_graph=True)` where no later backward of the iteration goes through the graph: "
        "the graph and its saved activations are kept until the next iteration, for nothing."
    )
    triggers = (b"retain_graph",)

    def candidates(self, analysis: ModuleAnalysis) -> Iterable:
        return analysis.retained.found

    def check(self, analysis: ModuleAnalysis, settings: Settings) -> Iterator[Report]:
        for site in self.selected(analysis, settings):
            yield Report(self.code, site.node, self.message())

    @staticmethod
    def message() -> str:
        return (
            "`retain_graph=True` keeps this graph and every activation it saved, but no later backward of the iteration goes through it: "
            "it stays alive until the next iteration rebinds its names, a memory cost every step — remove `retain_graph=True`"
            " (if that raises 'backward through the graph a second time', a graph is carried into the next iteration: detach it)"
        )
