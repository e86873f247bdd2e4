"""Sync progress as a user sees it: a bar with a total on a terminal, nothing on a pipe, timings with --verbose."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pexpect
import pytest

from helpers import console_script, run_script

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


def sync_on_a_terminal(repo: Path, env: dict[str, str]) -> str:
    """What a first `nexusmem sync --no-embed` in REPO prints on a terminal (a pty), after checking it
    succeeded."""
    child = pexpect.spawn(
        console_script(), ["sync", "--no-embed"], cwd=str(repo), env=env, encoding="utf-8", timeout=120
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
    assert re.match(r"timing: git \d+\.\d\ds \(150 node\(s\) written, [\d,]+/s\)", timings[0]), timings
    # stderr is a pipe here: no bar, no carriage-return line.
    assert "syncing" not in result.stderr and "\r" not in result.stderr
    quiet = run_script("sync", "--no-embed", cwd=repo)
    assert "timing:" not in quiet.stderr and "syncing" not in quiet.stderr
