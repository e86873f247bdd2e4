"""The one shape every source normalises to. A commit, a diff, a shell command and a doc section are all Nodes."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

from nexusmem.identity import node_id

# Provenance is fixed per kind (DESIGN.md): where a claim came from, never whether anyone checked it.
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


@dataclass
class Node:
    """One remembered thing.

    `natural_key` is what makes it unique within its kind (a commit sha, "sha:path", "path#heading#n");
    `ref` is the handle shown to users and agents (DESIGN.md `query --json`). `ts` is epoch milliseconds of
    the event itself. `group` ties chunks of one thing together (sections of one file, diffs of one commit)
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

    def __post_init__(self) -> None:
        if self.kind not in PROVENANCE:
            raise ValueError(f"unknown node kind {self.kind!r}")
        if not self.id:
            self.id = node_id(self.project, self.kind, self.natural_key)

    @property
    def provenance(self) -> str:
        return PROVENANCE[self.kind]

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
