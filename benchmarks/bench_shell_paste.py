"""Time from Enter to the recorded line and to the next prompt, for a long pasted command, hook loaded.

For each shell (bash, zsh, fish; one not installed is skipped, and said so), starts a real interactive
shell under a pty (no rc files) in a temporary HOME with the NexusMem hook sourced, puts a command on the
command line in one piece, as a paste does (a key bound to load it from a file: typed, readline would
complete at each tab), waits for the terminal to go quiet, presses Enter, and times until the command's line
is in the log and until the next prompt is drawn. The commands: a short `true`; `curl -d '<54 KB of minified
JSON>' URL` (2,400 `}`, its program swapped for `true` so that nothing is sent); 100 KB of quoted tabs
(50,000 control characters to escape). Median of --repeat runs, each in the same shell.

    .venv/bin/python benchmarks/bench_shell_paste.py [--repeat 5] [--shells bash zsh fish]
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import json
import os
import pty
import re
import select
import shutil
import statistics
import subprocess
import tempfile
import termios
import time
from pathlib import Path

from nexusmem.resources import script_path

ITEMS = 1200  # 54 KB of JSON, as tests/test_shell_paste.py
JSON = json.dumps(
    [{"id": i, "name": f"item{i}", "tags": {"a": i}} for i in range(ITEMS)], separators=(",", ":")
)
COMMANDS = {
    "short `true`": "true short",
    "curl -d '<54 KB JSON>'": f"true -s -d '{JSON}' http://127.0.0.1:1/api",
    "100 KB of quoted tabs": "true '" + "a\tb\t" * 25_000 + "'",
}

# Each prompt is numbered, the number one more for each command run: fish draws the prompt and the command
# line again as Enter is pressed, with the number it had; the next prompt is the first with another number.
PROMPT = re.compile(rb"NXPROMPT(\d+)> ")
SHELLS: dict[str, dict[str, str | list[str]]] = {
    "bash": {
        "argv": ["bash", "--norc", "--noprofile", "-i"],
        "setup": "PS1='NXPROMPT\\#> '",
        "script": "shell/nexusmem.bash",
        # Ctrl-X n puts the file $NX_CMD on the command line (as tests/test_shell_invalid_bytes.py does).
        "load": """bind -x '"\\C-xn": READLINE_LINE=$(<"$NX_CMD"); READLINE_POINT=${#READLINE_LINE}'""",
    },
    "zsh": {
        "argv": ["zsh", "-f", "-i"],
        "setup": "PS1='NXPROMPT%!> '",
        "script": "shell/nexusmem.zsh",
        "load": "__nx_load() { BUFFER=$(<$NX_CMD); CURSOR=$#BUFFER }; zle -N __nx_load; bindkey '^Xn' __nx_load",
    },
    "fish": {
        "argv": ["fish", "--no-config", "-i"],
        # `--no-config` is private mode (no history), in which the hook records nothing: leave it.
        "setup": "function fish_greeting; end; set -g __nx_n 0; function fish_prompt; echo -n NXPROMPT$__nx_n'> '; end; "
        "function __nx_count --on-event fish_postexec; set -g __nx_n (math $__nx_n + 1); end; set -e fish_private_mode",
        "script": "shell/nexusmem.fish",
        "load": "bind \\cxn 'commandline -r -- (string collect -N <$NX_CMD)'",
    },
}


class Shell:
    """One interactive shell under a pty in HOME, the hook sourced if HOOKED."""

    def __init__(self, kind: str, home: Path, hooked: bool) -> None:
        spec = SHELLS[kind]
        self.kind = kind
        self.hooked = hooked
        self.command_file = home / "command"
        env = dict(
            os.environ,
            HOME=str(home),
            NEXUSMEM_HOME=str(home / ".nexusmem"),
            XDG_DATA_HOME=str(home / ".local" / "share"),
            XDG_CONFIG_HOME=str(home / ".config"),
            TERM="dumb",
            LANG="C.UTF-8",
            LC_ALL="C.UTF-8",
            HISTFILE=str(home / f".{kind}_history"),
            HISTCONTROL="",
            NX_CMD=str(self.command_file),
        )
        self.log = home / ".nexusmem" / "shell-history.jsonl"
        master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, b"\x28\x00\xc8\x00\x00\x00\x00\x00")  # 40 rows, 200 columns

        def controlling_tty() -> None:  # a session of its own with the pty as its terminal, like a login
            os.setsid()
            fcntl.ioctl(0, termios.TIOCSCTTY, 0)

        self.proc = subprocess.Popen(
            list(spec["argv"]),
            stdin=slave,
            stdout=slave,
            stderr=slave,
            env=env,
            cwd=home,
            preexec_fn=controlling_tty,
        )
        os.close(slave)
        self.master = master
        self.tail = b""  # the terminal's last output
        self.prompt: bytes | None = None  # the number of the last prompt it showed
        lines = [str(spec["setup"]), str(spec["load"])]
        if hooked:
            lines.append(f"source '{script_path(str(spec['script']))}'")
        for line in lines:
            self.send(line + "\r")
        self.enter("true nexusmem-ready")

    def send(self, text: str) -> None:
        data = text.encode()
        for i in range(0, len(data), 512):
            os.write(self.master, data[i : i + 512])

    def read(self, timeout: float) -> bytes:
        """What the terminal shows within TIMEOUT seconds (b"" if nothing); notes the last prompt's number."""
        ready, _, _ = select.select([self.master], [], [], timeout)
        chunk = b""
        if ready:
            with contextlib.suppress(OSError):
                chunk = os.read(self.master, 1 << 16)
        if chunk:
            # A prompt may be cut between two reads: the end of the one before is searched again.
            found = PROMPT.findall(self.tail + chunk)
            if found:
                self.prompt = found[-1]
            self.tail = (self.tail + chunk)[-32:]
        return chunk

    def drain(self, quiet: float = 0.5) -> None:
        """Read what the terminal shows until it has been quiet for QUIET seconds."""
        while self.read(quiet):
            pass

    def log_size(self) -> int:
        try:
            return self.log.stat().st_size
        except FileNotFoundError:
            return 0

    def logged_since(self, offset: int) -> bool:
        """Whether a whole line reached the log past OFFSET (a long line reaches the file a page at a time)."""
        if self.log_size() <= offset:
            return False
        with self.log.open("rb") as f:
            f.seek(offset)
            return b"\n" in f.read()

    def enter(self, command: str) -> tuple[float | None, float]:
        """Seconds from Enter to the command's line in the log (None without the hook), and to the next
        prompt."""
        self.command_file.write_text(command, encoding="utf-8")
        self.send("\x18n")  # Ctrl-X n: the whole command on the line at once
        self.drain()
        number = self.prompt
        offset = self.log_size()
        start = time.monotonic()
        self.send("\r")
        logged: float | None = None
        prompted = 0.0
        deadline = start + 120
        while not prompted or (self.hooked and logged is None):
            if time.monotonic() > deadline:
                raise RuntimeError(f"{self.kind}: no log line or prompt 120 s after Enter")
            # The pty is polled every millisecond, the log between reads.
            if self.hooked and logged is None and self.logged_since(offset):
                logged = time.monotonic() - start
            if self.read(0.001) and not prompted and self.prompt != number:
                prompted = time.monotonic() - start
        if self.hooked:
            last = self.log.read_bytes()[offset:].split(b"\n")[0]
            if json.loads(last)["command"] not in (command, command.rstrip()):
                raise RuntimeError(f"{self.kind}: the log holds another command: {last[:120]!r}")
        return logged, prompted

    def close(self) -> None:
        self.proc.kill()
        self.proc.wait(timeout=10)
        os.close(self.master)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5, help="runs per command; the median is shown")
    parser.add_argument("--shells", nargs="*", default=list(SHELLS))
    args = parser.parse_args()

    print(f"seconds from Enter, median of {args.repeat} runs (each in the same shell); slowest run in ()")
    print(f"{'shell':<6} {'command':<24} {'to log line':>14} {'to next prompt':>15} {'without hook':>14}")
    for kind in args.shells:
        if shutil.which(kind) is None:
            print(f"{kind:<6} (not installed: skipped)")
            continue
        runs: dict[bool, dict[str, list[tuple[float | None, float]]]] = {}
        for hooked in (True, False):
            with tempfile.TemporaryDirectory() as tmp:
                sh = Shell(kind, Path(tmp), hooked)
                try:
                    runs[hooked] = {
                        name: [sh.enter(command) for _ in range(args.repeat)]
                        for name, command in COMMANDS.items()
                    }
                finally:
                    sh.close()

        def cell(values: list[float]) -> str:
            return f"{statistics.median(values):.3f} ({max(values):.2f})"

        for name in COMMANDS:
            logged = cell([r[0] for r in runs[True][name] if r[0] is not None])
            prompted = cell([r[1] for r in runs[True][name]])
            bare = cell([r[1] for r in runs[False][name]])
            print(f"{kind:<6} {name:<24} {logged:>14} {prompted:>15} {bare:>14}")


if __name__ == "__main__":
    main()
