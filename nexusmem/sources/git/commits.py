"""Commits: one streamed `git log` in a fixed format, parsed into records, and the `git_commit` node."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from nexusmem import gitcmd
from nexusmem.errors import GitCommandError
from nexusmem.nodes import Node, redacted_path
from nexusmem.paths import tracked_name
from nexusmem.redact import cut_redacted, redact
from nexusmem.signals import commit_signal, conventional_type
from nexusmem.sources.base import ScanContext
from nexusmem.sources.git.repo import _HEX
from nexusmem.text import content_text, one_line

# A commit header in our log output starts with NUL + this tag. A NUL can never start a patch line (every
# patch line starts with a prefix character) and git refuses NUL bytes in commit messages, so the marker
# is unambiguous in both the -z numstat stream and the line-based patch stream.
_TAG = b"NXM"

_SEP = b"\x1f"  # between header fields; the free-text message is always the last field

# Options that pin down the output whatever the user's git config says (diff.noprefix, diff.mnemonicPrefix,
# diff.submodule=log, diff.external, diff.renames, textconv drivers, i18n.logOutputEncoding...). gitcmd._STABLE
# pins the settings that have no flag (log.showRoot, the diff context, algorithm...).
_LOG_STABLE = [
    "--no-color",
    "--no-ext-diff",
    "--no-textconv",
    "--encoding=UTF-8",
    "--submodule=short",
    "--src-prefix=a/",
    "--dst-prefix=b/",
    "-M",
]

# Files listed in a commit node's body: enough to be useful, bounded for commits touching thousands.
_SUMMARY_FILES = 20


def truncate(text: str, limit: int, extra: int = 0) -> tuple[str, bool]:
    """Cut redacted TEXT to LIMIT characters (on a line boundary when one is near, never inside a
    placeholder) and append a marker line.

    EXTRA counts characters already dropped before TEXT reached us (a streamed patch's unread tail).
    """
    if len(text) <= limit and not extra:
        return text, False
    cut = len(text)
    if cut > limit:
        cut = text.rfind("\n", 0, limit + 1)
        if cut < limit // 2:
            cut = limit
    kept = cut_redacted(text, cut)
    more = len(text) - len(kept) + extra
    return kept.rstrip("\n") + f"\n[… truncated: {more} more characters]", True


def _text(raw: bytes) -> str:
    # A message and an author as `git log --encoding=UTF-8` gives them: converted from the encoding the
    # commit's header names (i18n.commitEncoding), so that header wins; a commit with none whose bytes are
    # not UTF-8 (an older git stored a Latin-1 message as typed) reads as a Latin-1 patch or doc does,
    # Windows-1252 (text.content_text): "café", not "caf\ufffd". Always valid text for SQLite. File names
    # are not read this way (paths.tracked_name): two of them may differ only in such bytes.
    return content_text(raw)


def _body_after_subject(message: str) -> str:
    """The message without its first paragraph (what commit_signal calls the body)."""
    parts = message.split("\n\n", 1)
    return parts[1] if len(parts) == 2 else ""


@dataclass
class _Header:
    sha: str
    parents: list[str]
    ts_ms: int
    # When the commit was made (its committer time), in ms: later than its author time after an amend, a
    # rebase or a cherry-pick, which keep the author time of the commit they rewrite.
    committed_ms: int
    author: str
    subject: str
    message: str


def _parse_header(raw: bytes) -> _Header | None:
    """Parse 'NXM<sha>\\x1f<parents>\\x1f<author time>\\x1f<committer time>\\x1f<author>\\x1f<subject>
    \\x1f<message>'."""
    fields = raw[len(_TAG) :].split(_SEP, 6)
    if len(fields) != 7 or not _HEX.match(fields[0]):
        return None
    try:
        ts_ms = int(fields[2]) * 1000
    except ValueError:
        ts_ms = -1  # no usable author time: outside the window, so the commit is skipped and reported
    try:
        committed_ms = int(fields[3]) * 1000
    except ValueError:
        committed_ms = ts_ms
    return _Header(
        sha=fields[0].decode("ascii"),
        parents=fields[1].decode("ascii", "replace").split(),
        ts_ms=ts_ms,
        committed_ms=committed_ms,
        author=_text(fields[4]),
        subject=_text(fields[5]),
        message=_text(fields[6]),
    )


# The header fields, then the full raw message; %s is asked for separately because git folds a multi-line
# first paragraph into it exactly as `git log --oneline` shows it.
_FORMAT = "--format=%x00NXM%H%x1f%P%x1f%at%x1f%ct%x1f%an%x1f%s%x1f%B"

# git_commit


@dataclass
class FileStat:
    """One numstat entry: the new path, the old one for a rename, the line counts (None = binary), and the
    (old, new) mode when the commit changed it (`chmod +x`, from --raw)."""

    path: str
    old_path: str | None
    added: int | None
    deleted: int | None
    mode: tuple[str, str] | None = None


def mode_change(old: str, new: str) -> str:
    """How a file's mode change reads in a commit's file list and its diff node ("mode 100644 → 100755, now
    executable"): the modes as git prints them, and in words what a search for "made it executable" finds."""
    text = f"mode {old} → {new}"
    if (old, new) == ("100644", "100755"):
        return f"{text}, now executable"
    if (old, new) == ("100755", "100644"):
        return f"{text}, no longer executable"
    return text


def _raw_mode(entry: bytes) -> tuple[str, str] | None:
    """The (old, new) mode of a --raw entry (":100644 100755 <sha> <sha> M", its leading colon dropped) that
    changes a file's mode; None when it does not, or adds or deletes the file (mode 000000)."""
    fields = entry.split(b" ")
    if len(fields) != 5 or fields[0] == fields[1] or b"000000" in (fields[0], fields[1]):
        return None
    return fields[0].decode("ascii", "replace"), fields[1].decode("ascii", "replace")


@dataclass
class CommitRecord:
    header: _Header
    files: list[FileStat] = field(default_factory=list)


def _nul_tokens(chunks: Iterable[bytes]) -> Iterator[bytes]:
    """Re-split a byte stream (delivered in arbitrary pieces) on NUL, holding only one token at a time."""
    pending: list[bytes] = []
    for chunk in chunks:
        if b"\0" not in chunk:
            pending.append(chunk)
            continue
        parts = chunk.split(b"\0")
        if pending:
            pending.append(parts[0])
            parts[0] = b"".join(pending)
            pending = []
        last = parts.pop()
        yield from parts
        if last:
            pending.append(last)
    if pending:
        yield b"".join(pending)


def _count(raw: bytes) -> int | None:
    return None if raw == b"-" else int(raw)


# A progress report every 100 items: a few hundred commits already show a moving bar, and the callback costs
# nothing next to parsing 100 commits.
PROGRESS_EVERY = 100


def commit_count(root: Path, revs: list[str]) -> int | None:
    """How many commits REVS walks, for a progress total: `git rev-list --count` reads only the commit graph
    (no trees, no diffs): ~95 ms for 12,000 commits whose walk takes 4.6 s. None when git cannot say."""
    code, out = gitcmd.run_ok(["rev-list", "--count", *revs, "--"], root)
    try:
        return int(out.strip()) if code == 0 else None
    except ValueError:
        return None


T = TypeVar("T")


def stream_parsed(
    args: Sequence[str], cwd: Path | str, parse: Callable[[Iterator[bytes]], Iterator[T]]
) -> Iterator[T]:
    """What PARSE reads from stream(ARGS); a walk git had to stop at a missing parent is raised only once
    PARSE has finished the last commit git wrote in full (see gitcmd.stream's DEFERRED)."""
    failed: list[GitCommandError] = []
    yield from parse(gitcmd.stream(args, cwd, deferred=failed))
    if failed:
        raise failed[0]


def iter_commits(root: Path, revs: list[str]) -> Iterator[CommitRecord]:
    """Stream the commits of REVS with their numstat from one `git log -z --raw --numstat` process.

    With -z every numstat entry is NUL-terminated and unquoted, and a rename is "A\\tD\\t\\0old\\0new\\0",
    so paths with tabs, newlines or non-UTF-8 bytes parse exactly. The --raw entries before them give the
    files' modes: a commit that only made a file executable listed it as "(+0 -0)".
    """
    args = ["log", "-z", "--raw", "--numstat", *_LOG_STABLE, _FORMAT, *revs, "--"]
    return stream_parsed(args, root, parse_commit_stream)


# A clone can lack an object its history names: a damaged snapshot, a partial clone (whose missing objects no
# git of ours fetches: gitcmd._NO_FETCH). A `git log` that reads changes (--numstat, -p) dies at the first
# commit whose change it cannot read, and every commit after it was lost with it. The walk is resumed after
# that commit instead (`--skip`), and the commit itself is read without its change (its header needs no
# blob). A damaged clone missing more than MAX_UNREADABLE commits' changes is not one bad record: the walk
# stops with git's error, which names the object. A partial clone lacks the old changes by design (a
# `--filter=blob:none` clone holds only the blobs it checked out or fetched since): past that many, the rest
# of its history is read without its change, in one walk.
MAX_UNREADABLE = 100
_UNREADABLE = re.compile(
    r"unable to read|could not read|missing blob|bad object|is corrupt|did not send all necessary objects"
    r"|promisor remote",
    re.IGNORECASE,
)


def unreadable_object(exc: GitCommandError) -> bool:
    """Whether git failed because an object of one commit's change cannot be read (missing or corrupt). Not
    when a commit itself is missing: git cannot walk past it, and the walk ends there (the git source's
    _up_to_a_missing_parent)."""
    message = str(exc)
    return _UNREADABLE.search(message) is not None and gitcmd.WALK_CUT.decode() not in message


def resumed(revs: list[str], skip: int) -> list[str] | None:
    """REVS walked from its SKIP-th commit (0-based) on; a --max-count in REVS counts down. None when that
    leaves nothing to walk."""
    out: list[str] = []
    for rev in revs:
        if rev.startswith("--max-count="):
            left = int(rev.split("=", 1)[1]) - skip
            if left <= 0:
                return None
            rev = f"--max-count={left}"
        out.append(rev)
    return [*out, f"--skip={skip}"]


def _headers(root: Path, revs: list[str], position: int, count: int | None = None) -> Iterator[CommitRecord]:
    """The commits of REVS' walk from POSITION (0-based) on (COUNT of them at most), without their change:
    no numstat, so git reads no blob."""
    limit = [f"--max-count={count}"] if count is not None else []
    args = ["log", "-z", *_LOG_STABLE, _FORMAT, *revs, f"--skip={position}", *limit, "--"]
    return stream_parsed(args, root, parse_commit_stream)


def header_at(root: Path, revs: list[str], position: int) -> CommitRecord | None:
    """The commit at POSITION (0-based) of REVS' walk, without its change. None when there is no such commit
    or git cannot read even that."""
    try:
        return next(_headers(root, revs, position, 1), None)
    except GitCommandError:
        return None


# What git says of an object a partial clone lacks and did not fetch ("could not fetch <oid> from promisor
# remote", after a warning that lazy fetching is disabled where git knows GIT_NO_LAZY_FETCH).
PROMISOR = "promisor remote"


def past_unreadable(
    root: Path,
    revs: list[str],
    walk: Callable[[list[str]], Iterator[T]],
    finished: Callable[[], int],
    lost: Callable[[CommitRecord, str], T | None],
) -> Iterator[T]:
    """What WALK yields over REVS, resumed past each commit whose change git cannot read. FINISHED says how
    many commits the walks so far have completed; LOST is told of each commit passed over (its header, and
    git's message) and may give an item to yield in its place."""
    passed = 0
    current: list[str] | None = revs
    while current is not None:
        try:
            yield from walk(current)
            return
        except GitCommandError as exc:
            if not unreadable_object(exc):
                raise
            position = finished() + passed
            if passed >= MAX_UNREADABLE:
                if PROMISOR not in str(exc):
                    raise
                why = f"not read: more than {MAX_UNREADABLE} changes this partial clone lacks"
                for rest in _headers(root, revs, position):
                    item = lost(rest, why)
                    if item is not None:
                        yield item
                return
            record = header_at(root, revs, position)
            if record is None:
                raise
            passed += 1
            item = lost(record, str(exc).rsplit(": ", 1)[-1].strip())
            if item is not None:
                yield item
            current = resumed(revs, position + 1)


def parse_commit_stream(chunks: Iterable[bytes]) -> Iterator[CommitRecord]:
    """The CommitRecords in a `git log -z --raw --numstat` byte stream (see iter_commits), in any chunking.

    A commit's --raw entries (":<old mode> <new mode> <sha> <sha> <status>", then its path, or the old and
    the new one for a rename or a copy) come before its numstat: only the modes are read from them. Anything
    that is not a header, a raw or a numstat entry is passed over (a record that cannot be parsed never
    stops the ones after it); fuzzed in tests/test_fuzz.py.
    """
    current: CommitRecord | None = None
    prev_empty = True
    rename: tuple[bytes, bytes] | None = None
    rename_old: bytes | None = None
    modes: dict[bytes, tuple[str, str]] = {}  # the current commit's mode changes, by (new) path
    raw_paths = 0  # how many path tokens of a raw entry are still to come
    raw_mode: tuple[str, str] | None = None
    for tok in _nul_tokens(chunks):
        if prev_empty and tok.startswith(_TAG):
            header = _parse_header(tok)
            if header is not None:
                if current is not None:
                    yield current
                current = CommitRecord(header)
                prev_empty = False
                rename = None
                modes, raw_paths = {}, 0
                continue
        prev_empty = tok == b""
        if current is None:
            continue
        if raw_paths:
            raw_paths -= 1
            if not raw_paths and raw_mode is not None:
                modes[tok] = raw_mode
            continue
        if rename is not None:
            if rename_old is None:
                rename_old = tok
                continue
            current.files.append(
                FileStat(
                    tracked_name(tok),
                    tracked_name(rename_old),
                    _count(rename[0]),
                    _count(rename[1]),
                    modes.get(tok),
                )
            )
            rename, rename_old = None, None
            continue
        if tok.startswith(b"\n"):  # git separates the message from the raw and numstat block with a newline
            tok = tok[1:]
        if not tok:
            continue
        if tok[:1] == b":":  # a raw entry (a numstat entry starts with a count or "-")
            raw_mode = _raw_mode(tok[1:])
            status = tok.rsplit(b" ", 1)[-1][:1]  # R100, C075: a rename or a copy names two paths
            raw_paths = 2 if status in (b"R", b"C") else 1
            continue
        fields = tok.split(b"\t", 2)
        if len(fields) != 3:
            continue
        try:
            if fields[2] == b"":
                _count(fields[0])  # validate the numbers now, not two tokens later
                _count(fields[1])
                rename = (fields[0], fields[1])
                continue
            current.files.append(
                FileStat(
                    tracked_name(fields[2]), None, _count(fields[0]), _count(fields[1]), modes.get(fields[2])
                )
            )
        except ValueError:
            rename = None
            continue
    if current is not None:
        yield current


def _file_summary(files: list[FileStat]) -> str:
    shown = []
    for f in files[:_SUMMARY_FILES]:
        # Read as a path: `DD-API-KEY: 40c3….py` is a header only at a line's start.
        # A name holding a newline or another control character is spelled with escapes here: the list is
        # one line of the commit's text, and a raw newline split an entry in `query` and `show`.
        path = one_line(redacted_path(f.path))
        if f.old_path and f.old_path != f.path:  # a rename: the old name stays findable
            path = one_line(redacted_path(f.old_path)) + " → " + path
        what = "binary" if f.added is None or f.deleted is None else f"+{f.added} -{f.deleted}"
        if f.mode is not None:  # only the mode changed: no "+0 -0" that says nothing happened
            what = mode_change(*f.mode) if what == "+0 -0" else f"{what}, {mode_change(*f.mode)}"
        shown.append(f"{path} ({what})")
    more = len(files) - _SUMMARY_FILES
    return "Files: " + ", ".join(shown) + (f", … and {more} more files" if more > 0 else "")


def commit_node(ctx: ScanContext, source: str, rec: CommitRecord, limit: int, words: str = "") -> Node:
    """Build the git_commit node of one commit (WORDS: its change words, already redacted)."""
    h = rec.header
    insertions = sum(f.added or 0 for f in rec.files)
    deletions = sum(f.deleted or 0 for f in rec.files)
    is_merge = len(h.parents) > 1
    message = h.message.rstrip("\n")
    signal = commit_signal(
        h.subject,
        _body_after_subject(message),
        is_merge=is_merge,
        author=h.author,
        files_changed=len(rec.files),
        lines_changed=insertions + deletions,
    )
    # One redact() call over message + file list: redaction is most of this source's CPU time.
    text = redact(message + "\n\n" + _file_summary(rec.files) if rec.files else message)
    body, truncated = truncate(text, limit)
    meta: dict[str, Any] = {
        "sha": h.sha,
        "author": h.author,
        "parents": h.parents,
        "insertions": insertions,
        "deletions": deletions,
        "type": conventional_type(h.subject),
        "merge": is_merge,
    }
    renames = [[redacted_path(f.old_path), f.path] for f in rec.files if f.old_path and f.old_path != f.path]
    if renames:
        # Where each renamed file came from (old path, new path), every one of them (the Files line shows the
        # first _SUMMARY_FILES): a file's history follows it back past a `git mv` as `git log --follow` does.
        # The new path is the one in `files`, redacted with it (nodes._redact_labels).
        meta["renames"] = renames
    if truncated:
        meta["truncated"] = True
    if h.committed_ms != h.ts_ms:
        # The node's time stays its author time (what the work is dated by); failure → fix linking reads
        # when the commit was made (nexusmem.link: an amended fix comes after the failure it fixes).
        meta["committed"] = h.committed_ms
    return Node(
        project=ctx.project_id,
        kind="git_commit",
        source=source,
        natural_key=h.sha,
        ref=h.sha,
        title=redact(h.subject),
        body=body,
        ts=h.ts_ms,
        signal=signal,
        group=h.sha,
        files=tuple(f.path for f in rec.files),
        meta=meta,
        words=words,
    )
