"""Packing ranked items into a token budget: greedy, deterministic, siblings capped, fixes beside failures."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

MAX_SIBLINGS = 2
# The cap is for variety in what is read first: once this many tokens are placed (the default budget, a
# first screen), it lifts, and the items it held back follow in their rank order, before the rest. Under a
# large budget a doc file's further sections were never shown ("how do I set a timeout on a request" at
# 20,000 tokens: request-options.rst#timeout, stored and ranked, held back behind two other sections of the
# file, while a changelog, one group per release, filled 54 places).
FIRST_SCREEN_TOKENS = 2000
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
    # Its token cost when shown as what another item links to, (that item's id, the relation) → tokens: the
    # mark saying so lengthens its first line. None: the mark costs nothing more.
    linked_size: Callable[[str, str], int] | None = None

    def tokens_linked(self, linked_from: str, relation: str) -> int:
        return self.tokens if self.linked_size is None else self.linked_size(linked_from, relation)

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
    in_order: frozenset[str] = frozenset(),
) -> tuple[list[Placed], int]:
    """Walk RANKED (best first) and place every item that fits; an item that does not fit is skipped, not a
    stop. After a failure, its linked fixes (fixes_of → [(fix id, relation)]) are placed right after it with
    the failure's score, whether or not they matched the query; a fix placed already (ranked above its
    failure) stays where it is, unmarked: an item is marked as linked only when it follows the item it is
    linked from (its label, "the commit this changelog entry describes", points at the item above it).
    MAX_ITEMS caps the ranked items placed (their linked fixes ride along); an item is counted as it shows,
    with its mark as a linked fix. At most MAX_SIBLINGS items of a group are placed until FIRST_SCREEN_TOKENS
    are (the header's not counted); then the ones held back are walked, in rank order, before the rest (after
    all of them when the budget is larger than that and they did not fill it). The ids IN_ORDER are a listing
    in time order (the failures of a day, newest first): the first of them that does not fit ends the walk,
    so no older, smaller one takes the place of a newer one. Returns (placed, tokens used)."""
    used = header_tokens
    placed: list[Placed] = []
    seen: set[str] = set()
    per_group: dict[str, int] = {}

    def size(c: Candidate, linked_from: str | None, relation: str | None) -> int:
        return c.tokens if linked_from is None or relation is None else c.tokens_linked(linked_from, relation)

    lifted = False  # the cap, once the first screen is placed (FIRST_SCREEN_TOKENS)

    def capped(c: Candidate) -> bool:
        return not lifted and c.group is not None and per_group.get(c.group, 0) >= MAX_SIBLINGS

    def fits(c: Candidate, linked_from: str | None = None, relation: str | None = None) -> bool:
        # The cheap checks first: sizing a candidate renders it (and may read its body).
        if c.id in seen or capped(c):
            return False
        return used + c.floor <= budget and used + size(c, linked_from, relation) <= budget

    def take(c: Candidate, entry: Placed) -> None:
        nonlocal used
        used += size(c, entry.linked_from, entry.relation)
        seen.add(c.id)
        if c.group is not None:
            per_group[c.group] = per_group.get(c.group, 0) + 1
        placed.append(entry)

    held: list[Candidate] = []  # held back by the cap, in rank order, until it lifts

    def walk() -> Iterator[Candidate]:
        nonlocal lifted
        for cand in ranked:
            if not lifted and used - header_tokens >= FIRST_SCREEN_TOKENS:
                lifted = True
                yield from held
                held.clear()
            yield cand
        # A budget larger than a screen that the ranked items did not fill: what was held back follows them.
        if lifted or budget - header_tokens > FIRST_SCREEN_TOKENS:
            lifted = True
            yield from held

    primary = 0
    for cand in walk():
        if budget - used < MIN_ITEM_TOKENS or (max_items is not None and primary >= max_items):
            break
        if cand.id not in seen and capped(cand):
            held.append(cand)
            continue
        if not fits(cand):
            if cand.id in in_order and cand.id not in seen:
                break  # a listing in time order keeps its order: nothing after it skips ahead
            continue
        primary += 1
        take(cand, Placed(cand.id, cand.score))
        for fix_id, relation in fixes_of(cand.id):
            if fix_id in seen:
                continue  # ranked above its failure (or the entry describing it): shown once, where it ranked
            fix = candidate_for(fix_id)
            if fix is not None and fits(fix, cand.id, relation):
                take(fix, Placed(fix.id, cand.score, linked_from=cand.id, relation=relation))
    return placed, used
