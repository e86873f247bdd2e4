"""Packing ranked items into a token budget: greedy, deterministic, siblings capped, fixes beside failures."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

MAX_SIBLINGS = 2
# No item renders in fewer tokens than this (date, tags, title, id line): below it the budget is spent.
MIN_ITEM_TOKENS = 12


@dataclass
class Candidate:
    """A ranked item; `size` is its token cost, or a function that renders it when first needed."""

    id: str
    score: float
    group: str | None
    size: int | Callable[[], int]

    @property
    def tokens(self) -> int:
        if callable(self.size):
            self.size = self.size()
        return self.size


def estimate_tokens(text: str) -> int:
    """~4 characters a token for English and code: cheap, and stable across runs."""
    return max(1, (len(text) + 3) // 4)


@dataclass
class Placed:
    id: str
    score: float
    linked_from: str | None = None
    relation: str | None = None


def pack(
    ranked: Sequence[Candidate],
    budget: int,
    fixes_of: Callable[[str], Sequence[tuple[str, str]]],
    candidate_for: Callable[[str], Candidate | None],
    header_tokens: int = 0,
) -> tuple[list[Placed], int]:
    """Walk RANKED (best first) and place every item that fits; an item that does not fit is skipped, not a
    stop. After a failure, its linked fixes (fixes_of → [(fix id, relation)]) are placed right after it with
    the failure's score, whether or not they matched the query. Returns (placed, tokens used)."""
    used = header_tokens
    placed: list[Placed] = []
    seen: set[str] = set()
    per_group: dict[str, int] = {}

    def fits(c: Candidate) -> bool:
        if c.id in seen or used + c.tokens > budget:
            return False
        return not (c.group is not None and per_group.get(c.group, 0) >= MAX_SIBLINGS)

    def take(c: Candidate, entry: Placed) -> None:
        nonlocal used
        used += c.tokens
        seen.add(c.id)
        if c.group is not None:
            per_group[c.group] = per_group.get(c.group, 0) + 1
        placed.append(entry)

    for cand in ranked:
        if budget - used < MIN_ITEM_TOKENS:
            break
        if not fits(cand):
            continue
        take(cand, Placed(cand.id, cand.score))
        for fix_id, relation in fixes_of(cand.id):
            fix = candidate_for(fix_id)
            if fix is not None and fits(fix):
                take(fix, Placed(fix.id, cand.score, linked_from=cand.id, relation=relation))
    return placed, used
