"""Git hooks with real `git commit`s: install/remove/status, foreign hooks, core.hooksPath, worktrees, and the
detached post-commit auto-sync coalesced by its file lock."""

from __future__ import annotations

import itertools
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from nexusmem import autosync, sync
from nexusmem.install import git_hooks
from nexusmem.paths import shell_log_path
from nexusmem.store.db import open_store

from helpers import commit, git, init_repo, query_json, run_cli, run_script


def git_commit(repo: Path, message: str, *extra: str) -> subprocess.CompletedProcess[str]:
    """A real `git commit` of whatever is staged, as a user runs it (hooks included)."""
    return git_with_hooks(repo, "commit", "-q", "--allow-empty", "-m", message, *extra)


def git_with_hooks(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`git ARGS` in REPO as a user runs it: its hooks run, and a failure is returned, not raised."""
    return subprocess.run(
        ["git", *args], cwd=repo, capture_output=True, text=True, env=dict(os.environ), check=False
    )


def synced(repo: Path) -> Path:
    commit(repo, "feat: first", {"src/cache.py": "x = 1\n", "README.md": "# Demo\n"})
    sync.sync(repo)
    return repo


def plant_failure(repo: Path, command: str = "pytest tests/test_cache.py") -> None:
    path = shell_log_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    line = {"ts": int(time.time() * 1000) - 3_600_000, "cwd": str(repo), "exit": 1, "command": command}
    with path.open("a", encoding="utf-8") as handle:
        handle.write(json.dumps({**line, "shell": "bash", "session": "s", "v": 1}) + "\n")


def commit_ids(db: Path) -> set[str]:
    with open_store(db, readonly=True) as store:
        return {n.id for n in store.iter_nodes("git_commit")}


def all_ids(db: Path) -> set[str]:
    with open_store(db, readonly=True) as store:
        return {n.id for n in store.iter_nodes()}


def wait_settled(repo: Path, expected_commits: int, timeout: float = 120.0) -> None:
    """Until the store holds EXPECTED_COMMITS, nothing is pending and no sync holds the lock (twice in a row)."""
    from filelock import FileLock, Timeout

    state = repo / ".nexusmem"
    deadline = time.monotonic() + timeout
    calm = 0
    while time.monotonic() < deadline:
        time.sleep(0.3)
        # The background sync takes the pending mark away just before it starts (and, the first time, makes
        # memory.db only then): no database yet is not settled either.
        if (
            (state / "sync.pending").exists()
            or not (state / "memory.db").exists()
            or len(commit_ids(state / "memory.db")) != expected_commits
        ):
            calm = 0
            continue
        lock = FileLock(str(state / "sync.lock"), timeout=0)
        try:
            lock.acquire(timeout=0)
        except Timeout:
            calm = 0
            continue
        lock.release()
        calm += 1
        if calm >= 3:
            return
    log = (state / "auto-sync.log").read_text(encoding="utf-8") if (state / "auto-sync.log").exists() else ""
    raise AssertionError(f"auto-sync did not settle in {timeout}s; log:\n{log}")


# --- install / remove / status ------------------------------------------------------------------------


def test_install_creates_an_executable_hook_and_remove_deletes_it(repo: Path) -> None:
    result = run_cli("-C", str(repo), "hook", "git", "install")
    path = repo / ".git" / "hooks" / "pre-commit"
    assert "Installed the precheck hook" in result.stdout and os.access(path, os.X_OK)
    text = path.read_text(encoding="utf-8")
    assert text.startswith("#!/bin/sh\n") and git_hooks.HOOK_ID in text
    # The console script pinned by absolute path (PATH only when it is gone); the body is copied in, so
    # nothing inside the install is needed for the hook to run.
    assert f"nexusmem_pinned='{Path(sys.executable).parent / 'nexusmem'}'" in text
    assert "_data/hooks" not in text and "/bin/sh '" not in text
    again = run_cli("-C", str(repo), "hook", "git", "install")
    assert "already" in again.stdout and path.read_text(encoding="utf-8") == text
    status = run_cli("-C", str(repo), "hook", "git", "status").stdout
    assert "pre-commit: installed (our own file)" in status
    run_cli("-C", str(repo), "hook", "git", "remove")
    assert not path.exists()
    assert "not installed" in run_cli("-C", str(repo), "hook", "git", "status").stdout
    assert "No precheck hook" in run_cli("-C", str(repo), "hook", "git", "remove").stdout


@pytest.mark.parametrize(
    "original",
    [
        b"#!/bin/sh\necho foreign >> foreign.log\nexit 0\n",
        b"#!/usr/bin/env bash\r\nset -e\r\necho foreign >> foreign.log\r\n",
        b"echo foreign >> foreign.log\n",  # no shebang: git runs it with sh
        b"#!/bin/sh",  # no trailing newline
    ],
)
def test_foreign_sh_hook_is_chained_and_restored_byte_for_byte(repo: Path, original: bytes) -> None:
    path = repo / ".git" / "hooks" / "pre-commit"
    path.write_bytes(original)
    path.chmod(0o750)
    out = run_cli("-C", str(repo), "hook", "git", "install").stdout
    assert "existing hook" in out
    assert git_hooks.status("pre-commit", repo).how == "chained"
    run_cli("-C", str(repo), "hook", "git", "install", "--strict")  # switching mode edits the block in place
    assert git_hooks.status("pre-commit", repo).strict
    run_cli("-C", str(repo), "hook", "git", "remove")
    assert path.read_bytes() == original and (path.stat().st_mode & 0o777) == 0o750


@pytest.mark.slow
def test_foreign_hook_still_runs_and_its_exit_status_is_kept(repo: Path) -> None:
    synced(repo)
    plant_failure(repo)
    sync.sync(repo)
    path = repo / ".git" / "hooks" / "pre-commit"
    path.write_text("#!/bin/sh\necho ran >> foreign.log\nexit 3\n", encoding="utf-8")
    path.chmod(0o755)
    run_cli("-C", str(repo), "hook", "git", "install")
    (repo / "src/cache.py").write_text("x = 2\n", encoding="utf-8")
    git(repo, "add", "src/cache.py")
    refused = git_commit(repo, "change")
    assert refused.returncode != 0  # the foreign hook said no, and that still counts
    assert "src/cache.py: `pytest tests/test_cache.py` failed" in refused.stderr  # ours ran first
    assert (repo / "foreign.log").read_text(encoding="utf-8") == "ran\n"
    path.write_text(path.read_text(encoding="utf-8").replace("exit 3", "exit 0"), encoding="utf-8")
    passed = git_commit(repo, "change")
    assert passed.returncode == 0, passed.stderr  # advisory: warnings, commit goes through
    assert "advisory only" in passed.stderr and passed.stdout == ""


@pytest.mark.slow
def test_strict_hook_refuses_a_commit_with_an_unresolved_failure(repo: Path) -> None:
    synced(repo)
    plant_failure(repo)
    sync.sync(repo)
    run_cli("-C", str(repo), "hook", "git", "install", "--strict")
    (repo / "src/cache.py").write_text("x = 3\n", encoding="utf-8")
    git(repo, "add", "src/cache.py")
    refused = git_commit(repo, "change")
    assert refused.returncode == 1 and "commit refused (--strict)" in refused.stderr
    (repo / "README.md").write_text("# Demo 2\n", encoding="utf-8")
    git(repo, "reset", "-q", "src/cache.py")
    git(repo, "add", "README.md")
    assert git_commit(repo, "docs").returncode == 0  # nothing known against README.md
    # `hook git install` (what doctor's fixes say) over the strict hook relaxes it: no longer silently.
    relaxed = run_cli("-C", str(repo), "hook", "git", "install")
    assert "it was --strict and now only warns (install with --strict" in relaxed.stderr
    assert not git_hooks.status("pre-commit", repo).strict


@pytest.mark.slow
def test_strict_hook_in_a_linked_worktree_checks_against_the_main_trees_memory(
    repo: Path, tmp_path: Path
) -> None:
    """The hook looked for `.nexusmem` in the worktree only: a commit there was never checked (a strict
    hook let through what the main tree refused), while precheck itself reads the main tree's memory."""
    synced(repo)
    plant_failure(repo)
    sync.sync(repo)
    run_cli("-C", str(repo), "hook", "git", "install", "--strict")
    feature = tmp_path / "feature"
    git(repo, "worktree", "add", "-q", "-b", "feature", str(feature))
    (feature / "src/cache.py").write_text("x = 3\n", encoding="utf-8")
    git(feature, "add", "src/cache.py")
    refused = git_commit(feature, "change in the worktree")
    assert refused.returncode == 1 and "commit refused (--strict)" in refused.stderr, refused.stderr
    # A worktree of a repository without a memory costs nothing and says nothing.
    bare = tmp_path / "plain"
    bare.mkdir()
    git(bare, "init", "-q")
    commit(bare, "init", {"a.txt": "a\n"})
    run_cli("-C", str(bare), "hook", "git", "install", "--strict")
    other = tmp_path / "plain-wt"
    git(bare, "worktree", "add", "-q", "-b", "side", str(other))
    (other / "a.txt").write_text("b\n", encoding="utf-8")
    git(other, "add", "a.txt")
    done = git_commit(other, "side work")
    assert done.returncode == 0 and "nexusmem" not in done.stderr, done.stderr


def test_hook_without_memory_or_with_a_missing_binary_never_fails_the_commit(repo: Path) -> None:
    run_cli("-C", str(repo), "hook", "git", "install", "--strict")
    assert git_commit(repo, "no memory yet").returncode == 0
    synced(repo)
    run_cli("-C", str(repo), "hook", "git-post", "install")
    for name in ("pre-commit", "post-commit"):
        path = repo / ".git" / "hooks" / name
        path.write_text(
            re.sub(r"nexusmem_pinned='[^']*'", "nexusmem_pinned='/nonexistent/nexusmem'", path.read_text())
        )
    proc = git_commit(repo, "binary gone")
    assert proc.returncode == 0, proc.stderr


def test_a_commit_says_the_configs_team_url_holds_a_password_and_goes_on(repo: Path) -> None:
    """A password written by hand into `team.url` turns the team store off, which `query`, `status` and
    `show` say, but the commit hook said nothing: a user who only commits never learnt that nothing was
    pushed. The pre-commit hook's precheck says it now (once, the password never shown); the commit goes on,
    a strict hook included."""
    synced(repo)
    plant_failure(repo)
    path = repo / ".nexusmem" / "config.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    data["team"]["url"] = "postgresql://alice:s3cret-pw@db.internal/nexusmem"
    path.write_text(json.dumps(data), encoding="utf-8")
    run_cli("-C", str(repo), "hook", "git", "install", "--strict")
    (repo / "README.md").write_text("# Demo 2\n", encoding="utf-8")
    git(repo, "add", "README.md")
    done = git_commit(repo, "docs")
    assert done.returncode == 0, done.stderr
    assert done.stderr.count("'team.url' holds a password, so the team store is not used") == 1, done.stderr
    assert "nexusmem team init --url postgresql://alice@db.internal/nexusmem" in done.stderr
    assert "s3cret-pw" not in done.stderr
    # What precheck finds is said as before, beside it; --json keeps stdout JSON.
    (repo / "src/cache.py").write_text("x = 3\n", encoding="utf-8")
    checked = run_script("precheck", "--json", "--", "src/cache.py", cwd=repo)
    assert checked.returncode == 0 and json.loads(checked.stdout)["findings"], checked.stdout
    assert "holds a password" in checked.stderr and "s3cret-pw" not in checked.stdout + checked.stderr
    data["team"]["url"] = "postgresql://alice@db.internal/nexusmem"  # fixed as the warning says
    path.write_text(json.dumps(data), encoding="utf-8")
    fixed = git_commit(repo, "nothing staged")
    assert fixed.returncode == 0 and "holds a password" not in fixed.stderr, fixed.stderr


def test_non_shell_hook_is_refused_without_force_and_wrapped_with_it(repo: Path) -> None:
    path = repo / ".git" / "hooks" / "post-commit"
    original = b"#!/usr/bin/env python3\nopen('foreign.log', 'a').write('py\\n')\n"
    path.write_bytes(original)
    path.chmod(0o755)
    refused = run_cli("-C", str(repo), "hook", "git-post", "install", ok=False)
    assert refused.exit_code == 1 and "--force" in refused.output and path.read_bytes() == original
    run_cli("-C", str(repo), "hook", "git-post", "install", "--force")
    assert git_hooks.status("post-commit", repo).how == "legacy"
    assert git_commit(repo, "one").returncode == 0
    assert (repo / "foreign.log").read_text(encoding="utf-8") == "py\n"  # the wrapped hook still runs
    run_cli("-C", str(repo), "hook", "git-post", "remove")
    assert path.read_bytes() == original
    assert not (path.parent / ("post-commit" + git_hooks.LEGACY_SUFFIX)).exists()


def test_core_hooks_path_is_honoured(repo: Path) -> None:
    git(repo, "config", "core.hooksPath", ".githooks")
    synced(repo)
    plant_failure(repo)
    sync.sync(repo)
    run_cli("-C", str(repo / "src"), "hook", "git", "install", "--strict")
    assert (repo / ".githooks" / "pre-commit").exists()
    assert not (repo / ".git" / "hooks" / "pre-commit").exists()
    (repo / "src/cache.py").write_text("x = 9\n", encoding="utf-8")
    git(repo, "add", "src/cache.py")
    assert git_commit(repo, "change").returncode == 1
    assert "(hooksPath" not in run_cli("-C", str(repo), "hook", "git", "status").stdout


def test_a_worktree_says_the_hooks_are_in_the_main_work_trees_copy_of_a_committed_hooks_folder(
    repo: Path, tmp_path: Path
) -> None:
    """With core.hooksPath .githooks (committed hooks: a folder in each work tree), doctor in a linked worktree
    said four blocks installed "here" were gone ("…/wt/.githooks/pre-commit was deleted or rewritten"), and
    `hook git status` that they were "installed here": they never were. The install is in the main work tree's
    copy, which commits made in the worktree do not run, and that is what is said, once."""
    git(repo, "config", "core.hooksPath", ".githooks")
    commit(
        repo,
        "chore: team hooks",
        {".githooks/pre-commit": "#!/bin/sh\necho lint\n", ".githooks/post-commit": "#!/bin/sh\necho done\n"},
    )
    for name in ("pre-commit", "post-commit"):
        (repo / ".githooks" / name).chmod(0o755)
    synced(repo)
    run_cli("-C", str(repo), "hook", "git", "install")
    run_cli("-C", str(repo), "hook", "git-post", "install")
    worktree = tmp_path / "wt"
    git(repo, "worktree", "add", "-q", str(worktree), "-b", "feature")

    def said_in_worktree() -> tuple[list[dict[str, str]], str]:
        report = json.loads(run_cli("-C", str(worktree), "doctor", "--json", ok=False).stdout)
        hooks = [c for c in report["checks"] if c["area"] == "git" and not c["ok"]]
        status = run_cli("-C", str(worktree), "hook", "git", "status").output
        return hooks, status + run_cli("-C", str(worktree), "hook", "git-post", "status").output

    for record in ("as written", "by an older release (names only)"):
        if record != "as written":
            lines = (repo / ".git/nexusmem-hooks").read_text().splitlines()
            names = [line for line in lines if not line.startswith("@folder\t")]
            (repo / ".git/nexusmem-hooks").write_text("".join(f"{n}\n" for n in names), encoding="utf-8")
        hooks, status = said_in_worktree()
        assert len(hooks) == 1, (record, hooks)
        detail, fix = hooks[0]["detail"], hooks[0]["fix"]
        assert (
            "the NexusMem pre-commit, post-commit, post-merge, post-applypatch blocks are installed in"
            f" {repo / '.githooks'}, the main work tree's copy of the hooks folder" in detail
        ), (record, detail)
        assert f"commits made in this worktree run its own copy, {worktree / '.githooks'}" in detail, detail
        assert "precheck and the auto-sync do not run for those commits" in detail, detail
        assert fix.startswith("nexusmem hook git install && nexusmem hook git-post install  # here too"), fix
        assert "gone" not in status and "deleted or rewritten" not in status, (record, status)
        assert f"pre-commit block is installed in {repo / '.githooks'}, the main work tree's copy" in status

    # In the main work tree nothing is wrong; a block that really goes there is still named, there.
    assert not [c for c in _problems(repo) if c["area"] == "git"]
    run_cli("-C", str(repo), "hook", "git", "install")  # the record as this release writes it
    (repo / ".githooks" / "pre-commit").write_text("#!/bin/sh\necho lint\n", encoding="utf-8")
    lost = [c["detail"] for c in _problems(repo) if c["area"] == "git"]
    assert lost == [
        f"the NexusMem pre-commit block installed here is gone ({repo / '.githooks/pre-commit'} was deleted or"
        " rewritten by something other than `nexusmem hook ... remove`): precheck no longer runs"
    ], lost
    # and the worktree, whose copy never had it, still says only where the others are.
    hooks, status = said_in_worktree()
    assert len(hooks) == 1 and "post-commit, post-merge, post-applypatch blocks are" in hooks[0]["detail"]
    assert "gone" not in status, status

    # Installed in the worktree's copy too: precheck runs on its commits, and nothing is said.
    run_cli("-C", str(worktree), "hook", "git", "install")
    run_cli("-C", str(worktree), "hook", "git-post", "install")
    assert not said_in_worktree()[0]
    run_cli("-C", str(repo), "hook", "git", "install")
    assert not [c for c in _problems(repo) if c["area"] == "git"]


@pytest.mark.parametrize("hooks_path", [None, ".githooks"])
def test_a_block_that_goes_in_a_moved_or_copied_repository_is_named_there(
    repo: Path, tmp_path: Path, hooks_path: str | None
) -> None:
    """The record names the folder each block went in. After a `mv` of the repository, a pre-commit block
    deleted there was never named (`hook git status`, doctor and `status --json` said nothing: the old
    folder was taken for another work tree's copy), and the old folder stayed in the record; in a `cp -a`
    copy, doctor said the block was in the original's "copy of the hooks folder … commits made in this
    worktree run its own copy". Both are this checkout's folder, as a record without folders read."""
    if hooks_path is not None:
        git(repo, "config", "core.hooksPath", hooks_path)
    synced(repo)
    run_cli("-C", str(repo), "hook", "git", "install")
    run_cli("-C", str(repo), "hook", "git-post", "install")
    original = repo / (hooks_path or ".git/hooks")
    copy = tmp_path / "copy"
    shutil.copytree(repo, copy, symlinks=True)
    moved = tmp_path / "moved"
    repo.rename(moved)
    for checkout in (moved, copy):
        folder = checkout / (hooks_path or ".git/hooks")
        (folder / "pre-commit").unlink()
        lost = (
            f"the NexusMem pre-commit block installed here is gone ({folder / 'pre-commit'} was deleted or"
            " rewritten by something other than `nexusmem hook ... remove`): precheck no longer runs"
        )
        said = run_cli("-C", str(checkout), "hook", "git", "status")
        assert lost in said.stderr, (checkout, said.output)
        assert "copy of the hooks folder" not in said.output, said.output
        problems = [c["detail"] for c in _problems(checkout) if c["area"] == "git"]
        assert problems == [lost], (checkout, problems)
        gone = json.loads(run_cli("-C", str(checkout), "status", "--json").stdout)["hooks_gone"]
        assert list(gone) == ["pre-commit"], (checkout, gone)
        # A rewrite of the record keeps no folder of the repository it came from; a remove is no news.
        run_cli("-C", str(checkout), "hook", "git-post", "install")
        record = (checkout / ".git" / "nexusmem-hooks").read_text(encoding="utf-8")
        assert str(original) not in record and str(folder.resolve()) in record, record
        run_cli("-C", str(checkout), "hook", "git", "remove")
        assert json.loads(run_cli("-C", str(checkout), "status", "--json").stdout)["hooks_gone"] == {}
        assert not [c for c in _problems(checkout) if c["area"] == "git"]


def test_in_the_main_work_tree_a_block_gone_there_is_named_once(repo: Path, tmp_path: Path) -> None:
    """With core.hooksPath .githooks and the blocks installed in the main work tree and a linked worktree,
    a block deleted in the main one was said to be gone and, beside it, "installed in …/wt's copy …
    commits made in this worktree run its own copy": the second is no news (it went from here)."""
    git(repo, "config", "core.hooksPath", ".githooks")
    synced(repo)
    worktree = tmp_path / "wt"
    git(repo, "worktree", "add", "-q", str(worktree), "-b", "feature")
    run_cli("-C", str(worktree), "hook", "git", "install")
    # Only the worktree's copy has it: the main work tree is told so, as a work tree, not "this worktree".
    detail = [c["detail"] for c in _problems(repo) if c["area"] == "git"]
    assert len(detail) == 1 and f"{worktree}'s copy of the hooks folder" in detail[0], detail
    assert f"commits made in this work tree run its own copy, {repo / '.githooks'}" in detail[0], detail
    run_cli("-C", str(repo), "hook", "git", "install")
    (repo / ".githooks" / "pre-commit").unlink()
    said = run_cli("-C", str(repo), "hook", "git", "status").output
    assert "the NexusMem pre-commit block installed here is gone" in said, said
    assert "copy of the hooks folder" not in said, said
    assert [c["detail"] for c in _problems(repo) if c["area"] == "git"] == [
        f"the NexusMem pre-commit block installed here is gone ({repo / '.githooks/pre-commit'} was deleted or"
        " rewritten by something other than `nexusmem hook ... remove`): precheck no longer runs"
    ]
    assert not [c for c in _problems(worktree) if c["area"] == "git"]


# The last release whose record of the git hooks holds names only: a user may roll back to it.
NAMES_ONLY_RELEASE = "330b48f"


def test_a_release_that_reads_names_only_shares_the_hooks_record(repo: Path, tmp_path: Path) -> None:
    """The record once held `name<TAB>folder` lines, which the previous release (names only, whole lines)
    could not read: rolled back, its `hook git status` no longer named a deleted block, its `hook git
    install` rewrote the record to `pre-commit` alone (post-commit, post-merge, post-applypatch dropped), its
    `hook git-post remove` left them in, and back on this release a hook removed that way was reported
    "deleted or rewritten". The names stay a line each; the folders are on lines it skips."""
    source = Path(__file__).resolve().parent.parent
    old = tmp_path / "old-release"
    old.mkdir()
    archive = subprocess.run(
        ["git", "-C", str(source), "archive", NAMES_ONLY_RELEASE, "nexusmem", "hooks"],
        capture_output=True,
        check=False,
    )
    if archive.returncode != 0:
        pytest.skip(f"release {NAMES_ONLY_RELEASE} is not in this checkout's history")
    subprocess.run(["tar", "-x", "-C", str(old)], input=archive.stdout, check=True)

    def previous(*args: str) -> subprocess.CompletedProcess[str]:
        """`nexusmem ARGS` as the previous release runs it."""
        env = dict(os.environ, PYTHONPATH=str(old))
        command = [sys.executable, "-m", "nexusmem", "-C", str(repo), *args]
        return subprocess.run(
            command, cwd=old, capture_output=True, text=True, env=env, timeout=120, check=False
        )

    synced(repo)
    run_cli("-C", str(repo), "hook", "git", "install")
    run_cli("-C", str(repo), "hook", "git-post", "install")
    record = repo / ".git" / "nexusmem-hooks"
    hooks = repo / ".git" / "hooks"
    lost = "block installed here is gone"
    # The previous release names a block deleted since, and its install keeps every hook recorded.
    (hooks / "post-merge").unlink()
    said = previous("hook", "git-post", "status")
    assert said.returncode == 0 and f"NexusMem post-merge {lost}" in said.stderr, said
    assert previous("hook", "git-post", "install").returncode == 0
    assert previous("hook", "git", "install").returncode == 0
    assert record.read_text(encoding="utf-8").splitlines()[:4] == list(git_hooks.HOOK_NAMES)
    for name in git_hooks.HOOK_NAMES:
        (hooks / name).unlink()
        said = previous("hook", "git" if name == "pre-commit" else "git-post", "status")
        assert f"NexusMem {name} {lost}" in said.stderr, (name, said)
        said = run_cli("-C", str(repo), "hook", "git" if name == "pre-commit" else "git-post", "status")
        assert f"NexusMem {name} {lost}" in said.stderr, (name, said.output)
        run_cli("-C", str(repo), "hook", "git" if name == "pre-commit" else "git-post", "install")
    # Removed with the previous release: no longer recorded, for either release.
    assert previous("hook", "git-post", "remove").returncode == 0
    assert record.read_text(encoding="utf-8") == "pre-commit\n", record.read_text(encoding="utf-8")
    assert json.loads(run_cli("-C", str(repo), "status", "--json").stdout)["hooks_gone"] == {}
    assert "gone" not in run_cli("-C", str(repo), "hook", "git-post", "status").output
    # A names-only record the previous release wrote is read as it was, and rewritten with the folders.
    (hooks / "pre-commit").unlink()
    gone = json.loads(run_cli("-C", str(repo), "status", "--json").stdout)["hooks_gone"]
    assert list(gone) == ["pre-commit"], gone
    run_cli("-C", str(repo), "hook", "git", "install")
    folder = f"@folder\tpre-commit\t{hooks.resolve()}"
    assert record.read_text(encoding="utf-8") == f"pre-commit\n{folder}\n"
    assert previous("hook", "git", "remove").returncode == 0
    assert not record.exists()


def test_a_user_wide_hooks_path_syncs_only_repositories_that_have_a_memory(
    repo: Path, tmp_path: Path
) -> None:
    # A core.hooksPath in the user's git config is every repository's hooks folder: the auto-sync installed
    # there used to build a memory in every repository the user committed in.
    shared = tmp_path / "global-hooks"
    git(repo, "config", "--global", "core.hooksPath", str(shared))
    synced(repo)
    result = run_cli("-C", str(repo), "hook", "git-post", "install")
    assert (shared / "post-commit").exists() and not (repo / ".git" / "hooks" / "post-commit").exists()
    assert "every repository" in result.stderr and os.environ["GIT_CONFIG_GLOBAL"] in result.stderr
    other = tmp_path / "other"
    git(tmp_path, "init", "-q", str(other))
    assert git_commit(other, "unrelated work").returncode == 0
    assert not (other / ".nexusmem").exists()
    # The repository that has a memory is still kept current by the same hook.
    before = len(commit_ids(repo / ".nexusmem" / "memory.db"))
    assert git_commit(repo, "feat: more").returncode == 0
    wait_settled(repo, before + 1)
    # Installing again is a no-op; once the setting is this repository's own, the block syncs as before.
    assert "already" in run_cli("-C", str(repo), "hook", "git-post", "install").stdout
    git(repo, "config", "--global", "--unset", "core.hooksPath")
    git(repo, "config", "core.hooksPath", str(shared))
    result = run_cli("-C", str(repo), "hook", "git-post", "install")
    assert "Updated" in result.stdout and "every repository" not in result.stderr
    assert "nexusmem_shared=1" not in (shared / "post-commit").read_text(encoding="utf-8")


@pytest.mark.slow
def test_worktree_commit_runs_the_shared_hook_and_syncs_the_worktree(repo: Path, tmp_path: Path) -> None:
    synced(repo)
    worktree = tmp_path / "wt"
    git(repo, "worktree", "add", "-q", "-b", "side", str(worktree))
    run_cli("-C", str(worktree), "hook", "git-post", "install")
    assert (repo / ".git" / "hooks" / "post-commit").exists()  # worktrees share the main hooks
    sync.sync(worktree)
    before = len(commit_ids(worktree / ".nexusmem" / "memory.db"))
    (worktree / "side.txt").write_text("side\n", encoding="utf-8")
    git(worktree, "add", "side.txt")
    assert git_commit(worktree, "feat: side branch work").returncode == 0
    wait_settled(worktree, before + 1)
    # The hook's sync read the worktree it ran in (GIT_DIR and friends stripped), not the main checkout.
    main_commits = len(commit_ids(repo / ".nexusmem" / "memory.db"))
    assert main_commits == before


# --- detached auto-sync ------------------------------------------------------------------------------


@pytest.mark.slow
def test_burst_of_commits_is_coalesced_and_ends_equal_to_a_clean_sync(repo: Path, tmp_path: Path) -> None:
    git(repo, "remote", "add", "origin", "https://example.com/team/demo.git")  # one project id for both
    synced(repo)
    run_cli("-C", str(repo), "hook", "git", "install")
    run_cli("-C", str(repo), "hook", "git-post", "install")
    started = time.perf_counter()
    for n in range(20):
        (repo / f"f{n}.txt").write_text(f"{n}\n", encoding="utf-8")
        git(repo, "add", f"f{n}.txt")
        proc = git_commit(repo, f"feat: change {n}")
        assert proc.returncode == 0, proc.stderr
    burst = time.perf_counter() - started
    wait_settled(repo, 21)
    log = (repo / ".nexusmem" / "auto-sync.log").read_text(encoding="utf-8")
    spans = sorted(
        (float(a), float(b)) for a, b in re.findall(r"sync run \d+ done .*\[([\d.]+)-([\d.]+)\]", log)
    )
    print(f"\n20 commits in {burst:.2f}s -> {len(spans)} auto sync run(s)")
    # The holder waits for the commits to stop before it syncs: the burst is one sync, plus at most one
    # for commits that landed while it ran.
    assert 1 <= len(spans) <= 2
    for (_, end), (begin, _) in itertools.pairwise(spans):
        assert begin >= end - 0.001, "two syncs overlapped"
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(repo), str(clone))
    git(clone, "remote", "set-url", "origin", "https://example.com/team/demo.git")
    run_cli("-C", str(clone), "sync", "--rebuild", "--quiet")
    assert all_ids(repo / ".nexusmem" / "memory.db") == all_ids(clone / ".nexusmem" / "memory.db")


def test_a_running_sync_makes_others_mark_pending_and_return(repo: Path) -> None:
    synced(repo)
    state = repo / ".nexusmem"
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, time; from filelock import FileLock;"
         f"lock = FileLock({str(state / 'sync.lock')!r}); lock.acquire(); print('held', flush=True); time.sleep(60)"],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        calls: list[Path] = []
        t0 = time.perf_counter()
        result = autosync.auto_sync(repo, log=lambda _m: None, run_sync=calls.append, debounce=0)
        assert result.deferred and result.runs == 0 and calls == []
        assert time.perf_counter() - t0 < 2 and (state / "sync.pending").exists()
        # A holder killed outright never blocks the next sync: the OS drops its lock with the process.
        os.kill(holder.pid, signal.SIGKILL)
        holder.wait(10)
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait(10)
    result = autosync.auto_sync(repo, log=lambda _m: None, run_sync=calls.append, debounce=0)
    assert result.runs == 1 and not (state / "sync.pending").exists()


def test_pending_set_during_a_run_causes_one_more_run(repo: Path) -> None:
    synced(repo)
    pending = repo / ".nexusmem" / "sync.pending"
    runs: list[int] = []

    def slow_sync(root: Path) -> None:
        runs.append(1)
        if len(runs) == 1:
            pending.touch()  # a commit arrived while we were syncing

    result = autosync.auto_sync(repo, log=lambda _m: None, run_sync=slow_sync, debounce=0)
    assert result.runs == 2 and not pending.exists()


def test_auto_sync_log_is_capped(tmp_path: Path) -> None:
    log = tmp_path / "auto-sync.log"
    log.write_bytes(b"".join(b"line %06d\n" % n for n in range(40_000)))  # ~480 KB
    assert autosync.cap_log(log)
    data = log.read_bytes()
    assert len(data) <= autosync.LOG_KEEP_BYTES + 100 and data.endswith(b"line 039999\n")
    assert not autosync.cap_log(log)


@pytest.mark.slow
def test_post_commit_returns_at_once_and_logs_a_run(repo: Path) -> None:
    synced(repo)
    run_cli("-C", str(repo), "hook", "git-post", "install")
    status = run_cli("-C", str(repo), "hook", "git-post", "status").stdout
    assert "post-commit: installed" in status and "sync --auto" in status
    t0 = time.perf_counter()
    assert git_commit(repo, "feat: two").returncode == 0
    assert time.perf_counter() - t0 < 1.0  # a sync takes longer than this; the commit does not wait
    wait_settled(repo, 2)
    assert "sync run 1 done" in (repo / ".nexusmem" / "auto-sync.log").read_text(encoding="utf-8")


def test_post_commit_keeps_its_files_private_whatever_the_umask(repo: Path) -> None:
    """Under umask 000 the hook made .nexusmem/.gitignore, the pending flag and auto-sync.log 0666 (the sync
    fixed them later, but a flag made while a sync ran stayed so). It now sets umask 077 itself."""
    commit(repo, "feat: first", {"src/cache.py": "x = 1\n"})
    run_cli("-C", str(repo), "hook", "git-post", "install")
    state = repo / ".nexusmem"
    for leftover in (".gitignore", "sync.pending", "auto-sync.log"):
        (state / leftover).unlink(missing_ok=True)
    proc = subprocess.run(
        ["git", "commit", "-q", "--allow-empty", "-m", "feat: two"],
        cwd=repo,
        capture_output=True,
        text=True,
        env=dict(os.environ),
        check=False,
        preexec_fn=lambda: os.umask(0),
    )
    assert proc.returncode == 0, proc.stderr
    made = [p for p in (state / "sync.pending", state / "auto-sync.log") if p.exists()]
    assert made, "the hook made neither its flag nor its log"
    for path in made:
        assert path.stat().st_mode & 0o077 == 0, (path, oct(path.stat().st_mode))
    wait_settled(repo, 2)


def test_a_commit_with_a_read_only_memory_folder_prints_no_shell_error(repo: Path) -> None:
    """With .nexusmem read-only (a read-only mount), every commit printed the shell's own error:
    `.git/hooks/post-commit: 38: cannot create .nexusmem/sync.pending: Read-only file system` (the
    `2>/dev/null` came after the redirection that failed). A block an older release installed is brought up
    to date by installing again."""
    from helpers.env import read_only_runner

    synced(repo)
    run_cli("-C", str(repo), "hook", "git-post", "install")
    hook = repo / ".git" / "hooks" / "post-commit"
    text = hook.read_text(encoding="utf-8")
    flag_line = next(line for line in text.splitlines() if "sync.pending" in line and "flock" not in line)
    hook.write_text(text.replace(flag_line, ": >.nexusmem/sync.pending 2>/dev/null"), encoding="utf-8")
    state = repo / ".nexusmem"
    prefix = read_only_runner(state)
    if prefix is None:
        pytest.skip("cannot make a directory read-only for root here (no unshare/mount)")

    def commit_read_only(message: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*prefix, "git", "commit", "-q", "--allow-empty", "-m", message],
            cwd=repo,
            capture_output=True,
            text=True,
            env=dict(os.environ),
            check=False,
        )

    try:
        older = commit_read_only("feat: under the older block")
        assert older.returncode == 0 and "cannot create .nexusmem/sync.pending" in older.stderr, older.stderr
        state.chmod(0o700)
        assert "Updated the auto-sync hook" in run_cli("-C", str(repo), "hook", "git-post", "install").output
        prefix = read_only_runner(state) or []
        now = commit_read_only("feat: under the current block")
        assert now.returncode == 0 and now.stderr == "", now.stderr
    finally:
        state.chmod(0o700)


@pytest.mark.parametrize("damage", ["empty", "garbage", "locked"])
def test_a_store_precheck_cannot_read_never_refuses_or_holds_a_commit(repo: Path, damage: str) -> None:
    """`--strict` refuses a commit for what precheck finds; a store it cannot read finds nothing. An empty
    memory.db (a crash or a full disk) refused every commit, and the post-commit sync that would rebuild it
    never ran; garbage printed an internal error on every commit; a store another process held locked
    (SQLite's exclusive mode) held each commit 15 s."""
    synced(repo)
    plant_failure(repo)
    run_cli("-C", str(repo), "hook", "git", "install", "--strict")
    db = repo / ".nexusmem" / "memory.db"
    locker = None
    if damage == "locked":
        code = (
            "import sqlite3, sys, time; c = sqlite3.connect(sys.argv[1], isolation_level=None);"
            "c.execute('PRAGMA locking_mode=EXCLUSIVE'); c.execute('BEGIN EXCLUSIVE');"
            "c.execute('CREATE TABLE IF NOT EXISTS zz(x)'); print('locked', flush=True); time.sleep(60)"
        )
        locker = subprocess.Popen([sys.executable, "-c", code, str(db)], stdout=subprocess.PIPE, text=True)
        assert locker.stdout is not None and locker.stdout.readline().strip() == "locked"
    else:
        for side in ("-wal", "-shm"):
            Path(f"{db}{side}").unlink(missing_ok=True)
        db.write_bytes(b"" if damage == "empty" else os.urandom(8192))
    try:
        (repo / "src/cache.py").write_text("x = 3\n", encoding="utf-8")
        git(repo, "add", "src/cache.py")
        t0 = time.monotonic()
        done = git_commit(repo, "change")
        elapsed = time.monotonic() - t0
    finally:
        if locker is not None:
            locker.kill()
            locker.wait()
    assert done.returncode == 0, done.stderr
    assert "memory not checked" in done.stderr and "internal error" not in done.stderr, done.stderr
    assert elapsed < 8, elapsed  # the busy wait of a hook is 1 s, not a sync's 15 s


def test_a_sync_that_catches_up_takes_the_failure_mark_away(repo: Path) -> None:
    """A post-commit sync that failed (here a config.json broken mid-edit) leaves `.nexusmem/auto-sync.failed`;
    the `nexusmem sync` run by hand once it is fixed caught up, and the mark stayed behind (only the next
    post-commit sync that worked took it away): it is gone, and status and doctor say nothing of it."""
    synced(repo)
    assert run_script("hook", "git-post", "install", cwd=repo).returncode == 0
    config = repo / ".nexusmem" / "config.json"
    kept = config.read_text(encoding="utf-8")
    config.write_text('{"embedder": ', encoding="utf-8")
    assert git_commit(repo, "feat: made while the config was half written").returncode == 0
    mark = repo / ".nexusmem" / autosync.FAILED_NAME
    deadline = time.monotonic() + 30
    while not mark.exists():
        assert time.monotonic() < deadline, "the post-commit sync left no failure mark"
        time.sleep(0.2)
    assert "not valid JSON" in mark.read_text(encoding="utf-8")

    config.write_text(kept, encoding="utf-8")
    done = run_script("sync", "-q", cwd=repo)
    assert done.returncode == 0, done.stderr
    assert not mark.exists()
    assert json.loads(run_script("status", "--json", cwd=repo).stdout)["auto_sync_failed"] is None
    assert "post-commit sync failed" not in run_script("doctor", cwd=repo).stdout


@pytest.mark.slow
def test_a_failed_post_commit_sync_is_reported_until_a_sync_catches_up(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Another process holds the store while a commit's detached sync runs: the commit is fine, the sync
    # fails, and `status` and `doctor` say so (not only the log nobody reads) until a sync succeeds.
    import sqlite3

    synced(repo)
    run_cli("-C", str(repo), "hook", "git-post", "install")
    holder = sqlite3.connect(repo / ".nexusmem" / "memory.db", timeout=0)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        assert git_commit(repo, "feat: made while the store was held").returncode == 0
        log = repo / ".nexusmem" / "auto-sync.log"
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline and "Error:" not in (log.read_text() if log.exists() else ""):
            time.sleep(0.3)
        assert "Error:" in log.read_text(), log.read_text() if log.exists() else "no log"
    finally:
        holder.rollback()
        holder.close()
    status = json.loads(run_cli("-C", str(repo), "status", "--json").stdout)
    assert status["auto_sync_failed"] is not None and "locked" in status["auto_sync_failed"]["error"]
    # In UTC, as every date NexusMem prints (it was the machine's local time).
    with monkeypatch.context() as zone:
        zone.setenv("TZ", "Asia/Tokyo")
        time.tzset()
        at = json.loads(run_cli("-C", str(repo), "status", "--json").stdout)["auto_sync_failed"]["at"]
    time.tzset()
    assert at.endswith("+00:00"), at
    assert "the post-commit sync failed at" in run_cli("-C", str(repo), "status").stdout
    doctor = run_cli("-C", str(repo), "doctor", ok=False)
    assert doctor.exit_code == 1 and "the post-commit sync failed at" in doctor.stdout
    assert "fix: nexusmem sync" in doctor.stdout
    run_cli("-C", str(repo), "sync", "--no-embed")
    assert json.loads(run_cli("-C", str(repo), "status", "--json").stdout)["auto_sync_failed"] is None
    assert "post-commit sync failed" not in run_cli("-C", str(repo), "doctor", ok=False).stdout


@pytest.mark.slow
def test_a_strict_commit_after_a_reset_is_not_refused_for_the_commits_it_dropped(repo: Path) -> None:
    """The tester's steps: c1..c4 change f.py (each synced by the post-commit hook), `git reset --hard
    HEAD~2` (no hook runs), then a real change. The strict hook counted c3 and c4 still ("changed in 5
    commits ... (high churn)") and refused the commit on every retry: the refused commit never reached the
    post-commit sync that would prune them. Now they are left out (and said), and the commit goes in."""
    commit(repo, "c0", {"f.py": "0\n"})
    sync.sync(repo)
    run_cli("-C", str(repo), "hook", "git-post", "install")
    for i in range(1, 5):
        (repo / "f.py").write_text("".join(f"{n}\n" for n in range(i + 1)), encoding="utf-8")
        git(repo, "add", "f.py")
        assert git_commit(repo, f"c{i}").returncode == 0
        wait_settled(repo, i + 1)
    run_cli("-C", str(repo), "hook", "git", "install", "--strict")
    git(repo, "reset", "-q", "--hard", "HEAD~2")
    (repo / "f.py").write_text("x\n", encoding="utf-8")
    git(repo, "add", "f.py")
    done = git_commit(repo, "real change")
    assert done.returncode == 0, done.stderr
    assert "high churn" not in done.stderr and "left behind" in done.stderr
    wait_settled(repo, 4)  # c0, c1, c2 and the real change: the post-commit sync pruned c3 and c4


def test_doctor_names_a_git_hook_that_runs_another_nexusmem(repo: Path, tmp_path: Path) -> None:
    # An older install at another path, still pinned in the hook after an upgrade.
    run_cli("-C", str(repo), "hook", "git-post", "install")
    old = tmp_path / "oldvenv" / "bin" / "nexusmem"
    old.parent.mkdir(parents=True)
    old.write_text("#!/bin/sh\nexit 0\n")
    old.chmod(0o755)
    path = repo / ".git" / "hooks" / "post-commit"
    here = str(git_hooks.console_script())
    path.write_text(path.read_text().replace(here, str(old)))
    doctor = run_cli("-C", str(repo), "doctor", ok=False)
    assert f"post-commit: runs another NexusMem ({old}), not this one" in doctor.stdout
    assert "fix: nexusmem hook git-post install" in doctor.stdout
    assert "Updated the auto-sync hook" in run_cli("-C", str(repo), "hook", "git-post", "install").stdout
    assert "runs another NexusMem" not in run_cli("-C", str(repo), "doctor", ok=False).stdout


def test_the_post_commit_hook_writes_nothing_into_another_users_folder(repo: Path, tmp_path: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("giving a folder to another user takes root")
    commit(repo, "feat: first", {"src/cache.py": "x = 1\n"})
    run_cli("-C", str(repo), "hook", "git-post", "install")
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    theirs.chmod(0o777)
    os.chown(theirs, 12345, 12345)
    (repo / ".nexusmem").symlink_to(theirs)  # a link a repository can carry
    assert git_commit(repo, "feat: more").returncode == 0
    time.sleep(1.5)  # a detached sync, had one started, would have written by now
    assert list(theirs.iterdir()) == []


@pytest.mark.slow
def test_a_pull_a_merge_and_git_am_bring_the_memory_up_to_date(repo: Path, tmp_path: Path) -> None:
    """Only post-commit was installed, and git runs post-merge for a pull or a merge and post-applypatch for
    `git am` instead: a teammate's "fix the parser crash" pulled in was not in memory until the next commit."""
    synced(repo)
    upstream = tmp_path / "upstream"
    git(tmp_path, "clone", "-q", str(repo), str(upstream))
    git(upstream, "config", "user.email", "mate@example.com")
    git(upstream, "config", "user.name", "Mate")
    run_cli("-C", str(repo), "hook", "git-post", "install")
    status = run_cli("-C", str(repo), "hook", "git-post", "status").stdout
    for name in ("post-commit", "post-merge", "post-applypatch"):
        assert f"{name}: installed" in status, status
    commit(upstream, "fix: the parser crash on empty tables", {"src/parser.py": "x = 2\n"})
    branch = git(repo, "rev-parse", "--abbrev-ref", "HEAD").strip()
    pulled = git_with_hooks(repo, "pull", "-q", "--no-rebase", str(upstream), branch)
    assert pulled.returncode == 0, pulled.stderr
    wait_settled(repo, 2)
    # git am of a mailed patch series
    commit(upstream, "fix: the lexer drops a trailing comment", {"src/lexer.py": "y = 1\n"})
    commit(upstream, "docs: explain the lexer", {"docs/lexer.md": "# Lexer\n"})
    patches = git(upstream, "format-patch", "-2", "-o", str(tmp_path / "patches")).split()
    applied = git_with_hooks(repo, "am", "-q", *patches)
    assert applied.returncode == 0, applied.stderr
    wait_settled(repo, 4)
    answer = query_json(repo, "parser crash on empty tables")
    assert "fix: the parser crash on empty tables" in answer["items"][0]["title"]
    doctor = run_cli("-C", str(repo), "doctor", ok=False).stdout
    assert "the auto-sync hook is not in" not in doctor
    # An install from before these hooks existed: doctor says what is missing and how to fix it.
    run_cli("-C", str(repo), "hook", "git-post", "remove")
    assert not any((repo / ".git" / "hooks" / n).exists() for n in ("post-merge", "post-applypatch"))
    git_hooks.install("post-commit", repo)
    doctor = run_cli("-C", str(repo), "doctor", ok=False).stdout
    assert "the auto-sync hook is not in post-merge, post-applypatch" in doctor, doctor
    assert "fix: nexusmem hook git-post install" in doctor


def test_a_memory_git_stash_all_took_is_not_rebuilt_and_a_pop_brings_it_back(repo: Path) -> None:
    """`git stash --all` takes .nexusmem/ (an ignored folder) with it. The next commit's auto-sync built a new
    memory in its place, `git stash pop` then stopped on its files ("already exists, no checkout"), and the
    old memory (with what `forget` had erased) stayed in the stash with the user's own stashed work."""
    from nexusmem import mcp_server

    synced(repo)
    commit(repo, "chore: point at the staging cluster", {"src/conf.py": "HOST = 'db-7f3a.internal'\n"})
    run_cli("-C", str(repo), "sync", "--no-embed")
    run_cli("-C", str(repo), "forget", "db-7f3a.internal", "--yes")
    run_cli("-C", str(repo), "hook", "git-post", "install")
    (repo / "src/cache.py").write_text("x = 2\n", encoding="utf-8")
    git(repo, "stash", "-q")  # a plain entry (no untracked files): now stash@{1}
    (repo / "notes.txt").write_text("half-done idea\n", encoding="utf-8")
    git(repo, "stash", "-q", "--all")
    assert not (repo / ".nexusmem").exists()
    made = git_commit(repo, "feat: made while the memory was stashed")
    assert made.returncode == 0, made.stderr
    assert f"memory not updated: the memory of {repo} is in stash@{{0}}" in made.stderr, made.stderr
    assert "`git stash pop` brings it back" in made.stderr
    assert not (repo / ".nexusmem").exists()
    said = f"the memory of {repo} is in stash@{{0}} (`git stash --all` took .nexusmem/ with it)"
    for args in (("status",), ("query", "cache"), ("sync",), ("sync", "--auto")):
        out = run_cli("-C", str(repo), *args, ok=False)
        assert out.exit_code == 1 and said in out.output, (args, out.output)
    assert (
        "`nexusmem sync --ignore-stash` builds a new memory"
        in run_cli("-C", str(repo), "sync", ok=False).output
    )
    with pytest.raises(mcp_server.ToolError, match=re.escape(said)):
        mcp_server.run_status(str(repo))
    assert not (repo / ".nexusmem").exists()
    # Another entry on top (untracked files, so it has a third parent too, without memory.db in it): the
    # memory is found in stash@{1}, and the pop that brings it back names it.
    (repo / "scratch.txt").write_text("more\n", encoding="utf-8")
    git(repo, "stash", "-q", "-u")
    doctor = run_cli("-C", str(repo), "doctor", ok=False).stdout
    assert "is in stash@{1}" in doctor and "git stash pop 'stash@{1}'" in doctor, doctor
    precheck = run_cli("-C", str(repo), "precheck", ok=False).output
    assert "is in stash@{1}" in precheck and "nothing checked" in precheck, precheck
    git(repo, "stash", "pop", "-q")
    assert "git stash pop` brings it back" in git_commit(repo, "chore: scratch").stderr
    git(repo, "stash", "pop", "-q")  # the memory and notes.txt, with nothing in their way
    git(repo, "stash", "pop", "-q")
    assert (repo / "notes.txt").exists() and (repo / ".nexusmem" / "memory.db").exists()
    run_cli("-C", str(repo), "sync", "--no-embed")
    titles = [item["title"] for item in query_json(repo, "made while the memory was stashed")["items"]]
    assert "feat: made while the memory was stashed" in titles
    assert "db-7f3a.internal" not in json.dumps(
        query_json(repo, "db-7f3a.internal")["items"]
    )  # the same memory


def test_a_stash_entry_is_popped_in_the_work_tree_it_was_made_in(repo: Path, tmp_path: Path) -> None:
    """Every worktree shares refs/stash. A `git stash --all` of the main work tree's memory made a linked
    worktree say "the memory of <worktree> is in stash@{0}: `git stash pop` brings it back", and that pop,
    run there, brought the main tree's memory and scratch files into the worktree (and its next sync took
    them for its own)."""
    synced(repo)
    run_cli("-C", str(repo), "hook", "git-post", "install")
    (repo / "scratch.txt").write_text("half-done idea\n", encoding="utf-8")
    git(repo, "stash", "-q", "--all")  # the main work tree's memory
    worktree = tmp_path / "wt"
    git(repo, "worktree", "add", "-q", str(worktree), "-b", "topic")  # often in the same second
    main_said = f"the memory of {repo} (the main work tree, whose memory this worktree answers from) is in stash@{{0}}"
    for args in (("status",), ("precheck",)):
        out = run_cli("-C", str(worktree), *args, ok=False).output
        assert main_said in out and f"`cd {repo} && git stash pop` brings it back" in out, (args, out)
    assert f"git -C {repo} stash pop" in run_cli("-C", str(worktree), "doctor", ok=False).output
    # The worktree builds a memory of its own, as it does beside the main tree's; then stashes it: its
    # entry is its own to pop, and the main tree's is still stash@{1} (now), popped in the main tree.
    run_cli("-C", str(worktree), "sync", "--no-embed")
    git(worktree, "stash", "-q", "--all")
    assert not (worktree / ".nexusmem").exists()
    made = git_commit(worktree, "feat: made in the worktree while its memory was stashed")
    assert f"the memory of {worktree} is in stash@{{0}}" in made.stderr and "`git stash pop`" in made.stderr
    assert not (worktree / ".nexusmem").exists()
    made = git_commit(repo, "feat: made in the main tree while its memory was stashed")
    assert f"the memory of {repo} is in stash@{{1}}" in made.stderr, made.stderr
    assert "`git stash pop 'stash@{1}'` brings it back" in made.stderr and not (repo / ".nexusmem").exists()
    out = run_cli("-C", str(repo), "status", ok=False).output
    assert f"the memory of {repo} is in stash@{{1}}" in out, out
    git(repo, "stash", "pop", "-q", "stash@{1}")
    git(worktree, "stash", "pop", "-q")
    assert (repo / "scratch.txt").exists() and not (worktree / "scratch.txt").exists()
    run_cli("-C", str(repo), "sync", "--no-embed")
    titles = [item["title"] for item in query_json(repo, "made in the main tree while stashed")["items"]]
    assert "feat: made in the main tree while its memory was stashed" in titles


def test_a_stashed_memory_beside_a_committed_config_is_not_rebuilt_and_pops_back(repo: Path) -> None:
    """A committed (force-added) .nexusmem/config.json keeps the folder through `git stash --all`, memory.db
    goes. The post-commit hook checked the stash only where the folder was missing: it wrote its pending
    mark and log there and started a sync the stash check refused, so `git stash pop` then stopped on
    `.nexusmem/auto-sync.log already exists`, and status, query and precheck said the memory was "still
    being built in the background" for as long as the mark was fresh."""
    synced(repo)
    run_cli("-C", str(repo), "hook", "git-post", "install")
    git(repo, "add", "-f", ".nexusmem/config.json")
    git(repo, "commit", "-q", "-m", "chore: share the nexusmem settings")
    (repo / "notes.txt").write_text("half-done idea\n", encoding="utf-8")
    git(repo, "stash", "-q", "--all")
    assert sorted(p.name for p in (repo / ".nexusmem").iterdir()) == ["config.json"]
    made = git_commit(repo, "feat: made while the memory was stashed")
    said = f"the memory of {repo} is in stash@{{0}}"
    assert f"memory not updated: {said}" in made.stderr, made.stderr
    assert run_cli("-C", str(repo), "sync", "--auto", ok=False).exit_code == 1
    assert sorted(p.name for p in (repo / ".nexusmem").iterdir()) == ["config.json"]
    # The pending mark a hook of an older release leaves there is no sync being built.
    (repo / ".nexusmem" / "sync.pending").touch()
    for args in (("status",), ("query", "cache"), ("precheck",)):
        out = run_cli("-C", str(repo), *args, ok=False).output
        assert said in out and "still being built" not in out, (args, out)
    doctor = run_cli("-C", str(repo), "doctor", ok=False).output
    assert (
        f"registered project {repo} has no memory.db: {said}" in doctor and "a sync builds it" not in doctor
    )
    (repo / ".nexusmem" / "sync.pending").unlink()
    git(repo, "stash", "pop", "-q")
    assert (repo / "notes.txt").exists() and (repo / ".nexusmem" / "memory.db").exists()
    run_cli("-C", str(repo), "sync", "--no-embed")
    titles = [item["title"] for item in query_json(repo, "made while the memory was stashed")["items"]]
    assert "feat: made while the memory was stashed" in titles


def test_installing_the_hooks_while_the_memory_is_stashed_says_where_it_is(repo: Path) -> None:
    """`hook git-post install` said "No memory in this repository yet: the next commit builds it in the
    background." while `git stash --all` held the memory, and the next commit builds none."""
    synced(repo)
    git(repo, "stash", "-q", "--all")
    for args in (("git-post", "install"), ("git", "install")):
        out = run_cli("-C", str(repo), "hook", *args).output
        assert f"No memory here now: the memory of {repo} is in stash@{{0}}" in out, (args, out)
        assert "No memory in this repository yet" not in out, (args, out)


def test_sync_ignore_stash_builds_a_new_memory_where_the_old_one_is_stashed(repo: Path) -> None:
    """An old `git stash --all` entry the user means to drop some day must not keep memory off for good."""
    synced(repo)
    git(repo, "stash", "-q", "--all")
    assert run_cli("-C", str(repo), "sync", "--no-embed", ok=False).exit_code == 1
    run_cli("-C", str(repo), "sync", "--no-embed", "--ignore-stash")
    assert json.loads(run_cli("-C", str(repo), "status", "--json").stdout)["by_kind"]["git_commit"] == 1


@pytest.mark.slow
def test_a_memory_the_first_commit_built_takes_its_users_settings(repo: Path) -> None:
    """The post-commit hook makes .nexusmem/ and the background sync sets up the rest; that sync took the
    folder for one that came with the repository, so every setting its user then turned on (transcripts,
    GitHub, an embedding server) was refused as a cloned repository's."""
    run_cli("-C", str(repo), "hook", "git-post", "install")
    commit(repo, "feat: first", {"src/cache.py": "x = 1\n"})  # no hook ran: `commit` writes git objects
    assert git_commit(repo, "feat: second").returncode == 0
    wait_settled(repo, 2)
    path = repo / ".nexusmem" / "config.json"
    settings = json.loads(path.read_text(encoding="utf-8"))
    settings["sources"]["conversation"]["enabled"] = True
    path.write_text(json.dumps(settings), encoding="utf-8")
    done = run_cli("-C", str(repo), "sync", "--no-embed")
    assert "came with the repository" not in done.stderr + done.stdout, done.stderr
    assert "conversation" in done.stdout


def test_a_dotfiles_repository_with_user_wide_hooks_is_left_alone(repo: Path, tmp_path: Path) -> None:
    """Dotfiles kept as `git --git-dir=~/.dotfiles --work-tree=~`, with the hooks in a user-wide
    core.hooksPath: the hooks ran at the top of that work tree, took ~/.nexusmem (the user's own folder)
    for a memory, printed "not inside a git repository" on every commit and started a sync that failed."""
    shared = tmp_path / "global-hooks"
    git(repo, "config", "--global", "core.hooksPath", str(shared))
    synced(repo)
    run_cli("-C", str(repo), "hook", "git", "install")
    run_cli("-C", str(repo), "hook", "git-post", "install")
    home = tmp_path / "home-with-dotfiles"
    (home / ".nexusmem").mkdir(parents=True, mode=0o700)
    (home / ".nexusmem" / "projects.json").write_text('{"projects": []}\n', encoding="utf-8")
    (home / ".bashrc").write_text("alias ll='ls -l'\n", encoding="utf-8")
    bare = tmp_path / "dotfiles.git"
    git(tmp_path, "init", "-q", "--bare", str(bare))
    dot = ["git", f"--git-dir={bare}", f"--work-tree={home}"]
    subprocess.run([*dot, "add", ".bashrc"], cwd=home, check=True, capture_output=True)
    done = subprocess.run(
        [*dot, "commit", "-q", "-m", "bashrc"], cwd=home, capture_output=True, text=True, env=dict(os.environ)
    )
    assert (done.returncode, done.stderr) == (0, ""), done.stderr
    time.sleep(0.5)
    assert sorted(p.name for p in (home / ".nexusmem").iterdir()) == ["projects.json"]


def test_installing_into_a_hooks_folder_the_repository_commits_warns(repo: Path) -> None:
    """core.hooksPath = .husky, whose hook files the team commits: install wrote this machine's absolute
    nexusmem path into tracked files without a word, ready for `git commit -a` to hand to everyone."""
    commit(repo, "chore: husky", {".husky/pre-commit": "#!/bin/sh\nnpm test\n"})
    git(repo, "config", "core.hooksPath", ".husky")
    (repo / ".husky" / "pre-commit").chmod(0o755)
    done = run_cli("-C", str(repo), "hook", "git", "install")
    assert "is a file this repository commits" in done.stderr and "leave the change out" in done.stderr
    assert "M .husky/pre-commit" in git(repo, "status", "--short")
    # A hook file git does not track (the post-commit it creates there) draws no such warning.
    done = run_cli("-C", str(repo), "hook", "git-post", "install")
    assert "is a file this repository commits" not in done.stderr


def test_a_push_deferred_while_another_runs_is_pushed_again_by_it(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A team push started while an earlier one still ran was skipped: what that commit's sync wrote after
    the running push read its cursor waited for the next commit. It is marked, and the running push pushes
    again when it ends."""
    import threading

    from nexusmem import team

    synced(repo)
    state = repo / ".nexusmem"
    release, started = threading.Event(), threading.Event()
    pushes: list[str] = []

    def slow_push(root: Path, log: object) -> None:
        pushes.append(threading.current_thread().name)
        started.set()
        release.wait(10)

    monkeypatch.setattr(team, "auto_push", slow_push)
    lines: list[str] = []
    first = threading.Thread(target=autosync._team_push, args=(repo, state, lines.append), name="first")
    first.start()
    assert started.wait(10)
    autosync._team_push(repo, state, lines.append)  # the next commit's, while the first waits
    assert any("team push deferred" in line for line in lines) and pushes == ["first"]
    release.set()
    first.join(10)
    assert pushes == ["first", "first"] and not (state / autosync.PUSH_PENDING_NAME).exists()


def test_a_foreign_sync_hook_refuses_the_whole_install_and_every_refusal_is_said(repo: Path) -> None:
    """`hook git-post install` over another tool's Python post-commit exited 1 ("post-commit is not a shell
    script…") yet had installed post-merge and post-applypatch: a failed install that half happened (merges
    synced, commits did not). Each hook is asked first: none is written, and each refusal is said."""
    synced(repo)
    hooks = repo / ".git" / "hooks"
    for name in ("post-commit", "post-applypatch"):
        (hooks / name).write_text(
            f"#!/usr/bin/env python3\nopen('foreign.log', 'a').write('{name}\\n')\n", encoding="utf-8"
        )
        (hooks / name).chmod(0o755)
    before = {p.name: p.read_bytes() for p in hooks.iterdir()}
    done = run_cli("-C", str(repo), "hook", "git-post", "install", ok=False)
    assert done.exit_code == 1, done.output
    assert "post-commit is not a shell script" in done.output, done.output
    assert "post-applypatch is not a shell script" in done.output, done.output
    assert "Nothing was installed." in done.output and "Installed" not in done.output, done.output
    assert {p.name: p.read_bytes() for p in hooks.iterdir()} == before
    assert not (repo / ".git" / git_hooks.RECORD).exists()
    assert "auto-sync" not in run_cli("-C", str(repo), "doctor", ok=False).stdout

    # An install from a release before post-applypatch was added: doctor says how to add it beside the
    # foreign hook.
    (hooks / "post-commit").unlink()
    git_hooks.install("post-commit", repo)
    git_hooks.install("post-merge", repo)
    doctor = run_cli("-C", str(repo), "doctor", ok=False).stdout
    assert "--force wraps the existing post-applypatch hook" in doctor, doctor
    run_cli("-C", str(repo), "hook", "git-post", "install", "--force")
    assert all(git_hooks.status(name, repo).installed for name in git_hooks.SYNC_HOOKS)
    assert "the auto-sync hook is not in" not in run_cli("-C", str(repo), "doctor", ok=False).stdout


# --- hooks other tools moved, wrapped or re-run ----------------------------------------------------------

PRE_COMMIT = Path(sys.executable).parent / "pre-commit"


def _paste(command: str) -> subprocess.CompletedProcess[str]:
    """A doctor fix run as a user pastes it (this Python's nexusmem first on PATH)."""
    env = {**os.environ, "PATH": os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", "")}
    return subprocess.run(command, shell=True, env=env, capture_output=True, text=True, check=False)


def _problems(repo: Path) -> list[dict[str, str]]:
    report = json.loads(run_cli("-C", str(repo), "doctor", "--json", ok=False).stdout)
    return [c for c in report["checks"] if not c["ok"]]


def test_a_wrapped_hook_that_is_not_executable_does_not_fail_every_commit(repo: Path) -> None:
    """`--force` moved aside a Python hook git ignored (mode 0644) and the wrapper exec'd it anyway: every
    commit failed with `Permission denied`, and doctor said ok."""
    path = repo / ".git" / "hooks" / "pre-commit"
    original = b'#!/usr/bin/env python3\nopen("foreign.log", "a").write("py\\n")\n'
    path.write_bytes(original)
    path.chmod(0o644)
    assert git_commit(repo, "before").returncode == 0  # git ignores a hook that is not executable
    done = run_cli("-C", str(repo), "hook", "git", "install", "--force")
    legacy = path.with_name("pre-commit" + git_hooks.LEGACY_SUFFIX)
    assert f"{legacy} is not executable" in done.stderr
    after = git_commit(repo, "after")
    assert after.returncode == 0, after.stderr
    assert not (repo / "foreign.log").exists()  # skipped, as git skipped it
    # As before the install: said, and no problem (its fix would turn on a hook the user turned off).
    report = json.loads(run_cli("-C", str(repo), "doctor", "--json", ok=False).stdout)
    said = [c for c in report["checks"] if str(legacy) in c["detail"]]
    assert (
        said
        and said[0]["ok"]
        and "is not executable, so it does not run, as git did not" in said[0]["detail"]
    )
    assert not [c for c in _problems(repo) if c["area"] == "git"]
    legacy.chmod(0o755)  # the user turns it on
    assert git_commit(repo, "runs it now").returncode == 0
    assert (repo / "foreign.log").read_text(encoding="utf-8") == "py\n"
    assert not [c for c in _problems(repo) if c["area"] == "git"]
    # A wrapper an older install wrote (exec without the check), with the moved hook not executable:
    # doctor calls it broken, and the install it names repairs it.
    legacy.chmod(0o644)
    _older_wrapper(path, f"exec '{legacy}' \"$@\"")
    assert git_commit(repo, "old wrapper").returncode != 0  # what the user saw
    broken = [c for c in _problems(repo) if c["area"] == "git"]
    assert broken and "which is not executable: the hook fails every time" in broken[0]["detail"], broken
    assert broken[0]["fix"] == "nexusmem hook git install"
    assert "Repaired" in run_cli("-C", str(repo), "hook", "git", "install").stdout
    assert git_commit(repo, "repaired").returncode == 0
    run_cli("-C", str(repo), "hook", "git", "remove")
    assert path.read_bytes() == original and (path.stat().st_mode & 0o777) == 0o644 and not legacy.exists()


def _older_wrapper(path: Path, line: str) -> None:
    """Make the wrapper in hook file PATH run the moved-aside hook by LINE, as an older release wrote it."""
    text = path.read_text(encoding="utf-8")
    found = re.search(r"^case \$0 in .*\n.*\nif \[ -x .*\n", text, re.M)
    assert found is not None, text
    path.write_text(text[: found.start()] + line + "\n" + text[found.end() :], encoding="utf-8")


def test_a_wrapped_hook_still_runs_after_the_repository_is_moved(tmp_path: Path) -> None:
    """The wrapper `--force` writes named the moved-aside hook by its absolute path: after `mv repo repo2` a
    commit the user's own hook refuses went through (rc 0, nothing printed), and `hook git status` and
    doctor said all was well. The wrapper finds it beside the hook file: after a move, from a linked worktree,
    in a core.hooksPath folder; an older wrapper whose path is gone is named, and repaired by install."""
    repo = init_repo(tmp_path / "repo")
    commit(repo, "init", {"a.txt": "a\n"})
    sync.sync(repo)
    hooks = repo / ".git" / "hooks"
    refuse = b'#!/usr/bin/env python3\nimport sys\nprint("my lint: refusing", file=sys.stderr)\nsys.exit(1)\n'
    (hooks / "pre-commit").write_bytes(refuse)
    (hooks / "pre-commit").chmod(0o755)
    log = b'#!/usr/bin/env python3\nopen("post.log", "a").write("post\\n")\n'
    (hooks / "post-commit").write_bytes(log)
    (hooks / "post-commit").chmod(0o755)
    run_cli("-C", str(repo), "hook", "git", "install", "--force")
    run_cli("-C", str(repo), "hook", "git-post", "install", "--force")
    assert "my lint: refusing" in git_commit(repo, "before the move").stderr

    moved = tmp_path / "repo2"
    os.rename(repo, moved)
    refused = git_commit(moved, "after the move")
    assert refused.returncode == 1 and "my lint: refusing" in refused.stderr, refused.stderr
    worktree = tmp_path / "wt"
    git(moved, "worktree", "add", "-q", "-b", "side", str(worktree))
    assert "my lint: refusing" in git_commit(worktree, "from a worktree").stderr
    status = run_cli("-C", str(moved), "hook", "git", "status")
    assert "installed (wrapping)" in status.stdout and "Warning" not in status.stderr, status.output
    assert not [c for c in _problems(moved) if c["area"] == "git"]
    (moved / ".git" / "hooks" / "pre-commit").chmod(0o644)  # let a commit through to run the post-commit
    assert git_commit(moved, "runs post-commit").returncode == 0
    assert (moved / "post.log").read_text(encoding="utf-8") == "post\n"
    (moved / ".git" / "hooks" / "pre-commit").chmod(0o755)

    # A wrapper an older release wrote, naming the path the hook had before the move: it skipped the hook.
    hook = moved / ".git" / "hooks" / "pre-commit"
    old = repo / ".git" / "hooks" / "pre-commit.nexusmem-legacy"
    _older_wrapper(hook, f"if [ -x '{old}' ]; then exec '{old}' \"$@\"; fi")
    assert git_commit(moved, "older wrapper").returncode == 0  # what the user saw
    status = run_cli("-C", str(moved), "hook", "git", "status")
    assert "pre-commit: broken (wrapping)" in status.stdout, status.output
    assert f"from {old}, which is gone" in status.stderr and "fix: nexusmem hook git install" in status.stderr
    broken = [c for c in _problems(moved) if c["area"] == "git"]
    assert broken and f"{old}, which is gone" in broken[0]["detail"], broken
    assert broken[0]["fix"] == "nexusmem hook git install"
    assert "Repaired" in run_cli("-C", str(moved), "hook", "git", "install").stdout
    assert (
        str(tmp_path)
        not in hook.read_text(encoding="utf-8").split("nexusmem_pinned=", 1)[1].split("\n", 1)[1]
    )
    assert "my lint: refusing" in git_commit(moved, "repaired").stderr

    # The same hook in a core.hooksPath folder, which is then moved with the repository.
    shared = moved / ".githooks"
    shared.mkdir()
    (shared / "pre-commit").write_bytes(refuse)
    (shared / "pre-commit").chmod(0o755)
    git(moved, "config", "core.hooksPath", ".githooks")
    run_cli("-C", str(moved), "hook", "git", "install", "--force")
    again = tmp_path / "repo3"
    os.rename(moved, again)
    assert "my lint: refusing" in git_commit(again, "hooksPath, moved").stderr

    # The moved-aside hook deleted: only precheck runs, and status and doctor say so.
    (again / ".githooks" / "pre-commit.nexusmem-legacy").unlink()
    assert git_commit(again, "no lint").returncode == 0
    status = run_cli("-C", str(again), "hook", "git", "status")
    assert (
        "pre-commit.nexusmem-legacy (the hook it wraps, which `--force` moved aside) is missing"
        in status.stderr
    )
    missing = [c for c in _problems(again) if "pre-commit.nexusmem-legacy" in c["detail"]]
    assert missing and "is missing: only NexusMem's part runs" in missing[0]["detail"], missing
    assert missing[0]["fix"].endswith("nexusmem hook git remove && nexusmem hook git install")


def _framework_config(repo: Path) -> None:
    config = "repos:\n  - repo: local\n    hooks:\n      - id: say\n        name: say\n"
    config += "        entry: 'true'\n        language: system\n"
    commit(repo, "chore: pre-commit", {".pre-commit-config.yaml": config})


def _pre_commit(repo: Path, *args: str) -> None:
    done = subprocess.run([str(PRE_COMMIT), *args], cwd=repo, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout + done.stderr


def _framework_memory(repo: Path) -> None:
    """REPO with a memory holding a failure of tests/test_cache.py, and a .pre-commit-config.yaml running
    nexusmem's hooks (the test is skipped without the pre-commit framework)."""
    if not PRE_COMMIT.exists():
        pytest.skip("pre-commit is not installed in this environment")
    synced(repo)
    plant_failure(repo)
    sync.sync(repo)
    _framework_config(repo)


def test_a_hook_the_pre_commit_framework_moved_aside_is_seen_and_uninstalled(repo: Path) -> None:
    """`pre-commit install` after ours moves our hook to pre-commit.legacy and runs it on every commit:
    status said "not installed", doctor nothing, and uninstall left precheck running."""
    _framework_memory(repo)
    run_cli("-C", str(repo), "hook", "git", "install")
    _pre_commit(repo, "install")
    hooks = repo / ".git" / "hooks"
    moved = hooks / "pre-commit.legacy"
    assert git_hooks.HOOK_ID in moved.read_text(encoding="utf-8")
    (repo / "src/cache.py").write_text("x = 2\n", encoding="utf-8")
    git(repo, "add", "src/cache.py")
    warned = git_commit(repo, "change")
    assert "src/cache.py: `pytest tests/test_cache.py` failed" in warned.stderr, warned.stderr
    status = run_cli("-C", str(repo), "hook", "git", "status").stdout
    assert f"pre-commit: installed (our own file, run by the pre-commit framework's hook): {moved}" in status
    doctor = run_cli("-C", str(repo), "doctor", ok=False).stdout
    assert "which the pre-commit framework's hook runs" in doctor, doctor
    out = run_cli("-C", str(repo), "uninstall").stdout
    assert "No NexusMem hook is installed" not in out and str(moved) in out, out
    assert not moved.exists()  # it was only our file
    (repo / "src/cache.py").write_text("x = 3\n", encoding="utf-8")
    git(repo, "add", "src/cache.py")
    quiet = git_commit(repo, "change again")
    assert quiet.returncode == 0 and "nexusmem" not in quiet.stderr, quiet.stderr  # the framework still runs
    assert "not installed" in run_cli("-C", str(repo), "hook", "git", "status").stdout


def test_precheck_deleted_by_pre_commit_install_f_is_named_with_its_fix(repo: Path) -> None:
    """`pre-commit install -f` deletes pre-commit.legacy, where the framework had moved our hook: precheck
    silently stopped, and `hook git status`, `status` and doctor said nothing. They say it is gone, and
    doctor's fix puts it back; a block taken out with `hook git remove` is no news."""
    _framework_memory(repo)
    run_cli("-C", str(repo), "hook", "git", "install")
    _pre_commit(repo, "install")
    _pre_commit(repo, "install", "-f")
    assert not (repo / ".git" / "hooks" / "pre-commit.legacy").exists()
    (repo / "src/cache.py").write_text("x = 2\n", encoding="utf-8")
    git(repo, "add", "src/cache.py")
    quiet = git_commit(repo, "change")
    assert quiet.returncode == 0 and "nexusmem" not in quiet.stderr, quiet.stderr  # what the user saw
    hook_status = run_cli("-C", str(repo), "hook", "git", "status")
    assert "`pre-commit install -f` deletes pre-commit.legacy" in hook_status.stderr, hook_status.output
    assert "precheck no longer runs" in run_cli("-C", str(repo), "status").stdout
    gone = [c for c in _problems(repo) if "pre-commit block installed here is gone" in c["detail"]]
    assert len(gone) == 1 and gone[0]["fix"] == "nexusmem hook git install", _problems(repo)
    assert _paste(gone[0]["fix"] + f" -C {repo}").returncode == 0
    (repo / "src/cache.py").write_text("x = 3\n", encoding="utf-8")
    git(repo, "add", "src/cache.py")
    warned = git_commit(repo, "change again")
    assert "src/cache.py: `pytest tests/test_cache.py` failed" in warned.stderr, warned.stderr
    assert not [c for c in _problems(repo) if "is gone" in c["detail"]]
    run_cli("-C", str(repo), "hook", "git", "remove")
    assert not [c for c in _problems(repo) if "is gone" in c["detail"]]
    assert "is gone" not in run_cli("-C", str(repo), "hook", "git", "status").output


def test_installed_after_the_framework_the_hook_survives_its_next_install(repo: Path) -> None:
    """`pre-commit install`, then ours: the block went into the framework's own file, which the next
    `pre-commit install` (a Makefile's setup target) overwrote: precheck stopped, and status and doctor said
    nothing. Ours goes to pre-commit.legacy, which the framework's hook runs first."""
    _framework_memory(repo)
    _pre_commit(repo, "install")
    hooks = repo / ".git" / "hooks"
    framework = (hooks / "pre-commit").read_bytes()
    out = run_cli("-C", str(repo), "hook", "git", "install").stdout
    assert f"in {hooks / 'pre-commit.legacy'}" in out and "runs pre-commit.legacy first" in out, out
    assert (hooks / "pre-commit").read_bytes() == framework  # the framework's own file is left alone
    _pre_commit(repo, "install")  # again: it rewrites its own file
    (repo / "src/cache.py").write_text("x = 2\n", encoding="utf-8")
    git(repo, "add", "src/cache.py")
    warned = git_commit(repo, "change")
    assert "src/cache.py: `pytest tests/test_cache.py` failed" in warned.stderr, warned.stderr
    assert (
        "installed (our own file, run by the pre-commit framework's hook)"
        in run_cli("-C", str(repo), "hook", "git", "status").stdout
    )
    run_cli("-C", str(repo), "hook", "git", "remove")
    assert not (hooks / "pre-commit.legacy").exists() and (hooks / "pre-commit").read_bytes() == framework


def test_a_block_an_older_release_chained_into_the_frameworks_file_is_found_and_moved(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A re-check: once install wrote into pre-commit.legacy, a --strict block an older release had chained
    into the framework's own file was found by nothing (status, remove, uninstall, doctor) and still
    refused commits; install then added a second block."""
    if not PRE_COMMIT.exists():
        pytest.skip("pre-commit is not installed in this environment")
    _framework_config(repo)
    _pre_commit(repo, "install")
    hook = repo / ".git" / "hooks" / "pre-commit"
    framework = hook.read_bytes()
    with monkeypatch.context() as older:  # the older release: it chained into any shell hook
        older.setattr(git_hooks, "_FRAMEWORK_MARK", b"\0 a mark no hook holds")
        git_hooks.install("pre-commit", repo, strict=True)
    assert git_hooks.HOOK_ID in hook.read_text(encoding="utf-8")
    assert git_hooks.status("pre-commit", repo).installed
    moved = run_cli("-C", str(repo), "hook", "git", "install", "--strict")
    assert hook.read_bytes() == framework, moved.output  # taken out of the framework's file, byte for byte
    legacy = hook.with_name("pre-commit.legacy")
    assert legacy.read_text(encoding="utf-8").count(git_hooks.HOOK_ID) == 1
    run_cli("-C", str(repo), "uninstall")
    assert hook.read_bytes() == framework and not legacy.exists()


def test_a_chained_hook_the_framework_moved_aside_is_restored_byte_for_byte(repo: Path) -> None:
    if not PRE_COMMIT.exists():
        pytest.skip("pre-commit is not installed in this environment")
    _framework_config(repo)
    hooks = repo / ".git" / "hooks"
    original = b"#!/bin/sh\necho theirs >> foreign.log\n"
    (hooks / "pre-commit").write_bytes(original)
    (hooks / "pre-commit").chmod(0o755)
    run_cli("-C", str(repo), "hook", "git", "install")
    _pre_commit(repo, "install")
    assert (
        "run by the pre-commit framework's hook" in run_cli("-C", str(repo), "hook", "git", "status").stdout
    )
    assert "Removed the precheck hook from" in run_cli("-C", str(repo), "hook", "git", "remove").stdout
    assert (hooks / "pre-commit.legacy").read_bytes() == original
    _pre_commit(repo, "uninstall")  # the framework puts it back where it was
    assert (hooks / "pre-commit").read_bytes() == original


def test_remove_on_the_frameworks_route_names_no_hook_file_that_does_not_exist(repo: Path) -> None:
    """With the pre-commit framework's post-commit and post-merge hooks, `hook git-post remove` printed "No
    auto-sync hook in …/post-commit.legacy" and the same of post-merge.legacy and post-applypatch, files
    that never existed. It names the hooks it took the block out of and the files that hold none, and says
    in one line that there was nothing to remove."""
    if not PRE_COMMIT.exists():
        pytest.skip("pre-commit is not installed in this environment")
    _framework_config(repo)
    _pre_commit(repo, "install", "--hook-type", "post-commit", "--hook-type", "post-merge")
    hooks = repo / ".git" / "hooks"
    installed = run_cli("-C", str(repo), "hook", "git-post", "install").stdout
    assert str(hooks / "post-commit.legacy") in installed, installed
    (hooks / "post-merge.legacy").unlink()
    removed = run_cli("-C", str(repo), "hook", "git-post", "remove").stdout
    assert removed.splitlines() == [
        f"Removed the auto-sync hook from {hooks / 'post-commit.legacy'}.",
        f"Removed the auto-sync hook from {hooks / 'post-applypatch'}.",
    ], removed
    again = run_cli("-C", str(repo), "hook", "git-post", "remove").stdout
    assert again.splitlines() == [f"No auto-sync hook in {hooks}: nothing to remove."], again
    (hooks / "post-merge.legacy").write_text("#!/bin/sh\necho mine\n", encoding="utf-8")
    mine = run_cli("-C", str(repo), "hook", "git-post", "remove").stdout
    assert mine.splitlines() == [f"No auto-sync hook in {hooks / 'post-merge.legacy'}."], mine


def test_hooks_left_behind_by_a_new_core_hooks_path_are_named_and_removed(repo: Path) -> None:
    """Hooks installed in .git/hooks, then core.hooksPath set (husky): they silently stopped running, doctor
    said nothing, and uninstall said "No NexusMem hook is installed here", leaving all four blocks."""
    run_cli("-C", str(repo), "hook", "git", "install")
    run_cli("-C", str(repo), "hook", "git-post", "install")
    (repo / ".husky").mkdir()
    git(repo, "config", "core.hooksPath", ".husky")
    own = repo / ".git" / "hooks"
    problems = [c for c in _problems(repo) if "has the NexusMem block, but core.hooksPath" in c["detail"]]
    assert len(problems) == 4, problems
    assert str(own / "pre-commit") in problems[0]["detail"]
    assert problems[0]["fix"] == "nexusmem hook git install"
    assert "which git does not run" in run_cli("-C", str(repo), "hook", "git", "status").stderr
    assert _paste(problems[0]["fix"] + f" -C {repo}").returncode == 0  # installs where git looks now
    assert (repo / ".husky" / "pre-commit").exists()
    left = [c["detail"] for c in _problems(repo) if "has the NexusMem block" in c["detail"]]
    assert not any("pre-commit has" in d for d in left) and len(left) == 3, left
    removed = run_cli("-C", str(repo), "hook", "git-post", "remove").stdout
    assert f"Removed the auto-sync hook from {own / 'post-merge'}" in removed
    out = run_cli("-C", str(repo), "uninstall").stdout
    assert "No NexusMem hook is installed" not in out, out
    assert not (repo / ".husky" / "pre-commit").exists()
    assert not [p for p in own.iterdir() if git_hooks.HOOK_ID.encode() in p.read_bytes()]


def test_the_fix_for_blocks_left_behind_by_a_user_wide_hooks_path_says_it_installs_user_wide(
    repo: Path, tmp_path: Path
) -> None:
    """Hooks installed in .git/hooks, then `git config --global core.hooksPath`: doctor's fix `nexusmem hook
    git install` wrote into the folder every repository uses, without a word. The fix says so (and still
    pastes), and `hook git status` too; a core.hooksPath of the repository's own says nothing of the kind."""
    synced(repo)
    run_cli("-C", str(repo), "hook", "git", "install")
    shared = tmp_path / "global-hooks"
    shared.mkdir()
    git(repo, "config", "--global", "core.hooksPath", str(shared))
    left = [c for c in _problems(repo) if "has the NexusMem block, but core.hooksPath" in c["detail"]]
    assert len(left) == 1, left
    fix = left[0]["fix"]
    assert fix.startswith("nexusmem hook git install  # ") and f"writes into {shared}" in fix, fix
    assert "every repository" in fix and os.environ["GIT_CONFIG_GLOBAL"] in fix, fix
    said = run_cli("-C", str(repo), "hook", "git", "status").stderr
    assert "core.hooksPath is set user-wide" in said and "not only this one" in said, said
    assert _paste(f"cd {repo} && {fix}").returncode == 0  # a pasted fix runs: the comment is a comment
    assert (shared / "pre-commit").exists()
    run_cli("-C", str(repo), "hook", "git", "remove")
    git(repo, "config", "--global", "--unset", "core.hooksPath")
    run_cli("-C", str(repo), "hook", "git", "install")
    (repo / ".githooks").mkdir()
    git(repo, "config", "core.hooksPath", ".githooks")  # the repository's own setting: nothing to add
    left = [c for c in _problems(repo) if "has the NexusMem block, but core.hooksPath" in c["detail"]]
    assert [c["fix"] for c in left] == ["nexusmem hook git install"], left


HUSKY_SH = """#!/usr/bin/env sh
if [ -z "$husky_skip_init" ]; then
  debug () {
    if [ "$HUSKY_DEBUG" = "1" ]; then
      echo "husky (debug) - $1"
    fi
  }

  readonly hook_name="$(basename -- "$0")"
  debug "starting $hook_name..."

  if [ "$HUSKY" = "0" ]; then
    debug "HUSKY env variable is set to 0, skipping hook"
    exit 0
  fi

  readonly husky_skip_init=1
  export husky_skip_init
  sh -e "$0" "$@"
  exitCode="$?"

  if [ $exitCode != 0 ]; then
    echo "husky - $hook_name hook exited with code $exitCode (error)"
  fi

  exit $exitCode
fi
"""


def test_installing_into_husky_v9s_generated_hook_says_it_will_not_last(repo: Path) -> None:
    """husky v9 (core.hooksPath=.husky/_): its generated hook is written again at every `npm install`, and its
    `h` runs .husky/pre-commit and exits; the block went in silently and vanished at the next install."""
    (repo / ".husky" / "_").mkdir(parents=True)
    generated = repo / ".husky" / "_" / "pre-commit"
    generated.write_text('#!/usr/bin/env sh\n. "${0%/*}/h"\n', encoding="utf-8")
    generated.chmod(0o755)
    git(repo, "config", "core.hooksPath", ".husky/_")
    done = run_cli("-C", str(repo), "hook", "git", "install")
    assert (
        f"{generated} is husky's generated hook: husky writes it again at every `npm install`" in done.stderr
    )
    assert str(repo / ".husky" / "pre-commit") in done.stderr


def test_a_husky_v8_hook_runs_precheck_once_and_husky_0_skips_it(repo: Path) -> None:
    """husky.sh re-runs the hook file under `sh -e` and exits: a block above its line ran twice per commit
    (every warning printed twice), and HUSKY=0, husky's way to skip the hooks, did not skip it."""
    original = b'#!/usr/bin/env sh\n. "$(dirname -- "$0")/_/husky.sh"\n\necho HUSKY-USER-HOOK >&2\n'
    commit(repo, "chore: husky", {".husky/_/husky.sh": HUSKY_SH, ".husky/pre-commit": original.decode()})
    hook = repo / ".husky" / "pre-commit"
    hook.chmod(0o755)
    git(repo, "config", "core.hooksPath", ".husky")
    synced(repo)
    plant_failure(repo)
    sync.sync(repo)
    run_cli("-C", str(repo), "hook", "git", "install")
    warning = "src/cache.py: `pytest tests/test_cache.py` failed"

    def change(value: str, **env: str) -> str:
        (repo / "src/cache.py").write_text(f"x = {value}\n", encoding="utf-8")
        git(repo, "add", "src/cache.py")
        done = subprocess.run(
            ["git", "commit", "-q", "-m", value],
            cwd=repo,
            capture_output=True,
            text=True,
            env={**os.environ, **env},
            check=False,
        )
        assert done.returncode == 0, done.stderr
        return done.stderr

    said = change("2")
    assert said.count(warning) == 1 and said.count("HUSKY-USER-HOOK") == 1, said
    skipped = change("3", HUSKY="0")
    assert warning not in skipped and "HUSKY-USER-HOOK" not in skipped, skipped
    run_cli("-C", str(repo), "hook", "git", "remove")
    assert hook.read_bytes() == original
    # A block an older install put above husky's line is moved below it by the next install.
    hook.write_bytes(
        b"#!/usr/bin/env sh\n" + git_hooks.render_block("pre-commit", ()) + original.split(b"\n", 1)[1]
    )
    assert "Updated" in run_cli("-C", str(repo), "hook", "git", "install").stdout
    assert change("4").count(warning) == 1
    run_cli("-C", str(repo), "hook", "git", "remove")
    assert hook.read_bytes() == original


def test_a_hook_saved_with_windows_line_endings_is_named_with_a_fix_that_works(repo: Path) -> None:
    """`#!/bin/sh\\r`: git cannot run it (every commit fails `cannot run ...: No such file or directory`),
    and after install, doctor said ok."""
    path = repo / ".git" / "hooks" / "pre-commit"
    path.write_bytes(b"#!/bin/sh\r\necho theirs >> foreign.log\r\n")
    path.chmod(0o755)
    assert git_commit(repo, "before").returncode != 0
    done = run_cli("-C", str(repo), "hook", "git", "install")
    assert "Windows line endings" in done.stderr
    problem = [c for c in _problems(repo) if "Windows line endings" in c["detail"]]
    assert problem and "every commit fails" in problem[0]["detail"], problem
    assert _paste(problem[0]["fix"]).returncode == 0
    assert (path.stat().st_mode & 0o777) == 0o755
    after = git_commit(repo, "after")
    assert after.returncode == 0, after.stderr
    assert (repo / "foreign.log").read_text(encoding="utf-8") == "theirs\n"
    assert not [c for c in _problems(repo) if c["area"] == "git"]


def test_the_precheck_install_does_not_ask_for_the_auto_sync_hook_it_has(repo: Path) -> None:
    run_cli("-C", str(repo), "hook", "git-post", "install")
    said = run_cli("-C", str(repo), "hook", "git", "install").stdout
    assert "nexusmem hook git-post install" not in said and "the auto-sync hook builds it" in said, said


def test_a_user_wide_hooks_folder_removed_from_one_repository_is_no_problem_in_another(
    repo: Path, tmp_path: Path
) -> None:
    """`git config --global core.hooksPath`: `hook git install` in repository C, `hook git remove` in D
    (the same folder): in C, `status` and doctor (exit 1, PROBLEM) said the block "was deleted or rewritten
    by something other than `nexusmem hook ... remove`", as each repository kept its own record of a folder
    they share. The record of a folder outside the repository is kept with that folder (in NexusMem's home):
    a remove from any repository clears it; a block another tool deleted is still named in every one."""
    shared = tmp_path / "global-hooks"
    shared.mkdir()
    git(repo, "config", "--global", "core.hooksPath", str(shared))
    other = init_repo(tmp_path / "D")
    commit(other, "init", {"a.txt": "a\n"})
    synced(repo)
    synced(other)
    run_cli("-C", str(repo), "hook", "git", "install")
    assert (shared / "pre-commit").exists()
    run_cli("-C", str(other), "hook", "git", "remove")
    assert not (shared / "pre-commit").exists()
    assert not [c for c in _problems(repo) if "is gone" in c["detail"]], _problems(repo)
    assert "is gone" not in run_cli("-C", str(repo), "status").stdout
    assert "is gone" not in run_cli("-C", str(repo), "hook", "git", "status").output
    assert not list((repo / ".git").glob("nexusmem-hooks"))  # nothing of the shared folder's in C's .git

    # Installed from D, deleted by hand: both repositories name it, and the fix puts it back for both.
    run_cli("-C", str(other), "hook", "git", "install")
    records = list((Path(os.environ["NEXUSMEM_HOME"]) / "hook-records").iterdir())
    assert len(records) == 1 and records[0].stat().st_mode & 0o777 == 0o600, records
    (shared / "pre-commit").unlink()
    for where in (repo, other):
        gone = [c for c in _problems(where) if "pre-commit block installed here is gone" in c["detail"]]
        assert len(gone) == 1, _problems(where)
        assert "precheck no longer runs" in run_cli("-C", str(where), "status").stdout
    run_cli("-C", str(repo), "hook", "git", "install")
    assert not [c for c in _problems(other) if "is gone" in c["detail"]]
    git(repo, "config", "--global", "--unset", "core.hooksPath")


def test_a_user_wide_hooks_folder_whose_name_holds_a_newline_is_recorded_on_one_line(
    repo: Path, tmp_path: Path
) -> None:
    """A user-wide core.hooksPath named `hooks<newline>pre-commit`: `hook git-post install` wrote its record
    in NexusMem's home with the folder raw on the first line, so the record read as naming the pre-commit
    hook too, and `status` said a pre-commit block installed there "is gone" though none ever was. The
    folder is written on one line, its newline spelled `\\n`; a record an older NexusMem wrote raw still
    reads as it did."""
    shared = tmp_path / "hooks\npre-commit"
    shared.mkdir()
    git(repo, "config", "--global", "core.hooksPath", str(shared))
    try:
        synced(repo)
        run_cli("-C", str(repo), "hook", "git-post", "install")
        assert (shared / "post-commit").exists() and not (shared / "pre-commit").exists()
        (record,) = (Path(os.environ["NEXUSMEM_HOME"]) / "hook-records").iterdir()
        head, *names = record.read_text(encoding="utf-8").splitlines()
        assert head == f"# {tmp_path}/hooks\\npre-commit" and "pre-commit" not in names, record.read_text()
        assert "pre-commit" not in git_hooks.recorded(repo)
        assert "is gone" not in run_cli("-C", str(repo), "status").stdout
        # A record written raw by an older NexusMem: its names are read past the folder's two lines.
        record.write_text(f"# {shared}\n" + "".join(f"{n}\n" for n in names), encoding="utf-8")
        assert git_hooks.recorded(repo) == [n for n in git_hooks.HOOK_NAMES if n in names] != []
        (shared / "post-commit").unlink()  # deleted by hand: named, from the old record too
        assert "post-commit block installed here is gone" in run_cli("-C", str(repo), "status").stdout
    finally:
        git(repo, "config", "--global", "--unset", "core.hooksPath")


@pytest.mark.parametrize("special", ["fifo", "dev-zero"])
def test_a_hooks_record_that_is_no_regular_file_never_hangs_a_command(repo: Path, special: str) -> None:
    """.git/nexusmem-hooks made a FIFO hung doctor, status and `hook git status|install|remove` for ever; a
    link to /dev/zero made `status` an internal error (MemoryError, exit 3). Each says it in one line, with
    its fix, and install writes a record again."""
    synced(repo)
    run_cli("-C", str(repo), "hook", "git", "install")
    record = repo / ".git" / "nexusmem-hooks"
    record.unlink()
    if special == "fifo":
        os.mkfifo(record)
    else:
        record.symlink_to("/dev/zero")

    def nexusmem(*args: str) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "-m", "nexusmem", "-C", str(repo), *args]
        return subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)

    said = f"{record}: cannot read: not a regular file (NexusMem's record of the git hooks it installed"
    status = nexusmem("status")
    assert status.returncode == 0 and said in status.stdout, status
    doctor = nexusmem("doctor")
    assert doctor.returncode == 1 and said in doctor.stdout and f"fix: rm {record}" in doctor.stdout, doctor
    for verb in ("git", "git-post"):
        hook_status = nexusmem("hook", verb, "status")
        assert hook_status.returncode == 0 and hook_status.stderr.count(said) == 1, hook_status
    assert nexusmem("hook", "git", "remove").returncode == 0
    assert nexusmem("hook", "git", "install").returncode == 0
    assert record.is_file() and not record.is_symlink()
    assert record.read_text() == f"pre-commit\n@folder\tpre-commit\t{(repo / '.git' / 'hooks').resolve()}\n"
    assert said not in nexusmem("status").stdout


@pytest.mark.parametrize("special", ["fifo", "link-to-fifo", "dev-zero"])
def test_a_hook_that_is_no_regular_file_never_hangs_a_command(
    repo: Path, tmp_path: Path, special: str
) -> None:
    """`mkfifo .git/hooks/pre-commit` hung doctor and `hook git status|install|remove` for ever (each read
    the hook file whole, and a FIFO's read waits for a writer). Each now answers, and says what is there."""
    synced(repo)
    hook = repo / ".git" / "hooks" / "pre-commit"
    hook.parent.mkdir(parents=True, exist_ok=True)
    if special == "fifo":
        os.mkfifo(hook)
    elif special == "link-to-fifo":
        os.mkfifo(tmp_path / "pipe")
        hook.symlink_to(tmp_path / "pipe")
    else:
        hook.symlink_to("/dev/zero")

    def nexusmem(*args: str) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "-m", "nexusmem", "-C", str(repo), *args]
        return subprocess.run(command, capture_output=True, text=True, timeout=30, check=False)

    doctor = nexusmem("doctor")
    status = nexusmem("hook", "git", "status")
    assert status.returncode == 0 and "pre-commit: not installed" in status.stdout, status
    install = nexusmem("hook", "git", "install")
    assert install.returncode == 1, install
    assert nexusmem("hook", "git", "remove").returncode == 0
    assert nexusmem("hook", "git-post", "install").returncode == 0
    if special == "fifo":
        said = f"{hook} is a FIFO, not a hook file"
        assert said in doctor.stdout and f"fix: mv {hook} {hook}.not-a-hook" in doctor.stdout, doctor
        assert f"Warning: {said}; move it away" in status.stderr, status
        assert f"Error: {said}: move it away, then install again" in install.stderr, install
        hook.unlink()
        assert nexusmem("hook", "git", "install").returncode == 0
        assert git_hooks.status("pre-commit", repo).installed
    else:
        assert "is a symlink to another tool's hook" in install.stderr, install
