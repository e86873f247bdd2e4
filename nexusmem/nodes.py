"""The one shape every source normalises to. A commit, a diff, a shell command and a doc section are all Nodes."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

from nexusmem.bounds import MAX_TS_MS as MAX_TS_MS
from nexusmem.bounds import MIN_TS_MS as MIN_TS_MS
from nexusmem.bounds import text_ok as text_ok
from nexusmem.bounds import ts_ok as ts_ok
from nexusmem.identity import node_id

# Provenance is fixed per kind (docs/contracts.md §4): where a claim came from, never whether anyone
# checked it.
PROVENANCE: dict[str, str] = {
    "git_commit": "observed",
    "code_diff": "observed",
    "shell_command": "observed",
    "doc_section": "authored",
    "conversation_turn": "recorded",
    "github_thread": "recorded",
    "session_summary": "derived",
}
KINDS = tuple(PROVENANCE)
TRUST_STATES = ("candidate", "verified", "rejected")

# The bounds every stored value must satisfy live in nexusmem.bounds (light: the hook log's reader uses them).


def node_problem(node: Node) -> str | None:
    """Why NODE cannot be stored as it is (a bad time, text that is not valid Unicode), or None.

    The last line of defence in sync: a source is expected to skip such records itself, with their
    location; this catches whatever a parser let through, so one record never fails a whole sync.
    (meta is not checked: every source builds it from fields it already checked, and serialising it
    twice per node would cost ~5 µs × 80k nodes on a big first sync.)
    """
    ts = node.ts
    if type(ts) is not int or not MIN_TS_MS <= ts < MAX_TS_MS:
        return f"time {ts!r} ms is outside 1970..2100"
    # Fast path (isascii is O(1)): nearly every node is plain ASCII and needs nothing more.
    if (
        node.natural_key.isascii()
        and node.ref.isascii()
        and node.title.isascii()
        and node.body.isascii()
        and (not node.files or "".join(node.files).isascii())
    ):
        return None
    for name in ("natural_key", "ref", "title", "body"):
        if not text_ok(getattr(node, name)):
            return f"{name} is not valid Unicode (a lone surrogate)"
    if not all(text_ok(f) for f in node.files):
        return "a file name is not valid Unicode (a lone surrogate)"
    return None


@dataclass
class Node:
    """One remembered thing.

    `natural_key` is what makes it unique within its kind (a commit sha, "sha:path", "path#heading#n");
    `ref` is the handle shown to users and agents (docs/contracts.md, `query --json`). `ts` is epoch
    milliseconds of the event itself. `group` ties chunks of one thing together (sections of one file, diffs of one commit)
    so the packer can cap siblings. `files` are repository paths the node touches or names.
    """

    project: str
    kind: str
    source: str
    natural_key: str
    ref: str
    title: str
    body: str
    ts: int
    signal: float
    group: str | None = None
    files: tuple[str, ...] = ()
    meta: dict[str, Any] = field(default_factory=dict)
    id: str = ""
    # Indexed with low weight, never shown and kept out of content_hash: a commit's change words.
    words: str = ""

    def __post_init__(self) -> None:
        if self.kind not in PROVENANCE:
            raise ValueError(f"unknown node kind {self.kind!r}")
        if not self.id:
            self.id = node_id(self.project, self.kind, self.natural_key)

    @property
    def provenance(self) -> str:
        return PROVENANCE[self.kind]

    @property
    def secondhand(self) -> bool:
        """Whether this node was read back from a second-hand account (meta `seen_in`, e.g. an agent's shell
        call found in its transcript rather than recorded by its hook): the store never lets it overwrite a
        first-hand node of the same id (store.nodes._upsert_batch)."""
        return "seen_in" in self.meta

    def meta_json(self) -> str:
        return json.dumps(self.meta, sort_keys=True, ensure_ascii=False)

    def content_hash(self, meta_json: str | None = None) -> str:
        """What decides whether a re-scan 'updated' the node: everything but bookkeeping."""
        meta = self.meta_json() if meta_json is None else meta_json
        parts = (
            self.title,
            self.body,
            self.ref,
            str(self.ts),
            f"{self.signal:.6f}",
            self.group or "",
            "\n".join(self.files),
            meta,
        )
        return hashlib.sha256("\0".join(parts).encode("utf-8", "surrogatepass")).hexdigest()[:32]
