"""`nexusmem precheck`: warnings about the files about to be committed. Thin: parse, call, print."""

from __future__ import annotations

import click

from nexusmem.cli.app import repo_option, root_of
from nexusmem.cli.common import library_errors
from nexusmem.cli.plain import report


@click.command(
    "precheck",
    epilog="""\b
Examples:
  nexusmem precheck                  # the staged files (what the pre-commit hook runs)
  nexusmem precheck --working        # changed but not staged yet
  nexusmem precheck --files src/cache.py tests/test_cache.py
  nexusmem hook git install          # run it on every commit
  nexusmem precheck --strict --team --files $(git diff --name-only origin/main...)   # in CI
""",
)
@repo_option
@click.argument("paths", nargs=-1, metavar="[FILE]...")
@click.option(
    "--files", "explicit", is_flag=True, help="Check the FILE arguments instead of the staged files."
)
@click.option("--working", is_flag=True, help="Check unstaged changes instead of the staged files.")
@click.option("--strict", is_flag=True, help="Exit 1 when anything is found (fails the commit in a hook).")
@click.option(
    "--team",
    is_flag=True,
    help="Check against the team store (CI: a fresh checkout with NEXUSMEM_TEAM_URL and PGPASSWORD set).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the findings as JSON.")
@click.option(
    "--author",
    metavar="me|agents|NAME",
    help="Only failures of commands by this author: me, agents, or an agent's name (claude-code, codex).",
)
@click.pass_context
@library_errors
def precheck_cmd(
    ctx: click.Context,
    paths: tuple[str, ...],
    explicit: bool,
    working: bool,
    strict: bool,
    team: bool,
    as_json: bool,
    author: str | None,
) -> None:
    """Warn about staged files with recent unresolved failures or high churn (advisory unless --strict).

    A failure counts when a shell command that names the file (its path, a parent directory or its module
    name) failed in the last 30 days and was never seen passing afterwards. Churn: 4 or more commits
    touching the file in 30 days.
    """
    from nexusmem import precheck

    if paths and not explicit:
        explicit = True  # `precheck a.py b.py` means those files, as the pre-commit framework passes them
    if explicit and working:
        raise click.UsageError("--files and --working are exclusive")
    from nexusmem import authors

    try:
        who = authors.parse(author)
    except authors.AuthorError as exc:
        raise click.BadParameter(
            str(exc).removeprefix(f"--author {author!r}: "), param_hint="--author"
        ) from None
    result = precheck.run(
        root_of(ctx), files=list(paths) if explicit else None, working=working, author=who, team=team
    )
    code = report(result, strict=strict, as_json=as_json)
    if code:
        ctx.exit(code)
