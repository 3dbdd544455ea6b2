"""Fetch the pinned benchmark corpus and build its deterministic small subset.

A stdlib-only Python port of ``shared/corpus/get_corpus.sh`` and
``shared/corpus/corpus_small.sh``; it reads and writes the same layout, so a
cache built by either is reused by the other:

    DIR/dl/<archive>                  the sdists / wheel as downloaded
    DIR/src/<dist>-<version>/...      only the *.py files of each archive
    DIR/small/<dist>-<version>/...    an N-file subset, hard links into src/
    DIR/all-files.txt, DIR/small-files.txt   the lists the subset came from

Usage: python bench/corpus.py [DIR] [--small-n N]
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shlex
import subprocess
import shutil
import sys
import tarfile
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Sequence

MARKER = ".agl-complete"
DEFAULT_SMALL_N = 500


@dataclass(frozen=True)
class Pin:
    spec: str  # name==version, as pip takes it
    kind: str  # "sdist" or "wheel"
    file: str  # the archive file name pip produces
    sha256: str

    @property
    def dest_name(self) -> str:
        # Named after the archive, not the distribution (pytorch_ignite-0.5.5,
        # not pytorch-ignite-0.5.5), exactly as the shell script names it.
        name = self.file
        for suffix in (".tar.gz", "-py3-none-any.whl"):
            name = name.removesuffix(suffix)
        return name


# Same pins as get_corpus.sh (pinned 2026-11-29). torchtune publishes no sdist;
# its wheel carries the recipes/ training scripts.
PINS: tuple[Pin, ...] = (
    Pin("transformers==5.23.0", "sdist", "transformers-5.23.0.tar.gz", "19d647a4d5d903a7c644ca5cde2d86efc3dde7d8c687ae7988806ff2205efa71"),
    Pin("diffusers==0.42.1", "sdist", "diffusers-0.42.1.tar.gz", "ce855ab670c8cd1c7a61be8f12fbc68c081bca8ec5e747273946d8d6c2aff23b"),
    Pin("pytorch-ignite==0.5.5", "sdist", "pytorch_ignite-0.5.5.tar.gz", "2c14de75c939a3cc06d2e7de00b1e0a261917ef9bd874dac2e69d789dfa9cc64"),
    Pin("timm==1.0.31", "sdist", "timm-1.0.31.tar.gz", "baa0b333339c46d3d6d4965d99b69f5053afed71210e8f433d7ea5ee6a18f0ec"),
    Pin("peft==0.21.2", "sdist", "peft-0.21.2.tar.gz", "b803ccfb3f3f316004d850284306687833a2235ea278fb56abc856203456142e"),
    Pin("pytorch-lightning==2.6.6", "sdist", "pytorch_lightning-2.6.6.tar.gz", "52c52b20522dd3d3feb3bb3aae2dbe3f291e8e836d4111a74cfd72e9df018834"),
    Pin("trl==1.16.0", "sdist", "trl-1.16.0.tar.gz", "999bd4a85b08870b7bfa387e1efa5177d2a4b88fe82b2526a057ac5d3cc600cd"),
    Pin("accelerate==1.15.0", "sdist", "accelerate-1.15.0.tar.gz", "5654f8c5eaa0d4fa68b33e287a97765da6849bf6d51dcac874e73fbbddfb6134"),
    Pin("stable-baselines3==2.9.2", "sdist", "stable_baselines3-2.9.2.tar.gz", "8af267e9513343f481b3f0680b7740ad79a746873db24f18a9fb2edcbd9a2df7"),
    Pin("torchtune==0.6.1", "wheel", "torchtune-0.6.1-py3-none-any.whl", "bcbc4ee9774b5c5829a5ff13df851e0b0e32416c018af8db53faa3472ac256e7"),
)


class CorpusError(Exception):
    """A download or verification step failed; the message says which."""


def default_dir() -> Path:
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(cache) / "agl-corpus"


def _log(message: str) -> None:
    # Progress goes to stderr so that callers can keep stdout for results.
    print(message, file=sys.stderr)


# --- fetching --------------------------------------------------------------


def sha256_of(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _sha_ok(path: Path, sha: str) -> bool:
    return path.is_file() and sha256_of(path) == sha


def _pip_command() -> list[str]:
    # PIP="..." overrides the pip command, as in get_corpus.sh.
    override = os.environ.get("PIP")
    return shlex.split(override) if override else [sys.executable, "-m", "pip"]


def download(pin: Pin, dl: Path) -> None:
    """Put ``dl/pin.file`` in place with the pinned sha256, via pip download."""

    archive = dl / pin.file
    if _sha_ok(archive, pin.sha256):
        return
    archive.unlink(missing_ok=True)
    _log(f"  fetch   {pin.spec} ({pin.kind})")
    # --no-binary / --only-binary force the archive kind the pin names, so pip
    # never silently swaps an sdist for a wheel (or the other way round).
    binary = ["--no-binary", ":all:"] if pin.kind == "sdist" else ["--only-binary", ":all:"]
    cmd = [*_pip_command(), "download", "--quiet", "--no-deps", *binary, "-d", str(dl), pin.spec]
    if subprocess.run(cmd).returncode != 0:
        raise CorpusError(f"pip download failed for {pin.spec}: {shlex.join(cmd)}")
    if not archive.is_file():
        raise CorpusError(f"pip did not produce {archive}")
    if not _sha_ok(archive, pin.sha256):
        if os.environ.get("AGL_NO_VERIFY", "0") == "1":
            _log(f"  WARNING: sha256 of {pin.file} differs from the pin (AGL_NO_VERIFY=1)")
        else:
            raise CorpusError(f"sha256 of {archive} differs from the pin {pin.sha256} (set AGL_NO_VERIFY=1 to accept it)")


# --- unpacking -------------------------------------------------------------


def _py_members(archive: Path) -> Iterator[tuple[str, bytes]]:
    """Yield (member name, content) for every regular *.py member."""
    if archive.name.endswith(".tar.gz"):
        with tarfile.open(archive) as t:
            for m in t:
                if m.isfile() and m.name.endswith(".py"):
                    f = t.extractfile(m)
                    if f is not None:
                        yield m.name, f.read()
    else:
        with zipfile.ZipFile(archive) as z:
            for name in z.namelist():
                if name.endswith(".py") and not name.endswith("/"):
                    yield name, z.read(name)


def _member_parts(name: str, strip_first: bool) -> list[str] | None:
    """The path components to write a member to, or None to skip it."""
    parts = [p for p in name.split("/") if p not in ("", ".")]
    if strip_first:
        parts = parts[1:]  # an sdist's "<dist>-<version>/" top folder
    # ".." is refused outright: a member may never write outside dest.
    if not parts or ".." in parts:
        return None
    return parts


def unpack_py(archive: Path, dest: Path) -> int:
    """Unpack only the *.py members of archive into dest; return how many."""
    dest = Path(os.path.realpath(dest))
    strip_first = archive.name.endswith(".tar.gz")
    count = 0
    for name, data in _py_members(archive):
        parts = _member_parts(name, strip_first)
        if parts is None:
            continue
        out = dest.joinpath(*parts)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_bytes(data)
        count += 1
    return count


def ensure_project(pin: Pin, dl: Path, src: Path) -> Path:
    """Download (if needed) and unpack one pinned project; idempotent."""
    dest = src / pin.dest_name
    if (dest / MARKER).is_file():
        _log(f"  have    {pin.spec}")
        return dest
    download(pin, dl)
    _log(f"  unpack  {pin.file}")
    # Start from an empty folder: a half-unpacked tree from an interrupted
    # run has no marker and must not leave stale files behind.
    shutil.rmtree(dest, ignore_errors=True)
    dest.mkdir(parents=True)
    unpack_py(dl / pin.file, dest)
    (dest / MARKER).touch()
    return dest


# --- the small subset ------------------------------------------------------


def _walk_py(root: str, rel: str) -> Iterator[str]:
    # Like `find . -name '*.py' -type f`: regular files only (a symlink is not
    # -type f), and symlinked folders are not descended into.
    with os.scandir(root) as it:
        for entry in it:
            path = f"{rel}/{entry.name}"
            if entry.is_dir(follow_symlinks=False):
                yield from _walk_py(entry.path, path)
            elif entry.is_file(follow_symlinks=False) and entry.name.endswith(".py"):
                yield path


def corpus_files(src: Path) -> list[str]:
    """All *.py paths under src, "./"-prefixed and sorted bytewise (LC_ALL=C sort)."""
    return sorted(_walk_py(str(src), "."), key=os.fsencode)


def pick_subset(paths: Sequence[str], n: int) -> list[str]:
    """n evenly spaced paths, as corpus_small.sh's awk picks them.

    awk picks line NR = int(i * t / n) + 1 for i < n and i < t, in double
    precision; Python's int / int is the same correctly rounded double.
    """
    total = len(paths)
    picked = {int(i * total / n) for i in range(min(n, total))}
    return [paths[k] for k in sorted(picked)]


def _write_list(path: Path, lines: Sequence[str]) -> None:
    path.write_bytes(b"".join(os.fsencode(line) + b"\n" for line in lines))


def _link_or_copy(source: Path, target: Path) -> None:
    try:
        os.link(source, target)
    except OSError:  # another file system, or links not allowed
        shutil.copy(source, target)


def ensure_small(cache: Path, n: int = DEFAULT_SMALL_N) -> Path:
    """Build cache/small from cache/src (idempotent for the same n)."""
    src, out = cache / "src", cache / "small"
    marker = out / MARKER
    if marker.is_file() and marker.read_text().rstrip("\n") == str(n):
        _log(f"small corpus already built: {out}")
        return out
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    everything = corpus_files(src)
    chosen = pick_subset(everything, n)
    _write_list(cache / "all-files.txt", everything)
    _write_list(cache / "small-files.txt", chosen)
    for rel in chosen:
        target = out / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        _link_or_copy(src / rel, target)
    marker.write_text(f"{n}\n")
    return out


def ensure_corpus(dir: str | os.PathLike[str] | None = None, small_n: int = DEFAULT_SMALL_N) -> tuple[Path, Path]:
    """Make sure DIR/src and DIR/small exist; return (src_path, small_path)."""
    cache = Path(dir) if dir is not None else default_dir()
    dl, src = cache / "dl", cache / "src"
    dl.mkdir(parents=True, exist_ok=True)
    src.mkdir(parents=True, exist_ok=True)
    _log(f"corpus cache: {cache}")
    for pin in PINS:
        ensure_project(pin, dl, src)
    return src, ensure_small(cache, small_n)


def _summary(label: str, root: Path) -> None:
    files = [root / p for p in corpus_files(root)]
    lines = sum(f.read_bytes().count(b"\n") for f in files)
    print(f"{label}: {root}")
    print(f"{label} files: {len(files)}")
    print(f"{label} lines: {lines}")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Fetch the pinned benchmark corpus and build its small subset.")
    parser.add_argument("dir", nargs="?", type=Path, default=None, help=f"cache folder (default: {default_dir()})")
    parser.add_argument("--small-n", type=int, default=DEFAULT_SMALL_N, metavar="N", help="subset size (default: %(default)s)")
    args = parser.parse_args(argv)
    if args.small_n < 1:
        parser.error("--small-n must be at least 1")
    try:
        src, small = ensure_corpus(args.dir, args.small_n)
    except CorpusError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    _summary("corpus", src)
    _summary("small corpus", small)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
