"""The conversation source: the agents' transcripts in their real formats (tests/helpers/transcripts.py), synced
through the real CLI into a real store in a real git repository."""

from __future__ import annotations

import json
import os
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import anyio
import pytest

from nexusmem import project as project_mod
from nexusmem.nodes import Node
from nexusmem.store.nodes import StoredNode

from helpers import commit, git, query_json, run_cli, run_script
from helpers import transcripts as T
from helpers.git import init_repo
from helpers.mcp import mcp_session

START = datetime.now(timezone.utc).replace(microsecond=0) - timedelta(hours=3)


@pytest.fixture
def world(repo: Path, tmp_path: Path, isolated_home: Path) -> dict[str, Any]:
    """A repository with one commit and transcripts of all four agents (plus another project's)."""
    commit(repo, "feat: cache", {"src/cache.py": "CACHE = {}\n", "src/db.py": "POOL = 5\n"})
    other = init_repo(tmp_path / "other")
    claude = T.write_claude(isolated_home / ".claude", repo, other, START)
    codex = T.write_codex(isolated_home / ".codex", repo, other, START)
    aider = T.write_aider(repo, START)
    gemini = T.write_gemini(isolated_home / ".gemini", repo, START)
    return {
        "repo": repo,
        "home": isolated_home,
        "claude": claude,
        "codex": codex,
        "aider": aider,
        "gemini": gemini,
    }


def sync_json(repo: Path, *extra: str) -> dict[str, Any]:
    out = run_cli("-C", str(repo), "sync", "--no-embed", "--json", *extra).stdout
    data: dict[str, Any] = json.loads(out)
    return data


def part(summary: dict[str, Any], name: str = "conversation") -> dict[str, Any]:
    found = [s for s in summary["sources"] if s["name"] == name]
    assert found, f"source {name} did not run: {[s['name'] for s in summary['sources']]}"
    return found[0]


def nodes(repo: Path, kind: str | None = None) -> list[StoredNode]:
    with project_mod.load(repo).open_store(readonly=True) as store:
        return list(store.iter_nodes(kind))


def files_of(repo: Path, node_id: str) -> list[str]:
    with project_mod.load(repo).open_store(readonly=True) as store:
        return store.files_of(node_id)


def turns(repo: Path) -> list[StoredNode]:
    return sorted(nodes(repo, "conversation_turn"), key=lambda n: (n.ts, n.natural_key))


def agent_calls(repo: Path) -> dict[str, StoredNode]:
    return {n.natural_key: n for n in nodes(repo, "shell_command") if n.natural_key.startswith("agent:")}


def named(repo: Path, agent: str, path: Path) -> str:
    """What a skipped record's note calls the transcript at PATH: `claude-code transcript #1a2b3c4d (modified
    2026-12-05)`, by the keyed digest of its path the conversation cursor keeps it by, and no path."""
    from nexusmem.sources.conversation.source import _decode_cursor, _name

    with project_mod.load(repo).open_store(readonly=True) as store:
        _files, secret = _decode_cursor(store.cursor("conversation"))
    return _name(agent, secret, str(path))


def test_off_by_default_and_on_for_one_run_with_the_flag(world: dict[str, Any]) -> None:
    repo = world["repo"]
    plain = sync_json(repo)
    assert "conversation" not in [s["name"] for s in plain["sources"]]
    assert turns(repo) == []
    summary = sync_json(repo, "--conversation")
    assert part(summary)["added"] > 0
    # Not persisted: the next plain sync does not read transcripts.
    again = sync_json(repo)
    assert "conversation" not in [s["name"] for s in again["sources"]]
    config = json.loads((repo / ".nexusmem" / "config.json").read_text())
    assert config["sources"]["conversation"]["enabled"] is False


def test_every_agent_recorded_and_nothing_from_other_projects(world: dict[str, Any]) -> None:
    repo = world["repo"]
    sync_json(repo, "--conversation")
    found = turns(repo)
    assert {n.meta["agent"] for n in found} == {"claude-code", "codex", "aider", "gemini"}
    text = "\n".join(n.title + n.body + json.dumps(n.meta) for n in nodes(repo))
    assert "OTHERPROJECT" not in text
    assert "COMPACTIONMARKER" not in text  # agent-acompact-* runs are the CLI's own
    for injected in ("Injected context", "AGENTS.md", "environment_context", "Caveat:", "command-name"):
        assert injected not in text, injected
    questions = {n.meta["question"] for n in found}
    assert "run the migration tests" in questions
    assert "why does the build need node 20?" in questions
    for n in found:
        assert n.provenance == "recorded" and n.source == "conversation"
        assert n.meta["cwd"] == "."
        assert set(n.meta) >= {"agent", "session_id", "turn", "sidechain", "cwd", "question"}


def test_claude_code_main_thread_subagents_and_tool_calls(world: dict[str, Any]) -> None:
    repo = world["repo"]
    sync_json(repo, "--conversation")
    claude = [n for n in turns(repo) if n.meta["agent"] == "claude-code"]
    main = [n for n in claude if not n.meta["sidechain"]]
    side = [n for n in claude if n.meta["sidechain"]]
    # Two questions in the main thread: tool results, /clear and isMeta lines are not questions.
    assert sorted({n.meta["turn"] for n in main}) == [0, 1]
    assert all(n.meta["session_id"] == T.CLAUDE_SESSION for n in main)
    first = next(n for n in main if n.meta["turn"] == 0)
    assert first.meta["question"].startswith("why does test_cache_eviction fail?")
    assert "never evicts" in first.body  # assistant prose after the tool call is kept
    assert "hmm" not in first.body  # thinking blocks are not prose
    assert "AssertionError: lru kept 3 items" not in first.body  # tool output is not the answer
    assert "$ pytest tests/test_cache.py -k eviction (exit 1)" in first.body
    # All three subagent layouts, tagged and kept out of the main thread.
    assert {n.meta["thread"] for n in side} == {"a1b2c3", "old123", "sidechain"}
    assert not any("retry helpers" in n.body for n in main)
    assert all(n.title.startswith("[subagent") for n in side)
    calls = agent_calls(repo)
    fail = calls["agent:claude-code:toolu_01FAIL"]
    assert fail.meta["exit"] == 1 and fail.meta["author"] == "claude-code"
    assert fail.meta["author_kind"] == "agent" and fail.meta["call_id"] == "toolu_01FAIL"
    assert calls["agent:claude-code:toolu_01PASS"].meta["exit"] == 0
    assert "agent:claude-code:toolu_01SUB" in calls  # the subagent's call is recorded too


OTTER = "0a7e7000-0000-4000-8000-0000000000a1"  # the session resumed
RESUMED = "b2e5e000-0000-4000-8000-0000000000b2"  # `claude --resume OTTER` (copies rewritten to this id)
FORKED = "c3f0c000-0000-4000-8000-0000000000c3"  # another resume whose copies kept OTTER's id


def _otter_session(cwd: Path, start: datetime) -> T.ClaudeWriter:
    first = T.ClaudeWriter(OTTER, cwd, start)
    first.user("why does the otter queue stall?")
    first.bash("toolu_01OTTER", "pytest tests/test_queue.py", "1 failed", exit_code=1, prose="Checking.")
    first.say("The otter queue never acks its messages.")
    first.user("and the heron cache?")
    first.say("The heron cache is fine.")
    return first


def _resumed(first: T.ClaudeWriter, session: str, question: str, *, rewrite: bool) -> list[Any]:
    """The records of a session resumed from FIRST into SESSION's file: FIRST's records (their sessionId
    rewritten to SESSION when REWRITE), then one more exchange."""
    copies = [{**r, "sessionId": session} if rewrite else dict(r) for r in first.records]
    more = T.ClaudeWriter(session, Path(first.cwd), first.t + timedelta(minutes=30))
    more.last = first.last
    more.user(question)
    more.say("Done: " + question)
    return copies + more.records


def _sessions(repo: Path) -> dict[str, list[str]]:
    """Session id → the questions of its main-thread turns, in order (each stored turn once)."""
    out: dict[str, list[str]] = {}
    for n in turns(repo):
        if n.meta["agent"] == "claude-code" and n.meta["chunk"] == 0:
            out.setdefault(n.meta["session_id"], []).append(n.meta["question"])
    return out


def test_a_resumed_claude_session_does_not_store_the_turns_it_repeats(
    repo: Path, isolated_home: Path, tmp_path: Path
) -> None:
    """`claude --resume` writes a new `<new session id>.jsonl` that repeats the records of the session it
    continues (same uuids). Copies carrying the new session id were stored again as that session's turns:
    every earlier question twice, and the new session summarised with the old one's turns. A turn already
    stored under the session it came from stays that session's (same node), in a later sync, in the sync that
    reads both files first (the resumed file read first by name), and in a rebuild; what was asked after the
    resume is the new session's, whether the copies carry the old id (Claude Code's) or the new one."""
    commit(repo, "feat: start", {"a.txt": "a\n"})
    folder = isolated_home / ".claude" / "projects" / "-repo"
    first = _otter_session(repo, START)
    original = first.write(folder / f"{OTTER}.jsonl")
    os.utime(original, (time.time() - 7200, time.time() - 7200))
    sync_json(repo, "--conversation")
    T._write_jsonl(
        folder / f"{RESUMED}.jsonl", _resumed(first, RESUMED, "now ack the otter queue", rewrite=True)
    )
    T._write_jsonl(folder / f"{FORKED}.jsonl", _resumed(first, FORKED, "try a heron ttl", rewrite=False))
    sync_json(repo, "--conversation")
    expected = {
        OTTER: ["why does the otter queue stall?", "and the heron cache?"],
        RESUMED: ["now ack the otter queue"],
        FORKED: ["try a heron ttl"],
    }
    assert _sessions(repo) == expected
    assert agent_calls(repo)["agent:claude-code:toolu_01OTTER"].meta["session"] == OTTER
    with project_mod.load(repo).open_store(readonly=True) as store:
        counted = {s.session_id: s.turns for s in store.conversation_sessions(project_mod.load(repo).id)}
    assert counted == {OTTER: 2, RESUMED: 1, FORKED: 1}  # what the session summaries are made of
    sync_json(repo, "--rebuild", "--conversation")
    assert _sessions(repo) == expected
    original.unlink()  # Claude Code deletes transcripts after 30 days: a rebuild keeps their turns
    sync_json(repo, "--rebuild", "--conversation")
    assert _sessions(repo) == expected

    # Both files new to the sync that reads them: the copies are met in their own session's file first.
    fresh = init_repo(tmp_path / "fresh")
    commit(fresh, "feat: start", {"a.txt": "a\n"})
    elsewhere = isolated_home / ".claude" / "projects" / "-fresh"
    again = _otter_session(fresh, START)
    older = again.write(elsewhere / "zz-original.jsonl")  # its name sorts after the resumed one's
    os.utime(older, (time.time() - 7200, time.time() - 7200))
    T._write_jsonl(
        elsewhere / "aa-resumed.jsonl", _resumed(again, RESUMED, "now ack the otter queue", rewrite=True)
    )
    sync_json(fresh, "--conversation")
    once = {
        OTTER: ["why does the otter queue stall?", "and the heron cache?"],
        RESUMED: ["now ack the otter queue"],
    }
    assert _sessions(fresh) == once

    # Stored twice by a version before this one (the resumed file's copies first): a rebuild keeps each once,
    # in the session it came from.
    with project_mod.load(fresh).open_store() as store:
        otter = [n for n in store.iter_nodes("conversation_turn") if n.meta["session_id"] == OTTER]

        def stored_as(n: StoredNode, session: str) -> Node:
            key, ref = n.natural_key.replace(OTTER, session), n.ref.replace(OTTER, session)
            meta = {**n.meta, "session_id": session}
            return Node(
                n.project_id, n.kind, n.source, key, ref, n.title, n.body, n.ts, n.signal, n.group, meta=meta
            )

        with store.transaction():
            store.conn.executemany("DELETE FROM nodes WHERE id = ?", [(n.id,) for n in otter])
            store.upsert([stored_as(n, RESUMED) for n in otter])
            store.upsert([stored_as(n, OTTER) for n in otter])
    assert len(_sessions(fresh)[RESUMED]) == 3
    sync_json(fresh, "--rebuild", "--conversation")
    assert _sessions(fresh) == once


def test_codex_pairs_calls_with_outputs_and_skips_boilerplate(world: dict[str, Any]) -> None:
    repo = world["repo"]
    sync_json(repo, "--conversation")
    codex = [n for n in turns(repo) if n.meta["agent"] == "codex"]
    main = [n for n in codex if not n.meta["sidechain"]]
    assert [n.meta["question"] for n in main] == ["run the migration tests"]
    assert main[0].meta["session_id"] == T.CODEX_SESSION and main[0].meta["model"] == "gpt-5.5"
    assert "table copy" in main[0].body
    assert files_of(repo, main[0].id) == ["src/db.py"]  # named by its apply_patch
    assert [n.meta["question"] for n in codex if n.meta["sidechain"]] == ["check the lint config"]
    calls = agent_calls(repo)
    assert calls["agent:codex:call_MIGFAIL"].meta["exit"] == 1  # "Process exited with code 1"
    assert calls["agent:codex:call_STATUS"].meta["exit"] == 0  # JSON output, metadata.exit_code
    assert calls["agent:codex:call_STATUS"].ref == "git status --short"  # ["bash","-lc",...] unwrapped


def test_aider_sessions_questions_and_times(world: dict[str, Any]) -> None:
    repo = world["repo"]
    sync_json(repo, "--conversation")
    aider = [n for n in turns(repo) if n.meta["agent"] == "aider"]
    questions = [n.meta["question"] for n in aider]
    assert questions == [
        "add a health endpoint\nthat returns the version",
        "why is the connection pool size 5?",
    ]
    assert len({n.meta["session_id"] for n in aider}) == 2
    # The first question's time comes from .aider.input.history (40 s after the session started).
    assert aider[0].ts == int((START + timedelta(seconds=40)).timestamp() * 1000)
    assert "3 passed" not in aider[0].body  # `>` lines are Aider's output, not the model's reply
    assert "Added `/health`" in aider[0].body
    running = [c for k, c in agent_calls(repo).items() if k.startswith("agent:aider:")]
    assert [c.ref for c in running] == ["python -m pytest tests/test_db.py"]
    assert running[0].meta["exit"] is None  # Aider's history does not say


def test_gemini_attributed_by_hashing_the_root(world: dict[str, Any], tmp_path: Path) -> None:
    repo, home = world["repo"], world["home"]
    T.write_gemini(home / ".gemini", tmp_path / "elsewhere", START)  # another root's hash: not ours
    # A folder named some other way (a newer Gemini CLI's short name) holding a session of this root.
    moved = T.write_gemini(home / ".gemini", repo, START + timedelta(hours=1), session="gem-moved")
    target = home / ".gemini" / "tmp" / "my-repo" / "chats" / moved.name
    target.parent.mkdir(parents=True)
    moved.rename(target)
    sync_json(repo, "--conversation")
    gem = [n for n in turns(repo) if n.meta["agent"] == "gemini"]
    assert [n.meta["question"] for n in gem] == ["why does the build need node 20?"] * 2
    assert {n.meta["session_id"] for n in gem} == {"gem-5e55-10n", "gem-moved"}
    assert agent_calls(repo)["agent:gemini:gem-5e55-10n/run_shell_command-1"].meta["exit"] == 0


def test_gemini_session_started_in_a_subdirectory_is_found(world: dict[str, Any], tmp_path: Path) -> None:
    # Gemini names a session's folder after the directory it started in: one started in src/ was not found.
    repo, home = world["repo"], world["home"]
    sync_json(repo, "--conversation")  # the root's session, read before: cursor entries exist
    T.write_gemini(home / ".gemini", repo / "src", START + timedelta(hours=1), session="gem-in-src")
    T.write_gemini(home / ".gemini", repo / "not-tracked", START, session="gem-untracked")
    T.write_gemini(home / ".gemini", tmp_path / "other" / "src", START, session="gem-other")
    summary = sync_json(repo, "--conversation")
    gem = {n.meta["session_id"]: n for n in turns(repo) if n.meta["agent"] == "gemini"}
    assert sorted(gem) == ["gem-5e55-10n", "gem-in-src"]
    assert gem["gem-in-src"].meta["cwd"] == "src" and gem["gem-5e55-10n"].meta["cwd"] in ("", ".")
    assert "agent:gemini:gem-in-src/run_shell_command-1" in agent_calls(repo)
    assert (
        part(summary)["skipped"] == 1
    )  # the new session's one non-object message (write_gemini's "garbage")


def test_a_gemini_subdirectory_session_passed_over_before_the_upgrade_is_read_once(
    world: dict[str, Any],
) -> None:
    repo, home = world["repo"], world["home"]
    T.write_gemini(home / ".gemini", repo / "src", START, session="gem-in-src")
    sync_json(repo, "--conversation")
    # Make the cursor what the version before kept: files by their paths, fingerprints without the
    # subdirectory mark, and this session recorded as another project's.
    from nexusmem.sources.conversation import gemini
    from nexusmem.sources.conversation.source import _ours

    with project_mod.load(repo).open_store() as store:
        cursor = json.loads(store.cursor("conversation") or "{}")
        secret = bytes.fromhex(cursor["key"])
        for path in map(str, gemini.transcript_files()):
            entry = cursor["files"].pop(_ours(secret, path))
            entry["fp"] = entry["fp"][:4]
            entry["ours"] = "gem-in-src" not in path and entry["ours"]
            cursor["files"][path] = entry
        with store.transaction():
            store.record_sync("conversation", json.dumps(cursor), 0, 0, 0, 0)
        store.conn.execute("DELETE FROM nodes WHERE json_extract(meta, '$.session_id') = 'gem-in-src'")
    assert "gem-in-src" not in {n.meta["session_id"] for n in turns(repo)}
    sync_json(repo, "--conversation")
    assert "gem-in-src" in {n.meta["session_id"] for n in turns(repo)}


def test_long_answer_chunked_at_headings_as_siblings(world: dict[str, Any]) -> None:
    repo = world["repo"]
    sync_json(repo, "--conversation")
    plan = [n for n in turns(repo) if n.meta["question"].startswith("plan the retry layer")]
    assert len(plan) == 3
    assert len({n.group for n in plan}) == 1 and plan[0].group is not None
    titles = sorted(n.title for n in plan)
    assert [t.split(" › ")[1] for t in titles] == ["Backoff schedule", "Idempotency keys", "Jitter"]
    jitter = next(n for n in plan if n.title.endswith("Jitter"))
    assert "# not a heading inside a fence" in jitter.body


def test_secrets_never_reach_the_store(world: dict[str, Any]) -> None:
    repo, home = world["repo"], world["home"]
    w = T.ClaudeWriter("5ec5ec5e-0000-4000-8000-000000000000", repo, START + timedelta(minutes=5))
    w.user(f"deploy with GITHUB_TOKEN={T.SECRET}")
    w.bash("toolu_01SECRET", f"curl -H 'Authorization: token {T.SECRET}' https://api.github.com/user", "{}")
    w.say(f"Done; the token {T.SECRET} works.")
    w.write(home / ".claude" / "projects" / "-x" / "5ec5ec5e-0000-4000-8000-000000000000.jsonl")
    sync_json(repo, "--conversation")
    state = repo / ".nexusmem"
    blobs = b"".join(p.read_bytes() for p in state.iterdir() if p.is_file())
    assert T.SECRET.encode() not in blobs
    assert any("«redacted:" in n.body for n in turns(repo))
    assert "«redacted:" in agent_calls(repo)["agent:claude-code:toolu_01SECRET"].ref


def test_resync_does_no_work_and_reads_changed_files_again(world: dict[str, Any]) -> None:
    repo = world["repo"]
    first = part(sync_json(repo, "--conversation"))
    assert first["added"] > 0
    second = part(sync_json(repo, "--conversation"))
    assert second["noop"] and second["skipped"] == 0 and second["notes"] == []
    # Appending a turn reads that file again: only the new exchange and its call are written.
    main: Path = world["claude"]["main"]
    w = T.ClaudeWriter(T.CLAUDE_SESSION, repo, START + timedelta(hours=1))
    w.n = 100
    w.user("and the docs?")
    w.bash("toolu_01DOCS", "mkdocs build", "ok")
    with main.open("a", encoding="utf-8") as f:
        f.write("\n" + "".join(json.dumps(r) + "\n" for r in w.records))
    third = part(sync_json(repo, "--conversation"))
    assert (third["added"], third["updated"]) == (2, 0)
    assert third["notes"] == ["read 1 changed transcript file(s) of 9"]
    (docs,) = [n for n in turns(repo) if n.meta["question"] == "and the docs?"]
    assert (docs.meta["turn"], docs.meta["thread"]) == (2, "main")  # numbering carried on past turns 0, 1
    # A file rewritten under us (same name, new content) is read again.
    w2 = T.ClaudeWriter(T.CLAUDE_SESSION_2, repo, START)
    w2.user("REWRITTEN question")
    w2.say("REWRITTEN answer")
    w2.write(world["claude"]["folder"] / "agent-old123.jsonl")
    fourth = part(sync_json(repo, "--conversation"))
    assert fourth["notes"] == ["read 1 changed transcript file(s) of 9"] and fourth["added"] == 1
    assert any("REWRITTEN" in n.body for n in turns(repo))


def test_bad_records_skipped_and_counted_with_file_and_line(world: dict[str, Any]) -> None:
    repo = world["repo"]
    main_path: Path = world["claude"]["main"]
    hour_ago = time.time() - 3600
    os.utime(main_path, (hour_ago, hour_ago))  # its last line was cut and nothing wrote to it since
    summary = part(sync_json(repo, "--conversation"))
    problems = summary["problems"]
    main = named(repo, "claude-code", main_path)
    assert f"{main}, line 16: not a JSON line" in problems
    assert f"{main}, line 15: unknown record type 'brand-new-record-kind'" in problems
    assert f"{main}, line 17: not a JSON line (the file ends in it)" in problems  # the line cut mid-write
    assert any("mystery_item" in p for p in problems)
    assert any("messages[3]" in p for p in problems)  # gemini's non-object message
    assert summary["skipped"] == len(problems)
    status = json.loads(run_cli("-C", str(repo), "status", "--json").stdout)
    assert "not a JSON line" in json.dumps(status)
    text = run_cli("-C", str(repo), "status").stdout
    assert "9 transcript file(s) seen, 7 of this project" in text
    # The records after each bad one were still read.
    assert any(n.meta["thread"] == "sidechain" for n in turns(repo))


def test_a_line_being_written_is_no_bad_record(world: dict[str, Any]) -> None:
    """The last line of a transcript written moments ago, with no newline yet, is the agent's line in the
    making: it was reported as a bad record, and status kept listing it after the line was done."""
    repo = world["repo"]
    main: Path = world["claude"]["main"]
    summary = part(sync_json(repo, "--conversation"))
    name = named(repo, "claude-code", main)
    assert not any(p.startswith(f"{name}, line 17:") for p in summary["problems"]), summary["problems"]
    with main.open("a", encoding="utf-8") as f:  # the agent finishes the line
        f.write('{"role":"user","content":"done"}}\n')
    part(sync_json(repo, "--conversation"))
    status = json.dumps(json.loads(run_cli("-C", str(repo), "status", "--json").stdout))
    assert f"{name}, line 17:" not in status and f"{name}, line 16: not a JSON line" in status


def test_over_long_line_is_skipped_without_stopping_the_file(
    world: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    from nexusmem.sources.conversation import model

    monkeypatch.setattr(model, "MAX_LINE_BYTES", 4096)
    repo, home = world["repo"], world["home"]
    w = T.ClaudeWriter("10a9-0000", repo, START)
    w.user("first question before the huge line")
    w.say("x" * 20_000)  # one line of ~20 KB
    w.user("question after the huge line")
    w.say("still read")
    path = w.write(home / ".claude" / "projects" / "-long" / "10a9-0000.jsonl")
    summary = part(sync_json(repo, "--conversation"))
    assert f"{named(repo, 'claude-code', path)}, line 2: line longer than 0 MB" in summary["problems"]
    after = [n for n in turns(repo) if n.meta["session_id"] == "10a9-0000"]
    assert [n.meta["question"] for n in after] == [
        "first question before the huge line",
        "question after the huge line",
    ]


def test_claude_config_dir_and_codex_home_are_honoured(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    commit(repo, "init", {"a.txt": "a\n"})
    other = init_repo(tmp_path / "other")
    T.write_claude(tmp_path / "cc", repo, other, START)
    T.write_codex(tmp_path / "cx", repo, other, START)
    sync_json(repo, "--conversation")
    assert turns(repo) == []  # nothing under ~/.claude or ~/.codex
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "cc"))
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "cx"))
    sync_json(repo, "--conversation")
    assert {n.meta["agent"] for n in turns(repo)} == {"claude-code", "codex"}


def test_agents_setting_limits_what_is_read_and_is_validated(world: dict[str, Any]) -> None:
    repo = world["repo"]
    run_cli("-C", str(repo), "init")
    config_path = repo / ".nexusmem" / "config.json"
    config = json.loads(config_path.read_text())
    config["sources"]["conversation"] = {"enabled": True, "agents": ["codex"]}
    config_path.write_text(json.dumps(config))
    sync_json(repo)  # enabled in the config: no flag needed
    assert {n.meta["agent"] for n in turns(repo)} == {"codex"}
    config["sources"]["conversation"]["agents"] = ["codex", "cursor"]
    config_path.write_text(json.dumps(config))
    bad = run_cli("-C", str(repo), "sync", ok=False)
    assert bad.exit_code != 0
    assert "'sources.conversation.agents' may only name claude-code, codex, aider, gemini" in bad.output
    assert '"cursor"' in bad.output


def test_worktree_sessions_are_attributed_with_a_relative_cwd(
    repo: Path, tmp_path: Path, isolated_home: Path
) -> None:
    commit(repo, "init", {"src/a.py": "A = 1\n"})
    tree = tmp_path / "wt-feature"
    git(repo, "worktree", "add", "-q", str(tree), "-b", "feature")
    w = T.ClaudeWriter("wt000000-0000", tree / "src", START)
    w.user("what does A mean in the feature branch?")
    w.say("A is the answer.")
    w.write(isolated_home / ".claude" / "projects" / "-wt" / "wt000000-0000.jsonl")
    sync_json(repo, "--conversation")
    found = turns(repo)
    assert [n.meta["cwd"] for n in found] == ["src"]


def test_scan_conversation_previews_the_next_sync(world: dict[str, Any]) -> None:
    repo = world["repo"]
    before = run_cli("-C", str(repo), "scan-conversation").stdout
    assert "conversation turns" not in before
    head = before.strip().splitlines()[-1]
    assert head.startswith("conversation: ") and " new, 0 changed, 0 unchanged" in head
    assert head.endswith("skipped. Nothing was written.")
    listed = json.loads(run_cli("-C", str(repo), "scan-conversation", "--json").stdout)
    kinds = {item["kind"] for item in listed}
    assert kinds == {"conversation_turn", "shell_command"}
    assert not (repo / ".nexusmem").exists() or turns(repo) == []  # nothing written
    sync_json(repo, "--conversation")
    after = run_cli("-C", str(repo), "scan-conversation").stdout.strip().splitlines()[-1]
    assert after.startswith(f"conversation: 0 new, 0 changed, {len(listed)} unchanged")


def test_failure_discussed_in_a_transcript_gets_a_discussion_link(world: dict[str, Any]) -> None:
    repo = world["repo"]
    summary = sync_json(repo, "--conversation", "--link-failures")
    assert summary["links"]["discussion"] >= 1
    failed = agent_calls(repo)["agent:claude-code:toolu_01FAIL"]
    with project_mod.load(repo).open_store(readonly=True) as store:
        links = store.links_from([failed.id])
        by_id = {n.id: n for n in store.iter_nodes("conversation_turn")}
    discussion = [to for _, to, rel in links if rel == "discussion"]
    assert len(discussion) == 1
    turn = by_id[discussion[0]]
    assert turn.meta["question"].startswith("why does test_cache_eviction fail?")
    assert "retry" in {rel for _, _, rel in links}  # the passing re-run
    # And the query shows the failure with what discussed it.
    out = run_cli("-C", str(repo), "query", "--", "pytest eviction").stdout
    assert "test_cache_eviction" in out


def test_a_plain_sync_with_transcripts_on_makes_the_failure_links(world: dict[str, Any]) -> None:
    """The source on in the config, as "Conversation transcripts" says to keep it: a plain `nexusmem sync`
    made no failure → fix or discussion link (only `--link-failures` or the post-commit sync did), so the
    agent's failed test showed alone. Now a sync that reads anything new links what it read."""
    repo = world["repo"]
    run_cli("-C", str(repo), "init")
    config_path = repo / ".nexusmem" / "config.json"
    config = json.loads(config_path.read_text())
    config["sources"]["conversation"]["enabled"] = True
    config_path.write_text(json.dumps(config))
    said = run_cli("-C", str(repo), "sync", "--no-embed").stdout
    assert "Failure links:" in said and " discussion (+" in said, said  # it changed links: the line says so
    failed = agent_calls(repo)["agent:claude-code:toolu_01FAIL"]
    with project_mod.load(repo).open_store(readonly=True) as store:
        relations = {rel for _, _, rel in store.links_from([failed.id])}
    assert {"retry", "discussion"} <= relations, relations
    found = query_json(repo, "pytest eviction")
    riders = {it["relation"] for it in found["items"] if it["linked_from"] == failed.id}
    assert {"retry", "discussion"} <= riders, found["items"]
    # A sync with nothing new to read says nothing of links and does not load the linker.
    again = run_cli("-C", str(repo), "sync", "--no-embed").stdout
    assert "Failure links" not in again, again
    assert sync_json(repo)["links"] is None


@pytest.mark.slow
def test_installed_script_and_mcp_search_find_a_conversation_turn(
    world: dict[str, Any], tmp_path: Path
) -> None:
    repo = world["repo"]
    done = run_script("-C", str(repo), "sync", "--conversation", "--no-embed", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "conversation +" in done.stdout

    async def main() -> None:
        async with mcp_session(tmp_path / "server.log") as s:
            result = await s.call_tool(
                "search_memory", {"projectRoot": str(repo), "query": "migration renames a column table copy"}
            )
            assert not result.is_error
            found = result.structured_content
            assert found is not None
            kinds = [item["kind"] for item in found["items"]]
            assert "conversation_turn" in kinds
            item = found["items"][kinds.index("conversation_turn")]
            assert item["provenance"] == "recorded"
            assert item["title"] == "run the migration tests"

    anyio.run(main)


def test_a_failure_typed_in_the_shell_links_to_the_turn_that_asked_about_it(
    repo: Path, tmp_path: Path, isolated_home: Path
) -> None:
    """The person's own failing command (prompt hook log), then a session where they ask the agent about it."""
    commit(repo, "feat: parser", {"src/parser.py": "def parse(): ...\n"})
    failed_at = START + timedelta(minutes=10)
    line = {
        "ts": int(failed_at.timestamp() * 1000),
        "cwd": str(repo),
        "exit": 1,
        "duration_ms": 812,
        "command": "pytest tests/test_parser.py",
        "shell": "zsh",
        "session": "6651a0c2-1f3a-4b2e",
        "v": 1,
    }
    log = isolated_home / ".nexusmem" / "shell-history.jsonl"
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_text(json.dumps(line) + "\n", encoding="utf-8")
    w = T.ClaudeWriter("d15c0000-0000-4000-8000-000000000000", repo, failed_at + timedelta(minutes=2))
    w.user("pytest tests/test_parser.py fails with KeyError 'tables' after my change, why?")
    w.say("The parser looks up 'tables' before the header is read; parse() must read the header first.")
    unrelated = T.ClaudeWriter("d15c0001-0000-4000-8000-000000000000", repo, failed_at + timedelta(minutes=5))
    unrelated.user("what does the parser do with nested tables?")  # shares words, not every one
    unrelated.say("It recurses.")
    folder = isolated_home / ".claude" / "projects" / "-repo"
    w.write(folder / "d15c0000-0000-4000-8000-000000000000.jsonl")
    unrelated.write(folder / "d15c0001-0000-4000-8000-000000000000.jsonl")
    # Without transcripts the failure has nothing to link to.
    assert sync_json(repo, "--link-failures")["links"]["discussion"] == 0
    summary = sync_json(repo, "--conversation", "--link-failures")
    assert summary["links"]["discussion"] == 1
    (failure,) = [n for n in nodes(repo, "shell_command") if n.ref == "pytest tests/test_parser.py"]
    assert failure.meta["exit"] == 1 and failure.meta.get("author", "me") == "me"  # typed by the person
    with project_mod.load(repo).open_store(readonly=True) as store:
        (link,) = store.links_from([failure.id])
        turn = store.get(link[1])
    assert link[2] == "discussion" and turn is not None
    assert turn.meta["session_id"] == "d15c0000-0000-4000-8000-000000000000"
    out = run_cli("-C", str(repo), "query", "--", "pytest test_parser").stdout
    assert "linked as its discussion (not a fix)" in out


def test_a_failure_is_linked_to_the_turn_it_ran_in_not_another_sessions_short_turn(
    repo: Path, isolated_home: Path
) -> None:
    """`make docs` failed in a session that asked about the docs build; a minute later another session asked
    something short that says "docs". The linker took the best BM25 hit of ±24 h, the short turn of the
    other session, and `query` showed it under the failure "linked as the fix (discussion)"; the turn the
    command ran in, which lists it under "Commands run", was not chosen. Likewise `make test`, failed in the
    first session, was linked to another session's "now add a test for it"."""
    commit(repo, "feat: docs", {"docs/conf.py": "project = 'x'\n", "Makefile": "docs:\n\tsphinx-build\n"})
    folder = isolated_home / ".claude" / "projects" / "-repo"
    ci = T.ClaudeWriter("c1d0c5aa-0000-4000-8000-000000000001", repo, START)
    ci.user("the router KeyError is back; run the tests and find out why")
    ci.bash("toolu_01MAKETEST", "make test", "make: *** [Makefile:6: test] Error 127", exit_code=2)
    ci.say("The test target needs build/venv, which was missing: the router KeyError comes from Router.add.")
    ci.user("the CI build of the docs fails with a sphinx warning treated as error; what should we do?")
    ci.bash("toolu_01MAKEDOCS", "make docs", "WARNING: duplicate label routing\nError 1", exit_code=1)
    ci.say("Sphinx 7.3 turns the duplicate label warning into an error. Decision: pin sphinx to 7.2.")
    ci.write(folder / "c1d0c5aa-0000-4000-8000-000000000001.jsonl")
    # (Its record uuids differ from the first session's, as real ones do: the test writer makes them of the
    # session id's first 8 characters, and a uuid seen in another session is that session's copy.)
    other = T.ClaudeWriter("c2d0c5aa-0000-4000-8000-000000000002", repo, START + timedelta(minutes=2))
    other.user("fix the giraffe section of the routing docs")
    other.say("giraffe fixed")
    other.user("now add a test for it")
    other.say("Added test_giraffe.")
    other.write(folder / "c2d0c5aa-0000-4000-8000-000000000002.jsonl")
    sync_json(repo, "--conversation", "--link-failures")

    by_key = agent_calls(repo)
    with project_mod.load(repo).open_store(readonly=True) as store:
        linked = {
            by_key[key].ref: [(store.get(to), rel) for _, to, rel in store.links_from([by_key[key].id])]
            for key in ("agent:claude-code:toolu_01MAKEDOCS", "agent:claude-code:toolu_01MAKETEST")
        }
    (docs_turn, rel), *more = linked["make docs"]
    assert not more and rel == "discussion" and docs_turn is not None
    assert docs_turn.meta["question"].startswith("the CI build of the docs fails")
    assert "$ make docs (exit 1)" in docs_turn.body
    (test_turn, rel), *more = linked["make test"]
    assert not more and rel == "discussion" and test_turn is not None
    assert test_turn.meta["question"].startswith("the router KeyError is back; run the tests")

    out = run_cli("-C", str(repo), "query", "--", "why does make docs fail").stdout
    lines = out.splitlines()
    at = next(i for i, line in enumerate(lines) if "make docs (exit 1)" in line)
    shown = next(line for line in lines[at + 1 :] if line.startswith("- "))
    assert "the CI build of the docs fails" in shown, out
    assert shown.endswith("-- linked as its discussion (not a fix)"), out
    assert "linked as the fix" not in out, out
    assert not any("giraffe" in line and "-- linked" in line for line in lines), out


def test_half_an_emoji_and_a_stray_byte_keep_their_exchange(repo: Path, isolated_home: Path) -> None:
    """JSON.stringify writes an emoji cut in half as a lone `\\ud83d`, which Python reads as a surrogate no
    node may hold: the whole exchange (question, answer, the command the agent ran) was dropped as "not valid
    Unicode", and `scan-conversation` crashed. A byte that is not UTF-8 lost its line, and the answer after
    it was glued onto the previous turn."""
    commit(repo, "feat: tapir", {"src/tapir.py": "X = 1\n"})
    w = T.ClaudeWriter("5e55-half-emoji", repo, START)
    w.user("why does the tapir renderer break on emoji \ud83d")
    w.bash(
        "toolu_01HALF", "grep -n '\ude00' src/tapir.py", "no match", exit_code=1, prose="It slices mid-emoji."
    )
    w.user("and the okapi encoder?")
    w.say("The okapi encoder is fine.")
    path = w.write(isolated_home / ".claude" / "projects" / "p" / "s.jsonl")
    lines = path.read_bytes().split(b"\n")
    lines[-3] = lines[-3].replace(b"okapi encoder?", b"okapi \xe9ncoder?")  # a Latin-1 byte in the question
    path.write_bytes(b"\n".join(lines))
    preview = run_cli("-C", str(repo), "scan-conversation")
    assert "tapir" in preview.stdout, preview.stdout
    summary = part(sync_json(repo, "--conversation"))
    assert summary["skipped"] == 0, summary["problems"]
    bodies = [t.body for t in turns(repo)]
    assert len(bodies) == 2, bodies
    assert (
        "tapir renderer break on emoji \ufffd" in bodies[0] and "grep -n '\ufffd' src/tapir.py" in bodies[0]
    )
    assert "okapi \ufffdncoder?" in bodies[1] and "The okapi encoder is fine." in bodies[1]
    assert "The okapi encoder is fine." not in bodies[0]
    assert [c.title for c in agent_calls(repo).values()] == ["grep -n '\ufffd' src/tapir.py (exit 1)"]
    with path.open("ab") as log:
        log.write(b"\ngarbage the agent never wrote\n")
    again = run_cli("-C", str(repo), "sync", "--no-embed", "--conversation").stdout
    assert "conversation unchanged (1 skipped)" in again, again  # was "conversation unchanged"


def test_a_codex_session_resumed_in_another_repository_files_each_turn_where_it_ran(
    repo: Path, tmp_path: Path, isolated_home: Path
) -> None:
    """A Codex session started in one repository and resumed in another (its turn_context names the new cwd)
    was filed whole under the first: the second repository's question and the command that failed there
    were found in the wrong memory, and not in their own."""
    other = init_repo(tmp_path / "bison-repo")
    for root in (repo, other):
        commit(root, "feat: start", {"a.txt": "a\n"})
    t = START

    def record(kind: str, payload: dict[str, Any]) -> dict[str, Any]:
        nonlocal t
        t += timedelta(seconds=2)
        return {"timestamp": T.iso(t), "type": kind, "payload": payload}

    def msg(role: str, text: str) -> dict[str, Any]:
        block = "output_text" if role == "assistant" else "input_text"
        return record(
            "response_item", {"type": "message", "role": role, "content": [{"type": block, "text": text}]}
        )

    lines = [
        record(
            "session_meta", {"id": "019e-moves", "cwd": str(repo), "originator": "codex-tui", "source": "cli"}
        ),
        record("turn_context", {"turn_id": "t1", "cwd": str(repo), "model": "gpt-5.5"}),
        msg("user", "why does the aardvark parser reject tabs"),
        msg("assistant", "The aardvark parser splits on spaces only."),
        record("turn_context", {"turn_id": "t2", "cwd": str(other), "model": "gpt-5.5"}),
        msg("user", "why does the bison cache go stale"),
        record(
            "response_item",
            {
                "type": "function_call",
                "name": "exec_command",
                "arguments": json.dumps({"cmd": "pytest tests/test_bison.py", "workdir": str(other)}),
                "call_id": "call_BISON",
            },
        ),
        record(
            "response_item",
            {
                "type": "function_call_output",
                "call_id": "call_BISON",
                "output": "Process exited with code 1\n",
            },
        ),
        msg("assistant", "The bison cache keys on the path, not the mtime."),
    ]
    path = (
        isolated_home
        / ".codex"
        / "sessions"
        / "2026"
        / "12"
        / "04"
        / "rollout-2026-12-04T10-00-00-019e-moves.jsonl"
    )
    path.parent.mkdir(parents=True)
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    hour_ago = time.time() - 3600
    os.utime(path, (hour_ago, hour_ago))
    for root in (repo, other):
        sync_json(root, "--conversation")
    mine = [n.title for n in turns(repo)]
    theirs = [n.title for n in turns(other)]
    assert mine == ["why does the aardvark parser reject tabs"], mine
    assert theirs == ["why does the bison cache go stale"], theirs
    assert agent_calls(repo) == {}
    assert [c.title for c in agent_calls(other).values()] == ["pytest tests/test_bison.py (exit 1)"]


def test_a_bad_line_is_counted_by_the_sync_that_first_read_it(repo: Path, isolated_home: Path) -> None:
    """A transcript that grew was read again from its last open exchange (from the top when it was under
    4 KB), and every bad line there was skipped and counted once more at each sync: a live session with one
    stray line early on reported it on every commit."""
    commit(repo, "feat: start", {"a.txt": "a\n"})
    w = T.ClaudeWriter("5e55-count-once", repo, START)
    w.user("why does the quokka importer hang")
    w.records.append("not json: a stray line the agent never meant")
    w.say("The quokka importer waits on a lock it holds.")
    path = w.write(isolated_home / ".claude" / "projects" / "p" / "s.jsonl")
    first = part(sync_json(repo, "--conversation"))
    assert first["skipped"] == 1, first["problems"]
    w.records = []
    w.user("and the numbat exporter?")
    w.say("The numbat exporter is fine.")
    with path.open("a", encoding="utf-8") as log:
        log.write("".join(json.dumps(r) + "\n" for r in w.records))
    second = part(sync_json(repo, "--conversation"))
    assert second["skipped"] == 0 and second["added"] >= 1, second
    with path.open("a", encoding="utf-8") as log:
        log.write("another stray line\n")
    third = part(sync_json(repo, "--conversation"))
    assert third["skipped"] == 1 and third["problems"] == [
        f"{named(repo, 'claude-code', path)}, line {len(path.read_text().splitlines())}: not a JSON line"
    ]
    assert [t.title for t in turns(repo)] == ["why does the quokka importer hang", "and the numbat exporter?"]


def test_a_claude_session_that_moves_into_another_repository_keeps_those_turns_out(
    repo: Path, tmp_path: Path, isolated_home: Path
) -> None:
    """A Claude Code session started here whose later records run in another repository (its shell cd'd
    there, a directory added with /add-dir) was filed whole under this one, by its first `cwd`: the other
    repository's question, answer and failing command were found in this memory. Each turn is now filed by
    the cwd of its own records, as a Codex session's are."""
    other = init_repo(tmp_path / "gnu-repo")
    for root in (repo, other):
        commit(root, "feat: start", {"a.txt": "a\n"})
    w = T.ClaudeWriter("5e55-moves", repo, START)
    w.user("why does the aardvark parser reject tabs")
    w.bash("toolu_01AARD", "pytest tests/test_aardvark.py", "1 passed", prose="Checking.")
    w.say("The aardvark parser splits on spaces only.")
    w.cwd = str(other)
    w.user("why does the gnu cache go stale")
    w.bash("toolu_01GNU", "pytest tests/test_gnu.py", "1 failed", exit_code=1)
    w.say("The gnu cache keys on the path, not the mtime.")
    w.cwd = str(repo / "src")  # back in this repository, in a subdirectory
    (repo / "src").mkdir()
    w.user("and the aardvark lexer?")
    w.say("The aardvark lexer is fine.")
    path = w.write(
        isolated_home / ".claude" / "projects" / f"-{str(repo).strip('/').replace('/', '-')}" / "s.jsonl"
    )
    hour_ago = time.time() - 3600
    os.utime(path, (hour_ago, hour_ago))
    summary = part(sync_json(repo, "--conversation"))
    assert summary["skipped"] == 0, summary["problems"]
    mine = [(n.title, n.meta["turn"]) for n in turns(repo)]
    assert mine == [("why does the aardvark parser reject tabs", 0), ("and the aardvark lexer?", 2)], mine
    bodies = "\n".join(n.body for n in turns(repo))
    assert "gnu" not in bodies, bodies
    assert [c.title for c in agent_calls(repo).values()] == ["pytest tests/test_aardvark.py (exit 0)"]
    # Read on from where it stopped, a turn appended in the other repository stays out too.
    w.records = []
    w.cwd = str(other)
    w.user("and the gnu index?")
    w.say("The gnu index is rebuilt nightly.")
    with path.open("a", encoding="utf-8") as log:
        log.write("".join(json.dumps(r) + "\n" for r in w.records))
    os.utime(path, (hour_ago + 60, hour_ago + 60))
    sync_json(repo, "--conversation")
    assert [n.title for n in turns(repo)] == [
        "why does the aardvark parser reject tabs",
        "and the aardvark lexer?",
    ]


class _ReadSpy:
    """Path.open and Path.read_bytes of one file, watched: the size every read asked for."""

    def __init__(self, path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        self.path = path
        self.reads: list[int] = []
        self.whole = 0
        real_open, real_read_bytes = Path.open, Path.read_bytes
        spy = self

        class Handle:
            def __init__(self, inner: Any) -> None:
                self.inner = inner

            def __enter__(self) -> Handle:
                return self

            def __exit__(self, *exc: object) -> None:
                self.inner.close()

            def read(self, size: int = -1) -> bytes:
                spy.reads.append(size)
                data: bytes = self.inner.read(size)
                return data

            def __getattr__(self, name: str) -> Any:
                return getattr(self.inner, name)

        def watched_open(p: Path, *args: Any, **kwargs: Any) -> Any:
            handle = real_open(p, *args, **kwargs)
            return Handle(handle) if p == spy.path else handle

        def watched_read_bytes(p: Path) -> bytes:
            if p == spy.path:
                spy.whole += 1
            return real_read_bytes(p)

        monkeypatch.setattr(Path, "open", watched_open)
        monkeypatch.setattr(Path, "read_bytes", watched_read_bytes)


def test_a_large_rollout_of_another_project_is_scanned_in_chunks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Looking for a resume in this repository, a changed Codex rollout of another project was read whole into
    memory (a 286 MB one held 314 MB at every sync). It is scanned a chunk at a time now: the name is found
    late in the file and across any chunk boundary, and no read asks for more than a chunk."""
    from nexusmem.sources.conversation import source as conversation_source

    target = "/home/dev/src/aardvark"
    chunk = 64
    monkeypatch.setattr(conversation_source, "SCAN_CHUNK", chunk, raising=False)
    path = tmp_path / "rollout.jsonl"
    spy = _ReadSpy(path, monkeypatch)
    needle = json.dumps(target, ensure_ascii=False)[1:-1].encode()
    for at in range(3 * chunk - len(needle), 3 * chunk + 1):  # every split of the name across a boundary
        path.write_bytes(b"x" * at + needle + b"y" * 50)
        assert conversation_source._names_any(path, [target]), at
    path.write_bytes(b'{"cwd":"/home/dev/src/other"}\n' * 2000 + b'{"cwd":"' + needle + b'"}\n')
    spy.reads.clear()
    assert conversation_source._names_any(path, ["/elsewhere", target])
    assert not conversation_source._names_any(path, ["/home/dev/src/bison"])
    assert spy.whole == 0 and len(spy.reads) > 2 * path.stat().st_size // chunk
    assert all(0 < size <= chunk for size in spy.reads), set(spy.reads)
    # A name that is not ASCII is found as Codex writes it (raw UTF-8) and as Python does (u-escapes).
    for written in (json.dumps("/srv/ål", ensure_ascii=False), json.dumps("/srv/ål")):
        path.write_bytes(b"x" * 1000 + b'{"cwd":' + written.encode() + b"}\n")
        assert conversation_source._names_any(path, ["/srv/ål"]), written


def test_scanning_a_large_rollout_holds_one_chunk_not_the_file(tmp_path: Path) -> None:
    import tracemalloc

    from nexusmem.sources.conversation import source as conversation_source

    path = tmp_path / "rollout.jsonl"
    line = b'{"type":"response_item","payload":{"cwd":"/home/dev/src/other","text":"' + b"z" * 4000 + b'"}}\n'
    with path.open("wb") as out:
        for _ in range((24 << 20) // len(line)):
            out.write(line)
        out.write(b'{"type":"turn_context","payload":{"cwd":"/home/dev/src/aardvark"}}\n')
    tracemalloc.start()
    try:
        assert conversation_source._names_any(path, ["/home/dev/src/aardvark"])
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 8 << 20, f"{peak >> 20} MB held for a {path.stat().st_size >> 20} MB file"


def test_a_foreign_rollout_resumed_here_late_is_found_by_the_chunked_scan(
    repo: Path, tmp_path: Path, isolated_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """End to end, with a small chunk: a Codex session started in another repository, long, and resumed in
    this one near its end, files that late turn here (and nothing of the rest)."""
    from nexusmem.sources.conversation import source as conversation_source

    monkeypatch.setattr(conversation_source, "SCAN_CHUNK", 512, raising=False)
    other = init_repo(tmp_path / "bison-repo")
    for root in (repo, other):
        commit(root, "feat: start", {"a.txt": "a\n"})
    t = START

    def record(kind: str, payload: dict[str, Any]) -> dict[str, Any]:
        nonlocal t
        t += timedelta(seconds=2)
        return {"timestamp": T.iso(t), "type": kind, "payload": payload}

    def msg(role: str, text: str) -> dict[str, Any]:
        block = "output_text" if role == "assistant" else "input_text"
        return record(
            "response_item", {"type": "message", "role": role, "content": [{"type": block, "text": text}]}
        )

    lines = [
        record("session_meta", {"id": "019e-late", "cwd": str(other), "originator": "codex-tui"}),
        record("turn_context", {"turn_id": "t1", "cwd": str(other), "model": "gpt-5.5"}),
    ]
    for n in range(200):
        lines += [msg("user", f"bison question {n}"), msg("assistant", "bison answer " + "b" * 400)]
    lines += [
        record("turn_context", {"turn_id": "t2", "cwd": str(repo), "model": "gpt-5.5"}),
        msg("user", "why does the aardvark parser reject tabs"),
        msg("assistant", "The aardvark parser splits on spaces only."),
    ]
    path = (
        isolated_home
        / ".codex"
        / "sessions"
        / "2026"
        / "12"
        / "04"
        / "rollout-2026-12-04T10-00-00-019e-late.jsonl"
    )
    path.parent.mkdir(parents=True)
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    hour_ago = time.time() - 3600
    os.utime(path, (hour_ago, hour_ago))
    assert path.stat().st_size > 100 * 512
    spy = _ReadSpy(path, monkeypatch)
    sync_json(repo, "--conversation")
    assert [n.title for n in turns(repo)] == ["why does the aardvark parser reject tabs"]
    # The 4 KB head hash, then 512-byte chunks up to the resume; never the whole file.
    assert spy.whole == 0 and spy.reads.count(512) > 100 and all(0 < size <= 4096 for size in spy.reads)


def test_a_symlinked_aider_history_committed_in_the_repository_is_not_read(
    repo: Path, isolated_home: Path
) -> None:
    """A `.aider.chat.history.md` committed as a symlink (`../private/.aider.chat.history.md`, reaching the
    home folder's history) was followed: another project's conversation was stored in this memory, where the
    agent reads it over MCP. It is refused, said once, and nothing of it is kept."""
    private = isolated_home / "private"
    private.mkdir()
    (private / ".aider.chat.history.md").write_text(
        "\n# aider chat started at 2026-09-10 10:00:00\n\n#### how do I rotate the prod db creds WOMBATWORD\n\n"
        "Use the vault at vault.internal.corp; the admin user is dbadmin.\n",
        encoding="utf-8",
    )
    (private / ".aider.input.history").write_text("\n# 2026-09-10 10:00:01\n+WOMBATWORD\n", encoding="utf-8")
    os.symlink(os.path.relpath(private / ".aider.chat.history.md", repo), repo / ".aider.chat.history.md")
    os.symlink(os.path.relpath(private / ".aider.input.history", repo), repo / ".aider.input.history")
    commit(repo, "chore: share the chat", {"a.txt": "a\n"})
    assert git(repo, "ls-files", "-s", ".aider.chat.history.md").startswith("120000")  # committed as a link
    summary = part(sync_json(repo, "--conversation"))
    assert turns(repo) == []
    chat = repo / ".aider.chat.history.md"
    symlink = f"{named(repo, 'aider', chat)}: a symlink (it may point outside the repository): not read"
    assert summary["problems"] == [symlink]
    assert summary["skipped"] == 1 and summary["added"] == 0
    blobs = b"".join(p.read_bytes() for p in (repo / ".nexusmem").iterdir() if p.is_file())
    assert b"WOMBATWORD" not in blobs and b"vault.internal" not in blobs
    again = part(sync_json(repo, "--conversation"))  # said once, not at every sync
    assert again["skipped"] == 0 and again["problems"] == [], again


def test_a_record_of_an_unexpected_shape_is_skipped_with_its_line_and_the_rest_kept(
    repo: Path, tmp_path: Path, isolated_home: Path
) -> None:
    """One record whose `type` or tool `name` was a list or an object dropped the whole transcript ("cannot
    parse (TypeError: unhashable type: 'list')", no line), and the file was not read again until it changed.
    Each agent's bad record is now skipped and counted with its place, and the records after it are kept; so
    is a record that fails in a way no check foresaw (an exit code of 5,000 digits)."""
    commit(repo, "feat: start", {"a.txt": "a\n"})
    hour_ago = time.time() - 3600
    w = T.ClaudeWriter("5e55-shapes", repo, START)
    w.user("why does the capybara loader stall")
    w.records.append({"type": ["user"], "cwd": str(repo), "uuid": "bad-type"})
    w.assistant([{"type": "tool_use", "id": "toolu_01ODD", "name": ["Edit"], "input": {"file_path": "x"}}])
    w.bash("toolu_01HUGE", "pytest -q", "boom", exit_code=1)
    w.records[-1]["message"]["content"][0]["content"] = "Exit code " + "9" * 5000
    w.say("The capybara loader waits on a socket.")
    w.user("and the tapir cache?")
    w.say("The tapir cache is fine.")
    claude = w.write(isolated_home / ".claude" / "projects" / "p" / "s.jsonl")
    codex = T.write_codex(isolated_home / ".codex", repo, tmp_path / "other", START)
    lines = codex.read_text(encoding="utf-8").splitlines()
    lines.insert(1, json.dumps({"timestamp": T.iso(START), "type": {"x": 1}, "payload": {}}))
    odd_call = {"type": "function_call", "name": ["exec_command"], "arguments": "{}", "call_id": "call_ODD"}
    lines.insert(2, json.dumps({"timestamp": T.iso(START), "type": "response_item", "payload": odd_call}))
    codex.write_text("\n".join(lines) + "\n", encoding="utf-8")
    gemini = T.write_gemini(isolated_home / ".gemini", repo, START)
    doc = json.loads(gemini.read_text(encoding="utf-8"))
    doc["messages"][1]["toolCalls"].insert(0, {"id": "c0", "name": ["run_shell_command"], "args": {}})
    doc["messages"].insert(1, {"id": "m0", "type": ["user"], "timestamp": T.iso(START), "content": "x"})
    gemini.write_text(json.dumps(doc), encoding="utf-8")
    for path in (claude, codex, gemini):
        os.utime(path, (hour_ago, hour_ago))
    summary = part(sync_json(repo, "--conversation"))
    questions = {n.meta["question"] for n in turns(repo)}
    assert {"why does the capybara loader stall", "and the tapir cache?"} <= questions, questions
    assert "run the migration tests" in questions and "why does the build need node 20?" in questions
    problems = summary["problems"]
    assert not any("cannot parse" in p for p in problems), problems
    cc, cx, gm = (
        named(repo, *each) for each in (("claude-code", claude), ("codex", codex), ("gemini", gemini))
    )
    assert f"{cc}, line 2: a record whose type is a JSON list" in problems
    assert f"{cc}, line 5: a record this version cannot read (ValueError)" in problems  # the 5,000 digits
    assert f"{cx}, line 2: a record whose type is a JSON dict" in problems
    assert f"{gm}, messages[1]: a message whose type is a JSON list" in problems
    capybara = next(n for n in turns(repo) if n.meta["question"] == "why does the capybara loader stall")
    assert "waits on a socket" in capybara.body
    assert "agent:codex:call_MIGFAIL" in agent_calls(repo)  # the call after the odd one
    assert any(k.startswith("agent:gemini:") for k in agent_calls(repo))


def test_current_gemini_sessions_in_jsonl_are_read_once_each(
    repo: Path, isolated_home: Path, tmp_path: Path
) -> None:
    """Gemini CLI writes its sessions as JSONL since 2026-04 (`tmp/<short name>/chats/session-*.jsonl`: a
    metadata line, then one record per line), and converts a legacy `.json` session it resumes to `.jsonl`
    beside it: none of those was read, and nothing said so. Both layouts are read now, a session kept in
    several files (Gemini's copy of the legacy hash folder, the `.json` and its `.jsonl`) once, from its
    `.jsonl`; a bad line is skipped and counted with its file:line."""
    commit(repo, "feat: start", {"a.txt": "a\n"})
    gem = isolated_home / ".gemini"
    current = T.write_gemini_jsonl(gem, repo, START)
    later = START + timedelta(minutes=5)
    with current.open("a", encoding="utf-8") as out:
        for record in (
            {"id": "g3", "timestamp": T.iso(later), "type": "user", "content": "drop the walrus table?"},
            {
                "id": "g4",
                "timestamp": T.iso(later),
                "type": "gemini",
                "content": "Dropping the walrus table.",
            },
            {"$rewindTo": "g3"},  # the person rewound: that exchange is gone
        ):
            out.write(json.dumps(record) + "\n")
        out.write('{"id": "g5", "timestamp": "cut mid-wr\n')
        for record in (
            {"id": "g6", "timestamp": T.iso(later), "type": "user", "content": "why is the pool size 5?"},
            {"id": "g7", "timestamp": T.iso(later), "type": "gemini", "content": "Postgres allows 5 here."},
        ):
            out.write(json.dumps(record) + "\n")
    # A legacy session (hash folder), Gemini's copy of it in the short-name folder, and the .jsonl it wrote
    # beside that copy when the session was resumed, with one more exchange.
    legacy = T.write_gemini(gem, repo, START - timedelta(hours=1), session="gem-legacy-01")
    copy = gem / "tmp" / "my-repo" / "chats" / legacy.name
    copy.write_bytes(legacy.read_bytes())
    doc = json.loads(legacy.read_text(encoding="utf-8"))
    head = {k: v for k, v in doc.items() if k != "messages"}
    resumed = [
        head,
        *[m for m in doc["messages"] if isinstance(m, dict)],
        {"$set": {"sessionId": "gem-legacy-01"}},
    ]
    resumed += [
        {"id": "r1", "timestamp": T.iso(START), "type": "user", "content": "and on CI?"},
        {"id": "r2", "timestamp": T.iso(START), "type": "gemini", "content": "CI uses the node 20 image."},
    ]
    copy.with_suffix(".jsonl").write_text("".join(json.dumps(r) + "\n" for r in resumed), encoding="utf-8")
    # Started through a symlink to the repository: hashed by the link's path, which `.project_root` names.
    link = tmp_path / "via-link"
    link.symlink_to(repo)
    T.write_gemini_jsonl(gem, link, START, session="gem-via-link", name="via-link")
    # Started in a directory git tracks nothing in: no hash of ours names it, its `.project_root` does.
    (repo / "build").mkdir()
    T.write_gemini_jsonl(gem, repo / "build", START, session="gem-in-build", name="build")
    # Another project's current session: not read.
    other = T.write_gemini_jsonl(gem, tmp_path / "elsewhere", START, session="gem-other-0", name="elsewhere")
    other.write_text(other.read_text(encoding="utf-8").replace("lint step", "OTHERPROJECT"), encoding="utf-8")
    hour_ago = time.time() - 3600
    os.utime(current, (hour_ago, hour_ago))  # its cut line is a bad record, not one being written
    summary = part(sync_json(repo, "--conversation"))
    asked: dict[str, list[str]] = {}
    for n in turns(repo):
        if n.meta["agent"] == "gemini":
            asked.setdefault(n.meta["session_id"], []).append(n.meta["question"])
    assert asked == {
        "gem-1a7e-57e9": ["why does the lint step fail?", "why is the pool size 5?"],
        "gem-legacy-01": ["why does the build need node 20?", "and on CI?"],
        "gem-via-link": ["why does the lint step fail?"],
        "gem-in-build": ["why does the lint step fail?"],
    }, asked
    assert {n.meta["cwd"] for n in turns(repo) if n.meta["session_id"] == "gem-in-build"} == {"build"}
    lint = next(n for n in turns(repo) if n.meta["session_id"] == "gem-1a7e-57e9")
    assert "unused import" in lint.body and "$ npm run lint (exit 1)" in lint.body  # as last written
    assert lint.meta["model"] == "gemini-3-pro" and lint.meta["cwd"] == "."
    assert agent_calls(repo)["agent:gemini:gem-1a7e-57e9/run_shell_command-7"].meta["exit"] == 1
    text = "\n".join(n.title + n.body + json.dumps(n.meta) for n in nodes(repo))
    assert "walrus" not in text and "OTHERPROJECT" not in text
    # One bad record: the cut line (the legacy files, whose one non-object message would count, are not read).
    cut = f"{named(repo, 'gemini', current)}, line 9: not a JSON line"
    assert summary["skipped"] == 1 and summary["problems"] == [cut], summary


def test_a_codex_call_takes_its_exit_status_from_codexs_header_not_from_the_output(
    repo: Path, isolated_home: Path
) -> None:
    """A Codex call still running when its output was handed back (`Process running with session ID`), whose
    output printed `Exit code: 1`, was stored as exit 1: the status is read only from the header Codex writes
    above the output (`Process exited with code N`, the older shell tool's `Exit code: N`)."""
    commit(repo, "feat: start", {"a.txt": "a\n"})
    t = START
    lines: list[dict[str, Any]] = []

    def record(kind: str, payload: dict[str, Any]) -> None:
        nonlocal t
        t += timedelta(seconds=2)
        lines.append({"timestamp": T.iso(t), "type": kind, "payload": payload})

    record("session_meta", {"id": "019e-header", "cwd": str(repo), "source": "cli"})
    record(
        "response_item",
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "check the CI logs"}]},
    )
    outputs = {
        "cat ci.log": "Chunk ID: a1\nWall time: 0.1 seconds\nProcess exited with code 0\nOutput:\nExit code: 1\n",
        "npm run watch": "Chunk ID: a2\nWall time: 10.0 seconds\nProcess running with session ID 7\n"
        "Original token count: 9\nOutput:\nstep 3: Process exited with code 2\n",
        "make": "Exit code: 2\nWall time: 0.3 seconds\nOutput:\nmake: *** [all] Error 2",
    }
    for n, (command, output) in enumerate(outputs.items()):
        arguments = json.dumps({"cmd": command, "workdir": str(repo)})
        call = {"type": "function_call", "name": "exec_command", "arguments": arguments, "call_id": f"c{n}"}
        record("response_item", call)
        record("response_item", {"type": "function_call_output", "call_id": f"c{n}", "output": output})
    path = (
        isolated_home
        / ".codex"
        / "sessions"
        / "2026"
        / "12"
        / "04"
        / "rollout-2026-12-04T10-00-00-019e-header.jsonl"
    )
    path.parent.mkdir(parents=True)
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    sync_json(repo, "--conversation")
    exits = {c.ref: c.meta["exit"] for c in agent_calls(repo).values()}
    assert exits == {"cat ci.log": 0, "npm run watch": None, "make": 2}, exits


def test_a_gemini_call_takes_its_exit_status_from_gemini_not_from_the_output(
    repo: Path, isolated_home: Path
) -> None:
    """A Gemini shell call whose output printed `Exit Code: 137` (a CI log read back) was stored as exit 137,
    though Gemini's own `Exit Code:` after the output said 0. The status is read from the fields Gemini CLI
    writes after the output, older builds (always an `Exit Code:`) and newer (one only when not 0)."""
    commit(repo, "feat: start", {"a.txt": "a\n"})
    path = T.write_gemini(isolated_home / ".gemini", repo, START)
    doc = json.loads(path.read_text(encoding="utf-8"))

    def call(ident: str, command: str, output: str) -> dict[str, Any]:
        response = {"id": ident, "name": "run_shell_command", "response": {"output": output}}
        return {
            "id": ident,
            "name": "run_shell_command",
            "args": {"command": command},
            "status": "success",
            "result": [{"functionResponse": response}],
        }

    doc["messages"][1]["toolCalls"] = [
        call(
            "old",
            "cat ci.log",
            "Command: cat ci.log\nDirectory: (root)\nOutput: step build: Exit Code: 137 (OOM killed)\n"
            "Exit Code: 137\nError: (none)\nExit Code: 0\nSignal: (none)\nBackground PIDs: (none)\n"
            "Process Group PGID: 4242",
        ),
        call("new", "cat ci2.log", "Output: Exit Code: 137\nretried: ok\nProcess Group PGID: 4243"),
        call("failed", "pytest -q", "Output: 1 failed\nExit Code: 1\nProcess Group PGID: 4244"),
        call(
            "killed",
            "sleep 99",
            "Command: sleep 99\nOutput: (empty)\nError: (none)\nExit Code: (none)\nSignal: 9",
        ),
    ]
    doc["messages"][1]["toolCalls"][-1]["status"] = "error"
    path.write_text(json.dumps(doc), encoding="utf-8")
    sync_json(repo, "--conversation")
    exits = {c.ref: c.meta["exit"] for c in agent_calls(repo).values()}
    assert exits == {"cat ci.log": 0, "cat ci2.log": 0, "pytest -q": 1, "sleep 99": None}, exits


def test_a_newer_gemini_call_whose_output_ends_in_an_exit_code_line_is_not_that_exit(
    repo: Path, isolated_home: Path
) -> None:
    """Newer Gemini builds write `Exit Code:` after the output only when it is not 0, so a successful call
    whose output ended in "Exit Code: 137" (`Output: build ok\ntests ok\nExit Code: 137\nProcess Group PGID:
    4243`) was stored as exit 137. The call's `resultDisplay`, the output as Gemini showed it, says where the
    output ends: Gemini's own fields are read after it only."""
    commit(repo, "feat: start", {"a.txt": "a\n"})
    path = T.write_gemini(isolated_home / ".gemini", repo, START)
    doc = json.loads(path.read_text(encoding="utf-8"))

    def call(ident: str, command: str, output: str, trailer: str) -> dict[str, Any]:
        response = {
            "id": ident,
            "name": "run_shell_command",
            "response": {"output": f"Output: {output}{trailer}"},
        }
        return {
            "id": ident,
            "name": "run_shell_command",
            "args": {"command": command},
            "status": "success",
            "result": [{"functionResponse": response}],
            "resultDisplay": output,
        }

    doc["messages"][1]["toolCalls"] = [
        call("ok", "sh ci.sh", "build ok\ntests ok\nExit Code: 137", "\nProcess Group PGID: 4243"),
        call("failed", "pytest -q", "1 failed\nExit Code: 0", "\nExit Code: 1\nProcess Group PGID: 4244"),
        call("quiet", "make -s", "Exit Code: 2", ""),  # no PGID field: the output is the whole text
    ]
    path.write_text(json.dumps(doc), encoding="utf-8")
    sync_json(repo, "--conversation")
    exits = {c.ref: c.meta["exit"] for c in agent_calls(repo).values()}
    assert exits == {"sh ci.sh": 0, "pytest -q": 1, "make -s": 0}, exits


def test_a_claude_session_whose_first_cwd_comes_after_many_snapshots_is_read(
    repo: Path, isolated_home: Path
) -> None:
    """A Claude Code file whose first `cwd` came after 200 records (201 file-history snapshots, then the
    person's question) was never read, and nothing said so. Records are now looked through for a cwd up to
    the first 1 MB, and a file that names none there is counted in the sync's notes."""
    commit(repo, "feat: start", {"a.txt": "a\n"})
    snapshot = {"type": "file-history-snapshot", "messageId": "m", "snapshot": {}, "isSnapshotUpdate": False}
    w = T.ClaudeWriter("5e55-snapshots", repo, START)
    w.records = [snapshot] * 201
    w.user("why does the pangolin scheduler skip mondays")
    w.say("The pangolin scheduler counts weeks from sunday.")
    w.write(isolated_home / ".claude" / "projects" / "p" / "s.jsonl")
    far = T.ClaudeWriter("5e55-far", repo, START)
    far.records = [{**snapshot, "snapshot": {"pad": "x" * 1000}}] * 1100  # ~1.1 MB before its first cwd
    far.user("why does the okapi index drift")
    far.write(isolated_home / ".claude" / "projects" / "p" / "far.jsonl")
    summary = part(sync_json(repo, "--conversation"))
    assert [n.meta["question"] for n in turns(repo)] == ["why does the pangolin scheduler skip mondays"]
    assert "1 transcript file(s) name no working directory in their first 1 MB: not read" in summary["notes"]


def test_the_cursor_keeps_no_path_of_another_projects_transcript(world: dict[str, Any]) -> None:
    """Every repository's memory kept the path of every other project's transcript in the source's cursor
    (`"ours": false` entries), and a Claude Code folder's name spells out that project's path; `status
    --json` printed them. They are kept by a keyed digest now (the file is still passed over unread while
    unchanged), and the next sync drops the paths an older cursor kept."""
    repo, home = world["repo"], world["home"]
    other_claude = home / ".claude" / "projects" / "-other" / "7a7a7a7a-0000-4000-8000-000000000000.jsonl"
    foreign = ("7a7a7a7a-0000-4000-8000-000000000000", "019dd8e4-0000-7000-8000-0000000000ff", "-other")

    def kept() -> str:
        status = run_cli("-C", str(repo), "status", "--json").stdout
        blobs = b"".join(p.read_bytes() for p in (repo / ".nexusmem").iterdir() if p.is_file())
        return status + blobs.decode("utf-8", "replace")

    sync_json(repo, "--conversation")
    assert not [name for name in foreign if name in kept()]
    assert "9 transcript file(s) seen, 7 of this project" in run_cli("-C", str(repo), "status").stdout
    again = part(sync_json(repo, "--conversation"))
    assert again["noop"] and again["notes"] == []  # unchanged: not opened again
    # What an older version kept: the other project's file by its path (and no key).
    from nexusmem.sources.conversation.source import ConversationSource

    with project_mod.load(repo).open_store() as store:
        cursor = json.loads(store.cursor("conversation") or "{}")
        del cursor["key"]
        cursor["files"][str(other_claude)] = {
            "fp": ConversationSource._fingerprint(other_claude, None),
            "ours": False,
        }
        with store.transaction():
            store.record_sync("conversation", json.dumps(cursor), 0, 0, 0, 0)
    assert foreign[0] in kept()
    part(sync_json(repo, "--conversation"))
    assert not [name for name in foreign if name in kept()]
    assert not [n for n in turns(repo) if "OTHERPROJECT" in n.body]


def test_a_token_cut_by_a_line_break_or_between_text_blocks_is_redacted_whole(
    repo: Path, isolated_home: Path
) -> None:
    """A pasted token the terminal wrapped (`ghp_R8xk2LmQ9vTz4WpN7s` then `Hb3JcY6dFa1GeU5oKi` on the next
    line), or one an assistant reply split across two text blocks (of one record, or of two records of the
    same message, as Claude Code writes them), lost its head to redaction and kept its tail in memory.db."""
    commit(repo, "feat: start", {"a.txt": "a\n"})
    pasted = ("ghp_R8xk2LmQ9vTz4WpN7s", "Hb3JcY6dFa1GeU5oKi")
    blocks = ("ghp_Qw3Er5Ty7Ui9Op1As", "Df4Gh6Jk8Lz0Xc2Vb4N")
    records = ("AKIA2E0A8F3B", "244C9E7Q")
    w = T.ClaudeWriter("5e55-wrapped", repo, START)
    w.user(f"why does the gh login fail with {pasted[0]}\n{pasted[1]} as my token")
    w.assistant(
        [
            {"type": "text", "text": f"That token, {blocks[0]}"},
            {"type": "text", "text": f"{blocks[1]}, expired."},
        ]
    )
    w.user("and the aws key?")
    w.assistant([{"type": "text", "text": f"The key id {records[0]}"}])
    w.records[-1]["message"]["id"] = "msg_01SPLIT"
    w.assistant([{"type": "text", "text": f"{records[1]} is revoked."}])
    w.records[-1]["message"]["id"] = "msg_01SPLIT"
    w.write(isolated_home / ".claude" / "projects" / "p" / "s.jsonl")
    sync_json(repo, "--conversation")
    blobs = b"".join(p.read_bytes() for p in (repo / ".nexusmem").iterdir() if p.is_file())
    for piece in (*pasted, *blocks, *records):
        assert piece.encode() not in blobs, piece
    first, second = turns(repo)
    assert first.meta["question"] == "why does the gh login fail with «redacted:github-token» as my token"
    assert "That token, «redacted:github-token», expired." in first.body
    assert "The key id «redacted:aws-key» is revoked." in second.body


def test_a_token_in_a_transcripts_ids_model_or_record_type_is_redacted(
    repo: Path, isolated_home: Path
) -> None:
    """A token in a Claude Code record's sessionId, message.model, a tool_use id, a sidechain's agentId or a
    line's `type` was stored as it was (a title `[subagent ghp_…]`, a ref `claude-code:ghp_…#0`, meta, a
    command's key, the cursor, `unknown record type 'ghp_…'`), printed by `sync` and listed by `status`. The
    agent hook redacts the same fields: the transcript's copy of a call keeps the key the hook gives it."""
    commit(repo, "feat: start", {"a.txt": "a\n"})
    tokens = [f"ghp_{c * 4}R8x2Lq7Vn4Tz9Kp3Wm6Yb1Hc5Dj0Fs2G" for c in "ABCDEF"]
    w = T.ClaudeWriter(tokens[0], repo, START)
    w.user("why does the quokka importer hang")
    w.bash(tokens[1], "pytest tests/test_quokka.py", "1 passed", prose="Let me run it.")
    w.records[-2]["message"]["model"] = tokens[2]
    w.user("ask a subagent about numbats", sidechain=True)
    w.say("Numbats are fine.")
    w.records[-2]["agentId"] = w.records[-1]["agentId"] = tokens[3]
    w.records[-1]["isSidechain"] = True
    w.records.append({"type": tokens[4], "data": 1})
    w.records.append({"type": "x" * 20 + " " + tokens[5], "data": 1})  # its type is cut to 40 characters
    w.write(isolated_home / ".claude" / "projects" / "x" / "s1.jsonl")
    result = run_cli("-C", str(repo), "sync", "--no-embed", "--conversation")
    status = run_cli("-C", str(repo), "status").stdout
    blobs = b"".join(p.read_bytes() for p in (repo / ".nexusmem").iterdir() if p.is_file())
    for token in tokens:
        assert token[4:18].encode() not in blobs, token
        assert token[4:18] not in result.output + result.stderr and token[4:18] not in status, token
    assert "unknown record type '«redacted:github-token»'" in status
    found = nodes(repo)
    calls = [n for n in found if n.kind == "shell_command"]
    assert [n.meta["call_id"] for n in calls] == ["«redacted:github-token»"]
    subagent = [n for n in found if n.kind == "conversation_turn" and n.meta["sidechain"]]
    assert [n.title for n in subagent] == ["[subagent «redacted:github-token»] ask a subagent about numbats"]
    assert all(n.ref.startswith("claude-code:«redacted:github-token»#") for n in subagent)


def test_a_token_a_transcript_is_named_after_is_not_kept_in_the_cursor(
    repo: Path, isolated_home: Path
) -> None:
    """Claude Code names a transcript after its sessionId (a subagent's after its agentId). With a token as
    either, the conversation cursor kept the file's path (`status --json` printed it), and after `forget
    TOKEN --yes` the next sync wrote it back. The cursor keeps each file by a keyed digest of its path (an
    unchanged file is still not read again), an older cursor's paths are read once and dropped, and a bad
    line's problem names the file by its digest (`status --verbose` finds the path)."""
    commit(repo, "feat: start", {"a.txt": "a\n"})
    token, agent = "ghp_R8x2Lq7Vn4Tz9Kp3Wm6Yb1Hc5Dj0Fs2Ga8Ne", "ghp_Zz9yXw8Vu7Ts6Rq5Po4Nm3Lk2Ji1Hg0Fe9Dc"
    folder = isolated_home / ".claude" / "projects" / "-repo"
    main = T.ClaudeWriter(token, repo, START)
    main.user("why does the quokka importer hang")
    main.say("It waits on a lock it holds.")
    main.records.append({"type": "user", "bad": True})  # a line it cannot read: a problem naming the file
    main.write(folder / f"{token}.jsonl")
    sub = T.ClaudeWriter(token, repo, START + timedelta(minutes=1), agent_id=agent)
    sub.user("List every caller of Quokka.load")
    sub.say("One caller.")
    sub.write(folder / token / "subagents" / f"agent-{agent}.jsonl")

    def kept() -> str:
        out = run_cli("-C", str(repo), "status", "--json").stdout + run_cli("-C", str(repo), "status").stdout
        blobs = b"".join(p.read_bytes() for p in (repo / ".nexusmem").iterdir() if p.is_file())
        return out + blobs.decode("utf-8", "replace")

    first = part(sync_json(repo, "--conversation"))
    assert first["added"] == 2
    assert not [t for t in (token, agent) if t[4:18] in kept() + json.dumps(first)]
    assert f"{named(repo, 'claude-code', folder / f'{token}.jsonl')}, line 3:" in kept()
    assert "2 transcript file(s) seen, 2 of this project" in run_cli("-C", str(repo), "status").stdout
    assert part(sync_json(repo, "--conversation"))["noop"]  # unchanged: known by its digest, not read again
    # What an older version kept: the files by their paths. Read once (not again: nothing changed), then gone.
    with project_mod.load(repo).open_store() as store:
        cursor = json.loads(store.cursor("conversation") or "{}")
        entries = sorted(cursor["files"].values(), key=lambda e: e["fp"][0], reverse=True)
        paths = [str(folder / f"{token}.jsonl"), str(folder / token / "subagents" / f"agent-{agent}.jsonl")]
        cursor["files"] = dict(zip(paths, entries, strict=True))
        with store.transaction():
            store.record_sync("conversation", json.dumps(cursor), 0, 0, 0, 0)
    assert token[4:18] in kept()
    assert part(sync_json(repo, "--conversation"))["noop"]
    assert token[4:18] not in kept() and agent[4:18] not in kept()
    forgot = run_cli("-C", str(repo), "forget", token, "--yes")
    assert "verified: the value is in none" in forgot.output
    main.say("Still waiting.")  # the transcript grows: read on, and its cursor entry written again
    main.write(folder / f"{token}.jsonl")
    sync_json(repo, "--conversation")
    assert token[4:18] not in kept() and agent[4:18] not in kept()


def test_a_rebuild_keeps_the_turns_of_a_transcript_no_longer_on_disk(repo: Path, isolated_home: Path) -> None:
    """Claude Code deletes transcripts after 30 days. `sync --rebuild` (whole, or with --conversation) then
    deleted their turns for good, with their verdicts and the agent's commands, and said "conversation
    unchanged"; a plain sync keeps them. A rebuild keeps what it cannot read again, and says so; a
    transcript still on disk is read again as before."""
    commit(repo, "feat: start", {"a.txt": "a\n"})
    projects = isolated_home / ".claude" / "projects" / "p"
    old = T.ClaudeWriter("5e55-old-session", repo, START)
    old.user("why does the quokka importer hang")
    old.bash("toolu_01QUOKKA", "pytest tests/test_quokka.py", "1 passed", prose="Let me run it.")
    old.say("The quokka importer waits on a lock it holds.")
    gone = old.write(projects / "old.jsonl")
    new = T.ClaudeWriter("5e55-new-session", repo, START + timedelta(minutes=5))
    new.user("and the numbat exporter?")
    new.say("The numbat exporter is fine.")
    new.write(projects / "new.jsonl")
    sync_json(repo, "--conversation")
    before = {n.natural_key: n.id for n in turns(repo)}
    assert len(before) == 2 and "agent:claude-code:toolu_01QUOKKA" in agent_calls(repo)
    quokka = next(n for n in turns(repo) if "quokka" in n.title)
    run_cli("-C", str(repo), "review", quokka.id, "--verify")
    gone.unlink()
    said = {
        "--conversation": "conversation: kept 2 node(s) of agent transcripts no longer on disk",
        # The source off: nothing is read again, every turn and command is kept.
        "": "conversation: kept 3 node(s) of agent transcripts: the source is off in this rebuild",
    }
    for flag, note in said.items():
        out = run_cli("-C", str(repo), "sync", "--rebuild", "--no-embed", *([flag] if flag else []))
        assert note in out.output + out.stderr, (flag, out.output + out.stderr)
        assert {n.natural_key: n.id for n in turns(repo)} == before, flag
        assert "agent:claude-code:toolu_01QUOKKA" in agent_calls(repo), flag
        assert next(n for n in turns(repo) if "quokka" in n.title).trust == "verified"


def test_a_skipped_record_is_noted_without_the_transcript_path_or_session_id(
    repo: Path, isolated_home: Path
) -> None:
    """`status` showed `…/-tmp-…-proj/5b0e7c1a-….jsonl:8: not a JSON line`, and memory.db's meta kept it: a
    transcript is named after its session id (which may be a pasted token) and its folder after the project.
    The note now names the file by its agent, a keyed digest and its day; `status --verbose` finds the path."""
    import sqlite3

    commit(repo, "feat: start", {"a.txt": "a\n"})
    session = "5b0e7c1a-3f2d-4e55-9a1b-0c2d3e4f5a61"
    w = T.ClaudeWriter(session, repo, START)
    w.user("why does the wombat loader stall")
    w.records.append("not json: a stray line")
    w.say("The wombat loader waits on its own lock.")
    folder = "-tmp-" + repo.name + "-proj"
    path = w.write(isolated_home / ".claude" / "projects" / folder / f"{session}.jsonl")
    summary = part(sync_json(repo, "--conversation"))
    day = time.strftime("%Y-%m-%d", time.localtime(path.stat().st_mtime))
    (note,) = summary["problems"]
    assert note.startswith("claude-code transcript #") and note.endswith(
        f"(modified {day}), line 2: not a JSON line"
    )
    with sqlite3.connect(repo / ".nexusmem" / "memory.db") as db:
        meta = dict(db.execute("SELECT key, value FROM meta").fetchall())
    assert note in meta["skipped:conversation"]
    plain = run_cli("-C", str(repo), "status").stdout
    as_json = run_cli("-C", str(repo), "status", "--json").stdout
    for kept in ("\n".join(meta.values()), plain, as_json, json.dumps(summary)):
        assert session not in kept and folder not in kept and str(path) not in kept
    assert note in plain
    verbose = run_cli("-C", str(repo), "status", "--verbose").stdout
    assert f"{note}\n      file: {path}" in verbose, verbose
    # The digest is the cursor's: no path was stored meanwhile.
    with sqlite3.connect(repo / ".nexusmem" / "memory.db") as db:
        after = "\n".join(v for (v,) in db.execute("SELECT value FROM meta").fetchall())
    assert session not in after and folder not in after


def test_an_older_releases_notes_with_transcript_paths_are_rewritten_by_the_next_sync(
    repo: Path, isolated_home: Path
) -> None:
    """A memory written by a release before the digests kept its skipped-record notes with the transcript's
    path, which is named after the session id (`…/projects/p/5e55-….jsonl:2: not a JSON line`), until 20 newer
    notes pushed them out or a rebuild: the next sync, the conversation source on or off, now rewrites them as
    this release writes them, and no path stays in the store; `status --verbose` still finds the file."""
    from nexusmem.sync import PROBLEMS_KEY

    commit(repo, "feat: start", {"a.txt": "a\n"})
    w = T.ClaudeWriter("5e55-old-notes", repo, START)
    w.user("why does the quokka importer hang")
    w.records.append("not json: a stray line")
    w.say("The quokka importer waits on a lock it holds.")
    path = w.write(isolated_home / ".claude" / "projects" / "p" / "5e55-old-notes.jsonl")
    assert part(sync_json(repo, "--conversation"))["skipped"] == 1
    gone = isolated_home / ".claude" / "projects" / "p" / "0ld0-deleted-since.jsonl"
    codex_file = isolated_home / ".codex" / "sessions" / "2026" / "01" / "02" / "rollout-0ld0.jsonl"
    older = [  # as the release before wrote them (Report.skip: the redacted path, `:line`, why)
        f"{path}:3: not a JSON line",
        f"{gone}:7: unknown record type 'brand-new-record-kind'",
        f"{codex_file}: cannot parse (PermissionError: [Errno 13] Permission denied: '{codex_file}')",
    ]
    key = PROBLEMS_KEY + "conversation"
    with project_mod.load(repo).open_store() as store:
        kept = json.loads(store.get_meta(key) or "{}")
        now = kept["recent"][0]["where"]  # this release's note of the same line
        kept["recent"] = [{"at": "2026-01-02T03:04:05Z", "where": where} for where in older] + kept["recent"]
        kept["total"] = 4
        with store.transaction():
            store.set_meta(key, json.dumps(kept))

    sync_json(repo)  # the conversation source is off: the rewrite is the sync's, not the source's

    with project_mod.load(repo).open_store(readonly=True) as store:
        raw = store.get_meta(key) or ""
    assert ".claude" not in raw and ".codex" not in raw and "5e55" not in raw and "0ld0" not in raw, raw
    wheres = [entry["where"] for entry in json.loads(raw)["recent"]]
    claude = named(repo, "claude-code", path)
    assert wheres == [
        f"{claude}, line 3: not a JSON line",
        f"{named(repo, 'claude-code', gone)}, line 7: unknown record type 'brand-new-record-kind'",
        f"{named(repo, 'codex', codex_file)}: cannot parse (PermissionError: Permission denied)",
        now,
    ], wheres
    assert json.loads(raw)["total"] == 4
    status = json.loads(run_cli("-C", str(repo), "status", "--json", "--verbose").stdout)
    located = status["skipped_records"]["conversation"]["recent"]
    assert [entry.get("path") for entry in located] == [str(path), None, None, str(path)], located
    # A second sync finds nothing to rewrite.
    sync_json(repo)
    with project_mod.load(repo).open_store(readonly=True) as store:
        assert store.get_meta(key) == raw
