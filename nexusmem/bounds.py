"""What every stored value must satisfy (a time inside 1970..2100, text that is valid Unicode). No imports:
the hook log's reader (sources/shell/logline) checks every line with these on precheck's path too, which
must not pay for nexusmem.nodes (dataclasses, hashlib)."""

from __future__ import annotations

# Event times outside this window are bad input, not history: a hook line claiming 1e15 ms (year 33658)
# would be stored and then crash every date formatter that shows it ("year out of range"). 1970 is the
# epoch (git allows no earlier author time by default); nothing real is dated after 2100.
MIN_TS_MS = 0
MAX_TS_MS = 4_102_444_800_000  # 2100-01-01T00:00:00Z


def ts_ok(ms: int) -> bool:
    """Whether epoch milliseconds MS fall inside the window every part of NexusMem can store and show."""
    return MIN_TS_MS <= ms < MAX_TS_MS


def text_ok(text: str) -> bool:
    """Whether TEXT can be written as UTF-8 (a lone surrogate from a JSON escape like \\ud800 cannot).

    isascii() is O(1) in CPython (a flag on the string), so the common case costs nothing.
    """
    if text.isascii():
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True
