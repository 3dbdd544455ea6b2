"""The content cache: a cached run reports exactly what a cold one does;
what changed (a file, a helper it imports, the settings, the tool) is
linted again and nothing else; several processes may share one folder;
a damaged, foreign or unwritable cache costs at most a warning."""

from __future__ import annotations

import os
import pickle
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from _cli_support import RETENTION_LOOP, pyproject, run, write

from autograd_lint import cache as cache_mod
from autograd_lint.cache import Cache

METERS = """\
class Meter:
    def __init__(self):
        self.total = 0

    def update(self, value):
        self.total += value
"""

# Its finding depends on what `Meter.update` (another module) keeps.
TRAIN = """\
import torch

from meters import Meter


def train(model, loader, opt):
    meter = Meter()
    for x, y in loader:
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        meter.update(loss)
        opt.zero_grad()
    return meter.total
"""

CLEAN = "import torch\n\nx = torch.zeros(3)\n"


def _project(root: Path, n_clean: int = 3) -> Path:
    write(root / "meters.py", METERS)
    write(root / "train.py", TRAIN)
    write(root / "loop.py", RETENTION_LOOP)
    for i in range(n_clean):
        write(root / f"clean_{i}.py", CLEAN)
    return root


def _lint(capsys, cache_dir: Path, *argv: str) -> tuple[str, int]:
    """(JSON findings, files read from the cache)."""
    code, out, err = run(capsys, "--format", "json", "-j", "1", "--exit-zero", "-v", "--cache-dir", str(cache_dir), *argv)
    assert code == 0, err
    m = re.search(r"(\d+) from the cache", err)
    assert m, err
    return out, int(m.group(1))


def _entries(cache_dir: Path) -> list[Path]:
    return sorted(p for p in (cache_dir / cache_mod.FORMAT.decode()).rglob("*") if p.is_file() and not p.name.startswith((".", "tool-")))


def test_cold_warm_and_changed_runs_report_the_same(tmp_path: Path, capsys, monkeypatch) -> None:
    root = _project(tmp_path / "p")
    monkeypatch.chdir(root)
    cache_dir = tmp_path / "cache"
    code, uncached, _ = run(capsys, "--format", "json", "-j", "1", "--exit-zero", "--no-cache", ".")
    assert not cache_dir.exists()
    cold, hits = _lint(capsys, cache_dir, ".")
    assert (cold, hits) == (uncached, 0)
    assert '"AGL102"' in cold and '"AGL101"' in cold
    warm, hits = _lint(capsys, cache_dir, ".")
    assert (warm, hits) == (cold, 6)
    # One file changed (a comment): only it is linted again.
    write(root / "clean_0.py", CLEAN + "# changed\n")
    changed, hits = _lint(capsys, cache_dir, ".")
    assert (changed, hits) == (cold, 5)


def test_a_changed_helper_redecides_its_importers_findings(tmp_path: Path, capsys, monkeypatch) -> None:
    root = _project(tmp_path / "p", n_clean=0)
    monkeypatch.chdir(root)
    cache_dir = tmp_path / "cache"
    before, _ = _lint(capsys, cache_dir, ".")
    assert "AGL102" in before
    # The helper now keeps a number: train.py, unchanged and read from the
    # cache, has no finding any more; only meters.py was linted again.
    write(root / "meters.py", METERS.replace("self.total += value", "self.total += float(value)"))
    after, hits = _lint(capsys, cache_dir, ".")
    assert hits == 2
    assert "AGL102" not in after and "AGL101" in after
    code, uncached, _ = run(capsys, "--format", "json", "-j", "1", "--exit-zero", "--no-cache", ".")
    assert after == uncached


def test_an_imported_module_that_is_not_linted_is_cached_too(tmp_path: Path, capsys, monkeypatch) -> None:
    root = _project(tmp_path / "p", n_clean=0)
    monkeypatch.chdir(root)
    cache_dir = tmp_path / "cache"
    first, _ = _lint(capsys, cache_dir, "train.py")
    assert "AGL102" in first
    n = len(_entries(cache_dir))
    assert n == 2  # train.py's analysis and meters.py's summary
    second, hits = _lint(capsys, cache_dir, "train.py")
    assert (second, hits) == (first, 1) and len(_entries(cache_dir)) == n


def test_settings_and_paths_are_part_of_the_key(tmp_path: Path, capsys, monkeypatch) -> None:
    root = _project(tmp_path / "p", n_clean=1)
    monkeypatch.chdir(root)
    cache_dir = tmp_path / "cache"
    _lint(capsys, cache_dir, ".")
    only1, hits = _lint(capsys, cache_dir, "--select", "AGL101", ".")
    assert hits == 0 and "AGL102" not in only1 and "AGL101" in only1
    _, hits = _lint(capsys, cache_dir, "--select", "AGL101", ".")
    assert hits == 4
    # A per-file ignore changes the key of that file only.
    pyproject(root, '[tool.autograd-lint.per-file-ignores]\n"loop.py" = ["AGL101"]\n')
    out, hits = _lint(capsys, cache_dir, ".")
    assert hits == 3 and '"AGL101"' not in out


def test_another_checkout_of_the_same_tree_hits(tmp_path: Path, capsys, monkeypatch) -> None:
    # Keys hold the path as named (relative here), never the folder the
    # checkout lives in: a CI cache restored elsewhere still hits.
    a = _project(tmp_path / "checkout-a")
    b = tmp_path / "somewhere" / "checkout-b"
    shutil.copytree(a, b)
    cache_dir = tmp_path / "shared-cache"
    monkeypatch.chdir(a)
    first, _ = _lint(capsys, cache_dir, ".")
    monkeypatch.chdir(b)
    second, hits = _lint(capsys, cache_dir, ".")
    # JSON names files by absolute path: each run names its own checkout.
    assert hits == 6 and str(a) not in second and second.replace(str(b), "") == first.replace(str(a), "")


def test_a_truncated_or_corrupt_entry_is_a_miss_and_is_rewritten(tmp_path: Path, capsys, monkeypatch) -> None:
    root = _project(tmp_path / "p")
    monkeypatch.chdir(root)
    cache_dir = tmp_path / "cache"
    cold, _ = _lint(capsys, cache_dir, ".")
    entries = _entries(cache_dir)
    sizes = {p: p.stat().st_size for p in entries}
    entries[0].write_bytes(entries[0].read_bytes()[: sizes[entries[0]] // 2])  # truncated
    raw = bytearray(entries[1].read_bytes())
    raw[-5] ^= 0xFF  # one byte flipped in the payload
    entries[1].write_bytes(bytes(raw))
    entries[2].write_bytes(b"not an entry at all")
    out, hits = _lint(capsys, cache_dir, ".")
    assert (out, hits) == (cold, 3)
    assert {p: p.stat().st_size for p in _entries(cache_dir)} == sizes
    out, hits = _lint(capsys, cache_dir, ".")
    assert (out, hits) == (cold, 6)


class _Planted:
    """Unpickled, this would run a command."""

    def __reduce__(self):
        return (os.system, ("touch planted-ran",))


def test_a_planted_entry_cannot_run_code(tmp_path: Path, capsys, monkeypatch) -> None:
    root = _project(tmp_path / "p", n_clean=0)
    monkeypatch.chdir(root)
    cache_dir = tmp_path / "cache"
    cold, _ = _lint(capsys, cache_dir, ".")
    cache = Cache(str(cache_dir))
    for entry in _entries(cache_dir):
        # A well-formed entry (right key, length and digest) around a payload
        # that calls os.system when unpickled.
        cache._write(bytes.fromhex(entry.name), pickle.dumps(_Planted()))
    out, hits = _lint(capsys, cache_dir, ".")
    assert (out, hits) == (cold, 0)
    assert not (root / "planted-ran").exists()


def test_an_entry_under_another_key_is_a_miss(tmp_path: Path) -> None:
    cache = Cache(str(tmp_path))
    cache.store_summary(b"a" * 32, None)
    # Copied to another key's file name (two CI caches merged badly).
    src = Path(cache._path(b"a" * 32))
    dst = Path(cache._path(b"b" * 32))
    dst.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(src, dst)
    assert cache.load_summary(b"a" * 32) == (True, None)
    assert cache.load_summary(b"b" * 32) == (False, None)


def test_an_unwritable_cache_costs_one_warning(tmp_path: Path, capsys, monkeypatch) -> None:
    root = _project(tmp_path / "p")
    monkeypatch.chdir(root)
    blocker = write(tmp_path / "not-a-folder", "")
    code, out, err = run(capsys, "--format", "concise", "-j", "1", "--cache-dir", str(blocker / "cache"), ".")
    assert code == 1 and "AGL101" in out and "AGL102" in out
    assert err.count("warning: cannot write the cache") == 1


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() == 0, reason="root writes into a read-only folder")
def test_a_read_only_cache_is_read_but_not_written(tmp_path: Path, capsys, monkeypatch) -> None:
    root = _project(tmp_path / "p")
    monkeypatch.chdir(root)
    cache_dir = tmp_path / "cache"
    cold, _ = _lint(capsys, cache_dir, ".")
    write(root / "clean_0.py", CLEAN + "# changed\n")
    for d in [cache_dir, *[p for p in cache_dir.rglob("*") if p.is_dir()]]:
        d.chmod(0o555)
    try:
        code, out, err = run(capsys, "--format", "json", "-j", "1", "--exit-zero", "-v", "--cache-dir", str(cache_dir), ".")
    finally:
        for d in [cache_dir, *[p for p in cache_dir.rglob("*") if p.is_dir()]]:
            d.chmod(0o755)
    assert out == cold and err.count("warning: cannot write the cache") == 1 and "5 from the cache" in err


def test_two_processes_fill_one_cache_at_once(tmp_path: Path) -> None:
    root = tmp_path / "p"
    _project(root, n_clean=0)
    for i in range(24):
        write(root / f"loop_{i}.py", RETENTION_LOOP)
    cache_dir = tmp_path / "cache"
    cmd = [sys.executable, "-m", "autograd_lint", "--format", "json", "--exit-zero", "--cache-dir", str(cache_dir), "."]
    cold = subprocess.run([*cmd[:-3], "--no-cache", "."], cwd=root, capture_output=True, text=True, check=True).stdout
    procs = [subprocess.Popen([*cmd[:3], "-j", jobs, *cmd[3:]], cwd=root, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for jobs in ("1", "2")]
    outs = [p.communicate(timeout=300) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], [e for _, e in outs]
    assert [o for o, _ in outs] == [cold, cold]
    assert not [p for p in cache_dir.rglob(".agl-*")]
    warm = subprocess.run([*cmd[:3], "-j", "1", "-v", *cmd[3:]], cwd=root, capture_output=True, text=True, check=True)
    assert warm.stdout == cold and "27 from the cache" in warm.stderr


def test_a_warm_run_and_a_file_without_triggers_never_import_libcst(tmp_path: Path) -> None:
    root = _project(tmp_path / "p", n_clean=0)
    write(root / "plain.py", "x = 1\n")
    cache_dir = tmp_path / "cache"
    probe = (
        "import sys\n"
        "from autograd_lint.cli import main\n"
        "code = main(sys.argv[1:])\n"
        "print('libcst' in sys.modules, file=sys.stderr)\n"
    )
    base = [sys.executable, "-c", probe, "--format", "concise", "-j", "1", "--cache-dir", str(cache_dir)]
    cold = subprocess.run([*base, "."], cwd=root, capture_output=True, text=True)
    assert cold.stderr.strip().endswith("True")  # files with trigger words were parsed
    warm = subprocess.run([*base, "."], cwd=root, capture_output=True, text=True)
    assert warm.stdout == cold.stdout and "AGL102" in warm.stdout
    assert warm.stderr.strip().endswith("False")
    plain = subprocess.run([*base, "--no-cache", "plain.py"], cwd=root, capture_output=True, text=True)
    assert plain.stderr.strip().endswith("False")


# What a run whose files all come from the cache must not import (its
# start-up is the fixed cost of every run, a pre-commit hook's): the
# analysis and LibCST, and what only another path needs (linting,
# --fix, other subcommands and formats, a misspelt key, a setup.cfg).
# `dataclasses` (with inspect), typing and pathlib alone would double it;
# hashlib loads OpenSSL, pickle its Python pickler.
WARM_RUN_NEVER_IMPORTS = (
    "libcst",
    "autograd_lint.analysis",
    "autograd_lint.engine",
    "autograd_lint.rules",
    "autograd_lint.fix",
    "dataclasses",
    "inspect",
    "typing",
    "pathlib",
    "configparser",
    "difflib",
    "tempfile",
    "hashlib",
    "pickle",
)


def _warm_run_imports(root: Path, cache_dir: Path, *argv: str) -> list[str]:
    """The forbidden modules a second (cached) run imports beyond what the
    interpreter's own start-up (site) did."""
    probe = (
        "import sys\n"
        "before = set(sys.modules)\n"
        "from autograd_lint.cli import main\n"
        "code = main(sys.argv[1:])\n"
        "new = set(sys.modules) - before\n"
        f"print([n for n in {WARM_RUN_NEVER_IMPORTS!r} if any(m == n or m.startswith(n + '.') for m in new)], file=sys.stderr)\n"
    )
    cmd = [sys.executable, "-c", probe, "--cache-dir", str(cache_dir), *argv]
    cold = subprocess.run(cmd, cwd=root, capture_output=True, text=True)
    warm = subprocess.run(cmd, cwd=root, capture_output=True, text=True)
    assert warm.stdout == cold.stdout and warm.returncode == cold.returncode, warm.stderr
    return eval(warm.stderr.strip().splitlines()[-1])


# A finding decided in the file alone (one pending on other modules makes
# the run import the analysis to decide it).
GRAD_FILL = """\
import torch


def accumulate(model, batches, optimizer):
    for param in model.parameters():
        if param.grad is not None:
            param.grad.fill_(0)
    for x, y in batches:
        torch.nn.functional.mse_loss(model(x), y).backward()
    optimizer.step()
"""


def test_a_warm_run_imports_only_what_it_uses(tmp_path: Path) -> None:
    root = tmp_path / "p"
    write(root / "requirements.txt", "torch>=2.1\n")  # the torch pin is looked for
    write(root / "fill.py", GRAD_FILL)
    write(root / "clean.py", CLEAN)
    assert _warm_run_imports(root, tmp_path / "cache", "-q", "clean.py") == []
    # A finding, its source line shown; a configuration read (tomllib
    # imports typing itself).
    pyproject(root, 'ignore = ["AGL103"]\n')
    assert _warm_run_imports(root, tmp_path / "cache", "fill.py") in ([], ["typing"])


def test_no_cache_writes_nothing_and_the_default_lives_in_the_project_root(tmp_path: Path, capsys, monkeypatch) -> None:
    root = _project(tmp_path / "p", n_clean=0)
    pyproject(root, "")
    monkeypatch.delenv(cache_mod.ENV_VAR)
    monkeypatch.chdir(root / "..")
    run(capsys, "-j", "1", "--no-cache", str(root))
    assert not (root / cache_mod.DEFAULT_DIR_NAME).exists()
    run(capsys, "-j", "1", str(root))
    made = root / cache_mod.DEFAULT_DIR_NAME
    assert (made / "CACHEDIR.TAG").read_text().startswith("Signature: 8a477f597d28d172789f06886806bc55")
    assert (made / ".gitignore").read_text().splitlines()[-1] == "*"
    assert _entries(made)


def test_clean_removes_only_a_cache_of_ours(tmp_path: Path, capsys, monkeypatch) -> None:
    root = _project(tmp_path / "p", n_clean=0)
    monkeypatch.chdir(root)
    cache_dir = tmp_path / "cache"
    _lint(capsys, cache_dir, ".")
    assert run(capsys, "clean", "--cache-dir", str(cache_dir))[0] == 0
    assert not cache_dir.exists()
    assert run(capsys, "clean", "--cache-dir", str(cache_dir))[0] == 0  # nothing to do
    precious = write(tmp_path / "home" / "notes.txt", "keep me")
    code, _, err = run(capsys, "clean", "--cache-dir", str(precious.parent))
    assert code == 2 and "not an autograd-lint cache" in err and precious.exists()
    # The default folder, through the environment variable.
    monkeypatch.setenv(cache_mod.ENV_VAR, str(cache_dir))
    _lint(capsys, cache_dir, ".")
    assert run(capsys, "clean")[0] == 0 and not cache_dir.exists()


def test_a_changed_tool_is_a_miss(tmp_path: Path, capsys, monkeypatch) -> None:
    root = _project(tmp_path / "p", n_clean=0)
    monkeypatch.chdir(root)
    cache_dir = tmp_path / "cache"
    _lint(capsys, cache_dir, ".")
    monkeypatch.setattr(cache_mod, "_TOOL", b"another build of autograd-lint")
    _, hits = _lint(capsys, cache_dir, ".")
    assert hits == 0


def test_fix_skips_files_the_cache_shows_clean(tmp_path: Path, capsys, monkeypatch) -> None:
    root = _project(tmp_path / "p")
    monkeypatch.chdir(root)
    cache_dir = tmp_path / "cache"
    _lint(capsys, cache_dir, ".")
    from autograd_lint import fix

    seen: list[str] = []
    real = fix.fix_file

    def spy(path, settings, unsafe=False):  # type: ignore[no-untyped-def]
        seen.append(os.path.basename(path))
        return real(path, settings, unsafe)

    monkeypatch.setattr(fix, "fix_file", spy)
    code, out, err = run(capsys, "--fix", "-j", "1", "--format", "concise", "--cache-dir", str(cache_dir), ".")
    assert sorted(seen) == ["loop.py", "train.py"]  # the files with findings
    assert "losses.append(loss.detach())" in (root / "loop.py").read_text()
    # What is left is what `check` reports on the fixed project, the
    # finding that waits on `meters.py` included, and it exits as `check` does.
    check_code, check_out, _ = run(capsys, "check", "-j", "1", "--format", "concise", "--cache-dir", str(cache_dir), ".")
    assert code == check_code, err
    assert [l for l in out.splitlines() if ": AGL" in l] == [l for l in check_out.splitlines() if ": AGL" in l]


def test_every_fixture_entry_loads_back(tmp_path: Path, capsys) -> None:
    # Entries only load the classes the cache admits: a value of a new kind
    # that it does not know would make every run a miss.
    fixtures = Path(__file__).resolve().parent.parent / "fixtures"
    cache_dir = tmp_path / "cache"
    cold, _ = _lint(capsys, cache_dir, str(fixtures))
    warm, hits = _lint(capsys, cache_dir, str(fixtures))
    n = len([p for pattern in ("*.py", "*.ipynb") for p in fixtures.rglob(pattern) if "__pycache__" not in p.parts])
    assert warm == cold and hits == n


def test_a_stored_outline_reads_its_calls_without_its_summary(tmp_path: Path, monkeypatch) -> None:
    # A project reads the calls of every file that calls a function by its
    # name; the summary (most of an outline) is read only where asked for.
    from autograd_lint import catalog
    from autograd_lint.runner import analyse_bytes
    from autograd_lint.settings import Settings

    settings = Settings(enabled=catalog.resolve_selection(None))
    path = Path(__file__).resolve().parent.parent / "fixtures" / "AGL102" / "pos_meter_in_other_module" / "train.py"
    source = path.read_bytes()
    analysis = analyse_bytes(str(path), source, settings)
    assert analysis.summary is not None and analysis.calls
    cache = Cache(str(tmp_path / "cache"))
    stored = cache.stored(cache.key(str(path), source, settings), analysis)
    read = []
    loads = cache_mod._loads
    monkeypatch.setattr(cache_mod, "_loads", lambda data: read.append(len(data)) or loads(data))
    assert stored.calls == analysis.calls
    calls_only = list(read)
    assert stored.summary == analysis.summary
    # The entry, then its calls: the summary's bytes are not parsed (the
    # whole outline parses the entry, its summary and its calls).
    assert calls_only == [read[2], len(Cache._dumps(analysis.calls))]
    assert len(read) == 5 and read[3] == len(Cache._dumps(analysis.summary))
