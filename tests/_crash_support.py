"""A task for ``runner.map_files`` that kills its worker process on one
file, as a parser crash would (not a test module: workers import it)."""

from __future__ import annotations

import faulthandler
import os
import signal


def die_on_marked(path: str, settings) -> str:
    with open(path, encoding="utf-8") as fh:
        if "DIE" in fh.read():
            # The worker was forked from pytest, whose faulthandler writes a
            # "Fatal Python error" dump to the run's terminal: a deliberate
            # crash is not news. The signal still kills the worker.
            faulthandler.disable()
            os.kill(os.getpid(), signal.SIGSEGV)
    return f"ok {os.path.basename(path)}"


def crashed(path: str, how: str) -> str:
    return f"crashed {os.path.basename(path)}: {how}"
