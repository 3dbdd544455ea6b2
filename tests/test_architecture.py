"""The package's import graph points one way: no cycle, counting every
import of its own modules wherever it sits (module level, inside a
function, under ``TYPE_CHECKING``); and plain data never imports the layers
above it."""

from __future__ import annotations

import ast
import pickle
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "autograd_lint"


def _modules() -> dict[str, Path]:
    out = {}
    for p in PACKAGE.rglob("*.py"):
        rel = p.relative_to(ROOT).with_suffix("").as_posix().replace("/", ".")
        out[rel.removesuffix(".__init__")] = p
    return out


def import_graph() -> dict[str, set[str]]:
    """Module -> the package modules it imports, anywhere in its text."""
    mods = _modules()
    edges: dict[str, set[str]] = {m: set() for m in mods}
    for m, path in mods.items():
        is_pkg = path.name == "__init__.py"
        for node in ast.walk(ast.parse(path.read_bytes())):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = m.split(".") if is_pkg else m.split(".")[:-1]
                    parts = parts[: len(parts) - (node.level - 1)]
                    base = ".".join(parts + ([base] if base else []))
                names = [base] + [f"{base}.{a.name}" for a in node.names]
            for n in names:
                while n and n not in mods:
                    n = n.rpartition(".")[0]
                if n and n != m:
                    edges[m].add(n)
    return edges


def strongly_connected(edges: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's algorithm, iterative."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []
    counter = 0
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            v, it = work[-1]
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(edges[w]))))
                    break
                if w in on_stack:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    component = []
                    while True:
                        w = stack.pop()
                        on_stack.discard(w)
                        component.append(w)
                        if w == v:
                            break
                    out.append(sorted(component))
    return out


def test_no_import_cycle() -> None:
    edges = import_graph()
    # A package and the submodules its __init__ re-exports are one unit.
    cycles = [c for c in strongly_connected(edges) if len(c) > 1 and not all(x.startswith(min(c, key=len) + ".") or x == min(c, key=len) for x in c)]
    assert not cycles, f"import cycles: {cycles}"


def test_the_cycle_check_sees_imports_inside_functions(tmp_path: Path) -> None:
    edges = {"a": {"b"}, "b": {"a"}, "c": set()}
    assert ["a", "b"] in strongly_connected(edges)


def test_ground_layers_import_nothing_above() -> None:
    """Plain data at the bottom: findings, settings, file reading, the
    rules' options, the ledger reader."""
    edges = import_graph()
    ground = {"autograd_lint.finding", "autograd_lint.settings", "autograd_lint.analysis.ledger", *GROUND}
    for m in ground:
        assert edges[m] <= ground, f"{m} imports {edges[m] - ground}"


# The modules below the analysis that it may read (plain data and file reading).
GROUND = ("autograd_lint.files", "autograd_lint.slotted", "autograd_lint.rule_options", "autograd_lint.record")


def test_analysis_imports_no_rule_and_no_face() -> None:
    edges = import_graph()
    for m, deps in edges.items():
        if m.startswith("autograd_lint.analysis."):
            up = {d for d in deps if not d.startswith("autograd_lint.analysis") and d not in GROUND}
            assert not up, f"{m} imports {up}"


def test_file_analysis_is_plain_data() -> None:
    """What a worker process sends back holds no LibCST node: it pickles
    small, and a cache can keep it."""
    from autograd_lint.config import Settings
    from autograd_lint.engine import analyse_source
    from autograd_lint import catalog

    fixture = ROOT / "fixtures" / "AGL102" / "pos_meter_in_other_module" / "train.py"
    fa = analyse_source(str(fixture), fixture.read_bytes(), Settings(enabled=catalog.resolve_selection(None)))
    assert fa.pending and fa.summary is not None
    data = pickle.dumps(fa)
    assert b"libcst" not in data
    assert len(data) < 50_000
    assert pickle.loads(data).pending == fa.pending


def test_check_path_imports_neither_torch_nor_pygls() -> None:
    import subprocess

    code = (
        "import sys; from autograd_lint.cli import main; "
        f"rc = main(['-q', '--exit-zero', {str(ROOT / 'fixtures')!r}]); "
        "print(sorted(m for m in ('torch', 'pygls', 'lsprotocol') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True).stdout
    assert out.strip().splitlines()[-1] == "[]"


# The API model's layer: what a member of an object of each kind does is
# decided here, by name, and nowhere else.
_MODEL_LAYER = {"analysis/api", "analysis/callee.py", "analysis/members.py", "analysis/torch_api.py"}


def _outside_model_layer() -> list[Path]:
    return [
        p for p in sorted(PACKAGE.rglob("*.py"))
        if not any(p.relative_to(PACKAGE).as_posix().startswith(m) for m in _MODEL_LAYER)
    ]


def _member_name(node: ast.AST) -> bool:
    """``e.method`` (a call event's member) or a ``method`` variable."""
    return (isinstance(node, ast.Attribute) and node.attr == "method") or (isinstance(node, ast.Name) and node.id == "method")


def _names_of_members(node: ast.AST) -> bool:
    """A string, a display of strings, or a constant table (``api.BACKWARD_METHODS``)."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, str)
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return bool(node.elts) and all(isinstance(x, ast.Constant) and isinstance(x.value, str) for x in node.elts)
    name = node.attr if isinstance(node, ast.Attribute) else node.id if isinstance(node, ast.Name) else ""
    return name.lstrip("_").isupper()


def test_a_call_is_decided_by_its_resolved_callee_not_its_member_name() -> None:
    """Outside the API model's layer, no code compares a call's member
    name with names (``method == "step"``, ``e.method in BACKWARD_METHODS``):
    what a call does depends on what its receiver is, which the callee
    resolved once (``CallEvent.resolved``) knows; a fix rewriting a call
    asks the API model what its member does (``.double()`` casts to
    ``float64``)."""
    found = []
    for path in _outside_model_layer():
        for node in ast.walk(ast.parse(path.read_bytes())):
            if isinstance(node, ast.Compare):
                sides = [node.left, *node.comparators]
                if any(_member_name(s) for s in sides) and any(_names_of_members(s) for s in sides):
                    found.append(f"{path.relative_to(ROOT)}:{node.lineno}: {ast.unparse(node)}")
    assert not found, "\n".join(found)


def test_families_ask_the_resolved_callee() -> None:
    """A rule family reads a call event's ``method`` only to ask whether
    the call is of a member at all, or to name it in a message; what the
    member does it asks ``e.resolved``."""
    found = []
    for path in _outside_model_layer():
        text = path.read_text()
        if "CallEvent" not in text or path.name == "observer.py":
            continue
        tree = ast.parse(text)
        allowed: set[int] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Compare) and all(isinstance(op, (ast.Is, ast.IsNot)) for op in node.ops):
                if any(isinstance(s, ast.Constant) and s.value is None for s in [node.left, *node.comparators]):
                    allowed.update(id(s) for s in [node.left, *node.comparators])
            elif isinstance(node, ast.JoinedStr):
                allowed.update(id(x) for x in ast.walk(node))
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and node.attr == "method" and id(node) not in allowed:
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}: {ast.get_source_segment(text, node)}")
    assert not found, "\n".join(found)
