"""A source's persisted cursor: a JSON object stamped with the version of its layout.

Stdlib only: precheck's shell tail (sources/shell/tail.py) reads the shell cursor on every commit.
"""

from __future__ import annotations

import json

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (~4 ms of a cold precheck)
if TYPE_CHECKING:
    from typing import Any


def decode_cursor(text: str | None, version: int) -> dict[str, Any]:
    """The object TEXT holds when it is one of layout VERSION ({"v": VERSION, ...}); else {} (missing,
    unreadable, or from another version: the source then starts over, as on a first sync)."""
    if not text:
        return {}
    try:
        data = json.loads(text)
    except ValueError:
        return {}
    if not isinstance(data, dict) or data.get("v") != version:
        return {}
    return data
