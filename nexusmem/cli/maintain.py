"""`nexusmem doctor` and `nexusmem uninstall`. Thin: parse, call nexusmem.doctor / nexusmem.install.uninstall,
print."""

from __future__ import annotations

import shlex
import sys

import click

from nexusmem.cli.app import repo_option, root_of
from nexusmem.cli.common import echo_human, echo_line, library_errors
from nexusmem.terminal import json_text, terminal_safe


def _shell_word(path: str) -> str:
    """PATH as one word of a shell command to copy: quoted (shlex), or, when it holds a byte that is not UTF-8
    or a control character, in bash and zsh's `$'…'` with each spelled `\\xNN`, as every path NexusMem prints
    spells them (terminal.terminal_safe), and still naming that folder."""
    if terminal_safe(path) == path:
        return shlex.quote(path)
    return "$'" + terminal_safe(path.replace("\\", "\\\\").replace("'", "\\'")) + "'"


@click.command("doctor")
@repo_option
@click.option("--json", "as_json", is_flag=True, help="Print every check as JSON.")
@click.pass_context
@library_errors
def doctor_cmd(ctx: click.Context, as_json: bool) -> None:
    """Check hooks, store, backends and registry; print each problem with the command that fixes it.

    Exit 1 when there is a problem, 0 otherwise.

    \b
    Example:
        nexusmem doctor
    """
    from nexusmem import doctor

    checks = doctor.run(root_of(ctx))
    problems = [c for c in checks if not c.ok]
    if as_json:
        out = {"ok": not problems, "problems": len(problems), "checks": [c.to_json() for c in checks]}
        sys.stdout.write(json_text(out) + "\n")
    else:
        from nexusmem.text import one_line

        # One line a check, its fix below: a path holding a newline or a tab is spelled with escapes, as
        # commit text is (--json has it exact).
        for check in checks:
            mark = "ok     " if check.ok else "PROBLEM"
            echo_human(f"{mark} {check.area:<10} {one_line(check.detail)}")
            if check.fix:
                echo_human(f"        fix: {one_line(check.fix)}")
        click.echo(f"{len(problems)} problem(s)." if problems else "No problems found.")
    if problems:
        ctx.exit(1)


@click.command("uninstall")
@repo_option
@click.option(
    "--all-projects", is_flag=True, help="Also remove the git hooks of every registered repository."
)
@click.option("--dry-run", is_flag=True, help="Say what would be removed; change nothing.")
@click.pass_context
@library_errors
def uninstall_cmd(ctx: click.Context, all_projects: bool, dry_run: bool) -> None:
    """Remove every shell hook, the agent hooks and this repository's git hooks (byte for byte); keep the
    memories.

    \b
    Examples:
        nexusmem uninstall --dry-run
        nexusmem uninstall --all-projects
    """
    from nexusmem.install import uninstall

    plan = uninstall.uninstall(root_of(ctx), all_projects=all_projects, dry_run=dry_run)
    verb = "Would remove" if dry_run else "Removed"
    for step in plan.removed:
        echo_line(f"{verb} the {step.detail} {step.what} from {step.path}")
    if not plan.removed:
        click.echo(
            "No NexusMem hook is installed" + ("" if all_projects else " here (try --all-projects)") + "."
        )
    for error in plan.errors:
        echo_line(f"Could not remove: {error}", err=True)
    if plan.framework:
        click.echo("\nThe pre-commit framework runs NexusMem hooks; take these lines out yourself:")
        for config, line_no, line in plan.framework:
            echo_line(f"  {config}:{line_no}: {line.strip()}")
    if plan.memories:
        click.echo("\nKept the memories (delete them to forget everything):")
        for folder in plan.memories:
            echo_line(f"  {folder}")
        echo_human("  rm -rf " + " ".join(_shell_word(str(f)) for f in plan.memories))
    click.echo(
        "\nThen remove the package: `pipx uninstall nexusmem`, `uv tool uninstall nexusmem` or"
        " `pip uninstall nexusmem`; and any MCP entry you added to an agent (`claude mcp remove nexusmem`)."
    )
    if plan.errors:
        ctx.exit(1)


@click.command("trust")
@repo_option
@click.option("--revoke", is_flag=True, help="Forget what was confirmed: those settings are not used again.")
@click.pass_context
@library_errors
def trust_cmd(ctx: click.Context, revoke: bool) -> None:
    """Use this repository's config.json settings that reach beyond it.

    A server off this machine (embedding.url, team.url, contradictions.url, sources.session.url), the
    sources that read beyond the repository (sources.conversation, sources.github) and what widens what a
    team store is sent (team.shareShell, team.shareConversations) are used only from a
    .nexusmem/ that NexusMem made on this machine and whose config.json git does not track: a repository
    can bring a config of its own (in an archive, or force-added and brought by a pull). Run this after
    reading .nexusmem/config.json to use the settings it lists as they are now.

    \b
    Example:
        nexusmem trust
    """
    from nexusmem import config, project, registry

    proj = project.load(root_of(ctx))
    if revoke:
        registry.trust(proj.root, proj.id, None)
        echo_line(f"Settings of {proj.root} that reach beyond it are no longer confirmed.")
        return
    asks = config.reaching_out(project.raw_config(proj.root))
    if not asks:
        click.echo("Nothing to confirm: .nexusmem/config.json reaches nothing beyond this repository.")
        return
    registry.trust(proj.root, proj.id, asks)
    listed = "\n".join(f"  {config.shown(k, v)}" for k, v in asks.items())
    echo_line(f"Confirmed for {proj.root} (until they change):")
    echo_human(listed)
