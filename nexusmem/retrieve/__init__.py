"""Retrieval: search (BM25, later vectors) → fuse (RRF) → rank (priors) → pack (token budget)."""
