"""``autograd_lint/rule_codes.py`` is generated from the rule classes (so
that selecting codes never imports the rules, nor LibCST through them).
It must say what the classes say. Regenerate: ``python tests/test_rule_codes.py``."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from autograd_lint import catalog, rule_codes

TABLE = Path(rule_codes.__file__)


def render() -> str:
    entries = catalog.all_entries()
    enabled = "".join(f"    {e.code!r}: {e.default_enabled!r},\n" for e in entries)
    triggers = "".join(f"    {r.code!r}: {tuple(r.triggers)!r},\n" for r in catalog.rule_instances())
    return (
        '"""Every code, whether it is on by default, and each rule\'s trigger words\n'
        "(a file holding none of an enabled rule's is never parsed for it): what\n"
        "selecting codes and the pre-filter need, without importing the rules (and\n"
        "LibCST through them). Generated from the rule classes by\n"
        '``python tests/test_rule_codes.py``; a test keeps it in step."""\n\n'
        f"DEFAULT_ENABLED: dict[str, bool] = {{\n{enabled}}}\n\n"
        f"TRIGGERS: dict[str, tuple[bytes, ...]] = {{\n{triggers}}}\n"
    )


def test_table_says_what_the_classes_say() -> None:
    assert TABLE.read_text(encoding="utf-8") == render(), "regenerate: python tests/test_rule_codes.py"


def test_selecting_codes_imports_no_rule() -> None:
    code = (
        "import sys\n"
        "from autograd_lint.config import CliOverrides, load_settings\n"
        "load_settings(['.'], None, CliOverrides(select=['AGL1'], ignore=['AGL103']))\n"
        "print(sorted(m for m in sys.modules if m == 'libcst' or m.startswith('autograd_lint.rules')))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


if __name__ == "__main__":
    TABLE.write_text(render(), encoding="utf-8")
    print(f"wrote {TABLE}")
