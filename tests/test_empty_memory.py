"""A repository with no commits yet, synced through the real MCP client: the search says the memory is
empty, not that a sync would make vectors, and get_status prints a readable line instead of "- .. -"."""

from __future__ import annotations

from pathlib import Path

import anyio

from helpers import run_cli
from helpers.embedding import set_embedding
from helpers.mcp import mcp_session


def test_an_empty_repository_says_its_memory_is_empty(repo: Path, tmp_path: Path) -> None:
    set_embedding(repo, provider="ollama", url="http://127.0.0.1:9", model="nomic-embed-text")

    async def main() -> None:
        async with mcp_session(tmp_path / "server.log") as s:
            synced = await s.call_tool("sync_project", {"projectRoot": str(repo)})
            assert not synced.is_error, synced.content
            found = await s.call_tool("search_memory", {"projectRoot": str(repo), "query": "why the cache"})
            assert not found.is_error
            text = found.content[0].text  # type: ignore[union-attr]
            assert "memory is empty (no commits, docs or commands yet)" in text, text
            assert "run `nexusmem sync`" not in text and "sync_project" not in text, text
            assert "holds no vectors yet" not in text and "never synced" not in text, text
            status = await s.call_tool("get_status", {"projectRoot": str(repo)})
            shown = status.content[0].text  # type: ignore[union-attr]
            assert "- .. -" not in shown and "memory is empty" in shown, shown

    anyio.run(main)
    out = run_cli("-C", str(repo), "status").stdout
    assert "- .. -" not in out and "memory is empty (no commits, docs or commands yet)" in out, out


def test_the_instructions_and_the_author_parameter_tell_an_agent_about_its_own_work(tmp_path: Path) -> None:
    """The initialize instructions spoke of the user's prompt hooks alone, and `author` said "Only shell
    commands by this author" while it filters conversation turns too."""
    from mcp import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    from helpers.cli import console_script
    from helpers.mcp import server_env

    async def main() -> None:
        params = StdioServerParameters(
            command=console_script(), args=["mcp"], env=server_env(), cwd=str(tmp_path)
        )
        with (tmp_path / "server.log").open("w", encoding="utf-8") as errlog:
            async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as s:
                started = await s.initialize()
                said = started.instructions or ""
                assert 'author: "agents"' in said and "transcripts" in said, said
                tools = {tool.name: tool for tool in (await s.list_tools()).tools}
                author = tools["search_memory"].input_schema["properties"]["author"]
                text = str(author.get("description") or author)
                assert "conversation turns" in text and "Only shell commands by this author" not in text, text

    anyio.run(main)
