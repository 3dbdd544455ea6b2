"""In-place writes and saved tensors, as the interpreter meets them (AGL2xx).

A mixin of provenance.Run: which calls write a tensor in place (`y.mul_()`,
`torch.relu_(y)`, `inplace=True`, `out=`), what each op saves for backward
(read from the torch-generated ledger), and the record of every in-place
write to a tensor that was saved or is a leaf requiring grad.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import libcst as cst

from autograd_lint.analysis.facts import (
    NOTHING,
    ArgGrad,
    GradMode,
    Graph,
    HookArg,
    Instance,
    LeafTensor,
    ModuleValue,
    Param,
    Saved,
    TensorValue,
)
from autograd_lint.analysis.build import VALUES_INDICES
from autograd_lint.analysis.ir import Call, Function, Ref
from autograd_lint.analysis.ledger import inplace_base

if TYPE_CHECKING:
    from autograd_lint.analysis.provenance import Run as _Run
else:
    _Run = object


@dataclass
class Mutation:
    """An in-place write, with what was known of the tensor written."""

    fn: Function
    path: str
    node: cst.CSTNode
    how: str
    via: str  # "", "data", "detach"
    grad: GradMode
    facts: frozenset
    in_forward: bool = False


# Methods ending in `_` that do not write the tensor's data.
NOT_WRITES = frozenset({"requires_grad_", "share_memory_", "detach_", "retain_grad_", "record_stream_", "names_"})


def j_ok(positional: tuple, inputs: frozenset) -> bool:
    """Does the op save two or more of its positional operands?"""
    return sum(1 for p in positional if p in inputs) >= 2


class InplaceTracking(_Run):
    """The in-place part of the interpreter (see provenance.Run)."""

    def call_writes(self, c: Call) -> None:
        """Record the in-place writes a call makes: ``y.mul_(2)``,
        ``torch.relu_(y)``, ``F.relu(y, inplace=True)``, ``relu(y)`` with
        ``relu = nn.ReLU(inplace=True)``, ``torch.mul(a, b, out=y)``."""
        if c.op is not None:
            return
        m = c.method
        if m is not None and c.recv_root is not None and inplace_base(m) and m not in NOT_WRITES and not self._is_module_path(c):
            self.mutate(c.recv_root, c.node, f"{m}()", c.recv_via)
        qual = self.qual_of(c)
        if qual is not None and qual.startswith("torch."):
            last = qual.rsplit(".", 1)[-1]
            if c.arg0_write and inplace_base(last) and qual.count(".") == 1 and last not in NOT_WRITES:
                self.mutate(c.arg0_write, c.node, f"{qual.split('.', 1)[1]}()", "")
            elif "inplace" in c.true_kwargs and qual.startswith("torch.nn.functional.") and c.arg0_write:
                self.mutate(c.arg0_write, c.node, f"{last}(inplace=True)", "")
        if c.out_root is not None:
            self.mutate(c.out_root, c.node, "out=", "")
        if c.arg0_write and (m is None or c.callee_path == f"{self.self_name}.{m}"):
            callee_f, _ = self.val(c.callee)
            mod = [f for f in callee_f if type(f) is ModuleValue and f.inplace]
            if mod:
                self.mutate(c.arg0_write, c.node, f"{mod[0].qual.rsplit('.', 1)[-1] if mod[0].qual else 'module'}(inplace=True)", "")

    def _is_module_path(self, c: Call) -> bool:
        return c.callee_path is not None and self.qual_of(c) is not None and not self.qual_of(c).startswith("torch.Tensor")

    def forward_saved_attrs(self, c: Call, callee_f: frozenset) -> None:
        """Calling an in-file module saves what its forward saves of its own
        attributes (`critic.w1` after `critic(x)`), until backward."""
        if self.grad is GradMode.OFF or not c.callee_path:
            return
        for f in callee_f:
            if type(f) is Instance and f.cls in self.prog.ir.classes:
                fam = self.prog.family(self.prog.ir.classes[f.cls])
                for attr in self.prog.forward_saves.get(fam, ()):
                    k = ("a", self.key(c.callee_path), attr)
                    self.env[k] = self.env.get(k, NOTHING) | {Saved(c.node, f"{f.cls}.forward", self.fn.id)}

    def attr_facts(self, path: str) -> frozenset:
        """Facts of a dotted path, following attributes through instances of
        in-file classes and modules: `model.embedding.weight` is a leaf when
        `model` is a `BagOfWords` whose `embedding` is an `nn.Embedding`."""
        parts = path.split(".")
        if len(parts) == 1 or (parts[0] == self.self_name and len(parts) == 2):
            return self.lookup(self.key(path))
        if parts[0] == self.self_name:
            k = self.key(".".join(parts[:2]))
            rest = parts[2:]
        else:
            k = self.key(parts[0])
            rest = parts[1:]
        facts = self.lookup(k)
        for attr in rest:
            k = ("a", k, attr)
            nxt: frozenset = self.env.get(k, NOTHING)
            for f in facts:
                if type(f) is Instance and f.cls in self.prog.ir.classes:
                    fam = self.prog.family(self.prog.ir.classes[f.cls])
                    nxt = nxt | self.prog.shared.get(("c", fam, attr), NOTHING)
                elif type(f) is ModuleValue and f.parametric and f.qual and attr in ("weight", "bias"):
                    nxt = nxt | {LeafTensor(f.qual)}  # type: ignore[arg-type]
            facts = nxt
            if not facts:
                break
        return facts

    def mutate(self, path: str, node: cst.CSTNode, how: str, via: str) -> None:
        if not self.prog.recording:
            return
        if self.taint:
            self.use_tainted(self.key(path))
        k = self.key(path)
        facts = self.attr_facts(path)
        if self.blocks and k not in self.blocks[-1].created:
            # A tensor method (`p.mul_()`) always writes tensor memory; `n += 1`
            # or `d[k] = v` only when n/d is known to be a tensor.
            tensor_write = how.endswith("()") or how in ("out=",) or how.endswith("(inplace=True)")
            if tensor_write or any(type(f) in (Graph, LeafTensor, TensorValue, ArgGrad) for f in facts):
                self.blocks[-1].writes_outer = True
        if not any(type(f) in (Saved, LeafTensor) for f in facts):
            return
        key = (node, path)
        if key not in self.prog.mutations:
            self.prog.mutations[key] = Mutation(self.fn, path, node, how, via, self.grad, facts, self.in_forward)
        else:
            old = self.prog.mutations[key]
            old.facts = old.facts | facts

    def saving(self, c: Call, facts: frozenset) -> frozenset:
        """What the op saves for backward, from the ledger: mark the saved
        inputs' names, and the result when the op saves it."""
        if self.grad is GradMode.OFF:
            return facts
        if self.taint:
            for a in (*c.args, c.receiver or ()):
                for atom in a:
                    if type(atom) is Ref:
                        self.use_tainted(self.key(atom.path))
        entry, positional = self.ledger_entry(c)
        if entry is None:
            # A model or block we cannot see into: its first layer (Linear,
            # Conv, Embedding...) saves the input.
            mods = [f for f in self._modules_called(c) if f.parametric]
            if mods and not self._module_of(c) and c.arg_roots and c.arg_roots[0]:
                k = self.key(c.arg_roots[0])
                self.env[k] = self.lookup(k) | {Saved(c.node, "module input", self.fn.id)}
            return facts
        if not entry.saves:
            return facts
        arg_facts = [self.val(a)[0] for a in c.args]
        if c.method is not None and c.op is None and c.receiver is not None and positional and positional[0] == "self" and entry.name.startswith("Tensor."):
            arg_facts = [self.val(c.receiver)[0]] + arg_facts
            roots = (c.recv_saved,) + tuple(c.arg_roots)
        else:
            roots = tuple(c.arg_roots)
        module_params = bool(self._module_of(c))
        grads = [self.needs_grad(f) for f in arg_facts]
        if not any(grads) and not module_params:
            return facts
        saved = Saved(c.node, entry.name, self.fn.id)
        inputs = entry.saved_inputs
        for i, name in enumerate(positional):
            if not name or name not in inputs or i >= len(roots) or not roots[i]:
                continue
            # Of two saved operands (a * b), each is kept for the other's
            # gradient: saved only when the other one requires grad.
            others = [g for j, g in enumerate(grads) if j != i and j < len(positional) and positional[j] in inputs] if j_ok(positional, inputs) else []
            if others and not any(others) and not module_params:
                continue
            k = self.key(roots[i])
            self.env[k] = self.lookup(k) | {saved}
            if k[0] == "c" and self.fn.name == "forward":
                self.prog.forward_saves.setdefault(k[1], set()).add(k[2])
        # (values, indices) ops save the indices, not the values a caller
        # unpacks first and normalises in place (MoE routers).
        if entry.saves_result and entry.name.rsplit(".", 1)[-1] not in VALUES_INDICES:
            facts = facts | {Saved(c.node, entry.name, self.fn.id, result=True)}
        return facts

    CONTAINERS = frozenset({"torch.nn.ModuleList", "torch.nn.ModuleDict", "torch.nn.Sequential"})

    def _modules_called(self, c: Call) -> list:
        if c.op is not None or (c.method is not None and c.callee_path != f"{self.self_name}.{c.method}"):
            return []
        callee_f, _ = self.val(c.callee)
        return [f for f in callee_f if type(f) is ModuleValue]

    def _module_of(self, c: Call) -> list:
        return [f for f in self._modules_called(c) if f.qual and f.qual not in self.CONTAINERS]

    def ledger_entry(self, c: Call):
        ledger = self.prog.ledger
        if c.op is not None:
            e = ledger.get(c.op)
            return e, (e.positional if e else ())
        qual = self.qual_of(c)
        if qual is not None and qual.startswith("torch."):
            e = ledger.get(qual)
            if e is not None:
                return e, e.positional
            return None, ()
        mods = self._module_of(c)
        if mods:
            # Several modules may stand here (`for layer in self.layers`):
            # rely only on what they all save.
            entries = {m.qual: ledger.get(m.qual) for m in mods}
            if len(entries) > 1:
                known = [e for e in entries.values() if e is not None]
                if len(known) != len(entries) or len({(e.saves, e.positional) for e in known}) > 1:
                    return None, ()
            e = next(iter(entries.values()))
            return e, (e.positional if e else ())
        if c.method is not None and c.receiver is not None:
            recv_f = self.val(c.receiver)[0]
            if any(type(f) in (Graph, LeafTensor, HookArg, Saved) for f in recv_f) or self.needs_grad(recv_f):
                e = ledger.get(f"Tensor.{c.method}")
                if e is not None:
                    return e, e.positional
        return None, ()

    def needs_grad(self, facts: frozenset) -> bool:
        """May this value require grad? Known graphs and leaves do; so do a
        module method's tensor arguments (activations, in practice)."""
        for f in facts:
            t = type(f)
            if t is Graph or t is LeafTensor or t is HookArg:
                return True
            if t is ArgGrad:
                return True
            # forward()'s (first) input is an activation in practice.
            if t is Param and self.in_forward and f.index == 1:
                return True
        return False
