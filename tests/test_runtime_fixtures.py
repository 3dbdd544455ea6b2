"""The AGL2xx fixtures are runnable scripts; run them and check that they
behave as their static expectations claim.

* ``fixtures/AGL201/pos_*.py`` and ``fixtures/AGL202/pos_*.py``: ``main()``
  raises the RuntimeError autograd raises for that hazard.
* ``fixtures/AGL203/pos_*.py``: ``gradients()`` returns the gradient the buggy
  code computes and a correct reference, and they differ (a ``.data`` write
  raises nothing; the gradients are silently wrong).
* ``neg_*.py``: ``main()`` runs clean, backward included; where an AGL203
  negative defines ``gradients()``, the two gradients agree.

* Project fixtures (folders ``fixtures/AGLnnn/pos_*/`` and ``neg_*/``) that
  have a ``main.py``: it is run with the folder on ``sys.path``, as a user
  would run the script; a positive shows its hazard, a negative runs clean.

The static side (which line is reported) is checked by ``test_fixtures.py``.
"""

from __future__ import annotations

import contextlib
import runpy
import sys
import warnings
from pathlib import Path

import pytest
from _fixture_support import is_golden, runnable_fixtures

torch = pytest.importorskip("torch")

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"
CODES = ("AGL201", "AGL202", "AGL203", "AGL204", "AGL205")
RUNTIME_FIXTURES = sorted(p for code in CODES for p in (FIXTURES / code).glob("*.py") if not is_golden(p))

# What autograd says, per code, when a positive fixture's main() runs.
ERROR_MESSAGES = {
    "AGL201": r"modified by an inplace operation",
    "AGL202": r"leaf Variable",
    "AGL204": r"is a view and is being modified inplace",
    "AGL205": r"modified by an inplace operation",
}
# The younger rules have fewer fixtures so far.
MIN_FIXTURES = {"AGL204": 3, "AGL205": 3}


@pytest.fixture(autouse=True)
def _single_threaded_torch():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


def _fixture_id(path: Path) -> str:
    return path.relative_to(FIXTURES).as_posix()


def _load(path: Path) -> dict:
    """The fixture's namespace, without running its ``__main__`` block."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return runpy.run_path(str(path), run_name="fixture")


def _call(fn):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn()


def test_runtime_fixtures_exist() -> None:
    for code in CODES:
        d = FIXTURES / code
        n = MIN_FIXTURES.get(code, 8)
        assert len([p for p in d.glob("pos_*.py") if not is_golden(p)]) >= n, f"{code}: fewer than {n} positive fixtures"
        assert len(list(d.glob("neg_*.py"))) >= n, f"{code}: fewer than {n} negative fixtures"


def _is_script(path: Path) -> bool:
    """A flat script (``pos_script_*.py``): module-level code, no ``main()``."""
    import ast

    return path.name.startswith(("pos_script_", "neg_script_")) and not any(
        isinstance(n, ast.FunctionDef) and n.name == "main" for n in ast.parse(path.read_text()).body
    )


@pytest.mark.parametrize("path", RUNTIME_FIXTURES, ids=_fixture_id)
def test_fixture_runtime_behaviour(path: Path) -> None:
    code = path.parent.name
    positive = path.name.startswith("pos_")
    if _is_script(path):
        # Run as `python script.py` would: the hazard is in module-level code.
        run = lambda: runpy.run_path(str(path), run_name="__main__")  # noqa: E731
        if positive:
            with pytest.raises(RuntimeError, match=ERROR_MESSAGES[code]), contextlib.redirect_stdout(None):
                _call(run)
        else:
            with contextlib.redirect_stdout(None):
                _call(run)
        return
    ns = _load(path)
    assert callable(ns.get("main")), f"{_fixture_id(path)}: no main()"

    if code == "AGL203":
        gradients = ns.get("gradients")
        if positive:
            assert callable(gradients), f"{_fixture_id(path)}: an AGL203 positive must define gradients()"
        if gradients is not None:
            buggy, reference = _call(gradients)
            assert isinstance(buggy, torch.Tensor) and isinstance(reference, torch.Tensor)
            assert buggy.shape == reference.shape
            if positive:
                assert not torch.allclose(buggy, reference), (
                    f"{_fixture_id(path)}: the `.data` write does not change the gradient"
                )
            else:
                assert torch.allclose(buggy, reference), f"{_fixture_id(path)}: gradients differ"
        _call(ns["main"])
        return

    if positive:
        with pytest.raises(RuntimeError, match=ERROR_MESSAGES[code]):
            _call(ns["main"])
    else:
        _call(ns["main"])


# --- negatives of the other families that run on their own --------------------


@pytest.mark.parametrize("path", runnable_fixtures(FIXTURES, "neg_"), ids=_fixture_id)
def test_runnable_negative_fixture_runs_clean(path: Path) -> None:
    # Their positives are run by the verifier (tests/test_verify.py), which
    # also confirms the hazard.
    _call(_load(path)["main"])


# --- project fixtures: run `main()` of each folder that has a main.py ---------

PROJECT_RUNS = sorted(
    d for d in FIXTURES.glob("*/*") if d.is_dir() and d.name.startswith(("pos_", "neg_")) and (d / "main.py").is_file()
)


@contextlib.contextmanager
def _project_on_path(project: Path):
    """Import the project's modules from its folder, and forget them after
    (the next project has modules of the same names)."""
    before = set(sys.modules)
    sys.path.insert(0, str(project))
    try:
        yield
    finally:
        sys.path.remove(str(project))
        for name in set(sys.modules) - before:
            f = getattr(sys.modules[name], "__file__", None) or ""
            if f.startswith(str(project)):
                del sys.modules[name]


def _holds_graph(value, depth: int = 0) -> bool:
    """Does the value (or a container or object it holds) keep a tensor
    attached to an autograd graph?"""
    if depth > 4:
        return False
    if isinstance(value, torch.Tensor):
        return value.grad_fn is not None
    if isinstance(value, dict):
        return any(_holds_graph(v, depth + 1) for v in value.values())
    if isinstance(value, (list, tuple, set)):
        return any(_holds_graph(v, depth + 1) for v in value)
    if hasattr(value, "__dict__") and not isinstance(value, type):
        return any(_holds_graph(v, depth + 1) for v in vars(value).values())
    return False


@contextlib.contextmanager
def _eval_forwards():
    """Every forward of a module in eval mode, and whether its output
    carried a graph."""
    seen: list[bool] = []

    def hook(module, args, output):
        if not module.training and isinstance(output, torch.Tensor):
            seen.append(output.requires_grad)

    handle = torch.nn.modules.module.register_module_forward_hook(hook)
    try:
        yield seen
    finally:
        handle.remove()


@pytest.mark.parametrize("project", PROJECT_RUNS, ids=_fixture_id)
def test_project_fixture_runs(project: Path) -> None:
    """A positive project shows its hazard when run (autograd's error, a
    graph kept after the loop, a graph built in eval mode); its negative
    twin runs clean."""
    family = project.parent.name[:4]
    positive = project.name.startswith("pos_")
    with _project_on_path(project), _eval_forwards() as eval_grads:
        ns = _load(project / "main.py")
        if family == "AGL2" and positive:
            with pytest.raises(RuntimeError, match=ERROR_MESSAGES[project.parent.name]):
                _call(ns["main"])
            return
        result = _call(ns["main"])
    if family == "AGL1":
        assert _holds_graph(result) is positive, f"{_fixture_id(project)}: what main() keeps {'has no' if positive else 'has a'} graph"
    elif family == "AGL3":
        assert any(eval_grads) is positive, f"{_fixture_id(project)}: eval-mode forwards built a graph: {any(eval_grads)}"


# --- notebook fixtures: run the code cells, in order, as Jupyter would --------

NOTEBOOKS = sorted(FIXTURES.glob("*/*.ipynb"))


def _run_notebook(path: Path, source: bytes | None = None) -> None:
    """Every code cell in one namespace, IPython-only lines (magics) masked
    as the linter masks them."""
    from autograd_lint.notebook import cell_sources, mask_ipython

    ns: dict = {"__name__": "__main__"}
    with warnings.catch_warnings(), contextlib.redirect_stdout(None):
        warnings.simplefilter("ignore")
        for kind, text in cell_sources(path.read_bytes() if source is None else source):
            if kind == "code":
                exec(compile(mask_ipython(text), str(path), "exec"), ns)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=_fixture_id)
def test_notebook_fixture_runs_as_its_expectations_claim(path: Path) -> None:
    """A negative notebook runs clean; a positive whose hazard raises
    (AGL2xx) raises it. (The others' hazards raise nothing: the verifier
    measures them.)"""
    code = path.parent.name
    if path.name.startswith("pos_") and code in ERROR_MESSAGES:
        with pytest.raises(RuntimeError, match=ERROR_MESSAGES[code]):
            _run_notebook(path)
    else:
        _run_notebook(path)


@pytest.mark.parametrize("path", [p for p in NOTEBOOKS if p.name.startswith("pos_")], ids=_fixture_id)
def test_fixed_notebook_fixture_is_clean_and_runs(path: Path) -> None:
    """`--fix --unsafe-fixes` on a positive notebook: what it fixes is gone,
    and the fixed notebook still runs (an AGL2xx one no longer raises)."""
    from autograd_lint import catalog
    from autograd_lint.config import Settings
    from autograd_lint.fix import fix_notebook

    settings = Settings(enabled=catalog.resolve_selection(None))
    result = fix_notebook(str(path), path.read_bytes(), settings, unsafe=True)
    if not any(f.fix is not None for f in result.before):
        pytest.skip("no fix is offered for what it reports (the rule's page says why)")
    # What had a fix is gone; what had none may stay.
    unfixable = {(f.cell, f.code, f.message) for f in result.before if f.fix is None}
    left = [(f.cell, f.start.row, f.code) for f in result.remaining if (f.cell, f.code, f.message) not in unfixable]
    assert result.fixed and not left, left
    _run_notebook(path, result.fixed_source)
