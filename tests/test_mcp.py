"""The MCP server, driven the way agents drive it: the installed `nexusmem mcp` script spoken to over stdio by
the SDK's real client, against real git repositories."""

from __future__ import annotations

import ast
import json
import math
import os
import shutil
import subprocess
import sys
import threading
import time
from datetime import datetime, timedelta
from datetime import time as dtime
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.types import CallToolResult, TextContent

from helpers import commit, console_script, git, init_repo, run_script, write_commands
from helpers.env import clear_of_midnight, local_zone
from helpers.mcp import mcp_session

PKG = Path(__file__).resolve().parent.parent / "nexusmem"
DAY = 86_400
BASE = 1_700_000_000
TOOLS = {"search_memory", "sync_project", "get_status", "get_memory"}


def text_of(result: CallToolResult) -> str:
    assert len(result.content) == 1
    block = result.content[0]
    assert isinstance(block, TextContent)
    return block.text


def ok(result: CallToolResult) -> tuple[str, dict[str, Any]]:
    assert not result.is_error, text_of(result)
    assert result.structured_content is not None
    return text_of(result), result.structured_content


def error(result: CallToolResult) -> str:
    assert result.is_error, f"expected an error, got {result.content}"
    assert result.structured_content is None
    return text_of(result)


def small_history(repo: Path) -> None:
    commit(
        repo, "feat(parser): parse nested tables", {"src/parser.py": "def parse():\n    return {}\n"}, BASE
    )
    commit(
        repo,
        "fix(cache): switch the sqlite cache to WAL because readers blocked writers",
        {"src/cache.py": "MODE = 'wal'\n"},
        BASE + DAY,
    )
    commit(
        repo,
        "docs: explain the cache",
        {"README.md": "# Demo\n\n## Cache\n\nWe use WAL because readers must never block the writer.\n"},
        BASE + 2 * DAY,
    )
    commit(
        repo,
        "refactor(parser): split the tokenizer out",
        {"src/tokenizer.py": "TOKENS = []\n"},
        BASE + 3 * DAY,
    )


def assert_same_answer(one: dict[str, Any], other: dict[str, Any]) -> None:
    """ONE and OTHER are the same `query --json` object, scores to the last bit: from its second query on, a
    server reads the vectors' similarities from its in-memory copy, where a first query and the CLI read
    them from the index, and the copy asks the index's own function for them (store.distances_from)."""
    assert one == other


# Keywords pydantic spells its own way; a client reading the JSON Schema a tool publishes knows none of them.
PYDANTIC_ONLY = {"ge", "gt", "le", "lt", "strict", "multiple_of", "min_length", "max_length"}


def test_the_budget_limits_are_published_as_json_schema_and_enforced(tmp_path: Path) -> None:
    """search_memory's budget schema said `"ge": 50, "le": 100000` (pydantic's names), so a client reading
    the tool list saw no limits; they are `minimum`/`maximum`, and the server still refuses a budget outside."""
    plain = tmp_path / "plain"  # not a repository: a call whose arguments pass says so
    plain.mkdir()

    async def main() -> None:
        async with mcp_session(tmp_path / "server.log") as s:
            listed = {t.name: t for t in (await s.list_tools()).tools}
            budget = listed["search_memory"].input_schema["properties"]["budget"]
            assert (budget["type"], budget["minimum"], budget["maximum"]) == ("integer", 50, 100_000)
            for tool in listed.values():
                for name, prop in tool.input_schema["properties"].items():
                    assert not PYDANTIC_ONLY & set(prop), (tool.name, name, prop)
            for refused in (49, 100_001):
                result = await s.call_tool(
                    "search_memory", {"projectRoot": str(plain), "query": "x", "budget": refused}
                )
                assert result.is_error and "budget" in text_of(result), refused
            for taken in (50, 100_000, 2000.0):
                result = await s.call_tool(
                    "search_memory", {"projectRoot": str(plain), "query": "x", "budget": taken}
                )
                assert result.is_error and "not inside a git work tree" in text_of(result), taken

    anyio.run(main)


@pytest.mark.slow
def test_tools_are_listed_with_their_schemas(tmp_path: Path) -> None:
    async def main() -> None:
        async with mcp_session(tmp_path / "server.log") as session:
            listed = {t.name: t for t in (await session.list_tools()).tools}
        assert set(listed) == TOOLS
        for tool in listed.values():
            assert "projectRoot" in tool.input_schema["required"]
            assert tool.description and "\n        " not in tool.description
            assert tool.output_schema is not None
        search = listed["search_memory"].input_schema
        assert search["required"] == ["projectRoot", "query"]
        props = search["properties"]
        assert props["budget"]["default"] == 2000 and props["budget"]["type"] == "integer"
        assert props["allProjects"]["default"] is False
        assert props["asOf"]["default"] is None
        sync = listed["sync_project"].input_schema
        assert sync["required"] == ["projectRoot"]
        assert sync["properties"]["linkFailures"]["default"] is False
        assert sync["properties"]["noEmbed"]["default"] is False
        assert "ctx" not in sync["properties"]
        assert listed["get_memory"].input_schema["required"] == ["projectRoot", "id"]
        assert listed["get_status"].input_schema["required"] == ["projectRoot"]
        items = listed["search_memory"].output_schema
        assert items is not None and set(items["required"]) >= {"query", "budget", "tokens_used", "items"}
        assert listed["search_memory"].annotations is not None
        assert listed["search_memory"].annotations.read_only_hint is True

    anyio.run(main)


@pytest.mark.slow
def test_a_repository_in_a_folder_whose_name_is_not_utf8_is_reached_by_the_path_nexusmem_prints(
    tmp_path: Path,
) -> None:
    # A Latin-1 folder (`caf\xe9-repo`): its real path cannot reach the server (the client's JSON cannot carry
    # the byte), and `caf\xe9-repo` as NexusMem prints it or `café-repo` were "not an existing directory".
    repo = Path(os.fsdecode(bytes(tmp_path) + b"/caf\xe9-repo"))
    init_repo(repo)
    small_history(repo)
    synced = subprocess.run(
        [console_script(), "sync", "--no-embed"], cwd=repo, capture_output=True, check=False
    )
    assert synced.returncode == 0, synced.stderr
    spelled = str(repo).replace("\udce9", "\\xe9")  # /tmp/…/caf\xe9-repo, as `nexusmem status` prints it

    async def main() -> None:
        async with mcp_session(tmp_path / "server.log") as s:
            text, info = ok(await s.call_tool("get_status", {"projectRoot": spelled}))
            assert info["root"] == spelled and info["by_kind"]["git_commit"] == 4, info
            assert f"root      {spelled}\n" in text
            _, found = ok(
                await s.call_tool(
                    "search_memory", {"projectRoot": f"{spelled}/src", "query": "sqlite cache WAL"}
                )
            )
            assert found["items"][0]["title"].startswith("fix(cache): switch the sqlite cache to WAL"), found
            # Every project: each item's projectRoot is the printed path, which get_memory takes back.
            _, every = ok(
                await s.call_tool(
                    "search_memory", {"projectRoot": spelled, "query": "tokenizer", "allProjects": True}
                )
            )
            item = every["items"][0]
            assert item["projectRoot"] == spelled and every["projects"] == [
                {"name": "caf\\xe9-repo", "root": spelled}
            ]
            _, full = ok(
                await s.call_tool("get_memory", {"projectRoot": item["projectRoot"], "id": item["id"]})
            )
            assert full["title"] == item["title"]
            # café-repo is another folder's name, and none exists.
            assert "not an existing directory" in error(
                await s.call_tool("get_status", {"projectRoot": str(tmp_path / "café-repo")})
            )

    anyio.run(main)


@pytest.mark.slow
def test_every_tool_against_a_real_repository(repo: Path, tmp_path: Path) -> None:
    small_history(repo)
    plain = tmp_path / "plain"
    plain.mkdir()
    root = str(repo)

    async def main() -> None:
        async with mcp_session(tmp_path / "server.log") as s:
            # No memory yet: a clear error that says what to do, and nothing is created by searching.
            message = error(await s.call_tool("search_memory", {"projectRoot": root, "query": "cache"}))
            assert "nexusmem sync" in message and "sync_project" in message
            # Every error starts with the tool's name, as a bad-arguments one does (not "Error executing tool").
            assert message.startswith("search_memory: ") and "Error executing tool" not in message, message
            assert not (repo / ".nexusmem").exists()
            assert "sync_project" in error(await s.call_tool("get_status", {"projectRoot": root}))

            updates: list[tuple[float, float | None, str | None]] = []

            async def on_progress(progress: float, total: float | None, message: str | None) -> None:
                updates.append((progress, total, message))

            text, summary = ok(
                await s.call_tool(
                    "sync_project", {"projectRoot": root, "linkFailures": True}, progress_callback=on_progress
                )
            )
            assert summary["initialised"] is True and summary["total_nodes"] > 0
            assert {src["name"] for src in summary["sources"]} >= {"git", "diff", "docs"}
            assert text.startswith(f"Initialised and synced {repo}") and "node(s) in memory" in text
            assert updates and updates[-1][2] == "sync finished"
            values = [u[0] for u in updates]
            assert values == sorted(set(values)), "progress must increase"

            # search_memory: the same text `nexusmem query` prints, the same object `query --json` prints.
            text, found = ok(await s.call_tool("search_memory", {"projectRoot": root, "query": "cache WAL"}))
            cli = run_script("-C", root, "query", "--", "cache WAL", cwd=tmp_path)
            assert cli.returncode == 0, cli.stderr
            assert text == cli.stdout.rstrip("\n")
            cli_json = run_script("-C", root, "query", "--json", "--", "cache WAL", cwd=tmp_path)
            # The same object: from its second query on, the server reads the vectors' similarities from its
            # in-memory copy, the CLI from the index, and the two compute them alike.
            assert_same_answer(found, json.loads(cli_json.stdout))
            assert any(i["kind"] == "git_commit" and "WAL" in i["title"] for i in found["items"])
            assert set(found["items"][0]) == {
                "id", "kind", "ts", "title", "summary", "provenance", "trust", "score", "project", "ref",
                "author", "linked_from", "relation", "also_in", "superseded", "superseded_by",
            }  # fmt: skip
            commits = [i for i in found["items"] if i["kind"] == "git_commit"]
            assert commits and all(i["author"] for i in commits), commits

            # A directory inside the work tree works too; budget is honoured.
            _, small = ok(
                await s.call_tool(
                    "search_memory", {"projectRoot": str(repo / "src"), "query": "parser", "budget": 50}
                )
            )
            assert small["budget"] == 50 and small["tokens_used"] <= 50

            # asOf filters on when the store recorded a node: before the sync nothing, long after everything.
            text, past = ok(
                await s.call_tool(
                    "search_memory", {"projectRoot": root, "query": "cache", "asOf": "2000-01-01"}
                )
            )
            assert past["items"] == [] and text.startswith("No memory matches: cache\nnote: as-of 2000-01-01")
            # An agent is told why (it got an empty answer with no reason).
            assert any("before this memory's first recording" in n for n in past["notes"]), past["notes"]
            _, future = ok(
                await s.call_tool(
                    "search_memory",
                    {"projectRoot": root, "query": "cache WAL", "asOf": "2999-01-01T00:00:00Z"},
                )
            )
            assert_same_answer(future, found)

            # get_memory: a full id, a unique prefix, a diff with its files.
            first = next(i for i in found["items"] if i["kind"] == "git_commit")
            text, item = ok(await s.call_tool("get_memory", {"projectRoot": root, "id": first["id"]}))
            assert item["id"] == first["id"] and item["ref"] == first["ref"] and item["ts"] == first["ts"]
            assert (
                item["kind"] == "git_commit"
                and item["provenance"] == "observed"
                and item["trust"] == "candidate"
            )
            assert "readers blocked writers" in item["body"] and item["body"] in text
            assert item["files"] == ["src/cache.py"] and item["links"] == []
            _, again = ok(
                await s.call_tool("get_memory", {"projectRoot": root, "id": first["id"][:8].upper()})
            )
            assert again == item
            _, diffs = ok(
                await s.call_tool("search_memory", {"projectRoot": root, "query": "tokenizer TOKENS"})
            )
            diff = next(i for i in diffs["items"] if i["kind"] == "code_diff")
            text, full = ok(await s.call_tool("get_memory", {"projectRoot": root, "id": diff["id"]}))
            assert full["files"] == ["src/tokenizer.py"] and "TOKENS = []" in full["body"]
            assert full["ref"].endswith(":src/tokenizer.py")

            # get_status: the library's status dict and its rendering.
            text, info = ok(await s.call_tool("get_status", {"projectRoot": root}))
            assert info["root"] == root and info["nodes"] == summary["total_nodes"]
            assert info["by_kind"]["git_commit"] == 4 and text.startswith(f"{info['nodes']} node(s)")

            # A second sync is incremental.
            _, second = ok(await s.call_tool("sync_project", {"projectRoot": root}))
            assert second["initialised"] is False and second["added"] == 0

            # Errors come back as tool errors naming the problem, and the server keeps answering.
            assert "absolute" in error(
                await s.call_tool("search_memory", {"projectRoot": "repo", "query": "x"})
            )
            assert "not an existing directory" in error(
                await s.call_tool("get_status", {"projectRoot": str(tmp_path / "missing")})
            )
            assert "not inside a git work tree" in error(
                await s.call_tool("search_memory", {"projectRoot": str(plain), "query": "x"})
            )
            assert "'last tuesday'" in error(
                await s.call_tool(
                    "search_memory", {"projectRoot": root, "query": "x", "asOf": "last tuesday"}
                )
            )
            assert "absolute" in error(
                await s.call_tool("search_memory", {"projectRoot": "repo", "query": "x", "allProjects": True})
            )
            assert "empty" in error(await s.call_tool("search_memory", {"projectRoot": root, "query": "  "}))
            assert "budget" in error(
                await s.call_tool("search_memory", {"projectRoot": root, "query": "x", "budget": 10})
            )
            assert "'0123456789abcdef01234567'" in error(
                await s.call_tool("get_memory", {"projectRoot": root, "id": "0123456789abcdef01234567"})
            )
            assert "6 characters" in error(
                await s.call_tool("get_memory", {"projectRoot": root, "id": "abc"})
            )
            assert "not inside a git work tree" in error(
                await s.call_tool("sync_project", {"projectRoot": str(plain)})
            )
            assert not (plain / ".nexusmem").exists()
            _, still = ok(await s.call_tool("search_memory", {"projectRoot": root, "query": "cache WAL"}))
            assert_same_answer(still, found)

    anyio.run(main)
    log = (tmp_path / "server.log").read_text(encoding="utf-8")
    assert "Traceback" not in log, log


def fast_history(repo: Path, commits: int) -> None:
    """COMMITS conventional commits, each touching one file, written in one `git fast-import`."""
    kinds = ["feat", "fix", "refactor", "test", "docs", "perf", "chore"]
    areas = ["cache", "parser", "sync", "cli", "store", "hooks"]
    chunks: list[bytes] = []
    for n in range(1, commits + 1):
        area = areas[n % len(areas)]
        message = f"{kinds[n % len(kinds)]}({area}): change {n} to the {area} module\n".encode()
        content = f"# {area} revision {n}\nVALUE_{n} = {n}\n".encode()
        when = BASE + n * 600
        chunks.append(b"commit refs/heads/main\n")
        chunks.append(f"mark :{n}\n".encode())
        chunks.append(f"committer Test User <test@example.com> {when} +0000\n".encode())
        chunks.append(f"data {len(message)}\n".encode() + message)
        if n > 1:
            chunks.append(f"from :{n - 1}\n".encode())
        chunks.append(f"M 100644 inline src/{area}_{n % 40}.py\n".encode())
        chunks.append(f"data {len(content)}\n".encode() + content + b"\n")
    subprocess.run(["git", "fast-import", "--quiet"], cwd=repo, input=b"".join(chunks), check=True)
    git(repo, "reset", "-q", "--hard")


@pytest.mark.slow
def test_search_keeps_answering_while_the_cli_rebuilds(repo: Path, tmp_path: Path) -> None:
    fast_history(repo, 300)
    first = run_script("-C", str(repo), "sync", "--quiet", cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    stop = threading.Event()
    rebuilds: list[subprocess.CompletedProcess[str]] = []
    # When each rebuild ran: [start, end], the end infinite while it runs.
    spans: list[list[float]] = []

    def rebuild_loop() -> None:
        while not stop.is_set():
            span = [time.monotonic(), math.inf]
            spans.append(span)
            rebuilds.append(run_script("-C", str(repo), "sync", "--rebuild", "--quiet", cwd=tmp_path))
            span[1] = time.monotonic()

    answers: list[dict[str, Any]] = []
    during = 0  # answers asked and given while one rebuild ran

    async def main() -> None:
        nonlocal during
        async with mcp_session(tmp_path / "server.log") as s:
            worker = threading.Thread(target=rebuild_loop)
            worker.start()
            try:
                # Asked until 20 answers came while a rebuild ran and two rebuilds are done, however slow the
                # machine: a fixed 6 s of asking (the test before) gave under 20 answers on a loaded CI box.
                give_up = time.monotonic() + 600
                n = 0
                while during < 20 or len(rebuilds) < 2:
                    assert time.monotonic() < give_up, (len(answers), during, len(rebuilds))
                    n += 1
                    query = ["cache module", "parser change", "fix sync", "VALUE_7"][n % 4]
                    asked = time.monotonic()
                    result = await s.call_tool("search_memory", {"projectRoot": str(repo), "query": query})
                    answered = time.monotonic()
                    text, data = ok(result)
                    assert "locked" not in text
                    assert data["query"] == query and data["tokens_used"] <= data["budget"]
                    assert text.startswith((f"Relevant history for: {query}", f"No memory matches: {query}"))
                    answers.append(data)
                    during += any(start <= asked and answered <= end for start, end in list(spans))
                    if n % 10 == 0:
                        ok(await s.call_tool("get_status", {"projectRoot": str(repo)}))
            finally:
                stop.set()
                await anyio.to_thread.run_sync(worker.join)

    anyio.run(main)
    assert len(rebuilds) >= 2 and during >= 20
    for proc in rebuilds:
        assert proc.returncode == 0, proc.stderr
        assert "locked" not in proc.stderr
    # A rebuild runs in one transaction: readers keep the old memory until the new one is complete, so a
    # query that finds something finds it in every answer, never an empty store mid-rebuild.
    assert any(a["items"] for a in answers)
    found: dict[str, set[bool]] = {}
    for a in answers:
        found.setdefault(a["query"], set()).add(bool(a["items"]))
    assert all(len(seen) == 1 for seen in found.values()), found
    assert "Traceback" not in (tmp_path / "server.log").read_text(encoding="utf-8")


@pytest.mark.slow
def test_mcp_inspector_cli_lists_the_tools(tmp_path: Path) -> None:
    npx = shutil.which("npx")
    if npx is None:
        pytest.skip("npx is not installed")
    # HOME is a temp dir here; keep npm's download cache in the user's real one so only the first run fetches.
    env = {**os.environ, "NPM_CONFIG_UPDATE_NOTIFIER": "false"}
    if "NPM_CONFIG_CACHE" not in env and sys.platform != "win32":
        import pwd

        env["NPM_CONFIG_CACHE"] = str(Path(pwd.getpwuid(os.getuid()).pw_dir) / ".npm")
    cmd = [
        npx,
        "-y",
        "@modelcontextprotocol/inspector",
        "--cli",
        console_script(),
        "mcp",
        "--method",
        "tools/list",
    ]
    try:
        proc = subprocess.run(
            cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120, check=False
        )
    except subprocess.TimeoutExpired:
        pytest.skip("the MCP Inspector did not start within 120 s (npm registry unreachable?)")
    if proc.returncode != 0 and (
        "ENOTFOUND" in proc.stderr or "EAI_AGAIN" in proc.stderr or "ETIMEDOUT" in proc.stderr
    ):
        pytest.skip(f"npx could not fetch the MCP Inspector: {proc.stderr.strip()[-200:]}")
    assert proc.returncode == 0, proc.stderr
    names = {tool["name"] for tool in json.loads(proc.stdout)["tools"]}
    assert names == TOOLS


@pytest.mark.slow
def test_mcp_command_help_and_import_boundaries(tmp_path: Path) -> None:
    helped = run_script("mcp", "--help", cwd=tmp_path)
    assert (
        helped.returncode == 0 and 'claude mcp add nexusmem -- "$(command -v nexusmem)" mcp' in helped.stdout
    )
    # The server and the CLI are two faces over one library: neither imports the other, except the
    # `mcp` command, which imports the server only when it runs.
    server_imports = imports_of(PKG / "mcp_server.py")
    assert not any(name.startswith("nexusmem.cli") for name in server_imports)
    for path in (PKG / "cli").glob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        top_level = {n.module for n in tree.body if isinstance(n, ast.ImportFrom) and n.module}
        assert "nexusmem.mcp_server" not in top_level, path.name
        if path.name != "mcp.py":
            assert "nexusmem.mcp_server" not in imports_of(path), path.name
    code = "import sys, nexusmem.cli.mcp; print('mcp' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


def imports_of(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
    return found


@pytest.mark.slow
def test_wrong_argument_names_and_types_are_plain_words_and_snake_case_works(
    repo: Path, tmp_path: Path
) -> None:
    small_history(repo)
    root = str(repo)

    async def main() -> None:
        async with mcp_session(tmp_path / "server.log") as s:
            # snake_case spellings of the camelCase parameters are accepted.
            _, summary = ok(await s.call_tool("sync_project", {"project_root": root, "no_embed": True}))
            assert summary["total_nodes"] > 0
            text, found = ok(
                await s.call_tool(
                    "search_memory", {"project_root": root, "query": "WAL cache", "as_of": None}
                )
            )
            assert "WAL" in text and found["items"]
            # A misspelt name: named, a suggestion, and the accepted names, no pydantic dump.
            message = error(await s.call_tool("search_memory", {"projectRot": root, "query": "cache"}))
            assert "unknown parameter 'projectRot'" in message and "did you mean 'projectRoot'" in message
            assert "projectRoot (required), query (required), budget, allProjects" in message
            assert "pydantic" not in message and "validation error" not in message.lower()
            # A wrong type: the parameter, what was expected, what came.
            message = error(
                await s.call_tool("search_memory", {"projectRoot": root, "query": "cache", "budget": "abc"})
            )
            assert "budget must be a whole number, got 'abc'" in message
            assert "errors.pydantic.dev" not in message and "Accepted parameters:" in message
            message = error(await s.call_tool("get_memory", {"projectRoot": root}))
            assert "id is required (a string)" in message
            assert message.startswith("get_memory: "), message

    anyio.run(main)


def test_values_of_the_wrong_type_are_refused_not_read_loosely(repo: Path, tmp_path: Path) -> None:
    """`"yes"` is not true and `"300"` is not a number: an agent that sends them learns so, instead of a
    search over every project or a link pass it did not ask for."""
    small_history(repo)
    root = str(repo)

    async def main() -> None:
        async with mcp_session(tmp_path / "server.log") as s:
            ok(await s.call_tool("sync_project", {"projectRoot": root, "noEmbed": True}))
            for args, said in (
                ({"budget": "300"}, "budget must be a whole number, got '300'"),
                ({"budget": True}, "budget must be a whole number, got True"),
                ({"budget": 300.5}, "budget must be a whole number, got 300.5"),
                ({"allProjects": "true"}, "allProjects must be true or false"),
                ({"allProjects": 1}, "allProjects must be true or false"),
            ):
                message = error(
                    await s.call_tool("search_memory", {"projectRoot": root, "query": "WAL", **args})
                )
                assert said in message, (args, message)
            for args in ({"linkFailures": "yes"}, {"noEmbed": "no"}, {"noEmbed": 1}):
                message = error(await s.call_tool("sync_project", {"projectRoot": root, **args}))
                assert "must be true or false, got" in message, (args, message)
            _, found = ok(
                await s.call_tool("search_memory", {"projectRoot": root, "query": "WAL", "budget": 300})
            )
            assert found["items"]
            # A number with no fraction is the whole number JSON Schema's "integer" (the published type) takes:
            # 300.0 and 3e2 were refused as "must be a whole number, got 300.0".
            schema = next(t for t in (await s.list_tools()).tools if t.name == "search_memory").input_schema
            assert schema["properties"]["budget"]["type"] == "integer"
            for whole in (300.0, 3e2):
                _, same = ok(
                    await s.call_tool("search_memory", {"projectRoot": root, "query": "WAL", "budget": whole})
                )
                assert same["budget"] == 300 and same["items"] == found["items"], (whole, same)

    anyio.run(main)


def test_a_crash_in_a_tool_tells_the_agent_where_the_traceback_is(
    repo: Path, tmp_path: Path, isolated_home: Path
) -> None:
    """A bug inside a tool (here: a node whose stored metadata is not JSON) is a tool error naming the crash
    log, which holds the traceback, as the CLI's exit 3 does; the SDK alone said only "Error executing tool"."""
    import sqlean

    small_history(repo)
    subprocess.run([console_script(), "sync", "-q", "--no-embed"], cwd=repo, check=True)
    conn = sqlean.connect(str(repo / ".nexusmem" / "memory.db"))
    conn.execute("UPDATE nodes SET meta = '{not json' WHERE kind = 'git_commit'")
    conn.commit()
    conn.close()

    async def main() -> None:
        async with mcp_session(tmp_path / "server.log") as s:
            message = error(
                await s.call_tool("search_memory", {"projectRoot": str(repo), "query": "WAL cache"})
            )
            log = isolated_home / ".nexusmem" / "crash.log"
            assert message.startswith("search_memory: internal error ("), message
            assert f"details in {log}" in message
            assert "Traceback" in log.read_text(encoding="utf-8")
            assert "command 'mcp search_memory'" in log.read_text(encoding="utf-8")

    anyio.run(main)


@pytest.mark.slow
def test_a_linked_worktree_without_a_memory_reads_the_main_work_trees(repo: Path, tmp_path: Path) -> None:
    """Agents often work in a `git worktree add` checkout. The CLI's query and status there read the main
    work tree's memory; every MCP tool said "has no NexusMem memory yet" and told the agent to sync, which
    would have split the worktree's history off into a memory of its own."""
    small_history(repo)
    worktree = tmp_path / "wt"
    git(repo, "worktree", "add", "-q", str(worktree), "-b", "feature")

    async def main() -> None:
        async with mcp_session(tmp_path / "server.log") as s:
            ok(await s.call_tool("sync_project", {"projectRoot": str(repo), "noEmbed": True}))
            where = {"projectRoot": str(worktree)}
            text, found = ok(
                await s.call_tool("search_memory", {**where, "query": "readers blocked writers"})
            )
            assert found["items"] and "WAL" in found["items"][0]["title"], text
            _, got = ok(await s.call_tool("get_memory", {**where, "id": found["items"][0]["id"]}))
            assert "WAL" in got["title"]
            _, info = ok(await s.call_tool("get_status", where))
            assert info["root"] == str(repo), info

    anyio.run(main)
    assert not (worktree / ".nexusmem").exists()


def test_head_in_a_linked_worktree_is_that_worktrees_head(repo: Path, tmp_path: Path) -> None:
    """A worktree checked out two commits back reads the main work tree's memory; get_memory "HEAD" there (and
    `nexusmem show HEAD`, `HEAD~1`) answered with the main work tree's HEAD, the commit the agent was not on."""
    small_history(repo)
    worktree = tmp_path / "wt"
    git(repo, "worktree", "add", "-q", "--detach", str(worktree), "HEAD~2")
    subprocess.run([console_script(), "sync", "-q", "--no-embed"], cwd=repo, check=True)
    here, before = "fix(cache): switch the sqlite cache to WAL", "feat(parser): parse nested tables"

    async def main() -> None:
        async with mcp_session(tmp_path / "server.log") as s:
            for tree, wanted, title in (
                (worktree, "HEAD", here),
                (worktree, "HEAD~1", before),
                (repo, "HEAD", "refactor(parser): split the tokenizer out"),
            ):
                _, got = ok(await s.call_tool("get_memory", {"projectRoot": str(tree), "id": wanted}))
                assert got["title"].startswith(title), (tree, wanted, got["title"])

    anyio.run(main)
    for wanted, title in (("HEAD", here), ("HEAD~1", before)):
        shown = subprocess.run(
            [console_script(), "show", "--json", wanted], cwd=worktree, capture_output=True, text=True
        )
        assert shown.returncode == 0 and json.loads(shown.stdout)["title"].startswith(title), shown
    assert not (worktree / ".nexusmem").exists()


def test_two_syncs_at_once_of_a_memory_not_set_up_yet_both_finish(repo: Path, tmp_path: Path) -> None:
    """Two sync_project calls at once in one server on a repository whose memory is not set up (here: synced
    once, then .nexusmem/ removed) failed while the first was setting it up: "cannot set up the memory
    directory: No such file or directory" (both threads wrote the same temp file) or "memory.db is empty
    (0 bytes), but a sync wrote this memory" (the other thread's fresh file). The second waits, as a second
    `nexusmem sync` process does."""
    small_history(repo)
    root = str(repo)

    async def main() -> None:
        async with mcp_session(tmp_path / "server.log") as s:
            ok(await s.call_tool("sync_project", {"projectRoot": root, "noEmbed": True}))

            async def one(said: list[CallToolResult]) -> None:
                said.append(await s.call_tool("sync_project", {"projectRoot": root, "noEmbed": True}))

            for _ in range(4):
                shutil.rmtree(repo / ".nexusmem")
                said: list[CallToolResult] = []
                async with anyio.create_task_group() as both:
                    both.start_soon(one, said)
                    both.start_soon(one, said)
                summaries = [ok(result)[1] for result in said]
                assert sorted(summary["initialised"] for summary in summaries) == [False, True], summaries
                assert all(summary["total_nodes"] > 0 for summary in summaries), summaries
            text, found = ok(await s.call_tool("search_memory", {"projectRoot": root, "query": "WAL cache"}))
            assert found["items"], text

    anyio.run(main)
    assert not list((repo / ".nexusmem").glob(".*.tmp"))


def test_threads_writing_one_file_at_once_each_write_it_whole(tmp_path: Path) -> None:
    """What the server's threads write (a memory's config.json and .gitignore, the deny-list, the hook log's
    bookmark) went through one temp name per process: a second thread's rename found nothing (ENOENT) or
    renamed the first's half-written file."""
    from nexusmem import private

    target = tmp_path / "state" / "config.json"
    failures: list[BaseException] = []
    texts = [f'{{"writer": {n}, "pad": "{"x" * 4000}"}}\n'.encode() for n in range(4)]

    def writer(data: bytes) -> None:
        try:
            for _ in range(200):
                private.write_atomic(target, data)
        except BaseException as exc:
            failures.append(exc)

    threads = [threading.Thread(target=writer, args=(data,)) for data in texts]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not failures, failures
    assert target.read_bytes() in texts
    assert [p.name for p in target.parent.iterdir()] == ["config.json"]


def test_a_file_named_nexusmem_is_what_a_tool_names_not_a_sync(repo: Path, tmp_path: Path) -> None:
    """A repository tracking a FILE named .nexusmem: every tool told the agent to sync (or call
    sync_project), which fails on that file; it names the file and how to clear it instead."""
    commit(repo, "chore: a notes file", {".nexusmem": "not a directory\n"})

    async def main() -> None:
        async with mcp_session(tmp_path / "server.log") as s:
            said = error(await s.call_tool("search_memory", {"projectRoot": str(repo), "query": "notes"}))
            assert f"{repo / '.nexusmem'} is a file, not a directory; move it aside" in said, said
            assert "sync_project" not in said

    anyio.run(main)


def test_a_folder_named_with_a_newline_stays_on_the_error_line(tmp_path: Path) -> None:
    """A repository folder named with a newline and a tab: get_status and search_memory said it has no memory
    over two lines (a raw newline in the error), where the CLI's `Error:` line spells it `\\n`."""
    odd = init_repo(tmp_path / "nl\nrepo\tx")
    small_history(odd)
    shown = str(odd).replace("\n", "\\n").replace("\t", "\\t")

    async def main() -> None:
        async with mcp_session(tmp_path / "server.log") as s:
            where = {"projectRoot": str(odd)}
            for tool, args in (("get_status", where), ("search_memory", {**where, "query": "WAL cache"})):
                said = error(await s.call_tool(tool, args))
                assert "\n" not in said and "\t" not in said, (tool, said)
                assert f"{shown} has no NexusMem memory yet" in said, (tool, said)
            text, _ = ok(await s.call_tool("sync_project", {**where, "noEmbed": True}))
            assert shown in text and "\t" not in text

    anyio.run(main)


def test_a_search_sees_the_commands_run_since_the_last_sync(repo: Path, tmp_path: Path) -> None:
    """An agent asking mid-task about the test it has just run found nothing of it: the hook had logged
    it, but a sync came only with the next commit (and nothing told the agent to call sync_project)."""
    small_history(repo)

    async def main() -> None:
        async with mcp_session(tmp_path / "server.log") as s:
            where = {"projectRoot": str(repo)}
            ok(await s.call_tool("sync_project", {**where, "noEmbed": True}))
            log = Path(os.environ["NEXUSMEM_HOME"]) / "shell-history.jsonl"
            line = {"ts": int(time.time() * 1000), "cwd": str(repo), "exit": 1, "shell": "bash", "v": 1}
            with log.open("a", encoding="utf-8") as handle:
                command = "pytest tests/test_zetaword_case.py"
                handle.write(json.dumps({**line, "command": command, "session": "agent"}) + "\n")
            text, found = ok(await s.call_tool("search_memory", {**where, "query": "zetaword_case"}))
            assert found["items"] and found["items"][0]["title"] == f"{command} (exit 1)", text

    anyio.run(main)


def test_since_today_is_the_local_day_of_the_server(repo: Path, tmp_path: Path) -> None:
    """search_memory's `since: "today"` and `until: "yesterday"` were UTC days: in Tokyo a command run five
    minutes after midnight and one run five minutes before it were both "yesterday" (they share a UTC day).
    They are the days of the server's local time zone, which it inherits from the agent that starts it."""
    small_history(repo)
    with local_zone("Asia/Tokyo") as zone:
        clear_of_midnight(120, zone)  # the day `now` is in is still the day when the server is asked
        now = datetime.now(zone)
        midnight = datetime.combine(now.date(), dtime(), tzinfo=zone)
        if now - midnight < timedelta(minutes=10):
            pytest.skip("the day has just begun in Tokyo: today's command would be in the future")
        start = int(midnight.timestamp()) * 1000
        write_commands(repo, [(start - 300_000, "make test", 2), (start + 300_000, "make build", 1)])

        async def main() -> None:
            async with mcp_session(tmp_path / "server.log") as s:
                where = {"projectRoot": str(repo), "query": "make"}
                ok(await s.call_tool("sync_project", {"projectRoot": str(repo), "noEmbed": True}))
                _text, today = ok(await s.call_tool("search_memory", {**where, "since": "today"}))
                assert [it["title"] for it in today["items"]] == ["make build (exit 1)"], today["items"]
                _text, before = ok(await s.call_tool("search_memory", {**where, "until": "yesterday"}))
                assert [it["title"] for it in before["items"]] == ["make test (exit 2)"], before["items"]

        anyio.run(main)


def test_since_takes_an_age_written_out(repo: Path, tmp_path: Path) -> None:
    """search_memory's `since: "2 days ago"` was refused ("'2 days ago' is not a time: use YYYY-MM-DD, …"):
    an age written out in words is the age 2d is, in since, until and asOf alike, and the tool's parameter
    says so."""
    small_history(repo)
    now = int(time.time() * 1000)
    write_commands(repo, [(now - 5 * 86_400_000, "make test", 2), (now - 3_600_000, "make build", 1)])

    async def main() -> None:
        async with mcp_session(tmp_path / "server.log") as s:
            listed = {t.name: t for t in (await s.list_tools()).tools}
            assert "2 days ago" in listed["search_memory"].input_schema["properties"]["since"]["description"]
            where = {"projectRoot": str(repo), "query": "make"}
            ok(await s.call_tool("sync_project", {"projectRoot": str(repo), "noEmbed": True}))
            for since in ("2 days ago", "2 days", "last 2 days", "48 hours ago", "1 week ago"):
                _text, recent = ok(await s.call_tool("search_memory", {**where, "since": since}))
                expected = (
                    ["make build (exit 1)"]
                    if "week" not in since
                    else ["make build (exit 1)", "make test (exit 2)"]
                )
                assert sorted(it["title"] for it in recent["items"]) == sorted(expected), (
                    since,
                    recent["items"],
                )
            _text, older = ok(await s.call_tool("search_memory", {**where, "until": "3 days ago"}))
            assert [it["title"] for it in older["items"]] == ["make test (exit 2)"], older["items"]

    anyio.run(main)


def test_a_long_backlog_is_left_to_the_next_sync_not_stored_by_a_search(repo: Path) -> None:
    """50,000 commands logged since the last sync held the first search 11 s: a search stores at most a
    short backlog first (catchup.CATCH_UP_MAX_BYTES), a longer one is the next sync's."""
    from nexusmem import catchup, sync

    small_history(repo)
    sync.sync(repo, embed=False)
    log = Path(os.environ["NEXUSMEM_HOME"]) / "shell-history.jsonl"
    base = {"ts": int(time.time() * 1000) - 3_600_000, "cwd": str(repo), "exit": 0, "shell": "bash", "v": 1}
    with log.open("a", encoding="utf-8") as handle:
        for i in range(catchup.CATCH_UP_MAX_BYTES // 100 + 1):
            handle.write(json.dumps({**base, "ts": base["ts"] + i, "command": f"make step-{i:06d}"}) + "\n")
    from nexusmem import mcp_server

    # The answer says so (inside its budget), and tells the agent what to call.
    _text, found = ok(mcp_server.run_search(str(repo), "readers blocked writers", 300, None))
    assert mcp_server.BACKLOG_NOTE in found["notes"] and found["tokens_used"] <= 300, found
    assert catchup.catch_up_shell(repo) == catchup.BACKLOG
    assert sync.sync(repo, embed=False).added > 5_000
    _text, found = ok(mcp_server.run_search(str(repo), "readers blocked writers", 300, None))
    assert mcp_server.BACKLOG_NOTE not in found["notes"]


@pytest.mark.slow
def test_search_says_when_head_moved_since_the_last_sync(repo: Path, tmp_path: Path) -> None:
    """search_memory after `git reset --hard HEAD~1` answered with the dropped commit and no word of it (an
    agent reads no status): its notes, in the text and the structured content, say it as status does."""
    small_history(repo)
    old = git(repo, "rev-parse", "HEAD").strip()
    run_script("sync", "--no-embed", cwd=repo)
    root = str(repo)

    async def main() -> None:
        async with mcp_session(tmp_path / "server.log") as s:
            query = {"projectRoot": root, "query": "split the tokenizer"}
            text, found = ok(await s.call_tool("search_memory", query))
            assert "HEAD is" not in text and not any("HEAD is" in n for n in found["notes"])
            git(repo, "reset", "-q", "--hard", "HEAD~1")
            head = git(repo, "rev-parse", "HEAD").strip()
            said = f"HEAD is {head[:10]}, memory is at {old[:10]} (commits made without the"
            text, found = ok(await s.call_tool("search_memory", query))
            assert f"note: {said}" in text and "the sync_project tool" in text
            [note] = [n for n in found["notes"] if n.startswith(said)]
            assert "or hold ones no branch has now" in note
            _, _synced = ok(await s.call_tool("sync_project", {"projectRoot": root}))
            text, found = ok(await s.call_tool("search_memory", query))
            assert "HEAD is" not in text and not any("HEAD is" in n for n in found["notes"])

    anyio.run(main)
