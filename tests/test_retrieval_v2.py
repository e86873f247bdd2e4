"""Ranking v2 on real stores built from real git repositories: score-aware fusion, question-aware recency,
the --since/--until window, the weak-match flag and long questions."""

from __future__ import annotations

import json
import subprocess
import time
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import anyio
import pytest
from click.testing import CliRunner
from mcp.types import CallToolResult, TextContent

from nexusmem import config
from nexusmem import project as project_mod
from nexusmem.cli.app import cli
from nexusmem.embed import builtin
from nexusmem.errors import ConfigError, NexusMemError
from nexusmem.retrieve import answer, fuse, history, query, rank, timecue
from nexusmem.retrieve.intent import pasted_trace
from nexusmem.retrieve.question import MAX_QUERY_CHARS

from helpers import commit, console_script, git, query_json, run_cli, run_script
from helpers.embedding import set_embedding
from helpers.env import local_zone
from helpers.mcp import mcp_session

DAY = 86_400
NOW = int(time.time())


def _day(epoch: int) -> str:
    return datetime.fromtimestamp(epoch, tz=timezone.utc).strftime("%Y-%m-%d")


@pytest.fixture
def old_and_fresh(repo: Path) -> Path:
    """A strong old explanation of the upload retry, a weaker fresh commit on the same subject, and
    unrelated history around them."""
    commit(repo, "Add the project skeleton", {"README.md": "# uploader\n"}, when=NOW - 900 * DAY)
    commit(
        repo,
        "fix(upload): retry multipart upload chunks when the storage gateway times out\n\n"
        "The gateway drops idle connections after 30 s; a chunk that hit it failed the whole upload.",
        {"upload.py": "RETRIES = 3\n"},
        when=NOW - 800 * DAY,
    )
    commit(repo, "docs: describe the release process", {"RELEASE.md": "tag, push\n"}, when=NOW - 700 * DAY)
    commit(repo, "feat(auth): sign in with a passkey", {"auth.py": "PASSKEY = True\n"}, when=NOW - 30 * DAY)
    commit(
        repo,
        "feat(db): index the sessions table",
        {"db.sql": "CREATE INDEX s ON sessions(id);\n"},
        when=NOW - 20 * DAY,
    )
    commit(repo, "docs: how the database is backed up", {"BACKUP.md": "nightly dump\n"}, when=NOW - 10 * DAY)
    commit(
        repo,
        "chore(upload): log each chunk's gateway",
        {"upload.py": "RETRIES = 3\nLOG = 1\n"},
        when=NOW - 3600,
    )
    return repo


def titles(data: dict[str, Any]) -> list[str]:
    return [it["title"].splitlines()[0] for it in data["items"] if it["kind"] == "git_commit"]


def test_a_strong_old_commit_beats_a_weaker_fresh_one_unless_the_question_asks_about_time(
    old_and_fresh: Path,
) -> None:
    run_cli("-C", str(old_and_fresh), "sync", "--no-embed")
    plain = query_json(old_and_fresh, "upload chunk gateway timeout retry")
    assert titles(plain)[0].startswith("fix(upload): retry multipart upload chunks")
    assert plain["weak"] is False
    # The same words with a time cue: the fresh commit is what "yesterday" is about.
    cued = query_json(old_and_fresh, "what changed in the upload chunk gateway retry yesterday")
    assert titles(cued)[0] == "chore(upload): log each chunk's gateway"


def test_since_and_until_filter_on_event_time(old_and_fresh: Path) -> None:
    run_cli("-C", str(old_and_fresh), "sync", "--no-embed")
    recent = query_json(old_and_fresh, "upload gateway", "--since", "2d")
    assert titles(recent) == ["chore(upload): log each chunk's gateway"]
    older = query_json(old_and_fresh, "upload gateway", "--until", _day(NOW - 400 * DAY))
    assert titles(older) == ["fix(upload): retry multipart upload chunks when the storage gateway times out"]
    window = query_json(
        old_and_fresh, "upload gateway", "--since", _day(NOW - 900 * DAY), "--until", _day(NOW - 600 * DAY)
    )
    assert titles(window) == ["fix(upload): retry multipart upload chunks when the storage gateway times out"]
    # The last day a date can name: all history up to it (its end is past the last datetime: an internal
    # error, an OverflowError, in both CLI paths and in MCP).
    forever = query_json(old_and_fresh, "upload gateway", "--since", "0001-01-01", "--until", "9999-12-31")
    assert {"chore(upload): log each chunk's gateway", titles(older)[0]} <= set(titles(forever))
    plain_forever = subprocess.run(
        [console_script(), "-C", str(old_and_fresh), "query", "--until", "99991231", "upload gateway"],
        capture_output=True,
        text=True,
    )
    assert plain_forever.returncode == 0 and "log each chunk's gateway" in plain_forever.stdout, plain_forever
    # An age written out is the age 2d is ("'2 days ago' is not a time" before).
    for age in ("2 days ago", "48 hours", "last 2 days"):
        assert titles(query_json(old_and_fresh, "upload gateway", "--since", age)) == titles(recent), age
    bad = run_cli("-C", str(old_and_fresh), "query", "--since", "last tuesday", "upload", ok=False)
    assert bad.exit_code != 0 and "'last tuesday' is not a time" in bad.output
    empty = run_cli("-C", str(old_and_fresh), "query", "--since", "1d", "--until", "9d", "upload", ok=False)
    assert empty.exit_code != 0 and "the window is empty" in empty.output
    # `--since "$SINCE"` with SINCE unset is a usage error, not the whole history; both CLI paths.
    for flag in ("--since", "--until", "--as-of"):
        unset = run_cli("-C", str(old_and_fresh), "query", flag, "", "upload", ok=False)
        assert unset.exit_code == 2 and "an empty" in unset.output, (flag, unset.output)
        plain = subprocess.run(
            [console_script(), "-C", str(old_and_fresh), "query", flag, " ", "upload"],
            capture_output=True,
            text=True,
        )
        assert plain.returncode == 2 and "an empty" in plain.stderr, (flag, plain.stderr)
    help_text = run_cli("query", "--help").output
    assert "recording time, not event time" in help_text


def test_a_changelog_entrys_commit_outside_the_window_stays_out(repo: Path) -> None:
    """A changelog entry in the window brings the commit it describes beside it; that commit happened before
    the window, so `--since` must leave it out (it used to ride along with the entry)."""
    commit(repo, "Add the project skeleton", {"README.md": "# shop\n"}, when=NOW - 400 * DAY)
    fix = "fix(cache): switch the price cache to WAL (#12)"
    commit(repo, fix, {"cache.py": "JOURNAL = 'wal'\n"}, when=NOW - 300 * DAY)
    entry = "# Changelog\n\n## 1.1.0\n\n- The price cache no longer locks up under concurrent writers (#12)\n"
    commit(repo, "release 1.1.0", {"CHANGELOG.md": entry}, when=NOW - 10 * DAY)
    run_cli("-C", str(repo), "sync", "--no-embed")
    question = "price cache locks up under concurrent writers"
    everything = query_json(repo, question)
    assert fix in titles(everything)  # the entry's commit, found through it
    described = next(it for it in everything["items"] if it["title"] == fix)
    if described["linked_from"] is not None:  # shown beside its entry: said how, as a fix's link is
        assert described["relation"] == "changelog"
    recent = query_json(repo, question, "--since", _day(NOW - 30 * DAY))
    assert any("CHANGELOG.md" in (it.get("ref") or "") for it in recent["items"]), recent["items"]
    assert fix not in titles(recent)
    assert all(it["ts"][:10] >= _day(NOW - 30 * DAY) for it in recent["items"]), recent["items"]


def test_a_question_about_something_that_never_happened_is_flagged_weak(old_and_fresh: Path) -> None:
    run_cli("-C", str(old_and_fresh), "sync")
    never = query_json(old_and_fresh, "why did we migrate the billing database to MongoDB")
    assert never["weak"] is True
    assert 0 < len(never["items"]) <= query.WEAK_ITEMS
    text = run_cli(
        "-C", str(old_and_fresh), "query", "why did we migrate the billing database to MongoDB"
    ).output
    assert text.splitlines()[0] == answer.WEAK_LINE  # first, where an agent checking the answer looks
    real = query_json(old_and_fresh, "why do upload chunks retry when the gateway times out")
    assert real["weak"] is False
    assert titles(real)[0].startswith("fix(upload): retry multipart upload chunks")
    assert answer.WEAK_LINE not in run_cli("-C", str(old_and_fresh), "query", "upload gateway retry").output


def test_a_weak_answer_under_the_smallest_budgets_stays_within_them(old_and_fresh: Path) -> None:
    """The "No strong match" line, a note and the project list came on top of a budget of 50: ~64/50, and
    ~84/50 across projects. The header gives way instead; the answer still starts "No strong match"."""
    run_cli("-C", str(old_and_fresh), "sync", "--no-embed")
    question = "why did we migrate the billing database to MongoDB and kubernetes deploy caching"
    for budget in ("50", "55", "80", "2000"):
        for extra in ([], ["--all-projects"]):
            out = run_cli(  # stdout: a note the budget cannot hold is said on stderr
                "-C", str(old_and_fresh), "query", *extra, "--budget", budget, "--", question
            ).stdout
            assert out.startswith("No strong match"), (budget, extra, out)
            assert (len(out.rstrip("\n")) + 3) // 4 <= int(budget), (budget, extra, out)
            used = json.loads(
                run_cli(
                    "-C", str(old_and_fresh), "query", *extra, "--json", "--budget", budget, "--", question
                ).output
            )
            assert used["weak"] is True and used["tokens_used"] <= int(budget), (budget, extra, used)


def test_a_product_the_question_names_that_memory_never_saw_is_a_weak_answer(old_and_fresh: Path) -> None:
    """Most of the question's words are everywhere ("upload", "chunks", "retry"); the one it is about is
    nowhere. Written as a name, it says the answer is not in memory; the same words without it do not."""
    run_cli("-C", str(old_and_fresh), "sync", "--no-embed")
    assert query_json(old_and_fresh, "when did upload chunks retry through Kafka at the storage gateway")[
        "weak"
    ]
    assert not query_json(old_and_fresh, "when did upload chunks retry at the storage gateway")["weak"]
    # A word in capitals is how people name a symptom (CPU, OOM), not what the answer must hold.
    assert not query_json(old_and_fresh, "when did upload chunks retry at the storage gateway on CPU")["weak"]
    assert query.names_absent("the GraphQL endpoint", ["graphql"])
    assert not query.names_absent("Kafka retries", ["kafka"])  # the first word is capitalised anyway
    assert not query.names_absent("the graphql endpoint", ["graphql"])


def test_ordinary_words_memory_lacks_do_not_make_an_answered_question_weak(old_and_fresh: Path) -> None:
    """A user tells what they saw in everyday words no commit uses ("suddenly", "somewhere"); the commit
    that answers holds the rest. Those words count a quarter of their weight, so the answer is not flagged;
    a name memory never saw ("Kafka" split into pieces by the tokenizer, not a word of English) still is."""
    run_cli("-C", str(old_and_fresh), "sync", "--no-embed")
    told = "upload chunks retry at the storage gateway, then suddenly somewhere it stops"
    answered = query_json(old_and_fresh, told)
    assert titles(answered)[0].startswith("fix(upload): retry multipart upload chunks")
    assert answered["weak"] is False
    assert answer.WEAK_LINE not in run_cli("-C", str(old_and_fresh), "query", told).output
    assert query_json(old_and_fresh, "upload chunks retry at the storage gateway through kafka")["weak"]
    assert builtin.whole_words(["suddenly", "somewhere", "kafka", "brotli"]) == {"suddenly", "somewhere"}


def test_an_ordinary_word_in_another_form_than_the_vocabularys_counts_as_ordinary(
    old_and_fresh: Path,
) -> None:
    """ "My tests mock the gateway and the upload blows up": the tokenizer's vocabulary holds "blow", not
    "blows", and the absent word counted in full, as a name memory never saw would: an answered question was
    flagged weak. An inflection of an ordinary word is ordinary; a name's plural is not."""
    run_cli("-C", str(old_and_fresh), "sync", "--no-embed")
    told = "upload chunks retry at the storage gateway and then blows mightily"
    answered = query_json(old_and_fresh, told)
    assert titles(answered)[0].startswith("fix(upload): retry multipart upload chunks")
    assert answered["weak"] is False
    assert query.ordinary_words(["blows", "mocked", "hanging", "stopped", "kafkas", "brotli"]) == {
        "blows",
        "mocked",
        "hanging",
        "stopped",
    }


def test_asking_when_a_name_memory_never_saw_arrived_is_a_weak_answer(old_and_fresh: Path) -> None:
    """ "Which version added `uploadResumable()` …?" takes for granted that it was added. Memory holds
    every other word of the question, so the share of missing words alone would not flag it; the name does,
    however close its vector neighbours. Asked of a name memory holds, or without asking when something
    arrived, it does not."""
    run_cli("-C", str(old_and_fresh), "sync")
    tail = "to retry multipart upload chunks when the storage gateway times out?"
    asked = f"Which version added `uploadResumable()` {tail}"
    gained = f"when did the uploader gain a --dry-run flag {tail}"
    held = f"Which version added the RETRIES constant {tail}"
    told = "multipart upload chunks retry when the storage gateway times out, then uploadResumable() hangs"
    seen = "when did upload chunks start to retry at the storage gateway on a GatewayTimeoutError?"
    with project_mod.load(old_and_fresh).open_store(readonly=True) as store:
        strength = {
            text: query.strength(query.retrieve(store, text)) for text in (asked, gained, held, told, seen)
        }
    for text in (asked, gained):
        assert strength[text].missing < query.WEAK_MISSING
        assert strength[text].absent_arrival and strength[text].weak
    # A name memory holds; a name the user saw fail, not asked about; an exception the user saw.
    assert not any(strength[text].absent_arrival for text in (held, told, seen))
    assert query_json(old_and_fresh, asked)["weak"]
    assert not query_json(old_and_fresh, held)["weak"]


def test_the_learned_judgement_weighs_what_the_list_says_as_well_as_what_memory_lacks() -> None:
    """The same share of the question missing from memory reads differently by what the list shows: a first
    result that stands out, with a close vector neighbour, is an answer; a flat list whose neighbours are
    far is not. Half the question absent is weak whatever the list, with vectors or without, and so is a
    question that takes for granted a name memory never saw arrive."""
    answered = query.Strength(
        missing=0.2,
        cosine=0.55,
        first_coverage=0.8,
        best_coverage=0.8,
        first_lexical=1.0,
        first_cosine=0.55,
        heaviest_absent=0.2,
        flatness=0.4,
    )
    lost = replace(answered, cosine=0.4, first_cosine=0.35, flatness=0.9)
    assert not answered.weak and lost.weak
    assert not replace(answered, cosine=0.0, first_cosine=0.0, vectors=False).weak
    assert replace(lost, cosine=0.0, first_cosine=0.0, vectors=False).weak
    half = replace(answered, missing=query.WEAK_CERTAIN, heaviest_absent=0.3, cosine=0.9, first_cosine=0.9)
    assert half.weak and replace(half, vectors=False).weak
    assert replace(answered, absent_arrival=True).weak
    # What a small store cannot say (fewer than five results) counts as the labelled sets' median.
    assert query.FLATNESS_UNKNOWN == 0.67


def test_an_exception_the_user_saw_is_not_a_name_the_answer_must_hold() -> None:
    assert not query.names_absent("the upload raises TypeError at the gateway", ["typeerror"])
    assert not query.names_absent("and then AttributeError: 'NoneType' has no write", ["nonetype"])
    assert not query.names_absent("prints a DeprecationWarning", ["deprecationwarning"])
    assert query.names_absent("retries through Kafka", ["kafka"])


def test_a_pasted_2000_word_log_still_answers_with_a_short_header(old_and_fresh: Path) -> None:
    run_cli("-C", str(old_and_fresh), "sync")
    lines = [
        f"2026-03-{n % 28 + 1:02d}T10:{n % 60:02d}:00Z worker-{n % 5} req={n * 7919:x} "
        + (
            "upload chunk 7 failed: storage gateway timeout after 30s, retrying"
            if n % 9 == 0
            else "GET /health 200 ok"
        )
        for n in range(300)
    ]
    log = "\n".join(lines)
    assert len(log.split()) >= 2000
    data = query_json(old_and_fresh, log, "--budget", "600")
    assert titles(data)[0].startswith("fix(upload): retry multipart upload chunks")
    assert any("cut" in note for note in data["notes"])
    assert data["tokens_used"] <= 600
    text = run_cli("-C", str(old_and_fresh), "query", "--budget", "600", "--", log).output
    head = text.splitlines()[0]
    assert head.startswith("Relevant history for: 2026-03-01") and len(head) <= 200
    assert "note: the question was cut" in text


def test_a_log_too_long_for_a_command_line_is_asked_through_stdin(old_and_fresh: Path) -> None:
    """A single argument is capped at 128 KB on Linux: a real failing run's output cannot be passed as the
    question, so `query -` reads it from stdin (through the installed script, and through click)."""
    run_cli("-C", str(old_and_fresh), "sync", "--no-embed")
    noise = "\n".join(
        f"2026-03-01T10:00:{n % 60:02d}Z GET /health 200 ok req={n * 7919:x}" for n in range(4000)
    )
    log = noise + "\nupload chunk 7 failed: storage gateway timeout after 30s, retrying\n"
    assert len(log.encode()) > 131_072
    proc = subprocess.run(
        [console_script(), "-C", str(old_and_fresh), "query", "--json", "-"],
        input=log,
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert titles(data)[0].startswith("fix(upload): retry multipart upload chunks"), titles(data)
    assert any("cut" in note for note in data["notes"])
    runner = CliRunner()
    clicked = runner.invoke(cli, ["-C", str(old_and_fresh), "query", "--budget", "600", "-"], input=log)
    assert clicked.exit_code == 0, clicked.output
    assert "fix(upload): retry multipart upload chunks" in clicked.output
    empty = runner.invoke(cli, ["-C", str(old_and_fresh), "query", "-"], input="")
    assert empty.exit_code == 2 and "the query is empty" in empty.output


def test_json_gives_the_question_as_searched_not_the_whole_paste(old_and_fresh: Path) -> None:
    """`query --json -` with a pasted 1.4 MB log answered within its budget, then repeated the whole log as
    `query` (13 MB for a larger paste): the object gives the question cut as it was searched, and says so."""
    run_cli("-C", str(old_and_fresh), "sync", "--no-embed")
    log = (
        "2026-03-01 worker started\n"
        + "curl error 28 timeout " * 60_000
        + "\nupload chunk 7 failed: gateway\n"
    )
    proc = subprocess.run(
        [console_script(), "-C", str(old_and_fresh), "query", "--json", "--budget", "600", "-"],
        input=log,
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert len(proc.stdout) < 20 * MAX_QUERY_CHARS, len(proc.stdout)
    data = json.loads(proc.stdout)
    assert data["query_cut"] is True and any("cut" in note for note in data["notes"])
    assert len(data["query"]) <= MAX_QUERY_CHARS + 3
    assert data["query"].startswith("2026-03-01 worker started")
    assert data["query"].rstrip().endswith("upload chunk 7 failed: gateway")
    short = query_json(old_and_fresh, "upload retry")
    assert short["query"] == "upload retry" and short["query_cut"] is False


def test_a_best_match_too_large_for_the_budget_is_said_not_silently_swapped(repo: Path) -> None:
    """With a small budget the first result was skipped and a weaker, smaller one shown in its place, with
    nothing to say so; when nothing fit, the answer read "No memory matches"."""
    why = "Readers were blocked while the nightly repricing job held the write lock. " * 6
    commit(repo, f"fix(cache): switch the price cache to WAL\n\n{why}", {"cache.py": "JOURNAL = 'wal'\n"})
    commit(repo, "docs: cache notes", {"NOTES.md": "# Notes\n\nThe price cache.\n"})
    set_embedding(repo, provider="none")  # no vectors, and no note saying semantic search was skipped
    run_cli("-C", str(repo), "sync", "--no-embed")
    question = "why did we switch the price cache to WAL"
    roomy = query_json(repo, question)
    assert titles(roomy)[0] == "fix(cache): switch the price cache to WAL"
    assert not any("does not fit" in note for note in roomy["notes"])
    # Too large at 80 even with the notes on stderr: shown by its head alone (title, id, sha), said so.
    tight = query_json(repo, question, "--budget", "80")
    assert titles(tight)[0] == "fix(cache): switch the price cache to WAL", tight
    assert tight["items"][0]["summary"] == ""
    assert any("the best match is shown without its details" in note for note in tight["notes"])
    assert tight["tokens_used"] <= 80
    shown = run_cli("-C", str(repo), "query", "--budget", "80", "--", question).stdout
    assert "fix(cache): switch the price cache to WAL" in shown and "  commit " in shown, shown
    assert "Readers were blocked" not in shown, shown
    # Too large even so: said not to fit, never silently swapped for a weaker, smaller one.
    text = run_cli("-C", str(repo), "query", "--budget", "50", "--", question).output
    assert "No memory matches" not in text and "does not fit the budget of 50" in text, text
    assert "0 of " in text
    # The whole answer, footer included, stays within the budget.
    for budget in ("50", "80", "300"):
        # (stdout: a note the budget cannot hold is said on stderr)
        out = run_cli("-C", str(repo), "query", "--budget", budget, "--", question).stdout
        assert (len(out.rstrip("\n")) + 3) // 4 <= int(budget), (budget, out)
        used = json.loads(
            run_cli("-C", str(repo), "query", "--json", "--budget", budget, "--", question).output
        )
        assert used["tokens_used"] <= int(budget), used
    # Matches that a filter took out (an --author, a window) leave nothing to show: said as before.
    filtered = answer.QueryResult(query=question, budget=2000, matched=3, weak=True)
    assert answer.render(filtered) == f"No memory matches: {question}"


def test_a_bm25_only_hit_is_not_buried_by_vector_only_hits(repo: Path) -> None:
    commit(repo, "Speed up image thumbnail rendering", {"thumbs.py": "SIZE = 128\n"})
    commit(repo, "Make photo previews load quicker", {"preview.py": "LAZY = True\n"})
    commit(repo, "Faster picture resizing with a worker pool", {"resize.py": "POOL = 4\n"})
    commit(repo, "Cache rendered avatars on disk", {"avatar.py": "CACHE = True\n"})
    commit(repo, "Set qz_blit_stride to 64 for the compositor", {"blit.c": "int qz_blit_stride = 64;\n"})
    run_cli("-C", str(repo), "sync")
    data = query_json(repo, "qz_blit_stride make images render faster")
    assert data["vector_matched"] >= 2  # the picture commits are in the vector list
    assert titles(data)[0] == "Set qz_blit_stride to 64 for the compositor"


def test_evidence_keeps_a_one_list_item_whole() -> None:
    found = fuse.evidence([[("a", 8.0), ("b", 4.0)]], [("c", 0.9), ("b", 0.5)], floor=0.25)
    assert found["a"] == fuse.Evidence(lexical=1.0, semantic=0.0, cosine=0.0)
    assert found["b"].lexical == pytest.approx(0.5) and found["b"].semantic == pytest.approx(1 / 3)
    assert found["c"].lexical == 0.0 and found["c"].semantic == pytest.approx(0.65 / 0.75)


def test_the_nearest_few_by_vector_gain_a_share_that_falls_with_their_place() -> None:
    found = fuse.evidence([[("a", 8.0)]], [("n1", 0.40), ("n2", 0.38), ("a", 0.30), ("n9", 0.29)], floor=0.0)
    nearest = [("n1", 0.40), ("n2", 0.38), ("a", 0.30), ("n4", 0.3), ("n5", 0.3), ("n9", 0.29)]
    lifted = fuse.lift_nearest(dict(found), nearest, lift=0.15)
    assert lifted["n1"].semantic == pytest.approx(0.40 + 0.15)  # the nearest: the whole lift
    assert lifted["n2"].semantic == pytest.approx(0.38 + 0.12)
    assert lifted["a"].semantic == pytest.approx(0.30 + 0.09) and lifted["a"].lexical == 1.0
    assert lifted["n9"] == found["n9"]  # sixth: past the depth, unchanged
    assert lifted["n1"].cosine == pytest.approx(0.40)  # the similarity itself is not changed
    assert fuse.lift_nearest(dict(found), nearest, lift=0.0) == found
    full = fuse.lift_nearest({"x": fuse.Evidence(0.0, 0.95, 0.95)}, [("x", 0.95)], lift=0.15)
    assert full["x"].semantic == 1.0  # a share stays a share
    # A node left out (a shell command) keeps its share and its place: the next one is still second.
    some = fuse.lift_nearest(dict(found), nearest, lift=0.15, only={"n2", "a"})
    assert some["n1"] == found["n1"]
    assert some["n2"].semantic == pytest.approx(0.38 + 0.12)


def test_the_lift_goes_to_the_nearest_changes_not_to_the_commands_run_nearby(repo: Path) -> None:
    from nexusmem.paths import shell_log_path
    from nexusmem.retrieve import vector

    commit(repo, "Publish the compose redis on host port 6380", {"compose.yml": "redis: 6380\n"})
    now = int(time.time() * 1000) - 60_000
    log = shell_log_path()
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("a", encoding="utf-8") as handle:
        for n, (command, code) in enumerate(
            [("docker compose up -d redis", 1)] * 3 + [("redis-cli ping", 0)]
        ):
            line = {"v": 1, "ts": now + n, "cwd": str(repo), "shell": "bash", "session": "s1"}
            handle.write(json.dumps({**line, "command": command, "exit": code}) + "\n")
    run_cli("-C", str(repo), "sync")
    with project_mod.load(repo).open_store(readonly=True) as store:
        near = vector.neighbours(store, "redis port clash with docker compose", question=True)
        kinds = {i: n.kind for i, n in store.get_many([i for i, _ in near.hits], light=True).items()}
        head = [i for i, _ in near.hits[: fuse.NEAREST_DEPTH]]
        assert {kinds[i] for i in head} >= {"shell_command", "git_commit"}, kinds
        found = fuse.evidence([], near.hits, near.floor)
        lifted = history.lift_nearest(store, dict(found), near.hits)
    for place, node_id in enumerate(head):
        if kinds[node_id] == "shell_command":
            assert lifted[node_id] == found[node_id]
        else:
            bonus = fuse.NEAREST_LIFT * (1 - place / fuse.NEAREST_DEPTH)
            assert lifted[node_id].semantic == pytest.approx(min(1.0, found[node_id].semantic + bonus))


@pytest.mark.parametrize(
    ("text", "cued"),
    [
        ("what failed yesterday", True),
        ("the most recent change to the parser", True),
        ("what did I try last", True),
        ("anything from last week about the cache", True),
        ("what broke on 2024-05-01", True),
        ("the flaky test this morning", True),
        # As people say it: a time, then how sure they are of it.
        ("a week or so ago the parallel test run broke, what fixed it", True),
        ("which spec was flaky a day or two ago", True),
        ("an hour or three ago the merge conflicted", True),
        ("why does the parser reject the last argument", False),
        ("a flag or so ago option", False),
        ("why does the cache use WAL", False),
        ("handle the latestVersion field", False),
    ],
)
def test_time_cues_are_found_only_where_they_are(text: str, cued: bool) -> None:
    assert (timecue.find_cue(text) is not None) is cued


def test_the_cheap_word_check_never_hides_a_cue() -> None:
    """find_cue skips compiling its regexes for a question without a digit or a cue word; on every question
    here (cue words inside other words, at underscores, in capitals, non-ASCII look-alikes) the answer is
    what the regexes alone say."""
    relative, dates = timecue._patterns()
    words = ["LAST", "lastly", "this_week", "this", "week", "agony", "ago", "2", "nowhere", "Now", "past_due",
             "past", "hours", "PAST", "days", "Yesterday", "yesterdays", "fixed", "last", "time", "recently",
             "lateſt", "\u212aelvin", "May", "tried", "3", "few", "minutes", "a", "ago.", "(today)", "la-test"]  # fmt: skip
    checked = 0
    for i, first in enumerate(words):
        for second in [*words[i:], ""]:
            for text in (f"{first} {second}", f"why {second}-{first} of it", f"{first}{second}"):
                expected = bool(relative.search(text) or dates.search(text))
                assert (timecue.find_cue(text) is not None) is expected, text
                checked += 1
    assert checked > 1000


def _ms(year: int, month: int, day: int, hour: int = 0) -> int:
    return int(datetime(year, month, day, hour, tzinfo=timezone.utc).timestamp() * 1000)


def test_day_words_are_local_days() -> None:
    """`--since today`, `--until yesterday` (MCP since/until) and the question's "today", "yesterday", "the
    day before yesterday" were UTC days: at 5:30 pm in California "today" had begun half an hour before, in
    Tokyo at 8 am it was still yesterday. They are the days of the local time zone (TZ), however long: 25
    hours the day the clocks go back, 23 the day they go forward. A date written out stays a UTC day, and a
    time written without an offset UTC."""
    with local_zone("America/Los_Angeles") as zone:
        evening = datetime(2026, 12, 4, 17, 30, tzinfo=zone)  # 01:30 UTC on the 5th
        assert timecue.parse_when("today", now=evening) == _ms(2026, 12, 4, 8)  # midnight in California
        assert timecue.parse_when("today", end=True, now=evening) == _ms(2026, 12, 5, 8) - 1
        monday = datetime(2026, 11, 2, 9, tzinfo=zone)  # the clocks went back at 2:00 on Sunday
        assert timecue.parse_when("yesterday", now=monday) == _ms(2026, 11, 1, 7)  # midnight PDT
        assert timecue.parse_when("yesterday", end=True, now=monday) == _ms(2026, 11, 2, 8) - 1  # 25 hours
        assert timecue.local_day(2, now=monday) == (_ms(2026, 10, 31, 7), _ms(2026, 11, 1, 7) - 1)
        spring = datetime(2026, 3, 9, 9, tzinfo=zone)  # the clocks went forward at 2:00 on Sunday
        assert timecue.local_day(1, now=spring) == (_ms(2026, 3, 8, 8), _ms(2026, 3, 9, 7) - 1)  # 23 hours
        assert timecue.local_day(0, now=spring) == (_ms(2026, 3, 9, 7), _ms(2026, 3, 10, 7) - 1)
        # Written dates and times keep their meaning: a UTC day, a UTC time.
        assert timecue.parse_when("2026-11-01") == _ms(2026, 11, 1)
        assert timecue.parse_when("2026-11-01", end=True) == _ms(2026, 11, 2) - 1
        assert timecue.parse_when("2026-11-01T08:00:00") == _ms(2026, 11, 1, 8)
    with local_zone("Asia/Tokyo") as zone:
        morning = datetime(2026, 12, 5, 8, tzinfo=zone)  # 23:00 UTC on the 4th
        assert timecue.parse_when("today", now=morning) == _ms(2026, 12, 4, 15)  # midnight in Tokyo
        assert timecue.parse_when("yesterday", now=morning) == _ms(2026, 12, 3, 15)
        assert timecue.parse_when("yesterday", end=True, now=morning) == _ms(2026, 12, 4, 15) - 1


def test_since_until_values() -> None:
    now = datetime(2026, 5, 10, 12, 0, tzinfo=timezone.utc)
    assert timecue.parse_when("2d", now=now) == int(
        datetime(2026, 5, 8, 12, tzinfo=timezone.utc).timestamp() * 1000
    )
    with local_zone("UTC"):  # "yesterday" is a local day (test_day_words_are_local_days)
        assert timecue.parse_when("yesterday", now=now) == int(
            datetime(2026, 5, 9, tzinfo=timezone.utc).timestamp() * 1000
        )
    end = timecue.parse_when("2026-05-01", end=True, now=now)
    assert end == int(datetime(2026, 5, 2, tzinfo=timezone.utc).timestamp() * 1000) - 1
    # ISO 8601's basic form is the same whole day (it was read as that day's first millisecond).
    assert timecue.parse_when("20260501", end=True, now=now) == end
    assert timecue.parse_when("20260501") == timecue.parse_when("2026-05-01")
    assert timecue.parse_when("2026-05-01T08:00:00Z") == int(
        datetime(2026, 5, 1, 8, tzinfo=timezone.utc).timestamp() * 1000
    )
    with pytest.raises(NexusMemError, match="not a date"):
        timecue.parse_when("2026-13-01")
    # An age past the year 1 was an internal error (exit 3), through MCP too: a usage error now.
    for age in ("1000000d", "800000w", "99999999999999999999d"):
        with pytest.raises(NexusMemError, match="before the year 1"):
            timecue.parse_when(age, now=now)


def test_vector_weight_is_validated(tmp_path: Path) -> None:
    assert config.DEFAULTS["ranking"]["vectorWeight"] == rank.VECTOR_WEIGHT
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"ranking": {"vectorWeight": 0.5}}), encoding="utf-8")
    assert config.load(path)["ranking"]["vectorWeight"] == 0.5
    path.write_text(json.dumps({"ranking": {"vectorWeight": -1}}), encoding="utf-8")
    with pytest.raises(ConfigError, match=r"'ranking.vectorWeight' must be between 0 and 2"):
        config.load(path)
    path.write_text(json.dumps({"ranking": {"vectorWeight": "high"}}), encoding="utf-8")
    with pytest.raises(ConfigError, match="must be number"):
        config.load(path)


def _structured(result: CallToolResult) -> tuple[str, dict[str, Any]]:
    assert not result.is_error, result.content
    block = result.content[0]
    assert isinstance(block, TextContent) and result.structured_content is not None
    return block.text, result.structured_content


@pytest.mark.slow
def test_mcp_search_takes_since_until_and_reports_weak(old_and_fresh: Path, tmp_path: Path) -> None:
    run_cli("-C", str(old_and_fresh), "sync", "--no-embed")
    root = str(old_and_fresh)

    async def scenario() -> None:
        async with mcp_session(tmp_path / "server.log") as s:
            _, recent = _structured(
                await s.call_tool(
                    "search_memory", {"projectRoot": root, "query": "upload gateway", "since": "2d"}
                )
            )
            assert titles(recent) == ["chore(upload): log each chunk's gateway"]
            _, older = _structured(
                await s.call_tool(
                    "search_memory",
                    {"projectRoot": root, "query": "upload gateway", "until": _day(NOW - 400 * DAY)},
                )
            )
            assert titles(older) == [
                "fix(upload): retry multipart upload chunks when the storage gateway times out"
            ]
            text, never = _structured(
                await s.call_tool(
                    "search_memory",
                    {"projectRoot": root, "query": "why did we migrate the billing database to MongoDB"},
                )
            )
            assert never["weak"] is True and answer.WEAK_LINE in text
            _, forever = _structured(
                await s.call_tool(
                    "search_memory", {"projectRoot": root, "query": "upload gateway", "until": "9999-12-31"}
                )
            )
            assert "chore(upload): log each chunk's gateway" in titles(forever)
            bad = await s.call_tool(
                "search_memory", {"projectRoot": root, "query": "upload", "until": "soon"}
            )
            assert bad.is_error and "'soon' is not a time" in str(bad.content)
            # An agent that fills the optional strings it has no value for with "" gets the plain search.
            _, blank = _structured(
                await s.call_tool(
                    "search_memory",
                    {
                        "projectRoot": root,
                        "query": "upload gateway",
                        "since": "",
                        "until": " ",
                        "asOf": "",
                        "author": "",
                    },
                )
            )
            assert len(blank["items"]) >= 2

    anyio.run(scenario)


def test_an_answer_a_filter_emptied_says_which_filter(repo: Path) -> None:
    """`--since 2030-01-01`, `--until 2000-01-01` and `--all-projects --as-of 2000-01-01` printed only
    "No memory matches", which reads as "this never happened"."""
    commit(repo, "Retry the network call", {"net.py": "RETRIES = 3\n"})
    run_cli("-C", str(repo), "sync", "--no-embed")
    assert query_json(repo, "retry network")["items"]
    later = run_cli("-C", str(repo), "query", "--since", "2030-01-01", "retry network")
    assert "No memory matches" in later.output
    assert "note: nothing matches since 2030-01-01T00:00:00+00:00" in later.output
    earlier = query_json(repo, "retry network", "--until", "20000101")
    assert earlier["items"] == [] and earlier["notes"][-1].startswith(
        "nothing matches until 2000-01-01T23:59:59"
    )
    fused = run_cli("-C", str(repo), "query", "--all-projects", "--as-of", "2000-01-01", "retry network")
    assert "nothing matches in what was recorded by 2000-01-01" in fused.output


def test_an_answer_with_changelog_entries_and_their_commits_stays_within_its_budget(repo: Path) -> None:
    """A changelog entry's commit is shown with "-- the commit this changelog entry describes" (a linked fix
    with "-- linked as the fix", a section kept in two places with an "also in" line); packing priced items
    without those words, so the answer went past its budget (3,099 tokens for --budget 3000 on guzzle) and
    `tokens_used` said less than it took."""
    # The entries name their commits by number: each follows its entry, marked as the commit it describes.
    # (The commit that wrote the changelog alone is bookkeeping, and linked to no entry.)
    for n in range(1, 4):
        commit(repo, f"feat(queue): tune w{n} (#{n})", {f"queue/w{n}.py": f"BACKOFF = {n}\n"})
    entries = [
        f"## 1.{n}.0\n\n- Added retry backoff for the upload queue worker {n} with jittered delays (#{n})\n"
        for n in (3, 2)
    ]
    commit(repo, "docs: the changelog", {"CHANGELOG.md": "# Changelog\n\n" + "\n".join(entries)})
    run_cli("-C", str(repo), "sync", "--no-embed")
    question = "retry backoff for the upload queue worker"
    marks = 0
    for budget in (300, 700, 1500, 3000):
        out = run_cli("-C", str(repo), "query", "--budget", str(budget), "--", question).output
        data = json.loads(
            run_cli("-C", str(repo), "query", "--json", "--budget", str(budget), "--", question).output
        )
        shown = (len(out.rstrip("\n")) + 3) // 4  # retrieve/pack.py estimate_tokens, what the header counts
        assert shown <= data["tokens_used"] <= budget, (budget, shown, data["tokens_used"])
        marks += out.count("CHANGELOG.md — 1.")
    assert marks > 0  # the entries, whose words went uncounted, are in the answers


def test_a_commit_is_labelled_as_an_entrys_only_when_shown_after_that_entry(repo: Path) -> None:
    """The commits a changelog entry describes are lifted above it; they used to carry "the commit this
    changelog entry describes" (and `linked_from` the entry) there, pointing at an entry shown further down.
    A linked item is only ever labelled right after the item it is linked from."""
    commit(repo, "Add the project skeleton", {"README.md": "# shop\n"}, when=NOW - 400 * DAY)
    fix = "fix(cache): the price cache no longer locks up under concurrent writers (#12)"
    commit(repo, fix, {"cache.py": "JOURNAL = 'wal'\n"}, when=NOW - 300 * DAY)
    entry = "# Changelog\n\n## 1.1.0\n\n- The price cache no longer locks up under concurrent writers (#12)\n"
    commit(repo, "release 1.1.0", {"CHANGELOG.md": entry}, when=NOW - 10 * DAY)
    run_cli("-C", str(repo), "sync", "--no-embed")
    question = "price cache locks up under concurrent writers"
    items = query_json(repo, question)["items"]
    titles_in_order = [it["title"] for it in items]
    assert fix in titles_in_order and any(t.startswith("CHANGELOG.md — 1.1.0") for t in titles_in_order)
    for i, it in enumerate(items):
        if it["linked_from"] is not None:
            shown_with = next(
                (prev["id"] for prev in reversed(items[:i]) if prev["linked_from"] is None), None
            )
            assert it["linked_from"] == shown_with, (i, titles_in_order)
    lines = run_cli("-C", str(repo), "query", question).output.splitlines()
    items_start = [n for n, line in enumerate(lines) if line.startswith("- ")]
    for n in items_start:
        if lines[n].endswith("-- the commit this changelog entry describes"):
            above = max(m for m in items_start if m < n)
            assert "CHANGELOG.md — 1.1.0" in lines[above], lines


def test_as_of_takes_what_until_takes_and_a_date_means_its_end(repo: Path) -> None:
    """`--as-of 2026-12-05` meant midnight at its start, leaving out what that day's syncs recorded (where
    `--until` covers the whole day), and `--as-of yesterday` was refused. Both options now read a time
    alike, on both CLI paths and in MCP's asOf."""
    commit(repo, "fix(cache): switch the price cache to WAL", {"cache.py": "JOURNAL = 'wal'\n"})
    run_cli("-C", str(repo), "sync", "--no-embed")
    today = datetime.now(timezone.utc).strftime("%Y-%m-%d")
    assert "price cache" in " ".join(titles(query_json(repo, "price cache WAL", "--as-of", today)))
    plain = subprocess.run(
        [console_script(), "-C", str(repo), "query", "--json", "--as-of", today, "price cache WAL"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert plain.returncode == 0 and "price cache" in " ".join(titles(json.loads(plain.stdout))), plain.stderr
    for earlier in ("yesterday", "2d"):
        answer = query_json(repo, "price cache WAL", "--as-of", earlier)
        assert answer["items"] == [] and any("before this memory's first" in n for n in answer["notes"])
    assert query.parse_as_of("2026-12-05") == timecue.parse_when("2026-12-05", end=True)


def test_a_wrapped_subject_is_not_repeated_under_its_title(repo: Path) -> None:
    """A first paragraph wrapped over two lines is the title (git joins it), and the summary showed its tail
    again ("... recent promise changes." then "changes."): it starts after the paragraph."""
    commit(
        repo,
        "Moving retry middleware to class. Updating based on recent promise\nchanges.\n\n"
        "The delay callable now gets the response.",
        {"src/RetryMiddleware.php": "<?php class RetryMiddleware {}\n"},
    )
    commit(repo, "feat: one-line subject\n\nWith a body.", {"b.txt": "b\n"})
    run_cli("-C", str(repo), "sync", "--no-embed")
    wrapped = next(
        it for it in query_json(repo, "retry middleware promise")["items"] if it["kind"] == "git_commit"
    )
    assert wrapped["title"] == "Moving retry middleware to class. Updating based on recent promise changes."
    assert wrapped["summary"].startswith("The delay callable now gets the response."), wrapped["summary"]
    plain = next(it for it in query_json(repo, "one-line subject")["items"] if it["kind"] == "git_commit")
    assert plain["summary"].startswith("With a body."), plain["summary"]


def test_the_comments_in_an_answers_fenced_code_are_shown(repo: Path) -> None:
    """A changelog entry with a ```python block showed only `frob(1)`: the summary dropped every line that
    starts with "#" (meant for Markdown headings) inside code too, so the comment and a C `#include` were
    gone (`show` had them). Headings outside code still are not repeated."""
    changelog = "# Changelog\n\n## 1.1.0\n\n- Added the frobnicator:\n\n  ```python\n"
    changelog += "  # frob twice to warm the cache\n  frob(1)\n  ```\n"
    guide = '# Guide\n\n## Embedding\n\n```c\n#include "frobnicator.h"\nint main(void) { frob(1); }\n```\n'
    commit(repo, "Add the frobnicator", {"CHANGELOG.md": changelog, "docs/guide.md": guide})
    run_cli("-C", str(repo), "sync", "--no-embed")
    out = run_cli("-C", str(repo), "query", "frobnicator").output
    assert "# frob twice to warm the cache" in out, out
    assert '#include "frobnicator.h"' in out, out
    assert "  ## Embedding" not in out, out


_PHP_TRACE = """GuzzleHttp\\Exception\\ConnectException: cURL error 28: Connection timed out after 5001 milliseconds \
(see https://curl.haxx.se/libcurl/c/libcurl-errors.html) for https://api.example.com/v1/orders?page=2 in \
/var/www/app/vendor/guzzlehttp/guzzle/src/Handler/CurlFactory.php:210
Stack trace:
#0 /var/www/app/vendor/guzzlehttp/guzzle/src/Handler/CurlFactory.php(158): GuzzleHttp\\Handler\\CurlFactory::\
createRejection(Object(GuzzleHttp\\Handler\\EasyHandle), Array)
#1 /var/www/app/vendor/guzzlehttp/guzzle/src/Handler/CurlFactory.php(110): GuzzleHttp\\Handler\\CurlFactory::\
finishError(Object(GuzzleHttp\\Handler\\CurlMultiHandler), Object(GuzzleHttp\\Handler\\EasyHandle))
#2 /var/www/app/vendor/guzzlehttp/guzzle/src/Handler/CurlMultiHandler.php(244): GuzzleHttp\\Handler\\CurlFactory::\
finish(Object(GuzzleHttp\\Handler\\CurlMultiHandler), Object(GuzzleHttp\\Handler\\EasyHandle))
#3 /var/www/app/vendor/guzzlehttp/guzzle/src/Handler/CurlMultiHandler.php(227): GuzzleHttp\\Handler\\\
CurlMultiHandler->processMessages()
#4 /var/www/app/vendor/guzzlehttp/promises/src/Promise.php(251): GuzzleHttp\\Handler\\CurlMultiHandler->execute(true)
#5 /var/www/app/vendor/guzzlehttp/promises/src/Promise.php(227): GuzzleHttp\\Promise\\Promise->invokeWaitFn()
#6 /var/www/app/vendor/guzzlehttp/guzzle/src/Client.php(189): GuzzleHttp\\Promise\\Promise->wait()
#7 /var/www/app/src/Service/OrderSync.php(57): GuzzleHttp\\Client->get('https://api.exa...', Array)
#8 {main}
"""


def test_a_pasted_trace_is_asked_by_its_headline_with_its_frames_as_context(repo: Path) -> None:
    """`nexusmem query - < trace.txt` with a PHP ConnectException trace searched "the 24 rarest known words",
    most of them the frames' paths and functions, and guzzle's "Adding a ConnectException" ranked 49th (the
    first line alone put it first). A pasted trace's headline (the exception and its message) is the
    question, its frames context; a one-line question, or lines without frames, are read as before."""
    commit(
        repo,
        "Adding a ConnectException",
        {"src/Exception/ConnectException.php": "class ConnectException {}\n"},
    )
    for n, (path, words) in enumerate(
        [
            ("src/Handler/CurlFactory.php", "createRejection finishError EasyHandle"),
            ("src/Handler/CurlMultiHandler.php", "processMessages CurlMultiHandler execute"),
            ("src/Promise.php", "invokeWaitFn Promise wait"),
            ("src/Client.php", "Client get request"),
            ("src/Handler/CurlFactory.php", "finish CurlMultiHandler EasyHandle createRejection"),
        ]
    ):
        commit(repo, f"Refactor {words} in {path.rsplit('/', 1)[-1]}", {path: f"// {words} {n}\n"})
    run_cli("-C", str(repo), "sync", "--no-embed")
    piped = subprocess.run(
        [console_script(), "-C", str(repo), "query", "--json", "-"],
        input=_PHP_TRACE,
        capture_output=True,
        text=True,
        check=True,
    )
    found = json.loads(piped.stdout)
    assert found["items"][0]["title"] == "Adding a ConnectException", [it["title"] for it in found["items"]]
    assert "a pasted trace: its headline is the question, its 9 frames context" in found["notes"], found[
        "notes"
    ]
    trace = pasted_trace(_PHP_TRACE)
    assert trace is not None and trace.headline == (
        "GuzzleHttp\\Exception\\ConnectException: cURL error 28: Connection timed out after 5001 milliseconds"
    )
    python = "Traceback (most recent call last):\n  File \"app.py\", line 3, in <module>\n    main()\nKeyError: 'id'\n"
    java = "java.lang.IllegalStateException: closed\n\tat okio.Buffer.read(Buffer.java:12)\n\tat a.B.c(B.java:3)\n"
    node = "TypeError: x is not a function\n    at f (/app/a.js:3:9)\n    at Object.<anonymous> (/app/b.js:1:1)\n"
    assert [t.headline if t else None for t in map(pasted_trace, (python, java, node))] == [
        "KeyError: 'id'",
        "java.lang.IllegalStateException: closed",
        "TypeError: x is not a function",
    ]
    for ordinary in ("why does the request time out at 5 s", "it fails\nat startup (see app.js:3)\nagain"):
        assert pasted_trace(ordinary) is None, ordinary


def test_a_small_budget_shows_the_answer_and_says_the_notes_it_cannot_hold_on_stderr(
    repo: Path, tmp_path: Path
) -> None:
    """`query "what's new in the latest version" --budget 80` (luxon) printed three notes, one of them "the
    best match (~52 tokens) does not fit the budget of 80", and no item: the notes took the answer's place.
    The best item now wins over the notes that do not fit with it (on stderr, as the README says; --json
    keeps them), and only an item too large for the header alone is said not to fit."""
    commit(repo, "feat: parse ES modules", {"src/parse.js": "export const esm = true;\n"})
    changelog = "# Changelog\n\n## 3.7.2 (2025-07-09)\n\n- Fix ES6 packaging\n"
    release = commit(repo, "bump to 3.7.2", {"CHANGELOG.md": changelog})
    git(repo, "tag", "3.7.2", release)
    run_cli("-C", str(repo), "sync", "--no-embed")
    question = "what's new in the latest version"
    data = query_json(repo, question, "--budget", "80")
    assert data["items"] and "3.7.2" in data["items"][0]["title"] + data["items"][0]["ref"], data
    assert not any(note.startswith("the best match") for note in data["notes"]), data["notes"]
    assert data["tokens_used"] <= 80
    cli = run_script("-C", str(repo), "query", "--budget", "80", "--", question, cwd=tmp_path)
    assert cli.returncode == 0 and "Fix ES6 packaging" in cli.stdout, cli.stdout
    left = [note for note in data["notes"] if f"note: {note}" not in cli.stdout]
    assert left and all(f"nexusmem: note: {note}" in cli.stderr for note in left), (cli.stdout, cli.stderr)
