"""Everyday debugging questions asked of a day's work: which tests failed (on a day nothing ran), what
failed today under a small budget, why I changed a function, how I fixed a failure. Real git repositories,
real stores, the CLI."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from nexusmem.retrieve.intent import asks_own_change, own_change_verb

from helpers import commit, git, run_cli, write_commands

MINUTE = 60_000
OTHER = {"GIT_AUTHOR_NAME": "Paul Other", "GIT_AUTHOR_EMAIL": "paul@other.org"}


def old_commit(repo: Path, message: str, files: dict[str, str], when: int) -> None:
    """A commit of someone else's, years ago (epoch WHEN)."""
    for name, content in files.items():
        path = repo / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content, encoding="utf-8")
    git(repo, "add", "-A")
    dated = {"GIT_AUTHOR_DATE": f"{when} +0000", "GIT_COMMITTER_DATE": f"{when} +0000"}
    git(repo, "commit", "-q", "-m", message, env={**OTHER, **dated})


def minutes_into_today() -> float:
    now = time.localtime()
    return now.tm_hour * 60 + now.tm_min


def easter_project(repo: Path, *, runs: bool = True) -> int:
    """A project with years of other people's commits on easter, then today's work of its git user: two
    failed test runs, `cd tests`, the fix commit, the passing re-run. Returns now (epoch ms)."""
    if minutes_into_today() < 90:
        pytest.skip("today's runs would fall on yesterday this close to midnight")
    git(repo, "config", "user.email", "me@example.com")
    git(repo, "config", "user.name", "Walk Me")
    old_commit(
        repo,
        "Add easter function",
        {
            "src/easter.py": "def easter(y):\n    return y\n",
            "tests/test_easter.py": "def test_easter(): pass\n",
        },
        1480000000,
    )
    old_commit(
        repo,
        "Change the easter docs",
        {"src/easter.py": "def easter(y):\n    '''Easter.'''\n    return y\n"},
        1500000000,
    )
    old_commit(
        repo,
        "Fix tests failing on change of tz",
        {"tests/test_easter.py": "def test_easter():\n    assert 1\n"},
        1510000000,
    )
    old_commit(
        repo,
        "Change easter function signature",
        {"src/easter.py": "def easter(year):\n    '''Easter.'''\n    return year\n"},
        1520000000,
    )
    cleaned = "def easter(year):\n    # Easter day.\n    return year\n"
    old_commit(repo, "Clean up easter documentation.", {"src/easter.py": cleaned}, 1530000000)
    old_commit(repo, "Fix Easter typos", {"src/easter.py": cleaned.replace("day", "Day")}, 1540000000)
    now = int(time.time() * 1000)
    write_commands(
        repo if runs else repo.parent / "elsewhere",
        [
            (now - 60 * MINUTE, "pytest tests/test_easter.py", 1, 900),
            (now - 50 * MINUTE, "pytest -k easter_western tests/test_easter.py", 1, 700),
            (now - 45 * MINUTE, "cd tests", 0, 1),
        ],
    )
    fixed = "def _paschal_weekday(y):\n    return y % 7\n\n\ndef easter(year):\n    '''Easter.'''\n    return year + _paschal_weekday(year)\n"
    commit(
        repo,
        "refactor(easter): extract _paschal_weekday helper",
        {"src/easter.py": fixed},
        when=(now - 40 * MINUTE) // 1000,
    )
    write_commands(
        repo if runs else repo.parent / "elsewhere",
        [(now - 39 * MINUTE, "pytest tests/test_easter.py", 0, 600)],
    )
    run_cli("-C", str(repo), "sync", "--no-embed", "--link-failures")
    return now


def ask(repo: Path, question: str, *extra: str) -> str:
    return str(run_cli("-C", str(repo), "query", *extra, "--", question).stdout)


@pytest.mark.parametrize(
    "question",
    [
        "which tests failed yesterday",
        "why did the tests fail yesterday",
        "what tests broke yesterday",
        "did the tests fail yesterday",
    ],
)
def test_which_tests_failed_on_a_day_nothing_ran_says_so(repo: Path, question: str) -> None:
    easter_project(repo)
    answer = ask(repo, question)
    assert "note: no recorded run of tests failed yesterday" in answer, answer


def test_which_tests_failed_today_still_lists_them_and_a_named_test_gets_no_such_note(repo: Path) -> None:
    easter_project(repo)
    today = ask(repo, "which tests failed today")
    assert "no recorded run" not in today
    assert today.index("pytest -k easter_western tests/test_easter.py (exit 1)") < today.index(
        "Fix tests failing"
    )
    named = ask(repo, "why did the test_easter_western test fail yesterday")
    assert "no recorded run" not in named


LONG = "python -m pytest tests/test_rrule.py tests/test_tz.py tests/test_parser.py tests/test_easter.py"
LONG += " tests/test_utils.py tests/test_relativedelta.py -q -o log_cli=true"


def test_what_failed_today_under_a_small_budget_keeps_newest_first_and_counts_the_rest(repo: Path) -> None:
    now = easter_project(repo)
    write_commands(
        repo,
        [
            (now - 30 * MINUTE, "python check_easter.py", 1, 10),
            (now - 20 * MINUTE, f"{LONG} --maxfail=3", 3, 1300),
            (now - 10 * MINUTE, f"{LONG} --maxfail=1 -p no:randomly", 1, 1300),
        ],
    )
    run_cli("-C", str(repo), "sync", "--no-embed", "--link-failures")
    newest_first = [
        ("test_rrule.py", "(exit 1)"),  # the long lines' titles are cut before their --maxfail
        ("test_rrule.py", "(exit 3)"),
        ("check_easter.py", "(exit 1)"),
        ("-k easter_western", "(exit 1)"),
        ("pytest tests/test_easter.py", "(exit 1)"),
    ]
    for budget in ("200", "260", "330", "400", "2000"):
        answer = ask(repo, "what failed today", "--budget", budget)
        failures = [
            line
            for line in answer.splitlines()
            if line.startswith("- ") and "(exit " in line and "linked as" not in line
        ]
        shown = [next(key for key in newest_first if key[0] in line and key[1] in line) for line in failures]
        assert shown == newest_first[: len(shown)], (budget, answer)  # no older failure skips ahead
        left = len(newest_first) - len(shown)
        if left:
            assert f"{left} older failure{'s' if left > 1 else ''} not shown: raise --budget" in answer, (
                answer
            )
        else:
            assert "not shown" not in answer


def commit_titles_in_order(answer: str) -> list[str]:
    return [
        line.split("] ", 1)[1].split("  --")[0]
        for line in answer.splitlines()
        if line.startswith("- ") and " by " in line
    ]


def test_why_did_i_change_a_function_prefers_my_own_commit_among_equal_matches(repo: Path) -> None:
    easter_project(repo, runs=False)  # no failure its fix rides beside
    mine = "refactor(easter): extract _paschal_weekday helper"
    for question in ("why did I change the easter function", "what did I do to easter"):
        answer = ask(repo, question)
        titles = commit_titles_in_order(answer)

        assert titles.index(mine) < titles.index("Fix Easter typos"), (question, titles)
        assert titles.index(mine) < titles.index("Clean up easter documentation."), (question, titles)
    # Another's change asked about: no preference (the git user is not "I" there).
    titles = commit_titles_in_order(ask(repo, "why did Paul change the easter function"))
    assert mine not in titles or titles.index(mine) > titles.index("Fix Easter typos"), titles


def test_why_did_i_change_is_about_the_thing_changed_not_the_word_change(repo: Path) -> None:
    """ "why did I change the easter function" answered first with 2018's "Change the order of params in
    rrule docstring" (its "change", and "function" and "byeaster" in its patch), above the asker's own
    easter commits: the verb that says only that something changed is no word of the question."""
    git(repo, "config", "user.email", "me@example.com")
    git(repo, "config", "user.name", "Walk Me")
    for n in range(20):  # years of other work: "function" is a common word here, "change" is not
        old_commit(
            repo, f"Add a helper function for tz parsing {n}", {f"src/tz{n}.py": f"N = {n}\n"}, 1400000000 + n
        )
    message = (
        "Change the order of params in rrule docstring\n\nThe documentation had cache and byeaster out of order"
        " from their appearance in the function's parameter list.\n\n- Added changelog for documentation change"
    )
    docstring = '    """:param byeaster: the offset from Easter Sunday."""\n'
    old_commit(
        repo, message, {"src/rrule.py": "def rrule(cache=False, byeaster=None):\n" + docstring}, 1524000000
    )
    body = "".join(f"    step_{k} = year // {k + 1}\n" for k in range(12))
    for n, message in enumerate(
        ("refactor(easter): simplify the weekday term", "fix(easter): restore the +2")
    ):
        source = (
            f"def easter(year, method=EASTER_WESTERN):\n{body}    j = (year + {n + 2}) % 7\n    return j\n"
        )
        commit(repo, message, {"src/dateutil/easter.py": source})
    run_cli("-C", str(repo), "sync", "--no-embed")
    titles = commit_titles_in_order(ask(repo, "why did I change the easter function"))
    assert titles[0].startswith(("refactor(easter)", "fix(easter)")), titles


def test_how_did_i_fix_a_failure_shows_the_fix_commits_patch_after_it(repo: Path) -> None:
    now = easter_project(repo)
    write_commands(
        repo, [(now - 55 * MINUTE, 'pytest -q "tests/test_easter.py::test_easter_western"', 1, 1000)]
    )
    for n in range(30):  # others' older easter work that shares the question's words
        old_commit(
            repo, f"Fix easter western failure case {n}", {f"src/easter_{n}.py": f"N = {n}\n"}, 1550000000 + n
        )
    run_cli("-C", str(repo), "sync", "--no-embed", "--link-failures")
    fix = git(repo, "log", "-1", "--format=%h", "--grep", "_paschal_weekday").strip()
    answer = ask(repo, "how did I fix the test_easter_western failure", "--budget", "800")
    lines = [line for line in answer.splitlines() if line.startswith("- ")]
    commit_at = next(i for i, line in enumerate(lines) if "linked as the fix (commit)" in line)
    patch = f"src/easter.py @ {fix}"
    assert any(patch in line for line in lines), answer
    patch_at = next(i for i, line in enumerate(lines) if patch in line)
    assert commit_at < patch_at <= commit_at + 2, answer  # right after the fix (and its passing re-run)
    assert "+def _paschal_weekday(y):" in answer


def _old_test_fixes(repo: Path) -> None:
    """Twelve commits of three years ago whose long messages say tests failed: matches enough to fill any
    budget, none of them yesterday's."""
    years_ago = int(time.time()) - 3 * 365 * 86_400
    for n in range(12):
        old_commit(
            repo,
            f"Fix the failing test of the easter rule {n}\n\n" + "The tests failed on a leap year. " * 20,
            {f"tests/test_rule{n}.py": f"def test_rule():\n    assert {n} == {n}\n"},
            when=years_ago + n * 86_400,
        )


@pytest.mark.parametrize("budget", ["50", "80", "300"])
def test_the_note_that_is_the_answer_is_kept_at_any_budget(repo: Path, budget: str) -> None:
    """`which tests failed yesterday --budget 50` said "the best match does not fit … 0 of 440 match(es)", and
    the note "no recorded run of tests failed yesterday", the answer, was gone (at 300 it was there)."""
    _old_test_fixes(repo)
    write_commands(repo, [(int(time.time() * 1000) - 5 * 86_400_000, "pytest tests", 1, 900)])
    run_cli("-C", str(repo), "sync", "--no-embed")
    result = run_cli("-C", str(repo), "query", "--budget", budget, "--", "which tests failed yesterday")
    assert "note: no recorded run of tests failed yesterday" in result.stdout, (result.stdout, result.stderr)
    tokens = int(result.stdout.rsplit("~", 1)[1].split("/", 1)[0])
    assert tokens <= int(budget), result.stdout


@pytest.mark.parametrize(
    ("text", "own", "verb"),
    [
        ("why did I change the easter function", True, "change"),
        ("what did we edit in the parser?", True, "edit"),
        ("why did I rename the foo option", True, None),  # a rename is what its commit says
        ("what did I do to easter", True, None),
        ("how do I change the template of the help text?", False, None),  # how to, not a change of mine
    ],
)
def test_a_question_about_my_own_change_and_the_verb_that_only_says_it_changed(
    text: str, own: bool, verb: str | None
) -> None:
    assert asks_own_change(text) is own
    assert own_change_verb(text) == verb


def yesterday_noon_ms() -> int:
    """Noon yesterday, local time (epoch ms)."""
    now = time.localtime()
    midnight = time.mktime((now.tm_year, now.tm_mon, now.tm_mday, 0, 0, 0, 0, 0, -1))
    return int((midnight - 12 * 3600) * 1000)


@pytest.mark.parametrize("budget", ["50", "80", "300"])
def test_a_day_whose_only_run_passed_says_so_on_stdout_at_any_budget(repo: Path, budget: str) -> None:
    """`which tests failed yesterday --budget 50` on a day that held one passing run (`pytest -q
    tests/test_rrule.py -k until`, exit 0) and no failure: stdout said "the best match (~34 tokens) does not
    fit the budget of 50" and "0 of 444 match(es) shown", the answer ("no run of tests failed yesterday") on
    stderr only."""
    _old_test_fixes(repo)
    write_commands(repo, [(yesterday_noon_ms(), "pytest -q tests/test_rrule.py -k until", 0, 900)])
    run_cli("-C", str(repo), "sync", "--no-embed")
    result = run_cli("-C", str(repo), "query", "--budget", budget, "--", "which tests failed yesterday")
    assert "no run of tests failed yesterday" in result.stdout, (result.stdout, result.stderr)
    assert "does not fit the budget" not in result.stdout, result.stdout
    tokens = int(result.stdout.rsplit("~", 1)[1].split("/", 1)[0])
    assert tokens <= int(budget), result.stdout
