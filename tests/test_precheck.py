"""precheck on real repositories: unresolved failures, resolution by a passing run (or a retry link), churn, exit
codes, speed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from nexusmem import precheck, sync
from nexusmem.paths import shell_log_path
from nexusmem.store.db import open_store

from helpers import commit, git, main_in_fresh_process, run_cli, run_script, typed_in_bash
from helpers import transcripts as T

DAY_MS = 86_400_000


def write_log(repo: Path, entries: list[tuple[str, int, int]]) -> None:
    """Shell-log lines (command, exit, ms ago) in REPO, as the prompt hooks write them."""
    now = int(time.time() * 1000)
    path = shell_log_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as handle:
        for n, (command, code, ago) in enumerate(entries):
            line = {"ts": now - ago, "cwd": str(repo), "exit": code, "command": command, "shell": "bash"}
            handle.write(json.dumps({**line, "session": f"s{n}", "v": 1}) + "\n")


def project(repo: Path) -> Path:
    commit(
        repo,
        "feat: cache and parser",
        {"src/cache.py": "x = 1\n", "src/parser.py": "y = 1\n", "tests/test_cache.py": "def test(): pass\n"},
    )
    return repo


def test_unresolved_failure_is_reported_with_command_exit_and_date(repo: Path) -> None:
    project(repo)
    write_log(repo, [("pytest tests/test_cache.py", 1, 2 * DAY_MS)])
    sync.sync(repo)
    (repo / "src/cache.py").write_text("x = 2\n", encoding="utf-8")
    git(repo, "add", "src/cache.py")
    result = run_cli("-C", str(repo), "precheck")
    day = time.strftime("%Y-%m-%d", time.gmtime(time.time() - 2 * 86400))  # dates are UTC everywhere
    assert (
        f"src/cache.py: `pytest tests/test_cache.py` failed (exit 1) on {day} and was never seen passing"
        " — run it before committing"
    ) in result.stderr
    assert result.exit_code == 0  # advisory
    strict = run_cli("-C", str(repo), "precheck", "--strict", ok=False)
    assert strict.exit_code == 1


def test_failure_named_by_path_and_by_directory(repo: Path) -> None:
    project(repo)
    write_log(repo, [("ruff check src/", 1, DAY_MS), ("cat tests/test_cache.py", 2, DAY_MS)])
    sync.sync(repo)
    found = precheck.run(repo, files=["tests/test_cache.py", "src/parser.py"])
    by_file = {(f.path, f.command) for f in found.findings}
    assert ("src/parser.py", "ruff check src/") in by_file
    assert ("tests/test_cache.py", "cat tests/test_cache.py") in by_file


def test_later_success_in_same_cwd_resolves_a_failure(repo: Path) -> None:
    project(repo)
    write_log(
        repo, [("pytest tests/test_cache.py", 1, 3 * DAY_MS), ("pytest tests/test_cache.py", 0, DAY_MS)]
    )
    sync.sync(repo)
    assert precheck.run(repo, files=["src/cache.py"]).findings == []


def test_success_before_the_failure_does_not_resolve_it(repo: Path) -> None:
    project(repo)
    write_log(
        repo, [("pytest tests/test_cache.py", 0, 3 * DAY_MS), ("pytest tests/test_cache.py", 1, DAY_MS)]
    )
    sync.sync(repo)
    assert [f.kind for f in precheck.run(repo, files=["src/cache.py"]).findings] == ["failure"]


def test_a_retry_link_from_the_failure_resolves_it_a_commit_link_does_not(repo: Path) -> None:
    project(repo)
    write_log(repo, [("pytest tests/test_cache.py", 1, DAY_MS), ("pytest tests/test_cache.py -x", 0, 1000)])
    sync.sync(repo)
    db = repo / ".nexusmem" / "memory.db"
    with open_store(db) as store:
        failure = next(n for n in store.iter_nodes("shell_command") if n.meta["exit"] == 1)
        other_run = next(n for n in store.iter_nodes("shell_command") if n.meta["exit"] == 0)
        fix = next(n for n in store.iter_nodes("git_commit"))
        with store.transaction():
            store.add_links([(failure.id, fix.id, "commit")])
    # "never seen passing" is about passing: a commit taken for its fix may still fail it.
    assert [f.command for f in precheck.run(repo, files=["src/cache.py"]).findings] == [
        "pytest tests/test_cache.py"
    ]
    with open_store(db) as store, store.transaction():
        store.add_links([(failure.id, other_run.id, "retry")])  # a retry the team store holds, say
    assert precheck.run(repo, files=["src/cache.py"]).findings == []


def test_a_conversation_that_discussed_the_failure_does_not_resolve_it(
    repo: Path, isolated_home: Path
) -> None:
    """An agent's `python -m pytest tests/test_plugins.py -q` failed and the session talked about it: the
    linker links that turn as the failure's `discussion`, and precheck took any link for a fix, so the warning
    went away though nothing ever passed. Only a passing run or a commit resolves a failure."""
    commit(
        repo,
        "feat: plugins",
        {"src/plugins.py": "PLUGINS = {}\n", "tests/test_plugins.py": "def test(): pass\n"},
        when=int(time.time()) - 2 * 86400,  # made before the failure: no fix of it
    )
    started = datetime.now(timezone.utc) - timedelta(hours=1)
    w = T.ClaudeWriter("b7d1e2f3-0000-4000-8000-0000000000aa", repo, started)
    w.user("test_plugins fails since the registry change: find out why the plugins leak between tests")
    w.bash(
        "toolu_01PLUGINS",
        "python -m pytest tests/test_plugins.py -q",
        "FAILED tests/test_plugins.py::test_isolated - assert 2 == 1",
        exit_code=1,
    )
    w.say("The plugins share one global dict, so a plugin registered by one test leaks into the next.")
    w.write(isolated_home / ".claude" / "projects" / "-repo" / "b7d1e2f3-0000-4000-8000-0000000000aa.jsonl")
    run_cli("-C", str(repo), "sync", "--no-embed", "--conversation", "--link-failures")
    db = repo / ".nexusmem" / "memory.db"
    with open_store(db) as store:
        (failure,) = [n for n in store.iter_nodes("shell_command") if n.meta.get("exit") == 1]
        assert [rel for _, _, rel in store.links_from([failure.id])] == ["discussion"]
    data = json.loads(
        run_cli("-C", str(repo), "precheck", "--json", "--files", "tests/test_plugins.py").stdout
    )
    assert [(f["kind"], f["command"], f["exit"]) for f in data["findings"]] == [
        ("failure", "python -m pytest tests/test_plugins.py -q", 1)
    ]


def test_old_failures_are_ignored(repo: Path) -> None:
    project(repo)
    write_log(repo, [("pytest tests/test_cache.py", 1, 31 * DAY_MS)])
    sync.sync(repo)
    assert precheck.run(repo, files=["src/cache.py"]).findings == []


def test_churn_flags_four_recent_commits(repo: Path) -> None:
    project(repo)
    for n in range(3):
        commit(repo, f"fix: cache {n}", {"src/cache.py": f"x = {n + 10}\n"})
    sync.sync(repo)
    assert precheck.run(repo, files=["src/cache.py"]).findings[0].kind == "churn"  # 4 with the first
    assert precheck.run(repo, files=["src/parser.py"]).findings == []  # 1 commit
    old = int(time.time()) - 40 * 86400
    commit(repo, "fix: old parser change", {"src/parser.py": "y = 5\n"}, when=old)
    sync.sync(repo)
    data = json.loads(run_cli("-C", str(repo), "precheck", "--json", "--files", "src/cache.py").stdout)
    assert data["findings"][0]["kind"] == "churn" and data["findings"][0]["commits"] == 4


def test_module_name_is_matched_but_docs_and_generic_names_are_not(repo: Path) -> None:
    project(repo)
    commit(repo, "docs", {"docs/cache.md": "# Cache\n", "src/main.py": "z = 1\n"})
    write_log(repo, [("python -m demo.cache --selftest", 1, DAY_MS), ("make main", 2, DAY_MS)])
    sync.sync(repo)
    found = precheck.run(repo, files=["src/cache.py", "docs/cache.md", "src/main.py"])
    assert {f.path for f in found.findings} == {"src/cache.py"}


@pytest.mark.slow
def test_outside_a_repo_or_without_memory_says_so_and_exits_0(repo: Path, tmp_path: Path) -> None:
    outside = tmp_path / "plain"
    outside.mkdir()
    for where in (outside, repo):
        proc = run_script("precheck", "--strict", cwd=where)
        assert proc.returncode == 0, proc.stderr
        assert "nothing was checked" in proc.stderr and proc.stdout == ""


def test_working_and_explicit_file_lists(repo: Path) -> None:
    project(repo)
    write_log(repo, [("pytest tests/test_cache.py", 1, DAY_MS)])
    sync.sync(repo)
    (repo / "src/cache.py").write_text("x = 3\n", encoding="utf-8")
    assert precheck.run(repo).files == []
    assert precheck.run(repo, working=True).files == ["src/cache.py"]
    assert precheck.run(repo / "src", files=["cache.py"]).files == ["src/cache.py"]


@pytest.mark.slow
def test_commit_all_temporary_index_is_what_gets_checked(repo: Path) -> None:
    """`git commit -a` runs hooks against a temporary index: precheck must see those files."""
    project(repo)
    write_log(repo, [("pytest tests/test_cache.py", 1, DAY_MS)])
    sync.sync(repo)
    hook = repo / ".git" / "hooks" / "pre-commit"
    script = Path(sys.executable).parent / "nexusmem"
    hook.write_text(f"#!/bin/sh\nexec '{script}' precheck --strict\n", encoding="utf-8")
    hook.chmod(0o755)
    (repo / "src/cache.py").write_text("x = 4\n", encoding="utf-8")
    proc = subprocess.run(
        ["git", "commit", "-a", "-m", "change"],
        cwd=repo,
        capture_output=True,
        text=True,
        env=dict(os.environ),
    )
    assert proc.returncode == 1 and "src/cache.py: `pytest tests/test_cache.py` failed" in proc.stderr


@pytest.mark.slow
def test_precheck_imports_nothing_heavy(repo: Path) -> None:
    project(repo)
    sync.sync(repo)
    heavy = ("mcp", "numpy", "httpx", "wordllama", "git", "filelock", "click", "nexusmem.store.db", "inspect")
    _, loaded = main_in_fresh_process(repo, ["precheck", "--files", "src/cache.py"], heavy)
    assert loaded == []


@pytest.mark.slow
def test_the_hooks_plain_path_answers_as_the_click_command(repo: Path, tmp_path: Path) -> None:
    """The console script answers the hook's forms of precheck without click (cli/plain.py): same output
    and exit code as the click command; help, unknown options and usage errors are click's."""
    project(repo)
    write_log(
        repo,
        [
            ("pytest tests/test_cache.py", 1, DAY_MS),
            ("make check \x1b]52;c;aGk=\x07 tests/test_cache.py", 2, DAY_MS),
        ],
    )
    sync.sync(repo)
    (repo / "src/cache.py").write_text("x = 2\n", encoding="utf-8")
    git(repo, "add", "src/cache.py")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    forms = [
        ["precheck"],
        ["precheck", "--strict"],
        ["precheck", "--json"],
        ["precheck", "--files", "--", "src/cache.py", "src/parser.py"],
        ["precheck", "src/cache.py", "--strict", "--json"],
        ["precheck", "--working"],
        ["precheck", "-C", str(repo), "--strict"],
        ["-C", str(repo), "precheck", "--json"],  # git-style, before the command
    ]
    for form in forms:
        plain = run_script(*form, cwd=repo)
        clicked = run_cli(*form, cwd=repo, ok=False)
        assert (plain.returncode, plain.stdout, plain.stderr) == (
            clicked.exit_code,
            clicked.stdout,
            clicked.stderr,
        ), form
    assert "failed (exit 1)" in run_script("precheck", cwd=repo).stderr
    shown = run_script("precheck", cwd=repo).stderr
    assert "\\x1b]52" in shown and "\x1b" not in shown  # shown escaped, never sent raw
    assert run_script("precheck", "--strict", cwd=repo).returncode == 1
    assert run_script("precheck", "-C", str(repo), cwd=elsewhere).returncode == 0
    assert "Usage:" in run_script("precheck", "--help", cwd=repo).stdout
    bogus = run_script("precheck", "--bogus", cwd=repo)
    assert bogus.returncode == 2 and "No such option '--bogus'" in bogus.stderr
    both = run_script("precheck", "--files", "--working", "a.py", cwd=repo)
    assert both.returncode == 2 and "--files and --working are exclusive" in both.stderr


def test_findings_json_shape(repo: Path) -> None:
    project(repo)
    write_log(repo, [("pytest tests/test_cache.py", 127, DAY_MS)])
    sync.sync(repo)
    data: dict[str, Any] = json.loads(run_cli("-C", str(repo), "precheck", "--json", "src/cache.py").stdout)
    assert data["checked"] is True and data["files"] == ["src/cache.py"]
    (finding,) = data["findings"]
    assert finding["exit"] == 127 and finding["command"] == "pytest tests/test_cache.py" and finding["date"]


def test_a_command_stopped_from_the_keyboard_is_not_a_failure(repo: Path) -> None:
    """A watcher ended with Ctrl-C (130), a pager quit with Ctrl-\\ (131), an editor suspended with Ctrl-Z
    (148): precheck does not ask to run them again, synced or not, and the linker links none of them to a
    fix; a real failure beside them still counts."""
    project(repo)
    sync.sync(repo)
    write_log(
        repo,
        [
            ("tail -f src/cache.py", 130, 3 * 60_000),
            ("less src/cache.py", 131, 2 * 60_000),
            ("vim src/cache.py", 148, 60_000),
        ],
    )
    (repo / "src/cache.py").write_text("x = 2\n", encoding="utf-8")
    git(repo, "add", "src/cache.py")
    unsynced = json.loads(run_cli("-C", str(repo), "precheck", "--json").stdout)
    assert unsynced["checked"] and unsynced["findings"] == []
    run_cli("-C", str(repo), "sync", "--link-failures")
    assert json.loads(run_cli("-C", str(repo), "precheck", "--json").stdout)["findings"] == []
    assert run_cli("-C", str(repo), "precheck", "--strict").exit_code == 0
    status = json.loads(run_cli("-C", str(repo), "status", "--json").stdout)
    assert not status.get("links_by_relation", {}).get("retry"), status
    write_log(repo, [("python -m pytest src/cache.py", 1, 30_000)])
    run_cli("-C", str(repo), "sync")
    [finding] = json.loads(run_cli("-C", str(repo), "precheck", "--json").stdout)["findings"]
    assert finding["exit"] == 1


def hook_line(cwd: Path, command: str, code: int, ago_ms: int) -> bytes:
    """One line exactly as shell/nexusmem.bash's printf writes it (key order, no spaces)."""
    ts = int(time.time() * 1000) - ago_ms
    text = json.dumps(command)[1:-1]
    return (
        f'{{"ts":{ts},"cwd":"{cwd}","exit":{code},"pipestatus":[{code}],"duration_ms":850,'
        f'"command":"{text}","shell":"bash","session":"19a2b-1f2e-00c1","v":1}}\n'
    ).encode()


def test_a_failure_not_yet_synced_warns(repo: Path) -> None:
    """The test that just failed on a staged file warns before any `nexusmem sync`; its later success, also
    unsynced, silences it; another repository's lines and a line cut short are ignored."""
    project(repo)
    write_log(repo, [("make lint", 0, DAY_MS)])
    sync.sync(repo)
    (repo / "src/cache.py").write_text("x = 2\n", encoding="utf-8")
    git(repo, "add", "src/cache.py")
    assert "failed" not in run_cli("-C", str(repo), "precheck").stderr
    with shell_log_path().open("ab") as log:
        log.write(
            hook_line(repo / "src", "pytest ../tests/test_cache.py --token=ghp_" + "a1B2" * 9, 1, 60_000)
        )
        log.write(hook_line(repo.parent, "pytest tests/test_cache.py", 2, 50_000))  # not this repository
    result = run_cli("-C", str(repo), "precheck", "--json")
    [finding] = json.loads(result.stdout)["findings"]
    assert finding["path"] == "src/cache.py" and finding["exit"] == 1
    assert finding["command"].startswith("pytest ../tests/test_cache.py --token=")
    assert "a1B2a1B2" not in result.stdout  # redacted, as a sync would store it
    with shell_log_path().open("ab") as log:
        log.write(
            hook_line(repo / "src", "pytest ../tests/test_cache.py --token=ghp_" + "a1B2" * 9, 0, 10_000)
        )
        log.write(b'{"ts":1,"cwd":"' + str(repo).encode() + b'","command":"pytest')  # still being written
    assert json.loads(run_cli("-C", str(repo), "precheck", "--json").stdout)["findings"] == []
    # Once synced, the same history gives the same answer from the store.
    sync.sync(repo)
    assert json.loads(run_cli("-C", str(repo), "precheck", "--json").stdout)["findings"] == []


def test_an_unsynced_tail_is_redacted_only_when_it_could_change_the_answer(repo: Path) -> None:
    """A tail of passing commands is read as typed (the redaction engine, ~0.15 s, is not loaded); a failure
    in it is answered from the redacted tail, exactly as after a sync: two runs that differ only in a
    secret are one command, so the second run's success resolves the first run's failure."""
    project(repo)
    write_log(repo, [("make lint", 0, DAY_MS)])
    sync.sync(repo)
    (repo / "src/cache.py").write_text("x = 2\n", encoding="utf-8")
    git(repo, "add", "src/cache.py")
    token = "ghp_" + "a1B2" * 9
    other = "ghp_" + "c3D4" * 9
    with shell_log_path().open("ab") as log:
        log.write(hook_line(repo, f"pytest tests/test_cache.py --token={token}", 0, 60_000))
    code = (
        "import sys, json; from nexusmem import precheck\n"
        "r = precheck.run(files=['src/cache.py'])\n"
        "print(json.dumps([len(r.findings), 'nexusmem.redact_engine' in sys.modules]))"
    )

    def in_process() -> list[Any]:
        out = subprocess.run(
            [sys.executable, "-c", code],
            cwd=repo,
            capture_output=True,
            text=True,
            check=True,
            env=dict(os.environ),
        ).stdout
        answer: list[Any] = json.loads(out.splitlines()[-1])
        return answer

    assert in_process() == [0, False]
    with shell_log_path().open("ab") as log:
        log.write(hook_line(repo, f"pytest tests/test_cache.py --token={other}", 1, 50_000))
    assert in_process() == [1, True]
    shown = run_cli("-C", str(repo), "precheck", "--json").stdout
    assert "c3D4c3D4" not in shown and json.loads(shown)["findings"][0]["exit"] == 1
    with shell_log_path().open("ab") as log:
        log.write(hook_line(repo, f"pytest tests/test_cache.py --token={token}", 0, 40_000))
    before_sync = json.loads(run_cli("-C", str(repo), "precheck", "--json").stdout)["findings"]
    sync.sync(repo)
    assert before_sync == json.loads(run_cli("-C", str(repo), "precheck", "--json").stdout)["findings"] == []


def test_an_unsynced_tail_loads_neither_the_collector_nor_dataclasses(repo: Path) -> None:
    """Reading the hook log's unsynced tail (sources/shell/tail) costs the log reader only: not the shell
    collector, nexusmem.nodes, dataclasses (inspect) or the redaction engine, for a tail of passing runs;
    nor typing or subprocess (git is spawned without it), failing runs or not."""
    project(repo)
    write_log(repo, [("make lint", 0, DAY_MS)])
    sync.sync(repo)
    (repo / "src/cache.py").write_text("x = 2\n", encoding="utf-8")
    git(repo, "add", "src/cache.py")
    with shell_log_path().open("ab") as log:
        for i in range(20):
            log.write(hook_line(repo, f"pytest tests/test_cache.py -k case_{i}", 0, 60_000 - i))
    heavy = (
        "nexusmem.sources.shell.source",
        "nexusmem.nodes",
        "dataclasses",
        "click",
        "nexusmem.redact_engine",
        "typing",
        "subprocess",
    )

    def run() -> tuple[list[dict[str, Any]], list[str]]:
        shown, loaded = main_in_fresh_process(repo, ["precheck", "--json"], heavy)
        findings: list[dict[str, Any]] = json.loads(shown)["findings"]
        return findings, loaded

    assert run() == ([], [])
    with shell_log_path().open("ab") as log:  # a failure in the tail: read (and shown) redacted
        log.write(hook_line(repo, "pytest tests/test_cache.py -k case_0", 1, 1_000))
    findings, loaded = run()
    assert [(f["exit"], f["command"]) for f in findings] == [(1, "pytest tests/test_cache.py -k case_0")]
    assert loaded == ["nexusmem.redact_engine"]


def test_the_tail_redacted_in_place_is_the_tail_read_redacted(repo: Path) -> None:
    """precheck reads the unsynced tail once, as typed; redacting that read (tail.redacted_tail) gives what
    reading the log redacted gives: the commands, and the files named by the redacted text only (a path
    holding a token is no longer named once the token is a placeholder)."""
    from nexusmem.sources.shell import tail

    project(repo)
    write_log(repo, [("make lint", 0, DAY_MS)])
    sync.sync(repo)
    token = "ghp_" + "a1B2" * 9
    (repo / "keys").mkdir()
    (repo / "keys" / f"{token}.txt").write_text("x\n", encoding="utf-8")
    (repo / "src" / "deep").mkdir()
    with shell_log_path().open("ab") as log:
        log.write(hook_line(repo, f"cat keys/{token}.txt src/cache.py", 1, 4_000))
        log.write(hook_line(repo, "pytest tests/test_cache.py", 0, 3_000))
        log.write(hook_line(repo / "src", f"pytest ../tests/test_cache.py --token={token}", 1, 2_000))
        log.write(hook_line(repo / "src" / "deep", f"ls ../cache.py --token={token}", 1, 1_500))
        log.write(hook_line(repo, f"pytest tests/test_cache.py --token={token}", 1, 1_000))
    with open_store(repo / ".nexusmem" / "memory.db") as store:
        cursor = store.cursor("shell")
    typed = tail.unsynced_tail(repo, cursor, redacted=False)
    read_redacted = tail.unsynced_tail(repo, cursor, redacted=True)
    assert tail.redacted_tail(repo, typed) == read_redacted
    assert [t.files for t in typed][:1] == [(f"keys/{token}.txt", "src/cache.py")]
    assert [t.files for t in read_redacted] == [
        ("src/cache.py",),
        ("tests/test_cache.py",),
        ("tests/test_cache.py",),
        ("src/cache.py",),
        ("tests/test_cache.py",),
    ]
    assert all(token not in t.command for t in read_redacted)


def test_a_secret_in_a_failing_unsynced_command_is_never_shown(repo: Path) -> None:
    """The console script's plain path, human and JSON output: a failing command of the unsynced tail
    carrying secrets is shown redacted, exactly as it is shown once synced."""
    project(repo)
    write_log(repo, [("make lint", 0, DAY_MS)])
    sync.sync(repo)
    (repo / "src/cache.py").write_text("x = 2\n", encoding="utf-8")
    git(repo, "add", "src/cache.py")
    key = "sk-" + "7Qx9" * 10
    command = (
        f"pytest tests/test_cache.py --api-key={key} --db=postgres://app:hunter2-Secret9@db.local/app"
        " AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
    )
    with shell_log_path().open("ab") as log:
        log.write(hook_line(repo, command, 1, 30_000))
    human = run_script("precheck", cwd=repo)
    as_json = run_script("precheck", "--json", cwd=repo)
    for out in (human.stdout + human.stderr, as_json.stdout):
        assert "failed (exit 1)" in out or '"exit": 1' in out
        for secret in (key, "7Qx97Qx9", "hunter2-Secret9", "wJalrXUtnFEMI"):
            assert secret not in out, secret
        assert "«redacted:" in out
    before = json.loads(as_json.stdout)["findings"]
    sync.sync(repo)
    assert json.loads(run_script("precheck", "--json", cwd=repo).stdout)["findings"] == before


def test_only_the_tails_failures_and_their_possible_retries_are_redacted(repo: Path) -> None:
    """With a failure in the unsynced tail, precheck redacts the failing commands (it may show them) and the
    passing ones that could be their retry once redacted (same cwd, every placeholder-free word of the
    redacted failure among theirs), not the rest of the tail; the answer is the one a sync gives."""
    from nexusmem.sources.shell import tail

    project(repo)
    write_log(repo, [("make lint", 0, DAY_MS)])
    sync.sync(repo)
    (repo / "src/cache.py").write_text("x = 2\n", encoding="utf-8")
    git(repo, "add", "src/cache.py")
    t1, t2, t3, t4 = ("ghp_" + part * 9 for part in ("a1B2", "c3D4", "e5F6", "g7H8"))
    failing = f"pytest tests/test_cache.py --token={t1}"
    retry = f"pytest tests/test_cache.py --token={t2}"  # the same command once redacted
    lines = [
        (repo, failing, 1),
        (repo, retry, 0),
        (repo, f"pytest tests/test_parser.py --token={t3}", 0),  # lacks the word tests/test_cache.py
        (repo / "src", f"pytest ../tests/test_cache.py --token={t4}", 0),  # another directory
        (repo, f"make deploy PASSWORD={t4}", 0),
        (repo, f"pytest tests/test_cache.py -k slow --token={t3}", 1),  # failing: redacted
    ]
    with shell_log_path().open("ab") as log:
        for n, (cwd, command, code) in enumerate(lines):
            log.write(hook_line(cwd, command, code, 60_000 - n * 1_000))
    with open_store(repo / ".nexusmem" / "memory.db") as store:
        cursor = store.cursor("shell")
    typed = tail.unsynced_tail(repo, cursor, redacted=False)
    merged: list[tuple[str, str, int, str | None, int | None]]
    merged = [(t.key, t.command, t.ts, t.cwd, t.exit) for t in typed]
    texts = precheck._texts_to_redact(typed, precheck._open_failures(merged))
    assert sorted(texts) == sorted([failing, retry, lines[-1][1]])
    assert texts[failing] == texts[retry] == "pytest tests/test_cache.py --token=«redacted:github-token»"
    shown = run_cli("-C", str(repo), "precheck", "--json").stdout
    [finding] = json.loads(shown)["findings"]  # the retry resolved the first failure
    assert finding["command"] == "pytest tests/test_cache.py -k slow --token=«redacted:github-token»"
    assert not any(secret in shown for secret in (t1, t2, t3, t4))
    sync.sync(repo)
    assert json.loads(run_cli("-C", str(repo), "precheck", "--json").stdout)["findings"] == [finding]


def test_failing_runs_of_other_files_in_the_tail_are_not_redacted(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An agent retrying failing tests leaves thousands of unsynced failures; only those naming a staged
    file (or an importer) can be shown, so only they are redacted (~0.1 ms each: 0.8 s for 7,000)."""
    from nexusmem import redact as redact_module

    project(repo)
    sync.sync(repo)
    (repo / "src/cache.py").write_text("x = 2\n", encoding="utf-8")
    git(repo, "add", "src/cache.py")
    token = "ghp_" + "a1B2" * 9
    with shell_log_path().open("ab") as log:
        for n in range(300):
            log.write(hook_line(repo, f"pytest tests/test_other_{n}.py --token={token}", 1, 90_000 - n))
        log.write(hook_line(repo, f"pytest tests/test_cache.py --token={token}", 1, 1_000))
    calls: list[str] = []
    real = redact_module.redact

    def counted(text: str) -> str:
        calls.append(text)
        return real(text)

    monkeypatch.setattr(redact_module, "redact", counted)
    result = precheck.run(repo)
    assert [f.command for f in result.findings if f.kind == "failure"] == [
        "pytest tests/test_cache.py --token=«redacted:github-token»"
    ]
    assert len(calls) <= 2, calls


def test_a_tail_redacted_in_part_answers_as_a_sync_does(repo: Path) -> None:
    """Failures and passes that differ only in secrets, in two directories, some failures already synced:
    precheck's answer from the unsynced tail (redacting only what can matter) is the answer after the sync
    (every command redacted), and no secret of the tail is printed."""
    project(repo)
    (repo / "src/cache.py").write_text("x = 2\n", encoding="utf-8")
    (repo / "src/parser.py").write_text("y = 2\n", encoding="utf-8")
    git(repo, "add", "src/cache.py", "src/parser.py")
    secrets = ["ghp_" + f"{n:02d}aB" * 9 for n in range(6)]
    shapes = [
        "pytest tests/test_cache.py --token={}",
        "pytest tests/test_cache.py -x --token={}",
        "env API_TOKEN={} pytest src/parser.py",
        "{}",  # a command that is all secret
        "curl -H 'Authorization: Bearer {}' http://localhost/cache",
        "ruff check src/ --api-key={}",
    ]
    runs: list[tuple[Path, str, int]] = []
    for n in range(36):  # six rounds of the six shapes, each round with its own secret
        turn = n // len(shapes)
        cwd = repo if n % 5 else repo / "src"
        command = shapes[n % len(shapes)].format(secrets[turn])
        runs.append((cwd, command, 1 + turn % 2 if turn in (0, 2, 5) else 0))
    write_log(repo, [("pytest tests/test_cache.py --token=" + secrets[1], 1, 2 * DAY_MS)])
    sync.sync(repo)  # one failure stored redacted: a redacted success in the tail can be its retry
    with shell_log_path().open("ab") as log:
        for n, (cwd, command, code) in enumerate(runs):
            log.write(hook_line(cwd, command, code, 100_000 - n * 1_000))
    before = run_cli("-C", str(repo), "precheck", "--json").stdout
    human = run_cli("-C", str(repo), "precheck")
    for out in (before, human.stdout + human.stderr):
        assert not any(secret[:12] in out for secret in secrets)
    sync.sync(repo)
    after = json.loads(run_cli("-C", str(repo), "precheck", "--json").stdout)["findings"]
    assert json.loads(before)["findings"] == after
    assert {f["kind"] for f in after} == {"failure"} and len(after) >= 4


def test_the_tails_command_type_has_the_fields_its_annotations_declare() -> None:
    """TailCommand's fields are declared twice in sources/shell/tail.py (annotated for the type checker, a
    collections.namedtuple at run time): the two agree, names, order and defaults."""
    import ast
    import inspect

    from nexusmem.sources.shell import tail

    module = ast.parse(inspect.getsource(tail))
    (declared,) = [
        node for node in ast.walk(module) if isinstance(node, ast.ClassDef) and node.name == "_Fields"
    ]
    fields = [s for s in declared.body if isinstance(s, ast.AnnAssign)]
    names = [s.target.id for s in fields if isinstance(s.target, ast.Name)]
    defaults = {
        s.target.id: ast.literal_eval(s.value)
        for s in fields
        if isinstance(s.target, ast.Name) and s.value is not None
    }
    assert tail.TailCommand._fields == tuple(names)
    assert tail.TailCommand._field_defaults == defaults


def test_a_staged_name_that_is_not_utf8_leaves_the_other_files_checked(repo: Path) -> None:
    """One staged file named in Latin-1 bytes used to make the whole check fail (a lone surrogate reached
    SQLite): the commit went on with no warning for the file a failing command named."""
    project(repo)
    write_log(repo, [("pytest tests/test_cache.py", 1, DAY_MS)])
    sync.sync(repo)
    odd = os.path.join(os.fsencode(repo), b"src", b"caf\xe9-notes.py")
    with open(odd, "wb") as handle:
        handle.write(b"z = 1\n")
    (repo / "src/cache.py").write_text("x = 5\n", encoding="utf-8")
    subprocess.run([b"git", b"add", b"src/cache.py", odd], cwd=repo, check=True)
    found = precheck.run(repo)
    assert found.checked, found.reason
    assert "src/caf\\xe9-notes.py" in found.files
    assert {f.path for f in found.findings} == {"src/cache.py"}
    result = run_cli("-C", str(repo), "precheck")
    assert "src/cache.py: `pytest tests/test_cache.py` failed" in result.stderr
    assert "not checked" not in result.stderr
    # The same name given on the command line (argv holds it as surrogates) is read the same way.
    named = precheck.run(repo, files=[os.fsdecode(odd), "src/cache.py"])
    assert named.checked and {f.path for f in named.findings} == {"src/cache.py"}


def test_while_the_first_sync_builds_the_memory_precheck_says_so(repo: Path) -> None:
    """The first commit makes .nexusmem/ and starts the first sync in the background; every commit until it
    finished was told "has no NexusMem memory: run `nexusmem sync`", the advice to do what was running."""
    project(repo)
    state = repo / ".nexusmem"
    state.mkdir(mode=0o700)
    (state / "sync.pending").touch()
    git(repo, "add", "-A")
    said = run_cli("-C", str(repo), "precheck").stderr
    assert (
        "still being built in the background: nothing checked yet" in said
        and "run `nexusmem sync`" not in said
    )
    (state / "sync.pending").unlink()
    said = run_cli("-C", str(repo), "precheck").stderr
    assert f"{state} holds no memory.db: nothing checked (run `nexusmem sync` to build it)" in said, said


def test_a_deleted_memory_db_is_named_not_a_missing_memory_folder(repo: Path) -> None:
    """.nexusmem/ is there but its memory.db was deleted: precheck said the repository "has no NexusMem
    memory (.nexusmem/)", naming the folder that is there."""
    project(repo)
    sync.sync(repo, embed=False)
    (repo / ".nexusmem" / "memory.db").unlink()
    git(repo, "add", "-A")
    said = run_cli("-C", str(repo), "precheck").stderr
    assert "holds no memory.db" in said and "(.nexusmem/)" not in said, said


def test_a_deleted_file_and_a_name_with_a_newline(repo: Path) -> None:
    """`git rm src/cache.py` was told to run its failing test before committing (--strict refused deleting
    a broken file), and a staged name holding a newline split the warning line in two."""
    project(repo)
    sync.sync(repo)
    odd = "src/nl\nname.py"
    commit(repo, "feat: odd name", {odd: "z = 1\n"})
    write_log(repo, [("pytest src/cache.py", 1, 60_000), (f"pytest '{odd}'", 1, 60_000)])
    git(repo, "rm", "-q", "src/cache.py")
    assert "src/cache.py" not in run_cli("-C", str(repo), "precheck", "--strict").stderr
    (repo / odd).write_text("z = 2\n", encoding="utf-8")
    git(repo, "add", odd)
    said = run_cli("-C", str(repo), "precheck", ok=False).stderr
    assert "src/nl\\nname.py: `pytest" in said, said
    assert not any(line.startswith("name.py") for line in said.splitlines()), said


def test_a_store_another_process_holds_locked_is_said_plainly(repo: Path) -> None:
    """A store held in an exclusive lock past precheck's wait printed `OperationalError: database is locked`
    and sent the user to `doctor`, which has nothing to say about a lock."""
    import sqlite3

    project(repo)
    sync.sync(repo)
    holder = sqlite3.connect(repo / ".nexusmem" / "memory.db", isolation_level=None)
    try:
        holder.execute("PRAGMA locking_mode=EXCLUSIVE")
        holder.execute("BEGIN EXCLUSIVE")
        holder.execute("UPDATE meta SET key = key")
        (repo / "src/cache.py").write_text("x = 3\n", encoding="utf-8")
        git(repo, "add", "src/cache.py")
        done = run_script("precheck", "--strict", cwd=repo)  # another process: OS locks are per process
    finally:
        holder.close()
    said = done.stderr
    assert done.returncode == 0, said
    assert "another process holds the store locked; the commit goes on" in said, said
    assert "OperationalError" not in said and "doctor" not in said


def test_a_linked_worktree_without_its_own_memory_is_checked_against_the_main_trees(
    repo: Path, tmp_path: Path
) -> None:
    """In a `git worktree add` checkout, query and status read the main work tree's memory; precheck said
    "has no NexusMem memory: nothing checked", so a strict hook let through what the main tree refused.
    Both a synced failure and one the hook log holds unsynced (run in the worktree) are found."""
    project(repo)
    sync.sync(repo)
    feature = tmp_path / "feature"
    git(repo, "worktree", "add", "-q", str(feature), "-b", "feature")
    write_log(feature, [("pytest tests/test_cache.py", 1, DAY_MS)])
    sync.sync(repo)
    with shell_log_path().open("ab") as log:
        log.write(hook_line(feature / "src", "python -m parser_selftest ../src/parser.py", 2, 60_000))
    (feature / "src/cache.py").write_text("x = 2\n", encoding="utf-8")
    (feature / "src/parser.py").write_text("y = 2\n", encoding="utf-8")
    git(feature, "add", "src/cache.py", "src/parser.py")
    result = run_cli("-C", str(feature), "precheck", "--json")
    findings = json.loads(result.stdout)["findings"]
    found = {(f["path"], f["exit"]) for f in findings}
    assert found == {("src/cache.py", 1), ("src/parser.py", 2)}, result.stdout
    # Run in the other checkout: said, so two runs of one command in two checkouts do not read the same.
    cache = next(f for f in findings if f["path"] == "src/cache.py")
    assert "`pytest tests/test_cache.py` failed" in cache["message"], cache[
        "message"
    ]  # this checkout: no folder
    assert run_cli("-C", str(feature), "precheck", "--strict", ok=False).exit_code == 1
    assert not (feature / ".nexusmem").exists()  # no second memory split off


def test_in_a_linked_worktree_folders_are_named_from_it_and_its_unsynced_pass_counts(
    repo: Path, tmp_path: Path
) -> None:
    """Commands are kept with their folder told from the main work tree (`../feature`): precheck in the
    worktree named its own failure `in ../feature` and the main tree's with no folder, and a pass in the
    worktree not yet synced no longer answered the worktree's synced failure."""
    project(repo)
    sync.sync(repo)
    feature = tmp_path / "feature"
    git(repo, "worktree", "add", "-q", str(feature), "-b", "feature")
    write_log(feature, [("pytest tests/test_cache.py", 1, DAY_MS)])
    write_log(repo, [("pytest tests/test_cache.py", 2, DAY_MS // 2)])
    sync.sync(repo)
    (feature / "src/cache.py").write_text("x = 2\n", encoding="utf-8")
    git(feature, "add", "src/cache.py")
    messages = [
        f["message"] for f in json.loads(run_cli("-C", str(feature), "precheck", "--json").stdout)["findings"]
    ]
    assert any("`pytest tests/test_cache.py` failed (exit 1)" in m for m in messages), messages
    assert any(f"`pytest tests/test_cache.py` in ../{repo.name} failed (exit 2)" in m for m in messages), (
        messages
    )
    with shell_log_path().open("ab") as log:  # it passes in the worktree now; not synced yet
        log.write(hook_line(feature, "pytest tests/test_cache.py", 0, 60_000))
    messages = [
        f["message"] for f in json.loads(run_cli("-C", str(feature), "precheck", "--json").stdout)["findings"]
    ]
    assert not any("(exit 1)" in m for m in messages), messages  # answered by the unsynced pass
    assert any("(exit 2)" in m for m in messages), messages  # the main tree's failure still stands


def test_a_failed_git_command_is_no_check_to_run_before_committing(repo: Path) -> None:
    """`git add notes.txt && git commit -m` (no message: exit 129) named the file, and every later commit of
    it was told to "run it before committing" (as it was of pytest's exit 5, no tests collected); a test
    run that failed is still found beside them."""
    project(repo)
    write_log(
        repo,
        [
            ("git add src/cache.py && git commit -m", 129, 3 * 60_000),
            ("GIT_EDITOR=true git commit src/cache.py", 1, 2 * 60_000),
            ("pytest tests/test_cache.py", 1, 60_000),
            # pytest's exit 5: "no tests collected" (a -k that matched nothing), no failure either
            ("pytest tests/test_cache.py -k nothing_matches", 5, 50_000),
        ],
    )
    sync.sync(repo)
    (repo / "src/cache.py").write_text("x = 2\n", encoding="utf-8")
    git(repo, "add", "src/cache.py")
    findings = json.loads(run_cli("-C", str(repo), "precheck", "--json").stdout)["findings"]
    assert [f["command"] for f in findings] == ["pytest tests/test_cache.py"], findings


def test_a_file_a_failed_line_only_writes_to_is_not_named_by_it(repo: Path) -> None:
    """`echo "# 6" >> src/cache.py; git add -A src; time git commit -q -m "tz: tweak"; time nexusmem team
    push` exited 1 because `team push` failed, and every later commit of src/cache.py was told "`echo "# 6"
    >> src/cache.py; git add …` failed (exit 1) … never seen passing — run it before committing". A file the
    line only writes to through a redirection, or hands to git, is no file it ran or tested; a file a command
    of the line runs is still named, and so is a test the line runs before it writes its output to a file."""
    project(repo)
    write_log(
        repo,
        [
            (
                'echo "# 6" >> src/cache.py; git add -A src; time git commit -q -m "tz: tweak";'
                ' time nexusmem query --team "x"; time nexusmem team push',
                1,
                3 * 60_000,
            ),
            ("date > src/parser.py && git add src/parser.py", 1, 2 * 60_000),
            ("pytest tests/test_cache.py > /tmp/out.log 2>&1", 1, 60_000),
            ("python src/parser.py >> build.log", 1, 50_000),
        ],
    )
    sync.sync(repo)
    for path in ("src/cache.py", "src/parser.py"):
        (repo / path).write_text("x = 2\n", encoding="utf-8")
        git(repo, "add", path)
    findings = json.loads(run_cli("-C", str(repo), "precheck", "--json").stdout)["findings"]
    assert sorted((f["path"], f["command"]) for f in findings if f["kind"] == "failure") == [
        ("src/cache.py", "pytest tests/test_cache.py > /tmp/out.log 2>&1"),
        ("src/parser.py", "python src/parser.py >> build.log"),
    ], findings


def _four_commits_of(repo: Path, path: str) -> None:
    """c0 synced, then c1..c4 each changing PATH, synced (as the post-commit sync leaves the memory)."""
    commit(repo, "c0", {path: "0\n"})
    sync.sync(repo)
    for i in range(1, 5):
        commit(repo, f"c{i}", {path: "".join(f"{n}\n" for n in range(i + 1))})
    sync.sync(repo)


def test_commits_a_reset_dropped_count_neither_as_churn_nor_against_strict(repo: Path) -> None:
    """No hook runs on `git reset --hard HEAD~2`: the memory still held c3 and c4, so a file changed in
    c1..c4 was "changed in 5 commits (high churn)" and a --strict commit was refused on every retry (the
    refused commit never reached the post-commit sync that prunes them). The commits no ref reaches now are
    left out, with a note: the answer a sync would give."""
    _four_commits_of(repo, "f.py")
    git(repo, "reset", "-q", "--hard", "HEAD~2")
    (repo / "f.py").write_text("x\n", encoding="utf-8")
    git(repo, "add", "f.py")
    strict = run_script("precheck", "--strict", cwd=repo)
    assert strict.returncode == 0, strict.stderr
    assert "high churn" not in strict.stderr
    assert "2 commit(s) a reset or a rebase left behind" in strict.stderr
    assert "run `nexusmem sync`" in strict.stderr
    before = json.loads(run_script("precheck", "--json", cwd=repo).stdout)
    assert before["findings"] == [] and len(before["notes"]) == 1
    # Still counted while a branch keeps them (the next sync keeps them too): the same answer as a sync's.
    git(repo, "branch", "keep", "HEAD@{1}")
    kept = run_script("precheck", "--strict", cwd=repo)
    assert kept.returncode == 1 and "changed in 5 commits" in kept.stderr
    git(repo, "branch", "-D", "keep")
    sync.sync(repo)
    after = json.loads(run_script("precheck", "--json", cwd=repo).stdout)
    assert after["findings"] == before["findings"] and after["notes"] == []


def test_a_filter_branch_rewrite_counts_each_commit_once(repo: Path) -> None:
    """After `git filter-branch` (a leaked file removed from every commit) and a sync, a file changed in 4
    commits was "changed in 8 commits": the old commits, kept by filter-branch's refs/original/ backup,
    were counted beside their rewrites."""
    commit(repo, "chore: cfg", {"leak.cfg": "k=1\n"})
    _four_commits_of(repo, "f.py")
    git(
        repo,
        "filter-branch",
        "-f",
        "--index-filter",
        "git rm -q --cached --ignore-unmatch leak.cfg",
        "--",
        "--all",
        env={"FILTER_BRANCH_SQUELCH_WARNING": "1"},
    )
    sync.sync(repo)
    data = json.loads(run_cli("-C", str(repo), "precheck", "--json", "--files", "f.py").stdout)
    assert [(f["kind"], f["commits"]) for f in data["findings"]] == [("churn", 5)], data


def test_a_fix_commit_resolves_nothing_before_or_after_a_reset_dropped_it(repo: Path) -> None:
    """A failure linked to the commit that fixed it is still reported until the command passes (a commit
    linked as a fix once held the failing change itself); a reset dropping that commit changes nothing, as
    the next sync (which prunes the commit and its link) does not."""
    files = {"src/cache.py": "x = 1\n", "tests/test_cache.py": "def test(): pass\n"}
    commit(repo, "feat: the cache", files, when=int(time.time()) - 2 * 86400)
    write_log(repo, [("pytest tests/test_cache.py", 1, 3_600_000)])
    commit(repo, "fix: the cache", {"src/cache.py": "x = 2\n"})
    run_cli("-C", str(repo), "sync", "--link-failures")
    (repo / "src/cache.py").write_text("x = 3\n", encoding="utf-8")
    git(repo, "add", "src/cache.py")
    linked = json.loads(run_script("precheck", "--json", cwd=repo).stdout)["findings"]
    assert [(f["kind"], f["command"]) for f in linked] == [("failure", "pytest tests/test_cache.py")]
    git(repo, "reset", "-q", "--hard", "HEAD~1")
    (repo / "src/cache.py").write_text("x = 3\n", encoding="utf-8")
    git(repo, "add", "src/cache.py")
    before = json.loads(run_script("precheck", "--json", cwd=repo).stdout)
    assert before["findings"] == linked
    run_cli("-C", str(repo), "sync", "--link-failures")
    assert json.loads(run_script("precheck", "--json", cwd=repo).stdout)["findings"] == before["findings"]


def test_when_git_cannot_name_the_dropped_commits_churn_never_refuses(repo: Path) -> None:
    """The memory's HEAD pruned after a reset (reflog expired, gc): git cannot say which stored commits no
    branch has, so churn is not counted (it could refuse a --strict commit on them), and the note says why."""
    _four_commits_of(repo, "f.py")
    git(repo, "reset", "-q", "--hard", "HEAD~2")
    git(repo, "reflog", "expire", "--expire=now", "--all")
    git(repo, "gc", "-q", "--prune=now")
    (repo / "f.py").write_text("x\n", encoding="utf-8")
    git(repo, "add", "f.py")
    strict = run_script("precheck", "--strict", cwd=repo)
    assert strict.returncode == 0, strict.stderr
    assert "high churn" not in strict.stderr
    assert "git cannot say which commits no branch has now: churn not counted" in strict.stderr


def test_precheck_asks_git_nothing_more_while_the_memory_is_at_head(repo: Path, tmp_path: Path) -> None:
    """HEAD is read from .git's files: with the memory at HEAD (the post-commit sync ran) the only git process
    is the staged files' `git diff`; after a reset, one `git rev-list` more."""
    _four_commits_of(repo, "f.py")
    calls = tmp_path / "git-calls"
    wrapper = tmp_path / "git-logged"
    wrapper.write_text(f'#!/bin/sh\necho "$*" >> {calls}\nexec git "$@"\n', encoding="utf-8")
    wrapper.chmod(0o755)
    (repo / "f.py").write_text("x\n", encoding="utf-8")
    git(repo, "add", "f.py")

    def git_calls() -> list[str]:
        calls.unlink(missing_ok=True)
        run_script("precheck", cwd=repo, env={"NEXUSMEM_GIT": str(wrapper)})
        # each line: git's fixed `-c name=value` options, then the command
        return [line.rsplit("core.fsmonitor= ", 1)[-1].split()[0] for line in calls.read_text().splitlines()]

    assert git_calls() == ["diff"]
    git(repo, "reset", "-q", "--hard", "HEAD~2")
    (repo / "f.py").write_text("x\n", encoding="utf-8")
    git(repo, "add", "f.py")
    assert git_calls() == ["diff", "rev-list"]


@pytest.mark.parametrize("how", [[], ["--ignore-case"], ["--global"]])
def test_a_forgotten_value_in_the_unsynced_tail_is_never_shown(repo: Path, how: list[str]) -> None:
    """A command holding a forgotten value, run (and logged by the hooks) after `forget`, is left out of the
    unsynced tail as the next sync's gate will leave it out: precheck neither shows it nor warns for it."""
    project(repo)
    write_log(repo, [("make lint", 0, DAY_MS)])
    sync.sync(repo)
    value = "orcapass4417zz"
    run_cli("-C", str(repo), "forget", value.upper() if how == ["--ignore-case"] else value, *how, "--yes")
    (repo / "src/cache.py").write_text("x = 2\n", encoding="utf-8")
    git(repo, "add", "src/cache.py")
    with shell_log_path().open("ab") as log:
        log.write(hook_line(repo, f"pytest tests/test_cache.py -k {value}", 2, 30_000))
    for out in (run_script("precheck", cwd=repo), run_script("precheck", "--json", cwd=repo)):
        assert value not in (out.stdout + out.stderr).lower(), out
    assert json.loads(run_script("precheck", "--json", cwd=repo).stdout)["findings"] == []
    sync.sync(repo)  # as the store then has it
    assert json.loads(run_script("precheck", "--json", cwd=repo).stdout)["findings"] == []


def test_a_deny_list_that_cannot_be_read_leaves_the_tail_out_not_the_check(repo: Path) -> None:
    """A user-wide deny-list with a bad byte threw the whole check away once the tail was filtered through it:
    a --strict hook let through a commit it refused before, and said only "memory not checked"."""
    project(repo)
    write_log(repo, [("pytest tests/test_cache.py", 1, 2 * DAY_MS)])
    sync.sync(repo)
    (repo / "src/cache.py").write_text("x = 2\n", encoding="utf-8")
    git(repo, "add", "src/cache.py")
    (shell_log_path().parent / "deny-list.json").write_bytes(b'{"version": 1, "entries": []}\xff')
    with shell_log_path().open("ab") as log:
        log.write(hook_line(repo, "ls", 0, 10_000))  # an unsynced line: the tail is read
    strict = run_script("precheck", "--strict", cwd=repo)
    assert strict.returncode == 1 and "(--strict: exit 1)" in strict.stderr, strict.stderr
    assert "the hook log's unsynced commands were not checked:" in strict.stderr
    assert "deny-list.json" in strict.stderr
    doctor = json.loads(run_script("doctor", "--json", cwd=repo).stdout)
    named = [c for c in doctor["checks"] if c["area"] == "home" and not c["ok"]]
    assert named and "deny-list.json" in named[0]["detail"] and "every sync stops on it" in named[0]["detail"]


def _write_lines(repo: Path, entries: list[tuple[str, str, int, int]]) -> None:
    """Hook-log lines (folder under REPO, command, exit, ms ago), as the prompt hooks write them."""
    now = int(time.time() * 1000)
    path = shell_log_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as handle:
        for n, (folder, command, code, ago) in enumerate(entries):
            line = {
                "ts": now - ago,
                "cwd": str(repo / folder),
                "exit": code,
                "command": command,
                "shell": "bash",
            }
            handle.write(json.dumps({**line, "session": f"m{n}", "v": 1}) + "\n")


def test_a_monorepo_services_failures_name_only_its_own_files(repo: Path) -> None:
    """A failure named a file of the same name in another service (`bash deploy.sh` in services/api warned
    about services/web/deploy.sh, and refused a --strict commit), and `npm run build` named run.py."""
    commit(
        repo,
        "services",
        {
            "services/api/deploy.sh": "echo api\n",
            "services/web/deploy.sh": "echo web\n",
            "services/api/run.py": "print(1)\n",
            "services/web/package.json": "{}\n",
        },
    )
    _write_lines(
        repo, [("services/api", "bash deploy.sh", 1, DAY_MS), ("services/web", "npm run build", 127, DAY_MS)]
    )
    sync.sync(repo)
    (repo / "services/web/deploy.sh").write_text("echo web 2\n", encoding="utf-8")
    (repo / "services/api/run.py").write_text("print(2)\n", encoding="utf-8")
    git(repo, "add", "-A")
    assert precheck.run(repo).findings == []
    strict = run_script("precheck", "--strict", "--files", "services/web/deploy.sh", cwd=repo)
    assert strict.returncode == 0, strict.stderr
    # its own service's file is still named
    (warning,) = precheck.run(repo, files=["services/api/deploy.sh"]).findings
    assert warning.command == "bash deploy.sh"


def test_a_failure_typed_with_cd_is_resolved_by_its_retry_in_that_folder(repo: Path) -> None:
    """`cd services/api && make test` failed, then `make test` passed in services/api: still "never seen
    passing" (every commit in that service warned), and the linker took the next commit there for the fix."""
    commit(repo, "api", {"services/api/Makefile": "test:\n\ttrue\n", "services/api/notes.txt": "a\n"})
    _write_lines(
        repo,
        [
            ("services/api", "cd services/api && make test", 2, DAY_MS),
            ("services/api", "make test", 0, DAY_MS - 60_000),
        ],
    )
    sync.sync(repo)
    (repo / "services/api/notes.txt").write_text("b\n", encoding="utf-8")
    git(repo, "add", "-A")
    assert precheck.run(repo).findings == []


def test_bare_module_names_still_warn_from_any_folder(repo: Path) -> None:
    """A re-check of the first monorepo rule: scoping a bare name to the command's folder lost warnings that
    worked (`pytest -k cache` run in a subfolder; `python -m pkg.build`: build was made a "command word")."""
    commit(
        repo,
        "package",
        {"src/pkg/cache.py": "A = 1\n", "src/pkg/build.py": "B = 1\n", "src/pkg/sub/x.py": "C = 1\n"},
    )
    (repo / "scripts").mkdir()
    _write_lines(
        repo,
        [
            ("src/pkg/sub", "pytest -k cache", 1, DAY_MS),
            ("scripts", "python -m pkg.build", 1, DAY_MS),
            ("src/pkg", 'python -c "import cache; cache.main()"', 1, DAY_MS),  # code, not a file named cache
        ],
    )
    sync.sync(repo)
    found = {
        (f.path, f.command)
        for f in precheck.run(repo, files=["src/pkg/cache.py", "src/pkg/build.py"]).findings
    }
    assert found == {
        ("src/pkg/cache.py", "pytest -k cache"),
        ("src/pkg/build.py", "python -m pkg.build"),
        ("src/pkg/cache.py", 'python -c "import cache; cache.main()"'),
    }


def test_a_cd_the_shell_did_not_end_in_is_not_left_out(repo: Path) -> None:
    """`cd DIR && cmd` is compared with `cmd` only where the shell ended in DIR: a `cd` that failed (the
    folder unchanged), or a source that records where a command started (atuin), kept a failure open that
    a later `cmd` at the top then "resolved"."""
    commit(repo, "api", {"services/api/views.py": "A = 1\n", "Makefile": "test:\n\ttrue\n"})
    _write_lines(
        repo,
        [(".", "cd services/api && make test", 2, DAY_MS), (".", "make test", 0, DAY_MS - 60_000)],
    )
    sync.sync(repo)
    (warning,) = precheck.run(repo, files=["services/api/views.py"]).findings
    assert warning.command == "cd services/api && make test"


def test_a_commit_of_many_high_churn_files_prints_a_capped_list_failures_first(repo: Path) -> None:
    """Committing 2,000 high-churn files printed 2,001 lines on every commit. The hook prints 20 warnings,
    failures before churn (here the failure is on the last file), and one line counting the rest; --json
    lists them all and --strict still refuses."""
    files = [f"src/f{n:02}.py" for n in range(30)]
    for round_ in range(4):
        commit(repo, f"feat: round {round_}", {f: f"x = {round_}\n" for f in files})
    write_log(repo, [("pytest src/f29.py", 1, DAY_MS)])
    sync.sync(repo)
    run_cli("-C", str(repo), "hook", "git", "install")
    for f in files:
        (repo / f).write_text("x = 9\n", encoding="utf-8")
    git(repo, "add", "src")
    strict = run_cli("-C", str(repo), "precheck", "--strict", ok=False)
    assert strict.exit_code == 1
    data = json.loads(run_cli("-C", str(repo), "precheck", "--json").stdout)
    assert [f["kind"] for f in data["findings"]].count("churn") == 30 and len(data["findings"]) == 31
    done = subprocess.run(
        ["git", "commit", "-q", "-m", "touch everything"],
        cwd=repo,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 22, done.stderr
    assert lines[19].startswith("src/f29.py: `pytest src/f29.py` failed (exit 1)"), done.stderr
    assert sum("(high churn)" in line for line in lines) == 19
    assert lines[-2:] == [
        "nexusmem precheck: … and 11 more (11 high churn): `nexusmem precheck --json` lists them all",
        "nexusmem precheck: 31 warning(s) for 30 file(s) (advisory only)",
    ], done.stderr


@pytest.mark.slow
def test_a_failure_through_tee_or_tail_is_one_warning_and_its_plain_passing_rerun_clears_it(
    repo: Path,
) -> None:
    """`python3 tests/test_tri.py 2>&1 | tee tri.log` failed (pipestatus 1 0: stored failing), then the same
    `| tail -3`: two warnings for one failure. After the fix the plain `python3 tests/test_tri.py` passed,
    and the --strict hook still refused the commit: a retry had to be the same text, filters and all."""
    commit(
        repo,
        "feat: triple",
        {
            "src/tri.py": "TRIPLE = 4\n",
            "tests/test_tri.py": "import sys\nsys.path.insert(0, 'src')\nimport tri\nassert tri.TRIPLE == 3\n",
        },
    )
    run_cli("-C", str(repo), "sync", "--no-embed")
    run_cli("-C", str(repo), "hook", "git", "install", "--strict")
    typed_in_bash(repo, "python3 tests/test_tri.py 2>&1 | tee tri.log", "python3 tests/test_tri.py | tail -3")
    (repo / "src/tri.py").write_text("TRIPLE = 3\n", encoding="utf-8")
    git(repo, "add", "src/tri.py")
    found = json.loads(run_cli("-C", str(repo), "precheck", "--json").stdout)["findings"]
    assert [(f["path"], f["command"], f["exit"], f["times"]) for f in found] == [
        ("src/tri.py", "python3 tests/test_tri.py | tail -3", 1, 2)
    ]

    typed_in_bash(repo, "python3 tests/test_tri.py")
    assert (
        json.loads(run_cli("-C", str(repo), "precheck", "--json").stdout)["findings"] == []
    )  # the log's tail
    run_cli("-C", str(repo), "sync", "--no-embed")
    assert json.loads(run_cli("-C", str(repo), "precheck", "--json").stdout)["findings"] == []  # stored
    done = subprocess.run(
        ["git", "commit", "-q", "-m", "fix triple"], cwd=repo, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr


@pytest.mark.slow
def test_a_failure_on_a_latin1_file_name_is_its_own_not_its_utf8_namesakes(repo: Path) -> None:
    """The repository tracks caf\\xe9.sh (Latin-1) and café.sh. `sh "caf\\xe9.sh"` typed in bash was logged
    as `caf\\u00e9.sh`, the text of café.sh: precheck warned on café.sh and said nothing for the staged
    caf\\xe9.sh, which git and precheck spell with `\\xNN`."""
    latin, folder = os.fsdecode(b"caf\xe9.sh"), os.fsdecode(b"d\xe9")
    (repo / latin).write_text("exit 3\n", encoding="utf-8")
    (repo / folder).mkdir()
    (repo / folder / "run.sh").write_text("exit 4\n", encoding="utf-8")
    commit(repo, "feat: two cafes", {"café.sh": "exit 0\n"})
    run_cli("-C", str(repo), "sync", "--no-embed")
    typed_in_bash(repo, b'sh "caf\xe9.sh"', b"cd d\xe9 && sh run.sh")
    logged = [json.loads(line) for line in shell_log_path().read_text(encoding="utf-8").splitlines()[-3:-1]]
    assert [(e["command"], e["cwd"]) for e in logged] == [
        ('sh "caf\\xe9.sh"', str(repo)),
        ("cd d\\xe9 && sh run.sh", str(repo)),  # where it was typed: the reader runs `sh run.sh` in d\xe9
    ]

    for name in (latin, f"{folder}/run.sh", "café.sh"):
        with open(repo / name, "a", encoding="utf-8") as handle:
            handle.write("#\n")
    git(repo, "add", "-A")
    for when in ("unsynced", "synced"):
        data = json.loads(run_cli("-C", str(repo), "precheck", "--json").stdout)
        assert data["files"] == ["café.sh", "caf\\xe9.sh", "d\\xe9/run.sh"]
        assert [(f["path"], f["command"], f["exit"]) for f in data["findings"]] == [
            ("caf\\xe9.sh", 'sh "caf\\xe9.sh"', 3),
            ("d\\xe9/run.sh", "cd d\\xe9 && sh run.sh", 4),
        ], when
        run_cli("-C", str(repo), "sync", "--no-embed")


def test_a_grep_or_diff_that_answered_with_1_alone_is_no_failure(repo: Path) -> None:
    """README: a status 1 grep, diff, `test` or `[` answered with is no failure, alone or in a compound's
    branch. `grep -n TODO notes.txt | cat` was left out, but the bare `grep -n TODO notes.txt` and `diff a
    notes.txt` (exit 1 each, typed at bash) were failures: precheck warned "never seen passing" on
    notes.txt and "what failed today" listed them. A grep that could not read its file (2), or a list whose
    1 may be another command's, still fails."""
    from helpers import query_json

    commit(repo, "docs: notes", {"notes.txt": "nothing to do\n", "a": "other\n"})
    run_cli("-C", str(repo), "sync", "--no-embed")
    typed_in_bash(
        repo,
        "grep -n TODO notes.txt",
        "diff a notes.txt",
        "if [ -f notes.txt ]; then grep -c FIXME notes.txt; fi",
        "grep -n TODO notes.txt; sh -c 'exit 1' notes.txt",
        "grep -n TODO notes.txt nope.txt",
    )
    lines = [json.loads(line) for line in shell_log_path().read_text(encoding="utf-8").splitlines()]
    assert [(line["command"], line["exit"]) for line in lines[:5]] == [  # the log keeps what the shell said
        ("grep -n TODO notes.txt", 1),
        ("diff a notes.txt", 1),
        ("if [ -f notes.txt ]; then grep -c FIXME notes.txt; fi", 1),
        ("grep -n TODO notes.txt; sh -c 'exit 1' notes.txt", 1),
        ("grep -n TODO notes.txt nope.txt", 2),
    ]
    failing = [
        "`grep -n TODO notes.txt; sh -c 'exit 1' notes.txt` failed (exit 1)",
        "`grep -n TODO notes.txt nope.txt` failed (exit 2)",
    ]
    (repo / "notes.txt").write_text("TODO: more\n", encoding="utf-8")
    git(repo, "add", "notes.txt")
    unsynced = run_cli("-C", str(repo), "precheck", "--files", "notes.txt").stderr
    assert sorted(line for line in unsynced.splitlines() if "` failed (exit" in line) == [
        f"notes.txt: {what} on {time.strftime('%Y-%m-%d', time.gmtime())} and was never seen passing"
        " — run it before committing"
        for what in sorted(failing)
    ], unsynced
    run_cli("-C", str(repo), "sync", "--no-embed")
    assert run_cli("-C", str(repo), "precheck", "--files", "notes.txt").stderr == unsynced
    # The failures listed (a sync links them: the commit made in the same second may ride along as a fix).
    listed = query_json(repo, "what failed today")["items"]
    titles = [it["title"] for it in listed if it["linked_from"] is None]
    assert sorted(t for t in titles if "notes" in t) == [
        "grep -n TODO notes.txt nope.txt (exit 2)",
        "grep -n TODO notes.txt; sh -c 'exit 1' notes.txt (exit 1)",
    ], titles


def test_empty_file_arguments_are_no_files(repo: Path) -> None:
    """`precheck --strict --files ''` (what a quoted empty "$FILES" gives in CI) exited 0 silently, while
    `--files` with nothing after it exits 2 with "no files given". An empty argument names no file: the same
    message and code, on the plain path and click's; with a file beside it, that file is checked."""
    commit(repo, "init", {"a.py": "x = 1\n"})
    sync.sync(repo)
    for form in (("--files", ""), ("--files", "", ""), ("--files", "--", ""), ("",)):
        plain = run_script("precheck", "--strict", *form, cwd=repo)
        assert plain.returncode == 2 and "no files given" in plain.stderr, (form, plain.stderr)
        clicked = run_cli("-C", str(repo), "precheck", "--strict", *form, ok=False)
        assert clicked.exit_code == 2 and "no files given" in clicked.output, (form, clicked.output)
    found = json.loads(run_cli("-C", str(repo), "precheck", "--json", "--files", "", "a.py").stdout)
    assert found["checked"] is True and found["files"] == ["a.py"], found


def test_a_file_given_that_does_not_exist_is_said_not_checked(repo: Path) -> None:
    """The walkthrough (dateutil): `precheck --files nosuch/easter.py` warned about easter.py's failures as if
    the file existed, and from tests/, `precheck --files src/dateutil/easter.py` printed
    `tests/src/dateutil/easter.py: …`, a path that does not exist (the user meant the repository's). A
    path in neither the work tree nor the index (relative to the current folder) is said on stderr and not
    checked, with the repository's path of that name when there is one; a file deleted but still staged,
    and the files beside it, are still checked."""
    commit(repo, "init", {"src/dateutil/easter.py": "x = 1\n", "tests/test_easter.py": "def test(): pass\n"})
    write_log(repo, [("pytest tests/test_easter.py", 1, 60_000)])
    sync.sync(repo)
    warning = "`pytest tests/test_easter.py` failed (exit 1)"

    said = run_script("precheck", "--files", "nosuch/easter.py", cwd=repo)
    assert said.stderr.splitlines() == [
        "nexusmem precheck: no such file: nosuch/easter.py (paths are relative to the current folder)",
        "nexusmem precheck: no file given exists: nothing checked",
    ], said.stderr
    assert said.returncode == 0
    # Nothing at all checked: --strict says so as for no file given (a CI job must not pass on a typo).
    strict = run_script("precheck", "--strict", "--files", "nosuch/easter.py", cwd=repo)
    assert strict.returncode == 2, strict.stderr

    here = repo / "tests"
    said = run_script("precheck", "--files", "src/dateutil/easter.py", "test_easter.py", cwd=here)
    lines = said.stderr.splitlines()
    assert lines[0] == (
        "nexusmem precheck: no such file: tests/src/dateutil/easter.py (paths are relative to the current"
        " folder); did you mean src/dateutil/easter.py?"
    ), said.stderr
    assert f"tests/test_easter.py: {warning}" in said.stderr  # the file beside it is still checked
    assert "tests/src/dateutil/easter.py:" not in said.stderr.replace("no such file: tests/src", "")
    clicked = run_cli(
        "-C", str(here), "precheck", "--json", "--files", "src/dateutil/easter.py", "test_easter.py"
    )
    assert json.loads(clicked.stdout)["files"] == ["tests/test_easter.py"]
    assert "no such file: tests/src/dateutil/easter.py" in clicked.stderr

    (repo / "src/dateutil/easter.py").unlink()  # deleted, still in the index: still checked
    said = run_script("precheck", "--files", "src/dateutil/easter.py", cwd=repo)
    assert "no such file" not in said.stderr and f"src/dateutil/easter.py: {warning}" in said.stderr


def test_the_summary_counts_the_files_that_have_warnings(repo: Path) -> None:
    """The walkthrough: `3 warning(s) for 2 file(s)` when only one of the two files had warnings. The
    summary says how many files have them, of how many checked; --json keeps its fields."""
    project(repo)
    write_log(repo, [(f"pytest tests/test_cache.py -k case{n}", 1, DAY_MS) for n in range(3)])
    sync.sync(repo)
    for name in ("src/cache.py", "src/parser.py"):
        (repo / name).write_text("x = 5\n", encoding="utf-8")
    git(repo, "add", "src")
    said = run_script("precheck", cwd=repo).stderr.splitlines()
    assert said[-1] == "nexusmem precheck: 3 warning(s) for 1 of 2 file(s) (advisory only)", said
    assert sum(line.startswith("src/cache.py: ") for line in said) == 3, said
    data = json.loads(run_cli("-C", str(repo), "precheck", "--json").stdout)
    assert data["files"] == ["src/cache.py", "src/parser.py"] and len(data["findings"]) == 3
    git(repo, "reset", "-q", "src/parser.py")  # every file checked has warnings: "for 1 file(s)"
    said = run_script("precheck", cwd=repo).stderr.splitlines()
    assert said[-1] == "nexusmem precheck: 3 warning(s) for 1 file(s) (advisory only)", said
