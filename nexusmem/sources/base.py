"""The shape every source has: `scan(ctx)` returns a ScanResult whose `nodes` the sync stores."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from nexusmem.nodes import Node

# Locations of skipped records kept per source and sync: enough to find and fix them, bounded.
MAX_PROBLEMS = 20

ProgressFn = Callable[[str, int, "int | None"], None]


def _no_progress(label: str, done: int, total: int | None) -> None:
    return None


@dataclass
class ScanContext:
    """What a source may know: where the repo is, its project id, its config section and its last cursor."""

    root: Path
    project_id: str
    config: dict[str, Any]  # the whole validated config (sources read their own section)
    cursor: str | None = None  # what this source persisted after its last successful sync
    full: bool = False  # ignore the cursor (first sync, --rebuild)
    progress: ProgressFn = _no_progress
    # Read-only facts from the store a source may need, filled by the sync (never SQL in a source).
    known: dict[str, Any] = field(default_factory=dict)


@dataclass
class ScanResult:
    """A lazy scan. Iterate `nodes` first; the source fills `cursor`, `keep` and `skipped` while it goes.

    - cursor: persisted after the nodes are stored (None keeps the previous one).
    - keep: after storing, every stored node of this source whose natural key keep() rejects is removed
      (sections that disappeared, commits no longer reachable). None removes nothing.
    - heirs: the id of a node this source removes (through keep) or leaves out, as another source's node
      records the same thing (a command atuin and a hook both logged) → that node's id, which inherits the
      review verdict, stale mark and first-recorded time given to it (also through a rebuild).
    - skipped: inputs passed over (bad lines, binaries...), counted for the summary.
    - problems: where the bad ones among them were ("file byte 1234: why"), the first MAX_PROBLEMS only
      (a log of a million garbage lines must not make a million-entry list), shown by `status`.
    """

    nodes: Iterable[Node]
    cursor: str | None = None
    keep: Callable[[str], bool] | None = None
    heirs: dict[str, str] = field(default_factory=dict)
    skipped: int = 0
    notes: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    # When set (after the nodes were iterated): every link of LINK_RELATION is replaced by these
    # (from id, to id, relation) triples.
    links: list[tuple[str, str, str]] | None = None
    link_relation: str = ""
    # With links: when set, only the links of LINK_RELATION leaving these ids are replaced (an incremental
    # source that re-reads a few of its nodes); links to or from a node the store does not hold are dropped.
    link_scope: list[str] | None = None
    # One line `status` shows for this source ("skipped: gh CLI not found on PATH"); None clears it.
    state: str | None = None
    # Why the source read nothing this sync (no gh, a logged-out one), said in the sync's line; None: it read.
    skipped_because: str | None = None
    # After the nodes were iterated: whether a node stored before (by its meta) is one whose input this scan
    # read again (its transcript is still on disk), so that what it did not write back is gone from it. A
    # rebuild keeps every node of the kinds a source may not read again (Store.history_nodes) that it
    # neither wrote back nor covers; None covers none.
    covers: Callable[[dict[str, Any]], bool] | None = None

    def skip(self, where: str) -> None:
        """Count one bad input and remember where it was (the first MAX_PROBLEMS of them)."""
        self.skipped += 1
        if len(self.problems) < MAX_PROBLEMS:
            self.problems.append(where)


class TurnFacts(Protocol):
    """What the session source reads of one stored conversation turn (a store.StoredNode)."""

    @property
    def ts(self) -> int: ...
    @property
    def title(self) -> str: ...
    @property
    def body(self) -> str: ...
    @property
    def meta(self) -> dict[str, Any]: ...


class SummaryFacts(TurnFacts, Protocol):
    """A stored session_summary node."""

    @property
    def id(self) -> str: ...


class SessionFacts(Protocol):
    """One conversation session's main thread as it stands in the store (a store.sessions.SessionInfo)."""

    @property
    def agent(self) -> str: ...
    @property
    def session_id(self) -> str: ...
    @property
    def turns(self) -> int: ...
    @property
    def first_ts(self) -> int: ...
    @property
    def last_ts(self) -> int: ...
    @property
    def changed_at(self) -> int: ...
    @property
    def pieces(self) -> int: ...


class ConversationReader(Protocol):
    """The reads the session source needs, handed to it by the sync as `ScanContext.known["conversations"]`
    (the Store implements them in store/sessions.py; sources never import the store)."""

    def conversation_sessions(self, project_id: str) -> Sequence[SessionFacts]:
        """Every session with a main-thread turn, newest last turn first."""
        ...

    def session_turns(
        self, project_id: str, sessions: Sequence[tuple[str, str]], ts_from: int, ts_to: int
    ) -> Mapping[tuple[str, str], Sequence[TurnFacts]]:
        """(agent, session id) → main-thread turns in order, for SESSIONS lying within TS_FROM..TS_TO."""
        ...

    def turns_state(self, write_seq: int) -> tuple[int, bool]:
        """How many conversation turns there are, and whether any was written after WRITE_SEQ."""
        ...

    def write_seq(self) -> int:
        """The store write sequence (bumped by every batch that writes nodes)."""
        ...

    def session_summaries(self, project_id: str) -> Mapping[str, SummaryFacts]:
        """Natural key ("agent:session id") → the stored session_summary node."""
        ...


class Source(Protocol):
    name: str  # stable id used for cursors and `--prune-source`
    kinds: tuple[str, ...]

    def enabled(self, config: dict[str, Any]) -> bool: ...

    def scan(self, ctx: ScanContext) -> ScanResult: ...
