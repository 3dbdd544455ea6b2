"""A file's summary and cache entry are the same bytes in every process.

A cache entry (and the summary in it, what other modules read) written by
one process must be what any other process would write for the same file:
CI shards, the editor and a pre-commit hook share a cache folder. Two fresh
interpreters with different ``PYTHONHASHSEED``s (other string hashes, other
object addresses), the second taking the files in reverse order (nothing a
file leaves behind in a process may change the next one's bytes), pickle
each file's summary, calls and whole cache entry (and its summary as a
module only imported); the bytes must be equal.

The sample: every fixture file (but the fixed goldens), and generated modules that reach the
analysis's bounds, where it keeps some facts of many (a value of more than
16 symbols, a function of more than 16 calls on its parameters), and
containers whose keys come in other orders (``bench/determinism.py`` runs
the same check on a whole corpus).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from _fixture_support import is_golden
from test_fixtures import FIXTURES

ROOT = Path(__file__).resolve().parent.parent

_RUN = """\
import json, sys
from hashlib import blake2b
from autograd_lint import catalog
from pathlib import Path
from autograd_lint import cache as cache_module
from autograd_lint.cache import Cache
from autograd_lint.engine import summarize_source
from autograd_lint.runner import analyse_file
from autograd_lint.settings import Settings

settings = Settings(enabled=catalog.resolve_selection(["ALL"]))
_dumps = getattr(Cache, "_dumps", None) or cache_module._dumps  # as an entry's parts are pickled


class Capture(Cache):
    payload = b""

    def _write(self, key, payload):
        self.payload = payload
        return True


out = {}
for p in sys.argv[1:]:
    analysis = analyse_file(p, settings)
    summary, calls = analysis.outline
    cache = Capture("unused", writable=True)
    cache.store(b"", analysis)
    imported = summarize_source(p, Path(p).read_bytes(), settings)
    out[p] = [blake2b(b, digest_size=16).hexdigest() for b in (_dumps(summary), _dumps(calls), cache.payload, _dumps(imported))]
print(json.dumps(out))
"""

# Attributes of a parameter joined into one value: more symbols than a
# value keeps (16, of equal path length), more facts than it holds unbounded.
_MANY_SYMBOLS = "import torch\n\n\ndef pick(cfg, flags):\n    out = cfg.a0\n" + "".join(f"    if flags.f{i}:\n        out = cfg.a{i}\n" for i in range(1, 60)) + "    return out\n"

# Calls on parameters: one call of a callee that is one of many attributes
# (its symbols arrive in the order of a set), more than a summary keeps.
_MANY_CALLS = (
    "import torch\n\n\ndef run(hooks, x, flags):\n    fn = hooks.h0\n"
    + "".join(f"    if flags.f{i}:\n        fn = hooks.h{i}\n" for i in range(1, 24))
    + "    y = fn(x)\n"
    + "".join(f"    hooks.m{i}(y, x)\n" for i in range(20))
    + "    return y\n"
)

# A call whose callee returns many symbols (30 attributes of a parameter),
# each resolving to three (the argument is one of three attributes): the
# join of what they resolve to passes MAX_FACTS on the way, and must keep the
# same symbols whatever order the set of them is taken in.
_MANY_RESOLVED = (
    "import torch\n\n\ndef pick(x, flags):\n    out = x.a0\n"
    + "".join(f"    if flags.f{i}:\n        out = x.a{i}\n" for i in range(1, 30))
    + "    return out\n\n\ndef run(p, flags):\n    y = p.b0\n    if flags.g1:\n        y = p.b1\n    if flags.g2:\n        y = p.b2\n"
    + "    return pick(y, flags)\n"
)


def _deep(i: int) -> str:
    """One value (``[a]``) a caller's substitution meets at two depths: 1
    (in the tuple) and 4 (in the lists), where what it holds (depth 5) is
    left as it is. Which comes first is the order of a set (variants with
    other names: other orders)."""
    return (
        f"import torch\n\n\ndef inner_{i}(a{i}, flag):\n    if flag:\n        return ([a{i}],)\n    return [[[[[a{i}]]]]]\n\n\n"
        f"def outer_{i}(x{i}, flag):\n    return inner_{i}(x{i}, flag)\n"
    )


def _many_callees(i: int) -> str:
    """A call through a name bound to any of 30 functions, each returning
    one of two attributes of its argument: what the calls return is joined
    in the order a set yields the functions, and passes MAX_FACTS on the
    way. Cut there, the few facts still to come would be kept (the join
    stays under MAX_FACTS) or not, as the order had it."""
    n = 30
    fns = "".join(f"def f{i}_{k}(x, flag):\n    if flag:\n        return x.a{k}\n    return x.b{k}\n\n\n" for k in range(n))
    pick = "".join(f"    if flags.c{k}:\n        fn = f{i}_{k}\n" for k in range(1, n))
    return f"import torch\n\n\n{fns}def run(x, flags, flag):\n    fn = f{i}_0\n{pick}    return fn(x, flag)\n"


def _items(i: int) -> str:
    """``.items()`` of a dict whose values are dicts: what it holds at any
    key is one dict (their join), not two, whichever of the values a later
    join of it meets first."""
    return (
        f"import torch\n\n\ndef table_{i}(cfg, d):\n"
        f'    t = {{"a{i}": {{"x": cfg.p}}, "b{i}": {{"y": cfg.q}}}}\n'
        "    if cfg.flag:\n        t = d\n    out = []\n    for k, v in t.items():\n        out.append(v)\n    return out\n"
    )


def _concat(i: int) -> str:
    """``list(a) + [b, c]``: one list, not two; a call of a name bound to
    either of two functions joins it with the other's value in the order
    of a set (left two lists, the join would merge them or not as that
    order had it)."""
    return (
        f"import torch\n\n\ndef cat_{i}(a, tok):\n    return list(a) + [tok.eos, tok.bos]\n\n\n"
        f"def other_{i}(a, tok):\n    return tok.pad\n\n\n"
        f"def run_{i}(a, tok, flag):\n    fn = cat_{i}\n    if flag:\n        fn = other_{i}\n    return fn(a, tok)\n"
    )


def _layers(i: int) -> str:
    """``self.layers``, a ``ModuleList`` its ``__init__`` makes, appended to
    in a helper that runs first (there it is a list, as ``append`` says):
    the class's attribute may be either, and which row an ``append`` of it
    follows must not be whichever the set yields first."""
    return (
        f"import torch\nfrom torch import nn\n\n\nclass Layer{i}(nn.Module):\n    def __init__(self, n):\n        super().__init__()\n"
        "        self.proj = nn.Linear(n, n)\n\n    def forward(self, x):\n        return self.proj(x)\n\n\n"
        f"class Stage{i}(nn.Module):\n    def __init__(self, config):\n        super().__init__()\n        self.layers = nn.ModuleList()\n"
        "        if config.hybrid:\n            self._init_hybrid(config)\n        else:\n            self._init(config)\n\n"
        f"    def _init_hybrid(self, config):\n        for i in range(config.n):\n            if i <= 1:\n                self.layers.append(nn.Identity())\n"
        f"            else:\n                self.layers.append(Layer{i}(config.n))\n\n"
        f"    def _init(self, config):\n        for i in range(config.n):\n            self.layers.append(Layer{i}(config.n))\n\n"
        "    def forward(self, hidden):\n        out = []\n        for layer in self.layers:\n            out.append(layer(hidden))\n        return out\n"
    )


def _sequential(i: int) -> str:
    """An ``nn.Sequential`` whose last layer is one of two modules (an
    in-place ReLU or an empty Sequential): what its output is (the op that
    saves it) is where both agree, not the first the set yields."""
    return (
        f"import torch\nfrom torch import nn\n\n\nclass Block{i}(nn.Module):\n    def __init__(self, n, act):\n        super().__init__()\n"
        "        self.act = nn.ReLU(inplace=True) if act else None\n        self.conv = nn.Conv2d(n, n, 3)\n\n"
        "    def fuse(self):\n        self.conv = nn.Sequential(self.conv, self.act if self.act is not None else nn.Sequential())\n\n"
        "    def forward(self, x):\n        return self.conv(x)\n"
    )


# Dicts whose keys come in other orders, joined (merged into one container).
_CONTAINERS = '''\
import torch


def stats(model, batch, flag):
    out = model(batch)
    if flag:
        d = {"loss": out.sum(), "acc": out.mean(), "n": 1}
    else:
        d = {"n": 2, "acc": out.max(), "loss": out.min()}
    return d


def nested(a, b, flag):
    x = {"left": a, "right": b, "both": (a, b)}
    if flag:
        x = {"both": (b, a), "right": a, "left": b}
    return x, [x["left"], x["right"]]


class Meter:
    def __init__(self):
        self.items = []
        self.sums = {}

    def update(self, key, value, weight):
        self.items.append(value)
        self.sums[key] = self.sums.get(key, 0) + value * weight
'''

# A trainer in one module: modules, optimizer, closures, imports of names.
_TRAINER = '''\
import torch
from torch import nn
from .helpers import log_metrics, clip as clip_grads
from . import schedule


class Block(nn.Module):
    def __init__(self, dim, heads, drop):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.attn = nn.MultiheadAttention(dim, heads, dropout=drop)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Dropout(drop), nn.Linear(4 * dim, dim))
        self.cache = {}

    def forward(self, x, mask=None):
        h = self.norm(x)
        a, w = self.attn(h, h, h, attn_mask=mask)
        self.cache["attn"] = w
        x = x + a
        return x + self.mlp(self.norm(x))


class Trainer:
    def __init__(self, model, opt, sched, hooks, cfg):
        self.model, self.opt, self.sched = model, opt, sched
        self.hooks = hooks
        self.cfg = cfg
        self.history = {"loss": [], "lr": [], "grad": []}

    def step(self, batch, targets):
        self.opt.zero_grad()
        out = self.model(batch)
        loss = torch.nn.functional.cross_entropy(out, targets) + self.cfg.reg * out.pow(2).mean()
        loss.backward()
        clip_grads(self.model.parameters(), self.cfg.max_norm)
        self.opt.step()
        self.sched.step()
        for hook in self.hooks:
            hook(self, out, loss)
        self.history["loss"].append(loss)
        self.history["lr"].append(schedule.current(self.opt))
        log_metrics({"loss": loss.item(), "lr": self.opt.param_groups[0]["lr"]}, step=self.cfg.step)
        return out, loss

    def evaluate(self, loader, metrics):
        self.model.eval()
        results = {name: [] for name in metrics}
        with torch.no_grad():
            for batch, targets in loader:
                out = self.model(batch)
                for name, fn in metrics.items():
                    results[name].append(fn(out, targets))
        self.model.train()
        return {k: sum(v) / len(v) for k, v in results.items()}
'''

GENERATED = {
    "many_symbols.py": _MANY_SYMBOLS,
    "many_calls.py": _MANY_CALLS,
    "many_resolved.py": _MANY_RESOLVED,
    **{f"deep_{i}.py": _deep(i) for i in range(8)},
    **{f"many_callees_{i}.py": _many_callees(i) for i in range(4)},
    **{f"items_{i}.py": _items(i) for i in range(8)},
    **{f"concat_{i}.py": _concat(i) for i in range(8)},
    **{f"layers_{i}.py": _layers(i) for i in range(8)},
    **{f"sequential_{i}.py": _sequential(i) for i in range(8)},
    "containers.py": _CONTAINERS,
    "pkg/__init__.py": "",
    "pkg/trainer.py": _TRAINER,
    "pkg/helpers.py": "def log_metrics(d, step):\n    print(d, step)\n\n\ndef clip(params, n):\n    import torch\n    return torch.nn.utils.clip_grad_norm_(params, n)\n",
    "pkg/schedule.py": "def current(opt):\n    return opt.param_groups[0]['lr']\n",
}


def _digests(paths: list[str], seed: int) -> subprocess.Popen:
    env = dict(os.environ, PYTHONHASHSEED=str(seed), PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.Popen([sys.executable, "-c", _RUN, *paths], cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_summaries_are_the_same_bytes_in_every_process(tmp_path: Path) -> None:
    for name, text in GENERATED.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    # (A fixed fixture's golden file is its positive again, a few lines changed.)
    fixtures = sorted(p for p in FIXTURES.glob("**/*.py") if not is_golden(p))
    paths = [str(p.relative_to(ROOT)) for p in fixtures] + [str(tmp_path / name) for name in GENERATED]
    # Two interpreters side by side, each on every file.
    runs = [_digests(paths, 1), _digests(list(reversed(paths)), 2)]
    results = []
    for proc in runs:
        stdout, stderr = proc.communicate()
        assert proc.returncode == 0, stderr
        results.append(json.loads(stdout))
    a, b = results
    assert a.keys() == b.keys()
    differ = {part: sorted(p for p in a if a[p][i] != b[p][i]) for i, part in enumerate(("summary", "calls", "entry", "imported"))}
    if any(differ.values()):
        pytest.fail("bytes differ between two processes:\n" + "\n".join(f"  {part}: {len(ps)} files, e.g. {', '.join(ps[:4])}" for part, ps in differ.items() if ps))


def test_sets_differing_past_facts_alike_but_for_their_nodes_are_ordered() -> None:
    """Two sets whose least facts of those only one holds differ in their
    syntax nodes alone (which tie where nodes are not ordered) are ordered
    by what follows: equal under ``order_cmp``, their order (a summary's
    effects of one call, sorted) would be the order a set yielded them."""
    from autograd_lint.analysis.canonical import order_cmp, sorted_canonically
    from autograd_lint.analysis.values import AttrStep, Graph, ParamRoot, Sym

    def value(node: object, attr: str) -> frozenset:
        return frozenset({Graph(node, 0, "call"), Sym(ParamRoot(0, 1), (AttrStep(attr),))})

    a, b = value(object(), "get_state"), value(object(), "update_state")
    assert order_cmp(a, b) == -order_cmp(b, a) == -1
    for pair in ([a, b], [b, a]):
        assert sorted_canonically(pair) == [a, b]


def test_one_store_row_whatever_order_a_set_yields() -> None:
    """A receiver that may be a ``ModuleList`` or a list: ``append`` is the
    module container's (its layers join what it runs), whichever fact the
    set yields first (sets of other facts beside them: other orders)."""
    from autograd_lint.analysis import api, members
    from autograd_lint.analysis.values import Container, Module, Qual

    for i in range(64):
        recv = frozenset({Container("list", (), frozenset({Qual(f"q{i}")})), Module(True, "torch.nn.ModuleList")})
        row = members.stores(recv, "append")
        assert row is not None and row.owner == api.MODULE


def test_a_callee_reached_by_several_names_is_called_by_the_first() -> None:
    """The name a call reaches its callee by (a cache entry's index of what
    a file calls) is one, whatever order the set of what it may be yields."""
    from autograd_lint.analysis.resolve import called_name
    from autograd_lint.analysis.values import AttrStep, FunctionObj, ParamRoot, Ref, Sym

    for i in range(64):
        target = frozenset({FunctionObj(Ref("m.py", f"Helper{i}.zeta")), Sym(ParamRoot(0, 1), (AttrStep(f"alpha{i}"),))})
        assert called_name(target) == f"alpha{i}"


_CYCLE = """\
def f(x, n):
    if n:
        return g(x, n - 1)
    return x


def g(y, n):
    return f(y.inner, n)


def main(model):
    f(model.a, 3)
    g(model.b, 2)
"""


def test_a_parameter_resolves_alike_whichever_is_asked_first() -> None:
    """Parameters whose call sites pass each other's values (a cycle, cut
    where it closes): what each resolves to is the same whichever is asked
    first (what a call record or a pending finding holds is resolved in
    the order of a set of facts)."""
    import libcst as cst

    from autograd_lint.analysis.module import ModuleAnalysis
    from autograd_lint.analysis.resolve import Resolver
    from autograd_lint.analysis.summaries import exported
    from autograd_lint.analysis.values import ParamRoot

    prog = ModuleAnalysis(cst.parse_module(_CYCLE), "cycle.py").program
    index = {fn.name: fn.index for fn in prog.functions if not fn.is_module}
    x, y = ParamRoot(index["f"], 0), ParamRoot(index["g"], 0)

    def ask(order: list[ParamRoot]) -> dict:
        resolver = Resolver(prog)
        return {root: exported(resolver.param(root) or frozenset()) for root in order}

    assert ask([x, y]) == ask([y, x])


def test_a_call_heard_once_per_symbol_keeps_what_any_of_them_keeps() -> None:
    """``self.policy.reset_noise(n)`` with ``self.policy`` one of two
    symbols: one keep event per symbol, heard in the order of a set. The
    event kept asks of both (not of the first heard: another from process
    to process, in a pending finding of the cache entry)."""
    from types import SimpleNamespace

    from autograd_lint.analysis.observer import Point
    from autograd_lint.analysis.retention import Retention, _Event
    from autograd_lint.analysis.values import AttrStep, GradMode, ParamRoot, Sym

    callees = [frozenset({Sym(ParamRoot(0, 0), (AttrStep(name), AttrStep("reset_noise")))}) for name in ("policy", "policy_to")]
    at = Point(SimpleNamespace(index=0), None, (), GradMode.ON, (), 0)  # type: ignore[arg-type]
    kept = []
    for order in (callees, callees[::-1]):
        retention = Retention()
        for callee in order:
            retention._record(("key",), _Event("keep", at, None, "self.policy", frozenset(), frozenset(), None, "call", deferred=(callee, None, 0), keep_kind="store"))
        kept.append(retention.events[("key",)].deferred)
    assert kept[0] == kept[1] and kept[0][0] == callees[0] | callees[1]


def test_what_a_saved_tensor_needs_is_in_one_order() -> None:
    """A Saved fact needs its symbols (a set at heart) in one order, not
    the order a set yields them: else two effects of one call alike but
    for it sort apart in one process and together in another."""
    from autograd_lint.analysis.canonical import sorted_canonically
    from autograd_lint.analysis.tensor_ops import grad_syms
    from autograd_lint.analysis.values import AttrStep, ParamRoot, Sym

    pairs = [[Sym(ParamRoot(0, 1), (AttrStep(f"a{i}"),)), Sym(ParamRoot(0, 2), (AttrStep(f"b{i}"),))] for i in range(32)]
    for syms in pairs:
        assert grad_syms(frozenset(syms)) == tuple(sorted_canonically(syms))
    from autograd_lint.analysis.tensor_ops import needs_order  # (what ops given several operands need: once each)

    assert all(needs_order(syms[::-1] + syms) == tuple(sorted_canonically(syms)) for syms in pairs)
