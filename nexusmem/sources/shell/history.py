"""Shell history files (bash, zsh, fish, PowerShell): where they live, reading their tail, parsing each format.

The fallback when a shell's hook is not installed (its lines never appear in the log).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class HistoryEntry:
    """One command from a shell's own history file: epoch seconds when recorded, duration when known."""

    command: str
    ts: int | None = None
    duration_s: int | None = None


_BASH_TS = re.compile(r"^#([0-9]{9,11})\s*$")

# At most 18 digits: a longer run is not a time (and int() of 4,300+ digits raises ValueError).
_ZSH_EXTENDED = re.compile(r"^: *([0-9]{1,18}):([0-9]{1,18});(.*)$", re.DOTALL)


def parse_bash_history(lines: list[str]) -> list[HistoryEntry]:
    """~/.bash_history: one command per line, or with HISTTIMEFORMAT a `#<epoch>` line before each command
    (then every line up to the next timestamp belongs to it: multi-line commands saved with lithist)."""
    if not any(_BASH_TS.match(line) for line in lines):
        return [HistoryEntry(line) for line in lines if line.strip()]
    entries: list[HistoryEntry] = []
    ts: int | None = None
    current: list[str] = []

    def flush() -> None:
        if ts is None:  # lines before the first timestamp in the tail: one command each
            entries.extend(HistoryEntry(line) for line in current if line.strip())
        elif any(line.strip() for line in current):
            entries.append(HistoryEntry("\n".join(current).strip("\n"), ts))

    for line in lines:
        m = _BASH_TS.match(line)
        if m:
            flush()
            ts, current = int(m.group(1)), []
        else:
            current.append(line)
    flush()
    return entries


def unmetafy(data: bytes) -> bytes:
    """Undo zsh's history encoding: byte 0x83 marks the next byte, which was XOR-ed with 0x20."""
    if b"\x83" not in data:
        return data
    out = bytearray()
    it = iter(data)
    for byte in it:
        if byte == 0x83:
            nxt = next(it, None)
            if nxt is None:
                break
            out.append(nxt ^ 0x20)
        else:
            out.append(byte)
    return bytes(out)


def parse_zsh_history(lines: list[str]) -> list[HistoryEntry]:
    """~/.zsh_history, plain or EXTENDED_HISTORY (`: <epoch>:<elapsed>;<command>`); a line ending in a
    backslash continues on the next one (how zsh saves a multi-line command). Unmetafy before decoding."""
    joined: list[str] = []
    current: str | None = None
    for line in lines:
        if current is not None:
            current += "\n" + line
        else:
            current = line
        if current.endswith("\\"):
            current = current[:-1]
            continue
        joined.append(current)
        current = None
    if current is not None:
        joined.append(current)
    entries: list[HistoryEntry] = []
    for text in joined:
        m = _ZSH_EXTENDED.match(text)
        if m:
            entries.append(HistoryEntry(m.group(3), int(m.group(1)), int(m.group(2))))
        elif text.strip():
            entries.append(HistoryEntry(text))
    return [e for e in entries if e.command.strip()]


def _fish_unescape(text: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(text):
        ch = text[i]
        if ch == "\\" and i + 1 < len(text) and text[i + 1] in "n\\":
            out.append("\n" if text[i + 1] == "n" else "\\")
            i += 2
            continue
        out.append(ch)
        i += 1
    return "".join(out)


def parse_fish_history(lines: list[str]) -> list[HistoryEntry]:
    """fish_history: YAML-like `- cmd: <escaped command>` followed by `  when: <epoch>` (and `  paths:`)."""
    entries: list[HistoryEntry] = []
    cmd: str | None = None
    when: int | None = None

    def flush() -> None:
        if cmd is not None and cmd.strip():
            entries.append(HistoryEntry(cmd, when))

    for line in lines:
        if line.startswith("- cmd: ") or line == "- cmd:":
            flush()
            cmd, when = _fish_unescape(line[7:]), None
        elif line.startswith("  when: ") and cmd is not None:
            value = line[8:].strip()
            when = int(value) if value.isascii() and value.isdigit() and len(value) <= 18 else None
    flush()
    return entries


def parse_pwsh_history(lines: list[str]) -> list[HistoryEntry]:
    """PSReadLine ConsoleHost_history.txt: one command per line, a trailing backtick continues it."""
    entries: list[HistoryEntry] = []
    current: str | None = None
    for line in lines:
        current = line if current is None else current + "\n" + line
        if current.endswith("`"):
            current = current[:-1]
            continue
        if current.strip():
            entries.append(HistoryEntry(current))
        current = None
    if current is not None and current.strip():
        entries.append(HistoryEntry(current))
    return entries


_PARSERS: dict[str, Callable[[list[str]], list[HistoryEntry]]] = {
    "bash": parse_bash_history,
    "zsh": parse_zsh_history,
    "fish": parse_fish_history,
    "pwsh": parse_pwsh_history,
}


def history_paths(shell: str) -> list[Path]:
    """Where SHELL keeps its history, most likely first (Path.home(), so tests can point HOME elsewhere)."""
    home = Path.home()
    data_home = Path(os.environ.get("XDG_DATA_HOME") or home / ".local" / "share")
    if shell == "bash":
        return [home / ".bash_history"]
    if shell == "zsh":
        return [home / ".zsh_history", home / ".histfile"]
    if shell == "fish":
        return [data_home / "fish" / "fish_history"]
    paths = [data_home / "powershell" / "PSReadLine" / "ConsoleHost_history.txt"]
    appdata = os.environ.get("APPDATA")
    if appdata:
        paths.append(
            Path(appdata) / "Microsoft" / "Windows" / "PowerShell" / "PSReadLine" / "ConsoleHost_history.txt"
        )
    return paths


def read_tail_lines(path: Path, count: int, block: int = 1 << 16) -> list[bytes]:
    """The last COUNT lines of PATH (bytes, without newlines), reading backwards in blocks."""
    if count <= 0:
        return []
    with open(path, "rb") as fh:
        end = fh.seek(0, os.SEEK_END)
        pos = end
        data = b""
        while pos > 0 and data.count(b"\n") <= count:
            step = min(block, pos)
            pos -= step
            fh.seek(pos)
            data = fh.read(step) + data
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    if pos > 0:
        lines = lines[1:]  # the first piece may be the end of an earlier line
    return lines[-count:]


def _decode_history(shell: str, raw: list[bytes]) -> list[str]:
    if shell == "zsh":
        raw = [unmetafy(line) for line in raw]
    return [line.decode("utf-8", "replace").rstrip("\r") for line in raw]
