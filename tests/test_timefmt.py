"""timefmt.day: the date every surface prints, UTC, without importing datetime (precheck's hot path)."""

from __future__ import annotations

from datetime import datetime, timezone

from nexusmem import timefmt

DAY_MS = 86_400_000


def _datetime_day(ts_ms: int) -> str:
    try:
        return datetime.fromtimestamp(ts_ms // DAY_MS * 86400, tz=timezone.utc).strftime("%Y-%m-%d")
    except (ValueError, OverflowError, OSError):
        return "????-??-??"


def test_day_is_the_utc_date_datetime_gives_and_unknown_outside_years_1_to_9999() -> None:
    assert timefmt.day(1_700_000_000_000) == "2023-11-14"
    assert timefmt.day(-1) == "1969-12-31"  # a millisecond before the epoch
    edges = [d * DAY_MS + ms for d in (-719_163, -719_162, 0, 2_932_896, 2_932_897) for ms in (0, DAY_MS - 1)]
    spread = [n * 7_919 * DAY_MS + 12_345 for n in range(-100, 400)]
    for ts in [*edges, *spread, 10**18, -(10**18)]:
        assert timefmt.day(ts) == _datetime_day(ts), ts
    assert timefmt.day(2_932_897 * DAY_MS) == "????-??-??"  # year 10000: a time stored before checks
