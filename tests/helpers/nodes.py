"""Node factories: a `Node` with sensible defaults for tests that build memory by hand instead of syncing.

Each factory fills what a real source would (ref, title, body, signal, meta) from the one or two things a
test cares about; pass `key` for a natural key of your own (ids derive from it), `project` for another id.
Without `key`, a process-wide counter keeps every node distinct.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from itertools import count
from pathlib import Path
from typing import Any

from nexusmem.nodes import Node
from nexusmem.store import Store
from nexusmem.store.nodes import UpsertCounts

_serial = count()


def node(
    kind: str = "doc_section",
    *,
    text: str = "a remembered thing",
    ts: int = 1_700_000_000_000,
    project: str = "p",
    key: str | None = None,
    **fields: Any,
) -> Node:
    """Any kind of node: TEXT is its ref, title and body unless FIELDS says otherwise."""
    values: dict[str, Any] = {
        "project": project,
        "kind": kind,
        "source": {
            "git_commit": "git",
            "code_diff": "diff",
            "shell_command": "shell",
            "doc_section": "docs",
        }.get(kind, "conversation"),
        "natural_key": key if key is not None else f"n{next(_serial)}",
        "ref": text,
        "title": text[:60],
        "body": text,
        "ts": ts,
        "signal": 0.5,
    }
    values.update(fields)
    return Node(**values)


def shell_node(
    command: str,
    ts: int,
    exit_code: int | None = 1,
    *,
    cwd: str | None = ".",
    files: tuple[str, ...] = (),
    session: str = "s",
    project: str = "p",
    key: str | None = None,
    **meta: Any,
) -> Node:
    """A logged shell command (a failure unless EXIT_CODE says 0) as the shell source records it."""
    return Node(
        project=project,
        kind="shell_command",
        source="shell",
        natural_key=key if key is not None else f"s{next(_serial)}\x1f{ts}\x1f{command}",
        ref=command,
        title=f"{command} (exit {exit_code})",
        body=command,
        ts=ts,
        signal=0.5,
        files=files,
        meta={"cwd": cwd, "exit": exit_code, "session": session, **meta},
    )


def commit_node(
    ts: int,
    *files: str,
    subject: str = "fix: something",
    project: str = "p",
    sha: str | None = None,
    **meta: Any,
) -> Node:
    """A git commit touching FILES (a made-up sha unless given), with META (e.g. insertions=, deletions=)."""
    sha = sha if sha is not None else f"{next(_serial):040x}"
    return Node(
        project=project,
        kind="git_commit",
        source="git",
        natural_key=sha,
        ref=sha,
        title=subject,
        body=subject,
        ts=ts,
        signal=0.8,
        group=sha,
        files=files,
        meta=meta,
    )


def turn_node(
    ts: int,
    text: str,
    kind: str = "conversation_turn",
    *,
    project: str = "p",
    key: str | None = None,
    ref: str | None = None,
    title_chars: int = 40,
) -> Node:
    """A conversation turn (or, with KIND, a session summary) saying TEXT."""
    return Node(
        project=project,
        kind=kind,
        source="conversation",
        natural_key=key if key is not None else f"t{next(_serial)}",
        ref=ref if ref is not None else f"t{ts}",
        title=text[:title_chars],
        body=text,
        ts=ts,
        signal=0.5,
    )


def store_nodes(store: Store, nodes: Iterable[Node]) -> UpsertCounts:
    """Write NODES in one transaction, as a sync would."""
    with store.transaction():
        return store.upsert(nodes)


def conversation_turn(
    session_id: str,
    turn: int,
    question: str,
    answer: str = "Done.",
    *,
    ts: int,
    agent: str = "claude-code",
    project: str = "p",
    sidechain: bool = False,
    chunk: int = 0,
    **meta: Any,
) -> Node:
    """One question + answer exchange of an agent session (or piece CHUNK of a long one), shaped as the
    conversation source stores it: body "Q: ...\n\nA: ...", meta agent, session_id, turn, sidechain, cwd,
    question, chunk."""
    return Node(
        project=project,
        kind="conversation_turn",
        source="conversation",
        natural_key=f"{agent}:{session_id}:{turn}:{chunk}" + (":side" if sidechain else ""),
        ref=f"{agent}:{session_id}#{turn}",
        title=question.split("\n", 1)[0][:80],
        body=f"Q: {question}\n\nA: {answer}",
        ts=ts,
        signal=0.5,
        meta={
            "agent": agent,
            "session_id": session_id,
            "turn": turn,
            "sidechain": sidechain,
            "cwd": ".",
            "question": question,
            "chunk": chunk,
            **meta,
        },
    )


def write_commands(
    repo: Path,
    entries: Sequence[tuple[int, str, int] | tuple[int, str, int, int]],
    *,
    session: str = "s1",
    cwd: Path | None = None,
    shell: str = "bash",
) -> None:
    """Append (ts ms, command, exit code[, duration ms]) lines run in REPO (or CWD, a folder of it) to the
    shell hook log (the shell-log contract), as SHELL's hook writes them; the next sync reads them."""
    from nexusmem.paths import shell_log_path

    shell_log_path().parent.mkdir(parents=True, exist_ok=True)
    with shell_log_path().open("a", encoding="utf-8") as fh:
        for ts, command, code, *duration in entries:
            line = {"ts": ts, "cwd": str(cwd or repo), "exit": code, "command": command, "shell": shell}
            if duration:
                line["duration_ms"] = duration[0]
            fh.write(json.dumps({**line, "session": session, "v": 1}) + "\n")


def write_recent(repo: Path, session: str, *, now: int) -> None:
    """Lines of "MINUTES-AGO EXIT COMMAND" (counted back from NOW, epoch seconds) into the shell hook log, run
    in REPO (write_commands)."""
    entries = []
    for line in session.strip().splitlines():
        minutes, code, command = line.strip().split(" ", 2)
        entries.append((now * 1000 - int(minutes) * 60_000, command, int(code)))
    write_commands(repo, entries)
