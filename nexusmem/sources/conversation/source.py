"""Conversation collector: the coding agents' own transcripts become `conversation_turn` nodes, and the
shell commands the agents ran in them `shell_command` nodes authored by the agent.

Off by default (`sources.conversation.enabled`; `nexusmem sync --conversation` for one run): a transcript
is the likeliest place for a pasted credential, so nothing is read until the person opts in, and all of it
is redacted before it reaches a node. Agents read (`sources.conversation.agents`): Claude Code, Codex CLI,
Aider, Gemini CLI; each parser module names the files and the format.

Cursor: per transcript file, its size, mtime, inode and a hash of its first 4 KB. A file whose four are
unchanged is not opened beyond that head, so a re-sync with nothing new reads ~4 KB per file and parses
nothing. An append-only JSONL transcript (Claude Code, Codex) that only grew (same inode, same head,
larger) is read on from the byte where its last exchange began (that exchange may have grown), with the
turn numbering carried over (model.Resume); any other change (rewritten under us, truncated, replaced)
reads the file again from the top, which the content-addressed ids make idempotent. A file found to belong
to another project is remembered as such and not parsed again until it changes: by a keyed digest of its path
and those four (_foreign), never by its path, which would say whose it is. One of this project's is kept by a
keyed digest of its path alone (_ours): a transcript is named after its session id (a Claude Code one, a
Codex rollout), which may be a pasted secret, and the cursor is stored, printed by `status --json`, and not
redacted. An older cursor's path keys are read once and dropped. A skipped record's note names its file the
same way (_name: the agent, the first hex of that digest, the day it was modified), and `status --verbose`
finds the path again by hashing the transcripts it can see (locate_transcripts), never storing it.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from nexusmem.nodes import Node
from nexusmem.sources.base import MAX_PROBLEMS, ScanContext, ScanResult
from nexusmem.sources.conversation import aider, claude, codex, gemini
from nexusmem.sources.conversation.build import Builder, Earlier, Match
from nexusmem.sources.conversation.model import Report, Resume, Thread, label
from nexusmem.sources.cursor import decode_cursor
from nexusmem.sources.shell.attribution import Attributor

AGENTS = ("claude-code", "codex", "aider", "gemini")
_CURSOR_VERSION = 1
GEMINI_SUBDIRECTORIES = "subdirectories"
CODEX_MOVES = "moves"
HEAD_BYTES = 4096


def _head_hash(path: Path, size: int = HEAD_BYTES) -> str:
    try:
        with path.open("rb") as handle:
            return hashlib.sha256(handle.read(min(size, HEAD_BYTES))).hexdigest()[:16]
    except OSError:
        return ""


# How much of a file _names_any holds at once: a rollout of another project can run to hundreds of MB.
SCAN_CHUNK = 1 << 20


def _needles(texts: list[str]) -> list[bytes]:
    """TEXTS as a JSON writer puts them inside a string: backslashes and quotes escaped, anything not ASCII
    either as raw UTF-8 (Codex, Claude Code) or as a u-escape (Python's default)."""
    found: list[bytes] = []
    for text in texts:
        for ascii_only in (True, False):
            needle = json.dumps(text, ensure_ascii=ascii_only)[1:-1].encode("utf-8", "surrogatepass")
            if needle and needle not in found:
                found.append(needle)
    return found


def _names_any(path: Path, texts: list[str]) -> bool:
    """Whether the file at PATH holds any of TEXTS as its JSON strings would write them. Read in chunks of
    SCAN_CHUNK bytes, each searched with the end of the one before it (a name cut across two chunks is
    found): memory stays at about one chunk whatever the file's size, and the read stops at the first hit."""
    needles = _needles(texts)
    if not needles:
        return False
    overlap = max(len(n) for n in needles) - 1
    tail = b""
    try:
        with path.open("rb") as handle:
            while block := handle.read(SCAN_CHUNK):
                window = tail + block
                if any(n in window for n in needles):
                    return True
                tail = window[max(0, len(window) - overlap) :]
    except OSError:
        return False
    return False


def _oldest_first(paths: list[Path]) -> list[Path]:
    """PATHS by modification time, oldest first (one gone meanwhile last: it is passed over when read)."""

    def mtime(path: Path) -> int:
        try:
            return os.stat(path).st_mtime_ns
        except OSError:
            return 1 << 62

    return sorted(paths, key=lambda path: (mtime(path), str(path)))


def _decode_cursor(text: str | None) -> tuple[dict[str, Any], bytes]:
    """The cursor's files and its key (a fresh one when it has none: an older cursor, the first sync)."""
    data = decode_cursor(text, _CURSOR_VERSION)
    key = data.get("key")
    try:
        secret = bytes.fromhex(key) if isinstance(key, str) and len(key) == 32 else os.urandom(16)
    except ValueError:
        secret = os.urandom(16)
    files = data.get("files")
    return (files if isinstance(files, dict) else {}), secret


def _foreign(secret: bytes, path: str, fingerprint: list[Any]) -> str:
    """What the cursor keeps of another project's transcript: a digest of its path and fingerprint keyed by
    the cursor's random SECRET, enough to pass over the same file unchanged and nothing to tell whose it is
    (the path of a Claude Code folder spells out the other project's: -home-u-clients-acme-merger)."""
    text = json.dumps([path, fingerprint]).encode("ascii")
    return "~" + hashlib.blake2b(text, key=secret, digest_size=16).hexdigest()


def _ours(secret: bytes, path: str) -> str:
    """What the cursor keys one of this project's transcripts by: a digest of its PATH keyed by the cursor's
    SECRET, the same from one sync to the next (a grown file is read on from where it stopped), and no path:
    a transcript's name is its session id, and a secret in one would be kept as it is."""
    text = json.dumps(path).encode("ascii")
    return "#" + hashlib.blake2b(text, key=secret, digest_size=16).hexdigest()


def _name(agent: str, secret: bytes, path: str) -> str:
    """What a skipped record's note calls one of the transcripts: "claude-code transcript #1a2b3c4d (modified
    2026-12-05)", the first hex of its cursor key (_ours) and its local day; no path, no session id."""
    try:
        day = time.strftime("%Y-%m-%d", time.localtime(os.lstat(path).st_mtime))
    except OSError:
        return f"{agent} transcript {_ours(secret, path)[:9]}"
    return f"{agent} transcript {_ours(secret, path)[:9]} (modified {day})"


_NAMED = re.compile(r"(?P<agent>[a-z-]+) transcript (?P<digest>#[0-9a-f]{8})\b")


def locate_transcripts(root: Path, cursor: str | None) -> Callable[[str], str | None]:
    """The path on this machine of the transcript a skipped record's note names (_name), or None when no
    transcript the conversation source would list now hashes to it (moved, deleted, or the note is not one
    of a transcript): the digests of every one listed, with the key of CURSOR (the source's)."""
    _files, secret = _decode_cursor(cursor)
    roots = Attributor.for_repo(root).roots
    found = {
        f"{agent} transcript {_ours(secret, str(path))[:9]}": str(path)
        for agent, path, _companion in ConversationSource._files(set(AGENTS), roots)
    }

    def locate(note: str) -> str | None:
        named = _NAMED.match(note)
        return None if named is None else found.get(f"{named['agent']} transcript {named['digest']}")

    return locate


# A skipped record's note as releases before the digests wrote it: the transcript's path (redacted), then a
# Gemini document's place (` messages[3]`, ` messages[3].toolCalls[0]`), `:LINE`, and why.
_PATH_NOTE = re.compile(
    r"(?P<path>(?:/|[A-Za-z]:[\\/]).+?)(?: (?P<within>messages\[\d+\](?:\.toolCalls\[\d+\])?))?"
    r"(?::(?P<line>\d+))?: (?P<why>.*)",
    re.DOTALL,
)
# What an OSError said of the file, as those notes kept it: "[Errno 13] Permission denied: '/…/x.jsonl'".
_ERRNO = re.compile(r"\((?P<kind>\w+): \[Errno -?\d+\] (?P<said>.*?)(?:: '[^']*')?\)$", re.DOTALL)


def _agent_of(path: str, listed: dict[str, str]) -> str | None:
    """Which agent's transcript PATH is: as the source lists it now, else by the folder each agent keeps
    them in (a transcript deleted since); None when neither tells."""
    if path in listed:
        return listed[path]
    homes = {
        "claude-code": claude.config_dir() / "projects",
        "codex": codex.codex_home() / "sessions",
        "gemini": gemini.gemini_home() / "tmp",
    }
    for agent, home in homes.items():
        if path.startswith(str(home) + os.sep):
            return agent
    return "aider" if os.path.basename(path) == aider.CHAT_FILE else None


def path_free_notes(notes: list[str], root: Path, cursor: str | None) -> list[str]:
    """NOTES, the skipped-record notes a memory keeps, with each one an older release wrote naming the
    transcript by its path (`/home/u/.claude/projects/-home-u-app/5b0e7c1a-….jsonl:2: not a JSON line`)
    written as this release writes it (_name: `claude-code transcript #1a2b3c4d (modified 2026-12-05), line 2:
    not a JSON line`, keyed by CURSOR's key as the source keys it, so that `status --verbose` finds the file
    again). The path goes from the reason too (an OSError's message named it). ROOT: the project's."""
    old = [_PATH_NOTE.fullmatch(note) if _NAMED.match(note) is None else None for note in notes]
    if not any(old):
        return notes
    _files, secret = _decode_cursor(cursor)
    listed = {
        str(path): agent
        for agent, path, _companion in ConversationSource._files(set(AGENTS), Attributor.for_repo(root).roots)
    }
    out: list[str] = []
    for note, found in zip(notes, old, strict=True):
        if found is None:
            out.append(note)
            continue
        path = found["path"]
        agent = _agent_of(path, listed)
        named = _name(agent, secret, path) if agent else f"transcript {_ours(secret, path)[:9]}"
        why = found["why"].replace(path, "the file")
        errno = _ERRNO.search(why)
        if why.startswith("cannot parse (") and errno is not None:
            why = f"cannot parse ({errno['kind']}: {errno['said']})"
        within = f", {found['within']}" if found["within"] else ""
        line = f", line {found['line']}" if found["line"] else ""
        out.append(f"{named}{within}{line}: {why}")
    return out


def _cannot_parse(exc: Exception, path: Path) -> str:
    """Why a parser gave up on the file at PATH: the exception, its message without the path (an OSError's
    names the file, which the note names apart, without its path)."""
    if isinstance(exc, OSError) and exc.strerror:
        return f"cannot parse ({type(exc).__name__}: {exc.strerror})"
    return f"cannot parse ({type(exc).__name__}: {str(exc).replace(str(path), 'the file')})"


class ConversationSource:
    name = "conversation"
    kinds = ("conversation_turn", "shell_command")

    def enabled(self, config: dict[str, Any]) -> bool:
        """Off unless sources.conversation.enabled is true (or `sync --conversation` for one run)."""
        return bool(config.get("sources", {}).get("conversation", {}).get("enabled", False))

    def scan(self, ctx: ScanContext) -> ScanResult:
        result = ScanResult(nodes=())
        result.nodes = self._scan(ctx, result)
        return result

    def _scan(self, ctx: ScanContext, result: ScanResult) -> Iterator[Node]:
        settings = ctx.config.get("sources", {}).get("conversation", {})
        wanted = set(settings.get("agents", AGENTS))
        old, secret = _decode_cursor(ctx.cursor)
        if ctx.full:
            old = {}
        attributor = Attributor.for_repo(ctx.root)
        roots = attributor.roots
        max_body = int(ctx.config.get("limits", {}).get("maxBodyChars", 20_000))
        # The turns stored before, by their anchors: a resumed session's copies of them are the same turns.
        earlier = Earlier(ctx.known.get("turn_keys"))
        builder = Builder(
            ctx.project_id,
            self._matcher(attributor),
            roots,
            max_body,
            attributor.label,
            earlier,
            stored=ctx.known.get("agent_calls_stored"),
        )
        files = self._files(wanted, roots)
        agents = {str(path): agent for agent, path, _companion in files}
        report = Report(name=lambda path: _name(agents[path], secret, path) if path in agents else None)
        directories = gemini.Directories(roots)
        state: dict[str, Any] = {}
        read = 0
        met: set[tuple[str, str]] = set()  # (agent, session id) of every thread read
        for done, (agent, path, companion) in enumerate(files, 1):
            if done % 50 == 0:
                ctx.progress("conversation", done, len(files))
            key = _ours(secret, str(path))
            # An older cursor kept the file by its path: read once, and kept by its digest from now on.
            previous = old[key] if key in old else old.get(str(path))
            if agent == "aider" and path.is_symlink():
                # A chat history committed as a symlink (`../../.aider.chat.history.md`) may point at
                # another project's, or the home folder's: never followed, as the docs source refuses one.
                link = self._link_fingerprint(path)
                if link is not None:
                    state[key] = {"fp": link, "ours": False}
                    if not (isinstance(previous, dict) and previous.get("fp") == link):
                        report.skip(path, None, "a symlink (it may point outside the repository): not read")
                continue
            fingerprint = self._fingerprint(path, companion)
            if fingerprint is None:
                continue  # gone between listing and now
            if agent == "gemini":
                # Sessions started in a subdirectory are found since this mark: read the others again once.
                fingerprint.append(GEMINI_SUBDIRECTORIES)
            elif agent == "codex":
                # Sessions resumed in another directory are attributed turn by turn since this mark.
                fingerprint.append(CODEX_MOVES)
            foreign = _foreign(secret, str(path), fingerprint)
            if foreign in old:  # another project's, unchanged
                state[foreign] = {"ours": False}
                continue
            if isinstance(previous, dict) and previous.get("fp") == fingerprint:
                if previous.get("ours") is True:
                    state[key] = previous
                else:  # an older cursor kept another project's file by its path: by its digest from now on
                    state[foreign] = {"ours": False}
                continue
            entry, threads = self._read(agent, path, previous, fingerprint, attributor, directories, report)
            if entry["ours"]:
                state[key] = entry
            else:
                state[foreign] = {"ours": False}
            read += entry["ours"]
            met.update((thread.agent, label(thread.session_id)) for thread in threads)
            for thread in threads:
                if thread.moves or thread.cwd is None or attributor.match(thread.cwd) is not None:
                    yield from builder.nodes(thread)
        if read:
            result.notes.append(f"read {read} changed transcript file(s) of {len(files)}")
        if report.no_cwd:
            result.notes.append(
                f"{report.no_cwd} transcript file(s) name no working directory in their first "
                f"{claude.HEAD_CWD_BYTES >> 20} MB: not read"
            )
        result.skipped += report.skipped
        result.problems.extend(report.problems[:MAX_PROBLEMS])
        # A session read again stands as read; a rebuild keeps the turns (and commands) of the others, whose
        # transcripts are gone (Claude Code deletes them after 30 days): history, as a sync keeps it.
        result.covers = lambda meta: (meta.get("author"), meta.get("session_id", meta.get("session"))) in met
        # Persisted after every node was handed over: an interrupted sync reads the same files again.
        result.cursor = json.dumps(
            {"v": _CURSOR_VERSION, "key": secret.hex(), "files": state}, sort_keys=True
        )

    def _read(
        self,
        agent: str,
        path: Path,
        previous: Any,
        fingerprint: list[Any],
        attributor: Attributor,
        directories: gemini.Directories,
        report: Report,
    ) -> tuple[dict[str, Any], list[Thread]]:
        """The cursor entry of a changed file and its threads (none when it is another project's)."""
        resume = self._appended(path, previous, fingerprint) if agent in ("claude-code", "codex") else None
        if resume is not None:  # the same file, grown: read on from its last open exchange
            read = previous.get("lines")
            report.known[str(path)] = read if isinstance(read, int) else 0
            threads, after = self._parse_from(agent, path, report, resume)
            entry = {"fp": fingerprint, "ours": True, "resume": after.to_json() if after else None}
            return self._lines_read(entry, path, report), threads
        if agent in ("claude-code", "codex"):
            cwd = (claude if agent == "claude-code" else codex).head_cwd(path, report)
            started_here = cwd is not None and attributor.match(cwd) is not None
            # A Codex session started elsewhere may have been resumed here: read it when it names us.
            if not started_here and not (
                agent == "codex" and cwd is not None and _names_any(path, attributor.path_forms())
            ):
                return {"fp": fingerprint, "ours": False}, []
            threads, after = self._parse_from(agent, path, report, None)
            entry = {"fp": fingerprint, "ours": True, "resume": after.to_json() if after else None}
            return self._lines_read(entry, path, report), threads
        started = gemini.started_in(path, directories) if agent == "gemini" else None
        if agent == "gemini" and started is None:
            return {"fp": fingerprint, "ours": False}, []
        return {"fp": fingerprint, "ours": True}, self._parse(agent, path, report, started)

    @staticmethod
    def _lines_read(entry: dict[str, Any], path: Path, report: Report) -> dict[str, Any]:
        """ENTRY with the last whole line read of PATH: the next read of the grown file counts no bad line
        at or before it again."""
        read = report.lines.get(str(path))
        if read is not None:
            entry["lines"] = read
        return entry

    @staticmethod
    def _matcher(attributor: Attributor) -> Match:
        def match(cwd: str | None) -> tuple[Path, str] | None:
            return None if cwd is None else attributor.match(cwd)

        return match

    @staticmethod
    def _files(wanted: set[str], roots: list[Path]) -> list[tuple[str, Path, Path | None]]:
        """(agent, transcript file, a companion file whose change also counts) for every file to consider."""
        out: list[tuple[str, Path, Path | None]] = []
        if "claude-code" in wanted:
            # Oldest first: a session resumed into a new file repeats the records of the one it continues,
            # which are then met first in their own session's file (build.Earlier files the copies there).
            out += [("claude-code", p, None) for p in _oldest_first(claude.transcript_files())]
        if "codex" in wanted:
            out += [("codex", p, None) for p in codex.transcript_files()]
        if "aider" in wanted:
            for root in roots:
                chat = root / aider.CHAT_FILE
                if chat.is_file() or chat.is_symlink():  # a symlink is listed to be refused (_scan)
                    out.append(("aider", chat, root / aider.INPUT_FILE))
        if "gemini" in wanted:
            out += [("gemini", p, None) for p in gemini.transcript_files()]
        return out

    @staticmethod
    def _fingerprint(path: Path, companion: Path | None) -> list[Any] | None:
        try:
            st = os.stat(path)
        except OSError:
            return None
        fp: list[Any] = [st.st_size, st.st_mtime_ns, st.st_ino, _head_hash(path)]
        if companion is not None:
            try:
                cst = os.stat(companion)
                fp += [cst.st_size, cst.st_mtime_ns]
            except OSError:
                pass
        return fp

    @staticmethod
    def _link_fingerprint(path: Path) -> list[Any] | None:
        """The symlink's own size, mtime and inode (what it points at is never opened)."""
        try:
            st = os.lstat(path)
        except OSError:
            return None
        return ["symlink", st.st_size, st.st_mtime_ns, st.st_ino]

    @staticmethod
    def _appended(path: Path, previous: Any, fingerprint: list[Any]) -> Resume | None:
        """Where to read on in a file that only grew since PREVIOUS (same inode, same first 4 KB, larger),
        or None when it must be read from the top."""
        if not isinstance(previous, dict) or previous.get("ours") is not True:
            return None
        old = previous.get("fp")
        if not isinstance(old, list) or len(old) < 4 or not isinstance(old[0], int):
            return None
        size, _mtime, ino, head = fingerprint[:4]
        if ino != old[2] or size <= old[0]:
            return None
        # The first 4 KB were hashed; a file shorter than that then is the same file grown when its first
        # bytes up to that old length still hash the same.
        if head != old[3] and not (old[0] < HEAD_BYTES and _head_hash(path, old[0]) == old[3]):
            return None
        resume = Resume.from_json(previous.get("resume"))
        return resume if resume is not None and resume.offset <= old[0] else None

    @staticmethod
    def _parse_from(
        agent: str, path: Path, report: Report, resume: Resume | None
    ) -> tuple[list[Thread], Resume | None]:
        """An append-only transcript's threads from RESUME (None: the top), and where to read on next time."""
        try:
            if agent == "claude-code":
                return claude.parse_from(path, report, resume)
            return codex.parse_from(path, report, resume)
        except Exception as exc:  # defensive, as in _parse
            report.skip(path, None, _cannot_parse(exc, path))
            return [], None

    @staticmethod
    def _parse(agent: str, path: Path, report: Report, started: Path | None) -> list[Thread]:
        """The threads of one file (STARTED: where a Gemini session ran); a parser bug costs this file
        (counted), never the sync."""
        try:
            if agent == "claude-code":
                return claude.parse(path, report)
            if agent == "codex":
                return codex.parse(path, report)
            if agent == "aider":
                return aider.parse(path, report, cwd=str(path.parent))
            return gemini.parse(path, report, cwd=str(started))
        except Exception as exc:  # defensive: undocumented formats; one file must not stop the others
            report.skip(path, None, _cannot_parse(exc, path))
            return []
