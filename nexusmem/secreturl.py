"""A team store URL's secrets: dropping them from every URL NexusMem writes or shows, and what to say of a
config file whose `team.url` holds one. Apart from nexusmem.config so that the commit hook's precheck can
say it without loading the config schema (a few milliseconds of every commit)."""

from __future__ import annotations

import json
from pathlib import Path

from nexusmem import paths

# The libpq connection parameters whose value is a secret: the password, and the passphrase of the client
# key (`sslpassword`). `passfile` and `sslkey` name files: kept.
SECRET_URL_PARAMS = frozenset(["password", "sslpassword"])


def without_secrets(url: str) -> tuple[str, bool]:
    """(URL without its secrets: a password in user:secret@host and any SECRET_URL_PARAMS parameter,
    whether it held one). Every team store URL NexusMem writes or shows goes through here. ValueError for a
    URL urlsplit cannot read."""
    from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

    parts = urlsplit(url)
    had = parts.password is not None
    netloc = parts.netloc
    if had:
        userinfo, _, hostport = netloc.rpartition("@")
        netloc = f"{userinfo.split(':', 1)[0]}@{hostport}"
    query = parse_qsl(parts.query, keep_blank_values=True)
    kept = [(k, v) for k, v in query if k.strip().lower() not in SECRET_URL_PARAMS]
    clean = urlunsplit((parts.scheme, netloc, parts.path, urlencode(kept, safe="/:"), parts.fragment))
    return clean, had or len(kept) < len(query)


def has_password(url: str) -> bool:
    """Whether a PostgreSQL URL carries a secret (see without_secrets)."""
    try:
        return without_secrets(url)[1]
    except ValueError:
        return False


def team_url_with_password(path: Path) -> str | None:
    """The URL (its password dropped) that the config file PATH's `team.url` gives with a password in it, or
    None: read without validating the rest of the file, for the commit hook's precheck, which uses no other
    setting. A file that cannot be read or is no JSON object holds none here (the commands that load it,
    nexusmem.config, say why)."""
    try:
        data = json.loads(paths.read_small_text(path).removeprefix("\ufeff"))
    except (OSError, UnicodeDecodeError, ValueError, RecursionError):
        return None
    team = data.get("team") if isinstance(data, dict) else None
    url = team.get("url") if isinstance(team, dict) else None
    if not isinstance(url, str) or not has_password(url):
        return None
    return without_secrets(url)[0]


def password_in_url(path: Path, label: str) -> str:
    """What to say of a config file PATH whose `team.url` (LABEL, its password dropped) held a password."""
    return (
        f"{path}: 'team.url' holds a password, so the team store is not used until it is removed (a config"
        " file must never hold credentials in clear); your local memory is unaffected. Take the password out"
        " of the URL there and put it in PGPASSWORD or ~/.pgpass, or run"
        f" `nexusmem team init --url {label}` again (it writes the URL without one)"
    )
