"""Small hints a person at a terminal needs: "did you mean" for a mistyped command, and `nexusmem mcp` saying
what it is when started by hand (under a real pty) while staying silent on a pipe (an agent's stdio)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pexpect

from helpers import commit, console_script, run_cli, run_script


def test_mistyped_command_suggests_the_close_one() -> None:
    result = run_cli("sycn", ok=False)
    assert result.exit_code == 2 and "No such command 'sycn'. Did you mean 'sync'?" in result.output
    far = run_cli("xyzzy", ok=False)
    assert far.exit_code == 2 and "Did you mean" not in far.output


def test_a_question_that_starts_with_a_dash_is_told_to_follow_double_dash(repo: Path) -> None:
    """`nexusmem query --force-with-lease` said only "No such option": how to ask it is said too (through
    the installed script, whose fast path hands an unknown option to click). A typo of query's own option
    keeps click's "Did you mean"."""
    commit(repo, "feat: push with --force-with-lease", {"a.txt": "a\n"})
    asked = run_script("query", "--force-with-lease", cwd=repo)
    assert asked.returncode == 2, asked.stderr
    assert "follows '--': nexusmem query -- --force-with-lease" in asked.stderr, asked.stderr
    typo = run_script("query", "--jsn", "cache", cwd=repo)
    assert typo.returncode == 2 and "Did you mean" in typo.stderr and "follows '--'" not in typo.stderr


def test_mcp_on_a_terminal_prints_one_line_and_on_a_pipe_nothing() -> None:
    child = pexpect.spawn(console_script(), ["mcp"], encoding="utf-8", timeout=30)
    try:
        child.expect("speaks the Model Context Protocol on stdin/stdout")
    finally:
        child.sendeof()
        child.close(force=True)
    piped = subprocess.run(
        [console_script(), "mcp"], input="", capture_output=True, text=True, timeout=60, check=False
    )
    assert "Model Context Protocol" not in piped.stderr and piped.stdout == ""
