"""The commands the hooks logged since a memory's last sync, before a search: MCP `search_memory` stores them
first (catch_up_shell: the agent's test run a minute ago is found); the command line's `query` says how many
there are (unsynced_commands), since storing them would cost a cold query its budget (a shell sync: ~100 ms).
Both read the log past the memory's shell cursor the same way (_past_cursor).

Light to import: nexusmem.sync is loaded only to store commands.
"""

from __future__ import annotations

import os
from pathlib import Path

from nexusmem import paths
from nexusmem import project as project_mod

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from nexusmem.project import Project
    from nexusmem.store import Store

# The most of the hook log a search stores first (~2,000 commands): a recent run is found at once, and a
# long backlog (50,000 unsynced commands took 11 s) is left to the next sync rather than held in a search.
CATCH_UP_MAX_BYTES = 512 * 1024
BACKLOG = -1  # catch_up_shell, unsynced_commands: a backlog over CATCH_UP_MAX_BYTES, left to the next sync
# How long the catch-up's write waits for another process's write lock (a `nexusmem review`, a script's open
# transaction: not a sync, whose run lock it sees): it waited the store's 15 s before the search could start.
CATCH_UP_BUSY_MS = 100
# The layout version of the shell source's cursor (sources/shell/tail.py CURSOR_VERSION, not imported for it).
_SHELL_CURSOR_VERSION = 1
# root → the hook log's (device, inode, size, mtime) when catch_up_shell last found nothing left to store.
_caught_up: dict[Path, tuple[int, int, int, int]] = {}


def _past_cursor(project: Project, store: Store | None = None) -> tuple[str | None, int] | None:
    """(PROJECT's memory's shell cursor, how many bytes of the hook log lie past it), or None when there is no
    log or the shell source is off. STORE: the memory, already open (else opened read-only here). A log
    that has not grown past the cursor costs a stat and the cursor: the log reader is not even loaded."""
    log_path = paths.shell_log_path()
    try:
        st = os.stat(log_path)
    except OSError:
        return None
    if not bool(project.config.get("sources", {}).get("shell", {}).get("enabled", True)):
        return None
    if store is None:
        with project.open_store(readonly=True) as opened:
            cursor = opened.cursor("shell")
    else:
        cursor = store.cursor("shell")
    from nexusmem.sources.cursor import decode_cursor as decoded

    saved = decoded(cursor, _SHELL_CURSOR_VERSION).get("log")
    if isinstance(saved, dict) and (saved.get("dev"), saved.get("ino"), saved.get("offset")) == (
        st.st_dev,
        st.st_ino,
        st.st_size,
    ):
        return cursor, 0  # the same file, read to its end
    from nexusmem.sources.shell.tail import decode_cursor, resume_offset

    offset = resume_offset(log_path, st, decode_cursor(cursor).get("log"))
    return cursor, max(st.st_size - offset, 0)


def catch_up_shell(root: Path) -> int:
    """Store the commands the prompt hooks logged since ROOT's memory's last sync, when there are any: what an
    agent asks mid-task ("why is the test failing") is about the run it has just made, and a sync otherwise
    came only with the next commit. Words only (the next full sync gives them vectors), and never waits: a
    sync running meanwhile adds them, and another process's write transaction makes it give up (StoreError).
    Returns how many were added (0: nothing new, or another sync runs; BACKLOG: more than CATCH_UP_MAX_BYTES
    wait, left to the next sync)."""
    try:
        st = os.stat(paths.shell_log_path())
    except OSError:
        return 0
    seen = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
    if _caught_up.get(root) == seen:
        return 0  # the log has not moved since this process last looked: a stat per search
    project = project_mod.at(root)
    past = _past_cursor(project)
    if past is None:
        return 0
    if not past[1]:
        _caught_up[root] = seen
        return 0
    if past[1] > CATCH_UP_MAX_BYTES:
        return BACKLOG  # weeks without a sync: a search must not wait for it; the next sync reads it
    from nexusmem import sync

    try:
        summary = sync.sync(root, only=["shell"], embed=False, wait=0, busy_ms=CATCH_UP_BUSY_MS)
    except sync.SyncBusyError:
        return 0
    _caught_up[root] = seen
    return summary.added


def unsynced_note(count: int) -> str | None:
    """What an answer (`nexusmem query`) and `nexusmem status` say of COUNT (unsynced_commands) commands not
    synced yet; None for none."""
    if count == BACKLOG:
        return "many commands were logged since this memory's last sync and are not searched: run `nexusmem sync`"
    if count:
        return f"{count} newer command(s) run here are not synced yet, so not searched: run `nexusmem sync`"
    return None


def unsynced_at(root: Path, store: Store) -> int:
    """unsynced_commands of the project at ROOT (STORE: its memory, open); 0 when that cannot be told (its
    config, the log): an answer across projects goes on without the note."""
    from nexusmem.errors import NexusMemError

    try:
        return unsynced_commands(project_mod.at(root), store)
    except (NexusMemError, OSError):
        return 0


def unsynced_commands(project: Project, store: Store | None = None) -> int:
    """How many commands run in PROJECT's repository the hooks logged since its memory's last sync (STORE:
    that memory, open), NexusMem's own left out (a linked worktree's are not told apart without git: not
    counted; an agent's call logged twice, by its hook at two scopes, counts once); BACKLOG when more than CATCH_UP_MAX_BYTES of log wait. What `nexusmem query` says it did not
    search."""
    past = _past_cursor(project, store)
    if past is None or not past[1]:
        return 0
    if past[1] > CATCH_UP_MAX_BYTES:
        return BACKLOG
    from nexusmem.sources.shell.launchers import runs_nexusmem
    from nexusmem.sources.shell.tail import unsynced_tail

    count = 0
    calls: set[str] = set()  # an agent's call logged twice (its hook at both scopes) is one command
    own: dict[str, bool] = {}  # a real log repeats a few commands many times
    for command in unsynced_tail(project.root, past[0], redacted=False):
        mine = own.get(command.command)
        if mine is None:
            mine = own[command.command] = runs_nexusmem(command.command)
        if mine:
            continue
        if command.call_key is not None:
            if command.call_key in calls:
                continue
            calls.add(command.call_key)
        count += 1
    return count
