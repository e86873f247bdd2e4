"""The MCP server: four tools over stdio, each a thin typed wrapper over the library (the CLI is the other face).

Every tool takes an explicit absolute `projectRoot` (an MCP call carries no working directory), opens its own
store for the length of the call and closes it, and runs the blocking library work in a worker thread so the
event loop keeps answering. Failures are raised as `ToolError` (the client sees `isError` and the message),
never returned as text. While serving, the SDK points fd 1 at stderr, so a stray print cannot corrupt the
protocol; our own logging goes to stderr too.

`from __future__ import annotations` is safe here: the SDK reads tool signatures with
`inspect.signature(eval_str=True)` and `get_type_hints`, which resolve the string annotations against this
module's globals, so every type named in a tool signature or an output TypedDict is imported at module level.
"""

from __future__ import annotations

import functools
import inspect
import json
import logging
import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any, Literal, TypeVar, cast

import anyio
import anyio.from_thread
import anyio.to_thread
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import BeforeValidator, Field, ValidationError
from typing_extensions import NotRequired, TypedDict

from nexusmem import authors, catchup, paths, show, status, timefmt
from nexusmem import project as project_mod
from nexusmem import sync as sync_mod
from nexusmem.errors import (
    FirstSyncRunningError,
    NexusMemError,
    NotARepositoryError,
    NotInitialisedError,
    RefusedRepositoryError,
)
from nexusmem.mcp_handshake import INSTRUCTIONS, SERVER_NAME, SERVER_VERSION, Handshake
from nexusmem.project import Project
from nexusmem.retrieve import answer, rank, timecue
from nexusmem.retrieve import multi as multi_mod
from nexusmem.retrieve import query as query_mod
from nexusmem.retrieve.pack import estimate_tokens
from nexusmem.sources.base import ProgressFn
from nexusmem.store import Store, open_store
from nexusmem.terminal import spelled_data, terminal_safe
from nexusmem.text import one_line

log = logging.getLogger("nexusmem.mcp")

T = TypeVar("T")
F = TypeVar("F", bound=Callable[..., Any])
LogLevel = Literal["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"]
LOG_LEVELS: tuple[LogLevel, ...] = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")

MIN_PREFIX = show.MIN_PREFIX
# Bounds on what one search may ask: a 1 MB query took minutes (0.4 ms per word) and blocked its worker.
# The library now cuts a question past 8,000 characters before any per-word work (a pasted log answers,
# with a note), so the cap only guards the transport: 100,000 characters, far past any pasted log.
MAX_QUERY_CHARS = 100_000
MAX_BUDGET = 100_000
PROGRESS_INTERVAL_S = 0.25
NO_MEMORY_HINT = "run `nexusmem sync` in that repository, or call the sync_project tool"


# --- structured output shapes (the tools' outputSchema) ------------------------------------------------------
class SearchItem(TypedDict):
    id: str
    kind: str
    ts: str
    title: str
    summary: str
    provenance: str
    trust: str
    score: float
    project: str
    ref: str
    author: str | None  # a commit's author (git's name for them); null for any other kind
    linked_from: str | None
    also_in: list[str]  # refs of doc sections with the same text, packed once (this item)
    recorded_by: NotRequired[str]  # scope "team": the member who recorded it ("" = this machine)
    verdict_by: NotRequired[str]  # scope "team": the member whose verdict `trust` is ("" = none or yours)
    relation: (
        str | None
    )  # how it is linked to the item above it (linked_from); "release": what the release asked about holds
    superseded: bool  # marked by mark-stale
    superseded_by: str | None  # what replaced it, while memory holds that node
    projectRoot: NotRequired[str]  # allProjects: the root of its project, what get_memory needs to expand it


class SearchedProject(TypedDict):
    name: str
    root: str


class SkippedProject(TypedDict):
    name: str
    root: str
    db: str
    reason: str


class SearchResult(TypedDict):
    """The `query --json` object of docs/contracts.md (with allProjects, also `projects` and `skipped`)."""

    query: str  # the question as searched: cut when over 8,000 characters
    query_cut: bool
    budget: int
    tokens_used: int
    matched: int
    bm25_matched: int
    vector_matched: int
    items: list[SearchItem]
    weak: bool
    notes: list[str]
    projects: NotRequired[list[SearchedProject]]
    skipped: NotRequired[list[SkippedProject]]


class SourceSyncResult(TypedDict):
    name: str
    added: int
    updated: int
    removed: int
    skipped: int
    denied: int  # records a deny-list entry kept out
    seconds: float
    noop: bool
    notes: list[str]
    problems: list[Any]  # the records it skipped, each with where it was


class SyncResult(TypedDict):
    """`nexusmem sync --json`."""

    root: str
    initialised: bool
    rebuilt: bool
    seconds: float
    added: int
    updated: int
    removed: int
    total_nodes: int
    sources: list[SourceSyncResult]
    waited_seconds: float  # how long it waited for another sync of this memory before it began
    links: dict[str, Any] | None  # failure → fix linking (None: not run)
    embedding: dict[str, Any] | None  # vectors made (None: not run)
    structure: dict[str, Any] | None  # import edges (None: not run)


class MemoryLink(TypedDict):
    to: str
    relation: str


# A link arriving at the item (a commit: the GitHub thread it closed), with its source's title ("from" is
# a keyword: the functional form).
MemoryLinkIn = TypedDict("MemoryLinkIn", {"from": str, "relation": str, "title": str})


class MemoryDiff(TypedDict):
    id: str
    path: str


class MemoryItem(TypedDict):
    """One stored item in full."""

    id: str
    kind: str
    ts: str
    created_at: str
    title: str
    provenance: str
    trust: str
    ref: str
    project: str
    source: str
    signal: float
    superseded: bool  # marked by mark-stale
    superseded_by: str | None  # what replaced it, while memory holds that node
    body: str
    files: list[str]
    links: list[MemoryLink]
    linked_by: list[MemoryLinkIn]  # the 50 newest links arriving at it
    linked_by_count: int  # how many arrive in all
    meta: dict[str, Any]
    diffs: list[MemoryDiff]  # a commit's per-file diffs (get_memory on an id gives that file's patch)
    files_total: NotRequired[int]  # when `files` was cut to the first 50: how many it has
    recorded_by: NotRequired[str]  # scope "team", an item of the team store: the member who recorded it
    verdict_by: NotRequired[str]  # and the member whose verdict `trust` is ("" = none)


# --- helpers ---------------------------------------------------------------------------------------------------
@contextmanager
def _library_errors() -> Iterator[None]:
    """A library failure the user can act on becomes a tool error carrying its message."""
    try:
        yield
    except NexusMemError as exc:
        raise ToolError(str(exc)) from exc


async def _in_thread(func: Callable[[], T]) -> T:
    """Run blocking library work (git, SQLite) off the event loop."""
    return await anyio.to_thread.run_sync(func)


# Resolved roots, so a search does not start `git rev-parse` every time (~3 ms, far more on a busy machine).
# An entry is trusted only while its root still holds `.git`.
_roots: dict[Path, Path] = {}


def given_root(project_root: str) -> Path:
    """PROJECT_ROOT as a path, which must be absolute. A folder whose name is not UTF-8 (`caf\\xe9-repo`, Latin-1)
    cannot be passed as it is (a client's JSON carries no such byte), so it is named as NexusMem prints it,
    each such byte spelled `\\xNN`: when nothing exists at the path as written, the path with those bytes
    (paths.with_bytes) is the one meant if it exists."""
    given = Path(project_root).expanduser()
    if not given.is_absolute():
        raise ToolError(
            f"projectRoot must be an absolute path, got {project_root!r} (an MCP call has no working directory)"
        )
    if not given.exists():
        raw = paths.with_bytes(str(given))
        if raw is not None and Path(raw).exists():
            return Path(raw)
    return given


def resolve_root(project_root: str) -> Path:
    """The top of the git work tree at PROJECT_ROOT, which must be an existing absolute directory."""
    if not project_root.strip():
        raise ToolError("projectRoot is empty: pass the absolute path of the repository")
    given = given_root(project_root)
    if not given.is_dir():
        raise ToolError(f"projectRoot {project_root!r} is not an existing directory")
    key = given.resolve()
    cached = _roots.get(key)
    if cached is not None and (cached / ".git").exists():
        return cached
    try:
        root = paths.repo_root(key)
    except RefusedRepositoryError as exc:  # another user's repository (git's safe.directory): say so and how
        raise ToolError(str(exc)) from None
    except NotARepositoryError:
        raise ToolError(
            f"projectRoot {project_root!r} is not inside a git work tree: pass the absolute path of a repository"
        ) from None
    except NexusMemError as exc:  # git missing or unable to start: the library's message says which
        raise ToolError(str(exc)) from exc
    _roots[key] = root
    return root


def _no_memory(root: Path) -> NotInitialisedError:
    """Why ROOT has no memory, as the CLI says it (project.no_memory_error), with what an agent can do."""
    return project_mod.no_memory_error(root, hint=NO_MEMORY_HINT, cannot="no sync can make one")


def _require_memory(root: Path) -> None:
    if not project_mod.is_initialised(root):
        # While the post-commit hook builds the first memory it said "no memory yet: call sync_project", and
        # an agent that did raced the hook's sync: it says what `query` says.
        raise ToolError(str(_no_memory(root)))


def _open_store(root: Path) -> Store:
    """The store of an initialised ROOT, for the tools that need neither the project id nor its config
    (search with an explicit budget, get_memory): no git process per call."""
    _require_memory(root)
    with _library_errors():
        project_mod.refuse_cut_short(root)
        return project_mod.opened(open_store(paths.db_path(root), readonly=True))


def _load_initialised(root: Path) -> Project:
    _require_memory(root)
    with _library_errors():
        return project_mod.load(root)


def parse_as_of(value: str | None) -> int | None:
    """asOf → epoch ms, parsed exactly as the CLI's --as-of; a bad value is a tool error naming it."""
    try:
        return query_mod.parse_as_of(value)
    except NexusMemError as exc:
        raise ToolError(f"asOf {exc}") from None


def _result(text: str, structured: dict[str, Any]) -> CallToolResult:
    """A tool's answer: TEXT as the CLI prints it, control characters shown as escapes (agents show it in the
    developer's terminal: a commit message must not write the clipboard), and STRUCTURED exact, as `--json`
    (a byte that is not UTF-8 in a path spelled `\\xNN` in both, as the CLI prints it: JSON cannot carry it)."""
    return CallToolResult(
        content=[TextContent(type="text", text=terminal_safe(text))],
        structured_content=cast(dict[str, Any], spelled_data(structured)),
    )


def _answer(result: answer.QueryResult, text: str, structured: dict[str, Any]) -> CallToolResult:
    """A search's answer: its TEXT, then each note a small budget left out of its header, after the footer
    and outside the budget (the CLI says them on stderr; an agent has only the text), so none is lost."""
    notes = answer.left_out(result, text)
    return _result("\n".join([text, *(f"note: {note}" for note in notes)]), structured)


# --- the work each tool does, in a worker thread ---------------------------------------------------------------
def parse_window(since: str | None, until: str | None) -> tuple[int | None, int | None]:
    """since/until → epoch ms, parsed exactly as the CLI's --since/--until; a bad value is a tool error."""
    try:
        return timecue.window(since, until)
    except NexusMemError as exc:
        raise ToolError(f"since/until: {exc}") from None


def parse_author(value: str | None) -> str | None:
    """author → the filter, checked exactly as the CLI's --author; a bad value is a tool error."""
    try:
        return authors.parse(value)
    except authors.AuthorError as exc:
        raise ToolError(f"author: {str(exc).removeprefix('--author ')}") from None


def check_query(text: str) -> str:
    """The stripped query, or a tool error when it is empty or over MAX_QUERY_CHARS."""
    question = text.strip()
    if not question:
        raise ToolError("query is empty: say what you are looking for")
    if len(question) > MAX_QUERY_CHARS:
        raise ToolError(
            f"query is too long ({len(question):,} characters; at most {MAX_QUERY_CHARS:,}): "
            "ask with the distinctive words (an error line, a file, a flag), not a whole log"
        )
    return question


def search_args(
    text: str, as_of: str | None, since: str | None, until: str | None, author: str | None
) -> tuple[str, int | None, int | None, int | None, str | None]:
    """(question, asOf ms, since ms, until ms, author filter) of one search call, each checked as the CLI
    checks it; a bad one is a tool error naming it."""
    question = check_query(text)
    # An agent may fill an optional string it has no value for with "": read as not given.
    as_of, since, until, author = (
        v if v is None or v.strip() else None for v in (as_of, since, until, author)
    )
    cutoff = parse_as_of(as_of)
    lo, hi = parse_window(since, until)
    return question, cutoff, lo, hi, parse_author(author)


def run_search(
    project_root: str,
    text: str,
    budget: int,
    as_of: str | None,
    since: str | None = None,
    until: str | None = None,
    author: str | None = None,
) -> CallToolResult:
    question, cutoff, lo, hi, who = search_args(text, as_of, since, until, author)
    root = project_mod.memory_root(resolve_root(project_root))
    backlog = _catch_up(root)
    hook_note = None
    if who == authors.ME:  # none of the person's commands can be found without a prompt hook: say so
        from nexusmem.install.shell_hooks import own_commands_note

        hook_note = own_commands_note(who)
    # The notes are lines of the header: their tokens come out of the budget like the header's.
    note_tokens = sum(estimate_tokens(f"note: {n}\n") for n in (backlog, hook_note) if n)
    with _open_store(root) as store, _library_errors():
        settings = rank.settings_from(project_mod.config_of(root))
        result = query_mod.run(
            store,
            question,
            project=root.name,
            budget=max(budget - note_tokens, 1),
            as_of=cutoff,
            since=lo,
            until=hi,
            settings=settings,
            author=who,
            root=root,
        )
    if backlog:
        answer.add_note(result, backlog, budget)
    if hook_note and not any(item.kind == "shell_command" for item in result.items):
        answer.add_note(result, hook_note, budget)
    return _answer(result, answer.render(result), answer.to_json(result))


# Said when the commands logged since the last sync were too many to store before a search.
BACKLOG_NOTE = "many shell commands were logged since this memory's last sync and are not searched yet: call sync_project"


def _catch_up(root: Path) -> str | None:
    """The commands run since the last sync (the agent's own test run a minute ago), stored before a search
    (catchup.catch_up_shell, as `nexusmem query` does); a memory that cannot be brought up to date is searched
    as it is. A note for the answer when a backlog was left to the next sync."""
    if not project_mod.is_initialised(root):
        return None
    try:
        added = catchup.catch_up_shell(root)
    except NexusMemError as exc:
        log.info("search: the commands run since the last sync were not added: %s", exc)
        return None
    if added == catchup.BACKLOG:
        return BACKLOG_NOTE
    if added:
        log.info("search: %d command(s) run since the last sync added first", added)
    return None


def run_search_team(
    project_root: str,
    text: str,
    budget: int,
    as_of: str | None,
    since: str | None = None,
    until: str | None = None,
    author: str | None = None,
) -> CallToolResult:
    """scope "team": this project's memory fused with the team store (nexusmem.team.query)."""
    from nexusmem import project as project_mod
    from nexusmem import team as team_mod
    from nexusmem.retrieve import team as team_query

    question, cutoff, lo, hi, who = search_args(text, as_of, since, until, author)
    root = resolve_root(project_root)
    _catch_up(project_mod.memory_root(root))
    with _library_errors():
        proj = project_mod.load(root)
        result = team_mod.query(proj, question, budget=budget, as_of=cutoff, since=lo, until=hi, author=who)
    return _answer(result, multi_mod.render(result), team_query.to_json(result))


def run_search_all(
    project_root: str,
    text: str,
    budget: int,
    as_of: str | None,
    since: str | None = None,
    until: str | None = None,
    author: str | None = None,
) -> CallToolResult:
    """allProjects: every registered project; projectRoot is the current project only when it is one. The
    commands run since each project's last sync are stored first, as a search of one project does
    (_catch_up_all)."""
    question, cutoff, lo, hi, who = search_args(text, as_of, since, until, author)
    given = given_root(project_root)
    current = given if given.is_dir() else None
    behind = _catch_up_all(current)
    # As run_search: the note is a line of the header, its tokens out of the budget.
    note_tokens = estimate_tokens(f"note: {behind}\n") if behind else 0
    with _library_errors():
        result = multi_mod.search_all(
            question,
            current=current,
            budget=max(budget - note_tokens, 1),
            as_of=cutoff,
            since=lo,
            until=hi,
            author=who,
            skipped_in_answer=True,  # the full reasons are in the structured content's `skipped`
        )
    if behind:
        answer.add_note(result, behind, budget)
    return _answer(result, multi_mod.render(result), multi_mod.to_json(result))


# How long a search across projects spends at most storing the commands run since each project's last sync
# (~30 ms a project that has some, ~3 ms one that has none): the current project's always, then the others'
# whose folders (or worktrees) the hook log names since the last search, while this much time has not passed.
CATCH_UP_ALL_SECONDS = 1.0

_catching_up = threading.Lock()
# The hook log's (device, inode, bytes read) when the folders of its commands were last read (_logged_in).
_log_read: tuple[int, int, int] | None = None
# The roots whose catch-up a search left for lack of time: the next search's first.
_waiting: set[str] = set()


def _catch_up_all(current: Path | None, seconds: float | None = None) -> str | None:
    """The commands run since each searched project's last sync ("what failed in the last hour", run in
    another project a minute ago), stored before a search across projects (sync.catch_up_shell), within
    SECONDS (CATCH_UP_ALL_SECONDS) for all of them: the current project's, then those a command was logged
    in since the last search (_due). Projects the search skips (no database, another user's) are not
    written. A note for the answer naming the projects whose commands may be missing: a backlog left to the
    next sync, or time ran out before them (the next search begins with them)."""
    limit = CATCH_UP_ALL_SECONDS if seconds is None else seconds
    with _catching_up:
        deadline = time.monotonic() + limit
        found = [
            t
            for t in multi_mod.labelled(multi_mod.targets(current))
            if t.db.exists() and multi_mod.untrusted(t.db) is None
        ]
        due = _due(found)
        order = sorted(
            (t for t in found if t.current or t.root in due or t.root in _waiting),
            key=lambda t: (not t.current, t.root not in _waiting),
        )
        backlog: list[str] = []
        late: list[str] = []
        for target in order:
            name = target.label or target.name
            if not target.current and time.monotonic() > deadline:
                late.append(name)
                _waiting.add(target.root)
                continue
            _waiting.discard(target.root)
            try:
                added = catchup.catch_up_shell(Path(target.root))
            except Exception as exc:  # a damaged memory is the search's to report: it is searched as it is
                log.info("search: the commands run in %s since its last sync were not added: %s", name, exc)
                continue
            if added == catchup.BACKLOG:
                backlog.append(name)
            elif added:
                log.info("search: %d command(s) run in %s since its last sync added first", added, name)
    said = []
    if backlog:
        said.append(f"many shell commands were logged since the last sync of {', '.join(backlog)}")
    if late:
        said.append(
            f"the commands run since the last sync of {', '.join(late)} were not stored within {limit:g} s"
        )
    if not said:
        return None
    return "; ".join(said) + ": they are not searched yet (call sync_project for each)"


def _due(found: list[multi_mod.Target]) -> set[str]:
    """The roots of FOUND a command was logged in (its folder inside the work tree or one of its linked
    worktrees) since the last look: only they have commands to store. Every root when the log cannot be
    read, or names a folder that is gone and is no project's (a repository moved away: its memory may claim
    the commands run at its former place)."""
    everyone = {t.root for t in found}
    folders = _logged_in()
    if folders is None:
        return everyone
    trees = {t.root: _trees(Path(t.root)) for t in found}
    due: set[str] = set()
    for folder in folders:
        forms = {folder, os.path.realpath(folder)}
        held = {root for root, inside in trees.items() if any(_under(f, inside) for f in forms)}
        if not held and not os.path.isdir(folder):
            return everyone
        due |= held
    return due


def _logged_in() -> set[str] | None:
    """The folders (cwd) of the commands the hook log gained since the last call (the first call, or the log
    replaced or cut: its last catchup.CATCH_UP_MAX_BYTES, the most a catch-up stores); None when it cannot be
    read."""
    global _log_read
    path = paths.shell_log_path()
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return set()
    except OSError:
        return None
    start = 0
    if _log_read is not None and _log_read[:2] == (st.st_dev, st.st_ino) and _log_read[2] <= st.st_size:
        start = _log_read[2]
    start = max(start, st.st_size - catchup.CATCH_UP_MAX_BYTES)
    try:
        with open(path, "rb") as handle:
            handle.seek(start)
            data = handle.read(st.st_size - start)
    except OSError:
        return None
    whole = data.rfind(b"\n") + 1  # a line being written is read whole next time
    _log_read = (st.st_dev, st.st_ino, start + whole)
    folders: set[str] = set()
    for raw in data[:whole].split(b"\n"):
        try:
            cwd = json.loads(raw).get("cwd")
        except (ValueError, AttributeError):
            continue  # a line cut at the start of the read, a damaged one: the catch-up reads it its own way
        if isinstance(cwd, str) and cwd:
            folders.add(cwd)
    return folders


def _trees(root: Path) -> list[str]:
    """ROOT and its linked worktrees (.git/worktrees/*/gitdir: no git process), as written and resolved."""
    trees = [root]
    try:
        entries = list(os.scandir(root / ".git" / "worktrees"))
    except OSError:
        entries = []
    for entry in entries:
        try:
            pointer = Path(entry.path, "gitdir").read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError):
            continue
        if pointer:
            trees.append(Path(pointer).parent)
    return list(dict.fromkeys(form for tree in trees for form in (str(tree), os.path.realpath(tree))))


def _under(folder: str, trees: list[str]) -> bool:
    return any(folder == tree or folder.startswith(tree.rstrip(os.sep) + os.sep) for tree in trees)


# How long sync_project waits for a sync of the same memory already running (a `sync --rebuild` from the
# command line takes minutes): agents' tool calls time out long before the command line's 600 s.
MCP_SYNC_WAIT_SECONDS = 20.0


def run_sync(project_root: str, link_failures: bool, no_embed: bool, progress: ProgressFn) -> CallToolResult:
    root = resolve_root(project_root)
    # Options the library does not have yet are accepted and ignored, so agents' calls keep working when it does.
    accepted = inspect.signature(sync_mod.sync).parameters
    extra: dict[str, Any] = {}
    if "link_failures" in accepted:
        extra["link_failures"] = link_failures
    if "no_embed" in accepted:
        extra["no_embed"] = no_embed
    elif "embed" in accepted:
        extra["embed"] = not no_embed
    if "wait" in accepted:
        extra["wait"] = MCP_SYNC_WAIT_SECONDS
    try:
        with _library_errors():
            summary = sync_mod.sync(
                root, progress=progress, log=lambda note: log.info("sync: %s", note), **extra
            )
    except ToolError as exc:
        if not isinstance(exc.__cause__, sync_mod.SyncBusyError):
            raise
        since = paths.sync_running_since(project_mod.memory_root(root))
        started = f" (started {timefmt.iso(since)})" if since is not None else ""
        raise ToolError(
            f"a sync of this memory is running{started}; waited {MCP_SYNC_WAIT_SECONDS:.0f} s for it: try"
            " again in a minute (search_memory answers from the memory as it is meanwhile)"
        ) from None
    return _result(summary.describe(), summary.to_json())


def run_status(project_root: str) -> CallToolResult:
    root = project_mod.memory_root(resolve_root(project_root))
    if not project_mod.is_initialised(root):
        missing = _no_memory(root)
        if not isinstance(missing, FirstSyncRunningError):
            raise ToolError(str(missing))
        info = status.building(root)  # as `status --json`: the first sync under way, nothing counted yet
        return _result(status.render(info), info)
    proj = _load_initialised(root)
    with _library_errors():
        info = status.status(proj)
    return _result(status.render(info), info)


def run_get(project_root: str, wanted: str, scope: str = "project") -> CallToolResult:
    tree = resolve_root(project_root)  # HEAD is this work tree's, a linked worktree's own
    root = project_mod.memory_root(tree)
    with _open_store(root) as store, _library_errors():
        hint = 'get_memory with scope "team"'
        if scope == "team":  # as `show --team`: a teammate's verdict on an item both hold, or the team's item
            item = show.lookup(project_mod.load(root), store, wanted, team=True, team_hint=hint, tree=tree)
        else:
            try:
                item = show.expand(store, show.find(store, wanted), root.name)
            except (
                show.IdLookupError
            ):  # not held here, or a git revision (HEAD, a branch): as `show` reads it
                # Not held here: say where an item of a scope "team" answer is (the project is loaded only now).
                item = show.lookup(
                    project_mod.load(root), store, wanted, team=False, team_hint=hint, tree=tree
                )
    if len(item["files"]) > show.FILES_SHOWN:  # the structured copy as bounded as the text
        item = {**item, "files": item["files"][: show.FILES_SHOWN], "files_total": len(item["files"])}
    return _result(show.render(item), item)


# --- argument checking in plain words ---------------------------------------------------------------------------
# The published parameter names are camelCase; agents often guess snake_case (`project_root`). Any spelling that
# differs only in case and underscores is taken as the parameter it spells, so those calls just work.
_EXPECTED = {
    "string": "a string",
    "integer": "a whole number",
    "boolean": "true or false",
    "number": "a number",
}


def _squash(name: str) -> str:
    return name.replace("_", "").replace("-", "").lower()


def _accepted_names(schema: dict[str, Any]) -> str:
    required = set(schema.get("required", []))
    props: dict[str, Any] = schema.get("properties", {})
    return ", ".join(f"{name} (required)" if name in required else name for name in props)


def _expected(prop: dict[str, Any]) -> str:
    kinds = [prop.get("type")] if "type" in prop else [alt.get("type") for alt in prop.get("anyOf", [])]
    words = [_EXPECTED.get(str(kind), str(kind)) for kind in kinds if kind and kind != "null"]
    return " or ".join(words) or "a value"


def normalise_arguments(tool: str, arguments: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    """ARGUMENTS keyed by the published names: snake_case (or any case) spellings are mapped to them, and an
    unknown name is a tool error that names it, suggests the closest and lists the accepted names."""
    props: dict[str, Any] = schema.get("properties", {})
    by_squash = {_squash(name): name for name in props}
    out: dict[str, Any] = {}
    for key, value in arguments.items():
        name = key if key in props else by_squash.get(_squash(key))
        if name is None:
            import difflib

            close = difflib.get_close_matches(_squash(key), list(by_squash), n=1, cutoff=0.6)
            hint = f" (did you mean {by_squash[close[0]]!r}?)" if close else ""
            raise ToolError(
                f"{tool}: unknown parameter {key!r}{hint}; accepted parameters: {_accepted_names(schema)}"
            )
        if name in out:
            raise ToolError(f"{tool}: parameter {name} is given twice (as {name!r} and a spelling of it)")
        out[name] = value
    return out


def plain_validation_error(tool: str, exc: ValidationError, schema: dict[str, Any]) -> str:
    """A pydantic ValidationError on a tool's arguments in plain words: each parameter, what was expected and
    what came, then the accepted names (the SDK's text is a multi-line dump with pydantic URLs)."""
    props: dict[str, Any] = schema.get("properties", {})
    problems: list[str] = []
    for err in exc.errors():
        name = ".".join(str(part) for part in err["loc"]) or "arguments"
        prop = props.get(str(err["loc"][0]), {}) if err["loc"] else {}
        if err["type"] == "missing":
            problems.append(f"{name} is required ({_expected(prop)})")
            continue
        got = repr(err.get("input"))
        got = got if len(got) <= 60 else got[:57] + "..."
        message = str(err["msg"])
        message = message[:1].lower() + message[1:]
        if err["type"].endswith(("_type", "_parsing")):
            problems.append(f"{name} must be {_expected(prop)}, got {got}")
        else:
            problems.append(f"{name} {message.removeprefix('input ')}, got {got}")
    return f"{tool}: invalid arguments: {'; '.join(problems)}. Accepted parameters: {_accepted_names(schema)}"


class _Server(MCPServer):
    """MCPServer whose tool calls accept snake_case spellings and report bad arguments in plain words."""

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None = None
    ) -> Any:
        tool = self._tool_manager.get_tool(name)
        if tool is None:
            return await super().call_tool(name, arguments, context)
        schema = tool.parameters
        arguments = normalise_arguments(name, arguments, schema)
        try:
            return await super().call_tool(name, arguments, context)
        except UnexpectedToolError as exc:
            # A crash (a bug): the SDK alone would tell the client only that the tool failed. The traceback
            # goes to the crash log, as the CLI's does, and the agent reads where.
            from nexusmem.crashlog import record

            crash = exc.__cause__ if exc.__cause__ is not None else exc
            raise ToolError(f"{name}: {record(f'mcp {name}', crash)}") from exc
        except ToolError as exc:
            if isinstance(exc.__cause__, ValidationError):
                message = plain_validation_error(name, exc.__cause__, schema)
                raise ToolError(terminal_safe(message)) from exc.__cause__
            # Every error the client reads starts with the tool's name, as the bad-arguments one does (the
            # SDK put "Error executing tool NAME: " before the others); escaped as the CLI's `Error:` line is,
            # one line: a newline or a tab in a folder's name spelled `\n`, `\t` (text.one_line).
            message = str(exc).removeprefix(f"Error executing tool {name}: ")
            raise ToolError(terminal_safe(one_line(f"{name}: {message}"))) from exc


# --- the server ------------------------------------------------------------------------------------------------
ProjectRoot = Annotated[
    str, Field(description="Absolute path of the git repository (or a directory inside it) to work on.")
]


def _whole(value: Any) -> Any:
    """1000.0 (and 1e3) as the whole number it is: JSON Schema's "integer", which the tools publish, takes
    it. 1000.5, true and "1000" are left for the strict check to refuse."""
    return int(value) if isinstance(value, float) and value.is_integer() else value


# Every integer parameter: strict (no booleans, no strings), a float with no fraction taken. Placed after the
# parameter's Field: placed before it, its limits are published as pydantic's "ge"/"le", which no client reads
# (JSON Schema says "minimum"/"maximum"), though the server still enforced them.
WholeNumber = BeforeValidator(_whole)
READ_ONLY = ToolAnnotations(
    read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False
)


def build_server(log_level: LogLevel = "WARNING") -> MCPServer:
    """The NexusMem MCP server with its four tools (not started)."""
    server: MCPServer = _Server(
        SERVER_NAME, version=SERVER_VERSION, instructions=INSTRUCTIONS, log_level=log_level
    )

    def tool(title: str, annotations: ToolAnnotations) -> Callable[[F], F]:
        """Register a tool whose description is its docstring without the source indentation."""

        def register(fn: F) -> F:
            description = inspect.cleandoc(fn.__doc__ or "")
            server.add_tool(fn, title=title, description=description, annotations=annotations)
            return fn

        return register

    @tool("Search project memory", READ_ONLY)
    async def search_memory(
        projectRoot: ProjectRoot,
        query: Annotated[
            str,
            Field(
                description="What you want to know, in plain words or exact terms (a flag, a file, an error)."
            ),
        ],
        budget: Annotated[
            int,
            Field(
                ge=50, le=MAX_BUDGET, strict=True, description="Token budget for the answer (50 to 100000)."
            ),
            WholeNumber,  # after the Field, so its limits are published as minimum/maximum
        ] = 2000,
        allProjects: Annotated[
            bool,
            Field(
                strict=True,
                description="Search every project registered on this machine, not just projectRoot's; "
                "each result names its project.",
            ),
        ] = False,
        scope: Annotated[
            Literal["project", "team"],
            Field(
                description='"team": also search the team store (PostgreSQL, `nexusmem team init`), fused '
                "with this project's memory; each team item names who recorded it. Unreachable: local "
                "results plus a note."
            ),
        ] = "project",
        asOf: Annotated[
            str | None,
            Field(
                description="Only what memory had recorded by then, in until's forms (a date means its end; "
                "UTC when no offset): recording time, not when things happened (that is since/until)."
            ),
        ] = None,
        since: Annotated[
            str | None,
            Field(
                description="Only what happened at or after this time: YYYY-MM-DD (a UTC day), ISO 8601, "
                "today, yesterday (days of the server's local time zone, TZ), or an age such as 6h, 2d, 1w, "
                '"2 days ago", "3 hours", "last 2 weeks".'
            ),
        ] = None,
        until: Annotated[
            str | None,
            Field(
                description="Only what happened at or before this time (same forms; a bare date includes "
                "the whole day)."
            ),
        ] = None,
        author: Annotated[
            str | None,
            Field(
                description="Only the shell commands and conversation turns of this author: `me` (the "
                "commands the person typed, and the conversation turns holding a question they asked an "
                "agent), `agents` (any coding agent's "
                "commands and conversation turns), or one agent's name such as claude-code (or claude) or "
                "codex, in any case. Commits, diffs and docs always pass."
            ),
        ] = None,
    ) -> Annotated[CallToolResult, SearchResult]:
        """Search what actually happened in a repository: commits, per-file diffs, shell commands (with exit
        codes) and docs, ranked and packed into a token budget.

        Use it before editing unfamiliar code, when a command or test fails ("has this failed before, and what
        fixed it?"), or to learn why something is the way it is. Returns a plain-text block, best first, each
        item with its date, provenance tag and id, and the same items as structured data. Read one item in
        full with get_memory.

        With allProjects, every repository registered on this machine is searched (projectRoot need not
        have a memory); each item is tagged with its project (two of one name with the folders that tell
        them apart: "dotenv (b/x)"), and projects whose memory cannot be read are listed as skipped. To
        expand one item with get_memory, pass its project's root: the item's `projectRoot` in the
        structured content.

        A question that mentions time ("yesterday", "recently", "last week", a date) ranks newer items
        higher; since/until restrict to a window of event time. When nothing matches the question well the
        answer starts with "No strong match", `weak` is true, and only the closest few items follow: say so
        rather than treating them as the answer.
        """
        if scope == "team" and allProjects:
            # As the command line refuses `--team --all-projects`: the team scope was dropped without a word.
            raise ToolError(
                'scope "team" and allProjects cannot be combined: the team store is searched with one'
                " project's memory (allProjects false), every project on this machine without it"
            )
        if scope == "team":
            return await _in_thread(
                functools.partial(run_search_team, projectRoot, query, budget, asOf, since, until, author)
            )
        if allProjects:
            return await _in_thread(
                functools.partial(run_search_all, projectRoot, query, budget, asOf, since, until, author)
            )
        return await _in_thread(
            functools.partial(run_search, projectRoot, query, budget, asOf, since, until, author)
        )

    @tool(
        "Sync project memory",
        ToolAnnotations(
            read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=False
        ),
    )
    async def sync_project(
        ctx: Context[Any, Any],
        projectRoot: ProjectRoot,
        linkFailures: Annotated[
            bool,
            Field(
                strict=True,
                description=(
                    "Link failed commands to what fixed them even when the sync read nothing new (a sync"
                    " that reads anything new links anyway)."
                ),
            ),
        ] = False,
        noEmbed: Annotated[
            bool, Field(strict=True, description="Skip computing embeddings (keyword search only).")
        ] = False,
    ) -> Annotated[CallToolResult, SyncResult]:
        """Bring a repository's memory up to date: ingest new commits, diffs, docs and shell history.

        Creates the memory (.nexusmem/) first when the repository has none. Incremental and safe to repeat; the
        first sync of a large repository can take a while and reports progress. Returns what was added.
        """
        counts: dict[str, int] = {}
        sent = [0.0]  # progress must increase with every notification
        last = [time.monotonic()]

        def forward(value: float, message: str) -> None:
            if value <= sent[0]:
                return
            sent[0] = value
            try:
                anyio.from_thread.run(ctx.report_progress, value, None, message)
            except Exception:  # a client that went away must not fail the sync
                log.debug("progress notification failed", exc_info=True)

        def on_progress(label: str, done: int, total: int | None) -> None:
            counts[label] = done
            now = time.monotonic()
            if now - last[0] >= PROGRESS_INTERVAL_S:
                last[0] = now
                forward(float(sum(counts.values())), f"{label}: {done} node(s)")

        await ctx.report_progress(0, None, "sync started")
        result = await _in_thread(
            functools.partial(run_sync, projectRoot, linkFailures, noEmbed, on_progress)
        )
        done = max(float(sum(counts.values())), sent[0] + 1)
        await ctx.report_progress(done, done, "sync finished")
        return result

    @tool("Project memory status", READ_ONLY)
    async def get_status(projectRoot: ProjectRoot) -> Annotated[CallToolResult, dict[str, Any]]:
        """What a repository's memory holds: node counts by kind, date range, database size, and each source's
        last sync. Use it to check whether memory exists and is current before relying on search_memory."""
        return await _in_thread(functools.partial(run_status, projectRoot))

    @tool("Read one memory item", READ_ONLY)
    async def get_memory(
        projectRoot: ProjectRoot,
        id: Annotated[
            str,
            Field(
                description=f"An id from a search_memory result, or a unique prefix of at least {MIN_PREFIX} characters."
            ),
        ],
        scope: Annotated[
            Literal["project", "team"],
            Field(
                description='"team": an id this project\'s memory does not hold is read from the team store '
                '(the items of a search_memory scope "team" answer tagged with a member).'
            ),
        ] = "project",
    ) -> Annotated[CallToolResult, MemoryItem]:
        """Read one memory item in full: the whole commit message, patch, command or doc section, with its
        files, time, provenance, trust and the fixes linked to it."""
        return await _in_thread(functools.partial(run_get, projectRoot, id, scope))

    return server


def serve(log_level: str = "WARNING", handshake: Handshake | None = None) -> None:
    """Serve the tools over stdin/stdout until the client closes the stream; HANDSHAKE is what
    mcp_handshake.answer_initialize read (and maybe answered) before this module was imported."""
    level = log_level.upper()
    if level not in LOG_LEVELS:
        raise ValueError(f"log level {log_level!r} is not one of {', '.join(LOG_LEVELS)}")
    from nexusmem.mcp_stdio import serve_stdio

    anyio.run(serve_stdio, build_server(level), handshake)
