"""The coding agents' command hooks: installed into real settings files, the recorder run exactly as Claude
Code and Codex run it (the hook command from the installed file, through a shell, the payload on stdin),
synced into a real repository's memory, filtered by --author through the CLI and the real MCP client."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import time
from pathlib import Path
from typing import Any

import anyio
import pytest

from nexusmem import authors, precheck, sync
from nexusmem.install import agent_hooks
from nexusmem.paths import shell_log_path
from nexusmem.sources.shell.agentcmd import canonical, log_line
from nexusmem.sources.shell.logline import parse_log_line
from nexusmem.sources.shell.node import agent_call_key

from helpers import commit, git, run_cli
from helpers.mcp import mcp_session


def claude_settings(home: Path) -> Path:
    return home / ".claude" / "settings.json"


def installed_command(settings: Path, event: str) -> str:
    """The command the agent will run for EVENT, read back from the settings file as the agent reads it."""
    data = json.loads(settings.read_text(encoding="utf-8"))
    commands = [h["command"] for g in data["hooks"][event] for h in g["hooks"] if "agenthook" in h["command"]]
    assert len(commands) == 1, commands
    return commands[0]


def fire(command: str, payload: dict[str, Any] | bytes) -> subprocess.CompletedProcess[bytes]:
    """Run a hook command as the agents do: `sh -c COMMAND`, the payload JSON on stdin."""
    data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    return subprocess.run(["sh", "-c", command], input=data, capture_output=True, timeout=30, check=False)


def log_lines() -> list[dict[str, Any]]:
    path = shell_log_path()
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def claude_success(cwd: Path, command: str, tool_use_id: str, stdout: str = "ok") -> dict[str, Any]:
    # The live-probed shape (Claude Code 2.1.226): no exit code, no time.
    return {
        "session_id": "sess-1",
        "transcript_path": "/tmp/t/sess-1.jsonl",
        "cwd": str(cwd),
        "permission_mode": "default",
        "hook_event_name": "PostToolUse",
        "tool_name": "Bash",
        "tool_input": {"command": command, "description": "run it"},
        "tool_response": {
            "stdout": stdout,
            "stderr": "",
            "interrupted": False,
            "isImage": False,
            "noOutputExpected": False,
        },
        "tool_use_id": tool_use_id,
        "duration_ms": 17,
    }


def claude_failure(
    cwd: Path, command: str, tool_use_id: str, error: str, interrupt: bool = False
) -> dict[str, Any]:
    return {
        "session_id": "sess-1",
        "transcript_path": "/tmp/t/sess-1.jsonl",
        "cwd": str(cwd),
        "prompt_id": "p1",
        "permission_mode": "default",
        "effort": "medium",
        "hook_event_name": "PostToolUseFailure",
        "tool_name": "Bash",
        "tool_input": {"command": command, "description": "run it"},
        "tool_use_id": tool_use_id,
        "error": error,
        "is_interrupt": interrupt,
        "duration_ms": 42,
    }


def codex_post(cwd: Path, command: str, call_id: str, response: Any) -> dict[str, Any]:
    # openai/codex hooks/schema/generated/post-tool-use.command.input.schema.json: the required keys.
    return {
        "cwd": str(cwd),
        "hook_event_name": "PostToolUse",
        "model": "gpt-5-codex",
        "permission_mode": "default",
        "session_id": "019a-codex",
        "tool_input": {"command": command},
        "tool_name": "Bash",
        "tool_response": response,
        "tool_use_id": call_id,
        "transcript_path": None,
        "turn_id": "t1",
    }


# --- the recorder, driven as each agent drives it ------------------------------------------------------


def test_claude_code_calls_are_recorded_with_real_exit_codes(repo: Path, isolated_home: Path) -> None:
    run_cli("hook", "agent", "install", "claude-code")
    settings = claude_settings(isolated_home)
    post, failure = (
        installed_command(settings, "PostToolUse"),
        installed_command(settings, "PostToolUseFailure"),
    )
    sub = repo / "src"
    sub.mkdir()
    calls = [
        (post, claude_success(repo, "git status", "toolu_A")),
        (failure, claude_failure(repo, "ls ./no-such-dir-xyz", "toolu_B", "Exit code 2\nls: cannot access")),
        (failure, claude_failure(repo, "sleep 100", "toolu_C", "Interrupted by user", interrupt=True)),
        (failure, claude_failure(repo, "npm test", "toolu_D", "Command timed out after 2m 0.0s")),
        (post, claude_success(repo, "pytest -x 2>&1 | tail -20", "toolu_E")),
        (
            post,
            claude_success(repo, f'cd "{sub}" && make lint; echo "EXIT:$?"', "toolu_F", "lint...\nEXIT:3"),
        ),
    ]
    for command, payload in calls:
        done = fire(command, payload)
        assert (done.returncode, done.stdout, done.stderr) == (0, b"", b"")
    lines = {line["call_id"]: line for line in log_lines()}
    assert [lines[k]["exit"] for k in ("toolu_A", "toolu_B", "toolu_C", "toolu_D", "toolu_E", "toolu_F")] == [
        0,
        2,  # parsed from "Exit code 2", not forced to 1
        None,  # an interrupt is not a failure
        None,  # a timeout has no code
        None,  # the status is tail's
        3,  # read back from the echoed line
    ]
    assert lines["toolu_E"]["command"] == "pytest -x"
    assert (lines["toolu_F"]["command"], lines["toolu_F"]["cwd"]) == ("make lint", str(sub))
    assert lines["toolu_C"]["interrupted"] is True
    assert all(line["author"] == "claude-code" and line["author_kind"] == "agent" for line in lines.values())
    log = shell_log_path()
    assert stat.S_IMODE(log.stat().st_mode) == 0o600 and stat.S_IMODE(log.parent.stat().st_mode) == 0o700

    # Synced: shell_command nodes with the agent as author, keyed by the call id.
    commit(repo, "feat: start", {"src/app.py": "x = 1\n"})
    sync.sync(repo)
    out = run_cli(
        "-C", str(repo), "query", "--json", "--author", "claude-code", "--", "no-such-dir-xyz"
    ).stdout
    items = json.loads(out)["items"]
    assert items and items[0]["kind"] == "shell_command" and "ls ./no-such-dir-xyz" in items[0]["title"]
    from nexusmem.project import load

    with load(repo).open_store() as store:
        node = store.get(items[0]["id"])
        assert node is not None
        assert (node.meta["author"], node.meta["author_kind"], node.meta["exit"]) == (
            "claude-code",
            "agent",
            2,
        )
        assert node.natural_key == agent_call_key("claude-code", "toolu_B")


# A test run that fails with 2 (pytest's usage error), printing a last line as pytest does.
FAILING_RUN = "python3 -c 'import sys; print(\"1 failed, 30 passed\"); sys.exit(2)'"


@pytest.mark.parametrize(
    ("shell", "tail", "expected"),
    [
        # The echo reports the first command's status: that command's own once `| tail` goes.
        ("bash", '2>&1 | tail -5; echo "EXIT:${PIPESTATUS[0]}"', (FAILING_RUN, 2)),
        ("zsh", '2>&1 | tail -5; echo "EXIT:$pipestatus[1]"', (FAILING_RUN, 2)),
        ("zsh", '| tee log; echo "EXIT:${pipestatus[1]}"', (FAILING_RUN, 2)),
        # The first command's status says nothing of a pipeline that is still one.
        ("bash", '| grep passed; echo "EXIT:${PIPESTATUS[0]}"', (f"{FAILING_RUN} | grep passed", None)),
        (
            "bash",
            '| tail -5 | grep -c x; echo "EXIT:${PIPESTATUS[0]}"',
            (f"{FAILING_RUN} | tail -5 | grep -c x", None),
        ),
        # Another stage's status, all of them, or a shell that does not have the array: unknown, not 0.
        ("bash", '| tail -5; echo "EXIT:${PIPESTATUS[1]}"', None),
        ("bash", '| tail -5; echo "EXIT:${PIPESTATUS[@]}"', None),
        ("bash", '| tail -5; echo "EXIT:$pipestatus[1]"', (FAILING_RUN, None)),
        ("zsh", '| tail -5; echo "EXIT:${PIPESTATUS[0]}"', (FAILING_RUN, None)),
    ],
)
def test_a_pipelines_first_status_echoed_is_read_only_when_it_is_the_commands(
    repo: Path, isolated_home: Path, shell: str, tail: str, expected: tuple[str, int | None] | None
) -> None:
    """`pytest -x 2>&1 | tail -5; echo "EXIT:${PIPESTATUS[0]}"` ends 0 (the echo's status) and printed EXIT:2:
    it was stored as exit 0. The output is what the real shell prints for the command."""
    if shutil.which(shell) is None:
        pytest.skip(f"no {shell}")
    command = f"{FAILING_RUN} {tail}"
    printed = subprocess.run(
        [shell, "-c", command], cwd=repo, capture_output=True, text=True, timeout=30, check=False
    ).stdout
    run_cli("hook", "agent", "install", "claude-code")
    post = installed_command(claude_settings(isolated_home), "PostToolUse")
    done = fire(post, claude_success(repo, command, "toolu_PIPE", printed))
    assert (done.returncode, done.stdout, done.stderr) == (0, b"", b"")
    (line,) = log_lines()
    if expected is None:
        assert line["exit"] is None  # the command as typed, echo and all: nothing read from it
    else:
        assert (line["command"], line["exit"]) == expected


def test_codex_calls_are_recorded(repo: Path, isolated_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    codex_home = isolated_home / "codex-home"
    monkeypatch.setenv("CODEX_HOME", str(codex_home))
    run_cli("hook", "agent", "install", "codex")
    command = installed_command(codex_home / "hooks.json", "PostToolUse")
    data = json.loads((codex_home / "hooks.json").read_text(encoding="utf-8"))
    assert set(data["hooks"]) == {"PostToolUse"} and data["hooks"]["PostToolUse"][0]["matcher"] == "^Bash$"
    payloads = [
        codex_post(repo, "cargo test", "call_1", {"exitCode": 101, "stdout": "test failed"}),
        codex_post(
            repo, "ls", "call_2", "Chunk ID: 1\nWall time: 0.1s\nProcess exited with code 0\nOutput:\na"
        ),
        codex_post(repo, "true", "call_3", True),  # untyped in the schema: nothing to read
        {**codex_post(repo, "cat a", "call_4", {}), "tool_name": "apply_patch"},  # not a shell call
        # The older shell tool's header.
        codex_post(
            repo, "make", "call_5", "Exit code: 2\nWall time: 0.3 seconds\nOutput:\nmake: *** Error 2"
        ),
        # What Codex sends for exec_command: the bare output, which may print such a line of its own.
        codex_post(repo, "grep -rn code logs", "call_6", "logs/a.log:3:Process exited with code 0\n"),
        codex_post(repo, "cat notes.txt", "call_7", "Exit code: 0\nWall time: soon\nthat was the plan"),
        # A status echoed by the command: read back from the output's last line, as for Claude Code.
        codex_post(repo, 'pytest -x; echo "EXIT:$?"', "call_8", "F\n1 failed, 30 passed\nEXIT:1"),
    ]
    for payload in payloads:
        assert fire(command, payload).returncode == 0
    lines = {line["call_id"]: line for line in log_lines()}
    assert {k: v["exit"] for k, v in lines.items()} == {
        "call_1": 101,
        "call_2": 0,
        "call_3": None,
        "call_5": 2,
        "call_6": None,  # the output's words, not Codex's header: the status is unknown
        "call_7": None,
        "call_8": 1,
    }
    assert lines["call_8"]["command"] == "pytest -x"
    assert all(v["author"] == "codex" and v["session"] == "019a-codex" for v in lines.values())


def test_the_recorder_never_gets_in_the_agents_way(
    repo: Path, isolated_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run_cli("hook", "agent", "install", "claude-code")
    post = installed_command(claude_settings(isolated_home), "PostToolUse")
    big = claude_success(repo, "cat big.log", "toolu_big", stdout="x" * (2 << 20))  # 2 MB: over the 1 MB cap
    for payload in (big, b"not json {", b"", b"[1, 2]", b"[" * 100_000, {"hook_event_name": "PostToolUse"}):
        started = time.monotonic()
        done = fire(post, payload)
        assert (done.returncode, done.stdout, done.stderr) == (0, b"", b"")
        assert time.monotonic() - started < 10
    assert log_lines() == []
    # A log that cannot be written (its folder is a file): still exit 0 and silent.
    blocker = isolated_home / "blocker"
    blocker.write_text("in the way", encoding="utf-8")
    monkeypatch.setenv("NEXUSMEM_HOME", str(blocker / "nm"))
    done = fire(post, claude_success(repo, "git status", "toolu_X"))
    assert (done.returncode, done.stdout, done.stderr) == (0, b"", b"")
    # Another user's open folder: silent too, and nothing of ours written into it.
    if os.geteuid() == 0:
        theirs = isolated_home / "theirs"
        theirs.mkdir()
        theirs.chmod(0o777)
        os.chown(theirs, 12345, 12345)
        monkeypatch.setenv("NEXUSMEM_HOME", str(theirs))
        done = fire(post, claude_success(repo, "git status", "toolu_Y"))
        assert (done.returncode, done.stdout, done.stderr) == (0, b"", b"")
        assert list(theirs.iterdir()) == []
        # `sudo -E claude`: root with the user's folder to make inside their tree: nothing made (a root-owned
        # folder there kept the user's own shells from recording anything).
        monkeypatch.setenv("NEXUSMEM_HOME", str(theirs / "nm"))
        monkeypatch.setenv("SUDO_UID", "12345")
        theirs.chmod(0o755)
        done = fire(post, claude_success(repo, "git status", "toolu_Z"))
        assert (done.returncode, done.stdout, done.stderr) == (0, b"", b"")
        assert list(theirs.iterdir()) == []


def test_the_recorder_imports_only_the_stdlib_and_agentcmd(repo: Path, isolated_home: Path) -> None:
    run_cli("hook", "agent", "install", "claude-code")
    post = installed_command(claude_settings(isolated_home), "PostToolUse")
    probe = post.replace(" -I -S ", " -I -S -X importtime ", 1)
    done = fire(probe, claude_success(repo, "git status", "toolu_I"))
    loaded = {line.split("|")[-1].strip() for line in done.stderr.decode().splitlines() if "|" in line}
    ours = {name for name in loaded if name.startswith("nexusmem")}
    assert ours == {
        "nexusmem",
        "nexusmem.sources",
        "nexusmem.sources.shell",
        "nexusmem.sources.shell.agentcmd",
    }
    assert not {"click", "sqlite3", "mcp", "numpy", "site", "subprocess", "re", "json", "typing"} & loaded


# --- canonical text and log-line parsing -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ('cd /home/u/app && pytest -x; echo "EXIT:$?"', ("pytest -x", "/home/u/app", True, False)),
        ("pytest 2>&1 | head -100", ("pytest", "/repo", False, True)),
        ('echo "a|b" | grep a', ('echo "a|b" | grep a', "/repo", False, False)),
        ("make test || true", ("make test || true", "/repo", False, False)),
        ("cd sub && ls | tee out; echo exit=$?", ("ls", "/repo/sub", True, True)),
        ("cd $(mktemp -d) && ls", ("cd $(mktemp -d) && ls", "/repo", False, False)),
        ("echo $?", ("echo $?", "/repo", False, False)),
    ],
)
def test_canonical_command(raw: str, expected: tuple[str, str, bool, bool]) -> None:
    assert canonical(raw, "/repo") == expected


def test_log_line_author_keys_are_range_checked() -> None:
    base = {"ts": 1_700_000_000_000, "cwd": "/r", "command": "ls", "exit": 0, "shell": "zsh", "session": "s"}
    plain = parse_log_line(json.dumps(base).encode())
    assert plain is not None and (plain.author, plain.author_kind, plain.call_id) == ("me", "human", None)
    agent = parse_log_line(
        json.dumps({**base, "author": "codex", "author_kind": "agent", "call_id": "c1"}).encode()
    )
    assert agent is not None and (agent.author, agent.author_kind, agent.call_id) == ("codex", "agent", "c1")
    for bad in ({"author": 7}, {"author": ""}, {"author": "x" * 65}, {"author": "\ud800"}):
        line = parse_log_line(json.dumps({**base, **bad}).encode())
        assert line is not None and line.author == "me", bad  # out of range reads as absent; the line stays
    odd = parse_log_line(
        json.dumps({**base, "author": "aider", "author_kind": "robot", "call_id": 5}).encode()
    )
    assert odd is not None and (odd.author, odd.author_kind, odd.call_id) == ("aider", "agent", None)


def test_payloads_that_are_not_shell_calls_give_no_line() -> None:
    now = 1_700_000_000_000
    good = {
        "hook_event_name": "PostToolUse",
        "tool_name": "Bash",
        "cwd": "/r",
        "tool_input": {"command": "ls"},
    }
    assert log_line("claude-code", good, now) is not None
    for bad in (
        {**good, "tool_name": "Edit"},
        {**good, "hook_event_name": "PreToolUse"},
        {**good, "tool_input": {"command": "a\x00b"}},
        {**good, "tool_input": {"command": "   "}},
        {**good, "cwd": 3},
        [good],
    ):
        assert log_line("claude-code", bad, now) is None
    assert log_line("gemini", good, now) is None


# --- install / remove, byte for byte -------------------------------------------------------------------


ODD = '{\r\n\t"model": "opus",\r\n\t"env": {"NAME": "é", "X": "\\u00e9"},\r\n\t"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "say done"}]}]}\r\n}'


@pytest.mark.parametrize(
    "original",
    [
        None,
        "",
        "{}",
        '{\n  "model": "opus",\n  "permissions": {"allow": ["Bash(git log:*)"]}\n}\n',
        ODD,
        '{"hooks": {"PostToolUse": [{"matcher": "Edit", "hooks": [{"type": "command", "command": "fmt"}]}]}}',
    ],
)
def test_install_then_remove_is_byte_for_byte(isolated_home: Path, original: str | None) -> None:
    settings = claude_settings(isolated_home)
    if original is not None:
        settings.parent.mkdir(parents=True)
        settings.write_bytes(original.encode())
    run_cli("hook", "agent", "install", "claude-code")
    after_install = settings.read_bytes()
    data = json.loads(after_install.decode().lstrip("\ufeff"))
    assert set(data["hooks"]) >= {"PostToolUse", "PostToolUseFailure"}
    if original:
        kept = json.loads(original) if original.strip() else {}
        assert {k: v for k, v in data.items() if k != "hooks"} == {
            k: v for k, v in kept.items() if k != "hooks"
        }
    again = run_cli("hook", "agent", "install", "claude-code").stdout
    assert "already" in again and settings.read_bytes() == after_install  # idempotent
    run_cli("hook", "agent", "remove", "claude-code")
    if original is None:
        assert not settings.exists() and not settings.parent.exists()
    else:
        assert settings.read_bytes() == original.encode()
    assert "nothing to do" in run_cli("hook", "agent", "remove", "claude-code").stdout


def test_settings_kept_as_a_link_by_a_dotfile_manager_stay_a_link(isolated_home: Path) -> None:
    settings = claude_settings(isolated_home)
    kept = isolated_home / "dotfiles" / "claude-settings.json"
    kept.parent.mkdir(parents=True)
    kept.write_bytes(b'{"model": "opus"}\n')
    settings.parent.mkdir(parents=True)
    settings.symlink_to(kept)
    run_cli("hook", "agent", "install", "claude-code")
    assert settings.is_symlink() and "PostToolUse" in kept.read_text(encoding="utf-8")
    run_cli("hook", "agent", "remove", "claude-code")
    assert settings.is_symlink() and kept.read_bytes() == b'{"model": "opus"}\n'


def test_formatting_is_kept_and_an_edit_in_between_survives_remove(isolated_home: Path) -> None:
    settings = claude_settings(isolated_home)
    settings.parent.mkdir(parents=True)
    settings.write_bytes(ODD.encode())
    run_cli("hook", "agent", "install", "claude-code")
    text = settings.read_bytes().decode()
    assert text.startswith('{\r\n\t"model": "opus",\r\n\t"env": {\r\n\t\t"NAME": "é"') and not text.endswith(
        "\n"
    )
    # The user (or Claude Code itself) changes a setting while the hook is installed.
    data = json.loads(text)
    data["model"] = "sonnet"
    settings.write_text(json.dumps(data, indent="\t").replace("\n", "\r\n"), encoding="utf-8", newline="")
    run_cli("hook", "agent", "remove", "claude-code")
    left = json.loads(settings.read_text(encoding="utf-8"))
    assert left["model"] == "sonnet"  # their edit stays
    assert left["hooks"] == {"Stop": [{"hooks": [{"type": "command", "command": "say done"}]}]}  # ours gone
    assert b"\r\n\t" in settings.read_bytes()


def test_a_corrupt_settings_file_is_an_error_and_untouched(isolated_home: Path) -> None:
    settings = claude_settings(isolated_home)
    settings.parent.mkdir(parents=True)
    settings.write_bytes(b'{"model": "opus",,}')
    for verb in ("install", "remove", "status"):
        result = run_cli("hook", "agent", verb, "claude-code", ok=False)
        assert result.exit_code != 0 and "not valid JSON" in result.output and str(settings) in result.output
    assert settings.read_bytes() == b'{"model": "opus",,}'
    settings.write_bytes(b'{"hooks": []}')
    result = run_cli("hook", "agent", "install", "claude-code", ok=False)
    assert "'hooks' is a list, expected an object" in result.output
    assert settings.read_bytes() == b'{"hooks": []}'


def test_project_scope_writes_settings_local_never_the_committed_file(
    repo: Path, isolated_home: Path
) -> None:
    committed = repo / ".claude" / "settings.json"
    committed.parent.mkdir()
    committed.write_text('{"permissions": {}}\n', encoding="utf-8")
    said = run_cli("-C", str(repo), "hook", "agent", "install", "claude-code", "--project").stdout
    local = repo / ".claude" / "settings.local.json"
    assert installed_command(local, "PostToolUse") and committed.read_text() == '{"permissions": {}}\n'
    # git would pick the file up (it holds this machine's paths): install says so; once it is ignored, not.
    assert "note: git does not ignore .claude/settings.local.json" in said, said
    (repo / ".git" / "info" / "exclude").write_text(".claude/settings.local.json\n", encoding="utf-8")
    again = run_cli("-C", str(repo), "hook", "agent", "install", "claude-code", "--project").stdout
    assert "does not ignore" not in again, again
    assert not claude_settings(isolated_home).exists()
    status = run_cli("-C", str(repo), "hook", "agent", "status").stdout
    assert f"claude-code  project  installed      {local}" in status
    refused = run_cli("-C", str(repo), "hook", "agent", "install", "codex", "--project", ok=False)
    assert refused.exit_code == 2 and "Codex has no uncommitted project hooks file" in refused.output
    # uninstall takes it out too, with the user-scope hooks.
    run_cli("hook", "agent", "install", "codex")
    out = run_cli("-C", str(repo), "uninstall").stdout
    assert "claude-code agent hook" in out and "codex agent hook" in out
    assert not local.exists() and committed.exists()
    assert not (isolated_home / ".codex" / "hooks.json").exists()


def test_the_short_name_claude_is_taken_wherever_the_agent_is_named(repo: Path, isolated_home: Path) -> None:
    """`hook agent install claude --project` said "Invalid value ... 'claude' is not one of 'claude-code',
    'codex'" while the README names `claude` as a short name `hook agent install` takes; `remove` and
    `status` refused it too. Each now takes it as claude-code, in any case, and says claude-code."""
    commit(repo, "feat: cache", {"src/cache.py": "x = 1\n"})
    run_cli("-C", str(repo), "hook", "agent", "install", "claude-code")
    said = run_cli("-C", str(repo), "hook", "agent", "install", "claude", "--project").stdout
    local = repo / ".claude" / "settings.local.json"
    assert f"Installed the claude-code command hook in {local}" in said, said
    assert "also installed" in said, said  # the same warning as for `claude-code`
    assert installed_command(local, "PostToolUseFailure").endswith(" claude-code")
    status = run_cli("-C", str(repo), "hook", "agent", "status", "Claude").stdout
    assert f"claude-code  project  installed      {local}" in status and "codex" not in status, status
    gone = run_cli("-C", str(repo), "hook", "agent", "remove", "claude", "--project").stdout
    assert f"Removed the claude-code command hook from {local}" in gone, gone
    wrong = run_cli("-C", str(repo), "hook", "agent", "install", "gemini", ok=False)
    assert wrong.exit_code == 2 and "'gemini' is not one of" in wrong.output, wrong.output


def test_claude_config_dir_is_honoured_and_a_moved_install_is_outdated(
    isolated_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = isolated_home / "claude-cfg"
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(config))
    run_cli("hook", "agent", "install", "claude-code")
    assert (config / "settings.json").exists() and not claude_settings(isolated_home).exists()
    # An older install pointed at another interpreter: status says outdated, install replaces it in place.
    path = config / "settings.json"
    path.write_text(
        path.read_text().replace(
            agent_hooks.hook_command("claude-code"),
            "/old/python -I -S /old/nexusmem/agenthook.py claude-code",
        )
    )
    assert "outdated" in run_cli("hook", "agent", "status", "claude-code").stdout
    run_cli("hook", "agent", "install", "claude-code")
    assert installed_command(path, "PostToolUse") == agent_hooks.hook_command("claude-code")


def test_uninstall_finds_a_hook_installed_under_another_claude_config_dir(
    repo: Path, isolated_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Installed with $CLAUDE_CONFIG_DIR set, uninstall from a shell without it said "No NexusMem hook is
    installed" and left the hook: it looked only where the settings file is named now."""
    config = isolated_home / "claude-cfg"
    config.mkdir()
    settings = config / "settings.json"
    settings.write_text('{\n  "theme": "dark"\n}\n', encoding="utf-8")
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(config))
    run_cli("hook", "agent", "install", "claude-code")
    monkeypatch.delenv("CLAUDE_CONFIG_DIR")
    doctor = run_cli("-C", str(repo), "doctor", ok=False).stdout
    assert f"claude-code: hook in {settings} (installed with another config folder" in doctor, doctor
    dry = run_cli("-C", str(repo), "uninstall", "--dry-run").stdout
    assert str(settings) in dry and "claude-code" in dry, dry
    assert agent_hooks.has_ours_at(settings)  # a dry run changes nothing
    out = run_cli("-C", str(repo), "uninstall").stdout
    assert str(settings) in out, out
    assert settings.read_text(encoding="utf-8") == '{\n  "theme": "dark"\n}\n'  # byte for byte


# --- --author through the CLI, precheck and the real MCP client ------------------------------------------


def mixed_history(repo: Path) -> None:
    commit(repo, "feat: cache", {"src/cache.py": "x = 1\n", "tests/test_cache.py": "def test(): pass\n"})
    now = int(time.time() * 1000)
    path = shell_log_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    base = {"cwd": str(repo), "shell": "zsh", "session": "s1", "v": 1}
    lines = [
        {**base, "ts": now - 50_000, "command": "pytest tests/test_cache.py --lf", "exit": 1},
        {
            **base,
            "ts": now - 40_000,
            "command": "pytest tests/test_cache.py -q",
            "exit": 2,
            "shell": "claude-code",
            "author": "claude-code",
            "author_kind": "agent",
            "call_id": "toolu_Q",
        },
        {
            **base,
            "ts": now - 30_000,
            "command": "pytest tests/test_cache.py -x",
            "exit": 4,
            "shell": "codex",
            "author": "codex",
            "author_kind": "agent",
            "call_id": "call_Q",
        },
    ]
    with path.open("a", encoding="utf-8") as handle:
        handle.writelines(json.dumps(line) + "\n" for line in lines)


def _commands(repo: Path, *extra: str) -> set[str]:
    out = run_cli("-C", str(repo), "query", "--json", *extra, "--", "pytest test_cache").stdout
    return {i["ref"] for i in json.loads(out)["items"] if i["kind"] == "shell_command"}


def test_what_the_agent_ran_is_answered_by_the_agents_commands_under_author(repo: Path) -> None:
    """ "What did the agent run on the cache tests" under `--author agents` (the README's example) put the
    commits and docs that speak of the agent running tests first: the filter kept the agents' commands
    but lifted nothing, and "agent" matched every text about agents."""
    mixed_history(repo)
    commit(
        repo,
        "docs: how the agent runs the cache tests",
        {"AGENTS.md": "The agent runs pytest on the cache tests.\n"},
    )
    sync.sync(repo)
    out = run_cli(
        "-C",
        str(repo),
        "query",
        "--json",
        "--author",
        "agents",
        "--",
        "what did the agent run on the cache tests",
    )
    # What was found, in its order (the commit a sync linked as a failure's fix rides along after it).
    kinds = [(i["kind"], i["ref"]) for i in json.loads(out.stdout)["items"] if i["linked_from"] is None]
    assert {ref for _, ref in kinds[:2]} == {
        "pytest tests/test_cache.py -q",
        "pytest tests/test_cache.py -x",
    }, kinds
    assert "pytest tests/test_cache.py --lf" not in {ref for _, ref in kinds}  # typed by the person
    # Without the filter the same question is ranked as before: the words, not the author, decide.
    plain = run_cli("-C", str(repo), "query", "--json", "--", "what did the agent run on the cache tests")
    assert any(i["kind"] == "git_commit" for i in json.loads(plain.stdout)["items"][:3])


def test_author_filter_on_query_and_precheck(repo: Path) -> None:
    mixed_history(repo)
    sync.sync(repo)
    every = {
        "pytest tests/test_cache.py --lf",
        "pytest tests/test_cache.py -q",
        "pytest tests/test_cache.py -x",
    }
    assert _commands(repo) == every
    assert _commands(repo, "--author", "me") == {"pytest tests/test_cache.py --lf"}
    assert _commands(repo, "--author", "agents") == every - {"pytest tests/test_cache.py --lf"}
    assert _commands(repo, "--author", "codex") == {"pytest tests/test_cache.py -x"}
    assert _commands(repo, "--all-projects", "--author", "codex") == {"pytest tests/test_cache.py -x"}
    bad = run_cli("-C", str(repo), "query", "--author", "a b", "--", "pytest", ok=False)
    assert bad.exit_code == 2 and "--author" in bad.output
    files = ["tests/test_cache.py"]
    found = {f.command for f in precheck.run(repo, files=files).findings}
    assert found == every
    assert {f.command for f in precheck.run(repo, files=files, author="me").findings} == {
        "pytest tests/test_cache.py --lf"
    }
    out = run_cli("-C", str(repo), "precheck", "--json", "--author", "claude-code", *files).stdout
    assert [f["command"] for f in json.loads(out)["findings"]] == ["pytest tests/test_cache.py -q"]


def test_author_filter_on_unsynced_lines_in_precheck(repo: Path) -> None:
    commit(repo, "feat: cache", {"src/cache.py": "x = 1\n"})
    sync.sync(repo)
    mixed_history(repo)  # after the sync: precheck reads them from the log's tail
    files = ["tests/test_cache.py"]
    assert {f.command for f in precheck.run(repo, files=files, author="agents").findings} == {
        "pytest tests/test_cache.py -q",
        "pytest tests/test_cache.py -x",
    }


@pytest.mark.slow
def test_author_filter_through_the_mcp_client(repo: Path, tmp_path: Path) -> None:
    mixed_history(repo)
    sync.sync(repo)
    root = str(repo)

    async def main() -> None:
        async with mcp_session(tmp_path / "server.log") as s:
            for author, expected in (
                ("me", {"pytest tests/test_cache.py --lf"}),
                ("claude-code", {"pytest tests/test_cache.py -q"}),
                ("agents", {"pytest tests/test_cache.py -q", "pytest tests/test_cache.py -x"}),
            ):
                result = await s.call_tool(
                    "search_memory", {"projectRoot": root, "query": "pytest test_cache", "author": author}
                )
                assert not result.is_error
                assert result.structured_content is not None
                refs = {i["ref"] for i in result.structured_content["items"] if i["kind"] == "shell_command"}
                assert refs == expected, author
            bad = await s.call_tool("search_memory", {"projectRoot": root, "query": "x", "author": "a b"})
            assert bad.is_error and "author" in bad.content[0].text  # type: ignore[union-attr]

    anyio.run(main)


def test_git_is_unaffected(repo: Path) -> None:
    """Commits pass every author filter: --author narrows commands, not history."""
    mixed_history(repo)
    git(repo, "log", "-1")
    sync.sync(repo)
    out = run_cli("-C", str(repo), "query", "--json", "--author", "codex", "--", "feat cache").stdout
    assert "git_commit" in {i["kind"] for i in json.loads(out)["items"]}
    assert os.environ["NEXUSMEM_HOME"]  # isolated


def test_doctor_reports_agent_hooks(repo: Path, isolated_home: Path) -> None:
    run_cli("hook", "agent", "install", "claude-code")
    post = installed_command(claude_settings(isolated_home), "PostToolUse")
    assert fire(post, claude_success(repo, "git status", "toolu_D")).returncode == 0
    report = json.loads(run_cli("-C", str(repo), "doctor", "--json", ok=False).stdout)
    checks = report["checks"] if isinstance(report, dict) else report
    agent = [c for c in checks if c["area"] == "agent"]
    assert len(agent) == 1 and agent[0]["ok"] and "last recorded" in agent[0]["detail"]
    path = claude_settings(isolated_home)
    path.write_text(
        path.read_text().replace(
            agent_hooks.hook_command("claude-code"),
            "/gone/python -I -S /gone/nexusmem/agenthook.py claude-code",
        )
    )
    report = json.loads(run_cli("-C", str(repo), "doctor", "--json", ok=False).stdout)
    checks = report["checks"] if isinstance(report, dict) else report
    agent = [c for c in checks if c["area"] == "agent"]
    assert not agent[0]["ok"] and agent[0]["fix"] == "nexusmem hook agent install claude-code"


def test_a_secret_in_an_agent_command_is_redacted_in_the_log_and_the_store(
    repo: Path, isolated_home: Path
) -> None:
    run_cli("hook", "agent", "install", "claude-code")
    post = installed_command(claude_settings(isolated_home), "PostToolUse")
    secret = "ghp_" + "Z" * 36
    assert fire(post, claude_success(repo, f"GITHUB_TOKEN={secret} gh pr list", "toolu_S")).returncode == 0
    assert (
        secret.encode() in shell_log_path().read_bytes()
    )  # raw until the next sync, 0600, like every hook line
    commit(repo, "feat: start", {"src/app.py": "x = 1\n"})
    sync.sync(repo)
    assert secret.encode() not in shell_log_path().read_bytes()
    raw = b"".join(p.read_bytes() for p in (repo / ".nexusmem").iterdir() if p.name.startswith("memory.db"))
    assert secret.encode() not in raw
    line = log_lines()[0]
    assert (
        line["command"] == "GITHUB_TOKEN=«redacted:github-token» gh pr list" and line["call_id"] == "toolu_S"
    )


def test_a_stray_byte_or_half_an_emoji_in_a_payload_still_records_the_call(
    repo: Path, isolated_home: Path
) -> None:
    """A payload with a byte that is not UTF-8 (in the command's output, which is never kept) was dropped
    whole, and a command holding half an emoji (`\\ud83d`, as JSON.stringify writes it) too: the call
    was lost."""
    run_cli("hook", "agent", "install", "claude-code")
    post = installed_command(claude_settings(isolated_home), "PostToolUse")
    stray = json.dumps(claude_success(repo, "make wombat-report", "toolu_X", "out MARK")).encode()
    stray = stray.replace(b"out MARK", b"out \xff\xfe latin-1 \xe9")
    half = claude_success(repo, "grep -n '\ud83d' wombat.txt", "toolu_Y")
    for payload in (stray, half):
        done = fire(post, payload)
        assert (done.returncode, done.stdout, done.stderr) == (0, b"", b"")
    lines = {line["call_id"]: line["command"] for line in log_lines()}
    assert lines == {"toolu_X": "make wombat-report", "toolu_Y": "grep -n '\ufffd' wombat.txt"}
    commit(repo, "feat: start", {"src/app.py": "x = 1\n"})
    sync.sync(repo)
    out = run_cli("-C", str(repo), "query", "--json", "--", "wombat").stdout
    assert {item["title"].split(" (exit")[0] for item in json.loads(out)["items"]} >= {
        "make wombat-report",
        "grep -n '\ufffd' wombat.txt",
    }


def test_author_filter_leaves_out_another_authors_linked_fix(repo: Path) -> None:
    """`--author agents` showed the person's own passing retry beside the agent's failure (linked as its
    fix): the filter kept only the ranked items, not what rode along with them."""
    commit(repo, "widgets", {"Makefile": "widget-test:\n\ttrue\n"})
    now = int(time.time() * 1000)
    base = {"cwd": str(repo), "v": 1, "session": "s1"}
    agent = {"shell": "claude-code", "author": "claude-code", "author_kind": "agent", "call_id": "toolu_W"}
    lines = [
        {**base, **agent, "ts": now - 120_000, "command": "make widget-test", "exit": 1},
        {**base, "ts": now - 60_000, "command": "make widget-test", "exit": 0, "shell": "bash"},
    ]
    path = shell_log_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as handle:
        handle.writelines(json.dumps(line) + "\n" for line in lines)
    run_cli("-C", str(repo), "sync", "--no-embed", "--link-failures")
    every = json.loads(run_cli("-C", str(repo), "query", "--json", "--", "make widget-test").stdout)
    assert {i["title"] for i in every["items"]} >= {"make widget-test (exit 1)", "make widget-test (exit 0)"}
    for who in ("agents", "claude-code"):
        out = run_cli("-C", str(repo), "query", "--json", "--author", who, "--", "make widget-test").stdout
        found = json.loads(out)
        assert [i["title"] for i in found["items"] if i["kind"] == "shell_command"] == [
            "make widget-test (exit 1)"
        ], found["items"]
        assert found["matched"] == every["matched"] - 1  # the person's run is no match of the agent's


@pytest.mark.parametrize(
    ("text", "wanted", "searched"),
    [
        ("what did the agent run on the cache", "agents", "what did run on the cache"),
        ("what did claude run on the cache", "claude-code", "what did run on the cache"),
        ("which commands did the AI agents type", "agents", "which commands did type"),
        ("the agent", "agents", "the agent"),  # nothing else asked: the words stay
        ("what did I run on the agent module", "me", "what did I run on the agent module"),
        # The question's own subject stays.
        (
            "what did the agent run on the user-agent header parsing",
            "agents",
            "what did run on the user-agent header parsing",
        ),
        (
            "what did agents run when the discord bot crashed",
            "agents",
            "what did run when the discord bot crashed",
        ),
        (
            "what did claude run to test the claude API client",
            "claude-code",
            "what did run to test the claude API client",
        ),
        ("what did copilot run for the atuin import", "atuin:copilot", "what did run for the atuin import"),
    ],
)
def test_the_words_naming_the_author_asked_for_are_not_searched(
    text: str, wanted: str, searched: str
) -> None:
    assert authors.without_author_words(text, wanted) == searched


def test_what_the_agent_ran_with_no_time_named_lists_its_newest_commands(repo: Path) -> None:
    """A re-check found it: under `--author agents` (or an agent's name) "what did the agent run" answered
    "No strong match" and old commits (the recent-work rule took only "I" or "we" for who did it), while the
    same question with "today" listed the agent's commands."""
    mixed_history(repo)
    sync.sync(repo)
    for author, question in (
        ("agents", "what did the agent run"),
        ("codex", "what did codex run"),
        ("agents", "what have the agents been doing"),
    ):
        out = run_cli("-C", str(repo), "query", "--json", "--author", author, "--", question).stdout
        data = json.loads(out)
        listed = [(i["kind"], i["ref"]) for i in data["items"]]
        commands = [ref for kind, ref in listed if kind == "shell_command"]
        assert commands and "pytest tests/test_cache.py --lf" not in commands, (
            question,
            listed,
        )  # the person's
        if question.endswith("run"):
            assert listed[0][0] == "shell_command", (question, listed)
        assert any("newest" in note for note in data.get("notes", [])), (question, data.get("notes"))


def test_claude_code_hook_at_both_scopes_is_named_and_one_call_counts_once(
    repo: Path, isolated_home: Path
) -> None:
    """Installed in the user settings and the repository's settings.local.json, Claude Code runs both hooks
    for one Bash call: two log lines with one call id. Install warns about the other scope, status and
    doctor name the double install, and the query's unsynced note counts the call once."""
    commit(repo, "feat: cache", {"src/cache.py": "x = 1\n"})
    sync.sync(repo)
    first = run_cli("-C", str(repo), "hook", "agent", "install", "claude-code", "--project").stdout
    assert "also installed" not in first, first
    said = run_cli("-C", str(repo), "hook", "agent", "install", "claude-code").stdout
    local = repo / ".claude" / "settings.local.json"
    assert f"also installed in {local}" in said and "twice" in said, said
    status = run_cli("-C", str(repo), "hook", "agent", "status").stdout
    assert "installed at both scopes" in status and "twice" in status, status
    report = json.loads(run_cli("-C", str(repo), "doctor", "--json", ok=False).stdout)
    checks = report["checks"] if isinstance(report, dict) else report
    double = [c for c in checks if c["area"] == "agent" and "twice" in c["detail"]]
    assert len(double) == 1 and not double[0]["ok"], checks
    assert double[0]["fix"] == "nexusmem hook agent remove claude-code --project", double
    for settings in (claude_settings(isolated_home), local):
        post = installed_command(settings, "PostToolUse")
        assert fire(post, claude_success(repo, "make build", "toolu_TWICE")).returncode == 0
    assert [line.get("call_id") for line in log_lines()].count("toolu_TWICE") == 2
    out = run_cli("-C", str(repo), "query", "--", "make build")
    assert "1 newer command(s) run here are not synced yet" in out.output, out.output
    # Taken out of one scope, the rest is quiet again.
    run_cli("-C", str(repo), "hook", "agent", "remove", "claude-code", "--project")
    status = run_cli("-C", str(repo), "hook", "agent", "status").stdout
    assert "twice" not in status, status


def test_one_failed_call_logged_by_both_scopes_is_one_failure_for_precheck_before_a_sync(
    repo: Path, isolated_home: Path
) -> None:
    """With the hook at both scopes, Claude Code hands one failed Bash call to both installed commands: two
    log lines, one call id. Before a sync, precheck (which reads the log's unsynced tail) said the failure
    happened "2 times in the last 30 days"; after `nexusmem sync`, which stores the call once, it said it
    once. Both now say it once."""
    commit(repo, "feat: limit", {"src/limit.py": "x = 1\n", "tests/test_limit.py": "def test(): ...\n"})
    sync.sync(repo)
    run_cli("-C", str(repo), "hook", "agent", "install", "claude-code", "--project")
    run_cli("-C", str(repo), "hook", "agent", "install", "claude-code")
    failed = claude_failure(repo, "pytest tests/test_limit.py", "toolu_BOTH", "Exit code 1\nFAILED test")
    for settings in (claude_settings(isolated_home), repo / ".claude" / "settings.local.json"):
        assert fire(installed_command(settings, "PostToolUseFailure"), failed).returncode == 0
    assert [line.get("call_id") for line in log_lines()].count("toolu_BOTH") == 2
    before = run_cli("-C", str(repo), "precheck", "--files", "tests/test_limit.py", ok=False).output
    assert "pytest tests/test_limit.py" in before and "failed (exit 1)" in before, before
    assert "times in the last" not in before, before
    run_cli("-C", str(repo), "sync", "--no-embed")
    after = run_cli("-C", str(repo), "precheck", "--files", "tests/test_limit.py", ok=False).output
    assert after == before, (before, after)


@pytest.mark.parametrize("order", [("--user", "--project"), ("--project", "--user")])
def test_install_status_and_doctor_give_one_fix_for_a_double_install(
    repo: Path, isolated_home: Path, order: tuple[str, str]
) -> None:
    """Installed at user scope, then with `--project`, install said "keep one: nexusmem hook agent remove
    claude-code" (the user scope's) while status and doctor said `remove claude-code --project`. Whichever
    was installed last, all three name the same command."""
    commit(repo, "feat: cache", {"src/cache.py": "x = 1\n"})
    said = ""
    for scope in order:
        extra = ["--project"] if scope == "--project" else []
        said = run_cli("-C", str(repo), "hook", "agent", "install", "claude-code", *extra).stdout
    fix = "nexusmem hook agent remove claude-code --project"
    warning = [line for line in said.splitlines() if "twice" in line]
    assert len(warning) == 1 and warning[0].rstrip().endswith(f"keep one: {fix}"), said
    status = run_cli("-C", str(repo), "hook", "agent", "status").stdout
    assert f"keep one: {fix}" in status, status
    report = json.loads(run_cli("-C", str(repo), "doctor", "--json", ok=False).stdout)
    checks = report["checks"] if isinstance(report, dict) else report
    assert [c["fix"] for c in checks if c["area"] == "agent" and "twice" in c["detail"]] == [fix], checks


def test_an_interrupted_call_keeps_its_mark_and_its_call_id_in_memory(
    repo: Path, isolated_home: Path
) -> None:
    """A call the user interrupted lost both on the way to memory: `show --json` had neither `interrupted`
    nor `call_id` in its meta, and it read "(exit unknown)" like a `| tail` pipe. Both are kept now, and the
    body says it was interrupted."""
    commit(repo, "feat: cache", {"src/cache.py": "x = 1\n"})
    run_cli("hook", "agent", "install", "claude-code")
    settings = claude_settings(isolated_home)
    failure = installed_command(settings, "PostToolUseFailure")
    post = installed_command(settings, "PostToolUse")
    payload = claude_failure(repo, "sleep 100", "toolu_INT", "Interrupted by user", interrupt=True)
    assert fire(failure, payload).returncode == 0
    assert fire(post, claude_success(repo, "make test 2>&1 | tail -5", "toolu_PIPE")).returncode == 0
    sync.sync(repo)
    items = json.loads(run_cli("-C", str(repo), "query", "--json", "--", "sleep 100").stdout)["items"]
    item = next(i for i in items if i["kind"] == "shell_command" and i["ref"] == "sleep 100")
    shown = json.loads(run_cli("-C", str(repo), "show", "--json", item["id"]).stdout)
    assert shown["meta"]["interrupted"] is True and shown["meta"]["call_id"] == "toolu_INT", shown["meta"]
    assert "interrupted" in shown["body"], shown["body"]
    piped = json.loads(run_cli("-C", str(repo), "query", "--json", "--", "make test").stdout)["items"]
    pipe = next(i for i in piped if i["kind"] == "shell_command" and i["ref"] == "make test")
    meta = json.loads(run_cli("-C", str(repo), "show", "--json", pipe["id"]).stdout)["meta"]
    assert meta["call_id"] == "toolu_PIPE" and "interrupted" not in meta, meta
