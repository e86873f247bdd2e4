"""The team store's shell commands of a time window on a real PostgreSQL (as test_team.py starts it): all of
them oldest first, or only the newest few (what the anchor of "what did I do next" reads), oldest first too
(tests/test_recent_work.py reads the local store's the same way)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

pytestmark = [pytest.mark.team, pytest.mark.slow]

PROJECT = "p1"
# (id, command, ts, cwd, exit), oldest first; two share a time, told apart by id.
COMMANDS = [
    ("c1" + "0" * 22, "make build", 1_000, "/w", 2),
    ("c2" + "0" * 22, "make build", 2_000, "/w", 0),
    ("c3" + "0" * 22, "git push origin main", 3_000, "/w", 1),
    ("c4" + "0" * 22, "git pull --rebase", 3_000, "/w", 0),
    ("c5" + "0" * 22, "git push origin main", 4_000, "/w", 0),
]


def _row(node_id: str, command: str, ts: int, cwd: str, exit_code: int) -> tuple[Any, ...]:
    # PUSH_COLUMNS: id, kind, source, natural_key, ref, title, body, words, ts, signal, provenance, grp,
    # meta, content_hash, files, trust, superseded_by, emb
    meta = json.dumps({"cwd": cwd, "exit": exit_code})
    return (node_id, "shell_command", "shell", node_id, command, command, "", "", ts, 1.0, "observed", None,
            meta, f"h-{node_id}", [], "candidate", None, None)  # fmt: skip


@pytest.fixture
def team(team_url: str) -> Iterator[Any]:
    from nexusmem.store.team import TeamStore

    store = TeamStore.open(team_url, PROJECT, "alice@example.com", "test", create=True)
    store.push_batch([_row(*command) for command in COMMANDS])
    yield store
    store.close()


def test_the_newest_commands_of_a_window_oldest_first(team: Any) -> None:
    assert team.shell_commands_between(0, 10_000) == COMMANDS
    assert team.shell_commands_between(0, 10_000, newest=3) == COMMANDS[2:]
    assert team.shell_commands_between(1_500, 3_000, newest=2) == COMMANDS[2:4]
    assert team.shell_commands_between(5_000, 9_000, newest=2) == []
