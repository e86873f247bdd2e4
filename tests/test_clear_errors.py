"""Clear one-line errors, never a traceback: a damaged, dropped, full or read-only store, `.nexusmem` in the
way, and a crash log with exit code 3 for what is a bug. Real repositories, real processes."""

from __future__ import annotations

import json
import os
import re
import resource
import shutil
import signal
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import commit, console_script, run_cli, run_script
from helpers.env import as_a_user_runner, read_only_runner

# Real processes (sync, the MCP server, a pty) several times each: seconds per test here.
pytestmark = pytest.mark.slow

DAMAGED = "move it aside"


def one_line_error(proc: subprocess.CompletedProcess[str], code: int = 1) -> str:
    assert proc.returncode == code, (proc.returncode, proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    return lines[0]


def synced(repo: Path) -> Path:
    commit(repo, "feat: remember the cache marker", {"a.txt": "a\n"})
    proc = run_script("sync", "--no-embed", cwd=repo)
    assert proc.returncode == 0, proc.stderr
    return repo / ".nexusmem" / "memory.db"


def test_dangling_symlink_and_regular_file_in_place_of_nexusmem(repo: Path) -> None:
    """status, query and precheck said "has no NexusMem memory yet: run `nexusmem sync`", which fails on
    what is in the way: they name it, and how to clear it, as sync does."""
    commit(repo, "feat: start", {"a.txt": "a\n"})
    state = repo / ".nexusmem"
    state.symlink_to(repo / "gone" / "elsewhere")
    dangling = f"{state} is a symbolic link to {repo / 'gone' / 'elsewhere'}, which does not exist"
    for args in (("sync",), ("init",)):
        line = one_line_error(run_script(*args, cwd=repo))
        assert line == (
            f"Error: {dangling}: create that directory, or remove the link and run the command again"
        )
    assert dangling in one_line_error(run_script("status", cwd=repo))
    state.unlink()
    commit(repo, "chore: a notes file", {".nexusmem": "not a directory\n"})  # a repository tracks it
    for args in (("sync",), ("init",)):
        line = one_line_error(run_script(*args, cwd=repo))
        assert line.startswith(f"Error: {state} is a file, not a directory")
    for args in (("query", "x"), ("status",)):
        line = one_line_error(run_script(*args, cwd=repo))
        assert f"{state} is a file, not a directory; move it aside" in line, line
        assert "run `nexusmem sync`" not in line
    for args in (("precheck",), ("precheck", "--files", "a.txt")):
        checked = run_script(*args, cwd=repo)
        said = checked.stdout + checked.stderr
        assert checked.returncode == 0 and f"{state} is a file, not a directory; move it aside" in said, said
        assert "run `nexusmem sync`" not in said and "nothing checked" in said


def test_an_error_naming_a_folder_with_a_newline_or_a_tab_stays_one_line(tmp_path: Path) -> None:
    """`Error:` lines printed a folder whose name holds a newline or a tab as it is, splitting the line
    (what a script reading stderr a line at a time, or the auto-sync log, takes for two errors). They spell
    them `\\n`, `\\t` as every other line naming a folder does, on the click and the plain paths alike."""
    odd = tmp_path / "two\nlines\tand a tab"
    odd.mkdir()
    shown = str(odd).replace("\n", "\\n").replace("\t", "\\t")
    for args in (("status",), ("query", "cache"), ("team", "status"), ("sync",)):
        line = one_line_error(run_script(*args, cwd=odd))
        assert line.startswith(f"Error: {shown} is not inside a git repository"), (args, line)
    for args in (("status",), ("query", "cache")):
        line = one_line_error(run_script("-C", str(odd / "gone"), *args, cwd=tmp_path))
        assert line == f"Error: {shown}/gone: no such directory", (args, line)


@pytest.mark.parametrize("table", ["nodes", "sources", "meta"])
def test_a_dropped_table(repo: Path, table: str) -> None:
    db = synced(repo)
    import sqlean

    conn = sqlean.connect(str(db))
    conn.execute(f"DROP TABLE {table}")
    conn.commit()
    conn.close()
    for args in (("sync",), ("query", "cache"), ("status",)):
        line = one_line_error(run_script(*args, cwd=repo))
        assert line.startswith(f"Error: {db} is damaged: table(s) {table} missing; {DAMAGED}")
    # The advice works: moved aside, the next sync rebuilds the memory.
    db.rename(db.with_name("memory.db.damaged"))
    assert run_script("sync", "--no-embed", cwd=repo).returncode == 0
    assert "cache marker" in run_script("query", "cache", cwd=repo).stdout


def overwrite_pages(db: Path, pages: range, *, keep_headers: bool) -> None:
    data = bytearray(db.read_bytes())
    size = 4096
    for page in pages:
        start = page * size + (1000 if keep_headers else 0)
        end = page * size + (3000 if keep_headers else size)
        data[start:end] = os.urandom(end - start) if not keep_headers else bytes(end - start)
    db.write_bytes(bytes(data))


@pytest.mark.parametrize("keep_headers", [False, True], ids=["garbage-pages", "zeroed-cells"])
def test_sync_reports_a_store_with_overwritten_pages(repo: Path, keep_headers: bool) -> None:
    for i in range(60):
        (repo / f"doc{i}.md").write_text(
            f"# Section {i}\n\n" + " ".join(f"word{i}x{j}" for j in range(400)) + "\n", encoding="utf-8"
        )
    db = synced(repo)
    subprocess.run(
        [
            sys.executable,
            "-c",
            f"import sqlean; sqlean.connect({str(db)!r}).execute('PRAGMA wal_checkpoint(TRUNCATE)')",
        ],
        check=True,
    )
    pages = db.stat().st_size // 4096
    assert pages > 40
    overwrite_pages(db, range(pages // 2, pages // 2 + 10), keep_headers=keep_headers)
    line = one_line_error(run_script("sync", "--no-embed", cwd=repo))
    assert line.startswith(f"Error: {db} is damaged (") and DAMAGED in line
    assert "quick_check" in line


def test_disk_full_while_syncing(repo: Path) -> None:
    """A file-size limit (RLIMIT_FSIZE, SIGXFSZ ignored) makes every write past it fail with EFBIG, exactly
    as a full disk makes writes fail: the store must stay whole and the message say what to do."""
    db = synced(repo)
    for i in range(30):
        (repo / f"f{i}.txt").write_text(os.urandom(8000).hex(), encoding="utf-8")
    commit(repo, "feat: a large commit that will not fit", {})
    limit = db.stat().st_size + 40_000

    def small_disk() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    proc = subprocess.run(
        [console_script(), "sync", "--no-embed"],
        cwd=repo,
        capture_output=True,
        text=True,
        preexec_fn=small_disk,
        check=False,
    )
    line = one_line_error(proc)
    assert "a write failed" in line and "free some space and run the command again" in line
    assert "checks out whole (quick_check)" in line
    # Whole: quick_check passes and the memory answers as before; the next sync (with room) catches up.
    assert run_script("query", "cache", cwd=repo).returncode == 0
    assert run_script("sync", "--no-embed", cwd=repo).returncode == 0
    assert "large commit" in run_script("query", "large commit", cwd=repo).stdout


def _synced_read_only(repo: Path) -> tuple[Path, list[str]]:
    """REPO synced, its .nexusmem/ and the prefix that runs a command with it read-only (else a skip)."""
    synced(repo)
    state = repo / ".nexusmem"
    prefix = read_only_runner(state)
    if prefix is None:
        pytest.skip("cannot make a directory read-only for root here (no unshare/mount)")
    return state, prefix


def test_sync_auto_and_query_on_a_read_only_nexusmem(repo: Path) -> None:
    state, prefix = _synced_read_only(repo)
    try:
        for args in (["sync", "--auto"], ["sync"], ["query", "cache"]):
            proc = subprocess.run(
                [*prefix, console_script(), *args], cwd=repo, capture_output=True, text=True, check=False
            )
            line = one_line_error(proc)
            assert str(state) in line, line
            assert "Read-only file system" in line or "is not writable" in line or "Permission denied" in line
            if args[0] == "query" or args == ["sync"]:
                # Said alike, with what to do (a plain sync printed the lock file's raw OSError).
                assert "is not writable" in line and "make it writable" in line, (args, line)
    finally:
        state.chmod(0o700)


def test_doctor_names_a_read_only_memory_folder(repo: Path) -> None:
    """With .nexusmem/ read-only the store still opens for reading, so doctor found "No problems found"
    while every post-commit sync failed without a word."""
    state, prefix = _synced_read_only(repo)
    try:
        proc = subprocess.run(
            [*prefix, console_script(), "doctor"], cwd=repo, capture_output=True, text=True, check=False
        )
        assert proc.returncode == 1, proc.stdout + proc.stderr
        assert f"{state} is not writable" in proc.stdout and "make" in proc.stdout, proc.stdout
    finally:
        state.chmod(0o700)


def _as_a_user(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`nexusmem ARGS` in REPO with permission bits holding as for a user (root without its capabilities to
    ignore them); a skip where that cannot be done."""
    prefix = as_a_user_runner()
    if prefix is None:
        pytest.skip("cannot run as root without CAP_DAC_OVERRIDE here (no setpriv)")
    return subprocess.run(
        [*prefix, console_script(), *args], cwd=repo, capture_output=True, text=True, check=False
    )


def test_a_memory_db_made_read_only_and_back_leaves_no_read_only_wal_or_shm(repo: Path) -> None:
    """`status` on a memory.db of mode 0400 made its -wal and -shm 0400 too (SQLite gives them the
    database's mode); after `chmod 600 memory.db` every sync failed "attempt to write a readonly database;
    run the command again", and doctor found no problem. doctor now names the file its owner cannot write,
    with the fix, and the next sync puts 0600 back on the three files and writes."""
    db = synced(repo)
    wal, shm = Path(f"{db}-wal"), Path(f"{db}-shm")
    db.chmod(0o400)
    wal.unlink(missing_ok=True)
    shm.unlink(missing_ok=True)
    assert _as_a_user(repo, "status").returncode == 0
    assert stat.S_IMODE(shm.stat().st_mode) == 0o400  # as SQLite made it
    db.chmod(0o600)
    doctor = _as_a_user(repo, "doctor")
    assert doctor.returncode == 1, doctor.stdout
    assert f"{shm} is 0400" in doctor.stdout and f"chmod 600 {shm}" in doctor.stdout, doctor.stdout
    commit(repo, "feat: the zebra marker after the fix", {"b.txt": "b\n"})
    proc = _as_a_user(repo, "sync", "--no-embed")
    assert proc.returncode == 0, proc.stderr
    for path in (db, wal, shm):
        assert not path.exists() or stat.S_IMODE(path.stat().st_mode) == 0o600, path
    assert "zebra marker" in _as_a_user(repo, "query", "zebra marker").stdout
    assert "is 0400" not in _as_a_user(repo, "doctor").stdout


def test_a_memory_db_that_cannot_be_written_gets_its_fix_not_run_the_command_again(repo: Path) -> None:
    """An immutable memory.db (`chattr +i`; a 0400 one its owner cannot chmod alike): sync and the
    post-commit sync said "attempt to write a readonly database (quick_check found the file whole); run the
    command again", which fails the same way, and doctor's fix for the failed post-commit sync was `nexusmem
    sync`, which did too. They name the file that cannot be written and how to make it writable."""
    db = synced(repo)
    if not shutil.which("chattr") or subprocess.run(["chattr", "+i", str(db)], check=False).returncode:
        pytest.skip("no immutable files here (chattr)")
    try:
        commit(repo, "feat: the zebra marker", {"b.txt": "b\n"})
        for args in (("sync", "--no-embed"), ("sync", "--auto")):
            proc = run_script(*args, cwd=repo)
            line = one_line_error(proc)
            assert f"{db} is not writable (immutable" in line and f"chattr -i {db}" in line, line
            assert "run the command again" not in line and "quick_check" not in line, line
        run_cli("-C", str(repo), "hook", "git-post", "install")  # after the commit: doctor reads its log
        (repo / ".nexusmem" / "auto-sync.log").write_text(proc.stderr, encoding="utf-8")
        report = json.loads(run_cli("-C", str(repo), "doctor", "--json", ok=False).stdout)
        problems = [c for c in report["checks"] if not c["ok"]]
        failed = [c for c in problems if "the post-commit sync failed" in c["detail"]]
        store = [c for c in problems if c["area"] == "store"]
        assert failed and store and f"{db} is not writable" in store[0]["detail"], problems
        assert failed[0]["fix"] == store[0]["fix"] and f"chattr -i {db}" in store[0]["fix"], problems
    finally:
        subprocess.run(["chattr", "-i", str(db)], check=True)
    assert run_script("sync", "--no-embed", cwd=repo).returncode == 0
    assert "zebra marker" in run_script("query", "zebra marker", cwd=repo).stdout


def test_a_memory_db_of_another_user_that_cannot_be_written_is_named_as_such(repo: Path) -> None:
    """A memory.db of mode 0400 that belongs to another user (`sudo cp` put it there): nobody but its owner
    can make it writable, and the message says so rather than "run the command again"."""
    db = synced(repo)
    db.chmod(0o400)
    if os.geteuid() == 0:
        os.chown(db, 12345, 12345)
    elif db.stat().st_uid == os.getuid():
        pytest.skip("only root can give a file to another user")
    line = one_line_error(_as_a_user(repo, "sync", "--no-embed"))
    assert f"{db} is not writable: it belongs to another user (uid 12345" in line and "chown" in line, line
    assert "run the command again" not in line, line


@pytest.mark.parametrize("rebuild", [False, True], ids=["sync", "rebuild"])
def test_a_memory_db_deleted_while_a_sync_runs_is_said_and_the_next_sync_starts_clean(
    repo: Path, isolated_home: Path, rebuild: bool
) -> None:
    """memory.db deleted while a sync ran (here: as its embedder is asked): the sync crashed, exit 3
    "internal error (FileNotFoundError ...)" with a traceback in crash.log; its -wal was left beside no
    database, to be replayed into the next one; and after a `sync --rebuild`, doctor went on saying the rebuild
    was stopped and the memory was as before it, once the next sync had built a new one. The sync now says
    the file was removed while it ran (exit 1), leaves no -wal or -shm and no mark, and the next sync builds
    a memory that holds the repository and checks out whole."""
    from helpers.embedding import set_embedding
    from helpers.ollama_standin import ollama_standin

    db = synced(repo)
    state = repo / ".nexusmem"
    commit(repo, "feat: the zebra marker", {"b.txt": "b\n"})
    with ollama_standin() as server:
        set_embedding(repo, provider="ollama", url=server.url)
        server.before = lambda: db.unlink(missing_ok=True)
        proc = run_script("sync", *(["--rebuild"] if rebuild else []), cwd=repo)
    assert server.requests, proc.stderr
    line = one_line_error(proc)
    assert (
        line == f"Error: {db} was removed while this sync ran; run `nexusmem sync` to build the memory again"
    )
    assert not (isolated_home / ".nexusmem" / "crash.log").exists()
    assert sorted(p.name for p in state.iterdir() if p.name.startswith("memory.db")) == []
    assert not (state / "sync.unfinished").exists()
    set_embedding(repo, provider="none")
    assert run_script("sync", cwd=repo).returncode == 0
    assert "zebra marker" in run_script("query", "zebra marker", cwd=repo).stdout
    doctor = run_script("doctor", cwd=repo)
    assert "was stopped" not in doctor.stdout and "quick_check ok" in doctor.stdout, doctor.stdout


def test_the_wal_and_rebuild_mark_of_a_deleted_memory_db_are_not_taken_into_the_next_one(repo: Path) -> None:
    """What a `sync --rebuild` killed after its memory.db was deleted leaves: a -wal (and -shm) beside no
    database, and the rebuild's mark. The next sync made a new memory.db beside that WAL, which SQLite
    replays into it (pages of the deleted file laid over a new one), and doctor went on saying "the last
    `sync --rebuild` ... was stopped ... the memory is as it was before it". The next sync starts clean."""
    import sqlean

    db = synced(repo)
    state = repo / ".nexusmem"
    wal = Path(f"{db}-wal")
    conn = sqlean.connect(str(db), isolation_level=None)
    conn.execute("PRAGMA wal_autocheckpoint = 0")
    for n in range(20):
        conn.execute("INSERT INTO meta(key, value) VALUES (?, ?)", (f"orphan.marker.{n}", "x" * 3000))
    kept = wal.read_bytes()
    conn.close()
    assert len(kept) > 4096, len(kept)
    db.unlink()
    Path(f"{db}-shm").unlink(missing_ok=True)
    wal.write_bytes(kept)
    (state / "sync.unfinished").write_bytes(b"rebuild\n")
    commit(repo, "feat: the zebra marker", {"b.txt": "b\n"})
    assert run_script("sync", "--no-embed", cwd=repo).returncode == 0
    assert "zebra marker" in run_script("query", "zebra marker", cwd=repo).stdout
    conn = sqlean.connect(f"file:{db}?mode=ro", uri=True)
    try:
        assert conn.execute("PRAGMA quick_check").fetchall() == [("ok",)]
        assert conn.execute("SELECT key FROM meta WHERE key LIKE 'orphan.marker.%'").fetchall() == []
    finally:
        conn.close()
    doctor = run_script("doctor", cwd=repo)
    assert "was stopped" not in doctor.stdout and doctor.returncode == 0, doctor.stdout


def test_an_unexpected_exception_prints_one_line_logs_the_traceback_and_exits_3(
    repo: Path, isolated_home: Path
) -> None:
    """A bug stand-in: status() raises in a real `nexusmem` process (the code path is the entry point's)."""
    synced(repo)
    program = (
        "import nexusmem.status as st\n"
        "def boom(project, note=None, **more):\n"
        "    raise KeyError('\\x1b]52;c;aGVsbG8=\\x07 unexpected')\n"
        "st.status = boom\n"
        "from nexusmem.cli.main import main\n"
        f"main(['-C', {str(repo)!r}, 'status'])\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", program], cwd=isolated_home, capture_output=True, text=True, check=False
    )
    line = one_line_error(proc, code=3)
    log = isolated_home / ".nexusmem" / "crash.log"
    assert line == (
        "nexusmem: internal error (KeyError: '\\x1b]52;c;aGVsbG8=\\x07 unexpected'); "
        f"details in {log} (please include them in a bug report)"
    )
    assert "\x1b" not in proc.stderr
    assert stat.S_IMODE(log.stat().st_mode) == 0o600
    text = log.read_text(encoding="utf-8")
    assert "Traceback (most recent call last)" in text and "in boom" in text and "command '-C'" in text


def test_a_secret_in_a_crash_never_reaches_the_crash_log(repo: Path, isolated_home: Path) -> None:
    """The crash log is what a user attaches to a bug report: an exception quoting a token (as `sync --source`
    once did with whatever was typed) is written redacted, and printed redacted."""
    synced(repo)
    token = "ghp_" + "Ab3" * 12
    program = (
        "import nexusmem.status as st\n"
        "def boom(project, note=None, **more):\n"
        f"    raise KeyError('unknown value {token}')\n"
        "st.status = boom\n"
        "from nexusmem.cli.main import main\n"
        f"main(['-C', {str(repo)!r}, 'status'])\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", program], cwd=isolated_home, capture_output=True, text=True, check=False
    )
    assert proc.returncode == 3 and "internal error (KeyError" in proc.stderr
    log = (isolated_home / ".nexusmem" / "crash.log").read_text(encoding="utf-8")
    assert "in boom" in log
    assert token not in log and token not in proc.stderr


def test_an_unknown_sync_source_is_a_usage_error(repo: Path, isolated_home: Path) -> None:
    synced(repo)
    result = run_cli("-C", str(repo), "sync", "--source", "bogus", ok=False)
    assert result.exit_code == 2, result.output
    assert "unknown source 'bogus' (known: git, diff, docs" in result.output
    assert not (isolated_home / ".nexusmem" / "crash.log").exists()
    assert run_cli("-C", str(repo), "sync", "--source", "atuin", "-q").exit_code == 0


def test_a_failed_auto_sync_leaves_a_dated_line_in_its_log(repo: Path) -> None:
    """The post-commit sync writes to .nexusmem/auto-sync.log; its error line had no date, unlike the
    lines around it, so nobody could tell which commit's sync had failed."""
    synced(repo)
    (repo / ".nexusmem" / "config.json").write_text('{"query": {"budget": }}', encoding="utf-8")
    proc = run_script("sync", "--auto", cwd=repo)
    assert proc.returncode == 1
    (line,) = proc.stderr.strip().splitlines()
    assert re.match(
        r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00 pid \d+: Error: .*config\.json: not valid JSON", line
    ), line


def test_a_value_that_cannot_be_used_is_a_usage_error_on_both_paths(repo: Path) -> None:
    # Exit 2, as for what the parser rejects (docs/contracts.md, section 9), on the plain path and click's.
    from helpers import commit, run_script

    commit(repo, "feat: cache", {"src/cache.py": "CACHE = {}\n"})
    assert run_script("sync", "--no-embed", cwd=repo).returncode == 0
    for args in (
        ["query", "--since", "notadate", "cache"],
        ["query", "--as-of", "notadate", "cache"],
        ["query", "--json", "--until", "notadate", "cache"],
        ["query", "--budget", "10", "cache"],
        ["query", "--since", "2024-05-02", "--until", "2024-05-01", "cache"],
        ["sync", "--prune-source", "bogus"],
        ["sync", "--source", "bogus"],
        # these exited 1, as if the command had failed, when it is the value given that is wrong
        ["forget", "--regex", "a{1001}"],
        ["team", "init", "--url", "http://x"],
        ["hook", "agent", "install", "codex", "--project"],
    ):
        result = run_script(*args, cwd=repo)
        assert result.returncode == 2, (args, result.returncode, result.stderr)
        assert "Error:" in result.stderr


def _sync_in_a_small_tmpfs(
    repo: Path, folder: Path, size: str, fill: int = 0
) -> subprocess.CompletedProcess[str]:
    """`nexusmem sync --no-embed` in REPO with a tmpfs of SIZE on FOLDER (FILL bytes of it used), in a
    private mount namespace (a skip where that cannot be done: not root, no unshare)."""
    runner = _in_a_small_tmpfs(folder, size, fill)
    if runner is None:
        pytest.skip("a tmpfs of our own needs root and unshare")
    return subprocess.run(
        [*runner, console_script(), "sync", "--no-embed"],
        cwd=repo,
        capture_output=True,
        text=True,
        check=False,
    )


def _in_a_small_tmpfs(folder: Path, size: str, fill: int = 0) -> list[str] | None:
    """A command prefix that runs it with a tmpfs of SIZE mounted on FOLDER (FILL bytes of it used), in a
    private mount namespace; None where that cannot be done (not root, no unshare)."""
    if os.geteuid() != 0 or not shutil.which("unshare"):
        return None
    folder.mkdir(parents=True, exist_ok=True)
    mount = f"mount -t tmpfs -o size={size} tmpfs '{folder}'"
    if fill:
        mount += f" && head -c {fill} /dev/zero > '{folder}/filler'"
    probe = subprocess.run(["unshare", "-m", "sh", "-c", mount], capture_output=True, check=False)
    if probe.returncode != 0:
        return None
    return ["unshare", "-m", "sh", "-c", mount + ' && exec "$0" "$@"']


def test_a_full_disk_is_named_as_such_not_as_a_failed_rollback(repo: Path) -> None:
    # SQLite rolls a transaction back itself when the disk fills; our ROLLBACK after it used to fail with
    # "cannot rollback - no transaction is active", and that was the message the user got.
    for i in range(40):
        (repo / f"f{i}.txt").write_text(os.urandom(12000).hex(), encoding="utf-8")
    commit(repo, "feat: more than the disk holds", {})
    line = one_line_error(_sync_in_a_small_tmpfs(repo, repo / ".nexusmem", "400k"))
    assert "the disk is full" in line and "free some space and run the command again" in line
    assert "cannot rollback" not in line


def _read_on_a_full_disk(repo: Path, prepare: str = "", then: str = "") -> tuple[str, ...]:
    """Sync REPO with its `.nexusmem/` on a 3 MB tmpfs, run the shell text PREPARE after the sync (` && …`),
    fill the disk, then run `status --json` and `query --json evict oldest` (and the shell text THEN), in a
    private mount namespace (a skip where that cannot be done: not root, no unshare). Returns stderr and what
    each printed (status and query with their `rc=N`), once the disk is checked to be full."""
    state = repo / ".nexusmem"
    runner = _in_a_small_tmpfs(state, "3m")
    if runner is None:
        pytest.skip("a tmpfs of our own needs root and unshare")
    nexusmem = console_script()
    script = (
        f"{nexusmem} sync --no-embed >/dev/null{prepare} && head -c 4m /dev/zero > {state}/filler 2>/dev/null;"
        f" test ! -e {state}/memory.db-shm || exit 9; df -P {state} | tail -n 1;"
        f" for c in 'status --json' 'query --json evict oldest'; do echo ==; {nexusmem} $c; echo rc=$?; done"
    )
    if then:
        script += f"; echo ==; {then}"
    proc = subprocess.run(
        [*runner, "sh", "-c", script], cwd=repo, capture_output=True, text=True, check=False
    )
    assert proc.returncode == 0, (proc.stdout, proc.stderr)
    disk, *printed = proc.stdout.split("==\n")
    assert disk.split()[4] == "100%", disk
    return (proc.stderr, *printed)


def test_status_query_and_mcp_read_a_memory_on_a_full_disk(repo: Path) -> None:
    """The disk holding `.nexusmem/` filled up after a sync: `status --json` and `query` stopped with "a
    write failed (disk I/O error) ... free some space" (SQLite could not make the -shm file every connection
    needs), and MCP get_status with a tool error. They are reads: they answer from the file as the last sync
    left it (no write-ahead log is left then), with a note that the disk is full."""
    commit(repo, "fix(cache): evict the oldest entry first", {"cache.py": "LRU = True\n"})
    state = repo / ".nexusmem"
    get_status = "import json, sys; from nexusmem import mcp_server as m; r = m.run_status(sys.argv[1]);"
    get_status += " print(json.dumps([r.is_error, r.structured_content]))"
    stderr, status_out, query_out, mcp_out = _read_on_a_full_disk(
        repo, then=f"{sys.executable} -c '{get_status}' {repo}"
    )
    assert status_out.endswith("rc=0\n") and query_out.endswith("rc=0\n"), (status_out, query_out, stderr)
    info = json.loads(status_out.removesuffix("rc=0\n"))
    assert info["nodes"] >= 2 and info["low_space"]["free_bytes"] == 0, info
    found = json.loads(query_out.removesuffix("rc=0\n"))
    assert "evict the oldest entry first" in json.dumps(found), found
    is_error, structured = json.loads(mcp_out)
    assert not is_error and structured["nodes"] == info["nodes"], mcp_out
    note = f"nexusmem: note: the disk holding {state} is full: memory read as it was last written"
    assert stderr.count(note) == 2 and "Error" not in stderr, stderr


def test_a_memory_an_older_release_made_on_a_full_disk_says_it_needs_its_upgrade(repo: Path) -> None:
    """A memory an older release made (an older schema) on a full disk: `status --json` and `query` said "a
    write failed (disk I/O error)", the migration every command runs first having no room. They say in one
    line that the memory needs its upgrade and the disk has no room for it."""
    from nexusmem.store import migrations

    commit(repo, "fix(cache): evict the oldest entry first", {"cache.py": "LRU = True\n"})
    state = repo / ".nexusmem"
    older = "import sys; from nexusmem.store import connection as c, migrations as m; db = c.connect(sys.argv[1]);"
    older += f" m.migrate(db, target={migrations.LATEST - 1}); db.close()"
    stderr, status_out, query_out = _read_on_a_full_disk(
        repo, prepare=f" && rm {state}/memory.db && {sys.executable} -c '{older}' {state}/memory.db"
    )
    assert status_out == "rc=1\n" and query_out == "rc=1\n", (status_out, query_out, stderr)
    said = (
        f"Error: {state}/memory.db needs its upgrade (a migration to this release's schema), and the disk"
        " holding it has no room for it: free some space; then any command upgrades it\n"
    )
    assert stderr == said * 2, stderr


def test_a_full_user_folder_does_not_fail_a_sync_that_wrote_its_memory(
    repo: Path, isolated_home: Path
) -> None:
    # The project registry (~/.nexusmem/projects.json) is an index: a full or read-only user folder is said,
    # with the file, and the sync that wrote its memory still succeeds.
    commit(repo, "feat: cache", {"src/cache.py": "CACHE = {}\n"})
    home = Path(os.environ["NEXUSMEM_HOME"])
    proc = _sync_in_a_small_tmpfs(repo, home, "64k", fill=64 * 1024)
    assert proc.returncode == 0, proc.stderr
    assert f"{home / 'projects.json'}: cannot record {repo} in the project registry" in proc.stderr
    assert "No space left on device" in proc.stderr
    assert "cache" in run_script("query", "cache", cwd=repo).stdout


def test_doctor_tells_a_read_only_store_from_a_damaged_one(repo: Path) -> None:
    # Its advice for a damaged store (move memory.db aside and sync) would lose the verdicts and forget
    # entries a sync cannot rebuild: a read-only mount is not damage.
    state, prefix = _synced_read_only(repo)
    try:
        proc = subprocess.run(
            [*prefix, console_script(), "doctor"], cwd=repo, capture_output=True, text=True, check=False
        )
    finally:
        state.chmod(0o700)
    store_lines = [line for line in proc.stdout.splitlines() if " store " in line or "fix:" in line]
    assert any("read-only" in line and "nothing shows the store damaged" in line for line in store_lines), (
        proc.stdout
    )
    assert "memory.db.damaged" not in proc.stdout


# Run inside the private mount namespace, in the repository, with .nexusmem a small empty tmpfs: the memory
# is copied in and held open by a reader (an MCP server's, as the -shm a sync needs stays), the disk is filled
# to its last byte, a commit's post-commit hook runs its sync, and what status and doctor then say is printed.
_FULL_DISK_COMMIT = """
import json, os, shutil, subprocess, sys, time
import sqlean
from nexusmem.oslock import held

saved, nexusmem = sys.argv[1], sys.argv[2]
shutil.copytree(saved, ".nexusmem", dirs_exist_ok=True)
reader = sqlean.connect(".nexusmem/memory.db")
reader.execute("SELECT count(*) FROM nodes").fetchall()
fd = os.open(".nexusmem/filler", os.O_WRONLY | os.O_CREAT, 0o600)
for chunk in (65536, 512, 1):
    try:
        while True:
            os.write(fd, bytes(chunk))
    except OSError:
        pass
os.close(fd)
with open("b.txt", "w") as fh:
    fh.write("more than the disk holds")
subprocess.run(["git", "add", "b.txt"], check=True)
subprocess.run(["git", "commit", "-qm", "feat: on a full disk"], check=True)
lock = ".nexusmem/sync.lock"
deadline = time.monotonic() + 30
while time.monotonic() < deadline and not (os.path.exists(lock) and not held(lock)):
    time.sleep(0.2)
time.sleep(0.5)
out = {"log": open(".nexusmem/auto-sync.log").read()}
for name in ("status", "doctor"):
    proc = subprocess.run([nexusmem, name, "--json"], capture_output=True, text=True)
    out[name] = json.loads(proc.stdout) if proc.stdout.strip() else proc.stderr
    out[name + "_code"] = proc.returncode
reader.close()
print(json.dumps(out))
"""


def test_a_post_commit_sync_on_a_full_disk_is_reported_though_its_log_cannot_be_written(
    repo: Path, tmp_path: Path
) -> None:
    """The disk holding .nexusmem/ full to the last byte: the post-commit sync failed, its error could not be
    written to auto-sync.log (0 bytes), and `doctor` said "No problems found"; `status` said only that HEAD
    had moved. The failed run leaves a mark (an empty file needs no free block), and both say the disk has
    too little room left."""
    import json

    synced(repo)
    run_cli("-C", str(repo), "hook", "git-post", "install")
    saved = tmp_path / "saved"
    shutil.copytree(repo / ".nexusmem", saved)
    runner = _in_a_small_tmpfs(repo / ".nexusmem", "2m")
    if runner is None:
        pytest.skip("a tmpfs of our own needs root and unshare")
    proc = subprocess.run(
        [*runner, sys.executable, "-c", _FULL_DISK_COMMIT, str(saved), console_script()],
        cwd=repo,
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    seen = json.loads(proc.stdout)
    assert seen["log"] == "", seen["log"]  # the failure could not be written there: the case at hand
    status, doctor = seen["status"], seen["doctor"]
    assert isinstance(status, dict) and isinstance(doctor, dict), seen
    assert status["auto_sync_failed"] is not None, status
    assert "could not be written" in status["auto_sync_failed"]["error"]
    assert status["low_space"] is not None and status["low_space"]["free_bytes"] < 4096, status
    problems = [c["detail"] for c in doctor["checks"] if not c["ok"]]
    assert seen["doctor_code"] == 1, doctor
    assert any("the post-commit sync failed" in p for p in problems), problems
    assert any("MB free" in p and "a sync fails when the disk is full" in p for p in problems), problems


def test_team_commands_without_the_team_extra_say_how_to_install_it(repo: Path, tmp_path: Path) -> None:
    """Without `nexusmem[team]` (no psycopg), every team command crashed with exit 3 ("internal error ... No
    module named 'psycopg'"): `query --team` gave no local results at all and `precheck --team` no note."""
    synced(repo)
    blocked = tmp_path / "no-psycopg"
    (blocked / "psycopg").mkdir(parents=True)
    (blocked / "psycopg" / "__init__.py").write_text("raise ImportError(\"No module named 'psycopg'\")\n")
    url = "postgresql://alice@db.internal:5432/nexusmem"
    env = {
        "PYTHONPATH": os.pathsep.join(p for p in (str(blocked), os.environ.get("PYTHONPATH", "")) if p),
        "NEXUSMEM_TEAM_URL": url,
    }
    install = "team memory needs the PostgreSQL client psycopg: pip install 'nexusmem[team]'"
    for args in (["team", "init", "--url", url], ["team", "status"], ["team", "push"]):
        line = one_line_error(run_script(*args, cwd=repo, env=env))
        assert install in line, (args, line)
    answer = run_script("query", "--team", "cache marker", cwd=repo, env=env)
    assert answer.returncode == 0, answer.stderr
    assert f"note: team store not searched: {install}" in answer.stdout, answer.stdout
    assert "feat: remember the cache marker" in answer.stdout, answer.stdout
    for strict in ([], ["--strict"]):
        checked = run_script("precheck", "--team", *strict, "--files", "a.txt", cwd=repo, env=env)
        assert checked.returncode == 0, (strict, checked.stderr)
        assert f"team store not checked: {install}" in checked.stderr, (strict, checked.stderr)


def test_forget_team_that_cannot_run_leaves_local_memory_as_it_was(repo: Path, tmp_path: Path) -> None:
    """`forget VALUE --team --yes` without the team extra (or without a team store) printed only the team's
    error and exited 1, though the local forget had run: the value was gone here, its deny-list entry
    recorded, and nothing said so. A team part that cannot run is now found before anything is done; one
    whose store does not answer comes after the local result, which is printed first."""
    synced(repo)
    blocked = tmp_path / "no-psycopg"
    (blocked / "psycopg").mkdir(parents=True)
    (blocked / "psycopg" / "__init__.py").write_text("raise ImportError(\"No module named 'psycopg'\")\n")
    no_driver = {
        "PYTHONPATH": os.pathsep.join(p for p in (str(blocked), os.environ.get("PYTHONPATH", "")) if p),
        "NEXUSMEM_TEAM_URL": "postgresql://alice@db.internal:5432/nexusmem",
    }
    install = "team memory needs the PostgreSQL client psycopg: pip install 'nexusmem[team]'"
    for env, error in ((no_driver, install), ({}, "no team store is configured")):
        line = one_line_error(run_script("forget", "marker", "--team", "--yes", cwd=repo, env=env))
        assert error in line, line
        listed = run_script("forget", "--list", cwd=repo)
        assert "the deny-list is empty" in listed.stdout, listed.stdout
        answer = run_script("query", "cache marker", cwd=repo)
        assert "feat: remember the cache marker" in answer.stdout, answer.stdout

    # A team store that does not answer (nothing listens there): the local part is done and said, then why
    # the team's was not.
    closed = {"NEXUSMEM_TEAM_URL": "postgresql://alice@127.0.0.1:9/nexusmem"}
    proc = run_script("forget", "marker", "--team", "--yes", cwd=repo, env=closed)
    assert proc.returncode == 1, (proc.stdout, proc.stderr)
    assert "deleted 2 node(s): 1 code_diff, 1 git_commit" in proc.stdout, proc.stdout
    assert "127.0.0.1" in proc.stderr and "Traceback" not in proc.stderr, proc.stderr


def test_a_command_run_in_a_deleted_folder_says_so_in_one_line(repo: Path, isolated_home: Path) -> None:
    """`mkdir d; cd d; rmdir ../d; nexusmem status` ended in "internal error (FileNotFoundError …)", exit 3 and
    a crash.log entry. It says the folder is gone (exit 1), as git does; `-C` with a full path still works, and
    the commands the hooks run (precheck, `sync --auto`) say nothing and exit 0."""
    synced(repo)

    def in_a_deleted_folder(*args: str, given: str | None = None) -> subprocess.CompletedProcess[str]:
        gone = repo.parent / "gone"
        gone.mkdir()
        return subprocess.run(
            [
                "bash",
                "-c",
                'cd "$1" && rmdir "$1" && shift && exec "$@"',
                "-",
                str(gone),
                console_script(),
                *args,
            ],
            input=given,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )

    line = one_line_error(in_a_deleted_folder("status"))
    assert line.startswith("Error: the current folder no longer exists"), line
    one_line_error(in_a_deleted_folder("query", "cache"))
    for hooks in (("precheck",), ("precheck", "--strict"), ("sync", "--auto")):
        proc = in_a_deleted_folder(*hooks)
        assert (proc.returncode, proc.stdout, proc.stderr) == (0, "", ""), (hooks, proc)
    for machine_wide in (("projects",), ("doctor",), ("hook", "status")):  # no repository needed
        proc = in_a_deleted_folder(*machine_wide)
        assert "no longer exists" not in proc.stderr and proc.returncode in (0, 1), (machine_wide, proc)
    assert str(repo) in in_a_deleted_folder("projects").stdout
    elsewhere = in_a_deleted_folder("-C", str(repo), "query", "cache", "marker")
    assert elsewhere.returncode == 0 and "cache marker" in elsewhere.stdout, elsewhere
    # The MCP server takes every project by projectRoot: an agent started there still gets its tools.
    requests = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18",
         "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "search_memory",
         "arguments": {"query": "cache", "projectRoot": str(repo)}}},
    ]  # fmt: skip
    mcp = in_a_deleted_folder("mcp", given="".join(json.dumps(r) + "\n" for r in requests))
    answers = {a.get("id"): a for a in map(json.loads, mcp.stdout.splitlines())}
    assert "result" in answers.get(1, {}) and "cache" in json.dumps(answers.get(2)), (mcp.stdout, mcp.stderr)
    assert not (isolated_home / ".nexusmem" / "crash.log").exists()


def test_a_store_a_newer_release_wrote_is_refused_by_reads_too(repo: Path) -> None:
    """Only sync and doctor refused a memory whose schema a newer NexusMem had moved on: status showed
    "schema v16" without a word, query and show answered from tables this release may read wrong, and
    precheck checked the commit against them. Every read now refuses it in one line (README, Upgrading);
    precheck, a hook, lets the commit go with one line."""
    from nexusmem.store import migrations, open_store

    db = synced(repo)
    newer = migrations.LATEST + 1
    with open_store(db) as store:
        store.conn.execute(
            "INSERT INTO schema_migrations(version, name, applied_at) VALUES (?, 'future', 0)", (newer,)
        )
    # The user who meets it has upgraded already: it names the program that is old (the one that ran), and
    # what to do with the new one.
    said = (
        f"this memory was written by a newer NexusMem (schema {newer}) than the one running (schema"
        f" {migrations.LATEST}, {console_script()}): a hook or MCP server still runs the old install; run"
        " `nexusmem doctor` with the new one (or restart your agent)"
    )
    for args in (("status",), ("status", "--json"), ("query", "cache marker"), ("show", "HEAD")):
        line = one_line_error(run_script(*args, cwd=repo))
        assert said in line, (args, line)
    (repo / "a.txt").write_text("b\n", encoding="utf-8")
    subprocess.run(["git", "add", "a.txt"], cwd=repo, check=True)
    for args in (("precheck",), ("precheck", "--strict")):
        proc = run_script(*args, cwd=repo)
        assert proc.returncode == 0, (args, proc.stderr)
        (line,) = proc.stderr.strip().splitlines()
        assert line.startswith("nexusmem precheck: memory not checked (") and said in line, line
