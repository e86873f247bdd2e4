"""Releases: the version tags the last sync read (nexusmem.sources.git.releases hands them over through the
sync), and the window of time a version names. Mixed into Store (which provides `conn`)."""

from __future__ import annotations

import heapq
import json
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from nexusmem.store.batch import rows_in
from nexusmem.store.hookreads import cursor as read_cursor

# A pre- or post-release after the numbers ("-alpha.1", "rc1", ".post0", ".dev2"), and where each stands
# against the final release (PEP 440: 1.0.dev0 < 1.0a1 < 1.0b1 < 1.0rc1 < 1.0 < 1.0.post0; semver's
# 2.0.0-alpha.1 < 2.0.0-beta.1 < 2.0.0-rc.1 < 2.0.0).
_SUFFIX = re.compile(r"[-.]?(alpha|beta|preview|pre|rc|dev|post|a|b|c)[.-]?(\d*)", re.IGNORECASE)
_STAGES = {"dev": -4, "alpha": -3, "a": -3, "beta": -2, "b": -2, "rc": -1, "c": -1, "pre": -1, "preview": -1}


def version_key(version: str) -> tuple[int, ...]:
    """ "1.2" → (1, 2, 0, 0, 0, 0): versions compare by number, and "1.2" is "1.2.0"; the last two say a pre-
    or post-release ("2.0.0-alpha.1" → (2, 0, 0, 0, -3, 1), "2.9.0.post0" → (2, 9, 0, 0, 1, 0))."""
    numbers = re.match(r"\d+(?:\.\d+)*", version)
    head = numbers.group(0) if numbers else "0"
    parts = [int(p) for p in head.split(".")[:4]]
    stage, count = 0, 0
    suffix = _SUFFIX.fullmatch(version[len(head) :]) if numbers and version[len(head) :] else None
    if suffix is not None:
        stage = _STAGES.get(suffix.group(1).lower(), 1)
        count = int(suffix.group(2) or 0)
    return tuple(parts + [0] * (4 - len(parts)) + [stage, count])


def names_version(key: tuple[int, ...], version: str) -> bool:
    """Whether a tag of version KEY is release VERSION: its numbers as far as VERSION gives them ("1.1" names
    1.1.0 and 1.1.3), and the same pre- or post-release, or none ("2.9.0" is not 2.9.0.post0)."""
    wanted = version_key(version)
    numbers = re.match(r"\d+(?:\.\d+)*", version)
    depth = min(4, len(numbers.group(0).split("."))) if numbers else 4
    return key[:depth] == wanted[:depth] and key[4:] == wanted[4:]


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
# The version a changelog section's heading names: its first dotted number, with what follows it up to a space
# or a bracket ("1.0.0-rc.1", "2.9.0.post0"; version_key reads what it can of that).
_HEADING_VERSION = re.compile(r"(?<![\w.])[vV]?(\d+(?:\.\d+)+[\w.-]*)")


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
    # No lower version is tagged, nor heads a changelog section (the first release): SHAS is the history up to
    # the tag (`git log NAME`).
    first: bool = False


def _depth(version: str) -> int:
    """How many numbers VERSION gives ("1.1" → 2, "2.0.0-alpha.1" → 3)."""
    numbers = re.match(r"\d+(?:\.\d+)*", version)
    return min(4, len(numbers.group(0).split("."))) if numbers else 4


def _line_next(
    tags: list[tuple[tuple[int, ...], int, str]], at: int, depth: int, held: Callable[[str], bool]
) -> tuple[tuple[int, ...], int, str] | None:
    """The release after TAGS[AT] (version key, epoch ms, sha; in version order) on its line: the first one
    tagged after it among the higher versions of the same major; when there is none, and its commit is in
    memory (HEAD's history, where the next major follows), the first one tagged after it among the higher
    versions whose commit is in memory too (HELD: sha -> bool). A backport's tag (6.5.8 on a maintenance
    branch, tagged two years after 7.0.0) is not closed by a higher version tagged before it."""
    key, start, sha = tags[at]
    # A full version is followed by its post-release too (2.9.0 by 2.9.0.post0); "1.1" by 1.2, not 1.1.3.
    later = [t for t in tags if (t[0] > key if depth >= 3 else t[0][:depth] > key[:depth]) and t[1] > start]
    same = [t for t in later if t[0][0] == key[0]]
    if not same and held(sha):
        same = [t for t in later if held(t[2])]
    return min(same, key=lambda t: (t[1], t[0])) if same else None


def _by_version(
    rows: list[tuple[tuple[int, ...], int, str, tuple[str, str]]],
) -> list[list[tuple[tuple[int, ...], int, str, tuple[str, str]]]]:
    """ROWS grouped by version, highest first; within one, the earliest tagged first."""
    groups: dict[tuple[int, ...], list[tuple[tuple[int, ...], int, str, tuple[str, str]]]] = {}
    for row in sorted(rows, key=lambda row: (row[0], row[1])):
        groups.setdefault(row[0], []).append(row)
    return [groups[key] for key in sorted(groups, reverse=True)]


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
        at = next(n for n, (k, _, _) in enumerate(tags) if names_version(k, version))
        following = _line_next(tags, at, _depth(version), self.commit_held)
        return tags[at][1], (following[1] if following is not None else None)

    def release_after(self, version: str) -> str | None:
        """The version of the release that closes VERSION's window (release_window), None when there is none
        (or no tag names VERSION)."""
        rows = self._release_rows(version)
        if rows is None:
            return None
        tags = [(k, ts, sha) for k, ts, sha, _ in rows]
        at = next(n for n, (k, _, _) in enumerate(tags) if names_version(k, version))
        following = _line_next(tags, at, _depth(version), self.commit_held)
        return next((v for k, ts, sha, (_, v) in rows if (k, ts, sha) == following), None)

    def commit_held(self, sha: str) -> bool:
        """Whether memory holds commit SHA (a commit HEAD reached at a sync)."""
        row = self.conn.execute(
            "SELECT 1 FROM nodes WHERE source = 'git' AND natural_key = ? AND +kind = 'git_commit' LIMIT 1",
            (sha,),
        ).fetchone()
        return row is not None

    def release_range(self, version: str, base: str | None = None) -> ReleaseRange | None:
        """The commits release VERSION brought: those its tag reaches and the previous release's tag does
        not, as `git log PREVIOUS..VERSION` lists them, read from the parents memory records (no git on a
        question's path). The previous release is BASE when given (its tag must be in memory), else the
        highest version below VERSION whose tag VERSION's reaches, whenever that tag was made (a tag made
        again later on an old commit still names it), looked for in VERSION's family of tags, then among
        all (PREVIOUS_TRIES versions tried). Two tags of one version (`parent-1.12.0`, `moshi-parent-1.12.0`)
        are one release: of VERSION, the earliest commit; of an earlier one, the tag VERSION's reaches. When
        no BASE is given and no lower version is tagged at all, nor heads a changelog's section, VERSION is
        the first release: every commit its tag reaches (`git log VERSION`, MAX_RANGE_WALK at most), FIRST
        set. None when no tag names VERSION."""
        rows = self._release_rows(version)
        if rows is None:
            return None
        mine = [row for row in rows if names_version(row[0], version)]
        own = [row for row in mine if row[0] == mine[0][0]]
        held = self._commit_graph([row[2] for row in own])
        if not held:
            _, _, sha, (name, _) = own[0]
            return ReleaseRange(version, name, sha, held=False)
        _, _, sha, (name, _) = min(
            (row for row in own if row[2] in held), key=lambda row: (held[row[2]][1], held[row[2]][2], row[1])
        )
        key = own[0][0]
        if base is not None:
            tries = [[row for row in (self._release_rows(base) or []) if names_version(row[0], base)]]
            tries = [[row for row in tries[0] if row[0] == tries[0][0][0]]] if tries[0] else []
        else:
            everyone = sorted(self._all_release_rows())
            tries = _by_version([row for row in rows if row[0] < key])
            seen = {row[0] for group in tries for row in group}
            tries += _by_version([row for row in everyone if row[0] < key and row[0] not in seen])
        if base is None and not any(tries) and not any(v < key for v in self._changelog_versions()):
            # The first release: no lower version is tagged or has a changelog heading (an older release made
            # before the project tagged any), so it brought everything before its tag.
            shas, _, truncated = self._walk(sha, None)
            return ReleaseRange(version, name, sha, True, shas=tuple(shas), truncated=truncated, first=True)
        walked = 0
        for group in tries:
            if walked >= PREVIOUS_TRIES:
                break
            candidates = [row for row in group if row[2] != sha and self.commit_held(row[2])]
            if not candidates:
                continue
            walked += 1
            for _, _, below, (below_name, below_version) in candidates:
                shas, reached, truncated = self._walk(sha, below)
                if reached or (base is not None and below == candidates[-1][2]):
                    return ReleaseRange(
                        version, name, sha, True, below_version, below_name, tuple(shas), truncated
                    )
        return ReleaseRange(version, name, sha, held=True)

    def range_since(self, version: str) -> ReleaseRange | None:
        """The commits made since release VERSION: those HEAD (as the last sync read it) reaches and VERSION's
        tag does not (`git log VERSION..HEAD`), as a ReleaseRange named "HEAD" whose BASE is VERSION. None when
        no tag names VERSION or memory does not know HEAD; HELD False when VERSION's tag is not in memory."""
        rows = self._release_rows(version)
        head = self._head()
        if rows is None or head is None:
            return None
        own = [row for row in rows if names_version(row[0], version)]
        own = [row for row in own if row[0] == own[0][0]]
        for _, _, sha, (name, tagged) in own:
            if self.commit_held(sha):
                shas, reached, truncated = self._walk(head, sha)
                if reached or sha == own[-1][2]:
                    return ReleaseRange("HEAD", "HEAD", head, True, tagged, name, tuple(shas), truncated)
        return ReleaseRange("HEAD", "HEAD", head, held=False, base=own[0][3][1], base_name=own[0][3][0])

    def releases_within(self, shas: Iterable[str]) -> list[str]:
        """The versions whose tag names one of SHAS (a range's commits), lowest first, each once."""
        wanted = set(shas)
        found = {
            tagged
            for _, tagged, _, sha in self.conn.execute("SELECT name, version, ts, sha FROM releases")
            if sha in wanted
        }
        return sorted(found, key=version_key)

    def releases_above(self, version: str) -> list[tuple[str, str]]:
        """(version, sha) of the tags of VERSION's family (see release_window) naming a higher version than
        VERSION, lowest first; [] when no tag names VERSION."""
        rows = self._release_rows(version) or []
        key = version_key(version)
        above = {tagged: sha for k, _, sha, (_, tagged) in rows if k > key and not names_version(k, version)}
        return sorted(above.items(), key=lambda row: version_key(row[0]))

    def releases_between(self, found: ReleaseRange) -> list[str]:
        """The releases tagged on the commits of FOUND (a release's range, `git log BASE..NAME`) other than
        its own and its base: those of its tag's family (tag_family), highest version first, each once (what
        a question across several releases, "between 1.2.0 and 1.4.0", asks the entries of besides 1.4.0's)."""
        rows = self.conn.execute("SELECT name, version, sha FROM releases").fetchall()
        family = next((tag_family(name, tagged) for name, tagged, _ in rows if name == found.name), None)
        wanted = set(found.shas)
        ends = {version_key(found.version), version_key(found.base or found.version)}
        found_versions = {
            tagged
            for name, tagged, sha in rows
            if sha in wanted and tag_family(name, tagged) == family and version_key(tagged) not in ends
        }
        return sorted(found_versions, key=version_key, reverse=True)

    def _changelog_versions(self) -> list[tuple[int, ...]]:
        """The version keys the changelog entries' top headings name ("1.0.0 - 2024-01-01", "Version 1.0.0",
        "[v1.0.0]"), each once: the releases a changelog knows, tagged or not."""
        rows = self.conn.execute(
            "SELECT DISTINCT substr(ref, instr(ref, '#') + 1) FROM nodes"
            " WHERE source = 'changelog' AND +kind = 'doc_section'"
        ).fetchall()
        keys = set()
        for (heading,) in rows:
            found = _HEADING_VERSION.search(str(heading).split(" › ", 1)[0])
            if found is not None:
                keys.add(version_key(found.group(1)))
        return list(keys)

    def _head(self) -> str | None:
        """The commit HEAD named at the last sync of the git source (its cursor ends in it), if memory holds it."""
        cursor = read_cursor(self.conn, "git")
        sha = (cursor or "").rsplit(":", 1)[-1]
        return sha if re.fullmatch(r"[0-9a-f]{40}", sha) and self.commit_held(sha) else None

    def _all_release_rows(self) -> list[tuple[tuple[int, ...], int, str, tuple[str, str]]]:
        return [
            (version_key(tagged), ts, sha, (name, tagged))
            for name, tagged, ts, sha in self.conn.execute("SELECT name, version, ts, sha FROM releases")
        ]

    def _walk(self, tip: str, base: str | None) -> tuple[list[str], bool, bool]:
        """(the commits TIP reaches and BASE does not (every one TIP reaches when BASE is None), highest
        generation first; whether TIP reaches BASE; whether the walk stopped at MAX_RANGE_WALK), read from
        the parents memory records. Walked as git paints a range: highest generation first, each commit
        carrying the marks of the tips that reach it, until no commit only TIP reaches is left to read (an
        ancestor's generation is always lower, so a commit is read after every one that reaches it)."""
        TIP, BASE = 1, 2
        ends = [tip] if base is None else [tip, base]
        info = self._commit_graph(ends)
        flags = {tip: TIP}
        if base is not None:
            flags[base] = flags.get(base, 0) | BASE
        heap: list[tuple[int, int, str]] = []
        for sha in dict.fromkeys(ends):
            if sha in info:
                heapq.heappush(heap, (-info[sha][1], -info[sha][2], sha))
        queued = {sha for _, _, sha in heap}
        out: list[str] = []
        while heap and any(flags[sha] == TIP for sha in queued):
            if len(out) >= MAX_RANGE_WALK:
                return out, base is not None and bool(flags.get(base, 0) & TIP), True
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
        reached = base is not None and bool(flags.get(base, 0) & TIP)
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
        return next(sha for k, _, sha in tags if names_version(k, version))

    def newest_release(self, until: int | None = None) -> str | None:
        """The highest version a tag names (tagged at or before UNTIL, epoch ms, when given), None when the
        store holds no such tag. Read within the project's own (unprefixed) tags when there are any, else
        within the one family there is, else among all (tag_family)."""
        return max(self._own_versions(until), key=version_key, default=None)

    def first_release(self, until: int | None = None) -> str | None:
        """The lowest version a tag names (tagged at or before UNTIL when given), read as newest_release reads
        the highest; None when the store holds no such tag."""
        return min(self._own_versions(until), key=version_key, default=None)

    def _own_versions(self, until: int | None) -> list[str]:
        """The versions the project's own tags name (see newest_release), tagged at or before UNTIL when given."""
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
        return versions

    def _release_family(self, version: str) -> list[tuple[tuple[int, ...], int, str]] | None:
        """(version key, epoch ms, sha) of the tags of the family that holds VERSION (see release_window), in
        version order; None when no tag names VERSION."""
        rows = self._release_rows(version)
        return None if rows is None else [(k, ts, sha) for k, ts, sha, _ in rows]

    def _release_rows(self, version: str) -> list[tuple[tuple[int, ...], int, str, tuple[str, str]]] | None:
        """(version key, epoch ms, sha, (tag name, version)) of the tags of the family that holds VERSION (see
        release_window), in version order; None when no tag names VERSION."""
        rows = self.conn.execute("SELECT name, version, ts, sha FROM releases").fetchall()
        families: dict[str, list[tuple[tuple[int, ...], int, str, tuple[str, str]]]] = {}
        for name, tagged, ts, sha in rows:
            families.setdefault(tag_family(name, tagged), []).append(
                (version_key(tagged), ts, sha, (name, tagged))
            )
        holding = [f for f, tags in families.items() if any(names_version(row[0], version) for row in tags)]
        if not holding:
            return None
        if "" in holding:
            tags = families[""]
        elif len(holding) == 1:
            tags = families[holding[0]]
        else:
            tags = [tag for family in families.values() for tag in family]
        return sorted(tags)
