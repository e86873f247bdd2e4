"""The MCP server's stdio transport, made to answer every request, including malformed ones.

The SDK's stdio reader hands a line it cannot parse to the session as an exception, and the session drops
it: the client waits forever for an answer to that request. Two kinds of line did that:

- a lone UTF-16 surrogate escape (`"\\ud800"`): valid JSON to Python, refused by the SDK's parser. It is
  replaced by U+FFFD before parsing, so the request is answered (with the character shown as �);
- a line that is not a JSON-RPC message at all (cut short, garbage): answered with the JSON-RPC "Parse
  error" (-32700), carrying the request's id when one can be read from the line (else id null, as JSON-RPC
  says), so a waiting client gets an error instead of silence.

Bytes that are not UTF-8 were already decoded with U+FFFD by the SDK; that is kept.

At the end of input the SDK cancels the calls still running and drops their answers (a client piping its
requests in got none for a tool call). The end of input is passed on only once every request read has been
answered, or DRAIN_SECONDS have passed.

When `initialize` was already answered before the SDK loaded (nexusmem.mcp_handshake), the bytes read then
are replayed to the SDK first, and its own answer to that request is dropped on the way out.
"""

from __future__ import annotations

import io
import json
import logging
import os
import re
import sys
from collections import deque
from collections.abc import AsyncIterator
from io import TextIOWrapper
from typing import Any

import anyio
import mcp_types as types
from mcp.server.mcpserver import MCPServer
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage

from nexusmem.mcp_handshake import Handshake
from nexusmem.terminal import terminal_safe

log = logging.getLogger("nexusmem.mcp")

# A lone surrogate escape, or a valid pair / an escaped backslash that must be left alone (matched first,
# left to right, so `\\ud800` - a backslash then the text "ud800" - is never mistaken for an escape).
_ESCAPES = re.compile(
    r"\\\\|\\u[dD][89abAB][0-9a-fA-F]{2}\\u[dD][c-fC-F][0-9a-fA-F]{2}|\\u[dD][89a-fA-F][0-9a-fA-F]{2}"
)
_ID = re.compile(r'"id"\s*:\s*(-?\d{1,18}|"(?:[^"\\]|\\.){0,200}")')


def _fix(match: re.Match[str]) -> str:
    text = match.group()
    return text if len(text) != 6 else "\\ufffd"


def fix_surrogates(line: str) -> str:
    """LINE with every lone surrogate escape in its JSON strings replaced by \\ufffd."""
    if "\\u" not in line:
        return line
    return _ESCAPES.sub(_fix, line)


def request_id(line: str) -> int | str | None:
    """The id of a JSON-RPC message that failed to parse, when the line still shows it; else None."""
    found = _ID.search(line)
    if found is None:
        return None
    try:
        value = json.loads(found.group(1))
    except ValueError:
        return None
    return value if isinstance(value, (int, str)) else None


class _Lines:
    """stdin as the SDK reads it (`async for line`), with surrogates fixed and parse failures noted."""

    def __init__(self, source: Any, failed: deque[int | str | None]) -> None:
        self.source = source
        self.failed = failed

    def __aiter__(self) -> AsyncIterator[str]:
        return self._lines()

    async def _lines(self) -> AsyncIterator[str]:
        async for raw in self.source:
            line = fix_surrogates(raw)
            try:  # the SDK's own parser: a line it refuses is exactly one it will hand over as an exception
                types.jsonrpc_message_adapter.validate_json(line, by_name=False)
            except Exception:
                self.failed.append(request_id(line))
            yield line


class _Replay(io.RawIOBase):
    """The bytes HANDSHAKE read from stdin before the SDK loaded, then the rest of FD."""

    def __init__(self, prefix: bytes, fd: int) -> None:
        self.prefix = prefix
        self.fd = fd

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        if self.prefix:
            size = min(len(buffer), len(self.prefix))
            buffer[:size] = self.prefix[:size]
            self.prefix = self.prefix[size:]
            return size
        data = os.read(self.fd, len(buffer))
        buffer[: len(data)] = data
        return len(data)

    def close(self) -> None:
        if not self.closed:
            os.close(self.fd)
        super().close()


# How long the server keeps serving after the client closes stdin, for the requests it has not answered
# yet: past it, what still runs is cancelled as the SDK would (a client that wants the server gone sooner
# stops it, as MCP's stdio shutdown says: SIGTERM after closing stdin).
DRAIN_SECONDS = 300.0


class _InFlight:
    """The requests read and not answered yet (by id), so the end of input can wait for their answers."""

    def __init__(self) -> None:
        self.waiting: dict[int | str, int] = {}

    def note(self, item: SessionMessage) -> None:
        message = item.message
        if isinstance(message, types.JSONRPCRequest):
            self.waiting[message.id] = self.waiting.get(message.id, 0) + 1
        elif isinstance(message, types.JSONRPCNotification) and message.method == "notifications/cancelled":
            # A cancelled request gets no answer (MCP): nothing to wait for.
            self.waiting.pop((message.params or {}).get("requestId", ""), None)

    def answered(self, item: SessionMessage) -> None:
        message = item.message
        if isinstance(message, (types.JSONRPCResponse, types.JSONRPCError)) and message.id in self.waiting:
            self.waiting[message.id] -= 1
            if not self.waiting[message.id]:
                del self.waiting[message.id]

    async def drained(self) -> None:
        while self.waiting:
            await anyio.sleep(0.01)


def _is_early_answer(message: SessionMessage, handshake: Handshake | None) -> bool:
    """Whether MESSAGE is the SDK's answer to the `initialize` already answered by HANDSHAKE (logged when the
    two differ: the hand-written answer has fallen behind the SDK)."""
    if handshake is None or handshake.answered_id is None:
        return False
    reply = message.message
    if (
        not isinstance(reply, (types.JSONRPCResponse, types.JSONRPCError))
        or reply.id != handshake.answered_id
    ):
        return False
    sent = json.loads(reply.model_dump_json(by_alias=True, exclude_unset=True))
    if sent.get("result") != handshake.result:
        log.warning("initialize was answered early with %s; the SDK answers %s", handshake.result, sent)
    return True


async def serve_stdio(server: MCPServer, handshake: Handshake | None = None) -> None:
    """Run SERVER over stdin/stdout until the client closes stdin, answering malformed lines; HANDSHAKE holds
    what was read (and maybe answered) before the SDK loaded."""
    # Our own duplicate of fd 0 to read from; fd 0 itself then points at the null device, so a child process
    # can never eat protocol bytes (the SDK does the same when it owns stdin).
    wire_fd = os.dup(sys.stdin.fileno())
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, sys.stdin.fileno())
    os.close(devnull)
    failed: deque[int | str | None] = deque()
    prefix = handshake.prefix if handshake is not None else b""
    text = TextIOWrapper(io.BufferedReader(_Replay(prefix, wire_fd)), encoding="utf-8", errors="replace")
    stdin = _Lines(anyio.wrap_file(text), failed)
    lowlevel = server._lowlevel_server
    async with stdio_server(stdin=stdin) as (read_stream, write_stream):  # type: ignore[arg-type]
        send, receive = anyio.create_memory_object_stream[SessionMessage | Exception](0)
        out_send, out_receive = anyio.create_memory_object_stream[SessionMessage](0)
        early = [handshake]  # the early answer is dropped once
        in_flight = _InFlight()
        writing = [False]

        async def write_answers() -> None:
            async for message in out_receive:
                in_flight.answered(message)
                if early[0] is not None and _is_early_answer(message, early[0]):
                    early[0] = None
                    continue
                writing[0] = True
                await write_stream.send(message)
                writing[0] = False

        async def answer_malformed() -> None:
            async with send:
                async for item in read_stream:
                    if not isinstance(item, Exception):
                        in_flight.note(item)
                        await send.send(item)
                        continue
                    error = types.ErrorData(
                        code=types.PARSE_ERROR,
                        message="Parse error: the request is not a valid JSON-RPC message "
                        f"({terminal_safe(str(item).splitlines()[0][:200])})",
                    )
                    reply = types.JSONRPCError(
                        jsonrpc="2.0", id=failed.popleft() if failed else None, error=error
                    )
                    await write_stream.send(SessionMessage(reply))
                # End of input: the SDK would cancel the calls still running and drop their answers (a
                # sync_project finishes its sync unanswered); they are answered first, within DRAIN_SECONDS.
                with anyio.move_on_after(DRAIN_SECONDS):
                    await in_flight.drained()
                if in_flight.waiting:
                    log.warning("input closed: %d request(s) left unanswered", len(in_flight.waiting))

        async with anyio.create_task_group() as group:
            group.start_soon(answer_malformed)
            group.start_soon(write_answers)
            await lowlevel.run(receive, out_send, lowlevel.create_initialization_options())  # type: ignore[arg-type]
            # The stream is unbuffered: every answer sent has been taken; let the last one reach stdout.
            while writing[0]:
                await anyio.sleep(0.005)
            await write_stream.aclose()  # as the SDK's run would have: the transport's writer then ends
            group.cancel_scope.cancel()
