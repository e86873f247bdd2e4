"""`nexusmem hook ...`: install, remove and inspect the prompt hooks. Thin: parse, call, print.

Git hook subgroups (`hook git ...`) are added to the same `hook` group below the shell commands.
"""

from __future__ import annotations

import click

from nexusmem.cli.common import echo_line, library_errors
from nexusmem.install import shell_hooks

SHELL_CHOICE = click.Choice(shell_hooks.SHELLS, case_sensitive=False)


@click.group(name="hook")
def hook() -> None:
    """Record every command you type (shell prompt hooks) and manage git hooks.

    \b
    Example:
        nexusmem hook install          # into the rc file of the shell in $SHELL
    """


# --- shell prompt hooks -------------------------------------------------------------------------


def _shell_or_detected(shell: str | None) -> str:
    return shell_hooks.normalise_shell(shell) if shell else shell_hooks.detect_shell()


@hook.command(name="install")
@click.option("--shell", "shell", type=SHELL_CHOICE, help="Shell to hook (default: from $SHELL).")
@library_errors
def install_cmd(shell: str | None) -> None:
    """Add the prompt hook to your shell's rc file (idempotent).

    \b
    Example:
        nexusmem hook install --shell zsh
    """
    name = _shell_or_detected(shell)
    had = shell_hooks.is_installed(name)
    path, changed = shell_hooks.install(name)
    if changed and had:
        echo_line(f"Updated the {name} hook in {path} to this NexusMem's script. Open a new shell to use it.")
    elif changed:
        echo_line(f"Installed the {name} hook in {path}. Open a new shell to start recording.")
    else:
        echo_line(f"The {name} hook is already in {path}.")
    gap = shell_hooks.login_gap() if name == "bash" else None
    if gap:
        click.echo(
            f"Note: {gap}, so they record nothing (tmux, ssh and macOS Terminal start them): {shell_hooks.login_fix()}."
        )


@hook.command(name="remove")
@click.option("--shell", "shell", type=SHELL_CHOICE, help="Shell to unhook (default: from $SHELL).")
@library_errors
def remove_cmd(shell: str | None) -> None:
    """Take the prompt hook out of your shell's rc file, leaving the rest as it was.

    \b
    Example:
        nexusmem hook remove --shell bash
    """
    name = _shell_or_detected(shell)
    path, changed = shell_hooks.remove(name)
    if changed:
        echo_line(f"Removed the {name} hook from {path}.")
    else:
        echo_line(f"No {name} hook in {path}; nothing to do.")


@hook.command(name="status")
@library_errors
def status_cmd() -> None:
    """Show which rc files hold the prompt hook and when the command log last grew.

    \b
    Example:
        nexusmem hook status
    """
    for entry in shell_hooks.hook_status():
        if entry.script_gone:
            echo_line(
                f"{entry.shell:<5} installed in {entry.rc_file}, but its script {entry.script} is gone: nothing"
                f" is recorded (fix: nexusmem hook install --shell {entry.shell})"
            )
            continue
        if entry.another:
            echo_line(
                f"{entry.shell:<5} installed in {entry.rc_file} from another NexusMem: it sources {entry.script},"
                f" not this one's hook (fix: nexusmem hook install --shell {entry.shell})"
            )
            continue
        state = "installed" if entry.installed else "not installed"
        echo_line(f"{entry.shell:<5} {state:<14} {entry.rc_file}")
    log = shell_hooks.log_status()
    if not log.exists:
        echo_line(f"log: {log.path} (not written yet)")
        return
    when = log.modified.astimezone().isoformat(timespec="seconds") if log.modified else "?"
    echo_line(f"log: {log.path}: {log.lines} line(s), {log.size} bytes, last written {when}")


@hook.command(name="print")
@click.argument("shell", type=SHELL_CHOICE)
@library_errors
def print_cmd(shell: str) -> None:
    """Print the hook script, for dotfiles managed by hand.

    \b
    Examples:
        eval "$(nexusmem hook print zsh)"       # in ~/.zshrc (bash alike)
        nexusmem hook print fish | source        # in config.fish
    """
    click.echo(shell_hooks.script_text(shell), nl=False)


from nexusmem.cli.agent_hooks import agent_group  # noqa: E402  (after `hook` exists)
from nexusmem.cli.git_hooks import git_group, git_post_group  # noqa: E402

hook.add_command(git_group)
hook.add_command(git_post_group)
hook.add_command(agent_group)
