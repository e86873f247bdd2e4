"""What every command shares: turning library errors into click errors, JSON output, progress."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

import click

from nexusmem.cli.plain import ENVIRONMENT_ERRNOS, error_text
from nexusmem.cli.progress import UNITS as UNITS
from nexusmem.cli.progress import Progress as Progress
from nexusmem.errors import NexusMemError, UsageError
from nexusmem.terminal import json_text, terminal_safe

F = TypeVar("F", bound=Callable[..., Any])


class _Unusable(click.ClickException):
    """`Error: <message>` and exit 2: a value on the command line that cannot be used (errors.UsageError)."""

    exit_code = 2


def library_errors(func: F) -> F:
    """A NexusMemError becomes `Error: <message>` and exit 1, and so does an OSError the environment
    caused (read-only or full disk, permissions), naming the file. Anything else is a bug: main() turns
    it into one line, a crash log and exit 3."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except UsageError as exc:
            # exit 2, as for what click's parser rejects; said as the plain path says it
            raise _Unusable(error_text(str(exc))) from exc
        except NexusMemError as exc:
            raise click.ClickException(error_text(str(exc))) from exc
        except OSError as exc:
            if exc.errno not in ENVIRONMENT_ERRNOS:
                raise
            where = f"{exc.filename}: " if exc.filename else ""
            raise click.ClickException(error_text(f"{where}{exc.strerror or exc}")) from exc

    return wrapper  # type: ignore[return-value]


def echo_human(text: str, *, err: bool = False) -> None:
    """click.echo for text made from stored or scanned data (titles, commands, messages, paths)."""
    click.echo(terminal_safe(text), err=err)


def echo_line(text: str, *, err: bool = False) -> None:
    """echo_human for one line that names a folder or a file: a newline or a tab in it is spelled `\\n`,
    `\\t` (text.one_line), so a repository folder named with one is not printed over two lines."""
    from nexusmem.text import one_line

    echo_human(one_line(text), err=err)


def echo_json(data: Any) -> None:
    """DATA as `--json` prints it: valid UTF-8 whatever it holds (terminal.json_text)."""
    click.echo(json_text(data))
