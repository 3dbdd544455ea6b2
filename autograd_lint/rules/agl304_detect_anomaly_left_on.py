"""AGL304: `torch.autograd.set_detect_anomaly(True)` left on in training code."""

from __future__ import annotations

from typing import Iterable, Iterator

from autograd_lint.analysis.anomaly import AnomalySite
from autograd_lint.analysis.module import ModuleAnalysis
from autograd_lint.rules.base import LineOf, Report, Rule
from autograd_lint.settings import Settings


class DetectAnomalyLeftOn(Rule):
    code = "AGL304"
    name = "detect-anomaly-left-on"
    summary = "`torch.autograd.set_detect_anomaly(True)` is left on in training code: every step runs several times slower, and nothing warns."
    triggers = (b"set_detect_anomaly",)

    def candidates(self, analysis: ModuleAnalysis) -> Iterable:
        return analysis.anomaly.found

    def check(self, analysis: ModuleAnalysis, settings: Settings) -> Iterator[Report]:
        for site in self.selected(analysis, settings):
            yield Report(self.code, site.node, self.message(site))

    @staticmethod
    def message(site: AnomalySite):
        def render(line_of: LineOf) -> str:
            return (
                f"anomaly detection is switched on here and never off, and this file trains (line {line_of(site.trains)}): "
                "every forward records a stack trace and every backward checks each gradient, several times slower, silently — "
                "remove it, or switch it on only under a debug flag (`if args.debug:`)"
            )

        return render
