"""NexusMem's own files (a repository's config.json, the user-wide deny-list, a deny-list export) with bad
bytes, the wrong types or a FIFO in their place: a one-line error naming the file and exit 1, never an
internal error (exit 3) and never a command that hangs. Real processes."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from helpers import commit, console_script


def run_script(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """The console script, bounded: a file read that blocks (a FIFO) fails the test instead of hanging it."""
    return subprocess.run(
        [console_script(), *args], cwd=cwd, capture_output=True, text=True, check=False, timeout=60
    )


BAD_DOCUMENTS = [
    b'{"version": 1, "entries": [], "x": "caf\xe9"}',  # not UTF-8
    b'{"version": "two", "entries": []}',
    b'{"version": null, "entries": []}',
    b'{"version": 1, "entries": [{"key": "k", "kind": "regex", "spec": {}}]}',
]


def one_line(proc: subprocess.CompletedProcess[str], path: Path) -> None:
    assert proc.returncode == 1, (proc.returncode, proc.stdout, proc.stderr)
    assert "internal error" not in proc.stderr and "Traceback" not in proc.stderr
    assert str(path) in proc.stderr, proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr


@pytest.mark.parametrize("data", BAD_DOCUMENTS)
def test_a_bad_deny_list_file_is_named(repo: Path, isolated_home: Path, tmp_path: Path, data: bytes) -> None:
    commit(repo, "init")
    assert run_script("sync", "--no-embed", cwd=repo).returncode == 0
    export = tmp_path / "deny.json"
    export.write_bytes(data)
    one_line(run_script("forget", "--import", str(export), cwd=repo), export)
    user_wide = isolated_home / ".nexusmem" / "deny-list.json"
    user_wide.write_bytes(data)
    for args in (["sync", "--no-embed"], ["forget", "--list"]):
        one_line(run_script(*args, cwd=repo), user_wide)


def test_a_fifo_in_place_of_a_deny_list_file_is_named(
    repo: Path, isolated_home: Path, tmp_path: Path
) -> None:
    commit(repo, "init")
    assert run_script("sync", "--no-embed", cwd=repo).returncode == 0
    export = tmp_path / "deny.json"
    os.mkfifo(export)
    one_line(run_script("forget", "--import", str(export), cwd=repo), export)
    user_wide = isolated_home / ".nexusmem" / "deny-list.json"
    os.mkfifo(user_wide)
    one_line(run_script("sync", "--no-embed", cwd=repo), user_wide)


@pytest.mark.parametrize("kind", ["bytes", "fifo"])
def test_the_post_commit_sync_names_a_config_it_cannot_read(repo: Path, kind: str) -> None:
    commit(repo, "init")
    assert run_script("sync", "--no-embed", cwd=repo).returncode == 0
    config = repo / ".nexusmem" / "config.json"
    config.unlink()
    if kind == "fifo":
        os.mkfifo(config)
    else:
        config.write_bytes(b'{"version": 1, "team": {"member": "caf\xe9"}}')
    one_line(run_script("sync", "--auto", cwd=repo), config)  # a FIFO read once hung it for good
    if kind == "bytes":  # said as for the deny-list, not as Python's codec error
        said = run_script("query", "anything", cwd=repo).stderr
        assert f"{config}: not UTF-8 text (byte 38)" in said and "codec" not in said, said
