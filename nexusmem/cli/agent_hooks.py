"""`nexusmem hook agent ...`: the coding agents' command hooks (Claude Code, Codex). Thin: parse, call, print."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

import click

from nexusmem.cli.app import repo_option, root_of
from nexusmem.cli.common import echo_line, library_errors
from nexusmem.install import agent_hooks


class AgentChoice(click.Choice):  # type: ignore[type-arg]  # generic in click 8.2, not before
    """The agents' names, and the short names the library takes for them (`claude` is claude-code), each in
    any case: the command receives the full name."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, str):
            with contextlib.suppress(agent_hooks.AgentHookError):  # click's own message lists the names
                value = agent_hooks.normalise_agent(value)
        return super().convert(value, param, ctx)


AGENT_CHOICE = AgentChoice(agent_hooks.AGENTS, case_sensitive=False)

_PROJECT_HELP = (
    "This repository's .claude/settings.local.json (not committed) instead of your user settings."
    " Claude Code only."
)


def _project(ctx: click.Context, project: bool) -> Path | None:
    if not project:
        return None
    from nexusmem import paths

    return paths.repo_root(root_of(ctx))


@click.group(name="agent")
def agent_group() -> None:
    """Record the shell commands your coding agents run (Claude Code, Codex), tagged with the agent.

    \b
    Examples:
        nexusmem hook agent install claude-code      # ~/.claude/settings.json
        nexusmem hook agent install codex            # ~/.codex/hooks.json
        nexusmem query --author agents "what did the agent run on the migrations"
    """


def _ignored_by_git(root: Path, path: Path) -> bool:
    """Whether git ignores PATH in the repository ROOT (`git check-ignore`; exit 0 = ignored)."""
    from nexusmem import gitcmd
    from nexusmem.errors import GitCommandError

    try:
        code, _out = gitcmd.run_ok(["check-ignore", "-q", "--", str(path)], root)
    except GitCommandError:
        return True  # no git to ask: say nothing
    return code == 0


@agent_group.command(name="install")
@click.argument("agent", type=AGENT_CHOICE)
@click.option("--project", is_flag=True, help=_PROJECT_HELP)
@repo_option
@click.pass_context
@library_errors
def install_cmd(ctx: click.Context, agent: str, project: bool) -> None:
    """Add the command recorder to AGENT's hooks (idempotent; your other settings are kept).

    \b
    Example:
        nexusmem hook agent install claude-code --project
    """
    root = _project(ctx, project)
    path, changed = agent_hooks.install(agent, root)
    if changed:
        echo_line(f"Installed the {agent} command hook in {path}. Start a new {agent} session to record.")
    else:
        echo_line(f"The {agent} command hook is already in {path}.")
    if agent == "claude-code":
        _warn_other_scope(ctx, root, path)
    if root is not None and not _ignored_by_git(root, path):
        # It holds this machine's paths: a `git add .` would commit it for every teammate.
        rel = path.relative_to(root).as_posix()
        click.echo(
            f"note: git does not ignore {rel}: add it to .gitignore (or .git/info/exclude) so that it is never"
            " committed"
        )
    if agent == "codex":
        click.echo(
            "Codex runs a new or changed hook only after you trust it once: open `codex` and accept the"
            " hook review it shows (a `codex exec` run alone never asks)."
        )


def _warn_other_scope(ctx: click.Context, root: Path | None, path: Path) -> None:
    """Say so when Claude Code's hook is now in both its user settings and this repository's: both run."""
    from nexusmem import paths
    from nexusmem.errors import NexusMemError

    if root is None:
        try:
            root = paths.repo_root(root_of(ctx))
        except NexusMemError:
            return  # outside a repository: no project settings to compare with
    both = agent_hooks.doubled(root)
    if both is None:
        return
    other = both[1] if path == both[0] else both[0]
    # The fix status and doctor name (DOUBLED_FIX), whichever scope was installed last: one advice.
    click.echo(
        f"warning: the claude-code command hook is also installed in {other}: Claude Code runs both, so"
        f" every Bash call is logged twice (stored once); keep one: {agent_hooks.DOUBLED_FIX}"
    )


@agent_group.command(name="remove")
@click.argument("agent", type=AGENT_CHOICE)
@click.option("--project", is_flag=True, help=_PROJECT_HELP)
@repo_option
@click.pass_context
@library_errors
def remove_cmd(ctx: click.Context, agent: str, project: bool) -> None:
    """Take the command recorder out of AGENT's hooks (the file as it was before install).

    \b
    Example:
        nexusmem hook agent remove codex
    """
    path, changed = agent_hooks.remove(agent, _project(ctx, project))
    if changed:
        echo_line(f"Removed the {agent} command hook from {path}.")
    else:
        echo_line(f"No {agent} command hook in {path}; nothing to do.")


@agent_group.command(name="status")
@click.argument("agent", type=AGENT_CHOICE, required=False)
@repo_option
@click.pass_context
@library_errors
def status_cmd(ctx: click.Context, agent: str | None) -> None:
    """Show where the agents' command hooks are installed (user scope, and this repository's).

    \b
    Example:
        nexusmem hook agent status
    """
    from nexusmem import paths
    from nexusmem.errors import NexusMemError

    try:
        root: Path | None = paths.repo_root(root_of(ctx))
    except NexusMemError:
        root = None
    for name in [agent] if agent else list(agent_hooks.AGENTS):
        scopes: list[Path | None] = [None]
        if root is not None and name == "claude-code":
            scopes.append(root)
        for scope in scopes:
            entry = agent_hooks.status(name, scope)
            state = "installed" if entry.installed else ("outdated" if entry.stale else "not installed")
            echo_line(f"{entry.agent:<12} {entry.scope:<8} {state:<14} {entry.path}")
            if entry.stale:
                click.echo(f"  run `nexusmem hook agent install {entry.agent}` to point it at this NexusMem")
        both = agent_hooks.doubled(root) if name == "claude-code" else None
        if both is not None:
            click.echo(
                "  claude-code is installed at both scopes: Claude Code runs both hooks, so every Bash call is"
                f" logged twice (stored once); keep one: {agent_hooks.DOUBLED_FIX}"
            )
