"""Human-readable output: the full format (header line, source line, carets),
the concise format (one line per finding) and the summary line."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from autograd_lint.finding import Finding, lines_for
from autograd_lint.report.fixes import applies, count_fixes, fix_summary

# Returns a file's lines (without line endings), or None when unavailable.
LineSource = Callable[[str], "Sequence[str] | None"]

_RESET = "\x1b[0m"
_BOLD = "\x1b[1m"
_RED = "\x1b[31m"
_BLUE = "\x1b[34m"
_CYAN = "\x1b[36m"


class _Style:
    def __init__(self, color: bool) -> None:
        self.color = color

    def __call__(self, text: str, *codes: str) -> str:
        if not self.color or not codes:
            return text
        return "".join(codes) + text + _RESET


def _one_line(message: str) -> str:
    return " ".join(message.split())


def fix_marker(style: _Style) -> str:
    return f"[{style('*', _CYAN)}]"


def header(f: Finding, style: _Style, fixes: "bool | None" = False) -> str:
    """``path:row:col: CODE [*] message``: the ``[*]`` (ruff's) when
    ``--fix`` would fix it (``fixes``: False, safe fixes only; True, with
    ``--unsafe-fixes``; None, never marked, as after ``--fix``)."""
    sep = style(":", _CYAN)
    marker = f" {fix_marker(style)}" if fixes is not None and applies(f, fixes) else ""
    return (
        f"{style(f.path, _BOLD)}{sep}{'' if f.cell is None else f'cell {f.cell}{sep}'}{f.start.row}{sep}{f.start.column}{sep} "
        f"{style(f.code, _BOLD, _RED)}{marker} {_one_line(f.message)}"
    )


def _caret_line(line: str, f: Finding) -> str:
    start = f.start.column - 1
    if f.end.row == f.start.row:
        end = f.end.column - 1
    else:
        end = len(line)  # multi-line span: underline to the end of its first line
    start = min(max(start, 0), len(line))
    width = max(end - start, 1)
    # Keep tabs so the carets line up with the text above them.
    pad = "".join("\t" if ch == "\t" else " " for ch in line[:start])
    return pad + "^" * width


def _snippet(f: Finding, lines: Sequence[str] | None, style: _Style) -> list[str]:
    if not lines or not 1 <= f.start.row <= len(lines):
        return []
    line = lines[f.start.row - 1]
    number = str(f.start.row)
    gutter = " " * len(number)
    bar = style("|", _BLUE, _BOLD)
    return [
        f"{style(number, _BLUE, _BOLD)} {bar} {line}",
        f"{gutter} {bar} {style(_caret_line(line, f), _RED, _BOLD)}",
    ]


def render_full(findings: Iterable[Finding], lines_of: LineSource, color: bool = False, fixes: "bool | None" = False) -> str:
    """Each finding as its header, the source line and carets under the span,
    separated by blank lines. ``fixes``: see ``header``."""
    style = _Style(color)
    blocks = []
    for f in findings:
        blocks.append("\n".join([header(f, style, fixes), *_snippet(f, lines_for(f, lines_of), style)]) + "\n")
    return "\n".join(blocks)


def render_concise(findings: Iterable[Finding], color: bool = False, fixes: "bool | None" = False) -> str:
    style = _Style(color)
    return "".join(header(f, style, fixes) + "\n" for f in findings)


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def render_summary(findings: Sequence[Finding], errors: int = 0, color: bool = False, unsafe: bool = False) -> str:
    """"Found N findings in M files." or "All checks passed!", plus how many
    files could not be checked (so a run with errors never looks clean),
    then how many ``--fix`` would fix (``unsafe``: with ``--unsafe-fixes``)."""
    style = _Style(color)
    if findings:
        files = len({f.path for f in findings})
        line = f"Found {_plural(len(findings), 'finding')} in {_plural(files, 'file')}."
    elif not errors:
        return style("All checks passed!", _BOLD) + "\n"
    else:
        line = "No findings."
    if errors:
        line += f" {_plural(errors, 'file')} could not be checked."
    return line + "\n" + render_fix_summary(findings, color, unsafe)


def render_fix_summary(findings: Iterable[Finding], color: bool = False, unsafe: bool = False) -> str:
    """ruff's "[*] N fixable with the `--fix` option (M hidden fixes ...)."
    line; "" when no finding has a fix."""
    return fix_summary(count_fixes(findings, unsafe), fix_marker(_Style(color)))
