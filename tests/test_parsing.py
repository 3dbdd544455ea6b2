"""The parse without LibCST's node validation gives the very tree the
validated parse gives, and leaves validation on for every node built after
it (the fixes' nodes)."""

from __future__ import annotations

from pathlib import Path

import libcst as cst
import pytest

from autograd_lint.parsing import parse_module

ROOT = Path(__file__).resolve().parent.parent
SOURCES = sorted([*(ROOT / "fixtures").rglob("*.py"), *(ROOT / "autograd_lint").rglob("*.py")])


def test_the_unvalidated_parse_is_the_validated_one() -> None:
    checked = 0
    for path in SOURCES:
        text = path.read_text(encoding="utf-8")
        try:
            validated = cst.parse_module(text)
        except cst.ParserSyntaxError:
            with pytest.raises(cst.ParserSyntaxError):
                parse_module(text, str(path))
            continue
        fast = parse_module(text, str(path))
        assert fast.deep_equals(validated), path
        assert fast.code == text, path
        checked += 1
    assert checked > 400


def test_nodes_built_after_a_parse_are_validated() -> None:
    parse_module("x = 1\n")
    with pytest.raises(cst.CSTValidationError):
        cst.Name("not a name")
    with pytest.raises(cst.ParserSyntaxError):
        parse_module("x = (\n")
    with pytest.raises(cst.CSTValidationError):  # after a parse that failed too
        cst.Name("1x")
