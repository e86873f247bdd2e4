"""Threads → nodes: `conversation_turn` per exchange (chunked at headings), `shell_command` per agent call.

Everything read from a transcript is redacted (nexusmem.redact) before it is put in a node: the question,
every answer chunk, every command, and every id or name that labels them (model.label: the session's, the
subagent's, the model's, a record's, a call's). Node shapes are in docs/contracts.md (§ conversation turns).
"""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from nexusmem.nodes import Node
from nexusmem.redact import cut_redacted
from nexusmem.signals import conversation_signal
from nexusmem.sources.conversation.model import Call, Exchange, Thread, label
from nexusmem.sources.shell.agentcmd import canonical
from nexusmem.sources.shell.node import Memo, agent_call_key, body_head, command_node
from nexusmem.text import one_line

# An answer up to this many characters is one node; a longer one is split at its Markdown headings
# (~600 tokens each: a heading-sized piece ranks on its own subject instead of the whole reply's).
CHUNK_CHARS = 2400
# Pieces per exchange, at most: the rest of a very long reply is folded into the last one (then cut at
# the body limit). The packer shows at most 2 siblings of one exchange anyway (retrieve.pack.MAX_SIBLINGS).
MAX_CHUNKS = 12
QUESTION_CHARS = 2000  # meta `question` (contract)
TITLE_CHARS = 100
MAX_CALLS_LISTED = 20

_HEADING = re.compile(r"^#{1,6}\s+\S")
_FENCE = re.compile(r"^\s*(```|~~~)")

Match = Callable[[str | None], "tuple[Path, str] | None"]
# The natural keys of the first piece of every turn of an agent stored before, oldest stored first.
TurnKeys = Callable[[str], Iterable[str]]
# `<agent>:<session>:<thread>:<anchor>:0`: each part a label, whose redaction placeholders («redacted:kind»)
# hold a colon of their own.
_PART = r"((?:«[^»]*»|[^:«])+)"
_FIRST_PIECE = re.compile(rf"{_PART}:{_PART}:{_PART}:0")


class Earlier:
    """The session each exchange of an agent was stored under first, by its anchor.

    `claude --resume` (and `--continue`, `--fork-session`) goes on in a new `<new session id>.jsonl` that
    repeats the records of the session it continues, each with its `uuid` (anthropics/claude-code#4926,
    #10806; the copies are reported to keep the old `sessionId`, siteboon/claudecodeui#1022, and a tool
    that rewrites them to the new one must not change the outcome). A turn is keyed by its session and its
    first record's uuid (its anchor), so a copy filed under the new session was stored a second time, and
    summarised with it. An exchange whose anchor is stored under another session already (in memory, or
    earlier in this sync) is that session's: the same node, its id unchanged. Only Claude Code's anchors are
    ids unique across sessions (record uuids). Memory's keys are read once per sync, when the first such
    exchange is built, from the (source, natural key) index alone (about 0.1 s for 50,000 turns).
    """

    AGENTS = frozenset({"claude-code"})

    def __init__(self, read: TurnKeys | None = None) -> None:
        self._read = read
        self._held: dict[str, dict[tuple[str, str], str]] = {}

    def _of(self, agent: str) -> dict[tuple[str, str], str]:
        held = self._held.get(agent)
        if held is None:
            held = self._held[agent] = {}
            prefix = f"{agent}:"
            twice: set[tuple[str, str]] = set()
            for key in self._read(agent) if self._read else ():
                parts = _FIRST_PIECE.fullmatch(key, len(prefix)) if key.startswith(prefix) else None
                if parts is not None:
                    session, thread, anchor = parts.groups()
                    if held.setdefault((thread, anchor), session) != session:
                        twice.add((thread, anchor))
            # Stored under two sessions (by a version before this one): not known, so that the transcript read
            # first in this sync (the oldest) takes it, and a rebuild keeps it there only.
            for both in twice:
                del held[both]
        return held

    def session(self, agent: str, session: str, thread: str, anchor: str) -> str:
        """The session the exchange of SESSION's THREAD anchored at ANCHOR (labels) is filed under: the one
        that stored it first, another's when this transcript copied it; SESSION for one new (remembered)."""
        if agent not in self.AGENTS:
            return session
        return self._of(agent).setdefault((thread, anchor), session)


# natural key → (command, ts, meta) of the agent calls memory holds (Store.agent_calls_stored).
StoredCalls = Callable[[list[str]], "dict[str, tuple[str, int, dict[str, Any]]]"]


def _sections(text: str) -> list[tuple[str, str]]:
    """(heading, text) pieces of TEXT split before each Markdown heading outside code fences."""
    pieces: list[tuple[str, str]] = []
    heading = ""
    lines: list[str] = []
    fenced = False
    for line in text.split("\n"):
        if _FENCE.match(line):
            fenced = not fenced
        elif not fenced and _HEADING.match(line):
            if any(x.strip() for x in lines):
                pieces.append((heading, "\n".join(lines).strip()))
                lines = []
            heading = line.lstrip("#").strip()
        lines.append(line)
    if any(x.strip() for x in lines):
        pieces.append((heading, "\n".join(lines).strip()))
    return pieces


def _split_long(text: str) -> list[str]:
    """TEXT in pieces of at most CHUNK_CHARS, cut at blank lines where possible."""
    out: list[str] = []
    while len(text) > CHUNK_CHARS:
        cut = text.rfind("\n\n", 0, CHUNK_CHARS)
        if cut < CHUNK_CHARS // 3:
            cut = len(cut_redacted(text, CHUNK_CHARS))  # a placeholder is kept whole, in the next piece
        out.append(text[:cut].strip())
        text = text[cut:].strip()
    if text:
        out.append(text)
    return out


def chunk_answer(answer: str) -> list[tuple[str, str]]:
    """(heading, text) chunks of an answer: one when short, else heading sections merged up to CHUNK_CHARS."""
    if len(answer) <= CHUNK_CHARS:
        return [("", answer)]
    chunks: list[tuple[str, str]] = []
    for heading, text in _sections(answer):
        parts = _split_long(text)
        for n, part in enumerate(parts):
            head = heading if n == 0 else (f"{heading} (cont.)" if heading else "")
            if chunks and len(chunks[-1][1]) + len(part) + 2 <= CHUNK_CHARS:
                chunks[-1] = (chunks[-1][0] or head, chunks[-1][1] + "\n\n" + part)
            else:
                chunks.append((head, part))
    if len(chunks) > MAX_CHUNKS:
        tail = "\n\n".join(text for _, text in chunks[MAX_CHUNKS - 1 :])
        chunks = [*chunks[: MAX_CHUNKS - 1], (chunks[MAX_CHUNKS - 1][0], tail)]
    return chunks


def _first_line(text: str, limit: int = TITLE_CHARS) -> str:
    line = text.strip().split("\n", 1)[0].strip()
    return line if len(line) <= limit else cut_redacted(line, limit - 1).rstrip() + "…"


def _status(exit_code: int | None) -> str:
    return "exit unknown" if exit_code is None else f"exit {exit_code}"


def _relative_file(path: str, roots: list[Path]) -> str | None:
    real = os.path.realpath(path) if os.path.isabs(path) else None
    if real is None:
        return path.replace(os.sep, "/") if path and not path.startswith("..") else None
    for root in roots:
        prefix = str(root).rstrip(os.sep) + os.sep
        if real.startswith(prefix):
            return real[len(prefix) :].replace(os.sep, "/")
    return None


class Builder:
    """Builds the nodes of one project's threads; MATCH attributes a cwd (Attributor.match)."""

    def __init__(
        self,
        project: str,
        match: Match,
        roots: list[Path],
        max_body: int,
        label: Callable[[Path, str], str] = lambda _root, rel: rel,
        earlier: Earlier | None = None,
        stored: StoredCalls | None = None,
    ) -> None:
        self.project = project
        self.earlier = earlier or Earlier()
        self.match = match
        self.label = label  # how a command's folder is kept (Attributor.label: another checkout's, from here)
        self.roots = roots
        self.max_body = max_body
        self.stored = stored  # the calls memory holds, for a hook's record that lacks the exit code
        self.memo = Memo()

    def nodes(self, thread: Thread) -> Iterator[Node]:
        # The labels in every key, ref, title and meta (the parser keeps them as read: they find its records).
        thread = dataclasses.replace(
            thread,
            session_id=label(thread.session_id),
            thread=label(thread.thread),
            model=label(thread.model) if thread.model else None,
        )
        for turn, exchange in enumerate(thread.exchanges, thread.first_turn):
            if thread.moves and exchange.cwd is not None and self.match(exchange.cwd) is None:
                continue  # the session was in another project for this turn
            own = label(exchange.session) if exchange.session else thread.session_id
            if exchange.anchor:
                # A copy of an exchange stored under another session first is that session's (Earlier).
                own = self.earlier.session(thread.agent, own, thread.thread, label(exchange.anchor))
            yield from self._turn(
                thread if own == thread.session_id else dataclasses.replace(thread, session_id=own),
                turn,
                exchange,
            )

    def _turn(self, thread: Thread, turn: int, exchange: Exchange) -> Iterator[Node]:
        redact = self.memo.redact
        where = self.match(exchange.cwd) or self.match(thread.cwd)
        rel_cwd = where[1] if where else exchange.cwd
        question = redact(exchange.question)
        answer = redact("\n\n".join(a for a in exchange.answer if a))
        calls = [self._seen(call, exchange.cwd or thread.cwd) for call in exchange.calls]
        files: list[str] = []
        for path in exchange.files:
            rel = _relative_file(path, self.roots)
            if rel and rel not in files:
                files.append(rel)
        for call, command in calls:
            node = self._call_node(thread, call, command, where)
            if node is not None:
                for name in node.files:
                    if name not in files:
                        files.append(name)
                yield node
        if not question and not answer:
            return
        ran = "\n".join(
            f"$ {_first_line(command, 200)} ({_status(call.exit)})"
            for call, command in calls[:MAX_CALLS_LISTED]
        )
        if len(calls) > MAX_CALLS_LISTED:
            ran += f"\n… and {len(calls) - MAX_CALLS_LISTED} more command(s)"
        chunks = chunk_answer(answer) if answer else [("", "")]
        anchor = label(exchange.anchor) if exchange.anchor else turn
        key = f"{thread.agent}:{thread.session_id}:{thread.thread}:{anchor}"
        group = key if len(chunks) > 1 else None
        opener = _first_line(question) if question else f"({thread.agent} continues) {_first_line(answer)}"
        signal = conversation_signal(
            answer,
            ran_commands=bool(calls),
            failed=any(c.exit not in (None, 0) for c, _ in calls),
            sidechain=thread.sidechain,
        )
        for n, (heading, text) in enumerate(chunks):
            asked = question if n == 0 else _first_line(question, 200)
            body = (f"Q: {asked}\n\n" if asked else "") + (f"A: {text}" if text else "A: (no reply recorded)")
            if n == 0 and ran:
                body += "\n\nCommands run:\n" + ran
            if len(body) > self.max_body:
                body = cut_redacted(body, self.max_body - 30).rstrip() + "\n… [truncated]"
            title = opener + (f" › {_first_line(heading, 60)}" if heading else "")
            if thread.sidechain:
                named = thread.thread not in ("subagent", "sidechain")
                title = (f"[subagent {thread.thread}] " if named else "[subagent] ") + title
            title = one_line(title)  # a subagent's name (a transcript's agent_nickname) may hold a newline
            yield Node(
                project=self.project,
                kind="conversation_turn",
                source="conversation",
                natural_key=f"{key}:{n}",
                ref=f"{thread.agent}:{thread.session_id}#{turn}" + (f".{n}" if len(chunks) > 1 else ""),
                title=title,
                body=body,
                ts=exchange.ts,
                signal=signal,
                group=group,
                files=tuple(files),
                meta={
                    "agent": thread.agent,
                    "session_id": thread.session_id,
                    "thread": thread.thread,
                    "turn": turn,
                    "sidechain": thread.sidechain,
                    # The agent answered: `--author` filters treat a turn as the agent's, like its commands.
                    "author": thread.agent,
                    "author_kind": "agent",
                    "cwd": rel_cwd,
                    "question": cut_redacted(question, QUESTION_CHARS),
                    "chunk": n,
                    "chunks": len(chunks),
                    "model": thread.model,
                },
            )

    def _seen(self, call: Call, cwd: str | None) -> tuple[Call, str]:
        """CALL as its agent hook records it (agentcmd.canonical: a leading `cd DIR &&` moved into the cwd, a
        trailing status echo and `| head`/`| tail` taken off, the exit unknown when such a pipe decided it),
        with its command redacted: the same text and cwd whichever way the call was seen, so precheck and
        failure → fix matching see one command, and the person's `pytest -x` matches the agent's."""
        start = call.cwd or cwd
        command, moved, _echoed, masked = canonical(call.command, start or "")
        # `cd sub && …` with no known start: where it ran is unknown.
        ran_in = start if not moved or (start is None and not os.path.isabs(moved)) else moved
        seen = Call(label(call.call_id), command, call.ts, ran_in, None if masked else call.exit)
        return seen, self.memo.redact(command)

    def _call_node(
        self, thread: Thread, call: Call, command: str, where: tuple[Path, str] | None
    ) -> Node | None:
        """The shell_command node of an agent's call, or None when it ran outside this repository."""
        if call.cwd is not None:
            where = self.match(call.cwd)
        if where is None or not command.strip():
            return None
        root, rel = where
        natural_key = agent_call_key(thread.agent, call.call_id)
        if call.exit is not None and self.stored is not None:
            held = self.stored([natural_key]).get(natural_key)
            if held is not None and "seen_in" not in held[2] and held[2].get("exit") is None:
                return self._with_exit(thread.agent, natural_key, held, call.exit, (root, rel))
        cwd = self.label(root, rel)
        title, signal = self.memo.title_signal(command, call.exit)
        node = command_node(
            self.project,
            natural_key=natural_key,
            command=command,
            ts=call.ts,
            cwd=cwd,
            exit_code=call.exit,
            pipestatus=None,
            duration_ms=None,
            shell=thread.agent,
            session=thread.session_id,
            files=self.memo.command_files(command, root, rel),
            scraped=False,
            title=title,
            signal=signal,
            head=body_head(command, cwd, call.exit),
        )
        # `seen_in`: read back from the transcript (exit recovered from the output, no duration). The store
        # never lets it overwrite the agent hook's record of the same call (Node.secondhand), in either order.
        node.meta.update(
            {"author": thread.agent, "author_kind": "agent", "call_id": call.call_id, "seen_in": "transcript"}
        )
        return node

    def _with_exit(
        self,
        agent: str,
        natural_key: str,
        held: tuple[str, int, dict[str, Any]],
        exit_code: int,
        where: tuple[Path, str],
    ) -> Node:
        """The agent hook's record of a call (HELD: its command, time and meta as stored), which could not see
        the exit code (Codex's hook never says), with EXIT_CODE from the transcript: the node the shell source
        builds from that hook line once memory holds the transcript's code, so neither undoes the other."""
        command, ts, meta = held
        root, rel = where
        cwd = meta.get("cwd")
        cwd = cwd if isinstance(cwd, str) else self.label(root, rel)
        title, signal = self.memo.title_signal(command, exit_code)
        return command_node(
            self.project,
            natural_key=natural_key,
            command=command,
            ts=ts,
            cwd=cwd,
            exit_code=exit_code,
            pipestatus=meta.get("pipestatus"),
            duration_ms=meta.get("duration_ms"),
            shell=str(meta.get("shell") or agent),
            session=meta.get("session"),
            files=self.memo.command_files(command, root, rel),
            scraped=False,
            title=title,
            signal=signal,
            head=body_head(command, cwd, exit_code),
            author=str(meta.get("author") or agent),
            author_kind=str(meta.get("author_kind") or "agent"),
            call_id=meta["call_id"] if isinstance(meta.get("call_id"), str) else None,
            interrupted=meta.get("interrupted") is True,
        )
