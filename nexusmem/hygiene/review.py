"""review and mark-stale: a person's verdict on one node, and which node replaces another.

Both only demote or label (rank applies superseded ×.7 and rejected ×.5); nothing is deleted. A re-sync
never overwrites them: upsert leaves trust and superseded_by alone, and `sync --rebuild` puts them back on
the nodes that return with the same content-addressed id (or hands them to the heir of one whose id moved,
as a sync's prune does).
"""

from __future__ import annotations

from pathlib import Path

from nexusmem import project as project_mod
from nexusmem.errors import NexusMemError
from nexusmem.show import find as resolve
from nexusmem.store import StoredNode

VERDICTS = {"verify": "verified", "reject": "rejected", "clear": "candidate"}


def review(start: Path | str | None, ref: str, verdict: str) -> tuple[StoredNode, str]:
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


def mark_stale(
    start: Path | str | None, old_ref: str, new_ref: str | None
) -> tuple[StoredNode, StoredNode | None]:
    """Record that NEW replaces OLD (NEW None: clear it). Both must exist and differ."""
    project = project_mod.load(start)
    with project.open_store() as store:
        old = resolve(store, old_ref)
        new = resolve(store, new_ref) if new_ref is not None else None
        if new is not None and new.id == old.id:
            raise NexusMemError("a node cannot supersede itself")
        # A cycle (B marked as replaced by A, then A by B) would leave both counted down as stale.
        seen: set[str] = set()
        step = new
        while new is not None and step is not None and step.superseded_by and step.id not in seen:
            seen.add(step.id)
            if step.superseded_by == old.id:
                raise NexusMemError(
                    f"{new.id} is itself marked as replaced by {old.id}"
                    + ("" if step.id == new.id else " (through the nodes that replace it)")
                    + f": clear that first (nexusmem mark-stale {step.id} --clear)"
                )
            step = store.get(step.superseded_by)
        with store.transaction():
            store.set_superseded(old.id, new.id if new else None)
            store.add_audit("mark-stale", {"id": old.id, "superseded_by": new.id if new else None})
    return old, new
