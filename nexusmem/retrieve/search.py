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


def terms(text: str) -> list[str]:
    """Significant lower-cased words of TEXT, in order, without duplicates."""
    words = [w.lower() for w in _TOKEN.findall(text)]
    kept = [w for w in words if w not in STOPWORDS and (len(w) > 1 or not w.isascii())]
    if not kept:
        kept = [w for w in words if len(w) > 1] or words
    return list(dict.fromkeys(kept))


def fts_expression(text: str) -> str | None:
    """An OR of the quoted terms: BM25 then prefers items that match more of them."""
    words = terms(text)
    if not words:
        return None
    return " OR ".join('"' + w.replace('"', '""') + '"' for w in words)


def bm25(
    store: Store, text: str, *, limit: int = CANDIDATES, as_of: int | None = None
) -> tuple[list[str], int]:
    """(ids best first, total number of matches) for TEXT."""
    expr = fts_expression(text)
    if expr is None:
        return [], 0
    ids = store.search_fts(expr, limit, as_of)
    total = len(ids) if len(ids) < limit else store.count_matches(expr, as_of)
    return ids, total
