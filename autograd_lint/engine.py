"""Lint one file: (path, bytes, settings) -> findings. A pure function, so a
process pool, a cache and the language server can all reuse it unchanged.

decode -> skip-file / trigger pre-filter -> parse once -> one analysis pass ->
every enabled rule reads the analysis -> positions resolved only for the
reported nodes -> inline suppressions.
"""

from __future__ import annotations

import ast
import dataclasses
import difflib
import fnmatch
import os
from pathlib import PurePath
from typing import Iterable, Iterator

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from autograd_lint.analysis.module import ModuleAnalysis
from autograd_lint.catalog import rule_instances
from autograd_lint.config import Settings
from autograd_lint.files import DecodeError, decode_source, split_lines
from autograd_lint.finding import Edit, Finding, Fix, Location
from autograd_lint.rules.base import Report, Rule
from autograd_lint.rules.fixes import FixSpec, apply_fixes
from autograd_lint.suppress import Suppressions, skip_file

SYNTAX_ERROR = "AGL001"

_RULES: list[Rule] | None = None


def _all_rules() -> list[Rule]:
    global _RULES
    if _RULES is None:
        _RULES = rule_instances()
    return _RULES


def _matches(path: str, pattern: str, root: str | None) -> bool:
    candidates = {path, PurePath(path).name}
    if root:
        try:
            candidates.add(os.path.relpath(os.path.abspath(path), root))
        except ValueError:
            pass
    candidates = {c.replace(os.sep, "/") for c in candidates}
    return any(fnmatch.fnmatch(c, pattern) or fnmatch.fnmatch(c, pattern.rstrip("/") + "/*") for c in candidates)


def enabled_for(path: str, settings: Settings) -> frozenset[str]:
    enabled = set(settings.enabled)
    for pattern, codes in settings.per_file_ignores:
        if _matches(path, pattern, settings.root):
            enabled = {c for c in enabled if not any(c.startswith(x) for x in codes)}
    return frozenset(enabled)


def _syntax_error(path: str, text: str, err: cst.ParserSyntaxError) -> Finding:
    # CPython's own message is clearer ("'(' was never closed") and its
    # position is exact; LibCST's is the fallback (e.g. syntax CPython accepts
    # but LibCST does not know yet).
    row, col, msg = err.raw_line, err.raw_column + 1, err.message.split("\n")[0]
    try:
        ast.parse(text, filename=path)
        msg = f"LibCST cannot parse this file: {msg}"
    except SyntaxError as e:
        row, col = e.lineno or row, e.offset or col
        msg = f"SyntaxError: {e.msg}"
    except (ValueError, RecursionError) as e:
        msg = f"cannot parse this file: {e}"
    loc = Location(max(row, 1), max(col, 1))
    return Finding(SYNTAX_ERROR, msg + "; the file was not checked", path, loc, loc, noqa_row=loc.row)


def _position_finding(path: str, positions, rep: Report) -> Finding:
    rng = positions[rep.node]
    start = Location(rng.start.line, rng.start.column + 1)
    end = Location(rng.end.line, rng.end.column + 1)
    message = rep.message if isinstance(rep.message, str) else rep.message(lambda n: positions[n].start.line)
    return Finding(rep.code, message, path, start, end, subject=rep.subject, noqa_row=start.row)


def lint_source(path: str, source: bytes, settings: Settings) -> list[Finding]:
    """Every unsuppressed finding of one file, sorted by position."""
    try:
        text = decode_source(source)
    except DecodeError as e:
        if SYNTAX_ERROR not in enabled_for(path, settings):
            return []
        loc = Location(1, 1)
        return [Finding(SYNTAX_ERROR, f"cannot decode this file ({e}); the file was not checked", path, loc, loc, noqa_row=1)]
    return lint_text(path, text, settings, source)


def lint_text(path: str, text: str, settings: Settings, source: bytes | None = None) -> list[Finding]:
    """``lint_source`` for text already decoded (an editor buffer). ``source``,
    the raw bytes when known, only feeds the trigger pre-filter."""
    enabled = enabled_for(path, settings)
    rules = [r for r in _all_rules() if r.code in enabled]
    if source is None:
        source = text.encode("utf-8", "surrogatepass")
    if skip_file(text):
        return []
    # A file that contains no trigger word of any enabled rule cannot produce
    # a finding: skip LibCST (the expensive part). CPython's own parser, ~10x
    # faster, still catches syntax errors there.
    if not any(not r.triggers or any(t in source for t in r.triggers) for r in rules):
        if SYNTAX_ERROR not in enabled:
            return []
        try:
            ast.parse(text, filename=path)
        except SyntaxError as e:
            loc = Location(max(e.lineno or 1, 1), max(e.offset or 1, 1))
            return [Finding(SYNTAX_ERROR, f"SyntaxError: {e.msg}; the file was not checked", path, loc, loc, noqa_row=loc.row)]
        except (ValueError, RecursionError) as e:
            loc = Location(1, 1)
            return [Finding(SYNTAX_ERROR, f"cannot parse this file: {e}; the file was not checked", path, loc, loc, noqa_row=1)]
        return []
    try:
        module = cst.parse_module(text)
    except cst.ParserSyntaxError as e:
        return [_syntax_error(path, text, e)] if SYNTAX_ERROR in enabled else []
    except RecursionError:
        loc = Location(1, 1)
        return [Finding(SYNTAX_ERROR, "file is nested too deeply to parse; the file was not checked", path, loc, loc, noqa_row=1)] if SYNTAX_ERROR in enabled else []
    return [f for f, _ in check_module(path, text, module, settings, rules)]


def check_module(
    path: str, text: str, module: cst.Module, settings: Settings, rules: Iterable[Rule] | None = None
) -> list[tuple[Finding, FixSpec | None]]:
    """The findings of a parsed module, each with the fix its rule offers
    (as nodes of ``module``; the finding carries the same fix as text edits)."""
    if rules is None:
        enabled = enabled_for(path, settings)
        rules = [r for r in _all_rules() if r.code in enabled]
    analysis = ModuleAnalysis.build(module, settings)
    reports: list[Report] = []
    for rule in rules:
        reports.extend(rule.check(analysis))
    if not reports:
        return []
    # Positions for every node cost one code generation of the module: paid
    # only by files that have something to report.
    positions = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    suppressions = Suppressions(text)
    kept: dict[tuple, tuple[Finding, FixSpec | None]] = {}
    for rep in reports:
        f = _position_finding(path, positions, rep)
        if suppressions.is_suppressed(f.code, f.start.row):
            continue
        key = (f.code, f.start, f.end)
        if key not in kept:
            kept[key] = (f, rep.fix)
    edits = _fix_edits(module, text, positions, [spec for _, spec in kept.values() if spec is not None])
    findings: list[tuple[Finding, FixSpec | None]] = []
    for f, spec in kept.values():
        if spec is not None and edits.get(id(spec)):
            findings.append((dataclasses.replace(f, fix=Fix(spec.applicability, spec.title, edits[id(spec)])), spec))
        else:
            findings.append((f, None))
    return sorted(findings, key=lambda p: p[0].sort_key())


def _fix_edits(module: cst.Module, text: str, positions, specs: list[FixSpec]) -> dict[int, tuple[Edit, ...]]:
    """Each fix as text edits, by ``id`` of its spec; a fix whose result does
    not parse gets none (the finding stays).

    Applying each fix alone to the whole tree costs a transform, a code
    generation and a parse of the file per finding: quadratic on a large
    file with many findings. So the fixes that do not overlap are applied
    together once, the diff's hunks are attributed to the fix whose nodes
    they touch, and each fix alone is checked to parse (CPython's parser,
    ~50x faster than a LibCST parse). Fixes that overlap, add an import, or
    whose hunks cannot be attributed, are done one at a time as before."""
    out: dict[int, tuple[Edit, ...]] = {}
    alone = [s for s in specs if s.import_torch]
    pending = [s for s in specs if not s.import_torch]
    old_lines = split_lines(text, keepends=True)
    tops = [_lines_of(stmt, positions) for stmt in module.body]
    # Each round applies the fixes that do not overlap; a fix that overlaps
    # one of them (a statement-level fix around an expression-level one)
    # waits for the next round.
    while len(pending) > 1:
        try:
            new_module, applied = apply_fixes(module, pending)
            new_text = new_module.code
        except Exception:  # a broken rewrite must never reach the user
            break
        if not applied:
            break
        pending = [s for s in pending if not any(s is a for a in applied)]
        spans = {id(s): _span(s, positions) for s in applied}
        owned: dict[int, list[Edit]] = {id(s): [] for s in applied}
        for edit in _per_line(text_edits(text, new_text), old_lines):
            # Old lines [first, last]; an insertion touches the lines around it.
            first, last = edit.start.row, edit.end.row - 1
            if last < first:
                first, last = first - 1, first
            owners = [k for k, (a, b) in spans.items() if a <= last and first <= b]
            if len(owners) == 1:
                owned[owners[0]].append(edit)
            else:
                for k in owners or list(owned):
                    owned.pop(k, None)
        for s in applied:
            if id(s) not in owned:
                alone.append(s)
            elif owned[id(s)] and _parses_with(old_lines, owned[id(s)], spans[id(s)], tops):
                out[id(s)] = tuple(owned[id(s)])
    for spec in [*alone, *pending]:
        out[id(spec)] = _edits_of(module, text, spec)
    return out


def _per_line(edits: Iterable[Edit], old_lines: list[str]) -> Iterator[Edit]:
    """Split a hunk that replaces n lines by n lines into one edit per
    changed line: fixes on adjacent lines then stay apart."""
    for e in edits:
        new = split_lines(e.content, keepends=True)
        if len(new) == e.end.row - e.start.row > 1:
            for i, line in enumerate(new):
                if line != old_lines[e.start.row - 1 + i]:
                    yield Edit(line, Location(e.start.row + i, 1), Location(e.start.row + i + 1, 1))
        else:
            yield e


def _span(spec: FixSpec, positions) -> tuple[int, int]:
    """The lines a fix rewrites: those of its replaced nodes."""
    spans = [_lines_of(old, positions) for old, _ in spec.replacements]
    return min(a for a, _ in spans), max(b for _, b in spans)


def _lines_of(node: cst.CSTNode, positions) -> tuple[int, int]:
    """A node's first and last line, with the comments, blank lines and
    decorators a statement carries above it."""
    rng = positions[node]
    above = len(getattr(node, "leading_lines", ()) or ()) + len(getattr(node, "decorators", ()) or ())
    return rng.start.line - above, rng.end.line


def _parses_with(old_lines: list[str], edits: list[Edit], span: tuple[int, int], tops: list[tuple[int, int]]) -> bool:
    """Does the text parse with ``edits`` applied? Only the top-level
    statement holding the fix is parsed (a module-level statement parses on
    its own); the whole text when the fix is not inside one."""
    first, last = 1, len(old_lines)
    for a, b in tops:
        if a <= span[0] and span[1] <= b and all(a <= e.start.row and e.end.row - 1 <= b for e in edits):
            first, last = a, b
            break
    chunk = old_lines[first - 1 : last]
    for e in sorted(edits, key=lambda e: e.start.row, reverse=True):
        chunk[e.start.row - first : e.end.row - first] = [e.content]
    try:
        ast.parse("".join(chunk))
    except (SyntaxError, ValueError, RecursionError):
        return False
    return True


def _edits_of(module: cst.Module, text: str, spec: FixSpec) -> tuple[Edit, ...]:
    """One fix as text edits: apply it alone to the tree and diff the code.
    A fix whose result does not parse is dropped (the finding stays)."""
    try:
        new_module, applied = apply_fixes(module, [spec])
        if not applied:
            return ()
        new_text = new_module.code
        cst.parse_module(new_text)
    except Exception:  # a broken rewrite must never reach the user
        return ()
    return text_edits(text, new_text)


def text_edits(old: str, new: str) -> tuple[Edit, ...]:
    """Line-granular edits turning ``old`` into ``new``."""
    a, b = split_lines(old, keepends=True), split_lines(new, keepends=True)
    out = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag == "equal":
            continue
        out.append(Edit("".join(b[j1:j2]), Location(i1 + 1, 1), Location(i2 + 1, 1)))
    return tuple(out)
