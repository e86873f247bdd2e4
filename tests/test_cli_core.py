"""init, sync, query, status, projects through the CLI on real repositories."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from helpers import (
    commit,
    console_script,
    git,
    init_repo,
    main_in_fresh_process,
    query_json,
    run_cli,
    run_script,
)

DAY = 86_400


def make_history(repo: Path) -> None:
    base = 1_700_000_000
    commit(repo, "docs: start the readme", {"README.md": "# Demo\n\nA demo.\n"}, when=base)
    commit(repo, "feat(cache): add an on-disk cache", {"src/cache.py": "CACHE = {}\n"}, when=base + DAY)
    commit(
        repo,
        "fix(cache): switch the cache database to WAL\n\nReaders were blocked while the writer held the lock;"
        " WAL lets readers see a snapshot instead of waiting.",
        {"src/cache.py": "CACHE = {}\nJOURNAL = 'wal'\n"},
        when=base + 2 * DAY,
    )
    commit(repo, "chore: bump deps", {"requirements.txt": "click==8\n"}, when=base + 3 * DAY)


def test_init_creates_layout_and_is_idempotent(repo: Path, isolated_home: Path) -> None:
    first = run_cli("-C", str(repo), "init")
    assert "initialised" in first.output
    state = repo / ".nexusmem"
    assert (state / ".gitignore").read_text(encoding="utf-8") == "*\n"
    config = json.loads((state / "config.json").read_text(encoding="utf-8"))
    assert config["limits"]["maxBodyChars"] == 20000 and config["sources"]["diff"]["initialCommits"] == 200
    import sqlean

    conn = sqlean.connect(str(state / "memory.db"))
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    conn.close()
    registry = json.loads((isolated_home / ".nexusmem" / "projects.json").read_text(encoding="utf-8"))
    assert [p["root"] for p in registry["projects"]] == [str(repo)]
    before = (state / "config.json").read_bytes()
    again = run_cli("-C", str(repo), "init")
    assert "already initialised" in again.output
    assert (state / "config.json").read_bytes() == before
    assert git(repo, "status", "--porcelain") == ""  # .nexusmem ignores itself


def test_sync_then_query_finds_the_commit_that_explains(repo: Path) -> None:
    make_history(repo)
    out = run_cli("-C", str(repo), "sync").output
    assert "git +4" in out and "node(s) in memory" in out
    data = query_json(repo, "why did we switch the cache to WAL")
    assert set(data) == {
        "query",
        "query_cut",
        "budget",
        "tokens_used",
        "matched",
        "bm25_matched",
        "vector_matched",
        "weak",
        "notes",
        "items",
    }
    assert data["weak"] is False and data["notes"] == []
    top_commits = [it for it in data["items"] if it["kind"] == "git_commit"]
    assert top_commits[0]["title"] == "fix(cache): switch the cache database to WAL"
    item = top_commits[0]
    assert set(item) == {
        "id",
        "kind",
        "ts",
        "title",
        "summary",
        "provenance",
        "trust",
        "score",
        "project",
        "ref",
        "author",
        "linked_from",
        "relation",
        "also_in",
        "superseded",
        "superseded_by",
    }
    assert len(item["ref"]) == 40 and item["provenance"] == "observed" and item["trust"] == "candidate"
    assert item["ts"].startswith("2023-11-16T")
    assert data["tokens_used"] <= data["budget"] == 2000
    diffs = [it for it in data["items"] if it["kind"] == "code_diff"]
    assert diffs and all(":" in it["ref"] for it in diffs)


def test_plain_query_output_and_determinism(repo: Path) -> None:
    make_history(repo)
    run_cli("-C", str(repo), "sync", "-q")
    first = run_cli("-C", str(repo), "query", "cache", "WAL").output
    assert first.startswith("Relevant history for: cache WAL\n")
    assert "[observed] fix(cache): switch the cache database to WAL" in first
    for _ in range(3):
        assert run_cli("-C", str(repo), "query", "cache", "WAL").output == first


def test_query_without_hits_is_one_line_and_exit_0(repo: Path) -> None:
    make_history(repo)
    run_cli("-C", str(repo), "sync", "-q")
    result = run_cli("-C", str(repo), "query", "zebra", "xylophone")
    assert result.output == "No memory matches: zebra xylophone\n"


def test_budget_is_respected(repo: Path) -> None:
    make_history(repo)
    run_cli("-C", str(repo), "sync", "-q")
    small = query_json(repo, "cache", "--budget", "60")
    big = query_json(repo, "cache")
    assert small["tokens_used"] <= 60
    assert len(small["items"]) < len(big["items"])


def test_second_sync_is_a_noop_and_creates_no_duplicates(repo: Path) -> None:
    make_history(repo)
    run_cli("-C", str(repo), "sync", "-q")
    status1 = json.loads(run_cli("-C", str(repo), "status", "--json").output)
    summary = json.loads(run_cli("-C", str(repo), "sync", "--json").output)
    assert summary["added"] == summary["updated"] == summary["removed"] == 0
    assert all(s["noop"] for s in summary["sources"])
    status2 = json.loads(run_cli("-C", str(repo), "status", "--json").output)
    assert status1["by_kind"] == status2["by_kind"]


def test_c_option_before_and_after_command_and_dash_query(repo: Path, tmp_path: Path) -> None:
    make_history(repo)
    run_cli("sync", "-q", "-C", str(repo))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    before = run_cli("-C", str(repo), "status", "--json", cwd=elsewhere).output
    after = run_cli("status", "--json", "-C", str(repo), cwd=elsewhere).output
    assert json.loads(before)["by_kind"] == json.loads(after)["by_kind"]
    dashed = run_cli("-C", str(repo), "query", "--", "-cache").output
    assert "Relevant history for: -cache" in dashed


def test_outside_a_repository_is_a_clear_error(tmp_path: Path) -> None:
    result = run_cli("-C", str(tmp_path), "init", ok=False)
    assert result.exit_code == 1
    assert "not inside a git repository" in result.output
    # A bare repository is one: `git init` there was the wrong advice.
    bare = tmp_path / "bare.git"
    git(tmp_path, "init", "-q", "--bare", str(bare))
    for args in (["sync"], ["query", "anything"]):
        said = run_cli("-C", str(bare), *args, ok=False)
        assert said.exit_code == 1 and "is a bare git repository (no work tree)" in said.output, said.output
        assert "git init" not in said.output
    # Inside a work tree's .git directory (a hook being edited there): "run `git init`" was wrong advice too.
    work = tmp_path / "work"
    git(tmp_path, "init", "-q", str(work))
    said = run_cli("-C", str(work / ".git" / "hooks"), "status", ok=False)
    assert said.exit_code == 1 and "inside a repository's .git directory" in said.output, said.output
    assert "git init" not in said.output


def test_query_before_init_says_what_to_run(repo: Path) -> None:
    result = run_cli("-C", str(repo), "query", "x", ok=False)
    assert result.exit_code == 1 and "has no NexusMem memory yet: run `nexusmem sync`" in result.output


def test_git_missing_and_git_failing_to_start_are_different_errors(repo: Path, tmp_path: Path) -> None:

    bindir = tmp_path / "bin"
    bindir.mkdir()
    no_git = run_script("init", cwd=repo, env={"PATH": str(bindir)})
    assert no_git.returncode == 1 and "git is not installed" in no_git.stderr, no_git.stderr
    broken = bindir / "git"
    broken.write_text("not a program\n", encoding="utf-8")
    broken.chmod(0o644)  # present but not executable: exec fails with EACCES
    cannot_start = run_script("init", cwd=repo, env={"PATH": str(bindir)})
    assert cannot_start.returncode == 1
    assert "git could not be started" in cannot_start.stderr, cannot_start.stderr
    assert Path(sys.executable).exists()


def test_corrupt_config_names_the_file_and_is_not_overwritten(repo: Path) -> None:
    make_history(repo)
    run_cli("-C", str(repo), "init")
    cfg = repo / ".nexusmem" / "config.json"
    cfg.write_text('{"limits": {"maxBodyChars": "lots"}}', encoding="utf-8")
    bad_type = run_cli("-C", str(repo), "sync", ok=False)
    assert (
        bad_type.exit_code == 1 and "limits.maxBodyChars" in bad_type.output and str(cfg) in bad_type.output
    )
    cfg.write_text('{"limits": {"maxBodyChar": 5}}', encoding="utf-8")
    unknown = run_cli("-C", str(repo), "sync", ok=False)
    assert "unknown key 'limits.maxBodyChar'" in unknown.output
    cfg.write_text("{not json", encoding="utf-8")
    corrupt = run_cli("-C", str(repo), "init", ok=False)
    assert "not valid JSON" in corrupt.output and str(cfg) in corrupt.output
    assert cfg.read_text(encoding="utf-8") == "{not json"


def test_status_lines_up_every_source_row(repo: Path) -> None:
    """`changelog` is wider than the column the names were padded to: its row was one column off."""
    commit(repo, "docs: changelog", {"CHANGELOG.md": "# Changelog\n\n## 0.1.0\n\n- First release.\n"})
    run_cli("-C", str(repo), "sync", "-q", "--no-embed")
    lines = run_cli("-C", str(repo), "status").output.splitlines()
    rows = lines[lines.index("sources:") + 1 :]
    rows = rows[: next((i for i, line in enumerate(rows) if not line.startswith("  ")), len(rows))]
    names = [row.split()[0] for row in rows]
    assert "changelog" in names and "git" in names, rows
    assert len({row.index(" last sync ") for row in rows}) == 1, rows


def test_status_after_an_upgrade_does_not_call_a_read_source_not_started(repo: Path) -> None:
    """An upgrade's migration clears the git cursor so that the next sync derives every commit's words
    again: until then status said git was "not started", beside the commits an older release stored."""
    make_history(repo)
    run_cli("-C", str(repo), "sync", "-q", "--no-embed")
    fresh = run_cli("-C", str(repo), "status").output
    assert "after an upgrade" not in fresh, fresh  # a source with nothing to read (atuin) is no upgrade's
    import sqlite3

    conn = sqlite3.connect(repo / ".nexusmem" / "memory.db")
    conn.execute("UPDATE sources SET cursor = NULL WHERE name = 'git'")  # as migrations 7 and 10 do
    conn.commit()
    conn.close()
    rows = run_cli("-C", str(repo), "status").output.splitlines()
    git_row = next(row for row in rows if row.strip().startswith("git "))
    assert "not started" not in git_row and "read whole again at the next sync" in git_row, git_row


def test_status_share_and_projects(repo: Path, tmp_path: Path) -> None:
    make_history(repo)
    run_cli("-C", str(repo), "sync", "-q")
    text = run_cli("-C", str(repo), "status").output
    assert "git_commit" in text and "last sync" in text and "sqlean" in text
    shared = run_cli("-C", str(repo), "status", "--share").output
    assert "4  git_commit" in shared and str(repo) not in shared
    listing = run_cli("projects").output
    assert str(repo) in listing and "MISSING" not in listing
    listed = json.loads(run_cli("projects", "--json").output)["projects"]
    keys = {key for p in listed for key in p}
    assert "last_sync" in keys and not any(k != k.lower() for k in keys), keys  # it printed lastSync
    other = tmp_path / "other"
    other.mkdir()
    git(other, "init", "-q")
    run_cli("-C", str(other), "init")
    import shutil

    shutil.rmtree(other / ".nexusmem")
    flagged = run_cli("projects").output
    assert "MISSING" in flagged and str(other) in flagged
    pruned = run_cli("projects", "--prune").output
    assert "pruned" in pruned and str(other) in pruned
    assert str(other) not in run_cli("projects").output


def test_status_counts_each_kind_of_link_as_what_it_is(repo: Path) -> None:
    """A changelog entry's link to its commit is no failure→fix link: status counted every link as one."""
    commit(repo, "fix(cache): switch the price cache to WAL (#12)", {"cache.py": "JOURNAL = 'wal'\n"})
    entry = "# Changelog\n\n## 1.1.0\n\n- The price cache no longer locks up (#12)\n"
    commit(repo, "release 1.1.0", {"CHANGELOG.md": entry})
    run_cli("-C", str(repo), "sync", "-q", "--no-embed")
    data = json.loads(run_cli("-C", str(repo), "status", "--json").output)
    links = data["links_by_relation"]
    assert set(links) == {"changelog"} and data["links"] == links["changelog"] >= 1, data
    text = run_cli("-C", str(repo), "status").output
    assert f"{links['changelog']}  changelog entry→commit link(s)" in text, text
    assert "failure→fix" not in text, text
    shared = run_cli("-C", str(repo), "status", "--share").output
    assert "changelog entry→commit link(s)" in shared and "failure→fix" not in shared


def test_corrupt_registry_reads_as_empty_with_warning(repo: Path, isolated_home: Path) -> None:
    reg = isolated_home / ".nexusmem" / "projects.json"
    reg.parent.mkdir(parents=True, exist_ok=True)
    reg.write_text("][", encoding="utf-8")
    result = run_cli("projects")
    assert "no projects registered" in result.output
    run_cli("-C", str(repo), "init")
    kept = list(reg.parent.glob("projects.json.corrupt-*"))
    assert kept and kept[0].read_text(encoding="utf-8") == "]["


@pytest.mark.slow
def test_rebuild_drops_and_reingests_but_keeps_ids(repo: Path) -> None:
    make_history(repo)
    run_cli("-C", str(repo), "sync", "-q")
    ids = {it["id"] for it in query_json(repo, "cache")["items"]}
    summary = json.loads(run_cli("-C", str(repo), "sync", "--rebuild", "--json").output)
    assert summary["rebuilt"] and summary["added"] > 0
    assert {it["id"] for it in query_json(repo, "cache")["items"]} == ids


def test_rewritten_history_removes_unreachable_commits(repo: Path) -> None:
    make_history(repo)
    commit(repo, "fix: a mistaken zanzibar change", {"z.txt": "zanzibar\n"})
    run_cli("-C", str(repo), "sync", "-q")
    assert query_json(repo, "zanzibar")["items"]
    git(repo, "reset", "-q", "--hard", "HEAD~1")
    git(repo, "reflog", "expire", "--expire=now", "--all")
    summary = json.loads(run_cli("-C", str(repo), "sync", "--json").output)
    assert summary["removed"] >= 2  # the commit and its diff
    assert not [it for it in query_json(repo, "zanzibar")["items"] if it["kind"] != "doc_section"]


def test_help_of_every_command_has_an_example() -> None:
    from nexusmem.cli.main import COMMANDS

    assert "Example" in run_cli("--help").output
    for name in COMMANDS:
        text = run_cli(name, "--help").output
        assert "Example" in text, f"`nexusmem {name} --help` has no example"


def test_version_is_fast_path(repo: Path) -> None:
    """Every release said `nexusmem 0.1.0`: two installs (a hook's old venv, the new one) could not be told
    apart by the one thing that decides whether they can share a memory. The schema is said too, the same
    by the fast path and by click's (`-C PATH --version`)."""
    from nexusmem import __version__
    from nexusmem.store import migrations

    said = f"nexusmem {__version__} (memory schema {migrations.LATEST})\n"
    result = run_script("--version", cwd=repo)
    assert result.returncode == 0 and result.stdout == said
    result = run_script("-C", str(repo), "--version", cwd=repo)
    assert result.returncode == 0 and result.stdout == said


@pytest.mark.slow
def test_console_script_end_to_end(repo: Path) -> None:
    make_history(repo)
    synced = run_script("sync", cwd=repo)
    assert synced.returncode == 0, synced.stderr
    answer = run_script("query", "--json", "WAL", "snapshot", cwd=repo)
    assert answer.returncode == 0
    assert json.loads(answer.stdout)["items"][0]["kind"] in {"git_commit", "code_diff"}
    usage = run_script("query", cwd=repo)
    assert usage.returncode == 2  # click usage error


def test_verdicts_and_created_at_survive_resync_and_rebuild(repo: Path) -> None:
    make_history(repo)
    run_cli("-C", str(repo), "sync", "-q")
    import sqlean

    db = repo / ".nexusmem" / "memory.db"
    conn = sqlean.connect(str(db), isolation_level=None)
    conn.execute("UPDATE nodes SET trust = 'verified' WHERE kind = 'git_commit'")
    conn.execute("UPDATE nodes SET created_at = 1000 WHERE kind = 'code_diff'")
    conn.close()
    commit(repo, "feat: another", {"b.txt": "b\n"})
    run_cli("-C", str(repo), "sync", "-q")
    run_cli("-C", str(repo), "sync", "--rebuild", "-q")
    conn = sqlean.connect(str(db))
    trust = dict(conn.execute("SELECT title, trust FROM nodes WHERE kind = 'git_commit'").fetchall())
    old_diffs = conn.execute(
        "SELECT COUNT(*) FROM nodes WHERE kind = 'code_diff' AND created_at = 1000"
    ).fetchone()
    conn.close()
    assert trust.pop("feat: another") == "candidate"
    assert set(trust.values()) == {"verified"}
    assert old_diffs[0] == 4


def test_a_rebuild_of_one_source_leaves_the_others_and_their_verdicts(repo: Path) -> None:
    """`sync --rebuild --source docs` emptied the whole store and read only the docs back: "Rebuilt …: 0
    node(s) in memory" of a repository with commits, and every commit's review verdict lost for good (the
    next sync brought the commits back as new). It reads the named source again from the start and leaves
    the others as they are; a verdict on a section it reads back stays."""
    make_history(repo)
    (repo / "docs").mkdir()
    (repo / "docs" / "design.md").write_text("# Design\n\n## Why WAL\n\nBecause readers.\n", encoding="utf-8")
    run_cli("-C", str(repo), "sync", "-q", "--no-embed")
    import sqlean

    db = repo / ".nexusmem" / "memory.db"
    conn = sqlean.connect(str(db), isolation_level=None)
    conn.execute("UPDATE nodes SET trust = 'verified' WHERE kind IN ('git_commit', 'doc_section')")
    before = dict(conn.execute("SELECT kind, count(*) FROM nodes GROUP BY kind").fetchall())
    conn.close()
    out = run_cli("-C", str(repo), "sync", "--rebuild", "--source", "docs", "--no-embed").output
    assert "Rebuilt" in out and f"{sum(before.values())} node(s) in memory" in out, out
    conn = sqlean.connect(str(db))
    after = dict(conn.execute("SELECT kind, count(*) FROM nodes GROUP BY kind").fetchall())
    trust = {
        k
        for (k,) in conn.execute(
            "SELECT DISTINCT trust FROM nodes WHERE kind IN ('git_commit', 'doc_section')"
        )
    }
    conn.close()
    assert after == before and before["git_commit"] > 0 and before["doc_section"] > 0
    assert trust == {"verified"}


def test_mode_of_state_dir_files_is_not_world_writable(repo: Path) -> None:
    run_cli("-C", str(repo), "init")
    mode = os.stat(repo / ".nexusmem" / "config.json").st_mode
    assert not mode & stat.S_IWOTH
    assert subprocess.run(["git", "check-ignore", "-q", ".nexusmem/memory.db"], cwd=repo).returncode == 0


def test_scan_previews_write_nothing(repo: Path) -> None:
    make_history(repo)
    (repo / "docs").mkdir()
    (repo / "docs" / "design.md").write_text("# Design\n\n## Why WAL\n\nBecause readers.\n", encoding="utf-8")
    out = run_cli("-C", str(repo), "scan-git").output
    assert "0.80  fix(cache): switch the cache database to WAL" in out and "Nothing was written" in out
    diffs = json.loads(run_cli("-C", str(repo), "scan-diff", "--json").output)
    assert {d["ref"].split(":", 1)[1] for d in diffs} >= {"src/cache.py", "README.md"}
    docs = json.loads(run_cli("-C", str(repo), "scan-docs", "--json").output)
    assert "docs/design.md#Why WAL" in {d["ref"] for d in docs}
    assert len(json.loads(run_cli("-C", str(repo), "scan-git", "--json", "--limit", "2").output)) == 2
    assert not (repo / ".nexusmem").exists()


@pytest.mark.slow
def test_the_plain_query_path_answers_as_the_click_command(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The console script answers the common forms of `query` without click (cli/plain.py): the same
    stdout, stderr and exit code as the click command, on a real synced store; help, usage errors and
    the rarer options are click's own."""
    # The click command runs in this process, which after two queries reads similarities from an in-memory
    # copy of the vectors (numpy) instead of sqlite-vec: the two differ in the seventh decimal, which can
    # show in a printed score. Both sides here read sqlite-vec, as each one-shot command does.
    from nexusmem.retrieve import vector

    monkeypatch.setattr(vector, "WARM_AFTER_QUERIES", 10**9)
    make_history(repo)
    commit(
        repo, "fix: escape \x1b]52;c;aGk=\x07 in the cache log", {"src/log.py": "x = 1\n"}, when=1_700_400_000
    )
    run_cli("-C", str(repo), "sync")
    sub = repo / "src"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    forms: list[tuple[list[str], Path]] = [
        (["query", "why did we switch the cache to WAL"], repo),
        (["query", "--json", "--budget", "300", "cache"], repo),
        (["query", "cache", "--budget=120", "WAL"], sub),
        (["query", "--since", "2023-11-15", "--until=2023-11-20", "cache"], repo),
        (["query", "--as-of", "2001-01-01", "cache"], repo),
        (["query", "--since", "yesterday", "--until", "2001-01-01", "cache"], repo),
        (["query", "-C", str(repo), "--", "--force-with-lease"], elsewhere),
        (["-C", str(repo), "query", "--json", "cache", "WAL"], elsewhere),  # git-style, before the command
        (["-C", str(sub), "query", "--budget", "120", "--", "--force-with-lease"], elsewhere),
        (["-C", str(elsewhere), "query", "cache"], repo),  # not a repository: said the same way
        (["query", "escape", "cache", "log"], repo),
        (["query", "zzyzx", "qwrtp"], repo),
    ]
    for form, cwd in forms:
        plain = run_script(*form, cwd=cwd)
        clicked = run_cli(*form, cwd=cwd, ok=False)
        assert (plain.returncode, plain.stdout, plain.stderr) == (
            clicked.exit_code,
            clicked.stdout,
            clicked.stderr,
        ), form
    shown = run_script("query", "escape", "cache", "log", cwd=repo).stdout
    assert "\\x1b]52" in shown and "\x1b" not in shown  # shown escaped, never sent raw
    assert "switch the cache database to WAL" in run_script("query", "cache", "WAL", cwd=sub).stdout
    assert (
        "before this memory's first recording"
        in run_script("query", "--as-of", "2001-01-01", "x", cwd=repo).stdout
    )
    # What only click answers: help, usage errors, an empty question, a directory outside any repository.
    assert "Usage:" in run_script("query", "--help", cwd=repo).stdout
    low = run_script("query", "--budget", "10", "cache", cwd=repo)
    assert low.returncode == 2 and "10 is not in the range 50<=x<=100000" in low.stderr
    # Above what MCP and the config's query.budget take: refused the same way (it was accepted).
    high = run_script("query", "--budget", "999999999999", "cache", cwd=repo)
    assert high.returncode == 2 and "is not in the range 50<=x<=100000" in high.stderr
    assert run_script("query", "--bogus", "cache", cwd=repo).returncode == 2
    assert run_script("query", "  ", cwd=repo).returncode == 2
    outside = run_script("query", "cache", cwd=elsewhere)
    assert outside.returncode == 1 and "is not inside a git repository" in outside.stderr
    # A linked worktree without a memory of its own reads the main work tree's, as `project.load` does.
    tree = tmp_path / "tree"
    git(repo, "worktree", "add", "-q", str(tree))
    assert "switch the cache database to WAL" in run_script("query", "cache", "WAL", cwd=tree).stdout


def test_plain_query_imports_no_click(repo: Path) -> None:
    """`nexusmem query TEXT` on a synced store answers without importing click (a third of a cold query),
    and without asking git for the project's id (`nexusmem.gitcmd`, which computing one loads)."""
    make_history(repo)
    run_cli("-C", str(repo), "sync")
    out, loaded = main_in_fresh_process(
        repo, ["query", "cache", "WAL"], ("click", "mcp", "numpy", "nexusmem.gitcmd", "subprocess")
    )
    assert "switch the cache database to WAL" in out
    assert loaded == []
    # git-style `-C PATH` before the command takes the same path, from anywhere.
    out, loaded = main_in_fresh_process(
        repo.parent,
        ["-C", str(repo), "query", "cache", "WAL"],
        ("click", "mcp", "numpy", "nexusmem.gitcmd", "subprocess"),
    )
    assert "switch the cache database to WAL" in out
    assert loaded == []


def test_every_help_has_an_example() -> None:
    # The README promises it; the team commands had none.
    import click

    from nexusmem.cli.app import cli

    def walk(command: click.Command, path: list[str]) -> list[list[str]]:
        found = [path]
        if isinstance(command, click.Group):
            ctx = click.Context(command)
            for name in command.list_commands(ctx):
                sub = command.get_command(ctx, name)
                if sub is not None and not sub.hidden:
                    found += walk(sub, [*path, name])
        return found

    missing = []
    for path in walk(cli, [])[1:]:
        text = run_cli(*path, "--help").output
        if "Example" not in text:
            missing.append(" ".join(path))
    assert missing == []


def test_an_empty_answer_during_a_sync_says_a_sync_is_running(repo: Path) -> None:
    # A first sync of a large history takes a while; "No memory matches" alone read as "never happened".
    from nexusmem.oslock import FileLock
    from nexusmem.retrieve import query

    commit(repo, "feat: cache", {"src/cache.py": "CACHE = {}\n"})
    run_cli("-C", str(repo), "sync", "--no-embed")
    question = "why was the billing queue moved to kafka"
    assert query.SYNCING_NOTE not in run_cli("-C", str(repo), "query", question).output
    lock = FileLock(repo / ".nexusmem" / "sync.run.lock")
    lock.acquire(timeout=0)
    try:
        out = subprocess.run(
            [console_script(), "query", "--json", question],
            cwd=repo,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    finally:
        lock.release()
    assert query.SYNCING_NOTE in json.loads(out)["notes"]


@pytest.mark.parametrize(
    "command", [["status"], ["projects"], ["query", "first"], ["query", "--json", "first"]]
)
def test_an_older_installs_loose_user_folder_is_tightened_by_any_command(
    repo: Path, isolated_home: Path, command: list[str]
) -> None:
    """~/.nexusmem left 0755 with 0644 files (an older release, a copy): the contract says the next command
    that opens it tightens it; only `sync` did. `query` runs without click (cli/plain.py), the others with."""
    commit(repo, "feat: first", {"a.py": "x = 1\n"})
    run_cli("-C", str(repo), "sync", "--no-embed")
    home = isolated_home / ".nexusmem"
    home.chmod(0o755)
    loose = [p for p in home.iterdir() if p.is_file()]
    assert loose
    for path in loose:
        path.chmod(0o644)
    done = subprocess.run([console_script(), "-C", str(repo), *command], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert stat.S_IMODE(home.stat().st_mode) == 0o700
    assert all(stat.S_IMODE(p.stat().st_mode) == 0o600 for p in loose), [
        (p.name, oct(p.stat().st_mode)) for p in loose
    ]


def test_a_memory_never_synced_says_so_instead_of_no_match(repo: Path) -> None:
    """After `init` alone (or a first sync stopped before it stored anything) a query answered "No memory
    matches" as if nothing had happened, and an agent concluded there was no history to find."""
    commit(repo, "fix: database lock on migration", {"a.txt": "a\n"})
    run_cli("-C", str(repo), "init")
    answer = run_cli("-C", str(repo), "query", "database lock migration").stdout
    assert "never synced" in answer and "nexusmem sync" in answer, answer
    run_cli("-C", str(repo), "sync", "--no-embed")
    answer = run_cli("-C", str(repo), "query", "database lock migration").stdout
    assert "never synced" not in answer and "database lock on migration" in answer, answer
    assert "never synced" not in run_cli("-C", str(repo), "query", "kangaroo pouch zebra").stdout


def test_a_git_dir_work_tree_repository_is_named_as_not_supported(tmp_path: Path) -> None:
    """With GIT_DIR/GIT_WORK_TREE set (a dotfiles repository) every command said "not inside a git
    repository (run `git init` first)": advice that would make a second repository over the first."""
    bare, work = tmp_path / "dotfiles.git", tmp_path / "home"
    work.mkdir()
    git(tmp_path, "init", "-q", "--bare", str(bare))
    env = {**os.environ, "GIT_DIR": str(bare), "GIT_WORK_TREE": str(work)}
    done = subprocess.run([console_script(), "status"], cwd=work, env=env, capture_output=True, text=True)
    assert done.returncode == 1 and "does not follow GIT_DIR or GIT_WORK_TREE" in done.stderr, done.stderr
    assert "git init" not in done.stderr


def test_git_dir_set_inside_another_repository_is_said(repo: Path, tmp_path: Path) -> None:
    """GIT_DIR/GIT_WORK_TREE naming a dotfiles repository while the directory is in another one were passed
    over in silence: `status` reported the other repository's memory as if it were the one asked for. One
    line on stderr says so; git's own hooks, which set GIT_DIR to the repository they run in, get none."""
    commit(repo, "feat: the retry budget", {"src/retry.py": "BUDGET = 3\n"})
    run_cli("-C", str(repo), "sync", "--no-embed")
    bare, work = tmp_path / "dotfiles.git", tmp_path / "home"
    work.mkdir()
    git(tmp_path, "init", "-q", "--bare", str(bare))

    def status(**env: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [console_script(), "status"], cwd=repo, env={**os.environ, **env}, capture_output=True, text=True
        )

    done = status(GIT_DIR=str(bare), GIT_WORK_TREE=str(work))
    assert done.returncode == 0 and f"root      {repo.resolve()}" in done.stdout
    warned = done.stderr.strip().splitlines()
    assert len(warned) == 1, done.stderr
    assert f"GIT_DIR={bare}" in warned[0] and f"GIT_WORK_TREE={work}" in warned[0]
    assert "not followed" in warned[0] and str(repo.resolve()) in warned[0]
    assert "not followed" in status(GIT_WORK_TREE=str(work)).stderr
    # The repository's own git directory (a hook's GIT_DIR, relative or not; a linked worktree's): no word.
    assert status(GIT_DIR=".git").stderr == ""
    assert status(GIT_DIR=str(repo / ".git"), GIT_WORK_TREE=str(repo)).stderr == ""
    other = tmp_path / "feature-wt"
    git(repo, "worktree", "add", "-q", str(other))
    hooked = subprocess.run(
        [console_script(), "status"],
        cwd=other,
        env={**os.environ, "GIT_DIR": str(repo / ".git" / "worktrees" / "feature-wt")},
        capture_output=True,
        text=True,
    )
    assert hooked.returncode == 0 and hooked.stderr == "", hooked.stderr


def test_git_dir_naming_the_repository_through_its_git_file_is_not_said(repo: Path, tmp_path: Path) -> None:
    """In a linked worktree or a submodule `.git` is a file (`gitdir: …`), and GIT_DIR=.git there names the
    same repository to git: `status` warned "GIT_DIR=.git not followed" all the same."""
    commit(repo, "feat: the retry budget", {"src/retry.py": "BUDGET = 3\n"})
    run_cli("-C", str(repo), "sync", "--no-embed")
    linked = tmp_path / "feature-wt"
    git(repo, "worktree", "add", "-q", str(linked))
    library = init_repo(tmp_path / "library")
    commit(library, "feat: the library", {"lib.py": "x = 1\n"})
    git(repo, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(library), "vendor/lib")
    submodule = repo / "vendor" / "lib"
    assert (linked / ".git").is_file() and (submodule / ".git").is_file()

    def status(cwd: Path, git_dir: str) -> subprocess.CompletedProcess[str]:
        env = {**os.environ, "GIT_DIR": git_dir}
        return subprocess.run([console_script(), "status"], cwd=cwd, env=env, capture_output=True, text=True)

    for where in (linked, submodule):
        for git_dir in (".git", str(where / ".git")):
            done = status(where, git_dir)
            assert "not followed" not in done.stderr, (where, git_dir, done.stderr)
    # Another repository's `.git` file is still another repository.
    assert "not followed" in status(linked, str(submodule / ".git")).stderr


def test_a_file_given_to_c_is_named_as_the_file(tmp_path: Path) -> None:
    """`nexusmem -C notes.txt status` outside any repository said "<the folder of notes.txt> is not inside a
    git repository": a path the user never typed."""
    folder = tmp_path / "plain"
    folder.mkdir()
    (folder / "notes.txt").write_text("x\n", encoding="utf-8")
    done = run_script("-C", "notes.txt", "status", cwd=folder)
    assert done.returncode == 1, done.stderr
    assert "Error: notes.txt (a file) is not inside a git repository" in done.stderr, done.stderr


def test_a_path_with_a_newline_or_a_tab_is_one_line_in_sync_doctor_and_projects(tmp_path: Path) -> None:
    """A repository folder named with a newline and a tab was printed raw by sync, doctor and projects (one
    entry over two lines), where commit text is spelled with escapes: the paths are now too."""
    repo = init_repo(tmp_path / "a\nb\tc")
    commit(repo, "feat: first", {"a.py": "x = 1\n"})
    shown = str(repo).replace("\n", "\\n").replace("\t", "\\t")
    synced = run_script("sync", "--no-embed", cwd=repo)
    assert synced.returncode == 0, synced.stderr
    assert synced.stdout.startswith(f"Initialised and synced {shown} in "), synced.stdout
    assert len(synced.stdout.strip().splitlines()) == 1
    doctor = run_script("doctor", cwd=repo).stdout
    assert f"ok      store      {shown}/.nexusmem/memory.db" in doctor, doctor
    checks = json.loads(run_script("doctor", "--json", cwd=repo).stdout)["checks"]
    assert len(doctor.splitlines()) == len(checks) + sum(1 for c in checks if c["fix"]) + 1, doctor
    listed = run_script("projects", cwd=repo).stdout.splitlines()
    assert len(listed) == 1 and listed[0].endswith(f" {shown}"), listed
    # --json stays exact.
    data = json.loads(run_script("projects", "--json", cwd=repo).stdout)
    assert data["projects"][0]["root"] == str(repo)


def test_a_path_with_a_newline_or_a_tab_is_one_line_in_init_status_and_the_hook_commands(
    tmp_path: Path,
) -> None:
    """init, status (root, project, database) and the git hook commands printed such a folder raw, one
    line over two, where sync, doctor and projects already spelled it `\\n`, `\\t`."""
    repo = init_repo(tmp_path / "a\nb\tc")
    commit(repo, "feat: first", {"a.py": "x = 1\n"})
    shown = str(repo).replace("\n", "\\n").replace("\t", "\\t")

    def said(*args: str) -> list[str]:
        done = run_script(*args, cwd=repo)
        assert done.returncode == 0, done.stderr
        return (done.stdout + done.stderr).splitlines()

    assert said("init") == [f"initialised: {shown}/.nexusmem (project {shown})"]
    assert said("sync", "-q", "--no-embed") == []
    status = said("status")
    for line in (f"root      {shown}", f"project   {shown}"):
        assert line in status, status
    assert any(line.startswith(f"database  {shown}/.nexusmem/memory.db (") for line in status), status
    for verb, hook in (("git-post", "post-commit"), ("git", "pre-commit")):
        lines = said("hook", verb, "install")
        assert any(line.endswith(f" in {shown}/.git/hooks/{hook}.") for line in lines), lines
        lines = said("hook", verb, "status")
        assert f"{hook}: installed (our own file): {shown}/.git/hooks/{hook}" in lines, lines
        lines = said("hook", verb, "remove")
        assert any(line.endswith(f" from {shown}/.git/hooks/{hook}.") for line in lines), lines


def _to_a_closed_pipe(repo: Path, *args: str, stderr_too: bool = False) -> tuple[int, str]:
    """(exit code, stderr) of `nexusmem ARGS` whose stdout (STDERR_TOO: and stderr, `2>&1 |`) is a pipe
    whose reader is already gone: every write fails, as each one after `| head -1` has its line does."""
    read, write = os.pipe()
    os.close(read)
    try:
        err = write if stderr_too else subprocess.PIPE
        done = subprocess.run([console_script(), *args], cwd=repo, stdout=write, stderr=err)
    finally:
        os.close(write)
    return done.returncode, (done.stderr or b"").decode()


def test_a_usage_error_into_a_closed_pipe_keeps_exit_2_and_is_no_crash(repo: Path) -> None:
    """`nexusmem query x --budget 10 2>&1 | head -1` exited 1, with a BrokenPipeError traceback appended to
    crash.log, whenever head had left before click had printed the whole usage error (the next line of it
    failed): a usage error keeps its 2 (docs/contracts.md, section 9) and a closed pipe is no crash. So do
    a stopped command's own line and a group-level usage error (an unknown command, option)."""
    commit(repo, "feat: start", {"a.txt": "a\n"})
    assert run_script("sync", "--no-embed", cwd=repo).returncode == 0
    for args in (
        ["query", "x", "--budget", "10"],
        ["-C", str(repo), "query", "--budget", "10", "x"],
        ["stale", "--no-such-option"],
        ["nosuchcommand"],
        ["--no-such-option"],
        ["sync", "--since", "not a date"],
    ):
        assert _to_a_closed_pipe(repo, *args, stderr_too=True) == (2, ""), args
    assert _to_a_closed_pipe(repo, "hook", "git", "install", stderr_too=True) == (1, "")
    assert not (Path(os.environ["NEXUSMEM_HOME"]) / "crash.log").exists()


def test_a_reader_that_stopped_reading_ends_every_command_quietly_with_0(repo: Path) -> None:
    """`nexusmem stale | head -1` exited 1 (click's code for a closed pipe) once head had its line, while
    `nexusmem query … | head -1` exited 0: the plain query wrote its answer in one go, before head left, and
    stale wrote line by line. `nexusmem --version | true` printed a traceback, `precheck --json | true` and
    `precheck 2>&1 | true` were internal errors (exit 3)."""
    make_history(repo)
    assert run_script("sync", "--no-embed", cwd=repo).returncode == 0
    commit_id = json.loads(run_script("query", "--json", "WAL", cwd=repo).stdout)["items"][0]["id"]
    commands = [
        ["stale"],
        ["stale", "--json"],
        ["status"],
        ["projects"],
        ["forget", "--list"],
        ["query", "cache"],
        ["query", "--json", "cache"],
        ["show", commit_id],
        ["hook", "status"],
        ["doctor"],
        ["--help"],
        ["query", "--help"],
        ["--version"],
        ["precheck", "--json", "--files", "src/cache.py"],
    ]
    for args in commands:
        assert _to_a_closed_pipe(repo, *args) == (0, ""), args
    # A command that changes something, stopped when it first wrote, must not say it was done.
    code, said = _to_a_closed_pipe(repo, "hook", "git", "install")
    assert code == 1 and "stopped when the reader of its output closed the pipe" in said, said
    # An error is still an error, said on stderr; --strict still refuses what it found, its JSON unread.
    code, said = _to_a_closed_pipe(repo, "show", "nosuchid")
    assert code == 1 and "Error:" in said
    from nexusmem.paths import shell_log_path

    line = {"ts": int(time.time() * 1000), "cwd": str(repo), "exit": 1, "command": "pytest src/cache.py"}
    shell_log_path().write_text(json.dumps({**line, "shell": "bash", "session": "s", "v": 1}) + "\n")
    assert _to_a_closed_pipe(repo, "precheck", "--strict", "--json", "--files", "src/cache.py") == (1, "")
    # `precheck 2>&1 | head -1` (its warnings are on stderr) was an internal error too.
    assert _to_a_closed_pipe(repo, "precheck", "--files", "src/cache.py", stderr_too=True)[0] == 0
    assert _to_a_closed_pipe(repo, "precheck", "--strict", "--files", "src/cache.py", stderr_too=True)[0] == 1
    assert not (Path(os.environ["NEXUSMEM_HOME"]) / "crash.log").exists()
