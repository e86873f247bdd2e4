"""Ranking arithmetic: bounded priors, recency by provenance, reciprocal-rank fusion, budget packing."""

from __future__ import annotations

import math

import pytest

from nexusmem.retrieve import fuse, rank
from nexusmem.retrieve.pack import Candidate, pack


def test_priors_are_bounded_and_age_counts_only_where_it_should() -> None:
    best = rank.score(1.0, 1.0, 0, 0, "observed")
    assert math.isclose(best / rank.score(1.0, 0.0, 0, 0, "observed"), rank.SIGNAL_GAP, rel_tol=1e-6)
    # A years-old commit weighs what a fresh one does, unless the question asks about time.
    assert rank.score(1.0, 1.0, 0, 10**15, "observed") == pytest.approx(best)
    cued = rank.score(1.0, 1.0, 0, 10**15, "observed", time_cue=True)
    assert math.isclose(best / cued, rank.CUE_RECENCY_GAP, rel_tol=1e-6)
    old_command = rank.score(1.0, 1.0, 0, 10**15, "observed", kind="shell_command")
    assert math.isclose(best / old_command, rank.RECENCY_GAP, rel_tol=1e-6)
    assert rank.score(1.0, 0.5, 0, 0, "observed", superseded=True) == pytest.approx(
        rank.SUPERSEDED_FACTOR * rank.score(1.0, 0.5, 0, 0, "observed")
    )
    assert rank.score(1.0, 0.5, 0, 0, "observed", rejected=True) == pytest.approx(
        rank.REJECTED_FACTOR * rank.score(1.0, 0.5, 0, 0, "observed")
    )


def test_recency_fades_faster_for_less_trusted_provenance() -> None:
    month = 30 * rank.DAY_MS
    assert rank.recency(0, month, "observed") == pytest.approx(0.3 + 0.7 * 0.5)
    assert (
        rank.recency(0, month, "derived")
        < rank.recency(0, month, "recorded")
        < rank.recency(0, month, "authored")
        < rank.recency(0, month, "observed")
    )


def test_rrf_uses_positions_only() -> None:
    scores = fuse.rrf([["a", "b"], ["b", "c"]])
    assert scores["b"] == pytest.approx(1 / 62 + 1 / 61)
    assert scores["a"] == pytest.approx(1 / 61) and scores["c"] == pytest.approx(1 / 62)


def test_pack_skips_what_does_not_fit_caps_siblings_and_places_fixes() -> None:
    ranked = [
        Candidate("big", 1.0, None, 500),
        Candidate("s1", 0.9, "doc", 10),
        Candidate("s2", 0.8, "doc", 10),
        Candidate("s3", 0.7, "doc", 10),
        Candidate("fail", 0.6, None, 10),
        Candidate("small", 0.5, None, 10),
    ]
    fixes = {"fail": [("fix", "retry")]}
    extra = {"fix": Candidate("fix", 0.0, None, 10)}
    placed, used = pack(ranked, 100, lambda i: fixes.get(i, []), extra.get)
    order = [(p.id, p.linked_from) for p in placed]
    assert order == [("s1", None), ("s2", None), ("fail", None), ("fix", "fail"), ("small", None)]
    assert placed[3].score == 0.6 and used == 50


def test_a_fix_ranked_above_its_failure_stays_there_unlabelled() -> None:
    """Its label would point at the item above it, which is not its failure (`linked_from` is "shown with")."""
    ranked = [
        Candidate("turn", 0.9, None, 10),  # the discussion matched the question best
        Candidate("other", 0.8, None, 10),
        Candidate("fail", 0.6, None, 10),
    ]
    fixes = {"fail": [("turn", "discussion")]}
    placed, used = pack(ranked, 100, lambda i: fixes.get(i, []), lambda i: Candidate(i, 0.0, None, 10))
    order = [(p.id, p.linked_from, p.relation) for p in placed]
    assert order == [("turn", None, None), ("other", None, None), ("fail", None, None)]
    assert used == 30  # placed once
