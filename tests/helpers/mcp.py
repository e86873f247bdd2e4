"""Driving the installed `nexusmem mcp` with the SDK's real stdio client (shared by the MCP tests)."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from helpers.cli import console_script


def server_env() -> dict[str, str]:
    """What the server process needs from the isolated test environment (conftest sets these), PYTHONPATH
    (a checkout tested with PYTHONPATH=<checkout> serves its own code, not the installed one's), and TZ (the
    local time zone, which a server inherits from the agent that starts it: helpers.env.local_zone)."""
    keep = ("HOME", "NEXUSMEM_HOME", "GIT_CONFIG_GLOBAL", "GIT_CONFIG_NOSYSTEM", "PATH", "PYTHONPATH", "TZ")
    return {k: os.environ[k] for k in keep if k in os.environ}


@asynccontextmanager
async def mcp_session(log: Path) -> AsyncIterator[ClientSession]:
    """An initialised client session to a fresh server process; its stderr goes to LOG."""
    params = StdioServerParameters(
        command=console_script(), args=["mcp"], env=server_env(), cwd=str(log.parent)
    )
    with log.open("w", encoding="utf-8") as errlog:
        async with (
            stdio_client(params, errlog=errlog) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            yield session
