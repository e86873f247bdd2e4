"""The hook log's unsynced tail, read for precheck: the commands after a project's shell cursor.

precheck warns about a failure that `nexusmem sync` has not stored yet, so it reads the log past the cursor
on every commit that has such a tail. This module is what that costs to load: the log reader, attribution
and the cursor check, and nothing of the collector (node building, signals, dataclasses, nexusmem.nodes),
~40 ms of a cold precheck on the 2-core build machine when it came through sources/shell/source.
"""

from __future__ import annotations

import os
from collections import namedtuple
from collections.abc import Callable, Mapping
from pathlib import Path

from nexusmem.paths import shell_log_path
from nexusmem.sources import cursor
from nexusmem.sources.shell.attribution import Attributor, command_files
from nexusmem.sources.shell.logline import LogLine, _before_hash, _head_hash, iter_log_records, log_line_from

CURSOR_VERSION = 1
# The fields of a saved log position (sources/shell/source.LogPosition), with their defaults. A cursor saved
# before `before_hash` existed has none: its offset is then checked as it was (dev, inode, size, head).
_POSITION = {
    "offset": 0,
    "dev": 0,
    "ino": 0,
    "head_len": 0,
    "head_hash": "",
    "before_end": 0,
    "before_hash": "",
}

# precheck reads at most this much of the log past the project's cursor: 4 MB is ~20,000 hook lines, far
# more than a day's work between syncs, and ~40 ms to parse; an older tail is left to `nexusmem sync`.
TAIL_MAX_BYTES = 4 << 20


def decode_cursor(text: str | None) -> dict[str, Any]:
    """The persisted state, or an empty one when missing, from another version, or unreadable."""
    return cursor.decode_cursor(text, CURSOR_VERSION)


def resume_offset(path: Path, st: os.stat_result, saved: Any) -> int:
    """The saved offset when the log is still the same file, has not shrunk and holds the same bytes at its
    head and just before the offset (its saved `before_end`: an edit before it moved them), else 0: read it
    again from the start. Costs a read of at most 8 KB (two hashes) whatever the log's size."""
    if not isinstance(saved, dict) or not all(isinstance(k, str) and k in _POSITION for k in saved):
        return 0
    pos = {**_POSITION, **saved}
    if (pos["dev"], pos["ino"]) != (st.st_dev, st.st_ino) or st.st_size < pos["offset"]:
        return 0
    try:
        if pos["head_len"] and _head_hash(path, pos["head_len"]) != pos["head_hash"]:
            return 0
        if pos["before_hash"] and (
            not 0 < pos["before_end"] <= pos["offset"]
            or _before_hash(path, pos["before_end"]) != pos["before_hash"]
        ):
            return 0
    except (OSError, TypeError, ValueError):
        return 0
    offset: int = pos["offset"]
    return offset


def agent_call_key(agent: str, call_id: str) -> str:
    """The natural key of an agent's shell call, whichever way it was seen (its hook's log line or its
    transcript): both give the same node id, so the second sighting updates the first instead of adding one."""
    return f"agent:{agent}:{call_id}"


def call_key(line: LogLine) -> str | None:
    """The natural key of an agent's call (the same its transcript gives it), None for any other line."""
    if line.call_id is not None and line.author_kind == "agent":
        return agent_call_key(line.author, line.call_id)
    return None


TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (~4 ms of a cold precheck)
if TYPE_CHECKING:
    from typing import Any, NamedTuple

    class _Fields(NamedTuple):
        key: str  # "log:<byte offset>", standing in for a node id
        command: str
        ts: int
        cwd: str  # relative to the repository root, "." at the top (as stored)
        exit: int | None
        files: tuple[str, ...]
        author: str = "me"
        author_kind: str = "human"
        call_key: str | None = None  # an agent's call: its natural key (agent_call_key)
        shell: str = "unknown"  # the shell its log line names (launchers.runs_nothing)

else:
    # The same fields, built by collections.namedtuple: typing.NamedTuple turns each annotation into a
    # ForwardRef, compiling it (2-3 ms of a cold precheck with a tail, for nine fields).
    _Fields = namedtuple(
        "_Fields",
        ("key", "command", "ts", "cwd", "exit", "files", "author", "author_kind", "call_key", "shell"),
        defaults=("me", "human", None, "unknown"),
    )


class TailCommand(_Fields):
    """A hook line not yet synced into ROOT's memory, shaped like a stored shell_command (redacted unless
    read with redacted=False). A named tuple, not a dataclass: see the module docstring."""

    __slots__ = ()

    def rekeyed(self, key: str, exit: int | None = None) -> TailCommand:
        """This command standing in for the stored node KEY (precheck: the same call stored from a transcript),
        with that node's EXIT code when the hook line does not know its own (as the sync stores it)."""
        return self._replace(key=key) if self.exit is not None else self._replace(key=key, exit=exit)


def unsynced_tail(
    root: Path,
    cursor: str | None,
    max_bytes: int = TAIL_MAX_BYTES,
    *,
    redacted: bool = True,
    home: Path | None = None,
) -> list[TailCommand]:
    """The commands in the hook log after ROOT's shell cursor (at most the last MAX_BYTES of it) whose cwd is
    inside ROOT, parsed and redacted exactly as a sync would, an agent's call once however many lines log it
    (its first). Worktrees are not matched: that needs git.

    REDACTED=False leaves the commands as typed, for a caller that shows none of them (and so need not
    redact them, ~0.1 ms each): precheck redacts what it may show of that read (with_texts) first."""
    log = shell_log_path()
    try:
        st = os.stat(log)
    except OSError:
        return []
    offset = resume_offset(log, st, decode_cursor(cursor).get("log"))
    if st.st_size <= offset:
        return []
    start = max(offset, st.st_size - max_bytes)
    attributor = Attributor([root], home=home)  # HOME: whose memory the folders are told from (a worktree's)
    shown: dict[str, str] = {}  # real histories repeat a few commands many times
    files_of: dict[tuple[str, str], tuple[str, ...]] = {}
    # The paths the commands name, checked on disk once each: a test run repeated with other arguments
    # (`-k case_1`, `-k case_2`) names the same files (~0.2 ms of stat calls per command otherwise).
    paths_checked: dict[tuple[str, str], str | None] = {}
    redact: Callable[[str], str] | None = None
    if redacted:
        from nexusmem.redact import redact as redact_text

        redact = redact_text
    out: list[TailCommand] = []
    # An agent's call logged twice (its hook installed at both scopes: one payload, two lines, one call id)
    # is one command, as the sync stores it: its first line stands for it.
    calls: set[str] = set()
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
        key = call_key(line)
        if key is not None:
            if key in calls:
                continue
            calls.add(key)
        place, rel = where
        command = line.command
        if redact is not None:
            if command not in shown:
                shown[command] = redact(command)
            command = shown[command]
        if (command, rel) not in files_of:
            cwd = place if rel == "." else place / rel
            files_of[(command, rel)] = command_files(command, cwd, place, known=paths_checked)
        out.append(
            TailCommand(
                f"log:{end}",
                command,
                line.ts,
                attributor.label(place, rel),
                line.exit,
                files_of[(command, rel)],
                line.author,
                line.author_kind,
                key,
                line.shell,
            )
        )
    return out


def redacted_tail(root: Path, tail: list[TailCommand]) -> list[TailCommand]:
    """TAIL, as unsynced_tail(ROOT, ..., redacted=False) read it, the way redacted=True reads it: each command
    redacted and the files it names found again in the redacted text, without reading the log again."""
    from nexusmem.redact import redact

    return with_texts(root, tail, {c: redact(c) for c in dict.fromkeys(t.command for t in tail)})


def with_texts(
    root: Path, tail: list[TailCommand], texts: Mapping[str, str], *, home: Path | None = None
) -> list[TailCommand]:
    """TAIL, as unsynced_tail(ROOT, ..., redacted=False) read it, with each command in TEXTS (as typed)
    replaced by its value there (its redacted text) and the files it names found again in that text; the
    commands TEXTS leaves out stay as typed, never to be shown. precheck redacts only the commands that can
    be shown or can change what it shows (precheck._texts_to_redact): a tail of 200 commands, 50 of them
    failing, costs 50 redactions instead of 200 (~0.1 ms each)."""
    place = Path(os.path.realpath(root))  # what Attributor([root]) matches every command to
    # The folder as unsynced_tail told it: from HOME when given (`../repo-wt/src`), else from ROOT.
    base = Path(os.path.realpath(home)) if home is not None else place
    files_of: dict[tuple[str, str], tuple[str, ...]] = {}
    paths_checked: dict[tuple[str, str], str | None] = {}
    out: list[TailCommand] = []
    for item in tail:
        command = texts.get(item.command, item.command)
        if command == item.command:
            out.append(item)  # its files were found in this very text
            continue
        if (command, item.cwd) not in files_of:
            cwd = base if item.cwd == "." else Path(os.path.normpath(base / item.cwd))
            files_of[(command, item.cwd)] = command_files(command, cwd, place, known=paths_checked)
        out.append(item._replace(command=command, files=files_of[(command, item.cwd)]))
    return out
