"""Lint one file: (path, bytes, settings) -> findings. A pure function, so a
process pool, a cache and the language server can all reuse it unchanged.

decode -> skip-file / trigger pre-filter -> CPython's parse, one analysis
pass on its tree -> if no enabled rule reports there (no candidate, or
each rests on a condition the module refutes), done (the summary and calls
are the file's analysis; LibCST is never asked) -> else
LibCST's parse, the analysis again on its tree (the same IR: lower_ast.py)
-> every enabled rule reads it -> positions resolved only for the reported
nodes -> inline suppressions.

CPython parses ten times faster than LibCST, and in real projects nearly
every file reports nothing (measured on the corpus subset: 449 of 475): those
cost CPython's parse and one analysis. The rest cost both parses and two
analyses; LibCST's tree is still parsed once, and only where a finding
needs its nodes (positions, fixes). With ``defer`` (a command-line run), a file whose
every report waits on other modules costs no more than a quiet one: the
reports are left unmade, with what each waits on, and the runner lints
the file on LibCST's tree only if one of them holds (measured on the corpus
subset: 16 such files, in one of which a report holds).

A finding can depend on other modules (what an imported helper keeps, who
calls a function): ``analyse_source`` gives such findings as ``Pending``,
with the conditions still to decide, beside the module's summary and the
calls it makes; ``FileAnalysis.resolve`` decides them once the project is
known (the runner), or from the file alone (``lint_source``).
"""

from __future__ import annotations

import ast
import dataclasses
import difflib
from typing import Iterable

import libcst as cst

from autograd_lint.analysis.lower_ast import lower as lower_ast
from autograd_lint.analysis.module import ModuleAnalysis
from autograd_lint.analysis.resolve import Condition, Project, Resolver, likely
from autograd_lint.analysis.summaries import ModuleSummary
from autograd_lint.catalog import rule_instances
from autograd_lint.file_analysis import FileAnalysis, Pending
from autograd_lint.files import DecodeError, decode_source, split_lines
from autograd_lint.finding import Edit, Finding, Fix, Location
from autograd_lint.parsing import Unparsable, parse_module
from autograd_lint.positions import Positions
from autograd_lint.rules.base import Report, Rule
from autograd_lint.rules.fixes import FixSpec, apply_fix_within, apply_fixes
from autograd_lint.settings import Settings, enabled_for
from autograd_lint.suppress import Suppressions
from autograd_lint.triage import SYNTAX_ERROR, decoded, syntax_finding, unparsable_finding, without_parse

_RULES: list[Rule] | None = None


def _all_rules() -> list[Rule]:
    global _RULES
    if _RULES is None:
        _RULES = rule_instances()
    return _RULES


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
    return syntax_finding(path, msg, row, col)


def _position_finding(path: str, positions, rep: Report) -> Finding:
    rng = positions[rep.node]
    start = Location(rng.start.line, rng.start.column + 1)
    end = Location(rng.end.line, rng.end.column + 1)
    watch = positions[rep.watch].start.line if rep.watch is not None else None
    if rep.statement is not None:
        first = positions[rep.statement].start
        if first.line < start.row:
            # (What happens is at the node: that is the line verify watches.)
            watch = watch if watch is not None else start.row
            start = Location(first.line, first.column + 1)
    message = rep.message if isinstance(rep.message, str) else rep.message(lambda n: positions[n].start.line)
    return Finding(rep.code, message, path, start, end, subject=rep.subject, noqa_row=start.row, watch_row=watch)


def lint_source(path: str, source: bytes, settings: Settings, project: Project | None = None) -> list[Finding]:
    """Every unsuppressed finding of one file, sorted by position; with
    ``project``, what other modules show is taken into account."""
    return analyse_source(path, source, settings, open_world=project is not None).resolve(project)


def analyse_source(path: str, source: bytes, settings: Settings, open_world: bool = True) -> FileAnalysis:
    """Lint one file's bytes, leaving what depends on other modules pending.
    ``open_world``: other modules may call this one's functions (a project
    run); else the file is all there is."""
    text = decoded(path, source, settings)
    if isinstance(text, FileAnalysis):
        return text
    return analyse_text(path, text, settings, source, open_world)


def summarize_source(path: str, source: bytes, settings: Settings) -> ModuleSummary | None:
    """What other modules see of this one (no findings): for a module the
    linted files import."""
    try:
        text = decode_source(source)
    except DecodeError:
        return None
    analysis = _analysis_from_ast(path, text, settings, observe=False)
    if analysis is None:
        try:
            module = parse_module(text, path)
        except (cst.ParserSyntaxError, Unparsable):
            return None
        analysis = ModuleAnalysis(module, path, settings.rule_options, observe=False)
    summary = analysis.summary
    analysis.close()
    return summary


def lint_text(path: str, text: str, settings: Settings, source: bytes | None = None, project: Project | None = None) -> list[Finding]:
    """``lint_source`` for text already decoded (an editor buffer). ``source``,
    the raw bytes when known, only feeds the trigger pre-filter."""
    return analyse_text(path, text, settings, source, open_world=project is not None).resolve(project)


def analyse_text(path: str, text: str, settings: Settings, source: bytes | None = None, open_world: bool = True) -> FileAnalysis:
    """Lint decoded text: the triage (``triage.without_parse``), then, when
    the file needs it, ``parse_and_analyse``."""
    if source is None:
        source = text.encode("utf-8", "surrogatepass")
    done = without_parse(path, text, source, enabled_for(path, settings))
    if done is not None:
        return done
    return parse_and_analyse(path, text, settings, source, open_world)


def parse_and_analyse(path: str, text: str, settings: Settings, source: bytes, open_world: bool = True, defer: bool = False) -> FileAnalysis:
    """Lint text the triage found needs parsing (callers that did the
    triage themselves start here, so it is not done twice): on CPython's
    tree, then, where a rule reports, on LibCST's. ``defer``: when every
    report waits on other modules, leave them unmade (``FileAnalysis``'s
    deferred reports; the caller redoes the file without ``defer`` when
    one holds)."""
    enabled = enabled_for(path, settings)
    rules = [r for r in _all_rules() if r.code in enabled]
    quiet = _without_findings(path, text, settings, rules, open_world, defer)
    if quiet is not None:
        return quiet
    return analyse_on_libcst(path, text, settings, source, open_world, rules)


def analyse_on_libcst(path: str, text: str, settings: Settings, source: bytes, open_world: bool = True, rules: list[Rule] | None = None) -> FileAnalysis:
    """``parse_and_analyse`` on LibCST's tree, whatever the rules' candidates."""
    enabled = enabled_for(path, settings)
    if rules is None:
        rules = [r for r in _all_rules() if r.code in enabled]
    try:
        module = parse_module(text, path, source)
    except cst.ParserSyntaxError as e:
        return FileAnalysis(path, [_syntax_error(path, text, e)] if SYNTAX_ERROR in enabled else [])
    except Unparsable as e:
        return FileAnalysis(path, [unparsable_finding(path, e)] if SYNTAX_ERROR in enabled else [])
    analysis = ModuleAnalysis(module, path, settings.rule_options)
    out = FileAnalysis(path, summary=analysis.summary, calls=analysis.call_records)
    for f, _, conditions in _check(analysis, text, settings, rules, open_world):
        if conditions:
            out.pending.append(Pending(f, conditions))
        else:
            out.findings.append(f)
    analysis.close()  # `out` is plain data
    return out


def _analysis_from_ast(path: str, text: str, settings: Settings, observe: bool = True) -> ModuleAnalysis | None:
    """The analysis of the module lowered from CPython's ast (ten times
    cheaper to parse than LibCST; the same IR: lower_ast.py); None when
    CPython does not parse it (LibCST judges: newer syntax, or a real
    error to report)."""
    try:
        tree = ast.parse(text, filename=path)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    return ModuleAnalysis(None, path, settings.rule_options, observe=observe, lowered=lower_ast(tree, text))


def _without_findings(path: str, text: str, settings: Settings, rules: list[Rule], open_world: bool, defer: bool = False) -> FileAnalysis | None:
    """The file's analysis when no enabled rule reports anything in it
    (``_waiting_reports``, decided on CPython's tree): its summary and
    calls, no finding, and no LibCST parse; with ``defer``, also when every
    report waits on other modules (the reports are deferred: what each waits
    on, kept as plain data). None when a rule reports (the file is analysed
    again on LibCST's tree, whose nodes the findings and fixes point at)."""
    analysis = _analysis_from_ast(path, text, settings)
    if analysis is None:
        return None
    try:
        waiting = _waiting_reports(analysis, settings, rules, open_world)
        if waiting is None or (waiting and not defer):
            return None
        return FileAnalysis(path, pending=[Pending(None, c) for c in waiting], summary=analysis.summary, calls=analysis.call_records)
    finally:
        analysis.close()


def _waiting_reports(analysis: ModuleAnalysis, settings: Settings, rules: list[Rule], open_world: bool) -> list[tuple[Condition, ...]] | None:
    """What each report ``_check`` would keep (before positions and
    suppressions) waits on in other modules, each set once, in rule order:
    [] when no rule reports; None when a report waits on nothing (it is
    found here). Each rule's ``selected`` items are its reports, and their
    conditions are decided as ``_check`` decides them, without the syntax
    tree. Most candidates rest on a condition the module itself refutes
    (measured on the corpus subset: 52 files in 54 with candidates report
    nothing), and most of the rest only wait on other modules (16 of 17)."""
    resolver: Resolver | None = None
    out: list[tuple[Condition, ...]] = []  # (conditions compare equal; not all hash)
    for rule in rules:
        for item in rule.selected(analysis, settings):
            conditions = rule.conditions(item)
            if not conditions:
                return None
            if resolver is None:
                resolver = analysis.resolver(open_world)
            decided = _still_to_decide(resolver, conditions, open_world)
            if decided is not None:
                if not decided:
                    return None
                if decided not in out:
                    out.append(decided)
    return out


def _still_to_decide(resolver: Resolver, conditions: tuple[Condition, ...], open_world: bool) -> tuple[Condition, ...] | None:
    """What a report's conditions leave to other modules, or None when the
    report is dropped: one fails here, or the file is all there is and
    what it cannot show is not shown."""
    decided = resolver.undecided(conditions)
    if decided is None or (decided and not open_world):
        return None
    return decided


def check_module(
    path: str, text: str, module: cst.Module, settings: Settings, rules: Iterable[Rule] | None = None, project: Project | None = None
) -> list[tuple[Finding, FixSpec | None]]:
    """The findings of a parsed module, each with the fix its rule offers
    (as nodes of ``module``; the finding carries the same fix as text edits).
    ``project``: decides what depends on other modules (None: this file
    alone)."""
    if rules is None:
        enabled = enabled_for(path, settings)
        rules = [r for r in _all_rules() if r.code in enabled]
    analysis = ModuleAnalysis(module, path, settings.rule_options)
    resolver = Resolver(None, project, analysis.summary) if project is not None else None
    out = []
    for f, spec, conditions in _check(analysis, text, settings, rules, project is not None):
        if not conditions or (resolver is not None and resolver.all_hold(conditions)):
            out.append((f, spec))
    return out


def _check(
    analysis: ModuleAnalysis, text: str, settings: Settings, rules: Iterable[Rule], open_world: bool
) -> list[tuple[Finding, FixSpec | None, tuple[Condition, ...]]]:
    """Every finding of the analysed module with its fix and the conditions
    this module alone cannot decide (exported: plain data). Findings whose
    conditions fail are dropped."""
    path, module = analysis.path, analysis.module
    resolver = analysis.resolver(open_world)
    reports: list[Report] = []
    for rule in rules:
        for rep in rule.check(analysis, settings):
            if rep.conditions:
                decided = _still_to_decide(resolver, rep.conditions, open_world)
                if decided is None:
                    continue
                rep = dataclasses.replace(rep, conditions=decided)
            reports.append(rep)
    if not reports:
        return []
    # Positions for every node cost one code generation of the module: paid
    # only by files that have something to report.
    positions = Positions(module, text, lambda: analysis.parents)
    suppressions = Suppressions(text)
    kept: dict[tuple, tuple[Finding, FixSpec | None, tuple[Condition, ...]]] = {}
    for rep in reports:
        f = _position_finding(path, positions, rep)
        if suppressions.is_suppressed(f.code, f.start.row):
            continue
        key = (f.code, f.start, f.end)
        old = kept.get(key)
        # The same finding shown unconditionally wins over a conditional one.
        if old is None or (old[2] and not rep.conditions):
            kept[key] = (f, rep.fix, rep.conditions)
    # Fixes for findings pending on another module's summary are not
    # computed: most of them will not hold (their fix is computed when
    # `--fix` or the editor lints the file with the project at hand).
    edits = _fix_edits(module, text, positions, [spec for _, spec, conds in kept.values() if spec is not None and all(likely(c) for c in conds)])
    findings: list[tuple[Finding, FixSpec | None, tuple[Condition, ...]]] = []
    for f, spec, conds in kept.values():
        if spec is not None and edits.get(id(spec)):
            findings.append((dataclasses.replace(f, fix=Fix(spec.applicability, spec.title, edits[id(spec)])), spec, conds))
        else:
            findings.append((f, None, conds))
    return sorted(findings, key=lambda p: p[0].sort_key())


def _fix_edits(module: cst.Module, text: str, positions: Positions, specs: list[FixSpec]) -> dict[int, tuple[Edit, ...]]:
    """Each fix as text edits, by ``id`` of its spec; a fix whose result does
    not parse gets none (the finding stays).

    Applying a fix to the whole tree costs a transform, a code generation
    and a parse of the file: per finding, that is quadratic on a large file
    with many findings. So a fix is applied to the top-level statement that
    holds it, alone: only that statement's code is generated, and checked to
    parse with CPython's parser (~50x faster than LibCST's). A fix that adds
    an import or spans statements is applied to the whole tree."""
    old_lines = split_lines(text, keepends=True)
    out: dict[int, tuple[Edit, ...]] = {}
    for spec in specs:
        local = None if spec.import_torch else _local_edits(module, old_lines, positions, spec)
        out[id(spec)] = local if local is not None else _edits_of(module, text, spec)
    return out


def _local_edits(module: cst.Module, old_lines: list[str], positions: Positions, spec: FixSpec) -> tuple[Edit, ...] | None:
    """``spec`` as edits computed on its top-level statement alone; () when
    its result does not parse; None when it cannot be done that way (the
    fix spans statements, or the statement's code is not exactly its lines)."""
    tops = {positions.top_of(old) for old, _ in spec.replacements}
    if len(tops) != 1 or None in tops:
        return None
    stmt = module.body[tops.pop()]  # type: ignore[index]
    a, _ = _lines_of(stmt, positions)
    try:
        old_code = module.code_for_node(stmt)
        n = len(split_lines(old_code))
        if "".join(old_lines[a - 1 : a - 1 + n]) != old_code:
            return None
        new_code = module.code_for_node(apply_fix_within(stmt, spec))
    except Exception:  # a broken rewrite must never reach the user
        return ()
    if not _parses(new_code):
        return ()
    shift = a - 1
    return tuple(
        Edit(e.content, Location(e.start.row + shift, 1), Location(e.end.row + shift, 1)) for e in text_edits(old_code, new_code)
    )


def _parses(code: str) -> bool:
    try:
        ast.parse(code)
    except (SyntaxError, ValueError, RecursionError):
        return False
    return True


def _lines_of(node: cst.CSTNode, positions) -> tuple[int, int]:
    """A node's first and last line, with the comments, blank lines and
    decorators a statement carries above it."""
    rng = positions[node]
    above = len(getattr(node, "leading_lines", ()) or ()) + len(getattr(node, "decorators", ()) or ())
    return rng.start.line - above, rng.end.line


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
