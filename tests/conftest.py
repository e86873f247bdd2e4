"""Fixtures only (helper functions live in tests/helpers/): every test runs with HOME and NEXUSMEM_HOME in
temp dirs and a private git config."""

from __future__ import annotations

import os
import sys
import tempfile
import threading
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
    # The vectors' loading thread a test started ends before its environment is put back (above).
    vector = sys.modules.get("nexusmem.retrieve.vector")
    if vector is not None:
        for thread in threading.enumerate():
            if thread.name == vector.WARM_THREAD:
                thread.join(timeout=60)
    # A test that dropped the isolation (`monkeypatch.undo()` undoes it too) ran against the real home.
    for key in ("HOME", "NEXUSMEM_HOME"):
        value = os.environ.get(key)
        assert not _in_real_home(value if value is not None or key == "NEXUSMEM_HOME" else ""), (
            f"{key} is {value!r} after the test: it ran against the real home"
        )


# The home of whoever runs the tests, read before any test isolates itself.
_REAL_HOME = os.path.realpath(os.environ.get("HOME") or os.path.expanduser("~"))


def _in_real_home(value: str | None) -> bool:
    """Whether VALUE (a HOME or NEXUSMEM_HOME; None: unset) is the real home or inside it."""
    if value is None:
        return False  # NEXUSMEM_HOME unset: the isolated HOME's folder
    if not value:
        return True
    if _REAL_HOME in ("/", os.path.realpath(tempfile.gettempdir())):
        return False  # a CI whose HOME is the temp folder: every test's home is inside it
    real = os.path.realpath(value)
    return real == _REAL_HOME or real.startswith(_REAL_HOME + os.sep)


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
