"""The answer to a query: its items, packed into the token budget (siblings shelved under their heading, doc
twins dropped, the fixes linked to a failure riding along), and how it reads as text and as JSON."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from nexusmem import authors, lazyre, resolved, timefmt
from nexusmem.retrieve import order
from nexusmem.retrieve.pack import Candidate, estimate_tokens, pack
from nexusmem.retrieve.summarise import MAX_SUMMARY_CHARS, doc_summary_chars
from nexusmem.retrieve.summarise import summary as make_summary
from nexusmem.show import replacement
from nexusmem.store import StoredNode
from nexusmem.store.interface import SearchStore
from nexusmem.text import one_line, words_of

# The header echoes at most this much of the question.
SHOWN_QUERY_CHARS = 160


WEAK_LINE = "No strong match: nothing in memory covers this question well; the closest items follow."
WEAK_SHORT = "No strong match."  # WEAK_LINE under a budget too small for it
_BODY_WINDOW = 40
_NEEDS_BODY = {
    "code_diff",
    "git_commit",
    "doc_section",
    "conversation_turn",
    "github_thread",
    "session_summary",
}


@dataclass
class Item:
    id: str
    kind: str
    ts: int
    title: str
    summary: str
    provenance: str
    trust: str
    score: float
    project: str
    ref: str
    linked_from: str | None = None
    relation: str | None = None
    recorded_by: str = ""  # the team member who recorded it (an item of the team store); "" for local
    verdict_by: str = ""  # the team member whose verdict `trust` is (an item of the team store); "" for local
    also_in: list[str] = field(default_factory=list)  # refs of doc sections with the same text (doc_twins)
    superseded: bool = False  # marked by `mark-stale`
    superseded_by: str | None = None  # the id it named as what replaced it, while memory holds that node
    # Across projects: the root of the project it came from, and the tag the text gives it when another
    # searched project has the same name ("dotenv (b/x)"; "" = its name).
    project_root: str = ""
    project_label: str = ""
    # A commit's author as git records it (its name): who made the change, what a "who added X?" question
    # asks; "" for any other kind of item (a Co-authored-by trailer in its message is not its author).
    author: str = ""


@dataclass
class QueryResult:
    query: str  # the question as searched: an overlong one cut (Question.cut)
    budget: int
    tokens_used: int = 0
    matched: int = 0
    bm25_matched: int = 0
    vector_matched: int = 0
    items: list[Item] = field(default_factory=list)
    projects: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    weak: bool = False
    query_cut: bool = False
    # The tokens the header leaves for the best item: a note that would take them is left out of the header
    # (said on stderr, or after the footer), so that a small budget shows the answer rather than the notes.
    item_room: int = 0
    # The items are final (pack_items has returned): an answer with none needs no note that qualifies items.
    packed: bool = False
    # The line `render` prints after a release's items (relation "release") when other items follow them
    # (RELEASE_END); "" when the answer holds no release's items or nothing after them.
    release_end: str = ""


# What separates a release's items (what the release holds) from the other matches of the question's words.
RELEASE_END = (
    "-- end of what the release holds; below: other matches of the question's words, not part of it --"
)


# The most of a title an item shows; a best match shown by its head alone under a small budget shows less
# (HEAD_TITLE_CHARS), the longest of these that lets it fit.
TITLE_CHARS = 160
HEAD_TITLE_CHARS = (TITLE_CHARS, 120, 96, 72, 48)


def clipped_title(title: str, limit: int = TITLE_CHARS) -> str:
    """TITLE as an item shows it: at most LIMIT characters, the last an ellipsis when cut."""
    return title if len(title) <= limit else title[: limit - 1] + "…"


def item_text(item: Item, *, with_project: bool = False) -> str:
    """The plain-text lines of one item: what `query` prints and what the token estimate counts."""
    date = timefmt.day(item.ts)
    tags = f"[{item.provenance}]"
    if item.trust != "candidate":
        tags += f" [{item.trust} by {item.verdict_by}]" if item.verdict_by else f" [{item.trust}]"
    if item.superseded:
        tags += " [superseded]"
    if with_project:
        tags += f" [{item.project_label or item.project}]"
    if item.recorded_by:
        tags += f" [by {item.recorded_by}]"
    title = clipped_title(item.title)
    if not title.strip():
        title = "(no commit message)" if item.kind == "git_commit" else "(untitled)"  # a bare dangling line
    by = f" by {one_line(item.author)}" if item.author else ""
    head = f"- {date}{by} {tags} {title}"
    if item.linked_from and item.relation == "changelog":
        head += "  -- the commit this changelog entry describes"
    elif item.linked_from and item.relation == "discussion":
        head += "  -- linked as its discussion (not a fix)"  # a conversation about it: nothing says it passed
    elif item.linked_from:
        head += f"  -- linked as the fix ({item.relation})"
    # A commit names its sha, what `git show` and a reader of the log go by (a diff names it in its title).
    sha = f"  commit {item.ref[:7]}" if item.kind == "git_commit" and item.ref else ""
    lines = [head, f"  id {item.id}{sha}"]
    if item.superseded_by:
        lines.append(f"  superseded by {item.superseded_by}")
    if item.also_in:
        lines.append("  also in " + ", ".join(ref.split("#", 1)[0] for ref in item.also_in))
    lines += ["  " + line for line in item.summary.splitlines() if line.strip()]
    return "\n".join(lines)


def make_item(
    node: StoredNode,
    score: float,
    project: str,
    query: str,
    *,
    replaced_by: str | None = None,
    root: str = "",
    label: str = "",
    doc_chars: int = MAX_SUMMARY_CHARS,
    asked_only: bool = False,
) -> Item:
    """The presentable item for NODE (its summary chosen for QUERY); REPLACED_BY: show.replacement; ROOT and
    LABEL: its project's root and tag across projects (Item.project_root, Item.project_label); DOC_CHARS: how much
    of a doc section its summary shows (summarise.doc_summary_chars); ASKED_ONLY (`--author me`): a
    conversation turn's summary is the person's question, the agent's answer counted, not shown."""
    return Item(
        id=node.id,
        kind=node.kind,
        ts=node.ts,
        title=node.title,
        summary=make_summary(node, query, doc_chars, asked_only=asked_only),
        provenance=node.provenance,
        trust=node.trust,
        score=score,
        project=project,
        ref=node.ref,
        recorded_by=node.recorded_by,
        verdict_by=node.verdict_by,
        superseded=node.superseded_by is not None,
        superseded_by=replaced_by,
        project_root=root,
        project_label=label,
        author=order.commit_author(node),
    )


@dataclass
class Shelf:
    """One store's side of packing: where its items' bodies, names and links come from.

    Ranking runs on light rows; bodies are read only for the items the packer actually considers, a window
    of ORDER at a time (one query instead of one per item)."""

    name: str
    store: SearchStore
    order: list[str]  # the store's ranked ids, best first
    links: dict[str, list[tuple[str, str]]]  # failure id -> [(fix id, relation)]
    group_prefix: str = ""  # sibling groups are per store when several are packed together
    root: str = ""  # across projects: the project's root, and its tag when its name is shared (Item)
    label: str = ""
    full: dict[str, StoredNode] = field(default_factory=dict)
    position: dict[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.position = {node_id: i for i, node_id in enumerate(self.order)}

    def full_node(self, node: StoredNode) -> StoredNode:
        if node.body or node.kind not in _NEEDS_BODY:
            return node
        if node.id not in self.full:
            start = self.position.get(node.id)
            window = [node.id] if start is None else self.order[start : start + _BODY_WINDOW]
            self.full.update(self.store.get_many([i for i in window if i not in self.full]))
        return self.full.get(node.id, node)


# The start of the note saying the best match is larger than the whole budget (pack_items).
TOO_LARGE_NOTE = "the best match (~"


def pack_items(
    chosen: dict[str, tuple[StoredNode, float]],
    shelf_of: Callable[[str], Shelf | None],
    *,
    budget: int,
    header_cost: Callable[[], int],
    max_items: int | None,
    as_of: int | None,
    search_text: str,
    with_project: bool = False,
    since: int | None = None,
    until: int | None = None,
    notes: list[str] | None = None,
    author: str | None = None,
    whole: frozenset[str] = frozenset(),
    make_room: Callable[[int], None] | None = None,
    release: frozenset[str] = frozenset(),
    end_line: Callable[[str], None] | None = None,
    listing: frozenset[str] = frozenset(),
) -> tuple[list[Item], int]:
    """The one pack driver, for one store and for several: CHOSEN (id -> (node, score), in ranked order)
    packed into BUDGET with each failure's linked fixes beside it. SHELF_OF names the store an id (a
    candidate, or a fix to read) belongs to; a linked fix recorded after AS_OF, outside SINCE..UNTIL or
    run by another than AUTHOR (nexusmem.authors) is left out, as the search left out such nodes, and under
    AUTHOR `me` a conversation turn shows the person's question, not the agent's answer. HEADER_COST
    is what the header and footer take as NOTES stand (header_tokens). The ids in WHOLE (a release's entries,
    Retrieved.whole) are not capped as siblings: each is packed if it fits, and no linked item rides after it. When the best match is too large for
    the budget (it is skipped, and smaller ones below it fill the budget), a line saying so goes to NOTES.
    The ids in RELEASE (Retrieved.release) not shown as linked to another item get the relation "release";
    END_LINE is told the line that separates them from what follows (release_end), and a note in NOTES says
    how many of the release's entries the budget held when it did not hold them all (entries_note). The ids
    in LISTING (Retrieved.listing: the failures of a day, newest first) keep their order (pack's in_order),
    and a note in NOTES counts those the budget left out (listing_left_note).
    Returns (items in packed order, the tokens they take: what the answer's header leaves them or less)."""
    items: dict[str, Item] = {}
    doc_chars = doc_summary_chars(budget)  # an answer with room shows more of each doc section
    twins = doc_twins(list(chosen.values()), shelf_of)
    # The same section read twice (as a doc and as a changelog entry) has the same ref: nothing to name.
    also = {
        group[0].id: list(dict.fromkeys(n.ref for n in group[1:] if n.ref != group[0].ref))
        for group in twins.values()
        if group
    }

    def candidate(node: StoredNode, score: float) -> Candidate:
        shelf = shelf_of(node.id)
        assert shelf is not None

        def shown(linked_from: str | None = None, relation: str | None = None) -> int:
            """Its tokens as `render` prints it: its "also in" line, and its mark when shown as linked."""
            if node.id not in items:
                items[node.id] = make_item(
                    shelf.full_node(node),
                    score,
                    shelf.name,
                    search_text,
                    replaced_by=replacement(shelf.store, node),
                    root=shelf.root,
                    label=shelf.label,
                    doc_chars=doc_chars,
                    asked_only=author == authors.ME,  # what is the person's of a turn: their question
                )
                items[node.id].also_in = also.get(node.id, [])
            item = replace(items[node.id], linked_from=linked_from, relation=relation)
            return estimate_tokens(item_text(item, with_project=with_project)) + 1

        group = None if node.group is None or node.id in whole else f"{shelf.group_prefix}{node.group}"
        return Candidate(node.id, score, group, shown, floor=min_tokens(node), linked_size=shown)

    def fixes_of(node_id: str) -> list[tuple[str, str]]:
        shelf = shelf_of(node_id)
        # A release's entries (and a guide's sections) are shown together; what they link to rides not
        # between them (retrieve lists a release's described commits after its release commit).
        return [] if shelf is None or node_id in whole else shelf.links.get(node_id, [])

    def candidate_for(node_id: str) -> Candidate | None:
        if node_id in chosen:
            node, score = chosen[node_id]
            return candidate(node, score)
        shelf = shelf_of(node_id)
        if shelf is None:
            return None
        fix = shelf.store.get(node_id)
        if fix is None or not order.passes(fix, as_of, since, until, author, shelf.store.member):
            return None
        chosen[node_id] = (fix, 0.0)
        return candidate(fix, 0.0)

    sources = [
        (twins[node.id][0], score) if node.id in twins else (node, score)
        for node, score in list(chosen.values())
        if node.id not in twins or twins[node.id]
    ]
    ranked = [candidate(node, score) for node, score in sources]
    header_tokens = header_cost()

    def room_for_best() -> bool:
        """Make the header leave room for the best item as it stands (its notes on stderr): whether it fits."""
        nonlocal header_tokens
        assert make_room is not None
        make_room(ranked[0].tokens)
        header_tokens = header_cost()
        if header_tokens + ranked[0].tokens > budget:
            make_room(0)
            header_tokens = header_cost()
        return header_tokens + ranked[0].tokens <= budget

    if make_room is not None and ranked and header_tokens + ranked[0].tokens > budget and not room_for_best():
        # The best item first, the notes a small budget cannot hold with it after (on stderr): three notes
        # of 80 tokens took the place of the answer they were about. Still too large: it is shown by its
        # head alone (title, id, a commit's sha), without its files and body (~35 tokens where a whole one
        # took 83 and the answer held nothing), its title cut shorter while that is what keeps it out (a
        # release entry's 160 characters beside the note that its tag is not in HEAD's history, at 80 and
        # 100 tokens). Only an item too large even so is said not to fit.
        full, whole_item = ranked[0].tokens, items[ranked[0].id]

        def head_fits(limit: int) -> bool:
            """Show the best item by its head alone, its title cut at LIMIT characters: whether it fits."""
            title = clipped_title(whole_item.title, limit)
            items[whole_item.id] = replace(whole_item, summary="", also_in=[], title=title)
            ranked[0] = replace(candidate(*sources[0]), floor=0)  # its floor counts the title uncut
            return room_for_best()

        if any(head_fits(limit) for limit in HEAD_TITLE_CHARS):
            if notes is not None:
                notes.append(
                    f"the best match is shown without its details (~{full} tokens in full): a larger budget"
                    " or `nexusmem show ID` (MCP get_memory) shows them"
                )
                header_tokens = header_cost()
        else:
            items[whole_item.id] = whole_item
            ranked[0] = candidate(*sources[0])
            room_for_best()
    if notes is not None and ranked and header_tokens + ranked[0].tokens > budget:
        # Said before packing, so that the line is counted in the budget like the rest of the header.
        # What the budget left room for is said with it: "~34 tokens does not fit the budget of 50" read as
        # wrong arithmetic when the header and footer had spent half of it.
        room = max(0, budget - header_tokens)
        spare = f" (~{room} left after the header)" if room < budget - 10 else ""
        too_large = f"{TOO_LARGE_NOTE}{ranked[0].tokens} tokens) does not fit"
        note = f"{too_large} the budget of {budget}{spare}: a larger budget shows it"
        for fewer in (  # a small budget: the note in as few words as leave the answer within it
            f"{too_large} the budget of {budget}{spare}",
            f"{too_large} the budget of {budget}" + (f" (~{room} left)" if spare else ""),
            f"{too_large} (~{room} left)" if spare else f"{too_large} the budget of {budget}",
            too_large,
        ):
            if estimate_tokens(f"note: {note}\n") > room:
                note = fewer
        # Kept in the notes (--json, and `render` knows the matches were too large rather than none); in
        # the header where it fits, counted as header() prints it (it drops the note else).
        notes.append(note)
        header_tokens = header_cost()
    entries = [c.id for c in ranked if c.id in whole and c.id in release]
    ranked = sections_fed(
        ranked,
        frozenset(entries),
        lambda node_id: chosen[node_id][0].ref if node_id in chosen else node_id,
        budget - header_tokens,
    )
    in_order = frozenset(node_id for node_id in listing if node_id in chosen)
    placed, used = pack(
        ranked,
        budget,
        fixes_of,
        candidate_for,
        header_tokens=header_tokens,
        max_items=max_items,
        in_order=in_order,
    )
    left = in_order - {e.id for e in placed}
    if left and notes is not None:
        notes.append(listing_left_note([chosen[node_id][0] for node_id in left]))
        # The note lengthens the header: the last items give way until it fits (the header keeps its notes).
        while len(placed) > 1 and used + header_cost() > budget:
            gone = placed.pop()
            used -= estimate_tokens(item_text(items[gone.id], with_project=with_project)) + 1
            if gone.id in in_order:
                notes[-1] = listing_left_note([chosen[node_id][0] for node_id in left | {gone.id}])
                left = left | {gone.id}
    out = [
        replace(
            items[e.id],
            score=e.score,
            linked_from=e.linked_from,
            relation="release" if e.linked_from is None and e.id in release else e.relation,
        )
        for e in placed
    ]
    used -= header_tokens
    if release and end_line is not None:
        # What is said of a release's items once they are packed: the line after them when others follow
        # (RELEASE_END), and how many of its entries the budget held. The best item comes first: the header
        # keeps room for it (its notes that no longer fit go to stderr, the MCP server's after the footer),
        # and the items after it give way, the last first, until the line and the header fit.
        said: str | None = None
        wanted = set(entries)
        while True:
            if said is not None and notes is not None:
                notes.remove(said)
                said = None
            shown = sum(1 for item in out if item.id in wanted)
            if shown < len(entries) and notes is not None:
                said = entries_note(shown, len(entries))
                notes.append(said)
            end_line(release_end(out))
            if out and make_room is not None:
                make_room(estimate_tokens(item_text(out[0], with_project=with_project)) + 1)
            if len(out) < 2 or used + header_cost() <= budget:
                break
            used -= estimate_tokens(item_text(out.pop(), with_project=with_project)) + 1
    return out, used


def listing_left_note(left: list[StoredNode]) -> str:
    """The note of a listing newest first whose budget left LEFT (its oldest) out: "3 older failures not
    shown: raise --budget" (commands, or items, when they are not all failures)."""
    if all(node.kind == "shell_command" for node in left):
        noun = "failure" if all(resolved.failed(node.meta.get("exit")) for node in left) else "command"
    else:
        noun = "item"
    return f"{len(left)} older {noun}{'s' if len(left) != 1 else ''} not shown: raise --budget"


def entries_note(shown: int, total: int) -> str:
    """The note of an answer about a release whose budget showed SHOWN of its TOTAL changelog entries (none:
    the answer may hold its commit, or nothing; never "0 of 36 … shown" above an item)."""
    if not shown:
        return f"none of the {total} changelog entries of the release fit the budget (raise --budget)"
    return f"{shown} of {total} changelog entries of the release shown (raise --budget)"


def sections_fed(
    ranked: list[Candidate], entries: frozenset[str], section_of: Callable[[str], str], room: int
) -> list[Candidate]:
    """RANKED without the release ENTRIES (ids; SECTION_OF names an entry's section, its ref) that ROOM tokens
    cannot hold: when they do not all fit, each section (Changed, Fixed; each release's, across several) gets
    its first entry before any gets its second, and so on while they fit, and those chosen keep their order
    (a budget that holds 11 of 36 entries shows Fixed's first beside Changed's, not 11 of Changed's)."""
    listed = [c for c in ranked if c.id in entries]
    if not listed or sum(c.tokens for c in listed) <= room:
        return ranked
    sections: dict[str, list[Candidate]] = {}
    for c in listed:
        sections.setdefault(section_of(c.id), []).append(c)
    chosen: set[str] = set()
    used = 0
    for depth in range(max(len(members) for members in sections.values())):
        for members in sections.values():
            if depth < len(members) and used + members[depth].tokens <= room:
                chosen.add(members[depth].id)
                used += members[depth].tokens
    return [c for c in ranked if c.id not in entries or c.id in chosen]


# Doc sections with the same heading and nearly the same words (a README kept in two places, a template
# and the file made from it, a guide copied into a per-version folder) are one text: packed once, at the
# best place any of them ranked, under the path a reader would open, the others named on its "also in"
# line. Compared among the first TWIN_DEPTH doc sections (their bodies are read for packing anyway).
TWIN_DEPTH = 40
TWIN_JACCARD = 0.9


def doc_twins(
    ranked: list[tuple[StoredNode, float]], shelf_of: Callable[[str], Shelf | None]
) -> dict[str, list[StoredNode]]:
    """For each doc section of RANKED (best first) that has twins: its id -> [the twin to pack in its place,
    then the others] on the group's first (best-ranked) member, and -> [] on the other members (not
    packed). The twin packed is the first whose path has no hidden folder or file (".meta/.readme.rst" is
    the template of "README.rst"), else the best-ranked. Twins are only sought within one store."""
    groups: list[tuple[Shelf, str, set[str], list[StoredNode]]] = []
    seen = 0
    for node, _score in ranked:
        if node.kind != "doc_section":
            continue
        seen += 1
        if seen > TWIN_DEPTH:
            break
        shelf = shelf_of(node.id)
        if shelf is None:
            continue
        full = shelf.full_node(node)
        heading = full.ref.split("#", 1)[-1]
        words = set(words_of(full.body.lower()))
        for g_shelf, g_heading, g_words, members in groups:
            union = len(words | g_words)
            if (
                g_shelf is shelf
                and g_heading == heading
                and union
                and len(words & g_words) / union >= TWIN_JACCARD
            ):
                members.append(full)
                break
        else:
            groups.append((shelf, heading, words, [full]))
    out: dict[str, list[StoredNode]] = {}
    for _shelf, _heading, _words, members in groups:
        if len(members) < 2:
            continue
        keep = next((m for m in members if not _hidden(m.ref.split("#", 1)[0])), members[0])
        out[members[0].id] = [keep] + [m for m in members if m is not keep]
        for m in members[1:]:
            out[m.id] = []
    return out


def _hidden(path: str) -> bool:
    return any(part.startswith(".") and part not in (".", "..") for part in path.split("/"))


def min_tokens(node: StoredNode) -> int:
    """A lower bound of the token cost of NODE's item, without its summary: the first two lines of item_text
    (date, provenance tag, title cut at 160 characters; the id line) are part of every rendering."""
    title = node.title[:TITLE_CHARS]
    return (len(f"- 0000-00-00 [{node.provenance}] {title}\n  id {node.id}") // 4) + 1


def shown_query(text: str, budget: int | None = None) -> str:
    """The question as the answer's header echoes it: one line, at most SHOWN_QUERY_CHARS, and at most a
    quarter of BUDGET's tokens (a pasted log, or a long question under a small budget, must not spend the
    budget on its own echo)."""
    line = " ".join(text.split())
    limit = SHOWN_QUERY_CHARS if budget is None else max(24, min(SHOWN_QUERY_CHARS, budget))
    return line if len(line) <= limit else line[: limit - 1] + "…"


def header(result: QueryResult, scope: str | None = None) -> str:
    """The lines `render` prints above the items (counted against the budget, with the footer). A weak
    answer starts with WEAK_LINE, where a reader (or an agent checking the first line) sees it first.

    Under a budget too small for all of it (50 tokens for a weak answer to a long question across many
    projects), the lines give way, in this order, until the header and the footer fit: the weak line's
    explanation (it still starts "No strong match"), the list of projects, the echoed question, and last
    the notes (they say what was done: a question cut, a best match too large). A note that does not fit
    even when all the rest has given way is left out first, so that it takes nothing else with it
    (`left_out` names it: the CLI prints it on stderr, the MCP server after the footer)."""
    room = result.budget - FOOTER_TOKENS - result.item_room

    def text(weak: list[str], echo: str, scope: str | None, notes: list[str]) -> str:
        lines = [*weak, f"Relevant history for: {echo}", *([scope] if scope is not None else []), *notes]
        return "\n".join(lines) + "\n"

    weak = [WEAK_LINE] if result.weak else []
    echo = shown_query(result.query, result.budget)
    least = ([WEAK_SHORT] if weak else [], shown_query(result.query, 24), scope and scope.split(":", 1)[0])
    notes: list[str] = []

    def holds(note: str) -> bool:
        # An answer with no item says why: its best match too large (TOO_LARGE_NOTE) stays with it too.
        told = note.removeprefix("note: ")
        if binding(note) or settles(told):
            return True
        return not result.items and told.startswith("the best match") and "not fit" in told

    for note in result.notes:
        if estimate_tokens(text(*least, [*notes, f"note: {note}"])) <= room:
            notes.append(f"note: {note}")
        elif holds(note):  # never on stderr alone: the answer would read as what it is not
            short = binding_short(note)
            if estimate_tokens(text(*least, [*notes, f"note: {short}"])) > room:
                short = binding_least(short)
            notes.append(f"note: {short}")
    kept = [line for line in notes if holds(line)]
    for shorter in (binding_short, fewest):
        # Each fitted beside those before it, not beside those after (the line that the best match does not
        # fit came last): together, in fewer words, then in their fewest.
        if estimate_tokens(text(*least, kept)) <= room:
            break
        notes = [shorter(line) if line in kept else line for line in notes]
        kept = [line for line in notes if holds(line)]
    if result.packed and not result.items and estimate_tokens(text(*least, kept)) > room:
        # Nothing shown, so nothing for a binding note to qualify: the line saying why stays (one line,
        # within the budget), the binding notes go beside the answer (left_out) with the rest.
        notes = [line for line in notes if not binding(line)]
        kept = [line for line in notes if holds(line)]
        if any(settles(line) for line in kept) and estimate_tokens(text(*least, kept)) > room:
            # The answer is that nothing of what was asked is recorded: the line saying that the best match
            # (an old one the words matched) does not fit gives way to it.
            kept = [line for line in kept if settles(line)]
    if weak and estimate_tokens(text(weak, echo, scope, notes)) > room:
        weak = [WEAK_SHORT]
    if scope is not None and estimate_tokens(text(weak, echo, scope, notes)) > room:
        scope = scope.split(":", 1)[0]
    if estimate_tokens(text(weak, echo, scope, notes)) > room:
        echo = shown_query(result.query, 24)
    while len(notes) > len(kept) and estimate_tokens(text(weak, echo, scope, notes)) > room:
        notes.remove(next(line for line in reversed(notes) if line not in kept))
    return text(weak, echo, scope, notes)


# Notes that change what the items mean: without them a lone commit reads as the removal asked about, or a
# release's window as HEAD's (header keeps them at any budget, shortened when need be).
_BINDING = (
    "is still in the code",
    "is only in a comment now",
    "is not in the code any more",
    "was not removed: it was renamed",
    "is not in the work tree any more",
    "not in HEAD's history",
    "no such release",
)


# Notes that are the answer themselves: memory holds nothing of what was asked for in the time it names ("which
# tests failed yesterday": none ran). Short, and kept at any budget: without them the answer reads as no
# answer at all, or as the old matches that follow.
_SETTLING = (
    "no recorded run of ",
    "no recorded command ",
    "no commit or command recorded",
    "no question you asked ",
    "no change recorded ",
    "no run of ",
)


def settles(note: str) -> bool:
    """Whether NOTE is the answer itself (_SETTLING): nothing recorded of what the question asks for."""
    return note.removeprefix("note: ").startswith(_SETTLING)


def binding(note: str) -> bool:
    """Whether NOTE changes what the answer's items mean (_BINDING): it stays with them at any budget."""
    return any(phrase in note for phrase in _BINDING)


def binding_short(note: str) -> str:
    """NOTE's binding clauses alone, without what they name in parentheses: "ParserError is still in the
    code: no change removed it"."""
    clauses = [clause for clause in note.split("; ") if binding(clause)]
    if not clauses and settles(note):
        # The answer is its first clause ("no run of tests failed yesterday"); what follows says how the
        # items are ordered.
        clauses = note.split("; ")[:1]
    clauses = clauses or [note]
    return "; ".join(re.sub(r" \([^)]*\)", "", clause) for clause in clauses)


def fewest(line: str) -> str:
    """A header's note LINE kept at any budget in its fewest words (binding_short, then binding_least): "the
    best match does not fit", "release 0.15.1: its tag is not in HEAD's history"."""
    return binding_least(binding_short(line))


def binding_least(note: str) -> str:
    """NOTE (binding_short's) in the fewest words that keep its meaning, for a budget that holds the best item
    only beside them: without the commit a tag names ("release 0.15.1: its tag is not in HEAD's history")."""
    return _NAMED_COMMIT.sub(" is ", note)


_NAMED_COMMIT = lazyre.compile(r" is commit [0-9a-f]{7,40}, which is ")


def linked_fixes(
    store: SearchStore,
    links: dict[str, list[tuple[str, str]]],
    matched: set[str] | frozenset[str],
    *,
    as_of: int | None,
    since: int | None,
    until: int | None,
    author: str | None = None,
) -> int:
    """How many fixes LINKS (from the ranked ids) names that are not among the MATCHED ids and pass the
    query's filters (AUTHOR's too): each rides along after its failure, so it counts among the matches
    ("5 of 2 match(es) shown" otherwise), whatever the budget lets through."""
    fixes = sorted({fix for pairs in links.values() for fix, _rel in pairs} - matched)
    if not fixes:
        return 0
    nodes = store.get_many(fixes, light=True)
    return sum(
        1
        for fix in fixes
        if fix in nodes and order.passes(nodes[fix], as_of, since, until, author, store.member)
    )


def footer(result: QueryResult) -> str:
    return f"{len(result.items)} of {result.matched} match(es) shown, ~{result.tokens_used}/{result.budget} tokens"


# What the footer costs, counted before packing: its numbers at their widest.
FOOTER_TOKENS = estimate_tokens("\n99 of 9999999 match(es) shown, ~100000/100000 tokens")


def header_tokens(result: QueryResult, scope: str | None = None) -> int:
    """The tokens the answer spends besides its items: header, the blank line, the footer, and the line
    after a release's items (RELEASE_END) when it is printed."""
    end = estimate_tokens(result.release_end + "\n") if result.release_end else 0
    return estimate_tokens(header(result, scope)) + FOOTER_TOKENS + end


def release_end(items: list[Item]) -> str:
    """RELEASE_END when ITEMS hold a release's items (relation "release") and others after the last of them;
    "" otherwise (nothing to separate)."""
    marks = [item.relation == "release" for item in items]
    return RELEASE_END if any(marks) and not marks[-1] else ""


def add_note(result: QueryResult, note: str, budget: int) -> None:
    """NOTE said in RESULT's header after RESULT was packed into a budget that kept room for it, and BUDGET
    (the one asked for) made its budget: `tokens_used` counts the header as it now prints."""
    items = result.tokens_used - header_tokens(result)
    result.notes.append(note)
    result.budget = budget
    result.tokens_used = items + header_tokens(result)


def left_out(result: QueryResult, text: str) -> list[str]:
    """The notes of RESULT that its rendered TEXT does not hold: a budget too small for them left them out of
    the header (they are said beside the answer, outside its budget: on stderr, or after the footer)."""
    return [note for note in result.notes if note and f"note: {note}" not in text]


def to_json(result: QueryResult) -> dict[str, Any]:
    """The `query --json` contract of docs/contracts.md, plus `weak` (no candidate matches the question well:
    the items are only the closest few) and `notes` (what was done to the question, e.g. cut)."""
    return {
        "query": result.query,
        "query_cut": result.query_cut,
        "budget": result.budget,
        "tokens_used": result.tokens_used,
        "matched": result.matched,
        "bm25_matched": result.bm25_matched,
        "vector_matched": result.vector_matched,
        "items": [
            {
                "id": it.id,
                "kind": it.kind,
                "ts": timefmt.iso(it.ts),
                "title": it.title,
                "summary": it.summary,
                "provenance": it.provenance,
                "trust": it.trust,
                "score": round(it.score, 6),
                "project": it.project,
                "ref": it.ref,
                "author": it.author or None,
                "linked_from": it.linked_from,
                "relation": it.relation if it.linked_from or it.relation == "release" else None,
                "also_in": list(it.also_in),
                "superseded": it.superseded,
                "superseded_by": it.superseded_by,
            }
            for it in result.items
        ],
        "weak": result.weak,
        "notes": list(result.notes),
    }


def render(result: QueryResult, *, with_project: bool = False, scope: str | None = None) -> str:
    """The packed block a person (and an agent) reads. Same store and query → same bytes. WITH_PROJECT tags
    each item with its project and adds the SCOPE line (by default, the list of RESULT.projects)."""
    if not result.items and not any(note.startswith(TOO_LARGE_NOTE) for note in result.notes):
        # Nothing matched, or every match was filtered out (--author, a window): nothing to show. When the
        # matches were only too large for the budget, the header's note says so instead.
        return "\n".join(
            [
                f"No memory matches: {shown_query(result.query, result.budget)}",
                *(f"note: {n}" for n in result.notes),
            ]
        )
    if with_project and scope is None:
        scope = f"scope   {len(result.projects)} project(s): {', '.join(result.projects)}"
    elif not with_project:
        scope = None
    lines = [header(result, scope)]
    last = max((n for n, it in enumerate(result.items) if it.relation == "release"), default=None)
    for n, it in enumerate(result.items):
        lines.append(item_text(it, with_project=with_project))
        if n == last and result.release_end and n + 1 < len(result.items):
            lines.append(result.release_end)
    if result.items:
        lines.append("")
    lines.append(footer(result))
    return "\n".join(lines)
