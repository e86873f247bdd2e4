"""`nexusmem precheck`, `query` and `sync` without click: the commit hook's, the agent's and the scripts' paths.

The pre-commit hook runs `nexusmem precheck [--strict]` (or `precheck --files -- PATH...` from the pre-commit
framework) on every commit. Importing click (with `inspect`, `uuid`, `platform` and `datetime` behind it)
was about a third of a cold precheck on the 2-core build machine, and ~50 ms of a cold `nexusmem query` or
of a `nexusmem sync` with nothing to do.
main() hands the plain forms here; anything these parsers do not know (--help, a mistyped option, --files
with --working, query's --team/--all-projects/--author, an empty question, a directory whose repository
only git can name, sync's --auto/--source/--wait/--prune-source) goes to the click commands in
cli/precheck.py and cli/core.py, which own the help text and the usage errors. Both paths print through
report(), answer() and run_sync().
"""

from __future__ import annotations

import errno
import sys
from pathlib import Path

from nexusmem.cli.main import ABORTED, INTERRUPTED
from nexusmem.paths import given_dir
from nexusmem.terminal import json_text, terminal_safe

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (~4 ms of a cold precheck)
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import IO, TypeVar

    from nexusmem.cli.progress import Progress
    from nexusmem.precheck import Finding, PrecheckResult
    from nexusmem.project import Project
    from nexusmem.store import Store

    T = TypeVar("T")

# What the environment refuses rather than what NexusMem got wrong: a one-line error, not a crash report.
ENVIRONMENT_ERRNOS = frozenset(
    {errno.EROFS, errno.EACCES, errno.EPERM, errno.ENOSPC, errno.EDQUOT, errno.EFBIG}
)

_FLAGS = {"--strict": "strict", "--json": "as_json", "--working": "working", "--files": "explicit"}


def _say(text: str) -> None:
    try:
        sys.stderr.write(terminal_safe(text) + "\n")
        sys.stderr.flush()
    except BrokenPipeError:  # `precheck 2>&1 | head -1`: the rest goes unsaid, the exit code still tells
        quiet_stdout(sys.stderr)


def error_text(message: str) -> str:
    """MESSAGE for its `Error:` line, as echo_line prints a line naming a folder: a newline or a tab in a
    folder's name spelled `\\n`, `\\t` (text.one_line), so that the error stays one line."""
    from nexusmem.text import one_line

    return terminal_safe(one_line(message))


def report(result: PrecheckResult, *, strict: bool, as_json: bool) -> int:
    """Print RESULT (JSON on stdout, warnings on stderr); the exit code: 1 only for --strict with findings."""
    for warning in result.warnings:
        _say(f"nexusmem: warning: {warning}")
    for missing in result.not_found:  # a file given that is not there: not checked
        _say(f"nexusmem precheck: {missing}")
    if as_json:
        try:
            sys.stdout.write(json_text(result.to_json()) + "\n")
            sys.stdout.flush()
        except BrokenPipeError:  # `precheck --json | head -1`: the exit code still says what it found
            quiet_stdout()
    if not result.checked:
        note = result.reason or "nothing checked"
        if result.nothing_given and strict:
            # A CI step that checks no file must not pass as one that found nothing (the team store's
            # outage is different: it leaves the job green, said so).
            _say(f"nexusmem precheck: {note} (--strict: refused; give the files to check)")
            return NOTHING_GIVEN_EXIT
        _say(f"nexusmem precheck: {note}" + (" (--strict: nothing was checked)" if strict else ""))
        return 0
    if not as_json:
        shown = _shown(result.findings)
        for at in shown:
            _say(result.findings[at].message)
        hidden = [f for at, f in enumerate(result.findings) if at not in shown]
        if hidden:
            churn = sum(f.kind == "churn" for f in hidden)
            parts = [f"{len(hidden) - churn:,} failed command(s)"] if len(hidden) > churn else []
            parts += [f"{churn:,} high churn"] if churn else []
            _say(
                f"nexusmem precheck: … and {len(hidden):,} more ({', '.join(parts)}):"
                " `nexusmem precheck --json` lists them all"
            )
        for note in result.notes:  # what the counts left out (a reset since the last sync)
            _say(f"nexusmem precheck: {note}")
        if result.findings:
            advice = (
                ("commit refused (--strict)" if in_a_commit() else "--strict: exit 1")
                if strict
                else "advisory only"
            )
            _say(
                f"nexusmem precheck: {len(result.findings)} warning(s) for {_files_warned(result)} ({advice})"
            )
    return refusal_code() if strict and result.findings else 0


def _files_warned(result: PrecheckResult) -> str:
    """How many files have warnings, of how many checked when not all of them: `1 of 2 file(s)`."""
    warned = len({f.path for f in result.findings})
    checked = len(result.files)
    return f"{warned} file(s)" if warned >= checked else f"{warned} of {checked} file(s)"


# `precheck --strict --files` given no file: as a usage error, not a refusal for what was found.
NOTHING_GIVEN_EXIT = 2

# A commit of 2,000 high-churn files printed 2,001 lines on every commit: past this many findings, the
# human output shows this many (failures before churn) and counts the rest in one line; --json has them all.
SHOWN_FINDINGS = 20
_KIND_ORDER = {"failure": 0, "importer_failure": 1}  # then churn


def _shown(findings: list[Finding]) -> dict[int, None]:
    """The indexes of the findings printed, in order: all of them, or SHOWN_FINDINGS picked failures first
    (printed in their own order, by file)."""
    if len(findings) <= SHOWN_FINDINGS:
        return dict.fromkeys(range(len(findings)))
    ranked = sorted(range(len(findings)), key=lambda i: (_KIND_ORDER.get(findings[i].kind, 2), i))
    return dict.fromkeys(sorted(ranked[:SHOWN_FINDINGS]))


def in_a_commit() -> bool:
    """Whether precheck runs inside a commit's hook (git gives every commit hook GIT_INDEX_FILE, and the
    pre-commit framework's hooks inherit it): only there does --strict refuse a commit."""
    import os

    return bool(os.environ.get("GIT_INDEX_FILE"))


def refusal_code() -> int:
    """The exit code of a --strict refusal: 1, or the one the pre-commit hook asks for in NEXUSMEM_REFUSE_EXIT
    (so that a nexusmem that cannot start, exiting 1 from Python itself, is never taken for a refusal)."""
    import os

    asked = os.environ.get("NEXUSMEM_REFUSE_EXIT", "")
    return int(asked) if asked.isdigit() and 1 <= int(asked) <= 125 else 1


def precheck(args: list[str]) -> int | None:
    """Run `precheck ARGS` and return its exit code, or None when ARGS need click (help, an unknown option,
    a usage error)."""
    opts = dict.fromkeys(_FLAGS.values(), False)
    where: str | None = None
    paths: list[str] = []
    rest = iter(args)
    for arg in rest:
        if arg == "--":
            paths.extend(rest)
        elif arg in _FLAGS:
            opts[_FLAGS[arg]] = True
        elif arg == "-C":
            where = next(rest, None)
            if where is None:
                return None
        elif arg.startswith("-") and arg != "-":
            return None
        else:
            paths.append(arg)
    explicit = opts["explicit"] or bool(paths)  # `precheck a.py b.py` means those files
    if explicit and opts["working"]:
        return None  # click says why
    from nexusmem import precheck as library

    def body() -> PrecheckResult:
        return library.run(
            Path(given_dir(where)) if where else Path.cwd(),
            files=paths if explicit else None,
            working=opts["working"],
        )

    result = _errors_said(body)
    if isinstance(result, int):
        return result
    return report(result, strict=opts["strict"], as_json=opts["as_json"])


# query's options that take a value and that this parser answers; every other option goes to click.
_QUERY_VALUES = ("--budget", "--since", "--until", "--as-of", "-C")
_MIN_BUDGET, _MAX_BUDGET = 50, 100_000  # click.IntRange(50, 100000) on the click command


def answer(
    proj: Project,
    question: str,
    *,
    budget: int | None,
    as_json: bool,
    as_of: str | None,
    window: tuple[int | None, int | None],
    author: str | None = None,
) -> None:
    """Answer QUESTION from PROJ's memory and print it (JSON on stdout, or the packed text): the one body of
    a local `query`, on the plain path and the click path alike. Commands the hooks logged since the
    memory's last sync (the `pytest` just run) are not searched: a note says how many, and how to add them."""
    from nexusmem.retrieve import answer, query, rank
    from nexusmem.retrieve.pack import estimate_tokens

    limit = budget if budget is not None else int(proj.config["query"]["budget"])
    cutoff = query.parse_as_of(as_of)
    hook_note = None
    if author == "me":  # none of your commands can be found without a prompt hook: say so
        from nexusmem.install.shell_hooks import own_commands_note

        hook_note = own_commands_note(author)
    with proj.open_store(readonly=True, note=store_note) as store:
        unsynced = _unsynced_note(proj, store)
        # The notes are lines of the header: their tokens come out of the budget like the header's.
        note_tokens = sum(estimate_tokens(f"note: {n}\n") for n in (unsynced, hook_note) if n)
        result = query.run(
            store,
            question,
            project=proj.root.name,
            budget=max(limit - note_tokens, 1),
            as_of=cutoff,
            since=window[0],
            until=window[1],
            settings=rank.settings_from(proj.config),
            author=author,
            root=proj.root,
        )
    if unsynced:
        answer.add_note(result, unsynced, limit)
    if hook_note and not any(item.kind == "shell_command" for item in result.items):
        answer.add_note(result, hook_note, limit)
    if as_json:
        text = json_text(answer.to_json(result))
    else:
        text = terminal_safe(answer.render(result))
    sys.stdout.write(text + "\n")
    sys.stdout.flush()
    if not as_json:
        notes_left_out(result.notes, text)


def _unsynced_note(proj: Project, store: Store) -> str | None:
    """A note for the answer when the hooks logged commands here since PROJ's memory's (STORE's) last sync:
    they are not searched (catchup.unsynced_commands). MCP search_memory stores them first; here that would
    cost a cold query ~100 ms more than its ~150 ms (benchmarks/bench_cold.py), so the user is told instead.
    None when there are none, or the log cannot be read."""
    from nexusmem.catchup import unsynced_commands, unsynced_note
    from nexusmem.errors import NexusMemError

    try:
        count = unsynced_commands(proj, store)
    except (NexusMemError, OSError):  # the memory as it is answers, as it did
        return None
    return unsynced_note(count)


def store_note(message: str) -> None:
    """MESSAGE (what opening the store met: a lock, by whom and how long a command waits for it; a full
    disk) as a note on stderr, on one line."""
    from nexusmem.text import one_line

    _say(f"nexusmem: note: {one_line(message)}")


def notes_left_out(notes: list[str], text: str) -> None:
    """The NOTES a small budget left out of the answer TEXT (the header gives them up last, but gives them
    up: "HEAD moved", a killed sync), on stderr, where they cost the answer nothing; --json keeps them all."""
    for note in notes:
        if note and terminal_safe(note) not in text:
            sys.stderr.write(f"nexusmem: note: {terminal_safe(note)}\n")


def _utf8_stdout() -> bool:
    """Whether stdout takes any text as it is (click re-wraps a misconfigured, e.g. ASCII, stream)."""
    encoding = (getattr(sys.stdout, "encoding", None) or "").lower().replace("_", "-")
    return encoding in ("utf-8", "utf8")


def stdin_question(question: str) -> str:
    """QUESTION, or when it is `-`, what stdin holds: a pasted log longer than a command line may be
    (`... | nexusmem query -`), read as UTF-8 (bytes that are not become U+FFFD)."""
    if question != "-":
        return question
    return sys.stdin.buffer.read().decode("utf-8", "replace").strip()


def query(args: list[str]) -> int | None:
    """Run `query ARGS` and return its exit code, or None when ARGS need click (help, an option this parser
    does not answer, a usage error, a directory whose repository only git can name)."""
    if not _utf8_stdout():
        return None
    values: dict[str, str] = {}
    as_json = False
    words: list[str] = []
    rest = iter(args)
    for arg in rest:
        name, eq, inline = arg.partition("=")
        if arg == "--":
            words.extend(rest)
        elif arg == "--json":
            as_json = True
        elif name in _QUERY_VALUES and (name == arg or (eq and name.startswith("--"))):
            value = inline if eq else next(rest, None)
            if value is None or name in values:
                return None
            values[name] = value
        elif arg.startswith("-") and arg != "-":
            return None
        else:
            words.append(arg)
    question = stdin_question(" ".join(words).strip())
    budget: int | None = None
    if "--budget" in values:
        try:
            budget = int(values["--budget"])
        except ValueError:
            return None
        if not _MIN_BUDGET <= budget <= _MAX_BUDGET:
            return None
    if not question:
        return None
    from nexusmem.paths import tighten_user_dir
    from nexusmem.project import find
    from nexusmem.retrieve.timecue import window

    def body() -> int | None:
        span = window(values.get("--since"), values.get("--until"))
        tighten_user_dir()  # as every command that opens it does (the click path: cli/app.py)
        proj = find(Path(given_dir(values.get("-C") or ".")))
        if proj is None:
            return None  # click's command says what is wrong, asking git
        answer(proj, question, budget=budget, as_json=as_json, as_of=values.get("--as-of"), window=span)
        return 0

    return _guarded(body)


def _errors_said(body: Callable[[], T]) -> T | int:
    """BODY's value, or 1 after one `Error:` line for a NexusMemError or an environment OSError (disk full,
    permission), as the click commands say them. Any other OSError (a closed pipe among them) goes on."""
    from nexusmem.errors import NexusMemError, UsageError

    try:
        return body()
    except NexusMemError as exc:
        _say(f"Error: {error_text(str(exc))}")
        return 2 if isinstance(exc, UsageError) else 1
    except OSError as exc:
        if exc.errno not in ENVIRONMENT_ERRNOS:
            raise
        where = f"{exc.filename}: " if exc.filename else ""
        _say(f"Error: {error_text(f'{where}{exc.strerror or exc}')}")
        return 1


def _guarded(body: Callable[[], int | None]) -> int | None:
    """Run a plain command's BODY and end it as its click command would: errors as `_errors_said` says
    them, Ctrl-C as "Aborted!" with exit 130, a reader that stopped reading (`nexusmem query ... | head -1`)
    quietly with exit 0 (reader_gone; another closed pipe quietly with 1); never a traceback."""
    try:
        return _errors_said(body)
    except KeyboardInterrupt:
        _aborted()
        return INTERRUPTED
    except BrokenPipeError:
        done = reader_gone()
        quiet_stdout()
        return 0 if done else 1


def reader_gone() -> bool:
    """Whether stdout is a pipe whose reader has closed it (`nexusmem stale | head -1`, once head has its
    line): a BrokenPipeError is then the reader having had enough, no failure, whether the output went in one
    write or many. False where that cannot be told (no poll: Windows; stdout not a file)."""
    try:
        import select

        poller = select.poll()
        poller.register(sys.stdout.fileno(), select.POLLOUT)
        return any(events & select.POLLERR for _fd, events in poller.poll(0))
    except (AttributeError, OSError, ValueError):
        return False


def _aborted() -> None:
    """Ctrl-C, said as the click commands say it (an empty line, then "Aborted!")."""
    sys.stderr.write(f"\n{ABORTED}\n")
    sys.stderr.flush()


def quiet_stdout(stream: IO[str] | None = None) -> None:
    """Point stdout (or STREAM) at /dev/null so that the interpreter's final flush cannot raise again."""
    import contextlib
    import os

    with contextlib.suppress(OSError, ValueError, AttributeError):
        os.dup2(os.open(os.devnull, os.O_WRONLY), (stream or sys.stdout).fileno())


def _out(text: str) -> None:
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


def _timed(progress: Progress) -> Callable[[str], None]:
    """`sync --verbose`'s sink: each phase's timing line as it ends, on stderr, clear of the progress bar."""

    def say(line: str) -> None:
        progress.finish()
        _say(line)

    return say


def run_sync(
    root: Path,
    *,
    quiet: bool,
    as_json: bool,
    verbose: bool,
    rebuild: bool = False,
    only: list[str] | None = None,
    link_failures: bool = False,
    embed: bool = True,
    wait: float = 600.0,
    enable: list[str] | None = None,
    ignore_stash: bool = False,
) -> None:
    """Sync ROOT's memory and print the summary: the one body of `sync`, on the plain and the click path."""
    from nexusmem import sync
    from nexusmem.cli.progress import Progress
    from nexusmem.sources.base import _no_progress

    progress = Progress(enabled=not quiet and not as_json)
    try:
        summary = sync.sync(
            root,
            rebuild=rebuild,
            only=only or None,
            # Not a terminal (hooks, pipes): no callback at all, so the sources skip work done only for it
            # (the git phase's `rev-list --count` for its total).
            progress=progress if progress.enabled else _no_progress,
            log=None if quiet else _say,
            link_failures=link_failures,
            embed=embed,
            wait=wait,
            enable=enable or None,
            timing=_timed(progress) if verbose else None,
            ignore_stash=ignore_stash,
        )
    finally:
        progress.finish()
    if as_json:
        _out(json_text(summary.to_json()))
        return
    if quiet:
        return
    for part in summary.sources:
        if part.problems:  # where the bad records were (the JSON has them under sources[].problems)
            shown = "; ".join(part.problems[:3])
            _say(f"{part.name}: skipped {len(part.problems)} bad record(s): {shown}")
            if len(part.problems) > 3:
                _say(f"{part.name}: `nexusmem status` lists the others")
    _out(terminal_safe(summary.describe()))


_SYNC_FLAGS = {
    "-q": "quiet",
    "--quiet": "quiet",
    "--json": "as_json",
    "-v": "verbose",
    "--verbose": "verbose",
    "--no-embed": "no_embed",
    "--rebuild": "rebuild",
    "--link-failures": "link_failures",
    "--conversation": "conversation",
    "--github": "github",
}


def sync(args: list[str]) -> int | None:
    """Run `sync ARGS` and return its exit code, or None when ARGS need click (help, --auto, --source,
    --wait, --prune-source, an unknown option or argument)."""
    if not _utf8_stdout():
        return None
    opts = dict.fromkeys(_SYNC_FLAGS.values(), False)
    where: str | None = None
    rest = iter(args)
    for arg in rest:
        if arg in _SYNC_FLAGS:
            opts[_SYNC_FLAGS[arg]] = True
        elif arg == "-C" and where is None:
            where = next(rest, None)
            if where is None:
                return None
        else:
            return None
    enable = [name for name in ("conversation", "github") if opts[name]]

    def body() -> int:
        run_sync(
            Path(given_dir(where)) if where else Path.cwd(),
            quiet=opts["quiet"],
            as_json=opts["as_json"],
            verbose=opts["verbose"],
            rebuild=opts["rebuild"],
            link_failures=opts["link_failures"],
            embed=not opts["no_embed"],
            enable=enable,
        )
        return 0

    return _guarded(body)
