"""The library's exceptions. The CLI turns each into a one-line message and exit code 1 (2 for a UsageError)."""

from __future__ import annotations

from pathlib import Path  # already loaded by every path here: no typing import (the hooks count modules)


class NexusMemError(Exception):
    """Base class: a failure the user can act on, with a message that says what and where."""


class NotARepositoryError(NexusMemError):
    pass


class RefusedRepositoryError(NotARepositoryError):
    """Git refuses the repository for its owner (git's safe.directory check): paths.refused says so."""


class GitNotInstalledError(NexusMemError):
    pass


class GitStartError(NexusMemError):
    """git exists but could not be started (permissions, exec format, resource limits)."""


class GitCommandError(NexusMemError):
    pass


class ConfigError(NexusMemError):
    pass


class NotInitialisedError(NexusMemError):
    pass


class FirstSyncRunningError(NotInitialisedError):
    """No store yet, but the first sync is under way and will make it (paths.first_sync_under_way): `status`
    answers with what it can say of ROOT, the rest refuse with the message."""

    def __init__(self, root: Path, message: str) -> None:
        super().__init__(message)
        self.root = root


class StoreError(NexusMemError):
    pass


class UsageError(NexusMemError):
    """A value on the command line (or an MCP parameter) that cannot be used: a date that is not one, a
    source that does not exist. The CLI exits 2 for it, as for what its parser rejects."""
