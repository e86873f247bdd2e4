"""OpenAI Codex CLI rollouts: `$CODEX_HOME/sessions/YYYY/MM/DD/rollout-<time>-<uuid>.jsonl` (~/.codex).

Each line is `{timestamp, type, payload}`. `session_meta` (first line) gives the session id and the
directory it started in; `turn_context` (one per turn) the current cwd and model. Conversation comes from
`response_item` payloads: `message` (role `user` minus the boilerplate the CLI injects, role `assistant`
`output_text`; `developer` is instructions), shell calls from `function_call` (`exec_command`, `shell`,
`shell_command`) and `local_shell_call`, their outcome from the `function_call_output` with the same
`call_id`, whose header above the output says `Process exited with code N` (the older shell tool's `Exit
code: N`; older builds: JSON with `metadata.exit_code`; agentcmd.codex_header_code reads the header only, not
an output that printed such a line). A call that ran longer than exec_command waits says `Process running
with session ID N` instead: its code comes with the `write_stdin` poll of session N that saw it end (the
one Codex's hook fires for, under the first call's id). A status echoed by the command is read back as the hooks do it
(agentcmd.call_status).
`event_msg` mirrors the messages for the UI: used only when a file has no `response_item` messages.
A subagent gets its own rollout file whose `session_meta.source` names it: that thread is a sidechain.
"""

from __future__ import annotations

import os
import re
import shlex
from pathlib import Path
from typing import Any

from nexusmem.redact import redact_cut
from nexusmem.sources.conversation.model import (
    Call,
    Exchange,
    Report,
    Resume,
    Thread,
    iso_ms,
    iter_json_objects,
    label,
    loads,
    masked_status,
    resume_after,
    strip_injected,
    text_of,
)
from nexusmem.sources.shell.agentcmd import call_status, codex_header_code

AGENT = "codex"

# The user-role text the CLI adds on the person's behalf (environment, AGENTS.md, permissions...).
_BOILERPLATE = (
    "<environment_context>",
    "<user_instructions>",
    "<user_shell_command>",
    "<permissions instructions>",
    "<turn_aborted>",
    "<subagent_notification>",
    "# AGENTS.md instructions",
    "<INSTRUCTIONS>",
)
_SHELL_TOOLS = frozenset({"exec_command", "shell", "shell_command", "container.exec", "local_shell"})
_PATCH_FILE = re.compile(r"^\*\*\* (?:Add|Update|Delete) File: (.+)$", re.MULTILINE)
_KNOWN_TYPES = frozenset(
    {"session_meta", "turn_context", "response_item", "event_msg", "compacted", "world_state"}
)


def codex_home() -> Path:
    """$CODEX_HOME, else ~/.codex."""
    configured = os.environ.get("CODEX_HOME")
    return Path(configured).expanduser() if configured else Path.home() / ".codex"


def transcript_files(base: Path | None = None) -> list[Path]:
    """Every rollout under BASE/sessions/YYYY/MM/DD/, oldest first."""
    sessions = (base or codex_home()) / "sessions"
    try:
        return sorted(p for p in sessions.glob("*/*/*/rollout-*.jsonl") if p.is_file())
    except OSError:
        return []


def head_cwd(path: Path, report: Report) -> str | None:
    """The cwd of the session_meta (or first turn_context) record: where the session started."""
    quiet = Report()
    for n, (_, _, record) in enumerate(iter_json_objects(path, quiet)):
        payload = record.get("payload")
        if record.get("type") in ("session_meta", "turn_context") and isinstance(payload, dict):
            cwd = payload.get("cwd")
            if isinstance(cwd, str) and cwd:
                return cwd
        if n >= 50:
            break
    return None


def _command(name: str, arguments: Any) -> tuple[str | None, str | None]:
    """(command text, workdir) of a shell tool call's arguments (a JSON string or an object)."""
    args = arguments
    if isinstance(arguments, str):
        try:
            args = loads(arguments)
        except ValueError:
            return None, None
    if not isinstance(args, dict):
        return None, None
    raw = args.get("cmd", args.get("command"))
    workdir = args.get("workdir") or args.get("working_directory")
    workdir = workdir if isinstance(workdir, str) and workdir else None
    if isinstance(raw, list) and all(isinstance(x, str) for x in raw):
        # ["bash", "-lc", "pytest -q"] is how the shell tool runs a command line: keep the line.
        if len(raw) == 3 and raw[0].rsplit("/", 1)[-1] in ("bash", "sh", "zsh") and raw[1] in ("-lc", "-c"):
            return raw[2], workdir
        return shlex.join(raw), workdir
    if isinstance(raw, str):
        return raw, workdir
    return None, None


def _exit_of(output: Any) -> tuple[int | None, str]:
    """The exit status a function_call_output reports (None when it does not say), and what the command
    printed (the header above it left in: a status echo is read from the last line)."""
    if isinstance(output, dict):
        output = output.get("content", output.get("output", ""))
    if not isinstance(output, str):
        output = text_of(output)
    text = output.lstrip()
    if text.startswith("{"):
        try:
            data = loads(text)
        except ValueError:
            data = None
        if isinstance(data, dict):
            printed = data.get("output")
            printed = printed if isinstance(printed, str) else ""
            meta = data.get("metadata")
            if isinstance(meta, dict) and isinstance(meta.get("exit_code"), int):
                return int(meta["exit_code"]), printed
            return None, printed
    return codex_header_code(output), output


_RUNNING = "Process running with session ID "


def _running_session(output: str) -> str | None:
    """The session a call was left running in ("Process running with session ID N" in the header above its
    output, when it ran longer than exec_command waits): a later `write_stdin` poll of that session gets its
    exit code. None for a call that ended."""
    for line in output.split("\n", 8)[:8]:
        if line == "Output:":
            break
        if line.startswith(_RUNNING):
            session = line[len(_RUNNING) :].strip()
            return session if session and " " not in session else None
    return None


def _polled_session(arguments: Any) -> str | None:
    """The session a `write_stdin` call polls (its arguments' `session_id`, a number or a string)."""
    try:
        args = loads(arguments) if isinstance(arguments, str) else arguments
    except ValueError:
        return None
    session = args.get("session_id") if isinstance(args, dict) else None
    return str(session) if (type(session) is int or isinstance(session, str)) and str(session) else None


def parse(path: Path, report: Report) -> list[Thread]:
    """The one thread of a rollout file (a sidechain when the session is a subagent's)."""
    return parse_from(path, report, None)[0]


def parse_from(path: Path, report: Report, resume: Resume | None) -> tuple[list[Thread], Resume | None]:
    """Like parse, from RESUME when given; also returns where the next read may start (None: from the top,
    for a file read through its event_msg mirror)."""
    facts = resume.facts if resume else {}
    thread = Thread(agent=AGENT, session_id=str(facts.get("session_id") or _id_from_name(path)), moves=True)
    thread.sidechain = facts.get("sidechain") is True
    thread.thread = str(facts.get("thread") or "main")
    thread.model = facts["model"] if isinstance(facts.get("model"), str) else None
    thread.first_turn = resume.turn_of("main") if resume else 0
    current: Exchange | None = None
    pending: dict[str, Call] = {}
    running: dict[str, Call] = {}  # session id → the call left running in it (see _running_session)
    polls: dict[str, Call] = {}  # a write_stdin call's id → the running call it polls
    cwd: str | None = facts["cwd"] if isinstance(facts.get("cwd"), str) else None
    thread.cwd = facts["first_cwd"] if isinstance(facts.get("first_cwd"), str) else None
    saw_messages = facts.get("messages") is True
    events: list[tuple[int, str, str]] = []  # (ts, role, text) from event_msg, the fallback

    def exchange(ts: int) -> Exchange:
        nonlocal current
        if current is None:
            current = Exchange(ts=ts, question="", cwd=cwd, offset=offset, line=number)
            thread.exchanges.append(current)
        return current

    last_ts: int | None = None
    start, first_line = (resume.offset, resume.line) if resume else (0, 1)
    for number, offset, record in iter_json_objects(path, report, start, first_line):
        with report.guard(path, number):
            kind = record.get("type")
            payload = record.get("payload")
            if not isinstance(kind, str):
                report.skip(path, number, f"a record whose type is a JSON {type(kind).__name__}")
                continue
            if kind not in _KNOWN_TYPES:
                report.skip(path, number, f"unknown record type {redact_cut(kind, 40)!r}")
                continue
            if not isinstance(payload, dict):
                report.skip(path, number, f"{kind} record without a payload object")
                continue
            ts = iso_ms(record.get("timestamp")) or iso_ms(payload.get("timestamp")) or last_ts
            if ts is None:
                report.skip(path, number, "no readable timestamp")
                continue
            last_ts = ts
            if kind in ("session_meta", "turn_context"):
                if isinstance(payload.get("cwd"), str) and payload["cwd"]:
                    cwd = payload["cwd"]
                    thread.cwd = thread.cwd or cwd
                if kind == "session_meta":
                    ident = payload.get("id", payload.get("session_id"))
                    if isinstance(ident, str) and ident:
                        thread.session_id = ident
                    source = payload.get("source")
                    if isinstance(source, dict) or payload.get("agent_role") or payload.get("agent_nickname"):
                        thread.sidechain = True
                        thread.thread = str(
                            payload.get("agent_nickname") or payload.get("agent_role") or "subagent"
                        )
                elif isinstance(payload.get("model"), str):
                    thread.model = payload["model"]
                continue
            if kind == "event_msg":
                etype = payload.get("type")
                if etype in ("user_message", "agent_message") and isinstance(payload.get("message"), str):
                    events.append(
                        (ts, "user" if etype == "user_message" else "assistant", payload["message"])
                    )
                elif etype == "exec_command_end" and isinstance(payload.get("exit_code"), int):
                    call = pending.get(str(payload.get("call_id")))
                    if call is not None and call.exit is None and not masked_status(call.command):
                        call.exit = int(payload["exit_code"])
                continue
            if kind != "response_item":
                continue
            ptype = payload.get("type")
            if ptype == "message":
                role = payload.get("role")
                text = strip_injected(text_of(payload.get("content")))
                if role == "user":
                    saw_messages = True
                    if not text or text.startswith(_BOILERPLATE):
                        continue
                    current = Exchange(ts=ts, question=text, cwd=cwd, offset=offset, line=number)
                    thread.exchanges.append(current)
                elif role == "assistant":
                    saw_messages = True
                    if text:
                        exchange(ts).answer.append(text)
            elif ptype in ("function_call", "local_shell_call"):
                name = payload.get("name") or "local_shell"
                call_id = payload.get("call_id") or payload.get("id")
                if name == "write_stdin" and isinstance(call_id, str):
                    session = _polled_session(payload.get("arguments"))
                    if session is not None and session in running:
                        polls[call_id] = running[session]
                    continue
                if not isinstance(name, str) or name not in _SHELL_TOOLS:
                    continue
                if not isinstance(call_id, str) or not call_id:
                    continue
                source = payload.get("arguments") if ptype == "function_call" else payload.get("action")
                command, workdir = _command(name, source)
                if command is None or not command.strip():
                    report.skip(
                        path, number, f"{name} call {redact_cut(call_id, 24)} without a readable command"
                    )
                    continue
                call = Call(call_id=call_id, command=command, ts=ts, cwd=workdir or cwd)
                exchange(ts).calls.append(call)
                pending[call_id] = call
            elif ptype == "function_call_output":
                call_id = str(payload.get("call_id"))
                call = pending.pop(call_id, None)
                if call is None and call_id in polls:
                    call = polls.pop(call_id)  # a poll of a call left running: done now, or running still
                if call is not None:
                    status, printed = _exit_of(payload.get("output"))
                    session = _running_session(printed) if status is None else None
                    if session is not None:
                        running[session] = call
                        continue  # its exit code comes with the poll that sees it end
                    running = {k: v for k, v in running.items() if v is not call}
                    if status == 0 and masked_status(call.command):
                        status = None  # `| head`, `; echo $?`: the 0 is another program's
                    # As the agent hook reads it (agentcmd.status_of): a trailing `; echo "EXIT:$?"` hides
                    # the status in the output's last line; a pipe into head/tail leaves it unknown.
                    call.exit = call_status(call.command, status, printed)
            elif ptype == "custom_tool_call" and payload.get("name") == "apply_patch":
                patch = payload.get("input")
                if isinstance(patch, str):
                    exchange(ts).files.extend(m.strip() for m in _PATCH_FILE.findall(patch))
    threads = [thread] if thread.exchanges else []
    if not saw_messages:
        if events:
            thread.exchanges = _from_events(events, cwd, thread.exchanges)
            threads = [thread] if thread.exchanges else []
        return threads, None
    facts = {
        "session_id": label(thread.session_id),
        "sidechain": thread.sidechain,
        "thread": label(thread.thread),
        "model": label(thread.model) if thread.model else None,
        "cwd": cwd,
        "first_cwd": thread.cwd,
        "messages": True,
    }
    return threads, resume_after([thread], resume, facts)


def _from_events(events: list[tuple[int, str, str]], cwd: str | None, had: list[Exchange]) -> list[Exchange]:
    """Exchanges rebuilt from the UI's event_msg mirror (files with no response_item messages)."""
    calls = [c for e in had for c in e.calls]
    out: list[Exchange] = []
    for ts, role, raw in events:
        text = strip_injected(raw)
        if not text:
            continue
        if role == "user":
            out.append(Exchange(ts=ts, question=text, cwd=cwd))
        elif out:
            out[-1].answer.append(text)
        else:
            out.append(Exchange(ts=ts, question="", cwd=cwd, answer=[text]))
    for call in calls:  # each call goes to the last exchange that began before it
        target = None
        for exchange in out:
            if exchange.ts <= call.ts:
                target = exchange
        if target is not None:
            target.calls.append(call)
    return out


_UUID_TAIL = re.compile(r"([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})$")


def _id_from_name(path: Path) -> str:
    found = _UUID_TAIL.search(path.stem)
    return found.group(1) if found else path.stem
