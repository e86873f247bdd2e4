"""The only package that speaks SQL. Everything above it calls Store methods.

Store, open_store and StoredNode load on first use (PEP 562), so that importing a light module of this
package (connection, hookreads: what the commit hook's precheck reads with) does not import the Store
class with every mixin and dataclass.
"""

from __future__ import annotations

import importlib

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (~4 ms of a cold precheck)
if TYPE_CHECKING:
    from typing import Any

    from nexusmem.store.db import Store, open_store
    from nexusmem.store.nodes import StoredNode

__all__ = ["Store", "StoredNode", "open_store"]

_LAZY = {
    "Store": "nexusmem.store.db",
    "open_store": "nexusmem.store.db",
    "StoredNode": "nexusmem.store.nodes",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
