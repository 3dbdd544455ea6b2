"""SARIF 2.1.0 output (``--format sarif``), for GitHub code scanning and
other SARIF viewers.

One run; ``tool.driver.rules`` lists every rule in the catalogue (not only
the ones that fired), so ``ruleIndex`` is stable. Paths under the current
folder are relative URIs against ``%SRCROOT%`` (declared in
``originalUriBaseIds``); others are absolute ``file:`` URIs. Lines and columns
are 1-based and end columns exclusive in both SARIF and autograd-lint, so
regions are copied as they are. ``partialFingerprints`` holds the same
content fingerprint as the baseline (see ``autograd_lint.baseline``).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Sequence
from urllib.parse import quote

from autograd_lint import __version__
from autograd_lint.baseline import LineSource, fingerprints, relative_path
from autograd_lint.catalog import category_tags, first_paragraph, level
from autograd_lint.finding import Finding, Fix, Location

SCHEMA_URI = "https://json.schemastore.org/sarif-2.1.0.json"
INFORMATION_URI = "https://github.com/autograd-lint/autograd-lint"
SRCROOT = "%SRCROOT%"
FINGERPRINT_KEY = "autogradLint/v1"

def _tags(code: str) -> list[str]:
    return ["autograd", *category_tags(code)]


def _rule_descriptor(entry: Any) -> dict[str, Any]:
    from autograd_lint import catalog

    code = entry.code
    summary = " ".join(str(entry.summary).split())
    page = catalog.read_page(code)
    descriptor: dict[str, Any] = {
        "id": code,
        "name": entry.name,
        "shortDescription": {"text": summary},
        "fullDescription": {"text": first_paragraph(page) or summary},
        "helpUri": catalog.url(code),
        "help": {"text": page or summary, "markdown": page or summary},
        "defaultConfiguration": {"level": level(code), "enabled": bool(entry.default_enabled)},
        "properties": {"tags": _tags(code)},
    }
    if getattr(entry, "fix_title", None):
        descriptor["properties"]["fixTitle"] = entry.fix_title
    return descriptor


def _artifact_location(path: str, root: str) -> dict[str, Any]:
    rel = relative_path(path, root)
    if rel == "-" or not os.path.isabs(rel):
        return {"uri": quote(rel, safe="/"), "uriBaseId": SRCROOT}
    return {"uri": Path(rel).as_uri()}


def _folder_uri(folder: str) -> str:
    uri = Path(folder).as_uri()
    return uri if uri.endswith("/") else uri + "/"


def _region(start: Location, end: Location) -> dict[str, int]:
    # SARIF, like us, has 1-based lines and columns and an exclusive end column.
    start_line = max(start.row, 1)
    start_col = max(start.column, 1)
    end_line = max(end.row, start_line)
    end_col = max(end.column, 1)
    if end_line == start_line:
        end_col = max(end_col, start_col)
    return {"startLine": start_line, "startColumn": start_col, "endLine": end_line, "endColumn": end_col}


def _fix(fix: Fix, location: dict[str, Any]) -> dict[str, Any]:
    return {
        "description": {"text": fix.message or "Apply the fix"},
        "artifactChanges": [
            {
                "artifactLocation": location,
                "replacements": [
                    {"deletedRegion": _region(e.start, e.end), "insertedContent": {"text": e.content}}
                    for e in fix.edits
                ],
            }
        ],
        "properties": {"applicability": getattr(fix.applicability, "value", str(fix.applicability))},
    }


def render_sarif(
    findings: Sequence[Finding],
    lines_of: LineSource,
    errors: Sequence[str] = (),
    root: str | None = None,
) -> str:
    from autograd_lint import catalog

    root = os.path.abspath(root if root is not None else os.getcwd())
    entries = catalog.all_entries()
    index = {e.code: i for i, e in enumerate(entries)}
    prints = fingerprints(findings, lines_of, root)
    results = []
    for f, fp in zip(findings, prints):
        location = _artifact_location(f.path, root)
        result: dict[str, Any] = {
            "ruleId": f.code,
            "level": level(f.code),
            "message": {"text": " ".join(f.message.split())},
            "locations": [{"physicalLocation": {"artifactLocation": location, "region": _region(f.start, f.end)}}],
            "partialFingerprints": {FINGERPRINT_KEY: fp},
        }
        if f.cell is not None:
            # SARIF has no notebook cells: the region counts rows in the cell
            # the message and the properties name.
            result["message"]["text"] = f"cell {f.cell}: {result['message']['text']}"
            result["properties"] = {"cell": f.cell}
        if f.code in index:
            result["ruleIndex"] = index[f.code]
        # A SARIF fix replaces regions of the file itself; a cell's rows are
        # not the notebook's (its JSON), so a notebook finding offers none.
        if f.fix is not None and f.fix.edits and f.cell is None:
            result["fixes"] = [_fix(f.fix, location)]
        results.append(result)

    invocation: dict[str, Any] = {"executionSuccessful": not errors}
    if errors:
        invocation["toolExecutionNotifications"] = [
            {"level": "error", "message": {"text": message}} for message in errors
        ]
    log = {
        "$schema": SCHEMA_URI,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "autograd-lint",
                        "version": __version__,
                        "semanticVersion": __version__,
                        "informationUri": INFORMATION_URI,
                        "rules": [_rule_descriptor(e) for e in entries],
                    }
                },
                "originalUriBaseIds": {SRCROOT: {"uri": _folder_uri(root)}},
                "invocations": [invocation],
                "columnKind": "unicodeCodePoints",
                "results": results,
            }
        ],
    }
    return json.dumps(log, indent=2) + "\n"
