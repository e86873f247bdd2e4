"""A small thesaurus of software symptoms: the words users say about a problem, next to the words
commits use for the same problem.

People ask in symptom language ("it freezes when I pipe into head", "the option is ignored"); commits
name the mechanism ("fix deadlock in the reader", "respect --foo"). Each group below holds words that
describe one kind of symptom or cause. A question word found in a group brings the group's other words
into a second, low-weight BM25 query (see `expand` and retrieve.query), so a commit that says "deadlock"
can be found by "hangs" without a word of the question reaching it.

The groups were written from general knowledge of how bugs are reported and fixed, before the labelled
questions' target commits were read, and hold no project's vocabulary: only words that mean the same
kind of failure in any codebase. Words are matched after a light suffix strip (see `_forms`), so "hangs"
and "hanging" reach the "hang" group.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable

GROUPS: tuple[tuple[str, ...], ...] = (
    # a program that stops making progress
    (
        "freeze",
        "frozen",
        "hang",
        "hung",
        "stuck",
        "deadlock",
        "livelock",
        "unresponsive",
        "block",
        "blocked",
        "forever",
        "timeout",
        "wait",
        "never",
    ),
    # a program that dies
    (
        "crash",
        "panic",
        "segfault",
        "abort",
        "fatal",
        "die",
        "died",
        "killed",
        "unwrap",
        "exception",
        "traceback",
        "sigsegv",
        "overflow",
    ),
    # slowness
    (
        "slow",
        "slowness",
        "sluggish",
        "performance",
        "perf",
        "latency",
        "lag",
        "speed",
        "quadratic",
        "expensive",
        "faster",
        "cpu",
    ),
    # resources not given back
    (
        "leak",
        "leaking",
        "exhaust",
        "exhausted",
        "unbounded",
        "grow",
        "reap",
        "zombie",
        "defunct",
        "orphan",
        "close",
        "cleanup",
        "release",
        "dispose",
    ),
    # a setting or input that has no effect
    (
        "ignore",
        "ignored",
        "respect",
        "honor",
        "honour",
        "obey",
        "override",
        "overridden",
        "disregard",
        "effect",
        "apply",
        "applied",
    ),
    # wrong results
    ("wrong", "incorrect", "invalid", "bogus", "broken", "mismatch", "inconsistent", "unexpected"),
    # things happening more than once
    ("twice", "duplicate", "duplicated", "double", "repeated", "again", "multiple"),
    # things that go missing
    (
        "missing",
        "lost",
        "lose",
        "drop",
        "dropped",
        "disappear",
        "vanish",
        "omit",
        "omitted",
        "swallow",
        "discard",
        "discarded",
        "empty",
        "blank",
        "truncate",
        "truncated",
        "clobber",
        "overwrite",
    ),
    # text that comes out mangled
    (
        "garbled",
        "mojibake",
        "encoding",
        "encode",
        "decode",
        "charset",
        "unicode",
        "utf8",
        "escape",
        "unescape",
        "quote",
        "unquote",
        "percent",
    ),
    # pipes and output streams
    ("pipe", "piped", "epipe", "stdin", "stdout", "stderr", "tty", "terminal", "isatty"),
    # connections
    ("connection", "socket", "reset", "refused", "disconnect", "hangup", "econnreset", "aborted", "closed"),
    # more than one thing at once
    (
        "race",
        "concurrent",
        "concurrency",
        "parallel",
        "thread",
        "threads",
        "goroutine",
        "goroutines",
        "mutex",
        "lock",
        "sync",
        "atomic",
    ),
    # loops that never end
    ("infinite", "loop", "recursion", "recursive", "cycle", "circular", "endless", "stack"),
    # access refused
    ("denied", "permission", "forbidden", "unauthorized", "credentials", "auth", "authorization"),
    # warnings and noise
    ("warn", "warning", "deprecate", "deprecated", "deprecation", "nag", "noisy", "spam", "verbose"),
    # colours on a terminal
    ("color", "colour", "colors", "colours", "ansi", "unreadable", "contrast", "theme"),
    # line endings and byte-order marks
    ("bom", "crlf", "newline", "newlines", "carriage", "eol"),
    # shell completion
    ("completion", "complete", "completions", "suggestion", "suggestions", "autocomplete", "tab"),
    # where a request is sent next
    ("redirect", "redirects", "redirected", "location", "forward", "forwarded"),
    # text shown for --help
    ("usage", "help"),
)

# Expansion words per question: beyond this a question's expansions say more about the thesaurus than
# about the question.
MAX_EXPANSIONS = 24


def _forms(word: str) -> list[str]:
    """WORD and the bases it may be an inflection of: "hangs", "hanging" → "hang"; "freezes" → "freeze";
    "crashes" → "crash"; "stopped" → "stop". Over-generates; only forms in a group count."""
    w = word.lower()
    out = [w]
    if w.endswith("s") and len(w) > 3:
        out += [w[:-1], w[:-2]]
    if w.endswith("ed") and len(w) > 4:
        out += [w[:-1], w[:-2], w[:-3]]
    if w.endswith("ing") and len(w) > 5:
        out += [w[:-3], w[:-3] + "e", w[:-4]]
    return out


_INDEX: dict[str, int] = {}
for _number, _group in enumerate(GROUPS):
    for _word in _group:
        _INDEX.setdefault(_word, _number)


def _group_of(word: str) -> int | None:
    return next((_INDEX[f] for f in _forms(word) if f in _INDEX), None)


def expand(words: Iterable[str], limit: int = MAX_EXPANSIONS) -> list[str]:
    """The thesaurus words that WORDS (a question's terms) bring in, without WORDS themselves, in
    question order, at most LIMIT."""
    given = list(words)
    seen = {form for w in given for form in _forms(w)}
    lists: list[list[str]] = []
    for word in given:
        number = _group_of(word)
        if number is None:
            continue
        lists.append([other for other in GROUPS[number] if other not in seen])
        seen.update(lists[-1])
    # Interleaved, so that past LIMIT every matched group keeps its first (closest) words.
    out = [w for row in itertools.zip_longest(*lists) for w in row if w is not None]
    return out[:limit]
