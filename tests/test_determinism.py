"""Same findings, same words, every time: whatever the rule selection, the
order of the paths and the run.

The trigger words are a fast path only: a rule selected alone reports in a
file exactly what it reports there beside every other rule. A message
names what it cites (a saver, an origin) by source position, never by
which of equally good candidates a set happened to yield first: two runs
in two processes (other object addresses, other hash orders) agree.
"""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import pytest
from test_fixtures import FIXTURE_FILES, PROJECT_FIXTURES, _fixture_id, fixture_settings

from autograd_lint import catalog
from autograd_lint.engine import lint_source
from autograd_lint.runner import lint_paths
from autograd_lint.settings import Settings

ROOT = Path(__file__).resolve().parent.parent
CODES = [e.code for e in catalog.all_entries() if e.code != "AGL001"]
FAMILIES = sorted({c[:4] for c in CODES})


def _findings(path: Path, selection: list[str] | None) -> list[tuple]:
    settings = dataclasses.replace(fixture_settings(path), enabled=catalog.resolve_selection(selection))
    return sorted((f.code, f.start.row, f.start.column, f.message) for f in lint_source(str(path), path.read_bytes(), settings))


@pytest.mark.parametrize("path", FIXTURE_FILES, ids=_fixture_id)
def test_a_rule_alone_reports_what_it_reports_among_all(path: Path) -> None:
    everything = _findings(path, ["ALL"])
    for family in FAMILIES:
        alone = _findings(path, [family])
        assert alone == [f for f in everything if f[0].startswith(family)], f"{_fixture_id(path)}: --select {family} differs"
    for code in {f[0] for f in everything}:
        alone = _findings(path, [code])
        assert alone == [f for f in everything if f[0] == code], f"{_fixture_id(path)}: --select {code} differs"


@pytest.mark.parametrize("project", PROJECT_FIXTURES, ids=_fixture_id)
def test_the_order_of_the_paths_does_not_matter(project: Path) -> None:
    files = sorted(str(f) for f in project.rglob("*.py"))
    settings = Settings(enabled=catalog.resolve_selection(["ALL"]))

    def run(paths: list[str]) -> list[tuple]:
        results = lint_paths(paths, settings, jobs=1, roots=[str(project)])
        return sorted((f.path, f.code, f.start.row, f.message) for r in results for f in r.findings)

    assert run(files) == run(list(reversed(files)))


_RUN = """\
import json, sys
from pathlib import Path
from autograd_lint import catalog
from autograd_lint.engine import lint_source
from autograd_lint.settings import Settings
settings = Settings(enabled=catalog.resolve_selection(["ALL"]))
out = {}
for p in sys.argv[1:]:
    out[p] = sorted((f.code, f.start.row, f.start.column, f.message) for f in lint_source(p, Path(p).read_bytes(), settings))
print(json.dumps(out))
"""


def test_two_processes_report_the_same_words() -> None:
    """Every fixture, linted in two fresh interpreters (and once more in
    this one): the findings and their messages are equal."""
    paths = [str(p) for p in FIXTURE_FILES]

    def run() -> dict:
        proc = subprocess.run([sys.executable, "-c", _RUN, *paths], capture_output=True, text=True, cwd=ROOT, check=True)
        return json.loads(proc.stdout)

    first, second = run(), run()
    assert first == second
    settings = Settings(enabled=catalog.resolve_selection(["ALL"]))
    here = {p: [list(f) for f in sorted((f.code, f.start.row, f.start.column, f.message) for f in lint_source(p, Path(p).read_bytes(), settings))] for p in paths}
    assert here == first


def test_a_bounded_value_keeps_the_first_origins_in_the_file() -> None:
    """Too many graph origins are cut to the first few by source position
    (``NODE_ORDER``), never to those a set of identity-hashed nodes yields
    first: fresh nodes each round, the same ones kept."""
    from autograd_lint.analysis.canonical import NODE_ORDER
    from autograd_lint.analysis.joins import _bound
    from autograd_lint.analysis.values import BOUNDED, Graph

    for _ in range(5):
        nodes = [object() for _ in range(60)]
        where = {id(n): i for i, n in enumerate(nodes)}
        token = NODE_ORDER.set(lambda n: where[id(n)])
        try:
            kept = _bound(frozenset(Graph(n, 0, "call") for n in nodes))
        finally:
            NODE_ORDER.reset(token)
        assert sorted(where[id(g.node)] for g in kept if type(g) is Graph) == list(range(8))
        assert BOUNDED in kept  # (what it is joined with is cut alike)


def test_an_in_place_message_names_the_first_of_equal_savers() -> None:
    import libcst as cst

    from autograd_lint.analysis.inplace import InplaceFinding, InplaceKind
    from autograd_lint.analysis.values import GradMode, Saved
    from autograd_lint.rules.inplace_messages import saved_by

    module = cst.parse_module("x = 1\na = norm_head(x)\nb = norm_tail(x)\n")
    calls = [s.body[0].value for s in module.body[1:]]  # type: ignore[attr-defined]
    line = {id(c): i + 2 for i, c in enumerate(calls)}
    saves = [Saved(c, "native_layer_norm", 0) for c in calls]
    for order in (saves, saves[::-1]):
        f = InplaceFinding(InplaceKind.SAVED, None, "x", "+=", tuple(order), GradMode.ON)
        assert saved_by(module, f)(lambda n: line[id(n)]) == " by `norm_head(...)` at line 2"
