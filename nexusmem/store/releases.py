"""Releases: the version tags the last sync read (nexusmem.sources.git.releases hands them over through the
sync), and the window of time a version names. Mixed into Store (which provides `conn`)."""

from __future__ import annotations

import heapq
import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from nexusmem.store.batch import rows_in


def version_key(version: str) -> tuple[int, ...]:
    """ "1.2" → (1, 2, 0, 0): versions compare by number, and "1.2" is "1.2.0"."""
    parts = [int(p) for p in version.split(".")[:4]]
    return tuple(parts + [0] * (4 - len(parts)))


def tag_family(name: str, version: str) -> str:
    """The part of tag NAME before its VERSION, without a "v": "" for "v1.2.0" and "1.2.0", "lib-" for
    "lib-v2.0.0", "create-app@" for "create-app@2.0.0", "release-" for "release-2.0.1"."""
    prefix = name[: len(name) - len(version)] if name.endswith(version) else name
    if prefix[-1:] in ("v", "V") and (len(prefix) == 1 or not prefix[-2].isalnum()):
        prefix = prefix[:-1]
    return prefix


# How many commits a walk of the history between two tags reads at most (git log A..B), and how many earlier
# tags are tried, highest version first, for the one a release's tag reaches (a backport line's tags do not).
MAX_RANGE_WALK = 5000
PREVIOUS_TRIES = 5


@dataclass(frozen=True)
class ReleaseRange:
    """The commits of a release: those its tag reaches and the previous release's tag does not (`git log
    BASE..NAME`), read from the parents memory records. SHAS is empty and HELD False when the tag's commit is
    not in memory (a tag on a branch HEAD does not reach); BASE is None when no earlier tag is reached."""

    version: str
    name: str  # the tag
    sha: str
    held: bool
    base: str | None = None  # the previous release's version
    base_name: str | None = None  # and its tag
    shas: tuple[str, ...] = ()  # the commits between, in walk order (newest generation first)
    truncated: bool = False  # the walk stopped at MAX_RANGE_WALK commits


def _line_next(
    tags: list[tuple[tuple[int, ...], int, str]], at: int, depth: int, held: Callable[[str], bool]
) -> tuple[tuple[int, ...], int, str] | None:
    """The release after TAGS[AT] (version key, epoch ms, sha; in version order) on its line: the first one
    tagged after it among the higher versions of the same major; when there is none, and its commit is in
    memory (HEAD's history, where the next major follows), the first one tagged after it among the higher
    versions whose commit is in memory too (HELD: sha -> bool). A backport's tag (6.5.8 on a maintenance
    branch, tagged two years after 7.0.0) is not closed by a higher version tagged before it."""
    key, start, sha = tags[at]
    later = [t for t in tags if t[0][:depth] > key[:depth] and t[1] > start]
    same = [t for t in later if t[0][0] == key[0]]
    if not same and held(sha):
        same = [t for t in later if held(t[2])]
    return min(same, key=lambda t: (t[1], t[0])) if same else None


class ReleasesMixin:
    """Store methods for releases. Mixed into Store."""

    conn: Any

    def replace_releases(self, rows: Iterable[tuple[str, str, str, int]]) -> None:
        """Make ROWS (tag name, version, commit sha, epoch ms) the store's whole list (a deleted tag goes)."""
        self.conn.execute("DELETE FROM releases")
        self.conn.executemany(
            "INSERT OR REPLACE INTO releases(name, version, sha, ts) VALUES (?, ?, ?, ?)", rows
        )

    def release_names(self) -> list[str]:
        """Every version tag's name the store holds."""
        return [r[0] for r in self.conn.execute("SELECT name FROM releases")]

    def delete_releases(self, names: Iterable[str]) -> int:
        """Take the tags NAMES out of the store's list (a name holding a forgotten value); how many went."""
        return sum(self.conn.execute("DELETE FROM releases WHERE name = ?", (n,)).rowcount for n in names)

    def release_window(self, version: str) -> tuple[int, int | None] | None:
        """(when the release VERSION was made, when the next one was; None when it is the newest), epoch
        ms; None when no tag names VERSION. "1.1" names 1.1.0 and, if there is no such tag, the first 1.1.x.

        A repository that releases several packages tags each with its name ("v2.0.0" beside
        "lib-v2.0.0" and "create-app@2.0.0"): the window is read within one family of tags (tag_family),
        the project's own (unprefixed) when it holds VERSION, else the only family that does; when several
        prefixed families do and none is the project's, all tags count together."""
        tags = self._release_family(version)
        if tags is None:
            return None
        wanted, depth = version_key(version), len(version.split("."))
        at = next(n for n, (k, _, _) in enumerate(tags) if k[:depth] == wanted[:depth])
        following = _line_next(tags, at, depth, self.commit_held)
        return tags[at][1], (following[1] if following is not None else None)

    def release_after(self, version: str) -> str | None:
        """The version of the release that closes VERSION's window (release_window), None when there is none
        (or no tag names VERSION)."""
        rows = self._release_rows(version)
        if rows is None:
            return None
        tags = [(k, ts, sha) for k, ts, sha, _ in rows]
        wanted, depth = version_key(version), len(version.split("."))
        at = next(n for n, (k, _, _) in enumerate(tags) if k[:depth] == wanted[:depth])
        following = _line_next(tags, at, depth, self.commit_held)
        return next((v for k, ts, sha, (_, v) in rows if (k, ts, sha) == following), None)

    def commit_held(self, sha: str) -> bool:
        """Whether memory holds commit SHA (a commit HEAD reached at a sync)."""
        row = self.conn.execute(
            "SELECT 1 FROM nodes WHERE source = 'git' AND natural_key = ? AND +kind = 'git_commit' LIMIT 1",
            (sha,),
        ).fetchone()
        return row is not None

    def release_range(self, version: str, base: str | None = None) -> ReleaseRange | None:
        """The commits release VERSION (a final one) brought: those its tag reaches and the previous
        release's tag does not, as `git log PREVIOUS..VERSION` lists them, read from the parents memory
        records (no git on a question's path). The previous release is BASE when given (its tag must be in
        memory), else the highest version below VERSION, tagged no later, whose tag VERSION's reaches
        (PREVIOUS_TRIES tried). None when no tag names VERSION."""
        rows = self._release_rows(version)
        if rows is None:
            return None
        wanted, depth = version_key(version), len(version.split("."))
        at = next(n for n, row in enumerate(rows) if row[0][:depth] == wanted[:depth])
        _, ts, sha, (name, _) = rows[at]
        if not self.commit_held(sha):
            return ReleaseRange(version, name, sha, held=False)
        if base is not None:
            base_rows = self._release_rows(base)
            base_key, depth_b = version_key(base), len(base.split("."))
            tries = [
                row for row in (base_rows or []) if row[0][:depth_b] == base_key[:depth_b] and row[2] != sha
            ][:1]
        else:
            tries = [row for row in reversed(rows[:at]) if row[1] <= ts and row[2] != sha]
        tried = 0
        for _, _, below, (below_name, below_version) in tries:
            if tried >= PREVIOUS_TRIES:
                break
            if not self.commit_held(below):
                continue
            tried += 1
            shas, reached, truncated = self._walk(sha, below)
            if reached or base is not None:
                return ReleaseRange(
                    version, name, sha, True, below_version, below_name, tuple(shas), truncated
                )
        return ReleaseRange(version, name, sha, held=True)

    def _walk(self, tip: str, base: str) -> tuple[list[str], bool, bool]:
        """(the commits TIP reaches and BASE does not, highest generation first; whether TIP reaches BASE;
        whether the walk stopped at MAX_RANGE_WALK), read from the parents memory records. Walked as git
        paints a range: highest generation first, each commit carrying the marks of the tips that reach it,
        until no commit only TIP reaches is left to read (an ancestor's generation is always lower, so a
        commit is read after every one that reaches it)."""
        TIP, BASE = 1, 2
        info = self._commit_graph([tip, base])
        flags = {tip: TIP}
        flags[base] = flags.get(base, 0) | BASE
        heap: list[tuple[int, int, str]] = []
        for sha in dict.fromkeys([tip, base]):
            if sha in info:
                heapq.heappush(heap, (-info[sha][1], -info[sha][2], sha))
        queued = {sha for _, _, sha in heap}
        out: list[str] = []
        while heap and any(flags[sha] == TIP for sha in queued):
            if len(out) >= MAX_RANGE_WALK:
                return out, bool(flags.get(base, 0) & TIP), True
            _, _, sha = heapq.heappop(heap)
            queued.discard(sha)
            mark = flags[sha]
            if mark == TIP:
                out.append(sha)
            parents = info[sha][0]
            missing = [p for p in parents if p not in info]
            if missing:
                info.update(self._commit_graph(missing))
            for parent in parents:
                if parent not in info:
                    continue  # behind a shallow clone's cut
                before = flags.get(parent, 0)
                if before | mark != before:
                    flags[parent] = before | mark
                    if parent not in queued:
                        queued.add(parent)
                        heapq.heappush(heap, (-info[parent][1], -info[parent][2], parent))
        reached = bool(flags.get(base, 0) & TIP)
        return [sha for sha in dict.fromkeys(out) if flags[sha] == TIP], reached, False

    def _commit_graph(self, shas: Sequence[str]) -> dict[str, tuple[list[str], int, int]]:
        """sha -> (its parents, its generation (0 when not numbered), its time) for those of SHAS memory holds."""
        sql = (
            "SELECT n.natural_key, json_extract(n.meta, '$.parents'), g.gen, n.ts FROM nodes n"
            " LEFT JOIN commit_generations g ON g.sha = n.natural_key"
            " WHERE n.source = 'git' AND +n.kind = 'git_commit' AND n.natural_key IN ({marks})"
        )
        out: dict[str, tuple[list[str], int, int]] = {}
        for sha, listed, gen, ts in rows_in(self.conn, sql, list(dict.fromkeys(shas))):
            try:
                parents = json.loads(listed) if listed else []
            except ValueError:
                parents = []
            kept = [p for p in parents if isinstance(p, str)] if isinstance(parents, list) else []
            out[sha] = (kept, int(gen or 0), int(ts or 0))
        return out

    def release_commit(self, version: str) -> str | None:
        """The sha of the commit the tag of release VERSION names (the tag release_window starts at), None when
        no tag names VERSION."""
        tags = self._release_family(version)
        if tags is None:
            return None
        wanted, depth = version_key(version), len(version.split("."))
        return next(sha for k, _, sha in tags if k[:depth] == wanted[:depth])

    def newest_release(self, until: int | None = None) -> str | None:
        """The highest version a tag names (tagged at or before UNTIL, epoch ms, when given), None when the
        store holds no such tag. Read within the project's own (unprefixed) tags when there are any, else
        within the one family there is, else among all (tag_family)."""
        rows = self.conn.execute("SELECT name, version, ts FROM releases").fetchall()
        families: dict[str, list[str]] = {}
        for name, tagged, ts in rows:
            if until is None or ts <= until:
                families.setdefault(tag_family(name, tagged), []).append(tagged)
        if "" in families:
            versions = families[""]
        elif len(families) == 1:
            versions = next(iter(families.values()))
        else:
            versions = [v for family in families.values() for v in family]
        return max(versions, key=version_key, default=None)

    def _release_family(self, version: str) -> list[tuple[tuple[int, ...], int, str]] | None:
        """(version key, epoch ms, sha) of the tags of the family that holds VERSION (see release_window), in
        version order; None when no tag names VERSION."""
        rows = self._release_rows(version)
        return None if rows is None else [(k, ts, sha) for k, ts, sha, _ in rows]

    def _release_rows(self, version: str) -> list[tuple[tuple[int, ...], int, str, tuple[str, str]]] | None:
        """(version key, epoch ms, sha, (tag name, version)) of the tags of the family that holds VERSION (see
        release_window), in version order; None when no tag names VERSION."""
        rows = self.conn.execute("SELECT name, version, ts, sha FROM releases").fetchall()
        wanted = version_key(version)
        depth = len(version.split("."))
        families: dict[str, list[tuple[tuple[int, ...], int, str, tuple[str, str]]]] = {}
        for name, tagged, ts, sha in rows:
            families.setdefault(tag_family(name, tagged), []).append(
                (version_key(tagged), ts, sha, (name, tagged))
            )
        holding = [f for f, tags in families.items() if any(row[0][:depth] == wanted[:depth] for row in tags)]
        if not holding:
            return None
        if "" in holding:
            tags = families[""]
        elif len(holding) == 1:
            tags = families[holding[0]]
        else:
            tags = [tag for family in families.values() for tag in family]
        return sorted(tags)
