"""Fixtures only (helper functions live in tests/helpers/): every test runs with HOME and NEXUSMEM_HOME in
temp dirs and a private git config."""

from __future__ import annotations

import os
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
    # A test that dropped the isolation (`monkeypatch.undo()` undoes it too) ran against the real home.
    for key in ("HOME", "NEXUSMEM_HOME"):
        value = os.environ.get(key, "")
        assert value.startswith(str(home)), (
            f"{key} left the test's home ({value!r}): the real home was at risk"
        )


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """An empty git repository (no commits yet)."""
    return init_repo(tmp_path / "repo")


@pytest.fixture(scope="session")
def pg_server() -> Iterator[object]:
    """One real PostgreSQL + pgvector for the session (skips the test when the wheel is not importable)."""
    from helpers import pg

    why = pg.why_unavailable()
    if why is not None:
        pytest.skip(f"team store tests need a real PostgreSQL: {why}")
    server = pg.start()
    yield server
    server.stop()


@pytest.fixture
def team_url(pg_server: object) -> str:
    """The URL of a fresh, empty database on the session's PostgreSQL (no password: local sockets)."""
    from helpers.pg import PgServer

    assert isinstance(pg_server, PgServer)
    return pg_server.new_database()
