"""The verifier's probes for gradient zeroing that keeps the gradients
allocated (AGL401, AGL402, AGL403).

Loaded by the child (child.py) by its file path, like module_probes.py: it
imports nothing of the package, and is given torch, the probe, the child's
state and helpers (``resolve``, ``simple_expr``, ``kib``).

- AGL401/AGL402: ``install`` wraps ``Optimizer.zero_grad`` and
  ``Module.zero_grad`` while the program runs; a call from a flagged line
  notes the bytes of gradient still allocated after it. Any confirms
  (``set_to_none=True`` would have freed them).
- AGL403: after a manual zeroing (``p.grad.zero_()``,
  ``torch._foreach_zero_(grads)``), the gradient it names is read: still
  allocated and all zeros confirms.
"""

from __future__ import annotations

import ast
import sys

CONFIRMED, NOT_REPRODUCED, UNVERIFIABLE = "confirmed", "not reproduced", "unverifiable"


def _grad_bytes(params) -> int:
    total = 0
    for prm in params:
        g = getattr(prm, "grad", None)
        if g is not None:
            total += g.untyped_storage().nbytes()
    return total


def _optimizer_params(opt):
    return [p for g in opt.param_groups for p in g["params"]]


def install(torch, state):
    """Wrap both ``zero_grad`` methods; returns the function that undoes the wraps."""
    undo = [_wrap_zero_grad(state, torch.optim.Optimizer, _optimizer_params),
            _wrap_zero_grad(state, torch.nn.Module, lambda m: list(m.parameters()))]
    return lambda: [u() for u in undo]


def _wrap_zero_grad(state, cls, params_of):
    orig = cls.zero_grad

    def zero_grad(self, *args, **kwargs):
        result = orig(self, *args, **kwargs)
        st = state
        if not st.in_probe:
            try:
                f, probes = st.site_probes(sys._getframe(1))
                probes = [p for p in probes if p.code in ("AGL401", "AGL402")]
                if probes:
                    set_to_none = kwargs.get("set_to_none", args[0] if args else None)
                    kept = _grad_bytes(params_of(self))
                    for p in probes:
                        p.observations.append({"set_to_none": set_to_none, "kept": kept})
            except Exception as e:
                st.note(f"verifier error in the zero_grad wrapper: {type(e).__name__}: {e}")
        return result

    zero_grad.__wrapped__ = orig
    cls.zero_grad = zero_grad
    return lambda: setattr(cls, "zero_grad", orig)


def zero_grad_after(torch, p, kib) -> None:
    if not p.observations:
        if p.status is None:
            p.set(UNVERIFIABLE, f"no Optimizer.zero_grad / Module.zero_grad call was seen at line {p.row}")
        return
    o = p.observations[-1]
    if o["kept"] > 0:
        p.set(CONFIRMED, f"zero_grad(set_to_none={o['set_to_none']!r}) at line {p.row} kept {kib(o['kept'])} of zero-filled "
                         f"gradients allocated (set_to_none=True frees them)", kept_bytes=o["kept"])
    else:
        p.set(NOT_REPRODUCED, f"zero_grad at line {p.row} left no gradient allocated (torch {torch.__version__})", kept_bytes=0)


def _foreach_zero_after(torch, frame, p, node, resolve, simple_expr, kib) -> bool:
    """``torch._foreach_zero_(grads)``: each tensor of the named list is
    still allocated, all zeros. False when the line is not such a call."""
    call = node.value if isinstance(node, ast.Expr) else None
    if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and call.func.attr == "_foreach_zero_" and len(call.args) == 1):
        return False
    arg = call.args[0]
    if not simple_expr(arg):
        if p.status is None:
            p.set(UNVERIFIABLE, "the zeroed list is not a plain name (re-evaluating it could have effects)")
        return True
    ok, xs = resolve(frame, ast.unparse(arg))
    if not ok or not isinstance(xs, (list, tuple)) or not xs or not all(isinstance(t, torch.Tensor) for t in xs):
        if p.status is None:
            p.set(UNVERIFIABLE, xs if not ok else f"`{ast.unparse(arg)}` is not a non-empty list of tensors")
        return True
    if not any(bool(t.detach().any()) for t in xs):
        n = sum(t.untyped_storage().nbytes() for t in xs)
        p.set(CONFIRMED, f"the {len(xs)} gradients in `{ast.unparse(arg)}` ({kib(n)}) stay allocated, filled with zeros, after line {p.row}; "
                         "setting each `.grad = None` frees them", kept_bytes=n)
    elif p.status != CONFIRMED:
        p.set(NOT_REPRODUCED, f"`{ast.unparse(arg)}` is not all zeros after line {p.row}")
    return True


def manual_zero_after(torch, frame, p, resolve, simple_expr, kib) -> None:
    node = p.stmt[0] if p.stmt else None
    if _foreach_zero_after(torch, frame, p, node, resolve, simple_expr, kib):
        return
    grad_expr = None
    for sub in ast.walk(node) if node is not None else ():
        if isinstance(sub, ast.Attribute) and sub.attr == "grad" and simple_expr(sub):
            grad_expr = ast.unparse(sub)
            break
    if grad_expr is None:
        if p.status is None:
            p.set(UNVERIFIABLE, "cannot tell which .grad the line zeroes")
        return
    ok, g = resolve(frame, grad_expr)
    if not ok:
        if p.status is None:
            p.set(UNVERIFIABLE, g)
        return
    if isinstance(g, torch.Tensor) and not bool(g.detach().any()):
        n = g.untyped_storage().nbytes()
        p.set(CONFIRMED, f"`{grad_expr}` ({kib(n)}) stays allocated, filled with zeros, after line {p.row}; "
                         f"`{grad_expr} = None` frees it", kept_bytes=n)
    elif p.status != CONFIRMED:
        p.set(NOT_REPRODUCED, f"`{grad_expr}` is {'None' if g is None else 'not all zeros'} after line {p.row}")
