"""The interpreter: one abstract interpretation of a module's IR.

Every function is run over abstract values (values.py) with its parameters
as symbols, so one run gives both what the function does for any caller (its
summary) and what happened inside it (the events observers hear about).
Statements update a frame of typed locations (state.py): branches fork and
join frames, loops run to a fixpoint, ``return``/``raise``/``break`` end a
path. Grad mode is part of the frame; values made under ``no_grad`` carry no
graph. Functions run callees first; a function whose inputs changed after
it ran (a callee's summary, an attribute of ``self``, a module-level name,
a call a later ``.backward()`` proved to build a graph) runs again, up to
``PASSES`` passes in all. Observers hear every run; a re-run first tells
them to ``forget`` what the function's earlier run said.

Alongside values the interpreter records a flow graph between locations
(who feeds whom, down to backward and to returns), the call sites of the
module's functions, and facts about loops (does a loop backpropagate, does
it feed data to a module).

The interpreter lives in modules named for what they hold: program.py
(``Program``: set-up, classes, scheduling, what runs depend on, the flow
graph) and run.py (``Run``: scopes, the run's entry, effects, roots of
expressions), ``Run`` being assembled from one mixin per kind of code:
run_statements.py (statements, narrowing, loops, ``with``),
run_assignment.py, run_expressions.py and run_calls.py; its proofs and the
effects its summary keeps are parts it owns (run_proofs.py). records.py holds the records runs leave on their
program (call sites, loop facts, hooks), syntax_facts.py and value_facts.py
the helpers several of them share. This module names the public ones.
"""

from __future__ import annotations

from autograd_lint.analysis.program import PASSES, InFileLookup, Program
from autograd_lint.analysis.records import EMPTY, CallSite, HookInfo, LoopFacts, Origin
from autograd_lint.analysis.run import Run
from autograd_lint.analysis.run_statements import LOOP_ITERATIONS
from autograd_lint.analysis.syntax_facts import method_class

__all__ = [
    "EMPTY",
    "LOOP_ITERATIONS",
    "PASSES",
    "CallSite",
    "HookInfo",
    "InFileLookup",
    "LoopFacts",
    "Origin",
    "Program",
    "Run",
    "method_class",
]
