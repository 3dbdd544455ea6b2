"""Generate the saved-tensor ledger (``rules/saved_tensors.json``) from torch.

Which tensors an op saves for backward is a fact of the installed PyTorch, so
it is measured here, never written by hand: every op in the probe table
(``autograd_lint.ledger_probes``) is run on small CPU inputs that require
grad, in float64 and again in float32 (a tensor either run saves counts),
and the autograd graph it builds is inspected. Every node from the outputs' ``grad_fn`` down to the leaf
``AccumulateGrad`` nodes is visited; each ``_saved_*`` tensor it holds (or
``saved_tensors`` for Python ``autograd.Function`` nodes) is matched, by
storage identity, against the op's inputs and outputs. A saved tensor that
shares storage with an input (the input itself, or a view of it such as
``weight.t()`` saved by ``addmm``) names that input; one that shares storage
with an output names ``"result"``. Intermediates (copies, masks, statistics)
are not recorded: modifying the caller's tensors in place cannot reach them.

Usage::

    python -m autograd_lint.ledger [--out rules/saved_tensors.json]
                                   [--out-md rules/saved_tensors.md | --no-md]
                                   [--check] [--verbose]

``--check`` regenerates in memory and exits 1 with a summary of the
differences when the committed file is stale.

Only this module (and its test) import torch; the linter's check path reads
the generated JSON through ``autograd_lint.analysis.ledger``.
"""

from __future__ import annotations

import argparse
import json
import sys
import warnings
from pathlib import Path
from typing import Any, Iterable

try:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import torch
except ImportError:  # pragma: no cover - exercised only without torch
    torch = None  # type: ignore[assignment]

from autograd_lint.ledger_probes import PROBES, Probe, Setup, Skip, build_table, require_torch, set_dtype

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "rules" / "saved_tensors.json"
DEFAULT_MD = ROOT / "rules" / "saved_tensors.md"
GENERATED_BY = "python -m autograd_lint.ledger"

# ---------------------------------------------------------------------------
# Measuring one probe.


def _flatten(obj: Any) -> list[Any]:
    if isinstance(obj, torch.Tensor):
        return [obj]
    if isinstance(obj, (tuple, list)):
        return [t for o in obj for t in _flatten(o)]
    return []


def _storage_key(t: Any) -> int | None:
    if not isinstance(t, torch.Tensor) or t.layout != torch.strided:
        return None
    try:
        st = t.untyped_storage()
    except Exception:  # noqa: BLE001 - tensors without storage
        return None
    if st.nbytes() == 0:
        return None
    return st.data_ptr()


def _saved_values(node: Any) -> list[Any]:
    values: list[Any] = []
    names = [n for n in dir(node) if n.startswith("_saved_")]
    for n in sorted(names):
        try:
            values.append(getattr(node, n))
        except Exception:  # noqa: BLE001 - freed/unpackable saved variables
            continue
    if not names and hasattr(node, "saved_tensors"):  # Python autograd.Function nodes
        try:
            values.extend(node.saved_tensors)
        except Exception:  # noqa: BLE001
            pass
    return [t for v in values for t in _flatten(v)]


def _walk(outputs: list[Any]) -> list[Any]:
    """Graph nodes from the outputs' grad_fns down to (not into) the leaves, in
    breadth-first order."""
    order: list[Any] = []
    seen: set[int] = set()
    queue = [t.grad_fn for t in outputs if t.grad_fn is not None]
    while queue:
        node = queue.pop(0)
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        if type(node).__name__ == "AccumulateGrad":
            continue
        order.append(node)
        queue.extend(fn for fn, _ in node.next_functions)
    return order


def measure(probe: Probe) -> dict[str, Any]:
    """Run one probe; the ledger entry. Raises Skip."""
    torch.manual_seed(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            named, thunk = probe.setup()
            out = thunk()
        except Exception as e:  # noqa: BLE001
            raise Skip(f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"[:160]) from None
        outputs = _flatten(out)
        if not outputs:
            raise Skip("no tensor output")
        input_keys: list[tuple[str, int]] = []
        for name, v in named.items():
            for t in _flatten(v):
                k = _storage_key(t)
                if k is not None:
                    input_keys.append((name, k))
        input_storage = {k for _, k in input_keys}
        first = outputs[0]
        first_key = _storage_key(first)
        view = first_key is not None and first_key in input_storage
        output_keys = {_storage_key(t) for t in outputs} - {None} - input_storage
        differentiable = [t for t in outputs if t.grad_fn is not None]
        if not differentiable and not view:
            raise Skip("not differentiable (no output has a grad_fn)")
        nodes = _walk(differentiable)
        saved: set[str] = set()
        for node in nodes:
            for t in _saved_values(node):
                k = _storage_key(t)
                if k is None:
                    continue
                hit = [n for n, ik in input_keys if ik == k]
                if hit:
                    saved.update(hit)
                elif k in output_keys:
                    saved.add("result")
    order = list(named) + ["result"]
    grad_fns: list[str] = []
    for node in nodes:
        n = type(node).__name__
        if n not in grad_fns:
            grad_fns.append(n)
    entry = {
        "saves": sorted(saved, key=order.index),
        "view": bool(view),
        "inplace": probe.inplace,
        "grad_fn": grad_fns,
        "call": probe.call,
    }
    if probe.inplace_setup is not None:
        entry["inplace_saves_result"] = _inplace_saves_result(probe.inplace_setup)
    return entry


def _inplace_saves_result(setup: Setup) -> bool:
    """Run in place, the op saves its output (its first input, written):
    writing that tensor again breaks backward (`F.leaky_relu(h,
    inplace=True)` then `+=`; not `F.hardtanh`, whose backward reads a
    mask)."""
    torch.manual_seed(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            named, thunk = setup()
            out = thunk()
        except Exception:  # noqa: BLE001 - no in-place form for these inputs
            return False
    outputs = [t for t in _flatten(out) if t.grad_fn is not None]
    keys = {_storage_key(t) for t in outputs} - {None}
    return any(_storage_key(t) in keys for node in _walk(outputs) for t in _saved_values(node))


def generate(keys: Iterable[str] | None = None) -> tuple[dict[str, dict[str, Any]], dict[str, str]]:
    """``(entries, skipped)`` for the given probe keys (default: all)."""
    require_torch()
    build_table()
    entries: dict[str, dict[str, Any]] = {}
    skipped: dict[str, str] = {}
    for key in sorted(PROBES if keys is None else keys):
        try:
            entries[key] = measure(PROBES[key])
        except Skip as e:
            skipped[key] = str(e)
    # Again in float32, torch's default dtype: some kernels save more there
    # (CPU `nn.LSTM` runs oneDNN's, which keeps its output). A tensor saved
    # in either is saved: writing it in place fails there.
    old = set_dtype(torch.float32)
    try:
        for key in sorted(entries):
            try:
                other = measure(PROBES[key])
            except Skip:
                continue
            entry = entries[key]
            entry["saves"] = entry["saves"] + [n for n in other["saves"] if n not in entry["saves"]]
            entry["grad_fn"] = entry["grad_fn"] + [n for n in other["grad_fn"] if n not in entry["grad_fn"]]
    finally:
        set_dtype(old)
    return entries, skipped


def document(entries: dict[str, dict[str, Any]]) -> dict[str, Any]:
    return {
        "torch_version": torch.__version__,
        "generated_by": GENERATED_BY,
        "count": len(entries),
        "ops": dict(sorted(entries.items())),
    }


def dumps(doc: dict[str, Any]) -> str:
    return json.dumps(doc, indent=1, sort_keys=True) + "\n"


def markdown(doc: dict[str, Any]) -> str:
    lines = [
        "# Saved-tensor ledger",
        "",
        f"Generated by `{doc['generated_by']}` from torch {doc['torch_version']}; do not edit by hand.",
        "The data is `saved_tensors.json`; the AGL2xx rules read it through `autograd_lint.analysis.ledger`.",
        "",
        "- **saves**: the op's inputs (ATen names for `torch.*`, `Tensor.*`, `operator.*`, `torch.special.*`;",
        "  Python parameter names for `torch.nn.functional.*`, `torch.linalg.*` and modules, whose",
        "  parameters and buffers count as inputs) and `result` (its output) that autograd keeps for",
        "  backward, directly or as a view. Modifying one of them in place before `backward()` raises.",
        "- **view**: the first output shares storage with an input (a view, or the input itself).",
        "- **inplace**: the in-place variant, if any.",
        "- **probe**: the call that was measured (float64 and float32, CPU, inputs requiring grad, train mode).",
        "",
        f"{doc['count']} ops.",
        "",
        "| op | saves | view | inplace | probe |",
        "| --- | --- | --- | --- | --- |",
    ]
    for key, e in doc["ops"].items():
        saves = ", ".join(f"`{s}`" for s in e["saves"]) or "—"
        inplace = f"`{e['inplace']}`" if e["inplace"] else "—"
        call = e["call"].replace("|", "\\|")
        lines.append(f"| `{key}` | {saves} | {'yes' if e['view'] else '—'} | {inplace} | `{call}` |")
    return "\n".join(lines) + "\n"


def _base_version(v: str) -> str:
    return v.split("+", 1)[0]


def diff(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """Human-readable differences between two ledger documents (empty: same)."""
    out: list[str] = []
    if _base_version(str(old.get("torch_version", ""))) != _base_version(str(new.get("torch_version", ""))):
        out.append(f"torch_version: {old.get('torch_version')} -> {new.get('torch_version')}")
    a, b = old.get("ops", {}), new.get("ops", {})
    for k in sorted(set(a) - set(b)):
        out.append(f"- {k} (no longer produced)")
    for k in sorted(set(b) - set(a)):
        out.append(f"+ {k}: {json.dumps(b[k], sort_keys=True)}")
    for k in sorted(set(a) & set(b)):
        if a[k] != b[k]:
            fields = sorted(set(a[k]) | set(b[k]))
            changes = [f"{f}: {a[k].get(f)!r} -> {b[k].get(f)!r}" for f in fields if a[k].get(f) != b[k].get(f)]
            out.append(f"~ {k}: " + "; ".join(changes))
    if old.get("count") != len(a):
        out.append(f"count field {old.get('count')} does not match {len(a)} ops")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m autograd_lint.ledger", description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="JSON ledger path (default: rules/saved_tensors.json)")
    parser.add_argument("--out-md", type=Path, default=DEFAULT_MD, help="Markdown table path (default: rules/saved_tensors.md)")
    parser.add_argument("--no-md", action="store_true", help="do not write the Markdown table")
    parser.add_argument("--check", action="store_true", help="compare with the committed files; exit 1 if stale")
    parser.add_argument("--verbose", "-v", action="store_true", help="list the skipped probes and why")
    args = parser.parse_args(argv)
    require_torch()

    entries, skipped = generate()
    doc = document(entries)
    text = dumps(doc)
    md = markdown(doc)
    if args.verbose:
        print(f"probed {len(entries) + len(skipped)} ops: {len(entries)} entries, {len(skipped)} skipped", file=sys.stderr)
        for k, why in sorted(skipped.items()):
            print(f"  skipped {k}: {why}", file=sys.stderr)

    if args.check:
        if not args.out.is_file():
            print(f"{args.out} does not exist; run {GENERATED_BY}", file=sys.stderr)
            return 1
        old = json.loads(args.out.read_text(encoding="utf-8"))
        problems = diff(old, doc)
        if not args.no_md and args.out_md.is_file():
            committed_md = args.out_md.read_text(encoding="utf-8")
            # The page names the committed torch version; only its table can be stale.
            expected = markdown({**doc, "torch_version": old.get("torch_version", doc["torch_version"])})
            if committed_md != expected and not problems:
                problems.append(f"{args.out_md} is out of date")
        if problems:
            print(f"{args.out} is stale for torch {torch.__version__} ({len(problems)} differences):", file=sys.stderr)
            for p in problems[:200]:
                print("  " + p, file=sys.stderr)
            if len(problems) > 200:
                print(f"  ... and {len(problems) - 200} more", file=sys.stderr)
            print(f"regenerate with: {GENERATED_BY}", file=sys.stderr)
            return 1
        print(f"{args.out}: up to date ({len(entries)} ops, torch {torch.__version__})")
        return 0

    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text, encoding="utf-8")
    print(f"wrote {args.out} ({len(entries)} ops; {len(skipped)} probes skipped, see --verbose)")
    if not args.no_md:
        args.out_md.write_text(md, encoding="utf-8")
        print(f"wrote {args.out_md}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
