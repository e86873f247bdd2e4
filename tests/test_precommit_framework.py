"""The real pre-commit framework installing this repository's hooks from a clone of HEAD and running them on
real commits. The hooks are `language: script`: pre-commit builds no environment, and they run the user's own
`nexusmem` from PATH (here: the one next to this Python), or say in one line that there is none."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from nexusmem.paths import shell_log_path

from helpers import commit, git, run_cli

pytestmark = pytest.mark.slow

SOURCE = Path(__file__).resolve().parent.parent
PRE_COMMIT = Path(sys.executable).parent / "pre-commit"


@pytest.fixture(scope="module")
def hook_repo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, str, Path]]:
    """(clone of this repository's HEAD, its sha, a shared PRE_COMMIT_HOME)."""
    if not PRE_COMMIT.exists():
        pytest.skip("pre-commit is not installed in this environment")
    base = tmp_path_factory.mktemp("precommit")
    clone = base / "nexusmem-src"
    # A clone of HEAD: what pre-commit installs is exactly what is committed, not the working tree.
    subprocess.run(["git", "clone", "-q", str(SOURCE), str(clone)], check=True, env=_no_git_env())
    sha = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=clone, capture_output=True, text=True, check=True
    ).stdout.strip()
    # NEXUSMEM_TEST_PRE_COMMIT_HOME keeps the built hook environment between runs (minutes saved offline).
    cache = Path(os.environ.get("NEXUSMEM_TEST_PRE_COMMIT_HOME") or base / "cache")
    yield clone, sha, cache
    shutil.rmtree(base, ignore_errors=True)


def _no_git_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("GIT_") or k.startswith("GIT_CONFIG")}


def _config(source: Path, sha: str, *hook_ids: str) -> str:
    hooks = "".join(f"      - id: {h}\n" for h in hook_ids)
    return f"repos:\n  - repo: {source}\n    rev: {sha}\n    hooks:\n{hooks}"


USER_PATH = f"{Path(sys.executable).parent}:/usr/bin:/bin"  # the user's nexusmem, git and sh
BARE_PATH = "/usr/bin:/bin"  # no nexusmem anywhere


def _run(
    repo: Path, cache: Path, *args: str, path: str = USER_PATH, extra: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PRE_COMMIT_HOME=str(cache), PRE_COMMIT_COLOR="never", PATH=path, **(extra or {}))
    return subprocess.run(
        list(args), cwd=repo, capture_output=True, text=True, env=env, check=False, timeout=300
    )


def _plant_failure(repo: Path, command: str = "pytest tests/test_cache.py", ago_ms: int = 60_000) -> None:
    path = shell_log_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    line = {
        "ts": int(time.time() * 1000) - ago_ms,
        "cwd": str(repo),
        "exit": 1,
        "command": command,
    }
    with path.open("a", encoding="utf-8") as handle:
        handle.write(json.dumps({**line, "shell": "bash", "session": "s", "v": 1}) + "\n")


@pytest.mark.slow
def test_framework_runs_precheck_advisory_then_strict_then_post_commit_sync(
    repo: Path, hook_repo: tuple[Path, str, Path]
) -> None:
    source, sha, cache = hook_repo
    config = repo / ".pre-commit-config.yaml"
    config.write_text(_config(source, sha, "nexusmem-precheck", "nexusmem-sync"), encoding="utf-8")
    commit(repo, "feat: cache", {"src/cache.py": "x = 1\n", "tests/test_cache.py": "def test(): pass\n"})
    installed = _run(
        repo, cache, str(PRE_COMMIT), "install", "--hook-type", "pre-commit", "--hook-type", "post-commit"
    )
    assert installed.returncode == 0, installed.stderr + installed.stdout
    # Installed as the instructions said before nexusmem-sync ran at post-merge: doctor says what is missing.
    doctor = run_cli("-C", str(repo), "doctor", ok=False).stdout
    assert "pre-commit is not installed for post-merge" in doctor, doctor
    assert "fix: pre-commit install --hook-type post-merge" in doctor
    again = _run(repo, cache, str(PRE_COMMIT), "install", "--hook-type", "post-merge")
    assert again.returncode == 0, again.stderr + again.stdout
    assert "pre-commit is not installed for" not in run_cli("-C", str(repo), "doctor", ok=False).stdout
    built = _run(repo, cache, str(PRE_COMMIT), "install-hooks")
    assert built.returncode == 0, built.stderr + built.stdout
    assert not list(cache.glob("repo*/py_env-*")), "the framework route must not build a Python environment"
    hook_script = Path(sys.executable).parent / "nexusmem"  # the user's own install, as the hooks run it
    _plant_failure(repo)
    subprocess.run([str(hook_script), "sync", "-q"], cwd=repo, env=dict(os.environ), check=True)

    # Advisory: the warning is shown and the commit goes through.
    (repo / "src/cache.py").write_text("x = 2\n", encoding="utf-8")
    git(repo, "add", "src/cache.py")
    advisory = _run(repo, cache, "git", "commit", "-m", "change cache")
    output = advisory.stdout + advisory.stderr
    assert advisory.returncode == 0, output
    assert "src/cache.py: `pytest tests/test_cache.py` failed (exit 1)" in output
    assert "nexusmem precheck....." in output and "(advisory only)" in output, output

    # The post-commit nexusmem-sync hook brought the new commit into the memory, in the background.
    # Polled through the hooks' own nexusmem: this process's (working-tree) code could migrate the database.
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        info = subprocess.run(
            [str(hook_script), "status", "--json"],
            cwd=repo,
            capture_output=True,
            text=True,
            env=dict(os.environ),
        )
        if '"git_commit": 2' in info.stdout:
            break
        time.sleep(0.3)
    else:
        log = repo / ".nexusmem" / "auto-sync.log"
        raise AssertionError(
            f"post-commit sync never ran: {info.stdout} {log.read_text() if log.exists() else ''}"
        )

    # Strict: a change to a file with a failure nothing has fixed yet is refused. (The post-commit sync
    # linked the first failure to the commit that followed it, so it counts as resolved now.)
    _plant_failure(repo, "mypy src/cache.py", ago_ms=1000)
    subprocess.run([str(hook_script), "sync", "-q"], cwd=repo, env=dict(os.environ), check=True)
    config.write_text(_config(source, sha, "nexusmem-precheck-strict"), encoding="utf-8")
    (repo / "src/cache.py").write_text("x = 3\n", encoding="utf-8")
    git(repo, "add", "src/cache.py", ".pre-commit-config.yaml")
    strict = _run(repo, cache, "git", "commit", "-m", "change cache again")
    assert strict.returncode != 0
    shown = strict.stdout + strict.stderr
    assert "nexusmem precheck (strict)" in shown and "Failed" in shown
    assert "src/cache.py: `mypy src/cache.py` failed (exit 1)" in shown


def test_advisory_hook_checks_a_staged_file_named_like_its_option_and_never_refuses(
    repo: Path, hook_repo: tuple[Path, str, Path]
) -> None:
    """The advisory nexusmem-precheck ("never fails") refused a commit that staged a file named `--strict`:
    the framework puts the staged files right after the hook's entry, and the hook took the first one for its
    --strict option ("commit refused (--strict)"), leaving that file unchecked."""
    source, sha, cache = hook_repo
    config = _config(source, sha, "nexusmem-precheck")
    for i in range(4):  # both files: high churn (4 commits)
        commit(
            repo, f"step {i}", {"--strict": f"{i}\n", "pc.txt": f"{i}\n", ".pre-commit-config.yaml": config}
        )
    installed = _run(repo, cache, str(PRE_COMMIT), "install", "--hook-type", "pre-commit")
    assert installed.returncode == 0, installed.stderr + installed.stdout
    subprocess.run([str(Path(sys.executable).parent / "nexusmem"), "sync", "-q"], cwd=repo, check=True)
    (repo / "--strict").write_text("x\n", encoding="utf-8")
    (repo / "pc.txt").write_text("y\n", encoding="utf-8")
    git(repo, "add", "--", "./--strict", "pc.txt")
    done = _run(repo, cache, "git", "commit", "-m", "advisory only")
    shown = done.stdout + done.stderr
    assert done.returncode == 0, shown
    assert "refused" not in shown and "Passed" in shown, shown
    assert "nexusmem precheck: 2 warning(s) for 2 file(s)" in shown, shown
    for name in ("--strict", "pc.txt"):
        assert f"{name}: changed in 4 commits in the last 30 days (high churn)" in shown, shown


@pytest.mark.parametrize("file_named_strict", [False, True])
def test_advisory_hook_with_args_strict_refuses_the_commit(
    repo: Path, hook_repo: tuple[Path, str, Path], file_named_strict: bool
) -> None:
    """`args: [--strict]` on nexusmem-precheck made it strict until the entries ended their options with
    `--`: the framework runs entry + args + files (`hooks/pre-commit -- --strict pc.txt`), and the hook took
    that `--strict` for a file ("Passed", the high-churn file only warned about). It is the option again,
    also with a staged file named `--strict` (checked as a file, both refused)."""
    source, sha, cache = hook_repo
    config = (
        f"repos:\n  - repo: {source}\n    rev: {sha}\n    hooks:\n"
        "      - id: nexusmem-precheck\n        args: [--strict]\n"
    )
    files = {"pc.txt", "--strict"} if file_named_strict else {"pc.txt"}
    for i in range(4):  # high churn (4 commits)
        commit(repo, f"step {i}", {**{name: f"{i}\n" for name in files}, ".pre-commit-config.yaml": config})
    installed = _run(repo, cache, str(PRE_COMMIT), "install", "--hook-type", "pre-commit")
    assert installed.returncode == 0, installed.stderr + installed.stdout
    subprocess.run([str(Path(sys.executable).parent / "nexusmem"), "sync", "-q"], cwd=repo, check=True)
    for name in files:
        (repo / name).write_text("y\n", encoding="utf-8")
    git(repo, "add", "--", *(f"./{name}" for name in files))
    done = _run(repo, cache, "git", "commit", "-m", "strict")
    shown = done.stdout + done.stderr
    assert done.returncode != 0, shown
    assert "Failed" in shown and "commit refused (--strict)" in shown, shown
    # Titled as what it is: it refuses, so not "nexusmem precheck (advisory)".
    assert "(advisory" not in shown and "nexusmem precheck....." in shown, shown
    assert f"nexusmem precheck: {len(files)} warning(s) for {len(files)} file(s)" in shown, shown
    for name in files:
        assert f"{name}: changed in 4 commits in the last 30 days (high churn)" in shown, shown


def test_framework_hooks_without_nexusmem_on_path_let_the_commit_through(
    repo: Path, hook_repo: tuple[Path, str, Path]
) -> None:
    source, sha, cache = hook_repo
    config = repo / ".pre-commit-config.yaml"
    config.write_text(_config(source, sha, "nexusmem-precheck-strict", "nexusmem-sync"), encoding="utf-8")
    commit(repo, "feat: cache", {"src/cache.py": "x = 1\n"})
    installed = _run(
        repo, cache, str(PRE_COMMIT), "install", "--hook-type", "pre-commit", "--hook-type", "post-commit"
    )
    assert installed.returncode == 0, installed.stderr + installed.stdout
    subprocess.run([str(Path(sys.executable).parent / "nexusmem"), "sync", "-q"], cwd=repo, check=True)
    _plant_failure(repo)
    (repo / "src/cache.py").write_text("x = 2\n", encoding="utf-8")
    git(repo, "add", "src/cache.py")
    done = _run(repo, cache, "git", "commit", "-m", "change cache", path=BARE_PATH)
    shown = done.stdout + done.stderr
    assert done.returncode == 0, shown  # strict, a known failure, but NexusMem is absent: fail open
    assert "nexusmem: precheck skipped: no nexusmem on PATH; install it (pipx or uv tool install)" in shown
    assert "nexusmem: memory not updated: no nexusmem on PATH" in shown


def test_framework_sync_builds_the_memory_on_the_first_commit(
    repo: Path, hook_repo: tuple[Path, str, Path]
) -> None:
    source, sha, cache = hook_repo
    (repo / ".pre-commit-config.yaml").write_text(_config(source, sha, "nexusmem-sync"), encoding="utf-8")
    installed = _run(repo, cache, str(PRE_COMMIT), "install", "--hook-type", "post-commit")
    assert installed.returncode == 0, installed.stderr + installed.stdout
    git(repo, "add", ".pre-commit-config.yaml")
    first = _run(repo, cache, "git", "commit", "-m", "feat: first")
    assert first.returncode == 0 and "building it in the background" in first.stdout + first.stderr
    db = repo / ".nexusmem" / "memory.db"
    deadline = time.monotonic() + 60
    while not (db.exists() and (repo / ".nexusmem" / "auto-sync.log").read_text().count("done")):
        assert time.monotonic() < deadline, (repo / ".nexusmem" / "auto-sync.log").read_text()
        time.sleep(0.3)


def test_precheck_over_many_files_runs_once_and_prints_one_summary(
    repo: Path, hook_repo: tuple[Path, str, Path]
) -> None:
    """`pre-commit run --all-files` split the files between parallel precheck processes, each printing its
    own summary ("1 warning(s) for 1 of 85 file(s)" on a repository of 171)."""
    source, sha, cache = hook_repo
    modules = {f"src/m{i}.py": f"x = {i}\n" for i in range(16)}
    commit(
        repo,
        "feat: modules",
        {**modules, ".pre-commit-config.yaml": _config(source, sha, "nexusmem-precheck")},
    )
    hook_script = Path(sys.executable).parent / "nexusmem"
    _plant_failure(repo, "mypy src/m3.py")
    subprocess.run([str(hook_script), "sync", "-q"], cwd=repo, env=dict(os.environ), check=True)
    files = len(git(repo, "ls-files").split())
    # pre-commit runs a hook in as many processes as there are CPUs (TRAVIS=1 makes that 2 on any machine).
    ran = _run(repo, cache, str(PRE_COMMIT), "run", "--all-files", extra={"TRAVIS": "1"})
    output = ran.stdout + ran.stderr
    assert ran.returncode == 0, output
    assert "src/m3.py: `mypy src/m3.py` failed (exit 1)" in output, output
    assert output.count("nexusmem precheck: ") == 1, output
    assert f"nexusmem precheck: 1 warning(s) for 1 of {files} file(s)" in output, output


def test_hook_status_names_the_framework_route_not_files_that_do_not_exist(
    repo: Path, hook_repo: tuple[Path, str, Path]
) -> None:
    """With the README's .pre-commit-config.yaml (precheck and the sync run by the framework on every commit),
    `hook git status` and `hook git-post status` said "not installed: …/.git/hooks/pre-commit.legacy",
    naming files that do not exist. They say the framework runs our hooks, and name its hook files."""
    source, sha, cache = hook_repo
    config = repo / ".pre-commit-config.yaml"
    config.write_text(_config(source, sha, "nexusmem-precheck", "nexusmem-sync"), encoding="utf-8")
    commit(repo, "chore: pre-commit", {".pre-commit-config.yaml": config.read_text(encoding="utf-8")})
    stages = ("pre-commit", "post-commit", "post-merge")
    installed = _run(repo, cache, str(PRE_COMMIT), "install", *(f"--hook-type={s}" for s in stages))
    assert installed.returncode == 0, installed.stderr + installed.stdout
    hooks = repo / ".git" / "hooks"
    said = run_cli("-C", str(repo), "hook", "git", "status").output
    said += run_cli("-C", str(repo), "hook", "git-post", "status").output
    assert f"pre-commit: run by the pre-commit framework (nexusmem-precheck in {config}, line 5)" in said, (
        said
    )
    for name in ("post-commit", "post-merge"):
        assert f"{name}: run by the pre-commit framework (nexusmem-sync in {config}, line 6)" in said, said
    assert ".legacy" not in said and "not installed: " + str(hooks / "pre-commit") not in said, said
    for name in stages:
        assert f": {hooks / name}\n" in said and (hooks / name).exists(), said

    # The framework's hooks without ours in its config: not installed, naming the framework's file.
    config.write_text(_config(source, sha), encoding="utf-8")
    said = run_cli("-C", str(repo), "hook", "git", "status").stdout
    assert (
        said
        == f"pre-commit: not installed (the pre-commit framework's hook is there): {hooks / 'pre-commit'}\n"
    )


def test_under_the_framework_git_am_is_said_and_the_install_adds_post_applypatch_alone(
    repo: Path, hook_repo: tuple[Path, str, Path], tmp_path: Path
) -> None:
    """The framework has no post-applypatch hook (`pre-commit install --hook-type post-applypatch` is
    refused), so a `git am` there started no sync. `hook git-post status` said "post-applypatch: not
    installed: …/.git/hooks/post-applypatch" (a file that does not exist) and doctor found no problem; and
    `hook git-post install` put blocks in post-commit.legacy and post-merge.legacy too, a second sync at
    every commit beside the framework's."""
    source, sha, cache = hook_repo
    config = repo / ".pre-commit-config.yaml"
    config.write_text(_config(source, sha, "nexusmem-sync"), encoding="utf-8")
    commit(repo, "chore: pre-commit", {".pre-commit-config.yaml": config.read_text(encoding="utf-8")})
    installed = _run(repo, cache, str(PRE_COMMIT), "install", "-t", "post-commit", "-t", "post-merge")
    assert installed.returncode == 0, installed.stderr + installed.stdout
    run_cli("-C", str(repo), "sync", "--no-embed")
    hooks = repo / ".git" / "hooks"
    said = run_cli("-C", str(repo), "hook", "git-post", "status").output
    assert (
        "post-applypatch: not installed, and the pre-commit framework has no post-applypatch hook: what"
        " `git am` applies waits for the next sync (`nexusmem hook git-post install` adds this hook alone)"
    ) in said, said
    assert str(hooks / "post-applypatch") not in said, said
    doctor = run_cli("-C", str(repo), "doctor", ok=False).stdout
    assert "the pre-commit framework has no post-applypatch hook" in doctor, doctor
    assert "fix: nexusmem hook git-post install" in doctor, doctor

    done = run_cli("-C", str(repo), "hook", "git-post", "install").stdout
    assert "post-commit and post-merge: left to the pre-commit framework" in done, done
    assert (hooks / "post-applypatch").exists(), done
    assert not (hooks / "post-commit.legacy").exists() and not (hooks / "post-merge.legacy").exists()
    said = run_cli("-C", str(repo), "hook", "git-post", "status").output
    assert f"post-applypatch: installed (our own file): {hooks / 'post-applypatch'}" in said, said
    assert "no post-applypatch hook" not in run_cli("-C", str(repo), "doctor", ok=False).stdout

    # A mailed patch applied with `git am` reaches memory.
    upstream = tmp_path / "upstream"
    git(tmp_path, "clone", "-q", str(repo), str(upstream))
    commit(upstream, "fix: the parser crash on empty tables", {"src/parser.py": "x = 2\n"})
    patches = git(upstream, "format-patch", "-1", "-o", str(tmp_path / "patches")).split()
    applied = _run(repo, cache, "git", "am", "-q", *patches)
    assert applied.returncode == 0, applied.stderr
    deadline = time.monotonic() + 60
    while "parser crash" not in json.dumps(
        json.loads(run_cli("-C", str(repo), "query", "--json", "parser crash on empty tables").stdout)[
            "items"
        ]
    ):
        assert time.monotonic() < deadline, (repo / ".nexusmem" / "auto-sync.log").read_text()
        time.sleep(0.5)


def _recorder(tmp_path: Path) -> tuple[Path, Path]:
    """(a folder holding a `nexusmem` that writes each command line it is given to the returned file and runs
    the real one, except `sync`, which it only records: every start is counted, none is skipped because
    another sync holds the lock, the file it writes to)."""
    bin_dir = tmp_path / "recorder-bin"
    bin_dir.mkdir()
    calls = tmp_path / "calls.txt"
    real = Path(sys.executable).parent / "nexusmem"
    script = bin_dir / "nexusmem"
    script.write_text(
        f"#!/bin/sh\necho \"$*\" >>'{calls}'\ncase $1 in sync) exit 0 ;; esac\nexec '{real}' \"$@\"\n",
        encoding="utf-8",
    )
    script.chmod(0o755)
    return bin_dir, calls


def _starts(calls: Path, words: str, wait: float) -> int:
    """How many times WORDS began a line of CALLS, once the count has held still for WAIT seconds (a sync
    is started in the background, after `git commit` may have returned)."""
    count, still = -1, time.monotonic()
    while True:
        lines = calls.read_text(encoding="utf-8").splitlines() if calls.exists() else []
        now = sum(1 for line in lines if line.startswith(words))
        if now != count:
            count, still = now, time.monotonic()
        elif time.monotonic() - still >= wait:
            return count
        time.sleep(0.1)


def _commit_once_checked(
    repo: Path, cache: Path, bin_dir: Path, calls: Path, message: str, value: str
) -> str:
    """Commit a change to src/cache.py through every hook installed; assert precheck's warning is shown
    once and one sync starts; return what the commit printed."""
    calls.unlink(missing_ok=True)
    (repo / "src/cache.py").write_text(value, encoding="utf-8")
    git(repo, "add", "src/cache.py")
    done = _run(repo, cache, "git", "commit", "-m", message, path=f"{bin_dir}:{USER_PATH}")
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    warning = "src/cache.py: `pytest tests/test_cache.py` failed (exit 1)"
    assert output.count(warning) == 1, output
    assert _starts(calls, "precheck", 0) == 1, calls.read_text(encoding="utf-8")
    assert _starts(calls, "sync --auto", 2.0) == 1, calls.read_text(encoding="utf-8")
    return output


def _double_setup(repo: Path, source: Path, sha: str) -> Path:
    """A repository with a memory that holds a failure of tests/test_cache.py, and a pre-commit config
    naming nexusmem-precheck and nexusmem-sync (not yet installed)."""
    commit(repo, "feat: cache", {"src/cache.py": "x = 1\n", "tests/test_cache.py": "def test(): pass\n"})
    _plant_failure(repo)
    run_cli("-C", str(repo), "sync", "--no-embed", "-q")
    config = repo / ".pre-commit-config.yaml"
    config.write_text(_config(source, sha, "nexusmem-precheck", "nexusmem-sync"), encoding="utf-8")
    return config


STAGES = ("-t", "pre-commit", "-t", "post-commit", "-t", "post-merge")


def test_own_hooks_then_the_framework_run_precheck_and_the_sync_once_and_doctor_names_the_double(
    repo: Path, hook_repo: tuple[Path, str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """NexusMem's own hooks installed, then the pre-commit framework with nexusmem-precheck and
    nexusmem-sync (`pre-commit install` moves ours to *.legacy and runs them first): every commit printed
    precheck's warnings twice and started two syncs, and neither doctor nor `hook git status` said a word.
    Our blocks now do nothing under the framework's legacy chain when its config runs the same hook; doctor
    and status name the double installation, and its fix takes our blocks out."""
    source, sha, cache = hook_repo
    bin_dir, calls = _recorder(tmp_path)
    from nexusmem.install import git_hooks

    monkeypatch.setattr(git_hooks, "console_script", lambda: bin_dir / "nexusmem")
    config = _double_setup(repo, source, sha)
    run_cli("-C", str(repo), "hook", "git", "install")
    run_cli("-C", str(repo), "hook", "git-post", "install")
    installed = _run(repo, cache, str(PRE_COMMIT), "install", *STAGES)
    assert installed.returncode == 0, installed.stderr + installed.stdout
    hooks = repo / ".git" / "hooks"
    for name in ("pre-commit", "post-commit", "post-merge"):
        assert (hooks / f"{name}.legacy").exists()

    _commit_once_checked(repo, cache, bin_dir, calls, "change cache", "x = 2\n")

    said = run_cli("-C", str(repo), "hook", "git", "status").output
    assert "installed twice" in said and f"nexusmem-precheck in {config}" in said, said
    assert "fix: nexusmem hook git install" in said, said
    said = run_cli("-C", str(repo), "hook", "git-post", "status").output
    assert said.count("installed twice") == 2 and "fix: nexusmem hook git-post install" in said, said
    doctor = run_cli("-C", str(repo), "doctor", ok=False).stdout
    assert doctor.count("installed twice") == 3, doctor
    assert "nexusmem hook git install" in doctor and "nexusmem hook git-post install" in doctor, doctor

    # The fix: each install leaves the hooks the framework runs to it, taking our blocks out of *.legacy.
    done = run_cli("-C", str(repo), "hook", "git", "install").stdout
    assert "left to the pre-commit framework" in done and "pre-commit.legacy" in done, done
    done = run_cli("-C", str(repo), "hook", "git-post", "install").stdout
    assert "post-commit and post-merge: left to the pre-commit framework" in done, done
    for name in ("pre-commit", "post-commit", "post-merge"):
        assert not git_hooks.status(name, repo).installed, name
    assert git_hooks.status("post-applypatch", repo).installed
    doctor = run_cli("-C", str(repo), "doctor", ok=False).stdout
    assert "installed twice" not in doctor and "is gone" not in doctor, doctor
    _commit_once_checked(repo, cache, bin_dir, calls, "change cache again", "x = 3\n")


def test_the_framework_then_own_hooks_leave_precheck_to_the_framework(
    repo: Path, hook_repo: tuple[Path, str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The pre-commit framework with nexusmem-precheck first, then `nexusmem hook git install`: it put a
    precheck block in pre-commit.legacy, and precheck ran twice at every commit (`hook git-post install`
    already left post-commit and post-merge to the framework). It now installs nothing there and says why."""
    source, sha, cache = hook_repo
    bin_dir, calls = _recorder(tmp_path)
    from nexusmem.install import git_hooks

    monkeypatch.setattr(git_hooks, "console_script", lambda: bin_dir / "nexusmem")
    config = _double_setup(repo, source, sha)
    installed = _run(repo, cache, str(PRE_COMMIT), "install", *STAGES)
    assert installed.returncode == 0, installed.stderr + installed.stdout
    done = run_cli("-C", str(repo), "hook", "git", "install").stdout
    assert (
        f"pre-commit: left to the pre-commit framework, which runs precheck already (nexusmem-precheck in"
        f" {config}, line 5)"
    ) in done, done
    run_cli("-C", str(repo), "hook", "git-post", "install")
    hooks = repo / ".git" / "hooks"
    assert not (hooks / "pre-commit.legacy").exists()
    # --strict beside the framework's advisory hook: said how to make that one refuse, nothing written.
    strict = run_cli("-C", str(repo), "hook", "git", "install", "--strict", ok=False)
    assert strict.exit_code == 1 and "nexusmem-precheck-strict" in strict.output, strict.output
    assert not (hooks / "pre-commit.legacy").exists()

    _commit_once_checked(repo, cache, bin_dir, calls, "change cache", "x = 2\n")
    said = run_cli("-C", str(repo), "hook", "git", "status").output
    assert "installed twice" not in said and "run by the pre-commit framework" in said, said
    assert "installed twice" not in run_cli("-C", str(repo), "doctor", ok=False).stdout
