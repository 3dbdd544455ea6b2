"""Are a file's summary and cache entry the same bytes in every process?

Usage: python bench/determinism.py PATH... [-j N] [--seeds A B] [--reverse] [--list]

Each PATH is a file or a folder (its ``*.py`` files). Every file is
analysed in two fresh interpreters with different ``PYTHONHASHSEED``s
(other hash orders for strings, other object addresses), the second
optionally taking the files in reverse order (``--reverse``: whatever one
file leaves behind in a process must not change the next one's bytes).
For each file, the run compares:

- ``summary``: the pickled bytes of its summary (``ModuleAnalysis.summary``
  as the cache writes it, for a linted file);
- ``calls``: the pickled bytes of its call records;
- ``entry``: the whole cache entry (``Cache.store``: findings, pending
  reports, index, summary, calls);
- ``imported``: the pickled summary of the file as a module only imported
  (``engine.summarize_source``, what ``Cache.store_summary`` writes).

It prints how many files differ in each, and with ``--list`` which. Exit
status 1 when any differs. ``-j N`` runs N interpreters per seed side by
side (each on a share of the files). Run it with the interpreter that has
autograd-lint and LibCST installed (from the repository root, or with the
repository on ``PYTHONPATH``).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

PARTS = ("summary", "calls", "entry", "imported")


def _digests(paths: list[str]) -> dict[str, list[str]]:
    """In a worker: each file's digest of each part."""
    from hashlib import blake2b

    from autograd_lint import catalog
    from autograd_lint import cache as cache_module
    from autograd_lint.cache import Cache
    from autograd_lint.engine import summarize_source
    from autograd_lint.runner import analyse_file
    from autograd_lint.settings import Settings

    settings = Settings(enabled=catalog.resolve_selection(["ALL"]))
    _dumps = getattr(Cache, "_dumps", None) or cache_module._dumps  # as an entry's parts are pickled

    class Capture(Cache):
        """A cache that keeps the one payload it is asked to write."""

        def __init__(self) -> None:
            super().__init__(tempfile.gettempdir(), writable=True)
            self.payload = b""

        def _write(self, key: bytes, payload: bytes) -> bool:
            self.payload = payload
            return True

    def digest(b: bytes) -> str:
        return blake2b(b, digest_size=16).hexdigest()

    out: dict[str, list[str]] = {}
    for p in paths:
        try:
            source = Path(p).read_bytes()
            analysis = analyse_file(p, settings)
            if hasattr(analysis, "outline"):
                summary, calls = analysis.outline
                capture = Capture()
                capture.store(b"", analysis)
                row = [digest(_dumps(summary)), digest(_dumps(calls)), digest(capture.payload)]
            else:  # an unreadable file, an internal error
                row = ["-", "-", "-"]
            row.append(digest(_dumps(summarize_source(p, source, settings))))
        except Exception as e:  # noqa: BLE001 - reported as a difference of its own
            row = [f"error: {e!r}"] * len(PARTS)
        out[p] = row
    return out


def _files(paths: list[str]) -> list[str]:
    out: list[str] = []
    for p in paths:
        if os.path.isdir(p):
            out.extend(sorted(str(f) for f in Path(p).rglob("*.py")))
        else:
            out.append(p)
    return out


def run_side(files: list[str], seed: int, jobs: int, reverse: bool = False) -> dict[str, list[str]]:
    """Every file's digests, from ``jobs`` fresh interpreters run with
    ``PYTHONHASHSEED=seed``."""
    order = list(reversed(files)) if reverse else files
    shares = [order[i::jobs] for i in range(jobs)] if jobs > 1 else [order]
    env = dict(os.environ, PYTHONHASHSEED=str(seed))
    repo = str(Path(__file__).resolve().parent.parent)
    env["PYTHONPATH"] = repo + os.pathsep + env.get("PYTHONPATH", "")
    procs = []
    for share in shares:
        with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
            f.write("\n".join(share))
        procs.append((f.name, subprocess.Popen([sys.executable, __file__, "--worker", f.name], env=env, stdout=subprocess.PIPE, text=True)))
    out: dict[str, list[str]] = {}
    for name, proc in procs:
        stdout, _ = proc.communicate()
        os.unlink(name)
        if proc.returncode != 0:
            raise SystemExit(f"a worker failed (exit {proc.returncode})")
        out.update(json.loads(stdout))
    return out


def compare(a: dict[str, list[str]], b: dict[str, list[str]]) -> dict[str, list[str]]:
    """For each part, the files whose digests differ."""
    return {part: sorted(p for p in a if a[p][i] != b.get(p, [None] * len(PARTS))[i]) for i, part in enumerate(PARTS)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("paths", nargs="*")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("-j", "--jobs", type=int, default=1)
    ap.add_argument("--seeds", type=int, nargs=2, default=(1, 2))
    ap.add_argument("--reverse", action="store_true", help="the second side takes the files in reverse order")
    ap.add_argument("--list", action="store_true", help="name the files that differ")
    args = ap.parse_args(argv)
    if args.worker:
        paths = Path(args.worker).read_text().split("\n")
        print(json.dumps(_digests([p for p in paths if p])))
        return 0
    files = _files(args.paths)
    a = run_side(files, args.seeds[0], args.jobs)
    b = run_side(files, args.seeds[1], args.jobs, reverse=args.reverse)
    diff = compare(a, b)
    print(f"{len(files)} files, PYTHONHASHSEED {args.seeds[0]} vs {args.seeds[1]}{' (second side reversed)' if args.reverse else ''}")
    for part in PARTS:
        print(f"  {part:9s} differs in {len(diff[part])} files")
        if args.list:
            for p in diff[part]:
                print(f"    {p}")
    return 1 if any(diff.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
