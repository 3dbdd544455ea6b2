"""Where nodes are, computed only for the top-level statements that need it.

LibCST's ``PositionProvider`` generates the code of the whole module to
place every node, the largest cost of linting a big file with one finding.
Here a node is placed by generating only the statement that holds it (as a
module of its own) and shifting by that statement's line, which CPython's
parser gives for every statement at once, ~20x cheaper. A statement inside
a class, function or other block (a method of a 2,000-line model class) is
generated with only the headers around it, so it keeps its indentation and
columns need no shift. Where CPython cannot parse the
file (syntax newer or older than this interpreter's), the whole module is
placed the LibCST way.
"""

from __future__ import annotations

import ast
from typing import Callable, Mapping

import libcst as cst
from libcst.metadata import CodePosition, CodeRange, MetadataWrapper, PositionProvider



class Positions:
    def __init__(self, module: cst.Module, text: str, parents: Callable[[], Mapping[cst.CSTNode, cst.CSTNode]]) -> None:
        """``parents`` gives each node's parent (the analysis builds that map
        once; it is shared here, not walked again)."""
        self.module = module
        self._text = text
        self._parents = parents
        self._top: dict[int, int] | None = None  # id(top-level statement) -> its index
        self._lines: list[int] | None = None  # first syntactic line of each top-level statement
        self._ast: list[ast.stmt] = []  # the CPython statement of each top-level statement
        self._placed: dict[int, tuple[object, int]] = {}  # id(statement placed) -> (positions, line shift)
        self._whole: object | None = None

    def _index(self) -> None:
        try:
            body = ast.parse(self._text).body
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            body = None
        lines: list[int] = []
        k = 0
        for stmt in self.module.body:
            if body is None or k >= len(body):
                body = None
                break
            lines.append(body[k].lineno)
            self._ast.append(body[k])
            k += len(stmt.body) if isinstance(stmt, cst.SimpleStatementLine) else 1
        if body is None or k != len(body):
            self._whole = _resolve(self.module)
            return
        self._lines = lines
        self._top = {id(stmt): i for i, stmt in enumerate(self.module.body)}

    def top_of(self, node: cst.CSTNode) -> int | None:
        """The index in ``module.body`` of the statement holding ``node``."""
        if self._top is None and self._whole is None:
            self._index()
        tops = self._top if self._top is not None else {id(stmt): i for i, stmt in enumerate(self.module.body)}
        parents = self._parents()
        n: cst.CSTNode | None = node
        while n is not None and id(n) not in tops:
            n = parents.get(n)
        return None if n is None else tops[id(n)]

    def __getitem__(self, node: cst.CSTNode) -> CodeRange:
        if self._top is None and self._whole is None:
            self._index()
        if self._whole is not None:
            return self._whole[node]  # type: ignore[index]
        i = self.top_of(node)
        if i is None:  # the module itself, or a header node
            if self._whole is None:
                self._whole = _resolve(self.module)
            return self._whole[node]  # type: ignore[index]
        assert self._lines is not None
        stmt, line, headers = self._innermost(node, self.module.body[i], self._lines[i], self._ast[i])
        placed = self._placed.get(id(stmt))
        if placed is None:
            inner: cst.CSTNode = stmt
            for h in reversed(headers):  # the class and def lines around it, with their indentation
                inner = h.with_changes(body=h.body.with_changes(body=[inner]))
            alone = self.module.with_changes(body=[inner], header=[], footer=[])
            positions = _resolve(alone)
            placed = self._placed[id(stmt)] = (positions, line - positions[stmt].start.line)
        positions, shift = placed
        rng = positions[node]  # type: ignore[index]
        return CodeRange(CodePosition(rng.start.line + shift, rng.start.column), CodePosition(rng.end.line + shift, rng.end.column))

    def _innermost(self, node: cst.CSTNode, top: cst.CSTNode, line: int, top_ast: ast.stmt) -> tuple[cst.CSTNode, int, list]:
        """The deepest statement holding ``node`` that sits in the bodies of
        compound statements from ``top`` down, its first line, and the
        statements around it."""
        parents = self._parents()
        path: list[cst.CSTNode] = []  # statements from the node up to `top`
        n: cst.CSTNode | None = node
        while n is not None and n is not top:
            if isinstance(n, (cst.SimpleStatementLine, cst.BaseCompoundStatement)):
                path.append(n)
            n = parents.get(n)
        path.reverse()
        stmt, a, headers = top, top_ast, []
        for child in path:
            # Into the body (not an else or except clause) of a compound
            # statement, whose header stays to keep the indentation.
            if not isinstance(stmt, _DESCEND) or not isinstance(stmt.body, cst.IndentedBlock) or not isinstance(a, _DESCEND_AST):
                break
            body = stmt.body.body
            k = 0
            hit = None
            for s in body:
                if k >= len(a.body):  # type: ignore[attr-defined]
                    return top, line, []  # the two parsers disagree: place it whole
                if s is child:
                    hit = a.body[k]  # type: ignore[attr-defined]
                    break
                k += len(s.body) if isinstance(s, cst.SimpleStatementLine) else 1
            if hit is None:
                break
            headers.append(stmt)
            stmt, a, line = child, hit, hit.lineno
        return stmt, line, headers


_DESCEND = (cst.ClassDef, cst.FunctionDef, cst.If, cst.For, cst.While, cst.With, cst.Try)
_DESCEND_AST = (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef, ast.If, ast.For, ast.AsyncFor, ast.While, ast.With, ast.AsyncWith, ast.Try)


def _resolve(module: cst.Module) -> Mapping[cst.CSTNode, CodeRange]:
    # No copy: the positions must be keyed by the analysed nodes themselves.
    return MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
