"""Everyday-use misses (issue 14): links across --rebuild, `status` in a linked worktree, --as-of before the
first recording. Real git repositories, real stores, the installed CLI."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from nexusmem import project, sync
from nexusmem.identity import node_id
from nexusmem.paths import db_path
from nexusmem.store.db import open_store

from helpers import commit, console_script, git, run_cli, run_script, typed_in_bash, write_commands
from helpers.embedding import set_embedding

HOUR = 3_600_000


def links(repo: Path) -> set[tuple[str, str, str]]:
    with open_store(db_path(repo)) as store:
        return {(a, b, rel) for a, b, rel, _created in store.all_links()}


def test_rebuild_keeps_failure_fix_links(repo: Path) -> None:
    commit(repo, "feat: cache", {"src/cache.py": "x = 1\n", "tests/test_cache.py": "def test(): pass\n"})
    t0 = int(time.time() * 1000) - 6 * HOUR
    write_commands(
        repo, [(t0, "pytest tests/test_cache.py", 1), (t0 + HOUR, "pytest tests/test_cache.py", 0)]
    )
    run_cli("-C", str(repo), "sync", "--no-embed", "--link-failures")
    before = links(repo)
    assert before, "the linker found no failure→fix link to keep"
    run_cli("-C", str(repo), "sync", "--no-embed", "--rebuild")
    assert links(repo) == before


def test_status_and_query_in_a_linked_worktree_use_the_main_memory(repo: Path, tmp_path: Path) -> None:
    commit(repo, "feat: the retry budget", {"src/retry.py": "BUDGET = 3\n"})
    run_cli("-C", str(repo), "sync", "--no-embed")
    other = tmp_path / "feature-wt"
    git(repo, "worktree", "add", "-q", str(other))
    status = run_cli("-C", str(other / "src"), "status", "--json").stdout
    assert json.loads(status)["root"] == str(repo.resolve())
    text = run_cli("-C", str(other), "status").stdout
    head = git(repo, "rev-parse", "HEAD").strip()
    assert f"at commit {head[:10]}" in text and '{"' not in text  # no cut-off JSON cursor
    answer = run_cli("-C", str(other), "query", "retry budget").stdout
    assert "the retry budget" in answer
    assert not (other / ".nexusmem").exists()  # nothing created in the worktree


def test_as_of_before_the_first_recording_says_so(repo: Path) -> None:
    commit(repo, "feat: the retry budget", {"src/retry.py": "BUDGET = 3\n"})
    run_cli("-C", str(repo), "sync", "--no-embed")
    early = run_cli("-C", str(repo), "query", "--as-of", "2001-01-01", "retry budget")
    assert "before this memory's first recording" in early.stdout
    assert "recording time" in early.stdout
    as_json = json.loads(run_cli("-C", str(repo), "query", "--json", "--as-of", "2001-01-01", "retry").stdout)
    assert any("first recording" in n for n in as_json["notes"])  # --json said nothing of it
    # Earlier the same day as the first recording: the times tell them apart, not the same date twice.
    today = time.strftime("%Y-%m-%d", time.gmtime())
    if time.time() % 86400 > 120:
        same_day = run_cli("-C", str(repo), "query", "--as-of", f"{today}T00:00:00Z", "retry budget").stdout
        assert f"as-of {today}T00:00:00+00:00 is before this memory's first recording ({today}T" in same_day
    later = run_cli("-C", str(repo), "query", "--as-of", "2099-01-01", "retry budget")
    assert "first recording" not in later.stdout and "the retry budget" in later.stdout
    assert "recording time" in run_cli("query", "--help").stdout


def commit_titles(repo: Path) -> set[str]:
    with open_store(db_path(repo)) as store:
        rows = store.conn.execute("SELECT title FROM nodes WHERE kind = 'git_commit'").fetchall()
    return {row[0] for row in rows}


def test_deepening_a_shallow_clone_is_noticed(repo: Path, tmp_path: Path) -> None:
    for n in range(6):
        commit(repo, f"feat: step {n}", {f"src/step{n}.py": f"N = {n}\n"})
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", "--depth", "2", f"file://{repo}", str(clone))
    run_cli("-C", str(clone), "sync", "--no-embed")
    assert {t for t in commit_titles(clone) if "step" in t} == {"feat: step 4", "feat: step 5"}
    git(clone, "fetch", "-q", "--deepen", "2")
    run_cli("-C", str(clone), "sync", "--no-embed")
    assert {"feat: step 2", "feat: step 3"} <= commit_titles(clone)
    assert json.loads(run_cli("-C", str(clone), "status", "--json").stdout)["deepened"] is False
    git(clone, "fetch", "-q", "--unshallow")
    # No hook runs for a fetch: status says the older commits are not in memory yet.
    assert json.loads(run_cli("-C", str(clone), "status", "--json").stdout)["deepened"] is True
    assert "the clone was deepened since the last sync" in run_cli("-C", str(clone), "status").stdout
    run_cli("-C", str(clone), "sync", "--no-embed")
    assert {f"feat: step {n}" for n in range(6)} <= commit_titles(clone)
    assert "deepened" not in run_cli("-C", str(clone), "status").stdout
    again = json.loads(run_cli("-C", str(clone), "sync", "--no-embed", "--json").stdout)
    assert again["added"] == 0  # and a sync after that has nothing new


def test_a_clone_made_shallower_keeps_the_history_it_cut_off(repo: Path, tmp_path: Path) -> None:
    """`git fetch --depth 2` after a sync at a greater depth was called a deepen, and the sync it advised
    deleted every commit (and its diffs, and the changelog's links to them) the new cut put out of git's
    reach: they happened, memory keeps them. A commit an amend leaves behind is still pruned."""
    fix = commit(repo, "pool: drop half-closed sockets (#412)", {"src/pool.py": "x = 2\n"})
    for n in range(4):
        commit(repo, f"feat: step {n}", {f"src/step{n}.py": f"N = {n}\n"})
    commit(
        repo,
        "docs: the changelog",
        {"CHANGELOG.md": "# Changelog\n\n## 1.1.0\n\n- Drop half-closed sockets (#412)\n"},
    )
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", "--depth", "6", f"file://{repo}", str(clone))
    run_cli("-C", str(clone), "sync", "--no-embed")
    before = commit_titles(clone)
    assert {"pool: drop half-closed sockets (#412)", "feat: step 0"} <= before
    linked = links(clone)
    assert (node_id(project.load(clone).id, "git_commit", fix), "changelog") in {
        (b, r) for _a, b, r in linked
    }
    with open_store(db_path(clone)) as store:
        diffs = {row[0] for row in store.conn.execute("SELECT ref FROM nodes WHERE kind = 'code_diff'")}
    git(clone, "fetch", "-q", "--depth", "2")
    status = json.loads(run_cli("-C", str(clone), "status", "--json").stdout)
    assert (status["shallower"], status["deepened"]) == (True, False)
    said = run_cli("-C", str(clone), "status").stdout
    assert "made shallower since the last sync" in said and "deepened" not in said
    done = json.loads(run_cli("-C", str(clone), "sync", "--no-embed", "--json").stdout)
    assert done["removed"] == 0
    assert commit_titles(clone) == before
    assert links(clone) == linked
    with open_store(db_path(clone)) as store:
        assert {
            row[0] for row in store.conn.execute("SELECT ref FROM nodes WHERE kind = 'code_diff'")
        } == diffs
    # A real rewrite in the shallow clone: the amended commit goes, the history behind the cut stays.
    commit(clone, "feat: step 4", {"src/step4.py": "N = 4\n"})
    git(clone, "commit", "-q", "--amend", "-m", "feat: step four")
    run_cli("-C", str(clone), "sync", "--no-embed")
    assert commit_titles(clone) == before | {"feat: step four"}


@pytest.mark.slow
def test_scan_previews_the_next_sync(repo: Path) -> None:
    commit(
        repo, "feat: the retry budget", {"src/retry.py": "BUDGET = 3\n", "README.md": "# Retry\n\nBudget.\n"}
    )
    first = run_cli("-C", str(repo), "scan-git").stdout
    assert "git: 1 new, 0 changed, 0 unchanged node(s)" in first and "the retry budget" in first
    run_cli("-C", str(repo), "sync", "--no-embed")
    assert "git: 0 new, 0 changed, 1 unchanged node(s)" in run_cli("-C", str(repo), "scan-git").stdout
    docs = run_cli("-C", str(repo), "scan-docs").stdout
    assert "docs: 0 new, 0 changed, 1 unchanged node(s)" in docs
    (repo / "README.md").write_text("# Retry\n\nBudget of three.\n", encoding="utf-8")
    commit(repo, "feat: a second budget", {"src/second.py": "B = 2\n"})
    after = run_cli("-C", str(repo), "scan-git").stdout
    assert "git: 1 new, 0 changed, 1 unchanged node(s)" in after and "a second budget" in after
    assert "the retry budget" not in after
    assert "docs: 0 new, 1 changed, 0 unchanged node(s)" in run_cli("-C", str(repo), "scan-docs").stdout
    listed = json.loads(run_cli("-C", str(repo), "scan-git", "--json").stdout)
    assert [n["title"] for n in listed] == ["feat: a second budget"]


def test_a_scraped_command_shows_no_unknown_directory(repo: Path) -> None:
    """Commands from a shell's own history file (no hook installed) have no cwd: no `in None` shown."""
    commit(repo, "feat: retry", {"src/retry.py": "BUDGET = 3\n"})
    (Path.home() / ".bash_history").write_text("pytest tests/test_retry_budget.py\n", encoding="utf-8")
    run_cli("-C", str(repo), "sync", "--no-embed")
    out = run_cli("-C", str(repo), "query", "--budget", "400", "pytest test_retry_budget").stdout
    assert "pytest tests/test_retry_budget.py" in out
    assert "None" not in out


def test_a_fix_rewritten_while_its_old_self_was_still_reachable_keeps_its_failure_linked(repo: Path) -> None:
    """The fix is linked, then amended while the old commit is still reachable (pushed: origin/main keeps
    it); the link stays on the old one. A force-push then makes the old commit unreachable and a sync
    prunes it with its link: the failure was left without its fix for good, because the incremental linker
    saw nothing new near it (`sync --link-failures` changed nothing; only `--rebuild` did)."""
    now = int(time.time())
    commit(repo, "feat: f module", {"f.py": "a = 1\n"}, when=now - 3 * 3600)
    write_commands(repo, [((now - 2 * 3600) * 1000, "python -m pytest f.py", 1)])
    fix = commit(repo, "fix(f): correct the value", {"f.py": "a = 2\n"}, when=now - 3600)
    git(repo, "branch", "pushed")  # what origin/main keeps until the force-push
    run_cli("-C", str(repo), "sync", "--no-embed", "--link-failures")
    assert {rel for _a, _b, rel in links(repo)} == {"commit"}
    git(repo, "commit", "-q", "--amend", "-m", "fix(f): correct the value, better message")
    amended = git(repo, "rev-parse", "HEAD").strip()
    assert amended != fix
    run_cli("-C", str(repo), "sync", "--no-embed", "--link-failures")
    git(repo, "branch", "-D", "pushed")  # the force-push: the old fix is gone
    run_cli("-C", str(repo), "sync", "--no-embed")  # a plain sync prunes it, and links the failure again
    answer = json.loads(run_cli("-C", str(repo), "query", "--json", "pytest f.py").stdout)
    fixed = [it for it in answer["items"] if it.get("relation") == "commit"]
    assert [it["title"] for it in fixed] == ["fix(f): correct the value, better message"], answer["items"]
    run_cli("-C", str(repo), "sync", "--no-embed", "--link-failures")  # and a later run keeps it
    assert {rel for _a, _b, rel in links(repo)} == {"commit"}


def test_a_rebase_keeps_a_commits_review_verdict_and_when_it_was_first_recorded(repo: Path) -> None:
    """`pull --rebase` (here: a rebase onto a new upstream commit) gives a local commit a new sha; its
    node went and a new one came: the review verdict was lost (a rejected commit came back as a
    candidate) and --as-of before the rebase no longer showed it. Both go to the rewritten commit."""
    now = int(time.time())
    commit(repo, "feat: base", {"base.txt": "0\n"}, when=now - 7200)
    git(repo, "checkout", "-q", "-b", "local")
    commit(
        repo, "feat: my unpushed local work on the quoll cache", {"quoll.py": "SIZE = 3\n"}, when=now - 3600
    )
    run_cli("-C", str(repo), "sync", "--no-embed")
    [item] = [it for it in query_items(repo, "quoll cache") if it["kind"] == "git_commit"]
    run_cli("-C", str(repo), "review", item["id"], "--reject")
    time.sleep(1.1)
    before = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    time.sleep(1.1)
    git(repo, "checkout", "-q", "main")
    commit(repo, "feat: upstream change", {"up.txt": "1\n"})
    git(repo, "checkout", "-q", "local")
    git(repo, "rebase", "-q", "main")
    run_cli("-C", str(repo), "sync", "--no-embed")
    [after] = [it for it in query_items(repo, "quoll cache") if it["kind"] == "git_commit"]
    assert after["id"] != item["id"] and after["trust"] == "rejected"
    held = query_items(repo, "quoll cache", "--as-of", before)
    assert [it["id"] for it in held if it["kind"] == "git_commit"] == [after["id"]]


def query_items(repo: Path, text: str, *extra: str) -> list[dict[str, object]]:
    items: list[dict[str, object]] = json.loads(
        run_cli("-C", str(repo), "query", "--json", *extra, "--", text).stdout
    )["items"]
    return items


def test_status_says_when_head_moved_since_the_last_sync(repo: Path) -> None:
    """No hook runs on `git reset --hard` or `git checkout`: until the next sync, answers hold commits no
    branch has any more. status (text, --json and so MCP get_status) says so, with the fix."""
    commit(repo, "feat: keep", {"a.py": "x = 1\n"})
    commit(repo, "feat: throwaway experiment", {"b.py": "y = 1\n"})
    run_cli("-C", str(repo), "sync", "--no-embed")
    assert json.loads(run_cli("-C", str(repo), "status", "--json").stdout)["head_moved"] is None
    git(repo, "reset", "-q", "--hard", "HEAD~1")
    moved = json.loads(run_cli("-C", str(repo), "status", "--json").stdout)["head_moved"]
    assert moved == {"memory_at": moved["memory_at"], "head": git(repo, "rev-parse", "HEAD").strip()}
    assert "run `nexusmem sync`" in run_cli("-C", str(repo), "status").stdout
    run_cli("-C", str(repo), "sync", "--no-embed")
    assert json.loads(run_cli("-C", str(repo), "status", "--json").stdout)["head_moved"] is None


def test_query_says_when_head_moved_since_the_last_sync(repo: Path, tmp_path: Path) -> None:
    """After `git reset --hard HEAD~1` query answered with the dropped commit and no word that no branch has
    it now (only status said the memory was behind). Its notes (the plain answer and --json) say it as status
    does, without a git process: HEAD is read from .git's files."""
    commit(repo, "feat: keep", {"a.py": "x = 1\n"})
    old = commit(repo, "feat: throwaway quokka experiment", {"b.py": "y = 1\n"})
    set_embedding(repo, provider="none")  # no vectors, and no note saying semantic search was skipped
    run_cli("-C", str(repo), "sync", "--no-embed")
    calls = tmp_path / "git-calls"
    wrapper = tmp_path / "git-logged"
    wrapper.write_text(f'#!/bin/sh\necho "$*" >> {calls}\nexec git "$@"\n', encoding="utf-8")
    wrapper.chmod(0o755)
    logged = {"NEXUSMEM_GIT": str(wrapper)}

    def ask(*extra: str) -> str:
        done = run_script("query", *extra, "quokka experiment", cwd=repo, env=logged)
        assert done.returncode == 0, done.stderr
        return done.stdout

    assert "run `nexusmem sync`" not in ask() and json.loads(ask("--json"))["notes"] == []
    git(repo, "reset", "-q", "--hard", "HEAD~1")
    head = git(repo, "rev-parse", "HEAD").strip()
    said = f"HEAD is {head[:10]}, memory is at {old[:10]} (commits made without the post-commit hook, a reset"
    plain = ask()
    assert "throwaway quokka experiment" in plain  # still in memory until the next sync: now said so
    assert f"note: {said}" in plain and "run `nexusmem sync`" in plain
    notes = json.loads(ask("--json"))["notes"]
    [note] = [n for n in notes if n.startswith(said)]
    assert "run `nexusmem sync`" in note
    assert said in run_cli("-C", str(repo), "status").stdout  # the same words as status
    # Under a budget too small for the note, it goes to stderr (it was dropped without a word).
    small = run_script("query", "--budget", "50", "quokka experiment", cwd=repo, env=logged)
    assert said not in small.stdout and f"nexusmem: note: {said}" in small.stderr, small
    assert not calls.exists()  # no git process on the query path
    run_cli("-C", str(repo), "sync", "--no-embed")
    data = json.loads(ask("--json"))
    assert data["notes"] == [] or not any("HEAD is" in n for n in data["notes"])
    assert not any("quokka" in str(item["title"]) for item in data["items"])


def test_a_verdict_goes_only_to_the_commit_that_replaced_its_own(repo: Path) -> None:
    """Commits made in the same second by the same author: a reset that drops one must not hand its
    verdict to the other (it did: the heir was any commit with that author and second), and an amend of
    one must still hand it to the amended commit (two candidates made it hand nothing)."""
    now = int(time.time()) - 600
    commit(repo, "feat: base unrelated", {"base.py": "x = 1\n"}, when=now)
    commit(repo, "feat: experimental kumquat idea", {"kumquat.py": "y = 1\n"}, when=now)
    run_cli("-C", str(repo), "sync", "--no-embed")

    def commit_item(text: str) -> dict[str, object]:
        [item] = [
            it for it in query_items(repo, text) if it["kind"] == "git_commit" and text in str(it["title"])
        ]
        return item

    run_cli("-C", str(repo), "review", str(commit_item("kumquat")["id"]), "--reject")
    git(repo, "commit", "-q", "--amend", "-m", "feat: experimental kumquat idea, reworded")
    run_cli("-C", str(repo), "sync", "--no-embed")
    assert commit_item("kumquat idea, reworded")["trust"] == "rejected"
    assert commit_item("base unrelated")["trust"] == "candidate"
    git(repo, "reset", "-q", "--hard", "HEAD~1")
    run_cli("-C", str(repo), "sync", "--no-embed")
    assert commit_item("base unrelated")["trust"] == "candidate"


def test_the_commit_after_a_test_passed_again_is_linked_as_its_fix(repo: Path) -> None:
    # fail → edit the code (not the test) → the test passes → commit the edit: the commit is the fix.
    now_s = int(time.time()) // 3600 * 3600 - 6 * 3600
    files = {"src/cache.py": "SIZE = 0\n", "tests/test_cache.py": "def test(): assert SIZE\n"}
    commit(repo, "feat: the cache", files, when=now_s - 3600)
    t0 = now_s * 1000
    write_commands(
        repo, [(t0, "pytest tests/test_cache.py", 1), (t0 + HOUR // 2, "pytest tests/test_cache.py", 0)]
    )
    fix = commit(repo, "fix: give the cache a size", {"src/cache.py": "SIZE = 64\n"}, when=now_s + 3600)
    run_cli("-C", str(repo), "sync", "--no-embed", "--link-failures")
    data = json.loads(run_cli("-C", str(repo), "query", "--json", "why did the cache test fail").stdout)
    failure = next(it for it in data["items"] if "(exit 1)" in it["title"])
    riders = {it["relation"]: it["ref"] for it in data["items"] if it["linked_from"] == failure["id"]}
    assert riders == {"retry": "pytest tests/test_cache.py", "commit": fix}
    listed = json.loads(run_cli("-C", str(repo), "query", "--json", "what failed in the last day").stdout)
    assert listed["matched"] >= len(listed["items"]) == 3  # the fixes that ride along count as matches
    # A window that ends before the fixes: they cannot ride along, and are not counted either.
    before = time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime(now_s + 600))
    early = json.loads(run_cli("-C", str(repo), "query", "--json", "--until", before, "what failed").stdout)
    assert early["matched"] == len(early["items"]) == 1, early


def test_a_pass_in_another_worktree_does_not_answer_a_failure_in_this_one(repo: Path, tmp_path: Path) -> None:
    """Both runs were kept as run in "." (each relative to its own checkout): the linker took the other
    checkout's pass for the fix, and precheck fell silent while the test still failed here."""
    commit(repo, "feat: calc", {"src/calc.py": "def add(a, b):\n    return a + b\n"})
    other = tmp_path / "repo-wt"
    git(repo, "worktree", "add", "-q", "-b", "wt", str(other))
    t0 = int(time.time() * 1000) - 3 * HOUR
    line = {"command": "python3 tests/test_calc.py", "shell": "bash", "session": "s1", "v": 1}
    from nexusmem.paths import shell_log_path

    shell_log_path().parent.mkdir(parents=True, exist_ok=True)
    with shell_log_path().open("a", encoding="utf-8") as fh:
        for ts, cwd, code in ((t0, repo, 1), (t0 + HOUR, other, 0), (t0 + 2 * HOUR, other / "src", 0)):
            fh.write(json.dumps({**line, "ts": ts, "cwd": str(cwd), "exit": code}) + "\n")
    run_cli("-C", str(repo), "sync", "--no-embed", "--link-failures")
    assert links(repo) == set()
    with open_store(db_path(repo)) as store:
        cwds = [cwd for _i, _c, _t, cwd, _e in store.shell_commands_between(0, 2**62)]
    assert cwds == [".", "../repo-wt", "../repo-wt/src"]
    write_commands(repo, [(t0 + 3 * HOUR, "python3 tests/test_calc.py", 0)])  # passes in this checkout
    run_cli("-C", str(repo), "sync", "--no-embed", "--link-failures")
    assert [rel for _a, _b, rel in links(repo)] == ["retry"]


def test_query_and_status_during_the_first_background_build_say_so(repo: Path) -> None:
    """While the post-commit hook's first sync built the memory, query and status said "has no NexusMem
    memory yet: run `nexusmem sync`" (which then only waited for that build); precheck said it right.
    Then status exited 1 ("still being built … try again in a moment", no JSON for --json) until the sync
    had made the store: it answers from the hook's first moment to the sync's end, `building` true."""
    from nexusmem.oslock import FileLock

    commit(repo, "feat: start", {"a.py": "A = 1\n"})
    state = repo / ".nexusmem"
    state.mkdir(mode=0o700)
    (state / "sync.pending").write_text("", encoding="utf-8")  # what the post-commit hook leaves
    said = run_cli("-C", str(repo), "query", "start", ok=False)
    assert said.exit_code == 1 and "still being built in the background" in said.output, said.output
    shown = run_cli("-C", str(repo), "status").stdout
    assert "the first sync is running in the background" in shown and "(not made yet)" in shown, shown
    info = json.loads(run_cli("-C", str(repo), "status", "--json").stdout)
    assert info["building"] is True and info["nodes"] == 0 and info["schema_version"] is None
    # The MCP tools say the same (they said "no memory yet: call sync_project", which raced the hook's sync).
    from nexusmem import mcp_server

    got = mcp_server.run_status(str(repo))
    assert not got.is_error and got.structured_content is not None, got
    assert got.structured_content["building"] is True and got.structured_content["nodes"] == 0
    with pytest.raises(mcp_server.ToolError, match="still being built in the background"):
        mcp_server.run_get(str(repo), "HEAD")
    # The hook's sync takes the flag away before its sync makes the store: its own lock (sync.lock) still
    # says a build is under way (between the two, status said "run `nexusmem sync`").
    (state / "sync.pending").unlink()
    hook_sync = FileLock(state / "sync.lock")
    hook_sync.acquire(timeout=0)
    try:
        assert json.loads(run_cli("-C", str(repo), "status", "--json").stdout)["building"] is True
    finally:
        hook_sync.release()
    said = run_cli("-C", str(repo), "status", ok=False)
    assert "has no NexusMem memory yet: run `nexusmem sync`" in said.output
    # Seconds later the background sync has made the database, and has not finished its first pass yet.
    project.init(repo)
    (state / "sync.pending").write_text("", encoding="utf-8")
    shown = run_cli("-C", str(repo), "status").stdout
    assert "the first sync is running in the background" in shown and "never synced" not in shown
    (state / "auto-sync.log").write_text("", encoding="utf-8")  # where the hook's sync writes
    shown = run_cli("-C", str(repo), "status").stdout
    assert "the first sync is running in the background (.nexusmem/auto-sync.log)" in shown, shown
    assert json.loads(run_cli("-C", str(repo), "status", "--json").stdout)["building"] is True
    os.utime(state / "sync.pending", (time.time() - 3600, time.time() - 3600))  # left behind by a crash
    assert json.loads(run_cli("-C", str(repo), "status", "--json").stdout)["building"] is False
    (state / "sync.pending").unlink()
    run_cli("-C", str(repo), "sync", "--no-embed")
    (state / "sync.pending").write_text("", encoding="utf-8")  # a later sync about to run: no first build
    assert json.loads(run_cli("-C", str(repo), "status", "--json").stdout)["building"] is False
    # The first sync has read some sources and is still running (no sync has ended yet: the registry has
    # no lastSync): still building, the sources done so far listed.
    from nexusmem.paths import registry_path

    registry = json.loads(registry_path().read_text(encoding="utf-8"))
    for entry in registry["projects"]:
        entry.pop("lastSync", None)
    registry_path().write_text(json.dumps(registry), encoding="utf-8")
    shown = run_cli("-C", str(repo), "status").stdout
    assert "sources: (the first sync is still running in the background" in shown, shown
    assert json.loads(run_cli("-C", str(repo), "status", "--json").stdout)["building"] is True


def test_status_during_a_first_sync_run_in_a_terminal_names_no_log_it_does_not_write(repo: Path) -> None:
    """`nexusmem sync &` in a fresh clone, then `nexusmem status`: it said "the first sync is running in the
    background (.nexusmem/auto-sync.log)", a log only the post-commit hook's sync writes, and none was there."""
    commit(repo, "feat: start", {"a.py": "A = 1\n", "README.md": "# Start\n\nThe start.\n"})
    seen: list[str] = []

    def meanwhile(_label: str, _done: int, _total: int | None) -> None:
        if not seen:  # the user's other terminal, while this sync holds its lock
            seen.append(run_script("status", cwd=repo).stdout)

    sync.sync(repo, embed=False, progress=meanwhile)
    assert seen and "sources:  the first sync is running\n" in seen[0], seen
    assert not (repo / ".nexusmem" / "auto-sync.log").exists()


def killed_sync(repo: Path, **how: object) -> None:
    """A real sync's own run lock and mark (sync.exclusive, with HOW: rebuild, only), then SIGKILL before it
    ends (no `finally` runs)."""
    import signal
    import subprocess
    import sys

    killed = subprocess.run(
        [
            sys.executable,
            "-c",
            "import json, os, pathlib, signal, sys\n"
            "from nexusmem.sync import exclusive\n"
            "with exclusive(pathlib.Path(sys.argv[1]), 0, None, **json.loads(sys.argv[2])):\n"
            "    os.kill(os.getpid(), signal.SIGKILL)\n",
            str(repo),
            json.dumps(how),
        ],
        check=False,
    )
    assert killed.returncode == -signal.SIGKILL


def test_a_sync_killed_on_the_way_is_said_until_the_next_one_ends(repo: Path) -> None:
    """A post-commit sync killed with SIGKILL 2.5 s into a first build left 1,193 commits and no docs or diffs,
    and status, doctor and answers said nothing: it wrote no error line."""
    commit(repo, "feat: the retry budget", {"src/retry.py": "BUDGET = 3\n"})
    run_cli("-C", str(repo), "sync", "--no-embed")
    killed_sync(repo)
    said = "was stopped before it ended: what it had not stored yet is not in memory"
    status = run_cli("-C", str(repo), "status").stdout
    assert "sync: the last sync (started 20" in status and said in status
    assert json.loads(run_cli("-C", str(repo), "status", "--json").stdout)["sync_unfinished"]
    doctor = run_cli("-C", str(repo), "doctor", ok=False).stdout
    assert said in doctor and f"nexusmem -C {repo} sync" in doctor
    notes = json.loads(run_cli("-C", str(repo), "query", "--json", "retry budget").stdout)["notes"]
    assert any(said in n for n in notes)
    run_cli("-C", str(repo), "sync", "--no-embed")  # the next sync ends: nothing more to say
    assert said not in run_cli("-C", str(repo), "status").stdout
    after = json.loads(run_cli("-C", str(repo), "query", "--json", "retry budget").stdout)["notes"]
    assert not [n for n in after if not n.startswith("semantic search skipped")], after  # synced --no-embed


def test_a_sync_killed_after_a_killed_one_still_says_what_is_left_to_do(repo: Path) -> None:
    """A `sync --rebuild` killed on the way, then the post-commit sync killed too: status said "run `nexusmem
    sync`" and the next plain sync took the warning away, the rebuild never run again. A stopped sync's mark
    now says what both left undone; a search's shell catch-up killed on the way is ended by the next one."""
    commit(repo, "feat: the retry budget", {"src/retry.py": "BUDGET = 3\n"})
    run_cli("-C", str(repo), "sync", "--no-embed")
    killed_sync(repo, rebuild=True)
    killed_sync(repo)
    assert "run `nexusmem sync --rebuild`" in run_cli("-C", str(repo), "status").stdout
    run_cli("-C", str(repo), "sync", "--no-embed")
    assert "run `nexusmem sync --rebuild`" in run_cli("-C", str(repo), "status").stdout
    run_cli("-C", str(repo), "sync", "--rebuild", "--no-embed")
    assert "was stopped" not in run_cli("-C", str(repo), "status").stdout
    killed_sync(repo, only=["shell"])
    assert "the last sync (started 20" in run_cli("-C", str(repo), "status").stdout
    run_cli("-C", str(repo), "sync", "--source", "shell", "--no-embed")
    assert "was stopped" not in run_cli("-C", str(repo), "status").stdout


def test_query_says_how_many_newer_commands_it_did_not_search(repo: Path) -> None:
    # "which tests failed" right after a failed `pytest` listed the older failures with no word that the
    # newest was not searched (MCP search_memory stores the unsynced commands first; a cold query cannot
    # afford that sync, so it says how many there are and how to add them).
    now = int(time.time() * 1000)
    commit(repo, "feat: router", {"src/router.py": "ROUTES = []\n"})
    write_commands(repo, [(now - 2 * HOUR, "pytest tests/test_cache.py", 1)])
    assert run_script("sync", "--no-embed", cwd=repo).returncode == 0
    note = "1 newer command(s) run here are not synced yet, so not searched: run `nexusmem sync`"

    write_commands(repo, [(now - 60_000, "pytest tests/test_router.py", 1)])
    said = run_script("query", "which tests failed", cwd=repo)
    assert said.returncode == 0 and f"note: {note}" in said.stdout, said.stdout
    assert "test_router" not in said.stdout  # not searched: the note is why
    assert (
        note in json.loads(run_cli("-C", str(repo), "query", "--json", "which tests failed").stdout)["notes"]
    )

    # Synced: searched, and nothing to say. The line the hook logs after each query is not worth a note.
    assert run_script("sync", "--no-embed", cwd=repo).returncode == 0
    write_commands(repo, [(now, 'nexusmem query "which tests failed"', 0)])
    said = run_script("query", "which tests failed", cwd=repo)
    assert "pytest tests/test_router.py (exit 1)" in said.stdout and "not synced" not in said.stdout, (
        said.stdout
    )
    # The check reads the shell cursor without loading the shell source: the same layout.
    from nexusmem import catchup
    from nexusmem.sources.shell import tail

    assert catchup._SHELL_CURSOR_VERSION == tail.CURSOR_VERSION


def test_a_query_typed_behind_clear_or_cd_and_piped_is_neither_an_answer_nor_unsynced_work(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`clear; nexusmem query "how did I fix the test_cache failure" 2>&1 | tee out.txt` typed in a hooked
    shell: every later query said "N newer command(s) run here are not synced yet" even right after a sync,
    and once synced, that line was an answer to the same question, right after the failure and its fix."""
    now = int(time.time() * 1000)
    commit(repo, "feat: cache", {"tests/test_cache.py": "def test(): pass\n"})
    write_commands(
        repo,
        [(now - 2 * HOUR, "pytest tests/test_cache.py", 1), (now - HOUR, "pytest tests/test_cache.py", 0)],
    )
    assert run_script("sync", "--no-embed", cwd=repo).returncode == 0
    monkeypatch.setenv("PATH", f"{Path(console_script()).parent}{os.pathsep}{os.environ['PATH']}")
    question = "how did I fix the test_cache failure"
    typed_in_bash(
        repo,
        f'clear; nexusmem query "{question}" 2>&1 | tee out.txt',
        "cd tests && time nexusmem status | head -3",
        'NEXUSMEM_X=1 env LC_ALL=C nexusmem query "what failed" | grep -c exit',
        "cd /tmp && nexusmem --version",  # the typing helper's own last line runs outside the repository
    )
    logged = (Path(os.environ["NEXUSMEM_HOME"]) / "shell-history.jsonl").read_text(encoding="utf-8")
    assert "clear; nexusmem query" in logged and "time nexusmem status" in logged
    said = run_script("query", question, cwd=repo)
    assert said.returncode == 0 and "not synced" not in said.stdout, said.stdout

    assert run_script("sync", "--no-embed", cwd=repo).returncode == 0
    answer = json.loads(run_cli("-C", str(repo), "query", "--json", question).stdout)
    refs = [it["ref"] for it in answer["items"]]
    assert "pytest tests/test_cache.py" in refs and not [r for r in refs if "nexusmem" in r], refs


def test_status_says_how_many_commands_wait_for_a_sync(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A query said "1 newer command(s) run here are not synced yet"; `nexusmem status` said nothing of them."""
    commit(repo, "feat: cache", {"tests/test_cache.py": "def test(): pass\n"})
    assert run_script("sync", "--no-embed", cwd=repo).returncode == 0
    monkeypatch.setenv("PATH", f"{Path(console_script()).parent}{os.pathsep}{os.environ['PATH']}")
    typed_in_bash(
        repo, "git status --short", "ls tests", "clear; nexusmem status", "cd /tmp && nexusmem --version"
    )
    note = "2 newer command(s) run here are not synced yet, so not searched: run `nexusmem sync`"
    said = run_script("status", cwd=repo)
    assert said.returncode == 0 and f"shell: {note}" in said.stdout, said.stdout
    assert note in run_script("query", "which tests failed", cwd=repo).stdout  # the same count
    info = json.loads(run_script("status", "--json", cwd=repo).stdout)
    assert (info["unsynced_commands"], info["unsynced_backlog"]) == (2, False)

    assert run_script("sync", "--no-embed", cwd=repo).returncode == 0
    assert "not synced" not in run_script("status", cwd=repo).stdout
    assert json.loads(run_script("status", "--json", cwd=repo).stdout)["unsynced_commands"] == 0


def test_a_large_budget_shows_the_further_sections_of_a_doc_file(repo: Path) -> None:
    """ "How do I set a timeout on a request" at `--budget 20000` (guzzle) showed two sections of
    docs/request-options.rst and never #timeout, stored and ranked, while CHANGELOG.md (one sibling group per
    release) filled 54 places: the cap of two pieces of one file held at any budget. It is for variety in the
    first screen: past it, the sections held back follow in rank order; the default budget is as before."""
    options = "".join(
        f"## {name}\n\nSet the {name} of a request in seconds: the request times out after it. "
        f"Pass `{name}` in the request options; the timeout applies to each request.\n\n"
        for name in ("connect_timeout", "read_timeout", "timeout", "idle_timeout")
    )
    releases = "".join(
        f"## 1.{n}.0\n\n- Fixed the request timeout of the handler in case {n}\n"
        f"- Documented the timeout request option for retries, step {n}; {'padding words ' * 30}\n\n"
        for n in range(40)
    )
    commit(repo, "docs: request options", {"docs/request-options.md": "# Request options\n\n" + options})
    commit(repo, "docs: changelog", {"CHANGELOG.md": "# Changelog\n\n" + releases})
    run_cli("-C", str(repo), "sync", "--no-embed")

    def sections(*budget: str) -> list[str]:
        found = json.loads(
            run_cli("-C", str(repo), "query", "how do I set a timeout on a request", "--json", *budget).stdout
        )
        return [it["ref"] for it in found["items"] if it["ref"].startswith("docs/request-options.md#")]

    assert len(sections()) == 2, sections()
    assert len(sections("--budget", "20000")) == 4, sections("--budget", "20000")


def test_the_footer_counts_every_item_a_failure_listing_shows(repo: Path) -> None:
    """ "What failed yesterday" printed "5 of 4 match(es) shown" (and `--json` matched 4 beside 5 items): the
    items linked to yesterday's failures ride along (here the retry that passed today; in a day of agent work,
    the conversation turn that discussed the failure), but the question's words had matched them ("failed"),
    so they were taken as counted among the matches, while the listing (the whole answer) counted only the
    failures it listed."""
    from helpers.env import clear_of_midnight, since_midnight

    clear_of_midnight(300)
    now = time.time()
    if since_midnight(now) < 1800:
        pytest.skip("the day has just begun: the retry must run today, after midnight")
    midnight_ms = int((now - since_midnight(now)) * 1000)
    # The commit comes hours before the failure: one made within the hour after it would be its fix, listed too.
    files = {"src/cache.py": "SIZE = 0\n", "tests/test_cache.py": "def test(): 1\n"}
    commit(repo, "feat: the cache", files, when=midnight_ms // 1000 - 3 * 3600)
    failed, passed = midnight_ms - 20 * 60_000, midnight_ms + 10 * 60_000
    run = "pytest tests/test_cache.py -k failed_write"
    write_commands(repo, [(failed, run, 1), (passed, run, 0)])
    run_cli("-C", str(repo), "sync", "--no-embed", "--link-failures")
    found = json.loads(run_cli("-C", str(repo), "query", "--json", "what failed yesterday").stdout)
    titles = [(it["title"], it["relation"]) for it in found["items"]]
    assert titles == [(f"{run} (exit 1)", None), (f"{run} (exit 0)", "retry")], titles
    assert found["matched"] >= len(found["items"]), (found["matched"], titles)
    text = run_cli("-C", str(repo), "query", "what failed yesterday").stdout
    assert "2 of 2 match(es) shown" in text, text
