"""A progress line for long runs on a terminal: ``Linting 123/5839 files…``,
rewritten in place at most ``1 / interval`` times a second and erased at the
end, so what is printed after it starts on a clean line. Whether to show one
at all (a terminal, not CI, a human format) is the command line's call."""

from __future__ import annotations

import time
from typing import Callable, TextIO

ERASE_LINE = "\r\x1b[K"


def _ellipsis(stream: TextIO) -> str:
    # A terminal whose encoding lacks "…" (a C locale) gets three dots.
    try:
        "…".encode(getattr(stream, "encoding", None) or "ascii")
    except (UnicodeEncodeError, LookupError):
        return "..."
    return "…"


class Progress:
    """``progress(done, total)`` after each file; ``close()`` at the end.
    Silent when ``total`` is under ``min_files`` (a short run needs none)."""

    def __init__(
        self,
        stream: TextIO,
        min_files: int = 200,
        interval: float = 0.1,
        clock: Callable[[], float] = time.monotonic,
        verb: str = "Linting",
    ) -> None:
        self.stream = stream
        self.min_files = min_files
        self.interval = interval
        self.clock = clock
        self.verb = verb
        self.shown = False
        self._last: float | None = None
        self._dots = _ellipsis(stream)

    def __call__(self, done: int, total: int) -> None:
        if total < self.min_files:
            return
        now = self.clock()
        if self._last is not None and now - self._last < self.interval:
            return
        self._last = now
        self.stream.write(f"\r{self.verb} {done}/{total} files{self._dots}")
        self.stream.flush()
        self.shown = True

    def close(self) -> None:
        """Erase the line (only if one was drawn)."""
        if self.shown:
            self.stream.write(ERASE_LINE)
            self.stream.flush()
            self.shown = False
