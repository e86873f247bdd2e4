#!/usr/bin/env python3
"""What the agent command hook adds to each of an agent's Bash calls: the recorder run exactly as the agent
runs it (the command from the installed settings file, through `sh -c`, a realistic payload on stdin), a cold
process each time. Target: p50 <= 50 ms. For scale, the same measure of a bare `python -I -S -c pass` and of
`sh -c true` is printed: what any hook costs before it does anything.

    python benchmarks/bench_agent_hook.py [--calls 200]

HOME and NEXUSMEM_HOME point at temp dirs; the hook is installed with `nexusmem hook agent install`.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SCRIPT = Path(sys.executable).parent / "nexusmem"


def payload(n: int, cwd: str) -> bytes:
    failed = n % 4 == 0
    base = {
        "session_id": "bench-session",
        "transcript_path": "/tmp/bench.jsonl",
        "cwd": cwd,
        "permission_mode": "default",
        "tool_name": "Bash",
        "tool_input": {
            "command": f"cd {cwd} && pytest tests/test_{n}.py -x 2>&1 | tail -40",
            "description": "t",
        },
        "tool_use_id": f"toolu_bench_{n:06d}",
        "duration_ms": 1200,
    }
    if failed:
        base |= {
            "hook_event_name": "PostToolUseFailure",
            "error": "Exit code 1\n" + "E   assert 1 == 2\n" * 50,
        }
    else:
        # A typical output: Claude Code keeps up to 30,000 characters of it.
        base |= {
            "hook_event_name": "PostToolUse",
            "tool_response": {"stdout": "." * 8000 + "\n200 passed", "stderr": "", "interrupted": False},
        }
    return json.dumps(base).encode()


CPU: dict[str, list[float]] = {}


def timed(argv: list[str], data: bytes, env: dict[str, str], label: str = "") -> float:
    """Wall time of one run; its CPU time (user + system, all its processes) goes to CPU[LABEL]: on a busy
    machine the wall time mostly measures the wait for a core, the CPU time what the hook itself costs."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run(argv, input=data, env=env, check=True, capture_output=True)
    wall = (time.perf_counter() - started) * 1000
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) * 1000
    CPU.setdefault(label, []).append(cpu)
    return wall


def summary(label: str, times: list[float]) -> str:
    times = sorted(times)
    p50 = statistics.median(times)
    p90 = times[int(len(times) * 0.9) - 1]
    return f"{label:<34} wall p50 {p50:6.1f} ms   p90 {p90:6.1f} ms   (n={len(times)})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=200)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        env = {**os.environ, "HOME": str(home), "NEXUSMEM_HOME": str(home / ".nexusmem")}
        env.pop("CLAUDE_CONFIG_DIR", None)
        subprocess.run(
            [str(SCRIPT), "hook", "agent", "install", "claude-code"], env=env, check=True, capture_output=True
        )
        settings = json.loads((home / ".claude" / "settings.json").read_text(encoding="utf-8"))
        command = settings["hooks"]["PostToolUse"][0]["hooks"][0]["command"]
        cwd = str(home / "repo")
        bare, shell, hook = [], [], []
        for n in range(args.calls):  # interleaved: a burst of load on the machine hits all three alike
            data = payload(n, cwd)
            shell.append(timed(["sh", "-c", "cat >/dev/null"], data, env, "shell"))
            bare.append(timed(["sh", "-c", f"{sys.executable} -I -S -c pass"], data, env, "bare"))
            hook.append(timed(["sh", "-c", command], data, env, "hook"))
        lines = (home / ".nexusmem" / "shell-history.jsonl").read_text(encoding="utf-8").count("\n")
        assert lines == args.calls, f"expected {args.calls} log lines, got {lines}"
        print(
            f"payload ~{len(payload(1, cwd)) // 1024} KB (success) / {len(payload(0, cwd)) // 1024} KB (failure)"
        )
        print(summary("sh -c 'cat >/dev/null'", shell))
        print(summary("sh -c 'python -I -S -c pass'", bare))
        print(summary("agent hook (recorder)", hook))
        added = statistics.median(hook) - statistics.median(bare)
        print(f"added over a bare interpreter: wall p50 {added:+.1f} ms")
        for label in ("shell", "bare", "hook"):
            print(f"cpu {label:<6} mean {statistics.fmean(CPU[label]):5.1f} ms per call")
        print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")


if __name__ == "__main__":
    main()
