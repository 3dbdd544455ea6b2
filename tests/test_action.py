"""The GitHub Action (``action.yml``): its inputs, outputs and steps agree
with each other and with the package, and its two shell steps do what the
README says, run here by bash with GitHub's environment stood in for."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from _cli_support import RETENTION_LOOP, write

yaml = pytest.importorskip("yaml")  # PyYAML comes with pre-commit (the test extra)

ROOT = Path(__file__).resolve().parent.parent
ACTION = yaml.safe_load((ROOT / "action.yml").read_text(encoding="utf-8"))
STEPS = {step["id"]: step for step in ACTION["runs"]["steps"]}

needs_bash = pytest.mark.skipif(shutil.which("bash") is None, reason="the action's steps are bash")


def _package_version() -> str:
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover
        import tomli as tomllib
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["version"]


def test_inputs_outputs_and_steps_agree() -> None:
    assert ACTION["runs"]["using"] == "composite"
    assert all(step.get("shell") == "bash" and step.get("run") for step in STEPS.values())
    text = (ROOT / "action.yml").read_text(encoding="utf-8")
    used = set(re.findall(r"\$\{\{\s*inputs\.([\w-]+)\s*\}\}", text))
    assert used == set(ACTION["inputs"]), "every input is used, and only declared ones"
    for name, spec in ACTION["inputs"].items():
        assert spec["description"] and isinstance(spec["default"], str), name
    # Each step output read elsewhere is one that step writes.
    for step_id, output in re.findall(r"steps\.([\w-]+)\.outputs\.([\w-]+)", text):
        assert f'echo "{output}=' in STEPS[step_id]["run"], (step_id, output)
    assert ACTION["outputs"]["sarif-file"]["value"] == "${{ steps.lint.outputs.sarif-file }}"


def test_default_version_is_the_one_this_commit_ships() -> None:
    # The default installs the action's own checkout only while it names
    # pyproject's version; a release bumps both.
    assert ACTION["inputs"]["version"]["default"] == _package_version()
    assert ACTION["inputs"]["args"]["default"] == "check --format github ."


def _github_env(tmp_path: Path, **env: str) -> dict[str, str]:
    out = tmp_path / "github_output"
    out.write_text("")
    runner_temp = tmp_path / "runner_temp"
    runner_temp.mkdir(exist_ok=True)
    base = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR")}
    return {**base, "GITHUB_OUTPUT": str(out), "RUNNER_TEMP": str(runner_temp), **env}


def _outputs(env: dict[str, str]) -> dict[str, str]:
    lines = Path(env["GITHUB_OUTPUT"]).read_text().splitlines()
    return dict(line.split("=", 1) for line in lines)


def _fake_python(tmp_path: Path) -> Path:
    """A ``python3`` whose venv's pip records what it is asked to install."""
    fake = tmp_path / "fake-bin"
    fake.mkdir()
    script = fake / "python3"
    script.write_text(
        "#!/usr/bin/env bash\n"
        'if [ "$1 $2" = "-m venv" ]; then\n'
        '  mkdir -p "$3/bin"\n'
        '  printf \'#!/usr/bin/env bash\\necho "$*" >> "%s"\\n\' "$PIP_LOG" > "$3/bin/python"\n'
        '  chmod +x "$3/bin/python"\n'
        "fi\n"
    )
    script.chmod(0o755)
    return fake


@needs_bash
@pytest.mark.parametrize(
    "version, spec",
    [
        ("{own}", "{action_path}"),
        ("", "{action_path}"),
        ("0.2.0", "autograd-lint==0.2.0"),
        ("1.0rc1", "autograd-lint==1.0rc1"),
        ("v0.2.0", "git+https://github.com/someone/autograd-lint@v0.2.0"),
        ("0a8e20a1b2c3d4e5f60718293a4b5c6d7e8f9012", "git+https://github.com/someone/autograd-lint@0a8e20a1b2c3d4e5f60718293a4b5c6d7e8f9012"),
    ],
)
def test_install_step_picks_what_to_install(tmp_path: Path, version: str, spec: str) -> None:
    fake = _fake_python(tmp_path)
    log = tmp_path / "pip.log"
    env = _github_env(
        tmp_path,
        PATH=f"{fake}{os.pathsep}{os.environ['PATH']}",
        PIP_LOG=str(log),
        VERSION=version.format(own=_package_version()),
        ACTION_PATH=str(ROOT),
        ACTION_REPOSITORY="someone/autograd-lint",
    )
    subprocess.run(["bash", "-c", STEPS["install"]["run"]], env=env, check=True, capture_output=True)
    assert log.read_text().split()[-1] == spec.format(action_path=ROOT)
    assert _outputs(env)["bin"] == str(Path(env["RUNNER_TEMP"]) / "autograd-lint-venv" / "bin")


def _shim(tmp_path: Path) -> Path:
    """``autograd-lint`` as the venv would have it: this checkout's."""
    bin_dir = tmp_path / "venv-bin"
    bin_dir.mkdir()
    exe = bin_dir / "autograd-lint"
    exe.write_text(f'#!/usr/bin/env bash\nPYTHONPATH={json.dumps(str(ROOT))} exec {json.dumps(sys.executable)} -m autograd_lint "$@"\n')
    exe.chmod(0o755)
    return bin_dir


@needs_bash
def test_lint_step_annotates_then_writes_sarif(tmp_path: Path) -> None:
    project = tmp_path / "repo"
    write(project / "src" / "loop.py", RETENTION_LOOP)
    bin_dir = _shim(tmp_path)
    env = _github_env(tmp_path, BIN=str(bin_dir), ARGS=ACTION["inputs"]["args"]["default"], SARIF="false")
    done = subprocess.run(["bash", "-c", STEPS["lint"]["run"]], env=env, cwd=project, capture_output=True, text=True)
    assert done.returncode == 1, done.stderr
    assert done.stdout.startswith("::warning file=src/loop.py,line=10,")
    assert "sarif-file" not in _outputs(env)

    env = _github_env(tmp_path, BIN=str(bin_dir), ARGS=ACTION["inputs"]["args"]["default"], SARIF="true")
    done = subprocess.run(["bash", "-c", STEPS["lint"]["run"]], env=env, cwd=project, capture_output=True, text=True)
    assert done.returncode == 1 and done.stdout == "", done.stderr
    sarif = Path(_outputs(env)["sarif-file"])
    assert sarif.parent == Path(env["RUNNER_TEMP"])
    results = json.loads(sarif.read_text(encoding="utf-8"))["runs"][0]["results"]
    assert [r["ruleId"] for r in results] == ["AGL101"]
