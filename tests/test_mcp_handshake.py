"""`initialize` answered before the SDK loads (nexusmem/mcp_handshake.py): the same answer the SDK gives,
sent once, and the session behind it unchanged."""

from __future__ import annotations

import json
import select
import subprocess
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from mcp.server.runner import ServerRunner, _dump_result
from mcp_types import methods

from nexusmem import mcp_handshake
from nexusmem.mcp_server import build_server

from helpers.cli import console_script
from helpers.mcp import server_env

VERSIONS = [*mcp_handshake.HANDSHAKE_PROTOCOL_VERSIONS, "2026-07-28", "1999-01-01"]


def initialize(request_id: int | str, version: str) -> bytes:
    params = {"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "method": "initialize", "params": params}).encode()


@pytest.mark.parametrize("version", VERSIONS)
def test_the_early_answer_is_the_sdks_answer(version: str) -> None:
    """Built by hand to match the SDK: this fails when an SDK upgrade changes what it would answer."""
    lowlevel = build_server()._lowlevel_server
    runner: Any = SimpleNamespace(
        init_options=None, server=lowlevel, _negotiate_initialize=ServerRunner._negotiate_initialize
    )
    params = json.loads(initialize(1, version))["params"]
    result = ServerRunner._handle_initialize(runner, params)
    # The runner's own path from a handler's result to the wire (ServerRunner._serialize).
    sdk = methods.serialize_server_result("initialize", result.protocol_version, _dump_result(result))
    assert mcp_handshake.initialize_result(version) == sdk


def lines(proc: subprocess.Popen[bytes], count: int, timeout: float = 30) -> list[dict[str, Any]]:
    assert proc.stdout is not None
    out = []
    for _ in range(count):
        ready, _, _ = select.select([proc.stdout], [], [], timeout)
        assert ready, f"the server did not answer (got {out})"
        out.append(json.loads(proc.stdout.readline()))
    return out


@pytest.mark.slow
def test_initialize_is_answered_once_and_the_session_goes_on(tmp_path: Path) -> None:
    """Over a real process: `initialize` answered (by hand), exactly once; then tools/list and a ping
    answered by the SDK; and an `initialize` after a ping (answered by the SDK itself) says the same."""
    proc = subprocess.Popen(
        [console_script(), "mcp"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=(tmp_path / "server.log").open("wb"),
        env=server_env(),
        cwd=tmp_path,
    )
    assert proc.stdin is not None
    proc.stdin.write(initialize("first", "2025-06-18") + b"\n")
    proc.stdin.flush()
    [early] = lines(proc, 1)
    proc.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
    proc.stdin.write(
        b'{"jsonrpc":"2.0","id":2,"method":"tools/list"}\n{"jsonrpc":"2.0","id":3,"method":"ping"}\n'
    )
    proc.stdin.close()
    listed, pong = lines(proc, 2)
    assert proc.wait(timeout=30) == 0
    assert proc.stdout is not None and proc.stdout.read() == b"", "a second answer to initialize"
    assert early["id"] == "first" and early["result"]["serverInfo"]["name"] == "nexusmem"
    # The schema as semver build metadata: an agent's server list tells the installs apart.
    from nexusmem import __version__
    from nexusmem.store import migrations

    assert early["result"]["serverInfo"]["version"] == f"{__version__}+schema.{migrations.LATEST}"
    assert listed["id"] == 2
    assert {tool["name"] for tool in listed["result"]["tools"]} == {
        "search_memory",
        "sync_project",
        "get_status",
        "get_memory",
    }
    assert pong == {"jsonrpc": "2.0", "id": 3, "result": {}}
    assert "answered early" not in (tmp_path / "server.log").read_text()

    # A first line that is not `initialize` leaves the whole handshake to the SDK: same answer.
    proc = subprocess.Popen(
        [console_script(), "mcp"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env=server_env(),
        cwd=tmp_path,
    )
    assert proc.stdin is not None
    proc.stdin.write(b'{"jsonrpc":"2.0","id":0,"method":"ping"}\n' + initialize("late", "2025-06-18") + b"\n")
    proc.stdin.close()
    replies = lines(proc, 2)
    assert proc.wait(timeout=30) == 0
    assert replies[1] == {**early, "id": "late"}
