"""Telling a damaged or full store from a passing failure, and saying what to do about it.

A SQLite error surfaces as the driver's own exception (OperationalError "no such table", DatabaseError
"database disk image is malformed", "database or disk is full"). The commands turn it into one line that
names the database and the fix; after a failed write, sync asks SQLite itself (`PRAGMA quick_check`) whether
the file is still whole, because "the disk was full" and "pages were overwritten" need different advice.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import sqlean

from nexusmem.errors import StoreError

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (~4 ms of a cold precheck)
if TYPE_CHECKING:
    from typing import Any

# Every driver failure (OperationalError, IntegrityError, DatabaseError...) derives from this.
DriverError = sqlean.Error

# Tables every migrated store has (the vector table is made on first use); a file missing one was damaged
# by hand or by another program, and some command fails on it ("no such table", "run the command again").
REQUIRED_TABLES = (
    "nodes",
    "node_files",
    "links",
    "sources",
    "meta",
    "nodes_fts",
    "schema_migrations",
    "nodes_stem",
    "nodes_vocab",
    "nodes_cjk",
    "node_vectors",
    "commit_generations",
    "contradiction_checks",
    "deny_list",
    "hygiene_audit",
    "import_edges",
    "import_files",
    "releases",
    "tombstones",
)

# quick_check reads every page: 0.9 s for a 25 MB store, 3.7 s for 120 MB (~36 ms/MB, measured by
# benchmarks/bench_health.py on a busy 2-core machine). The check at the end of every sync is for stores up
# to END_CHECK_MAX_BYTES, bounded by CHECK_SECONDS; after a failed write it always runs (FAILURE_SECONDS).
CHECK_SECONDS = 2.0
FAILURE_SECONDS = 30.0
END_CHECK_MAX_BYTES = 32_000_000
_PROGRESS_OPS = 10_000


def missing_tables(conn: Any) -> list[str]:
    """REQUIRED_TABLES that CONN's database lacks (one read of sqlite_master)."""
    have = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    return [name for name in REQUIRED_TABLES if name not in have]


def quick_check(conn: Any, seconds: float = CHECK_SECONDS) -> list[str] | None:
    """SQLite's own verdict on the file: [] when whole, else its first problems; None when it did not
    finish within SECONDS (a very large store) or could not run at all."""
    deadline = time.monotonic() + seconds
    conn.set_progress_handler(lambda: int(time.monotonic() > deadline), _PROGRESS_OPS)
    try:
        rows = conn.execute("PRAGMA quick_check(10)").fetchall()
    except DriverError as exc:
        if "interrupted" in str(exc):
            return None
        return [str(exc)]
    finally:
        conn.set_progress_handler(None, 0)
    # One problem may span lines ("Tree 3 page 318: ...\nTree 3 page 316: ..."): one line each for messages.
    problems = [
        line
        for row in rows
        for line in str(row[0]).splitlines()
        if line.strip() and not line.startswith("*** in database")
    ]
    return [] if problems == ["ok"] else problems


def check_file(path: Path, seconds: float = CHECK_SECONDS, busy_seconds: float = 5.0) -> list[str] | None:
    """quick_check on a fresh read-only connection to PATH (the failed one may be in any state), waiting up
    to BUSY_SECONDS for another process's lock."""
    try:
        conn = sqlean.connect(f"file:{path.as_posix()}?mode=ro", uri=True, timeout=busy_seconds)
    except DriverError as exc:
        return [str(exc)]
    try:
        return quick_check(conn, seconds)
    finally:
        conn.close()


def is_locked(problems: list[str]) -> bool:
    """Whether check_file's PROBLEMS only say another process held the database locked ("database is
    locked"): the file was not read, so nothing is known about it."""
    return bool(problems) and all("is locked" in p for p in problems)


def is_locked_error(exc: BaseException) -> bool:
    """Whether a driver error says another connection held the database past the busy timeout."""
    text = str(exc).lower()
    return "database is locked" in text or "database table is locked" in text


def lock_holders(path: Path) -> list[int]:
    """The other processes (pids) holding a write lock on the database PATH (a connection in exclusive
    locking mode, a rollback-journal writer: readers wait for these) or on the write slot of its -shm (a
    writer in WAL mode: writers wait for it). Read from /proc/locks (Linux; [] elsewhere): SQLite's locks are
    POSIX byte-range locks, listed there with the file's device and inode."""
    wanted: dict[str, bool] = {}  # "maj:min:inode" -> whether any write lock counts (else byte 120 only)
    for name, whole in ((str(path), True), (f"{path}-shm", False)):
        try:
            st = os.stat(name)
        except OSError:
            continue
        wanted[f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"] = whole
    pids: list[int] = []
    try:
        with open("/proc/locks", encoding="ascii", errors="replace") as locks:
            rows = locks.read().splitlines()
    except OSError:
        return pids
    for row in rows:
        fields = row.split()
        # "1: POSIX  ADVISORY  WRITE 6285 fe:00:6030012 1073741826 1073742335"; "->" marks a waiter
        if len(fields) < 8 or fields[1] == "->" or fields[3] != "WRITE" or fields[5] not in wanted:
            continue
        if not wanted[fields[5]] and fields[6] != "120":  # the -shm's WAL_WRITE_LOCK byte
            continue
        pid = int(fields[4]) if fields[4].isdigit() else 0
        if pid and pid != os.getpid() and pid not in pids:
            pids.append(pid)
    return pids


def _process(pid: int) -> str:
    """What process PID is, in a few words: "a nexusmem sync", or its name ("sqlite3"); its command line
    stays unsaid (it may hold a password)."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            argv = f.read().split(b"\0")
        with open(f"/proc/{pid}/comm", encoding="utf-8", errors="replace") as f:
            name = f.read().strip()
    except OSError:
        return f"pid {pid}"
    words = [os.path.basename(a.decode("utf-8", "replace")) for a in argv[:4]]
    if "nexusmem" in words:  # `nexusmem sync`, `python -m nexusmem sync`
        verb = next((w for w in words[words.index("nexusmem") + 1 :] if w and not w.startswith("-")), "")
        if verb.isalpha():
            return f"a `nexusmem {verb}` (pid {pid})"
    return f"{name or 'a process'} (pid {pid})"


def held_by(path: Path) -> str:
    """Who holds the database PATH locked, for a message: "another process holds it locked: sqlite3
    (pid 6285)", or without the names where the system does not say (not Linux)."""
    holders = [_process(pid) for pid in lock_holders(path)[:3]]
    return "another process holds it locked" + (f": {', '.join(holders)}" if holders else "")


def locked_problem(path: Path, seconds: float | None = None) -> StoreError:
    """The error for a database PATH another process held locked (for SECONDS): who, and how to find it."""
    import shlex

    held = shlex.quote(str(path))
    after = f", still after {seconds:.0f} s" if seconds is not None else ""
    return StoreError(
        f"{path}: {held_by(path)}{after}; let it finish (a long sync, an open `sqlite3`"
        f" shell, a backup?) or find it with `fuser -v {held}` (or `lsof {held}`), then run the command again"
    )


def no_room_to_open(path: Path) -> bool:
    """Whether the database PATH failed to open for want of room for its -shm file: the disk holding it
    is full and no write-ahead log holds what the file lacks (SQLite removes it when the last connection
    closes), so the file alone is the memory as it was last written."""
    try:
        if os.statvfs(path.parent).f_bavail > 0:
            return False
        return os.stat(f"{path}-wal").st_size == 0
    except FileNotFoundError as exc:
        return bool(exc.filename == f"{path}-wal")
    except OSError:
        return False


def holds_nothing(path: Path) -> bool:
    """Whether the database PATH is an empty file with no write-ahead log to replay: what a first sync
    stopped before its first write leaves, or a file cut short."""
    try:
        if path.stat().st_size:
            return False
        return os.stat(f"{path}-wal").st_size == 0
    except FileNotFoundError as exc:
        return bool(exc.filename == f"{path}-wal")  # no -wal: empty; no database: not a database at all
    except OSError:
        return False


def foreign_tables(conn: Any) -> list[str]:
    """The tables (at most five) of a database no NexusMem migration ever ran on, though it holds some:
    another program's SQLite file where memory.db should be. [] for a memory, or a new empty file."""
    from nexusmem.store.migrations import current_version

    if current_version(conn) != 0:
        return []
    return [
        str(row[0])
        for row in conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name LIMIT 5"
        )
    ]


def foreign_problem(path: Path, tables: list[str]) -> str:
    return (
        f"{path} is not a NexusMem memory (it holds another program's table(s): {', '.join(tables)}), and is left"
        f" as it is: move it aside ({damaged_moves(path)}) and run `nexusmem sync` to build the memory"
    )


def shape_problem(path: Path) -> tuple[str, bool] | None:
    """What makes PATH unusable though SQLite finds the file whole, and whether it is damage (else it was
    written by a newer NexusMem): (what, damaged), or None when nothing does. A file no migration has run
    on yet is not a problem here: the next sync sets it up."""
    from nexusmem.store.migrations import LATEST, current_version

    conn = sqlean.connect(f"file:{path.as_posix()}?mode=ro", uri=True, timeout=5)
    try:
        version = current_version(conn)
        foreign = foreign_tables(conn) if version == 0 else []
        if foreign:
            return f"not a NexusMem memory: it holds another program's table(s) {', '.join(foreign)}", True
        if version > LATEST:
            return f"written by a newer NexusMem (schema {version}; this one reads up to {LATEST})", False
        missing = (
            missing_tables(conn) if version == LATEST else []
        )  # an older store: the next sync migrates it
    finally:
        conn.close()
    return (f"table(s) {', '.join(missing)} missing", True) if missing else None


def looks_damaged(exc: BaseException) -> bool:
    """Whether a driver error speaks of the file itself rather than of one statement."""
    text = str(exc).lower()
    return any(word in text for word in ("malformed", "not a database", "corrupt", "no such table"))


def _cannot_write(exc: BaseException) -> bool:
    text = str(exc).lower()
    return "unable to open" in text or "readonly" in text or "read-only" in text


def _immutable(name: str) -> bool:
    """Whether the file NAME has the immutable flag (`chattr +i`), which keeps even root from writing it;
    False where that cannot be asked (not Linux)."""
    try:
        import fcntl
        import struct

        fd = os.open(name, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
        try:
            flags = fcntl.ioctl(fd, 0x80086601, bytes(8))  # FS_IOC_GETFLAGS
        finally:
            os.close(fd)
        return bool(struct.unpack("=i", flags[:4])[0] & 0x10)  # FS_IMMUTABLE_FL
    except (OSError, ImportError):
        return False


def unwritable(path: Path) -> tuple[str, str, str] | None:
    """(the file, what keeps this process from writing it, the shell command that fixes it) for the first of
    the database PATH, its -wal and its -shm this process cannot both read and write (SQLite then opens it
    read-only and fails every write: "attempt to write a readonly database"); None when there is none."""
    import shlex
    import stat

    root = hasattr(os, "geteuid") and os.geteuid() == 0
    for name in (str(path), f"{path}-wal", f"{path}-shm"):
        try:
            st = os.stat(name)
        except OSError:
            continue
        if os.access(name, os.R_OK | os.W_OK):
            continue
        held, mode = shlex.quote(name), stat.S_IMODE(st.st_mode)
        sudo = "" if root else "sudo "
        if hasattr(os, "getuid") and st.st_uid != os.getuid():
            what = f"{name} is not writable: it belongs to another user (uid {st.st_uid}; mode {mode:04o})"
            return name, what, f'{sudo}chown "$(id -u):$(id -g)" {held} && chmod 600 {held}'
        if mode & 0o600 != 0o600:
            return (
                name,
                f"{name} is {mode:04o}: you cannot {'read' if not mode & 0o400 else 'write'} it",
                (f"chmod 600 {held}"),
            )
        if _immutable(name):
            return (
                name,
                f"{name} is not writable (immutable: `lsattr` shows its i flag)",
                f"{sudo}chattr -i {held}",
            )
        return name, f"{name} is not writable (a read-only mount?)", f"make {held} writable"
    return None


def is_disk_full(exc: BaseException) -> bool:
    text = str(exc).lower()
    return "disk is full" in text or "file too large" in text or "no space left" in text


def damaged_moves(path: Path) -> str:
    """The shell commands that move the database PATH aside with its -wal and -shm, which go with it: a WAL
    left beside the new database the next sync makes would be replayed into it."""
    import shlex

    db, aside = shlex.quote(str(path)), shlex.quote(f"{path}.damaged")
    return f"mv {db} {aside} && {{ mv {db}-wal {aside}-wal; mv {db}-shm {aside}-shm; }} 2>/dev/null"


def damaged_advice(path: Path) -> str:
    return (
        f"move it aside ({damaged_moves(path)}) and run `nexusmem sync` to rebuild it from git, docs and the"
        " shell log, or restore it from a backup"
    )


def explain(path: Path, exc: BaseException, *, writing: bool) -> StoreError:
    """One StoreError saying what happened to PATH and what to do. After a failed write (WRITING), the file
    is checked first: a full disk leaves it whole, overwritten pages do not."""
    if is_disk_full(exc):
        return StoreError(
            f"{path}: the disk is full ({exc}). Nothing half-written was kept (each source is one "
            "transaction): free some space and run the command again."
        )
    if not os.access(path.parent, os.W_OK) and _cannot_write(exc):
        return StoreError(
            f"{path.parent} is not writable (a read-only file system or its permissions): NexusMem writes "
            "its lock and write-ahead log there even to read; make it writable and run the command again"
        )
    found = unwritable(path) if _cannot_write(exc) else None
    if found is not None:
        # Not damage, and nothing a second run changes: "run the command again" failed the same way.
        name, what, fix = found
        reads = " (reading it still works)" if os.access(name, os.R_OK) else ""
        return StoreError(f"{what}, so no sync can write the memory{reads}; make it writable: {fix}")
    if is_locked_error(exc):
        # Not damage, and asking the file anything more would wait for the same lock (5 s more).
        return locked_problem(path)
    missing = []
    try:
        conn = sqlean.connect(f"file:{path.as_posix()}?mode=ro", uri=True, timeout=5)
        try:
            missing = missing_tables(conn)
        finally:
            conn.close()
    except DriverError:
        pass
    if missing:
        return StoreError(
            f"{path} is damaged: table(s) {', '.join(missing)} missing ({exc}); {damaged_advice(path)}"
        )
    problems = check_file(path, FAILURE_SECONDS) if writing or looks_damaged(exc) else []
    if problems:
        return StoreError(
            f"{path} is damaged ({exc}; quick_check: {problems[0]}"
            + (f" and {len(problems) - 1} more" if len(problems) > 1 else "")
            + f"); {damaged_advice(path)}"
        )
    whole = problems == [] and writing
    if "i/o error" in str(exc).lower():
        # What a full disk or a file-size limit (EFBIG) looks like to SQLite mid-write.
        return StoreError(
            f"{path}: a write failed ({exc}): the disk may be full or failing, or a file-size limit was hit. "
            + ("The store checks out whole (quick_check) and " if whole else "")
            + "nothing half-written was kept: free some space and run the command again."
        )
    verdict = " (quick_check found the file whole)" if whole else ""
    return StoreError(f"{path}: the memory database failed: {exc}{verdict}; run the command again")
