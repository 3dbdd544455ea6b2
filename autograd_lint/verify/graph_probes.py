"""The verifier's probes that measure the autograd graphs a line keeps: the
graphs a container or accumulator keeps alive across iterations (AGL101,
AGL102, AGL103) and the graph an eval-time model call builds (AGL301).

Loaded by the child (child.py) by its file path, like module_probes.py: it
imports nothing of the package, and is given torch, the probe, the child's
state and helpers (``resolve``, ``simple_expr``, ``storage``, ``kib``).
Both families count what ``graph_stats`` finds from a graph's roots: the
autograd nodes reachable, and the bytes of the tensors they saved.

- AGL101-AGL103: after each hit, the container the statement writes to is
  read and the graphs its tensors reach are measured; growth over the
  sampled hits confirms.
- AGL301: while the flagged line runs, a global module forward hook notes
  the outermost module call; an output with a ``grad_fn`` under grad mode
  confirms (eval code never runs the backward that graph is kept for).
"""

from __future__ import annotations

import ast
import functools
import os
import sys

CONFIRMED, LATENT, NOT_REPRODUCED, UNVERIFIABLE = "confirmed", "latent", "not reproduced", "unverifiable"
MAX_NODES = 200_000

# type(autograd node) -> its ``_saved_*`` attribute names (dir() is slow)
_SAVED_ATTRS: dict = {}


def graph_stats(torch, roots, storage) -> dict:
    seen: set = set()
    storages: set = set()
    saved = freed = 0
    stack = list(roots)
    while stack and len(seen) < MAX_NODES:
        node = stack.pop()
        if node is None or node in seen:
            continue
        seen.add(node)
        names = _SAVED_ATTRS.get(type(node))
        if names is None:
            names = _SAVED_ATTRS[type(node)] = [a for a in dir(node) if a.startswith("_saved_")]
        for a in names:
            try:
                v = getattr(node, a)
            except RuntimeError:
                freed += 1
                continue
            except Exception:
                continue
            for tv in (v if isinstance(v, (tuple, list)) else (v,)):
                if isinstance(tv, torch.Tensor):
                    key = storage(tv)
                    if key not in storages:
                        storages.add(key)
                        saved += tv.untyped_storage().nbytes()
        for nxt, _ in getattr(node, "next_functions", ()):
            if nxt is not None and nxt not in seen:
                stack.append(nxt)
    return {"nodes": len(seen), "saved_bytes": saved, "freed_saves": freed, "truncated": len(seen) >= MAX_NODES}


# --- AGL1xx: graphs kept alive ------------------------------------------------------


def _store_target(node, simple_expr) -> str | None:
    """The container / accumulator the flagged statement writes to."""
    target = None
    if isinstance(node, ast.AugAssign):
        target = node.target
        # `running[name] += value` over several names: the dict holds them all.
        while isinstance(target, ast.Subscript) and not isinstance(target.slice, ast.Constant):
            target = target.value
    elif isinstance(node, (ast.Assign, ast.AnnAssign)):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        for tg in targets:
            if isinstance(tg, ast.Subscript):
                target = tg.value
            elif isinstance(tg, (ast.Attribute, ast.Name)):
                target = tg
    elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Call) and isinstance(node.value.func, ast.Attribute):
        recv = node.value.func.value
        # `history.setdefault(k, []).append(loss)`: the dict holds it.
        while isinstance(recv, ast.Call) and isinstance(recv.func, ast.Attribute):
            recv = recv.func.value
        target = recv
    if target is not None and simple_expr(target):
        return ast.unparse(target)
    return None


def _tensors_in(torch, value, out: list, depth: int = 0, limit: int = 100_000) -> list:
    if len(out) >= limit:
        return out
    if isinstance(value, torch.Tensor):
        out.append(value)
    elif depth < 5:
        if isinstance(value, dict):
            value = list(value.values())
        elif _user_object(torch, value):
            # A meter or logger of the user's (in any module): what its
            # attributes hold is what it keeps.
            value = list(vars(value).values())
        if isinstance(value, (list, tuple, set, frozenset)) or type(value).__name__ == "deque":
            for v in list(value):
                _tensors_in(torch, v, out, depth + 1, limit)
                if len(out) >= limit:
                    break
    return out


def _user_object(torch, value) -> bool:
    """An instance of a class the user's code defines (not a module, an
    optimizer, a class, a function or a library object)."""
    t = type(value)
    if not hasattr(value, "__dict__") or isinstance(value, (type, torch.nn.Module, torch.optim.Optimizer)):
        return False
    mod = getattr(t, "__module__", "") or ""
    return mod.split(".", 1)[0] not in ("torch", "builtins", "numpy", "types", "functools", "collections", "typing")


def retention_after(torch, frame, p, device: str, resolve, simple_expr, storage, kib) -> None:
    target = _store_target(p.stmt[0] if p.stmt else None, simple_expr)
    expr = target or p.subject
    ok, value = resolve(frame, expr)
    if not ok:
        if p.status is None:
            p.set(UNVERIFIABLE, value)
        return
    tensors = _tensors_in(torch, value, [])
    roots = []
    ids = set()
    for t in tensors:
        fn = t.grad_fn
        if fn is not None and id(fn) not in ids:
            ids.add(id(fn))
            roots.append(fn)
    if not roots:
        if not p.observations:
            p.set(NOT_REPRODUCED, f"`{expr}` holds no tensor with a grad_fn after line {p.row}: no graph is kept")
        return
    stats = graph_stats(torch, roots, storage)
    stats["graphs"] = len(roots)
    if device == "cuda" and torch.cuda.is_available():
        stats["cuda_allocated"] = torch.cuda.memory_allocated()
    p.observations.append(stats)
    obs = p.observations
    n = len(obs)
    kind = ("graphs with their saved tensors" if stats["saved_bytes"] else
            "graphs (autograd nodes only: backward already freed their saved tensors)")
    numbers = {"graphs": stats["graphs"], "nodes": stats["nodes"], "saved_bytes": stats["saved_bytes"]}
    if n >= 2:
        per_it = (obs[-1]["saved_bytes"] - obs[0]["saved_bytes"]) / (n - 1)
        growing = all(b["nodes"] > a["nodes"] or b["saved_bytes"] > a["saved_bytes"] for a, b in zip(obs, obs[1:]))
        numbers["saved_bytes_per_hit"] = int(per_it)
        nodes_per = (obs[-1]["nodes"] - obs[0]["nodes"]) / (n - 1)
        numbers["nodes_per_hit"] = nodes_per
        g = stats["graphs"]
        ev = (f"`{expr}` retains {g} {kind if g != 1 else kind.replace('graphs', 'graph', 1)} after {n} executions of line {p.row}: "
              f"{stats['nodes']} autograd nodes ({nodes_per:+g} per iteration)")
        if stats["saved_bytes"] or per_it:
            ev += f", {kib(stats['saved_bytes'])} saved ({'+' if per_it >= 0 else ''}{kib(per_it)} per iteration)"
        if "cuda_allocated" in stats and "cuda_allocated" in obs[0]:
            cuda_per = (obs[-1]["cuda_allocated"] - obs[0]["cuda_allocated"]) / (n - 1)
            numbers["cuda_allocated_per_hit"] = int(cuda_per)
            ev += f", CUDA memory {'+' if cuda_per >= 0 else ''}{kib(cuda_per)} per iteration"
        if growing:
            p.set(CONFIRMED, ev, **numbers)
        else:
            p.set(NOT_REPRODUCED, f"`{expr}` holds {stats['graphs']} graph(s) but they did not grow over {n} executions of line {p.row}", **numbers)
    else:
        p.set(LATENT, f"`{expr}` holds {stats['graphs']} {kind} ({stats['nodes']} nodes, {kib(stats['saved_bytes'])} saved) "
                      f"after line {p.row} ran once; growth not observed", **numbers)


# --- AGL301: model called in eval code with grad on ---------------------------------------


def _first_tensor(torch, value, depth: int = 0):
    if isinstance(value, torch.Tensor):
        return value
    if depth > 3:
        return None
    if isinstance(value, dict):
        value = list(value.values())
    elif hasattr(value, "to_tuple"):
        try:
            value = value.to_tuple()
        except Exception:
            return None
    if isinstance(value, (list, tuple)):
        for v in value[:16]:
            t = _first_tensor(torch, v, depth + 1)
            if t is not None:
                return t
    return None


def _forward_hook(torch, state, storage, module, args, output) -> None:
    # Registered as a partial, which adds no Python frame: frame 1 is still
    # the module call that ran the hook.
    st = state
    if st.in_probe:
        return
    try:
        # The flagged line's frame: the first user frame with an AGL301 probe
        # running, through helpers (`self.shared_step(batch)` runs the model
        # a few frames down); the module must be the outermost one called.
        f = sys._getframe(1)
        calls = 0
        probes: list = []
        while f is not None:
            co = f.f_code
            if co.co_name == "_call_impl" and co.co_filename.endswith(os.path.join("nn", "modules", "module.py")):
                calls += 1
            entry = st._entry(co.co_filename)
            if entry is not None and f in st.pending:
                probes = [p for p in entry.get(f.f_lineno, ()) if p.code == "AGL301"]
                if probes:
                    break
            f = f.f_back
        if not probes or calls != 1:
            return
        out = _first_tensor(torch, output)
        has_graph = out is not None and out.grad_fn is not None
        stats = None
        if has_graph:
            st.in_probe = True
            try:
                stats = graph_stats(torch, [out.grad_fn], storage)
            finally:
                st.in_probe = False
        for p in probes:
            p.observations.append({"training": module.training, "grad": torch.is_grad_enabled(), "graph": has_graph, "stats": stats,
                                   "module": type(module).__name__, "params": next(module.parameters(), None) is not None})
    except Exception as e:  # never into the user's forward
        st.note(f"verifier error in the forward hook: {type(e).__name__}: {e}")


_HOOK = {"handle": None, "users": 0}


def eval_before(torch, frame, p, state, resolve, storage):
    # A global forward hook sends every module call down nn.Module's slow
    # path: install it only while a flagged line runs.
    if _HOOK["users"] == 0:
        hook = functools.partial(_forward_hook, torch, state, storage)
        _HOOK["handle"] = torch.nn.modules.module.register_module_forward_hook(hook)
    _HOOK["users"] += 1
    seen = {"hooked": True}
    if p.subject:
        # A shared train/eval pass: the subject is the flag whose false
        # value makes it evaluation.
        ok, flag = resolve(frame, p.subject)
        if ok:
            seen["training_run"] = bool(flag)
    return seen


def eval_after(p, before, kib) -> None:
    if before and before.get("hooked"):
        _HOOK["users"] -= 1
        if _HOOK["users"] == 0 and _HOOK["handle"] is not None:
            _HOOK["handle"].remove()
            _HOOK["handle"] = None
    if before and before.get("training_run"):
        # The training run of a shared pass backpropagates: not this hit.
        p.hits -= 1
        p.observations.clear()
        return
    if not p.observations:
        if p.status is None:
            p.set(UNVERIFIABLE, f"no nn.Module was called at line {p.row}")
        return
    # The model, rather than a loss module called on its output at the same line.
    o = next((x for x in reversed(p.observations) if x.get("params")), p.observations[-1])
    mode = "eval mode" if not o["training"] else "training mode"
    if o["grad"] and o["graph"]:
        s = o["stats"] or {}
        p.set(CONFIRMED, f"{o['module']} ran at line {p.row} in {mode} with grad enabled; its output has a grad_fn "
                         f"({s.get('nodes', 0)} autograd nodes, {kib(s.get('saved_bytes', 0))} of activations saved for a backward that eval code never runs)",
              training=o["training"], nodes=s.get("nodes", 0), saved_bytes=s.get("saved_bytes", 0))
    elif p.status != CONFIRMED:
        why = "grad mode was off" if not o["grad"] else "its output has no grad_fn"
        p.set(NOT_REPRODUCED, f"{o['module']} ran at line {p.row} in {mode} but {why}", training=o["training"])
