"""AGL104: recurrent state carried, still attached, into the next iteration
of a loop that backpropagates every iteration."""

from __future__ import annotations

from typing import Iterable, Iterator

from autograd_lint.analysis.carried import CarriedFinding
from autograd_lint.analysis.module import ModuleAnalysis
from autograd_lint.rules.base import Report, Rule
from autograd_lint.settings import Settings


class GraphCarriedAcrossIterations(Rule):
    code = "AGL104"
    name = "graph-carried-across-iterations"
    summary = (
        "Recurrent state (`hidden`) is fed into the next iteration still attached to this iteration's graph, "
        "so every backward runs into the graphs before it."
    )
    triggers = (b"backward", b"step")

    def candidates(self, analysis: ModuleAnalysis) -> Iterable:
        return analysis.carried.found

    def check(self, analysis: ModuleAnalysis, settings: Settings) -> Iterator[Report]:
        for f in self.selected(analysis, settings):
            yield Report(self.code, f.node, self.message(analysis, f), ", ".join(self.names(analysis, f)))

    @staticmethod
    def names(analysis: ModuleAnalysis, f: CarriedFinding) -> list[str]:
        """The carried names in the order the call reads them (`h`, `c`)."""
        text = analysis.module.code_for_node(f.node) if analysis.module is not None else ""
        return sorted(f.names, key=lambda n: (text.find(n), n))

    @classmethod
    def message(cls, analysis: ModuleAnalysis, f: CarriedFinding) -> str:
        names = cls.names(analysis, f)
        what = " and ".join(f"`{n}`" for n in names)
        first = names[0]
        if len(names) > 1:
            cut = "a `.detach()` of each (or `repackage_hidden`)"
        elif first in f.grouped:
            # An LSTM's `(h, c)`: a tuple has no `.detach()` of its own.
            cut = f"`{first} = tuple(s.detach() for s in {first})` (or `repackage_hidden`)"
        else:
            cut = f"`{first} = {first}.detach()`"
        return (
            f"{what} from the previous iteration, still attached to its graph, {'feeds' if len(names) == 1 else 'feed'} this call, "
            "so the next backward runs into that graph: it raises 'backward through the graph a second time', or with `retain_graph=True` keeps every graph "
            f"since the first and slows each step — start each iteration with {cut} and drop `retain_graph=True`"
        )
