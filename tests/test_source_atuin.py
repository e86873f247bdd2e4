"""atuin import: a real history.db with atuin's schema (its migrations, WAL mode) written by a concurrent
writer while NexusMem syncs, read into a real repository's memory.

The fixtures write through sqlean, the SQLite NexusMem reads with: two SQLite libraries in one process do
not see each other's POSIX locks, so one may reset the WAL index the other has mapped (SIGBUS; see SQLite's
"How To Corrupt", multiple copies of SQLite). The concurrent writer is another process, as atuin is."""

from __future__ import annotations

import json
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from nexusmem import sync
from nexusmem.paths import shell_log_path
from nexusmem.project import load

from helpers import commit, run_cli

NS = 1_000_000  # ns per ms

# crates/atuin-client/migrations, in order (the columns and indexes a 2026 database has).
SCHEMA = [
    """create table if not exists history (
        id text primary key, timestamp integer not null, duration integer not null, exit integer not null,
        command text not null, cwd text not null, session text not null, hostname text not null,
        unique(timestamp, cwd, command))""",
    "create index if not exists idx_history_timestamp on history(timestamp)",
    "create index if not exists idx_history_command_timestamp on history(command, timestamp)",
    "alter table history add column deleted_at integer",
    "alter table history add column author text",
    "alter table history add column intent text",
    "alter table history add column shell text",
    "alter table history add column author_kind integer",
    "create index if not exists idx_history_active_timestamp on history(timestamp) where deleted_at is null",
]
OLD_SCHEMA = SCHEMA[:4]


def make_db(path: Path, schema: list[str] = SCHEMA) -> Any:
    import sqlean

    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlean.connect(str(path), isolation_level=None, check_same_thread=False)
    assert conn.execute("pragma journal_mode=wal").fetchone()[0] == "wal"
    conn.execute("pragma synchronous=normal")
    for statement in schema:
        conn.execute(statement)
    return conn


def add(
    conn: Any,
    command: str,
    cwd: Path | str,
    ts_ms: int,
    *,
    exit: int = 0,
    duration_ms: int = 120,
    author: str | None = None,
    kind: int | None = None,
    deleted: bool = False,
    columns: bool = True,
) -> str:
    row_id = uuid.uuid4().hex
    values = [row_id, ts_ms * NS, duration_ms * NS if duration_ms >= 0 else -1, exit, command, str(cwd)]
    values += ["0192sess", "host:me"]
    if columns:
        conn.execute(
            "insert into history (id, timestamp, duration, exit, command, cwd, session, hostname, deleted_at,"
            " author, author_kind, shell) values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [*values, ts_ms * NS if deleted else None, author, kind, "zsh"],
        )
    else:
        conn.execute(
            "insert into history (id, timestamp, duration, exit, command, cwd, session, hostname)"
            " values (?, ?, ?, ?, ?, ?, ?, ?)",
            values,
        )
    return row_id


@pytest.fixture
def atuin_db(isolated_home: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    data = isolated_home / "xdg-data"
    monkeypatch.setenv("XDG_DATA_HOME", str(data))
    return data / "atuin" / "history.db"


def shell_nodes(repo: Path) -> dict[str, dict[str, object]]:
    with load(repo).open_store() as store:
        ids = [i for i, _c, _t, _w, _e in store.shell_commands_between(0, 2**62)]
        nodes = store.get_many(ids)
    return {n.ref: {**n.meta, "ts": n.ts, "source": n.source} for n in nodes.values()}


def test_atuin_rows_become_commands_with_authors_and_no_duplicates(repo: Path, atuin_db: Path) -> None:
    commit(repo, "feat: app", {"src/app.py": "x = 1\n"})
    now = int(time.time() * 1000)
    conn = make_db(atuin_db)
    add(conn, "pytest -x", repo, now - 60_000, exit=1, duration_ms=2_500)
    add(conn, "cargo build", repo / "src", now - 50_000, author="claude-code", kind=2)
    add(conn, "npm run lint", repo, now - 45_000, author="copilot")  # a known agent, author_kind NULL (older)
    add(conn, "make deploy", repo, now - 40_000, author="me", kind=1)
    add(conn, "export GITHUB_TOKEN=ghp_" + "a" * 36, repo, now - 35_000)
    add(conn, "sleep 600", repo, now - 30_000, exit=-1, duration_ms=-1)  # still running
    add(conn, "rm -rf build", repo, now - 25_000, deleted=True)
    add(conn, "ls ~", "/somewhere/else", now - 20_000)
    add(conn, "git status", repo, now - 10_000)  # our own prompt hook logged it too (below)
    log = shell_log_path()
    log.parent.mkdir(parents=True, exist_ok=True)
    hook = {"ts": now - 10_000 + 300, "cwd": str(repo), "exit": 0, "command": "git status", "shell": "zsh"}
    log.write_text(json.dumps({**hook, "session": "s", "v": 1}) + "\n", encoding="utf-8")

    sync.sync(repo)
    nodes = shell_nodes(repo)
    from_atuin = {ref: meta for ref, meta in nodes.items() if meta["source"] == "atuin"}
    assert set(from_atuin) == {
        "pytest -x",
        "cargo build",
        "npm run lint",
        "make deploy",
        "export GITHUB_TOKEN=«redacted:github-token»",
    }
    assert nodes["git status"]["source"] == "shell"  # once, from the hook
    pytest_x = from_atuin["pytest -x"]
    assert (pytest_x["exit"], pytest_x["duration_ms"], pytest_x["ts"]) == (1, 2_500, now - 60_000)
    assert (pytest_x["author"], pytest_x["author_kind"], pytest_x["cwd"]) == ("me", "human", ".")
    assert (from_atuin["cargo build"]["author"], from_atuin["cargo build"]["cwd"]) == ("claude-code", "src")
    assert (from_atuin["npm run lint"]["author"], from_atuin["npm run lint"]["author_kind"]) == (
        "atuin:copilot",
        "agent",
    )
    assert from_atuin["make deploy"]["author"] == "me"
    raw = b"".join(p.read_bytes() for p in (repo / ".nexusmem").iterdir() if p.name.startswith("memory.db"))
    assert b"ghp_" + b"a" * 36 not in raw

    # The text answer says which agent ran a command atuin recorded (its shell alone said zsh).
    text = run_cli("-C", str(repo), "query", "--", "npm run lint").stdout
    assert "zsh, by atuin:copilot" in text, text
    # --author sees them like the hooks' commands.
    out = run_cli("-C", str(repo), "query", "--json", "--author", "agents", "--", "cargo npm pytest").stdout
    assert {i["ref"] for i in json.loads(out)["items"] if i["kind"] == "shell_command"} == {
        "cargo build",
        "npm run lint",
    }

    # The running command ends; a sync reads it (the cursor waited for it) and nothing else twice.
    conn.execute("update history set exit = 0, duration = ? where command = 'sleep 600'", (600_000 * NS,))
    second = sync.sync(repo)
    atuin_part = next(p for p in second.sources if p.name == "atuin")
    assert (atuin_part.added, atuin_part.updated) == (1, 0)
    assert shell_nodes(repo)["sleep 600"]["duration_ms"] == 600_000
    third = sync.sync(repo)
    assert next((p.added, p.updated) for p in third.sources if p.name == "atuin") == (0, 0)

    # scan-atuin previews the next sync: nothing new now; a new row shows up, as text and as JSON.
    assert "atuin: 0 new, 0 changed" in run_cli("-C", str(repo), "scan-atuin").stdout
    add(conn, "pytest -k cache", repo, now)
    preview = json.loads(run_cli("-C", str(repo), "scan-atuin", "--json").stdout)
    assert [n["ref"] for n in preview] == ["pytest -k cache"]


WRITER = """
import os, sqlite3, sys, time, uuid
db, cwd, start, stop = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
conn = sqlite3.connect(db, isolation_level=None)
conn.execute("pragma busy_timeout=5000")
n = 0
while not os.path.exists(stop):
    conn.execute("begin immediate")
    conn.execute(
        "insert into history (id, timestamp, duration, exit, command, cwd, session, hostname, shell)"
        " values (?, ?, ?, 0, ?, ?, '0192sess', 'host:me', 'zsh')",
        (uuid.uuid4().hex, (start + n) * 1_000_000, 120_000_000, f"echo live{n}", cwd),
    )
    time.sleep(0.01)  # the write lock is held meanwhile
    conn.execute("commit")
    print(n, flush=True)
    n += 1
conn.close()
"""


@pytest.mark.slow
def test_a_secret_in_the_folder_a_command_ran_in_is_stored_redacted(repo: Path, atuin_db: Path) -> None:
    """atuin records each command's folder; a folder named after a key (`keys/AKIA…`) reaches neither the
    node's meta nor its body as it is."""
    commit(repo, "feat: app", {"src/app.py": "x = 1\n"})
    secret = "AKIA" + "QWERTYUIOPASDFGH"
    conn = make_db(atuin_db)
    add(conn, "make keys", repo / "keys" / secret, int(time.time() * 1000) - 60_000)
    sync.sync(repo)
    assert shell_nodes(repo)["make keys"]["cwd"] == "keys/«redacted:aws-key»"
    raw = b"".join(p.read_bytes() for p in (repo / ".nexusmem").iterdir() if p.name.startswith("memory.db"))
    assert secret.encode() not in raw and b"cwd keys/\xc2\xabredacted:aws-key\xc2\xbb" in raw


def test_a_secret_in_a_rows_shell_or_id_never_reaches_memory(repo: Path, atuin_db: Path) -> None:
    """A row's shell went into the node's body and word index as atuin had it (`zsh-AKIA…`), and its id into
    the natural key (`atuin:id-ghp_…`): `forget` then found the token in memory.db and could not remove
    it. The shell is redacted; an id holding a secret is kept as its digest, the same at every sync."""
    commit(repo, "feat: app", {"src/app.py": "x = 1\n"})
    key = "AKIA" + "QWERTYUIOPASDFGH"
    token = "ghp_" + "Q1w2E3r4T5y6U7i8O9p0A1s2D3f4G5h6J7k8"
    conn = make_db(atuin_db)
    row = add(conn, "make keys", repo, int(time.time() * 1000) - 60_000)
    conn.execute("update history set shell = ?, id = ? where id = ?", (f"zsh-{key}", f"id-{token}", row))
    sync.sync(repo)
    with load(repo).open_store() as store:
        (node,) = [n for n in store.iter_nodes("shell_command") if n.ref == "make keys"]
    assert "zsh-«redacted:aws-key»" in node.body and node.meta["shell"] == "zsh-«redacted:aws-key»"
    assert node.natural_key.startswith("atuin:sha256:")
    raw = b"".join(p.read_bytes() for p in (repo / ".nexusmem").iterdir() if p.name.startswith("memory.db"))
    assert key.encode() not in raw and token.encode() not in raw
    # Read again (a rebuild): the same node, not a second one.
    sync.sync(repo, rebuild=True)
    with load(repo).open_store() as store:
        assert [n.id for n in store.iter_nodes("shell_command")] == [node.id]
    out = run_cli("-C", str(repo), "forget", token, "--yes").output
    assert "WARNING" not in out, out


def test_a_row_whose_text_is_not_utf8_is_skipped_alone(repo: Path, atuin_db: Path) -> None:
    """atuin stores what the shell gave it; a command that is not UTF-8 (CAST of raw bytes) made the
    database's decoder raise and every row of the pass was lost, before and after it, with nothing counted."""
    commit(repo, "feat: app", {"src/app.py": "x = 1\n"})
    conn = make_db(atuin_db)
    now = int(time.time() * 1000) - 60_000
    add(conn, "make before", repo, now)
    bad = add(conn, "placeholder", repo, now + 1_000)
    add(conn, "make after", repo, now + 2_000)
    conn.execute("update history set command = CAST(X'6d616b6520ff' AS TEXT) where id = ?", (bad,))
    summary = sync.sync(repo)
    assert set(shell_nodes(repo)) == {"make before", "make after"}
    (atuin,) = [s for s in summary.sources if s.name == "atuin"]
    assert atuin.skipped == 1 and bad in atuin.problems[0] and "not UTF-8" in atuin.problems[0]


def test_a_bad_row_read_again_behind_a_running_command_is_reported_once(repo: Path, atuin_db: Path) -> None:
    """A command still running holds the cursor back, so the rows after it are read at every sync: a bad one
    among them was reported, and counted in status, at every sync (1, 2, 3, 4 ...) until the command ended."""
    commit(repo, "feat: app", {"src/app.py": "x = 1\n"})
    conn = make_db(atuin_db)
    now = int(time.time() * 1000) - 60_000
    running = add(conn, "sleep 600", repo, now, exit=-1, duration_ms=-1)
    bad = add(conn, "placeholder", repo, now + 1_000)
    conn.execute("update history set command = CAST(X'6d616b6520ff' AS TEXT) where id = ?", (bad,))
    add(conn, "make after", repo, now + 2_000)
    skipped = []
    for _ in range(3):
        (atuin,) = [s for s in sync.sync(repo).sources if s.name == "atuin"]
        skipped.append(atuin.skipped)
    assert skipped == [1, 0, 0], skipped
    status = json.loads(run_cli("-C", str(repo), "status", "--json").stdout)
    assert status["skipped_records"]["atuin"]["total"] == 1, status["skipped_records"]
    # The command ends: it is read, the bad row stays reported once, and the one after it was kept all along.
    conn.execute("update history set exit = 0, duration = ? where id = ?", (5 * NS, running))
    sync.sync(repo)
    assert {"sleep 600", "make after"} <= set(shell_nodes(repo))
    status = json.loads(run_cli("-C", str(repo), "status", "--json").stdout)
    assert status["skipped_records"]["atuin"]["total"] == 1


def test_a_concurrent_writer_never_blocks_or_tears_the_read(repo: Path, atuin_db: Path) -> None:
    """atuin keeps inserting (and holds its write transaction open) while NexusMem syncs."""
    commit(repo, "feat: app", {"src/app.py": "x = 1\n"})
    now = int(time.time() * 1000)
    conn = make_db(atuin_db)
    for n in range(500):
        add(conn, f"make step{n}", repo, now - 600_000 + n)
    conn.close()
    stop = atuin_db.parent / "stop"
    # atuin's side: another process that keeps inserting, holding its write lock 10 ms at a time.
    writer = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(atuin_db), str(repo), str(now - 300_000), str(stop)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert writer.stdout is not None and writer.stdout.readline().strip() == "0"  # it is writing
        started = time.monotonic()
        sync.sync(repo)
        took = time.monotonic() - started
    finally:
        stop.touch()
        out, _ = writer.communicate(timeout=60)
    written = 1 + len(out.split())
    assert writer.returncode == 0
    nodes = shell_nodes(repo)
    assert all(f"make step{n}" in nodes for n in range(500))
    live = sorted(int(ref[9:]) for ref in nodes if ref.startswith("echo live"))
    assert live and live == list(range(len(live)))  # a consistent prefix: no gap, no torn row
    sync.sync(repo)
    assert sum(1 for ref in shell_nodes(repo) if ref.startswith("echo live")) == written
    assert took < 60


def test_an_older_schema_a_missing_and_a_broken_database(repo: Path, atuin_db: Path) -> None:
    commit(repo, "feat: app", {"src/app.py": "x = 1\n"})
    sync.sync(repo)  # no atuin at all: nothing to say
    now = int(time.time() * 1000)
    conn = make_db(atuin_db, OLD_SCHEMA)
    add(conn, "pytest", repo, now - 1000, columns=False)
    sync.sync(repo)
    assert shell_nodes(repo)["pytest"]["author"] == "me"
    conn.close()
    for suffix in ("-wal", "-shm"):
        Path(str(atuin_db) + suffix).unlink(missing_ok=True)
    atuin_db.write_bytes(b"not a database at all" * 100)
    summary = sync.sync(repo)  # one source's problem, reported, never the sync's
    part = next(p for p in summary.sources if p.name == "atuin")
    assert any("atuin" in note for note in part.notes)
    off = run_cli("-C", str(repo), "scan-shell")
    assert off.exit_code == 0


def test_status_says_where_atuin_resumes(repo: Path, atuin_db: Path) -> None:
    commit(repo, "feat: app", {"src/app.py": "x = 1\n"})
    conn = make_db(atuin_db)
    add(conn, "pytest", repo, 1_790_000_000_000)
    sync.sync(repo)
    out = run_cli("-C", str(repo), "status").stdout
    assert "atuin" in out and "after 2026-09-21" in out


def test_an_agent_command_seen_by_atuin_and_our_agent_hook_is_one_node(repo: Path, atuin_db: Path) -> None:
    commit(repo, "feat: app", {"src/app.py": "x = 1\n"})
    now = int(time.time() * 1000)
    conn = make_db(atuin_db)
    # atuin's own Claude Code hook stores the text as the agent sent it (and forces a failure's exit to 1).
    add(
        conn,
        f"cd {repo} && pytest -x 2>&1 | tail -20",
        repo,
        now - 9_000,
        exit=1,
        author="claude-code",
        kind=2,
    )
    add(conn, 'cd src && make; echo "EXIT:$?"', repo, now - 5_000, author="codex", kind=2)
    log = shell_log_path()
    log.parent.mkdir(parents=True, exist_ok=True)
    ours = {
        "ts": now - 8_500,
        "cwd": str(repo),
        "exit": None,
        "command": "pytest -x",
        "shell": "claude-code",
        "session": "sess",
        "author": "claude-code",
        "author_kind": "agent",
        "call_id": "toolu_1",
        "v": 1,
    }
    log.write_text(json.dumps(ours) + "\n", encoding="utf-8")
    sync.sync(repo)
    nodes = shell_nodes(repo)
    assert nodes["pytest -x"]["source"] == "shell"  # once, from our hook, keyed by the call id
    assert sum(1 for ref in nodes if "pytest" in ref) == 1
    make = nodes["make"]
    assert (make["source"], make["cwd"], make["exit"], make["author"]) == ("atuin", "src", None, "codex")


def test_a_row_dated_ahead_never_hides_the_commands_after_it(repo: Path, atuin_db: Path) -> None:
    """One row dated three years ahead (another host's clock, synced by atuin) moved the cursor there, and a
    row dated 2**63-1 ns past SQLite's integers: every command after it was never read, the sync said
    "atuin unchanged" (or an overflow note) for years."""
    commit(repo, "feat: app", {"src/app.py": "x = 1\n"})
    conn = make_db(atuin_db)
    now = int(time.time() * 1000)
    add(conn, "make early", repo, now - 120_000)
    sync.sync(repo)
    add(conn, "make from the future", repo, now + 3 * 365 * 86_400_000)
    huge = add(conn, "placeholder", repo, now - 90_000)
    conn.execute("update history set timestamp = ? where id = ?", (2**63 - 1, huge))
    sync.sync(repo)
    time.sleep(0.01)
    add(conn, "make newer marker10", repo, int(time.time() * 1000))
    summary = sync.sync(repo)
    assert {"make early", "make from the future", "make newer marker10"} <= set(shell_nodes(repo))
    (atuin,) = [s for s in summary.sources if s.name == "atuin"]
    assert not any("too large" in n for n in atuin.notes), atuin.notes


def test_a_history_file_the_config_names_that_is_not_there_is_said(repo: Path, tmp_path: Path) -> None:
    """sources.atuin.path pointing at a missing file or a FIFO: sync, scan-atuin and doctor said nothing, the
    summary "atuin unchanged" (a default path without atuin stays quiet: most users have none)."""
    import os

    commit(repo, "feat: app", {"src/app.py": "x = 1\n"})
    sync.sync(repo)
    cfg = repo / ".nexusmem" / "config.json"
    for name, make in (("gone.db", None), ("fifo.db", os.mkfifo)):
        target = tmp_path / name
        if make is not None:
            make(target)
        data = json.loads(cfg.read_text(encoding="utf-8"))
        data["sources"]["atuin"] = {"path": str(target)}
        cfg.write_text(json.dumps(data), encoding="utf-8")
        part = next(p for p in sync.sync(repo).sources if p.name == "atuin")
        what = "does not exist" if make is None else "is not a regular file"
        assert any(f"{target} (sources.atuin.path) {what}" in n for n in part.notes), part.notes


@pytest.mark.parametrize("first", ["atuin", "hook"])
def test_a_command_atuin_and_the_prompt_hook_both_saw_is_stored_once_across_syncs(
    repo: Path, atuin_db: Path, first: str
) -> None:
    """A sync ran between atuin's row and the prompt hook's line of one command (the post-commit auto-sync
    right after `git commit`): the next sync stored it a second time, as the two were matched only within
    one sync. In either order it is one node, the hook's (it has the pipeline statuses), `cd src` too
    (the hook logs the folder it ended in, atuin the one it started in); the same command run again a
    minute later, or another command at the same moment, is kept."""
    commit(repo, "feat: app", {"src/app.py": "x = 1\n"})
    now = int(time.time() * 1000)
    conn = make_db(atuin_db)
    log = shell_log_path()
    log.parent.mkdir(parents=True, exist_ok=True)
    typed = "pytest -x | tee out.log"

    def atuin_rows() -> None:
        add(conn, typed, repo, now - 60_000, duration_ms=2_000)
        add(conn, "cd src", repo, now - 50_000, duration_ms=1)
        add(conn, "make lint", repo, now - 60_000, exit=2)  # another command at the same moment
        add(conn, typed, repo, now - 1_000, exit=1)  # a minute later: run again

    def hook_lines() -> None:
        lines = [
            {"ts": now - 60_000 + 3, "cwd": str(repo), "exit": 0, "pipestatus": [1, 0], "command": typed},
            {"ts": now - 50_000 + 2, "cwd": str(repo / "src"), "exit": 0, "command": "cd src"},
        ]
        with log.open("a", encoding="utf-8") as handle:
            for line in lines:
                handle.write(json.dumps({**line, "shell": "zsh", "session": "s", "v": 1}) + "\n")

    for step in (atuin_rows, hook_lines) if first == "atuin" else (hook_lines, atuin_rows):
        step()
        sync.sync(repo)
    with load(repo).open_store() as store:
        ids = [r[0] for r in store.shell_commands_between(0, 2**62)]
        nodes = store.get_many(ids)
    seen = sorted((n.ts - now, n.ref, n.source, n.meta["cwd"], n.meta["exit"]) for n in nodes.values())
    assert seen == [
        (-60_000, "make lint", "atuin", ".", 2),
        (-60_000 + 3, typed, "shell", ".", 1),  # the hook's: tee's 0 read through its pipestatus
        (-50_000 + 2, "cd src", "shell", "src", 0),
        (-1_000, typed, "atuin", ".", 1),
    ], seen
    again = sync.sync(repo)
    assert [(p.added, p.removed) for p in again.sources if p.name in ("shell", "atuin")] == [(0, 0), (0, 0)]


def test_a_hook_line_removes_only_the_atuin_row_of_the_same_run_and_keeps_its_verdict(
    repo: Path, atuin_db: Path
) -> None:
    """atuin recorded `make test` failing (exit 2) in one shell, the user verified it; the prompt hook of
    another shell logged `make test` passing 3 s later: that sync removed the failure ("atuin +0 -1"), its
    verdict and its failure→fix link with it, as a hook line stood for any atuin row of the same text within
    5 s. A twin now has the same exit code too, one hook line stands for one row (the nearest), and the row
    a hook line does stand for hands its verdict and stale mark to the hook's node, whose links come back."""
    sha = commit(repo, "feat: app", {"src/app.py": "x = 1\n"})
    now = int(time.time() * 1000) - 600_000
    conn = make_db(atuin_db)
    log = shell_log_path()
    log.parent.mkdir(parents=True, exist_ok=True)

    def hook_line(command: str, ts: int, exit: int) -> None:
        line = {"ts": ts, "cwd": str(repo), "exit": exit, "pipestatus": [exit], "command": command}
        with log.open("a", encoding="utf-8") as handle:
            handle.write(json.dumps({**line, "shell": "bash", "session": "sA", "v": 1}) + "\n")

    def atuin_nodes() -> dict[str, Any]:
        with load(repo).open_store() as store:
            ids = [r[0] for r in store.shell_commands_between(0, 2**62)]
            return {i: n for i, n in store.get_many(ids).items() if n.source == "atuin"}

    def node_of(ref: str, source: str) -> Any:
        with load(repo).open_store() as store:
            ids = [r[0] for r in store.shell_commands_between(0, 2**62)]
            (node,) = [n for n in store.get_many(ids).values() if (n.ref, n.source) == (ref, source)]
            return node

    # The re-check's case: a failure atuin saw, verified, then a passing run the hook saw 3 s later.
    add(conn, "make test", repo, now, exit=2, duration_ms=400)
    # A run both recorded (atuin's row, then the hook's line a sync later), verified and marked stale.
    add(conn, "pytest -x", repo, now + 60_000, exit=1, duration_ms=2_000)
    # `make` typed twice 3 s apart: atuin saw both, the hook (a sync later) only the second.
    add(conn, "make", repo, now + 120_000, duration_ms=100)
    add(conn, "make", repo, now + 123_000, duration_ms=100)
    sync.sync(repo)
    ids = {n.ref: i for i, n in atuin_nodes().items() if n.ref != "make"}
    run_cli("-C", str(repo), "review", ids["make test"], "--verify")
    run_cli("-C", str(repo), "review", ids["pytest -x"], "--reject")
    run_cli("-C", str(repo), "mark-stale", ids["pytest -x"], "--supersedes", sha)
    marked = atuin_nodes()[ids["pytest -x"]].superseded_by
    assert marked is not None

    hook_line("make test", now + 3_000, 0)
    hook_line("pytest -x", now + 60_000 + 2_010, 1)  # bash stamps the end
    hook_line("make", now + 123_000 + 5, 0)
    summary = sync.sync(repo, link_failures=True)
    (part,) = [p for p in summary.sources if p.name == "atuin"]
    assert (part.added, part.removed) == (0, 2), summary.describe()  # pytest -x and one `make`

    kept = atuin_nodes()
    assert sorted((n.ref, n.ts - now) for n in kept.values()) == [("make", 120_000), ("make test", 0)]
    failure = kept[ids["make test"]]
    assert (failure.meta["exit"], failure.trust) == (2, "verified")
    shown = run_cli("-C", str(repo), "show", ids["make test"]).stdout
    assert "make test" in shown and "verified" in shown, shown
    passing = node_of("make test", "shell")
    with load(repo).open_store() as store:
        assert (ids["make test"], passing.id, "retry") in store.links_from([ids["make test"]])

    heir = node_of("pytest -x", "shell")
    assert (heir.meta["exit"], heir.trust, heir.superseded_by) == (1, "rejected", marked)
    assert ids["pytest -x"] not in kept
    # The heir is the failure now: its fix is linked to it.
    hook_line("pytest -x", now + 90_000, 0)
    sync.sync(repo, link_failures=True)
    with load(repo).open_store() as store:
        assert [rel for _f, _to, rel in store.links_from([heir.id])] == ["retry"]

    # A rebuild reads both again: the same pairs, the same verdicts, also that of an atuin row whose hook
    # line the rebuild reads first.
    add(conn, "npm test", repo, now + 150_000, exit=1)
    sync.sync(repo)
    (npm,) = [i for i, n in atuin_nodes().items() if n.ref == "npm test"]
    run_cli("-C", str(repo), "review", npm, "--verify")
    hook_line("npm test", now + 150_000 + 40, 1)
    sync.sync(repo, rebuild=True)
    assert sorted((n.ref, n.ts - now, n.trust) for n in atuin_nodes().values()) == [
        ("make", 120_000, "candidate"),
        ("make test", 0, "verified"),
    ]
    with load(repo).open_store() as store:
        back = store.get(heir.id)
    assert back is not None and (back.trust, back.superseded_by) == ("rejected", marked)
    assert node_of("npm test", "shell").trust == "verified"


@pytest.mark.parametrize("first", ["atuin", "hook", "together"])
def test_an_agents_failure_seen_by_atuin_and_our_agent_hook_is_one_node_with_the_real_code(
    repo: Path, atuin_db: Path, isolated_home: Path, first: str
) -> None:
    """atuin's Claude Code hook records every failed Bash call with exit 1; ours keeps the real code (`Exit
    code 2`). The two were never paired (the codes differ), so the one failure was stored twice, once as
    exit 1. Both failures of the same agent call are one run: one node, the hook's, with exit 2, whichever
    was synced first."""
    commit(repo, "feat: docs", {"docs/index.rst": "Docs\n====\n"})
    run_cli("hook", "agent", "install", "claude-code")
    settings = json.loads((isolated_home / ".claude" / "settings.json").read_text(encoding="utf-8"))
    (hook,) = [
        h["command"]
        for group in settings["hooks"]["PostToolUseFailure"]
        for h in group["hooks"]
        if "agenthook" in h["command"]
    ]
    conn = make_db(atuin_db)
    now = int(time.time() * 1000)

    def atuin_rows() -> None:
        # What atuin's own hook wrote for the same call (PostToolUseFailure: exit forced to 1).
        add(conn, "make -C docs html", repo, now - 300, duration_ms=300, exit=1, author="claude-code", kind=2)

    def hook_line() -> None:
        payload = {
            "session_id": "sess-atuin",
            "cwd": str(repo),
            "hook_event_name": "PostToolUseFailure",
            "tool_name": "Bash",
            "tool_input": {"command": "make -C docs html", "description": "Build the docs"},
            "tool_use_id": "toolu_01DOCS",
            "error": "Exit code 2\nmake: *** [html] Error 2",
            "is_interrupt": False,
            "duration_ms": 300,
        }
        done = subprocess.run(
            ["sh", "-c", hook],
            input=json.dumps(payload).encode(),
            capture_output=True,
            timeout=30,
            check=False,
        )
        assert (done.returncode, done.stdout, done.stderr) == (0, b"", b"")

    if first == "together":
        atuin_rows()
        hook_line()
        sync.sync(repo)
    else:
        for step in (atuin_rows, hook_line) if first == "atuin" else (hook_line, atuin_rows):
            step()
            sync.sync(repo)
    with load(repo).open_store() as store:
        ids = [r[0] for r in store.shell_commands_between(0, 2**62)]
        found = [(n.ref, n.source, n.meta["exit"], n.meta["author"]) for n in store.get_many(ids).values()]
    assert found == [("make -C docs html", "shell", 2, "claude-code")], found
    again = sync.sync(repo)
    assert [(p.added, p.removed) for p in again.sources if p.name in ("shell", "atuin")] == [(0, 0), (0, 0)]


def test_a_grep_that_answered_with_1_is_no_failure_and_one_command_with_the_hooks(
    repo: Path, atuin_db: Path
) -> None:
    """A bare grep or diff ending with 1 (no match, a difference) is no failure, whichever recorder saw it:
    read as exit 0 from atuin as from the hook log, so an agent's grep both saw is still one command."""
    commit(repo, "docs: notes", {"notes.txt": "nothing\n"})
    now = int(time.time() * 1000)
    conn = make_db(atuin_db)
    add(conn, "grep -n TODO notes.txt", repo, now - 9_000, exit=1)
    add(conn, "diff a notes.txt", repo, now - 8_000, exit=1)
    add(conn, "make test", repo, now - 7_000, exit=1)
    add(conn, "grep -c FIXME notes.txt", repo, now - 6_000, exit=1, author="claude-code", kind=2)
    ours = {
        "ts": now - 5_900,
        "cwd": str(repo),
        "exit": 1,
        "command": "grep -c FIXME notes.txt",
        "shell": "claude-code",
        "session": "sess",
        "author": "claude-code",
        "author_kind": "agent",
        "call_id": "toolu_1",
        "v": 1,
    }
    log = shell_log_path()
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_text(json.dumps(ours) + "\n", encoding="utf-8")
    sync.sync(repo)
    nodes = shell_nodes(repo)
    assert {ref: (n["source"], n["exit"]) for ref, n in nodes.items()} == {
        "grep -n TODO notes.txt": ("atuin", 0),
        "diff a notes.txt": ("atuin", 0),
        "make test": ("atuin", 1),
        "grep -c FIXME notes.txt": ("shell", 0),
    }
