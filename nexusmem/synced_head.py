"""Whether HEAD is still where the memory's git source last saw it.

No hook runs on `git reset`, `git checkout` or `git rebase --abort`: until the next sync the memory may hold
commits no branch has any more (and lack new ones). status, query, the MCP search tool and precheck say so;
precheck also leaves out of its counts the commits no longer in the history (HISTORY_REFS).

Stdlib only, for the hot paths (precheck on every commit, a cold query): the git source's cursor holds the
HEAD it synced, and HEAD is read from the git directory's files (HEAD, the loose ref, packed-refs). git is
started only when those files cannot say (a reftable repository, an unreadable file) or when HEAD moved.
"""

from __future__ import annotations

import re
from pathlib import Path

from nexusmem import paths

# The git source's cursor: "g1:<refs fingerprint>:<HEAD sha or ''>" (sources/git/repo.py RepoState.cursor).
CURSOR_VERSION = "g1"

_HEX = re.compile(r"^(?:[0-9a-f]{40}|[0-9a-f]{64})$")

# What the memory's history is: the commits the branches, the tags, the remote-tracking branches and HEAD
# reach (`git rev-list` arguments, HEAD's sha added when it is born). Not `--all`: the refs other tools keep
# (refs/original/ left by `git filter-branch`, refs/stash, refs/notes/, refs/replace/, refs/prefetch/ of
# `git maintenance`) would keep a rewritten commit, or one a reset dropped, answered as history. The git
# source prunes by it (sources/git/repo.py reachable_commits) and precheck counts by it (gone_commits).
HISTORY_REFS = ("--branches", "--tags", "--remotes")
# The same refs by name (`git show-ref` lines), with HEAD: what the git source's cursor fingerprints.
HISTORY_REF_PREFIXES = (b"HEAD", b"refs/heads/", b"refs/tags/", b"refs/remotes/")


def history_revs(head: str | None) -> list[str]:
    """The `git rev-list` arguments naming the history (HISTORY_REFS) with HEAD at HEAD (None: unborn)."""
    return [*HISTORY_REFS, *([head] if head else [])]


# Refs each worktree has its own of (git's per-worktree refs): read from its own git directory.
_PER_WORKTREE = ("refs/worktree/", "refs/bisect/", "refs/rewritten/")


def cursor_head(cursor: str | None) -> str | None:
    """The HEAD sha stored in a cursor of ours, or None (no cursor, foreign format, unborn HEAD)."""
    if not cursor:
        return None
    parts = cursor.split(":")
    if len(parts) != 3 or parts[0] != CURSOR_VERSION or not _HEX.match(parts[2]):
        return None
    return parts[2]


def read_head(root: Path) -> str | None:
    """HEAD's commit in the work tree at ROOT, read from files without a process: its sha, "" when HEAD is
    unborn, None when the files cannot say (a reftable repository, an unreadable or odd file)."""
    gitdir = paths.git_dir(root)
    common = paths.git_common_dir(root)
    if gitdir is None or common is None or (common / "reftable").exists():
        return None
    try:
        text = (gitdir / "HEAD").read_text(encoding="ascii").strip()
        for _hop in range(5):  # a symbolic ref to a symbolic ref: git follows 5 levels too
            if _HEX.match(text):
                return text
            if not text.startswith("ref:"):
                return None
            name = text[len("ref:") :].strip()
            if not name.startswith("refs/") or ".." in name.split("/"):
                return None
            base = gitdir if name.startswith(_PER_WORKTREE) else common
            try:
                text = (base / name).read_text(encoding="ascii").strip()
            except FileNotFoundError:
                return _packed(common, name)
        return None
    except (OSError, UnicodeDecodeError):  # a directory where the ref should be, a file being rewritten
        return None


def _packed(common: Path, name: str) -> str | None:
    """NAME's sha in packed-refs, "" when it is not there either (an unborn branch), None when unreadable."""
    try:
        data = (common / "packed-refs").read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return ""
    except OSError:
        return None
    for line in data.splitlines():
        sha, _, ref = line.partition(" ")
        if ref == name:
            return sha if _HEX.match(sha) else None
    return ""


def head(root: Path) -> str | None:
    """HEAD's commit at ROOT (None when unborn or git cannot say): from the files, else one git process."""
    found = read_head(root)
    if found is not None:
        return found or None
    from nexusmem import gitcmd

    code, out = gitcmd.run_ok(["rev-parse", "-q", "--verify", "HEAD^{commit}"], root)
    sha = out.decode("ascii", "replace").strip()
    return sha if code == 0 and sha else None


def head_moved(root: Path, cursor: str | None) -> dict[str, str] | None:
    """{"memory_at": sha, "head": sha} when HEAD at ROOT is not the commit the git source last synced (its
    CURSOR); None when it is, or nothing was synced, or HEAD is unborn. No process when HEAD's files can be
    read (see head)."""
    synced = cursor_head(cursor)
    if synced is None:
        return None
    now = head(root)
    if now is None or now == synced:
        return None
    return {"memory_at": synced, "head": now}


def moved_text(moved: dict[str, str]) -> str:
    """What a moved HEAD (head_moved) means for answers, with the fix: status's line and query's note."""
    return (
        f"HEAD is {moved['head'][:10]}, memory is at {moved['memory_at'][:10]} (commits made without the"
        " post-commit hook, a reset, a checkout or a rebase since the last sync: answers may lack the newest"
        " commits, or hold ones no branch has now); run `nexusmem sync`"
    )


def gone_commits(root: Path, memory_at: str, head: str) -> list[str] | None:
    """The commits the memory's HEAD (MEMORY_AT) reached that no branch, tag, remote-tracking branch and not
    HEAD (at HEAD) reach now (history_revs, as the git source prunes): those a reset or a rebase left behind,
    which the next sync prunes; [] when MEMORY_AT is still on some branch (a checkout, or a sync that has not
    caught up). None when git cannot say (MEMORY_AT pruned, git failing). One git process."""
    from nexusmem import gitcmd

    if not _HEX.match(memory_at):
        return None
    code, out = gitcmd.run_ok(["rev-list", memory_at, "--not", *history_revs(head), "--"], root)
    if code != 0:
        return None
    return out.decode("ascii", "replace").split()
