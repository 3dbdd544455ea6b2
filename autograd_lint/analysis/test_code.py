"""What the analysis takes for test code: pytest's own conventions.

A test checks behaviour, so what costs time or memory in training code
(a model run with grad on, anomaly detection switched on) is not a finding
there. A file is a test file by pytest's default discovery names
(``test_*.py``, ``*_test.py``) or as its fixtures file (``conftest.py``);
a function is a test by pytest's default names (``test_*``, any method of
a ``Test*`` class).
"""

from __future__ import annotations

import re
from pathlib import PurePath

from autograd_lint.analysis import ir

_TEST_FUNCTION = re.compile(r"_*test_")


def is_test_function(fn: ir.Function) -> bool:
    """``fn`` is a test or a test helper (``test_*``, a method of a ``Test*`` class)."""
    return bool(_TEST_FUNCTION.match(fn.name)) or (fn.cls is not None and "Test" in fn.cls.name)


def is_test_helper(fn: ir.Function, module: ir.ModuleIR, path: str) -> bool:
    """``fn`` is test code: named as a test (``is_test_function``) in a
    module of a test suite: a test file (``is_test_file``), a module under
    a ``tests`` folder (helpers the tests import), or one that imports a
    test framework (a suite collected under other names). Elsewhere,
    pytest collects nothing: ``test_psnr(model, loader)`` of a training
    package is the evaluation it is named for."""
    if not is_test_function(fn):
        return False
    if is_test_file(path) or any(part in _TEST_FOLDERS for part in PurePath(path).parts[:-1]):
        return True
    return any(i.level == 0 and i.module.split(".", 1)[0] in _TEST_FRAMEWORKS for i in module.imports)


_TEST_FOLDERS = frozenset({"tests", "test", "testing"})
_TEST_FRAMEWORKS = frozenset({"pytest", "unittest"})


def is_test_file(path: str) -> bool:
    """``path`` names a file pytest collects tests or fixtures from."""
    name = PurePath(path).name
    return name == "conftest.py" or (name.endswith(".py") and (name.startswith("test_") or name[:-3].endswith("_test")))
