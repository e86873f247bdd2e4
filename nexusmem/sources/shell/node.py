"""The one builder of `shell_command` nodes (from a log line or a history entry), and the per-scan caches."""

from __future__ import annotations

import re
from pathlib import Path

from nexusmem.nodes import Node, redacted_path
from nexusmem.redact import cut_redacted, redact
from nexusmem.signals import shell_signal
from nexusmem.sources.shell.attribution import _MEMO_LIMIT, command_files
from nexusmem.sources.shell.tail import agent_call_key as agent_call_key

TITLE_CHARS = 120


def _title(command: str, exit_code: int | None) -> str:
    stripped = command.strip()
    first = stripped.split("\n", 1)[0].rstrip()
    if len(first) > TITLE_CHARS:
        first = cut_redacted(first, TITLE_CHARS - 1).rstrip() + "…"
    elif first != stripped:
        first += " …"
    return f"{first} (exit {'unknown' if exit_code is None else exit_code})"


_EXIT_SUFFIX = re.compile(r" \(exit (?:-?\d+|unknown)\)\Z")


def split_title(title: str) -> tuple[str, str]:
    """A shell command node's title as (the command's first line, " (exit N)"): a redaction pass over a stored
    title (scrub, the team push) reads the command only, or a flag that takes a value (`--token`) would take
    the exit code for it."""
    found = _EXIT_SUFFIX.search(title)
    return (title[: found.start()], found.group()) if found else (title, "")


def _context_head(cwd: str | None, exit_code: int | None) -> str:
    # A folder's name can hold a secret too (`keys/AKIA…`): shown as a path redacted (the node's meta `cwd`
    # is, when the node is made), whichever source ran the command (hook log, atuin, an agent's transcript).
    where = f"cwd {redacted_path(cwd)}" if cwd is not None else "cwd unknown (scraped from shell history)"
    return f"[{where} · exit {'unknown' if exit_code is None else exit_code}"


def _context_tail(
    pipestatus: list[int] | None, duration_ms: int | None, shell: str, interrupted: bool = False
) -> str:
    # Runs once per stored command (80k times in a big first sync): plain concatenation, no lists.
    text = " · interrupted" if interrupted else ""
    if pipestatus and len(pipestatus) > 1:
        text = " · pipestatus " + "|".join(map(str, pipestatus))
    if duration_ms is not None:
        text += f" · {duration_ms} ms" if duration_ms < 1000 else f" · {duration_ms / 1000:.1f} s"
    return f"{text} · {shell}]"


def body_head(command: str, cwd: str | None, exit_code: int | None) -> str:
    """The body up to the per-line part: the command, then where it ran and how it ended."""
    return command + "\n" + _context_head(cwd, exit_code)


def command_node(
    project: str,
    *,
    natural_key: str,
    command: str,
    ts: int,
    cwd: str | None,
    exit_code: int | None,
    pipestatus: list[int] | None,
    duration_ms: int | None,
    shell: str,
    session: str | None,
    files: tuple[str, ...],
    scraped: bool,
    title: str,
    signal: float,
    head: str,
    author: str = "me",
    author_kind: str = "human",
    source: str = "shell",
    call_id: str | None = None,
    interrupted: bool = False,
) -> Node:
    """The one `shell_command` node, from a hook line or a scraped history entry.

    COMMAND is already redacted: nothing here may see the raw text. TITLE and SIGNAL (Memo.title_signal)
    and HEAD (body_head) are passed in because the callers compute them once per distinct command: a real
    log repeats a few hundred commands thousands of times. CALL_ID: an agent's id of the call; INTERRUPTED:
    the user stopped it (its exit is unknown, and it is no failure): both in meta when given.
    """
    node = Node(
        project=project,
        kind="shell_command",
        source=source,
        natural_key=natural_key,
        ref=command,
        title=title,
        body=head + _context_tail(pipestatus, duration_ms, shell, interrupted),
        ts=ts,
        signal=signal,
        group=None,
        files=files,
        meta={
            "cwd": cwd,
            "exit": exit_code,
            "pipestatus": pipestatus,
            "duration_ms": duration_ms,
            "shell": shell,
            "session": session,
            "scraped": scraped,
            "author": author,
            "author_kind": author_kind,
        },
    )
    if call_id is not None:
        node.meta["call_id"] = call_id
    if interrupted:
        node.meta["interrupted"] = True
    return node


# (redacted command, cwd relative to its root, files named, title, signal, body up to the per-line part)
Facts = tuple[str, str, tuple[str, ...], str, float, str]


class Memo:
    """Per-scan caches: real histories repeat a few hundred commands thousands of times."""

    def __init__(self) -> None:
        self.redacted: dict[str, str] = {}
        self.files: dict[tuple[str, str, str], tuple[str, ...]] = {}
        self.derived: dict[tuple[str, int | None], tuple[str, float]] = {}

    def title_signal(self, command: str, exit_code: int | None) -> tuple[str, float]:
        key = (command, exit_code)
        try:
            return self.derived[key]
        except KeyError:
            pass
        if len(self.derived) > _MEMO_LIMIT:
            self.derived.clear()
        value = self.derived[key] = (_title(command, exit_code), shell_signal(command, exit_code))
        return value

    def redact(self, text: str) -> str:
        try:
            return self.redacted[text]
        except KeyError:
            pass
        if len(self.redacted) > _MEMO_LIMIT:
            self.redacted.clear()
        value = self.redacted[text] = redact(text)
        return value

    def command_files(self, command: str, root: Path, rel: str) -> tuple[str, ...]:
        key = (command, str(root), rel)
        try:
            return self.files[key]
        except KeyError:
            pass
        if len(self.files) > _MEMO_LIMIT:
            self.files.clear()
        cwd = root if rel == "." else root / rel
        value = self.files[key] = command_files(command, cwd, root)
        return value
