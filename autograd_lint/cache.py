"""The content cache: each file's analysis, stored under a key of everything
it depends on, so a rerun lints only what changed.

A file's key is a hash of:

- the tool: its version, the bytes of its own modules and of the saved-tensor
  ledger, LibCST's version, Python's major.minor;
- the file: its path as named on the command line (findings carry it) and
  the hash of its bytes;
- the settings that reach it: its enabled codes after per-file-ignores, the
  torch version, the rule options.

Not mtimes, not the folder the checkout lives in (a relative path names the
same file in any checkout), so a cache restored on another machine hits.
Not the other modules either: an entry holds the file's analysis *before*
other modules are known (its findings, those pending on other modules, its
summary and its calls; ``file_analysis.FileAnalysis``). Every run decides
the pending findings again from the entries of the modules they import, so
a changed helper re-decides what its importers' findings depend on without
re-linting them, and an entry can never hold a decision that went stale.

On disk: ``DIR/CACHEDIR.TAG`` and ``DIR/.gitignore`` (so backup tools and
git leave it alone), entries in ``DIR/v1/<2 hex>/<64 hex>``. An entry is a
header (magic, key, length, digest of the payload) and a pickle, written
canonically: the same bytes whichever process writes it. Several
processes may share a folder (CI shards, the editor, pre-commit): an entry
is written to a temporary file and renamed into place, so a reader sees a
whole entry or none; an entry that is truncated, corrupt, from another
version, or under another key is a miss and is written again. Unpickling
only admits the project's own classes, so a planted entry cannot run code.
"""

from __future__ import annotations

import io
import os
import sys

from autograd_lint import __version__
from autograd_lint.file_analysis import FileAnalysis
from autograd_lint.files import ledger_file, write_atomic
from autograd_lint.record import Record
from autograd_lint.settings import Settings, enabled_for

try:
    # hashlib's own BLAKE2 (hashlib.blake2b is this very type): importing
    # hashlib loads OpenSSL first, 2.5 ms of every start-up.
    from _blake2 import blake2b
except ImportError:  # pragma: no cover - a Python built without it
    from hashlib import blake2b
try:
    # pickle's own C unpickler: importing pickle (its Python pickler too)
    # costs 1 ms more at every start-up, for a run that only reads.
    from _pickle import Unpickler, UnpicklingError
except ImportError:  # pragma: no cover - a Python built without it
    from pickle import Unpickler, UnpicklingError

TYPE_CHECKING = False  # typing costs 4 ms at start-up; type checkers take this name as true
if TYPE_CHECKING:
    from typing import Any

    from autograd_lint.analysis.summaries import ModuleSummary

DEFAULT_DIR_NAME = ".autograd-lint-cache"
ENV_VAR = "AUTOGRAD_LINT_CACHE_DIR"

FORMAT = b"v2"
_MAGIC = b"AGLCACHE" + FORMAT
_DIGEST = 16
_HEADER = len(_MAGIC) + 32 + 8 + _DIGEST
# An entry is (findings, pending, index, summary, calls), the last two
# pickled apart: a project reads a file's calls without its summary.
_SUMMARY, _CALLS = 3, 4

# The CACHEDIR.TAG signature (https://bford.info/cachedir/): backup and
# archiving tools skip a folder holding it.
CACHEDIR_TAG = (
    "Signature: 8a477f597d28d172789f06886806bc55\n"
    "# This file is a cache directory tag created by autograd-lint.\n"
    "# For information about cache directory tags see https://bford.info/cachedir/\n"
)


def default_dir(settings: Settings) -> str:
    """``AUTOGRAD_LINT_CACHE_DIR``, else ``.autograd-lint-cache`` in the project
    root (the folder of the configuration in use), else in the current folder."""
    env = os.environ.get(ENV_VAR)
    if env:
        return env
    return os.path.join(settings.root or os.getcwd(), DEFAULT_DIR_NAME)


def _hash(data: bytes = b"") -> blake2b:
    """The hash of keys and fingerprints: 32 bytes of BLAKE2b."""
    return blake2b(data, digest_size=32)


# -- the tool's own fingerprint ----------------------------------------------------


_TOOL: bytes | None = None


def tool_fingerprint(memo_dir: str | None = None) -> bytes:
    """What every entry depends on in the tool itself: the bytes of its own
    modules and of the ledger, not only the version (an editable install
    changes without one). Reading them all costs ~10 ms at every start, so
    with ``memo_dir`` the answer is kept there under the files' sizes and
    modification times, and read back while they stay the same."""
    global _TOOL
    if _TOOL is not None:
        return _TOOL
    files = _tool_files()
    head = f"{__version__}\0{sys.version_info[0]}.{sys.version_info[1]}\0{_libcst_version()}\0".encode()
    memo = None
    if memo_dir is not None:
        stamp = _hash(head)
        for _, p in files:
            try:
                st = os.stat(p)
            except OSError:
                continue
            stamp.update(f"{p}\0{st.st_size}\0{st.st_mtime_ns}\0".encode())
        memo = os.path.join(memo_dir, FORMAT.decode(), "tool-" + stamp.hexdigest())
        try:
            with open(memo, "rb") as f:
                known = f.read()
            if len(known) == 32:
                _TOOL = known
                return known
        except OSError:
            pass
    h = _hash(head)
    for name, p in files:
        h.update(name.encode() + b"\0")
        h.update(_read(p))
    _TOOL = h.digest()
    if memo is not None:
        try:
            write_atomic(memo, _TOOL)
        except OSError:
            pass
    return _TOOL


def _tool_files() -> list[tuple[str, str]]:
    """(name, path) of each file the tool's results depend on: its modules
    (named by their path in the package, sorted), then the ledger."""
    out: list[tuple[str, str]] = []
    _modules_under(os.path.dirname(os.path.realpath(__file__)), "", out)
    out.sort()
    ledger = ledger_file()
    if ledger is not None:
        out.append(("ledger", ledger))
    return out


def _modules_under(folder: str, prefix: str, out: list[tuple[str, str]]) -> None:
    # os.scandir's entries know whether they are folders: a third of
    # os.walk's time (which also needs relpath for the names). A folder
    # that cannot be read is left out, as os.walk leaves it.
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return
    for entry in entries:
        if entry.is_dir():
            if entry.name != "__pycache__" and not entry.name.startswith(".") and not entry.is_symlink():
                _modules_under(entry.path, f"{prefix}{entry.name}/", out)
        elif entry.name.endswith(".py"):
            out.append((prefix + entry.name, entry.path))


def _read(p: str) -> bytes:
    try:
        with open(p, "rb") as f:
            return f.read()
    except OSError:
        return b""


def _libcst_version() -> str:
    # Its version file, found on the path without importing LibCST (0.3 s)
    # or importlib's finders.
    for entry in sys.path:
        p = os.path.join(entry or ".", "libcst", "_version.py")
        if os.path.isfile(p):
            return _read(p).decode("utf-8", "replace")
    return "none"


# -- entries -----------------------------------------------------------------------


# The modules whose classes an entry holds (findings, summaries, values,
# conditions). A class from elsewhere makes the entry a miss; a test lints
# every fixture and checks that each entry loads back.
_ENTRY_MODULES = frozenset(
    {
        "autograd_lint.finding",
        "autograd_lint.file_analysis",
        "autograd_lint.analysis.values",
        "autograd_lint.analysis.summaries",
        "autograd_lint.analysis.resolve",
        "autograd_lint.analysis.outcome",
        "autograd_lint.analysis.state",
    }
)


class _ProjectOnly(Unpickler):
    """Loads only plain-data classes the project defines for its entries:
    an entry someone else wrote cannot call anything else (not even a
    class a module merely imports)."""

    def find_class(self, module: str, name: str) -> Any:
        if module == "builtins" and name == "frozenset":
            return frozenset  # a set, its elements in a canonical order (summaries.canonical_dumps)
        if module in _ENTRY_MODULES:
            obj = super().find_class(module, name)
            if isinstance(obj, type) and obj.__module__ == module:
                return obj
        raise UnpicklingError(f"{module}.{name} is not allowed in a cache entry")


def _entry(key: bytes, payload: bytes) -> bytes:
    """An entry's bytes: header (magic, key, length, digest), then payload."""
    return _MAGIC + key + len(payload).to_bytes(8, "little") + blake2b(payload, digest_size=_DIGEST).digest() + payload


def _loads(data: bytes) -> Any:
    return _ProjectOnly(io.BytesIO(data)).load()


def _dumps(obj: Any) -> bytes:
    import pickle  # only a run that writes an entry

    return pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)


def _canonical_dumps(obj: Any) -> bytes:
    """``obj`` pickled canonically: an entry is the same bytes whichever
    process writes it (hash seeds, object addresses, the files it linted
    before), so processes sharing a cache (CI shards, the editor, a hook)
    write the same entries (``summaries.canonical_dumps``)."""
    from autograd_lint.analysis.summaries import canonical_dumps

    return canonical_dumps(obj)


class _Stored(Record):
    """A cache entry's summary and calls, read from the entry each time a
    finding in another file needs them (most runs: never): a project's
    outlines are not all kept in memory. Plain data, so a worker can hand
    it back instead of the outline."""

    def __init__(self, cache: Cache, key: bytes) -> None:
        self._store(locals())

    def __call__(self):
        parts = self._parts(_SUMMARY, _CALLS)
        return parts if parts is not None else (None, ())

    def calls(self):
        """The calls alone: what a project reads from every file that calls
        a function by its name (a summary is three quarters of an outline's
        bytes, and most of its reading time)."""
        parts = self._parts(_CALLS)
        return parts[0] if parts is not None else ()

    def _parts(self, *at: int) -> tuple | None:
        """The entry's parts at ``at``, each read; None when the entry is
        gone or damaged since it was written (nothing known)."""
        payload = self.cache._read(self.key)
        if payload is None:
            return None
        try:
            entry = _loads(payload)
            return tuple(_loads(entry[i]) for i in at)
        except Exception:
            return None


class Cache:
    """One cache folder. Picklable: a process pool's workers write their
    own entries."""

    def __init__(self, directory: str, writable: bool = True) -> None:
        self.directory = directory
        self.writable = writable
        self.hits = 0  # entries this process read (the parent's look-ups: `-v`)

    @classmethod
    def open(cls, directory: str) -> "tuple[Cache, str | None]":
        """The cache in ``directory``, created with its tag files when
        missing, and a warning when it cannot be written (then entries
        already there are still read, and none is written)."""
        try:
            os.makedirs(os.path.join(directory, FORMAT.decode()), exist_ok=True)
            for name, text in (("CACHEDIR.TAG", CACHEDIR_TAG), (".gitignore", "# Created by autograd-lint.\n*\n")):
                p = os.path.join(directory, name)
                if not os.path.exists(p):
                    write_atomic(p, text.encode())
            if not os.access(os.path.join(directory, FORMAT.decode()), os.W_OK):
                raise PermissionError(13, "Permission denied")
        except OSError as e:
            return cls(directory, writable=False), f"cannot write the cache in {directory} ({e.strerror or e}); running without writing it"
        return cls(directory), None

    def __getstate__(self):
        return (self.directory, self.writable)

    # Entries are pickled canonically (the same bytes from every process).
    _dumps = staticmethod(_canonical_dumps)

    def __setstate__(self, state) -> None:
        self.directory, self.writable = state
        self.hits = 0

    # -- keys ----------------------------------------------------------------------

    def key(self, path: str, source: bytes, settings: Settings) -> bytes:
        h = _hash(tool_fingerprint(self.directory))
        h.update(b"lint\0" + path.encode("utf-8", "surrogateescape") + b"\0")
        h.update(_hash(source).digest())
        h.update(_settings_bytes(path, settings))
        return h.digest()

    def summary_key(self, path: str, source: bytes, settings: Settings) -> bytes:
        h = _hash(tool_fingerprint(self.directory))
        h.update(b"summary\0" + path.encode("utf-8", "surrogateescape") + b"\0")
        h.update(_hash(source).digest())
        h.update(repr(sorted(settings.rule_options.items())).encode())
        return h.digest()

    def _path(self, key: bytes) -> str:
        hexkey = key.hex()
        return os.path.join(self.directory, FORMAT.decode(), hexkey[:2], hexkey)

    # -- reading and writing ---------------------------------------------------------

    def _read(self, key: bytes) -> bytes | None:
        try:
            with open(self._path(key), "rb") as f:
                data = f.read()
        except OSError:
            return None
        if len(data) < _HEADER or not data.startswith(_MAGIC):
            return None
        at = len(_MAGIC)
        if data[at : at + 32] != key:
            return None
        at += 32
        length = int.from_bytes(data[at : at + 8], "little")
        at += 8
        digest, payload = data[at : at + _DIGEST], data[at + _DIGEST :]
        if len(payload) != length or blake2b(payload, digest_size=_DIGEST).digest() != digest:
            return None
        return payload

    def _write(self, key: bytes, payload: bytes) -> bool:
        if not self.writable:
            return False
        data = _entry(key, payload)
        path = self._path(key)
        try:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            write_atomic(path, data)
        except OSError:
            return False  # a full disk or a folder gone meanwhile: the run goes on uncached
        return True

    def load(self, key: bytes, path: str) -> FileAnalysis | None:
        """The analysis stored under ``key`` (for the file named ``path``);
        None when there is none or it cannot be read."""
        payload = self._read(key)
        if payload is not None:
            try:
                findings, pending, index, _, _ = _loads(payload)
                analysis = FileAnalysis(path, findings, _loads(pending) if pending else [], outline=_Stored(self, key), index=index)
            except Exception:  # a damaged or foreign entry is a miss
                analysis = None
            if analysis is not None:
                self.hits += 1
                return analysis
        return None

    def store(self, key: bytes, analysis: FileAnalysis) -> bool:
        """Write the entry; whether it was written."""
        summary, calls = analysis.outline
        dumps = self._dumps
        pending = dumps(analysis.pending) if analysis.pending else b""
        return self._write(key, dumps((analysis.findings, pending, analysis.index, dumps(summary), dumps(calls))))

    def stored(self, key: bytes, analysis: FileAnalysis) -> FileAnalysis:
        """``analysis`` with its outline left in the entry under ``key``
        once that is written (else as it is)."""
        return analysis.stored(_Stored(self, key)) if self.store(key, analysis) else analysis

    def load_summary(self, key: bytes) -> "tuple[bool, ModuleSummary | None]":
        """(found, summary) for a module only imported by the linted files."""
        payload = self._read(key)
        if payload is None:
            return False, None
        try:
            return True, _loads(payload)
        except Exception:
            return False, None

    def store_summary(self, key: bytes, summary: "ModuleSummary | None") -> None:
        self._write(key, self._dumps(summary))


class Scratch(Cache):
    """The store of a run that keeps no cache (``--no-cache``): the workers
    leave each file's outline there instead of sending it back, so the run
    keeps in memory only what a finding reads. Keyed by path and content
    (nothing outlives the run); the caller removes it (``close``)."""

    def __init__(self, directory: str | None = None, writable: bool = True) -> None:
        if directory is None:
            import tempfile

            directory = tempfile.mkdtemp(prefix="autograd-lint-run-")
        super().__init__(directory, writable)

    # Read back by the run that wrote them only: pickled as they are
    # (canonical bytes would cost a cold run for nothing).
    _dumps = staticmethod(_dumps)

    def key(self, path: str, source: bytes, settings: Settings) -> bytes:
        return _run_key(b"lint", path, source)

    def summary_key(self, path: str, source: bytes, settings: Settings) -> bytes:
        return _run_key(b"summary", path, source)

    def _path(self, key: bytes) -> str:
        return os.path.join(self.directory, key.hex())

    def _write(self, key: bytes, payload: bytes) -> bool:
        # One writer per key, and no reader before the writer is done: a
        # plain write (no temporary file and rename, no folder per prefix).
        data = _entry(key, payload)
        try:
            with open(self._path(key), "wb") as f:
                f.write(data)
        except OSError:
            return False
        return True

    def close(self) -> None:
        import shutil

        shutil.rmtree(self.directory, ignore_errors=True)


def _run_key(kind: bytes, path: str, source: bytes) -> bytes:
    """A key within one run: the settings and the tool cannot change in it."""
    return _hash(kind + b"\0" + path.encode("utf-8", "surrogateescape") + b"\0" + _hash(source).digest()).digest()


def _settings_bytes(path: str, settings: Settings) -> bytes:
    enabled = ",".join(sorted(enabled_for(path, settings)))
    return f"{enabled}\0{settings.torch_version}\0{sorted(settings.rule_options.items())!r}".encode()


def clean(directory: str) -> str | None:
    """Remove the cache folder; an error message when ``directory`` is not
    a cache autograd-lint made (it is then left alone)."""
    if not os.path.exists(directory):
        return None
    tag = os.path.join(directory, "CACHEDIR.TAG")
    try:
        with open(tag, encoding="utf-8") as f:
            ours = "autograd-lint" in f.read()
    except OSError:
        ours = False
    if not ours:
        return f"{directory} is not an autograd-lint cache (no CACHEDIR.TAG of ours); not removed"
    import shutil

    try:
        shutil.rmtree(directory)
    except OSError as e:
        return f"cannot remove {directory}: {e.strerror or e}"
    return None
