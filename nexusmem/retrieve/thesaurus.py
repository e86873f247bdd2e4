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

Beside the groups, each question word may bring a few kin learned from labelled questions about public
repositories (LEARNED_KIN_FILE, made by benchmarks/learn_kin.py): the words of the answers' commit
messages that the question word brings far more often than those messages hold them, in questions about
at least three different repositories, so that a pair is what users and commits of any project say for
one thing ("folder" → "directory", "codec" → "encoding", "forever" → "deadlock"), never a project's own
name for something.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from functools import cache
from pathlib import Path

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

# One question word a line, then its kin with their strength, strongest first: "folder directory:51.22
# dir:35.33 …" (benchmarks/learn_kin.py). Read as text, and a line parsed only for a word a question holds:
# JSON of the same took 2-10 ms to load, a cold query's budget.
LEARNED_KIN_FILE = Path(__file__).with_name("learned_kin.txt")
# The words the shell source writes into every command's text (sources/shell/node.py: its title's "(exit
# N)", its context's "[cwd … · exit N"): a search for one of them matches every recorded command. Kept here
# (that module is slow to import for a cold query); tests/test_retrieval_intent.py checks them.
RECORDED_WORDS = frozenset({"cwd", "exit", "unknown"})
# Learned kin per question, the strongest of all its words' kin: held out by set over 88 labelled sets
# (each fifth of the sets ranked with the kin learned from the other four; docs/evaluation.md, fifty-ninth
# wave), hybrid MRR / R@5 .7147 / .8345 without, .7178 / .8373 with four (symptom .538 → .545), .7168 /
# .8361 with two, .7163 / .8376 with eight learned from titles alone.
LEARNED_KIN = 4


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


def expand(words: Iterable[str], *, kin: bool = True) -> list[str]:
    """The words that WORDS (a question's terms) bring in, without WORDS themselves: their groups' words
    (`grouped`), then, with KIN, the strongest of their learned kin (`learned`) that no group brought."""
    given = list(words)
    out = grouped(given)
    if not kin:
        return out
    return out + learned(given, {form for w in given for form in _forms(w)} | set(out))


def grouped(words: Iterable[str], limit: int = MAX_EXPANSIONS) -> list[str]:
    """The words of the groups that WORDS (a question's terms) reach, without WORDS themselves, in
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
    return [w for row in itertools.zip_longest(*lists) for w in row if w is not None][:limit]


def learned(words: Iterable[str], seen: set[str], limit: int = LEARNED_KIN) -> list[str]:
    """The LIMIT strongest learned kin of WORDS (a question's terms) that are not in SEEN. Never a word every
    recorded command holds (RECORDED_WORDS: "echo" brings "exit", learned from commit messages, and would
    match every command)."""
    strongest = _kin_of(words, seen)
    return sorted(strongest, key=lambda w: (-strongest[w], w))[:limit]


def kin_strengths(words: Iterable[str]) -> dict[str, float]:
    """Every learned kin of WORDS (a question's terms) but their own forms, with its strength (the strongest
    of the words that bring it): what the learned last step weighs in a message (retrieve.rerank "kin")."""
    given = list(words)
    return _kin_of(given, {form for w in given for form in _forms(w)})


def _kin_of(words: Iterable[str], seen: set[str]) -> dict[str, float]:
    """The learned kin of WORDS not in SEEN nor recorded words, each with the strongest strength a word gives."""
    table = learned_kin()
    strongest: dict[str, float] = {}
    for word in words:
        for pair in table.get(word.lower(), "").split():
            other, _, strength = pair.partition(":")
            try:
                value = float(strength)
            except ValueError:
                continue
            if other not in seen and other not in RECORDED_WORDS and value > strongest.get(other, 0.0):
                strongest[other] = value
    return strongest


@cache
def learned_kin() -> dict[str, str]:
    """LEARNED_KIN_FILE's lines by their word, unparsed, read once a process; empty when it cannot be read
    (the groups still answer)."""
    try:
        text = LEARNED_KIN_FILE.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return {}
    return {word: rest for word, _, rest in (line.partition(" ") for line in text.splitlines()) if rest}
