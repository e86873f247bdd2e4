"""Turning a person's question into an FTS5 expression, and running it."""

from __future__ import annotations

import re

from nexusmem.store import Store

# Words that match nearly everything: they cost time at 100k nodes and add nothing to BM25.
STOPWORDS = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "been",
        "but",
        "by",
        "can",
        "could",
        "did",
        "do",
        "does",
        "doing",
        "done",
        "for",
        "from",
        "had",
        "has",
        "have",
        "how",
        "i",
        "if",
        "in",
        "into",
        "is",
        "it",
        "its",
        "me",
        "my",
        "no",
        "not",
        "of",
        "on",
        "or",
        "our",
        "so",
        "than",
        "that",
        "the",
        "their",
        "them",
        "then",
        "there",
        "these",
        "they",
        "this",
        "to",
        "too",
        "us",
        "was",
        "we",
        "were",
        "what",
        "when",
        "where",
        "which",
        "while",
        "who",
        "whom",
        "why",
        "will",
        "with",
        "would",
        "you",
        "your",
        "yours",
        "about",
        "after",
        "again",
        "all",
        "am",
        "any",
        "because",
        "before",
        "being",
        "below",
        "between",
        "both",
        "during",
        "each",
        "few",
        "further",
        "here",
        "just",
        "more",
        "most",
        "nor",
        "off",
        "once",
        "only",
        "other",
        "out",
        "over",
        "own",
        "same",
        "should",
        "some",
        "such",
        "through",
        "under",
        "until",
        "up",
        "very",
    ]
)
_TOKEN = re.compile(r"[\w]+", re.UNICODE)

CANDIDATES = 200
# BM25 costs ~1-2 µs for every matching node. Past this many postings a query drops its most common words
# (rarest kept first, at least one always kept): they carry the least IDF and the most cost.
MAX_POSTINGS = 8000


def terms(text: str) -> list[str]:
    """Significant lower-cased words of TEXT, in order, without duplicates."""
    words = [w.lower() for w in _TOKEN.findall(text)]
    kept = [w for w in words if w not in STOPWORDS and (len(w) > 1 or not w.isascii())]
    if not kept:
        kept = [w for w in words if len(w) > 1] or words
    return list(dict.fromkeys(kept))


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


def bm25(
    store: Store, text: str, *, limit: int = CANDIDATES, as_of: int | None = None
) -> tuple[list[str], int]:
    """(ids best first, total number of matches) for TEXT."""
    expr = fts_expression(affordable_terms(store, terms(text)))
    if expr is None:
        return [], 0
    ids = store.search_fts(expr, limit, as_of)
    total = len(ids) if len(ids) < limit else store.count_matches(expr, as_of)
    return ids, total
