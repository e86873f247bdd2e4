"""Added cost per prompt of the NexusMem shell hooks, in microseconds.

For each shell, starts a real interactive shell under a pty (no rc files), types N trivial commands
(`true`) in one burst and lets the shell time the whole run with its own clock; then does the same
with the hook loaded. The difference divided by N is the hook's cost per prompt (its precmd/
postexec work, the JSON escaping and the append to the log), free of pty round-trip noise.

    .venv/bin/python benchmarks/bench_prompt_hook.py [--prompts 1000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import fcntl
import os
import pty
import re
import select
import shutil
import statistics
import subprocess
import tempfile
import termios
import threading
import time
from pathlib import Path

from nexusmem.resources import script_path

SHELLS: dict[str, dict[str, str | list[str]]] = {
    "bash": {
        "argv": ["bash", "--norc", "--noprofile", "-i"],
        "script": "shell/nexusmem.bash",
        "start": "__b0=${EPOCHREALTIME//[!0-9]/}",
        "stop": 'echo "ELAPSED_US=$(( ${EPOCHREALTIME//[!0-9]/} - __b0 ))"',
    },
    "zsh": {
        "argv": ["zsh", "-f", "-i"],
        "script": "shell/nexusmem.zsh",
        "start": "zmodload zsh/datetime; __b0=$(( epochtime[1] * 1000000 + epochtime[2] / 1000 ))",
        "stop": 'echo "ELAPSED_US=$(( epochtime[1] * 1000000 + epochtime[2] / 1000 - __b0 ))"',
    },
    "fish": {
        "argv": ["fish", "--no-config", "-i"],
        "script": "shell/nexusmem.fish",
        "start": "set __b0 (date +%s%6N)",
        "stop": 'echo "ELAPSED_US="(math (date +%s%6N) - $__b0)',
    },
}


def run_once(shell: str, prompts: int, hooked: bool, home: Path, check: bool = True) -> float:
    """Microseconds the shell spent on PROMPTS prompts, timed by the shell itself."""
    spec = SHELLS[shell]
    env = dict(
        os.environ,
        HOME=str(home),
        NEXUSMEM_HOME=str(home / ".nexusmem"),
        TERM="dumb",
        PS1="$ ",
        LANG="C.UTF-8",
    )
    env["HISTFILE"] = str(home / f".{shell}_history")
    lines = []
    if shell == "fish":
        # `--no-config` is private mode (no history), in which the hook records nothing: leave it.
        lines.append(
            "function fish_greeting; end; function fish_prompt; echo -n '$ '; end; set -e fish_private_mode"
        )
    if hooked:
        lines.append(f"source '{script_path(str(spec['script']))}'")
    lines.append(str(spec["start"]))
    lines.extend(["true"] * prompts)
    lines.append(str(spec["stop"]))
    lines.append("exit")
    payload = ("\r".join(lines) + "\r").encode()

    master, slave = pty.openpty()

    def controlling_tty() -> None:  # a session of its own with the pty as its terminal, like a login
        os.setsid()
        fcntl.ioctl(0, termios.TIOCSCTTY, 0)

    proc = subprocess.Popen(
        list(spec["argv"]),
        stdin=slave,
        stdout=slave,
        stderr=slave,
        env=env,
        cwd=home,
        preexec_fn=controlling_tty,
    )
    os.close(slave)

    def feed() -> None:
        for i in range(0, len(payload), 512):
            os.write(master, payload[i : i + 512])

    writer = threading.Thread(target=feed, daemon=True)
    writer.start()
    out = bytearray()
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        ready, _, _ = select.select([master], [], [], 1.0)
        if not ready:
            if proc.poll() is not None:
                break
            continue
        try:
            chunk = os.read(master, 65536)
        except OSError:
            break
        if not chunk:
            break
        out += chunk
    proc.wait(timeout=10)
    os.close(master)
    found = re.findall(rb"ELAPSED_US=(\d+)\r?\n", bytes(out))
    if not found:
        raise RuntimeError(f"{shell}: no timing in output: {bytes(out)[-500:]!r}")
    if hooked and check:
        log = home / ".nexusmem" / "shell-history.jsonl"
        recorded = len(log.read_bytes().splitlines()) if log.exists() else 0
        if recorded < prompts:
            raise RuntimeError(f"{shell}: the hook recorded {recorded} of {prompts} commands")
    return float(found[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prompts", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3, help="runs per configuration; the median is used")
    parser.add_argument("--shells", nargs="*", default=list(SHELLS))
    args = parser.parse_args()

    print(f"{args.prompts} prompts per run, median of {args.repeat} runs")
    print(f"{'shell':<6} {'without (us/prompt)':>20} {'with hook':>10} {'added':>10}")
    for shell in args.shells:
        if shutil.which(shell) is None:
            print(f"{shell:<6} (not installed)")
            continue
        per_prompt: dict[bool, float] = {}
        for hooked in (False, True):
            samples = []
            for _ in range(args.repeat):
                with tempfile.TemporaryDirectory() as tmp:
                    samples.append(run_once(shell, args.prompts, hooked, Path(tmp)) / args.prompts)
            per_prompt[hooked] = statistics.median(samples)
        added = per_prompt[True] - per_prompt[False]
        print(f"{shell:<6} {per_prompt[False]:>20.1f} {per_prompt[True]:>10.1f} {added:>10.1f}")


if __name__ == "__main__":
    main()
