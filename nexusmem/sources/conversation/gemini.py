"""Gemini CLI: `~/.gemini/tmp/<folder>/chats/session-*.jsonl` (current) and `session-*.json` (legacy).

Two layouts, both read (google-gemini/gemini-cli packages/core/src/services/chatRecordingService.ts,
config/storage.ts, config/projectRegistry.ts):
- legacy: one JSON document per session, `{sessionId, projectHash, startTime, lastUpdated, messages: […]}`,
  in a folder named by the project hash;
- current (since 2026-04): one JSON record per line: a metadata line (`sessionId`, `projectHash`,
  `startTime`…), then one message record per line; a message updated later (a tool call's result) is written
  again whole under the same `id` (the last one stands, where the first stood), `{"$set": {…}}` updates the
  metadata (`$set.messages` replaces every message), `{"$rewindTo": id}` drops that message and the ones after.
  The folder is the project's short name from `~/.gemini/projects.json` (root → name), with a `.project_root`
  file naming the root; Gemini copies a legacy hash folder into it on upgrade, and a legacy session it resumes
  is written again as `<name>.jsonl` beside the `.json`. One session found in several files (those copies) is
  read from one of them only (transcript_files): the `.jsonl`, else the newest.

`projectHash` is Gemini CLI's `getProjectHash(projectRoot)`: the SHA-256 hex of the directory it was
started in (google-gemini/gemini-cli packages/core/src/utils/paths.ts). So a session is ours when that
hash equals the hash of the repository root, of one of its worktrees, or of a directory in them that holds
tracked files (a session started in `src/`): the folder's name, or, in a folder named some other way, the
`projectHash` near the start of the file, else the directory its folder's `.project_root` (or projects.json)
names, when it is in a root (`Directories.named_by`).
The directories are hashed only when a session's hash is not a root's, once per sync (`Directories`).
Messages: `type` `user` is the person, `gemini`/`model` the agent, with `toolCalls` (`run_shell_command`,
`args.command`; Gemini's fields after the output of the result give its status: `Exit Code: N`, see
_TRAILER).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path
from typing import Any

from nexusmem import gitcmd
from nexusmem.errors import NexusMemError
from nexusmem.redact import redact_cut
from nexusmem.sources.conversation.model import (
    Call,
    Exchange,
    Report,
    Thread,
    iso_ms,
    iter_json_objects,
    loads,
    masked_status,
    text_of,
)

AGENT = "gemini"
# A legacy session document over this size is skipped (a real one is well under a few MB). A JSONL session is
# read line by line (each line at most model.MAX_LINE_BYTES).
MAX_FILE_BYTES = 64 << 20
# Where the current layout names a folder's project: a file in the folder, and the registry (root → name).
PROJECT_ROOT_FILE = ".project_root"
REGISTRY_FILE = "projects.json"
_SHELL_TOOLS = frozenset({"run_shell_command", "shell"})
_EXIT = re.compile(r"Exit Code:\s*(-?\d{1,9})\b")
# The fields Gemini CLI writes after a shell command's output (packages/core/src/tools/shell.ts: `Output:`,
# then `Error:`, `Exit Code:` (older builds: always, `(none)` when killed; newer: only when not 0),
# `Signal:`, `Background PIDs:`, `Process Group PGID:`): its own status is read there, so that an `Exit
# Code: 137` printed by the command itself is not taken for it. Where the output ends is known from the
# call's `resultDisplay` (the output itself, recorded beside it); without one, Gemini's fields are read up
# from the end, which cannot tell a newer build's `Exit Code: 1` from an output's own last line.
_TRAILER = re.compile(r"(Exit Code|Signal|Background PIDs|Process Group PGID): [^\n]*")


def gemini_home() -> Path:
    """$GEMINI_CLI_HOME/.gemini when set, else ~/.gemini."""
    configured = os.environ.get("GEMINI_CLI_HOME")
    return (Path(configured).expanduser() if configured else Path.home()) / ".gemini"


def project_hash(root: Path | str) -> str:
    """Gemini CLI's hash of a project root path (a name that is not UTF-8 hashes its raw bytes)."""
    return hashlib.sha256(os.fsencode(root)).hexdigest()


# Directories hashed per root at most: a session started deeper than that is not found.
MAX_DIRECTORIES = 100_000


def tracked_directories(root: Path) -> set[str]:
    """The directories (relative, '/'-separated, "" for the root) that hold a file git tracks under ROOT."""
    found = {""}
    try:
        listing = gitcmd.run(["ls-files", "-z"], root)
    except NexusMemError:
        return found
    for name in listing.split(b"\0"):
        cut = name.rfind(b"/")
        while cut > 0 and len(found) < MAX_DIRECTORIES:
            folder = os.fsdecode(name[:cut])
            if folder in found:
                break
            found.add(folder)
            cut = name.rfind(b"/", 0, cut)
    return found


class Directories:
    """Which directory a Gemini session's project hash names: a root (or worktree) first, then, computed
    once and only when a hash is not a root's, every directory of theirs that holds tracked files."""

    def __init__(self, roots: list[Path]) -> None:
        self.roots = roots
        self._roots = self._hashes({""})
        self._all: dict[str, Path] | None = None
        self._registry: dict[str, str] | None = None  # projects.json, read when first needed

    def _hashes(self, relative: set[str] | None) -> dict[str, Path]:
        out: dict[str, Path] = {}
        for root in self.roots:
            folders = relative if relative is not None else tracked_directories(root)
            for base in (str(root), os.path.realpath(root)):
                for folder in folders:
                    where = os.path.join(base, folder) if folder else base
                    out.setdefault(project_hash(where), Path(where))
        return out

    def find(self, digest: str) -> Path | None:
        found = self._roots.get(digest)
        if found is None:
            if self._all is None:
                self._all = self._hashes(None)
            found = self._all.get(digest)
        return found

    def named_by(self, folder: Path) -> Path | None:
        """The directory of ours a project folder of the current layout (`tmp/<name>`) belongs to: the one
        its `.project_root` names, else the one `projects.json` maps to its name, when it is in a root or
        worktree of ours, symlinks resolved (a session started through a symlink hashes the link's path; one
        started in a directory git tracks nothing in hashes to none of ours); None otherwise."""
        named = _read_small(folder / PROJECT_ROOT_FILE)
        if named is None:
            if self._registry is None:
                self._registry = _registry(folder.parent.parent / REGISTRY_FILE)
            named = self._registry.get(folder.name)
        named = named.strip() if named else ""
        if not named or not os.path.isabs(named):
            return None
        real = os.path.realpath(named)
        for root in self.roots:
            top = os.path.realpath(root)
            if real == top or real.startswith(top.rstrip(os.sep) + os.sep):
                return Path(real)
        return None


def _read_small(path: Path, limit: int = 4096) -> str | None:
    """The text of a small file (at most LIMIT bytes of it), None when it cannot be read."""
    try:
        with path.open("rb") as handle:
            return handle.read(limit).decode("utf-8", "replace")
    except OSError:
        return None


# The registry is one small JSON document; a larger one is not Gemini's.
MAX_REGISTRY_BYTES = 4 << 20


def _registry(path: Path) -> dict[str, str]:
    """`~/.gemini/projects.json` turned around: a project folder's short name → the root it names."""
    text = _read_small(path, MAX_REGISTRY_BYTES)
    try:
        data = loads(text) if text else None
    except (ValueError, RecursionError):
        return {}
    projects = data.get("projects") if isinstance(data, dict) else None
    if not isinstance(projects, dict):
        return {}
    return {name: root for root, name in projects.items() if isinstance(name, str) and isinstance(root, str)}


_PROJECT_HASH = re.compile(rb'"projectHash"\s*:\s*"([0-9a-f]{64})"')
_HEX64 = re.compile(r"[0-9a-f]{64}")
_SESSION_ID = re.compile(rb'"sessionId"\s*:\s*"((?:[^"\\]|\\.){1,200})"')


def _head(path: Path) -> bytes:
    try:
        with path.open("rb") as handle:
            return handle.read(4096)
    except OSError:
        return b""


def transcript_files(base: Path | None = None) -> list[Path]:
    """Every session file under BASE/tmp/*/chats/, both layouts, sorted (whose they are is decided by
    `started_in`). A session held by several files (a legacy folder and Gemini's copy of it, a legacy `.json`
    and the `.jsonl` Gemini wrote when it was resumed) is listed once: its `.jsonl`, else its newest file."""
    tmp = (base or gemini_home()) / "tmp"
    try:
        found = [
            p
            for pattern in ("*/chats/session-*.json", "*/chats/session-*.jsonl")
            for p in tmp.glob(pattern)
            if p.is_file()
        ]
    except OSError:
        return []
    best: dict[tuple[bytes, bytes], tuple[tuple[bool, int, str], Path]] = {}
    out: list[Path] = []
    for path in found:
        head = _head(path)
        session = _SESSION_ID.search(head)
        if session is None:
            out.append(path)  # no session id near its start: not one to dedupe
            continue
        digest = _PROJECT_HASH.search(head)
        key = (session.group(1), digest.group(1) if digest else b"")  # the same session of the same project
        try:
            mtime = path.stat().st_mtime_ns
        except OSError:
            continue
        rank = (path.suffix == ".jsonl", mtime, str(path))
        held = best.get(key)
        if held is None or rank > held[0]:
            best[key] = (rank, path)
    out.extend(path for _rank, path in best.values())
    return sorted(out)


def started_in(path: Path, directories: Directories) -> Path | None:
    """The directory of ours the session file PATH was started in: its folder is named by that directory's
    hash, or the `projectHash` in its first 4 KB is, or else its folder's `.project_root` (or the registry)
    names it (Directories.named_by); None when none is ours."""
    folder = path.parent.parent
    if _HEX64.fullmatch(folder.name):
        found = directories.find(folder.name)
        if found is not None:
            return found
    match = _PROJECT_HASH.search(_head(path))
    found = directories.find(match.group(1).decode()) if match is not None else None
    return found if found is not None else directories.named_by(folder)


def _text(content: Any) -> str:
    return text_of(content, keys=("text",)).strip()


def _result_text(result: Any) -> str | None:
    """The text of a tool call result: a string, or the `output` of its functionResponse parts (the shape
    Gemini CLI writes); None when it is neither."""
    if isinstance(result, str):
        return result
    if not isinstance(result, list):
        return None
    texts = []
    for item in result:
        response = item.get("functionResponse") if isinstance(item, dict) else None
        answer = response.get("response") if isinstance(response, dict) else None
        output = answer.get("output") if isinstance(answer, dict) else None
        if isinstance(output, str):
            texts.append(output)
    return "\n".join(texts) if texts else None


def _trailer(text: str, display: Any) -> str | None:
    """What follows the command's output in TEXT, Gemini's own fields, when DISPLAY (the call's
    `resultDisplay`: the output itself, as Gemini CLI shows it, when there was any) tells where the output
    ends; None when it does not."""
    if not isinstance(display, str) or not display.strip():
        return None
    marker = f"Output: {display}"
    at = text.find(marker)
    while at > 0 and text[at - 1] != "\n":
        at = text.find(marker, at + 1)
    if at < 0:
        return None
    rest = text[at + len(marker) :]
    return rest if rest[:1] in ("", "\n") else None


def _exit_status(result: Any, display: Any = None) -> int | None:
    """The exit status Gemini CLI reported for a shell call's RESULT, None when it did not say. DISPLAY: the
    call's `resultDisplay`, which says where the output ends (see _trailer)."""
    text = _result_text(result)
    trailer = None if text is None else _trailer(text, display)
    if trailer is not None:
        # Newer builds write `Exit Code:` only when not 0: an output whose last line is `Exit Code: 137`
        # (a CI log read back) and no such field after it is a success.
        codes = [int(found.group(1)) for found in map(_EXIT.fullmatch, trailer.splitlines()) if found]
        return codes[-1] if codes else None
    if text is None:  # a shape not known: the last `Exit Code:` its JSON holds (the output comes first)
        try:
            text = json.dumps(result)[-8192:]
        except (TypeError, ValueError, RecursionError):
            return None
        codes = _EXIT.findall(text)
        return int(codes[-1]) if codes else None
    for line in reversed(text.rstrip().splitlines()):
        if not _TRAILER.fullmatch(line):
            break  # above Gemini's own fields: the command's output (or `Error:`)
        found = _EXIT.fullmatch(line)
        if found is not None:
            return int(found.group(1))
    return None


# A message as read, with where it was in the file: its place in a legacy document (`messages[i]`; None in
# a JSONL one) and its line (JSONL; None in a document).
Placed = tuple[str | None, int | None, Any]


def _read_document(path: Path, report: Report) -> tuple[dict[str, Any], list[Placed]] | None:
    """A legacy session document: its fields, and its messages in order; None when it is not one (counted)."""
    try:
        size = path.stat().st_size
        if size > MAX_FILE_BYTES:
            report.skip(path, None, f"larger than {MAX_FILE_BYTES >> 20} MB")
            return None
        data = loads(path.read_bytes())
    except OSError as exc:
        report.skip(path, None, f"cannot read ({exc.strerror or exc})")
        return None
    except (ValueError, RecursionError):
        report.skip(path, None, "not a JSON document")
        return None
    if not isinstance(data, dict) or not isinstance(data.get("messages"), list):
        report.skip(path, None, "no 'messages' list")
        return None
    return data, [(f"messages[{n}]", None, m) for n, m in enumerate(data["messages"])]


def _read_jsonl(path: Path, report: Report) -> tuple[dict[str, Any], list[Placed]]:
    """A JSONL session replayed as Gemini CLI loads it (loadConversationRecord): the metadata its first line
    and `$set` records give, and the messages that stand, each where it first appeared, as last written."""
    meta: dict[str, Any] = {}
    messages: dict[str, tuple[int, Any]] = {}  # id → (line, message), in order of first appearance

    def add_all(listed: list[Any], number: int) -> None:
        for message in listed:
            ident = message.get("id") if isinstance(message, dict) else None
            if isinstance(ident, str):
                messages[ident] = (number, message)
            else:
                report.skip(path, number, "a listed message without an id")

    for number, _offset, record in iter_json_objects(path, report):
        rewind = record.get("$rewindTo")
        update = record.get("$set")
        if isinstance(rewind, str):  # that message and every one after it are gone
            order = list(messages)
            for gone in order[order.index(rewind) :] if rewind in messages else order:
                del messages[gone]
        elif isinstance(record.get("id"), str):  # a message, new or written again whole
            messages[record["id"]] = (number, record)
        elif isinstance(update, dict):
            if isinstance(update.get("messages"), list):  # a checkpoint: these messages and no others
                messages.clear()
                add_all(update["messages"], number)
            meta.update((k, v) for k, v in update.items() if k != "messages")
        elif isinstance(record.get("sessionId"), str) and isinstance(record.get("projectHash"), str):
            meta.update((k, v) for k, v in record.items() if k != "messages")  # the metadata line
            if isinstance(record.get("messages"), list):  # a whole legacy record on one line
                add_all(record["messages"], number)
        else:
            report.skip(path, number, "not a Gemini session record")
    return meta, [(None, number, message) for number, message in messages.values()]


def parse(path: Path, report: Report, *, cwd: str) -> list[Thread]:
    """The one thread of a Gemini session file, either layout (CWD: the directory it hashes to)."""
    if path.suffix == ".jsonl":
        meta, messages = _read_jsonl(path, report)
    else:
        read = _read_document(path, report)
        if read is None:
            return []
        meta, messages = read
    session = meta.get("sessionId")
    thread = Thread(agent=AGENT, session_id=session if isinstance(session, str) and session else path.stem)
    thread.cwd = cwd
    start = iso_ms(meta.get("startTime"))
    current: Exchange | None = None
    last_ts = start
    for index, (place, line, message) in enumerate(messages):
        with report.guard(path, line, place):
            if not isinstance(message, dict):
                report.skip(path, line, "not an object", place)
                continue
            ts = iso_ms(message.get("timestamp")) or last_ts
            if ts is None:
                report.skip(path, line, "no readable timestamp", place)
                continue
            last_ts = ts
            kind = message.get("type")
            ident = message.get("id")
            anchor = ident if isinstance(ident, str) and ident else None
            if kind == "user":
                text = _text(message.get("content"))
                if text and not text.startswith("/"):
                    current = Exchange(ts=ts, question=text, cwd=cwd, anchor=anchor)
                    thread.exchanges.append(current)
            elif kind in ("gemini", "model", "assistant"):
                if current is None:
                    current = Exchange(ts=ts, question="", cwd=cwd, anchor=anchor)
                    thread.exchanges.append(current)
                text = _text(message.get("content"))
                if text:
                    current.answer.append(text)
                if isinstance(message.get("model"), str):
                    thread.model = message["model"]
                calls = message.get("toolCalls")
                for n, call in enumerate(calls if isinstance(calls, list) else []):
                    if not isinstance(call, dict):
                        continue
                    name = call.get("name")
                    if not isinstance(name, str) or name not in _SHELL_TOOLS:
                        continue
                    raw_args = call.get("args")
                    args: dict[str, Any] = raw_args if isinstance(raw_args, dict) else {}
                    command = args.get("command")
                    call_id = call.get("id")
                    if not isinstance(command, str) or not command.strip():
                        where = place if place is None else f"{place}.toolCalls[{n}]"
                        report.skip(path, line, "shell call without a command", where)
                        continue
                    # Qualified by the session: Gemini's ids are only meant to be unique within one.
                    call_id = f"{thread.session_id}/{call_id if isinstance(call_id, str) and call_id else f'{index}.{n}'}"
                    status = _exit_status(call.get("result"), call.get("resultDisplay"))
                    if status is None and call.get("status") == "success" and not masked_status(command):
                        status = 0
                    current.calls.append(Call(call_id=call_id, command=command, ts=ts, cwd=cwd, exit=status))
            elif not isinstance(kind, str):
                report.skip(path, line, f"a message whose type is a JSON {type(kind).__name__}", place)
            elif kind not in ("info", "error", "warning"):
                report.skip(path, line, f"unknown message type {redact_cut(kind, 40)!r}", place)
    return [thread] if thread.exchanges else []
