"""Secret redaction, applied by every source before anything is stored.

Every recognised secret is replaced by a typed placeholder such as ``«redacted:aws-key»``; the rest of the
text is kept byte for byte. The rules and the scan live in :mod:`nexusmem.redact_engine` (its docstring says
what is recognised and why it is fast). That engine is imported on the first call that redacts something,
so a no-op sync, the post-commit hook's sync and a query never load it; loading it costs ~3 ms, and each of
its ~230 regexes is compiled when a text first needs it.
"""

from __future__ import annotations

import re
from types import ModuleType

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (~4 ms of a cold precheck)
if TYPE_CHECKING:
    from typing import Any

__all__ = ["PLACEHOLDER_RE", "placeholder", "redact", "redact_counts"]

# Cheap, and read by code that never redacts (scrub, summaries): kept here, equal to the engine's.
PLACEHOLDER_RE = re.compile(r"«redacted:[a-z0-9-]+»")


def _engine() -> ModuleType:
    from nexusmem import redact_engine

    return redact_engine


def placeholder(kind: str) -> str:
    """The placeholder that stands in for a secret of type KIND."""
    return f"«redacted:{kind}»"


def redact(text: str) -> str:
    """TEXT with every recognised secret replaced by its typed placeholder (idempotent)."""
    return redact_counts(text)[0]


_counts: Any = None  # the engine's redact_counts, once loaded


def redact_counts(text: str) -> tuple[str, dict[str, int]]:
    """redact(TEXT), and how many secrets of each kind it replaced."""
    global _counts
    if _counts is None:
        _counts = _engine().redact_counts
    out: tuple[str, dict[str, int]] = _counts(text)
    return out


def __getattr__(name: str) -> Any:
    """The engine's other names (PATTERNS, KINDS, Rule ...), loaded with it."""
    if name.startswith("__"):
        raise AttributeError(name)
    return getattr(_engine(), name)
