"""`nexusmem team init|push|status`: the shared team store (PostgreSQL + pgvector)."""

from __future__ import annotations

import click

from nexusmem.cli.app import repo_option, root_of
from nexusmem.cli.common import echo_human, echo_json, library_errors


@click.group(
    "team",
    epilog="""\b
Examples:
  PGPASSWORD=... nexusmem team init --url postgresql://alice@db.internal/nexusmem
  nexusmem team push
  nexusmem team status
  nexusmem query --team "why does the upload retry"
""",
)
def team_cmd() -> None:
    """Share this project's memory with the team through PostgreSQL + pgvector (pip install 'nexusmem[team]').

    Shared: commits, diffs, docs, links and verdicts. Shell commands and agent conversations only with
    team.shareShell / team.shareConversations in .nexusmem/config.json (redacted). Local paths never leave.
    """


@team_cmd.command("init")
@repo_option
@click.option("--url", required=True, metavar="URL", help="postgresql://USER@HOST[:PORT]/DATABASE")
@click.pass_context
@library_errors
def init_cmd(ctx: click.Context, url: str) -> None:
    """Check URL, set up the team store's tables and record the URL (never a password) in the config.

    \b
    Example:
        nexusmem team init --url postgresql://alice@db.internal/memories
    """
    from nexusmem import project, team

    proj = project.load(root_of(ctx))
    report = team.init(proj, url)
    if report.stripped_password:
        click.echo(
            "nexusmem: note: the secret in the URL (a password, a client key's sslpassword) was used to"
            " connect and not written to the config: for the next commands put a password in PGPASSWORD"
            " or ~/.pgpass, and give a URL that needs sslpassword in NEXUSMEM_TEAM_URL",
            err=True,
        )
    setup = f"schema {report.schema_version}" + (
        f" (applied migration(s) {', '.join(map(str, report.migrated))})" if report.migrated else ""
    )
    echo_human(f"team store {report.label}: {setup}; this machine pushes as {report.member}")
    if report.no_auto_push is None:
        echo_human("next: `nexusmem team push` (the post-commit sync pushes from now on)")
    elif report.no_auto_push.startswith("no post-commit hook"):
        echo_human(
            f"next: `nexusmem team push`; {report.no_auto_push}, so commits do not push by themselves:"
            " `nexusmem hook git-post install` makes each commit's sync push too"
        )
    else:
        echo_human(f"next: `nexusmem team push`, after each commit ({report.no_auto_push})")


@team_cmd.command("push")
@repo_option
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
@click.option("-q", "--quiet", is_flag=True, help="Print nothing on success.")
@click.pass_context
@library_errors
def push_cmd(ctx: click.Context, as_json: bool, quiet: bool) -> None:
    """Send what this member shares (new and changed since the last push) to the team store.

    \b
    Examples:
        nexusmem team push
        NEXUSMEM_TEAM_URL=postgresql://ci@db.internal/memories nexusmem team push --json
    """
    from nexusmem import project, team

    proj = project.load(root_of(ctx))
    report = team.push(proj)
    if as_json:
        echo_json(report.to_json())
    elif not quiet:
        echo_human(report.describe())


@team_cmd.command("withdraw")
@repo_option
@click.option(
    "--kind",
    "kind",
    type=click.Choice(["shell", "conversations"]),
    required=True,
    help="What to take back: shell commands (team.shareShell) or agent conversations (team.shareConversations).",
)
@click.option("--dry-run", is_flag=True, help="Only count what would be removed.")
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
@click.pass_context
@library_errors
def withdraw_cmd(ctx: click.Context, kind: str, dry_run: bool, as_json: bool) -> None:
    """Remove from the team store the nodes of KIND that you pushed (after turning its share setting off).

    Only the rows you pushed first go; a teammate's stay theirs. Your local memory keeps everything.

    \b
    Example:
        nexusmem team withdraw --kind shell --dry-run
    """
    from nexusmem import project, team

    report = team.withdraw(project.load(root_of(ctx)), kind, dry_run=dry_run)
    if as_json:
        echo_json(report.to_json())
    else:
        echo_human(report.describe())


@team_cmd.command("status")
@repo_option
@click.option("--json", "as_json", is_flag=True, help="Print as JSON.")
@click.pass_context
@library_errors
def status_cmd(ctx: click.Context, as_json: bool) -> None:
    """The team store: nodes by kind, members and their last push, deny-list entries, what is pending here.

    \b
    Example:
        nexusmem team status --json
    """
    from nexusmem import project, team, timefmt
    from nexusmem.store.team import EXACT_KNN_MAX

    proj = project.load(root_of(ctx))
    data = team.status(proj)
    if as_json:
        echo_json(data)
        return
    lines = [
        f"team store  {data['url']} (schema {data['schema_version']}, {data['database_bytes'] / 1e6:,.1f} MB)",
        f"member      {data['member']}; shares {', '.join(data['shared_kinds'])}",
        f"nodes       {data['nodes']:,} ({data['vectors']:,} with vectors,"
        f" {data.get('vector_generations', 1)} vector generation(s))",
    ]
    if not data["vector_index"]:
        lines.append(
            "vector index missing: a large push is loading (or one died before building it); its rows' k-NN"
            f" is an exact scan (past {EXACT_KNN_MAX:,} vectors: words only) until a push builds it"
        )
    advice = team.buffers_advice(data["vector_index_bytes"], data["shared_buffers_bytes"])
    if advice:
        lines.append(advice)
    lines += [f"  {kind:<18} {count:,}" for kind, count in data["by_kind"].items()]
    for member in data["members"]:
        lines.append(
            f"pushed by   {member['member']}: {member['recorded']:,} node(s) recorded first,"
            f" last push {timefmt.iso(member['last_push'])}"
        )
    lines.append(f"deny-list   {data['deny_entries']} team entr(ies)")
    lines.append(f"pending     {data['pending']:,} shareable node(s) here since the last push")
    echo_human("\n".join(lines))
