"""Reciprocal Rank Fusion: lists are combined by rank position only, never by raw scores."""

from __future__ import annotations

from collections.abc import Sequence

RRF_K = 60


def rrf(lists: Sequence[Sequence[str]], k: int = RRF_K) -> dict[str, float]:
    """id -> Σ 1/(k + rank) over the lists it appears in (rank starts at 1)."""
    scores: dict[str, float] = {}
    for ranked in lists:
        for position, item in enumerate(ranked, start=1):
            scores[item] = scores.get(item, 0.0) + 1.0 / (k + position)
    return scores
