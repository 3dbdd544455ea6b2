"""Config loading: discovery, validation, CLI overrides."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from _cli_support import pyproject, write
from autograd_lint import catalog
from autograd_lint.config import (
    CliOverrides,
    ConfigError,
    find_config_file,
    load_settings,
    parse_torch_version,
    read_config_file,
)

DEFAULT = catalog.resolve_selection(None)


def test_no_config_gives_defaults(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    settings, discovery = load_settings([str(tmp_path)], None, CliOverrides())
    assert settings.enabled == DEFAULT
    assert settings.per_file_ignores == ()
    assert settings.torch_version is None
    assert discovery.exclude == ()


def test_discovery_walks_up_to_nearest_table(tmp_path: Path) -> None:
    pyproject(tmp_path, 'select = ["AGL001"]\n')
    # A pyproject without our table does not stop the search.
    write(tmp_path / "pkg" / "pyproject.toml", "[project]\nname = 'x'\n")
    deep = tmp_path / "pkg" / "src" / "mod"
    deep.mkdir(parents=True)
    assert find_config_file(deep) == tmp_path / "pyproject.toml"
    settings, discovery = load_settings([str(deep)], None)
    assert settings.enabled == {"AGL001"}
    assert settings.root == str(tmp_path)
    assert discovery.root == str(tmp_path)


def test_discovery_starts_from_file_parent(tmp_path: Path) -> None:
    pyproject(tmp_path / "a", 'ignore = ["AGL001"]\n')
    f = write(tmp_path / "a" / "b" / "x.py", "")
    settings, _ = load_settings([str(f)], None)
    assert "AGL001" not in settings.enabled


def test_nearest_config_wins(tmp_path: Path) -> None:
    pyproject(tmp_path, 'select = ["AGL001"]\n')
    pyproject(tmp_path / "sub", 'select = ["AGL1"]\n')
    settings, _ = load_settings([str(tmp_path / "sub")], None)
    assert settings.enabled == {c for c in DEFAULT if c.startswith("AGL1")}


def test_explicit_config_pyproject(tmp_path: Path) -> None:
    cfg = pyproject(tmp_path / "elsewhere", 'select = ["AGL001"]\ntorch-version = "1.13"\n')
    settings, _ = load_settings([str(tmp_path)], str(cfg))
    assert settings.enabled == {"AGL001"}
    assert settings.torch_version == (1, 13)
    assert settings.root == str(tmp_path / "elsewhere")


def test_explicit_standalone_toml_top_level(tmp_path: Path) -> None:
    cfg = write(tmp_path / "autograd-lint.toml", 'ignore = ["AGL1"]\n')
    settings, _ = load_settings([str(tmp_path)], str(cfg))
    assert "AGL001" in settings.enabled and not any(c.startswith("AGL1") for c in settings.enabled)


def test_standalone_toml_with_tool_table(tmp_path: Path) -> None:
    cfg = write(tmp_path / "lint.toml", '[tool.autograd-lint]\nselect = ["AGL001"]\n')
    assert read_config_file(cfg).select == ("AGL001",)


def test_pyproject_without_table_is_empty_config(tmp_path: Path) -> None:
    cfg = write(tmp_path / "pyproject.toml", "[project]\nname = 'x'\n")
    settings, _ = load_settings([str(tmp_path)], str(cfg))
    assert settings.enabled == DEFAULT


def test_missing_explicit_config(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="config file not found"):
        load_settings([str(tmp_path)], str(tmp_path / "nope.toml"))


def test_unknown_key_names_file_and_key(tmp_path: Path) -> None:
    cfg = pyproject(tmp_path, 'selekt = ["AGL001"]\n')
    with pytest.raises(ConfigError) as e:
        load_settings([str(tmp_path)], None)
    msg = str(e.value)
    assert str(cfg) in msg and "'selekt'" in msg and "did you mean 'select'" in msg
    assert "\n" not in msg


@pytest.mark.parametrize(
    "body, key",
    [
        ('select = "AGL001"\n', "select"),
        ("ignore = [1]\n", "ignore"),
        ("exclude = true\n", "exclude"),
        ('per-file-ignores = ["x"]\n', "per-file-ignores"),
        ('per-file-ignores = { "tests/*" = "AGL101" }\n', "per-file-ignores"),
        ("torch-version = 2.1\n", "torch-version"),
        ('torch-version = "latest"\n', "torch-version"),
        ("rule-options = 3\n", "rule-options"),
    ],
)
def test_wrong_type_names_file_and_key(tmp_path: Path, body: str, key: str) -> None:
    cfg = pyproject(tmp_path, body)
    with pytest.raises(ConfigError) as e:
        load_settings([str(tmp_path)], None)
    assert str(cfg) in str(e.value) and key in str(e.value)


@pytest.mark.parametrize(
    "body",
    [
        'select = ["AGL999"]\n',
        'extend-select = ["XYZ1"]\n',
        'ignore = ["AGL999"]\n',
        '[tool.autograd-lint.per-file-ignores]\n"tests/*" = ["AGL999"]\n',
    ],
)
def test_unknown_code_in_config(tmp_path: Path, body: str) -> None:
    cfg = pyproject(tmp_path, body)
    with pytest.raises(ConfigError) as e:
        load_settings([str(tmp_path)], None)
    msg = str(e.value)
    assert str(cfg) in msg
    assert "AGL999" in msg or "XYZ1" in msg


@pytest.mark.parametrize("flag", ["select", "extend_select", "ignore"])
def test_unknown_code_on_cli(tmp_path: Path, flag: str) -> None:
    with pytest.raises(ConfigError, match=f"--{flag.replace('_', '-')}: unknown rule code or prefix 'AGL999'"):
        load_settings([str(tmp_path)], None, CliOverrides(**{flag: ["AGL999"]}))


def test_bad_toml(tmp_path: Path) -> None:
    cfg = write(tmp_path / "pyproject.toml", "[tool.autograd-lint\nselect = 1\n")
    with pytest.raises(ConfigError) as e:
        load_settings([str(tmp_path)], None)
    assert str(cfg) in str(e.value) and "invalid TOML" in str(e.value)
    assert "\n" not in str(e.value)


def test_cli_overrides(tmp_path: Path) -> None:
    pyproject(
        tmp_path,
        'select = ["AGL001"]\nignore = ["AGL103"]\nexclude = ["a"]\nextend-exclude = ["b"]\ntorch-version = "1.13"\n',
    )
    overrides = CliOverrides(
        select=["AGL1"],
        extend_select=["AGL001"],
        ignore=["AGL102"],
        exclude=["c"],
        extend_exclude=["d"],
        torch_version="2.1.0",
    )
    settings, discovery = load_settings([str(tmp_path)], None, overrides)
    # --select replaced select; config ignore and --ignore both apply.
    assert settings.enabled == {c for c in DEFAULT if c.startswith("AGL1")} - {"AGL102", "AGL103"} | {"AGL001"}
    assert discovery.exclude == ("c", "b", "d")
    assert settings.torch_version == (2, 1)


def test_per_file_ignores_and_rule_options(tmp_path: Path) -> None:
    pyproject(
        tmp_path,
        'rule-options = { eval-loader-patterns = ["holdout"] }\n'
        '[tool.autograd-lint.per-file-ignores]\n"tests/*" = ["agl1"]\n"x.py" = ["ALL"]\n',
    )
    settings, _ = load_settings([str(tmp_path)], None)
    pfi = dict(settings.per_file_ignores)
    assert pfi["tests/*"] == {"AGL1"}
    assert pfi["x.py"] == set(catalog.all_codes())
    assert settings.rule_options == {"eval-loader-patterns": ("holdout",)}


@pytest.mark.parametrize(
    "body, key, says",
    [
        # A misspelt key: named, with the key meant.
        ('[tool.autograd-lint.rule-options]\neval-loader-pattern = ["x"]\n', "rule-options.eval-loader-pattern", "did you mean 'eval-loader-patterns'"),
        ('[tool.autograd-lint.rule-options]\nAGL101 = { max = 3 }\n', "rule-options.AGL101", "known: eval-function-patterns"),
        # A string where a list belongs.
        ('[tool.autograd-lint.rule-options]\neval-function-patterns = "evaluate"\n', "rule-options.eval-function-patterns", "must be a list"),
        ('[tool.autograd-lint.rule-options]\neval-function-patterns = ["x", 3]\n', "rule-options.eval-function-patterns", "must be a list"),
        # A pattern that does not compile.
        ('[tool.autograd-lint.rule-options]\neval-loader-patterns = ["(val"]\n', "rule-options.eval-loader-patterns", "invalid regular expression '(val'"),
    ],
)
def test_bad_rule_options_name_file_and_key(tmp_path: Path, body: str, key: str, says: str) -> None:
    cfg = pyproject(tmp_path, body)
    with pytest.raises(ConfigError) as e:
        load_settings([str(tmp_path)], None)
    msg = str(e.value)
    assert str(cfg) in msg and f"'{key}'" in msg and says in msg
    assert "\n" not in msg


def test_bad_rule_option_stops_the_run_before_any_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from autograd_lint.cli import main

    pyproject(tmp_path, '[tool.autograd-lint.rule-options]\neval-loader-patterns = ["[val"]\n')
    write(tmp_path / "a.py", "import torch\nlosses = []\n")
    write(tmp_path / "b.py", "import torch\n")
    assert main(["--no-cache", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    # One message naming the key, no "internal error" per file.
    assert len(err) == 1 and "rule-options.eval-loader-patterns" in err[0] and "internal error" not in err[0]


def test_rule_options_change_what_is_evaluation_code(tmp_path: Path) -> None:
    from autograd_lint.engine import lint_source

    source = b"""import torch

def fit(train_loader, holdout_batches):
    model = torch.nn.Linear(3, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for x in train_loader:
        opt.zero_grad()
        model(x).sum().backward()
        opt.step()
    for x in holdout_batches:
        print(model(x))
"""
    pyproject(tmp_path, '[tool.autograd-lint.rule-options]\neval-loader-patterns = ["^holdout_"]\n')
    configured, _ = load_settings([str(tmp_path)], None)
    default, _ = load_settings([str(tmp_path / "elsewhere")], str(write(tmp_path / "empty" / "autograd-lint.toml", "")))
    assert [f.code for f in lint_source("s.py", source, configured)] == ["AGL301"]
    assert [f.code for f in lint_source("s.py", source, default)] == []


@pytest.mark.parametrize(
    "text, expected",
    [("1.13", (1, 13)), ("2.1.0", (2, 1)), ("2.1.0+cu118", (2, 1)), ("2", (2, 0)), (" 2.3 ", (2, 3))],
)
def test_parse_torch_version(text: str, expected: tuple[int, int]) -> None:
    assert parse_torch_version(text) == expected


def test_stdin_filename_anchors_discovery(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pyproject(tmp_path / "proj", 'select = ["AGL001"]\n')
    monkeypatch.chdir(tmp_path)
    settings, _ = load_settings(["-"], None, CliOverrides(stdin_filename=os.path.join("proj", "m.py")))
    assert settings.enabled == {"AGL001"}
