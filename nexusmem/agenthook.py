"""The recorder the coding agents' hooks run: one shell call in (the hook payload on stdin), one log line out.

Installed by `nexusmem hook agent install claude-code|codex` as
`<python> -I -S <this file> <agent>`: run as a script, not through the `nexusmem` console script, so a call
imports no click, no store, no site-packages (`-S`), only the stdlib and nexusmem.sources.shell.agentcmd;
benchmarks/bench_agent_hook.py measures the whole process (the agent waits for it after every Bash call).

It must never get in the agent's way: it prints nothing, always exits 0 (exit 2 would feed stderr to the
model as a blocking error), reads at most MAX_PAYLOAD_BYTES (a bigger payload is drained and dropped), opens
no socket. The line is appended raw, like the prompt hooks' lines, to the same 0600 log: the next sync
redacts it in place before anything reads it (nexusmem.hygiene.hooklog).
"""

from __future__ import annotations

import os
import sys
import time


def _read_stdin(limit: int) -> bytes | None:
    """Up to LIMIT bytes of stdin; None (after draining the rest) when there is more."""
    stream = sys.stdin.buffer if sys.stdin is not None else None
    if stream is None:
        return None
    data = stream.read(limit + 1)
    if len(data) <= limit:
        return data
    # Drain so the agent's write never sees a broken pipe, without holding it: bounded at 64 MB.
    for _ in range(64):
        if not stream.read(1 << 20):
            break
    return None


def _log_path() -> str:
    """The log in $NEXUSMEM_HOME when that is absolute or `~/...` (and not a file), else in ~/.nexusmem: a
    relative value would put the log in whatever folder the agent runs in (nexusmem.paths.user_dir's rule; not imported, to keep
    this process to the stdlib and agentcmd)."""
    user = os.path.expanduser("~")
    home = os.environ.get("NEXUSMEM_HOME") or ""
    if home == "~" or home.startswith(("~/", "~" + os.sep)):
        home = user + home[1:]
    if not os.path.isabs(home) or (os.path.exists(home) and not os.path.isdir(home)):
        home = os.path.join(user, ".nexusmem")
    return os.path.join(home, "shell-history.jsonl")


def _may_make(directory: str) -> bool:
    """False when, as root under sudo, DIRECTORY would be made inside another user's tree (`sudo -E claude`
    with the user's HOME): a root-owned folder there keeps that user's own shells from recording anything."""
    if not hasattr(os, "geteuid") or os.geteuid() != 0 or not os.environ.get("SUDO_UID"):
        return True
    existing = directory
    while not os.path.lexists(existing) and os.path.dirname(existing) != existing:
        existing = os.path.dirname(existing)
    try:
        return os.stat(existing).st_uid == 0
    except OSError:
        return True


def _append(path: str, data: bytes) -> None:
    directory = os.path.dirname(path)
    if not os.path.isdir(directory):
        if not _may_make(directory):
            return
        # umask 077 for the folders made on the way too (makedirs gives those the umask's mode: 0777
        # under umask 000, and whoever can write one can put a folder of theirs in place of ours).
        old = os.umask(0o077)
        try:
            os.makedirs(directory, mode=0o700, exist_ok=True)
        finally:
            os.umask(old)
        os.chmod(directory, 0o700)
    if hasattr(os, "getuid") and os.stat(directory).st_uid != os.getuid():
        # Another user's folder (or a link to one): its owner could read every command, and plant a link
        # where the log goes. Nothing is written (the agent's call goes on as always).
        raise PermissionError(f"{directory} belongs to another user")
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o600)
    try:
        if os.fstat(fd).st_mode & 0o077:
            os.fchmod(fd, 0o600)
        os.write(fd, data)  # one write with O_APPEND: lands whole past the end, whoever else appends
    finally:
        os.close(fd)


def record(agent: str, raw: bytes, now_ms: int | None = None) -> bool:
    """Append the log line for one payload RAW of AGENT; True when a line was written."""
    from nexusmem.sources.shell import agentcmd

    try:
        payload = agentcmd.loads(raw)
    except (ValueError, RecursionError):
        return False
    line = agentcmd.log_line(agent, payload, int(time.time() * 1000) if now_ms is None else now_ms)
    if line is None:
        return False
    _append(_log_path(), agentcmd.encode(line))
    return True


def main(argv: list[str] | None = None) -> int:
    """Entry point: `agenthook.py AGENT` with the payload on stdin. Always 0, never a word on any stream."""
    args = sys.argv[1:] if argv is None else argv
    try:
        from nexusmem.sources.shell.agentcmd import MAX_PAYLOAD_BYTES

        raw = _read_stdin(MAX_PAYLOAD_BYTES)
        if raw is not None and args:
            record(args[0], raw)
    except BaseException:  # a recorder must never fail the agent's tool call
        pass
    return 0


if __name__ == "__main__":
    # Run as a file with -I -S: make the package importable from where this file lives (the checkout or
    # site-packages), after the stdlib so nothing installed beside it can shadow a stdlib module; and drop
    # this file's own folder (on sys.path before 3.11's -I implied -P) so a module here shadows nothing.
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path[:] = [*(p for p in sys.path if os.path.abspath(p or ".") != here), os.path.dirname(here)]
    code = main()
    try:
        sys.stdout.flush()
    finally:
        os._exit(code)
