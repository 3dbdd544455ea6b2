"""The IR lowered from CPython's ``ast`` (lower_ast.py) is the IR lowered
from LibCST (lower.py): field by field, in the same order, for every
fixture and every module of the package. The analysis never looks inside
syntax nodes, so the same IR gives the same analysis."""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

import libcst as cst
import pytest

from autograd_lint.analysis import ir
from autograd_lint.analysis.lower import lower as lower_cst
from autograd_lint.analysis.lower_ast import lower as lower_ast

ROOT = Path(__file__).resolve().parent.parent
SOURCES = sorted([*(ROOT / "fixtures").rglob("*.py"), *(ROOT / "autograd_lint").rglob("*.py")])

# Fields that are the syntax node itself, or links back up the tree.
_SKIP = {"node", "parent", "cls", "outer", "_param_names", "decorator_nodes", "methods"}


def dump_ir(module: ir.ModuleIR) -> object:
    """The IR as plain data: syntax nodes left out, functions and classes
    named by their place in the module's lists."""
    fn_index = {id(f): f.index for f in module.functions}
    cls_index = {id(c): i for i, c in enumerate(module.classes)}

    def d(x: object) -> object:
        if isinstance(x, ir.Function):
            return ("fn", fn_index[id(x)])
        if isinstance(x, ir.Class):
            return ("class", cls_index[id(x)])
        if isinstance(x, ir.Loop):
            return "loop"
        if dataclasses.is_dataclass(x):
            return (type(x).__name__, tuple((f.name, d(getattr(x, f.name))) for f in dataclasses.fields(x) if f.name not in _SKIP and (f.name != "id" or type(x) is ir.Name)))
        if isinstance(x, (list, tuple)):
            return tuple(d(y) for y in x)
        if isinstance(x, (set, frozenset)):
            return tuple(sorted(x))
        if isinstance(x, dict):
            return tuple((k, d(v)) for k, v in x.items())
        return x

    def whole(f: object) -> object:
        out = [(fl.name, d(getattr(f, fl.name))) for fl in dataclasses.fields(f) if fl.name not in _SKIP and fl.name != "id"]
        if isinstance(f, ir.Function):
            out.append(("parent", d(f.parent) if f.parent is not None else None))
            out.append(("cls", d(f.cls) if f.cls is not None else None))
            out.append(("decorator_nodes", len(f.decorator_nodes)))
        else:
            out.append(("methods", tuple((k, d(v)) for k, v in f.methods.items())))
            out.append(("outer", d(f.outer) if f.outer is not None else None))
        return tuple(out)

    return (
        tuple(whole(f) for f in module.functions),
        tuple(whole(c) for c in module.classes),
        d(module.imports),
    )


def first_difference(a: object, b: object, path: str = "") -> str:
    """Where two dumps first differ, for the failure message."""
    if isinstance(a, tuple) and isinstance(b, tuple):
        for i, (x, y) in enumerate(zip(a, b)):
            if x != y:
                return first_difference(x, y, f"{path}/{i}")
        return f"{path}: lengths {len(a)} and {len(b)}"
    return f"{path}: {a!r:.200} != {b!r:.200}"


def both(text: str) -> tuple[object, object]:
    return dump_ir(lower_cst(cst.parse_module(text))), dump_ir(lower_ast(ast.parse(text), text))


def test_every_fixture_and_package_module_lowers_alike() -> None:
    checked = 0
    for path in SOURCES:
        text = path.read_text(encoding="utf-8")
        try:
            ast.parse(text)
            cst.parse_module(text)
        except (SyntaxError, cst.ParserSyntaxError):
            continue
        a, b = both(text)
        assert a == b, (path, first_difference(a, b))
        checked += 1
    assert checked > 400


@pytest.mark.parametrize(
    "text",
    [
        "f(a, k=1, *b, **c)\nf(*a, k=1)\nf(a, *b, k=2)\n",
        "x[a, b]\nx[(a, b)]\nx[(a), b]\nx[a,]\nx[()]\nx[1:2, ::3]\nx[(a, b), c]\nx[('(', b)]\n",
        "a and b or c and (d or e)\nnot a\n-x\n",
        "s = 'a' 'b'\nt = f'{x}' 'y' f'{z!r:>{w}}'\nb = b'x'\nu = 1_000 + 1.5e3 + 2j\n",
        "class A(B, *bases, metaclass=M):\n    x: int\n    y: int = 1\n    def m(self, a, /, b=lambda: 1, *args, c, d=2, **kw):\n        return [i for i in a if i] + {k: v for k, v in kw.items()}\n",
        "@deco\n@other(1)\nasync def g():\n    async with a as (b, c), d:\n        async for e in f:\n            yield e\n    yield from h\n    await i\n",
        "try:\n    pass\nexcept (A, B) as e:\n    del e, x[0]\nelse:\n    global q\nfinally:\n    raise C from D\n",
        "match p:\n    case Point(x=px, y=[a, *rest]) if px:\n        pass\n    case {'k': v, **kw}:\n        pass\n    case A() | B() as ab:\n        pass\n",
        "if a:\n    pass\nelif b:\n    pass\nelse:\n    if c:\n        pass\n",
        "from . import x\nfrom ..pkg.mod import y as z, w\nimport a.b.c\nimport d.e as f\nfrom m import *\n",
        "while (n := next(it)) is not None:\n    break\nelse:\n    continue_ = ...\nassert x, 'msg'\nx = y = z\na, *b = c\n",
    ],
)
def test_shapes_where_the_trees_differ_lower_alike(text: str) -> None:
    a, b = both(text)
    assert a == b, first_difference(a, b)
