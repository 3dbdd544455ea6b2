"""The pre-commit hooks (``.pre-commit-hooks.yaml``), run for real.

``pre-commit try-repo REPO HOOK --files FILE`` clones REPO, builds the hook's
virtualenv (``pip install`` of this package: libcst, never torch) and runs the
hook on FILE inside a throwaway git repository. try-repo only carries tracked
changes of a dirty checkout, so REPO is a snapshot of this working tree
(tracked and untracked, not ignored, files) committed into a temporary git
repository: the test sees exactly the files a commit would.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from _cli_support import RETENTION_LOOP

pytest.importorskip("pre_commit")

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent

BUG = RETENTION_LOOP

FIXABLE = """\
import torch


def train(model, loader, opt):
    for x, y in loader:
        opt.zero_grad(set_to_none=False)
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
"""

CLEAN = """\
import torch


def train(model, loader, opt):
    losses = []
    for x, y in loader:
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
        opt.zero_grad()
    return losses
"""


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


def _init_repo(path: Path) -> None:
    path.mkdir(parents=True, exist_ok=True)
    _git(path, "init", "-q")
    _git(path, "config", "user.email", "test@example.com")
    _git(path, "config", "user.name", "autograd-lint tests")
    _git(path, "config", "commit.gpgsign", "false")


def _fix_available() -> bool:
    """Whether this checkout's CLI accepts ``--fix`` (the fix hook's entry)."""
    import contextlib
    import io

    from autograd_lint import cli

    try:
        with contextlib.redirect_stderr(io.StringIO()):
            cli.build_parser().parse_args(["check", "--fix"])
    except SystemExit:
        return False
    return True


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    home = tmp_path_factory.mktemp("pre-commit-home")
    env = dict(os.environ, PRE_COMMIT_HOME=str(home), PRE_COMMIT_COLOR="never", NO_COLOR="1")
    env.pop("PRE_COMMIT", None)
    # Inherited git state (a hook running these tests) must not leak in.
    for key in ("GIT_DIR", "GIT_INDEX_FILE", "GIT_WORK_TREE", "GIT_OBJECT_DIRECTORY"):
        env.pop(key, None)
    return env


@pytest.fixture(scope="module")
def hook_repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """This working tree, committed into a fresh repository."""
    if not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT, check=True, capture_output=True,
    ).stdout.decode().split("\0")
    repo = tmp_path_factory.mktemp("hook-repo")
    for rel in filter(None, listed):
        src = ROOT / rel
        if src.is_file():
            dst = repo / rel
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dst)
    assert (repo / ".pre-commit-hooks.yaml").is_file()
    _init_repo(repo)
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "snapshot")
    return repo


def try_repo(hook_repo: Path, hook: str, project: Path, file: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pre_commit", "try-repo", str(hook_repo), hook, "--files", file],
        cwd=project, env=env, capture_output=True, text=True, timeout=300,
    )


def _project(tmp_path: Path, files: dict[str, str]) -> Path:
    project = tmp_path / "project"
    _init_repo(project)
    for name, text in files.items():
        (project / name).write_text(text, encoding="utf-8")
    _git(project, "add", "-A")
    return project


def test_the_hook_environment_needs_no_torch() -> None:
    if sys.version_info >= (3, 11):
        import tomllib
    else:
        import tomli as tomllib

    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    assert not [d for d in deps if d.lower().startswith("torch")]


def test_check_hook_fails_on_a_bug_and_passes_a_clean_file(hook_repo: Path, env: dict[str, str], tmp_path: Path) -> None:
    project = _project(tmp_path, {"train.py": BUG, "clean.py": CLEAN})

    bad = try_repo(hook_repo, "autograd-lint", project, "train.py", env)
    assert bad.returncode == 1, bad.stdout + bad.stderr
    assert "autograd-lint" in bad.stdout and "Failed" in bad.stdout
    assert "train.py:10:9: AGL101" in bad.stdout

    good = try_repo(hook_repo, "autograd-lint", project, "clean.py", env)
    assert good.returncode == 0, good.stdout + good.stderr
    assert "Passed" in good.stdout


def test_fix_hook_rewrites_the_file_then_passes(hook_repo: Path, env: dict[str, str], tmp_path: Path, request) -> None:
    if not _fix_available():
        request.applymarker(pytest.mark.xfail(strict=False, reason="`autograd-lint --fix` is not implemented yet"))
    project = _project(tmp_path, {"train.py": FIXABLE})

    first = try_repo(hook_repo, "autograd-lint-fix", project, "train.py", env)
    # pre-commit fails a hook that modified files.
    assert first.returncode == 1, first.stdout + first.stderr
    fixed = (project / "train.py").read_text(encoding="utf-8")
    assert "opt.zero_grad(set_to_none=True)" in fixed
    assert fixed == FIXABLE.replace("set_to_none=False", "set_to_none=True")

    again = try_repo(hook_repo, "autograd-lint-fix", project, "train.py", env)
    assert again.returncode == 0, again.stdout + again.stderr
    assert "Passed" in again.stdout


def test_check_hook_takes_notebooks(hook_repo: Path, env: dict[str, str], tmp_path: Path) -> None:
    from test_notebooks import training_notebook

    project = _project(tmp_path, {"train.ipynb": training_notebook()})
    bad = try_repo(hook_repo, "autograd-lint", project, "train.ipynb", env)
    assert bad.returncode == 1, bad.stdout + bad.stderr
    assert "train.ipynb:cell 3:8:5: AGL101" in bad.stdout
