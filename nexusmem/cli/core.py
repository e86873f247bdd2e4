"""init, sync, query, status, projects."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import click

from nexusmem.cli.app import repo_option, root_of
from nexusmem.cli.common import echo_human, echo_json, echo_line, library_errors


@click.command("init", epilog="Example:\n\n  nexusmem init && nexusmem sync")
@repo_option
@click.pass_context
@library_errors
def init_cmd(ctx: click.Context) -> None:
    """Create .nexusmem/ in this repository and register it. Safe to run again."""
    from nexusmem import project

    proj, created = project.init(root_of(ctx))
    verb = "initialised" if created else "already initialised"
    echo_line(f"{verb}: {proj.state_dir} (project {proj.id})")


def _known_sources(names: tuple[str, ...]) -> tuple[str, ...]:
    """--source values, each a source that exists (a typo is a usage error, exit 2, not a crash)."""
    from nexusmem.sources.registry import SOURCES

    unknown = [name for name in names if name not in SOURCES]
    if unknown:
        raise click.BadParameter(f"unknown source {unknown[0]!r} (known: {', '.join(SOURCES)})")
    return names


@click.command("sync", epilog="Examples:\n\n  nexusmem sync\n\n  nexusmem sync --rebuild --quiet")
@repo_option
@click.option("--rebuild", is_flag=True, help="Drop this project's nodes and ingest everything again.")
@click.option(
    "--source",
    "only",
    multiple=True,
    metavar="NAME",
    callback=lambda _ctx, _param, names: _known_sources(names),
    help="Sync only this source (git, diff, docs, changelog, shell, conversation, atuin, github, session);"
    " repeatable.",
)
@click.option(
    "--conversation",
    is_flag=True,
    help="Also read the coding agents' transcripts this once (sources.conversation, off by default).",
)
@click.option(
    "--link-failures",
    is_flag=True,
    help="Link failed shell commands to what fixed them (retry, commit, discussion) even when nothing new was"
    " read, and say what linking did (a sync that reads anything new links anyway).",
)
@click.option(
    "--auto",
    is_flag=True,
    help="As the post-commit hook runs it: skip (marking pending) when a sync already runs; link failures.",
)
@click.option(
    "--prune-source",
    metavar="NAME",
    help="Instead of syncing, delete every node of one source (git, diff, docs, shell, shell:zsh...).",
)
@click.option("--yes", is_flag=True, help="With --prune-source: really delete (otherwise a dry run).")
@click.option(
    "--github",
    "github",
    is_flag=True,
    help="Also read GitHub issues and PRs (via gh) this once, even if off.",
)
@click.option("--no-embed", is_flag=True, help="Skip the embedding pass this once (search stays as it was).")
@click.option(
    "--ignore-stash",
    is_flag=True,
    help="Build a new memory even though `git stash --all` holds the old one (otherwise refused).",
)
@click.option(
    "--wait",
    type=click.FloatRange(min=0),
    default=600.0,
    show_default=True,
    metavar="SECONDS",
    help="How long to wait for another sync of this project to finish (0: give up at once).",
)
@click.option("-q", "--quiet", is_flag=True, help="Print nothing on success.")
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
@click.option("-v", "--verbose", is_flag=True, help="Also print how long each phase took (on stderr).")
@click.pass_context
@library_errors
def sync_cmd(
    ctx: click.Context,
    rebuild: bool,
    only: tuple[str, ...],
    conversation: bool,
    link_failures: bool,
    auto: bool,
    prune_source: str | None,
    yes: bool,
    github: bool,
    no_embed: bool,
    ignore_stash: bool,
    wait: float,
    quiet: bool,
    as_json: bool,
    verbose: bool,
) -> None:
    """Ingest new git commits, per-file diffs, docs and shell history (initialises the repo when needed)."""
    from nexusmem import sync

    if prune_source:
        count = sync.prune_source(root_of(ctx), prune_source, dry_run=not yes)
        source = prune_source.partition(":")[0]
        # A whole source's cursor goes with its nodes; one shell's commands share the log's cursor.
        after = (
            "a sync adds only that shell's new commands"
            if ":" in prune_source
            else f"the next sync reads {source} again from the start unless it is turned off"
            f" (sources.{source}.enabled: false)"
        )
        if as_json:
            echo_json({"source": prune_source, "dry_run": not yes, "nodes": count, "after": after})
        elif quiet:
            pass
        elif yes:
            click.echo(
                f"deleted {count} node(s) of {prune_source}, with their review verdicts and stale marks;"
                f" {after} (`nexusmem sync --rebuild` reads everything again and keeps verdicts)"
            )
        else:
            click.echo(
                f"would delete {count} node(s) of {prune_source}, with their review verdicts and stale marks;"
                f" {after} (dry run: add --yes to delete)"
            )
        return

    if auto:
        import os

        from nexusmem import autosync
        from nexusmem.errors import NexusMemError
        from nexusmem.store.db import tell_upgrades_later

        tell_upgrades_later()  # the hook's output goes to a log: the next command in a terminal says it
        try:
            autosync.auto_sync(root_of(ctx), log=echo_human)
        except NexusMemError as exc:
            # The hook sends this to .nexusmem/auto-sync.log: dated like the log's other lines, so that a
            # reader can tell which commit's sync failed.
            from nexusmem.cli.plain import error_text

            click.echo(f"{autosync.stamp()} pid {os.getpid()}: Error: {error_text(str(exc))}", err=True)
            ctx.exit(1)
        return
    from nexusmem.cli.plain import run_sync

    # The same body as the plain path's (cli/plain.py), so that both print the same bytes.
    run_sync(
        root_of(ctx),
        quiet=quiet,
        as_json=as_json,
        verbose=verbose,
        rebuild=rebuild,
        only=list(only),
        link_failures=link_failures,
        embed=not no_embed,
        wait=wait,
        enable=[*(["conversation"] if conversation else []), *(["github"] if github else [])],
        ignore_stash=ignore_stash,
    )


AUTHOR_HELP = (
    "Only shell commands (and conversations) by this author: me (what you typed: your commands, and the"
    " questions you asked your agents), agents (any coding agent), or an agent's"
    " name (claude-code, codex, ...). Commits, diffs and docs always pass."
)


def parse_author(value: str | None) -> str | None:
    """--author checked (a bad value is a usage error naming the option)."""
    from nexusmem import authors

    try:
        return authors.parse(value)
    except authors.AuthorError as exc:
        raise click.BadParameter(
            str(exc).removeprefix(f"--author {value!r}: "), param_hint="--author"
        ) from None


class _QueryCommand(click.Command):
    """`query`, whose unknown option may be a question that starts with a dash (`--force-with-lease`): the
    error says how to ask it, unless the option looks like a typo of one of query's."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        try:
            return super().parse_args(ctx, args)
        except click.NoSuchOption as exc:
            if exc.possibilities:  # a mistyped option (`--jsn`): click's "Did you mean" says it
                raise
            hint = f" A question that starts with '-' follows '--': nexusmem query -- {exc.option_name}"
            raise click.NoSuchOption(exc.option_name, exc.message + hint, ctx=exc.ctx) from None


@click.command(
    "query",
    cls=_QueryCommand,
    epilog="""\b
Examples:
  nexusmem query "why did we switch the cache to WAL"
  nexusmem query --budget 800 --json flaky test
  nexusmem query --since 2d "what failed in the upload tests"
  nexusmem query -- --force-with-lease
  nexusmem query --all-projects "why was the retry budget raised"
  pytest 2>&1 | nexusmem query -      (the question read from stdin)

\b
Time: --since/--until filter on when things happened (a commit's date, when a
command ran); --as-of on when NexusMem recorded them (what it knew back then).
A question that asks about time ("yesterday", "recently", "last week", a date)
ranks newer items higher; otherwise the age of commits, diffs and docs does not
count. An answer with no good match starts with "No strong match" (--json:
"weak": true) and shows only the closest few items.
""",
)
@repo_option
@click.argument("text", nargs=-1, required=True)
@click.option(
    "--budget",
    type=click.IntRange(50, 100_000),
    default=None,
    help="Token budget, 50 to 100000 (default 2000).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON (see docs/contracts.md).")
@click.option(
    "--since",
    metavar="WHEN",
    help="Only what happened at or after WHEN: YYYY-MM-DD (a UTC day), an ISO 8601 time, today, yesterday (local days), or an age (30m, 6h, 2d, 1w, '2 days ago', 'last 2 weeks').",
)
@click.option(
    "--until",
    metavar="WHEN",
    help="Only what happened at or before WHEN (same forms; a bare date includes that whole day).",
)
@click.option(
    "--as-of",
    metavar="WHEN",
    help="Only what the store had recorded by WHEN (as --until: a date means its end): recording time, not "
    "event time (when a sync stored an item, not when its commit or command happened).",
)
@click.option(
    "--all-projects",
    is_flag=True,
    help="Search every project registered on this machine (~/.nexusmem/projects.json), tagged by project.",
)
@click.option("--author", metavar="me|agents|NAME", help=AUTHOR_HELP)
@click.option(
    "--team",
    is_flag=True,
    help="Also search the team store (nexusmem team init), fused with this memory; items tagged by who "
    "recorded them. Unreachable: local results and one note.",
)
@click.pass_context
@library_errors
def query_cmd(
    ctx: click.Context,
    text: tuple[str, ...],
    budget: int | None,
    as_json: bool,
    since: str | None,
    until: str | None,
    as_of: str | None,
    all_projects: bool,
    author: str | None,
    team: bool,
) -> None:
    """Search this repository's memory and print a ranked, token-budgeted answer."""
    from nexusmem import project
    from nexusmem.cli.plain import answer, stdin_question
    from nexusmem.retrieve import query, timecue

    question = stdin_question(" ".join(text).strip())
    if not question:
        raise click.BadParameter("the query is empty", param_hint="TEXT")
    window = timecue.window(since, until)
    who = parse_author(author)
    if all_projects and team:
        raise click.UsageError("--team and --all-projects cannot be combined")
    if all_projects:
        _query_all_projects(ctx, question, budget, as_json, as_of, window, who)
        return
    proj = project.load(root_of(ctx))
    if team:
        limit = budget if budget is not None else int(proj.config["query"]["budget"])
        _query_team(proj, question, limit, as_json, query.parse_as_of(as_of), window, who)
        return
    # The same body as the plain path's (cli/plain.py), so that both print the same bytes.
    answer(proj, question, budget=budget, as_json=as_json, as_of=as_of, window=window, author=who)


def _query_team(
    proj: Any,
    question: str,
    limit: int,
    as_json: bool,
    cutoff: int | None,
    window: tuple[int | None, int | None],
    who: str | None,
) -> None:
    """`query --team`: local memory fused with the team store; a team store that cannot be reached (or is
    not configured) leaves the local answer plus one note on stderr, never an error."""
    from nexusmem import team as team_mod
    from nexusmem.cli.plain import notes_left_out
    from nexusmem.retrieve import multi
    from nexusmem.retrieve import team as team_query

    result = team_mod.query(
        proj, question, budget=limit, as_of=cutoff, since=window[0], until=window[1], author=who
    )
    if as_json:
        echo_json(team_query.to_json(result))
    else:
        echo_human(rendered := multi.render(result))
        notes_left_out(result.notes, rendered)


def _query_all_projects(
    ctx: click.Context,
    question: str,
    budget: int | None,
    as_json: bool,
    as_of: str | None,
    window: tuple[int | None, int | None],
    author: str | None = None,
) -> None:
    """`query --all-projects`: the current directory need not be a repository; skipped projects go to stderr."""
    from nexusmem import config, paths
    from nexusmem.cli.plain import notes_left_out
    from nexusmem.errors import NexusMemError
    from nexusmem.retrieve import multi, query

    cutoff = query.parse_as_of(as_of)
    limit = budget
    if limit is None:
        limit = query.DEFAULT_BUDGET
        try:
            root = paths.repo_root(root_of(ctx))
        except NexusMemError:
            root = None
        # Inside a repository with a memory, its configured budget applies, as for a plain query.
        if root is not None and paths.config_path(root).exists():
            limit = int(config.load(paths.config_path(root))["query"]["budget"])
    result = multi.search_all(
        question,
        current=root_of(ctx),
        budget=limit,
        as_of=cutoff,
        since=window[0],
        until=window[1],
        author=author,
        # Not stored first, as MCP does (a cold query cannot afford the syncs): said, as a plain query says it.
        unsynced=True,
    )
    for note in result.skipped_notes:
        echo_human(f"nexusmem: note: {note}", err=True)
    if not result.projects and not result.skipped:
        click.echo(
            "nexusmem: note: no project has a memory yet (run `nexusmem sync` in a repository)", err=True
        )
    if as_json:
        echo_json(multi.to_json(result))
    else:
        echo_human(rendered := multi.render(result))
        notes_left_out(result.notes, rendered)


@click.command(
    "status",
    epilog="Examples:\n\n  nexusmem status\n\n  nexusmem status --share\n\n  nexusmem status --verbose",
)
@repo_option
@click.option("--json", "as_json", is_flag=True, help="Print as JSON.")
@click.option("--share", is_flag=True, help="A plain-text summary without local paths, for pasting.")
@click.option(
    "-v",
    "--verbose",
    is_flag=True,
    help="Also show the file of each skipped transcript record (found now, not stored).",
)
@click.pass_context
@library_errors
def status_cmd(ctx: click.Context, as_json: bool, share: bool, verbose: bool) -> None:
    """What this repository's memory holds: nodes by kind, date range, sources and their last sync."""
    from nexusmem import project, status
    from nexusmem.cli.plain import store_note
    from nexusmem.errors import FirstSyncRunningError

    try:
        proj = project.load(root_of(ctx))
    except FirstSyncRunningError as exc:  # the post-commit hook's first sync has not made the store yet
        info = status.building(exc.root)
    else:
        info = status.status(proj, store_note, locate=verbose and not share)
    if as_json:
        echo_json(info)
    elif share:
        echo_human(status.share(info))
    else:
        echo_human(status.render(info))


def _snake(entry: dict[str, Any]) -> dict[str, Any]:
    """ENTRY's camelCase keys (projects.json's `lastSync`) in snake_case."""
    return {
        re.sub(r"(?<=[a-z])([A-Z])", lambda m: "_" + m.group(1).lower(), key): v for key, v in entry.items()
    }


@click.command("projects", epilog="Examples:\n\n  nexusmem projects\n\n  nexusmem projects --prune")
@click.option("--prune", is_flag=True, help="Forget registered projects whose database is gone.")
@click.option("--json", "as_json", is_flag=True, help="Print as JSON.")
@library_errors
def projects_cmd(prune: bool, as_json: bool) -> None:
    """List every repository with a NexusMem memory on this machine (~/.nexusmem/projects.json)."""
    from nexusmem import registry

    removed = registry.prune() if prune else []
    entries = registry.load()
    rows = [{**p, "missing": not Path(str(p.get("db", ""))).exists()} for p in entries]
    if as_json:
        # projects.json keeps its keys as written; what --json prints is snake_case like every --json.
        echo_json({"projects": [_snake(p) for p in rows], "pruned": [_snake(p) for p in removed]})
        return
    from nexusmem.text import one_line

    for p in removed:
        echo_human(f"pruned   {one_line(str(p['root']))} (database gone)")
    if not rows:
        click.echo("no projects registered yet (run `nexusmem sync` in a repository)")
    for p in rows:
        flag = "MISSING " if p["missing"] else "        "
        name = p.get("name", "?")
        # A name the file gives as something else than a string is shown as the file has it: `{"a": 1}`.
        shown = name if isinstance(name, str) else registry.as_json(name, 60)
        echo_human(f"{flag}{one_line(shown):<24} {one_line(str(p['root']))}")
    if any(p["missing"] for p in rows) and not prune:
        click.echo("(MISSING: the database is gone or unreachable; `nexusmem projects --prune` forgets them)")
