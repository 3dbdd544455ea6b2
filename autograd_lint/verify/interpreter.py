"""The interpreter that runs the user's program under ``verify``, and the
check, before running, that it can: it exists, is recent enough to run the
child, and finds torch.

Which interpreter: ``--python PATH`` when given; else, for a command typed
after ``--`` that starts with a ``python`` word (``python``, ``python3.11``,
``.venv/bin/python``), that word as the shell would find it (on ``PATH``);
else (the shorthand ``verify script.py``, ``-- pytest ...``, ``-- script.py``)
the interpreter running autograd-lint.

The child (``child.py``) is run by its file path, so the interpreter needs
torch but not autograd-lint.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

CHILD = os.path.join(os.path.dirname(os.path.abspath(__file__)), "child.py")
MIN_PYTHON = (3, 10)
# Exit statuses of PROBE.
_NO_TORCH, _TOO_OLD = 10, 11
PROBE = (
    "import sys\n"
    f"if sys.version_info < {MIN_PYTHON!r}: sys.exit({_TOO_OLD})\n"
    "import importlib.util\n"
    f"sys.exit(0 if importlib.util.find_spec('torch') else {_NO_TORCH})\n"
)
# Generous: a cold interpreter on a network filesystem. find_spec does not
# import torch, so a healthy answer takes a fraction of a second.
PROBE_TIMEOUT_S = 60.0


class InterpreterError(Exception):
    """The program's interpreter cannot run it (one line, for the user)."""


def is_python_word(word: str) -> bool:
    return os.path.basename(word).startswith("python")


def program_python(command: list[str], typed: bool, option: str | None) -> str:
    """The interpreter that runs ``command``: ``option`` (``--python``), the
    command's own ``python`` word when the user ``typed`` the command, else
    the one running autograd-lint."""
    if option:
        found = shutil.which(option)
        if found is None:
            raise InterpreterError(f"--python {option}: no such executable")
        return found
    if typed and command and is_python_word(command[0]):
        found = shutil.which(command[0])
        if found is None:
            raise InterpreterError(f"`{command[0]}` is not on PATH; verify runs your command's own python: pass --python PATH")
        return found
    return sys.executable


def check_python(python: str, env: dict[str, str]) -> None:
    """Raise InterpreterError unless ``python`` starts, is at least
    MIN_PYTHON and finds torch (with the environment the child gets)."""
    try:
        proc = subprocess.run(
            [python, "-c", PROBE], env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE, text=True, timeout=PROBE_TIMEOUT_S,
        )
    except OSError as e:
        raise InterpreterError(f"cannot run {python}: {e.strerror or e}; pass --python PATH") from None
    except subprocess.TimeoutExpired:
        raise InterpreterError(f"{python} did not start within {PROBE_TIMEOUT_S:g} s; pass --python PATH") from None
    if proc.returncode == _NO_TORCH:
        raise InterpreterError(f"verify runs your program with {python}; install torch there or pass --python PATH")
    if proc.returncode == _TOO_OLD:
        wanted = ".".join(map(str, MIN_PYTHON))
        raise InterpreterError(f"verify needs Python {wanted} or newer to run your program; {python} is older: pass --python PATH")
    if proc.returncode != 0:
        last = (proc.stderr or "").strip().splitlines()[-1:] or [f"exit status {proc.returncode}"]
        raise InterpreterError(f"cannot run {python} ({last[0]}); pass --python PATH")
