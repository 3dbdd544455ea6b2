"""Diagnostic latency of the language server on a large document.

    python tests/lsp_latency.py [FILE] [--edits N] [--debounce-ms MS]

Starts `autograd-lint server` over stdio, opens FILE (default: a 2,000-line
document assembled from the positive fixtures), then makes N edits one at a
time, each changing one line in the middle of the file, and times each from
sending ``didChange`` to receiving the ``publishDiagnostics`` for that
version. Prints one JSON object (milliseconds). The debounce is part of the
measured time, as an editor user sees it.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

from lsprotocol import types
from pytest_lsp import client_capabilities

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _lsp_support import SERVER_COMMAND, change_doc, diagnostics, make_client, open_doc  # noqa: E402

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


def fixture_document(lines: int = 2000) -> str:
    """Real-looking training code with findings: whole positive fixtures, one
    after another, until at least ``lines`` lines (then padded with comments
    to exactly ``lines``)."""
    sources = sorted(p for p in FIXTURES.glob("AGL[1-9]*/pos_*.py") if not p.name.endswith(".fixed.py"))  # AGL0xx ones do not parse
    out: list[str] = []
    for source in sources:
        body = source.read_text(encoding="utf-8").splitlines()
        if len(out) + len(body) > lines:
            break
        out.extend(body)
    out.extend(f"# padding {i}" for i in range(lines - len(out)))
    return "\n".join(out) + "\n"


async def measure(text: str, path: Path, edits: int, debounce_ms: float) -> dict:
    client = make_client()
    await client.start_io(*SERVER_COMMAND)
    try:
        await client.initialize_session(
            types.InitializeParams(capabilities=client_capabilities("visual-studio-code"), initialization_options={"debounceMs": debounce_ms})
        )
        uri = open_doc(client, path, text)
        started = time.perf_counter()
        first = await diagnostics(client, uri, 1, timeout=120)
        if any(d.code == "AGL001" for d in first):
            raise ValueError(f"{path}: does not parse; nothing to measure")
        open_ms = (time.perf_counter() - started) * 1000
        lines = text.splitlines(keepends=True)
        middle = len(lines) // 2
        times: list[float] = []
        for n in range(edits):
            version = n + 2
            # Typing on one line: a changed comment, as between keystrokes.
            edited = lines[:middle] + [f"# edit {n}\n"] + lines[middle:]
            started = time.perf_counter()
            change_doc(client, uri, "".join(edited), version)
            await diagnostics(client, uri, version, timeout=120)
            times.append((time.perf_counter() - started) * 1000)
    finally:
        await client.shutdown_session()
        await client.stop()
    return {
        "lines": len(lines),
        "findings": len(first),
        "debounce_ms": debounce_ms,
        "open_ms": round(open_ms, 1),
        "edits": edits,
        "median_ms": round(statistics.median(times), 1),
        "min_ms": round(min(times), 1),
        "max_ms": round(max(times), 1),
        "all_ms": [round(t, 1) for t in times],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("file", nargs="?")
    parser.add_argument("--edits", type=int, default=15)
    parser.add_argument("--debounce-ms", type=float, default=150)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        if args.file:
            path = Path(args.file).resolve()
            text = path.read_text(encoding="utf-8")
        else:
            path = Path(tmp) / "big_training_module.py"
            (Path(tmp) / "pyproject.toml").write_text("[tool.autograd-lint]\n")
            text = fixture_document()
            path.write_text(text, encoding="utf-8")
        print(json.dumps(asyncio.run(measure(text, path, args.edits, args.debounce_ms))))


if __name__ == "__main__":
    main()
