"""The rules that answer a question about the project's history by what it asks, not by its words alone: what a
release holds and what changed between two, the changes of the dates it writes, the changelog entries and the
commits they describe, an upgrade guide's sections, the current docs before an older version's and the
originals before their translations, the asker's own changes, one place for each commit."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from nexusmem import authors, identity, lazyre, paths, timefmt
from nexusmem.retrieve import fuse, order, rank, search, timecue
from nexusmem.store import StoredNode
from nexusmem.store.interface import SearchStore
from nexusmem.store.releases import ReleaseRange, version_key
from nexusmem.text import words_of

# What a change made within a named release's window counts, against the same match outside it.
RELEASE_FACTOR = 4.0


def paths_listed(paths: list[str]) -> str:
    return ", ".join(paths[:STILL_IN_PATHS]) + (" …" if len(paths) > STILL_IN_PATHS else "")


def in_release(
    scored: list[tuple[StoredNode, float]], window: tuple[int, int | None]
) -> list[tuple[StoredNode, float]]:
    """SCORED with the changes made within WINDOW (after the release's tag, up to the next one's) counted
    RELEASE_FACTOR, best first again: commits, their diffs, and changelog entries (dated by the commit that
    wrote them)."""
    start, end = window
    lifted = [
        (node, value * RELEASE_FACTOR if _is_change(node) and start < node.ts <= (end or node.ts) else value)
        for node, value in scored
    ]
    return order.best_first(lifted)


def in_dates(scored: list[tuple[StoredNode, float]], dated: timecue.Dated) -> list[tuple[StoredNode, float]]:
    """SCORED with the changes made within the dates the question writes (DATED, timecue.asked_dates)
    counted RELEASE_FACTOR, as a named release's window counts them, best first again."""
    lifted = [(node, value * RELEASE_FACTOR if happened_in(node, dated) else value) for node, value in scored]
    return order.best_first(lifted)


def happened_in(node: StoredNode, dated: timecue.Dated) -> bool:
    return _is_change(node) and dated.low <= node.ts <= dated.high


def dates_missed(dated: timecue.Dated, *, held: bool, listed: bool = False) -> str:
    """The note of a question whose dates (DATED) hold none of its matches: no change at all then (HELD
    false; the changes nearest to them by date LISTED first), or none that matches."""
    if not held:
        follow = "the nearest by date follow, closest first" if listed else "the nearest follow"
        return f"no change recorded {dated.phrase}; {follow}"
    return f"nothing recorded {dated.phrase} matches the question; the closest follow"


def changes_nearest(
    store: SearchStore,
    dated: timecue.Dated,
    as_of: int | None,
    author: str | None,
    among: list[StoredNode] | None = None,
) -> list[StoredNode]:
    """The NEAREST_CHANGES commits nearest by date to DATED, a window that holds none, before it and after it,
    the closest first (ties: the earlier first), that pass the query's filters: what "what did we change in
    March 2021" lists when nothing changed that month (February 19th before May 16th). AMONG: the commits the
    question's other words matched ("… in the parser in March 2021"), when there are some."""
    if among is None:
        before = store.newest_of_kind("git_commit", 0, max(0, dated.low - 1), NEAREST_CHANGES * 2)
        after = store.oldest_of_kind("git_commit", dated.high + 1, 2**62, NEAREST_CHANGES * 2)
        among = list(store.get_many([*before, *after], light=True).values())
    kept = [
        node
        for node in among
        if not dated.low <= node.ts <= dated.high
        and order.passes(node, as_of, None, None, author, store.member)
    ]

    def distance(node: StoredNode) -> tuple[int, int]:
        return (dated.low - node.ts if node.ts < dated.low else node.ts - dated.high), node.ts

    return sorted(kept, key=distance)[:NEAREST_CHANGES]


def lift_nearest(
    store: SearchStore, found: dict[str, fuse.Evidence], nearest: list[tuple[str, float]]
) -> dict[str, fuse.Evidence]:
    """FOUND with the nearest few by vector lifted (fuse.lift_nearest), the changes and doc sections among
    them: a shell command or a turn of conversation keeps its share. Commands repeat one another ("docker
    compose up -d redis", run five times) and when one was run says more than how near it stands; lifted,
    the nearest runs pushed the fix they led to down a place or two on the recent-work sets (recent4
    .592 -> .525)."""
    head = [node_id for node_id, _ in nearest[: fuse.NEAREST_DEPTH]]
    if not head:
        return found
    nodes = store.get_many(head, light=True)
    kept = frozenset(i for i in head if i in nodes and nodes[i].kind not in rank.RECENCY_KINDS)
    return fuse.lift_nearest(found, nearest, only=kept)


def dated_cue(cue: timecue.Cue | None, dated: timecue.Dated | None) -> timecue.Cue | None:
    """The time CUE the scores measure age by: for dates written as a closed window (DATED), from its middle,
    not from the newest event (recency counted from now took "in March 2021" away from March 2021)."""
    if cue is None or dated is None or cue.anchor_ms is not None or not 0 < dated.low <= dated.high < 2**62:
        return cue
    return replace(cue, anchor_ms=(dated.low + dated.high) // 2)


def _is_change(node: StoredNode) -> bool:
    return node.kind in _CHANGE_KINDS or node.source == rank.CHANGELOG_SOURCE


def release_note(version: str, window: tuple[int, int | None], unreached: str | None = None) -> str:
    """What a question naming release VERSION says of its WINDOW (and of its tag, not in HEAD's history,
    when UNREACHED is the sha that tag names)."""
    start, end = window
    until = f" and before the next ({timefmt.iso(end)[:10]})" if end is not None else ""
    note = f"release {version}: changes made after its tag ({timefmt.iso(start)[:10]}){until} come first"
    return note + (f"; {unreached_note(unreached)}" if unreached is not None else "")


def unreached(store: SearchStore, version: str) -> str | None:
    """The sha release VERSION's tag names when memory does not hold that commit (a tag on a maintenance
    branch HEAD does not reach: memory holds the commits HEAD reaches), else None."""
    sha = store.release_commit(version)
    return sha if sha is not None and not store.commit_held(sha) else None


def unreached_note(sha: str) -> str:
    return f"its tag is commit {sha[:10]}, which is not in HEAD's history (memory holds the commits HEAD reaches)"


# How many nodes the version's phrase ("7 4 1", as the index holds 7.4.1) may match to be read for release_nodes.
RELEASE_CANDIDATES = 200
_RELEASE_NUMBER = lazyre.compile(r"\d+(?:\.\d+)*")
# A pre-release's version: its number, its label and the label's count ("7.0.0-rc.1", "2.0.0b2", "4.0.0.rc-2").
_PRE_RELEASE = lazyre.compile(r"(\d+(?:\.\d+)*)[-.]?(alpha|beta|rc)[.-]?(\d*)", re.IGNORECASE)


_RELEASE_PAGE = lazyre.compile(
    r"\b(?:what'?s new|new in|changes|changed|release notes?|highlights)\b", re.IGNORECASE
)


def release_nodes(store: SearchStore, exact: search.ExactSearches, version: str) -> list[StoredNode]:
    """What says what release VERSION holds, in this order: the changelog entries under its heading (in the
    order the file holds them), the commit its tag names, and the commits whose title names it ("Release 7.4.1 (#2965)", "Prepare 1.7.15")."""
    pre = _PRE_RELEASE.fullmatch(version)
    if pre is None:
        phrase = search.phrase_of(words_of(version))
    else:  # "7.0.0-rc.1" is "7 0 0 rc 1" to the index, the heading "7.0.0-rc1" is "7 0 0 rc1"
        number, label, count = " ".join(words_of(pre.group(1))), pre.group(2).lower(), pre.group(3)
        phrase = (
            f'"{number} {label} {count}" OR "{number} {label}{count}"' if count else f'"{number} {label}"'
        )
    hits = exact.scored(phrase, RELEASE_CANDIDATES)
    nodes = store.get_many([node_id for node_id, _ in hits], light=True)
    # 7.4.1 and not 7.4.10 or 2.7.4.1, nor a pre- or post-release of it (7.4.1-beta.1, 7.4.1rc1, 7.4.1.post0);
    # "1.7" names 1.7.0 too. A pre-release named (2.0.0-alpha.1) is its own release.
    final = _RELEASE_NUMBER.fullmatch(version) is not None
    # A pre-release however it is spelt: the tag's 7.0.0-rc.1 is the heading's 7.0.0-rc1 (and 7.0.0.RC-1).
    spelt = (
        re.escape(pre.group(1)) + rf"[-.]?(?i:{pre.group(2)})[.-]?" + re.escape(pre.group(3)) + r"(?!\d)"
        if pre is not None
        else re.escape(version) + (r"(\.0)*" if final else "")
    )
    # Not the final's with a pre-release after it ("Added changelog for 7.0.0 Beta1").
    named = re.compile(r"(?<![\w.])[vV]?" + spelt + r"(?![\w]|\.\w|-[A-Za-z]|\s+(?i:alpha|beta|rc)\d*\b)")
    listed = [node for node_id, _ in hits if (node := nodes.get(node_id)) is not None]
    entries = {
        node.id: node
        for node in listed
        if node.kind == "doc_section"
        and node.source == rank.CHANGELOG_SOURCE
        and named.search(node.ref.partition("#")[2].split(" › ", 1)[0])
    }
    # The project's own page about the release ("Major changes in 5.0", "What's new in 2.0"): a doc page
    # whose heading names the version and says what is new in it.
    pages = [
        node
        for node in listed
        if node.kind == "doc_section"
        and node.source != rank.CHANGELOG_SOURCE
        and not rank.is_post(node.kind, node.title)
        and named.search(heading := node.ref.partition("#")[2])
        and _RELEASE_PAGE.search(heading)
    ]
    commits = [node for node in listed if node.kind == "git_commit" and named.search(node.title)]
    sha = store.release_commit(version) if final else None  # the version tags held are final releases
    tagged = store.get_many(store.commits_by_sha(sha)[:1], light=True) if sha else {}
    in_file = [entries[node_id] for node_id in store.written_order(list(entries))]
    if not in_file and not tagged and version.count(".") >= 3:
        # "127.0.0.1": four numbers name a release only when a tag or a changelog heading names it, not
        # when some commit's title holds an address ("Cookie domain: 127.0.0.1").
        return []
    return list({node.id: node for node in [*pages, *in_file, *tagged.values(), *commits]}.values())


# A changelog entry that only points to a pre-release ("Nothing new beyond 7.0.0b1.", "No changes since
# 2.0.0rc2"): short, and naming a pre-release of the same version.
_POINTER_CHARS = 200
_PRE_RELEASE_NAMED = lazyre.compile(
    r"(?<![\w.])v?(\d+(?:\.\d+)*)[-.]?((?:a|b|alpha|beta|rc|c|pre|dev)[.-]?\d*)(?!\w|\.\w)"
)


def _zero_padded(number: str) -> tuple[int, ...]:
    """The version NUMBER's parts (7.0.0b1's 7.0.0), trailing zeros dropped: 7.0 is 7.0.0."""
    found = _RELEASE_NUMBER.match(number)
    parts = [int(part) for part in found.group(0).split(".")] if found else []
    while len(parts) > 1 and parts[-1] == 0:
        parts.pop()
    return tuple(parts)


def pre_releases_pointed(store: SearchStore, shipped: list[StoredNode], version: str) -> list[str]:
    """The pre-releases of VERSION (as written: 7.0.0b1) that its changelog entries among SHIPPED only point
    to (each entry short and naming one); empty when an entry says more, or none is there."""
    entries = [n.id for n in shipped if n.kind == "doc_section" and n.source == rank.CHANGELOG_SOURCE]
    if not entries or not _RELEASE_NUMBER.match(version):
        return []
    held = store.get_many(entries)
    pointed: list[str] = []
    for entry in entries:
        text = held[entry].body.strip() if entry in held else ""
        named = [
            m.group(0).lstrip("v")
            for m in _PRE_RELEASE_NAMED.finditer(text)
            if _zero_padded(m.group(1)) == _zero_padded(version)
        ]
        if len(text) > _POINTER_CHARS or not named:
            return []
        pointed += [v for v in named if v not in pointed]
    return pointed


# How many of the commits between a release's tag and the previous one's are listed with what it holds: the
# changes (newest first), then its merges and its bookkeeping (a release commit, a changelog-only commit).
RANGE_CHANGES = 30
RANGE_BOOKKEEPING = 10
# How many of the releases tagged between the two a question names ("between 1.2.0 and 1.4.0") have their
# changelog entries listed, the highest first (each costs one search of its version's phrase).
SPAN_RELEASES = 20
_RELEASE_TITLE = lazyre.compile(
    r"^\s*(?:release|prepare|preparing|bump|bumped|tag|tagged|version|changelog|update changelog)\b.*\d",
    re.IGNORECASE,
)


def with_release_commits(
    store: SearchStore,
    shipped: list[StoredNode],
    described: list[StoredNode],
    found: ReleaseRange | None,
    within: Callable[[StoredNode], bool],
    later: list[str] | None = None,
) -> tuple[list[StoredNode], str | None]:
    """What a release holds, in order: SHIPPED's changelog entries, the commits of FOUND (`git log
    PREVIOUS..VERSION`, or VERSION..HEAD for a question about what came since VERSION, LATER being the releases
    tagged in it; from memory's commit parents: no git on a question's path) that change something, newest
    first (RANGE_CHANGES at most), SHIPPED's commits (the tagged one, those whose title names it), the range's
    merges and bookkeeping (a release commit, one that only touched the release notes), then the DESCRIBED
    commits not in the range (said so; bookkeeping ones left out). Only those WITHIN the question's window.
    Also the note that names the range (None without one: no earlier tag is reached, or the tag is not in
    memory), and the releases tagged within it besides VERSION when LATER names them (releases_between,
    highest first)."""
    entries = [node for node in shipped if node.kind == "doc_section"]
    tagged = [node for node in shipped if node.kind != "doc_section"]
    if found is None or not found.held or (found.base is None and not found.first) or not found.shas:
        return list({node.id: node for node in [*shipped, *described]}.values()), None
    tip = store.get_many(store.commits_by_sha(found.sha)[:1], light=True)
    if not tip:
        return list({node.id: node for node in [*shipped, *described]}.values()), None
    project_id = next(iter(tip.values())).project_id
    commits = store.get_many(
        [identity.node_id(project_id, "git_commit", sha) for sha in found.shas], light=True
    )
    by_sha = {node.ref: node for node in commits.values()}
    walk = {sha: n for n, sha in enumerate(found.shas)}
    ranged = sorted(
        (by_sha[sha] for sha in found.shas if sha in by_sha), key=lambda node: (-node.ts, walk[node.ref])
    )
    in_range = {node.id for node in ranged}
    outside = [node for node in described if node.id not in in_range]
    files: dict[str, list[str]] = {}
    for node_id, path in store.files_of_many([node.id for node in [*ranged, *outside]]):
        files.setdefault(node_id, []).append(path)
    from nexusmem.sources.docs import is_release_notes

    def keeping(node: StoredNode) -> bool:
        return bool(
            sha_is_merge(node)
            or _RELEASE_TITLE.search(node.title)
            or (files.get(node.id) and all(is_release_notes(path) for path in files[node.id]))
        )

    own = {node.id for node in tagged}
    bookkeeping = {node.id for node in ranged if node.id in own or keeping(node)}
    changes = [node for node in ranged if node.id not in bookkeeping][:RANGE_CHANGES]
    rest = [node for node in ranged if node.id in bookkeeping and node.id not in own][:RANGE_BOOKKEEPING]
    # A commit an entry names that the range does not hold (one made before the previous release's tag, or
    # on another branch) comes after the range, said so; one that only touched the changelog is left out.
    elsewhere = [node for node in outside if not keeping(node)]
    ordered = [*entries, *changes, *tagged, *rest, *elsewhere]
    listed = list({node.id: node for node in ordered if node in entries or within(node)}.values())
    count = len(found.shas)
    more = (
        "" if count <= len(changes) + len(rest) + len(own) else f"; the newest {len(changes)} changes listed"
    )
    commits_word = "commit" if count == 1 else "commits"
    counted = f"{count}{'+' if found.truncated else ''} {commits_word}"
    if found.name == "HEAD":
        later = later or []
        since = ", ".join(later[:8]) + (", …" if len(later) > 8 else "")
        reached = set(found.shas)
        off = [(v, sha) for v, sha in store.releases_above(found.base or "") if sha not in reached]
        tagged_since = (
            f"; released since: {since}"
            if later
            else "; no release is tagged after it" + (" in HEAD's history" if off else "")
        )
        if off:
            # "Since 0.15.0" where 0.15.1 was tagged on a branch HEAD does not reach: a release after it exists.
            named = ", ".join(f"{v} ({sha[:10]})" for v, sha in off[:3]) + (", …" if len(off) > 3 else "")
            tagged_since += f"; tagged after it on commits HEAD does not reach: {named}"
        note = (
            f"since {found.base}: the {counted} after its tag up to HEAD (git log {found.base_name}..HEAD)"
            f"{tagged_since}{more}"
        )
    elif found.first:
        note = (
            f"release {found.version}: the {counted} from the start of history up to its tag, the first release"
            f" (git log {found.name}){more}"
        )
    else:
        lower = sorted(later or [], key=version_key)
        listed_between = ", ".join(lower[:8]) + (", …" if len(lower) > 8 else "")
        between = f"; released between: {listed_between}" if lower else ""
        note = (
            f"release {found.version}: the {counted} after {found.base} (git log {found.base_name}..{found.name})"
            f"{between}{more}"
        )
    shown_elsewhere = [node for node in elsewhere if node in listed]
    if shown_elsewhere:
        which = "commit" if len(shown_elsewhere) == 1 else "commits"
        note += (
            f"; after them, the {len(shown_elsewhere)} {which} its changelog entries name outside that range"
            f" ({', '.join(node.ref[:8] for node in shown_elsewhere[:5])})"
        )
    return listed, note


def sha_is_merge(node: StoredNode) -> bool:
    """Whether the commit NODE has more than one parent (its meta's parents; a light node keeps its meta)."""
    parents = node.meta.get("parents")
    return isinstance(parents, list) and len(parents) > 1


def described_by(store: SearchStore, entries: list[StoredNode]) -> list[StoredNode]:
    """The commits the changelog ENTRIES describe (their `changelog` links), in the entries' order."""
    place = {node.id: n for n, node in enumerate(entries)}
    links = sorted(
        (place[src], dst) for src, dst, relation in store.links_from(list(place)) if relation == "changelog"
    )
    ids = list(dict.fromkeys(dst for _, dst in links))
    held = store.get_many(ids, light=True) if ids else {}
    return [held[node_id] for node_id in ids if node_id in held]


# How many doc sections titled with an upgrade word and one of the versions are read for upgrade_guide.
GUIDE_CANDIDATES = 200
# How many sections of the chosen part of an upgrade guide (it and its subsections) are read, at most.
GUIDE_SECTIONS = 40
_GUIDE_WORDS = ("upgrading", "upgrade", "upgrades", "migrating", "migration", "migrate", "updating")
_GUIDE_MARK = lazyre.compile(r"upgrad|migrat|updat", re.IGNORECASE)
_HEADING_VERSION = lazyre.compile(r"(?<![\w.])v?(\d+(?:\.\d+){0,3})(?:\.x)?(?![\w.]*\d)")
_HEADING_FROM_TO = lazyre.compile(r"\d(?:\.x)?\s*(?:to|->|→|-)\s*v?\d", re.IGNORECASE)


def upgrade_guide(
    store: SearchStore, exact: search.ExactSearches, start: str | None, end: str | None
) -> list[StoredNode]:
    """The sections of an upgrade guide for moving from release START to END (either may be None), best
    first: those whose heading names both ("6.0 to 7.0" in UPGRADING.md, "From 6 to 7"), then END ("Upgrading
    to Moshi 2.x", "7.0" in a MIGRATION.md), then START ("Migrating from 5.x"). A guide is a file named for
    upgrading or migrating, or a heading that says so or names two releases. The sections under a heading
    chosen (a changelog's "Upgrading to Moshi 2.x › Properties") follow it, as the file lists them."""
    asked = [v for v in (start, end) if v is not None]
    numbers = sorted({part for v in asked for part in (v.split(".")[0], "v" + v.split(".")[0])})
    match = (
        "title : ("
        + " OR ".join(_GUIDE_WORDS)
        + ") AND title : ("
        + " OR ".join(f'"{n}"' for n in numbers)
        + ")"
    )
    hits = exact.scored(match, GUIDE_CANDIDATES)
    nodes = store.get_many([node_id for node_id, _ in hits], light=True)
    ranked: dict[tuple[str, str], int] = {}  # (path, heading) -> 0 both named, 1 END, 2 START
    for node_id, _ in hits:
        node = nodes.get(node_id)
        if node is None or node.kind != "doc_section":
            continue
        path, _, heading = node.ref.partition("#")
        top = heading.split(" › ", 1)[0]
        named = [found.group(1) for found in _HEADING_VERSION.finditer(top)]
        two = len(named) == 2 and _HEADING_FROM_TO.search(top) is not None
        if not (_GUIDE_MARK.search(path) or _GUIDE_MARK.search(top) or two) or not named or len(named) > 2:
            continue
        if two:
            first, last = named
            place = 0 if _same_release(first, start) and _same_release(last, end) else None
            if place is None and start is None and _same_release(last, end):
                place = 1
        else:
            place = 1 if _same_release(named[0], end) else 2 if _same_release(named[0], start) else None
        if place is not None:
            ranked[(path, top)] = min(place, ranked.get((path, top), place))
    if not ranked:
        return []
    best = min(ranked.values())
    chosen = {key for key, place in ranked.items() if place == best}
    members = [
        node
        for node in nodes.values()
        if node.kind == "doc_section"
        and (node.ref.partition("#")[0], node.ref.partition("#")[2].split(" › ", 1)[0]) in chosen
    ]
    # The whole section: its subsections too, whose titles the search did not match ("6.0 to 7.0 › Native
    # functions calls"); a doc's ref names its last heading only, its natural key the heading path.
    heads = {(node.source, _heading_path(node)) for node in members}
    under = [
        node_id for source, head in heads for node_id in store.sections_under(source, head, GUIDE_SECTIONS)
    ]
    held = {node.id: node for node in members} | store.get_many(under, light=True)
    written = store.written_order(list(held))[:GUIDE_SECTIONS]
    return [held[node_id] for node_id in written]


def _heading_path(node: StoredNode) -> str:
    """NODE's natural key up to the heading its ref names first ("UPGRADING.md#Guide > 6.0 to 7.0" of
    "UPGRADING.md#Guide > 6.0 to 7.0 > Native functions calls#0", whose ref is "UPGRADING.md#6.0 to 7.0")."""
    path, _, heading = node.ref.partition("#")
    top = heading.split(" › ", 1)[0]
    at = node.natural_key.find(top, len(path) + 1)
    return node.natural_key if at < 0 else node.natural_key[: at + len(top)]


def _same_release(named: str, asked: str | None) -> bool:
    """Whether the release a heading NAMED ("6.0", "7", "2.x" as "2") is the one ASKED about ("v6", "6.0"):
    the same numbers, a trailing .0 or a missing part counting as any."""
    if asked is None:
        return False
    a, b = (v.split(".") for v in (named, asked))
    while len(a) > 1 and a[-1] == "0":
        a.pop()
    while len(b) > 1 and b[-1] == "0":
        b.pop()
    depth = min(len(a), len(b))
    return a[:depth] == b[:depth]


# How many of the paths that still hold a name "when was X removed?" was asked about its note names.
STILL_IN_PATHS = 3


def holder_note_if_listed(
    scored: list[tuple[StoredNode, float]], sha: str, note: str, notes: list[str]
) -> None:
    """Take NOTE (naming SHA, the first or last change that holds a name) out of NOTES when none of that
    change's nodes is in SCORED (left out since): it would name a change the answer does not show.
    search.holder scored the change ORIGIN_LEAD above the best word match; the vectors and the title may
    still put a later change whose title names the name above it ("Fix broken caching in
    guessOffsetForZone"). Putting the holder first regardless was measured and not kept: two questions of
    a real-repository set lost a rank each (moshi .725 -> .708, PHPMailer .716 -> .699)."""
    listed = any(node.kind in _CHANGE_KINDS and node.ref.split(":", 1)[0] == sha for node, _ in scored)
    if not listed and note in notes:
        notes.remove(note)


def still_first(scored: list[tuple[StoredNode, float]], sha: str) -> list[tuple[StoredNode, float]]:
    """SCORED with the change SHA put first (its commit node, else its best-ranked diff): the last change that
    holds a name the code still holds, which the note answering "is X still …" or "when was X removed" names
    ("yes: AsDisplay is still in the code (…); the last change that holds it: aa9d91f753"). There the note is
    the answer and the list its evidence, so they must agree: the vectors and the title put the change whose
    title names the name (thiserror's 2023 "Replace … with AsDisplay trait") above a later one that only
    holds it (a ui test's expected output). Only for such a note: for the first or last holder of an
    ordinary question the move was measured and not kept (holder_note_if_listed)."""
    nodes = [node for node, _ in scored if node.kind in _CHANGE_KINDS and node.ref.split(":", 1)[0] == sha]
    lead = next((node for node in nodes if node.kind == "git_commit"), nodes[0] if nodes else None)
    if lead is None or scored[0][0].id == lead.id:
        return scored
    return order.put_first(scored, [lead])


# A changelog entry says in a user's words what a change did ("the client hangs when the server closes the
# connection"); the commit it links to is the change itself, what a question about what happened asks for.
# So an entry among the first ENTRY_DEPTH results puts the commits it links to (at most ENTRY_LINKS: an
# entry that names more describes a release, not a change) just above itself, unless they rank higher
# already. A usage question is answered by the docs, and is left alone. Over the seven real-repository sets
# (hybrid MRR, docs/evaluation.md) this moved dev / held-out / fresh / fresh2 / fresh3 / fresh4 / fresh5 by
# .000 / +.003 / -.001 / +.009 / +.001 / +.009 / +.007 (mean .5401 → .5443); one linked commit at most:
# +.002 on average; the commit placed after the entry instead of before it: +.000. The commits of one entry
# keep their own order (ties broken by id before): mean .5470 → .5487 with distinct_changes in place.
# A commit that changed docs only is not lifted: an entry with no number links to the commit that added it,
# and when that commit is "Update changelog." it is bookkeeping, not the change the entry describes
# (pytest-cov's "Update changelog. Close #422." came first for the failure its entry names). Thirty-nine
# sets: .7000 → .7001 (55 questions better, 1 worse).
# Once a commit ranks above an entry that links to it, the entry repeats that change in other words: it
# counts ENTRY_ECHO_FACTOR, so that the next distinct change comes before it (as a commit's diffs do,
# SIBLING_FACTOR). Forty-five sets (4,155 questions, hybrid MRR, docs/evaluation.md): .6913 at 1, .6922 at
# .7 (142 questions better, none worse), .6922 at .5 (162 better), .6923 at .3 (171 better); R@5 .812 → .814
# at each.
ENTRY_DEPTH = 40
ENTRY_LINKS = 2
ENTRY_RELATION = "changelog"
ENTRY_ECHO_FACTOR = 0.5


def commits_before_entries(
    store: SearchStore,
    scored: list[tuple[StoredNode, float]],
    *,
    as_of: int | None = None,
    since: int | None = None,
    until: int | None = None,
) -> list[tuple[StoredNode, float]]:
    """SCORED with the commits each changelog entry among its first ENTRY_DEPTH links to (1 to ENTRY_LINKS
    of them) scored just above that entry when they ranked below it (or not at all). A commit outside the
    AS_OF / SINCE / UNTIL window stays out, and one that changed docs only stays where it was."""
    entries = [
        (node, value)
        for node, value in scored[:ENTRY_DEPTH]
        if node.kind == "doc_section" and node.source == rank.CHANGELOG_SOURCE
    ]
    if not entries:
        return scored
    linked: dict[str, list[str]] = {}
    for src, dst, relation in store.links_from([node.id for node, _ in entries]):
        if relation == ENTRY_RELATION:
            linked.setdefault(src, []).append(dst)
    values = {node.id: value for node, value in scored}
    lifted: dict[str, float] = {}
    for node, value in entries:
        commits = linked.get(node.id, [])
        if not 1 <= len(commits) <= ENTRY_LINKS:
            linked.pop(node.id, None)
            continue
        # Above the entry, in their own order (a commit the entry names by number has its words as notes).
        ordered = sorted(commits, key=lambda c: (-values.get(c, 0.0), c))
        for step, commit in enumerate(ordered):
            lift = value * (1.0 + 1e-6 * (len(ordered) - step))
            if max(values.get(commit, 0.0), lifted.get(commit, 0.0)) < lift:
                lifted[commit] = lift
    if not lifted:
        return _after_their_commits(scored, linked)
    return _after_their_commits(
        _placed(store, scored, lifted, as_of, since, until, docs_only_stay=True), linked
    )


def _placed(
    store: SearchStore,
    scored: list[tuple[StoredNode, float]],
    placed: dict[str, float],
    as_of: int | None,
    since: int | None,
    until: int | None,
    *,
    docs_only_stay: bool = False,
) -> list[tuple[StoredNode, float]]:
    """SCORED with each node of PLACED (id -> the score it is given) scored so, those SCORED lacks added; a node
    memory no longer holds, one the user rejected or that was superseded (a verdict the user gave is not
    overturned by another node's words), one outside the AS_OF / SINCE / UNTIL window that SCORED lacked, and
    with DOCS_ONLY_STAY a commit that changed docs only, stay where they were."""
    nodes = {n.id: n for n, _ in scored}
    missing = [i for i in placed if i not in nodes]
    nodes.update(store.get_many(missing, light=True) if missing else {})
    keep: dict[str, float] = {}
    for node_id, value in placed.items():
        held = nodes.get(node_id)
        if held is None or held.trust == "rejected" or held.superseded_by is not None:
            continue
        if node_id in missing and not order.within(held, as_of, since, until):
            continue
        keep[node_id] = value
    if docs_only_stay and keep:
        for node_id in search.change_scope(store, [nodes[i] for i in keep]).docs:
            del keep[node_id]
    out = [(n, keep.get(n.id, v)) for n, v in scored]
    out += [(nodes[node_id], keep[node_id]) for node_id in missing if node_id in keep]
    return out


# "Which release fixed is_unique for a Bytes from a shared BytesMut?", "from which version on does it limit the
# response size?": the question asks for a release, and the changelog entry that describes the change is what
# names it. The commit itself often ranks first (its message and patch hold the question's words), while its
# entry, in fewer words, ranks far below it and counts ENTRY_ECHO_FACTOR once its commit outranks it. So for
# such a question the entries that link to one of the first RELEASE_COMMIT_DEPTH commits come right after it.
RELEASE_COMMIT_DEPTH = 3
RELEASE_ENTRIES_PER_COMMIT = 1


def entries_after_commits(
    store: SearchStore,
    scored: list[tuple[StoredNode, float]],
    *,
    as_of: int | None = None,
    since: int | None = None,
    until: int | None = None,
) -> list[tuple[StoredNode, float]]:
    """SCORED with the changelog entry that describes each of its first RELEASE_COMMIT_DEPTH commits scored just
    below that commit, when it ranked lower (or not at all). An entry outside the window, or one the user
    rejected, stays where it was."""
    commits = [(node, value) for node, value in scored if node.kind == "git_commit"][:RELEASE_COMMIT_DEPTH]
    if not commits:
        return scored
    values = {node.id: value for node, value in scored}
    placed: dict[str, float] = {}
    for commit, value in commits:
        arriving, _ = store.links_to(commit.id, 8)
        entries = [src for src, relation in arriving if relation == ENTRY_RELATION]
        for step, entry in enumerate(entries[:RELEASE_ENTRIES_PER_COMMIT]):
            below = value * (1.0 - 1e-6 * (step + 1))
            if max(values.get(entry, 0.0), placed.get(entry, 0.0)) < below:
                placed[entry] = below
    if not placed:
        return scored
    return order.best_first(_placed(store, scored, placed, as_of, since, until))


def links_of(store: SearchStore, nodes: list[StoredNode]) -> dict[str, list[tuple[str, str]]]:
    """(to id, relation) of the links leaving each of NODES: a changelog entry's commits in the order the
    entry names them (its meta `commits`: those it names by sha or number first, the one that added its line
    after), not in the store's (by id), so that the commit shown first beside it is the change it names."""
    links: dict[str, list[tuple[str, str]]] = {}
    for src, dst, rel in store.links_from([n.id for n in nodes]):
        links.setdefault(src, []).append((dst, rel))
    for node in nodes:
        if node.id in links and node.source == rank.CHANGELOG_SOURCE:
            named = node.meta.get("commits")
            if isinstance(named, list) and named:
                place = {
                    identity.node_id(node.project_id, "git_commit", sha): n
                    for n, sha in enumerate(named)
                    if isinstance(sha, str)
                }
                links[node.id].sort(
                    key=lambda link: (link[1] != ENTRY_RELATION, place.get(link[0], len(place)))
                )
    return links


def _after_their_commits(
    scored: list[tuple[StoredNode, float]], linked: dict[str, list[str]]
) -> list[tuple[StoredNode, float]]:
    """SCORED, each changelog entry of LINKED (entry id -> the 1 to ENTRY_LINKS commits it links to) that
    one of its commits now outranks counting ENTRY_ECHO_FACTOR, best first."""
    values = {node.id: value for node, value in scored}
    out = [
        (node, value * ENTRY_ECHO_FACTOR)
        if node.id in linked and any(values.get(c, 0.0) >= value for c in linked[node.id])
        else (node, value)
        for node, value in scored
    ]
    return order.best_first(out)


# A commit and its diffs are one change, led by the commit: it takes the place of the change's best node
# (the message says why; a diff only what), and the change's other nodes count SIBLING_FACTOR of their
# score, so that the next distinct change that matches nearly as well comes before them (the packer shows
# at most two nodes of one commit anyway: without the lead, a commit whose test files match the question
# best was shown as two diffs and no message). Over the seven real-repository sets (hybrid MRR,
# docs/evaluation.md): mean .5443 at 1, .5457 at .9, .5470 at .7 and at .5 (no set lower at any factor).
SIBLING_FACTOR = 0.7
_CHANGE_KINDS = ("git_commit", "code_diff")
NEAREST_CHANGES = (
    5  # the commits nearest to a window of dates that holds none, listed first (changes_nearest)
)


def _usage_doc_path(node: StoredNode) -> str | None:
    """The file path of NODE when it is a doc section of the docs source (not a changelog entry), else None."""
    if node.kind != "doc_section" or node.source == rank.CHANGELOG_SOURCE:
        return None
    return node.title.split(" — ", 1)[0]


# A project that keeps one docs folder per major version (league/commonmark's docs/1.x and docs/2.x, urfave/
# cli's docs/v1 … docs/v3, Docusaurus's versioned_docs/version-2.1) holds the same page once per version,
# and a question about how to use the program asks about the release in use: the newest. A doc section under
# an older version folder than the newest one the results hold under the same parent counts
# OLDER_DOCS_FACTOR, unless the question names a release (intent.release_version). Folders named by a year
# (docs/news/2020/) are not versions: a version is one to three digits per part. A folder for the release
# not yet made (league/container's docs/unstable next to docs/4.x, go-task's website/src/next next to
# website/src/latest) comes before every numbered one, and one named for the release in use (latest,
# stable, current) after them, so the unreleased page counts the factor too, unless the question says the
# folder's name ("what changes in next?").
OLDER_DOCS_FACTOR = 0.5
_VERSION_DIR = lazyre.compile(r"(?:^|/)(?:v|version-)?(\d{1,3}(?:\.\d{1,3})*)(?:\.x)?/")
_NAMED_RELEASE_DIR = lazyre.compile(
    r"(?:^|/)(unstable|next|nightly|canary|edge|preview|unreleased|dev|develop|main|master|latest|stable|current)/"
)
_UNRELEASED = -1  # the version of a folder for the next release; one for the release in use sorts last
_RELEASED = 1 << 30


def _docs_version(path: str) -> tuple[str, str, tuple[int, ...]] | None:
    """(parent folder, the folder's name when it is a word, version order) of the version folder PATH is
    under, or None."""
    numbered = _VERSION_DIR.search(path)
    if numbered is not None:
        return path[: numbered.start()], "", tuple(int(part) for part in numbered.group(1).split("."))
    named = _NAMED_RELEASE_DIR.search(path)
    if named is None:
        return None
    name = named.group(1)
    return (
        path[: named.start()],
        name,
        (_RELEASED,) if name in ("latest", "stable", "current") else (_UNRELEASED,),
    )


def current_docs_first(
    scored: list[tuple[StoredNode, float]], said: frozenset[str] = frozenset()
) -> list[tuple[StoredNode, float]]:
    """SCORED (best first) with each doc section under an older version folder than the newest the list
    holds under the same parent at OLDER_DOCS_FACTOR of its score; re-sorted when any was. A folder whose
    name is in SAID (the question's words, lower-case) is left as it is."""
    found: dict[str, tuple[str, tuple[int, ...]]] = {}
    newest: dict[str, tuple[int, ...]] = {}
    for node, _ in scored:
        path = _usage_doc_path(node)
        version = _docs_version(path) if path is not None else None
        if version is None:
            continue
        parent, name, key = version
        newest[parent] = max(newest.get(parent, key), key)
        if name not in said:
            found[node.id] = (parent, key)
    older = {node_id for node_id, (parent, key) in found.items() if key < newest[parent]}
    if not older:
        return scored
    out = [(n, v * OLDER_DOCS_FACTOR if n.id in older else v) for n, v in scored]
    return order.best_first(out)


# A project that keeps its docs translated (vuejs/vitepress's docs/en next to docs/ja, docs/ru, docs/zh …)
# holds each page once per language, and a translation keeps the original's code, option names and
# headings' loan words, so it matches an English question nearly as well as the original does. A doc
# section under a language folder counts TRANSLATION_FACTOR when the question is in English and the results
# hold the same page in English (under en/, or where the language folder would be): the reader asked in
# English, and the English page says the same.
TRANSLATION_FACTOR = 0.5
_LANGUAGE_DIR = lazyre.compile(
    r"(?:^|/)(ar|bn|cs|da|de|el|es|fa|fi|fr|he|hi|hu|id|it|ja|ko|nl|no|pl|pt|ro|ru|sv|th|tr|uk|vi|zh)"
    r"(?:[-_][a-z]{2,4})?/",
    re.IGNORECASE,
)
_ENGLISH_DIR = lazyre.compile(r"(?:^|/)en(?:[-_][a-z]{2})?/", re.IGNORECASE)
# English function words that other languages written in Latin letters do not share ("a", "do", "in" and
# "no" are Spanish, Portuguese or Italian words too).
_ENGLISH_WORD = lazyre.compile(
    r"\b(the|how|what|why|when|where|which|who|does|did|is|are|was|were|can|could|should|i|my|we|our|to|of"
    r"|for|with|it|this|that|and|or|not|after|before)\b",
    re.IGNORECASE,
)
_OTHER_SCRIPT = lazyre.compile(
    r"[\u0400-\u04ff\u0590-\u06ff\u0e00-\u0e7f\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af]"
)


def asked_in_english(text: str) -> bool:
    """Whether TEXT reads as English: no letters of another script, and two or more English function words."""
    if _OTHER_SCRIPT.search(text):
        return False
    return len({word.lower() for word in _ENGLISH_WORD.findall(text)}) >= 2


def translated(ref: str) -> bool:
    """Whether the doc section REF (path#Heading) lies under a language folder."""
    return _LANGUAGE_DIR.search(ref.split("#", 1)[0]) is not None


def originals_first(scored: list[tuple[StoredNode, float]], text: str) -> list[tuple[StoredNode, float]]:
    """SCORED (best first) with each doc section under a language folder at TRANSLATION_FACTOR of its score
    when TEXT is in English and SCORED holds the same page in English; re-sorted when any was."""
    if TRANSLATION_FACTOR == 1 or not asked_in_english(text):
        return scored
    paths = [(node.id, path) for node, _ in scored if (path := _usage_doc_path(node)) is not None]
    copies: dict[str, tuple[str, str]] = {}  # node id → (parent, page) of a section under a language folder
    for node_id, path in paths:
        folder = _LANGUAGE_DIR.search(path)
        if folder is not None:
            copies[node_id] = (path[: folder.start()], path[folder.end() :])
    if not copies:  # most projects keep no translation: nothing to compare
        return scored
    english: set[tuple[str, str]] = set()
    for node_id, path in paths:
        if node_id in copies:
            continue
        folder = _ENGLISH_DIR.search(path)
        if folder is not None:
            english.add((path[: folder.start()], path[folder.end() :]))
        # where a language folder would be: docs/guide/x.md is the original of docs/ja/guide/x.md
        for cut in (m.start() for m in re.finditer("/", path)):
            english.add((path[:cut], path[cut + 1 :]))
        english.add(("", path))
    demoted = {node_id for node_id, page in copies.items() if page in english}
    if not demoted:
        return scored
    return order.best_first([(n, v * TRANSLATION_FACTOR if n.id in demoted else v) for n, v in scored])


# What a commit of the asker's own counts, against another's matching as well, when the question asks about
# a change the asker made ("why did I change the easter function": today's own refactor, not 2016's
# "Clean up easter documentation" sharing its one word): a modest lift, not a filter.
OWN_CHANGE_FACTOR = 1.5


def own_changes_first(
    scored: list[tuple[StoredNode, float]], me: str | None
) -> list[tuple[StoredNode, float]]:
    """SCORED with the commits whose author is ME (git's user.name, any case) at OWN_CHANGE_FACTOR of their
    score; re-sorted. SCORED itself when ME is None."""
    if not me:
        return scored
    return order.best_first(
        [
            (node, value * OWN_CHANGE_FACTOR) if is_own_commit(node, me) else (node, value)
            for node, value in scored
        ]
    )


def is_own_commit(node: StoredNode, me: str) -> bool:
    """Whether NODE is a commit whose author is ME (git's user.name, any case)."""
    return node.kind == "git_commit" and str(node.meta.get("author", "")).casefold() == me.casefold()


def git_user_of(store: SearchStore) -> str | None:
    """The git user.name of the work tree whose memory STORE is (ROOT/.nexusmem/memory.db), None when STORE
    is no such file (the team store)."""
    path = getattr(store, "path", None)
    if not isinstance(path, Path) or path.name != paths.DB_NAME or path.parent.name != paths.STATE_DIR:
        return None
    return authors.git_user(path.parent.parent)


def distinct_changes(scored: list[tuple[StoredNode, float]]) -> list[tuple[StoredNode, float]]:
    """SCORED (best first) with each commit's nodes led by the commit node when it is listed (else by the
    best of them) at the best score among them, the others at SIBLING_FACTOR of their own; re-sorted."""
    best: dict[str, float] = {}
    leader: dict[str, str] = {}
    for node, value in scored:
        group = node.group if node.kind in _CHANGE_KINDS else None
        if group is None:
            continue
        best.setdefault(group, value)
        if node.kind == "git_commit" or group not in leader:
            leader[group] = node.id
    out: list[tuple[StoredNode, float]] = []
    for node, value in scored:
        group = node.group if node.kind in _CHANGE_KINDS else None
        if group is not None:
            value = best[group] if leader[group] == node.id else value * SIBLING_FACTOR
        out.append((node, value))
    out.sort(key=lambda pair: (-round(pair[1], 9), pair[0].kind != "git_commit", pair[0].id))
    return out
