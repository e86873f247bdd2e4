"""atuin's shell history (`history.db`): `shell_command` nodes for the commands run inside this repository.

atuin records every command of every shell it hooks, with its directory, exit code and duration, and since
2026 who ran it (its own agent hooks tag Claude Code, Codex, Copilot... calls). Importing it gives a memory
the commands typed before NexusMem's own hook was installed, and the agents' commands when only atuin's
agent hooks are installed. On by default like the shell source (it is local and already on disk: the same
data as the ~/.bash_history tail the shell source scrapes), and redacted like every command before anything
is stored; `sources.atuin.enabled: false` turns it off.

- Read-only and WAL-safe (nexusmem.store.atuin); rows still running (exit -1) or deleted are skipped.
- Times: atuin's nanoseconds become milliseconds; the duration too.
- Author: `author_kind` 2, or an `author` atuin knows as an agent, is an agent's command: "claude-code" and
  "codex" keep their names (the same author as our own agent hook), other agents become "atuin:<name>";
  the rest is the person's ("me").
- An agent's command is canonicalised as our agent hook does it (nexusmem.sources.shell.agentcmd: `cd DIR &&`
  into the cwd, a trailing status echo or `| tail` off, the exit then unknown), so the two match.
- Not twice: a command our own prompt or agent hook also logged is left to the hook's node, which has the
  pipeline statuses and the exact call id: the same redacted text, the same exit code (atuin's `$?` is the
  pipeline's last status; a code either did not know matches any; for an agent's call, any failure matches
  any failure: atuin's Claude Code hook records each as 1, ours the real code, which is the one kept), and the hook's start within 5 s of the
  row's start or end (the folder is not compared: the prompt hooks log the one a command ended in, atuin the
  one it started in, so `cd src` differs). One hook line stands for one row, the nearest: `make` typed twice
  stays two. Two runs in two shells (one hooked by atuin only, one by both) with the same text and exit
  within 5 s are one: nothing tells them apart (each recorder's session id is its own). Across syncs too:
  when a sync stored atuin's row before the hook's line was written (the post-commit auto-sync right after
  `git commit`), the next sync that stores the hook's line removes the atuin node by the same rule, and the
  hook's node inherits its review verdict, stale mark and first-recorded time (ScanResult.heirs; the cursor
  keeps the store's write sequence, so the commands the other sources stored since are the ones compared).
- Cursor: the newest timestamp read, held back to the oldest command still running (less than a day old),
  so a command that was running at one sync is read once it has finished.
"""

from __future__ import annotations

import bisect
import functools
import hashlib
import json
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nexusmem.nodes import MAX_TS_MS, MIN_TS_MS, Node
from nexusmem.redact import redact, redact_cut
from nexusmem.sources.base import ScanContext, ScanResult
from nexusmem.sources.cursor import decode_cursor
from nexusmem.sources.shell.agentcmd import AGENTS as OUR_AGENTS
from nexusmem.sources.shell.agentcmd import canonical, pipeline_status
from nexusmem.sources.shell.attribution import Attributor
from nexusmem.sources.shell.logline import EXIT_MAX, EXIT_MIN, MAX_DURATION_MS
from nexusmem.sources.shell.node import Memo, agent_call_key, body_head, command_node

# atuin-client history.rs KNOWN_AGENTS: an `author` naming one of these is an agent even without author_kind.
ATUIN_AGENTS = ("claude-code", "codex", "copilot", "opencode", "pi")
AGENT_KIND = 2
SAME_COMMAND_MS = 5_000
# How the natural key of an agent's call starts (sources.shell.tail.agent_call_key), whichever way it was seen.
_AGENT_CALL_KEY = agent_call_key("", "").split(":", 1)[0] + ":"
RUNNING_MAX_NS = 86_400 * 10**9
_CURSOR_VERSION = 1
# Bad rows the cursor remembers as reported (those the next sync reads again): bounded.
_MAX_REPORTED = 1000


def default_path(environ: dict[str, str] | None = None) -> Path:
    """$XDG_DATA_HOME/atuin/history.db, else ~/.local/share/atuin/history.db (atuin's own default)."""
    env = os.environ if environ is None else environ
    data = env.get("XDG_DATA_HOME") or str(Path(env.get("HOME") or Path.home()) / ".local" / "share")
    return Path(data) / "atuin" / "history.db"


def history_path(config: dict[str, Any]) -> Path:
    given = str(config.get("sources", {}).get("atuin", {}).get("path") or "")
    return Path(given).expanduser() if given else default_path()


@functools.lru_cache(maxsize=256)  # a history holds a handful of authors, on thousands of rows
def author_of(author: Any, author_kind: Any) -> tuple[str, str]:
    """(author, author_kind) in NexusMem's terms for an atuin row's `author` and `author_kind`."""
    name = author.strip() if isinstance(author, str) else ""
    agent = author_kind == AGENT_KIND or (author_kind is None and name in ATUIN_AGENTS)
    if not agent:
        return "me", "human"
    if name in OUR_AGENTS:
        return name, "agent"
    return redact_cut(f"atuin:{name or 'agent'}", 64), "agent"  # redacted before the cut ends a secret


def row_key(row_id: Any) -> str:
    """An atuin row's id as memory keeps it (in the node's natural key, the cursor's reported rows): as atuin
    wrote it (a UUID), or, when it holds a secret (an imported or hand-made row can hold anything), its
    digest: unique and the same at every sync, with nothing of the secret."""
    text = str(row_id)
    if redact(text) == text:
        return text
    return "sha256:" + hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def _int(value: Any) -> int | None:
    return value if type(value) is int else None


def _near(times: list[int], ts: int) -> bool:
    at = bisect.bisect_left(times, ts - SAME_COMMAND_MS)
    return at < len(times) and times[at] <= ts + SAME_COMMAND_MS


@dataclass(frozen=True)
class _Run:
    """One stored or read shell command, as _pair compares them (store: shell_command_stamps)."""

    id: str
    source: str
    key: str
    command: str
    ts: int
    duration_ms: int | None
    exit: int | None
    last_status: int | None  # the pipeline's last status: the `$?` atuin saw (the exit may be pipestatus')

    @property
    def end(self) -> int:
        return self.ts + (self.duration_ms or 0)

    def seen_as(self, code: int | None) -> bool:
        """Whether a recorder could have seen this run end with CODE (None: it did not know). An agent's call
        (our agent hook's node, or its transcript's: key `agent:…`) that failed was seen failing by atuin's
        agent hook with any code: atuin's Claude Code hook records every failure as 1."""
        if code is None or self.exit is None or code in (self.exit, self.last_status):
            return True
        return self.key.startswith(_AGENT_CALL_KEY) and code != 0 and self.exit != 0


def _pair(runs: list[_Run], hooks: list[_Run]) -> list[tuple[_Run, str]]:
    """(atuin run, id of the hook's node of the same run): the same text and exit code (a code either
    recorder did not know matches any; _Run.seen_as), the hook's start within SAME_COMMAND_MS of the row's start or end
    (a hook stamps one or the other, by shell). One to one, nearest first: a hook's line stands for one atuin
    row only, so `make` typed twice, or run in two shells atuin both hooks, stays two."""
    by_text: dict[str, list[_Run]] = {}
    for hook in hooks:
        by_text.setdefault(hook.command, []).append(hook)
    times_of: dict[str, list[int]] = {}
    for command, group in by_text.items():
        group.sort(key=lambda h: (h.ts, h.id))
        times_of[command] = [h.ts for h in group]
    close: list[tuple[int, int, str, str, int]] = []  # (gap, row ts, row id, hook id, index in runs)
    for at, run in enumerate(runs):
        same = by_text.get(run.command, [])
        if not same:
            continue
        times = times_of[run.command]
        lo = bisect.bisect_left(times, run.ts - SAME_COMMAND_MS)
        hi = bisect.bisect_right(times, run.end + SAME_COMMAND_MS)
        for hook in same[lo:hi]:
            gap = min(abs(hook.ts - run.ts), abs(hook.ts - run.end))
            if gap <= SAME_COMMAND_MS and hook.seen_as(run.exit):
                close.append((gap, run.ts, run.id, hook.id, at))
    close.sort()
    paired: list[tuple[_Run, str]] = []
    taken_runs: set[str] = set()
    taken_hooks: set[str] = set()
    for _gap, _ts, run_id, hook_id, at in close:
        if run_id not in taken_runs and hook_id not in taken_hooks:
            taken_runs.add(run_id)
            taken_hooks.add(hook_id)
            paired.append((runs[at], hook_id))
    return paired


class AtuinSource:
    """Shell commands from atuin's history.db whose directory is inside this repository (or a worktree)."""

    name = "atuin"
    kinds = ("shell_command",)

    def enabled(self, config: dict[str, Any]) -> bool:
        return bool(config.get("sources", {}).get("atuin", {}).get("enabled", True))

    def scan(self, ctx: ScanContext) -> ScanResult:
        result = ScanResult(nodes=())
        result.nodes = self._scan(ctx, result)
        return result

    def _scan(self, ctx: ScanContext, result: ScanResult) -> Iterator[Node]:
        path = history_path(ctx.config)
        if not path.is_file():
            # No atuin here: nothing to say, the cursor stays. A path the config names is said once a sync.
            if str(ctx.config.get("sources", {}).get("atuin", {}).get("path") or "").strip():
                what = "is not a regular file" if path.exists() else "does not exist"
                result.notes.append(f"{path} (sources.atuin.path) {what}: atuin's history not read")
            return
        state: dict[str, Any] = {}
        if not ctx.full:
            loaded = decode_cursor(ctx.cursor, _CURSOR_VERSION)
            if loaded.get("path") == str(path):
                state = loaded
        since: int = state["ts"] if type(state.get("ts")) is int else 0
        # The store's write sequence when this source last looked: what other sources stored after it.
        written_after: int = state["written"] if type(state.get("written")) is int else 0
        write_seq = ctx.known.get("write_seq")
        written_now = write_seq() if write_seq is not None else None
        reader = ctx.known.get("atuin_history")  # the store's reader: sources speak no SQL
        if reader is None:
            result.notes.append(f"{path} not read: this sync gave the atuin source no database reader")
            return
        attributor = Attributor.for_repo(ctx.root, ctx.known.get("former_roots", ()))
        memo = Memo()
        now_ns = time.time_ns()
        newest, running = since - 1, None
        # Bad rows already reported by a sync whose cursor, held back by a running command, has this sync
        # read them again: skipped again, not reported (and counted) again at every sync.
        told = state.get("reported")
        told_before = {str(k) for k in told} if isinstance(told, list) else set()
        bad: list[tuple[str, int | None]] = []  # (row id, its ns time) of every bad row this read

        def skip(row: Any, ts_ns: int | None, why: str) -> None:
            key = row_key(row.id)
            bad.append((key, ts_ns))
            if key not in told_before:
                result.skip(f"{path} row {row.id!r}: {why}")

        # (row, redacted command, root, cwd relative to it, ts ms, exit, author, author kind)
        rows: list[tuple[Any, str, Path, str, str, int, int | None, str, str]] = []
        try:
            for row in reader(path, since):
                ts_ns, exit_code, duration = _int(row.timestamp_ns), _int(row.exit), _int(row.duration_ns)
                if ts_ns is None or not isinstance(row.command, str) or not isinstance(row.cwd, str):
                    undecoded = isinstance(row.command, bytes) or isinstance(row.cwd, bytes)
                    why = (
                        "command or cwd is not UTF-8"
                        if undecoded
                        else "timestamp, command or cwd of the wrong type"
                    )
                    skip(row, ts_ns, why)
                    continue
                if exit_code == -1 or duration is None or duration < 0:
                    if now_ns - ts_ns < RUNNING_MAX_NS:
                        running = ts_ns if running is None else min(running, ts_ns)
                    continue
                ts = ts_ns // 1_000_000
                if (
                    not (MIN_TS_MS <= ts < MAX_TS_MS)
                    or exit_code is None
                    or not EXIT_MIN <= exit_code < EXIT_MAX
                ):
                    skip(row, ts_ns, "time or exit code out of range")
                    continue
                # Never past now: one row dated ahead (another host's clock, synced by atuin) moved the
                # cursor years on, and every command after it was left unread until then. Such a row is
                # read again at each sync (the same node: nothing changes).
                newest = max(newest, min(ts_ns, now_ns))
                command, cwd = row.command, row.cwd
                code: int | None = exit_code
                author, kind = author_of(row.author, row.author_kind)
                if kind == "agent":
                    # atuin keeps the agent's text as sent (`cd /repo && pytest 2>&1 | tail`); our hook keeps
                    # it canonical: the same canonical text is what makes the two one command.
                    command, cwd, echoed, masked = canonical(command, cwd)
                    code = None if echoed or masked else code
                if code == 1:  # grep's no match is an answer, as in the hook's line of the same run
                    code = pipeline_status(command, code, None)
                where = None if attributor.moved_away(cwd, ts) else attributor.match(cwd)
                if where is None or not command.strip() or "\x00" in command:
                    continue
                root, rel = where
                label = attributor.label(root, rel)
                rows.append((row, memo.redact(command), root, rel, label, ts, code, author, kind))
        except Exception as exc:  # a locked, corrupt or foreign file costs this source, never the sync
            result.notes.append(str(exc))
            return
        nodes: list[Node] = []
        for row, command, root, rel, label, ts, exit_or_none, author, kind in rows:
            code = exit_or_none
            duration_ms = row.duration_ns // 1_000_000
            title, signal = memo.title_signal(command, code)
            nodes.append(
                command_node(
                    ctx.project_id,
                    natural_key=f"atuin:{row_key(row.id)}",
                    command=command,
                    ts=ts,
                    cwd=label,
                    exit_code=code,
                    pipestatus=None,
                    duration_ms=duration_ms if duration_ms <= MAX_DURATION_MS else None,
                    shell=memo.redact(row.shell) if isinstance(row.shell, str) and row.shell else "atuin",
                    session=row.session if isinstance(row.session, str) else None,
                    files=memo.command_files(command, root, rel),
                    scraped=False,
                    title=title,
                    signal=signal,
                    head=body_head(command, label, code),
                    author=author,
                    author_kind=kind,
                    source="atuin",
                )
            )
        twins = self._twins(ctx, nodes, written_after)  # atuin node id -> (its natural key, the hook's id)
        for node in nodes:
            if node.id not in twins:  # else our hook has it
                yield node
        if twins:
            gone = {key for key, _ in twins.values()}
            result.keep = lambda key: key not in gone
            result.heirs = {atuin_id: hook_id for atuin_id, (_key, hook_id) in twins.items()}
        cursor = max(running if running is not None else newest + 1, since)
        state_out: dict[str, Any] = {"v": _CURSOR_VERSION, "path": str(path), "ts": cursor}
        if written_now is not None:
            state_out["written"] = written_now
        again = [key for key, ts_ns in bad if ts_ns is None or ts_ns >= cursor][:_MAX_REPORTED]
        if again:  # the rows the next sync reads again
            state_out["reported"] = again
        result.cursor = json.dumps(state_out)

    @staticmethod
    def _twins(ctx: ScanContext, nodes: list[Node], written_after: int) -> dict[str, tuple[str, str]]:
        """atuin node id -> (its natural key, the id of the node a hook logged of the same run) for the rows
        read now (NODES) and the atuin nodes an earlier sync stored that a command another source stored
        after the write sequence WRITTEN_AFTER stands for (the hook's line read once a sync had taken atuin's
        row): one rule, _pair, whichever came first."""
        stamps_of = ctx.known.get("shell_command_stamps")
        if stamps_of is None:
            return {}
        fresh_of = ctx.known.get("shell_commands_written_after")
        fresh = fresh_of(written_after, "atuin") if fresh_of is not None else []
        if not nodes and not fresh:
            return {}
        # A stored row is matched by its start or its end: one that ran up to a day (RUNNING_MAX_NS) before.
        starts = [n.ts for n in nodes] + [ts - RUNNING_MAX_NS // 1_000_000 for _, ts in fresh]
        ends = [n.ts + (n.meta["duration_ms"] or 0) for n in nodes] + [ts for _, ts in fresh]
        stamps = [_Run(*row) for row in stamps_of(min(starts) - SAME_COMMAND_MS, max(ends) + SAME_COMMAND_MS)]
        hooks = [s for s in stamps if s.source != "atuin"]
        runs = [
            _Run(n.id, "atuin", n.natural_key, n.ref, n.ts, n.meta["duration_ms"], n.meta["exit"], None)
            for n in nodes
        ]
        reading = {n.id for n in nodes}
        times_of: dict[str, list[int]] = {}
        for command, ts in fresh:
            times_of.setdefault(command, []).append(ts)
        for sorted_times in times_of.values():
            sorted_times.sort()
        runs += [
            s
            for s in stamps
            if s.source == "atuin"
            and s.id not in reading
            and any(_near(times_of.get(s.command, []), t) for t in (s.ts, s.end))
        ]
        return {run.id: (run.key, hook) for run, hook in _pair(runs, hooks)}
