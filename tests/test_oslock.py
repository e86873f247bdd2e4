"""The run and auto-sync locks (nexusmem.oslock): exclusive, bounded waits, 0600, never through a link.
Interplay with filelock holders in other processes: tests/test_git_hooks.py and tests/test_trust_disk.py."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from nexusmem.oslock import FileLock, Timeout


def test_one_holder_at_a_time_and_a_bounded_wait(tmp_path: Path) -> None:
    path = tmp_path / "run.lock"
    first, second = FileLock(path), FileLock(path)
    first.acquire(timeout=0)
    with pytest.raises(Timeout):
        second.acquire(timeout=0)
    started = time.monotonic()
    with pytest.raises(Timeout):
        second.acquire(timeout=0.3)
    assert 0.25 <= time.monotonic() - started < 3
    first.release()
    second.acquire(timeout=0)
    second.release()
    assert os.stat(path).st_mode & 0o777 == 0o600


def test_a_symlinked_lock_file_is_refused(tmp_path: Path) -> None:
    target = tmp_path / "elsewhere"
    target.write_text("keep\n", encoding="utf-8")
    link = tmp_path / "run.lock"
    link.symlink_to(target)
    with pytest.raises(OSError):
        FileLock(link).acquire(timeout=0)
    assert target.read_text(encoding="utf-8") == "keep\n"
