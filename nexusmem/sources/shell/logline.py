"""The shell-log line: its format (docs/contracts.md §2), parsing and range checks, and reading the log.

One module owns it: the shell source reads with it, `forget` rewrites the log with it, `hook status` and
`hook install` name the same shells. The prompt hooks (shell/) write it; nothing here writes a line.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
from collections.abc import Callable, Iterator
from pathlib import Path

from nexusmem.bounds import MAX_TS_MS, MIN_TS_MS, text_ok
from nexusmem.paths import make_user_dir, shell_log_path
from nexusmem.sources.shell.agentcmd import cd_target, pipeline_status

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (~4 ms of a cold precheck)
if TYPE_CHECKING:
    from typing import Any

# The shells whose hooks write the log (the `shell` key of a line), in the order install and status list them.
SHELLS: tuple[str, ...] = ("bash", "zsh", "fish", "pwsh")

CHUNK_BYTES = 1 << 20

# A longer line is not a command anyone typed (a pasted blob, a corrupted write): skipped, never buffered.
MAX_LINE_BYTES = 1 << 20

# How much of the log's start identifies it: a replaced or truncated-and-rewritten log hashes differently.
# As much again just before a saved offset (past the head) says the bytes up to it are where they were: a
# line deleted or added anywhere before it (an editor writing the file in place) moves them.
HEAD_BYTES = 4096


def _head_hash(path: Path, length: int) -> str:
    with open(path, "rb") as fh:
        return _sha256_hex(fh.read(length))[:32]


def before_span(offset: int) -> tuple[int, int]:
    """(start, length) of the bytes just before OFFSET that a saved position hashes besides the head: up to
    HEAD_BYTES of them, never overlapping the head (length 0 when the head reaches OFFSET)."""
    start = max(HEAD_BYTES, offset - HEAD_BYTES)
    return start, max(0, offset - start)


def _before_hash(path: Path, offset: int) -> str:
    """The hash of before_span(OFFSET) of the file at PATH ('' when the span is empty): one short read."""
    start, length = before_span(offset)
    if not length:
        return ""
    with open(path, "rb") as fh:
        fh.seek(start)
        return _sha256_hex(fh.read(length))[:32]


def _sha256_hex(data: bytes) -> str:
    """SHA-256 of DATA in hex, from CPython's built-in module when there is one: `hashlib` loads OpenSSL
    (~4-9 ms of a cold precheck on the 2-core build machine, `python -X importtime`; `_sha256` ~0.3 ms),
    and precheck checks a cursor on every commit with an unsynced tail. Same digest either way."""
    try:
        from _sha2 import sha256  # type: ignore[import-not-found,unused-ignore]  # Python 3.12+
    except ImportError:
        try:
            from _sha256 import sha256  # type: ignore[import-not-found,no-redef,unused-ignore]  # 3.10-3.11
        except ImportError:
            from hashlib import sha256  # type: ignore[assignment,unused-ignore]
    digest: str = sha256(data).hexdigest()
    return digest


LOCK_NAME = ".shell-history.lock"


@contextlib.contextmanager
def log_lock(exclusive: bool) -> Iterator[None]:
    """An OS lock on a side file of the log, taken by NexusMem processes only — never by the hooks.

    Readers (each project's sync) take it shared, the in-place rewriters (the redaction pass at the start
    of a sync, forget) take it exclusive, so a reader never sees a line half overwritten. The hooks only
    ever append (O_APPEND) past the end, which a rewrite never touches, so they need no lock and never
    wait. The OS drops the lock when its holder dies, even by SIGKILL. No-op without fcntl (Windows).
    """
    try:
        import fcntl
    except ImportError:
        yield
        return
    from nexusmem import private

    try:
        directory = make_user_dir()  # the log's folder
        fd = private.open_fd(directory / LOCK_NAME, os.O_RDWR)
    except OSError:
        if exclusive:
            raise
        # A folder nobody can write in (a read-only NEXUSMEM_HOME): no rewriter can run there either, so a
        # reader takes the lock read-only when the side file exists, and reads without it when it does not.
        try:
            fd = os.open(shell_log_path().parent / LOCK_NAME, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
        except OSError:
            yield
            return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
        yield
    finally:
        os.close(fd)


def _locked_records(path: Path, offset: int) -> Iterator[tuple[int, Any]]:
    """iter_log_records under the shared log lock (released when the iteration ends or is dropped)."""
    with log_lock(exclusive=False):
        yield from iter_log_records(path, offset)


def iter_log_lines(path: Path, offset: int) -> Iterator[tuple[int, bytes | None]]:
    """Yield (end offset, line) for each complete line after OFFSET, reading in chunks.

    An over-long line yields None instead of its bytes (it is never held in memory whole). A last line
    without its newline yields (-1, None) and no offset: it is probably still being written.
    """
    with open(path, "rb") as fh:
        fh.seek(offset)
        pos = offset  # file offset of buf[0]
        buf = b""
        discarding = False  # inside an over-long line, dropping bytes until its newline
        while True:
            chunk = fh.read(CHUNK_BYTES)
            if not chunk:
                break
            if discarding:
                nl = chunk.find(b"\n")
                if nl < 0:
                    pos += len(chunk)
                    continue
                pos += nl + 1
                yield pos, None
                chunk = chunk[nl + 1 :]
                discarding = False
            buf = buf + chunk if buf else chunk
            lines = buf.split(b"\n")
            buf = lines.pop()
            for line in lines:
                pos += len(line) + 1
                yield pos, (line if len(line) <= MAX_LINE_BYTES else None)
            if len(buf) > MAX_LINE_BYTES:
                pos += len(buf)
                buf = b""
                discarding = True
        if buf or discarding:
            yield -1, None


# LogLine's fields in constructor order (its repr and equality follow it).
_LOG_LINE_FIELDS = (
    "ts",
    "cwd",
    "command",
    "exit",
    "pipestatus",
    "duration_ms",
    "shell",
    "session",
    "author",
    "author_kind",
    "call_id",
    "seq",
    "interrupted",
)


class LogLine:
    """One well-formed hook line (optional fields None when absent or of the wrong type).

    A plain class with slots rather than a dataclass: `dataclasses` imports `inspect`, ~10 ms of a cold
    precheck that reads the log's unsynced tail."""

    __slots__ = _LOG_LINE_FIELDS

    def __init__(
        self,
        ts: int,
        cwd: str,
        command: str,
        exit: int | None,
        pipestatus: list[int] | None,
        duration_ms: int | None,
        shell: str,
        session: str,
        # Who ran it (docs/contracts.md §2): absent = the person at the keyboard ("me", "human"). An agent's
        # hook line names the agent ("claude-code", "codex") and its own id of the tool call.
        author: str = "me",
        author_kind: str = "human",
        call_id: str | None = None,
        # The prompt hook's number of the line in its shell (session): two lines of one shell that started in
        # the same millisecond with the same text are two runs. None in lines written before it was.
        seq: int | None = None,
        # An agent's call the user interrupted (its hook says so): exit unknown, and no failure.
        interrupted: bool = False,
    ) -> None:
        self.ts = ts
        self.cwd = cwd
        self.command = command
        self.exit = exit
        self.pipestatus = pipestatus
        self.duration_ms = duration_ms
        self.shell = shell
        self.session = session
        self.author = author
        self.author_kind = author_kind
        self.call_id = call_id
        self.seq = seq
        self.interrupted = interrupted

    def _fields(self) -> tuple[Any, ...]:
        return tuple(getattr(self, name) for name in self.__slots__)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, LogLine) and self._fields() == other._fields()

    __hash__ = None  # type: ignore[assignment]  # mutable, like the dataclass it replaces

    def __repr__(self) -> str:
        shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in self.__slots__)
        return f"LogLine({shown})"


# The decoder's C scanner (typeshed does not declare the attribute, hence getattr).
_scan_once: Callable[[str, int], tuple[Any, int]] = getattr(json.JSONDecoder(), "scan_once")  # noqa: B009


def loads_line(raw: bytes) -> Any:
    """json.loads for one line, about twice as fast on the common case (a bare object, nothing around it).

    The C scanner is used directly: json.loads spends half its time detecting the encoding and wrapping.
    Anything unusual (surrounding whitespace, trailing data) goes through json.loads for the exact verdict.
    """
    text = raw.decode("utf-8")
    try:
        obj, end = _scan_once(text, 0)
    except StopIteration:
        return json.loads(text)
    if end != len(text):
        return json.loads(text)
    return obj


class _Bad:
    """A line that is not a JSON value (or is over-long, or nested too deeply): skipped and counted. CWD: the
    folder it names, when that can still be read from it (_cwd_in): whose line it is (bad_line_cwd)."""

    __slots__ = ("cwd", "reason")

    def __init__(self, reason: str, cwd: str | None = None) -> None:
        self.reason = reason
        self.cwd = cwd


_BAD = _Bad("longer than 1 MB")

_BLANK: Any = object()  # an empty line: skipped without complaint

_PARTIAL: Any = object()  # the last line has no newline yet


# The start of every line a hook writes, and the key that marks a line read from behind a torn one.
_LINE_START = b'{"ts":'
TORN = "\x00torn"

# The keys of a hook line (docs/contracts.md §2); readers ignore any other.
KNOWN_KEYS = frozenset((*_LOG_LINE_FIELDS, "v"))


def glued_at(raw: bytes) -> int:
    """Where in RAW, a line that does not parse, the line a hook appended after a torn one starts (> 0), or
    -1 / 0 when none does: a shell killed as it wrote left a line's start without its newline."""
    return raw.rfind(_LINE_START)


def _cwd_in(raw: bytes) -> str | None:
    """The folder RAW, a line that does not parse whole, names in its `"cwd": "…"`, when that string can be
    read; None otherwise. The slow path of bad lines only."""
    if b'"cwd"' not in raw:
        return None
    import re  # not at the top: precheck reads the log through this module and never gets here

    found = re.search(rb'"cwd"\s*:\s*("(?:[^"\\\n]|\\.)*")', raw)
    if found is None:
        return None
    try:
        value = json.loads(found.group(1))
    except ValueError:  # not UTF-8, a bad escape
        return None
    return value if isinstance(value, str) else None


def bad_line_cwd(record: Any) -> str | None:
    """The folder a line that is not a valid hook line (log_line_from refused RECORD) names, when it can be
    read: which project the bad line is one of (the shell source counts it there only); None when it names
    none that can be read (garbage, no or a null `cwd`). For the start of a line cut short that a good line
    was read behind (TORN), the folder that start names."""
    if isinstance(record, _Bad):
        cwd = record.cwd
    elif type(record) is dict:
        cwd = record[TORN] if TORN in record and log_line_from(record) is not None else record.get("cwd")
    else:
        return None
    if type(cwd) is not str or not cwd or "\x00" in cwd or not text_ok(cwd):
        return None
    return cwd


def line_folder(raw: bytes) -> str | None:
    """The folder the log line RAW ran in, as the shell source reads it (a leading `cd DIR &&` of a numbered
    line: DIR), or the folder a bad line still names; None when it names none (garbage, no `cwd`)."""
    record = _loads_or_bad(raw)
    line = log_line_from(record)
    return line.cwd if line is not None else bad_line_cwd(record)


def _loads_or_bad(raw: bytes) -> Any:
    try:
        return loads_line(raw)
    except UnicodeDecodeError:
        bad = _Bad("not UTF-8")
    except ValueError as exc:
        bad = _Bad(f"not JSON ({str(exc)[:60]})", _cwd_in(raw))
    except RecursionError:  # [[[[... 100k deep: the C scanner gives up, the line is garbage
        return _Bad("JSON nested too deeply", _cwd_in(raw))
    # A shell killed while it wrote a long line (bash writes one over 8 KB in pieces), or a full disk, leaves
    # its start without a newline, and the next line a hook appends is glued to it: that line is read from
    # its own start, marked TORN so that the piece before it is counted as the bad record it is.
    at = glued_at(raw)
    if at > 0:
        try:
            found = loads_line(raw[at:])
        except (ValueError, RecursionError):
            return bad
        if type(found) is dict:
            found[TORN] = _cwd_in(raw[:at]) or ""  # where the piece cut short ran, if it still says
            return found
    return bad


def iter_log_records(path: Path, offset: int, batch: int = 2048) -> Iterator[tuple[int, Any]]:
    """Yield (end offset, parsed JSON value | _Bad | _BLANK) per complete line; (-1, _PARTIAL) at a cut end.

    Lines that look like one object each are parsed a batch at a time as one JSON array (a third faster
    than line by line: the per-call overhead dominates for short lines). A batch whose parse fails or
    yields a different number of values falls back to line by line, so a bad line costs only its batch.
    """
    ends: list[int] = []
    pending: list[bytes] = []

    def flush() -> Iterator[tuple[int, Any]]:
        try:
            values = json.loads(b"[" + b",".join(pending) + b"]")
            if len(values) != len(pending):
                raise ValueError("lines and values do not align")
        except (ValueError, RecursionError):
            values = [_loads_or_bad(raw) for raw in pending]
        yield from zip(ends, values)
        ends.clear()
        pending.clear()

    for end, raw in iter_log_lines(path, offset):
        if end >= 0 and raw is not None and raw[:1] == b"{" and raw[-1:] == b"}":
            ends.append(end)
            pending.append(raw)
            if len(pending) >= batch:
                yield from flush()
            continue
        yield from flush()
        if end < 0:
            yield -1, _PARTIAL
        elif raw is None:
            yield end, _BAD
        elif not raw.strip():
            yield end, _BLANK
        else:
            yield end, _loads_or_bad(raw)
    yield from flush()


def parse_log_line(raw: bytes) -> LogLine | None:
    """Parse one log line; None when it is not JSON, not an object, or lacks ts/cwd/command of the right type.

    Unknown keys are ignored; an optional key of the wrong type reads as absent rather than losing the line.
    """
    return log_line_from(_loads_or_bad(raw))


# Range checks at ingest (a value outside is bad input, never stored): exit codes span Windows' unsigned
# 32-bit codes (0xC0000005 = 3221225477) and negative ones; a duration over ten years is a broken clock.
EXIT_MIN, EXIT_MAX = -(1 << 31), 1 << 32

MAX_DURATION_MS = 10 * 365 * 86_400_000

MAX_PIPESTATUS = 64

# An author is a short name ("claude-code", "atuin:copilot"); a call id an agent's token ("toolu_01…",
# "call_…": ~30 characters). Longer values are not what a hook writes: read as absent.
MAX_AUTHOR_CHARS = 64
MAX_CALL_ID_CHARS = 200
AUTHOR_KINDS = ("human", "agent")

# A line's number in its shell: past 2^53 it is no count a shell reached (nor exact in every JSON reader).
MAX_SEQ = (1 << 53) - 1


_LEAVE = ("exit", "logout")


def _leaves_the_shell(command: str) -> bool:
    """Whether COMMAND is only `exit` or `logout`, with its status or not (`exit 3`), not a list."""
    words = command.split()
    return 0 < len(words) <= 2 and words[0] in _LEAVE and not any(c in command for c in ";&|()`")


# Shells whose interactive session a line may start (`bash`, `fish --private`): its status is that of the
# last command typed in it, not a failure of the line. The options of each that take a value (`-o vi`).
_SHELL_NAMES = frozenset(("bash", "zsh", "fish", "sh", "dash", "ksh"))
_SHELL_FIRST = frozenset("bzfsdk/ectniux")  # and a VAR=value first (`t`ime, `n`ice, `i`onice, `u`nbuffer…)
_TAKES_VALUE = {
    "fish": frozenset(("-C", "--init-command", "-d", "--debug", "-o", "--debug-output", "-f", "--features")),
}
_POSIX_TAKES_VALUE = frozenset(("-o", "+o", "-O", "+O", "--rcfile", "--init-file"))


def _past_launchers(words: list[str]) -> list[str] | None:
    """WORDS past what only starts the next word (sources.shell.launchers: `env -u HOME`, `command`, `time`,
    `nice -n 5`, `VAR=value`, `sudo -E`, `sudo -u app`): `TERM=xterm bash`, `env bash`, `nice zsh`, `sudo -u
    app bash` start the shell they name. None: the launcher itself starts an interactive shell (`sudo -s`,
    `sudo -i`, `sudo -u app -s`, `doas -s`, `su`, `su -`, `su -l`)."""
    from nexusmem.sources.shell.launchers import command_start  # a line that may start a shell only

    words = words[command_start(words) :]
    head = words[0].rpartition("/")[2] if words else ""
    if head in ("sudo", "doas"):
        options = [w for w in words[1:] if w[:1] == "-"]
        if options and any(o in ("-s", "-i", "--shell", "--login") for o in options):
            # Its other words are the values of options (`-u app`): `sudo -u app -s` runs no command.
            return None
    elif head == "su" and all(w in ("-", "-l", "--login") for w in words[1:]):
        return None
    return words


def _starts_a_shell(command: str) -> bool:
    """Whether COMMAND only starts an interactive shell: bash, zsh, fish, sh, dash or ksh (a path to one too)
    with options alone (`-l`, `-i`, `--private`, `-o vi`), no script to run and no `-c`/`--command`."""
    if len(command) > 200 or any(c in command for c in ";&|()<>`$\n\"'"):
        return False
    words = _past_launchers(command.split())
    if words is None:
        return True  # `sudo -s`, `sudo -i`, `su`: a root shell
    if not words or words[0].rpartition("/")[2] not in _SHELL_NAMES:
        return False
    takes_value = _TAKES_VALUE.get(words[0].rpartition("/")[2], _POSIX_TAKES_VALUE)
    skip = False
    for word in words[1:]:
        if skip:
            skip = False
        elif word in takes_value:
            skip = True
        elif word[:1] not in ("-", "+") or word == "--" or word[:9] == "--command":
            return False  # a script (an operand), or the end of the options before one, or a command string
        elif word[:2] != "--" and "c" in word[1:]:
            return False  # -c, -lc, -ic: a command string
    return True


def _exit_ok(value: Any) -> bool:
    return type(value) is int and EXIT_MIN <= value < EXIT_MAX


def log_line_from(obj: Any) -> LogLine | None:
    """The LogLine in one parsed JSON value (see parse_log_line), None when it is not a valid one.

    A time outside 1970..2100 or text that is not valid Unicode (a lone surrogate escape such as \\ud800)
    makes the line invalid; an optional number out of its range (exit, pipestatus, duration_ms) reads as
    absent, like one of the wrong type. line_problem() says why a line was refused.
    """
    # Called for every line of a log that may hold 100k: `type(x) is int` also rejects JSON booleans, and
    # positional arguments avoid the keyword-matching cost.
    if type(obj) is not dict:
        return None
    get = obj.get
    ts, cwd, command = get("ts"), get("cwd"), get("command")
    if type(ts) is not int:
        if type(ts) is not float or not math.isfinite(ts):
            return None
        ts = int(ts)  # tolerated: a hook on a shell with only fractional clocks
    if not (MIN_TS_MS <= ts < MAX_TS_MS):
        return None
    if type(cwd) is not str or type(command) is not str or not text_ok(cwd) or not text_ok(command):
        return None
    if "\x00" in cwd:  # no folder's name holds a NUL: not a folder a command ran in
        return None
    exit_code, pipestatus, duration = get("exit"), get("pipestatus"), get("duration_ms")
    shell, session = get("shell"), get("session")
    if pipestatus is not None and not (
        type(pipestatus) is list and len(pipestatus) <= MAX_PIPESTATUS and all(map(_exit_ok, pipestatus))
    ):
        pipestatus = None
    exit_code = exit_code if _exit_ok(exit_code) else None
    if exit_code == 1 or (pipestatus is not None and len(pipestatus) > 1):
        # `pytest | tee log` that failed: the shell's $? is tee's 0, the failure is in PIPESTATUS; `grep x f`
        # that found nothing: its 1 is an answer, no failure.
        exit_code = pipeline_status(command, exit_code, pipestatus)
    if exit_code is not None and command[:1] in ("e", "l") and _leaves_the_shell(command):
        # fish logs the builtin `exit` with the status the command before it left (`false`, then `exit`:
        # 1); bash and zsh do not log it. It is no command that failed: its status is unknown.
        exit_code = None
    elif (
        exit_code is not None
        and (command[:1] in _SHELL_FIRST or "=" in command[:40])
        and _starts_a_shell(command)
    ):
        # An interactive shell ends with the status of the last command typed in it (`bash`, then `false`,
        # then Ctrl-D: 1): no failure, nor a pass, of the line that started it.
        exit_code = None
    line = LogLine(
        ts,
        cwd,
        command,
        exit_code,
        pipestatus,
        duration if type(duration) is int and 0 <= duration <= MAX_DURATION_MS else None,
        shell if type(shell) is str and text_ok(shell) else "unknown",
        session if type(session) is str and text_ok(session) else "",
    )
    seq = get("seq")
    if type(seq) is int and 0 < seq <= MAX_SEQ:
        line.seq = seq
        # A hook that numbers its lines records where a line started (older ones, where it ended): the rest
        # of `cd api && make` ran in api.
        if command[:3] == "cd " and "&&" in command:
            line.cwd = cd_target(command, cwd)
    author = get("author")
    if author is not None:  # the person's own hooks never write it: the common case costs one lookup
        _set_author(line, author, get("author_kind"), get("call_id"))
        line.interrupted = get("interrupted") is True  # only an agent hook writes it
    return line


def _set_author(line: LogLine, author: Any, kind: Any, call_id: Any) -> None:
    """Fill LINE's author fields from a line's `author`, `author_kind`, `call_id` (out of range = absent).

    A name without a valid kind is an agent's unless it is "me": only agent hooks write the key."""
    if type(author) is not str or not author.strip() or len(author) > MAX_AUTHOR_CHARS or not text_ok(author):
        return
    author = author.strip()
    if kind not in AUTHOR_KINDS:
        kind = "human" if author == "me" else "agent"
    line.author, line.author_kind = author, kind
    if type(call_id) is str and 0 < len(call_id) <= MAX_CALL_ID_CHARS and text_ok(call_id):
        line.call_id = call_id


def line_problem(obj: Any) -> str:
    """Why log_line_from refused OBJ (the slow path, for bad lines only): what `status` shows."""
    if isinstance(obj, _Bad):
        return obj.reason
    if type(obj) is not dict:
        return f"a JSON {type(obj).__name__}, not an object"
    ts = obj.get("ts")
    if (
        not isinstance(ts, (int, float))
        or isinstance(ts, bool)
        or (isinstance(ts, float) and not math.isfinite(ts))
    ):
        return "no numeric 'ts'"
    if not (MIN_TS_MS <= ts < MAX_TS_MS):
        shown = str(ts) if len(str(ts)) <= 24 else f"{str(ts)[:8]}… ({len(str(ts))} digits)"
        return f"'ts' {shown} is outside 1970..2100 (epoch milliseconds)"
    for key in ("cwd", "command"):
        value = obj.get(key)
        if type(value) is not str:
            return f"no string '{key}'"
        if not text_ok(value):
            return f"'{key}' is not valid Unicode (a lone surrogate escape)"
    if "\x00" in obj["cwd"]:
        return "'cwd' holds a NUL character, which no folder's name can"
    return "not a valid hook line"
