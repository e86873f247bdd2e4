"""An agent's shell call, from its hook payload to one shell-log line (docs/contracts.md §2).

Shared by the recorder the agents' hooks run (nexusmem/agenthook.py, a fresh process per call: stdlib only,
no import of anything heavy, ~1 ms of work) and by anything that reads the same calls another way (a
transcript). Payload shapes are in the agents' hook docs; what is known of them:

- Claude Code sends `PostToolUse` for a Bash call that exited 0 and only `PostToolUseFailure` for any other
  outcome, whose exit code exists only as text: `"error": "Exit code 2\\n<stderr>"`. A user's interrupt
  (`is_interrupt: true`) is not a failure of the command; a timeout ("Command timed out after 2m") has no
  code. There is no `tool_response.exit_code`. No payload carries a time: stamped on receipt.
- Codex sends only `PostToolUse`, failures included; its `tool_response` is untyped: an `exitCode` /
  `exit_code` number when there is one, else the output text's "Process exited with code N".

Agents wrap commands in ways that hide the status: of Bash calls measured by the original product, 15 of 17
ended in `; echo "EXIT:$?"` and 12 of 69 piped into `| head -100`. So the command is canonicalised (a
leading `cd DIR &&` moves into the cwd, a trailing status echo goes, a trailing pipe into head/tail/tee goes)
and the exit code is read back from the echo's output line when there is one, or marked unknown (None) when
a pager-like filter decided it. The canonical text is what matches the person's own `pytest -x`.
"""

from __future__ import annotations

import json
import os
import re
from typing import Any

AGENTS: tuple[str, ...] = ("claude-code", "codex")

# What the recorder reads from stdin at most: a Bash payload carries the command's output, which Claude Code
# cuts at 30,000 characters by default; a bigger payload is dropped whole (never parsed half).
MAX_PAYLOAD_BYTES = 1 << 20

# Tool names of a shell call: Claude Code's and Codex's hooks both say "Bash".
SHELL_TOOLS = frozenset({"Bash"})

# Filters whose own exit status replaces the command's (without pipefail): the status says nothing.
_MASKING = frozenset({"head", "tail", "tee", "less", "more", "cat"})

_EXIT_CODE = re.compile(r"\AExit code (-?\d+)\b")
_PROCESS_EXITED = re.compile(r"(?:Process exited with code|Exit code:?)\s*(-?\d+)")
# `; echo "EXIT:$?"`, `; echo exit=$?`, `; echo $?`, `; echo "[exit code: $?]"` at the very end.
_STATUS_ECHO = re.compile(
    r"""\s*;\s*echo\s+(['"]?)\s*[\[(]?\s*(?:[A-Za-z][A-Za-z _-]*\s*[:=]?\s*)?\$\?\s*[\])]?\s*\1\s*\Z"""
)
# The line that echo printed, last in the output: "EXIT:2", "exit code: 0", "2".
_ECHOED = re.compile(r"(?:\A|\n)\s*[\[(]?\s*(?:[A-Za-z][A-Za-z _-]*\s*[:=]?\s*)?(-?\d+)\s*[\])]?\s*\Z")


def _top_level(command: str) -> list[tuple[int, str]]:
    """(offset, operator) of each `|`, `||`, `&&`, `;` outside quotes, `$(…)`, backquotes and escapes."""
    out: list[tuple[int, str]] = []
    i, n, depth = 0, len(command), 0
    quote = ""
    while i < n:
        c = command[i]
        if c == "\\" and quote != "'":
            i += 2
            continue
        if quote:
            if c == quote:
                quote = ""
            elif c == "$" and quote == '"' and command.startswith("$(", i):
                depth += 1
                i += 1
        elif c in "'\"`":
            quote = c
        elif command.startswith("$(", i):
            depth += 1
            i += 1
        elif c == "(":
            depth += 1
        elif c == ")":
            depth = max(0, depth - 1)
        elif depth == 0 and c in "|&;":
            two = command[i : i + 2]
            if two in ("||", "&&"):
                out.append((i, two))
                i += 2
                continue
            if (c == "&" and command[i + 1 : i + 2] == ">") or command[i - 1 : i] in (">", "<"):
                i += 1  # `&>file`, `2>&1`, `>|file`: redirections, not operators
                continue
            if c != "&":
                out.append((i, c))
        i += 1
    return out


def _unquote_word(word: str) -> str | None:
    """A single shell word without its quotes; None when it is more than one plain word."""
    word = word.strip()
    if len(word) >= 2 and word[0] == word[-1] and word[0] in "'\"":
        inner = word[1:-1]
        return inner if "$" not in inner or word[0] == "'" else None
    if not word or any(ch in word for ch in " \t'\"$`\\*?~"):
        return None
    return word


def canonical(command: str, cwd: str) -> tuple[str, str, bool, bool]:
    """(canonical command, its cwd, status echoed, status masked) of an agent's COMMAND run in CWD.

    - `cd DIR && rest` (repeated): DIR becomes the cwd (joined to CWD when relative), REST the command;
    - a final `; echo "EXIT:$?"`: dropped; `status echoed` tells the caller to read the code from the output;
    - a final `| head -N` / `| tail` / `| tee f` (and a `2>&1` before it): dropped; `status masked` = the
      exit status is the filter's, not the command's (when the echo came after such a pipe, it is masked too).
    """
    text = command.strip()
    while True:
        ops = _top_level(text)
        if not ops or ops[0][1] != "&&" or not text.startswith("cd "):
            break
        target = _unquote_word(text[3 : ops[0][0]])
        if target is None:
            break
        cwd = os.path.normpath(os.path.join(cwd, os.path.expanduser(target))) if cwd else target
        text = text[ops[0][0] + 2 :].strip()
    echoed = False
    match = _STATUS_ECHO.search(text)
    if match and match.start() > 0:
        ops = _top_level(text)
        if ops and ops[-1][1] == ";" and ops[-1][0] >= match.start():
            text, echoed = text[: match.start()].rstrip(), True
    masked = False
    ops = _top_level(text)
    if ops and ops[-1][1] == "|":
        stage = text[ops[-1][0] + 1 :].split()
        if stage and stage[0] in _MASKING:
            masked = True
            text = text[: ops[-1][0]].rstrip()
            if text.endswith("2>&1"):
                text = text[:-4].rstrip()
    return text or command.strip(), cwd, echoed, masked


def _echoed_code(output: Any) -> int | None:
    if not isinstance(output, str):
        return None
    match = _ECHOED.search(output.rstrip()[-200:])
    return int(match.group(1)) if match else None


def _codex_code(response: Any) -> int | None:
    if isinstance(response, dict):
        for key in ("exitCode", "exit_code"):
            value = response.get(key)
            if type(value) is int:
                return value
        for key in ("output", "stdout", "formatted_output"):
            code = _codex_code(response.get(key))
            if code is not None:
                return code
        return None
    if isinstance(response, str):
        match = _PROCESS_EXITED.search(response[:4000])
        return int(match.group(1)) if match else None
    return None


def _command_text(value: Any) -> str | None:
    if isinstance(value, str):
        return value
    if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
        import shlex  # only for an argv-shaped command (Codex's `shell` tool)

        if (
            len(value) >= 3
            and value[0] in ("bash", "sh", "zsh", "/bin/bash", "/bin/sh")
            and value[1] in ("-c", "-lc")
        ):
            return str(value[2])
        return shlex.join(value)
    return None


def log_line(agent: str, payload: Any, now_ms: int) -> dict[str, Any] | None:
    """The shell-log line for one hook PAYLOAD of AGENT received at NOW_MS; None when it is not a shell call
    (another tool, another event, a malformed payload) or carries nothing to record."""
    if agent not in AGENTS or not isinstance(payload, dict):
        return None
    event = payload.get("hook_event_name")
    if event not in ("PostToolUse", "PostToolUseFailure") or payload.get("tool_name") not in SHELL_TOOLS:
        return None
    tool_input = payload.get("tool_input")
    raw = _command_text(tool_input.get("command")) if isinstance(tool_input, dict) else None
    cwd = payload.get("cwd")
    if raw is None or not raw.strip() or "\x00" in raw or not isinstance(cwd, str) or not cwd:
        return None
    command, cwd, echoed, masked = canonical(raw, cwd)
    response = payload.get("tool_response")
    exit_code: int | None
    interrupted = False
    if event == "PostToolUseFailure":
        interrupted = payload.get("is_interrupt") is True
        error = payload.get("error")
        match = _EXIT_CODE.match(error) if isinstance(error, str) else None
        exit_code = None if interrupted or match is None else int(match.group(1))
    elif agent == "claude-code":
        interrupted = isinstance(response, dict) and response.get("interrupted") is True
        exit_code = None if interrupted else 0
        if echoed and not interrupted and isinstance(response, dict):
            exit_code = _echoed_code(response.get("stdout"))
    else:
        exit_code = _codex_code(response)
        if echoed and isinstance(response, dict):
            exit_code = _echoed_code(response.get("stdout") or response.get("output"))
    if masked:
        exit_code = None
    duration = payload.get("duration_ms")
    duration_ms = duration if type(duration) is int and 0 <= duration < 10 * 365 * 86_400_000 else None
    line: dict[str, Any] = {
        "ts": now_ms - (duration_ms or 0),
        "cwd": cwd,
        "exit": exit_code,
        "command": command,
        "shell": agent,
        "session": payload.get("session_id") if isinstance(payload.get("session_id"), str) else "",
        "author": agent,
        "author_kind": "agent",
        "v": 1,
    }
    if duration_ms is not None:
        line["duration_ms"] = duration_ms
    call_id = payload.get("tool_use_id") or payload.get("call_id")
    if isinstance(call_id, str) and 0 < len(call_id) <= 200:
        line["call_id"] = call_id
    if interrupted:
        line["interrupted"] = True
    return line


def encode(line: dict[str, Any]) -> bytes | None:
    """LINE as one UTF-8 JSON line; None when its text cannot be written as UTF-8 (a lone surrogate)."""
    try:
        return (json.dumps(line, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")
    except (UnicodeEncodeError, ValueError):
        return None
