"""What every transcript parser produces (threads of exchanges and shell calls), and the defensive readers.

The agents' transcript formats are undocumented and change between releases, so every parser here follows
the same rules: a record that does not match what we know is skipped and counted with its file and line, the
records after it are still read, a line longer than MAX_LINE_BYTES is never held in memory, and nothing
raises out of a parser (`Report.skip` is the only way to say something was wrong).
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from nexusmem.redact import redact, redact_path

# A Claude Code line holding a pasted log or a large tool result runs to a few hundred KB; 8 MB is far
# beyond any real record and bounds what one bad line can cost (it is skipped, in 64 KB reads).
MAX_LINE_BYTES = 8 << 20
_READ_CHUNK = 64 << 10

# Where skipped records are remembered (the first few per file are enough to find the pattern).
MAX_PROBLEMS_PER_FILE = 5

_LABELS: dict[str, str] = {}
_LABELS_MAX = 10_000


def label(value: str) -> str:
    """VALUE, an id or a name a transcript gives (a session's, a subagent's, a model's, a record's or a call's),
    redacted as the text is: it becomes a node's key, ref, title or meta, and the cursor's, and a secret pasted
    into one is replaced wherever it goes (the agent hook redacts the same fields; a placeholder is a key as
    good as any, used the same way everywhere). Remembered: a file repeats a few of them on every record."""
    found = _LABELS.get(value)
    if found is None:
        if len(_LABELS) >= _LABELS_MAX:
            _LABELS.clear()
        found = _LABELS[value] = redact(value)
    return found


@dataclass
class Call:
    """One shell command an agent ran (a tool call), with its outcome when the transcript has it."""

    call_id: str
    command: str
    ts: int  # ms
    cwd: str | None  # absolute, as the agent reported it
    exit: int | None = None  # None: unknown (no result, interrupted, output piped into head/tail)


@dataclass
class Exchange:
    """One question from the person and everything the agent said back before the next question."""

    ts: int  # ms, the question's record time (the first answer's when there is no question)
    question: str
    cwd: str | None
    answer: list[str] = field(default_factory=list)  # assistant prose, in order
    calls: list[Call] = field(default_factory=list)
    files: list[str] = field(default_factory=list)  # absolute paths the agent edited (Edit/Write tools)
    # The transcript's own id of the exchange's first record (Claude Code's uuid, Gemini's message id), so
    # its node keeps its id when earlier records are rewritten; None: keyed by its position in the thread.
    anchor: str | None = None
    # The session id its first record names, where it differs from record to record (Claude Code: a resumed
    # session's file repeats the records of the session it continues, under that one's id); None: the thread's.
    session: str | None = None
    offset: int = 0  # byte offset and line number of its first record (append-only resumption)
    line: int = 1


@dataclass
class Thread:
    """One conversation: a main session, or one subagent's sidechain of it."""

    agent: str  # "claude-code" | "codex" | "aider" | "gemini"
    session_id: str
    thread: str = "main"  # "main", or the subagent's id for a sidechain
    sidechain: bool = False
    cwd: str | None = None  # the first working directory the records name (attribution)
    model: str | None = None
    exchanges: list[Exchange] = field(default_factory=list)
    first_turn: int = 0  # the turn number of exchanges[0] (> 0 when a read resumed mid-file)
    # Each exchange's cwd is where the session itself was at that turn (Codex's turn_context, which moves
    # when a session is resumed in another directory; the cwd of Claude Code's records, which moves with the
    # agent's shell): exchanges are attributed one by one, a turn run in another project is not this one's,
    # and a session started elsewhere can hold some of this project's.
    moves: bool = False


def resume_after(threads: list[Thread], previous: Resume | None, facts: dict[str, Any]) -> Resume:
    """Where the next read of an append-only file starts: the first record of the latest exchange of each
    thread (it may still grow), the earliest of them; turns before it are numbered for good."""
    base = previous or Resume()
    lasts = [t.exchanges[-1] for t in threads if t.exchanges]
    if not lasts:
        return Resume(base.offset, base.line, dict(base.turns), facts)
    first = min(lasts, key=lambda e: e.offset)
    turns = dict(base.turns)
    for t in threads:
        turns[t.thread] = t.first_turn + sum(1 for e in t.exchanges if e.offset < first.offset)
    return Resume(first.offset, first.line, turns, facts)


@dataclass
class Report:
    """What a parser passed over: a count plus the first few locations, per scan."""

    skipped: int = 0
    problems: list[str] = field(default_factory=list)
    _per_file: dict[str, int] = field(default_factory=dict)
    # Per file: the lines an earlier sync read whole (a grown file is read again from its last open exchange,
    # and a bad line there was counted then), and the last whole line this read reached.
    known: dict[str, int] = field(default_factory=dict)
    lines: dict[str, int] = field(default_factory=dict)
    # Files whose head named no working directory as far as it was read (claude.HEAD_CWD_BYTES): not read.
    no_cwd: int = 0
    # What a problem calls a file, or None to call it by its path, redacted (a parser run on its own): the
    # source names each transcript without its path, which is named after its session id (source._name).
    name: Callable[[str], str | None] = field(default=lambda _path: None)

    def skip(self, path: Path | str, line: int | None, why: str, within: str | None = None) -> None:
        """Count the record at PATH:LINE (WITHIN: its place in a JSON document, `messages[3]`) as skipped,
        and note where it was and WHY for the first few of a file."""
        key = str(path)
        if line is not None and line <= self.known.get(key, 0):
            return  # skipped and counted by the sync that first read it
        self.skipped += 1
        seen = self._per_file.get(key, 0)
        self._per_file[key] = seen + 1
        if seen < MAX_PROBLEMS_PER_FILE:
            named = self.name(key)
            if named is None:  # the path, redacted: a secret pasted into a session id is in it
                where = redact_path(key) + (f" {within}" if within else "")
                where += f":{line}" if line is not None else ""
            else:
                where = named + (f", {within}" if within else "")
                where += f", line {line}" if line is not None else ""
            self.problems.append(f"{where}: {why}")

    def guard(self, path: Path | str, line: int | None, within: str | None = None) -> _RecordGuard:
        """A context in which an exception skips the one record at PATH:LINE (counted) instead of the file."""
        return _RecordGuard(self, path, line, within)


class _RecordGuard:
    """`with report.guard(path, line):` around the reading of one record: an exception there (a parser that
    met a shape it did not expect) skips and counts that record with its place, and the next is read."""

    __slots__ = ("line", "path", "report", "within")

    def __init__(self, report: Report, path: Path | str, line: int | None, within: str | None) -> None:
        self.report, self.path, self.line, self.within = report, path, line, within

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: object) -> bool:
        if kind is None or not issubclass(kind, Exception):
            return False
        # The exception's type only: its message may quote the record, which may hold a secret.
        why = f"a record this version cannot read ({kind.__name__})"
        self.report.skip(self.path, self.line, why, self.within)
        return True


@dataclass
class Resume:
    """Where an append-only transcript's next read starts: the byte (and line number) at which the last,
    possibly unfinished exchange of every thread began, with what the parser needs to carry on from there
    (the turns already numbered per thread, and parser-specific facts such as the current cwd)."""

    offset: int = 0
    line: int = 1
    turns: dict[str, int] = field(default_factory=dict)
    facts: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        turns = {label(thread): n for thread, n in self.turns.items()}  # a subagent's id (see turn_of)
        return {"offset": self.offset, "line": self.line, "turns": turns, "facts": self.facts}

    def turn_of(self, thread: str) -> int:
        """The number of THREAD's next turn (the cursor keeps each thread by its label)."""
        return self.turns.get(label(thread), self.turns.get(thread, 0))

    @classmethod
    def from_json(cls, data: Any) -> Resume | None:
        """The saved position, or None when DATA is not one (an older cursor, a hand edit)."""
        if not isinstance(data, dict):
            return None
        offset, line, turns, facts = (
            data.get("offset"),
            data.get("line"),
            data.get("turns"),
            data.get("facts"),
        )
        if not (isinstance(offset, int) and isinstance(line, int) and offset >= 0 and line >= 1):
            return None
        if not isinstance(turns, dict) or not all(isinstance(v, int) for v in turns.values()):
            return None
        return cls(
            offset, line, {str(k): int(v) for k, v in turns.items()}, facts if isinstance(facts, dict) else {}
        )


def iter_lines(
    path: Path, report: Report, start: int = 0, first_line: int = 1
) -> Iterator[tuple[int, int, bytes]]:
    """(line number, byte offset of the line, line without its newline) for each line of PATH from START
    (see _iter_lines)."""
    for number, offset, line, _ended in _iter_lines(path, report, start, first_line):
        yield number, offset, line


def _iter_lines(
    path: Path, report: Report, start: int = 0, first_line: int = 1
) -> Iterator[tuple[int, int, bytes, bool]]:
    """(line number, byte offset of the line, line without its newline) for each line of PATH from START.

    Over-long lines are skipped and counted. A last line without a newline is yielded too: an agent may be
    writing it right now, and if it is cut the JSON parse fails and it is counted, to be read whole on the
    next sync (the file changed).
    """
    try:
        handle = path.open("rb")
    except OSError as exc:
        report.skip(path, None, f"cannot open ({exc.strerror or exc})")
        return
    key = str(path)
    with handle:
        if start:
            handle.seek(start)
        number = first_line - 1
        offset = start
        while True:
            line = handle.readline(MAX_LINE_BYTES + 1)
            if not line:
                return
            number += 1
            here = offset
            offset += len(line)
            if len(line) > MAX_LINE_BYTES and not line.endswith(b"\n"):
                # Discard the rest of this line without holding it.
                while True:
                    rest = handle.readline(_READ_CHUNK)
                    offset += len(rest)
                    if not rest or rest.endswith(b"\n"):
                        break
                report.skip(path, number, f"line longer than {MAX_LINE_BYTES >> 20} MB")
                report.lines[key] = number
                continue
            ended = line.endswith(b"\n")
            if ended:
                report.lines[key] = number
            yield number, here, line.rstrip(b"\r\n"), ended


# A file whose last line is cut and that nobody wrote to for this long was left so (an agent killed
# mid-write): its cut line is a bad record. Written to more recently, the line is most likely being written.
PARTIAL_LINE_GRACE_S = 600


def _written_lately(path: Path) -> bool:
    try:
        return time.time() - path.stat().st_mtime < PARTIAL_LINE_GRACE_S
    except OSError:
        return False


def loads(raw: bytes | str) -> Any:
    """A JSON value from an agent's file, the way its agent meant it: a stray byte that is not UTF-8 (a cut
    or mis-encoded paste) reads as U+FFFD and the rest of the text stands; so does a lone `\\ud83d`, which
    JSON.stringify writes for half an emoji cut by a length limit and which no node may hold (nodes.Node
    refuses it). Raises ValueError or RecursionError when RAW is not JSON."""
    data = raw.encode("utf-8", "surrogatepass") if isinstance(raw, str) else raw
    try:
        value = json.loads(data)
    except UnicodeDecodeError:
        value = json.loads(data.decode("utf-8", "replace"))
    if _SURROGATE_ESCAPE.search(data) is not None:
        value = _without_lone_surrogates(value)
    return value


_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def _without_lone_surrogates(value: Any) -> Any:
    if isinstance(value, str):
        return _LONE_SURROGATE.sub("\ufffd", value)
    if isinstance(value, dict):
        return {_without_lone_surrogates(k): _without_lone_surrogates(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_without_lone_surrogates(v) for v in value]
    return value


def iter_json_objects(
    path: Path, report: Report, start: int = 0, first_line: int = 1
) -> Iterator[tuple[int, int, dict[str, Any]]]:
    """(line number, byte offset, object) for each JSON-object line of PATH from START (read by loads());
    blank lines ignored, the rest counted."""
    for number, offset, raw, ended in _iter_lines(path, report, start, first_line):
        if not raw.strip():
            continue
        try:
            value = loads(raw)
        except (ValueError, RecursionError):
            if not ended and _written_lately(path):
                # The last line, with no newline yet, of a file written moments ago: the agent is most
                # likely writing it. Not a bad record (it stayed listed in status after the line was done):
                # the file changes when it is, and the next sync reads it whole.
                continue
            report.skip(path, number, "not a JSON line" if ended else "not a JSON line (the file ends in it)")
            continue
        if not isinstance(value, dict):
            report.skip(path, number, f"a JSON {type(value).__name__}, not an object")
            continue
        yield number, offset, value


def iso_ms(value: Any) -> int | None:
    """Epoch ms of an ISO-8601 time ('2026-09-11T15:00:00.000Z'), or None when it is not one."""
    if not isinstance(value, str) or not value:
        return None
    text = value.strip()
    if text.endswith(("Z", "z")):
        text = text[:-1] + "+00:00"
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    try:
        ms = int(moment.timestamp() * 1000)
    except (OverflowError, OSError, ValueError):
        return None
    return ms if 0 <= ms < 4_102_444_800_000 else None


_REMINDER = re.compile(r"<system-reminder>.*?(?:</system-reminder>|\Z)", re.DOTALL)


def strip_injected(text: str) -> str:
    """TEXT without the <system-reminder> blocks the agent CLI adds to what the person typed."""
    if "<system-reminder>" in text:
        text = _REMINDER.sub("", text)
    return text.strip()


# A command whose output is cut by head/tail/tee (or whose status is echoed away) reports the status of the
# last program in the pipe, not the command's: its outcome is unknown, not success.
_MASKED = re.compile(r"\|\s*(?:head|tail|tee|less|more)\b|;\s*echo\s+[\"']?[A-Za-z_ ]*[:=]?\s*\$\?")


def masked_status(command: str) -> bool:
    """Whether COMMAND's reported status says nothing about the command itself (pipe into head, echo $?)."""
    return bool(_MASKED.search(command))


def text_of(value: Any, *, keys: tuple[str, ...] = ("text",)) -> str:
    """The text of a message content: a string, or the joined KEYS of a list of blocks (others ignored)."""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        parts = []
        for block in value:
            if isinstance(block, str):
                parts.append(block)
            elif isinstance(block, dict):
                for key in keys:
                    text = block.get(key)
                    if isinstance(text, str):
                        parts.append(text)
                        break
        return "\n".join(parts)
    return ""
