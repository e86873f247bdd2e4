"""Opening the database: one SQLite library (sqlean's bundled SQLite) for every connection to a file.

The stdlib sqlite3 of many Pythons cannot load extensions (sqlite-vec); mixing two SQLite builds on one
file breaks newer FTS5/vec0 features, so every connection goes through here.
"""

from __future__ import annotations

import os
from pathlib import Path

import sqlean

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (~4 ms of a cold precheck)
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

DRIVER = "sqlean.py"
BUSY_TIMEOUT_MS = 15_000


def sqlite_version() -> str:
    return str(sqlean.sqlite_version)


def memory() -> Any:
    """A private in-memory database on the same SQLite build as the store's files (same tokenizers)."""
    return sqlean.connect(":memory:", isolation_level=None, check_same_thread=False)


def copy_to(conn: Any, target: Path) -> None:
    """A consistent copy of CONN's database at TARGET, which must not exist (SQLite's online backup API: it
    reads CONN, so CONN must hold no write transaction), in one file (no -wal) created with mode 0600.

    The new file is written with no journal and synced once at the end (it is no one's database until this
    returns): 0.5 s for a 200 MB memory where a write-ahead log written and checkpointed took 1.3 s."""
    os.close(os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    dest = sqlean.connect(str(target), isolation_level=None, check_same_thread=False)
    try:
        dest.execute("PRAGMA journal_mode = OFF")
        dest.execute("PRAGMA synchronous = OFF")
        conn.backup(dest)
        dest.execute("PRAGMA journal_mode = DELETE")
    finally:
        dest.close()
    fd = os.open(target, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
    os.chmod(target, 0o600)


def connect(
    path: Path | str,
    *,
    readonly: bool = False,
    busy_ms: int = BUSY_TIMEOUT_MS,
    guard: Callable[[Any], None] | None = None,
    immutable: bool = False,
) -> Any:
    """A connection in autocommit mode (we BEGIN explicitly), WAL, with a generous busy timeout (BUSY_MS:
    a commit hook waits less). GUARD sees the connection before anything is set that writes the file
    (WAL mode is kept in the file's header), and may refuse it by raising (it closes nothing).

    Readers never take a write lock, so an agent's search keeps answering while a sync writes. IMMUTABLE
    (READONLY only): the file is read as it is, without locks or the -shm file, for a disk too full to make
    it (what a write-ahead log holds is not seen: only for a store without one).
    """
    if readonly:
        uri = f"file:{Path(path).as_posix()}?mode=ro" + ("&immutable=1" if immutable else "")
        conn = sqlean.connect(
            uri, uri=True, isolation_level=None, timeout=busy_ms / 1000, check_same_thread=False
        )
    else:
        conn = sqlean.connect(
            str(path), isolation_level=None, timeout=busy_ms / 1000, check_same_thread=False
        )
    conn.execute(f"PRAGMA busy_timeout = {int(busy_ms)}")
    if guard is not None:
        try:
            guard(conn)
        except BaseException:
            conn.close()
            raise
    if not readonly:
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = NORMAL")
        # Every row deleted or rewritten, and every page freed, is zeroed as it goes: a commit a rebase
        # dropped (a leaked value) leaves the file with the sync that prunes it, and so do the older copies
        # of its row an update or a full-text merge left in free space. Measured on the 10,000-commit
        # benchmark store (100k nodes): an amend's post-commit sync and a rebuild within the noise.
        conn.execute("PRAGMA secure_delete = ON")
    conn.execute("PRAGMA foreign_keys = ON")
    conn.execute("PRAGMA temp_store = MEMORY")
    conn.execute("PRAGMA cache_size = -32000")
    return conn
