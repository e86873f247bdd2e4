"""Which commit is a failure's fix, on real repositories: the walkthrough's cases (a commit holding the failing
change, a commit made by the failing line itself, a rebase, a flaky test's pass), each synced from real
hook-log lines with `sync --link-failures` and read back as `query` shows it."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from nexusmem.store.db import open_store

from helpers import commit, git, run_cli, write_commands

CALC = "def add(a, b):\n    return a + b\n"
BROKEN = "def add(a, b):\n    return a - b\n"
TEST = "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"


def _calc_repo(repo: Path, when: int) -> None:
    commit(repo, "init", {"calc.py": CALC, "test_calc.py": TEST}, when=when)


def _shown(repo: Path, item: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(run_cli("-C", str(repo), "show", "--json", item).stdout)
    return data


def _fixes(repo: Path, failure_ts: int, relation: str = "commit") -> list[str]:
    """What `show` says fixed the command logged at FAILURE_TS ("fixed by … (RELATION)"), by title."""
    with open_store(repo / ".nexusmem" / "memory.db") as store:
        (failure,) = [n.id for n in store.iter_nodes("shell_command") if n.ts == failure_ts]
    links = _shown(repo, failure)["links"]
    return [_shown(repo, link["to"])["title"] for link in links if link["relation"] == relation]


def test_a_commit_after_which_the_same_test_failed_again_is_not_its_fix(repo: Path) -> None:
    """The walkthrough: calc.py broken, `pytest -q test_calc.py` fails, `git commit --no-verify -qam
    'refactor: calc'`, and the post-commit sync linked the failure "fixed by … (commit)" to the commit that
    holds the failing change. Until the test is run again that is all the memory knows; once the next run
    fails, the commit is no fix, and the next sync drops the link."""
    now_s = int(time.time()) - 3600
    _calc_repo(repo, now_s - 600)
    (repo / "calc.py").write_text(BROKEN, encoding="utf-8")
    failed_at = now_s * 1000 + 300
    write_commands(repo, [(failed_at, "pytest -q test_calc.py", 1)])
    commit(repo, "refactor: calc", when=now_s + 4)
    run_cli("-C", str(repo), "sync", "--link-failures")
    assert _fixes(repo, failed_at) == ["refactor: calc"]

    write_commands(repo, [((now_s + 8) * 1000, "pytest -q test_calc.py", 1)])
    run_cli("-C", str(repo), "sync", "--link-failures")
    assert _fixes(repo, failed_at) == []

    # The real fix, committed after the edit that made it pass: both failures' fix.
    commit(repo, "fix: calc adds", {"calc.py": CALC}, when=now_s + 20)
    write_commands(repo, [((now_s + 25) * 1000, "pytest -q test_calc.py", 0)])
    run_cli("-C", str(repo), "sync", "--link-failures")
    assert _fixes(repo, failed_at) == ["fix: calc adds"]
    assert _fixes(repo, (now_s + 8) * 1000) == ["fix: calc adds"]


def test_a_failure_after_another_commit_to_the_file_says_nothing_about_the_first(repo: Path) -> None:
    """The next run failed, but a second commit touching the file came between: that failure may be the
    second commit's doing, so the first stays the fix (fixed, then broken again)."""
    now_s = int(time.time()) - 3600
    _calc_repo(repo, now_s - 600)
    failed_at = now_s * 1000 + 300
    write_commands(repo, [(failed_at, "pytest -q test_calc.py", 1)])
    commit(repo, "fix: calc adds", {"calc.py": CALC + "\n"}, when=now_s + 10)
    commit(repo, "wip: calc tweaks", {"calc.py": BROKEN}, when=now_s + 20)
    write_commands(repo, [((now_s + 30) * 1000, "pytest -q test_calc.py", 1)])
    run_cli("-C", str(repo), "sync", "--link-failures")
    assert _fixes(repo, failed_at) == ["fix: calc adds"]
    assert _fixes(repo, (now_s + 30) * 1000) == []


@pytest.mark.parametrize(
    ("line", "starts", "commits", "lasts"),
    [
        # The line starts 0.9 s into a second, commits in the next one, and its tests end 1.2 s after it began.
        ("git commit -qam 'wip' && pytest -q test_calc.py", 900, 1, 1200),
        # The walkthrough's slower variant: `sleep 1.5` first, the commit 1.6 s in, the line over 2.2 s in.
        ("sleep 1.5 && git commit -qam 'wip' && pytest -q test_calc.py", 500, 2, 2242),
    ],
)
def test_a_commit_the_failing_line_made_itself_is_not_its_fix(
    repo: Path, line: str, starts: int, commits: int, lasts: int
) -> None:
    """`git commit -qam 'wip' && pytest -q test_calc.py` (exit 1) was linked to 'wip': the hook's `ts` is
    when the line started, and the commit it made while running came "after" it. The failure is seen when
    the line ends (ts + duration_ms): the commit made before that is the one the test ran on."""
    now_s = int(time.time()) - 3600
    _calc_repo(repo, now_s - 600)
    commit(repo, "wip", {"calc.py": BROKEN}, when=now_s + commits)
    failed_at = now_s * 1000 + starts
    write_commands(repo, [(failed_at, line, 1, lasts)])
    commit(repo, "fix: calc adds", {"calc.py": CALC}, when=now_s + 60)
    run_cli("-C", str(repo), "sync", "--link-failures")
    assert _fixes(repo, failed_at) == ["fix: calc adds"]


def test_a_fix_committed_while_a_failing_line_ran_elsewhere_is_not_its_fix_but_one_after_it_ends_is(
    repo: Path,
) -> None:
    """Without a commit in the line, the duration still tells when it ended: a commit made while a 40 s test
    run was still going is no fix of what it found; a commit made in the second the line ended may be."""
    now_s = int(time.time()) - 3600
    _calc_repo(repo, now_s - 600)
    failed_at = now_s * 1000
    write_commands(repo, [(failed_at, "pytest -q test_calc.py", 1, 40_500)])
    commit(repo, "chore: calc comment", {"calc.py": CALC + "# c\n"}, when=now_s + 20)
    commit(repo, "fix: calc adds", {"calc.py": CALC}, when=now_s + 40)
    run_cli("-C", str(repo), "sync", "--link-failures")
    assert _fixes(repo, failed_at) == ["fix: calc adds"]


def test_after_a_rebase_the_fix_authored_after_the_failure_is_its_fix_not_the_commit_adding_its_test(
    repo: Path,
) -> None:
    """A rebase gives every commit it replays one committer second: the failure was linked to whichever
    rebased commit sorted first by node id (the walkthrough: the commit that added the failing test). Of
    the commits made in one second, one authored after the failure comes first, then the history's order
    (the fix before the tidy-up that followed it); one authored before it is only the fallback."""
    base = 1_790_000_000  # fixed times: a seconds-exact history whatever the clock
    modules = ("pricing", "coupons")
    commit(repo, "init", {f"src/{m}.py": "X = 1\n" for m in modules}, when=base)
    git(repo, "switch", "-q", "-c", "feat")
    for m in modules:
        commit(repo, f"feat({m}): round", {f"src/{m}.py": "X = 2\n"}, when=base + 10)
        commit(
            repo, f"test({m}): rounds half up", {f"tests/test_{m}.py": "def test(): pass\n"}, when=base + 20
        )
    failed = {m: (base + 30 + n) * 1000 for n, m in enumerate(modules)}
    write_commands(repo, [(failed[m], f"pytest -q tests/test_{m}.py", 1) for m in modules])
    for m in modules:
        commit(repo, f"fix({m}): round half up", {f"src/{m}.py": "X = 3\n"}, when=base + 40)
    for m in modules:
        commit(repo, f"refactor({m}): tidy", {f"src/{m}.py": "X = 4\n"}, when=base + 50)
    run_cli("-C", str(repo), "sync", "--link-failures")
    assert [_fixes(repo, failed[m]) for m in modules] == [[f"fix({m}): round half up"] for m in modules]

    git(repo, "switch", "-q", "main")
    commit(repo, "docs: a note", {"NOTES.md": "note\n"}, when=base + 60)
    git(repo, "switch", "-q", "feat")
    git(repo, "rebase", "-q", "main", env={"GIT_COMMITTER_DATE": f"{base + 70} +0000"})
    run_cli("-C", str(repo), "sync", "--link-failures")
    assert [_fixes(repo, failed[m]) for m in modules] == [[f"fix({m}): round half up"] for m in modules]


def test_a_fix_squashed_into_the_commit_that_broke_it_is_still_the_fallback(repo: Path) -> None:
    """`git commit --fixup` then `git rebase -i --autosquash`: the fix lives in a commit authored before the
    failure; with nothing authored after it among the commits of that second, that commit is the fix."""
    base = 1_790_000_000
    commit(
        repo, "init", {"src/pricing.py": "X = 1\n", "tests/test_pricing.py": "def test(): pass\n"}, when=base
    )
    git(repo, "switch", "-q", "-c", "feat")
    broke = commit(repo, "feat(pricing): round", {"src/pricing.py": "X = 2\n"}, when=base + 10)
    failed_at = (base + 30) * 1000
    write_commands(repo, [(failed_at, "pytest -q tests/test_pricing.py", 1)])
    (repo / "src/pricing.py").write_text("X = 3\n", encoding="utf-8")
    git(repo, "commit", "-qa", f"--fixup={broke}", env={"GIT_AUTHOR_DATE": f"{base + 40} +0000"})
    git(
        repo,
        "rebase",
        "-q",
        "-i",
        "--autosquash",
        "main",
        env={"GIT_SEQUENCE_EDITOR": "true", "GIT_COMMITTER_DATE": f"{base + 70} +0000"},
    )
    run_cli("-C", str(repo), "sync", "--link-failures")
    assert _fixes(repo, failed_at) == ["feat(pricing): round"]


def _pricing_branch(repo: Path, base: int) -> None:
    """main with src/pricing.py and its test, then a branch `feat` whose one commit changes the code."""
    commit(
        repo, "init", {"src/pricing.py": "X = 1\n", "tests/test_pricing.py": "def test(): pass\n"}, when=base
    )
    git(repo, "switch", "-q", "-c", "feat")
    commit(repo, "feat(pricing): round", {"src/pricing.py": "X = 2\n"}, when=base + 10)


def _rebase_onto_a_newer_main(repo: Path, base: int, *, sync_each_pick: bool = False) -> None:
    git(repo, "switch", "-q", "main")
    commit(repo, "docs: a note", {"NOTES.md": "note\n"}, when=base + 60)
    git(repo, "switch", "-q", "feat")
    # The post-commit hook's sync after each pick: HEAD is the replay, the branch still the commit it replays.
    each = ["--exec", f"{sys.executable} -m nexusmem sync --quiet --no-embed"] if sync_each_pick else []
    git(repo, "rebase", "-q", *each, "main", env={"GIT_COMMITTER_DATE": f"{base + 70} +0000"})


@pytest.mark.parametrize("synced", ["before-the-rebase", "while-rebasing", "never-before"])
def test_the_breaking_commit_a_rebase_replayed_after_the_failure_is_not_its_fix(
    repo: Path, synced: str
) -> None:
    """The commit broke the test, the test failed, then `git rebase main` replayed the commit with a committer
    time after the failure (its author time, and its patch, unchanged). Nothing else touched the code and
    the test was not run again: the replay was taken for the fix ("fixed by" the change that broke it). Its
    patch (`git patch-id --stable`) is the one a commit made before the failure had: the pre-rebase commit
    memory held (a post-commit sync; also when a sync reads the replay while the branch still points at the
    commit it replays) or only the reflog keeps (no sync between the commit and the rebase). The change
    existed when the test failed, so nothing fixed it."""
    base = 1_790_000_000
    _pricing_branch(repo, base)
    if synced != "never-before":
        run_cli("-C", str(repo), "sync")
    failed_at = (base + 30) * 1000
    write_commands(repo, [(failed_at, "pytest -q tests/test_pricing.py", 1)])
    _rebase_onto_a_newer_main(repo, base, sync_each_pick=synced == "while-rebasing")
    run_cli("-C", str(repo), "sync", "--link-failures")
    assert _fixes(repo, failed_at) == []

    # The real fix, committed later: the failure's fix.
    commit(repo, "fix(pricing): round half up", {"src/pricing.py": "X = 3\n"}, when=base + 80)
    run_cli("-C", str(repo), "sync", "--link-failures")
    assert _fixes(repo, failed_at) == ["fix(pricing): round half up"]


def test_a_fix_amended_into_the_commit_that_broke_it_is_its_fix_also_once_rebased(repo: Path) -> None:
    """`git commit --amend` keeps the author time too, but the amended commit's patch is not the one that
    failed: the fix amended in after the failure is the fix; and a later rebase replaying the amended
    commit keeps it so (the change it replays was made after the failure)."""
    base = 1_790_000_000
    _pricing_branch(repo, base)
    run_cli("-C", str(repo), "sync")
    failed_at = (base + 30) * 1000
    write_commands(repo, [(failed_at, "pytest -q tests/test_pricing.py", 1)])
    (repo / "src/pricing.py").write_text("X = 3\n", encoding="utf-8")
    git(repo, "commit", "-qa", "--amend", "--no-edit", env={"GIT_COMMITTER_DATE": f"{base + 40} +0000"})
    run_cli("-C", str(repo), "sync", "--link-failures")
    assert _fixes(repo, failed_at) == ["feat(pricing): round"]

    _rebase_onto_a_newer_main(repo, base)
    run_cli("-C", str(repo), "sync", "--link-failures")
    assert _fixes(repo, failed_at) == ["feat(pricing): round"]
