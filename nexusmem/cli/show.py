"""show: one memory item in full (what MCP get_memory gives an agent)."""

from __future__ import annotations

import click

from nexusmem.cli.app import repo_option, root_of
from nexusmem.cli.common import echo_human, echo_json, library_errors


@click.command(
    "show",
    epilog="""\b
Examples:
  nexusmem show 3f9a1c                 # an id from `nexusmem query`, or its first 6+ characters
  nexusmem show 3f9a1c --json
  nexusmem show --team 3f9a1c          # an item of `nexusmem query --team` only the team store holds
""",
)
@repo_option
@click.argument("node_id", metavar="ID")
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Print the item as JSON (the shape of MCP get_memory, with every file listed).",
)
@click.option(
    "--team",
    is_flag=True,
    help="An id this memory does not hold is read from the team store (the items of `query --team`).",
)
@click.pass_context
@library_errors
def show_cmd(ctx: click.Context, node_id: str, as_json: bool, team: bool) -> None:
    """Expand one item in full: title, ref, kind, dates, provenance, trust, body, files and its links (those
    leaving it, and those arriving: a commit's GitHub threads)."""
    from nexusmem import show

    item = show.show(root_of(ctx), node_id, team=team)
    if as_json:
        echo_json(item)
    else:
        echo_human(show.render(item))  # a stored body may hold terminal escapes
