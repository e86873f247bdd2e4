"""`--author` with a name memory holds no command of: the note names who is recorded, the names match in any
case (`claude` is Claude Code's short name, as `hook agent install` takes it), a listing of failures or of
the newest work holds that author's commands only, and no other author's commits stand in for them. Real
repositories, the real CLI and the real MCP client."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import anyio
import pytest

from nexusmem import authors, sync
from nexusmem.paths import shell_log_path

from helpers import commit, git, run_cli
from helpers.mcp import mcp_session


def history(repo: Path, *, codex: bool = True) -> None:
    """Commits by another person, the person's failing command, Claude Code's and (CODEX) Codex's."""
    git(repo, "config", "user.name", "Other Person")
    for n in range(3):
        commit(repo, f"feat: step {n}", {f"src/s{n}.py": f"x = {n}\n"})
    now = int(time.time() * 1000)
    base = {"cwd": str(repo), "shell": "zsh", "session": "s1", "v": 1}
    lines: list[dict[str, Any]] = [
        {**base, "ts": now - 50_000, "command": "make lint", "exit": 2},
        {
            **base,
            "ts": now - 40_000,
            "command": "pytest tests -x",
            "exit": 1,
            "shell": "claude-code",
            "author": "claude-code",
            "author_kind": "agent",
            "call_id": "toolu_A",
        },
    ]
    if codex:
        lines.append(
            {
                **base,
                "ts": now - 30_000,
                "command": "cargo build",
                "exit": 0,
                "shell": "codex",
                "author": "codex",
                "author_kind": "agent",
                "call_id": "call_A",
            }
        )
    path = shell_log_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as handle:
        handle.writelines(json.dumps(line) + "\n" for line in lines)
    sync.sync(repo)


def answer(repo: Path, author: str, question: str) -> dict[str, Any]:
    out = run_cli("-C", str(repo), "query", "--json", "--author", author, "--", question).stdout
    data: dict[str, Any] = json.loads(out)
    return data


@pytest.mark.parametrize("name", ["claude", "Claude-Code", "CLAUDE"])
def test_an_agents_name_matches_in_any_case_and_claude_is_claude_code(repo: Path, name: str) -> None:
    history(repo)
    data = answer(repo, name, "which commands failed")
    commands = [i["ref"] for i in data["items"] if i["kind"] == "shell_command"]
    assert commands == ["pytest tests -x"], data
    assert any("first: the commands that failed" in note for note in data["notes"]), data["notes"]


def test_an_author_with_no_command_is_said_with_the_recorded_authors(repo: Path) -> None:
    """`--author robots "which commands failed"` matched nothing, with the note "first: the commands that
    failed in the 7 days…" that contradicted it."""
    history(repo)
    data = answer(repo, "robots", "which commands failed")
    assert not [i for i in data["items"] if i["kind"] == "shell_command"], data
    notes = " | ".join(data["notes"])
    assert "first: the commands that failed" not in notes, notes
    assert "no commands by 'robots'; recorded: me, claude-code, codex" in notes, notes
    text = run_cli("-C", str(repo), "query", "--author", "robots", "--", "which commands failed").output
    assert "recorded: me, claude-code, codex" in text, text


def test_what_an_author_with_no_command_ran_lists_no_one_elses_commits(repo: Path) -> None:
    """`--author codex "what did codex run"` with no codex command: "first: the newest commits (no command
    recorded )" and another person's commits listed as what codex did."""
    history(repo, codex=False)
    data = answer(repo, "codex", "what did codex run")
    notes = " | ".join(data["notes"])
    assert "newest commits" not in notes and "recorded )" not in notes, notes
    assert data["notes"] == ["no commands by 'codex'; recorded: me, claude-code"], data["notes"]  # said once
    assert not [i for i in data["items"] if i["kind"] == "git_commit" and "step" in i["title"]], data["items"]
    # An author with commands lists theirs.
    mine = answer(repo, "claude-code", "what did claude run")
    assert [i["ref"] for i in mine["items"] if i["kind"] == "shell_command"] == ["pytest tests -x"], mine


def test_the_stray_space_of_a_listing_with_no_command_is_gone(repo: Path) -> None:
    """`--author me` with commits but no command of the person's: the newest commits stand in, said so
    without an empty window and a space before the parenthesis."""
    commit(repo, "feat: one", {"a.py": "a = 1\n"})
    sync.sync(repo)
    data = answer(repo, "me", "what did I run")
    notes = " | ".join(data["notes"])
    assert "recorded )" not in notes, notes


def test_mcp_search_memory_with_an_unknown_author_says_so(repo: Path, tmp_path: Path) -> None:
    history(repo)

    async def main() -> None:
        async with mcp_session(tmp_path / "server.log") as s:
            got = await s.call_tool(
                "search_memory",
                {"projectRoot": str(repo), "query": "which commands failed", "author": "robots"},
            )
            assert not got.is_error
            text = got.content[0].text  # type: ignore[union-attr]
            assert "no commands by 'robots'; recorded: me, claude-code, codex" in text, text

    anyio.run(main)


def test_what_i_ran_with_no_command_of_mine_lists_nothing(repo: Path, tmp_path: Path) -> None:
    """`--author me "what did I run"` (MCP author "me") with no command of yours recorded listed another
    person's newest commits under four notes ("first: the newest commits (no command by me recorded)", "no
    commands by 'me'; memory holds none", "8 older items not shown: raise --budget", the hook hint). It lists
    nothing, and says once that no command of yours is recorded, with the hook hint."""
    history(repo, codex=False)
    for n in range(3, 9):
        commit(repo, f"feat: step {n}", {f"src/s{n}.py": f"x = {n}\n"})
    shell_log_path().write_text("", encoding="utf-8")
    run_cli("-C", str(repo), "sync", "--rebuild", "--no-embed")
    shell_log_path().write_text("", encoding="utf-8")
    data = answer(repo, "me", "what did I run")
    assert data["items"] == [], [it["title"] for it in data["items"]]
    said = [n for n in data["notes"] if "me" in n and ("no command" in n)]
    assert len(said) == 1, data["notes"]
    assert not any("newest commits" in n or "not shown" in n for n in data["notes"]), data["notes"]
    assert any("no prompt hook is installed" in n for n in data["notes"]), data["notes"]

    async def main() -> None:
        async with mcp_session(tmp_path / "server.log") as s:
            got = await s.call_tool(
                "search_memory", {"projectRoot": str(repo), "query": "what did I run", "author": "me"}
            )
            text = got.content[0].text  # type: ignore[union-attr]
            assert "feat: step" not in text and "newest commits" not in text, text
            assert "no prompt hook is installed" in text, text

    anyio.run(main)


def test_parse_takes_claude_for_claude_code() -> None:
    assert authors.parse("claude") == "claude-code"
    assert authors.parse("Codex") == "codex"
    assert authors.keeps("CODEX", "shell_command", {"author": "codex", "author_kind": "agent"})


def test_what_i_ran_without_a_prompt_hook_says_to_install_one(repo: Path, tmp_path: Path) -> None:
    """`--author me "what did I run"` with no prompt hook said "No memory matches" and "first: the newest
    commands run" (the agents' ones, filtered out); doctor said nothing. The answer now says no command of
    yours is recorded because no prompt hook is installed, and doctor says so as information."""
    history(repo)
    # Only the agents' commands: the person's line taken out of memory by a fresh log.
    shell_log_path().write_text("", encoding="utf-8")
    run_cli("-C", str(repo), "sync", "--rebuild", "--no-embed")
    data = answer(repo, "me", "what did I run")
    notes = " | ".join(data["notes"])
    assert "no prompt hook is installed" in notes and "nexusmem hook install" in notes, notes
    assert data["tokens_used"] <= data["budget"], data

    async def main() -> None:
        async with mcp_session(tmp_path / "server.log") as s:
            got = await s.call_tool(
                "search_memory", {"projectRoot": str(repo), "query": "what did I run", "author": "me"}
            )
            text = got.content[0].text  # type: ignore[union-attr]
            assert "no prompt hook is installed" in text, text

    anyio.run(main)
    report = json.loads(run_cli("-C", str(repo), "doctor", "--json", ok=False).stdout)
    checks = report["checks"] if isinstance(report, dict) else report
    said = [c for c in checks if c["area"] == "shell" and "no prompt hook" in c["detail"]]
    assert len(said) == 1 and said[0]["ok"], checks
    # With a hook installed, neither says it.
    run_cli("hook", "install", "--shell", "bash")
    data = answer(repo, "me", "what did I run")
    assert not any("no prompt hook" in note for note in data["notes"]), data["notes"]
    report = json.loads(run_cli("-C", str(repo), "doctor", "--json", ok=False).stdout)
    checks = report["checks"] if isinstance(report, dict) else report
    assert not [c for c in checks if "no prompt hook" in c["detail"]], checks


@pytest.mark.parametrize(
    "question", ["what has codex been doing", "what did codex do lately", "what did codex run"]
)
def test_what_an_agent_did_holds_nothing_of_anyone_else_when_it_has_no_command(
    repo: Path, question: str
) -> None:
    """`--author codex "what has codex been doing"` (connection_pool, no codex command) listed a 2011 commit
    and README sections, weak, under two notes saying the same thing ("no command by codex recorded", "no
    commands by 'codex'; recorded: claude-code"). An agent's work is its commands: none, and one note naming
    who memory holds commands of."""
    history(repo, codex=False)
    commit(repo, "codex: what codex has been doing to the pool", {"README.md": "# Pool\n\ncodex doing\n"})
    sync.sync(repo)
    data = answer(repo, "codex", question)
    assert data["items"] == [], [(i["kind"], i["title"]) for i in data["items"]]
    assert data["notes"] == ["no commands by 'codex'; recorded: me, claude-code"], data["notes"]
    text = run_cli("-C", str(repo), "query", "--author", "codex", "--", question).output
    assert text.count("note: ") == 1 and "recorded: me, claude-code" in text, text
    across = run_cli("-C", str(repo), "query", "--all-projects", "--author", "codex", "--", question).output
    assert across.count("note: ") == 1 and "recorded: me, claude-code" in across, across
