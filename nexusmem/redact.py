"""Secret redaction, applied by every source before anything is stored.

Every recognised secret is replaced by a typed placeholder such as ``«redacted:aws-key»``; the rest of the
text is kept byte for byte (a URL keeps its scheme, user and host; a flag keeps its name; a quoted value
keeps its quotes). ``redact`` is idempotent: a placeholder is never matched again.

Speed. Sync runs this over every commit message and every patch (tens of MB), so each rule is a regex that
begins with a *literal* (``AKIA``, ``ghp_``, ``://``, ``--``, ``TOKEN=`` ...): CPython's ``re`` then scans
with a fast literal search and only tries the rest of the pattern where the literal occurs. A regex that
begins with a lookbehind, a character class, an alternation or ``(?i)`` loses that optimisation (measured
30-100x slower), so boundaries are checked in Python on the few hits instead, and case-insensitive rules
search a lower-cased copy of the text (same offsets) with lower-case literals.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

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
# A value after `NAME=` / `key:`: as above, but a bare one must end the word (`token = get_token()`,
# `api_key = os.environ["KEY"]` and `cache_key = f"..."` are code, not values).
_ASSIGN_VALUE = r"""(?P<v>"(?:[^"\\\n]|\\.)*"?|'[^'\n]*'?|[^\s"'`;|&<>()\[\]{}]+(?![^\s,;}\]|&<>"']))"""

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
_DOTTED_NAME = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+")
_LINE_START_KEY = re.compile(r"[ \t+\->]*(?:(?:export|set)[ \t]+)?[\"']?")
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


@dataclass(frozen=True)
class Rule:
    """One detector: a literal-prefixed regex and a handler that turns a hit into the span to replace.

    ``lowered`` rules search ``text.lower()`` (their pattern is written in lower case) so that they are
    case-insensitive without paying for ``re.IGNORECASE``.
    """

    name: str
    kinds: tuple[str, ...]
    pattern: re.Pattern[str]
    handler: Handler
    lowered: bool = False
    finder: Callable[[str], Iterable[Span]] | None = None  # a whole-text scan instead of pattern + handler

    @property
    def fallback(self) -> re.Pattern[str]:
        """The same pattern with IGNORECASE, for the rare text whose lower() changes its length."""
        return _ignorecase(self.pattern.pattern)


_IGNORECASE_CACHE: dict[str, re.Pattern[str]] = {}


def _ignorecase(pattern: str) -> re.Pattern[str]:
    compiled = _IGNORECASE_CACHE.get(pattern)
    if compiled is None:
        compiled = _IGNORECASE_CACHE[pattern] = re.compile(pattern, re.IGNORECASE)
    return compiled


# ----------------------------------------------------------------------------------------------- helpers


def _left_ok(text: str, start: int) -> bool:
    """True when the character before START does not glue a hit onto a longer word."""
    return start == 0 or text[start - 1] not in _WORD


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
        or value.strip("*x•.") == ""
    )


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
    if "SECRET" in upper:
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


_PEM_BEGIN = re.compile(r"-----BEGIN[A-Z0-9 ]{0,40}PRIVATE KEY( BLOCK)?-----")
_PEM_END = re.compile(r"-----END[A-Z0-9 ]{0,40}PRIVATE KEY( BLOCK)?-----")
_PEM_BODY = re.compile(r"[A-Za-z0-9+/=\s\\:,.-]{0,16384}")
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


def _assignment(m: re.Match[str], text: str) -> Span | None:
    """A value assigned to a key named like a secret, in one of three shapes.

    - shell: `export X_TOKEN=value`, `DB_PASSWORD="value" cmd`, `-e API_KEY=value` -- an upper-case
      name, `=` with no spaces, anywhere on the line;
    - config: `password: value`, `"api_key": "value"`, `secret = 'value'`, `db_password=value` -- a quoted
      value anywhere, a bare one only at the start of a line (YAML, .env, ini) and only when it does not
      look like code or a type annotation (`password: str`, `token = self.token`);
    - `aws configure set aws_secret_access_key VALUE` and openssl's `-passin pass:VALUE`.
    """
    word = "pass-only" if m.group("w") == "pass" and not m.group("k") else m.group("w")
    key_start = _name_before(text, m.start(), _KEYNAME)
    key = text[key_start : m.end("k")]
    sep = m.group("sep")
    vstart, vend = m.start("v"), m.end("v")
    raw = text[vstart:vend]
    quoted = raw[0] in "\"'"
    before = text[key_start - 1] if key_start else ""
    after = text[vend] if vend < len(text) else " "
    shell = sep == "=" and not m.group("q") and before not in ("$", "{", ".") and _ENV_NAME.fullmatch(key)
    if shell and key != key.upper() and not (after.isspace() or after in "\"'"):
        shell = None  # lower-case `name=value` counts only as a whole shell word, not `f(password=pw, x)`
    if shell:
        if word == "pass-only" and not (key.upper() == "PASS" or key.upper().endswith("_PASS")):
            return None
        if word == "_key" and (
            key in _NOT_SECRET_KEY_NAMES or not key.endswith("_KEY") or key != key.upper()
        ):
            return None
        return _value_span(text, vstart, vend, _kind_for_name(key))
    if word == "_key":
        return None  # `cache_key = ...` in code: only an upper-case shell variable counts
    if not sep.strip():  # whitespace separator: only `aws_secret_access_key VALUE`
        if key.lower().endswith("aws_secret_access_key") and _AWS_SECRET.fullmatch(raw):
            return (vstart, vend, "aws-secret-key")
        return None
    if word == "pass-only":  # bare `pass`: only openssl's `pass:VALUE`
        if key.lower() == "pass" and sep == ":" and before in (" ", "\t") and not quoted:
            return _value_span(text, vstart, vend, "password")
        return None
    if not quoted:
        line_start = text.rfind("\n", 0, key_start) + 1
        if not _LINE_START_KEY.fullmatch(text, line_start, key_start):
            return None
        for stop in ",;}]":
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
    return _value_span(text, vstart, vend, _kind_for_name(key))


_ENV_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_]*")
_TYPE_NAME = re.compile(r"[A-Z][a-z]+(?:[A-Z][a-z]*)*")
_AWS_SECRET = re.compile(r"[A-Za-z0-9/+=]{30,}")


def _flag_kind(m: re.Match[str], text: str) -> str:
    flag = m.group("k").lower()
    if flag.startswith("pass"):
        return "password"
    if "token" in flag:
        return "token"
    if "secret" in flag:
        return "secret"
    return "api-key"


def _flag(m: re.Match[str], text: str) -> Span | None:
    """`--password=X`, `--token X`, `--api-key X`, `--client-secret X` ..."""
    span = _value_span(text, m.start("v"), m.end("v"), _flag_kind(m, text))
    if span is not None and text.startswith(("id=", "src=", "type="), span[0]):
        return None  # docker build --secret id=...,src=... names a file, it is not the secret
    return span


def _auth_header(m: re.Match[str], text: str) -> Span | None:
    scheme = m.group("s").lower()
    kind = "basic-auth" if scheme == "basic" else "bearer-token"
    return _value_span(text, m.start("v"), m.end("v"), kind)


def _header_kind(m: re.Match[str], text: str) -> str:
    return "token" if "token" in m.group("k").lower() else "api-key"


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
    if body is not None and not any(c.isdigit() for c in body):
        return None
    return (m.start(), m.end(), "openai-key")


# `-p` after one of these (in the same command segment) is a password: attached (`-pSECRET`) for the
# MySQL family, attached or spaced for sshpass and registry logins. Anything else (`mkdir -p`, `ssh -p 22`,
# `git log -p`, `docker run -p 8080:80`, `psql -p 5432`) is not.
# What may precede a command name: a separator, a path, a quote (`bash -c '...'`) or a diff line's marker.
_CMD_START = r"""(?:^|[\s/;|&(+"'`-])"""
_DASH_P_ATTACHED = re.compile(
    _CMD_START
    + r"(?:mysql[a-z]*|mariadb[a-z-]*|sshpass|(?:docker|podman|nerdctl|buildah|skopeo|oras)[ \t]+login"
    r"|helm[ \t]+registry[ \t]+login)[ \t]"
)
_DASH_P_SPACED = re.compile(
    _CMD_START + r"(?:sshpass|(?:docker|podman|nerdctl|buildah|skopeo|oras)[ \t]+login"
    r"|helm[ \t]+registry[ \t]+login)[ \t]"
)
_CURL = re.compile(_CMD_START + r"curl[ \t]")


def _segment_start(text: str, end: int, reach: int) -> int:
    """Where to look for the command that owns a flag at END: from the separator (newline, `;`, `|`, `&`)
    that starts its shell segment, at most REACH characters back."""
    lo = max(0, end - reach)
    return max(lo, max(text.rfind(sep, lo, end) for sep in "\n;|&"))


def _tool_dash_p(m: re.Match[str], text: str) -> Span | None:
    """`mysql -uroot -pSECRET`, `sshpass -p SECRET`, `docker login -p SECRET`: only after that tool."""
    start = m.start()
    if start == 0 or not text[start - 1].isspace():
        return None
    tool = _DASH_P_SPACED if m.group("sp") else _DASH_P_ATTACHED
    if not tool.search(text, _segment_start(text, start, 300), start):
        return None
    return _value_span(text, m.start("v"), m.end("v"), "password")


def _curl_user(m: re.Match[str], text: str) -> Span | None:
    """`curl -u user:SECRET ...` / `curl --user user:SECRET`."""
    start = m.start() - (1 if m.group("long") else 0)
    if (
        start <= 0
        or not text[start - 1].isspace()
        or not _CURL.search(text, _segment_start(text, start, 500), start)
    ):
        return None
    return _value_span(text, m.start("v"), m.end("v"), "password")


# ------------------------------------------------------------------------------------------------- rules


def _no_handler(m: re.Match[str], text: str) -> Span | None:
    return None


def _rule(name: str, kinds: tuple[str, ...], pattern: str, handler: Handler, lowered: bool = False) -> Rule:
    return Rule(name, kinds, re.compile(pattern), handler, lowered)


def _literal_rules(
    name: str, kinds: tuple[str, ...], literals: tuple[str, ...], body: str, handler: Handler
) -> list[Rule]:
    """One rule per literal prefix (an alternation at the start would defeat re's literal search)."""
    return [_rule(f"{name}:{lit}", kinds, re.escape(lit) + body, handler) for lit in literals]


_B64URL = "[A-Za-z0-9_-]"
_NAME_KINDS = ("password", "token", "secret", "api-key", "aws-secret-key")

PATTERNS: tuple[Rule, ...] = (
    # Multi-line first: a key block may contain anything.
    Rule("private-key", ("private-key",), _PEM_BEGIN, _no_handler, finder=_private_keys),
    # Self-identifying tokens (prefix + body), most specific first.
    _rule("aws-key", ("aws-key",), r"A(?:KIA|SIA)[A-Z0-9]{16}(?![A-Za-z0-9])", _token("aws-key")),
    _rule(
        "github-token",
        ("github-token",),
        r"gh[pousr]_[A-Za-z0-9]{36,255}",
        _token("github-token"),
    ),
    _rule("github-pat", ("github-token",), r"github_pat_[A-Za-z0-9_]{22,255}", _token("github-token")),
    _rule("gitlab-token", ("gitlab-token",), r"glpat-[A-Za-z0-9_-]{20,255}", _token("gitlab-token")),
    _rule(
        "slack-webhook",
        ("slack-webhook",),
        r"hooks\.slack\.com/(?:services|workflows|triggers)/(?P<v>[A-Za-z0-9_/+-]{8,300})",
        _token("slack-webhook", "v", check_left=False),
    ),
    _rule(
        "slack-token",
        ("slack-token",),
        r"xox[abposr]-(?=[A-Za-z0-9-]{0,20}[0-9])[A-Za-z0-9-]{10,255}",
        _token("slack-token"),
    ),
    _rule("stripe-key", ("stripe-key",), r"k_(?P<env>live|test)_[A-Za-z0-9]{16,255}", _stripe),
    _rule("pypi-token", ("pypi-token",), r"pypi-AgEIcHlwaS5vcmc[A-Za-z0-9_-]{16,}", _token("pypi-token")),
    _rule("npm-token", ("npm-token",), r"npm_[A-Za-z0-9]{36}(?![A-Za-z0-9])", _token("npm-token")),
    _rule(
        "openai-anthropic",
        ("anthropic-key", "openai-key"),
        r"sk-(?:(?P<a>ant-[a-z]{2,10}\d\d-[A-Za-z0-9_-]{20,255})"
        r"|(?:proj|svcacct|admin)-(?P<p>[A-Za-z0-9_-]{20,255})|(?P<b>[A-Za-z0-9]{32,255}))",
        _sk_key,
    ),
    _rule(
        "google-api-key",
        ("google-api-key",),
        r"AIza[0-9A-Za-z_-]{35}(?![0-9A-Za-z_-])",
        _token("google-api-key"),
    ),
    _rule("jwt", ("jwt",), rf"eyJ{_B64URL}{{8,}}\.eyJ{_B64URL}{{8,}}\.{_B64URL}*", _token("jwt")),
    # Credentials in context.
    _rule("url-password", ("password",), r"://[^\s:/@«»]*:(?P<v>[^\s@/«»]+)@", _value("password")),
    _rule(
        "flag",
        ("password", "token", "secret", "api-key"),
        r"--(?:[a-z0-9]{1,30}-){0,4}(?P<k>password|passwd|pass|token|authtoken|api-key|apikey|secret|secret-key)"
        r"(?:=|[ \t]+)" + _SHELL_VALUE,
        _flag,
    ),
    _rule("tool-dash-p", ("password",), r"-p(?P<sp>[ \t]*)" + _SHELL_VALUE, _tool_dash_p),
    _rule(
        "curl-user",
        ("password",),
        r"-u(?P<long>ser)?[ \t]*[\"']?[^\s:\"'@«»]+:" + _SHELL_VALUE,
        _curl_user,
    ),
    # Case-insensitive rules: patterns in lower case, searched in text.lower().
    _rule(
        "authorization",
        ("bearer-token", "basic-auth"),
        r"authorization[\"']?[ \t]*[:=][ \t]*[fbr]?[\"'`]?[ \t]*(?P<s>bearer|basic|token|bot)[ \t]+"
        r"(?P<v>[^\s\"'`<>{$«][^\s\"'`<>]*)",
        _auth_header,
        lowered=True,
    ),
    _rule(
        "header",
        ("api-key", "token"),
        r"x-(?:[a-z0-9]{1,20}-){0,3}(?P<k>api-?key|auth-token|access-token|token)[ \t]*:[ \t]*"
        r"(?P<v>[^\s\"'`<>,;]+)",
        _value(_header_kind),
        lowered=True,
    ),
    # Assignments to names like secrets (shell variables, config keys): one rule per word.
    *(
        _rule(
            f"assign:{name}",
            ("password", "token", "secret", "api-key", "aws-secret-key"),
            word + r"(?P<q>[\"']?)(?P<sep>[ \t]*[:=](?!=)[ \t]*|(?<=access_key)[ \t]+)" + _ASSIGN_VALUE,
            _assignment,
            lowered=True,
        )
        for name, word in (
            ("pass", r"(?P<w>pass)(?P<k>(?:word|wd|phrase)?)"),
            ("secret", r"(?P<w>secret)(?P<k>(?:[_-]?(?:access[_-]?)?key)?)"),
            ("token", r"(?P<w>token)(?P<k>)"),
            ("api-key", r"(?P<w>api)(?P<k>[_-]?key)"),
            ("_key", r"(?P<w>_key)(?P<k>)"),
        )
    ),
)

KINDS: tuple[str, ...] = tuple(sorted({kind for rule in PATTERNS for kind in rule.kinds}))


# ------------------------------------------------------------------------------------------------- engine


def _splice(text: str, spans: list[Span], counts: dict[str, int]) -> str:
    parts: list[str] = []
    pos = 0
    for start, end, kind in spans:
        if start < pos:  # overlaps a span already replaced in this pass
            continue
        parts.append(text[pos:start])
        parts.append(placeholder(kind))
        counts[kind] = counts.get(kind, 0) + 1
        pos = end
    parts.append(text[pos:])
    return "".join(parts)


def redact_counts(text: str) -> tuple[str, dict[str, int]]:
    """Redact TEXT and return it with the number of secrets replaced per placeholder type."""
    counts: dict[str, int] = {}
    if not text:
        return text, counts
    lowered: str | None = None
    for rule in PATTERNS:
        if rule.finder is not None:
            found = list(rule.finder(text))
            if found:
                text = _splice(text, found, counts)
                lowered = None
            continue
        if rule.lowered:
            if lowered is None:
                lowered = text.lower()
            if len(lowered) == len(text):
                hits = rule.pattern.finditer(lowered)
            else:  # lower() changed the length (e.g. "İ"): offsets would not line up
                hits = rule.fallback.finditer(text)
        else:
            hits = rule.pattern.finditer(text)
        spans: list[Span] = []
        for m in hits:
            span = rule.handler(m, text)
            if span is not None and span[1] > span[0]:
                spans.append(span)
        if spans:
            text = _splice(text, spans, counts)
            lowered = None
    return text, counts


def redact(text: str) -> str:
    """Return TEXT with every recognised secret replaced by a typed placeholder such as «redacted:aws-key»."""
    return redact_counts(text)[0]
