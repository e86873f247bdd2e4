"""score = relevance × signal_w^SE × recency^RE — the original's ranking, constants from DESIGN.md.

relevance is the fused retrieval score min-maxed into [.15, 1]; signal_w = .2 + .8·signal; recency decays
with a half-life of 30 days × a provenance factor (observed facts fade slowest). SE and RE bound the two
priors *jointly*: across their whole range they can overturn relevance by at most M = 2×.
"""

from __future__ import annotations

import math

RELEVANCE_FLOOR = 0.15
MAX_PRIOR_GAP = 2.0  # M
SIGNAL_EXP = math.log(math.sqrt(MAX_PRIOR_GAP)) / math.log(5)  # ≈ .215: signal_w spans .2..1 (5×)
RECENCY_EXP = math.log(math.sqrt(MAX_PRIOR_GAP)) / math.log(1 / 0.3)  # ≈ .288: recency spans .3..1
HALF_LIFE_DAYS = 30.0
PROVENANCE_RATE = {"observed": 1.0, "authored": 0.75, "recorded": 0.5, "derived": 0.35}
SUPERSEDED_FACTOR = 0.5
REJECTED_FACTOR = 0.3
DAY_MS = 86_400_000


def normalise(scores: dict[str, float]) -> dict[str, float]:
    """Min-max into [RELEVANCE_FLOOR, 1]; a single score (or all equal) maps to 1."""
    if not scores:
        return {}
    lo, hi = min(scores.values()), max(scores.values())
    if hi - lo < 1e-12:
        return dict.fromkeys(scores, 1.0)
    span = 1.0 - RELEVANCE_FLOOR
    return {k: RELEVANCE_FLOOR + span * (v - lo) / (hi - lo) for k, v in scores.items()}


def recency(ts_ms: int, now_ms: int, provenance: str) -> float:
    age_days = max(0.0, (now_ms - ts_ms) / DAY_MS)
    rate = PROVENANCE_RATE.get(provenance, 1.0)
    return 0.3 + 0.7 * math.pow(2.0, -age_days / (HALF_LIFE_DAYS * rate))


def score(
    relevance: float,
    signal: float,
    ts_ms: int,
    now_ms: int,
    provenance: str,
    *,
    superseded: bool = False,
    rejected: bool = False,
) -> float:
    signal_w = 0.2 + 0.8 * max(0.0, min(1.0, signal))
    value = (
        relevance * math.pow(signal_w, SIGNAL_EXP) * math.pow(recency(ts_ms, now_ms, provenance), RECENCY_EXP)
    )
    if superseded:
        value *= SUPERSEDED_FACTOR
    if rejected:
        value *= REJECTED_FACTOR
    return value
