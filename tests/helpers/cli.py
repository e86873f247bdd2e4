"""Small helpers for tests that drive the CLI in-process or as the installed console script."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
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
