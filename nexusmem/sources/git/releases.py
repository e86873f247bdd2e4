"""Releases: the repository's version tags (`v1.2.0`, `0.30.4`, `pkg@2.1`), each with its commit and date.

A question that names a release ("since upgrading to 0.30.4, POSTs hang") is asking about the changes
around it: the ones that went into the next release, which is where a regression the user hit is fixed.
The sync keeps the tags in the store (nexusmem.store.releases); retrieval turns a version into a window of
time (retrieve.query).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from nexusmem import gitcmd
from nexusmem.nodes import redacted_path

# A tag whose name ends in a version: "v1.2.3", "1.2", "release-2.0.1", "pkg@3.4.0", "v14.3.2".
# A pre- or post-release is one too ("2.0.0-alpha.1", "2.9.0.post0", "1.0.0rc1"): its own release.
_VERSION_TAG = re.compile(
    r"(?:^|[-_/@vV])(\d+(?:\.\d+){1,3}(?:[-.]?(?i:alpha|beta|preview|pre|rc|dev|post|a|b|c)[.-]?\d*)?)$"
)
_FORMAT = "%(refname:strip=2)%00%(*objectname)%00%(objectname)%00%(creatordate:unix)"


@dataclass(frozen=True)
class Release:
    name: str  # the tag as written, a secret in it redacted
    version: str  # its dotted version ("1.2.3")
    sha: str  # the commit it names (an annotated tag peeled)
    ts: int  # when it was made (the tag's date, else its commit's), epoch ms


def parse(out: bytes) -> list[Release]:
    """The version tags of `git for-each-ref --format=_FORMAT refs/tags` output; other tags, and lines that
    do not parse, are passed over. A name is redacted folder by folder, as a path is (`ghp_…-1.2.0` is
    `«redacted:github-token»-1.2.0`): it still ends in its version, and is a family of its own
    (store.releases.tag_family); one whose redaction took its version is passed over too."""
    found: list[Release] = []
    for line in out.decode("utf-8", "replace").splitlines():
        fields = line.split("\0")
        if len(fields) != 4:
            continue
        name, peeled, sha, when = fields
        version = _VERSION_TAG.search(name)
        commit = peeled or sha
        if version is None or not re.fullmatch(r"[0-9a-f]{40}", commit) or not when.isdigit():
            continue
        name = redacted_path(name)
        if not name.endswith(version.group(1)):
            continue
        found.append(Release(name, version.group(1), commit, int(when) * 1000))
    return found


def read(root: Path) -> list[Release]:
    """Every version tag of the repository at ROOT (one `git for-each-ref`)."""
    code, out = gitcmd.run_ok(["for-each-ref", f"--format={_FORMAT}", "refs/tags"], root)
    return parse(out) if code == 0 else []
