"""Which collectors exist, in the order a sync runs them. Imported lazily: a source is loaded when used."""

from __future__ import annotations

import importlib
from typing import Any

from nexusmem.sources.base import Source

# name -> "module:Class"
SOURCES: dict[str, str] = {
    "git": "nexusmem.sources.git.source:GitSource",
    "diff": "nexusmem.sources.git.source:DiffSource",
    "docs": "nexusmem.sources.docs:DocsSource",
    "changelog": "nexusmem.sources.changelog:ChangelogSource",
    "shell": "nexusmem.sources.shell.source:ShellSource",
    "conversation": "nexusmem.sources.conversation.source:ConversationSource",
    # After shell and conversation: a command the hooks or a transcript recorded too is left to that node.
    "atuin": "nexusmem.sources.atuin:AtuinSource",
    # After git: its links name commits, which must be stored first.
    "github": "nexusmem.sources.github.source:GithubSource",
    # Last: it summarises the conversation turns the sources before it stored.
    "session": "nexusmem.sources.session:SessionSource",
}


def enabled(name: str, config: dict[str, Any]) -> bool:
    """Whether source NAME runs under CONFIG (`sources.NAME.enabled`, else its default), read without
    importing the source: a sync no longer loads the modules of the sources that are off (conversation,
    GitHub and session by default, ~25 ms each of a cold `nexusmem sync`). Each source's own `enabled`
    says the same (tests/test_sync_noop.py checks every one)."""
    from nexusmem.config import DEFAULTS

    if name not in SOURCES:
        raise KeyError(f"unknown source {name!r} (known: {', '.join(SOURCES)})")
    section = config.get("sources", {}).get(name, {})
    default = DEFAULTS["sources"].get(name, {}).get("enabled", False)
    return bool(section.get("enabled", default) if isinstance(section, dict) else default)


def get(name: str) -> Source:
    try:
        target = SOURCES[name]
    except KeyError:
        raise KeyError(f"unknown source {name!r} (known: {', '.join(SOURCES)})") from None
    module, _, attr = target.partition(":")
    cls: Any = getattr(importlib.import_module(module), attr)
    source: Source = cls()
    return source
