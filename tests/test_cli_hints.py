"""Small hints a person at a terminal needs: "did you mean" for a mistyped command, and `nexusmem mcp` saying
what it is when started by hand (under a real pty) while staying silent on a pipe (an agent's stdio)."""

from __future__ import annotations

import subprocess

import pexpect

from helpers import console_script, run_cli


def test_mistyped_command_suggests_the_close_one() -> None:
    result = run_cli("sycn", ok=False)
    assert result.exit_code == 2 and "No such command 'sycn'. Did you mean 'sync'?" in result.output
    far = run_cli("xyzzy", ok=False)
    assert far.exit_code == 2 and "Did you mean" not in far.output


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
