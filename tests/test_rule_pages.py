"""Every code in the catalog has a rule page in ruff's style, and the page's
examples are checked against the linter itself."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from autograd_lint import catalog
from autograd_lint.config import Settings
from autograd_lint.engine import lint_source
from autograd_lint.rule_options import OPTIONS, validate

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib

ROOT = Path(__file__).resolve().parent.parent
RULES_DIR = ROOT / "rules"

REQUIRED_SECTIONS = [
    "What it does",
    "Why is this bad?",
    "The evidence it needs",
    "Example",
    "Use instead",
    "Fix safety",
    "How the verifier confirms it",
    "References",
]
# Optional sections and the required section they must come right after.
OPTIONAL_SECTIONS = {"Options": "How the verifier confirms it"}

ENTRIES = catalog.all_entries()
# Every rule whose examples are Python (AGL001's are broken on purpose).
EXAMPLE_CODES = [e for e in ENTRIES if e.code != "AGL001"]

_FENCE = re.compile(r"^```python[^\n]*\n(?P<code>.*?)^```\s*$", re.MULTILINE | re.DOTALL)


def _page(code: str) -> str:
    path = RULES_DIR / f"{code}.md"
    assert path.is_file(), f"{code} has no rule page {path}"
    return path.read_text(encoding="utf-8")


def _sections(text: str) -> list[tuple[str, str]]:
    """``[(heading, body)]`` of the ``## `` sections, in order. Headings inside
    code fences do not count."""
    sections: list[tuple[str, list[str]]] = []
    in_fence = False
    for line in text.splitlines():
        if line.startswith("```"):
            in_fence = not in_fence
        if not in_fence and line.startswith("## "):
            sections.append((line[3:].strip(), []))
        elif sections:
            sections[-1][1].append(line)
    return [(h, "\n".join(body)) for h, body in sections]


def _code_block(code: str, heading: str) -> str:
    bodies = [b for h, b in _sections(_page(code)) if h == heading]
    assert len(bodies) == 1, f"{code}.md: expected one `## {heading}` section"
    blocks = _FENCE.findall(bodies[0])
    assert len(blocks) == 1, f"{code}.md: `## {heading}` must hold exactly one ```python block, found {len(blocks)}"
    return blocks[0]


def _codes_found(code: str, heading: str, source: str) -> list[tuple[int, str]]:
    # The page's own rule is on even when off by default (AGL302); AGL402's
    # example assumes a project that targets torch 1.13, as its page says.
    settings = Settings(enabled=catalog.resolve_selection(None) | {code}, torch_version=(1, 13) if code == "AGL402" else None)
    findings = lint_source(f"rules/{code}.md#{heading}", source.encode("utf-8"), settings)
    return [(f.start.row, f.code) for f in findings]


@pytest.mark.parametrize("entry", ENTRIES, ids=lambda e: e.code)
def test_page_title(entry) -> None:
    first = _page(entry.code).splitlines()[0]
    assert first == f"# {entry.code}: {entry.name}", f"{entry.code}.md: title line is {first!r}"


@pytest.mark.parametrize("entry", ENTRIES, ids=lambda e: e.code)
def test_page_sections_in_order(entry) -> None:
    headings = [h for h, _ in _sections(_page(entry.code))]
    required = [h for h in headings if h in REQUIRED_SECTIONS]
    assert required == REQUIRED_SECTIONS, f"{entry.code}.md: sections are {headings}, expected {REQUIRED_SECTIONS}"
    unknown = [h for h in headings if h not in REQUIRED_SECTIONS and h not in OPTIONAL_SECTIONS]
    assert not unknown, f"{entry.code}.md: unknown sections {unknown}"
    for opt, after in OPTIONAL_SECTIONS.items():
        if opt in headings:
            i = headings.index(opt)
            assert headings[i - 1] == after, f"{entry.code}.md: `## {opt}` must follow `## {after}`"
    for h, body in _sections(_page(entry.code)):
        assert body.strip(), f"{entry.code}.md: `## {h}` is empty"


def test_every_page_belongs_to_a_code() -> None:
    codes = set(catalog.all_codes())
    stray = [p.name for p in RULES_DIR.glob("AGL*.md") if p.stem not in codes]
    assert not stray, f"rule pages for unknown codes: {stray}"


@pytest.mark.parametrize("entry", EXAMPLE_CODES, ids=lambda e: e.code)
def test_example_is_flagged(entry) -> None:
    src = _code_block(entry.code, "Example")
    found = _codes_found(entry.code, "Example", src)
    assert any(c == entry.code for _, c in found), f"{entry.code}.md: the `## Example` block yields {found}, no {entry.code}"


@pytest.mark.parametrize("entry", EXAMPLE_CODES, ids=lambda e: e.code)
def test_use_instead_is_clean(entry) -> None:
    src = _code_block(entry.code, "Use instead")
    found = _codes_found(entry.code, "Use instead", src)
    assert not [f for f in found if f[1] == entry.code], f"{entry.code}.md: the `## Use instead` block yields {found}"


def test_syntax_error_page_examples() -> None:
    broken = _code_block("AGL001", "Example")
    assert [c for _, c in _codes_found("AGL001", "Example", broken)] == ["AGL001"]
    fixed = _code_block("AGL001", "Use instead")
    assert not [c for _, c in _codes_found("AGL001", "Use instead", fixed) if c == "AGL001"]


@pytest.mark.parametrize("name", sorted(OPTIONS))
def test_every_rule_option_is_documented_with_its_default(name: str) -> None:
    """What `rule-options` accepts (autograd_lint/rule_options.py) and what
    the rule's page says it accepts are the same: each option is listed
    under `## Options` with its real default, and the page's TOML example
    passes validation."""
    option = OPTIONS[name]
    options = [b for h, b in _sections(_page(option.rule)) if h == "Options"]
    assert options, f"{option.rule}.md has no `## Options` section for `{name}`"
    assert f"`{name}`" in options[0]
    assert all(f'"{p}"' in options[0] for p in option.default), f"{option.rule}.md: `{name}`'s default differs from rule_options.py"
    for block in re.findall(r"^```toml\n(.*?)^```", options[0], re.MULTILINE | re.DOTALL):
        validate(tomllib.loads(block)["tool"]["autograd-lint"]["rule-options"])
