"""A sync killed at any moment (SIGKILL, no cleanup) leaves the store whole, and the next sync finishes it."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from helpers import console_script, git, typed_in_bash

ROOT = Path(__file__).resolve().parent.parent
MAKE_HISTORY = ROOT / "benchmarks" / "eval" / "make_history.py"


def counts(db: Path) -> dict[str, int]:
    import sqlean

    conn = sqlean.connect(str(db))
    try:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if "schema_migrations" not in tables:
            # Killed after the file was created but before the first migration committed (a loaded
            # machine gets there at 0.4 s): an empty database, which the next sync migrates. Whole.
            assert "nodes" not in tables, tables
            return {}
        fts = conn.execute("SELECT COUNT(*) FROM nodes_fts WHERE nodes_fts MATCH 'feat OR fix'").fetchone()[0]
        by_kind = dict(conn.execute("SELECT kind, COUNT(*) FROM nodes GROUP BY kind").fetchall())
        by_kind["_fts_hits"] = fts
        return by_kind
    finally:
        conn.close()


def running_sync(repo: Path, *args: str) -> subprocess.Popen[str]:
    """`nexusmem sync -q --no-embed ARGS` started in REPO, given back once it is well inside its work (its
    unfinished mark is there, and 0.3 s more): still running, to be stopped."""
    mark = repo / ".nexusmem" / "sync.unfinished"
    proc = subprocess.Popen(
        [console_script(), "sync", "-q", "--no-embed", *args],
        cwd=repo,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        # Ctrl-C as a terminal delivers it: a test run started as a background job without job control
        # (`(cmd &)`, some CI runners) hands its children SIGINT ignored, and the sync then ran to its end.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    deadline = time.monotonic() + 30
    while not mark.exists() and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.02)
    time.sleep(0.3)
    assert proc.poll() is None, "the sync ended before it could be stopped"
    return proc


@pytest.mark.slow
def test_sigkill_at_any_point_leaves_a_whole_store(tmp_path: Path) -> None:
    subprocess.run(
        [sys.executable, str(MAKE_HISTORY), str(tmp_path / "h"), "--commits", "1500", "--shell-lines", "10"],
        check=True,
        capture_output=True,
    )
    repo = tmp_path / "h" / "repo"
    reference = tmp_path / "reference"
    git(tmp_path, "clone", "-q", str(repo), str(reference))
    git(reference, "remote", "remove", "origin")
    env = {**os.environ}
    # The complete result, from an undisturbed sync of an identical clone (same commits, same files).
    shutil.rmtree(reference / ".nexusmem", ignore_errors=True)
    done = subprocess.run([console_script(), "sync", "-q", "--no-embed"], cwd=reference, env=env, check=False)
    assert done.returncode == 0
    full = counts(reference / ".nexusmem" / "memory.db")
    assert full["git_commit"] > 1500

    db = repo / ".nexusmem" / "memory.db"
    for delay in (0.4, 0.8, 1.2, 1.6, 2.0):
        proc = subprocess.Popen(
            [console_script(), "sync", "-q", "--no-embed"],
            cwd=repo,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        time.sleep(delay)
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
        if not db.exists():
            continue
        now = counts(db)
        # Each source commits its nodes, pruning and cursor together: all of a source or none of it.
        for kind in ("git_commit", "code_diff", "doc_section"):
            assert now.get(kind, 0) in (0, full[kind]), (delay, kind, now, full)
    finish = subprocess.run(
        [console_script(), "sync", "--json", "--no-embed"], cwd=repo, env=env, capture_output=True, text=True
    )
    assert finish.returncode == 0, finish.stderr
    assert json.loads(finish.stdout)["total_nodes"] == sum(
        v for k, v in full.items() if not k.startswith("_")
    )
    assert counts(db) == full
    assert (
        json.loads(
            subprocess.run(
                [console_script(), "status", "--json"], cwd=repo, capture_output=True, text=True
            ).stdout
        )["sync_unfinished"]
        is None
    )  # said while a killed sync was the last; not once one ended


@pytest.mark.slow
@pytest.mark.parametrize("route", ["plain", "click"])
def test_ctrl_c_during_a_sync_exits_130_and_the_next_sync_finishes(tmp_path: Path, route: str) -> None:
    """Ctrl-C (SIGINT) in the middle of a first sync: "Aborted!", exit 130 as a shell reports an interrupted
    command (a script can tell it from a failure), the store whole, and the next sync completes it. `sync -q`
    is answered without click (cli/plain.py), `--source git` by click: both end alike."""
    subprocess.run(
        [sys.executable, str(MAKE_HISTORY), str(tmp_path / "h"), "--commits", "5000", "--shell-lines", "10"],
        check=True,
        capture_output=True,
    )
    repo = tmp_path / "h" / "repo"
    extra = ["--source", "git"] if route == "click" else []
    db = repo / ".nexusmem" / "memory.db"
    proc = running_sync(repo, *extra)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    assert err.strip().endswith("Aborted!"), err
    assert "Traceback" not in err
    counts(db)  # integrity_check: whole
    status = subprocess.run([console_script(), "status"], cwd=repo, capture_output=True, text=True).stdout
    assert "was stopped before it ended" in status, status  # the memory is incomplete: status says so
    again = subprocess.run(
        [console_script(), "sync", "--json", "--no-embed", *extra], cwd=repo, capture_output=True, text=True
    )
    assert again.returncode == 0, again.stderr
    assert counts(db)["git_commit"] > 5000


@pytest.mark.slow
def test_a_killed_rebuild_is_said_to_need_a_rebuild_and_left_the_memory_as_it_was(tmp_path: Path) -> None:
    """A `sync --rebuild` killed on the way left the memory as it was (the rebuild is one transaction), but
    status, doctor and answers said "what it had not stored yet is not in memory; run `nexusmem sync`": a
    plain sync never redoes the rebuild asked for."""
    subprocess.run(
        [sys.executable, str(MAKE_HISTORY), str(tmp_path / "h"), "--commits", "3000", "--shell-lines", "10"],
        check=True,
        capture_output=True,
    )
    repo = tmp_path / "h" / "repo"
    db = repo / ".nexusmem" / "memory.db"
    subprocess.run([console_script(), "sync", "-q", "--no-embed"], cwd=repo, check=True, capture_output=True)
    before = counts(db)
    proc = running_sync(repo, "--rebuild")
    proc.kill()
    proc.communicate(timeout=30)
    assert counts(db) == before  # the memory as it was
    status = subprocess.run([console_script(), "status"], cwd=repo, capture_output=True, text=True).stdout
    assert "the last `sync --rebuild`" in status and "run `nexusmem sync --rebuild`" in status, status
    doctor = subprocess.run([console_script(), "doctor"], cwd=repo, capture_output=True, text=True).stdout
    assert "sync --rebuild" in doctor, doctor
    answer = subprocess.run(
        [console_script(), "query", "--json", "--", "parser"], cwd=repo, capture_output=True, text=True
    ).stdout
    assert any("run `nexusmem sync --rebuild`" in n for n in json.loads(answer)["notes"]), answer
    # A plain sync (the post-commit one) does not redo the rebuild: the warning stays until one does.
    subprocess.run([console_script(), "sync", "-q", "--no-embed"], cwd=repo, check=True)
    status = subprocess.run([console_script(), "status"], cwd=repo, capture_output=True, text=True).stdout
    assert "run `nexusmem sync --rebuild`" in status, status
    subprocess.run([console_script(), "sync", "-q", "--no-embed", "--rebuild"], cwd=repo, check=True)
    assert (
        "was stopped"
        not in subprocess.run([console_script(), "status"], cwd=repo, capture_output=True, text=True).stdout
    )


@pytest.mark.slow
def test_a_search_storing_the_commands_first_keeps_a_killed_syncs_warning(tmp_path: Path) -> None:
    """A first sync killed on the way, then one command typed at the bash prompt and an MCP search_memory:
    the search stores the commands logged since the last sync first (catchup.catch_up_shell, a sync of the
    shell source only), and that sync's end took away the mark the killed one had left. status, doctor
    and answers then called a memory without its docs complete. A sync of some sources only (the
    catch-up, `sync --source git`) now leaves that mark; the next full sync ends it."""
    from nexusmem import mcp_server

    subprocess.run(
        [sys.executable, str(MAKE_HISTORY), str(tmp_path / "h"), "--commits", "3000", "--shell-lines", "10"],
        check=True,
        capture_output=True,
    )
    repo = tmp_path / "h" / "repo"
    proc = running_sync(repo)
    proc.kill()
    proc.communicate(timeout=30)

    def unfinished() -> str | None:
        shown = subprocess.run(
            [console_script(), "status", "--json"], cwd=repo, capture_output=True, text=True
        )
        return json.loads(shown.stdout)["sync_unfinished"]  # type: ignore[no-any-return]

    stopped = unfinished()
    assert stopped
    typed_in_bash(repo, "ls no-such-file-zebra")
    answer = mcp_server.run_search(str(repo), "no-such-file-zebra", 800, None).structured_content
    assert answer is not None
    # The command was stored first, and the answer still says the memory is incomplete.
    assert any(item["ref"] == "ls no-such-file-zebra" for item in answer["items"]), answer
    assert any(f"the last sync (started {stopped}) was stopped" in note for note in answer["notes"]), answer
    assert unfinished() == stopped
    subprocess.run([console_script(), "sync", "-q", "--no-embed", "--source", "git"], cwd=repo, check=True)
    assert unfinished() == stopped
    subprocess.run([console_script(), "sync", "-q", "--no-embed"], cwd=repo, check=True)
    assert unfinished() is None
