"""What two teammates and a CI job met against a real PostgreSQL + pgvector: the README's CI recipe on a
shallow checkout, a team store holding nothing for a project, items held locally shown as the team's, shell
commands left shared, a shared owner role, a push waiting on a lock in silence, a password in the config."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from helpers.cli import console_script
from helpers.git import commit, git, init_repo
from helpers.team import joined_members

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


def _ci(cwd: Path, *args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [console_script(), *args],
        cwd=cwd,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        check=False,
    )


def _changed(cwd: Path, *diff: str) -> list[str]:
    """`$(git diff --name-only DIFF)` as a CI shell expands it: git's error goes to the log, no word to argv."""
    out = subprocess.run(["git", "diff", "--name-only", *diff], cwd=cwd, capture_output=True, text=True)
    return out.stdout.split()


def test_the_readme_ci_recipe_checks_the_changed_files_and_an_empty_list_is_refused(
    tmp_path: Path, origin: Path, team_url: str
) -> None:
    """On a shallow checkout (actions/checkout's depth 1) `git diff --name-only FETCH_HEAD...HEAD` found no
    merge base and gave no file; `precheck --strict --team --files` with none printed nothing and exited 0
    (`--json`: checked true): a CI step that checked nothing passed. The README's recipe now fetches the
    history it needs, and a `--files` with no file is said and refused under --strict."""
    joined_members(tmp_path, origin, team_url, "alice")
    seed = tmp_path / "seed"
    git(seed, "checkout", "-q", "-b", "feature")
    commit(seed, "Retry uploads", {"uploader.py": "RETRIES = 3\n"})
    git(seed, "push", "-q", str(origin), "feature")
    base = git(origin, "symbolic-ref", "--short", "HEAD").strip()
    git(seed, "checkout", "-q", base)
    commit(seed, "Tag the release", {"CHANGES.md": "# 1.0\n"})  # the base moved on since the branch began
    git(seed, "push", "-q", str(origin), base)
    env = {"NEXUSMEM_TEAM_URL": team_url}

    shallow = tmp_path / "shallow"
    git(tmp_path, "clone", "-q", "--depth=1", "--branch", "feature", f"file://{origin}", shallow.name)
    git(shallow, "fetch", "-q", "--no-tags", "--depth=1", "origin", base)
    assert _changed(shallow, "FETCH_HEAD...HEAD") == []  # no merge base: what the walkthrough met
    for strict in ((), ("--strict",)):
        said = _ci(shallow, "precheck", *strict, "--team", "--files", env=env)
        assert "no files given: nothing checked" in said.stderr, said.stderr
        assert said.returncode == (2 if strict else 0), said.stderr
    as_json = _ci(shallow, "precheck", "--team", "--json", "--files", env=env)
    found = json.loads(as_json.stdout)
    assert found["checked"] is False and found["reason"] == "no files given: nothing checked", found

    # The README's recipe: the whole history (actions/checkout `fetch-depth: 0`), then the three-dot diff.
    full = tmp_path / "full"
    git(tmp_path, "clone", "-q", "--branch", "feature", f"file://{origin}", full.name)
    files = _changed(full, f"origin/{base}...HEAD")
    assert files == ["uploader.py"], files
    checked = _ci(full, "precheck", "--strict", "--team", "--json", "--files", *files, env=env)
    assert json.loads(checked.stdout)["checked"] is True and checked.returncode in (0, 1), checked.stderr
