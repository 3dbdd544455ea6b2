"""Jobs for the language server's worker pool (not a test module: the
spawned workers import it)."""

from __future__ import annotations

import os
import time


def spin() -> None:
    """Use CPU until ended."""
    while True:
        pass


def idle(seconds: float) -> str:
    """Take ``seconds`` on the wall clock and next to no CPU."""
    time.sleep(seconds)
    return "done"


def wait_for(path: str) -> str:
    """Wait, without CPU, until ``path`` exists (at most 120 s: a hang)."""
    deadline = time.monotonic() + 120
    while not os.path.exists(path):
        if time.monotonic() > deadline:
            return "gave up"
        time.sleep(0.05)
    return "done"
