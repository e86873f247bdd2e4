"""Deny-list entries: recognising a forgotten value in future input without keeping the value.

A literal entry keeps keyed BLAKE2b digests of the whole value and of each of its half-length pieces. Any
occurrence of a value of L bytes in a text contains one of the text's *aligned* blocks of k = ceil(L/2) bytes
(offsets 0, k, 2k, ...), at some offset j < k inside the value, so hashing those blocks finds every candidate
position at C speed (len/k hashes per text) and the whole-value digest confirms it. The value itself is never
stored.

The digests are keyed with a per-user secret (`~/.nexusmem/deny-key.json`, mode 0600, 32 random bytes made
on first use; each entry's key is BLAKE2b(entry salt) under that secret). Without the key file the
deny-list (memory.db's table, deny-list.json, an export without keys) reveals nothing: every guess needs the
key. The older scheme keyed the digests with the entry's salt only, stored beside them, so a short value
could be guessed offline (an 8-character value was recovered in 9 s from its half-length piece digests).
Older entries cannot be re-hashed without the value, so they keep matching with the old scheme (`forget
--list` marks them) and are re-keyed the next time their value is seen: when a sync or forget meets the value
in a text (the matched bytes are the value), or when the user forgets the same value again.

A regex entry keeps its pattern (a pattern cannot be hashed and still match): say so to the user. A
"pattern" with no regex syntax but escapes of literal characters (fixed_text: `lib\\.gamma\\.example`) is the
literal value it spells, and forget keeps it as one. Patterns
run on RE2 (google-re2), whose matching time is linear in the text, so no pattern can hang a sync or a forget
(`(a+)+$` on 100,000 characters: ~40 ms; Python's re takes longer than anyone waits). RE2 has no
backreferences or lookaround, so such patterns are refused with a message. Where google-re2 cannot be
installed, Python's re is used only for patterns without nested or alternated repetition and without
backreferences (the constructs that cause catastrophic backtracking), and the rest are refused.
With ignore_case both sides are case-folded before hashing/matching.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from nexusmem import paths, private
from nexusmem.errors import NexusMemError, UsageError

MAX_VALUE_BYTES = 4096
MAX_PATTERN_CHARS = 1000
KEY_NAME = "deny-key.json"
# The OS locks beside them that serialise each user file's read-modify-write (_locked): one for the key
# file, one for the user-wide list (the list's is taken first when both are: reading the list can add keys).
KEY_LOCK_NAME = ".deny-key.lock"
LIST_LOCK_NAME = ".deny-list.lock"
LOCK_WAIT_SECONDS = 60.0  # each holder only reads and writes a small file
KEYED = "keyed-v1"  # spec["scheme"] of entries keyed with the user's secret; absent on older entries
EXPORT_VERSION = 1
# Strings a regex is tried on to see whether it can match an empty string somewhere (it would then match
# every node).
_EMPTY_PROBES = ("", "a", " ", "abc def", "0", "\n", "-", "é")


class DenyListError(NexusMemError):
    """An entry that cannot be used: empty, an invalid regex, one that matches the empty string..."""


class DenyValueError(DenyListError, UsageError):
    """The value or pattern given to forget cannot be an entry (empty, invalid, unsafe): exit 2, as for any
    value on the command line that cannot be used. A stored entry that fails the same checks is
    DenyListError's business (Entry.problem)."""


class _MissingKey(ValueError):
    """A keyed entry whose user key this machine does not hold."""


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
    _regex: Any = field(default=None, repr=False)

    def __post_init__(self) -> None:
        self.problem = ""  # why a stored entry cannot be used (shown by --list; matching raises it)
        self.seen: bytes | None = None  # an older entry's value, once met in a text (for re-keying)
        if self.kind == "regex":
            try:
                self._regex = compile_regex(str(self.spec.get("pattern", "")), self.ignore_case)
            except DenyListError as exc:
                self.problem = str(exc)
        elif self.kind == "literal":
            try:
                self._length = int(self.spec["length"])
                self._full = str(self.spec["digest"])
                pieces = self.spec["pieces"]
                if not isinstance(pieces, list) or self._length < 1:
                    raise ValueError("pieces")
                self._salt = _entry_key(self.spec)
            except _MissingKey as exc:
                self.problem = str(exc)
                return
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
            broken = f"  UNUSABLE: {self.problem}" if self.problem else ""
            return f"regex  /{self.spec['pattern']}/{flags}{broken}"
        legacy = "" if self.keyed else " (older salted hash: re-keyed when the value is next seen)"
        return f"value  {self._length} byte(s), hash {self._full[:12]}{flags}{legacy}"

    @property
    def keyed(self) -> bool:
        return self.kind == "literal" and self.spec.get("scheme") == KEYED

    def matches(self, text: str) -> bool:
        """Whether TEXT contains the value (or the regex matches somewhere in it)."""
        if not text:
            return False
        if self.problem:
            raise DenyListError(
                f"deny-list entry {self.key[:12]} cannot be used: {self.problem}"
                f" (remove it with `nexusmem forget --remove-entry {self.key[:12]}`)"
            )
        if self._regex is not None:
            try:
                return self._regex.search(text) is not None
            except UnicodeEncodeError:
                # RE2 encodes a str as strict UTF-8, which a lone surrogate (a `\ud800` escape in a log
                # line's JSON, an undecodable byte of a file name) is not: it searches the bytes as the
                # literal path hashes them (a bad line stopped `forget --regex` and every line after it).
                return self._regex.search(text.encode("utf-8", "surrogatepass")) is not None
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
                    if not self.keyed:
                        self.seen = data[s : s + length]
                    return True
        return False

    def is_value(self, value: str) -> bool:
        """Whether VALUE is exactly what this literal entry was made from (a repeat `forget`)."""
        if self.kind != "literal" or self.problem:
            return False
        data = _fold(value, self.ignore_case).encode("utf-8", "surrogatepass")
        return len(data) == self._length and _digest(self._salt, data, 32) == self._full


def _re2() -> Any:
    """The google-re2 module, or None where it is not installed."""
    try:
        import re2
    except ImportError:
        return None
    return re2


_REPEATS = ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT")


def _backtracking_risk(pattern: str, flags: int) -> str | None:
    """Why Python's re could take exponential time on PATTERN (None when it cannot): a repetition that
    contains another repetition or an alternation, or a backreference. Conservative: some safe patterns
    are refused too (only where google-re2 is missing)."""
    try:
        from re import _parser as parser  # type: ignore[attr-defined]
    except ImportError:  # Python < 3.11
        import sre_parse as parser

    def walk(items: Any, inside_repeat: bool) -> str | None:
        for op, arg in items:
            name = str(op)
            if name in ("GROUPREF", "GROUPREF_EXISTS"):
                return "a backreference"
            if name in _REPEATS:
                _low, high, sub = arg
                repeats = high is None or int(high) > 1
                if inside_repeat and repeats:
                    return "a repetition inside a repetition"
                found = walk(sub, inside_repeat or repeats)
                if found:
                    return found
            elif name == "SUBPATTERN":
                found = walk(arg[-1], inside_repeat)
                if found:
                    return found
            elif name == "BRANCH":
                if inside_repeat:
                    return "an alternation inside a repetition"
                for alt in arg[1]:
                    found = walk(alt, inside_repeat)
                    if found:
                        return found
            elif name in ("ASSERT", "ASSERT_NOT"):
                found = walk(arg[1], inside_repeat)
                if found:
                    return found
        return None

    return walk(parser.parse(pattern, flags), False)


def compile_regex(pattern: str, ignore_case: bool) -> Any:
    """The compiled PATTERN (RE2; Python's re only where RE2 is missing and the pattern cannot backtrack
    badly), or a DenyValueError when it is empty, too long, invalid, unsafe or can match an empty string."""
    if not pattern.strip():
        raise DenyValueError("the pattern is empty")
    if len(pattern) > MAX_PATTERN_CHARS:
        raise DenyValueError(f"the pattern is longer than {MAX_PATTERN_CHARS} characters")
    try:
        pattern.encode("utf-8")
    except UnicodeEncodeError:  # a byte the terminal sent that is not UTF-8 (`$'\xff'`): RE2 cannot take it
        raise DenyValueError(
            f"the pattern {pattern!r} holds a byte that is not UTF-8: match it with `.` or give it as text"
        ) from None
    engine = _re2()
    compiled: Any
    if engine is not None:
        options = engine.Options()
        options.log_errors = False  # RE2 would print its own copy of the error on stderr
        options.case_sensitive = not ignore_case
        try:
            compiled = engine.compile(pattern, options)
        except engine.error as exc:
            detail = exc.args[0].decode() if exc.args and isinstance(exc.args[0], bytes) else str(exc)
            raise DenyValueError(
                f"invalid regular expression {pattern!r} for the linear-time engine (RE2): {detail}."
                " Backreferences and lookaround are not supported (they are what can make matching take"
                " exponential time)"
            ) from None
    else:
        flags = re.IGNORECASE if ignore_case else 0
        try:
            risk = _backtracking_risk(pattern, flags)
            compiled = re.compile(pattern, flags)
        except (re.error, RecursionError, OverflowError) as exc:
            raise DenyValueError(f"invalid regular expression {pattern!r}: {exc}") from None
        if risk:
            raise DenyValueError(
                f"the regular expression {pattern!r} has {risk}, which can make matching take exponential"
                " time; install google-re2 (`pip install google-re2`) for patterns like this"
            )
    for probe in _EMPTY_PROBES:
        for m in compiled.finditer(probe):
            if m.end() == m.start():
                raise DenyValueError(
                    f"the regular expression {pattern!r} matches the empty string, so it would match"
                    " everything: make it require at least one character"
                )
    return compiled


def make_literal(value: str, ignore_case: bool, key: tuple[str, bytes] | None = None) -> Entry:
    """A new literal entry for VALUE (random salt; the value itself is not kept), keyed with KEY ((id,
    secret); the user's own key when None, a team's shared key for `forget --team`)."""
    if not value or not value.strip():
        raise DenyValueError("the value to forget is empty")
    if "\0" in value:
        raise DenyValueError("the value to forget contains a NUL character")
    data = _fold(value, ignore_case).encode("utf-8", "surrogatepass")
    if len(data) > MAX_VALUE_BYTES:
        raise DenyValueError(f"the value to forget is longer than {MAX_VALUE_BYTES} bytes: use --regex")
    return literal_from_bytes(data, ignore_case, key)


def literal_from_bytes(data: bytes, ignore_case: bool, key: tuple[str, bytes] | None = None) -> Entry:
    """A keyed literal entry for DATA (already case-folded when IGNORE_CASE): random salt, user key (or
    KEY, which must then be in the user's key file too: see add_keys)."""
    key_id, _secret = user_key() if key is None else key
    import secrets  # hmac, random, base64 behind it: only when a key or salt is made

    salt = secrets.token_bytes(16)
    spec: dict[str, Any] = {"scheme": KEYED, "key_id": key_id, "salt": salt.hex()}
    entry_key = _entry_key(spec)
    block = (len(data) + 1) // 2
    pieces = [_digest(entry_key, data[j : j + block], 8) for j in range(block)]
    full = _digest(entry_key, data, 32)
    spec.update({"length": len(data), "digest": full, "pieces": pieces})
    return Entry(key=full, kind="literal", ignore_case=ignore_case, spec=spec)


# ------------------------------------------------------------------------------------------ user key


def key_path() -> Path:
    return paths.user_dir() / KEY_NAME


def new_shared_key() -> tuple[str, bytes]:
    """A fresh (id, secret) for a key several people share (a team's deny-list: `forget --team`)."""
    import secrets

    secret = secrets.token_bytes(32)
    return _key_id(secret), secret


def _key_id(secret: bytes) -> str:
    return hashlib.blake2b(secret, digest_size=6, person=b"nexusmem-keyid").hexdigest()


def _read_keys() -> dict[str, Any]:
    path = key_path()
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {"version": 1, "current": "", "keys": {}}
    except (OSError, ValueError) as exc:
        raise DenyListError(f"{path}: cannot read the deny-list key ({exc})") from None
    if not isinstance(data, dict) or not isinstance(data.get("keys"), dict):
        raise DenyListError(f"{path}: not a deny-list key file")
    return data


@contextlib.contextmanager
def _locked(name: str) -> Iterator[None]:
    """Hold the OS lock NAME in the user dir (released if the holder dies) while a user file is read,
    changed and written back: `forget --global` in two projects at once made two keys (the last write won,
    and every sync of the project whose entry used the other failed) and dropped each other's entries."""
    from nexusmem.oslock import FileLock, Timeout

    paths.ensure_user_dir()
    lock = FileLock(paths.user_dir() / name)
    try:
        lock.acquire(LOCK_WAIT_SECONDS)
    except Timeout:
        raise DenyListError(
            f"{lock.path}: another nexusmem process has held this lock for {LOCK_WAIT_SECONDS:.0f} s; try"
            " again when it is done"
        ) from None
    try:
        yield
    finally:
        lock.release()


def user_key() -> tuple[str, bytes]:
    """(id, secret) of this user's deny-list key, made on first use (0600 file in the 0700 user dir)."""
    data = _read_keys()
    current = str(data.get("current", ""))
    if current in data["keys"]:
        return current, bytes.fromhex(str(data["keys"][current]))
    with _locked(KEY_LOCK_NAME):
        data = _read_keys()  # another process may have made it while this one waited
        current = str(data.get("current", ""))
        if current in data["keys"]:
            return current, bytes.fromhex(str(data["keys"][current]))
        import secrets

        secret = secrets.token_bytes(32)
        key_id = _key_id(secret)
        data["keys"][key_id] = secret.hex()
        data["current"] = key_id
        private.write_atomic(key_path(), (json.dumps(data, indent=2) + "\n").encode())
    return key_id, secret


def add_keys(keys: dict[str, str]) -> None:
    """Add KEYS (id -> hex secret, from an export) to this user's key file, keeping the current one."""
    if all(k in _read_keys()["keys"] for k in keys):
        return
    with _locked(KEY_LOCK_NAME):
        data = _read_keys()
        fresh = {k: v for k, v in keys.items() if k not in data["keys"]}
        if not fresh:
            return
        for key_id, secret in fresh.items():
            if _key_id(bytes.fromhex(secret)) != key_id:
                raise DenyListError(f"deny-list key {key_id} does not match its id")
        data["keys"].update(fresh)
        private.write_atomic(key_path(), (json.dumps(data, indent=2) + "\n").encode())


def _entry_key(spec: dict[str, Any]) -> bytes:
    """The BLAKE2b key of a literal entry: the salt alone (older entries) or the salt under the user key."""
    salt = bytes.fromhex(str(spec["salt"]))
    if spec.get("scheme") != KEYED:
        return salt
    key_id = str(spec.get("key_id", ""))
    secret = _read_keys()["keys"].get(key_id)
    if secret is None:
        raise _MissingKey(
            f"it was made with deny-list key {key_id}, which {key_path()} does not hold (import the export"
            " that carries it, or forget the value again here)"
        )
    return hashlib.blake2b(salt, key=bytes.fromhex(str(secret)), digest_size=32).digest()


def _pattern_key(pattern: str, ignore_case: bool) -> str:
    """A regex entry's key (a stored pattern that is not UTF-8 is an unusable entry, not a crash)."""
    return hashlib.sha256(f"{int(ignore_case)}\0{pattern}".encode("utf-8", "surrogatepass")).hexdigest()


# The characters that give a pattern regex syntax (RE2's, Python's too): one without any of them is a text.
REGEX_SYNTAX = frozenset("\\.^$*+?()[]{}|")


# The characters a backslash makes literal in RE2 and Python alike: ASCII punctuation (an escaped letter,
# digit or `_` is a class, an anchor or an error).
_ESCAPABLE = frozenset("!\"#$%&'()*+,-./:;<=>?@[\\]^`{|}~ ")


def fixed_text(pattern: str) -> str | None:
    """The text PATTERN spells when its only regex syntax is escapes of literal characters, else None: it
    matches that text and nothing else (`Pa55w0rd-Blue-Falcon`, most often a pasted secret; `lib\\.gamma
    \\.example`, a hostname as people write one, spells `lib.gamma.example`), so forget keeps it as a literal
    entry (a keyed hash) rather than as written. None for a real pattern (an unescaped `.`, a `\\d`)."""
    if not pattern.strip() or "\0" in pattern:
        return None
    spelled: list[str] = []
    escaped = False
    for c in pattern:
        if escaped:
            if c not in _ESCAPABLE:
                return None
            spelled.append(c)
            escaped = False
        elif c == "\\":
            escaped = True
        elif c in REGEX_SYNTAX:
            return None
        else:
            spelled.append(c)
    text = "".join(spelled)
    if escaped or not text.strip():
        return None
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # not text (`$'\xff'`): compile_regex says so, as for any pattern
        return None
    return text


def make_regex(pattern: str, ignore_case: bool) -> Entry:
    compile_regex(pattern, ignore_case)
    key = _pattern_key(pattern, ignore_case)
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
        pattern = entry.spec.get("pattern")
        if not isinstance(pattern, str):
            raise DenyListError(f"deny-list entry {entry.key[:12]}: a regex entry's pattern must be a string")
        if entry.key != _pattern_key(pattern, entry.ignore_case):
            raise DenyListError(f"deny-list entry {entry.key[:12]}: key does not match its pattern")
    return entry


# ------------------------------------------------------------------------------------------ node texts


def _strings(value: Any) -> Iterator[str]:
    """The strings VALUE (decoded JSON) holds, an object's keys too (at every level)."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for k, v in value.items():
            yield str(k)
            yield from _strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)


# Meta fields whose values come from NexusMem's own small vocabulary, the same on thousands of nodes: who ran
# a command (`author_kind`: human, agent), the shell or tool that logged it (`shell`: bash, zsh, atuin, an
# agent's name), how a node was read or titled (`seen_in`, `title_from`), a thread's or a commit's type and a
# thread's state, a log line's format version. Not anything recorded: `forget human` deleted every typed
# command, `forget bash` blanked every log line, and their entries then refused every later command. At the
# top level only (a field of a nested object is what another writer recorded).
VOCABULARY_FIELDS = frozenset({"author_kind", "shell", "seen_in", "title_from", "type", "state", "v"})

# Who ran a command or held a conversation, on the nodes NexusMem makes of commands, transcripts and their
# summaries and on the hook log's lines: `author` is "me" (the person at the keyboard) or the agent's name
# its hooks and transcript readers write ("claude-code", "codex", "aider", "gemini"; "atuin:copilot" for an
# agent atuin knows), `agent` the transcript's agent. Those names are on every such node: `forget me` deleted
# every typed command, `forget gemini` every Gemini turn and command. Any other value is matched (a name a
# foreign writer put in the log), as is every author of the other kinds (a commit's name and email, a
# GitHub login: what was recorded).
OWN_AUTHORS = frozenset(
    {
        "me",
        "claude-code",
        "codex",
        "aider",
        "gemini",
        *(f"atuin:{name}" for name in ("agent", "claude-code", "codex", "copilot", "opencode", "pi")),
    }
)
_AUTHOR_FIELDS = frozenset({"author", "agent"})
_AUTHORED_KINDS = frozenset({"shell_command", "conversation_turn", "session_summary"})

# A shell command's title and body are its command with NexusMem's words around it (sources.shell.node builds
# both): " (exit 1)" after the title's first line, and a last body line "[cwd … · exit 1 · pipestatus 1|0 ·
# 5 ms · bash]" (the folder there is meta's `cwd`, matched as such). Those words are on every command:
# `forget exit` or `forget pipestatus` deleted them all.
_EXIT_SUFFIX = re.compile(r" \(exit (?:-?\d+|unknown)\)\Z")
_CONTEXT_LINE = "\n[cwd "


def own_word(key: str, value: Any, *, authored: bool = True) -> bool:
    """Whether meta's field KEY holds NexusMem's own word VALUE, not anything recorded: a field of
    VOCABULARY_FIELDS, or (AUTHORED: on a command's or a transcript's node, a log line) an OWN_AUTHORS name."""
    if key in VOCABULARY_FIELDS:
        return True
    return authored and key in _AUTHOR_FIELDS and type(value) is str and value in OWN_AUTHORS


def recorded_values(meta: Any, kind: str = "shell_command") -> Iterator[str]:
    """The strings META (a node's decoded meta, a shell-log line) records: its values, minus those of
    VOCABULARY_FIELDS and, on a node of KIND made of commands or transcripts (a log line is a command's),
    NexusMem's own author names (OWN_AUTHORS); below the top level the keys of an object too (see
    node_fields)."""
    if isinstance(meta, dict):
        authored = kind in _AUTHORED_KINDS
        for key, value in meta.items():
            if not own_word(key, value, authored=authored):
                yield from _strings(value)
    else:
        yield from _strings(meta)


def node_fields(title: str, body: str, ref: str, meta: Any, *, kind: str) -> list[str]:
    """The texts of a node of KIND a deny-list entry is checked against, one by one (no concatenation, so a
    match never spans two fields; meta's strings are checked decoded, not JSON-escaped). The sync's gate, the
    team push's, forget and its read-back all read a node through this one function.

    What NexusMem writes on every node of a kind is not: meta's own keys (field names: `author`, `sha`, `cwd`;
    `forget author` deleted every commit, and its entry kept them all out of every later sync), the values
    of VOCABULARY_FIELDS, NexusMem's names for who ran a command or held a conversation (OWN_AUTHORS, in
    meta and in a turn's or a summary's ref and title), and the words a shell command's title and body put
    around the command. The keys
    of an object inside a value are checked: such an object may be keyed by what it records (file paths,
    variable names)."""
    if kind == "shell_command":
        title = _EXIT_SUFFIX.sub("", title)
        command, found, _context = body.rpartition(_CONTEXT_LINE)
        body = command if found else body
    elif kind in ("conversation_turn", "session_summary") and isinstance(meta, dict):
        agent = meta.get("agent")
        if type(agent) is str and agent in OWN_AUTHORS:
            # Its agent's name where NexusMem puts it: a turn's ref "gemini:<session>#3" and title
            # "(gemini continues) …" (a turn without a question), a summary's ref "session:gemini:<session>".
            ref = ref.removeprefix("session:" if kind == "session_summary" else "").removeprefix(f"{agent}:")
            title = title.replace(f"({agent} continues) ", "", 1)
    return [title, body, ref, *recorded_values(meta, kind)]


class Matcher:
    """Every active entry (this project's and the user-wide list), checked one text at a time."""

    def __init__(self, entries: Sequence[Entry]) -> None:
        unique: dict[str, Entry] = {}
        for entry in entries:
            unique.setdefault(entry.key, entry)
        self.entries = list(unique.values())
        self.dropped = 0
        # A key the user-wide list holds too is user-wide, whichever copy was kept (a value forgotten here,
        # then with --global).
        self._user_wide = {entry.key for entry in entries if entry.scope == "global"}

    def __bool__(self) -> bool:
        return bool(self.entries)

    def scopes(self) -> tuple[Matcher, Matcher]:
        """(the user-wide entries, this project's): what reaches every project's lines of the shell log, and
        what reaches this project's only."""
        return (
            Matcher([e for e in self.entries if e.key in self._user_wide]),
            Matcher([e for e in self.entries if e.key not in self._user_wide]),
        )

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
            if (
                self.which(node_fields(node.title, node.body, node.ref, node.meta, kind=node.kind))
                is not None
            ):
                self.dropped += 1
                continue
            yield node


class DenyEntryStore(Protocol):
    """A store that holds deny-list entries (the SQLite store, the team store: store.interface.SearchStore)."""

    def deny_entries(self) -> list[dict[str, Any]]: ...


def stored_entries(store: DenyEntryStore) -> list[Entry]:
    """The entries STORE holds (this project's, and the user-wide ones it has applied)."""
    return [entry_from_json(row, str(row["scope"])) for row in store.deny_entries()]


def active_entries(store: DenyEntryStore) -> tuple[list[Entry], list[Entry]]:
    """(STORE's entries, the user-wide ones): every entry the sync's gate filters with, read and nothing
    applied (forget.sync_gate records the user-wide ones STORE has not seen yet first). A corrupt user-wide
    list is a DenyListError."""
    return stored_entries(store), load_global()


def deny_matcher(store: DenyEntryStore) -> Matcher:
    """What the sync's gate would filter with, read only: STORE's entries and the user-wide ones, those that
    cannot run left out (the gate refuses to run with one: forget.sync_gate). For readers that ask whether a
    value is forgotten (`show` of a commit memory lacks)."""
    local, user = active_entries(store)
    return Matcher([e for e in [*local, *user] if not e.problem])


# ------------------------------------------------------------------------------------ user-wide list


def global_path() -> Path:
    return paths.user_deny_list()


def load_global() -> list[Entry]:
    """The user-wide entries ($NEXUSMEM_HOME/deny-list.json); a missing file is an empty list, a corrupt
    one an error (silently ignoring it would let forgotten values back in)."""
    path = global_path()
    try:
        raw = read_document(path)
    except FileNotFoundError:
        return []
    except DenyListError as exc:
        raise DenyListError(f"{exc} (the user-wide deny-list)") from None
    return parse_document(raw, path, scope="global")


# An export of 100,000 entries is ~40 MB: far more than anyone forgets, far less than memory.
DOCUMENT_LIMIT = 64 * 1024 * 1024


def read_document(path: Path) -> str:
    """The text of the deny-list file PATH (user-wide list, export); FileNotFoundError when it is missing,
    a DenyListError naming it when it cannot be one (not a regular file: a FIFO would block; not UTF-8)."""
    try:
        return paths.read_small_text(path, DOCUMENT_LIMIT)
    except FileNotFoundError:
        raise
    except (OSError, UnicodeDecodeError) as exc:
        advice = ": not a deny-list NexusMem wrote" if isinstance(exc, UnicodeDecodeError) else ""
        raise DenyListError(paths.unreadable(path, exc) + advice) from None


def parse_document(raw: str, path: Path, scope: str = "project") -> list[Entry]:
    """Entries of an export / user-wide file: {"version": 1, "entries": [...]}."""
    try:
        data = json.loads(raw)
    except ValueError as exc:
        raise DenyListError(f"{path}: not valid JSON ({exc})") from None
    except RecursionError:
        raise DenyListError(f"{path}: not a deny-list: JSON nested too deeply to read") from None
    if not isinstance(data, dict) or not isinstance(data.get("entries"), list):
        raise DenyListError(f"{path}: expected an object with an 'entries' list")
    version = data.get("version", EXPORT_VERSION)
    if type(version) is not int:
        raise DenyListError(f"{path}: 'version' must be an integer, not {json.dumps(version)[:20]}")
    if version > EXPORT_VERSION:
        raise DenyListError(f"{path}: version {version} is newer than this NexusMem understands")
    keys = data.get("keys")
    if isinstance(keys, dict) and keys:
        try:
            add_keys({str(k): str(v) for k, v in keys.items()})
        except ValueError as exc:
            raise DenyListError(f"{path}: a key is malformed ({exc})") from None
    try:
        return [entry_from_json(item, scope) for item in data["entries"]]
    except DenyListError as exc:
        raise DenyListError(f"{path}: {exc}") from None


def document(entries: Sequence[Entry], *, with_keys: bool = False) -> str:
    """An export / user-wide file. WITH_KEYS (exports): the user keys the entries were made with, so another
    machine can match them — the file is then as sensitive as the key file itself."""
    data: dict[str, Any] = {"version": EXPORT_VERSION, "entries": [e.to_json() for e in entries]}
    if with_keys:
        ids = {str(e.spec.get("key_id")) for e in entries if e.keyed}
        held = _read_keys()["keys"]
        data["keys"] = {k: held[k] for k in sorted(ids) if k in held}
    return json.dumps(data, indent=2) + "\n"


def write_private(path: Path, text: str) -> None:
    """Write TEXT atomically with mode 0600 (temp file in the same directory, fsync, rename)."""
    private.write_atomic(path, text.encode("utf-8"))


# The user-wide list is changed only under its lock, read again there: what another process added while
# this one worked is kept.


def remove_global(key: str) -> bool:
    """Remove the entry KEY from the user-wide list; False when it is not there."""
    with _locked(LIST_LOCK_NAME):
        current = load_global()
        kept = [e for e in current if e.key != key]
        if len(kept) == len(current):
            return False
        write_private(global_path(), document(kept))
    return True


def replace_global(old_key: str, entry: Entry) -> bool:
    """Swap the entry OLD_KEY for ENTRY in the user-wide list (re-keying); False when OLD_KEY is not there."""
    with _locked(LIST_LOCK_NAME):
        current = load_global()
        if not any(e.key == old_key for e in current):
            return False
        write_private(global_path(), document([entry if e.key == old_key else e for e in current]))
    return True


def add_global(entry: Entry) -> bool:
    """Add ENTRY to the user-wide list; False when an equal entry is already there."""
    with _locked(LIST_LOCK_NAME):
        current = load_global()
        if any(e.key == entry.key for e in current):
            return False
        write_private(global_path(), document([*current, entry]))
    return True
