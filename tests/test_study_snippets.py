"""The minimal snippets of the study behind the AGL5xx family and its
additions (its Appendix A, the seeds of the rules' fixtures): each positive
is found by the rule it seeds (and by nothing else), and each look-alike
negative twin is not flagged by any rule. Where the study gives only the
flagged line (c08), the block it names is built in front of it."""

from __future__ import annotations

import pytest

from autograd_lint import catalog
from autograd_lint.config import Settings
from autograd_lint.engine import lint_source

HEADER = """import torch, torch.nn as nn, torch.nn.functional as F
from torch.utils.checkpoint import checkpoint
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
loader = [(torch.randn(8, 4), torch.randn(8, 1)) for _ in range(3)]
"""

# name -> (the codes expected, the body)
SNIPPETS = {
    "c01": (('AGL501',), """\
model = nn.Linear(4, 1); opt = torch.optim.SGD(model.parameters(), lr=0.1); crit = nn.MSELoss()
for x, y in loader:
    opt.zero_grad(); out = model(x)
    loss = crit(out.detach(), y)
    loss.requires_grad = True
    loss.backward(); opt.step()
"""),
    "c02": (('AGL502', 'AGL502'), """\
w = torch.randn(4, 1, requires_grad=True).to(device)
b = torch.zeros(1, requires_grad=True).cuda()
opt = torch.optim.SGD([w, b], lr=0.1)
"""),
    "c02b": (('AGL502',), """\
class Scaler(nn.Module):
    def __init__(self):
        super().__init__()
        self.alpha = nn.Parameter(torch.ones(1)).to(device)
        self.lin = nn.Linear(4, 1)
    def forward(self, x): return self.lin(x) * self.alpha
"""),
    "c03": (('AGL503',), """\
class MLP(nn.Module):
    def __init__(self, depth):
        super().__init__()
        self.layers = [nn.Linear(4, 4) for _ in range(depth)]
        self.head = nn.Linear(4, 1)
    def forward(self, x):
        for layer in self.layers: x = torch.relu(layer(x))
        return self.head(x)
"""),
    "c04": (('AGL206',), """\
model = nn.Linear(4, 1); opt = torch.optim.SGD(model.parameters(), lr=0.1); best_loss = float("inf")
for epoch in range(10):
    for x, y in loader:
        opt.zero_grad(); loss = F.mse_loss(model(x), y); loss.backward(); opt.step()
    if loss.item() < best_loss:
        best_loss, best_model_wts = loss.item(), model.state_dict()
model.load_state_dict(best_model_wts)
"""),
    "c05": (('AGL505',), """\
model = nn.Linear(4, 1); opt = torch.optim.SGD(model.parameters(), lr=0.1)
scaler = torch.amp.GradScaler()
for x, y in loader:
    opt.zero_grad()
    with torch.autocast(device.type): loss = F.mse_loss(model(x), y)
    scaler.scale(loss).backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    scaler.step(opt); scaler.update()
"""),
    "c06": (('AGL104', 'AGL205'), """\
rnn = nn.GRU(4, 8, batch_first=True); head = nn.Linear(8, 1)
opt = torch.optim.SGD(list(rnn.parameters()) + list(head.parameters()), lr=0.1)
hidden = None
for x, y in loader:
    opt.zero_grad()
    out, hidden = rnn(x.unsqueeze(1), hidden)
    loss = F.mse_loss(head(out[:, -1]), y)
    loss.backward(retain_graph=True); opt.step()
"""),
    "c07": (('AGL304',), """\
torch.autograd.set_detect_anomaly(True)
model = nn.Linear(4, 1); opt = torch.optim.SGD(model.parameters(), lr=0.1)
for x, y in loader:
    opt.zero_grad(); F.mse_loss(model(x), y).backward(); opt.step()
"""),
    "c08": (('AGL305',), """\
blk = nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.1))
x = torch.randn(8, 4, requires_grad=True)
x = checkpoint(blk, x, use_reentrant=False, preserve_rng_state=False)   # blk contains nn.Dropout(0.1)
"""),
    "c09": (('AGL504',), """\
model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
model[0].requires_grad = False
"""),
    "c10": (('AGL506',), """\
class Temp(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 1)
        self.log_t = nn.Parameter(torch.zeros(1))
    def forward(self, x):
        t = self.log_t.exp().item()
        return self.lin(x) / t
"""),
    "c16": (('AGL105',), """\
model = nn.Linear(4, 1); opt = torch.optim.SGD(model.parameters(), lr=0.1)
for x, y in loader:
    opt.zero_grad(); loss = F.mse_loss(model(x), y)
    loss.backward(retain_graph=True); opt.step()      # the only backward in the iteration
"""),
    "negA": ((), """\
def dummy_loss():
    loss = torch.randn(1); loss.requires_grad = True
    return loss
"""),
    "negB": ((), """\
gru = nn.GRU(4, 8)
h0 = torch.zeros(1, 8, 8, requires_grad=True).cuda()
out, h = gru(torch.randn(3, 8, 4).cuda(), h0)
"""),
    "negC": ((), """\
class MLP(nn.Module):
    def __init__(self, depth):
        super().__init__()
        self.layers = [nn.Linear(4, 4) for _ in range(depth)]
        for i, l in enumerate(self.layers): self.add_module(str(i), l)
    def forward(self, x):
        for layer in self.layers: x = layer(x)
        return x
"""),
    "negD": ((), """\
model = nn.Linear(4, 1)
sd = model.state_dict(); sd["meta"] = {"epoch": 3}; torch.save(sd, "/tmp/ckpt.pt")
"""),
    "negR": ((), """\
from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import checkpoint_wrapper
layer = nn.Linear(4, 4)
wrapped = checkpoint_wrapper(layer, preserve_rng_state=False)
"""),
}


@pytest.mark.parametrize("name", sorted(SNIPPETS))
def test_snippet(name: str) -> None:
    codes, body = SNIPPETS[name]
    findings = lint_source(f"{name}.py", (HEADER + body).encode(), Settings(enabled=catalog.resolve_selection(None)))
    assert sorted(f.code for f in findings) == sorted(codes), [(f.code, f.line, f.message) for f in findings]
