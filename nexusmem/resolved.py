"""Was this failure resolved? One rule for `precheck` ("never seen passing") and the failure → fix linker.

A failed shell command is resolved by the first *later* success of the same command — the text with runs of
whitespace collapsed and the ends trimmed, without an `&& echo …` (the line's status is then the command's:
not a `; echo …`, whose is echo's), the filters that read all its output (`| tee log`, `| tail -20`,
`| cat`) and its output redirections (`2>&1`, `> log`) at its end (see :func:`normalise`) —
in the same working directory; a failed line naming a pytest node id (`pytest -q "tests/test_x.py::test_y"`)
is also resolved by the same line with the node id's file instead (`pytest -q tests/test_x.py`: the whole
file passing covers the test; :func:`whole_files`). "Later" is strict: a success
logged in the failure's own millisecond is not its retry. The linker also bounds how much later (24 h: a
pass three days on says little about what fixed it); precheck takes any later pass (the file is no longer
known to break that command). Commands without a directory or an exit status (scraped from a history file)
neither fail nor resolve, nor does a command the person stopped (STOPPED): a watcher ended with Ctrl-C or
an editor suspended with Ctrl-Z did not fail.

Standard library only: precheck imports this on every commit (sources.shell.launchers, which loads `re`
alone, is imported only for a command that starts with a launcher: `nice -n 10 pytest x` is compared as
`pytest x`, what only launches it left out, what changes the run kept: `FOO=1`, `env -i`).
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


# Filters that read all their input and change nothing about whether the command before them passes: the
# hook stores such a line with that command's status (agentcmd.pipeline_status), so `pytest 2>&1 | tee log`
# failing is `pytest` failing. `head` and pagers stop reading early (the status they leave says nothing).
_READ_ALL = frozenset({"tail", "tee", "cat"})
# What makes a word more than a plain word (a file name, an option): quoting, expansion, another operator.
_NOT_PLAIN = frozenset("'\"`$\\;&|()<>{}")


def _plain(word: str) -> bool:
    return _NOT_PLAIN.isdisjoint(word)


# Output redirections, as a word of their own before the file (`> log`) or joined to it (`>log`).
_REDIRECTS = (">>", "1>>", "2>>", "&>>", ">|", ">", "1>", "2>", "&>")  # the longer of two prefixes first


def _redirection_start(words: list[str], end: int) -> int:
    """Where the output redirection ending at WORDS[END - 1] starts (`2>&1`, `>log`, `2>> log`, `&> log`),
    or END when there is none."""
    last = words[end - 1]
    if last in ("2>&1", ">&2", "1>&2"):
        return end - 1
    for op in _REDIRECTS:
        if last.startswith(op) and len(last) > len(op):
            return end - 1 if _plain(last[len(op) :]) else end
    if end >= 2 and words[end - 2] in _REDIRECTS and _plain(last):
        return end - 2
    return end


def _unquoted(text: str) -> tuple[str, list[int]] | None:
    """TEXT with what its quotes hold (and each backslash-escaped character) left out, the quotes kept, and
    where each character kept is in TEXT; None when a quote is not closed."""
    kept: list[str] = []
    where: list[int] = []
    quote = ""
    at = 0
    while at < len(text):
        char = text[at]
        if char == "\\" and quote != "'":
            at += 2  # an escaped character (in single quotes a backslash is itself)
            continue
        if quote and char != quote:
            at += 1  # what the quotes hold
            continue
        if char in "'\"":
            quote = "" if quote else char
        kept.append(char)
        where.append(at)
        at += 1
    return None if quote else ("".join(kept), where)


# What an `echo` after `&&` may hold, out of quotes, and still be only an echo: no other command, no
# redirection (a write that fails would be the line's status), no expansion that runs a command.
_NOT_ECHO = frozenset(";&|<>()`")


def _without_echo(text: str) -> str:
    """TEXT (whitespace collapsed) without the `&& echo …` at its end (each of them): the shell records the
    line's status, which is the command's before it (echo runs only after that passed, and does not fail),
    so `pytest -q x && echo ok` passes and fails as `pytest -q x` does. Kept when a pipe comes before it
    (the recorded pipestatus is echo's: `pytest | tee log && echo ok` passes whatever pytest did, as the
    hook's pipeline_status no longer sees pytest's status), and a `; echo rc=$?` always is: that line
    records echo's status, 0 after a failure too, so it is no pass of the command before it."""
    while " && echo" in text and "$(" not in text and "`" not in text:
        found = _echo_after(text, "&&")
        if found is None:
            return text
        bare, cut = found
        if "|" in bare[: bare.rfind("&&")] or "<<" in bare[: bare.rfind("&&")]:
            return text
        text = cut
    return text


def _echo_after(text: str, separator: str) -> tuple[str, str] | None:
    """(TEXT with its quotes' contents left out, TEXT up to its last SEPARATOR) when an echo and nothing more
    (_NOT_ECHO) follows that separator, outside quotes; None otherwise, or when a quote is not closed."""
    scanned = _unquoted(text)
    if scanned is None:
        return None
    bare, where = scanned
    at = bare.rfind(separator)
    tail = bare[at + len(separator) :].strip()
    if at <= 0 or tail.split(" ", 1)[0] != "echo" or not _NOT_ECHO.isdisjoint(tail):
        return None
    return bare, text[: where[at]].rstrip()


def before_semicolon_echo(text: str) -> str | None:
    """The command before the `; echo …` at the end of TEXT (whitespace collapsed), None without one (or when
    the echo is more than an echo: _NOT_ECHO): the line's recorded status is echo's, so it says nothing of
    whether that command passed (_without_echo). For precheck's hint, never to resolve a failure."""
    if "; echo" not in text:
        return None
    found = _echo_after(text, ";")
    return None if found is None else found[1]


def failed_part(text: str) -> str:
    """TEXT (whitespace collapsed) without an `&& echo …` at its end (_without_echo), the filters that read
    all its output at its end (`| tee -a log`, `| tail -3`, `|& cat`: each with plain words only) and then
    the output redirections at its end (`2>&1`, `> log`): `node t.js 2>&1 | tee /tmp/t.log` → `node t.js`.
    Anything else stays as typed: a pipe into another program (`make test | grep FAIL` is not `make test`),
    a filter with a quoted or expanded argument, a here-document (the text is not split where the shell
    would)."""
    if "&& echo" in text:
        text = _without_echo(text)
    if ("|" not in text and ">" not in text) or "<<" in text:
        return text
    words = text.split(" ")
    end = len(words)
    while True:
        bar = end - 1
        while bar >= 0 and words[bar] not in ("|", "|&"):
            bar -= 1
        stage = words[bar + 1 : end]
        if bar <= 0 or not stage or stage[0] not in _READ_ALL or not all(map(_plain, stage)):
            break
        end = bar
    while end > 1:
        start = _redirection_start(words, end)
        if start in (end, 0):
            break
        end = start
    return text if end == len(words) else " ".join(words[:end])


# The first words that may start a launcher (sources.shell.launchers): a command starting with another
# word is compared as it is, without loading that module.
LAUNCHER_FIRST = frozenset(
    {"sudo", "doas", "env", "nice", "time", "exec", "command", "builtin", "nohup", "timeout", "stdbuf",
     "ionice", "taskset", "xvfb-run", "flock", "setsid", "chrt", "caffeinate", "unbuffer", "clear", "clear;"}
)  # fmt: skip


def _unlaunched(text: str) -> str:
    """TEXT without the leading launchers that only launch its command (launchers.unlaunched)."""
    first = text.split(" ", 1)[0].rpartition("/")[2]
    if first not in LAUNCHER_FIRST and ("=" not in first or first[:1] == "-"):
        return text
    from nexusmem.sources.shell.launchers import unlaunched

    words = unlaunched(text.split(" "))
    return " ".join(words) if words else text


def normalise(command: str, cwd: str | None = None) -> str:
    """The command with runs of whitespace collapsed to one space and the ends trimmed, without the filters
    and output redirections at its end that do not change whether it passes (:func:`failed_part`); and, when
    CWD (the folder recorded with it) is where its leading `cd DIR && ` (repeated) lead, without them: a
    prompt hook records the folder a command ended in, so `cd services/api && make test` recorded in
    services/api ran `make test` there, as its retry `make test` does; and without the launchers that only
    launch it (`sudo -u deploy`, `nice -n 10`, `time`, `nohup`: _unlaunched), its `NAME=value` settings
    and `env -i` kept. A `cd` that failed (the folder
    unchanged), one a source recorded where it started (atuin), `cd ..`, `cd -` or an absolute folder: kept
    as typed."""
    text = _unlaunched(failed_part(" ".join(command.split())))
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


def whole_files(text: str) -> str:
    """TEXT (as :func:`normalise` gives it) with each pytest node id in it (`tests/test_x.py::test_y`,
    `tests/test_x.py::TestX::test_y`, `"tests/test_x.py::test_y[1-2]"`: a word, quoted or not) replaced by
    its file, each file once: the run that covers the failed one (a pass of `pytest -q tests/test_x.py`
    clears `pytest -q "tests/test_x.py::test_y"`). TEXT itself when it holds none."""
    if "::" not in text:
        return text
    words = text.split(" ")
    out: list[str] = []
    files: set[str] = set()
    for i, word in enumerate(words):
        bare = word[1:-1] if len(word) > 2 and word[0] == word[-1] and word[0] in "'\"" else word
        path, sep, test = bare.partition("::")
        if (
            not sep
            or not test
            or not path.endswith(".py")
            or path.startswith("-")
            or not _plain(path)
            or (i > 0 and words[i - 1] == "--deselect")  # a test left out is not run
        ):
            out.append(word)
        elif path not in files:
            files.add(path)
            out.append(path)
    return " ".join(out)


def retries(
    commands: Iterable[Command],
    *,
    within_ms: int | None = RETRY_WINDOW_MS,
    normalised: dict[tuple[str, str], str] | None = None,
) -> tuple[list[Command], dict[str, tuple[str, int]]]:
    """The failures among COMMANDS (oldest first) and, per failure id, its resolving success (id, ts): the
    same command, or for a failure naming a pytest node id the same with its file instead (:func:`whole_files`).

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
            wider = whole_files(text)
            if wider != text:  # a pytest node id: a pass of its whole file resolves it too
                waiting.setdefault((wider, cwd), []).append(row)
            continue
        pending = waiting.pop(key, None)
        if not pending:
            continue
        for failure in pending:
            if failure[0] in resolved:
                continue  # resolved already by a pass of its other form (its node id's, its file's)
            if ts == failure[1]:
                waiting.setdefault(key, []).append(failure)  # same millisecond is not "later": keep waiting
            elif within_ms is None or ts - failure[1] <= within_ms:
                resolved[failure[0]] = (node_id, ts)
    return failures, resolved
