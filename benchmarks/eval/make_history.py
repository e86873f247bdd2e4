#!/usr/bin/env python3
"""Make a synthetic but realistic repository history for benchmarks and scale tests.

    make_history.py OUT_DIR [--commits 10000] [--shell-lines 100000] [--seed 7]

Creates OUT_DIR/repo (a git repository built with `git fast-import`: conventional-commit messages with
bodies, a source tree, tests, Markdown docs with sections, some binary and lock files, merges of topic branches) and
OUT_DIR/shell-history.jsonl (lines in the shell-log line of docs/contracts.md §2: failures followed by retries,
noise commands, commands in the repo and outside it). Deterministic for a given seed. Stdlib only.
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import time
from pathlib import Path

AREAS = [
    "parser",
    "server",
    "cache",
    "auth",
    "cli",
    "config",
    "render",
    "storage",
    "network",
    "plugins",
    "scheduler",
    "logging",
    "metrics",
    "router",
    "session",
    "upload",
    "search",
    "index",
    "worker",
    "http",
]
VERBS = {
    "fix": ["handle", "avoid", "prevent", "correct", "guard against"],
    "feat": ["add", "support", "introduce", "allow"],
    "perf": ["speed up", "cache", "batch", "avoid copying in"],
    "refactor": ["split", "simplify", "extract", "rename"],
    "docs": ["document", "explain", "clarify"],
    "test": ["cover", "add tests for", "test"],
    "chore": ["bump", "update", "tidy"],
    "ci": ["run", "cache", "split"],
    "build": ["pin", "package", "vendor"],
}
THINGS = [
    "empty input",
    "unicode paths",
    "windows line endings",
    "timeouts on slow disks",
    "retry budget",
    "stale lock files",
    "concurrent writers",
    "large payloads",
    "missing config",
    "symlinked roots",
    "expired tokens",
    "partial reads",
    "duplicate keys",
    "negative offsets",
    "trailing slashes",
    "gzip streams",
    "keep-alive sockets",
    "daylight saving time",
    "nested transactions",
    "zero-length files",
]
WHY = [
    "because the previous code assumed the happy path",
    "the reason is that the OS reports it late",
    "instead of failing the whole batch we now skip the bad record",
    "trade-off: a little more memory for far fewer syscalls",
    "rationale: callers never checked the flag",
    "this regressed when the cache was introduced",
    "users hit this on first run",
]
TYPES = (
    ["fix"] * 30
    + ["feat"] * 22
    + ["refactor"] * 10
    + ["docs"] * 8
    + ["test"] * 8
    + ["chore"] * 10
    + ["perf"] * 5
    + ["ci"] * 4
    + ["build"] * 3
)


def commit_message(rng: random.Random, area: str) -> str:
    kind = rng.choice(TYPES)
    thing = rng.choice(THINGS)
    subject = f"{kind}({area}): {rng.choice(VERBS[kind])} {thing}"
    if rng.random() < 0.55:
        body = (
            f"\n\nThe {area} module {rng.choice(['crashed', 'hung', 'returned stale data', 'leaked handles'])} "
            f"on {thing}; {rng.choice(WHY)}.\n"
        )
        if rng.random() < 0.3:
            body += f"\nCloses #{rng.randint(10, 9000)}\n"
        return subject + body
    return subject + "\n"


def source_file(area: str, n: int) -> list[str]:
    return [f"# {area} module {n}", "", f"def {area}_entry_{n}(value):", "    return value", ""] + [
        f"def helper_{area}_{n}_{i}(x):\n    return x + {i}\n" for i in range(20)
    ]


def doc_file(area: str) -> list[str]:
    lines = [f"# {area.title()}", "", f"The {area} subsystem.", ""]
    for i, thing in enumerate(THINGS[:8]):
        lines += [
            f"## Handling {thing}",
            "",
            f"When {thing} occur, the {area} code retries; {WHY[i % len(WHY)]}.",
            "",
        ]
    return lines


def blob(data: bytes) -> bytes:
    return b"data %d\n" % len(data) + data + b"\n"


def make_repo(out: Path, commits: int, rng: random.Random, start: int) -> None:
    repo = out / "repo"
    subprocess.run(["git", "init", "-q", "-b", "main", str(repo)], check=True)
    files: dict[str, list[str]] = {}
    for area in AREAS:
        for n in range(5):
            files[f"src/{area}/{area}_{n}.py"] = source_file(area, n)
        files[f"tests/test_{area}.py"] = [f"def test_{area}():", "    assert True", ""]
        files[f"docs/{area}.md"] = doc_file(area)
    files["README.md"] = [
        "# Demo project",
        "",
        "## Install",
        "",
        "pip install demo",
        "",
        "## Why a write-ahead log",
        "",
        "We chose WAL because readers never block writers.",
        "",
    ]
    step = max(1, (int(time.time()) - start) // max(1, commits))
    stream = bytearray()
    for i in range(1, commits + 1):
        ts = start + i * step
        area = rng.choice(AREAS)
        message = commit_message(rng, area).encode()
        side = None
        if i > 2 and rng.random() < 0.01:  # a topic branch of one commit, merged below
            side = 1_000_000 + i
            path = f"docs/{area}.md"
            files[path].append(f"Topic note {i}.")
            stream += b"commit refs/heads/topic\nmark :%d\n" % side
            stream += b"author Dev 9 <dev9@example.com> %d +0000\n" % (ts - 1)
            stream += b"committer Dev 9 <dev9@example.com> %d +0000\n" % (ts - 1)
            stream += blob(f"docs({area}): topic note {i}\n".encode()) + b"from :%d\n" % (i - 1)
            stream += (
                b"M 100644 inline " + path.encode() + b"\n" + blob("\n".join(files[path]).encode()) + b"\n"
            )
            message = b"Merge branch 'topic'\n"
        stream += b"commit refs/heads/main\nmark :%d\n" % i
        stream += b"author Dev %d <dev%d@example.com> %d +0000\n" % (i % 7, i % 7, ts)
        stream += b"committer Dev %d <dev%d@example.com> %d +0000\n" % (i % 7, i % 7, ts)
        stream += blob(message)
        if i > 1:
            stream += b"from :%d\n" % (i - 1)
        if side:
            stream += b"merge :%d\n" % side
        if i == 1:
            touched = list(files)
        else:
            pool = [p for p in files if f"/{area}" in p or p.endswith(f"{area}.md")]
            touched = rng.sample(pool, k=min(len(pool), rng.randint(1, 3)))
            if rng.random() < 0.03:
                touched.append("package-lock.json")
                files["package-lock.json"] = [json.dumps({"lockfileVersion": 3, "n": i})]
        for path in touched:
            lines = files[path]
            if i > 1 and path.endswith(".py"):
                k = rng.randrange(len(lines))
                lines[k] = lines[k] + f"  # {rng.choice(THINGS)} ({i})"
            elif i > 1 and path.endswith(".md"):
                lines.append(f"Note {i}: {rng.choice(WHY)}.")
            stream += b"M 100644 inline " + path.encode() + b"\n" + blob("\n".join(lines).encode())
        if rng.random() < 0.01:
            stream += b"M 100644 inline assets/logo-%d.png\n" % i + blob(
                bytes(rng.randrange(256) for _ in range(64))
            )
        stream += b"\n"
    subprocess.run(["git", "-C", str(repo), "fast-import", "--quiet"], input=bytes(stream), check=True)
    subprocess.run(["git", "-C", str(repo), "checkout", "-q", "main"], check=True)


SHELL_OK = [
    "git status",
    "git diff",
    "ls",
    "cd src",
    "pytest -q",
    "make build",
    "git log --oneline -5",
    "python -m demo --help",
    "pip install -e .",
    "npm run build",
    "docker compose up -d",
]
SHELL_FAIL = [
    "pytest tests/test_{a}.py",
    "python -m demo serve --port 8080",
    "make lint",
    "npm test -- {a}",
    "git push origin main",
    "ruff check src/{a}",
    "mypy src/{a}",
]


def make_shell_log(out: Path, lines: int, rng: random.Random, start: int) -> None:
    repo = str((out / "repo").resolve())
    now_ms = int(time.time() * 1000)
    step = max(1, (now_ms - start * 1000) // max(1, lines))
    ts = start * 1000
    with open(out / "shell-history.jsonl", "w", encoding="utf-8") as fh:
        i = 0
        while i < lines:
            ts += rng.randint(1, 2 * step)
            area = rng.choice(AREAS)
            cwd = repo if rng.random() < 0.8 else "/tmp/elsewhere"
            session = f"s{rng.randint(1, 50)}"
            if rng.random() < 0.25:
                cmd = rng.choice(SHELL_FAIL).format(a=area)
                code = rng.choice([1, 1, 2, 127, 130])
                fh.write(
                    json.dumps(
                        {
                            "ts": ts,
                            "cwd": cwd,
                            "exit": code,
                            "duration_ms": rng.randint(50, 90000),
                            "command": cmd,
                            "shell": "bash",
                            "session": session,
                            "v": 1,
                        }
                    )
                    + "\n"
                )
                i += 1
                if rng.random() < 0.6 and i < lines:
                    ts += rng.randint(30_000, 3_600_000)
                    fh.write(
                        json.dumps(
                            {
                                "ts": ts,
                                "cwd": cwd,
                                "exit": 0,
                                "duration_ms": rng.randint(50, 90000),
                                "command": cmd,
                                "shell": "bash",
                                "session": session,
                                "v": 1,
                            }
                        )
                        + "\n"
                    )
                    i += 1
            else:
                cmd = rng.choice(SHELL_OK)
                fh.write(
                    json.dumps(
                        {
                            "ts": ts,
                            "cwd": cwd,
                            "exit": 0,
                            "duration_ms": rng.randint(1, 5000),
                            "command": cmd,
                            "shell": rng.choice(["bash", "zsh"]),
                            "session": session,
                            "v": 1,
                        }
                    )
                    + "\n"
                )
                i += 1


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out", type=Path)
    ap.add_argument("--commits", type=int, default=10_000)
    ap.add_argument("--shell-lines", type=int, default=100_000)
    ap.add_argument("--seed", type=int, default=7)
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=False)
    rng = random.Random(args.seed)
    start = int(time.time()) - 730 * 86400
    make_repo(args.out, args.commits, rng, start)
    make_shell_log(args.out, args.shell_lines, rng, start)
    print(
        f"{args.out}/repo: {args.commits} commits; {args.out}/shell-history.jsonl: {args.shell_lines} lines"
    )


if __name__ == "__main__":
    main()
