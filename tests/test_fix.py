"""Autofix: every fixture's fixes parse, are idempotent and remove the
findings they fix; files keep their encoding, BOM, newlines and mode; with
torch, fixed in-place scripts stop raising and fixed retention loops stop
keeping graphs."""

from __future__ import annotations

import contextlib
import dataclasses
import os
import runpy
import stat
import sys
from pathlib import Path

import libcst as cst
import pytest
from _fixture_support import is_golden

from autograd_lint import catalog
from autograd_lint.cli import main
from autograd_lint.config import Settings, load_settings
from autograd_lint.engine import lint_source
from autograd_lint.finding import Applicability
from autograd_lint.fix import fix_source, write_atomic

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"
FIXTURE_FILES = [p for p in sorted(FIXTURES.glob("**/*.py")) if "AGL001" not in p.parts and not is_golden(p)]


def settings_for(path: Path) -> Settings:
    settings, _ = load_settings([str(path)], None)
    code = path.relative_to(FIXTURES).parts[0]
    return dataclasses.replace(settings, enabled=settings.enabled | {code})


@pytest.mark.parametrize("path", FIXTURE_FILES, ids=lambda p: str(p.relative_to(FIXTURES)))
def test_fixture_fix_parses_is_idempotent_and_removes_its_findings(path: Path) -> None:
    settings = settings_for(path)
    before = lint_source(str(path), path.read_bytes(), settings)
    result = fix_source(str(path), path.read_bytes(), settings, unsafe=True)
    assert not result.problems
    fixable = [f for f in before if f.fix is not None]
    if not fixable:
        assert not result.changed
        return
    assert result.changed
    cst.parse_module(result.fixed_source.decode("utf-8"))
    # Everything that offered a fix was fixed; what is left offers none.
    assert all(f.fix is None for f in result.remaining), [(f.start.row, f.code) for f in result.remaining]
    # (A fix may also remove findings that rested on what it fixed: a
    # meter keeps nothing once its callers hand it numbers.)
    assert len(result.remaining) <= len(before) - len(fixable)
    again = fix_source(str(path), result.fixed_source, settings, unsafe=True)
    assert not again.changed, "a second --fix run must change nothing"


def test_safe_only_leaves_unsafe_fixes(tmp_path: Path) -> None:
    src = (
        "import torch\n\n\ndef f(x, w):\n    y = torch.sigmoid(x * w)\n    y.mul_(2)\n    return y.sum()\n\n\n"
        "def main():\n    f(torch.randn(3), torch.randn(3, requires_grad=True)).backward()\n"
    )
    settings = Settings(enabled=catalog.resolve_selection(None))
    assert [f.code for f in lint_source("m.py", src.encode(), settings)] == ["AGL201"]
    assert not fix_source("m.py", src.encode(), settings).changed  # AGL201's fix is unsafe
    fixed = fix_source("m.py", src.encode(), settings, unsafe=True)
    assert "y = y.mul(2)" in fixed.fixed_source.decode()


def test_fix_speaks_the_files_torch_alias_and_adds_missing_import() -> None:
    settings = Settings(enabled=catalog.resolve_selection(None))
    aliased = "import torch as th\n\n\ndef evaluate(model, loader):\n    model.eval()\n    for x in loader:\n        print(model(x).argmax())\n"
    out = fix_source("a.py", aliased.encode(), settings, unsafe=True).fixed_source.decode()
    assert "@th.no_grad()" in out and "import torch\n" not in out
    bare = "def evaluate(model, loader):\n    model.eval()\n    for x in loader:\n        print(model(x).argmax())\n"
    out = fix_source("b.py", bare.encode(), settings, unsafe=True).fixed_source.decode()
    assert out.startswith("import torch\n") and "@torch.no_grad()" in out
    cst.parse_module(out)


def test_detach_goes_on_the_tensors_not_on_a_tuple() -> None:
    src = (
        "import torch\n\n\ndef train(model, loader, opt, crit):\n    hist = []\n    for x, y in loader:\n"
        "        loss = crit(model(x), y)\n        loss.backward()\n        opt.step()\n        hist.append((loss, 1))\n"
        "        hist.append(loss)\n        opt.zero_grad()\n    return len(hist)\n"
    )
    settings = Settings(enabled=catalog.resolve_selection(None))
    found = lint_source("t.py", src.encode(), settings)
    assert [(f.start.row, f.fix is not None) for f in found] == [(10, True), (11, True)]
    # `crit` is a parameter: `loss` is a tensor only as far as its backward shows.
    assert {f.fix.applicability for f in found} == {Applicability.UNSAFE}
    out = fix_source("t.py", src.encode(), settings, unsafe=True).fixed_source.decode()
    # The tuple is detached element by element, where it is written.
    assert "hist.append((loss.detach(), 1))" in out and "hist.append(loss.detach())" in out


def test_detach_is_safe_only_on_a_tensor_nothing_differentiates_later() -> None:
    settings = Settings(enabled=catalog.resolve_selection(None))
    head = "import torch\nfrom torch import nn\n\n\ndef train(loader):\n    model, crit = nn.Linear(4, 1), nn.MSELoss()\n"
    loop = "    hist = []\n    for x, y in loader:\n        loss = crit(model(x), y)\n        loss.backward()\n        hist.append(loss)\n"
    safe = lint_source("s.py", (head + loop + "    return len(hist)\n").encode(), settings)
    assert [(f.code, f.fix.applicability) for f in safe] == [("AGL101", Applicability.SAFE)]
    # Returned to callers the file does not show: they may backpropagate it.
    returned = lint_source("r.py", (head + loop + "    return hist\n").encode(), settings)
    assert all(f.fix is None or f.fix.applicability is Applicability.UNSAFE for f in returned)
    # A model of unknown class returns maybe a tuple or a `ModelOutput`: no `.detach()` at all.
    hub = "import torch\nimport timm\n\n\ndef train(loader):\n    model = timm.create_model('resnet18')\n    outs = []\n    for x in loader:\n        out = model(x)\n        out.sum().backward()\n        outs.append(out)\n    return len(outs)\n"
    found = lint_source("h.py", hub.encode(), settings)
    assert [f.code for f in found] == ["AGL101"] and found[0].fix is None


def test_encoding_bom_crlf_tabs_comments_and_mode_are_kept(tmp_path: Path) -> None:
    body = (
        "# -*- coding: latin-1 -*-\r\n"
        "import torch\r\n\r\n\r\n"
        "def train(model, loader, opt, crit):\r\n"
        "\tlosses = []  # caf\xe9\r\n"
        "\tfor x, y in loader:\r\n"
        "\t\tloss = crit(model(x), y)\r\n"
        "\t\tloss.backward()\r\n"
        "\t\topt.step()\r\n"
        "\t\tlosses.append(loss)  # keep me\r\n"
        "\treturn len(losses)\r\n"
    )
    settings = Settings(enabled=catalog.resolve_selection(None))
    path = tmp_path / "train.py"
    path.write_bytes(body.encode("latin-1"))
    os.chmod(path, 0o750)
    result = fix_source(str(path), path.read_bytes(), settings, unsafe=True)
    write_atomic(str(path), result.fixed_source)
    data = path.read_bytes()
    assert b"caf\xe9" in data and b"\r\n" in data and b"\n" not in data.replace(b"\r\n", b"")
    assert b"\t\tlosses.append(loss.detach())  # keep me\r\n" in data
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o750
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".agl-")]

    bom = tmp_path / "bom.py"
    bom.write_bytes(b"\xef\xbb\xbf" + body.replace("# -*- coding: latin-1 -*-\r\n", "").replace("\xe9", "e").encode())
    result = fix_source(str(bom), bom.read_bytes(), settings, unsafe=True)
    assert result.fixed_source.startswith(b"\xef\xbb\xbf")


def test_cli_fix_diff_and_counts(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = (
        "import torch\n\n\ndef train(model, loader, opt, crit):\n    total = 0\n    for x, y in loader:\n"
        "        loss = crit(model(x), y)\n        loss.backward()\n        opt.step()\n        opt.zero_grad(set_to_none=False)\n"
        "        total += loss\n    return total\n"
    )
    path = tmp_path / "t.py"
    path.write_text(src)
    # `total` is returned to callers the file does not show, who may
    # backpropagate it: detaching it is an unsafe fix.
    assert main(["--diff", "--no-color", str(path)]) == 1
    out = capsys.readouterr().out
    assert "set_to_none=True" in out and "loss.detach()" not in out
    assert main(["--diff", "--unsafe-fixes", "--no-color", str(path)]) == 1
    out = capsys.readouterr().out
    assert "+        total += loss.detach()" in out and path.read_text() == src
    assert main(["--fix", "--unsafe-fixes", "--show-fixes", "--no-color", str(path)]) == 0
    out = capsys.readouterr().out
    assert "(2 fixed, 0 remaining)" in out
    assert "total += loss.detach()" in path.read_text() and "set_to_none=True" in path.read_text()
    assert main(["--fix", str(path)]) == 0
    assert main(["--diff", str(path)]) == 0


def test_cli_fix_on_stdin(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    import io

    src = "def step(opt):\n    opt.zero_grad(set_to_none=False)\n"
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(src.encode())))
    assert main(["--fix", "--stdin-filename", "x.py", "-"]) == 0
    assert capsys.readouterr().out == "def step(opt):\n    opt.zero_grad(set_to_none=True)\n"


torch = pytest.importorskip("torch")


@pytest.mark.parametrize("path", [p for c in ("AGL201", "AGL202") for p in sorted((FIXTURES / c).glob("pos_*.py")) if not is_golden(p)], ids=lambda p: p.name)
def test_fixed_inplace_scripts_no_longer_raise(path: Path, tmp_path: Path) -> None:
    settings = settings_for(path)
    result = fix_source(str(path), path.read_bytes(), settings, unsafe=True)
    remaining = [f for f in result.remaining if f.code in ("AGL201", "AGL202")]
    if remaining:
        pytest.skip(f"no fix offered for {[(f.start.row, f.code) for f in remaining]}")
    fixed = tmp_path / path.name
    fixed.write_bytes(result.fixed_source)
    torch.manual_seed(0)
    # A flat script (`pos_script_*`) runs its hazard when it is loaded.
    with contextlib.redirect_stdout(None):
        main = runpy.run_path(str(fixed), run_name="fixture").get("main")
        if main is not None:
            main()


def test_fixed_retention_loop_no_longer_keeps_graphs() -> None:
    src = (
        "import torch\nfrom torch import nn\n\n\n"
        "def train(model, batches, opt):\n    losses = []\n    for x, y in batches:\n"
        "        loss = nn.functional.mse_loss(model(x), y)\n        opt.zero_grad()\n        loss.backward()\n"
        "        opt.step()\n        losses.append(loss)\n    return losses\n"
    )
    settings = Settings(enabled=catalog.resolve_selection(None))
    # Unsafe: `losses` is returned to callers the file does not show.
    fixed = fix_source("loop.py", src.encode(), settings, unsafe=True).fixed_source.decode()

    def retained(code: str) -> int:
        ns: dict = {}
        exec(compile(code, "loop.py", "exec"), ns)
        model = torch.nn.Linear(4, 1)
        batches = [(torch.randn(8, 4), torch.randn(8, 1)) for _ in range(5)]
        losses = ns["train"](model, batches, torch.optim.SGD(model.parameters(), lr=0.1))
        return sum(1 for t in losses if t.grad_fn is not None)

    assert retained(src) == 5
    assert retained(fixed) == 0


def test_fix_leaves_read_only_and_changed_files_alone(tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    from _cli_support import RETENTION_LOOP

    import autograd_lint.fix as fix_module

    ro = tmp_path / "ro.py"
    ro.write_text(RETENTION_LOOP)
    os.chmod(ro, 0o444)
    busy = tmp_path / "busy.py"
    busy.write_text(RETENTION_LOOP)
    real = fix_module.fix_source

    def edited_meanwhile(path, source, settings, unsafe=False):
        result = real(path, source, settings, unsafe)
        if path.endswith("busy.py"):
            Path(path).write_text(RETENTION_LOOP + "# edited in the editor\n")
        return result

    monkeypatch.setattr(fix_module, "fix_source", edited_meanwhile)
    try:
        assert main(["--fix", "-j", "1", str(tmp_path)]) == 2
        err = capsys.readouterr().err
        assert "ro.py: the file is read-only; not fixed" in err
        assert "busy.py: the file changed on disk during the run; not fixed" in err
        assert ro.read_text() == RETENTION_LOOP
        assert busy.read_text().endswith("# edited in the editor\n") and "detach" not in busy.read_text()
    finally:
        os.chmod(ro, 0o644)
