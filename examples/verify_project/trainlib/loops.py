"""A small training library with two bugs autograd-lint finds and the
verifier confirms: the training loop keeps every step's graph in a list, and
evaluation runs the model with grad enabled."""

import torch
from torch import nn


def make_data(n_batches: int = 4, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    return [(torch.randn(16, 8, generator=g), torch.randn(16, 1, generator=g)) for _ in range(n_batches)]


def train(model: nn.Module, batches, lr: float = 0.05) -> list:
    optimizer = torch.optim.SGD(model.parameters(), lr=lr)
    criterion = nn.MSELoss()
    losses = []
    for x, y in batches:
        loss = criterion(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss)
    return [float(v) for v in losses]


def evaluate(model: nn.Module, batches) -> float:
    model.eval()
    total = 0.0
    for x, y in batches:
        total += nn.functional.mse_loss(model(x), y).item()
    return total / len(batches)
