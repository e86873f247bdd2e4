"""Questions about what was said to a coding agent: the person's own questions are theirs (`--author me`),
"what did I ask claude about X" is answered by the conversation about X. A real git repository, Claude Code
transcripts in their real format (tests/helpers/transcripts.py), the real CLI and a real store."""

from __future__ import annotations

import json
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from nexusmem.retrieve import timecue

from helpers import commit, run_cli
from helpers import transcripts as T
from helpers.env import since_midnight

NOW = datetime.now(timezone.utc).replace(microsecond=0)
DAY = 86_400
NOW_S = int(NOW.timestamp())


@pytest.fixture
def world(repo: Path, isolated_home: Path) -> Path:
    """Commits about the vtable and Chain::advance (years old), and one Claude Code session of today in which
    the person asked about the vtable and about Chain::advance while the agent ran commands."""
    old = int(NOW.timestamp()) - 400 * DAY
    commit(repo, "Rename Vtable::to_* to Vtable::into_*", {"src/bytes.rs": "// vtable\n"}, when=old)
    commit(repo, "Pass vtable data by value", {"src/bytes.rs": "// vtable data\n"}, when=old + DAY)
    commit(repo, "Move drop_fn into the vtable", {"src/bytes.rs": "// vtable drop\n"}, when=old + 2 * DAY)
    commit(repo, "Fix Chain::advance past the end", {"src/chain.rs": "// advance\n"}, when=old + 3 * DAY)
    commit(repo, "Update loom to 0.7", {"Cargo.toml": "loom = '0.7'\n"}, when=old + 4 * DAY)
    w = T.ClaudeWriter("9b1c2d3e-0000-4000-8000-00000000beef", repo, NOW - timedelta(hours=2))
    w.user("explain the vtable in bytes.rs, what is promotable_even?")
    w.say("It is the table of functions a Bytes uses to clone and drop its storage.")
    w.user("why does Chain::advance panic when the first buffer is empty?")
    w.bash("toolu_01GREP", "grep -rn advance src/chain.rs", "src/chain.rs:1: // advance")
    w.bash("toolu_01TEST", "cargo test --test test_serde", "test failed", exit_code=101)
    w.bash("toolu_01CLIP", "cargo clippy", "ok")
    w.say("It subtracts from the first buffer without checking that it is empty.")
    w.write(isolated_home / ".claude" / "projects" / "-repo" / "9b1c2d3e-0000-4000-8000-00000000beef.jsonl")
    run_cli("-C", str(repo), "sync", "--conversation", "--no-embed")
    return repo


def ask(repo: Path, question: str, *options: str) -> dict[str, Any]:
    out = run_cli("-C", str(repo), "query", "--json", *options, "--", question).stdout
    data: dict[str, Any] = json.loads(out)
    return data


def titles(data: dict[str, Any], kind: str | None = None) -> list[str]:
    return [item["title"] for item in data["items"] if kind is None or item["kind"] == kind]


def test_the_questions_the_person_typed_to_an_agent_are_theirs(world: Path) -> None:
    """`--author me "what did I ask about the vtable"` showed commits alone and "no commands by 'me'": every
    turn was the agent's, the person's own question with it."""
    mine = ask(world, "what did I ask about the vtable", "--author", "me")
    assert "explain the vtable in bytes.rs, what is promotable_even?" in titles(mine, "conversation_turn"), (
        mine
    )
    assert not titles(mine, "shell_command"), mine  # the agent's commands are still not the person's
    # The agent's side still has them.
    claude = ask(world, "the vtable", "--author", "claude")
    assert "explain the vtable in bytes.rs, what is promotable_even?" in titles(claude, "conversation_turn")
    text = run_cli(
        "-C", str(world), "query", "--author", "me", "--", "what did I ask about the vtable"
    ).output
    assert "explain the vtable in bytes.rs" in text, text


@pytest.mark.parametrize(
    ("question", "turn"),
    [
        (
            "what did I ask claude about Chain::advance",
            "why does Chain::advance panic when the first buffer is empty?",
        ),
        ("what did I ask about the vtable", "explain the vtable in bytes.rs, what is promotable_even?"),
        (
            "what did I tell claude about the vtable",
            "explain the vtable in bytes.rs, what is promotable_even?",
        ),
        ("what did we discuss about the vtable", "explain the vtable in bytes.rs, what is promotable_even?"),
    ],
)
def test_what_was_asked_of_an_agent_is_answered_by_the_conversation_first(
    world: Path, question: str, turn: str
) -> None:
    """ "what did I ask claude about Chain::advance" put the agent's grep first and its unrelated `cargo
    test`/`cargo clippy` ("claude" matched every command it ran) above the commits; "what did I ask about the
    vtable" said "No strong match", the turn fourth behind the commits that say vtable."""
    data = ask(world, question)
    assert titles(data)[0] == turn, titles(data)
    assert not data["weak"], data
    assert any(note.startswith("first: the conversations") for note in data["notes"]), data["notes"]
    commands = titles(data, "shell_command")
    assert not [c for c in commands if "clippy" in c or "test_serde" in c], commands


def test_under_an_authors_filter_the_authors_matching_items_come_first(world: Path, repo: Path) -> None:
    """`--author claude "test_serde"` put a commit that only shares the test's words above the one command
    of Claude Code's that ran it: the filter kept the agent's commands but ranked them among everyone's
    commits."""
    commit(
        repo,
        "fix: test_serde: serde_test tokens for the serde feature",
        {
            "tests/test_serde.rs": "// test_serde serde_test\nfn test_serde() {}\n",
            "Cargo.toml": "serde_test = 1\n",
        },
    )
    run_cli("-C", str(repo), "sync", "--conversation", "--no-embed")
    data = ask(repo, "test_serde", "--author", "claude")
    assert titles(data)[0] == "cargo test --test test_serde (exit 101)", titles(data)
    assert "fix: test_serde: serde_test tokens for the serde feature" in titles(data), titles(
        data
    )  # commits still pass, after it


def test_a_day_word_puts_that_days_matches_first(world: Path, isolated_home: Path) -> None:
    """ "what did the agent try yesterday for the failing test" showed today's turn and years-old commits
    first: outside a failures listing, "yesterday" only weighed age a little."""
    low, high = timecue.local_day(1)
    yesterday = datetime.fromtimestamp((low + high) / 2000, timezone.utc).replace(microsecond=0)
    w = T.ClaudeWriter("5e1c2d3e-0000-4000-8000-00000000f00d", world, yesterday)
    w.user("the split_off test is failing after my change, can you look?")
    w.bash("toolu_01YDAY", "cargo test --test test_bytes split_off", "test failed", exit_code=101)
    w.say("It fails because split_off keeps the old capacity.")
    w.write(isolated_home / ".claude" / "projects" / "-repo" / "5e1c2d3e-0000-4000-8000-00000000f00d.jsonl")
    today = T.ClaudeWriter("4e1c2d3e-0000-4000-8000-00000000cafe", world, datetime.now(timezone.utc))
    today.user("the failing test again: which test is it now?")
    today.bash("toolu_01TDAY", "cargo test --test test_buf", "test failed", exit_code=101)
    today.say("The failing test is test_buf now.")
    today.write(
        isolated_home / ".claude" / "projects" / "-repo" / "4e1c2d3e-0000-4000-8000-00000000cafe.jsonl"
    )
    commit(
        world,
        "Fix the failing test of the vtable",
        {"src/bytes.rs": "// vtable fixed\n"},
        when=low // 1000 - 300 * DAY,
    )
    run_cli("-C", str(world), "sync", "--conversation", "--no-embed")
    data = ask(world, "what did the agent try yesterday for the failing test")
    days = [low <= datetime.fromisoformat(item["ts"]).timestamp() * 1000 <= high for item in data["items"]]
    first = days.index(False) if False in days else len(days)
    assert first >= 2, [(item["title"], item["ts"]) for item in data["items"]]  # the turn and its command
    assert "cargo test --test test_bytes split_off (exit 101)" in titles(data)[:first], titles(data)
    assert any(note.startswith("first: what matches the question from yesterday") for note in data["notes"])
    # A day with nothing that matches says so, and ranks as before.
    none = ask(world, "the vtable the day before yesterday")
    assert any("nothing recorded the day before yesterday matches" in note for note in none["notes"]), none


def test_what_did_i_ask_an_agent_on_a_day_lists_that_days_questions_first(
    repo: Path, isolated_home: Path
) -> None:
    """ "what did I ask claude yesterday" put a Claude command (`cargo test … (exit 101)`) first, then one of
    yesterday's two questions, then today's commands; the other question was missing even with no budget:
    the day's questions are the answer, all of them, newest first."""
    if since_midnight(time.time()) < 600:
        pytest.skip("the day has just begun: today's session may be yesterday's")
    commit(repo, "Fix Chain::advance past the end", {"src/chain.rs": "// advance\n"}, when=NOW_S - 400 * DAY)
    folder = isolated_home / ".claude" / "projects" / "-repo"
    low, high = timecue.local_day(1)
    yesterday = datetime.fromtimestamp((low + high) / 2000, timezone.utc).replace(microsecond=0)
    w = T.ClaudeWriter("5e1c2d3e-0000-4000-8000-00000000f00d", repo, yesterday)
    w.user("the split_off test is failing after my change, can you look?")
    w.bash("toolu_01YDAY", "cargo test --test test_bytes split_off", "test failed", exit_code=101)
    w.say("It fails because split_off keeps the old capacity.")
    w.user("then shrink the capacity in split_off and rerun the tests")
    w.bash("toolu_01YDA2", "cargo test --test test_bytes", "ok")
    w.say("Done: split_off shrinks the capacity, and the tests pass.")
    w.write(folder / "5e1c2d3e-0000-4000-8000-00000000f00d.jsonl")
    today = T.ClaudeWriter("4e1c2d3e-0000-4000-8000-00000000cafe", repo, datetime.now(timezone.utc))
    today.user("why does Chain::advance panic when the first buffer is empty?")
    today.bash("toolu_01TDAY", "cargo test --test test_buf", "test failed", exit_code=101)
    today.say("It subtracts from the first buffer without checking that it is empty.")
    today.write(folder / "4e1c2d3e-0000-4000-8000-00000000cafe.jsonl")
    run_cli("-C", str(repo), "sync", "--conversation", "--no-embed")
    asked = [
        "then shrink the capacity in split_off and rerun the tests",
        "the split_off test is failing after my change, can you look?",
    ]
    for question, whom in (
        ("what did I ask claude yesterday", "claude-code"),
        ("what did I ask the agent yesterday", "your agents"),
    ):
        data = ask(repo, question)
        assert titles(data)[:2] == asked, (question, titles(data))
        assert f"first: the questions you asked {whom} yesterday, newest first" in data["notes"], data[
            "notes"
        ]
    mine = ask(repo, "what did I ask claude yesterday", "--author", "me")
    assert titles(mine) == asked, titles(mine)
    # The day's questions are the whole answer: no command of today's, no old commit after them as filler; and
    # under a small budget nothing smaller takes the place of the next question.
    assert titles(ask(repo, "what did I ask claude yesterday")) == asked
    for budget in ("150", "100"):
        text = run_cli(
            "-C", str(repo), "query", "--budget", budget, "--", "what did I ask claude yesterday"
        ).stdout
        shown = [line for line in text.splitlines() if line.startswith("- ")]
        assert shown and all("cargo" not in line for line in shown), (budget, text)
        assert all(any(q[:30] in line for q in asked) for line in shown), (budget, text)
    now = ask(repo, "what did I ask claude today")
    assert titles(now)[:1] == ["why does Chain::advance panic when the first buffer is empty?"], titles(now)
    # A question that names what it was about is still answered by its words.
    about = ask(repo, "what did I ask claude about split_off yesterday")
    assert set(titles(about)[:2]) == set(asked), titles(about)


def test_under_author_me_a_turn_shows_the_persons_question_not_the_agents_answer(
    world: Path, isolated_home: Path
) -> None:
    """`query --author me` kept a conversation turn as the person's, and showed it whole: their question
    and the agent's answer, which is not theirs. It now shows the question they typed, and the answer
    counted on one line; without --author the turn reads as before."""
    w = T.ClaudeWriter("6f1c2d3e-0000-4000-8000-00000000d00d", world, NOW - timedelta(hours=1))
    w.user("the otter pool leaks connections under load\nwhy does release_otter never return them?")
    w.say(
        "release_otter returns a connection only when the otter pool is not closing.\n\n"
        "Under load the pool is closing while a request waits, so the connection is dropped.\n"
        "Return it in a finally block instead."
    )
    w.write(isolated_home / ".claude" / "projects" / "-repo" / "6f1c2d3e-0000-4000-8000-00000000d00d.jsonl")
    run_cli("-C", str(world), "sync", "--conversation", "--no-embed")
    question = "what did I ask about the otter pool"

    mine = ask(world, question, "--author", "me")
    turn = next(item for item in mine["items"] if item["kind"] == "conversation_turn")
    assert turn["summary"] == (
        "Q: the otter pool leaks connections under load\nwhy does release_otter never return them?\n"
        "(answer: 3 lines)"
    ), turn
    text = run_cli("-C", str(world), "query", "--author", "me", "--", question).output
    assert "why does release_otter never return them?" in text and "(answer: 3 lines)" in text, text
    assert "finally block" not in text and "is not closing" not in text, text

    everyone = ask(world, question)
    turn = next(item for item in everyone["items"] if item["kind"] == "conversation_turn")
    assert "A: release_otter returns a connection only when the otter pool is not closing." in turn["summary"]
    assert "(answer:" not in turn["summary"]
