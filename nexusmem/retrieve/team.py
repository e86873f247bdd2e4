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
) -> tuple[multi._Searched, dict[str, int]]:
    as_of, since, until = window
    found = query.retrieve(
        store, text, as_of=as_of, since=since, until=until, settings=settings, author=author
    )
    target = multi.Target(name=name, root=root, db=store.path)
    return multi.searched_from(index, target, store, found), found.counts


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
    asked = query.prepare(text)
    result = multi.MultiResult(query=asked.text, budget=budget, notes=list(asked.notes), query_cut=asked.cut)
    if team_note:
        result.notes.append(team_note)
    filters = (as_of, since, until)
    searched = []
    counted: list[dict[str, int]] = []
    stores: list[tuple[str, SearchStore]] = [(project, local)]
    if team is not None:
        stores.append((TEAM_NAME, team))
    for index, (name, store) in enumerate(stores):
        one, counts = _searched(index, name, str(root), store, text, filters, settings, author)
        searched.append(one)
        result.projects.append(name)
        result.roots.append(str(root))
        counted.append(counts)
    # What both hold counts once.
    result.matched, result.bm25_matched, result.vector_matched = multi.distinct_counts(searched, counted)
    if team is not None and getattr(team, "knn_skipped", False):
        result.notes.append(
            "the team store is still indexing a large push's vectors: its nodes are matched by words only"
        )
    result.weak = all(s.weak for s in searched)
    multi._fuse_and_pack(result, searched, text, budget, as_of, since, until, author)
    return result


def to_json(result: multi.MultiResult) -> dict[str, Any]:
    """`query --team --json`: the `query --json` object plus, on every item, `recorded_by` (the member who
    pushed it first; "" for an item from this machine's memory) and `verdict_by` (the member whose verdict
    its `trust` is; "" for an item without one and for this machine's own), and `projects` ({name, root} of
    this project and of "team")."""
    data = query.to_json(result)
    for item, out in zip(result.items, data["items"]):
        out["recorded_by"] = item.recorded_by
        out["verdict_by"] = item.verdict_by
    data["projects"] = [{"name": n, "root": r} for n, r in zip(result.projects, result.roots)]
    return data
