"""The only package that speaks SQL. Everything above it calls Store methods."""

from __future__ import annotations

from nexusmem.store.db import Store, open_store
from nexusmem.store.nodes import StoredNode

__all__ = ["Store", "StoredNode", "open_store"]
