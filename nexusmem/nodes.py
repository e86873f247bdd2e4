"""The one shape every source normalises to. A commit, a diff, a shell command and a doc section are all Nodes."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from nexusmem.bounds import MAX_TS_MS as MAX_TS_MS
from nexusmem.bounds import MIN_TS_MS as MIN_TS_MS
from nexusmem.bounds import text_ok as text_ok
from nexusmem.bounds import ts_ok as ts_ok
from nexusmem.identity import node_id
from nexusmem.redact import path_text, redact, redact_path

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


# Meta values that are paths: a file's (a diff's, a doc's), its name before a rename, a command's folder.
_PATH_META = ("path", "old_path", "cwd")
# Labels already read and found to hold no secret, as text and as paths: a history names the same files,
# authors and folders thousands of times, and reading each once keeps the guard below at a few set lookups
# per node (~1 µs; the shell source's first read of 92,112 commands: 618-674 ms → 717-841 ms, where reading
# every label of every node took 2.6 s). Bounded: cleared when full.
_CLEAN_TEXT: set[str] = set()
_CLEAN_PATHS: set[str] = set()
_CLEAN_MAX = 100_000
# A string of hex digits alone (a commit id, a timestamp) is not one the rules can tell from any other: no
# rule recognises a secret by its digits without a name or prefix before it (tests/test_redact.py holds
# the rules to that), so such labels, each new, are not read.
_HEX = re.compile(r"[0-9a-fA-F]*")


def _clean(text: str, as_path: bool) -> bool:
    """Whether TEXT (read as a path: redact.path_text) holds no secret, remembered once known."""
    known = _CLEAN_PATHS if as_path else _CLEAN_TEXT
    if text in known or _HEX.fullmatch(text):
        return True
    probe = path_text(text) if as_path else text
    if redact(probe) != probe:
        return False
    if len(known) >= _CLEAN_MAX:
        known.clear()
    known.add(text)
    return True


def redacted_path(path: str) -> str:
    """PATH with any secret it holds redacted (redact.redact_path), read once per distinct clean path."""
    return path if _clean(path, True) else redact_path(path)


def strings_in(value: Any) -> list[str]:
    """Every string inside VALUE (a meta value: str, list, dict), in order."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in strings_in(v)]
    if isinstance(value, (list, tuple)):
        return [s for v in value for s in strings_in(v)]
    return []


def rewritten(value: Any, fix: Callable[[str], str]) -> Any:
    """VALUE (a meta value: str, list, tuple, dict) with FIX applied to every string inside it."""
    if isinstance(value, str):
        return fix(value)
    if isinstance(value, dict):
        return {k: rewritten(v, fix) for k, v in value.items()}
    if isinstance(value, list):
        return [rewritten(v, fix) for v in value]
    if isinstance(value, tuple):
        return tuple(rewritten(v, fix) for v in value)
    return value


def _redact_labels(node: Node) -> None:
    """Redact the file paths and meta strings of NODE, and each path wherever its other labels hold it.

    Each source redacts the text it reads (a message, a patch, a command, a heading) before it builds a
    node; but a secret can also sit in a file's name (`keys/AKIA….json`), an author's name or a working
    folder, and those reach the store, its word index and `query --json` as labels. A path is read folder by
    folder (redact.path_text) and, redacted, replaces itself in the key, ref, title and group that hold it
    ("sha:path", "path @ sha — subject")."""
    # The common case, kept to set lookups (~1 µs): every path and flat meta string seen before and clean.
    for path in node.files:
        if path not in _CLEAN_PATHS:
            break
    else:
        for key, value in node.meta.items():
            if type(value) is str:
                if value and value not in (_CLEAN_PATHS if key in _PATH_META else _CLEAN_TEXT):
                    break
            elif isinstance(value, (list, tuple, dict)):
                break
        else:
            return
    paths = [*node.files, *(v for k, v in node.meta.items() if k in _PATH_META and isinstance(v, str))]
    dirty = [p for p in dict.fromkeys(paths) if not _clean(p, True)]
    if not dirty and all(_clean(s, False) for s in strings_in(node.meta)):
        return
    renamed = {p: redact_path(p) for p in dirty}
    ordered = sorted(renamed, key=len, reverse=True)  # a longer path first: "a/b.py" holds "b.py"

    def moved(text: str) -> str:
        for old in ordered:
            if old in text:
                text = text.replace(old, renamed[old])
        return text

    def fix(text: str) -> str:
        if text in renamed:
            return renamed[text]
        text = moved(text)
        return text if _clean(text, False) else redact(text)

    node.natural_key = moved(node.natural_key)
    node.ref = moved(node.ref)
    node.title = moved(node.title)
    if node.group:
        node.group = moved(node.group)
    node.files = tuple(renamed.get(p, p) for p in node.files)
    node.meta = rewritten(node.meta, fix)


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
            # From the key as the source read it: two files whose names differ only in a secret stay two.
            self.id = node_id(self.project, self.kind, self.natural_key)
        _redact_labels(self)

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
