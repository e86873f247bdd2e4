"""A store another process holds: what reads wait for, how long, and what they say meanwhile. Real
repositories, a real second process holding SQLite's lock, the real command line."""

from __future__ import annotations

import json
import os
import subprocess
import threading
import time
from pathlib import Path

import pytest

from helpers import commit, console_script
from helpers.sqlite_holder import held

# A second process holding the store for seconds per test.
pytestmark = pytest.mark.slow

# The holders: a connection in exclusive locking mode (an `sqlite3` shell after `PRAGMA locking_mode =
# EXCLUSIVE`, a backup tool) keeps every reader out; a plain write transaction in WAL mode keeps out writers.
EXCLUSIVE = (
    "c.execute('PRAGMA locking_mode=EXCLUSIVE'); c.execute('BEGIN EXCLUSIVE');"
    " c.execute('SELECT count(*) FROM nodes').fetchall()"
)
WRITING = "c.execute('BEGIN IMMEDIATE')"


def synced(repo: Path) -> Path:
    from nexusmem import sync

    commit(repo, "fix(cache): readers no longer wait for the writer", {"cache.py": "WAL = True\n"})
    sync.sync(repo, embed=False)
    return repo / ".nexusmem" / "memory.db"


def first_line(stream: object, seconds: float) -> str:
    """The first line STREAM gives within SECONDS ("" if none came)."""
    got: list[str] = []
    reader = threading.Thread(target=lambda: got.append(stream.readline()), daemon=True)  # type: ignore[attr-defined]
    reader.start()
    reader.join(seconds)
    return got[0] if got else ""


def test_status_and_query_say_at_once_who_holds_the_store_then_answer_when_it_is_let_go(
    repo: Path,
) -> None:
    """An `sqlite3`-like process holding memory.db in exclusive mode: `status` and `query` printed nothing
    for ~20 s, then "the memory database failed: database is locked; run the command again". Within ~1 s
    they now say which process holds the store and how long they wait, and answer once it lets go."""
    db = synced(repo)
    with held(db, EXCLUSIVE) as holder:
        started = time.monotonic()
        commands = [("status", "--json"), ("query", "--json", "readers wait for the writer")]
        procs = [
            subprocess.Popen(
                [console_script(), *args], cwd=repo, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
            )
            for args in commands
        ]
        notes = [first_line(proc.stderr, 6) for proc in procs]
        took = time.monotonic() - started
    outs = [proc.communicate(timeout=60) for proc in procs]
    for args, note, proc, (out, err) in zip(commands, notes, procs, outs, strict=True):
        assert note.startswith(f"nexusmem: note: {db} is busy: another process holds it locked"), (args, note)
        assert f"(pid {holder.pid})" in note and "waiting up to 15 s" in note, note
        assert proc.returncode == 0, (args, out, err)
        assert json.loads(out), out
    assert took < 6, f"the notes took {took:.1f} s"


def test_a_store_held_past_the_wait_is_a_bounded_error_naming_it_and_its_holder(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same holder that does not let go: the wait ends with one error naming the store, the process
    that holds it and how to find it, not a generic "run the command again" 5 s past the busy timeout."""
    from nexusmem import project, status
    from nexusmem.errors import StoreError
    from nexusmem.store import db as store_db

    monkeypatch.setattr(store_db, "OPEN_WAIT_SECONDS", 3.0)
    db = synced(repo)
    notes: list[str] = []
    with held(db, EXCLUSIVE) as holder:
        started = time.monotonic()
        with pytest.raises(StoreError) as failed:
            status.status(project.at(repo), notes.append)
        took = time.monotonic() - started
    message = str(failed.value)
    assert message.startswith(f"{db}: another process holds it locked: "), message
    assert f"(pid {holder.pid}), still after 3 s" in message and f"fuser -v {db}" in message, message
    assert len(notes) == 1 and f"(pid {holder.pid})" in notes[0], notes
    assert took < 5, f"gave up after {took:.1f} s"


def test_a_search_does_not_wait_for_another_processs_write_to_store_the_latest_commands(repo: Path) -> None:
    """A script (or a second tool) in a write transaction on memory.db, and a command logged since the
    last sync: MCP search_memory first stores that command, and its write waited the store's 15 s busy
    timeout for the lock before the search even began. It now gives up the catch-up at once and searches
    the memory as it is (WAL readers do not wait for a writer)."""
    from nexusmem import mcp_server

    db = synced(repo)
    log = Path(os.environ["NEXUSMEM_HOME"]) / "shell-history.jsonl"
    line = {
        "ts": int(time.time() * 1000),
        "cwd": str(repo),
        "command": "make check",
        "exit": 2,
        "shell": "bash",
    }
    log.write_text(json.dumps(line) + "\n", encoding="utf-8")
    with held(db, WRITING):
        started = time.monotonic()
        answer = mcp_server.run_search(str(repo), "readers wait for the writer", 500, None)
        took = time.monotonic() - started
    assert not answer.is_error and "readers no longer wait" in answer.content[0].text, answer  # type: ignore[union-attr]
    assert took < 5, f"the search waited {took:.1f} s for another process's write"
    # Let go, the next search stores the command first.
    answer = mcp_server.run_search(str(repo), "make check", 500, None)
    assert "make check" in answer.content[0].text, answer  # type: ignore[union-attr]
