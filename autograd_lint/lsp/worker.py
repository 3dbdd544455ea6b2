"""Linting and fixing in worker processes.

A parse of a large file takes a few hundred milliseconds of pure Python; run
on the server's event loop it would stall every other request. Workers are
separate processes (spawned, not forked: the server has threads), warmed up
at start so that the first diagnostics do not pay for importing LibCST. A job
that runs past the time limit gets its pool killed and replaced: one
pathological document cannot take the server with it.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import threading
import time
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any, Callable

from autograd_lint.cache import Cache
from autograd_lint.finding import Finding
from autograd_lint.fix import CellsFix, TextFix
from autograd_lint.settings import Settings


class JobTimeout(Exception):
    """A lint or fix ran past the time limit; its worker was killed."""


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


def _watch_parent(parent: int) -> None:
    """Worker initializer: leave when the server is gone. An editor may kill
    the server outright (no shutdown, no clean-up), and an idle worker would
    otherwise wait on its queue forever."""

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(1.0)
        os._exit(0)

    threading.Thread(target=watch, name="parent-watch", daemon=True).start()


def _warm() -> None:
    # Import the engine and build the rule objects once per worker.
    lint_job("warm.py", "import torch\n", Settings(enabled=frozenset({"AGL101"})))


class WorkerPool:
    def __init__(self, workers: int = 2) -> None:
        self._workers = max(1, workers)
        self._executor: ProcessPoolExecutor | None = None

    def _pool(self) -> ProcessPoolExecutor:
        if self._executor is None:
            self._executor = ProcessPoolExecutor(
                self._workers,
                mp_context=multiprocessing.get_context("spawn"),
                initializer=_watch_parent,
                initargs=(os.getpid(),),
            )
        return self._executor

    def warm_up(self) -> None:
        pool = self._pool()
        for _ in range(self._workers):
            pool.submit(_warm)

    async def run(self, timeout: float, fn: Callable[..., Any], *args: Any) -> Any:
        """``fn(*args)`` in a worker; JobTimeout after ``timeout`` seconds
        (0: no limit). A pool broken by another job's timeout is replaced and
        the job retried once."""
        for attempt in (1, 2):
            pool = self._pool()
            try:
                future = asyncio.wrap_future(pool.submit(fn, *args))
                return await asyncio.wait_for(future, timeout or None)
            except asyncio.TimeoutError:
                self._kill(pool)
                raise JobTimeout from None
            except BrokenProcessPool:
                self._kill(pool)
                if attempt == 2:
                    raise
        raise AssertionError("unreachable")

    def _kill(self, pool: ProcessPoolExecutor) -> None:
        if self._executor is pool:
            self._executor = None
        # The executor has no way to stop a running job: end its processes.
        for process in list(getattr(pool, "_processes", {}).values()):
            process.kill()
        pool.shutdown(wait=False, cancel_futures=True)

    def close(self) -> None:
        if self._executor is not None:
            self._kill(self._executor)
