"""Change words: the identifiers a commit's diff touches, indexed (never shown) with the commit."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

from nexusmem.paths import tracked_name
from nexusmem.redact import PLACEHOLDER_RE, redact
from nexusmem.sources.git.commits import (
    _FORMAT,
    _LOG_STABLE,
    _TAG,
    CommitRecord,
    parse_commit_stream,
    stream_parsed,
)
from nexusmem.sources.git.diff import _label_path, _matches_any
from nexusmem.text import (
    CODE_NOISE,
    content_text,
    identifier_list,
    identifiers,
    is_compound,
    is_noise_word,
    split_identifier,
)

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

# What one identifier adds, remembered across commits: a repository's names recur in commit after commit
# (an identifier of a commit's changed lines had been seen in an earlier commit 99 times in 100 on the
# generated 10k-commit history, 9 in 10 on zod and httpx; a hunk's function 7-8 times in 10), and
# lower-casing, classifying and splitting each anew was ~40% of change_words' time (cProfile, zod). Bounded:
# at most this many entries per memory (~6 MB of compound names) before it starts over; zod has 15,540.
_MEMO_MAX = 20_000
_CHANGED: dict[str, tuple[bool, tuple[str, ...]]] = {}  # identifier → (compound, the words it adds)
_FUNCS: dict[str, tuple[str, ...]] = {}  # hunk-header function context → the words it adds


def _changed_words(ident: str) -> tuple[bool, tuple[str, ...]]:
    """An identifier of the changed lines (3-40 characters): whether it is compound, and its words in order:
    itself lower-cased unless it is noise, then its non-noise parts when it is compound."""
    low = ident.lower()
    compound = is_compound(ident)
    words = [low] if low not in CODE_NOISE and not low.isdigit() else []
    if compound:
        words.extend(word for word in split_identifier(ident) if not is_noise_word(word))
    if len(_CHANGED) >= _MEMO_MAX:
        _CHANGED.clear()
    facts = _CHANGED[ident] = (compound, tuple(words))
    return facts


def _func_words(func: str) -> tuple[str, ...]:
    """A hunk header's function context: each identifier lower-cased, then its parts, noise left out."""
    words: list[str] = []
    for ident in identifiers(PLACEHOLDER_RE.sub(" ", func)):
        low = ident.lower()
        if not is_noise_word(low):
            words.append(low)
        words.extend(word for word in split_identifier(ident) if not is_noise_word(word))
    if len(_FUNCS) >= _MEMO_MAX:
        _FUNCS.clear()
    found = _FUNCS[func] = tuple(words)
    return found


# A name the change defines: a definition keyword (after any modifiers) and the name, at a line's start.
# Covers def/class (Python, Ruby), function (JS, PHP), fn/struct/enum/trait/const/static/mod (Rust), func
# with or without a receiver (Go), type/interface/let/var/const (TS, Go, Swift, Kotlin), module, object.
_DEFINES = re.compile(
    rb"^[ \t]*(?:(?:export|default|pub(?:\([^)\n]*\))?|async|static|public|private|protected|abstract|final"
    rb"|override|unsafe|readonly|declare|internal|open|inline|extern|sealed|data|suspend)[ \t]+)*"
    rb"(?:def|class|function\*?|fn|func(?:[ \t]*\([^)\n]*\))?|struct|enum|trait|interface|type|const|let|var"
    rb"|module|mod|object|record|macro_rules!|defn|defmacro)[ \t]+(?:self\.)?\*?([A-Za-z_$][\w$]{2,39})"
    # A module-level assignment (Python, Ruby constants): a name in column 0, then = (not ==).
    rb"|^([A-Za-z_][A-Za-z0-9_]{2,39})[ \t]*(?::[^=\n]{1,80})?=(?!=)",
    re.MULTILINE,
)

# Names defined per commit that go ahead of every other change word (a new module defines dozens: the
# first ones are kept, definitions by keyword before module-level assignments).
MAX_DEFINED = 40


def defined_names(added: bytes, removed: bytes) -> list[str]:
    """Names the ADDED lines define and the REMOVED lines did not (a moved or re-indented definition is no
    new name): those defined by a keyword in order of appearance, then those assigned in column 0; at most
    MAX_DEFINED."""
    gone = {a or b for a, b in _DEFINES.findall(removed)} if removed else set()
    keyword: dict[bytes, None] = {}
    assigned: dict[bytes, None] = {}
    for a, b in _DEFINES.findall(added):
        if a and a not in gone:
            keyword[a] = None
        elif b and b not in gone:
            assigned[b] = None
    names = list(keyword) + [name for name in assigned if name not in keyword]
    return [content_text(name) for name in names[:MAX_DEFINED]]


def change_words(
    funcs: Iterable[str], changed: str, cap: int = MAX_CHANGE_WORDS, defined: Iterable[str] = ()
) -> str:
    """The change words of one commit: distinct lower-cased words, most informative first, at most CAP.

    DEFINED are the names the change brings in (defined_names): asked about most ("what is
    _get_trash_file for?", "when was isStream added?"), they come first, whatever the size of the change.
    FUNCS are the hunk headers' function contexts (where the change is), CHANGED the added and removed
    lines. Order: names from the hunk headers; then identifiers of the changed lines that are compound
    (snake_case, camelCase, with digits: specific to this code), most frequent first; then the plain words
    (comments and short names), most frequent first. A compound identifier is kept whole *and* split
    ("parseHeaders" → parseheaders, parse, headers) so both the name and its words find the commit.
    """
    sequence: list[str] = []
    if "«" in changed:  # a placeholder's words ("redacted", its kind) are not the change's
        changed = PLACEHOLDER_RE.sub(" ", changed)
    counts = Counter(identifier_list(changed))
    for name in defined:
        if name in counts:  # still there after redaction
            facts = _CHANGED.get(name)
            sequence.extend(facts[1] if facts is not None else _changed_words(name)[1])
    for func in funcs:
        found = _FUNCS.get(func)
        sequence.extend(found if found is not None else _func_words(func))
    # Counter, the stable sort by count and dict.fromkeys (first occurrence wins) run in C; Python only
    # looks up each distinct identifier's remembered words.
    plain: list[tuple[str, ...]] = []
    for ident in sorted(counts, key=counts.__getitem__, reverse=True):  # stable: ties keep first-seen order
        facts = _CHANGED.get(ident)
        compound, words = facts if facts is not None else _changed_words(ident)
        if compound:
            sequence.extend(words)
        else:
            plain.append(words)
    for words in plain:
        sequence.extend(words)
    return " ".join(list(dict.fromkeys(sequence))[:cap])


# First bytes of a line git's default funcname rule takes as a function header (xdiff's def_ff: a letter,
# '_' or '$' in column 0), and the bytes of such a line it shows in a hunk header.
_FUNC_FIRST = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_$")
_FUNC_BYTES = 80


def _func_of(line: bytes) -> str:
    """What git's hunk header would show for the pre-image line LINE (prefix included): its first 80 bytes
    less trailing whitespace."""
    return content_text(line[1 : 1 + _FUNC_BYTES].strip())


class _PatchWords:
    """What one commit's patch gives for its change words, read line by line: the added and removed lines of
    files the skip globs let through, and the function each run of changed lines is in.

    The patch has one line of context (-U1): its numstat is then git's usual one (with -U0 git trims the
    files' common tail before diffing, which can align a few lines differently). The function of a run is
    what a -U0 hunk header would name for it: the nearest line above the run that git's default funcname
    rule takes (a letter, '_' or '$' in column 0), searched among the hunk's pre-image lines (context and
    removed) and, above the hunk, given by the hunk's own header (git searched from there on up).
    """

    __slots__ = (
        "_globs",
        "_skipped",
        "above",
        "added",
        "changed",
        "funcs",
        "header_func",
        "in_hunk",
        "in_run",
        "keep",
        "path_plus",
        "removed",
        "size",
    )

    def __init__(self, globs: list[str]) -> None:
        self._globs = globs
        self._skipped: dict[bytes, bool] = {}  # paths recur across commits: each is matched once
        self.reset()

    def reset(self) -> None:
        self.funcs: list[str] = []
        self.changed: list[bytes] = []
        self.added: list[bytes] = []  # CHANGED split by sign: where a definition is new or gone
        self.removed: list[bytes] = []
        self.size = 0
        self.in_hunk = False
        self.keep = False
        self.path_plus: bytes | None = None
        self.header_func = ""
        self.above: bytes | None = None  # the nearest function line above, in this hunk
        self.in_run = False

    def start_run(self) -> None:
        """A run of changed lines begins (in a kept file): note the function it is in."""
        self.in_run = True
        func = _func_of(self.above) if self.above is not None else self.header_func
        if func:
            self.funcs.append(func)

    def other(self, line: bytes) -> None:
        """A patch line that is not an added, removed or context line inside a hunk (the caller takes those)."""
        if self.in_hunk and line:
            first = line[0]
            if first == 0x5C:  # "\ No newline at end of file"
                return
            if first == 0x40:  # '@@ -a,b +c,d @@ context'
                self._hunk(line)
                return
        if line.startswith(b"diff --git "):
            self.in_hunk, self.keep, self.path_plus = False, False, None
        elif line.startswith(b"+++ "):
            self.path_plus = _label_path(line[4:], b"b/")
        elif line.startswith(b"--- "):
            minus = _label_path(line[4:], b"a/")
            self.path_plus = self.path_plus if self.path_plus is not None else minus
        elif line.startswith(b"@@"):
            self.in_hunk = True
            path_plus = self.path_plus
            if path_plus is None:
                self.keep = False
            elif path_plus in self._skipped:
                self.keep = not self._skipped[path_plus]
            else:
                path = tracked_name(path_plus)
                self.keep = bool(path) and not _matches_any(path, self._globs)
                if len(self._skipped) < 100_000:
                    self._skipped[path_plus] = not self.keep
            self._hunk(line)

    def _hunk(self, line: bytes) -> None:
        self.above, self.in_run = None, False
        if self.keep:
            ctx = line.split(b"@@", 2)
            self.header_func = content_text(ctx[2].strip()) if len(ctx) == 3 else ""

    def words(self, denied: Callable[[str], bool] | None) -> str:
        if not self.funcs and not self.changed:
            return ""
        # One redact() call per commit over the hunk headers and the changed lines together.
        text = "\n".join(self.funcs) + "\n\x1e\n" + content_text(b"".join(self.changed))
        if denied is not None and denied(text):
            return ""
        text = redact(text)
        head, _, body = text.partition("\n\x1e\n")
        defined: list[str] = []
        if self.added:
            defined = defined_names(b"".join(self.added), b"".join(self.removed))
        return change_words(head.splitlines(), body, defined=defined)


_HEADER = b"\0" + _TAG


def _record(block: bytes) -> CommitRecord | None:
    """The commit of one header-and-numstat block (the commit stream's parser, fuzzed on its own)."""
    return next(parse_commit_stream((block,)), None)


def iter_commits_with_words(
    root: Path, revs: list[str], skip_globs: Iterable[str], denied: Callable[[str], bool] | None = None
) -> Iterator[tuple[CommitRecord, str]]:
    """Every commit of REVS with its numstat (and its files' mode changes) and its change words, from ONE
    streamed `git log -z -p --raw --numstat --unified=1`.

    One pass instead of a numstat walk beside a patch walk: git reads each commit's trees and blobs once
    (on the generated 10k-commit history: 3.4 s of git CPU, against 2.2 + 2.5 s for two processes; even on
    a history of large lock-file diffs, which git diffs twice either way), and Python reads one stream.
    Files matching SKIP_GLOBS (lock, minified, generated, vendored: the diff source's list) and binary files
    give no words; merges give none (their changes are their parents').
    The changed text is redacted before it is cut into words, so a secret in a diff never becomes a word; a
    commit whose changed text holds a value the user told `forget` (DENIED says so) gives no words at all.
    """
    args = ["log", "-z", "-p", "--raw", "--numstat", "--unified=1", *_LOG_STABLE, _FORMAT, *revs, "--"]
    return stream_parsed(args, root, lambda lines: parse_commit_words_stream(lines, skip_globs, denied))


def parse_commit_words_stream(
    lines: Iterable[bytes], skip_globs: Iterable[str], denied: Callable[[str], bool] | None = None
) -> Iterator[tuple[CommitRecord, str]]:
    """(record, change words) of every commit in the LINES (newline kept) of iter_commits_with_words' log.

    Each commit is `\\0NXM<header>%B\\0`, then, when it changed any file, `\\n`, its raw and numstat entries
    (each NUL-terminated, -z: paths unquoted), one more NUL, and its patch lines up to the next `\\0NXM` at the
    start of a line; a commit that changed nothing (a merge, an empty commit) is followed at once by the
    next header. The message holds no NUL, so the first NUL after the header ends it, and the first "\\0\\0"
    after that ends the numstat. Anything else is passed over: garbage never stops the commits after it
    (fuzzed in tests/test_fuzz.py).
    """
    patch = _PatchWords(list(skip_globs))
    rec: CommitRecord | None = None  # the commit whose patch is being read
    block: list[bytes] | None = None  # a commit's header and numstat, until they are complete
    for line in lines:
        if block is None:
            # Almost every line is an added, removed or context line of a hunk: take it, do nothing else.
            if patch.in_hunk and line:
                first = line[0]
                if first == 0x2B or first == 0x2D:  # '+' / '-'
                    if patch.keep:
                        if not patch.in_run:
                            patch.start_run()
                        if first == 0x2D and len(line) > 1 and line[1] in _FUNC_FIRST:
                            patch.above = line  # a pre-image line: above the runs after it
                        if patch.size < _MAX_CHANGE_BYTES and len(line) <= _MAX_LINE_BYTES:
                            body = line[1:]
                            patch.changed.append(body)
                            (patch.added if first == 0x2B else patch.removed).append(body)
                            patch.size += len(line)
                    continue
                if first == 0x20:  # ' ': context, a pre-image line
                    if patch.keep:
                        patch.in_run = False
                        if len(line) > 1 and line[1] in _FUNC_FIRST:
                            patch.above = line
                    continue
            if not line.startswith(_HEADER):
                # A patch line never starts with a NUL: one that does is framing, a header after garbage.
                at = line.find(_HEADER) if line[:1] == b"\0" else -1
                if at < 0:
                    if rec is not None:
                        patch.other(line)
                    continue
                line = line[at:]
            if rec is not None:
                yield rec, patch.words(denied)
                rec = None
            block = [line]
        else:
            block.append(line)
            if b"\0" not in line:
                # Every end this waits for (the message's, the numstat's) is a NUL: a line without one
                # cannot complete it, so the block is not joined and searched again (a 1.7 MB message of
                # 24,000 lines took 9 s that way, quadratic).
                continue
        while block is not None:
            data = block[0] if len(block) == 1 else b"".join(block)
            end = data.find(b"\0", 1)  # after the message
            if end < 0 or end + 1 >= len(data):
                break  # a multi-line message: more lines to come
            if data[end + 1] == 0:  # nothing changed: the next header follows at once
                done = _record(data[: end + 1])
                if done is not None:
                    yield done, ""
                rest = data[end + 1 :]
                block = [rest] if rest.startswith(_HEADER) else None
                continue
            stop = data.find(b"\0\0", end + 1)
            if stop < 0:
                break  # a path with a newline in the numstat: more lines to come
            if data.startswith(_TAG, stop + 2):  # no patch but a header glued on: garbage in the numstat
                done = _record(data[: stop + 1])
                if done is not None:
                    yield done, ""
                block = [data[stop + 1 :]]
                continue
            rec = _record(data[: stop + 2])
            patch.reset()
            block = None
            rest = data[stop + 2 :]
            if rest and rec is not None:
                patch.other(rest)  # the patch's first line, "diff --git ..."
    if block is not None:  # the stream ended inside a header: what can be read of it
        done = _record(b"".join(block))
        if done is not None:
            yield done, ""
    if rec is not None:
        yield rec, patch.words(denied)
