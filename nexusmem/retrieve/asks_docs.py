"""How likely a question's answer is a section of the docs rather than a change: a score learned from the
labelled questions, which the learned last step (retrieve.rerank, feature "asks_docs") weighs for each doc
section it may move.

intent.intent reads "how do I…", "is there a way…" as a usage question, and a question both kinds of
pattern or neither match as neutral. Many questions the docs answer are asked without those words: "which
response will it hand back if two stubs match the same URL?", "what does the library build on?". The
score is a logistic regression over the question's words, its adjacent word pairs and what intent reads
in it (usage, history, a failure, a code name), fitted by `benchmarks/learn_asks_docs.py` on whether each
labelled question's answers include a doc section. Only words and pairs that questions about at least three
different repositories hold are weighed, so no project's own vocabulary is. The table is one feature a line
with its weight (LEARNED_FILE, the bias under BIAS), read once a process.
"""

from __future__ import annotations

import bisect
import functools
import itertools
import re
from collections.abc import Iterator, Mapping
from pathlib import Path

from nexusmem.retrieve import intent

LEARNED_FILE = Path(__file__).with_name("learned_asks_docs.txt")
BIAS = "@bias"
# The score is the regression's log-odds, bounded: beyond this a question's words say nothing more.
LIMIT = 6.0
_WORD = re.compile(r"[a-z][a-z']+")


def features(text: str) -> set[str]:
    """What the regression reads in TEXT: its lower-cased words (letters and apostrophes, two or more), each
    adjacent pair of them joined by '_', and '@usage' / '@history' (intent.intent), '@failure'
    (intent.reports_failure), '@code' (intent.names_code)."""
    words = _WORD.findall(text.lower())
    found = set(words)
    found.update(f"{a}_{b}" for a, b in itertools.pairwise(words))
    asks = intent.intent(text)
    if asks != "neutral":
        found.add(f"@{asks}")
    if intent.reports_failure(text):
        found.add("@failure")
    if intent.names_code(text):
        found.add("@code")
    return found


def score(text: str, weights: Mapping[str, float] | None = None) -> float:
    """The log-odds that TEXT's answer is a doc section, within ±LIMIT; 0 when no table could be read.
    WEIGHTS: a table to use instead of the shipped one (the learner's held-out folds)."""
    table = learned() if weights is None else weights
    if not table:
        return 0.0
    value = table.get(BIAS, 0.0) + sum(table.get(f, 0.0) for f in features(text))
    return max(-LIMIT, min(LIMIT, value))


@functools.cache
def learned() -> Mapping[str, float]:
    """LEARNED_FILE's weights by feature, read once a process; empty when it cannot be read (the step then
    reads every question alike)."""
    try:
        text = LEARNED_FILE.read_text(encoding="utf-8")
    except OSError:
        return {}
    return Sorted(text)


class Sorted(Mapping[str, float]):
    """A table as LEARNED_FILE holds it, its lines sorted, looked up by bisection: a question reads a few
    dozen of its 7,000 weights, and parsing them all takes ~1.8 ms of a cold query (this, ~0.4 ms). A line that is not 'feature weight' counts as no weight."""

    def __init__(self, text: str) -> None:
        self._lines = sorted(text.splitlines())

    def _at(self, feature: str) -> str | None:
        key = feature + " "
        i = bisect.bisect_left(self._lines, key)
        if i < len(self._lines) and self._lines[i].startswith(key):
            return self._lines[i][len(key) :]
        return None

    def __getitem__(self, feature: str) -> float:
        found = self._at(feature)
        if found is None:
            raise KeyError(feature)
        try:
            return float(found)
        except ValueError:
            raise KeyError(feature) from None

    def __iter__(self) -> Iterator[str]:
        return iter(parse("\n".join(self._lines)))

    def __len__(self) -> int:
        return len(self._lines)


def parse(text: str) -> dict[str, float]:
    """A table as LEARNED_FILE holds it ('feature weight' a line); a line that is not one is passed over."""
    table: dict[str, float] = {}
    for line in text.splitlines():
        feature, _, weight = line.partition(" ")
        try:
            table[feature] = float(weight)
        except ValueError:
            continue
    return table


def dump(table: dict[str, float]) -> str:
    """TABLE as LEARNED_FILE holds it: one 'feature weight' a line, in the order Sorted looks them up in."""
    return "".join(f"{f} {table[f]:.4g}\n" for f in sorted(table))
