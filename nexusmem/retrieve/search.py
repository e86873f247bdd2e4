"""Turning a person's question into an FTS5 expression, and running it."""

from __future__ import annotations

from nexusmem.store import Store
from nexusmem.text import STOPWORDS, terms

__all__ = ["STOPWORDS", "affordable_terms", "bm25", "fts_expression", "terms"]


CANDIDATES = 200
# BM25 costs ~1-2 µs for every matching node. Past this many postings a query drops its most common words
# (rarest kept first, at least one always kept): they carry the least IDF and the most cost.
MAX_POSTINGS = 8000


def fts_expression(text: str | list[str]) -> str | None:
    """An OR of the quoted terms: BM25 then prefers items that match more of them."""
    words = terms(text) if isinstance(text, str) else text
    if not words:
        return None
    return " OR ".join('"' + w.replace('"', '""') + '"' for w in words)


def affordable_terms(store: Store, words: list[str], budget: int = MAX_POSTINGS) -> list[str]:
    """WORDS, minus the most common ones when together they would match more than BUDGET nodes."""
    if len(words) < 2 or store.size_hint() <= budget:
        return words
    counts = store.term_doc_counts(words)
    if sum(counts.values()) <= budget:
        return words
    kept: set[str] = set()
    total = 0
    for word in sorted(words, key=lambda w: (counts[w], words.index(w))):
        if kept and total + counts[word] > budget:
            continue
        kept.add(word)
        total += counts[word]
    return [w for w in words if w in kept]


# A query word that (nearly) no node holds in that form is looked up by its stem too: "crashed" finds
# "crash". A word many nodes hold as written gains little from its other forms and adds weak matches
# that the rank priors can lift over real ones (on the generated-history evaluation, stemming "head" let
# doc sections with "heading" bury a failed `alembic upgrade head`); on the real-repository dev questions
# stemming every word lost MRR on code questions. So only the rare ones go to the stemmed index.
STEM_RARE = 3


def stem_terms(store: Store, words: list[str]) -> list[str]:
    """Those of WORDS the stemmed index is asked for: the ones fewer than STEM_RARE nodes hold as written."""
    if not words:
        return []
    counts = store.term_doc_counts(words)
    return [w for w in words if counts[w] < STEM_RARE]


def bm25(
    store: Store, text: str, *, limit: int = CANDIDATES, as_of: int | None = None
) -> tuple[list[str], int]:
    """(ids best first, total number of matches) for TEXT."""
    words = affordable_terms(store, terms(text))
    expr = fts_expression(words)
    if expr is None:
        return [], 0
    ids = store.search_fts(expr, limit, as_of, stem_match=fts_expression(stem_terms(store, words)) or "")
    total = len(ids) if len(ids) < limit else store.count_matches(expr, as_of)
    return ids, total
