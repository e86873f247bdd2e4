"""The redaction engine: every rule, and the scan that applies them (nexusmem.redact loads it on first use).

Every recognised secret is replaced by a typed placeholder such as ``«redacted:aws-key»``; the rest of the
text is kept byte for byte (a URL keeps its scheme, user and host; a flag keeps its name; a quoted value
keeps its quotes). ``redact`` is idempotent: a placeholder is never matched again.

What is recognised (docs/hygiene.md has the list and the measured corpus figures):

- about 110 self-identifying token formats (a fixed prefix and a known length/alphabet: ``AKIA``, ``ghp_``,
  ``SG.``, ``hvs.``, ``hf_``, ``dop_v1_`` ...), after the rule sets of gitleaks and trufflehog, plus a few
  without a prefix (Discord and Telegram bot tokens, Azure AD client secrets); one whose length is known is
  found whole when a line break cuts it (a wrapped paste: ``_WRAPPABLE``);
- credentials in context: URL passwords, ``Authorization:`` and ``*-Key:``/``*-Token:`` headers, a token after
  ``Bearer``, random-looking ``Cookie:`` values, Azure
  ``AccountKey=``, ``.netrc`` ``password`` lines, ``.pgpass`` entries, tool flags (``mysql -p``, ``curl -u``, ``keytool
  -storepass`` ...);
- the catch-all: a value assigned to a name like a secret (``NAME=value``, ``name: value``,
  ``"name": "value"``, ``--name value``). For the *strong* words (PASSWORD, PASSWD, SECRET, TOKEN, API_KEY,
  PRIVATE_KEY, PWD) any value is a secret except references (``$X``, ``${X}``, ``<x>``, ``{{x}}``), types
  and booleans, placeholders (``changeme``, ``xxx``, ``...``), paths and numbers of at most 4 digits. For
  the *weak* words (another ``*_KEY``, AUTH, CREDENTIAL(S), ``--key``) the value must also look random: at
  least 16 characters, two of lower/upper/digit, not shaped like an identifier, and at least 3.0 bits of
  Shannon entropy per character (a 32-digit hex key has ~3.7, ``development_settings_v2`` is an identifier).

Speed. Sync runs this over every commit message and every patch (tens of MB), so every rule is a regex
that begins with a *literal* (``AKIA``, ``ghp_``, ``://``, ``--``, ``token`` ...), and what costs is the
number of passes over the text: re scans for a pattern's first literal character at ~1 ns per character,
while a pattern that starts with a lookbehind, a character set, an alternation of first characters or
``(?i)`` is tried at every position (measured 10-100x slower). So literals are found by shared *anchor*
characters (16 token passes for ~120 formats, see :func:`_anchor_scans`), context rules run only where
their group's combined regex matches, boundaries are checked in Python on the few hits, and
case-insensitive rules search a lower-cased copy of the text (same offsets) with lower-case literals.
benchmarks/bench_redact.py measures MB/s on a realistic mix (15 MB/s CPU, was 8 with the same rules).

Load. No regex is compiled at import (~3 ms instead of 60-85): each compiles on first use, and a short text
runs only the passes whose literals it holds until they are compiled (_PREFILTER_MAX), so `precheck`
showing a failing command redacted compiles the ~15 regexes that command can match; a token pass it opens
is compiled from only the rules whose literal the text holds (_AnchorScan.pattern_for: the `sk-` branch of
the 1,449-character `s` pass). The output is the same either way (tests/test_redact_prefilter.py).
"""

from __future__ import annotations

import base64
import bisect
import math
import re
import sys
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from itertools import accumulate, chain

from nexusmem import lazyre

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (~4 ms of a cold precheck)
if TYPE_CHECKING:
    from typing import Any

__all__ = ["PATTERNS", "PLACEHOLDER_RE", "Rule", "placeholder", "redact", "redact_counts"]

PLACEHOLDER_RE = re.compile(r"«redacted:[a-z0-9-]+»")

# (start, end, type) of the text to replace; None when a hit turns out not to be a secret.
Span = tuple[int, int, str]
Handler = Callable[["re.Match[str]", str], "Span | None"]


_WORD = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")
_NAME = _WORD | {"_"}
_KEYNAME = _NAME | {"-", "."}

# A value in a shell command: double-quoted (with escapes), single-quoted, or bare up to a shell separator.
# An unterminated quote runs to the end of the line (over-redacting beats leaking).
_SHELL_VALUE = r"""(?P<v>"(?:[^"\\\n]|\\.)*"?|'[^'\n]*'?|[^\s"'`;|&<>)]+)"""
_TAIL_BOUND = 4096  # see the tail below
# A value after `NAME=` / `key:`: as above, but a bare one must end the word (`token = get_token()`,
# `api_key = os.environ["KEY"]` and `cache_key = f"..."` are code, not values).
_ASSIGN_VALUE = (
    r"""(?P<v>"(?:[^"\\\n]|\\.)*"?|'[^'\n]*'?|[^\s"'`;|&<>()\[\]{}]+(?![^\s"'`;|&<>()\[\]{}])"""
    # ... unless something with a letter or digit is glued to it (`Kx9mQ2&vLp8`: _assignment decides)
    r"""(?=[^\s"'`]*?[A-Za-z0-9]|(?![^\s,;})\]|&<>"'`])))"""
    # What is glued to the value, up to the next space (not consumed), its first _TAIL_BOUND characters:
    # unbounded, each value on a long line with no space (a minified bundle's query strings, 6,000 `token=`
    # on a 120 KB line) read the rest of the line again, 4 s for that line. _assignment reads on when needed.
    rf"""(?=(?P<tail>[^\s"'`]{{0,{_TAIL_BOUND}}}))"""
)
_TAIL = re.compile(r"""[^\s"'`]*""")
# What may follow a bare value that ends there (anything else glued to it makes it code, `get_token()`,
# unless the whole glued word looks like a password: _glued).
_VALUE_ENDS = frozenset(",;})]|&<>")
# A call, a generic type or an index: `hash(pw)`, `Buffer<Uint8Array>`, `env[KEY]` are code, not values.
_CODE_SHAPE = lazyre.compile(r"[A-Za-z_$][\w.$]*(?:<[^<>\s]*>|\([^()\s]*\)|\[[^\[\]\s]*\])+")

# Bare config values that are code or types, not secrets (`password: str`, `token = None`).
_NOT_VALUES = frozenset(
    [
        "none",
        "null",
        "nil",
        "true",
        "false",
        "undefined",
        "str",
        "string",
        "int",
        "bool",
        "boolean",
        "bytes",
        "float",
        "number",
        "any",
        "optional",
        "secretstr",
        "required",
        "yes",
        "no",
    ]
)
_DOTTED_NAME = lazyre.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+")
_LINE_START_KEY = lazyre.compile(r"[ \t+\->]*(?:(?:export|set)[ \t]+)?[\"']?")
_NOT_SECRET_KEY_NAMES = frozenset(
    [
        "PUBLIC_KEY",
        "PUBLISHABLE_KEY",
        "PRIMARY_KEY",
        "FOREIGN_KEY",
        "SORT_KEY",
        "PARTITION_KEY",
        "CACHE_KEY",
        "HOTKEY",
        "SHORTCUT_KEY",
        "SSH_KEY_PATH",
    ]
)


def placeholder(kind: str) -> str:
    """The placeholder that stands in for a secret of type KIND."""
    return f"«redacted:{kind}»"


class Rule:
    """One detector: a literal-prefixed regex and a handler that turns a hit into the span to replace.

    The engine finds ``literal`` with ``str.find`` and runs ``pattern.match`` only there (a one-character
    literal is left to ``pattern.finditer``, whose single-character prefix scan is as fast). Every match
    starts with ``literal`` (in ``text.lower()`` for a lowered rule): a text without it is skipped whole,
    and ``pattern`` is compiled on the first text that has it.

    ``lowered`` rules search ``text.lower()`` (their pattern is written in lower case) so that they are
    case-insensitive without paying for ``re.IGNORECASE``.

    (A plain class, not a dataclass: ``dataclasses`` imports ``inspect``, and a dataclass compares rules
    field by field, patterns included, where the engine asks which group a rule is in.)
    """

    __slots__ = ("_pattern", "finder", "gate", "handler", "kinds", "literal", "lowered", "name")

    def __init__(
        self,
        name: str,
        kinds: tuple[str, ...],
        pattern: str,
        handler: Handler,
        lowered: bool = False,
        finder: Callable[[str], Iterable[Span]] | None = None,  # a whole-text scan, not pattern + handler
        literal: str = "",  # what the pattern starts with: found with str.find before the regex runs
        gate: Callable[[str], bool] | None = None,  # skip the rule unless gate(text): its tool is there
    ) -> None:
        self.name = name
        self.kinds = kinds
        self._pattern = lazyre.compile(pattern)
        self.handler = handler
        self.lowered = lowered
        self.finder = finder
        self.literal = literal
        self.gate = gate

    def __repr__(self) -> str:
        return f"Rule({self.name!r}, literal={self.literal!r})"

    @property
    def source(self) -> str:
        """The pattern's text (not compiled)."""
        return self._pattern.pattern

    @property
    def pattern(self) -> re.Pattern[str]:
        """The compiled pattern (compiled on first use)."""
        return self._pattern.compiled()

    @property
    def fallback(self) -> re.Pattern[str]:
        """The same pattern with IGNORECASE, for the rare text whose lower() changes its length."""
        return _ignorecase(self._pattern.pattern)


_IGNORECASE_CACHE: dict[str, re.Pattern[str]] = {}


def _ignorecase(pattern: str) -> re.Pattern[str]:
    compiled = _IGNORECASE_CACHE.get(pattern)
    if compiled is None:
        compiled = _IGNORECASE_CACHE[pattern] = re.compile(pattern, re.IGNORECASE)
    return compiled


# ----------------------------------------------------------------------------------------------- helpers


def _left_ok(text: str, start: int) -> bool:
    """True when the character before START does not glue a hit onto a longer word: the letter or digit of
    an escape (a JSON or shell string's `\\n`, `\\t`; a URL's `%3D`) is not a word's."""
    return start == 0 or text[start - 1] not in _WORD or _after_escape(text, start)


def _after_escape(text: str, start: int) -> bool:
    """Whether an escape ends at START: a backslash and one letter (`x\\nghp_…`, a line break in a JSON
    string, a commit body written with `\\n`), `\\xHH`, `\\uHHHH` or octal `\\NNN` (`{"log":"ok\\u000aghp_…"}`,
    `printf 'a\\012ghp_…'`), or `%` and two hex digits, also percent-encoded again (`token%3Dghp_…`,
    `cb%253Ftoken%253Dghp_…`: `%25` is the `%`)."""
    if start < 2:
        return False
    before = text[start - 2]
    last = text[start - 1]
    if before == "\\":
        return last in _ESCAPE_LETTERS
    if last not in _HEX or before not in _HEX:
        return False
    if (
        start >= 4
        and text[start - 4] == "\\"
        and (text[start - 3] == "x" or (text[start - 3] in _OCTAL and before in _OCTAL and last in _OCTAL))
    ):
        return True  # \xHH, \NNN
    if start >= 6 and text[start - 6] == "\\" and text[start - 5] == "u":
        return text[start - 4] in _HEX and text[start - 3] in _HEX  # \uHHHH
    at = start - 2
    while at >= 3 and text.startswith("25", at - 2):  # %2525…3D: each 25 another encoding of the %
        at -= 2
    return at >= 1 and text[at - 1] == "%"


_ESCAPE_LETTERS = frozenset("abefnrtv0")
_HEX = frozenset("0123456789ABCDEFabcdef")
_OCTAL = frozenset("01234567")


def _value_span(text: str, start: int, end: int, kind: str) -> Span | None:
    """The span of a value without its quotes, or None when it is empty, a reference or a placeholder."""
    if start < 0 or end <= start:
        return None
    first = text[start]
    if first in "\"'":
        start += 1
        if end > start and text[end - 1] == first:
            end -= 1
    value = text[start:end]
    if not value or _is_reference(value):
        return None
    return (start, end, kind)


def _is_reference(value: str) -> bool:
    """A variable reference, template, placeholder or mask stands for a secret but is not one."""
    return (
        value[0] in "$<{%=*"
        or "«" in value
        or "»" in value
        or value.startswith("-")
        or value.strip("*xX•.") == ""
        or value.endswith(("...", "…"))  # `sk-...`: an elided example
        or value.lower() in _PLACEHOLDERS
        or _PLACEHOLDER_SHAPE.fullmatch(value) is not None
        or _CAPS_WORD.fullmatch(value.rstrip(",.;:)")) is not None  # a metavariable in docs: PASS, API_KEY
        or not any(map(str.isalnum, value))  # punctuation: the gap between two strings, `", "`
    )


_CAPS_WORD = lazyre.compile(r"[A-Z][A-Z_]{0,24}")


# Values that stand for a secret in docs and samples; redacting them would hide nothing, keeping them keeps
# examples readable. A real password of exactly `changeme` is therefore kept (it is no secret either).
_PLACEHOLDERS = frozenset(
    [
        "changeme",
        "changeit",
        "change-me",
        "change_me",
        "placeholder",
        "example",
        "dummy",
        "redacted",
        "todo",
        "tbd",
        "fixme",
        "secret",
        "password",
        "token",
        "value",
        "yourpassword",
        "mypassword",
    ]
)
_PLACEHOLDER_SHAPE = lazyre.compile(r"(?i)(?:your|my|insert|enter|put)[-_][\w-]*|[\w-]*[-_]here")


def _is_path(value: str) -> bool:
    """A file path or URL without credentials (a key *file* is not the key). Base64 may start with `/`
    too: a segment of 12+ characters mixing upper case, lower case and digits is not a path's."""
    if value.startswith(("file:", "http://", "https://")):
        return True
    if not value.startswith(("/", "./", "../", "~/")) and not (
        len(value) > 2 and value[1] == ":" and value[2] in "\\/"
    ):
        return False
    return not any(_RANDOM_SEGMENT.search(part) for part in value.split("/"))


_RANDOM_SEGMENT = lazyre.compile(r"^(?=.*[a-z])(?=.*[A-Z])(?=.*\d)[A-Za-z0-9+=]{12,}$")


def _plain_value(value: str) -> bool:
    """True for a value that is not a secret whatever its name: a type, boolean, path or small number."""
    lowered = value.lower()
    return (
        lowered in _NOT_VALUES
        or _is_path(value)
        or (value.isdigit() and len(value) <= 4)
        or _DOTTED_NAME.fullmatch(value) is not None
        or _VERSION.fullmatch(value) is not None
    )


# A version or a version range (`^9.0.0`, `~2.1.0`, `>=1.4`, `v18.6.1`, `5.0.2-beta.1`): a lockfile's value for
# a package named like a secret (`"jsonwebtoken": "^9.0.0"`, `registry-auth-token: 5.0.2`).
_VERSION = lazyre.compile(
    r"(?:[\^~=v]|[<>]=?)*\d+(?:\.\d+){1,3}"
    r"(?:-(?:alpha|beta|rc|pre|preview|dev|next|canary|snapshot|SNAPSHOT)(?:[.-]?\d{1,4})?)?"
)


_IDENTIFIER_PART = lazyre.compile(r"[A-Za-z]+\d{0,2}|\d{1,2}")


def _identifier_like(value: str) -> bool:
    """`development_settings_v2`, `MyServiceAccount`, `prod.eu-west-1`: words, not random characters.

    Parts of letters (and at most two trailing digits) between separators, whose camel-case words average
    at least 3 letters: `hashedPassword` is words, `odkFi45_aAoDCA` (odk Fi a Ao DCA) is not."""
    if not all(_IDENTIFIER_PART.fullmatch(part) for part in _SEPARATORS.split(value) if part):
        return False
    words = _CAMEL_WORD.findall(value)
    return not words or sum(map(len, words)) >= 3 * len(words)


_CAMEL_WORD = lazyre.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+")


_SEPARATORS = lazyre.compile(r"[_.\-/:]")


def _looks_random(value: str) -> bool:
    """The weak-name threshold: >= 16 characters, two of lower/upper/digit, not an identifier, and >= 3.0
    bits of Shannon entropy per character. Random keys clear it easily (32 hex digits ~3.7, 40 base64
    characters ~5.0); `development_settings_v2`, `./certs/dev.key` and `3600` do not."""
    if len(value) < 16 or _identifier_like(value) or _plain_value(value):
        return False
    classes = any(map(str.islower, value)) + any(map(str.isupper, value)) + any(map(str.isdigit, value))
    if classes < 2:
        return False
    counts = Counter(value)  # first-seen order, as the sum below has always been taken
    n = len(value)
    entropy = -sum(k / n * math.log2(k / n) for k in counts.values())
    return entropy >= 3.0


def _name_before(text: str, end: int, chars: frozenset[str]) -> int:
    """Start index of the run of CHARS that ends at END."""
    start = end
    while start > 0 and text[start - 1] in chars:
        start -= 1
    return start


def _kind_for_name(name: str) -> str:
    """Placeholder type for a variable or key NAME (`AWS_SECRET_ACCESS_KEY`, `db_password`, ...)."""
    upper = name.upper()
    if "AWS" in upper and "SECRET" in upper:
        return "aws-secret-key"
    if "PASSW" in upper or "PASSPHRASE" in upper or upper.endswith("PASS") or upper.endswith("PWD"):
        return "password"
    if "TOKEN" in upper:
        return "token"
    if "SECRET" in upper or "CREDENTIAL" in upper:
        return "secret"
    return "api-key"


# ------------------------------------------------------------------------------------------------ handlers


def _token(kind: str, group: int | str = 0, check_left: bool = True) -> Handler:
    """A self-identifying token (prefix + body): the whole match (or GROUP) is the secret."""

    def handle(m: re.Match[str], text: str) -> Span | None:
        if check_left and not _left_ok(text, m.start()):
            return None
        return (m.start(group), m.end(group), kind)

    return handle


def _value(kind: str | Callable[[re.Match[str], str], str]) -> Handler:
    """The named group ``v`` is the secret (quotes kept); KIND may depend on the match."""

    def handle(m: re.Match[str], text: str) -> Span | None:
        k = kind if isinstance(kind, str) else kind(m, text)
        return _value_span(text, m.start("v"), m.end("v"), k)

    return handle


_PEM_BEGIN = lazyre.compile(r"-----BEGIN[A-Z0-9 ]{0,40}PRIVATE KEY( BLOCK)?-----")
_PEM_END = lazyre.compile(r"-----END[A-Z0-9 ]{0,40}PRIVATE KEY( BLOCK)?-----")
_PEM_BODY = lazyre.compile(r"[A-Za-z0-9+/=\s\\:,.-]{0,16384}")
_PEM_WINDOW = 65536


def _private_keys(text: str) -> Iterator[Span]:
    """PEM private key blocks, BEGIN through END; without an END within 64 KiB (a truncated patch), the
    header and the base64-looking text after it. Linear: a stretch known to hold no END is not re-searched."""
    pos = 0
    no_end_until = 0  # no END line starts in [.., no_end_until - 64)
    while True:
        begin = _PEM_BEGIN.search(text, pos)
        if begin is None:
            return
        limit = begin.end() + _PEM_WINDOW
        end = None
        lo = max(begin.end(), no_end_until - 64)
        if lo < limit:
            end = _PEM_END.search(text, lo, limit)
        if end is not None:
            yield (begin.start(), end.end(), "private-key")
            pos = end.end()
            continue
        no_end_until = max(no_end_until, limit)
        body = _PEM_BODY.match(text, begin.end())
        pos = body.end() if body else begin.end()
        yield (begin.start(), pos, "private-key")


# A PEM key's body without its BEGIN line, as a diff shows it: a hunk that edits one line of a committed
# key has a few of its lines as context, and one that appends a certificate after it has the key's last
# lines and its END line. Git may also put a body line in the hunk header (`@@ -9,7 +9,7 @@ MIIEow…`).
# A line of 60-76 base64 characters (PEM wraps at 64, OpenSSH at 70), with a diff's marker before it, and
# indented (a key in YAML: a Kubernetes Secret's or a Helm chart's `tls.key: |`). The indentation is matched
# possessively where re can (3.11): no base64 character is a blank, so the matches are the same, and a code
# line's indentation is not stepped back through (the pass over the benchmark's mix: 1.2x the time it took
# without indentation, 1.7x with a plain `*`).
_INDENT = r"[ \t]*+" if sys.version_info >= (3, 11) else r"[ \t]*"
_KEY_LINE = lazyre.compile(r"\n(?:[+-]|@@ [^\n@]*@@ )?" + _INDENT + r"[A-Za-z0-9+/]{60,76}={0,2}\r?(?=\n|$)")
_KEY_FIRST_LINE = lazyre.compile(
    r"(?:[+-]|@@ [^\n@]*@@ )?" + _INDENT + r"[A-Za-z0-9+/]{60,76}={0,2}\r?(?=\n|$)"
)
_KEY_TAIL_LINE = lazyre.compile(r"(?:[+-]|@@ [^\n@]*@@ )?" + _INDENT + r"[A-Za-z0-9+/]{4,76}={0,2}\r?")
_KEY_RUN = 3  # consecutive lines: one or two such lines are a hash or a long identifier


def _key_bodies(text: str) -> Iterator[Span]:
    """Runs of _KEY_RUN or more base64 lines of a key's width, mixed case and digits (a key is random);
    and the base64 lines right above an `-----END … PRIVATE KEY-----` line, with it. A public certificate's
    body is taken too: nothing in it is worth finding by its words. Linear: one pass per pattern."""
    run_start = run_end = -1
    lines = 0
    first = _KEY_FIRST_LINE.match(text)  # the first line has no newline before it
    found = ([(0, first.end())] if first else []) + [
        (m.start() + 1, m.end()) for m in _KEY_LINE.finditer(text)
    ]
    for start, end in found:
        if start == run_end + 1 and lines:
            run_end, lines = end, lines + 1
            continue
        if lines >= _KEY_RUN and _random_run(text, run_start, run_end):
            yield (run_start, run_end, "private-key")
        run_start, run_end, lines = start, end, 1
    if lines >= _KEY_RUN and _random_run(text, run_start, run_end):
        yield (run_start, run_end, "private-key")
    for footer in _PEM_END.finditer(text) if "-----END" in text else ():
        line_start = text.rfind("\n", 0, footer.start()) + 1
        if text[line_start : footer.start()].strip(" \t+-"):
            continue  # the END line holds more than a diff's marker
        top = line_start
        while top > 0:
            above = text.rfind("\n", 0, top - 1) + 1
            if not _KEY_TAIL_LINE.fullmatch(text, above, top - 1):
                break
            top = above
        if top < line_start:
            yield (top, footer.end(), "private-key")


def _random_run(text: str, start: int, end: int) -> bool:
    """Whether TEXT[START:END] has lower case, upper case and digits, as a key's base64 does."""
    body = text[start:end]
    return any(map(str.isdigit, body)) and any(map(str.isupper, body)) and any(map(str.islower, body))


def _assignment(m: re.Match[str], text: str) -> Span | None:
    """A value assigned to a key named like a secret, in one of these shapes.

    - shell: `export X_TOKEN=value`, `DB_PASSWORD="value" cmd`, `-e API_KEY=value` -- a name, `=` with no
      spaces, anywhere on the line (a lower-case one only as a whole shell word);
    - config: `password: value`, `"api_key": "value"`, `secret = 'value'`, `db_password=value` -- a quoted
      value anywhere, a bare one only at the start of a line (YAML, .env, ini) and only when it does not
      look like code or a type annotation (`password: str`, `token = self.token`);
    - a URL query parameter (`?password=value&`), an .npmrc `_auth=`/`_authToken=`;
    - whitespace-separated: `aws configure set aws_secret_access_key VALUE`, single-dash tool flags
      (`keytool -storepass VALUE`), `.netrc` (`machine h login u password VALUE`), openssl `pass:VALUE`.

    Weak names (another `*_KEY`, AUTH, CREDENTIAL) need a value that looks random (:func:`_looks_random`).
    """
    w = m.group("w")
    word = "pass-only" if w == "pass" and not m.group("k") else w
    weak = w in ("_key", "credential") or (w == "auth" and not m.group("k"))
    key_start = _name_before(text, m.start(), _KEYNAME)
    key = text[key_start : m.end("k")]
    kind = _kind_for_name(key)

    def accept(start: int, end: int) -> Span | None:
        span = _value_span(text, start, end, kind)
        if span is None:
            return None
        value = text[span[0] : span[1]]
        if _plain_value(value) or (weak and not _looks_random(value)):
            return None
        return span

    found = m  # the separator and the value
    if _closes_key_string(m, text, key_start):
        # A value follows the key's closing quote only after a separator of its own, as after a JSON key
        # ending in a colon (`"password:": "V"`), or after a blank, shaped like a password.
        after_key = _AFTER_KEY_STRING.match(text, m.start("v"))
        if after_key is None:
            if word == "pass-only":  # bare `pass` names a value only as openssl's `pass:V`
                return None
            answer = _prompt_answer(text, m.start("v") + 1, accept)
            return answer if answer is not None else _word_after_key_string(text, m.start("v") + 1, accept)
        found = after_key
    sep = found.group("sep")
    vstart, vend = found.start("v"), found.end("v")
    raw = text[vstart:vend]
    quoted = raw[0] in "\"'"
    before = text[key_start - 1] if key_start else ""
    tail = found.group("tail")
    if len(tail) == _TAIL_BOUND and "=" not in tail:  # a glued word that long: read it whole (rare)
        whole_tail = _TAIL.match(found.string, vend)  # [^…]* matches, if only the empty string
        tail = whole_tail.group() if whole_tail is not None else tail
    whole = None
    # A value glued to punctuation is taken whole only where code does not stand: `NAME=value` (an .env
    # line, a shell assignment) and "the password is …". After `: ` or ` = ` it is code as often as config
    # (`token = strings.Split(x, ";")`, `pub token: Option<Secret<&'a str>>`), after `password ` prose and
    # shell (`--fields password 2>/dev/null`, "[password generator][1]"): cut as before.
    # A URL's next parameter (`?password=X&sslmode=require`) is never glued to the value.
    prose = sep.strip().rstrip(":") in ("is", "was")
    if tail and not quoted:
        if (sep == "=" or prose) and before not in ("?", "&") and "=" not in tail:
            whole = _glued(raw, tail, shell=sep == "=")
        if whole is not None:  # `Kx9mQ2&vLp8`, `Zq7(Lm4pWx9v`: a password holds any punctuation
            raw, vend = whole, vstart + len(whole)
        elif tail[0] not in _VALUE_ENDS:
            return None  # `get_token()`, `os.environ["KEY"]`: code
    after = text[vend] if vend < len(text) else " "
    if before == "/" and sep.strip() == ":":
        return None  # a URL's user (`https://x-access-token:TOKEN@host`): the URL rule takes its password

    if key.lower() in _NPMRC_KEYS and sep.strip() == "=":
        return accept(vstart, vend)
    if sep == "=" and before in ("?", "&") and not weak:  # a URL query parameter
        return accept(vstart, vend)
    shell = sep == "=" and not found.group("q") and before not in ("$", "{", ".") and _ENV_NAME.fullmatch(key)
    if shell and key != key.upper() and not (after.isspace() or after in "\"'`"):
        shell = None  # lower-case `name=value` counts only as a whole shell word, not `f(password=pw, x)`
    if shell:
        if word == "pass-only" and not (key.upper() == "PASS" or key.upper().endswith("_PASS")):
            return None
        if word == "_key" and key.upper() in _NOT_SECRET_KEY_NAMES:
            return None
        return accept(vstart, vend)
    if not sep.strip():  # whitespace separator
        return _spaced_assignment(text, key, key_start, raw, vstart, vend, accept)
    if prose:  # prose, wherever it stands: "Password is required" is kept
        value = raw.rstrip(".,;:!?)]}\"'")
        if not _named_in_prose(value):
            return None
        return accept(vstart, vstart + len(value))
    if word == "pass-only":  # bare `pass`: only openssl's `pass:VALUE`
        if key.lower() == "pass" and sep == ":" and before in (" ", "\t") and not quoted:
            return accept(vstart, vend)
        return None
    if not quoted:
        # Bounded look-back: a key 256+ characters into a line is not at its start (and a 1 MB line of
        # `password: ` must not rescan the line for every hit).
        lo = max(0, key_start - 256)
        line_start = max(lo, text.rfind("\n", lo, key_start) + 1)
        at_start = (line_start > lo or lo == 0) and bool(
            _LINE_START_KEY.fullmatch(text, line_start, key_start)
        )
        # Markdown inline code starts a line of its own: "Set `password: ...` in ..."
        at_start = at_start or text[line_start:key_start].rstrip(" \t").endswith("`")
        for stop in ",;}]" if whole is None else "":  # a password glued whole keeps its punctuation
            if stop in raw:
                raw = raw[: raw.index(stop)]
        vend = vstart + len(raw)
        lowered = raw.lower()
        if (
            not raw
            or lowered in _NOT_VALUES
            or lowered == key.lower().rsplit(".", 1)[-1]
            or _DOTTED_NAME.fullmatch(raw)
            or (after in "\"'" and len(raw) <= 2)  # a string prefix: `password = f"{x}"`
            or ("." in key and sep.strip() != sep)  # `self.token = new_token` is code
            or (sep.strip() == ":" and _TYPE_NAME.fullmatch(raw))  # `secret: Buffer` is a type
        ):
            return None
        if not at_start and not (_password_like(raw) or _looks_random(raw)):
            return None  # mid-line (`f(password: pw)`, prose): only a value shaped like a password
    return accept(vstart, vend)


def _closes_key_string(m: re.Match[str], text: str, key_start: int) -> bool:
    """Whether the quote an assignment rule took for the one opening the value (`password:"V"`) closes the
    string the key and its separator stand in: `Check for "password:" as password prompt`, `expect("Enter
    password: ")`, `'&password=' + escape(pw)`. So when the key's line holds an odd number of that quote
    before it (_in_string) and what follows the quote ends a string rather than starts a value: a blank, the
    end of the text, or punctuation after an expression. A word glued to it is a value (read as before): a
    stray quote earlier on the line (`path="/')`, an apostrophe) must not hide `password="123 456"`."""
    vstart = m.start("v")
    quote = text[vstart]
    if m.group("q") or m.group("sep").strip() not in (":", "=") or quote not in "\"'":
        return False  # `"password": "V"`, `password "V"`, `password: V`
    return text[vstart + 1 : vstart + 2] in _AFTER_STRING and _in_string(text, key_start, quote)


# What follows a string's closing quote (the empty string: the end of the text).
_AFTER_STRING = frozenset(["", " ", "\t", "\r", "\n", ")", "]", "}", ",", ";", "+", ".", "%", ":", "="])


def _in_string(text: str, start: int, quote: str) -> bool:
    """Whether START stands inside a string QUOTE opened before it on its line: an odd number of QUOTE
    stand between the line's start and START, an escaped one (`\\"`) or an apostrophe inside a word
    (`don't`) not counted. A line that starts more than 256 characters back holds none (a 1 MB line is not
    rescanned for every hit; the value after the key is then read as one, as over-redacting beats leaking)."""
    lo = max(0, start - 256)
    line_start = text.rfind("\n", lo, start) + 1
    if line_start == 0 and lo > 0:
        return False
    opened = False
    at = text.find(quote, line_start, start)
    while at >= 0:
        escaped = at > 0 and text[at - 1] == "\\"
        apostrophe = quote == "'" and at > 0 and text[at - 1].isalnum() and text[at + 1].isalnum()
        opened ^= not (escaped or apostrophe)
        at = text.find(quote, at + 1, start)
    return opened


# What follows a key's closing quote when the key holds its separator (`"password:"`): a separator and a
# value, as after `"password"` (_ASSIGN_SEP's quote, then its separator).
_AFTER_KEY_STRING = lazyre.compile(r"""(?P<q>["'])(?P<sep>[ \t]*[:=](?!=)[ \t]*)""" + _ASSIGN_VALUE)
# A word after that quote and a blank (`"password:" Kx9mQ2vLp8`).
_WORD_AFTER_KEY_STRING = lazyre.compile(r"""[ \t]+(?P<v>[A-Za-z0-9][^\s"'`;|&<>()\[\]{}]*)""")


def _word_after_key_string(text: str, start: int, accept: Callable[[int, int], Span | None]) -> Span | None:
    """The word after a blank after the closing quote (at START) of a key that holds its separator, when it
    looks like a password or random, as a bare value in the middle of a line must (`"password:" Kx9mQ2vLp8`;
    `the prompt "Password:" is matched` is prose)."""
    found = _WORD_AFTER_KEY_STRING.match(text, start)
    if found is None:
        return None
    value = found.group("v").rstrip(".,:!?")
    if not (_password_like(value) or _looks_random(value)):
        return None
    return accept(found.start("v"), found.start("v") + len(value))


# The literal that answers a quoted prompt, after the quote that closes the prompt: the next item of a pair or
# a list (`("password:", "V")`), a concatenation (`"password:" + "V"`), or the first argument of the next send
# call after the rest of the expect call (`child.expect("Password:"); child.sendline("V")`, Tcl's `expect
# "password:" { send -- "V\r" }`, paramiko's `chan.send("V\n")`). That call may start the next line when the
# prompt is the last thing on its own -- the rest of the call (`)`, `, timeout=30)`), a `;` or a Tcl `{` --
# as expect and pexpect scripts write it (`expect "password:"` / `send "V\r"`); in a diff after its `+`, `-`
# or context blank. Only the line right after: the text is redacted whole (a diff, a file, a commit
# message), and a prompt's line is where the regex starts, so no text without a prompt pays for it. A bytes
# or unicode prefix (`b"V"`) is allowed; a variable or an expression (`sendline(pw)`, `os.environ["PW"]`)
# matches nothing. Prose after the prompt (`Check for "password:" as the prompt`) is not the rest of a call.
_PROMPT_ANSWER = lazyre.compile(
    r"[ \t]*(?:[,+][ \t]*"
    r"|(?:[^\n\"'`;{}]{0,80}[;{][ \t]*"
    r"|(?:[,)\]][^\n\"'`;{}]{0,80})?(?:[;{][ \t]*)?\r?\n[+-]?[ \t]*)"
    r"(?:[A-Za-z_$][\w$]*(?:\.|->))*"
    r"(?:send|sendline|send_keys|write)(?:[ \t]*\([ \t]*|[ \t]+(?:--[ \t]+)?))"
    r"[bBuU]?(?P<v>\"(?:[^\"\\\n]|\\.)*\"|'(?:[^'\\\n]|\\.)*')"
)
# The line end an answer is sent with (`"V\r"`, `"V\n"`): the program's, not the password's.
_SENT_LINE_END = lazyre.compile(r"(?:\\[rn])+$")
# Another prompt in a list of prompts (`["password:", "Password:"]`, `"[Pp]assphrase"`, `"(?i)login"`): one
# that ends as a prompt does, or a regex's class of a letter's two cases, its case flag or `.*`.
_PROMPT_SHAPE = lazyre.compile(r"[:?]$|\[[A-Za-z]{2}\]|\(\?i\)|\.\*")


def _prompt_answer(text: str, start: int, accept: Callable[[int, int], Span | None]) -> Span | None:
    """The literal that answers a quoted prompt (_PROMPT_ANSWER, from the prompt's closing quote at START, on
    its line or the next), without the line end it is sent with, when it looks like a password or random: a
    scripted login's `("password:", "Kx9mQ2vLp8")`, `expect "password:"` / `send "Kx9mQ2vLp8\\r"`. One word
    only: a sentence (`"Enter your password"`, `"Are you sure (yes/no)?"`) or another prompt in the list is
    not an answer; nor is `"yes"`, nor `"$pw\\r"` (accept)."""
    found = _PROMPT_ANSWER.match(text, start)
    if found is None:
        return None
    vstart, vend = found.start("v") + 1, found.end("v") - 1
    value = text[vstart:vend]
    line_end = _SENT_LINE_END.search(value)
    if line_end is not None:
        value = value[: line_end.start()]
        vend = vstart + len(value)
    if (
        not value
        or any(ch.isspace() for ch in value)
        or _PROMPT_SHAPE.search(value)
        or not (_password_like(value) or _looks_random(value))
    ):
        return None
    return accept(vstart, vend)


def _glued(value: str, tail: str, *, shell: bool) -> str | None:
    """VALUE with the punctuation and characters glued to it (TAIL, up to the next space) when the whole
    word, less a sentence's closing punctuation, looks like a password or a random key and not like code.
    SHELL (after `NAME=`): a command separator ends it (`PGPASSWORD=hunter2&&psql`, `X=y;npm run dev`)."""
    glued = value + tail
    if shell:
        glued = _COMMAND_SEPARATOR.split(glued, 1)[0]
    whole = glued.rstrip(".,;:!?)]}")
    if (
        len(whole) <= len(value)
        or _CODE_SHAPE.fullmatch(glued.rstrip(".,;:!?"))
        or _CODE_SHAPE.fullmatch(whole)
        or _CALL_START.match(whole)
        or _OPERATOR.search(whole)
    ):
        return None
    return whole if _password_like(whole) or _looks_random(whole) else None


# An operator of code in the glued word: an arrow function with a call or a block (`e=>Kz9(e)`, `()=>{`),
# a comparison (`O2x!==e`). `=>` alone may be a password's (`Kx9m=>Q2vLp8`).
_OPERATOR = re.compile(r"=>.*[({]|[!=<>]=")
# What ends a value in a shell command line: `&&`, `||`, `;`, `|`, and `&` at the end of the word.
_COMMAND_SEPARATOR = re.compile(r"&&|\|\||[;|]|&$")
# Code at the start of a value: a dotted name's call or index (`strings.Split(`, `crypto.randomBytes(32)`,
# `os.environ[`), or a call with its arguments (`hash(pw,`, `f(x.y`).
_CALL_START = re.compile(r"[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)+[(\[]|[A-Za-z_$][\w$]*\([^()]*[,.]")


def _password_like(value: str) -> bool:
    """At least 8 characters of three classes (lower, upper, digit, symbol), not words: `Summer2024!`,
    `NFnRs05+CHS1AI`; not `pw`, `hashedPassword`, `new_token`, `options.token`."""
    if len(value) < 8 or _identifier_like(value):
        return False
    classes = (
        any(map(str.islower, value))
        + any(map(str.isupper, value))
        + any(map(str.isdigit, value))
        + (not value.isalnum())  # a symbol (VALUE is not empty here)
    )
    return classes >= 3


def _named_in_prose(value: str) -> bool:
    """Whether VALUE, which a sentence names ("the password is X", "my token was X", "use password X to log
    in"), is one: shaped like a password or random, or words and numbers, in both cases, 8+ characters
    (`PurpleMonkeyDishwasher42`, `Purple-Monkey-Dishwasher-42`, `Monkey42`, `Hunter2-Zeta-55`,
    `Hunter2-Zeta_1`): three classes, though read as an identifier elsewhere. Not a dotted or all-caps name
    (`settings.DbPassword2`, `DB_PASSWORD_V2`: the callers keep a dotted name as a plain value), nor words
    without both cases and a digit (`MyServiceAccount`, `development_settings_v2`)."""
    if _password_like(value) or _looks_random(value):
        return True
    return len(value) >= 8 and bool(_WORDS_AND_NUMBER.fullmatch(value))


# Words and numbers (both cases and a digit present) run together or joined by `-`, `_` or `.`, the digits
# anywhere (`Monkey42`, `Hunter2-Zeta-55`, `Hunter2-Zeta.07`); one way to read any text (a separator between
# repeats), so a long word that fails is read once, not in every way it splits.
_WORDS_AND_NUMBER = lazyre.compile(
    r"(?=[^a-z]*[a-z])(?=[^A-Z]*[A-Z])(?=[^0-9]*[0-9])[A-Za-z0-9]+(?:[-_.][A-Za-z0-9]+)*"
)


# A password a sentence names by a word around it, not `NAME=value`: "password for the staging is X",
# "password of the staging box is X", "the pass for prod is X", "pw is X", "pwd: X", "password → X". The
# word (password, passwd, passphrase, pass, pw, pwd) stands alone, then "for/of" and what it is for (up to
# 60 characters of one clause: no sentence end, comma or colon), or nothing after pw/pwd or before an
# arrow; then `is`, `was`, `:`, `=` or an arrow; then the value, judged as after "the password is"
# (_named_in_prose).
_PROSE_FOR = r"[ \t]+(?:for|of)[ \t]+(?:[^\s:=!?;,.]|\.(?=\S))(?:[^\n:=!?;,.]|\.(?=\S)){0,59}?"
_PROSE_SEP = r"(?:[ \t]+(?:is|was)(?:[ \t]*:)?[ \t]+|[ \t]*[:=][ \t]*)"
_PROSE_ARROW = r"[ \t]*(?:->|=>|→)[ \t]*"
_PROSE_VALUE = r"(?P<v>\"[^\"\n]*\"|'[^'\n]*'|`[^`\n]*`|[^\s\"'`]+)"


def _prose_password(m: re.Match[str], text: str) -> Span | None:
    """A password a sentence names around its word (_PROSE_FOR): the value, less a sentence's closing
    punctuation, when it looks like one (_named_in_prose) and not like code (`pw = hash(x)`, `pwd:
    os.getcwd()`). "the password for the account is reset by the admin", "pwd: /src" are kept."""
    if not _left_ok(text, m.start()):
        return None  # `bypass for`, `compass: N`, `$PWD`'s `OLDPWD=` (the `_pwd` rule's)
    vstart, vend = m.start("v"), m.end("v")
    raw = text[vstart:vend]
    if raw[0] in "\"'`":
        vstart, vend = vstart + 1, vend - 1 if len(raw) > 1 and raw[-1] == raw[0] else vend
        value = text[vstart:vend]
    else:
        value = raw.rstrip(".,;:!?)]}")
        word = raw.rstrip(".,;:!?")
        if any(
            _CODE_SHAPE.fullmatch(w) or _CALL_START.match(w) or _OPERATOR.search(w) for w in (word, value)
        ):
            return None  # `pw = PatternWaiter()`, `pw: Optional[str]`
        vend = vstart + len(value)
    if not value or _plain_value(value) or not _named_in_prose(value):
        return None
    return _value_span(text, vstart, vend, "password")


def _spaced_assignment(
    text: str,
    key: str,
    key_start: int,
    raw: str,
    vstart: int,
    vend: int,
    accept: Callable[[int, int], Span | None],
) -> Span | None:
    """`KEY VALUE` with only whitespace between: the AWS CLI, single-dash tool flags and .netrc."""
    lowered = key.lower()
    if lowered.endswith("aws_secret_access_key"):
        return (vstart, vend, "aws-secret-key") if _AWS_SECRET.fullmatch(raw) else None
    before = text[key_start - 1] if key_start else " "
    if _DASH_PASS_FLAG.fullmatch(lowered) and before.isspace():
        return accept(vstart, vend)  # keytool -storepass X, -keypass X, -srcstorepass X
    value = raw.rstrip(".,;:!?)]}\"'")
    if lowered.rsplit(" ", 1)[-1] in ("password", "passphrase", "secret") and _named_in_prose(value):
        return accept(vstart, vstart + len(value))  # prose: "use password X to log in", "secret X"
    if key != "password":
        return None
    lo = max(0, key_start - 512)
    line_start = max(lo, text.rfind("\n", lo, key_start) + 1)
    prefix = text[line_start:key_start]
    if ("machine" in prefix or "default" in prefix) and _NETRC_LINE.search(prefix):
        return accept(vstart, vend)
    line_end = text.find("\n", vend, vend + 512)
    rest = text[vend : vend + 512 if line_end < 0 else line_end]
    if (
        not prefix.strip(" \t+-")
        and (not rest.strip() or _password_like(raw))
        and "machine " in text[max(0, line_start - 500) : line_start]
    ):
        return accept(vstart, vend)  # a multi-line .netrc entry
    return None


_NPMRC_KEYS = frozenset(["_auth", "_authtoken", "_password"])
_DASH_PASS_FLAG = lazyre.compile(r"-[a-z]*pass(?:word)?")
# `machine HOST login USER password X`, `default login USER password X` (the password ends the prefix).
_NETRC_LINE = lazyre.compile(
    r"(?:^|[\s'\"`+-])(?:machine[ \t]+\S+|default)(?:[ \t]+(?:login|account)[ \t]+\S+)*[ \t]+$"
)


_ENV_NAME = lazyre.compile(r"[A-Za-z][A-Za-z0-9_]*")
_TYPE_NAME = lazyre.compile(r"[A-Z][a-z]+(?:[A-Z][a-z]*)*")
_AWS_SECRET = lazyre.compile(r"[A-Za-z0-9/+=]{30,}")


def _flag_kind(m: re.Match[str], text: str) -> str:
    flag = m.group("k").lower()
    if flag.startswith("pass"):
        return "password"
    if "token" in flag:
        return "token"
    if "secret" in flag or "cred" in flag:
        return "secret"
    return "api-key"


def _flag(m: re.Match[str], text: str) -> Span | None:
    """`--password=X`, `--token X`, `--api-key X`, `--client-secret X`; weak: `--key X`, `--auth X`.

    A spaced value that is a prose word or a metavariable is not a secret: `the --token option`, `if
    --token is omitted`, `--api-key KEY`."""
    span = _value_span(text, m.start("v"), m.end("v"), _flag_kind(m, text))
    if span is None:
        return None
    value = text[span[0] : span[1]]
    if text.startswith(("id=", "src=", "type="), span[0]):
        return None  # docker build --secret id=...,src=... names a file, it is not the secret
    if (
        m.group("sep") != "="
        and span[0] == m.start("v")
        and (value.lower().rstrip(",.;:!?)") in _PROSE_WORDS or _METAVARIABLE.fullmatch(value))
    ):
        return None
    flag = m.group("k").lower()
    weak = flag in ("key", "auth", "credential", "credentials", "license-key", "access-key")
    if _plain_value(value) or (weak and not _looks_random(value)):
        return None
    return span


# Words that follow a flag name in prose, not as its value ("the --token option", "--token is optional").
_PROSE_WORDS = frozenset(
    [
        "a",
        "an",
        "the",
        "and",
        "or",
        "but",
        "nor",
        "is",
        "are",
        "was",
        "were",
        "be",
        "been",
        "being",
        "to",
        "of",
        "in",
        "on",
        "at",
        "by",
        "for",
        "with",
        "from",
        "as",
        "if",
        "when",
        "then",
        "than",
        "that",
        "this",
        "these",
        "those",
        "it",
        "its",
        "not",
        "no",
        "only",
        "also",
        "instead",
        "option",
        "options",
        "flag",
        "flags",
        "argument",
        "arguments",
        "arg",
        "args",
        "parameter",
        "parameters",
        "param",
        "value",
        "values",
        "setting",
        "settings",
        "switch",
        "field",
        "variable",
        "must",
        "can",
        "may",
        "might",
        "should",
        "will",
        "would",
        "does",
        "do",
        "did",
        "has",
        "have",
        "had",
        "takes",
        "expects",
        "accepts",
        "works",
        "which",
        "who",
        "where",
        "here",
        "there",
        "above",
        "below",
        "first",
        "last",
        "every",
        "each",
        "any",
        "all",
        "is's",
        "isn't",
        "doesn't",
        "wins",
        "overrides",
        "defaults",
        "default",
        "set",
        "sets",
        "unset",
        "required",
        "optional",
    ]
)
_METAVARIABLE = lazyre.compile(r"[A-Z][A-Z0-9_]{0,24}|<[^>]*>|\[[^\]]*\]")


def _auth_header(m: re.Match[str], text: str) -> Span | None:
    scheme = m.group("s").lower()
    kind = "basic-auth" if scheme == "basic" else "bearer-token"
    return _value_span(text, m.start("v"), m.end("v"), kind)


def _bearer(m: re.Match[str], text: str) -> Span | None:
    """`Bearer TOKEN` anywhere (`-H "Bearer …"`, `Auth: Bearer …`), not only after `Authorization:`: a value
    that looks like a token (random, or password-like), so that prose (`Bearer tokens expire`) is kept."""
    if not _left_ok(text, m.start()):
        return None
    start = m.start("v")
    end = start + len(text[start : m.end("v")].rstrip(".,;:!?)]}"))
    span = _value_span(text, start, end, "bearer-token")
    if span is None:
        return None
    value = text[span[0] : span[1]]
    if _plain_value(value) or _DATE_OR_VERSION.fullmatch(value) is not None or _camel_identifier(value):
        return (
            None  # `Bearer 2024-01-01T00:00:00Z`, `Bearer v2_0_1_beta`, "the Bearer OAuth2AccessToken class"
        )
    if not (_looks_random(value) or _password_like(value)):
        return None
    return span


# A date, a time or a version spelled with `_` or `-`: what code and logs put after the word Bearer.
_DATE_OR_VERSION = lazyre.compile(
    r"\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?(?:Z|[+-]\d{2}:?\d{2})?)?"
    r"|v?\d+(?:[._-]\d+){1,3}(?:[._-]?(?:alpha|beta|rc|pre|preview|dev|next|canary|snapshot)(?:[._-]?\d{1,4})?)?"
)


def _camel_identifier(value: str) -> bool:
    """`OAuth2AccessToken`, `JwtBearerTokenHandler`: a class name, not a token. At least two capitalised
    words, words of 3+ letters (4 on average, no 5 consonants in a row, at most a third without a vowel),
    at most one acronym of 2-5 capitals and one run of 1-2 digits. About 1 in 2,500 random 16-character
    alphanumeric strings has that shape, 1 in 9,000 at 20 and none of 200,000 at 40."""
    if not _CAMEL_SHAPE.fullmatch(value):
        return False
    words = _CAMEL_WORD.findall(value)
    acronyms = titled = voiceless = 0
    for word in words:
        if word.isupper():
            if word != "O":  # the O of OAuth
                if not 2 <= len(word) <= 5:
                    return False
                acronyms += 1
            continue
        if len(word) < 3 or _CONSONANTS.search(word):
            return False
        titled += word[0].isupper()
        voiceless += _VOWEL.search(word) is None
    return (
        acronyms <= 1
        and titled >= 2
        and 3 * voiceless <= len(words)
        and sum(map(len, words)) >= 4 * len(words)
    )


_CAMEL_SHAPE = lazyre.compile(r"[A-Za-z]+(?:\d{1,2}[A-Za-z]+)?\d{0,2}")
_CONSONANTS = lazyre.compile(r"(?i)[^aeiouy]{5}")
_VOWEL = lazyre.compile(r"(?i)[aeiouy]")


def _cookies(text: str) -> Iterator[Span]:
    """The values of a `Cookie:` / `Set-Cookie:` header (also `"Cookie": "…"`, `document.cookie = "…"`,
    `curl --cookie '…'`) that look random (:func:`_looks_random`): a session id is a credential, `lang=en`,
    `Path=/` and `HttpOnly` are not. Each `name=value` of the header is looked at, up to the first that is
    not one. A header's name is case-insensitive (`COOKIE:`, `CoOkIe:`, `Set-cOOKIE:`): the name is found in
    the lower-cased text (the engine only calls this when that holds `cookie`)."""
    lowered = text.lower()
    if len(lowered) == len(text):
        heads: Iterable[int] = _find_all(lowered, "cookie")
    else:  # lower() changed the length (e.g. "İ"): offsets would not line up
        heads = (m.start() for m in _ignorecase("cookie").finditer(text))
    for head in heads:
        if head and text[head - 1] in _NAME:
            continue
        after = head + 6
        sep = _COOKIE_SEP.match(text, after)
        if sep is None and head >= 2 and text.startswith("--cookie", head - 2):
            sep = _COOKIE_FLAG.match(text, after)  # curl --cookie 'name=value'
        if sep is not None:
            yield from _cookie_values(text, sep.end())


def _find_all(text: str, word: str) -> Iterator[int]:
    """Where WORD starts in TEXT, left to right (occurrences that do not overlap)."""
    at = text.find(word)
    while at >= 0:
        yield at
        at = text.find(word, at + len(word))


def _curl_cookies(text: str) -> Iterator[Span]:
    """`curl -b 'name=value; …'` (also `-sb`), curl's short `--cookie`: only a curl command's, whose `-b` it
    is (`git checkout -b`, `grep -b` are other flags). A `-b FILE` (no `=`) is a cookie file, kept."""
    if not _command_starts(text, ("curl",), _CURL):
        return
    for flag in _CURL_COOKIE_FLAG.finditer(text):
        start = flag.start()
        if start and text[start - 1] in " \t" and _command_before(text, start, 500, ("curl",), _CURL):
            yield from _cookie_values(text, flag.end())


def _cookie_values(text: str, pos: int) -> Iterator[Span]:
    """The random-looking values of the `name=value; …` pairs from POS (a value in quotes: `session="…"`)."""
    while True:
        pair = _COOKIE_PAIR.match(text, pos)
        if pair is None:
            return
        value = pair.group("v")
        if (
            value
            and not _is_reference(value)
            and not _plain_value(value)
            and _ANALYTICS_ID.fullmatch(value) is None
            and _looks_random(value)
        ):
            yield (pair.start("v"), pair.end("v"), "cookie")
        pos = pair.end()
        if not text.startswith(";", pos):
            return
        pos += 1


# An analytics id (`_ga=GA1.2.1234567890.1600000000`, GA4's `GS1.1.…`, Meta's `_fbp=fb.1.…`): a client's
# random number and a timestamp, which log no one in.
_ANALYTICS_ID = lazyre.compile(r"(?:GA|GS|fb)\d?(?:\.\d+){2,9}")
_COOKIE_SEP = lazyre.compile(r"[\"']?[ \t]*[:=][ \t]*[\"'`]?")
_COOKIE_FLAG = lazyre.compile(r"[ \t]+[\"']?")
_CURL_COOKIE_FLAG = lazyre.compile(r"-[A-Za-z]*b(?:[ \t]+[\"']?|[\"'])")
_COOKIE_PAIR = lazyre.compile(r"[ \t]*[^\s=;,\"'`]{1,128}=(?P<q>\"?)(?P<v>[^\s;\"'`]{0,4096})(?P=q)")


def _header(m: re.Match[str], text: str) -> Span | None:
    """`X-API-Key: v`, `DD-APPLICATION-KEY: v`, `PRIVATE-TOKEN: v`, `Ocp-Apim-Subscription-Key: v`.

    The hit is the literal `-key:`/`-token:`/`-secret:`/`apikey:`; the header name runs back to a
    separator. Names that say what they carry (api, auth, token, secret, application, subscription, private,
    access, session, license) take any value; another `*-key:` needs a random-looking one."""
    colon = text.index(":", m.start())
    name_start = _name_before(text, colon, _HEADER_NAME)
    if name_start and (text[name_start - 1] in _WORD or text[name_start - 1] == "/"):
        return None  # glued to a word, or a URL's user (`https://x-access-token:TOKEN@github.com`)
    name = text[name_start:colon].lower()
    kind = "token" if "token" in name else "secret" if "secret" in name else "api-key"
    span = _value_span(text, m.start("v"), m.end("v"), kind)
    if span is None:
        return None
    value = text[span[0] : span[1]]
    if _plain_value(value):
        return None
    if not any(word in name for word in _STRONG_HEADER_WORDS) and not _looks_random(value):
        return None
    return span


_HEADER_NAME = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
_STRONG_HEADER_WORDS = (
    "api",
    "auth",
    "token",
    "secret",
    "application",
    "subscription",
    "private",
    "access",
    "session",
    "license",
    "functions",
)


def _lookback(kind: str, before: str, reach: tuple[int, int], ahead: str = "") -> Handler:
    """A token whose literal is in its middle (`Q~`, `_mmk`, `.atlasv1.`): the part before the hit must
    fullmatch BEFORE, REACH[0] to REACH[1] characters long, and start on a word boundary."""
    pattern = lazyre.compile(before)

    def handle(m: re.Match[str], text: str) -> Span | None:
        hit = m.start()
        for width in range(reach[1], reach[0] - 1, -1):
            start = hit - width
            if start < 0 or not pattern.fullmatch(text, start, hit):
                continue
            if _starts_token(text, start):
                return (start, m.end(), kind)
        return None

    return handle


_TOKEN_CHARS = _WORD | frozenset("_-.~+/")


def _starts_token(text: str, start: int) -> bool:
    """True when a token may start at START: after a non-token character, or after a diff line's `+`/`-`."""
    if start == 0 or text[start - 1] not in _TOKEN_CHARS or _after_escape(text, start):
        return True
    return text[start - 1] in "+-" and (start == 1 or text[start - 2] == "\n")


def _telegram(m: re.Match[str], text: str) -> Span | None:
    """`123456789:AA...` (bot id, colon, 35 characters starting with A): the id must be 5-16 digits."""
    end = m.start()
    start = end
    while start > 0 and text[start - 1] in "0123456789":
        start -= 1
    if not 5 <= end - start <= 16 or not _left_ok(text, start) or (start and text[start - 1] in "_-.:/"):
        return None
    return (start, m.end(), "telegram-token")


def _discord(m: re.Match[str], text: str) -> Span | None:
    """A Discord bot token: base64 of the bot's numeric id (starts M/N/O, 23-28 characters), `.`, 6, `.`,
    27-38. The hit is the first `.`; the id part is checked backwards."""
    end = m.start()
    start = end
    while start > 0 and end - start < 30 and text[start - 1] in _B64URL_CHARS:
        start -= 1
    if not 23 <= end - start <= 28 or text[start] not in "MNO":
        return None
    if not _starts_token(text, start):
        return None
    return (start, m.end(), "discord-token")


_B64URL_CHARS = _WORD | {"_", "-"}


def _azure_key(m: re.Match[str], text: str) -> Span | None:
    """`AccountKey=...;`, `SharedAccessKey=...`, `SharedAccessSignature=...` in a connection string."""
    if not _left_ok(text, m.start()):
        return None
    return _value_span(text, m.start("v"), m.end("v"), "azure-key")


def _fish_set(m: re.Match[str], text: str) -> Span | None:
    """fish's `set -gx DB_PASSWORD VALUE`: a variable named like a secret (strong names only)."""
    if not _left_ok(text, m.start()) or not _STRONG_NAME.search(m.group("k").upper()):
        return None
    span = _value_span(text, m.start("v"), m.end("v"), _kind_for_name(m.group("k")))
    if span is None or _plain_value(text[span[0] : span[1]]):
        return None
    return span


_STRONG_NAME = lazyre.compile(r"PASSWORD|PASSWD|PASSPHRASE|SECRET|TOKEN|API_?KEY|PRIVATE_?KEY|_PWD$|_PASS$")


def _xml_element(m: re.Match[str], text: str) -> Span | None:
    """`<password>VALUE</password>`, `<apiKey>VALUE</apiKey>` (Maven settings, .NET configs)."""
    span = _value_span(text, m.start("v"), m.end("v"), _kind_for_name(m.group("k")))
    if span is None or _plain_value(text[span[0] : span[1]]):
        return None
    return span


def _aws_key(m: re.Match[str], text: str) -> Span | None:
    """An AWS access key id, through the 40-character secret right after it when that is mixed case and
    digits, as a generated key is (a 40-character word or hex digest beside a key id is not one)."""
    if not _left_ok(text, m.start()):
        return None
    pair = m.group("pair")
    if pair and any(map(str.isdigit, pair)) and any(map(str.isupper, pair)) and any(map(str.islower, pair)):
        return (m.start(), m.end("pair"), "aws-key")
    return (m.start(), m.start() + 20, "aws-key")


def _htpasswd(m: re.Match[str], text: str) -> Span | None:
    """`htpasswd -b[c] FILE USER PASSWORD`: the password is the third operand (only with -b)."""
    if "b" not in m.group("flags") or not _left_ok(text, m.start()):
        return None
    return _value_span(text, m.start("v"), m.end("v"), "password")


def _stripe(m: re.Match[str], text: str) -> Span | None:
    """`sk_live_`, `sk_test_`, `rk_live_`, `rk_test_`, `pk_live_` (the regex starts at the `k_`)."""
    start = m.start() - 1
    if start < 0 or text[start] not in "srp" or (text[start] == "p" and m.group("env") != "live"):
        return None
    if not _left_ok(text, start):
        return None
    return (start, m.end(), "stripe-key")


def _sk_key(m: re.Match[str], text: str) -> Span | None:
    """Anthropic `sk-ant-api03-...`; OpenAI `sk-proj-...` or a legacy `sk-` + 32+ alphanumerics with a digit."""
    if not _left_ok(text, m.start()):
        return None
    if m.group("a") is not None:
        return (m.start(), m.end(), "anthropic-key")
    body = m.group("b")
    if body is not None and not any(map(str.isdigit, body)):
        return None
    return (m.start(), m.end(), "openai-key")


# `-p` after one of these (in the same command segment) is a password: attached (`-pSECRET`) for the
# MySQL family, attached or spaced for sshpass and registry logins. Anything else (`mkdir -p`, `ssh -p 22`,
# `git log -p`, `docker run -p 8080:80`, `psql -p 5432`) is not.
# What may precede a command name: a separator, a path, a quote (`bash -c '...'`) or a diff line's marker.
_CMD_BOUNDARY = frozenset(" \t\n\r/;|&(+\"'`-")
_ATTACHED_TOOLS = lazyre.compile(
    r"(?:mysql[a-z]*|mariadb[a-z-]*|sshpass|(?:docker|podman|nerdctl|buildah|skopeo|oras)[ \t]+login"
    r"|helm[ \t]+registry[ \t]+login)[ \t]"
)
_ATTACHED_NAMES = (
    "mysql",
    "mariadb",
    "sshpass",
    "docker",
    "podman",
    "nerdctl",
    "buildah",
    "skopeo",
    "oras",
    "helm",
)
_SPACED_TOOLS = lazyre.compile(
    r"(?:sshpass|(?:docker|podman|nerdctl|buildah|skopeo|oras|az)[ \t]+login|helm[ \t]+registry[ \t]+login)[ \t]"
)
# Every tool above has one of these in its name or its `login `: 5 finds rule out a text (`docker run -p`,
# `mkdir -p`) before the 18 finds of the tool names (they were ~1/10 of redaction time on the benchmark mix).
_PASSWORD_TOOL_WORDS = ("mysql", "mariadb", "sshpass", "login ", "login\t")
_SPACED_NAMES = ("sshpass", "docker", "podman", "nerdctl", "buildah", "skopeo", "oras", "helm", "az")
_CURL = lazyre.compile(r"curl[ \t]")
_GH_SECRET_SET = lazyre.compile(r"gh[ \t]+secret[ \t]+set[ \t]")
_LDAP = lazyre.compile(r"ldap(?:search|modify|add|delete|whoami|passwd|compare|modrdn|exop|url)[ \t]")
_LDAP_NAMES = (
    "ldapsearch",
    "ldapmodify",
    "ldapadd",
    "ldapdelete",
    "ldapwhoami",
    "ldappasswd",
    "ldapcompare",
    "ldapmodrdn",
    "ldapexop",
    "ldapurl",
)
_REDIS_CLI = lazyre.compile(r"redis-cli[ \t]")


def _command_before(text: str, end: int, reach: int, names: tuple[str, ...], pattern: lazyre.Pattern) -> bool:
    """Whether a command matching PATTERN (starting with one of NAMES, after a separator, a path, a quote
    or a diff marker) begins in the shell segment that ends at END (at most REACH characters back)."""
    starts = _command_starts(text, names, pattern)
    if not starts:  # the common case (`mkdir -p`, `git log -p` and no mysql anywhere): no segment to find
        return False
    lo = _segment_start(text, end, reach)
    k = bisect.bisect_left(starts, lo)
    return k < len(starts) and starts[k] < end


# The last text's command positions per pattern. Found once per text with str.find, then bisected for each
# flag: a regex search of the segment for every `-p` took 70 us per hit on a 1 MB line of `curl -u a:`.
_STARTS_CACHE: dict[int, tuple[str, list[int]]] = {}


def _command_starts(text: str, names: tuple[str, ...], pattern: lazyre.Pattern) -> list[int]:
    cached = _STARTS_CACHE.get(id(pattern))
    if cached is not None and cached[0] is text:
        return cached[1]
    starts: list[int] = []
    for name in names:
        i = text.find(name)
        while i >= 0:
            if (i == 0 or text[i - 1] in _CMD_BOUNDARY) and pattern.match(text, i):
                starts.append(i)
            i = text.find(name, i + 1)
    starts.sort()
    _STARTS_CACHE[id(pattern)] = (text, starts)
    return starts


def _segment_start(text: str, end: int, reach: int) -> int:
    """Where to look for the command that owns a flag at END: from the separator (newline, `;`, `|`, `&`)
    that starts its shell segment, at most REACH characters back."""
    lo = max(0, end - reach)
    return max(lo, max(text.rfind(sep, lo, end) for sep in "\n;|&"))


def _tool_dash_p(m: re.Match[str], text: str) -> Span | None:
    """`mysql -uroot -pSECRET`, `sshpass -p SECRET`, `docker login -p SECRET`: only after that tool."""
    names, tool = (_SPACED_NAMES, _SPACED_TOOLS) if m.group("sp") else (_ATTACHED_NAMES, _ATTACHED_TOOLS)
    if not _run_by(m.start(), text, names, tool):
        return None
    return _value_span(text, m.start("v"), m.end("v"), "password")


def _run_by(start: int, text: str, names: tuple[str, ...], tool: lazyre.Pattern) -> bool:
    """Whether the flag at START (after a space, or after a quote after a space: `shlex.join` quotes
    `'-pX#9'`, as an agent's argument list reaches us) belongs to a command of NAMES (matching TOOL) in its
    segment."""
    if start > 0 and text[start - 1] in "'\"":
        start -= 1
    return start > 0 and text[start - 1].isspace() and _command_before(text, start, 300, names, tool)


def _after_tool(names: tuple[str, ...], tool: lazyre.Pattern) -> Handler:
    """A handler keeping the value of a flag only when one of NAMES (matching TOOL) runs it."""

    def handler(m: re.Match[str], text: str) -> Span | None:
        if not _run_by(m.start(), text, names, tool):
            return None
        return _value_span(text, m.start("v"), m.end("v"), "password")

    return handler


# `redis-cli -a SECRET`: only after redis-cli in the same command.
_redis_dash_a = _after_tool(("redis-cli",), _REDIS_CLI)


# Single-letter password flags that mean a password only after their own tool, in the same command:
# `zip -P X`, `7z a -pX`, `openssl enc -k X`, `smbclient -U user%X`.
_ZIP = lazyre.compile(r"(?:zip|unzip|zipcloak)[ \t]")
_SEVEN_ZIP = lazyre.compile(r"7z[arz]?[ \t]")
_OPENSSL = lazyre.compile(r"openssl[ \t]")
_SMB = lazyre.compile(r"(?:smbclient|rpcclient|smbcacls|smbget|net)[ \t]")
_SMB_NAMES = ("smbclient", "rpcclient", "smbcacls", "smbget", "net")


# `echo SECRET |` or `printf 'FORMAT' SECRET |` right before a `sudo -S` (found from the sudo: `echo` is
# everywhere, `-S` rare), or a here-string after it (`sudo -S cmd <<< SECRET`).
_ECHOED = lazyre.compile(
    r"(?:^|[\s;&(+`])(?:echo(?:[ \t]+-[neE]+)?|printf(?:[ \t]+--)?(?:[ \t]+(?:'[^'\n]*'|\"[^\"\n]*\"))?)[ \t]+\$?"
    + _SHELL_VALUE
    + r"[ \t]*\|[ \t]*$"
)
# `sudo -S cmd 2>&1 <<< SECRET`: a redirection's `&` does not end the command.
_HERE_STRING = lazyre.compile(r"(?:[^\n;|&]|[0-9]*>&[0-9-]*)*?<<<[ \t]*\$?" + _SHELL_VALUE)


def _smb_password(m: re.Match[str], text: str) -> Span | None:
    """`smbclient -U user%SECRET`, `-U "DOMAIN\\user%SECRET WITH SPACES"`, `--user=user%SECRET`: the password
    runs to the closing quote when the user was quoted, else to the end of the word."""
    if not _run_by(m.start(), text, _SMB_NAMES, _SMB):
        return None
    v0, quote = m.start("v"), m.group("q")
    if quote:
        v1 = text.find(quote, v0, m.end("v"))
        v1 = m.end("v") if v1 < 0 else v1
    else:
        word = _SMB_WORD.match(text, v0)
        v1 = word.end() if word else v0
    return (v0, v1, "password") if v1 > v0 and not _is_reference(text[v0:v1]) else None


_SMB_WORD = lazyre.compile(r"""[^\s"'`;|&<>)]*""")


def _echoed(text: str, start: int, end: int) -> tuple[int, int] | None:
    """Where the word is that `echo WORD |` / `printf 'FMT' WORD |` pipes in, when TEXT up to END (a pipe)
    ends with one, looked for on the line of START within 300 characters before it."""
    lo = max(0, start - 300, text.rfind("\n", 0, start) + 1)
    found = _ECHOED.search(text[lo:end])
    return None if found is None else (lo + found.start("v"), lo + found.end("v"))


def _echo_to_sudo(m: re.Match[str], text: str) -> Span | None:
    """`echo SECRET | sudo -S ...`: the echoed word is the password sudo reads from its input."""
    echoed = _echoed(text, m.start(), m.start())
    if echoed is not None:
        span = _value_span(text, *echoed, "password")
    else:
        here = _HERE_STRING.match(text, m.end(), m.end() + 300)
        span = None if here is None else _value_span(text, here.start("v"), here.end("v"), "password")
    if span is not None and text.endswith("\\n", span[0], span[1]) and span[1] - span[0] > 2:
        span = (span[0], span[1] - 2, span[2])  # the line end a format or $'...' ends in is no part of it
    return span


def _vault_login(m: re.Match[str], text: str) -> Span | None:
    """`vault login TOKEN` (a legacy `s.` token has no prefix the token rules know); `vault login
    -method=... username=...` names no token here (its `password=` is the assignment rule's)."""
    start = m.start()
    before = text[max(0, start - 7) : start].rstrip(" \t")
    if not before.endswith("vault") or (len(before) > 5 and before[-6] not in _CMD_BOUNDARY):
        return None
    span = _value_span(text, m.start("v"), m.end("v"), "vault-token")
    if span is None or "=" in text[span[0] : span[1]] or _is_path(text[span[0] : span[1]]):
        return None
    return span


def _curl_user(m: re.Match[str], text: str) -> Span | None:
    """`curl -u user:SECRET ...` / `curl --user user:SECRET`."""
    start = m.start() - (1 if m.group("long") else 0)
    if start <= 0 or not text[start - 1].isspace() or not _command_before(text, start, 500, ("curl",), _CURL):
        return None
    quote = m.group("q")
    if quote and text.startswith(quote, m.start("v")):
        return None  # `curl -u 'admin:'`: no password (curl asks for it)
    if quote and text[m.start("v") : m.start("v") + 1] not in ("'", '"'):
        # `curl -u 'admin:pass with spaces'`: the quote opened before the user name closes the password.
        close = text.find(quote, m.start("v"))
        line_end = text.find("\n", m.start("v"))
        end = close if close >= 0 else (line_end if line_end >= 0 else len(text))
        return _value_span(text, m.start("v"), end, "password")
    return _value_span(text, m.start("v"), m.end("v"), "password")


def _echo_to_stdin(m: re.Match[str], text: str) -> Span | None:
    """`echo SECRET | docker login -u me --password-stdin`: the echoed word is the password the login
    reads from its input."""
    start = m.start()
    lo = max(0, start - 300, text.rfind("\n", 0, start) + 1)
    pipe = text.rfind("|", lo, start)
    if pipe < 0 or "login" not in text[pipe:start]:
        return None
    echoed = _echoed(text, start, pipe + 1)
    return None if echoed is None else _value_span(text, *echoed, "password")


def _sas_signature(m: re.Match[str], text: str) -> Span | None:
    """An Azure shared access signature's `sig=` in a URL that carries the SAS's other fields (`sv=`,
    `se=`, `sp=`, `sr=`): the signature is the credential."""
    lo = max(0, m.start() - 400, text.rfind("\n", 0, m.start()) + 1)
    if text[m.start() - 1 : m.start()] not in ("?", "&") or not _SAS_FIELDS.search(text, lo, m.end() + 400):
        return None
    return (m.start("v"), m.end("v"), "azure-key")


_SAS_FIELDS = lazyre.compile(r"[?&](?:sv|se|sp|sr|spr|srt)=")


def _url_user_token(m: re.Match[str], text: str) -> Span | None:
    """A token as a URL's user (`https://<40 hex>:x-oauth-basic@github.com`, `https://ghs_…@host`): random,
    long, not a word or a name."""
    value = m.group("v")
    if len(value) < 20 or not _looks_random(value):
        return None
    return (m.start("v"), m.end("v"), "token")


def _base64_private_key(m: re.Match[str], text: str) -> Span | None:
    """A PEM private key written base64 once more (a Kubernetes Secret's `tls.key`, a CI variable): the
    encoded `-----BEGIN … PRIVATE KEY-----` and all that follows in the run. A certificate (public) is not."""
    head = m.group()[:64]
    head = head[: len(head) - len(head) % 4]
    try:
        decoded = base64.b64decode(head, validate=False).decode("ascii", "replace")
    except ValueError:
        return None
    if "PRIVATE K" not in decoded:  # "PRIVATE KEY", its last letters maybe cut with the 64 characters
        return None
    return (m.start(), m.end(), "private-key")


# A line that decodes base64 (`echo … | base64 -d`, `base64 --decode <<< …`), and a base64 word on it. Tried
# at line starts only (a match always spans its whole line): unanchored, every position of a long line that
# says "base64" and decodes nothing started a scan to its end, and a 550 KB line of inlined wasm (gdamore/
# tcell's `data:application/wasm;base64,…`) took hours.
_DECODE_LINE = lazyre.compile(
    r"^[^\n]*\bbase64\b[^\n]*?[ \t](?:-[A-Za-z0-9]*[dD][A-Za-z0-9]*|--decode)\b[^\n]*", re.MULTILINE
)
_B64_WORD = lazyre.compile(r"(?<![A-Za-z0-9+/=_.-])[A-Za-z0-9+/]{16,}={0,2}(?![A-Za-z0-9+/=_.-])")


# A basic-auth pair once decoded (`user:Sup3rS3cret!`): what `Authorization: Basic …` and registries hold;
# not a host and its port (`localhost:8080/api/v1`).
_BASIC_PAIR = re.compile(r"[\w.@+-]{1,64}:(\S[^\n]{7,127})")
_PORT = re.compile(r"\d{1,5}(?:/|$)")


def _decoded_secrets(text: str) -> Iterator[Span]:
    """A base64 word on a line that decodes base64 whose text holds a secret (`echo cG9zdGdyZXM6… | base64
    -d`, a Kubernetes Secret's value read back): the whole encoded word."""
    for line in _DECODE_LINE.finditer(text):
        for word in _B64_WORD.finditer(text, line.start(), line.end()):
            raw = word.group()
            try:
                decoded = base64.b64decode(raw + "=" * (-len(raw) % 4)).decode("utf-8")
            except ValueError:  # not base64, or not text (UnicodeDecodeError is a ValueError)
                continue
            pair = _BASIC_PAIR.fullmatch(decoded.strip())
            secret = pair is not None and "://" not in decoded and not _PORT.match(pair.group(1))
            if _spans(decoded, None) or (
                secret
                and pair is not None
                and (_password_like(pair.group(1)) or _looks_random(pair.group(1)))
            ):
                yield (word.start(), word.end(), "encoded-secret")


# A PostgreSQL password file's entry, `hostname:port:database:username:password` (libpq's ~/.pgpass; `\:`
# escapes a colon, `*` matches anything): four fields and the password, which runs to the end of the line
# (`VALUE` when the entry is quoted: to the quote that closes it). Only where `.pgpass` is named: on the
# same line (`echo 'h:5432:db:u:VALUE' >> ~/.pgpass`), or in the here-document a line naming it opens
# (`cat > ~/.pgpass <<EOF`). The port field must be a port (or `*`): a timestamp, an IPv6 address or a Go
# module path beside the name is not an entry.
# A field is at most 256 characters (a host name 253, a database or role name 63): unbounded, each start
# on a long run of other characters (the `+` and `/` of a 200 KB base64 line) scanned to the run's end.
_PGPASS_FIELD = r"(?:\\.|[^\s:'\"\\]){1,256}"
_PGPASS_ENTRY = lazyre.compile(
    rf"(?<![\w.:\\-])(?P<q>['\"]?){_PGPASS_FIELD}:(?:\*|\d{{1,5}}):{_PGPASS_FIELD}:{_PGPASS_FIELD}:"
    r"(?P<v>(?:\\.|[^\s'\"\\])(?:\\.|[^\n'\"\\])*)"
)
_PGPASS_HEREDOC = lazyre.compile(r"(?<!<)<<(?!<)-?[ \t]*(?P<q>['\"]?)(?P<end>[A-Za-z_][\w-]*)(?P=q)")


def _pgpass_password(text: str, m: re.Match[str], line_end: int) -> Span | None:
    """The password of entry M: to the quote that closes the entry (a quoted one), else to the end of its
    word, or of the line (LINE_END) in a here-document."""
    start, end = m.start("v"), m.end("v")
    quote = m.group("q")
    if quote:
        close = text.find(quote, start, line_end)
        end = close if close >= 0 else end
    elif line_end < 0:
        space = next((i for i in range(start, end) if text[i] in " \t"), end)
        end = space
    value = text[start:end].rstrip()
    if not value or PLACEHOLDER_RE.match(value) or _is_reference(value):
        return None
    return (start, start + len(value), "password")


def _pgpass_lines(text: str) -> Iterator[Span]:
    """The passwords of `.pgpass` entries (see _PGPASS_ENTRY): on a line naming `.pgpass`, and on the lines
    of a here-document such a line opens (up to its delimiter, at most _PGPASS_HEREDOC_LINES; in a diff,
    after a line's `+`, `-` or ` `)."""
    at = text.find(".pgpass")
    while at >= 0:
        lo = text.rfind("\n", 0, at) + 1
        hi = text.find("\n", at)
        hi = len(text) if hi < 0 else hi
        # An entry holds four colons (`host:port:db:user:password`): a long line with fewer (a bundle, a
        # base64 run) is not tried at every position of it.
        for m in _PGPASS_ENTRY.finditer(text, lo, hi) if text.count(":", lo, hi) >= 4 else ():
            span = _pgpass_password(text, m, hi if m.group("q") else -1)
            if span is not None:
                yield span
        here = _PGPASS_HEREDOC.search(text, lo, hi)
        line = hi + 1
        for _ in range(_PGPASS_HEREDOC_LINES if here is not None else 0):
            if line >= len(text):
                break
            stop = text.find("\n", line)
            stop = len(text) if stop < 0 else stop
            body = text[line:stop]
            if body[:1] in ("+", "-", " "):
                body = body[1:]
            if here is not None and body.strip() == here.group("end"):
                break
            entry = _PGPASS_ENTRY.match(text, stop - len(body.lstrip()), stop)
            span = None if entry is None else _pgpass_password(text, entry, stop)
            if span is not None:
                yield span
            line = stop + 1
        at = text.find(".pgpass", hi)


_PGPASS_HEREDOC_LINES = 100


def _xml_add_key(m: re.Match[str], text: str) -> Span | None:
    """`<add key="ApiKey" value="…"/>` (.NET appSettings): the value of a key named like a secret."""
    span = _value_span(text, m.start("v"), m.end("v"), _kind_for_name(m.group("k")))
    if span is None or _plain_value(text[span[0] : span[1]]):
        return None
    return span


# ------------------------------------------------------------------------------------------------- rules


def _no_handler(m: re.Match[str], text: str) -> Span | None:
    return None


def _rule(
    name: str,
    kinds: tuple[str, ...],
    literal: str,
    body: str,
    handler: Handler,
    lowered: bool = False,
    gate: Callable[[str], bool] | None = None,
) -> Rule:
    """A rule whose regex is LITERAL (matched exactly; lower case when LOWERED) followed by BODY."""
    assert not lowered or literal == literal.lower(), literal
    return Rule(name, kinds, re.escape(literal) + body, handler, lowered, None, literal, gate)


# Self-identifying tokens: (placeholder type, literal prefix, body). The whole match is the secret and must
# start on a word boundary. Formats after gitleaks' config/gitleaks.toml and trufflehog's detectors.
_B64URL = "[A-Za-z0-9_-]"
_END = "(?![A-Za-z0-9])"  # no longer alphanumeric run: the token ends here
_END_URL = "(?![A-Za-z0-9_-])"
_TOKENS: tuple[tuple[str, str, str], ...] = (
    *(("aws-key", p, "[A-Z0-9]{16}" + _END) for p in ("ABIA", "ACCA")),  # AKIA, ASIA: _TOKEN_RULES
    ("aws-key", "ABSK", "[A-Za-z0-9+/]{100,300}={0,2}"),
    *(("github-token", p, "[A-Za-z0-9]{36,255}") for p in ("ghp_", "gho_", "ghu_", "ghs_", "ghr_")),
    ("github-token", "github_pat_", "[A-Za-z0-9_]{22,255}"),
    *(
        ("gitlab-token", p, "[A-Za-z0-9_-]{20,300}(?:\\.[0-9a-z]{9})?")
        for p in (
            "glpat-",
            "gldt-",
            "glrt-",
            "glptt-",
            "glcbt-",
            "glft-",
            "glimt-",
            "glagent-",
            "gloas-",
            "glsoat-",
            "glffct-",
        )
    ),
    ("gitlab-token", "GR1348941", "[A-Za-z0-9_-]{20,}"),
    ("slack-token", "xox", "(?:e\\.xox[bp]|[abposre])-(?=[A-Za-z0-9-]{0,20}[0-9])[A-Za-z0-9-]{10,255}"),
    ("slack-token", "xapp-", "\\d-[A-Za-z0-9-]{10,255}"),
    *(
        ("stripe-key", p, "[A-Za-z0-9]{10,255}")
        for p in ("sk_live_", "sk_test_", "sk_prod_", "rk_live_", "rk_test_", "rk_prod_", "pk_live_")
    ),
    ("stripe-key", "whsec_", "[A-Za-z0-9+/=]{24,}"),
    ("pypi-token", "pypi-AgEIcHlwaS5vcmc", "[A-Za-z0-9_-]{16,}"),
    ("npm-token", "npm_", "[A-Za-z0-9]{36}" + _END),
    ("google-api-key", "AIza", "[0-9A-Za-z_-]{35}" + _END_URL),
    ("google-oauth-secret", "GOCSPX-", "[A-Za-z0-9_-]{28}"),
    ("google-oauth-token", "ya29.", "[A-Za-z0-9_-]{20,}"),
    ("sendgrid-key", "SG.", "[A-Za-z0-9_-]{22}\\.[A-Za-z0-9_-]{43}"),
    *(("vault-token", p, "[A-Za-z0-9_-]{24,}") for p in ("hvs.", "hvb.", "hvr.")),
    ("heroku-key", "HRKU-", "[A-Za-z0-9_-]{20,}"),
    ("twilio-key", "SK", "[0-9a-fA-F]{32}" + _END),
    ("huggingface-token", "hf_", "[A-Za-z]{34}" + _END),
    ("huggingface-token", "api_org_", "[A-Za-z]{34}" + _END),
    *(("shopify-token", p, "[a-fA-F0-9]{32}" + _END) for p in ("shpat_", "shpca_", "shppa_", "shpss_")),
    *(("digitalocean-token", p, "[a-f0-9]{64}") for p in ("dop_v1_", "doo_v1_", "dor_v1_")),
    ("grafana-token", "glsa_", "[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}"),
    ("grafana-token", "glc_", "[A-Za-z0-9+/]{32,400}={0,3}"),
    ("grafana-token", "eyJrIjoi", "[A-Za-z0-9]{70,400}={0,3}"),
    ("newrelic-key", "NRAK-", "[A-Z0-9]{27}"),
    ("newrelic-key", "NRII-", "[A-Za-z0-9_-]{32}"),
    ("newrelic-key", "NRJS-", "[a-f0-9]{19}"),
    ("postman-key", "PMAK-", "[a-fA-F0-9]{24}-[a-fA-F0-9]{34}"),
    ("age-key", "AGE-SECRET-KEY-1", "[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}"),
    ("alibaba-key", "LTAI", "[A-Za-z0-9]{20}" + _END),
    ("artifactory-key", "AKCp", "[A-Za-z0-9]{69}"),
    ("artifactory-key", "cmVmd", "[A-Za-z0-9]{59}"),
    ("atlassian-token", "ATATT3", "[A-Za-z0-9_=-]{100,}"),
    ("databricks-token", "dapi", "[a-f0-9]{32}(?:-\\d)?" + _END),
    ("doppler-token", "dp.", "(?:pt|st|ct|sa|scim|audit)\\.[A-Za-z0-9]{40,44}"),
    ("dynatrace-token", "dt0c01.", "[A-Za-z0-9]{24}\\.[A-Za-z0-9]{64}"),
    *(("easypost-key", p, "[A-Za-z0-9]{54}") for p in ("EZAK", "EZTK")),
    *(("flutterwave-key", p, "(?:_TEST)?-[a-hA-H0-9]{12,32}(?:-X)?") for p in ("FLWSECK", "FLWPUBK")),
    ("linear-key", "lin_api_", "[A-Za-z0-9]{40}"),
    ("notion-token", "ntn_", "[0-9]{11}[A-Za-z0-9]{35}"),
    ("perplexity-key", "pplx-", "[A-Za-z0-9]{48}"),
    *(("planetscale-token", p, "[\\w=.-]{32,64}") for p in ("pscale_tkn_", "pscale_oauth_", "pscale_pw_")),
    ("prefect-key", "pnu_", "[A-Za-z0-9]{36}"),
    ("pulumi-token", "pul-", "[a-f0-9]{40}"),
    ("readme-key", "rdme_", "[a-z0-9]{70}"),
    ("rubygems-key", "rubygems_", "[a-f0-9]{48}"),
    ("scalingo-token", "tk-us-", "[\\w-]{48}"),
    ("sendinblue-key", "xkeysib-", "[a-f0-9]{64}-[A-Za-z0-9]{16}"),
    ("sentry-token", "sntryu_", "[a-f0-9]{64}"),
    ("sentry-token", "sntrys_", "eyJ[A-Za-z0-9+/=_]{50,}"),
    *(("shippo-token", p, "[a-fA-F0-9]{40}") for p in ("shippo_live_", "shippo_test_")),
    *(("square-token", p, "[\\w-]{22,60}") for p in ("sq0atp-", "sq0csp-")),
    ("square-token", "EAAA", "[\\w-]{40,}"),
    *(("facebook-token", p, "[A-Za-z0-9]{100,}") for p in ("EAAC", "EAAM")),
    ("sourcegraph-token", "sgp_", "(?:[a-fA-F0-9]{16}_|local_)?[a-fA-F0-9]{40}"),
    ("infracost-key", "ico-", "[A-Za-z0-9]{32}"),
    ("frameio-token", "fio-u-", "[\\w=-]{64}"),
    ("octopus-key", "API-", "[A-Z0-9]{26}" + _END),
    ("1password-key", "A3-", "[A-Z0-9]{6}-(?:[A-Z0-9]{11}|[A-Z0-9]{6}-[A-Z0-9]{5})(?:-[A-Z0-9]{5}){3}"),
    ("1password-token", "ops_eyJ", "[A-Za-z0-9+/]{250,}={0,3}"),
    ("clojars-token", "CLOJARS_", "[A-Za-z0-9]{60}"),
    *(("duffel-token", p, "[\\w=-]{43}") for p in ("duffel_live_", "duffel_test_")),
    ("openshift-token", "sha256~", "[\\w-]{43}"),
    ("flyio-token", "fo1_", "[\\w-]{43}"),
    *(("flyio-token", p, "[A-Za-z0-9+/]{100,}={0,3}") for p in ("fm1r_", "fm1a_", "fm2_")),
    ("mapbox-token", "sk.eyJ", "[\\w-]{20,}\\.[\\w-]{20,}"),
    ("typeform-token", "tfp_", "[\\w.=-]{59}"),
    ("adobe-secret", "p8e-", "[A-Za-z0-9]{32}"),
    ("cloudflare-key", "v1.0-", "[a-f0-9]{24}-[a-f0-9]{146}"),
    *(("intra42-secret", p, "[a-f0-9]{64}") for p in ("s-s4t2ud-", "s-s4t2af-")),
    *(("settlemint-token", p, "[A-Za-z0-9]{16}" + _END) for p in ("sm_aat_", "sm_pat_", "sm_sat_")),
)

# Which text each assignment word's rule starts with, and the key words it covers.
_ASSIGN_WORDS: tuple[tuple[str, str], ...] = (
    ("pass", r"(?P<w>pass)(?P<k>(?:word|wd|phrase)?)"),
    ("secret", r"(?P<w>secret)(?P<k>(?:[_ -]?(?:access[_ -]?)?key)?)"),
    ("token", r"(?P<w>token)(?P<k>)"),
    ("api", r"(?P<w>api)(?P<k>[_ -]?key)"),
    ("private", r"(?P<w>private)(?P<k>[_-]?key)"),
    ("_pwd", r"(?P<w>_pwd)(?P<k>)"),  # MYSQL_PWD, DB_PWD; not the shell's $PWD
    ("credential", r"(?P<w>credential)(?P<k>s?)"),
    ("auth", r"(?P<w>auth)(?P<k>(?:[_-]?token|[_-]?key)?)"),
    ("_key", r"(?P<w>_key)(?P<k>)"),
)
_ASSIGN_SEP = (
    r"(?P<q>[\"']?)(?P<sep>[ \t]*[:=](?!=)[ \t]*|(?<=access_key)[ \t]+"
    r"|[ \t]+(?:is|was):?[ \t]+"  # prose: "the password is X", "is: X" (a value shaped like one only)
    r"|(?:(?<=pass|word)|(?<=phrase|secret))[ \t]+(?![A-Za-z_][\w.-]*=[^=]))"
)
_NAME_KINDS = ("password", "token", "secret", "api-key", "aws-secret-key")
_ASSIGN_LITERALS = tuple(lit for lit, _ in _ASSIGN_WORDS)

# Tokens of a known format that a line break may cut: a paste the terminal wrapped
# (`ghp_R8xk2LmQ9vTz4WpN7s` / `Hb3JcY6dFa1GeU5oKi`), a reply split across two text blocks. Literal ->
# (its alphabet, its longest body, [(the whole body's format, type)]). When the token's characters run to
# the end of a line short of the format and the next lines' runs complete it exactly, the continuation is
# part of the secret (_wrapped); anywhere else the rule reads as before. Only formats whose length is known:
# a cut one with a loose length (`sk-proj-` of a shape not listed) still loses its head only. The longest
# body bounds each run the cut form reads (`AKIA` a million times over is no quadratic search).
# A cut token holds some of its body before the break, and is exactly as long as its format says once
# joined: "Classic tokens start with ghp_" then a line starting with a 40-character commit sha was read as
# one token (nothing of it before the break, and a GitHub token's length a range), and the sha line was
# lost. GitHub's are 36 characters after the prefix (the whole-token rule still reads 36 to 255). A longer
# head would miss the tokens a terminal cut early (a break in the first 8 characters: one wrap in five).
_WRAP_HEAD = 1
_GITHUB = ("[A-Za-z0-9]", 255, [("[A-Za-z0-9]{36}", "github-token")])
_OPENAI = "(?:[A-Za-z0-9_-]{74}|[A-Za-z0-9_-]{58})"
_SLACK = "b-\\d{10,13}-\\d{10,13}-[A-Za-z0-9]{24}|[pe](?:-\\d{10,13}){3}-[A-Za-z0-9]{28,34}"
_WRAPPABLE: dict[str, tuple[str, int, list[tuple[str, str]]]] = {
    **{p: _GITHUB for p in ("ghp_", "gho_", "ghu_", "ghs_", "ghr_")},
    "github_pat_": ("[A-Za-z0-9_]", 82, [("[A-Za-z0-9]{22}_[A-Za-z0-9]{59}", "github-token")]),
    **{p: ("[A-Z0-9]", 16, [("[A-Z0-9]{16}", "aws-key")]) for p in ("AKIA", "ASIA")},
    "xox": ("[A-Za-z0-9-]", 80, [(_SLACK, "slack-token")]),
    "sk-": (
        "[A-Za-z0-9_-]",
        170,
        [
            ("ant-api03-[A-Za-z0-9_-]{93}AA", "anthropic-key"),
            (f"(?:proj|svcacct|admin)-{_OPENAI}T3BlbkFJ{_OPENAI}", "openai-key"),
            ("[A-Za-z0-9]{20}T3BlbkFJ[A-Za-z0-9]{20}", "openai-key"),
        ],
    ),
    "npm_": ("[A-Za-z0-9]", 36, [("[A-Za-z0-9]{36}", "npm-token")]),
    "AIza": ("[0-9A-Za-z_-]", 35, [("[0-9A-Za-z_-]{35}", "google-api-key")]),
    "glpat-": ("[A-Za-z0-9_-]", 20, [("[A-Za-z0-9_-]{20}", "gitlab-token")]),
}
# At most this many lines after the first hold the rest of a cut token (a narrow terminal cuts one thrice).
_WRAP_LINES = 3


def _wrapped(literal: str, body: str, handler: Handler) -> tuple[str, Handler]:
    """The body and handler of LITERAL's rule that also find its token cut by line breaks (see _WRAPPABLE):
    the cut form is tried first, and where it is not one (a whole token at the end of a line, a next line
    that does not complete it) the rule's own BODY and HANDLER decide, as they did."""
    alphabet, longest, formats = _WRAPPABLE[literal]
    run = f"{alphabet}{{1,{longest}}}"
    lines = f"(?:{run}\\r?\\n){{0,{_WRAP_LINES - 1}}}"
    cut = f"(?P<cut>{alphabet}{{0,{longest}}}\\r?\\n{lines}{run}(?!{alphabet}))"
    whole = [(lazyre.compile(fmt), kind) for fmt, kind in formats]
    plain = lazyre.compile(re.escape(literal) + body)

    def handle(m: re.Match[str], text: str) -> Span | None:
        if m.group("cut") is None:
            return handler(m, text)
        span = _rejoined(m, text, whole)
        if span is not None:
            return span
        again = plain.match(text, m.start())
        return handler(again, text) if again is not None else None

    return f"(?:{cut}|(?:{body}))", handle


def _rejoined(m: re.Match[str], text: str, formats: list[tuple[lazyre.Pattern, str]]) -> Span | None:
    """The span of a token cut at the end of its line whose next lines' runs complete one of FORMATS
    exactly, or None (whole on its first line, fewer than _WRAP_HEAD characters of it there, or not
    completed)."""
    lines = m.group("cut").split("\n")
    first = lines[0].rstrip("\r")
    if (
        len(first) < _WRAP_HEAD
        or not _left_ok(text, m.start())
        or any(fmt.fullmatch(first) for fmt, _ in formats)
    ):
        return None
    joined, at = first, m.start("cut") + len(lines[0]) + 1
    for line in lines[1:]:
        piece = line.rstrip("\r")
        joined += piece
        for fmt, kind in formats:
            if fmt.fullmatch(joined):
                return (m.start(), at + len(piece), kind)
        at += len(line) + 1
    return None


def _token_rule(name: str, kinds: tuple[str, ...], literal: str, body: str, handler: Handler) -> Rule:
    """A self-identifying token's rule, which also finds the token cut by line breaks when its format is
    known (_WRAPPABLE)."""
    if literal in _WRAPPABLE:
        body, handler = _wrapped(literal, body, handler)
    return _rule(name, kinds, literal, body, handler)


_TOKEN_RULES: tuple[Rule, ...] = (
    *(_token_rule(f"token:{lit}", (kind,), lit, body, _token(kind)) for kind, lit, body in _TOKENS),
    _token_rule(
        "openai-anthropic",
        ("anthropic-key", "openai-key"),
        "sk-",
        r"(?:(?P<a>ant-[a-z]{2,10}\d\d-[A-Za-z0-9_-]{20,255})"
        r"|(?:proj|svcacct|admin)-(?P<p>[A-Za-z0-9_-]{20,255})|(?P<b>[A-Za-z0-9]{32,255}))",
        _sk_key,
    ),
    # An AWS key id, and the secret access key right after it when there is one, as the console's
    # credentials CSV and pasted pairs hold them (`AKIA…,<40 characters>`): the secret has no prefix.
    *(
        _token_rule(
            f"token:{lit}",
            ("aws-key",),
            lit,
            "[A-Z0-9]{16}"
            + _END
            + r"(?:(?:[ \t]*[,;|\t:/][ \t]*|[ \t]+)[\"']?(?P<pair>[A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=]))?",
            _aws_key,
        )
        for lit in ("AKIA", "ASIA")
    ),
    _rule("jwt", ("jwt",), "eyJ", rf"{_B64URL}{{8,}}\.eyJ{_B64URL}{{8,}}\.{_B64URL}*", _token("jwt")),
)


PATTERNS: tuple[Rule, ...] = (
    # Multi-line first: a key block may contain anything.
    Rule(
        "private-key",
        ("private-key",),
        _PEM_BEGIN.pattern,
        _no_handler,
        finder=_private_keys,
        literal="-----BEGIN",
    ),
    Rule(
        "private-key-body",
        ("private-key",),
        _KEY_LINE.pattern,
        _no_handler,
        finder=_key_bodies,
        literal="\n",
    ),
    Rule(
        "base64-decoded",
        ("encoded-secret",),
        _DECODE_LINE.pattern,
        _no_handler,
        finder=_decoded_secrets,
        literal="base64",
    ),
    Rule(
        "pgpass", ("password",), _PGPASS_ENTRY.pattern, _no_handler, finder=_pgpass_lines, literal=".pgpass"
    ),
    Rule(
        "cookie",
        ("cookie",),
        _COOKIE_PAIR.pattern,
        _no_handler,
        lowered=True,
        finder=_cookies,
        literal="cookie",
    ),
    Rule("curl-cookie", ("cookie",), _COOKIE_PAIR.pattern, _no_handler, finder=_curl_cookies, literal="curl"),
    # Self-identifying tokens (prefix + body).
    *_TOKEN_RULES,
    _rule(
        "slack-webhook",
        ("slack-webhook",),
        "hooks.slack.com/",
        r"(?:services|workflows|triggers)/(?P<v>[A-Za-z0-9_/+-]{8,300})",
        _token("slack-webhook", "v", check_left=False),
    ),
    *(
        _rule(
            f"webhook:{lit}",
            ("webhook",),
            lit,
            r"(?P<v>[\w@/.-]{20,400})",
            _token("webhook", "v", check_left=False),
        )
        for lit in ("webhook.office.com/webhookb2/", "/api/webhooks/")  # Microsoft Teams, Discord
    ),
    # Tokens whose literal is in the middle (checked backwards from the hit).
    _rule("telegram-token", ("telegram-token",), ":A", "[A-Za-z0-9_-]{34}" + _END_URL, _telegram),
    _rule(
        "discord-token",
        ("discord-token",),
        ".",
        r"[A-Za-z0-9_-]{6}\.[A-Za-z0-9_-]{27,38}" + _END_URL,
        _discord,
    ),
    _rule(
        "azure-ad-secret",
        ("azure-ad-secret",),
        "Q~",
        r"[A-Za-z0-9_~.-]{31,34}(?![A-Za-z0-9_~.-])",
        _lookback("azure-ad-secret", r"[A-Za-z0-9_~.]{3}\d", (4, 4)),
    ),
    _rule(
        "maxmind-key",
        ("maxmind-key",),
        "_mmk",
        _END,
        _lookback("maxmind-key", r"[A-Za-z0-9]{6}_[A-Za-z0-9]{29}", (36, 36)),
    ),
    _rule(
        "terraform-token",
        ("terraform-token",),
        ".atlasv1.",
        r"[A-Za-z0-9_=-]{60,70}",
        _lookback("terraform-token", r"[A-Za-z0-9]{14}", (14, 14)),
    ),
    # Credentials in context.
    _rule("url-password", ("password",), "://", r"[^\s:/@«»]*:(?P<v>[^\s@/«»]+)@", _value("password")),
    *(
        _rule(
            f"azure:{lit}",
            ("azure-key",),
            lit,
            body + r"[ \t]*=[ \t]*(?P<v>[^\s;\"'`<>]+)",
            _azure_key,
            lowered=True,
        )
        for lit, body in (("accountkey", ""), ("sharedaccess", "(?:key|signature)"))
    ),
    _rule(
        "nuget-password",
        ("password",),
        '<add key="',
        r'(?:cleartext)?password"[ \t]+value="(?P<v>[^"]*)"',
        _value("password"),
        lowered=True,
    ),
    _rule(
        "flag",
        ("password", "token", "secret", "api-key"),
        "--",
        r"(?:[a-z0-9]{1,30}-){0,4}(?P<k>password|passwd|passphrase|pass|token|authtoken|api-key|apikey|secret|secret-key"
        r"|access-key|private-key|license-key|key|auth|credentials?)(?P<sep>=|[ \t]+)" + _SHELL_VALUE,
        _flag,
    ),
    _rule(
        "tool-dash-p",
        ("password",),
        "-p",
        r"(?P<sp>[ \t]*)" + _SHELL_VALUE,
        _tool_dash_p,
        gate=lambda text: bool(
            any(word in text for word in _PASSWORD_TOOL_WORDS)
            and (
                _command_starts(text, _ATTACHED_NAMES, _ATTACHED_TOOLS)
                or _command_starts(text, _SPACED_NAMES, _SPACED_TOOLS)
            )
        ),
    ),
    _rule(
        "redis-dash-a",
        ("password",),
        "-a",
        r"[ \t]+" + _SHELL_VALUE,
        _redis_dash_a,
        gate=lambda text: bool(_command_starts(text, ("redis-cli",), _REDIS_CLI)),
    ),
    _rule(
        "zip-dash-P",
        ("password",),
        "-P",
        r"[ \t]+" + _SHELL_VALUE,
        _after_tool(("zip", "unzip", "zipcloak"), _ZIP),
        gate=lambda text: bool(_command_starts(text, ("zip", "unzip", "zipcloak"), _ZIP)),
    ),
    _rule(
        "7z-dash-p",
        ("password",),
        "-p",
        r"""(?P<v>"(?:[^"\\\n]|\\.)*"?|'[^'\n]*'?|[^\s"'`;|&<>)]+)""",
        _after_tool(("7z",), _SEVEN_ZIP),
        gate=lambda text: bool(_command_starts(text, ("7z",), _SEVEN_ZIP)),
    ),
    _rule(
        "openssl-dash-k",
        ("password",),
        "-k",
        r"[ \t]+" + _SHELL_VALUE,
        _after_tool(("openssl",), _OPENSSL),
        gate=lambda text: bool(_command_starts(text, ("openssl",), _OPENSSL)),
    ),
    *(
        _rule(
            "smb-user-password",
            ("password",),
            flag,
            body + r"""(?P<q>["']?)[^\s%"'`;|&<>]+%(?P<v>[^\n]*)""",
            _smb_password,
            gate=lambda text: bool(_command_starts(text, _SMB_NAMES, _SMB)),
        )
        for flag, body in (("-U", r"[ \t]*"), ("--user", r"(?:=|[ \t]+)"))
    ),
    _rule(
        "echo-to-sudo",
        ("password",),
        "sudo",
        r"[ \t]+(?:-[A-Za-z]+[ \t]+)*(?:-[A-Za-z]*S(?![A-Za-z])|--stdin(?![A-Za-z-]))",
        _echo_to_sudo,
        gate=lambda text: "echo" in text or "printf" in text or "<<<" in text,
    ),
    _rule(
        "vault-login",
        ("vault-token",),
        "login",
        r"[ \t]+(?!-)" + _SHELL_VALUE,
        _vault_login,
        gate=lambda text: "vault" in text,
    ),
    _rule(
        "curl-user",
        ("password",),
        "-u",
        r"(?P<long>ser)?[ \t]*(?P<q>[\"']?)[^\s:\"'@«»]+:" + _SHELL_VALUE,
        _curl_user,
        gate=lambda text: bool(_command_starts(text, ("curl",), _CURL)),
    ),
    _rule(
        "password-stdin",
        ("password",),
        "--password-stdin",
        r"(?![A-Za-z-])",
        _echo_to_stdin,
        gate=lambda text: "echo" in text or "printf" in text,
    ),
    *(
        _rule(
            "gh-secret-body",
            ("password",),
            flag,
            r"(?:=|[ \t]+)" + _SHELL_VALUE,
            _after_tool(("gh",), _GH_SECRET_SET),
            gate=lambda text: bool(_command_starts(text, ("gh",), _GH_SECRET_SET)),
        )
        for flag in ("--body", "-b")
    ),
    _rule(
        "ldap-dash-w",
        ("password",),
        "-w",
        r"[ \t]+" + _SHELL_VALUE,
        _after_tool(_LDAP_NAMES, _LDAP),
        gate=lambda text: bool(_command_starts(text, _LDAP_NAMES, _LDAP)),
    ),
    _rule("sas-signature", ("azure-key",), "sig=", r"(?P<v>[A-Za-z0-9%+/=]{20,})", _sas_signature),
    _rule(
        "url-user-token",
        ("token",),
        "://",
        r"(?P<v>[A-Za-z0-9_-]{20,200})(?::[^\s@/«»]*)?@",
        _url_user_token,
    ),
    _rule(
        "base64-private-key", ("private-key",), "LS0tLS1CRUdJTi", r"[A-Za-z0-9+/]*={0,2}", _base64_private_key
    ),
    _rule(
        "xml-add-key",
        _NAME_KINDS,
        "<add",
        # The key names the secret itself (ApiKey, DbPassword, ClientSecret): `TokenType`, `SecretStore`,
        # `PasswordPolicy` hold settings about one, not one.
        r"[ \t]+key=[\"'](?P<k>[a-z0-9_.:-]{0,40}(?:password|passwd|secret|token|api[_-]?key|access[_-]?key))"
        r"[\"'][ \t]+value=[\"'](?P<v>[^\"'\n]{1,500})[\"']",
        _xml_add_key,
        lowered=True,
    ),
    _rule(
        "htpasswd",
        ("password",),
        "htpasswd",
        r"(?P<flags>(?:[ \t]+-[A-Za-z]+)*)[ \t]+[^\s-]\S*[ \t]+\S+[ \t]+" + _SHELL_VALUE,
        _htpasswd,
    ),
    # Case-insensitive rules: patterns in lower case, searched in text.lower().
    _rule(
        "authorization",
        ("bearer-token", "basic-auth"),
        "authorization",
        r"[\"']?[ \t]*[:=][ \t]*[fbr]?[\"'`]?[ \t]*(?P<s>bearer|basic|token|bot)[ \t]+"
        r"(?P<v>[^\s\"'`<>{$«][^\s\"'`<>]*)",
        _auth_header,
        lowered=True,
    ),
    _rule(
        "bearer",
        ("bearer-token",),
        "bearer",
        r"[ \t]+(?P<v>[^\s\"'`<>{$«][^\s\"'`<>]*)",
        _bearer,
        lowered=True,
    ),
    *(
        _rule(
            f"header:{lit}",
            ("api-key", "token", "secret"),
            lit,
            body + r"[ \t]*(?P<v>[^\s\"'`<>,;|]+)",
            _header,
            lowered=True,
        )
        for lit, body in (("-", "(?:key|token|secret):"), ("apikey:", ""))
    ),
    _rule(
        "fish-set",
        _NAME_KINDS,
        "set",
        r"(?:[ \t]+-[a-zA-Z]+)+[ \t]+(?P<k>[A-Za-z_][A-Za-z0-9_]*)[ \t]+" + _SHELL_VALUE,
        _fish_set,
    ),
    _rule(
        "xml-element",
        _NAME_KINDS,
        "<",
        r"(?P<k>[a-z0-9_.-]{0,40}(?:password|passwd|secret|token|api[_-]?key|access[_-]?key))>"
        r"(?P<v>[^<\s]{1,500})</",
        _xml_element,
        lowered=True,
    ),
    # A password a sentence names around its word: "password for the staging is X", "pw is X", "pwd: X".
    _rule(
        "prose-password",
        ("password",),
        "pass",
        # `password is X`, `password: X`, `passwd=X` are the assignment rule's (its word `pass`)
        rf"(?:word|wd|phrase)?(?:{_PROSE_FOR}{_PROSE_SEP}|{_PROSE_ARROW}){_PROSE_VALUE}",
        _prose_password,
        lowered=True,
    ),
    _rule(
        "prose-pw",
        ("password",),
        "pw",
        rf"d?(?:{_PROSE_FOR})?(?:{_PROSE_SEP}|{_PROSE_ARROW}){_PROSE_VALUE}",
        _prose_password,
        lowered=True,
    ),
    # Assignments to names like secrets (shell variables, config keys): one rule per word.
    *(
        Rule(
            f"assign:{lit}",
            _NAME_KINDS,
            word + _ASSIGN_SEP + _ASSIGN_VALUE,
            _assignment,
            lowered=True,
            literal=lit,
        )
        for lit, word in _ASSIGN_WORDS
    ),
)

KINDS: tuple[str, ...] = tuple(sorted({kind for rule in PATTERNS for kind in rule.kinds}))


# ------------------------------------------------------------------------------------------------- engine


def _memchr_pattern(rule: Rule) -> lazyre.Pattern:
    """RULE's pattern written so that re sees a one-character literal prefix (found with memchr): the rest
    of the literal goes in an alternation with an empty-failing branch, `p(?:ass|(?!))...`. With the whole
    literal as prefix re would use its slower multi-character prefix search (measured 20x slower)."""
    source, literal, flags = rule.source, rule.literal, rule._pattern.flags
    if len(literal) < 2:
        return rule._pattern
    escaped = re.escape(literal)
    head = re.escape(literal[0]) + "(?:" + re.escape(literal[1:]) + "|(?!))"
    if source.startswith(escaped):
        return lazyre.compile(head + source[len(escaped) :], flags)
    group = f"(?P<w>{literal})"
    if source.startswith(group):  # the assignment rules capture their word
        return lazyre.compile(f"(?P<w>{head})" + source[len(group) :], flags)
    return rule._pattern


_TOKEN_IDS = frozenset(map(id, _TOKEN_RULES))
_TOKEN_PRIORITIES = tuple((i, r) for i, r in enumerate(PATTERNS) if id(r) in _TOKEN_IDS)
# Token literal -> its (priority, rule) pairs; a lower priority wins when two detections overlap.
_SCAN_LITERALS: dict[str, list[tuple[int, Rule]]] = {}
for _priority, _rule_ in _TOKEN_PRIORITIES:
    _SCAN_LITERALS.setdefault(_rule_.literal, []).append((_priority, _rule_))
_FINDERS = tuple((priority, rule) for priority, rule in enumerate(PATTERNS) if rule.finder is not None)
_CONTEXT = tuple(
    (priority, rule, _memchr_pattern(rule))
    for priority, rule in enumerate(PATTERNS)
    if rule.finder is None and id(rule) not in _TOKEN_IDS
)

# (start, end, priority, type)
_Hit = tuple[int, int, int, str]

# ------------------------------------------------------------------------------------------------ anchors
#
# What a pass over the text costs (benchmarks/bench_redact.py's mix, Python 3.11): re finds a pattern that
# starts with one literal character at ~1 ns per character, and a position where that character occurs but
# the rest fails costs a few ns more; a pattern that starts with a character *set* (an alternation of
# several first characters) is scanned ~10x slower. So the cost is the number of passes: 29 token passes
# (one per first character) and 31 context passes took over half of all redaction time (0.22 of ~0.4 s
# per 3 MB). Now each literal is found by an *anchor*: one of its characters, chosen so that few distinct
# anchors cover all literals (`p` finds `ghp_`, `npm_`, `dapi` ...; `s` finds `sk-`, `hvs.`, `shpat_` ...),
# with a look-behind for the characters before it: 16 token passes, and 14 group gates for the context
# rules (benchmarks/bench_redact.py --against REF: 8.2 -> 15.3 MB/s CPU side by side).


def _source_after_literal(rule: Rule) -> str:
    """RULE's pattern after its literal, with named groups made plain (an alternation may not repeat a
    group name)."""
    source = re.sub(r"\(\?P<\w+>", "(?:", rule.source)
    for head in (re.escape(rule.literal), "(?:" + rule.literal + ")"):
        if source.startswith(head):
            return source[len(head) :]
    raise ValueError(f"rule {rule.name}: pattern does not start with its literal")


def _choose_anchors(literals: Iterable[str]) -> dict[str, int]:
    """Literal -> offset of its anchor: greedily the character found in the most literals not yet covered
    (fewest passes). Never a literal's last character (unless it has one): the characters after the anchor
    let re reject most positions with one comparison per branch instead of a look-behind each."""
    left = {literal: frozenset(literal[:-1] or literal) for literal in sorted(set(literals))}
    chosen: dict[str, int] = {}
    while left:
        counts = Counter(chain.from_iterable(left.values()))
        anchor = max(sorted(counts), key=counts.__getitem__)
        for literal in [lit for lit, chars in left.items() if anchor in chars]:
            chosen[literal] = (literal[:-1] or literal).index(anchor)
            del left[literal]
    return chosen


def _trie(branches: list[tuple[str, str]]) -> str:
    """`(text, tail)` pairs as one regex whose alternatives are factored by their first character (re tries
    a branch that starts with a literal with one comparison)."""
    by_first: dict[str, list[tuple[str, str]]] = {}
    ends: list[str] = []
    for text, tail in branches:
        if text:
            by_first.setdefault(text[0], []).append((text[1:], tail))
        else:
            ends.append(tail)
    alternatives = [re.escape(c) + _trie(rest) for c, rest in by_first.items()] + ends
    return alternatives[0] if len(alternatives) == 1 and not ends else "(?:" + "|".join(alternatives) + ")"


class _AnchorScan:
    """One pass over the text: a match of its pattern at P means a rule's literal starts at P - offset
    (offset <= REACH) and its whole pattern matches there. LITERALS are its rules' literals, AT the offset
    of the anchor in each: a text holding none of them is not scanned, and the pattern is built and
    compiled on the first text that has one (a short text: see pattern_for)."""

    __slots__ = ("_compiled", "_partial", "anchor", "at", "literals", "members", "reach")

    def __init__(self, anchor: str, members: tuple[tuple[int, Rule], ...], at: dict[str, int]) -> None:
        self.anchor = anchor
        self.members = members
        self.at = {rule.literal: at[rule.literal] for _, rule in members}
        self.literals = tuple(self.at)
        self.reach = max(self.at.values())
        self._compiled: re.Pattern[str] | None = None
        self._partial: dict[tuple[str, ...], re.Pattern[str]] = {}

    def source(self, literals: Iterable[str] | None = None) -> str:
        """The pattern of the rules of LITERALS (None: all of them), in the members' order."""
        keep = None if literals is None else set(literals)
        branches = []
        for _, rule in self.members:
            literal, at = rule.literal, self.at[rule.literal]
            if keep is not None and literal not in keep:
                continue
            behind = f"(?<={re.escape(literal)})" if at else ""
            branches.append((literal[at + 1 :], behind + _source_after_literal(rule)))
        return re.escape(self.anchor) + _trie(branches)

    def pattern(self) -> re.Pattern[str]:
        compiled = self._compiled
        if compiled is None:
            compiled = self._compiled = re.compile(self.source())
        return compiled

    def pattern_for(self, text: str) -> re.Pattern[str] | None:
        """The pass for a short TEXT that holds the anchor (None: none of the literals, nothing to scan): the
        whole pattern once compiled; before that, the pattern of only the rules whose literal TEXT holds.

        That is the same pass: a branch whose literal is not in the text matches nowhere, and dropping it
        changes the order of no two branches that can match at one position (_trie orders alternatives by
        their next character, which two matches at one position share, and puts the ends last in list
        order), so every match and where the next search starts are the same. What it saves is compiling:
        the benchmark's failing command (`--api-key=sk-…`) opens the `s` pass, 1,449 characters of regex
        (7-13 ms to compile on the 2-core build machine), of which it needs the `sk-` branch. After
        _PARTIAL_MAX such subsets (a sync's short texts) the whole pattern is compiled and used instead."""
        if self._compiled is not None:
            return self._compiled if any(map(text.__contains__, self.literals)) else None
        present = tuple(literal for literal in self.literals if literal in text)
        if not present:
            return None
        partial = self._partial.get(present)
        if partial is None:
            if len(present) == len(self.literals) or len(self._partial) >= _PARTIAL_MAX:
                return self.pattern()
            partial = self._partial[present] = re.compile(self.source(present))
        return partial


# How many partial patterns a pass compiles (for texts holding different subsets of its literals) before it
# compiles its whole pattern: precheck's failing commands need one or two; a sync soon needs the whole.
_PARTIAL_MAX = 3


def _anchor_scans(rules: Iterable[tuple[int, Rule]], often: frozenset[str]) -> tuple[_AnchorScan, ...]:
    """RULES grouped by anchor character, one regex per group: `_(?:(?<=ghp_)[A-Za-z0-9]{36,255}|...)`.
    Each alternative is the rest of the literal, a look-behind for the literal, and the rule's body, so a
    match is a real detection, never just a literal. Rules named in OFTEN (they match in ordinary code:
    `-p 8080:80`, `password: str`) get their own groups, so that they do not open the others'."""
    rules = tuple(rules)
    anchors = _choose_anchors(rule.literal for _, rule in rules)
    groups: dict[tuple[str, bool], list[tuple[int, Rule]]] = {}
    for priority, rule in rules:
        key = (rule.literal[anchors[rule.literal]], rule.name in often)
        groups.setdefault(key, []).append((priority, rule))
    return tuple(_AnchorScan(anchor, tuple(members), anchors) for (anchor, _), members in groups.items())


_TOKEN_SCANS = _anchor_scans(_TOKEN_PRIORITIES, frozenset())
_ANCHOR_AT = {literal: at for scan in _TOKEN_SCANS for literal, at in scan.at.items()}
# Token literal -> the rules of it and of the shorter literals it starts with, by priority.
_TOKEN_CANDIDATES = {
    literal: sorted(pair for k in range(1, len(literal) + 1) for pair in _SCAN_LITERALS.get(literal[:k], ()))
    for literal in _SCAN_LITERALS
}
_OFTEN = frozenset(["tool-dash-p", "flag", "assign:pass", "assign:_key", "assign:token", "assign:auth"])
_CONTEXT_PASS = {id(rule): scan for _, rule, scan in _CONTEXT}
_CONTEXT_SCANS = tuple(
    (lowered, _anchor_scans(((p, r) for p, r, _ in _CONTEXT if r.lowered == lowered), _OFTEN))
    for lowered in (False, True)
)


def _handle(
    rule: Rule, priority: int, m: re.Match[str], text: str, gates: dict[int, bool], hits: list[_Hit]
) -> bool:
    """Add the detection at M to HITS, if any; False when RULE's gate is closed for TEXT (its tool is not
    there: the rest of its matches need not be looked at, e.g. 5,000 `-p` in the benchmark's diffs)."""
    if rule.gate is not None:
        ok = gates.get(priority)
        if ok is None:
            ok = gates[priority] = rule.gate(text)
        if not ok:
            return False
    span = rule.handler(m, text)
    if span is not None and span[1] > span[0]:
        hits.append((span[0], span[1], priority, span[2]))
    return True


def _collect(text: str, gates: dict[int, bool], hits: list[_Hit], prefilter: bool | None) -> None:
    """The token formats: a pass per anchor finds whole detections; at each, the rules of the literal there
    (and of the shorter literals it starts with: `eyJ` after `eyJrIjoi`) are tried, the first match wins.
    A pass none of whose literals is in TEXT is skipped when PREFILTER says so (see _redact_counts)."""
    for scan in _TOKEN_SCANS:
        if prefilter or (prefilter is None and scan._compiled is None):
            pattern = scan.pattern_for(text) if scan.anchor in text else None
            if pattern is None:
                continue
        else:
            pattern = scan._compiled or scan.pattern()
        for found in pattern.finditer(text):
            anchor = found.start()
            for _, rule in scan.members:
                start = anchor - _ANCHOR_AT[rule.literal]
                if start < 0 or not text.startswith(rule.literal, start):
                    continue
                for priority, candidate in _TOKEN_CANDIDATES[rule.literal]:
                    m = candidate._pattern.match(text, start)
                    if m is not None:
                        _handle(candidate, priority, m, text, gates, hits)
                        break


def _merge(hits: list[_Hit]) -> list[Span]:
    """Overlapping detections become one span (their union: no part of a secret is left), typed by the
    detection of the lowest priority."""
    hits.sort()
    merged: list[_Hit] = []
    for start, end, priority, kind in hits:
        if merged and start < merged[-1][1]:
            m_start, m_end, m_priority, m_kind = merged[-1]
            if priority < m_priority:
                m_priority, m_kind = priority, kind
            merged[-1] = (m_start, max(m_end, end), m_priority, m_kind)
        else:
            merged.append((start, end, priority, kind))
    return [(start, end, kind) for start, end, _, kind in merged]


def _splice(text: str, spans: list[Span], counts: dict[str, int]) -> str:
    parts: list[str] = []
    pos = 0
    for start, end, kind in spans:
        parts.append(text[pos:start])
        parts.append(placeholder(kind))
        counts[kind] = counts.get(kind, 0) + 1
        pos = end
    parts.append(text[pos:])
    return "".join(parts)


# A pass whose regex is not compiled yet runs on a text of up to this many characters (a shell command, a
# commit message, a short diff: most calls) only if the text holds one of its literals. Every match of a
# rule starts with its literal (in text.lower() for a lowered rule; tests/test_redact.py checks that), so a
# pass without any of its literals in the text cannot match, and skipping it changes nothing (tests/
# test_redact.py runs the engine with every pass so checked and with none over the corpus and a generated
# mix, and compares). What it saves is compiling: precheck redacting a few failing commands in a fresh
# process compiles the ~10 of ~250 regexes their text can match (~10 ms instead of ~80). Once compiled, a
# pass runs unchecked: on a short text the literal checks (~60 ns each) cost about what the pass does, on a
# long one more. The first long text compiles everything, so a sync stops checking after its first diff.
_PREFILTER_MAX = 4096


def redact_counts(text: str) -> tuple[str, dict[str, int]]:
    """Redact TEXT and return it with the number of secrets replaced per placeholder type.

    Every rule looks at the original text; overlapping detections are merged (see _merge)."""
    return _redact_counts(text, None if len(text) <= _PREFILTER_MAX else False)


def _redact_counts(text: str, prefilter: bool | None) -> tuple[str, dict[str, int]]:
    """redact_counts(TEXT). PREFILTER: True checks every pass's literals first (skipping the passes whose
    literals TEXT lacks, and running a context group's rules without their gate), False none, None those
    whose regex is not compiled yet."""
    counts: dict[str, int] = {}
    spans = _spans(text, prefilter) if text else []
    if not spans:
        return text, counts
    return _splice(text, spans, counts), counts


def mask(text: str) -> str:
    """TEXT with each secret redact() would replace overwritten by as many asterisks instead: the text keeps
    its length, for a line rewritten in place where the placeholders do not fit (hygiene/hooklog.py)."""
    spans = _spans(text, None if len(text) <= _PREFILTER_MAX else False) if text else []
    for start, end, _kind in spans:
        # A token cut by a line break (_wrapped) keeps the break: the lines stay lines.
        text = text[:start] + "".join(c if c in "\r\n" else "*" for c in text[start:end]) + text[end:]
    return text


def continues_token(before: str, after: str) -> bool:
    """Whether a token of a known format cut at the end of BEFORE goes on at the start of AFTER (two text
    blocks of one reply that split it): they are then joined by one line break, across which it is found."""
    tail, head = before[-512:], after[:512]
    cut = len(tail)
    return any(start < cut < end for start, end, _ in _spans(tail + "\n" + head, None))


def _spans(text: str, prefilter: bool | None) -> list[Span]:
    """Where TEXT's secrets are, merged, in order (see _redact_counts for PREFILTER)."""
    hits = _hits(text, prefilter)
    if '\\"' in text or "\\'" in text:
        hits += _escaped_hits(text, prefilter)
    return _merge(hits) if hits else []


# A quote escaped inside a string literal (`"{\"password\":\"X\"}"` in Java, C#, Go, a JSON string in
# JSON): the rules that read a name and its quoted value see `\"` where they expect `"`. Each line holding
# one is read again with those backslashes taken out, and what is found there is mapped back.
_ESCAPED_QUOTE = re.compile(r"\\(?=[\"'])")


def _escaped_hits(text: str, prefilter: bool | None) -> list[_Hit]:
    hits: list[_Hit] = []
    pos = _next_escaped(text, 0)
    while pos >= 0:
        start = text.rfind("\n", 0, pos) + 1
        end = text.find("\n", pos)
        end = len(text) if end < 0 else end
        pos = _next_escaped(text, end)
        line = text[start:end]
        lowered = line.lower()
        if not any(word in lowered for word in _ASSIGN_LITERALS):
            continue  # only a name and its quoted value read differently (a prefixed token was found already)
        parts = _ESCAPED_QUOTE.split(line)
        # A plain offset lies in part k, which starts k characters (the backslashes removed) later in TEXT.
        bounds = list(accumulate(len(part) for part in parts))
        for s, e, priority, kind in _hits("".join(parts), prefilter):
            hits.append(
                (
                    start + s + bisect.bisect_right(bounds, s),
                    start + e + bisect.bisect_right(bounds, e - 1),
                    priority,
                    kind,
                )
            )
    return hits


def _next_escaped(text: str, at: int) -> int:
    found = [i for i in (text.find('\\"', at), text.find("\\'", at)) if i >= 0]
    return min(found) if found else -1


def _hits(text: str, prefilter: bool | None) -> list[_Hit]:
    hits: list[_Hit] = []
    lowered = text.lower()
    for priority, rule in _FINDERS:
        # A lowered finder's literal is looked for in lower case (where lower() changed the length too: the
        # finder then finds its name by itself, as the context rules below do).
        if rule.finder is not None and rule.literal in (lowered if rule.lowered else text):
            hits.extend((start, end, priority, kind) for start, end, kind in rule.finder(text))
    gates: dict[int, bool] = {}
    _collect(text, gates, hits, prefilter)
    if len(lowered) != len(text):  # lower() changed the length (e.g. "İ"): offsets would not line up
        for priority, rule, _ in _CONTEXT:
            for m in (rule.fallback if rule.lowered else rule.pattern).finditer(text):
                _handle(rule, priority, m, text, gates, hits)
    else:
        # A group's regex is its gate: no match, none of its rules matches anywhere; a first match at P, none
        # matches before P - reach. Each rule then runs its own pass from there, so what is found is what a
        # pass per rule over the whole text finds. A gate not compiled yet is not compiled for a short text:
        # the rules whose literal it holds run their own passes over all of it instead (the same matches;
        # the gate only saves passes on long texts).
        for is_lowered, scans in _CONTEXT_SCANS:
            source = lowered if is_lowered else text
            for scan in scans:
                start = 0
                checked = prefilter or (prefilter is None and scan._compiled is None)
                if checked:
                    if scan.anchor not in source:
                        continue
                else:
                    first = (scan._compiled or scan.pattern()).search(source)
                    if first is None:
                        continue
                    start = max(0, first.start() - scan.reach)
                for priority, rule in scan.members:
                    if checked and rule.literal not in source:
                        continue
                    lazy = _CONTEXT_PASS[id(rule)]
                    for m in lazy.finditer(source, start):
                        if not _handle(rule, priority, m, text, gates, hits):
                            break
    return hits


def redact(text: str) -> str:
    """Return TEXT with every recognised secret replaced by a typed placeholder such as «redacted:aws-key»."""
    return redact_counts(text)[0]


# ------------------------------------------------------------------------------------------- fingerprint

# What the scan is built of rather than what it finds: tables derived from PATTERNS for speed (anchors,
# groups, priorities), caches that fill as texts are redacted, and tuning that changes no output
# (tests/test_redact_prefilter.py). Left out of rules_fingerprint, which a change to them must not move.
_MACHINERY = frozenset(
    [
        "_ANCHOR_AT",
        "_CONTEXT",
        "_CONTEXT_PASS",
        "_CONTEXT_SCANS",
        "_FINDERS",
        "_IGNORECASE_CACHE",
        "_OFTEN",
        "_PARTIAL_MAX",
        "_PREFILTER_MAX",
        "_SCAN_LITERALS",
        "_STARTS_CACHE",
        "_TOKEN_CANDIDATES",
        "_TOKEN_IDS",
        "_TOKEN_PRIORITIES",
        "_TOKEN_SCANS",
        "_priority",
        "_rule_",
        "KINDS",
        "TYPE_CHECKING",
        "_MACHINERY",
        "rules_fingerprint",
    ]
)


def rules_fingerprint() -> str:
    """A digest of what decides what is redacted, for nexusmem.redact's RULES_FINGERPRINT to be compared with
    (tests/test_redact.py): each rule in PATTERNS' order (its name, kinds, literal, pattern and case, and
    which handler, finder and gate it has, with the values those were made with); every other value of this
    module (the keyword lists, the placeholders and prose words, the regexes the handlers call, the wrap
    table), but the scan's machinery (_MACHINERY); and the constants in the code of every function and
    lambda here (the thresholds and words a handler tests: `len(value) < 16`, "PASSW"), read from the
    source's syntax tree, docstrings left out. Comments, docstrings, formatting and local names do not
    move it; a changed comparison (`<` for `<=`) does not either. The same on every Python and every run: the
    possessive `[ \\t]*+` that Python 3.11 allows (_INDENT) counts as the `[ \\t]*` it matches as."""
    import ast
    import hashlib
    import json
    import types
    from pathlib import Path

    def plain(value: Any) -> Any:
        """VALUE as JSON that is the same in every process (sets sorted, no ids, no compiled state)."""
        if isinstance(value, str):
            return value.replace(r"[ \t]*+", r"[ \t]*")
        if value is None or isinstance(value, (bool, int, float)):
            return value
        if isinstance(value, bytes):
            return {"bytes": value.hex()}
        if isinstance(value, (tuple, list)):
            return [plain(v) for v in value]
        if isinstance(value, (frozenset, set)):
            return {"set": sorted((plain(v) for v in value), key=json.dumps)}
        if isinstance(value, dict):
            return {"dict": sorted(([plain(k), plain(v)] for k, v in value.items()), key=json.dumps)}
        if isinstance(value, lazyre.Pattern):
            return {"re": plain(value.pattern), "flags": value.flags}
        if isinstance(value, re.Pattern):
            return {"re": plain(value.pattern), "flags": value.flags}
        if isinstance(value, Rule):
            fields = ("name", "kinds", "literal", "source", "lowered", "handler", "finder", "gate")
            return {"rule": [plain(getattr(value, f)) for f in fields], "flags": value._pattern.flags}
        if isinstance(value, types.FunctionType):  # which one, and what a factory made it with
            cells = [plain(cell.cell_contents) for cell in value.__closure__ or ()]
            return {"fn": value.__qualname__, "with": cells}
        if isinstance(value, (types.MethodType, types.BuiltinMethodType)):  # `_CURL.search`
            return {"method": value.__name__, "of": plain(value.__self__)}
        raise TypeError(f"rules_fingerprint: a {type(value).__name__} it cannot read")

    def constants(code: ast.AST) -> list[Any]:
        """The constants of a function or lambda: its defaults, then its body's (its docstring left out)."""
        assert isinstance(code, (ast.FunctionDef, ast.Lambda))
        parts: list[ast.AST] = [*code.args.defaults, *(d for d in code.args.kw_defaults if d is not None)]
        if isinstance(code, ast.Lambda):
            parts.append(code.body)
        else:
            body = code.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                body = body[1:]  # the docstring
            parts += body
        found = [n.value for part in parts for n in ast.walk(part) if isinstance(n, ast.Constant)]
        return [repr(v) if v is ... or isinstance(v, complex) else v for v in found]

    module = sys.modules[__name__]
    data = {
        name: plain(value)
        for name, value in sorted(vars(module).items())
        if not name.startswith("__")
        and name not in _MACHINERY
        and not isinstance(value, (type, types.ModuleType, types.GenericAlias, type(annotations)))
        and not (isinstance(value, types.FunctionType) and value.__module__ != __name__)
    }
    tree = ast.parse(Path(__file__).read_text(encoding="utf-8"))
    itself = {id(n) for top in tree.body if getattr(top, "name", "") in _MACHINERY for n in ast.walk(top)}
    code = [
        [getattr(node, "name", "<lambda>"), plain(constants(node))]
        for node in ast.walk(tree)
        if isinstance(node, (ast.FunctionDef, ast.Lambda)) and id(node) not in itself
    ]
    whole = {"rules": [plain(rule) for rule in PATTERNS], "data": data, "code": code}
    return hashlib.sha256(json.dumps(whole, sort_keys=True).encode("utf-8")).hexdigest()[:16]
