"""Lowering reads literal values without compiling them: the values are
LibCST's ``evaluated_value`` (what CPython gives) for every literal."""

from __future__ import annotations

from pathlib import Path

import libcst as cst
import pytest

from autograd_lint.analysis.lower import _number, _string

ROOT = Path(__file__).resolve().parent.parent
TRICKY = [
    "'a'", '"a"', "''", '""""""', "'''a\nb'''", '"""doc "quoted" """', "r'\\n'", "R'\\d+'", "rb'\\x'", "b'x'", "B'\\x00'",
    "u'x'", "'\\n'", "'\\''", "'''a\\\nb'''", "'é'", "'\\N{BULLET}'",
    "1", "0x_ff", "0o17", "0b1_0", "1_000", "0_0", "1.5", "1_000.5", "1e-5", ".5", "5.", "2j", "1_0j", "1.5e3J",
]


def _literals(module: cst.Module):
    out = []

    class Collect(cst.CSTVisitor):
        def visit_SimpleString(self, node: cst.SimpleString) -> None:
            out.append(node)

        def visit_Integer(self, node: cst.Integer) -> None:
            out.append(node)

        def visit_Float(self, node: cst.Float) -> None:
            out.append(node)

        def visit_Imaginary(self, node: cst.Imaginary) -> None:
            out.append(node)

    module.visit(Collect())
    return out


def _same(node) -> bool:
    try:
        expected = node.evaluated_value
    except Exception:
        expected = None
    got = _string(node) if type(node) is cst.SimpleString else _number(node)
    return type(got) is type(expected) and got == expected


@pytest.mark.parametrize("literal", TRICKY)
def test_a_literal_reads_as_cpython_reads_it(literal: str) -> None:
    (node,) = _literals(cst.parse_module(f"x = {literal}\n"))
    assert _same(node), literal


def test_a_carriage_return_in_a_string_is_read_as_the_tokenizer_reads_it() -> None:
    (node,) = _literals(cst.parse_module("x = '''a\r\nb'''\r\n"))
    assert _same(node)


def test_every_literal_of_the_fixtures_and_the_package_reads_as_cpython_reads_it() -> None:
    checked = 0
    for path in sorted([*(ROOT / "fixtures").rglob("*.py"), *(ROOT / "autograd_lint").rglob("*.py")]):
        try:
            module = cst.parse_module(path.read_bytes())
        except cst.ParserSyntaxError:
            continue
        for node in _literals(module):
            assert _same(node), (path, node.value)
            checked += 1
    assert checked > 5000
