"""Inferring the targeted torch version from a project's own dependency pins."""

from __future__ import annotations

from pathlib import Path

import pytest

from _cli_support import write
from autograd_lint.config import CliOverrides, load_settings
from autograd_lint.project import (
    find_project_root,
    infer_torch_version,
    min_allowed_version,
    parse_requirement,
    torch_version_from_requirements,
)

ROOT = Path(__file__).resolve().parent.parent


def _git_root(tmp_path: Path) -> Path:
    """A repository root, so that the project search never leaves tmp_path."""
    (tmp_path / ".git").mkdir()
    return tmp_path


# --- specifiers ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("==1.13.1", (1, 13)),
        ("==1.13.*", (1, 13)),
        ("==2.1.*", (2, 1)),
        ("===1.12.0", (1, 12)),
        (">=1.10", (1, 10)),
        (">=1.10,<2.0", (1, 10)),
        ("<2.0,>=1.10", (1, 10)),
        (">=2.0", (2, 0)),
        (">=2", (2, 0)),
        (">=2.0.0rc1", (2, 0)),
        (">1.13", (1, 13)),
        (">1.13.1", (1, 13)),
        ("~=1.12", (1, 12)),
        ("~=1.12.1", (1, 12)),
        ("==1.13.1+cu117", (1, 13)),
        (">=1.8,!=1.12.0", (1, 8)),
        (">= 1.9 , < 1.14", (1, 9)),
        ("<2", (1, 0)),
        ("<2.0", (1, 0)),
        ("<=2.0", (1, 0)),
        ("<1.13", (1, 0)),
        ("<3", None),
        ("<2.3", None),
        ("!=2.0.0", None),
        ("", None),
        ("latest", None),
        ("==", None),
    ],
)
def test_min_allowed_version(spec: str, expected: tuple[int, int] | None) -> None:
    assert min_allowed_version(spec) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("torch>=1.10", ("torch", ">=1.10")),
        ("torch", ("torch", "")),
        ("Torch == 1.13.1", ("torch", "== 1.13.1")),
        ("torch[cuda]>=1.12,<2", ("torch", ">=1.12,<2")),
        ("torch>=1.10; python_version < '3.11'", ("torch", ">=1.10")),
        ("torch (>=1.10)", ("torch", ">=1.10")),
        ("torch @ https://download.pytorch.org/whl/torch-1.13.1.whl", ("torch", None)),
        ("torchvision>=0.14", ("torchvision", ">=0.14")),
        ("pytorch_lightning==1.9", ("pytorch-lightning", "==1.9")),
        ("", None),
        ("[broken", None),
    ],
)
def test_parse_requirement(text: str, expected: tuple[str, str | None] | None) -> None:
    assert parse_requirement(text) == expected


def test_other_packages_do_not_count() -> None:
    assert torch_version_from_requirements(["torchvision==0.14.1", "torchaudio<2", "pytorch-lightning>=1.5"]) is None


def test_lowest_pin_wins_and_unreadable_pins_are_skipped() -> None:
    reqs = ["torch>=2.1", "torch @ git+https://github.com/pytorch/pytorch", "torch==1.13.1"]
    assert torch_version_from_requirements(reqs) == (1, 13)


# --- project root ---------------------------------------------------------------


def test_root_is_nearest_marker_folder(tmp_path: Path) -> None:
    root = _git_root(tmp_path)
    write(root / "pyproject.toml", "[project]\nname = 'outer'\n")
    write(root / "sub" / "requirements-dev.txt", "torch==1.12.1\n")
    f = write(root / "sub" / "src" / "pkg" / "train.py", "")
    assert find_project_root(f) == root / "sub"
    assert find_project_root(root / "sub" / "src") == root / "sub"
    assert find_project_root(root) == root


def test_root_search_stops_at_git_folder(tmp_path: Path) -> None:
    write(tmp_path / "pyproject.toml", "[project]\ndependencies = ['torch==1.10']\n")
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    f = write(repo / "scripts" / "train.py", "")
    assert find_project_root(f) is None
    assert infer_torch_version(f) is None


def test_nonexistent_file_starts_from_its_folder(tmp_path: Path) -> None:
    root = _git_root(tmp_path)
    write(root / "requirements.txt", "torch==1.13.1\n")
    assert infer_torch_version(root / "not_yet_written.py") == (1, 13)


# --- sources ---------------------------------------------------------------------


def test_pyproject_dependencies(tmp_path: Path) -> None:
    root = _git_root(tmp_path)
    write(root / "pyproject.toml", '[project]\nname = "x"\ndependencies = ["numpy", "torch>=1.10,<2.0"]\n')
    assert infer_torch_version(root) == (1, 10)


def test_pyproject_optional_dependencies_are_ignored(tmp_path: Path) -> None:
    root = _git_root(tmp_path)
    write(
        root / "pyproject.toml",
        '[project]\nname = "x"\ndependencies = ["numpy"]\n\n'
        '[project.optional-dependencies]\nlegacy = ["torch==1.12.1"]\n',
    )
    assert infer_torch_version(root) is None


def test_pyproject_unpinned_torch(tmp_path: Path) -> None:
    root = _git_root(tmp_path)
    write(root / "pyproject.toml", '[project]\nname = "x"\ndependencies = ["torch"]\n')
    assert infer_torch_version(root) is None


def test_invalid_pyproject_is_no_information(tmp_path: Path) -> None:
    root = _git_root(tmp_path)
    write(root / "pyproject.toml", "[project\ndependencies = ['torch==1.10']\n")
    assert infer_torch_version(root) is None


def test_requirements_with_comments_markers_and_extras(tmp_path: Path) -> None:
    root = _git_root(tmp_path)
    write(
        root / "requirements.txt",
        "# core\n"
        "--extra-index-url https://download.pytorch.org/whl/cu116\n"
        "numpy>=1.21  # arrays\n"
        "torch[opt-einsum]==1.12.1+cu116 ; platform_system == 'Linux'  # pinned for the cluster\n"
        "-e .\n",
    )
    assert infer_torch_version(root) == (1, 12)


def test_requirements_line_continuation(tmp_path: Path) -> None:
    root = _git_root(tmp_path)
    write(root / "requirements.txt", "torch>=1.11 \\\n    ,<2\n")
    assert infer_torch_version(root) == (1, 11)


def test_requirements_includes(tmp_path: Path) -> None:
    root = _git_root(tmp_path)
    write(root / "requirements.txt", "-r requirements/base.txt\n")
    write(root / "requirements" / "base.txt", "numpy\n--requirement=torch.txt\n")
    write(root / "requirements" / "torch.txt", "torch~=1.13.0\n-r base.txt\n")
    assert infer_torch_version(root) == (1, 13)


def test_requirements_glob_covers_variants(tmp_path: Path) -> None:
    root = _git_root(tmp_path)
    write(root / "requirements-gpu.txt", "torch<2\n")
    assert infer_torch_version(root) == (1, 0)


def test_requirements_direct_url_is_unknown(tmp_path: Path) -> None:
    root = _git_root(tmp_path)
    write(root / "requirements.txt", "torch @ https://download.pytorch.org/whl/cu117/torch-1.13.1.whl\n")
    assert infer_torch_version(root) is None


def test_setup_cfg_install_requires(tmp_path: Path) -> None:
    root = _git_root(tmp_path)
    write(
        root / "setup.cfg",
        "[metadata]\nname = legacy\n\n[options]\npackages = find:\ninstall_requires =\n"
        "    numpy>=1.19\n    torch>=1.9,<1.14  # CUDA 11.3 wheels\n\n"
        "[options.extras_require]\nnew = torch>=2.1\n",
    )
    assert infer_torch_version(root) == (1, 9)


def test_setup_cfg_without_install_requires(tmp_path: Path) -> None:
    root = _git_root(tmp_path)
    write(root / "setup.cfg", "[metadata]\nname = x\n")
    assert infer_torch_version(root) is None


def test_setup_py_is_a_marker_only(tmp_path: Path) -> None:
    root = _git_root(tmp_path)
    write(root / "requirements.txt", "torch==1.13.1\n")
    write(root / "tools" / "setup.py", "from setuptools import setup\nsetup(install_requires=['torch==1.8'])\n")
    f = write(root / "tools" / "run.py", "")
    assert find_project_root(f) == root / "tools"
    assert infer_torch_version(f) is None


def test_modern_pin(tmp_path: Path) -> None:
    root = _git_root(tmp_path)
    write(root / "pyproject.toml", '[project]\nname = "x"\ndependencies = ["torch>=2.1"]\n')
    assert infer_torch_version(root) == (2, 1)


def test_no_information(tmp_path: Path) -> None:
    root = _git_root(tmp_path)
    f = write(root / "train.py", "")
    assert infer_torch_version(f) is None


def test_this_repository_has_no_pin() -> None:
    # autograd-lint's own torch is an optional extra.
    assert infer_torch_version(ROOT / "fixtures" / "AGL101") is None


# --- load_settings ---------------------------------------------------------------


def test_load_settings_infers_from_pins(tmp_path: Path) -> None:
    root = _git_root(tmp_path)
    write(root / "requirements.txt", "torch==1.13.1\n")
    f = write(root / "train.py", "")
    settings, _ = load_settings([str(f)], None)
    assert settings.torch_version == (1, 13)


def test_load_settings_directory_path(tmp_path: Path) -> None:
    root = _git_root(tmp_path)
    write(root / "pyproject.toml", '[project]\nname = "x"\ndependencies = ["torch>=1.10,<2"]\n')
    write(root / "src" / "train.py", "")
    settings, _ = load_settings([str(root / "src")], None)
    assert settings.torch_version == (1, 10)


def test_explicit_config_wins_over_pins(tmp_path: Path) -> None:
    root = _git_root(tmp_path)
    write(
        root / "pyproject.toml",
        '[project]\nname = "x"\ndependencies = ["torch==1.12.1"]\n\n[tool.autograd-lint]\ntorch-version = "2.1"\n',
    )
    f = write(root / "train.py", "")
    settings, _ = load_settings([str(f)], None)
    assert settings.torch_version == (2, 1)


def test_cli_torch_version_wins_over_pins(tmp_path: Path) -> None:
    root = _git_root(tmp_path)
    write(root / "requirements.txt", "torch==1.12.1\n")
    f = write(root / "train.py", "")
    settings, _ = load_settings([str(f)], None, CliOverrides(torch_version="2.2"))
    assert settings.torch_version == (2, 2)


def test_explicit_config_file_without_version_still_infers(tmp_path: Path) -> None:
    root = _git_root(tmp_path)
    write(root / "requirements.txt", "torch>=1.11\n")
    cfg = write(root / "lint" / "autograd-lint.toml", 'select = ["AGL1"]\n')
    f = write(root / "train.py", "")
    settings, _ = load_settings([str(f)], str(cfg))
    assert settings.torch_version == (1, 11)


def test_stdin_filename_anchors_inference(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = _git_root(tmp_path)
    write(root / "proj" / "requirements.txt", "torch==1.10.2\n")
    monkeypatch.chdir(root)
    settings, _ = load_settings(["-"], None, CliOverrides(stdin_filename=str(root / "proj" / "x.py")))
    assert settings.torch_version == (1, 10)
