"""Words: how text is cut into the terms that are indexed and searched. Ingest and retrieval both use it.

Identifiers are the vocabulary a person remembers about code ("parseHeaders", "max_retries"), and FTS5's
unicode61 tokenizer keeps a camelCase word whole while it splits snake_case at the underscore. So the
change words of a commit carry each camelCase identifier twice: whole ("parseheaders", what a query that
names the identifier matches) and split ("parse", "headers", what a query in plain words matches).
"""

from __future__ import annotations

import codecs
import functools
import re
from collections.abc import Iterator

# Words that match nearly everything: they cost time at 100k nodes and add nothing to BM25.
STOPWORDS = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "been",
        "but",
        "by",
        "can",
        "could",
        "did",
        "do",
        "does",
        "doing",
        "done",
        "for",
        "from",
        "had",
        "has",
        "have",
        "how",
        "i",
        "if",
        "in",
        "into",
        "is",
        "it",
        "its",
        "me",
        "my",
        "no",
        "not",
        "of",
        "on",
        "or",
        "our",
        "so",
        "than",
        "that",
        "the",
        "their",
        "them",
        "then",
        "there",
        "these",
        "they",
        "this",
        "to",
        "too",
        "us",
        "was",
        "we",
        "were",
        "what",
        "when",
        "where",
        "which",
        "while",
        "who",
        "whom",
        "why",
        "will",
        "with",
        "would",
        "you",
        "your",
        "yours",
        "about",
        "after",
        "again",
        "all",
        "am",
        "any",
        "because",
        "before",
        "being",
        "below",
        "between",
        "both",
        "during",
        "each",
        "few",
        "further",
        "here",
        "just",
        "more",
        "most",
        "nor",
        "off",
        "once",
        "only",
        "other",
        "out",
        "over",
        "own",
        "same",
        "should",
        "some",
        "such",
        "through",
        "under",
        "until",
        "up",
        "very",
    ]
)

# The filler of a user's account of a failure: "the task goes completely silent", "it keeps going", "even
# though", "I tried …", "the problem is …". In a question that reports a failure (intent.reports_failure)
# they say nothing about which change it was, and BM25 gives each its full weight when it is rare in the
# project: "completely" or "problems", held by one unrelated commit, outweighed the word that mattered.
# Written from general English, not from the labelled questions. Symptom words ("never", "fails", "hangs",
# "wrong") are not filler: the thesaurus reads them. Thirty-nine labelled sets: .6977 → .6984 (symptom
# .522 → .525); with rank.FAILURE_CODE_VECTOR_FACTOR .6993 (docs/evaluation.md, twenty-second wave).
# "work", "working" ("it is not working", "stopped working") say as little; added with `informative`, they
# changed none of fresh65's or the four recent-work sets' figures.
_FILLER = """
    even still really actually completely totally entirely simply basically literally suddenly apparently
    obviously somehow anyway anymore instead rather though although whether without within otherwise quite
    pretty fairly goes going gone went keeps keep kept seems seem seemed seeing saw see sees look looks looked
    looking happens happen happened happening getting got gets get gotten make makes made making thing things
    stuff something anything everything someone anyone everyone somewhere anywhere everywhere problem problems
    trouble want wants wanted need needs needed tried try trying tries say says said tell tells told right away
    soon later already yet ever okay ok fine nice good bad great weird strange odd guess think thought know knew
    lot lots bit bunch kind sort work works worked working
"""
FILLER_WORDS = frozenset(_FILLER.split())

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

# Words no part of a name is worth searching or indexing for: the stopwords and the code words.
CODE_NOISE = STOPWORDS | CODE_WORDS


def is_noise_word(word: str) -> bool:
    """Whether WORD (lower-cased) says nothing about a change: shorter than 3, a number, a stop or code word."""
    return len(word) < 3 or word in CODE_NOISE or word.isdigit()


_TOKEN = re.compile(r"[\w]+", re.UNICODE)
# The runs of letters and digits, an underscore splitting them as the word index does (`max_retries`: max, retries).
_PART = re.compile(r"[^\W_]+")
# Identifier-like runs in code: letters, digits and underscores, starting with a letter or underscore.
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# camelCase / PascalCase / ACRONYMWord boundaries: "parseHTTPResponse" -> parse, HTTP, Response.
_CAMEL = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")


@functools.lru_cache(maxsize=1 << 16)
def word_bases(word: str) -> frozenset[str]:
    """The forms WORD may be an inflection of ("blows" -> blow, "mocked" -> mock, mocke; "stopping" -> stopp,
    stop, stoppe): a light suffix strip, for words of five letters or more (remembered: a shell log's
    commands are read for it thousands of times)."""
    if len(word) < 5:
        return frozenset()
    bases: set[str] = set()
    if word.endswith("s") and not word.endswith("ss"):
        bases |= {word[:-1], word[:-2]} if word.endswith("es") else {word[:-1]}
    for suffix in ("ed", "ing"):
        if word.endswith(suffix):
            stem = word[: -len(suffix)]
            bases |= {stem, stem + "e"}
            if len(stem) > 2 and stem[-1] == stem[-2]:
                bases.add(stem[:-1])  # "stopped" -> stop
    return frozenset(bases)


def words_of(text: str) -> list[str]:
    """The runs of word characters of TEXT (letters, digits, underscores), in order, as written."""
    return _TOKEN.findall(text)


def word_parts(text: str) -> list[str]:
    """The runs of letters and digits of TEXT, in order: split at underscores and punctuation, as the word index
    splits a name (`train_model.py`: train, model, py)."""
    return _PART.findall(text)


def terms(text: str, also: frozenset[str] = frozenset()) -> list[str]:
    """Significant lower-cased words of TEXT, in order, without duplicates; ALSO: more words to leave out."""
    words = [w.lower() for w in _TOKEN.findall(text)]
    kept = [w for w in words if w not in STOPWORDS and w not in also and (len(w) > 1 or not w.isascii())]
    if not kept:
        kept = [w for w in words if len(w) > 1] or words
    return list(dict.fromkeys(kept))


def informative(text: str) -> bool:
    """Whether TEXT has a word that says what it is about: one that is not a stopword, filler (FILLER_WORDS)
    or a single ASCII character ("the of and a", "it is not working" and unreadable bytes have none)."""
    return any(
        w not in STOPWORDS and w not in FILLER_WORDS and (len(w) > 1 or not w.isascii())
        for w in (word.lower() for word in _TOKEN.findall(text))
    )


# Punctuation at either end of a word: "(retry", "retry?", "^retry", "`--pre`," (a word's own inner marks,
# "res.json", "max_retries", and an option's leading dashes stay).
_EDGE_PUNCTUATION = re.compile(r"(?<!\S)[^\w\s$@#/~-]+|(?<=[^\s])[^\w\s$/]+(?!\S)")


def without_edge_punctuation(text: str) -> str:
    """TEXT with the punctuation at either end of each word left out: what a word means does not change with
    the brackets, quotes or question mark around it."""
    return " ".join(_EDGE_PUNCTUATION.sub(" ", text).split())


def split_identifier(word: str) -> list[str]:
    """The lower-cased parts of a camelCase or snake_case identifier ("getHTTPClient" -> get, http,
    client); a plain word gives itself alone."""
    parts: list[str] = []
    for piece in word.split("_"):
        if not piece:
            continue
        if piece.islower() or piece.isupper() or piece.isdigit():
            parts.append(piece.lower())
        else:
            parts.extend(p.lower() for p in _CAMEL.findall(piece))
    return parts


def is_compound(ident: str) -> bool:
    """Whether the identifier IDENT joins several words: snake_case, camelCase, PascalCase."""
    return "_" in ident.strip("_") or not (ident.islower() or ident.isupper())


def identifiers(text: str) -> Iterator[str]:
    """Identifier-like tokens of TEXT (code or prose), in order, as written."""
    return (m.group(0) for m in _IDENT.finditer(text))


# The same, 3 to 40 characters long only: shorter ones are noise, longer ones hashes, base64 and generated
# names. The bounds live in the regex so that the C matcher, not Python, drops them.
_IDENT_3_40 = re.compile(r"\b[A-Za-z_][A-Za-z0-9_]{2,39}\b")


def identifier_list(text: str) -> list[str]:
    """Every identifier-like token of TEXT 3 to 40 characters long, as written (one C-level findall)."""
    return _IDENT_3_40.findall(text)


def well_formed(text: str) -> str:
    """TEXT with each lone surrogate (how Python holds a command-line byte that is not UTF-8, or what a JSON
    \\ud800 escape gives) as U+FFFD: text that SQLite, the tokenizers and a UTF-8 terminal all take."""
    if text.isascii():
        return text
    return text.encode("utf-8", "surrogatepass").decode("utf-8", "replace")


_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def one_line(text: str) -> str:
    """TEXT with each control character spelled as an escape (`\\n`, `\\t`, `\\x1b`): a file name that holds
    a newline stays one entry of a list line or a title."""
    return _CONTROL.sub(lambda m: repr(m.group(0))[1:-1], text)


def _as_cp1252(exc: UnicodeError) -> tuple[str, int]:
    """A codecs error handler: the bytes that are not UTF-8 read as Windows-1252 (Latin-1 but for 0x80-0x9f,
    where it has curly quotes and dashes)."""
    if not isinstance(exc, UnicodeDecodeError):
        raise exc
    return exc.object[exc.start : exc.end].decode("cp1252", "replace"), exc.end


codecs.register_error("nexusmem.cp1252", _as_cp1252)


def content_text(raw: bytes) -> str:
    """The bytes RAW of a file's content as text: UTF-8, and where a byte is not UTF-8 (a Latin-1 or
    Windows-1252 file's "Caf\\xe9") its Windows-1252 character, so that "café" is found. The one reading of a
    file's bytes: the docs and changelog sources (docs.doc_text), the patches and the change words
    (sources/git) all read it so, and so are commit messages and authors without an encoding header
    (sources/git/commits.py); a file's name is not read this way (paths.tracked_name)."""
    return raw.decode("utf-8", "nexusmem.cp1252")
