"""Cross-project recall (`query --all-projects`, MCP `allProjects`) over real, synced repositories.

Two repositories with different histories are built and synced once per module: "platform", large (200
commits, many of them about the retry budget) and "uploader", tiny (three commits, a weaker match, and a
failed command whose fix was linked by `sync --link-failures`). Each test gets its own home (conftest) and a
copy of the registry those syncs wrote, so a test may add, break or hide projects without touching others.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.types import TextContent

from nexusmem import paths
from nexusmem.retrieve.pack import estimate_tokens
from nexusmem.store import open_store

from helpers import commit, git, query_json, run_cli, run_script, short_sha, write_commands
from helpers.env import GITCONFIG, clear_of_midnight
from helpers.mcp import mcp_session

DAY = 86_400
HOUR_MS = 3_600_000
QUERY = "retry budget"


@dataclass(frozen=True)
class World:
    platform: Path
    uploader: Path
    registry: Path  # the projects.json both syncs wrote
    between: str  # an ISO instant after platform's sync and before uploader's
    fix_sha: str  # the uploader commit that fixed the failed lint run


def _git_env(home: Path) -> dict[str, str]:
    """What conftest's isolated_home sets, for the module-scoped build (which runs outside any test)."""
    gitconfig = home / ".gitconfig"
    gitconfig.write_text(GITCONFIG, encoding="utf-8")
    return {
        "HOME": str(home),
        "NEXUSMEM_HOME": str(home / ".nexusmem"),
        "GIT_CONFIG_GLOBAL": str(gitconfig),
        "GIT_CONFIG_NOSYSTEM": "1",
    }


def _build_platform(root: Path, start: int) -> None:
    """200 commits: every fifth one about the retry budget (both query words), the rest unrelated."""
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    for i in range(200):
        when = start + i * 3600
        if i % 5 == 0:
            message = (
                f"fix(http): raise the retry budget for service {i} after timeouts, retry budget now {i}"
            )
            files = {f"svc/retry_{i % 7}.py": f"RETRY_BUDGET = {i}\n"}
        else:
            message = f"feat(ui): widget number {i} renders the dashboard panel"
            files = {f"ui/widget_{i % 11}.py": f"PANEL = {i}\n"}
        commit(root, message, files, when=when)


def _build_uploader(root: Path, start: int) -> str:
    """Three commits, one weakly matching ("retry" only), and a linted file fixed by a later commit."""
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    commit(root, "chore: start the uploader", {"src/app.py": "x = 1\n"}, when=start)
    commit(
        root, "feat(upload): add a retry loop around the S3 put", {"src/put.py": "LOOP = 1\n"}, start + DAY
    )
    return commit(
        root, "fix(app): satisfy the linter", {"src/app.py": "X = 1\n"}, when=start + 2 * DAY + 3 * 3600
    )


def _write_shell_log(log: Path, cwd: Path, t0_ms: int) -> None:
    log.parent.mkdir(parents=True, exist_ok=True)
    entries = [(t0_ms, "ruff check src/app.py", 1), (t0_ms + 4 * HOUR_MS, "ruff check src/app.py", 0)]
    with log.open("w", encoding="utf-8") as fh:
        for ts, command, code in entries:
            line = {"ts": ts, "cwd": str(cwd), "exit": code, "command": command, "shell": "bash", "v": 1}
            fh.write(json.dumps({**line, "session": "s1"}) + "\n")


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    base = tmp_path_factory.mktemp("world")
    home = base / "home"
    home.mkdir()
    env = _git_env(home)
    start = (int(time.time()) // 3600 * 3600) - 20 * DAY
    with pytest.MonkeyPatch.context() as mp:
        for key in list(os.environ):
            if key.startswith("GIT_"):
                mp.delenv(key)
        for key, value in env.items():
            mp.setenv(key, value)
        platform, uploader = base / "platform", base / "uploader"
        _build_platform(platform, start)
        fix_sha = _build_uploader(uploader, start)
        _write_shell_log(paths.shell_log_path(), uploader, (start + 2 * DAY) * 1000)
        run_cli("-C", str(platform), "sync", "--no-embed", "--quiet")
        time.sleep(0.05)
        between = datetime.now(timezone.utc).isoformat(timespec="microseconds")
        time.sleep(0.05)
        out = run_cli("-C", str(uploader), "sync", "--no-embed", "--link-failures", "--json").stdout
        assert json.loads(out)["links"]["commit"] == 1
        yield World(platform, uploader, paths.registry_path(), between, fix_sha)


def _registry_from(registry: Path) -> None:
    """This test's home gets REGISTRY (one a module fixture's syncs wrote) as its own."""
    target = paths.registry_path()
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(registry, target)


@pytest.fixture
def registered(world: World) -> World:
    """This test's (empty) home gets the registry the module's syncs wrote: both projects registered."""
    _registry_from(world.registry)
    return world


def all_json(cwd: Path, *extra: str, text: str = QUERY) -> dict[str, Any]:
    out = run_cli("-C", str(cwd), "query", "--all-projects", "--json", *extra, "--", text).stdout
    data: dict[str, Any] = json.loads(out)
    return data


def digest(root: Path) -> tuple[str, int]:
    """The database file's bytes, and how many bytes its write-ahead log holds (0 when there is none)."""
    state = root / ".nexusmem"
    wal = state / "memory.db-wal"
    return hashlib.sha256(
        (state / "memory.db").read_bytes()
    ).hexdigest(), wal.stat().st_size if wal.exists() else 0


def small_repo(path: Path, message: str) -> Path:
    path.mkdir()
    git(path, "init", "-q", "-b", "main")
    commit(path, message, {"notes.txt": message + "\n"}, when=1_700_000_000)
    run_cli("-C", str(path), "sync", "--no-embed", "--quiet")
    return path


# --------------------------------------------------------------------------------------------------- tests


@pytest.mark.slow
def test_results_from_both_projects_are_tagged_and_fused_by_rank(registered: World, tmp_path: Path) -> None:
    # Each project on its own: platform has dozens of two-word matches, uploader one weak one-word match.
    alone_p = query_json(registered.platform, QUERY, "--budget", "4000")
    alone_u = query_json(registered.uploader, QUERY)
    assert alone_p["bm25_matched"] >= 40
    top_u = alone_u["items"][0]
    assert "retry loop" in top_u["title"] and "budget" not in top_u["title"].lower()

    before = {name: digest(root) for name, root in (("p", registered.platform), ("u", registered.uploader))}
    # Run from a directory that is not a repository: the current project is optional.
    data = all_json(tmp_path, "--budget", "600")
    assert [p["name"] for p in data["projects"]] == ["platform", "uploader"]
    assert [p["root"] for p in data["projects"]] == [str(registered.platform), str(registered.uploader)]
    assert data["skipped"] == []
    assert {it["project"] for it in data["items"]} == {"platform", "uploader"}
    # Rank 1 is worth the same in every list: the tiny project's best hit sits in the first tier, ahead of
    # every platform item but platform's own first, although its BM25 match is far weaker.
    ids = [(it["project"], it["id"]) for it in data["items"]]
    assert ("uploader", top_u["id"]) in ids[:2]
    assert ("platform", alone_p["items"][0]["id"]) in ids[:2]
    # Within one project the order is that project's own ranking (an item that does not fit is skipped).
    platform_order = [it["id"] for it in data["items"] if it["project"] == "platform"]
    alone_order = [it["id"] for it in alone_p["items"]]
    assert platform_order == [i for i in alone_order if i in platform_order]
    # Counts add up over the projects; the budget holds.
    assert data["matched"] == alone_p["matched"] + alone_u["matched"]
    assert data["bm25_matched"] == alone_p["bm25_matched"] + alone_u["bm25_matched"]
    assert data["tokens_used"] <= 600
    # The `query --json` keys of docs/contracts.md §5, plus `projects` and `skipped` only under --all-projects.
    assert list(data) == [
        "query",
        "query_cut",
        "budget",
        "tokens_used",
        "matched",
        "bm25_matched",
        "vector_matched",
        "items",
        "weak",
        "notes",
        "projects",
        "skipped",
    ]
    assert set(alone_p) == set(data) - {"projects", "skipped"}
    # ... and on every item, its project's root.
    assert all(list(it) == [*alone_p["items"][0], "projectRoot"] for it in data["items"])
    roots = {"platform": str(registered.platform), "uploader": str(registered.uploader)}
    assert all(it["projectRoot"] == roots[it["project"]] for it in data["items"])
    # A query writes no project's database (read-only connections: SQLite may leave its empty -wal/-shm
    # reader files beside it, but not one byte of content).
    after = {name: digest(root) for name, root in (("p", registered.platform), ("u", registered.uploader))}
    assert after == before and all(wal == 0 for _, wal in after.values())


@pytest.mark.slow
def test_plain_output_shows_the_scope_and_a_project_tag(registered: World, tmp_path: Path) -> None:
    result = run_cli("-C", str(tmp_path), "query", "--all-projects", "--budget", "600", "--", QUERY)
    lines = result.stdout.splitlines()
    assert lines[0] == f"Relevant history for: {QUERY}"
    assert lines[1] == "scope   2 project(s): platform, uploader"
    items = [line for line in lines if line.startswith("- ")]
    assert any(" [observed] [uploader] feat(upload): add a retry loop" in line for line in items)
    assert all(" [observed] [platform] " in line or " [uploader] " in line for line in items)
    assert result.stderr == ""


@pytest.mark.slow
def test_current_project_is_included_once_registered_or_not(registered: World, tmp_path: Path) -> None:
    # Registered: it is not searched twice, and comes first.
    data = all_json(registered.uploader)
    assert [p["name"] for p in data["projects"]] == ["uploader", "platform"]
    # Not registered (synced, then the registry put back): still searched, and the registry stays as it was.
    local = small_repo(tmp_path / "scratch", "feat: a retry budget for the scratch pad")
    shutil.copyfile(registered.registry, paths.registry_path())
    registry_bytes = paths.registry_path().read_bytes()
    data = all_json(local)
    assert [p["name"] for p in data["projects"]] == ["scratch", "platform", "uploader"]
    # Each project's best item ties on rank; the tie goes to the higher score (platform's is a fix commit).
    assert {it["project"] for it in data["items"][:2]} == {"scratch", "platform"}
    assert any(it["title"].startswith("feat: a retry budget for the scratch pad") for it in data["items"])
    assert paths.registry_path().read_bytes() == registry_bytes


@pytest.mark.slow
def test_a_linked_fix_rides_along_from_the_project_that_recorded_it(
    registered: World, tmp_path: Path
) -> None:
    data = all_json(tmp_path, text="ruff check src/app.py failed")
    items = data["items"]
    failure = next(it for it in items if "(exit 1)" in it["title"])
    assert failure["project"] == "uploader"
    riders = [it for it in items if it["linked_from"] == failure["id"]]
    assert {it["ref"] for it in riders} == {registered.fix_sha, "ruff check src/app.py"}
    assert all(it["project"] == "uploader" and it["score"] == failure["score"] for it in riders)
    at = items.index(failure)
    assert items[at + 1 : at + 1 + len(riders)] == riders
    listed = all_json(tmp_path, "--since", "2000-01-01", text="which commands failed")
    assert listed["matched"] >= len(listed["items"]) > 1  # the fixes riding along count as matches
    text = run_cli(
        "-C", str(tmp_path), "query", "--all-projects", "--", "ruff check src/app.py failed"
    ).stdout
    assert "[uploader] fix(app): satisfy the linter  -- linked as the fix (commit)" in text


@pytest.mark.slow
def test_missing_corrupt_and_newer_databases_are_reported_and_skipped(
    registered: World, tmp_path: Path
) -> None:
    gone = small_repo(tmp_path / "gone", "fix: retry budget in the gone project")
    broken = small_repo(tmp_path / "broken", "fix: retry budget in the broken project")
    future = small_repo(tmp_path / "future", "fix: retry budget in the future project")
    stashed = small_repo(tmp_path / "stashed", "fix: retry budget in the stashed project")
    (stashed / "notes.txt").write_text("wip\n", encoding="utf-8")
    git(stashed, "stash", "-q", "--all")  # takes .nexusmem/ with it: it said "database missing"
    shutil.rmtree(gone / ".nexusmem")
    for leftover in (broken / ".nexusmem").glob("memory.db-*"):
        leftover.unlink()
    (broken / ".nexusmem" / "memory.db").write_bytes(os.urandom(8192))
    with open_store(future / ".nexusmem" / "memory.db") as store:
        store.conn.execute("INSERT INTO schema_migrations(version, name, applied_at) VALUES (999, 'x', 0)")
    registry_bytes = paths.registry_path().read_bytes()

    result = run_cli("-C", str(tmp_path), "query", "--all-projects", "--json", "--", QUERY)
    data = json.loads(result.stdout)
    skipped = {s["name"]: s for s in data["skipped"]}
    assert set(skipped) == {"gone", "broken", "future", "stashed"}
    assert "database missing" in skipped["gone"]["reason"]
    assert "stash@{0}" in skipped["stashed"]["reason"] and "git stash pop" in skipped["stashed"]["reason"]
    assert skipped["gone"]["db"] == str(gone / ".nexusmem" / "memory.db")
    assert "not a database" in skipped["broken"]["reason"]
    assert "written by a newer NexusMem (schema 999)" in skipped["future"]["reason"]
    assert [p["name"] for p in data["projects"]] == ["platform", "uploader"]
    assert {it["project"] for it in data["items"]} == {"platform", "uploader"}
    for name in ("gone", "broken", "future"):
        assert f"nexusmem: note: skipped {name} ({tmp_path / name}): " in result.stderr
    # Reported, never pruned: the registry is byte for byte what it was.
    assert paths.registry_path().read_bytes() == registry_bytes
    projects = run_cli("projects", "--json").stdout
    assert {p["name"] for p in json.loads(projects)["projects"]} >= {"gone", "broken", "future", "stashed"}


@pytest.mark.slow
def test_same_stores_and_query_give_the_same_bytes(registered: World, tmp_path: Path) -> None:
    runs = [run_script("query", "--all-projects", "--", QUERY, cwd=tmp_path) for _ in range(2)]
    assert all(r.returncode == 0 for r in runs), runs[0].stderr
    assert runs[0].stdout == runs[1].stdout and "scope   2 project(s)" in runs[0].stdout
    again = [all_json(tmp_path) for _ in range(2)]
    assert json.dumps(again[0]) == json.dumps(again[1])


@pytest.mark.slow
def test_as_of_applies_to_every_project(registered: World, tmp_path: Path) -> None:
    data = all_json(tmp_path, "--as-of", registered.between)
    assert [p["name"] for p in data["projects"]] == ["platform", "uploader"]
    assert data["items"] and {it["project"] for it in data["items"]} == {"platform"}
    assert all_json(tmp_path, "--as-of", "2001-01-01")["items"] == []


def test_no_projects_at_all_is_a_note_not_a_failure(tmp_path: Path) -> None:
    result = run_cli("-C", str(tmp_path), "query", "--all-projects", "--", QUERY)
    assert result.stdout.startswith("No memory matches")
    assert "no project has a memory yet" in result.stderr


# ------------------------------------------------------------------------------------------------------ MCP


@pytest.mark.slow
def test_mcp_search_memory_all_projects(registered: World, tmp_path: Path) -> None:
    missing = small_repo(tmp_path / "gone", "docs: nothing here")
    shutil.rmtree(missing / ".nexusmem")
    outside = tmp_path / "not-a-repo"
    outside.mkdir()

    async def main() -> None:
        async with mcp_session(tmp_path / "server.log") as session:
            result = await session.call_tool(
                "search_memory",
                {"projectRoot": str(outside), "query": QUERY, "allProjects": True, "budget": 600},
            )
            # The note is inside the budget: it used to be appended after packing, with ~130 tokens of advice.
            # A budget too small for a note still says it, after the footer (the CLI: on stderr), and
            # tokens_used counts what the answer holds, not a note it left out.
            for budget in (50, 60, 80, 120):
                small = await session.call_tool(
                    "search_memory",
                    {"projectRoot": str(outside), "query": QUERY, "allProjects": True, "budget": budget},
                )
                text = small.content[0].text  # type: ignore[union-attr]
                data = small.structured_content
                assert data is not None
                answer, footer, after = text.partition(f"~{data['tokens_used']}/{budget} tokens")
                assert footer, (budget, text)
                answer += footer
                assert estimate_tokens(answer) <= data["tokens_used"] <= budget, (budget, text, data)
                # Counted at the footer's widest (~14 tokens), the answer's own footer takes ~10.
                assert data["tokens_used"] <= estimate_tokens(answer) + 5, (budget, text, data)
                assert "skipped gone" in text and all(f"note: {note}" in text for note in data["notes"])
                assert all(line.startswith("note: ") for line in after.splitlines()[1:]), after
        assert not result.is_error, result.content
        block = result.content[0]
        assert isinstance(block, TextContent)
        assert "scope   2 project(s): platform, uploader" in block.text
        assert "[uploader]" in block.text and "[platform]" in block.text
        note = "note: skipped gone: its memory was not searched: database missing: "
        assert note in block.text
        data = result.structured_content
        assert data is not None
        assert [p["name"] for p in data["projects"]] == ["platform", "uploader"]
        assert [s["name"] for s in data["skipped"]] == ["gone"]
        assert data["skipped"][0]["reason"].startswith("database missing")
        assert {it["project"] for it in data["items"]} == {"platform", "uploader"}
        # The CLI prints the skipped project on stderr; MCP names it in the answer, within the same budget.
        cli = all_json(outside, "--budget", "600")
        assert data["items"] and data["items"] == cli["items"][: len(data["items"])]

    anyio.run(main)


def test_recent_work_across_projects_is_listed_newest_first(tmp_path: Path) -> None:
    """Each project's newest commits are listed by time across projects, not interleaved by position,
    and the listing's note is said once."""
    now = int(time.time()) // 3600 * 3600
    repos = {}
    for name, days in (("alpha", (4, 2)), ("beta", (3, 1))):
        path = tmp_path / name
        path.mkdir()
        git(path, "init", "-q", "-b", "main")
        for d in days:
            commit(path, f"{name} work of {d} days ago", {f"f{d}.txt": "x\n"}, when=now - d * DAY)
        run_cli("-C", str(path), "sync", "--no-embed", "--quiet")
        repos[name] = path
    data = all_json(tmp_path, text="what was my last commit")
    titles = [it["title"] for it in data["items"]]
    assert titles[:4] == [
        "beta work of 1 days ago",
        "alpha work of 2 days ago",
        "beta work of 3 days ago",
        "alpha work of 4 days ago",
    ], titles
    assert data["notes"].count("first: the newest commits") == 1, data["notes"]
    scores = [it["score"] for it in data["items"][:4]]
    assert scores == sorted(scores, reverse=True)


def test_what_fixed_the_failing_test_keeps_each_failure_with_its_fixes_across_projects(
    tmp_path: Path,
) -> None:
    """`--all-projects "what fixed the failing test"` listed the passing re-run first, then the fix commit,
    then the failing run (newest first, as other listings are), their `linked_from` and `relation` null and
    no "-- linked as the fix" mark, under a note saying "the newest failure ... with what fixed it"; one
    project's own answer reads failure -> commit -> re-run, each fix linked. The fused answer keeps that."""
    now = int(time.time()) // 3600 * 3600
    repos = {}
    for name, hours in (("alpha", 5), ("beta", 3)):
        path = tmp_path / name
        path.mkdir()
        git(path, "init", "-q", "-b", "main")
        code = {f"src/{name}.mjs": "export const q = 1;\n", f"test/{name}.test.mjs": "//\n"}
        commit(path, "feat: quarterOf", code, when=now - 2 * DAY)
        failed_at = (now - hours * 3600) * 1000
        write_commands(path, [(failed_at, f"node --test test/{name}.test.mjs", 1)])
        (path / "src" / f"{name}.mjs").write_text("export const q = 2;\n", encoding="utf-8")
        write_commands(path, [(failed_at + 300_000, f"node --test test/{name}.test.mjs", 0)])
        commit(path, f"fix({name}): months are 1-based", when=now - hours * 3600 + 400)
        run_cli("-C", str(path), "sync", "--no-embed", "--quiet", "--link-failures")
        repos[name] = path
    alone = query_json(repos["beta"], "what fixed the failing test")
    fused = all_json(tmp_path, text="what fixed the failing test")
    for found, names in ((alone, ("beta",)), (fused, ("beta", "alpha"))):
        shown = [(it["title"], it.get("relation"), bool(it.get("linked_from"))) for it in found["items"]]
        expected = []
        for name in names:  # the newest failure first, each followed by its fixes, linked
            expected += [
                (f"node --test test/{name}.test.mjs (exit 1)", None, False),
                (f"fix({name}): months are 1-based", "commit", True),
                (f"node --test test/{name}.test.mjs (exit 0)", "retry", True),
            ]
        assert shown[: len(expected)] == expected, shown
    text = run_cli("-C", str(tmp_path), "query", "--all-projects", "--", "what fixed the failing test").stdout
    assert text.count("-- linked as the fix") == 4, text


@pytest.mark.slow
def test_two_projects_of_one_name_are_told_apart(tmp_path: Path) -> None:
    """Two registered `dotenv` checkouts: the text tags each item with the folders that tell them apart, and
    every structured item names its project's root, the one get_memory needs to expand it."""
    first, second = tmp_path / "a" / "dotenv", tmp_path / "b" / "x" / "dotenv"
    for where in (first, second):
        where.parent.mkdir(parents=True)
        small_repo(where, f"fix: load the zebra variable in {where.relative_to(tmp_path)}")
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    cli_text = run_cli("-C", str(outside), "query", "--all-projects", "--", "zebra").stdout
    cli = all_json(outside, text="zebra")

    def check(text: str, data: dict[str, Any]) -> None:
        assert "scope   2 project(s): dotenv (a), dotenv (b/x)" in text, text
        assert "[dotenv (a)] fix: load the zebra variable in a/dotenv" in text, text
        assert "[dotenv (b/x)] fix: load the zebra variable in b/x/dotenv" in text, text
        roots = {it["title"]: it["projectRoot"] for it in data["items"]}
        assert roots["fix: load the zebra variable in a/dotenv"] == str(first)
        assert roots["fix: load the zebra variable in b/x/dotenv"] == str(second)
        assert {it["project"] for it in data["items"]} == {"dotenv"}  # the registered name, as before

    check(cli_text, cli)
    expanded: list[str] = []

    async def main() -> None:
        async with mcp_session(tmp_path / "server.log") as session:
            result = await session.call_tool(
                "search_memory", {"projectRoot": str(outside), "query": "zebra", "allProjects": True}
            )
            assert not result.is_error and result.structured_content is not None, result.content
            check(result.content[0].text, result.structured_content)  # type: ignore[union-attr]
            assert result.structured_content["items"] == cli["items"]
            for item in result.structured_content["items"]:
                got = await session.call_tool(
                    "get_memory", {"projectRoot": item["projectRoot"], "id": item["id"]}
                )
                assert not got.is_error, got.content
                assert got.structured_content is not None
                expanded.append(got.structured_content["title"])

    anyio.run(main)
    assert sorted(expanded) == sorted(it["title"] for it in cli["items"])


# ------------------------------------------------------------------------ a desk of several real projects
# Four registered repositories, synced once per module with the shell hook's log: "webapp" (a static-file
# server, whose sendfile tests failed yesterday and were fixed 30 days ago, and with one commit made after its
# sync), "clock" (a commit and a failed `make test` yesterday), and "parser-a" and "parser-b", two clones of
# one upstream parser (the same node ids) with a CHANGELOG and a release 1.2.0 and nothing done yesterday.


@dataclass(frozen=True)
class Desk:
    webapp: Path
    clock: Path
    parser_a: Path
    parser_b: Path
    registry: Path
    shas: dict[str, str]  # commit title -> sha
    head: str  # webapp's HEAD, made after its sync
    yesterday: int  # epoch seconds of yesterday's 10:00, local time


def _history(root: Path, commits: list[tuple[str, dict[str, str], int]], shas: dict[str, str]) -> None:
    for message, files, when in commits:
        shas[message] = commit(root, message, files, when=when)


@pytest.fixture(scope="module")
def desk(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Desk]:
    base = tmp_path_factory.mktemp("desk")
    home = base / "home"
    home.mkdir()
    env = _git_env(home)
    old = int(time.time()) // 3600 * 3600 - 30 * DAY
    # "Yesterday" is reckoned here, once, and asked about by this module's tests seconds later.
    clear_of_midnight(120)
    today = datetime.now().astimezone().replace(hour=10, minute=0, second=0, microsecond=0)
    yesterday = int(today.timestamp()) - DAY
    shas: dict[str, str] = {}
    with pytest.MonkeyPatch.context() as mp:
        for key in list(os.environ):
            if key.startswith("GIT_"):
                mp.delenv(key)
        for key, value in env.items():
            mp.setenv(key, value)
        webapp, clock, upstream = base / "webapp", base / "clock", base / "upstream"
        for root in (webapp, clock, upstream):
            root.mkdir()
            git(root, "init", "-q", "-b", "main")
        _history(
            webapp,
            [
                ("feat: serve static files with sendfile", {"static.py": "SENDFILE = True\n"}, old),
                (
                    "fix: range requests served one byte short (inclusive end index)",
                    {"static.py": "SENDFILE = True\nEND = 'inclusive'\n"},
                    old + 3600,
                ),
                (
                    "docs: explain the static file route",
                    {"README.md": "# webapp\n\nStatic files.\n"},
                    old + 7200,
                ),
                ("feat: add etag headers to static responses", {"etag.py": "ETAG = 1\n"}, old + 3 * 3600),
                ("refactor: changed the router into modules", {"router.py": "R = 1\n"}, old + 4 * 3600),
                ("fix: HEAD requests return an empty body", {"head.py": "EMPTY = b''\n"}, old + 5 * 3600),
            ],
            shas,
        )
        _history(
            clock,
            [
                ("feat: durations as ranges of hours and minutes", {"dur.py": "H = 60\n"}, old),
                ("docs: a header for the locale table", {"LOCALES.md": "| locale |\n"}, old + 3600),
                ("fix: zone offsets after the DST change", {"zone.py": "DST = 1\n"}, yesterday + 3600),
            ],
            shas,
        )
        changelog = "# Changelog\n\n## 1.2.0 - 2024-03-01\n\n- Parse numbers with a sign\n"
        changelog += "- Skip a byte order mark\n\n## 1.1.0 - 2024-02-01\n\n- Pretty printer\n"
        _history(
            upstream,
            [
                ("feat: parse numbers with a sign", {"num.py": "SIGN = 1\n"}, old),
                ("fix: skip a byte order mark at the start", {"bom.py": "BOM = 1\n"}, old + 3600),
                ("docs: what the parser is doing with nested arrays", {"nest.md": "nested\n"}, old + 7200),
                ("chore: release 1.2.0", {"CHANGELOG.md": changelog}, old + 3 * 3600),
            ],
            shas,
        )
        git(upstream, "tag", "v1.2.0", shas["chore: release 1.2.0"])
        parser_a, parser_b = base / "parser-a", base / "parser-b"
        for clone in (parser_a, parser_b):
            git(base, "clone", "-q", str(upstream), str(clone))
        at = yesterday * 1000
        write_commands(
            webapp,
            [
                (at, "pytest -q tests/test_sendfile.py", 1),
                (at + 120_000, "git diff --stat", 0),
                (at + 240_000, "pytest -q tests/test_sendfile.py -k range", 1),
                (at + 360_000, "pytest -q tests/test_sendfile.py", 0),
            ],
        )
        write_commands(
            clock,
            [
                (at + 2 * 3_600_000, "pytest -q tests/test_zone.py", 1),
                (at + 2 * 3_600_000 + 60_000, "vim zone.py", 0),
            ],
        )
        for root in (webapp, clock, parser_a, parser_b):
            run_cli("-C", str(root), "sync", "--no-embed", "--quiet")
        head = commit(
            webapp, "wip: made after the last sync", {"wip.py": "W = 1\n"}, when=int(time.time()) - 60
        )
        yield Desk(webapp, clock, parser_a, parser_b, paths.registry_path(), shas, head, yesterday)


@pytest.fixture
def at_desk(desk: Desk) -> Desk:
    """This test's home gets the registry the desk's syncs wrote: its four projects registered."""
    _registry_from(desk.registry)
    return desk


def titles_of(data: dict[str, Any]) -> list[tuple[str, str]]:
    return [(it["project"], it["title"]) for it in data["items"]]


def test_a_project_with_no_strong_match_ranks_below_one_that_answers(at_desk: Desk, tmp_path: Path) -> None:
    """Rank 1 was worth the same in every project's list: parser and clock, which alone say "No strong
    match", took places 2 and 3 (and 5, 6, 8) of a question only webapp answers. Each now shows its first
    item at most, after every webapp item; the two parser clones show it once."""
    question = "sendfile etag byte ranges"
    alone = {
        root.name: query_json(root, question) for root in (at_desk.webapp, at_desk.parser_a, at_desk.clock)
    }
    assert not alone["webapp"]["weak"] and alone["parser-a"]["weak"] and alone["clock"]["weak"]
    assert len(alone["parser-a"]["items"]) > 1
    data = all_json(tmp_path, text=question)
    assert not data["weak"]
    got = titles_of(data)
    assert got[0] == ("webapp", "fix: range requests served one byte short (inclusive end index)"), got
    projects = [project for project, _ in got]
    last_webapp = max(i for i, project in enumerate(projects) if project == "webapp")
    assert projects[: last_webapp + 1] == ["webapp"] * (last_webapp + 1), got
    # Below them, the first item of each of the others, once for the two clones of one parser.
    assert sorted(got[last_webapp + 1 :]) == [
        ("clock", alone["clock"]["items"][0]["title"]),
        ("parser-a", alone["parser-a"]["items"][0]["title"]),
    ], got
    scores = [it["score"] for it in data["items"]]
    assert scores == sorted(scores, reverse=True)
    # Asked for a time's work, a project that did none that day shows nothing (it matched "doing").
    recent = titles_of(all_json(tmp_path, text="what was I doing yesterday"))
    assert recent and {p for p, _ in recent} == {"webapp", "clock"}, recent


def test_what_a_projects_rules_put_first_stays_first_with_its_note(at_desk: Desk, tmp_path: Path) -> None:
    """Each project's own answer rules (a sha named, a release asked about, the commands run after one) put
    their answer first with a note saying so; across projects the notes were dropped and the answer was
    fused by position: the commit a sha names fell below other projects' items, a release's entries below
    commits that say "changed", another project's items sat between the commands run next."""
    fix = at_desk.shas["fix: range requests served one byte short (inclusive end index)"]
    data = all_json(tmp_path, text=f"what did {short_sha(fix)} do?")
    assert [(it["project"], it["kind"], it["title"][:9]) for it in data["items"][:2]] == [
        ("webapp", "git_commit", "fix: rang"),
        ("webapp", "code_diff", "static.py"),
    ], titles_of(data)
    assert data["items"][0]["ref"] == fix
    assert f"first: commit {fix[:10]}, whose sha the question names" in data["notes"], data["notes"]

    data = all_json(tmp_path, text="what changed in 1.2.0")
    assert titles_of(data)[:2] == [
        ("parser-a", "CHANGELOG.md — 1.2.0 - 2024-03-01: Parse numbers with a sign"),
        ("parser-a", "CHANGELOG.md — 1.2.0 - 2024-03-01: Skip a byte order mark"),
    ], titles_of(data)
    # Both clones say it: named by both.
    said = "parser-a, parser-b: first: what release 1.2.0 holds (its changelog, its commit)"
    assert said in data["notes"], data["notes"]

    # Asked in clock, where a zone test failed: webapp's sendfile tests are the ones the question names, and
    # the three commands run after them come first, in their order.
    data = all_json(at_desk.clock, text="what did I run right after the sendfile tests failed?")
    assert titles_of(data)[:3] == [
        ("webapp", "git diff --stat (exit 0)"),
        ("webapp", "pytest -q tests/test_sendfile.py -k range (exit 1)"),
        ("webapp", "pytest -q tests/test_sendfile.py (exit 0)"),
    ], titles_of(data)
    assert data["notes"][0].startswith(
        "webapp: first: what was run after `pytest -q tests/test_sendfile.py` (exit 1, "
    ), data["notes"]
    # clock's own rule took its failed zone test for the one named: its note is said too, after webapp's.
    assert data["notes"][1].startswith("clock: first: what was run after `pytest -q tests/test_zone.py`")
    assert ("clock", "vim zone.py (exit 0)") in titles_of(data)[3:]

    # The current project's HEAD moved since its sync (a commit made without the hook): said, as alone.
    data = all_json(at_desk.webapp, text="sendfile etag byte ranges")
    alone = query_json(at_desk.webapp, "sendfile etag byte ranges")
    [moved] = [note for note in alone["notes"] if note.startswith(f"HEAD is {at_desk.head[:10]}")]
    assert moved in data["notes"], data["notes"]
    assert not any(
        "HEAD is" in note for note in all_json(tmp_path, text="sendfile etag byte ranges")["notes"]
    )


def test_a_count_of_newest_commits_holds_across_projects(at_desk: Desk, tmp_path: Path) -> None:
    """ "Show my last 3 commits" across projects answered with 9: each project listed its own 3 and the
    merged listing kept them all. The count is the merged listing's: the newest 3 of all projects."""
    data = all_json(tmp_path, text="show my last 3 commits")
    assert titles_of(data) == [
        ("clock", "fix: zone offsets after the DST change"),
        ("webapp", "fix: HEAD requests return an empty body"),
        ("webapp", "refactor: changed the router into modules"),
    ], titles_of(data)
    assert titles_of(all_json(tmp_path, text="what were my latest 2 commits"))[1:] == [
        ("webapp", "fix: HEAD requests return an empty body")
    ]


def test_the_listing_note_says_what_the_merged_list_holds(at_desk: Desk, tmp_path: Path) -> None:
    """ "What was I doing yesterday": webapp ran commands yesterday, clock committed and ran commands. The
    note was webapp's own, "the newest commands run yesterday", over a list holding clock's commit."""
    alone = query_json(at_desk.webapp, "what was I doing yesterday")
    assert "first: the newest commands run yesterday" in alone["notes"], alone["notes"]
    data = all_json(at_desk.webapp, text="what was I doing yesterday")  # webapp (current) first
    assert data["projects"][0]["name"] == "webapp"
    assert {it["kind"] for it in data["items"]} == {"git_commit", "shell_command"}, titles_of(data)
    listing = [note for note in data["notes"] if "yesterday" in note]
    # Named by the projects that listed: webapp also says its HEAD moved (contracts §5).
    assert listing == ["webapp, clock: first: the newest commits and commands run yesterday"], data["notes"]
    # A list of commits alone says so.
    data = all_json(at_desk.webapp, text="show my last 3 commits")
    said = [note for note in data["notes"] if "HEAD" not in note and "semantic search skipped" not in note]
    assert said == ["first: the newest commits"]  # synced --no-embed: no vectors, which a note says too


def test_mcp_all_projects_sees_the_commands_run_since_each_projects_last_sync(tmp_path: Path) -> None:
    """search_memory with allProjects skipped the catch-up a one-project search makes: a test that failed a
    minute ago in another project, logged by the hook but not synced yet, was missing from "what failed in
    the last hour"."""
    here = small_repo(tmp_path / "here", "feat: the dashboard")
    there = small_repo(tmp_path / "there", "feat: the zetaword parser")
    now = int(time.time() * 1000)
    write_commands(there, [(now - 60_000, "pytest tests/test_zetaword.py", 1)])
    write_commands(here, [(now - 30_000, "make lint", 2)])

    async def main() -> None:
        async with mcp_session(tmp_path / "server.log") as session:
            args = {"projectRoot": str(here), "query": "what failed in the last hour", "allProjects": True}
            result = await session.call_tool("search_memory", args)
            assert not result.is_error, result.content
            data = result.structured_content
            assert data is not None
            titles = [(it["project"], it["title"]) for it in data["items"]]
            assert ("there", "pytest tests/test_zetaword.py (exit 1)") in titles, titles
            assert ("here", "make lint (exit 2)") in titles, titles
            assert not any("not searched yet" in note for note in data["notes"]), data["notes"]

    anyio.run(main)


def test_the_catch_up_across_projects_is_bounded_in_time(tmp_path: Path) -> None:
    """Each project's catch-up is a short sync (~30 ms when a command was logged since the last search): with
    no time left, the current project is still brought up to date, and the others are named in a note (and
    come first next time)."""
    from nexusmem import mcp_server

    roots = [small_repo(tmp_path / name, f"feat: the {name} module") for name in ("one", "two", "three")]
    now = int(time.time() * 1000)
    for root in roots:
        write_commands(root, [(now - 60_000, f"make {root.name}-check", 1)])
    note = mcp_server._catch_up_all(roots[1], seconds=0)
    assert note == (
        "the commands run since the last sync of one, three were not stored within 0 s: they are not"
        " searched yet (call sync_project for each)"
    )
    found = query_json(roots[1], "make two-check")
    assert found["items"][0]["title"] == "make two-check (exit 1)"
    assert not [it for it in query_json(roots[0], "make one-check")["items"] if it["kind"] == "shell_command"]
    assert mcp_server._catch_up_all(roots[1]) is None  # with time: all of them
    assert query_json(roots[0], "make one-check")["items"][0]["title"] == "make one-check (exit 1)"
    # Only the projects a command was logged in since are synced: one run in a linked worktree of `one` is
    # `one`'s.
    tree = tmp_path / "one-tree"
    git(roots[0], "worktree", "add", "-q", "-b", "side", str(tree))
    write_commands(tree, [(now - 30_000, "make tree-check", 1)])
    assert mcp_server._catch_up_all(roots[1]) is None
    assert query_json(roots[0], "make tree-check")["items"][0]["title"] == "make tree-check (exit 1)"


def test_query_all_projects_says_how_many_newer_commands_it_did_not_search(tmp_path: Path) -> None:
    """`query --all-projects` searched each memory as its last sync left it and said nothing of the commands
    the hooks logged since (MCP allProjects stores them first; a one-project `query` says how many it did not
    search): "what failed" missed the test that failed a minute ago in another project, without a word. Like
    the one-project query it does not sync them (a cold query's budget), and says how many, where."""
    here = small_repo(tmp_path / "here", "feat: the dashboard")
    there = small_repo(tmp_path / "there", "feat: the zetaword parser")
    small_repo(tmp_path / "quiet", "feat: the quiet module")
    now = int(time.time() * 1000)
    write_commands(there, [(now - 60_000, "pytest tests/test_zetaword.py", 1)])
    write_commands(there, [(now - 50_000, "pytest tests/test_zetaword.py -x", 1)])
    write_commands(here, [(now - 30_000, "make lint", 2)])
    note = (
        "3 newer command(s) run in here (1), there (2) are not synced yet, so not searched: run `nexusmem sync`"
        " in each"
    )
    data = all_json(here, text="what failed in the last hour")
    assert note in data["notes"], data["notes"]
    assert not [it for it in data["items"] if it["kind"] == "shell_command"], data["items"]  # not searched
    text = run_cli("-C", str(here), "query", "--all-projects", "what failed in the last hour").stdout
    assert f"note: {note}" in text, text
    # Synced: nothing to say (the line the hook logs after a query is NexusMem's own, not counted).
    for root in (here, there):
        run_cli("-C", str(root), "sync", "--no-embed", "--quiet")
    write_commands(here, [(now - 10_000, "nexusmem query --all-projects what failed", 0)])
    assert not [n for n in all_json(here, text="what failed")["notes"] if "not synced yet" in n]


def test_each_projects_note_on_what_failed_is_labelled_with_the_project(
    at_desk: Desk, tmp_path: Path
) -> None:
    """`query --all-projects "which of my projects had failing tests today"` gave "first: the failed runs of
    tests today, newest first" and "nothing recorded today matches the question", one from each project,
    unnamed: they read as one answer contradicting itself. docs/contracts.md §5: each note is led by the
    names of the projects that say it when more than one project has notes."""
    question = "which of my projects had failing tests yesterday"
    data = all_json(at_desk.webapp, text=question)
    assert data["notes"][0] == "webapp, clock: first: the failed runs of tests yesterday, newest first"
    head = [note for note in data["notes"] if "HEAD is" in note]
    assert len(head) == 1 and head[0].startswith("webapp: HEAD is "), data["notes"]
    cli = run_script("-C", str(at_desk.webapp), "query", "--all-projects", "--", question, cwd=tmp_path)
    assert f"note: {data['notes'][0]}" in cli.stdout, cli.stdout
