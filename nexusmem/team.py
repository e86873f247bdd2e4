"""Team memory: what a member shares with the team store (PostgreSQL + pgvector), and how.

`init` checks a URL and records it without credentials; `push` sends this project's shareable nodes, links
and verdicts, resumably; `forget_team` removes a value from the team store and records a team deny-list
entry every member's next push (a post-commit one too; never a plain sync) applies to their own memory too;
`status` reports.

What leaves the machine is explicit and conservative (SHARED_KINDS): commits, diffs, docs (with changelog
entries), links and verdicts. Shell commands and agent conversations only with `team.shareShell` /
`team.shareConversations`, redacted again on the way out. Local absolute paths never leave: the repository
root becomes relative, the home folder `~`.

Nothing here runs on the prompt hook, the commit hook or a precheck without --team: psycopg loads with
nexusmem.store.team, only when a team command or --team asks for it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import hashlib
import json
import os
import re
import threading
import time
from collections import deque
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from nexusmem import config, gitcmd, paths, private, redact, secreturl
from nexusmem.errors import NexusMemError, UsageError
from nexusmem.project import Project
from nexusmem.sources.shell.node import split_title
from nexusmem.store import Store
from nexusmem.store.nodes import StoredNode
from nexusmem.store.team import DenyScreen, PushCounts, TeamStore, TeamUnavailable

ENV_URL = "NEXUSMEM_TEAM_URL"
SHARED_KINDS = ("git_commit", "code_diff", "doc_section")
SHELL_KINDS = ("shell_command",)
CONVERSATION_KINDS = ("conversation_turn", "session_summary")
# Nodes per push transaction: a killed push loses at most one batch of work (its cursor is saved after
# each commit). 2,000 rows of ~2 KB: one COPY of ~4 MB.
PUSH_BATCH = 2000
# A dropped connection mid-push is retried this many times (waiting 0.5, 1, 2 s), then reported.
RETRIES = 3
# Connections a push sends its batches over at once (NEXUSMEM_TEAM_JOBS). One server backend turns ~3,000
# nodes/s into rows (tsvector, GIN, heap) and inserts ~400 a second into HNSW, each on one core; two
# backends use two of the server's cores, and the client reads and redacts the next batch meanwhile.
PUSH_JOBS = 2
DENY_KEY = "deny_key"
_REPORT_LOCK = threading.Lock()
VECTOR_IDENTITY = "vector_identity"
_CURSOR_PREFIX = "team.pushed."


class TeamError(NexusMemError):
    pass


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


# --------------------------------------------------------------------------------------------- settings


def split_url(url: str) -> tuple[str, bool]:
    """(URL without any secret, whether one was there: secreturl.without_secrets). Only postgresql:// URLs are
    accepted."""
    text = url.strip()
    try:
        parts = urlsplit(text)
    except ValueError as exc:
        raise TeamError(f"not a PostgreSQL URL: {exc}") from None
    if parts.scheme not in ("postgresql", "postgres"):
        raise TeamError(
            "the team store URL must look like postgresql://USER@HOST:PORT/DATABASE (credentials come from"
            " PGPASSWORD or ~/.pgpass)"
        )
    return secreturl.without_secrets(text)


@dataclass(frozen=True)
class Settings:
    url: str  # what connects (may hold a password when it came from the environment; never written)
    label: str  # the URL without any password: what messages and status show
    member: str
    kinds: tuple[str, ...]
    auto_push: bool


def member_name(root: Path, section: dict[str, Any]) -> str:
    """Who this machine pushes as: team.member, else git's user.email, else user@host."""
    if section.get("member"):
        return str(section["member"])
    from nexusmem import gitcmd

    code, out = gitcmd.run_ok(["config", "--get", "user.email"], root)
    email = out.decode("utf-8", "replace").strip()
    if code == 0 and email:
        return email
    import getpass
    import socket

    return f"{getpass.getuser()}@{socket.gethostname()}"


def settings(proj: Project) -> Settings | None:
    """This project's team settings, or None when no team store is configured (config or environment)."""
    section = proj.config["team"]
    url = os.environ.get(ENV_URL, "").strip() or str(section["url"])
    if not url:
        return None
    label, _ = split_url(url)
    kinds: tuple[str, ...] = SHARED_KINDS
    if section["shareShell"]:
        kinds += SHELL_KINDS
    if section["shareConversations"]:
        kinds += CONVERSATION_KINDS
    return Settings(url, label, member_name(proj.root, section), kinds, bool(section["autoPush"]))


def require(proj: Project) -> Settings:
    found = settings(proj)
    if found is None:
        refused = _refused(proj)
        if refused is not None:
            raise TeamError(refused)
        raise TeamError(
            f"no team store is configured for {proj.root.name}: run `nexusmem team init --url"
            f" postgresql://USER@HOST/DATABASE` (or set {ENV_URL})"
        )
    return found


def _refused(proj: Project) -> str | None:
    """Why PROJ's config names no team store when its `team.url` held a password (config.validate leaves it
    unset): what the team commands say instead of "no team store is configured"; None otherwise."""
    path = paths.config_path(proj.root)
    label = config.refused_team_url(path)
    if label is None:
        return None
    from nexusmem.project import password_warning_said

    if password_warning_said(proj.root):  # the warning on stderr said it all: not twice a command
        # Whole without the warning too: an MCP client reads the notes, never the server's stderr.
        return (
            f"the team store is off: the team URL in {path} has a password in it: take it out"
            " (PGPASSWORD or ~/.pgpass hold it)"
        )
    return secreturl.password_in_url(path, label)


def ready(proj: Project) -> Settings:
    """PROJ's team settings, checked as far as they can be without connecting: a team store configured, the
    team extra (psycopg) installed, a URL libpq reads as NexusMem does. A command that changes local memory
    too (`forget --team`) asks first, so a team part that cannot run leaves nothing done."""
    found = require(proj)
    same_hosts_as_libpq(found.url)
    return found


def team_project(proj: Project) -> str:
    """PROJ's id in the team store: its origin's normalised URL. A repository whose id is a local path (no
    remote origin, or an origin on this machine's disk) goes by a digest of that path instead: local absolute
    paths never reach the team store, and clones of one local origin still share their memory."""
    pid = proj.id
    if pid.startswith(("/", "\\")) or (len(pid) > 2 and pid[1] == ":" and pid[2] in "/\\"):
        return "local:" + hashlib.sha256(pid.encode("utf-8", "surrogateescape")).hexdigest()[:24]
    return pid


def nothing_held_note(proj: Project, team: TeamStore) -> str | None:
    """What a read of the team store says when the store holds no node of PROJ (no member has pushed from a
    clone of its origin, or their clones name it otherwise): an empty answer is not "nothing found"."""
    if team.holds_project():
        return None
    return (
        f"the team store holds no memory for this project (origin {proj.id}): no member has pushed from a"
        " clone of it yet, or their clones' origin names another repository"
    )


# A read made while someone waits (a query, a precheck in a commit or a CI job) gives the team store this
# long per statement, lock waits included; past it the local answer stands alone, with a note.
READ_STATEMENT_MS = 2000


def same_hosts_as_libpq(url: str) -> None:
    """Refuse URL when libpq would connect off this machine while NexusMem's reading of it (which decides
    what a repository's config may use without `nexusmem trust`) found only this machine: a URL form that
    reading gets wrong never connects anywhere it did not judge."""
    from nexusmem import config
    from nexusmem.store.team import driver

    psycopg = driver()  # before any other use: without the team extra, say how to install it
    from psycopg.conninfo import conninfo_to_dict

    try:
        parsed = conninfo_to_dict(url)
    except psycopg.Error:
        return  # psycopg.connect says what is wrong with the URL
    hosts = [h for key in ("host", "hostaddr") for h in str(parsed.get(key) or "").split(",") if h]
    if config.off_machine(url) or all(config.is_local_host(h) for h in hosts):
        return
    raise TeamUnavailable(
        "team store not contacted: libpq reads this URL as naming a host off this machine"
        f" ({', '.join(h for h in hosts if not config.is_local_host(h))}) where NexusMem read only this machine;"
        " write the URL in plain form (postgresql://user@host:port/db)"
    )


def open_team(
    proj: Project, found: Settings, *, create: bool = False, timeout: float = 2, read: bool = False
) -> TeamStore:
    """The team store FOUND names (READ: every statement bounded by READ_STATEMENT_MS)."""
    same_hosts_as_libpq(found.url)
    store = TeamStore.open(
        found.url,
        team_project(proj),
        found.member,
        found.label,
        create=create,
        timeout=timeout,
        statement_ms=READ_STATEMENT_MS if read else None,
    )
    store.node_project = proj.id  # node ids are made with it (a diff's commit is found by it)
    return store


# -------------------------------------------------------------------------------------------- withdraw

# `team withdraw --kind NAME`: the kinds a share setting sends, by the name the command takes.
WITHDRAWABLE = {
    "shell": (SHELL_KINDS, "shareShell"),
    "conversations": (CONVERSATION_KINDS, "shareConversations"),
}


@dataclass
class WithdrawReport:
    label: str
    member: str
    kind: str
    removed: int
    dry_run: bool

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__)

    def describe(self) -> str:
        noun = "shell command(s)" if self.kind == "shell" else "conversation turn(s) and session summaries"
        verb = "would remove" if self.dry_run else "removed"
        return (
            f"{verb} {self.removed:,} {noun} {self.member} pushed to {self.label} (other members' rows stay"
            " theirs; your local memory keeps them)"
        )


def withdraw(proj: Project, kind: str, *, dry_run: bool = False) -> WithdrawReport:
    """Delete from the team store the nodes of KIND (a WITHDRAWABLE name) under PROJ that this member pushed
    first: what a share setting sent before it was turned off. Refused while the setting is on (the next
    push would send the new ones again)."""
    kinds, setting = WITHDRAWABLE[kind]
    found = require(proj)
    if set(kinds) <= set(found.kinds):
        raise TeamError(
            f'team.{setting} is on here: turn it off first (`"team": {{"{setting}": false}}` in'
            f" {paths.config_path(proj.root)}), or pushes go on sharing them"
        )
    with open_team(proj, found) as team:
        removed = team.pushed_of_kinds(kinds) if dry_run else team.withdraw_kinds(kinds)
    if not dry_run:
        # The push cursors of the settings that sent them had passed them for good: dropped, so that turning
        # the setting on again shares them again, as turning it on first did (held rows counted, not sent).
        with proj.open_store() as local, local.transaction():
            for key in _cursor_keys_sharing(found, proj, kinds):
                local.delete_meta(key)
    return WithdrawReport(found.label, found.member, kind, removed, dry_run)


def _cursor_keys_sharing(found: Settings, proj: Project, kinds: tuple[str, ...]) -> list[str]:
    """The push cursor keys (_cursor_key) to FOUND's store of every share setting that sends KINDS: KINDS
    with the shared kinds, and with each combination of the other withdrawable ones."""
    others = [group for group, _setting in WITHDRAWABLE.values() if group != kinds]
    combos: list[tuple[str, ...]] = [()]
    for group in others:
        combos += [combo + group for combo in combos]
    return [
        _cursor_key(dataclasses.replace(found, kinds=SHARED_KINDS + kinds + combo), proj) for combo in combos
    ]


def _still_shared(team: TeamStore, found: Settings) -> str | None:
    """The note a push gives while this member's rows of kinds no longer shared stay in the team store."""
    for name, (kinds, setting) in WITHDRAWABLE.items():
        if set(kinds) <= set(found.kinds):
            continue
        held = team.pushed_of_kinds(kinds)
        if held:
            return (
                f"team.{setting} is off, but {held:,} node(s) of those kinds you pushed before stay in the team"
                f" store: `nexusmem team withdraw --kind {name}` removes them (only yours)"
            )
    return None


# ------------------------------------------------------------------------------------------------ init


@dataclass
class InitReport:
    label: str
    member: str
    stripped_password: bool
    migrated: list[int]
    schema_version: int
    no_auto_push: str | None = None  # why commits here do not push by themselves (no_auto_push)


def init(proj: Project, url: str) -> InitReport:
    """Check URL (connect, migrate the team store), then record it in this project's config without any
    password: a password given in the URL is used for this connection only and then dropped."""
    from nexusmem.store.team import Watchdog, connect, is_driver_error, migrate

    try:
        label, had_password = split_url(url)
    except TeamError as exc:  # a value on the command line that cannot be used
        raise UsageError(f"--url: {exc}") from None
    same_hosts_as_libpq(url.strip())
    conn = connect(url.strip())
    watchdog = Watchdog(conn, url.strip(), label)
    try:
        applied = migrate(conn)
    except Exception as exc:
        if watchdog.why:
            raise TeamError(f"{watchdog.why}; nothing was recorded") from None
        if is_driver_error(exc):
            raise TeamError(f"cannot set up the team store {label}: {_first_line(exc)}") from None
        raise
    finally:
        watchdog.stop()
        conn.close()
    path = paths.config_path(proj.root)
    try:
        raw = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
    except (OSError, ValueError) as exc:
        raise TeamError(f"{path}: cannot read the config: {exc}") from None
    section = dict(raw.get("team") or {})
    section["url"] = label
    raw["team"] = section
    config.validate(raw, path)
    private.write_atomic(path, (json.dumps(raw, indent=2) + "\n").encode("utf-8"))
    from nexusmem import project
    from nexusmem.store.team import LATEST

    report = InitReport(label, member_name(proj.root, section), had_password, applied, LATEST)
    report.no_auto_push = no_auto_push(project.load(proj.root))
    return report


# ------------------------------------------------------------------------------------------------ push


# A push that added this many nodes refreshes the planner's statistics (see TeamStore.refresh_statistics).
ANALYZE_AFTER = 1000


@dataclass
class PushReport:
    label: str = ""
    member: str = ""
    added: int = 0
    updated: int = 0
    unchanged: int = 0
    refused: int = 0  # forgotten on the team: the server would not take them back
    denied: int = 0  # matched a deny-list entry here: never sent
    not_shared: int = 0  # kinds this member does not share
    links: int = 0
    verdicts: int = 0
    deny_pulled: int = 0  # new team deny-list entries applied to the local memory
    removed_local: int = 0  # local nodes those entries removed
    log_lines: int = 0  # lines of the hooks' log those entries removed
    vectors: int = 0
    retries: int = 0
    bulk: bool = False  # loaded into a vector generation of its own (a large push)
    generation: int = 0  # that generation (0: row by row into generation 0's graphs)
    graph: int = 0  # commits whose place in the history's graph the team did not hold
    retracted: int = 0  # nodes of commits a rewrite here replaced, removed from the team
    unclean_dropped: int = 0  # nodes this member pushed under an older project id that held a credential
    index_built: bool = False  # built HNSW graphs in one pass at the end
    seconds: float = 0.0
    notes: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items()}

    def describe(self) -> str:
        sent = self.added + self.updated + self.unchanged + self.refused
        lines = [
            f"pushed {sent:,} node(s) to {self.label} as {self.member} in {self.seconds:.1f} s:"
            f" {self.added:,} new, {self.updated:,} updated, {self.unchanged:,} already there"
            + (f", {self.refused:,} refused (forgotten by the team)" if self.refused else ""),
            f"  {self.vectors:,} with vectors; {self.links:,} new link(s); {self.verdicts:,} verdict(s) updated;"
            f" {self.graph:,} commit(s) placed in the history's graph",
        ]
        if self.index_built:
            lines.append(
                "  built the team's vector (HNSW) graphs in one pass"
                + (
                    f" over this push's rows, loaded without them (vector generation {self.generation})"
                    if self.bulk
                    else " (a bulk push had left them unbuilt)"
                )
            )
        if self.retracted:
            lines.append(
                f"  removed {self.retracted:,} node(s) of commits a rewrite here replaced (amend, rebase,"
                " deleted branch)"
            )
        if self.unclean_dropped:
            lines.append(
                f"  removed {self.unclean_dropped:,} node(s) you pushed under this repository's older project id,"
                " which held a credential of the origin URL or spelled the origin otherwise (they are sent under"
                " the id it has now)"
            )
        if self.not_shared or self.denied:
            lines.append(
                f"  kept here: {self.not_shared:,} node(s) of kinds not shared"
                + (f", {self.denied:,} matching a deny-list entry" if self.denied else "")
            )
        if self.deny_pulled:
            lines.append(
                f"  applied {self.deny_pulled} new team deny-list entr(ies): {self.removed_local} local node(s)"
                f" and {self.log_lines} shell-log line(s) removed"
            )
        lines += [f"  note: {n}" for n in self.notes]
        return "\n".join(lines)


def _cursor_key(found: Settings, proj: Project) -> str:
    """Where this project's push cursor to FOUND's store is kept. The kinds it shares are part of the key
    when they are not the default ones: turning `team.shareShell` (or shareConversations) on later starts a
    cursor of its own, so the commands synced before are sent too (the old cursor had passed them by for
    good); nodes the store holds already are counted as such, not sent twice."""
    shared = "" if found.kinds == SHARED_KINDS else "\0" + ",".join(sorted(found.kinds))
    digest = hashlib.sha256(f"{found.label}\0{proj.id}{shared}".encode()).hexdigest()[:16]
    return _CURSOR_PREFIX + digest


def _read_cursor(local: Store, key: str) -> tuple[int, int]:
    value = local.get_meta(key) or ""
    at, _, seq = value.partition(":")
    return (int(at), int(seq)) if at.isdigit() and seq.isdigit() else (-1, 0)


# Characters that continue a name: a start of the root or home path after one of them, just before a cut
# ("…"), is the end of another path (`build/tmp/s4…`), not what the cut left of an absolute one.
_PATH_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-~/")


def _cut_start(part: str, where: str) -> int | None:
    """Where PART ends with the longest start of the path WHERE, two characters at least (a lone "/" names
    nothing), at a place a path can begin (`build/tmp/s4` is not one; a folder may hold a space); None when
    it does not."""
    for j in range(max(0, len(part) - len(where)), len(part) - 1):
        if part[j] == where[0] and where.startswith(part[j:]) and (j == 0 or part[j - 1] not in _PATH_CHARS):
            return j
    return None


class _Scrubber:
    """Local absolute paths out of a node's text: the repository root becomes relative, home becomes ~."""

    def __init__(self, root: Path) -> None:
        self.pairs: list[tuple[str, str]] = []
        for where in {str(root), str(root.resolve())}:
            self.pairs += [(where + "/", ""), (where, ".")]
        home = str(Path.home())
        if home not in ("/", ""):
            self.pairs += [(home + "/", "~/"), (home, "~")]
        # Titles are cut to a length when nodes are made (a command's at 120 characters, a question's at
        # 100), before anything is cleaned here: a cut can end inside the root or home path
        # (`--junitxml=/tmp/s42/te…`), which no whole-path pair above finds.
        self.cut_paths = [where for where, new in self.pairs if new in (".", "~")]

    def text(self, value: str) -> str:
        for old, new in self.pairs:
            if old in value:
                value = self._whole(old).sub(new, value)
        return self._uncut(value) if "…" in value else value

    @staticmethod
    @functools.cache
    def _whole(path: str) -> re.Pattern[str]:
        """PATH where it is a whole path or its head: not inside another path (`/x/tmp/repo`) and not the
        start of a sibling's name (`/tmp/repo-notes`, `/home/u2`: "cp .-notes/todo.md ~2/inbox/" was sent)."""
        end = "" if path.endswith("/") else r"(?![\w.-])"
        return re.compile(r"(?<![\w./-])" + re.escape(path) + end)

    def _uncut(self, value: str) -> str:
        """VALUE without what a cut ("…") left of the root or home path just before it: the start of that
        path goes (`--junitxml=…`), since what followed it is not known."""
        parts = value.split("…")
        for i, part in enumerate(parts[:-1]):
            for where in self.cut_paths:
                start = _cut_start(part, where)
                if start is not None:
                    parts[i] = part[:start]
                    break
        return "…".join(parts)

    def meta(self, value: Any) -> Any:
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return {k: self.meta(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self.meta(v) for v in value]
        return value


def outgoing(
    node: StoredNode, files: tuple[str, ...], scrub: _Scrubber, emb: bytes | None
) -> tuple[Any, ...]:
    """NODE as the team store receives it (PUSH_COLUMNS order): paths made relative, and commands and
    conversations redacted once more (the store is shared; a redaction rule added since the node was
    recorded applies here too)."""
    title, body, ref = node.title, node.body, node.ref
    meta = scrub.meta(node.meta)
    if node.kind in SHELL_KINDS or node.kind in CONVERSATION_KINDS:
        head, tail = split_title(title) if node.kind in SHELL_KINDS else (title, "")
        title, body, ref = redact.redact(head) + tail, redact.redact(body), redact.redact(ref)
        meta = json.loads(redact.redact(json.dumps(meta, ensure_ascii=False)))
    title, body, ref = scrub.text(title), scrub.text(body), scrub.text(ref)
    return (
        node.id,
        node.kind,
        node.source,
        scrub.text(node.natural_key),
        ref,
        title,
        body,
        node.words,
        node.ts,
        node.signal,
        node.provenance,
        node.group,
        json.dumps(meta, sort_keys=True, ensure_ascii=False),
        _hash(node, title, body, ref, meta),
        [scrub.text(f) for f in files],
        node.trust,
        node.superseded_by,
        emb,
    )


def _hash(node: StoredNode, title: str, body: str, ref: str, meta: Any) -> str:
    parts = (
        title,
        body,
        ref,
        str(node.ts),
        f"{node.signal:.6f}",
        node.group or "",
        json.dumps(meta, sort_keys=True),
    )
    return hashlib.sha256("\0".join(parts).encode("utf-8", "surrogatepass")).hexdigest()[:32]


def _retrying(
    action: Callable[[TeamStore], Any],
    team: list[TeamStore],
    reopen: Callable[[], TeamStore],
    report: PushReport,
    *,
    opened: bool = True,
) -> Any:
    """ACTION on the team store, reconnecting and retrying when the connection drops (RETRIES times). The
    connection is made again inside the retry, so a drop while reconnecting is one more retry. OPENED
    False: TEAM holds no connection of the caller's yet (a sender's first batch), and one is made first."""
    import psycopg

    delay = 0.5
    stale = not opened
    for attempt in range(RETRIES + 1):
        try:
            if stale:
                team[0] = reopen()
                stale = False
            return action(team[0])
        except (psycopg.OperationalError, psycopg.errors.DeadlockDetected, TeamUnavailable) as exc:
            if attempt == RETRIES:
                # A server that stopped answering is named as such (the driver says "closed the connection").
                silence = "" if stale else str(getattr(team[0], "silence", ""))
                why = silence or _first_line(exc)
                raise TeamUnavailable(
                    f"push to {report.label} interrupted after {RETRIES} retries ({why}); what was sent is"
                    " kept: run `nexusmem team push` again to finish"
                ) from None
            with _REPORT_LOCK:  # senders retry from their own threads
                report.retries += 1
            time.sleep(delay)
            delay *= 2
            if not stale:  # the connection that failed (never a placeholder the caller still uses)
                with contextlib.suppress(Exception):
                    team[0].close()
            stale = True
    raise AssertionError("unreachable")


def push(proj: Project, *, log: Callable[[str], None] | None = None, batch: int | None = None) -> PushReport:
    """Send what this member shares to the team store (see the module docstring), resumably.

    First the team's deny-list is applied here (new entries recorded in the local deny-list and matching
    local nodes removed), so a forgotten value is neither kept nor sent back. Then nodes written since the
    last push's cursor go in batches, the cursor saved after each committed batch: a killed push resumes
    where it stopped, and re-sending a batch is harmless (the upsert skips what the team already holds).
    Each batch is checked against the deny-list entries recorded since the push began (a `forget --team`
    meanwhile; see TeamStore.record_deny), and the push applies those here when it ends.
    """
    from nexusmem.hygiene import denylist, forget
    from nexusmem.sync import DEFAULT_WAIT_SECONDS, exclusive

    found = require(proj)
    if batch is None:
        # NEXUSMEM_TEAM_BATCH: smaller transactions for a flaky link (and the killed-push test).
        value = os.environ.get("NEXUSMEM_TEAM_BATCH", "")
        batch = int(value) if value.isdigit() and int(value) > 0 else PUSH_BATCH
    started = time.monotonic()
    report = PushReport(label=found.label, member=found.member)

    def reopen() -> TeamStore:
        return open_team(proj, found, create=True)

    team = [reopen()]
    try:
        if team[0].project != proj.id:
            # What an earlier version pushed under the local path goes under the digest (see team_project).
            _retrying(lambda t: t.adopt(proj.id), team, reopen, report)
        with proj.open_store() as local:
            # Only the deny-list step writes memory (deletions): it waits for a running sync; the rest
            # reads (WAL readers never block the writer) and stamps its cursor in small transactions.
            # What the team says is read before the memory's lock is taken: a server that stops answering
            # must hold this push only, never the syncs of the commits that follow.
            entries, team_key = _retrying(_fetch_deny, team, reopen, report)
            with exclusive(proj.root, DEFAULT_WAIT_SECONDS, log or (lambda _m: None), what="team push"):
                report.deny_pulled, report.removed_local, report.log_lines = _apply_deny(
                    entries, team_key, local
                )
                matcher = forget.sync_gate(local)  # (applies new user-wide entries: a write too)
            # Each batch is checked, on the server's side of a lock `forget --team` takes too, against the
            # entries recorded since (_LateDeny): a value forgotten while this push runs is not written.
            screen = _LateDeny({e["key"] for e in entries})
            share_vectors = _retrying(lambda t: _vector_plan(t, local, report), team, reopen, report)
            key = _cursor_key(found, proj)
            at, seq = _read_cursor(local, key)
            scrub = _Scrubber(proj.root)
            pending = local.count_written_after(at, seq)

            def settled(cursor: tuple[int, int], counts: PushCounts) -> None:
                report.added += counts.added
                report.updated += counts.updated
                report.unchanged += counts.unchanged
                report.refused += counts.refused
                report.denied += counts.denied
                with local.transaction():
                    local.set_meta(key, f"{cursor[0]}:{cursor[1]}")
                if log:
                    log(f"team push: {report.added + report.updated + report.unchanged:,} node(s) sent")

            # One batch or less: the caller's connection alone (a second would only cost its connect).
            senders = Senders(
                team, reopen, report, push_jobs() if pending > batch else 1, settled, screen=screen
            )
            try:
                while True:
                    rows = local.written_after(at, seq, batch)
                    if not rows:
                        break
                    if share_vectors and pending:  # decided once, on the first batch
                        decide = functools.partial(
                            begin_bulk, pending=pending, sample=[r[0].id for r in rows]
                        )
                        report.bulk = _retrying(decide, team, reopen, report)
                        report.generation = team[0].push_gen
                        if team[0].bulk_refused:
                            report.notes.append(team[0].bulk_refused)
                        pending = 0
                    vectors = local.vectors_by_seq([r[2] for r in rows]) if share_vectors else {}
                    out = []
                    for node, _updated, node_seq, files in rows:
                        if node.kind not in found.kinds:
                            report.not_shared += 1
                            continue
                        if matcher and matcher.which(
                            denylist.node_fields(node.title, node.body, node.ref, node.meta, kind=node.kind)
                        ):
                            report.denied += 1
                            continue
                        blob = vectors.get(node_seq)
                        if blob is not None:
                            report.vectors += 1
                        out.append(outgoing(node, files, scrub, blob))
                    at, seq = rows[-1][1], rows[-1][2]
                    senders.send(out, (at, seq))
                senders.finish()
            finally:
                senders.close()
            if report.bulk and not report.added:
                # What it sent, the team held already (another member pushed the same history meanwhile):
                # no generation of graphs over nothing, counted against MAX_GENERATIONS for good.
                gen = report.generation
                _retrying(lambda t: t.drop_generation(gen), team, reopen, report)
                report.bulk, report.generation = False, 0
            report.graph = _retrying(
                lambda t: _push_generations(t, local, key, proj.root), team, reopen, report
            )
            report.retracted = _retrying(lambda t: _push_retractions(t, local, key), team, reopen, report)
            links = [(a, b, r) for a, b, r, _ in local.all_links()]
            report.links = _retrying(lambda t: t.push_links(links), team, reopen, report)
            verdicts = local.verdicts()
            report.verdicts = _retrying(lambda t: t.push_verdicts(verdicts), team, reopen, report)
            # Generations a push left empty (its link went silent before its first batch; before this
            # release, one whose rows another member had pushed first) go; then, after a bulk load, and
            # after a bulk push that died before its build: build HNSW in one pass (it ANALYZEs too).
            _retrying(lambda t: t.reclaim_empty_generations(), team, reopen, report)
            report.index_built = _retrying(
                lambda t: not t.vector_index_ready() and t.build_vector_index(), team, reopen, report
            )
            if team[0].build_refused:
                report.notes.append(team[0].build_refused)
            report.unclean_dropped = _retrying(lambda t: _drop_unclean(t, local), team, reopen, report)
            if report.added >= ANALYZE_AFTER and not report.index_built:
                _retrying(lambda t: t.refresh_statistics(), team, reopen, report)
            if report.not_shared:
                still = _retrying(lambda t: _still_shared(t, found), team, reopen, report)
                if still:
                    report.notes.append(still)
            _retrying(lambda t: t.note_push(), team, reopen, report)
            # Entries recorded while this push ran (a batch may have kept their matches out) are applied
            # here now, as those read at its start were: the value leaves this memory too.
            entries, team_key = _retrying(_fetch_deny, team, reopen, report)
            if {e["key"] for e in entries} - screen.start:
                with exclusive(proj.root, DEFAULT_WAIT_SECONDS, log or (lambda _m: None), what="team push"):
                    pulled, removed, lines = _apply_deny(entries, team_key, local)
                report.deny_pulled += pulled
                report.removed_local += removed
                report.log_lines += lines
    finally:
        team[0].close()
    report.seconds = time.monotonic() - started
    from nexusmem import autosync

    autosync.mark_pushed(proj.root)  # `doctor` no longer names a post-commit push that failed before it
    return report


def _drop_unclean(team: TeamStore, local: Store) -> int:
    """Delete what this member pushed under a project id that held a credential of the origin URL, which this
    memory was re-keyed from (an upgrade, `scrub`): the push has just sent it all again under the clean id.
    Another member's rows under that id are theirs (their next push, or `forget --team VALUE`). Returns how
    many nodes went; the memory then no longer names the id."""
    digests = local.unclean_id_digests()
    if not digests:
        return 0
    dropped = sum(
        team.drop_project(old, everyone=False, heir=team.project) for old in team.unclean_ids(digests)
    )
    with local.transaction():
        local.forget_unclean_ids(digests)
    return dropped


def push_jobs() -> int:
    """How many connections a push sends over at once: NEXUSMEM_TEAM_JOBS, else PUSH_JOBS."""
    value = os.environ.get("NEXUSMEM_TEAM_JOBS", "")
    return int(value) if value.isdigit() and int(value) > 0 else PUSH_JOBS


class Senders:
    """Sends a push's batches over JOBS connections at once and hands each batch's counts to SETTLED, on
    the caller's thread, in the order the batches were given.

    Why: a push is bound by the server, one core per backend (PUSH_JOBS), and the client's reading and
    redacting of the next batch can overlap the server's work. Settling in order is what keeps a killed
    push whole: the caller records a batch (its cursor) only once it and every batch before it committed,
    so a push stopped with batches in flight re-sends them next time and the upsert leaves what had landed
    as it is. Batches hold distinct nodes; their transactions meet only on term_df's rows (upserted in
    (project, term) order by its trigger) and then the member's row, so one waits for the other's commit
    there and none can deadlock. With one job everything runs on the caller's thread and connection."""

    def __init__(
        self,
        team: list[TeamStore],
        reopen: Callable[[], TeamStore],
        report: PushReport,
        jobs: int,
        settled: Callable[[Any, PushCounts], None],
        *,
        screen: DenyScreen | None = None,
    ) -> None:
        from concurrent.futures import Future, ThreadPoolExecutor

        self.screen = screen
        self.team = team
        self.reopen = reopen
        self.report = report
        self.jobs = max(1, jobs)
        self.settled = settled
        self._pool = ThreadPoolExecutor(self.jobs, "nexusmem-push") if self.jobs > 1 else None
        self._local = threading.local()
        self._lock = threading.Lock()
        self._opened: list[list[TeamStore]] = []
        self._inflight: deque[tuple[Future[PushCounts], Any]] = deque()

    def send(self, rows: list[tuple[Any, ...]], token: Any) -> None:
        """Push ROWS (waiting while JOBS batches and one more are in flight); TOKEN comes back with them."""
        if self._pool is None:
            pusher = _batch_pusher(rows, self.report.generation, self.screen)
            self.settled(token, _retrying(pusher, self.team, self.reopen, self.report))
            return
        self._inflight.append((self._pool.submit(self._push, rows), token))
        while len(self._inflight) > self.jobs:
            self._settle_oldest()

    def finish(self) -> None:
        """Wait for every batch sent and settle it (raises the first batch's error, in order)."""
        while self._inflight:
            self._settle_oldest()

    def close(self) -> None:
        """Let the batches in flight end (an error stopped the push: they are not settled) and close the
        senders' connections."""
        if self._pool is not None:
            for future, _token in self._inflight:
                future.cancel()
            self._pool.shutdown(wait=True)
            self._inflight.clear()
        for holder in self._opened:
            with contextlib.suppress(Exception):
                holder[0].close()

    def _settle_oldest(self) -> None:
        future, token = self._inflight.popleft()
        self.settled(token, future.result())

    def _push(self, rows: list[tuple[Any, ...]]) -> PushCounts:
        holder: list[TeamStore] | None = getattr(self._local, "team", None)
        fresh = holder is None
        if holder is None:
            # This sender's own connection is made by the retry loop before its first batch: a connection
            # dropped while it is being made is retried like one dropped mid-batch. Until then it holds the
            # push's, which it neither uses nor closes.
            holder = [self.team[0]]
        pusher = _batch_pusher(rows, self.report.generation, self.screen)
        counts: PushCounts = _retrying(pusher, holder, self.reopen, self.report, opened=not fresh)
        if fresh:
            self._local.team = holder
            with self._lock:
                self._opened.append(holder)
        return counts


def begin_bulk(team: TeamStore, pending: int, sample: Sequence[str]) -> bool:
    """Whether this push of PENDING nodes loads into a vector generation of its own (TeamStore.begin_bulk)
    and builds its graphs in one pass at the end: when the nodes it adds — PENDING times the share of
    SAMPLE (its first batch's ids) the team lacks — are BULK_MIN or more, however much the team holds. A
    smaller push inserts row by row; a clone re-sending the history the team already holds adds nothing
    and builds nothing."""
    from nexusmem.store.team import BULK_MIN

    # NEXUSMEM_TEAM_BULK_MIN: the size from which a push loads in bulk (tests use a small history).
    value = os.environ.get("NEXUSMEM_TEAM_BULK_MIN", "")
    least = int(value) if value.isdigit() and int(value) > 0 else BULK_MIN
    if pending < least or not sample:
        return False
    new = pending * team.missing_count(sample) // len(sample)
    return new >= least and team.begin_bulk()


def _batch_pusher(
    rows: list[tuple[Any, ...]], gen: int, screen: DenyScreen | None = None
) -> Callable[[TeamStore], PushCounts]:
    return lambda team: team.push_batch(rows, gen, screen=screen)


class _LateDeny:
    """A push's DenyScreen: the team deny-list entries it read when it began (START; what they match was
    kept out as each batch was made), and the matching of a batch's rows against entries recorded since,
    which push_batch asks for under the lock `forget --team` records an entry under. Called from the
    senders' threads."""

    def __init__(self, start: set[str]) -> None:
        self.start = frozenset(start)

    def known(self) -> Collection[str]:
        return self.start

    def refused(
        self, team: TeamStore, entries: list[dict[str, Any]], rows: Sequence[Sequence[Any]]
    ) -> set[str]:
        from nexusmem.hygiene import denylist

        key = _team_key(team)
        if key is not None:
            denylist.add_keys({key[0]: key[1].hex()})
        matcher = denylist.Matcher([denylist.entry_from_json(e) for e in entries])
        doomed: set[str] = set()
        for row in rows:  # PUSH_COLUMNS: id, kind, source, natural_key, ref, title, body, ..., meta (12)
            try:
                meta = json.loads(row[12]) if row[12] else {}
            except ValueError:
                meta = row[12]
            fields = denylist.node_fields(str(row[5]), str(row[6]), str(row[4]), meta, kind=str(row[1]))
            if matcher.which(fields) is not None:
                doomed.add(str(row[0]))
        return doomed


def _push_generations(team: TeamStore, local: Store, key: str, root: Path) -> int:
    """Send each commit's place in the history's graph ("where did X begin?" goes by it on the team store
    too): those of the commits stored since the last push that sent them (all of them the first time, and
    again whatever a killed push did not send). Nothing from a shallow clone, which numbers from its cut.
    Returns how many the team did not hold."""
    if team.schema_version() < 5:
        return 0
    mark = f"{key}:graph"
    rows = local.generations_after(_sent_up_to(local, mark))
    if not rows or _shallow(root):  # git is asked only when there is something to send
        return 0
    added = team.push_generations([(sha, gen) for sha, gen, _ in rows])
    _sent(local, mark, rows[-1][2])
    return added


def _sent_up_to(local: Store, mark: str) -> int:
    """How far (a local sequence number) the pushes have sent what MARK names: 0 when none did."""
    sent = local.get_meta(mark) or "0"
    return int(sent) if sent.isdigit() else 0


def _sent(local: Store, mark: str, upto: int) -> None:
    with local.transaction():
        local.set_meta(mark, str(upto))


def _push_retractions(team: TeamStore, local: Store, key: str) -> int:
    """Remove from the team the nodes this member shared whose commits a rewrite here left unreachable (an
    amend, a rebase, a deleted branch: the sync removed them from the local memory), so teammates do not
    see the replaced commit beside its replacement. Those removed since the last push that sent them; an id
    the local memory holds again (a reset back to the old commit) stays. Returns how many the team removed."""
    mark = f"{key}:unreachable"
    last, ids = local.unreachable_after(_sent_up_to(local, mark))
    if not ids:
        return 0
    held = local.get_many(ids, light=True)
    removed = team.retract([i for i in ids if i not in held])
    _sent(local, mark, last)
    return removed


def _shallow(root: Path) -> bool:
    code, out = gitcmd.run_ok(["rev-parse", "--is-shallow-repository"], root)
    return code == 0 and out.strip() == b"true"


def _vector_plan(team: TeamStore, local: Store, report: PushReport) -> bool:
    """Whether this member's vectors go too: only those of the model the team's vectors come from (the
    first member to push vectors decides; the built-in 256-d model by default)."""
    from nexusmem import embed
    from nexusmem.store.team import TEAM_DIM, TOKEN_WEIGHTS

    mine = embed.Identity.from_json(local.vector_identity_json())
    if mine is None:
        return False
    if mine.dim != TEAM_DIM:
        report.notes.append(
            f"vectors not shared: {mine.describe()} here, the team store holds {TEAM_DIM}-d ones"
        )
        return False
    theirs = embed.Identity.from_json(team.set_meta_if_absent(VECTOR_IDENTITY, mine.to_json()))
    if not mine.same_as(theirs):
        assert theirs is not None
        report.notes.append(f"vectors not shared: {mine.describe()} here, {theirs.describe()} on the team")
        return False
    weights = local.vector_token_weights()
    if weights:
        # The team's queries are pooled with the first pusher's weights (see TeamStore.vector_token_weights).
        team.set_meta_if_absent(TOKEN_WEIGHTS, weights)
    return True


def _team_key(team: TeamStore) -> tuple[str, bytes] | None:
    value = team.get_meta(DENY_KEY)
    if not value:
        return None
    data = json.loads(value)
    return str(data["id"]), bytes.fromhex(str(data["secret"]))


def _fetch_deny(team: TeamStore) -> tuple[list[dict[str, Any]], tuple[str, bytes] | None]:
    """The team's deny-list entries and its key (network only: no lock of the local memory held)."""
    entries = team.deny_entries()
    return entries, (_team_key(team) if entries else None)


def _apply_deny(
    entries: list[dict[str, Any]], key: tuple[str, bytes] | None, local: Store
) -> tuple[int, int, int]:
    """Record the team's deny-list ENTRIES this memory lacks and forget what they match here as a local
    forget does (the hooks' log lines too); returns (entries applied, nodes removed, log lines removed)."""
    from nexusmem.hygiene import denylist, forget

    if not entries:
        return 0, 0, 0
    if key is not None:
        denylist.add_keys({key[0]: key[1].hex()})
    known = {e["key"] for e in local.deny_entries()}
    fresh = [denylist.entry_from_json(e) for e in entries if e["key"] not in known]
    if not fresh:
        return 0, 0, 0
    done = forget.apply_entries(local, fresh, reason="team")
    return len(fresh), done.removed, done.log_lines


# ---------------------------------------------------------------------------------------------- forget


@dataclass
class TeamForget:
    label: str
    member: str
    removed: int
    dry_run: bool
    kinds: dict[str, int]
    # Project ids holding the value (an older release's, with a credential of the origin URL in it) and the
    # nodes held under them: every member's, deleted with them.
    project_ids: int = 0
    project_nodes: int = 0
    # A --regex with no regex syntax (denylist.fixed_text): recorded as the literal value, a keyed hash; a
    # real pattern goes to the team's deny-list (and every member's memory) as written: PATTERN_SHARED.
    pattern_as_value: bool = False
    pattern_shared: bool = False
    # The team's entry for the value (Entry.to_json): this memory takes it in place of its own for the same
    # value (forget.adopt_entry), so the push that brings it back finds it known.
    entry: dict[str, Any] = field(default_factory=dict)


def forget_team(proj: Project, value: str, *, regex: bool, ignore_case: bool, dry_run: bool) -> TeamForget:
    """Delete every team node holding VALUE (or matching the regex), record the team deny-list entry (a
    keyed digest under the team's shared key, or the pattern) and an audit row. The value never reaches
    the team store's tables; it is sent once as the search needle of a literal (never for a regex). A REGEX
    with no regex syntax at all (denylist.fixed_text: a pasted secret), or none but escapes of literal
    characters (`lib\\.gamma\\.example`), is forgotten as the literal value it spells."""
    from nexusmem.hygiene import denylist
    from nexusmem.identity import clean_id

    spelled = denylist.fixed_text(value) if regex else None
    as_value = spelled is not None
    value = spelled if spelled is not None else value
    regex = regex and not as_value
    found = require(proj)
    with open_team(proj, found, create=True) as team:
        if regex:
            entry = denylist.make_regex(value, ignore_case)
        else:
            fresh = denylist.new_shared_key()
            stored = team.set_meta_if_absent(DENY_KEY, json.dumps({"id": fresh[0], "secret": fresh[1].hex()}))
            data = json.loads(stored)
            key = (str(data["id"]), bytes.fromhex(str(data["secret"])))
            denylist.add_keys({key[0]: key[1].hex()})
            entry = denylist.make_literal(value, ignore_case, key)
            # The same value forgotten before (a run again after one the team store failed, or twice): its
            # entry, not a second one (each new entry has its own salt, so its own key).
            for known in team.deny_entries():
                try:
                    held = denylist.entry_from_json(known)
                except denylist.DenyListError:  # not one this release reads: a push says so
                    continue
                if held.ignore_case == ignore_case and held.is_value(value):
                    entry = held
                    break
        if not dry_run:
            # Recorded (committed) before the value is looked for: a push under way either wrote its rows
            # before (they are found below) or reads the entry before it writes (TeamStore.record_deny).
            team.record_deny(entry.to_json())
        ids: list[str] = []
        kinds: dict[str, int] = {}
        needle = "" if regex else value
        for node_id, texts in team.candidates_containing(needle, ignore_case):
            kind, title, body, ref, meta = texts
            try:
                meta_value = json.loads(meta) if meta else {}
            except ValueError:
                meta_value = meta
            fields = denylist.node_fields(title, body, ref, meta_value, kind=kind)
            if any(entry.matches(s) for s in fields if s):
                ids.append(node_id)
        found_nodes = team.get_many(ids, light=True).values()
        for node in found_nodes:
            kinds[node.kind] = kinds.get(node.kind, 0) + 1
        # A commit's change words are its diff's identifiers lower-cased: a literal is looked for there
        # lower-cased, inside a longer word too (`run_kelt8vqalong_name` held `kelT8vqa`); one cut into
        # pieces there (`Skunkworks-internal.net` leaves `skunkworks internal net`) is taken out as a
        # pattern's is: the commits whose diffs held it lose their words.
        words = "" if regex else value.lower()
        word_ids: list[str] = []
        if not dry_run:
            try:
                word_ids = _regex_word_holders(team, value if regex else re.escape(value), found_nodes)
            except denylist.DenyListError:  # a literal no pattern spells (not UTF-8): its words as above
                word_ids = []
        removed = len(ids) if dry_run else team.forget(entry.to_json(), ids, words, word_ids)

        # Only an id no release makes any more: a project that goes by one holding the value keeps its memory.
        # The releases that made such ids lower-cased them: a value is looked for whatever its case.
        def holds(pid: str) -> bool:
            return entry.matches(pid) if regex else value.lower() in pid.lower()

        holding = [p for p in team.held_project_ids() if holds(p) and clean_id(p) != p]
        under = 0
        for pid in holding:
            # Its deny-list entries and audit rows go on under the id that project has now.
            under += (
                team.nodes_under(pid)
                if dry_run
                else team.drop_project(pid, everyone=True, heir=clean_id(pid))
            )
    return TeamForget(
        found.label,
        found.member,
        removed,
        dry_run,
        kinds,
        len(holding),
        under,
        as_value,
        regex,
        entry.to_json(),
    )


@dataclass(frozen=True)
class TeamCopies:
    """What a local forget leaves in the team store, as far as this memory's record of its pushes tells."""

    label: str  # the team store (its URL without a password)
    shared: int  # the nodes it deletes that are of the kinds this member shares
    pushed: int  # ...of which a push from this memory sent a version (the push cursor had passed them)


def copies_left(proj: Project, local: Store, seqs: Sequence[int]) -> TeamCopies | None:
    """For a local forget (no --team) deleting the nodes SEQS of LOCAL: which of them a push from this memory
    already sent to the team store, where they stay; None without a team store. Read from the push cursor
    kept in LOCAL: the team store is not contacted (nor another member's pushes known)."""
    try:
        found = settings(proj)
    except NexusMemError:  # a URL that is not one: the team part of a command says so, not a local forget
        return None
    if found is None:
        return None
    at, seq = _read_cursor(local, _cursor_key(found, proj))
    shared, pushed = local.count_sent(seqs, found.kinds, at, seq)
    return TeamCopies(found.label, shared, pushed)


def _regex_word_holders(team: TeamStore, pattern: str, matched: Collection[StoredNode]) -> list[str]:
    """Ids of the team nodes whose change words a regex `forget --team` of PATTERN takes out (MATCHED: the
    nodes it deletes). The words are a commit's diff identifiers, lower-cased and cut at every character no
    identifier holds (`vault9.Skunkworks-internal.net` leaves `vault9 skunkworks internal net`): the pattern
    cannot be matched there as it is in the diff. So the commits whose diffs it matched lose theirs (as a
    local `forget --regex` does), and so does every node whose words it matches ignoring case (a commit
    older than the diff window has words but no diff to match). The team store derives nothing again: what
    is cleared stays cleared until a member's push sends the commit's words anew."""
    from nexusmem.hygiene import denylist

    shas = sorted({n.group for n in matched if n.kind == "code_diff" and n.group})
    folded = denylist.make_regex(pattern, True)
    held = [node_id for node_id, words in team.word_texts() if folded.matches(words)]
    return sorted({*team.commits_with_words(shas), *held})


# ---------------------------------------------------------------------------------------------- status


def status(proj: Project) -> dict[str, Any]:
    """The team store's figures for this project, plus this member's side: who, what is shared, how
    many shareable local nodes the next push would send."""
    from nexusmem.store.team import is_driver_error, unanswered

    found = require(proj)
    with open_team(proj, found) as team:
        try:
            data = team.status()
        except Exception as exc:
            if team.silence:
                raise TeamError(team.silence) from None
            if is_driver_error(exc):
                raise TeamError(
                    f"the team store {found.label} was not read: {unanswered(exc, team.conn)}"
                ) from None
            raise
    with proj.open_store(readonly=True) as local:
        data["pending"] = _pending(local, found, _read_cursor(local, _cursor_key(found, proj)))
    data.update({"url": found.label, "member": found.member, "shared_kinds": list(found.kinds)})
    return data


def buffers_advice(index_bytes: int, buffers_bytes: int) -> str | None:
    """A line for `team status` when the server's shared_buffers cannot hold the HNSW graphs: every node a
    push inserts walks the graph, and pages read from outside PostgreSQL's buffers made that about twice
    as slow (a 410 MB graph of 300,000 vectors took 265 inserts/s at 128 MB, PostgreSQL's default, and
    531 at 4 GB: benchmarks/bench_team_buffers.py)."""
    if index_bytes <= buffers_bytes:
        return None
    return (
        f"server: shared_buffers ({buffers_bytes / 1e6:,.0f} MB) is smaller than the vector index"
        f" ({index_bytes / 1e6:,.0f} MB): pushes insert about half as fast as they could; ask the server's"
        " administrator to raise shared_buffers above it"
    )


def _pending(local: Store, found: Settings, cursor: tuple[int, int]) -> int:
    """How many shareable local nodes were written since this member's last push."""
    at, seq = cursor
    return local.count_written_after(at, seq, found.kinds)


def no_auto_push(proj: Project) -> str | None:
    """Why a commit here does not push to the team store by itself (`team.autoPush` off, or no post-commit
    hook to run the sync that pushes), or None when it does (or no team store is configured)."""
    from nexusmem.install import git_hooks

    if not proj.config["team"]["url"] and not os.environ.get(ENV_URL, "").strip():
        return None
    if not proj.config["team"]["autoPush"]:
        return "team.autoPush is off in .nexusmem/config.json"
    state = git_hooks.status("post-commit", proj.root)
    if state.installed or (state.framework and git_hooks.framework_runs("post-commit", proj.root)):
        return None
    return "no post-commit hook is installed here"


def waiting(proj: Project) -> int:
    """How many shareable nodes this memory holds that no push has sent (0 without a team store)."""
    found = settings(proj)
    if found is None:
        return 0
    with proj.open_store(readonly=True) as local:
        return _pending(local, found, _read_cursor(local, _cursor_key(found, proj)))


def auto_push(root: Path, log: Callable[[str], None]) -> None:
    """The post-commit `sync --auto`'s push (already detached from the commit): when a team store is
    configured with autoPush, push and log one line; any failure is logged, never raised."""
    from nexusmem import project

    try:
        proj = project.load(root)
        found = settings(proj)
        if found is None and _refused(proj):
            log(f"team push not done: {_refused(proj)}")
        if found is None or not found.auto_push:
            return
        report = push(proj)
        log(f"team push: {report.added:,} new, {report.updated:,} updated to {report.label}")
    except Exception as exc:
        log(f"team push not done: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}")


def query(
    proj: Project,
    text: str,
    *,
    budget: int,
    as_of: int | None = None,
    since: int | None = None,
    until: int | None = None,
    author: str | None = None,
) -> Any:
    """`query --team` / MCP scope "team": this memory fused with the team store (retrieve.team.search). A
    team store not configured or not answering within the connect timeout leaves the local answer with
    one note saying why, never an error."""
    from nexusmem.retrieve import rank
    from nexusmem.retrieve import team as team_query
    from nexusmem.store.team import is_driver_error, unanswered

    shared = None
    note = None
    try:
        shared = open_team(proj, require(proj), read=True)
    except NexusMemError as exc:
        note = f"team store not searched: {exc}"

    def search(team: TeamStore | None, why: str | None) -> Any:
        if team is not None and why is None:
            why = nothing_held_note(proj, team)
        with proj.open_store() as store:
            return team_query.search(
                store,
                team,
                text,
                project=proj.root.name,
                root=proj.root,
                budget=budget,
                as_of=as_of,
                since=since,
                until=until,
                settings=rank.settings_from(proj.config),
                team_note=why,
                author=author,
            )

    try:
        return search(shared, note)
    except Exception as exc:
        if shared is None or not is_driver_error(exc):
            raise
        # Connected, but the store did not answer in time (a lock held by a migration or a bulk build) or
        # the connection dropped: the local answer alone, as when the server cannot be reached.
        return search(None, f"team store not searched: {unanswered(exc, shared.conn)}")
    finally:
        if shared is not None:
            shared.close()
