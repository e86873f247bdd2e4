"""Git hooks outliving the install that wrote them: a throwaway virtualenv installs the hooks, is deleted (as
`uv tool uninstall` or a cleaned uvx cache does), and real `git commit`s must still succeed, say once what to
do, fall back to a `nexusmem` on PATH, and be reported broken and repaired by `hook ... status|install`."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from nexusmem import sync
from nexusmem.install import git_hooks
from nexusmem.paths import shell_log_path

from helpers import commit, git, run_cli

pytestmark = pytest.mark.slow

BARE_PATH = "/usr/bin:/bin"  # git and sh, and no nexusmem


def throwaway_install(where: Path) -> Path:
    """A real virtualenv at WHERE whose `nexusmem` script runs this checkout; returns the script."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(where)], check=True)
    site = next(where.glob("lib/python*/site-packages"))
    entries = [p for p in sys.path if p and Path(p).is_dir()]
    (site / "this_checkout.pth").write_text("\n".join(entries) + "\n", encoding="utf-8")
    script = where / "bin" / "nexusmem"
    script.write_text(
        f"#!{where / 'bin' / 'python'}\nimport sys\nfrom nexusmem.cli.main import main\nsys.exit(main())\n",
        encoding="utf-8",
    )
    script.chmod(0o755)
    return script


def run_env(path: str) -> dict[str, str]:
    return dict(os.environ, PATH=path)


def git_commit(repo: Path, message: str, path: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["git", "commit", "-q", "--allow-empty", "-m", message],
        cwd=repo,
        capture_output=True,
        text=True,
        env=run_env(path),
        check=False,
    )


def plant_failure(repo: Path) -> None:
    log = shell_log_path()
    log.parent.mkdir(parents=True, exist_ok=True)
    line = {"ts": int(time.time() * 1000) - 60_000, "cwd": str(repo), "exit": 1}
    line |= {"command": "pytest tests/test_cache.py", "shell": "bash", "session": "s", "v": 1}
    with log.open("a", encoding="utf-8") as handle:
        handle.write(json.dumps(line) + "\n")


@pytest.fixture
def memory_repo(repo: Path) -> Path:
    commit(repo, "feat: first", {"src/cache.py": "x = 1\n"})
    plant_failure(repo)
    sync.sync(repo)
    return repo


def test_deleted_install_never_fails_a_commit_and_says_what_to_do(
    memory_repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = memory_repo
    venv = tmp_path / "uvx-cache" / "env"
    script = throwaway_install(venv)
    for verb in (["git", "install", "--strict"], ["git-post", "install"]):
        proc = subprocess.run(
            [str(script), "-C", str(repo), "hook", *verb],
            capture_output=True, text=True, env=run_env(BARE_PATH), check=True,
        )  # fmt: skip
        # Only a pinned path is possible (nothing on PATH): install says so.
        assert "Note: the hook runs" in proc.stderr and "no nexusmem is on PATH" in proc.stderr
    shutil.rmtree(venv)  # `uv tool uninstall nexusmem`

    (repo / "src/cache.py").write_text("x = 2\n", encoding="utf-8")
    git(repo, "add", "src/cache.py")
    done = git_commit(repo, "change", BARE_PATH)
    # --strict, a known failure on the staged file, and still the commit goes through: NexusMem is absent.
    assert done.returncode == 0, done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 2, done.stderr  # one line per hook
    assert lines[0].startswith("nexusmem: precheck skipped: nexusmem is not installed (the hook ran")
    assert (
        "run `nexusmem hook git install`, or delete the nexusmem block from .git/hooks/pre-commit" in lines[0]
    )
    assert lines[1].startswith("nexusmem: memory not updated:") and "hook git-post install" in lines[1]

    # status says broken, not installed (no nexusmem on PATH for this process either).
    monkeypatch.setenv("PATH", BARE_PATH)
    state = git_hooks.status("pre-commit", repo)
    assert state.installed and state.broken and "skips itself" in state.broken
    shown = run_cli("-C", str(repo), "hook", "git", "status")
    assert "pre-commit: broken --strict" in shown.stdout
    assert "fix: nexusmem hook git install" in shown.stderr

    # install repairs it (pins this process's nexusmem), not "already in"; the strict check works again.
    fixed = run_cli("-C", str(repo), "hook", "git", "install", "--strict")
    assert "Repaired the precheck hook" in fixed.stdout
    assert git_hooks.status("pre-commit", repo).broken is None
    (repo / "src/cache.py").write_text("x = 3\n", encoding="utf-8")
    git(repo, "add", "src/cache.py")
    refused = git_commit(repo, "change again", BARE_PATH)
    assert refused.returncode == 1 and "commit refused (--strict)" in refused.stderr


def test_moved_install_falls_back_to_the_nexusmem_on_path(memory_repo: Path, tmp_path: Path) -> None:
    repo = memory_repo
    venv = tmp_path / "old-venv"
    script = throwaway_install(venv)
    subprocess.run(
        [str(script), "-C", str(repo), "hook", "git", "install"], env=run_env(BARE_PATH), check=True,
        capture_output=True,
    )  # fmt: skip
    shutil.rmtree(venv)
    on_path = f"{Path(sys.executable).parent}:{BARE_PATH}"  # the user's new install
    (repo / "src/cache.py").write_text("x = 2\n", encoding="utf-8")
    git(repo, "add", "src/cache.py")
    done = git_commit(repo, "change", on_path)
    assert done.returncode == 0, done.stderr
    assert "src/cache.py: `pytest tests/test_cache.py` failed (exit 1)" in done.stderr  # precheck ran
    assert "skipped" not in done.stderr


def test_an_install_that_cannot_start_never_refuses_a_strict_commit(
    memory_repo: Path, tmp_path: Path
) -> None:
    """An editable install whose source moved: the pinned script is there, the package it imports is not.
    Python's own exit 1 read as "precheck found something", so a --strict hook refused every commit."""
    repo = memory_repo
    venv = tmp_path / "editable-venv"
    script = throwaway_install(venv)
    subprocess.run(
        [str(script), "-C", str(repo), "hook", "git", "install", "--strict"], env=run_env(BARE_PATH), check=True,
        capture_output=True,
    )  # fmt: skip
    next(venv.glob("lib/python*/site-packages/this_checkout.pth")).unlink()  # the source moved away
    (repo / "src/cache.py").write_text("x = 2\n", encoding="utf-8")  # its test failed: a strict refusal
    git(repo, "add", "src/cache.py")
    on_path = f"{Path(sys.executable).parent}:{BARE_PATH}"
    done = git_commit(repo, "change", on_path)
    assert done.returncode == 0, done.stderr
    assert f"nexusmem: precheck did not run ({script} exited 1)" in done.stderr
    doctor = run_cli("-C", str(repo), "doctor", ok=False).stdout
    assert f"pre-commit: runs {script}, which cannot start (exit 1: ModuleNotFoundError" in doctor, doctor
    # Repaired (pinned to the nexusmem that runs), the strict hook refuses as before.
    run_cli("-C", str(repo), "hook", "git", "install", "--strict")
    (repo / "src/cache.py").write_text("x = 3\n", encoding="utf-8")
    git(repo, "add", "src/cache.py")
    refused = git_commit(repo, "change again", BARE_PATH)
    assert refused.returncode == 1 and "commit refused (--strict)" in refused.stderr


def test_a_block_from_an_older_version_whose_body_is_gone_is_broken_and_repaired(repo: Path) -> None:
    """Older versions ran `/bin/sh .../_data/hooks/pre-commit`; with that file gone every commit failed."""
    gone = "/nonexistent/site-packages/nexusmem/_data/hooks/pre-commit"
    hook = repo / ".git" / "hooks" / "pre-commit"
    hook.write_text(
        f"#!/bin/sh\n# >>> nexusmem pre-commit hook >>> {git_hooks.HOOK_ID} created-file\n"
        "# Added by `nexusmem hook git install`; `nexusmem hook git remove` takes it out.\n"
        f"NEXUSMEM_BIN='/nonexistent/bin/nexusmem' NEXUSMEM_PRECHECK_STRICT=0 /bin/sh '{gone}' || exit $?\n"
        "# <<< nexusmem pre-commit hook <<<\n",
        encoding="utf-8",
    )
    hook.chmod(0o755)
    assert git_commit(repo, "old hook", BARE_PATH).returncode != 0  # the bug this replaces
    state = git_hooks.status("pre-commit", repo)
    assert state.broken and "every commit fails" in state.broken
    assert "Repaired" in run_cli("-C", str(repo), "hook", "git", "install").stdout
    assert git_commit(repo, "repaired", BARE_PATH).returncode == 0
    run_cli("-C", str(repo), "hook", "git", "remove")
    assert not hook.exists()


def test_an_older_post_commit_block_whose_body_is_gone_does_not_fail_commits(repo: Path) -> None:
    """doctor and `hook git-post install` said "every commit fails" of a post-commit block whose body is gone:
    git ignores a post-commit hook's status; what fails is the memory's update."""
    gone = "/nonexistent/site-packages/nexusmem/_data/hooks/post-commit"
    hook = repo / ".git" / "hooks" / "post-commit"
    hook.write_text(
        f"#!/bin/sh\n# >>> nexusmem post-commit hook >>> {git_hooks.HOOK_ID} created-file\n"
        f"NEXUSMEM_BIN='/nonexistent/bin/nexusmem' /bin/sh '{gone}'\n"
        "# <<< nexusmem post-commit hook <<<\n",
        encoding="utf-8",
    )
    hook.chmod(0o755)
    assert git_commit(repo, "old hook", BARE_PATH).returncode == 0
    state = git_hooks.status("post-commit", repo)
    assert state.broken and "each commit prints an error and memory is no longer updated" in state.broken
    assert "every commit fails" not in state.broken


def test_post_commit_in_a_repo_without_memory_builds_it_once(repo: Path) -> None:
    commit(repo, "feat: first", {"a.txt": "a\n"})
    out = run_cli("-C", str(repo), "hook", "git-post", "install").stdout
    assert "No memory in this repository yet: the next commit builds it in the background." in out
    on_path = f"{Path(sys.executable).parent}:{BARE_PATH}"
    first = git_commit(repo, "feat: second", on_path)
    assert first.returncode == 0 and "building it in the background" in first.stderr
    assert git(repo, "status", "--porcelain") == ""  # .nexusmem/ ignores itself from the start
    deadline = time.monotonic() + 60
    db = repo / ".nexusmem" / "memory.db"
    while time.monotonic() < deadline:
        if db.exists() and '"git_commit": 2' in run_cli("-C", str(repo), "status", "--json").stdout:
            break
        time.sleep(0.3)
    else:
        raise AssertionError((repo / ".nexusmem" / "auto-sync.log").read_text(encoding="utf-8"))
    again = git_commit(repo, "feat: third", on_path)
    assert again.returncode == 0 and again.stderr == ""  # said once
