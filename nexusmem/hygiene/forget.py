"""forget: delete every node containing a value, for good, and keep it from ever being stored again.

Four things happen on `forget --yes`, in this order:
1. a deny-list entry is recorded (this project's store; with --global also the user-wide list), so the
   sync loop's one gate (Matcher.filter, in nexusmem.sync) drops any node containing the value — from any
   source, including a `sync --rebuild` re-reading the append-only shell log;
2. every stored node whose title, body, ref or meta contains the value is deleted with SQLite's
   secure_delete on (FTS5 'secure-delete' is set on both full-text indexes by migration 4), its vectors,
   trigram rows, links and contradiction judgments with it, leaving a tombstone of ids and counts; what
   the store derives from text goes too (_clear_derived: change words, the import structure);
3. the hooks' shell log is rewritten without the lines containing it (unless --keep-log; without --global
   only the lines run in this project's folders: another project's are its own sync's, and this project's
   sync blanks its own new ones, hooklog.scoped), and so are the
   post-commit sync's log and failure mark (.nexusmem/auto-sync.log, auto-sync.failed: autosync.rewrite_lines),
   with --global every other registered project's too (_reach_others: those it cannot reach are named);
4. the database is purged: full-text indexes merged, VACUUM, WAL checkpointed and truncated; for a literal
   value the files are then read back to prove the bytes are gone (or to name the table still holding them);
5. the copies that hold it too are reached: each `scrub` backup (memory.db.pre-scrub-*.bak) gets the same
   deletion and purge, the bash hook's scratch files are zeroed (live shells) or deleted (exited ones), and
   a temp copy of the log left by a killed older forget is wiped. Nothing is followed through a symbolic
   link: a backup that is a link is skipped and reported, and a log that links out of ~/.nexusmem makes
   forget refuse before changing anything (hooklog.LogOutsideError says how to fix it).
"""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nexusmem import project as project_mod
from nexusmem.hygiene import hooklog
from nexusmem.hygiene.denylist import (
    DenyListError,
    DenyValueError,
    Entry,
    Matcher,
    active_entries,
    add_global,
    document,
    fixed_text,
    literal_from_bytes,
    load_global,
    make_literal,
    make_regex,
    node_fields,
    parse_document,
    read_document,
    recorded_values,
    remove_global,
    replace_global,
    stored_entries,
    write_private,
)
from nexusmem.sources.shell.logline import log_lock
from nexusmem.store import Store, open_store
from nexusmem.store.db import pre_upgrade_copies
from nexusmem.store.hygiene import TEXT_INDEXES
from nexusmem.text import identifiers

SAMPLE_TITLES = 5
# A literal value shorter than this is in countless words (`forget e --yes` deleted 5,248 of 5,248 nodes
# and its entry kept every later sync empty): refused without --force. A --regex says what it means.
MIN_VALUE_CHARS = 4
# A value matching more than this share of memory's nodes (and more than BROAD_NODES of them) is a slip, not
# a secret: `--yes` refuses it without --force (the dry run shows the count).
BROAD_SHARE = 0.25
BROAD_NODES = 50


@dataclass
class Removal:
    """What a forget/import did (or, in a dry run, would do)."""

    dry_run: bool
    entries_added: int = 0
    entries_known: int = 0
    removed: int = 0
    total: int = 0  # the nodes in memory, before
    kinds: dict[str, int] = field(default_factory=dict)
    titles: list[str] = field(default_factory=list)
    log_lines: int = 0
    log_kept: bool = False
    sync_log: int = 0  # lines of .nexusmem/auto-sync.log and auto-sync.failed that held it: taken out
    crash_log: int = 0  # lines of the crash log (~/.nexusmem/crash.log) that held it: taken out
    global_added: bool = False
    checkpointed: bool = True
    verified_absent: bool | None = None  # literal values only: the files were read back
    own_words: bool = False  # ...and held its bytes only as NexusMem's own words (a field name, the schema)
    words_cleared: int = 0  # commits whose change words held the value's pieces
    words_pending: bool = False  # a regex or imported entry: the next sync derives every commit's words again
    imports_cleared: bool = False  # the import structure named it: dropped, read again by the next sync
    # where the read-back found it ("memory.db: import_files")
    still_in: list[str] = field(default_factory=list)
    notes_cleared: int = 0  # nodes whose lent text (a changelog entry's, a thread's) held it
    pattern_kept: bool = False  # a regex entry stores its pattern in clear
    # A --regex with no regex syntax but escapes of literal characters (denylist.fixed_text): forgotten as the
    # literal value it spells, a keyed hash.
    pattern_as_value: bool = False
    backups: int = 0  # scrub backups that held it and were cleaned
    skipped_links: list[str] = field(default_factory=list)  # backups that are links: not followed
    # The copies upgrades kept of the old memory (memory.db.pre-vNN.bak), removed (in a dry run: would be):
    # only the release that wrote one could clean it, and it may hold the value.
    pre_upgrade: list[str] = field(default_factory=list)
    rekeyed: int = 0  # older (salted-hash) entries re-keyed with the user key
    # --global: other registered projects. Not opened here (each applies the user-wide list at its own
    # next sync), so they may still hold the value until then.
    others_pending: list[str] = field(default_factory=list)
    # --global: lines of the other registered projects' .nexusmem/auto-sync.log and auto-sync.failed that held
    # it (taken out, or in a dry run would be), and "ROOT: why" of each whose logs could not be reached.
    others_sync_log: int = 0
    others_sync_projects: int = 0  # how many of them held such lines
    others_unreached: list[str] = field(default_factory=list)
    # --import in a repository with no memory yet: the folder it set up (as `init` does) to record the entries
    # in before any sync ran ("" when there was one); in a dry run, the folder it would set up.
    set_up: str = ""
    # A team store is configured: its URL (no password), how many of the nodes deleted here are of the kinds
    # this member shares, and how many of those a push from here had sent (read from the push cursor: the
    # team store is not contacted). A forget without --team leaves those copies there.
    team_url: str = ""
    team_shared: int = 0
    team_pushed: int = 0

    def to_json(self) -> dict[str, Any]:
        return {
            "dry_run": self.dry_run,
            "entries_added": self.entries_added,
            "entries_known": self.entries_known,
            "removed": self.removed,
            "total": self.total,
            "kinds": self.kinds,
            "log_lines": self.log_lines,
            "log_kept": self.log_kept,
            "sync_log": self.sync_log,
            "crash_log": self.crash_log,
            "global_added": self.global_added,
            "checkpointed": self.checkpointed,
            "verified_absent": self.verified_absent,
            "own_words": self.own_words,
            "notes_cleared": self.notes_cleared,
            "words_cleared": self.words_cleared,
            "words_pending": self.words_pending,
            "imports_cleared": self.imports_cleared,
            "still_in": self.still_in,
            "pattern_kept": self.pattern_kept,
            "pattern_as_value": self.pattern_as_value,
            "backups": self.backups,
            "skipped_links": self.skipped_links,
            "pre_upgrade_removed": self.pre_upgrade,
            "rekeyed": self.rekeyed,
            "others_pending": self.others_pending,
            "others_sync_log": self.others_sync_log,
            "others_sync_projects": self.others_sync_projects,
            "others_unreached": self.others_unreached,
            "set_up": self.set_up,
            "team_copies": (
                {"url": self.team_url, "shared": self.team_shared, "pushed": self.team_pushed}
                if self.team_url
                else None
            ),
        }


def writer_lock(root: Path) -> contextlib.AbstractContextManager[float]:
    """This project's run lock (nexusmem.sync.exclusive), so forget waits for a running sync (a long
    `sync --rebuild` holds SQLite's write lock for minutes) instead of failing with "database is locked"."""
    from nexusmem.sync import DEFAULT_WAIT_SECONDS, exclusive

    return exclusive(root, DEFAULT_WAIT_SECONDS, _note, what="forget")


def _note(message: str) -> None:
    print(f"nexusmem: {message}", file=sys.stderr)


Row = tuple[int, str, str, str, Entry, str]


def _matches(store: Store, entries: Sequence[Entry]) -> list[Row]:
    """(seq, id, kind, title, first matching entry, group) of every stored node an entry matches."""
    matcher = Matcher(entries)
    found: list[Row] = []
    if not matcher:
        return found
    for seq, node_id, kind, title, ref, body, meta, _hash, grp in store.iter_texts():
        try:
            meta_value = json.loads(meta) if meta else {}
        except ValueError:
            meta_value = meta
        entry = matcher.which(node_fields(title, body, ref, meta_value, kind=str(kind)))
        if entry is not None:
            found.append((int(seq), str(node_id), str(kind), str(title), entry, str(grp or "")))
    return found


def value_words(value: str) -> list[str]:
    """The change words a literal VALUE would leave behind in a commit's words (lower-cased identifiers
    of three characters or more)."""
    return sorted({w.lower() for w in identifiers(value) if len(w) >= 3})


def _kinds(rows: Sequence[Row]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for _seq, _id, kind, _title, _entry, _grp in rows:
        counts[kind] = counts.get(kind, 0) + 1
    return dict(sorted(counts.items()))


def _delete(store: Store, rows: Sequence[Row], reason: str) -> int:
    """Delete ROWS for good and leave one tombstone per entry (call inside transaction())."""
    by_entry: dict[str, list[Row]] = {}
    for row in rows:
        by_entry.setdefault(row[4].key, []).append(row)
    for key, group in by_entry.items():
        store.add_tombstone(key, reason, _kinds(group), [r[1] for r in group])
    store.forget_judgments([r[1] for r in rows])
    return store.delete_for_good([r[0] for r in rows])


def _lent_holding(store: Store, entries: Sequence[Entry]) -> list[int]:
    """Seqs of the nodes whose notes (text lent by the node linking to them: a changelog entry, a GitHub
    thread) an entry matches. The lender is deleted with the value, but the copy it lent stays until the
    next sync re-lends: until then the value would still be searchable and on disk."""
    matcher = Matcher(entries)
    return [seq for seq, notes in store.lent_notes() if matcher.which([notes]) is not None] if matcher else []


def _clear_lent(store: Store, entries: Sequence[Entry]) -> int:
    """Empty the notes _lent_holding finds (call inside transaction()); return how many."""
    return store.clear_notes(_lent_holding(store, entries))


def _imports_hold(store: Store, matcher: Matcher) -> bool:
    """Whether a path or import specifier of the import structure (import_files, import_edges) holds a value
    MATCHER knows."""
    if not matcher:
        return False
    for text, is_path in store.import_texts():
        texts = [text]
        if not is_path:
            with contextlib.suppress(ValueError, RecursionError):  # the specifiers as parsed, unescaped
                texts += node_fields("", "", "", json.loads(text), kind="")
        if matcher.which(texts) is not None:
            return True
    return False


def _clear_derived(
    store: Store, matcher: Matcher, rows: Sequence[Row], word_tokens: Sequence[str], lowered: str = ""
) -> tuple[int, bool, bool]:
    """Clear what the stores derive from the nodes rather than hold in them, for MATCHER's entries whose nodes ROWS
    just went (call inside transaction()): (commits whose change words were emptied, whether the next sync
    derives every commit's words again, whether the import structure was dropped).

    Change words are cut from diffs and lower-cased: a literal's pieces (WORD_TOKENS, when the value is
    known) are looked for in them, and so is the value itself lower-cased (LOWERED), inside a longer word too
    (`def run_kelT8vqalong_name` leaves `run_kelt8vqalong_name`): whatever its case in the diff, such words
    are a copy of it, and the commit loses them (the node text keeps the case forget was asked for); a regex, or an imported entry (only a hash), cannot be matched against
    them reliably, so the words it matches as they are and those of the commits whose diffs it matched go
    now, and the next sync's git scan derives every commit's words again through the deny-list (as a
    user-wide entry's first sync does). The import structure's paths and specifiers are dropped whole when
    one holds the value: the next sync's structure pass reads every file again, through the deny-list too.
    """
    cleared = store.clear_words_with(word_tokens) if word_tokens else 0
    cleared += store.clear_words_holding(lowered)
    pending = False
    if not word_tokens and matcher:
        seqs = [seq for seq, words in store.word_texts() if matcher.which([words]) is not None]
        seqs += store.commit_seqs(sorted({r[5] for r in rows if r[2] == "code_diff" and r[5]}))
        cleared += store.clear_words(seqs)
        pending = bool(store.counts_by_kind().get("git_commit", 0))
    return cleared, pending, _derive_again(store, matcher, words=pending)


def _derive_again(store: Store, matcher: Matcher, *, words: bool = True) -> bool:
    """Have the next sync derive again, through the deny-list, what STORE derived from text MATCHER may hold
    (call inside transaction()): every commit's change words (WORDS), and the import structure when one of
    its paths or specifiers holds a value (dropped now: the structure pass reads every file again). Whether
    the import structure was dropped."""
    if words:
        store.clear_cursor("git")
        store.set_meta("backfill.changeWords", "forget")
    imports = _imports_hold(store, matcher)
    if imports:
        store.clear_imports()
    return imports


def _still_in(
    store: Store, files: Sequence[Path], entries: Sequence[Entry], needle: bytes, ignore_case: bool
) -> tuple[list[str], bool]:
    """Where the files of STORE still hold NEEDLE (the read-back): NAME: TABLE for each table holding it, or,
    when none does, what else can (free pages, a reader); [] when they do not. And whether its bytes are
    there only as NexusMem's own words.

    The nodes are read as the deny-list reads them (ENTRIES, the value's: node_fields), so the words written
    around what was recorded (a command's "(exit 1)", `"shell": "bash"`) are not a leftover, nor are those
    every store holds whatever was recorded (Store.own_words: the schema, a node's kind or provenance, meta's
    own keys: `"author":` in every commit's meta): `forget author` would always read back as "still in the
    database files"."""
    if not _file_holds(files, needle, ignore_case):
        return [], False
    name = store.path.name
    tables = store.tables_holding(needle, ignore_case)
    labels = False  # the nodes' texts hold it, only as NexusMem's words around what they record
    if store.node_texts_hold(needle, ignore_case):
        if _matches(store, entries):
            tables = ["nodes", *(t for t in tables if t != "nodes")]
        else:
            labels = True  # ...which the full-text indexes hold too
            tables = [t for t in tables if t not in TEXT_INDEXES]
    if tables:
        return [f"{name}: {table}" for table in tables], False
    if labels or not _file_holds(files, needle, ignore_case, store.own_words()):
        return [], True
    return [f"{name}: in no table (space a reader of the database kept from being reclaimed?)"], False


def _lowered_in(store: Store, value: str) -> list[str]:
    """The read-back of the copies STORE derives lower-cased (change words, the word indexes' terms): where
    VALUE lower-cased is still in them ("memory.db: nodes (change words, lower-cased)"); [] when nowhere.
    A byte comparison cannot see them: the read-back said "verified" while a commit's words held it."""
    labels = {"words": "nodes (change words, lower-cased)"}
    return [
        f"{store.path.name}: {labels.get(where, where + ' (a term holding it, lower-cased)')}"
        for where in store.lowered_copies(value.lower())
    ]


def _file_holds(files: Sequence[Path], needle: bytes, ignore_case: bool, own: Sequence[str] = ()) -> bool:
    """Whether one of FILES holds NEEDLE's bytes, looking past each occurrence of a text of OWN."""
    if not needle:
        return False
    probe = needle.lower() if ignore_case else needle
    texts = [t.encode("utf-8", "surrogatepass") for t in own]
    hiding = [t for t in (t.lower() if ignore_case else t for t in texts) if probe in t]
    for path in files:
        try:
            data = path.read_bytes()
        except OSError:
            continue
        data = data.lower() if ignore_case else data
        for text in sorted(hiding, key=len, reverse=True):  # a schema's SQL before a name inside it
            if probe not in data:
                break
            data = data.replace(text, b"\0" * len(text))
        if probe in data:
            return True
    return False


# ------------------------------------------------------------------------------------------- shell log


def scrub_log(entries: Sequence[Entry], *, dry_run: bool, only_in: Path | None = None) -> int:
    """Blank every line of the hooks' log that an entry matches (with ONLY_IN, the lines of the project at
    that root only: hooklog.project_lines); return how many (would) go.

    In place, under the log lock (nexusmem.hygiene.hooklog): each doomed line is overwritten with spaces of
    the same length, so a hook appending meanwhile loses nothing (the old copy-and-rename lost 58 lines in
    5 runs under load) and every project's byte offset stays right. The bash scratch files are zeroed
    (a live shell's) or deleted (an exited one's), and a killed older forget's temp copy of the log wiped.
    """
    matcher = Matcher(entries)
    if not matcher:
        return 0

    def doomed(raw: bytes) -> bytes | None:
        # A JSON line by the values it records, decoded (its field names, `cwd` or `pipestatus`, and its
        # `shell` are on every line: as the sync's log pass does); a line that is not JSON as text.
        try:
            texts = list(recorded_values(json.loads(raw)))
        except (ValueError, RecursionError):
            texts = [raw.decode("utf-8", "replace")]
        if matcher.which(texts) is None or (ours is not None and not ours(raw)):
            return None
        return b""

    ours = hooklog.project_lines(only_in) if only_in is not None else None
    log = hooklog.log_file()
    if not dry_run:
        hooklog.tidy_scratch(wipe_live=True)
    if log is None:
        return 0
    with log_lock(exclusive=True):
        done = hooklog.rewrite(log, 0, doomed, dry_run=dry_run)
    return done.dropped


# ------------------------------------------------------------------------------------------- commands


def _log_line_kept(matcher: Matcher, plaintext: tuple[bytes, bool] | None) -> Callable[[str], str | None]:
    """What a log rewrite (autosync.rewrite_lines) gives each line to: None for a line holding what MATCHER
    matches (a literal value, PLAINTEXT, in any case: an older release wrote the project id lower-cased)."""
    value = plaintext[0].decode("utf-8", "surrogatepass").lower() if plaintext is not None else ""

    def kept(line: str) -> str | None:
        if (value and value in line.lower()) or matcher.which([line]) is not None:
            return None
        return line

    return kept


def sync_log_lines(
    state: Path, matcher: Matcher, plaintext: tuple[bytes, bool] | None, *, dry_run: bool
) -> int:
    """Take the lines holding what MATCHER matches out of the post-commit sync's log and failure mark in
    STATE, the memory's .nexusmem/ (an older release wrote the project id there, lower-cased: a literal
    value is found there in any case); how many lines went (would go)."""
    from nexusmem import autosync  # forget's own step: the sync's gate (sync_gate) imports this module

    return autosync.rewrite_logs(
        state,
        _log_line_kept(matcher, plaintext),
        dry_run=dry_run,
        failure_note="(its error held a value `nexusmem forget` took out)",
    )


def crash_log_lines(matcher: Matcher, plaintext: tuple[bytes, bool] | None, *, dry_run: bool) -> int:
    """Take the lines holding what MATCHER matches out of the crash log (nexusmem.crashlog: an exception's
    message can quote the input it failed on), in place as the post-commit sync's log; how many went (would
    go)."""
    from nexusmem import autosync
    from nexusmem.crashlog import crash_log_path

    return autosync.rewrite_lines(crash_log_path(), _log_line_kept(matcher, plaintext), dry_run=dry_run)


def _apply(
    store: Store,
    entries: Sequence[Entry],
    report: Removal,
    *,
    reason: str,
    keep_log: bool,
    scope: str,
    root: Path | None = None,
    plaintext: tuple[bytes, bool] | None = None,
    word_tokens: Sequence[str] = (),
    force: bool = True,
    user_wide: bool = False,
    seen: Callable[[Sequence[Row]], None] | None = None,
) -> None:
    if not keep_log:
        hooklog.log_file()  # a log linking out of ~/.nexusmem: refuse before anything changes
    rows = _matches(store, entries)
    if seen is not None:
        seen(rows)  # before they go
    matcher = Matcher(entries)  # one for every step (its entries are the same objects either way)
    # The value as the store's lower-cased derivations (change words, index terms) would hold it.
    lowered = plaintext[0].decode("utf-8", "surrogatepass").lower() if plaintext is not None else ""
    report.removed = len(rows)
    report.total = store.node_count()
    if not report.dry_run and not force and too_broad(report):
        raise DenyListError(
            f"refused: the value matches {report.removed:,} of the {report.total:,} nodes in memory"
            f" ({report.removed / report.total:.0%}), and its deny-list entry would keep them out of every"
            " later sync: give more of the value, or add --force to forget them all"
        )
    report.kinds = _kinds(rows)
    report.titles = [r[3] for r in rows[:SAMPLE_TITLES]]
    report.log_kept = keep_log
    backups, report.skipped_links = _backups(store.path)
    old_copies = [kept for _version, kept in pre_upgrade_copies(store.path)]
    report.pre_upgrade = [kept.name for kept in old_copies]
    if report.dry_run:
        report.log_lines = 0 if keep_log else scrub_log(entries, dry_run=True, only_in=root)
        report.sync_log = sync_log_lines(store.path.parent, matcher, plaintext, dry_run=True)
        report.crash_log = crash_log_lines(matcher, plaintext, dry_run=True)
        report.notes_cleared = len(_lent_holding(store, entries))
        known = {e.key for e in stored_entries(store)}
        fresh = {e.key for e in entries if e.key not in known}
        report.entries_added, report.entries_known = len(fresh), len({e.key for e in entries}) - len(fresh)
        return
    with store.transaction():
        for entry in entries:
            if store.add_deny_entry(entry.key, entry.kind, entry.ignore_case, entry.spec, scope):
                report.entries_added += 1
            else:
                report.entries_known += 1
        _delete(store, rows, reason)
        report.notes_cleared = _clear_lent(store, entries)
        _clear_cursors(store, matcher.which)
        _clear_releases(store, matcher)
        # Change words are cut from diffs: the value's pieces may sit in a commit that never held it whole.
        # Such commits lose their words (not the commit: its own text is clean).
        report.words_cleared, report.words_pending, report.imports_cleared = _clear_derived(
            store, matcher, rows, word_tokens, lowered
        )
        store.add_audit(
            reason,
            {"entries": [e.key for e in entries], "removed": report.removed, "kinds": report.kinds},
        )
    if user_wide:
        # With the project's entry, before anything that can fail (the log, the purge, the backups): an
        # entry `forget --list` shows here but no other project's sync applies was what a failure left.
        for entry in entries:
            report.global_added = add_global(entry) or report.global_added
    report.rekeyed += rekey_seen(store, matcher)
    report.sync_log = sync_log_lines(store.path.parent, matcher, plaintext, dry_run=False)
    report.crash_log = crash_log_lines(matcher, plaintext, dry_run=False)
    if not keep_log:
        report.log_lines = scrub_log(entries, dry_run=False, only_in=root)
        if report.log_lines:
            with store.transaction():
                store.add_audit("scrub-log", {"entries": [e.key for e in entries], "lines": report.log_lines})
    report.checkpointed = store.purge(vacuum=True)
    for kept in old_copies:
        kept.unlink()
    checked = [(store, store.database_files())]
    with contextlib.ExitStack() as copies:
        for backup in backups:
            # An older one is upgraded without a copy of it kept: that copy would hold what goes here.
            copy = copies.enter_context(open_store(backup, keep_old=False))
            found = _matches(copy, entries)
            lent = _lent_holding(copy, entries)
            with copy.transaction():
                _delete(copy, found, reason)
                copy.clear_notes(lent)
                _clear_releases(copy, matcher)
                words, _pending, imports = _clear_derived(copy, matcher, found, word_tokens, lowered)
            if found or lent or words or imports:
                report.backups += 1
            copy.purge(vacuum=True)
            checked.append((copy, copy.database_files()))
        if plaintext is not None:
            needle, ignore_case = plaintext
            for holder, files in checked:
                where, own = _still_in(holder, files, entries, needle, ignore_case)
                where += [w for w in _lowered_in(holder, lowered) if w not in where]
                report.still_in += where
                report.own_words = report.own_words or own
            report.verified_absent = not report.still_in


def too_broad(report: Removal) -> bool:
    """Whether REPORT's value matches so much of memory (BROAD_SHARE) that it is likely a slip."""
    return report.removed > max(BROAD_NODES, BROAD_SHARE * report.total)


def _clear_releases(store: Store, matcher: Matcher) -> int:
    """Take the version tags named after the value (`zorblax-2.0.0`) out of STORE's list; the next sync's read
    of the tags leaves them out too (sync._read_releases). How many went."""
    return store.delete_releases([n for n in store.release_names() if matcher.which([n]) is not None])


def _clear_cursors(store: Store, holds: Callable[[list[str]], object]) -> None:
    """Forget where each source got to whose cursor HOLDS a value (an older release kept doc paths in the
    docs cursor as they were, a folder named after a token included): its next sync reads it again."""
    for source in store.sources():
        if source["cursor"] and holds([source["cursor"]]):
            store.clear_cursor(source["name"])


def _backups(db: Path) -> tuple[list[Path], list[str]]:
    """The scrub backups next to DB (regular files), and the names of those that are links (not followed)."""
    found: list[Path] = []
    links: list[str] = []
    for path in sorted(db.parent.glob(f"{db.name}.pre-scrub-*.bak")):
        if path.is_symlink():
            links.append(path.name)
        elif path.is_file():
            found.append(path)
    return found, links


def rekey_seen(store: Store, matcher: Matcher) -> int:
    """Re-key the older (salted-hash) entries whose value a match just revealed; how many.

    The matched bytes are the value, so a new keyed entry can be made from them; it replaces the old one in
    this store and, when it is there, in the user-wide list. The value is not kept anywhere else.
    """
    done = 0
    for entry in matcher.entries:
        if entry.kind != "literal" or entry.keyed or entry.seen is None:
            continue
        fresh = literal_from_bytes(entry.seen, entry.ignore_case)
        entry.seen = None
        with store.transaction():
            store.remove_deny_entry(entry.key)
            store.add_deny_entry(fresh.key, fresh.kind, fresh.ignore_case, fresh.spec, entry.scope)
            store.add_audit("rekey", {"entries": [entry.key], "now": fresh.key})
        replace_global(entry.key, fresh)
        done += 1
    return done


def remove_entry(start: Any, ident: str) -> list[Entry]:
    """Take the entry IDENT (a key prefix of 6+ characters as `--list` shows, the forgotten value itself, or
    a regex's pattern) off this project's deny-list and the user-wide one. Returns what was removed.

    Other projects keep the copy a user-wide entry left in their own store: remove it there too.
    """
    project = project_mod.load(start)
    with writer_lock(project.root), project.open_store() as store:
        entries = [*stored_entries(store), *load_global()]
        chosen: dict[str, Entry] = {}
        for e in entries:
            by_key = len(ident) >= 6 and e.key.startswith(ident)
            by_pattern = e.kind == "regex" and e.spec.get("pattern") == ident
            by_value = e.kind == "literal" and (
                e.is_value(ident) or (e.ignore_case and e.is_value(ident.casefold()))
            )
            if by_key or by_pattern or by_value:
                chosen.setdefault(e.key, e)
        if not chosen:
            raise DenyListError(f"no deny-list entry matches {ident!r} (see `nexusmem forget --list`)")
        if len({k for k in chosen}) > 1 and not any(e.is_value(ident) for e in chosen.values()):
            keys = ", ".join(k[:12] for k in chosen)
            raise DenyListError(f"{ident!r} matches {len(chosen)} entries ({keys}): give more of the key")
        with store.transaction():
            for key in chosen:
                store.remove_deny_entry(key)
            store.add_audit("remove-entry", {"entries": list(chosen)})
    for key in chosen:
        remove_global(key)
    return list(chosen.values())


def forget(
    start: Path | str | None,
    value: str,
    *,
    regex: bool = False,
    ignore_case: bool = False,
    dry_run: bool = True,
    keep_log: bool = False,
    user_wide: bool = False,
    force: bool = False,
) -> Removal:
    """Forget VALUE (a literal, or a regular expression with REGEX) in the project at START.

    DRY_RUN (the default) changes nothing and reports what would go. USER_WIDE also writes the entry to
    the user-wide deny-list that every project's sync honours. Without FORCE, a literal shorter than
    MIN_VALUE_CHARS is refused, and so is deleting what matches more than BROAD_SHARE of memory (too_broad).
    A REGEX with no regex syntax at all (denylist.fixed_text: a pasted secret) is forgotten as the literal
    value, kept as a keyed hash rather than as written (REPORT.pattern_as_value); so is one whose only regex
    syntax is escapes of literal characters (`lib\\.gamma\\.example` is the value `lib.gamma.example`).
    """
    spelled = fixed_text(value) if regex else None
    as_value = spelled is not None
    value = spelled if spelled is not None else value
    if not regex and not force and 0 < len(value.strip()) < MIN_VALUE_CHARS:
        raise DenyValueError(
            f"the value to forget is {len(value.strip())} character(s): one shorter than {MIN_VALUE_CHARS}"
            " is inside countless words and would empty memory. Give more of it, or add --force"
        )
    regex = regex and not as_value
    entry = make_regex(value, ignore_case) if regex else make_literal(value, ignore_case)
    project = project_mod.load(start)
    report = Removal(dry_run=dry_run, pattern_kept=regex, pattern_as_value=as_value)
    with writer_lock(project.root), project.open_store() as store:
        for known in [*stored_entries(store), *load_global()]:
            if known.key == entry.key or (known.is_value(value) and known.ignore_case == ignore_case):
                if known.kind == "literal" and not known.keyed and not dry_run:
                    # An older salted-hash entry for the same value: replace it with the keyed one.
                    with store.transaction():
                        store.remove_deny_entry(known.key)
                    replace_global(known.key, entry)
                    report.rekeyed += 1
                    break
                entry = known  # the same value again: keep one entry (a literal's salt differs every time)
                break
        plaintext = None if regex else (value.encode("utf-8", "surrogatepass"), ignore_case)

        def team_copies(rows: Sequence[Row]) -> None:
            _team_copies(project, store, rows, report)

        _apply(
            store,
            [entry],
            report,
            reason="forget",
            keep_log=keep_log,
            scope="global" if user_wide else "project",
            root=None if user_wide else project.root,
            plaintext=plaintext,
            word_tokens=[] if regex else value_words(value),
            force=force,
            user_wide=user_wide,
            seen=team_copies,
        )
    if user_wide:
        _reach_others(report, project.root, [entry], plaintext)
    return report


def _team_copies(project: project_mod.Project, store: Store, rows: Sequence[Row], report: Removal) -> None:
    """REPORT's team_* fields: which of ROWS (about to be deleted here) a push from this memory had sent to the
    team store, where a forget without --team leaves them (nexusmem.team.copies_left: no connection made)."""
    if not rows:
        return
    from nexusmem import team  # only here: sync imports this module for its gate (sync_gate)

    copies = team.copies_left(project, store, [r[0] for r in rows])
    if copies is not None:
        report.team_url, report.team_shared, report.team_pushed = copies.label, copies.shared, copies.pushed


def _reach_others(
    report: Removal, root: Path, entries: Sequence[Entry], plaintext: tuple[bytes, bool] | None
) -> None:
    """A user-wide forget's reach into the other registered projects (ROOT's own is done): their post-commit
    sync logs lose the lines holding the value now (REPORT.others_sync_log; those whose logs cannot be reached
    are named), and their stores apply the entry at their next sync (REPORT.others_pending, unless a dry
    run)."""
    from nexusmem import autosync, paths

    others = _other_projects(root)
    if not report.dry_run:
        report.others_pending = others
    matcher = Matcher(entries)
    for other in others:
        state = paths.state_dir(Path(other))
        why = autosync.logs_unreachable(state)
        if why is None:
            try:
                lines = sync_log_lines(state, matcher, plaintext, dry_run=report.dry_run)
            except OSError as exc:  # a disk that fails the write: said, the other projects still cleaned
                why = f"{exc.strerror or exc}"
            else:
                report.others_sync_log += lines
                report.others_sync_projects += 1 if lines else 0
        if why is not None:
            report.others_unreached.append(f"{other}: {why}")


def _other_projects(root: Path) -> list[str]:
    """Roots of the registered projects other than ROOT: the ones a user-wide entry reaches only at their
    next sync."""
    from nexusmem import registry

    here = root.resolve()
    return [str(p["root"]) for p in registry.load() if Path(str(p["root"])).resolve() != here]


def adopt_entry(start: Path | str | None, value: str, shared: Entry) -> int:
    """Put SHARED, the team's entry for the literal VALUE (keyed with the team's shared key), in place of this
    project's entries for the same value keyed otherwise (the user's key: this forget's own), here and in the
    user-wide list, keeping their scope; how many it replaced. Each new literal entry has its own salt, so
    its own key: without this, the push that applies the team's deny-list recorded SHARED beside them, two
    entries for one value. It matches what they matched (the value), and its key is in the user's key file."""
    if shared.kind != "literal":
        return 0  # a regex entry's key is its pattern's: the team's is this memory's already

    def twin(e: Entry) -> bool:
        return (
            e.key != shared.key
            and e.kind == "literal"
            and e.ignore_case == shared.ignore_case
            and (e.is_value(value))
        )

    project = project_mod.load(start)
    with writer_lock(project.root), project.open_store() as store:
        twins = [e for e in stored_entries(store) if twin(e)]
        if twins:
            scope = "global" if any(e.scope == "global" for e in twins) else "project"
            with store.transaction():
                for e in twins:
                    store.remove_deny_entry(e.key)
                store.add_deny_entry(shared.key, shared.kind, shared.ignore_case, shared.spec, scope)
                store.add_audit("team-entry", {"entries": [e.key for e in twins], "now": shared.key})
    user = load_global()
    held = any(e.key == shared.key for e in user)
    for e in (e for e in user if twin(e)):
        if held:
            remove_global(e.key)
        else:
            held = replace_global(e.key, shared)
    return len(twins)


def list_entries(start: Path | str | None) -> list[Entry]:
    """This project's entries (user-wide copies included) and the user-wide ones not yet applied here."""
    project = project_mod.load(start)
    with project.open_store(readonly=True) as store:
        local = stored_entries(store)
    keys = {e.key for e in local}
    return local + [e for e in load_global() if e.key not in keys]


def export_entries(start: Path | str | None, target: Path) -> int:
    """Write every active entry to TARGET (JSON, mode 0600); return how many. TARGET is a file's name: a
    folder, or anything but a regular file (a FIFO, a device), is refused, never replaced."""
    if target.is_dir():
        raise DenyListError(
            f"{target} is a folder: give the export file's name (e.g. {target / 'deny-list.json'})"
        )
    if (target.exists() or target.is_symlink()) and not target.is_file():
        raise DenyListError(f"{target} is not a regular file: give another name for the export")
    entries = list_entries(start)
    write_private(target, document(entries, with_keys=True))
    return len(entries)


def import_entries(
    start: Path | str | None,
    source: Path,
    *,
    dry_run: bool = True,
    keep_log: bool = False,
    user_wide: bool = False,
) -> Removal:
    """Add the entries of an export to this project (USER_WIDE: to the user-wide list too) and delete the
    copies that already synced back in.

    A repository with no memory yet (a fresh clone, the case the export is for) gets one set up first, as
    `init` makes it (private folder and files, registered), so that its first sync already leaves out what
    the entries match: refusing until a `nexusmem sync` had run made that sync store the values first.
    A dry run sets nothing up (REPORT.set_up names the folder it would make)."""
    try:
        raw = read_document(source)
    except FileNotFoundError:
        raise DenyListError(f"{source}: cannot read: no such file") from None
    entries = parse_document(raw, source)
    project = project_mod.load(start, require_init=False)
    report = Removal(dry_run=dry_run, pattern_kept=any(e.kind == "regex" for e in entries))
    if not project_mod.is_initialised(project.root):
        _refuse_unmakeable(project.root)
        report.set_up = str(project.state_dir)
        if dry_run:
            report.entries_added = len({e.key for e in entries})
            report.log_lines = (
                0
                if keep_log
                else scrub_log(entries, dry_run=True, only_in=None if user_wide else project.root)
            )
            report.crash_log = crash_log_lines(Matcher(entries), None, dry_run=True)
            if user_wide:
                _reach_others(report, project.root, entries, None)
            return report
        project, _made = project_mod.init(project.root)
    with writer_lock(project.root), project.open_store() as store:
        _apply(
            store,
            entries,
            report,
            reason="import",
            keep_log=keep_log,
            scope="global" if user_wide else "project",
            root=None if user_wide else project.root,
            user_wide=user_wide,
        )
    if user_wide:
        _reach_others(report, project.root, entries, None)
    return report


def _refuse_unmakeable(root: Path) -> None:
    """Raise what `load` raises for ROOT, which has no memory, when none can be set up there now: a stash
    entry holds it, or something is in the place of .nexusmem/ (project.no_memory_error says which)."""
    from nexusmem import paths

    if paths.stashed_unless_building(root) is not None or paths.state_in_the_way(paths.state_dir(root)):
        raise project_mod.no_memory_error(root)


def sync_gate(store: Store, log: Callable[[str], None] | None = None) -> Matcher:
    """What the sync loop filters with: this project's entries plus the user-wide ones.

    A user-wide entry this store has not seen yet is applied first (recorded here, matching nodes deleted
    for good), so `forget --global` reaches every project at its next sync.
    """
    local, user = active_entries(store)
    broken = [e for e in [*local, *user] if e.problem]
    if broken:
        # Refused up front, not at the first node it meets: an entry that cannot run must not let its
        # value back in, nor fail a sync only on the day that value turns up.
        e = broken[0]
        raise DenyListError(
            f"deny-list entry {e.key[:12]} cannot be used: {e.problem}. Remove it with"
            f" `nexusmem forget --remove-entry {e.key[:12]}` (and forget the value again if it still matters)"
        )
    known = {e.key for e in local}
    fresh = [e for e in user if e.key not in known]
    imports = False
    if fresh:
        rows = _matches(store, fresh)
        rekey_seen(store, Matcher(fresh))
        with store.transaction():
            for entry in fresh:
                store.add_deny_entry(entry.key, entry.kind, entry.ignore_case, entry.spec, "global")
            _delete(store, rows, "global")
            store.add_audit("global", {"entries": [e.key for e in fresh], "removed": len(rows)})
            # Only the entries' hashes are here, not the values: change words (cut from diffs, lower-cased)
            # cannot be matched, so this sync's git scan derives them all again through the gate.
            imports = _derive_again(store, Matcher(fresh))
        if rows or imports:
            store.purge(vacuum=True)
            if log and rows:
                log(f"forget: {len(rows)} node(s) removed by {len(fresh)} new user-wide deny-list entr(ies)")
    return Matcher([*local, *user])


def apply_entries(store: Store, entries: Sequence[Entry], *, reason: str) -> Removal:
    """Record ENTRIES (from elsewhere: the team's deny-list) in this store and forget what they match as a
    local forget does, by the same steps: the nodes, what is derived from them, the lines of the hooks' log
    (every project's: it is this user's) and scrub backups. From then on the sync gate (stored_entries)
    keeps their values out. Only the value's keyed digest is known here: change words are derived again by
    the next sync, and nothing is read back."""
    report = Removal(dry_run=False)
    _apply(store, entries, report, reason=reason, keep_log=False, scope="project")
    return report
