"""One agent call, one node: Claude Code's Bash call seen by its hook (PostToolUseFailure on stdin of the
installed recorder) and in its transcript (tests/helpers/transcripts.py), synced through the real CLI in
every order. The hook's record (real exit code, duration, the call's own time) wins."""

from __future__ import annotations

import json
import subprocess
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from nexusmem import project as project_mod
from nexusmem.store.nodes import StoredNode

from helpers import commit, run_cli
from helpers import transcripts as T

SESSION = "ab5e55ed-0000-4000-8000-0000000000c1"
CALL = "toolu_01MERGE"
START = datetime.now(timezone.utc).replace(microsecond=0) - timedelta(hours=1)


@pytest.fixture
def repo_with_tests(repo: Path, isolated_home: Path) -> Path:
    commit(repo, "feat: cache", {"src/cache.py": "CACHE = {}\n", "tests/test_cache.py": "def test(): ...\n"})
    run_cli("hook", "agent", "install", "claude-code")
    return repo


def write_transcript(repo: Path, home: Path) -> None:
    """The session as Claude Code writes it: the raw command (`cd <repo> && …`), its failure as text."""
    w = T.ClaudeWriter(SESSION, repo, START)
    w.user("run the cache tests")
    w.bash(
        CALL,
        f"cd {repo} && pytest tests/test_cache.py -x",
        "FAILED tests/test_cache.py::test - KeyError",
        exit_code=1,
    )
    w.say("test_cache fails on a KeyError; the eviction path reads a key it never wrote.")
    w.write(home / ".claude" / "projects" / "-repo" / f"{SESSION}.jsonl")


def fire_hook(repo: Path, home: Path, command_line: str = "pytest tests/test_cache.py -x") -> None:
    """The same call as the hook sees it: Claude Code runs the installed command with the payload on stdin
    (COMMAND_LINE: what the agent ran after `cd <repo> &&`)."""
    settings = json.loads((home / ".claude" / "settings.json").read_text(encoding="utf-8"))
    (command,) = [
        h["command"]
        for group in settings["hooks"]["PostToolUseFailure"]
        for h in group["hooks"]
        if "agenthook" in h["command"]
    ]
    payload = {
        "session_id": SESSION,
        "transcript_path": str(home / ".claude" / "projects" / "-repo" / f"{SESSION}.jsonl"),
        "cwd": str(repo),
        "permission_mode": "default",
        "hook_event_name": "PostToolUseFailure",
        "tool_name": "Bash",
        "tool_input": {"command": f"cd {repo} && {command_line}", "description": "Run"},
        "tool_use_id": CALL,
        # The real code (pytest's 2 = interrupted/usage), where the transcript fixture says 1: which one is
        # stored shows whose record won.
        "error": "Exit code 2\nFAILED tests/test_cache.py::test - KeyError",
        "is_interrupt": False,
        "duration_ms": 1834,
    }
    done = subprocess.run(
        ["sh", "-c", command],
        input=json.dumps(payload).encode(),
        capture_output=True,
        timeout=30,
        check=False,
    )
    assert (done.returncode, done.stdout, done.stderr) == (0, b"", b"")


def sync(repo: Path, *extra: str) -> None:
    run_cli("-C", str(repo), "sync", "--no-embed", "--quiet", *extra)


def agent_calls(repo: Path) -> list[StoredNode]:
    with project_mod.load(repo).open_store(readonly=True) as store:
        return [
            n for n in store.iter_nodes("shell_command") if n.meta.get("call_id") or "agent:" in n.natural_key
        ]


def assert_the_hooks_record(repo: Path) -> StoredNode:
    (node,) = agent_calls(repo)
    assert node.natural_key == f"agent:claude-code:{CALL}"
    assert node.ref == "pytest tests/test_cache.py -x"  # canonical text, whichever way it was seen
    assert (node.meta["exit"], node.meta["duration_ms"], node.meta["cwd"]) == (2, 1834, ".")
    assert (node.meta["author"], node.meta["author_kind"]) == ("claude-code", "agent")
    assert "seen_in" not in node.meta
    assert node.ts > int(START.timestamp() * 1000) + 30 * 60_000  # the hook's time, not the transcript's
    # `--author claude-code` finds it, once.
    out = run_cli(
        "-C", str(repo), "query", "--json", "--author", "claude-code", "--", "pytest test_cache"
    ).stdout
    found = [i for i in json.loads(out)["items"] if i["kind"] == "shell_command"]
    assert [i["id"] for i in found] == [node.id]
    # precheck sees one failure, with the hook's exit code.
    out = run_cli("-C", str(repo), "precheck", "--json", "tests/test_cache.py").stdout
    (finding,) = [f for f in json.loads(out)["findings"] if f["kind"] == "failure"]
    assert (finding["command"], finding["exit"], finding["times"]) == ("pytest tests/test_cache.py -x", 2, 1)
    return node


def test_hook_line_first_then_the_transcript(repo_with_tests: Path, isolated_home: Path) -> None:
    repo = repo_with_tests
    fire_hook(repo, isolated_home)
    sync(repo)
    before = assert_the_hooks_record(repo)
    write_transcript(repo, isolated_home)
    # The preview agrees with the sync: the transcript's sighting would change nothing.
    preview = run_cli("-C", str(repo), "scan-conversation").stdout.strip().splitlines()[-1]
    assert preview.startswith("conversation: 1 new, 0 changed, 1 unchanged"), preview  # the turn is new
    sync(repo, "--conversation")
    after = assert_the_hooks_record(repo)
    assert after.id == before.id and after.body == before.body
    sync(repo, "--conversation", "--rebuild")  # a full re-read of both
    assert_the_hooks_record(repo)


def test_transcript_first_then_the_hook_line(repo_with_tests: Path, isolated_home: Path) -> None:
    repo = repo_with_tests
    write_transcript(repo, isolated_home)
    sync(repo, "--conversation")
    (seen,) = agent_calls(repo)
    assert seen.ref == "pytest tests/test_cache.py -x"  # `cd <repo> &&` moved into the cwd, as the hook does
    assert (seen.meta["exit"], seen.meta["duration_ms"], seen.meta["seen_in"]) == (1, None, "transcript")
    shown = run_cli("-C", str(repo), "show", seen.id).stdout
    assert "seen in transcript only" in shown
    fire_hook(repo, isolated_home)
    # Not synced yet: precheck reads the hook's line from the log's tail in place of the transcript's node.
    out = run_cli("-C", str(repo), "precheck", "--json", "tests/test_cache.py").stdout
    (finding,) = [f for f in json.loads(out)["findings"] if f["kind"] == "failure"]
    assert (finding["exit"], finding["times"]) == (2, 1)
    sync(repo, "--conversation")
    node = assert_the_hooks_record(repo)
    assert node.id == seen.id
    assert "seen in" not in run_cli("-C", str(repo), "show", node.id).stdout


def test_a_secret_in_the_hook_line_of_a_call_seen_in_its_transcript_is_never_shown(
    repo_with_tests: Path, isolated_home: Path
) -> None:
    """The hook's line, not synced yet, takes the transcript node's place (and id) in precheck's answer: its
    command is shown redacted like any other failure of the tail (it was shown as typed, secret and all,
    when only the tail's own `log:` ids counted as the tail's)."""
    repo = repo_with_tests
    key = "sk-" + "7Qx9" * 10
    write_transcript(repo, isolated_home)
    sync(repo, "--conversation")
    fire_hook(repo, isolated_home, f"pytest tests/test_cache.py -x --api-key={key}")
    for args in (["--json"], []):
        out = run_cli("-C", str(repo), "precheck", *args, "tests/test_cache.py")
        assert "7Qx97Qx9" not in out.stdout + out.stderr
    findings = json.loads(run_cli("-C", str(repo), "precheck", "--json", "tests/test_cache.py").stdout)
    (finding,) = [f for f in findings["findings"] if f["kind"] == "failure"]
    assert (finding["command"], finding["exit"]) == (
        "pytest tests/test_cache.py -x --api-key=«redacted:openai-key»",
        2,
    )
    sync(repo, "--conversation")  # the same answer from the store
    stored = json.loads(run_cli("-C", str(repo), "precheck", "--json", "tests/test_cache.py").stdout)
    assert [f for f in stored["findings"] if f["kind"] == "failure"] == [finding]


def test_both_in_one_sync(repo_with_tests: Path, isolated_home: Path) -> None:
    repo = repo_with_tests
    write_transcript(repo, isolated_home)
    fire_hook(repo, isolated_home)
    sync(repo, "--conversation")
    assert_the_hooks_record(repo)
    sync(repo, "--conversation")  # a re-sync changes nothing
    assert_the_hooks_record(repo)


def test_transcript_reads_status_echoes_and_pipes_as_the_hook_does(repo: Path, isolated_home: Path) -> None:
    commit(repo, "feat: lint", {"Makefile": "lint:\n\truff check .\n"})
    w = T.ClaudeWriter(SESSION, repo, START)
    w.user("lint it and run the tests")
    w.bash("toolu_01ECHO", f'cd "{repo / "src"}" && make lint; echo "EXIT:$?"', "ruff: 3 errors\nEXIT:3")
    w.bash("toolu_01TAIL", "pytest -x 2>&1 | tail -20", "1 failed")
    w.bash("toolu_01PIPE", 'pytest -q 2>&1 | tail -5; echo "EXIT:${PIPESTATUS[0]}"', "1 failed\nEXIT:1")
    w.write(isolated_home / ".claude" / "projects" / "-repo" / f"{SESSION}.jsonl")
    (repo / "src").mkdir(exist_ok=True)
    sync(repo, "--conversation")
    calls = {n.meta["call_id"]: n for n in agent_calls(repo)}
    echo, tail = calls["toolu_01ECHO"], calls["toolu_01TAIL"]
    assert (echo.ref, echo.meta["cwd"], echo.meta["exit"]) == ("make lint", "src", 3)  # read from EXIT:3
    assert (tail.ref, tail.meta["exit"]) == ("pytest -x", None)  # tail's status says nothing
    pipe = calls["toolu_01PIPE"]
    assert (pipe.ref, pipe.meta["exit"]) == ("pytest -q", 1)  # the first command's status, echoed
    with project_mod.load(repo).open_store(readonly=True) as store:
        (turn,) = store.iter_nodes("conversation_turn")
    assert "$ make lint (exit 3)" in turn.body and "$ pytest -x (exit unknown)" in turn.body


# --- Codex: its hook says nothing of the exit status, its rollout does -------------------------------------

CODEX_SESSION = "019dd8e4-15dd-7143-95e8-0000000000c2"


@pytest.fixture
def codex_repo(repo: Path, isolated_home: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("CODEX_HOME", str(isolated_home / ".codex"))
    commit(repo, "feat: cache", {"src/cache.py": "CACHE = {}\n", "tests/test_cache.py": "def test(): ...\n"})
    run_cli("hook", "agent", "install", "codex")
    return repo


# (call id, command, what it printed, its exit code): a failing run, then the same run passing.
CODEX_CALLS = [
    (
        "call_FAIL",
        "pytest tests/test_cache.py -x",
        "F\nFAILED tests/test_cache.py::test - KeyError\n1 failed",
        1,
    ),
    ("call_PASS", "pytest tests/test_cache.py -x", "1 passed", 0),
]


def fire_codex(repo: Path, home: Path, call_id: str, command: str, printed: str) -> None:
    """Codex's PostToolUse for a shell call, run through the installed hook as Codex runs it: `tool_response`
    is the command's output as a plain string, with no exit code (openai/codex
    core/src/tools/context.rs: ExecCommandToolOutput::post_tool_use_response)."""
    data = json.loads((home / ".codex" / "hooks.json").read_text(encoding="utf-8"))
    (hook,) = [
        h["command"] for g in data["hooks"]["PostToolUse"] for h in g["hooks"] if "agenthook" in h["command"]
    ]
    payload = {
        "session_id": CODEX_SESSION,
        "turn_id": "t1",
        "transcript_path": None,
        "cwd": str(repo),
        "hook_event_name": "PostToolUse",
        "model": "gpt-5.5",
        "permission_mode": "default",
        "tool_name": "Bash",
        "tool_input": {"command": command},
        "tool_response": printed,
        "tool_use_id": call_id,
    }
    done = subprocess.run(
        ["sh", "-c", hook], input=json.dumps(payload).encode(), capture_output=True, timeout=30
    )
    assert (done.returncode, done.stdout, done.stderr) == (0, b"", b"")


def write_rollout(
    repo: Path, home: Path, calls: list[tuple[str, str, str, int]], *, polled: frozenset[str] = frozenset()
) -> None:
    """The same session's rollout: each call and its function_call_output, which says how it exited. A call
    in POLLED ran longer than exec_command waits: its output says it is still running, and a later
    write_stdin poll of its session gets the exit code."""
    t = START
    day = home / ".codex" / "sessions" / START.strftime("%Y/%m/%d")
    records: list[tuple[str, dict[str, object]]] = [
        ("session_meta", {"id": CODEX_SESSION, "timestamp": T.iso(t), "cwd": str(repo), "source": "cli"}),
        ("turn_context", {"turn_id": "t1", "cwd": str(repo), "model": "gpt-5.5"}),
        (
            "response_item",
            {
                "type": "message",
                "role": "user",
                "content": [{"type": "input_text", "text": "fix the cache test"}],
            },
        ),
    ]
    for call_id, command, printed, code in calls:
        arguments = json.dumps({"cmd": command, "workdir": str(repo)})
        records.append(
            (
                "response_item",
                {"type": "function_call", "name": "exec_command", "arguments": arguments, "call_id": call_id},
            )
        )
        output = (
            f"Chunk ID: ef0014\nWall time: 1.2 seconds\nProcess exited with code {code}\nOutput:\n{printed}"
        )
        if call_id in polled:
            session = 40 + len(records)
            running = (
                f"Chunk ID: ef0015\nWall time: 10.0 seconds\nProcess running with session ID {session}\n"
            )
            # What it printed so far (a line that looks like a status means nothing yet).
            running += "Original token count: 5\nOutput:\ncollected 31 items\nExit code: 0 of the fixture\n"
            records.append(
                ("response_item", {"type": "function_call_output", "call_id": call_id, "output": running})
            )
            poll = json.dumps({"session_id": session, "chars": "", "yield_time_ms": 30000})
            records.append(
                (
                    "response_item",
                    {
                        "type": "function_call",
                        "name": "write_stdin",
                        "arguments": poll,
                        "call_id": f"{call_id}_poll",
                    },
                )
            )
            call_id = f"{call_id}_poll"
        records.append(
            ("response_item", {"type": "function_call_output", "call_id": call_id, "output": output})
        )
    lines = []
    for kind, payload in records:
        t += timedelta(seconds=2)
        lines.append(json.dumps({"timestamp": T.iso(t), "type": kind, "payload": payload}))
    day.mkdir(parents=True, exist_ok=True)
    (day / f"rollout-{START.strftime('%Y-%m-%dT%H-%M-%S')}-{CODEX_SESSION}.jsonl").write_text(
        "\n".join(lines) + "\n", encoding="utf-8"
    )


def codex_calls(repo: Path) -> dict[str, StoredNode]:
    return {n.natural_key.rsplit(":", 1)[-1]: n for n in agent_calls(repo)}


def fire_all(repo: Path, home: Path, calls: list[tuple[str, str, str, int]]) -> None:
    for call_id, command, printed, _ in calls:
        fire_codex(repo, home, call_id, command, printed)


def failure_found(repo: Path) -> tuple[str, int | None, int]:
    out = run_cli("-C", str(repo), "precheck", "--json", "tests/test_cache.py").stdout
    (finding,) = [f for f in json.loads(out)["findings"] if f["kind"] == "failure"]
    return finding["command"], finding["exit"], finding["times"]


@pytest.mark.parametrize("order", ["hook first", "transcript first", "one sync"])
def test_a_codex_call_takes_its_exit_code_from_the_rollout(
    codex_repo: Path, isolated_home: Path, order: str
) -> None:
    """Codex's hook line says "exit unknown"; the rollout of the same call (same call id) says 1. The one node
    is the hook's (its time, no `seen_in`) with the rollout's exit code, whichever was synced first, and
    precheck sees the failure."""
    repo = codex_repo
    failing = CODEX_CALLS[:1]
    if order == "hook first":
        fire_all(repo, isolated_home, failing)
        sync(repo)
        assert codex_calls(repo)["call_FAIL"].meta["exit"] is None  # all the hook can tell
        write_rollout(repo, isolated_home, failing)
    elif order == "transcript first":
        write_rollout(repo, isolated_home, failing)
        sync(repo, "--conversation")
        fire_all(repo, isolated_home, failing)
        # Not synced yet: precheck reads the hook's line in place of the rollout's node, with its exit code.
        assert failure_found(repo) == ("pytest tests/test_cache.py -x", 1, 1)
    else:
        write_rollout(repo, isolated_home, failing)
        fire_all(repo, isolated_home, failing)
    sync(repo, "--conversation")
    for _ in range(2):  # a second sync changes nothing
        (failed,) = codex_calls(repo).values()
        assert failed.meta["exit"] == 1
        assert failed.title == "pytest tests/test_cache.py -x (exit 1)"
        assert "exit 1" in failed.body and "exit unknown" not in failed.body
        assert "seen_in" not in failed.meta and failed.meta["shell"] == "codex"  # the hook's record
        assert failed.ts > int(START.timestamp() * 1000) + 30 * 60_000  # the hook's time, not the rollout's
        assert "seen in" not in run_cli("-C", str(repo), "show", failed.id).stdout
        assert failure_found(repo) == ("pytest tests/test_cache.py -x", 1, 1)
        sync(repo, "--conversation")
    preview = run_cli("-C", str(repo), "scan-conversation").stdout.strip().splitlines()[-1]
    assert preview.startswith("conversation: 0 new, 0 changed"), preview


def test_a_codex_failure_and_its_passing_retry_are_linked(codex_repo: Path, isolated_home: Path) -> None:
    """The failure the rollout revealed is linked to the run that passed after it (failure → fix), and a
    hook line synced again (`sync --rebuild`) keeps the exit code its rollout gave."""
    repo = codex_repo
    fire_all(repo, isolated_home, CODEX_CALLS)
    sync(repo)
    write_rollout(repo, isolated_home, CODEX_CALLS)
    preview = run_cli("-C", str(repo), "scan-conversation").stdout.strip().splitlines()[-1]
    assert preview.startswith("conversation: 1 new, 2 changed"), preview  # the turn, and both exit codes
    for args in (["--conversation"], ["--conversation", "--rebuild"]):
        sync(repo, "--link-failures", *args)
        calls = codex_calls(repo)
        failed, passed = calls["call_FAIL"], calls["call_PASS"]
        assert (failed.meta["exit"], passed.meta["exit"]) == (1, 0)
        shown = run_cli("-C", str(repo), "show", failed.id).stdout
        assert f"fixed by {passed.id} (retry)" in shown


def test_a_codex_rollout_reads_status_echoes_as_the_hook_does(codex_repo: Path, isolated_home: Path) -> None:
    """`cmd; echo "EXIT:$?"` exits 0 (the echo's status): the command's own code is the echoed line, read
    back from a Codex rollout as from a Claude Code transcript and from either agent's hook (it was stored as
    exit unknown); a pipe into tail still leaves it unknown."""
    repo = codex_repo
    calls = [
        ("call_ECHO", 'pytest tests/test_cache.py -x; echo "EXIT:$?"', "F\n1 failed, 30 passed\nEXIT:1", 0),
        ("call_TAIL", "pytest tests/test_cache.py -x 2>&1 | tail -5", "1 failed, 30 passed", 0),
    ]
    write_rollout(repo, isolated_home, calls)
    sync(repo, "--conversation")
    found = {k: (n.ref, n.meta["exit"]) for k, n in codex_calls(repo).items()}
    assert found == {
        "call_ECHO": ("pytest tests/test_cache.py -x", 1),
        "call_TAIL": ("pytest tests/test_cache.py -x", None),
    }
    with project_mod.load(repo).open_store(readonly=True) as store:
        (turn,) = store.iter_nodes("conversation_turn")
    assert "$ pytest tests/test_cache.py -x (exit 1)" in turn.body
    # The hook's lines of the same calls say the same.
    fire_all(repo, isolated_home, calls)
    sync(repo, "--conversation")
    assert {k: (n.ref, n.meta["exit"], "seen_in" in n.meta) for k, n in codex_calls(repo).items()} == {
        "call_ECHO": ("pytest tests/test_cache.py -x", 1, False),
        "call_TAIL": ("pytest tests/test_cache.py -x", None, False),
    }


def test_a_long_codex_call_takes_its_exit_code_from_the_poll_that_saw_it_end(
    codex_repo: Path, isolated_home: Path
) -> None:
    """A call that runs longer than exec_command waits (10 s by default: a test suite) is left running; a
    later write_stdin poll of its session says how it exited, and Codex's hook fires then, under the first
    call's id. The rollout's code was lost (the call's own output says "running"): the hook's record stayed
    exit unknown."""
    repo = codex_repo
    failing = CODEX_CALLS[:1]
    fire_all(repo, isolated_home, failing)
    write_rollout(repo, isolated_home, failing, polled=frozenset({"call_FAIL"}))
    sync(repo, "--conversation")
    (failed,) = codex_calls(repo).values()
    assert (failed.meta["exit"], "seen_in" in failed.meta) == (1, False)
    assert failure_found(repo) == ("pytest tests/test_cache.py -x", 1, 1)
