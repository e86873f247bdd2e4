"""Text made safe to print: what the CLI writes for people and the MCP server's text blocks go through it.

Agents show a tool result's text in the developer's terminal, so the MCP text is escaped as the CLI's
output is. Imports nothing but `re`: the commit hook's precheck prints through it.
"""

from __future__ import annotations

import re

# Characters a terminal acts on instead of showing: C0 controls but newline and tab (ESC starts OSC 52
# clipboard writes and title changes), DEL, C1 controls (0x9b is a one-byte CSI) and the bidi overrides
# that make text read differently from what it is. Stored text is never changed; only what is printed.
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def terminal_safe(text: str) -> str:
    """TEXT with every control character shown as an escape (\\x1b), so a commit message or a command
    cannot drive the terminal that prints it. JSON output is exact and never goes through this."""
    return _CONTROL.sub(_escape, text)
