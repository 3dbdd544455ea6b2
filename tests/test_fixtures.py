"""Fixture-driven precision/recall tests.

Every ``fixtures/<CODE>/*.py`` file is linted with every default rule. The
expected findings are written in the fixture itself, as a trailing comment on
the line where the finding starts::

    losses.append(loss)  # expect: AGL101
    total += loss  # expect: AGL101, AGL102

``pos_*`` files hold at least one expectation of their directory's code;
``neg_*`` files hold none and must lint clean for every code.

A ``pos_*`` or ``neg_*`` *folder* is a project fixture: two or more modules
that import each other, linted together as ``autograd-lint <folder>`` does,
with the expectations in whichever of its files they concern.

A ``pos_*.ipynb`` or ``neg_*.ipynb`` is a notebook fixture: its code cells
are one program, as ``autograd-lint nb.ipynb`` lints them, with the
expectations in the cells (rows count within the cell).
"""

from __future__ import annotations

import io
import re
import tokenize
from pathlib import Path

import dataclasses

import pytest
from _fixture_support import is_golden

from autograd_lint import catalog
from autograd_lint.config import Settings, load_settings
from autograd_lint.engine import lint_source
from autograd_lint.runner import lint_paths

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"


def is_project_fixture(path: Path) -> bool:
    return path.is_dir() and path.name.startswith(("pos_", "neg_")) and path.parent.parent == FIXTURES


PROJECT_FIXTURES = sorted(d for d in FIXTURES.glob("*/*") if is_project_fixture(d))
# (Also in a project folder that pins the torch a rule depends on: AGL402's.)
NOTEBOOK_FIXTURES = sorted(p for p in FIXTURES.glob("**/*.ipynb") if not any(is_project_fixture(d) for d in p.parents))
FIXTURE_FILES = sorted(p for p in FIXTURES.glob("**/*.py") if not any(is_project_fixture(d) for d in p.parents) and not is_golden(p))

_EXPECT = re.compile(r"#\s*expect:\s*(?P<codes>[A-Z]+[0-9]+(?:\s*,\s*[A-Z]+[0-9]+)*)")
_CODE = re.compile(r"[A-Z]+[0-9]+")


def default_settings() -> Settings:
    return Settings(enabled=catalog.resolve_selection(None))


def fixture_settings(path: Path) -> Settings:
    """What `autograd-lint <fixture>` would use (the fixture project's pins
    and config), with the fixture's own rule enabled even when it is
    off by default (AGL302)."""
    settings, _ = load_settings([str(path)], None)
    code = path.relative_to(FIXTURES).parts[0]
    return dataclasses.replace(settings, enabled=settings.enabled | {code})


def _expectations_from_comments(comments: list[tuple[int, str]]) -> set[tuple[int, str]]:
    expected: set[tuple[int, str]] = set()
    for row, text in comments:
        for m in _EXPECT.finditer(text):
            expected.update((row, code) for code in _CODE.findall(m.group("codes")))
    return expected


def parse_expectations(source: str) -> set[tuple[int, str]]:
    """``{(line, code)}`` from ``# expect:`` comments.

    Comments are read with ``tokenize`` so that ``# expect:`` inside a string
    literal does not count. A file that does not tokenize (the AGL001
    fixtures) falls back to a plain line scan.
    """
    comments: list[tuple[int, str]] = []
    try:
        for tok in tokenize.generate_tokens(io.StringIO(source).readline):
            if tok.type == tokenize.COMMENT:
                comments.append((tok.start[0], tok.string))
    except (tokenize.TokenError, IndentationError, SyntaxError):
        comments = [(i, line[line.index("#"):]) for i, line in enumerate(source.splitlines(), 1) if "#" in line]
    return _expectations_from_comments(comments)


def _fixture_id(path: Path) -> str:
    return path.relative_to(FIXTURES).as_posix()


def _describe(findings: set[tuple[int, str]], lines: list[str]) -> str:
    out = []
    for row, code in sorted(findings):
        text = lines[row - 1].strip() if 1 <= row <= len(lines) else "<no such line>"
        out.append(f"    line {row}: {code}  | {text}")
    return "\n".join(out)


def test_fixtures_exist() -> None:
    assert FIXTURE_FILES, f"no fixtures found under {FIXTURES}"


@pytest.mark.parametrize("path", FIXTURE_FILES, ids=_fixture_id)
def test_fixture(path: Path) -> None:
    source_bytes = path.read_bytes()
    source = source_bytes.decode("utf-8")
    expected = parse_expectations(source)
    if path.name.startswith("neg_"):
        assert not expected, f"{_fixture_id(path)}: a negative fixture must not contain `# expect:` comments"

    unknown = sorted({c for _, c in expected} - set(catalog.all_codes()))
    assert not unknown, f"{_fixture_id(path)}: `# expect:` names unknown codes {unknown}"

    findings = lint_source(str(path), source_bytes, fixture_settings(path))
    actual = {(f.start.row, f.code) for f in findings}

    missing = expected - actual
    unexpected = actual - expected
    if missing or unexpected:
        lines = source.splitlines()
        parts = [f"{_fixture_id(path)}: findings differ from the `# expect:` comments"]
        if missing:
            parts.append("  missing (expected, not reported):\n" + _describe(missing, lines))
        if unexpected:
            parts.append("  unexpected (reported, not expected):\n" + _describe(unexpected, lines))
            msgs = {(f.start.row, f.code): f.message for f in findings}
            parts.append(
                "  messages of the unexpected findings:\n"
                + "\n".join(f"    line {r}: {c}: {msgs[(r, c)]}" for r, c in sorted(unexpected))
            )
        pytest.fail("\n".join(parts), pytrace=False)


def _project_expectations(project: Path) -> set[tuple[str, int, str]]:
    out = set()
    for p in sorted(project.rglob("*.py")):
        rel = p.relative_to(project).as_posix()
        out |= {(rel, row, code) for row, code in parse_expectations(p.read_text(encoding="utf-8"))}
    return out


@pytest.mark.parametrize("project", PROJECT_FIXTURES, ids=_fixture_id)
def test_project_fixture(project: Path) -> None:
    """The folder linted as a whole: findings in one module that rest on
    what another one does (a meter's `update`, an imported model class)."""
    files = sorted(project.rglob("*.py"))
    assert len(files) >= 2, f"{_fixture_id(project)}: a project fixture has two or more modules"
    expected = _project_expectations(project)
    if project.name.startswith("neg_"):
        assert not expected, f"{_fixture_id(project)}: a negative fixture must not contain `# expect:` comments"
    else:
        assert any(code == project.parent.name for _, _, code in expected), f"{_fixture_id(project)}: no `# expect: {project.parent.name}`"
    results = lint_paths([str(f) for f in files], fixture_settings(files[0]), jobs=1, roots=[str(project)])
    assert not [r.error for r in results if r.error]
    actual = {(Path(f.path).relative_to(project).as_posix(), f.start.row, f.code) for r in results for f in r.findings}
    messages = {(Path(f.path).relative_to(project).as_posix(), f.start.row, f.code): f.message for r in results for f in r.findings}
    missing, unexpected = expected - actual, actual - expected
    if missing or unexpected:
        parts = [f"{_fixture_id(project)}: findings differ from the `# expect:` comments"]
        parts += [f"  missing: {rel}:{row} {code}" for rel, row, code in sorted(missing)]
        parts += [f"  unexpected: {rel}:{row} {code}: {messages[(rel, row, code)]}" for rel, row, code in sorted(unexpected)]
        pytest.fail("\n".join(parts), pytrace=False)


def _notebook_expectations(path: Path) -> set[tuple[int, int, str]]:
    """``{(cell, row, code)}``: cells numbered from 1 among all cells, as
    findings number them."""
    from autograd_lint.notebook import cell_sources

    cells = cell_sources(path.read_bytes())
    return {(i, row, code) for i, (kind, text) in enumerate(cells, 1) if kind == "code" for row, code in parse_expectations(text)}


@pytest.mark.parametrize("path", NOTEBOOK_FIXTURES, ids=_fixture_id)
def test_notebook_fixture(path: Path) -> None:
    """The notebook linted as `autograd-lint nb.ipynb` does: every cell's
    code is module-level code, evaluation and training cells alike."""
    expected = _notebook_expectations(path)
    if path.name.startswith("neg_"):
        assert not expected, f"{_fixture_id(path)}: a negative fixture must not contain `# expect:` comments"
    else:
        rule = path.relative_to(FIXTURES).parts[0]
        assert any(code == rule for _, _, code in expected), f"{_fixture_id(path)}: no `# expect: {rule}`"
    [result] = lint_paths([str(path)], fixture_settings(path), jobs=1)
    assert result.error is None, result.error
    actual = {(f.cell, f.start.row, f.code) for f in result.findings}
    messages = {(f.cell, f.start.row, f.code): f.message for f in result.findings}
    missing, unexpected = expected - actual, actual - expected
    if missing or unexpected:
        parts = [f"{_fixture_id(path)}: findings differ from the `# expect:` comments"]
        parts += [f"  missing: cell {cell}:{row} {code}" for cell, row, code in sorted(missing)]
        parts += [f"  unexpected: cell {cell}:{row} {code}: {messages[(cell, row, code)]}" for cell, row, code in sorted(unexpected)]
        pytest.fail("\n".join(parts), pytrace=False)


def _module_level_rows(source: str) -> set[int]:
    """The rows of code that runs when the module runs (not in a def or a class)."""
    import ast

    rows: set[int] = set()
    for stmt in ast.parse(source).body:
        if not isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            rows.update(range(stmt.lineno, (stmt.end_lineno or stmt.lineno) + 1))
    return rows


@pytest.mark.parametrize("family", ["AGL1", "AGL2", "AGL3", "AGL4"])
def test_every_family_has_script_and_notebook_fixtures(family: str) -> None:
    """Scripts and notebooks are all module-level code: each family shows a
    bug found there, in a `.py` script and in a notebook, and a notebook
    that lints clean."""
    scripts = [p for p in FIXTURE_FILES if p.parent.name.startswith(family) and p.name.startswith("pos_")]
    at_module_level = [p for p in scripts if {row for row, _ in parse_expectations(p.read_text())} & _module_level_rows(p.read_text())]
    assert at_module_level, f"{family}: no positive fixture with a finding in module-level code"
    notebooks = [p for p in NOTEBOOK_FIXTURES if p.relative_to(FIXTURES).parts[0].startswith(family)]
    assert any(p.name.startswith("pos_") for p in notebooks) and any(p.name.startswith("neg_") for p in notebooks), family


@pytest.mark.parametrize("entry", catalog.all_entries(), ids=lambda e: e.code)
def test_every_code_has_fixtures(entry) -> None:
    code = entry.code
    d = FIXTURES / code
    assert d.is_dir(), f"{code} has no fixtures directory {d}"
    positives = sorted(p for p in d.rglob("pos_*.py") if not is_golden(p)) + [p for p in PROJECT_FIXTURES if p.parent == d and p.name.startswith("pos_")]
    negatives = sorted(d.rglob("neg_*.py")) + [p for p in PROJECT_FIXTURES if p.parent == d and p.name.startswith("neg_")]
    assert positives, f"{code}: no positive fixture (pos_*.py) in {d}"
    if code != "AGL001":
        assert negatives, f"{code}: no negative fixture (neg_*.py) in {d}"
    for p in positives:
        if p.is_dir():
            codes = {c for _, _, c in _project_expectations(p)}
        else:
            codes = {c for _, c in parse_expectations(p.read_text(encoding="utf-8"))}
        assert code in codes, f"{_fixture_id(p)}: a positive fixture of {code} has no `# expect: {code}`"


def test_every_family_has_project_fixtures() -> None:
    """Each rule family has a positive and a negative project fixture."""
    for family in ("AGL1", "AGL2", "AGL3", "AGL4"):
        names = [p.name for p in PROJECT_FIXTURES if p.parent.name.startswith(family)]
        assert any(n.startswith("pos_") for n in names) and any(n.startswith("neg_") for n in names), family


def test_fixture_names() -> None:
    odd = [_fixture_id(p) for p in FIXTURE_FILES if not p.name.startswith(("pos_", "neg_"))]
    assert not odd, f"fixtures must be named pos_<shape>.py or neg_<shape>.py: {odd}"
    codes = set(catalog.all_codes())
    stray = [_fixture_id(p) for p in FIXTURE_FILES if p.relative_to(FIXTURES).parts[0] not in codes]
    assert not stray, f"fixtures outside a known code's directory: {stray}"


def test_expectation_parser_ignores_strings() -> None:
    src = 'x = "# expect: AGL101"\ny = 1  # expect: AGL101, AGL102\n'
    assert parse_expectations(src) == {(2, "AGL101"), (2, "AGL102")}


# --- AGL001 -----------------------------------------------------------------


def test_undecodable_file_is_agl001_and_linting_continues(tmp_path: Path) -> None:
    bad = tmp_path / "bad_encoding.py"
    bad.write_bytes(b"x = 1\n\xff\xfe\n")
    broken = tmp_path / "broken.py"
    broken.write_bytes(b"import torch\n\nloss = torch.tensor(1.0\n")
    good = tmp_path / "good.py"
    good.write_bytes(b"import torch\n\n\ndef f(x):\n    return torch.relu(x)\n")

    settings = default_settings()
    results = {p.name: lint_source(str(p), p.read_bytes(), settings) for p in (bad, broken, good)}

    bad_findings = results["bad_encoding.py"]
    assert [f.code for f in bad_findings] == ["AGL001"], bad_findings
    assert bad_findings[0].start.row == 1
    assert bad_findings[0].path == str(bad)

    broken_findings = results["broken.py"]
    assert [f.code for f in broken_findings] == ["AGL001"], broken_findings
    assert broken_findings[0].start.row == 3

    assert results["good.py"] == []


def test_agl001_can_be_disabled(tmp_path: Path) -> None:
    bad = tmp_path / "bad_encoding.py"
    bad.write_bytes(b"x = 1\n\xff\xfe\n")
    settings = Settings(enabled=catalog.resolve_selection(None, ignore=["AGL001"]))
    assert lint_source(str(bad), bad.read_bytes(), settings) == []


def test_nothing_else_is_checked_in_a_file_with_a_syntax_error() -> None:
    # A file with a real retention bug and a syntax error reports only AGL001.
    src = (
        b"import torch\n"
        b"from torch import nn\n"
        b"\n"
        b"def train(model, loader, optimizer):\n"
        b"    criterion = nn.CrossEntropyLoss()\n"
        b"    losses = []\n"
        b"    for x, y in loader:\n"
        b"        loss = criterion(model(x), y)\n"
        b"        loss.backward()\n"
        b"        losses.append(loss)\n"
        b"    return losses\n"
        b"\n"
        b"def broken(:\n"
        b"    pass\n"
    )
    findings = lint_source("broken_train.py", src, default_settings())
    assert [(f.code, f.start.row) for f in findings] == [("AGL001", 13)]
