"""Failure → fix linking rules on hand-made nodes: retry, commit, discussion, idempotence, incremental runs."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from nexusmem import link
from nexusmem.link import DAY_MS, LinkSummary, link_failures, link_recent, significant_words
from nexusmem.nodes import Node
from nexusmem.paths import shell_log_path
from nexusmem.store import Store, open_store

from helpers import (
    commit,
    commit_node,
    git,
    init_repo,
    query_json,
    run_cli,
    shell_node,
    store_nodes,
    turn_node,
    write_commands,
)
from helpers.nodes import conversation_turn

T0 = 1_700_000_000_000
HOUR = 60 * 60 * 1000


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    with open_store(tmp_path / "memory.db", create=True) as s:
        yield s


def add(store: Store, *nodes: Node) -> None:
    store_nodes(store, nodes)


def run(store: Store, since_ms: int | None = None) -> LinkSummary:
    with store.transaction():
        return link_failures(store, since_ms=since_ms)


def links(store: Store) -> set[tuple[str, str, str]]:
    return set(store.conn.execute("SELECT from_id, to_id, relation FROM links").fetchall())


# ------------------------------------------------------------------------------------------- retry


def test_retry_links_the_same_command_that_later_passed(store: Store) -> None:
    fail, ok = (
        shell_node("pytest tests/test_cache.py", T0),
        shell_node("pytest tests/test_cache.py", T0 + HOUR, 0),
    )
    add(store, fail, ok)
    summary = run(store)
    assert links(store) == {(fail.id, ok.id, "retry")}
    assert (summary.failures, summary.retry, summary.commit, summary.discussion) == (1, 1, 0, 0)
    assert (summary.added, summary.removed) == (1, 0)


def test_retry_window_is_24_hours_inclusive(store: Store) -> None:
    on_edge = shell_node("make a", T0), shell_node("make a", T0 + DAY_MS, 0)
    past_edge = shell_node("make b", T0), shell_node("make b", T0 + DAY_MS + 1, 0)
    add(store, *on_edge, *past_edge)
    run(store)
    assert links(store) == {(on_edge[0].id, on_edge[1].id, "retry")}


def test_retry_needs_the_same_cwd(store: Store) -> None:
    fail = shell_node("npm test", T0, cwd="web")
    elsewhere = shell_node("npm test", T0 + HOUR, 0, cwd="api")
    here = shell_node("npm test", T0 + 2 * HOUR, 0, cwd="web")
    add(store, fail, elsewhere, here)
    run(store)
    assert links(store) == {(fail.id, here.id, "retry")}


def test_retry_text_is_whitespace_normalised_but_otherwise_exact(store: Store) -> None:
    fail = shell_node("pytest   tests/test_x.py\t-q ", T0)
    other = shell_node("pytest tests/test_x.py -x", T0 + HOUR, 0)
    same = shell_node(" pytest tests/test_x.py -q", T0 + 2 * HOUR, 0)
    add(store, fail, other, same)
    run(store)
    assert links(store) == {(fail.id, same.id, "retry")}
    assert link.normalise("  a \n b\t c ") == "a b c"


def test_retry_leaves_out_read_all_filters_and_output_redirections_on_both_sides(store: Store) -> None:
    fail = shell_node("npm test 2>&1 | tee /tmp/npm.log", T0)  # stored failing: the hook read its pipestatus
    grepped = shell_node("npm test | grep -v warn", T0 + HOUR, 0)  # another program's output: another command
    other = shell_node("npm run lint | tee /tmp/npm.log", T0 + 2 * HOUR, 0)
    plain = shell_node("npm test", T0 + 3 * HOUR, 0)
    again = shell_node("npm test | tail -3", T0 + 4 * HOUR)
    to_file = shell_node("npm test > out.txt", T0 + 5 * HOUR, 0)
    add(store, fail, grepped, other, plain, again, to_file)
    run(store)
    assert links(store) == {(fail.id, plain.id, "retry"), (again.id, to_file.id, "retry")}
    assert link.normalise("make test |& tee -a log") == "make test"
    assert link.normalise("make test | tee log") != link.normalise("make lint")
    assert link.normalise('echo "a | tee b"') == 'echo "a | tee b"'  # a quoted bar is no pipe
    assert link.normalise('pytest | tee "$LOG"') == 'pytest | tee "$LOG"'
    assert (
        link.normalise("pytest | head -3") == "pytest | head -3"
    )  # head stops reading: its status says nothing


def test_retry_is_the_first_later_success(store: Store) -> None:
    before = shell_node("cargo build", T0 - HOUR, 0)
    fail = shell_node("cargo build", T0)
    first, second = shell_node("cargo build", T0 + HOUR, 0), shell_node("cargo build", T0 + 2 * HOUR, 0)
    add(store, second, before, fail, first)  # insertion order must not matter, only time
    run(store)
    assert links(store) == {(fail.id, first.id, "retry")}


def test_every_failure_before_a_success_links_to_it(store: Store) -> None:
    f1, f2 = shell_node("make lint", T0), shell_node("make lint", T0 + HOUR, 2)
    ok = shell_node("make lint", T0 + 2 * HOUR, 0)
    again = shell_node("make lint", T0 + 3 * HOUR)  # failed again after the success: nothing fixed it yet
    add(store, f1, f2, ok, again)
    summary = run(store)
    assert links(store) == {(f1.id, ok.id, "retry"), (f2.id, ok.id, "retry")}
    assert summary.failures == 3


def test_success_in_the_same_millisecond_is_not_later(store: Store) -> None:
    fail, same_ms, later = (
        shell_node("go test", T0),
        shell_node("go test", T0, 0),
        shell_node("go test", T0 + 5, 0),
    )
    add(store, fail, same_ms, later)
    run(store)
    assert links(store) == {(fail.id, later.id, "retry")}


def test_unknown_exit_is_neither_a_failure_nor_a_fix(store: Store) -> None:
    scraped_fail = shell_node("make", T0, exit_code=None, cwd=None)
    fail = shell_node("make", T0 + HOUR)
    unknown = shell_node("make", T0 + 2 * HOUR, exit_code=None)
    ok = shell_node("make", T0 + 3 * HOUR, 0)
    add(store, scraped_fail, fail, unknown, ok)
    summary = run(store)
    assert summary.failures == 1
    assert links(store) == {(fail.id, ok.id, "retry")}


# ------------------------------------------------------------------------------------------ commit


def test_commit_touching_a_named_file_after_the_failure(store: Store) -> None:
    fail = shell_node("ruff check src/app.py", T0, files=("src/app.py",))
    earlier = commit_node(T0 - HOUR, "src/app.py")
    unrelated = commit_node(T0 + HOUR, "README.md")
    fix = commit_node(T0 + 2 * HOUR, "src/app.py", "src/other.py")
    later = commit_node(T0 + 3 * HOUR, "src/app.py")
    add(store, fail, earlier, unrelated, fix, later)
    summary = run(store)
    assert links(store) == {(fail.id, fix.id, "commit")}
    assert summary.commit == 1


def test_commit_window_is_24_hours(store: Store) -> None:
    in_time = shell_node("mypy src/a.py", T0, files=("src/a.py",))
    too_late = shell_node("mypy src/b.py", T0, files=("src/b.py",))
    c_in, c_late = commit_node(T0 + DAY_MS, "src/a.py"), commit_node(T0 + DAY_MS + 1, "src/b.py")
    add(store, in_time, too_late, c_in, c_late)
    run(store)
    assert links(store) == {(in_time.id, c_in.id, "commit")}


def test_commit_after_the_passing_retry_records_the_fix(store: Store) -> None:
    # The everyday flow: it fails, the file is edited, it passes, then the edit is committed.
    fail = shell_node("pytest tests/t.py", T0, files=("tests/t.py",))
    ok = shell_node("pytest tests/t.py", T0 + HOUR, 0, files=("tests/t.py",))
    after = commit_node(T0 + 2 * HOUR, "tests/t.py")
    add(store, fail, ok, after)
    run(store)
    assert links(store) == {(fail.id, ok.id, "retry"), (fail.id, after.id, "commit")}


def test_a_commit_after_the_command_failed_again_answers_that_failure(store: Store) -> None:
    first = shell_node("pytest tests/t.py", T0, files=("tests/t.py",))
    ok = shell_node("pytest tests/t.py", T0 + HOUR, 0, files=("tests/t.py",))
    again = shell_node("pytest  tests/t.py", T0 + 2 * HOUR, files=("tests/t.py",))
    elsewhere = shell_node("pytest tests/t.py", T0 + 2 * HOUR + 1, cwd="/other", files=("tests/t.py",))
    fix = commit_node(T0 + 3 * HOUR, "tests/t.py")
    add(store, first, ok, again, elsewhere, fix)
    run(store)
    assert links(store) == {
        (first.id, ok.id, "retry"),
        (again.id, fix.id, "commit"),
        (elsewhere.id, fix.id, "commit"),  # another directory's failure never passed: the commit is its fix
    }


def test_a_failing_test_links_the_commit_to_the_code_it_tests(store: Store) -> None:
    cases = [
        ("tests/test_cache.py", "src/pkg/cache.py"),
        ("internal/cache_test.go", "internal/cache.go"),
        ("web/Button.test.ts", "web/components/Button.tsx"),
        ("spec/cache_spec.rb", "lib/cache.rb"),
        ("src/test/java/CacheTest.java", "src/main/java/Cache.java"),
    ]
    expected = set()
    for i, (test, code) in enumerate(cases):
        fail = shell_node(f"run {test}", T0 + i, files=(test,))
        fix = commit_node(T0 + HOUR + i, code)
        add(store, fail, fix)
        expected.add((fail.id, fix.id, "commit"))
    run(store)
    assert links(store) == expected


def test_a_tested_file_of_a_name_several_packages_share_or_of_another_service_is_no_subject(
    store: Store,
) -> None:
    # tests/test_utils.py with pkg_a/utils.py and pkg_b/utils.py in the repository: which one it tests is
    # not known, and a commit renaming a helper in pkg_b is no fix of it.
    known = commit_node(T0 - 30 * DAY_MS, "pkg_a/utils.py")
    utils = shell_node("pytest tests/test_utils.py", T0, files=("tests/test_utils.py",))
    other_pkg = commit_node(T0 + HOUR, "pkg_b/utils.py")
    # In a monorepo, services/api's failing test does not test services/web's views.py.
    api = shell_node(
        "pytest tests/test_views.py", T0, cwd="services/api", files=("services/api/tests/test_views.py",)
    )
    web_fix = commit_node(T0 + HOUR, "services/web/views.py")
    add(store, known, utils, other_pkg, api, web_fix)
    run(store)
    assert links(store) == set()


def test_a_tested_name_is_matched_with_its_case(store: Store) -> None:
    # src/store/modal.js is not src/components/Modal.js (SQLite's LIKE ignores case; file names do not).
    add(store, commit_node(T0 - DAY_MS, "src/store/modal.js"))
    fail = shell_node("npx jest", T0, files=("src/__tests__/Modal.test.js",))
    fix = commit_node(T0 + HOUR, "src/components/Modal.js")
    # A name that differs only in case, and only once: button.test.tsx tests Button.tsx.
    lower = shell_node("npx jest button", T0, files=("web/__tests__/button.test.tsx",))
    button = commit_node(T0 + HOUR, "web/components/Button.tsx")
    # Also at the repository's root: tests/test_app.py tests App.py (the root path was matched only exactly).
    app = shell_node("pytest tests/test_app.py", T0, files=("tests/test_app.py",))
    app_fix = commit_node(T0 + HOUR, "App.py")
    add(store, fail, fix, lower, button, app, app_fix)
    run(store)
    assert links(store) == {
        (fail.id, fix.id, "commit"),
        (lower.id, button.id, "commit"),
        (app.id, app_fix.id, "commit"),
    }


def test_a_tested_name_ignores_tests_and_files_deleted_since(store: Store) -> None:
    # dotenv: tests/main.test.js tests lib/main.js; test/main.js (a test, deleted in 2016) shares the name.
    add(store, commit_node(T0 - 3000 * DAY_MS, "test/main.js"))
    fail = shell_node("node tests/main.test.js", T0, files=("tests/main.test.js",))
    fix = commit_node(T0 + HOUR, "lib/main.js")
    # A file of that name deleted since (the structure pass holds only src/app/cache.py) is no candidate
    # either, when that pass reads its language.
    add(store, commit_node(T0 - 900 * DAY_MS, "old/cache.py"))
    with store.transaction():
        store.save_import_files([("src/app/cache.py", "b1", []), ("tests/test_cache.py", "b2", [])], [])
    cache = shell_node("pytest tests/test_cache.py", T0, files=("tests/test_cache.py",))
    cache_fix = commit_node(T0 + HOUR + 1, "src/app/cache.py")
    add(store, fail, fix, cache, cache_fix)
    run(store)
    assert links(store) == {(fail.id, fix.id, "commit"), (cache.id, cache_fix.id, "commit")}


def test_a_commit_long_after_the_passing_rerun_is_not_its_fix(store: Store) -> None:
    # A flaky test: it failed, passed a minute later with nothing changed, and hours later a feature landed.
    fail = shell_node("pytest tests/test_db.py", T0, files=("tests/test_db.py",))
    ok = shell_node("pytest tests/test_db.py", T0 + 60_000, 0, files=("tests/test_db.py",))
    feature = commit_node(T0 + 3 * HOUR, "src/db.py")
    add(store, commit_node(T0 - DAY_MS, "src/db.py"), fail, ok, feature)
    run(store)
    assert links(store) == {(fail.id, ok.id, "retry")}


def test_only_a_test_file_reaches_a_file_of_another_name(store: Store) -> None:
    fail = shell_node("ruff check src/cache.py", T0, files=("src/cache.py",))
    same_name = commit_node(T0 + HOUR, "lib/cache.py")  # a namesake, not what the command checks
    contest = shell_node("pytest tests/contest.py", T0, files=("tests/contest.py",))
    namesake = commit_node(T0 + HOUR, "src/con.py")  # "contest" is no test of "con"
    add(store, fail, same_name, contest, namesake)
    run(store)
    assert links(store) == set()


def test_commit_before_the_retry_links_as_well(store: Store) -> None:
    fail = shell_node("pytest tests/t.py", T0, files=("tests/t.py",))
    fix = commit_node(T0 + HOUR, "tests/t.py")
    ok = shell_node("pytest tests/t.py", T0 + 2 * HOUR, 0, files=("tests/t.py",))
    add(store, fail, fix, ok)
    run(store)
    assert links(store) == {(fail.id, ok.id, "retry"), (fail.id, fix.id, "commit")}


def test_commit_under_a_named_directory_counts(store: Store) -> None:
    fail = shell_node("ruff check src/cache", T0, files=("src/cache",))
    sibling = commit_node(T0 + HOUR, "src/cachex/a.py")  # a prefix of the name is not the directory
    fix = commit_node(T0 + 2 * HOUR, "src/cache/lru.py", "src/cache/disk.py")
    add(store, fail, sibling, fix)
    run(store)
    assert links(store) == {(fail.id, fix.id, "commit")}


def test_first_commit_over_all_named_files(store: Store) -> None:
    fail = shell_node("pytest tests/a.py tests/b.py", T0, files=("tests/a.py", "tests/b.py"))
    on_b = commit_node(T0 + HOUR, "tests/b.py")
    on_a = commit_node(T0 + 2 * HOUR, "tests/a.py")
    add(store, fail, on_a, on_b)
    run(store)
    assert links(store) == {(fail.id, on_b.id, "commit")}


def test_a_commit_authored_before_the_runs_window_but_made_in_it_is_found(store: Store) -> None:
    # An amend of a two-day-old commit: its ts (author time) is before any incremental run's window.
    fail = shell_node("ruff check src/a.py", T0, files=("src/a.py",))
    amended = commit_node(T0 - 2 * DAY_MS, "src/a.py", committed=T0 + HOUR)
    add(store, fail, amended)
    run(store, since_ms=T0 - HOUR)
    assert links(store) == {(fail.id, amended.id, "commit")}
    run(store)
    assert links(store) == {(fail.id, amended.id, "commit")}


def test_successful_command_gets_no_commit_link(store: Store) -> None:
    ok = shell_node("ruff check src/app.py", T0, 0, files=("src/app.py",))
    add(store, ok, commit_node(T0 + HOUR, "src/app.py"))
    assert run(store).failures == 0
    assert links(store) == set()


# -------------------------------------------------------------------------------------- discussion


def test_significant_words_drop_launchers_stopwords_extensions_and_placeholders() -> None:
    assert significant_words("npm whoami") == ["whoami"]
    assert significant_words("python -m pytest tests/test_cache.py") == ["pytest", "tests", "test_cache"]
    assert significant_words("curl -H «redacted:bearer» https://api.example.com/v1") == [
        "curl",
        "api",
        "example",
        "com",
        "v1",
    ]
    assert significant_words("make") == []
    assert significant_words("npm run") == []


def test_discussion_needs_every_significant_word(store: Store) -> None:
    fail = shell_node("npm whoami", T0)
    generic = turn_node(T0 + HOUR, "npm is broken again, try npm ci")  # only the generic word
    partial = turn_node(T0 + HOUR, "whoami")  # every significant word, poorly
    good = turn_node(T0 + 2 * HOUR, "npm whoami fails with E401: run npm login first, whoami needs a token")
    add(store, fail, generic, partial, good)
    run(store)
    # Both remaining turns contain "whoami"; BM25 prefers the one that says it twice.
    got = links(store)
    assert len(got) == 1
    ((src, dst, rel),) = got
    assert (src, rel) == (fail.id, "discussion")
    assert dst in {partial.id, good.id}


def test_discussion_rejects_a_turn_missing_one_word(store: Store) -> None:
    fail = shell_node("pytest tests/test_cache.py", T0)
    missing = turn_node(T0 + HOUR, "pytest keeps failing in tests/test_auth.py")
    add(store, fail, missing)
    run(store)
    assert links(store) == set()
    good = turn_node(T0 + 2 * HOUR, "pytest tests/test_cache.py fails because the cache dir is stale")
    add(store, good)
    run(store)
    assert links(store) == {(fail.id, good.id, "discussion")}


def test_discussion_window_is_24_hours_either_side(store: Store) -> None:
    fail = shell_node("terraform plan", T0)
    before = turn_node(T0 - DAY_MS, "terraform plan failed: provider lock is stale", kind="session_summary")
    too_early = turn_node(T0 - DAY_MS - 1, "terraform plan failed: provider lock is stale again")
    too_late = turn_node(T0 + DAY_MS + 1, "terraform plan failed: provider lock is stale, still")
    add(store, fail, before, too_early, too_late)
    run(store)
    assert links(store) == {(fail.id, before.id, "discussion")}


def test_command_of_only_generic_words_gets_no_discussion(store: Store) -> None:
    fail = shell_node("npm run", T0)
    add(store, fail, turn_node(T0 + HOUR, "npm run prints the scripts"))
    run(store)
    assert links(store) == set()


MINUTE = 60_000


def _ran(command: str, code: int = 1) -> str:
    return f"\n\nCommands run:\n$ {command} (exit {code})"


def test_the_turn_a_failure_ran_in_beats_another_sessions_short_turn(store: Store) -> None:
    """The best full-text hit of ±24 h was a short turn of another session: it, not the turn the agent's
    call ran in (long, listing the call), was linked."""
    fail = shell_node("pytest tests/test_router.py -k wildcard", T0, session="sess-a")
    ran_in = conversation_turn(
        "sess-a",
        0,
        "test_router fails: the wildcard filter raises KeyError 'path' after my refactor of Router.add",
        "The builder still looks up 'path' though the filter table renamed it to 'wild'; I restored the key."
        + _ran("pytest tests/test_router.py -k wildcard"),
        ts=T0 - MINUTE,
    )
    short = conversation_turn("sess-b", 0, "pytest tests/test_router.py -k wildcard", "ok", ts=T0 + HOUR)
    add(store, fail, ran_in, short)
    run(store)
    assert links(store) == {(fail.id, ran_in.id, "discussion")}


def test_a_turn_of_its_session_that_says_nothing_of_it_is_passed_for_the_next_that_does(store: Store) -> None:
    fail = shell_node("make lint-quartz", T0, session="sess-a")
    earlier = conversation_turn("sess-a", 0, "what does the quartz linter check?", "Tabs.", ts=T0 - HOUR)
    ran_in = conversation_turn(
        "sess-a", 1, "run the checks before the release", "Running them." + _ran("make lint-quartz", 2), ts=T0
    )
    reply = conversation_turn(
        "sess-a", 2, "lint-quartz failed, why?", "The quartz rules reject tabs.", ts=T0 + MINUTE
    )
    add(store, fail, earlier, ran_in, reply)
    run(store)
    assert links(store) == {(fail.id, reply.id, "discussion")}  # not the turn before it ran


def test_the_agent_hooks_start_time_a_moment_before_its_turn_still_finds_that_turn(store: Store) -> None:
    """The agent hook records a call at its end less its duration: a moment before the turn it ran in began,
    when the duration is off. The turn that lists it is still the one it ran in, not the one before."""
    fail = shell_node("make docs", T0, session="sess-a")
    before = conversation_turn("sess-a", 0, "the docs need a page on routing", "Added.", ts=T0 - HOUR)
    ran_in = conversation_turn(
        "sess-a",
        1,
        "the CI build of the docs fails; what should we do?",
        "Pin sphinx." + _ran("make docs"),
        ts=T0 + 900,
    )
    add(store, fail, before, ran_in)
    run(store)
    assert links(store) == {(fail.id, ran_in.id, "discussion")}


def test_another_sessions_turn_must_name_the_command_not_only_its_one_word(store: Store) -> None:
    """`make docs` was linked to "fix the giraffe section of the routing docs", another session's: "docs"
    was its every significant word. A turn of another session is linked when it names the command."""
    fail = shell_node("make docs", T0, session="sess-a")
    giraffe = conversation_turn(
        "sess-b", 0, "fix the giraffe section of the routing docs", "Fixed.", ts=T0 + MINUTE
    )
    add(store, fail, giraffe)
    run(store)
    assert links(store) == set()
    about = conversation_turn(
        "sess-c", 0, "why does `make docs` fail on CI?", "Sphinx 7.3 made a warning an error.", ts=T0 + HOUR
    )
    add(store, about)
    run(store)
    assert links(store) == {(fail.id, about.id, "discussion")}


@pytest.mark.parametrize(
    "command",
    [
        "time -p make docs",
        "nice -n 10 make docs",
        "doas make docs",
        "env -i make docs",
        "sudo -u deploy make docs",
        "nohup make docs",
        "( make docs )",
    ],
)
def test_a_launched_command_is_discussed_by_its_own_name(store: Store, command: str) -> None:
    """The words that only launch a command (sources.shell.launchers) are neither its program nor a word a
    discussion must name: `time -p make docs` had no program (`-p` was taken for it) and `nice -n 10 make
    docs` required "nice" and "10", so "why does `make docs` fail on CI?" was linked to `make docs` and
    `time make docs` but to none of these."""
    fail = shell_node(command, T0, session="sess-a")
    about = conversation_turn(
        "sess-c", 0, "why does `make docs` fail on CI?", "Sphinx 7.3 made a warning an error.", ts=T0 + HOUR
    )
    add(store, fail, about)
    run(store)
    assert links(store) == {(fail.id, about.id, "discussion")}


def test_a_command_listed_by_a_turn_of_another_session_is_not_its_discussion(store: Store) -> None:
    """The words must be the turn's own, not only those of the commands it lists."""
    fail = shell_node("pytest tests/test_parser.py", T0, session="terminal-1")
    lists = conversation_turn(
        "sess-b", 0, "tidy the README", "Done." + _ran("pytest tests/test_parser.py", 0), ts=T0 + MINUTE
    )
    add(store, fail, lists)
    run(store)
    assert links(store) == set()


def test_a_bare_program_is_discussed_only_in_its_own_session(store: Store) -> None:
    fail = shell_node("pytest -x", T0, session="sess-a")
    elsewhere = turn_node(T0 + MINUTE, "pytest -x fails on the CI runner")  # no session
    add(store, fail, elsewhere)
    run(store)
    assert links(store) == set()
    ran_in = conversation_turn(
        "sess-a", 0, "run pytest and fix what fails", "Two tests fail." + _ran("pytest -x"), ts=T0
    )
    add(store, ran_in)
    run(store)
    assert links(store) == {(fail.id, ran_in.id, "discussion")}


def test_subject_words_leave_out_the_program() -> None:
    assert link.subject_words("python -m pytest tests/test_cache.py -q") == ["tests", "test_cache"]
    assert link.subject_words("sudo terraform plan") == ["plan"]
    assert link.subject_words("make docs") == ["docs"]
    assert link.subject_words("npx eslint src/app") == ["src", "app"]
    assert link.subject_words("pytest -x") == ["pytest"]
    assert link.subject_words("./scripts/deploy.sh") == ["scripts", "deploy"]
    assert link.subject_words("sudo -u deploy terraform plan") == ["plan"]
    assert link.subject_words("nice -n 10 pytest tests/test_cache.py") == ["tests", "test_cache"]
    assert link.subject_words("CI=1 pytest tests/test_cache.py") == ["ci", "tests", "test_cache"]


def test_one_failure_can_have_all_three_links(store: Store) -> None:
    fail = shell_node("pytest tests/t.py", T0, files=("tests/t.py",))
    fix = commit_node(T0 + HOUR, "tests/t.py")
    ok = shell_node("pytest tests/t.py", T0 + 2 * HOUR, 0)
    talk = turn_node(T0 + 30 * 60_000, "why does pytest tests/t.py fail? the fixture was renamed")
    add(store, fail, fix, ok, talk)
    summary = run(store)
    assert links(store) == {
        (fail.id, ok.id, "retry"),
        (fail.id, fix.id, "commit"),
        (fail.id, talk.id, "discussion"),
    }
    assert summary.links == 3


# ------------------------------------------------------------------------ idempotence, incremental


def test_second_run_changes_nothing(store: Store) -> None:
    fail = shell_node("make test", T0, files=("Makefile",))
    add(store, fail, shell_node("make test", T0 + HOUR, 0), commit_node(T0 + 60_000, "Makefile"))
    first = run(store)
    before = store.conn.execute("SELECT * FROM links ORDER BY 1, 2, 3").fetchall()
    second = run(store)
    assert (first.added, second.added, second.removed) == (2, 0, 0)
    assert (second.retry, second.commit) == (1, 1)
    assert store.conn.execute("SELECT * FROM links ORDER BY 1, 2, 3").fetchall() == before


def test_a_link_the_rules_no_longer_give_is_removed(store: Store) -> None:
    fail = shell_node("make test", T0)
    late_ok = shell_node("make test", T0 + 3 * HOUR, 0)
    add(store, fail, late_ok)
    run(store)
    # A line recorded late (another machine's log, say) shows an earlier success: that one is the retry.
    early_ok = shell_node("make test", T0 + HOUR, 0)
    add(store, early_ok)
    summary = run(store)
    assert (summary.added, summary.removed) == (1, 1)
    assert links(store) == {(fail.id, early_ok.id, "retry")}


def test_other_relations_are_left_alone(store: Store) -> None:
    fail = shell_node("make test", T0)
    add(store, fail, shell_node("make test", T0 + HOUR, 0))
    with store.transaction():
        store.add_links([(fail.id, "elsewhere", "supersedes")])
    run(store)
    assert (fail.id, "elsewhere", "supersedes") in links(store)


def test_since_limits_the_failures_reconsidered(store: Store) -> None:
    old = shell_node("make a", T0)
    new = shell_node("make a", T0 + 2 * DAY_MS)
    add(store, old, shell_node("make a", T0 + HOUR, 0), new, shell_node("make a", T0 + 2 * DAY_MS + HOUR, 0))
    summary = run(store, since_ms=T0 + DAY_MS)
    assert summary.failures == 1
    assert {src for src, _, _ in links(store)} == {new.id}


def test_incremental_runs_do_only_new_work_and_match_a_full_run(store: Store) -> None:
    history = [shell_node("make lint", T0 + i * DAY_MS, 1 if i % 2 == 0 else 0) for i in range(10)]
    add(store, *history)
    with store.transaction():
        first = link_recent(store)
    assert first.since_ms is None and first.failures == 5  # no watermark yet: everything
    with store.transaction():
        idle = link_recent(store)
    assert idle.skipped and idle.failures == 0

    # A new failure and its retry, 12 h after the last command: only the last day or so is looked at.
    last = history[-1].ts
    fail, ok = shell_node("make lint", last + 12 * HOUR), shell_node("make lint", last + 13 * HOUR, 0)
    fix = commit_node(last + 12 * HOUR + 1, "Makefile")
    add(store, fail, ok, fix)
    with store.transaction():
        inc = link_recent(store)
    assert inc.since_ms == last + 12 * HOUR - DAY_MS
    assert inc.failures == 1 and inc.added == 1
    incremental = links(store)

    with store.transaction():
        store.conn.execute("DELETE FROM links")
    run(store)
    assert links(store) == incremental


def test_incremental_runs_do_not_depend_on_the_clock(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    # Every write and every run in one and the same millisecond: a clock watermark cannot tell them apart.
    from nexusmem.store import nodes as db_nodes

    monkeypatch.setattr(db_nodes, "now_ms", lambda: 1_800_000_000_000)
    add(store, shell_node("make a", T0), shell_node("make a", T0 + HOUR, 0))
    with store.transaction():
        assert link_recent(store).added == 1
    with store.transaction():
        assert link_recent(store).skipped
    fail, ok = shell_node("make b", T0 + 2 * HOUR), shell_node("make b", T0 + 3 * HOUR, 0)
    add(store, fail, ok)
    with store.transaction():
        inc = link_recent(store)
    assert not inc.skipped and inc.added == 1 and (fail.id, ok.id, "retry") in links(store)
    with store.transaction():
        assert link_recent(store).skipped


def test_rebuild_forgets_links_and_the_next_incremental_run_relinks_everything(store: Store) -> None:
    fail = shell_node("make x", T0)
    add(store, fail, shell_node("make x", T0 + HOUR, 0))
    with store.transaction():
        link_recent(store)
    nodes = list(store.iter_nodes())
    with store.transaction():
        store.delete_all_nodes()
    assert store.link_count() == 0
    add(
        store,
        *[
            Node(
                project="p",
                kind=n.kind,
                source=n.source,
                natural_key=n.natural_key,
                ref=n.ref,
                title=n.title,
                body=n.body,
                ts=n.ts,
                signal=n.signal,
                meta=n.meta,
            )
            for n in nodes
        ],
    )
    with store.transaction():
        again = link_recent(store)
    assert again.failures == 1 and again.added == 1
    assert store.link_count() == 1


# ---------------------------------------------------------------------------------------- end to end


@pytest.mark.slow
def test_sync_link_failures_then_query_shows_each_fix_right_after_its_failure(repo: Path) -> None:
    now_s = int(time.time()) // 3600 * 3600 - 3 * 86400  # three days ago, on the hour
    t0 = now_s * 1000
    commit(
        repo,
        "chore: start",
        {"tests/test_cache.py": "def test(): pass\n", "src/app.py": "x = 1\n"},
        when=now_s - 86400,
    )
    commit(repo, "fix(app): satisfy ruff in src/app.py", {"src/app.py": "X = 1\n"}, when=now_s + 3 * 3600)
    fix_sha = git(repo, "rev-parse", "HEAD").strip()
    log = shell_log_path()
    log.parent.mkdir(parents=True, exist_ok=True)
    entries = [
        (t0, "pytest tests/test_cache.py", 1),
        (t0 + HOUR, "pytest tests/test_cache.py", 0),
        (t0 + 2 * HOUR, "ruff check src/app.py", 1),
        (t0 + 4 * HOUR, "ruff check src/app.py", 0),
        (t0 + 5 * HOUR, "git status", 0),
    ]
    with open(log, "w", encoding="utf-8") as fh:
        for ts, command, code in entries:
            fh.write(
                json.dumps(
                    {
                        "ts": ts,
                        "cwd": str(repo),
                        "exit": code,
                        "command": command,
                        "shell": "bash",
                        "session": "s1",
                        "v": 1,
                    }
                )
                + "\n"
            )

    out = run_cli("-C", str(repo), "sync", "--link-failures", "--json").stdout
    summary = json.loads(out)["links"]
    assert (summary["failures"], summary["retry"], summary["commit"], summary["discussion"]) == (2, 2, 1, 0)
    plain = run_cli("-C", str(repo), "sync", "--link-failures").stdout
    assert "Failure links: nothing new to link." in plain

    data = query_json(repo, "why did pytest tests/test_cache.py fail")
    first, second = data["items"][0], data["items"][1]
    assert first["ref"] == "pytest tests/test_cache.py" and "(exit 1)" in first["title"]
    assert first["linked_from"] is None
    assert second["ref"] == "pytest tests/test_cache.py" and "(exit 0)" in second["title"]
    assert second["linked_from"] == first["id"] and second["score"] == first["score"]
    assert first["relation"] is None and second["relation"] == "retry"

    text = run_cli("-C", str(repo), "query", "why did pytest tests/test_cache.py fail").stdout
    lines = [line for line in text.splitlines() if line.startswith("- ")]
    assert "pytest tests/test_cache.py (exit 1)" in lines[0]
    assert lines[1].endswith("-- linked as the fix (retry)") and "(exit 0)" in lines[1]

    # The ruff failure's fixes: the commit that touched src/app.py, and the passing re-run after it.
    data = query_json(repo, "ruff check src/app.py failed")
    ids = [it["id"] for it in data["items"]]
    failure = next(it for it in data["items"] if "(exit 1)" in it["title"])
    riders = [it for it in data["items"] if it["linked_from"] == failure["id"]]
    assert {it["kind"] for it in riders} == {"git_commit", "shell_command"}
    assert {it["ref"] for it in riders} == {fix_sha, "ruff check src/app.py"}
    assert {it["relation"] for it in riders} == {"commit", "retry"}
    assert ids.index(failure["id"]) + 1 == ids.index(riders[0]["id"])
    assert ids.index(failure["id"]) + 2 == ids.index(riders[1]["id"])
    assert all(it["score"] == failure["score"] for it in riders)


def _calc_repo(repo: Path, when: int) -> None:
    commit(
        repo,
        "init",
        {
            "lib/calc.js": "module.exports.double = x => x + x\n",
            "tests/calc.test.js": "require('assert').strictEqual(require('../lib/calc').double(2), 4)\n",
        },
        when=when,
    )


def _commit_fixes(repo: Path, query: str) -> list[str]:
    """The refs of the commits `query` shows linked as the fix of the failure it finds first."""
    data = query_json(repo, query)
    failure = next(it for it in data["items"] if "(exit 1)" in it["title"])
    return [
        it["ref"] for it in data["items"] if it["linked_from"] == failure["id"] and it["relation"] == "commit"
    ]


@pytest.mark.slow
def test_a_fix_folded_into_the_breaking_commit_with_amend_is_linked_and_precheck_waits_for_a_pass(
    repo: Path,
) -> None:
    wip_s = int(time.time()) - 3600
    _calc_repo(repo, wip_s - 600)
    commit(
        repo, "wip: rework double", {"lib/calc.js": "module.exports.double = x => x + x + 1\n"}, when=wip_s
    )
    write_commands(repo, [((wip_s + 2) * 1000 + 250, "node tests/calc.test.js", 1)])
    (repo / "lib/calc.js").write_text("module.exports.double = x => x * 2\n", encoding="utf-8")
    # The amend keeps the author time (before the failure); it is made 4 s after the wip commit.
    git(repo, "commit", "-q", "-a", "--amend", "--no-edit", env={"GIT_COMMITTER_DATE": f"{wip_s + 4} +0000"})
    amended = git(repo, "rev-parse", "HEAD").strip()
    assert git(repo, "log", "-1", "--format=%at %ct").split() == [str(wip_s), str(wip_s + 4)]
    run_cli("-C", str(repo), "sync", "--link-failures")

    assert _commit_fixes(repo, "why did node tests/calc.test.js fail") == [amended]
    (repo / "lib/calc.js").write_text("module.exports.double = x => 2 * x\n", encoding="utf-8")
    git(repo, "add", "lib/calc.js")
    # The link says which commit fixed it; precheck still asks for the test to be seen passing.
    data = json.loads(run_cli("-C", str(repo), "precheck", "--json").stdout)
    assert data["files"] == ["lib/calc.js"]
    assert [f["command"] for f in data["findings"]] == ["node tests/calc.test.js"]
    write_commands(repo, [((wip_s + 10) * 1000, "node tests/calc.test.js", 0)])
    assert json.loads(run_cli("-C", str(repo), "precheck", "--json").stdout)["findings"] == []


@pytest.mark.slow
def test_a_fix_committed_in_the_failures_own_second_is_its_fix_not_the_next_commit(repo: Path) -> None:
    now_s = int(time.time()) - 3600
    _calc_repo(repo, now_s - 600)
    write_commands(repo, [(now_s * 1000 + 400, "node tests/calc.test.js", 1)])
    fix = commit(repo, "fix double", {"lib/calc.js": "module.exports.double = x => x * 2\n"}, when=now_s)
    commit(repo, "rework double", {"lib/calc.js": "module.exports.double = x => x << 2\n"}, when=now_s + 60)
    run_cli("-C", str(repo), "sync", "--link-failures")
    assert _commit_fixes(repo, "why did node tests/calc.test.js fail") == [fix]


@pytest.mark.slow
def test_a_commit_made_in_the_failures_second_before_it_is_not_its_fix(repo: Path) -> None:
    # `git commit -am wip && node tests/calc.test.js`: the commit of that second is the one the test ran on.
    now_s = int(time.time()) - 3600
    _calc_repo(repo, now_s - 600)
    commit(repo, "wip", {"lib/calc.js": "module.exports.double = x => x + x + 1\n"}, when=now_s)
    fix = commit(repo, "fix double", {"lib/calc.js": "module.exports.double = x => x * 2\n"}, when=now_s + 60)
    write_commands(repo, [(now_s * 1000 + 700, "git commit -qam wip && node tests/calc.test.js", 1)])
    run_cli("-C", str(repo), "sync", "--link-failures")
    assert _commit_fixes(repo, "why did node tests/calc.test.js fail") == [fix]

    other = init_repo(repo.parent / "other")  # the same with `git commit` typed on its own just before
    _calc_repo(other, now_s - 600)
    commit(other, "wip", {"lib/calc.js": "module.exports.double = x => x + x + 1\n"}, when=now_s)
    fix = commit(
        other, "fix double", {"lib/calc.js": "module.exports.double = x => x * 2\n"}, when=now_s + 60
    )
    write_commands(
        other,
        [(now_s * 1000 + 100, "git commit -qam wip", 0), (now_s * 1000 + 800, "node tests/calc.test.js", 1)],
    )
    run_cli("-C", str(other), "sync", "--link-failures")
    assert _commit_fixes(other, "why did node tests/calc.test.js fail") == [fix]


def test_a_file_named_in_a_failed_commits_message_does_not_make_the_next_commit_its_fix(repo: Path) -> None:
    """`git commit -qam "fix(build): remove stray broken declaration in cJSON.c"` on a clean tree fails (nothing
    to commit); the words of its message were taken for files it names, and the next commit touching cJSON.c
    was shown "linked as the fix (commit)". A path given as a pathspec still links (a commit a hook refused,
    then the same file committed)."""
    now_s = int(time.time()) - 3600
    commit(repo, "init", {"cJSON.c": "int a;\n", "cJSON.h": "int b;\n"}, when=now_s - 600)
    write_commands(
        repo,
        [
            (now_s * 1000, 'git commit -qam "fix(build): remove stray broken declaration in cJSON.c"', 1),
            (now_s * 1000 + 5000, "git commit -qm 'fix(build): declare b' -- cJSON.h", 1),
        ],
    )
    commit(repo, "fix(build): remove stray declaration", {"cJSON.c": "int c;\n"}, when=now_s + 60)
    fix_h = commit(repo, "fix(build): declare b", {"cJSON.h": "int d;\n"}, when=now_s + 120)
    run_cli("-C", str(repo), "sync", "--link-failures")
    assert _commit_fixes(repo, "git commit remove stray broken declaration in cJSON.c failed") == []
    assert _commit_fixes(repo, "git commit declare b cJSON.h failed") == [fix_h]
    text = run_cli("-C", str(repo), "query", "git commit stray declaration cJSON.c failed").stdout
    items = [line for line in text.splitlines() if line.startswith("- ")]
    assert any(line.endswith("] fix(build): remove stray declaration") for line in items), text
    assert any(line.endswith("] fix(build): declare b  -- linked as the fix (commit)") for line in items), (
        text
    )
    assert sum("linked as the fix" in line for line in items) == 1, text


def test_a_failure_behind_clear_is_fixed_by_its_passing_retry_not_a_later_commit(repo: Path) -> None:
    """`clear; pytest tests/test_utils.py` failed (a missing module), `pip install -q freezegun`, then
    `pytest tests/test_utils.py` failed and passed: `show` of the first failure said `fixed by … (commit)`
    (the next commit touching the file), with no retry, while precheck took the pass as clearing it."""
    now_s = int(time.time()) - 3600
    commit(repo, "init", {"tests/test_utils.py": "def test(): pass\n"}, when=now_s - 600)
    write_commands(
        repo,
        [
            (now_s * 1000, "clear; pytest tests/test_utils.py", 2),
            (now_s * 1000 + 12_000, "pip install -q freezegun", 0),
            (now_s * 1000 + 20_000, "pytest tests/test_utils.py", 1),
            (now_s * 1000 + 32_000, "clear && pytest tests/test_utils.py", 0),
        ],
    )
    commit(repo, "test: more utils", {"tests/test_utils.py": "def test(): assert 1\n"}, when=now_s + 600)
    run_cli("-C", str(repo), "sync", "--link-failures")
    data = query_json(repo, "clear; pytest tests/test_utils.py failed")
    first = next(it for it in data["items"] if it["ref"] == "clear; pytest tests/test_utils.py")
    shown = json.loads(run_cli("-C", str(repo), "show", "--json", first["id"]).stdout)
    passed = next(it for it in data["items"] if "(exit 0)" in it["title"])
    assert {"to": passed["id"], "relation": "retry"} in shown["links"], shown["links"]
    assert "(retry)" in run_cli("-C", str(repo), "show", first["id"]).stdout
    checked = run_cli("-C", str(repo), "precheck", "--json", "--files", "tests/test_utils.py").stdout
    assert json.loads(checked)["findings"] == []
