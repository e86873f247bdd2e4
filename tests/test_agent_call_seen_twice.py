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
    w.write(isolated_home / ".claude" / "projects" / "-repo" / f"{SESSION}.jsonl")
    (repo / "src").mkdir(exist_ok=True)
    sync(repo, "--conversation")
    calls = {n.meta["call_id"]: n for n in agent_calls(repo)}
    echo, tail = calls["toolu_01ECHO"], calls["toolu_01TAIL"]
    assert (echo.ref, echo.meta["cwd"], echo.meta["exit"]) == ("make lint", "src", 3)  # read from EXIT:3
    assert (tail.ref, tail.meta["exit"]) == ("pytest -x", None)  # tail's status says nothing
    with project_mod.load(repo).open_store(readonly=True) as store:
        (turn,) = store.iter_nodes("conversation_turn")
    assert "$ make lint (exit 3)" in turn.body and "$ pytest -x (exit unknown)" in turn.body
