"""Lint many files: read bytes, call the pure ``engine.analyse_source``, in
this process or across a process pool; then decide what each file's
findings depend on in the others (modules.ProjectIndex): what an imported
helper keeps, who calls a function under ``no_grad``.

A file that cannot be read, or that makes the engine raise, becomes a
``FileResult`` with ``error`` set; the other files are still linted.
"""

from __future__ import annotations

import gc
import os
from collections.abc import Callable
from contextlib import contextmanager
from functools import partial

from autograd_lint.files import NOTEBOOK_SUFFIX
from autograd_lint.finding import FileResult
from autograd_lint.settings import FileSettings, Settings, settings_of

TYPE_CHECKING = False  # typing costs 4 ms at start-up; type checkers take this name as true
if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence
    from typing import TypeVar

    from autograd_lint.analysis.summaries import ModuleSummary
    from autograd_lint.cache import Cache
    from autograd_lint.file_analysis import FileAnalysis
    from autograd_lint.modules import ProjectIndex

# Below this many files a pool costs more to start than it saves.
MIN_FILES_FOR_POOL = 8

INTERNAL_ERROR_PREFIX = "internal error: "

if TYPE_CHECKING:
    T = TypeVar("T")


def _internal_error(path: str, e: Exception) -> FileResult:
    detail = str(e).splitlines()[0] if str(e) else ""
    return FileResult(path, error=f"{INTERNAL_ERROR_PREFIX}{type(e).__name__}{': ' + detail if detail else ''}")


def analyse_bytes(path: str, source: bytes, settings: Settings, defer: bool = False, redo: bool = False) -> "FileAnalysis | FileResult":
    """Lint one file's bytes, leaving what depends on other modules pending;
    never raises (except KeyboardInterrupt). The engine (and LibCST with
    it) is imported only for a file that needs it. ``defer``: a Python
    file whose every report waits on other modules is left with its
    reports unmade (``resolve_all`` redoes it when one holds). ``redo``:
    the file's reports were deferred; they are made on LibCST's tree at
    once (the analysis on CPython's tree that found them is not repeated)."""
    from autograd_lint import triage
    from autograd_lint.settings import enabled_for

    try:
        if path.endswith(NOTEBOOK_SUFFIX):
            from autograd_lint.notebook import analyse_notebook

            return analyse_notebook(path, source, settings)
        text = triage.decoded(path, source, settings)
        if not isinstance(text, str):
            return text
        done = triage.without_parse(path, text, source, enabled_for(path, settings))
        if done is not None:
            return done
        from autograd_lint.engine import analyse_on_libcst, parse_and_analyse

        if redo:
            return analyse_on_libcst(path, text, settings, source)
        return parse_and_analyse(path, text, settings, source, defer=defer)
    except Exception as e:  # one bad file must not end the run
        return _internal_error(path, e)


def _read(path: str) -> "bytes | FileResult":
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError as e:
        return FileResult(path, error=f"cannot read file: {e.strerror or e}")


def analyse_file(
    path: str, settings: Settings, cache: "Cache | None" = None, redo: bool = False, source_of: "Callable[[str], bytes | FileResult] | None" = None
) -> "FileAnalysis | FileResult":
    """Lint one file, its reports deferred where they can be; with
    ``cache``, store its analysis there (the caller looked it up already).
    ``redo``: as for ``analyse_bytes``; ``source_of``: its bytes (default:
    read from disk)."""
    source = (source_of or _read)(path)
    if isinstance(source, FileResult):
        return source
    with collected_after():
        out = analyse_bytes(path, source, settings, defer=True, redo=redo)
    if cache is not None and not isinstance(out, FileResult):
        # Handed back without its outline (left in the entry): a process
        # pool would otherwise pickle every file's outline to the parent,
        # which would keep them all.
        return cache.stored(cache.key(path, source, settings), out)
    return out


def cached_analysis(path: str, settings: Settings, cache: "Cache") -> "FileAnalysis | None":
    """The file's analysis from ``cache``; None on a miss, or when the file
    cannot be read (linting it reports that)."""
    source = _read(path)
    if isinstance(source, FileResult):
        return None
    return cache.load(cache.key(path, source, settings), path)


def lint_bytes(path: str, source: bytes, settings: Settings, roots: Sequence[str] = ()) -> FileResult:
    """Lint one file's bytes (standard input) with the project modules it
    imports; never raises (except KeyboardInterrupt)."""
    return resolve_all([analyse_bytes(path, source, settings, defer=True)], settings, roots, source_of=lambda _: source)[0]


def lint_file(path: str, settings: Settings) -> FileResult:
    return resolve_all([analyse_file(path, settings)], settings)[0]


def summarize_file(path: str, settings: Settings, cache: "Cache | None" = None) -> "ModuleSummary | None":
    """The summary of a module the linted files import but that is not
    linted itself (parsed once, when a finding needs it)."""
    source = _read(path)
    if isinstance(source, FileResult):
        return None
    return summarize_bytes(path, source, settings, cache)


def summarize_bytes(path: str, source: bytes, settings: Settings, cache: "Cache | None" = None) -> "ModuleSummary | None":
    """``summarize_file`` for bytes at hand (an editor buffer)."""
    key = cache.summary_key(path, source, settings) if cache is not None else b""
    if cache is not None:
        found, summary = cache.load_summary(key)
        if found:
            return summary
    from autograd_lint.engine import summarize_source

    try:
        with collected_after():
            summary = summarize_source(path, source, settings)
    except Exception:
        return None
    if cache is not None:
        cache.store_summary(key, summary)
    return summary


def lint_document(path: str, text: str, settings: Settings, cache: "Cache | None" = None, open_texts: "dict[str, str] | None" = None) -> list:
    """An editor buffer's findings, as ``autograd-lint PATH`` would give
    them for that text: what it imports is read from the buffers open in
    the editor (``open_texts``, by path), else from disk, and summarised
    once per content (``cache``)."""
    from autograd_lint.engine import analyse_text

    source = text.encode("utf-8", "surrogatepass")
    key = cache.key(path, source, settings) if cache is not None else b""
    analysis = cache.load(key, path) if cache is not None else None
    if analysis is None:
        analysis = analyse_text(path, text, settings, source)
        if cache is not None:
            cache.store(key, analysis)
    # An entry a command-line run stored may hold deferred reports.
    redo = partial(analyse_text, path, text, settings, source)
    return _resolve_document(path, analysis, settings, cache, open_texts, redo)


def lint_cells(path: str, cells: list[tuple[str, str]], settings: Settings, cache: "Cache | None" = None, open_texts: "dict[str, str] | None" = None) -> list:
    """``lint_document`` for an editor's notebook: its cells ((type,
    source) in order), each finding in its cell."""
    from autograd_lint.notebook import analyse_cells

    return _resolve_document(path, analyse_cells(path, cells, settings), settings, cache, open_texts)


def _resolve_document(
    path: str, analysis: "FileAnalysis", settings: Settings, cache: "Cache | None", open_texts: "dict[str, str] | None",
    redo: "Callable[[], FileAnalysis] | None" = None,
) -> list:
    """The document's findings, the pending ones decided from the modules it
    imports: from the editor's buffers (``open_texts``), else from disk
    (``redo``: the document's analysis with its reports made, for an
    analysis that deferred them)."""
    if not analysis.pending:
        return analysis.findings
    from autograd_lint.modules import ModuleFinder, ProjectIndex

    buffers = {os.path.realpath(p): t for p, t in (open_texts or {}).items()}

    def load(module: str) -> "ModuleSummary | None":
        held = buffers.get(os.path.realpath(module))
        if held is not None:
            return summarize_bytes(module, held.encode("utf-8", "surrogatepass"), settings, cache)
        return summarize_file(module, settings, cache)

    return analysis.resolve(ProjectIndex(ModuleFinder(()), {path: analysis}, load), redo)


def project_index(
    analyses: Sequence["FileAnalysis"], settings: "Settings | FileSettings", roots: Sequence[str] = (), cache: "Cache | None" = None
) -> "ProjectIndex":
    from autograd_lint.modules import ModuleFinder, ProjectIndex

    return ProjectIndex(ModuleFinder(roots), {a.path: a for a in analyses}, lambda path: summarize_file(path, settings_of(settings, path), cache))


def resolve_all(
    items: Sequence["FileAnalysis | FileResult"], settings: "Settings | FileSettings", roots: Sequence[str] = (), cache: "Cache | None" = None,
    source_of: "Callable[[str], bytes | FileResult] | None" = None,
) -> list[FileResult]:
    """Each file's findings, decided with every other file of the run. A
    file whose deferred reports hold is linted again, from
    ``source_of(path)`` (its bytes; by default read again), and that
    analysis is stored in ``cache`` in place of the deferred one. (In this
    process: across a pool, two such files would be held at once beside
    the parent's project index; measured on the whole shared corpus, 19
    files, 9 s, and a process tree of 398 MiB at its peak, not 254.)"""
    from autograd_lint.file_analysis import FileAnalysis

    analyses = [a for a in items if isinstance(a, FileAnalysis)]
    project = project_index(analyses, settings, roots, cache) if any(a.pending for a in analyses) else None
    out: list[FileResult] = []
    for item in items:
        if not isinstance(item, FileAnalysis):
            out.append(item)
            continue
        redo = partial(_made_again, item.path, settings_of(settings, item.path), cache, source_of)
        try:
            out.append(FileResult(item.path, item.resolve(project, redo)))
        except _NotMadeAgain as e:
            out.append(e.result)
        except Exception as e:  # one bad file must not end the run
            out.append(_internal_error(item.path, e))
    return out


class _NotMadeAgain(Exception):
    """A file to lint again gave no analysis this time: it could not be
    read, or linting it failed (``result`` says which)."""

    def __init__(self, result: FileResult) -> None:
        self.result = result


def _made_again(path: str, settings: Settings, cache: "Cache | None", source_of: "Callable[[str], bytes | FileResult] | None") -> "FileAnalysis":
    """The file's analysis with its deferred reports made (``redo`` of
    ``FileAnalysis.resolve``)."""
    out = analyse_file(path, settings, cache, redo=True, source_of=source_of)
    if isinstance(out, FileResult):
        raise _NotMadeAgain(out)
    return out


# Per-worker settings and task, sent once through the pool initializer rather
# than pickled again with every chunk of paths.
_WORKER_SETTINGS: "Settings | FileSettings | None" = None
_WORKER_TASK: Callable | None = None


def batch_collection() -> None:
    """The results gathered so far stay alive for the whole run: at the
    default thresholds the cycle collector scans that live heap over and
    over. Collect far less often between files (``collected_after`` does
    the collecting that matters)."""
    gc.set_threshold(100_000, 50, 1000)


@contextmanager
def collected_after() -> Iterator[None]:
    """No cycle collection while one file is analysed, one young-generation
    collection after it. The file's tree is alive until its analysis ends:
    a collection meanwhile walks its nodes again and again for nothing.
    After, the analysis has broken its own reference cycles
    (``ModuleAnalysis.close``), so reference counting has freed the tree and
    the collection only finds what is left (a cycle of an unfinished
    analysis, one a library made)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.collect(0)
        if enabled:
            gc.enable()
        give_back_memory()


# Above this resident size, and this far above what was left after the last
# trim, what a file's analysis freed is handed back to the system after it:
# the C allocator keeps freed pages for reuse, so a worker that analysed one
# very large file would hold its peak for the rest of the run (measured: 210
# MiB kept after a 340 KiB file, 88 after trimming). The margin keeps a
# process that stays near the threshold from trimming after every file
# (each trim's pages are faulted in again: 3% of a cold run's CPU).
TRIM_ABOVE_BYTES = 96 << 20
TRIM_MARGIN_BYTES = 32 << 20
_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096
_TRIM: list = []  # [malloc_trim or None, resident after the last trim]


def _resident() -> int | None:
    try:
        with open("/proc/self/statm", "rb") as f:
            return int(f.read().split()[1]) * _PAGE
    except (OSError, ValueError, IndexError):
        return None


def give_back_memory() -> None:
    """``malloc_trim`` when this process holds more than ``TRIM_ABOVE_BYTES``
    and ``TRIM_MARGIN_BYTES`` more than after its last trim (glibc on
    Linux; elsewhere nothing)."""
    resident = _resident()
    if resident is None or resident <= TRIM_ABOVE_BYTES or (_TRIM and resident <= _TRIM[1] + TRIM_MARGIN_BYTES):
        return
    if not _TRIM:
        try:
            import ctypes

            _TRIM[:] = [ctypes.CDLL("libc.so.6").malloc_trim, 0]
        except (OSError, AttributeError):
            _TRIM[:] = [None, 0]
    if _TRIM[0] is not None:
        _TRIM[0](0)
        _TRIM[1] = _resident() or 0
    else:
        _TRIM[1] = resident


def _init_worker(settings: "Settings | FileSettings", task: Callable) -> None:
    import signal

    batch_collection()
    global _WORKER_SETTINGS, _WORKER_TASK
    _WORKER_SETTINGS, _WORKER_TASK = settings, task
    # Ctrl-C is the parent's to handle; workers printing tracebacks for it
    # would only bury the terminal.
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _run_in_worker(path: str):
    assert _WORKER_SETTINGS is not None and _WORKER_TASK is not None
    return _WORKER_TASK(path, settings_of(_WORKER_SETTINGS, path))


def default_jobs() -> int:
    return os.cpu_count() or 1


# Called as progress(files done, files to do) after each file is analysed.
Progress = Callable[[int, int], None]


def lint_paths(
    files: Sequence[str], settings: "Settings | FileSettings", jobs: int | None = None, roots: Sequence[str] = (), cache: "Cache | None" = None,
    progress: Progress | None = None,
) -> list[FileResult]:
    """One FileResult per file, in the order of ``files``. ``settings``: for
    every file, or each file's own; ``jobs`` is the number of worker
    processes (None or 0: one per CPU; 1: in-process); ``roots``: folders
    named on the command line, where imports are also looked for;
    ``cache``: where analyses are looked up first and stored; ``progress``:
    told of each file analysed (cache hits are not counted)."""
    if cache is None:
        from autograd_lint.cache import Scratch

        try:
            scratch = Scratch()
        except OSError:  # no temporary folder to write: outlines stay in memory
            return resolve_all(map_files(analyse_file, files, settings, jobs, on_crash=crashed_result, progress=progress), settings, roots)
        try:
            done = map_files(partial(analyse_file, cache=scratch), files, settings, jobs, on_crash=crashed_result, progress=progress)
            return resolve_all(done, settings, roots, scratch)
        finally:
            scratch.close()
    # Hits are read here: a pool is started only for what is left.
    items: list = [cached_analysis(p, settings_of(settings, p), cache) for p in files]
    todo = [i for i, item in enumerate(items) if item is None]
    done = map_files(partial(analyse_file, cache=cache), [files[i] for i in todo], settings, jobs, on_crash=crashed_result, progress=progress)
    for i, item in zip(todo, done):
        items[i] = item
    return resolve_all(items, settings, roots, cache)


def crashed_result(path: str, how: str) -> FileResult:
    """A file whose worker process died: reported as AGL001, not lost."""
    from autograd_lint.triage import crashed

    return FileResult(path, [crashed(path, how)])


def map_files(
    task: Callable[[str, Settings], T], files: Sequence[str], settings: "Settings | FileSettings", jobs: int | None = None,
    on_crash: Callable[[str, str], T] | None = None, progress: Progress | None = None,
) -> list[T]:
    """``task(path, its settings)`` for every file, in order, across a process
    pool when it pays. ``task`` must be picklable (a module-level function
    or a partial of one) and must not raise for a bad file. If a worker
    dies (a signal, out of memory), the files not done yet are run one by
    one, each in a worker, so that the one that kills its worker is found:
    it gets ``on_crash(path, how)``, and the others their results.
    ``progress(done, total)`` follows each result, in order."""
    jobs = jobs or default_jobs()
    jobs = min(jobs, len(files))
    batch_collection()
    tick = _ticker(progress, len(files))
    if jobs <= 1 or len(files) < MIN_FILES_FOR_POOL:
        return [tick(task(p, settings_of(settings, p))) for p in files]
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool

    # A few chunks per worker: large enough to amortise the IPC, small enough
    # that one slow chunk does not leave the other workers idle.
    chunksize = max(1, len(files) // (jobs * 4))
    results: list[T] = []
    try:
        executor = ProcessPoolExecutor(max_workers=jobs, initializer=_init_worker, initargs=(settings, task))
    except (OSError, NotImplementedError):
        # No process support here (sandbox, missing /dev/shm): run in-process.
        return [tick(task(p, settings_of(settings, p))) for p in files]
    try:
        for result in executor.map(_run_in_worker, files, chunksize=chunksize):
            results.append(tick(result))
    except (BrokenProcessPool, OSError):
        executor.shutdown(wait=False, cancel_futures=True)
        results.extend(tick(r) for r in _one_by_one(task, files[len(results):], settings, on_crash))
        return results
    except BaseException:
        executor.shutdown(wait=False, cancel_futures=True)
        raise
    executor.shutdown()
    return results


def _ticker(progress: Progress | None, total: int) -> Callable[[T], T]:
    """Passes each result through, telling ``progress`` how many are done."""
    done = 0

    def tick(result: T) -> T:
        nonlocal done
        done += 1
        if progress is not None:
            progress(done, total)
        return result

    return tick


def _one_by_one(task: Callable[[str, Settings], T], files: Sequence[str], settings: "Settings | FileSettings", on_crash: Callable[[str, str], T] | None) -> list[T]:
    """After a worker died: each file in a worker of its own (a new one
    after each death), so one deadly file costs only itself."""
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool

    out: list[T] = []
    executor = None
    try:
        for path in files:
            if executor is None:
                executor = ProcessPoolExecutor(max_workers=1, initializer=_init_worker, initargs=(settings, task))
            try:
                out.append(executor.submit(_run_in_worker, path).result())
            except BrokenProcessPool:
                executor.shutdown(wait=False, cancel_futures=True)
                executor = None
                out.append(on_crash(path, "died (a crash or out of memory)") if on_crash is not None else task(path, settings_of(settings, path)))
    finally:
        if executor is not None:
            executor.shutdown()
    return out
