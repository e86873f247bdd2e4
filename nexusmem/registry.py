"""~/.nexusmem/projects.json: which repositories have a memory, for `projects` and cross-project recall.

An index, not a source of truth: an entry whose database is missing is reported, never dropped silently.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from nexusmem import paths, private


def _warn(message: str) -> None:
    print(f"nexusmem: warning: {message}", file=sys.stderr)


def _read(path: Path) -> tuple[list[dict[str, Any]], list[str]]:
    """The entries of the registry at PATH that can be used, and what is wrong with the rest, in plain words:
    one problem for a file that cannot be read at all (its entries then read as none), one per entry left
    out (named by its place and whatever it holds). No problem: the file was read whole."""
    try:
        raw = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return [], []
    except UnicodeDecodeError:
        return [], ["it is not UTF-8 text"]
    except OSError as exc:
        return [], [f"it cannot be read ({exc.strerror or exc})"]
    try:
        data = json.loads(raw)
    except json.JSONDecodeError as exc:
        return [], [f"it is not JSON ({exc.msg} at line {exc.lineno}, column {exc.colno})"]
    except RecursionError:
        return [], ["its JSON is nested too deeply"]
    projects = data.get("projects") if isinstance(data, dict) else None
    if not isinstance(projects, list):
        return [], ['it holds no list of projects (`{"projects": [...]}`)']
    good: list[dict[str, Any]] = []
    bad: list[str] = []
    for n, entry in enumerate(projects, 1):
        if isinstance(entry, dict) and isinstance(entry.get("root"), str) and entry["root"]:
            good.append(entry)
        else:
            shown = as_json(entry, 300)
            if isinstance(entry, dict) and "root" in entry:
                root = as_json(entry["root"], 100)
                bad.append(
                    f'entry {n} of its projects ({shown}): its "root" is not a folder path ({root}): left out'
                )
            else:
                bad.append(f'entry {n} of its projects names no folder as its "root" ({shown}): left out')
    return good, bad


def as_json(value: Any, limit: int) -> str:
    """VALUE of an entry as projects.json has it (`5`, `{"a": 1}`, a string quoted), at most LIMIT characters."""
    try:
        shown = json.dumps(value, ensure_ascii=False)
    except (ValueError, RecursionError):  # nested too deeply to print again: say so
        shown = "(nested too deeply to show)"
    return shown if len(shown) <= limit else shown[: limit - 3] + "..."


_said: set[str] = set()  # the problems this process warned of
_SAID_MAX = 3


def load() -> list[dict[str, Any]]:
    """Registered projects: a corrupt file reads as empty, and an entry that names no folder is left out, each
    with a warning (once a process); the file is kept aside, not lost, before anything writes it again."""
    path = paths.registry_path()
    projects, problems = _read(path)
    if len(problems) > _SAID_MAX:  # a file of a thousand bad entries: three lines and a count
        problems = [*problems[:_SAID_MAX], f"{len(problems) - _SAID_MAX} more entries like these left out"]
    for problem in problems:
        if problem not in _said:
            _said.add(problem)
            whole = "the other entries are used" if projects else "treating the project registry as empty"
            _warn(f"{path}: corrupt: {problem}; {whole}, and the file is kept aside when it is next written")
    return projects


def problems() -> list[str]:
    """What is wrong with projects.json (`doctor`), in plain words; [] when it is whole or absent. Said by the
    caller: load() does not warn of them again."""
    found = _read(paths.registry_path())[1]
    _said.update(found)
    return found


def holds_credential(entry: dict[str, Any]) -> bool:
    """Whether ENTRY's id is one an older release made with a credential of the origin URL in it."""
    from nexusmem.identity import clean_id  # the redaction rules: doctor only

    recorded = entry.get("id")
    return isinstance(recorded, str) and clean_id(recorded) != recorded


def _clean_ids(projects: list[dict[str, Any]]) -> int:
    """Give each entry whose id an older release made with a credential of the origin URL in it the id
    today's rules give it (identity.clean_id, as migration 17 gives its memory); returns how many."""
    from nexusmem.identity import clean_id  # the redaction rules: a registry write only

    changed = 0
    for entry in projects:
        if holds_credential(entry):
            entry["id"] = clean_id(entry["id"])
            changed += 1
    return changed


def clean_ids(*, dry_run: bool = False) -> int:
    """Re-key every entry whose id held a credential of its origin URL (_clean_ids) and write the file when
    one did (unless DRY_RUN): after migration 17 re-keyed a memory, and by `scrub`. Returns how many entries
    changed (would change)."""
    if not paths.registry_path().exists():
        return 0
    if dry_run:
        return _clean_ids(load())
    with _locked():
        projects = load()
        changed = _clean_ids(projects)
        if changed:
            _save(projects)
    return changed


def _save(projects: list[dict[str, Any]]) -> None:
    _clean_ids(projects)  # whoever writes the file: no id in it holds a credential
    path = paths.registry_path()
    paths.ensure_user_dir()
    if path.exists() and _read(path)[1]:
        # Not read whole (unreadable, or an entry left out): kept for the user rather than overwritten.
        aside = path.with_name(f"projects.json.corrupt-{int(time.time())}")
        if aside.exists():  # one set aside this second already
            aside = aside.with_name(f"{aside.name}-{os.getpid()}")
        path.replace(aside)
        with contextlib.suppress(OSError):
            os.chmod(aside, 0o600)
    # A name of this process's own (not tempfile: its imports cost ~10 ms of every sync), 0600, never
    # through a link; callers hold the registry lock.
    tmp = path.with_name(f".projects.{os.getpid()}.tmp")
    fd = private.open_fd(tmp, os.O_WRONLY | os.O_TRUNC)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump({"version": 1, "projects": projects}, fh, indent=2, sort_keys=True)
            fh.write("\n")
        os.replace(tmp, path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        if exc.filename is None:  # a write on a full disk names no file: say which
            raise OSError(exc.errno, exc.strerror, str(path)) from exc
        raise
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


@contextlib.contextmanager
def _locked() -> Iterator[None]:
    """Serialise read-modify-write of projects.json: two repositories' post-commit syncs finishing at
    once must not drop each other's entry. An OS lock (released if the holder dies); none on Windows."""
    path = paths.registry_path()
    paths.ensure_user_dir()
    try:
        import fcntl
    except ImportError:  # Windows: the atomic replace still keeps the file whole
        yield
        return
    fd = os.open(str(path.with_name(".projects.lock")), os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


_said_unrecorded = False


def register(
    root: Path,
    project_id: str,
    *,
    synced: bool = False,
    own_dir: bool = False,
    moved_from: Sequence[Path] = (),
) -> None:
    """Add or refresh ROOT's entry (atomic write). OWN_DIR: NexusMem has just made ROOT's .nexusmem/ on
    this machine (an entry records whether it ever did: see allows). MOVED_FROM: folders ROOT's memory was
    synced at before, gone now (the repository was moved: a sync knows its memory.db by its file): their
    entries go in the same write (a `cp -r` copy's entry is another project's, at a path that is there).

    The registry is an index: a sync whose memory was written is not failed for it. A user folder that is
    read-only or full is said, with the file, and the entry is written by a later sync."""
    try:
        with _locked():
            _register(root, project_id, synced=synced, own_dir=own_dir, moved_from=moved_from)
    except OSError as exc:
        global _said_unrecorded
        if _said_unrecorded:  # once a process (a first sync registers twice)
            return
        _said_unrecorded = True
        where = exc.filename or paths.registry_path()
        _warn(
            f"{where}: cannot record {root} in the project registry ({exc.strerror or exc}); `nexusmem"
            " projects` and --all-projects will not list it until a sync can"
        )


def _register(
    root: Path, project_id: str, *, synced: bool, own_dir: bool = False, moved_from: Sequence[Path] = ()
) -> None:
    projects = load()
    key = str(root)
    gone = {str(folder) for folder in moved_from if str(folder) != key and not os.path.lexists(folder)}
    before = [p for p in projects if p.get("root") in gone]
    if before:
        # `projects` listed them as MISSING and doctor as a problem until `projects --prune`.
        projects = [p for p in projects if p not in before]
    entry = next((p for p in projects if p.get("root") == key), None)
    if entry is None:
        added = [p["added"] for p in before if isinstance(p.get("added"), int)]
        entry = {"root": key, "added": min(added, default=int(time.time() * 1000)), "own_dir": own_dir}
        projects.append(entry)
    elif own_dir:
        entry["own_dir"] = True
    entry["id"] = project_id
    entry["name"] = root.name
    entry["db"] = str(paths.db_path(root))
    if synced:
        entry["lastSync"] = int(time.time() * 1000)
    projects.sort(key=lambda p: str(p.get("root")))
    _save(projects)


def last_sync(root: Path) -> int | None:
    """When ROOT's memory was last written by a sync (epoch ms, as recorded), None if never recorded."""
    entry = next((p for p in load() if p.get("root") == str(root)), None)
    value = entry.get("lastSync") if entry else None
    return value if isinstance(value, int) else None


def prune() -> list[dict[str, Any]]:
    """Remove entries whose database no longer exists; return what was removed."""
    with _locked():
        projects = load()
        gone = [p for p in projects if not Path(str(p.get("db", ""))).exists()]
        if gone:
            _save([p for p in projects if p not in gone])
        return gone


def allows(
    root: Path, settings: dict[str, Any], *, tracked: bool, made_here: Callable[[], bool] | None = None
) -> bool:
    """Whether ROOT's config may use SETTINGS (config.reaching_out): the user confirmed exactly these
    (`nexusmem trust`), or NexusMem made ROOT's .nexusmem/ on this machine (a config it wrote, edited by its
    user; an entry from before this was recorded counts too: it was set up by a release that used them) and
    git does not track the config (TRACKED: a `git pull` writes a committed one over the user's). A
    .nexusmem/ that came with the repository (committed, or in an archive) is neither. With no entry for
    ROOT (a registry that could not be read, since rewritten; a repository moved), MADE_HERE says whether
    NexusMem made the folder (project.made_here: the memory records it)."""
    entry = next((p for p in load() if p.get("root") == str(root)), None)
    if entry is None:
        return made_here is not None and made_here() and not tracked
    if entry.get("trusted") == settings:
        return True
    return entry.get("own_dir", True) is True and not tracked


def own_dir(root: Path) -> bool:
    """Whether ROOT's entry says NexusMem made its .nexusmem/ on this machine (an entry from before this was
    recorded counts, as allows counts it); False with no entry."""
    entry = next((p for p in load() if p.get("root") == str(root)), None)
    return entry is not None and entry.get("own_dir", True) is True


def trust(root: Path, project_id: str, settings: dict[str, Any] | None) -> None:
    """Record SETTINGS as confirmed for ROOT's config (None: forget what was confirmed)."""
    with _locked():
        _register(root, project_id, synced=False)
        projects = load()
        entry = next(p for p in projects if p.get("root") == str(root))
        if settings is None:
            entry.pop("trusted", None)
        else:
            entry["trusted"] = settings
        _save(projects)
