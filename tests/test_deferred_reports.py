"""A file whose every report waits on other modules is left with its
reports unmade (``engine.parse_and_analyse``'s ``defer``): no LibCST parse,
no positions, only what each report waits on. The runner redoes the file
when one of them holds, so a run gives exactly what it gives without
deferring, from a cache as well, and from standard input or an editor's
buffer (the text linted, not the file on disk)."""

from __future__ import annotations

from pathlib import Path

import pytest

from autograd_lint import catalog, engine, runner
from autograd_lint.cache import Cache
from autograd_lint.file_analysis import FileAnalysis, Pending
from autograd_lint.settings import Settings

ROOT = Path(__file__).resolve().parent.parent
SETTINGS = Settings(enabled=catalog.resolve_selection(None))
# Holds: the meter in meters.py accumulates the loss tensor it is fed.
HOLDS = ROOT / "fixtures" / "AGL102" / "pos_meter_in_other_module"
# Does not: the meter there is fed `loss.item()` by its own update().
FAILS = ROOT / "fixtures" / "AGL102" / "neg_meter_takes_item_in_other_module"
PROJECTS = sorted({p.parent for p in (ROOT / "fixtures").rglob("*.py") if len(list(p.parent.glob("*.py"))) > 1})


def _no_libcst(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args, **kwargs):
        raise AssertionError("LibCST's parse was asked for")

    monkeypatch.setattr(engine, "parse_module", refuse)


def _never_deferring(monkeypatch: pytest.MonkeyPatch) -> None:
    plain = runner.analyse_bytes
    monkeypatch.setattr(runner, "analyse_bytes", lambda path, source, settings, defer=False, redo=False: plain(path, source, settings))


def _lint(folder: Path, cache: Cache | None = None) -> list[tuple]:
    files = sorted(str(p) for p in folder.glob("*.py"))
    results = runner.lint_paths(files, SETTINGS, jobs=1, roots=[str(folder)], cache=cache)
    assert all(r.error is None for r in results)
    return [(r.path, f) for r in results for f in r.findings]


@pytest.mark.parametrize("folder", [HOLDS, FAILS], ids=["holds", "fails"])
def test_reports_waiting_on_other_modules_are_deferred_without_libcst(folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = folder / "train.py"
    source = path.read_bytes()
    made = engine.parse_and_analyse(str(path), source.decode(), SETTINGS, source)
    assert made.pending and not made.deferred and not made.findings
    _no_libcst(monkeypatch)
    deferred = engine.parse_and_analyse(str(path), source.decode(), SETTINGS, source, defer=True)
    assert deferred.deferred and not deferred.findings
    # What each report waits on, each once.
    conditions = [p.conditions for p in made.pending]
    assert [p.conditions for p in deferred.pending] == [c for i, c in enumerate(conditions) if c not in conditions[:i]]
    # A report found here is not deferred: the file goes to LibCST.
    found = "import torch\n\nw = torch.randn(3, requires_grad=True)\ny = torch.sigmoid(w)\ny += 1\ny.sum().backward()\n"
    with pytest.raises(AssertionError, match="LibCST"):
        engine.parse_and_analyse("found.py", found, SETTINGS, found.encode(), defer=True)


@pytest.mark.parametrize("folder", PROJECTS, ids=lambda p: str(p.relative_to(ROOT / "fixtures")))
def test_a_run_gives_what_it_gives_without_deferring(folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    deferring = _lint(folder)
    _never_deferring(monkeypatch)
    assert deferring == _lint(folder)


def test_the_project_folders_hold_deferred_reports_both_ways() -> None:
    # The comparison above covers both outcomes of a deferred report.
    def deferred(folder: Path) -> bool:
        source = (folder / "train.py").read_bytes()
        return runner.analyse_bytes(str(folder / "train.py"), source, SETTINGS, defer=True).deferred

    assert deferred(HOLDS) and deferred(FAILS)
    assert [f.code for _, f in _lint(HOLDS)] == ["AGL102"] and _lint(FAILS) == []


def test_a_redone_file_is_stored_in_the_cache(tmp_path: Path) -> None:
    cache = Cache(str(tmp_path / "cache"))
    first = _lint(HOLDS, cache)
    train = str(HOLDS / "train.py")
    entry = runner.cached_analysis(train, SETTINGS, cache)
    assert entry is not None and entry.pending and not entry.deferred
    assert _lint(HOLDS, Cache(str(tmp_path / "cache"))) == first
    # Where no deferred report holds, the deferred entry stays.
    _lint(FAILS, cache)
    kept = runner.cached_analysis(str(FAILS / "train.py"), SETTINGS, cache)
    assert kept is not None and kept.deferred


def test_standard_input_is_redone_from_its_own_bytes(tmp_path: Path) -> None:
    # On disk the file says nothing: the text given on standard input is
    # what is linted again.
    for name in ("meters.py", "main.py"):
        (tmp_path / name).write_bytes((HOLDS / name).read_bytes())
    (tmp_path / "train.py").write_text("")
    source = (HOLDS / "train.py").read_bytes()
    result = runner.lint_bytes(str(tmp_path / "train.py"), source, SETTINGS, roots=[str(tmp_path)])
    assert result.error is None and [f.code for f in result.findings] == ["AGL102"]


def test_an_editor_reads_a_deferred_entry_from_the_shared_cache(tmp_path: Path) -> None:
    cache = Cache(str(tmp_path / "cache"))
    train = HOLDS / "train.py"
    source = train.read_bytes()
    cache.store(cache.key(str(train), source, SETTINGS), runner.analyse_bytes(str(train), source, SETTINGS, defer=True))
    found = runner.lint_document(str(train), source.decode(), SETTINGS, cache)
    assert [f.code for f in found] == ["AGL102"]


def test_a_deferred_report_that_holds_needs_a_way_to_redo_the_file(monkeypatch: pytest.MonkeyPatch) -> None:
    import autograd_lint.analysis.resolve as resolve

    analysis = FileAnalysis("x.py", pending=[Pending(None, ("c",))])
    # Alone, nothing other modules show holds.
    assert analysis.resolve(None) == []
    redone = FileAnalysis("x.py", findings=["found"])  # type: ignore[list-item]

    class Holds:
        def __init__(self, *args) -> None:
            pass

        def all_hold(self, conditions) -> bool:
            return True

    monkeypatch.setattr(resolve, "Resolver", Holds)
    assert analysis.resolve(object(), lambda: redone) == ["found"]  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="deferred"):
        analysis.resolve(object())  # type: ignore[arg-type]


def test_a_file_gone_before_it_is_redone_is_reported_unreadable(tmp_path: Path) -> None:
    for name in ("meters.py", "main.py", "train.py"):
        (tmp_path / name).write_bytes((HOLDS / name).read_bytes())
    files = sorted(str(p) for p in tmp_path.glob("*.py"))
    items = [runner.analyse_bytes(p, Path(p).read_bytes(), SETTINGS, defer=True) for p in files]
    (tmp_path / "train.py").unlink()
    results = runner.resolve_all(items, SETTINGS, roots=[str(tmp_path)])
    [gone] = [r for r in results if r.path.endswith("train.py")]
    assert gone.error is not None and gone.error.startswith("cannot read file") and not gone.findings


@pytest.mark.parametrize("folder", [HOLDS, FAILS], ids=["holds", "fails"])
def test_a_run_decides_each_deferred_file_once(folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Deciding costs what resolving costs (the callers of a function, read
    # from every file that calls it by name): not twice per file.
    decided: list[str] = []
    plain = FileAnalysis.to_redo

    def counted(self: FileAnalysis, project) -> bool:
        decided.append(self.path)
        return plain(self, project)

    monkeypatch.setattr(FileAnalysis, "to_redo", counted)
    found = _lint(folder)
    assert decided == [str(folder / "train.py")]
    assert [f.code for _, f in found] == (["AGL102"] if folder is HOLDS else [])


def test_a_redone_file_goes_to_libcst_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    # Its analysis on CPython's tree found the reports: it is not repeated.
    files = sorted(str(p) for p in HOLDS.glob("*.py"))
    items = [runner.analyse_bytes(p, Path(p).read_bytes(), SETTINGS, defer=True) for p in files]

    def again(*args, **kwargs):
        raise AssertionError("the analysis on CPython's tree ran again")

    monkeypatch.setattr(engine, "_without_findings", again)
    results = runner.resolve_all(items, SETTINGS, roots=[str(HOLDS)])
    assert all(r.error is None for r in results)
    assert [(Path(r.path).name, f.code) for r in results for f in r.findings] == [("train.py", "AGL102")]
