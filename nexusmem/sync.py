"""Sync: run each enabled source and store what it finds. Sources → nodes → store, one transaction per source."""

from __future__ import annotations

import _thread
import contextlib
import errno
import json
import os
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nexusmem import autosync, gitcmd, paths, registry
from nexusmem import project as project_mod
from nexusmem.errors import NexusMemError, StoreError, UsageError
from nexusmem.markup import seen_text
from nexusmem.nodes import Node, node_problem
from nexusmem.project import Project
from nexusmem.sources import registry as sources
from nexusmem.sources.base import (
    ConversationReader,
    ProgressFn,
    ScanContext,
    ScanResult,
    Source,
    _no_progress,
)
from nexusmem.store.nodes import PROJECT_ID_KEY
from nexusmem.text import one_line

# Set by migration 7 or 10 in a store that already held commits (value "1", "defined"), by scrub ("scrub") or
# by a user-wide forget entry new to this store ("forget"): the next git
# scan (a full walk: the cursor was cleared with it) derives every commit's change words again.
BACKFILL_CHANGE_WORDS = "backfill.changeWords"

if TYPE_CHECKING:
    from nexusmem.embed.index import EmbedSummary
    from nexusmem.hygiene.denylist import Matcher
    from nexusmem.link import LinkSummary
    from nexusmem.store.interface import SyncStore
    from nexusmem.store.nodes import Kept
    from nexusmem.structure.scan import StructurePlan


@dataclass
class SourceSummary:
    name: str
    added: int = 0
    updated: int = 0
    removed: int = 0
    skipped: int = 0
    denied: int = 0  # nodes the deny-list (forget) dropped before they were stored
    seconds: float = 0.0
    noop: bool = False
    notes: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)  # where skipped bad records were (first few)
    skipped_because: str | None = None  # why the source read nothing (ScanResult.skipped_because)


@dataclass
class SyncSummary:
    root: str
    sources: list[SourceSummary] = field(default_factory=list)
    seconds: float = 0.0  # the sync's own time, without waiting for another one to finish
    waited: float = 0.0  # how long it waited for another sync of this project (its run lock) first
    initialised: bool = False
    rebuilt: bool = False
    total_nodes: int = 0
    links: LinkSummary | None = None  # set when failure → fix linking ran
    links_asked: bool = False  # `--link-failures`: the line says what linking did, even nothing
    embedding: EmbedSummary | None = None  # set when the embedding pass ran
    structure: StructurePlan | None = None  # set when the import-structure pass ran
    moved: str | None = None  # the project id changed and its nodes were re-keyed: what to say (_moved_note)

    @property
    def added(self) -> int:
        return sum(s.added for s in self.sources)

    @property
    def updated(self) -> int:
        return sum(s.updated for s in self.sources)

    @property
    def removed(self) -> int:
        return sum(s.removed for s in self.sources)

    def timing_lines(self) -> list[str]:
        """`sync --verbose`: one line per phase (each source, then the embedding pass) with its time and
        rate, so a slow first sync shows where its seconds went (sync's TIMING gets each as it ends)."""
        lines = [source_timing(s) for s in self.sources]
        if self.embedding is not None:
            lines.append(embed_timing(self.embedding))
        lines.append(self.total_timing())
        return lines

    def total_timing(self) -> str:
        waited = f" (and {self.waited:.2f}s waiting for another sync first)" if self.waited >= 0.01 else ""
        return f"timing: total {self.seconds:.2f}s{waited}"

    def describe(self) -> str:
        """The one-paragraph summary `nexusmem sync` prints at the end (and the MCP sync_project returns)."""
        summary = self
        parts = []
        for s in summary.sources:
            if s.noop and s.skipped_because:
                text = f"{s.name} skipped ({s.skipped_because})"
            elif s.noop:
                text = f"{s.name} unchanged"
            else:
                text = f"{s.name} +{s.added}"
            if s.updated:
                text += f" ~{s.updated}"
            if s.removed:
                text += f" -{s.removed}"
            if s.skipped:
                text += f" ({s.skipped} skipped)"
            if s.denied:
                text += f" ({s.denied} denied)"
            parts.append(text)
        head = (
            "Initialised and synced" if summary.initialised else ("Rebuilt" if summary.rebuilt else "Synced")
        )
        waited = f" (after waiting {summary.waited:.2f}s for another sync)" if summary.waited >= 0.01 else ""
        text = (
            f"{head} {one_line(str(summary.root))} in {summary.seconds:.2f}s{waited}: {'; '.join(parts) or 'no sources enabled'}. "
            f"{summary.total_nodes} node(s) in memory."
        )
        links = summary.links
        if links is not None and (summary.links_asked or links.added or links.removed):
            if links.skipped:
                text += " Failure links: nothing new to link."
            else:
                text += (
                    f" Failure links: {links.failures} failure(s) checked; {links.retry} retry, {links.commit} commit,"
                    f" {links.discussion} discussion (+{links.added} -{links.removed})."
                )
        embedding = summary.embedding
        if embedding is not None and embedding.embedded:
            text += (
                f" Embedded {embedding.embedded} node(s) ({embedding.provider}) in {embedding.seconds:.2f}s of"
                f" that; {embedding.vectors} vector(s)."
            )
        return text

    def to_json(self) -> dict[str, Any]:
        return {
            "root": self.root,
            "initialised": self.initialised,
            "rebuilt": self.rebuilt,
            "seconds": round(self.seconds, 3),
            "waited_seconds": round(self.waited, 3),
            "added": self.added,
            "updated": self.updated,
            "removed": self.removed,
            "total_nodes": self.total_nodes,
            "links": self.links.to_json() if self.links is not None else None,
            "embedding": self.embedding.to_json() if self.embedding is not None else None,
            "structure": _structure_json(self.structure),
            "sources": [
                {
                    "name": s.name,
                    "added": s.added,
                    "updated": s.updated,
                    "removed": s.removed,
                    "skipped": s.skipped,
                    "denied": s.denied,
                    "seconds": round(s.seconds, 3),
                    "noop": s.noop,
                    "notes": s.notes,
                    "problems": s.problems,
                    "skipped_because": s.skipped_because,
                }
                for s in self.sources
            ],
        }


def source_timing(s: SourceSummary) -> str:
    """One source's `sync --verbose` line: its time, what it wrote and the rate."""
    count = s.added + s.updated + s.removed
    rate = f", {count / s.seconds:,.0f}/s" if count and s.seconds > 0 else ""
    what = "unchanged" if s.noop else f"{count} node(s) written"
    return f"timing: {s.name} {s.seconds:.2f}s ({what}{rate})"


def embed_timing(e: EmbedSummary) -> str:
    rate = f", {e.embedded / e.seconds:,.0f}/s" if e.embedded and e.seconds > 0 else ""
    return f"timing: embed {e.seconds:.2f}s ({e.embedded} item(s) embedded{rate})"


def _structure_json(plan: StructurePlan | None) -> dict[str, Any] | None:
    if plan is None:
        return None
    return {
        "files": plan.files,
        "parsed": len(plan.parsed),
        "edges": plan.edges,
        "added": len(plan.add),
        "removed": len(plan.remove),
        "skipped": plan.skipped,
        "seconds": round(plan.seconds, 3),
    }


def _storable(nodes: Iterable[Node], result: ScanResult) -> Iterator[Node]:
    """NODES without the ones the store cannot hold (nodes.node_problem), each skipped with its ref."""
    for node in nodes:
        problem = node_problem(node)
        if problem is None:
            yield node
        else:
            result.skip(f"{node.kind} {node.ref[:80]!r}: {problem}")


# One line per source for `status` (meta key STATE_KEY + source name): why an opt-in source was skipped.
STATE_KEY = "state:"


def source_states(store: SyncStore) -> dict[str, str]:
    """{source: its last sync's one-line state} for the sources that left one."""
    found: dict[str, str] = {}
    for row in store.sources():
        value = store.get_meta(STATE_KEY + str(row["name"]))
        if value:
            found[str(row["name"])] = value
    return found


# A bounded history of where bad records were skipped, per source (meta key PROBLEMS_KEY + source name).
PROBLEMS_KEY = "skipped:"
PROBLEMS_KEPT = 20


# Node kinds a rebuild may not be able to read again (Store.history_nodes), and the source that writes them.
_HISTORY_OWNERS = {
    "conversation_turn": "conversation",
    "shell_command": "conversation",
    "github_thread": "github",
}


def _history(store: SyncStore) -> dict[str, list[Node]]:
    """Store.history_nodes as nodes to store again, by the source that wrote them."""
    held = store.history_nodes()
    files: dict[str, list[str]] = {}
    for node_id, path in store.files_of_many([n.id for n in held]):
        files.setdefault(node_id, []).append(path)
    out: dict[str, list[Node]] = {}
    for s in held:
        node = Node(
            project=s.project_id, kind=s.kind, source=s.source, natural_key=s.natural_key, ref=s.ref,
            title=s.title, body=s.body, ts=s.ts, signal=s.signal, group=s.group,
            files=tuple(files.get(s.id, ())), meta=s.meta, id=s.id, words=s.words,
        )  # fmt: skip
        out.setdefault(_HISTORY_OWNERS[s.kind], []).append(node)
    return out


def _held_turn_keys(history: dict[str, list[Node]]) -> Callable[[str], list[str]]:
    """Store.turn_keys over the conversation turns a rebuild took out (HISTORY), in the order they were stored."""

    def turn_keys(agent: str) -> list[str]:
        return [
            n.natural_key
            for n in history.get("conversation", ())
            if n.kind == "conversation_turn"
            and n.natural_key.startswith(f"{agent}:")
            and n.natural_key.endswith(":0")
        ]

    return turn_keys


def _keep_history(
    store: SyncStore,
    deny: Matcher | None,
    owner: str,
    held: list[Node],
    covers: Callable[[dict[str, Any]], bool] | None,
    log: Callable[[str], None] | None,
    part: SourceSummary | None,
) -> None:
    """A rebuild's OWNER (None for PART: it did not run) wrote back what it read: store again the nodes of
    HELD it neither wrote back nor COVERS (their transcript is gone, gh was logged out, the source is off),
    as a sync keeps them, and say how many. A value forgotten since stays out (DENY)."""
    present = store.get_many([n.id for n in held], light=True)
    back = [n for n in held if n.id not in present and not (covers is not None and covers(n.meta))]
    if not back:
        return
    counts = store.upsert(deny.filter(back) if deny else back)
    kept = counts.added
    if owner == "conversation":
        what = f"kept {kept:,} node(s) of agent transcripts" + (
            " no longer on disk (turns and the agent's commands): history a rebuild cannot read again"
            if part is not None
            else ": the source is off in this rebuild (`sync --rebuild --conversation` reads them again)"
        )
    else:
        what = f"kept {kept:,} GitHub thread(s) this rebuild did not read again" + (
            "" if part is not None else ": the source is off in this rebuild (`--github` reads them again)"
        )
    if log:
        log(f"{owner}: {what}")
    if part is not None:
        part.notes.append(what)


def _dropped_note(count: int) -> str:
    """What a sync says of the doc sections with a review verdict or a stale mark that went with no heir to
    take it (an upgrade no longer cuts them: an RST file's comment-only preamble)."""
    return f"{count} reviewed node(s) no longer in the docs: their verdicts were dropped"


def _redact_said(result: ScanResult) -> None:
    """RESULT's problems, notes and state redacted: each can quote what the source read (a record's type, a
    call's id, a file's name, what a tool printed), and each is stored or printed. Here, once for every
    source, after its nodes were read (a source redacts what it puts in nodes itself)."""
    if not (result.problems or result.notes or result.state or result.skipped_because):
        return  # a sync with nothing to say loads no redaction engine
    from nexusmem.redact import redact

    result.problems = [redact(p) for p in result.problems]
    result.notes = [redact(n) for n in result.notes]
    if result.state:
        result.state = redact(result.state)
    if result.skipped_because:
        result.skipped_because = redact(result.skipped_because)


def record_problems(store: SyncStore, source: str, problems: list[str], *, reset: bool = False) -> None:
    """Add PROBLEMS to SOURCE's skipped-record history (newest PROBLEMS_KEPT kept; RESET starts afresh).

    Kept across syncs because an incremental source reads a bad line once: the next sync skips nothing,
    and `status` must still say that (and where) something was passed over.
    """
    old = {} if reset else problem_history(store).get(source, {})
    # A log read again from its start (after `forget`, a rewrite of its head) skips the same bad lines
    # again: counted once (the kept history is how far back that can be told).
    known = {str(p.get("where")) for p in old.get("recent", []) if isinstance(p, dict)}
    problems = [where for where in problems if where not in known]
    if not problems and old:
        return
    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    recent = [*old.get("recent", []), *({"at": stamp, "where": where} for where in problems)]
    total = int(old.get("total", 0)) + len(problems)
    store.set_meta(
        PROBLEMS_KEY + source, json.dumps({"total": total, "recent": recent[-PROBLEMS_KEPT:]}, sort_keys=True)
    )


def _path_free_transcript_notes(project: Project, store: SyncStore) -> None:
    """Rewrite the skipped-record notes of transcripts that a release before kept with the transcript's path
    (and so its session id) to the form kept now, which names the file by a digest (`status --verbose` finds
    the path as it runs): they stayed until 20 newer notes pushed them out. Once: a memory that holds none
    costs one meta read per sync."""
    key = PROBLEMS_KEY + "conversation"
    raw = store.get_meta(key)
    if not raw:
        return
    try:
        data = json.loads(raw)
    except ValueError:
        return
    recent = data.get("recent") if isinstance(data, dict) else None
    if not isinstance(recent, list):
        return
    notes = [p for p in recent if isinstance(p, dict) and isinstance(p.get("where"), str)]
    from nexusmem.sources.conversation.source import path_free_notes

    wheres = [str(p["where"]) for p in notes]
    renamed = path_free_notes(wheres, project.root, store.cursor("conversation"))
    if renamed == wheres:
        return
    for note, where in zip(notes, renamed, strict=True):
        note["where"] = where  # in place, in RECENT: each keeps its time
    with store.transaction():
        store.set_meta(key, json.dumps({**data, "recent": recent}, sort_keys=True))


def problem_history(store: SyncStore) -> dict[str, dict[str, Any]]:
    """{source: {"total": n, "recent": [{"at", "where"}...]}} for every source that ever skipped a record."""
    found: dict[str, dict[str, Any]] = {}
    for row in store.sources():
        raw = store.get_meta(PROBLEMS_KEY + str(row["name"]))
        if not raw:
            continue
        try:
            data = json.loads(raw)
        except ValueError:
            continue
        if isinstance(data, dict) and data.get("total"):
            found[str(row["name"])] = data
    return found


def scan_context(
    project: Project, cursor: str | None = None, *, full: bool = False, progress: ProgressFn = _no_progress
) -> ScanContext:
    from nexusmem.store import atuin

    return ScanContext(
        root=project.root,
        project_id=project.id,
        config=project.config,
        cursor=cursor,
        full=full,
        progress=progress,
        # Foreign databases are read through the store (sources speak no SQL).
        known={"atuin_history": atuin.read_history},
    )


def enabled_sources(project: Project, only: list[str] | None = None) -> list[tuple[str, Source]]:
    """(name, source) of every source to run, in sync order."""
    names = only or list(sources.SOURCES)
    return [(name, sources.get(name)) for name in names if sources.enabled(name, project.config)]


RUN_LOCK_NAME = "sync.run.lock"
# How long a second sync waits for the one running (a `sync --rebuild` of a large repository takes minutes).
DEFAULT_WAIT_SECONDS = 600.0


class SyncBusyError(NexusMemError):
    """Another sync of this project held the lock for longer than we were willing to wait."""


class StoreRemovedError(StoreError):
    """memory.db was removed (or another file put in its place) while a sync wrote it: what the sync wrote
    went with the removed file, and the mark an earlier stopped sync left speaks of a memory that is gone."""


@contextlib.contextmanager
def _removed_meanwhile(db: Path) -> Iterator[None]:
    """Raise StoreRemovedError, whatever the sync in the block raised or if it raised nothing, when the
    database DB is gone or is another file at the end of it (the store closed by then); the -wal and -shm
    a removed one left beside no database are removed (store.db.drop_orphans). Without it a sync whose
    memory.db was deleted meanwhile crashed (FileNotFoundError, exit 3) and left its WAL to be replayed into
    the next new memory."""
    from nexusmem.store.db import drop_orphans

    try:
        before = os.stat(db)
    except OSError:
        before = None

    def removed() -> StoreRemovedError | None:
        if before is None:
            return None
        try:
            now = os.stat(db)
        except FileNotFoundError:
            drop_orphans(db)
            return StoreRemovedError(
                f"{db} was removed while this sync ran; run `nexusmem sync` to build the memory again"
            )
        except OSError:
            return None
        if (now.st_dev, now.st_ino) == (before.st_dev, before.st_ino):
            return None
        return StoreRemovedError(
            f"{db} was replaced by another file while this sync ran, which wrote to the one removed; run"
            " `nexusmem sync` to bring the memory there up to date"
        )

    try:
        yield
    except Exception as exc:
        gone = removed()
        if gone is not None:
            raise gone from exc
        raise
    gone = removed()
    if gone is not None:
        raise gone


# What a sync sets out to do, as its unfinished mark records it (paths.unfinished_scope): "rebuild", "all"
# (a plain sync), or the names of the only sources it reads (`sync --source`, a search's shell catch-up).
Scope = str | frozenset[str]


@contextlib.contextmanager
def exclusive(
    root: Path,
    wait: float,
    log: Callable[[str], None] | None,
    what: str = "sync",
    *,
    rebuild: bool = False,
    only: list[str] | None = None,
) -> Iterator[float]:
    """Hold this project's run lock (`.nexusmem/sync.run.lock`) for the duration: one writer at a time;
    gives how many seconds it waited for it.

    Without it a second sync started during a long `sync --rebuild` queued on SQLite's write lock and died
    after the 15 s busy timeout with "database is locked". Now it says it is waiting, waits up to WAIT
    seconds for the lock (an OS lock, released if its holder dies, even by SIGKILL), then gives up with a
    one-line SyncBusyError. `sync --auto` keeps its own coalescing lock (sync.lock) around this one.
    """
    from nexusmem.oslock import FileLock, Timeout

    state = paths.state_dir(root)
    lock = FileLock(state / RUN_LOCK_NAME)
    asked = time.perf_counter()
    try:
        lock.acquire(timeout=0)
    except OSError as exc:  # a folder that takes no lock file: a read-only mount, its permissions
        if exc.errno not in (errno.EROFS, errno.EACCES, errno.EPERM):
            raise
        raise _not_writable(state, exc, what) from None
    except Timeout:
        if wait <= 0:
            raise SyncBusyError(
                f"another sync of {root} is running; try again when it has finished"
            ) from None
        if log:
            log(f"waiting for another sync of this project to finish (up to {wait:.0f} s)…")
        try:
            lock.acquire(timeout=wait)
        except Timeout:
            raise SyncBusyError(
                f"another sync of {root} is still running after {wait:.0f} s; {what} gave up (try again when it"
                " has finished, or give a longer --wait)"
            ) from None
    waited = time.perf_counter() - asked
    # A sync's mark (paths.UNFINISHED_NAME) stays when it is killed or interrupted (Ctrl-C) on the way; an
    # error it reports (what the user reads, or the post-commit hook's log) takes it away like an end.
    mark = state / paths.UNFINISHED_NAME if what == "sync" else None
    scope: Scope = "rebuild" if rebuild else frozenset(only) if only else "all"
    # The mark of a sync stopped before, when this one does not finish what that one set out to do (a plain
    # sync after a stopped rebuild; `sync --source shell`, as a search's catch-up runs, after a stopped
    # sync): it outlives this sync, its time kept.
    left = None if mark is None else _left_unfinished(mark, scope)
    try:
        if mark is not None:
            _leave_mark(mark, scope if left is None else _joined(scope, left[0]))
        try:
            yield waited
        except NexusMemError as exc:
            if mark is not None:
                # A memory.db removed meanwhile took what a sync stopped before had left undone with it.
                _end_mark(mark, None if isinstance(exc, StoreRemovedError) else left)
            raise
        if mark is not None:
            _end_mark(mark, left)
    finally:
        lock.release()


def _covers(scope: Scope, stopped: Scope) -> bool:
    """Whether a sync that sets out to do SCOPE finishes what a stopped one that set out to do STOPPED left."""
    if isinstance(scope, frozenset):
        return isinstance(stopped, frozenset) and stopped <= scope
    return scope == "rebuild" or stopped != "rebuild"


def _joined(scope: Scope, stopped: Scope) -> Scope:
    """What is left to do when a sync that sets out to do SCOPE is stopped too, after one of STOPPED was."""
    if _covers(scope, stopped):
        return scope
    if isinstance(scope, frozenset) and isinstance(stopped, frozenset):
        return scope | stopped
    return stopped


def _left_unfinished(mark: Path, scope: Scope) -> tuple[Scope, float] | None:
    """What the stopped sync whose MARK is left set out to do, and the mark's time (st_mtime), when a sync of
    SCOPE does not finish it; None when there is no mark or this sync finishes it."""
    stopped = paths.unfinished_scope(mark)
    if stopped is None or _covers(scope, stopped):
        return None
    try:
        return stopped, mark.stat().st_mtime
    except OSError:
        return None


def _end_mark(mark: Path, left: tuple[Scope, float] | None) -> None:
    """Take this sync's MARK away, leaving the one of a sync stopped before it that it did not finish (LEFT:
    what that one set out to do, and its time)."""
    mark.unlink(missing_ok=True)
    if left is not None:
        with contextlib.suppress(OSError):
            _leave_mark(mark, left[0])
            os.utime(mark, (left[1], left[1]))


def _not_writable(state: Path, exc: OSError, what: str) -> StoreError:
    """The error for a memory folder STATE that takes no lock file (a read-only mount, its permissions), as
    query and status say it (store.health.explain); WHAT: the command (sync, forget, team push)."""
    return StoreError(
        f"{state} is not writable (a read-only file system or its permissions: {exc.strerror}): {what} writes"
        " its lock and the memory there; make it writable and run the command again"
    )


def _leave_mark(mark: Path, scope: Scope) -> None:
    """Leave the mark a sync stopped on the way leaves behind, saying what it set out to do (SCOPE): a
    rebuild's says so (paths.UNFINISHED_REBUILD: killed, it left the memory as it was, and what finishes it is
    another rebuild, not a sync), a sync of some sources only names them (paths.UNFINISHED_SOURCES)."""
    from nexusmem import private

    if isinstance(scope, frozenset):
        text = f"{paths.UNFINISHED_SOURCES} {' '.join(sorted(scope))}\n".encode()
    else:
        text = paths.UNFINISHED_REBUILD if scope == "rebuild" else b""
    with contextlib.suppress(OSError):  # a folder that takes no file: the sync still runs
        private.write_atomic(mark, text)


PROJECT_ID = PROJECT_ID_KEY  # the project id this store's nodes were last written under (identity.project_id)


ROOTS = "project.roots"  # {"roots": the folders this memory was synced at, oldest first; "ino": its file's;
# "left": {folder: when this memory left it (epoch ms: the first sync at the next folder)}}
ROOTS_KEPT = 20


def _former_roots(project: Project, store: SyncStore) -> list[tuple[Path, int]]:
    """The folders this memory was synced at before that are gone now (the repository was moved: `mv`), each
    with when it left it, and records the current one. The hooks' log names the folder a command ran in: one
    logged there before the memory left (the first sync at the next folder) ran in this repository, and the
    shell sources read it as this one's (Attributor's FORMER); what is logged there later is another's, a
    repository made in its place and deleted since. A folder that is still there (another repository made in
    its place) keeps its commands; so does every folder of a copy's (its memory.db is another file: `mv`
    keeps the file, `cp` makes a new one), which starts a list of its own. A memory synced before the folders
    were recorded knows the one its project id names, when that is a path (a repository with no remote; its
    nodes' own id for a memory from before the id was recorded: _recorded_id). Read before _moved_note records
    the new id."""
    try:
        recorded = json.loads(store.get_meta(ROOTS) or "{}")
        ino = os.stat(project.db_path).st_ino
    except (ValueError, OSError):
        recorded, ino = {}, None
    recorded = recorded if isinstance(recorded, dict) else {}
    roots = [r for r in recorded.get("roots", ()) if isinstance(r, str)]
    left = recorded.get("left")
    left = {r: t for r, t in left.items() if isinstance(t, int)} if isinstance(left, dict) else {}
    legacy = _recorded_id(store) if "ino" not in recorded else None
    if legacy is not None and os.path.isabs(legacy):
        roots = [legacy]
    elif recorded.get("ino") != ino:
        roots, left = (
            [],
            {},
        )  # a copy of the memory (or one restored from a backup): the folders were another's
    here = str(project.root)
    now = int(time.time() * 1000)
    # Left now: a folder this sync is not at (one a release before recorded gave no time: it is given this one).
    kept_left = {r: left.get(r, now) for r in roots if r != here}
    if roots[-1:] != [here] or recorded.get("ino") != ino or kept_left != left:
        kept = [*(r for r in roots if r != here), here][-ROOTS_KEPT:]
        kept_left = {r: t for r, t in kept_left.items() if r in kept}
        with store.transaction():
            store.set_meta(ROOTS, json.dumps({"roots": kept, "ino": ino, "left": kept_left}))
    return [(Path(r), kept_left[r]) for r in roots if r != here and r in kept_left and not os.path.lexists(r)]


def _recorded_id(store: SyncStore) -> str | None:
    """The project id this store's nodes were last written under: the `project.id` meta, or for a memory a
    release before it built (which recorded none), the id its newest node was written under."""
    return store.get_meta(PROJECT_ID) or store.written_project_id()


def _moved_note(project: Project, store: SyncStore) -> str | None:
    """Keep a memory whose project id changed: a repository with no remote is known by its path, so moving or
    copying it (or giving it its first remote) changes the id of every node it writes. Before any source
    runs, the nodes recorded under the old id are given their ids under the new one (store.rekey_project:
    verdicts, first-recorded times and links stay on them), so the sources find them as they left them and
    nothing is written twice. Returns what to say when nodes were re-keyed; None when the id is the one
    recorded (every sync but the first and a move's: no write)."""
    recorded = store.get_meta(PROJECT_ID)
    if recorded == project.id:
        return None
    recorded = recorded or store.written_project_id()
    respelled = bool(recorded) and _respelled(str(recorded), project.id)
    with store.transaction():
        rekeyed = store.rekey_project(project.id)
        store.set_meta(PROJECT_ID, project.id)
        if (
            respelled
        ):  # the team rows pushed under the old spelling go with the next push (team._drop_unclean)
            store.leave_team_id(str(recorded))
    if not rekeyed:
        return None
    if respelled:
        how = f"the origin URL's spelling {recorded} now reads as the same origin as every clone's: {project.id}"
    elif recorded and _held_a_credential(recorded, project.id):  # printed, and logged by a post-commit sync
        how = f"from the previous id, which held a credential of the origin URL, to {project.id}"
    else:
        how = f"it was moved, copied or given a remote: {recorded or 'an older id'} → {project.id}"
    return f"this repository's id changed ({how}); its {rekeyed} node(s) now go by the new id, with their verdicts"


def _respelled(recorded: str, now: str) -> bool:
    """Whether the project id RECORDED, which an older release made, is another spelling of the origin that
    is NOW today (`file:///x/origin`, read as the path `/x/origin` since)."""
    from nexusmem.identity import normalise_url

    return recorded != now and recorded.startswith("file://") and normalise_url(recorded) == now


def _held_a_credential(recorded: str, now: str) -> bool:
    """Whether the project id RECORDED, which an older release made and is now NOW, may hold a credential
    of the origin URL, one the redaction rules may no longer see (lower-cased: `aizasy…`): it holds a secret
    they find, NOW holds a redacted one, or RECORDED is NOW's remote with more (a query, a fragment, a user
    part). Not a moved repository's path, nor another remote's id: those are named."""
    from nexusmem.identity import normalise_url
    from nexusmem.redact import redact

    return "«redacted:" in now or redact(recorded) != recorded or normalise_url(f"x://{recorded}") == now


RELEASES_READ = "releases.read"  # the git cursor (HEAD and every ref) the stored releases were read at
# Which reading of tag names the stored releases come from: bumped when more tags count as versions (2: pre-
# and post-releases, "2.0.0-alpha.1", "2.9.0.post0"), so a memory read before reads its tags again once.
RELEASES_FORMAT = "2"


def _read_releases(root: Path, store: SyncStore, denied: Callable[[str], bool] | None = None) -> None:
    """Keep the store's version tags (sources.git.releases) in step with the repository: read again only
    when a ref moved since the last read (the git cursor fingerprints every ref, tags included). A tag whose
    name holds a value `nexusmem forget` was told to forget (DENIED) is left out."""
    cursor = store.cursor("git")
    if cursor is None or store.get_meta(RELEASES_READ) == f"{cursor}#{RELEASES_FORMAT}":
        return
    from nexusmem.sources.git import releases

    found = [r for r in releases.read(root) if denied is None or not denied(r.name)]
    with store.transaction():
        store.replace_releases((r.name, r.version, r.sha, r.ts) for r in found)
        store.set_meta(RELEASES_READ, f"{cursor}#{RELEASES_FORMAT}")


# The first set-up of a memory (project.init) comes before the run lock, which lives in the folder it makes:
# two threads of one process (the MCP server's sync_project calls at once) set up one at a time, and the
# second finds the memory made (it saw the first's half-made memory.db as one cut short) and waits for the
# run lock as a second `nexusmem sync` does. `_thread`, built in: `threading` costs a sync ~3 ms of imports.
_SETTING_UP = _thread.allocate_lock()


def sync(
    start: Path | str | None = None,
    *,
    rebuild: bool = False,
    only: list[str] | None = None,
    progress: ProgressFn = _no_progress,
    log: Callable[[str], None] | None = None,
    link_failures: bool = False,
    embed: bool = True,
    wait: float = DEFAULT_WAIT_SECONDS,
    enable: list[str] | None = None,
    timing: Callable[[str], None] | None = None,
    busy_ms: int | None = None,
    ignore_stash: bool = False,
) -> SyncSummary:
    """Bring the project's memory up to date; initialise it first when needed.

    Each source runs in its own transaction: its nodes, its pruning and its cursor land together or not at
    all, so an interrupted sync leaves the store as it was before that source began. LINK_FAILURES then
    links failed shell commands to their fixes (nexusmem.link.link_recent) in one more transaction. EMBED
    then gives new and changed nodes a vector (nexusmem.embed.index), one committed batch at a time.
    ENABLE turns sources that are off in the config on for this run only (`sync --conversation`).
    A sync that wrote anything links as LINK_FAILURES does (what the new nodes can have changed); LINK_FAILURES
    links after a sync that wrote nothing too, and makes the summary line say what linking did.
    TIMING (`sync --verbose`) gets each phase's line as that phase ends, and the total's at the end: a
    sync stopped on the way has said where its time went so far. BUSY_MS bounds how long a write waits for
    another process's write lock (the store's own busy timeout when None): a search's shell catch-up waits
    for none.
    A memory that `git stash --all` took is not built again in its place unless IGNORE_STASH (project.init).
    """
    started = time.perf_counter()
    initialised = False
    root = project_mod.own_root(Path(start) if start is not None else Path.cwd())
    if root is None:  # no memory here yet, or a layout only git can name: ask git
        root = paths.repo_root(start)
    with _SETTING_UP:
        if not project_mod.is_initialised(root):
            project_mod.init(root, ignore_stash=ignore_stash)
            initialised = True
    project = project_mod.at(root)
    if enable:
        project = _with_enabled(project, enable)
    summary = SyncSummary(root=str(project.root), initialised=initialised, rebuilt=rebuild)
    # `--rebuild --source NAME` reads those sources again from the start (every cursor of theirs ignored)
    # and leaves the others' nodes as they are: emptying the whole store for them left a memory of that one
    # source, and the verdicts of every other node (not read back in that sync) were lost with it.
    whole_rebuild = rebuild and not only
    with (
        exclusive(project.root, wait, log, rebuild=whole_rebuild, only=only) as waited,
        _removed_meanwhile(project.db_path),
        project.open_store() as store,
        contextlib.ExitStack() as whole,
        gitcmd.snapshot(),  # one state of the repository for every source (HEAD, refs, index asked once)
    ):
        from nexusmem.hygiene import hooklog
        from nexusmem.hygiene.forget import sync_gate

        if busy_ms is not None:
            store.set_busy(busy_ms)

        # The deny-list's one gate: every source's nodes pass through it before the store sees them.
        deny = sync_gate(store, log)
        # The same gate for one text a sync reads rather than stores (a path, a tag, a change word).
        denied: Callable[[str], bool] | None = (lambda text: deny.which([text]) is not None) if deny else None
        # No raw secret outlives this sync in the hooks' log or the bash scratch files (in place, no line
        # lost: see nexusmem.hygiene.hooklog). Before the sources, so the shell source reads redacted lines.
        # A value forgotten without --global blanks this project's lines only (another's are its own sync's).
        anywhere, here = deny.scopes()
        redacted, notes = hooklog.redact_pass(
            (lambda texts: anywhere.which(texts) is not None) if anywhere else None,
            here=(lambda texts: here.which(texts) is not None) if here else None,
            root=project.root,
        )
        if log:
            for note in notes:
                log(note)
        former_roots = _former_roots(project, store)
        moved = summary.moved = _moved_note(project, store)
        if moved and log:
            log(f"git: {moved}")
        _path_free_transcript_notes(project, store)
        kept: list[Kept] = []
        kept_links: list[tuple[str, str, str, int]] = []
        commands_before = 0
        rebuilt_after = 0
        history: dict[str, list[Node]] = {}  # what a rebuild may not read again, by the source that wrote it
        # Node id → its heir's, as the sources paired them (a rebuild's read-back hands verdicts on too).
        named_heirs: dict[str, str] = {}
        if whole_rebuild:
            # One transaction for the whole rebuild: readers (an agent's search) keep seeing the old memory
            # until the new one is complete, never an empty store. Ids are content-addressed, so re-ingested
            # nodes come back with the same id: first-recorded times (for --as-of) and human verdicts are
            # put back at the end, and those of a node whose id moved (a section an upgrade re-keyed) go to
            # its heir, as a sync's prune hands them on.
            whole.enter_context(store.transaction())
            kept = store.bookkeeping()
            rebuilt_after = store.write_seq()
            kept_links = store.all_links()
            commands_before = store.counts_by_kind().get("shell_command", 0)
            history = _history(store)
            store.delete_all_nodes()
            store.reset_cursors()
        # Where the store's writes stood before any source ran: the diff source reads the patches of the
        # commits new to memory (those the git source stores in this sync), not of every commit a checkout
        # of another branch brings back to HEAD.
        seq_at_start = store.write_seq()
        # What one source asked git that the next may ask again (the git and the diff source both list the
        # whole history to prune after a rewrite, a second each on git/git, and which commits since the last
        # HEAD memory held): kept for this sync only.
        git_walks: dict[tuple[str, ...], Any] = {}
        running = enabled_sources(project, only)
        for owner in history.keys() - {name for name, _ in running}:
            # Before any source runs (the session source reads the turns): none of these is read again.
            _keep_history(store, deny, owner, history[owner], None, log, None)
        for name, source in running:
            part = SourceSummary(name=name)
            t0 = time.perf_counter()
            reason = store.get_meta(BACKFILL_CHANGE_WORDS) if name == "git" else None
            backfill = reason is not None
            if backfill:
                commits = store.counts_by_kind().get("git_commit", 0)
                why = {"scrub": "after a scrub", "forget": "after a forget"}.get(
                    reason or "", "after an upgrade"
                )
                message = f"git: deriving the change words of the {commits} commit(s) already in memory (once, {why})"
                if reason == "renames":
                    message = (
                        f"git: reading the {commits} commit(s) already in memory again for the files they"
                        " renamed (once, after an upgrade)"
                    )
                if log and commits:  # a memory with no commit yet has nothing to derive: nothing to say
                    log(message)
                if commits:
                    part.notes.append(message.removeprefix("git: "))
            # A source that reports its own progress (in its own unit, with a total) owns the bar; the
            # store's batch counts (nodes) stand in only for one that does not.
            reported: list[bool] = []

            def source_progress(
                label: str, done: int, total: int | None, seen: list[bool] = reported
            ) -> None:
                seen[:] = [True]
                progress(label, done, total)

            with store.transaction():
                previous = store.cursor(name)
                ctx = scan_context(
                    project,
                    previous,
                    full=rebuild or previous is None,
                    progress=_no_progress if progress is _no_progress else source_progress,
                )
                # What is stored already, for a source that must not add a command twice (atuin), and what
                # the sources before it stored since it last looked (a hook's line read after atuin's row).
                ctx.known["shell_commands_written_after"] = store.shell_commands_written_after
                ctx.known["shell_command_stamps"] = store.shell_command_stamps
                # An agent's call seen both by its hook and in its transcript: what the other sighting gave.
                ctx.known["agent_calls_stored"] = store.agent_calls_stored
                ctx.known["write_seq"] = store.write_seq
                # The pull requests found closing each stored issue (the GitHub source reads an issue again
                # without them when only the issue changed).
                ctx.known["thread_closers"] = store.thread_closers
                # Where the redaction pass stopped in the hooks' log (0: it did not run): the shell source
                # fingerprints its offset with bytes no later pass rewrites.
                ctx.known["log_redacted_to"] = redacted.end
                # Where that pass started: what no earlier sync of any project had read (a bad line naming
                # no folder is counted once, by the first sync that reads it).
                ctx.known["log_new_from"] = redacted.start
                # Read-only: the session source summarises the conversation turns already stored.
                conversations: ConversationReader = store
                ctx.known["conversations"] = conversations
                # The turns stored before (a rebuild's: those it took out to write again), by their keys: a
                # resumed agent session repeats them in a new transcript, and they must stay where they are.
                ctx.known["turn_keys"] = _held_turn_keys(history) if whole_rebuild else store.turn_keys
                ctx.known["commits_in_memory"] = lambda shas: store.commits_stored_by(shas, seq_at_start)
                ctx.known["git_walks"] = git_walks
                ctx.known["former_roots"] = former_roots  # the shell sources read commands run there as ours
                # A clone made shallower keeps the commits behind its new cut (the git sources' keep()), and the
                # changelog's links to them.
                ctx.known["commit_ancestors"] = store.commit_ancestors
                ctx.known["commit_texts"] = store.commit_texts
                # The commits of one author time, for the git source to tell a rebase's replays (Replays).
                ctx.known["commits_authored_at"] = lambda ts: store.commits_authored_at(ts, seq_at_start)
                ctx.known["links_from"] = store.links_from
                if denied is not None:
                    # Text a source derives rather than stores (a commit's change words) is checked here.
                    ctx.known["denied"] = denied
                result = source.scan(ctx)
                done = 0

                def batch_done(n: int, label: str = name, seen: list[bool] = reported) -> None:
                    nonlocal done
                    done += n
                    if not seen:
                        progress(label, done, None)

                dropped_before = deny.dropped
                written_before = store.write_seq()  # what this source writes comes after (prune's heirs)
                nodes = _storable(result.nodes, result)
                counts = store.upsert(deny.filter(nodes) if deny else nodes, on_batch=batch_done)
                part.added, part.updated = counts.added, counts.updated
                part.denied = deny.dropped - dropped_before
                if result.keep is not None:
                    pruned = store.prune_source(
                        name, result.keep, heirs_after=written_before, named=result.heirs, seen=seen_text
                    )
                    part.removed = pruned.removed
                    if pruned.verdicts_dropped:
                        result.notes.append(_dropped_note(pruned.verdicts_dropped))
                named_heirs.update(result.heirs)
                _redact_said(result)
                part.skipped = result.skipped
                part.notes += result.notes
                part.problems = list(result.problems)
                if result.problems or rebuild:
                    record_problems(store, name, result.problems, reset=rebuild)
                if result.links is not None and result.link_scope is not None:
                    store.replace_links_from(result.link_relation, result.link_scope, result.links)
                elif result.links is not None:
                    store.replace_links(result.link_relation, result.links)
                part.skipped_because = result.skipped_because
                if result.state:
                    store.set_meta(STATE_KEY + name, result.state)
                else:
                    store.delete_meta(STATE_KEY + name)
                if backfill:
                    store.delete_meta(BACKFILL_CHANGE_WORDS)
                part.noop = not (counts.added or counts.updated or part.removed)
                store.record_sync(name, result.cursor, part.added, part.updated, part.removed, part.skipped)
                if name in history:
                    _keep_history(store, deny, name, history[name], result.covers, log, part)
            part.seconds = time.perf_counter() - t0
            summary.sources.append(part)
            if timing:
                timing(source_timing(part))
            if log and result.notes:
                for note in result.notes:
                    log(f"{name}: {note}")
        if whole_rebuild:
            commands_after = store.counts_by_kind().get("shell_command", 0)
            if commands_after < commands_before:
                # The hook log names the folder each command ran in: a repository moved or copied since no
                # longer owns the ones it held (nothing else writes them back).
                lost = (
                    f"the rebuild read back {commands_after:,} of the {commands_before:,} shell command(s)"
                    " memory held: the others ran in a folder that is not this repository's now (moved or"
                    " copied since?), or their log lines are gone"
                )
                if log:
                    log(f"shell: {lost}")
                for part in summary.sources:
                    if part.name == "shell":
                        part.notes.append(lost)
        if kept:
            dropped = store.restore_bookkeeping(
                kept, heirs_after=rebuilt_after, named=named_heirs, seen=seen_text
            )
            docs_part = next((p for p in summary.sources if p.name in ("docs", "changelog")), None)
            if dropped and docs_part is not None:
                docs_part.notes.append(_dropped_note(dropped))
                if log:
                    log(f"{docs_part.name}: {_dropped_note(dropped)}")
        if kept_links:
            store.restore_links(kept_links)

        def phase(name: str, started: float, what: str) -> float:
            """`sync --verbose`: a step after the sources, timed as each source is (it was time no line
            named: 14 s of cargo's 29 s re-deriving the notes commits borrow, after a checkout and back)."""
            now = time.perf_counter()
            if timing:
                timing(f"timing: {name} {now - started:.2f}s ({what})")
            return now

        t_after = time.perf_counter()
        for part in summary.sources:
            if part.name == "git":
                _read_releases(project.root, store, denied)
                with store.transaction():
                    store.fill_generations(
                        changed=not part.noop, written_after=seq_at_start, removed=part.removed > 0
                    )
                if moved:
                    part.notes.append(moved)
        # Changelog entries and GitHub threads lend their words to the commits they describe (or that closed
        # them); either side may have changed.
        t_after = phase("history", t_after, "releases, commit generations")
        with store.transaction():
            store.refresh_notes(("changelog", "github"), "git_commit")
        whole.close()  # commits the rebuild, if there is one
        t_after = phase("notes", t_after, "changelog entries' and threads' words lent to commits")
        if any(part.removed for part in summary.sources):
            # The rows a prune deleted are zeroed in the database (secure_delete, store/connection.py); the
            # WAL's older frames may hold them still while another process keeps it from being reset.
            store.truncate_wal()
        from nexusmem.hygiene.forget import rekey_seen

        rekey_seen(store, deny)  # older salted-hash entries whose value a match just revealed
        if only is None and project.config.get("structure", {}).get("enabled", True):
            from nexusmem.structure import scan as structure

            try:
                summary.structure = structure.run(
                    project.root,
                    store,
                    project.config,
                    denied=denied,
                )
            except NexusMemError as exc:  # git failed: the structure is advice, never a failed sync
                if log:
                    log(f"structure: skipped ({exc})")
            t_after = phase("structure", t_after, "import edges")
        # A sync that wrote anything links what it can have changed (the incremental linker: ~0.07 s after a
        # few new commands, 0.9 s for the first pass over 10k commits and 80k commands, a first sync of 13 s),
        # so a plain `nexusmem sync` makes the failure → fix and discussion links too, not only `--auto` and
        # `--link-failures` (which links after a sync that wrote nothing as well). A no-op sync does not load
        # the linker. A sync that pruned a fix (an amend, a rebase) links its failure again, or it would stay
        # unlinked until a run with nothing new to look at (the incremental linker's window) passed it by.
        wrote = any(not part.noop for part in summary.sources)
        if link_failures or wrote or store.relink_from() is not None:
            from nexusmem import link

            with store.transaction():
                summary.links = link.link_recent(store)
            summary.links_asked = link_failures
            t_after = phase("links", t_after, "failure → fix")
        if embed:
            # After the sources: batches commit one by one, so an interrupted pass resumes next sync.
            from nexusmem.embed.index import embed_pending

            summary.embedding = embed_pending(store, project.config, progress=progress, log=log)
            if timing:
                timing(embed_timing(summary.embedding))
            try:  # suggestions only: a missing or broken model must never fail a sync
                from nexusmem.hygiene.stale import auto_check

                auto_check(store, project.config, log)
            except Exception as exc:
                if log:
                    log(f"contradictions: skipped ({type(exc).__name__}: {exc})")
        summary.total_nodes = store.node_count()
        own = _own_dir(project.root, store)
        # SQLite only notices overwritten pages when it reads them; a sync may touch none of them and
        # must not then report success. ~36 ms per MB (13 ms for a 3 MB store), so only up to
        # END_CHECK_MAX_BYTES and bounded in time; a failed write is always checked (store.health).
        from nexusmem.store.health import END_CHECK_MAX_BYTES

        small = project.db_path.stat().st_size <= END_CHECK_MAX_BYTES
        problems = store.quick_check() if small else None
        if problems:
            from nexusmem.errors import StoreError
            from nexusmem.store.health import damaged_advice

            raise StoreError(
                f"{project.db_path} is damaged (quick_check: {'; '.join(problems[:2])}"
                + (f" and {len(problems) - 2} more" if len(problems) > 2 else "")
                + "); "
                f"{damaged_advice(project.db_path)}"
            )
    registry.register(
        project.root, project.id, synced=True, own_dir=own, moved_from=[p for p, _left in former_roots]
    )
    # A post-commit sync's failure this one caught up with leaves no mark for doctor or status to read.
    autosync.clear_failure(project.root)
    summary.waited = waited
    summary.seconds = time.perf_counter() - started - waited
    if timing:
        timing(summary.total_timing())
    return summary


def _own_dir(root: Path, store: SyncStore) -> bool:
    """Whether NexusMem made ROOT's .nexusmem/ on this machine, as the memory records it (project.made_here),
    recorded now when the registry says so and the memory does not yet (one set up by an earlier release):
    an entry made again later (after a projects.json that could not be read) keeps it."""
    if project_mod.made_here(root, store):
        return True
    if registry.own_dir(root):
        project_mod.mark_made_here(root, store)
        return True
    return False


def _with_enabled(project: Project, names: list[str]) -> Project:
    """PROJECT with the sources NAMES switched on in a copy of its config (nothing is written)."""
    import copy

    config = copy.deepcopy(project.config)
    for name in names:
        if name not in sources.SOURCES:
            raise NexusMemError(f"unknown source {name!r} (known: {', '.join(sources.SOURCES)})")
        config.setdefault("sources", {}).setdefault(name, {})["enabled"] = True
    return project.with_config(config)


def prune_source(start: Path | str | None, name: str, *, dry_run: bool = True) -> int:
    """Delete every node one source stored (NAME: a source, or 'shell:SHELL' for one shell's commands).

    With DRY_RUN (the default) nothing is deleted; the count of what would go is returned either way.
    """
    source, _, shell = name.partition(":")
    if source not in sources.SOURCES or (shell and source != "shell"):
        raise UsageError(f"unknown source {name!r} (known: {', '.join(sources.SOURCES)}, or shell:NAME)")
    project = project_mod.load(start)
    with project.open_store() as store:
        if dry_run:
            return store.count_source(source, shell=shell or None)
        with store.transaction():
            removed = store.delete_source(source, shell=shell or None)
            if not shell:
                store.record_sync(source, None, 0, 0, removed, 0)
                store.clear_cursor(source)
        return removed
