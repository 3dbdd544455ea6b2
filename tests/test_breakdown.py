"""bench/breakdown.py: where a cold run's CPU goes, and the bounds it
leaves (issue 27). Timings are not checked (no test depends on the
machine's speed): what each file is counted as, and the arithmetic."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from autograd_lint import catalog
from autograd_lint.engine import lint_source
from autograd_lint.settings import Settings

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
import breakdown  # noqa: E402

TRAINS = """\
import torch


def train(model, opt, batches):
    losses = []
    for x, y in batches:
        loss = torch.nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss)
    return losses
"""

QUIET = """\
import torch


def scale(x: torch.Tensor, k: int) -> torch.Tensor:
    return x * k
"""

UNTRIGGERED = "def add(a, b):\n    return a + b\n"


def test_files_are_told_apart_by_their_candidates(tmp_path: Path) -> None:
    files = {"trains.py": TRAINS, "quiet.py": QUIET, "plain.py": UNTRIGGERED, "broken.py": "import torch\ndef f(:\n"}
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    (tmp_path / "latin.py").write_bytes(b"import torch\nname = '\xe9'\n")  # not UTF-8, no coding line
    default = Settings(enabled=catalog.resolve_selection(None))
    assert [f.code for f in lint_source(str(tmp_path / "trains.py"), TRAINS.encode(), default)] == ["AGL101"]
    parts = breakdown.measure_parts(sorted(tmp_path.iterdir()))
    assert (parts.with_candidates, parts.quiet, parts.not_parsed) == (1, 1, 3)
    assert all(seconds >= 0 for seconds in parts.seconds.values())


def test_only_the_selected_rules_count(tmp_path: Path) -> None:
    """A file whose only candidate belongs to a rule not selected is quiet."""
    path = tmp_path / "trains.py"
    path.write_text(TRAINS)
    only_zeroing = Settings(enabled=catalog.resolve_selection(["AGL4"]))
    parts = breakdown.measure_parts([path], only_zeroing)
    assert (parts.with_candidates, parts.quiet) == (0, 1)


def test_bounds_remove_each_part_from_the_cold_run() -> None:
    parts = breakdown.Parts(
        seconds={"parse": 1.0, "lower": 0.5, "interpret_candidates": 2.0, "interpret_quiet": 4.0, "export": 0.5},
        observers={"interpret_candidates": 0.5, "interpret_quiet": 1.5},
    )
    got = dict(breakdown.bounds(10.0, 2.0, parts))
    assert list(got.values()) == pytest.approx([5.0, 4.0, 3.0, 2.75, 2.0])
    rows = breakdown.table(10.0, 2.0, parts)
    assert "| the rest (start-up, discovery, LibCST for files with a finding, cache, output) | 2.00 | 20% |" in rows
    assert rows[-3].endswith("| 3.00 |")
