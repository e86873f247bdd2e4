"""Change words: the identifiers a commit's diff touches, indexed (never shown) with the commit."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

from nexusmem import gitcmd
from nexusmem.redact import PLACEHOLDER_RE, redact
from nexusmem.sources.git.commits import _LOG_STABLE, _TAG, _text
from nexusmem.sources.git.diff import _label_path, _matches_any
from nexusmem.sources.git.repo import _HEX
from nexusmem.text import STOPWORDS, identifier_list, identifiers, split_identifier

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
