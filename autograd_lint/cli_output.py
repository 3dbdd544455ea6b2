"""Where and how ``check`` writes: the colour choice, ``--output-file``, the
progress line of long runs, and ``--show-settings``. Kept out of cli.py,
which parses and dispatches."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Mapping
from contextlib import contextmanager

TYPE_CHECKING = False  # typing costs 4 ms at start-up; type checkers take this name as true
if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import TextIO

    from autograd_lint.config import CliOverrides, ConfigResolver
    from autograd_lint.report.progress import Progress

COLOR_CHOICES = ("auto", "always", "never")
# Runs analysing fewer files than this finish before a progress line helps.
PROGRESS_MIN_FILES = 200
HUMAN_FORMATS = ("text", "concise")


def _set(env: Mapping[str, str], name: str) -> bool:
    return bool(env.get(name))


def use_color(choice: str | None, stream: TextIO, to_file: bool = False, env: Mapping[str, str] | None = None) -> bool:
    """``always`` / ``never`` as said; ``auto`` (the default): never into an
    ``--output-file``, else off under ``NO_COLOR``, on under
    ``FORCE_COLOR`` (NO_COLOR wins, as in CPython), else when ``stream`` is
    a terminal."""
    env = os.environ if env is None else env
    if choice == "always":
        return True
    if choice == "never" or to_file or _set(env, "NO_COLOR"):
        return False
    if _set(env, "FORCE_COLOR"):
        return True
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


class OutputFileError(Exception):
    """The ``--output-file`` cannot be written; the message is one line."""


def open_output_file(path: str) -> TextIO:
    """``path`` opened for the report (its folder made if missing, as ruff
    does). Raises OutputFileError."""
    try:
        folder = os.path.dirname(os.path.abspath(path))
        os.makedirs(folder, exist_ok=True)
        return open(path, "w", encoding="utf-8", newline="")
    except OSError as e:
        raise OutputFileError(f"{path}: cannot write the output file: {e.strerror or e}") from None


def progress_for(args: argparse.Namespace, stream: TextIO | None = None, env: Mapping[str, str] | None = None) -> "Progress | None":
    """A progress line on ``stream`` (stderr) for a human reading a terminal:
    text or concise output, not ``-q``, not in CI (``CI`` set), not a dumb
    terminal. None otherwise: a pipe, a log or a machine format never gets
    one. It stays silent below ``PROGRESS_MIN_FILES`` files to analyse."""
    stream = sys.stderr if stream is None else stream
    env = os.environ if env is None else env
    if args.format not in HUMAN_FORMATS or args.quiet or _set(env, "CI") or env.get("TERM") == "dumb":
        return None
    try:
        if not stream.isatty():
            return None
    except (AttributeError, ValueError):
        return None
    from autograd_lint.report.progress import Progress

    return Progress(stream, min_files=PROGRESS_MIN_FILES, verb="Fixing" if args.fix else "Linting")


@contextmanager
def progress_line(args: argparse.Namespace) -> "Iterator[Progress | None]":
    """``progress_for(args)`` for the ``with`` block, erased when it ends
    (however it ends: an error or Ctrl-C leaves no half line behind)."""
    progress = progress_for(args)
    try:
        yield progress
    finally:
        if progress is not None:
            progress.close()


def show_settings(target: str, args: argparse.Namespace, resolver: "ConfigResolver", overrides: "CliOverrides", out: TextIO) -> str | None:
    """Print the settings ``target`` is linted with (a folder: its first
    file, as ruff); returns an error message instead when it is missing."""
    from autograd_lint import catalog
    from autograd_lint.cache import default_dir
    from autograd_lint.discovery import discover_files
    from autograd_lint.runner import default_jobs
    from autograd_lint.show_settings import render_settings

    path = target
    if target == "-":
        path = args.stdin_filename or "."
    elif not os.path.exists(target):
        return f"{target}: no such file or directory"
    elif os.path.isdir(target):
        files = discover_files([target], resolver.discovery_for).files
        path = files[0] if files else target
    config, root = resolver.config_for(path)
    settings = resolver.settings_for(path)
    folder = path if os.path.isdir(path) else os.path.dirname(os.path.abspath(path))
    extra = [
        ("project_root", root),
        ("cache_dir", None if args.no_cache else os.path.abspath(args.cache_dir or default_dir(settings))),
        ("jobs", args.jobs or default_jobs()),
    ]
    names = {e.code: e.name for e in catalog.all_entries()}
    out.write(
        render_settings(
            path,
            config.path,
            [
                ("Configuration file", config),
                ("Command line", overrides),
                ("Linter settings (what each file gets)", settings),
                ("File discovery", resolver.discovery_for(folder)),
            ],
            extra,
            names,
        )
    )
    return None
