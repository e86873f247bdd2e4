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


def _failing_run(member: Member, command: str, project_files: tuple[str, ...]) -> None:
    """A failing COMMAND naming PROJECT_FILES a minute ago, in MEMBER's local memory."""
    from nexusmem.identity import project_id
    from nexusmem.store import open_store

    from helpers.nodes import shell_node, store_nodes

    now = int(time.time() * 1000)
    with member.active(), open_store(member.repo / ".nexusmem" / "memory.db") as store:
        node = shell_node(command, now - 60_000, 1, files=project_files, project=project_id(member.repo))
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
