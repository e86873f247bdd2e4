"""`nexusmem mcp`: serve this machine's project memories to an agent over stdio (the MCP server)."""

from __future__ import annotations

import click


@click.command(
    "mcp",
    epilog="""\b
Examples:
  claude mcp add nexusmem -- "$(command -v nexusmem)" mcp
  nexusmem mcp --log-level INFO 2>mcp.log

\b
Agents start the server without your shell's PATH: name the console script by its absolute path.

\b
Every tool takes projectRoot (an absolute path), so one server serves every repository.
See docs/mcp.md for Cursor, VS Code and Codex configuration.
""",
)
@click.option(
    "--log-level",
    type=click.Choice(["DEBUG", "INFO", "WARNING", "ERROR"], case_sensitive=False),
    default="WARNING",
    show_default=True,
    help="What the server logs to stderr (stdout carries only the protocol).",
)
def mcp_cmd(log_level: str) -> None:
    """Run the MCP server on stdin/stdout: search_memory, sync_project, get_status, get_memory."""
    import sys

    if sys.stdin.isatty():
        # Started by hand: it waits silently for JSON-RPC, which looks like a hang without this line.
        click.echo(
            "nexusmem mcp speaks the Model Context Protocol on stdin/stdout: start it from an agent"
            " (see `nexusmem mcp --help`); Ctrl-D or Ctrl-C stops it.",
            err=True,
        )
    # The MCP SDK takes about a second to import and no other command needs it: `initialize` is answered
    # first, by hand, so an agent's start does not wait for it (nexusmem/mcp_handshake.py).
    from nexusmem.mcp_handshake import answer_initialize

    handshake = answer_initialize()
    from nexusmem.mcp_server import serve
    from nexusmem.store.db import tell_upgrades_later

    tell_upgrades_later()  # an agent's stderr, which no one reads: the next command in a terminal says it
    serve(log_level, handshake)
