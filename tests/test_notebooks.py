"""Jupyter notebooks: code cells linted together as one program, IPython
syntax masked without moving a row, positions given per cell in every
output format, a cell that does not parse reported alone."""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
import pytest
from _cli_support import run, write
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output, new_raw_cell

from autograd_lint.notebook import mask_ipython, program

TRAINING = """\
losses = []
for step in range(10):
    x = torch.randn(4, 3)
    loss = model(x).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    losses.append(loss)"""


def _notebook(*cells) -> str:
    nb = new_notebook()
    nb.cells = list(cells)
    return nbformat.writes(nb)


def training_notebook() -> str:
    """Markdown, a cell with a line magic, the training cell (with outputs)
    and a shell escape: one AGL101, in cell 3 at row 8."""
    return _notebook(
        new_markdown_cell("# Training\n\nA linear model, ten steps."),
        new_code_cell("%matplotlib inline\nimport torch\nmodel = torch.nn.Linear(3, 1)\nopt = torch.optim.SGD(model.parameters(), lr=0.1)"),
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


def test_fix_leaves_a_notebook_byte_identical_and_reports_its_findings(tmp_path: Path, capsys) -> None:
    nb = write(tmp_path / "train.ipynb", training_notebook())
    before = nb.read_bytes()
    code, out, _ = run(capsys, "--fix", "--unsafe-fixes", "--no-cache", "--format", "concise", str(nb))
    assert code == 1 and "cell 3:8:5: AGL101" in out
    assert nb.read_bytes() == before


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


def test_a_cached_notebook_reports_the_same(tmp_path: Path, capsys) -> None:
    nb = write(tmp_path / "train.ipynb", training_notebook())
    argv = ("--format", "json", "-j", "1", "--exit-zero", "--cache-dir", str(tmp_path / "cache"), str(nb))
    cold = run(capsys, *argv)[1]
    assert run(capsys, *argv)[1] == cold and '"cell": 3' in cold


def test_the_program_keeps_every_cells_rows() -> None:
    prog = program(training_notebook().encode())
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
