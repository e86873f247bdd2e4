"""Shell collector: where a shell command becomes a `shell_command` node.

The prompt hooks append one JSON line per command to the user-wide log (`paths.shell_log_path()`, format in
`logline`). Every project reads that one log from its own persisted byte offset and keeps the lines whose
cwd lies inside the repository or one of its worktrees. When the log has never had a line from a shell
(its hook is not installed), the tail of that shell's own history file is scraped instead.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Generator, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from nexusmem.nodes import MAX_TS_MS, MIN_TS_MS, Node
from nexusmem.paths import shell_log_path
from nexusmem.sources.base import ScanContext, ScanResult
from nexusmem.sources.shell.attribution import _MEMO_LIMIT, Attributor
from nexusmem.sources.shell.history import _PARSERS, _decode_history, history_paths, read_tail_lines
from nexusmem.sources.shell.logline import (
    _BLANK,
    HEAD_BYTES,
    MAX_DURATION_MS,
    SHELLS,
    TORN,
    LogLine,
    _before_hash,
    _head_hash,
    _locked_records,
    bad_line_cwd,
    line_problem,
    log_line_from,
)
from nexusmem.sources.shell.node import Facts, Memo, body_head, command_node
from nexusmem.sources.shell.tail import (  # the unsynced tail lives there: precheck loads only that
    CURSOR_VERSION,
    TAIL_MAX_BYTES,
    TailCommand,
    unsynced_tail,
)
from nexusmem.sources.shell.tail import call_key as _call_key
from nexusmem.sources.shell.tail import decode_cursor as _decode_cursor
from nexusmem.sources.shell.tail import resume_offset as _resume_offset

_CURSOR_VERSION = CURSOR_VERSION
# How many log lines between two progress reports (each says how far into the log's bytes the read is).
PROGRESS_EVERY = 1_000
__all__ = ["TAIL_MAX_BYTES", "ShellSource", "TailCommand", "unsynced_tail"]


@dataclass
class LogPosition:
    """Where the last scan stopped in the log, and which file that was (device, inode, hash of its head),
    with the hash of the bytes just before BEFORE_END (logline.before_span): tail.resume_offset reads the
    log again from the start when any of them changed.

    BEFORE_END is the offset, or where this sync's redaction pass stopped when that is earlier: the lines
    past it were read raw (appended while the sync ran) and the next pass may rewrite them in place, which
    moves no line and must not read as an edit (a re-read of the whole log)."""

    offset: int = 0
    dev: int = 0
    ino: int = 0
    head_len: int = 0
    head_hash: str = ""
    before_end: int = 0
    before_hash: str = ""


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
        memo = Memo()
        seen_shells: set[str] = {s for s in state.get("seen", []) if isinstance(s, str)}
        log = shell_log_path()
        log_state: dict[str, Any] | None = None
        try:
            st = os.stat(log)
        except OSError:
            st = None
        if st is not None and not stat.S_ISREG(st.st_mode):
            result.notes.append(
                f"{log} is not a file (a folder?): the hooks' commands cannot be read from it"
            )
            st = None
        if st is not None:
            offset = _resume_offset(log, st, state.get("log"))
            if st.st_size > offset:
                offset = yield from self._read_log(ctx, result, log, offset, st.st_size, memo, seen_shells)
            head_len = min(HEAD_BYTES, offset)
            redacted_to = ctx.known.get("log_redacted_to")  # set by the sync after its redaction pass
            before_end = min(offset, redacted_to) if isinstance(redacted_to, int) and redacted_to else offset
            log_state = asdict(
                LogPosition(
                    offset,
                    st.st_dev,
                    st.st_ino,
                    head_len,
                    _head_hash(log, head_len),
                    before_end,
                    _before_hash(log, before_end),
                )
            )
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
        memo: Memo,
        seen_shells: set[str],
    ) -> Generator[Node, None, int]:
        attributor = Attributor.for_repo(ctx.root, ctx.known.get("former_roots", ()))
        # An agent's call whose hook could not see its exit code (Codex's hook never says) takes the one its
        # transcript gave, when memory holds that call already (the conversation source builds the same node
        # when it reads the transcript after the line).
        stored_calls = ctx.known.get("agent_calls_stored")
        # Where the log was new to every project's sync (the sync's redaction pass started there: 0 when
        # it did not run): a bad line naming no folder is counted by the sync that reads it first.
        new_from = ctx.known.get("log_new_from", 0)
        new_from = new_from if isinstance(new_from, int) else 0
        facts: dict[tuple[str, str, int | None], Facts | None] = {}
        project = ctx.project_id
        done = offset
        count = 0
        # Progress in bytes of the log from the first line on: had the store's count of commands written
        # stood in until a first report, the line would have named them bytes.
        ctx.progress("shell", done, size)
        for end, record in _locked_records(log, offset):
            if end < 0:  # incomplete last line: counted, and read again once its newline arrives
                result.skipped += 1
                break
            start, done = done, end
            count += 1
            if count % PROGRESS_EVERY == 0:
                ctx.progress("shell", done, size)
            if record is _BLANK:
                continue
            line = log_line_from(record)
            if line is None:
                if self._ours_to_count(attributor, record, start, new_from):
                    result.skip(f"{log} byte {start}: {line_problem(record)}")
                continue
            if TORN in record and self._ours_to_count(attributor, record, start, new_from):
                result.skip(
                    f"{log} byte {start}: the start of a line cut short (its shell killed as it wrote)"
                )
            seen_shells.add(line.shell)
            if attributor.moved_away(line.cwd, line.ts):
                continue  # run where the repository was, after it moved: another's (one made there since)
            call_key = _call_key(line)
            if line.exit is None and call_key is not None and stored_calls is not None:
                held = stored_calls([call_key]).get(call_key)
                if held is not None and type(held[2].get("exit")) is int:
                    line.exit = held[2]["exit"]
            # Everything derived from (command, cwd, exit) is computed once per distinct triple: a real
            # log repeats a few hundred of them, so redaction, signals and file checks cost almost nothing.
            key = (line.command, line.cwd, line.exit)
            try:
                known = facts[key]
            except KeyError:
                try:
                    known = self._facts(attributor, memo, line)
                except (ValueError, OSError) as exc:  # a value no check above foresaw: this line only
                    result.skip(f"{log} byte {start}: cannot be read ({type(exc).__name__}: {exc})")
                    continue
                facts[key] = known
                if len(facts) > _MEMO_LIMIT:
                    facts.clear()
            if known is None:
                continue  # another project's line, or an empty command: nothing wrong with the log
            command, rel, files, title, signal, head = known
            natural_key = call_key or f"{line.session}\x1f{line.ts}\x1f{command}"
            if line.seq is not None and call_key is None:
                # Lines of one shell that started in the same millisecond (pasted, or fish's 10 ms clock) with
                # the same text are told apart by their number; a line without one keeps the key it had.
                natural_key += f"\x1f{line.seq}"
            yield command_node(
                project,
                natural_key=natural_key,
                command=command,
                ts=line.ts,
                cwd=rel,
                exit_code=line.exit,
                pipestatus=line.pipestatus,
                duration_ms=line.duration_ms,
                shell=line.shell,
                session=line.session,
                files=files,
                scraped=False,
                title=title,
                signal=signal,
                head=head,
                author=line.author,
                author_kind=line.author_kind,
                call_id=line.call_id,
                interrupted=line.interrupted,
            )
        ctx.progress("shell", done, size)
        return done

    @staticmethod
    def _ours_to_count(attributor: Attributor, record: Any, start: int, new_from: int) -> bool:
        """Whether the bad line RECORD (at byte START) is this project's to count as skipped: one naming a
        folder that can be read only in the project that folder is in (another project's bad lines are not
        this one's, nor told on every new project's first sync); one naming none (garbage, a null `cwd`)
        once, by the first sync of any project that reads it (at or after NEW_FROM)."""
        cwd = bad_line_cwd(record)
        if cwd is None:
            return start >= new_from
        try:
            return attributor.match(cwd) is not None
        except (ValueError, OSError):  # a name no folder can have: as one naming none
            return start >= new_from

    @staticmethod
    def _facts(attributor: Attributor, memo: Memo, line: LogLine) -> Facts | None:
        """What a (command, cwd, exit) triple always yields; None when the cwd is not ours or it is empty."""
        where = attributor.match(line.cwd)
        if where is None or not line.command.strip():
            return None
        root, rel = where
        command = memo.redact(line.command)  # before anything else sees the text
        title, signal = memo.title_signal(command, line.exit)
        files = memo.command_files(command, root, rel)
        cwd = attributor.label(root, rel)
        return command, cwd, files, title, signal, body_head(command, cwd, line.exit)

    def _scrape(
        self, ctx: ScanContext, result: ScanResult, shell: str, tail: int, old_fingerprint: Any, memo: Memo
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
                title, signal = memo.title_signal(command, None)
                yield command_node(
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
                    title=title,
                    signal=signal,
                    head=body_head(command, None, None),
                )
            return fingerprint
        return ""
