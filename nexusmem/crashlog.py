"""An unexpected exception: one line for the user (the CLI's exit code 3, an MCP tool error), the traceback
in a private crash log.

A traceback on the terminal helps nobody who is not debugging NexusMem, and it may print what the failing
record held. The log keeps the newest reports (CRASH_LOG_CAP bytes), 0600 in a 0700 directory.
"""

from __future__ import annotations

import os
import sys
import time
import traceback
from pathlib import Path

EXIT_CRASH = 3
CRASH_LOG_NAME = "crash.log"
CRASH_LOG_CAP = 256 * 1024


def crash_log_path() -> Path:
    from nexusmem import paths

    return paths.user_dir() / CRASH_LOG_NAME


def _append(path: Path, text: str) -> None:
    if not path.parent.is_dir():
        from nexusmem import private

        private.refuse_root_in_anothers(path.parent)  # root in another user's HOME: no crash log there
        private.make_parents(path)  # 0700 each, whatever the umask
    try:
        if path.stat().st_size > CRASH_LOG_CAP:
            path.unlink()  # the newest report matters; older ones were read or are stale
    except FileNotFoundError:
        pass
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o600)
    try:
        if hasattr(os, "fchmod"):  # an existing log created under another umask
            os.fchmod(fd, 0o600)
        os.write(fd, text.encode("utf-8", "backslashreplace"))
    finally:
        os.close(fd)


def _redacted(text: str) -> str:
    """TEXT with secrets replaced, as everything NexusMem keeps: an exception's message can quote the input
    (an argument, a config value, a log line), and the log is meant to be attached to a bug report."""
    try:
        from nexusmem.redact import redact

        return redact(text)
    except Exception:  # redaction itself failed: keep the traceback's shape, none of its values
        return "\n".join(line.split(":", 1)[0] for line in text.splitlines())


def report(args: list[str]) -> int:
    """Write the current exception to the crash log, print one line, return the exit code (3)."""
    sys.stderr.write(f"nexusmem: {record(args[0] if args else '')}\n")
    return EXIT_CRASH


def record(command: str, exc: BaseException | None = None) -> str:
    """Append EXC (the exception being handled, if None) with its traceback to the crash log, as COMMAND's;
    return the line that says so: "internal error (Type: first line of the message); details in PATH"."""
    from nexusmem import __version__

    if exc is None:
        exc = sys.exc_info()[1]
    name = type(exc).__name__
    # The message may hold input (a command line, a path); the terminal gets its first line, escaped.
    first = _redacted(str(exc).splitlines()[0])[:200] if str(exc) else ""
    first = first.encode("ascii", "backslashreplace").decode("ascii")
    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    shown = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__)) if exc else ""
    entry = (
        f"--- {stamp} nexusmem {__version__} (python {sys.version.split()[0]}, {sys.platform}) "
        f"command {command!r}\n{_redacted(shown)}\n"
    )
    try:
        path = crash_log_path()
        _append(path, entry)
        where = f"details in {path} (please include them in a bug report)"
    except OSError as err:
        where = f"could not write the crash log ({err.strerror or err})"
    except Exception as err:  # refused (root in another user's HOME): said, never a second crash
        where = f"no crash log written ({err})"
    return f"internal error ({name}: {first}); {where}"
