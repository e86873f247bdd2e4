"""The two git collectors: `GitSource` (one `git_commit` node per commit) and `DiffSource` (one `code_diff`
node per changed file of a non-merge commit).

Each scan runs ONE streamed `git log` and parses it in a single pass (DESIGN.md: GitPython is ~20× slower).
Both share the cursor logic:

- the cursor is "g1:<fingerprint of HEAD and every ref>:<HEAD sha>";
- the same fingerprint as last time means nothing moved: no walk at all (one `git show-ref` call);
- a previous HEAD that is an ancestor of the current one means a fast-forward: walk prevHEAD..HEAD only;
- anything else (rebase, amend, reset, another branch checked out) means a full walk;
- whenever something moved, `keep` rejects nodes whose commit is no longer reachable from any ref, so
  rewritten history is pruned instead of stranded.
"""

from __future__ import annotations

import fnmatch
import hashlib
import re
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nexusmem import gitcmd, paths
from nexusmem.config import DEFAULTS
from nexusmem.errors import GitCommandError
from nexusmem.nodes import Node, ts_ok
from nexusmem.redact import PLACEHOLDER_RE, redact
from nexusmem.signals import commit_signal, conventional_type
from nexusmem.sources.base import ScanContext, ScanResult
from nexusmem.text import STOPWORDS, identifier_list, identifiers, split_identifier

CURSOR_VERSION = "g1"

# A commit header in our log output starts with NUL + this tag. A NUL can never start a patch line (every
# patch line starts with a prefix character) and git refuses NUL bytes in commit messages, so the marker
# is unambiguous in both the -z numstat stream and the line-based patch stream.
_TAG = b"NXM"
_SEP = b"\x1f"  # between header fields; the free-text message is always the last field

# Options that pin down the output whatever the user's git config says (diff.noprefix, diff.submodule=log,
# diff.external, textconv drivers, i18n.logOutputEncoding...). gitcmd adds quotepath/color/showSignature.
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
# A patch is a fragment of its commit: the commit node carries the why, and one commit yields many
# patches. Slightly below the commit's own signal keeps a commit ahead of its own hunks at equal relevance.
DIFF_SIGNAL_FACTOR = 0.9

# First bytes of a line inside a hunk: context, added, removed, next hunk, "\\ No newline at end of file".
_HUNK_FIRST = frozenset(b" +-@\\")

_HEX = re.compile(rb"^(?:[0-9a-f]{40}|[0-9a-f]{64})$")


# --------------------------------------------------------------------------------------------------------
# Shared: configuration, repository state, cursor and walk plan


def _setting(config: dict[str, Any], dotted: str) -> Any:
    """config['a']['b'] for 'a.b', falling back to the default so a partial config (tests, previews) works."""
    value: Any = config
    default: Any = DEFAULTS
    for part in dotted.split("."):
        default = default[part]
        value = value.get(part, default) if isinstance(value, dict) else default
    return value


@dataclass(frozen=True)
class RepoState:
    """HEAD and a fingerprint of every ref, from one cheap `git show-ref --head`."""

    fingerprint: str
    head: str | None  # None when HEAD is unborn (empty repository, orphan branch)
    has_refs: bool

    @property
    def cursor(self) -> str:
        return f"{CURSOR_VERSION}:{self.fingerprint}:{self.head or ''}"


def repo_state(root: Path) -> RepoState:
    """Read HEAD and all refs. An empty repository (no refs, unborn HEAD) is a state, not an error."""
    code, out = gitcmd.run_ok(["show-ref", "--head"], root)
    if code not in (0, 1):  # 1 = no refs at all; anything else is a real failure (not a repository...)
        raise GitCommandError(f"git show-ref failed ({code}) in {root}")
    head: str | None = None
    for line in out.splitlines():
        sha, _, name = line.partition(b" ")
        if name == b"HEAD" and _HEX.match(sha):
            head = sha.decode("ascii")
            break
    fingerprint = hashlib.sha256(out).hexdigest()[:20]
    # A shallow clone's boundary is part of the state: `git fetch --deepen/--unshallow` brings older commits
    # without moving any ref. "s<hash of .git/shallow>" marks a shallow clone (see plan_walk).
    common = paths.git_common_dir(root)
    shallow = common / "shallow" if common is not None else None
    if shallow is not None and shallow.is_file():
        fingerprint += "s" + hashlib.sha256(shallow.read_bytes()).hexdigest()[:12]
    return RepoState(fingerprint, head, bool(out.strip()))


def _cursor_shallow(cursor: str | None) -> str | None:
    """The shallow-boundary mark in a cursor of ours ("" for a cursor of a complete clone)."""
    if not cursor or cursor.count(":") != 2:
        return None
    return cursor.split(":")[1].partition("s")[2]


def _cursor_head(cursor: str | None) -> str | None:
    """The HEAD sha stored in a cursor of ours, or None (no cursor, foreign format, unborn HEAD)."""
    if not cursor:
        return None
    parts = cursor.split(":")
    if len(parts) != 3 or parts[0] != CURSOR_VERSION or not _HEX.match(parts[2].encode("ascii", "replace")):
        return None
    return parts[2]


@dataclass
class WalkPlan:
    """What a scan has to do: nothing (noop), a range, everything, or no walk but a prune."""

    state: RepoState
    noop: bool = False
    revs: list[str] | None = None  # `git log` revision arguments; None = nothing to walk
    full: bool = False  # True when the whole history (or the first-sync window) is walked


def plan_walk(root: Path, cursor: str | None, full: bool) -> WalkPlan:
    """Decide between no-op, fast-forward (prevHEAD..HEAD) and full walk (first sync or rewritten history)."""
    state = repo_state(root)
    if not full and cursor is not None and cursor == state.cursor:
        return WalkPlan(state, noop=True)
    if state.head is None:
        return WalkPlan(state)
    prev = None if full else _cursor_head(cursor)
    if prev is not None and _cursor_shallow(cursor) != _cursor_shallow(state.cursor):
        return WalkPlan(
            state, revs=[state.head], full=True
        )  # deepened or unshallowed: older commits appeared
    if prev == state.head:  # only other refs moved: nothing new on HEAD, but branches may have gone
        return WalkPlan(state, revs=None)
    if prev is not None:
        code, _ = gitcmd.run_ok(["merge-base", "--is-ancestor", prev, state.head], root)
        if code == 0:
            return WalkPlan(state, revs=[f"{prev}..{state.head}"])
    return WalkPlan(state, revs=[state.head], full=True)


def reachable_commits(root: Path, state: RepoState) -> set[str] | None:
    """Every commit reachable from any ref (and HEAD); None when there are no refs or git fails.

    None means "prune nothing": a failure here must never empty the store.
    """
    if not state.has_refs:
        return None
    code, out = gitcmd.run_ok(["rev-list", "--all"], root)
    if code != 0:
        return None
    return set(out.decode("ascii", "replace").split())


def _matches_any(path: str, patterns: Iterable[str]) -> bool:
    """fnmatch on the path and on every tail of it after a '/', so 'dist/*' also catches 'web/dist/app.js'
    and '*.lock' catches 'sub/dir/x.lock' (the basename is the last tail)."""
    tails = [path]
    idx = path.find("/")
    while idx != -1:
        tails.append(path[idx + 1 :])
        idx = path.find("/", idx + 1)
    return any(fnmatch.fnmatch(tail, pat) for pat in patterns for tail in tails)


def truncate(text: str, limit: int, extra: int = 0) -> tuple[str, bool]:
    """Cut TEXT to LIMIT characters (on a line boundary when one is near) and append a marker line.

    EXTRA counts characters already dropped before TEXT reached us (a streamed patch's unread tail).
    """
    if len(text) <= limit and not extra:
        return text, False
    cut = len(text)
    if cut > limit:
        cut = text.rfind("\n", 0, limit + 1)
        if cut < limit // 2:
            cut = limit
    more = len(text) - cut + extra
    return text[:cut].rstrip("\n") + f"\n[… truncated: {more} more characters]", True


def _text(raw: bytes) -> str:
    # 'replace' (not surrogateescape): stored text must be valid UTF-8 for SQLite, and the mapping is
    # deterministic, so a non-UTF-8 path still yields the same natural key on every scan.
    return raw.decode("utf-8", "replace")


def _body_after_subject(message: str) -> str:
    """The message without its first paragraph (what commit_signal calls the body)."""
    parts = message.split("\n\n", 1)
    return parts[1] if len(parts) == 2 else ""


@dataclass
class _Header:
    sha: str
    parents: list[str]
    ts_ms: int
    author: str
    subject: str
    message: str


def _parse_header(raw: bytes) -> _Header | None:
    """Parse 'NXM<sha>\\x1f<parents>\\x1f<author time>\\x1f<author>\\x1f<subject>\\x1f<message>'."""
    fields = raw[len(_TAG) :].split(_SEP, 5)
    if len(fields) != 6 or not _HEX.match(fields[0]):
        return None
    try:
        ts_ms = int(fields[2]) * 1000
    except ValueError:
        ts_ms = -1  # no usable author time: outside the window, so the commit is skipped and reported
    return _Header(
        sha=fields[0].decode("ascii"),
        parents=fields[1].decode("ascii", "replace").split(),
        ts_ms=ts_ms,
        author=_text(fields[3]),
        subject=_text(fields[4]),
        message=_text(fields[5]),
    )


# The header fields, then the full raw message; %s is asked for separately because git folds a multi-line
# first paragraph into it exactly as `git log --oneline` shows it.
_FORMAT = "--format=%x00NXM%H%x1f%P%x1f%at%x1f%an%x1f%s%x1f%B"


# --------------------------------------------------------------------------------------------------------
# git_commit


@dataclass
class FileStat:
    """One numstat entry: the new path, the old one for a rename, and the line counts (None = binary)."""

    path: str
    old_path: str | None
    added: int | None
    deleted: int | None


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


def iter_commits(root: Path, revs: list[str]) -> Iterator[CommitRecord]:
    """Stream the commits of REVS with their numstat from one `git log -z --numstat` process.

    With -z every numstat entry is NUL-terminated and unquoted, and a rename is "A\\tD\\t\\0old\\0new\\0",
    so paths with tabs, newlines or non-UTF-8 bytes parse exactly.
    """
    args = ["log", "-z", "--numstat", *_LOG_STABLE, _FORMAT, *revs, "--"]
    return parse_commit_stream(gitcmd.stream(args, root))


def parse_commit_stream(chunks: Iterable[bytes]) -> Iterator[CommitRecord]:
    """The CommitRecords in a `git log -z --numstat` byte stream (see iter_commits), in any chunking.

    Anything that is not a header or a numstat entry is passed over (a record that cannot be parsed never
    stops the ones after it); fuzzed in tests/test_fuzz.py.
    """
    current: CommitRecord | None = None
    prev_empty = True
    rename: tuple[bytes, bytes] | None = None
    rename_old: bytes | None = None
    for tok in _nul_tokens(chunks):
        if prev_empty and tok.startswith(_TAG):
            header = _parse_header(tok)
            if header is not None:
                if current is not None:
                    yield current
                current = CommitRecord(header)
                prev_empty = False
                rename = None
                continue
        prev_empty = tok == b""
        if current is None:
            continue
        if rename is not None:
            if rename_old is None:
                rename_old = tok
                continue
            current.files.append(
                FileStat(_text(tok), _text(rename_old), _count(rename[0]), _count(rename[1]))
            )
            rename, rename_old = None, None
            continue
        if tok.startswith(b"\n"):  # git separates the message from the numstat block with a newline
            tok = tok[1:]
        if not tok:
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
            current.files.append(FileStat(_text(fields[2]), None, _count(fields[0]), _count(fields[1])))
        except ValueError:
            rename = None
            continue
    if current is not None:
        yield current


def _file_summary(files: list[FileStat]) -> str:
    shown = []
    for f in files[:_SUMMARY_FILES]:
        if f.added is None or f.deleted is None:
            shown.append(f"{f.path} (binary)")
        else:
            shown.append(f"{f.path} (+{f.added} -{f.deleted})")
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
    if truncated:
        meta["truncated"] = True
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


def _start_scan(ctx: ScanContext, sha_of_key: Callable[[str], str]) -> tuple[WalkPlan | None, ScanResult]:
    """Plan the walk for a git-backed source. (None, result) when nothing moved since the cursor;
    otherwise the plan and a result whose keep() drops nodes (natural key → sha) of unreachable commits."""
    plan = plan_walk(ctx.root, ctx.cursor, ctx.full)
    if plan.noop:
        return None, ScanResult(nodes=(), cursor=ctx.cursor, keep=None)
    reachable = reachable_commits(ctx.root, plan.state)
    keep: Callable[[str], bool] | None = None
    if reachable is not None:
        commits = reachable

        def keep(key: str) -> bool:
            return sha_of_key(key) in commits

    return plan, ScanResult(nodes=(), cursor=plan.state.cursor, keep=keep)


class GitSource:
    """git_commit nodes for every commit reachable from HEAD."""

    name = "git"
    kinds: tuple[str, ...] = ("git_commit",)

    def enabled(self, config: dict[str, Any]) -> bool:
        """On unless sources.git.enabled is false."""
        return bool(_setting(config, "sources.git.enabled"))

    def scan(self, ctx: ScanContext) -> ScanResult:
        """Plan the walk now (cheap); stream the commits lazily when `nodes` is iterated."""
        plan, result = _start_scan(ctx, sha_of_key=lambda key: key)
        if plan is not None:
            result.nodes = self._nodes(ctx, plan, result)
        return result

    def _nodes(self, ctx: ScanContext, plan: WalkPlan, result: ScanResult) -> Iterator[Node]:
        if plan.revs is None:
            return
        limit = int(_setting(ctx.config, "limits.maxBodyChars"))
        words: ChangeWords | None = None
        if _setting(ctx.config, "sources.git.changeWords"):
            skip = _setting(ctx.config, "sources.diff.skip")
            words = ChangeWords(iter_change_words(ctx.root, plan.revs, skip, ctx.known.get("denied")))
        done = 0
        try:
            for rec in iter_commits(ctx.root, plan.revs):
                sha = rec.header.sha
                found = words.of(sha) if words is not None else ""
                if not ts_ok(rec.header.ts_ms):
                    # A forged or corrupt commit (hash-object --literally): a time no date can show.
                    result.skip(f"commit {sha}: author time {rec.header.ts_ms // 1000} is outside 1970..2100")
                    continue
                try:
                    node = commit_node(ctx, self.name, rec, limit, found)
                except Exception as exc:  # one odd commit must not stop the ones after it
                    result.skip(f"commit {sha}: {type(exc).__name__}: {str(exc)[:120]}")
                    continue
                yield node
                done += 1
                if done % 1000 == 0:
                    ctx.progress("git", done, None)
        finally:
            if words is not None:
                words.close()
        ctx.progress("git", done, done)


# --------------------------------------------------------------------------------------------------------
# change words: what a commit's code change is about, for commits whose message does not say it

# The most distinct words kept per commit. A person remembers a handful of names from a change (a function,
# an option, an error code); a commit that renames a thousand identifiers is not about any one of them.
# Measured on the generated 10k-commit history and four real repositories: a typical commit yields
# 20-150 distinct words; 300 keeps all of them for ~95% of commits while bounding the big sweeps, whose
# extra words would only add noise to every query (and ~5 KB each to the index).
MAX_CHANGE_WORDS = 300
# Changed-line bytes read per commit, and the longest line read: a generated or minified file that escaped
# the skip globs costs at most this much redaction and tokenising (redaction runs at ~50 MB/s).
_MAX_CHANGE_BYTES = 64_000
_MAX_LINE_BYTES = 400
# Words every language's code is full of; they say nothing about what a change is for.
CODE_WORDS = frozenset(
    [
        "abstract",
        "and",
        "arg",
        "args",
        "argv",
        "assert",
        "async",
        "await",
        "bool",
        "boolean",
        "break",
        "byte",
        "bytes",
        "case",
        "catch",
        "char",
        "class",
        "cls",
        "const",
        "continue",
        "def",
        "default",
        "defer",
        "del",
        "delete",
        "dict",
        "do",
        "double",
        "elif",
        "else",
        "end",
        "enum",
        "err",
        "error",
        "except",
        "export",
        "extends",
        "false",
        "final",
        "finally",
        "float",
        "fmt",
        "fn",
        "for",
        "func",
        "function",
        "get",
        "go",
        "if",
        "impl",
        "import",
        "in",
        "int",
        "interface",
        "is",
        "isinstance",
        "kwargs",
        "lambda",
        "len",
        "let",
        "list",
        "map",
        "match",
        "mod",
        "module",
        "mut",
        "new",
        "nil",
        "none",
        "not",
        "null",
        "nullptr",
        "object",
        "of",
        "ok",
        "or",
        "package",
        "pass",
        "print",
        "private",
        "protected",
        "pub",
        "public",
        "raise",
        "range",
        "ref",
        "require",
        "return",
        "self",
        "set",
        "static",
        "str",
        "string",
        "struct",
        "super",
        "switch",
        "this",
        "throw",
        "throws",
        "true",
        "try",
        "type",
        "typeof",
        "undefined",
        "unsafe",
        "use",
        "usize",
        "val",
        "var",
        "void",
        "where",
        "while",
        "with",
        "yield",
    ]
)


_NOISE = STOPWORDS | CODE_WORDS


def _is_noise(word: str) -> bool:
    return len(word) < 3 or word in _NOISE or word.isdigit()


def change_words(funcs: Iterable[str], changed: str, cap: int = MAX_CHANGE_WORDS) -> str:
    """The change words of one commit: distinct lower-cased words, most informative first, at most CAP.

    FUNCS are the hunk headers' function contexts (where the change is), CHANGED the added and removed
    lines. Order: names from the hunk headers; then identifiers of the changed lines that are compound
    (snake_case, camelCase, with digits: specific to this code), most frequent first; then the plain words
    (comments and short names), most frequent first. A compound identifier is kept whole *and* split
    ("parseHeaders" → parseheaders, parse, headers) so both the name and its words find the commit.
    """
    out: list[str] = []
    seen: set[str] = set()

    def add_split(ident: str) -> None:
        for word in split_identifier(ident):
            if word not in seen and not _is_noise(word):
                seen.add(word)
                out.append(word)

    for func in funcs:
        for ident in identifiers(PLACEHOLDER_RE.sub(" ", func)):
            low = ident.lower()
            if low not in seen and not _is_noise(low):
                seen.add(low)
                out.append(low)
            add_split(ident)
    # Counter, set algebra and sort run in C; only the distinct survivors are looked at one by one, and
    # split_identifier only runs on the compound ones that are kept.
    counts = Counter(identifier_list(PLACEHOLDER_RE.sub(" ", changed)))
    compound: list[str] = []
    plain: list[str] = []
    for ident in counts:
        if "_" in ident.strip("_") or not (ident.islower() or ident.isupper()):
            compound.append(ident)
        else:
            plain.append(ident)
    for group, is_compound in ((compound, True), (plain, False)):
        group.sort(key=counts.__getitem__, reverse=True)  # stable: ties keep first-seen order
        for ident in group:
            low = ident.lower()
            if low not in seen and low not in _NOISE and not low.isdigit():
                seen.add(low)
                out.append(low)
            if is_compound:
                add_split(ident)
            if len(out) >= cap:
                return " ".join(out[:cap])
    return " ".join(out)


def iter_change_words(
    root: Path, revs: list[str], skip_globs: Iterable[str], denied: Callable[[str], bool] | None = None
) -> Iterator[tuple[str, str]]:
    """(sha, change words) of every commit of REVS, from one streamed `git log -p --unified=0`.

    Files matching SKIP_GLOBS (lock, minified, generated, vendored: the diff source's list) and binary
    files give nothing; merges give nothing (their changes are their parents'). The changed text is
    redacted before it is cut into words, so a secret in a diff never becomes a word; a commit whose
    changed text holds a value the user told `forget` (DENIED says so) gives no words at all.
    """
    globs = list(skip_globs)
    args = ["log", "-p", "--unified=0", *_LOG_STABLE, "--format=%x00NXM%H", *revs, "--"]
    sha: str | None = None
    funcs: list[str] = []
    lines: list[bytes] = []
    size = 0
    in_hunk = False
    keep = False
    path_plus: bytes | None = None
    skipped: dict[bytes, bool] = {}

    def finish() -> tuple[str, str] | None:
        if sha is None:
            return None
        if not funcs and not lines:
            return sha, ""
        # One redact() call per commit over the hunk headers and the changed lines together.
        text = "\n".join(funcs) + "\n\x1e\n" + _text(b"".join(lines))
        if denied is not None and denied(text):
            return sha, ""
        text = redact(text)
        head, _, body = text.partition("\n\x1e\n")
        return sha, change_words(head.splitlines(), body)

    for line in gitcmd.stream(args, root):
        if in_hunk and line:
            first = line[0]
            if first == 0x2B or first == 0x2D:  # '+' / '-'
                if keep and size < _MAX_CHANGE_BYTES and len(line) <= _MAX_LINE_BYTES:
                    lines.append(line[1:])
                    size += len(line)
                continue
            if first == 0x5C:  # "\ No newline at end of file"
                continue
            if first == 0x40:  # '@@ -a,b +c,d @@ context'
                if keep:
                    ctx = line.split(b"@@", 2)
                    if len(ctx) == 3 and ctx[2].strip():
                        funcs.append(_text(ctx[2].strip()))
                continue
        if line.startswith(b"\0" + _TAG):
            done = finish()
            if done is not None:
                yield done
            raw = line[1 + len(_TAG) :].strip()
            sha = raw.decode("ascii") if _HEX.match(raw) else None
            funcs, lines, size, in_hunk, keep = [], [], 0, False, False
            continue
        if line.startswith(b"diff --git "):
            in_hunk, keep, path_plus = False, False, None
            continue
        if line.startswith(b"+++ "):
            path_plus = _label_path(line[4:], b"b/")
            continue
        if line.startswith(b"--- "):
            minus = _label_path(line[4:], b"a/")
            path_plus = path_plus if path_plus is not None else minus
            continue
        if line.startswith(b"@@"):
            in_hunk = True
            if path_plus is None:
                keep = False
            elif path_plus in skipped:
                keep = not skipped[path_plus]
            else:
                path = _text(path_plus)
                keep = bool(path) and not _matches_any(path, globs)
                if len(skipped) < 100_000:  # paths recur across commits: match each one once
                    skipped[path_plus] = not keep
            if keep:
                ctx = line.split(b"@@", 2)
                if len(ctx) == 3 and ctx[2].strip():
                    funcs.append(_text(ctx[2].strip()))
    done = finish()
    if done is not None:
        yield done


class ChangeWords:
    """Change words looked up by sha while the commit stream runs: both `git log`s walk the same revisions
    in the same order, so this reads ahead only as far as the commit asked for (a dict holds any
    stragglers should the orders ever differ)."""

    def __init__(self, stream: Iterator[tuple[str, str]]) -> None:
        self._stream = stream
        self._ahead: dict[str, str] = {}
        self._done = False

    def of(self, sha: str) -> str:
        if sha in self._ahead:
            return self._ahead.pop(sha)
        while not self._done:
            try:
                got, words = next(self._stream)
            except StopIteration:
                self._done = True
                break
            if got == sha:
                return words
            self._ahead[got] = words
        return ""

    def close(self) -> None:
        close = getattr(self._stream, "close", None)
        if close is not None:
            close()


# --------------------------------------------------------------------------------------------------------
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
        "old",
        "parts",
        "plus",
        "started",
    )

    def __init__(self) -> None:
        self.minus: bytes | None = None
        self.plus: bytes | None = None
        self.old: bytes | None = None
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
            text = _text(line)
            self.parts.append(text)
            self.kept += len(text)
        else:
            self.extra += len(line)

    def body(self, limit: int) -> tuple[str, bool]:
        return truncate(redact("".join(self.parts).rstrip("\n")), limit, self.extra)


@dataclass
class DiffStats:
    """Counters of one diff scan (what was passed over, and why)."""

    merges: int = 0
    binary: int = 0
    skipped_glob: int = 0
    over_cap: int = 0

    @property
    def total(self) -> int:
        return self.merges + self.binary + self.skipped_glob + self.over_cap


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
            path = _text(raw_path)
            old_path = _text(p.old) if p.old is not None else None
            body, truncated = p.body(limit)
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
                title=f"{path} @ {header.sha[:7]} — {subject}",
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
    for line in gitcmd.stream(args, ctx.root) if lines is None else lines:
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
                path = _text(raw) if raw is not None else ""
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
        elif line.startswith((b"Binary files ", b"GIT binary patch")) and len(header.parents) <= 1:
            stats.binary += 1
    close_patch()
    yield from finish_commit()


class DiffSource:
    """code_diff nodes: one per changed file of each non-merge commit (a newest window, then increments)."""

    name = "diff"
    kinds: tuple[str, ...] = ("code_diff",)

    def enabled(self, config: dict[str, Any]) -> bool:
        """On unless sources.diff.enabled is false."""
        return bool(_setting(config, "sources.diff.enabled"))

    def scan(self, ctx: ScanContext) -> ScanResult:
        """First sync (or rewritten history): the newest `initialCommits` commits; later: prevHEAD..HEAD."""
        plan, result = _start_scan(ctx, sha_of_key=lambda key: key.split(":", 1)[0])
        if plan is None:
            return result
        revs = plan.revs
        if revs is not None and plan.full:
            window = int(_setting(ctx.config, "sources.diff.initialCommits"))
            revs = [*revs, f"--max-count={window}"] if window > 0 else None
        result.nodes = self._nodes(ctx, revs, result)
        return result

    def _nodes(self, ctx: ScanContext, revs: list[str] | None, result: ScanResult) -> Iterator[Node]:
        if revs is None:
            return
        stats = DiffStats()
        done = 0
        try:
            for node in iter_diff_nodes(ctx, self.name, revs, stats):
                yield node
                done += 1
                if done % 1000 == 0:
                    ctx.progress("diff", done, None)
        finally:
            # Set while the generator runs to its end, before the sync reads it.
            result.skipped = stats.total
        ctx.progress("diff", done, done)
