"""Two shells of one kind finishing long commands at the same moment: every line reaches the log whole.

A builtin wrote a long line in pieces (bash's printf 4 KB, zsh's print 8 KB, fish 512 bytes); with two
shells appending at once the pieces interleaved and both lines were lost. The hooks now write each line in
one write() call. The long command is put in history (bash, zsh: then typed as `!!`) or behind an
abbreviation (fish), so each shell finishes many of them in a burst with little typing, while a thread
per shell drains its terminal so that neither waits on its echo."""

from __future__ import annotations

import contextlib
import json
import threading
import time

import pexpect
import pytest
from test_shell_hooks import SHELLS, Shell, needs

# Several times each shell's old piece size, so the old hooks wrote every line in several pieces.
LENGTH = {"bash": 30000, "zsh": 30000, "fish": 6000}
SETUP = {
    "bash": "printf -v x '%*s' {n} ''; history -s \"true {tag}${{x// /A}}\"",
    "zsh": 'print -s "true {tag}${{(l:{n}::A:)}}"',
    "fish": "abbr -a nxlong 'true {tag}{a}'",
}
ROUNDS = 30
PER_ROUND = 10


def _drain(sh: Shell, stop: threading.Event) -> None:
    while not stop.is_set():
        with contextlib.suppress(pexpect.TIMEOUT, pexpect.EOF, OSError, ValueError):
            sh.child.read_nonblocking(65536, timeout=0.05)


def _count(shells: list[Shell], commands: list[str]) -> tuple[list[int], list[bytes]]:
    got = [0] * len(commands)
    bad = []
    # A line still being written may read back partly (a write is atomic against other writers, not
    # against a reader): only whole lines, ended by their newline, count.
    for raw in shells[0].log.read_bytes().split(b"\n")[:-1]:
        try:
            line = json.loads(raw)
        except ValueError:
            bad.append(raw[:60] + b"..." + raw[-60:])
            continue
        for i, command in enumerate(commands):
            got[i] += line["command"] == command
    return got, bad


@pytest.mark.slow
@pytest.mark.parametrize("kind", [pytest.param(k, marks=needs(k)) for k in SHELLS])
def test_two_shells_writing_long_lines_at_once_lose_none(kind: str) -> None:
    shells: list[Shell] = []
    stop = threading.Event()
    try:
        commands = []
        for tag in ("a", "b"):
            n = LENGTH[kind]
            commands.append(f"true {tag}" + "A" * n)
            sh = Shell(kind)
            shells.append(sh)
            sh.type(SETUP[kind].format(n=n, tag=tag, a="A" * n))
            sh.wait_lines(1)
            if kind == "bash":  # bash records the entry `history -s` made: wait for that line too
                deadline = time.monotonic() + 20
                while _count(shells, commands)[0][-1] < 1 and time.monotonic() < deadline:
                    time.sleep(0.05)
        again = b"nxlong\r" if kind == "fish" else b"!!\r"
        before, bad = _count(shells, commands)
        assert not bad
        drains = [threading.Thread(target=_drain, args=(sh, stop), daemon=True) for sh in shells]
        for t in drains:
            t.start()
        for _ in range(ROUNDS):
            for sh in shells:  # both bursts back to back: the two shells write their lines together
                sh.child.send(again * PER_ROUND)
            time.sleep(0.05)
        want = [b + ROUNDS * PER_ROUND for b in before]
        deadline = time.monotonic() + 90
        while True:
            got, bad = _count(shells, commands)
            if bad or got == want or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        assert not bad, f"{kind}: {len(bad)} lines are not JSON: {bad[:4]!r}"
        assert got == want, f"{kind}: lines of each shell's long command {got}, want {want}"
    finally:
        stop.set()
        for sh in shells:
            sh.close()
