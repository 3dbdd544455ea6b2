"""GitHub Actions output (``--format github``): one workflow command per
finding, which the runner turns into an annotation on the pull request.

    ::error file=src/train.py,line=9,col=9,endLine=9,endColumn=28,title=AGL101::`loss` is stored ...

The level follows the SARIF one: ``error`` for AGL0xx (file not checked) and
AGL2xx (backward fails or gradients are wrong), ``warning`` for the rest.
Paths are relative to the current folder (the workspace root in a workflow).
Escaping is the runner's own: in the message ``%``, CR and LF become ``%25``,
``%0D`` and ``%0A``; property values also escape ``:`` and ``,``.
"""

from __future__ import annotations

from typing import Iterable

from autograd_lint.baseline import relative_path
from autograd_lint.finding import Finding
from autograd_lint.catalog import level


def escape_data(value: str) -> str:
    return value.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(value: str) -> str:
    return escape_data(value).replace(":", "%3A").replace(",", "%2C")


def command(f: Finding) -> str:
    if f.cell is not None:
        # An annotation points at rows of the file; a notebook's are its JSON's.
        # The notebook gets the annotation, its text says the cell.
        props = {"file": relative_path(f.path), "title": f"{f.code} (cell {f.cell})"}
        joined = ",".join(f"{key}={escape_property(value)}" for key, value in props.items())
        message = f"cell {f.cell}:{f.start.row}:{f.start.column}: {' '.join(f.message.split())}"
        return f"::{level(f.code)} {joined}::{escape_data(message)}"
    end_row = max(f.end.row, f.start.row)
    props = {
        "file": relative_path(f.path),
        "line": str(f.start.row),
        "col": str(f.start.column),
        "endLine": str(end_row),
        "endColumn": str(f.end.column),
        "title": f.code,
    }
    joined = ",".join(f"{key}={escape_property(value)}" for key, value in props.items())
    # Messages may span lines in the source of a rule; an annotation shows
    # them on one line like every other format.
    return f"::{level(f.code)} {joined}::{escape_data(' '.join(f.message.split()))}"


def render_github(findings: Iterable[Finding]) -> str:
    return "".join(command(f) + "\n" for f in findings)
