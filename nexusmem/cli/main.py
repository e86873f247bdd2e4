"""Entry point. `--version` answers before click is even imported; commands load only when invoked.

Exit codes: 0 success, 1 an error the message explains (bad input, a damaged store, a full disk), 2 a usage
error (click), 3 an unexpected failure: one line on stderr, the traceback in a crash log (crashlog.py),
130 Ctrl-C.
"""

from __future__ import annotations

import gc
import os
import sys

INTERRUPTED = 130  # Ctrl-C: 128 + SIGINT, as a shell reports an interrupted command
ABORTED = "Aborted!"

# name -> "module:attribute"; modules are imported only when their command runs (fast start-up).
COMMANDS: dict[str, str] = {
    "init": "nexusmem.cli.core:init_cmd",
    "sync": "nexusmem.cli.core:sync_cmd",
    "query": "nexusmem.cli.core:query_cmd",
    "status": "nexusmem.cli.core:status_cmd",
    "projects": "nexusmem.cli.core:projects_cmd",
    "scan-git": "nexusmem.cli.scan:scan_git",
    "scan-diff": "nexusmem.cli.scan:scan_diff",
    "scan-docs": "nexusmem.cli.scan:scan_docs",
    "scan-shell": "nexusmem.cli.scan:scan_shell",
    "scan-conversation": "nexusmem.cli.scan:scan_conversation",
    "scan-atuin": "nexusmem.cli.scan:scan_atuin",
    "scan-github": "nexusmem.cli.scan:scan_github",
    "scan-structure": "nexusmem.cli.scan:scan_structure",
    "scan-session": "nexusmem.cli.scan:scan_session",
    "hook": "nexusmem.cli.hook:hook",
    "precheck": "nexusmem.cli.precheck:precheck_cmd",
    "mcp": "nexusmem.cli.mcp:mcp_cmd",
    "forget": "nexusmem.cli.hygiene:forget_cmd",
    "scrub": "nexusmem.cli.hygiene:scrub_cmd",
    "stale": "nexusmem.cli.hygiene:stale_cmd",
    "mark-stale": "nexusmem.cli.hygiene:mark_stale_cmd",
    "review": "nexusmem.cli.hygiene:review_cmd",
    "show": "nexusmem.cli.show:show_cmd",
    "doctor": "nexusmem.cli.maintain:doctor_cmd",
    "uninstall": "nexusmem.cli.maintain:uninstall_cmd",
    "trust": "nexusmem.cli.maintain:trust_cmd",
    "team": "nexusmem.cli.team:team_cmd",
}


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    if args in (["--version"], ["-V"]):
        from nexusmem import VERSION_TEXT

        try:
            sys.stdout.write(f"nexusmem {VERSION_TEXT}\n")
            sys.stdout.flush()
        except BrokenPipeError:  # `nexusmem --version | true`: no traceback, no exit 120 at the final flush
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return
    if not _cwd_exists():
        code = without_cwd(args)
        if code is not None:
            sys.exit(code)
    if os.environ.get("NEXUSMEM_HOME") and refuses_bad_home(args):
        from nexusmem.paths import user_dir_problem

        problem = user_dir_problem()
        if problem is not None:  # a configuration error: one line and exit 1, as an invalid config.json
            from nexusmem.cli.plain import error_text

            sys.stderr.write(f"Error: {error_text(problem)}\n")
            sys.exit(1)
    form = plain_form(args)
    collecting = gc.isenabled()
    if form is not None and form[0] == "precheck":
        # No cyclic garbage collection in the commit hook's process: a precheck allocates a few hundred
        # thousand short-lived objects (modules, rows, the hook log's tail) that reference counting frees;
        # the collector's 20-30 young-generation passes over them freed nothing and took 5-10 ms of every
        # cold precheck (2-core build machine). Turned back on after, for a caller running main() in-process.
        gc.disable()
    try:
        if form is not None:
            # The commit hook's, the agent's and the scripts' commands: their plain forms answer without
            # importing click (cli/plain.py); anything else (help, usage errors, rarer options) goes on to click.
            from nexusmem.cli import plain

            command, rest = form
            code = {"precheck": plain.precheck, "query": plain.query, "sync": plain.sync}[command](rest)
            if code is not None:
                sys.exit(code)
        from nexusmem.cli.app import cli

        cli.main(args=args, prog_name="nexusmem")
    except KeyboardInterrupt:  # Ctrl-C outside a command's body (while click starts up or winds down)
        sys.stderr.write(f"\n{ABORTED}\n")
        sys.exit(INTERRUPTED)
    except BrokenPipeError:
        # A reader that closed the pipe where nothing above caught it (cli/app.py ends the commands, their
        # usage errors and help with their own codes): no crash, no traceback in crash.log, the streams
        # silenced so that the final flush cannot raise again.
        from nexusmem.cli.plain import quiet_stdout

        quiet_stdout()
        quiet_stdout(sys.stderr)
        sys.exit(1)
    except Exception:  # a bug, not bad input (click handles its own errors inside main)
        from nexusmem.crashlog import report

        sys.exit(report(args))
    finally:
        if collecting:
            gc.enable()


PLAIN_COMMANDS = ("precheck", "query", "sync")


def _cwd_exists() -> bool:
    try:
        os.getcwd()
    except FileNotFoundError:  # the folder this process started in was deleted (or moved away) since
        return False
    return True


def without_cwd(args: list[str]) -> int | None:
    """The exit code of `nexusmem ARGS` run in a folder that no longer exists, None to go on: with an absolute
    `-C PATH` (run there, as git does), for help and for `hook print`. The commands the hooks run (precheck, `sync --auto`)
    have nothing to do and say nothing (exit 0); any other says so in one line (exit 1), as git's "Unable to
    read current working directory", where it ended in an internal error."""
    at = 0
    where = None
    while at < len(args) and args[at].startswith("-C"):  # `-C PATH` (or `-CPATH`) before the command
        where = args[at + 1] if args[at] == "-C" and at + 1 < len(args) else args[at][2:]
        at += 2 if args[at] == "-C" else 1
    words = args[at:]
    options = words[: words.index("--")] if "--" in words else words
    if where and os.path.isabs(where):
        from nexusmem.paths import given_dir

        try:
            os.chdir(given_dir(where))
        except OSError:
            return None  # the command names the folder and why it cannot be used
        return None
    if not words or {"--help", "-h", "--version", "-V"} & set(options) or words[:2] == ["hook", "print"]:
        return None  # none of them reads the folder (`hook print` runs in a shell's rc file)
    if words[0] == "precheck" or (words[0] == "sync" and "--auto" in options):
        return 0
    if words[0] in ("mcp", "projects", "doctor") or words[:2] == ["hook", "status"]:
        # What serves or checks the whole machine runs from the filesystem's root (never the home, which
        # may be a repository): an agent started here still gets its tools (each takes projectRoot).
        os.chdir("/")
        return None
    sys.stderr.write(
        "Error: the current folder no longer exists (deleted, or moved away): cd into the repository, or name"
        " it with -C PATH\n"
    )
    return 1


def refuses_bad_home(args: list[str]) -> bool:
    """Whether `nexusmem ARGS` stops at an unusable $NEXUSMEM_HOME (paths.user_dir_problem). The commands the
    hooks run never do (precheck at every commit, `sync --auto` after it, `hook print` from an rc file): they
    go on with the default folder, as the prompt hooks do, and never fail or spam a commit or a prompt. Nor
    do `doctor`, which reports it, and help."""
    at = 0
    while at < len(args) and args[at].startswith("-C"):  # `-C PATH` (or `-CPATH`) before the command
        at += 2 if args[at] == "-C" else 1
    words = args[at:]
    options = words[: words.index("--")] if "--" in words else words
    if not words or {"--help", "-h", "--version", "-V"} & set(options) or words[0] in ("precheck", "doctor"):
        return False
    return not ((words[0] == "sync" and "--auto" in options) or words[:2] == ["hook", "print"])


def plain_form(args: list[str]) -> tuple[str, list[str]] | None:
    """(command, its arguments) when ARGS may be one that cli/plain.py answers: `COMMAND ...`, or git-style
    `-C PATH COMMAND ...`, which means `COMMAND -C PATH ...` (click reads both alike). None: click's."""
    if args[:1] and args[0] in PLAIN_COMMANDS:
        return args[0], args[1:]
    if len(args) >= 3 and args[0] == "-C" and args[2] in PLAIN_COMMANDS and "-C" not in args[3:]:
        return args[2], ["-C", args[1], *args[3:]]
    return None
