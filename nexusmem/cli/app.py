"""The click group: lazy sub-commands, `-C PATH` before or after the command, library errors → exit 1."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from nexusmem import VERSION_TEXT
from nexusmem.cli.main import ABORTED, COMMANDS, INTERRUPTED
from nexusmem.cli.plain import quiet_stdout, reader_gone

F = TypeVar("F", bound=Callable[..., Any])
# Commands that only read and print: a reader that stopped reading (`| head -1`) ends them with 0. Any other
# (sync, forget, uninstall, hook install, team push …) was stopped before it was done, and exits 1 saying so.
READ_ONLY = frozenset({"query", "status", "projects", "stale", "show", "doctor", "precheck"})


def _only_reads(name: str, words: set[str]) -> bool:
    """Whether the command NAME, run with WORDS, only reads and prints (help, a dry run, a list, a status)."""
    if name in READ_ONLY or name.startswith("scan-") or words & {"--help", "-h", "--dry-run"}:
        return True
    return (name == "forget" and "--list" in words) or (name in ("hook", "team") and "status" in words)


def _said(exc: click.ClickException) -> click.exceptions.Exit:
    """Print EXC (a usage error, a command's ClickException) as click's main does, and end with its code. A
    reader that closed the pipe while it was printed (`nexusmem query x --budget 10 2>&1 | head -1`) took
    what it wanted: the rest goes nowhere, and the code stays (2 for a usage error), where click's main let
    the BrokenPipeError out (exit 1, a traceback in crash.log)."""
    try:
        exc.show()
    except BrokenPipeError:
        _quiet_both()
    return click.exceptions.Exit(exc.exit_code)


def _quiet_both() -> None:
    """stdout and stderr pointed at /dev/null: neither a later write nor the final flush raises again."""
    import sys

    quiet_stdout()
    quiet_stdout(sys.stderr)


class LazyGroup(click.Group):
    """Imports a command's module only when that command is used (or help lists it)."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def invoke(self, ctx: click.Context) -> Any:
        """Ctrl-C ends a command with "Aborted!" and exit 130, the shell's code for an interrupt (click's
        own is 1, which a script cannot tell from the command's failure). A reader that stopped reading
        (`nexusmem stale | head -1`) ends a command that only reads quietly with 0, as the plain query's
        (click's is 1: only a command whose output went in one write, and so reached the pipe before head
        left, passed); one that changes something (READ_ONLY) with 1 and a line on stderr saying so."""
        try:
            return super().invoke(ctx)
        except click.ClickException as exc:
            raise _said(exc) from None
        except KeyboardInterrupt:
            import sys

            sys.stderr.write(f"\n{ABORTED}\n")
            raise click.exceptions.Exit(INTERRUPTED) from None
        except BrokenPipeError:
            if not reader_gone():
                raise  # another pipe: click's own handling (exit 1)
            quiet_stdout()
            import sys

            name = ctx.invoked_subcommand or ""
            if _only_reads(name, set(sys.argv[1:])):
                raise click.exceptions.Exit(0) from None
            # A command that changes something was stopped half way: its exit code must not say it was done.
            try:
                sys.stderr.write(
                    f"nexusmem {name}: stopped when the reader of its output closed the pipe; what it had not"
                    " done yet is not done (run it again without the pipe)\n"
                )
                sys.stderr.flush()
            except BrokenPipeError:  # `2>&1 | head -1`: stderr went with it
                _quiet_both()
            raise click.exceptions.Exit(1) from None

    def make_context(
        self, info_name: str | None, args: list[str], parent: click.Context | None = None, **extra: Any
    ) -> click.Context:
        """As click's, with `nexusmem --help | head -1` ending as invoke() ends a command."""
        try:
            return super().make_context(info_name, args, parent, **extra)
        except click.ClickException as exc:  # an unknown option or command: a usage error
            raise _said(exc) from None
        except BrokenPipeError:
            if not reader_gone():
                raise  # another pipe: click's own handling (exit 1)
            quiet_stdout()
            raise click.exceptions.Exit(0) from None

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        target = COMMANDS.get(cmd_name)
        if target is None:
            return None
        module, _, attr = target.partition(":")
        try:
            command = getattr(importlib.import_module(module), attr)
        except ImportError as exc:  # a command whose module is not part of this build
            raise click.ClickException(f"'{cmd_name}' is not available in this installation: {exc}") from exc
        assert isinstance(command, click.Command)
        return command

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        """Like click's, plus "did you mean" for a mistyped command name (difflib, no extra dependency)."""
        name = click.utils.make_str(args[0]) if args else ""
        if args and name not in COMMANDS and not name.startswith("-"):
            import difflib

            close = difflib.get_close_matches(name, list(COMMANDS), n=3, cutoff=0.6)
            if close:
                hint = " or ".join(f"'{c}'" for c in close)
                ctx.fail(f"No such command '{name}'. Did you mean {hint}?")
        return super().resolve_command(ctx, args)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = []
        for name in self.list_commands(ctx):
            try:
                command = self.get_command(ctx, name)
            except click.ClickException:
                continue
            if command is not None and not command.hidden:
                rows.append((name, command.get_short_help_str(limit=formatter.width - 30)))
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)


def _set_root(ctx: click.Context, param: click.Parameter, value: str | None) -> None:
    if value is not None:
        from nexusmem.paths import given_dir

        ctx.find_root().meta["nexusmem.root"] = given_dir(value)


def repo_option(func: F) -> F:
    """`-C PATH` on a sub-command (git-style `-C` before the command works too)."""
    return click.option(
        "-C",
        "repo",
        metavar="PATH",
        expose_value=False,
        callback=_set_root,
        is_eager=True,
        help="Run as if started in PATH.",
    )(func)


def root_of(ctx: click.Context) -> Path:
    value = ctx.find_root().meta.get("nexusmem.root")
    return Path(value) if value else Path.cwd()


@click.group(
    cls=LazyGroup,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
    epilog="""\b
Examples:
  nexusmem sync                      # set up (first time) and ingest this repository
  nexusmem query "why did we switch the cache to WAL"
  nexusmem -C ~/src/app status
""",
)
@click.version_option(VERSION_TEXT, "-V", "--version", prog_name="nexusmem", message="%(prog)s %(version)s")
@click.option(
    "-C",
    "repo",
    metavar="PATH",
    expose_value=False,
    callback=_set_root,
    is_eager=True,
    help="Run as if nexusmem was started in PATH (like git -C).",
)
@click.pass_context
def cli(ctx: click.Context) -> None:
    """NexusMem: what actually happened in this repository, ranked and token-budgeted for you or your agent.

    Records git commits and their per-file patches, project docs and (with the prompt hooks) shell
    commands with their exit codes into .nexusmem/memory.db. Nothing leaves the machine.
    """
    if ctx.invoked_subcommand not in (None, "doctor"):  # doctor reports loose modes; it does not fix them
        from nexusmem.paths import tighten_user_dir

        tighten_user_dir()
