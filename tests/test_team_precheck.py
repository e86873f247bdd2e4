"""`precheck --team` on a real PostgreSQL + pgvector: in CI (a fresh checkout, the team store's findings
alone, named by who ran them) and on a member's machine (the team's findings added to their own)."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pytest

from helpers.cli import console_script
from helpers.git import git
from helpers.team import Member, joined_members, shared_origin

pytestmark = [pytest.mark.team, pytest.mark.slow]


def _failing_run(member: Member, command: str, project_files: tuple[str, ...], **meta: str) -> None:
    """A failing COMMAND naming PROJECT_FILES a minute ago, in MEMBER's local memory (META: its author)."""
    from nexusmem.identity import project_id
    from nexusmem.store import open_store

    from helpers.nodes import shell_node, store_nodes

    now = int(time.time() * 1000)
    with member.active(), open_store(member.repo / ".nexusmem" / "memory.db") as store:
        node = shell_node(
            command, now - 60_000, 1, files=project_files, project=project_id(member.repo), **meta
        )
        store_nodes(store, [node])


def _share_shell(member: Member) -> None:
    config = member.repo / ".nexusmem" / "config.json"
    data = json.loads(config.read_text(encoding="utf-8"))
    data["team"]["shareShell"] = True
    config.write_text(json.dumps(data), encoding="utf-8")


def _precheck(cwd: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [console_script(), "precheck", *args], cwd=cwd, env=env, capture_output=True, text=True, check=False
    )


def test_ci_strict_team_says_exit_1_not_a_refused_commit_and_who_ran_the_failure(
    tmp_path: Path, team_url: str
) -> None:
    """In CI `precheck --strict --team` said "(commit refused (--strict))" where no commit is made, and its
    failures did not say which member ran the failing command."""
    origin = shared_origin(tmp_path)
    (alice,) = joined_members(tmp_path, origin, team_url, "alice")
    _share_shell(alice)
    alice.run("sync", "--quiet", "--no-embed")
    _failing_run(alice, "pytest tests/test_uploader.py", ("uploader.py",))
    alice.run("team", "push")
    ci = tmp_path / "ci-checkout"
    git(tmp_path, "clone", "-q", str(origin), ci.name)
    env = {**os.environ, "NEXUSMEM_TEAM_URL": team_url}
    env.pop("GIT_INDEX_FILE", None)
    said = _precheck(ci, env, "--strict", "--team", "--files", "uploader.py")
    assert said.returncode == 1, said.stderr
    assert "`pytest tests/test_uploader.py` [by alice@example.com] failed (exit 1)" in said.stderr, (
        said.stderr
    )
    assert "1 warning(s) for 1 file(s) (--strict: exit 1)" in said.stderr, said.stderr
    assert "commit refused" not in said.stderr


def test_team_on_a_members_machine_adds_the_teams_findings_to_their_own(
    tmp_path: Path, team_url: str
) -> None:
    """`precheck --team` on a member's machine read the team store alone: a failure in their own memory
    (shareShell off) was dropped, and with the server away only "team store not checked" was printed, no
    local warning. Now the team's findings are added to the local ones, each once, and a team store that
    cannot be reached leaves the local ones and a note, as `query --team` does."""
    origin = shared_origin(tmp_path)
    alice, bob = joined_members(tmp_path, origin, team_url, "alice", "bob")
    _share_shell(bob)
    for i in range(4):
        alice.commit(f"Tune the uploader, step {i}", {"uploader.py": f"STEP = {i}\n"})
    alice.run("sync", "--quiet", "--no-embed")
    _failing_run(alice, "PYTHONPATH=src python tests/test_tz.py", ("uploader.py",))
    alice.run("team", "push")
    bob.run("sync", "--quiet", "--no-embed")
    _failing_run(bob, "pytest tests/test_uploader.py -k retry", ("uploader.py",))
    bob.run("team", "push")

    own = alice.run("precheck", "--files", "uploader.py").stderr
    assert "`PYTHONPATH=src python tests/test_tz.py` failed (exit 1)" in own, own
    assert "2 warning(s) for 1 file(s)" in own and "test_uploader" not in own, own
    both = alice.run("precheck", "--team", "--files", "uploader.py").stderr
    assert "`PYTHONPATH=src python tests/test_tz.py` failed (exit 1)" in both, both
    assert "`pytest tests/test_uploader.py -k retry` [by bob@example.com] failed (exit 1)" in both, both
    assert both.count("high churn") == 1 and "3 warning(s) for 1 file(s)" in both, both
    found = alice.json("precheck", "--team", "--files", "uploader.py")
    assert [f["kind"] for f in found["findings"]] == ["failure", "failure", "churn"], found

    # The server away: the local warnings stand, and a note says the team's were not read.
    nowhere = tmp_path / "no-server-here"
    nowhere.mkdir()
    env = {**os.environ, **alice.env(), "NEXUSMEM_TEAM_URL": f"postgresql://postgres@/gone?host={nowhere}"}
    env.pop("GIT_INDEX_FILE", None)
    away = _precheck(alice.repo, env, "--strict", "--team", "--files", "uploader.py")
    assert away.returncode == 1, away.stderr
    assert "`PYTHONPATH=src python tests/test_tz.py` failed (exit 1)" in away.stderr, away.stderr
    assert "nexusmem precheck: team store not checked: team store unreachable" in away.stderr, away.stderr
    assert "2 warning(s) for 1 file(s) (--strict: exit 1)" in away.stderr, away.stderr


def test_team_author_keeps_the_askers_own_the_agents_or_one_agents_failures(
    tmp_path: Path, team_url: str
) -> None:
    """`precheck --team --author` was refused ("cannot be combined with --team yet"): the team's failures
    could not be narrowed to whose they were. Now `me` is the member asking (a teammate's own commands are
    theirs), `agents` any agent's and a name one agent's, on a member's machine and in CI alike."""
    origin = shared_origin(tmp_path)
    alice, bob = joined_members(tmp_path, origin, team_url, "alice", "bob")
    _share_shell(alice)
    _share_shell(bob)
    alice.run("sync", "--quiet", "--no-embed")
    _failing_run(alice, "pytest tests/test_uploader.py", ("uploader.py",))
    _failing_run(
        alice, "python uploader.py --dry-run", ("uploader.py",), author="claude-code", author_kind="agent"
    )
    alice.run("team", "push")
    bob.run("sync", "--quiet", "--no-embed")
    _failing_run(bob, "pytest tests/test_uploader.py -k resume", ("uploader.py",))
    bob.run("team", "push")

    every = alice.run("precheck", "--team", "--files", "uploader.py").stderr
    assert "3 warning(s) for 1 file(s)" in every, every
    mine = alice.run("precheck", "--team", "--author", "me", "--files", "uploader.py").stderr
    assert "`pytest tests/test_uploader.py` failed (exit 1)" in mine, mine
    assert "-k resume" not in mine and "--dry-run" not in mine, mine
    assert "1 warning(s) for 1 file(s)" in mine, mine
    his = bob.run("precheck", "--team", "--author", "me", "--files", "uploader.py").stderr
    assert "`pytest tests/test_uploader.py -k resume` failed (exit 1)" in his, his
    assert "1 warning(s) for 1 file(s)" in his, his

    ci = tmp_path / "ci-checkout"
    git(tmp_path, "clone", "-q", str(origin), ci.name)
    env = {**os.environ, "NEXUSMEM_TEAM_URL": team_url}
    env.pop("GIT_INDEX_FILE", None)
    for author in ("agents", "claude-code", "claude"):
        said = _precheck(ci, env, "--strict", "--team", "--author", author, "--files", "uploader.py")
        assert said.returncode == 1, said.stderr
        assert "`python uploader.py --dry-run` [by alice@example.com] failed (exit 1)" in said.stderr, (
            said.stderr
        )
        assert "1 warning(s) for 1 file(s) (--strict: exit 1)" in said.stderr, said.stderr
    none = _precheck(ci, env, "--strict", "--team", "--author", "codex", "--files", "uploader.py")
    assert none.returncode == 0 and "failed (exit" not in none.stderr, none.stderr
