"""Human output shows control characters as escapes; --json keeps them exact.

Run under a real pseudo-terminal (pexpect): click strips ANSI sequences only when stdout is NOT a
terminal, so a pty is where an OSC 52 clipboard write in a commit message would reach the user raw.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pexpect
import pytest

from helpers import commit, console_script, run_script

# Real processes (sync, the MCP server, a pty) several times each: seconds per test here.
pytestmark = pytest.mark.slow

OSC52 = "\x1b]52;c;aGVsbG8gd29ybGQ=\x07"  # write "hello world" to the clipboard
TITLE = "\x1b]0;owned\x07"  # change the window title
CSI8 = "\x9b2J"  # clear the screen with the one-byte C1 CSI
BIDI = "\u202e"  # right-to-left override


def in_terminal(repo: Path, *args: str) -> bytes:
    child = pexpect.spawn(console_script(), list(args), cwd=str(repo), env=dict(os.environ), timeout=60)
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0, child.before
    out: bytes = child.before
    return out


def test_query_status_scan_and_precheck_escape_terminal_controls(repo: Path) -> None:
    subject = f"fix: clipboard{OSC52} and title{TITLE} and screen{CSI8} and {BIDI}reversed"
    commit(repo, subject, {"src/app.py": "x = 1\n"}, int(time.time()) - 3600)  # before the failure
    log = Path(os.environ["NEXUSMEM_HOME"]) / "shell-history.jsonl"
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("w", encoding="utf-8") as fh:
        for i in range(2):
            line = {
                "ts": int(time.time() * 1000) - 60_000 + i,  # precheck: the last 30 days
                "cwd": str(repo),
                "command": f"pytest src/app.py {OSC52}",
                "exit": 1,
                "shell": "bash",
                "session": "s",
            }
            fh.write(json.dumps(line) + "\n")
    # scan-* list what the next sync would store: before it, everything.
    outputs = {"scan-git": in_terminal(repo, "scan-git"), "scan-shell": in_terminal(repo, "scan-shell")}
    assert run_script("sync", "--no-embed", cwd=repo).returncode == 0
    outputs["query"] = in_terminal(repo, "query", "clipboard")
    outputs["status"] = in_terminal(repo, "status")
    (repo / "src" / "app.py").write_text("x = 2\n", encoding="utf-8")
    outputs["precheck"] = in_terminal(repo, "precheck", "--working")
    for name, out in outputs.items():
        assert b"\x1b" not in out and b"\x07" not in out, (name, out)
        assert "\x9b".encode() not in out and BIDI.encode() not in out, (name, out)
    assert b"clipboard\\x1b]52;c;aGVsbG8gd29ybGQ=\\x07 and title\\x1b]0;owned\\x07" in outputs["query"]
    assert b"screen\\x9b2J and \\u202ereversed" in outputs["query"]
    assert b"\\x1b]52;" in outputs["scan-git"] and b"\\x1b]52;" in outputs["scan-shell"]
    assert b"\\x1b]52;" in outputs["precheck"]  # the failing command names the staged file

    # --json is exact: the same characters, JSON-escaped, parse back to the stored text.
    data = json.loads(run_script("query", "--json", "clipboard", cwd=repo).stdout)
    assert any(item["title"] == subject for item in data["items"])


def test_forget_dry_run_and_review_escape_terminal_controls(repo: Path) -> None:
    subject = f"fix: paste{OSC52} and title{TITLE}"
    commit(repo, subject, {"src/app.py": "x = 1\n"}, int(time.time()) - 3600)
    assert run_script("sync", "--no-embed", cwd=repo).returncode == 0
    data = json.loads(run_script("query", "--json", "paste", cwd=repo).stdout)
    node_id = next(item["id"] for item in data["items"] if item["title"] == subject)

    outputs = {
        "forget": in_terminal(repo, "forget", "paste"),  # a dry run: lists the titles it would delete
        "review": in_terminal(repo, "review", node_id, "--verify"),
    }
    for name, out in outputs.items():
        assert b"\x1b" not in out and b"\x07" not in out, (name, out)
        assert b"paste\\x1b]52;c;" in out, (name, out)


def test_mcp_text_escapes_terminal_controls_as_the_cli_does(repo: Path, tmp_path: Path) -> None:
    """An agent shows a tool result's text in the developer's terminal: the MCP text is what `query` prints,
    escaped; the structured content is exact, as `query --json` is."""
    import anyio
    from mcp.types import TextContent

    from helpers.mcp import mcp_session

    subject = f"fix: clipboard{OSC52} and title{TITLE} and screen{CSI8} and {BIDI}reversed"
    commit(repo, subject, {"src/app.py": "x = 1\n"}, int(time.time()) - 3600)
    assert run_script("sync", "--no-embed", cwd=repo).returncode == 0
    question = f"clipboard {TITLE}"  # the echoed question line too
    cli = run_script("query", "--", question, cwd=repo)
    exact = json.loads(run_script("query", "--json", "--", question, cwd=repo).stdout)
    node_id = next(item["id"] for item in exact["items"] if item["title"] == subject)
    texts: dict[str, str] = {}
    structured: dict[str, dict[str, object]] = {}

    async def main() -> None:
        async with mcp_session(tmp_path / "server.log") as s:
            calls = {
                "search_memory": {"projectRoot": str(repo), "query": question},
                "get_memory": {"projectRoot": str(repo), "id": node_id},
                "get_status": {"projectRoot": str(repo)},
            }
            for name, args in calls.items():
                result = await s.call_tool(name, args)
                assert not result.is_error and isinstance(result.content[0], TextContent), result
                texts[name] = result.content[0].text
                assert result.structured_content is not None
                structured[name] = result.structured_content

    anyio.run(main)
    for name, text in texts.items():
        assert not any(c in text for c in ("\x1b", "\x07", "\x9b", BIDI)), (name, text)
    assert texts["search_memory"] + "\n" == cli.stdout
    assert "Relevant history for: clipboard \\x1b]0;owned\\x07" in texts["search_memory"]
    assert "clipboard\\x1b]52;c;aGVsbG8gd29ybGQ=\\x07 and title\\x1b]0;owned\\x07" in texts["get_memory"]
    assert "screen\\x9b2J and \\u202ereversed" in texts["get_memory"]
    # The structured content keeps the stored text exact, as --json does.
    assert structured["search_memory"] == exact
    assert structured["get_memory"]["title"] == subject
