"""Private files: mode 0600 in folders of mode 0700, whatever the umask, and older installs fixed on the spot.

Everything NexusMem keeps (memory.db and its -wal/-shm, the hooks' log, locks, config, backups, crash logs,
the deny-list key) says what someone ran and where, so neither `.nexusmem/` nor `~/.nexusmem` may be
readable by other users. Modes passed to mkdir/open are masked by the umask (022 usually; 000 in some
containers), so every creation here is followed by an explicit chmod, and `fix_tree` puts right what an
older version (or a hook's shell redirect) created with the umask's modes. Stdlib only: the store and the
hot paths import it.

Symbolic links are never followed: a link is neither chmod-ed nor written through (its target may lie
outside our folder and belong to something else).
"""

from __future__ import annotations

import contextlib
import itertools
import os
import stat
from pathlib import Path

DIR_MODE = 0o700
FILE_MODE = 0o600
# How deep fix_tree looks: .nexusmem/ and ~/.nexusmem hold files and at most a level of caches.
_MAX_DEPTH = 3


def make_dir(path: Path) -> Path:
    """Create PATH (and missing parents) and make PATH itself 0700 (an existing one too). Returns PATH.

    The parents it creates are 0700 too: under umask 000 they were 0777, and whoever can write a parent can
    move PATH aside and put a folder of their own in its place (the hooks would then write into theirs)."""
    try:
        os.mkdir(path, DIR_MODE)
    except FileExistsError:
        pass
    except FileNotFoundError:
        make_parents(path)
        with contextlib.suppress(FileExistsError):
            os.mkdir(path, DIR_MODE)
    fix_mode(path)
    require_own(path)
    return path


def refuse_root_in_anothers(path: Path) -> None:
    """Refuse, running as root, to make or rewrite PATH where another user owns it (PATH itself, or the
    nearest folder above it that exists): `sudo -E nexusmem …` or `sudo -E claude` with the user's HOME made
    a root-owned ~/.nexusmem (and `hook install` rewrote their ~/.bashrc as root's), and the user's own
    shells then recorded nothing. Only for what is the user's own (the user folder, rc files, agent
    settings), and only under sudo (SUDO_UID set): a root CI container whose HOME and checkout belong to the
    runner's uid (GitHub Actions' container jobs) is used as it is."""
    if not hasattr(os, "geteuid") or os.geteuid() != 0 or not os.environ.get("SUDO_UID"):
        return
    existing = path
    while not os.path.lexists(existing) and existing != existing.parent:
        existing = existing.parent
    try:
        owner = os.stat(existing).st_uid
    except OSError:
        return
    if owner != 0:
        from nexusmem.errors import StoreError

        raise StoreError(
            f"not writing {path} as root under sudo: {existing} belongs to another user (uid {owner}), whose own"
            " NexusMem could then not use it; run this without sudo, or with sudo's own HOME (sudo -H)"
        )


def make_parents(path: Path) -> None:
    """Create PATH's missing parent folders, each 0700 whatever the umask (existing ones are left as they
    are: they are not ours)."""
    missing: list[Path] = []
    parent = path.parent
    while not parent.exists() and parent != parent.parent:
        missing.append(parent)
        parent = parent.parent
    for folder in reversed(missing):
        try:
            os.mkdir(folder, DIR_MODE)
        except FileExistsError:
            continue  # made meanwhile by someone else: not ours to change
        fix_mode(folder)


def require_own(folder: Path) -> None:
    """Refuse FOLDER (or the folder a link named FOLDER leads to) when another user owns it: whoever owns it
    can read what is kept there, and plant links in it that our writes would follow (the hooks' log). A link
    to a folder of ours is used, and that folder made 0700 (fix_mode leaves links alone)."""
    try:
        st = os.stat(folder)
    except OSError:
        return  # missing: whoever creates it next makes it ours
    if hasattr(os, "getuid") and st.st_uid != os.getuid():
        from nexusmem.errors import StoreError

        raise StoreError(
            f"{folder} belongs to another user (uid {st.st_uid}): NexusMem keeps its files only in folders you"
            " own; move it aside (NexusMem then makes one of its own there)"
        )
    if st.st_mode & 0o077 and os.path.islink(folder):
        with contextlib.suppress(OSError):
            os.chmod(os.path.realpath(folder), DIR_MODE)


def fix_mode(path: Path | str, st: os.stat_result | None = None) -> bool:
    """chmod PATH to 0700 (a folder) or 0600 (a file) when group or others have any bit; True if changed.

    Links and other users' files are left alone; a failure (read-only file system) is not an error: the
    next run tries again.
    """
    try:
        st = st or os.lstat(path)
        if stat.S_ISLNK(st.st_mode) or not st.st_mode & 0o077:
            return False
        if hasattr(os, "getuid") and st.st_uid != os.getuid():
            return False
        os.chmod(path, DIR_MODE if stat.S_ISDIR(st.st_mode) else FILE_MODE)
        return True
    except OSError:
        return False


def fix_file(path: Path | str) -> bool:
    """chmod PATH, a file of ours of any mode but 0600, to 0600; True if changed. Unlike fix_mode it gives the
    owner back read and write: a memory.db made 0400 (a chmod) left its -wal and -shm 0400 too once SQLite had
    made them from it, and every write failed on them after the database itself was made writable again.

    Links, other users' files and what is missing are left alone; a failure (an immutable file, a read-only
    mount) is not an error: the command then says what it cannot write."""
    try:
        st = os.lstat(path)
        if not stat.S_ISREG(st.st_mode) or stat.S_IMODE(st.st_mode) == FILE_MODE:
            return False
        if hasattr(os, "getuid") and st.st_uid != os.getuid():
            return False
        os.chmod(path, FILE_MODE)
        return True
    except OSError:
        return False


def fix_tree(directory: Path, depth: int = _MAX_DEPTH) -> int:
    """Make DIRECTORY 0700 and everything in it 0600/0700, without following links; how many changed.

    Costs one scandir per folder (~20 µs for the dozen files of a .nexusmem/), so it runs on every store
    open and every sync.
    """
    changed = int(fix_mode(directory))
    try:
        entries = list(os.scandir(directory))
    except OSError:
        return changed
    for entry in entries:
        try:
            st = entry.stat(follow_symlinks=False)
        except OSError:
            continue
        if stat.S_ISLNK(st.st_mode):
            continue
        if stat.S_ISDIR(st.st_mode):
            if depth > 1:
                changed += fix_tree(Path(entry.path), depth - 1)
            else:
                changed += int(fix_mode(entry.path, st))
        elif st.st_mode & 0o077:
            changed += int(fix_mode(entry.path, st))
    return changed


def open_fd(path: Path | str, flags: int) -> int:
    """os.open with O_CREAT and mode 0600 (enforced with fchmod, whatever the umask); never through a link."""
    fd = os.open(
        path, flags | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0), FILE_MODE
    )
    try:
        if os.fstat(fd).st_mode & 0o077 and hasattr(os, "fchmod"):
            os.fchmod(fd, FILE_MODE)
    except OSError:
        pass
    return fd


def touch(path: Path) -> None:
    """Create PATH empty (0600) or bump its mtime."""
    os.close(open_fd(path, os.O_WRONLY | os.O_APPEND))
    os.utime(path)


_WRITES = itertools.count()


def write_atomic(path: Path, data: bytes) -> None:
    """Write DATA to PATH atomically with mode 0600 (temp file in the same folder, fsync, rename).

    A missing folder is created 0700; an existing one is left as it is (PATH may be an export in $HOME).
    """
    if not path.parent.is_dir():
        make_dir(path.parent)
    # A name of this call's own: two threads of one process (the MCP server's) writing the same file at once
    # each rename a whole file of theirs, where one name made the second's rename find nothing.
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{next(_WRITES)}.tmp")
    fd = open_fd(tmp, os.O_WRONLY | os.O_TRUNC)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
