"""Linting and fixing in worker processes.

A parse of a large file takes a few hundred milliseconds of pure Python; run
on the server's event loop it would stall every other request. Workers are
separate processes (spawned, not forked: the server has threads), warmed up
when they start so that no job pays for importing LibCST.

The time limit counts the CPU time a job uses in its worker, not the time it
waits: on a busy machine (a build, a training run next to the editor) a
document that needs 9 s of CPU takes 30 s to lint and must still be shown,
and neither the wait for a free worker nor the start of a new one is
linting. Each worker's watchdog thread ends its process when the running
job has used up its CPU seconds, after saying which job it ends; the pool is
then replaced: one pathological document cannot take the server with it.
"""

from __future__ import annotations

import asyncio
import itertools
import multiprocessing
import os
import threading
import time
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from multiprocessing.queues import SimpleQueue
from typing import Any, Callable

from autograd_lint.cache import Cache
from autograd_lint.finding import Finding
from autograd_lint.fix import CellsFix, TextFix
from autograd_lint.settings import Settings

# How often a worker's watchdog looks at its job's CPU time and its parent.
WATCH_INTERVAL_S = 0.1
# A job whose watchdog cannot run (native code that holds the GIL and never
# returns) is ended from the server after this long on the wall clock: far
# beyond what any load makes of the CPU limit, it only catches a stuck worker.
STUCK_FACTOR = 10.0
STUCK_MARGIN_S = 300.0


class JobTimeout(Exception):
    """A lint or fix used more than its CPU time; its worker was ended."""


def lint_job(path: str, text: str, settings: Settings, cache: "Cache | None" = None, open_texts: dict[str, str] | None = None) -> list[Finding]:
    from autograd_lint.runner import lint_document

    return lint_document(path, text, settings, cache, open_texts)


def lint_cells_job(path: str, cells: list[tuple[str, str]], settings: Settings, cache: "Cache | None" = None, open_texts: dict[str, str] | None = None) -> list[Finding]:
    from autograd_lint.runner import lint_cells

    return lint_cells(path, cells, settings, cache, open_texts)


def fix_cells_job(path: str, cells: list[tuple[str, str]], settings: Settings, unsafe: bool) -> CellsFix:
    from autograd_lint.fix import fix_cells

    return fix_cells(path, cells, settings, unsafe)


def fix_job(path: str, text: str, settings: Settings, unsafe: bool) -> TextFix:
    from autograd_lint.fix import fix_text

    return fix_text(path, text, settings, unsafe)


# --- in the worker ------------------------------------------------------------

# The running job (its id and the process CPU time at which it must end), as
# the watchdog reads it; None between jobs.
_running: tuple[int, float] | None = None
_running_lock = threading.Lock()


def _start_worker(parent: int, ended: SimpleQueue) -> None:
    """Worker initializer: watch the parent and the jobs, and warm up (a
    server killed meanwhile is noticed: the watch starts first)."""
    threading.Thread(target=_watch, args=(parent, ended), name="watchdog", daemon=True).start()
    _warm()


def _watch(parent: int, ended: SimpleQueue) -> None:
    # Leave when the server is gone: an editor may kill it outright (no
    # shutdown, no clean-up), and an idle worker would wait on its queue
    # forever. End the process when its job has used up its CPU seconds.
    while os.getppid() == parent:
        with _running_lock:
            if _running is not None and time.process_time() > _running[1]:
                ended.put(_running[0])  # written before the process ends: the server reads it after
                os._exit(1)
        time.sleep(WATCH_INTERVAL_S)
    os._exit(0)


def _limited(job: int, cpu_seconds: float, fn: Callable[..., Any], *args: Any) -> Any:
    """``fn(*args)`` with at most ``cpu_seconds`` of CPU time (0: no limit)."""
    global _running
    if cpu_seconds:
        with _running_lock:
            _running = (job, time.process_time() + cpu_seconds)
    try:
        return fn(*args)
    finally:
        with _running_lock:
            _running = None


def _ready() -> None:
    """A job that only makes the pool start a worker."""


def _warm() -> None:
    # Import the engine and build the rule objects once per worker.
    lint_job("warm.py", "import torch\n", Settings(enabled=frozenset({"AGL101"})))


# --- in the server --------------------------------------------------------------


class WorkerPool:
    def __init__(self, workers: int = 2) -> None:
        self._workers = max(1, workers)
        self._executor: ProcessPoolExecutor | None = None
        self._context = multiprocessing.get_context("spawn")
        self._ended: SimpleQueue | None = None  # ids of the jobs the watchdogs ended
        self._ended_jobs: set[int] = set()
        self._ids = itertools.count()
        # Jobs go to the pool only when a worker is free, so that the
        # wall-clock backstop below starts about when the job does.
        self._free = asyncio.Semaphore(self._workers)

    def _pool(self) -> ProcessPoolExecutor:
        if self._executor is None:
            if self._ended is None:
                self._ended = self._context.SimpleQueue()
            self._executor = ProcessPoolExecutor(
                self._workers, mp_context=self._context, initializer=_start_worker, initargs=(os.getpid(), self._ended)
            )
        return self._executor

    def warm_up(self) -> None:
        pool = self._pool()
        for _ in range(self._workers):
            pool.submit(_ready)

    async def run(self, cpu_seconds: float, fn: Callable[..., Any], *args: Any) -> Any:
        """``fn(*args)`` in a worker; JobTimeout once it has used
        ``cpu_seconds`` of CPU time (0: no limit). A pool broken by another
        job's end is replaced and the job retried once."""
        stuck = cpu_seconds * STUCK_FACTOR + STUCK_MARGIN_S if cpu_seconds else None
        async with self._free:
            for attempt in (1, 2):
                pool = self._pool()
                job = next(self._ids)
                try:
                    future = asyncio.wrap_future(pool.submit(_limited, job, cpu_seconds, fn, *args))
                    return await asyncio.wait_for(future, stuck)
                except asyncio.TimeoutError:
                    self._kill(pool)
                    raise JobTimeout from None
                except BrokenProcessPool:
                    self._kill(pool)
                    if self._was_ended(job):
                        raise JobTimeout from None
                    if attempt == 2:
                        raise
        raise AssertionError("unreachable")

    def _was_ended(self, job: int) -> bool:
        while self._ended is not None and not self._ended.empty():
            self._ended_jobs.add(self._ended.get())
        if job in self._ended_jobs:
            self._ended_jobs.discard(job)
            return True
        return False

    def _kill(self, pool: ProcessPoolExecutor) -> None:
        if self._executor is pool:
            self._executor = None
        # The executor has no way to stop a running job: end its processes
        # (none left when another job's failure already shut it down).
        for process in list((getattr(pool, "_processes", None) or {}).values()):
            process.kill()
        pool.shutdown(wait=False, cancel_futures=True)

    def close(self) -> None:
        if self._executor is not None:
            self._kill(self._executor)
