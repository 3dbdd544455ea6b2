"""Which single-file fixtures of the AGL1xx/3xx/4xx families run on their own."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

# The families whose single-file fixtures are not all scripts (the AGL2xx
# ones all are, and tests/test_runtime_fixtures.py runs every one).
SCRIPT_CODES = ("AGL101", "AGL102", "AGL103", "AGL301", "AGL303", "AGL401", "AGL402", "AGL403", "AGL503", "AGL504", "AGL506")


def runnable(path: Path) -> bool:
    """A fixture that runs on its own: a `main()` without parameters called
    under `if __name__ == "__main__":`, importing only torch and the
    standard library (no dataset downloads, no checkpoints)."""
    tree = ast.parse(path.read_text())
    mains = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "main" and not n.args.args]
    guarded = any(isinstance(n, ast.If) and "__main__" in ast.unparse(n.test) and "main()" in ast.unparse(n) for n in tree.body)
    roots = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    roots |= {n.module.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module and not n.level}
    return bool(mains) and guarded and roots <= {"torch", *sys.stdlib_module_names}


def runnable_fixtures(root: Path, prefix: str) -> list[Path]:
    return sorted(f for code in SCRIPT_CODES for f in (root / code).glob(f"{prefix}*.py") if runnable(f) and not is_golden(f))


def is_layout(path: Path) -> bool:
    """A cell of the layout matrix (``pos_layout_c_*``,
    tests/test_layout_matrix.py): written as a project would write it, not
    to a rule's runtime protocol (a ``gradients()``, a ``build()``); run by
    tests/test_runtime_fixtures.py and the verifier where runnable."""
    return path.name.startswith(("pos_layout_", "neg_layout_"))


def is_golden(path: Path) -> bool:
    """``pos_x.fixed.py``: what ``--fix --unsafe-fixes`` makes of ``pos_x.py``."""
    return path.name.endswith(".fixed.py")
