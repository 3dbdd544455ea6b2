"""Shared helpers for the CLI-level tests (not a test module)."""

from __future__ import annotations

from pathlib import Path

import pytest

from autograd_lint import cli

# A file the engine reports as AGL001 whatever rules exist: it mentions
# `torch` (so the trigger pre-filter parses it) and does not parse.
SYNTAX_ERROR_SOURCE = "import torch\n\ndef f(:\n    pass\n"
CLEAN_SOURCE = "import torch\n\nx = torch.zeros(3)\n"


def write(path: Path, text: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def pyproject(root: Path, body: str) -> Path:
    return write(root / "pyproject.toml", "[tool.autograd-lint]\n" + body)


# A notebook's cells: the setup (with a line magic) and the training loop,
# whose append (row 8) is an AGL101.
NOTEBOOK_SETUP = "%matplotlib inline\nimport torch\nmodel = torch.nn.Linear(3, 1)\nopt = torch.optim.SGD(model.parameters(), lr=0.1)"
NOTEBOOK_TRAINING = """\
losses = []
for step in range(10):
    x = torch.randn(4, 3)
    loss = model(x).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    losses.append(loss)"""

# A training loop that keeps every step's graph (AGL101 at line 10; the
# `.detach()` fix is safe: nothing differentiates the list later).
RETENTION_LOOP = """\
import torch


def train(model, loader, opt):
    losses = []
    for x, y in loader:
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        losses.append(loss)
        opt.zero_grad()
    return len(losses)
"""


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """Run the CLI in-process: (exit code, stdout, stderr)."""
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err
