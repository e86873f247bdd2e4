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
    # A lower bound of its token cost known without rendering it (its date, tags, title and id line):
    # once the budget is nearly spent, most candidates are ruled out by it alone.
    floor: int = 0

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
    max_items: int | None = None,
) -> tuple[list[Placed], int]:
    """Walk RANKED (best first) and place every item that fits; an item that does not fit is skipped, not a
    stop. After a failure, its linked fixes (fixes_of → [(fix id, relation)]) are placed right after it with
    the failure's score, whether or not they matched the query; a fix placed already (ranked above its
    failure) stays where it is and is marked as linked. MAX_ITEMS caps the ranked items placed
    (their linked fixes ride along). Returns (placed, tokens used)."""
    used = header_tokens
    placed: list[Placed] = []
    seen: set[str] = set()
    per_group: dict[str, int] = {}

    def fits(c: Candidate) -> bool:
        # The cheap checks first: sizing a candidate renders it (and may read its body).
        if c.id in seen or (c.group is not None and per_group.get(c.group, 0) >= MAX_SIBLINGS):
            return False
        return used + c.floor <= budget and used + c.tokens <= budget

    def take(c: Candidate, entry: Placed) -> None:
        nonlocal used
        used += c.tokens
        seen.add(c.id)
        if c.group is not None:
            per_group[c.group] = per_group.get(c.group, 0) + 1
        placed.append(entry)

    primary = 0
    for cand in ranked:
        if budget - used < MIN_ITEM_TOKENS or (max_items is not None and primary >= max_items):
            break
        if not fits(cand):
            continue
        primary += 1
        take(cand, Placed(cand.id, cand.score))
        for fix_id, relation in fixes_of(cand.id):
            if fix_id in seen:
                # Ranked above its failure (the discussion matched the question better than the command):
                # it stays where it is, and still says what it fixed.
                earlier = next(p for p in placed if p.id == fix_id)
                if earlier.linked_from is None:
                    earlier.linked_from, earlier.relation = cand.id, relation
                continue
            fix = candidate_for(fix_id)
            if fix is not None and fits(fix):
                take(fix, Placed(fix.id, cand.score, linked_from=cand.id, relation=relation))
    return placed, used
