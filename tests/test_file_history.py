"""Questions about one file's history ("who changed X last", "when was X last changed", "history of X",
"what changed in X", "recent changes to X"): answered by the commits that touched the file, newest first,
following its renames, as `git log --follow` lists them. Real git repositories, the real sync, the answers
asked through `nexusmem query`."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from helpers import commit, git, query_json, run_cli

DAY = 86_400
NOW = int(time.time())


def authored(repo: Path, message: str, files: dict[str, str], when: int, author: str) -> str:
    """A commit of FILES by AUTHOR at epoch WHEN; its sha."""
    for name, text in files.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text, encoding="utf-8")
    git(repo, "add", "-A")
    env = {
        "GIT_AUTHOR_DATE": f"{when} +0000",
        "GIT_COMMITTER_DATE": f"{when} +0000",
        "GIT_AUTHOR_NAME": author,
        "GIT_AUTHOR_EMAIL": f"{author.split()[0].lower()}@example.com",
    }
    git(repo, "commit", "-q", "-m", message, env=env)
    return git(repo, "rev-parse", "HEAD").strip()


def file_history(repo: Path) -> dict[str, str]:
    """src/store.py, changed by three people (moved from src/old_store.py once), among many commits of other
    files whose messages name store.py and words of the questions ("changed", "history", "last")."""
    body = "".join(f"def read_{i}():\n    return {i}\n\n" for i in range(10))
    shas = {"add": authored(repo, "Add the store", {"src/old_store.py": body}, NOW - 90 * DAY, "Ann Lee")}
    git(repo, "mv", "src/old_store.py", "src/store.py")
    shas["move"] = commit(repo, "Move the store", None, when=NOW - 80 * DAY)
    for i in range(12):
        commit(
            repo,
            f"Docs: history of store.py changed, last part {i}",
            {"docs/store.md": f"The store.py history, changed last in step {i}\n"},
            when=NOW - (75 - i) * DAY,
        )
    shas["cache"] = authored(
        repo, "Cache reads", {"src/store.py": body + "CACHE = {}\n"}, NOW - 40 * DAY, "Bob Stone"
    )
    shas["tests"] = commit(
        repo,
        "Test store.py reads",
        {"tests/test_store.py": "def test_read():\n    pass\n"},
        when=NOW - 30 * DAY,
    )
    shas["limit"] = authored(
        repo, "Limit the cache", {"src/store.py": body + "CACHE = {}\nLIMIT = 9\n"}, NOW - 20 * DAY, "Cy Park"
    )
    return shas


@pytest.mark.parametrize(
    "question",
    [
        "who changed src/store.py last",
        "who last changed store.py?",
        "when was src/store.py last changed",
        "what changed in src/store.py",
        "history of src/store.py",
        "store.py history",
        "recent changes to store.py",
    ],
)
def test_a_file_history_question_lists_its_commits_newest_first(repo: Path, question: str) -> None:
    """ "Who changed X last", "when was X last changed", "what changed in X" and "history of X" were ranked
    (old commits whose messages say "changed" or name the file came first, other files' diffs among them);
    only "what changed in X recently" listed the file's commits. Each is the file's history now, newest
    first, renames followed, and nothing else."""
    shas = file_history(repo)
    run_cli("-C", str(repo), "sync", "--no-embed")
    followed = git(repo, "log", "--follow", "--format=%H", "--", "src/store.py").split()
    assert followed == [shas["limit"], shas["cache"], shas["move"], shas["add"]]
    found = query_json(repo, question)
    assert [it["ref"] for it in found["items"]] == followed, (found["notes"], found["items"])
    assert any(
        note.startswith("first: the newest commits that changed src/store.py") for note in found["notes"]
    )


def test_who_changed_a_file_last_names_the_last_commit_and_its_author(repo: Path) -> None:
    shas = file_history(repo)
    run_cli("-C", str(repo), "sync", "--no-embed")
    for question in ("who changed src/store.py last", "when was store.py last modified"):
        found = query_json(repo, question)
        assert found["items"][0]["ref"] == shas["limit"]
        last = [note for note in found["notes"] if note.startswith("the last change to src/store.py")]
        assert last and shas["limit"][:10] in last[0] and "Cy Park" in last[0], found["notes"]


def test_a_file_question_asking_more_is_still_ranked(repo: Path) -> None:
    """ "Who changed the cache limit in store.py" asks about a change, not the file's whole history."""
    file_history(repo)
    run_cli("-C", str(repo), "sync", "--no-embed")
    found = query_json(repo, "who changed the cache limit in store.py")
    assert not any(note.startswith("first: the newest commits that changed") for note in found["notes"])


@pytest.mark.parametrize("renamed", [True, False])
def test_a_name_only_in_a_hunk_header_is_still_in_the_code(repo: Path, renamed: bool) -> None:
    """ "When was parse_config removed" said "last change that holds parse_config" of a name lib/delta.py
    still holds: the newest diff that holds it (a helper dropped below it) had it only in its hunk header
    (`@@ -4,10 +4,6 @@ def parse_config(path):`), a line the change left as it was, and the file was renamed
    since. The hunk header's line is in the file."""
    body = "def parse_config(path):\n    with open(path) as f:\n        return f.read()\n\n\n"
    helper = "def helper_one():\n    return 2\n\n\n"
    tail = "def validate_config(text):\n    return bool(text.strip())\n"
    commit(repo, "Add the config parser", {"src/gamma.py": body + helper + tail}, when=NOW - 9 * DAY)
    commit(repo, "Drop an unused helper", {"src/gamma.py": body + tail}, when=NOW - 8 * DAY)
    if renamed:
        (repo / "lib").mkdir()
        git(repo, "mv", "src/gamma.py", "lib/delta.py")
        commit(repo, "Move gamma into lib as delta", None, when=NOW - 7 * DAY)
    run_cli("-C", str(repo), "sync", "--no-embed")
    where = "lib/delta.py" if renamed else "src/gamma.py"
    assert git(repo, "grep", "-l", "parse_config").split() == [where]
    found = query_json(repo, "when was parse_config removed")
    assert any(note.startswith(f"parse_config is still in the code ({where})") for note in found["notes"]), (
        found["notes"]
    )


def comment_history(repo: Path) -> dict[str, str]:
    """A Python module whose TOMLChar class is removed by one commit, which leaves a comment naming it; and a
    Rust file whose ParseBudget type is kept."""
    code = "class TOMLChar(str):\n    pass\n\n\ndef parse(text):\n    return [TOMLChar(c) for c in text]\n"
    shas = {
        "add": commit(
            repo,
            "Add the parser",
            {"pkg/parser.py": code, "src/lib.rs": "pub struct ParseBudget;\n"},
            when=NOW - 9 * DAY,
        )
    }
    shas["remove"] = commit(
        repo,
        "Remove the char wrapper",
        {
            "pkg/parser.py": "# Character classes (formerly the `TOMLChar` constants).\n\n\ndef parse(text):\n"
            "    return list(text)  # no TOMLChar wrapper\n"
        },
        when=NOW - 5 * DAY,
    )
    return shas


def test_a_name_left_only_in_a_comment_is_not_still_in_the_code(repo: Path) -> None:
    """ "When was TOMLChar removed" said "TOMLChar is still in the code (tomlkit/parser.py)" of a module that
    names it only in a comment ("formerly the `TOMLChar` constants"): the commit that removed it came first
    and the note denied it. A comment is no code: the note names that commit, and says where the comment is;
    "is X still in the code" is answered by the same note, with a yes or a no."""
    shas = comment_history(repo)
    run_cli("-C", str(repo), "sync", "--no-embed")
    found = query_json(repo, "when was TOMLChar removed")
    assert not any("is still in the code" in note for note in found["notes"]), found["notes"]
    assert (
        f"last change that holds TOMLChar: {shas['remove'][:10]} (TOMLChar is only in a comment now: pkg/parser.py)"
        in found["notes"]
    ), found["notes"]
    assert found["items"][0]["ref"] == shas["remove"]
    found = query_json(repo, "is TOMLChar still in the code?")
    assert (
        f"no: TOMLChar is only in a comment now (pkg/parser.py); the last change that holds it: {shas['remove'][:10]}"
        in found["notes"]
    ), found["notes"]
    found = query_json(repo, "is ParseBudget still used?")
    assert any(
        note.startswith("yes: ParseBudget is still in the code (src/lib.rs)") for note in found["notes"]
    ), found["notes"]


def test_the_removal_is_the_commit_whose_diff_took_the_name_out(repo: Path) -> None:
    """ "When was DisplayAsDisplay removed" named a later one-line change whose message only recalled the old
    name ("Prior to PR 251, DisplayAsDisplay was imported"), not the commit whose diff removed it (`git log
    -S`); "when was is_tomlkit removed" named the merge of the branch that removed it, while the list put the
    removal first. The note names the commit whose diff removed the last occurrence, never a merge, and the
    list agrees."""
    commit(
        repo,
        "Add the traits",
        {"src/display.rs": "pub trait DisplayAsDisplay {}\npub trait Other {}\n"},
        when=NOW - 20 * DAY,
    )
    git(repo, "checkout", "-q", "-b", "topic")
    removed = commit(
        repo,
        "Replace the traits",
        {"src/display.rs": "pub trait AsDisplay {}\npub trait Other {}\n"},
        when=NOW - 15 * DAY,
    )
    git(repo, "checkout", "-q", "main")
    commit(repo, "Unrelated", {"README.md": "hello\n"}, when=NOW - 14 * DAY)
    env = {"GIT_AUTHOR_DATE": f"{NOW - 13 * DAY} +0000", "GIT_COMMITTER_DATE": f"{NOW - 13 * DAY} +0000"}
    git(repo, "merge", "-q", "--no-ff", "-m", "Merge topic: drop DisplayAsDisplay", "topic", env=env)
    commit(
        repo,
        "AsDisplay is no longer an unused import\n\nPrior to this, DisplayAsDisplay was imported too.",
        {"src/display.rs": "pub trait AsDisplay {}\npub trait Other {}\n// ok\n"},
        when=NOW - 10 * DAY,
    )
    assert git(repo, "log", "-S", "DisplayAsDisplay", "--format=%H", "-1").strip() == removed
    run_cli("-C", str(repo), "sync", "--no-embed")
    found = query_json(repo, "when was DisplayAsDisplay removed")
    assert f"last change that holds DisplayAsDisplay: {removed[:10]}" in found["notes"], found["notes"]
    assert found["items"][0]["ref"] == removed, found["items"]


def dated_history(repo: Path) -> dict[str, str]:
    """src/parser.py changed in June and July 2024, and another file changed in July whose message names it."""
    at = {
        "june": 1_717_243_200 + 10 * DAY,  # 2024-06-11
        "late_june": 1_717_243_200 + 25 * DAY,  # 2024-06-26
        "july": 1_719_835_200 + 13 * DAY,  # 2024-07-14
        "august": 1_722_513_600 + 2 * DAY,  # 2024-08-03
    }
    shas = {"june": commit(repo, "Parse tables", {"src/parser.py": "A = 1\n"}, when=at["june"])}
    shas["late_june"] = commit(repo, "Parse arrays", {"src/parser.py": "A = 2\n"}, when=at["late_june"])
    shas["other"] = commit(
        repo, "Docs: what changed in parser.py", {"docs/parser.md": "x\n"}, when=at["july"] - DAY
    )
    shas["july"] = commit(repo, "Parse strings", {"src/parser.py": "A = 3\n"}, when=at["july"])
    shas["august"] = commit(repo, "Parse dates", {"src/parser.py": "A = 4\n"}, when=at["august"])
    return shas


@pytest.mark.parametrize(
    ("question", "since", "until", "wanted"),
    [
        ("what changed in src/parser.py since 2024-07-01", "2024-07-01", None, ["august", "july"]),
        ("what changed in src/parser.py in July 2024", "2024-07-01", "2024-07-31", ["july"]),
        ("what changed in parser.py before 2024-07-01", None, "2024-06-30", ["late_june", "june"]),
        (
            "history of src/parser.py between 2024-06-20 and 2024-07-20",
            "2024-06-20",
            "2024-07-20",
            ["july", "late_june"],
        ),
    ],
)
def test_a_date_in_a_file_question_is_its_window(
    repo: Path, question: str, since: str | None, until: str | None, wanted: list[str]
) -> None:
    """ "What changed in tomlkit/parser.py since 2026-07-01" and "… in July 2026" listed June's commits and one
    that did not touch parser.py: the dates were words to match. They are the window, as --since/--until."""
    shas = dated_history(repo)
    run_cli("-C", str(repo), "sync", "--no-embed")
    window = [f"--since={since}"] if since else []
    window += [f"--until={until}"] if until else []
    by_git = git(repo, "log", "--format=%H", *window, "--", "src/parser.py").split()
    assert by_git == [shas[k] for k in wanted]
    found = query_json(repo, question)
    assert [it["ref"] for it in found["items"]] == by_git, (found["notes"], found["items"])
    options = [f"--since={since}"] if since else []
    options += [f"--until={until}"] if until else []
    asked = query_json(repo, "what changed in src/parser.py", *options)
    assert [it["ref"] for it in asked["items"]] == by_git


def test_a_name_still_in_the_code_lists_first_the_change_its_note_names(repo: Path) -> None:
    """ "does AsDisplay still exist" (thiserror) said "yes: … the last change that holds it: aa9d91f" (a ui
    test's expected compiler output, updated in 2026) and listed first a 2023 commit whose title names the
    trait: note and list disagreed. The change the note names is listed first, as for "when was X removed"
    of a name the code still holds; a question about a removed name still lists its removal first."""
    display = "pub trait AsDisplay {\n    fn as_display(&self) -> String;\n}\n"
    commit(
        repo,
        "Replace the two traits with an AsDisplay trait",
        {"src/display.rs": display},
        when=NOW - 900 * DAY,
    )
    commit(
        repo,
        "AsDisplay is no longer an unused import",
        {"src/lib.rs": "use display::AsDisplay;\n"},
        when=NOW - 800 * DAY,
    )
    stderr = "error: the method `as_display` exists\n  which is required by `&T: thiserror::__private18::AsDisplay`\n"
    commit(repo, "Update ui tests", {"tests/ui/no-display.stderr": stderr}, when=NOW - 300 * DAY)
    last = commit(
        repo,
        "Update ui tests for version 2.0.19",
        {"tests/ui/no-display.stderr": stderr.replace("__private18", "__private19")},
        when=NOW - 100 * DAY,
    )
    run_cli("-C", str(repo), "sync", "--no-embed")
    for question in (
        "does AsDisplay still exist",
        "when was AsDisplay removed",
        "is AsDisplay still in the code?",
    ):
        found = query_json(repo, question)
        said = [note for note in found["notes"] if "AsDisplay is still in the code" in note]
        assert len(said) == 1 and said[0].endswith(last[:10]), (question, found["notes"])
        assert found["items"][0]["ref"].split(":", 1)[0] == last, (
            question,
            [it["title"] for it in found["items"]],
        )


def test_a_dated_window_no_commit_of_the_file_falls_in_lists_nothing_outside_it(repo: Path) -> None:
    """ "What changed in tomlkit/toml_file.py since 2026-07-01" said rightly that no commit changed it since,
    then listed June's commits of other files: the ranking, with the dates read as words. The answer keeps
    to the window: nothing is listed, and the note names the file's last change."""
    shas = dated_history(repo)
    commit(repo, "Parse more in the docs", {"docs/parser.md": "y\n"}, when=1_725_192_000 + 5 * DAY)
    run_cli("-C", str(repo), "sync", "--no-embed")
    found = query_json(repo, "what changed in src/parser.py since 2024-10-01")
    note = f"no commit changed src/parser.py since 2024-10-01; its last change: {shas['august'][:10]} (2024-08-03)"
    assert note in found["notes"], found["notes"]
    assert found["items"] == [], found["items"]
    # A window it was changed in still lists those commits.
    found = query_json(repo, "what changed in src/parser.py since 2024-08-01")
    assert [it["ref"] for it in found["items"]] == [shas["august"]], found["items"]
