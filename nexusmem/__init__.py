"""NexusMem: a local memory engine for coding agents."""

from __future__ import annotations

__version__ = "0.1.0"
# The memory schema this release reads and writes: store/migrations.py's LATEST, kept here too so that
# `--version` says it without importing the store (tests/test_migrations.py keeps the two equal).
SCHEMA = 18
# Both, as `--version` says them: a release refuses a memory of a higher schema than its own.
VERSION_TEXT = f"{__version__} (memory schema {SCHEMA})"
