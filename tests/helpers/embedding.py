"""A small history to embed, and the `embedding` config section to point at a provider."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from helpers.cli import run_cli
from helpers.git import commit


def set_embedding(repo: Path, **settings: Any) -> None:
    """Initialise REPO when needed and change its `embedding` config section."""
    if not (repo / ".nexusmem" / "config.json").exists():
        run_cli("-C", str(repo), "init")
    path = repo / ".nexusmem" / "config.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    data["embedding"].update(settings)
    path.write_text(json.dumps(data, indent=2), encoding="utf-8")


def cache_history(repo: Path) -> Path:
    """Three commits (a module, a fix, a doc) in REPO: a commit, diff and doc node each to embed."""
    commit(repo, "Add the cache module", {"cache.py": "def get(key):\n    return None\n"})
    commit(
        repo, "fix: expire the cache lock file after a crash", {"cache.py": "def get(key):\n    return 1\n"}
    )
    commit(repo, "docs: explain the release process", {"README.md": "# Release\n\nTag, then publish.\n"})
    return repo
