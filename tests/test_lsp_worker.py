"""The language server's worker pool: its time limit counts the CPU time a
job uses, so a job that only waits (as on a busy machine, where a lint waits
for a core) is never ended, and a job that uses too much is, without taking
the other jobs with it."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from _worker_support import idle, spin, wait_for

from autograd_lint.lsp.worker import JobTimeout, WorkerPool


def test_cpu_time_is_limited_not_waiting() -> None:
    async def scenario() -> None:
        pool = WorkerPool(1)
        try:
            # Twice the limit on the wall clock, next to no CPU: not ended.
            assert await pool.run(0.5, idle, 1.0) == "done"
            with pytest.raises(JobTimeout):
                await pool.run(0.5, spin)
            # The ended worker was replaced.
            assert await pool.run(0.5, idle, 0) == "done"
        finally:
            pool.close()

    asyncio.run(scenario())


def test_only_the_job_over_its_limit_is_ended(tmp_path: Path) -> None:
    flag = tmp_path / "go"

    async def scenario() -> None:
        pool = WorkerPool(2)
        try:
            pool.warm_up()
            # The other job waits for a file made only once the spinning job
            # was ended: it was still running when the pool broke, and is
            # run again on the new pool.
            other = asyncio.ensure_future(pool.run(30, wait_for, str(flag)))
            with pytest.raises(JobTimeout):
                await pool.run(0.5, spin)
            flag.touch()
            assert await other == "done"
        finally:
            pool.close()

    asyncio.run(scenario())
