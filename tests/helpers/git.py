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


def partial_clone(tmp_path: Path, commits: int, *, fetched: bool = False) -> Path:
    """A `git clone --filter=blob:none` (a partial clone: its promisor remote hands it missing objects on
    demand) of a history of COMMITS commits, each changing cache.py, whose remote is then an ssh URL: only
    the blobs it checked out are here (all of them when FETCHED: `git log -p` fetched the rest first), and
    only a fetch through ssh, which runs the repository's `core.sshCommand`, could bring another."""
    upstream = init_repo(tmp_path / "upstream")
    git(upstream, "config", "uploadpack.allowFilter", "true")
    for i in range(commits):
        commit(upstream, f"feat: kestrel cache step {i}", {"cache.py": f"KESTREL_STEP = {i}\n"})
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", "--filter=blob:none", f"file://{upstream}", str(clone))
    assert git(clone, "config", "remote.origin.promisor").strip() == "true"
    if fetched:
        git(clone, "log", "-p")
    git(clone, "remote", "set-url", "origin", "ssh://nexusmem-test.invalid/repo")
    git(clone, "config", "core.sshCommand", "false")  # a test that needs another sets its own
    return clone


def short_sha(sha: str, length: int = 7) -> str:
    """SHA's first LENGTH characters as a person pastes them into a question, lengthened to 12 when they are
    all digits: a question reads an all-digit word shorter than that as an id or an order number, not a sha
    (one sha in 27 starts with seven digits; a test that asked with sha[:7] failed that often)."""
    return sha[:length] if not sha[:length].isdigit() else sha[:12]
