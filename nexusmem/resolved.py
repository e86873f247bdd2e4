"""Was this failure resolved? One rule for `precheck` ("never seen passing") and the failure → fix linker.

A failed shell command is resolved by the first *later* success of the same command — the text with runs of
whitespace collapsed and the ends trimmed — in the same working directory. "Later" is strict: a success
logged in the failure's own millisecond is not its retry. The linker also bounds how much later (24 h: a
pass three days on says little about what fixed it); precheck takes any later pass (the file is no longer
known to break that command). Commands without a directory or an exit status (scraped from a history file)
neither fail nor resolve, nor does a command the person stopped (STOPPED): a watcher ended with Ctrl-C or
an editor suspended with Ctrl-Z did not fail.

Standard library only: precheck imports this on every commit.
"""

from __future__ import annotations

from collections.abc import Iterable

DAY_MS = 86_400_000
# How much later a success may come and still count as the failure's retry (the linker's window).
RETRY_WINDOW_MS = DAY_MS

# The statuses a shell gives a command the person stopped from the keyboard: Ctrl-C (SIGINT, 128 + 2),
# Ctrl-\ (SIGQUIT, 128 + 3), Ctrl-Z (SIGTSTP, 128 + 20). Kept as recorded; they neither fail nor resolve.
STOPPED = frozenset({130, 131, 148})

# (node id, ts ms, command, cwd, exit status), in time order.
Command = tuple[str, int, str, str | None, int | None]


def failed(exit_code: int | None) -> bool:
    """Whether a command with this status failed: not 0, known, and not stopped by the person."""
    return exit_code is not None and exit_code != 0 and exit_code not in STOPPED


def normalise(command: str, cwd: str | None = None) -> str:
    """The command with runs of whitespace collapsed to one space and the ends trimmed; and, when CWD (the
    folder recorded with it) is where its leading `cd DIR && ` (repeated) lead, without them: a prompt hook
    records the folder a command ended in, so `cd services/api && make test` recorded in services/api ran
    `make test` there, as its retry `make test` does. A `cd` that failed (the folder unchanged), one a
    source recorded where it started (atuin), `cd ..`, `cd -` or an absolute folder: kept as typed."""
    text = " ".join(command.split())
    if cwd is None or not text.startswith("cd "):
        return text
    went: list[str] = []
    rest = text
    while rest.startswith("cd "):
        at = rest.find(" && ")
        target = rest[3:at] if at > 3 else ""
        if (
            len(target) > 1
            and target[0] == target[-1]
            and target[0] in "'\""
            and target.count(target[0]) == 2
        ):
            target = target[1:-1]
        elif " " in target or any(c in target for c in ";|&`$()<>"):
            break
        parts = [p for p in target.split("/") if p and p != "."]
        if not parts or target.startswith(("/", "~", "-")) or ".." in parts:
            break
        went += parts
        rest = rest[at + 4 :]
    where = "/".join(went)
    label = cwd.rstrip("/")
    return rest if where and (label == where or label.endswith("/" + where)) else text


def retries(
    commands: Iterable[Command],
    *,
    within_ms: int | None = RETRY_WINDOW_MS,
    normalised: dict[tuple[str, str], str] | None = None,
) -> tuple[list[Command], dict[str, tuple[str, int]]]:
    """The failures among COMMANDS (oldest first) and, per failure id, its resolving success (id, ts).

    COMMANDS must come in time order. A success within WITHIN_MS of a failure (None: any time later)
    resolves it. One sweep: a success releases every failure of the same (text, cwd) still waiting, since it
    is the first success after each of them; those it is too late for stay unresolved for good.
    NORMALISED ((command, cwd) -> normalise(command, cwd)) is kept for a caller's next sweep over the same
    commands.
    """
    failures: list[Command] = []
    resolved: dict[str, tuple[str, int]] = {}
    waiting: dict[tuple[str, str], list[Command]] = {}
    if normalised is None:
        normalised = {}  # a real log repeats a few hundred commands thousands of times
    for row in commands:
        node_id, ts, command, cwd, exit_code = row
        if cwd is None or exit_code is None or exit_code in STOPPED:
            continue
        text = normalised.get((command, cwd))
        if text is None:
            text = normalised[(command, cwd)] = normalise(command, cwd)
        key = (text, cwd)
        if exit_code != 0:
            failures.append(row)
            waiting.setdefault(key, []).append(row)
            continue
        pending = waiting.pop(key, None)
        if not pending:
            continue
        for failure in pending:
            if ts == failure[1]:
                waiting.setdefault(key, []).append(failure)  # same millisecond is not "later": keep waiting
            elif within_ms is None or ts - failure[1] <= within_ms:
                resolved[failure[0]] = (node_id, ts)
    return failures, resolved
