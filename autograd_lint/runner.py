"""Lint many files: read bytes, call the pure ``engine.lint_source``, in this
process or across a process pool.

A file that cannot be read, or that makes the engine raise, becomes a
``FileResult`` with ``error`` set; the other files are still linted.
"""

from __future__ import annotations

import os
from typing import Callable, Sequence, TypeVar

from autograd_lint.settings import Settings
from autograd_lint.finding import FileResult

# Below this many files a pool costs more to start than it saves.
MIN_FILES_FOR_POOL = 8

INTERNAL_ERROR_PREFIX = "internal error: "

T = TypeVar("T")


def lint_bytes(path: str, source: bytes, settings: Settings) -> FileResult:
    """Lint one file's bytes; never raises (except KeyboardInterrupt)."""
    from autograd_lint.engine import lint_source

    try:
        return FileResult(path, lint_source(path, source, settings))
    except Exception as e:  # one bad file must not end the run
        detail = str(e).splitlines()[0] if str(e) else ""
        return FileResult(path, error=f"{INTERNAL_ERROR_PREFIX}{type(e).__name__}{': ' + detail if detail else ''}")


def lint_file(path: str, settings: Settings) -> FileResult:
    try:
        with open(path, "rb") as f:
            source = f.read()
    except OSError as e:
        return FileResult(path, error=f"cannot read file: {e.strerror or e}")
    return lint_bytes(path, source, settings)


# Per-worker settings and task, sent once through the pool initializer rather
# than pickled again with every chunk of paths.
_WORKER_SETTINGS: Settings | None = None
_WORKER_TASK: Callable | None = None


def _init_worker(settings: Settings, task: Callable) -> None:
    import signal

    global _WORKER_SETTINGS, _WORKER_TASK
    _WORKER_SETTINGS, _WORKER_TASK = settings, task
    # Ctrl-C is the parent's to handle; workers printing tracebacks for it
    # would only bury the terminal.
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _run_in_worker(path: str):
    assert _WORKER_SETTINGS is not None and _WORKER_TASK is not None
    return _WORKER_TASK(path, _WORKER_SETTINGS)


def default_jobs() -> int:
    return os.cpu_count() or 1


def lint_paths(files: Sequence[str], settings: Settings, jobs: int | None = None) -> list[FileResult]:
    """One FileResult per file, in the order of ``files``. ``jobs`` is the
    number of worker processes (None or 0: one per CPU; 1: in-process)."""
    return map_files(lint_file, files, settings, jobs)


def map_files(task: Callable[[str, Settings], T], files: Sequence[str], settings: Settings, jobs: int | None = None) -> list[T]:
    """``task(path, settings)`` for every file, in order, across a process
    pool when it pays. ``task`` must be picklable (a module-level function
    or a partial of one) and must not raise for a bad file."""
    jobs = jobs or default_jobs()
    jobs = min(jobs, len(files))
    if jobs <= 1 or len(files) < MIN_FILES_FOR_POOL:
        return [task(p, settings) for p in files]
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
        return [task(p, settings) for p in files]
    try:
        for result in executor.map(_run_in_worker, files, chunksize=chunksize):
            results.append(result)
    except (BrokenProcessPool, OSError):
        # A worker died (killed, out of memory): finish the rest in-process,
        # where a failure is at least caught per file.
        results.extend(task(p, settings) for p in files[len(results):])
    except BaseException:
        executor.shutdown(wait=False, cancel_futures=True)
        raise
    executor.shutdown()
    return results
