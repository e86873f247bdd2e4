"""Agent transcripts in each real on-disk format (shapes from /docs: Claude Code JSONL, Codex rollouts, Aider's
Markdown history, Gemini CLI session JSON), written for a repository in a temp dir.

Each writer takes the repository and a base time and returns what the test needs to know (paths, ids).
The records carry the envelope fields the real tools write (uuid, parentUuid, sessionId, version,
gitBranch, requestId, toolUseResult; Codex's session_meta/turn_context/response_item/event_msg), plus the
odd records a real file holds (snapshots, summaries, injected reminders, a line cut mid-write).
"""

from __future__ import annotations

import hashlib
import json
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

# A planted secret (GitHub token shape): must never reach the store.
SECRET = "ghp_R8x2Lq7Vn4Tz9Kp3Wm6Yb1Hc5Dj0Fs2Ga8Ne"

CLAUDE_SESSION = "6f1c2d3e-0000-4000-8000-00000000c1a0"
CLAUDE_SESSION_2 = "6f1c2d3e-0000-4000-8000-00000000c1a2"
CODEX_SESSION = "019dd8e4-15dd-7143-95e8-219014341717"


def iso(moment: datetime) -> str:
    return (
        moment.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"
    )


def _write_jsonl(path: Path, records: list[Any], tail: str = "") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    text = "".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in records) + tail
    path.write_text(text, encoding="utf-8")
    return path


class ClaudeWriter:
    """Records of one Claude Code session file, in order, with the envelope every line carries."""

    def __init__(self, session: str, cwd: Path, start: datetime, *, agent_id: str | None = None) -> None:
        self.session = session
        self.cwd = str(cwd)
        self.t = start
        self.agent_id = agent_id
        self.records: list[Any] = []
        self.last: str | None = None
        self.n = 0

    def _envelope(self, kind: str, sidechain: bool = False) -> dict[str, Any]:
        self.n += 1
        self.t += timedelta(seconds=3)
        uuid = f"{self.session[:8]}-{self.agent_id or 'main'}-{self.n:04d}"
        record: dict[str, Any] = {
            "parentUuid": self.last,
            "isSidechain": sidechain or self.agent_id is not None,
            "userType": "external",
            "cwd": self.cwd,
            "sessionId": self.session,
            "version": "2.1.226",
            "gitBranch": "main",
            "type": kind,
            "uuid": uuid,
            "timestamp": iso(self.t),
        }
        if self.agent_id is not None:
            record["agentId"] = self.agent_id
        self.last = uuid
        return record

    def user(self, content: Any, *, sidechain: bool = False, **extra: Any) -> None:
        record = self._envelope("user", sidechain)
        record["message"] = {"role": "user", "content": content}
        record.update(extra)
        self.records.append(record)

    def assistant(self, blocks: list[dict[str, Any]], *, sidechain: bool = False) -> None:
        record = self._envelope("assistant", sidechain)
        record["message"] = {
            "model": "claude-opus-4-6",
            "id": f"msg_01{self.n:06d}",
            "type": "message",
            "role": "assistant",
            "content": blocks,
            "stop_reason": "tool_use" if any(b["type"] == "tool_use" for b in blocks) else "end_turn",
            "usage": {"input_tokens": 12, "output_tokens": 40},
        }
        record["requestId"] = f"req_01{self.n:06d}"
        self.records.append(record)

    def bash(self, call_id: str, command: str, output: str, *, exit_code: int = 0, prose: str = "") -> None:
        blocks: list[dict[str, Any]] = []
        if prose:
            blocks.append({"type": "text", "text": prose})
        blocks.append(
            {
                "type": "tool_use",
                "id": call_id,
                "name": "Bash",
                "input": {"command": command, "description": "Run"},
            }
        )
        self.assistant(blocks)
        text = output if exit_code == 0 else f"Exit code {exit_code}\n{output}"
        self.user(
            [{"tool_use_id": call_id, "type": "tool_result", "content": text, "is_error": exit_code != 0}],
            toolUseResult={"stdout": output, "stderr": "", "interrupted": False, "isImage": False},
        )

    def say(self, text: str) -> None:
        self.assistant(
            [{"type": "thinking", "thinking": "hmm", "signature": "sig"}, {"type": "text", "text": text}]
        )

    def write(self, path: Path, tail: str = "") -> Path:
        return _write_jsonl(path, self.records, tail)


LONG_ANSWER = "\n".join(
    [
        "Here is the plan for the retry layer.",
        "",
        "## Backoff schedule",
        "",
        *(["The backoff doubles from 100 ms and is capped at 30 s so a dead upstream is not hammered."] * 20),
        "",
        "## Jitter",
        "",
        *(["Full jitter spreads the retries of many clients so they do not synchronise into waves."] * 20),
        "",
        "```python",
        "# not a heading inside a fence",
        "delay = random.uniform(0, base * 2 ** attempt)",
        "```",
        "",
        "## Idempotency keys",
        "",
        *(["Every POST carries an idempotency key so a retried request never charges a card twice."] * 20),
    ]
)


def write_claude(config_dir: Path, repo: Path, other: Path, start: datetime) -> dict[str, Any]:
    """A Claude Code config dir with sessions in REPO (main + three subagent layouts) and one in OTHER."""
    projects = config_dir / "projects"
    # Deliberately not the name Claude Code would compute: attribution must come from the records' cwd.
    folder = projects / "-some-lossy-encoded-name"
    w = ClaudeWriter(CLAUDE_SESSION, repo, start)
    w.records.append(
        {"type": "file-history-snapshot", "messageId": "x", "snapshot": {}, "isSnapshotUpdate": False}
    )
    w.user(
        "<system-reminder>Injected context: do not show.</system-reminder>why does test_cache_eviction fail?"
        f" my token is {SECRET}"
    )
    w.bash(
        "toolu_01FAIL",
        "pytest tests/test_cache.py -k eviction",
        "FAILED tests/test_cache.py::test_cache_eviction - AssertionError: lru kept 3 items",
        exit_code=1,
        prose="Let me run the eviction test.",
    )
    w.say(
        "The eviction test fails because the LRU cache never evicts: `maxsize` is read before the config"
        " loads. Fix: read it lazily in `Cache.__init__`."
    )
    w.bash("toolu_01PASS", "pytest tests/test_cache.py -k eviction", "1 passed")
    w.user("Caveat: The messages below were generated by the user while running local commands.", isMeta=True)
    w.user("<command-name>/clear</command-name>\n<command-message>clear</command-message>")
    w.user("plan the retry layer with backoff and jitter")
    w.assistant([{"type": "text", "text": LONG_ANSWER}])
    # Old layout: a sidechain inline in the main file.
    w.user("search the codebase for retry helpers", sidechain=True)
    w.assistant([{"type": "text", "text": "Found retry helpers in src/net/retry.py."}], sidechain=True)
    w.records.append({"type": "summary", "summary": "Cache eviction fix", "leafUuid": w.last})
    w.records.append({"type": "brand-new-record-kind", "data": 1})
    w.records.append("{this is not json")
    main = w.write(folder / f"{CLAUDE_SESSION}.jsonl", tail='{"type":"user","message":')  # cut mid-write

    # 2026 layout: <sessionId>/subagents/agent-<id>.jsonl
    sub = ClaudeWriter(CLAUDE_SESSION, repo, start + timedelta(minutes=1), agent_id="a1b2c3")
    sub.user("List every caller of Cache.get")
    sub.bash("toolu_01SUB", "grep -rn 'Cache.get' src", "src/app.py:12: cache.get(key)")
    sub.say("One caller: src/app.py line 12.")
    sub.write(folder / CLAUDE_SESSION / "subagents" / "agent-a1b2c3.jsonl")
    # Compaction run: skipped.
    comp = ClaudeWriter(CLAUDE_SESSION, repo, start, agent_id="acompact-9")
    comp.user("summarise the conversation so far COMPACTIONMARKER")
    comp.write(folder / CLAUDE_SESSION / "subagents" / "agent-acompact-9.jsonl")
    # 2025 layout: agent-<id>.jsonl beside the sessions.
    old = ClaudeWriter(CLAUDE_SESSION_2, repo, start + timedelta(minutes=2), agent_id="old123")
    old.user("Read the README and report the install steps")
    old.say("Install with pipx install ~/src/nexusmem.")
    old.write(folder / "agent-old123.jsonl")

    # Another project's session: never ours.
    elsewhere = ClaudeWriter("7a7a7a7a-0000-4000-8000-000000000000", other, start)
    elsewhere.user("OTHERPROJECT question about kubernetes")
    elsewhere.say("OTHERPROJECT answer")
    elsewhere.write(projects / "-other" / "7a7a7a7a-0000-4000-8000-000000000000.jsonl")
    return {"main": main, "folder": folder}


def write_codex(home: Path, repo: Path, other: Path, start: datetime) -> Path:
    """A CODEX_HOME with a rollout in REPO (boilerplate, a failing and a passing call) and one in OTHER."""

    def rollout(
        session: str, cwd: Path, items: list[tuple[str, dict[str, Any]]], *, source: Any = "cli"
    ) -> Path:
        t = start
        day = home / "sessions" / start.strftime("%Y/%m/%d")
        lines: list[Any] = []
        meta = {
            "id": session,
            "timestamp": iso(t),
            "cwd": str(cwd),
            "originator": "codex-tui",
            "cli_version": "0.125.0",
            "source": source,
            "model_provider": "openai",
            "base_instructions": {"text": "You are Codex... " * 50},
            "git": {"commit_hash": "1c478a6", "branch": "main", "repository_url": "git@github.com:o/app.git"},
        }
        lines.append({"timestamp": iso(t), "type": "session_meta", "payload": meta})
        for kind, payload in items:
            t += timedelta(seconds=2)
            lines.append({"timestamp": iso(t), "type": kind, "payload": payload})
        name = f"rollout-{start.strftime('%Y-%m-%dT%H-%M-%S')}-{session}.jsonl"
        return _write_jsonl(day / name, lines)

    def msg(role: str, text: str, **extra: Any) -> tuple[str, dict[str, Any]]:
        block = "output_text" if role == "assistant" else "input_text"
        return (
            "response_item",
            {"type": "message", "role": role, "content": [{"type": block, "text": text}], **extra},
        )

    items = [
        (
            "turn_context",
            {"turn_id": "t1", "cwd": str(repo), "model": "gpt-5.5", "approval_policy": "on-request"},
        ),
        msg("developer", "<permissions instructions>sandboxed</permissions instructions>"),
        msg("user", "# AGENTS.md instructions for the repo\n\nUse ruff."),
        msg("user", f"<environment_context>\n  <cwd>{repo}</cwd>\n</environment_context>"),
        msg("user", "run the migration tests"),
        ("event_msg", {"type": "user_message", "message": "run the migration tests"}),
        ("response_item", {"type": "reasoning", "summary": [], "encrypted_content": "gAAAA"}),
        (
            "response_item",
            {
                "type": "function_call",
                "name": "exec_command",
                "arguments": json.dumps({"cmd": "pytest tests/test_migrations.py -q", "workdir": str(repo)}),
                "call_id": "call_MIGFAIL",
            },
        ),
        (
            "response_item",
            {
                "type": "function_call_output",
                "call_id": "call_MIGFAIL",
                "output": "Chunk ID: ef0014\nWall time: 5.1 seconds\nProcess exited with code 1\nOutput:\n1 failed",
            },
        ),
        (
            "response_item",
            {
                "type": "function_call",
                "name": "shell",
                "arguments": json.dumps({"command": ["bash", "-lc", "git status --short"]}),
                "call_id": "call_STATUS",
            },
        ),
        (
            "response_item",
            {
                "type": "function_call_output",
                "call_id": "call_STATUS",
                "output": json.dumps(
                    {"output": " M src/db.py\n", "metadata": {"exit_code": 0, "duration_seconds": 0.1}}
                ),
            },
        ),
        (
            "response_item",
            {
                "type": "custom_tool_call",
                "name": "apply_patch",
                "call_id": "call_P",
                "input": "*** Begin Patch\n*** Update File: src/db.py\n@@\n-a\n+b\n*** End Patch",
            },
        ),
        msg(
            "assistant",
            "The migration test failed because migration 8 renames a column SQLite cannot drop; I rewrote it as a table copy.",
            phase="final_answer",
        ),
        (
            "event_msg",
            {"type": "agent_message", "message": "The migration test failed ...", "phase": "final_answer"},
        ),
        ("event_msg", {"type": "token_count", "info": None}),
        ("mystery_item", {"x": 1}),
    ]
    path = rollout(CODEX_SESSION, repo, items)
    rollout(
        "019dd8e4-0000-7000-8000-0000000000ff",
        other,
        [msg("user", "OTHERPROJECT codex question"), msg("assistant", "OTHERPROJECT codex answer")],
    )
    rollout(
        "019dd8e4-0000-7000-8000-00000000aaaa",
        repo,
        [msg("user", "check the lint config"), msg("assistant", "ruff is configured in pyproject.toml.")],
        source={"subagent": {"thread_spawn": {"parent_thread_id": CODEX_SESSION}}},
    )
    return path


def write_aider(repo: Path, start: datetime) -> Path:
    """.aider.chat.history.md (two sessions) and .aider.input.history in REPO (local time, as Aider writes)."""
    local = start.astimezone().replace(tzinfo=None)
    s1 = local.strftime("%Y-%m-%d %H:%M:%S")
    s2 = (local + timedelta(hours=1)).strftime("%Y-%m-%d %H:%M:%S")
    asked = (local + timedelta(seconds=40)).strftime("%Y-%m-%d %H:%M:%S.%f")
    two_spaces = "  "  # Aider joins the lines of one input with "  \n#### "
    chat = f"""
# aider chat started at {s1}

> Aider v0.86.1
> Model: gpt-4o with diff edit format
> Added src/app.py to the chat.

#### add a health endpoint{two_spaces}
#### that returns the version

Added `/health` in src/app.py, returning the package version.

> Applied edit to src/app.py
> Commit 3f2a1b9 feat: add health endpoint

#### /run pytest -q

> 3 passed

# aider chat started at {s2}

#### /add src/db.py

> Added src/db.py to the chat

#### why is the connection pool size 5?

The pool size is 5 because the SQLite writer lock serialises writes anyway.

> Run shell command? (Y)es/(N)o [Yes]: y
> Running python -m pytest tests/test_db.py
"""
    (repo / ".aider.chat.history.md").write_text(chat, encoding="utf-8")
    history = f"\n# {asked}\n+add a health endpoint\n+that returns the version\n"
    (repo / ".aider.input.history").write_text(history, encoding="utf-8")
    return repo / ".aider.chat.history.md"


def write_gemini(gemini_dir: Path, repo: Path, start: datetime, *, session: str = "gem-5e55-10n") -> Path:
    """~/.gemini/tmp/<sha256(root)>/chats/session-*.json for REPO."""
    digest = hashlib.sha256(str(repo).encode()).hexdigest()
    doc = {
        "sessionId": session,
        "projectHash": digest,
        "startTime": iso(start),
        "lastUpdated": iso(start + timedelta(minutes=1)),
        "messages": [
            {
                "id": "m1",
                "timestamp": iso(start),
                "type": "user",
                "content": "why does the build need node 20?",
            },
            {
                "id": "m2",
                "timestamp": iso(start + timedelta(seconds=5)),
                "type": "gemini",
                "content": "Vite 6 requires node 20 or newer; the lockfile pins it.",
                "model": "gemini-2.5-pro",
                "toolCalls": [
                    {
                        "id": "run_shell_command-1",
                        "name": "run_shell_command",
                        "args": {"command": "node --version"},
                        "status": "success",
                        "result": [
                            {
                                "functionResponse": {
                                    "response": {
                                        "output": "Command: node --version\nStdout: v18.19.0\nExit Code: 0"
                                    }
                                }
                            }
                        ],
                    }
                ],
            },
            {
                "id": "m3",
                "timestamp": iso(start + timedelta(seconds=9)),
                "type": "info",
                "content": "checkpoint",
            },
            "garbage",
        ],
    }
    path = gemini_dir / "tmp" / digest / "chats" / f"session-2026-11-29T10-00-{session}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


def gemini_jsonl_records(repo: Path, start: datetime, *, session: str) -> list[Any]:
    """The records of a current Gemini CLI session (chatRecordingService.ts since 2026-04, one JSON record per
    line): the metadata line, then each message as it is recorded: the person's question, the agent's reply
    written again whole once its tool call finished (same `id`), a `$set` of the metadata."""
    digest = hashlib.sha256(str(repo).encode()).hexdigest()
    reply = {
        "id": "g2",
        "timestamp": iso(start + timedelta(seconds=4)),
        "type": "gemini",
        "content": "",
        "model": "gemini-3-pro",
        "toolCalls": [
            {
                "id": "run_shell_command-7",
                "name": "run_shell_command",
                "args": {"command": "npm run lint"},
                "status": "executing",
                "timestamp": iso(start + timedelta(seconds=4)),
            }
        ],
    }
    done = json.loads(json.dumps(reply))
    done["content"] = "The lint step fails on the unused import in src/db.py."
    done["toolCalls"][0].update(
        status="success",
        result=[
            {
                "functionResponse": {
                    "id": "run_shell_command-7",
                    "name": "run_shell_command",
                    "response": {"output": "Output: 1 problem\nExit Code: 1\nProcess Group PGID: 77"},
                }
            }
        ],
        resultDisplay="1 problem",
    )
    return [
        {
            "sessionId": session,
            "projectHash": digest,
            "startTime": iso(start),
            "lastUpdated": iso(start),
            "kind": "main",
        },
        {
            "id": "g1",
            "timestamp": iso(start),
            "type": "user",
            "content": [{"text": "why does the lint step fail?"}],
        },
        reply,
        done,
        {"$set": {"lastUpdated": iso(start + timedelta(seconds=9))}},
    ]


def write_gemini_jsonl(
    gemini_dir: Path, repo: Path, start: datetime, *, session: str = "gem-1a7e-57e9", name: str = "my-repo"
) -> Path:
    """~/.gemini/tmp/<name>/chats/session-*.jsonl for REPO, in the current layout: the folder named by the
    project's short name, which `~/.gemini/projects.json` maps the root to and `.project_root` names."""
    folder = gemini_dir / "tmp" / name
    folder.mkdir(parents=True, exist_ok=True)
    (folder / ".project_root").write_text(str(repo), encoding="utf-8")
    registry = gemini_dir / "projects.json"
    known = json.loads(registry.read_text(encoding="utf-8")) if registry.exists() else {"projects": {}}
    known["projects"][str(repo)] = name
    registry.write_text(json.dumps(known, indent=2), encoding="utf-8")
    path = folder / "chats" / f"session-2026-12-05T12-05-{session[:8]}.jsonl"
    return _write_jsonl(path, gemini_jsonl_records(repo, start, session=session))
