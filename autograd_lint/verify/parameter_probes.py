"""The verifier's probe for a parameter read out of the graph in
``forward`` (AGL506).

Loaded by the child (child.py) by its file path, like module_probes.py: it
imports nothing of the package, and is given torch, the probe and the
child's ``resolve``. After the flagged line runs, the parameter it names
(``self.log_t``) is watched; at each later optimizer step that holds it, a
``.grad`` of None while other parameters of that optimizer have one
confirms the finding (the step leaves it unchanged); a gradient on it
means something else reached it.
"""

from __future__ import annotations

import importlib
import weakref

CONFIRMED, NOT_REPRODUCED, UNVERIFIABLE = "confirmed", "not reproduced", "unverifiable"

# id(parameter) -> (a weak reference to it, the probes that watch it)
_WATCHED: dict[int, tuple[weakref.ref, list]] = {}
_HOOKED = [False]


def after_line(torch, frame, p, resolve) -> None:
    subject = p.subject
    if not subject:
        if p.status is None:
            p.set(UNVERIFIABLE, "the finding names no parameter to watch")
        return
    ok, param = resolve(frame, subject)
    if not ok:
        if p.status is None:
            p.set(UNVERIFIABLE, param)
        return
    if not isinstance(param, torch.nn.Parameter) or not param.requires_grad:
        if p.status != CONFIRMED:
            p.set(NOT_REPRODUCED, f"`{subject}` is not a parameter that requires grad at line {p.row}")
        return
    if not torch.is_grad_enabled():
        if p.status != CONFIRMED:
            p.set(NOT_REPRODUCED, f"grad mode is off at line {p.row}: nothing is differentiated there")
        return
    if p.status is None:
        p.set(NOT_REPRODUCED, f"no optimizer step holding `{subject}` ran after line {p.row}")
    ref, probes = _WATCHED.setdefault(id(param), (weakref.ref(param), []))
    if p not in probes:
        probes.append(p)
    if not _HOOKED[0]:
        # (A submodule `import torch` does not load.)
        importlib.import_module("torch.optim.optimizer").register_optimizer_step_pre_hook(_before_step)
        _HOOKED[0] = True


def _before_step(opt, args, kwargs) -> None:
    params = [q for g in opt.param_groups for q in g["params"]]
    held = {id(q) for q in params}
    for key, (ref, probes) in list(_WATCHED.items()):
        param = ref()
        if param is None:
            del _WATCHED[key]
            continue
        if key not in held:
            continue
        others = sum(q.grad is not None for q in params if q is not param)
        for p in probes:
            if param.grad is None and others:
                p.set(
                    CONFIRMED,
                    f"at an optimizer step after line {p.row}, `{p.subject}` has no gradient while {others} other "
                    f"parameter(s) of that optimizer have one: the step leaves it unchanged",
                )
            elif param.grad is not None and p.status != CONFIRMED:
                p.set(NOT_REPRODUCED, f"`{p.subject}` has a gradient at an optimizer step after line {p.row}")
