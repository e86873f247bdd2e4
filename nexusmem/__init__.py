"""NexusMem: a local memory engine for coding agents."""

from __future__ import annotations

__version__ = "0.1.0"
