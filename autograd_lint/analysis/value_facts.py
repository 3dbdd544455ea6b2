"""What a value or a member's name says on its own, with no run to ask,
shared by several parts of a run: the grad modes a decorator sets, what a
tensor attribute gives, a tensor made under ``no_grad``."""

from __future__ import annotations

from autograd_lint.analysis import api
from autograd_lint.analysis import torch_api as lib
from autograd_lint.analysis.api import Gives
from autograd_lint.analysis.outcome import Site
from autograd_lint.analysis.values import Container, GradContext, GradMode, Qual, Value, tensorish


def _fresh_without_grad(v: Value, site: Site) -> bool:
    """A tensor computed under ``no_grad``: nothing it was computed from
    can reach autograd through it."""
    if not site.off or not tensorish(v):
        return False
    for f in v:
        if type(f) is Container:
            return False
    return True


def _tensor_attr(name: str) -> Gives:
    return api.member(api.TENSOR, name, attribute=True).gives


def _decorator_modes(v: Value) -> set[GradMode]:
    """The grad modes a decorator sets: ``@torch.no_grad()`` and the bare
    ``@torch.no_grad``."""
    out = {f.mode for f in v if type(f) is GradContext and f.mode is not None}
    for f in v:
        if type(f) is Qual:
            mode = lib.grad_context_mode(f.name, None)
            if mode in ("on", "off"):
                out.add(GradMode(mode))
    return out
