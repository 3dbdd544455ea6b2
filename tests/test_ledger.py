"""The saved-tensor ledger: the torch-free reader on the committed JSON, and,
where torch is installed, a re-measurement of a sample of ops so the committed
file cannot silently rot."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from autograd_lint.analysis import ledger as L
from autograd_lint.analysis import torch_api as api

ROOT = Path(__file__).resolve().parent.parent
JSON = ROOT / "rules" / "saved_tensors.json"
MD = ROOT / "rules" / "saved_tensors.md"

# (op, saved inputs, saves result, view)
SANITY = [
    ("torch.sigmoid", set(), True, False),
    ("Tensor.sigmoid", set(), True, False),
    ("torch.exp", set(), True, False),
    ("torch.tanh", set(), True, False),
    ("torch.nn.functional.softmax", set(), True, False),
    ("operator.mul", {"self", "other"}, False, False),
    ("torch.mul", {"self", "other"}, False, False),
    ("torch.relu", set(), True, False),
    ("torch.add", set(), False, False),
    ("torch.sum", set(), False, False),
    ("torch.cat", set(), False, False),
    ("Tensor.clone", set(), False, False),
    ("torch.matmul", {"self", "other"}, False, False),
    ("operator.matmul", {"self", "other"}, False, False),
    ("torch.log", {"self"}, False, False),
    ("torch.sin", {"self"}, False, False),
    ("torch.nn.functional.relu", set(), True, False),
    ("torch.nn.functional.gelu", {"input"}, False, False),
    ("Tensor.view", set(), False, True),
    ("Tensor.t", set(), False, True),
    ("operator.getitem", set(), False, True),
]

# The sanity list plus a spread over every namespace; re-measured with torch.
SAMPLE = sorted(
    {op for op, *_ in SANITY}
    | {
        "torch.pow",
        "torch.nn.Linear",
        "torch.nn.BatchNorm2d",
        "torch.nn.LayerNorm",
        "torch.nn.Conv2d",
        "torch.nn.Embedding",
        "torch.nn.Dropout",
        "torch.nn.ReLU",
        "torch.nn.functional.layer_norm",
        "torch.nn.functional.linear",
        "torch.nn.functional.cross_entropy",
        "torch.linalg.det",
        "torch.linalg.solve",
        "torch.special.expit",
        "torch.max",
        "Tensor.transpose",
        "Tensor.reshape",
        "Tensor.detach",
        "Tensor.T",
        "torch.split",
        "torch.where",
        "torch.gather",
        "torch.addmm",
        "operator.truediv",
    }
)


@pytest.fixture(scope="module")
def ledger() -> L.Ledger:
    return L.load_ledger()


# --- torch-free: the reader on the committed JSON ---------------------------


def test_committed_file_is_well_formed() -> None:
    doc = json.loads(JSON.read_text(encoding="utf-8"))
    assert doc["generated_by"] == "python -m autograd_lint.ledger"
    assert doc["torch_version"].startswith("2.13.0")
    assert doc["count"] == len(doc["ops"])
    assert list(doc["ops"]) == sorted(doc["ops"])
    for name, e in doc["ops"].items():
        fields = {"saves", "view", "inplace", "grad_fn", "call"}
        # An op with an `inplace=True` form says what that form saves.
        assert set(e) == (fields | {"inplace_saves_result"} if e["inplace"] == "inplace=True" else fields), name
        assert isinstance(e["view"], bool) and isinstance(e["saves"], list), name
        assert e["inplace"] is False or isinstance(e["inplace"], str), name
        assert isinstance(e.get("inplace_saves_result", False), bool), name
    # Pretty-printed and sorted, so regeneration diffs are reviewable.
    assert JSON.read_text(encoding="utf-8") == json.dumps(doc, indent=1, sort_keys=True) + "\n"


def test_hundreds_of_ops(ledger: L.Ledger) -> None:
    assert len(ledger) >= 500
    assert ledger.torch_version.startswith("2.13.0")
    prefixes = {"torch.", "Tensor.", "operator.", "torch.nn.functional.", "torch.linalg.", "torch.special.", "torch.nn."}
    for p in prefixes:
        assert sum(k.startswith(p) for k in ledger.entries) >= 10, p


@pytest.mark.parametrize(("op", "inputs", "result", "view"), SANITY, ids=[s[0] for s in SANITY])
def test_sanity_facts(ledger: L.Ledger, op: str, inputs: set[str], result: bool, view: bool) -> None:
    assert op in ledger
    assert ledger.saved_inputs(op) == inputs
    assert ledger.saves_result(op) is result
    assert ledger.saves(op) == frozenset(inputs | ({"result"} if result else set()))
    assert ledger.is_view(op) is view


def test_more_facts(ledger: L.Ledger) -> None:
    assert "self" in ledger.saved_inputs("torch.pow")  # scalar exponent
    assert {"input", "weight"} <= ledger.saved_inputs("torch.nn.Linear")
    bn = ledger.get("torch.nn.BatchNorm2d")
    assert bn is not None and "input" in bn.saves and not bn.saves_result
    assert ledger.get("torch.sigmoid").grad_fn == ("SigmoidBackward0",)
    assert ledger.get("torch.nn.Linear").grad_fn[0] == "AddmmBackward0"
    assert ledger.is_view("Tensor.detach") and ledger.get("Tensor.detach").grad_fn == ()


def test_inplace_variants(ledger: L.Ledger) -> None:
    assert ledger.get("Tensor.sigmoid").inplace == "Tensor.sigmoid_"
    assert ledger.get("torch.sigmoid").inplace == "torch.sigmoid_"
    assert ledger.get("torch.mul").inplace == "Tensor.mul_"
    assert ledger.get("operator.mul").inplace == "operator.imul"
    assert ledger.get("torch.nn.functional.relu").inplace == "inplace=True"
    assert ledger.get("torch.nn.ReLU").inplace == "inplace=True"
    assert ledger.has_inplace("Tensor.add")
    assert not ledger.has_inplace("torch.sum")
    assert not ledger.has_inplace("torch.nn.Linear")


def test_method_and_function_lookup(ledger: L.Ledger) -> None:
    assert ledger.method("sigmoid") is ledger.get("Tensor.sigmoid")
    assert ledger.function("exp") is ledger.get("torch.exp")
    assert ledger.method("no_such_method") is None


def test_unknown_op(ledger: L.Ledger) -> None:
    assert ledger.saves("torch.no_such_op") is None
    assert ledger.saved_inputs("torch.no_such_op") == frozenset()
    assert not ledger.saves_result("torch.no_such_op")
    assert not ledger.is_view("torch.no_such_op")
    assert not ledger.has_inplace("torch.no_such_op")


def test_load_is_cached() -> None:
    assert L.load_ledger() is L.load_ledger()


@pytest.mark.parametrize(
    ("name", "base"),
    [
        ("mul_", "mul"),
        ("sigmoid_", "sigmoid"),
        ("clamp_", "clamp"),
        ("add_", "add"),
        ("index_add_", "index_add"),
        ("mul", None),
        ("__iadd__", None),
        ("__init__", None),
        ("_", None),
        ("_private_", None),
        ("x__", None),
    ],
)
def test_inplace_base(name: str, base: str | None) -> None:
    assert api.inplace_base(name) == base


def test_inplace_base_names_a_ledger_method(ledger: L.Ledger) -> None:
    for e in ledger.entries.values():
        if e.name.startswith("Tensor.") and e.inplace and e.inplace.startswith("Tensor."):
            meth = e.inplace.removeprefix("Tensor.")
            if meth in api.NOT_WRITES:
                continue  # `detach_`: ends in `_` but writes no data
            assert api.inplace_base(meth) == e.name.removeprefix("Tensor."), e.name


def test_markdown_page_lists_every_op(ledger: L.Ledger) -> None:
    text = MD.read_text(encoding="utf-8")
    assert not MD.name.startswith("AGL")
    for name in ledger.entries:
        assert f"| `{name}` |" in text, name


def test_reader_does_not_import_torch() -> None:
    code = "import autograd_lint.analysis.ledger as L, sys; L.load_ledger(); assert 'torch' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)


# --- with torch: re-measure a sample ----------------------------------------


@pytest.fixture(scope="module")
def generator():
    pytest.importorskip("torch")
    from autograd_lint import ledger as gen

    return gen


def test_sample_matches_installed_torch(generator) -> None:
    import torch

    if not torch.__version__.startswith("2.13.0"):
        pytest.skip(f"the committed ledger is for torch 2.13.0, not {torch.__version__}")
    committed = json.loads(JSON.read_text(encoding="utf-8"))["ops"]
    entries, skipped = generator.generate(SAMPLE)
    assert not skipped, skipped
    assert len(SAMPLE) >= 40
    for op in SAMPLE:
        assert entries[op] == committed[op], op


def test_generation_is_deterministic(generator) -> None:
    keys = ["torch.nn.LSTM", "torch.nn.MultiheadAttention", "torch.nn.functional.dropout", "torch.sort"]
    assert generator.generate(keys) == generator.generate(keys)


def test_diff_reports_changes(generator) -> None:
    old = {"torch_version": "2.13.0", "count": 2, "ops": {"a": {"saves": []}, "b": {"saves": ["self"]}}}
    new = {"torch_version": "2.13.0+cpu", "count": 2, "ops": {"b": {"saves": ["result"]}, "c": {"saves": []}}}
    lines = generator.diff(old, new)
    assert "- a (no longer produced)" in lines
    assert any(l.startswith("+ c") for l in lines)
    assert any(l.startswith("~ b: saves: ['self'] -> ['result']") for l in lines)
    assert not any(l.startswith("torch_version") for l in lines)  # local suffix ignored
    assert generator.diff(new, new) == []


def test_only_the_generator_imports_torch() -> None:
    import ast

    # The ledger generator (with its probe table) and the verifier's child
    # process (which runs the user's code) are the places that may import
    # torch; none is ever imported by `check`.
    allowed = {ROOT / "autograd_lint" / "ledger.py", ROOT / "autograd_lint" / "ledger_probes.py", ROOT / "autograd_lint" / "verify" / "child.py"}
    for path in sorted((ROOT / "autograd_lint").rglob("*.py")):
        if path in allowed:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                mods = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                mods = [node.module or ""]
            else:
                continue
            assert not any(m == "torch" or m.startswith("torch.") for m in mods), f"{path}:{node.lineno}"


@pytest.mark.parametrize(
    ("op", "saves"),
    [("torch.nn.functional.leaky_relu", True), ("torch.nn.LeakyReLU", True), ("torch.nn.functional.relu", True), ("torch.nn.functional.hardtanh", False), ("torch.nn.Dropout", False)],
)
def test_in_place_forms_say_whether_they_save_their_output(ledger: L.Ledger, op: str, saves: bool) -> None:
    """Run with `inplace=True`, leaky ReLU and ReLU save their output (their
    written input); hardtanh and dropout save nothing it holds."""
    assert ledger.entries[op].inplace_saves_result is saves
