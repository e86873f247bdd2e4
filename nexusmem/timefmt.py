"""How every surface writes a time: UTC, so the same store reads the same on every machine.

`day` for people (query lines, precheck warnings, stale lists, the contradiction prompt) and `iso` for
machines (`query --json`, MCP items, status). One rule, so a precheck warning and a query line never name
different dates for the same command (precheck used local time until both came here).
"""

from __future__ import annotations

import functools
from datetime import datetime, timezone

DAY_MS = 86_400_000


@functools.lru_cache(maxsize=4096)
def _day_of(days: int) -> str:
    try:
        return datetime.fromtimestamp(days * 86400, tz=timezone.utc).strftime("%Y-%m-%d")
    except (ValueError, OverflowError, OSError):  # stored before ingest range-checked times (year > 9999)
        return "????-??-??"


def day(ts_ms: int) -> str:
    """YYYY-MM-DD (UTC) of an epoch-ms time; cached per day (formatting dates was a tenth of a query)."""
    return _day_of(ts_ms // DAY_MS)


def iso(ts_ms: int) -> str:
    """ISO 8601 UTC, whole seconds, of an epoch-ms time: 2024-05-01T12:00:00+00:00. A time no date can
    show (a store written before ingest checked times: 1e15 ms is year 33658) reads as its number instead
    of failing the whole answer."""
    try:
        return datetime.fromtimestamp(ts_ms / 1000, tz=timezone.utc).isoformat(timespec="seconds")
    except (ValueError, OverflowError, OSError):
        return f"invalid time {ts_ms}"
