"""Every test starts with an empty cache of its own (subprocesses inherit
the variable): a test checks what the analysis does, not what an earlier
test left behind. The cache's own tests name their folders."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _fresh_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AUTOGRAD_LINT_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))
