"""`nexusmem doctor` on a real repository with planted problems, and `nexusmem uninstall` on real rc files and
real git hooks (every file byte-identical to before install)."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from nexusmem import paths, sync
from nexusmem.install import git_hooks

from helpers import commit, git, run_cli
from helpers.sqlite_holder import held

pytestmark = pytest.mark.slow


def doctor_json(repo: Path) -> tuple[int, dict[str, object]]:
    result = run_cli("-C", str(repo), "doctor", "--json", ok=False)
    return result.exit_code, json.loads(result.stdout)


def store_problem(repo: Path) -> tuple[int, dict[str, object]]:
    """doctor's exit code and the first problem it found with REPO's store (there must be one)."""
    code, report = doctor_json(repo)
    store = [c for c in report["checks"] if c["area"] == "store" and not c["ok"]]  # type: ignore[union-attr]
    assert store, report
    return code, store[0]


def execute(db: Path, *statements: str) -> None:
    import sqlean

    conn = sqlean.connect(str(db))
    for sql in statements:
        conn.execute(sql)
    conn.commit()
    conn.close()


def tighten(repo: Path) -> None:
    """Modes as they should be, so that only what a test plants is reported."""
    for path in [paths.state_dir(repo), paths.user_dir()]:
        path.chmod(0o700)
    for path in paths.state_dir(repo).iterdir():
        if path.is_file():
            path.chmod(0o600)


def paste(fix: str, cwd: Path | None = None) -> None:
    """Run a fix doctor printed as a user pastes it into a shell (`nexusmem` found beside this Python), in
    CWD (the folder doctor ran in) when given."""
    bin_dir = os.path.dirname(sys.executable)
    env = {**os.environ, "PATH": bin_dir + os.pathsep + os.environ.get("PATH", "")}
    pasted = subprocess.run(fix, shell=True, env=env, capture_output=True, text=True, cwd=cwd)
    assert pasted.returncode == 0, pasted.stderr


def test_doctor_reports_each_planted_problem_with_its_fix_and_passes_once_fixed(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    commit(repo, "feat: first", {"a.py": "x = 1\n"})
    sync.sync(repo, embed=False)
    run_cli("-C", str(repo), "hook", "git", "install")
    tighten(repo)
    code, report = doctor_json(repo)
    assert code == 0 and report["problems"] == 0, report

    # 1. a dead hook path (the install it pinned is gone, and none is on PATH)
    hook = repo / ".git" / "hooks" / "pre-commit"
    hook.write_text(
        re.sub(r"nexusmem_pinned='[^']*'", "nexusmem_pinned='/gone/bin/nexusmem'", hook.read_text())
    )
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    # 2. a database readable by others
    (repo / ".nexusmem" / "memory.db").chmod(0o644)
    # 3. the registry lost this project's entry
    registry = paths.registry_path()
    registry.write_text(json.dumps({"version": 1, "projects": []}), encoding="utf-8")

    code, report = doctor_json(repo)
    problems = [c for c in report["checks"] if not c["ok"]]  # type: ignore[union-attr]
    assert code == 1 and sorted({c["area"] for c in problems}) == ["git", "registry", "store"], problems
    assert all("memory.db" in c["detail"] for c in problems if c["area"] == "store")
    by_area: dict[str, dict[str, str]] = {}
    for c in problems:
        by_area.setdefault(c["area"], c)
    assert "/gone/bin/nexusmem is gone" in by_area["git"]["detail"]
    assert by_area["git"]["fix"] == "nexusmem hook git install"
    assert "memory.db is 0644" in by_area["store"]["detail"]
    assert by_area["store"]["fix"] == f"chmod 600 {repo / '.nexusmem' / 'memory.db'}"
    assert "not registered" in by_area["registry"]["detail"]
    assert by_area["registry"]["fix"] == f"nexusmem -C {repo} init"
    text = run_cli("-C", str(repo), "doctor", ok=False)
    assert text.exit_code == 1 and "fix: nexusmem hook git install" in text.stdout

    # Each printed fix, applied, clears its problem.
    run_cli("-C", str(repo), "hook", "git", "install")
    for c in problems:
        if c["area"] == "store":
            os.system(c["fix"])  # the printed chmod commands, as a user would paste them
    run_cli("-C", str(repo), "init")
    registry.chmod(0o600)
    code, report = doctor_json(repo)
    assert code == 0, report


def test_doctor_reports_the_modes_it_found_not_those_of_the_files_it_made(repo: Path) -> None:
    """After `chmod 644 memory.db`, doctor's integrity check made memory.db-wal and -shm (SQLite gives them
    the database's mode) and doctor then reported all three "readable by others", two of them its own, and
    left them 0644."""
    commit(repo, "feat: first", {"a.py": "x = 1\n"})
    sync.sync(repo, embed=False)
    db = repo / ".nexusmem" / "memory.db"
    companions = [Path(f"{db}-wal"), Path(f"{db}-shm")]
    assert not any(p.exists() for p in companions), "the test needs a store with no -wal/-shm beside it"
    db.chmod(0o644)

    code, report = doctor_json(repo)
    modes = [c for c in report["checks"] if "readable by others" in str(c["detail"])]  # type: ignore[union-attr]
    assert code == 1 and [c["detail"] for c in modes] == [f"{db} is 0644, readable by others"], modes
    assert [c["fix"] for c in modes] == [f"chmod 600 {db}"]
    made = [p for p in companions if p.exists()]
    assert made, "doctor's check no longer makes them: the rest of the test checks nothing"
    assert all(stat.S_IMODE(p.stat().st_mode) == 0o600 for p in made), [oct(p.stat().st_mode) for p in made]
    assert stat.S_IMODE(db.stat().st_mode) == 0o644  # reported, not changed behind the user's back


def test_doctor_flags_a_corrupt_store(repo: Path) -> None:
    commit(repo, "feat: first", {"a.py": "x = 1\n"})
    sync.sync(repo, embed=False)
    tighten(repo)
    db = repo / ".nexusmem" / "memory.db"
    data = bytearray(db.read_bytes())
    data[100:4096] = b"\xff" * (4096 - 100)  # the first page's b-tree header
    db.write_bytes(bytes(data))
    code, report = doctor_json(repo)
    store = [c for c in report["checks"] if c["area"] == "store" and not c["ok"]]  # type: ignore[union-attr]
    assert code == 1 and store, report
    assert store[0]["fix"].startswith(f"mv {db} {db}.damaged && {{ mv {db}-wal {db}.damaged-wal;")
    assert store[0]["fix"].endswith(f"; nexusmem -C {repo} sync")
    # The printed fix, pasted as a user would, works (it said `sync --rebuild`, which fails on that file).
    paste(str(store[0]["fix"]))
    tighten(repo)
    code, report = doctor_json(repo)
    assert code == 0, report


def test_a_store_cut_to_zero_bytes_is_refused_not_set_up_again_empty(repo: Path) -> None:
    """A memory.db a sync once wrote, cut to 0 bytes (a full disk, a failed copy): every command refuses it
    with the fix, doctor flags it, and the next sync does not quietly start a new memory, which would bring
    back from git what `forget` had erased (its deny-list lived in the lost file)."""
    commit(repo, "feat: connect with password hunter2secret", {"a.py": "x = 1\n"})
    sync.sync(repo, embed=False)
    run_cli("-C", str(repo), "forget", "hunter2secret", "--yes")
    tighten(repo)
    db = repo / ".nexusmem" / "memory.db"
    db.write_bytes(b"")
    for suffix in ("-wal", "-shm"):
        db.with_name(db.name + suffix).unlink(missing_ok=True)
    for args in (["query", "password"], ["status"], ["sync", "-q"]):
        result = run_cli("-C", str(repo), *args, ok=False)
        assert result.exit_code == 1, (args, result.output)
        assert "is empty (0 bytes)" in result.output and "damaged" in result.output, result.output
    assert db.stat().st_size == 0  # nothing set it up again
    code, problem = store_problem(repo)
    assert code == 1 and "is empty (0 bytes)" in str(problem["detail"]), problem
    assert str(problem["fix"]).startswith(f"mv {db} {db}.damaged")


def test_an_empty_store_no_sync_finished_is_set_up_by_the_next(repo: Path) -> None:
    """A first sync stopped before its first write leaves a 0-byte file: not damage, the next sync goes on."""
    commit(repo, "feat: first", {"a.py": "x = 1\n"})
    state = repo / ".nexusmem"
    state.mkdir(mode=0o700)
    (state / "memory.db").write_bytes(b"")
    run_cli("-C", str(repo), "sync", "-q")
    assert "feat: first" in run_cli("-C", str(repo), "query", "first").output


def test_doctor_flags_a_store_missing_a_table_or_from_a_newer_release(repo: Path) -> None:
    commit(repo, "feat: first", {"a.py": "x = 1\n"})
    sync.sync(repo, embed=False)
    tighten(repo)
    db = repo / ".nexusmem" / "memory.db"
    execute(db, "INSERT INTO schema_migrations(version, name, applied_at) VALUES (999, 'future', 0)")
    code, problem = store_problem(repo)
    assert code == 1 and "written by a newer NexusMem (schema 999" in str(problem["detail"]), problem
    assert "upgrade" in str(problem["fix"])

    execute(db, "DELETE FROM schema_migrations WHERE version = 999", "DROP TABLE links")
    code, problem = store_problem(repo)
    assert code == 1 and "table(s) links missing" in str(problem["detail"]), problem
    assert str(problem["fix"]).startswith(f"mv {db} {db}.damaged")

    # A table only some commands use: doctor said "ok", and sync failed with "run the command again".
    execute(db, "CREATE TABLE links(x)")  # back, so that only the next one is missing
    execute(db, "DROP TABLE commit_generations")
    code, problem = store_problem(repo)
    assert code == 1 and "table(s) commit_generations missing" in str(problem["detail"]), problem
    result = run_cli("-C", str(repo), "sync", ok=False)
    assert result.exit_code == 1 and "is damaged: table(s) commit_generations missing" in result.output


def test_doctor_says_a_shell_log_that_is_a_folder_is_one(repo: Path) -> None:
    # It said "shell-history.jsonl is 0755, readable by others", and its fix (chmod 600) made the folder
    # unusable without making it a log.
    commit(repo, "feat: first", {"a.py": "x = 1\n"})
    sync.sync(repo, embed=False)
    tighten(repo)
    log = paths.shell_log_path()
    if log.exists():
        log.unlink()
    log.mkdir(mode=0o755)
    log.chmod(0o755)
    code, report = doctor_json(repo)
    problems = [c for c in report["checks"] if not c["ok"]]  # type: ignore[union-attr]
    assert code == 1 and len(problems) == 1, problems
    (problem,) = problems
    assert problem["detail"].startswith(f"{log} is a folder, not a file"), problem
    assert "readable by others" not in problem["detail"]
    assert problem["fix"] == f"mv {log} {log}.bad", problem
    os.system(problem["fix"])  # as a user would paste it: the folder is kept aside, nothing is reported
    code, report = doctor_json(repo)
    assert code == 0, report


def snapshot(files: list[Path]) -> dict[Path, bytes | None]:
    return {f: f.read_bytes() if f.exists() else None for f in files}


def test_uninstall_restores_every_file_byte_for_byte(repo: Path, tmp_path: Path, isolated_home: Path) -> None:
    home = isolated_home
    bashrc, zshrc = home / ".bashrc", home / ".zshrc"
    fish = home / ".config" / "fish" / "config.fish"
    bashrc.write_bytes(b"# my bashrc\r\nalias ll='ls -l'\r\n")
    zshrc.write_bytes(b"export EDITOR=vim")  # no trailing newline
    commit(repo, "feat: first", {"a.py": "x = 1\n"})
    other = tmp_path / "other"
    other.mkdir()
    git(other, "init", "-q", "-b", "main")
    commit(other, "feat: other", {"b.py": "y = 1\n"})
    pre = repo / ".git" / "hooks" / "pre-commit"
    pre.write_bytes(b"#!/bin/sh\necho foreign\n")
    pre.chmod(0o755)
    config = repo / ".pre-commit-config.yaml"
    config.write_text(
        "repos:\n  - repo: local\n    hooks:\n      - id: nexusmem-precheck\n", encoding="utf-8"
    )
    watched = [bashrc, zshrc, fish, pre, repo / ".git/hooks/post-commit", config]
    watched += [other / ".git/hooks/pre-commit", other / ".git/hooks/post-commit"]
    before = snapshot(watched)

    for shell in ("bash", "zsh", "fish"):
        run_cli("hook", "install", "--shell", shell)
    for where in (repo, other):
        sync.sync(where, embed=False)
        run_cli("-C", str(where), "hook", "git", "install")
        run_cli("-C", str(where), "hook", "git-post", "install")
    installed = snapshot(watched)
    assert all(installed[f] != before[f] for f in watched if f != config)

    dry = run_cli("-C", str(repo), "uninstall", "--dry-run").stdout
    assert snapshot(watched) == installed  # a dry run changes nothing
    assert "Would remove the bash shell hook" in dry and f"{pre}" in dry

    out = run_cli("-C", str(repo), "uninstall").stdout
    after = snapshot(watched)
    for f in (bashrc, zshrc, fish, pre, repo / ".git/hooks/post-commit"):
        assert after[f] == before[f], f
    assert after[other / ".git/hooks/pre-commit"] == installed[other / ".git/hooks/pre-commit"]  # not asked
    # The committed framework config is not edited: the line to take out is printed.
    assert after[config] == before[config]
    assert f"{config}:4: - id: nexusmem-precheck" in out
    # The memories stay, and the way to delete them is said.
    assert (repo / ".nexusmem").is_dir() and (other / ".nexusmem").is_dir()
    assert f"rm -rf {repo / '.nexusmem'} {other / '.nexusmem'} {paths.user_dir()}" in out

    run_cli("-C", str(repo), "uninstall", "--all-projects")
    assert snapshot(watched) == before
    assert "No NexusMem hook is installed." in run_cli("uninstall", "--all-projects").stdout
    assert os.access(pre, os.X_OK)


def test_doctor_reads_the_fish_hooks_source_line(repo: Path, isolated_home: Path) -> None:
    """The fish line is `test -f 'P'; and source 'P'`: doctor read `P;` as the script, called the installed
    hook gone (exit 1 for every fish user), and its printed fix changed nothing."""
    commit(repo, "feat: first", {"a.py": "x = 1\n"})
    sync.sync(repo, embed=False)
    run_cli("hook", "install", "--shell", "fish")
    log = paths.shell_log_path()
    log.parent.mkdir(parents=True, exist_ok=True)
    line = {
        "ts": int(time.time() * 1000) - 60_000,
        "cwd": str(repo),
        "exit": 0,
        "command": "ls",
        "shell": "fish",
    }
    with log.open("a", encoding="utf-8") as handle:
        handle.write(json.dumps({**line, "session": "f1", "v": 1}) + "\n")
    log.chmod(0o600)  # written here, not by the hook: as the hook would have made it
    tighten(repo)
    code, report = doctor_json(repo)
    shells = [c for c in report["checks"] if c["area"] == "shell"]  # type: ignore[union-attr]
    problems = [c for c in report["checks"] if not c["ok"]]  # type: ignore[union-attr]
    assert code == 0 and shells and all(c["ok"] for c in shells), (shells, problems)
    assert any("fish: hook in" in c["detail"] and "last recorded" in c["detail"] for c in shells), shells

    # Another shell's busy hour after it (600 KB of bash lines, a line cut by each chunk read): fish still
    # last recorded an hour ago, not "nothing recorded from it yet" (doctor read a fixed 256 KB tail).
    run_cli("hook", "install", "--shell", "bash")
    with log.open("a", encoding="utf-8") as handle:
        for n in range(3000):
            bash = {
                **line,
                "ts": line["ts"] + n,
                "shell": "bash",
                "command": f"make test-{n:05d} " + "x" * 120,
            }
            handle.write(json.dumps({**bash, "session": "b1", "v": 1}) + "\n")
    _code, report = doctor_json(repo)
    details = [str(c["detail"]) for c in report["checks"] if c["area"] == "shell"]  # type: ignore[union-attr]
    assert any(d.startswith("fish: hook in") and "last recorded 1 min ago" in d for d in details), details
    assert any(d.startswith("bash: hook in") and "last recorded" in d for d in details), details


def test_a_memory_db_that_is_a_folder_is_named_as_one(repo: Path) -> None:
    commit(repo, "feat: first", {"a.py": "x = 1\n"})
    state = repo / ".nexusmem"
    state.mkdir(mode=0o700)
    (state / "memory.db").mkdir()
    result = run_cli("-C", str(repo), "query", "first", ok=False)
    assert result.exit_code == 1 and "is a folder, not a memory database" in result.output, result.output


@pytest.mark.parametrize("tables", [["foo"], ["nodes", "settings"]])
def test_another_programs_database_at_memory_db_is_refused_and_left_as_it_is(
    repo: Path, tables: list[str]
) -> None:
    """Another program's SQLite file where memory.db goes: a sync wrote NexusMem's whole schema into it, or
    (with a `nodes` table of its own) every command called it damaged while doctor said all was well."""
    import sqlite3

    commit(repo, "feat: first", {"a.py": "x = 1\n"})
    state = repo / ".nexusmem"
    state.mkdir(mode=0o700)
    db = state / "memory.db"
    with contextlib.closing(sqlite3.connect(db)) as conn:
        for table in tables:
            conn.execute(f"CREATE TABLE {table}(x)")
        conn.commit()
    before = db.read_bytes()
    for args in (["sync"], ["query", "first"], ["status"]):
        result = run_cli("-C", str(repo), *args, ok=False)
        assert result.exit_code == 1 and "is not a NexusMem memory" in result.output, (args, result.output)
    assert db.read_bytes() == before
    code, report = doctor_json(repo)
    store = [c for c in report["checks"] if c["area"] == "store"]
    assert code == 1 and not store[0]["ok"] and "not a NexusMem memory" in str(store[0]["detail"]), store


def test_root_with_another_users_home_makes_nothing_there_and_doctor_names_a_folder_root_made(
    repo: Path, isolated_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`sudo -E nexusmem sync` (root, the user's HOME) made a root-owned ~/.nexusmem; the user's own shells
    then recorded nothing, and their doctor stopped at "projects.json: Permission denied"."""
    if os.geteuid() != 0:
        pytest.skip("needs root")
    commit(repo, "feat: first", {"a.py": "x = 1\n"})
    home = tmp_path / "someone"
    home.mkdir()
    os.chown(home, 65534, 65534)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("NEXUSMEM_HOME")
    monkeypatch.setenv("SUDO_UID", "65534")  # what sudo sets
    refused = run_cli("-C", str(repo), "sync", "--no-embed", ok=False)
    assert refused.exit_code == 1 and "not writing" in refused.output and "uid 65534" in refused.output
    assert not (home / ".nexusmem").exists()
    # Nor is the user's ~/.bashrc rewritten as root's by `hook install`.
    (home / ".bashrc").write_text("alias ll='ls -l'\n", encoding="utf-8")
    os.chown(home / ".bashrc", 65534, 65534)
    hooked = run_cli("hook", "install", "--shell", "bash", ok=False)
    assert hooked.exit_code != 0 and "not writing" in hooked.output, hooked.output
    assert (home / ".bashrc").stat().st_uid == 65534
    # Nor the user's agent settings.
    (home / ".claude").mkdir()
    (home / ".claude" / "settings.json").write_text('{"model": "opus"}\n', encoding="utf-8")
    for path in (home / ".claude", home / ".claude" / "settings.json"):
        os.chown(path, 65534, 65534)
    agent = run_cli("hook", "agent", "install", "claude-code", ok=False)
    assert agent.exit_code != 0 and "not writing" in agent.output, agent.output
    assert (home / ".claude" / "settings.json").stat().st_uid == 65534
    assert json.loads((home / ".claude" / "settings.json").read_text(encoding="utf-8")) == {"model": "opus"}
    # Root without sudo whose HOME and checkout belong to the runner's uid (a GitHub Actions container
    # job): used as it is.
    monkeypatch.delenv("SUDO_UID")
    ci_home = tmp_path / "github-home"
    ci_home.mkdir()
    os.chown(ci_home, 65534, 65534)
    monkeypatch.setenv("HOME", str(ci_home))
    shutil.rmtree(repo / ".nexusmem", ignore_errors=True)
    for path in (repo, *repo.rglob("*")):
        os.lchown(path, 65534, 65534)
    git(repo, "config", "--global", "--add", "safe.directory", "*")
    assert run_cli("-C", str(repo), "sync", "--no-embed").exit_code == 0
    monkeypatch.setenv("HOME", str(home))
    # A user folder someone else owns (seen from root here: the user's, from the user: root's, as an older
    # release left it): doctor names its owner and the fix.
    (home / ".nexusmem").mkdir(mode=0o700)
    os.chown(home / ".nexusmem", 65534, 65534)
    code, report = doctor_json(repo)
    found = [c for c in report["checks"] if c["area"] == "home"]
    assert code == 1 and found and "belongs to another user (uid 65534)" in str(found[0]["detail"]), report
    assert "chown" in str(found[0]["fix"])


def test_doctor_sees_the_hooks_writing_where_the_commands_do_not_read(
    repo: Path, isolated_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`export NEXUSMEM_HOME=...` placed after the hook's block in ~/.bashrc: the hook (loaded first) logs to
    ~/.nexusmem, every command reads $NEXUSMEM_HOME, and what is typed never reaches memory. Doctor said
    'ok ... nothing recorded from it yet'; it names both places and the fix now."""
    commit(repo, "feat: first", {"a.py": "x = 1\n"})
    elsewhere = tmp_path / "nm"
    monkeypatch.setenv("NEXUSMEM_HOME", str(elsewhere))
    sync.sync(repo, embed=False)
    default = isolated_home / ".nexusmem"
    default.mkdir(mode=0o700, exist_ok=True)
    line = {"ts": int(time.time() * 1000), "cwd": str(repo), "exit": 0, "command": "ls", "shell": "bash"}
    (default / "shell-history.jsonl").write_text(json.dumps({**line, "session": "b", "v": 1}) + "\n")
    tighten(repo)
    code, report = doctor_json(repo)
    found = [c for c in report["checks"] if not c["ok"] and "NEXUSMEM_HOME is" in str(c["detail"])]  # type: ignore[union-attr]
    assert code == 1 and found, report
    assert str(found[0]["fix"]).startswith(f"export NEXUSMEM_HOME={elsewhere}")


def test_doctor_names_a_prompt_command_set_after_the_bash_block(repo: Path, isolated_home: Path) -> None:
    """`PROMPT_COMMAND='history -a'` below the hook's block in ~/.bashrc drops the hook: bash recorded
    nothing, and doctor said ok (other shells were still writing)."""
    commit(repo, "feat: first", {"a.py": "x = 1\n"})
    run_cli("-C", str(repo), "sync", "--no-embed")
    run_cli("hook", "install", "--shell", "bash")
    bashrc = isolated_home / ".bashrc"
    kept = bashrc.read_text(encoding="utf-8")
    bashrc.write_text(kept + 'PROMPT_COMMAND="history -a; $PROMPT_COMMAND"\n', encoding="utf-8")
    _code, report = doctor_json(repo)
    assert not [c for c in report["checks"] if "replaces PROMPT_COMMAND" in str(c["detail"])]
    bashrc.write_text(kept + "export PROMPT_COMMAND='history -a'\n", encoding="utf-8")
    code, report = doctor_json(repo)
    found = [c for c in report["checks"] if "replaces PROMPT_COMMAND" in str(c["detail"])]
    assert code == 1 and len(found) == 1 and "history -a" in str(found[0]["detail"]), report


def test_a_failed_post_commit_sync_on_a_damaged_store_gets_the_fix_that_works(repo: Path) -> None:
    """The post-commit sync failed because memory.db is damaged: doctor's fix for it was `nexusmem sync`,
    which fails the same way; the store's own fix (move it aside, sync) is the one that works."""
    for n in range(4):
        commit(repo, f"feat: {n}", {f"f{n}.py": "".join(f"line {n} {i}\n" for i in range(400))})
    sync.sync(repo, embed=False)
    run_cli("-C", str(repo), "hook", "git-post", "install")
    db = repo / ".nexusmem" / "memory.db"
    with db.open("r+b") as handle:  # an index's root page: the store opens, quick_check finds it
        handle.seek(5 * 4096)
        handle.write(b"\xff" * 4096)
    log = repo / ".nexusmem" / "auto-sync.log"
    log.write_text(f"Error: {db} is damaged (quick_check: wrong # of entries in index)\n", encoding="utf-8")
    tighten(repo)
    code, report = doctor_json(repo)
    failed = [c for c in report["checks"] if "the post-commit sync failed" in c["detail"]]  # type: ignore[union-attr]
    store = [c for c in report["checks"] if c["area"] == "store" and not c["ok"]]  # type: ignore[union-attr]
    assert code == 1 and failed and store, report
    assert failed[0]["fix"] == store[0]["fix"] and "memory.db.damaged" in failed[0]["fix"]
    paste(str(failed[0]["fix"]))
    tighten(repo)
    code, report = doctor_json(repo)
    assert code == 0, report


def test_a_store_another_process_holds_locked_is_called_locked_not_damaged(repo: Path) -> None:
    """An `sqlite3` shell holding memory.db in an exclusive transaction: doctor waited ~20 s, then printed
    "quick_check found database is locked" with the damaged store's fix (move memory.db aside), which throws
    away verdicts and the deny-list. It now says, at once, that another process holds the store."""
    commit(repo, "feat: first", {"a.py": "x = 1\n"})
    sync.sync(repo, embed=False)
    run_cli("-C", str(repo), "hook", "git-post", "install")  # its check reads the store too
    tighten(repo)
    db = repo / ".nexusmem" / "memory.db"
    exclusive = (
        "c.execute('PRAGMA locking_mode=EXCLUSIVE'); c.execute('BEGIN EXCLUSIVE');"
        " c.execute('SELECT count(*) FROM nodes').fetchall()"
    )
    with held(db, exclusive):
        started = time.monotonic()
        code, problem = store_problem(repo)
        took = time.monotonic() - started
    assert code == 1 and "another process holds it locked" in str(problem["detail"]), problem
    assert "damaged" not in str(problem["fix"]) and "fuser" in str(problem["fix"]), problem
    assert took < 8, f"doctor took {took:.1f} s on a locked store"
    # Let go, the same store checks out whole.
    code, report = doctor_json(repo)
    assert code == 0, report


def test_a_registered_project_whose_memory_db_was_deleted_is_rebuilt_not_forgotten(repo: Path) -> None:
    """doctor's fix for a registered project without memory.db was `projects --prune`, which forgets the
    project instead of building its memory again."""
    commit(repo, "feat: first", {"a.py": "x = 1\n"})
    sync.sync(repo, embed=False)
    (repo / ".nexusmem" / "memory.db").unlink()
    code, report = doctor_json(repo)
    gone = [c for c in report["checks"] if c["area"] == "registry" and not c["ok"]]  # type: ignore[union-attr]
    assert gone and "no memory any more" in gone[0]["detail"], report
    assert gone[0]["fix"] == f"nexusmem -C {repo} sync"
    paste(str(gone[0]["fix"]))
    assert (repo / ".nexusmem" / "memory.db").exists()
    tighten(repo)
    code, report = doctor_json(repo)
    assert code == 0, report
    # A repository that is gone is still forgotten with `projects --prune`.
    shutil.rmtree(repo)
    _code, report = doctor_json(repo.parent)
    gone = [c for c in report["checks"] if c["area"] == "registry" and not c["ok"]]  # type: ignore[union-attr]
    assert gone and gone[0]["fix"] == "nexusmem projects --prune", report


def test_doctor_in_a_linked_worktree_checks_the_memory_it_answers_from(repo: Path, tmp_path: Path) -> None:
    """In a `git worktree add` checkout without a memory of its own, query and status answer from the main
    work tree's; doctor said "PROBLEM store <worktree> has no memory yet" (fix: sync the worktree) and
    exited 1. It checks the store the worktree uses, and finds that store's problems there too."""
    commit(repo, "feat: zeta", {"a.py": "x = 1\n"})
    sync.sync(repo, embed=False)
    tighten(repo)
    assert doctor_json(repo)[0] == 0
    wt = tmp_path / "wt"
    git(repo, "worktree", "add", "-q", str(wt), "-b", "side")
    code, report = doctor_json(wt)
    store = [c for c in report["checks"] if c["area"] == "store"]  # type: ignore[union-attr]
    assert code == 0 and store and all(c["ok"] for c in store), report
    assert str(paths.db_path(repo)) in store[0]["detail"], store
    assert not (wt / ".nexusmem").exists()  # doctor made no memory there
    db = paths.db_path(repo)
    execute(db, "DROP TABLE links")
    code, problem = store_problem(wt)
    assert (
        code == 1 and "table(s) links missing" in str(problem["detail"]) and str(db) in str(problem["detail"])
    )


def test_a_tracked_file_named_nexusmem_is_what_doctor_and_the_hook_install_name(repo: Path) -> None:
    """A repository that tracks a FILE named .nexusmem: sync said to move it aside, but doctor's fixes were
    `nexusmem sync` (which fails on it) and "config.json: cannot read: Not a directory — fix the file by
    hand", and `hook git-post install` promised that the next commit builds the memory (every auto-sync
    then failed on it, with no log anywhere). Both now name the file in the way and the fix that works."""
    commit(repo, "chore: a notes file", {".nexusmem": "not a directory\n"})
    state = repo / ".nexusmem"
    code, problem = store_problem(repo)
    assert code == 1 and f"{state} is a file, not a directory" in str(problem["detail"]), problem
    _code, report = doctor_json(repo)
    assert not [c for c in report["checks"] if c["area"] == "config" and not c["ok"]], report  # type: ignore[union-attr]
    installed = run_cli("-C", str(repo), "hook", "git-post", "install")
    assert f"{state} is a file, not a directory" in installed.output
    assert "the next commit builds it" not in installed.output
    paste(str(problem["fix"]))
    assert (repo / ".nexusmem" / "memory.db").is_file()
    tighten(repo)
    code, report = doctor_json(repo)
    assert not [c for c in report["checks"] if c["area"] == "store" and not c["ok"]], report  # type: ignore[union-attr]


def test_a_deny_list_entry_whose_key_stayed_in_another_home_is_named_with_its_fix(
    repo: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """`forget` under one NEXUSMEM_HOME, then another: every sync (the post-commit one too) stops on the
    entry whose key the new home's deny-key.json does not hold, while doctor said only that the project
    was not registered, then gave `nexusmem sync` as the fix for the failed post-commit sync: the same
    failure. It names the entry and the key file; copying the key back works."""
    commit(repo, "feat: first", {"a.py": "x = 1\n"})
    sync.sync(repo, embed=False)
    run_cli("-C", str(repo), "forget", "hunter2secret", "--yes")
    old_key = paths.user_dir() / "deny-key.json"
    assert old_key.exists()
    new_home = tmp_path / "newhome"
    new_home.mkdir(mode=0o700)
    monkeypatch.setenv("NEXUSMEM_HOME", str(new_home))
    run_cli("-C", str(repo), "hook", "git-post", "install")
    assert run_cli("-C", str(repo), "sync", ok=False).exit_code == 1
    tighten(repo)
    code, problem = store_problem(repo)
    assert code == 1 and "cannot be used" in str(problem["detail"]), problem
    assert str(new_home / "deny-key.json") in str(problem["fix"]) and "deny-key.json" in str(problem["fix"])
    log = repo / ".nexusmem" / "auto-sync.log"
    log.write_text("Error: deny-list entry … cannot be used\n", encoding="utf-8")
    _code, report = doctor_json(repo)
    failed = [c for c in report["checks"] if "the post-commit sync failed" in c["detail"]]  # type: ignore[union-attr]
    assert failed and failed[0]["fix"] == problem["fix"], report
    shutil.copy(old_key, new_home / "deny-key.json")
    (new_home / "deny-key.json").chmod(0o600)
    assert run_cli("-C", str(repo), "sync", ok=False).exit_code == 0
    _code, report = doctor_json(repo)
    assert not [c for c in report["checks"] if "cannot be used" in str(c["detail"])], report


def _as_an_older_release_wrote_it(hook: Path) -> None:
    """Rewrite the NexusMem block in HOOK as the release before the pre-commit framework handling wrote it
    (the same marker, nexusmem-hook-v1, and pinned script; its body had no PRE_COMMIT_RUNNING_LEGACY
    section: `git show 85d0bbc^:hooks/pre-commit`)."""
    lines = hook.read_text(encoding="utf-8").splitlines(keepends=True)
    first = next(i for i, line in enumerate(lines) if "PRE_COMMIT_RUNNING_LEGACY" in line)
    last = next(i for i in range(first, len(lines)) if lines[i] == "fi\n")
    hook.write_text("".join(lines[:first] + lines[last + 1 :]), encoding="utf-8")


def test_doctor_names_hook_blocks_an_older_release_wrote_and_their_fixes_bring_them_up_to_date(
    repo: Path, isolated_home: Path
) -> None:
    """An upgrade in place (`pip install -U`, the same console script): doctor said every git hook was fine,
    yet `hook git install` then answered "Updated the precheck hook": both releases stamp nexusmem-hook-v1,
    and doctor compared nothing else. It names each block that is not what install writes now, with the
    install that brings it up to date (the rc file's block too)."""
    commit(repo, "feat: first", {"a.py": "x = 1\n"})
    sync.sync(repo, embed=False)
    run_cli("-C", str(repo), "hook", "git", "install", "--strict")
    run_cli("-C", str(repo), "hook", "git-post", "install")
    run_cli("hook", "install", "--shell", "bash")
    (isolated_home / ".bash_profile").write_text("[ -f ~/.bashrc ] && . ~/.bashrc\n", encoding="utf-8")
    tighten(repo)
    code, report = doctor_json(repo)
    assert code == 0 and report["problems"] == 0, report

    hooks = repo / ".git" / "hooks"
    _as_an_older_release_wrote_it(hooks / "pre-commit")
    _as_an_older_release_wrote_it(hooks / "post-merge")
    bashrc = isolated_home / ".bashrc"
    bashrc.write_text(
        bashrc.read_text(encoding="utf-8").replace("# Added by `nexusmem hook install`", "# nexusmem"),
        encoding="utf-8",
    )
    code, report = doctor_json(repo)
    problems = [c for c in report["checks"] if not c["ok"]]  # type: ignore[union-attr]
    assert code == 1 and len(problems) == 3, problems
    by_fix = {str(c["fix"]): str(c["detail"]) for c in problems}
    assert set(by_fix) == {
        "nexusmem hook git install --strict",
        "nexusmem hook git-post install",
        "nexusmem hook install --shell bash",
    }, problems
    assert by_fix["nexusmem hook git install --strict"].startswith("pre-commit: ")
    assert "older release" in by_fix["nexusmem hook git install --strict"]
    assert by_fix["nexusmem hook git-post install"].startswith("post-merge: ")
    assert str(bashrc) in by_fix["nexusmem hook install --shell bash"]

    for fix in by_fix:
        paste(fix, repo)
    code, report = doctor_json(repo)
    assert code == 0 and report["problems"] == 0, [c for c in report["checks"] if not c["ok"]]
    assert "--strict" in (hooks / "pre-commit").read_text(encoding="utf-8")


def _fake_install(folder: Path, exit_code: int) -> Path:
    """Another install's console script at FOLDER/bin/nexusmem: one that starts (`--version` exits 0), or, with
    EXIT_CODE 1, one whose package is gone from under it."""
    script = folder / "bin" / "nexusmem"
    script.parent.mkdir(parents=True)
    said = "echo 'nexusmem 0.1.0'" if exit_code == 0 else "echo 'ModuleNotFoundError: nexusmem' >&2"
    script.write_text(f"#!/bin/sh\n{said}\nexit {exit_code}\n")
    script.chmod(0o755)
    return script


def test_hook_git_status_says_what_doctor_says_of_a_block_from_an_older_release_or_another_install(
    repo: Path, tmp_path: Path
) -> None:
    """After an in-place upgrade doctor named all four blocks an older release's, with their fix, while `hook
    git status` said "installed (our own file) … runs precheck with …/bin/nexusmem"; of hooks another install
    wrote, doctor said "runs another NexusMem (/old/bin/nexusmem), not this one" and status only "runs precheck
    with /old/…". Both statuses now give doctor's verdict and fix, for each hook."""
    commit(repo, "feat: first", {"a.py": "x = 1\n"})
    sync.sync(repo, embed=False)
    run_cli("-C", str(repo), "hook", "git", "install", "--strict")
    run_cli("-C", str(repo), "hook", "git-post", "install")
    hooks = repo / ".git" / "hooks"

    def said() -> tuple[str, dict[str, tuple[str, str]]]:
        """Both statuses' output, and doctor's problems with the git hooks by hook name: (detail, fix)."""
        out = run_cli("-C", str(repo), "hook", "git", "status").output
        out += run_cli("-C", str(repo), "hook", "git-post", "status").output
        _, report = doctor_json(repo)
        problems = [c for c in report["checks"] if c["area"] == "git" and not c["ok"]]  # type: ignore[union-attr]
        by_hook = {}
        for check in problems:
            name, detail = str(check["detail"]).split(": ", 1)
            by_hook[name] = (detail, str(check["fix"]))
        return out, by_hook

    status, problems = said()
    assert not problems and "Warning" not in status, (status, problems)

    for name in ("pre-commit", "post-commit", "post-merge", "post-applypatch"):
        _as_an_older_release_wrote_it(hooks / name)
    status, problems = said()
    assert set(problems) == {"pre-commit", "post-commit", "post-merge", "post-applypatch"}, problems
    for name, (detail, fix) in problems.items():
        assert "older release's" in detail and str(hooks / name) in detail
        assert f"  Warning: {detail}; fix: {fix}" in status, (name, status)
    assert problems["pre-commit"][1] == "nexusmem hook git install --strict"
    assert problems["post-merge"][1] == "nexusmem hook git-post install"

    here = str(git_hooks.console_script())
    starts = _fake_install(tmp_path / "old", 0)
    broken = _fake_install(tmp_path / "moved", 1)
    for name, other in (("pre-commit", starts), ("post-commit", broken)):
        (hooks / name).write_text((hooks / name).read_text().replace(here, str(other)))
    status, problems = said()
    assert problems["pre-commit"][0] == f"runs another NexusMem ({starts}), not this one", problems
    assert problems["post-commit"][0].startswith(f"runs {broken}, which cannot start (exit 1: "), problems
    for name in ("pre-commit", "post-commit"):
        detail, fix = problems[name]
        assert f"  Warning: {detail}; fix: {fix}" in status, (name, status)

    for fix in dict.fromkeys(fix for _, fix in problems.values()):
        paste(fix, repo)
    status, problems = said()
    assert not problems and "Warning" not in status, (status, problems)
