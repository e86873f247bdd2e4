"""`query --all-projects` searches only stores the user alone can write: one another user owns, or anyone
may write, could hold anything and is skipped with a note."""

from __future__ import annotations

import json
import os
import pwd
from pathlib import Path

import pytest

from helpers import commit, git, run_script

# Real processes (sync, the MCP server, a pty) several times each: seconds per test here.
pytestmark = pytest.mark.slow


def project(tmp_path: Path, name: str, subject: str) -> Path:
    repo = tmp_path / name
    repo.mkdir()
    git(repo, "init", "-q")
    commit(repo, subject, {"a.txt": name + "\n"})
    assert run_script("sync", "--no-embed", cwd=repo).returncode == 0
    return repo


def all_projects(cwd: Path) -> tuple[dict[str, object], str]:
    proc = run_script("query", "--all-projects", "--json", "poison marker", cwd=cwd)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    data: dict[str, object] = json.loads(proc.stdout)
    return data, proc.stderr


def test_world_writable_or_foreign_stores_are_skipped_with_a_note(tmp_path: Path) -> None:
    mine = project(tmp_path, "mine", "fix: the poison marker is handled here")
    shared = project(tmp_path, "shared", "feat: poison marker from a shared checkout")
    outside = tmp_path / "outside"
    outside.mkdir()
    data, _ = all_projects(outside)
    assert [p["name"] for p in data["projects"]] == ["mine", "shared"]  # type: ignore[index]

    db = shared / ".nexusmem" / "memory.db"
    db.chmod(0o666)
    data, stderr = all_projects(outside)
    assert [p["name"] for p in data["projects"]] == ["mine"]  # type: ignore[index]
    assert [s["reason"] for s in data["skipped"]] == [  # type: ignore[attr-defined]
        f"not searched: {db} is writable by every user (chmod o-w to trust it)"
    ]
    assert f"note: skipped shared ({shared}): not searched: {db} is writable by every user" in stderr
    assert all("shared checkout" not in it["title"] for it in data["items"])  # type: ignore[attr-defined]
    db.chmod(0o600)
    (shared / ".nexusmem").chmod(0o777)
    data, _ = all_projects(outside)
    assert [s["name"] for s in data["skipped"]] == ["shared"]  # type: ignore[attr-defined]
    (shared / ".nexusmem").chmod(0o700)

    if os.geteuid() != 0:
        pytest.skip("only root can give a file to another user: the ownership check is not exercised")
    nobody = pwd.getpwnam("nobody")
    os.chown(db, nobody.pw_uid, nobody.pw_gid)
    data, _ = all_projects(outside)
    assert [s["reason"] for s in data["skipped"]] == [  # type: ignore[attr-defined]
        f"not searched: {db} belongs to another user (uid {nobody.pw_uid})"
    ]
    assert mine.exists()
