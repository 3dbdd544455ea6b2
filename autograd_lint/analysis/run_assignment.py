"""How a run binds values: assignments to names, attributes and items,
accumulations (``total = total + loss``), augmented assignments, and the
flow nodes and proof records a binding leaves. The ``AssignmentMixin`` part
of ``Run``, with the helpers only it uses."""

from __future__ import annotations

from autograd_lint.analysis import api, ir
from autograd_lint.analysis import torch_api as lib
from autograd_lint.analysis.api import ASSIGNED_INSTEAD, LEAF_ONLY, Gives
from autograd_lint.analysis.paths import is_static
from autograd_lint.analysis.observer import Accumulate, SetAttribute, Store
from autograd_lint.analysis.state import AttrOf, Def, ClassAttr, Global, Local, Loc
from autograd_lint.analysis.summaries import Retain
from autograd_lint.analysis.tensor_ops import binop, op
from autograd_lint.analysis.transfer import call_qual, find_method, iterate, unpack
from autograd_lint.analysis.joins import join
from autograd_lint.analysis.values import (
    NOTHING,
    Container,
    FunctionObj,
    Graph,
    HookArg,
    Instance,
    Leaf,
    ParamRoot,
    Plain,
    Part,
    Saved,
    TENSOR,
    TENSOR_FACTS,
    Sym,
    Value,
    attached,
    container,
    plain_only,
    tensorish,
)
from autograd_lint.analysis.records import EMPTY, _LoopContext
from autograd_lint.analysis.run_proofs import _proof_shape, computing_contexts, open_contexts
from autograd_lint.analysis.syntax_facts import _NO_LITERAL, _literal, _root_name, _tensor_index, sum_operands


class AssignmentMixin:
    """Assignment of ``Run`` (run.py)."""

    # -- assignment ---------------------------------------------------------------

    def assign(self, s: ir.Assign) -> None:
        self.last_comp = None
        v, src = self.ev(s.value)
        comp = self.last_comp if type(s.value) is ir.Comp and s.value.kind != "gen" else None
        if s.annotation:
            extra = self.annotated(s.annotation)
            if extra and not v:
                v = frozenset(extra)
        for target in s.targets:
            acc = self._accumulated(target, s.value)
            if acc is not None:
                operand, operand_node = acc
                av, asrc = self.ev(operand) if operand is not s.value else (v, src)
                self.accumulate(target, av, asrc, s.node, operand_node)
                if type(target) is not ir.Name:
                    continue
                # `running = running + loss` extends, it does not re-create.
                self.bind(self.loc(target.id), v, src, s.node, s.value, rebinds=False)
                continue
            self.assign_to(target, v, src, s.node, s.value)
            if comp is not None and type(target) in (ir.Name, ir.Attr):
                self._comprehension_store(target, comp, s.node)

    def _comprehension_store(self, target: ir.Expr, comp: tuple, node: object) -> None:
        """``xs = [f(b) for b in loader]``: a store into ``xs`` over the
        comprehension's loop."""
        loop, v, vs, elt_node = comp
        loc = self.loc(target.id) if type(target) is ir.Name else self.attr_loc(target)  # type: ignore[attr-defined]
        if loc is None:
            return
        lf = self.prog.loop_facts[loop]
        self.loops.append(_LoopContext(lf))
        at = self.point(node)
        self.loops.pop()
        e = Store(at, loc, ir.dotted(target) or "?", v, vs, elt_node, "comprehension", False)
        for o in self.prog.listening["store"]:
            o.store(self, e)

    def _accumulated(self, target: ir.Expr, value: ir.Expr) -> tuple[ir.Expr, object] | None:
        """``t = t + v``: an accumulation, whatever the spelling (the
        target is one of the operands of a chain of + and -, maybe scaled
        by a constant: ``ema = 0.9 * ema + 0.1 * loss``); a running
        extreme (``best = torch.max(best, v)``); either branch of
        ``v if t is None else t + v``. The new value is computed from the
        old one: what it holds chains across iterations."""
        text = ir.dotted(target)
        if text is None:
            return None
        if type(value) is ir.IfExp:
            # What to detach is the whole choice: its first branch (`loss`)
            # would start the chain again.
            acc = self._accumulated(target, value.orelse) or self._accumulated(target, value.body)
            return (acc[0], value.node) if acc is not None else None
        if type(value) is ir.Call:
            if value.has_star or any(a.keyword is not None for a in value.args):
                return None
            args = [a.value for a in value.args]
            qual = call_qual(*self._callee_parts(value.func))
            if len(args) == 2 and text in (ir.dotted(args[0]), ir.dotted(args[1])) and qual in lib.RUNNING_EXTREMES:
                other = args[1] if ir.dotted(args[0]) == text else args[0]
                return other, other.node
            # `torch.lerp(avg, v, w)`, or a function of this module that
            # moves one argument toward another (`ema(avg, v, d)`): the
            # update chains through what it moves toward.
            pairs = [lib.RUNNING_UPDATES[qual]] if qual in lib.RUNNING_UPDATES else self._update_pairs(value.func)
            for i, j in pairs:
                if j < len(args):
                    if ir.dotted(args[i]) == text:
                        return args[j], args[j].node
                    if qual not in lib.RUNNING_UPDATES and ir.dotted(args[j]) == text:
                        return args[i], args[i].node
            return None
        rest = self._added_to(text, value, ir.dotted)
        if rest is None:
            return None
        if len(rest) == 1:
            return rest[0], rest[0].node
        # Several operands: the value added is the whole expression's.
        return value, value.node

    def _update_pairs(self, func: ir.Expr) -> tuple[tuple[int, int], ...]:
        """The running-update pairs of the function of this module that
        ``func`` names (``FunctionSummary.updates``)."""
        if type(func) is ir.Attr and self.self_attr(func) is not None and self.fn.cls is not None:
            # `self.ema(...)`: a method of this class (its first parameter
            # the receiver, unless static).
            method = self.prog.find_method_ir(self.fn.cls, func.attr)
            if method is None:
                return ()
            shift = 0 if is_static(method) else 1
            return tuple((i - shift, j - shift) for i, j in self.prog.update_pairs(method) if min(i, j) >= shift)
        if type(func) is not ir.Name or func.id in self.comp:
            return ()
        fv = self.read(self.loc(func.id))
        out: set[tuple[int, int]] = set()
        for f in fv:
            if type(f) is FunctionObj:
                summary = self.prog.lookup.function(f.fn)
                if summary is not None:
                    # (A bound method's first parameter is its receiver.)
                    shift = 1 if f.bound is not None else 0
                    out.update((i - shift, j - shift) for i, j in summary.updates if min(i, j) >= shift)
        return tuple(sorted(out))

    def _added_to(self, text: str, value: ir.Expr, key) -> list[ir.Expr] | None:
        """The operands of the sum ``value`` other than ``text`` (maybe
        scaled by a constant), when it is one of them (``key``: how an
        operand is named); None when it is not such a sum."""
        operands = sum_operands(value)
        if operands is None:
            return None
        rest = [o for o in operands if key(self._unscaled(o, text, key)) != text]
        if len(rest) == len(operands) or not rest:
            return None
        return rest

    def written_into(self, base: ir.Expr, value: ir.Expr, v: Value) -> tuple[Value, object]:
        """What a write of ``value`` into tensor ``base`` in place brings in
        of its own, and its node: ``buf[:] = 0.9 * buf + 0.1 * m`` and
        ``buf.copy_(buf + m)`` bring ``m`` (what the tensor held, it keeps
        anyway); any other value, all of it (``v``)."""
        text = _root_text(base)
        rest = self._added_to(text, value, _root_text) if text is not None else None
        if rest is None:
            return v, value.node
        out: Value = NOTHING
        for o in rest:
            out = join(out, self.ev(o)[0])
        return out, (rest[0].node if len(rest) == 1 else value.node)

    def _unscaled(self, e: ir.Expr, target: str, key=ir.dotted) -> ir.Expr:
        """``t`` of ``t`` times a factor that is not a tensor (``0.9 * t``,
        ``(1 - self.alpha) * t``: a running average), else ``e``. (``h *
        gate`` with a tensor ``gate`` is a recurrence, not a total.)"""
        if type(e) is not ir.BinOp or e.op != "mul":
            return e
        for mine, other in ((e.left, e.right), (e.right, e.left)):
            if key(mine) == target:
                reads = _factor_reads(other)
                # (That an op saved an unknown value, if it is a tensor, says
                # nothing of its kind.)
                if reads is not None and not any(type(f) in TENSOR_FACTS and type(f) is not Saved for r in reads for f in self.ev(r)[0]):
                    return mine
        return _unscaled(e)

    def assign_to(self, target: ir.Expr, v: Value, src: frozenset, node: object, value_expr: ir.Expr | None) -> None:
        t = type(target)
        if t is ir.Name:
            self.bind(self.loc(target.id), v, src, node, value_expr)
        elif t is ir.Attr:
            self.assign_attr(target, v, src, node, value_expr)
        elif t is ir.Subscript:
            self.assign_item(target, v, src, node, value_expr)
        elif t is ir.Seq:
            els = target.elts
            if type(value_expr) is ir.Seq and len(value_expr.elts) == len(els) and not any(type(e) is ir.Starred for e in (*els, *value_expr.elts)):
                # `a, b = x, f(x)`: each name gets its own value.
                for el, ve in zip(els, value_expr.elts):
                    ev, es = self.ev(ve)
                    self.assign_to(el, ev, es, node, ve)
                return
            parts = unpack(v, len(els), self.site(node)) if not any(type(e) is ir.Starred for e in els) else None
            item = iterate(v, self.site(node)) if parts is None else None
            for i, el in enumerate(els):
                if parts is not None and plain_only(parts[i]):
                    # (A number unpacked beside what the sources made carries
                    # none of them: `for i, s in enumerate(scores)` gives `i`
                    # only a position.)
                    self.assign_to(el, parts[i], EMPTY, node, None)
                    continue
                if type(el) is ir.Starred:
                    self.assign_to(el.value, container("list", elem=item if item is not None else NOTHING), src, node, None)
                elif type(el) is ir.Name and type(value_expr) is ir.Call:
                    # `recon, kl = model(x)`: each name is read from the call
                    # (for proofs: a backward of `recon` proves the call).
                    self.bind(self.loc(el.id), parts[i] if parts is not None else (item or NOTHING), src, node, value_expr, position=i)
                else:
                    part = parts[i] if parts is not None else (item or NOTHING)
                    if type(value_expr) is ir.Call:
                        # A backward proved the call through a name it bound:
                        # not what it puts anywhere else (`costs[i]`).
                        part = frozenset(f for f in part if not (type(f) is Graph and f.how == "backward" and f.node is value_expr.node))
                    self.assign_to(el, part, src, node, None)
        elif t is ir.Starred:
            self.assign_to(target.value, v, src, node, None)

    def bind(self, loc: Loc, v: Value, src: frozenset, node: object, value_expr: ir.Expr | None, rebinds: bool = True, position: int | None = None) -> None:
        """``loc = value_expr`` (``position``: ``loc`` is that item of it:
        ``a, loc = value_expr``)."""
        prog = self.prog
        pt = prog.proven_targets
        if pt and type(value_expr) is ir.Call:
            # `loss, acc = step(...)`: only `loss` is proven attached by
            # `loss.backward()` (a dict all of whose values were summed into
            # the loss: each is). What is made of `loss` later (`total =
            # loss`, `loss * 2`) holds its graph.
            call = value_expr.node
            drop = [f for f in v if type(f) is Graph and f.how == "backward" and f.node is call and loc not in pt.get(id(call), (loc,)) and call not in prog.proven_values]
            if drop:
                v = v - frozenset(drop)
        if prog.proven_binds and Def(loc, id(node)) in prog.proven_binds and not plain_only(v) and not attached(v):
            v = v | {Graph(node, self.index, "backward")}
        self.write(loc, v)
        if rebinds:
            self.mark_rebind(loc)
        # (What the value was read from, before this binding is what the
        # name holds: `x = x + 1` reads the earlier `x`.)
        shape = _proof_shape(value_expr, self) if value_expr is not None else ((), ())
        # A view or another name for a tensor (`tok = x[:, 0]`, `cur = h`):
        # one storage, one version counter. Names bound before now to what
        # `loc` held name a tensor it no longer holds.
        base = self.saved_root(value_expr) if value_expr is not None and type(value_expr) in (ir.Subscript, ir.Call, ir.Attr, ir.Name) else None
        for k in [k for k, b in self.views.items() if b == loc]:
            del self.views[k]
        if base is not None and base != loc and not plain_only(v) and (type(value_expr) is not ir.Name or tensorish(v)):
            self.views[loc] = self.views.get(base, base)
        else:
            self.views.pop(loc, None)
        flow = self.defined(loc, node, src)
        for f in v:
            if type(f) is Saved and f.result:
                prog.saved_outputs.setdefault(f.node, set()).add(flow)
        if type(value_expr) in (ir.BinOp, ir.Call) and tensorish(v):
            # (The op bound here may have saved its inputs: where its output
            # goes is where a backward through it would start.)
            prog.op_outputs.setdefault(value_expr.node, set()).add(flow)  # type: ignore[union-attr]
        for lc in self.loops:
            if not lc.items.isdisjoint(src) or loc in lc.facts.targets:
                lc.items.add(loc)
                lc.items.add(flow)
        if prog.listening["bind"]:
            alias = value_expr is None or type(value_expr) in (ir.Name, ir.Attr)
            for o in prog.listening["bind"]:
                o.bind(self, loc, v, src, alias)
        self.proofs.binds.append((loc,) + shape + (False, position, flow, computing_contexts(value_expr, self)))

    def defined(self, loc: Loc, node: object, src: frozenset) -> object:
        """``loc`` is bound at ``node`` from ``src``: the flow node of this
        binding. A local of this function (not one a nested function reads)
        gets one of its own, which its later reads see until the next
        binding; anything else is one node for all its bindings."""
        prog = self.prog
        if self.fn.is_module and type(loc) is Global:
            # A script's name: each binding its own node, as a function's
            # local (the validation loop's `outputs` is not the training
            # loop's). The functions reading the global read every binding.
            d = Def(loc, id(node))
            for x in src:
                prog.edge(x, d)
            prog.edge(loc, d)
            prog.global_defs.setdefault(loc, set()).add(d)
            self.frame.defs[loc] = frozenset({d})
            return d
        if self.fn.is_module or type(loc) is not Local or loc.fn != self.index or (loc.fn, loc.name) in prog.captured:
            for x in src:
                prog.edge(x, loc)
            return loc
        d = Def(loc, id(node))
        for x in src:
            prog.edge(x, d)
        # What is done to the object later (`xs.append(v)`) reaches what
        # reads this binding.
        prog.edge(loc, d)
        self.frame.defs[loc] = frozenset({d})
        return d

    def _stored(self, container: Loc, value_expr: ir.Expr) -> None:
        """For proofs: ``xs.append(call(...))`` or ``xs[i] = call(...)`` puts
        what the call made into ``xs``; a backward of an element of ``xs``
        shows the call builds a graph."""
        self.proofs.binds.append((container,) + _proof_shape(value_expr, self) + (True, None, container, computing_contexts(value_expr, self)))

    def mark_rebind(self, loc: Loc) -> None:
        # Only an unconditional rebinding re-creates a container every
        # iteration; `if step % n == 0: losses = []` keeps n iterations' worth.
        for lc in self.loops:
            if self.branch == lc.facts.branch:
                lc.facts.rebinds.add(loc)

    def self_attr(self, e: ir.Expr) -> str | None:
        """``attr`` for ``self.attr`` in a method (or a function nested in one)."""
        if type(e) is ir.Attr and type(e.value) is ir.Name and self.self_name is not None and e.value.id == self.self_name and self.family is not None:
            if self.loc(self.self_name) == Local(self.index, self.self_name) or self.fn.cls is None:
                return e.attr
        return None

    def attr_loc(self, e: ir.Attr) -> Loc | None:
        attr = self.self_attr(e)
        if attr is not None:
            return ClassAttr(self.family, attr)  # type: ignore[arg-type]
        base = self.root_loc(e.value) if type(e.value) in (ir.Name, ir.Attr) else None
        return AttrOf(base, e.attr) if base is not None else None

    def assign_attr(self, target: ir.Attr, v: Value, src: frozenset, node: object, value_expr: ir.Expr | None) -> None:
        listeners = self.prog.listening["set_attribute"]
        # (`self.requires_grad = False` in a module class's method sets a
        # plain attribute on the module too, unless the class keeps a flag
        # of that name: the observer asks. `self.grad = ...` is a field.)
        if listeners and (target.attr in ASSIGNED_INSTEAD or (target.attr in LEAF_ONLY and self.self_attr(target) is None)) and _reads_only(target.value):
            # (Before the store: `x.requires_grad = True` below changes what `x` is.)
            receiver = self.ev(target.value)[0]
            e = SetAttribute(self.point(node), receiver, target, value_expr)
            for o in listeners:
                o.set_attribute(self, e)
        if target.attr == "requires_grad" and type(value_expr) is ir.Const and (path := ir.dotted(target.value)) is not None:
            if value_expr.value is False:
                self.flag_off.add(path)
            else:
                self.flag_off.discard(path)
        if target.attr == "requires_grad" and type(value_expr) is ir.Const and value_expr.value is True:
            # `x.requires_grad = True` makes x a leaf that requires grad: the
            # code asks for a graph from here on.
            root = self.root_loc(target.value)
            if root is not None:
                self.write(root, join(self.read(root), frozenset({Leaf(node, self.index)})))
            self.forced = True
            return
        self.ev(target.value)
        loc = self.attr_loc(target)
        if loc is None:
            return
        is_self = type(loc) is ClassAttr
        if is_self:
            self.write(loc, v)
            self.mark_rebind(loc)
        else:
            self.write(loc, v, strong=False)
        for x in src:
            self.prog.edge(x, loc)
        e = Store(self.point(node), loc, ir.dotted(target) or target.attr, v, src, value_expr.node if value_expr is not None else target.node, "attribute", True)
        for o in self.prog.listening["store"]:
            o.store(self, e)

    def assign_item(self, target: ir.Subscript, v: Value, src: frozenset, node: object, value_expr: ir.Expr | None) -> None:
        base, bsrc = self.ev(target.value)
        key_expr = target.key
        key = _literal(key_expr) if key_expr is not None else _NO_LITERAL
        kv, ksrc = self.ev(key_expr) if key_expr is not None else (NOTHING, EMPTY)
        if key_expr is not None and value_expr is not None and type(target.value) in (ir.Name, ir.Attr) and self._own_setitem(base):
            # `stats["loss"] = loss` on an object whose class defines
            # `__setitem__` (a collector that appends): that method runs.
            args = (ir.Arg(ir.Evaluated(kv, ksrc, key_expr.node)), ir.Arg(ir.Evaluated(v, src, value_expr.node)))
            self.calls.call(ir.Call(ir.Attr(target.value, "__setitem__", target.node), args, node))  # type: ignore[arg-type]
            return
        # `y[:, 0] = 0` writes tensor y in place.
        if tensorish(base) or any(type(f) in (Sym,) for f in base) or (not base and _tensor_index(target)):
            root, path, via = self.view_root(target)
            if root is not None and (tensorish(base) or _tensor_index(target)):
                rhs, rhs_node = self.written_into(target, value_expr, v) if value_expr is not None else (v, None)
                self.mutate(root, path, node, "[...] =", via, rhs, rhs_node=rhs_node)
                # `out[:] = model(x)`: the tensor now holds what was written,
                # graph and all (CopySlices), wherever it is read next.
                graphs = frozenset(f for f in op(v, self.site(node)) if type(f) is Graph or type(f) is HookArg)
                if graphs and not via:
                    self.write(root, join(self.read(root), graphs), strong=False)
        root = self.root_loc(target.value)
        if root is None:
            return
        overwrites = key is not _NO_LITERAL or self._key_is_fixed(key_expr)
        if any(type(f) is Container or type(f) is Part for f in base) and type(target.value) in (ir.Name, ir.Attr):
            self._update_item(root, key, v)
        for x in src:
            self.prog.edge(x, root)
        if value_expr is not None:
            self._stored(root, value_expr)
        text = ir.dotted(ir.container_root(target.value)) or "?"
        e = Store(self.point(node), root, text, v, src, value_expr.node if value_expr is not None else target.node, "subscript", overwrites)
        for o in self.prog.listening["store"]:
            o.store(self, e)
        if not overwrites and (type(root) is not Local or root.fn != self.index or _root_name(target.value) in self.fn.param_names):
            self._keeps_param(v, "store", text, self._param_index(target.value))

    def _own_setitem(self, base: Value) -> bool:
        lookup = self.prog.lookup
        return any(type(f) is Instance and find_method(f.cls, "__setitem__", lookup) is not None for f in base)

    def _key_is_fixed(self, key_expr: ir.Expr | None) -> bool:
        """A key that names one of a fixed set of slots: a name bound to a
        constant, or the key of iterating over a dict's items."""
        if type(key_expr) is not ir.Name:
            return False
        v = self.read(self.loc(key_expr.id))
        # (A key of a dict its callers give: `for key, audio in
        # review["audios"].items()` of a parameter, whatever the analysis
        # makes of a key it cannot see.)
        return bool(v) and all((type(f) is Plain and f.kind == "str") or type(f) is Sym or f is TENSOR for f in v) and self._from_dict_keys(key_expr.id)

    def _from_dict_keys(self, name: str) -> bool:
        for lc in self.loops:
            if Local(self.index, name) in lc.facts.targets and lc.facts.iter_text and lc.facts.iter_text.endswith((".items", ".keys")):
                return True
        return False

    def _update_item(self, loc: Loc, key: object, v: Value) -> None:
        old = self.read(loc)
        out = []
        for f in old:
            if type(f) is Part and f.key == key:
                continue  # replaced
            if type(f) is Container:
                if isinstance(key, (str, int)) and not isinstance(key, bool) and f.kind in ("dict", "list", "tuple"):
                    items = tuple((k, x) for k, x in f.items if k != key) + ((key, v),)
                    out.append(Container(f.kind, items, f.elem))
                else:
                    out.append(Container(f.kind, f.items, join(f.elem, v)))
            else:
                out.append(f)
        self.write(loc, frozenset(out), strong=type(loc) is Local)

    def _callee_parts(self, func: ir.Expr) -> tuple[str | None, Value | None, Value]:
        """(method, receiver, callee) of a call's function, for its qualified
        name. Only names and attributes are read (no effects); anything
        else has no qualified name here."""
        if type(func) is ir.Attr and ir.dotted(func.value) is not None:
            recv, _ = self.ev(func.value)
            return func.attr, recv, NOTHING
        if type(func) is ir.Name:
            callee, _ = self.ev(func)
            return None, None, callee
        return None, None, NOTHING

    def _augmented(self, target: ir.Expr) -> tuple[Loc | None, str]:
        """What ``target op= ...`` updates (the container of ``d[k]``) and
        how it is written."""
        held = target.value if type(target) is ir.Subscript else target
        return self.root_loc(held), ir.dotted(held) or "?"

    def accumulate(self, target: ir.Expr, v: Value, src: frozenset, node: object, value_node: object) -> None:
        held = target.value if type(target) is ir.Subscript else target
        if type(held) is ir.Attr and api.member(api.TENSOR, held.attr, attribute=True).gives is Gives.DETACHED:
            # (`param.data -= lr * g`, `param.data.sub_(lr * g)`: `.data` is a
            # new alias at each read; the graph an attached operand brings
            # stays on that alias, which nothing keeps. The values land in
            # the storage, no graph does.)
            return
        root, text = self._augmented(target)
        if root is None:
            return
        for x in src:
            self.prog.edge(x, root)
        e = Accumulate(self.point(node), root, text, v, src, value_node)
        for o in self.prog.listening["accumulate"]:
            o.accumulate(self, e)
        if type(root) is not Local or root.fn != self.index:
            self._keeps_param(v, "accumulate", text, self._param_index(target))

    def _extend(self, target: ir.Expr, v: Value, src: frozenset, node: object, value: ir.Expr) -> None:
        """``xs += items``: each item is stored in the list ``xs``."""
        root, text = self._augmented(target)
        if root is None:
            return
        for x in src:
            self.prog.edge(x, root)
        # (`+= [loss]`: the message and the fix name `loss`.)
        shown = value.elts[0] if type(value) is ir.Seq and len(value.elts) == 1 else value
        e = Store(self.point(node), root, text, iterate(v, self.site(node)), src, shown.node, "extend", False)
        for o in self.prog.listening["store"]:
            o.store(self, e)
        if type(root) is not Local or root.fn != self.index:
            self._keeps_param(v, "store", text, self._param_index(target))

    def _param_index(self, e: ir.Expr) -> int | None:
        name = _root_name(e)
        if name is None:
            return None
        if name == self.self_name:
            return 0
        names = self.fn.param_names
        return names.index(name) if name in names and self.loc(name) == Local(self.index, name) else None

    def _keeps_param(self, v: Value, kind: str, into: str, into_param: int | None) -> None:
        """A value derived from a parameter kept beyond the call: part of
        the function's summary (a meter's ``update``)."""
        if self.fn.name in lib.ONCE_METHODS:
            return
        if any(type(f) is Sym and type(f.root) is ParamRoot and f.root.fn == self.index for f in v):
            rebound = self.prog.rebound.get(self.index, ())
            kept = frozenset(f for f in v if type(f) is Sym and type(f.root) is ParamRoot and f.root.fn == self.index)
            for f in kept:
                # A parameter the helper rebinds (`val = val.item()`) is not
                # kept as given.
                if self.fn.params[f.root.index].name in rebound:
                    continue
                r = Retain(f.root.index, kind, into, into_param)
                if r not in self.keeps:
                    self.keeps.append(r)

    def _unbound(self, name: str) -> bool:
        """The local ``name`` is bound on no path that reaches here (nor a
        parameter, nor a name of an enclosing scope)."""
        loc = self.loc(name)
        return type(loc) is Local and loc.fn == self.index and name not in self.fn.param_names and not self.fn.is_module and loc not in self.frame.defs and (loc.fn, loc.name) not in self.prog.captured

    def aug_assign(self, s: ir.AugAssign) -> None:
        v, src = self.ev(s.value)
        target = s.target
        how = {"add": "+=", "sub": "-=", "mul": "*=", "truediv": "/=", "pow": "**=", "matmul": "@=", "floordiv": "//=", "mod": "%="}.get(s.op, "op=")
        old, osrc = self.ev(target)
        if type(target) is ir.Name and not old and self._unbound(target.id):
            # `acc += x` where no path has bound `acc` raises: not a path
            # the program takes (`if i == 0: acc = x` / `else: acc += x`,
            # first iteration), so what it would make joins nothing.
            self.frame.reachable = False
            return
        # On a tensor, `y += 1` writes y in place.
        if type(target) is ir.Name or type(target) is ir.Attr or type(target) is ir.Subscript:
            root, path, via = self.view_root(target)
            if root is not None and (tensorish(old) or (type(target) is ir.Subscript and _tensor_index(target)) or not plain_only(old)):
                # (`feats[0] += x` writes the list's element: what that
                # element is, not what the list is.)
                element = type(target) is ir.Subscript and any(type(f) is Container for f in self.read(root))
                self.mutate(root, path, s.node, how, via, v, facts=old if element else None)
            elif root is None and type(target) is ir.Subscript and type(target.value) is ir.Name and target.value.id not in self.comp and tensorish(old):
                # An element of a list (`feats[0] += x`): it is written, and
                # it may be what an op saved. Which element: one written
                # at a literal index, or any of a list whose elements were
                # all made alike (appended, or by one comprehension).
                key = target.key
                literal = type(key) is ir.Const and type(key.value) is int
                holder = self.loc(target.value.id)
                if literal or all(not f.items for f in self.read(holder) if type(f) is Container):
                    index = repr(key.value) if literal else "..."
                    self.mutate(holder, f"{target.value.id}[{index}]", s.node, how, "", v, facts=old)
        if s.op == "add" and ((old and all(type(f) is Container and f.kind == "list" for f in old)) or (type(s.value) is ir.Seq and s.value.kind == "list")):
            # `history += [loss]` extends a list (only a list takes a list
            # literal): a store of its items.
            self._extend(target, v, src, s.node, s.value)
        elif s.op in ("add", "sub"):
            self.accumulate(target, op(v, self.site(s.node)), src, s.node, s.value.node)
        new = binop(s.op, old, v, self.site(s.node))
        if tensorish(old):
            # `w += d` on a tensor writes the same object: still a leaf,
            # still saved where it was; what d was saved as does not carry.
            new = frozenset(f for f in new if type(f) is not Saved) | frozenset(f for f in old if type(f) in (Leaf, Saved))
        if type(target) is ir.Name:
            loc = self.loc(target.id)
            pb = self.prog.proven_binds
            if pb and Def(loc, id(s.node)) in pb and not plain_only(new) and not attached(new):
                # A later backward of this very sum proved it holds a graph.
                new = new | {Graph(s.node, self.index, "backward")}
            self.write(loc, new)
            flow = self.defined(loc, s.node, src | osrc)
            # (For proofs: `loss += reg` then `loss.backward()`: the earlier
            # `loss` is a term of what was backpropagated; `loss /= n` of a
            # number: what it was divided from is.)
            terms = s.op in ("add", "sub") or (s.op in ("mul", "truediv") and plain_only(v))
            self.proofs.binds.append((loc, tuple(osrc) if terms else (), (), False, None, flow, open_contexts(self)))
        elif type(target) is ir.Attr:
            loc = self.attr_loc(target)
            if loc is not None:
                self.write(loc, new, strong=type(loc) is ClassAttr)
                for x in src:
                    self.prog.edge(x, loc)


def _reads_only(e: ir.Expr) -> bool:
    """``e`` only reads names, attributes and constant or name subscripts
    (``model[0].encoder``): evaluating it once more runs nothing."""
    while True:
        t = type(e)
        if t is ir.Name:
            return True
        if t is ir.Attr:
            e = e.value  # type: ignore[attr-defined]
        elif t is ir.Subscript:
            if not all(type(i.value) in (ir.Const, ir.Name) and i.lower is None and i.upper is None for i in e.index):  # type: ignore[attr-defined]
                return False
            e = e.value  # type: ignore[attr-defined]
        else:
            return False


def _root_text(e: ir.Expr) -> str | None:
    """``self.buf`` of ``self.buf[:, 0]`` (the tensor an element or a slice
    is of), as written."""
    while type(e) is ir.Subscript:
        e = e.value
    return ir.dotted(e)


def _unscaled(e: ir.Expr) -> ir.Expr:
    """``t`` of ``0.9 * t`` or ``t * 0.9`` (a constant factor), else ``e``."""
    if type(e) is ir.BinOp and e.op == "mul":
        if type(e.left) is ir.Const:
            return e.right
        if type(e.right) is ir.Const:
            return e.left
    return e


def _factor_reads(e: ir.Expr) -> list[ir.Expr] | None:
    """The names and attributes a factor read without running code reads
    (a constant, a name, an attribute, arithmetic of those: ``1.0 -
    self.alpha``), left to right; None when it runs code."""
    t = type(e)
    if t is ir.Const:
        return []
    if t is ir.Name:
        return [e]
    if t is ir.Attr:
        return [e] if _factor_reads(e.value) is not None else None
    if t is ir.BinOp:
        left, right = _factor_reads(e.left), _factor_reads(e.right)
        return None if left is None or right is None else left + right
    if t is ir.UnaryOp:
        return _factor_reads(e.operand)
    return None
