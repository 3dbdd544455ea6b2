"""The layout matrix: every rule's positive and a look-alike negative in
each layout real projects use, so that a fact the analysis loses at a
boundary (a caller, a class's other methods, an imported class, a cell)
shows as a failing fixture rather than a quiet miss.

(a) one function; (b) the model class imported from another module of the
project (a project folder); (c) model, optimizer and scaler built in
`main()` and passed to a step function; (d) a trainer class whose methods
split forward, step and backward; (e) a module-level script; (f) notebook
cells. Fixtures are named `pos_layout_<x>_<shape>` / `neg_layout_<x>_<shape>`
(a file, a project folder or a notebook) under the rule's folder, at any
depth (AGL402's sit in projects that pin torch); tests/test_fixtures.py
lints each one and checks its `# expect:` comments.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from autograd_lint import catalog

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"
LAYOUTS = "abcdef"
_NAME = re.compile(r"^(pos|neg)_layout_([a-f])_")

# Cells the analysis cannot decide, as the rule's page says ("unknown"):
# no fixture asserts a behaviour there.
GAPS = {
    ("AGL305", "b", "pos"): "the dropout of a block whose class another module defines is not known here",
}
# Rules a layout does not apply to: AGL001 is a file that does not parse.
NOT_LAID_OUT = {"AGL001"}


def _cells(code: str) -> dict[tuple[str, str], list[Path]]:
    out: dict[tuple[str, str], list[Path]] = {}
    for p in sorted((FIXTURES / code).rglob("*")):
        m = _NAME.match(p.name)
        if m is None or p.name.endswith(".fixed.py"):
            continue
        if p.is_file() and any(_NAME.match(d.name) for d in p.parents if d != FIXTURES / code and FIXTURES / code in d.parents):
            continue  # a module of a project fixture, not a cell of its own
        out.setdefault((m.group(2), m.group(1)), []).append(p)
    return out


@pytest.mark.parametrize("code", [c for c in catalog.all_codes() if c not in NOT_LAID_OUT])
def test_every_rule_has_every_layout(code: str) -> None:
    cells = _cells(code)
    missing = [
        f"{kind} ({layout})" for layout in LAYOUTS for kind in ("pos", "neg") if (layout, kind) not in cells and (code, layout, kind) not in GAPS
    ]
    assert not missing, f"{code}: no layout fixture for {', '.join(missing)}"


@pytest.mark.parametrize("code, layout, kind", sorted(GAPS))
def test_gaps_are_gaps(code: str, layout: str, kind: str) -> None:
    """A cell listed as a gap has no fixture that would assert anything,
    and the rule's page says the case is unknown."""
    assert (layout, kind) not in _cells(code), f"{code} ({layout}) {kind}: a fixture exists; remove it from GAPS"
    assert "unknown" in (ROOT / "rules" / f"{code}.md").read_text(encoding="utf-8")


def test_layout_fixtures_are_checked() -> None:
    """Every layout cell is one tests/test_fixtures.py lints: a single file,
    a project folder, or a notebook it collects."""
    from test_fixtures import FIXTURE_FILES, NOTEBOOK_FIXTURES, PROJECT_FIXTURES

    collected = set(FIXTURE_FILES) | set(NOTEBOOK_FIXTURES) | set(PROJECT_FIXTURES)
    for code in catalog.all_codes():
        for paths in _cells(code).values():
            for p in paths:
                assert p in collected, f"{p.relative_to(FIXTURES)} is not linted by tests/test_fixtures.py"
