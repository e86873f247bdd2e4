"""Cross-project recall: one query over every registered project's own database, fused by rank.

Each project ranks its own candidates (its own reference time, its own priors) exactly as a single-project
query does; the per-project ranked lists are then fused with RRF on positions only, because a BM25 cost is
computed against its own corpus and means different things in a 50-node and a 50,000-node database. A
project whose own answer is weak (it alone would say "No strong match") keeps only its first item, after the
items of the projects whose answer is strong (weak_behind). What a project's rules listed in time order
goes first, newest first across projects, then what a project's rules put first (a sha's commit, a release's
entries, the commands run next: pinned_first), in its order, each with its project's note (project_notes).
The fused order is packed into the budget like any other query, and a linked fix rides along from the store of
the project that recorded the link.

Databases stay per project and are opened read-only: a query never writes another project's memory (the
MCP server, like a sync, stores each project's commands run since its last sync before it searches). A
registered project whose database is missing or unreadable is reported and skipped; the registry is an
index, not a source of truth, so it is never pruned here (an unmounted drive is not a deleted project).
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from nexusmem import paths, registry
from nexusmem.errors import NexusMemError
from nexusmem.retrieve import answer, fuse, history, order, query, rank
from nexusmem.retrieve.question import prepare
from nexusmem.store import StoredNode, health, open_store
from nexusmem.store.interface import SearchStore
from nexusmem.store.migrations import LATEST as SCHEMA_LATEST


@dataclass(frozen=True)
class Target:
    """One project to search: its display name, its work-tree root and its database; LABEL, when another
    project searched has the same name, the tag its items get instead (`labelled`); CURRENT: the repository
    the question was asked in."""

    name: str
    root: str
    db: Path
    label: str = ""
    current: bool = False


@dataclass(frozen=True)
class Skipped:
    """A project that could not be searched, and why (reported, never pruned)."""

    name: str
    root: str
    db: str
    reason: str


@dataclass
class MultiResult(answer.QueryResult):
    """A QueryResult over several projects, plus the projects that were skipped."""

    skipped: list[Skipped] = field(default_factory=list)
    skipped_notes: list[str] = field(default_factory=list)  # one line per skipped project (stderr / appended)
    roots: list[str] = field(default_factory=list)  # beside `projects` (names), in the same order
    labels: list[str] = field(default_factory=list)  # and how the text names each (`labelled`)


@dataclass
class _Searched:
    """One project's ranked candidates, and its shelf: what packing needs to render and link them."""

    index: int
    target: Target
    store: SearchStore
    scored: list[tuple[StoredNode, float]]
    shelf: answer.Shelf
    weak: bool = False
    # What its rules listed in time order (the failures or the newest work of the question's time).
    listing: frozenset[str] = frozenset()
    listing_note: str | None = None
    # The ids its search matched (counted among its matches): a linked fix among them is not counted again.
    matched: frozenset[str] = frozenset()
    # The entries of the release it asks about, packed all (query.Retrieved.whole).
    whole: frozenset[str] = frozenset()
    # What its rules put first, in their order (query.Retrieved.pinned), and the share of the question's
    # weight no node of its holds (query.Strength.missing): of several projects' pinned items, those of the
    # project that holds more of the question come first.
    pinned: tuple[str, ...] = ()
    unheld: float = 0.0
    # How many of the newest its question asked for ("my last 3 commits"; query.Retrieved.listing_count).
    listing_count: int | None = None
    # What its own answer says besides its listing's note (a rule's "first: ...", HEAD moved since its sync).
    notes: list[str] = field(default_factory=list)
    # The commands the hooks logged in it since its last sync, not searched (catchup.unsynced_commands;
    # catchup.BACKLOG: too many to count): counted only when asked (search_all's UNSYNCED).
    unsynced: int = 0
    # The note that its vectors were not searched although its config names an embedder, and why
    # (question.Question.semantic_skipped).
    semantic_skipped: str | None = None
    # What the release it asks about holds (query.Retrieved.release).
    release: frozenset[str] = frozenset()


def searched_from(index: int, target: Target, store: SearchStore, found: query.Retrieved) -> _Searched:
    """One store's answer (FOUND, by query.retrieve) made ready to fuse: its links and its shelf."""
    links = history.links_of(store, [n for n, _ in found.scored])
    # Sibling groups (chunks of one file or reply) are per store.
    shelf = answer.Shelf(
        target.name,
        store,
        [n.id for n, _ in found.scored],
        links,
        group_prefix=f"{index}:",
        root=target.root,
        label=target.label,
    )
    return _Searched(
        index,
        target,
        store,
        found.scored,
        shelf,
        query.is_weak(found),
        found.listing,
        found.listing_note,
        found.counted,
        found.whole,
        found.pinned,
        query.strength(found).missing if found.pinned else 0.0,
        listing_count=found.listing_count,
        notes=[note for note in found.question.notes if note != found.listing_note],
        semantic_skipped=found.question.semantic_skipped,
        release=found.release,
    )


def _current_target(start: Path | None) -> Target | None:
    """The repository containing START when it has a memory; None when START is not in one (that is fine:
    cross-project recall does not need a current project)."""
    if start is None:
        return None
    try:
        root = paths.repo_root(start)
    except NexusMemError:
        return None
    db = paths.db_path(root)
    if not db.exists():
        return None
    return Target(name=root.name, root=str(root), db=db)


def targets(current: Path | None) -> list[Target]:
    """The projects a cross-project query searches: the current one first (registered or not), then every
    registered project in registry order, each database once."""
    found: list[Target] = []
    here = _current_target(current)
    registered = registry.load()
    if here is not None:
        # The registry's name wins for the current project too, so its tag is the same from anywhere.
        entry = next((p for p in registered if str(p.get("root")) == here.root), None)
        if entry is not None and entry.get("name"):
            here = Target(name=str(entry["name"]), root=here.root, db=here.db)
        found.append(replace(here, current=True))
    for entry in registered:
        root = str(entry["root"])
        db = Path(str(entry["db"])) if entry.get("db") else paths.db_path(Path(root))
        name = str(entry.get("name") or Path(root).name)
        found.append(Target(name=name, root=root, db=db))
    unique: list[Target] = []
    seen: set[str] = set()
    for target in found:
        key = _db_key(target.db)
        if key not in seen:
            seen.add(key)
            unique.append(target)
    return unique


def labelled(found: list[Target]) -> list[Target]:
    """FOUND with a label on each project whose name another one has: the name, then the folders above its
    root below those the projects of that name share (`/src/a/dotenv` and `/src/b/x/dotenv`: "dotenv (a)"
    and "dotenv (b/x)"; the whole path of that folder when it is the one they share: "dotenv (/src)"), so
    that the text's project tags and scope line name each project once."""
    by_name: dict[str, list[int]] = {}
    for index, target in enumerate(found):
        by_name.setdefault(target.name, []).append(index)
    out = list(found)
    for name, indexes in by_name.items():
        if len(indexes) < 2:
            continue
        parents = [Path(found[i].root).parent for i in indexes]
        shared = 0  # how many leading folders all of them have
        while all(len(p.parts) > shared and p.parts[shared] == parents[0].parts[shared] for p in parents):
            shared += 1
        for index, parent in zip(indexes, parents):
            below = parent.parts[shared:]
            where = Path(*below).as_posix() if below else parent.as_posix()
            out[index] = replace(found[index], label=f"{name} ({where})")
    return out


def _db_key(db: Path) -> str:
    try:
        return str(db.resolve())
    except OSError:
        return str(db)


def _skip(target: Target, reason: str) -> Skipped:
    return Skipped(name=target.name, root=target.root, db=str(target.db), reason=reason)


def untrusted(db: Path) -> str | None:
    """Why DB must not be searched on this user's behalf, or None: a database (or its directory, or its
    write-ahead log) owned by another user or writable by everyone could hold anything that user wrote into
    it, and a cross-project answer would present that as this user's own history. POSIX only."""
    getuid = getattr(os, "getuid", None)
    if getuid is None:
        return None
    uid = getuid()
    for path in (db.parent, db, db.with_name(db.name + "-wal")):
        try:
            st = os.stat(path)
        except FileNotFoundError:
            continue
        except OSError as exc:
            return f"cannot check who owns {path}: {exc.strerror or exc}"
        if st.st_uid != uid:
            return f"not searched: {path} belongs to another user (uid {st.st_uid})"
        if st.st_mode & stat.S_IWOTH:
            return f"not searched: {path} is writable by every user (chmod o-w to trust it)"
    return None


@dataclass(frozen=True)
class _Filters:
    as_of: int | None = None
    since: int | None = None
    until: int | None = None
    author: str | None = None


def unsynced_note(searched: Sequence[_Searched]) -> str | None:
    """A note for the answer naming the projects of SEARCHED whose commands logged since their last sync were
    not searched, and how many ("3 newer command(s) run in here (1), there (2) are not synced yet, ..."), as a
    one-project `query` says it of its own; None when there are none."""
    from nexusmem.catchup import BACKLOG

    held = [s for s in searched if s.unsynced]
    if not held:
        return None
    named = ", ".join(
        f"{s.target.label or s.target.name} ({'many' if s.unsynced == BACKLOG else s.unsynced})" for s in held
    )
    many = any(s.unsynced == BACKLOG for s in held)
    count = "many" if many else str(sum(s.unsynced for s in held))
    fix = "run `nexusmem sync` in each" if len(held) > 1 else "run `nexusmem sync` there"
    return f"{count} newer command(s) run in {named} are not synced yet, so not searched: {fix}"


def _settings_of(target: Target) -> rank.Settings:
    """The project's own `ranking` settings; the defaults when its config cannot be read (its search
    still runs: a config problem is reported by that project's own commands)."""
    try:
        from nexusmem import project

        # config_of: the question goes to the embedder of a config its user stands behind.
        return rank.settings_from(project.config_of(Path(target.root)))
    except NexusMemError:
        return rank.DEFAULT


def _missing(target: Target) -> str:
    """Why TARGET's database is not there: `git stash --all` took it (which entry to pop, as its own commands
    say), or it is gone."""
    from nexusmem import paths

    root = Path(target.root)
    try:
        stashed = paths.stashed_memory(root) if root.is_dir() else None
    except (NexusMemError, OSError):
        stashed = None
    return paths.stashed_text(root, stashed) if stashed is not None else f"database missing: {target.db}"


def _search_one(
    index: int,
    target: Target,
    text: str,
    filters: _Filters,
    vectors: bool,
    stack: ExitStack,
    unsynced: bool = False,
) -> tuple[_Searched | None, dict[str, int], Skipped | None]:
    if not target.db.exists():
        return None, {}, _skip(target, _missing(target))
    distrust = untrusted(target.db)
    if distrust is not None:
        return None, {}, _skip(target, distrust)
    if health.holds_nothing(target.db):  # opened, it would be set up again empty (project.refuse_cut_short)
        return None, {}, _skip(target, f"empty database (0 bytes): {target.db}")
    try:
        from nexusmem import project  # a migration opening it may re-key projects.json entries too

        store = stack.enter_context(project.opened(open_store(target.db, readonly=True)))
        version = store.schema_version()
        if version > SCHEMA_LATEST:
            reason = f"database schema version {version} is newer than this NexusMem ({SCHEMA_LATEST})"
            return None, {}, _skip(target, reason)
        found = query.retrieve(
            store,
            text,
            as_of=filters.as_of,
            since=filters.since,
            until=filters.until,
            vectors=vectors,
            author=filters.author,
            settings=_settings_of(target),
            project=target.name,
        )
        searched = searched_from(index, target, store, found)
        if unsynced:
            from nexusmem import catchup

            searched.unsynced = catchup.unsynced_at(Path(target.root), store)
        if target.current:  # as its own answer says them
            searched.notes += [
                note
                for note in (
                    query.head_note(store, Path(target.root)),
                    query.unfinished_note(Path(target.root)),
                )
                if note
            ]
    except NexusMemError as exc:
        return None, {}, _skip(target, str(exc))
    except Exception as exc:
        # A broken file surfaces as the SQLite driver's own error (not a StoreError) on the first read past
        # the header: one project's damage must not take down the others' answer. It is reported, not hidden.
        return None, {}, _skip(target, f"cannot read the memory database: {type(exc).__name__}: {exc}")
    return searched, found.counts, None


def scope_line(names: list[str]) -> str:
    return f"scope   {len(names)} project(s): {', '.join(names)}"


def search_all(
    text: str,
    *,
    current: Path | None = None,
    budget: int = query.DEFAULT_BUDGET,
    as_of: int | None = None,
    since: int | None = None,
    until: int | None = None,
    vectors: bool = True,
    author: str | None = None,
    skipped_in_answer: bool = False,
    unsynced: bool = False,
) -> MultiResult:
    """Answer TEXT from every registered project (and CURRENT's repository, registered or not) within BUDGET.

    Each project's ranked list counts by position only (RRF, K = 60); ties between equal positions go to the
    higher within-project score, then to the project listed first, then to the node id, so the same stores
    and query give the same bytes. An item's score is its fused score. AS_OF and the SINCE/UNTIL window
    apply to every project. The answer is weak when no project's best candidates match the question well.
    Skipped projects are listed in `skipped_notes` (the CLI prints them on stderr); SKIPPED_IN_ANSWER (MCP,
    which has no stderr) also names each in a short note inside the answer and its budget (after the footer
    when the budget cannot hold it: answer.left_out). UNSYNCED (`query --all-projects`, which does not store
    them first as MCP does: a cold query's budget) says in a note how many commands the hooks logged in each
    project since its last sync were not searched (unsynced_note).
    """
    asked = prepare(text)
    author, named = query.asked_author(asked.text, author)
    result = MultiResult(query=asked.text, budget=budget, notes=[*named, *asked.notes], query_cut=asked.cut)
    filters = _Filters(as_of, since, until, author)
    with ExitStack() as stack:
        searched: list[_Searched] = []
        counted: list[dict[str, int]] = []
        for target in labelled(targets(current)):
            one, counts, skipped = _search_one(len(searched), target, text, filters, vectors, stack, unsynced)
            if skipped is not None:
                result.skipped.append(skipped)
                continue
            assert one is not None
            searched.append(one)
            result.projects.append(target.name)
            result.roots.append(target.root)
            result.labels.append(target.label or target.name)
            counted.append(counts)
        result.matched, result.bm25_matched, result.vector_matched = distinct_counts(searched, counted)
        result.weak = all(s.weak for s in searched)
        if skipped_in_answer:
            # The reason itself (the holder of a lock, the stash entry to pop, a newer schema): it said only
            # "`nexusmem doctor` in ROOT says why", of a folder a move may have taken away.
            result.notes += [
                f"skipped {s.name}: its memory was not searched: {s.reason}" for s in result.skipped
            ]
        behind = unsynced_note(searched)
        if behind:  # a line of the header: packed within the budget
            result.notes.append(behind)
        _fuse_and_pack(
            result, searched, text, budget, filters.as_of, filters.since, filters.until, filters.author
        )
        if (
            searched
            and not result.items
            and not result.matched
            and (as_of, since, until, author) != (None,) * 4
            and (
                (as_of, since, until) != (None,) * 3
                or not any(n.startswith(query.NO_COMMANDS_BY) for n in result.notes)
            )
        ):
            result.notes.append(query.filtered_out_note(since, until, author, as_of=as_of))
    result.skipped_notes = [f"skipped {s.name} ({s.root}): {s.reason}" for s in result.skipped]
    return result


def distinct_counts(searched: list[_Searched], counts: list[dict[str, int]]) -> tuple[int, int, int]:
    """(matched, bm25, vector): how many nodes the searches of SEARCHED matched in all, COUNTS[i] being what
    SEARCHED[i]'s counted, so that a node two stores hold (clones of one repository, this memory and the
    team store) counts once. Of a store's matches only its candidates' ids are known: those a store before
    it holds were counted there (the same node matches the same question), and the rest of its matches (past
    the candidate cut, and its lexical and vector tallies) are taken to be counted already in that share.
    Stores that hold the same history count it once; stores that share no node add up."""
    seen: set[str] = set()
    matched = bm25 = vector = 0.0
    for index, (one, count) in enumerate(zip(searched, counts)):
        ids = one.matched | {node.id for node, _ in one.scored}
        unseen = sorted(ids - seen)
        for before in searched[:index]:  # a candidate another store holds but did not rank (its cut, ties)
            if unseen:
                have = before.store.get_many(unseen, light=True)
                unseen = [node_id for node_id in unseen if node_id not in have]
        held = len(ids) - len(unseen)  # counted already, by a store before
        share = 1 - held / len(ids) if ids else 1.0
        past_cut = max(0, count["matched"] - len(ids))
        matched += max(0.0, count["matched"] - held - past_cut * (1 - share))
        bm25 += count["bm25"] * share
        vector += count["vector"] * share
        seen |= ids
    return round(matched), round(bm25), round(vector)


def weak_behind(searched: list[_Searched]) -> dict[int, int]:
    """For each project whose own answer is weak ("No strong match") while another project's is strong, its
    index -> how many of its first items are fused (ranked below every item of the strong ones): its first
    alone, or none when it asked for the work (or the failures) of a time and held none while another
    project listed some ("what was I doing yesterday": its closest items only share the word "doing"). Rank
    1 is worth the same in every list, so a project with nothing to say took the top places beside the one
    that answers the question. When every project is weak, none is put behind (the answer is weak, as each
    is)."""
    if all(s.weak for s in searched):
        return {}
    listed = any(s.listing for s in searched)
    return {
        s.index: 0 if listed and s.listing_note is not None and not s.listing else 1
        for s in searched
        if s.weak
    }


def project_notes(
    searched: list[_Searched],
    behind: dict[int, int],
    said: list[str],
    leading: dict[str, list[str]] | None = None,
) -> list[str]:
    """Each project's own notes (a rule's "first: commit ...", HEAD moved since its sync) that SAID does not
    hold, each once, those of the projects whose items a rule put first in the order those items come
    (pinned_first), then the others' in project order: named by the projects that say it when more than one
    project has a note, unless every project searched says it. LEADING (note → the projects that say it:
    the merged listing note) comes first and counts among them. A project put behind with no item
    (weak_behind) says none."""
    saying: dict[str, list[str]] = {note: list(names) for note, names in (leading or {}).items()}
    pinning = pinned_first(searched)
    for s in [*pinning, *(s for s in searched if s not in pinning)]:
        if behind.get(s.index, 1) == 0:
            continue
        for note in s.notes:
            if note not in said:
                names = saying.setdefault(note, [])
                if (s.target.label or s.target.name) not in names:
                    names.append(s.target.label or s.target.name)
    several = len({name for names in saying.values() for name in names}) > 1
    return [
        f"{', '.join(names)}: {note}" if several and len(names) < len(searched) else note
        for note, names in saying.items()
    ]


def semantic_notes(searched: list[_Searched]) -> list[str]:
    """One note for each note the projects searched by their words alone give (query.semantic_note), naming
    them unless every project searched gives it; said after the projects' own notes."""
    saying: dict[str, list[str]] = {}
    for s in searched:
        if s.semantic_skipped:
            saying.setdefault(s.semantic_skipped, []).append(s.target.label or s.target.name)
    return [
        f"{', '.join(names)}: {note}" if len(names) < len(searched) else note
        for note, names in saying.items()
    ]


# How activity.activity_first says what it listed: "first: the newest commits and commands run yesterday".
_ACTIVITY_NOTE = re.compile(r"^first: the newest (?:commits and commands run|commits|commands run)(?=\s|$)")


def merged_listing_note(note: str, listed: list[StoredNode]) -> str:
    """NOTE, one project's note on what it listed by time, worded for LISTED, the list merged from every
    project's: "what was I doing yesterday" was said to list "the newest commands run yesterday" (the first
    project's list) while the merged list held other projects' commits."""
    kinds = {node.kind for node in listed}
    if not listed or not _ACTIVITY_NOTE.match(note) or not kinds <= {"git_commit", "shell_command"}:
        return note
    what = "commits" if "git_commit" in kinds else "commands run"
    if len(kinds) > 1:
        what = "commits and commands run"
    return _ACTIVITY_NOTE.sub(f"first: the newest {what}", note, count=1)


def pinned_first(searched: list[_Searched]) -> list[_Searched]:
    """The projects whose rules put items first, in the order their items come: the project that holds more
    of the question's words first ("what did I run after the sendfile tests failed": the project where a
    sendfile test failed, not one where some test did), then in project order."""
    return sorted((s for s in searched if s.pinned), key=lambda s: (round(s.unheld, 9), s.index))


def _fused_part(s: _Searched, behind: dict[int, int]) -> list[tuple[StoredNode, float]]:
    """What of S's ranked list is fused: its first items alone (weak_behind) when it is put BEHIND."""
    return s.scored[: behind[s.index]] if s.index in behind else s.scored


Entry = tuple[float, float, int, str, StoredNode]  # (fused score, own score, list index, node id, node)


def _scored_below(entries: list[Entry], behind: dict[int, int]) -> list[Entry]:
    """ENTRIES (in their final order) with each item of a project put BEHIND scored below the last strong
    item, in order: an item's score says its place."""
    floor = min((e[0] for e in entries if e[2] not in behind), default=None)
    if floor is None or not behind:
        return entries
    out: list[Entry] = []
    step = 0
    for entry in entries:
        if entry[2] in behind:
            step += 1
            entry = (floor * 0.99**step, *entry[1:])
        out.append(entry)
    return out


def _merged_listings(searched: list[_Searched], listed: list[Entry]) -> list[Entry]:
    """LISTED (the entries of the projects' listings) newest first across the projects, each project's in the
    order its rules listed them: of the projects' next items, the newest goes next. A listing of failures each
    followed by its fixes (runs.fixes_first: failure, the commit, the passing re-run) stays one failure with
    its fixes after it, and so keeps the fixes' links (pack marks a fix only after its failure): sorted by
    time alone, `what fixed the failing test` listed the re-run, then the commit, then the failure, unlinked.
    For a listing newest first this is the newest first of all."""
    place = {(s.index, node.id): k for s in searched for k, (node, _) in enumerate(s.scored)}
    queues: dict[int, list[Entry]] = {}
    for entry in sorted(listed, key=lambda e: place.get((e[2], e[3]), len(place))):
        queues.setdefault(entry[2], []).append(entry)
    merged: list[Entry] = []
    heads = dict.fromkeys(queues, 0)
    while heads:
        index = min(heads, key=lambda i: (-queues[i][heads[i]][4].ts, i, queues[i][heads[i]][3]))
        merged.append(queues[index][heads[index]])
        heads[index] += 1
        if heads[index] == len(queues[index]):
            del heads[index]
    return merged


def _fuse_and_pack(
    result: MultiResult,
    searched: list[_Searched],
    text: str,
    budget: int,
    as_of: int | None,
    since: int | None = None,
    until: int | None = None,
    author: str | None = None,
    first: Sequence[str] = (),
    own_notes: bool = True,
    home: int | None = None,
) -> None:
    """Fuse SEARCHED's ranked lists by position and pack them into RESULT. FIRST: ids a rule put first on
    purpose (query.pinned), kept first in that order whatever their place in the other lists. OWN_NOTES:
    add each project's notes (project_notes); `query --team` says its own (this memory's, then the team's
    that do not contradict them: retrieve.team). HOME: the index of the list from this machine's memory
    (`query --team`): an item that memory holds is shown as its own (_held_at_home), wherever it ranked."""
    listed_by = [s for s in searched if s.listing]
    behind = weak_behind(searched)
    # "What failed today" across projects: one note, said once (the window is the same everywhere).
    listing_notes = [s.listing_note for s in (listed_by or searched) if s.listing_note][:1]
    # Keys are (project, node) so that each project's list is fused on its own positions.
    lists = [[f"{s.index}:{node.id}" for node, _ in _fused_part(s, behind)] for s in searched]
    fused = fuse.rrf(lists)
    entries: list[Entry] = []
    for s in searched:
        for node, own in _fused_part(s, behind):
            entries.append((fused[f"{s.index}:{node.id}"], own, s.index, node.id, node))
    entries.sort(key=lambda e: (e[2] in behind, -round(e[0], 12), -round(e[1], 9), e[2], e[3]))
    entries = _scored_below(entries, behind)
    # What a project's rules listed in time order (the failures or the newest work of a time) goes first,
    # newest first across the projects, each project's in its own order (_merged_listings): ranks would
    # interleave them by position, not by time. Then what a
    # project's rules put first (a release's entries, the commit a sha names, what was run after a command),
    # in its order: interleaved by position, another project's items came between the commands run next.
    listed = _merged_listings(searched, [e for e in entries if e[3] in searched[e[2]].listing])
    # "Show my last 3 commits": each project listed its own 3; the merged list holds the newest 3 of all (an
    # id two clones list is one item).
    count = min((s.listing_count for s in listed_by if s.listing_count is not None), default=None)
    if count is not None:
        distinct = list(dict.fromkeys(e[3] for e in listed))[:count]
        dropped = {(e[2], e[3]) for e in listed if e[3] not in distinct}
        listed = [e for e in listed if e[3] in distinct]
        entries = [e for e in entries if (e[2], e[3]) not in dropped]
    at = {(e[2], e[3]): e for e in entries}
    pinned = [
        at[(s.index, node_id)]
        for s in pinned_first(searched)
        for node_id in s.pinned
        if (s.index, node_id) in at
    ]
    listing_notes = [merged_listing_note(note, [e[4] for e in listed]) for note in listing_notes]
    if own_notes:
        # The listing note is named by the projects that listed too: "first: the failed runs of tests today"
        # and another project's "nothing recorded today matches" read as one answer contradicting itself.
        listers = [s.target.label or s.target.name for s in (listed_by or searched) if s.listing_note]
        leading = {note: listers for note in listing_notes if note not in result.notes}
        result.notes += project_notes(searched, behind, said=result.notes, leading=leading)
        result.notes += semantic_notes(searched)
    else:
        result.notes += listing_notes
    lead = listed + pinned
    if lead:
        top = entries[0][0]
        lifted = [(order.above(top, len(lead), k), *e[1:]) for k, e in enumerate(lead)]
        taken = {(e[2], e[3]) for e in lead}
        entries = lifted + [e for e in entries if (e[2], e[3]) not in taken]
    if first and entries:
        place = {node_id: k for k, node_id in enumerate(dict.fromkeys(first))}
        ahead = sorted((e for e in entries if e[3] in place), key=lambda e: (place[e[3]], e[2]))
        if ahead:
            top = entries[0][0]
            entries = [(order.above(top, len(ahead), k), *e[1:]) for k, e in enumerate(ahead)] + [
                e for e in entries if e[3] not in place
            ]

    # Two clones of one repository (or this memory and the team store) share a namespace and so node ids: an
    # item appears once, from the list that ranked it best, unless that copy has no verdict and another has
    # one: then from the first list holding a verdict (this project's own before the team's), at the place
    # that list's ranking gave it (a rejected item lower), so a teammate's verdict is seen by all who hold it.
    # A `mark-stale` mark counts as a verdict here (superseded is one the team shares).
    kept: dict[str, tuple[bool, int]] = {}  # id -> (judged, list index) of the copy shown
    for _score, _own, index, node_id, node in entries:
        judged = node.trust != "candidate" or node.superseded_by is not None
        held = kept.get(node_id)
        if held is None or (judged and (not held[0] or index < held[1])):
            kept[node_id] = (judged, index)
    owner: dict[str, _Searched] = {}
    chosen: dict[str, tuple[StoredNode, float]] = {}
    for score, _own, index, node_id, node in entries:
        if node_id not in owner and kept[node_id][1] == index:
            owner[node_id] = searched[index]
            chosen[node_id] = (node, score)
    if home is not None:
        _held_at_home(searched[home], owner, chosen)
    # A fix not itself among the candidates is read from the store of the project that recorded the link;
    # walking in fused order makes that choice deterministic when two projects link the same id.
    for node_id in chosen:
        for fix_id, _rel in owner[node_id].shelf.links.get(node_id, []):
            owner.setdefault(fix_id, owner[node_id])

    def shelf_of(node_id: str) -> answer.Shelf | None:
        proj = owner.get(node_id)
        return None if proj is None else proj.shelf

    scope = scope_line(result.labels or result.projects)
    release = frozenset().union(*(s.release for s in searched))
    result.items, used = answer.pack_items(
        chosen,
        shelf_of,
        budget=budget,
        header_cost=lambda: answer.header_tokens(result, scope),
        max_items=query.WEAK_ITEMS if result.weak else None,
        as_of=as_of,
        since=since,
        until=until,
        search_text=prepare(text).search_text,
        with_project=True,
        notes=result.notes,
        author=author,
        whole=frozenset().union(*(s.whole for s in searched)),
        make_room=lambda tokens: setattr(result, "item_room", tokens),
        release=release,
        end_line=lambda line: setattr(result, "release_end", line),
        listing=frozenset().union(*(s.listing for s in searched)),
    )
    result.packed = True
    # A fix is counted once, however many stores link it (both clones, this memory and the team store).
    counted = {node_id for s in searched for node_id in s.matched | {n.id for n, _ in s.scored}}
    for s in searched:
        result.matched += answer.linked_fixes(
            s.store, s.shelf.links, counted, as_of=as_of, since=since, until=until, author=author
        )
        counted |= {fix for pairs in s.shelf.links.values() for fix, _rel in pairs}
    result.tokens_used = used + answer.header_tokens(result, scope)


def _held_at_home(
    home: _Searched, owner: dict[str, _Searched], chosen: dict[str, tuple[StoredNode, float]]
) -> None:
    """Show the items HOME's store (this machine's memory) holds as its own, at the place the fusion gave
    them: the team store's copy of a node this memory holds was tagged `[team] [by …]` when the team's list
    ranked it best, though `show` reads it here. The team's copy stays only for a verdict this memory's copy
    lacks (a teammate's rejection, shown with who gave it)."""
    elsewhere = [node_id for node_id, searched in owner.items() if searched is not home]
    if not elsewhere:
        return
    held = home.store.get_many(elsewhere, light=True)
    mine: list[StoredNode] = []
    for node_id in elsewhere:
        node = held.get(node_id)
        if node is None:
            continue
        theirs, score = chosen[node_id]
        if (
            node.trust == "candidate"
            and node.superseded_by is None
            and (theirs.trust != "candidate" or theirs.superseded_by is not None)
        ):
            continue  # the team's verdict is what this item shows
        owner[node_id] = home
        chosen[node_id] = (node, score)
        mine.append(node)
    for src, pairs in history.links_of(home.store, mine).items():
        home.shelf.links.setdefault(src, pairs)


def to_json(result: MultiResult) -> dict[str, Any]:
    """`query --all-projects --json`: the `query --json` object of docs/contracts.md, extended (only under
    --all-projects) with `projectRoot` on every item (the root of its project: what get_memory needs to
    expand it, and what tells two projects of one name apart), `projects` (each searched project's {name,
    root}, in order) and `skipped` (each {name, root, db, reason})."""
    data = answer.to_json(result)
    for item, out in zip(result.items, data["items"]):
        out["projectRoot"] = item.project_root
    data["projects"] = [{"name": n, "root": r} for n, r in zip(result.projects, result.roots)]
    data["skipped"] = [
        {"name": s.name, "root": s.root, "db": s.db, "reason": s.reason} for s in result.skipped
    ]
    return data


def render(result: MultiResult) -> str:
    """The packed block with project tags and the scope line; skipped projects are not part of it (the CLI
    prints them on stderr, the MCP server appends them)."""
    return answer.render(result, with_project=True, scope=scope_line(result.labels or result.projects))
