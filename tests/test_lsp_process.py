"""The language server as a process: its workers do not outlive it, and
the latency script (tests/lsp_latency.py, whose numbers go in the notes)
runs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from _lsp_support import SERVER_COMMAND

LATENCY_SCRIPT = Path(__file__).parent / "lsp_latency.py"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_workers_leave_when_the_server_is_killed() -> None:
    # Editors may kill the server outright; its worker processes must not
    # linger (each holds LibCST and a parsed document).
    server = subprocess.Popen(SERVER_COMMAND, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"processId": None, "rootUri": None, "capabilities": {}}})
    server.stdin.write(f"Content-Length: {len(body)}\r\n\r\n{body}".encode())
    server.stdin.flush()

    def children() -> list[str]:
        try:
            with open(f"/proc/{server.pid}/task/{server.pid}/children") as fh:
                return fh.read().split()
        except OSError:
            return []

    # The deadlines only catch a hang: a busy machine starts processes slowly.
    deadline = time.monotonic() + 120
    while len(children()) < 2 and time.monotonic() < deadline:  # the workers start at initialize
        time.sleep(0.1)
    workers = children()
    assert len(workers) >= 2
    server.kill()
    server.wait()
    deadline = time.monotonic() + 120
    while any(os.path.exists(f"/proc/{pid}") for pid in workers) and time.monotonic() < deadline:
        time.sleep(0.2)
    alive = [pid for pid in workers if os.path.exists(f"/proc/{pid}")]
    assert not alive, f"orphaned workers: {alive}"


def test_latency_script_measures_edits() -> None:
    proc = subprocess.run(
        [sys.executable, str(LATENCY_SCRIPT), "--edits", "3", "--debounce-ms", "0"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout)
    assert result["lines"] == 2000 and result["edits"] == 3 and len(result["all_ms"]) == 3
    assert result["findings"] > 20  # the fixtures' findings, so fixes are computed too
    assert 0 < result["min_ms"] <= result["median_ms"] <= result["max_ms"]
