"""The library's exceptions. The CLI turns each into a one-line message and exit code 1 (2 for a UsageError)."""

from __future__ import annotations


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


class StoreError(NexusMemError):
    pass


class UsageError(NexusMemError):
    """A value on the command line (or an MCP parameter) that cannot be used: a date that is not one, a
    source that does not exist. The CLI exits 2 for it, as for what its parser rejects."""
