"""Numbered, append-only schema migrations. Each runs in a transaction together with its record.

Never edit a released migration: add the next number. tests/test_migrations.py builds a database at every
earlier version and migrates it forward.
"""

from __future__ import annotations

import time

TYPE_CHECKING = (
    False  # typing.TYPE_CHECKING without importing typing: the commit hook reads LATEST (hookreads)
)
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    Migration = tuple[int, str, Callable[[Any], None]]


def execute_script(conn: Any, script: str) -> None:
    """Run several statements inside the caller's transaction (executescript() would COMMIT it)."""
    import sqlean

    buf = ""
    for line in script.splitlines(keepends=True):
        buf += line
        if sqlean.complete_statement(buf):
            if buf.strip():
                conn.execute(buf)
            buf = ""
    if buf.strip():
        conn.execute(buf)


def _m1_initial(conn: Any) -> None:
    execute_script(
        conn,
        """
        CREATE TABLE nodes(
          seq INTEGER PRIMARY KEY,          -- stable rowid for the FTS external content (survives VACUUM)
          id TEXT NOT NULL UNIQUE,          -- sha256(project, kind, natural key)[:24]
          project_id TEXT NOT NULL,
          kind TEXT NOT NULL,
          source TEXT NOT NULL,
          natural_key TEXT NOT NULL,
          ref TEXT NOT NULL,
          title TEXT NOT NULL,
          body TEXT NOT NULL,
          ts INTEGER NOT NULL,              -- when the event happened (epoch ms)
          created_at INTEGER NOT NULL,      -- when this store first recorded it (epoch ms); --as-of reads this
          updated_at INTEGER NOT NULL,
          signal REAL NOT NULL,
          provenance TEXT NOT NULL,
          trust TEXT NOT NULL DEFAULT 'candidate' CHECK (trust IN ('candidate', 'verified', 'rejected')),
          superseded_by TEXT,               -- id of the node that replaces this one (mark-stale)
          grp TEXT,                         -- sibling group: chunks of one file, diffs of one commit
          content_hash TEXT NOT NULL,
          meta TEXT NOT NULL DEFAULT '{}'
        );
        CREATE INDEX nodes_source_key ON nodes(source, natural_key);
        CREATE INDEX nodes_kind_ts ON nodes(kind, ts);
        CREATE INDEX nodes_created ON nodes(created_at);

        CREATE TABLE node_files(
          path TEXT NOT NULL,
          node_seq INTEGER NOT NULL REFERENCES nodes(seq) ON DELETE CASCADE,
          PRIMARY KEY (path, node_seq)
        ) WITHOUT ROWID;
        CREATE INDEX node_files_seq ON node_files(node_seq);

        -- failure -> fix and other relations between nodes; relation says which heuristic found it
        CREATE TABLE links(
          from_id TEXT NOT NULL,
          to_id TEXT NOT NULL,
          relation TEXT NOT NULL,
          created_at INTEGER NOT NULL,
          PRIMARY KEY (from_id, to_id, relation)
        ) WITHOUT ROWID;
        CREATE INDEX links_to ON links(to_id);

        CREATE TABLE sources(
          name TEXT PRIMARY KEY,
          cursor TEXT,
          last_sync INTEGER,
          added INTEGER NOT NULL DEFAULT 0,
          updated INTEGER NOT NULL DEFAULT 0,
          removed INTEGER NOT NULL DEFAULT 0,
          skipped INTEGER NOT NULL DEFAULT 0
        );

        CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);

        CREATE VIRTUAL TABLE nodes_fts USING fts5(
          title, body, content='nodes', content_rowid='seq', tokenize='unicode61 remove_diacritics 2'
        );
        -- No AFTER INSERT trigger: a virtual-table insert inside a trigger costs ~45 µs a row (a savepoint
        -- per row); Store.upsert indexes each batch with one INSERT ... SELECT instead (8x faster).
        CREATE TRIGGER nodes_fts_ad AFTER DELETE ON nodes BEGIN
          INSERT INTO nodes_fts(nodes_fts, rowid, title, body) VALUES ('delete', old.seq, old.title, old.body);
        END;
        CREATE TRIGGER nodes_fts_au AFTER UPDATE OF title, body ON nodes BEGIN
          INSERT INTO nodes_fts(nodes_fts, rowid, title, body) VALUES ('delete', old.seq, old.title, old.body);
          INSERT INTO nodes_fts(rowid, title, body) VALUES (new.seq, new.title, new.body);
        END;
        """,
    )


def _m2_vocabulary(conn: Any) -> None:
    # Document frequency per term, so a query can leave out words that match a large part of the corpus.
    conn.execute("CREATE VIRTUAL TABLE nodes_vocab USING fts5vocab(nodes_fts, 'row')")
    # MAX(ts) is every query's reference time: an index makes it O(log n) instead of a scan.
    conn.execute("CREATE INDEX nodes_ts ON nodes(ts)")


def _m3_vectors_and_cjk(conn: Any) -> None:
    # Which content each node's vector was made from (the vec0 table itself is created lazily by the store
    # once the provider's dimension is known: see store/vectors.py). Vectors follow their node out.
    conn.execute(
        "CREATE TABLE node_vectors(seq INTEGER PRIMARY KEY REFERENCES nodes(seq) ON DELETE CASCADE,"
        " content_hash TEXT NOT NULL)"
    )
    # Trigram index over CJK-bearing nodes only (store/cjk.py), filled from what is already stored. The
    # pattern is spelled out (not imported) so this migration never changes after release.
    cjk_glob = "*[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\uff66-\uff9f]*"
    conn.execute("CREATE VIRTUAL TABLE nodes_cjk USING fts5(title, body, tokenize='trigram')")
    conn.execute(
        "INSERT INTO nodes_cjk(rowid, title, body) SELECT seq, title, body FROM nodes"
        " WHERE title GLOB ? OR body GLOB ?",
        (cjk_glob, cjk_glob),
    )


def _m4_hygiene(conn: Any) -> None:
    execute_script(
        conn,
        """
        -- forget: what sync must never store again. spec is JSON: a literal keeps salted hashes of the value
        -- and of its half-length pieces (never the value); a regex keeps its pattern (nothing else matches).
        CREATE TABLE deny_list(
          id INTEGER PRIMARY KEY,
          key TEXT NOT NULL UNIQUE,
          kind TEXT NOT NULL CHECK (kind IN ('literal', 'regex')),
          ignore_case INTEGER NOT NULL DEFAULT 0,
          spec TEXT NOT NULL,
          scope TEXT NOT NULL DEFAULT 'project' CHECK (scope IN ('project', 'global')),
          created_at INTEGER NOT NULL
        );
        -- one row per removal: node ids (hashes) and counts by kind, never the content
        CREATE TABLE tombstones(
          id INTEGER PRIMARY KEY,
          at INTEGER NOT NULL,
          entry_key TEXT,
          reason TEXT NOT NULL,
          removed INTEGER NOT NULL,
          kinds TEXT NOT NULL,
          node_ids TEXT NOT NULL
        );
        CREATE TABLE hygiene_audit(id INTEGER PRIMARY KEY, at INTEGER NOT NULL, action TEXT NOT NULL, detail TEXT NOT NULL);
        -- a local model's judgment of one (older, newer) pair, keyed by both contents: never asked twice
        CREATE TABLE contradiction_checks(
          old_hash TEXT NOT NULL,
          new_hash TEXT NOT NULL,
          old_id TEXT NOT NULL,
          new_id TEXT NOT NULL,
          contradicts INTEGER NOT NULL,
          reason TEXT NOT NULL,
          model TEXT NOT NULL,
          checked_at INTEGER NOT NULL,
          PRIMARY KEY (old_hash, new_hash)
        ) WITHOUT ROWID;
        CREATE INDEX contradiction_checks_old ON contradiction_checks(old_id);
        CREATE INDEX contradiction_checks_new ON contradiction_checks(new_id);
        -- FTS5 (SQLite >= 3.42) then removes a deleted row's entries from the index itself, not only marks them
        INSERT INTO nodes_fts(nodes_fts, rank) VALUES ('secure-delete', 1);
        INSERT INTO nodes_cjk(nodes_cjk, rank) VALUES ('secure-delete', 1);
        """,
    )


def _m5_updated_index(conn: Any) -> None:
    # "Has anything changed since?" (the embedding pass, incremental failure linking) becomes O(log n).
    conn.execute("CREATE INDEX IF NOT EXISTS nodes_updated ON nodes(updated_at)")


def _m6_write_sequence(conn: Any) -> None:
    # "What was written since?" by a counter instead of the clock: a wall-clock millisecond is shared by
    # everything written within it, so a watermark on it must either re-read or miss the writes of its own
    # millisecond. `written` is the store write sequence (meta 'store.write_seq') of a node's last insert or
    # change; every existing node counts as written before the first numbered write.
    conn.execute("ALTER TABLE nodes ADD COLUMN written INTEGER NOT NULL DEFAULT 0")
    conn.execute("CREATE INDEX nodes_written ON nodes(written)")


def _m7_words_and_stems(conn: Any) -> None:
    # Two more indexed columns on every node, both low-weight in BM25 and never shown: `words` (a commit's
    # change words, made by its source) and `notes` (text other nodes lend it: the changelog entries that
    # describe a commit). FTS5 cannot add a column, so the word index is rebuilt with four, and a second
    # one with the porter stemmer joins it ("crashed" finds "crash"; the exact index keeps exact matches
    # ahead). The tables and the stemmer are spelled out here so this migration never changes after release.
    conn.execute("ALTER TABLE nodes ADD COLUMN words TEXT NOT NULL DEFAULT ''")
    conn.execute("ALTER TABLE nodes ADD COLUMN notes TEXT NOT NULL DEFAULT ''")
    execute_script(
        conn,
        """
        DROP TRIGGER nodes_fts_ad;
        DROP TRIGGER nodes_fts_au;
        DROP TABLE nodes_vocab;
        DROP TABLE nodes_fts;
        CREATE VIRTUAL TABLE nodes_fts USING fts5(
          title, body, words, notes, content='nodes', content_rowid='seq', tokenize='unicode61 remove_diacritics 2'
        );
        -- Change words are identifiers and code_diff bodies are code: stemming them would double the index
        -- cost of the biggest texts for no matches, so the stemmed index holds prose only.
        CREATE VIRTUAL TABLE nodes_stem USING fts5(
          title, body, notes, content='nodes', content_rowid='seq', tokenize='porter unicode61 remove_diacritics 2'
        );
        INSERT INTO nodes_fts(nodes_fts, rank) VALUES ('secure-delete', 1);
        INSERT INTO nodes_stem(nodes_stem, rank) VALUES ('secure-delete', 1);
        CREATE TRIGGER nodes_fts_ad AFTER DELETE ON nodes BEGIN
          INSERT INTO nodes_fts(nodes_fts, rowid, title, body, words, notes)
            VALUES ('delete', old.seq, old.title, old.body, old.words, old.notes);
          INSERT INTO nodes_stem(nodes_stem, rowid, title, body, notes)
            SELECT 'delete', old.seq, old.title, old.body, old.notes WHERE old.kind != 'code_diff';
        END;
        CREATE TRIGGER nodes_fts_au AFTER UPDATE OF title, body, words, notes ON nodes BEGIN
          INSERT INTO nodes_fts(nodes_fts, rowid, title, body, words, notes)
            VALUES ('delete', old.seq, old.title, old.body, old.words, old.notes);
          INSERT INTO nodes_fts(rowid, title, body, words, notes) VALUES (new.seq, new.title, new.body, new.words, new.notes);
          INSERT INTO nodes_stem(nodes_stem, rowid, title, body, notes)
            SELECT 'delete', old.seq, old.title, old.body, old.notes WHERE old.kind != 'code_diff';
          INSERT INTO nodes_stem(rowid, title, body, notes)
            SELECT new.seq, new.title, new.body, new.notes WHERE new.kind != 'code_diff';
        END;
        INSERT INTO nodes_fts(nodes_fts) VALUES ('rebuild');
        INSERT INTO nodes_stem(rowid, title, body, notes) SELECT seq, title, body, notes FROM nodes
          WHERE kind != 'code_diff';
        CREATE VIRTUAL TABLE nodes_vocab USING fts5vocab(nodes_fts, 'row');
        """,
    )
    # Existing commits have no change words yet: the git source walks the whole history again on the next
    # sync (ids and first-recorded times stay; only the words are added) and says so.
    conn.execute("UPDATE sources SET cursor = NULL WHERE name = 'git'")
    conn.execute(
        "INSERT INTO meta(key, value) SELECT 'backfill.changeWords', '1'"
        " WHERE EXISTS (SELECT 1 FROM nodes WHERE kind = 'git_commit')"
        " ON CONFLICT(key) DO UPDATE SET value = excluded.value"
    )


def _m8_notes_index(conn: Any) -> None:
    # Every sync asks which nodes hold lent notes (to clear those no longer linked). Without an index that
    # visited every commit's row: 25-50 ms of each no-op re-sync on a 10k-commit history. The index holds
    # only the few nodes with notes.
    conn.execute("CREATE INDEX nodes_with_notes ON nodes(kind) WHERE notes != ''")


def _m9_import_structure(conn: Any) -> None:
    execute_script(
        conn,
        """
        -- The structure pass: each tracked source file's import specifiers (JSON), keyed by its blob so an
        -- unchanged file is never parsed again, and the file -> file edges resolved from them.
        CREATE TABLE import_files(path TEXT PRIMARY KEY, blob TEXT NOT NULL, specs TEXT NOT NULL) WITHOUT ROWID;
        CREATE TABLE import_edges(src TEXT NOT NULL, dst TEXT NOT NULL, PRIMARY KEY (src, dst)) WITHOUT ROWID;
        -- precheck asks "who imports this staged file?"
        CREATE INDEX import_edges_dst ON import_edges(dst);
        """,
    )


def _m10_defined_words(conn: Any) -> None:
    # Change words now put the names a commit defines first (a big change's new function used to fall past
    # the 300-word cap): the next sync derives every commit's words again, as migration 7 did, and says so.
    conn.execute("UPDATE sources SET cursor = NULL WHERE name = 'git'")
    conn.execute(
        "INSERT INTO meta(key, value) SELECT 'backfill.changeWords', 'defined'"
        " WHERE EXISTS (SELECT 1 FROM nodes WHERE kind = 'git_commit')"
        " ON CONFLICT(key) DO UPDATE SET value = excluded.value"
    )


def _m11_releases(conn: Any) -> None:
    # The repository's version tags, read by the sync: a question that names a release asks about the
    # changes around it. Filled by the next sync (nothing else is read again).
    execute_script(
        conn,
        """
        CREATE TABLE releases(name TEXT PRIMARY KEY, version TEXT NOT NULL, sha TEXT NOT NULL, ts INTEGER NOT NULL)
          WITHOUT ROWID;
        """,
    )


def _m12_commit_generations(conn: Any) -> None:
    # "The first commit that holds X" is the first in the graph, not the oldest author date (a rebased
    # branch keeps its old dates). The commits already stored are numbered from their recorded parents.
    from nexusmem.store import generations

    execute_script(
        conn,
        """
        CREATE TABLE commit_generations(sha TEXT PRIMARY KEY, gen INTEGER NOT NULL) WITHOUT ROWID;
        """,
    )
    generations.fill(conn)


# The body of the update trigger since migration 13: a node's old text leaves both word indexes and its new
# text enters them (the stemmed one holds prose only: no diff, no shell command).
_PROSE_STEMS_UPDATE = """
          INSERT INTO nodes_fts(nodes_fts, rowid, title, body, words, notes)
            VALUES ('delete', old.seq, old.title, old.body, old.words, old.notes);
          INSERT INTO nodes_fts(rowid, title, body, words, notes) VALUES (new.seq, new.title, new.body, new.words, new.notes);
          INSERT INTO nodes_stem(nodes_stem, rowid, title, body, notes)
            SELECT 'delete', old.seq, old.title, old.body, old.notes
            WHERE old.kind NOT IN ('code_diff', 'shell_command');
          INSERT INTO nodes_stem(rowid, title, body, notes)
            SELECT new.seq, new.title, new.body, new.notes WHERE new.kind NOT IN ('code_diff', 'shell_command');
        END;
"""


def _m13_prose_stems(conn: Any) -> None:
    # Shell commands leave the stemmed index as diffs did (migration 7): a command line is not prose, and
    # once every question word goes to the stemmed index its common words walked the commands there too
    # (~90% of a store that records a shell log). The index is emptied and the prose put back (FTS5's
    # 'delete-all', then one insert: 0.13 s at 102,778 nodes, where deleting 92,112 commands one by one
    # took 19.6 s).
    execute_script(
        conn,
        """
        DROP TRIGGER nodes_fts_ad;
        DROP TRIGGER nodes_fts_au;
        CREATE TRIGGER nodes_fts_ad AFTER DELETE ON nodes BEGIN
          INSERT INTO nodes_fts(nodes_fts, rowid, title, body, words, notes)
            VALUES ('delete', old.seq, old.title, old.body, old.words, old.notes);
          INSERT INTO nodes_stem(nodes_stem, rowid, title, body, notes)
            SELECT 'delete', old.seq, old.title, old.body, old.notes
            WHERE old.kind NOT IN ('code_diff', 'shell_command');
        END;
        CREATE TRIGGER nodes_fts_au AFTER UPDATE OF title, body, words, notes ON nodes BEGIN
        """
        + _PROSE_STEMS_UPDATE
        + """
        INSERT INTO nodes_stem(nodes_stem) VALUES ('delete-all');
        INSERT INTO nodes_stem(rowid, title, body, notes) SELECT seq, title, body, notes FROM nodes
          WHERE kind NOT IN ('code_diff', 'shell_command');
        """,
    )


def _m14_build_dirs_are_source(conn: Any) -> None:
    # A directory named build is source now, not generated output (config._FORMER_DIFF_SKIP says why): the
    # commits that changed files in one get their change words, and the newest window its diffs. When a
    # stored commit changed such a file, the next sync walks the history again, as migrations 7 and 10 made
    # it do (ids and first-recorded times stay), and the diff source its newest window (nodes it already
    # holds are left as they are). A store with none (most: the commits' files say so) has nothing to redo.
    touched = conn.execute(
        "SELECT 1 FROM node_files f JOIN nodes n ON n.seq = f.node_seq WHERE n.kind = 'git_commit'"
        " AND (f.path GLOB 'build/*' OR f.path GLOB '*/build/*') LIMIT 1"
    ).fetchone()
    if touched is None:
        return
    conn.execute("UPDATE sources SET cursor = NULL WHERE name IN ('git', 'diff')")
    conn.execute(
        "INSERT INTO meta(key, value) SELECT 'backfill.changeWords', 'build-dirs'"
        " WHERE EXISTS (SELECT 1 FROM nodes WHERE kind = 'git_commit')"
        " ON CONFLICT(key) DO UPDATE SET value = excluded.value"
    )


# A commit's time made as the nodes_commit_made index holds it (queries must spell it the same to use it).
COMMIT_MADE = "CASE WHEN json_valid(meta) THEN json_extract(meta, '$.committed') END"


def _m15_commit_made_index(conn: Any) -> None:
    # Failure → fix linking reads a commit's time made (meta `committed`, kept only for a rewritten commit:
    # an amend, a rebase) since a point in time; the commits authored long before it and made since are
    # otherwise found by reading every older commit (110 ms of each post-commit link run on git/git).
    # The expression reads the meta only when it is JSON: a store holding one damaged row still migrates,
    # and such a row can still be written (a query that reads it says what is wrong, as before).
    conn.execute(
        f"CREATE INDEX IF NOT EXISTS nodes_commit_made ON nodes({COMMIT_MADE})"
        f" WHERE kind = 'git_commit' AND {COMMIT_MADE} IS NOT NULL"
    )


def _m16_rewrite_only_changed_text(conn: Any) -> None:
    # An UPDATE naming title, body, words or notes rewrote the node's rows in both word indexes even when it
    # wrote the same text (a meta-only change, notes derived again as they were): with FTS5 secure-delete
    # each rewrite costs 10-28 ms, and re-deriving the notes of 1,400 commits after a checkout and back took
    # 14 s on rust-lang/cargo. The trigger now runs only when the indexed text changed.
    execute_script(
        conn,
        """
        DROP TRIGGER nodes_fts_au;
        CREATE TRIGGER nodes_fts_au AFTER UPDATE OF title, body, words, notes ON nodes
        WHEN old.title IS NOT new.title OR old.body IS NOT new.body OR old.words IS NOT new.words
          OR old.notes IS NOT new.notes OR old.kind IS NOT new.kind BEGIN
        """
        + _PROSE_STEMS_UPDATE,
    )


def _m17_no_credential_in_project_id(conn: Any) -> None:
    # The project id no longer holds a credential of the origin URL (`?access_token=…`, a user part, a token
    # in the path: identity.normalise_url). A memory made under such an id is re-keyed to its clean one here,
    # at the upgrade, not at its next sync: a post-commit hook of the release before, still on disk, would
    # otherwise write the credential back (its sync re-keys every node to its own id); a store of this
    # number is newer than it, and refused. A store whose id is clean is left as it is.
    import os
    from pathlib import Path

    from nexusmem.store.db import Store

    # The file's name as bytes: a folder whose name is not UTF-8 cannot be read as text (os.fsdecode keeps it).
    text_factory = conn.text_factory
    conn.text_factory = bytes
    try:
        name = conn.execute("PRAGMA database_list").fetchone()[2]
    finally:
        conn.text_factory = text_factory
    Store(conn, Path(os.fsdecode(name)) if name else Path("")).clean_project_id()


# The commits that renamed a file (meta `renames`: [[old path, new path], ...]) as the nodes_renames index holds
# them (queries must spell it the same to use it).
RENAMED = "kind = 'git_commit' AND json_valid(meta) AND json_type(meta, '$.renames') = 'array'"


def _m18_renames(conn: Any) -> None:
    # A commit now records where each file it renamed came from (meta `renames`): "what changed in NEW" and
    # "when was X removed" follow a file back past a `git mv`. The few commits that renamed something are
    # indexed apart (a file's renames are read on the query path). A store whose commits may hold a rename
    # (one listed on a Files line, "old → new", or one cut off it, "… and N more files") walks its history
    # again on the next sync, as migrations 10 and 14 made it (ids and first-recorded times stay); any other
    # store has nothing to read again.
    conn.execute(f"CREATE INDEX IF NOT EXISTS nodes_renames ON nodes(ts) WHERE {RENAMED}")
    held = conn.execute(
        "SELECT 1 FROM nodes WHERE kind = 'git_commit' AND (instr(body, ' → ') > 0 OR instr(body, ' more files') > 0)"
        " LIMIT 1"
    ).fetchone()
    if held is None:
        return
    conn.execute("UPDATE sources SET cursor = NULL WHERE name = 'git'")
    conn.execute(
        "INSERT INTO meta(key, value) VALUES ('backfill.changeWords', 'renames')"
        " ON CONFLICT(key) DO UPDATE SET value = excluded.value"
    )


MIGRATIONS: list[Migration] = [
    (1, "initial schema: nodes, files, links, sources, meta, fts", _m1_initial),
    (2, "fts vocabulary view for query planning", _m2_vocabulary),
    (3, "vector bookkeeping (node_vectors) and a trigram index for CJK text", _m3_vectors_and_cjk),
    (4, "hygiene: deny-list, tombstones, audit, contradiction memo; FTS secure-delete", _m4_hygiene),
    (5, "index on nodes.updated_at", _m5_updated_index),
    (6, "write sequence on nodes (nodes.written)", _m6_write_sequence),
    (7, "change words and lent notes as indexed columns; a stemmed word index", _m7_words_and_stems),
    (8, "partial index on the nodes that hold lent notes", _m8_notes_index),
    (9, "import structure: parsed files and import edges", _m9_import_structure),
    (
        10,
        "change words: the names a commit defines first (derived again on the next sync)",
        _m10_defined_words,
    ),
    (11, "releases: the repository's version tags", _m11_releases),
    (12, "commit generations: each commit's place in the history graph", _m12_commit_generations),
    (13, "the stemmed index holds prose only: shell commands leave it", _m13_prose_stems),
    (
        14,
        "files under a build/ directory are source: their commits' change words and diffs",
        _m14_build_dirs_are_source,
    ),
    (15, "index on the time a rewritten commit was made (meta committed)", _m15_commit_made_index),
    (
        16,
        "the word indexes rewrite a node only when its indexed text changed",
        _m16_rewrite_only_changed_text,
    ),
    (
        17,
        "a project id that held a credential of the origin URL: its nodes re-keyed to the clean id",
        _m17_no_credential_in_project_id,
    ),
    (
        18,
        "renamed files: where each came from (meta renames), indexed; read again on the next sync",
        _m18_renames,
    ),
]

LATEST = MIGRATIONS[-1][0]


def current_version(conn: Any) -> int:
    exists = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'"
    ).fetchone()
    if not exists:
        return 0
    row = conn.execute("SELECT MAX(version) FROM schema_migrations").fetchone()
    return int(row[0] or 0)


def readable_version(conn: Any) -> int:
    """The database's schema version; a StoreError when a newer NexusMem wrote it: its tables may hold what
    this release would read wrong, so reads refuse it as a sync does (README, Upgrading)."""
    version = current_version(conn)
    if version > LATEST:
        from nexusmem.errors import StoreError

        raise StoreError(newer_problem(version))
    return version


# Meta: the git source's cursor as it was before something cleared it to make the next sync read the history
# again (a migration, a forget, a scrub): the HEAD memory was last synced at, which the "HEAD moved" notes of
# status, query and MCP search compare with (hookreads.synced_git_cursor) until the next git sync records a
# cursor again (CursorsMixin.record_sync drops it). Without it those notes went dark right after an upgrade,
# when commits had been made that no sync read (the older post-commit hook failing on the new store).
GIT_CURSOR_BEFORE_REREAD = "git.cursor_before_reread"


def remember_git_cursor(conn: Any, cursor: str | None) -> None:
    """Keep CURSOR (the git source's, read before a change that may have cleared it) in meta when the git
    source's cursor is cleared now (GIT_CURSOR_BEFORE_REREAD)."""
    if cursor is None:
        return
    conn.execute(
        "INSERT INTO meta(key, value) SELECT ?, ?"
        " WHERE NOT EXISTS (SELECT 1 FROM sources WHERE name = 'git' AND cursor IS NOT NULL)"
        " ON CONFLICT(key) DO UPDATE SET value = excluded.value",
        (GIT_CURSOR_BEFORE_REREAD, cursor),
    )


def _git_cursor(conn: Any) -> str | None:
    row = conn.execute("SELECT cursor FROM sources WHERE name = 'git'").fetchone()
    return row[0] if row else None


def newer_problem(version: int) -> str:
    """What a memory of schema VERSION, newer than this release's, is refused with. Whoever meets it has
    upgraded already (the newer release wrote it): the program that is old is this one, most often a hook or
    an MCP server still started from the install before, so it is named by its path."""
    return (
        f"this memory was written by a newer NexusMem (schema {version}) than the one running (schema {LATEST},"
        f" {running_program()}): a hook or MCP server still runs the old install; run `nexusmem doctor` with"
        " the new one (or restart your agent)"
    )


# How releases before newer_problem's words refused a newer memory ("upgrade it" meant the program that ran).
_OLDER_REFUSAL = r"database schema version (\d+) is newer than this NexusMem \((\d+)\)"
_REFUSAL = (
    r"written by a newer NexusMem \(schema (\d+)\) than the one running \(schema (\d+), (.+?)\): a hook"
)


def refused_as_newer(text: str) -> tuple[int, int, str | None] | None:
    """(the memory's schema, the refusing release's schema, its program when TEXT names it) when TEXT holds
    a release's refusal of a memory newer than itself: newer_problem's, or the words of the releases before
    it ("database schema version 18 is newer than this NexusMem (16); upgrade it", which name no program);
    None otherwise."""
    import re

    found = re.search(_REFUSAL, text)
    if found is not None:
        return int(found.group(1)), int(found.group(2)), found.group(3)
    found = re.search(_OLDER_REFUSAL, text)
    if found is not None:
        return int(found.group(1)), int(found.group(2)), None
    return None


def running_program() -> str:
    """This process's NexusMem as a path: the console script it was started as, else the package's folder
    (`python -m nexusmem`, an MCP server or hook started by its interpreter)."""
    import os
    import sys

    started = sys.argv[0] if sys.argv else ""
    if started and started not in ("-c", "-m") and not started.endswith(".py") and os.path.isfile(started):
        return os.path.abspath(started)
    return os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def migrate(
    conn: Any, target: int | None = None, *, before: Callable[[int], None] | None = None
) -> list[int]:
    """Apply every migration above the database's version (up to TARGET); return the numbers applied.

    BEFORE(version) runs first when a database that already has a schema is to be migrated, holding its write
    lock: what it reads (a copy of the old memory) is what the migrations start from. A migration that clears
    the git source's cursor (the next sync reads the history again) leaves the cursor it cleared in meta
    (remember_git_cursor)."""
    goal = LATEST if target is None else target
    version = readable_version(conn)
    applied: list[int] = []
    if version >= goal:
        return applied
    conn.execute("BEGIN IMMEDIATE")
    try:
        version = current_version(conn)  # another process may have migrated while we waited for the lock
        if before is not None and 0 < version < goal:
            before(version)
        conn.execute(
            "CREATE TABLE IF NOT EXISTS schema_migrations(version INTEGER PRIMARY KEY, name TEXT, applied_at INTEGER)"
        )
        synced = _git_cursor(conn) if version else None  # the sources table is migration 1's
        for number, name, apply in MIGRATIONS:
            if version < number <= goal:
                apply(conn)
                conn.execute(
                    "INSERT INTO schema_migrations(version, name, applied_at) VALUES (?, ?, ?)",
                    (number, name, int(time.time() * 1000)),
                )
                applied.append(number)
        remember_git_cursor(conn, synced)
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    return applied
