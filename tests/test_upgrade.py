"""Upgrading a memory an older release wrote: what the user is told, the copy kept of the old one, and how an
older release reads a newer memory. The store is a real synced memory set back to schema 16 (the release an
upgrade walkthrough started from: its tables are today's but for migrations 17 and 18), read by the real
console script with HOME and NEXUSMEM_HOME in temp dirs."""

from __future__ import annotations

import json
import os
import re
import stat
import subprocess
import time
from pathlib import Path

from nexusmem.store import connection, migrations

from helpers.cli import console_script, run_script
from helpers.git import commit, init_repo

OLD = 16


def _memory(tmp_path: Path) -> tuple[Path, Path]:
    """A repository with a synced memory set back to schema OLD: (repository, memory.db)."""
    repo = init_repo(tmp_path / "repo")
    commit(repo, "Add the zorblax parser", {"parser.py": "def zorblax():\n    return 1\n"})
    commit(repo, "Fix the zorblax parser on empty input", {"parser.py": "def zorblax():\n    return 2\n"})
    synced = run_script("sync", "-q", cwd=repo)
    assert synced.returncode == 0, synced.stderr
    db = repo / ".nexusmem" / "memory.db"
    conn = connection.connect(db)
    conn.execute("DELETE FROM schema_migrations WHERE version > ?", (OLD,))
    conn.execute("DROP INDEX IF EXISTS nodes_renames")
    conn.close()
    return repo, db


def _nodes(db: Path) -> tuple[int, int]:
    """(schema version, node count) of the database file DB, read without migrating it."""
    conn = connection.connect(db, readonly=True)
    try:
        return migrations.current_version(conn), int(conn.execute("SELECT COUNT(*) FROM nodes").fetchone()[0])
    finally:
        conn.close()


def _notice(db: Path) -> str:
    copy = db.with_name(f"memory.db.pre-v{OLD}.bak")
    return (
        f"nexusmem: memory upgraded from schema {OLD} to {migrations.LATEST} (a copy of the old one is {copy};"
        " older NexusMem releases can no longer read this memory)"
    )


def test_an_upgrade_keeps_a_copy_of_the_old_memory_and_says_so_once(tmp_path: Path) -> None:
    repo, db = _memory(tmp_path)
    before = _nodes(db)
    stale = db.with_name(f"memory.db.pre-v{OLD}.bak")
    stale.write_bytes(b"an older copy of this version, from an upgrade undone since")

    first = run_script("status", cwd=repo)
    assert first.returncode == 0, first.stderr
    assert first.stderr.splitlines() == [_notice(db)]
    # The copy is the memory as the old release left it, private like every file NexusMem writes; the one
    # an earlier upgrade from the same version left is replaced, and nothing else is left beside it.
    assert _nodes(stale) == before
    assert stat.S_IMODE(stale.stat().st_mode) == 0o600
    assert sorted(p.name for p in db.parent.glob("memory.db.*")) == [stale.name]
    assert _nodes(db)[0] == migrations.LATEST

    again = run_script("status", cwd=repo)
    assert again.returncode == 0 and again.stderr == ""


def test_a_post_commit_upgrade_is_quiet_and_told_at_the_next_command(tmp_path: Path) -> None:
    repo, db = _memory(tmp_path)
    commit(repo, "Document zorblax", {"README.md": "zorblax parses things\n"})

    # What the post-commit hook runs (its output goes to .nexusmem/auto-sync.log, never the terminal).
    hook = run_script("sync", "--auto", cwd=repo)
    assert hook.returncode == 0, hook.stderr
    assert "upgraded" not in hook.stdout + hook.stderr
    assert _nodes(db)[0] == migrations.LATEST
    assert db.with_name(f"memory.db.pre-v{OLD}.bak").is_file()

    query = run_script("query", "zorblax", cwd=repo)
    assert query.returncode == 0, query.stderr
    assert query.stderr.splitlines() == [_notice(db)]
    assert run_script("query", "zorblax", cwd=repo).stderr == ""

    doctor = run_script("doctor", cwd=repo)
    copy = db.with_name(f"memory.db.pre-v{OLD}.bak")
    assert f"memory upgraded from schema {OLD}: a copy of the old one is {copy}" in doctor.stdout


def test_forget_takes_the_pre_upgrade_copy_too(tmp_path: Path) -> None:
    repo, db = _memory(tmp_path)
    assert run_script("status", cwd=repo).returncode == 0
    copy = db.with_name(f"memory.db.pre-v{OLD}.bak")
    assert b"zorblax" in copy.read_bytes()

    gone = run_script("forget", "zorblax", "--yes", "--force", cwd=repo)
    assert gone.returncode == 0, gone.stderr
    assert not copy.exists()
    assert f"{copy.name}" in gone.stdout
    assert re.search(r"verified: the value is in none", gone.stdout)


def _schema_16_install(folder: Path) -> Path:
    """A console script at FOLDER/bin/nexusmem that answers as a schema-16 release (6a1b5db) does in front of
    a memory this release upgraded: `--version` works; anything else, `sync --auto` as the post-commit hook
    runs it too, is refused with its words (its sync dates the line and names its pid), exit 1."""
    script = folder / "bin" / "nexusmem"
    script.parent.mkdir(parents=True)
    refusal = f"database schema version {migrations.LATEST} is newer than this NexusMem ({OLD}); upgrade it"
    script.write_text(
        "#!/bin/sh\n"
        'if [ "$1" = --version ]; then echo "nexusmem 0.1.0"; exit 0; fi\n'
        'if [ "$1" = sync ]; then\n'
        f'    echo "$(date -u +%Y-%m-%dT%H:%M:%S+00:00) pid $$: Error: {refusal}"; exit 1\n'
        "fi\n"
        f'echo "Error: {refusal}" >&2; exit 1\n'
    )
    script.chmod(0o755)
    return script


def _refused_by_an_older_install(tmp_path: Path) -> tuple[Path, Path, Path]:
    """A repository whose sync hooks this release installed, then pinned to a schema-16 install
    (_schema_16_install), and a commit whose post-commit sync that install refused: (the repository, that
    install, the auto-sync log holding its refusal)."""
    repo = init_repo(tmp_path / "repo")
    commit(repo, "Add the zorblax parser", {"parser.py": "def zorblax():\n    return 1\n"})
    assert run_script("sync", "-q", cwd=repo).returncode == 0
    assert run_script("hook", "git-post", "install", cwd=repo).returncode == 0
    old = _schema_16_install(tmp_path / "old")
    hooks = repo / ".git" / "hooks"
    for name in ("post-commit", "post-merge", "post-applypatch"):
        text = (hooks / name).read_text(encoding="utf-8")
        pinned = re.search(r"nexusmem_pinned='([^']+)'", text)
        assert pinned is not None, text
        (hooks / name).write_text(text.replace(pinned.group(1), str(old)), encoding="utf-8")

    # The older release dates its log line to the second, and a failure within the second of the last sync
    # is taken as one that sync caught up with (autosync.last_failure): let that second pass.
    time.sleep(1.1)
    commit(repo, "Fix the zorblax parser on empty input", {"parser.py": "def zorblax():\n    return 2\n"})
    log = repo / ".nexusmem" / "auto-sync.log"
    deadline = time.monotonic() + 30
    while "upgrade it" not in (log.read_text(encoding="utf-8") if log.exists() else ""):
        assert time.monotonic() < deadline, "the post-commit hook logged nothing"
        time.sleep(0.2)

    return repo, old, log


def test_doctor_explains_an_older_installs_refusal_in_the_auto_sync_log(tmp_path: Path) -> None:
    """Hooks still pinned to a schema-16 install after another install upgraded the memory: each commit's
    post-commit sync logs that release's "database schema version 18 is newer than this NexusMem (16);
    upgrade it", and doctor repeated it with the fix `nexusmem sync` (which the next commit undid), as if the
    memory were to upgrade. It says which install ran it (the hooks that run it), that it is the one to
    upgrade, and a fix that points the hooks here first."""
    repo, old, log = _refused_by_an_older_install(tmp_path)

    doctor = run_script("doctor", cwd=repo)
    lines = doctor.stdout.splitlines()
    at = next(i for i, line in enumerate(lines) if "the post-commit sync failed at" in line)
    assert (
        f"is newer than this NexusMem ({OLD}); upgrade it (log: {log}): an older NexusMem (schema {OLD}),"
        f" {old} (run by the post-commit, post-merge and post-applypatch hooks here), refused this memory,"
        f" which a newer release upgraded to schema {migrations.LATEST}: that install is the one to upgrade,"
        " not the memory"
    ) in lines[at], lines[at]
    fix = lines[at + 1].strip().removeprefix("fix: ")
    assert fix.startswith("nexusmem hook git-post install && nexusmem sync"), fix

    bin_dir = Path(console_script()).parent
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"}
    pasted = subprocess.run(fix, shell=True, cwd=repo, env=env, capture_output=True, text=True, check=False)
    assert pasted.returncode == 0, pasted.stderr
    assert "the post-commit sync failed" not in run_script("doctor", cwd=repo).stdout


def test_both_refusals_of_a_newer_memory_are_read_back() -> None:
    """What doctor explains: this release's refusal (its program named) and the older releases' words."""
    said = migrations.newer_problem(migrations.LATEST + 1)
    assert migrations.refused_as_newer(f"Error: {said}") == (
        migrations.LATEST + 1,
        migrations.LATEST,
        migrations.running_program(),
    )
    older = "Error: database schema version 18 is newer than this NexusMem (16); upgrade it"
    assert migrations.refused_as_newer(older) == (18, 16, None)
    assert migrations.refused_as_newer("Error: disk I/O error") is None


def test_status_gives_doctors_fix_for_an_older_installs_refusal(tmp_path: Path) -> None:
    """The same refusal under `nexusmem status`: it said "what was committed since is not in memory: run
    `nexusmem sync`", the fix the next commit's older hook undoes; it says what doctor says (the install that
    refused, the one to upgrade) and doctor's fix, which, pasted, clears it."""
    repo, old, log = _refused_by_an_older_install(tmp_path)

    status = run_script("status", cwd=repo)
    line = next(line for line in status.stdout.splitlines() if line.startswith("auto-sync:"))
    assert f"{old} (run by the post-commit, post-merge and post-applypatch hooks here)" in line, line
    assert f"upgrade it (log: {log}): an older NexusMem (schema {OLD})" in line, line
    assert "that install is the one to upgrade, not the memory" in line, line
    assert line.endswith(
        "run `nexusmem hook git-post install && nexusmem sync` (points the sync hooks at this install, then"
        " catches up)"
    ), line
    failed = json.loads(run_script("status", "--json", cwd=repo).stdout)["auto_sync_failed"]
    assert failed["fix"] == "nexusmem hook git-post install && nexusmem sync", failed

    bin_dir = Path(console_script()).parent
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"}
    pasted = subprocess.run(
        failed["fix"], shell=True, cwd=repo, env=env, capture_output=True, text=True, check=False
    )
    assert pasted.returncode == 0, pasted.stderr
    assert "auto-sync:" not in run_script("status", cwd=repo).stdout


def test_scrub_and_doctor_say_the_upgrade_copy_still_holds_what_was_scrubbed(tmp_path: Path) -> None:
    """A memory an older release wrote (a password its rules kept) upgraded by this one, then scrubbed: the
    copy the upgrade kept (memory.db.pre-v16.bak) still held the password, while scrub spoke only of its own
    backup and doctor called the copy ok. Scrub says the copy still holds what it removed and how to delete
    it; doctor then warns, with that command as its fix, which clears it."""
    secret = "Hunter2-Zeta-07"
    repo, db = _memory(tmp_path)
    commit(repo, f"Rotate the staging creds: the password is {secret}", {"creds.txt": "rotated\n"})
    assert run_script("sync", "-q", cwd=repo).returncode == 0
    # As the older release's rules stored it: the value as written, and no record of the rules.
    conn = connection.connect(db)
    with conn:
        for column in ("title", "body"):
            conn.execute(
                f"UPDATE nodes SET {column} = replace({column}, '«redacted:password»', ?)", (secret,)
            )
        conn.execute("DELETE FROM schema_migrations WHERE version > ?", (OLD,))
        conn.execute("DELETE FROM meta WHERE key = 'redaction.rules'")
    conn.close()
    assert run_script("status", cwd=repo).returncode == 0  # the upgrade, keeping the copy
    copy = db.with_name(f"memory.db.pre-v{OLD}.bak")
    assert secret.encode() in copy.read_bytes()

    scrubbed = run_script("scrub", cwd=repo)
    assert scrubbed.returncode == 0, scrubbed.stderr
    assert secret.encode() not in db.read_bytes()
    assert secret.encode() in copy.read_bytes()  # left as it was: see the warning
    assert (
        f"WARNING: {copy}, the copy the upgrade from schema {OLD} kept (to go back to a release of that schema),"
        " still holds the text this scrub removed (secrets, transcript paths)"
    ) in scrubbed.stdout, scrubbed.stdout
    assert scrubbed.stdout.rstrip().endswith(f"need to go back: rm {copy}"), scrubbed.stdout

    doctor = run_script("doctor", cwd=repo)
    lines = doctor.stdout.splitlines()
    at = next(i for i, line in enumerate(lines) if f"{copy}, the copy the upgrade" in line)
    assert lines[at].startswith("PROBLEM") and "still holds the text `nexusmem scrub` removed at" in lines[at]
    assert lines[at + 1].strip() == f"fix: rm {copy}", lines[at + 1]
    subprocess.run(["sh", "-c", lines[at + 1].strip().removeprefix("fix: ")], check=True)
    assert str(copy) not in run_script("doctor", cwd=repo).stdout
