"""projects.json under concurrent writers: every project that registers stays registered."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest


@pytest.mark.slow
def test_concurrent_registrations_lose_no_entry(tmp_path: Path, isolated_home: Path) -> None:
    code = (
        "import sys; from pathlib import Path; from nexusmem import registry\n"
        "for i in range(15):\n"
        "    registry.register(Path(sys.argv[1]) / f'repo{i}', f'id-{sys.argv[1]}-{i}', synced=True)\n"
    )
    procs = [
        subprocess.Popen([sys.executable, "-c", code, str(tmp_path / f"w{n}")], env=dict(os.environ))
        for n in range(6)
    ]
    assert all(p.wait(60) == 0 for p in procs)
    data = json.loads((isolated_home / ".nexusmem" / "projects.json").read_text(encoding="utf-8"))
    roots = {p["root"] for p in data["projects"]}
    assert len(roots) == 6 * 15
