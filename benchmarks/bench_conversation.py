"""Time the conversation source: ingest N agent sessions (real formats), then a re-sync with nothing new.

    .venv/bin/python benchmarks/bench_conversation.py                # 1,000 sessions
    .venv/bin/python benchmarks/bench_conversation.py --sessions 200 --turns 8
    .venv/bin/python benchmarks/bench_conversation.py --link     # then time failure → fix linking

Generates, in temp dirs: a git repository; N sessions in the agents' on-disk formats (70 % Claude Code JSONL
under ~/.claude/projects with one subagent file in ten sessions, 30 % Codex rollouts under
~/.codex/sessions/YYYY/MM/DD), each with --turns exchanges of prose and shell calls (one in five failing);
plus N/5 sessions of another project that must be read only far enough to be attributed elsewhere.
Then runs the real sync (`nexusmem.sync.sync(..., enable=["conversation"])`, no embedding) three times:
the first ingest, a re-sync with nothing new, and a re-sync after one session grew by one exchange.
Prints wall and CPU time of the conversation phase, nodes written, nodes/s. With --link, then a full failure →
fix linking pass over what was ingested (median of three), and how many of its discussion links go to a turn
of the failure's own session.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import tempfile
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

WORDS = [
    "cache",
    "eviction",
    "retry",
    "backoff",
    "jitter",
    "migration",
    "schema",
    "index",
    "query",
    "planner",
    "tokenizer",
    "parser",
    "lock",
    "wal",
    "worker",
    "queue",
    "timeout",
    "socket",
    "handshake",
    "config",
    "loader",
    "plugin",
    "registry",
    "snapshot",
    "compaction",
    "vector",
    "embed",
    "budget",
    "ranking",
    "provenance",
    "hook",
    "prompt",
    "session",
    "transcript",
    "fixture",
    "benchmark",
    "release",
    "changelog",
]
COMMANDS = [
    "pytest -q tests/test_{w}.py",
    "ruff check src/{w}.py",
    "git log --oneline -- src/{w}.py",
    "make {w}",
]


def _iso(t: datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%S.") + f"{t.microsecond // 1000:03d}Z"


def _sentence(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n)).capitalize() + "."


def claude_session(
    rng: random.Random, sid: str, cwd: str, start: datetime, turns: int
) -> list[dict[str, Any]]:
    records: list[dict[str, Any]] = []
    t = start
    parent = None

    def rec(kind: str, message: dict[str, Any], **extra: Any) -> None:
        nonlocal t, parent
        t += timedelta(seconds=rng.randint(2, 30))
        uuid = f"{sid[:8]}-{len(records):05d}"
        records.append(
            {
                "parentUuid": parent,
                "isSidechain": False,
                "userType": "external",
                "cwd": cwd,
                "sessionId": sid,
                "version": "2.1.226",
                "gitBranch": "main",
                "type": kind,
                "message": message,
                "uuid": uuid,
                "timestamp": _iso(t),
                **extra,
            }
        )
        parent = uuid

    for turn in range(turns):
        rec(
            "user",
            {"role": "user", "content": f"<system-reminder>ctx</system-reminder>{_sentence(rng, 12)}?"},
        )
        for call in range(rng.randint(1, 3)):
            command = rng.choice(COMMANDS).format(w=rng.choice(WORDS))
            cid = f"toolu_{sid[:8]}_{turn}_{call}"
            rec(
                "assistant",
                {
                    "model": "claude-opus-4-6",
                    "role": "assistant",
                    "content": [
                        {"type": "text", "text": _sentence(rng, 10)},
                        {"type": "tool_use", "id": cid, "name": "Bash", "input": {"command": command}},
                    ],
                },
            )
            failed = rng.random() < 0.2
            out = ("Exit code 1\n" if failed else "") + _sentence(rng, 30)
            rec(
                "user",
                {
                    "role": "user",
                    "content": [
                        {"tool_use_id": cid, "type": "tool_result", "content": out, "is_error": failed}
                    ],
                },
                toolUseResult={"stdout": out, "stderr": "", "interrupted": False},
            )
        answer = "\n\n".join(_sentence(rng, 25) for _ in range(rng.randint(2, 8)))
        rec(
            "assistant",
            {"model": "claude-opus-4-6", "role": "assistant", "content": [{"type": "text", "text": answer}]},
        )
    return records


def codex_session(
    rng: random.Random, sid: str, cwd: str, start: datetime, turns: int
) -> list[dict[str, Any]]:
    t = start
    lines: list[dict[str, Any]] = []

    def line(kind: str, payload: dict[str, Any]) -> None:
        nonlocal t
        t += timedelta(seconds=rng.randint(2, 30))
        lines.append({"timestamp": _iso(t), "type": kind, "payload": payload})

    line(
        "session_meta",
        {"id": sid, "cwd": cwd, "originator": "codex-tui", "cli_version": "0.125.0", "source": "cli"},
    )
    for turn in range(turns):
        line("turn_context", {"turn_id": f"t{turn}", "cwd": cwd, "model": "gpt-5.5"})
        line(
            "response_item",
            {
                "type": "message",
                "role": "user",
                "content": [
                    {
                        "type": "input_text",
                        "text": f"<environment_context><cwd>{cwd}</cwd></environment_context>",
                    }
                ],
            },
        )
        line(
            "response_item",
            {
                "type": "message",
                "role": "user",
                "content": [{"type": "input_text", "text": _sentence(rng, 12)}],
            },
        )
        for call in range(rng.randint(1, 3)):
            cid = f"call_{sid[:8]}_{turn}_{call}"
            command = rng.choice(COMMANDS).format(w=rng.choice(WORDS))
            line(
                "response_item",
                {
                    "type": "function_call",
                    "name": "exec_command",
                    "arguments": json.dumps({"cmd": command, "workdir": cwd}),
                    "call_id": cid,
                },
            )
            code = 1 if rng.random() < 0.2 else 0
            line(
                "response_item",
                {
                    "type": "function_call_output",
                    "call_id": cid,
                    "output": f"Chunk ID: x\nWall time: 0.5 seconds\nProcess exited with code {code}\nOutput:\n{_sentence(rng, 30)}",
                },
            )
        line(
            "response_item",
            {
                "type": "message",
                "role": "assistant",
                "content": [{"type": "output_text", "text": _sentence(rng, 40)}],
                "phase": "final_answer",
            },
        )
    return lines


def write_jsonl(path: Path, records: list[dict[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")


def generate(home: Path, repo: Path, other: Path, sessions: int, turns: int, seed: int) -> int:
    """Write the sessions; returns the bytes written."""
    rng = random.Random(seed)
    start = datetime.now(timezone.utc) - timedelta(days=30)
    for n in range(sessions + sessions // 5):
        ours = n < sessions
        cwd = str(repo if ours else other)
        t = start + timedelta(minutes=40 * n)
        sid = f"{n:08x}-0000-4000-8000-{rng.getrandbits(48):012x}"
        if n % 10 < 7:
            folder = home / ".claude" / "projects" / ("-repo" if ours else "-other")
            write_jsonl(folder / f"{sid}.jsonl", claude_session(rng, sid, cwd, t, turns))
            if n % 10 == 0:
                sub = claude_session(rng, sid, cwd, t, 2)
                for r in sub:
                    r["isSidechain"], r["agentId"] = True, f"ag{n}"
                write_jsonl(folder / sid / "subagents" / f"agent-ag{n}.jsonl", sub)
        else:
            day = home / ".codex" / "sessions" / t.strftime("%Y/%m/%d")
            write_jsonl(
                day / f"rollout-{t.strftime('%Y-%m-%dT%H-%M-%S')}-{sid}.jsonl",
                codex_session(rng, sid, cwd, t, turns),
            )
    return sum(p.stat().st_size for p in home.rglob("*.jsonl"))


def main() -> None:
    """Generate, then time the three syncs and print one line each."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sessions", type=int, default=1000)
    ap.add_argument("--turns", type=int, default=6, help="exchanges per session")
    ap.add_argument("--seed", type=int, default=12)
    ap.add_argument("--link", action="store_true", help="also time a full failure → fix linking pass")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        home = base / "home"
        home.mkdir()
        os.environ.update(HOME=str(home), NEXUSMEM_HOME=str(home / ".nexusmem"))
        for key in ("CLAUDE_CONFIG_DIR", "CODEX_HOME", "GEMINI_CLI_HOME", "XDG_DATA_HOME"):
            os.environ.pop(key, None)
        repo, other = base / "repo", base / "other"
        for path in (repo, other):
            path.mkdir()
            subprocess.run(["git", "init", "-q", str(path)], check=True)
        env = {
            **os.environ,
            "GIT_AUTHOR_NAME": "b",
            "GIT_AUTHOR_EMAIL": "b@x",
            "GIT_COMMITTER_NAME": "b",
            "GIT_COMMITTER_EMAIL": "b@x",
        }
        subprocess.run(
            ["git", "-C", str(repo), "commit", "-q", "--allow-empty", "-m", "init"], check=True, env=env
        )
        t0 = time.perf_counter()
        size = generate(home, repo, other, args.sessions, args.turns, args.seed)
        print(
            f"generated {args.sessions} sessions of ours (+{args.sessions // 5} of another project), "
            f"{size / 1e6:.1f} MB, in {time.perf_counter() - t0:.1f} s"
        )

        from nexusmem.sync import sync

        sync(repo, only=["git"], embed=False)  # initialise; the git phase is not what is measured

        def run(label: str) -> None:
            cpu = time.process_time()
            wall = time.perf_counter()
            summary = sync(repo, only=["conversation"], enable=["conversation"], embed=False)
            wall = time.perf_counter() - wall
            cpu = time.process_time() - cpu
            part = summary.sources[0]
            written = part.added + part.updated
            rate = f", {written / part.seconds:,.0f} nodes/s" if written and part.seconds else ""
            print(
                f"{label}: conversation phase {part.seconds:.2f} s ({written} node(s) written{rate}, "
                f"{part.skipped} skipped); whole sync {wall:.2f} s wall, {cpu:.2f} s CPU"
            )

        run("first ingest")
        run("re-sync, nothing new")
        grown = sorted((home / ".claude" / "projects" / "-repo").glob("*.jsonl"))[0]
        rng = random.Random(1)
        extra = claude_session(rng, grown.stem, str(repo), datetime.now(timezone.utc), 1)
        for r in extra:
            r["uuid"] += "-new"
        with grown.open("a", encoding="utf-8") as handle:
            handle.write("".join(json.dumps(r) + "\n" for r in extra))
        run("re-sync, one session grew by one exchange")
        if args.link:
            link_pass(repo)


def link_pass(repo: Path) -> None:
    """Time a full linking pass (median of three) and count the discussions of the failure's own session."""
    import statistics

    from nexusmem import link, project

    with project.load(repo).open_store() as store:
        seconds = []
        for _ in range(3):
            t0 = time.perf_counter()
            with store.transaction():
                summary = link.link_failures(store)
            seconds.append(time.perf_counter() - t0)
        pairs = store.conn.execute(
            "SELECT json_extract(a.meta, '$.session'), json_extract(b.meta, '$.session_id') FROM links l"
            " JOIN nodes a ON a.id = l.from_id JOIN nodes b ON b.id = l.to_id WHERE l.relation = 'discussion'"
        ).fetchall()
    own = sum(1 for ran, talked in pairs if ran is not None and ran == talked)
    print(
        f"linking, full pass: median {statistics.median(seconds):.2f} s; {summary.failures} failures ->"
        f" {summary.retry} retry, {summary.commit} commit, {summary.discussion} discussion"
        f" ({own} in the failure's own session)"
    )


if __name__ == "__main__":
    main()
