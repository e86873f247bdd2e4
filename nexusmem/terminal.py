"""Text made safe to print: what the CLI writes for people and the MCP server's text blocks go through it.

Agents show a tool result's text in the developer's terminal, so the MCP text is escaped as the CLI's
output is. Imports nothing but `re`: the commit hook's precheck prints through it.

It is also the one place where a byte that is not UTF-8 is spelled for output: a path Python read from the
file system holds such a byte as a surrogate escape (U+DC80-U+DCFF), which no UTF-8 output can carry.
Everything NexusMem prints, human text and JSON alike, spells it `\\xNN` (README: "A file name that is not
UTF-8"), as paths.tracked_name spells it in a stored file name; paths.with_bytes reads it back.
"""

from __future__ import annotations

import re

# Characters a terminal acts on instead of showing: C0 controls but newline and tab (ESC starts OSC 52
# clipboard writes and title changes), DEL, C1 controls (0x9b is a one-byte CSI) and the bidi overrides
# that make text read differently from what it is. Stored text is never changed; only what is printed.
# And the lone surrogates, which UTF-8 cannot encode: a byte that is not UTF-8 in a path (its surrogate
# escape, spelled `\xNN`) or any other (spelled `\udNNN`).
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")
_SURROGATE = re.compile("[\ud800-\udfff]")


def _spelled(code: int) -> str:
    """The printed form of the character CODE: `\\xNN` for a byte (a surrogate escape's byte), else `\\uNNNN`."""
    if 0xDC80 <= code <= 0xDCFF:
        code -= 0xDC00  # the byte Python read from the file system and could not decode
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def _escape(match: re.Match[str]) -> str:
    return _spelled(ord(match.group()))


def _json_escape(match: re.Match[str]) -> str:
    return "\\" + _spelled(ord(match.group()))  # the backslash itself escaped: JSON "\\xe9" is the text \xe9


def terminal_safe(text: str) -> str:
    """TEXT with every control character shown as an escape (\\x1b), so a commit message or a command
    cannot drive the terminal that prints it, and each byte that is not UTF-8 (a folder named in Latin-1)
    spelled `\\xNN`. JSON output is exact and never goes through this: it goes through json_text."""
    return _CONTROL.sub(_escape, text)


def json_text(data: object) -> str:
    """DATA as the JSON every `--json` prints (indented, non-ASCII as it is), valid UTF-8 whatever it holds:
    a byte that is not UTF-8 in a string (a path) is the text `\\xNN` (JSON `"\\\\xNN"`), as terminal_safe
    shows it, never a raw byte that makes the whole output unreadable."""
    import json

    text = json.dumps(data, indent=2, ensure_ascii=False)
    return _SURROGATE.sub(_json_escape, text) if _SURROGATE.search(text) else text


def spelled_data(data: object) -> object:
    """DATA (what a `--json` or an MCP structured result holds) with each string's byte that is not UTF-8
    spelled `\\xNN`, as json_text writes it: for a serializer that cannot carry a surrogate escape."""
    if isinstance(data, str):
        return _SURROGATE.sub(_escape, data) if _SURROGATE.search(data) else data
    if isinstance(data, dict):
        return {spelled_data(k): spelled_data(v) for k, v in data.items()}
    if isinstance(data, (list, tuple)):
        return [spelled_data(v) for v in data]
    return data
