"""The MCP `initialize` handshake, answered before the SDK is imported.

Importing the MCP SDK costs 0.85-1.4 s on a quiet 2-core machine (its pydantic models for two protocol
eras are built at import: `mcp_types._types`, `_v2025_11_25`, `_v2026_07_28` take ~90% of it), and an agent
waits for the answer to `initialize` at every start. This module needs only the standard library: it reads
the client's first line from stdin, and when that line is a well-formed `initialize` request it writes the
answer the SDK would give (same capabilities, server info, instructions and version negotiation; a test
compares the two for every protocol version) and only then lets the SDK load.

Nothing is hidden from the SDK: every byte read here is handed to it again (`prefix`), so its session goes
through the same handshake and state machine as before; its own answer to the replayed `initialize` is
dropped on the way out (see mcp_stdio.serve_stdio), after being compared with the one already sent. The
requests that follow (`tools/list`, tool calls) wait for the SDK as before: the import is moved after the
answer, not avoided.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from typing import Any

from nexusmem import SCHEMA, __version__

SERVER_NAME = "nexusmem"
# The memory schema as semver build metadata ("0.1.0+schema.18"): an agent's list of servers tells two
# installs apart by what decides whether they can share a memory.
SERVER_VERSION = f"{__version__}+schema.{SCHEMA}"

INSTRUCTIONS = """\
NexusMem remembers what actually happened in a git repository: commits and their per-file patches, shell
commands with their exit codes (when the user installed the prompt hooks) and project docs. Call
search_memory before changing unfamiliar code, when a test or command fails, or when you need to know why
something is the way it is; call get_memory to read one result in full. Coding agents' own commands are
recorded too (when the user installed NexusMem's agent hook) and their past conversations (when transcripts are
read): search_memory with author: "agents", or one agent's name such as "claude-code", keeps to them. Every
tool needs projectRoot, the absolute path of the repository. If a repository has no memory yet, call
sync_project once."""

# The SDK's `HANDSHAKE_PROTOCOL_VERSIONS` (mcp_types.version): a requested version in this list is echoed,
# any other gets the newest. Revisions after these use a per-request envelope, not `initialize`.
HANDSHAKE_PROTOCOL_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
CAPABILITIES: dict[str, Any] = {
    "prompts": {"listChanged": False},
    "resources": {"listChanged": False, "subscribe": False},
    "tools": {"listChanged": False},
}
# The first request line is read whole only up to this size; a longer one is left to the SDK.
MAX_FIRST_LINE = 1 << 20
# A surrogate escape: fine for Python's json, refused by the SDK's parser (mcp_stdio repairs those lines).
_SURROGATE = re.compile(rb"\\u[dD][89a-fA-F]")


@dataclass(frozen=True)
class Handshake:
    """What was read from stdin before the SDK loaded: PREFIX (every byte, to replay), and when the first
    line was an `initialize` answered here, its request id and the result sent."""

    prefix: bytes
    answered_id: int | str | None = None
    result: dict[str, Any] | None = None


def initialize_result(requested: str) -> dict[str, Any]:
    """The result of `initialize` for a client asking for protocol version REQUESTED."""
    version = requested if requested in HANDSHAKE_PROTOCOL_VERSIONS else HANDSHAKE_PROTOCOL_VERSIONS[-1]
    return {
        "capabilities": CAPABILITIES,
        "instructions": INSTRUCTIONS,
        "protocolVersion": version,
        "serverInfo": {"name": SERVER_NAME, "version": SERVER_VERSION},
    }


def _answerable(message: Any) -> tuple[int | str, str] | None:
    """(id, requested version) when MESSAGE is an `initialize` request the SDK would accept; else None.

    Strict on purpose: anything unusual (a missing clientInfo, a boolean id, extra top-level keys) is left
    to the SDK, which answers it - a little later - with its own result or error."""
    if not isinstance(message, dict) or set(message) != {"jsonrpc", "id", "method", "params"}:
        return None
    ident = message["id"]
    if message["jsonrpc"] != "2.0" or message["method"] != "initialize" or isinstance(ident, bool):
        return None
    if not isinstance(ident, (int, str)):
        return None
    params = message["params"]
    if not isinstance(params, dict) or not isinstance(params.get("protocolVersion"), str):
        return None
    info = params.get("clientInfo")
    if not isinstance(params.get("capabilities"), dict) or not isinstance(info, dict):
        return None
    if not isinstance(info.get("name"), str) or not isinstance(info.get("version"), str):
        return None
    return ident, params["protocolVersion"]


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def answer_initialize(stdin_fd: int = 0, stdout_fd: int = 1) -> Handshake:
    """Read the first line from STDIN_FD; when it is an `initialize` request, answer it on STDOUT_FD."""
    buf = bytearray()
    while b"\n" not in buf and len(buf) <= MAX_FIRST_LINE:
        chunk = os.read(stdin_fd, 65536)
        if not chunk:
            return Handshake(bytes(buf))
        buf += chunk
    line, _, _ = bytes(buf).partition(b"\n")
    if _SURROGATE.search(line):
        return Handshake(bytes(buf))
    try:
        message = json.loads(line)
    except ValueError:  # not JSON, not UTF-8, a lone surrogate: the SDK path answers these
        return Handshake(bytes(buf))
    found = _answerable(message)
    if found is None:
        return Handshake(bytes(buf))
    ident, requested = found
    result = initialize_result(requested)
    reply = {"jsonrpc": "2.0", "id": ident, "result": result}
    _write_all(stdout_fd, json.dumps(reply, ensure_ascii=False, separators=(",", ":")).encode() + b"\n")
    return Handshake(bytes(buf), ident, result)
