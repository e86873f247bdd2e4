"""Version numbers and version tags: how "1.2" compares with "1.2.0", and which family a tag belongs to.
Shared by the sources that read tags and release notes and by the store that answers release windows."""

from __future__ import annotations


def version_key(version: str) -> tuple[int, ...]:
    """ "1.2" → (1, 2, 0, 0): versions compare by number, and "1.2" is "1.2.0"."""
    parts = [int(p) for p in version.split(".")[:4]]
    return tuple(parts + [0] * (4 - len(parts)))


def tag_family(name: str, version: str) -> str:
    """The part of tag NAME before its VERSION, without a "v": "" for "v1.2.0" and "1.2.0", "lib-" for
    "lib-v2.0.0", "create-app@" for "create-app@2.0.0", "release-" for "release-2.0.1"."""
    prefix = name[: len(name) - len(version)] if name.endswith(version) else name
    if prefix[-1:] in ("v", "V") and (len(prefix) == 1 or not prefix[-2].isalnum()):
        prefix = prefix[:-1]
    return prefix
