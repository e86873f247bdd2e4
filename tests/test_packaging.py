"""The built wheel carries the shell and git hook scripts, and the installed package finds them there."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPTS = [
    "shell/nexusmem.bash",
    "shell/nexusmem.zsh",
    "shell/nexusmem.fish",
    "shell/nexusmem.ps1",
    "hooks/pre-commit",
    "hooks/post-commit",
]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    proc = subprocess.run(
        [sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", str(out), str(ROOT)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (built,) = out.glob("nexusmem-*.whl")
    return built


@pytest.mark.slow
def test_wheel_ships_every_script_with_lf_endings(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as zf:
        names = set(zf.namelist())
        for script in SCRIPTS:
            member = f"nexusmem/_data/{script}"
            assert member in names, f"{member} is missing from {wheel.name}"
            assert b"\r\n" not in zf.read(member), f"{member} has CRLF line endings"
        assert "nexusmem/cli/main.py" in names
        # What the ranking learned travels with it: a wheel without them would rank worse, silently.
        for learned in (
            "nexusmem/embed/question_map.bin",
            "nexusmem/retrieve/learned_kin.txt",
            "nexusmem/retrieve/learned_asks_docs.txt",
        ):
            assert learned in names, f"{learned} is missing from {wheel.name}"
        entry_points = next(n for n in names if n.endswith("entry_points.txt"))
        assert "nexusmem = nexusmem.cli.main:main" in zf.read(entry_points).decode()
        # `license = "MIT"` promised a license no file carried.
        licence = next(n for n in names if n.endswith("licenses/LICENSE"))
        assert b"MIT License" in zf.read(licence)


@pytest.mark.slow
def test_installed_package_finds_its_scripts_inside_itself(wheel: Path, tmp_path: Path) -> None:
    site = tmp_path / "site"
    with zipfile.ZipFile(wheel) as zf:
        zf.extractall(site)
    code = (
        "import sys; sys.path.insert(0, sys.argv[1]);"
        "from nexusmem.resources import script_path;"
        "print('\\n'.join(str(script_path(s)) for s in sys.argv[2:]))"
    )
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    proc = subprocess.run(
        [sys.executable, "-c", code, str(site), *SCRIPTS], capture_output=True, text=True, env=env, check=True
    )
    found = [Path(line) for line in proc.stdout.splitlines()]
    assert len(found) == len(SCRIPTS)
    for path in found:
        assert site in path.parents, f"{path} was not found inside the installed package"


@pytest.mark.slow
def test_installed_agent_hook_records_from_inside_the_package(wheel: Path, tmp_path: Path) -> None:
    """The hook command an installed package writes runs its own recorder, with no site-packages (-S)."""
    import json
    import shlex

    site = tmp_path / "site"
    with zipfile.ZipFile(wheel) as zf:
        zf.extractall(site)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["NEXUSMEM_HOME"] = str(tmp_path / "nm")
    code = (
        "import sys; sys.path.insert(0, sys.argv[1]);"
        "from nexusmem.install.agent_hooks import hook_command; print(hook_command('claude-code'))"
    )
    command = subprocess.run(
        [sys.executable, "-c", code, str(site)], capture_output=True, text=True, env=env, check=True
    ).stdout.strip()
    assert shlex.split(command)[3] == str((site / "nexusmem" / "agenthook.py").resolve())
    payload = {
        "session_id": "s",
        "cwd": str(tmp_path),
        "hook_event_name": "PostToolUseFailure",
        "tool_name": "Bash",
        "tool_input": {"command": "make"},
        "tool_use_id": "toolu_W",
        "error": "Exit code 2\nmake: *** No targets.",
        "is_interrupt": False,
    }
    done = subprocess.run(
        ["sh", "-c", command], input=json.dumps(payload).encode(), env=env, capture_output=True
    )
    assert (done.returncode, done.stdout, done.stderr) == (0, b"", b"")
    line = json.loads((tmp_path / "nm" / "shell-history.jsonl").read_text(encoding="utf-8"))
    assert (line["command"], line["exit"], line["call_id"]) == ("make", 2, "toolu_W")
