"""Small helpers for tests that drive the CLI in-process or as the installed console script."""

from __future__ import annotations

import ast
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from click.testing import CliRunner, Result

from nexusmem.cli.app import cli


def run_cli(*args: str, cwd: Path | None = None, ok: bool = True) -> Result:
    """Invoke `nexusmem ARGS` in-process (fast); assert exit 0 unless ok=False."""
    runner = CliRunner()
    old = Path.cwd()
    if cwd is not None:
        os.chdir(cwd)
    try:
        result = runner.invoke(cli, list(args), catch_exceptions=False)
    finally:
        os.chdir(old)
    if ok:
        assert result.exit_code == 0, f"nexusmem {' '.join(args)} exited {result.exit_code}:\n{result.output}"
    return result


def query_json(repo: Path, text: str, *extra: str) -> dict[str, Any]:
    out = run_cli("-C", str(repo), "query", "--json", *extra, "--", text).stdout
    data: dict[str, Any] = json.loads(out)
    return data


def console_script() -> str:
    """The installed `nexusmem` script next to this Python (the real entry point users run)."""
    candidate = Path(sys.executable).parent / "nexusmem"
    if candidate.exists():
        return str(candidate)
    found = shutil.which("nexusmem")
    assert found, "the nexusmem console script is not installed (pip install -e .)"
    return found


def run_script(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    full = dict(os.environ)
    if env:
        full.update(env)
    return subprocess.run(
        [console_script(), *args], cwd=cwd, env=full, capture_output=True, text=True, check=False
    )


def main_in_fresh_process(cwd: Path, argv: list[str], modules: Sequence[str]) -> tuple[str, list[str]]:
    """Run `nexusmem ARGV` through cli.main in a fresh interpreter in CWD: what it printed, and which of
    MODULES it imported (what a cold process pays for; the list is read back as a literal, so the
    child imports nothing the command itself would not)."""
    code = (
        "import sys; from nexusmem.cli.main import main\n"
        f"try:\n    main({list(argv)!r})\nexcept SystemExit:\n    pass\n"
        f"print([m for m in {list(modules)!r} if m in sys.modules])"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=True,
        env=dict(os.environ),
    ).stdout
    *shown, loaded = out.strip().splitlines()
    return "\n".join(shown), list(ast.literal_eval(loaded))
