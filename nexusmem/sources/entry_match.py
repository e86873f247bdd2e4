"""An entry of the release notes that names no commit, matched by its words to a commit of its release.

The changelog source links an entry to the commits it describes by what they share: a number ("#412"), a
commit id, or the commit that wrote the entry's line. Some projects write release notes by hand, without
numbers, in one commit at release time: "Fix a bug with 3600 seconds not working" is then linked to
nothing, and its words never reach the commit "fix the naturaltime off-by-one at one hour".

Such an entry is matched against the messages of the commits made within its release: after the previous
version's tag and up to the tag of the version it is listed under (the "Unreleased" section: after the
newest tag). A commit is the entry's when its message holds at least MIN_SHARED of the entry's words and
SHARE of their weight (inverse document frequency over every commit message), and outweighs the next best
commit of the window by MARGIN. An entry under a version no tag names, or whose release holds no commit
that clears the bar, stays unlinked: a wrong link would lend the entry's words to an unrelated change.

The bar was set on entries that numbers already link (their number's commit is the right answer, and no
evaluation question was read): see docs/evaluation.md.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from nexusmem.sources.git.releases import Release
from nexusmem.text import is_noise_word, terms
from nexusmem.versions import tag_family, version_key

SHARE = 0.5
MIN_SHARED = 2
MARGIN = 1.5

_VERSION = re.compile(r"(?<![\w.])v?(\d+(?:\.\d+){1,3})(?![\w.]*\d)")
_UNRELEASED = re.compile(r"\bunreleased\b|\bupcoming\b|\bnext\b|\bmaster\b|\bmain\b|\bhead\b", re.IGNORECASE)
# Words every release note and every commit message is full of, and link syntax.
_COMMON = frozenset(
    [
        "fix",
        "fixed",
        "fixes",
        "fixing",
        "add",
        "added",
        "adds",
        "adding",
        "bug",
        "bugs",
        "issue",
        "issues",
        "pull",
        "http",
        "https",
        "github",
        "com",
        "www",
        "change",
        "changed",
        "changes",
        "update",
        "updated",
        "updates",
        "remove",
        "removed",
        "support",
        "supported",
        "use",
        "used",
        "now",
        "new",
        "when",
        "where",
        "which",
        "release",
        "version",
        "thanks",
        "contributor",
    ]
)


def words(text: str) -> set[str]:
    """The significant words of TEXT, lightly normalised ("hangs", "hanging" → "hang")."""
    out: set[str] = set()
    for word in terms(text):
        if is_noise_word(word) or word in _COMMON or not word.isalpha():
            continue
        out.add(_norm(word))
    return out


def _norm(word: str) -> str:
    for suffix in ("ing", "ed", "es", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 4:
            return word[: -len(suffix)]
    return word


@dataclass
class Messages:
    """Every commit message's words, as postings: word → commits, with each commit's time."""

    postings: dict[str, list[str]] = field(default_factory=dict)
    times: dict[str, int] = field(default_factory=dict)

    def add(self, sha: str, ts: int, text: str) -> None:
        self.times[sha] = ts
        for word in words(text):
            self.postings.setdefault(word, []).append(sha)

    def idf(self, word: str) -> float:
        return math.log(1 + len(self.times) / (1 + len(self.postings.get(word, ()))))


def windows(tags: Iterable[Release]) -> dict[tuple[int, ...], tuple[int, int]]:
    """Version → (the previous version tag's time, its own tag's time], over the project's own tags (those
    with no prefix but "v"; every tag when it has none), in time order; () stands for "after the newest"."""
    tags = list(tags)
    own = [t for t in tags if tag_family(t.name, t.version) == ""] or tags
    own.sort(key=lambda t: t.ts)
    out: dict[tuple[int, ...], tuple[int, int]] = {}
    previous = 0
    for tag in own:
        out.setdefault(version_key(tag.version), (previous, tag.ts))
        previous = tag.ts
    out[()] = (previous, 2**62)
    return out


def window_of(heading: str, spans: dict[tuple[int, ...], tuple[int, int]]) -> tuple[int, int] | None:
    """The time window of the release a changelog HEADING names ("1.2.0 (2024-01-02)", "[v2.1]",
    "Unreleased"); None when no tag names it."""
    found = _VERSION.search(heading)
    if found is None:
        return spans.get(()) if _UNRELEASED.search(heading) and len(spans) > 1 else None
    return spans.get(version_key(found.group(1)))


def best_commit(text: str, window: tuple[int, int], messages: Messages) -> str | None:
    """The commit within WINDOW whose message holds enough of TEXT's words and clearly more than any
    other's (see the module's docstring), or None."""
    low, high = window
    entry = [w for w in words(text) if w in messages.postings]
    total = sum(messages.idf(w) for w in entry)
    if len(entry) < MIN_SHARED or total <= 0:
        return None
    weight: dict[str, float] = {}
    shared: dict[str, int] = {}
    for word in entry:
        idf = messages.idf(word)
        for sha in messages.postings[word]:
            if low < messages.times[sha] <= high:
                weight[sha] = weight.get(sha, 0.0) + idf
                shared[sha] = shared.get(sha, 0) + 1
    if not weight:
        return None
    ranked = sorted(weight, key=lambda s: -weight[s])
    best = ranked[0]
    runner_up = weight[ranked[1]] if len(ranked) > 1 else 0.0
    if shared[best] < MIN_SHARED or weight[best] < SHARE * total or weight[best] < MARGIN * runner_up:
        return None
    return best
