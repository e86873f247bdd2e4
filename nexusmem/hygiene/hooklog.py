"""The hooks' files on disk: the shell log is rewritten *in place* so no raw secret outlives the next sync.

The prompt hooks append one JSON line per command to `~/.nexusmem/shell-history.jsonl` with O_APPEND, from
any number of live shells, without any lock (a prompt must never wait). Every project reads that one log
from its own byte offset (stored in its own memory.db, out of reach of the others). So a rewrite must:
- never lose a line a shell appends meanwhile: the file is never renamed, copied or truncated; only bytes
  of *complete* lines that were already there are overwritten (pwrite), and an O_APPEND write always lands
  past the end, so the two never touch the same bytes (the old rename-based rewrite lost 58 lines in 5
  runs of forget under load; this one loses none, tests/test_trust_disk.py measures it at ≥ 1,000
  appends/s);
- keep every project's byte offset right: a line's replacement is never longer than the line — it is
  padded with spaces up to the original length (JSON allows trailing whitespace; a line of only spaces
  reads as blank and is skipped silently) — so every line still starts where it did;
- keep readers from seeing half a line: rewriters take the log lock exclusive, readers shared
  (nexusmem.sources.shell.logline.log_lock); the hooks never take it.

What gets rewritten: at the start of every sync (any project), each complete line not yet checked gets
today's redaction (nexusmem.redact) on its command, and a line holding a deny-listed value is blanked (a
user-wide entry's: any line; this project's: a line run in this project only, see `scoped`). The
replacement is the line with the redacted command (exactly what the store keeps, so a project that reads it
later stores the same node); when redaction made it longer than the original (a short secret, a longer
placeholder), the placeholders lose their kind, and if that is not enough each secret is overwritten by as
many asterisks instead (`mysql -p******`), which keeps every field and the whole command. Only a line whose
JSON was written longer than ours loses its optional fields (v, pipestatus, duration_ms) and then the
command's middle (marked "…"), and one too short even for that is blanked (counted as `dropped`). A bookmark (`.shell-history.redacted`: device, inode, offset, hash of the head) keeps the
pass to the new lines. Overwriting a line inside the first 4 KiB changes the hash every project's cursor
keeps of the log's head (and one inside the 4 KiB just before a project's offset, the hash it keeps of
those), so those projects read the log again from the start once; node ids are content-addressed, so that
re-read adds nothing twice. The bookmark keeps the same two hashes: a log someone edited in place (a line
deleted before the offset) is checked again from its start, never resumed in the middle of a line.

In place also means the raw bytes are overwritten in the same disk blocks rather than left in freed ones
(a copy-and-rename leaves the old blocks unwiped). Copy-on-write file systems (btrfs, ZFS) and SSD
wear-levelling can still keep old blocks: no file-level tool can reach those.

The log must live in the user directory: if it is a symbolic link to a file outside it, NexusMem does not
write through the link (it may be anything: a file in a synced folder, another program's log). The
redaction pass then skips it with a note, and forget refuses with a message saying how to fix it.

The bash hook's scratch files (`.bash-<pid>.tmp`: the last commands, raw) are overwritten with zeros at
every sync and deleted when their shell has exited. The fish hook's (`.fish-<pid>.tmp`: a log line too long
for one write, emptied once appended) and bash's `.umask` one (the same use) are only deleted then: zeroed
under a live shell, they could be copied into the log as zeros. Zeros rather than truncation: the live shell reads the
file through a descriptor that stays open at the end of what it has read, so its offsets must not move (a
truncated file would hand it the tail of its next record as if it were a whole one). A record the shell had
appended but not read yet reads back as empty; the hook then resets the file and asks `history` again.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import stat
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nexusmem import paths, private
from nexusmem.errors import NexusMemError
from nexusmem.hygiene.denylist import own_word
from nexusmem.redact import PLACEHOLDER_RE, mask, redact
from nexusmem.sources.shell.attribution import Attributor
from nexusmem.sources.shell.logline import (
    HEAD_BYTES,
    KNOWN_KEYS,
    before_span,
    glued_at,
    iter_log_lines,
    line_folder,
    loads_line,
    log_lock,
)

BOOKMARK_NAME = ".shell-history.redacted"
_SCRATCH = re.compile(r"^\.(?:bash-(\d+)(?:\.umask)?|fish-(\d+))\.tmp$")
_LEFTOVER = re.compile(r"^\.shell-history\.jsonl\.(\d+)\.tmp$")
_OPTIONAL = ("v", "pipestatus", "duration_ms")
SHORT_PLACEHOLDER = "«redacted»"  # a placeholder without its kind, where the typed one does not fit
# What a bad line (or a torn line's start) holding a secret becomes: still no JSON, so every reader counts it
# skipped as it did, with nothing of the secret left.
BAD_STANDIN = b"?"

# What a line becomes: None to keep it, else its replacement (b"" blanks it).
Transform = Callable[[bytes], bytes | None]
# Whether a line holding these texts (its values) is to be blanked: a deny-list's match.
Denied = Callable[[list[str]], bool]


class LogOutsideError(NexusMemError):
    """The log is a symbolic link to a file outside the user directory: not written through."""


@dataclass
class Rewrite:
    checked: int = 0  # complete lines looked at
    redacted: int = 0  # lines rewritten with their command redacted
    dropped: int = 0  # lines blanked (a deny-listed value, or no room for the redacted form)
    end: int = 0  # offset after the last complete line looked at
    start: int = 0  # the sync's pass: where it started, the end of what an earlier pass (any project's) read


def log_file() -> Path | None:
    """The log to rewrite (a link's target when it stays in the user directory), None when there is none.

    Raises LogOutsideError for a link leading out of the user directory.
    """
    log = paths.shell_log_path()
    try:
        st = os.lstat(log)
    except FileNotFoundError:
        return None
    if not stat.S_ISLNK(st.st_mode):
        return log
    home = os.path.realpath(paths.user_dir())
    target = os.path.realpath(log)
    if os.path.dirname(target) != home:
        raise LogOutsideError(
            f"{log} is a symbolic link to {target}, outside {home}: NexusMem does not rewrite files outside"
            f" its directory. Move the file into place (`mv {target} {log}`) and run the command again."
        )
    return Path(target) if os.path.exists(target) else None


def _pad(replacement: bytes, length: int) -> bytes:
    return replacement + b" " * (length - len(replacement))


def _blank(fd: int, start: int, stop: int) -> None:
    """Overwrite bytes START..STOP of FD with spaces, a megabyte at a time."""
    step = 1 << 20
    for at in range(start, stop, step):
        os.pwrite(fd, b" " * min(step, stop - at), at)


def rewrite(log: Path, start: int, transform: Transform, *, dry_run: bool = False) -> Rewrite:
    """Apply TRANSFORM to every complete line of LOG from byte START, overwriting changed lines in place.

    Call with the log lock held exclusive. A replacement longer than its line is a bug in TRANSFORM. Every
    line is looked at before any is written: a TRANSFORM that fails on one line leaves the log as it was
    (it had blanked the lines before that one and kept it and every line after it).
    """
    done = Rewrite(end=start)
    edits: list[tuple[int, int, bytes | None]] = []  # (offset, length, replacement; None: blank it)
    for end, raw in iter_log_lines(log, start):
        if end < 0:
            break  # a line still being written: its shell's next bytes complete it
        done.checked += 1
        line_start, done.end = done.end, end
        if raw is None:
            # Over-long: never read whole, skipped by every reader, so never redacted either; what it
            # holds (a pasted file with a token in it) is blanked rather than left raw on disk.
            done.dropped += 1
            edits.append((line_start, end - 1 - line_start, None))
            continue
        new = transform(raw)
        if new is None:
            continue
        if len(new) > len(raw):
            raise ValueError("a log line's replacement may not be longer than the line")
        if new.strip():
            done.redacted += 1
        else:
            done.dropped += 1
        edits.append((end - 1 - len(raw), len(raw), new))
    if dry_run or not edits:
        return done
    fd = os.open(log, os.O_RDWR | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        for offset, length, new in edits:
            if new is None:
                _blank(fd, offset, offset + length)
            else:
                os.pwrite(fd, _pad(new, length), offset)
        os.fsync(fd)
    finally:
        os.close(fd)
    return done


def _dumps(obj: dict[str, Any]) -> bytes:
    try:
        return json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate from a \ud800 escape: keep it escaped
        return json.dumps(obj, separators=(",", ":")).encode("ascii")


_MEMO: dict[str, str] = {}


def _redact_memo(text: str) -> str:
    """redact(), remembered: a real log repeats a few hundred commands thousands of times."""
    try:
        return _MEMO[text]
    except KeyError:
        pass
    if len(_MEMO) > 50_000:
        _MEMO.clear()
    value = _MEMO[text] = redact(text)
    return value


def _dirty(text: str, denied: Callable[[list[str]], bool] | None) -> bool:
    """Whether TEXT holds a secret or a denied value. TEXT may be JSON (a torn line's start, a nested value):
    it is read as written and, when it has escapes, as the text they spell too (`echo "password=\\"x\\""`
    is `password=\\\\\\"x…` in JSON, which no rule reads as a quoted value)."""
    texts = [text, _unescaped(text)] if "\\" in text else [text]
    return any(redact(t) != t for t in texts) or (denied is not None and denied(texts))


_JSON_ESCAPE = re.compile(r"\\(?:u([0-9a-fA-F]{4})|(.))", re.DOTALL)
_JSON_LETTERS = {"n": "\n", "t": "\t", "r": "\r", "b": "\b", "f": "\f"}


def _unescaped(text: str) -> str:
    """TEXT with JSON's string escapes replaced by what they stand for (it need not be whole JSON)."""
    return _JSON_ESCAPE.sub(
        lambda m: chr(int(m.group(1), 16)) if m.group(1) else _JSON_LETTERS.get(m.group(2), m.group(2)), text
    )


def _redacted_value(key: str, value: str) -> str:
    """VALUE redacted. Under a key the contract does not name, as a value assigned to that name (`password=
    "…"`, as in an env file): a key named like a secret (password, token, api_key …) makes any value one."""
    if key in KNOWN_KEYS:
        return _redact_memo(value)
    quote = '"' if '"' not in value else "'" if "'" not in value else ""
    prefix = f"{key}={quote}"
    assigned = _redact_memo(prefix + value + quote)
    if assigned.startswith(prefix) and assigned.endswith(quote) and len(assigned) > len(prefix) + len(quote):
        return assigned[len(prefix) : len(assigned) - len(quote)]
    return _redact_memo(value)


def redacted_line(raw: bytes, denied: Callable[[list[str]], bool] | None = None) -> bytes | None:
    """RAW with its command redacted (None: nothing to change; b"": blank it). See the module docstring."""
    try:
        obj = loads_line(raw)
    except (ValueError, RecursionError):
        obj = None
    if type(obj) is not dict or type(obj.get("command")) is not str:
        return _bad_line(raw, denied)
    # By the values it records: its `shell` and `author_kind` are on every line, an agent's `author` on each
    # of its lines (denylist.own_word).
    if denied is not None and denied([v for k, v in obj.items() if type(v) is str and not own_word(k, v)]):
        return b""
    # A key the contract does not name, which every reader ignores, named like a secret or a denied value:
    # dropped with its value (a name cannot be redacted without saying something else; it only shortens).
    strange = [k for k in obj if k not in KNOWN_KEYS and _dirty(k, denied)]
    for key in strange:
        del obj[key]
    command = obj["command"]
    clean = _redact_memo(command)
    # The other text a line holds (its folder, session, an agent's call id, another writer's `password`) is
    # redacted too: no raw secret outlives the next sync, wherever in the line it was.
    others = {k: _redacted_value(k, v) for k, v in obj.items() if k != "command" and type(v) is str}
    others = {k: v for k, v in others.items() if v != obj[k]}
    # The contract's line holds no nested value; another writer's may (an `env` object): one holding a
    # secret or a denied value is dropped whole (the store never reads it, and only shortens the line).
    nested = [
        k
        for k, v in obj.items()
        if type(v) in (dict, list) and _dirty(json.dumps(v, ensure_ascii=False), denied)
    ]
    for key in nested:
        del obj[key]
    if clean == command and not others and not nested and not strange:
        return None
    texts = {k: obj[k] for k in ("command", *others)}
    obj["command"] = clean
    obj.update(others)
    new = _dumps(obj)
    if len(new) <= len(raw):
        return new
    # Placeholders longer than the short secrets they stand for (`mysql -pS3cret`): first without their
    # kind, then each secret overwritten by as many asterisks, which always fits. Every field and the whole
    # command stay, as the contract's line has them (dropping fields and cutting the command is the last
    # resort, for a line whose JSON was written longer than ours).
    short = {k: PLACEHOLDER_RE.sub(SHORT_PLACEHOLDER, obj[k]) for k in texts}
    new = _dumps({**obj, **short})
    if len(new) <= len(raw):
        return new
    new = _dumps({**obj, **{k: mask(v) for k, v in texts.items()}})
    if len(new) <= len(raw):
        return new
    for key in _OPTIONAL:
        obj.pop(key, None)
        new = _dumps(obj)
        if len(new) <= len(raw):
            return new
    return _shortened(obj, clean, len(raw))


def _bad_line(raw: bytes, denied: Callable[[list[str]], bool] | None) -> bytes | None:
    """RAW, a line that is no hook line, with nothing secret or denied left (None: nothing to change).

    The line a hook appended after a torn one (glued_at: a shell killed as it wrote) is redacted as a line of
    its own and stays where it is, so readers still read it; the torn start, or a bad line without one,
    holding a secret or a denied value becomes BAD_STANDIN, which readers skip and count as before."""
    at = glued_at(raw)
    head, tail = (raw[:at], raw[at:]) if at > 0 else (raw, b"")
    dirty = _dirty(head.decode("utf-8", "replace"), denied)
    new_tail = redacted_line(tail, denied) if tail else None
    if not dirty and new_tail is None:
        return None
    head = _pad(BAD_STANDIN, len(head)) if dirty else head
    return head + (tail if new_tail is None else new_tail)


def _shortened(obj: dict[str, Any], clean: str, room: int) -> bytes:
    """OBJ with its redacted command CLEAN made to fit in ROOM bytes, when even without the optional fields
    it does not (short secrets, each now a longer placeholder: `PASSWORD=a` → `PASSWORD=«redacted:password»`):
    first the placeholders lose their kind, then the command its middle, marked with "…". A command kept in
    part, with its exit code, is worth more than a blank line. b"" when not even that fits."""
    clean = PLACEHOLDER_RE.sub(SHORT_PLACEHOLDER, clean)
    obj["command"] = clean
    new = _dumps(obj)
    if len(new) <= room:
        return new
    keep = len(clean) - (len(new) - room) - 1
    while keep >= 8:
        head = clean[: keep - keep // 3]
        tail = clean[len(clean) - keep // 3 :] if keep // 3 else ""
        obj["command"] = _whole_placeholders(head) + "…" + _whole_placeholders(tail, from_end=True)
        new = _dumps(obj)
        if len(new) <= room:
            return new
        keep -= max(1, (len(new) - room) // 2)
    return b""


def _whole_placeholders(part: str, *, from_end: bool = False) -> str:
    """PART of a redacted command cut where it may split a placeholder: the split one's pieces removed (a
    piece of "«redacted»" is not one, and could pass for text)."""
    if from_end:
        close = part.find("»")
        opens = part.find("«")
        return part[close + 1 :] if close >= 0 and (opens < 0 or opens > close) else part
    opens = part.rfind("«")
    return part[:opens] if opens > part.rfind("»") else part


# --------------------------------------------------------------------------------- the sync's pass


def _bookmark_path() -> Path:
    return paths.user_dir() / BOOKMARK_NAME


def _head(fd: int, length: int) -> str:
    return hashlib.sha256(os.pread(fd, length, 0)).hexdigest()[:32]


def _before(fd: int, offset: int) -> str:
    """The hash of the bytes just before OFFSET past the head (logline.before_span), '' when there are none."""
    start, length = before_span(offset)
    return hashlib.sha256(os.pread(fd, length, start)).hexdigest()[:32] if length else ""


def _resume(log: Path) -> int:
    """Where the last pass stopped, when the log is still the same file with the same bytes at its head and
    just before that offset (a line deleted or added before it in place moves them); 0 otherwise."""
    try:
        saved = json.loads(_bookmark_path().read_text(encoding="utf-8"))
        st = os.stat(log)
        offset = int(saved["offset"])
        if (saved["dev"], saved["ino"]) != (st.st_dev, st.st_ino) or offset > st.st_size:
            return 0
        fd = os.open(log, os.O_RDONLY)
        try:
            if _head(fd, min(HEAD_BYTES, offset)) != saved["head"]:
                return 0
            # A bookmark saved before "before" was kept has none: its offset is checked as it was.
            if saved.get("before", "") and _before(fd, offset) != saved["before"]:
                return 0
        finally:
            os.close(fd)
        return offset
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return 0


def _save_bookmark(log: Path, offset: int) -> None:
    st = os.stat(log)
    fd = os.open(log, os.O_RDONLY)
    try:
        head, before = _head(fd, min(HEAD_BYTES, offset)), _before(fd, offset)
    finally:
        os.close(fd)
    data = {"dev": st.st_dev, "ino": st.st_ino, "offset": offset, "head": head, "before": before}
    private.write_atomic(_bookmark_path(), json.dumps(data).encode())


def project_lines(root: Path) -> Callable[[bytes], bool]:
    """Whether a line of the log is the project's at ROOT: run in its work tree or one of its worktrees, as
    the shell source attributes it. A line naming no folder (garbage, no `cwd`) is every project's: no
    project stores it, and a value forgotten anywhere is not kept in it."""
    made: list[Attributor] = []  # made on the first line asked about (one `git worktree list`)

    def ours(raw: bytes) -> bool:
        cwd = line_folder(raw)
        if cwd is None:
            return True
        if not made:
            made.append(Attributor.for_repo(root))
        try:
            return made[0].match(cwd) is not None
        except (ValueError, OSError):  # a name no folder can have: as one naming none
            return True

    return ours


def scoped(anywhere: Denied | None, here: Denied | None, ours: Callable[[bytes], bool]) -> Transform:
    """The redaction pass's transform for one project's sync: every line redacted; blanked when it holds a
    value ANYWHERE denies (the user-wide deny-list: every project's lines), or one HERE denies (this
    project's entries) and the line is this project's (OURS). Another project's line is left to its own
    sync, which stores it as its own deny-list says: `forget` without --global changes this memory only."""

    def transform(raw: bytes) -> bytes | None:
        mine: list[bool] = []  # asked once per line, and only when HERE matches

        def denied(texts: list[str]) -> bool:
            if anywhere is not None and anywhere(texts):
                return True
            if here is None or not here(texts):
                return False
            if not mine:
                mine.append(ours(raw))
            return mine[0]

        return redacted_line(raw, denied if anywhere is not None or here is not None else None)

    return transform


def redact_pass(
    denied: Denied | None = None, *, here: Denied | None = None, root: Path | None = None
) -> tuple[Rewrite, list[str]]:
    """The sync's pass over the log's new lines (and the scratch files); (what changed, notes for the user).
    DENIED blanks any line it matches; HERE only the lines of the project at ROOT (project_lines)."""
    notes: list[str] = []
    done = Rewrite()
    try:
        paths.ensure_user_dir()
        log = log_file()
        if log is not None:
            with log_lock(exclusive=True):
                start = _resume(log)
                ours = project_lines(root) if here is not None and root is not None else (lambda raw: True)
                done = rewrite(log, start, scoped(denied, here, ours))
                done.start = start
                _save_bookmark(log, done.end)
    except LogOutsideError as exc:
        notes.append(f"the shell log was not redacted: {exc}")
    except OSError as exc:
        notes.append(f"the shell log was not redacted: {exc}")
    tidy_scratch(wipe_live=True)
    if done.redacted or done.dropped:
        notes.append(
            f"shell log: {done.redacted} line(s) rewritten with secrets redacted, {done.dropped} blanked"
        )
    return done, notes


# ------------------------------------------------------------------------------ scratch and leftovers


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError, OSError):
        return True  # someone else's process: leave its file alone
    return True


def _wipe(path: Path) -> None:
    """Overwrite a regular file's bytes with zeros, then delete it (a link is only unlinked)."""
    with contextlib.suppress(OSError):
        fd = os.open(path, os.O_WRONLY | getattr(os, "O_NOFOLLOW", 0))
        try:
            size = os.fstat(fd).st_size
            os.pwrite(fd, b"\0" * size, 0)
            os.fsync(fd)
        finally:
            os.close(fd)
    with contextlib.suppress(OSError):
        path.unlink()


def tidy_scratch(*, wipe_live: bool) -> int:
    """Delete the bash hook's scratch files of shells that have exited (and links posing as them); with
    WIPE_LIVE, overwrite the live shells' ones with zeros (same size: see the module docstring). Also wipes a killed rewrite's temp copy of the log (older
    versions copied the log to `.shell-history.jsonl.<pid>.tmp`). Returns how many files were touched."""
    touched = 0
    try:
        entries = list(os.scandir(paths.user_dir()))
    except OSError:
        return 0
    for entry in entries:
        scratch = _SCRATCH.match(entry.name)
        leftover = _LEFTOVER.match(entry.name)
        if not scratch and not leftover:
            continue
        path = Path(entry.path)
        match = scratch or leftover
        pid = int(match.group(1) or match.group(2))  # type: ignore[union-attr]
        if entry.is_symlink():
            with contextlib.suppress(OSError):
                path.unlink()  # never follow it: only the link goes
            touched += 1
        elif not _alive(pid) or (leftover and pid != os.getpid()):
            _wipe(path)
            touched += 1
        elif scratch and wipe_live and entry.name == f".bash-{pid}.tmp":
            with contextlib.suppress(OSError):
                fd = os.open(path, os.O_RDWR | getattr(os, "O_NOFOLLOW", 0))
                try:
                    size = os.fstat(fd).st_size
                    if os.pread(fd, size, 0).strip(b"\0"):  # not already zeros
                        os.pwrite(fd, b"\0" * size, 0)
                        os.fsync(fd)
                        touched += 1
                finally:
                    os.close(fd)
    return touched
