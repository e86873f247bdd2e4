"""Fusing ranked lists.

Within one project the lists are fused on their scores (`evidence`): a BM25 score divided by the query's
best BM25 score, and a cosine similarity above the embedder's noise floor. Rank-only fusion (RRF, K = 60)
made rank 1 in both lists only ~6% better than rank 5 in both, and halved an item that is strong in one
list and absent from the other. Across projects the lists are fused by rank (`rrf`): a BM25 score is
computed against its own corpus and means different things in a 50-node and a 50,000-node database.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

RRF_K = 60


def rrf(lists: Sequence[Sequence[str]], k: int = RRF_K) -> dict[str, float]:
    """id -> Σ 1/(k + rank) over the lists it appears in (rank starts at 1)."""
    scores: dict[str, float] = {}
    for ranked in lists:
        for position, item in enumerate(ranked, start=1):
            scores[item] = scores.get(item, 0.0) + 1.0 / (k + position)
    return scores


@dataclass(frozen=True)
class Evidence:
    """What the retrieval lists say about one node, each part in [0, 1].

    lexical: its BM25 score over the best BM25 score of the query (the CJK trigram list counts the same
    way; a node in both takes the larger share). semantic: its cosine similarity above the floor,
    max(0, cos - floor) / (1 - floor); cosine is the raw similarity (0 when not in the vector list)."""

    lexical: float = 0.0
    semantic: float = 0.0
    cosine: float = 0.0


def evidence(
    lexical: Sequence[Sequence[tuple[str, float]]],
    neighbours: Sequence[tuple[str, float]],
    floor: float,
    scales: Sequence[float] | None = None,
) -> dict[str, Evidence]:
    """Each listed node's Evidence. LEXICAL: (id, score) lists, higher better (BM25, CJK trigrams), each
    list's shares multiplied by its SCALES entry (default 1); NEIGHBOURS: (id, cosine similarity); FLOOR:
    the embedder's noise floor."""
    lex: dict[str, float] = {}
    for index, ranked in enumerate(lexical):
        best = max((score for _, score in ranked), default=0.0)
        if best <= 0.0:
            continue
        scale = 1.0 if scales is None else scales[index]
        for node_id, score in ranked:
            share = scale * max(0.0, score) / best
            if share > lex.get(node_id, 0.0):
                lex[node_id] = share
    span = max(1e-9, 1.0 - floor)
    sem = {node_id: (max(0.0, cos - floor) / span, cos) for node_id, cos in neighbours}
    out: dict[str, Evidence] = {}
    for node_id in dict.fromkeys([*lex, *sem]):
        semantic, cosine = sem.get(node_id, (0.0, 0.0))
        out[node_id] = Evidence(lex.get(node_id, 0.0), min(1.0, semantic), cosine)
    return out


# The few nodes nearest to the question by its vector gain NEAREST_LIFT × (1 - place / NEAREST_DEPTH) on
# their semantic share (place 0 for the nearest), at most 1. A cosine is absolute: the nearest node of a
# project where every text sits far from the question keeps a share (.35) that a node holding one rare word
# of a long question outscores, and a change that says in other words what a user reports ("Fix Scanner
# that does not read entire value" for "my decoder only consumes the first byte") fell below the first
# twenty, where the learned last step then never saw it. Being the nearest is evidence of its own. Every
# labelled set (87 sets, 8,030 questions, each set answered with a question map fitted on the others;
# docs/evaluation.md, fifty-seventh wave), MRR / R@5 .7127 / .8289 without; over the nearest five .7151 /
# .8350 at .1 (R@1 .6202 -> .6207), .7140 / .8361 at .15; at .25, stopped after 3,215 questions, .7140 /
# .8345 where those had .7182 / .8271 without; the nearest ten at .1, .7153 / .8346.
NEAREST_LIFT = 0.1
NEAREST_DEPTH = 5


def lift_nearest(
    evidence: dict[str, Evidence],
    nearest: Sequence[tuple[str, float]],
    lift: float = NEAREST_LIFT,
    only: Collection[str] | None = None,
) -> dict[str, Evidence]:
    """EVIDENCE with the semantic share of the first NEAREST_DEPTH of NEAREST (the k-NN's list, nearest
    first) raised by LIFT times 1 - place / NEAREST_DEPTH (capped at 1); changed in place and returned.
    ONLY: the ids that may be lifted (the others keep their share, and their place in NEAREST)."""
    if lift <= 0:
        return evidence
    for place, (node_id, _cosine) in enumerate(nearest[:NEAREST_DEPTH]):
        ev = evidence.get(node_id)
        if ev is not None and (only is None or node_id in only):
            bonus = lift * (1.0 - place / NEAREST_DEPTH)
            evidence[node_id] = Evidence(ev.lexical, min(1.0, ev.semantic + bonus), ev.cosine)
    return evidence
