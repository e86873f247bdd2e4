"""Dates written in a question about changes: a month, a year, a range or "last October" is the window its
commits are looked for in, as --since/--until would be, and the answer's header says so; a version or a
year in another sense is no window. Real git repositories, the real sync and `query` (text and --json)."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

from nexusmem.retrieve import timecue

from helpers import commit, query_json, run_cli


def _at(year: int, month: int, day: int) -> int:
    return int(datetime(year, month, day, 12, tzinfo=timezone.utc).timestamp())


def _last(month: int) -> int:
    """The year of the latest MONTH before this one (what "last October" names)."""
    today = datetime.now(timezone.utc).date()
    return today.year if month < today.month else today.year - 1


def _history(repo: Path) -> dict[str, str]:
    """Changes to the parser and the cache over five years; the newer ones share more of the questions'
    words than the ones made in the dates the questions write."""
    october = _last(10)
    return {
        "tabs": commit(
            repo, "parser: accept tabs between keys", {"parser.py": "T = 1\n"}, when=_at(2021, 3, 10)
        ),
        "parser_2023": commit(
            repo,
            "Change the parser again: we changed how the parser reads numbers",
            {"parser.py": "T = 2\n"},
            when=_at(2023, 6, 1),
        ),
        "crash": commit(
            repo,
            "Fix crash: reading empty input files broke",
            {"reader.py": "R = 1\n"},
            when=_at(2019, 5, 20),
        ),
        "broke_2022": commit(
            repo, "Fix what broke: the reader broke on BOMs", {"reader.py": "R = 2\n"}, when=_at(2022, 2, 2)
        ),
        "cache_old": commit(
            repo, "cache: evict stale entries first", {"cache.py": "C = 1\n"}, when=_at(october, 10, 15)
        ),
        "cache_new": commit(  # this month: after last October, whenever the test runs
            repo, "cache commits: the cache keeps the cache keys sorted", {"cache.py": "C = 2\n"}
        ),
        "edition": commit(
            repo, "Read the 2019 edition of the format", {"fmt.py": "F = 1\n"}, when=_at(2024, 4, 4)
        ),
    }


def test_a_month_a_range_or_last_october_written_in_a_question_is_its_window(repo: Path) -> None:
    """ "What did we change in the parser in March 2021?" answered with the newest parser changes first: the
    month read as a time cue made recency count from the newest commit, away from March 2021. The dates a
    question writes are the window its changes are looked for in (as --since/--until), and a note says so."""
    shas = _history(repo)
    run_cli("-C", str(repo), "sync", "--no-embed")
    asked = [
        ("what did we change in the parser in March 2021?", "tabs", "in March 2021"),
        ("what broke between 2019-05-01 and 2019-06-30", "crash", "between 2019-05-01 and 2019-06-30"),
        ("commits from last October about the cache", "cache_old", f"in October {_last(10)}"),
    ]
    for question, target, said in asked:
        found = query_json(repo, question)
        assert found["items"] and found["items"][0]["ref"] == shas[target], (question, found["items"][:3])
        note = f"first: changes made {said}"
        assert any(n.startswith(note) for n in found["notes"]), (question, found["notes"])
        text = run_cli("-C", str(repo), "query", "--", question).stdout
        assert f"note: {note}" in text.split("\n- ", 1)[0], text


def test_a_version_or_a_year_in_another_sense_is_no_window(repo: Path) -> None:
    """ "The 2019 edition", "Python 3.9", "since 2.0" write no dates: the answer has no window note, and what
    the words match comes first as before."""
    shas = _history(repo)
    run_cli("-C", str(repo), "sync", "--no-embed")
    for question in (
        "why do we read the 2019 edition of the format",
        "does the parser run on Python 3.9",
        "what changed in the parser since 2.0",
        "the parser breaks on files in 2019 edition format",
    ):
        found = query_json(repo, question)
        assert not any(n.startswith("first: changes made") for n in found["notes"]), (
            question,
            found["notes"],
        )
    found = query_json(repo, "why do we read the 2019 edition of the format")
    assert found["items"][0]["ref"] == shas["edition"], found["items"][:3]
    assert timecue.asked_dates("the last may be wrong") is None
    assert timecue.asked_dates("on 2017-10-15 the clocks jump") is None  # a day: the question's data as often


def test_a_window_with_nothing_in_it_says_so(repo: Path) -> None:
    """ "What did we change in March 2021" on a history with no commit that month answered "No strong match"
    then May and July 2021 and 2007 commits, with no word that March 2021 had none (May 2021 was introduced
    as "first: changes made in …"). The answer says so first, in text, --json notes and MCP alike."""
    commit(repo, "Add the date parser", {"parser.py": "P = 1\n"}, when=_at(2007, 1, 5))
    commit(repo, "Teach the parser ISO weeks", {"parser.py": "P = 2\n"}, when=_at(2021, 5, 3))
    commit(repo, "Change how the parser reads time zones", {"parser.py": "P = 3\n"}, when=_at(2021, 7, 9))
    run_cli("-C", str(repo), "sync", "--no-embed")
    for question in ("what did we change in March 2021", "what did we change in the parser in March 2021?"):
        found = query_json(repo, question)
        assert (
            "no change recorded in March 2021; the nearest by date follow, closest first" in found["notes"]
        ), found["notes"]
        assert not any(n.startswith("first: changes made") for n in found["notes"]), found["notes"]
        text = run_cli("-C", str(repo), "query", "--", question).stdout
        assert "note: no change recorded in March 2021; the nearest by date follow" in text, text
    # A month with changes that do not match the question's words says that instead.
    found = query_json(repo, "what did we change in the cache in May 2021")
    assert any(n.startswith("first: changes made in May 2021") for n in found["notes"]) or any(
        n.startswith("nothing recorded in May 2021 matches") for n in found["notes"]
    ), found["notes"]


def test_a_window_with_nothing_in_it_lists_the_changes_nearest_to_it(repo: Path) -> None:
    """ "What did we change in March 2021" with no commit that month (dateutil): "no change recorded in March
    2021; the nearest follow" sat under "No strong match: …", above 2021-05-16, 2021-07-02, 2021-05-21…,
    while 2021-02-19 (ten days before March) and 2021-05-03 were there. The nearest by date come first, before
    and after, closest first, under no "No strong match"."""
    shas = {
        "2007": commit(repo, "Add the date parser", {"parser.py": "P = 1\n"}, when=_at(2007, 1, 5)),
        "feb": commit(repo, "Fix a typo in the docs", {"README": "r\n"}, when=_at(2021, 2, 19)),
        "may3": commit(repo, "Bump the version", {"VERSION": "2\n"}, when=_at(2021, 5, 3)),
        "may16": commit(
            repo, "Change what we change in the parser", {"parser.py": "P = 2\n"}, when=_at(2021, 5, 16)
        ),
        "may21": commit(repo, "We change the parser again", {"parser.py": "P = 3\n"}, when=_at(2021, 5, 21)),
        "jul": commit(
            repo, "Change how the parser reads time zones", {"parser.py": "P = 4\n"}, when=_at(2021, 7, 2)
        ),
    }
    run_cli("-C", str(repo), "sync", "--no-embed")
    question = "what did we change in March 2021"
    found = query_json(repo, question)
    refs = [item["ref"] for item in found["items"] if item["kind"] == "git_commit"]
    assert refs[:3] == [shas["feb"], shas["may3"], shas["may16"]], (refs, shas)
    assert found["weak"] is False, found
    text = run_cli("-C", str(repo), "query", "--", question).stdout
    assert "No strong match" not in text, text
    assert text.index("no change recorded in March 2021") < text.index("Fix a typo in the docs"), text
    # The question's other words choose among them: the parser's changes, nearest first.
    found = query_json(repo, "what did we change in the parser in March 2021")
    refs = [item["ref"] for item in found["items"] if item["kind"] == "git_commit"]
    assert refs[:3] == [shas["may16"], shas["may21"], shas["jul"]], (refs, shas)
