"""The language server's pure parts: option parsing, position conversion,
noqa edits (no server process)."""

from __future__ import annotations

import pytest
from lsprotocol import types

from autograd_lint.finding import Finding, Location
from autograd_lint.lsp.actions import noqa_edit
from autograd_lint.lsp.convert import code_units, position
from autograd_lint.lsp.options import Options, parse_options


def test_options_bare_or_under_the_section_name() -> None:
    bare = parse_options({"ignore": ["AGL101"], "debounceMs": 300, "unsafeFixes": True})
    nested = parse_options({"autograd-lint": {"ignore": ["AGL101"], "debounceMs": 300, "unsafeFixes": True}})
    assert bare == nested == Options(ignore=("AGL101",), debounce_s=0.3, unsafe_fixes=True)


def test_bad_options_are_reported_and_keep_their_value() -> None:
    base = Options(debounce_s=0.5)
    opts = parse_options({"debounceMs": "fast", "select": ["AGL9"], "unsafeFixes": 1, "colour": "red"}, base)
    assert opts.debounce_s == 0.5 and opts.select is None and opts.unsafe_fixes is False
    assert opts.problems == (
        "debounceMs: expected a number >= 0",
        "select: unknown rule code or prefix 'AGL9'",
        "unsafeFixes: expected true or false",
        "unknown option 'colour'",
    )


def test_other_tools_settings_are_not_ours() -> None:
    # Some clients send all their settings; none of these keys is ours.
    assert parse_options({"python": {"analysis": {}}, "editor": {}}) == Options()
    assert parse_options(None, Options(ignore=("AGL1",))) == Options(ignore=("AGL1",))


@pytest.mark.parametrize(
    ("encoding", "expected"),
    [(types.PositionEncodingKind.Utf16, 4), (types.PositionEncodingKind.Utf8, 7), (types.PositionEncodingKind.Utf32, 3)],
)
def test_code_units(encoding: str, expected: int) -> None:
    assert code_units("é😀x", encoding) == expected


def test_positions_past_the_end() -> None:
    lines = ["a = 1\n", "b = 2"]
    utf16 = types.PositionEncodingKind.Utf16
    assert position(lines, Location(3, 1), utf16) == types.Position(1, 5)  # end of a last line without newline
    assert position(["a\n"], Location(2, 1), utf16) == types.Position(1, 0)
    assert position(lines, Location(1, 99), utf16) == types.Position(0, 5)  # clamped to the line


def _finding(row: int, code: str = "AGL101") -> Finding:
    return Finding(code, "m", "f.py", Location(row, 1), Location(row, 2), noqa_row=row)


def test_noqa_edit_adds_or_extends_the_comment() -> None:
    text = "import torch\nx = torch.ones(1)  # noqa: AGL102\ny = x\n"
    edit = noqa_edit(text, _finding(2))
    assert edit.content == "x = torch.ones(1)  # noqa: AGL102, AGL101"
    edit = noqa_edit(text, _finding(3))
    assert edit.content == "y = x  # noqa: AGL101"


def test_no_noqa_where_a_comment_cannot_go() -> None:
    # The line ends inside a string, or after a backslash: a comment there
    # would change the code or break it.
    in_string = 'import torch\ns = """a\nb""" + str(torch.ones(1))\n'
    assert noqa_edit(in_string, _finding(2)) is None
    continued = "import torch\nx = torch.ones(1) + \\\n    torch.ones(1)\n"
    assert noqa_edit(continued, _finding(2)) is None
    assert noqa_edit("import torch\n", _finding(1, "AGL001")) is None
