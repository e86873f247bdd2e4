"""Replays: a commit that makes again a change an earlier commit made (a rebase, a cherry-pick).

`git rebase main` replays the branch's commits under new shas with a new committer time; their author time
and their patch stay. Failure → fix linking goes by the time a commit was made (its committer time, so that
a fix amended into an older commit counts), and so took a replayed commit that broke a test before it failed
for that test's fix. A replay is told from an amend by its patch: an amend that adds a fix changes it, a
replay does not (`git patch-id --stable`: the patch without its line numbers and whitespace).

A new commit whose committer time is not its author time is compared with the earlier commits of the same
author time: those memory held when the sync began (the pre-rebase commit a post-commit sync stored, pruned
only after this sync's walk; also while a rebase is under way, its picks' post-commit syncs seeing the
branch still at its old tip) and those only the reflog reaches (rewritten away before any sync stored
them). Not by reachability: a commit replayed onto its own branch, or cherry-picked from another one, are
alike to git; so a cherry-pick of a commit made before the failure is no fix of it either (the change
existed, if on another branch: a backported fix is left to the retry link). The commits
that have one get meta ``change_made``: the time the earliest of those with the same patch was made (its own
``change_made`` when it was a replay too), when that is before the new one was made. The linker
(nexusmem.link) takes no such commit for the fix of a failure that came after the change was made.

Cost: a store lookup by author time per rewritten commit (an index seek); one `git log` of the commits only
the reflog reaches, the first time a rewritten commit is seen; and, when some commit has earlier ones of its
author time, one `git diff-tree | git patch-id` for all of them at the end of the walk. A sync whose new
commits are not rewritten runs no git command here.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from nexusmem import gitcmd

if TYPE_CHECKING:
    from nexusmem.nodes import Node

# What the earlier commits of one author time are: (sha, when its change was first made).
Earlier = list[tuple[str, int]]

_DIFF = [
    "diff-tree",
    "--stdin",
    "-p",
    "--root",
    "--no-color",
    "--no-ext-diff",
    "--no-textconv",
    "--no-renames",
]


class Replays:
    """Finds, among the new commits a walk reads, the replays of changes made earlier, and marks them."""

    def __init__(self, root: Path, stored: Callable[[int], Earlier] | None) -> None:
        self.root = root
        self.stored = stored  # the store's commits_authored_at (None outside a sync)
        self._reflog: dict[int, Earlier] | None = None
        self.held: list[tuple[Node, Earlier]] = []

    def hold(self, node: Node, made_ms: int) -> bool:
        """Whether NODE (a new commit, made at MADE_MS) must wait for the end of the walk to be compared with
        the earlier commits of its author time (held, then yielded by marked()). Commits made when they were
        authored are no replays: asked nothing."""
        if made_ms == node.ts:
            return False
        sha = node.ref
        found: dict[str, int] = {}
        for other, changed in (
            *(self.stored(node.ts) if self.stored else ()),
            *self._only_in_reflog(node.ts),
        ):
            if other != sha and changed < made_ms:
                found[other] = min(changed, found.get(other, changed))
        if not found:
            return False
        self.held.append((node, sorted(found.items())))
        return True

    def marked(self) -> Iterator[Node]:
        """The held commits, each with meta ``change_made`` when an earlier commit had its patch."""
        if not self.held:
            return
        shas = {node.ref for node, _ in self.held} | {sha for _, earlier in self.held for sha, _ in earlier}
        ids = self._patch_ids(sorted(shas))
        for node, earlier in self.held:
            mine = ids.get(node.ref)
            same = [changed for sha, changed in earlier if mine is not None and ids.get(sha) == mine]
            if same:
                node.meta["change_made"] = min(same)
            yield node
        self.held = []

    def _only_in_reflog(self, ts_ms: int) -> Earlier:
        if self._reflog is None:
            self._reflog = {}
            # The commits a reflog reaches and no ref does: what an amend, a rebase or a reset left behind.
            code, out = gitcmd.run_ok(
                ["log", "--format=%H %at %ct", "--reflog", "--not", "--all", "--"], self.root
            )
            for line in out.decode("ascii", "replace").splitlines() if code == 0 else ():
                parts = line.split()
                if len(parts) == 3 and parts[1].isdigit() and parts[2].isdigit():
                    self._reflog.setdefault(int(parts[1]) * 1000, []).append((parts[0], int(parts[2]) * 1000))
        return self._reflog.get(ts_ms, [])

    def _patch_ids(self, shas: list[str]) -> dict[str, str]:
        """{sha: its `git patch-id --stable`} of those of SHAS git can diff (not a merge, nor an empty commit)."""
        code, patches, _ = gitcmd.run_full(_DIFF, self.root, input="".join(s + "\n" for s in shas).encode())
        if code != 0 or not patches:
            return {}
        code, out, _ = gitcmd.run_full(["patch-id", "--stable"], self.root, input=patches)
        if code != 0:
            return {}
        found: dict[str, str] = {}
        for line in out.decode("ascii", "replace").splitlines():
            parts = line.split()
            if len(parts) == 2:
                found[parts[1]] = parts[0]
        return found
