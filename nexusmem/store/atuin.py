"""Reading atuin's shell history database (`history.db`) without disturbing atuin: read-only, WAL-safe.

atuin (crates/atuin-client/migrations) keeps one `history` row per command: `timestamp` and `duration` in
NANOseconds, `exit` and `duration` -1 while the command runs (or when its end hook never fired),
`deleted_at` (ns) for a soft delete, and since 2026 `author`, `author_kind` (1 user, 2 agent, NULL unknown),
`intent` and `shell`; an older database lacks those columns and reads them as NULL.

atuin writes it in WAL mode while we read. The file is opened with the URI `mode=ro` (never `immutable=1`,
which ignores the WAL and can read stale or torn pages) and a busy timeout, and every row comes from one read
transaction: a consistent snapshot, while atuin keeps writing (a WAL reader never blocks the writer).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

from nexusmem.errors import StoreError

BUSY_TIMEOUT_MS = 5_000
_OPTIONAL = ("author", "author_kind", "shell")


class AtuinError(StoreError):
    """atuin's database could not be opened or is not one."""


@dataclass(frozen=True, slots=True)
class AtuinRow:
    id: str
    timestamp_ns: int
    duration_ns: int
    exit: int
    command: str
    cwd: str
    session: str
    hostname: str
    author: str | None
    author_kind: int | None
    shell: str | None


def _text_or_bytes(raw: bytes) -> str | bytes:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw


def _connect(path: Path) -> Any:
    import sqlean

    uri = f"file:{quote(path.resolve().as_posix(), safe='/:')}?mode=ro"
    try:
        conn = sqlean.connect(uri, uri=True, isolation_level=None, timeout=BUSY_TIMEOUT_MS / 1000)
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        # A text that is not UTF-8 comes back as its bytes, for the caller to skip that one row: the default
        # decoder raised, and one such row stopped every row before and after it.
        conn.text_factory = _text_or_bytes
        columns = {row[1] for row in conn.execute("PRAGMA table_info(history)")}
    except sqlean.Error as exc:
        raise AtuinError(f"cannot read atuin's database {path}: {exc}") from exc
    if not {"id", "timestamp", "duration", "exit", "command", "cwd", "session", "hostname"} <= columns:
        conn.close()
        raise AtuinError(f"{path} is not atuin's history database (no history table with its columns)")
    return conn, columns


def read_history(path: Path, since_ns: int) -> Iterator[AtuinRow]:
    """Every row not deleted with timestamp >= SINCE_NS, oldest first, from one snapshot of PATH.

    Rows still running (exit or duration -1) are included: the caller decides (it keeps its cursor before
    them so their end is read later)."""
    import sqlean

    conn, columns = _connect(path)
    picked = ", ".join(name if name in columns else f"NULL AS {name}" for name in _OPTIONAL)
    deleted = "AND deleted_at IS NULL" if "deleted_at" in columns else ""
    try:
        conn.execute("BEGIN")
        cursor = conn.execute(
            "SELECT id, timestamp, duration, exit, command, cwd, session, hostname, "
            f"{picked} FROM history WHERE timestamp >= ? {deleted} ORDER BY timestamp, id",
            (since_ns,),
        )
        while True:
            rows = cursor.fetchmany(1000)
            if not rows:
                break
            for r in rows:
                yield AtuinRow(*r)
    except sqlean.Error as exc:
        raise AtuinError(f"cannot read atuin's database {path}: {exc}") from exc
    finally:
        conn.close()
