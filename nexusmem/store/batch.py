"""Statements over a list of keys longer than one statement takes: `WHERE id IN ({marks})`, BATCH keys at a
time (SQLite's limit on the parameters of a statement).

The reads go through `rows_in`, the writes (an UPDATE or DELETE of many rows) through `execute_in`, so that
no method writes the loop out again. Imported by the commit hook's reads (hookreads.py): nothing heavy here.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (~4 ms of a cold precheck)
if TYPE_CHECKING:
    from typing import Any

BATCH = 500


def _batches(sql: str, keys: Sequence[Any], after: tuple[Any, ...]) -> Iterator[tuple[str, list[Any]]]:
    """(statement, parameters) of SQL for each BATCH of KEYS: each `({marks})` of SQL is filled with the
    batch (`old_id IN ({marks}) OR new_id IN ({marks})` takes it twice), AFTER follows."""
    times = sql.count("{marks}")
    for first in range(0, len(keys), BATCH):
        chunk = list(keys[first : first + BATCH])
        yield sql.format(marks=",".join("?" * len(chunk))), [*chunk * times, *after]


def rows_in(conn: Any, sql: str, keys: Sequence[Any], *after: Any) -> Iterator[Any]:
    """The rows of SQL, whose `({marks})` is filled with KEYS, BATCH keys a statement; AFTER: the parameters
    that follow the keys in SQL. The rows of one batch come together, in the order SQL gives them."""
    for statement, params in _batches(sql, keys, after):
        yield from conn.execute(statement, params)


def execute_in(conn: Any, sql: str, keys: Sequence[Any], *after: Any) -> None:
    """Run SQL (an UPDATE or DELETE), whose `({marks})` is filled with KEYS, BATCH keys a statement; AFTER:
    the parameters that follow the keys in SQL."""
    for statement, params in _batches(sql, keys, after):
        conn.execute(statement, params)
