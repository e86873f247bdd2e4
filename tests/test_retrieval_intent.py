"""What the question asks for, on real stores built from real git repositories: a usage question lifts
doc sections, a commit that says it fixes something counts more, and symptom words reach the commit that
names the mechanism through the thesaurus."""

from __future__ import annotations

import hashlib
import json
import subprocess
import time
from dataclasses import replace
from datetime import datetime, timedelta, timezone
from datetime import time as dtime
from pathlib import Path

import pytest

from nexusmem import project, timefmt
from nexusmem.retrieve import history, query, rank, rerank, search, thesaurus
from nexusmem.retrieve.activity import asks_recent_work
from nexusmem.retrieve.intent import (
    adopted_name,
    code_names,
    intent,
    mentions_docs,
    mentions_tests,
    names_code,
    origin_name,
    purpose_name,
    removed_name,
    sequence,
    topic,
)
from nexusmem.retrieve.question import prepare
from nexusmem.retrieve.runs import FAILURES_LISTED
from nexusmem.retrieve.worktime import without_names

from helpers import (
    commit,
    git,
    init_repo,
    query_json,
    run_cli,
    run_script,
    short_sha,
    write_commands,
    write_recent,
)
from helpers.env import clear_of_midnight, local_zone, since_midnight

DAY = 86_400
# When the test began, and the seconds since the midnight before it where the tests run ("today" and
# "yesterday" are local days: timecue.local_day): set as each test starts (clock), not once at import, which
# comes minutes before these tests run in the whole suite; within that lag of a midnight (~1 CI run in 150)
# the commands written minutes before the stale NOW fell on the day before the one queries ask about.
NOW = int(time.time())
SINCE_MIDNIGHT = since_midnight(NOW)
# Longer than any test here takes on a loaded machine (~1.5 s at most, unloaded).
MIDNIGHT_MARGIN = 120


TIDY_AREAS = ("parser", "hashing", "logging", "cli", "manifest", "packaging")


def tidy_modules(repo: Path, areas: list[str] | tuple[str, ...] = TIDY_AREAS) -> None:
    """A haystack of old commits, one per area ("Tidy the parser module", each touching parser.py), a day
    apart some 900 days ago: what a question must be told apart from."""
    for n, area in enumerate(areas):
        commit(repo, f"Tidy the {area} module", {f"{area}.py": f"N = {n}\n"}, when=NOW - (900 - n) * DAY)


@pytest.fixture(autouse=True)
def clock() -> None:
    """NOW and SINCE_MIDNIGHT for this test, with no local midnight in the next MIDNIGHT_MARGIN seconds."""
    global NOW, SINCE_MIDNIGHT
    clear_of_midnight(MIDNIGHT_MARGIN)
    NOW = int(time.time())
    SINCE_MIDNIGHT = since_midnight(NOW)


@pytest.mark.parametrize(
    ("text", "asks"),
    [
        ("how do I turn off colour in the output", "usage"),
        ("is there a way to read the token from a file", "usage"),
        ("what does the --strict flag do", "usage"),
        ("when did the --strict flag start failing on warnings", "history"),
        ("which change added the retry option", "history"),
        ("where was the token cache introduced", "history"),
        ("the upload hangs after a gateway timeout", "neutral"),
        ("how do I get the old behaviour back now that the flag was removed", "neutral"),
        ("I keep a file of patterns; which option makes it skip every path matching them?", "usage"),
        ("the binary complains about a missing VCRUNTIME140.dll; what are my options?", "usage"),
        ("the variable is empty inside my request handlers — is that expected?", "usage"),
        ("does undici offer a way to ping the server on an open WebSocket?", "usage"),
        ("how can my test make sure the client did not reconnect?", "usage"),
        ("where does fd read a global ignore file from?", "usage"),
        ("where does the error code E42 come from?", "neutral"),  # an origin question: history's words
        ("the option to skip paths is ignored since the last release", "neutral"),
        ("how has support for UNIX domain sockets changed over the years?", "history"),
        ("how has the way it reads proxy headers evolved?", "history"),
        ("what changes were made to the cookie parser?", "history"),
        ("how do I change the retry policy over time?", "neutral"),  # both kinds: as before
        ("what do I put in setup.cfg to turn the cache off?", "usage"),
        ("what should the config file contain for a second mirror?", "usage"),
        ("which flag do I need for a dry run?", "usage"),
        ("my password has an @ in it and the URL no longer parses; how am I supposed to write it?", "usage"),
        ("the hook never runs after checkout, what am I doing wrong", "usage"),
        ("what is the difference between the read timeout and the pool timeout?", "usage"),
        ("I want the log to rotate daily but keep a week of files. How?", "usage"),
        ("what command do I run to vendor the dependencies?", "usage"),
        ("what must my DSN look like when the password has a colon?", "usage"),
        ("the proxy URL has a secure scheme and the handshake fails; is that supported at all?", "usage"),
        ("the hook never runs after checkout", "neutral"),
        ("which commits changed how the pool timeout is counted?", "history"),
        ("who added the --jobs option, and why?", "history"),
        ("what broke the colour output on Windows terminals?", "history"),
        ("how did the plugin API move between the two major versions?", "history"),
        ("was there ever a YAML config loader?", "history"),
        ("where are the html command line options documented?", "usage"),
        ("where is the documentation for the json report?", "usage"),
        ("where are the docs about plugins?", "usage"),
        ("which page documents the concurrency option?", "usage"),
        ("which commit documented the --jobs option?", "history"),
        ("where was the retry option documented first?", "history"),
    ],
)
def test_intent_of_a_question(text: str, asks: str) -> None:
    assert intent(text) == asks


def test_thesaurus_brings_the_mechanism_for_a_symptom_and_nothing_for_other_words() -> None:
    assert "deadlock" in thesaurus.grouped(["worker", "hangs"])
    assert "panic" in thesaurus.grouped(["crashed"])
    assert "respect" in thesaurus.grouped(["ignores"])
    assert thesaurus.grouped(["parser", "unicode"]) == [w for w in thesaurus.grouped(["unicode"])]
    assert thesaurus.grouped(["parser", "paths"]) == []
    assert len(thesaurus.grouped(["hangs", "crashes", "slow", "leaks", "ignored", "twice"])) <= (
        thesaurus.MAX_EXPANSIONS
    )


@pytest.fixture
def retries(repo: Path) -> Path:
    """A doc section that explains how to configure retries, and the commits that added and changed them."""
    commit(repo, "Add the project skeleton", {"README.md": "# uploader\n"}, when=NOW - 900 * DAY)
    commit(
        repo,
        "Add a retries option to the upload client",
        {"client.py": "RETRIES = 3\n"},
        when=NOW - 800 * DAY,
    )
    commit(
        repo,
        "docs: usage guide",
        {
            "docs/usage.md": "# Usage\n\n## Retries\n\nSet `retries` in the client config to retry a failed"
            " upload; 0 turns retrying off. Each retry waits twice as long as the one before.\n"
        },
        when=NOW - 700 * DAY,
    )
    commit(
        repo,
        "Raise the default of the retries option to 5",
        {"client.py": "RETRIES = 5\n"},
        when=NOW - 600 * DAY,
    )
    run_cli("-C", str(repo), "sync", "--no-embed")
    return repo


def test_a_usage_question_finds_the_doc_section_and_a_history_question_the_commit(retries: Path) -> None:
    usage = query_json(retries, "how do I configure retries for the upload client")
    assert usage["items"][0]["kind"] == "doc_section", [it["title"] for it in usage["items"]]
    history = query_json(retries, "when was the retries option added to the upload client")
    top = history["items"][0]
    assert top["kind"] != "doc_section" and "Add a retries option" in top["title"], top["title"]


@pytest.mark.parametrize(
    "text",
    [
        "the retries in the upload client; what am I doing wrong",
        "retries in the upload client: is that supported at all?",
    ],
)
def test_more_ways_of_asking_how_to_use_something_find_the_doc_section(retries: Path, text: str) -> None:
    """Neither question says "how do I": each is asked the way people ask what they got wrong, and the
    guide answers both. Read as neither kind of question, the commit that added the option came first."""
    found = query_json(retries, text)
    assert found["items"][0]["kind"] == "doc_section", [it["title"] for it in found["items"]]


@pytest.mark.parametrize(
    "text",
    [
        "where is retrying a failed upload documented?",
        "where are the docs about retries in the upload client?",
        "which page documents the retries of a failed upload?",
    ],
)
def test_a_question_that_asks_where_something_is_documented_finds_the_doc_section(
    retries: Path, text: str
) -> None:
    """It asks for the page, as a how-to question does; read as neither kind, the commits that added and
    changed the option came first (a question that speaks of docs leaves a docs-only change its weight)."""
    found = query_json(retries, text)
    assert found["items"][0]["kind"] == "doc_section", [it["title"] for it in found["items"]]


@pytest.mark.parametrize(
    ("text", "matter"),
    [
        ("what's the command to get thor onto my machine?", "install"),
        ("What command do I run to add chi to my Go module?", "install"),
        ("How do I add this library to my Go project?", "install"),
        ("how do I install widget on Windows?", "install"),
        ("can I bundle it into a closed-source commercial tool, and under what terms?", "license"),
        ("what licence is this released under?", "license"),
        ("what's the oldest Go release I can still use testify with?", "versions"),
        ("which Python versions does it support?", "versions"),
        ("I'd like to help out; is there a guide for contributors?", "contributing"),
        ("I cloned the repo; how do I install it for hacking?", "contributing"),
        ("how do I privately report a security hole I found?", "security"),
        ("how do I uninstall it completely?", "uninstall"),
        # not one of these matters: a failure while installing, a feature to get, a name, a warning's words
        ("pip install yarl from the sdist inside a Docker image blows up with UnicodeDecodeError", None),
        ("On OS X without the command line tools, pip install MarkupSafe aborts with a traceback", None),
        ("how do I get tab completion working in zsh?", None),
        ("the contributors list in the about box is out of date", None),
        ("every call prints a DeprecationWarning about security vulnerabilities with shell: true", None),
        ("put the file on the server and the upload fails", None),
        # a configuration section named in brackets, asked how to use
        ("where is the [paths] setting documented?", "[paths]"),
        ("how do I configure the `[tool.poetry]` table?", "[tool.poetry]"),
        # an index, an extra, an attribute, an array of tables, a version; a failure that names a section
        ("how do I decode into map[string]interface{} with nested lists?", None),
        ("how do I install it with pip install 'myproj[dev]'?", "install"),
        ("how do I use #[from] on a struct field?", None),
        ("how do I write [[fruit]] tables?", None),
        ("what changed in [0.15.1]?", None),
        ("I set theme under [output.html] in book.toml and the build fails", None),
    ],
)
def test_the_practical_matter_a_question_asks_about(text: str, matter: str | None) -> None:
    found = topic(text)
    assert (found.name if found else None) == matter


@pytest.fixture
def readme(repo: Path) -> Path:
    """A README with the usual sections, and commits that say the project's name more often than it does."""
    commit(
        repo,
        "Add the widget runner",
        {"widget.rb": "class Widget; end\n"},
        when=NOW - 900 * DAY,
    )
    commit(
        repo,
        "README",
        {
            "README.md": "# widget\n\nA small task runner.\n\n## Installation\n\n    gem install widget\n\n"
            "## Usage\n\nWrite a Widgetfile and run `widget list` to see its tasks.\n\n"
            "## License\n\nReleased under the MIT License.\n"
        },
        when=NOW - 800 * DAY,
    )
    for n, subject in enumerate(
        [
            "widget runner was not loading widget tasks from the machine's home folder",
            "fix widget command handling on a machine without a Widgetfile",
            "widget: ship the default tasks with the gem",
        ]
    ):
        commit(
            repo, subject, {"widget.rb": f"class Widget; VERSION = {n}; end\n"}, when=NOW - (700 - n) * DAY
        )
    run_cli("-C", str(repo), "sync", "--no-embed")
    return repo


@pytest.mark.parametrize(
    ("text", "section"),
    [
        ("what's the command to get widget onto my machine?", "Installation"),
        ("can I ship widget inside a closed-source product, and under what terms?", "License"),
    ],
)
def test_a_question_about_a_practical_matter_finds_the_section_that_heads_it(
    readme: Path, text: str, section: str
) -> None:
    """Neither question shares a word with its section but the project's name, which every commit says too:
    before, commits came first."""
    titles = titles_for(readme, text)
    assert titles[0].endswith(section), titles


def test_the_filler_of_a_failure_report_does_not_pick_the_change(repo: Path) -> None:
    """ "Goes completely silent", "what's the problem": each of those words is held by one unrelated commit,
    and BM25 gave them their full weight; the fix shares only "sunday" with the question."""
    commits = [
        ("Add the scheduler", "scheduler.py", "def due(job): return True\n"),
        ("Add the nightly importer", "importer.py", "def run(): pass\n"),
        (
            "importer: report problems completely and retry what goes wrong",
            "importer.py",
            "def run(): retry()\n",
        ),
        (
            "scheduler: jobs due on a sunday were skipped",
            "scheduler.py",
            "def due(job): return job.weekday < 7\n",
        ),
        ("Log the nightly run's start and end", "importer.py", "def run(): log()\n"),
    ]
    for age, (subject, path, text) in zip(range(900, 0, -100), commits, strict=False):
        commit(repo, subject, {path: text}, when=NOW - age * DAY)
    titles, _ = synced_answer(
        repo, "my nightly job fails every sunday: it goes completely silent, no error; what's the problem?"
    )
    assert titles[0] == "scheduler: jobs due on a sunday were skipped", titles


def test_a_failure_that_names_code_gives_the_vectors_more_say_than_a_question_about_code() -> None:
    """Its code names are what the user saw; the rest is an account of the symptom, which is prose."""
    code = prepare("which change made parse_headers join folded lines?")
    failure = prepare("parse_headers fails with KeyError when a header line is folded")
    assert failure.failure and failure.names_code and code.names_code and not code.failure
    full = rank.DEFAULT.vector_weight
    assert 0 < query.vector_weight(code, rank.DEFAULT) < query.vector_weight(failure, rank.DEFAULT) < full


def test_a_version_number_in_the_question_finds_the_change_that_names_that_number(repo: Path) -> None:
    """ "Which version dropped support for Python 3.9?": the index holds 3.9 as the words 3 and 9, which the
    question's words leave out (single characters), so "drop support for Python 3.7" matched as well as the
    change that says 3.9, and came first. The number is asked as the phrase of its parts."""
    tidy_modules(repo)
    commit(
        repo,
        "build: drop support for Python 3.9",
        {"setup.py": "PY = '3.10'\n", "tox.ini": "envlist = py310\n"},
        when=NOW - 300 * DAY,
    )
    commit(repo, "build: drop support for Python 3.8", {"setup.py": "PY = '3.9'\n"}, when=NOW - 400 * DAY)
    commit(
        repo,
        "build: drop support for Python 3.7",
        {"setup.py": "PY = '3.8'\n"},
        when=NOW - 100 * DAY,
    )
    run_cli("-C", str(repo), "sync", "--no-embed")
    titles = titles_for(repo, "which version dropped support for Python 3.9?")
    assert titles[0] == "build: drop support for Python 3.9", titles
    assert query.number_phrases(prepare("does it run on Python 3.9 and TLS 1.3?")) == '"3 9" OR "1 3"'
    assert query.number_phrases(prepare("what changed in 7.4.1?")) is None  # the release rules answer it


def test_an_option_the_question_writes_finds_the_change_that_names_it_whole(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ "`mdconv --no-html notes.md` still lets <script> through": the index holds `--no-html` as the words
    "no" and "html", and "html" is in every other change of a Markdown converter; the name is asked as the
    phrase of its words, which only the change that made the option work holds."""
    areas = [
        "tables",
        "lists",
        "links",
        "images",
        "headings",
        "footnotes",
        "quotes",
        "code",
        "emphasis",
        "rules",
    ]
    for n, area in enumerate(areas * 3):
        extra = ("notes", "script tags", "a flag")[n % 3]
        subject = f"html: render {area} with {extra}" if n % 2 else f"Tidy the {area} html output for {extra}"
        commit(repo, subject, {f"{area}.py": f"N = {n}\n"}, when=NOW - (900 - 20 * n) * DAY)
    commit(
        repo, "Make --no-html have an effect in the CLI", {"cli.py": "HTML = False\n"}, when=NOW - 500 * DAY
    )
    run_cli("-C", str(repo), "sync", "--no-embed")
    question = (
        "`mdconv --no-html notes.md` still lets <script> and <div> through untouched. Is the flag ignored?"
    )
    assert titles_for(repo, question)[0] == "Make --no-html have an effect in the CLI"
    monkeypatch.setattr(query, "NAME_PHRASES_WEIGHT", 0.0)
    assert titles_for(repo, question)[0] != "Make --no-html have an effect in the CLI"
    assert query.name_phrases(prepare("why does `--no-html` ignore max_retries and Foo?")) == (
        '"no html" OR "max retries"'
    )
    assert query.name_phrases(prepare("is the flag ignored?")) is None


def test_a_commit_that_says_it_fixes_something_counts_more(repo: Path) -> None:
    code = "def trim(entries, limit):\n    return entries[:limit]  # {}\n"
    commit(repo, "Rework cache eviction for large keys", {"cache.py": code.format(1)}, when=NOW - 50 * DAY)
    commit(repo, "Fix cache eviction for large keys", {"cache.py": code.format(2)}, when=NOW - 40 * DAY)
    run_cli("-C", str(repo), "sync", "--no-embed")
    proj = project.load(repo)
    with proj.open_store(readonly=True) as store:
        scored, _ = query.ranked_candidates(store, "cache eviction large keys", vectors=False)
    score = {node.title: value for node, value in scored if node.kind == "git_commit"}
    fixed, reworked = (
        score["Fix cache eviction for large keys"],
        score["Rework cache eviction for large keys"],
    )
    assert fixed > 1.1 * reworked


def test_a_fix_of_a_typo_or_a_linter_complaint_does_not_count_as_a_fix(repo: Path) -> None:
    """ "Fix typo in the cache eviction docstring" changed no behaviour: it is not lifted as a fix, while a
    typo that broke something still is."""
    titles = [
        "Rework cache eviction for large keys",
        "Fix typo in cache eviction for large keys",
        "Fix ruff complaints in cache eviction for large keys",
        "Fix typo that broke cache eviction for large keys",
    ]
    for n, title in enumerate(titles):
        commit(
            repo,
            title,
            {"cache.py": f"def trim(entries, limit):\n    return entries[:limit]  # {n}\n"},
            when=NOW - (50 - n) * DAY,
        )
    run_cli("-C", str(repo), "sync", "--no-embed")
    with project.load(repo).open_store(readonly=True) as store:
        scored, _ = query.ranked_candidates(store, "cache eviction large keys", vectors=False)
    score = {node.title: value for node, value in scored if node.kind == "git_commit"}
    reworked = score[titles[0]]
    assert score[titles[1]] < 1.1 * reworked
    assert score[titles[2]] < 1.1 * reworked
    assert score[titles[3]] > 1.1 * reworked


def test_the_change_comes_before_the_merge_that_brought_it_in(repo: Path) -> None:
    """A merge holds no change of its own, and its short message (the branch name) can match the question
    better than the change it merged: the change is shown first, the merge still listed."""
    commit(repo, "Add tail", {"tail.py": "def follow(stream): ...\n"}, when=NOW - 300 * DAY)
    git(repo, "checkout", "-q", "-b", "fix-hang-on-empty-input")
    fix = "tail: stop waiting for more lines when the input is empty and closed, instead of a hang"
    commit(
        repo, fix, {"tail.py": "def follow(stream):\n    if stream.closed: return\n"}, when=NOW - 200 * DAY
    )
    git(repo, "checkout", "-q", "-")
    commit(repo, "Add the README", {"README.md": "# tail\n"}, when=NOW - 190 * DAY)
    stamp = f"{NOW - 180 * DAY} +0000"
    env = {"GIT_AUTHOR_DATE": stamp, "GIT_COMMITTER_DATE": stamp}
    git(
        repo,
        "merge",
        "-q",
        "--no-ff",
        "-m",
        "Merge branch 'fix-hang-on-empty-input'",
        "fix-hang-on-empty-input",
        env=env,
    )
    titles, _ = synced_answer(repo, "why did tail hang on empty input?")
    assert titles.index(fix) < titles.index("Merge branch 'fix-hang-on-empty-input'"), titles


_CHANGELOG_HEAD = "# Changelog\n\n## 2.10.1\n\n"
_FIXED_ENTRY = "* Fixed a crash when an argument is a path object.\n"


def _fix_that_wrote_its_entry(repo: Path) -> str:
    """A plugin, a changelog, and a fix that adds its own entry (_FIXED_ENTRY) to it; the fix's subject."""
    commit(repo, "Add the plugin", {"plugin.py": "def load(args): ...\n"}, when=NOW - 300 * DAY)
    commit(repo, "docs: start a changelog", {"CHANGELOG.md": _CHANGELOG_HEAD}, when=NOW - 290 * DAY)
    fix = "plugin: str() each arg"
    commit(
        repo,
        fix,
        {
            "plugin.py": "def load(args): [str(a) for a in args]\n",
            "CHANGELOG.md": _CHANGELOG_HEAD + _FIXED_ENTRY,
        },
        when=NOW - 200 * DAY,
    )
    return fix


def test_a_changelog_entry_lifts_the_change_that_added_it_not_a_bookkeeping_commit(repo: Path) -> None:
    """An entry with no number is linked to the commit that added it. A fix that wrote its own entry is the
    change the entry describes and comes just above it; "Update changelog.", which changed the changelog
    alone, is bookkeeping and stays where its own score put it."""
    notes, fixed, fix = _CHANGELOG_HEAD, _FIXED_ENTRY, _fix_that_wrote_its_entry(repo)
    logged = "* Fixed the LocalPath has no attribute startswith failure in inline mode.\n"
    commit(repo, "Update changelog.", {"CHANGELOG.md": notes + fixed + logged}, when=NOW - 199 * DAY)
    run_cli("-C", str(repo), "sync", "--no-embed")
    with project.load(repo).open_store(readonly=True) as store:
        found, _ = query.ranked_candidates(
            store, "crash path object LocalPath startswith changelog", vectors=False
        )
        by_title = {node.title: node for node, _ in found}
        entries = [by_title[f"CHANGELOG.md — 2.10.1: {line[2:].strip()}"] for line in (logged, fixed)]
        changes = [by_title["Update changelog."], by_title[fix]]
        scored = [(entries[0], 1.0), (entries[1], 0.9), (changes[0], 0.1), (changes[1], 0.05)]
        lifted = {node.title: value for node, value in history.commits_before_entries(store, scored)}
    assert lifted[fix] > 0.9  # just above the entry it wrote
    assert lifted["Update changelog."] == 0.1


def test_an_entry_below_its_own_commit_gives_way_to_the_next_change(repo: Path) -> None:
    """Once the fix is lifted above the entry it wrote, the entry says the same change again in other
    words: the next distinct change that matches nearly as well comes before it."""
    fixed, fix = _FIXED_ENTRY, _fix_that_wrote_its_entry(repo)
    other = "config: accept a path object for the cache folder"
    commit(repo, other, {"config.py": "CACHE = None\n"}, when=NOW - 100 * DAY)
    run_cli("-C", str(repo), "sync", "--no-embed")
    with project.load(repo).open_store(readonly=True) as store:
        found, _ = query.ranked_candidates(store, "crash path object argument cache", vectors=False)
        by_title = {node.title: node for node, _ in found}
        entry = by_title[f"CHANGELOG.md — 2.10.1: {fixed[2:].strip()}"]
        scored = [(entry, 1.0), (by_title[other], 0.9), (by_title[fix], 0.05)]
        ranked = [node.title for node, _ in history.commits_before_entries(store, scored)]
    assert ranked == [fix, other, entry.title]


def test_a_symptom_question_reaches_the_commit_that_names_the_mechanism(repo: Path) -> None:
    commit(repo, "Add the worker", {"worker.py": "def run(): ...\n"}, when=NOW - 300 * DAY)
    commit(repo, "docs: explain stopping the worker", {"STOP.md": "send SIGTERM\n"}, when=NOW - 200 * DAY)
    commit(
        repo,
        "worker: avoid a deadlock on the queue lock while stopping",
        {"worker.py": "def run(): ...\ndef stop(): ...\n"},
        when=NOW - 100 * DAY,
    )
    commit(repo, "Rename the queue module", {"queue2.py": "Q = 1\n"}, when=NOW - 50 * DAY)
    run_cli("-C", str(repo), "sync", "--no-embed")
    found = query_json(repo, "my worker hangs forever when stopping")
    titles = [it["title"] for it in found["items"]]
    assert "worker: avoid a deadlock" in titles[0], titles


def test_a_question_word_brings_the_word_commits_of_any_project_use_for_it(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Users say "folder", commits say "directory": the learned kin (thesaurus.learned) bring one to the
    other; without them, the search's order (the learned last step off) puts the shortest message that holds
    "cache" first. (The step's choice among four changes that say "cache" alike is its own: tests/test_rerank.py.)"""
    commit(repo, "Add the cache module", {"cache.py": "C = {}\n"}, when=NOW - 400 * DAY)
    commit(repo, "Cache the parsed manifest", {"cache.py": "C = {}\nM = 1\n"}, when=NOW - 300 * DAY)
    commit(
        repo, "Make the cache directory on first use", {"cache.py": "C = {}\nD = 2\n"}, when=NOW - 200 * DAY
    )
    commit(repo, "Limit the cache size", {"cache.py": "C = {}\nL = 3\n"}, when=NOW - 100 * DAY)
    run_cli("-C", str(repo), "sync", "--no-embed")
    question = "my cache folder is missing"
    assert "directory" in thesaurus.expand(search.terms(question))
    assert "directory" not in thesaurus.grouped(search.terms(question))

    def first(step: bool = True) -> str:
        settings = rank.DEFAULT if step else replace(rank.DEFAULT, rerank=False)
        with project.load(repo).open_store(readonly=True) as store:
            found, _ = query.ranked_candidates(store, question, vectors=False, settings=settings)
        return found[0][0].title

    assert first() == first(step=False) == "Make the cache directory on first use"
    monkeypatch.setattr(thesaurus, "learned_kin", dict)
    assert first(step=False) != "Make the cache directory on first use"


def test_learned_kin_never_bring_a_word_every_recorded_command_holds() -> None:
    """ "echo" brings "exit" (learned from commit messages), and every recorded command's text says "exit" and
    "cwd": such a kin would match every command in memory, so none is asked."""
    from nexusmem.sources.shell.node import _title, body_head

    known = search.terms(_title("make lint", 0) + " " + body_head("make lint", "/srv/app", 0))
    unknown = search.terms(_title("make lint", None) + " " + body_head("make lint", None, None))
    assert set(known) >= {"cwd", "exit"} and set(unknown) >= thesaurus.RECORDED_WORDS
    assert "exit" in dict(
        pair.split(":") for pair in thesaurus.learned_kin()["echo"].split()
    )  # learned, and left out:
    assert "exit" not in thesaurus.learned(["echo"], set())
    assert "exit" not in thesaurus.expand(["ran", "echo"])


def doc_paths(repo: Path, question: str) -> list[str]:
    """The paths of the doc sections `query --json` answers QUESTION with, in their order."""
    found = query_json(repo, question)
    return [it["title"].split(" — ")[0] for it in found["items"] if it["kind"] == "doc_section"]


def test_the_current_majors_docs_come_before_the_same_page_for_an_older_one(repo: Path) -> None:
    """The docs keep a folder per major version and the older page says the same in more of the question's
    words; a user asks about the release in use, so the newest version's page comes first. A folder named
    by a year is not a version."""
    old = "# Escaping\n\n## Escaping output\n\nCall escape() on output; escape output before you print output.\n"
    new = "# Escaping\n\n## Escaping output\n\nOutput is escaped for you; pass raw=True to print output unescaped.\n"
    news = "# News\n\n## Escaping output\n\nWe wrote about escaping output and escape() output helpers.\n"
    commit(
        repo,
        "docs",
        {"docs/1.x/escaping.md": old, "docs/2.x/escaping.md": new, "docs/news/2019/escaping.md": news},
        when=NOW - 10 * DAY,
    )
    run_cli("-C", str(repo), "sync", "--no-embed")
    paths = doc_paths(repo, "how do I escape output")
    assert paths.index("docs/2.x/escaping.md") < paths.index("docs/1.x/escaping.md"), paths


def test_the_released_docs_come_before_the_same_page_for_the_release_not_yet_made(repo: Path) -> None:
    """docs/unstable holds the next release's copy of the page and says more of the question's words; a
    user asks about the release in use (docs/4.x), unless the question names the unreleased folder. A
    website's next/ comes after its latest/ in the same way."""
    page = (
        "# Tags\n\n## Tagged services\n\nCall addTag() on a definition, then get the tag to receive every tagged"
        " service as a list. Tags may be chained; see definitions for naming rules.\n"
    )
    unstable = (
        "# Tags\n\n## Tagged services\n\nCall addTag() on a definition, then get the tag to receive all tagged"
        " services as a list of services.\n"
    )
    commit(
        repo,
        "docs",
        {
            "docs/4.x/tags.md": page,
            "docs/unstable/tags.md": unstable,
            "website/latest/docs/tags.md": "# Tagging\n\n## Tags\n\nA tag groups services; ask for the tag to get"
            " every tagged one as a list. Chained tags are allowed.\n",
            "website/next/docs/tags.md": "# Tagging\n\n## Tags\n\nA tag groups services; ask for the tag to get all"
            " tagged services as a list of services.\n",
        },
        when=NOW - 10 * DAY,
    )
    run_cli("-C", str(repo), "sync", "--no-embed")

    paths = doc_paths(repo, "how do I get all tagged services as a list")
    assert paths.index("docs/4.x/tags.md") < paths.index("docs/unstable/tags.md"), paths
    assert paths.index("website/latest/docs/tags.md") < paths.index("website/next/docs/tags.md"), paths
    paths = doc_paths(repo, "in unstable, how do I get all tagged services as a list")
    assert paths.index("docs/unstable/tags.md") < paths.index("docs/4.x/tags.md"), paths


def test_an_english_question_gets_the_english_page_before_its_translations(repo: Path) -> None:
    """The site keeps each page in English and in Japanese; the translation keeps the commands and names, so
    it holds more of an English question's words than the original does. Asked in English, the English page
    comes first (under en/, or where the language folder would be); asked in Japanese, nothing is reordered."""
    english = "# Deploy\n\n## Netlify\n\nRun the build and upload the dist folder to your Netlify site.\n"
    japanese = (
        "# デプロイ\n\n## Netlify\n\n`vitepress build` を実行し、dist を Netlify にアップロードします。"
        " Netlify: build → dist → deploy。\n"
    )
    commit(
        repo,
        "docs",
        {
            "docs/en/deploy.md": english,
            "docs/ja/deploy.md": japanese,
            "website/guide/deploy.md": "# Hosting\n\n## Netlify\n\nPoint Netlify at the repository; it runs the build.\n",
            "website/ja/guide/deploy.md": "# ホスティング\n\n## Netlify\n\nNetlify で build を実行: build, dist, deploy。\n",
        },
        when=NOW - 10 * DAY,
    )
    run_cli("-C", str(repo), "sync", "--no-embed")

    paths = doc_paths(repo, "how do I deploy the build to netlify")
    assert paths.index("docs/en/deploy.md") < paths.index("docs/ja/deploy.md"), paths
    assert paths.index("website/guide/deploy.md") < paths.index("website/ja/guide/deploy.md"), paths
    paths = doc_paths(repo, "Netlify に build を deploy するには")
    assert paths.index("website/ja/guide/deploy.md") < paths.index("website/guide/deploy.md"), paths


def test_a_word_many_changes_hold_still_finds_the_guide_that_says_it_in_another_form(repo: Path) -> None:
    """ "plugin" is in several commit titles as written; the guide says only "plugins". Every word held by
    less than half the nodes is looked up by its stem too, so the guide is among the word matches (it was
    not found at all when only words fewer than three nodes held were stemmed)."""
    tidy_modules(repo, ["parser", "hashing", "logging", "cli", "manifest", "packaging", "tests", "lint"])
    for n, title in enumerate(["Load each plugin lazily", "Sort the plugin list", "Log the plugin name"]):
        commit(repo, title, {f"t{n}.py": f"T = {n}\n"}, when=NOW - (500 - n) * DAY)
    guide = (
        "# Guide\n\n## Extending\n\nDrop your plugins into ~/.scanner/ext; the scanner loads them at start."
        "\n\n## Output\n\nResults are printed as a table, one line per file.\n"
    )
    commit(repo, "docs: the guide", {"docs/guide.md": guide}, when=NOW - 300 * DAY)
    run_cli("-C", str(repo), "sync", "--no-embed")
    with project.load(repo).open_store(readonly=True) as store:
        ids, _ = search.bm25(store, "how do I add another plugin?")
        refs = [node.ref for node in store.get_many(ids).values()]
    assert "docs/guide.md#Extending" in refs, refs
    assert "docs/guide.md#Output" not in refs, refs


def test_a_question_about_how_something_changed_is_answered_by_the_changes_not_the_guide(repo: Path) -> None:
    """The guide says how retries work now; "how have X changed over the years?" asks for the changes. Doc
    sections count less for a question about what happened (changelog entries keep their score); a
    how-do-I question about the same thing still gets the guide."""
    tidy_modules(repo, ["parser", "hashing", "logging", "cli", "manifest", "packaging", "tests", "lint"])
    guide = (
        "# Guide\n\n## Upload retries\n\nAn upload that fails with a 503 is retried three times, waiting"
        " longer each time. Set `retries` to change how many.\n\n## Output\n\nOne line per file.\n"
    )
    commit(repo, "docs: the guide", {"docs/guide.md": guide}, when=NOW - 800 * DAY)
    message = "Retry an upload on a 503\n\nThe retries now cover a 503 too."
    commit(repo, message, {"up.py": "RETRY = (503,)\n"}, when=NOW - 600 * DAY)
    commit(
        repo, "Back off longer between retries", {"up.py": "RETRY = (503,)\nWAIT = 2\n"}, when=NOW - 400 * DAY
    )
    run_cli("-C", str(repo), "sync", "--no-embed")
    titles = titles_for(repo, "how have upload retries changed over the years?")
    assert titles[0] == "Retry an upload on a 503", titles
    usage = titles_for(repo, "how do I change how many times a failed upload is retried?")
    assert usage[0] == "docs/guide.md — Upload retries", usage


def test_a_usage_question_lifts_the_guide_not_the_changelog_entry(repo: Path) -> None:
    """A changelog entry records what changed in a release; how to use the program is in the docs. Both
    match the question's words here, the entry more of them."""
    tidy_modules(repo, ["parser", "hashing", "logging", "cli", "manifest", "packaging", "tests", "lint"])
    commit(repo, "Add the upload client", {"client.py": "WAIT = 30\n"}, when=NOW - 400 * DAY)
    commit(
        repo,
        "docs: the upload guide",
        {
            "docs/guide.md": "# Guide\n\n## Waiting longer\n\nThe upload client gives up after 30 seconds. Set"
            " `timeout` in the config to wait longer for a slow server.\n"
        },
        when=NOW - 300 * DAY,
    )
    commit(
        repo,
        "Release 1.2.0",
        {
            "CHANGELOG.md": "# Changelog\n\n## 1.2.0\n\n- Upload client: set the timeout of the upload client"
            " (it was fixed at 30 seconds).\n- Faster hashing of large files.\n"
        },
        when=NOW - 200 * DAY,
    )
    run_cli("-C", str(repo), "sync", "--no-embed")
    found = query_json(repo, "how do I set the timeout of the upload client")
    titles = [it["title"] for it in found["items"]]
    assert titles[0].startswith("docs/guide.md — Waiting longer"), titles


def test_a_usage_question_lifts_the_how_to_page_not_the_blog_post_that_announced_the_feature(
    repo: Path,
) -> None:
    """The project's blog announced the feature in more of the question's words than the how-to page uses; a
    question about how to use it is answered by the page. Jekyll's _posts/ and a blog/posts/ folder are
    posts too."""
    howto = (
        "# Lockfiles\n\n## Checking in CI\n\nRun `tool lock --check` in your pipeline: it exits 1 when the"
        " lockfile is out of date.\n"
    )
    post = (
        "# Release 1.17\n\n## CI verification\n\nNew in 1.17: make your CI fail when someone changes the"
        " dependencies and forgets to regenerate the lockfile; see the lockfile page.\n"
    )
    commit(
        repo,
        "docs",
        {
            "docs/how-to/lockfiles.md": howto,
            "docs/blog/release-1-17.md": post,
            "site/_posts/2024-05-01-release.md": post.replace("1.17", "1.16"),
            "site/blog/posts/ci.md": post.replace("1.17", "1.15"),
        },
        when=NOW - 10 * DAY,
    )
    run_cli("-C", str(repo), "sync", "--no-embed")
    paths = doc_paths(
        repo, "how do I make CI fail when someone changes the dependencies and forgets the lockfile"
    )
    assert paths[0] == "docs/how-to/lockfiles.md", paths
    assert rank.is_post("doc_section", "site/_posts/2024-05-01-release.md — CI verification")
    assert not rank.is_post("doc_section", "docs/guide/posts.md — Writing posts")


@pytest.mark.parametrize(
    ("text", "name"),
    [
        ("which change added the editDistance helper?", "editDistance"),
        ("when was the get_gitignore function added?", "get_gitignore"),
        ("when was the _lifeCycleHooks property added?", "_lifeCycleHooks"),
        ("where does `wrap_stream` come from?", "`wrap_stream`"),
        ("which commit introduced res.jsonp", "res.jsonp"),
        ("when did FileField start calling seek", None),  # a later change, not where it began
        ("when were stripColor and displayWidth added?", "stripColor"),  # added together: the first
        ("how do parse_args and readConfig meet?", None),  # two names, no origin verb
        (
            "Which change introduced timeSliceIndexSym, so that write() reads t.slice(this[timeSliceIndexSym])?",
            "timeSliceIndexSym",  # the other names say what it does
        ),
        ("When was InvalidSigningExecutable added to twine.exceptions?", "InvalidSigningExecutable"),
        ("which commit first added an argparse action called EnvDefault to utils.py?", "EnvDefault"),
        ("when was _colorama.is_a_tty replaced by should_colorize?", None),  # a replacement, not an origin
        ("where did kyOptionKeys and the KyOptionsRegistry type come from?", "kyOptionKeys"),
        ("when was requestOptionsRegistry (typed with RequestInitRegistry) added?", "requestOptionsRegistry"),
        ("when was the retry option added?", None),  # no code name: the words decide
        ("how do I use editDistance in my own code?", None),
        ("who wrote macos_dark_mode_active and what decides the theme?", "macos_dark_mode_active"),
        ("where did the TMonitor class come from?", "TMonitor"),  # an acronym before the word
        ("where did the envwrap decorator come from?", "envwrap"),  # named by what it is
        ("when was the render method added?", "render"),
        # A word that says which one or what kind is no name: the question names none.
        ("The associated function that walks every constant was renamed. Which commits introduced it?", None),
        ("where does the hint for an undefined method in a factory come from?", None),
        ("when was the same function added to the main module?", None),
    ],
)
def test_a_question_about_where_a_name_came_from(text: str, name: str | None) -> None:
    assert origin_name(text) == name


@pytest.mark.parametrize(
    ("text", "name"),
    [
        ("when did fd start depending on humantime?", "humantime"),
        ("when did we start using the argmax crate?", "argmax"),
        ("when did it start using the normpath crate's PathExt?", "PathExt"),  # the one code name
        ("when did koa start using its own isStream helper?", "isStream"),
        ("where did we start using max(chunk_size, 1) in the loop", None),  # an expression, not a name
        ("when did the parser start failing on empty files?", None),
    ],
)
def test_a_question_about_when_a_dependency_came_in(text: str, name: str | None) -> None:
    assert adopted_name(text) == name


@pytest.mark.parametrize(
    ("text", "name"),
    [
        ("what is _querycache used for in the request object?", "_querycache"),
        ("what is the @expanded_enum_traits flag for?", "expanded_enum_traits"),
        ("what does shouldHideOptionExtras control in the help output?", "shouldHideOptionExtras"),
        ("why is there a MinusError type in the output code?", "MinusError"),
        ("why does pipx have a _get_trash_file helper?", "_get_trash_file"),
        ("what is the envwrap decorator for?", "envwrap"),
        ("why is there a TMonitor class?", "TMonitor"),
        ("what is the point of `wrap_stream`?", "`wrap_stream`"),
        ("what is editDistance?", None),  # what it is now: the words decide
        ("what does the timeout option do?", None),  # no code name
        ("what do stripColor and displayWidth do together?", None),  # two names
        ("why does get_config crash on an empty file?", None),  # a symptom, not a purpose
        ("what is the TypedSum struct in stats.rs for?", "TypedSum"),  # the other name says where it lives
        ("what is GetStdoutQuiet in gyp's xcode_emulation.py for?", "GetStdoutQuiet"),
        ("what is the little skip! macro inside count_files for?", None),  # its name is no code name here
        ("what was wrong with `hex_color *= 2` for three-digit values in parse_color?", None),  # no purpose
    ],
)
def test_a_question_about_what_a_name_is_for(text: str, name: str | None) -> None:
    assert purpose_name(text) == name


def test_what_a_name_is_for_is_answered_by_the_change_that_brought_it_in(repo: Path) -> None:
    """ "What is X for?" is answered by the change that defined X (its message says why), not by the later
    changes that use it more often; and an older change that had only a look-alike (`implicit_names`, which
    the word index reads as the same two words) is not taken for it."""
    tidy_modules(repo)
    lookalike = "def varnames(func):\n    implicit_names = ('self',)\n    return implicit_names\n"
    commit(repo, "Handle bound methods in varnames", {"hooks.py": lookalike}, when=NOW - 800 * DAY)
    defined = "_IMPLICIT_NAMES = ('self', 'obj')\n\n\ndef varnames(func):\n    return _IMPLICIT_NAMES\n"
    commit(repo, "Simplify varnames to use the code object", {"hooks.py": defined}, when=NOW - 400 * DAY)
    for days in (300, 200, 100):
        use = (
            defined
            + f"\n\ndef strip_{days}(args):\n    return [a for a in args if a not in _IMPLICIT_NAMES]\n"
        )
        commit(
            repo, f"Strip _IMPLICIT_NAMES from hook args ({days})", {"hooks.py": use}, when=NOW - days * DAY
        )
    titles, notes = synced_answer(repo, "what is the _IMPLICIT_NAMES tuple used for?")
    assert titles[0].endswith("Simplify varnames to use the code object"), titles
    assert any(n.startswith("first change that holds _IMPLICIT_NAMES: ") for n in notes), notes


def test_what_a_name_the_docs_define_is_for_is_answered_by_the_doc_section(repo: Path) -> None:
    """ "What is COVERAGE_PROCESS_START for?" of a name the docs define: the section that says what it does
    comes first, as for "what does COVERAGE_PROCESS_START do?", and the note still names the change that
    brought it in. The change came first, and the section after the later changes that use the name."""
    tidy_modules(repo)
    start = "import os\n\nrc = os.environ.get('COVERAGE_PROCESS_START')\n"
    commit(repo, "A way to start measuring when Python starts", {"process.py": start}, when=NOW - 800 * DAY)
    for days in (700, 600):
        commit(
            repo,
            f"COVERAGE_PROCESS_START names the rc file ({days})",
            {"process.py": start + f"RC_{days} = rc\n"},
            when=NOW - days * DAY,
        )
    commit(
        repo,
        "docs: sub-processes",
        {
            "docs/subprocess.md": "# Sub-processes\n\n## Manual coordination\n\nSet COVERAGE_PROCESS_START to"
            " the path of the rc file, and every Python process started measures itself. When"
            " COVERAGE_PROCESS_START is not set, nothing is measured.\n"
        },
        when=NOW - 500 * DAY,
    )
    titles, notes = synced_answer(repo, "what is COVERAGE_PROCESS_START for?")
    assert titles[0] == "docs/subprocess.md — Manual coordination", titles
    assert any(n.startswith("first change that holds COVERAGE_PROCESS_START: ") for n in notes), notes


def test_a_name_nothing_holds_whole_has_no_first_change_and_is_a_weak_answer(repo: Path) -> None:
    """ "What does the cobertura_version setting do?" of a name no change ever wrote: the change that says
    "Cobertura version" holds its two words, not the name, and was named its first holder (and the answer not
    weak). Nothing holds it, so nothing is its first, and the answer says so and is weak; so is a made-up
    option beside a real one. A name memory holds is answered as before."""
    tidy_modules(repo)
    commit(
        repo,
        "Write the Cobertura version in the XML report header",
        {"xmlreport.py": "HEADER = 'Cobertura version 2'\n"},
        when=NOW - 700 * DAY,
    )
    commit(
        repo,
        "Add the xml_package_depth setting",
        {"xmlreport.py": "HEADER = 'Cobertura version 2'\nxml_package_depth = 99\n"},
        when=NOW - 600 * DAY,
    )
    commit(repo, "Cap the connections", {"pool.py": "SIZE_LIMIT = 10\n"}, when=NOW - 550 * DAY)
    commit(
        repo,
        "docs: the report settings",
        {
            "docs/config.md": "# Settings\n\n## [report] precision\n\nDigits after the point in the report's"
            " percentages.\n\n## --parallel-mode\n\nWrite one data file per process, for the report.\n"
        },
        when=NOW - 500 * DAY,
    )
    _titles, notes = synced_answer(repo, "what does the [report] cobertura_version setting do?")
    assert not any(n.startswith("first change that holds") for n in notes), notes
    assert "nothing in memory holds cobertura_version" in notes, notes
    assert query_json(repo, "what does the [report] cobertura_version setting do?")["weak"] is True
    made_up = query_json(repo, "what does the --parallel-workers flag do?")
    assert made_up["weak"] is True and "nothing in memory holds --parallel-workers" in made_up["notes"], (
        made_up
    )
    real = query_json(repo, "what does the xml_package_depth setting do?")
    assert real["weak"] is False and any(
        n.startswith("first change that holds xml_package_depth: ") for n in real["notes"]
    ), real["notes"]
    option = query_json(repo, "what does the --parallel-mode flag do?")
    assert not any(n.startswith("nothing in memory") for n in option["notes"]), option["notes"]
    # A member is often written whole nowhere (`SIZE_LIMIT = 10` in pool.py): it is not said to be unheld.
    member = query_json(repo, "what is pool.SIZE_LIMIT for?")
    assert not any(n.startswith("nothing in memory") for n in member["notes"]), member["notes"]


def test_a_name_held_as_the_family_it_heads_is_held(repo: Path) -> None:
    """ "Which version added try_get methods for the Buf trait?" (tokio-rs/bytes) answered "No strong match"
    and "note: nothing in memory holds try_get" right above the changelog entry "`try_get_*` methods for
    `Buf` trait (#753)" and the commit that wrote `fn try_get_u8` and `fn try_get_u16`: a name written as
    the family it heads is held, and the answer is no weak one. A name nothing holds in any form is still."""
    for n, area in enumerate(["parser", "hashing", "logging", "cli", "manifest", "packaging"]):
        commit(
            repo,
            f"Tidy the {area} module",
            {f"src/{area}.rs": f"const N: u8 = {n};\n"},
            when=NOW - (900 - n) * DAY,
        )
    commit(
        repo,
        "Add the Buf trait",
        {"src/buf.rs": "pub trait Buf {\n    fn get_u8(&mut self) -> u8;\n}\n"},
        when=NOW - 800 * DAY,
    )
    methods = "".join(
        f"    fn try_get_{t}(&mut self) -> Result<{t}, TryGetError> {{\n        Ok(self.get_{t}())\n    }}\n"
        for t in ("u8", "u16", "u32")
    )
    commit(
        repo,
        "Try get methods for Buf trait (#753)",
        {"src/buf.rs": "pub trait Buf {\n    fn get_u8(&mut self) -> u8;\n" + methods + "}\n"},
        when=NOW - 300 * DAY,
    )
    commit(
        repo,
        "chore: prepare bytes v1.10.0 (#766)",
        {
            "CHANGELOG.md": "# 1.10.0 (February 3rd, 2025)\n\n### Added\n- `try_get_*` methods for `Buf` trait"
            " (#753)\n\n# 1.9.0 (November 27, 2024)\n\n### Added\n- Add `Bytes::from_owner` (#742)\n"
        },
        when=NOW - 290 * DAY,
    )
    run_cli("-C", str(repo), "sync", "--no-embed")
    found = query_json(repo, "Which bytes version added try_get methods for the Buf trait?")
    assert not any(n.startswith("nothing in memory holds") for n in found["notes"]), found["notes"]
    assert found["weak"] is False, found
    titles = [it["title"] for it in found["items"]]
    assert "Try get methods for Buf trait (#753)" in titles[:3], titles
    made_up = query_json(repo, "Which bytes version added try_peek methods for the Buf trait?")
    assert "nothing in memory holds try_peek" in made_up["notes"] and made_up["weak"] is True, made_up


@pytest.mark.parametrize(
    "question", ["what did I try before the fix", "what did I try before fixing the easter test"]
)
def test_what_was_tried_before_the_fix_starts_at_the_failure_it_fixed(repo: Path, question: str) -> None:
    """A failing `pytest -q tests/test_easter.py`, two edits, a re-run that fails again and another test,
    then the fix commit and a passing run: "what did I try before the fix" listed the three commands before
    `git commit -am 'Fix …'`, nearest first (the failure itself left out), and "… before fixing the easter
    test" what came before the re-run that failed again (the first failure, then the work before it). Both list
    what was run from the failure the fix fixed up to the fix, oldest first, the fix last."""
    commit(
        repo,
        "Add the easter module",
        {
            "src/easter.py": "def easter(year):\n    return year % 19\n",
            "tests/test_easter.py": "import easter\n",
        },
        when=NOW - 30 * DAY,
    )
    start = (NOW - 2 * 3600) * 1000
    minute = 60_000
    test = "pytest -q tests/test_easter.py"
    tried = [
        (start + 2 * minute, "sed -i 's/year % 19/(year % 19) + 1/' src/easter.py", 0),
        (start + 3 * minute, test, 1),
        (start + 5 * minute, "sed -i 's/+ 1/- 1/' src/easter.py", 0),
        (start + 6 * minute, "pytest -q tests/test_dates.py", 0),
    ]
    fixed = "git commit -am 'Fix easter date for Julian years'"
    write_commands(
        repo,
        [
            (start - 20 * minute, "vim src/parser.py", 0),
            (start - 10 * minute, "pytest -q tests/test_parser.py", 0),
            (start, test, 1),
            *tried,
            (start + 8 * minute, fixed, 0),
            (start + 9 * minute, test, 0),
        ],
    )
    commit(
        repo,
        "Fix easter date for Julian years",
        {"src/easter.py": "def easter(year):\n    return (year % 19) - 1\n"},
        when=(start + 8 * minute) // 1000,
    )
    run_cli("-C", str(repo), "sync", "--no-embed")
    found = query_json(repo, question)
    items = [(it["ref"], it["ts"]) for it in found["items"]]
    listed = [(test, timefmt.iso(start)), *((command, timefmt.iso(ts)) for ts, command, _ in tried)]
    assert items[: len(listed)] == listed, items
    assert found["items"][len(listed)]["title"] == "Fix easter date for Julian years", items
    assert (test, timefmt.iso(start + 9 * minute)) in items[len(listed) + 1 : len(listed) + 3], items
    assert found["notes"][0].startswith(f"first: what was run from `{test}` (exit 1, "), found["notes"]
    assert found["weak"] is False


def synced_answer(repo: Path, question: str) -> tuple[list[str], list[str]]:
    """Sync REPO (no vectors), then the titles and notes `query --json` gives for QUESTION."""
    run_cli("-C", str(repo), "sync", "--no-embed")
    found = query_json(repo, question)
    return [it["title"] for it in found["items"]], list(found["notes"])


def titles_for(repo: Path, question: str) -> list[str]:
    return [it["title"] for it in query_json(repo, question)["items"]]


@pytest.mark.parametrize("later", [600, 0], ids=["days-apart", "same-second"])
def test_when_was_a_name_added_finds_the_change_that_brought_it_in(repo: Path, later: int) -> None:
    """Later changes that touch a name hold it as often as the one that brought it in (their diffs more):
    "when was X added" is answered by the first, as `git log -S X --reverse` would, also when both were
    committed in the same second (a script, a rebased series): the one the other descends from."""
    tidy_modules(repo)
    compositor = "".join(f"int layer_{n}_depth = {n};\n" for n in range(30)) + "int qz_blit_stride = 64;\n"
    commit(repo, "Tune the compositor", {"blit.c": compositor}, when=NOW - 700 * DAY)
    checks = {"check.c": "assert(qz_blit_stride % 16 == 0);\nassert(qz_blit_stride > 0);\n"}
    commit(repo, "Added alignment checks to the blitter", checks, when=NOW - 700 * DAY + later * DAY)
    titles, notes = synced_answer(repo, "when was qz_blit_stride added?")
    assert titles[0].endswith("Tune the compositor"), titles
    assert any(n.startswith("first change that holds qz_blit_stride: ") for n in notes), notes
    # Asked about what it is now, the words decide: the change that checks it leads.
    check = query_json(repo, "alignment checks on qz_blit_stride")
    assert "alignment checks" in check["items"][0]["title"], [it["title"] for it in check["items"]]


def test_the_change_the_first_holder_note_names_is_listed_beside_the_later_fix(repo: Path) -> None:
    """`query "when was guessOffsetForZone added"` (luxon, with vectors) says "first change that holds
    guessOffsetForZone: cafc4ee159" with 20139a3 "Fix broken caching in guessOffsetForZone" (2025) first:
    the later change whose title names the identifier wins on the vectors and the title. Putting the
    named commit first regardless cost real-repository questions (docs/evaluation.md); the commit the note
    names is listed among the first two."""
    commit(repo, "chore: start", {"src/datetime.js": "export class DateTime {}\n"}, when=NOW - 800 * DAY)
    guess = (
        "const cache = new Map();\nfunction guessOffsetForZone(zone) {\n"
        "  if (!cache.has(zone)) cache.set(zone, zone.offset(Date.now()));\n  return cache.get(zone);\n}\n"
    )
    first = commit(
        repo,
        "Perf: Cache ts offset guesses for quickDT (#1579)",
        {"src/datetime.js": guess + "export class DateTime {}\n"},
        when=NOW - 400 * DAY,
    )
    fixed = guess.replace("cache.has(zone)", "cache.has(zone.name)")
    commit(
        repo,
        "Fix broken caching in guessOffsetForZone",
        {"src/datetime.js": fixed + "export class DateTime {}\n"},
        when=NOW - 30 * DAY,
    )
    run_cli("-C", str(repo), "sync")  # with the builtin vectors: without them the first holder led already
    found = query_json(repo, "when was guessOffsetForZone added")
    assert f"first change that holds guessOffsetForZone: {first[:10]}" in found["notes"], found["notes"]
    assert first in [it["ref"] for it in found["items"][:2]], [it["title"] for it in found["items"]]


@pytest.mark.parametrize("syncs", ["one-sync", "a-sync-between"])
def test_a_rebased_branch_with_older_dates_is_not_taken_for_where_a_name_began(
    repo: Path, syncs: str
) -> None:
    """A branch written long ago and rebased onto today's history keeps its old author dates: its change
    that uses a name looks older than the change that brought the name in, which is its ancestor. The
    first holder is the first in the history (`git log -S X --reverse`), not the oldest author date."""
    tidy_modules(repo)
    commit(
        repo,
        "Throttle the uploader",
        {"upload.py": "qz_throttle_window = 5\n\n\ndef send(chunk):\n    return chunk\n"},
        when=NOW - 300 * DAY,
    )
    if syncs == "a-sync-between":
        run_cli("-C", str(repo), "sync", "--no-embed")
    (repo / "batch.py").write_text(
        "from upload import qz_throttle_window\n\nBATCH = qz_throttle_window * 2\n"
    )
    git(repo, "add", "-A")
    old, new = NOW - 700 * DAY, NOW - 10 * DAY  # written 700 days ago, rebased and committed 10 days ago
    env = {"GIT_AUTHOR_DATE": f"{old} +0000", "GIT_COMMITTER_DATE": f"{new} +0000"}
    git(repo, "commit", "-q", "-m", "Batch the uploads", env=env)
    titles, notes = synced_answer(repo, "where did qz_throttle_window come from?")
    assert titles[0].endswith("Throttle the uploader"), titles
    assert any(n.startswith("first change that holds qz_throttle_window: ") for n in notes), notes


@pytest.mark.parametrize(
    ("text", "then"),
    [
        ("my push was rejected just now, what did I do next", "after"),
        ("the database container would not start yesterday, what did I do about it", "after"),
        ("what did I try before running the migration upgrade again", "before"),
        ("what was the last thing I ran before pushing the export branch again", "before"),
        ("what did I try last on the partial refund test", None),
        ("what fixed the refund tests that were failing yesterday", None),
        ("what did I do yesterday", None),
        ("what did I do after cargo refused to build the crate", "after"),
        ("once CI went red, what did I look at first", "after"),
        ("what did I run just before starting git bisect", "before"),
        ("what was the last docker build I ran for the api image", None),
        ("which CI command did I run just before checking the formatting", "before"),
        ("when redis refused the connection, what was the first thing I checked", "after"),
        ("what came right before make lint went green again", "before"),
        ("as soon as the session suite broke, what did I run next?", "after"),
        ("what did I run the day before yesterday", None),  # a time, not what came before "yesterday"
        ("what did I do before yesterday's deploy", "before"),
    ],
)
def test_a_question_about_what_was_run_next(text: str, then: str | None) -> None:
    assert sequence(text) == then


# Shell sessions as "minutes-ago exit-code command" lines.
# A rejected push, the rebase that followed, the push that went through.
REJECTED_PUSH = """
50 1 git push origin feature/export-csv
45 0 git pull --rebase origin feature/export-csv
30 0 git rebase --continue
25 0 git push origin feature/export-csv
"""
# A build that failed two days ago, what fixed it, and a later build that passed.
REFUSED_BUILD = """
3000 101 cargo build --release -p fastdiff
2940 0 rustup update stable
2880 0 cargo build --release -p fastdiff
2820 0 git commit -am 'declare rust-version'
120 0 cargo build --release -p fastdiff
60 0 cargo bench -p fastdiff
"""
# Two failed builds a few hours apart, and what was tried in between.
TWO_FAILED_BUILDS = """
540 1 go build ./cmd/ingest
480 0 go env GOPROXY GONOSUMDB GOFLAGS
420 0 go clean -modcache
360 1 go build ./cmd/ingest
300 0 go get github.com/segmentio/kafka-go@v0.4.48
240 0 go build ./cmd/ingest
"""


@pytest.fixture
def pushes(repo: Path) -> Path:
    """Months of everyday `git push origin main` (the shorter, better word match), then today: a rejected
    push of the feature branch, the rebase that followed, the push that went through."""
    commit(repo, "Add the export module", {"export.py": "ROWS = 1\n"}, when=NOW - 400 * DAY)
    now_ms = NOW * 1000
    old = [(now_ms - (300 - day) * DAY * 1000, "git push origin main", day % 3) for day in range(250)]
    old += [(now_ms - (300 - day) * DAY * 1000 + 60_000, "make lint", 0) for day in range(250)]
    write_commands(repo, old)
    write_recent(repo, REJECTED_PUSH, now=NOW)
    run_cli("-C", str(repo), "sync", "--no-embed")
    return repo


def test_what_was_done_after_a_recent_failure(pushes: Path) -> None:
    """The rejected push is found among hundreds of older pushes (the time cue keeps recent candidates),
    and the command run right after it answers."""
    found = query_json(pushes, "my push was rejected just now, what did I do next")
    titles = [it["title"] for it in found["items"]]
    assert titles[0].startswith("git pull --rebase origin feature/export-csv"), titles
    # No node holds "rejected", yet the answer is found: it is not flagged "no strong match".
    assert found["weak"] is False
    # The answer says what it followed from.
    assert any(
        n.startswith("first: what was run after `git push origin feature/export-csv` (exit 1,")
        for n in found["notes"]
    ), found["notes"]


def test_an_answered_question_is_not_weak_across_projects_either(pushes: Path) -> None:
    """`--all-projects` judges each project's answer as `query` does: the commands run after the rejected
    push answer the question, though most of its words ("zuul", "gerrit", "quota") are in no node, so it
    is not flagged "no strong match"."""
    text = "my push was rejected by the zuul gerrit quota just now, what did I do next"
    with project.load(pushes).open_store(readonly=True) as store:
        found = query.retrieve(store, text)
    assert query.strength(found).weak and found.answered_by is not None  # what the question is about
    for extra in ((), ("--all-projects",)):
        answer = query_json(pushes, text, *extra)
        assert answer["items"][0]["title"].startswith("git pull --rebase origin feature/export-csv"), extra
        assert answer["weak"] is False, extra


def test_what_was_run_before_doing_something_again(pushes: Path) -> None:
    titles = titles_for(pushes, "what was the last thing I ran before pushing the export branch again")
    assert titles[0].startswith("git rebase --continue"), titles


# Two commits of the same afternoon, and what was run between them.
TWO_COMMITS = """
600 0 git add notes.txt
580 0 git commit -qm 'add notes'
300 0 echo b >> a.txt
250 2 ls missing.txt
200 3 python3 -c 'raise SystemExit(3)'
100 0 git commit -qam second
"""


@pytest.mark.parametrize(
    "question", ["what did I run before my last commit", "what did I run before the last commit"]
)
def test_what_was_run_before_the_last_commit(repo: Path, question: str) -> None:
    """ "Last commit" was taken out of the question whole as a time phrase ("before my" was left, and
    nothing matched); the commit it names is the anchor, and the latest one."""
    commit(repo, "Add the sources", {"README.md": "# tools\n"}, when=NOW - 100 * DAY)
    write_recent(repo, TWO_COMMITS, now=NOW)
    run_cli("-C", str(repo), "sync", "--no-embed")
    found = query_json(repo, question)
    assert any(n.startswith("first: what was run before `git commit -qam second`") for n in found["notes"]), (
        found
    )
    assert found["items"][0]["title"] == "python3 -c 'raise SystemExit(3)' (exit 3)", found["items"][:2]


def test_what_was_run_after_a_command_that_old_history_outranks(repo: Path) -> None:
    """ "My push was rejected, what did I do after that?" (no time cue): forty old commits about HTTP/2 push
    filled the first results, the rejected push was not among the first ten, and the answer was those
    commits, not flagged weak. A command the question quotes whole is the anchor, not a longer one sharing
    its words."""
    for n in range(40):
        commit(
            repo,
            f"Drop push promises the client rejected, case {n}",
            {f"push{n}.py": f"P = {n}\n"},
            when=NOW - 400 * DAY,
        )
    write_recent(
        repo,
        """
        90 1 pytest -q
        80 0 git diff --stat
        70 1 pytest tests/test_cli.py -q -x
        60 0 python -m pip install python-dotenv
        50 1 git push upstream feature
        45 0 git fetch upstream
        40 0 git rebase upstream/main
        30 0 git push upstream feature
        """.replace("\n        ", "\n"),
        now=NOW,
    )
    run_cli("-C", str(repo), "sync", "--no-embed")
    found = query_json(repo, "my push was rejected, what did I do after that?")
    assert [it["title"] for it in found["items"][:2]] == [
        "git fetch upstream (exit 0)",
        "git rebase upstream/main (exit 0)",
    ]
    assert any(n.startswith("first: what was run after `git push upstream feature`") for n in found["notes"])
    quoted = query_json(repo, "after pytest -q failed, what did I do next?")
    assert any(n.startswith("first: what was run after `pytest -q`") for n in quoted["notes"]), quoted[
        "notes"
    ]
    assert quoted["items"][0]["title"] == "git diff --stat (exit 0)"


def test_the_anchor_of_what_was_run_next_follows_the_commands_run_next(repo: Path) -> None:
    """ "What did I run right after the sendfile tests failed?" put the three commands run next first, as
    README says, but the failed run they followed ("the anchor follows") sat far below, under old commits
    that share its words: it now comes right after them."""
    for n in range(30):
        subject = f"Fix the sendfile tests that failed on a range request, case {n}"
        commit(repo, subject, {f"test/test_sendfile_{n}.py": f"N = {n}\n"}, when=NOW - (900 - n) * DAY)
    write_recent(
        repo,
        """
        90 0 python3 -m pytest -q test/test_router.py
        60 1 python3 -m pytest -q test/test_sendfile.py
        58 0 git diff --stat
        55 1 python3 -m pytest -q test/test_sendfile.py -k range
        50 0 vim bottle.py
        """.replace("\n        ", "\n"),
        now=NOW,
    )
    run_cli("-C", str(repo), "sync", "--no-embed")
    found = query_json(repo, "what did I run right after the sendfile tests failed?")
    assert [it["title"] for it in found["items"][:4]] == [
        "git diff --stat (exit 0)",
        "python3 -m pytest -q test/test_sendfile.py -k range (exit 1)",
        "vim bottle.py (exit 0)",
        "python3 -m pytest -q test/test_sendfile.py (exit 1)",
    ], found["items"][:6]
    assert any(
        n.startswith("first: what was run after `python3 -m pytest -q test/test_sendfile.py`")
        for n in found["notes"]
    )


# A morning's work: one failure long ago, then today's failures among commands that passed.
TODAYS_FAILURES = """
4320 1 pytest tests/test_old_flake.py
5 131 pytest tests/test_quit_with_ctrl_backslash.py
4 0 git status
3 2 ls missing.txt
2 0 make build
1 3 python3 -c 'raise SystemExit(3)'
"""


def test_what_failed_today_lists_the_failed_commands_newest_first(repo: Path) -> None:
    """ "What failed today" found nothing (no node holds the word "failed": a failure is an exit code), and
    "which commands failed" put a command that passed first."""
    if SINCE_MIDNIGHT < 600:
        pytest.skip("the day has just begun: today's commands may be yesterday's")
    commit(repo, "Add the sources", {"README.md": "# tools\n"}, when=NOW - 100 * DAY)
    write_recent(repo, TODAYS_FAILURES, now=NOW)
    run_cli("-C", str(repo), "sync", "--no-embed")
    for question in ("what failed today", "which commands failed", "what broke", "what failed last week"):
        found = query_json(repo, question)
        titles = [it["title"] for it in found["items"]]
        assert titles[:2] == ["python3 -c 'raise SystemExit(3)' (exit 3)", "ls missing.txt (exit 2)"], titles
        assert found["weak"] is False and any(
            n.startswith("first: the commands that failed") for n in found["notes"]
        )
    today = [it["title"] for it in query_json(repo, "what failed today")["items"]]
    assert "pytest tests/test_old_flake.py (exit 1)" not in today  # three days ago
    assert not [t for t in today if "(exit 131)" in t]  # stopped with Ctrl-\\: no failure
    week = [it["title"] for it in query_json(repo, "what failed last week")["items"]]
    assert "pytest tests/test_old_flake.py (exit 1)" in week
    hour = [it["title"] for it in query_json(repo, "what failed in the last hour")["items"]]
    assert "pytest tests/test_old_flake.py (exit 1)" not in hour and hour[0].startswith("python3 -c")
    commit(repo, "Retry the upload when it failed", {"upload.py": "RETRIES = 3\n"}, when=NOW - 90 * DAY)
    run_cli("-C", str(repo), "sync", "--no-embed")
    none = query_json(repo, "what failed yesterday")
    assert any("no recorded command failed yesterday" in n for n in none["notes"])
    assert none["weak"] is True  # it asked for failures and there were none: said as a weak answer
    # The answer is the failures: nothing else the words matched ("fail" in an old commit) fills the budget.
    listed = query_json(repo, "what failed last week")["items"]
    assert all(it["kind"] == "shell_command" and "(exit 0)" not in it["title"] for it in listed), listed


def test_the_footer_of_a_failure_listing_counts_what_it_can_show(repo: Path) -> None:
    """ "What failed today" said "42 of 45 match(es) shown": the three it could never show (runs of pytest
    that found no test, exit 5, and old commits that say "failed", which its words matched) were counted.
    A listing that is the whole answer counts what it lists."""
    if SINCE_MIDNIGHT < 600:
        pytest.skip("the day has just begun: today's commands may be yesterday's")
    commit(repo, "Fix the upload that failed today", {"upload.py": "RETRIES = 3\n"}, when=NOW - 90 * DAY)
    commit(repo, "Retry what failed", {"retry.py": "R = 1\n"}, when=NOW - 80 * DAY)
    write_recent(
        repo,
        "9 5 pytest -k nomatch -q\n8 5 pytest -k failed -q\n3 2 ls missing.txt\n1 1 make test\n",
        now=NOW,
    )
    run_cli("-C", str(repo), "sync", "--no-embed")
    found = query_json(repo, "what failed today")
    titles = [it["title"] for it in found["items"]]
    assert titles == ["make test (exit 1)", "ls missing.txt (exit 2)"], titles
    assert found["matched"] == len(found["items"]), (found["matched"], titles)
    text = run_cli("-C", str(repo), "query", "--", "what failed today").stdout
    assert "2 of 2 match(es) shown" in text, text


# Minutes ago in a JavaScript project: the test runs that failed, among commands that passed and one other
# failure; a year of commits whose messages say "tests" and "fail".
FAILED_TEST_RUNS = """
9000 0 npm test
12 0 git status
10 127 npm test -- test/datetime/create.test.js
8 0 node -e 'require("./src/luxon.js")'
6 1 node --test test/datetime/create.test.js 2>&1 | tail -3
5 1 node --test test/datetime/create.test.js > /dev/null 2>&1
3 1 echo run1; false
"""


def test_a_failure_of_what_was_run_lists_its_failed_runs_first(repo: Path) -> None:
    """ "What failed last time I ran the tests", "which tests failed", "did the tests fail", "npm test failed"
    answered with old commits ("fix tests for node 12") and none of the test runs that had failed minutes
    before: "tests" counted as a subject, so the failure listing gave way to the words; "what failed last
    time" matched the docs on time zones ("time" was left of the cue "failed last")."""
    for days, subject in ((900, "fix tests for node 12"), (700, "make failing tests fail the build")):
        commit(repo, subject, {"test/node.test.js": f"// {subject}\n"}, when=NOW - days * DAY)
    readme = "# luxon\n\n## Time zones\n\nWhat time it is, the last time you looked.\n"
    commit(repo, "docs: time zones", {"README.md": readme}, when=NOW - 400 * DAY)
    write_recent(repo, FAILED_TEST_RUNS, now=NOW)
    run_cli("-C", str(repo), "sync", "--no-embed")
    runs = [
        "node --test test/datetime/create.test.js > /dev/null 2>&1 (exit 1)",
        "node --test test/datetime/create.test.js 2>&1 | tail -3 (exit 1)",
        "npm test -- test/datetime/create.test.js (exit 127)",
    ]
    for question in (
        "what failed last time I ran the tests",
        "which tests failed",
        "did the tests fail",
        "the tests keep failing",
    ):
        found = query_json(repo, question)
        titles = [it["title"] for it in found["items"]]
        assert titles[:3] == runs, (question, titles)
        assert "echo run1; false (exit 1)" not in titles, (question, titles)  # a failure, not of the tests
        assert "fix tests for node 12" in titles[3:], (question, titles)  # what the words matched follows
        assert found["weak"] is False and any(
            n.startswith("first: the failed runs of tests") for n in found["notes"]
        )
    npm = [it["title"] for it in query_json(repo, "npm test failed")["items"]]
    assert npm[0] == runs[2] and not npm[1].startswith("node --test"), npm  # the runs of `npm test` only
    last = [it["title"] for it in query_json(repo, "what failed last time")["items"]]
    assert last[:4] == ["echo run1; false (exit 1)", *runs], last
    # A question about code that names the tests besides is not a question about the runs.
    code = query_json(repo, "why does the node test fail on windows")
    assert not any(n.startswith("first: the failed runs") for n in code["notes"]), code["notes"]
    # "The build" names the builds: a `make` that failed yesterday at noon, not the one of last week.
    noon = (SINCE_MIDNIGHT + DAY // 2) // 60
    write_recent(repo, f"{noon + 5 * 1440} 2 make -j4\n{noon} 2 make -j4\n{noon - 60} 0 make -j4\n", now=NOW)
    run_cli("-C", str(repo), "sync", "--no-embed")
    build = [it["title"] for it in query_json(repo, "why did the build fail yesterday")["items"]]
    assert build[0] == "make -j4 (exit 2)" and build.count("make -j4 (exit 2)") == 1, build


def test_a_run_behind_what_only_launches_it_is_a_run_of_its_program(repo: Path) -> None:
    """ "terraform plan failed" did not list `sudo -u deploy terraform plan` that failed minutes before, nor
    "make docs failed" `nice -n 10 make docs`: their program was read as `-u`, `-n` (the launcher's
    option) or `time -p`'s `-p`, so the question named none of them (sources.shell.launchers)."""
    commit(
        repo, "Add the infrastructure", {"main.tf": "# infra\n", "Makefile": "docs:\n"}, when=NOW - 400 * DAY
    )
    write_recent(
        repo,
        "40 1 sudo -u deploy terraform plan\n30 2 nice -n 10 make docs\n20 101 time -p cargo build\n"
        "10 1 doas -u www npm run lint\n5 0 git status\n",
        now=NOW,
    )
    run_cli("-C", str(repo), "sync", "--no-embed")
    for question, run in (
        ("terraform plan failed", "sudo -u deploy terraform plan (exit 1)"),
        ("why did make docs fail", "nice -n 10 make docs (exit 2)"),
        ("cargo build failed", "time -p cargo build (exit 101)"),
        ("npm run lint failed", "doas -u www npm run lint (exit 1)"),
    ):
        found = query_json(repo, question)
        assert found["items"][0]["title"] == run, (question, found["items"])
        assert any(n.startswith("first: the failed runs of") for n in found["notes"]), (
            question,
            found["notes"],
        )


def test_a_run_in_a_folder_a_leading_cd_moves_to_is_a_run_of_its_program(repo: Path) -> None:
    """ "why did make fail" left out `( cd sub && make )` and `cd sub && make` (exit 2): the launcher reader
    took `cd` for their program; so `(cd sub && make)`, its bracket attached to the `cd`."""
    commit(repo, "Add the build", {"Makefile": "all:\n", "sub/Makefile": "all:\n"}, when=NOW - 400 * DAY)
    write_recent(
        repo,
        "50 2 make -j4\n45 2 (cd sub && make)\n40 2 ( cd sub && make )\n30 2 cd sub && make\n20 1 pytest -x\n"
        "5 0 git status\n",
        now=NOW,
    )
    run_cli("-C", str(repo), "sync", "--no-embed")
    found = query_json(repo, "why did make fail")
    titles = [it["title"] for it in found["items"][:4]]
    want = ["cd sub && make (exit 2)", "( cd sub && make ) (exit 2)", "(cd sub && make) (exit 2)"]
    assert titles == [*want, "make -j4 (exit 2)"], found
    assert any(n.startswith("first: the failed runs of") for n in found["notes"]), found["notes"]


def test_what_failed_lists_every_failure_the_budget_lets_through_and_says_what_it_left_out(
    repo: Path,
) -> None:
    """The walkthrough: "what failed today" with 31 failures listed 20 (FAILURES_LISTED) and said "31 of 31
    match(es) shown" with ~1240 of 2000 tokens used. Every failure of the window is listed while the budget
    lets it through, the footer counts them all; past FAILURES_LISTED a note says how many are left."""
    commit(repo, "Add the sources", {"README.md": "# tools\n"}, when=NOW - 100 * DAY)
    write_recent(repo, "".join(f"{59 - n // 3} 1 ./check_{n:03d}.sh\n" for n in range(31)), now=NOW)
    run_cli("-C", str(repo), "sync", "--no-embed")
    found = query_json(repo, "what failed in the last hour", "--budget", "20000")
    titles = [it["title"] for it in found["items"]]
    assert sorted(titles) == [f"./check_{n:03d}.sh (exit 1)" for n in range(31)], titles
    assert found["matched"] == 31 and not any("not shown" in n for n in found["notes"]), found["notes"]
    narrow = query_json(repo, "what failed in the last hour")
    assert (narrow["matched"] == 31 and len(narrow["items"]) < 31) or len(narrow["items"]) == 31, narrow
    write_recent(
        repo, "".join(f"{50 - n // 10} 2 ./more_{n:03d}.sh\n" for n in range(FAILURES_LISTED)), now=NOW
    )
    run_cli("-C", str(repo), "sync", "--no-embed")
    many = query_json(repo, "what failed in the last hour", "--budget", "100000")
    assert len(many["items"]) == FAILURES_LISTED, len(many["items"])
    note = "first: the commands that failed in the last hour, newest first; and 31 earlier failures not shown"
    assert any(n.startswith(note) for n in many["notes"]), many["notes"]


def test_a_zsh_or_fish_time_with_an_option_is_no_run_of_its_command(repo: Path) -> None:
    """The walkthrough: zsh's `time -p pytest -k cart` ("command not found: -p", 127) and fish's (2) ran no
    pytest, yet "which tests failed" listed them; bash's `time -p` is an option, its failure pytest's."""
    commit(repo, "Add the shop", {"cart.py": "ITEMS = []\n"}, when=NOW - 400 * DAY)
    at = NOW * 1000 - 30 * 60_000
    write_commands(repo, [(at, "time -p pytest -k cart", 127)], shell="zsh")
    write_commands(repo, [(at + 60_000, "time -p pytest -k cart -x", 2)], shell="fish")
    write_commands(repo, [(at - 60_000, "time -p pytest -k cart -q", 1)])
    run_cli("-C", str(repo), "sync", "--no-embed")
    for question in ("which tests failed", "why did pytest fail"):
        found = query_json(repo, question)
        listed = [it["title"] for it in found["items"] if it["title"].startswith("time -p")]
        assert listed[:1] == ["time -p pytest -k cart -q (exit 1)"], (question, found["items"])
        assert any(n.startswith("first: the failed runs of") for n in found["notes"]), found["notes"]
        first = found["items"][0]["title"]
        assert first == "time -p pytest -k cart -q (exit 1)", (question, found["items"])


def test_pytests_exit_5_is_no_failed_test_as_precheck_reads_it(repo: Path) -> None:
    """The walkthrough: "which tests failed" and "why did pytest fail" listed `pytest -k nomatch` (exit 5: no
    tests collected) first, which precheck skips: no test failed there."""
    commit(repo, "Add the shop", {"cart.py": "ITEMS = []\n"}, when=NOW - 400 * DAY)
    write_recent(
        repo,
        "40 1 pytest tests/test_cart.py\n30 5 pytest -k nomatch\n20 5 timeout 60 python -m pytest -k none\n"
        "10 5 make lint\n",
        now=NOW,
    )
    run_cli("-C", str(repo), "sync", "--no-embed")
    for question in ("which tests failed", "why did pytest fail"):
        titles = [it["title"] for it in query_json(repo, question)["items"]]
        assert titles[0] == "pytest tests/test_cart.py (exit 1)", (question, titles)  # the one failed run
    titles = [it["title"] for it in query_json(repo, "what failed in the last hour")["items"]]
    assert titles == ["make lint (exit 5)", "pytest tests/test_cart.py (exit 1)"], titles


def test_a_failure_asked_about_at_a_time_when_nothing_matching_ran_is_a_weak_answer(repo: Path) -> None:
    """ "What did I do when the docker build failed yesterday", with no build yesterday, was answered with
    the passing `docker compose up` runs of other weeks as a strong answer."""
    commit(repo, "Add the compose file", {"compose.yaml": "services: {}\n"}, when=NOW - 100 * DAY)
    write_recent(
        repo, "14400 0 docker compose up -d\n12960 0 docker compose up -d\n", now=NOW
    )  # 10 and 9 days ago
    run_cli("-C", str(repo), "sync", "--no-embed")
    question = "what did I do when the docker build failed yesterday"
    found = query_json(repo, question)
    assert found["weak"] is True, found
    assert any("nothing recorded yesterday matches the question" in n for n in found["notes"]), found["notes"]
    assert found["items"], "the closest items are still shown below the line"
    # When the build did fail yesterday, that run is the answer, and a strong one.
    write_recent(repo, "1440 1 docker build -t api .\n", now=NOW)
    run_cli("-C", str(repo), "sync", "--no-embed")
    found = query_json(repo, question)
    assert found["items"][0]["title"] == "docker build -t api . (exit 1)", found["items"]
    assert found["weak"] is False and not any("nothing recorded" in n for n in found["notes"])


def test_a_guide_answering_a_failure_reported_yesterday_is_not_a_weak_answer(repo: Path) -> None:
    """A guide is timeless: the README's section on the error answers "docker build failed yesterday with
    no space left on device, how do I fix it?" whenever it was written (the rule above had called it weak)."""
    readme = "# tools\n\n## docker build fails with no space left on device\n\nRun docker system prune.\n"
    commit(repo, "docs: disk space", {"README.md": readme}, when=NOW - 90 * DAY)
    write_recent(repo, "14400 0 docker compose up -d\n", now=NOW)
    run_cli("-C", str(repo), "sync", "--no-embed")
    for question in (
        "docker build failed yesterday with no space left on device, how do I fix it?",
        "docker build failed yesterday with no space left on device",
    ):
        guide = query_json(repo, question)
        assert guide["items"][0]["kind"] == "doc_section" and guide["weak"] is False, guide


def test_what_failed_the_day_before_yesterday_is_not_what_failed_yesterday(repo: Path) -> None:
    """ "The day before yesterday" was read as "yesterday": its failures were left out, yesterday's listed."""
    commit(repo, "Add the sources", {"README.md": "# tools\n"}, when=NOW - 100 * DAY)
    write_recent(repo, "2880 1 make lint\n1440 2 make test\n", now=NOW)
    run_cli("-C", str(repo), "sync", "--no-embed")
    titles = [it["title"] for it in query_json(repo, "what failed the day before yesterday")["items"]]
    assert titles[:1] == ["make lint (exit 1)"] and "make test (exit 2)" not in titles, titles


def test_what_was_run_the_day_before_yesterday_lists_that_days_commands(repo: Path) -> None:
    """ "What did I run the day before yesterday" answered nothing: its "before" was read as asking what was
    run before something named "yesterday" (what "just before starting git bisect" asks)."""
    if SINCE_MIDNIGHT < 1800:
        pytest.skip("the day has just begun: the commands of two days ago may be of three")
    commit(repo, "Add the sources", {"README.md": "# tools\n"}, when=NOW - 100 * DAY)
    write_recent(repo, "2900 0 cargo fmt\n2880 1 cargo clippy\n1440 0 cargo doc\n10 0 cargo build\n", now=NOW)
    run_cli("-C", str(repo), "sync", "--no-embed")
    for question in ("what did I run the day before yesterday", "what did I do the day before yesterday"):
        found = query_json(repo, question)
        titles = [it["title"] for it in found["items"]]
        assert titles == ["cargo clippy (exit 1)", "cargo fmt (exit 0)"], (question, titles)
        assert "first: the newest commands run the day before yesterday" in found["notes"], found["notes"]


def test_recent_work_asked_with_nothing_named_lists_the_newest_commits(repo: Path) -> None:
    """ "What was my last commit", "what did I commit recently", "what did I commit yesterday" answered
    "No memory matches": no node holds the word "commit", and the time cue was all the question said."""
    commit(repo, "Add the parser", {"parser.py": "A = 1\n"}, when=NOW - 30 * DAY)
    commit(repo, "Teach the parser comments", {"parser.py": "A = 2\n"}, when=NOW - DAY - 3600)
    newest = commit(repo, "Cache the parsed tree", {"cache.py": "B = 1\n"}, when=NOW - 3600)
    write_recent(repo, "30 1 pytest tests/test_cache.py\n20 0 git status\n", now=NOW)
    run_cli("-C", str(repo), "sync", "--no-embed")
    for question in ("what was my last commit", "what did I commit recently", "show my latest commits"):
        found = query_json(repo, question)
        titles = [it["title"] for it in found["items"]]
        assert titles[:3] == ["Cache the parsed tree", "Teach the parser comments", "Add the parser"], (
            question,
            titles,
        )
        assert found["items"][0]["ref"] == newest and found["weak"] is False
        assert "first: the newest commits" in found["notes"]
        assert {it["kind"] for it in found["items"]} == {"git_commit"}  # no diffs that say "commit"
    assert [it["title"] for it in query_json(repo, "my last 2 commits")["items"]] == [
        "Cache the parsed tree",
        "Teach the parser comments",
    ]
    if SINCE_MIDNIGHT > 7200:  # the newest commit is today's, the one before it yesterday's
        titles = [it["title"] for it in query_json(repo, "what did I commit yesterday")["items"]]
        assert titles[0] == "Teach the parser comments" and "Cache the parsed tree" not in titles[:1]
        ran = query_json(repo, "what did I run today")
        titles = [it["title"] for it in ran["items"]][:2]
        assert titles == ["git status (exit 0)", "pytest tests/test_cache.py (exit 1)"]
        assert "first: the newest commands run today" in ran["notes"]
    # A question that names something is still answered by its words.
    assert query_json(repo, "why did we cache the parsed tree")["items"][0]["ref"] == newest


def test_what_was_tried_last_lists_the_commands_run(repo: Path) -> None:
    """ "What did I try last" listed the newest commits: what a developer tried is what they ran."""
    commit(repo, "Add the parser", {"parser.py": "A = 1\n"}, when=NOW - 30 * DAY)
    commit(repo, "Cache the parsed tree", {"cache.py": "B = 1\n"}, when=NOW - 3600)
    write_recent(
        repo, "30 1 pytest tests/test_cache.py -x\n20 1 pytest tests/test_cache.py -k tree\n", now=NOW
    )
    run_cli("-C", str(repo), "sync", "--no-embed")
    for question in ("what did I try last", "what have I tried lately", "show my latest attempts"):
        found = query_json(repo, question)
        titles = [it["title"] for it in found["items"]][:2]
        assert titles == [
            "pytest tests/test_cache.py -k tree (exit 1)",
            "pytest tests/test_cache.py -x (exit 1)",
        ], (
            question,
            titles,
        )
        assert "first: the newest commands run" in found["notes"], found["notes"]
    # A story of what was tried that names its subject is still answered by its words.
    assert (
        query_json(repo, "I tried caching the parsed tree, why was it added")["items"][0]["kind"]
        == "git_commit"
    )


def test_what_was_i_doing_lists_the_newest_work(repo: Path) -> None:
    """ "What did I run", "what have I been doing", "what was I working on" answered "no strong match" (no
    time word, and no node holds their words), and "what have I done today" listed today's commits alone: the
    newest commands answer the first, the newest commits and commands, one timeline newest first, the rest."""
    commit(repo, "Make the retry config read the env", {"retry.py": "R = 1\n"}, when=NOW - 50 * DAY)
    commit(repo, "Add the parser", {"parser.py": "A = 1\n"}, when=NOW - 30 * DAY)
    commit(repo, "Teach the parser comments", {"parser.py": "A = 2\n"}, when=NOW - DAY - 3600)
    commit(repo, "Cache the parsed tree", {"cache.py": "B = 1\n"}, when=NOW - 3600)
    write_recent(
        repo,
        "90 1 pytest tests/test_cache.py\n30 0 git status\n20 0 pytest tests/test_flaky.py -p no:randomly\n",
        now=NOW,
    )
    run_cli("-C", str(repo), "sync", "--no-embed")
    commands = ["pytest tests/test_flaky.py -p no:randomly (exit 0)", "git status (exit 0)"]
    commands.append("pytest tests/test_cache.py (exit 1)")
    for question in ("what did I run", "what was I running"):
        ran = query_json(repo, question)
        assert [it["title"] for it in ran["items"]] == commands, (question, ran["items"])
        assert ran["weak"] is False and "first: the newest commands run" in ran["notes"], (question, ran)
    today = [*commands[:2], "Cache the parsed tree", commands[2]]
    older = ["Teach the parser comments", "Add the parser", "Make the retry config read the env"]
    for question in (
        "what have I been doing",
        "what was I working on",
        "what have I been up to?",
        "what did I work on recently",
        "where was I",
    ):
        found = query_json(repo, question)
        assert [it["title"] for it in found["items"]] == [*today, *older], (question, found["items"])
        assert found["weak"] is False, (question, found)
        assert "first: the newest commits and commands run" in found["notes"], (question, found["notes"])
    if SINCE_MIDNIGHT > 7200:  # the newest commit and the three commands are today's, the rest older
        for question in (
            "what have I done today",
            "what did I do this morning",
            "what was I doing before lunch",
        ):
            found = query_json(repo, question)
            assert [it["title"] for it in found["items"]] == today, (question, found["items"])
            assert "first: the newest commits and commands run today" in found["notes"], (question, found)
    # A question that names something is answered by its words, whatever it shares with these.
    for question, first in (
        ("what was I doing wrong with the retry config", "Make the retry config read the env"),
        ("what did I run to fix the flaky test", commands[0]),
    ):
        found = query_json(repo, question)
        assert found["items"][0]["title"] == first, (question, found["items"])
        assert not any(n.startswith("first: the newest") for n in found["notes"]), (question, found["notes"])


def test_naming_the_project_still_asks_for_recent_work_and_failed_runs(tmp_path: Path) -> None:
    """ "What did I commit in cJSON yesterday" answered "No strong match" and old commits that say cJSON,
    where "what did I commit yesterday" listed yesterday's commit; "what was I doing in jsonkit" (the origin's
    name), "what did I work on in this project", "which of my projects had failing tests today" and "which
    repo had a failing build today" likewise: the project's own names and "project", "repo" were read as a
    topic, and the recent-work and failed-runs answers gave way to the words."""
    if SINCE_MIDNIGHT < 7200:
        pytest.skip("the day has just begun: today's commands may be yesterday's")
    repo = init_repo(tmp_path / "cJSON")
    git(repo, "remote", "add", "origin", "git@github.com:acme/jsonkit.git")
    for n in range(6):
        subject = f"cJSON: parse nested arrays in the jsonkit project repo, case {n}"
        commit(repo, subject, {f"cJSON_{n}.c": f"int n = {n};\n"}, when=NOW - (900 - n) * DAY)
    commit(
        repo, "Make failing tests fail the build of the project", {"Makefile": "all:\n"}, when=NOW - 800 * DAY
    )
    guard = "Guard parse_number against an oversized buffer"
    yesterday = commit(repo, guard, {"num.c": "int g;\n"}, when=NOW - SINCE_MIDNIGHT - 3 * 3600)
    write_recent(repo, "50 2 make\n40 1 npm test\n30 0 git status\n", now=NOW)
    run_cli("-C", str(repo), "sync", "--no-embed")
    for question in (
        "what did I commit in cJSON yesterday",
        "what did I commit in jsonkit yesterday",
        "what did I commit to this repo yesterday",
    ):
        found = query_json(repo, question)
        assert [it["ref"] for it in found["items"]] == [yesterday], (question, found["items"])
        assert "first: the newest commits yesterday" in found["notes"] and found["weak"] is False, question
    for question in (
        "what was I doing in cJSON today",
        "what have I been doing in the jsonkit codebase today",
        "what did I work on in this project today",
    ):
        titles = [it["title"] for it in query_json(repo, question)["items"]]
        assert titles == ["git status (exit 0)", "npm test (exit 1)", "make (exit 2)"], (question, titles)
    for question, first in (
        ("which of my projects had failing tests today", "npm test (exit 1)"),
        ("which repo had a failing build today", "make (exit 2)"),
        ("did the cJSON build fail today", "make (exit 2)"),
    ):
        found = query_json(repo, question)
        assert found["items"][0]["title"] == first, (question, found["items"])
        assert any(n.startswith("first: the failed runs of") for n in found["notes"]), (question, found)
    found = query_json(repo, "what failed in jsonkit today")
    assert [it["title"] for it in found["items"]] == ["npm test (exit 1)", "make (exit 2)"], found["items"]
    # A name that is part of a file's or a path's is no project's name: "cJSON.c" asks about that file.
    for text in ("what changed in cJSON.c", "what is in src/cjson/", "why is cJSON_Utils slow"):
        assert without_names(text, frozenset({"cjson"})) == text


def test_what_changed_in_a_file_lately_lists_the_commits_that_touched_it(repo: Path) -> None:
    """ "What changed in app.py recently", "what did I change in app.py today" answered with old commits whose
    titles say "changed" (app.py is in most commits, so its name weighed little, and a time cue lifts a fresh
    match by 3× at most): the commits that touched the file in the time asked are the answer, newest first."""
    if SINCE_MIDNIGHT < 7200:
        pytest.skip("the day has just begun: today's commits may be yesterday's")
    for n in range(12):
        subject = f"Changed how app.py changed the retry loop, what changed in case {n}"
        commit(repo, subject, {"src/app.py": f"RETRIES = {n}\n"}, when=NOW - (900 - n) * DAY)
    commit(repo, "Document the retries", {"README.md": "# app\n"}, when=NOW - 100 * DAY)
    before = commit(
        repo, "Cap the backoff", {"src/app.py": "RETRIES = 20\n"}, when=NOW - SINCE_MIDNIGHT - 3600
    )
    commit(repo, "Add the exporter", {"src/export.py": "ROWS = 1\n"}, when=NOW - 1800)
    today = commit(repo, "Read the pool size from the env", {"src/app.py": "RETRIES = 21\n"}, when=NOW - 600)
    run_cli("-C", str(repo), "sync", "--no-embed")

    def answer(question: str) -> tuple[list[str], list[str]]:
        found = query_json(repo, question)
        return [it["ref"] for it in found["items"]], found["notes"]

    refs, notes = answer("what changed in app.py recently")
    assert refs[:3] == [today, before, refs[2]] and len(refs) == 10, refs
    assert "first: the newest commits that changed src/app.py, newest first" in notes, notes
    for question, listed, span in (
        ("what did I change in app.py today", [today], "today"),
        ("what changed in src/app.py yesterday?", [before], "yesterday"),
        ("what was changed in `app.py` this week", [today, before], "this week"),
    ):
        refs, notes = answer(question)
        assert refs == listed, (question, refs)
        assert f"first: the commits that changed src/app.py {span}, newest first" in notes, (question, notes)
    # Nothing then: said, and the ranking answers.
    refs, notes = answer("what changed in README.md today")
    assert "no commit changed README.md today" in notes and refs, notes
    # A question that asks about more than the file is answered by its words.
    refs, notes = answer("why was the retry loop changed in app.py recently")
    assert not any(n.startswith("first:") for n in notes), notes


def test_what_changed_in_a_name_several_paths_share_lists_the_live_one_changed_last(repo: Path) -> None:
    """ "What changed in datetime.js recently" (luxon: src/datetime.js and benchmarks/datetime.js; guzzle's
    CurlFactory.php, five paths over its history) gave no note and a 2017 commit first: a bare name several
    paths end in named no file. The one changed last that is still in the work tree is listed, and the note
    says which, names the others and suggests the full path; the full path still lists its own."""
    for n in range(6):
        commit(
            repo,
            f"Datetime changed: what changed in case {n}",
            {"src/datetime.js": f"let x = {n};\n"},
            when=NOW - (400 - n) * DAY,
        )
    bench = commit(repo, "Time the parser", {"benchmarks/datetime.js": "run();\n"}, when=NOW - 20 * DAY)
    src = commit(repo, "Fix the zone offset", {"src/datetime.js": "let x = 9;\n"}, when=NOW - 10 * DAY)
    commit(repo, "Try a lib build", {"lib/datetime.js": "old();\n"}, when=NOW - 5 * DAY)
    (repo / "lib" / "datetime.js").unlink()
    commit(repo, "Drop the lib build", when=NOW - 4 * DAY)  # changed last, and gone
    run_cli("-C", str(repo), "sync", "--no-embed")
    found = query_json(repo, "what changed in datetime.js recently")
    refs = [it["ref"] for it in found["items"]]
    assert refs[0] == src and bench not in refs and len(refs) == 7, refs
    note = "first: the newest commits that changed src/datetime.js, newest first (datetime.js also names"
    assert any(
        n.startswith(note) and "benchmarks/datetime.js" in n and "full path" in n for n in found["notes"]
    )
    found = query_json(repo, "what changed in benchmarks/datetime.js recently")
    assert [it["ref"] for it in found["items"]] == [bench], found["items"]


@pytest.mark.parametrize("zone", ["America/Los_Angeles", "Asia/Tokyo"])
def test_day_words_are_the_days_of_the_local_time_zone(repo: Path, zone: str) -> None:
    """ "Today", "yesterday", "this morning", "before lunch", `--since today` were UTC days: at 5 pm in
    California "what did I do today" covered the last hour, and a command typed five minutes before local
    midnight fell on the same day as one typed five minutes after it (they share a UTC day, east of UTC as
    west). They are the days of the local time zone (TZ); every time printed stays UTC."""
    with local_zone(zone) as tz:
        clear_of_midnight(MIDNIGHT_MARGIN, tz)  # the day that `now` is in is the day asked about
        now = datetime.now(tz)
        midnight = datetime.combine(now.date(), dtime(), tzinfo=tz)  # today's start, where the user is
        if now - midnight < timedelta(minutes=10):
            pytest.skip("the local day has just begun: today's commands would be in the future")
        before = datetime.combine(now.date() - timedelta(days=1), dtime(), tzinfo=tz)  # yesterday's start

        def at(day_start: datetime, minutes: int) -> int:
            return int(day_start.timestamp()) * 1000 + minutes * 60_000

        commit(repo, "Add the sources", {"README.md": "# tools\n"}, when=NOW - 100 * DAY)
        commit(repo, "Teach the parser comments", {"parser.py": "A = 2\n"}, when=at(midnight, -6) // 1000)
        commit(repo, "Cache the parsed tree", {"cache.py": "B = 1\n"}, when=at(midnight, 6) // 1000)
        write_commands(
            repo,
            [
                (at(before, -5), "make lint", 3),  # 23:55 the day before yesterday
                (at(before, 5), "make docs", 0),  # 00:05 yesterday
                (at(midnight, -5), "make test", 2),  # 23:55 yesterday
                (at(midnight, 5), "make build", 1),  # 00:05 today
            ],
        )
        run_cli("-C", str(repo), "sync", "--no-embed")

        def titles(question: str, *options: str) -> list[str]:
            return [it["title"] for it in query_json(repo, question, *options)["items"]]

        assert titles("what did I run today") == ["make build (exit 1)"]
        yesterday = ["make test (exit 2)", "make docs (exit 0)"]
        assert titles("what did I run yesterday") == yesterday
        assert titles("what did I run last night") == yesterday
        assert titles("what failed the day before yesterday") == ["make lint (exit 3)"]
        for question in (
            "what have I done today",
            "what did I do this morning",
            "what was I doing before lunch",
        ):
            assert titles(question) == ["Cache the parsed tree", "make build (exit 1)"], question
        assert titles("what did I commit yesterday") == ["Teach the parser comments"]
        failed = titles("what failed today")
        assert failed[0] == "make build (exit 1)" and "make test (exit 2)" not in failed
        failed = titles("what failed yesterday")
        assert failed[0] == "make test (exit 2)" and "make build (exit 1)" not in failed
        assert titles("make", "--since", "today") == ["make build (exit 1)"]
        assert sorted(titles("make", "--since", "yesterday", "--until", "yesterday")) == sorted(yesterday)
        assert "make build (exit 1)" not in titles("make", "--until", "yesterday")
        # What is printed is UTC, as before.
        shown = query_json(repo, "make", "--since", "today")["items"][0]["ts"]
        assert shown == datetime.fromtimestamp(at(midnight, 5) // 1000, timezone.utc).isoformat(), shown
        # The installed script, a process of its own, reads TZ from its environment (it inherits this one).
        plain = run_script("-C", str(repo), "query", "--json", "--since", "today", "make", cwd=repo)
        assert plain.returncode == 0, plain.stderr
        assert [it["title"] for it in json.loads(plain.stdout)["items"]] == ["make build (exit 1)"]


@pytest.mark.parametrize(
    ("text", "listed"),
    [
        ("what did I run", True),
        ("what have I been doing", True),
        ("What was I working on?", True),
        ("what am I working on", True),
        ("what have I done today", True),
        ("what did I do this morning", True),
        ("what was I doing before lunch", True),
        ("what did I do before lunch", True),
        ("what did we do after lunch", True),
        ("where did I leave off", True),
        ("what was I doing wrong with the retry config", False),
        ("what did I run to fix the flaky test", False),
        ("what did I do before the tests failed", False),
        ("what did I run just before starting git bisect", False),
        ("what was I working on in the billing module", False),
        ("what have I been doing about the slow queries", False),
        ("where was I reading the token from", False),
        ("why does lunch() return early", False),
    ],
)
def test_which_questions_ask_what_i_was_doing(text: str, listed: bool) -> None:
    question = prepare(text)
    words = search.terms(question.search_text)
    assert asks_recent_work(question, words, None, None) is listed


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ("where is compileQueryParser used", True),
        ("when did FileField start unpacking a 4-tuple", True),
        ("why does res.json call a local stringify helper", True),
        ("error.flatten() crashes on a field called toString", True),
        ("with -f words.txt the last entry loses a character", True),
        ("when was should_skip_entry moved", True),
        ("why does `rg needle sub` show hits under sub/target", True),
        ("the upload hangs after a gateway timeout", False),
        ("where did the TMonitor class come from", True),
        ("the URLs and IDs in the JSON output are wrong", False),
        ("in what situations would plain grep be a better choice, e.g. POSIX", False),
        ("what changed in version 3.0 of the re-run logic", False),
    ],
)
def test_a_question_that_names_code(text: str, named: bool) -> None:
    assert names_code(text) is named


@pytest.mark.parametrize(
    ("text", "factor"),
    [
        ("when did FileField start unpacking a 4-tuple", rank.CODE_VECTOR_FACTOR),
        ("where is compileQueryParser used", rank.CODE_VECTOR_FACTOR),
        ("how do I make TAB on my --output flag suggest folders", 1.0),  # usage: the docs answer it
        ("my worker hangs forever when stopping", 1.0),
    ],
)
def test_the_vectors_count_less_when_a_question_names_code(text: str, factor: float) -> None:
    """Word vectors know prose, not identifiers (docs/evaluation.md: they cost code questions on five
    of six real-repository sets); a usage question keeps them, the docs answer it."""
    weight = query.vector_weight(prepare(text), rank.DEFAULT)
    assert weight == pytest.approx(rank.VECTOR_WEIGHT * factor)
    assert rank.CODE_VECTOR_FACTOR < 1.0


@pytest.mark.parametrize(
    ("session", "question", "first"),
    [
        # The failed build is the anchor, not a later one that passed and that the time cue ranks higher.
        (
            REFUSED_BUILD,
            "what did I do after cargo refused to build the fastdiff crate recently",
            "rustup update",
        ),
        # "In between" two failures: what followed the first of them.
        (
            TWO_FAILED_BUILDS,
            "in between the two failed builds of the ingest binary, what did I try",
            "go env",
        ),
    ],
    ids=["after-the-failure", "between-two-failures"],
)
def test_the_anchor_of_a_what_came_next_question(repo: Path, session: str, question: str, first: str) -> None:
    commit(repo, "Add the sources", {"README.md": "# tools\n"}, when=NOW - 100 * DAY)
    write_recent(repo, session, now=NOW)
    run_cli("-C", str(repo), "sync", "--no-embed")
    titles = titles_for(repo, question)
    assert titles[0].startswith(first), titles


@pytest.mark.parametrize(
    ("text", "name"),
    [
        ("when was getUsDateFormat removed from the date utilities?", "getUsDateFormat"),
        ("which commit deleted detect_rack_handler?", "detect_rack_handler"),
        ("what replaced DummyStdin, and when?", "DummyStdin"),
        ("when did we drop the --files-without-matches flag", "--files-without-matches"),
        ("when was remove_await_parens added to the line generator?", None),  # the name is not the verb
        ("when was crossOriginStripHeaders added, and which headers does it drop?", None),  # added: the first
        ("when did FileField drop its _consumed flag", None),  # two names
        ("why can't I pass json= to delete()? the DELETE request has no body", None),
    ],
)
def test_a_question_about_where_a_name_went(text: str, name: str | None) -> None:
    assert removed_name(text) == name


def test_when_was_a_name_removed_finds_the_change_that_took_it_out(repo: Path) -> None:
    """The change that deleted a name's last lines answers "when was X removed", not the earlier ones
    that touched it (their diffs hold it as often) nor the release notes written afterwards."""
    tidy_modules(repo)
    legacy = "def qz_legacy_blit(frame):\n    return frame\n"
    commits = [
        (800, "Add the blitter", {"blit.py": legacy}),
        (500, "Speed up qz_legacy_blit for wide frames", {"blit.py": legacy + "# qz_legacy_blit: fast\n"}),
        (300, "Drop the old blitter path", {"blit.py": "def blit(frame):\n    return frame\n"}),
        (
            200,
            "Release 2.0",
            {"CHANGES.md": "# Changes\n\n## 2.0\n\n- Removed `qz_legacy_blit`: use `blit`.\n"},
        ),
    ]
    for days, subject, files in commits:
        commit(repo, subject, files, when=NOW - days * DAY)
    titles, notes = synced_answer(repo, "when was qz_legacy_blit removed?")
    assert titles[0].endswith("Drop the old blitter path"), titles
    assert any(n.startswith("last change that holds qz_legacy_blit: ") for n in notes), notes


def test_when_was_a_name_removed_that_the_code_still_holds_says_so(repo: Path) -> None:
    """`query "when was toRelativeCalendar removed"` (luxon) said "last change that holds toRelativeCalendar:
    6b4f7fea97", a docs typo fixed beside it, and guzzle's GUZZLE_CURL_SELECT_TIMEOUT the same: both are
    still in the code at HEAD. The note now says the name is still in the code and where (from the newest
    stored diffs of each file that holds it), and claims no change removed it."""
    handler = (
        "class CurlMultiHandler {\n"
        "    public function __construct() {\n"
        "        $this->selectTimeout = getenv('GUZZLE_CURL_SELECT_TIMEOUT') ?: 1;\n"
        "    }\n}\n"
    )
    commit(repo, "Add the curl multi handler", {"src/CurlMultiHandler.php": handler}, when=NOW - 900 * DAY)
    test = 'putenv("GUZZLE_CURL_SELECT_TIMEOUT=3");\nassert_timeout(3);\n'
    commit(repo, "Test the select timeout", {"tests/CurlMultiHandlerTest.php": test}, when=NOW - 600 * DAY)
    style = test.replace('"GUZZLE_CURL_SELECT_TIMEOUT=3"', "'GUZZLE_CURL_SELECT_TIMEOUT=3'")
    last = commit(
        repo, "Use symfony code style", {"tests/CurlMultiHandlerTest.php": style}, when=NOW - 300 * DAY
    )
    titles, notes = synced_answer(repo, "when was GUZZLE_CURL_SELECT_TIMEOUT removed?")
    said = [n for n in notes if "GUZZLE_CURL_SELECT_TIMEOUT" in n]
    assert said == [
        "GUZZLE_CURL_SELECT_TIMEOUT is still in the code (src/CurlMultiHandler.php,"
        f" tests/CurlMultiHandlerTest.php): no change removed it; the last that changed it: {last[:10]}"
    ], notes
    assert not any(n.startswith("last change that holds") for n in notes), notes
    assert any("Use symfony code style" in title for title in titles[:2]), titles


def test_a_second_change_comes_before_the_first_ones_other_files(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A commit and its diffs are one change: the next change that matches nearly as well comes before the
    first change's second and third files, not after them."""
    body = "spline_tolerance = 0.5  # spline tolerance for curve smoothing\n"
    commits = [
        ("Add the project skeleton", {"README.md": "# plotter\n"}),
        (
            "Rework the spline tolerance for curve smoothing",
            {f"curves/{n}.py": body for n in ("bezier", "catmull", "hermite")},
        ),
        ("Round the spline tolerance when smoothing", {"curves/round.py": "ROUND = 3\n"}),
    ]
    for age, (title, files) in zip((900, 800, 700), commits):
        commit(repo, title, files, when=NOW - age * DAY)
    run_cli("-C", str(repo), "sync", "--no-embed")
    proj = project.load(repo)

    def order() -> list[str]:
        with proj.open_store(readonly=True) as store:
            scored, _ = query.ranked_candidates(store, "spline tolerance curve smoothing", vectors=False)
        return [n.meta["subject"] if n.kind == "code_diff" else n.title for n, _ in scored[:5]]

    second = "Round the spline tolerance when smoothing"
    rework = "Rework the spline tolerance for curve smoothing"
    with monkeypatch.context() as m:
        m.setattr(history, "SIBLING_FACTOR", 1.0)
        # the rule alone, without the learned step
        m.setattr(rerank, "rerank", lambda scored, *_, **__: scored)
        assert (
            order()[:4] == [rework] * 4
        )  # without the rule, the rework's three files and its commit come first
    assert order()[:2] == [rework, second]


def test_a_change_is_shown_by_its_commit_first_even_when_its_tests_match_better(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The tests a fix adds repeat the question's words more than its message does: the answer still shows
    the commit (it says why) first, then one of its files, not two files and no message."""
    commit(repo, "Add the project skeleton", {"README.md": "# validators\n"}, when=NOW - 900 * DAY)
    words = "emoji regex backtracking exponential remove "
    commit(
        repo,
        "fix: remove exponential backtracking from the emoji regex\n\nThe nested quantifier made long inputs"
        " take minutes; the alternation is now flat.",
        {
            "tests/test_emoji.py": f"# {words}\n",
            "tests/test_redos.py": f"# {words}\n",
            "src/regexes.py": "EMOJI = r'[\\u2600-\\u27bf]'\n",
        },
        when=NOW - 100 * DAY,
    )
    run_cli("-C", str(repo), "sync", "--no-embed")
    question = "remove exponential backtracking from the emoji regex"

    def kinds() -> list[str]:
        return [it["kind"] for it in query_json(repo, question)["items"]]

    with monkeypatch.context() as m:
        m.setattr(history, "distinct_changes", lambda scored: scored)
        # the rule alone, without the learned step
        m.setattr(rerank, "rerank", lambda scored, *_, **__: scored)
        assert kinds()[:2] == ["code_diff", "code_diff"]  # the case is real: two test files, no message
    shown = query_json(repo, question)["items"]
    assert [it["kind"] for it in shown[:2]] == ["git_commit", "code_diff"]
    assert shown[0]["title"].startswith("fix: remove exponential backtracking from the emoji regex")


def test_a_doc_section_kept_in_two_places_is_packed_once_under_the_path_a_reader_opens(repo: Path) -> None:
    """A README made from a template in a hidden folder holds the template's sections word for word: the
    answer shows the section once, from README.md, and names the template's copy; a section under the same
    heading that says something else is still its own item."""
    section = (
        "## Redirecting logging\n\nWrap your handlers with logging_redirect so that log records are written"
        " above the progress bar instead of breaking it in two; the bar is redrawn after each record.\n"
    )
    commit(
        repo,
        "docs: the readme and its template",
        {
            ".meta/readme-template.md": "# spinner\n\n" + section,
            "README.md": "# spinner\n\n" + section,
            "docs/v1/guide.md": "# Guide\n\n## Redirecting logging\n\nVersion 1 had no logging support at"
            " all: pipe stderr elsewhere, or pass quiet=True to hide the bar while log records are written.\n",
        },
        when=NOW - 100 * DAY,
    )
    run_cli("-C", str(repo), "sync", "--no-embed")

    data = query_json(repo, "how do I redirect logging so records do not break the progress bar")
    docs = [it for it in data["items"] if it["kind"] == "doc_section"]
    refs = [it["ref"] for it in docs]
    assert "README.md#Redirecting logging" in refs
    assert ".meta/readme-template.md#Redirecting logging" not in refs  # packed once, as the README's
    assert "docs/v1/guide.md#Redirecting logging" in refs  # same heading, other words: its own item
    readme = next(it for it in docs if it["ref"] == "README.md#Redirecting logging")
    assert readme["also_in"] == [".meta/readme-template.md#Redirecting logging"]
    assert refs.index("README.md#Redirecting logging") == 0  # at the best place either copy ranked

    text = run_cli("-C", str(repo), "query", "--", "redirect logging progress bar").stdout
    heads = [line for line in text.splitlines() if line.startswith("- ") and "Redirecting logging" in line]
    assert len(heads) == 2 and ".meta/" not in "".join(heads)  # README's item and the v1 guide's
    assert "  also in .meta/readme-template.md" in text


@pytest.mark.parametrize(
    ("paths", "docs"),
    [
        (["README.md"], True),
        (["docs/conf.py", "docs/index.rst"], True),
        (["CHANGELOG", "man/tool.1", "HISTORY.rst", "NEWS.txt"], True),
        (["src/history.rs"], False),  # a module named history is code
        (["requirements.txt"], False),
        (["README.md", "src/walk.py"], False),
        ([], False),
    ],
)
def test_which_changes_are_documentation_only(paths: list[str], docs: bool) -> None:
    assert rank.docs_only(paths) is docs


@pytest.mark.parametrize(
    ("text", "docs"),
    [
        ("the scan stops with permission denied on a broken symlink", False),
        ("which commit documented the symlink behaviour?", True),
        ("when did the README example for --follow change?", True),
        ("is there a guide to writing plugins?", True),
        ("when did the install instructions change?", True),
    ],
)
def test_a_question_that_speaks_of_docs(text: str, docs: bool) -> None:
    assert mentions_docs(text) is docs


def tidy_then_fix(repo: Path) -> None:
    """Six commits that tidy unrelated modules, then the fix to the walk over a broken symlink."""
    tidy_modules(repo)
    fix = "try:\n    st = os.lstat(p)\nexcept PermissionError:\n    continue\n"
    commit(repo, "walk: keep going past a broken symlink", {"walk.py": fix}, when=NOW - 500 * DAY)


@pytest.fixture
def symlinks(repo: Path) -> Path:
    """A fix to the code, and a later FAQ entry that describes the same problem in a user's words."""
    tidy_then_fix(repo)
    faq = (
        "# FAQ\n\n## Links\n\nOlder releases stopped the whole scan with Permission denied when they met a"
        " broken symlink; the scan now skips it.\n"
    )
    commit(repo, "Add an FAQ", {"docs/faq.md": faq}, when=NOW - 300 * DAY)
    run_cli("-C", str(repo), "sync", "--no-embed")
    return repo


def commit_scores(repo: Path, question: str, settings: rank.Settings = rank.DEFAULT) -> dict[str, float]:
    with project.load(repo).open_store(readonly=True) as store:
        scored, _ = query.ranked_candidates(store, question, vectors=False, settings=settings)
    return {node.title: value for node, value in scored if node.kind == "git_commit"}


def test_a_change_to_the_docs_only_counts_less_unless_the_question_speaks_of_docs(
    symlinks: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A question about how the program behaves is answered by a change to the program. The FAQ's commit
    matches the user's words better (it describes the problem as they saw it), so without the factor it
    would be the answer; a question about the docs still finds it."""
    symptom = "why did the scan stop with Permission denied on a broken symlink?"
    score = commit_scores(symlinks, symptom)
    assert score["walk: keep going past a broken symlink"] > score["Add an FAQ"], score
    about_docs = commit_scores(symlinks, "which change documented the scan stopping on a broken symlink?")
    assert about_docs["Add an FAQ"] > about_docs["walk: keep going past a broken symlink"], about_docs
    monkeypatch.setattr(rank, "DOCS_ONLY_FACTOR", 1.0)
    unweighted = commit_scores(symlinks, symptom)
    assert unweighted["Add an FAQ"] > unweighted["walk: keep going past a broken symlink"], unweighted


@pytest.mark.parametrize(
    ("paths", "tests"),
    [
        (["tests/test_walk.py"], True),
        (["src/walk_test.go", "testdata/broken.txt"], True),
        (["lib/parse.test.ts", "__tests__/cli.js", "spec/agent_spec.rb"], True),
        (["src/test/java/WalkTest.java", "tests/snapshots/walk__broken.snap"], True),
        (["tests/test_walk.py", "CHANGELOG.md"], True),  # tests and a note about them: still no program
        (["tests/test_walk.py", "walk.py"], False),  # a fix with its test
        (["README.md"], False),  # docs only: rank.docs_only's, not this
        (["src/latest.js", "contest.py", "attestation.go"], False),  # "test" inside a word
        (["src/testing.py"], False),  # a module named testing is code
        ([], False),
    ],
)
def test_which_changes_are_tests_only(paths: list[str], tests: bool) -> None:
    assert rank.tests_only(paths) is tests


@pytest.mark.parametrize(
    ("text", "tests"),
    [
        ("the scan stops with permission denied on a broken symlink", False),
        ("which commit added the test for broken symlinks?", True),
        ("why does the spec for --follow fail on Windows?", True),
        ("my pytest run aborts with SystemExit", False),  # pytest is a program, not a test
    ],
)
def test_a_question_that_speaks_of_tests(text: str, tests: bool) -> None:
    assert mentions_tests(text) is tests


@pytest.fixture
def tested(repo: Path) -> Path:
    """A fix to the code, then a regression test for it whose title and names say the symptom in full."""
    tidy_then_fix(repo)
    test = (
        "def test_broken_symlink(tmp_path):\n"
        "    (tmp_path / 'gone').symlink_to(tmp_path / 'missing')\n    assert list(scan(tmp_path)) == []\n"
    )
    title = "Test that a broken symlink does not stop the scan"
    commit(repo, title, {"tests/test_walk.py": test}, when=NOW - 499 * DAY)
    run_cli("-C", str(repo), "sync", "--no-embed")
    return repo


def test_a_change_to_the_tests_only_counts_less_unless_the_question_speaks_of_tests(
    tested: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A question about how the program behaves is answered by the change to the program, not by the test
    written for it afterwards, however closely the test's title repeats the question. A question about the
    test still finds it; without the factor the test would come first."""
    test = "Test that a broken symlink does not stop the scan"
    symptom = "why did the scan stop with Permission denied on a broken symlink?"
    score = commit_scores(tested, symptom)
    assert score["walk: keep going past a broken symlink"] > score[test], score
    about_tests = commit_scores(tested, "which test checks that the scan survives a broken symlink?")
    assert about_tests[test] > about_tests["walk: keep going past a broken symlink"], about_tests
    monkeypatch.setattr(rank, "TESTS_ONLY_FACTOR", 1.0)
    unweighted = commit_scores(tested, symptom)
    assert unweighted[test] > unweighted["walk: keep going past a broken symlink"], unweighted


def test_a_fix_keeps_its_own_test(repo: Path) -> None:
    """A diff of a test file counts as its commit does: the test a fix brings with it is part of the fix
    (it often says the symptom best), and only a change with no program file counts less."""
    commit(
        repo,
        "walk: keep going past a broken symlink",
        {"walk.py": "continue\n", "tests/test_walk.py": "ok\n"},
    )
    commit(repo, "Test the walk", {"tests/test_walk.py": "ok\nmore\n"})
    run_cli("-C", str(repo), "sync", "--no-embed")
    with project.load(repo).open_store(readonly=True) as store:
        nodes = [n for n in store.iter_nodes() if n.kind in ("git_commit", "code_diff")]
        scope = search.change_scope(store, nodes)
    tests_only = sorted(n.title for n in nodes if n.id in scope.tests)
    assert tests_only == ["Test the walk", "tests/test_walk.py @ " + tests_only[1].split(" @ ")[1]], (
        tests_only
    )
    assert not scope.docs


@pytest.fixture
def swept(repo: Path) -> Path:
    """A narrow fix, then a sweep over eight modules whose changed lines hold the same words."""
    tidy_modules(repo, ["hashing", "logging", "cli", "manifest", "packaging", "upload"])
    fix = "if data.startswith(BOM):\n    data = data[len(BOM):]\n"
    commit(repo, "reader: skip a BOM at the start of a file", {"reader.py": fix}, when=NOW - 500 * DAY)
    sweep = {
        f"{area}.py": f"def read_{area}(path):\n    data = open_file(path).read()  # file start, bom, parse error\n"
        for area in ["hashing", "logging", "cli", "manifest", "packaging", "upload", "config", "index"]
    }
    commit(repo, "Share one file reader across the modules", sweep, when=NOW - 400 * DAY)
    run_cli("-C", str(repo), "sync", "--no-embed")
    return repo


def test_a_change_to_many_files_counts_less_when_the_question_reports_a_failure(
    swept: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A question that reports a failure is answered by a fix, and a fix is narrow: a change to eight modules
    that holds the same words counts less. A question that reports nothing is ranked as before. (The rule
    alone, the learned last step off: that step weighs a change's size too.)"""
    fix, sweep = "reader: skip a BOM at the start of a file", "Share one file reader across the modules"
    failing = "reading a file that starts with a bom fails with a parse error"
    rule_only = replace(rank.DEFAULT, rerank=False)
    ranked = commit_scores(swept, failing)  # the whole ranking, learned step on
    assert ranked[fix] > ranked[sweep], ranked
    score = commit_scores(swept, failing, rule_only)
    assert score[fix] > score[sweep], score
    monkeypatch.setattr(rank, "WIDE_FACTOR", 1.0)
    unweighted = commit_scores(swept, failing, rule_only)
    assert unweighted[sweep] > unweighted[fix], unweighted
    neutral = "where is a file that starts with a bom parsed?"  # no failure reported
    before = commit_scores(swept, neutral, rule_only)
    monkeypatch.setattr(rank, "WIDE_FACTOR", 0.01)
    assert commit_scores(swept, neutral, rule_only) == before
    assert commit_scores(swept, failing, rule_only)[sweep] < unweighted[sweep] / 50


def test_a_question_naming_other_code_still_finds_where_its_name_began(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ "Which change introduced X, so that write() stores Y …" names other code to say what X does. The
    name the origin verb takes is the one asked about: its first holder comes first, not the later change
    whose words hold more of the question."""
    tidy_modules(repo)
    commit(repo, "Find the time field once", {"proto.js": "const qzSliceIndex = 8\n"}, when=NOW - 500 * DAY)
    later = "Store lastTime on every write"
    body = "function write(stream, t) {\n  stream.lastTime = t.slice(qzSliceIndex)\n}\n"
    commit(repo, later, {"proto.js": "const qzSliceIndex = 8\n" + body}, when=NOW - 300 * DAY)
    run_cli("-C", str(repo), "sync", "--no-embed")
    question = "Which change introduced qzSliceIndex, so that write() stores stream.lastTime via t.slice()?"
    titles, notes = synced_answer(repo, question)
    assert titles[0] == "Find the time field once", titles
    assert any(n.startswith("first change that holds qzSliceIndex: ") for n in notes), notes


@pytest.mark.parametrize(
    ("text", "known", "parts"),
    [
        (
            "HasDarkBackground(os.Stdin) blocks forever",
            ["hasdarkbackground", "os", "stdin"],
            ["dark", "background"],
        ),
        ("set max_retries to 5", ["max_retries"], ["max", "retries"]),
        ("getHTTPClient ignores the proxy", [], ["http", "client"]),  # "get" is a code word
        ("the upload hangs after a timeout", ["upload", "hangs", "timeout"], []),  # no compound name
        ("uploadFile and upload_file", ["uploadfile", "upload_file"], ["upload", "file"]),  # each part once
    ],
)
def test_the_parts_of_a_questions_compound_names(text: str, known: list[str], parts: list[str]) -> None:
    assert search.name_parts(text, known) == parts


def test_a_question_naming_a_function_finds_the_fix_that_describes_it_in_words(repo: Path) -> None:
    """The index holds `HasDarkBackground` as one word; the fix of its hang speaks of "the background
    colour query" and holds no other word of the question: without the name's parts it is not found."""
    for n, area in enumerate(["parser", "hashing", "logging", "cli", "manifest", "packaging", "tables"]):
        commit(repo, f"Tidy the {area} module", {f"{area}.go": f"var n = {n}\n"}, when=NOW - (900 - n) * DAY)
    added = "func HasDarkBackground() bool { return ask() }\n"
    commit(repo, "Add HasDarkBackground", {"bg.go": added}, when=NOW - 400 * DAY)
    fix = "Give the background colour query a deadline on a closed terminal"
    commit(repo, fix, {"ask.go": "func ask() { deadline(limit) }\n"}, when=NOW - 200 * DAY)
    run_cli("-C", str(repo), "sync", "--no-embed")
    scores = commit_scores(repo, "HasDarkBackground() blocks forever in CI")
    assert fix in scores, scores
    assert "Tidy the parser module" not in scores  # the parts are not a wildcard


def test_the_code_a_question_names() -> None:
    text = "TimestampSigner('key').unsign() with --strict on `max age` and os.path ignores the zone"
    assert code_names(text) == ["TimestampSigner", "unsign()", "--strict", "`max age`", "os.path"]
    assert code_names("the upload hangs after a gateway timeout") == []


def test_the_code_a_question_names_outweighs_its_prose(repo: Path) -> None:
    """A question names the call that failed and tells the rest in words, one of which another change's
    title holds ("server"); the change to the named code comes first (without the second look at the
    named code, the other change did)."""
    tidy_modules(repo, ["parser", "hashing", "logging", "cli", "manifest", "packaging", "tables"])
    broad = "Show the server zone"
    commit(repo, broad, {"server.py": "ZONE = 'UTC'\n"}, when=NOW - 400 * DAY)
    fix = "unsign: reject a value without a time part"
    commit(
        repo,
        fix,
        {"signer.py": "def unsign(value):\n    return value.rsplit(SEP, 1)\n"},
        when=NOW - 300 * DAY,
    )
    run_cli("-C", str(repo), "sync", "--no-embed")
    scores = commit_scores(
        repo, "unsign() says my tokens expired on a server in another timezone after a restart"
    )
    assert scores[fix] > scores[broad], scores


def test_a_number_in_a_question_is_no_sha(repo: Path) -> None:
    """ "order 8459341 returns 404", "why does user id 8459341 get a 500 error": a number of seven digits is an
    id, not the commit whose sha happens to start with it; that commit is not put first as named."""
    for n in range(5):
        commit(
            repo,
            f"Orders: return 404 for a missing order ({n})",
            {f"o{n}.py": f"N = {n}\n"},
            when=NOW - n * DAY,
        )
    for n in range(3000):  # a commit whose sha starts with seven digits (1 in 27 do)
        git(repo, "commit", "-q", "--allow-empty", "--amend", "-m", f"Bump the cache size ({n})")
        sha = git(repo, "rev-parse", "HEAD").strip()
        if sha[:7].isdigit():
            break
    assert sha[:7].isdigit()
    run_cli("-C", str(repo), "sync", "--no-embed")
    for question in (f"order {sha[:7]} returns 404", f"why does user id {sha[:7]} get a 500 error"):
        found = query_json(repo, question)
        assert not any("sha" in note for note in found["notes"]), (question, found["notes"])
        assert found["items"][0]["ref"] != sha, question
    # A sha pasted with its first ten characters (twelve when those are all digits) is still one.
    named = git(repo, "rev-parse", "HEAD~1").strip()
    assert query_json(repo, f"what did {short_sha(named, 10)} do?")["items"][0]["ref"] == named


def test_an_ambiguous_sha_answers_with_each_commit_it_starts_and_says_so(repo: Path) -> None:
    """Two commits whose shas share their first seven characters: "what did <prefix> do?" used to print "No
    memory matches" (the prefix was passed over without a word); both commits come first, and a note says
    the prefix is ambiguous, naming each by a longer one (as `show <prefix>` lists them)."""
    commit(repo, "initial import", {"f.txt": "x\n"}, when=NOW - 10 * DAY)
    parent = git(repo, "rev-parse", "HEAD").strip()
    tree = git(repo, "rev-parse", "HEAD^{tree}").strip()
    stamp = f"Dev <dev@example.com> {NOW - 5 * DAY} +0000"
    seen: dict[str, bytes] = {}
    for n in range(400_000):  # a birthday search: two of ~20,000 commit objects share a 7-character prefix
        text = (
            f"tree {tree}\nparent {parent}\nauthor {stamp}\ncommitter {stamp}\n\nFix the uploader, try {n}\n"
        )
        body = text.encode()
        sha = hashlib.sha1(b"commit %d\0" % len(body) + body).hexdigest()
        if sha[:7] in seen and not sha[:7].isdigit():
            pair = [seen[sha[:7]], body]
            break
        seen[sha[:7]] = body
    shas = [
        subprocess.run(
            ["git", "hash-object", "-t", "commit", "-w", "--stdin"], cwd=repo, input=body, capture_output=True
        )
        .stdout.decode()
        .strip()
        for body in pair
    ]
    assert shas[0][:7] == shas[1][:7] and shas[0] != shas[1]
    merge = git(repo, "commit-tree", tree, "-p", shas[0], "-p", shas[1], "-m", "Merge both tries").strip()
    git(repo, "reset", "-q", "--hard", merge)
    run_cli("-C", str(repo), "sync", "--no-embed")
    found = query_json(repo, f"what did {shas[0][:7]} do?")
    assert {item["ref"] for item in found["items"][:2]} == set(shas), found["items"]
    note = next(note for note in found["notes"] if "ambiguous" in note)
    assert all(sha[:12] in note for sha in shas), note


def test_a_pasted_sha_answers_with_its_commit_and_its_diffs(repo: Path) -> None:
    """`query "$(git rev-parse HEAD~2)"`, its first 10 characters, "what did 1fb23b7 do?": no index holds a
    sha, and the words matched commits that quote other shas ("Revert <sha>"). The commit it names comes
    first, its diff next, and the answer is not weak; a hex word that starts no commit's sha changes nothing."""
    for n in range(5):
        commit(
            repo,
            f"Pool: tune the socket limit ({n})",
            {f"pool{n}.py": f"LIMIT = {n}\n"},
            when=NOW - (90 - n) * DAY,
        )
    asked = commit(
        repo, "Cache: keep the parsed headers", {"cache.py": "HEADERS = {}\n"}, when=NOW - 50 * DAY
    )
    tries = 0
    while asked[:10].isdigit() or asked[:7].isdigit():
        # A number of fewer than 12 digits is no sha (README: "order 8459341 returns 404"): about one sha in
        # 27 starts with 7 digits, so such a history is made again (the time moves its sha).
        tries += 1
        moved = f"{NOW - 50 * DAY + tries} +0000"
        git(
            repo,
            "commit",
            "-q",
            "--amend",
            "--no-edit",
            env={"GIT_AUTHOR_DATE": moved, "GIT_COMMITTER_DATE": moved},
        )
        asked = git(repo, "rev-parse", "HEAD").strip()
    for n in range(3):
        other = git(repo, "rev-parse", "HEAD").strip()
        commit(repo, f"Revert {other} what did it do", {f"r{n}.py": f"R = {n}\n"}, when=NOW - (40 - n) * DAY)
    run_cli("-C", str(repo), "sync", "--no-embed")
    for question in (asked, asked[:10], f"what did {asked[:7]} do?"):
        found = query_json(repo, question)
        refs = [item["ref"] for item in found["items"]]
        assert refs[:2] == [asked, f"{asked}:cache.py"], (question, refs)
        assert not found["weak"], question
    plain = query_json(repo, "what did it do?")
    unknown = query_json(repo, "what did 0000000 do?")
    assert asked not in [item["ref"] for item in unknown["items"][:2]]
    assert not any("sha" in note for note in unknown["notes"] + plain["notes"])


def test_a_failure_question_about_runs_that_all_passed_says_they_passed(repo: Path) -> None:
    """ "What failed last time I ran the tests" after a passing `make test` answered "No strong match" with
    old commits that say "tests"; "did make fail" with no failed `make` listed every recent failure (a `gcc`)
    under the generic note. Each is answered with the runs it names, newest first, and a note that none of
    them failed (the newest passed, exit 0)."""
    for days, subject in ((900, "fix tests for node 12"), (700, "make failing tests fail the build")):
        commit(repo, subject, {"test/node.test.js": f"// {subject}\n"}, when=NOW - days * DAY)
    write_recent(repo, "30 0 make\n20 1 gcc -o x nonexistent.c\n10 0 make test\n", now=NOW)
    run_cli("-C", str(repo), "sync", "--no-embed")
    found = query_json(repo, "what failed last time I ran the tests")
    titles = [it["title"] for it in found["items"]]
    assert titles[0] == "make test (exit 0)" and not found["weak"], titles
    assert any(n.startswith("no run of tests failed") and "exit 0" in n for n in found["notes"]), found[
        "notes"
    ]
    found = query_json(repo, "did make fail")
    titles = [it["title"] for it in found["items"]]
    assert titles[:2] == ["make test (exit 0)", "make (exit 0)"], titles
    assert "gcc -o x nonexistent.c (exit 1)" not in titles, titles
    assert any(n.startswith("no run of make failed") for n in found["notes"]), found["notes"]


def test_the_last_two_days_is_a_time_not_a_count_of_two(repo: Path) -> None:
    """ "What did I do in the last 2 days" listed two items: "last 2 days" was read as "the last 2" (a count,
    as in "show my last 3 commits") as well as a time."""
    commit(repo, "Add the parser", {"parser.py": "A = 1\n"}, when=NOW - 30 * DAY)
    commit(repo, "Teach the parser comments", {"parser.py": "A = 2\n"}, when=NOW - DAY)
    commit(repo, "Cache the parsed tree", {"cache.py": "B = 1\n"}, when=NOW - 3600)
    write_recent(repo, "90 1 pytest tests/test_cache.py\n30 0 git status\n20 0 make lint\n", now=NOW)
    run_cli("-C", str(repo), "sync", "--no-embed")
    titles = [it["title"] for it in query_json(repo, "what did I do in the last 2 days")["items"]]
    assert "Add the parser" not in titles and len(titles) == 5, titles
    assert [it["title"] for it in query_json(repo, "show my last 2 commits")["items"]] == [
        "Cache the parsed tree",
        "Teach the parser comments",
    ]


def test_which_tests_failed_today_when_only_yesterdays_failed_lists_todays_passing_runs(repo: Path) -> None:
    """A walkthrough found it: "which tests failed today" with none failed today but one yesterday answered
    by ranking (old commits that say "failing test"), not with today's runs and a note that none failed:
    a failure of the week before made the window look as if it had just missed one. A day asked for by name
    is the window meant."""
    if SINCE_MIDNIGHT < 1800:  # read when the test starts: at import it was minutes old
        pytest.skip("needs half an hour of today behind it")
    commit(repo, "Make the failing test fail the build", {"t.py": "A = 1\n"}, when=NOW - 400 * DAY)
    yesterday = SINCE_MIDNIGHT // 60 + 120  # two hours before today began (local)
    write_recent(repo, f"{yesterday} 1 make test\n10 0 make test\n", now=NOW)
    run_cli("-C", str(repo), "sync", "--no-embed")
    found = query_json(repo, "which tests failed today")
    titles = [it["title"] for it in found["items"]]
    assert titles[0] == "make test (exit 0)", titles
    assert any(n.startswith("no run of tests failed today") for n in found["notes"]), found["notes"]


def test_what_fixed_the_failing_test_lists_the_failures_memory_linked_to_their_fix(repo: Path) -> None:
    """After a failing `node --test test/impl/quarterOf.test.mjs`, an edit, a passing re-run and a commit, sync
    linked the failure to its retry and to the commit; "what fixed the failing test" still answered with old
    commits whose words say "fix" and "failing" ("make failing tests fail the build"), neither the failure
    nor its fix in the top 8. The newest linked failures come first, each with its fixes (the commit, the
    re-run), and a note; a question naming another test, or nothing linked, is ranked as before."""
    commit(repo, "make failing tests fail the build", {"package.json": "{}\n"}, when=NOW - 2000 * DAY)
    commit(
        repo,
        "fix the failing test of the parser",
        {"src/parse.mjs": "export const p = 1;\n"},
        when=NOW - 1500 * DAY,
    )
    commit(
        repo,
        "tests: skip the flaky test that keeps failing",
        {"test/flaky.test.mjs": "//\n"},
        when=NOW - 1200 * DAY,
    )
    commit(
        repo,
        "feat: quarterOf",
        {
            "src/impl/quarterOf.mjs": "export const q = (m) => m / 3;\n",
            "test/impl/quarterOf.test.mjs": "import test from 'node:test';\n",
        },
        when=NOW - 3 * 3600,
    )
    asked = ("what fixed the failing test", "what fixed the test that failed")
    run_cli("-C", str(repo), "sync", "--no-embed", "--link-failures")
    for question in asked:  # nothing linked yet: ranked as before
        assert not any(n.startswith("first:") for n in query_json(repo, question)["notes"]), question
    failed_at = (NOW - 2 * 3600) * 1000
    write_commands(repo, [(failed_at, "node --test test/impl/quarterOf.test.mjs", 1)])
    (repo / "src" / "impl" / "quarterOf.mjs").write_text("export const q = (m) => (m - 1) / 3 + 1;\n")
    write_commands(repo, [(failed_at + 300_000, "node --test test/impl/quarterOf.test.mjs", 0)])
    fix = commit(repo, "fix(quarterOf): months are 1-based", when=NOW - 2 * 3600 + 400)
    run_cli("-C", str(repo), "sync", "--no-embed", "--link-failures")
    for question in (
        *asked,
        "which commit fixed the failing quarterOf test",
        "how did I fix the broken test",
    ):
        found = query_json(repo, question)
        first = [(it["title"], it["ref"]) for it in found["items"][:3]]
        assert first == [
            ("node --test test/impl/quarterOf.test.mjs (exit 1)", "node --test test/impl/quarterOf.test.mjs"),
            ("fix(quarterOf): months are 1-based", fix),
            ("node --test test/impl/quarterOf.test.mjs (exit 0)", "node --test test/impl/quarterOf.test.mjs"),
        ], (question, first)
        assert any(n.startswith("first: the newest failure memory linked to its fix") for n in found["notes"])
    found = query_json(repo, "how did I fix the failing parser test")  # another test than the one linked
    assert found["items"][0]["title"] == "fix the failing test of the parser", found["items"][0]
    assert not any(n.startswith("first:") for n in found["notes"]), found["notes"]


def test_who_wrote_the_fix_of_a_name_is_not_asked_for_its_first_holder(repo: Path) -> None:
    """`query "who wrote the fix for the fallback adapter in PolymorphicJsonAdapterFactory"` (moshi) said
    "first change that holds PolymorphicJsonAdapterFactory: 89103b6d13" and put that 2018 rename first, over
    the 2025 fix "who fixed" found; PHPMailer's "who wrote the sendmail parameter fix" put the 2008 import
    first. "Wrote" with a fix (bug, broke, changed) asks about the later change, not the name's first."""
    factory = "public final class PolymorphicJsonAdapterFactory {\n  Object fallbackJsonAdapter;\n}\n"
    commit(repo, "Rename the polymorphic factory", {"src/Factory.java": factory}, when=NOW - 2000 * DAY)
    fixed = factory.replace("Object fallbackJsonAdapter;", "Object fallbackJsonAdapter = null; // fixed\n")
    fix = commit(
        repo,
        "Fix the fallback adapter of PolymorphicJsonAdapterFactory being ignored (#2056)",
        {"src/Factory.java": fixed},
        when=NOW - 20 * DAY,
    )
    titles, notes = synced_answer(
        repo, "who wrote the fix for the fallback adapter in PolymorphicJsonAdapterFactory"
    )
    assert not any(n.startswith("first change that holds") for n in notes), notes
    assert titles[0].startswith("Fix the fallback adapter"), titles
    assert origin_name("who wrote the sendmail parameter fix") is None
    assert origin_name("who wrote the PolymorphicJsonAdapterFactory class") == "PolymorphicJsonAdapterFactory"
    assert fix


@pytest.mark.parametrize("scope", ["one-project", "all-projects"])
def test_what_did_i_run_today_with_only_a_commit_today_lists_that_commit(repo: Path, scope: str) -> None:
    """`query "what did I run today"` after a commit made today (dateutil clone, no command logged) said "no
    commit or command recorded today", and --all-projects the same. The commit is listed, and the note says
    no command was recorded."""
    commit(repo, "Old work", {"a.py": "x = 1\n"}, when=NOW - 400 * DAY)
    today = commit(repo, "Edit the news today", {"NEWS": "today\n"}, when=NOW - min(SINCE_MIDNIGHT, 60))
    run_cli("-C", str(repo), "sync", "--no-embed")
    args = ["--all-projects"] if scope == "all-projects" else []
    found = query_json(repo, "what did I run today", *args)
    assert found["items"][0]["ref"] == today, [it["title"] for it in found["items"]]
    notes = " | ".join(found["notes"])
    assert "no commit or command recorded today" not in notes, notes
    assert "the newest commits today (no command recorded today)" in notes, notes


@pytest.mark.parametrize("budget", [60, 80, 100, 2000])
def test_the_still_in_the_code_note_stays_with_the_answer_at_any_budget(repo: Path, budget: int) -> None:
    """`query --budget 80 "when was ParserError removed"` (dateutil) printed only a 2020 docs commit: the
    "still in the code" note went to stderr, and the lone commit read as the removal. A note that changes
    what the items mean stays on stdout at any budget (shortened, or the item left out)."""
    code = "class ParserError(ValueError):\n    pass\n"
    commit(repo, "Add the parser", {"src/parser.py": code}, when=NOW - 900 * DAY)
    commit(repo, "Document parser errors", {"src/parser.py": '"""Errors."""\n' + code}, when=NOW - 300 * DAY)
    run_cli("-C", str(repo), "sync", "--no-embed")
    out = run_cli(
        "-C", str(repo), "query", "--budget", str(budget), "--", "when was ParserError removed"
    ).stdout
    assert "ParserError is still in the code" in out, out
    assert "no change removed it" in out, out


@pytest.mark.parametrize(
    "text",
    [
        "my tests mock open() and coverage blows up, was this fixed?",
        "coverage blew up when the tests mock open()",
        "why does the upload blow up on large files?",
        "the importer keeps blowing up on empty rows",
        "the build has blown up again",
        "the server crashes on startup",
        "the worker crashed overnight",
        "the parser keeps crashing on empty input",
        "cargo build errors out with E0599",
    ],
)
def test_every_inflection_of_a_failure_phrase_reads_as_a_failure_report(text: str) -> None:
    """'Blows up' reports a failure as 'blew up' does: the phrases count in every form of their verb."""
    assert prepare(text).failure, text


@pytest.mark.parametrize(
    "text",
    [
        "which change made parse_headers join folded lines?",
        "how do I blow away the cache?",
        "who wrote the fallback for old pythons?",
    ],
)
def test_a_question_that_only_shares_a_failure_phrase_s_first_word_is_no_failure_report(text: str) -> None:
    assert not prepare(text).failure, text


def test_a_member_name_has_a_first_holder_only_when_a_change_holds_it_whole(repo: Path) -> None:
    """ "What is pool.DEFAULTS for?" (connection_pool) said "first change that holds pool.DEFAULTS: f7463bb"
    of a change whose comment reads "number of connections to pool, defaults to 5": no change ever wrote
    `pool.DEFAULTS`, and DEFAULTS lives in lib/connection_pool.rb (no file or folder named pool). A member
    `a.B` is held whole where `a.B` is written, or where `B` is in a file or folder named `a`
    (`pool.SIZE_LIMIT` of `SIZE_LIMIT = 10` in pool.py)."""
    tidy_modules(repo)
    first = "class ConnectionPool\n  DEFAULTS = {size: 5}\nend\n"
    commit(repo, "Initial pass at a generic pool", {"lib/connection_pool.rb": first}, when=NOW - 800 * DAY)
    later = "class ConnectionPool\n  # - :size - number of connections to pool, defaults to 5\n  DEFAULTS = {size: 5, fork: true}\nend\n"
    commit(repo, "Drop connections after fork", {"lib/connection_pool.rb": later}, when=NOW - 500 * DAY)
    commit(repo, "Cap the connections", {"app/pool.py": "SIZE_LIMIT = 10\n"}, when=NOW - 400 * DAY)
    commit(repo, "Raise the cap", {"app/pool.py": "SIZE_LIMIT = 20\n"}, when=NOW - 300 * DAY)
    _titles, notes = synced_answer(repo, "what is pool.DEFAULTS for?")
    assert not any(n.startswith("first change that holds") for n in notes), notes
    assert not any(n.startswith("nothing in memory holds") for n in notes), notes
    capped = git(repo, "rev-parse", "HEAD~1").strip()[:10]
    _titles, notes = synced_answer(repo, "what is pool.SIZE_LIMIT for?")
    assert f"first change that holds pool.SIZE_LIMIT: {capped}" in notes, notes


_CONFIG_RST = """.. _config:

=======================
Configuration reference
=======================

Coverage.py options can be specified in a configuration file.  This makes it
easier to re-run coverage.py with consistent settings, and also allows for
specifying options that are otherwise only available in the API.

.. _config_run:

[run]
-----

These settings are generally used when running product code, though some apply
to more than one command.

.. _config_run_branch:

[run] branch
............

(boolean, default False) Whether to measure branch coverage in addition to
statement coverage.

.. _config_run_source:

[run] source
............

(multi-string, default None) A list of packages or directories, the source to
measure during execution.  If set, ``include`` is ignored.

.. _config_paths:

[paths]
-------

The entries in this section are lists of file paths that should be considered
equivalent when combining data from different machines::

    [paths]
    source =
        src/
        /jenkins/build/*/src

The names of the entries ("source" in this example) are ignored, you may choose
any name that you like.  The value is a list of strings.  When combining data
with the ``combine`` command, two file paths will be combined if they start with
paths from the same list.

.. _config_report:

[report]
--------

Settings common to many kinds of reporting.

.. _config_report_omit:

[report] omit
.............

(multi-string, default empty) A list of file name patterns, the files to leave
out of reporting.
"""
_CMD_RST = """.. _cmd:

==============================
Command line usage
==============================

.. _cmd_combine:

Combining data files: ``coverage combine``
------------------------------------------

Often test suites are run under different conditions, for example, with
different versions of Python, or dependencies, or on different operating
systems.  In these cases, you can collect coverage data for each test run, and
then combine all the separate data files into one combined file for reporting.

If the different machines run your code from different places in their file
systems, coverage.py won't know that the paths are the same.  You can tell
coverage.py how the different locations correlate with a ``[paths]`` setting
in your configuration file.  See :ref:`config_paths` for details.

.. _cmd_combine_remapping:

Re-mapping paths
................

To combine data for the same files measured in different places, the paths
must be re-mapped.  The paths setting lists equivalent paths; relative paths
are made absolute, and the first path of each list is where the paths end up.
Paths that match none of the patterns are left as they are.
"""
_SOURCE_RST = """.. _source:

=======================
Specifying source files
=======================

When coverage.py is running your program and measuring its execution, it needs
to know what code to measure and what code not to.

You can specify source paths to measure with the ``--source`` command-line
switch, or the ``[run] source`` configuration value.  The value is a list of
directories or importable names, paths or packages.

File paths
----------

The paths you give are matched against the absolute paths of files.  File
paths are compared after normalisation; paths with symlinks are resolved.
"""


@pytest.mark.parametrize("embed", [True, False], ids=["hybrid", "lexical"])
def test_a_bracketed_config_section_in_a_question_finds_the_section_headed_by_it(
    repo: Path, embed: bool
) -> None:
    """coverage.py's docs: "where is the [paths] setting documented?" put config.rst's "[paths]" fifth,
    under sections that say "paths" more often (the combine command's "Re-mapping paths", a
    migration guide): the brackets were dropped with the other
    punctuation, and "[paths]" was the word "paths" everywhere. A bracketed name is a configuration file's
    section: the doc section headed by it comes first."""
    commit(
        repo,
        "docs: configuration, command line and source pages",
        {"docs/config.rst": _CONFIG_RST, "docs/cmd.rst": _CMD_RST, "docs/source.rst": _SOURCE_RST},
        when=NOW - 400 * DAY,
    )
    for n in range(3):
        commit(repo, f"Fix paths handling when combining data files ({n})", {f"mod{n}.py": f"x = {n}\n"})
    for n, area in enumerate(
        ["parser", "tracer", "html report", "xml report", "json report", "debug output"] * 5
    ):
        commit(repo, f"Tidy the {area} code ({n})", {f"{area.split()[0]}.py": f"N = {n}\n"})
    run_cli("-C", str(repo), "sync", *([] if embed else ["--no-embed"]))
    titles = titles_for(repo, "where is the [paths] setting documented?")
    assert titles[0] == "docs/config.rst — [paths]", titles
    # Without the brackets it is the word, as before: the question does not name the section.
    assert topic("where is the paths setting documented?") is None
