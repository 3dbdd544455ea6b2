"""Walking LibCST trees cheaply.

``CSTNode.children`` runs a visitor over the node to collect them; reading
the dataclass fields directly gives the same nodes about four times faster,
which matters for whole-module walks (parent maps, overlap checks).
"""

from __future__ import annotations

import dataclasses
import typing
from typing import Iterator

import libcst as cst

_FIELDS: dict[type, tuple[str, ...]] = {}


def child_nodes(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """The node's children, in field order (the same set as ``node.children``)."""
    names = _FIELDS.get(type(node))
    if names is None:
        names = _FIELDS[type(node)] = tuple(f.name for f in dataclasses.fields(node))
    for name in names:
        value = getattr(node, name)
        if isinstance(value, cst.CSTNode):
            yield value
        elif isinstance(value, (list, tuple)):
            for item in value:
                if isinstance(item, cst.CSTNode):
                    yield item


# Whitespace, comments and punctuation: never what a finding or a fix points
# at, and most of the nodes of a module.
_TOKENS: tuple[type, ...] = (
    cst.BaseParenthesizableWhitespace, cst.TrailingWhitespace, cst.EmptyLine, cst.Newline, cst.Comment,
    cst.Comma, cst.Dot, cst.Colon, cst.Semicolon, cst.AssignEqual, cst.LeftParen, cst.RightParen,
    cst.LeftSquareBracket, cst.RightSquareBracket, cst.LeftCurlyBrace, cst.RightCurlyBrace,
    cst.BaseBinaryOp, cst.BaseBooleanOp, cst.BaseCompOp, cst.BaseUnaryOp, cst.BaseAugOp,
)
_STRUCTURAL: dict[type, tuple[str, ...]] = {}


def _only_tokens(annotation: object) -> bool:
    """Whether a field so annotated can hold nothing but tokens (or no node:
    a string, a sentinel). Unsure (a forward reference): no."""
    if isinstance(annotation, type):
        return not issubclass(annotation, cst.CSTNode) or issubclass(annotation, _TOKENS)
    args = typing.get_args(annotation)
    if typing.get_origin(annotation) is typing.Literal:
        return True
    return bool(args) and all(_only_tokens(a) for a in args)


def structural_children(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """``child_nodes`` less the tokens, chosen once per node type from the
    field annotations (no per-child type test)."""
    names = _STRUCTURAL.get(type(node))
    if names is None:
        names = _STRUCTURAL[type(node)] = tuple(f.name for f in dataclasses.fields(node) if not _only_tokens(f.type))
    for name in names:
        value = getattr(node, name)
        if isinstance(value, cst.CSTNode):
            yield value
        elif isinstance(value, (list, tuple)):
            yield from value
