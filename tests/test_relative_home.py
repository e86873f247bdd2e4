"""A relative NEXUSMEM_HOME (`NEXUSMEM_HOME=.nexus`) named a different folder in every directory: each one
a command or a hook ran in got its own memory folder. The commands a person types refuse it in one line
(exit 1, a configuration error like an invalid config.json); what runs unattended (the prompt hooks, the
agent hook, the commit hooks' precheck and `sync --auto`, `hook print` in an rc file) ignores it and uses
~/.nexusmem, never failing or printing into a prompt or a commit; `doctor` reports it. Real processes,
real shells under a pty."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import time
from pathlib import Path

import pexpect
import pytest

from nexusmem import agenthook, paths
from nexusmem.resources import script_path

from helpers import commit, console_script

RELATIVE = ".nexus"
MESSAGE = "NEXUSMEM_HOME must be an absolute path, got '.nexus'"


# `fish --no-config` is private mode (fish 3.6: fish_private_mode=1, no history), which the hook honours by
# recording nothing: the shells here leave it, as a user's fish with its config does.
FISH_SETUP = (
    b"function fish_prompt; echo -n 'PROMPT> '; end; function fish_greeting; end; set -e fish_private_mode"
)


def nexusmem(*args: str, cwd: Path, home: str = RELATIVE) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, NEXUSMEM_HOME=home)
    return subprocess.run(
        [console_script(), *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120, check=False
    )


@pytest.mark.slow
@pytest.mark.parametrize(
    "args",
    [("sync", "--no-embed"), ("query", "cache marker"), ("status",), ("hook", "install", "--shell", "bash")],
)
def test_the_commands_refuse_it_in_one_line_and_make_no_folder(repo: Path, args: tuple[str, ...]) -> None:
    commit(repo, "feat: remember the cache marker", {"a.txt": "a\n"})
    proc = nexusmem(*args, cwd=repo)
    assert proc.returncode == 1, (proc.stdout, proc.stderr)
    (only,) = proc.stderr.strip().splitlines()
    assert only.startswith(f"Error: {MESSAGE}: ") and "full path" in only, only
    assert not (repo / RELATIVE).exists()
    assert not (Path(os.environ["HOME"]) / ".bashrc").exists()  # hook install changed nothing


@pytest.mark.slow
def test_the_commit_hooks_commands_ignore_it_and_use_the_default_folder(repo: Path) -> None:
    commit(repo, "feat: remember the cache marker", {"a.txt": "a\n"})
    default = Path(os.environ["HOME"]) / ".nexusmem"
    synced = nexusmem("sync", "--auto", cwd=repo)  # what post-commit starts after every commit
    assert synced.returncode == 0 and "NEXUSMEM_HOME" not in synced.stderr, synced.stderr
    checked = nexusmem("precheck", cwd=repo)  # what pre-commit runs before every commit
    assert (checked.returncode, checked.stdout) == (0, "") and "NEXUSMEM_HOME" not in checked.stderr
    printed = nexusmem("hook", "print", "bash", cwd=repo)  # what an rc file evals at every shell start
    assert printed.returncode == 0 and printed.stderr == "" and "__nexusmem_loaded" in printed.stdout
    assert not (repo / RELATIVE).exists()
    assert str(repo) in (default / "projects.json").read_text(encoding="utf-8")
    # The absolute value and `~/...` are used as they are.
    nexusmem("sync", "--no-embed", cwd=repo, home="~/elsewhere").check_returncode()
    assert (Path(os.environ["HOME"]) / "elsewhere" / "projects.json").exists()


@pytest.mark.slow
def test_doctor_reports_it(repo: Path) -> None:
    proc = nexusmem("doctor", "--json", cwd=repo)
    report = json.loads(proc.stdout)
    home = [c for c in report["checks"] if c["area"] == "home"]
    assert proc.returncode == 1 and len(home) == 1 and not home[0]["ok"], report
    assert home[0]["detail"].startswith(MESSAGE) and str(Path.home() / ".nexusmem") in home[0]["detail"]
    assert "full path" in home[0]["fix"]
    assert not (repo / RELATIVE).exists()


def test_the_library_never_uses_a_relative_folder(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)
    for value, expected, problem in [
        (RELATIVE, Path.home() / ".nexusmem", MESSAGE),
        ("~bob/x", Path.home() / ".nexusmem", "NEXUSMEM_HOME must be an absolute path, got '~bob/x'"),
        ("~", Path.home(), None),
        ("~/x", Path.home() / "x", None),
        (str(tmp_path / "abs"), tmp_path / "abs", None),
        # A file there: every command crashed on it (doctor with an internal error) or named another file.
        (str(tmp_path / "a-file"), Path.home() / ".nexusmem", "which is not a folder"),
    ]:
        (tmp_path / "a-file").write_text("x", encoding="utf-8")
        monkeypatch.setenv("NEXUSMEM_HOME", value)
        found = paths.user_dir_problem()
        assert paths.user_dir() == expected and (found is None) == (problem is None), value
        assert problem is None or (found is not None and problem in found), (value, found)
        assert Path(agenthook._log_path()) == expected / "shell-history.jsonl", value


SHELLS = ("bash", "zsh", "fish")
ARGV = {"bash": ["--norc", "--noprofile", "-i"], "zsh": ["-f", "-i"], "fish": ["--no-config", "-i"]}


@pytest.mark.slow
@pytest.mark.parametrize(
    ("kind", "value", "folder"),
    [
        pytest.param(kind, value, folder, marks=pytest.mark.skipif(shutil.which(kind) is None, reason=kind))
        for kind in SHELLS
        for value, folder in ((RELATIVE, ".nexusmem"), ("~/custom", "custom"), ("~/a-file", ".nexusmem"))
    ],
)
def test_the_prompt_hooks_never_write_into_a_relative_folder(
    kind: str, value: str, folder: str, tmp_path: Path
) -> None:
    home = Path(os.environ["HOME"])
    # A file where NEXUSMEM_HOME points: every line was lost (the CLI and the agent hook use the default).
    (home / "a-file").write_text("not a folder\n", encoding="utf-8")
    work = tmp_path / "work"
    work.mkdir()
    log = home / folder / "shell-history.jsonl"
    env = dict(os.environ, TERM="dumb", LANG="C.UTF-8", PS1="PROMPT> ", NEXUSMEM_HOME=value)
    child = pexpect.spawn(kind, ARGV[kind], env=env, cwd=str(work), timeout=10, dimensions=(40, 200))
    try:
        if kind == "fish":
            child.sendline(FISH_SETUP)
        child.sendline(f"source '{script_path(f'shell/nexusmem.{kind}')}'".encode())
        child.sendline(b"true relative-home-marker")
        deadline = time.monotonic() + 8
        while not (log.exists() and b"relative-home-marker" in log.read_bytes()):
            assert time.monotonic() < deadline, f"{kind}: nothing in {log}; {sorted(os.listdir(work))}"
            with contextlib.suppress(pexpect.EOF):
                child.expect(pexpect.TIMEOUT, timeout=0.05)
    finally:
        child.close(force=True)
    assert os.listdir(work) == []  # no `.nexus` and no `~` folder where the shell ran
