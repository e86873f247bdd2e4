"""Git collectors: commits (`git_commit`) and per-file patches (`code_diff`), each one streamed `git log`."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, TypeVar

from nexusmem.sources.base import ScanContext, ScanResult, _no_progress
from nexusmem.sources.git.repo import WalkPlan, _setting, plan_walk, reachable_commits

if TYPE_CHECKING:
    from nexusmem.nodes import Node
    from nexusmem.sources.git.commits import CommitRecord

T = TypeVar("T")

# The readers of commits, change words and patches (and the signal rules behind them) are imported when
# there is something to read: a sync with nothing new stops at plan_walk's one `git show-ref`.

# The diff phase reads whole patches (~10x slower per commit than the commit phase): a report every 10
# commits keeps its bar moving.
DIFF_PROGRESS_EVERY = 10


def _start_scan(ctx: ScanContext, sha_of_key: Callable[[str], str]) -> tuple[WalkPlan | None, ScanResult]:
    """Plan the walk for a git-backed source. (None, result) when nothing moved since the cursor;
    otherwise the plan and a result whose keep() drops nodes (natural key → sha) of unreachable commits."""
    plan = plan_walk(ctx.root, ctx.cursor, ctx.full, ctx.known.get("commits_in_memory"))
    if plan.noop:
        return None, ScanResult(nodes=(), cursor=ctx.cursor, keep=None)
    broken = plan.state.broken
    walks = ctx.known.get("git_walks")
    reachable = None if broken or plan.grew else reachable_commits(ctx.root, plan.state, walks)
    keep: Callable[[str], bool] | None = None
    if reachable is not None:
        commits = reachable
        # A shallow clone: a commit git does not reach may be history behind the cut rather than rewritten
        # away (`git fetch --depth 2` after a sync at depth 20 cuts off commits that happened). Kept: those
        # memory holds that the commits at the cut reach by the parents memory recorded for them. A commit
        # an amend, a rebase or a reset left is no ancestor of the cut and goes as in a complete clone.
        ancestors: Callable[[list[str]], set[str]] | None = ctx.known.get("commit_ancestors")
        cut = plan.cut
        behind: set[str] | None = None  # read at the first commit git does not reach

        def keep(key: str) -> bool:
            nonlocal behind
            sha = sha_of_key(key)
            if sha in commits:
                return True
            if not cut or ancestors is None:
                return False
            if behind is None:
                behind = ancestors(cut)
            return sha in behind

    result = ScanResult(nodes=(), cursor=plan.state.cursor, keep=keep)
    if broken:
        result.notes.append(f"git cannot read every ref ({broken}): read HEAD's history, pruned nothing")
    return plan, result


class GitSource:
    """git_commit nodes for every commit reachable from HEAD."""

    name = "git"
    kinds: tuple[str, ...] = ("git_commit",)

    def enabled(self, config: dict[str, Any]) -> bool:
        """On unless sources.git.enabled is false."""
        return bool(_setting(config, "sources.git.enabled"))

    def scan(self, ctx: ScanContext) -> ScanResult:
        """Plan the walk now (cheap); stream the commits lazily when `nodes` is iterated."""
        plan, result = _start_scan(ctx, sha_of_key=lambda key: key)
        if plan is not None:
            result.nodes = self._nodes(ctx, plan, result)
        return result

    def _nodes(self, ctx: ScanContext, plan: WalkPlan, result: ScanResult) -> Iterator[Node]:
        revs = plan.revs
        if revs is not None and plan.since is not None and plan.state.head is not None:
            # An amend, a rebase, a reset, a checkout of another branch: the commits memory already holds
            # keep their nodes (a commit's node is its own alone), so only the new ones are read; the ones
            # the history no longer reaches are pruned by the scan's keep(). Reading every commit's change
            # words again took seconds on each amend (2.3 s on urllib3's 4,402 commits).
            revs = _new_to_memory(ctx, plan.since, plan.state.head)
        revs = plan.past_the_cut(revs)
        if revs is None:
            return
        from nexusmem.nodes import ts_ok
        from nexusmem.sources.git.changewords import iter_commits_with_words
        from nexusmem.sources.git.commits import (
            PROGRESS_EVERY,
            commit_count,
            commit_node,
            iter_commits,
            past_unreadable,
        )
        from nexusmem.sources.git.replays import Replays

        limit = int(_setting(ctx.config, "limits.maxBodyChars"))
        words = bool(_setting(ctx.config, "sources.git.changeWords"))
        skip = _setting(ctx.config, "sources.diff.skip")
        walked = 0
        unreadable: list[str] = []

        def walk(revs: list[str]) -> Iterator[tuple[CommitRecord, str]]:
            nonlocal walked
            if words:
                found = iter_commits_with_words(ctx.root, revs, skip, ctx.known.get("denied"))
            else:
                found = ((rec, "") for rec in iter_commits(ctx.root, revs))
            for item in found:
                walked += 1
                yield item

        def lost(rec: CommitRecord, why: str) -> tuple[CommitRecord, str]:
            unreadable.append(f"{rec.header.sha[:12]} ({why})")
            return rec, ""

        commits = past_unreadable(ctx.root, revs, walk, lambda: walked, lost)
        total = commit_count(ctx.root, revs) if ctx.progress is not _no_progress else None
        done = 0
        # A commit a rebase or a cherry-pick replayed (same author time, same patch as an earlier one) waits
        # for the end of the walk, where one `git patch-id` tells it from an amend that changed the patch.
        replays = Replays(ctx.root, ctx.known.get("commits_authored_at"))
        for rec, found in _up_to_a_missing_parent(commits, ctx, result):
            sha = rec.header.sha
            if not ts_ok(rec.header.ts_ms):
                # A forged or corrupt commit (hash-object --literally): a time no date can show.
                result.skip(f"commit {sha}: author time {rec.header.ts_ms // 1000} is outside 1970..2100")
                continue
            try:
                node = commit_node(ctx, self.name, rec, limit, found)
            except Exception as exc:  # one odd commit must not stop the ones after it
                result.skip(f"commit {sha}: {type(exc).__name__}: {str(exc)[:120]}")
                continue
            if not replays.hold(node, rec.header.committed_ms):
                yield node
            done += 1
            if done % PROGRESS_EVERY == 0:
                ctx.progress("git", done, total)
        yield from replays.marked()
        if unreadable:
            result.notes.append(unreadable_note(unreadable))
        ctx.progress("git", done, done)


def _up_to_a_missing_parent(items: Iterator[T], ctx: ScanContext, result: ScanResult) -> Iterator[T]:
    """ITEMS, ended quietly where git cannot go on walking because a commit's parent is missing (a damaged
    or partial clone): what was read before it is kept, nothing is pruned, and the cursor stays where it
    was, so the next sync walks again (and reads all of it once the clone is repaired)."""
    from nexusmem.errors import GitCommandError

    try:
        yield from items
    except GitCommandError as exc:
        message = str(exc)
        from nexusmem import gitcmd

        if gitcmd.WALK_CUT.decode() not in message:
            raise
        why = message.split(": ", 1)[-1].replace("\n", "; ")
        result.notes.append(
            f"history read up to a commit whose parent git cannot read ({why}); `git fsck` tells what is"
            " missing, and the next sync tries again"
        )
        result.cursor = ctx.cursor
        result.keep = None


def unreadable_note(commits: list[str]) -> str:
    """What a walk says of the commits whose change git could not read (COMMITS: "sha (why)")."""
    from nexusmem.sources.git.commits import PROMISOR

    shown = ", ".join(commits[:5]) + (f" and {len(commits) - 5} more" if len(commits) > 5 else "")
    if any(PROMISOR in commit for commit in commits):
        return (
            f"kept {len(commits)} commit(s) without their change: this partial clone lacks their objects,"
            " and NexusMem never fetches (`git log -p >/dev/null` fetches them, then `nexusmem sync"
            f" --rebuild` reads them): {shown}"
        )
    return (
        f"kept {len(commits)} commit(s) without their change, which git cannot read (a damaged or partial"
        f" clone; `git fsck` tells): {shown}"
    )


def _new_to_memory(ctx: ScanContext, since: str, head: str) -> list[str] | None:
    """`git log` revisions of the commits SINCE..HEAD that memory did not hold when this sync began (None:
    none): what the git and diff sources read after HEAD moved (the second asks the sync's memo). A checkout of
    another branch and back walks SINCE..HEAD over every commit of the branch since the merge base: stored
    long ago, their patches left out by the first sync's window on purpose (a switch to a branch 1,844
    commits ahead read 1,844 of them, seconds, each time); an amend, the amended commit alone. One `git rev-list`; the
    commits memory holds are cut off by their newest ones (memory holds a commit's ancestors too: the git
    source walks HEAD's whole history)."""
    in_memory: Callable[[list[str]], set[str]] | None = ctx.known.get("commits_in_memory")
    revs = [f"{since}..{head}"]
    if in_memory is None:  # outside a sync (no store to ask): every commit the old HEAD does not reach
        return revs
    walks: dict[tuple[str, ...], Any] | None = ctx.known.get("git_walks")
    key = ("new-to-memory", since, head)
    if walks is not None and key in walks:  # the diff source asks what the git source asked a moment before
        return list(walks[key]) if walks[key] is not None else None
    found = _commits_new_to_memory(ctx, revs, in_memory)
    if walks is not None:
        walks[key] = found
    return found


def _commits_new_to_memory(
    ctx: ScanContext, revs: list[str], in_memory: Callable[[list[str]], set[str]]
) -> list[str] | None:
    """_new_to_memory's one `git rev-list` and one store read."""
    from nexusmem import gitcmd

    code, out = gitcmd.run_ok(["rev-list", "--parents", *revs, "--"], ctx.root)
    if code != 0:
        return revs
    rows = [line.split() for line in out.decode("ascii", "replace").splitlines() if line]
    held = in_memory([row[0] for row in rows])
    if not held:
        return revs
    if len(held) == len(rows):
        return None
    parents = {parent for row in rows if row[0] in held for parent in row[1:]}
    return [*revs, *(f"^{sha}" for sha in sorted(held - parents))]


class DiffSource:
    """code_diff nodes: one per changed file of each non-merge commit (a newest window, then increments)."""

    name = "diff"
    kinds: tuple[str, ...] = ("code_diff",)

    def enabled(self, config: dict[str, Any]) -> bool:
        """On unless sources.diff.enabled is false."""
        return bool(_setting(config, "sources.diff.enabled"))

    def scan(self, ctx: ScanContext) -> ScanResult:
        """First sync: the newest `initialCommits` commits; later: prevHEAD..HEAD, also when history was
        rewritten (every commit the previous HEAD does not reach that memory did not hold, however many: a
        `pull --rebase` of 250 commits gets all their patches, as a plain pull does; a checkout back to a
        branch memory holds reads none)."""
        plan, result = _start_scan(ctx, sha_of_key=lambda key: key.split(":", 1)[0])
        if plan is None:
            return result
        revs = plan.revs
        if revs is not None and plan.since is not None and plan.state.head is not None:
            revs = _new_to_memory(ctx, plan.since, plan.state.head)
        elif revs is not None and plan.full:
            window = int(_setting(ctx.config, "sources.diff.initialCommits"))
            revs = [*revs, f"--max-count={window}"] if window > 0 else None
        result.nodes = self._nodes(ctx, plan.past_the_cut(revs), result)
        return result

    def _nodes(self, ctx: ScanContext, revs: list[str] | None, result: ScanResult) -> Iterator[Node]:
        if revs is None:
            return
        from nexusmem.sources.git.commits import commit_count, past_unreadable
        from nexusmem.sources.git.diff import DiffStats, iter_diff_nodes

        stats = DiffStats()
        # Progress counts commits, whose total `git rev-list --count` gives in milliseconds (the file changes
        # are only known once each patch is read); asked only when someone watches (a terminal).
        total = commit_count(ctx.root, revs) if ctx.progress is not _no_progress else None
        shown = 0

        def lost(rec: CommitRecord, why: str) -> None:
            # Located like any bad record (the sync's summary and `status` show them); counted in the stats,
            # whose total becomes the source's skipped count below.
            stats.unreadable += 1
            result.skip(f"commit {rec.header.sha}: its patch cannot be read ({why})")

        walk = _up_to_a_missing_parent(
            past_unreadable(
                ctx.root,
                revs,
                lambda r: iter_diff_nodes(ctx, self.name, r, stats),
                lambda: stats.commits,
                lost,
            ),
            ctx,
            result,
        )
        try:
            for node in walk:
                yield node
                if stats.commits - shown >= DIFF_PROGRESS_EVERY:
                    shown = stats.commits
                    ctx.progress("diff", shown, total)
        finally:
            # Set while the generator runs to its end, before the sync reads it.
            result.skipped = stats.total
        ctx.progress("diff", stats.commits, stats.commits)
