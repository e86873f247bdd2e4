"""An exclusive OS lock on a file: fcntl.flock on POSIX, the filelock package elsewhere (Windows).

filelock did the same flock on POSIX, but importing it (logging, secrets, decimal, dataclasses, inspect ...)
was ~15 ms of every cold `nexusmem sync`, a twentieth of a no-op re-sync. The lock is the same OS lock on
the same file, so processes of either kind exclude each other; the OS drops it when its holder dies, even by
SIGKILL. The file is created 0600 and never opened through a symlink (private.open_fd).
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from nexusmem import private

POLL_SECONDS = 0.05  # what filelock polls at


class Timeout(Exception):
    """The lock was still held by another process when the timeout ran out."""


class FileLock:
    """acquire(timeout) / release() of an exclusive lock on PATH; not re-entrant (one holder per object)."""

    def __init__(self, path: Path | str) -> None:
        self.path = str(path)
        self._fd: int | None = None
        self._other: Any = None  # filelock's lock where fcntl is missing

    def acquire(self, timeout: float = -1) -> None:
        """Take the lock, waiting up to TIMEOUT seconds (0: try once; negative: wait for ever)."""
        try:
            import fcntl
        except ImportError:  # pragma: no cover - Windows
            from filelock import FileLock as _Portable
            from filelock import Timeout as _PortableTimeout

            self._other = self._other or _Portable(self.path, mode=0o600)
            try:
                self._other.acquire(timeout=timeout)
            except _PortableTimeout:
                raise Timeout(self.path) from None
            return
        fd = private.open_fd(self.path, os.O_RDWR)
        deadline = time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                if timeout >= 0 and time.monotonic() >= deadline:
                    os.close(fd)
                    raise Timeout(self.path) from None
                time.sleep(POLL_SECONDS)
                continue
            except BaseException:
                os.close(fd)
                raise
            self._fd = fd
            return

    def release(self) -> None:
        """Give the lock back (closing the file releases the flock)."""
        if self._other is not None:  # pragma: no cover - Windows
            self._other.release()
            return
        if self._fd is not None:
            fd, self._fd = self._fd, None
            os.close(fd)


def held(path: Path | str) -> bool:
    """Whether another process holds the lock on PATH now (a missing file: no). Asked with a shared lock
    that is let go at once; never creates the file."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows: not asked
        return False
    try:
        fd = os.open(str(path), os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    except OSError:
        return False
    finally:
        os.close(fd)
    return False
