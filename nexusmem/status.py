"""What a project's memory holds: counts by kind, dates, each source's cursor and last sync."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from nexusmem import autosync, catchup, paths, redact, timefmt
from nexusmem.ollama import EMBEDDER_FIX
from nexusmem.project import Project
from nexusmem.sources.git import repo
from nexusmem.store import Store
from nexusmem.sync import problem_history, source_states
from nexusmem.synced_head import head_moved, moved_text
from nexusmem.text import one_line


def iso(ms: int | None) -> str | None:
    return None if ms is None else timefmt.iso(ms)


def vector_backend(store: Store) -> str | None:
    """e.g. "sqlite-vec 0.1.9 (vec0, cosine), builtin wordllama 256-d, 1234 vectors"; None without vectors."""
    from nexusmem.embed import Identity
    from nexusmem.errors import StoreError

    identity = Identity.from_json(store.vector_identity_json())
    if identity is None:
        return None
    try:
        version = store.vec_version().lstrip("v")
    except StoreError:
        version = "(cannot load)"
    return f"sqlite-vec {version} (vec0, cosine), {identity.describe()}, {_embedded(store)}"


def _embedded(store: Store) -> str:
    """ "1234 vectors" when every node has a current one; "512 of 2,186 embedded (…)" when a pass stopped
    part way (killed, its embedder gone) or has not reached the newest nodes yet."""
    newest, through = store.newest_update(), store.embedded_through()
    if newest is None or (through is not None and through >= newest):
        return f"{store.vector_count()} vectors"
    nodes, missing = store.node_count(), store.count_unembedded()
    if not missing:
        return f"{store.vector_count()} vectors"
    return (
        f"{nodes - missing:,} of {nodes:,} embedded (the other {missing:,} are found by their words until a sync"
        " embeds them)"
    )


def status(
    project: Project, note: Callable[[str], None] | None = None, *, locate: bool = False
) -> dict[str, Any]:
    """What PROJECT's memory holds (the JSON of `status --json`): a read, so it opens the store read-only
    (it answers on a full disk too); NOTE is told what opening it met (Project.open_store). LOCATE
    (`--verbose`): each skipped record of a transcript also carries the path of its file on this machine."""
    with project.open_store(readonly=True, note=note) as store:
        first, last = store.date_range()
        db = project.db_path
        size = sum(p.stat().st_size for p in (db, db.with_name(db.name + "-wal")) if p.exists())
        by_relation = store.link_counts()
        sources = store.sources()
        git_cursor = store.cursor("git")
        moved = repo.boundary_moved(
            project.root, git_cursor, lambda shas: store.commits_stored_by(shas, store.write_seq())
        )
        skipped = problem_history(store)
        if locate and "conversation" in skipped:
            _locate_transcripts(project.root, store.cursor("conversation"), skipped["conversation"])
        unsynced = _unsynced(project, store)
        return {
            "root": str(project.root),
            "project": project.id,
            # The first sync is running (the post-commit hook's, in the background, or a `nexusmem sync` in
            # a terminal): nothing to read yet, or only the sources it has done (no sync has ended here yet).
            "building": _first_build(project.root, bool(sources)),
            "database": str(db),
            "database_bytes": size,
            "schema_version": store.schema_version(),
            "driver": store.driver(),
            "vector_backend": vector_backend(store),
            "nodes": store.node_count(),
            "by_kind": store.counts_by_kind(),
            "links": sum(by_relation.values()),
            "links_by_relation": by_relation,
            "import_edges": store.import_edge_count(),
            "flagged": store.open_suggestion_count(),
            "first": iso(first),
            "last": iso(last),
            "sources": [{**s, "last_sync": iso(s["last_sync"])} for s in sources],
            "shell_log": str(paths.shell_log_path()),
            # The commands the hooks logged here since the last sync (NexusMem's own left out), as a query's
            # note counts them; a backlog of more than catchup.CATCH_UP_MAX_BYTES of log is not counted.
            "unsynced_commands": max(unsynced, 0),
            "unsynced_backlog": unsynced == catchup.BACKLOG,
            # Bad records sync passed over, per source: how many in all and where the newest were.
            "skipped_records": skipped,
            # One line per source that left one: why an opt-in source did nothing ("skipped: gh CLI ...").
            "source_states": source_states(store),
            # The post-commit sync's last failure, when nothing has synced since (else null).
            "auto_sync_failed": _auto_sync_failed(project.root, store),
            # The configured Ollama embedder's last request did not answer in time (nothing answered
            # since): {"url", "at", "error", "held"} (held: queries and syncs do not ask it now), else null.
            "embedder_down": embedder_down(project.config),
            # HEAD moved since the git source last read it (a reset, a checkout, a rebase: no hook runs
            # for those): {"memory_at", "head"}, else null.
            "head_moved": head_moved(project.root, store.synced_git_cursor()),
            # The clone was deepened (`git fetch --unshallow`, `--deepen`) since: older commits arrived; or
            # made shallower (`git fetch --depth N`): memory keeps the commits it cut off.
            "deepened": moved == "deepened",
            "shallower": moved == "shallower",
            # The last sync was stopped before it ended (killed): when it started, else null.
            "sync_unfinished": iso(paths.sync_unfinished(project.root)),
            # The disk holding .nexusmem/ has less room than a sync needs: {"free_bytes", "needed_bytes"}.
            "low_space": _low_space(project),
            # Hooks an install put NexusMem's block in that lost it without `hook ... remove`: why, per hook.
            "hooks_gone": hooks_gone(project),
            # Why the record those are read from cannot be read (a FIFO, a link to /dev/zero), or None.
            "hooks_record": hooks_record(project),
            # Written (in part) with older redaction rules than this release's: `nexusmem scrub` applies them.
            "older_redaction_rules": redact.older_rules(store.get_meta(redact.RULES_KEY)),
        }


def _auto_sync_failed(root: Path, store: Store) -> dict[str, str] | None:
    """The post-commit sync's last failure (autosync.last_failure) with what doctor says of it: `detail`
    (explained when an older install refused the memory), `fix` (the command) and `why` (of that command,
    when it is more than a sync)."""
    failed = autosync.last_failure(root, store)
    if failed is None:
        return None
    advice = autosync.failure_advice(root, failed)
    return {
        **failed,
        "detail": advice.detail,
        "fix": advice.fix,
        **({"why": advice.why} if advice.why else {}),
    }


def _locate_transcripts(root: Path, cursor: str | None, history: dict[str, Any]) -> None:
    """HISTORY's notes of skipped transcript records, each with the `path` of the transcript it names on this
    machine (None when none found): found now, by hashing the transcripts listed, never stored."""
    from nexusmem.sources.conversation.source import locate_transcripts

    locate = locate_transcripts(root, cursor)
    for entry in history.get("recent", []):
        if isinstance(entry, dict):
            entry["path"] = locate(str(entry.get("where", "")))


def embedder_down(config: dict[str, Any]) -> dict[str, Any] | None:
    """The last request to CONFIG's Ollama embedder that did not answer in time, when nothing has answered
    since (ollama.last_down); None when it answered, or the embedder is not Ollama."""
    from nexusmem.embed import ollama_url
    from nexusmem.ollama import last_down, recently_down

    url = ollama_url(config)
    down = last_down(url) if url else None
    if url is None or down is None:
        return None
    at = datetime.fromtimestamp(down.at, timezone.utc).isoformat(timespec="seconds")
    return {"url": down.url, "at": at, "error": down.why, "held": recently_down(url) is not None}


def _first_build(root: Path, read_any: bool) -> bool:
    """Whether the sync running at ROOT is its first: no source read yet, or none ended (the registry's
    lastSync, which a sync sets as it ends, as project.refuse_cut_short reads it)."""
    if not paths.first_sync_under_way(root):
        return False
    from nexusmem import registry

    return not read_any or registry.last_sync(root) is None


def _unsynced(project: Project, store: Store) -> int:
    """catchup.unsynced_commands of PROJECT (STORE: its memory, open); 0 when the log cannot be read."""
    from nexusmem.errors import NexusMemError

    try:
        return catchup.unsynced_commands(project, store)
    except (NexusMemError, OSError):  # status says what it can of the memory
        return 0


def building(root: Path) -> dict[str, Any]:
    """What `status` says of ROOT while its first sync is under way (paths.first_sync_under_way) and has not
    made the store yet (the post-commit hook's sync waits for a burst of commits to end first): status()'s
    keys, nothing counted, `building` true, `schema_version` null."""
    from nexusmem import identity

    return {
        "root": str(root),
        "project": identity.project_id(root),
        "building": True,
        "database": str(paths.db_path(root)),
        "database_bytes": 0,
        "schema_version": None,
        "driver": None,
        "vector_backend": None,
        "nodes": 0,
        "by_kind": {},
        "links": 0,
        "links_by_relation": {},
        "import_edges": 0,
        "flagged": 0,
        "first": None,
        "last": None,
        "sources": [],
        "shell_log": str(paths.shell_log_path()),
        "unsynced_commands": 0,
        "unsynced_backlog": False,
        "skipped_records": {},
        "source_states": {},
        "auto_sync_failed": None,
        "embedder_down": None,
        "head_moved": None,
        "deepened": False,
        "shallower": False,
        "sync_unfinished": None,
        "low_space": None,
        "hooks_gone": {},
        "hooks_record": None,
    }


def _low_space(project: Project) -> dict[str, int] | None:
    low = paths.low_space(project.root)
    return None if low is None else {"free_bytes": low[0], "needed_bytes": low[1]}


def hooks_gone(project: Project) -> dict[str, str]:
    """Per hook whose block went missing (git_hooks.gone): what that means and the command that puts it back."""
    from nexusmem.install import git_hooks

    out = {}
    for name in git_hooks.recorded(project.root):
        state = git_hooks.gone(name, project.root)
        if state is not None:
            verb = "git" if name == "pre-commit" else "git-post"
            out[name] = f"{git_hooks.gone_text(state)}; run `nexusmem hook {verb} install`"
    return out


def hooks_record(project: Project) -> str | None:
    """Why the record of the git hooks NexusMem installed cannot be read, with its fix; None when it can."""
    from nexusmem.install import git_hooks

    problem = git_hooks.record_problem(project.root)
    return None if problem is None else f"{problem[0]}; fix: {problem[1]}"


# What the links other sources make are, as status counts them (docs/contracts.md, link relations).
_LINK_WHAT = {"changelog": "changelog entry→commit link(s)", "github": "GitHub thread→commit link(s)"}


def link_lines(info: dict[str, Any]) -> list[tuple[int, str]]:
    """(count, what) per kind of link: failure→fix links, then the links other sources make."""
    from nexusmem.link import RELATIONS  # the failure→fix relations

    by_relation: dict[str, int] = info["links_by_relation"]
    out = []
    fixes = sum(by_relation.get(r, 0) for r in RELATIONS)
    if fixes:
        out.append((fixes, "failure→fix link(s)"))
    for relation, count in sorted(by_relation.items()):
        if relation not in RELATIONS and count:
            out.append((count, _LINK_WHAT.get(relation, f"{relation} link(s)")))
    return out


# What the first line says of a memory a sync read that holds nothing (a repository with no commit yet).
EMPTY = "memory is empty (no commits, docs or commands yet)"


def _empty(info: dict[str, Any]) -> bool:
    """Whether INFO (status's) is of a memory that holds nothing, and is not the first sync under way."""
    return not info["nodes"] and not info["first"] and info.get("schema_version") is not None


def render(info: dict[str, Any]) -> str:
    def day(value: str | None) -> str:
        return value[:10] if value else "-"

    lines = [
        f"{info['nodes']} node(s)  {day(info['first'])} .. {day(info['last'])}"
        if not _empty(info)
        else f"0 node(s): {EMPTY}"
    ]
    for kind, count in sorted(info["by_kind"].items(), key=lambda kv: (-kv[1], kv[0])):
        lines.append(f"{count:>10}  {kind}")
    for count, what in link_lines(info):
        lines.append(f"{count:>10}  {what}")
    if info.get("import_edges"):
        lines.append(f"{info['import_edges']:>10}  import edge(s) between tracked files")
    if info.get("flagged"):
        lines.append(f"{info['flagged']:>10}  flagged as likely superseded (see `nexusmem stale`)")
    lines.append("")
    # A folder named with a newline or a tab is spelled `\n`, `\t`: one line each, as sync and doctor say it.
    lines.append(f"root      {one_line(info['root'])}")
    lines.append(f"project   {one_line(info['project'])}")
    if info["schema_version"] is None:  # building(): the first sync has not made it yet
        lines.append(f"database  {one_line(info['database'])} (not made yet)")
    else:
        lines.append(
            f"database  {one_line(info['database'])} ({info['database_bytes'] / 1e6:.1f} MB,"
            f" schema v{info['schema_version']})"
        )
        lines.append(f"driver    {info['driver']}; vectors: {info['vector_backend'] or 'none'}")
    if info["sources"]:
        building = f" (the first sync is still running{paths.first_sync_where(Path(info['root']))})"
        lines.append("sources:" + (building if info.get("building") else ""))
        width = max(len(str(s["name"])) for s in info["sources"])  # `changelog` is wider than the rest
        for s in info["sources"]:
            lines.append(
                f"  {s['name']:<{width}} last sync {s['last_sync'] or 'never'}"
                f"  {position(s['cursor'], read_before=bool(s['last_sync']) and s['name'] in _CLEARED_BY_UPGRADES)}"
                f"  (+{s['added']} ~{s['updated']} -{s['removed']}, {s['skipped']} skipped)"
            )
    elif info.get("building"):
        lines.append(f"sources:  the first sync is running{paths.first_sync_where(Path(info['root']))}")
    else:
        lines.append("sources:  never synced (run `nexusmem sync`)")
    waiting = catchup.unsynced_note(
        catchup.BACKLOG if info.get("unsynced_backlog") else info["unsynced_commands"]
    )
    if waiting:
        lines.append(f"shell: {waiting}")
    failed = info.get("auto_sync_failed")
    if failed:
        why = f" ({failed['why']})" if failed.get("why") else ""
        lines.append(
            f"auto-sync: {one_line(failed['detail'])}; what was committed since is not in memory:"
            f" run `{failed['fix']}`{why}"
        )
    down = info.get("embedder_down")
    if down:
        held = " (not asked again for now)" if down["held"] else ""
        lines.append(
            f"embedder: {one_line(down['error'])} at {down['at']}{held}; search is BM25-only until it"
            f" answers: {EMBEDDER_FIX} (`nexusmem doctor` asks it)"
        )
    if info.get("sync_unfinished"):
        said, args = paths.unfinished_text(Path(info["root"]), info["sync_unfinished"])
        lines.append(f"sync: {said}; run `nexusmem {args}`")
    low = info.get("low_space")
    if low:
        said = paths.low_space_text(Path(info["root"]), (low["free_bytes"], low["needed_bytes"]))
        lines.append(f"disk: {said}; free some space")
    moved = info.get("head_moved")
    if moved:
        lines.append(f"git: {moved_text(moved)}")
    if info.get("deepened"):
        lines.append(
            "git: the clone was deepened since the last sync (`git fetch --unshallow` or `--deepen`: no hook"
            " runs for it): the older commits are not in memory yet; run `nexusmem sync`"
        )
    if info.get("shallower"):
        lines.append(
            "git: the clone was made shallower since the last sync (`git fetch --depth`): memory keeps the"
            " older commits git no longer reaches; nothing is missing"
        )
    for name, gone in info.get("hooks_gone", {}).items():
        lines.append(f"{name}: {gone}")
    if info.get("hooks_record"):
        lines.append(f"git hooks: {info['hooks_record']}")
    if info.get("older_redaction_rules"):
        lines.append(f"redaction: {redact.OLDER_RULES}")
    for name, state in sorted(info.get("source_states", {}).items()):
        lines.append(f"{name}: {state}")
    for name, history in sorted(info.get("skipped_records", {}).items()):
        recent = history.get("recent", [])
        lines.append(f"skipped bad records in {name}: {history.get('total', 0)} (newest {len(recent)} below)")
        for entry in recent[::-1]:
            lines.append(f"  {entry.get('at', '?')}  {entry.get('where', '?')}")
            if "path" in entry:  # status --verbose
                lines.append(f"      file: {entry['path'] or 'not found on this machine (moved or deleted)'}")
    return "\n".join(lines)


# The sources whose cursor a migration clears so that the next sync reads them whole again (store/migrations:
# change words derived anew); any other source with no cursor after a sync had nothing to read.
_CLEARED_BY_UPGRADES = ("git", "diff")


def position(cursor: str | None, read_before: bool = False) -> str:
    """Where a source's next sync resumes, in words: the commit for git-backed sources, the byte for the
    hooks' log; the cursor itself (an opaque JSON or fingerprint) is in `status --json`. READ_BEFORE: a sync
    has read the source already (an upgrade's migration cleared its cursor to derive something again)."""
    if not cursor:
        # "not started" beside the 1,054 commits an older release stored read as if memory were empty.
        return "read whole again at the next sync (after an upgrade)" if read_before else "not started"
    parts = cursor.split(":")
    if len(parts) == 3 and len(parts[2]) >= 7 and all(c in "0123456789abcdef" for c in parts[2]):
        return f"at commit {parts[2][:10]}"
    try:
        import json

        data = json.loads(cursor)
        if isinstance(data, dict) and isinstance(data.get("files"), dict):  # the conversation source
            files = data["files"].values()
            ours = sum(1 for f in files if isinstance(f, dict) and f.get("ours"))
            return (
                f"{len(files)} transcript file(s) seen, {ours} of this project; changed ones are read again"
            )
        if isinstance(data, dict) and isinstance(data.get("since"), str):  # the github source
            return f"threads updated since {data['since']}"
        if isinstance(data, dict) and isinstance(data.get("ts"), int) and "path" in data:  # atuin
            return f"after {iso(data['ts'] // 1_000_000)}"
        if isinstance(data, dict) and isinstance(data.get("session"), dict):
            todo = data["session"]
            return f"{todo.get('queued', 0)} session(s) queued, {todo.get('settling', 0)} settling"
        offset = data["log"]["offset"]
    except (ValueError, TypeError, KeyError):
        return "resumes where it stopped"
    return f"at log byte {offset:,}" if isinstance(offset, int) else "resumes where it stopped"


def share(info: dict[str, Any]) -> str:
    """A plain-text summary without local paths, worth pasting into an issue or a chat."""

    def day(value: str | None) -> str:
        return value[:10] if value else "-"

    lines = [
        f"NexusMem memory for {info['project'].rsplit('/', 1)[-1]}: {info['nodes']} node(s), "
        + (f"{day(info['first'])} .. {day(info['last'])}" if not _empty(info) else EMPTY)
    ]
    for kind, count in sorted(info["by_kind"].items(), key=lambda kv: (-kv[1], kv[0])):
        lines.append(f"  {count:>8}  {kind}")
    for count, what in link_lines(info):
        lines.append(f"  {count:>8}  {what}")
    return "\n".join(lines)
