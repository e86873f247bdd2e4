"""Store: every read and write of memory.db. Callers see Python values, never SQL."""

from __future__ import annotations

import contextlib
import functools
import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nexusmem.errors import StoreError
from nexusmem.private import fix_file, fix_tree, make_dir, open_fd, require_own
from nexusmem.store import connection, health, migrations
from nexusmem.store.cjk import CjkIndexMixin
from nexusmem.store.cursors import CursorsMixin
from nexusmem.store.fulltext import FullTextMixin
from nexusmem.store.generations import GenerationsMixin
from nexusmem.store.hygiene import HygieneMixin
from nexusmem.store.imports import ImportsMixin
from nexusmem.store.links import LinksMixin
from nexusmem.store.nodes import NodesMixin
from nexusmem.store.releases import ReleasesMixin
from nexusmem.store.sessions import SessionsMixin
from nexusmem.store.vectors import VectorIndexMixin

# Meta key of the store write sequence: bumped once by every batch of node inserts or changes, stamped on
# the rows it wrote (nodes.written). Unlike a clock it never repeats and never goes back.
WRITE_SEQ_KEY = "store.write_seq"


class Store(
    NodesMixin,
    FullTextMixin,
    LinksMixin,
    CursorsMixin,
    VectorIndexMixin,
    CjkIndexMixin,
    HygieneMixin,
    ImportsMixin,
    ReleasesMixin,
    GenerationsMixin,
    SessionsMixin,
):
    """A migrated connection to one project's memory.db."""

    # Retrieval may keep the vectors of a long-running process's store in memory (retrieve.vector).
    in_memory_copy = True
    # Local memory holds this machine's nodes only: `--author me` needs no member (see SearchStore.member).
    member = ""

    def __init__(self, conn: Any, path: Path) -> None:
        self.conn = conn
        self.path = path
        self._savepoints = 0
        self._wrote = False  # a write transaction was begun: a failure then gets the full store check
        self.migrated: list[int] = []  # the migrations opening it applied (open_store)

    def close(self) -> None:
        if self._mirror is not None:  # matching_each's in-memory copy of the word indexes
            self._mirror.close()
            self._mirror = None
        self.conn.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, exc_type: object, exc: BaseException | None, tb: object) -> None:
        """Closes; a driver error escaping the block becomes a StoreError that names the file and the fix
        (after a failed write, or any sign of damage, SQLite's quick_check is asked first)."""
        if exc is None:
            self.close()
            return
        with suppress(health.DriverError):  # the block's own error is the one to report
            self.close()
        if isinstance(exc, health.DriverError):
            raise health.explain(self.path, exc, writing=self._wrote) from exc

    def quick_check(self, seconds: float = health.CHECK_SECONDS) -> list[str] | None:
        """[] when SQLite finds the file whole, else its first problems; None when not finished in time."""
        return health.quick_check(self.conn, seconds)

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """BEGIN IMMEDIATE ... COMMIT, rolled back on any error (a killed sync leaves the store whole).

        Inside an open transaction it is a SAVEPOINT instead, so a caller can make several steps one unit.
        """
        if self.conn.in_transaction:
            self._savepoints += 1
            name = f"nm_{self._savepoints}"
            self.conn.execute(f"SAVEPOINT {name}")
            try:
                yield
            except BaseException:
                self._undo(f"ROLLBACK TO {name}", f"RELEASE {name}")
                raise
            self.conn.execute(f"RELEASE {name}")
            return
        self.conn.execute("BEGIN IMMEDIATE")
        self._wrote = True
        try:
            yield
        except BaseException:
            self._undo("ROLLBACK")
            raise
        self.conn.execute("COMMIT")

    def set_busy(self, ms: int) -> None:
        """Wait up to MS milliseconds for another connection's lock from now on (SQLite's busy timeout)."""
        self.conn.execute(f"PRAGMA busy_timeout = {int(ms)}")

    def _undo(self, *statements: str) -> None:
        """Roll back after a failure, keeping the failure as what is raised: a write that fills the disk makes
        SQLite roll the whole transaction back itself, and a ROLLBACK after it ("cannot rollback - no
        transaction is active") would hide "database or disk is full"."""
        if not self.conn.in_transaction:
            return
        with contextlib.suppress(health.DriverError):
            for statement in statements:
                self.conn.execute(statement)

    def driver(self) -> str:
        """Which SQLite library and version serve this store, e.g. "sqlean.py (SQLite 3.45.1)"."""
        return f"{connection.DRIVER} (SQLite {connection.sqlite_version()})"

    def schema_version(self) -> int:
        return migrations.current_version(self.conn)

    def _next_write_seq(self) -> int:
        """Bump the store write sequence and return the new value (inside the caller's transaction)."""
        row = self.conn.execute(
            "INSERT INTO meta(key, value) VALUES (?, '1') ON CONFLICT(key) DO UPDATE"
            " SET value = CAST(value AS INTEGER) + 1 RETURNING value",
            (WRITE_SEQ_KEY,),
        ).fetchone()
        return int(row[0])

    def write_seq(self) -> int:
        """The store write sequence: how many node-writing batches this store has seen (0: none yet)."""
        value = self.get_meta(WRITE_SEQ_KEY)
        return int(value) if value is not None and value.isdigit() else 0

    def get_meta(self, key: str) -> str | None:
        row = self.conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return row[0] if row else None

    def delete_meta(self, key: str) -> None:
        self.conn.execute("DELETE FROM meta WHERE key = ?", (key,))

    def set_meta(self, key: str, value: str) -> None:
        self.conn.execute(
            "INSERT INTO meta(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            (key, value),
        )

    def checkpoint(self) -> None:
        self.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    def truncate_wal(self) -> bool:
        """Copy the WAL into the database and truncate it, without waiting for a reader that holds an old
        snapshot (an MCP server mid-query; the WAL is then left as it is): after a prune, the WAL's older
        frames may still hold the rows it deleted. Outside a transaction. True when it was truncated."""
        row = self.conn.execute("PRAGMA busy_timeout").fetchone()
        self.conn.execute("PRAGMA busy_timeout = 0")
        try:
            done = self.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
        finally:
            self.conn.execute(f"PRAGMA busy_timeout = {int(row[0])}")
        return done is not None and int(done[0]) == 0


def drop_orphans(path: Path) -> bool:
    """Remove the -wal and -shm of a database PATH that is gone (deleted while a sync wrote it): SQLite
    would replay that write-ahead log into the next memory.db made there, pages of a file that no longer
    exists laid over a new one. Nothing is removed while PATH exists. True when something was."""
    if os.path.lexists(path):
        return False
    removed = False
    for name in (f"{path}-wal", f"{path}-shm"):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(name)
            removed = True
    return removed


def _ours(path: Path, conn: Any) -> None:
    """Refuse another program's database at PATH before anything is written into it (WAL mode included)."""
    foreign = health.foreign_tables(conn)
    if foreign:
        raise StoreError(health.foreign_problem(path, foreign))


# How long opening a store waits for another process's lock before it says who holds it (WAITING), and how
# long in all before it gives up with that: a connection in exclusive locking mode (an `sqlite3` shell), or a
# sync's write while the store needs a migration, keeps every reader out. A WAL writer keeps out no reader.
NOTICE_SECONDS = 1.0
OPEN_WAIT_SECONDS = connection.BUSY_TIMEOUT_MS / 1000


def open_store(
    path: Path,
    *,
    create: bool = False,
    readonly: bool = False,
    note: Callable[[str], None] | None = None,
    keep_old: bool = True,
) -> Store:
    """Open (and migrate) a project's memory.db. Without CREATE a missing file is an error, not a new DB.

    A store another process holds locked is waited for up to OPEN_WAIT_SECONDS; after NOTICE_SECONDS,
    NOTE (if given) is told who holds it, and at the end a StoreError says so and how to find it. READONLY
    on a full disk, where SQLite cannot make the -shm file every connection needs, reads the file as it was
    last written (nothing waits in a write-ahead log then) and NOTE is told so. Upgrading a memory an older
    release wrote keeps a copy of the old one first (pre_upgrade_copy), unless not KEEP_OLD."""
    if not create and not path.exists():
        from nexusmem.errors import NotInitialisedError

        raise NotInitialisedError(f"no memory database at {path}: run `nexusmem init` (or `nexusmem sync`)")
    if path.is_dir():
        raise StoreError(
            f"{path} is a folder, not a memory database: move it aside (mv {path} {path}.aside) and run"
            " `nexusmem sync` to build the memory again"
        )
    # 0600 files in a 0700 folder whatever the umask: SQLite gives -wal and -shm the mode of the database
    # file, so creating that one 0600 covers them; an older install's 0644 files are fixed here. To write,
    # the three are made 0600 whatever they were: a read of a 0400 memory.db leaves its -wal and -shm 0400,
    # and SQLite fails every write on them ("attempt to write a readonly database") once the database is
    # writable again.
    require_own(path.parent)  # another user's folder (or a link to one) is refused, not used
    with contextlib.suppress(OSError):
        if create and not path.exists():
            make_dir(path.parent)
            drop_orphans(path)
            os.close(open_fd(path, os.O_RDWR))
        fix_tree(path.parent)
        if not readonly:
            for name in (path, f"{path}-wal", f"{path}-shm"):
                fix_file(name)
    started = time.monotonic()
    busy = NOTICE_SECONDS
    while True:
        try:
            conn, migrated = _connect(path, readonly, busy, keep_old=keep_old)
            break
        except health.DriverError as exc:
            waited = time.monotonic() - started
            if readonly and health.no_room_to_open(path):
                try:
                    conn, migrated = _connect(path, readonly, busy, immutable=True, keep_old=keep_old)
                except health.DriverError as again:
                    raise health.explain(path, again, writing=False) from again
                if note is not None:
                    note(
                        f"the disk holding {path.parent} is full: memory read as it was last written, without"
                        " the lock files SQLite makes beside it; a sync needs free space"
                    )
                break
            if not health.is_locked_error(exc):
                raise health.explain(path, exc, writing=False) from exc
            if waited >= OPEN_WAIT_SECONDS - 0.1:
                raise health.locked_problem(path, waited) from exc
            if busy == NOTICE_SECONDS and note is not None:
                note(f"{path} is busy: {health.held_by(path)}; waiting up to {OPEN_WAIT_SECONDS:.0f} s…")
            busy = OPEN_WAIT_SECONDS - waited
    conn.execute(f"PRAGMA busy_timeout = {connection.BUSY_TIMEOUT_MS}")
    store = Store(conn, path)
    store.migrated = migrated
    if _tell_now:
        tell_upgrade(path)
    return store


# What a migration of a memory that already had a schema keeps first: a copy of the old one, which the release
# that wrote it can still read (README, Upgrading and going back).
PRE_UPGRADE_PATTERN = ".pre-v*.bak"
# The notice of that upgrade, left in the memory's folder until a command prints it (tell_upgrade).
UPGRADE_NOTICE_NAME = "upgrade-notice"
_tell_now = True


def pre_upgrade_copy(path: Path, version: int) -> Path:
    """Where the copy of the memory at PATH as schema VERSION left it is kept: memory.db.pre-vNN.bak."""
    return path.with_name(f"{path.name}.pre-v{version}.bak")


def pre_upgrade_copies(path: Path) -> list[tuple[int, Path]]:
    """The copies earlier upgrades kept of the memory at PATH (regular files), oldest schema first."""
    found = []
    for copy in path.parent.glob(path.name + PRE_UPGRADE_PATTERN):
        number = copy.name[len(path.name) + len(".pre-v") : -len(".bak")]
        if number.isdigit() and copy.is_file() and not copy.is_symlink():
            found.append((int(number), copy))
    return sorted(found)


def tell_upgrades_later() -> None:
    """For the processes a hook or an agent starts (the post-commit sync, the MCP server): an upgrade is not
    printed there (into a log no one reads, or an agent's stderr); the next command that opens the memory in
    a terminal says it, and `doctor` names the copy kept."""
    global _tell_now
    _tell_now = False


def tell_upgrade(path: Path) -> None:
    """Print (on stderr) and clear the notice an upgrade of the memory at PATH left, if one is waiting."""
    import sys

    notice = path.with_name(UPGRADE_NOTICE_NAME)
    try:
        text = notice.read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        return
    if text:
        sys.stderr.write(text + "\n")
        sys.stderr.flush()
    with suppress(OSError):
        notice.unlink()


def _keep_old(path: Path, version: int) -> None:
    """Copy the memory at PATH as schema VERSION left it to pre_upgrade_copy (0600), replacing the one an
    earlier upgrade from that version kept, and leave the notice of the upgrade. Run by the migration while it
    holds the write lock, so nothing is written between the copy and the upgrade."""
    target = pre_upgrade_copy(path, version)
    partial = target.with_name(target.name + ".part")
    try:
        for leftover in (partial, Path(f"{partial}-wal"), Path(f"{partial}-shm")):
            with suppress(FileNotFoundError):
                leftover.unlink()
        reader = connection.connect(path, readonly=True)
        try:
            # A memory whose project id held a credential of the origin URL is re-keyed by this upgrade
            # (migration 17) so that no file keeps the credential: a copy of it would keep it, so none is made.
            unclean = Store(reader, path).unclean_project_id() is not None
            if not unclean:
                connection.copy_to(reader, partial)
        finally:
            reader.close()
        if unclean:
            kept = "no copy of the old one was kept: its project id held a credential of the origin URL"
        else:
            os.replace(partial, target)
            kept = f"a copy of the old one is {target}"
        notice = path.with_name(UPGRADE_NOTICE_NAME)
        with suppress(FileNotFoundError):
            notice.unlink()
        fd = open_fd(notice, os.O_WRONLY | os.O_CREAT | os.O_EXCL)
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(
                f"nexusmem: memory upgraded from schema {version} to {migrations.LATEST} ({kept}; older NexusMem"
                " releases can no longer read this memory)\n"
            )
    except (OSError, health.DriverError) as exc:
        with suppress(OSError):
            partial.unlink()
        raise StoreError(
            f"{path} needs its upgrade (schema {version} to {migrations.LATEST}), and the copy of the old memory"
            f" kept first could not be written ({exc}): free some space in {path.parent}, then run the command"
            " again"
        ) from exc


def _connect(
    path: Path, readonly: bool, busy: float, *, immutable: bool = False, keep_old: bool = True
) -> tuple[Any, list[int]]:
    """A migrated connection to PATH whose opening waits up to BUSY seconds for another process's lock, and
    the migrations applied; a driver error (the lock still held) is raised as it is, the connection closed.
    IMMUTABLE (with READONLY): SQLite reads the file alone, with no lock and no -shm."""
    conn = None
    migrated: list[int] = []
    before = functools.partial(_keep_old, path) if keep_old else None
    try:
        conn = connection.connect(
            path,
            readonly=readonly,
            busy_ms=int(busy * 1000),
            guard=functools.partial(_ours, path),
            immutable=immutable,
        )
        if not readonly:
            migrated = migrations.migrate(conn, before=before)
        elif migrations.readable_version(conn) < migrations.LATEST:
            if immutable:  # no room for the -shm file on that disk, so none for the migration's writes
                raise StoreError(
                    f"{path} needs its upgrade (a migration to this release's schema), and the disk holding it"
                    " has no room for it: free some space; then any command upgrades it"
                )
            conn.close()
            conn = connection.connect(path, busy_ms=int(busy * 1000))
            migrated = migrations.migrate(conn, before=before)
        missing = health.missing_tables(conn)
        if missing:
            raise StoreError(
                f"{path} is damaged: table(s) {', '.join(missing)} missing; {health.damaged_advice(path)}"
            )
    except BaseException as exc:
        if conn is not None:
            with suppress(health.DriverError):
                conn.close()
        if isinstance(exc, (StoreError, health.DriverError)):
            raise
        if isinstance(exc, Exception):
            raise StoreError(f"{path}: cannot open the memory database: {exc}") from exc
        raise
    return conn, migrated


if TYPE_CHECKING:
    from nexusmem.store.interface import LinkStore, SearchStore, SyncStore

    def _implements(store: Store) -> tuple[SearchStore, LinkStore, SyncStore]:
        """mypy checks here that Store implements every Protocol of the interface."""
        return store, store, store
