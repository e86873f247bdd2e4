"""One query against one project's store: retrieve → fuse → rank → pack. Returns plain data for present."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from nexusmem import timefmt
from nexusmem.retrieve import cjk, fuse, rank, search, vector
from nexusmem.retrieve.pack import Candidate, pack
from nexusmem.retrieve.summarise import summary as make_summary
from nexusmem.store import Store, StoredNode

DEFAULT_BUDGET = 2000
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


@dataclass
class QueryResult:
    query: str
    budget: int
    tokens_used: int = 0
    matched: int = 0
    bm25_matched: int = 0
    vector_matched: int = 0
    items: list[Item] = field(default_factory=list)
    projects: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def parse_as_of(value: str | None) -> int | None:
    """ISO 8601 date or time → epoch ms for --as-of / asOf (a naive value is UTC; 'Z' accepted)."""
    from datetime import datetime, timezone

    from nexusmem.errors import NexusMemError

    if value is None or not value.strip():
        return None
    text = value.strip()
    if text.endswith(("Z", "z")):  # Python 3.10's fromisoformat does not take the Z suffix
        text = text[:-1] + "+00:00"
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise NexusMemError(
            f"{value!r} is not a date: use YYYY-MM-DD or an ISO 8601 time such as 2024-05-01T12:00:00Z"
        ) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return int(moment.timestamp() * 1000)


def item_text(item: Item, *, with_project: bool = False) -> str:
    """The plain-text lines of one item: what `query` prints and what the token estimate counts."""
    date = timefmt.day(item.ts)
    tags = f"[{item.provenance}]"
    if item.trust != "candidate":
        tags += f" [{item.trust}]"
    if with_project:
        tags += f" [{item.project}]"
    title = item.title if len(item.title) <= 160 else item.title[:159] + "…"
    head = f"- {date} {tags} {title}"
    if item.linked_from and item.relation == "changelog":
        head += "  -- the commit this changelog entry describes"
    elif item.linked_from:
        head += f"  -- linked as the fix ({item.relation})"
    lines = [head, f"  id {item.id}"]
    lines += ["  " + line for line in item.summary.splitlines() if line.strip()]
    return "\n".join(lines)


def make_item(node: StoredNode, score: float, project: str, query: str) -> Item:
    """The presentable item for NODE (its summary chosen for QUERY)."""
    return Item(
        id=node.id,
        kind=node.kind,
        ts=node.ts,
        title=node.title,
        summary=make_summary(node, query),
        provenance=node.provenance,
        trust=node.trust,
        score=score,
        project=project,
        ref=node.ref,
    )


def score_fused(
    store: Store, fused: dict[str, float], as_of: int | None = None
) -> list[tuple[StoredNode, float]]:
    """Fused retrieval scores → final scores (min-max relevance × priors), best first.

    Ties are broken by id so that the same store and query give the same bytes."""
    relevance = rank.normalise(fused)
    nodes = store.get_many(list(fused), light=True)
    now = store.reference_time(as_of) or 0
    scored: list[tuple[StoredNode, float]] = []
    for node_id, rel in relevance.items():
        node = nodes.get(node_id)
        if node is None:
            continue
        value = rank.score(
            rel,
            node.signal,
            node.ts,
            now,
            node.provenance,
            superseded=node.superseded_by is not None,
            rejected=node.trust == "rejected",
        )
        scored.append((node, value))
    scored.sort(key=lambda pair: (-round(pair[1], 9), pair[0].id))
    return scored


def ranked_candidates(
    store: Store,
    text: str,
    *,
    as_of: int | None = None,
    limit: int = search.CANDIDATES,
    vectors: bool = True,
) -> tuple[list[tuple[StoredNode, float]], dict[str, int]]:
    """Nodes matching TEXT with their final scores, best first, plus match counts.

    Ranked lists fused by RRF: BM25 over the word index; the CJK trigram index when TEXT has CJK
    characters; vector k-NN when the store holds vectors and their provider answers (VECTORS=False skips).
    """
    bm25_ids, bm25_total = search.bm25(store, text, limit=limit, as_of=as_of)
    lists = [bm25_ids]
    # A run of CJK characters is one token to the word index: the trigram index recalls its substrings.
    cjk_ids = cjk.search(store, text, limit=limit, as_of=as_of)
    vector_ids = vector.knn(store, text, as_of=as_of) if vectors else []
    lists += [ids for ids in (cjk_ids, vector_ids) if ids]
    fused = fuse.rrf(lists)
    scored = score_fused(store, fused, as_of)
    lexical_extra = len(set(cjk_ids) - set(bm25_ids))
    counts = {
        # Distinct ids in the fused lists, plus the BM25 matches past the candidate cut.
        "matched": len(fused) + max(0, bm25_total - len(bm25_ids)),
        "bm25": bm25_total + lexical_extra,
        "vector": len(vector_ids),
    }
    return scored, counts


def run(
    store: Store,
    text: str,
    *,
    project: str,
    budget: int = DEFAULT_BUDGET,
    as_of: int | None = None,
    vectors: bool = True,
) -> QueryResult:
    """Answer TEXT from one store within BUDGET tokens (VECTORS=False: lexical lists only)."""
    result = QueryResult(query=text, budget=budget, projects=[project])
    scored, counts = ranked_candidates(store, text, as_of=as_of, vectors=vectors)
    result.matched, result.bm25_matched, result.vector_matched = (
        counts["matched"],
        counts["bm25"],
        counts["vector"],
    )
    by_id: dict[str, tuple[StoredNode, float]] = {n.id: (n, s) for n, s in scored}
    items: dict[str, Item] = {}

    order = [n.id for n, _ in scored]
    position = {node_id: i for i, node_id in enumerate(order)}
    full: dict[str, StoredNode] = {}

    def full_node(node: StoredNode) -> StoredNode:
        # Ranking ran on light rows; bodies are read only for items the packer actually considers, a
        # window of them at a time (one query instead of one per item).
        if node.body or node.kind not in _NEEDS_BODY:
            return node
        if node.id not in full:
            start = position.get(node.id)
            window = [node.id] if start is None else order[start : start + _BODY_WINDOW]
            full.update(store.get_many([i for i in window if i not in full]))
        return full.get(node.id, node)

    def candidate(node: StoredNode, score: float) -> Candidate:
        def cost() -> int:
            item = make_item(full_node(node), score, project, text)
            items[node.id] = item
            return _tokens(item)

        return Candidate(node.id, score, node.group, cost)

    links: dict[str, list[tuple[str, str]]] = {}
    for src, dst, rel in store.links_from([n.id for n, _ in scored]):
        links.setdefault(src, []).append((dst, rel))

    def fixes_of(node_id: str) -> list[tuple[str, str]]:
        return links.get(node_id, [])

    def candidate_for(node_id: str) -> Candidate | None:
        if node_id in by_id:
            node, score = by_id[node_id]
            return candidate(node, score)
        fix = store.get(node_id)
        if fix is None or (as_of is not None and fix.created_at > as_of):
            return None
        by_id[node_id] = (fix, 0.0)
        return candidate(fix, 0.0)

    ranked = [candidate(n, s) for n, s in scored]
    placed, used = pack(ranked, budget, fixes_of, candidate_for, header_tokens=_header_tokens(text))
    for entry in placed:
        base = items[entry.id]
        result.items.append(
            Item(
                **{
                    **base.__dict__,
                    "score": entry.score,
                    "linked_from": entry.linked_from,
                    "relation": entry.relation,
                }
            )
        )
    result.tokens_used = used
    return result


def _tokens(item: Item) -> int:
    from nexusmem.retrieve.pack import estimate_tokens

    return estimate_tokens(item_text(item)) + 1


def _header_tokens(text: str) -> int:
    from nexusmem.retrieve.pack import estimate_tokens

    return estimate_tokens(f"Relevant history for: {text}\n")


def to_json(result: QueryResult) -> dict[str, Any]:
    """The `query --json` contract of DESIGN.md."""
    return {
        "query": result.query,
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
                "linked_from": it.linked_from,
            }
            for it in result.items
        ],
    }


def render(result: QueryResult, *, with_project: bool = False) -> str:
    """The packed block a person (and an agent) reads. Same store and query → same bytes."""
    if not result.items:
        return f"No memory matches: {result.query}"
    lines = [f"Relevant history for: {result.query}"]
    if with_project:
        lines.append(f"scope   {len(result.projects)} project(s): {', '.join(result.projects)}")
    lines.append("")
    lines += [item_text(it, with_project=with_project) for it in result.items]
    lines.append("")
    lines.append(
        f"{len(result.items)} of {result.matched} match(es) shown, ~{result.tokens_used}/{result.budget} tokens"
    )
    return "\n".join(lines)
