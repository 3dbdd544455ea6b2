"""What the AGL1xx messages tell the user to keep: `.item()` only for a
value shown to hold one element (its own `.item()` or `.backward()` is
called: both raise on anything else), `.detach()` for any other tensor, and
always a subject, even for an expression too long to quote."""

from __future__ import annotations

import pytest

from autograd_lint import catalog
from autograd_lint.config import Settings
from autograd_lint.engine import lint_source

LOOP = """import torch

def train(loader, criterion):
    model = torch.nn.Linear(3, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    kept = []
    for x, y in loader:
        logits = model(x)
        loss = criterion(logits, y)
{body}
        opt.step()
    print(len(kept))
"""


def _message(body: str) -> str:
    source = LOOP.format(body="\n".join("        " + line for line in body.splitlines()))
    findings = [f for f in lint_source("train.py", source.encode(), Settings(enabled=catalog.resolve_selection(None))) if f.code.startswith("AGL10")]
    assert len(findings) == 1, findings
    return findings[0].message


@pytest.mark.parametrize(
    "body, suggests",
    [
        # The loss is backpropagated as it is: one element.
        ("loss.backward()\nkept.append(loss)", "store `loss.item()` or `loss.detach()`"),
        ("loss.backward()\nprint(loss.item())\nkept.append(loss * 2)", "store `(loss * 2).item()` or `(loss * 2).detach()`"),
        # The logits share the loss's graph but are a batch: `.item()` raises.
        ("loss.backward()\nkept.append(logits)", "store `logits.detach()`"),
        # What is reduced before backward says nothing of the variable itself.
        ("loss.mean().backward()\nkept.append(loss)", "store `loss.detach()`"),
        # Given a gradient, backward takes a tensor of any shape.
        ("loss.backward(torch.ones_like(loss))\nkept.append(loss)", "store `loss.detach()`"),
    ],
)
def test_item_is_suggested_only_for_one_element(body: str, suggests: str) -> None:
    message = _message(body)
    assert message.endswith(suggests), message


def test_a_long_expression_is_still_named() -> None:
    message = _message("loss.backward()\nkept.append(torch.nn.functional.mse_loss(logits, y.float(), reduction='sum'))")
    assert message.startswith("`torch.nn.functional.mse_loss(…` is stored in `kept`"), message
    assert "store its `.detach()`" in message


CARRIED = """import torch

rnn = torch.nn.{cls}(4, 8)
opt = torch.optim.SGD(rnn.parameters(), lr=0.1)
state = {init}
for x in batches:
    out, state = rnn(x, state)
    loss = out.pow(2).mean()
    opt.zero_grad()
    loss.backward(retain_graph=True)
    opt.step()
"""


@pytest.mark.parametrize(
    "cls, init, cut",
    [
        # An LSTM's (h, c) tuple has no `.detach()` of its own: detach each.
        ("LSTM", "(torch.zeros(1, 2, 8), torch.zeros(1, 2, 8))", "`state = tuple(s.detach() for s in state)`"),
        ("GRU", "torch.zeros(1, 2, 8)", "`state = state.detach()`"),
    ],
)
def test_agl104_says_how_to_cut_the_state_it_names(cls: str, init: str, cut: str) -> None:
    source = CARRIED.format(cls=cls, init=init).encode()
    findings = [f for f in lint_source("rnn.py", source, Settings(enabled=catalog.resolve_selection(None))) if f.code == "AGL104"]
    assert len(findings) == 1, findings
    assert f"start each iteration with {cut}" in findings[0].message


def test_a_store_into_a_nested_item_names_its_container() -> None:
    # `history["train"][epoch] = loss`: stored in what `history` holds, not
    # in a container the message cannot name ("`?`").
    source = LOOP.replace("    kept = []\n", "    history = dict(train=dict())\n").replace("    print(len(kept))\n", "    print(len(history))\n")
    source = source.format(body="        loss.backward()\n        history['train'][len(history['train'])] = loss")
    findings = [f for f in lint_source("train.py", source.encode(), Settings(enabled=catalog.resolve_selection(None))) if f.code.startswith("AGL10")]
    assert len(findings) == 1, findings
    assert "is stored in `history`" in findings[0].message, findings[0].message
