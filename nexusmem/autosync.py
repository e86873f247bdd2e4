"""`sync --auto`: the post-commit hook's sync, coalesced by a file lock so a burst of commits costs few syncs.

Protocol (two files in .nexusmem/):
- `sync.lock`: an OS file lock taken without waiting. The OS releases it when its holder dies, even by
  SIGKILL, so a crashed sync never blocks the next one.
- `sync.pending`: touched by a sync that found the lock taken, then it retries the lock once and returns.
  The holder waits a short quiet period (so a burst of commits lands in one run), clears the flag before
  each run and, after releasing the lock, looks again: a commit that arrives at any moment is either seen
  by a run that starts after it, or leaves the flag for someone who then takes the lock. Never two syncs
  at once; never a commit left unsynced.

Each run writes one line to stdout (the hook points it at `.nexusmem/auto-sync.log`), and the log is cut
back to its newest part at the start of every auto sync so it never grows without bound. A run that fails
also leaves `auto-sync.failed` (its error inside when the disk takes it, the time of the failure as its
mtime; taken away by the next sync that works, this one's or `nexusmem sync` by hand): on a full disk the log line cannot be written, and the
failure was silent, but an empty file still can be made.
"""

from __future__ import annotations

import contextlib
import os
import stat
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from nexusmem import paths, private

LOCK_NAME = "sync.lock"
PUSH_LOCK_NAME = "team-push.lock"
PUSH_PENDING_NAME = "team-push.pending"
# Touched by every team push that worked (`team push` or this one): a later one clears a failure logged here.
PUSH_DONE_NAME = "team-push.done"
PENDING_NAME = "sync.pending"
LOG_NAME = paths.AUTO_SYNC_LOG_NAME
FAILED_NAME = "auto-sync.failed"
LOG_CAP_BYTES = 256 * 1024
LOG_KEEP_BYTES = 64 * 1024
# How long a sync waits, holding the lock, for more commits to arrive before it starts (see auto_sync).
DEBOUNCE_SECONDS = 1.0
# However long a burst goes on, a sync starts after this many seconds of waiting for it to end.
MAX_QUIET_WAIT = 15.0
# A safety net: a commit loop that never stops must not keep one process syncing forever.
MAX_RUNS = 20


@dataclass
class AutoSyncResult:
    """What one `sync --auto` process did: how many syncs it ran (0 when it only marked pending)."""

    root: str
    runs: int = 0
    deferred: bool = False


def log_path(root: Path) -> Path:
    return paths.state_dir(root) / LOG_NAME


def cap_log(path: Path, cap: int = LOG_CAP_BYTES, keep: int = LOG_KEEP_BYTES) -> bool:
    """Cut PATH down to its newest KEEP bytes (from a line start) when it is over CAP. True if it did.

    In place rather than renamed: the hook's shell opened the file with O_APPEND, and appends keep landing
    at the (new) end of the same file.
    """
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        return False
    if size <= cap:
        return False
    with path.open("r+b") as handle:
        handle.seek(size - keep)
        tail = handle.read()
        cut = tail.find(b"\n")
        tail = tail[cut + 1 :] if cut >= 0 else tail
        handle.seek(0)
        handle.write(CUT_MARK + tail)
        handle.truncate()
    return True


CUT_MARK = b"[log cut to its newest part]\n"


def rewrite_lines(
    path: Path, change: Callable[[str], str | None], *, dry_run: bool = False, emptied: str = ""
) -> int:
    """Give each line of the file PATH (this folder's auto-sync.log or auto-sync.failed, the crash log) to CHANGE, which
    returns it as it is, changed, or None to take it out; return how many lines it changed or took out.

    Unless DRY_RUN, a file with such lines is written again in place, never renamed (as cap_log cuts it):
    a `sync --auto` still running holds the file open with O_APPEND, and a file renamed over it would take
    every line it writes afterwards away. Lines appended while it reads are kept after the rest (changed
    too; one a sync writes in the instant between the last read and the cut can be lost, as with cap_log);
    the bytes past the new end are zeroed before the file is cut there, so what was taken out is not left
    in its old blocks; the mtime is kept (the date of a failure, of an undated line), and the file is cut
    as cap_log cuts it when it is over LOG_CAP_BYTES. A file that had text and keeps none holds EMPTIED.
    Nothing is followed through a link, and a file that is no regular file
    (a FIFO) is left alone."""
    try:
        fd = os.open(
            path, os.O_RDWR | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
        )
    except OSError:
        return 0  # none, a link, not writable: nothing this can rewrite
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return 0
        data = _read_from(fd, 0)
        new, changed = _changed_lines(data, change)
        if not changed or dry_run:
            return changed
        read = len(data)
        # What a sync appended while the lines were read, changed as the rest, until nothing more came.
        while late := _read_from(fd, read):
            more, changed_late = _changed_lines(late, change)
            new, changed, read = new + more, changed + changed_late, read + len(late)
        if data.strip() and not new.strip():
            new = emptied.encode("utf-8") + (b"\n" if emptied else b"")
        os.pwrite(fd, new, 0)
        size = max(os.fstat(fd).st_size, read)
        for at in range(len(new), size, 1 << 16):  # what was taken out is not left in the file's old blocks
            os.pwrite(fd, b"\0" * min(1 << 16, size - at), at)
        os.ftruncate(fd, len(new))
        os.fsync(fd)
        os.utime(fd, ns=(st.st_atime_ns, st.st_mtime_ns))
    finally:
        os.close(fd)
    if cap_log(path):
        with contextlib.suppress(OSError):
            os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns), follow_symlinks=False)
    return changed


def rewrite_logs(
    state: Path, change: Callable[[str], str | None], *, dry_run: bool = False, failure_note: str = ""
) -> int:
    """rewrite_lines over the post-commit sync's log and its failure mark in STATE, a memory's .nexusmem/:
    the lines CHANGE changed or took out (a failure mark left without text holds FAILURE_NOTE)."""
    return rewrite_lines(state / LOG_NAME, change, dry_run=dry_run) + rewrite_lines(
        state / FAILED_NAME, change, dry_run=dry_run, emptied=failure_note
    )


def logs_unreachable(state: Path) -> str | None:
    """Why the post-commit sync's log and failure mark in STATE (a memory's .nexusmem/) cannot be rewritten
    (rewrite_logs), in plain words; None when they can, or are not there in a folder that is. What a user-wide
    forget says of another registered project's (moved, deleted, on a drive not mounted, a link)."""
    try:
        st = os.stat(state)
    except OSError as exc:
        return f"{state} cannot be reached ({exc.strerror or exc})"
    if not stat.S_ISDIR(st.st_mode):
        return f"{state} is not a directory"
    for name in (LOG_NAME, FAILED_NAME):
        path = state / name
        try:
            held = os.lstat(path)
        except FileNotFoundError:
            continue
        except OSError as exc:
            return f"{path} cannot be reached ({exc.strerror or exc})"
        if stat.S_ISLNK(held.st_mode):
            return f"{path} is a symbolic link: not followed"
        if stat.S_ISREG(held.st_mode) and not os.access(path, os.R_OK | os.W_OK):
            return f"{path} cannot be read and written by this user"
    return None


def _read_from(fd: int, offset: int) -> bytes:
    chunks: list[bytes] = []
    while True:
        chunk = os.pread(fd, 1 << 20, offset)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)
        offset += len(chunk)


def _changed_lines(data: bytes, change: Callable[[str], str | None]) -> tuple[bytes, int]:
    """DATA with each line given to CHANGE (a bad byte kept as it was), and how many lines it changed or
    took out (a last line without its newline too: a sync may be writing it)."""
    out: list[bytes] = []
    changed = 0
    for raw in data.splitlines(keepends=True):
        body = raw.rstrip(b"\r\n")
        line = body.decode("utf-8", "surrogateescape")
        result = change(line)
        if result == line:
            out.append(raw)
            continue
        changed += 1
        if result is not None:
            out.append(result.encode("utf-8", "surrogateescape") + raw[len(body) :])
    return b"".join(out), changed


def _mark_time(pending: Path) -> int | None:
    try:
        return pending.stat().st_mtime_ns
    except FileNotFoundError:
        return None


def _wait_for_quiet(pending: Path, debounce: float, limit: float | None = None) -> None:
    """Sleep until the pending mark has not moved for DEBOUNCE seconds (each commit's hook touches it),
    or until LIMIT seconds have passed in all."""
    deadline = time.monotonic() + (MAX_QUIET_WAIT if limit is None else limit)
    while True:
        before = _mark_time(pending)
        time.sleep(debounce)
        if _mark_time(pending) == before or time.monotonic() >= deadline:
            return


def stamp() -> str:
    return datetime.now().astimezone().isoformat(timespec="seconds")


def auto_sync(
    start: Path | str | None = None,
    *,
    log: Callable[[str], None] = print,
    run_sync: Callable[[Path], Any] | None = None,
    debounce: float = DEBOUNCE_SECONDS,
) -> AutoSyncResult:
    """Sync unless one already runs (then mark pending and return at once); loop while pending was set.

    RUN_SYNC(root) does one sync (default: nexusmem.sync.sync with failure→fix linking); tests plug in here.
    """
    from nexusmem.errors import NexusMemError
    from nexusmem.oslock import FileLock, Timeout

    root = paths.repo_root(start)
    state = paths.state_dir(root)
    if not paths.db_path(root).exists():
        # A memory `git stash --all` took is not built again here: `git stash pop` would stop on the new
        # files. The hook checks it before it makes the folder; this is for a hook of an older release.
        from nexusmem.project import refuse_stashed

        refuse_stashed(root)
    private.make_dir(state)
    private.fix_tree(state)
    cap_log(state / LOG_NAME)
    result = AutoSyncResult(root=str(root))
    lock = FileLock(state / LOCK_NAME)
    pending = state / PENDING_NAME
    push = run_sync is None and _team_configured(root)
    if run_sync is None:
        from nexusmem.sync import sync

        def run_sync(where: Path) -> Any:
            # Linking at hook time keeps precheck's "never resolved" answers current between manual syncs.
            return sync(where, link_failures=True)

    while True:
        try:
            lock.acquire(timeout=0)
        except Timeout:
            if result.runs == 0 and not result.deferred:
                private.touch(pending)
                result.deferred = True
                log(f"{stamp()} pid {os.getpid()}: a sync is running; marked pending")
                continue  # try once more: the holder may have released just before the flag appeared
            break
        try:
            while result.runs < MAX_RUNS:
                # Holding the lock until the commits stop (no new mark for DEBOUNCE seconds, at most
                # MAX_QUIET_WAIT in all) is what coalesces a burst: the commits made meanwhile only mark
                # pending, and the one sync below covers them all.
                _wait_for_quiet(pending, debounce)
                pending.unlink(missing_ok=True)  # before syncing: a commit from now on sets it again
                began = time.time()
                try:
                    summary = run_sync(root)
                except NexusMemError as exc:
                    mark_failed(state, str(exc))
                    raise
                clear_failure(root)
                result.runs += 1
                ended = time.time()
                moved = getattr(summary, "moved", None)
                if moved:  # the one place a background sync speaks: the memory's ids changed
                    log(f"{stamp()} pid {os.getpid()}: git: {moved}")
                said = embedding_failed(summary)
                if said:  # the run worked, but search stays BM25-only: said before its line
                    log(f"{stamp()} pid {os.getpid()}: {said}")
                added = getattr(summary, "added", "?")
                # The epoch span lets a reader (and the tests) check that no two runs ever overlapped.
                log(
                    f"{stamp()} pid {os.getpid()}: sync run {result.runs} done in {ended - began:.2f}s"
                    f" (+{added} node(s)) [{began:.3f}-{ended:.3f}]"
                )
                if not pending.exists():
                    break
        finally:
            lock.release()
        # Released: a flag set after our last look belongs to a sync that could not get the lock.
        if not pending.exists() or result.runs >= MAX_RUNS:
            break
    if push and result.runs:
        _team_push(root, state, log)
    return result


def embedding_failed(summary: Any) -> str | None:
    """What the auto-sync log says of a sync (SUMMARY, a SyncSummary) whose embedding pass stopped: why, and
    what to do ("embedding failed: Ollama at URL did not answer within 120s; ..."). None when it did not."""
    embedding = getattr(summary, "embedding", None)
    why = getattr(embedding, "unavailable", None)
    if not why:
        return None
    from nexusmem.ollama import EMBEDDER_FIX

    ollama = str(getattr(embedding, "provider", None) or "").startswith("ollama")
    fix = EMBEDDER_FIX if ollama else "`nexusmem doctor` says what is missing"
    return f"embedding failed: {why}; search stays BM25-only until it works: {fix}"


def _team_push(root: Path, state: Path, log: Callable[[str], None]) -> None:
    """The team push after the local syncs, outside their lock: a team server that stops answering holds
    only this push (the next commits' syncs keep the local memory current), and under a lock of its own,
    so that a push still waiting on such a server is not joined by one from every later commit."""
    from nexusmem import team
    from nexusmem.oslock import FileLock, Timeout

    push_lock = FileLock(state / PUSH_LOCK_NAME)
    again = state / PUSH_PENDING_NAME
    deferred = False
    for _ in range(MAX_RUNS):
        try:
            push_lock.acquire(timeout=0)
        except Timeout:
            if deferred:
                return  # the holder looks at the mark again before it lets go
            private.touch(again)
            deferred = True
            log(
                f"{stamp()} pid {os.getpid()}: team push deferred: an earlier one is still running (it pushes again)"
            )
            continue  # the holder may have let go just before the mark appeared
        try:
            # A push started meanwhile was marked, not run: the holder pushes once more for it (what that
            # commit's sync wrote after this push read its cursor would otherwise wait for the next commit).
            for _ in range(MAX_RUNS):
                again.unlink(missing_ok=True)
                # Dated, so that a `team push` that worked since is known to have cleared it.
                team.auto_push(root, lambda line: log(f"{stamp()} pid {os.getpid()}: {line}"))
                if not again.exists():
                    break
        finally:
            push_lock.release()
        if not again.exists():
            return


def _log_tail(path: Path, size: int) -> tuple[str, float] | None:
    """The last SIZE bytes of the log at PATH (decoded, a bad byte replaced) and its mtime; None unreadable."""
    try:
        with open(path, "rb") as handle:
            stat = os.fstat(handle.fileno())
            handle.seek(max(0, stat.st_size - size))
            return handle.read().decode("utf-8", "replace"), stat.st_mtime
    except OSError:
        return None


def team_push_problem(root: Path) -> str | None:
    """What went wrong with the post-commit team push, from its log's last word on it: the reason the last
    one was not done, unless a push worked since (`nexusmem team push`: PUSH_DONE_NAME is newer), or a push
    still waiting on the team server (it holds PUSH_LOCK_NAME); None when the last one worked or none ran."""
    from nexusmem.oslock import held

    state = paths.state_dir(root)
    read = _log_tail(state / LOG_NAME, 65536)
    if read is None:
        return None
    for line in reversed(read[0].splitlines()):
        if "team push not done: " in line:
            if _pushed_since(root, _logged_at(line, read[1])):
                return None
            return "the last one was not done: " + line.split("team push not done: ", 1)[1].strip()
        if "team push deferred: an earlier one is still running" in line:
            if held(state / PUSH_LOCK_NAME):
                return "one is still waiting on the team server; later commits' pushes wait for it to end"
            return None
        if "team push: " in line:
            return None
    return None


def mark_pushed(root: Path) -> None:
    """Record that a team push of the memory at ROOT worked (see team_push_problem)."""
    # A read-only or full .nexusmem: doctor may name an old failure; the push itself is done.
    with contextlib.suppress(OSError):
        private.touch(paths.state_dir(root) / PUSH_DONE_NAME)


def _pushed_since(root: Path, moment: float) -> bool:
    """Whether a team push worked after MOMENT: one of ROOT's memory, which a linked worktree without a
    memory of its own shares with its main work tree (where `team push` marks it)."""
    from nexusmem.project import memory_root

    for where in {root, memory_root(root)}:
        with contextlib.suppress(OSError):
            if (paths.state_dir(where) / PUSH_DONE_NAME).stat().st_mtime > moment:
                return True
    return False


def _logged_at(line: str, changed: float) -> float:
    """When LINE was logged: its leading date, or CHANGED (the log's last change: older releases wrote the
    push's line without one)."""
    try:
        return datetime.fromisoformat(line.split(" ", 1)[0]).timestamp()
    except ValueError:
        return changed


def mark_failed(state: Path, error: str) -> None:
    """Leave FAILED_NAME in STATE, dated now, with ERROR in it when the disk takes it (an empty mark still
    says that a run failed)."""
    mark = state / FAILED_NAME
    try:
        fd = private.open_fd(mark, os.O_WRONLY | os.O_TRUNC)
    except OSError:
        return
    try:
        os.utime(mark)
        os.write(fd, error.encode("utf-8", "replace")[:4096])
    except OSError:
        pass
    finally:
        os.close(fd)


def clear_failure(root: Path) -> None:
    """Take the failure mark (mark_failed) away: a sync that worked caught up with it, the post-commit one or
    any other (`nexusmem sync` by hand, as doctor and status say to run)."""
    with contextlib.suppress(OSError):
        (paths.state_dir(root) / FAILED_NAME).unlink(missing_ok=True)


def last_failure(root: Path, store: Any) -> dict[str, str] | None:
    """The post-commit sync's last failure ({"at", "error", "log"}), unless a sync finished after it (the
    newest sync STORE recorded, of any source): the newer of the failure mark this release leaves and the
    log's last word when it is a failure. The log is read too, so a failure written by another NexusMem
    (an older install still named in the hook) is found; a line without a date (older releases wrote none)
    is dated by the log's last change."""
    synced = [int(s["last_sync"]) for s in store.sources() if s.get("last_sync")]
    synced_after_ms = max(synced) if synced else None
    path = paths.state_dir(root) / LOG_NAME
    found = [f for f in (_logged_failure(path), _marked_failure(root)) if f is not None]
    if not found:
        return None
    # The mark's time is exact; the log's is to the second, which a source the failed run stored (git,
    # before the diff filled the disk) may follow within the same second.
    moment, error = max(found, key=lambda f: f[0])
    if synced_after_ms is not None and synced_after_ms >= moment * 1000:
        return None  # a sync since (by hand, or the next commit's) caught up
    at = datetime.fromtimestamp(moment, timezone.utc).isoformat(timespec="seconds")  # UTC, as every date
    return {"at": at, "error": error, "log": str(path)}


@dataclass
class FailureAdvice:
    """What doctor and status say of the post-commit sync's last failure: DETAIL, the command that fixes it,
    and WHY that command when it is more than a sync."""

    detail: str
    fix: str
    why: str | None = None


def failure_advice(root: Path, failed: dict[str, str], store_fix: str | None = None) -> FailureAdvice:
    """What happened and the fix for FAILED, the post-commit sync's last failure (last_failure): what doctor
    and status both say. The fix is a sync, or STORE_FIX when doctor found the store needs one first; when
    the failure is an older install's refusal of the memory a newer release upgraded
    (migrations.refused_as_newer), it says which install that was, when its words or the sync hooks here
    name it (a release before the refusal named its program logged "…; upgrade it", meaning itself), and
    the fix points the hooks at this install first when they still run another (a bare sync is undone by
    the next commit's)."""
    from nexusmem.install import git_hooks
    from nexusmem.store import migrations

    detail = f"the post-commit sync failed at {failed['at']}: {failed['error']} (log: {failed['log']})"
    fix = store_fix or "nexusmem sync"
    refused = migrations.refused_as_newer(failed["error"])
    if refused is None:
        return FailureAdvice(detail, fix)
    newer, older, program = refused
    runs: dict[str, list[str]] = {}  # another NexusMem a sync hook here runs: the hooks that run it
    for name in git_hooks.SYNC_HOOKS:
        state = git_hooks.status(name, root)
        command = state.fallback or state.command
        if state.installed and command and not git_hooks.is_this_nexusmem(command):
            runs.setdefault(command, []).append(name)

    def hooks_run(command: str) -> str:
        names = runs[command]
        listed = names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"
        return f"{command} (run by the {listed} hook{'s' if len(names) > 1 else ''} here)"

    if program is not None:
        who = hooks_run(program) if program in runs else program
    elif runs:
        who = " or ".join(hooks_run(command) for command in runs)
    else:
        who = "one no sync hook here runs now"
    detail += (
        f": an older NexusMem (schema {older}), {who}, refused this memory, which a newer release upgraded to"
        f" schema {newer}: that install is the one to upgrade, not the memory"
    )
    if not runs:
        return FailureAdvice(detail, fix)
    return FailureAdvice(
        detail,
        f"nexusmem hook git-post install && {fix}",
        "points the sync hooks at this install, then catches up",
    )


def _logged_failure(path: Path) -> tuple[float, str] | None:
    """(when, error) of the log's last word when it is a failure; None when it is a run that worked."""
    read = _log_tail(path, 8192)
    if read is None:
        return None
    tail, changed = read
    for line in reversed(tail.splitlines()):
        line = line.strip()
        if not line:
            continue
        head, sep, error = line.partition("Error: ")
        if not sep or (head and not head.rstrip().endswith(":")):
            return None  # the last word is a run that worked (or marked pending)
        when = head.split(" ", 1)[0] if head else ""
        try:
            moment = datetime.fromisoformat(when).timestamp() if when else changed
        except ValueError:
            moment = changed
        return moment, error.strip()
    return None


def _marked_failure(root: Path) -> tuple[float, str] | None:
    """(when, error) of the failure mark (mark_failed), None without one."""
    mark = paths.state_dir(root) / FAILED_NAME
    try:
        moment = mark.stat().st_mtime
        error = paths.read_small_text(mark).strip()
    except (OSError, UnicodeDecodeError):
        return None
    return moment, error or f"its error could not be written to {LOG_NAME} either (is the disk full?)"


def _team_configured(root: Path) -> bool:
    """Whether the config names a team store (a cheap text check: nexusmem.team and psycopg load only
    then) or NEXUSMEM_TEAM_URL is set."""
    if os.environ.get("NEXUSMEM_TEAM_URL"):
        return True
    try:
        # Never a plain read: a FIFO put there would hang the post-commit sync for good. A file that cannot
        # be read is the sync's to report (config.load names it).
        text = paths.read_small_text(paths.config_path(root))
    except (OSError, UnicodeDecodeError):
        return False
    return '"team"' in text and "postgres" in text


def spawn_detached(start: Path | None = None) -> bool:
    """Start `nexusmem sync --auto` in its own session, output to the auto-sync log, and return at once.

    For callers that cannot detach with a shell (the pre-commit framework's post-commit stage runs a Python
    entry point and waits for it). False when there is no repository memory to sync.
    """
    import subprocess

    from nexusmem import gitcmd

    root = paths.find_root_fast(start or Path.cwd())
    if root is None or not paths.state_dir(root).is_dir():
        return False
    with os.fdopen(private.open_fd(log_path(root), os.O_WRONLY | os.O_APPEND), "ab") as log:
        subprocess.Popen(
            [sys.executable, "-m", "nexusmem", "sync", "--auto"],
            cwd=root,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            env=gitcmd.clean_env(),  # the hook's GIT_DIR/GIT_INDEX_FILE must not steer the sync
            start_new_session=True,
            close_fds=True,
        )
    return True


if __name__ == "__main__":
    # `python -m nexusmem.autosync`: the pre-commit framework's nexusmem-sync hook. Never fails a commit.
    try:
        spawn_detached()
    except Exception as exc:  # a hook fails open: say why on stderr, exit 0
        print(f"nexusmem: auto-sync not started: {exc}", file=sys.stderr)
