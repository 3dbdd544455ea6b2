"""No input brings a run down: generated programs, mutated files and odd
bytes. Bounded to a few seconds: hypothesis runs a fixed, small number of
examples, derandomised so CI is reproducible.

Properties: the engine never raises; every finding lies within the file;
exit codes are the documented ones (0 clean, 1 findings, 2 error), with no
traceback; ``--fix --unsafe-fixes`` never breaks a file that compiled and
never empties one.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from _cli_support import RETENTION_LOOP, run, write

hypothesis = pytest.importorskip("hypothesis")
hypothesmith = pytest.importorskip("hypothesmith")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from autograd_lint import catalog  # noqa: E402
from autograd_lint.engine import lint_source  # noqa: E402
from autograd_lint.files import split_lines  # noqa: E402
from autograd_lint.fix import fix_source  # noqa: E402
from autograd_lint.settings import Settings  # noqa: E402

SETTINGS = Settings(enabled=catalog.resolve_selection(None))
FUZZ = settings(max_examples=25, deadline=None, derandomize=True, database=None, suppress_health_check=list(HealthCheck))
TORCH_LINES = [
    "import torch\n", "losses = []\n", "loss = model(x).sum()\n", "loss.backward()\n", "losses.append(loss)\n",
    "total += loss\n", "opt.zero_grad(set_to_none=False)\n", "y = torch.sigmoid(x)\n", "y.mul_(2)\n",
    "with torch.no_grad():\n    pass\n", "model.eval()\n", "for x in loader:\n    out = model(x)\n",
]


def _compiles(source: bytes) -> bool:
    try:
        compile(source, "<fuzz>", "exec")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return True


def check_source(source: bytes) -> None:
    findings = lint_source("fuzz.py", source, SETTINGS)
    try:
        n_lines = max(len(split_lines(source.decode("utf-8", "replace"))), 1)
    except Exception:
        n_lines = 1
    for f in findings:
        assert 1 <= f.start.row <= n_lines + 1 and f.start.column >= 1, f
        assert not f.message.startswith("internal error"), f
    result = fix_source("fuzz.py", source, SETTINGS, unsafe=True)
    if result.changed:
        new = result.fixed_source
        assert new.strip(), "a fix emptied the file"
        if _compiles(source):
            assert _compiles(new), "a fix broke a file that compiled"
        again = fix_source("fuzz.py", new, SETTINGS, unsafe=True)
        assert not again.changed, "a second fix changed the file again"


@FUZZ
@given(hypothesmith.from_grammar(), st.lists(st.sampled_from(TORCH_LINES), max_size=6))
def test_generated_programs(code: str, extra: list[str]) -> None:
    check_source(("".join(extra) + code).encode("utf-8", "surrogatepass"))


@FUZZ
@given(st.data())
def test_mutated_real_files(data) -> None:
    base = RETENTION_LOOP.encode()
    cut = data.draw(st.integers(0, len(base)))
    flips = data.draw(st.lists(st.tuples(st.integers(0, max(len(base) - 1, 0)), st.integers(0, 255)), max_size=4))
    mutated = bytearray(base[:cut] if data.draw(st.booleans()) else base)
    for i, b in flips:
        if i < len(mutated):
            mutated[i] = b
    check_source(bytes(mutated))


ODD_INPUTS = {
    "empty": b"",
    "nul": b"import torch\nx = 1\x00\n",
    "bom": b"\xef\xbb\xbf" + RETENTION_LOOP.encode(),
    "cr_only": RETENTION_LOOP.replace("\n", "\r").encode(),
    "form_feed": b"import torch\n\x0c\ndef f():\n    \x0c\n    return 1\n",
    "undecodable": b"import torch\nx = '\xff\xfe'\n",
    "long_line": b"import torch\nx = '" + b"a" * 1_000_000 + b"'\n",
    "deep": b"import torch\nx = " + b"[" * 3000 + b"]" * 3000 + b"\n",
}


@pytest.mark.parametrize("name", sorted(ODD_INPUTS))
def test_odd_inputs_through_the_engine(name: str) -> None:
    check_source(ODD_INPUTS[name])


def test_odd_files_through_the_cli(tmp_path: Path, capsys) -> None:
    for name, data in ODD_INPUTS.items():
        write(tmp_path / f"{name}.py", data)
    write(tmp_path / "buggy.py", RETENTION_LOOP)
    (tmp_path / "x.py").mkdir()  # a directory named like a module
    os.symlink(tmp_path / "loop_a", tmp_path / "loop_b")
    os.symlink(tmp_path / "loop_b", tmp_path / "loop_a")  # a symlink loop
    code, out, err = run(capsys, "--format", "concise", str(tmp_path))
    assert code in (1, 2) and "Traceback" not in err
    assert "buggy.py:10:9: AGL101" in out
    assert "deep.py" in out and "internal error" not in err
    code, out, err = run(capsys, "--fix", "--unsafe-fixes", str(tmp_path))
    assert code in (0, 1, 2) and "Traceback" not in err
    for name, data in ODD_INPUTS.items():
        after = (tmp_path / f"{name}.py").read_bytes()
        assert after == data or (after.strip() and _compiles(after))
