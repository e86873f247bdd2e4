"""Where things live: the repository root, its .nexusmem/ directory, the user directory. Stdlib only."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from nexusmem.errors import GitCommandError, NotARepositoryError, RefusedRepositoryError

STATE_DIR = ".nexusmem"
DB_NAME = "memory.db"
CONFIG_NAME = "config.json"


HOME_VARIABLE = "NEXUSMEM_HOME"


def _home_setting() -> tuple[Path | None, str | None]:
    """$NEXUSMEM_HOME as a path (None when unset or empty), or why it cannot be one.

    Absolute, or `~` / `~/...` (the user's home, as the prompt hooks read it too). Anything else is relative:
    it would name a different folder in every directory a command runs in (a memory per folder, hook lines
    scattered), so it is never used."""
    raw = os.environ.get(HOME_VARIABLE)
    if not raw:
        return None, None
    value = raw
    if value == "~" or value.startswith(("~/", "~" + os.sep)):
        value = str(Path.home()) + value[1:]
    path = Path(value)
    if not path.is_absolute():
        return None, (
            f"{HOME_VARIABLE} must be an absolute path, got {raw!r}: a relative folder would be a different"
            " memory in every directory; set it to a full path, or unset it"
        )
    if path.exists() and not path.is_dir():
        return None, f"{HOME_VARIABLE} is {raw!r}, which is not a folder: point it at a folder, or unset it"
    return path, None


def user_dir() -> Path:
    """~/.nexusmem, or $NEXUSMEM_HOME when set to an absolute path. A relative value is ignored here: the
    commands a person types refuse it first (cli/main.py, user_dir_problem), while what runs unattended (the
    commit hooks' precheck and `sync --auto`, as the prompt hooks do) goes on with the default."""
    path, _ = _home_setting()
    return path if path is not None else Path.home() / ".nexusmem"


def user_deny_list() -> Path:
    """The user-wide deny-list (`forget --global`), which every project's sync honours."""
    return user_dir() / "deny-list.json"


def user_dir_problem() -> str | None:
    """Why $NEXUSMEM_HOME is not used ("NEXUSMEM_HOME must be an absolute path, got '.nexus'"), or None."""
    return _home_setting()[1]


def make_user_dir() -> Path:
    """The user directory, created 0700 if missing (never as root under sudo inside another user's tree:
    private.refuse_root_in_anothers)."""
    from nexusmem import private

    path = user_dir()
    if not path.is_dir():
        private.refuse_root_in_anothers(path)
    return private.make_dir(path)


def ensure_user_dir() -> Path:
    """The user directory, created 0700 if missing, with every file in it made 0600 (fixing older installs)."""
    from nexusmem import private

    path = make_user_dir()
    private.fix_tree(path)
    return path


def tighten_user_dir() -> None:
    """An existing user directory of ours made 0700 with its files 0600 (an older install's 0755/0644, or
    files another program wrote there): by every command that opens it, as sync does. Nothing is created,
    and another user's folder is left alone (the commands refuse it). About one scandir."""
    path = user_dir()
    try:
        if path.stat().st_uid != os.getuid():
            return
    except (OSError, AttributeError):  # missing; or no getuid (Windows): modes mean nothing there
        return
    from nexusmem import private

    private.fix_tree(path)


def registry_path() -> Path:
    return user_dir() / "projects.json"


def shell_log_path() -> Path:
    return user_dir() / "shell-history.jsonl"


def find_root_fast(start: Path) -> Path | None:
    """Walk up from START to the first directory holding `.git` (a dir, or a file in worktrees/submodules).

    No process is started: this is what the hot paths use to decide quickly whether there is anything to do.
    """
    here = start.resolve()
    for candidate in (here, *here.parents):
        if (candidate / ".git").exists():
            return candidate
    return None


def git_dir(root: Path) -> Path | None:
    """The git directory of the work tree at ROOT (ROOT/.git, or where its `gitdir:` file points: a linked
    worktree's own, a submodule's), read from files without a process; None when unknown."""
    dot = root / ".git"
    if dot.is_dir():
        return dot
    try:
        text = dot.read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        return None
    if not text.startswith("gitdir:"):
        return None
    return (root / text[len("gitdir:") :].strip()).resolve()


def git_common_dir(root: Path) -> Path | None:
    """The git directory ROOT's work tree shares with its worktrees (ROOT/.git, or for a linked worktree the
    one its `gitdir:` file's `commondir` names), read from files without a process; None when unknown."""
    gitdir = git_dir(root)
    if gitdir is None or gitdir == root / ".git":
        return gitdir
    try:
        return (gitdir / (gitdir / "commondir").read_text(encoding="utf-8").strip()).resolve()
    except (OSError, UnicodeDecodeError):  # a submodule's .git file: its git dir is not shared
        return gitdir if gitdir.is_dir() else None


def main_worktree(root: Path) -> Path | None:
    """The main work tree of the linked worktree at ROOT (`git worktree add`), None for any other root (a main
    work tree, a submodule, or a worktree of a bare repository, which has no main one to share a memory with)."""
    if not (root / ".git").is_file():
        return None
    common = git_common_dir(root)
    if common is None or common.name != ".git" or not common.is_dir() or common.parent == root:
        return None
    return common.parent


def repo_root(start: Path | str | None = None) -> Path:
    """The top of the git work tree containing START (default: the current directory), asking git itself.

    Raises NotARepositoryError, GitNotInstalledError or GitStartError: three different problems, three messages.
    """
    where = Path(start) if start is not None else Path.cwd()
    if not where.exists():
        raise NotARepositoryError(f"{where}: no such directory")
    given = where  # what the error names (`-C notes.txt`), not the folder it is in
    if where.is_file():
        where = where.parent
    from nexusmem import gitcmd  # subprocess: not for the process-free paths (find_root_fast)

    try:
        out = gitcmd.run(["rev-parse", "--show-toplevel"], where)
    except GitCommandError as exc:
        if refuses_owner(str(exc)):
            raise refused(where) from exc
        code, bare = gitcmd.run_ok(["rev-parse", "--is-bare-repository"], where)
        if code == 0 and bare.strip() == b"true":
            # `git init` there would be wrong advice: it is a repository, one with no files checked out.
            raise NotARepositoryError(
                f"{where} is a bare git repository (no work tree): run NexusMem in a clone of it (`git clone"
                f" {where}`), where its files are checked out"
            ) from exc
        code, inside = gitcmd.run_ok(["rev-parse", "--is-inside-git-dir"], where)
        if code == 0 and inside.strip() == b"true":
            raise NotARepositoryError(
                f"{where} is inside a repository's .git directory, not its work tree: run NexusMem in the work"
                " tree (the folder that holds .git), or pass -C PATH"
            ) from exc
        if os.environ.get("GIT_DIR") or os.environ.get("GIT_WORK_TREE"):
            # Git's own hook environment is cleared for every git NexusMem runs (gitcmd.clean_env), so a
            # repository reached only through these (`git --git-dir=~/.dotfiles --work-tree=~`) is not found.
            raise NotARepositoryError(
                f"{where} is not inside a git work tree of its own: NexusMem does not follow GIT_DIR or"
                " GIT_WORK_TREE (a repository kept as `--git-dir=... --work-tree=...`, such as dotfiles, is"
                " not supported); run it in a clone whose .git is in its work tree"
            ) from exc
        what = f"{given} (a file)" if given != where else where
        raise NotARepositoryError(
            f"{what} is not inside a git repository (run `git init` first, or pass -C PATH)"
        ) from exc
    text = os.fsdecode(out.rstrip(b"\n"))
    if not text:
        raise NotARepositoryError(f"{where} is inside a .git directory, not a work tree")
    root = Path(text)
    if "GIT_DIR" in os.environ or "GIT_WORK_TREE" in os.environ:
        _say_git_env_ignored(root)
    return root


_said_git_env: set[Path] = set()


def _common_of(gitdir: Path) -> Path:
    """The git directory GITDIR shares with its worktrees (a linked worktree's names it in `commondir`).
    GITDIR may be a `.git` file (a linked worktree's, a submodule's: GIT_DIR=.git there), which git follows
    to the directory its `gitdir:` line names."""
    if gitdir.is_file():
        try:
            text = gitdir.read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError):
            return gitdir
        if text.startswith("gitdir:"):
            gitdir = (gitdir.parent / text[len("gitdir:") :].strip()).resolve()
    try:
        return (gitdir / (gitdir / "commondir").read_text(encoding="utf-8").strip()).resolve()
    except (OSError, UnicodeDecodeError):
        return gitdir


def _say_git_env_ignored(root: Path) -> None:
    """One line on stderr (once a process) when GIT_DIR or GIT_WORK_TREE name another repository than ROOT,
    the one found from the directory: NexusMem does not follow them (gitcmd.clean_env), and answered from
    ROOT's memory without a word. Git's own hooks set GIT_DIR to the repository they run in (a linked
    worktree's git directory, which shares ROOT's), which is not another."""
    here = Path.cwd()
    git_env = {name: os.environ.get(name, "") for name in ("GIT_DIR", "GIT_WORK_TREE")}
    named = {name: (here / value).resolve() for name, value in git_env.items() if value}
    ours = git_common_dir(root)
    elsewhere = [
        name
        for name, path in named.items()
        if (_common_of(path) != ours if name == "GIT_DIR" else path != root.resolve())
    ]
    if not elsewhere or root in _said_git_env:
        return
    _said_git_env.add(root)
    import sys

    from nexusmem.text import one_line

    shown = ", ".join(f"{name}={one_line(git_env[name])}" for name in elsewhere)
    print(
        f"nexusmem: warning: {shown} not followed (a `--git-dir=… --work-tree=…` repository is not"
        f" supported): using {one_line(str(root))}, the repository found from the directory",
        file=sys.stderr,
    )


def refuses_owner(message: str | bytes) -> bool:
    """Whether git's MESSAGE (its stderr, or an error quoting it) refuses the repository for its owner."""
    if isinstance(message, bytes):
        return b"dubious ownership" in message
    return "dubious ownership" in message


def safe_directory_fix(where: Path) -> str:
    """The git command that makes git accept the repository at WHERE, another user's."""
    import shlex

    return f"git config --global --add safe.directory {shlex.quote(str(where))}"


def refused(where: Path) -> RefusedRepositoryError:
    """The error for a repository at WHERE that git refuses for its owner (git's safe.directory check)."""
    return RefusedRepositoryError(
        f"git refuses the repository at {where}: it belongs to another user (git's safe.directory check);"
        f" if you trust it: {safe_directory_fix(where)}"
    )


def tracked_name(raw: bytes) -> str:
    """A file name as git gives it (bytes) in the form memory keeps: UTF-8, each byte that is not part of
    one spelled `\\xNN`. Two names that differ only in such bytes stay two files (U+FFFD made them one node,
    and one diff was lost), the form is the same on every scan, and SQLite gets valid text."""
    return raw.decode("utf-8", "backslashreplace")


def with_bytes(text: str) -> str | None:
    """TEXT (a path as NexusMem prints it, or as the prompt hooks log it) with each `\\xNN` of a byte
    0x80-0xff back as that byte, as Python names a path holding it (a surrogate escape); None when it has
    none. The inverse of the spelling every output uses (terminal.terminal_safe, tracked_name)."""
    if "\\x" not in text:
        return None
    import re  # not at the top: the hooks' paths import this module and never get here

    data, count = re.subn(
        rb"\\x([89a-fA-F][0-9a-fA-F])", lambda m: bytes([int(m.group(1), 16)]), os.fsencode(text)
    )
    return os.fsdecode(data) if count else None


def given_dir(text: str) -> str:
    """The folder TEXT (a `-C PATH`) names: TEXT, or, when nothing exists at TEXT as written, TEXT with each
    `\\xNN` read back as its byte (with_bytes) when that exists: a path NexusMem printed for a folder whose
    name is not UTF-8 (`caf\\xe9-repo`), pasted back. A folder whose name holds a real backslash is the
    one meant when it exists."""
    if not text or "\\x" not in text or os.path.lexists(text):
        return text
    raw = with_bytes(text)
    return raw if raw is not None and os.path.lexists(raw) else text


def state_dir(root: Path) -> Path:
    return root / STATE_DIR


def state_in_the_way(state: Path) -> tuple[str, str] | None:
    """(what is in the place of STATE, .nexusmem/, and how to clear it) when no memory can be made there:
    a file (one a repository tracks, say) or a symbolic link to nothing; None otherwise. What sync and
    init stop on, and what doctor, `hook git-post install`, status, query and precheck say (the auto-sync
    builds nothing there)."""
    if state.is_symlink() and not state.exists():
        return (
            f"{state} is a symbolic link to {os.readlink(state)}, which does not exist",
            "create that directory, or remove the link and run the command again",
        )
    if state.exists() and not state.is_dir():
        return (
            f"{state} is a file, not a directory",
            "move it aside (NexusMem keeps its memory in that directory)",
        )
    return None


def db_path(root: Path) -> Path:
    return state_dir(root) / DB_NAME


class StashedMemory:
    """A memory `git stash --all` took: the stash ENTRY (`stash@{1}`) that holds it, and the work tree it was
    stashed in (ROOT: where `git stash pop` brings it back). A plain class: paths is on the hooks' hot paths,
    which load neither typing nor dataclasses."""

    __slots__ = ("entry", "root")

    def __init__(self, entry: str, root: Path) -> None:
        self.entry = entry
        self.root = root


def stashed_memory(root: Path, *, own: bool = False) -> StashedMemory | None:
    """The newest stash entry whose untracked-and-ignored files hold the memory.db ROOT would use, or None.
    `git stash --all` (`push -a`) takes .nexusmem/ with it, an ignored folder: a memory built in its place
    (verdicts, the deny-list and all that was erased gone) then makes `git stash pop` fail on every file
    that is back, the user's own stashed work with them. The memory ROOT would use is its own (an entry
    stashed in ROOT) or, in a linked worktree, the main work tree's, which it answers from
    (project.memory_root); OWN asks for ROOT's own alone (a sync building one there). Every work tree of a
    repository shares refs/stash: an entry stashed in another is never called ROOT's. Asked only where
    memory.db is missing (what sync, the auto-sync, status, query, doctor, precheck and MCP say or refuse):
    one git process when the repository has no stash, two when it has, and when an entry holds a memory,
    one for the work trees and, when there are several, one for each one's HEAD log (_stashed_in)."""
    from nexusmem import gitcmd

    code, out = gitcmd.run_ok(["log", "-g", "--format=%H%x09%P%x09%ct%x09%s", "refs/stash", "--"], root)
    if code != 0 or not out.strip():  # no stash (git says "bad revision"), or git cannot tell
        return None
    entries = [line.split(b"\t", 3) for line in out.splitlines()]
    wanted = f"^3:{STATE_DIR}/{DB_NAME}\n".encode()
    # One `cat-file` for every entry: `<sha>^3` is the commit of its untracked (and ignored) files, and an
    # entry made without -u or -a has no third parent ("missing").
    code, found, _err = gitcmd.run_full(
        ["cat-file", "--batch-check"], root, input=b"".join(entry[0] + wanted for entry in entries)
    )
    if code != 0:
        return None
    holding = [n for n, line in enumerate(found.splitlines()) if line.split()[1:2] == [b"blob"]]
    if not holding:
        return None
    here = os.path.realpath(root)
    main, trees = _work_trees(root)
    for number in holding:
        fields = entries[number]
        # Where git cannot tell (one work tree, no HEAD log, two alike), the memory is said to be where a
        # repository's memory is unless a worktree has its own: the main work tree's.
        where = (_stashed_in(trees, fields) if len(trees) > 1 and len(fields) == 4 else None) or main or here
        if where == here or (where == main and not own):
            return StashedMemory(f"stash@{{{number}}}", Path(where))
    return None


def _work_trees(root: Path) -> tuple[str | None, list[tuple[str, bytes]]]:
    """The main work tree of ROOT's repository (None: a bare one) and every work tree (`git worktree list`),
    each as (its real path, the branch checked out there, b"" when none), those whose folder is gone left
    out."""
    from nexusmem import gitcmd

    code, out = gitcmd.run_ok(["worktree", "list", "--porcelain"], root)
    main: str | None = None
    trees: list[tuple[str, bytes]] = []
    for number, block in enumerate(out.split(b"\n\n") if code == 0 else ()):
        lines = block.split(b"\n")
        if not lines[0].startswith(b"worktree ") or b"bare" in lines:
            continue
        path = os.path.realpath(os.fsdecode(lines[0][len(b"worktree ") :]))
        main = path if number == 0 else main
        heads = [
            line[len(b"branch refs/heads/") :] for line in lines if line.startswith(b"branch refs/heads/")
        ]
        if os.path.isdir(path):
            trees.append((path, heads[0] if heads else b""))
    return main, trees


def _stashed_in(trees: list[tuple[str, bytes]], entry: list[bytes]) -> str | None:
    """The work tree of TREES the stash ENTRY (sha, parents, time, subject) was made in, or None when git's
    records cannot tell. An entry's first parent is the commit HEAD was at when it was made: the work trees
    whose HEAD log has HEAD there at that time (a line of that second, or the newest before it), and of two
    alike (a worktree added or a commit made in the same second) the one that has the branch the entry names
    (`WIP on main: …`; a branch is checked out in one work tree at a time)."""
    from nexusmem import gitcmd

    parent, when, subject = entry[1].split(b" ")[0], entry[2].strip(), entry[3]
    if not when.isdigit():
        return None
    made = int(when)
    at: list[tuple[str, bytes]] = []
    for path, branch in trees:
        code, out = gitcmd.run_ok(["reflog", "show", "--date=unix", "--format=%H %gd", "HEAD", "--"], path)
        was: set[bytes] = set()  # where HEAD may have been then: a second holds lines in no known order
        for line in out.splitlines() if code == 0 else ():  # newest first
            sha, _, name = line.partition(b" ")
            moment = name[name.rfind(b"@{") + 2 : -1]
            if not moment.isdigit() or int(moment) > made:
                continue
            was.add(sha)
            if int(moment) < made:
                break
        if parent in was:
            at.append((path, branch))
    if len(at) > 1:
        on = subject.partition(b": ")[0].removeprefix(b"WIP on ").removeprefix(b"On ")
        at = [(path, branch) for path, branch in at if branch and branch == on]
    return at[0][0] if len(at) == 1 else None


def stash_pop(entry: str) -> str:
    """The command that brings back the stash ENTRY (quoted: fish expands `{1}`)."""
    return "git stash pop" if entry == "stash@{0}" else f"git stash pop '{entry}'"


def stashed_text(root: Path, stashed: StashedMemory) -> str:
    """What to say of ROOT's memory, which stashed_memory found in STASHED, and how to bring it back: in a
    linked worktree that answers from the main work tree's memory, it is there it is popped."""
    if os.path.realpath(stashed.root) == os.path.realpath(root):
        return (
            f"the memory of {root} is in {stashed.entry} (`git stash --all` took .nexusmem/ with it):"
            f" `{stash_pop(stashed.entry)}` brings it back"
        )
    import shlex

    return (
        f"the memory of {stashed.root} (the main work tree, whose memory this worktree answers from) is in"
        f" {stashed.entry} (`git stash --all` took .nexusmem/ with it there):"
        f" `cd {shlex.quote(str(stashed.root))} && {stash_pop(stashed.entry)}` brings it back"
    )


# A sync needs room to write: its pages go to the WAL before the database, and on a full disk it fails (the
# post-commit one without a word: its log line cannot be written either). Less free space than twice the
# store, but never asked for more than LOW_SPACE_MAX nor less than LOW_SPACE_MIN, is said by status and doctor.
LOW_SPACE_MAX = 50 * 1024 * 1024
LOW_SPACE_MIN = 1024 * 1024


def low_space(root: Path) -> tuple[int, int] | None:
    """(free bytes, the room a sync should have) on the file system holding ROOT's .nexusmem/, when it has
    less than that room (twice memory.db and its WAL, within LOW_SPACE_MIN..LOW_SPACE_MAX); else None (and
    where it cannot be asked: no statvfs, no folder)."""
    state = state_dir(root)
    try:
        info = os.statvfs(state)
    except (OSError, AttributeError):  # Windows has no statvfs
        return None
    import contextlib

    size = 0
    for name in (DB_NAME, DB_NAME + "-wal"):
        with contextlib.suppress(OSError):
            size += os.stat(state / name).st_size
    free = info.f_bavail * info.f_frsize
    room = min(max(2 * size, LOW_SPACE_MIN), LOW_SPACE_MAX)
    return (free, room) if free < room else None


def low_space_text(root: Path, low: tuple[int, int]) -> str:
    """What status and doctor say about low_space's LOW."""
    free, room = low
    return (
        f"the disk holding {state_dir(root)} has {free / 1e6:.1f} MB free, less than the {room / 1e6:.0f} MB a"
        " sync of this memory should have: a sync fails when the disk is full (the post-commit one without a"
        " line in its log)"
    )


def config_path(root: Path) -> Path:
    return state_dir(root) / CONFIG_NAME


def edit_target(path: Path) -> Path:
    """The file to rewrite when editing the user's file PATH: PATH itself, or the file a symbolic link at
    PATH leads to (dotfile managers such as stow and yadm keep ~/.bashrc as a link into their repository;
    replacing the link with a copy would cut it off from them). OSError when the link leads to something
    that is not a regular file (/dev/null, a folder): nothing is written there."""
    if not path.is_symlink():
        return path
    target = Path(os.path.realpath(path))
    if target.exists() and not target.is_file():
        raise OSError(f"it is a link to {target}, which is not a regular file; add the lines by hand")
    return target


SMALL_FILE_LIMIT = 1 << 20  # a config or list of ours is a few KB


def read_small_text(path: Path, limit: int = SMALL_FILE_LIMIT) -> str:
    """The UTF-8 text of the small file PATH. FileNotFoundError when it does not exist; OSError (or
    UnicodeDecodeError) when it cannot be what it should: not a regular file (a FIFO would block every
    command, /dev/zero never ends), larger than LIMIT bytes, or a link to nothing."""
    if path.is_symlink() and not path.exists():
        raise OSError(f"it is a link to {os.readlink(path)}, which does not exist")
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError("not a regular file")
        chunks: list[bytes] = []
        size = 0
        while size <= limit:
            chunk = os.read(fd, limit + 1 - size)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        if size > limit:
            raise OSError(f"larger than {limit // 1024} KB: not a file NexusMem wrote")
    finally:
        os.close(fd)
    return b"".join(chunks).decode("utf-8")


def unreadable(path: Path, exc: OSError | UnicodeDecodeError) -> str:
    """One line saying why read_small_text could not read PATH: "PATH: not UTF-8 text (byte N)" or "PATH:
    cannot read: why"."""
    if isinstance(exc, UnicodeDecodeError):
        return f"{path}: not UTF-8 text (byte {exc.start})"
    return f"{path}: cannot read: {exc.strerror or exc}"


def first_sync_under_way(root: Path) -> bool:
    """Whether a sync is building ROOT's memory for the first time: the post-commit hook made .nexusmem/ and
    flagged the work (autosync.PENDING_NAME), the hook's sync holds its own lock (autosync.LOCK_NAME: it
    takes the flag away before the sync makes the store), or a sync holds its run lock (sync.RUN_LOCK_NAME)."""
    import time

    state = state_dir(root)
    try:  # the mark is left just before the sync starts; one a crash left behind is no sync under way
        age = time.time() - os.stat(state / "sync.pending").st_mtime
        flagged = -5 < age < PENDING_FRESH_SECONDS  # a mark dated ahead (a skewed clock) is no fresh one
    except OSError:
        flagged = False
    from nexusmem.oslock import held

    return flagged or held(state / "sync.lock") or sync_running(root)


def sync_running(root: Path) -> bool:
    """Whether a sync holds ROOT's run lock (sync.RUN_LOCK_NAME)."""
    from nexusmem.oslock import held

    return held(state_dir(root) / "sync.run.lock")


def stashed_unless_building(root: Path) -> StashedMemory | None:
    """stashed_memory(ROOT), asked before saying that its memory is still being built: the post-commit
    hook's pending mark beside a stashed memory is no sync (an older release's hook left it, and the sync
    it started refused), unless a sync runs there (`sync --ignore-stash` building a new one)."""
    return None if sync_running(root) else stashed_memory(root)


# Where the post-commit hook's syncs write (autosync.LOG_NAME), in .nexusmem/.
AUTO_SYNC_LOG_NAME = "auto-sync.log"


def first_sync_where(root: Path) -> str:
    """Where the first sync under way (first_sync_under_way) runs, as commands say it: " in the background
    (.nexusmem/auto-sync.log)" for the post-commit hook's, its log named when it is there; "" for a
    `nexusmem sync` run in a terminal, which writes no log (its progress is on that terminal)."""
    state = state_dir(root)
    if (state / AUTO_SYNC_LOG_NAME).is_file():
        return f" in the background ({STATE_DIR}/{AUTO_SYNC_LOG_NAME})"
    return " in the background" if (state / "sync.pending").exists() else ""


# How long the post-commit hook's "sync pending" mark counts as a sync about to start (it takes its lock
# within a second or two; one left by a crash would otherwise say "being built" for ever).
PENDING_FRESH_SECONDS = 120


# Left by a sync while it runs and taken away when it ends (with an error too: that one is reported): a sync
# killed or interrupted on the way (SIGKILL, Ctrl-C, a machine that went down) leaves it, and `status`,
# `doctor` and answers say the memory may be incomplete until the next sync ends.
UNFINISHED_NAME = "sync.unfinished"
# What a `sync --rebuild`'s mark holds (a plain sync's is empty): the rebuild is one transaction, so one
# stopped on the way left the memory as it was before it.
UNFINISHED_REBUILD = b"rebuild\n"
# How the mark of a sync of some sources only (`sync --source NAME`, the shell catch-up a search runs)
# starts, their names following: "sources shell\n". Only a sync that reads them all ends it, and such a
# sync leaves the mark of a sync that set out to do more (unfinished_scope).
UNFINISHED_SOURCES = "sources"
# What a plain sync's mark holds once every source is stored and the embedding pass has begun (mark_embedding):
# stopped then, no node is missing, only vectors. Read as a plain sync's mark (unfinished_scope: "all").
UNFINISHED_EMBEDDING = b"embedding\n"


def sync_running_since(root: Path) -> int | None:
    """When the sync of ROOT's memory running now started (its mark's time, epoch ms), None when none runs."""
    from nexusmem.oslock import held

    state = state_dir(root)
    if not held(state / "sync.run.lock"):
        return None
    try:
        return int(os.stat(state / UNFINISHED_NAME).st_mtime * 1000)
    except OSError:  # a forget or a team push holds the lock: no mark
        return None


def sync_unfinished(root: Path) -> int | None:
    """When the last sync of ROOT's memory was stopped before it ended (its mark is left and no sync holds
    the run lock): the time it started, epoch ms; else None."""
    state = state_dir(root)
    try:
        started = os.stat(state / UNFINISHED_NAME).st_mtime
    except OSError:
        return None
    from nexusmem.oslock import held

    if held(state / "sync.run.lock"):
        return None  # a sync is running now
    return int(started * 1000)


def marks_rebuild(mark: Path) -> bool:
    """Whether the unfinished-sync MARK (UNFINISHED_NAME) was left by a `sync --rebuild`."""
    return unfinished_scope(mark) == "rebuild"


def unfinished_scope(mark: Path) -> str | frozenset[str] | None:
    """What the stopped sync that left MARK (UNFINISHED_NAME) set out to do: "rebuild", "all" (a plain sync's
    mark, or one that cannot be read), or the names of the only sources it read; None when there is no mark."""
    try:
        text = read_small_text(mark)
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError):
        return "all"
    if text.encode() == UNFINISHED_REBUILD:
        return "rebuild"
    words = text.split()
    if len(words) > 1 and words[0] == UNFINISHED_SOURCES:
        return frozenset(words[1:])
    return "all"


def mark_embedding(state: Path) -> None:
    """Record in the mark of the plain sync running in STATE (a memory's state folder) that its sources are
    all stored and it is embedding: a stop from now on leaves every node in memory. Its time (when the sync
    started) is kept; a rebuild's or a sync of some sources only's mark, or none, is left as it is."""
    mark = state / UNFINISHED_NAME
    try:
        if read_small_text(mark) != "":
            return
        started = mark.stat()
        from nexusmem import private

        private.write_atomic(mark, UNFINISHED_EMBEDDING)
        os.utime(mark, ns=(started.st_atime_ns, started.st_mtime_ns))
    except (OSError, UnicodeDecodeError):
        return  # no mark (a pass run outside a sync), or one that cannot be read: nothing to record


def unfinished_text(root: Path, started_iso: str) -> tuple[str, str]:
    """What to say of the stopped sync of ROOT's memory that started at STARTED_ISO (sync_unfinished), and
    the arguments of the sync that finishes it: a stopped rebuild left the memory as it was (`sync
    --rebuild`), a stopped sync left out what it had not stored yet (`sync`)."""
    if marks_rebuild(state_dir(root) / UNFINISHED_NAME):
        return (
            f"the last `sync --rebuild` (started {started_iso}) was stopped before it ended: the memory is as it"
            " was before it",
            "sync --rebuild",
        )
    if _marks_embedding(state_dir(root) / UNFINISHED_NAME):
        return (
            f"the last sync (started {started_iso}) was stopped while it embedded: every node is stored, and"
            " those it had not embedded yet are found by their words until a sync embeds them (`nexusmem"
            " status` counts them)",
            "sync",
        )
    return (
        f"the last sync (started {started_iso}) was stopped before it ended: what it had not stored yet is not"
        " in memory",
        "sync",
    )


def _marks_embedding(mark: Path) -> bool:
    try:
        return read_small_text(mark).encode() == UNFINISHED_EMBEDDING
    except (OSError, UnicodeDecodeError):
        return False
