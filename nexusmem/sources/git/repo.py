"""Repository state: HEAD, branches and tags as one cursor, and which commits a scan must walk."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nexusmem import gitcmd, paths
from nexusmem.config import DEFAULTS
from nexusmem.errors import GitCommandError
from nexusmem.synced_head import (  # the cursor's format and the history's refs, with their light readers
    CURSOR_VERSION,
    HISTORY_REF_PREFIXES,
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
    # Only the refs that name the history (synced_head.HISTORY_REFS, and HEAD) are its state: `git stash`
    # (refs/stash), notes, refs/original/ or a review tool's refs moved the fingerprint, and the next sync
    # listed the whole history to prune nothing (1.4 s on git/git after each `git stash`).
    out = b"\n".join(
        line for line in out.splitlines() if line.partition(b" ")[2].startswith(HISTORY_REF_PREFIXES)
    )
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


def boundary(root: Path) -> list[str]:
    """The commits at a shallow clone's cut (the lines of `.git/shallow`), [] for a complete clone."""
    common = paths.git_common_dir(root)
    try:
        lines = (common / "shallow").read_bytes().split() if common is not None else []
    except OSError:  # no file: a complete clone
        return []
    return [line.decode("ascii") for line in lines if _HEX.match(line)]


Held = Callable[[list[str]], set[str]]  # which of some shas memory held when the sync began


def only_cut(cut: list[str], held_at_cut: set[str]) -> bool:
    """Whether a clone whose shallow boundary moved was only made shallower (`git fetch --depth N` below the
    depth it had): every commit at the new CUT is one memory holds (HELD_AT_CUT), so no commit older than
    those memory held arrived. A deepen, an unshallow, or a shallow fetch of commits memory never saw (a
    tag's history) puts the cut at a commit memory does not hold."""
    return bool(cut) and held_at_cut == set(cut)


def boundary_moved(root: Path, cursor: str | None, held: Held) -> str | None:
    """How the clone's shallow boundary moved since the sync that left CURSOR: "deepened" (older commits
    arrived: `--deepen`, `--unshallow`, a shallow fetch that brought commits memory does not hold),
    "shallower" (only cut: memory keeps the commits behind the new cut, see the git source's keep), None
    when it did not move."""
    mark = _cursor_shallow(cursor)
    if mark is None or mark == shallow_mark(root)[1:]:
        return None
    cut = boundary(root)
    return "shallower" if only_cut(cut, held(cut) if cut else set()) else "deepened"


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
    # The previous HEAD, when git still has it: what came since is every commit not reachable from it, of
    # which the sources read only those memory does not hold (a rebase, `pull --rebase`, a reset, a switch to
    # another branch; or a fast-forward back to commits a sync at an older checkout left in memory).
    since: str | None = None
    # HEAD moved forward and no other ref moved: every commit memory holds is still in the history, so no
    # `git rev-list` of the whole history is needed to prune (about a second each on git/git's 82k commits,
    # in every post-commit sync, for the git and the diff source).
    grew: bool = False
    # A shallow clone's cut (`.git/shallow`) and, of its commits, those memory held when the sync began.
    cut: list[str] = field(default_factory=list)
    held_at_cut: set[str] = field(default_factory=set)

    def past_the_cut(self, revs: list[str] | None) -> list[str] | None:
        """REVS without the commits at the cut memory holds: git shows each as a root that added every file,
        where memory read it with its parents (before a shallower fetch cut below it) or as it is now (at
        the same cut before). The cut has no ancestors in git's eyes, so `^sha` leaves out that one."""
        if revs is None or not self.held_at_cut:
            return revs
        return [*revs, *(f"^{sha}" for sha in sorted(self.held_at_cut))]


def plan_walk(root: Path, cursor: str | None, full: bool, held: Held | None = None) -> WalkPlan:
    """Decide between no-op, fast-forward (prevHEAD..HEAD) and full walk (first sync or rewritten history).
    HELD (which of some shas memory holds; absent outside a sync) tells a clone made shallower from a
    deepened one, and which commits at the cut a walk leaves as memory holds them."""
    state = repo_state(root)
    if not full and cursor is not None and cursor == state.cursor:
        return WalkPlan(state, noop=True)
    if state.head is None:
        return WalkPlan(state)
    cut = boundary(root)
    held_at_cut = held(cut) if cut and held is not None else set()
    prev = None if full else cursor_head(cursor)
    moved = prev is not None and _cursor_shallow(cursor) != _cursor_shallow(state.cursor)
    if moved and not only_cut(cut, held_at_cut):
        return WalkPlan(
            state, revs=[state.head], full=True, cut=cut, held_at_cut=held_at_cut
        )  # deepened or unshallowed: older commits appeared
    # Made shallower (or not moved): nothing older arrived, and history is read as below.
    plan = _plan_moves(root, state, prev, cursor)
    plan.cut, plan.held_at_cut = cut, held_at_cut
    plan.grew = plan.grew and not moved
    return plan


def _plan_moves(root: Path, state: RepoState, prev: str | None, cursor: str | None) -> WalkPlan:
    """The walk from PREV (the HEAD memory was synced at; None: the whole history) to STATE's HEAD."""
    assert state.head is not None
    if prev == state.head:  # only other refs moved: nothing new on HEAD, but branches may have gone
        return WalkPlan(state, revs=None)
    if prev is not None:
        code, _ = gitcmd.run_ok(["merge-base", "--is-ancestor", prev, state.head], root)
        if code == 0:
            grew = _cursor_others(cursor) == state.others and bool(state.others) and not state.broken
            # SINCE too: back at commits memory already holds (a sync at an older checkout, then `git
            # checkout main` again), the range is every commit in between, read again with all its patches
            # (cargo: 6,698 commits, 124 s, the store twice its size); only those new to memory are read.
            return WalkPlan(state, revs=[f"{prev}..{state.head}"], grew=grew, since=prev)
        # 1: not an ancestor (history rewritten or switched), and git still has it; 128: it is gone.
        return WalkPlan(state, revs=[state.head], full=True, since=prev if code == 1 else None)
    return WalkPlan(state, revs=[state.head], full=True)


def reachable_commits(
    root: Path, state: RepoState, walks: dict[tuple[str, ...], Any] | None = None
) -> set[str] | None:
    """Every commit of the history: those a branch, a tag, a remote-tracking branch or HEAD reaches
    (synced_head.history_revs; not refs/original/ nor refs/stash). None when there are no refs or git fails.
    WALKS (one sync's, shared by its sources) keeps the answer for the same refs: the diff source asks what
    the git source asked a moment before.

    None means "prune nothing": a failure here must never empty the store.
    """
    if not state.has_refs:
        return None
    key = ("rev-list", state.cursor, *history_revs(state.head))
    if walks is not None and key in walks:
        held: set[str] | None = walks[key]
        return held
    code, out = gitcmd.run_ok(["rev-list", *history_revs(state.head), "--"], root)
    found = set(out.decode("ascii", "replace").split()) if code == 0 else None
    if walks is not None:
        walks[key] = found
    return found
