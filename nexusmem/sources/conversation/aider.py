"""Aider: `<repo>/.aider.chat.history.md` (the conversation) and `<repo>/.aider.input.history` (prompt times).

Chat history (Aider's io.py, append-only Markdown): `# aider chat started at YYYY-MM-DD HH:MM:SS` opens a
session; lines starting `#### ` are the person's input; `> ` lines are Aider's own tool output (files
added, confirmations, `/run` output, `Running <command>` when it runs a shell command it suggested);
everything else is the model's reply. The file has no per-turn times, no session id and no exit codes:
a session is named by its start time, each turn takes its time from the matching entry of the input history
(`# <datetime>` then `+`-prefixed lines), else the session start plus its index in milliseconds, and the
commands Aider ran have an unknown exit. Times are the machine's local time, as Aider writes them.
"""

from __future__ import annotations

import re
from datetime import datetime
from pathlib import Path

from nexusmem.sources.conversation.model import Call, Exchange, Report, Thread, iter_lines

AGENT = "aider"
CHAT_FILE = ".aider.chat.history.md"
INPUT_FILE = ".aider.input.history"

_START = re.compile(r"^# aider chat started at (\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)\s*$")
_INPUT_STAMP = re.compile(r"^# (\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)?)\s*$")
_RUNNING = re.compile(r"^Running (.+)$")
# Aider commands that carry a question for the model; every other `/command` is not one.
_ASKING = ("/ask ", "/code ", "/architect ", "/context ")


def _local_ms(stamp: str) -> int | None:
    try:
        moment = datetime.fromisoformat(stamp)
    except ValueError:
        return None
    try:
        return int(moment.timestamp() * 1000)  # naive: the machine's local time, as Aider wrote it
    except (OverflowError, OSError, ValueError):
        return None


def _decode(raw: bytes) -> str:
    return raw.decode("utf-8", errors="replace")


def input_times(path: Path, report: Report) -> list[tuple[int, str]]:
    """(ms, text) of each entry of an input history file, in file order."""
    entries: list[tuple[int, str]] = []
    stamp: int | None = None
    lines: list[str] = []

    def flush() -> None:
        if stamp is not None and lines:
            entries.append((stamp, "\n".join(lines).strip()))

    if path.is_symlink() or not path.is_file():
        return entries  # a symlink may point at another project's history (as the chat file: source._scan)
    for _number, _offset, raw in iter_lines(path, report):
        line = _decode(raw)
        found = _INPUT_STAMP.match(line)
        if found:
            flush()
            stamp, lines = _local_ms(found.group(1)), []
        elif line.startswith("+"):
            lines.append(line[1:])
    flush()
    return entries


def _question(text: str) -> str | None:
    """The question in what the person typed, or None for an Aider command (/add, /run, !cmd...)."""
    if text.startswith(_ASKING):
        return text.split(" ", 1)[1].strip()
    if text.startswith(("/", "!")) or text == "<blank>":
        return None
    return text


def parse(path: Path, report: Report, *, cwd: str) -> list[Thread]:
    """One thread per session of the chat history PATH (CWD: the directory Aider ran in)."""
    times = input_times(path.with_name(INPUT_FILE), report)
    used = [False] * len(times)
    threads: list[Thread] = []
    thread: Thread | None = None
    start_ms = 0
    current: Exchange | None = None
    asking: list[str] = []  # consecutive `#### ` lines
    prose: list[str] = []

    def time_of(text: str, start: int, index: int) -> int:
        """The input-history time of TEXT (each entry used once), else the session start + INDEX ms."""
        for i, (ms, entry) in enumerate(times):
            if not used[i] and entry == text and ms >= start - 1000:
                used[i] = True
                return ms
        return start + index

    def close_question() -> None:
        nonlocal current, asking
        if not asking or thread is None:
            asking = []
            return
        text = "\n".join(asking).strip()
        asking = []
        question = _question(text)
        if question is None:
            current = None  # what follows answers a command, not a question
            return
        ts = time_of(text, start_ms, len(thread.exchanges))
        current = Exchange(ts=ts, question=question, cwd=cwd)
        thread.exchanges.append(current)

    def flush_prose() -> None:
        nonlocal prose
        text = "\n".join(prose).strip()
        prose = []
        if text and current is not None:
            current.answer.append(text)

    for number, _offset, raw in iter_lines(path, report):
        line = _decode(raw)
        started = _START.match(line)
        if started:
            flush_prose()
            close_question()
            ms = _local_ms(started.group(1))
            if ms is None:
                report.skip(path, number, "session start with an unreadable time")
                thread = None
                continue
            start_ms = ms
            thread = Thread(agent=AGENT, session_id=f"aider-{started.group(1)}", cwd=cwd)
            threads.append(thread)
            current = None
            continue
        if thread is None:
            if line.strip():
                report.skip(path, number, "text before the first 'aider chat started' line")
            continue
        if line.startswith("####"):
            flush_prose()
            asking.append(line[4:].strip())
            continue
        close_question()
        if line.startswith(">"):
            flush_prose()
            running = _RUNNING.match(line[1:].strip())
            if running and current is not None:
                call_id = f"{thread.session_id}:{number}"
                current.calls.append(Call(call_id=call_id, command=running.group(1), ts=current.ts, cwd=cwd))
            continue
        prose.append(line)
    flush_prose()
    close_question()
    return [t for t in threads if t.exchanges]
