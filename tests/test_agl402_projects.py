"""The AGL402 fixture sub-projects: the torch version each one targets, as
``load_settings`` sees it for its fixture files (pins inferred by
``autograd_lint.project``, or the project's own ``torch-version``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from autograd_lint.config import load_settings

ROOT = Path(__file__).resolve().parent.parent
AGL402 = ROOT / "fixtures" / "AGL402"

EXPECTED: dict[str, tuple[int, int] | None] = {
    "legacy_project/pos_train.py": (1, 10),  # pyproject: torch>=1.10,<2.0
    "requirements_project/pos_finetune.py": (1, 13),  # requirements.txt: torch==1.13.1+cu117
    "setup_cfg_project/pos_gan.py": (1, 12),  # setup.cfg: torch~=1.12.0
    "configured_project/pos_train.py": (1, 12),  # [tool.autograd-lint] torch-version = "1.12"
    "modern_project/neg_train.py": (2, 1),  # pyproject: torch>=2.1
    "optional_only_project/neg_train.py": None,  # torch only in an optional extra
    "neg_no_pin.py": None,  # no project of its own: autograd-lint's pyproject has no torch pin
    # The layout matrix (tests/test_layout_matrix.py): pyproject pins.
    **{f"layout_legacy_project/pos_layout_{x}.py": (1, 12) for x in ("a_train_function", "c_step_function", "d_trainer_methods", "e_module_level")},  # torch>=1.12,<2.0
    **{f"layout_modern_project/neg_layout_{x}.py": (2, 2) for x in ("a_train_function", "c_step_function", "d_trainer_methods", "e_module_level")},  # torch>=2.2
    "pos_layout_b_imported_model/models.py": (1, 12),
    "pos_layout_b_imported_model/train.py": (1, 12),
    "neg_layout_b_imported_model/models.py": (2, 2),
    "neg_layout_b_imported_model/train.py": (2, 2),
}


@pytest.mark.parametrize(("relpath", "expected"), sorted(EXPECTED.items()), ids=lambda v: str(v))
def test_fixture_project_torch_version(relpath: str, expected: tuple[int, int] | None) -> None:
    path = AGL402 / relpath
    assert path.is_file(), path
    settings, _ = load_settings([str(path)], None)
    assert settings.torch_version == expected


def test_every_agl402_fixture_has_an_expectation() -> None:
    files = {p.relative_to(AGL402).as_posix() for p in AGL402.rglob("*.py")}
    assert files == set(EXPECTED)


def test_positives_target_torch_1_and_negatives_do_not() -> None:
    for relpath, version in EXPECTED.items():
        targets_1x = version is not None and version < (2, 0)
        # (A module of a project fixture: the project's name says.)
        kind = next((part for part in reversed(Path(relpath).parts) if part.startswith(("pos_", "neg_"))), "")
        assert targets_1x == kind.startswith("pos_"), relpath
