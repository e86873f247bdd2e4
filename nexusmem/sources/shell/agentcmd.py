"""An agent's shell call, from its hook payload to one shell-log line (docs/contracts.md §2).

Shared by the recorder the agents' hooks run (nexusmem/agenthook.py, a fresh process per call: stdlib only,
no import of anything heavy, ~1 ms of work) and by anything that reads the same calls another way (a
transcript). Payload shapes are in the agents' hook docs; what is known of them:

- Claude Code sends `PostToolUse` for a Bash call that exited 0 and only `PostToolUseFailure` for any other
  outcome, whose exit code exists only as text: `"error": "Exit code 2\\n<stderr>"`. A user's interrupt
  (`is_interrupt: true`) is not a failure of the command; a timeout ("Command timed out after 2m") has no
  code. There is no `tool_response.exit_code`. No payload carries a time: stamped on receipt.
- Codex sends only `PostToolUse`, failures included; its `tool_response` is untyped in the schema, and for
  a shell call it is the bare output as a string, with no exit code (the rollout transcript has it: the
  sync gives it to the hook's record, sources/conversation/build.py). An `exitCode` / `exit_code` field,
  or Codex's own header above an output ("Process exited with code N" … "Output:"), is read when present.

Agents wrap commands in ways that hide the status: of Bash calls measured by the original product, 15 of 17
ended in `; echo "EXIT:$?"` and 12 of 69 piped into `| head -100`. So the command is canonicalised (a
leading `cd DIR &&` moves into the cwd, a trailing status echo goes, a trailing pipe into head/tail/tee goes)
and the exit code is read back from the echo's output line when there is one, or marked unknown (None) when
a pager-like filter decided it. The canonical text is what matches the person's own `pytest -x`.
"""

from __future__ import annotations

import os

# `typing` costs a cold process ~3 ms (a quarter of the recorder's own work): annotations only, never loaded.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import Any

AGENTS: tuple[str, ...] = ("claude-code", "codex")

# What the recorder reads from stdin at most: a Bash payload carries the command's output, which Claude Code
# cuts at 30,000 characters by default; a bigger payload is dropped whole (never parsed half).
MAX_PAYLOAD_BYTES = 1 << 20

# Tool names of a shell call: Claude Code's and Codex's hooks both say "Bash".
SHELL_TOOLS = frozenset({"Bash"})

# Filters whose own exit status replaces the command's (without pipefail): the status says nothing.
_MASKING = frozenset({"head", "tail", "tee", "less", "more", "cat"})

# No `re`, no `json` here: importing them (enum, functools, collections, json.decoder...) costs a cold
# process ~27 ms of CPU, more than the interpreter's own start (~19 ms); the C scanner behind json.loads
# (_json) parses the payload, and the few patterns below are plain string scans.
_LABEL_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ _-")


def _int_prefix(text: str) -> int | None:
    """The integer at the start of TEXT ("2\nls: ..." -> 2), None when there is none."""
    end = 1 if text[:1] == "-" else 0
    while end < len(text) and text[end].isdigit() and text[end].isascii():
        end += 1
    digits = text[:end]
    return int(digits) if digits.lstrip("-") else None


def _labelled_code(line: str) -> int | None:
    """The code in an echoed status line: "EXIT:2", "exit code: 0", "[exit=1]", "2"; None otherwise."""
    text = line.strip().strip("[]()").strip()
    end = len(text)
    while end > 0 and text[end - 1].isdigit() and text[end - 1].isascii():
        end -= 1
    if end == len(text):
        return None
    start = end - 1 if end > 0 and text[end - 1] == "-" else end
    label = text[:start].rstrip().rstrip(":=").rstrip()
    if label and not (label[0].isalpha() and set(label) <= _LABEL_CHARS):
        return None
    return int(text[start:])


# The status references a trailing echo may report, and whether each is the status of the last pipeline's
# FIRST command rather than of the whole: `$?`; bash's `${PIPESTATUS[0]}`; zsh's `$pipestatus[1]` (its arrays
# count from 1). Only these spellings: any other element is another command's status.
_STATUS_REFS = (
    ("$?", False),
    ("${PIPESTATUS[0]}", True),
    ("$pipestatus[1]", True),
    ("${pipestatus[1]}", True),
)
_PIPESTATUS_NAMES = ("PIPESTATUS", "pipestatus")


def _status_echo(segment: str) -> tuple[bool, bool]:
    """(whether SEGMENT, the last `;`-separated part of a command, is `echo "EXIT:$?"` or the like, whether
    what it echoes is the status of the last pipeline's first command: `${PIPESTATUS[0]}`)."""
    words = segment.strip()
    if not words.startswith("echo ") or words.count("$") != 1:
        return False, False
    found = next(((ref, first) for ref, first in _STATUS_REFS if ref in words), None)
    if found is None:
        return False, False
    rest = words[5:].strip()
    if len(rest) >= 2 and rest[0] == rest[-1] and rest[0] in "'\"":
        rest = rest[1:-1]
    return _labelled_code(rest.replace(found[0], "0")) == 0, found[1]


# Reserved words that open and close a compound command, whose `;`, `|` and `&&` are inside it: `for f in a
# b; do make test; done | tee log` is one pipeline of two stages, the loop's status (its last command's)
# first, as the shell's pipestatus has it.
_OPENERS = frozenset({"if", "for", "while", "until", "case", "select"})
_CLOSERS = frozenset({"fi", "done", "esac"})
_LOOPS = frozenset({"for", "while", "until", "select"})
# A reserved word counts only where a command starts: after an operator, `(`, `{`, or one of these words.
_BEFORE_A_COMMAND = frozenset({"then", "do", "else", "elif", "if", "while", "until", "!", "time"})
_SEPARATORS = frozenset(";|&(){}\n")
_WORD_EDGES = frozenset({"", " ", "\t", *_SEPARATORS})  # what may stand before and after a reserved word
# Characters that change nothing in a scan, in quotes or out (most of a command): passed over first. Not the
# letters a reserved word starts with.
_INERT = frozenset("abghjklmnopqrtvxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 \t-./_=,:+@%^~*?![]>")


def _command_position(command: str, i: int) -> bool:
    """Whether a command starts at COMMAND[I] (the start of a word): scanned back over one word at most, so
    that a long command stays linear."""
    j = i
    while j > 0 and command[j - 1] in " \t":
        j -= 1
    if j == 0 or command[j - 1] in _SEPARATORS:
        return True
    k = j
    while k > 0 and not command[k - 1].isspace() and command[k - 1] not in _SEPARATORS:
        k -= 1
    return command[k:j] in _BEFORE_A_COMMAND


def _scan(command: str, bodies: list[tuple[int, int]] | None = None) -> Iterator[tuple[int, int, int]]:
    """(offset, depth, substituted) of each `|`, `&`, `;`, newline, `(` and `)` of COMMAND that is shell
    syntax: outside quotes, escapes, backquotes and comments. DEPTH is how many constructs are open around
    it: subshells, groups, compound commands (`if … fi`, `for`/`while`/`until … done` or zsh's `for … { …
    }`, `case … esac`) and `$(…)`, inside double quotes too (`make "$(git rev-parse --show-toplevel)" | tee
    log`: its own quotes start afresh, and its end is back inside the double quotes); SUBSTITUTED how many of
    those are `$(…)`. A `(` or `)` is yielded where it opens or closes a subshell (or a function's `()`), at
    the depth outside it, and where it ends a `case` pattern (`x)`); never that of a `$(…)`.

    The one walk of a command's quotes that `_top_level`, `_segments` and `_without_heredoc_bodies` read.
    With a BODIES list, `<<WORD` is read too: the lines after it up to WORD are text (their `;` and `|` no
    operators, their quotes none) and each body's (start, end) is added to BODIES; a body whose delimiter
    never comes runs to the end, as in the shell. Without one, `<<` is a redirection like another (the
    bodies were left out before)."""
    i, n = 0, len(command)
    quote = ""
    # What each open construct is: "(" a subshell, "$(" a command substitution, "{" a group, "if", "case"
    # (where a `)` ends a pattern), "loop" (before its `do`: zsh's `for f in a b; { … }` closes with the
    # group), "do"; '"(' and '"`' a `$(…)` or `…` inside double quotes.
    open_: list[str] = []
    substituted = 0
    pending: list[tuple[str, bool]] = []  # (delimiter, tabs stripped: `<<-`) of the line being read
    while i < n:
        c = command[i]
        if c in _INERT:
            i += 1
            continue
        if c == "\\" and quote != "'":
            i += 2
            continue
        if quote:
            if c == quote:
                quote = ""
                if c == "`" and open_ and open_[-1] == '"`':
                    open_.pop()
                    quote = '"'
            elif quote == '"' and c == "`":
                open_.append('"`')
                quote = "`"
            elif quote == '"' and c == "$" and command.startswith("$(", i):
                open_.append('"(')
                substituted += 1
                quote = ""
                i += 1
        elif c in "cdefisuw" and command[i - 1 : i] in _WORD_EDGES:
            end = i + 1
            while end < n and command[end].isalpha():
                end += 1
            word = command[i:end]
            if (
                (word in _OPENERS or word in _CLOSERS or word == "do")
                and command[end : end + 1] in _WORD_EDGES
                and _command_position(command, i)
            ):
                if word in _LOOPS:
                    open_.append("loop")
                elif word in _OPENERS:
                    open_.append(word)
                elif word == "do":
                    if open_ and open_[-1] == "loop":
                        open_[-1] = "do"
                elif open_:
                    open_.pop()
            i = end
            continue
        elif c in "'\"`":
            quote = c
        elif c == "#" and command[i - 1 : i] in ("", " ", "\t", "\n"):
            end = command.find("\n", i)  # a comment, to the end of its line
            i = n if end < 0 else end
            continue
        elif c == "$" and command.startswith("$(", i):
            open_.append("$(")
            substituted += 1
            i += 1
        elif c == "(":
            yield i, len(open_), substituted
            open_.append("(")
        elif (
            c == "{"
            and command[i + 1 : i + 2].isspace()
            and command[i - 1 : i] in ("", " ", ";", "|", "&", "\n", "\t")
        ):
            # `{ …; }` (its `{` stands alone; `${x}`, `{a,b}` are words); after a loop's header, zsh's body
            if open_ and open_[-1] == "loop":
                open_[-1] = "{"
            else:
                open_.append("{")
        elif c == ")" and open_ and open_[-1] == "case":
            yield i, len(open_), substituted  # the end of a `case` pattern (`x)`), not of a subshell
        elif c == ")" or (c == "}" and open_ and command[i - 1 : i] in (" ", ";", "\n", "\t")):
            closed = open_.pop() if open_ else ""
            if closed in ('"(', "$("):
                substituted -= 1
                if closed == '"(' and c == ")":
                    quote = '"'  # back inside the double quotes the `$(` opened in
            elif c == ")":
                yield i, len(open_), substituted
        elif c == "<" and bodies is not None and command.startswith("<<", i):
            if command.startswith("<<<", i):
                i += 3  # a here-string: its word is all there is
                continue
            i += 2
            strip = command[i : i + 1] == "-"
            i += strip
            while i < n and command[i] in " \t":
                i += 1
            start = i
            while i < n and command[i] not in " \t\n;|&<>()":
                i += 1
            delimiter = command[start:i].replace('"', "").replace("'", "").replace("\\", "")
            if delimiter:
                pending.append((delimiter, strip))
            continue
        elif c in "|&;\n":
            yield i, len(open_), substituted
            if c == "\n" and pending and bodies is not None:
                at = i + 1
                for delimiter, strip in pending:
                    while at < n:
                        end = command.find("\n", at)
                        end = n if end < 0 else end
                        line = command[at:end]
                        at = end + 1
                        if (line.lstrip("\t") if strip else line) == delimiter:
                            break
                pending = []
                bodies.append((i + 1, min(at, n)))
                i = min(at, n)
                continue
        i += 1


def _top_level(command: str) -> list[tuple[int, str]]:
    """(offset, operator) of each `|`, `||`, `&&`, `;`, `&` (in the background) and newline of COMMAND that
    `_scan` finds outside every construct. `|&` (bash's `2>&1 |`) is a `|`."""
    out: list[tuple[int, str]] = []
    after = 0  # the end of the last two-character operator, whose second character is yielded too
    for i, depth, _ in _scan(command):
        c = command[i]
        if depth or i < after or c in "()":
            continue
        two = command[i : i + 2]
        if two in ("||", "&&", "|&"):
            out.append((i, "|" if two == "|&" else two))
            after = i + 2
        elif not ((c == "&" and command[i + 1 : i + 2] == ">") or command[i - 1 : i] in (">", "<")):
            out.append((i, c))  # not `&>file`, `2>&1`, `>|file`: redirections, not operators
    return out


def _without_heredoc_bodies(command: str) -> str:
    """COMMAND with the bodies of its here-documents left out (`sqlite3 db <<'SQL' | tee out`, then lines up
    to `SQL`): their `;` and `|` are text, not operators."""
    if "<<" not in command:
        return command
    bodies: list[tuple[int, int]] = []
    for _ in _scan(command, bodies):
        pass
    out: list[str] = []
    kept = 0
    for start, end in bodies:
        out.append(command[kept:start])
        kept = end
    out.append(command[kept:])
    return "".join(out)


# A producer that a filter stopped reading from (`yes | head`) is killed by SIGPIPE: 128 + 13, no failure.
_SIGPIPE_STATUS = 141


# Filters that read all their input: a stage before them that failed failed on its own. `head`, `less` and
# `more` stop reading early, and the producer they cut off may exit 1 (Python's BrokenPipeError), 101 (a
# Rust panic) or 120 as well as 141: its status says nothing there.
_READ_ALL = frozenset({"tail", "tee", "cat"})


# Tools whose exit status 1 is an answer ("no match", "they differ"), not a failure.
_ANSWERS_WITH_1 = frozenset(
    {"grep", "egrep", "fgrep", "rg", "ag", "ack", "diff", "cmp", "test", "[", "[[", "pgrep"}
)
# Words before a command that are not it, and words that end a branch of a compound command (the command
# before one is a command whose status the compound may return).
_LEADING = frozenset({"then", "do", "if", "while", "until", "!", "time", "{"})
_BRANCH_ENDS = frozenset({"fi", "done", "esac", "else", "elif", "}"})
_NOT_COMMANDS = frozenset({"for", "select", "case", "function"})  # a header or a definition


_GIT_VALUES = frozenset({"-C", "-c"})  # git's options before its subcommand that take a value


def _first_word(words: list[str]) -> str | None:
    """The command word of a simple command's WORDS, past assignments and the words that only launch it and
    end with its status (sources.shell.launchers: `LC_ALL=C grep x`, `time grep x`, `sudo -u app grep x`,
    `doas grep x` → grep); `git grep` is grep."""
    from nexusmem.sources.shell.launchers import command_start  # only for a status to judge

    i, n = command_start(words), len(words)
    if i >= n:
        return None
    word = words[i]
    if word != "git":
        return word
    i += 1
    while i < n and words[i][:1] == "-":
        i += 2 if words[i] in _GIT_VALUES else 1
    return "grep" if words[i : i + 1] == ["grep"] else word


def _segments(stage: str) -> list[tuple[str, str]]:
    """(text, the operator after it) of the simple commands of STAGE, split at `;`, `;;`, newlines, `|`,
    `&&`, `||`, `&`, `(` and `)` that `_scan` finds outside every `$(…)` ("" at the end)."""
    out: list[tuple[str, str]] = []
    start = 0
    for i, _, substituted in _scan(stage):
        c = stage[i]
        if (
            substituted
            or i < start
            or (c == "&" and (stage[i - 1 : i] in (">", "<") or stage[i + 1 : i + 2] == ">"))
        ):
            continue
        two = stage[i : i + 2]
        op = two if two in (";;", "||", "&&", "|&") else c
        out.append((stage[start:i], op))
        start = i + len(op)
    out.append((stage[start:], ""))
    return out


def _last_commands(stage: str) -> set[str]:
    """The command words whose status STAGE (one stage of a pipeline) may end with: its command, or for a
    compound the last command of each branch (`if [ -f f ]; then grep x f; fi` → grep; `{ make; diff a b; }`
    → diff; a loop's, its body's). Of a `&&`/`||` list, its last command only: `a || b` failed with b's
    status (b ran), and `[ -d tests ] && pytest tests` with pytest's unless the test failed, which its
    status cannot tell: a 1 there is pytest's failure, not the test's answer (`grep -q x f && grep -c y f`,
    all answers, is an answer either way)."""
    words = stage.split()
    if words and words[0] not in _OPENERS and words[0][:1] not in "({" and "(" not in words[0]:
        first = _first_word(words)
        return {first} if first else set()
    found: set[str] = set()
    last: str | None = None  # the last command of the list being read: the one its status is judged by
    for text, op in _segments(stage):
        words = text.split()
        while words and (words[0] in _LEADING or words[0] in _BRANCH_ENDS):
            if words[0] in _BRANCH_ENDS and last:
                found.add(last)
                last = None
            words = words[1:]
        command = _first_word(words) if words and words[0] not in _NOT_COMMANDS else None
        if command:
            last = command
        if op in (";;", ")", "") and last:  # a case clause, a subshell, the stage end
            found.add(last)
            last = None
    return found


def _answers(stage: str) -> bool:
    """Whether a status 1 of STAGE may be an answer (`grep` found nothing, `diff` saw a difference)."""
    return not _last_commands(stage).isdisjoint(_ANSWERS_WITH_1)


def pipeline_status(command: str, exit_code: int | None, pipestatus: list[int] | None) -> int | None:
    """The status a person's COMMAND failed with when its last pipeline (what the shell's pipestatus
    describes: `make -v && pytest 2>&1 | tee log` → `pytest 2>&1 | tee log`) ends in filters that read all
    their input (PIPESTATUS 1 0, $? 0): the last failing stage's before those filters; else EXIT_CODE. A
    pipestatus that does not have that pipeline's length is another's (`false && make | tee log` ran
    `false` alone): EXIT_CODE. With `pipefail` the shell's $? is already the stage's, and is kept, unless it
    is only SIGPIPE's (`seq 1 1000000 | head -1`: 141), which is no failure. A command of one stage (a
    simple command, or a compound) that ends with 1 as grep, diff, `test` or `[` answer is no failure either:
    0, as when it is piped into `| cat` (`grep -n TODO notes.txt` that found nothing)."""
    if not pipestatus or len(pipestatus) < 2:
        return _alone_status(command, exit_code, pipestatus)
    if pipestatus[-1] != 0:
        return exit_code
    if exit_code == _SIGPIPE_STATUS and all(s in (0, _SIGPIPE_STATUS) for s in pipestatus):
        return 0
    if exit_code != 0:
        return exit_code
    text = _without_heredoc_bodies(command)
    ops = _top_level(text)
    # A trailing `;` or newline ends the last pipeline, it starts none.
    while ops and ops[-1][1] in (";", "\n") and not text[ops[-1][0] + 1 :].strip():
        text = text[: ops[-1][0]]
        ops.pop()
    at = len(ops)
    while at > 0 and ops[at - 1][1] == "|":
        at -= 1
    pipes = [where for where, _ in ops[at:]]
    if not pipes or len(pipes) + 1 != len(pipestatus):
        return exit_code
    start = ops[at - 1][0] + len(ops[at - 1][1]) - 1 if at else -1
    bounds = [start, *pipes, len(text)]
    # `a |& tee log` (bash's 2>&1 |) leaves the `&` at the next stage's start.
    stages = [text[bounds[i] + 1 : bounds[i + 1]].lstrip("&") for i in range(len(bounds) - 1)]
    heads = [stage.split()[:1] for stage in stages]
    kept = len(stages)
    while kept > 1 and heads[kept - 1] and heads[kept - 1][0] in _READ_ALL:
        kept -= 1
    if kept == len(stages) or (heads[kept - 1] and heads[kept - 1][0] in _MASKING - _READ_ALL):
        return exit_code  # no filter that reads it all, or one that stops early before it (`| head | tee`)
    for stage, status in zip(reversed(stages[:kept]), reversed(pipestatus[:kept])):
        if status == 1 and _answers(stage):
            continue  # `grep x f | tail`: grep found nothing, which is an answer, not a failure
        if status not in (0, _SIGPIPE_STATUS):
            return status
    return exit_code


def _alone_status(command: str, exit_code: int | None, pipestatus: list[int] | None) -> int | None:
    """The status of COMMAND when the shell's PIPESTATUS has fewer than two stages: 0 for a 1 that its last
    pipeline, one stage (a simple command or a compound), answered with (_answers: `grep -n TODO notes.txt`,
    `cd docs && diff a b`, as of a `&&`/`||` list inside a compound: by its last command); else EXIT_CODE.
    Its words are looked at first: a `pytest` that failed costs a split, not a scan of its characters."""
    if exit_code != 1 or (pipestatus and pipestatus != [1]):
        return exit_code
    text = _without_heredoc_bodies(command)
    if _ANSWERS_WITH_1.isdisjoint(text.split()):
        return exit_code
    ops = _top_level(text)
    while ops and ops[-1][1] in (";", "\n") and not text[ops[-1][0] + 1 :].strip():
        text = text[: ops[-1][0]]  # a trailing `;` or newline ends the command, it starts none
        ops.pop()
    if ops and ops[-1][1] == "|":
        return exit_code  # a last pipeline of several stages, and a pipestatus of one: not that pipeline's
    last = text[ops[-1][0] + len(ops[-1][1]) :] if ops else text
    return 0 if _answers(last) else exit_code


def _unquote_word(word: str) -> str | None:
    """A single shell word without its quotes; None when it is more than one plain word."""
    word = word.strip()
    if len(word) >= 2 and word[0] == word[-1] and word[0] in "'\"":
        inner = word[1:-1]
        return inner if "$" not in inner or word[0] == "'" else None
    if not word or any(ch in word for ch in " \t'\"$`\\*?~"):
        return None
    return word


def _bytes_as_letters(word: str) -> str:
    """WORD with each `\\xNN` a hook wrote for a byte that is not UTF-8 as one plain character."""
    if "\\x" not in word:
        return word
    out, i = [], 0
    while i < len(word):
        pair = word[i + 2 : i + 4]
        if word.startswith("\\x", i) and len(pair) == 2 and all(c in "0123456789abcdef" for c in pair):
            out.append("_")
            i += 4
        else:
            out.append(word[i])
            i += 1
    return "".join(out)


def cd_target(command: str, cwd: str) -> str:
    """The folder the rest of COMMAND runs in when it starts with `cd DIR &&` (repeated), DIR a plain word
    (a byte a hook spelled `\\xNN` included), joined to CWD; else CWD. A prompt hook records where a line
    started: `cd api && make` is still `make`'s, in api."""
    text = command.strip()
    while text.startswith("cd "):
        ops = _top_level(text)
        if not ops or ops[0][1] != "&&":
            break
        word = text[3 : ops[0][0]].strip()
        plain = _bytes_as_letters(word)
        target = _unquote_word(plain)
        if target is None or target in ("-", "") or target.startswith("~"):
            break
        target = word if target == plain else word[1:-1]
        cwd = os.path.normpath(os.path.join(cwd, target))
        text = text[ops[0][0] + 2 :].strip()
    return cwd


def canonical(command: str, cwd: str) -> tuple[str, str, bool, bool]:
    """(canonical command, its cwd, status echoed, status masked) of an agent's COMMAND run in CWD.

    - `cd DIR && rest` (repeated): DIR becomes the cwd (joined to CWD when relative), REST the command;
    - a final `; echo "EXIT:$?"`: dropped; `status echoed` tells the caller to read the code from the output;
      `; echo "EXIT:${PIPESTATUS[0]}"` (zsh: `$pipestatus[1]`) too, when it reports the command's own status:
      what is left once a final `| tail` goes is one command, not a pipeline (masked otherwise); an echo of
      another element of PIPESTATUS / pipestatus says nothing of the command (masked);
    - a final `| head -N` / `| tail` / `| tee f` (and a `2>&1` before it): dropped; `status masked` = the
      exit status is the filter's, not the command's (when the echo came after such a pipe, it is masked too).
    """
    text = command.strip()
    while True:
        ops = _top_level(text)
        if not ops or ops[0][1] != "&&" or not text.startswith("cd "):
            break
        target = _unquote_word(text[3 : ops[0][0]])
        if target is None:
            break
        cwd = os.path.normpath(os.path.join(cwd, os.path.expanduser(target))) if cwd else target
        text = text[ops[0][0] + 2 :].strip()
    echoed = first = other = False
    if "$" in text:
        ops = _top_level(text)
        if ops and ops[-1][1] == ";" and ops[-1][0] > 0:
            last = text[ops[-1][0] + 1 :]
            echoed, first = _status_echo(last)
            if echoed:
                text = text[: ops[-1][0]].rstrip()
            else:
                # `echo "${PIPESTATUS[1]}"`, `echo "${PIPESTATUS[@]}"`: another stage's status, or several
                other = last.lstrip().startswith("echo ") and any(n in last for n in _PIPESTATUS_NAMES)
    masked = False
    ops = _top_level(text)
    if ops and ops[-1][1] == "|":
        stage = text[ops[-1][0] + 1 :].split()
        if stage and stage[0] in _MASKING:
            masked = True
            text = text[: ops[-1][0]].rstrip()
            if text.endswith("2>&1"):
                text = text[:-4].rstrip()
    if first:
        # `${PIPESTATUS[0]}` is the status of the last pipeline's first command: the command's own when that
        # is all that is left of the pipeline (`pytest -x 2>&1 | tail -5`, its filter taken off); of a
        # pipeline still (`pytest | grep FAIL`), it tells nothing of the whole.
        ops = _top_level(text)
        masked = bool(ops) and ops[-1][1] == "|"
    return text or command.strip(), cwd, echoed, masked or other


def echoed_code(output: Any) -> int | None:
    """The code on the last line of OUTPUT when it is an echoed status ("EXIT:3"), else None."""
    if not isinstance(output, str):
        return None
    tail = output.rstrip()[-200:]
    return _labelled_code(tail.rsplit("\n", 1)[-1]) if tail else None


def status_of(echoed: bool, masked: bool, reported: int | None, output: Any) -> int | None:
    """The exit code to keep for an agent's call whose command ends as canonical() found (ECHOED, MASKED),
    which the agent reported as REPORTED with OUTPUT (what it printed): after a trailing status echo, the code
    on OUTPUT's last line (None when that line is none: the reported 0 is the echo's); after a pipe into a
    filter whose status replaced the command's, unknown (None); else REPORTED. The one rule for the hooks
    (log_line) and every transcript (call_status)."""
    if masked:
        return None
    if echoed:
        return echoed_code(output)
    return reported


def call_status(command: str, reported: int | None, output: Any) -> int | None:
    """status_of for an agent's COMMAND as it ran (a transcript's call, canonicalised here)."""
    _, _, echoed, masked = canonical(command, "")
    return status_of(echoed, masked, reported, output)


# The lines Codex writes above a shell call's output where it formats one for the model (the rollout's
# function_call_output: unified exec's "Chunk ID: …\nWall time: …\nProcess exited with code N\nOutput:\n…",
# the older shell tool's "Exit code: N\nWall time: …\nOutput:\n…"): (prefix, whether it gives the code).
_CODEX_HEADER = (
    ("Process exited with code ", True),
    ("Exit code: ", True),
    ("Command: ", False),
    ("Chunk ID: ", False),
    ("Wall time: ", False),
    ("Process running with session ID ", False),
    ("Original token count: ", False),
    ("Total output lines: ", False),
)


def codex_header_code(text: str) -> int | None:
    """The exit code in the header Codex puts above a shell call's output (see _CODEX_HEADER), None when TEXT
    does not start with such a header that ends in an `Output:` line (or ends TEXT): a command's own output
    that happens to print "Exit code: 0" says nothing of its status. Codex's PostToolUse hook hands over the
    bare output, no header (openai/codex core/src/tools/context.rs: post_tool_use_response)."""
    code = None
    at = 0
    for _ in range(len(_CODEX_HEADER) + 1):
        end = text.find("\n", at)
        line = (text[at:] if end < 0 else text[at:end]).rstrip("\r")
        if line == "Output:" or (not line and (end < 0 or not text[end + 1 :].strip())):
            return code
        for prefix, gives_code in _CODEX_HEADER:
            if line.startswith(prefix):
                if gives_code:
                    code = _int_prefix(line[len(prefix) :])
                break
        else:
            return None
        if end < 0:
            return code
        at = end + 1
    return None


def _codex_code(response: Any) -> int | None:
    """The exit code of a Codex PostToolUse `tool_response` (untyped in its schema): an `exitCode` /
    `exit_code` / `metadata.exit_code` number, or a header in Codex's format (codex_header_code)."""
    if isinstance(response, dict):
        for key in ("exitCode", "exit_code"):
            value = response.get(key)
            if type(value) is int:
                return value
        metadata = response.get("metadata")
        if isinstance(metadata, dict) and type(metadata.get("exit_code")) is int:
            code: int = metadata["exit_code"]
            return code
        for key in ("output", "stdout", "formatted_output"):
            found = _codex_code(response.get(key))
            if found is not None:
                return found
        return None
    if isinstance(response, str):
        return codex_header_code(response)
    return None


def _command_text(value: Any) -> str | None:
    if isinstance(value, str):
        return value
    if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
        import shlex  # only for an argv-shaped command (Codex's `shell` tool)

        if (
            len(value) >= 3
            and value[0] in ("bash", "sh", "zsh", "/bin/bash", "/bin/sh")
            and value[1] in ("-c", "-lc")
        ):
            return str(value[2])
        return shlex.join(value)
    return None


def log_line(agent: str, payload: Any, now_ms: int) -> dict[str, Any] | None:
    """The shell-log line for one hook PAYLOAD of AGENT received at NOW_MS; None when it is not a shell call
    (another tool, another event, a malformed payload) or carries nothing to record."""
    if agent not in AGENTS or not isinstance(payload, dict):
        return None
    event = payload.get("hook_event_name")
    if event not in ("PostToolUse", "PostToolUseFailure") or payload.get("tool_name") not in SHELL_TOOLS:
        return None
    tool_input = payload.get("tool_input")
    raw = _command_text(tool_input.get("command")) if isinstance(tool_input, dict) else None
    cwd = payload.get("cwd")
    if raw is None or not raw.strip() or "\x00" in raw or not isinstance(cwd, str) or not cwd:
        return None
    command, cwd, echoed, masked = canonical(raw, cwd)
    response = payload.get("tool_response")
    exit_code: int | None
    interrupted = False
    if event == "PostToolUseFailure":
        interrupted = payload.get("is_interrupt") is True
        error = payload.get("error")
        code = _int_prefix(error[10:]) if isinstance(error, str) and error.startswith("Exit code ") else None
        exit_code = None if interrupted else code
    elif agent == "claude-code":
        interrupted = isinstance(response, dict) and response.get("interrupted") is True
        printed = response.get("stdout") if isinstance(response, dict) else None
        exit_code = None if interrupted else status_of(echoed, masked, 0, printed)
    else:
        # Codex's output is the response itself (a string), or a field of it.
        printed = response if isinstance(response, str) else None
        if isinstance(response, dict):
            printed = response.get("stdout") or response.get("output")
        exit_code = status_of(echoed, masked, _codex_code(response), printed)
    if masked:
        exit_code = None
    duration = payload.get("duration_ms")
    duration_ms = duration if type(duration) is int and 0 <= duration < 10 * 365 * 86_400_000 else None
    line: dict[str, Any] = {
        "ts": now_ms - (duration_ms or 0),
        "cwd": cwd,
        "exit": exit_code,
        "command": command,
        "shell": agent,
        "session": payload.get("session_id") if isinstance(payload.get("session_id"), str) else "",
        "author": agent,
        "author_kind": "agent",
        "v": 1,
    }
    if duration_ms is not None:
        line["duration_ms"] = duration_ms
    call_id = payload.get("tool_use_id") or payload.get("call_id")
    if isinstance(call_id, str) and 0 < len(call_id) <= 200:
        line["call_id"] = call_id
    if interrupted:
        line["interrupted"] = True
    return line


def loads(data: bytes) -> Any:
    """json.loads for one payload, through the C scanner when there is one (see the note on imports).

    Raises ValueError (or RecursionError) on anything that is not exactly one JSON value. A byte that is not
    UTF-8 (in a command's output, say, which is never kept) reads as U+FFFD: the call is still recorded."""
    text = data.decode("utf-8", "replace")
    try:
        from _json import make_scanner
    except ImportError:  # an interpreter without CPython's accelerator
        import json

        return json.loads(text)
    start = len(text) - len(text.lstrip(" \t\n\r"))
    try:
        value, end = make_scanner(_DecoderSettings())(text, start)  # type: ignore[arg-type]
    except StopIteration:
        raise ValueError("not JSON") from None
    if text[end:].strip(" \t\n\r"):
        raise ValueError("trailing data after the JSON value")
    return value


class _DecoderSettings:
    """What _json.make_scanner reads from a json.JSONDecoder: the defaults of json.loads."""

    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int
    parse_constant = float  # NaN, Infinity


def encode(line: dict[str, Any]) -> bytes:
    """LINE (flat: str, int, bool, None values) as one UTF-8 JSON line. A lone surrogate (a `\\ud83d` escape
    in the payload: JSON.stringify's half of an emoji cut short) is written as U+FFFD."""
    try:
        from _json import encode_basestring as quote
    except ImportError:
        from json.encoder import py_encode_basestring as quote
    parts = []
    for key, value in line.items():
        if value is None:
            text = "null"
        elif value is True or value is False:
            text = "true" if value else "false"
        elif type(value) is int:
            text = str(value)
        else:
            text = quote(str(value))
        parts.append(f"{quote(key)}:{text}")
    text = "{" + ",".join(parts) + "}\n"
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace").encode("utf-8")
