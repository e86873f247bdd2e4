"""`nexusmem doctor`: is everything NexusMem installed still wired up? Each problem comes with its fix.

Fast on purpose (it is what you run when something feels off): no embedder is loaded (the builtin model is
only looked up), the store is opened read-only for `PRAGMA quick_check`, and a model server is probed with
one socket connect (0.5 s timeout) only when the project is configured to use one.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shlex
import shutil
import socket
import stat
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from nexusmem import paths, private, registry, timefmt
from nexusmem.errors import NexusMemError, RefusedRepositoryError
from nexusmem.install import agent_hooks, git_hooks, shell_hooks, uninstall
from nexusmem.ollama import EMBEDDER_FIX

# A log line newer than this counts as "recording"; older is worth a note (not a problem: maybe that shell
# is simply not used).
RECENT_SECONDS = 7 * 24 * 3600
LOG_TAIL_BYTES = 256 * 1024  # read at a time
LOG_SCAN_BYTES = 32 << 20  # read at most
# quick_check reads every page (~36 ms/MB here, see store/health.py): bounded so doctor stays quick on a
# very large store, which is then reported as not checked rather than as a problem.
DOCTOR_CHECK_SECONDS = 10.0
# How long doctor waits for another process's lock on the store (an `sqlite3` shell in a transaction,
# a backup tool): then it says the store is locked, rather than wait as a sync would.
DOCTOR_BUSY_SECONDS = 1.0
LOCKED = "another process holds it locked"


@dataclass
class Check:
    area: str  # "home" | "shell" | "agent" | "git" | "pre-commit" | "store" | "backend" | "embedder" | "registry"
    ok: bool
    detail: str
    fix: str | None = None  # the command that fixes it (problems only)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


class _LastRecords:
    """When each shell or agent last wrote to the hooks' log (epoch ms): read from the end back in chunks,
    only as far as a name asked for needs, at most LOG_SCAN_BYTES (a busy shell's 2,000 lines can hide
    another's newest one from a fixed tail)."""

    def __init__(self, log: Path) -> None:
        self.log = log
        self.newest: dict[str, int] = {}
        self.pos: int | None = None  # where the part not read yet ends
        self.partial = b""  # the start of a line cut by the chunk read before
        self.cut_short = False  # stopped at LOG_SCAN_BYTES, not at the start of the log

    def get(self, name: str) -> int | None:
        while name not in self.newest and self._more():
            pass
        return self.newest.get(name)

    def when(self, name: str) -> str:
        seen = self.get(name)
        if seen:
            return f"last recorded {_ago(seen)}"
        if self.cut_short:
            return f"nothing recorded from it in the newest {LOG_SCAN_BYTES >> 20} MB of the log"
        return "nothing recorded from it yet"

    def _more(self) -> bool:
        try:
            with self.log.open("rb") as handle:
                if self.pos is None:
                    self.pos = handle.seek(0, os.SEEK_END)
                read = handle.seek(0, os.SEEK_END) - self.pos
                if self.pos == 0 or read >= LOG_SCAN_BYTES:
                    self.cut_short = self.pos > 0
                    return False
                start = max(0, self.pos - LOG_TAIL_BYTES)
                handle.seek(start)
                data = handle.read(self.pos - start) + self.partial
        except OSError:
            return False
        self.pos = start
        if start > 0:
            self.partial, _, data = data.partition(b"\n")
        found: dict[str, int] = {}
        for raw in data.splitlines():
            try:
                line = json.loads(raw)
                shell, ts = str(line["shell"]), int(line["ts"])
            except (ValueError, KeyError, TypeError):
                continue
            found[shell] = max(ts, found.get(shell, 0))
        for shell, ts in found.items():
            self.newest.setdefault(shell, ts)
        return True


def _ago(ms: int) -> str:
    seconds = max(0, time.time() - ms / 1000)
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size:
            return f"{seconds / size:.0f} {unit} ago"
    return f"{seconds:.0f} s ago"


def _user_dir_owner() -> int | None:
    """The uid owning the user directory when that is not this user (None: ours, missing, or no uids)."""
    try:
        owner = os.stat(paths.user_dir()).st_uid
    except OSError:
        return None
    return owner if hasattr(os, "getuid") and owner != os.getuid() else None


def check_home(owner: int | None) -> list[Check]:
    """A $NEXUSMEM_HOME that cannot be used (relative, or not a folder): the commands refuse it, the hooks
    ignore it. A user directory another user owns (OWNER, from _user_dir_owner: made by root in a `sudo -E`
    shell): the hooks write nothing into it and the commands refuse it."""
    if owner is not None:
        where = paths.user_dir()
        detail = (
            f"{where} belongs to another user (uid {owner}): the shell hooks record nothing into it and nexusmem"
            " refuses it (a shell run as root with this HOME, `sudo -E -s` or `su -m`, may have made it)"
        )
        return [Check("home", False, detail, f'sudo chown -R "$(id -u):$(id -g)" {where}')]
    problem = paths.user_dir_problem()
    if problem is None:
        return _deny_list_check()
    detail = (
        f"{problem}: nexusmem commands refuse to run, and the hooks and precheck use {paths.user_dir()}"
        " instead"
    )
    return [
        Check(
            "home",
            False,
            detail,
            "set NEXUSMEM_HOME to a folder's full path (or unset it) where it is exported",
        )
    ]


def _deny_list_check() -> list[Check]:
    """The user-wide deny-list (`forget --global`) when it cannot be read: every sync refuses to run (a
    forgotten value could come back), and precheck leaves the hook log's unsynced commands out."""
    where = paths.user_deny_list()
    if not where.exists() and not where.is_symlink():
        return []
    from nexusmem.hygiene.denylist import DenyListError, load_global

    try:
        load_global()
    except DenyListError as exc:
        detail = f"{exc}: every sync stops on it, and precheck leaves out the commands not synced yet"
        fix = (
            f"mend {where} by hand (`python3 -m json.tool {where}` shows where it breaks) or put back your last"
            " `nexusmem forget --export`; moving it away would let its values back into memory"
        )
        return [Check("home", False, detail, fix)]
    return []


def check_shells() -> list[Check]:
    checks = []
    if shell_hooks.none_installed():
        # Information, not a problem: a person may keep NexusMem to commits, docs and the agents' commands.
        detail = (
            "no prompt hook installed: the commands you type are not recorded (only your shell history's"
            " tail, without exit codes); `nexusmem hook install` records them"
        )
        checks.append(Check("shell", True, detail))
    last = _LastRecords(paths.shell_log_path())
    for shell in shell_hooks.SHELLS:
        try:
            if not shell_hooks.is_installed(shell):
                continue
        except shell_hooks.ShellHookError as exc:
            checks.append(Check("shell", False, str(exc), f"nexusmem hook remove --shell {shell}"))
            continue
        rc = shell_hooks.rc_file(shell)
        script, gone = shell_hooks.block_script(shell)
        if gone:
            checks.append(
                Check(
                    "shell",
                    False,
                    f"{shell}: {rc} sources {script}, which is gone: nothing is recorded",
                    f"nexusmem hook install --shell {shell}",
                )
            )
            continue
        if shell_hooks.from_another(shell, script):
            checks.append(
                Check(
                    "shell",
                    False,
                    f"{shell}: {rc} sources another NexusMem's hook ({script}), not this one's",
                    f"nexusmem hook install --shell {shell}",
                )
            )
            continue
        if not shell_hooks.is_current(shell):
            # The same script, in a block an older release worded otherwise: `hook install` writes it anew.
            detail = (
                f"{shell}: the NexusMem block in {rc} is an older release's (it differs from what this"
                " release installs)"
            )
            checks.append(Check("shell", False, detail, f"nexusmem hook install --shell {shell}"))
        else:
            seen = last.get(shell)
            when = last.when(shell)
            stale = seen is not None and time.time() - seen / 1000 > RECENT_SECONDS
            checks.append(
                Check("shell", True, f"{shell}: hook in {rc}, {when}" + (" (a while ago)" if stale else ""))
            )
        for number, line in shell_hooks.prompt_command_overwrites() if shell == "bash" else ():
            detail = (
                f"bash: {rc} line {number} ({line[:60]}) replaces PROMPT_COMMAND after the NexusMem block,"
                " dropping the hook: bash shells record nothing"
            )
            fix = (
                f'keep what is there: PROMPT_COMMAND="...; $PROMPT_COMMAND" on line {number}, or move the'
                " NexusMem block below it"
            )
            checks.append(Check("shell", False, detail, fix))
        gap = shell_hooks.login_gap() if shell == "bash" else None
        if gap:
            detail = f"bash: {gap}, so those shells (tmux, ssh, macOS Terminal) record nothing"
            checks.append(Check("shell", False, detail, shell_hooks.login_fix()))
    return checks + _hooks_log_elsewhere()


def _hooks_log_elsewhere() -> list[Check]:
    """The hooks writing to ~/.nexusmem while the commands read $NEXUSMEM_HOME: the rc file exports it after
    the hook's block (or only some shells see it), and every command typed since is missing from memory."""
    default = Path.home() / ".nexusmem" / "shell-history.jsonl"
    used = paths.shell_log_path()
    if used == default:
        return []
    try:
        written = default.stat().st_mtime
    except OSError:
        return []
    try:
        newer = used.stat().st_mtime >= written
    except OSError:
        newer = False
    if newer or time.time() - written > RECENT_SECONDS:
        return []
    detail = (
        f"the prompt hooks are writing to {default}, but NEXUSMEM_HOME is {paths.user_dir()}: those commands"
        " never reach memory (is NEXUSMEM_HOME exported after the hook's block in your rc file?)"
    )
    fix = f"export NEXUSMEM_HOME={shlex.quote(str(paths.user_dir()))} before the NexusMem block, then open a new shell"
    return [Check("shell", False, detail, fix)]


def check_agents(root: Path | None) -> list[Check]:
    """Each installed agent hook: present and pointing at this NexusMem, and when it last recorded."""
    checks = []
    last = _LastRecords(paths.shell_log_path())
    scopes: list[tuple[str, Path | None]] = [(a, None) for a in agent_hooks.AGENTS]
    if root is not None:
        scopes.append(("claude-code", root))
    for agent, project in scopes:
        flag = " --project" if project is not None else ""
        try:
            state = agent_hooks.status(agent, project)
        except NexusMemError as exc:
            checks.append(
                Check(
                    "agent", False, str(exc), f"fix the file, then nexusmem hook agent install {agent}{flag}"
                )
            )
            continue
        if state.stale:
            detail = f"{agent}: the hook in {state.path} runs another NexusMem or a moved interpreter"
            checks.append(Check("agent", False, detail, f"nexusmem hook agent install {agent}{flag}"))
        elif state.installed:
            when = last.when(agent)
            checks.append(Check("agent", True, f"{agent}: hook in {state.path}, {when}"))
    both = agent_hooks.doubled(root)
    if both is not None:
        checks.append(Check("agent", False, agent_hooks.doubled_detail(*both), agent_hooks.DOUBLED_FIX))
    # Installed with $CLAUDE_CONFIG_DIR or $CODEX_HOME set, and this shell has it unset or elsewhere.
    named = {agent_hooks.settings_path(agent, project) for agent, project in scopes}
    for path in agent_hooks.recorded_elsewhere(named):
        try:
            present = agent_hooks.has_ours_at(path)
        except NexusMemError as exc:
            checks.append(Check("agent", False, str(exc), f"fix {path}, or `nexusmem uninstall`"))
            continue
        if present:
            agent = agent_hooks.agent_of(path)
            when = last.when(agent)
            detail = (
                f"{agent}: hook in {path} (installed with another config folder than this shell's), {when}"
            )
            checks.append(Check("agent", True, detail))
    return checks


def _auto_sync_check(root: Path, store_fix: str | None, store_locked: bool = False) -> list[Check]:
    """A post-commit sync that failed, with nothing synced since: the commits since are not in memory. Its
    fix is a sync, or STORE_FIX when check_store found the store needs one first (a sync fails on a damaged
    store exactly as the post-commit one did). Not asked when STORE_LOCKED: check_store found another
    process holding the store, and opening it would wait for that process (15 s) to say nothing more."""
    from nexusmem import autosync, project
    from nexusmem.errors import StoreError
    from nexusmem.store import open_store

    if store_locked or not paths.db_path(root).exists():
        return []
    try:
        with project.opened(open_store(paths.db_path(root), readonly=True)) as store:
            failed = autosync.last_failure(root, store)
    except (StoreError, OSError):
        return []  # check_store says what is wrong with the store
    if failed is None:
        return []
    advice = autosync.failure_advice(root, failed, store_fix)
    fix = f"{advice.fix}  # {advice.why}" if advice.why else advice.fix
    return [Check("git", False, advice.detail, fix)]


def _crlf_checks(name: str, state: git_hooks.HookState) -> list[Check]:
    """Hook NAME's file (ours or not), or the hook ours wraps, saved with Windows line endings: git cannot
    run it."""
    checks = []
    for path in (state.path, state.legacy):
        if path is not None and git_hooks.crlf_shebang(path):
            fails = "every commit fails" if name == "pre-commit" else f"git's {name} step fails"
            detail = (
                f"{path} has Windows line endings (its first line ends in a carriage return): the system cannot"
                f" run it, so {fails} with `cannot run ...: No such file or directory`"
            )
            checks.append(Check("git", False, detail, git_hooks.crlf_fix(path)))
    return checks


def _team_push_waits(root: Path) -> list[Check]:
    """With a team store configured to be pushed to by the post-commit sync (team.autoPush) and no
    post-commit hook to run it: what waits for a push, which nothing will send by itself."""
    from nexusmem import project, team

    try:
        proj = project.load(root)
        if team.no_auto_push(proj) != "no post-commit hook is installed here":
            return []
        count = team.waiting(proj)
    except (NexusMemError, OSError):
        return []  # the config's and the store's own checks say what is wrong with them
    if not count:
        return []
    detail = (
        f"{count:,} shareable node(s) wait for a team push, and no post-commit hook is installed to push them"
        " (team.autoPush pushes from the post-commit sync)"
    )
    return [Check("team", False, detail, "nexusmem team push; nexusmem hook git-post install")]


def check_git(root: Path, store_fix: str | None = None, store_locked: bool = False) -> list[Check]:
    """The git hooks' checks; STORE_FIX: check_store's fix for a store a sync cannot use (the auto-sync's
    failure is fixed by that first); STORE_LOCKED: check_store found another process holding it."""
    checks = []
    auto_syncs = False
    missing: dict[str, Path] = {}  # sync hooks without our block, and where their files are
    lost: dict[str, Check] = {}  # hooks an install put our block in that lost it without a remove
    away: list[git_hooks.HookState] = []  # blocks in another work tree's copy of the hooks folder only
    recorded = git_hooks.recorded(root)  # read first: gone() asks git only for a hook it names
    unreadable = git_hooks.record_problem(root)
    if unreadable is not None:
        checks.append(Check("git", False, *unreadable))
    for name in git_hooks.HOOK_NAMES:
        verb = "git" if name == "pre-commit" else "git-post"
        state = git_hooks.status(name, root)
        checks += _crlf_checks(name, state)
        if not state.installed:
            if name in git_hooks.SYNC_HOOKS and not (
                state.framework and git_hooks.framework_runs(name, root)
            ):
                missing[name] = state.path  # (the pre-commit framework's own nexusmem-sync is not missing)
            unused = git_hooks.unused(name, root)
            if state.unreadable:
                # A FIFO or a device where the hook goes: nothing can be installed there (nor read it).
                hold = shlex.quote(str(state.path))
                fix = f"mv {hold} {hold}.not-a-hook && nexusmem hook {verb} install"
                checks.append(Check("git", False, state.unreadable, fix))
            elif unused is not None:
                # core.hooksPath set after the install (husky, `git config core.hooksPath .githooks`).
                detail = (
                    f"{unused.path} has the NexusMem block, but core.hooksPath makes git run hooks from"
                    f" {state.path.parent}: it does not run (`nexusmem hook {verb} remove` takes it out)"
                )
                checks.append(Check("git", False, detail, git_hooks.install_fix(verb, root)))
            elif name in recorded and (other := git_hooks.elsewhere(name, root)) is not None:
                away.append(other)  # said once for all of them, below
            elif name in recorded and git_hooks.gone(name, root) is not None:
                lost[name] = Check(
                    "git", False, git_hooks.gone_text(state), git_hooks.install_fix(verb, root)
                )
            continue
        auto_syncs = auto_syncs or name in git_hooks.SYNC_HOOKS
        fix = f"nexusmem hook {verb} install"
        if state.broken:
            checks.append(Check("git", False, f"{state.path}: {state.broken}", fix))
        elif state.fallback:
            detail = f"{state.path}: {state.command} is gone; the hook runs {state.fallback} from PATH"
            checks.append(Check("git", False, detail, fix))
        elif not state.executable:
            runner = "the pre-commit framework" if state.framework else "git"
            detail = f"{state.path} is not executable, so {runner} does not run it"
            checks.append(Check("git", False, detail, f"chmod +x {shlex.quote(str(state.path))}"))
        elif (verdict := git_hooks.verdict(state, root)) is not None:
            # Another install pinned (an older release at another path, or one that cannot start), or an
            # upgrade in place whose block still runs the older body: `hook git status` says the same.
            checks.append(Check("git", False, f"{name}: {verdict[0]}", verdict[1]))
        else:
            through = (
                f" (from {state.path}, which the pre-commit framework's hook runs)" if state.framework else ""
            )
            checks.append(Check("git", True, f"{name}: runs {state.command}{through}"))
        doubled = git_hooks.doubled(state, root)
        if doubled is not None:
            checks.append(Check("git", False, *doubled))
        legacy = state.legacy
        if legacy is not None and state.legacy_off:
            # `--force` moved aside a hook git ignored (not executable, maybe on purpose); ours does not run
            # it either: as before the install, so no problem (a user who deleted it meant that too).
            detail = (
                f"{legacy} (the {name} hook NexusMem moved aside) is not executable, so it does not run, as git"
                f" did not run it before the install (`chmod +x {shlex.quote(str(legacy))}` to run it)"
            )
            checks.append(Check("git", True, detail))
        elif legacy is not None and state.legacy_missing:
            # Deleted, or left behind when the hook file was copied: the user's own hook no longer runs.
            hold = shlex.quote(str(legacy))
            detail = (
                f"{legacy} (the {name} hook NexusMem moved aside, which {state.path.name} runs after"
                " NexusMem's part) is missing: only NexusMem's part runs"
            )
            fix = f"put that hook back at {hold}, or: nexusmem hook {verb} remove && nexusmem hook {verb} install"
            checks.append(Check("git", False, detail, fix))
    for folder in dict.fromkeys(state.path.parent for state in away):
        here = [state for state in away if state.path.parent == folder]
        checks.append(Check("git", False, *git_hooks.elsewhere_text(here, root)))
    # A lost sync hook beside one still there is named by the auto-sync check below.
    checks += [c for n, c in lost.items() if not (auto_syncs and n in git_hooks.SYNC_HOOKS)]
    if "post-commit" in missing:
        checks += _team_push_waits(root)
    if auto_syncs and missing:
        # An install from before the auto-sync ran after merges, pulls and `git am` too.
        arrives = {"post-commit": "a commit", "post-merge": "a merge or pull", "post-applypatch": "`git am`"}
        detail = (
            f"the auto-sync hook is not in {', '.join(missing)}: history that arrives by"
            f" {' or '.join(arrives[n] for n in missing)} waits for the next sync"
        )
        foreign = [n for n, path in missing.items() if path.exists() or path.is_symlink()]
        fix = "nexusmem hook git-post install"
        if foreign:
            # A hook of another tool's that is no shell script (or a link): the install refuses it unless
            # told to wrap it.
            fix += f" (--force wraps the existing {', '.join(foreign)} hook, which still runs)"
        checks.append(Check("git", False, detail, fix))
    if auto_syncs:
        checks += _auto_sync_check(root, store_fix, store_locked)
        from nexusmem import autosync

        problem = autosync.team_push_problem(root)
        if problem is not None:
            checks.append(Check("team", False, f"the post-commit team push: {problem}", "nexusmem team push"))
    entries = uninstall.framework_entries(root)
    if entries:
        config = entries[0][0]
        found = shutil.which("nexusmem")
        if found:
            checks.append(Check("pre-commit", True, f"{config}: its nexusmem hooks run {found}"))
        else:
            detail = f"{config} runs nexusmem hooks, but no nexusmem is on PATH: they skip themselves"
            checks.append(Check("pre-commit", False, detail, "pipx install /path/to/nexusmem"))
        if any("nexusmem-sync" in line for _, _, line in entries):
            # The framework runs a stage's hooks only where `pre-commit install --hook-type STAGE` put its
            # script (an install from before nexusmem-sync ran at post-merge has post-commit alone).
            hooks = git_hooks.hooks_dir(root)
            absent = [s for s in ("post-commit", "post-merge") if not git_hooks.framework_script(hooks / s)]
            if absent:
                detail = (
                    f"{config} runs nexusmem-sync, but pre-commit is not installed for {', '.join(absent)}:"
                    " history that arrives there waits for the next sync"
                )
                fix = "pre-commit install " + " ".join(f"--hook-type {s}" for s in absent)
                checks.append(Check("pre-commit", False, detail, fix))
            lacking = [n for n in git_hooks.SYNC_HOOKS if n in missing and git_hooks.framework_lacks(n, root)]
            if lacking:
                detail = (
                    f"{config} runs nexusmem-sync, but the pre-commit framework has no {', '.join(lacking)}"
                    " hook: what `git am` applies waits for the next sync"
                )
                fix = "nexusmem hook git-post install  # adds post-applypatch alone; the framework keeps the rest"
                checks.append(Check("pre-commit", False, detail, fix))
        text = config.read_text(encoding="utf-8")
        for line in text.splitlines():
            value = line.strip().removeprefix("-").strip()
            if value.startswith("repo:"):
                repo = value[5:].strip().strip("'\"")
                if repo.startswith(("/", "~")) and not Path(repo).expanduser().exists():
                    detail = f"{config}: repo {repo} does not exist"
                    checks.append(Check("pre-commit", False, detail, f"edit {config}"))
    return checks


# What each kind of thing is called when it is found where the other kind should be.
_KINDS = {
    stat.S_IFDIR: "a folder",
    stat.S_IFIFO: "a FIFO",
    stat.S_IFSOCK: "a socket",
    stat.S_IFCHR: "a device",
    stat.S_IFBLK: "a device",
}


def _mode_check(path: Path, want: int, *, folder: bool = False) -> Check | None:
    """The problem with PATH, which should be a file (a FOLDER when set) of mode WANT at most; None when it
    is right or absent. Something of the other kind there is said as such: chmod would not make it usable."""
    try:
        st = path.stat()
    except FileNotFoundError:
        return None
    if stat.S_ISDIR(st.st_mode) != folder or not (folder or stat.S_ISREG(st.st_mode)):
        found = _KINDS.get(stat.S_IFMT(st.st_mode), "a file")
        detail = f"{path} is {found}, not {'a folder' if folder else 'a file'}: NexusMem cannot use it"
        if path == paths.shell_log_path():
            detail += " (the hooks cannot append to it, sync cannot read it)"
        fix = f"mv {shlex.quote(str(path))} {shlex.quote(str(path) + '.bad')}"
        return Check("store", False, detail, fix)
    if hasattr(os, "getuid") and st.st_uid != os.getuid():
        detail = f"{path} belongs to another user (uid {st.st_uid}): NexusMem does not use it"
        if path == paths.user_dir():
            detail += " (the hooks record nothing, the commands refuse it)"
        return Check("store", False, detail, "move it aside, or set NEXUSMEM_HOME to a folder of yours")
    mode = stat.S_IMODE(st.st_mode)
    if not folder and mode & 0o600 != 0o600:
        # SQLite makes -wal and -shm with memory.db's mode: a read of a 0400 database leaves them 0400, and
        # every write fails on them ("attempt to write a readonly database") while its quick_check passes.
        detail = f"{path} is {mode:04o}: you cannot {'read' if mode & 0o400 == 0 else 'write'} it"
        if path.name.startswith(paths.DB_NAME):
            detail += " (SQLite fails every write on it; the next sync puts 0600 back)"
        return Check("store", False, detail, f"chmod 600 {shlex.quote(str(path))}")
    if folder and path == paths.user_dir() and not os.access(path, os.W_OK):
        detail = f"{path} is not writable (a read-only mount?): the hooks record nothing"
        return Check(
            "store", False, detail, f"make {path} writable, or set NEXUSMEM_HOME to a folder that is"
        )
    if mode & ~want:
        return Check("store", False, f"{path} is {mode:04o}, readable by others", f"chmod {want:o} {path}")
    return None


def _rebuild_damaged(root: Path, db: Path) -> str:
    """The fix for a damaged store, as the error every command prints says it (store.health): move it aside
    with its -wal and -shm (a WAL left beside a new database would be replayed into it) and sync. `sync
    --rebuild` opens the damaged file first and fails on it."""
    from nexusmem.store.health import damaged_moves

    return f"{damaged_moves(db)}; nexusmem -C {shlex.quote(str(root))} sync"


def _full(folder: Path) -> bool:
    """Whether the file system holding FOLDER has no block left for us (SQLite then cannot make its -shm
    and says "disk I/O error")."""
    try:
        return os.statvfs(folder).f_bavail == 0
    except (OSError, AttributeError):
        return False


def check_store(root: Path) -> list[Check]:
    from nexusmem import project
    from nexusmem.errors import StoreError
    from nexusmem.store import health

    checks = []
    state = paths.state_dir(root)
    db = paths.db_path(root)
    blocked = paths.state_in_the_way(state)
    if blocked is not None:  # a sync fails on it (and so does every auto-sync): moving it aside comes first
        sync = f"nexusmem -C {shlex.quote(str(root))} sync"
        held = shlex.quote(str(state))
        fix = f"{blocked[1]}; then {sync}" if state.is_symlink() else f"mv {held} {held}.moved && {sync}"
        return [Check("store", False, f"{blocked[0]}: no memory can be made there", fix)]
    if not db.exists():
        stashed = paths.stashed_memory(root)
        if stashed is not None:  # a sync refuses to build another in its place
            pop = paths.stash_pop(stashed.entry).replace("git", f"git -C {shlex.quote(str(stashed.root))}", 1)
            return [Check("store", False, paths.stashed_text(root, stashed), pop)]
        return [Check("store", False, f"{root} has no memory yet", f"nexusmem -C {root} sync")]
    try:
        project.refuse_cut_short(root)
    except StoreError as exc:
        return [Check("store", False, str(exc).split("; ")[0], _rebuild_damaged(root, db))]
    # The modes as they were, before the integrity check opens the store: SQLite makes its -wal and -shm
    # with the database's mode, so a 0644 memory.db read as three files "readable by others", two of them
    # doctor's own.
    companions = [db.with_name(db.name + s) for s in ("-wal", "-shm")]
    made = [p for p in companions if not p.exists()]
    folders = [state, paths.user_dir()]
    files = [paths.config_path(root), db, *companions, paths.shell_log_path(), paths.registry_path()]
    # A store file this user cannot write (0400, immutable, another user's) leaves reads and quick_check
    # working while every sync fails: said first, so that a failed post-commit sync gets its fix, not `sync`.
    unwritable = health.unwritable(db) if os.access(state, os.W_OK) else None  # a read-only mount: below
    if unwritable is not None:
        name, what, fix = unwritable
        files.remove(Path(name))
        reads = "; reads still work" if os.access(db, os.R_OK) and os.access(name, os.R_OK) else ""
        detail = f"{what} (every sync fails on it, the post-commit one too{reads})"
        checks.append(Check("store", False, detail, fix))
    modes = [_mode_check(f, 0o700, folder=True) for f in folders] + [_mode_check(f, 0o600) for f in files]
    if not os.access(state, os.W_OK):
        # A read-only mount (or its permissions): the store still opens for reading, so nothing below fails,
        # while every sync does, the post-commit one without a word.
        checks.append(
            Check(
                "store",
                False,
                f"{state} is not writable (a read-only file system or its permissions): every sync fails, the"
                " post-commit one silently, so what is committed now never reaches memory",
                f"make {state} writable (remount it read-write, or `chmod u+w {state}`), then `nexusmem -C"
                f" {root} sync`",
            )
        )
    fine = False  # the store checked and found fine: then it is read (a locked one would keep doctor waiting)
    try:
        result = health.check_file(db, DOCTOR_CHECK_SECONDS, DOCTOR_BUSY_SECONDS)
        shape = health.shape_problem(db) if result is not None and not result else None
        if shape is not None:
            what, damaged = shape
            fix = (
                _rebuild_damaged(root, db)
                if damaged
                else "upgrade NexusMem: `git pull` in its clone, then `pipx install --force <clone>` (or"
                " `uv tool install --force <clone>`, or `pip install -U <clone>` in its environment)"
            )
            checks.append(Check("store", False, f"{db}: {what}", fix))
        elif result == []:
            checks.append(Check("store", True, f"{db}: quick_check ok"))
        elif result is None:
            detail = f"{db}: quick_check did not finish in {DOCTOR_CHECK_SECONDS:.0f} s (a large store); not checked"
            checks.append(Check("store", True, detail))
        elif health.is_locked(result):
            # Not damage: "database is locked" said as quick_check's finding made the fix "move memory.db
            # aside", which throws away verdicts and the deny-list.
            detail = (
                f"{db}: not checked: {LOCKED} (held past {DOCTOR_BUSY_SECONDS:.0f} s; nothing shows the store"
                " damaged); syncs and queries wait for it, then fail"
            )
            fix = (
                "let that process finish (an open `sqlite3` shell, a backup?), or find it:"
                f" `fuser -v {shlex.quote(str(db))}` (or `lsof {shlex.quote(str(db))}`); then run doctor again"
            )
            checks.append(Check("store", False, detail, fix))
        elif _full(state):
            detail = (
                f"{db}: cannot be opened ({'; '.join(result[:1])}): the disk holding {state} is full;"
                " nothing shows the store damaged"
            )
            checks.append(Check("store", False, detail, f"free some space on the disk holding {state}"))
        elif unwritable is not None and unwritable[0] == str(db):
            pass  # the file that cannot be read or written is said first, with its fix
        elif not (os.access(state, os.W_OK) and os.access(db, os.W_OK)):
            # A store in WAL mode cannot be opened where its -shm cannot be made: a read-only mount or
            # folder, not damage (moving the file aside would lose what a sync cannot rebuild).
            detail = (
                f"{db}: cannot be opened ({'; '.join(result[:1])}): {state} or the file is read-only"
                " (a read-only mount?); nothing shows the store damaged"
            )
            checks.append(Check("store", False, detail, f"make {state} and its files writable"))
        else:
            detail = f"{db}: quick_check found {'; '.join(result[:3])}"
            checks.append(Check("store", False, detail, _rebuild_damaged(root, db)))
        low = paths.low_space(root)
        if low is not None and all(c.ok for c in checks):  # a full disk that broke the check is said above
            checks.append(
                Check(
                    "store",
                    False,
                    paths.low_space_text(root, low),
                    f"free some space on the disk holding {state}",
                )
            )
        # Opening the store puts its files' modes right: not before doctor has reported them as found.
        fine = all(c.ok for c in checks) and all(m is None for m in modes)
        unusable = _unusable_deny_entry(db) if fine else None
        if unusable is not None:  # first: every sync (the post-commit one too) stops on it
            checks.insert(0, unusable)
        older = _older_rules(root, db) if fine else None
        if older is not None:
            checks.append(older)
        stopped = paths.sync_unfinished(root) if all(c.ok for c in checks) else None
        if stopped is not None:  # killed or interrupted (SIGKILL, Ctrl-C): no error line was written
            detail, args = paths.unfinished_text(root, timefmt.iso(stopped))
            checks.append(Check("store", False, detail, f"nexusmem -C {root} {args}"))
    except Exception as exc:  # a file that is not a database at all
        checks.append(Check("store", False, f"{db}: cannot be read ({exc})", _rebuild_damaged(root, db)))
    for path in made:  # what the check made is 0600 whatever the database's mode (0400 too)
        private.fix_file(path)
    return checks + [m for m in modes if m is not None] + _pre_upgrade_copies(db, read=fine)


def _pre_upgrade_copies(db: Path, read: bool) -> list[Check]:
    """The copies upgrades kept of the memory at DB, as information: what an older release can still read; a
    problem when a scrub ran since the copy was kept, for the copy still holds what it removed (asked of the
    store when READ: check_store found it fine)."""
    from nexusmem import project
    from nexusmem.hygiene.scrub import scrubbed_after, unscrubbed_copy_text
    from nexusmem.store import open_store
    from nexusmem.store.db import pre_upgrade_copies

    copies = pre_upgrade_copies(db)
    if not copies:
        return []
    audit: list[dict[str, Any]] = []
    if read:
        try:
            with project.opened(open_store(db, readonly=True)) as store:
                audit = store.audit_log()
        except (NexusMemError, OSError):
            pass  # the store's own check says what is wrong with it
    checks = []
    for version, copy in copies:
        scrubbed = scrubbed_after(audit, copy)
        if scrubbed is not None:
            when = f"`nexusmem scrub` removed at {timefmt.iso(scrubbed)}"
            checks.append(
                Check(
                    "store", False, unscrubbed_copy_text(version, copy, when), f"rm {shlex.quote(str(copy))}"
                )
            )
            continue
        checks.append(
            Check(
                "store",
                True,
                f"memory upgraded from schema {version}: a copy of the old one is {copy} (what a release of that"
                " schema reads; README, Upgrading and going back), delete it once you no longer need it",
            )
        )
    return checks


def _older_rules(root: Path, db: Path) -> Check | None:
    """ROOT's memory DB written with older redaction rules than this release's (or before they were recorded): it
    may keep a secret they redact, shown by `query` as it was stored, until `nexusmem scrub`."""
    from nexusmem import project, redact
    from nexusmem.store import open_store

    try:
        with project.opened(open_store(db, readonly=True)) as store:
            recorded = store.get_meta(redact.RULES_KEY)
    except (NexusMemError, OSError):
        return None  # the store's own check says what is wrong with it
    if not redact.older_rules(recorded):
        return None
    return Check("store", False, f"{db}: {redact.OLDER_RULES}", f"nexusmem -C {shlex.quote(str(root))} scrub")


def _unusable_deny_entry(db: Path) -> Check | None:
    """A deny-list entry of this memory (or the user-wide one) that cannot run: every sync refuses to start
    on it, so the fix for a failed post-commit sync is this one, not `nexusmem sync`. Most often the entry was
    made under another NEXUSMEM_HOME, whose deny-key.json holds the key its hash needs."""
    from nexusmem import project
    from nexusmem.errors import NexusMemError
    from nexusmem.hygiene.denylist import key_path, load_global, stored_entries
    from nexusmem.store import open_store

    try:
        with project.opened(open_store(db, readonly=True)) as store:
            entries = [*stored_entries(store), *load_global()]
    except (NexusMemError, OSError):
        return None  # the store's or the user-wide list's own check says what is wrong
    broken = next((e for e in entries if e.problem), None)
    if broken is None:
        return None
    detail = f"deny-list entry {broken.key[:12]} cannot be used: {broken.problem}; every sync stops on it"
    if "does not hold" in broken.problem:
        fix = (
            f"copy deny-key.json from the NexusMem home the value was forgotten in (NEXUSMEM_HOME before) into"
            f" {key_path()}, or `nexusmem forget --import <an export>`; else `nexusmem forget --remove-entry"
            f" {broken.key[:12]}` and forget the value again"
        )
    else:
        fix = f"nexusmem forget --remove-entry {broken.key[:12]}, then forget the value again"
    return Check("store", False, detail, fix)


def check_backend() -> list[Check]:
    from nexusmem.store import connection, vectors

    checks = [
        Check("backend", True, f"SQLite driver {connection.DRIVER} (SQLite {connection.sqlite_version()})")
    ]
    try:
        version = vectors.vec0_version()
        checks.append(Check("backend", True, f"sqlite-vec {version} loads"))
    except Exception as exc:
        fix = "pip install --force-reinstall sqlite-vec sqlean.py  (in NexusMem's environment)"
        checks.append(Check("backend", False, f"sqlite-vec does not load: {exc}; search is BM25-only", fix))
    return checks


def check_embedder(root: Path | None, store_fine: bool = True) -> list[Check]:
    """Whether the configured embedder can run, and (when the store's checks all passed, STORE_FINE: opening
    it puts its files' modes right, and waits on a lock) whether the stored vectors are its."""
    section: dict[str, Any] = {}
    if root is not None and paths.config_path(root).exists():
        try:
            data = json.loads(paths.config_path(root).read_text(encoding="utf-8-sig"))
            section = dict(data.get("embedding", {}))
        except (OSError, ValueError, AttributeError) as exc:
            return [Check("embedder", False, f"{paths.config_path(root)}: {exc}", "fix the file by hand")]
    provider = section.get("provider", "builtin")
    stored = _stored_vectors(root, section, provider) if store_fine else []
    return _embedder_works(section, provider) + stored


def _stored_vectors(root: Path | None, section: dict[str, Any], provider: str) -> list[Check]:
    """A check when the stored vectors are not the configured embedder's (a setting changed since the last
    sync, or a switch a sync could not make): a query still searches them, and `nexusmem sync` re-embeds."""
    if root is None or not paths.db_path(root).exists():
        return []
    from nexusmem import embed, project
    from nexusmem.errors import NexusMemError
    from nexusmem.store import open_store

    try:
        with project.opened(open_store(paths.db_path(root), readonly=True)) as store:
            identity = embed.Identity.from_json(store.vector_identity_json())
            if identity is None or not store.has_vectors():
                return []
            nodes = store.node_count()
    except (NexusMemError, OSError):
        return []  # the store's own check says what is wrong with it
    said = embed.stored_elsewhere(identity, str(provider), str(section.get("model", "") or ""), nodes)
    return [] if said is None else [Check("embedder", False, said, "nexusmem sync")]


def _embedder_works(section: dict[str, Any], provider: str) -> list[Check]:
    """Whether the configured embedder can run: its package or model files there, its server listening."""
    if provider == "none":
        return [Check("embedder", True, "provider none: keyword search only")]
    if provider == "builtin":
        if importlib.util.find_spec("wordllama") is None:
            fix = "pip install wordllama  (in NexusMem's environment)"
            return [Check("embedder", False, "builtin model (wordllama) is not installed", fix)]
        return [Check("embedder", True, "builtin wordllama is installed")]
    if provider == "local":
        from nexusmem.embed import EmbeddingUnavailable
        from nexusmem.embed.local import PACKAGED_HINT, model_dir, read_config

        fix = (
            f"`{PACKAGED_HINT}`, or point embedding.model at a sentence-transformers model directory, or set"
            " the provider to builtin"
        )
        try:
            where = model_dir(str(section.get("model") or ""))
            config = read_config(where)
        except EmbeddingUnavailable as exc:
            return [Check("embedder", False, str(exc), fix)]
        return [Check("embedder", True, f"local model {where} ({config['hidden_size']}-d) has its files")]
    url = str(section.get("url") or "http://127.0.0.1:11434")
    parsed = urlparse(url)
    host, port = parsed.hostname or "127.0.0.1", parsed.port or (443 if parsed.scheme == "https" else 80)
    try:
        with socket.create_connection((host, port), timeout=0.5):
            pass
    except OSError as exc:
        return [Check("embedder", False, f"{provider} at {url} is unreachable ({exc})", EMBEDDER_FIX)]
    return [_ask_ollama(url, str(section.get("model") or ""))]


# How long doctor waits for Ollama to embed one short text (a model loading cold included): a server that
# accepts connections and never answers held every post-commit sync 2 minutes while doctor said "ok".
DOCTOR_EMBED_SECONDS = 10.0


def _ask_ollama(url: str, model: str) -> Check:
    """Whether the Ollama at URL embeds a short text with MODEL within DOCTOR_EMBED_SECONDS: asked even
    when a failure is remembered (its answer forgets it; no answer remembers it, as a query's does)."""
    from nexusmem.embed import DEFAULT_OLLAMA_MODEL, EmbeddingUnavailable
    from nexusmem.embed.ollama import OllamaProvider

    provider = OllamaProvider(model or DEFAULT_OLLAMA_MODEL, url, DOCTOR_EMBED_SECONDS, ask_anyway=True)
    started = time.monotonic()
    try:
        provider.embed(["nexusmem doctor"])
    except EmbeddingUnavailable as exc:
        fix = f"`ollama pull {provider.model}`" if "HTTP 404" in str(exc) else EMBEDDER_FIX
        return Check("embedder", False, f"{exc} (asked to embed a short text)", fix)
    finally:
        provider.close()
    took = time.monotonic() - started
    return Check(
        "embedder", True, f"ollama at {url} embeds with {provider.model} ({provider.dim}-d, {took:.1f}s)"
    )


def check_session_model(root: Path | None) -> list[Check]:
    """When session summaries are on: whether their model server accepts a connection (nothing when off)."""
    if root is None or not paths.config_path(root).exists():
        return []
    try:
        data = json.loads(paths.config_path(root).read_text(encoding="utf-8-sig"))
        section = dict(data.get("sources", {}).get("session", {}))
    except (OSError, ValueError, AttributeError):
        return []  # check_embedder already reports a config it cannot read
    if section.get("enabled") is not True:
        return []
    from nexusmem.config import DEFAULTS
    from nexusmem.ollama import listening

    url = str(section.get("url") or DEFAULTS["sources"]["session"]["url"])
    model = str(section.get("model") or DEFAULTS["sources"]["session"]["model"])
    if not listening(url, timeout=0.5):
        fix = f"start it (`ollama serve`, then `ollama pull {model}`) or set sources.session.enabled to false"
        return [Check("sessions", False, f"session summaries: Ollama at {url} is unreachable", fix)]
    return [
        Check(
            "sessions",
            True,
            f"session summaries: Ollama at {url} accepts connections (model {model} not asked)",
        )
    ]


def check_registry(root: Path | None) -> list[Check]:
    checks = []
    path = paths.registry_path()
    wrong = registry.problems()
    if wrong:
        fix = (
            f"nexusmem sync (keeps the entries that can be read; {path} is kept aside as"
            " projects.json.corrupt-<time>, and every project registers again on its next sync)"
        )
        checks.append(Check("registry", False, f"{path} is corrupt: {'; '.join(wrong[:3])}", fix))
    entries = registry.load()
    known = set()
    for entry in entries:
        where = Path(str(entry.get("root")))
        known.add(str(where))
        if registry.holds_credential(entry):  # the id is not shown: it holds the credential
            detail = f"registered project {where}: its id holds a credential of the origin URL"
            checks.append(Check("registry", False, detail, f"nexusmem -C {shlex.quote(str(where))} scrub"))
        if not paths.db_path(where).exists():
            # `projects --prune` forgets it: right for a repository that is gone, not for one whose
            # memory.db alone was deleted (a sync builds it again).
            stashed = paths.stashed_memory(where) if (where / ".git").exists() else None
            if stashed is not None:  # a sync refuses to build another in its place
                detail = f"registered project {where} has no memory.db: {paths.stashed_text(where, stashed)}"
                fix = paths.stash_pop(stashed.entry).replace(
                    "git", f"git -C {shlex.quote(str(stashed.root))}", 1
                )
            elif (where / ".git").exists():
                detail = (
                    f"registered project {where} has no memory any more (its memory.db is gone; a sync builds it"
                    " again, `nexusmem projects --prune` forgets the project)"
                )
                fix = f"nexusmem -C {shlex.quote(str(where))} sync"
            else:
                detail = f"registered project {where} has no memory any more (the repository is gone)"
                fix = "nexusmem projects --prune"
            checks.append(Check("registry", False, detail, fix))
    if root is not None and paths.db_path(root).exists() and str(root) not in known:
        checks.append(
            Check("registry", False, f"{root} has a memory but is not registered", f"nexusmem -C {root} init")
        )
    if not checks:
        checks.append(Check("registry", True, f"{len(entries)} project(s) registered"))
    return checks


def run(start: Path | None) -> list[Check]:
    """Every check, for the repository containing START (when there is one) and the machine."""
    from nexusmem import project

    root: Path | None = None
    refused: Check | None = None
    if start is not None:
        try:
            root = paths.repo_root(start)
        except RefusedRepositoryError as exc:  # another user's repository: nothing of it can be checked
            fix = paths.safe_directory_fix(Path(start).resolve())
            refused = Check("git", False, str(exc).split(";", 1)[0], fix)
        except NexusMemError:
            root = None
    checks = [refused] if refused is not None else []
    owner = _user_dir_owner()
    checks += check_home(owner)
    foreign_home = owner is not None  # nothing in it can be read: said once, above
    if not foreign_home:
        checks += check_shells()
        checks += check_agents(root)
    # The memory ROOT answers from: in a linked worktree without one of its own, the main work tree's (as
    # query and status resolve it). Its store and config are checked; the hooks and agents are ROOT's.
    memory = project.memory_root(root) if root is not None else None
    password = _password_in_team_url(memory) if memory is not None else None
    store_fine = False
    if root is not None and memory is not None:
        store = check_store(memory)
        # check_store says first what is wrong with the database itself (a sync fails on it too).
        store_fix = store[0].fix if store and not store[0].ok else None
        locked = bool(store) and not store[0].ok and LOCKED in store[0].detail
        checks += check_git(root, store_fix, locked)
        checks += store
        store_fine = all(c.ok for c in store)
    checks += check_backend()
    unconfirmed, invalid = _unconfirmed(memory)
    if invalid is not None and memory is not None and paths.state_in_the_way(paths.state_dir(memory)):
        invalid = None  # no config can be there: the store's check says what is in the way, and its fix
    if invalid is not None:
        checks.append(Check("config", False, invalid, "fix the file by hand"))
    elif unconfirmed:
        from nexusmem.config import shown

        listed = ", ".join(shown(k, v) for k, v in unconfirmed.items())
        detail = f"settings that reach beyond the repository, not used (the config came with the repository): {listed}"
        checks.append(
            Check("config", False, detail, "read .nexusmem/config.json; if you set them: nexusmem trust")
        )
    if password is not None:
        checks.append(password)
    # A server the config may not use is not contacted either, nor one named by a config that does not load.
    if invalid is None and "embedding.url" not in unconfirmed:
        checks += check_embedder(memory, store_fine)
    if invalid is None and "sources.session.url" not in unconfirmed:
        checks += check_session_model(memory)
    if not foreign_home:
        checks += check_registry(memory)
    return checks


def _password_in_team_url(root: Path) -> Check | None:
    """The problem of a config whose team.url holds a password (the team store is off for it), with its fix;
    the warning every other command prints on stderr is then not printed too."""
    from nexusmem import project, secreturl

    path = paths.config_path(root)
    label = secreturl.team_url_with_password(path)
    if label is None:
        return None
    project.password_warning_said(root)
    detail = (
        f"{path}: 'team.url' holds a password, so the team store is not used until it is removed (a config"
        " file must never hold credentials in clear)"
    )
    fix = f"take the password out of team.url (PGPASSWORD or ~/.pgpass hold it), or: nexusmem team init --url {label}"
    return Check("config", False, detail, fix)


def _unconfirmed(root: Path | None) -> tuple[dict[str, Any], str | None]:
    """(ROOT's config settings that reach beyond the repository and may not be used (project.config_of),
    why the config does not load, or None)."""
    if root is None:
        return {}, None
    from nexusmem import config
    from nexusmem.errors import ConfigError

    try:
        asks = config.reaching_out(config.load(paths.config_path(root)))
    except ConfigError as exc:
        return {}, str(exc)
    from nexusmem.project import allowed

    if not asks or allowed(root, asks):
        return {}, None
    return asks, None
