"""Jupyter notebooks: code cells linted together as one program, IPython
syntax masked without moving a row, positions given per cell in every
output format, a cell that does not parse reported alone."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import nbformat
import pytest
from _cli_support import NOTEBOOK_SETUP, NOTEBOOK_TRAINING as TRAINING, run, write
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output, new_raw_cell

from autograd_lint.files import split_lines
from autograd_lint.notebook import NotebookError, cell_sources, fixed_cells, mask_ipython, program_of, separator_for
from autograd_lint.notebook_json import source_values

def _notebook(*cells) -> str:
    nb = new_notebook()
    nb.cells = list(cells)
    return nbformat.writes(nb)


def training_notebook() -> str:
    """Markdown, a cell with a line magic, the training cell (with outputs)
    and a shell escape: one AGL101, in cell 3 at row 8."""
    return _notebook(
        new_markdown_cell("# Training\n\nA linear model, ten steps."),
        new_code_cell(NOTEBOOK_SETUP),
        new_code_cell(TRAINING, outputs=[new_output("stream", name="stdout", text="done\n")], execution_count=3),
        new_code_cell("!nvidia-smi"),
    )


def _json(capsys, *argv: str) -> list[dict]:
    code, out, err = run(capsys, "--format", "json", "--no-cache", "-j", "1", "--exit-zero", *argv)
    assert code == 0, err
    return json.loads(out)


def test_a_training_notebook_gives_one_finding_in_its_cell(tmp_path: Path, capsys) -> None:
    nb = write(tmp_path / "train.ipynb", training_notebook())
    (f,) = _json(capsys, str(nb))
    assert (f["code"], f["cell"], f["location"], f["end_location"]) == ("AGL101", 3, {"row": 8, "column": 5}, {"row": 8, "column": 24})
    assert "at line 4" in f["message"]  # the loss's row, in the same cell
    code, out, _ = run(capsys, "--format", "concise", "--no-cache", str(nb))
    assert code == 1 and out.startswith(f"{nb}:cell 3:8:5: AGL101 ")
    code, out, _ = run(capsys, "--no-cache", str(nb))
    assert "8 |     losses.append(loss)" in out  # the snippet is the cell's row


def test_a_cell_that_does_not_parse_is_reported_alone(tmp_path: Path, capsys) -> None:
    nb = write(
        tmp_path / "broken.ipynb",
        _notebook(
            new_code_cell("import torch\nlosses = []"),
            new_code_cell("def f(:\n    pass"),
            new_code_cell("for i in range(3):\n    loss = torch.ones(1, requires_grad=True) * 2\n    loss.backward()\n    losses.append(loss)"),
        ),
    )
    found = [(f["code"], f["cell"], f["location"]["row"]) for f in _json(capsys, str(nb))]
    # Cell 3 uses what cell 1 defined: the cells are one program.
    assert found == [("AGL001", 2, 1), ("AGL101", 3, 4)]


def test_a_value_from_an_earlier_cell_is_followed(tmp_path: Path, capsys) -> None:
    nb = write(
        tmp_path / "split.ipynb",
        _notebook(
            new_code_cell("import torch\nhistory = []"),
            new_raw_cell("not code"),
            new_code_cell("for epoch in range(2):\n    loss = torch.ones(1, requires_grad=True) * 2\n    loss.backward()\n    history.append(loss)"),
        ),
    )
    assert [(f["code"], f["cell"]) for f in _json(capsys, str(nb))] == [("AGL101", 3)]


@pytest.mark.parametrize(
    "cell, masked",
    [
        ("%matplotlib inline\nx = 1", "pass\nx = 1"),
        ("!pip install torch\nx = 1", "pass\nx = 1"),
        ("files = !ls\nx = 1", "files = None\nx = 1"),
        ("for i in range(3):\n    %time f(i)", "for i in range(3):\n    pass"),
        ("torch.nn.Linear?\nx = 1", "pass\nx = 1"),
        ("?torch.zeros", "pass"),
        ("%%time\nx = f()\ny = 2", "pass\nx = f()\ny = 2"),
        ("%%bash\necho hi\nls -l", "pass\n\n"),
        ("get_ipython().run_line_magic('pwd', '')", "get_ipython().run_line_magic('pwd', '')"),
        ("x = 'what?'\ny = a % b", "x = 'what?'\ny = a % b"),
    ],
)
def test_ipython_syntax_is_masked_row_for_row(cell: str, masked: str) -> None:
    assert mask_ipython(cell) == masked
    assert len(masked.split("\n")) == len(cell.split("\n"))


def test_noqa_in_a_cell_and_markdown_is_not_code(tmp_path: Path, capsys) -> None:
    nb = write(
        tmp_path / "n.ipynb",
        _notebook(
            new_markdown_cell("losses.append(loss) is what we must not do"),
            new_code_cell("import torch\nmodel = torch.nn.Linear(3, 1)"),
            new_code_cell(TRAINING.replace("losses.append(loss)", "losses.append(loss)  # noqa: AGL101")),
        ),
    )
    assert _json(capsys, str(nb)) == []


def test_folders_find_notebooks_but_not_checkpoints(tmp_path: Path, capsys) -> None:
    write(tmp_path / "nb" / "train.ipynb", training_notebook())
    write(tmp_path / "nb" / ".ipynb_checkpoints" / "train-checkpoint.ipynb", training_notebook())
    found = _json(capsys, str(tmp_path))
    assert [Path(f["filename"]).name for f in found] == ["train.ipynb"]
    # include = only Python files: the notebook is not looked at.
    write(tmp_path / "pyproject.toml", '[tool.autograd-lint]\ninclude = ["*.py"]\n')
    assert _json(capsys, str(tmp_path)) == []


def test_a_file_that_is_not_a_notebook_is_agl001(tmp_path: Path, capsys) -> None:
    nb = write(tmp_path / "bad.ipynb", "{not json")
    (f,) = _json(capsys, str(nb))
    assert f["code"] == "AGL001" and f["cell"] is None and "cannot read this notebook" in f["message"]
    code, out, err = run(capsys, "--diff", "--no-cache", str(nb))
    assert (code, out) == (0, "") and "warning" not in err  # nothing to fix, nothing else to say


def _outside_sources(data: bytes, cells: set[int]) -> list[str]:
    """The notebook's JSON text cut around the source values of ``cells``
    (0-based): what a fix of those cells must leave byte for byte."""
    text = data.decode("utf-8")
    pieces, at = [], 0
    for index, value in enumerate(source_values(text)):
        if index in cells:
            pieces.append(text[at : value.start])
            at = value.end
    return pieces + [text[at:]]


FIXED_TRAINING = TRAINING.replace("losses.append(loss)", "losses.append(loss.detach())")


def test_fix_edits_only_the_cells_source(tmp_path: Path, capsys) -> None:
    nb = nbformat.reads(training_notebook(), as_version=4)
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.cells[2].metadata["tags"] = ["train"]
    path = write(tmp_path / "train.ipynb", nbformat.writes(nb))
    before = path.read_bytes()
    code, out, err = run(capsys, "--fix", "--unsafe-fixes", "--no-cache", "--format", "concise", str(path))
    assert code == 0, out + err
    after = path.read_bytes()
    assert _outside_sources(after, {2}) == _outside_sources(before, {2})  # outputs, ids, metadata, layout
    new = nbformat.reads(after.decode(), as_version=4)
    nbformat.validate(new)
    assert [c.source for c in new.cells] == [c.source for c in nb.cells[:2]] + [FIXED_TRAINING, nb.cells[3].source]
    assert new.cells[2].outputs == nb.cells[2].outputs and new.cells[2].execution_count == 3
    assert _json(capsys, str(path)) == []


def test_fix_keeps_a_hand_written_layout(tmp_path: Path, capsys) -> None:
    # Two-space indentation, keys in the writer's order, one-string sources,
    # non-ASCII text, no newline at the end: all kept.
    doc = {
        "nbformat": 4,
        "nbformat_minor": 5,
        "metadata": {"language_info": {"name": "python"}},
        "cells": [
            {"id": "a1", "cell_type": "markdown", "metadata": {}, "source": "# Entraînement (ß)"},
            {"id": "b2", "cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [], "source": "import torch\nmodel = torch.nn.Linear(3, 1)\nopt = torch.optim.SGD(model.parameters(), lr=0.1)"},
            {"id": "c3", "cell_type": "code", "metadata": {"collapsed": True}, "execution_count": 7, "outputs": [], "source": TRAINING},
        ],
    }
    path = write(tmp_path / "hand.ipynb", json.dumps(doc, indent=2, ensure_ascii=False))
    before = path.read_bytes()
    code, _, err = run(capsys, "--fix", "--unsafe-fixes", "--no-cache", str(path))
    assert code == 0, err
    after = path.read_bytes()
    assert _outside_sources(after, {2}) == _outside_sources(before, {2})
    assert json.loads(after)["cells"][2]["source"] == FIXED_TRAINING  # still one string
    nbformat.validate(nbformat.reads(after.decode(), as_version=4))


def test_diff_shows_each_changed_cell_and_writes_nothing(tmp_path: Path, capsys) -> None:
    cells = [
        new_code_cell("from torch import nn\nmodel = nn.Linear(2, 1)"),
        new_code_cell("%%time\ndef evaluate(model, loader):\n    model.eval()\n    total = 0.0\n    for x in loader:\n        !echo batch\n        total += float(model(x).sum())\n    return total"),
    ]
    path = write(tmp_path / "eval.ipynb", _notebook(*cells))
    before = path.read_bytes()
    code, out, _ = run(capsys, "--diff", "--unsafe-fixes", "--no-cache", str(path))
    assert code == 1 and path.read_bytes() == before
    # The decorator needs `torch`: the import goes to the first cell, and
    # each cell has its own diff.
    assert f"--- a/{path}:cell 1\n+++ b/{path}:cell 1\n" in out and "+import torch\n" in out
    assert f"--- a/{path}:cell 2\n+++ b/{path}:cell 2\n" in out and "+@torch.no_grad()\n def evaluate" in out
    code, out, _ = run(capsys, "--fix", "--unsafe-fixes", "--show-fixes", "--no-cache", str(path))
    assert code == 0 and f"- {path}:cell 2:7:24: AGL301 " in out
    fixed = [c.source for c in nbformat.reads(path.read_text(), as_version=4).cells]
    assert fixed[0] == "from torch import nn\nimport torch\nmodel = nn.Linear(2, 1)"
    assert fixed[1].startswith("%%time\n@torch.no_grad()\ndef evaluate") and "        !echo batch\n" in fixed[1]


def test_fix_a_notebook_on_stdin(monkeypatch, capsys) -> None:
    import io
    import sys

    from autograd_lint.cli import main

    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(training_notebook().encode())))
    assert main(["--fix", "--unsafe-fixes", "--no-cache", "--stdin-filename", "train.ipynb", "-"]) == 0
    out = capsys.readouterr().out
    assert nbformat.reads(out, as_version=4).cells[2].source == FIXED_TRAINING


def test_a_fix_that_would_touch_a_masked_line_or_a_boundary_is_refused() -> None:
    cells = [("code", "import torch"), ("code", "for x in range(3):\n    %time y = x\n    z = x")]
    sep = separator_for(cells)
    prog = program_of(cells, sep)
    assert prog.text == f"import torch\n{sep}\nfor x in range(3):\n    pass\n    z = x\n"
    indented = prog.text.replace("    pass\n    z", "        pass\n        z").replace("for x", "if True:\n    for x")
    with pytest.raises(NotebookError, match="IPython line in cell 2"):
        fixed_cells(cells, prog, indented)
    with pytest.raises(NotebookError, match="boundary"):
        fixed_cells(cells, prog, prog.text.replace(f"{sep}\n", ""))
    edited = prog.text.replace("z = x", "z = x + 1")
    assert fixed_cells(cells, prog, edited) == {1: "for x in range(3):\n    %time y = x\n    z = x + 1"}


FIXED_FIXTURES = sorted(p for p in (Path(__file__).parent.parent / "fixtures").rglob("*.fixed.py"))


@pytest.mark.parametrize("fixed", FIXED_FIXTURES, ids=lambda p: str(p.relative_to(p.parents[1])))
def test_every_fixture_fixes_the_same_as_a_notebook(fixed: Path) -> None:
    """Each fixed fixture, cut into one cell per top-level statement with
    IPython lines between them, fixes in the notebook as in the file."""
    from autograd_lint.config import load_settings
    from autograd_lint.fix import fix_notebook, fix_source

    source = fixed.with_name(fixed.name.replace(".fixed.py", ".py"))
    text = source.read_text()
    lines = split_lines(text, keepends=True)
    starts = [(s.decorator_list[0] if getattr(s, "decorator_list", None) else s).lineno - 1 for s in ast.parse(text).body]
    pieces = ["".join(lines[a:b]) for a, b in zip([0, *starts[1:]], [*starts[1:], len(lines)])]
    cells = [new_markdown_cell("Notes")]
    for piece in pieces:
        cells += [new_code_cell("%%time\n" + piece.removesuffix("\n")), new_code_cell("!nvidia-smi\n%load_ext autoreload")]
    settings = load_settings([str(source)], None)[0]
    in_file = fix_source(str(source), text.encode(), settings, unsafe=True)
    in_notebook = fix_notebook(str(source.with_suffix(".ipynb")), _notebook(*cells).encode(), settings, unsafe=True)
    assert in_file.changed and in_notebook.changed, in_notebook.problems
    got = [c.source for c in nbformat.reads(in_notebook.fixed_source.decode(), as_version=4).cells if c.source.startswith("%%time\n")]
    assert "\n".join(c.removeprefix("%%time\n") for c in got) + "\n" == in_file.fixed_source.decode()
    assert {f.code for f in in_notebook.fixed} == {f.code for f in in_file.fixed}


def test_baseline_github_and_sarif_say_the_cell(tmp_path: Path, capsys, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    write(tmp_path / "train.ipynb", training_notebook())
    code, _, _ = run(capsys, "--no-cache", "--write-baseline", "base.json", "train.ipynb")
    assert code == 0
    code, out, _ = run(capsys, "--no-cache", "--baseline", "base.json", "--format", "concise", "train.ipynb")
    assert code == 0 and "AGL101" not in out
    _, out, _ = run(capsys, "--no-cache", "--format", "github", "train.ipynb")
    assert out.startswith("::warning file=train.ipynb,title=AGL101 (cell 3)::cell 3:8:5: ")
    _, out, _ = run(capsys, "--no-cache", "--format", "sarif", "train.ipynb")
    (result,) = json.loads(out)["runs"][0]["results"]
    assert result["properties"] == {"cell": 3} and result["message"]["text"].startswith("cell 3: ")
    assert "fixes" not in result  # its regions would be applied to the notebook's JSON
    (found,) = json.loads(run(capsys, "--no-cache", "--format", "json", "--exit-zero", "train.ipynb")[1])
    # JSON has the fix, in the cell's rows.
    assert found["fix"]["edits"] == [{"content": "    losses.append(loss.detach())", "end_location": {"row": 8, "column": 24}, "location": {"row": 8, "column": 1}}]


def test_a_cached_notebook_reports_the_same(tmp_path: Path, capsys) -> None:
    nb = write(tmp_path / "train.ipynb", training_notebook())
    argv = ("--format", "json", "-j", "1", "--exit-zero", "--cache-dir", str(tmp_path / "cache"), str(nb))
    cold = run(capsys, *argv)[1]
    assert run(capsys, *argv)[1] == cold and '"cell": 3' in cold


def test_the_program_keeps_every_cells_rows() -> None:
    prog = program_of(cell_sources(training_notebook().encode()))
    assert [(s.cell, s.first_row, s.rows) for s in prog.spans] == [(2, 1, 4), (3, 5, 8), (4, 13, 1)]
    assert prog.locate(12) == (3, 8) and prog.locate(14) is None


def test_verify_says_it_does_not_run_notebooks(tmp_path: Path, capsys, monkeypatch) -> None:
    from autograd_lint.verify.runner import main as verify_main

    monkeypatch.chdir(tmp_path)
    write(tmp_path / "train.ipynb", training_notebook())
    write(tmp_path / "run.py", "print('ran')\n")
    code = verify_main(["train.ipynb", "--", "python", "run.py"])
    out, err = capsys.readouterr()
    assert code == 0 and "verify does not run notebooks: 1 finding in notebooks not verified" in err
    assert "No findings to verify; the program was not run." in out
