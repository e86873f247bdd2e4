"""What resolves a failure for precheck ("never seen passing"), on real repositories with real hook-log lines:
a later passing run, never a commit linked as its fix."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from nexusmem.store.db import open_store

from helpers import commit, git, run_cli, run_script, typed_in_bash, write_commands

CALC = "def add(a, b):\n    return a + b\n"
BROKEN = "def add(a, b):\n    return a - b\n"
TEST = "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"


def _staged(repo: Path, name: str, text: str) -> None:
    (repo / name).write_text(text, encoding="utf-8")
    git(repo, "add", name)


def _links(repo: Path) -> list[tuple[str, str]]:
    """(relation, linked item's title) of every failure → fix link, as `show` lists them."""
    with open_store(repo / ".nexusmem" / "memory.db") as store:
        failures = [n.id for n in store.iter_nodes("shell_command") if n.meta.get("exit") not in (0, None)]
    out = []
    for failure in failures:
        item: dict[str, Any] = json.loads(run_cli("-C", str(repo), "show", "--json", failure).stdout)
        for link in item["links"]:
            shown = json.loads(run_cli("-C", str(repo), "show", "--json", link["to"]).stdout)
            out.append((link["relation"], shown["title"]))
    return out


SLUG = {
    "lib/slug.js": "export const slugify = s => s.toLowerCase().replace(/ /g, '-')\n",
    "test/slug.test.js": "import { slugify } from '../lib/slug.js'\n",
    "lib/trunc.js": "export const trunc = (s, n) => s.slice(0, n)\n",
    "test/trunc.test.js": "import { trunc } from '../lib/trunc.js'\n",
}


def _failures(repo: Path, *files: str) -> list[str]:
    """The commands `precheck --json` warns about for FILES (staged)."""
    data = json.loads(run_script("precheck", "--json", "--files", *files, cwd=repo).stdout)
    return sorted(f["command"] for f in data["findings"] if f["kind"] == "failure")


def test_the_test_file_passing_clears_the_variants_of_its_failed_run(repo: Path) -> None:
    """The walkthrough (node --test): after the fix `node --test test/slug.test.js` passed, but --strict kept
    refusing, once per variant that had failed: with a test-name filter, inside `git stash … ; git stash
    pop`, after a `sed … && git commit …`. A later passing run in the same folder that is one of those lines
    with words left out, and names the test file that ties the failure to the staged file, clears it. A
    different command (`node -e …`) needs a passing run of its own."""
    now_s = int(time.time())
    commit(repo, "feat: slugify", SLUG, when=now_s - 7200)
    run_cli("-C", str(repo), "sync")
    ago = (now_s - 600) * 1000
    variants = [
        "node --test --test-name-pattern slugify test/slug.test.js > /dev/null",
        "git stash -q && node --test test/slug.test.js > /dev/null; git stash pop -q",
        "sed -i 's/\"-\")/\"_\")/' lib/slug.js && git commit -qam 'wip: underscores' && node --test"
        " test/slug.test.js > /dev/null",
    ]
    other = (
        'node -e \'import("./lib/slug.js").then(m => { if (m.slugify("A B") !== "a-b") process.exit(1) })\''
    )
    write_commands(repo, [(ago + n * 1000, line, 1) for n, line in enumerate([*variants, other])])
    assert _failures(repo, "lib/slug.js") == sorted([*variants, other])
    write_commands(repo, [(ago + 60_000, "node --test test/slug.test.js > /dev/null", 0)])
    assert _failures(repo, "lib/slug.js") == [other]  # from the hook log, not synced yet
    run_cli("-C", str(repo), "sync")
    assert _failures(repo, "lib/slug.js") == [other]  # the same from the memory


def test_a_pass_that_is_no_narrower_run_of_the_failed_line_clears_nothing(repo: Path) -> None:
    """Narrow on purpose: a passing `cat` or `git add` of the test file, the test run with more options, in
    another folder, or without the environment the failed run set, clears nothing."""
    now_s = int(time.time())
    commit(repo, "feat: trunc", SLUG, when=now_s - 7200)
    (repo / "test/sub").mkdir()
    run_cli("-C", str(repo), "sync")
    ago = (now_s - 600) * 1000
    failed = ["node --test test/trunc.test.js", "LANG=C node --test --test-reporter dot test/trunc.test.js"]
    write_commands(repo, [(ago + n * 1000, line, 1) for n, line in enumerate(failed)])
    passed = [
        "cat test/trunc.test.js",
        "git add test/trunc.test.js",
        "node --test --watch test/trunc.test.js",
        "node --test --test-reporter dot test/trunc.test.js",
    ]
    write_commands(repo, [(ago + 60_000 + n * 1000, line, 0) for n, line in enumerate(passed)])
    write_commands(repo, [(ago + 90_000, "node --test test/trunc.test.js", 0)], cwd=repo / "test" / "sub")
    assert _failures(repo, "lib/trunc.js") == sorted(failed)


def test_a_commit_linked_as_the_fix_does_not_silence_strict_precheck(repo: Path) -> None:
    """The walkthrough: break calc.py, `pytest -q test_calc.py` fails (exit 1), `git commit --no-verify -qam
    'refactor: calc'`; the post-commit sync links the failure to that commit, and `precheck --strict` on the
    next change to calc.py exited 0 with no output while the test still failed. A commit is no sign that the
    command passes: only a passing run of it clears the warning, as its text says ("run it before
    committing")."""
    now_s = int(time.time()) - 3600
    commit(repo, "init", {"calc.py": CALC, "test_calc.py": TEST}, when=now_s - 600)
    (repo / "calc.py").write_text(BROKEN, encoding="utf-8")
    write_commands(repo, [(now_s * 1000 + 300, "pytest -q test_calc.py", 1)])
    commit(repo, "refactor: calc", when=now_s + 4)
    run_cli("-C", str(repo), "sync", "--link-failures")
    assert ("commit", "refactor: calc") in _links(repo)  # what the linker has to go on: a commit after it

    _staged(repo, "calc.py", BROKEN + "# more\n")
    strict = run_script("precheck", "--strict", cwd=repo)
    assert strict.returncode == 1, strict.stderr
    assert "calc.py: `pytest -q test_calc.py` failed (exit 1)" in strict.stderr
    assert "never seen passing — run it before committing" in strict.stderr

    # The same with the real fix committed but never run: still "run it before committing".
    commit(repo, "fix: calc adds", {"calc.py": CALC}, when=now_s + 20)
    run_cli("-C", str(repo), "sync", "--link-failures")
    _staged(repo, "calc.py", CALC + "# more\n")
    assert run_script("precheck", "--strict", cwd=repo).returncode == 1

    # A passing run clears it, synced or not.
    write_commands(repo, [((now_s + 30) * 1000, "pytest -q test_calc.py", 0)])
    cleared = run_script("precheck", "--strict", cwd=repo)
    assert cleared.returncode == 0 and cleared.stderr == "", cleared.stderr
    run_cli("-C", str(repo), "sync", "--link-failures")
    assert ("retry", "pytest -q test_calc.py (exit 0)") in _links(repo)
    assert run_script("precheck", "--strict", cwd=repo).returncode == 0


EASTER = {
    "src/dateutil/easter.py": "def easter(year):\n    return year\n",
    "tests/test_easter.py": "from dateutil.easter import easter\n\n\ndef test_easter_western():\n    pass\n",
}
# A real test that fails while a file FAIL is in the folder pytest runs in.
EASTER_FAILS_WITH_MARK = "import os\n\n\ndef test_easter_western():\n    assert not os.path.exists('FAIL')\n"


def test_the_whole_test_file_passing_clears_a_failed_run_of_one_of_its_tests(repo: Path) -> None:
    """The walkthrough (dateutil): `pytest -q "tests/test_easter.py::test_easter_western"` failed, and later
    `pytest -q tests/test_easter.py` passed in the same folder; precheck on easter.py still said the node id
    "was never seen passing". A pass whose words are the failed line's with each node id (`FILE::test`,
    `FILE::Class::test`, `FILE::test[param]`, quoted or not) replaced by its FILE clears it, and the linker
    takes it for the `retry`. Another test of the file, the file run with other options or the node id run
    in another folder clear nothing."""
    now_s = int(time.time())
    commit(repo, "feat: easter", EASTER, when=now_s - 7200)
    (repo / "tests" / "sub").mkdir()
    run_cli("-C", str(repo), "sync")
    ago = (now_s - 600) * 1000
    cleared = [
        'pytest -q "tests/test_easter.py::test_easter_western"',
        "pytest -q tests/test_easter.py::TestEaster::test_orthodox",
        "pytest -q 'tests/test_easter.py::test_julian[1990-4-15]' | tail -3",
    ]
    kept = [
        "pytest -x tests/test_easter.py::test_easter_western",  # `pytest -q FILE` passed, not `pytest -x FILE`
    ]
    write_commands(repo, [(ago + n * 1000, line, 1) for n, line in enumerate([*cleared, *kept])])
    write_commands(repo, [(ago + 10_000, "pytest -q tests/test_easter.py::test_easter_western", 1)],
                   cwd=repo / "tests" / "sub")  # fmt: skip
    write_commands(repo, [(ago + 20_000, "pytest -q tests/test_easter.py::test_other", 0)])  # another test
    assert len(_failures(repo, "src/dateutil/easter.py")) == 5  # precheck's most for a file
    write_commands(repo, [(ago + 60_000, "pytest -q tests/test_easter.py", 0)])
    expected = sorted([*kept, "pytest -q tests/test_easter.py::test_easter_western"])
    assert _failures(repo, "src/dateutil/easter.py") == expected  # from the hook log, not synced yet
    run_cli("-C", str(repo), "sync")
    assert _failures(repo, "src/dateutil/easter.py") == expected  # the same from the memory
    links = _links(repo)
    assert links.count(("retry", "pytest -q tests/test_easter.py (exit 0)")) == len(cleared)


def test_a_failure_run_again_with_a_semicolon_echo_says_why_it_stays(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """At a real bash: `pytest -q tests/test_easter.py >/dev/null; echo rc=$?` printed rc=0 after the failure,
    and precheck said only "failed (exit 1) … never seen passing", with no word of why that run did not count.
    The warning now says that the later line's status was echo's, so its result is unknown, and how to run it
    so that it counts (for the run of one of its tests too); a command not run again so says nothing more; and
    `&& echo` clears them."""
    commit(repo, "feat: easter", {**EASTER, "tests/test_easter.py": EASTER_FAILS_WITH_MARK})
    run_cli("-C", str(repo), "sync")
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    typed_in_bash(
        repo,
        "touch FAIL",
        "pytest -q -p no:cacheprovider tests/test_easter.py",
        "pytest -q -p no:cacheprovider tests/test_easter.py::test_easter_western >/dev/null",
        "python -m pytest -q -p no:cacheprovider tests/test_easter.py",
        "rm FAIL",
        "pytest -q -p no:cacheprovider tests/test_easter.py >/dev/null; echo rc=$?",
    )
    hint = (
        "followed by `; echo …`: that line's status is echo's, so its result is unknown; run it alone, or with"
        " `&& echo`, to clear this)"
    )
    for where in ("unsynced", "synced"):
        said = run_script("precheck", "--files", "src/dateutil/easter.py", cwd=repo)
        lines = [line for line in said.stderr.splitlines() if "never seen passing" in line]
        by_command = {line.split("`")[1]: line for line in lines}
        assert sorted(by_command) == [
            "pytest -q -p no:cacheprovider tests/test_easter.py",
            "pytest -q -p no:cacheprovider tests/test_easter.py::test_easter_western >/dev/null",
            "python -m pytest -q -p no:cacheprovider tests/test_easter.py",
        ], (where, said.stderr)
        assert by_command["pytest -q -p no:cacheprovider tests/test_easter.py"].endswith(hint), where
        # The run of the whole file would have covered the failed test's run too.
        assert by_command[
            "pytest -q -p no:cacheprovider tests/test_easter.py::test_easter_western >/dev/null"
        ].endswith(hint), where
        assert by_command["python -m pytest -q -p no:cacheprovider tests/test_easter.py"].endswith(
            "never seen passing — run it before committing"
        ), where
        run_cli("-C", str(repo), "sync")

    typed_in_bash(repo, "pytest -q -p no:cacheprovider tests/test_easter.py >/dev/null && echo ok")
    assert _failures(repo, "src/dateutil/easter.py") == []


def test_a_pass_followed_by_and_echo_clears_the_failure_and_a_semicolon_echo_does_not(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """At a real bash: after `pytest -q tests/test_easter.py` failed, `pytest -q tests/test_easter.py >/dev/null;
    echo rc=$?` printed rc=0, yet precheck kept "never seen passing". That line's recorded status is echo's
    (`false; echo rc=$?` records 0 too), so it is no pass of pytest, and still clears nothing; `… && echo ok`
    records pytest's (echo runs only after it passed), so its pass clears the failure, and its failure is
    pytest's failure."""
    commit(repo, "feat: easter", {**EASTER, "tests/test_easter.py": EASTER_FAILS_WITH_MARK})
    run_cli("-C", str(repo), "sync")
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    typed_in_bash(
        repo,
        "touch FAIL",
        "pytest -q -p no:cacheprovider tests/test_easter.py",
        "pytest -q -p no:cacheprovider tests/test_easter.py::test_easter_western >/dev/null",
        "false; echo rc=$?",
        "rm FAIL",
        "pytest -q -p no:cacheprovider tests/test_easter.py >/dev/null; echo rc=$?",
    )
    logged = {
        line["command"]: line["exit"]
        for line in map(json.loads, (Path(os.environ["NEXUSMEM_HOME"]) / "shell-history.jsonl").open())
    }
    assert logged["false; echo rc=$?"] == 0  # echo's status: nothing says what ran before it did
    assert logged["pytest -q -p no:cacheprovider tests/test_easter.py >/dev/null; echo rc=$?"] == 0
    assert _failures(repo, "src/dateutil/easter.py") == [
        "pytest -q -p no:cacheprovider tests/test_easter.py",
        "pytest -q -p no:cacheprovider tests/test_easter.py::test_easter_western >/dev/null",
    ]

    typed_in_bash(
        repo,
        "touch FAIL",
        "pytest -q -p no:cacheprovider tests/test_easter.py::test_easter_western && echo ok",
        "rm FAIL",
    )
    assert "pytest -q -p no:cacheprovider tests/test_easter.py::test_easter_western && echo ok" in _failures(
        repo, "src/dateutil/easter.py"
    )
    typed_in_bash(repo, "pytest -q -p no:cacheprovider tests/test_easter.py >/dev/null && echo ok")
    assert _failures(repo, "src/dateutil/easter.py") == []
    run_cli("-C", str(repo), "sync")
    assert _failures(repo, "src/dateutil/easter.py") == []  # the same from the memory
