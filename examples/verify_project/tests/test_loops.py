"""The project's own test: `python -m pytest tests/test_loops.py`."""

import torch

from trainlib.loops import evaluate, make_data, train


def test_training_lowers_the_loss() -> None:
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
    batches = make_data()
    before = evaluate(model, batches)
    train(model, batches)
    assert evaluate(model, batches) <= before
