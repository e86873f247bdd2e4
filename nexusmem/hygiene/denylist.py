"""Deny-list entries: recognising a forgotten value in future input without keeping the value.

A literal entry keeps, for a random per-entry salt, the keyed BLAKE2b digest of the whole value and of each
of its half-length pieces. Any occurrence of a value of L bytes in a text contains one of the text's
*aligned* blocks of k = ceil(L/2) bytes (offsets 0, k, 2k, ...), at some offset j < k inside the value, so
hashing those blocks finds every candidate position at C speed (len/k hashes per text) and the whole-value
digest confirms it. The value itself is never stored. What that costs: the pieces are digests of half the
value, so guessing a short value takes about twice the square root of the work guessing it whole would —
a digest protects against the value being *readable*, not against someone guessing a short one.

A regex entry keeps its pattern (a pattern cannot be hashed and still match): say so to the user.
With ignore_case both sides are case-folded before hashing/matching.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import secrets
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nexusmem import paths
from nexusmem.errors import NexusMemError

MAX_VALUE_BYTES = 4096
GLOBAL_NAME = "deny-list.json"
EXPORT_VERSION = 1
# Strings a regex is tried on to see whether it can match an empty string somewhere (it would then match
# every node).
_EMPTY_PROBES = ("", "a", " ", "abc def", "0", "\n", "-", "é")


class DenyListError(NexusMemError):
    """An entry that cannot be used: empty, an invalid regex, one that matches the empty string..."""


def _digest(salt: bytes, data: bytes, size: int) -> str:
    return hashlib.blake2b(data, key=salt, digest_size=size).hexdigest()


def _fold(text: str, ignore_case: bool) -> str:
    return text.casefold() if ignore_case else text


@dataclass
class Entry:
    """One deny-list entry as stored (project table, user-wide file, export file)."""

    key: str
    kind: str  # "literal" | "regex"
    ignore_case: bool
    spec: dict[str, Any]
    scope: str = "project"
    created_at: int = 0
    _pieces: dict[bytes, list[int]] = field(default_factory=dict, repr=False)
    _regex: re.Pattern[str] | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if self.kind == "regex":
            self._regex = compile_regex(str(self.spec.get("pattern", "")), self.ignore_case)
        elif self.kind == "literal":
            try:
                self._salt = bytes.fromhex(str(self.spec["salt"]))
                self._length = int(self.spec["length"])
                self._full = str(self.spec["digest"])
                pieces = self.spec["pieces"]
                if not isinstance(pieces, list) or self._length < 1:
                    raise ValueError("pieces")
            except (KeyError, ValueError, TypeError) as exc:
                raise DenyListError(f"deny-list entry {self.key[:12]} is malformed ({exc})") from None
            self._block = (self._length + 1) // 2
            # Keyed hashers made once and copied per block (~30% faster than a new keyed hasher each time);
            # raw digests compared, not hex.
            self._piece_hasher = hashlib.blake2b(key=self._salt, digest_size=8)
            for offset, piece in enumerate(pieces):
                self._pieces.setdefault(bytes.fromhex(str(piece)), []).append(offset)
        else:
            raise DenyListError(f"deny-list entry {self.key[:12]} has unknown kind {self.kind!r}")

    def to_json(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "kind": self.kind,
            "ignore_case": self.ignore_case,
            "spec": self.spec,
            "created_at": self.created_at,
        }

    def describe(self) -> str:
        """How `forget --list` shows the entry: a regex's pattern, a literal's length and hash prefix."""
        flags = " (ignore case)" if self.ignore_case else ""
        if self.kind == "regex":
            return f"regex  /{self.spec['pattern']}/{flags}"
        return f"value  {self._length} byte(s), hash {self._full[:12]}{flags}"

    def matches(self, text: str) -> bool:
        """Whether TEXT contains the value (or the regex matches somewhere in it)."""
        if not text:
            return False
        if self._regex is not None:
            return self._regex.search(text) is not None
        data = _fold(text, self.ignore_case).encode("utf-8", "surrogatepass")
        size, block = len(data), self._block
        if size < self._length:
            return False
        salt, pieces, length, full = self._salt, self._pieces, self._length, self._full
        hasher = self._piece_hasher
        for start in range(0, size - block + 1, block):
            h = hasher.copy()
            h.update(data[start : start + block])
            offsets = pieces.get(h.digest())
            if offsets is None:
                continue
            for j in offsets:
                s = start - j
                if s >= 0 and s + length <= size and _digest(salt, data[s : s + length], 32) == full:
                    return True
        return False

    def is_value(self, value: str) -> bool:
        """Whether VALUE is exactly what this literal entry was made from (a repeat `forget`)."""
        if self.kind != "literal":
            return False
        data = _fold(value, self.ignore_case).encode("utf-8", "surrogatepass")
        return len(data) == self._length and _digest(self._salt, data, 32) == self._full


def compile_regex(pattern: str, ignore_case: bool) -> re.Pattern[str]:
    """The compiled PATTERN, or a DenyListError when it is empty, invalid, or can match an empty string."""
    if not pattern.strip():
        raise DenyListError("the pattern is empty")
    try:
        compiled = re.compile(pattern, re.IGNORECASE if ignore_case else 0)
    except re.error as exc:
        raise DenyListError(f"invalid regular expression {pattern!r}: {exc}") from None
    for probe in _EMPTY_PROBES:
        for m in compiled.finditer(probe):
            if m.end() == m.start():
                raise DenyListError(
                    f"the regular expression {pattern!r} matches the empty string, so it would match"
                    " everything: make it require at least one character"
                )
    return compiled


def make_literal(value: str, ignore_case: bool) -> Entry:
    """A new literal entry for VALUE (random salt; the value itself is not kept)."""
    if not value or not value.strip():
        raise DenyListError("the value to forget is empty")
    if "\0" in value:
        raise DenyListError("the value to forget contains a NUL character")
    data = _fold(value, ignore_case).encode("utf-8", "surrogatepass")
    if len(data) > MAX_VALUE_BYTES:
        raise DenyListError(f"the value to forget is longer than {MAX_VALUE_BYTES} bytes: use --regex")
    salt = secrets.token_bytes(16)
    block = (len(data) + 1) // 2
    pieces = [_digest(salt, data[j : j + block], 8) for j in range(block)]
    full = _digest(salt, data, 32)
    spec = {"salt": salt.hex(), "length": len(data), "digest": full, "pieces": pieces}
    return Entry(key=full, kind="literal", ignore_case=ignore_case, spec=spec)


def make_regex(pattern: str, ignore_case: bool) -> Entry:
    compile_regex(pattern, ignore_case)
    key = hashlib.sha256(f"{int(ignore_case)}\0{pattern}".encode()).hexdigest()
    return Entry(key=key, kind="regex", ignore_case=ignore_case, spec={"pattern": pattern})


def entry_from_json(data: Any, scope: str = "project") -> Entry:
    """An entry read back from a store row, the user-wide file or an export (validated)."""
    if not isinstance(data, dict):
        raise DenyListError("a deny-list entry must be a JSON object")
    try:
        entry = Entry(
            key=str(data["key"]),
            kind=str(data["kind"]),
            ignore_case=bool(data.get("ignore_case", False)),
            spec=dict(data["spec"]),
            scope=scope,
            created_at=int(data.get("created_at", 0) or 0),
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise DenyListError(f"a deny-list entry is missing {exc}") from None
    if entry.kind == "regex":
        expected = hashlib.sha256(f"{int(entry.ignore_case)}\0{entry.spec['pattern']}".encode()).hexdigest()
        if entry.key != expected:
            raise DenyListError(f"deny-list entry {entry.key[:12]}: key does not match its pattern")
    return entry


# ------------------------------------------------------------------------------------------ node texts


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for k, v in value.items():
            yield str(k)
            yield from _strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)


def node_fields(title: str, body: str, ref: str, meta: Any) -> list[str]:
    """The texts of a node a deny-list entry is checked against, one by one (no concatenation, so a match
    never spans two fields; meta's strings are checked decoded, not JSON-escaped)."""
    return [title, body, ref, *_strings(meta)]


class Matcher:
    """Every active entry (this project's and the user-wide list), checked one text at a time."""

    def __init__(self, entries: Sequence[Entry]) -> None:
        unique: dict[str, Entry] = {}
        for entry in entries:
            unique.setdefault(entry.key, entry)
        self.entries = list(unique.values())
        self.dropped = 0

    def __bool__(self) -> bool:
        return bool(self.entries)

    def which(self, texts: Iterable[str]) -> Entry | None:
        """The first entry matching one of TEXTS."""
        texts = [t for t in texts if t]
        for entry in self.entries:
            for text in texts:
                if entry.matches(text):
                    return entry
        return None

    def filter(self, nodes: Iterable[Any]) -> Iterator[Any]:
        """NODES minus every node an entry matches (counted in `dropped`): the sync loop's one gate."""
        for node in nodes:
            if self.which(node_fields(node.title, node.body, node.ref, node.meta)) is not None:
                self.dropped += 1
                continue
            yield node


# ------------------------------------------------------------------------------------ user-wide list


def global_path() -> Path:
    return paths.user_dir() / GLOBAL_NAME


def load_global() -> list[Entry]:
    """The user-wide entries ($NEXUSMEM_HOME/deny-list.json); a missing file is an empty list, a corrupt
    one an error (silently ignoring it would let forgotten values back in)."""
    path = global_path()
    try:
        raw = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return []
    except OSError as exc:
        raise DenyListError(f"{path}: cannot read the user-wide deny-list: {exc}") from exc
    return parse_document(raw, path, scope="global")


def parse_document(raw: str, path: Path, scope: str = "project") -> list[Entry]:
    """Entries of an export / user-wide file: {"version": 1, "entries": [...]}."""
    try:
        data = json.loads(raw)
    except ValueError as exc:
        raise DenyListError(f"{path}: not valid JSON ({exc})") from None
    if not isinstance(data, dict) or not isinstance(data.get("entries"), list):
        raise DenyListError(f"{path}: expected an object with an 'entries' list")
    if int(data.get("version", EXPORT_VERSION)) > EXPORT_VERSION:
        raise DenyListError(f"{path}: version {data['version']} is newer than this NexusMem understands")
    try:
        return [entry_from_json(item, scope) for item in data["entries"]]
    except DenyListError as exc:
        raise DenyListError(f"{path}: {exc}") from None


def document(entries: Sequence[Entry]) -> str:
    return json.dumps({"version": EXPORT_VERSION, "entries": [e.to_json() for e in entries]}, indent=2) + "\n"


def write_private(path: Path, text: str) -> None:
    """Write TEXT atomically with mode 0600 (temp file in the same directory, fsync, rename)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o600)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def add_global(entry: Entry) -> bool:
    """Add ENTRY to the user-wide list; False when an equal entry is already there."""
    current = load_global()
    if any(e.key == entry.key for e in current):
        return False
    write_private(global_path(), document([*current, entry]))
    return True
