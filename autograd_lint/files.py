"""Reading and decoding source files, and finding the data shipped with the
package (discovery of files to lint lives in discovery.py)."""

from __future__ import annotations

import codecs
import io
import os

TYPE_CHECKING = False  # typing costs 4 ms at start-up; type checkers take this name as true
if TYPE_CHECKING:
    from pathlib import Path


class DecodeError(ValueError):
    pass


def decode_source(source: bytes) -> str:
    """Decode Python source the way the interpreter does: BOM, then the PEP 263
    coding cookie, else UTF-8. Raises DecodeError with a one-line reason."""
    import tokenize  # a run whose files all come from the cache reads none

    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(source).readline)
    except SyntaxError as e:  # bad or unknown coding cookie
        # A cookie naming a codec only some environments register
        # (`# -*- coding: future_fstrings -*-`, a source transform over
        # UTF-8): the text is read as UTF-8 when it is that.
        if "unknown encoding" not in str(e):
            raise DecodeError(str(e)) from None
        try:
            encoding = "utf-8-sig" if source.startswith(codecs.BOM_UTF8) else "utf-8"
            source.decode(encoding)
        except UnicodeDecodeError:
            raise DecodeError(str(e)) from None
    try:
        text = source.decode(encoding)
    except (UnicodeDecodeError, LookupError) as e:
        raise DecodeError(f"cannot decode as {encoding}: {e.reason if hasattr(e, 'reason') else e}") from None
    if text.startswith("\ufeff"):
        text = text[1:]
    return text



def split_lines(text: str, keepends: bool = False) -> list[str]:
    """Source lines as Python (and LibCST, and the Language Server Protocol)
    count them: broken only at \\n, \\r\\n and \\r. ``str.splitlines`` also
    breaks at form feeds and Unicode separators, which would shift every
    later row."""
    lines = io.StringIO(text, newline="").readlines()
    return lines if keepends else [line.rstrip("\r\n") for line in lines]


def catalog_folder() -> str | None:
    """The rule catalogue shipped with the package (rule pages, the
    saved-tensor ledger): ``autograd_lint/_catalog`` in a wheel, the
    top-level ``rules/`` in a checkout."""
    here = os.path.dirname(os.path.realpath(__file__))
    for d in (os.path.join(here, "_catalog"), os.path.join(os.path.dirname(here), "rules")):
        if os.path.isdir(d):
            return d
    return None


def catalog_dir() -> Path | None:
    """``catalog_folder()`` as a ``Path``."""
    from pathlib import Path  # a run that reads no page does without pathlib

    d = catalog_folder()
    return None if d is None else Path(d)


# The saved-tensor ledger's file in the catalogue (analysis/ledger.py reads
# it; the cache hashes it without importing the analysis).
LEDGER_FILE = "saved_tensors.json"


def ledger_file() -> str | None:
    d = catalog_folder()
    if d is None:
        return None
    p = os.path.join(d, LEDGER_FILE)
    return p if os.path.isfile(p) else None


def ledger_path() -> Path | None:
    """``ledger_file()`` as a ``Path``."""
    from pathlib import Path

    p = ledger_file()
    return None if p is None else Path(p)


# Jupyter notebooks: linted cell by cell (notebook.py).
NOTEBOOK_SUFFIX = ".ipynb"


def write_atomic(path: str, data: bytes, mode: int | None = None, durable: bool = False) -> None:
    """Replace ``path``'s contents so that no reader, and no interrupted
    run, ever sees part of them: a temporary file in the same folder,
    renamed over it. ``mode``: its permission bits; ``durable``: on disk
    before the rename (a user's file; a cache entry need not be)."""
    import tempfile  # only a run that writes pays for importing it

    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(os.path.abspath(path)), prefix=".agl-", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            if durable:
                fh.flush()
                os.fsync(fh.fileno())
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
