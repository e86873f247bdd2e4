"""Fixtures only (helper functions live in tests/helpers/): every test runs with HOME and NEXUSMEM_HOME in
temp dirs and a private git config."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from helpers.env import isolate
from helpers.git import init_repo


@pytest.fixture(autouse=True)
def isolated_home(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Path]:
    """Never touch the real home: HOME, NEXUSMEM_HOME and git's global config point at temp dirs."""
    home = tmp_path_factory.mktemp("home")
    isolate(home, monkeypatch)
    yield home


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """An empty git repository (no commits yet)."""
    return init_repo(tmp_path / "repo")
