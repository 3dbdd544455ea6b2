"""What the analysis takes for test code: pytest's own conventions.

A test checks behaviour, so what costs time or memory in training code
(a model run with grad on, anomaly detection switched on) is not a finding
there. A file is a test file by pytest's default discovery names
(``test_*.py``, ``*_test.py``) that pytest collects something from (a
test, or an import of a test framework), or as its fixtures file
(``conftest.py``); a function is a test by pytest's default names
(``test_*``, any method of a ``Test*`` class). An evaluation script named
``model_test.py`` with neither is what it runs: evaluation.
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
    module of a test suite: a test module (``is_test_module``), a module under
    a ``tests`` folder (helpers the tests import), or one that imports a
    test framework (a suite collected under other names). Elsewhere,
    pytest collects nothing: ``test_psnr(model, loader)`` of a training
    package is the evaluation it is named for."""
    if not is_test_function(fn):
        return False
    return is_test_module(path, module) or any(part in _TEST_FOLDERS for part in PurePath(path).parts[:-1]) or _imports_test_framework(module)


def _imports_test_framework(module: ir.ModuleIR) -> bool:
    return any(i.level == 0 and i.module.split(".", 1)[0] in _TEST_FRAMEWORKS for i in module.imports)


_TEST_FOLDERS = frozenset({"tests", "test", "testing"})
_TEST_FRAMEWORKS = frozenset({"pytest", "unittest"})


def is_test_file(path: str) -> bool:
    """``path`` has a name pytest looks for tests or fixtures in (whether it
    finds any is ``is_test_module``'s question)."""
    name = PurePath(path).name
    return name == "conftest.py" or (name.endswith(".py") and (name.startswith("test_") or name[:-3].endswith("_test")))


def is_test_module(path: str, module: ir.ModuleIR) -> bool:
    """``path`` (whose IR is ``module``) is a module of a test suite pytest
    collects: its fixtures file, or a test file by name that defines a test
    (``_collected``) or imports a test framework."""
    if not is_test_file(path):
        return False
    if PurePath(path).name == "conftest.py":
        return True
    if _imports_test_framework(module):
        return True
    return any(_collected(f) for f in module.functions if not f.is_module and (f.parent is None or f.parent.is_module))


def _collected(fn: ir.Function) -> bool:
    """A test pytest runs: named as one, and checking something (an
    `assert`) or taking no arguments but fixtures pytest could give (none,
    or only ``self``). `test_save_result(net, data, args)` of an
    evaluation script, called by its own `main`, is not one."""
    if not is_test_function(fn):
        return False
    own = [p for p in fn.params if p.name != "self"]
    return fn.asserts or not own
