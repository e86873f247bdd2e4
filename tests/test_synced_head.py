"""HEAD read from .git's files (no process) agrees with `git rev-parse HEAD` in every layout a hook meets."""

from __future__ import annotations

from pathlib import Path

from nexusmem import synced_head

from helpers import commit, git


def rev_parse(root: Path) -> str:
    return git(root, "rev-parse", "HEAD").strip()


def test_head_is_read_from_files_like_git_reads_it(repo: Path, tmp_path: Path) -> None:
    assert synced_head.read_head(repo) == ""  # unborn: no commit yet
    first = commit(repo, "one", {"a.py": "1\n"})
    assert synced_head.read_head(repo) == first == rev_parse(repo)  # a loose branch ref
    git(repo, "pack-refs", "--all")
    assert synced_head.read_head(repo) == first  # packed-refs only
    second = commit(repo, "two", {"a.py": "2\n"})
    assert synced_head.read_head(repo) == second  # a loose ref newer than the packed one
    git(repo, "checkout", "-q", "--detach", "HEAD~1")
    assert synced_head.read_head(repo) == first  # detached
    git(repo, "checkout", "-q", "main")
    git(repo, "worktree", "add", "-q", "-b", "side", str(tmp_path / "wt"), "HEAD~1")
    assert synced_head.read_head(tmp_path / "wt") == first == rev_parse(tmp_path / "wt")  # a linked worktree
    assert synced_head.read_head(repo) == second
    git(repo, "checkout", "-q", "--orphan", "fresh")
    assert synced_head.read_head(repo) == "" and synced_head.head(repo) is None


def test_head_moved_compares_with_the_git_cursor(repo: Path) -> None:
    sha = commit(repo, "one", {"a.py": "1\n"})
    assert synced_head.head_moved(repo, f"g1:abc:{sha}") is None
    assert synced_head.head_moved(repo, None) is None and synced_head.head_moved(repo, "other") is None
    old = "0" * 40
    assert synced_head.head_moved(repo, f"g1:abc:{old}") == {"memory_at": old, "head": sha}
    assert synced_head.gone_commits(repo, old, sha) is None  # git has no such commit: it cannot say
    assert synced_head.gone_commits(repo, sha, sha) == []
