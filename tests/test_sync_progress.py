"""Sync progress as a user sees it: a bar with a total on a terminal, nothing on a pipe, timings with --verbose."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pexpect
import pytest

from helpers import commit, console_script, run_script, write_commands

COMMITS = 400


def many_commits(repo: Path, count: int = COMMITS) -> None:
    """COUNT commits, each changing one file, written by one `git fast-import` (seconds faster than commit)."""
    lines: list[str] = []
    for n in range(count):
        body = f"value = {n}\n"
        message = f"feat(part{n}): step {n} of the history\n"
        lines += [
            "commit refs/heads/main",
            f"author Dev <dev@example.com> {1_700_000_000 + n * 60} +0000",
            f"committer Dev <dev@example.com> {1_700_000_000 + n * 60} +0000",
            f"data {len(message)}",
            message.rstrip("\n"),
        ]
        lines += [f"M 100644 inline src/part{n % 20}.py", f"data {len(body)}", body.rstrip("\n"), ""]
    subprocess.run(
        ["git", "fast-import", "--quiet"], cwd=repo, input="\n".join(lines) + "\n", text=True, check=True
    )
    subprocess.run(["git", "checkout", "-q", "-f", "main"], cwd=repo, check=True)


def sync_on_a_terminal(repo: Path, env: dict[str, str], *options: str) -> str:
    """What `nexusmem sync --no-embed [OPTIONS]` in REPO (a first sync, without OPTIONS) prints on a terminal
    (a pty), after checking it succeeded."""
    child = pexpect.spawn(
        console_script(),
        ["sync", "--no-embed", *options],
        cwd=str(repo),
        env=env,
        encoding="utf-8",
        timeout=120,
    )
    try:
        child.expect(pexpect.EOF)
    finally:
        child.close()
    out = child.before or ""
    assert child.exitstatus == 0, out
    return out


@pytest.mark.slow
def test_first_sync_on_a_terminal_shows_a_bar_with_the_commit_total(repo: Path) -> None:
    many_commits(repo)
    out = sync_on_a_terminal(repo, dict(os.environ))
    assert re.search(rf"syncing git \(commits\).*\b\d+/{COMMITS}\b", out), out
    assert f"{COMMITS}/{COMMITS}" in out
    # The diff phase (the newest 200 commits' patches) has a total too, in commits.
    assert re.search(r"syncing diff \(commits\).*\b\d+/200\b", out), out
    assert "200/200" in out
    assert "Initialised and synced" in out


@pytest.mark.slow
def test_a_rebuild_counts_the_shell_log_in_the_unit_it_names(repo: Path) -> None:
    """The shell phase of `sync --rebuild` showed "syncing shell: 19,500 bytes" for its first 20,000 lines:
    the commands written so far, named bytes; only then a bar of the log's bytes took over. Now the bar of
    bytes, with the log's size as its total, is the only thing the phase shows, from its start to its end."""
    from nexusmem.paths import shell_log_path

    commit(repo, "init", {"a.py": "x = 1\n"})
    write_commands(repo, [(1_717_171_717_000 + n * 1000, f"echo step {n}", n % 2) for n in range(3000)])
    assert run_script("sync", "--no-embed", cwd=repo).returncode == 0
    size = shell_log_path().stat().st_size
    out = sync_on_a_terminal(repo, dict(os.environ), "--rebuild")
    shown = [part for part in re.split(r"[\r\n]", out) if "syncing shell" in part]
    assert shown, out
    assert all(re.search(rf"syncing shell \(bytes\).*\b\d+/{size}\b", part) for part in shown), shown
    assert f"{size}/{size}" in out, shown
    assert "shell +3000" in out


@pytest.mark.slow
def test_a_dumb_terminal_gets_no_control_sequences(repo: Path) -> None:
    many_commits(repo, 100)
    out = sync_on_a_terminal(repo, {**os.environ, "TERM": "dumb"})
    assert "\x1b" not in out and "\r" not in out.replace("\r\n", "\n"), repr(out)
    assert "Initialised and synced" in out


@pytest.mark.slow
def test_verbose_prints_one_timing_line_per_phase_and_a_pipe_gets_no_progress(repo: Path) -> None:
    many_commits(repo, 150)
    result = run_script("sync", "--no-embed", "--verbose", cwd=repo)
    assert result.returncode == 0, result.stderr
    timings = [line for line in result.stderr.splitlines() if line.startswith("timing: ")]
    phases = [line.split()[1] for line in timings]
    assert phases[:3] == ["git", "diff", "docs"] and phases[-1] == "total", timings
    assert len(phases) == len(set(phases))
    # The steps after the sources are named too (they were time no line accounted for).
    assert {"history", "notes", "structure"} <= set(phases), timings
    assert re.match(r"timing: git \d+\.\d\ds \(150 node\(s\) written, [\d,]+/s\)", timings[0]), timings
    # stderr is a pipe here: no bar, no carriage-return line.
    assert "syncing" not in result.stderr and "\r" not in result.stderr
    quiet = run_script("sync", "--no-embed", cwd=repo)
    assert "timing:" not in quiet.stderr and "syncing" not in quiet.stderr


@pytest.mark.slow
def test_verbose_says_each_phase_as_it_ends_not_all_at_the_end(repo: Path, isolated_home: Path) -> None:
    """`sync --verbose` printed its timing lines all at the end: a sync killed at 38 s, after git, diff and
    docs had finished, had printed nothing but "Aborted!". The sync here is held at its very end (another
    process holds the project registry's lock) while the phases' lines must already be on stderr."""
    import fcntl
    import queue
    import threading

    many_commits(repo, 20)
    assert run_script("sync", "--no-embed", cwd=repo).returncode == 0
    many_commits(repo, 60)
    held = os.open(str(isolated_home / ".nexusmem" / ".projects.lock"), os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(held, fcntl.LOCK_EX)
    proc = subprocess.Popen(
        [console_script(), "sync", "--no-embed", "--verbose"],
        cwd=repo,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    lines: queue.Queue[str] = queue.Queue()
    assert proc.stderr is not None
    reader = threading.Thread(target=lambda: [lines.put(line) for line in proc.stderr], daemon=True)  # type: ignore[union-attr]
    reader.start()
    seen: list[str] = []
    try:
        while not any(line.startswith("timing: docs") for line in seen):
            seen.append(lines.get(timeout=30))
        assert proc.poll() is None  # still held at its end: the lines came as the phases ended
        assert [line.split()[1] for line in seen if line.startswith("timing: ")] == ["git", "diff", "docs"]
    finally:
        os.close(held)
        proc.wait(timeout=60)
    reader.join(timeout=10)
    assert proc.returncode == 0 and proc.stdout is not None and "Synced" in proc.stdout.read()
    rest = []
    while not lines.empty():
        rest.append(lines.get())
    assert rest and rest[-1].startswith("timing: total"), rest
