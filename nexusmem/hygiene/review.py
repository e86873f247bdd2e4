"""review and mark-stale: a person's verdict on one node, and which node replaces another.

Both only demote or label (rank applies superseded ×.5 and rejected ×.3); nothing is deleted. A re-sync
never overwrites them: upsert leaves trust and superseded_by alone, and `sync --rebuild` puts them back on
the nodes that return with the same content-addressed id.
"""

from __future__ import annotations

from typing import Any

from nexusmem import project as project_mod
from nexusmem.errors import NexusMemError
from nexusmem.store import Store, StoredNode

MIN_PREFIX = 4
VERDICTS = {"verify": "verified", "reject": "rejected", "clear": "candidate"}


def resolve(store: Store, ref: str) -> StoredNode:
    """The node whose id is REF or starts with it (a unique prefix of at least MIN_PREFIX characters)."""
    text = ref.strip().lower()
    node = store.get(text)
    if node is not None:
        return node
    if len(text) < MIN_PREFIX:
        raise NexusMemError(f"{ref!r}: give at least {MIN_PREFIX} characters of a node id")
    matches = store.find_by_prefix(text)
    if not matches:
        raise NexusMemError(
            f"no node with id {ref!r} (ids are shown by `nexusmem query` and `nexusmem stale`)"
        )
    if len(matches) > 1:
        raise NexusMemError(f"{ref!r} is ambiguous: {', '.join(m[:12] for m in matches)}...")
    found = store.get(matches[0])
    assert found is not None
    return found


def review(start: Any, ref: str, verdict: str) -> tuple[StoredNode, str]:
    """Record VERDICT ('verify', 'reject' or 'clear') on one node; returns (node, previous trust)."""
    if verdict not in VERDICTS:
        raise NexusMemError(f"unknown verdict {verdict!r}")
    project = project_mod.load(start)
    with project.open_store() as store:
        node = resolve(store, ref)
        with store.transaction():
            store.set_trust(node.id, VERDICTS[verdict])
            store.add_audit("review", {"id": node.id, "from": node.trust, "to": VERDICTS[verdict]})
    return node, node.trust


def mark_stale(start: Any, old_ref: str, new_ref: str | None) -> tuple[StoredNode, StoredNode | None]:
    """Record that NEW replaces OLD (NEW None: clear it). Both must exist and differ."""
    project = project_mod.load(start)
    with project.open_store() as store:
        old = resolve(store, old_ref)
        new = resolve(store, new_ref) if new_ref is not None else None
        if new is not None and new.id == old.id:
            raise NexusMemError("a node cannot supersede itself")
        with store.transaction():
            store.set_superseded(old.id, new.id if new else None)
            store.add_audit("mark-stale", {"id": old.id, "supersededBy": new.id if new else None})
    return old, new
