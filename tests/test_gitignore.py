"""File discovery and git: ``respect-gitignore`` (on by default, only inside a
git repository, as with ruff), ``force-exclude`` for paths named on the
command line, ``--show-files``, and the warning when nothing is found."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from _cli_support import CLEAN_SOURCE, RETENTION_LOOP, SYNTAX_ERROR_SOURCE, pyproject, run, write
from autograd_lint.discovery import DiscoveryOptions, discover_files
from autograd_lint.gitignore import user_excludes_file

NO_FILES = "autograd-lint: warning: No Python files found under the given path(s)\n"


@pytest.fixture(autouse=True)
def _no_user_git_config(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The developer's own git configuration (a global excludes file) must
    not change what these tests see."""
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    return home


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A git repository (detection is by its ``.git`` folder, as git's own)."""
    root = tmp_path / "repo"
    (root / ".git" / "info").mkdir(parents=True)
    monkeypatch.chdir(root)
    return root


def found(root: Path, *paths: str, **options: object) -> list[str]:
    result = discover_files([str(root / p) for p in paths or ["."]], DiscoveryOptions(root=str(root), **options))  # type: ignore[arg-type]
    assert result.errors == [] and result.missing == []
    return [Path(os.path.relpath(f, root)).as_posix() for f in result.files]


def test_gitignored_folder_skipped_unless_disabled(repo: Path) -> None:
    write(repo / ".gitignore", "wandb/\n*_pb2.py\n")
    for name in ("train.py", "wandb/run/files/code.py", "proto/model_pb2.py", "proto/model.py"):
        write(repo / name, "")
    assert found(repo) == ["proto/model.py", "train.py"]
    assert found(repo, respect_gitignore=False) == ["proto/model.py", "proto/model_pb2.py", "train.py", "wandb/run/files/code.py"]


def test_ignored_folder_is_not_descended(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # git re-includes nothing inside an excluded folder: the "!" line changes nothing.
    write(repo / ".gitignore", "wandb/\n!wandb/deep/x.py\n")
    write(repo / "wandb" / "deep" / "x.py", "")
    write(repo / "a.py", "")
    listed: list[str] = []
    real_scandir = os.scandir

    def scandir(path):  # type: ignore[no-untyped-def]
        listed.append(os.path.basename(os.fspath(path)))
        return real_scandir(path)

    monkeypatch.setattr(os, "scandir", scandir)
    assert found(repo) == ["a.py"]
    assert "wandb" not in listed and "deep" not in listed


def test_nested_gitignore_applies_to_its_folder_and_below(repo: Path) -> None:
    write(repo / ".gitignore", "*.gen.py\n")
    write(repo / "pkg" / ".gitignore", "/local.py\nscratch/\n")
    for name in ("local.py", "a.gen.py", "pkg/local.py", "pkg/sub/local.py", "pkg/scratch/x.py", "pkg/sub/b.gen.py", "scratch/y.py"):
        write(repo / name, "")
    # "/local.py" is anchored to pkg/; "scratch/" applies in pkg/ and below only.
    assert found(repo) == ["local.py", "pkg/sub/local.py", "scratch/y.py"]


def test_negation_and_deeper_file_wins(repo: Path) -> None:
    write(repo / ".gitignore", "generated/*\n!generated/keep.py\nlegacy_*.py\n")
    write(repo / "app" / ".gitignore", "!legacy_api.py\n")
    for name in ("generated/drop.py", "generated/keep.py", "legacy_a.py", "app/legacy_api.py", "app/legacy_b.py"):
        write(repo / name, "")
    assert found(repo) == ["app/legacy_api.py", "generated/keep.py"]


def test_whitelist_idiom(repo: Path) -> None:
    # Ignore everything but folders and Python files.
    write(repo / ".gitignore", "*\n!*/\n!*.py\n")
    for name in ("src/m.py", "src/n.ipynb", "top.py"):
        write(repo / name, "")
    assert found(repo) == ["src/m.py", "top.py"]


def test_no_reinclusion_inside_an_ignored_folder(repo: Path) -> None:
    # As git: a file cannot be re-included once its folder is excluded.
    write(repo / ".gitignore", "out/\n")
    write(repo / "out" / ".gitignore", "!keep.py\n")
    write(repo / "out" / "keep.py", "")
    assert found(repo) == []


def test_info_exclude_and_global_excludes(repo: Path, _no_user_git_config: Path) -> None:
    write(repo / ".git" / "info" / "exclude", "# comment\nlocal_only.py\n")
    write(_no_user_git_config / ".config" / "git" / "ignore", "scratch_*.py\n")
    for name in ("local_only.py", "scratch_1.py", "keep.py"):
        write(repo / name, "")
    assert found(repo) == ["keep.py"]
    # A .gitignore's negation outranks both.
    write(repo / ".gitignore", "!scratch_1.py\n")
    assert found(repo) == ["keep.py", "scratch_1.py"]


def test_core_excludes_file_from_git_config(repo: Path, _no_user_git_config: Path) -> None:
    excludes = write(_no_user_git_config / "my-ignores", "secret_*.py\n")
    write(_no_user_git_config / ".gitconfig", '[user]\n\tname = x\n[core]\n\texcludesFile = "~/my-ignores"  # mine\n')
    assert user_excludes_file() == str(excludes)
    write(repo / "secret_a.py", "")
    write(repo / "b.py", "")
    assert found(repo) == ["b.py"]
    # The repository's own config wins over the user's.
    write(repo / ".git" / "config", "[core]\n\texcludesfile = /nonexistent/ignore\n")
    assert found(repo) == ["b.py", "secret_a.py"]


def test_worktree_git_file_points_to_the_git_folder(tmp_path: Path) -> None:
    common = tmp_path / "main.git"
    write(common / "worktrees" / "wt" / "commondir", "../..\n")
    write(common / "info" / "exclude", "x.py\n")
    wt = tmp_path / "wt"
    write(wt / ".git", f"gitdir: {common / 'worktrees' / 'wt'}\n")
    write(wt / "x.py", "")
    write(wt / "y.py", "")
    assert found(wt) == ["y.py"]


def test_outside_a_repository_gitignore_is_not_read(tmp_path: Path) -> None:
    write(tmp_path / ".gitignore", "wandb/\n")
    write(tmp_path / "wandb" / "x.py", "")
    assert found(tmp_path) == ["wandb/x.py"]


def test_nested_repository_starts_afresh(repo: Path) -> None:
    write(repo / ".gitignore", "*.tmp.py\n")
    (repo / "vendor" / "lib" / ".git").mkdir(parents=True)
    write(repo / "vendor" / "lib" / "a.tmp.py", "")
    write(repo / "b.tmp.py", "")
    assert found(repo) == ["vendor/lib/a.tmp.py"]


def test_named_paths_and_force_exclude(repo: Path) -> None:
    write(repo / ".gitignore", "wandb/\n*.gen.py\n")
    for name in ("wandb/x.py", "wandb/y.gen.py", "src/a.gen.py", "src/b.py"):
        write(repo / name, "")
    # Named paths are linted though ignored; inside a named folder the
    # other patterns still apply.
    assert found(repo, "wandb") == ["wandb/x.py"]
    assert found(repo, "src/a.gen.py", "src") == ["src/a.gen.py", "src/b.py"]
    # force-exclude: a named path is skipped as a walk would skip it.
    assert found(repo, "wandb", "wandb/x.py", "src/a.gen.py", "src/b.py", force_exclude=True) == ["src/b.py"]
    assert found(repo, "wandb/x.py", force_exclude=True, respect_gitignore=False) == ["wandb/x.py"]


def test_force_exclude_applies_excludes_to_named_files(tmp_path: Path) -> None:
    for name in ("gen/out.py", "build/x.py", "src/z.py", "src/m.py"):
        write(tmp_path / name, "")
    named = ("gen/out.py", "build/x.py", "src/z.py", "src/m.py")
    assert found(tmp_path, *named, exclude=("gen", "z.py")) == list(sorted(named))
    assert found(tmp_path, *named, exclude=("gen", "z.py"), force_exclude=True) == ["src/m.py"]
    # The project root's own name is not excluded (a project in a folder named "build").
    project = tmp_path / "build"
    assert found(project, "x.py", force_exclude=True) == ["x.py"]


# --- the command line -----------------------------------------------------------


@pytest.fixture
def project(repo: Path) -> Path:
    write(repo / ".gitignore", "wandb/\n")
    write(repo / "train.py", CLEAN_SOURCE)
    write(repo / "wandb" / "run" / "code.py", SYNTAX_ERROR_SOURCE)
    return repo


def test_cli_respects_gitignore_by_default(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(capsys, "-q", ".")[0] == 0
    code, out, _ = run(capsys, "--format", "concise", "--no-respect-gitignore", ".")
    assert code == 1 and out.startswith("wandb/run/code.py:3:7: AGL001")
    # The command line wins over the configuration, both ways.
    pyproject(project, "respect-gitignore = false\n")
    assert run(capsys, "-q", ".")[0] == 1
    assert run(capsys, "-q", "--respect-gitignore", ".")[0] == 0


def test_config_keys_are_validated(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pyproject(project, 'force-exclude = "yes"\n')
    code, _, err = run(capsys, ".")
    assert code == 2
    assert err == f"autograd-lint: error: {project / 'pyproject.toml'}: 'force-exclude' must be true or false, got a string\n"
    pyproject(project, "respect_gitignore = false\n")
    code, _, err = run(capsys, ".")
    assert code == 2 and "(did you mean 'respect-gitignore'?)" in err


def test_cli_force_exclude(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write(project / "gen" / "broken.py", SYNTAX_ERROR_SOURCE)
    # Named files are linted, excluded or ignored...
    assert run(capsys, "-q", "--extend-exclude", "gen", "gen/broken.py", "wandb/run/code.py")[0] == 1
    # ...unless --force-exclude (what the pre-commit hooks pass), or the config says so.
    code, out, err = run(capsys, "--force-exclude", "--extend-exclude", "gen", "gen/broken.py", "wandb/run/code.py", "train.py")
    assert (code, out, err) == (0, "All checks passed!\n", "")
    pyproject(project, 'force-exclude = true\nextend-exclude = ["gen"]\n')
    assert run(capsys, "-q", "gen/broken.py")[0] == 0
    assert run(capsys, "-q", "--no-force-exclude", "gen/broken.py")[0] == 1


def test_show_files(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write(project / "pkg" / "nb.ipynb", "{}")
    write(project / "notes.txt", "")
    assert run(capsys, "--show-files", ".") == (0, "pkg/nb.ipynb\ntrain.py\n", "")
    assert run(capsys, "--show-files", "--no-respect-gitignore", ".") == (0, "pkg/nb.ipynb\ntrain.py\nwandb/run/code.py\n", "")
    # It lints nothing (the broken file is listed, not reported), not even with --fix.
    assert run(capsys, "--show-files", "--fix", "wandb") == (0, "wandb/run/code.py\n", "")
    code, _, err = run(capsys, "--show-files", "nope")
    assert code == 2 and err == "autograd-lint: error: nope: no such file or directory\n"


def test_no_files_found_warns(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (project / "empty").mkdir()
    assert run(capsys, "empty") == (0, "All checks passed!\n", NO_FILES)
    assert run(capsys, "--show-files", "empty") == (0, "", NO_FILES)
    assert run(capsys, "--force-exclude", "wandb/run/code.py")[2] == NO_FILES
    assert run(capsys, "--fix", "empty")[::2] == (0, NO_FILES)


def test_fix_obeys_discovery(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write(repo / ".gitignore", "wandb/\n")
    ignored = write(repo / "wandb" / "train.py", RETENTION_LOOP)
    tracked = write(repo / "train.py", RETENTION_LOOP)
    assert run(capsys, "-q", "--fix", ".")[0] == 0
    assert ignored.read_text() == RETENTION_LOOP
    assert tracked.read_text() != RETENTION_LOOP and ".detach()" in tracked.read_text()
    # And --fix with --force-exclude leaves a named ignored file alone.
    assert run(capsys, "-q", "--fix", "--force-exclude", "wandb/train.py")[0] == 0
    assert ignored.read_text() == RETENTION_LOOP


def test_pre_commit_hooks_force_exclude() -> None:
    # pre-commit names every staged file: the configured excludes and git's
    # ignore rules must still apply (as ruff's hook does).
    hooks = (Path(__file__).resolve().parent.parent / ".pre-commit-hooks.yaml").read_text(encoding="utf-8")
    entries = [line.split(":", 1)[1].split() for line in hooks.splitlines() if line.strip().startswith("entry:")]
    assert entries and all(e[0] == "autograd-lint" and "--force-exclude" in e for e in entries)


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_agrees_with_git(repo: Path) -> None:
    """What git itself ignores, on a tree with each kind of pattern."""
    shutil.rmtree(repo / ".git")
    subprocess.run(["git", "init", "-q", str(repo)], check=True, capture_output=True)
    write(repo / ".git" / "info" / "exclude", "excluded_*.py\n")
    write(repo / ".gitignore", "wandb/\n/top_only.py\n*.gen.py\ndata/*\n!data/keep.py\nlogs\nout/\n!out/keep.py\na/**\n!a/keep.py\n")
    write(repo / "pkg" / ".gitignore", "!again.gen.py\nlocal/\n")
    names = [
        "a.py", "top_only.py", "pkg/top_only.py", "x.gen.py", "pkg/again.gen.py", "pkg/other.gen.py",
        "pkg/local/y.py", "local/z.py", "data/keep.py", "data/drop.py", "wandb/w.py", "pkg/wandb/w.py",
        "logs/l.py", "pkg/logs/l.py", "excluded_1.py", "pkg/excluded_2.py", "out/keep.py", "a/keep.py", "a/b.py",
    ]  # fmt: skip
    for name in names:
        write(repo / name, "")
    listed = subprocess.run(
        ["git", "ls-files", "--others", "--exclude-standard", "--", "*.py"], cwd=repo, check=True, capture_output=True, text=True
    ).stdout.split()
    assert found(repo) == sorted(listed)
    assert found(repo) == ["a.py", "a/keep.py", "data/keep.py", "local/z.py", "pkg/again.gen.py", "pkg/top_only.py"]
