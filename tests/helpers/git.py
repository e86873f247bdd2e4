"""Real git repositories in temp dirs: run git, make a repository, write files and commit them."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path


def git(repo: Path, *args: str, env: dict[str, str] | None = None) -> str:
    """Run git in REPO and return stdout (text); fail the test on a non-zero exit."""
    full_env = dict(os.environ)
    if env:
        full_env.update(env)
    proc = subprocess.run(["git", *args], cwd=repo, capture_output=True, env=full_env, check=False)
    if proc.returncode != 0:
        raise AssertionError(f"git {' '.join(args)} failed: {proc.stderr.decode(errors='replace')}")
    return proc.stdout.decode("utf-8", "replace")


def init_repo(path: Path) -> Path:
    """An empty git repository (no commits yet) at PATH, on branch main; returns PATH."""
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "-q", "-b", "main")
    return path


def commit(
    repo: Path, message: str, files: dict[str, str | bytes] | None = None, when: int | None = None
) -> str:
    """Write FILES, stage everything and commit with MESSAGE (at epoch WHEN, if given); return the sha."""
    for name, content in (files or {}).items():
        path = repo / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")
    git(repo, "add", "-A")
    env = {}
    if when is not None:
        env = {"GIT_AUTHOR_DATE": f"{when} +0000", "GIT_COMMITTER_DATE": f"{when} +0000"}
    git(repo, "commit", "-q", "--allow-empty", "-m", message, env=env)
    return git(repo, "rev-parse", "HEAD").strip()
