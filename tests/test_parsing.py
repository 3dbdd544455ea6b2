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


def test_every_node_class_gets_its_own_init_back() -> None:
    from libcst._nodes.base import CSTNode

    parse_module("def f(x):\n    return [y for y in x if y]\n")
    with pytest.raises(cst.ParserSyntaxError):
        parse_module("def f(:\n")
    stack, seen = [CSTNode], 0
    while stack:
        for sub in stack.pop().__subclasses__():
            stack.append(sub)
            init = sub.__dict__.get("__init__")
            if init is not None:
                assert "_FACTORY" not in init.__globals__, sub  # not slotted.fast_init's
                seen += 1
    assert seen > 200
    assert CSTNode.__post_init__.__name__ == "__post_init__"
