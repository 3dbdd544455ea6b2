"""Output formats, tested on hand-built findings (no rules needed)."""

from __future__ import annotations

import io
import json
import os

from autograd_lint import catalog
from autograd_lint.finding import Applicability, Edit, Finding, Fix, Location
from autograd_lint.report.machine import render_json
from autograd_lint.report.progress import Progress
from autograd_lint.report.statistics import count_by_code, render_statistics_json, render_statistics_text
from autograd_lint.report.text import render_concise, render_full, render_summary

SOURCE = {"m.py": ["import torch", "losses.append(loss)", "\tx = (a +", "  b)"]}


def finding(code: str, row: int, col: int, end_row: int, end_col: int, path: str = "m.py", fix: Fix | None = None) -> Finding:
    return Finding(code, "a message\nwith two lines", path, Location(row, col), Location(end_row, end_col), fix=fix, noqa_row=row)


def lines_of(path: str):
    return SOURCE.get(path)


def test_full_format_carets_under_span() -> None:
    out = render_full([finding("AGL101", 2, 15, 2, 19)], lines_of)
    assert out == (
        "m.py:2:15: AGL101 a message with two lines\n"
        "2 | losses.append(loss)\n"
        "  |               ^^^^\n"
    )


def test_full_format_multiline_span_underlines_to_end_of_first_line_keeping_tabs() -> None:
    out = render_full([finding("AGL102", 3, 6, 4, 5)], lines_of)
    assert out.splitlines()[2] == "  | \t    ^^^^"


def test_full_format_blank_line_between_findings_and_missing_source() -> None:
    out = render_full([finding("AGL101", 2, 1, 2, 2), finding("AGL001", 1, 1, 1, 1, path="gone.py")], lines_of)
    blocks = out.split("\n\n")
    assert len(blocks) == 2
    # Zero-width span still gets one caret; an unreadable file gets no snippet.
    assert blocks[0].splitlines()[-1] == "  | ^"
    assert blocks[1] == "gone.py:1:1: AGL001 a message with two lines\n"


def test_concise_and_no_color_by_default() -> None:
    out = render_concise([finding("AGL101", 2, 15, 2, 19), finding("AGL103", 1, 1, 1, 2)])
    assert out == "m.py:2:15: AGL101 a message with two lines\nm.py:1:1: AGL103 a message with two lines\n"
    assert "\x1b[" not in out
    assert "\x1b[" in render_concise([finding("AGL101", 2, 15, 2, 19)], color=True)


def test_summary() -> None:
    f = finding("AGL101", 2, 1, 2, 2)
    assert render_summary([]) == "All checks passed!\n"
    assert render_summary([f]) == "Found 1 finding in 1 file.\n"
    g = finding("AGL101", 1, 1, 1, 2, path="n.py")
    assert render_summary([f, f, g]) == "Found 3 findings in 2 files.\n"
    assert render_summary([], errors=2) == "No findings. 2 files could not be checked.\n"


def test_json_shape_matches_ruff() -> None:
    fix = Fix(Applicability.UNSAFE, "Detach it", (Edit(".detach()", Location(2, 19), Location(2, 19)),))
    data = json.loads(render_json([finding("AGL101", 2, 15, 2, 19, fix=fix), finding("AGL001", 1, 1, 1, 1)]))
    assert isinstance(data, list) and len(data) == 2
    item = data[0]
    assert set(item) == {"cell", "code", "end_location", "filename", "fix", "location", "message", "noqa_row", "url"}
    assert item["cell"] is None
    assert item["code"] == "AGL101"
    assert item["location"] == {"column": 15, "row": 2}
    assert item["end_location"] == {"column": 19, "row": 2}
    assert item["filename"] == os.path.abspath("m.py")
    assert item["message"] == "a message with two lines"
    assert item["noqa_row"] == 2
    assert item["url"] == catalog.url("AGL101")
    assert item["fix"] == {
        "applicability": "unsafe",
        "edits": [{"content": ".detach()", "end_location": {"column": 19, "row": 2}, "location": {"column": 19, "row": 2}}],
        "message": "Detach it",
    }
    assert data[1]["fix"] is None
    assert json.loads(render_json([])) == []


def test_statistics_sorted_by_count() -> None:
    findings = [finding("AGL103", 1, 1, 1, 2), finding("AGL101", 1, 1, 1, 2), finding("AGL101", 2, 1, 2, 2)]
    rows = count_by_code(findings)
    assert [(r.code, r.count, r.name) for r in rows] == [
        ("AGL101", 2, "graph-stored-in-container"),
        ("AGL103", 1, "hook-keeps-graph"),
    ]
    assert render_statistics_text(findings) == "2\tAGL101\tgraph-stored-in-container\n1\tAGL103\thook-keeps-graph\n"
    assert json.loads(render_statistics_json(findings))[0] == {
        "code": "AGL101",
        "name": "graph-stored-in-container",
        "count": 2,
        "fixable": False,
    }
    assert render_statistics_text([]) == ""


# --- what --fix would fix (ruff's [*]) -------------------------------------------

SAFE = Fix(Applicability.SAFE, "Detach it", (Edit(".detach()", Location(2, 19), Location(2, 19)),))
UNSAFE = Fix(Applicability.UNSAFE, "Use inference_mode", (Edit("inference_mode", Location(1, 1), Location(1, 2)),))


def test_text_marks_findings_with_a_safe_fix() -> None:
    findings = [finding("AGL101", 2, 15, 2, 19, fix=SAFE), finding("AGL302", 1, 1, 1, 2, fix=UNSAFE), finding("AGL001", 1, 1, 1, 1)]
    assert render_concise(findings).splitlines() == [
        "m.py:2:15: AGL101 [*] a message with two lines",
        "m.py:1:1: AGL302 a message with two lines",
        "m.py:1:1: AGL001 a message with two lines",
    ]
    # With --unsafe-fixes the unsafe fix is one --fix applies too.
    assert "AGL302 [*] " in render_concise(findings, fixes=True)
    # After --fix (fixes=None) nothing is marked.
    assert "[*]" not in render_concise(findings, fixes=None)
    assert render_full(findings[:1], lines_of).startswith("m.py:2:15: AGL101 [*] a message with two lines\n")
    assert "[\x1b[36m*\x1b[0m]" in render_concise(findings, color=True)


def test_summary_counts_fixes_as_ruff() -> None:
    safe, unsafe = finding("AGL101", 2, 15, 2, 19, fix=SAFE), finding("AGL302", 1, 1, 1, 2, fix=UNSAFE)
    plain = finding("AGL001", 1, 1, 1, 1)
    assert render_summary([safe, safe, unsafe, plain]) == (
        "Found 4 findings in 1 file.\n"
        "[*] 2 fixable with the `--fix` option (1 hidden fix can be enabled with the `--unsafe-fixes` option).\n"
    )
    assert render_summary([safe, plain]) == "Found 2 findings in 1 file.\n[*] 1 fixable with the `--fix` option.\n"
    assert render_summary([unsafe, unsafe]) == (
        "Found 2 findings in 1 file.\nNo fixes available (2 hidden fixes can be enabled with the `--unsafe-fixes` option).\n"
    )
    assert render_summary([safe, unsafe], unsafe=True) == "Found 2 findings in 1 file.\n[*] 2 fixable with the `--fix` option.\n"
    assert render_summary([plain]) == "Found 1 finding in 1 file.\n"


def test_statistics_marks_codes_with_a_safe_fix() -> None:
    findings = [finding("AGL101", 2, 15, 2, 19, fix=SAFE), finding("AGL101", 2, 15, 2, 19), finding("AGL302", 1, 1, 1, 2, fix=UNSAFE)]
    assert render_statistics_text(findings) == (
        "2\tAGL101\t[*] graph-stored-in-container\n"
        "1\tAGL302\t[ ] no-grad-could-be-inference-mode\n"
    )
    assert [r["fixable"] for r in json.loads(render_statistics_json(findings))] == [True, False]
    # An unsafe fix makes its code fixable only with --unsafe-fixes.
    assert "1\tAGL302\t[*] " in render_statistics_text(findings, unsafe=True)
    assert json.loads(render_statistics_json(findings[2:]))[0]["fixable"] is False
    assert render_statistics_text(findings[2:]) == "1\tAGL302\tno-grad-could-be-inference-mode\n"


# --- the progress line ----------------------------------------------------------


class _Tty(io.StringIO):
    encoding = "utf-8"

    def isatty(self) -> bool:
        return True


def test_progress_line_is_throttled_and_erased() -> None:
    now = [0.0]
    stream = _Tty()
    progress = Progress(stream, min_files=3, interval=0.1, clock=lambda: now[0])
    progress(1, 5)
    progress(2, 5)  # same instant: not drawn again
    now[0] = 0.25
    progress(3, 5)
    progress.close()
    assert stream.getvalue() == "\rLinting 1/5 files…\rLinting 3/5 files…\r\x1b[K"


def test_progress_is_silent_for_short_runs_and_plain_without_unicode() -> None:
    stream = _Tty()
    progress = Progress(stream, min_files=10)
    for i in range(1, 6):
        progress(i, 5)
    progress.close()
    assert stream.getvalue() == ""
    ascii_stream = _Tty()
    ascii_stream.encoding = "ascii"
    progress = Progress(ascii_stream, min_files=1)
    progress(1, 1)
    assert ascii_stream.getvalue() == "\rLinting 1/1 files..."
