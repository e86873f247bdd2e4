"""A project: a git work tree with a .nexusmem/ directory. Finding it, initialising it, opening its store."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nexusmem import config, paths, private, secreturl
from nexusmem.errors import NexusMemError
from nexusmem.store import Store, open_store

if TYPE_CHECKING:
    from nexusmem.errors import NotInitialisedError
    from nexusmem.store.interface import SyncStore


# The migration that re-keys a memory whose project id held a credential of the origin URL (store.migrations).
CLEAN_ID_MIGRATION = 17


class Project:
    """ROOT's memory and its config. The project id (the normalised origin URL, which takes a `git config`
    process to read) is looked up on first use: a query never needs it."""

    def __init__(self, root: Path, config: dict[str, Any], id: str | None = None) -> None:
        self.root = root
        self.config = config
        self._id = id

    @property
    def id(self) -> str:
        if self._id is None:
            from nexusmem import identity  # hashlib and git's process: not for a query

            self._id = identity.project_id(self.root)
        return self._id

    def __repr__(self) -> str:
        return f"Project(root={self.root!r})"

    def with_config(self, config: dict[str, Any]) -> Project:
        """The same project with CONFIG (e.g. a source switched on for one run)."""
        return Project(self.root, config, self._id)

    @property
    def state_dir(self) -> Path:
        return paths.state_dir(self.root)

    @property
    def db_path(self) -> Path:
        return paths.db_path(self.root)

    def open_store(self, *, readonly: bool = False, note: Callable[[str], None] | None = None) -> Store:
        """This project's store; NOTE is told what opening it met: another process keeping it locked, a
        full disk (db.open_store)."""
        refuse_cut_short(self.root)
        return opened(open_store(self.db_path, readonly=readonly, note=note))


def opened(store: Store) -> Store:
    """STORE, just opened; when opening it re-keyed a project id that held a credential of the origin URL
    (migration 17), the registry's entries too: a hook of the release before wrote the id there as well."""
    if CLEAN_ID_MIGRATION in store.migrated:
        from nexusmem import registry

        registry.clean_ids()
    return store


def refuse_cut_short(root: Path) -> None:
    """Raise StoreError when ROOT's memory.db is an empty file (no write-ahead log either) though a sync once
    wrote it: the file was cut short (a full disk, a failed copy). Opened, it would be set up again empty and
    quietly, its trust verdicts, marks and deny-list gone, and the next sync would bring back from git every
    value `forget` had erased. An empty file no sync ever finished is a first sync stopped early: the next
    one sets it up. A stat, and the registry only for an empty file."""
    from nexusmem.store import health

    db = paths.db_path(root)
    if not health.holds_nothing(db):
        return
    from nexusmem import registry

    synced = registry.last_sync(root)
    if synced is None:
        return
    import time

    from nexusmem.errors import StoreError

    when = time.strftime("%Y-%m-%d %H:%M", time.localtime(synced / 1000))
    raise StoreError(
        f"{db} is empty (0 bytes), but a sync wrote this memory on {when}: the file was cut short (a full disk,"
        f" a failed copy?); {health.damaged_advice(db)}. Values you erased with `nexusmem forget` come back"
        " with the rebuild: forget them again (or `forget --import` an export)"
    )


def is_initialised(root: Path) -> bool:
    return paths.db_path(root).exists()


def refuse_stashed(root: Path) -> None:
    """Raise StoreError when the memory of ROOT, which has none, is in a stash entry made there
    (paths.stashed_memory): a sync builds no new one in its place (`git stash pop` would then fail on it)
    unless told to. A linked worktree whose main work tree's memory is stashed builds its own, as it does
    beside one that is there."""
    entry = paths.stashed_memory(root, own=True)
    if entry is not None:
        from nexusmem.errors import StoreError

        raise StoreError(
            f"{paths.stashed_text(root, entry)}; `nexusmem sync --ignore-stash` builds a new memory instead"
            f" (and that pop then stops on the files in .nexusmem/)"
        )


def init(start: Path | str | None = None, *, ignore_stash: bool = False) -> tuple[Project, bool]:
    """Create .nexusmem/ (.gitignore, config.json with every default, memory.db in WAL) and register it.

    Idempotent: an existing config is validated, never overwritten. Returns (project, created_anything).
    A memory that `git stash --all` took (paths.stashed_memory) is not replaced by a new one unless
    IGNORE_STASH: StoreError saying which entry holds it.
    """
    root = paths.repo_root(start)
    state = paths.state_dir(root)
    if not ignore_stash and not is_initialised(root):
        refuse_stashed(root)
    private.require_own(paths.user_dir())  # refused before anything is made: no half-made memory
    try:
        made_dir = created = _make_state_dir(state)
        ignore = state / ".gitignore"
        if not ignore.exists():
            private.write_atomic(ignore, b"*\n")
            created = True
        wrote_config = config.write_defaults(paths.config_path(root))
        created = wrote_config or created
    except OSError as exc:
        from nexusmem.errors import StoreError

        raise StoreError(f"{state}: cannot set up the memory directory: {exc.strerror or exc}") from exc
    db = paths.db_path(root)
    new_db = not db.exists()
    if new_db:
        created = True
        # The mark a sync stopped on the way left (a `sync --rebuild` killed after memory.db was deleted)
        # speaks of a memory that is gone: kept, it outlived the new one ("the memory is as it was before").
        with contextlib.suppress(OSError):
            (state / paths.UNFINISHED_NAME).unlink(missing_ok=True)
    refuse_cut_short(root)
    # The config is this user's when NexusMem wrote it here: in a folder it made, or in one the post-commit
    # hook made a moment before (it makes .nexusmem/ and leaves the rest to this sync). One that was there
    # already came with the repository, unless the memory in it says NexusMem made it here (made_here).
    with open_store(db, create=True) as store:
        if new_db:  # everything it will hold is redacted by this release's rules
            from nexusmem import redact

            with store.transaction():
                store.set_meta(redact.RULES_KEY, str(redact.RULES_VERSION))
        own = made_dir or wrote_config
        if own:
            mark_made_here(root, store)
        else:
            own = made_here(root, store)
    project = Project(root=root, config=config_of(root))
    from nexusmem import registry

    registry.register(root, project.id, own_dir=own)
    return project, created


# Meta key of the memory: {"ino": the inode of the .nexusmem/ folder NexusMem made on this machine}.
OWN_DIR_KEY = "project.own_dir"


def _state_ino(root: Path) -> int | None:
    """The inode of ROOT's .nexusmem/ folder; None when it cannot be read or the file system gives none (0:
    every folder would match it)."""
    try:
        return os.stat(paths.state_dir(root)).st_ino or None
    except OSError:
        return None


def made_here(root: Path, store: SyncStore | None = None) -> bool:
    """Whether ROOT's memory says NexusMem made its .nexusmem/ folder on this machine (mark_made_here): the
    folder's inode is the one recorded. A copy or an archive of the folder (one a repository ships with its
    memory.db) is a folder of another inode; a folder moved with `mv` keeps its own. What decides own_dir
    when the registry has no entry for ROOT (a projects.json that could not be read, NEXUSMEM_HOME changed, a
    repository moved), so that losing the registry does not make the user's own config one that came with
    the repository. STORE: ROOT's store, already open; else it is opened read-only, if there is one."""
    ino = _state_ino(root)
    if ino is None:
        return False
    try:
        if store is None:
            if not is_initialised(root):
                return False
            with open_store(paths.db_path(root), readonly=True) as opened_store:
                recorded = opened_store.get_meta(OWN_DIR_KEY)
        else:
            recorded = store.get_meta(OWN_DIR_KEY)
    except (NexusMemError, OSError):  # a memory that cannot be read says nothing
        return False
    import json

    try:
        data = json.loads(recorded) if recorded else None
    except ValueError:
        return False
    return isinstance(data, dict) and data.get("ino") == ino


def mark_made_here(root: Path, store: SyncStore) -> None:
    """Record in ROOT's memory (STORE) that NexusMem made its .nexusmem/ on this machine (made_here). Called
    when it does (init), and by a sync while the registry says so, for a memory set up before this was
    recorded or whose folder was copied by its user since."""
    ino = _state_ino(root)
    if ino is None or made_here(root, store):
        return
    import json

    with store.transaction():
        store.set_meta(OWN_DIR_KEY, json.dumps({"ino": ino}))


def _make_state_dir(state: Path) -> bool:
    """Create STATE (.nexusmem/); True when it did. What is in the way is named, never a traceback."""
    from nexusmem.errors import StoreError

    blocked = paths.state_in_the_way(state)
    if blocked is not None:
        raise StoreError(f"{blocked[0]}: {blocked[1]}")
    if state.exists():
        private.require_own(state)  # nothing written into another user's folder (or one a link leads to)
        return False
    private.make_dir(state)
    return True


def memory_root(root: Path) -> Path:
    """Where the work tree at ROOT keeps its memory: its own, or, in a linked worktree without one, the main
    work tree's (the shell source already counts worktrees as the repository). ROOT when neither has one."""
    if not is_initialised(root):
        main = paths.main_worktree(root)
        if main is not None and is_initialised(main):
            return main
    return root


def load(start: Path | str | None = None, *, require_init: bool = True) -> Project:
    """The project containing START, with its validated config: its memory_root's."""
    root = memory_root(paths.repo_root(start))
    if require_init and not is_initialised(root):
        raise no_memory_error(root)
    return Project(root=root, config=config_of(root))


def no_memory_error(
    root: Path,
    *,
    hint: str = "run `nexusmem sync` (it sets it up)",
    cannot: str = "`nexusmem sync` cannot make one",
) -> NotInitialisedError:
    """Why ROOT, which holds no memory, has none, as the error to raise (load, and the MCP tools with their
    own HINT and CANNOT): a stash entry holds it (a sync stops on it too), the first sync is still building it
    (FirstSyncRunningError: the post-commit hook's, whose run a second sync would wait for), something is in
    the place of .nexusmem/ (what to clear comes first), or none was made yet."""
    from nexusmem.errors import FirstSyncRunningError, NotInitialisedError

    stashed = paths.stashed_unless_building(root)
    if stashed is not None:
        return NotInitialisedError(paths.stashed_text(root, stashed))
    if paths.first_sync_under_way(root):
        return FirstSyncRunningError(
            root,
            f"the memory of {root} is still being built{paths.first_sync_where(root)}: try again in a moment",
        )
    blocked = paths.state_in_the_way(paths.state_dir(root))
    if blocked is not None:
        return NotInitialisedError(f"{root} has no NexusMem memory, and {cannot}: {blocked[0]}; {blocked[1]}")
    return NotInitialisedError(f"{root} has no NexusMem memory yet: {hint}")


def at(root: Path) -> Project:
    """The project at ROOT, the top of a work tree that holds a memory (sync has just found or made it):
    what load(ROOT) gives there, without asking git again for the top it already is."""
    return Project(root=root, config=config_of(root))


_warned: set[Path] = set()
_warned_url: set[Path] = set()  # whose config's team.url held a password: said once a process


def password_warning_said(root: Path) -> bool:
    """Whether this process has said (or, with doctor, reports itself) that ROOT's config's team.url holds a
    password; from now on it is not said again (see config_of)."""
    said = root in _warned_url
    _warned_url.add(root)
    return said


def config_of(root: Path) -> dict[str, Any]:
    """ROOT's validated config, minus the settings that reach beyond the repository (config.reaching_out)
    unless this machine's user stands behind them (registry.allows): a repository that brings its own
    .nexusmem/config.json cannot send its user's memory to a server of its choosing or turn on a source
    that reads beyond it. What is left out is said once a process, on stderr."""
    cfg = config.load(paths.config_path(root))
    refused = config.refused_team_url(paths.config_path(root))
    if refused is not None and root not in _warned_url:
        _warned_url.add(root)
        import sys

        print(
            f"nexusmem: warning: {secreturl.password_in_url(paths.config_path(root), refused)}",
            file=sys.stderr,
        )
    asks = config.reaching_out(cfg)
    if not asks:
        return cfg
    if allowed(root, asks):
        return cfg
    if root not in _warned:
        _warned.add(root)
        import sys

        listed = ", ".join(config.shown(k, v) for k, v in asks.items())
        print(
            f"nexusmem: warning: {paths.config_path(root)} came with the repository (git tracks it, or its"
            f" .nexusmem/ was not made by NexusMem on this machine), so these settings are not used: {listed}."
            " If you set them, run `nexusmem trust` here.",
            file=sys.stderr,
        )
    return config.without(cfg, asks)


def allowed(root: Path, asks: dict[str, Any]) -> bool:
    """Whether ROOT's config may use ASKS, its settings that reach beyond the repository (registry.allows;
    with no registry entry, what the memory says: made_here). What config_of and doctor decide by."""
    from nexusmem import registry

    return registry.allows(root, asks, tracked=config_tracked(root), made_here=lambda: made_here(root))


def config_tracked(root: Path) -> bool:
    """Whether git tracks ROOT's .nexusmem/config.json (NexusMem's .gitignore keeps it out: one that is
    tracked was force-added, and comes in with every pull). A process, asked only for a config that
    reaches beyond the repository."""
    from nexusmem import gitcmd

    relative = paths.config_path(root).relative_to(root).as_posix()
    code, _out = gitcmd.run_ok(["ls-files", "--error-unmatch", "--", relative], root)
    return code == 0


def raw_config(root: Path) -> dict[str, Any]:
    """ROOT's validated config as written, settings that reach beyond the repository included (trust)."""
    return config.load(paths.config_path(root))


def _work_tree_fast(start: Path) -> Path | None:
    """The work tree holding START as `git rev-parse --show-toplevel` names it, found without a process; None
    when only git can say (GIT_DIR or GIT_WORK_TREE set, START inside a `.git` directory or not a directory)."""
    if "GIT_DIR" in os.environ or "GIT_WORK_TREE" in os.environ:
        return None
    try:
        here = start.resolve()
    except OSError:
        return None
    if ".git" in here.parts or not here.is_dir():
        return None
    return paths.find_root_fast(here)


def own_root(start: Path) -> Path | None:
    """The root of the work tree holding START when it has a memory of its own, found without a process
    (sync: a linked worktree without one gets its own at its first sync); None otherwise."""
    root = _work_tree_fast(start)
    return root if root is not None and is_initialised(root) else None


def find(start: Path) -> Project | None:
    """The initialised project containing START, found without starting a process (paths.find_root_fast),
    or None whenever the answer or its error message needs git's own (load): no work tree above START,
    START inside a `.git` directory, GIT_DIR or GIT_WORK_TREE set, or no memory there. `git rev-parse` is
    a fork and an exec, ~10 ms of a cold `nexusmem query` on the 2-core build machine."""
    root = _work_tree_fast(start)
    if root is None:
        return None
    root = memory_root(root)
    return Project(root=root, config=config_of(root)) if is_initialised(root) else None
