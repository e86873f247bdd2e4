"""Identity: a project's id (shared by every clone of one origin) and content-addressed node ids."""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path

NODE_ID_LEN = 24

_SCP = re.compile(r"^(?:[^@/]+@)?([^:/]+):(?!//)(.+)$", re.DOTALL)
# scheme://[userinfo@]host[/path][?query][#fragment]: the userinfo is everything up to the host's last "@"
# (a user name may hold one: `https://me@corp.com:token@host/`); none of userinfo, query and fragment is part
# of the repository's identity, and each may hold a credential (`?access_token=…`).
_SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*://(?:[^/?#]*@)?([^/?#@]+)([^?#]*)(?:[?#].*)?$", re.DOTALL)


# A file URL names a path on this machine (`file:///x/r.git`, `file://localhost/x/r.git`): read as that path.
_FILE_URL = re.compile(r"^file://(?:localhost)?(/.*)$", re.IGNORECASE | re.DOTALL)


def normalise_url(url: str) -> str:
    """Reduce a remote URL to host/path: scheme, user, query, fragment and port-less noise, trailing '/' and
    '.git' removed, a secret the path holds redacted (`https://host/ghp_…/app` is
    host/«redacted:github-token»/app: the id is stored, shown and shared).

    git@github.com:Org/Repo.git, https://user@github.com/org/repo/ and ssh://git@github.com/org/repo
    all become github.com/org/repo; file:///x/origin.git and /x/origin.git/ both /x/origin.
    """
    url = url.strip()
    local = _FILE_URL.match(url)
    if local:  # `file:///x/origin.git` is the origin `/x/origin.git` is: one project, one id
        url = local.group(1)
    m = _SCHEME.match(url)
    if m:
        host, path = m.group(1), m.group(2) or ""
    else:
        m2 = _SCP.match(url)
        if m2 and not url.startswith("/"):
            host, path = m2.group(1), "/" + m2.group(2)
        else:
            host, path = "", url
    host = host.split(":")[0] if host.count(":") == 1 and host.split(":")[1].isdigit() else host
    path = path.rstrip("/")
    if path.endswith(".git"):
        path = path[:-4]
    path = path.rstrip("/")
    from nexusmem.redact import redact_path  # only when a project id is worked out (sync, status)

    joined = redact_path(f"{host}{path}" if host else path).lower()
    return redact_path(joined)  # a token only the lower case gives away: clean_id finds none in the id


# A project id that is a path (a repository with no remote: its work tree's root), on POSIX or Windows.
_PATH_ID = re.compile(r"^(?:/|\\\\|[a-zA-Z]:[\\/])")


def clean_id(recorded: str) -> str:
    """The id normalise_url gives today to the project an older release recorded as RECORDED when RECORDED
    holds a credential of the origin URL: before, an https URL's query and fragment, the user part after a
    first "@" and a secret in its path stayed in the id (`github.com/acme/w.git?access_token=ghp_…` is
    github.com/acme/w now). RECORDED itself otherwise: every id normalise_url gives (an scp-style remote's
    `?` or `#`, a user name with an "@", a path's are its own) and a path id (a repository with no remote,
    whose id is its root's path). A token only its letters' case gives away (lower-cased in RECORDED) is
    left for the next sync, which reads the origin URL again."""
    if not recorded or _PATH_ID.match(recorded) or not _holds_credential(recorded):
        return recorded
    return normalise_url(f"x://{recorded}")  # RECORDED is host/path: read as a URL's, the scheme a stand-in


# The host part of an id an older release made from `https://me@corp.com:token@host/…`: a password before "@".
_PASSWORD_IN_HOST = re.compile(r"^[^/:@«»\s]+:[^/@«»\s]*@[^/\s]*(?:/|$)")  # a placeholder's ":" is none


def _holds_credential(recorded: str) -> bool:
    """Whether RECORDED holds a secret the redaction rules find, or a password in its host part: what
    normalise_url never leaves in an id."""
    from nexusmem.redact import redact_path

    return bool(_PASSWORD_IN_HOST.match(recorded)) or redact_path(recorded) != recorded


def origin_url(root: Path) -> str | None:
    from nexusmem import gitcmd  # subprocess, only when a project id is asked for

    code, out = gitcmd.run_ok(["config", "--get", "remote.origin.url"], root)
    text = out.decode("utf-8", "replace").strip()
    return text if code == 0 and text else None


def project_id(root: Path) -> str:
    """The normalised origin URL when there is one, else the absolute path of the root (a byte of the path
    that is not UTF-8 written as \\xNN: the id is stored as text, and such a byte is no character)."""
    url = origin_url(root)
    if url:
        return normalise_url(url)
    return os.fsencode(root.resolve()).decode("utf-8", "backslashreplace")


def node_id(project: str, kind: str, natural_key: str) -> str:
    """sha256(project + NUL + kind + NUL + natural key), hex, first 24 characters."""
    data = f"{project}\0{kind}\0{natural_key}".encode("utf-8", "surrogateescape")
    return hashlib.sha256(data).hexdigest()[:NODE_ID_LEN]
