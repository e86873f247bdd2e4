"""Secret redaction, applied by every source before anything is stored.

Every recognised secret is replaced by a typed placeholder such as ``«redacted:aws-key»``; the rest of the
text is kept byte for byte. The rules and the scan live in :mod:`nexusmem.redact_engine` (its docstring says
what is recognised and why it is fast). That engine is imported on the first call that redacts something,
so a no-op sync, the post-commit hook's sync and a query never load it; loading it costs ~3 ms, and each of
its ~230 regexes is compiled when a text first needs it.
"""

from __future__ import annotations

import re
from types import ModuleType

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (~4 ms of a cold precheck)
if TYPE_CHECKING:
    from typing import Any

__all__ = [
    "PLACEHOLDER_RE",
    "continues_token",
    "cut_redacted",
    "path_text",
    "placeholder",
    "redact",
    "redact_counts",
    "redact_cut",
    "redact_path",
    "redact_path_counts",
]

# Cheap, and read by code that never redacts (scrub, summaries): kept here, equal to the engine's.
PLACEHOLDER_RE = re.compile(r"«redacted:[a-z0-9-]+»")

# The version of the redaction rules (nexusmem.redact_engine): bump it whenever a change to them redacts
# something the rules before did not. A memory records which version wrote it (RULES_KEY in its meta): a new
# memory.db and `scrub` write this one, nothing else does (a sync adds to what older rules stored). `doctor`
# and `status` tell a memory of an older version, or of none (made before the key), to run `nexusmem scrub`.
# 2: a password a sentence names around its word ("password for the staging is V", "pw: V")
# 3: such a password of words and digits whatever ends it ("the password is Hunter2-Zeta-55", `Hunter2-Zeta_1`)
# 4: the value of a key that holds its colon inside its quotes (`"password:": "V"`, `'password:': 'V'`)
# 5: the literal that answers a quoted password prompt on its line (`("password:", "V")`, `expect "password:"
#    { send "V\r" }`, `child.expect("Password:"); child.sendline("V")`)
# 6: that literal on the line after the prompt's (`expect "password:"` / `send "V\r"`, `child.expect('Password:')`
#    / `child.sendline('V')`)
RULES_VERSION = 6
# The fingerprint of the rules RULES_VERSION names (redact_engine.rules_fingerprint: the patterns, keyword
# lists and thresholds). tests/test_redact.py fails while the two differ, and says what to do: a change to the
# rules that redacts something new bumps RULES_VERSION and records the new fingerprint here; one that redacts
# nothing new (a refactor, a narrower rule) records the new fingerprint alone.
RULES_FINGERPRINT = "22e656049a479661"
RULES_KEY = "redaction.rules"
OLDER_RULES = "this memory was written with older redaction rules: run `nexusmem scrub`"


def older_rules(recorded: str | None) -> bool:
    """Whether a memory whose RULES_KEY holds RECORDED (None: no such key) was written with older redaction
    rules than these: it may keep a secret they would redact."""
    return recorded is None or not recorded.isdigit() or int(recorded) < RULES_VERSION


def _engine() -> ModuleType:
    from nexusmem import redact_engine

    return redact_engine


def placeholder(kind: str) -> str:
    """The placeholder that stands in for a secret of type KIND."""
    return f"«redacted:{kind}»"


def redact(text: str) -> str:
    """TEXT with every recognised secret replaced by its typed placeholder (idempotent)."""
    return redact_counts(text)[0]


_counts: Any = None  # the engine's redact_counts, once loaded


def redact_counts(text: str) -> tuple[str, dict[str, int]]:
    """redact(TEXT), and how many secrets of each kind it replaced."""
    global _counts
    if _counts is None:
        _counts = _engine().redact_counts
    out: tuple[str, dict[str, int]] = _counts(text)
    return out


def cut_redacted(text: str, limit: int) -> str:
    """Redacted TEXT's first LIMIT characters at most, never ending inside a placeholder: the cut one is left
    out whole (a piece of "«redacted:github-token»" is not one, and could pass for text)."""
    if len(text) <= limit:
        return text
    start = text.rfind("«", 0, limit)
    found = PLACEHOLDER_RE.match(text, start) if start >= 0 else None
    return text[:start] if found is not None and found.end() > limit else text[:limit]


def redact_cut(text: str, limit: int) -> str:
    """redact(TEXT) cut to at most LIMIT characters (cut_redacted), in that order: a secret cut first no longer
    matches its pattern and is kept almost whole (`ghp_` and 35 of its 36 characters)."""
    return cut_redacted(redact(text), limit)


def said_line(text: str, limit: int, read: int = 4000) -> str:
    """What another program said (a model's reason, a server's error page, a tool's message), as it is
    stored or shown: one line of printable characters (a control character, a terminal escape's start among
    them, becomes a space; runs of blanks one space), every secret replaced, at most LIMIT characters. Only
    TEXT's first READ characters are read (a huge page costs no more); a word the cut there ends is left
    out, since a secret cut short no longer matches its pattern (blanks can make READ characters fewer
    than LIMIT)."""
    if len(text) > read:
        text = re.sub(r"\S+\Z", "", text[:read]) if not text[read].isspace() else text[:read]
    printable = "".join(ch if ch.isprintable() else " " for ch in text)
    return redact_cut(" ".join(printable.split()), limit)


def continues_token(before: str, after: str) -> bool:
    """Whether a token of a known format cut at the end of BEFORE goes on at the start of AFTER (two text
    blocks that split it): joined by one line break, redaction then finds all of it."""
    if not before or not after or not (before[-1].isalnum() or before[-1] in "_-"):
        return False  # nothing runs to the end of BEFORE: no token was cut there
    out: bool = _engine().continues_token(before, after)
    return out


def mask(text: str) -> str:
    """TEXT with each secret redact() finds overwritten by as many asterisks (the same length)."""
    out: str = _engine().mask(text)
    return out


# A file name's extension: read apart from the name, as is each folder, so that a secret a name holds ends
# where the name does (`keys/AKIA….json`, `DD-API-KEY: 40c3….txt`): the rules that know a secret by what
# stands before it or where its value ends read a line, not a path.
_EXTENSION = re.compile(r"\.[A-Za-z0-9]{1,10}$")


def _extension_at(name: str) -> int:
    """Where NAME's extension starts (its length when it has none, or is all it is: `.env`)."""
    found = _EXTENSION.search(name)
    return found.start() if found is not None and found.start() > 0 else len(name)


def _path_parts(path: str) -> list[str]:
    parts: list[str] = []
    for part in path.split("/"):
        cut = _extension_at(part)
        parts += [part[:cut], part[cut:]] if cut < len(part) else [part]
    return parts


def path_text(path: str) -> str:
    """PATH as redaction reads it: each folder and name (its extension apart) on a line of its own, then the
    whole path up to its extension (a base64 secret can hold a slash). Holds a secret when redact_path
    changes PATH."""
    cut = _extension_at(path)
    return "\n".join([*_path_parts(path), path[:cut], path[cut:]])


def redact_path_counts(path: str) -> tuple[str, dict[str, int]]:
    """redact_path(PATH), and how many secrets of each kind it replaced."""
    counts: dict[str, int] = {}
    pieces: list[str] = []
    for piece in path.split("/"):
        cut = _extension_at(piece)
        name, name_counts = redact_counts(piece[:cut])
        ext, ext_counts = redact_counts(piece[cut:]) if cut < len(piece) else ("", {})
        pieces.append(name + ext)
        for kind, n in (*name_counts.items(), *ext_counts.items()):
            counts[kind] = counts.get(kind, 0) + n
    text = "/".join(pieces)
    cut = _extension_at(text)
    stem, whole = redact_counts(text[:cut])
    for kind, n in whole.items():
        counts[kind] = counts.get(kind, 0) + n
    return stem + text[cut:], counts


def redact_path(path: str) -> str:
    """PATH with every secret its folders, its name or the whole of it hold replaced by a placeholder."""
    return redact_path_counts(path)[0]


def __getattr__(name: str) -> Any:
    """The engine's other names (PATTERNS, KINDS, Rule ...), loaded with it."""
    if name.startswith("__"):
        raise AttributeError(name)
    return getattr(_engine(), name)
