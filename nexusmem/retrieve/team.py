"""`query --team`: this project's memory and the team store, each ranked by the same code, fused by rank.

The team store is a SearchStore like the local one, so `query.retrieve` ranks it with the same scoring
(BM25-like lexical list over its tsvector, HNSW k-NN, the same priors). The two ranked lists are fused with
RRF on positions, as --all-projects fuses projects (a lexical score means different things in two corpora),
and a node both hold appears once, from the list that ranked it better (or the team's, when only the team holds
a verdict on it: multi._fuse_and_pack). Team items carry who recorded them and whose verdict they carry.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from nexusmem.retrieve import multi, query, rank
from nexusmem.retrieve.answer import to_json as answer_json
from nexusmem.retrieve.question import prepare
from nexusmem.store.interface import SearchStore

TEAM_NAME = "team"


def _searched(
    index: int,
    name: str,
    root: str,
    store: SearchStore,
    text: str,
    window: tuple[int | None, int | None, int | None],
    settings: rank.Settings,
    author: str | None,
) -> tuple[multi._Searched, query.Retrieved]:
    as_of, since, until = window
    found = query.retrieve(
        store, text, as_of=as_of, since=since, until=until, settings=settings, author=author
    )
    target = multi.Target(name=name, root=root, db=store.path)
    return multi.searched_from(index, target, store, found), found


def _notes(local: SearchStore, found: list[query.Retrieved], as_of: int | None, root: Path) -> list[str]:
    """This memory's notes as its own answer gives them (query.answer_notes: what a rule found, HEAD moved
    since the last sync, ...), then the team store's question notes it did not say: none twice, and none of
    the team's that says the same thing of something else ("first change that holds X: <another sha>"),
    since this memory's answer is the one put first. A listing's note is said once, by the fusion."""
    listing = {f.listing_note for f in found if f.listing_note}
    notes = [n for n in query.answer_notes(local, found[0], as_of=as_of, root=root) if n not in listing]
    heads = {note.split(": ", 1)[0] for note in notes}
    for other in found[1:]:
        for note in other.question.notes:
            if note not in listing and note not in notes and note.split(": ", 1)[0] not in heads:
                notes.append(note)
    return notes


def search(
    local: SearchStore,
    team: SearchStore | None,
    text: str,
    *,
    project: str,
    root: Path,
    budget: int = query.DEFAULT_BUDGET,
    as_of: int | None = None,
    since: int | None = None,
    until: int | None = None,
    settings: rank.Settings = rank.DEFAULT,
    team_note: str | None = None,
    author: str | None = None,
) -> multi.MultiResult:
    """Answer TEXT from LOCAL and TEAM (None: unreachable; TEAM_NOTE then says why, as one note line);
    AUTHOR (nexusmem.authors) keeps the commands of that author in both lists."""
    asked = prepare(text)
    author, named = query.asked_author(asked.text, author)
    result = multi.MultiResult(query=asked.text, budget=budget, query_cut=asked.cut)
    filters = (as_of, since, until)
    searched = []
    found: list[query.Retrieved] = []
    stores: list[tuple[str, SearchStore]] = [(project, local)]
    if team is not None:
        stores.append((TEAM_NAME, team))
    for index, (name, store) in enumerate(stores):
        one, answer = _searched(index, name, str(root), store, text, filters, settings, author)
        searched.append(one)
        found.append(answer)
        result.projects.append(name)
        result.roots.append(str(root))
    counted = [answer.counts for answer in found]
    result.notes = [*named, *_notes(local, found, as_of, root)]
    if team_note:
        result.notes.append(team_note)
    # What both hold counts once.
    result.matched, result.bm25_matched, result.vector_matched = multi.distinct_counts(searched, counted)
    if team is not None and getattr(team, "knn_skipped", False):
        result.notes.append(
            "the team store is still indexing a large push's vectors: its nodes are matched by words only"
        )
    result.weak = all(s.weak for s in searched)
    # What a rule put first on purpose stays first, as in this memory's own answer ("where did X come
    # from?": the first change that holds it), then the team's when this memory's rules pinned nothing.
    first = next((ids for ids in map(query.pinned, found) if ids), [])
    multi._fuse_and_pack(
        result, searched, text, budget, as_of, since, until, author, first=first, own_notes=False, home=0
    )
    return result


def to_json(result: multi.MultiResult) -> dict[str, Any]:
    """`query --team --json`: the `query --json` object plus, on every item, `recorded_by` (the member who
    pushed it first; "" for an item from this machine's memory) and `verdict_by` (the member whose verdict
    its `trust` is; "" for an item without one and for this machine's own), and `projects` ({name, root} of
    this project and of "team")."""
    data = answer_json(result)
    for item, out in zip(result.items, data["items"]):
        out["recorded_by"] = item.recorded_by
        out["verdict_by"] = item.verdict_by
    data["projects"] = [{"name": n, "root": r} for n, r in zip(result.projects, result.roots)]
    return data
