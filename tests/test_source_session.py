"""Session summaries (sources.session) through the real sync and CLI, against a loopback HTTP server that speaks
Ollama's chat API: settle time, the prompt-hash memo (counted calls on the server), the per-sync cap,
title checks, redaction, a bounded prompt, the model failing in every way, and failure → discussion links.

Conversation turns are written through the store API, the way the conversation source will store them.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from nexusmem import project
from nexusmem.errors import ConfigError
from nexusmem.nodes import Node
from nexusmem.sources.session import SYSTEM_PROMPT, valid_title

from helpers import commit, run_cli, shell_node, store_nodes
from helpers.chat_standin import ChatStandin, chat_standin
from helpers.nodes import conversation_turn
from helpers.ollama_standin import closed_port_url

MINUTE = 60_000
HOUR = 60 * MINUTE


def now_ms() -> int:
    return int(time.time() * 1000)


def configure(repo: Path, url: str, **session: Any) -> None:
    commit(repo, "init", {"README.md": "# app\n"})
    run_cli("-C", str(repo), "init")
    path = repo / ".nexusmem" / "config.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    data["embedding"]["provider"] = "none"
    data["contradictions"]["autoCheck"] = False
    data["sources"]["session"].update({"enabled": True, "url": url, "timeoutSeconds": 5.0, **session})
    path.write_text(json.dumps(data), encoding="utf-8")


def add(repo: Path, *nodes: Node) -> None:
    proj = project.load(repo)
    with proj.open_store() as store:
        store_nodes(store, [_in(proj.id, n) for n in nodes])


def _in(project_id: str, node: Node) -> Node:
    return Node(**{**node.__dict__, "project": project_id, "id": ""})


def session(
    sid: str, questions: list[str], *, ended_ms_ago: int = 2 * HOUR, agent: str = "claude-code"
) -> list[Node]:
    """A session of one turn per question, a minute apart, whose last turn began ENDED_MS_AGO."""
    last = now_ms() - ended_ms_ago
    start = last - (len(questions) - 1) * MINUTE
    return [
        conversation_turn(sid, i, q, f"Answer {i} about it.", ts=start + i * MINUTE, agent=agent)
        for i, q in enumerate(questions)
    ]


def summaries(repo: Path) -> dict[str, Any]:
    with project.load(repo).open_store(readonly=True) as store:
        return {n.meta["session_id"]: n for n in store.iter_nodes("session_summary")}


def sync(repo: Path, *extra: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(run_cli("-C", str(repo), "sync", "--json", *extra).stdout)
    return data


def source_part(data: dict[str, Any]) -> dict[str, Any]:
    part: dict[str, Any] = next(s for s in data["sources"] if s["name"] == "session")
    return part


def chat_calls(standin: ChatStandin) -> int:
    return sum(1 for path, _ in standin.requests if path in ("/api/chat", "/api/generate"))


# ------------------------------------------------------------------------------------------ the basics


def test_a_settled_session_is_summarised_once_and_the_memo_spares_the_model(repo: Path) -> None:
    with chat_standin() as model:
        configure(repo, model.url)
        add(
            repo,
            *session("s-old", ["Why does the LRU cache evict too early?", "Make maxsize configurable"]),
            *session("s-live", ["Rename the config loader"], ended_ms_ago=5 * MINUTE),
        )
        first = sync(repo)
        assert chat_calls(model) == 1  # the live session is not settled yet
        made = summaries(repo)
        assert list(made) == ["s-old"]
        node = made["s-old"]
        assert node.title == "Fix the flaky cache eviction test" and node.provenance == "derived"
        assert "LRU cache evict too early" in node.body and "maxsize configurable" in node.body
        assert node.meta["agent"] == "claude-code" and node.meta["turns"] == 2
        assert node.meta["model"] == "qwen2.5:3b" and len(node.meta["prompt_hash"]) == 16
        assert node.ref == "session:claude-code:s-old"
        assert source_part(first)["added"] == 1
        assert "1 summarised, 1 waiting to settle" in source_part(first)["notes"]

        second = sync(repo)
        assert chat_calls(model) == 1  # nothing changed: no model call
        assert source_part(second)["noop"] is True
        assert summaries(repo)["s-old"].id == node.id


def test_a_session_that_grows_is_summarised_again_only_once_settled(repo: Path) -> None:
    with chat_standin() as model:
        configure(repo, model.url)
        add(repo, *session("s1", ["Add retries to the HTTP client"], ended_ms_ago=3 * HOUR))
        sync(repo)
        assert chat_calls(model) == 1
        before = summaries(repo)["s1"]
        # A new turn a few minutes ago: the session is live again; the old summary stays, no call.
        add(repo, conversation_turn("s1", 1, "Also cap the backoff", ts=now_ms() - 5 * MINUTE))
        sync(repo)
        assert chat_calls(model) == 1
        assert summaries(repo)["s1"].body == before.body
        # Once it has been quiet for settleMinutes, one new call, and the summary covers the new turn.
        add(repo, conversation_turn("s1", 1, "Also cap the backoff", ts=now_ms() - 45 * MINUTE))
        sync(repo)
        assert chat_calls(model) == 2
        after = summaries(repo)["s1"]
        assert "cap the backoff" in after.body and after.meta["turns"] == 2
        assert after.meta["prompt_hash"] != before.meta["prompt_hash"]


@pytest.mark.slow
def test_a_settling_session_is_summarised_by_the_first_sync_after_it_settles(repo: Path) -> None:
    """Nothing is written in between: the sync notices the time alone (the cursor keeps when it is due)."""
    with chat_standin() as model:
        configure(repo, model.url, settleMinutes=1)
        add(repo, *session("s1", ["Why is the build slow?"], ended_ms_ago=MINUTE - 2500))
        sync(repo)
        sync(repo)
        assert chat_calls(model) == 0 and summaries(repo) == {}
        time.sleep(3)
        sync(repo)
        assert chat_calls(model) == 1 and list(summaries(repo)) == ["s1"]


def test_a_turn_rewritten_without_changing_the_prompt_costs_no_call(repo: Path) -> None:
    """The fingerprint moves (a turn was rewritten) but the prompt hash does not: the memo answers."""
    with chat_standin() as model:
        configure(repo, model.url)
        turns = session("s1", ["Why is the build slow?"])
        add(repo, *turns)
        sync(repo)
        assert chat_calls(model) == 1
        old = summaries(repo)["s1"]
        moved = turns[0]
        add(repo, Node(**{**moved.__dict__, "meta": {**moved.meta, "cwd": "web"}, "id": ""}))
        data = sync(repo)
        assert chat_calls(model) == 1
        new = summaries(repo)["s1"]
        assert (new.title, new.body, new.meta["prompt_hash"]) == (
            old.title,
            old.body,
            old.meta["prompt_hash"],
        )
        assert new.meta["fingerprint"] != old.meta["fingerprint"]
        assert "1 unchanged prompt(s) re-used" in ", ".join(source_part(data)["notes"])


def test_at_most_max_sessions_per_sync_newest_first_and_the_rest_queued(repo: Path) -> None:
    with chat_standin() as model:
        configure(repo, model.url, maxSessions=2)
        for n in range(5):
            add(repo, *session(f"s{n}", [f"Question number {n} about parsing"], ended_ms_ago=(n + 1) * HOUR))
        first = sync(repo)
        assert chat_calls(model) == 2 and sorted(summaries(repo)) == ["s0", "s1"]  # the newest two
        assert "2 summarised, 3 queued for the next sync" in source_part(first)["notes"]
        assert "3 session(s) queued, 0 settling" in run_cli("-C", str(repo), "status").stdout
        sync(repo)
        assert chat_calls(model) == 4 and len(summaries(repo)) == 4
        sync(repo)
        sync(repo)
        assert chat_calls(model) == 5 and len(summaries(repo)) == 5


def test_off_by_default(repo: Path) -> None:
    with chat_standin() as model:
        configure(repo, model.url, enabled=False)
        add(repo, *session("s1", ["Why is the build slow?"]))
        data = sync(repo)
        assert chat_calls(model) == 0 and summaries(repo) == {}
        assert all(s["name"] != "session" for s in data["sources"])
        # The preview still shows what would be sent, and says that sync will not send it.
        out = run_cli("-C", str(repo), "scan-session", "--dry-run").stdout
        assert "PERSON: Why is the build slow?" in out and "sync makes no summaries" in out


def test_subagent_turns_are_not_part_of_the_summary(repo: Path) -> None:
    with chat_standin() as model:
        configure(repo, model.url)
        main = session("s1", ["Find why the login test fails"])
        side = conversation_turn("s1", 0, "Grep the auth module for tokens", ts=main[0].ts, sidechain=True)
        add(repo, *main, side)
        sync(repo)
        assert chat_calls(model) == 1
        node = summaries(repo)["s1"]
        assert "login test" in node.body and "Grep the auth" not in node.body and node.meta["turns"] == 1


def test_the_pieces_of_a_long_answer_are_one_exchange_and_an_unasked_turn_has_no_person(repo: Path) -> None:
    with chat_standin() as model:
        configure(repo, model.url)
        ts = now_ms() - HOUR
        add(
            repo,
            conversation_turn("s1", 0, "Plan the cache rewrite", "## Step one\nSplit the module", ts=ts),
            conversation_turn("s1", 0, "Plan the cache rewrite", "## Step two\nAdd an LRU", ts=ts, chunk=1),
            conversation_turn("s1", 1, "", "Continuing: the tests pass now.", ts=ts + MINUTE),
        )
        [item] = json.loads(run_cli("-C", str(repo), "scan-session", "--dry-run", "--json").stdout)["prompts"]
        prompt = item["messages"][1]["content"]
        assert "2 exchange(s)" in prompt and prompt.count("PERSON:") == 1
        assert (
            "[turn 1] PERSON: Plan the cache rewrite\nAGENT: ## Step one Split the module ## Step two Add an LRU"
            in prompt
        )
        assert "[turn 2]\nAGENT: Continuing: the tests pass now." in prompt and "Q: " not in prompt
        model.title = "- a stray bullet"
        sync(repo)
        node = summaries(repo)["s1"]
        assert node.meta["turns"] == 2 and node.title == "Plan the cache rewrite"


def test_a_summary_goes_when_its_session_goes(repo: Path) -> None:
    with chat_standin() as model:
        configure(repo, model.url)
        add(repo, *session("s1", ["Why is the build slow?"]), *session("s2", ["Add a dark mode"]))
        sync(repo)
        assert sorted(summaries(repo)) == ["s1", "s2"]
        proj = project.load(repo)
        with proj.open_store() as store, store.transaction():
            store.prune_source("conversation", lambda key: ":s2:" in key)
        data = sync(repo)
        assert sorted(summaries(repo)) == ["s2"] and source_part(data)["removed"] == 1


# ------------------------------------------------------------------------------------------ titles


@pytest.mark.parametrize(
    "title",
    [
        "Here is a summary of the session:",
        "Sure! Here's the title",
        "Summary of the Session",
        "Session Summary",
        "- Fixed the cache",
        "1. Fixed the cache",
        "Refactoring",
        "A title that goes on and on about everything that happened in the session and more",
        "Fixed the cache\nand the tests",
        "",
        None,
        42,
    ],
)
def test_titles_that_are_not_titles_are_rejected(title: Any) -> None:
    assert valid_title(title) is None


def test_a_good_title_is_kept_tidied() -> None:
    assert valid_title('"Make the LRU cache size configurable."') == "Make the LRU cache size configurable"
    assert valid_title("2FA setup for the admin page") == "2FA setup for the admin page"


def test_a_bad_title_falls_back_to_the_opening_question(repo: Path) -> None:
    with chat_standin() as model:
        model.title = "Here is a summary of the session:"
        configure(repo, model.url)
        add(repo, *session("s1", ["Why does `make test` hang on CI?\nIt worked yesterday.", "Try -j1"]))
        sync(repo)
        node = summaries(repo)["s1"]
        assert node.title == "Why does `make test` hang on CI?" and node.meta["title_from"] == "question"


# ------------------------------------------------------------------------------------------ what is sent


def test_dry_run_prints_the_exact_prompt_and_sends_nothing(repo: Path) -> None:
    with chat_standin() as model:
        configure(repo, model.url)
        add(repo, *session("s1", ["Why does the LRU cache evict too early?", "Make maxsize configurable"]))
        shown = json.loads(run_cli("-C", str(repo), "scan-session", "--dry-run", "--json").stdout)
        assert chat_calls(model) == 0
        assert shown["dry_run"] is True and shown["model"] == "qwen2.5:3b"
        [item] = shown["prompts"]
        text = run_cli("-C", str(repo), "scan-session", "--dry-run").stdout
        assert "Nothing was sent or written." in text and SYSTEM_PROMPT.splitlines()[0] in text
        assert item["messages"][1]["content"] in text
        assert chat_calls(model) == 0 and summaries(repo) == {}
        sync(repo)
        [(_, body)] = [r for r in model.requests if r[0] == "/api/chat"]
        assert body["messages"] == item["messages"]  # exactly what the preview showed
        # After the sync nothing is left to send.
        again = json.loads(run_cli("-C", str(repo), "scan-session", "--dry-run", "--json").stdout)
        assert again["prompts"] == [] and again["up_to_date"] == 1


def test_scan_session_without_dry_run_shows_the_answer_and_writes_nothing(repo: Path) -> None:
    with chat_standin() as model:
        configure(repo, model.url)
        add(repo, *session("s1", ["Why is the build slow?"]))
        out = run_cli("-C", str(repo), "scan-session").stdout
        assert (
            "title (model): Fix the flaky cache eviction test" in out
            and "- Discussed: Why is the build slow?" in out
        )
        assert chat_calls(model) == 1 and summaries(repo) == {}


def test_the_prompt_is_bounded_and_keeps_the_opening_and_the_newest_turns(repo: Path) -> None:
    with chat_standin() as model:
        configure(repo, model.url, maxPromptChars=4000)
        questions = [f"Question {i}: " + "why is this slow " * 60 for i in range(200)]
        add(repo, *session("s1", questions))
        [item] = json.loads(run_cli("-C", str(repo), "scan-session", "--dry-run", "--json").stdout)["prompts"]
        prompt = item["messages"][1]["content"]
        assert len(prompt) <= 4000
        assert "[turn 1] PERSON: Question 0:" in prompt and "[turn 200] PERSON: Question 199:" in prompt
        assert "turn(s) left out" in prompt and "[turn 100]" not in prompt
        sync(repo)
        [(_, body)] = [r for r in model.requests if r[0] == "/api/chat"]
        assert len(body["messages"][1]["content"]) <= 4000 and body["options"]["num_ctx"] >= 4096


def test_a_secret_in_a_turn_is_never_sent_nor_stored(repo: Path) -> None:
    secret = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    with chat_standin() as model:
        configure(repo, model.url)
        # A turn stored unredacted (as a buggy source might): the prompt is redacted again before sending.
        add(repo, *session("s1", [f"Use the token {secret} to push", "Now push"]))
        sync(repo)
        assert chat_calls(model) == 1
        assert secret not in json.dumps(model.requests)
        node = summaries(repo)["s1"]
        assert secret not in node.body and "«redacted:github-token»" in node.body


# ------------------------------------------------------------------------------------------ the model fails


def test_a_malformed_answer_skips_the_session_and_the_next_sync_retries(repo: Path) -> None:
    with chat_standin() as model:
        model.mode = "malformed"
        configure(repo, model.url)
        add(
            repo,
            *session("s1", ["Why is the build slow?"]),
            *session("s2", ["Add a dark mode"], ended_ms_ago=3 * HOUR),
        )
        data = sync(repo)
        assert chat_calls(model) == 2  # a bad answer for one session does not stop the next
        assert summaries(repo) == {}
        notes = " ".join(source_part(data)["notes"])
        assert "holds no JSON object; tried again next sync" in notes
        model.mode = "ok"
        sync(repo)
        assert chat_calls(model) == 4 and sorted(summaries(repo)) == ["s1", "s2"]


def test_an_answer_that_is_not_json_at_all_is_skipped(repo: Path) -> None:
    with chat_standin() as model:
        model.mode = "garbage"
        configure(repo, model.url)
        add(repo, *session("s1", ["Why is the build slow?"]))
        data = sync(repo)
        assert summaries(repo) == {}
        assert "wrong shape" in " ".join(source_part(data)["notes"])


# How long the "slow" model takes to answer a timeoutSeconds=1 call: long enough that a call waited out would
# show as one whatever a loaded machine adds to the second the timeout takes (2.5 s left it 1.4 s).
SLOW_MODEL = 20.0


def test_a_slow_model_times_out_ends_the_calls_and_the_sync_succeeds(repo: Path) -> None:
    with chat_standin() as model:
        model.mode, model.delay = "slow", SLOW_MODEL
        configure(repo, model.url, timeoutSeconds=1.0)
        add(
            repo,
            *session("s1", ["Why is the build slow?"]),
            *session("s2", ["Add a dark mode"], ended_ms_ago=3 * HOUR),
        )
        started = time.monotonic()
        data = sync(repo)
        assert time.monotonic() - started < SLOW_MODEL / 2  # the call ended at its timeout
        assert chat_calls(model) == 1 and summaries(repo) == {}  # one timeout, not one per session
        notes = " ".join(source_part(data)["notes"])
        assert "did not answer within 1s" in notes and "2 session(s) left for the next sync" in notes
        model.mode = "ok"
        sync(repo)
        assert sorted(summaries(repo)) == ["s1", "s2"]


def test_an_unreachable_server_is_a_note_not_a_failed_sync(repo: Path) -> None:
    configure(repo, closed_port_url())
    add(repo, *session("s1", ["Why is the build slow?"]))
    data = sync(repo)
    assert summaries(repo) == {}
    assert "is unreachable; 1 session(s) left for the next sync" in " ".join(source_part(data)["notes"])
    assert "1 session(s) queued" in run_cli("-C", str(repo), "status").stdout
    shown = json.loads(run_cli("-C", str(repo), "scan-session", "--json").stdout)
    assert "unreachable" in shown["prompts"][0]["error"]
    text = run_cli("-C", str(repo), "scan-session").stdout
    assert "not summarised:" in text and "1 prompt(s) not answered by" in text and "sent to" not in text, text


def test_an_old_ollama_without_chat_is_asked_through_generate(repo: Path) -> None:
    with chat_standin() as model:
        model.mode = "no-chat"
        configure(repo, model.url)
        add(repo, *session("s1", ["Why is the build slow?"]))
        sync(repo)
        assert [p for p, _ in model.requests] == ["/api/chat", "/api/generate"]
        assert "Why is the build slow?" in summaries(repo)["s1"].body


def test_config_bounds_the_prompt_size(repo: Path) -> None:
    configure(repo, closed_port_url(), maxPromptChars=10)
    with pytest.raises(ConfigError, match="maxPromptChars' must be between 1000 and 200000"):
        project.load(repo)


# ------------------------------------------------------------------------------------------ failure → fix


def test_a_summary_naming_every_word_of_a_failed_command_is_linked_as_its_discussion(repo: Path) -> None:
    """Each turn names only one of the command's words; only the session's summary names both, so the
    link can only come from the summary."""
    with chat_standin() as model:
        configure(repo, model.url)
        add(repo, *session("s1", ["The migrations folder is a mess", "Why does alembic upgrade complain?"]))
        sync(repo)
        [summary] = summaries(repo).values()
        failed = shell_node("alembic upgrade migrations", now_ms() - HOUR, 1)
        add(repo, failed)
        data = sync(repo, "--link-failures")
        assert data["links"]["discussion"] == 1
        proj = project.load(repo)
        with proj.open_store(readonly=True) as store:
            links = store.links_from([_in(proj.id, failed).id])
        assert links == [(_in(proj.id, failed).id, summary.id, "discussion")]


def test_doctor_checks_the_session_model_server_only_when_summaries_are_on(repo: Path) -> None:
    configure(repo, closed_port_url())
    out = run_cli("-C", str(repo), "doctor", ok=False).stdout
    assert "session summaries: Ollama at http://127.0.0.1:" in out and "is unreachable" in out
    with chat_standin() as model:
        configure_url = json.loads((repo / ".nexusmem" / "config.json").read_text(encoding="utf-8"))
        configure_url["sources"]["session"]["url"] = model.url
        (repo / ".nexusmem" / "config.json").write_text(json.dumps(configure_url), encoding="utf-8")
        out = run_cli("-C", str(repo), "doctor", ok=False).stdout
        assert (
            f"session summaries: Ollama at {model.url} accepts connections (model qwen2.5:3b not asked)"
            in out
        )
    configure_url["sources"]["session"]["enabled"] = False
    (repo / ".nexusmem" / "config.json").write_text(json.dumps(configure_url), encoding="utf-8")
    assert "session summaries" not in run_cli("-C", str(repo), "doctor", ok=False).stdout


def test_a_model_that_dribbles_its_answer_is_cut_off_at_timeout_seconds(repo: Path) -> None:
    """timeoutSeconds bounds the whole answer: a server sending a byte every 0.2 s (each read quick, the
    answer minutes long) holds the sync about timeoutSeconds, not minutes."""
    with chat_standin() as model:
        model.mode = "trickle"
        configure(repo, model.url, timeoutSeconds=1.0)
        add(repo, *session("s1", ["Why is the build slow?"]))
        started = time.monotonic()
        data = sync(repo)
        assert time.monotonic() - started < 4.0
        assert summaries(repo) == {}
        assert "did not answer within 1s" in " ".join(source_part(data)["notes"])


def test_a_model_call_ends_at_its_deadline_whatever_the_reads_wait() -> None:
    """A review: the whole-answer bound was checked only as a byte arrived, so a server sending one byte a
    little faster than the read timeout held a 5 s call about 9 s (a query's "at most 5 s")."""
    from nexusmem.ollama import OllamaClient, OllamaUnreachable

    with chat_standin() as model:
        # A byte every 1.9 s under a 2 s read timeout: checked only as a byte arrived, the call would end
        # at the third byte, 3.8 s in; it ends at 2 s, with 1 s to spare for a loaded machine.
        model.mode, model.trickle_every = "trickle", 1.9
        client = OllamaClient(model.url, timeout=2.0)
        started = time.monotonic()
        with pytest.raises(OllamaUnreachable, match="did not answer within 2s"):
            client.chat_json("m", "judge", "prompt", {})
        assert time.monotonic() - started < 3.0
        client.close()


def test_scan_session_stops_asking_after_the_first_prompt_the_model_did_not_answer(repo: Path) -> None:
    """A model slower than timeoutSeconds: `scan-session` waits out one timeout, not one per session, and
    says the rest were not asked (as a sync stops at the first)."""
    with chat_standin() as model:
        model.mode, model.delay = "slow", SLOW_MODEL
        configure(repo, model.url, timeoutSeconds=1.0)
        add(
            repo,
            *session("s1", ["Why is the build slow?"]),
            *session("s2", ["Add a dark mode"], ended_ms_ago=3 * HOUR),
            *session("s3", ["Rename the flag"], ended_ms_ago=4 * HOUR),
        )
        started = time.monotonic()
        shown = json.loads(run_cli("-C", str(repo), "scan-session", "--json").stdout)
        assert time.monotonic() - started < SLOW_MODEL / 2  # the call ended at its timeout
        assert chat_calls(model) == 1  # one timeout, not one per session
        errors = [item["error"] for item in shown["prompts"]]
        assert len(errors) == 3 and "did not answer within 1s" in errors[0]
        assert all(e.startswith("not asked: ") for e in errors[1:])
