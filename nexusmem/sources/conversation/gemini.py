"""Gemini CLI: `~/.gemini/tmp/<projectHash>/chats/session-*.json`, one JSON document per session.

`projectHash` is Gemini CLI's `getProjectHash(projectRoot)`: the SHA-256 hex of the directory it was
started in (google-gemini/gemini-cli packages/core/src/utils/paths.ts). So a session is ours when that
hash equals the hash of the repository root or of one of its worktrees: the folder's name, or, in a folder
named some other way, the `projectHash` near the start of the document. A session started in a subdirectory hashes that subdirectory and is not found: we do not
hash every directory of the repository. Messages: `type` `user` is the person, `gemini`/`model` the
agent, with `toolCalls` (`run_shell_command`, `args.command`; the result text ends `Exit Code: N`).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path
from typing import Any

from nexusmem.sources.conversation.model import Call, Exchange, Report, Thread, iso_ms, masked_status, text_of

AGENT = "gemini"
# A session document over this size is skipped (a real one is well under a few MB).
MAX_FILE_BYTES = 64 << 20
_SHELL_TOOLS = frozenset({"run_shell_command", "shell"})
_EXIT = re.compile(r"Exit Code:\s*(-?\d+)")


def gemini_home() -> Path:
    """$GEMINI_CLI_HOME/.gemini when set, else ~/.gemini."""
    configured = os.environ.get("GEMINI_CLI_HOME")
    return (Path(configured).expanduser() if configured else Path.home()) / ".gemini"


def project_hash(root: Path | str) -> str:
    """Gemini CLI's hash of a project root path."""
    return hashlib.sha256(str(root).encode("utf-8")).hexdigest()


def transcript_files(base: Path | None = None) -> list[Path]:
    """Every session file under BASE/tmp/*/chats/, sorted (whose they are is decided by `root_of`)."""
    tmp = (base or gemini_home()) / "tmp"
    try:
        return sorted(p for p in tmp.glob("*/chats/session-*.json") if p.is_file())
    except OSError:
        return []


_PROJECT_HASH = re.compile(rb'"projectHash"\s*:\s*"([0-9a-f]{64})"')


def root_of(path: Path, roots: list[Path]) -> Path | None:
    """Which of ROOTS the session file PATH belongs to: its folder is named by the root's hash, or (a
    folder named otherwise) the `projectHash` in its first 4 KB is; None when neither."""
    hashes = {project_hash(form): root for root in roots for form in (str(root), os.path.realpath(root))}
    found = hashes.get(path.parent.parent.name)
    if found is not None:
        return found
    try:
        with path.open("rb") as handle:
            head = handle.read(4096)
    except OSError:
        return None
    match = _PROJECT_HASH.search(head)
    return hashes.get(match.group(1).decode()) if match else None


def _text(content: Any) -> str:
    return text_of(content, keys=("text",)).strip()


def _result_text(result: Any) -> str:
    """The text of a tool call result (a string, parts, or functionResponse objects)."""
    if isinstance(result, str):
        return result
    try:
        return json.dumps(result)[:8192]
    except (TypeError, ValueError, RecursionError):
        return ""


def parse(path: Path, report: Report, *, cwd: str) -> list[Thread]:
    """The one thread of a Gemini session document (CWD: the project root it hashes to)."""
    try:
        size = path.stat().st_size
        if size > MAX_FILE_BYTES:
            report.skip(path, None, f"larger than {MAX_FILE_BYTES >> 20} MB")
            return []
        data = json.loads(path.read_bytes())
    except OSError as exc:
        report.skip(path, None, f"cannot read ({exc.strerror or exc})")
        return []
    except (ValueError, RecursionError):
        report.skip(path, None, "not a JSON document")
        return []
    if not isinstance(data, dict) or not isinstance(data.get("messages"), list):
        report.skip(path, None, "no 'messages' list")
        return []
    session = data.get("sessionId")
    thread = Thread(agent=AGENT, session_id=session if isinstance(session, str) and session else path.stem)
    thread.cwd = cwd
    start = iso_ms(data.get("startTime"))
    current: Exchange | None = None
    last_ts = start
    for index, message in enumerate(data["messages"]):
        where = f"messages[{index}]"
        if not isinstance(message, dict):
            report.skip(f"{path} {where}", None, "not an object")
            continue
        ts = iso_ms(message.get("timestamp")) or last_ts
        if ts is None:
            report.skip(f"{path} {where}", None, "no readable timestamp")
            continue
        last_ts = ts
        kind = message.get("type")
        ident = message.get("id")
        anchor = ident if isinstance(ident, str) and ident else None
        if kind == "user":
            text = _text(message.get("content"))
            if text and not text.startswith("/"):
                current = Exchange(ts=ts, question=text, cwd=cwd, anchor=anchor)
                thread.exchanges.append(current)
        elif kind in ("gemini", "model", "assistant"):
            if current is None:
                current = Exchange(ts=ts, question="", cwd=cwd, anchor=anchor)
                thread.exchanges.append(current)
            text = _text(message.get("content"))
            if text:
                current.answer.append(text)
            if isinstance(message.get("model"), str):
                thread.model = message["model"]
            for n, call in enumerate(message.get("toolCalls") or []):
                if not isinstance(call, dict) or call.get("name") not in _SHELL_TOOLS:
                    continue
                raw_args = call.get("args")
                args: dict[str, Any] = raw_args if isinstance(raw_args, dict) else {}
                command = args.get("command")
                call_id = call.get("id")
                if not isinstance(command, str) or not command.strip():
                    report.skip(f"{path} {where}.toolCalls[{n}]", None, "shell call without a command")
                    continue
                # Qualified by the session: Gemini's ids are only meant to be unique within one.
                call_id = f"{thread.session_id}/{call_id if isinstance(call_id, str) and call_id else f'{index}.{n}'}"
                found = _EXIT.search(_result_text(call.get("result")))
                status = int(found.group(1)) if found else None
                if status is None and call.get("status") == "success" and not masked_status(command):
                    status = 0
                current.calls.append(Call(call_id=call_id, command=command, ts=ts, cwd=cwd, exit=status))
        elif kind not in ("info", "error", "warning"):
            report.skip(f"{path} {where}", None, f"unknown message type {str(kind)[:40]!r}")
    return [thread] if thread.exchanges else []
