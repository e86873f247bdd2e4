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


def get(name: str) -> Source:
    try:
        target = SOURCES[name]
    except KeyError:
        raise KeyError(f"unknown source {name!r} (known: {', '.join(SOURCES)})") from None
    module, _, attr = target.partition(":")
    cls: Any = getattr(importlib.import_module(module), attr)
    source: Source = cls()
    return source
