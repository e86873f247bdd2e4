"""Typing at a real interactive shell with NexusMem's prompt hook sourced."""

from __future__ import annotations

import os
import time
from pathlib import Path


def typed_in_bash(repo: Path, *commands: str | bytes) -> None:
    """COMMANDS typed at a real interactive bash with the prompt hook sourced, as README says: each logged.
    A command given as bytes is typed as those bytes (a file name that is not UTF-8), in the C locale: in a
    UTF-8 one readline drops a byte that starts no character."""
    import pexpect

    from nexusmem.resources import script_path

    env = dict(os.environ, PS1="PROMPT> ", TERM="dumb", HISTCONTROL="")
    if any(isinstance(command, bytes) for command in commands):
        env["LC_ALL"] = "C"
    child = pexpect.spawn("bash", ["--norc", "--noprofile", "-i"], env=env, cwd=str(repo), timeout=10)
    try:
        child.sendline(f"source '{script_path('shell/nexusmem.bash')}'".encode())
        for command in commands:
            child.sendline(command if isinstance(command, bytes) else command.encode())
        done = f"true done-typing-{time.time_ns()}".encode()
        child.sendline(done)
        log = Path(os.environ["NEXUSMEM_HOME"]) / "shell-history.jsonl"
        for _ in range(100):
            if log.exists() and done in log.read_bytes():
                break
            child.expect([pexpect.TIMEOUT, pexpect.EOF], timeout=0.1)
    finally:
        child.close(force=True)
