"""Which word of a shell command line is its command, past the words that only launch it.

`sudo -u deploy pytest x`, `doas make`, `env -i CI=1 pytest`, `nice -n 10 make`, `time -p pytest`,
`timeout 60 pytest`, `flock /tmp/l make`, `xvfb-run -a pytest`,
`nohup ./serve &`, `command grep x`, `exec -a name prog`, `( cd sub && make )`, `cd sub; make`: the command
is pytest, make, ./serve, grep, prog, make, make (a leading `cd DIR &&` or `cd DIR;` only says where the
command runs; `cd DIR ||` and a `cd` alone are the command), and `clear; pytest x`'s is pytest (a leading
`clear;` or `clear &&` only wipes the screen). One answer for the shell log (a line that only starts a shell), precheck (the
tool a failed line ran), failure linking (the program a discussion must name) and the questions about runs.

Imported on the prompt hook's path: `re` alone, which that path loads already.
"""

from __future__ import annotations

import re

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence

# The shells whose `time` is a keyword that takes no option: zsh runs `time -p pytest`'s `-p` as the command
# ("command not found: -p", 127), fish refuses it (2). bash's takes `-p`, GNU time (`/usr/bin/time`) more.
TIME_WITHOUT_OPTIONS = frozenset(("zsh", "fish"))

# Words that run the command after them as it is (a path to one too: /usr/bin/env), each with the letters
# of its short options and the names of its long ones that take a value (`-u deploy`, `-n 10`, `--user
# deploy`; `-udeploy` and `--user=deploy` hold theirs). `time` is bash's keyword (`-p`) or GNU time (`-f
# FORMAT`, `-o FILE`).
_SUDO_LONG = frozenset(
    {"--user", "--group", "--host", "--prompt", "--close-from", "--chdir", "--role", "--type", "--other-user",
     "--command-timeout"}
)  # fmt: skip
# And how many operands come before the command: `timeout 60 pytest` (its DURATION), `taskset 0x3 make` (a
# mask), `flock /tmp/l make` (the lock file), `chrt -f 10 make` (a priority).
_LAUNCHERS: dict[str, tuple[str, frozenset[str], int]] = {
    "sudo": ("ughpCDrtUT", _SUDO_LONG, 0),
    "doas": ("uaC", frozenset(), 0),
    "env": ("uC", frozenset(("--unset", "--chdir")), 0),
    "nice": ("n", frozenset(("--adjustment",)), 0),
    "time": ("fo", frozenset(("--format", "--output")), 0),
    "exec": ("a", frozenset(), 0),
    "command": ("", frozenset(), 0),
    "builtin": ("", frozenset(), 0),
    "nohup": ("", frozenset(), 0),
    "timeout": ("sk", frozenset(("--signal", "--kill-after")), 1),
    "stdbuf": ("ioe", frozenset(("--input", "--output", "--error")), 0),
    "ionice": ("cn", frozenset(("--class", "--classdata")), 0),
    "taskset": ("", frozenset(), 1),
    "xvfb-run": (
        "efnpsw",
        frozenset(
            ("--error-file", "--auth-file", "--server-num", "--xauth-protocol", "--server-args", "--wait")
        ),
        0,
    ),
    "flock": ("wE", frozenset(("--wait", "--timeout", "--conflict-exit-code")), 1),
    "setsid": ("", frozenset(), 0),
    "chrt": ("TPD", frozenset(("--sched-runtime", "--sched-period", "--sched-deadline")), 1),
    "caffeinate": ("tw", frozenset(), 0),
    "unbuffer": ("", frozenset(), 0),
}
# Options after which the words that follow are no command it runs: `command -v pytest` says where pytest
# is, `env -S 'pytest -x'` splits a string, `sudo -e f` edits f and `sudo -l` lists what may run.
_NO_COMMAND: dict[str, frozenset[str]] = {
    "command": frozenset(("-v", "-V")),
    "env": frozenset(("-S", "--split-string")),
    "sudo": frozenset(("-e", "--edit", "-l", "--list")),
    "ionice": frozenset(("-p", "--pid", "-P", "--pgid", "-u", "--uid")),
    "taskset": frozenset(("-p", "--pid", "-a", "--all-tasks")),
    "chrt": frozenset(("-p", "--pid", "-m", "--max")),
    "flock": frozenset(("-c", "--command")),
}
# The brackets of a subshell or a group (`( cd sub && make )`, `{ make; }`), when a word of their own.
_BRACKETS = frozenset(("(", "{"))
ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")


def _attached(word: str) -> bool:
    """Whether WORD carries a subshell's opening bracket before its first word (`(cd sub && make)`: `(cd` is
    `( cd`); a group's `{` needs a word of its own (`{make;` is a command named so), and `((` is arithmetic."""
    return word[:1] == "(" and word[1:2] not in ("", "(")


def _unbracketed(word: str) -> str:
    """WORD without the subshell's bracket attached to it (_attached)."""
    return word[1:] if _attached(word) else word


def _launcher_end(words: Sequence[str], i: int) -> int:
    """Where the launcher at WORDS[I] ends (its options and their values past it): I when WORDS[I] is no
    launcher, or one with nothing to run after it (`sudo -s`, `env`, `time`: it is the command)."""
    word = _unbracketed(words[i])
    if word in _BRACKETS or ASSIGNMENT.match(word):
        return i + 1
    if word == "cd":
        return _cd_end(words, i)
    if word in _CLEAR:
        return _clear_end(words, i)
    name = word.rpartition("/")[2]
    spec = _LAUNCHERS.get(name)
    if spec is None:
        return i
    letters, long_values, operands = spec
    stops = _NO_COMMAND.get(name, ())
    n = len(words)
    j = i + 1
    while j < n:
        option = words[j]
        if option == "--":
            j += 1
            break
        if option[:1] != "-" or (option == "-" and name != "env"):  # `env -` is `env -i`
            break
        if option in stops or option.partition("=")[0] in stops:
            return i
        j += 1
        if option[:2] == "--":
            if option in long_values:
                j = _past_value(words, j)
            continue
        for k, letter in enumerate(option[1:], 2):
            if letter in letters:
                if k == len(option):  # `-u deploy`; `-udeploy` holds its value
                    j = _past_value(words, j)
                break
    j += operands  # `timeout 60`, `flock /tmp/l`
    if operands and j < n and words[j][:1] == "-":
        return i  # `flock /tmp/l -c 'make'`: a string it runs, no command word
    return j if j < n else i


def _past_value(words: Sequence[str], j: int) -> int:
    """Past the option value at WORDS[J], a quoted one split into words too (`-s '-screen 0 1024x768x24'`)."""
    if j >= len(words):
        return j
    quote = words[j][:1]
    if quote in ("'", '"') and not (len(words[j]) > 1 and words[j].endswith(quote)):
        k = j + 1
        while k < len(words) and not words[k].endswith(quote):
            k += 1
        return k + 1
    return j + 1


def runs_nothing(command: str, shell: str | None) -> bool:
    """Whether COMMAND, typed in SHELL (as its log line says), ran nothing of the command after its leading
    `time`: zsh's and fish's `time` takes no option (TIME_WITHOUT_OPTIONS), so `time -p pytest` there is no
    run of pytest, and neither its failure nor its pass is pytest's."""
    return shell in TIME_WITHOUT_OPTIONS and command.lstrip()[:6] == "time -"


# A leading `clear;` / `clear &&` only wipes the screen before the command (`clear; pytest x` is a run of
# `pytest x`); `clear` alone, or before `||`, is the command.
_CLEAR = frozenset(("clear", "clear;"))


def _clear_end(words: Sequence[str], i: int) -> int:
    """Past `clear;`, `clear ;` or `clear &&` at WORDS[I] when a command follows; else I."""
    if words[i] == "clear;":
        end = i + 1
    elif i + 1 < len(words) and words[i + 1] in ("&&", ";"):
        end = i + 2
    else:
        return i
    return end if end < len(words) else i


def _cd_end(words: Sequence[str], i: int) -> int:
    """Past `cd DIR &&`, `cd DIR ;` or `cd DIR;` at WORDS[I] when a command follows; else I."""
    n = len(words)
    if i + 1 >= n:
        return i
    folder = words[i + 1]
    if folder.endswith(";") and folder != ";":
        end = i + 2
    elif i + 2 < n and words[i + 2] in ("&&", ";"):
        end = i + 3
    else:
        return i
    return end if end < n else i


# The options after which the command runs otherwise than it would alone: in an emptied or changed
# environment (`env -i`, `env -`, `env -u HOME`, `sudo -i`), or in another folder (`env -C`, `sudo -D`).
_CHANGING_LETTERS = {"env": "iuC", "sudo": "iD"}
_CHANGING_LONG = frozenset(("--ignore-environment", "--unset", "--chdir", "--login"))


def _changes_the_run(words: Sequence[str], start: int, end: int) -> bool:
    """Whether the launcher WORDS[START:END] changes how its command runs, beyond launching it: a `NAME=value`
    setting, a subshell's bracket, a `cd DIR &&`, an option of _CHANGING_LETTERS or _CHANGING_LONG."""
    word = words[start]
    if word in _BRACKETS or _attached(word) or word == "cd" or ASSIGNMENT.match(word):
        return True
    name = word.rpartition("/")[2]
    changing = _CHANGING_LETTERS.get(name)
    if changing is None:
        return False
    letters = _LAUNCHERS[name][0]
    j = start + 1
    while j < end:
        option = words[j]
        j += 1
        if option == "-" and name == "env":
            return True
        if option[:2] == "--":
            if option.partition("=")[0] in _CHANGING_LONG:
                return True
            j += option in _LAUNCHERS[name][1]
            continue
        if option[:1] != "-":
            continue
        for k, letter in enumerate(option[1:], 2):
            if letter in changing:
                return True
            if letter in letters:
                j += k == len(option)
                break
    return False


def unlaunched(words: Sequence[str]) -> list[str]:
    """WORDS without the leading launchers that only launch its command (`sudo -u deploy`, `nice -n 10`,
    `time -p`, `nohup`, `timeout 60`): `nice -n 10 pytest x` is a run of `pytest x`. What changes the run stays
    (`FOO=1`, `env -i`, `env -u HOME`, `env -C sub`, `sudo -D sub`, `( cd sub &&`): the retry rule
    (nexusmem.resolved) and precheck's narrower passes read a run so."""
    dropped = [
        (start, end) for start, end in launcher_spans(words) if not _changes_the_run(words, start, end)
    ]
    if not dropped:
        return list(words)
    keep = [True] * len(words)
    for start, end in dropped:
        keep[start:end] = [False] * (end - start)
    return [word for word, kept in zip(words, keep, strict=True) if kept]


def changing_words(words: Sequence[str]) -> set[str]:
    """The words of the leading launchers of WORDS that change how its command runs (unlaunched keeps them):
    a run without them is another run."""
    return {
        words[i]
        for start, end in launcher_spans(words)
        if _changes_the_run(words, start, end)
        for i in range(start, end)
    }


def launcher_spans(words: Sequence[str]) -> Iterator[tuple[int, int]]:
    """(start, end) of each launcher before the command of WORDS (a command line's words, or a simple
    command's): WORDS[start:end] is one (`sudo -u deploy`, `CI=1`, `nice -n 10`, `(`), in order."""
    i = 0
    n = len(words)
    while i < n:
        end = _launcher_end(words, i)
        if end == i:
            return
        yield i, end
        i = end


def command_start(words: Sequence[str]) -> int:
    """The index of the command word of WORDS, past its launchers (len(WORDS) when there is none, as in
    `FOO=1` alone): 3 of `sudo -u deploy pytest x`, 0 of `pytest x` and of `sudo -s`."""
    i = 0
    n = len(words)
    while i < n:
        end = _launcher_end(words, i)
        if end == i:
            break
        i = end
    return i


# The options that run the command in another folder: `env -C DIR`, `sudo -D DIR` (`--chdir` for both).
_CHDIR = {"env": "C", "sudo": "D"}
# What ends the command a launcher runs (`env -C sub make && make`: the second make runs where the line did).
_COMMAND_END = frozenset(("&&", "||", ";", "|", "&", ")"))


def moved_folder(words: Sequence[str]) -> tuple[str, int] | None:
    """The folder (relative to where the line started, or absolute) the launchers of WORDS run their command
    in, and how many of WORDS run there: a subshell's leading `cd DIR &&` (`( cd sub && make )`; a plain
    `cd sub && make` is recorded where it ended, in sub, by the prompt hook), `env -C DIR`, `sudo -D DIR`
    (`--chdir`); None when they move nowhere, or to a folder only the shell could name (`cd "$D"`, `cd ~`,
    `cd -`)."""
    parts: list[str] = []
    subshell = False
    moved = False
    for start, end in launcher_spans(words):
        word = words[start]
        folder: str | None
        if word == "(":
            subshell = True
            continue
        if _attached(word):  # `(cd sub && make)`
            subshell, word = True, word[1:]
        if word == "cd":
            if not subshell:
                continue  # the hook records the folder it ended in
            folder = words[start + 1].removesuffix(";")
        else:
            letter = _CHDIR.get(word.rpartition("/")[2])
            if letter is None:
                continue
            folder = _option_value(words, start + 1, end, letter)
            if folder is None:
                continue
        if not folder or folder[0] in "~-" or any(c in folder for c in "$`'\"*?;&|()"):
            return None
        parts.append(folder)
        moved = True
    if not moved:
        return None
    end = command_start(words)
    while end < len(words) and words[end] not in _COMMAND_END:
        end += 1
        if words[end - 1].endswith((";", ")")):
            break
    return "/".join(parts).replace("//", "/"), end


def _option_value(words: Sequence[str], start: int, end: int, letter: str) -> str | None:
    """The value of the `-LETTER` (`--chdir`) option among WORDS[START:END], a launcher's options."""
    name = _unbracketed(words[start - 1]).rpartition("/")[2]
    letters = _LAUNCHERS[name][0]
    j = start
    while j < end:
        option = words[j]
        j += 1
        if option == "--chdir":
            return words[j] if j < end else None
        if option.startswith("--chdir="):
            return option[8:]
        if option[:2] == "--" or option[:1] != "-":
            if option[:2] == "--" and option in _LAUNCHERS[name][1]:
                j += 1
            continue
        for k, given in enumerate(option[1:], 2):
            if given in letters:
                value = option[k:] if k < len(option) else (words[j] if j < end else None)
                if given == letter:
                    return value
                if k == len(option):
                    j += 1
                break
    return None


# pytest, as a command's program: its exit 5 is "no tests collected" (a `-k` that matched nothing).
_PYTEST = re.compile(r"(?:\S*/)?(?:py\.test|pytest|python3?\s+-m\s+pytest)\b")


def no_test_failed(command: str, exit_code: int | None) -> bool:
    """Whether COMMAND ending with EXIT_CODE failed no test although it failed: pytest's exit 5 ("no tests
    collected"), past the words that only launch it (`time -p pytest -k x`, `timeout 60 python -m pytest`).
    One rule for precheck (no warning) and the questions about runs (no failed run)."""
    if exit_code != 5:
        return False
    words = command.split()
    return _PYTEST.match(" ".join(words[command_start(words) :])) is not None


# What only wipes, moves, prints, pages, filters or sets the scene around a NexusMem command on its line:
# `clear; nexusmem query "…" 2>&1 | tee out.txt`, `cd api && nexusmem sync`, `nexusmem query --json "…" | jq
# .items`, `echo $HOME $NEXUSMEM_HOME; which nexusmem; pwd`, `export LC_ALL=C; ls; command -v nexusmem`.
_SHELL_NOISE = frozenset(
    {"clear", "reset", "cd", "pushd", "popd", "echo", "printf", "true", ":", "tee", "less", "more", "most",
     "bat", "head", "tail", "cat", "jq", "grep", "egrep", "fgrep", "rg", "wc", "sort", "uniq", "column",
     "pbcopy", "xclip", "xsel", "wl-copy", "pwd", "ls", "export"}
)  # fmt: skip
# An interpreter given its script inline (`python3 -c "import json,sys; …"`, `node -e '…'`): a filter, as jq
# is, when a pipe feeds it (`nexusmem query --json "…" | python3 -c …`); after a `;` it is work of its own.
_INLINE_SCRIPT = re.compile(r"(?:python(?:\d(?:\.\d+)?)?|pypy3?|node|ruby|perl)\Z")
_INLINE_OPTIONS = frozenset(("-c", "-e", "-E", "-ne", "-pe"))
# What says where a command is (`which nexusmem`, `type nexusmem`, `command -v nexusmem`): of `nexusmem`
# alone, about NexusMem.
_LOOKUPS = frozenset(("which", "type", "command", "whence", "where", "hash"))
# What ends one simple command of a line (`&` only where it is no redirection's: `2>&1`, `&>`), and what the
# splitting cannot read (a command substitution, a here-document): such a line is never taken for NexusMem's.
_SIMPLE_END = re.compile(r"\|\||&&|\|&|(?<![<>])&(?!>)|[|;()\n]")
_UNREADABLE = re.compile(r"\$\(|`|<<")


def simple_commands(line: str) -> list[list[str]] | None:
    """The words of each simple command of the shell LINE, split at `;`, `&&`, `||`, `|`, `&` and brackets
    outside quotes (`echo "a; b"` is one); None when the line holds what this cannot read (`$(…)`, a
    backquote, a here-document, an unclosed quote)."""
    piped = _piped_commands(line)
    return None if piped is None else [words for _fed, words in piped]


def _piped_commands(line: str) -> list[tuple[bool, list[str]]] | None:
    """simple_commands, each with whether a pipe (`|`, `|&`) feeds it."""
    if _UNREADABLE.search(line):
        return None
    parts: list[tuple[bool, str]] = []
    fed = False
    start = 0
    i = 0
    quote = ""
    n = len(line)
    while i < n:
        char = line[i]
        if quote:
            if char == quote:
                quote = ""
            elif char == "\\" and quote == '"':
                i += 1
            i += 1
            continue
        if char in "'\"":
            quote = char
        elif char == "\\":
            i += 1
        else:
            end = _SIMPLE_END.match(line, i)
            if end is not None:
                parts.append((fed, line[start:i]))
                fed = end.group(0) in ("|", "|&")
                start = i = end.end()
                continue
        i += 1
    if quote:
        return None
    parts.append((fed, line[start:]))
    split = ((fed, part.split()) for fed, part in parts)
    return [(fed, words) for fed, words in split if words and words not in (["{"], ["}"])]


def _looks_up_nexusmem(words: Sequence[str]) -> bool:
    """Whether WORDS (a simple command past its launchers) only say where `nexusmem` is: `which nexusmem`,
    `type -a nexusmem`, `command -v nexusmem`."""
    names = [word for word in words[1:] if not word.startswith("-")]
    return bool(names) and all(name.rpartition("/")[2] == "nexusmem" for name in names)


def runs_nexusmem(line: str) -> bool:
    """Whether the shell LINE is NexusMem's own: one of its simple commands runs `nexusmem` (past what only
    launches it: `time`, `sudo`, `env`, `NAME=value`) or says where it is (`which nexusmem`, `type
    nexusmem`, `command -v nexusmem`) and the others only wipe, move, print, page, filter or set the scene
    (_SHELL_NOISE: `echo $HOME; which nexusmem; pwd`, `export LC_ALL=C; ls`; an inline script a pipe feeds,
    `| python3 -c "import json,sys; …"`, `| node -e …`, `| ruby -e …`):
    `clear; nexusmem query "…" 2>&1 | tee out.txt`, `cd api && time nexusmem status`, `which nexusmem;
    nexusmem --version`. The question being asked, never an answer to one nor work waiting for a sync."""
    if "nexusmem" not in line:
        return False
    commands = _piped_commands(line)
    if not commands:
        return False
    own = False
    for fed, words in commands:
        if words[0] in ("command", "builtin") and len(words) > 1 and words[1] in ("-v", "-V"):
            start = 0  # `command -v nexusmem` says where it is (command_start: no command run)
        else:
            start = command_start(words)
        if start >= len(words):  # `FOO=1` alone sets a variable: nothing run
            continue
        program = _unbracketed(words[start]).rpartition("/")[2]
        if program == "nexusmem" or (program in _LOOKUPS and _looks_up_nexusmem(words[start:])):
            own = True
        elif program in _SHELL_NOISE:
            continue
        elif not (fed and _INLINE_SCRIPT.match(program) and _INLINE_OPTIONS & set(words[start + 1 :])):
            return False
    return own
