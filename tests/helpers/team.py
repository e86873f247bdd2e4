"""Simulated team members for the team store's tests: each has a HOME of their own, a git identity and a
clone of one shared origin, and runs the real CLI in-process with that environment."""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from click.testing import Result

from helpers.cli import run_cli
from helpers.env import GITCONFIG
from helpers.git import commit, git, init_repo


@dataclass
class Member:
    name: str
    home: Path
    repo: Path

    @property
    def email(self) -> str:
        return f"{self.name}@example.com"

    def env(self) -> dict[str, str]:
        return {
            "HOME": str(self.home),
            "NEXUSMEM_HOME": str(self.home / ".nexusmem"),
            "GIT_CONFIG_GLOBAL": str(self.home / ".gitconfig"),
        }

    @contextmanager
    def active(self) -> Iterator[None]:
        saved = {k: os.environ.get(k) for k in self.env()}
        os.environ.update(self.env())
        try:
            yield
        finally:
            for key, value in saved.items():
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value

    def run(self, *args: str, ok: bool = True) -> Result:
        with self.active():
            return run_cli("-C", str(self.repo), *args, ok=ok)

    def json(self, *args: str) -> Any:
        return json.loads(self.run(*args, "--json").stdout)

    def commit(self, message: str, files: dict[str, str]) -> str:
        for name, content in files.items():
            path = self.repo / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(content, encoding="utf-8")
        with self.active():
            git(self.repo, "add", "-A")
            git(self.repo, "commit", "-q", "-m", message)
            return git(self.repo, "rev-parse", "HEAD").strip()


def make_member(base: Path, name: str, origin: Path) -> Member:
    """A member NAME with their own HOME under BASE and a clone of ORIGIN (a bare repository)."""
    home = base / f"home-{name}"
    home.mkdir(parents=True)
    (home / ".gitconfig").write_text(
        GITCONFIG.replace("Test User", name.title()).replace("test@example.com", f"{name}@example.com"),
        encoding="utf-8",
    )
    member = Member(name, home, base / f"{name}-clone")
    with member.active():
        git(base, "clone", "-q", str(origin), member.repo.name)
    return member


def as_role(url: str, role: str) -> str:
    """URL (a test server's, as the superuser `postgres`) logging in as ROLE instead."""
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(url)
    return urlunsplit(parts._replace(netloc=parts.netloc.replace("postgres@", f"{role}@")))


def joined_members(base: Path, origin: Path, team_url: str, *names: str) -> list[Member]:
    """Members NAMES (make_member), each with a synced clone of ORIGIN and the team store at TEAM_URL set up."""
    members = [make_member(base, name, origin) for name in names]
    for member in members:
        member.run("sync", "--quiet")
        member.run("team", "init", "--url", team_url)
    return members


def commit_with_the_server_away(member: Member, base: Path) -> dict[str, str]:
    """A real commit in MEMBER's clone while the team server is unreachable (a socket folder nothing
    listens in), its post-commit hook installed: waits until the detached push has logged that it was not
    done, and returns the environment that kept the server away."""
    member.run("hook", "git-post", "install")
    nowhere = base / "no-server-here"
    nowhere.mkdir()
    away = {**os.environ, **member.env(), "NEXUSMEM_TEAM_URL": f"postgresql://postgres@/gone?host={nowhere}"}
    (member.repo / "uploader.py").write_text("TIMEOUT = 90\n", encoding="utf-8")
    git(member.repo, "add", "uploader.py")
    subprocess.run(
        ["git", "commit", "-q", "-m", "Raise the upload timeout"], cwd=member.repo, env=away, check=True
    )
    log = member.repo / ".nexusmem" / "auto-sync.log"
    deadline = time.monotonic() + 60
    while "team push not done" not in (log.read_text(encoding="utf-8") if log.exists() else ""):
        assert time.monotonic() < deadline, log.read_text(encoding="utf-8") if log.exists() else "no log"
        time.sleep(0.2)
    return away


def shared_origin(base: Path) -> Path:
    """A bare origin under BASE with a little shared history (the team tests' `origin` fixture)."""
    work = init_repo(base / "seed")
    commit(work, "Add the uploader", {"uploader.py": "def upload(path):\n    return send(path)\n"})
    commit(work, "Document the release steps", {"README.md": "# Demo\n\n## Release\n\nTag and push.\n"})
    bare = base / "origin.git"
    git(base, "clone", "-q", "--bare", str(work), str(bare))
    return bare
