"""Everything the rules read about one module, from one pass.

``ModuleAnalysis`` lowers the syntax tree (lower.py), runs the interpreter
over it (interp.py) with one observer per rule family listening, and keeps
what they decided. It also gives the module's summary (summaries.py), what
other modules see of it, and the calls it makes into other modules, for a
whole-project run.
"""

from __future__ import annotations

from functools import cached_property
from typing import Any, Mapping

import libcst as cst

from autograd_lint.analysis import ir
from autograd_lint.analysis.anomaly import Anomaly
from autograd_lint.analysis.carried import Carried
from autograd_lint.analysis.detached_parameters import DetachedParameters
from autograd_lint.analysis.evaluation import Evaluation
from autograd_lint.analysis.grad_blocks import IneffectiveGuards, NoGradBlocks
from autograd_lint.analysis.inplace import Inplace
from autograd_lint.analysis.interp import Program
from autograd_lint.analysis.lower import lower
from autograd_lint.analysis.made_leaf import MadeLeaves
from autograd_lint.analysis.non_leaf import NonLeafTrainables
from autograd_lint.analysis.plain_attributes import PlainAttributes
from autograd_lint.analysis.recompute import Recomputes
from autograd_lint.analysis.resolve import CallRecord, Condition, EntryGradOn, GradNotOff, Resolver
from autograd_lint.analysis.retained import RetainedGraphs
from autograd_lint.analysis.retention import Retention
from autograd_lint.analysis.scaling import Scaling
from autograd_lint.analysis.snapshots import Snapshots
from autograd_lint.analysis.state import Global
from autograd_lint.analysis.steps import Steps
from autograd_lint.analysis.summaries import ModuleSummary, export_class, export_function, exported
from autograd_lint.analysis.tree import structural_children
from autograd_lint.analysis.unregistered import UnregisteredSubmodules
from autograd_lint.analysis.canonical import sorted_canonically
from autograd_lint.analysis.values import GradMode, Sym, Value
from autograd_lint.analysis.unzeroed import Unzeroed
from autograd_lint.analysis.zeroing import Zeroing


class ModuleAnalysis:
    def __init__(
        self, module: cst.Module | None, path: str, options: Mapping[str, Any] | None = None, observe: bool = True, lowered: ir.ModuleIR | None = None
    ) -> None:
        """``observe``: run the rule families (False: only the summary is
        wanted). ``lowered``: the module's IR already at hand (lowered from
        CPython's ast: ``module`` is then None, and only what the rules
        decide from, the summary and the calls can be read)."""
        self.module = module
        self.path = path
        if lowered is None:
            assert module is not None
            lowered = lower(module)
        self.ir = lowered
        self.evaluation = Evaluation(dict(options or {}))
        self.retention = Retention(covered=self.evaluation)
        self.inplace = Inplace()
        self.no_grad_blocks = NoGradBlocks()
        self.ineffective_guards = IneffectiveGuards()
        self.zeroing = Zeroing()
        self.steps = Steps()
        self.snapshots = Snapshots(self.steps)
        self.unzeroed = Unzeroed(self.steps)
        self.scaling = Scaling()
        self.made_leaves = MadeLeaves()
        self.non_leaf = NonLeafTrainables()
        self.carried = Carried()
        self.retained = RetainedGraphs()
        self.unregistered = UnregisteredSubmodules()
        self.plain_attributes = PlainAttributes()
        self.anomaly = Anomaly()
        self.recomputes = Recomputes()
        self.detached_parameters = DetachedParameters()
        # (Evaluation decides before retention: a retention may be a symptom of its findings.)
        observers = [
            self.evaluation, self.retention, self.inplace, self.steps, self.no_grad_blocks, self.ineffective_guards, self.zeroing,
            self.scaling, self.made_leaves, self.non_leaf, self.carried, self.retained, self.unregistered, self.plain_attributes,
            self.snapshots, self.unzeroed, self.anomaly, self.recomputes, self.detached_parameters,
        ] if observe else []
        self.program = Program(self.ir, path, observers)
        self.program.run_all()

    def close(self) -> None:
        """The module's tree, IR and program hold reference cycles (a
        function's enclosing function, helpers that point back at the
        program). Break them when the plain results are taken, so the
        whole is freed at once instead of by the cycle collector, which
        would first walk every node of the tree (a tenth of a cold run).
        The analysis cannot be used after."""
        self.program.close()
        self.ir.unlink()

    def resolver(self, open_world: bool = False) -> Resolver:
        """Decides conditions from this module alone; ``open_world``: other
        modules may call its functions."""
        return Resolver(self.program, closed=not open_world)

    # -- for the rules ---------------------------------------------------------------

    @cached_property
    def parents(self) -> dict[cst.CSTNode, cst.CSTNode]:
        """Each node's parent: built (one extra walk) only when a fix needs
        the statement around a finding."""
        out: dict[cst.CSTNode, cst.CSTNode] = {}
        stack: list[cst.CSTNode] = [self.module]
        while stack:
            n = stack.pop()
            # Whitespace, brackets and operators (most of the nodes) are
            # never what a finding or a fix points at.
            for c in structural_children(n):
                out[c] = n
                stack.append(c)
        return out

    def statement_line(self, node: cst.CSTNode) -> cst.SimpleStatementLine | None:
        """The one-statement line holding ``node`` (None when the line holds
        several statements, or the node is not in a simple statement)."""
        parents = self.parents
        n: cst.CSTNode | None = node
        while n is not None and not isinstance(n, cst.SimpleStatementLine):
            if isinstance(n, cst.BaseCompoundStatement):
                return None
            n = parents.get(n)
        if n is None or len(n.body) != 1:
            return None
        return n

    def enclosing_loop(self, node: cst.CSTNode) -> cst.For | cst.While | None:
        """The innermost loop around ``node`` in its own scope (not beyond
        the function or class that holds it)."""
        parents = self.parents
        n: cst.CSTNode | None = parents.get(node)
        while n is not None and not isinstance(n, (cst.FunctionDef, cst.ClassDef, cst.Lambda, cst.Module)):
            if isinstance(n, (cst.For, cst.While)):
                return n
            n = parents.get(n)
        return None

    @property
    def torch_name(self) -> str | None:
        """The name this file binds to the torch package (`torch`, `th`...)."""
        for name in self.ir.imports:
            if name.level == 0 and name.module == "torch" and name.name is None:
                return name.local
        return None

    # -- for other modules -------------------------------------------------------------

    @cached_property
    def summary(self) -> ModuleSummary:
        prog = self.program
        top = prog.ir.top
        exports: dict[str, Value] = {}
        for name in sorted(top.locals):  # (a set: in an order of its own in each process)
            v = prog.shared.get(Global(name))
            if v:
                exports[name] = exported(v)
        functions = {}
        for f in prog.functions:
            # Nested functions and lambdas too: a factory's value is one.
            if not f.is_module and f.index in prog.summaries:
                functions[f.qualname] = export_function(prog.summaries[f.index])
        classes = {c.qualname: export_class(prog.class_summary(c)) for c in prog.ir.classes}
        imports: dict[tuple[str, int], None] = {}
        for imp in (*prog.ir.imports, *prog.ir.star_imports):
            imports[(imp.module, imp.level)] = None
            if imp.name is not None and imp.name != "*":
                # (`from pkg import sub` may import the module `pkg.sub`.)
                imports[(f"{imp.module}.{imp.name}" if imp.module else imp.name, imp.level)] = None
        return ModuleSummary(self.path, exports, functions, classes, prog.static_grad_memory, tuple(imports))

    @cached_property
    def call_records(self) -> tuple[CallRecord, ...]:
        prog = self.program
        resolver = self.resolver(open_world=True)
        # The records of each call, the calls in the order they were first
        # made: a symbol's call makes one site per symbol the callee may be,
        # in the order of the callee's set of facts, so the records of one
        # call are put in a canonical order (order_cmp).
        calls: dict[int, list[CallRecord]] = {}
        for (_, node_id, _, _), site in prog._call_sites.items():
            if site.callee is not None and not prog.exported(site.callee):
                continue
            if site.callee is None and not any(type(f) is Sym for f in site.target):
                continue
            grad = site.grad
            conds = []
            for c in site.conds:
                if type(c) is EntryGradOn and not prog.exported(c.fn):
                    # A nested caller: its own callers are all here.
                    inner = resolver.entry_mode(c.fn, c.ref)
                    if inner is GradMode.OFF:
                        grad = GradMode.OFF
                    elif inner is GradMode.MAYBE and grad is GradMode.ON:
                        grad = GradMode.MAYBE
                elif type(c) in (EntryGradOn, GradNotOff):
                    conds.append(_export_condition(c))
            record = CallRecord(exported(site.target), grad, tuple(conds))
            same = calls.get(node_id)
            if same is None:
                calls[node_id] = [record]
            else:
                same.append(record)
        out = []
        for same in calls.values():
            out.extend(sorted_canonically(same) if len(same) > 1 else same)
        return tuple(out)


def _export_condition(c: Condition) -> Condition:
    if type(c) is GradNotOff:
        return GradNotOff(exported(c.value), c.decorator)
    return c
