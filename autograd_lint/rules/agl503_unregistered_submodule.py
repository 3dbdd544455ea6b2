"""AGL503: submodules or parameters kept in a plain list, dict or tuple
attribute of an `nn.Module`."""

from __future__ import annotations

from typing import Iterable, Iterator

import libcst as cst

from autograd_lint.analysis import ir
from autograd_lint.analysis.module import ModuleAnalysis
from autograd_lint.analysis.unregistered import Unregistered
from autograd_lint.rules.base import LineOf, Report, Rule
from autograd_lint.rules.fixes import UNSAFE, FixSpec
from autograd_lint.settings import Settings

# The torch.nn container that registers what a plain one of this kind holds.
_REGISTERING = {
    ("modules", "list"): "ModuleList",
    ("modules", "tuple"): "ModuleList",
    ("modules", "dict"): "ModuleDict",
    ("parameters", "list"): "ParameterList",
    ("parameters", "tuple"): "ParameterList",
    ("parameters", "dict"): "ParameterDict",
}


class UnregisteredSubmodule(Rule):
    code = "AGL503"
    name = "unregistered-submodule"
    summary = "Submodules or parameters kept in a plain list, dict or tuple attribute of an `nn.Module` are not registered: not trained, not moved, not saved."
    fix_title = "Wrap the container in `nn.ModuleList`/`nn.ModuleDict` (or `nn.ParameterList`/`nn.ParameterDict`)"
    triggers = (b"nn.", b"Module", b"Parameter")

    def candidates(self, analysis: ModuleAnalysis) -> Iterable:
        return analysis.unregistered.found.values()

    def check(self, analysis: ModuleAnalysis, settings: Settings) -> Iterator[Report]:
        for u in self.selected(analysis, settings):
            yield Report(self.code, u.node, self.message(u), subject=f"self.{u.attr}", fix=self.fix(analysis, u), watch=u.put)

    def message(self, u: Unregistered):
        wrapper = _REGISTERING.get((u.what, u.kind))
        todo = f"make it an `nn.{wrapper}`" if wrapper else "keep them in `nn.ModuleList`/`nn.ModuleDict` and `nn.ParameterList`/`nn.ParameterDict`"
        tail = f"they are not registered (not in `parameters()`, so never trained; not moved by `.to()`; not saved in `state_dict()`) — {todo}"
        if u.put is None:
            return f"`self.{u.attr}` is a plain {u.kind} of {u.what}: {tail}"
        put = u.put

        def render(line_of: LineOf) -> str:
            return f"`self.{u.attr}` is a plain {u.kind} that {u.what} are put into (line {line_of(put)}): {tail}"

        return render

    def fix(self, analysis: ModuleAnalysis, u: Unregistered) -> FixSpec | None:
        """`[...]` -> `nn.ModuleList([...])` (a dict: `nn.ModuleDict`;
        parameters: `nn.ParameterList`/`ParameterDict`). Unsafe: the
        `state_dict` keys change (checkpoints saved before no longer load
        strictly), and the wrapped modules now train and move."""
        wrapper = _REGISTERING.get((u.what, u.kind))
        display = u.display
        nn = _nn_name(analysis.ir)
        if wrapper is None or display is None or nn is None or not isinstance(display.node, cst.BaseExpression):
            return None
        node = display.node
        if u.kind == "dict" and (u.put is not None or not _string_keys(display)):
            # nn.ModuleDict takes string keys only: the keys must show it.
            return None
        empty = isinstance(node, (cst.List, cst.Dict, cst.Tuple)) and not node.elements
        new = cst.Call(func=_dotted(f"{nn}.{wrapper}"), args=[] if empty else [cst.Arg(value=node)])
        return FixSpec(UNSAFE, self.fix_title or "", ((display.node, new),))


def _dotted(text: str) -> cst.BaseExpression:
    parts = text.split(".")
    out: cst.BaseExpression = cst.Name(parts[0])
    for p in parts[1:]:
        out = cst.Attribute(value=out, attr=cst.Name(p))
    return out


def _nn_name(module: ir.ModuleIR) -> str | None:
    """What this file calls `torch.nn` (`nn`, `torch.nn`), None if nothing."""
    torch_local = None
    for name in module.imports:
        if name.level:
            continue
        if (name.module == "torch.nn" and name.name is None and name.local != "torch") or (name.module == "torch" and name.name == "nn"):
            return name.local
        if name.module == "torch" and name.name is None:
            torch_local = name.local
        if name.module == "torch.nn" and name.name is None and name.local == "torch":
            torch_local = "torch"  # `import torch.nn` binds `torch`
    return f"{torch_local}.nn" if torch_local else None


def _string_keys(display: ir.Expr) -> bool:
    if type(display) is ir.DictX:
        return all(type(k) is ir.Const and isinstance(k.value, str) for k in display.keys)  # type: ignore[attr-defined]
    key = display.key  # type: ignore[attr-defined]
    return type(key) is ir.FString or (type(key) is ir.Call and type(key.func) is ir.Name and key.func.id == "str")
