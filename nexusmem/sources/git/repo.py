"""Repository state: HEAD, branches and tags as one cursor, and which commits a scan must walk."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nexusmem import gitcmd, paths
from nexusmem.config import DEFAULTS
from nexusmem.errors import GitCommandError
from nexusmem.synced_head import (  # the cursor's format and the history's refs, with their light readers
    CURSOR_VERSION,
    cursor_head,
    history_revs,
)

_HEX = re.compile(rb"^(?:[0-9a-f]{40}|[0-9a-f]{64})$")

# Shared: configuration, repository state, cursor and walk plan


def _setting(config: dict[str, Any], dotted: str) -> Any:
    """config['a']['b'] for 'a.b', falling back to the default so a partial config (tests, previews) works."""
    value: Any = config
    default: Any = DEFAULTS
    for part in dotted.split("."):
        default = default[part]
        value = value.get(part, default) if isinstance(value, dict) else default
    return value


@dataclass(frozen=True)
class RepoState:
    """HEAD and a fingerprint of every ref, from one cheap `git show-ref --head`."""

    fingerprint: str  # of every ref; then "o" and OTHERS; then the shallow mark ("s…") of a shallow clone
    head: str | None  # None when HEAD is unborn (empty repository, orphan branch)
    has_refs: bool
    broken: str = ""  # git's message when a ref it cannot read was passed over (see repo_state)
    # A fingerprint of the refs that do not point at HEAD: when it is the same after HEAD moved forward (a
    # commit, a fast-forward pull), the history only grew and nothing needs to be pruned (see plan_walk).
    others: str = ""

    @property
    def cursor(self) -> str:
        return f"{CURSOR_VERSION}:{self.fingerprint}:{self.head or ''}"


def repo_state(root: Path) -> RepoState:
    """Read HEAD and all refs. An empty repository (no refs, unborn HEAD) is a state, not an error."""
    code, out = gitcmd.run_ok(["show-ref", "--head"], root)
    broken = ""
    if code not in (0, 1):  # 1 = no refs at all; anything else is a failure, said in git's words
        out, broken = _refs_one_by_one(root)
    head: str | None = None
    for line in out.splitlines():
        sha, _, name = line.partition(b" ")
        if name == b"HEAD" and _HEX.match(sha):
            head = sha.decode("ascii")
            break
    others = hashlib.sha256(
        b"\n".join(
            line
            for line in out.splitlines()
            if line.partition(b" ")[2] != b"HEAD"
            and line.partition(b" ")[0].decode("ascii", "replace") != head
        )
    ).hexdigest()[:12]
    fingerprint = hashlib.sha256(out).hexdigest()[:20] + "o" + others + shallow_mark(root)
    return RepoState(fingerprint, head, bool(out.strip()), broken, others)


def shallow_mark(root: Path) -> str:
    """A shallow clone's boundary, part of the state: `git fetch --deepen/--unshallow` brings older commits
    without moving any ref. "s<hash of .git/shallow>" for a shallow clone, "" for a complete one (read from
    the file: no git process)."""
    common = paths.git_common_dir(root)
    shallow = common / "shallow" if common is not None else None
    try:
        return "s" + hashlib.sha256(shallow.read_bytes()).hexdigest()[:12] if shallow is not None else ""
    except OSError:  # not a shallow clone (no file), or unreadable: as git, taken as complete
        return ""


def deepened(root: Path, cursor: str | None) -> bool:
    """Whether the clone's shallow boundary moved since the sync that left CURSOR (older commits arrived)."""
    mark = _cursor_shallow(cursor)
    return mark is not None and mark != shallow_mark(root)[1:]


def _refs_one_by_one(root: Path) -> tuple[bytes, str]:
    """(show-ref-like lines, git's complaint) when `git show-ref` refused: one ref git cannot read (a branch
    left at a missing object by a crashed fetch, an annotated tag whose object was pruned) fails it whole,
    though HEAD's history may be intact. for-each-ref lists such a ref without reading its object; HEAD is
    asked on its own. When those fail too (a damaged packed-refs, not a repository), the sync stops with
    git's own message."""
    _code, _out, err = gitcmd.run_full(["show-ref", "--head"], root)
    why = gitcmd.first_line(err)
    refs_code, refs = gitcmd.run_ok(["for-each-ref", "--format=%(objectname) %(refname)"], root)
    head_code, head = gitcmd.run_ok(["rev-parse", "-q", "--verify", "HEAD"], root)
    if refs_code != 0 or head_code not in (0, 1):
        if paths.refuses_owner(err):
            raise paths.refused(root)
        raise GitCommandError(f"git cannot read the refs of {root}: {why}")
    lines = (head.strip() + b" HEAD\n" if head_code == 0 and head.strip() else b"") + refs
    return lines, why


def _cursor_others(cursor: str | None) -> str | None:
    """The fingerprint of the refs not at HEAD in a cursor of ours (None for a cursor made before it)."""
    if not cursor or cursor.count(":") != 2:
        return None
    _, o, rest = cursor.split(":")[1].partition("o")
    return rest.partition("s")[0] if o else None


def _cursor_shallow(cursor: str | None) -> str | None:
    """The shallow-boundary mark in a cursor of ours ("" for a cursor of a complete clone)."""
    if not cursor or cursor.count(":") != 2:
        return None
    return cursor.split(":")[1].partition("s")[2]


@dataclass
class WalkPlan:
    """What a scan has to do: nothing (noop), a range, everything, or no walk but a prune."""

    state: RepoState
    noop: bool = False
    revs: list[str] | None = None  # `git log` revision arguments; None = nothing to walk
    full: bool = False  # True when the whole history (or the first-sync window) is walked
    # The previous HEAD, when history moved without a fast-forward (a rebase, `pull --rebase`, a reset, a
    # switch to another branch) and git still has it: what came since is every commit not reachable from it.
    since: str | None = None
    # HEAD moved forward and no other ref moved: every commit memory holds is still in the history, so no
    # `git rev-list` of the whole history is needed to prune (about a second each on git/git's 82k commits,
    # in every post-commit sync, for the git and the diff source).
    grew: bool = False


def plan_walk(root: Path, cursor: str | None, full: bool) -> WalkPlan:
    """Decide between no-op, fast-forward (prevHEAD..HEAD) and full walk (first sync or rewritten history)."""
    state = repo_state(root)
    if not full and cursor is not None and cursor == state.cursor:
        return WalkPlan(state, noop=True)
    if state.head is None:
        return WalkPlan(state)
    prev = None if full else cursor_head(cursor)
    if prev is not None and _cursor_shallow(cursor) != _cursor_shallow(state.cursor):
        return WalkPlan(
            state, revs=[state.head], full=True
        )  # deepened or unshallowed: older commits appeared
    if prev == state.head:  # only other refs moved: nothing new on HEAD, but branches may have gone
        return WalkPlan(state, revs=None)
    if prev is not None:
        code, _ = gitcmd.run_ok(["merge-base", "--is-ancestor", prev, state.head], root)
        if code == 0:
            grew = _cursor_others(cursor) == state.others and bool(state.others) and not state.broken
            return WalkPlan(state, revs=[f"{prev}..{state.head}"], grew=grew)
        # 1: not an ancestor (history rewritten or switched), and git still has it; 128: it is gone.
        return WalkPlan(state, revs=[state.head], full=True, since=prev if code == 1 else None)
    return WalkPlan(state, revs=[state.head], full=True)


def reachable_commits(root: Path, state: RepoState) -> set[str] | None:
    """Every commit of the history: those a branch, a tag, a remote-tracking branch or HEAD reaches
    (synced_head.history_revs; not refs/original/ nor refs/stash). None when there are no refs or git fails.

    None means "prune nothing": a failure here must never empty the store.
    """
    if not state.has_refs:
        return None
    code, out = gitcmd.run_ok(["rev-list", *history_revs(state.head)], root)
    if code != 0:
        return None
    return set(out.decode("ascii", "replace").split())
