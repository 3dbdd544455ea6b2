"""Machine-readable output: JSON shaped exactly like ruff's
``--output-format json``, so tools that read ruff's output read ours."""

from __future__ import annotations

import json
import os
from typing import Any, Iterable

from autograd_lint.finding import Finding, Fix, Location


def _location(loc: Location) -> dict[str, int]:
    return {"column": loc.column, "row": loc.row}


def _fix(fix: Fix | None) -> dict[str, Any] | None:
    if fix is None:
        return None
    return {
        "applicability": getattr(fix.applicability, "value", fix.applicability),
        "edits": [
            {"content": e.content, "end_location": _location(e.end), "location": _location(e.start)}
            for e in fix.edits
        ],
        "message": fix.message,
    }


def _filename(path: str) -> str:
    # ruff reports absolute paths; stdin without --stdin-filename stays "-".
    return path if path == "-" else os.path.abspath(path)


def finding_to_dict(f: Finding) -> dict[str, Any]:
    from autograd_lint.catalog import url

    return {
        "cell": f.cell,
        "code": f.code,
        "end_location": _location(f.end),
        "filename": _filename(f.path),
        "fix": _fix(f.fix),
        "location": _location(f.start),
        "message": " ".join(f.message.split()),
        "noqa_row": f.noqa_row if f.noqa_row is not None else f.start.row,
        "url": url(f.code),
    }


def render_json(findings: Iterable[Finding]) -> str:
    return json.dumps([finding_to_dict(f) for f in findings], indent=2) + "\n"
