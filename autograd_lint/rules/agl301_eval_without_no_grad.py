"""AGL301: a model is run in evaluation code with grad mode on."""

from __future__ import annotations

from typing import Iterable, Iterator

import libcst as cst

from autograd_lint.analysis import ir
from autograd_lint.analysis.evaluation import EvalFinding
from autograd_lint.analysis.module import ModuleAnalysis
from autograd_lint.analysis.names import short_code
from autograd_lint.rules.base import MODEL_TRIGGERS, Report, Rule
from autograd_lint.rules.fixes import UNSAFE, FixSpec, no_grad_with, torch_attr
from autograd_lint.settings import Settings


class EvalWithoutNoGrad(Rule):
    code = "AGL301"
    name = "eval-without-no-grad"
    summary = "A model is run in evaluation code with grad mode on: a graph is built and activations are kept for nothing."
    fix_title = "Decorate the function with `@torch.no_grad()` (or wrap the loop)"
    triggers = (b"val", b"test", b"predict", b"infer", b"generate", b"score", b"no_grad", b"inference_mode", *MODEL_TRIGGERS)

    def candidates(self, analysis: ModuleAnalysis) -> Iterable:
        return analysis.evaluation.found

    def check(self, analysis: ModuleAnalysis, settings: Settings) -> Iterator[Report]:
        for f in self.selected(analysis, settings):
            # A shared pass: the subject is the flag, so that verify tells
            # its evaluation run from its training run.
            stmt = ir.statement_holding(f.fn, f.call)
            yield Report(
                self.code, f.node, self.message(analysis, f), f.flag, fix=self.fix(analysis, f), conditions=f.conditions,
                statement=getattr(stmt, "node", None),
            )

    @staticmethod
    def message(analysis: ModuleAnalysis, f: EvalFinding) -> str:
        callee = short_code(analysis.module, f.node.func, 30) if isinstance(f.node, cst.Call) else None
        call = f"`{callee}(...)`" if callee else "The model call"
        fn = f.fn
        if f.region == "eval-mode":
            return (
                f"{call} runs in eval mode with grad enabled, and nothing differentiates its output; autograd records "
                "its graph and keeps its activations for nothing — run it under `with torch.no_grad():`"
            )
        if f.region == "unused":
            return (
                f"{call} runs with grad enabled and nothing differentiates its output (every use reads it out or detaches it); "
                "autograd records its graph and keeps its activations for nothing — run it under `with torch.no_grad():`"
            )
        if f.region == "flag":
            return (
                f"{call} runs with grad enabled when `{f.flag}` is false (evaluation), and only the training run backpropagates; "
                f"autograd records a graph for every evaluation batch — run the pass under `torch.set_grad_enabled({f.flag})`"
            )
        if f.region == "held":
            return (
                f"{call} runs a model this module keeps in eval mode, with grad enabled, and nothing differentiates its output; "
                "autograd records its graph and keeps its activations for nothing — run it under `with torch.no_grad():`"
            )
        if f.region == "data-loop":
            return (
                f"{call} runs with grad enabled in a loop that never backpropagates, and nothing differentiates its output; "
                "autograd records a graph and keeps activations for every batch for nothing — wrap the loop in `with torch.inference_mode():`"
            )
        if f.region_is_function and not fn.is_module and not fn.is_lambda:
            fix = f"decorate `{fn.name}` with `@torch.no_grad()` (or `@torch.inference_mode()`)"
        else:
            fix = "wrap the evaluation loop in `with torch.inference_mode():`"
        if f.region == "guard":
            return (
                f"{call} runs with grad enabled: `torch.no_grad()` written as a statement turns nothing off, so autograd "
                f"records a graph and keeps activations for nothing — {fix}"
            )
        return (
            f"{call} runs in evaluation code with grad enabled; autograd records a graph and keeps activations "
            f"for every batch for nothing — {fix}"
        )

    def fix(self, analysis: ModuleAnalysis, f: EvalFinding) -> FixSpec | None:
        """Unsafe: a caller in another file could backpropagate what the
        function returns."""
        torch_local = analysis.torch_name
        name = torch_local or "torch"
        fn = f.fn.node
        if f.region_is_function and isinstance(fn, cst.FunctionDef):
            deco = cst.Decorator(decorator=cst.Call(func=torch_attr(name, "no_grad")))
            new = fn.with_changes(decorators=[*fn.decorators, deco])
            return FixSpec(UNSAFE, "Decorate the function with `@torch.no_grad()`", ((fn, new),), import_torch=torch_local is None)
        if f.fn.is_module and f.region in ("mode", "fn", "guard"):
            # A script or a notebook cell: no function to decorate. The loop
            # that runs the model goes under no_grad — the innermost one: an
            # outer loop may train too (an epoch loop) — else its statement.
            loop = analysis.enclosing_loop(f.node)
            if loop is not None:
                return FixSpec(UNSAFE, "Wrap the loop in `with torch.no_grad():`", ((loop, no_grad_with(name, [loop], loop)),), import_torch=torch_local is None)
            line = analysis.statement_line(f.node)
            if line is None:
                return None
            return FixSpec(UNSAFE, "Run the call under `with torch.no_grad():`", ((line, no_grad_with(name, [line], line)),), import_torch=torch_local is None)
        if f.region in ("eval-mode", "held", "unused"):
            # The one statement that runs the model in eval mode. Its names
            # stay bound after the `with`; the output stops requiring grad,
            # which nothing differentiates.
            line = analysis.statement_line(f.node)
            if line is None:
                return None
            return FixSpec(UNSAFE, "Run the call under `with torch.no_grad():`", ((line, no_grad_with(name, [line], line)),), import_torch=torch_local is None)
        loop = f.loop_node
        if f.region == "flag":
            # Grad on in the training run as before, off in the evaluation run.
            if not isinstance(loop, (cst.For, cst.While)) or f.flag is None:
                return None
            ctx = cst.Call(func=torch_attr(name, "set_grad_enabled"), args=[cst.Arg(cst.Name(f.flag))])
            new = no_grad_with(name, [loop], loop, ctx)
            return FixSpec(UNSAFE, f"Wrap the loop in `with torch.set_grad_enabled({f.flag}):`", ((loop, new),), import_torch=torch_local is None)
        if isinstance(loop, (cst.For, cst.While)):
            new = no_grad_with(name, [loop], loop)
            return FixSpec(UNSAFE, "Wrap the loop in `with torch.no_grad():`", ((loop, new),), import_torch=torch_local is None)
        return None
