"""GitHub issues and pull requests, read through the `gh` CLI (opt-in: sources.github)."""
