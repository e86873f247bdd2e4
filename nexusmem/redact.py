"""Secret redaction, applied by every source before anything is stored.

(Placeholder interface: the full pattern set lands with the redaction work; callers use `redact()` only.)
"""

from __future__ import annotations


def redact(text: str) -> str:
    """Return TEXT with every recognised secret replaced by a typed placeholder such as «redacted:aws-key»."""
    return text
