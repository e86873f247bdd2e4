"""Running git: one place that starts the process, cleans its environment and classifies failures.

Stdlib only: this module is on the hot paths (precheck, the git hooks). A git whose output is read whole
is started with os.posix_spawnp and read through two pipes (_spawn), not through `subprocess`: importing
that (with signal, threading, selectors and locale behind it) was 7-8 ms of every cold precheck on the
2-core build machine. `subprocess` is imported only to stream output or to feed input.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Sequence
from pathlib import Path

from nexusmem.errors import GitCommandError, GitNotInstalledError, GitStartError

GIT = os.environ.get("NEXUSMEM_GIT", "git")

# Options that make git's output stable and machine-readable whatever the user's config says: git's own
# defaults for what changes what we parse or store. The settings without a command-line flag, or that hold
# for every `git log` we run, are here; the walks' flags are commits._LOG_STABLE (a flag a command gives,
# `--unified=1`, still wins over these). Without them a user's config silently changed memory:
# `log.showRoot=false` dropped the root commit's files and patch (and a shallow clone's every boundary
# commit's: `--depth 1` kept nothing of its one commit's change), `log.follow` made the docs' one-file walk
# follow renames, and the diff settings changed the stored patches (diff.context, interHunkContext,
# algorithm, indentHeuristic) or their lines (suppressBlankEmpty). The last one keeps a repository's own
# config from starting a program of its choosing on our behalf: a repository unpacked from an archive
# brings its .git/config, and `core.fsmonitor` there names a command that `git ls-files`, `git diff` and
# `git status` run (`git log` does not). An empty value turns it off in every git version (a hook path
# before 2.36, a boolean since). An older git ignores a setting it does not know.
_STABLE = [
    "-c",
    "core.quotepath=off",
    "-c",
    "color.ui=never",
    "-c",
    "log.showSignature=false",
    "-c",
    "log.showRoot=true",
    "-c",
    "log.follow=false",
    "-c",
    "diff.context=3",
    "-c",
    "diff.interHunkContext=0",
    "-c",
    "diff.algorithm=default",
    "-c",
    "diff.indentHeuristic=true",
    "-c",
    "diff.suppressBlankEmpty=false",
    "-c",
    "core.fsmonitor=",
]

# No git we start ever fetches. A partial clone (`--filter=blob:none`, a promisor remote) fetches each object
# it lacks the moment a `git log -p` needs it, one commit at a time, through its remote: seconds a try, and
# git tries again (10 commits held the sync lock 160 s with a remote that took 2 s to fail; hours behind a
# VPN that is down). And the transport is the repository's to choose: its .git/config names the ssh program
# (`core.sshCommand`), the upload-pack of a local path (`remote.<name>.uploadpack`), a remote helper (`ext::`
# runs any command). An empty allow list refuses every transport before anything starts, and wins over any
# `protocol.<name>.allow` a config sets (`-c protocol.allow=never` does not); GIT_NO_LAZY_FETCH (git's
# May 2024 releases on: 2.39.4, 2.45.1) does not even try. The object is then missing: its commit is kept
# without its change (commits.past_unreadable). Nothing asks for a password either (a credential helper,
# the terminal).
_NO_FETCH = {"GIT_ALLOW_PROTOCOL": "", "GIT_NO_LAZY_FETCH": "1", "GIT_TERMINAL_PROMPT": "0"}


def clean_env(keep: Sequence[str] = ()) -> dict[str, str]:
    """The environment minus GIT_* variables that a calling hook may have set (GIT_DIR, GIT_INDEX_FILE...).

    Inside a git hook these point at the outer repository and would silently redirect our git calls.
    KEEP names variables to pass through anyway (precheck needs the GIT_INDEX_FILE of `git commit -a`).
    """
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_") or k in _KEEP or k in keep}
    env["LC_ALL"] = "C"
    env.update(_NO_FETCH)
    # No optional write of the index (`git status` refreshing it would take index.lock beside a commit the
    # user is making); `git diff` writes it anyway: see worktree_options.
    env["GIT_OPTIONAL_LOCKS"] = "0"
    return env


def worktree_options(root: Path | str) -> list[str]:
    """Options for a git command that compares ROOT's work tree (`git diff HEAD`): no program of the
    repository's choosing runs. Git runs a file's clean filter (`filter.<driver>.clean`, `.process`,
    chosen by the repository's .git/config and .gitattributes) to compare a file whose stat changed, then
    writes the refreshed index, which runs its post-index-change hook (GIT_OPTIONAL_LOCKS does not stop
    `git diff` from writing it). Every configured filter is turned off, and hooks are looked for where
    there are none. A file a filter would have shown unchanged may then be listed as changed."""
    options = ["-c", "core.hooksPath=/dev/null"]
    code, out = run_ok(
        ["config", "--name-only", "--get-regexp", r"^filter\..*\.(clean|smudge|process)$"], root
    )
    if code != 0:
        return options
    drivers = sorted({name.rsplit(".", 1)[0] for name in os.fsdecode(out).split()})
    for driver in drivers:
        for key, value in (("clean", ""), ("smudge", ""), ("process", ""), ("required", "false")):
            options += ["-c", f"{driver}.{key}={value}"]
    return options


# Test and user configuration that is not about *which* repository git looks at.
_KEEP = {"GIT_CONFIG_GLOBAL", "GIT_CONFIG_NOSYSTEM", "GIT_CONFIG_SYSTEM", "GIT_ATTR_NOSYSTEM"}


# Read-only questions that several sources of one sync ask (HEAD: docs and changelog; the refs: git and
# diff; the index: changelog and the import structure). Inside snapshot() each is asked of git once per
# directory: each answer is a process (~4-8 ms of a no-op sync on the 2-core build machine), and one sync
# reading one state of the repository for all its sources is what it should read anyway.
_SNAPSHOT_ARGS = frozenset(
    {("show-ref", "--head"), ("rev-parse", "-q", "--verify", "HEAD"), ("ls-files", "-s", "-z")}
)
_snapshot: dict[tuple[tuple[str, ...], str], bytes] | None = None


@contextlib.contextmanager
def snapshot() -> Iterator[None]:
    """Within this block, a successful answer to one of _SNAPSHOT_ARGS is reused (a failure is asked again)."""
    global _snapshot
    outer = _snapshot
    if outer is None:
        _snapshot = {}
    try:
        yield
    finally:
        _snapshot = outer


def _remembered(args: Sequence[str], cwd: Path | str) -> tuple[tuple[str, ...], str] | None:
    if _snapshot is None or tuple(args) not in _SNAPSHOT_ARGS:
        return None
    return tuple(args), str(cwd)


def _start_error(exc: OSError) -> Exception:
    if isinstance(exc, FileNotFoundError):
        return GitNotInstalledError(f"git is not installed (or not on PATH): could not find '{GIT}'")
    return GitStartError(f"git could not be started: {exc}")


def run(
    args: Sequence[str],
    cwd: Path | str,
    *,
    check: bool = True,
    input: bytes | None = None,
    keep_env: Sequence[str] = (),
) -> bytes:
    """Run `git ARGS` in CWD and return stdout bytes; raise a classified error on failure."""
    key = _remembered(args, cwd) if input is None and not keep_env else None
    if key is not None and _snapshot is not None and key in _snapshot:
        return _snapshot[key]
    code, stdout, stderr = run_full(args, cwd, input=input, keep_env=keep_env)
    if check and code != 0:
        msg = stderr.decode("utf-8", "replace").strip()
        raise GitCommandError(f"git {' '.join(args[:3])} failed ({code}): {msg}")
    if key is not None and _snapshot is not None and code == 0:
        _snapshot[key] = stdout
    return stdout


def run_ok(args: Sequence[str], cwd: Path | str) -> tuple[int, bytes]:
    """Run git and return (exit code, stdout) without raising on a non-zero exit."""
    key = _remembered(args, cwd)
    if key is not None and _snapshot is not None and key in _snapshot:
        return 0, _snapshot[key]
    if _SPAWN:
        code, stdout, _stderr = _spawn(args, cwd, clean_env())
    else:
        import subprocess

        try:
            proc = subprocess.run(
                [GIT, *_STABLE, *args],
                cwd=str(cwd),
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                env=clean_env(),
                check=False,
            )
        except OSError as exc:
            raise _start_error(exc) from exc
        code, stdout = proc.returncode, proc.stdout
    if key is not None and _snapshot is not None and code == 0:
        _snapshot[key] = stdout
    return code, stdout


def run_full(
    args: Sequence[str], cwd: Path | str, *, input: bytes | None = None, keep_env: Sequence[str] = ()
) -> tuple[int, bytes, bytes]:
    """Run git and return (exit code, stdout, stderr), never raising on a non-zero exit (run() classifies
    it; the rare path that must say what git said calls this itself: run_ok drops stderr to stay cheap)."""
    if input is None and _SPAWN:
        return _spawn(args, cwd, clean_env(keep_env))
    import subprocess

    try:
        proc = subprocess.run(
            [GIT, *_STABLE, *args],
            cwd=str(cwd),
            input=input,
            capture_output=True,
            env=clean_env(keep_env),
            check=False,
        )
    except OSError as exc:
        raise _start_error(exc) from exc
    return proc.returncode, proc.stdout, proc.stderr


def first_line(stderr: bytes) -> str:
    """git's message: the first non-empty line of its stderr, without its "fatal: " / "error: " prefix."""
    for raw in stderr.decode("utf-8", "replace").splitlines():
        line = raw.strip()
        if line:
            for prefix in ("fatal: ", "error: "):
                line = line.removeprefix(prefix)
            return line
    return "no message"


_SPAWN = hasattr(os, "posix_spawnp")


def _spawn(args: Sequence[str], cwd: Path | str, env: dict[str, str]) -> tuple[int, bytes, bytes]:
    """Exit code, stdout and stderr of `git -C CWD ARGS` (what subprocess.run(cwd=CWD) runs: posix_spawn
    cannot change directory, git's -C does), stdin inherited. Both pipes are drained as data comes (a git
    warning per file on stderr must not block its stdout)."""
    import select

    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    try:
        pid = os.posix_spawnp(
            GIT,
            [GIT, "-C", str(cwd), *_STABLE, *args],
            env,
            file_actions=[(os.POSIX_SPAWN_DUP2, out_w, 1), (os.POSIX_SPAWN_DUP2, err_w, 2)],
        )
    except OSError as exc:
        os.close(out_r)
        os.close(err_r)
        raise _start_error(exc) from exc
    finally:
        os.close(out_w)
        os.close(err_w)
    chunks: dict[int, list[bytes]] = {out_r: [], err_r: []}
    poller = select.poll()
    for fd in chunks:
        poller.register(fd, select.POLLIN)
    left = len(chunks)
    try:
        while left:
            for fd, _event in poller.poll():
                data = os.read(fd, 1 << 16)
                if data:
                    chunks[fd].append(data)
                else:  # end of file: git closed it (or exited)
                    poller.unregister(fd)
                    left -= 1
    finally:
        os.close(out_r)
        os.close(err_r)
        _pid, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status), b"".join(chunks[out_r]), b"".join(chunks[err_r])


# What git says when it cannot walk on past a commit whose parent is missing (revision.c).
WALK_CUT = b"Failed to traverse parents"


def stream(
    args: Sequence[str],
    cwd: Path | str,
    bufsize: int = 1 << 20,
    *,
    deferred: list[GitCommandError] | None = None,
) -> Iterator[bytes]:
    """Yield stdout of `git ARGS` line by line (bytes, newline kept), without holding it all in memory.

    With DEFERRED, a walk that git had to stop at a commit whose parent it cannot read ("Failed to traverse
    parents") is appended to it rather than raised: the stream just ends, so a reader can finish the last
    commit git wrote in full, and raise after. Any other failure is raised where the output ends (a reader
    that resumes past an unreadable object counts on the record that failed not being finished)."""
    import subprocess

    try:
        proc = subprocess.Popen(
            [GIT, *_STABLE, *args],
            cwd=str(cwd),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=clean_env(),
            bufsize=bufsize,
        )
    except OSError as exc:
        raise _start_error(exc) from exc
    assert proc.stdout is not None and proc.stderr is not None
    try:
        yield from proc.stdout
    finally:
        proc.stdout.close()
        err = proc.stderr.read()
        proc.stderr.close()
        code = proc.wait()
    if code != 0:
        error = GitCommandError(
            f"git {' '.join(args[:3])} failed ({code}): {err.decode('utf-8', 'replace').strip()}"
        )
        if deferred is None or WALK_CUT not in err:
            raise error
        deferred.append(error)
