"""Shell collector: where a shell command becomes a `shell_command` node.

The prompt hooks append one JSON line per command to the user-wide log (`paths.shell_log_path()`, contract
in DESIGN.md). Every project reads that one log from its own persisted byte offset and keeps the lines
whose cwd lies inside the repository or one of its worktrees. When the log has never had a line from a
shell (its hook is not installed), the tail of that shell's own history file is scraped instead.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
import re
from collections.abc import Callable, Generator, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from nexusmem import gitcmd
from nexusmem.errors import NexusMemError
from nexusmem.nodes import MAX_TS_MS, MIN_TS_MS, Node, text_ok
from nexusmem.paths import shell_log_path
from nexusmem.redact import redact
from nexusmem.signals import shell_signal
from nexusmem.sources.base import ScanContext, ScanResult

SHELLS = ("bash", "zsh", "fish", "pwsh")
CHUNK_BYTES = 1 << 20
# A longer line is not a command anyone typed (a pasted blob, a corrupted write): skipped, never buffered.
MAX_LINE_BYTES = 1 << 20
# How much of the log's start identifies it: a replaced or truncated-and-rewritten log hashes differently.
HEAD_BYTES = 4096
TITLE_CHARS = 120
# Tokens checked against the file system per command, at most: a pasted 500-word command stays cheap.
MAX_PATH_TOKENS = 32
_CURSOR_VERSION = 1
_MEMO_LIMIT = 50_000


# --------------------------------------------------------------------------------------------- cursor


@dataclass
class LogPosition:
    """Where the last scan stopped in the log, and which file that was (device, inode, hash of its head)."""

    offset: int = 0
    dev: int = 0
    ino: int = 0
    head_len: int = 0
    head_hash: str = ""


def _head_hash(path: Path, length: int) -> str:
    with open(path, "rb") as fh:
        return hashlib.sha256(fh.read(length)).hexdigest()[:32]


def _decode_cursor(text: str | None) -> dict[str, Any]:
    """The persisted state, or an empty one when missing, from another version, or unreadable."""
    if not text:
        return {}
    try:
        data = json.loads(text)
    except ValueError:
        return {}
    if not isinstance(data, dict) or data.get("v") != _CURSOR_VERSION:
        return {}
    return data


def _resume_offset(path: Path, st: os.stat_result, saved: Any) -> int:
    """The saved offset when the log is still the same file and has not shrunk, else 0 (read it again)."""
    if not isinstance(saved, dict):
        return 0
    try:
        pos = LogPosition(**saved)
    except TypeError:
        return 0
    if (pos.dev, pos.ino) != (st.st_dev, st.st_ino) or st.st_size < pos.offset:
        return 0
    try:
        if pos.head_len and _head_hash(path, pos.head_len) != pos.head_hash:
            return 0
    except OSError:
        return 0
    return pos.offset


# ------------------------------------------------------------------------------------ reading the log

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

    directory = private.make_dir(shell_log_path().parent)
    fd = private.open_fd(directory / LOCK_NAME, os.O_RDWR)
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


@dataclass(slots=True)
class LogLine:
    """One well-formed hook line (optional fields None when absent or of the wrong type)."""

    ts: int
    cwd: str
    command: str
    exit: int | None
    pipestatus: list[int] | None
    duration_ms: int | None
    shell: str
    session: str


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
    """A line that is not a JSON value (or is over-long, or nested too deeply): skipped and counted."""

    __slots__ = ("reason",)

    def __init__(self, reason: str) -> None:
        self.reason = reason


_BAD = _Bad("longer than 1 MB")
_BLANK: Any = object()  # an empty line: skipped without complaint
_PARTIAL: Any = object()  # the last line has no newline yet


def _loads_or_bad(raw: bytes) -> Any:
    try:
        return loads_line(raw)
    except UnicodeDecodeError:
        return _Bad("not UTF-8")
    except ValueError as exc:
        return _Bad(f"not JSON ({str(exc)[:60]})")
    except RecursionError:  # [[[[... 100k deep: the C scanner gives up, the line is garbage
        return _Bad("JSON nested too deeply")


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
    exit_code, pipestatus, duration = get("exit"), get("pipestatus"), get("duration_ms")
    shell, session = get("shell"), get("session")
    if pipestatus is not None and not (
        type(pipestatus) is list and len(pipestatus) <= MAX_PIPESTATUS and all(map(_exit_ok, pipestatus))
    ):
        pipestatus = None
    return LogLine(
        ts,
        cwd,
        command,
        exit_code if _exit_ok(exit_code) else None,
        pipestatus,
        duration if type(duration) is int and 0 <= duration <= MAX_DURATION_MS else None,
        shell if type(shell) is str and text_ok(shell) else "unknown",
        session if type(session) is str and text_ok(session) else "",
    )


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
    return "not a valid hook line"


# --------------------------------------------------------------------------------------- attribution


def _norm(path: str) -> str:
    return os.path.normcase(os.path.normpath(path))


class Attributor:
    """Decides whether a cwd belongs to this repository (root or any worktree), caching per distinct cwd.

    Both the paths as written and their resolved forms are compared, so a log that says /tmp/x matches a
    root that resolves to /private/tmp/x (macOS) and the other way round.
    """

    def __init__(self, roots: list[Path]) -> None:
        forms: dict[str, Path] = {}
        for root in roots:
            for form in (str(root), os.path.realpath(root)):
                forms.setdefault(_norm(form), Path(os.path.realpath(root)))
        # Longest first: a worktree nested inside the main checkout wins for cwds inside it.
        self._roots = sorted(forms.items(), key=lambda kv: len(kv[0]), reverse=True)
        self._cache: dict[str, tuple[Path, str] | None] = {}

    @classmethod
    def for_repo(cls, root: Path) -> Attributor:
        """The repository root plus every worktree `git worktree list` knows (one git process)."""
        roots = [root]
        try:
            out = gitcmd.run(["worktree", "list", "--porcelain"], root)
        except NexusMemError:
            out = b""
        for line in out.split(b"\n"):
            if line.startswith(b"worktree "):
                roots.append(Path(os.fsdecode(line[len(b"worktree ") :])))
        return cls(roots)

    def match(self, cwd: str) -> tuple[Path, str] | None:
        """(resolved root, cwd relative to it in posix form, '.' for the root) or None when not ours."""
        try:
            return self._cache[cwd]
        except KeyError:
            pass
        found = None
        if os.path.isabs(cwd):
            found = self._match_form(_norm(cwd), cwd)
            if found is None:
                found = self._match_form(_norm(os.path.realpath(cwd)), os.path.realpath(cwd))
        if len(self._cache) > _MEMO_LIMIT:
            self._cache.clear()
        self._cache[cwd] = found
        return found

    def _match_form(self, normed: str, original: str) -> tuple[Path, str] | None:
        for form, resolved in self._roots:
            if normed == form:
                return resolved, "."
            if normed.startswith(form.rstrip(os.sep) + os.sep):
                rel = os.path.normpath(original)[len(form.rstrip(os.sep)) + 1 :]
                return resolved, rel.replace(os.sep, "/")
        return None


# --------------------------------------------------------------------------- paths named by a command

_STRIP = "\"'`,;()[]{}"
_LINE_SUFFIX = re.compile(r"(?::\d+)+$")


def command_files(command: str, cwd: Path, root: Path) -> tuple[str, ...]:
    """Repository paths (posix, relative to ROOT) that COMMAND names and that exist, in order of mention.

    `pytest tests/test_x.py::test_y`, `ruff check src/a.py:12`, `--cov=src/pkg` all count. Only tokens
    with a '/' or '.' cost a file-system check, so plain words are free.
    """
    found: list[str] = []
    checked = 0
    root_prefix = str(root).rstrip(os.sep) + os.sep
    for token in command.split():
        if "/" not in token and "." not in token:
            continue
        tok = token.strip(_STRIP).lstrip("<>&|0123456789" if token[:1] in "<>0123456789" else "")
        if tok.startswith("-"):
            if "=" not in tok:
                continue
            tok = tok.split("=", 1)[1].strip(_STRIP)
        tok = tok.split("::", 1)[0]
        tok = _LINE_SUFFIX.sub("", tok)
        if not tok or tok in (".", "..") or "://" in tok or "*" in tok or "?" in tok or tok.startswith("~"):
            continue
        checked += 1
        if checked > MAX_PATH_TOKENS:
            break
        for base in (cwd, root):
            candidate = os.path.join(base, tok)
            if os.path.lexists(candidate):
                real = os.path.realpath(candidate)
                if real.startswith(root_prefix):
                    rel = real[len(root_prefix) :].replace(os.sep, "/")
                    if rel not in found:
                        found.append(rel)
                break
    return tuple(found)


# ------------------------------------------------------------------------------------------- nodes


def _title(command: str, exit_code: int | None) -> str:
    stripped = command.strip()
    first = stripped.split("\n", 1)[0].rstrip()
    if len(first) > TITLE_CHARS:
        first = first[: TITLE_CHARS - 1].rstrip() + "…"
    elif first != stripped:
        first += " …"
    return f"{first} (exit {'unknown' if exit_code is None else exit_code})"


def _context_head(cwd: str | None, exit_code: int | None) -> str:
    where = f"cwd {cwd}" if cwd is not None else "cwd unknown (scraped from shell history)"
    return f"[{where} · exit {'unknown' if exit_code is None else exit_code}"


def _context_tail(pipestatus: list[int] | None, duration_ms: int | None, shell: str) -> str:
    # Runs once per stored command (80k times in a big first sync): plain concatenation, no lists.
    text = ""
    if pipestatus and len(pipestatus) > 1:
        text = " · pipestatus " + "|".join(map(str, pipestatus))
    if duration_ms is not None:
        text += f" · {duration_ms} ms" if duration_ms < 1000 else f" · {duration_ms / 1000:.1f} s"
    return f"{text} · {shell}]"


def _command_node(
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
    memo: _Memo,
) -> Node:
    # COMMAND is already redacted: nothing below may see the raw text.
    title, signal = memo.title_signal(command, exit_code)
    return Node(
        project=project,
        kind="shell_command",
        source="shell",
        natural_key=natural_key,
        ref=command,
        title=title,
        body=command + "\n" + _context_head(cwd, exit_code) + _context_tail(pipestatus, duration_ms, shell),
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
        },
    )


# (redacted command, cwd relative to its root, files named, title, signal, body up to the per-line part)
_Facts = tuple[str, str, tuple[str, ...], str, float, str]


class _Memo:
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


# ------------------------------------------------------------------------------------------ scraping


@dataclass(frozen=True)
class HistoryEntry:
    """One command from a shell's own history file: epoch seconds when recorded, duration when known."""

    command: str
    ts: int | None = None
    duration_s: int | None = None


_BASH_TS = re.compile(r"^#([0-9]{9,11})\s*$")
# At most 18 digits: a longer run is not a time (and int() of 4,300+ digits raises ValueError).
_ZSH_EXTENDED = re.compile(r"^: *([0-9]{1,18}):([0-9]{1,18});(.*)$", re.DOTALL)


def parse_bash_history(lines: list[str]) -> list[HistoryEntry]:
    """~/.bash_history: one command per line, or with HISTTIMEFORMAT a `#<epoch>` line before each command
    (then every line up to the next timestamp belongs to it: multi-line commands saved with lithist)."""
    if not any(_BASH_TS.match(line) for line in lines):
        return [HistoryEntry(line) for line in lines if line.strip()]
    entries: list[HistoryEntry] = []
    ts: int | None = None
    current: list[str] = []

    def flush() -> None:
        if ts is None:  # lines before the first timestamp in the tail: one command each
            entries.extend(HistoryEntry(line) for line in current if line.strip())
        elif any(line.strip() for line in current):
            entries.append(HistoryEntry("\n".join(current).strip("\n"), ts))

    for line in lines:
        m = _BASH_TS.match(line)
        if m:
            flush()
            ts, current = int(m.group(1)), []
        else:
            current.append(line)
    flush()
    return entries


def unmetafy(data: bytes) -> bytes:
    """Undo zsh's history encoding: byte 0x83 marks the next byte, which was XOR-ed with 0x20."""
    if b"\x83" not in data:
        return data
    out = bytearray()
    it = iter(data)
    for byte in it:
        if byte == 0x83:
            nxt = next(it, None)
            if nxt is None:
                break
            out.append(nxt ^ 0x20)
        else:
            out.append(byte)
    return bytes(out)


def parse_zsh_history(lines: list[str]) -> list[HistoryEntry]:
    """~/.zsh_history, plain or EXTENDED_HISTORY (`: <epoch>:<elapsed>;<command>`); a line ending in a
    backslash continues on the next one (how zsh saves a multi-line command). Unmetafy before decoding."""
    joined: list[str] = []
    current: str | None = None
    for line in lines:
        if current is not None:
            current += "\n" + line
        else:
            current = line
        if current.endswith("\\"):
            current = current[:-1]
            continue
        joined.append(current)
        current = None
    if current is not None:
        joined.append(current)
    entries: list[HistoryEntry] = []
    for text in joined:
        m = _ZSH_EXTENDED.match(text)
        if m:
            entries.append(HistoryEntry(m.group(3), int(m.group(1)), int(m.group(2))))
        elif text.strip():
            entries.append(HistoryEntry(text))
    return [e for e in entries if e.command.strip()]


def _fish_unescape(text: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(text):
        ch = text[i]
        if ch == "\\" and i + 1 < len(text) and text[i + 1] in "n\\":
            out.append("\n" if text[i + 1] == "n" else "\\")
            i += 2
            continue
        out.append(ch)
        i += 1
    return "".join(out)


def parse_fish_history(lines: list[str]) -> list[HistoryEntry]:
    """fish_history: YAML-like `- cmd: <escaped command>` followed by `  when: <epoch>` (and `  paths:`)."""
    entries: list[HistoryEntry] = []
    cmd: str | None = None
    when: int | None = None

    def flush() -> None:
        if cmd is not None and cmd.strip():
            entries.append(HistoryEntry(cmd, when))

    for line in lines:
        if line.startswith("- cmd: ") or line == "- cmd:":
            flush()
            cmd, when = _fish_unescape(line[7:]), None
        elif line.startswith("  when: ") and cmd is not None:
            value = line[8:].strip()
            when = int(value) if value.isascii() and value.isdigit() and len(value) <= 18 else None
    flush()
    return entries


def parse_pwsh_history(lines: list[str]) -> list[HistoryEntry]:
    """PSReadLine ConsoleHost_history.txt: one command per line, a trailing backtick continues it."""
    entries: list[HistoryEntry] = []
    current: str | None = None
    for line in lines:
        current = line if current is None else current + "\n" + line
        if current.endswith("`"):
            current = current[:-1]
            continue
        if current.strip():
            entries.append(HistoryEntry(current))
        current = None
    if current is not None and current.strip():
        entries.append(HistoryEntry(current))
    return entries


_PARSERS: dict[str, Callable[[list[str]], list[HistoryEntry]]] = {
    "bash": parse_bash_history,
    "zsh": parse_zsh_history,
    "fish": parse_fish_history,
    "pwsh": parse_pwsh_history,
}


def history_paths(shell: str) -> list[Path]:
    """Where SHELL keeps its history, most likely first (Path.home(), so tests can point HOME elsewhere)."""
    home = Path.home()
    data_home = Path(os.environ.get("XDG_DATA_HOME") or home / ".local" / "share")
    if shell == "bash":
        return [home / ".bash_history"]
    if shell == "zsh":
        return [home / ".zsh_history", home / ".histfile"]
    if shell == "fish":
        return [data_home / "fish" / "fish_history"]
    paths = [data_home / "powershell" / "PSReadLine" / "ConsoleHost_history.txt"]
    appdata = os.environ.get("APPDATA")
    if appdata:
        paths.append(
            Path(appdata) / "Microsoft" / "Windows" / "PowerShell" / "PSReadLine" / "ConsoleHost_history.txt"
        )
    return paths


def read_tail_lines(path: Path, count: int, block: int = 1 << 16) -> list[bytes]:
    """The last COUNT lines of PATH (bytes, without newlines), reading backwards in blocks."""
    if count <= 0:
        return []
    with open(path, "rb") as fh:
        end = fh.seek(0, os.SEEK_END)
        pos = end
        data = b""
        while pos > 0 and data.count(b"\n") <= count:
            step = min(block, pos)
            pos -= step
            fh.seek(pos)
            data = fh.read(step) + data
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    if pos > 0:
        lines = lines[1:]  # the first piece may be the end of an earlier line
    return lines[-count:]


def _decode_history(shell: str, raw: list[bytes]) -> list[str]:
    if shell == "zsh":
        raw = [unmetafy(line) for line in raw]
    return [line.decode("utf-8", "replace").rstrip("\r") for line in raw]


# --------------------------------------------------------------------------------------------- source


class ShellSource:
    """Shell commands run in this repository, from the hooks' log, else scraped from history files.

    Known limitation of the scrape fallback: history files record no working directory, so every scraped
    command is attributed to the project being synced (and no exit code is known).
    """

    name = "shell"
    kinds = ("shell_command",)

    def enabled(self, config: dict[str, Any]) -> bool:
        """On unless sources.shell.enabled is false."""
        return bool(config.get("sources", {}).get("shell", {}).get("enabled", True))

    def scan(self, ctx: ScanContext) -> ScanResult:
        """Read the log from the saved offset (from the start when the file was replaced, or ctx.full)."""
        result = ScanResult(nodes=())
        result.nodes = self._scan(ctx, result)
        return result

    def _scan(self, ctx: ScanContext, result: ScanResult) -> Iterator[Node]:
        state = {} if ctx.full else _decode_cursor(ctx.cursor)
        settings = ctx.config.get("sources", {}).get("shell", {})
        memo = _Memo()
        seen_shells: set[str] = {s for s in state.get("seen", []) if isinstance(s, str)}
        log = shell_log_path()
        log_state: dict[str, Any] | None = None
        try:
            st = os.stat(log)
        except OSError:
            st = None
        if st is not None:
            offset = _resume_offset(log, st, state.get("log"))
            if st.st_size > offset:
                offset = yield from self._read_log(ctx, result, log, offset, st.st_size, memo, seen_shells)
            head_len = min(HEAD_BYTES, offset)
            log_state = asdict(LogPosition(offset, st.st_dev, st.st_ino, head_len, _head_hash(log, head_len)))
        scrape_state: dict[str, str] = {}
        if settings.get("scrapeFallback", True):
            old = state.get("scrape", {}) if isinstance(state.get("scrape"), dict) else {}
            tail = int(settings.get("scrapeTailLines", 2000))
            for shell in SHELLS:
                if shell in seen_shells:
                    continue
                fingerprint = yield from self._scrape(ctx, result, shell, tail, old.get(shell), memo)
                if fingerprint:
                    scrape_state[shell] = fingerprint
        # Persisted only after every node was handed over: an interrupted sync reads the same lines again.
        result.cursor = json.dumps(
            {"v": _CURSOR_VERSION, "log": log_state, "seen": sorted(seen_shells), "scrape": scrape_state},
            sort_keys=True,
        )

    def _read_log(
        self,
        ctx: ScanContext,
        result: ScanResult,
        log: Path,
        offset: int,
        size: int,
        memo: _Memo,
        seen_shells: set[str],
    ) -> Generator[Node, None, int]:
        attributor = Attributor.for_repo(ctx.root)
        facts: dict[tuple[str, str, int | None], _Facts | None] = {}
        project = ctx.project_id
        done = offset
        count = 0
        for end, record in _locked_records(log, offset):
            if end < 0:  # incomplete last line: counted, and read again once its newline arrives
                result.skipped += 1
                break
            start, done = done, end
            count += 1
            if count % 20_000 == 0:
                ctx.progress("shell", done, size)
            if record is _BLANK:
                continue
            line = log_line_from(record)
            if line is None:
                result.skip(f"{log} byte {start}: {line_problem(record)}")
                continue
            seen_shells.add(line.shell)
            # Everything derived from (command, cwd, exit) is computed once per distinct triple: a real
            # log repeats a few hundred of them, so redaction, signals and file checks cost almost nothing.
            key = (line.command, line.cwd, line.exit)
            try:
                known = facts[key]
            except KeyError:
                known = facts[key] = self._facts(attributor, memo, line)
                if len(facts) > _MEMO_LIMIT:
                    facts.clear()
            if known is None:
                continue  # another project's line, or an empty command: nothing wrong with the log
            command, rel, files, title, signal, body_head = known
            yield Node(
                project=project,
                kind="shell_command",
                source="shell",
                natural_key=f"{line.session}\x1f{line.ts}\x1f{command}",
                ref=command,
                title=title,
                body=body_head + _context_tail(line.pipestatus, line.duration_ms, line.shell),
                ts=line.ts,
                signal=signal,
                group=None,
                files=files,
                meta={
                    "cwd": rel,
                    "exit": line.exit,
                    "pipestatus": line.pipestatus,
                    "duration_ms": line.duration_ms,
                    "shell": line.shell,
                    "session": line.session,
                    "scraped": False,
                },
            )
        return done

    @staticmethod
    def _facts(attributor: Attributor, memo: _Memo, line: LogLine) -> _Facts | None:
        """What a (command, cwd, exit) triple always yields; None when the cwd is not ours or it is empty."""
        where = attributor.match(line.cwd)
        if where is None or not line.command.strip():
            return None
        root, rel = where
        command = memo.redact(line.command)  # before anything else sees the text
        title, signal = memo.title_signal(command, line.exit)
        files = memo.command_files(command, root, rel)
        return command, rel, files, title, signal, command + "\n" + _context_head(rel, line.exit)

    def _scrape(
        self, ctx: ScanContext, result: ScanResult, shell: str, tail: int, old_fingerprint: Any, memo: _Memo
    ) -> Generator[Node, None, str]:
        """Nodes from the tail of SHELL's history file; returns its fingerprint ('' when there is none)."""
        for path in history_paths(shell):
            try:
                st = os.stat(path)
            except OSError:
                continue
            fingerprint = f"{path}:{st.st_dev}:{st.st_ino}:{st.st_size}:{st.st_mtime_ns}:{tail}"
            if fingerprint == old_fingerprint and not ctx.full:
                return fingerprint
            try:
                raw = read_tail_lines(path, tail)
            except OSError:
                return ""
            root = Path(os.path.realpath(ctx.root))
            file_ms = st.st_mtime_ns // 1_000_000
            occurrences: dict[tuple[int | None, str], int] = {}
            try:
                entries = _PARSERS[shell](_decode_history(shell, raw))
            except Exception as exc:  # a parser bug must cost this file, not the sync (fuzzed: none known)
                result.skip(f"{path}: cannot parse the last {tail} lines ({type(exc).__name__}: {exc})")
                return ""
            for n, entry in enumerate(entries, 1):
                if entry.ts is not None and not (MIN_TS_MS <= entry.ts * 1000 < MAX_TS_MS):
                    result.skip(
                        f"{path}: entry {n} of the last {tail} lines: time {entry.ts} is outside 1970..2100"
                    )
                    continue
                duration_s = entry.duration_s
                if duration_s is not None and not 0 <= duration_s * 1000 <= MAX_DURATION_MS:
                    duration_s = None
                command = memo.redact(entry.command)
                n = occurrences.get((entry.ts, command), 0)
                occurrences[(entry.ts, command)] = n + 1
                stamp = "" if entry.ts is None else str(entry.ts)
                yield _command_node(
                    ctx.project_id,
                    natural_key=f"scraped\x1f{shell}\x1f{stamp}\x1f{command}\x1f{n}",
                    command=command,
                    # No timestamp in the file: the file's mtime is the best "no later than" we have.
                    ts=entry.ts * 1000 if entry.ts is not None else file_ms,
                    cwd=None,
                    exit_code=None,
                    pipestatus=None,
                    duration_ms=duration_s * 1000 if duration_s is not None else None,
                    shell=shell,
                    session=None,
                    files=memo.command_files(command, root, "."),
                    scraped=True,
                    memo=memo,
                )
            return fingerprint
        return ""


# ------------------------------------------------------------------------- the unsynced tail (precheck)

# precheck reads at most this much of the log past the project's cursor: 4 MB is ~20,000 hook lines, far
# more than a day's work between syncs, and ~40 ms to parse; an older tail is left to `nexusmem sync`.
TAIL_MAX_BYTES = 4 << 20


@dataclass(frozen=True)
class TailCommand:
    """A hook line not yet synced into ROOT's memory, shaped like a stored shell_command (redacted)."""

    key: str  # "log:<byte offset>", standing in for a node id
    command: str
    ts: int
    cwd: str  # relative to the repository root, "." at the top (as stored)
    exit: int | None
    files: tuple[str, ...]


def unsynced_tail(root: Path, cursor: str | None, max_bytes: int = TAIL_MAX_BYTES) -> list[TailCommand]:
    """The commands in the hook log after ROOT's shell cursor (at most the last MAX_BYTES of it) whose cwd is
    inside ROOT, parsed and redacted exactly as a sync would. Worktrees are not matched: that needs git."""
    log = shell_log_path()
    try:
        st = os.stat(log)
    except OSError:
        return []
    offset = _resume_offset(log, st, _decode_cursor(cursor).get("log"))
    if st.st_size <= offset:
        return []
    start = max(offset, st.st_size - max_bytes)
    attributor = Attributor([root])
    memo = _Memo()
    out: list[TailCommand] = []
    records = iter_log_records(log, start)
    if start > offset:  # began mid-line: the first record is a fragment
        next(records, None)
    for end, record in records:
        if end < 0:
            break
        line = log_line_from(record)
        if line is None:
            continue
        where = attributor.match(line.cwd)
        if where is None or not line.command.strip():
            continue
        place, rel = where
        command = memo.redact(line.command)
        files = memo.command_files(command, place, rel)
        out.append(TailCommand(f"log:{end}", command, line.ts, rel, line.exit, files))
    return out
