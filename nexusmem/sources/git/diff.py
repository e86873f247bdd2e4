"""Per-file patches: the state machine over one streamed `git log -p`, and the `code_diff` nodes it yields."""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from nexusmem import gitcmd
from nexusmem.config import DEFAULTS
from nexusmem.errors import GitCommandError
from nexusmem.nodes import Node
from nexusmem.paths import tracked_name
from nexusmem.redact import redact
from nexusmem.signals import commit_signal
from nexusmem.sources.base import ScanContext
from nexusmem.sources.git.commits import (
    _FORMAT,
    _LOG_STABLE,
    _TAG,
    _body_after_subject,
    _Header,
    _parse_header,
    _text,
    mode_change,
    truncate,
)
from nexusmem.sources.git.repo import _setting
from nexusmem.text import content_text, one_line

# A patch is a fragment of its commit: the commit node carries the why, and one commit yields many
# patches. Slightly below the commit's own signal keeps a commit ahead of its own hunks at equal relevance.
DIFF_SIGNAL_FACTOR = 0.9

# First bytes of a line inside a hunk: context, added, removed, next hunk, "\\ No newline at end of file".
_HUNK_FIRST = frozenset(b" +-@\\")


def _matches_any(path: str, patterns: Iterable[str]) -> bool:
    """fnmatch on the path and on every tail of it after a '/', so 'dist/*' also catches 'web/dist/app.js'
    and '*.lock' catches 'sub/dir/x.lock' (the basename is the last tail)."""
    tails = [path]
    idx = path.find("/")
    while idx != -1:
        tails.append(path[idx + 1 :])
        idx = path.find("/", idx + 1)
    return any(fnmatch.fnmatch(tail, pat) for pat in patterns for tail in tails)


# code_diff

_QUOTE_ESCAPES = {ord(k): v for k, v in {"a": 7, "b": 8, "t": 9, "n": 10, "v": 11, "f": 12, "r": 13}.items()}


def unquote_path(raw: bytes) -> bytes:
    """Undo git's C-style quoting of a path ("a\\tb", octal escapes); an unquoted path is returned as is."""
    if len(raw) < 2 or not (raw.startswith(b'"') and raw.endswith(b'"')):
        return raw
    s = raw[1:-1]
    out = bytearray()
    i = 0
    while i < len(s):
        c = s[i]
        if c == 0x5C and i + 1 < len(s):
            n = s[i + 1]
            if 0x30 <= n <= 0x37:
                out.append(int(s[i + 1 : i + 4], 8) & 0xFF)
                i += 4
                continue
            out.append(_QUOTE_ESCAPES.get(n, n))
            i += 2
            continue
        out.append(c)
        i += 1
    return bytes(out)


def _label_path(raw: bytes, prefix: bytes) -> bytes | None:
    """The path of a '--- a/x' / '+++ b/x' label; None for /dev/null."""
    raw = raw.rstrip(b"\n")
    if raw.endswith(b"\t"):  # git appends a TAB when the label contains a space (for GNU patch)
        raw = raw[:-1]
    if raw == b"/dev/null":
        return None
    path = unquote_path(raw)
    return path[len(prefix) :] if path.startswith(prefix) else path


class _Patch:
    """One file section of a commit's patch, accumulated up to the body limit and counted beyond it."""

    __slots__ = (
        "deletions",
        "extra",
        "insertions",
        "keep",
        "kept",
        "minus",
        "new_mode",
        "old",
        "old_mode",
        "parts",
        "plus",
        "started",
    )

    def __init__(self) -> None:
        self.minus: bytes | None = None
        self.plus: bytes | None = None
        self.old: bytes | None = None
        self.old_mode: str | None = None  # "old mode 100644" / "new mode 100755": a `chmod` in this commit
        self.new_mode: str | None = None
        self.started = False  # past the first @@
        self.keep = False  # decided at the first @@: this section becomes a node
        self.parts: list[str] = []
        self.kept = 0
        self.extra = 0
        self.insertions = 0
        self.deletions = 0

    def path(self) -> bytes | None:
        return self.plus if self.plus is not None else self.minus

    def add(self, line: bytes, limit: int) -> None:
        first = line[0]
        if first == 0x2B:  # '+'
            self.insertions += 1
        elif first == 0x2D:  # '-'
            self.deletions += 1
        if not self.keep:
            return
        # Only the kept prefix is decoded and held: a 50 MB patch costs the limit in memory, not 50 MB. The
        # tail is counted in bytes (= characters for ASCII) without decoding it: 30% faster on huge patches.
        if self.kept <= limit:
            text = content_text(line)  # a Latin-1 file's patch reads as its doc does
            self.parts.append(text)
            self.kept += len(text)
        else:
            self.extra += len(line)

    def body(self, limit: int) -> tuple[str, bool]:
        return truncate(redact("".join(self.parts).rstrip("\n")), limit, self.extra)


@dataclass
class DiffStats:
    """Counters of one diff scan (what was passed over, and why)."""

    commits: int = 0  # walked, merges included (the progress position)
    merges: int = 0
    binary: int = 0
    skipped_glob: int = 0
    over_cap: int = 0
    unreadable: int = 0  # commits whose patch git cannot read (a missing or corrupt object)

    @property
    def total(self) -> int:
        return self.merges + self.binary + self.skipped_glob + self.over_cap + self.unreadable


def iter_diff_nodes(
    ctx: ScanContext,
    source: str,
    revs: list[str],
    stats: DiffStats,
    lines: Iterable[bytes] | None = None,
) -> Iterator[Node]:
    """Stream `git log -p` over REVS and yield one code_diff node per kept file section.

    LINES (the log's lines, newline kept) replaces running git: how tests/test_fuzz.py feeds it garbage.
    """
    dcfg = _setting(ctx.config, "sources.diff")
    skip_globs: list[str] = list(dcfg.get("skip", DEFAULTS["sources"]["diff"]["skip"]))
    max_files = int(dcfg.get("maxFilesPerCommit", DEFAULTS["sources"]["diff"]["maxFilesPerCommit"]))
    limit = int(_setting(ctx.config, "limits.maxBodyChars"))
    args = ["log", "-p", *_LOG_STABLE, _FORMAT + "%x00", *revs, "--"]

    header: _Header | None = None
    header_parts: list[bytes] | None = None  # a header (with its multi-line message) being read
    patches: list[_Patch] = []
    patch: _Patch | None = None
    files_seen = 0
    lines_changed = 0
    kept_files = 0

    def finish_commit() -> Iterator[Node]:
        if header is None:
            return
        stats.commits += 1
        if len(header.parents) > 1:
            stats.merges += 1
            return
        signal = DIFF_SIGNAL_FACTOR * commit_signal(
            header.subject,
            _body_after_subject(header.message.rstrip("\n")),
            author=header.author,
            files_changed=files_seen,
            lines_changed=lines_changed,
        )
        subject = redact(header.subject)
        for p in patches:
            raw_path = p.path()
            if raw_path is None:
                continue
            path = tracked_name(raw_path)
            old_path = tracked_name(p.old) if p.old is not None else None
            body, truncated = p.body(limit)
            if p.old_mode and p.new_mode:  # the hunks do not show it: the commit's file list's words
                body = f"{mode_change(p.old_mode, p.new_mode)}\n{body}"
            key = f"{header.sha}:{path}"
            meta: dict[str, Any] = {
                "sha": header.sha,
                "path": path,
                "old_path": old_path,
                "insertions": p.insertions,
                "deletions": p.deletions,
                "subject": subject,
            }
            if truncated:
                meta["truncated"] = True
            yield Node(
                project=ctx.project_id,
                kind="code_diff",
                source=source,
                natural_key=key,
                ref=key,
                title=f"{one_line(path)} @ {header.sha[:7]}" + (f" — {subject}" if subject.strip() else ""),
                body=body,
                ts=header.ts_ms,
                signal=round(signal, 4),
                group=header.sha,
                files=(path,),
                meta=meta,
            )

    def close_patch() -> None:
        nonlocal lines_changed
        if patch is not None:
            lines_changed += patch.insertions + patch.deletions

    hunk: _Patch | None = None  # the current section once past its first @@ (the hot path)
    failed: list[GitCommandError] = []
    for line in gitcmd.stream(args, ctx.root, deferred=failed) if lines is None else lines:
        # Almost every line of a big patch is a hunk line; test for that first and do nothing else.
        if hunk is not None and line and line[0] in _HUNK_FIRST:
            hunk.add(line, limit)
            continue
        if header_parts is not None:
            header_parts.append(line)
            if b"\0" in line:  # the terminator after %B: the message cannot contain a NUL
                joined = b"".join(header_parts)
                header_parts = None
                header = _parse_header(joined[1 : joined.rindex(b"\0")])
                patches, patch, hunk, files_seen, lines_changed, kept_files = [], None, None, 0, 0, 0
            continue
        if line.startswith(b"\0" + _TAG):
            close_patch()
            yield from finish_commit()
            header = None
            patch = hunk = None
            if b"\0" in line[1:]:
                joined = line
                header = _parse_header(joined[1 : joined.rindex(b"\0")])
                patches, files_seen, lines_changed, kept_files = [], 0, 0, 0
            else:
                header_parts = [line]
            continue
        if header is None:
            continue
        if line.startswith(b"diff --git "):
            close_patch()
            patch = _Patch()
            hunk = None
            files_seen += 1
            continue
        if patch is None:
            continue
        if patch.started:
            patch.add(line, limit)
            continue
        # Extended header lines, before the first hunk.
        if line.startswith(b"@@"):
            patch.started = True
            hunk = patch
            if len(header.parents) > 1:
                pass  # a merge's sections (if a user config forces them) never become nodes
            else:
                raw = patch.path()
                path = tracked_name(raw) if raw is not None else ""
                if not path:
                    pass
                elif _matches_any(path, skip_globs):
                    stats.skipped_glob += 1
                elif kept_files >= max_files:
                    stats.over_cap += 1
                else:
                    kept_files += 1
                    patch.keep = True
                    patches.append(patch)
            patch.add(line, limit)
        elif line.startswith(b"--- "):
            patch.minus = _label_path(line[4:], b"a/")
        elif line.startswith(b"+++ "):
            patch.plus = _label_path(line[4:], b"b/")
        elif line.startswith(b"rename from "):
            patch.old = unquote_path(line[12:].rstrip(b"\n"))
        elif line.startswith(b"old mode "):
            patch.old_mode = _text(line[9:].strip())
        elif line.startswith(b"new mode "):
            patch.new_mode = _text(line[9:].strip())
        elif line.startswith((b"Binary files ", b"GIT binary patch")) and len(header.parents) <= 1:
            stats.binary += 1
    close_patch()
    yield from finish_commit()
    if failed:  # after the last commit git wrote in full
        raise failed[0]
