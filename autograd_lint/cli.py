"""Command line: ``autograd-lint [check] PATH...``, ``rules``, ``explain CODE``.

Exit codes: 0 clean, 1 findings, 2 usage / configuration / I/O / internal
error, 130 interrupted. No traceback ever reaches the user. Heavy modules
(libcst, the rules) are imported only by the subcommand that needs them, and
torch never is.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from autograd_lint import __version__

TYPE_CHECKING = False  # typing costs 4 ms at start-up; type checkers take this name as true
if TYPE_CHECKING:
    from autograd_lint.finding import FileResult

PROG = "autograd-lint"
SUBCOMMANDS = ("check", "rules", "explain", "verify", "server", "clean")

EXIT_OK, EXIT_FINDINGS, EXIT_ERROR, EXIT_INTERRUPTED = 0, 1, 2, 130
CHECK_USAGE = f"{PROG} [check] [options] [PATH ...]"


def _error(message: str) -> None:
    print(f"{PROG}: error: {message}", file=sys.stderr)


def _codes(values: list[str] | None) -> list[str]:
    """Flatten repeatable, comma-separated flag values."""
    return [c.strip() for v in values or [] for c in v.split(",") if c.strip()]


def _jobs(value: str) -> int:
    try:
        n = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid job count: {value!r}") from None
    if n < 0:
        raise argparse.ArgumentTypeError("job count must be 0 (one per CPU) or more")
    return n


def _add_check_arguments(check: argparse.ArgumentParser) -> None:
    check.add_argument("paths", nargs="*", metavar="PATH", help="files or folders to lint (default: .); '-' reads stdin")
    sel = check.add_argument_group("rule selection (comma-separated, repeatable)")
    sel.add_argument("--select", action="append", metavar="CODES", help="enable exactly these codes or prefixes (replaces the config's select)")
    sel.add_argument("--extend-select", action="append", metavar="CODES", help="enable these codes in addition")
    sel.add_argument("--ignore", action="append", metavar="CODES", help="disable these codes (added to the config's ignore)")
    files = check.add_argument_group("files")
    files.add_argument("--exclude", action="append", metavar="GLOBS", help="exclude globs (replaces the config's exclude)")
    files.add_argument("--extend-exclude", action="append", metavar="GLOBS", help="exclude globs in addition")
    files.add_argument("--respect-gitignore", action=argparse.BooleanOptionalAction, help="skip what git ignores, inside a git repository (default: on)")
    files.add_argument("--force-exclude", action=argparse.BooleanOptionalAction, help="exclude paths named on the command line too (for pre-commit)")
    files.add_argument("--show-files", action="store_true", help="print the files that would be linted, and lint nothing")
    files.add_argument("--stdin-filename", metavar="NAME", help="the name of the file read from stdin (messages, per-file-ignores)")
    files.add_argument("--config", metavar="PATH", help="use this pyproject.toml or autograd-lint.toml instead of discovering one")
    files.add_argument("--show-settings", nargs="?", const="", metavar="PATH", help="print the settings PATH (default: the first path) is linted with, and exit")
    out = check.add_argument_group("output")
    out.add_argument("--format", "--output-format", dest="format", choices=("text", "concise", "json", "sarif", "github"), default="text")
    out.add_argument("--statistics", action="store_true", help="print the number of findings per code instead of the findings")
    out.add_argument("-q", "--quiet", action="store_true", help="print only the findings, no summary")
    out.add_argument("-o", "--output-file", metavar="PATH", help="write the report to PATH instead of stdout (messages stay on stderr)")
    out.add_argument("--color", choices=("auto", "always", "never"), default="auto", help="colour the report: auto (default: on a terminal; NO_COLOR and FORCE_COLOR are respected; never into --output-file), always, never")
    out.add_argument("--no-color", dest="color", action="store_const", const="never", help="same as --color never")
    out.add_argument("--exit-zero", action="store_true", help="exit 0 even when there are findings")
    fix = check.add_argument_group("fixes")
    fix.add_argument("--fix", action="store_true", help="apply safe fixes in place (stdin: print the fixed code)")
    fix.add_argument("--unsafe-fixes", action="store_true", help="with --fix/--diff: apply unsafe fixes too")
    fix.add_argument("--diff", action="store_true", help="print the diff --fix would apply, write nothing (exit 1 when there is one)")
    fix.add_argument("--show-fixes", action="store_true", help="with --fix: list what was fixed")
    base = check.add_argument_group("baseline (adopting on an existing codebase)").add_mutually_exclusive_group()
    base.add_argument("--baseline", metavar="FILE", help="report only findings not recorded in FILE")
    base.add_argument("--write-baseline", metavar="FILE", help="record the current findings in FILE and exit 0")
    run = check.add_argument_group("run")
    run.add_argument("-j", "--jobs", type=_jobs, default=0, metavar="N", help="worker processes (default: one per CPU; 1: no pool)")
    run.add_argument("--torch-version", metavar="X.Y", help="the torch version the code targets (overrides the config)")
    cache = check.add_argument_group("cache")
    cache.add_argument("--cache-dir", metavar="DIR", help="where analyses are cached (default: $AUTOGRAD_LINT_CACHE_DIR, else .autograd-lint-cache in the project root)")
    cache.add_argument("--no-cache", action="store_true", help="neither read nor write the cache")
    cache.add_argument("-v", "--verbose", action="store_true", help="say on stderr how many files came from the cache")


def build_check_parser() -> argparse.ArgumentParser:
    """``check`` alone: what almost every run parses (the whole parser, with
    its six subcommands, costs a few milliseconds more at every start)."""
    check = argparse.ArgumentParser(prog=f"{PROG} check", usage=CHECK_USAGE)
    _add_check_arguments(check)
    check.set_defaults(command="check")
    return check


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="A static analyzer for PyTorch autograd bugs.",
        epilog=f"`{PROG} PATH...` means `{PROG} check PATH...`; see `{PROG} check --help` for its options.",
        usage=f"{PROG} [check] [options] [PATH ...]\n       {PROG} rules [--format text|json]\n       {PROG} explain CODE\n       {PROG} clean [--cache-dir DIR]\n       {PROG} verify [options] [PATH ...] -- python script.py [ARGS]\n       {PROG} server",
    )
    parser.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    _add_check_arguments(sub.add_parser("check", help="lint files and folders (the default command)", usage=CHECK_USAGE))

    rules = sub.add_parser("rules", help="list every rule", usage=f"{PROG} rules [--format text|json]")
    rules.add_argument("--format", choices=("text", "json"), default="text")

    explain = sub.add_parser("explain", help="print a rule's documentation", usage=f"{PROG} explain CODE")
    explain.add_argument("code", metavar="CODE")

    clean = sub.add_parser("clean", help="remove the cache folder", usage=f"{PROG} clean [--cache-dir DIR] [--config PATH]")
    clean.add_argument("--cache-dir", metavar="DIR", help="the cache folder (default: as for check)")
    clean.add_argument("--config", metavar="PATH", help="the configuration whose project root holds the cache")

    server = sub.add_parser("server", help="start the language server on stdin/stdout (needs autograd-lint[lsp])", usage=f"{PROG} server [--workers N]")
    server.add_argument("--workers", type=_jobs, default=2, metavar="N", help="worker processes that lint documents (default: 2; 0: one per CPU)")

    # Parsed by autograd_lint.verify.runner (it needs `--` and a trailing command);
    # listed here for --help.
    sub.add_parser("verify", help="run a program and check the findings against what happens (runs your code)", add_help=False)
    return parser


def _with_default_command(argv: list[str]) -> list[str]:
    # `autograd-lint src/` means `autograd-lint check src/`.
    if argv and (argv[0] in SUBCOMMANDS or argv[0] in ("-h", "--help", "--version")):
        return argv
    return ["check", *argv]


def main(argv: Sequence[str] | None = None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    try:
        if args_list and args_list[0] == "verify":
            from autograd_lint.verify.runner import main as verify_main

            return verify_main(args_list[1:])
        argv = _with_default_command(args_list)
        try:
            if argv[0] == "check":
                args = build_check_parser().parse_args(argv[1:])
            else:
                args = build_parser().parse_args(argv)
        except SystemExit as e:  # argparse: --help / --version (0) or usage error (2)
            return e.code if isinstance(e.code, int) else EXIT_ERROR
        if args.command == "rules":
            return _cmd_rules(args)
        if args.command == "explain":
            return _cmd_explain(args)
        if args.command == "server":
            return _cmd_server(args)
        if args.command == "clean":
            return _cmd_clean(args)
        return _cmd_check(args)
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # The reader went away (`| head`): stop quietly, and keep Python from
        # complaining again when it flushes stdout at exit.
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        except (OSError, ValueError):
            pass
        return EXIT_ERROR
    except Exception as e:  # last resort: one line, never a traceback
        _error_internal(e)
        return EXIT_ERROR


def _error_internal(e: BaseException) -> None:
    detail = str(e).splitlines()[0] if str(e) else ""
    print(f"{PROG}: internal error: {type(e).__name__}{': ' + detail if detail else ''}", file=sys.stderr)


# --- server ----------------------------------------------------------------


def _cmd_server(args: argparse.Namespace) -> int:
    try:
        import lsprotocol  # noqa: F401
        import pygls  # noqa: F401
    except ImportError:
        print(f"{PROG}: the language server needs pygls: pip install 'autograd-lint[lsp]'", file=sys.stderr)
        return EXIT_ERROR
    from autograd_lint.lsp.server import main as server_main

    return server_main(args.workers or os.cpu_count() or 2)


# --- rules / explain ---------------------------------------------------------


def _cmd_rules(args: argparse.Namespace) -> int:
    from autograd_lint import catalog

    entries = catalog.all_entries()
    if args.format == "json":
        import json

        rows = [
            {
                "code": e.code,
                "name": e.name,
                "fixable": bool(e.fixable),
                "default_enabled": bool(e.default_enabled),
                "summary": e.summary,
                "url": catalog.url(e.code),
            }
            for e in entries
        ]
        sys.stdout.write(json.dumps(rows, indent=2) + "\n")
        return EXIT_OK
    name_w = max([len("NAME"), *(len(e.name) for e in entries)])
    lines = [f"{'CODE':<7} {'NAME':<{name_w}} {'FIXABLE':<7} SUMMARY"]
    for e in entries:
        summary = e.summary + ("" if e.default_enabled else " (off by default)")
        lines.append(f"{e.code:<7} {e.name:<{name_w}} {'yes' if e.fixable else 'no':<7} {summary}")
    sys.stdout.write("\n".join(lines) + "\n")
    return EXIT_OK


def _cmd_explain(args: argparse.Namespace) -> int:
    from autograd_lint import catalog

    code = args.code.strip().upper()
    if code not in catalog.all_codes():
        _error(f"unknown rule code '{args.code}' (see `{PROG} rules`)")
        return EXIT_ERROR
    page = catalog.read_page(code)
    if page is None:
        _error(f"no documentation page found for {code}")
        return EXIT_ERROR
    sys.stdout.write(page if page.endswith("\n") else page + "\n")
    return EXIT_OK


# --- check ----------------------------------------------------------------------


def _cmd_check(args: argparse.Namespace) -> int:
    from autograd_lint.config import CliOverrides, ConfigError, ConfigResolver, first_folder

    paths: list[str] = args.paths or []
    from_stdin = paths == ["-"] or (not paths and args.stdin_filename is not None)
    if "-" in paths and len(paths) > 1:
        _error("'-' (stdin) cannot be combined with other paths")
        return EXIT_ERROR
    if not paths and not from_stdin:
        paths = ["."]

    overrides = CliOverrides(
        select=_codes(args.select) if args.select is not None else None,
        extend_select=_codes(args.extend_select),
        ignore=_codes(args.ignore),
        exclude=_codes(args.exclude) if args.exclude is not None else None,
        extend_exclude=_codes(args.extend_exclude),
        respect_gitignore=args.respect_gitignore,
        force_exclude=args.force_exclude,
        torch_version=args.torch_version,
        stdin_filename=args.stdin_filename,
    )
    try:
        # Each file gets the configuration nearest to it (or --config's);
        # `settings` is the first path's (stdin, the cache's folder).
        resolver = ConfigResolver(args.config, overrides)
        settings = resolver.settings_for_folder(first_folder(paths or ["-"], args.stdin_filename))
    except ConfigError as e:
        _error(str(e))
        return EXIT_ERROR
    if args.show_settings is not None:
        from autograd_lint.cli_output import show_settings

        problem = show_settings(args.show_settings or (paths or ["-"])[0], args, resolver, overrides, sys.stdout)
        if problem is not None:
            _error(problem)
        return EXIT_OK if problem is None else EXIT_ERROR

    if args.show_files:
        return _show_files(paths, from_stdin, resolver)

    baseline = None
    if args.baseline is not None:
        from autograd_lint.baseline import BaselineError, load_baseline

        try:
            baseline = load_baseline(args.baseline)
        except BaselineError as e:
            _error(str(e))
            return EXIT_ERROR

    report = None
    if args.output_file is not None:
        from autograd_lint.cli_output import OutputFileError, open_output_file

        try:
            report = open_output_file(args.output_file)
        except OutputFileError as e:
            _error(str(e))
            return EXIT_ERROR
    try:
        if args.fix or args.diff:
            return _cmd_fix(args, paths, from_stdin, settings, resolver, report)
        return _lint(args, paths, from_stdin, settings, resolver, baseline, report or sys.stdout)
    finally:
        if report is not None:
            report.close()


def _lint(args: argparse.Namespace, paths: list[str], from_stdin: bool, settings, resolver, baseline, report) -> int:
    """Lint and report to ``report`` (stdout or the ``--output-file``)."""
    from autograd_lint.config import ConfigError

    errors: list[str] = []
    stdin_text: dict[str, str] = {}
    if from_stdin:
        from autograd_lint.runner import lint_bytes

        name = args.stdin_filename or "-"
        source = sys.stdin.buffer.read()
        results = [lint_bytes(name, source, settings)]
        stdin_text[name] = _decode_or_empty(source)
    else:
        from autograd_lint.cli_output import progress_line
        from autograd_lint.runner import lint_paths

        discovered = _discover(paths, resolver)
        if discovered is None:
            return EXIT_ERROR
        try:
            file_settings = _file_settings(resolver, discovered.files, settings)
        except ConfigError as e:
            _error(str(e))
            return EXIT_ERROR
        cache = _open_cache(args, settings)
        with progress_line(args) as progress:
            results = lint_paths(discovered.files, file_settings, args.jobs, roots=[p for p in paths if os.path.isdir(p)], cache=cache, progress=progress)
        errors = [f"{PROG}: error: {message}" for message in discovered.errors]
        if args.verbose:
            hits = cache.hits if cache is not None else 0
            print(f"{PROG}: {len(discovered.files)} file{'' if len(discovered.files) == 1 else 's'}, {hits} from the cache{'' if cache is not None else ' (off)'}", file=sys.stderr)

    findings = sorted((f for r in results for f in r.findings), key=lambda f: f.sort_key())
    errors += _result_errors(results)
    if args.write_baseline is not None or baseline is not None:
        from autograd_lint import baseline as bl

        if args.write_baseline is not None:
            try:
                bl.write_baseline(args.write_baseline, findings, _line_loader(stdin_text))
            except bl.BaselineError as e:
                _error(str(e))
                return EXIT_ERROR
            if not args.quiet:
                print(f"Wrote {len(findings)} finding{'' if len(findings) == 1 else 's'} to {args.write_baseline}.")
            for message in errors:
                print(message, file=sys.stderr)
            return EXIT_ERROR if errors else EXIT_OK
        findings = bl.filter_new(findings, baseline, _line_loader(stdin_text))
    _print_report(args, findings, len(errors), stdin_text, errors, report)
    for message in errors:
        print(message, file=sys.stderr)
    if errors:
        return EXIT_ERROR
    if findings and not args.exit_zero:
        return EXIT_FINDINGS
    return EXIT_OK


def _discover(paths: list[str], resolver):
    """The files to lint under ``paths``; None (reported) when a path does
    not exist: a typo in a path must not turn into a clean run of the rest."""
    from autograd_lint.discovery import discover_files

    discovered = discover_files(paths, resolver.discovery_for)
    if discovered.missing:
        for path in discovered.missing:
            _error(f"{path}: no such file or directory")
        return None
    if not discovered.files and not discovered.errors:
        print(f"{PROG}: warning: No Python files found under the given path(s)", file=sys.stderr)
    return discovered


def _show_files(paths: list[str], from_stdin: bool, resolver) -> int:
    """``--show-files``: the files a run would lint, one a line, sorted."""
    if from_stdin:
        _error("--show-files lists the files found in paths; it cannot be used with stdin")
        return EXIT_ERROR
    discovered = _discover(paths, resolver)
    if discovered is None:
        return EXIT_ERROR
    sys.stdout.write("".join(f"{path}\n" for path in discovered.files))
    for message in discovered.errors:
        _error(message)
    return EXIT_ERROR if discovered.errors else EXIT_OK


def _open_cache(args: argparse.Namespace, settings):
    """The cache this run reads and writes; None with ``--no-cache``. A
    cache that cannot be written costs one warning, never the run."""
    if args.no_cache:
        return None
    from autograd_lint.cache import Cache, default_dir

    cache, warning = Cache.open(args.cache_dir or default_dir(settings))
    if warning is not None:
        print(f"{PROG}: warning: {warning}", file=sys.stderr)
    return cache


def _cmd_clean(args: argparse.Namespace) -> int:
    from autograd_lint.cache import clean, default_dir
    from autograd_lint.config import CliOverrides, ConfigError, load_settings

    directory = args.cache_dir
    if directory is None:
        try:
            settings, _ = load_settings(["."], args.config, CliOverrides())
        except ConfigError as e:
            _error(str(e))
            return EXIT_ERROR
        directory = default_dir(settings)
    problem = clean(directory)
    if problem is not None:
        _error(problem)
        return EXIT_ERROR
    return EXIT_OK


def _file_settings(resolver, files: list[str], first):
    """Each file's settings; one object when they are all the same (the
    common case: one project)."""
    from autograd_lint.settings import FileSettings

    by_path = {p: resolver.settings_for(p) for p in files}
    if all(s is first for s in by_path.values()):
        return first
    return FileSettings(by_path, first)


def _cmd_fix(args: argparse.Namespace, paths: list[str], from_stdin: bool, settings, resolver, output=None) -> int:
    """`--fix` / `--diff`: fix in memory, then write (atomically), print the
    fixed stdin, or print the diff; report what remains (to ``output``, the
    ``--output-file``, when given)."""
    from autograd_lint.fix import NotWritten, fix_bytes, write_fixed

    results = []
    errors: list[str] = []
    stdin_text: dict[str, str] = {}
    if from_stdin:
        name = args.stdin_filename or "-"
        source = sys.stdin.buffer.read()
        results.append(fix_bytes(name, source, settings, args.unsafe_fixes))
    else:
        discovered = _discover(paths, resolver)
        if discovered is None:
            return EXIT_ERROR
        from functools import partial

        from autograd_lint.config import ConfigError

        try:
            file_settings = _file_settings(resolver, discovered.files, settings)
        except ConfigError as e:
            _error(str(e))
            return EXIT_ERROR

        from autograd_lint.cli_output import progress_line
        from autograd_lint.fix import crashed_fix, fix_file
        from autograd_lint.runner import map_files

        errors = [f"{PROG}: error: {message}" for message in discovered.errors]
        nothing = _nothing_to_fix(discovered.files, file_settings, _open_cache(args, settings))
        todo = [p for p in discovered.files if p not in nothing]
        with progress_line(args) as progress:
            done = dict(zip(todo, map_files(partial(fix_file, unsafe=args.unsafe_fixes), todo, file_settings, args.jobs, on_crash=crashed_fix, progress=progress)))
        results = [nothing[p] if p in nothing else done[p] for p in discovered.files]
    for r in results:
        errors.extend(f"{PROG}: warning: {p}" for p in r.problems)

    if args.diff:
        diff = "".join(r.diff() for r in results)
        (output or sys.stdout).write(diff)
        n = sum(len(r.fixed) for r in results)
        if not args.quiet:
            print(f"Would fix {n} finding{'' if n == 1 else 's'}." if n else "No fixes available.", file=sys.stderr)
        for message in errors:
            print(message, file=sys.stderr)
        return EXIT_ERROR if errors else (EXIT_FINDINGS if diff else EXIT_OK)

    for r in results:
        if from_stdin:
            sys.stdout.buffer.write(r.fixed_source if r.changed else r.original)
            sys.stdout.flush()
        elif r.changed:
            try:
                write_fixed(r.path, r.original, r.fixed_source)
            except NotWritten as e:
                errors.append(f"{PROG}: error: {r.path}: {e}")
                r.fixed = []  # (what remains is read from the file as it is: below)
            except OSError as e:
                errors.append(f"{PROG}: error: {r.path}: cannot write: {e.strerror or e}")
    # What remains is what `check` reports on the code as it now is (fixed
    # where written): findings that wait on other modules too, which a file
    # fixed alone cannot decide.
    if from_stdin:
        from autograd_lint.runner import lint_bytes

        one = results[0]
        remaining = sorted(lint_bytes(one.path, one.fixed_source if one.changed else one.original, settings).findings, key=lambda f: f.sort_key())
    else:
        from autograd_lint.runner import lint_paths

        checked = lint_paths(discovered.files, file_settings, args.jobs, roots=[p for p in paths if os.path.isdir(p)], cache=_open_cache(args, settings))
        remaining = sorted((f for r in checked for f in r.findings), key=lambda f: f.sort_key())
    fixed = [f for r in results for f in r.fixed]
    report = output or (sys.stderr if from_stdin else sys.stdout)
    saved, sys.stdout = sys.stdout, report
    try:
        if args.show_fixes and fixed:
            print(f"Fixed {len(fixed)} finding{'' if len(fixed) == 1 else 's'}:")
            for f in sorted(fixed, key=lambda f: f.sort_key()):
                cell = "" if f.cell is None else f"cell {f.cell}:"
                print(f"- {f.path}:{cell}{f.start.row}:{f.start.column}: {f.code} {f.fix.message if f.fix else ''}")
        quiet = args.quiet
        args.quiet = True
        _print_report(args, remaining, len(errors), stdin_text, errors, report, fixing=True)
        args.quiet = quiet
        if not args.quiet and args.format in ("text", "concise") and not args.statistics:
            from autograd_lint.report.text import render_fix_summary

            total = len(fixed) + len(remaining)
            if total:
                print(f"Found {total} finding{'' if total == 1 else 's'} ({len(fixed)} fixed, {len(remaining)} remaining).")
                # What is left that a fix could still do: unsafe fixes not asked for.
                report.write(render_fix_summary(remaining, _color(args, report), args.unsafe_fixes))
            else:
                print("All checks passed!")
    finally:
        sys.stdout = saved
    for message in errors:
        print(message, file=sys.stderr)
    if errors:
        return EXIT_ERROR
    return EXIT_FINDINGS if remaining and not args.exit_zero else EXIT_OK


def _nothing_to_fix(files: list[str], settings, cache) -> dict:
    """The files the cache shows have no finding, not even one pending on
    another module: ``--fix`` leaves them unread (what a file alone shows is
    a part of what it shows in its project)."""
    if cache is None:
        return {}
    from autograd_lint.fix import FixResult
    from autograd_lint.runner import cached_analysis
    from autograd_lint.settings import settings_of

    out = {}
    for path in files:
        analysis = cached_analysis(path, settings_of(settings, path), cache)
        if analysis is not None and not analysis.findings and not analysis.pending:
            out[path] = FixResult(path, b"")
    return out


def _result_errors(results: "list[FileResult]") -> list[str]:
    from autograd_lint.runner import INTERNAL_ERROR_PREFIX

    out = []
    for r in results:
        if r.error is None:
            continue
        if r.error.startswith(INTERNAL_ERROR_PREFIX):
            out.append(f"{PROG}: internal error while linting {r.path}: {r.error[len(INTERNAL_ERROR_PREFIX):]}")
        else:
            out.append(f"{PROG}: error: {r.path}: {r.error}")
    return out


def _decode_or_empty(source: bytes) -> str:
    from autograd_lint.files import DecodeError, decode_source

    try:
        return decode_source(source)
    except DecodeError:
        return ""


def _color(args: argparse.Namespace, out) -> bool:
    from autograd_lint.cli_output import use_color

    return use_color(args.color, out, to_file=args.output_file is not None)


def _print_report(
    args: argparse.Namespace, findings: list, n_errors: int, stdin_text: dict[str, str], errors: Sequence[str] = (), out=None, fixing: bool = False
) -> None:
    """The report in ``args.format`` on ``out`` (stdout by default). Text
    marks what ``--fix`` would fix, unless ``fixing`` (after ``--fix``)."""
    out = sys.stdout if out is None else out
    color = _color(args, out)
    unsafe = args.unsafe_fixes
    if args.statistics:
        from autograd_lint.report import statistics

        if args.format == "json":
            out.write(statistics.render_statistics_json(findings, unsafe))
            return
        out.write(statistics.render_statistics_text(findings, color, unsafe))
        if not args.quiet and findings:
            # ruff follows the table with its summary lines.
            from autograd_lint.report import text

            out.write(text.render_summary(findings, n_errors, color, unsafe))
        return
    if args.format == "json":
        from autograd_lint.report.machine import render_json

        out.write(render_json(findings))
        return
    if args.format == "sarif":
        from autograd_lint.report.sarif import render_sarif

        out.write(render_sarif(findings, _line_loader(stdin_text), errors))
        return
    if args.format == "github":
        from autograd_lint.report.github import render_github

        out.write(render_github(findings))
        return

    from autograd_lint.report import text

    fixes = None if fixing else unsafe
    if args.format == "concise":
        out.write(text.render_concise(findings, color, fixes))
    else:
        out.write(text.render_full(findings, _line_loader(stdin_text), color, fixes))
    if not args.quiet:
        if findings and args.format == "text":
            out.write("\n")
        out.write(text.render_summary(findings, n_errors, color, unsafe))


def _line_loader(stdin_text: dict[str, str]):
    """Source lines per path (per cell of a notebook) for the snippets and
    baseline fingerprints, read again only for files that have findings,
    once each."""
    from autograd_lint.files import DecodeError, decode_source, split_lines

    cache: dict[str, list[str] | None] = {p: split_lines(t) for p, t in stdin_text.items()}
    cells: dict[str, dict[int, list[str]]] = {}

    def lines_of(path: str, cell: int | None = None) -> list[str] | None:
        if cell is not None:
            if path not in cells:
                from autograd_lint.notebook import NotebookError, cell_lines  # a notebook's finding only

                try:
                    with open(path, "rb") as f:
                        cells[path] = cell_lines(f.read())
                except (OSError, NotebookError):
                    cells[path] = {}
            return cells[path].get(cell)
        if path not in cache:
            try:
                with open(path, "rb") as f:
                    cache[path] = split_lines(decode_source(f.read()))
            except (OSError, DecodeError):
                cache[path] = None
        return cache[path]

    return lines_of
