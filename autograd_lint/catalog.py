"""Every rule's code, name, summary and page; selector resolution.

The pages live in the top-level ``rules/`` folder of a source checkout and are
shipped inside the wheel as ``autograd_lint/_catalog`` (see pyproject.toml).
"""

from __future__ import annotations

from autograd_lint.files import catalog_dir
from autograd_lint.record import Record
from autograd_lint.rule_codes import DEFAULT_ENABLED

TYPE_CHECKING = False  # typing costs 4 ms at start-up; type checkers take this name as true
if TYPE_CHECKING:
    from collections.abc import Iterable
    from pathlib import Path

    from autograd_lint.rules.base import Rule

DOCS_URL = "https://github.com/autograd-lint/autograd-lint/blob/main/rules/{code}.md"


class ToolCode(Record):
    """A code the tool itself emits (not a rule that analyses code)."""

    def __init__(self, code: str, name: str, summary: str, default_enabled: bool = True, fix_title: None = None, fixable: bool = False) -> None:
        self._store(locals())


TOOL_CODES: tuple[ToolCode, ...] = (
    ToolCode("AGL001", "syntax-error", "A file that cannot be decoded or parsed; nothing else is checked in it."),
)


class UnknownSelector(ValueError):
    """A code or prefix in select/ignore that matches no rule."""

    def __init__(self, selector: str) -> None:
        super().__init__(selector)
        self.selector = selector


def rule_instances() -> list[Rule]:
    # The rules import the analysis, and LibCST: only what lints needs them.
    from autograd_lint.rules import RULE_CLASSES

    return [cls() for cls in RULE_CLASSES]


def all_entries() -> list[Rule | ToolCode]:
    """Every code, tool codes first, sorted by code."""
    entries: list[Rule | ToolCode] = [*TOOL_CODES, *rule_instances()]
    return sorted(entries, key=lambda e: e.code)


def all_codes() -> list[str]:
    return sorted(DEFAULT_ENABLED)


def _default_codes() -> set[str]:
    return {code for code, on in DEFAULT_ENABLED.items() if on}


def expand(selector: str) -> set[str]:
    """Codes a selector names. An exact code names that rule even when it is
    off by default; a prefix (``AGL1``, ``AGL``, ``ALL``) names the default-on
    rules under it."""
    selector = selector.strip().upper()
    codes = all_codes()
    if selector in codes:
        return {selector}
    if selector == "ALL":
        return _default_codes()
    matched = {c for c in codes if c.startswith(selector)}
    if not matched:
        raise UnknownSelector(selector)
    return matched & _default_codes()


def resolve_selection(
    select: Iterable[str] | None,
    extend_select: Iterable[str] = (),
    ignore: Iterable[str] = (),
) -> frozenset[str]:
    """The enabled codes: ``select`` (default: every default-on rule), plus
    ``extend_select``, minus ``ignore``. Raises UnknownSelector."""
    enabled: set[str] = set()
    if select is None:
        enabled = _default_codes()
    else:
        for s in select:
            enabled |= expand(s)
    for s in extend_select:
        enabled |= expand(s)
    for s in ignore:
        s_up = s.strip().upper()
        if s_up in all_codes():
            enabled.discard(s_up)
        else:
            # Ignoring a prefix drops every code under it, default-off ones too.
            expand(s_up)
            enabled -= {c for c in all_codes() if c.startswith(s_up) or s_up == "ALL"}
    return frozenset(enabled)


def page_path(code: str) -> Path | None:
    d = catalog_dir()
    if d is None:
        return None
    p = d / f"{code.upper()}.md"
    return p if p.is_file() else None


def read_page(code: str) -> str | None:
    p = page_path(code)
    return p.read_text(encoding="utf-8") if p else None


def url(code: str) -> str:
    return DOCS_URL.format(code=code)


# Category per hundred: AGL0xx (the file was not checked) and AGL2xx (backward
# fails or gradients are wrong) are errors, the rest (memory, speed) warnings.
# SARIF, GitHub annotations and the language server all use these levels.
_CATEGORY = {
    "0": ("error", ["tool"]),
    "1": ("warning", ["memory", "graph-retention"]),
    "2": ("error", ["correctness", "in-place"]),
    "3": ("warning", ["performance", "grad-mode"]),
    "4": ("warning", ["performance", "zero-grad"]),
}


def level(code: str) -> str:
    """``error`` for AGL0xx and AGL2xx, ``warning`` for the rest."""
    return _CATEGORY.get(code[3:4], ("warning", []))[0]


def category_tags(code: str) -> list[str]:
    return list(_CATEGORY.get(code[3:4], ("warning", []))[1])


def page_section(page: str | None, section: str) -> str | None:
    """The Markdown body of a page's ``## <section>`` (up to the next heading
    of the same or a higher level), stripped; None when there is none."""
    if not page:
        return None
    lines = page.splitlines()
    heading = f"## {section}".lower()
    for i, line in enumerate(lines):
        if line.strip().lower() == heading:
            body: list[str] = []
            in_code = False
            for text in lines[i + 1 :]:
                if text.startswith("```"):
                    in_code = not in_code
                if not in_code and (text.startswith("# ") or text.startswith("## ")):
                    break
                body.append(text)
            return "\n".join(body).strip() or None
    return None


def first_paragraph(page: str | None, section: str = "What it does") -> str | None:
    """The first paragraph of a page's ``## <section>``, joined into one line."""
    body = page_section(page, section)
    if body is None:
        return None
    para: list[str] = []
    for line in body.splitlines():
        if line.startswith("#"):
            break
        if not line.strip():
            if para:
                break
            continue
        para.append(line.strip())
    return " ".join(para) or None
