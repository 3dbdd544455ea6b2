"""AGL502: a "trainable" tensor that is not a leaf
(`torch.randn(..., requires_grad=True).to(device)`, `nn.Parameter(t).cuda()`)."""

from __future__ import annotations

from typing import Callable, Iterable, Iterator

from autograd_lint.analysis.module import ModuleAnalysis
from autograd_lint.analysis.non_leaf import NonLeaf
from autograd_lint.rules.base import LineOf, Report, Rule
from autograd_lint.rules.non_leaf_fix import fix_non_leaf
from autograd_lint.settings import Settings

# What torch does with the copy, by where it goes.
_EFFECT = {
    "optimizer": "the optimizer it is handed to (line {line}) raises `ValueError: can't optimize a non-leaf Tensor`",
    "grad": "its `.grad` (read at line {line}) is never filled: None, with a warning",
    "attribute": "`self.{attr}` (line {line}) is a plain tensor, not a registered parameter: not in `parameters()`, never trained or saved",
}


class NonLeafTrainable(Rule):
    code = "AGL502"
    name = "non-leaf-trainable"
    summary = "A tensor made to require grad is then moved, cast or scaled (`.to(device)`, `* 0.01`): the result is not a leaf, so it is never trained."
    fix_title = "Make the leaf after the move (`device=`/`dtype=` in the factory, `nn.Parameter(t.to(...))`, `.requires_grad_()`)"
    triggers = (b"requires_grad", b"Parameter")

    def candidates(self, analysis: ModuleAnalysis) -> Iterable:
        return analysis.non_leaf.found.values()

    def check(self, analysis: ModuleAnalysis, settings: Settings) -> Iterator[Report]:
        for f in self.selected(analysis, settings):
            yield Report(self.code, f.wrap.node, self.message(f), subject=f.wrap.made.qual.rsplit(".", 1)[-1], fix=fix_non_leaf(analysis, f, self.fix_title or ""))

    @staticmethod
    def message(f: NonLeaf) -> Callable[[LineOf], str]:
        if f.wrap.made.kind == "frozen":
            how = f.wrap.how

            def render_frozen(line_of: LineOf) -> str:
                return (
                    f"`nn.Parameter(..., requires_grad=False)` is copied by {how} wherever that changes its device or dtype (a GPU, another dtype), "
                    f"so `self.{f.attr}` (line {line_of(f.sink_node)}) is a plain tensor, not a registered parameter: not in `state_dict()`, "
                    f"not moved by `module.to()` — wrap after the move: `nn.Parameter(t{how.strip('`')}, requires_grad=False)`, or `register_buffer`"
                )

            return render_frozen
        made = {"factory": f"`{f.wrap.made.qual}(..., requires_grad=True)`", "parameter": "`nn.Parameter(...)`", "variable": "`Variable(..., requires_grad=True)`"}[f.wrap.made.kind]
        remedy = {
            "parameter": f"wrap after the move: `nn.Parameter(t{f.wrap.how.strip('`')})`" if f.wrap.how.startswith("`.") else "wrap the computed tensor: `nn.Parameter(...)` around the result",
            "variable": "make the leaf after the move: `t.to(device).requires_grad_()`",
        }.get(f.wrap.made.kind, "create it where it belongs (`device=`/`dtype=` in the factory) or call `.requires_grad_()` on the result")
        if f.wrap.rebinds:
            remedy = "update it in place instead: `with torch.no_grad(): w -= lr * w.grad`, then zero `w.grad`"

        def render(line_of: LineOf) -> str:
            effect = _EFFECT[f.sink].format(attr=f.attr, line=line_of(f.sink_node))
            return f"the leaf made by {made} is turned into a non-leaf copy by {f.wrap.how}, so {effect} — {remedy}"

        return render
