"""The project's own entry point: `python run.py`."""

import torch

from trainlib.loops import evaluate, make_data, train


def main() -> None:
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
    batches = make_data()
    history = train(model, batches)
    print("train", history[-1], "eval", evaluate(model, batches))


if __name__ == "__main__":
    main()
