"""A `team.url` holding a password in `.nexusmem/config.json` switches the team store off: doctor reports it
as a problem with its fix, and each command says the (long) warning once."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from helpers.cli import console_script
from helpers.git import commit

pytestmark = pytest.mark.slow

WARNING = "'team.url' holds a password"


def _nexusmem(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [console_script(), "-C", str(repo), *args],
        env=dict(os.environ),
        capture_output=True,
        text=True,
        check=False,
    )


@pytest.fixture
def secret_config(repo: Path) -> Path:
    """REPO synced, its config's team.url edited by hand to hold a password."""
    commit(repo, "Add the uploader", {"uploader.py": "def upload(path):\n    return send(path)\n"})
    assert _nexusmem(repo, "sync", "--quiet", "--no-embed").returncode == 0
    config = repo / ".nexusmem" / "config.json"
    data = json.loads(config.read_text(encoding="utf-8"))
    data["team"] = {"url": "postgresql://ci:s3cret-pw@db.internal:5432/nexusmem"}
    config.write_text(json.dumps(data), encoding="utf-8")
    return repo


def test_doctor_reports_a_password_in_team_url_as_a_problem_with_its_fix(secret_config: Path) -> None:
    """doctor said "No problems found." (exit 0) while the team store was off for it."""
    said = _nexusmem(secret_config, "doctor")
    assert said.returncode == 1, said.stdout + said.stderr
    assert WARNING in said.stdout and "No problems found" not in said.stdout, said.stdout
    assert "nexusmem team init --url postgresql://ci@db.internal:5432/nexusmem" in said.stdout, said.stdout
    assert "s3cret-pw" not in said.stdout + said.stderr
    assert (said.stdout + said.stderr).count(WARNING) == 1, said.stdout + said.stderr
    report = json.loads(_nexusmem(secret_config, "doctor", "--json").stdout)
    problems = [c for c in report["checks"] if not c["ok"] and WARNING in c["detail"]]
    assert len(problems) == 1 and problems[0]["fix"], report


@pytest.mark.parametrize("args", [("query", "--team", "upload"), ("team", "push")])
def test_the_password_warning_is_said_once_a_command(secret_config: Path, args: tuple[str, ...]) -> None:
    """`query --team` printed the ~400-character warning on stderr and again as its note; `team push` on
    stderr and again as `Error: …`."""
    said = _nexusmem(secret_config, *args)
    both = said.stdout + said.stderr
    assert both.count(WARNING) == 1, both
    assert "s3cret-pw" not in both
    # The short form stands alone: an MCP client reads the notes, never the server's stderr.
    assert "take it out (PGPASSWORD or ~/.pgpass hold it)" in both, both
