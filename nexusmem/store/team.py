"""The team store: one project's shared memory in PostgreSQL + pgvector, behind the same SearchStore
interface as the SQLite store, so retrieval, ranking and packing never fork by backend.

psycopg (3) is imported here only, and this module only when a command touches the team store: the prompt
hook, a commit and a precheck without --team never load it.

Shape (migration 1): `nodes` keyed by the same content-addressed ids as SQLite (sha256 of project, kind,
natural key), so pushes of one node from several machines merge into one row; a generated `tsvector` (GIN)
over title (weight A), body (B) and change words (C); `emb vector(256)` with an HNSW cosine index for the
built-in 256-d vectors; `links`; the team deny-list and the ids it removed (`forgotten`, which every push's
INSERT skips server-side); `audit` (who forgot what, never the value); `members`. Times are epoch
milliseconds as in SQLite; `created_at` is when the team store first recorded a node (what --as-of reads),
`author` who pushed it first. Vector generations (migration 4): a large push loads its rows into a generation
of its own and builds that generation's HNSW graphs in one pass when it has loaded them (begin_bulk,
build_vector_index); smaller pushes insert into generation 0's graphs row by row. Migration 2: `term_df`, each lexeme's document count per project, kept by
statement triggers on `nodes` (a question's IDF is one index lookup, not a count of matches).

Full text differs from SQLite's FTS5 in two ways a reader of results may notice: ranking is ts_rank with
length normalisation (Postgres has no BM25; fusion divides by the best score, so only ratios matter), and
there is no stemmed index or CJK trigram index (a CJK run is one token, as in the word index).
"""

from __future__ import annotations

import json
import re
import sys
import time
from collections.abc import Collection, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from nexusmem.errors import StoreError
from nexusmem.store.nodes import StoredNode
from nexusmem.store.releases import ReleaseRange

# A team store that does not answer within this many seconds is treated as unreachable: a query then
# answers from local memory alone (an agent must never wait on a dead VPN).
CONNECT_TIMEOUT = 2
# Vectors of the built-in model (wordllama 256-d) are the ones the team shares; a member whose local
# vectors come from another model pushes nodes without vectors.
TEAM_DIM = 256
# How deep the HNSW graph is searched: at least the k asked for (pgvector's default ef_search is 40), at
# most pgvector's limit.
EF_SEARCH_MIN = 100
EF_SEARCH_MAX = 1000
# The history graph (every kind but shell commands) is searched this many times deeper than the k asked.
# It is the small graph (a tenth of a store of real memories, whose shell commands repeat), so a deeper
# search costs little, and it holds what a question is usually after. On the 205,441-node store of real
# memories (benchmarks/bench_team.py --from-store), a question's 200-deep k-NN held 0.945 of its exact 10
# nearest with both graphs at ef_search 200, 0.990 with the history graph at 400 (this factor) and 0.995
# at 800; the k-NN's p50 went from 11.9 to 13.8 ms (15.0 at 3x, 18.1 at 4x; load ~2.5, alternating).
HISTORY_EF_FACTOR = 2
# A project holding more vectors than this is not searched by an exact scan while its HNSW graphs are away
# (a bulk push loads without them, then builds them: minutes at 1,000,000 nodes). The scan reads every
# vector of the project, competing with the build for the server's cores; the question is answered by its
# words alone meanwhile, and says so. Below it the scan is quick and gives the same answers.
EXACT_KNN_MAX = 50_000
# Where document counts are counted (a schema-1 store, a match total within a time window), up to this many
# (an IDF needs no more; the planner's postings budget is 8,000).
COUNT_CAP = 10_000
# How long term_doc_counts remembers a count: long enough for one question's repeated asks, short enough
# that a term another member just pushed is counted (a stale 0 would drop it from the question).
COUNT_MEMO_SECONDS = 2.0
TOTAL_CAP = 100_000
# A push of at least this many nodes, into a team store holding no more vectors than it sends, loads without
# the HNSW index and builds it afterwards in one pass (see TeamStore.begin_bulk).
BULK_MIN = 5_000
# Two HNSW graphs over disjoint rows (team migration 3): shell commands, and every other kind. Shared
# shell commands (thousands of runs of a few hundred commands) were 90% of a 205,441-node store of real
# memories, and one graph over everything missed a fifth of a question's nearest commits and doc sections
# (recall@10 0.80 at the 200-deep k-NN a question asks; 0.945 with the two, 0.99 at 400 deep). Each row is in one graph, so a
# push inserts and a bulk push builds what one graph cost. A k-NN searches both and merges.
#
# Vector generations (team migration 4): a push that adds BULK_MIN nodes or more gets a generation of its
# own (`gen`, from vector_gen_seq) and builds the two graphs over its rows alone, in one pass, when it has
# loaded them; smaller pushes go row by row into generation 0's graphs. Why: a member's large push into a
# store that already held as many vectors went row by row into one graph of every row: 841 nodes/s for
# ten members pushing 100,000 nodes each (benchmarks/bench_team.py --nodes 1000000 --members 10). Building
# a graph over its own 100,000 rows ran at 4,900-7,300 nodes/s here (benchmarks/probe_hnsw_build.py),
# whatever the store already holds, and no push waits for another's graphs: the same ten pushes ran at
# 2,846-3,377 nodes/s. A k-NN searches every ready generation's graphs (one statement per kind of graph)
# and merges: ten generations of 100,000 cost a question 70-90 ms p50 instead of 12 ms with one graph.
GRAPHS = (("history", "kind <> 'shell_command'"), ("shell", "kind = 'shell_command'"))
# A question searches every generation's graphs, so generations are capped: past this many, a large push
# goes row by row into generation 0's graphs, as every push did before generations (slower for the pusher,
# no slower for everyone's questions). Ten generations of 100,000 cost a question 51-90 ms p50 here
# (benchmarks/bench_team.py); twelve keeps it near the 100 ms the team query is held to.
MAX_GENERATIONS = 12
HISTORY_GRAPH = GRAPHS[0][0]
_GEN_LOCK = 0x6E6D  # pg_advisory_lock(int, int) class: (this, generation) while a push loads into it
# pg_advisory_xact_lock(int, int) class: (this, hashtext(project)). Every push batch holds it shared until it
# commits; `forget --team` records its deny-list entry holding it exclusively (see TeamStore.record_deny).
_DENY_LOCK = 0x6E6D64


def graph_index(graph: str, gen: int | None) -> str:
    """The HNSW index of GRAPH ("history" or "shell") over generation GEN's rows (None: over every row, as
    a store before team migration 4 has them)."""
    return f"nodes_emb_{graph}" if gen is None else f"nodes_emb_{graph}_g{int(gen)}"


def graph_sql(graph: str, kinds: str, gen: int | None) -> str:
    where = kinds if gen is None else f"{kinds} AND gen = {int(gen)}"
    return (
        f"CREATE INDEX IF NOT EXISTS {graph_index(graph, gen)} ON nodes USING hnsw (emb vector_cosine_ops)"
        f" WITH (m = 16, ef_construction = 64) WHERE {where}"
    )


# A bulk build keeps the graph in maintenance_work_mem: ~1.8 KB a 256-d node (1,032-byte vector, 32 level-0
# neighbours of 16 bytes, upper levels, palloc overhead): 2 KB a node; past the cap pgvector carries on
# inserting on disk, an order of magnitude slower (a NOTICE says so).
_BUILD_BYTES_PER_NODE = 2048
_BUILD_MEMORY_CAP_MB = 4096
# ts_rank reads every matching node's tsv from the heap: a question whose every word is common would rank
# them all (one word in 80% of 1,000,000 nodes: 2.7 s, load 7). Past this many postings only the matches
# among the project's newest nodes are ranked, as many nodes as should hold about RANK_CAP matches (54 ms
# for the same word; recency is a prior of the ranking anyway).
RANK_CAP = 5_000
# team_meta key: the token weights the team's vectors are pooled with (the first pusher's).
TOKEN_WEIGHTS = "vector_token_weights"
# term_df's rows that are not lexemes (a lexeme never holds a space): the project's node count and how many
# of its nodes have a vector. term_doc_counts reads them along with a question's terms.
_TOTAL = " nodes"
_VECTORS = " vectors"

# Postgres' word splitter would keep "foo.py" or "a/b/c" as one token; splitting on ASCII punctuation and
# spaces first makes tokens what SQLite's unicode61 tokenizer makes ("max_retries" -> max, retries).
_SPLIT_SQL = "'[[:space:][:punct:]]+'"
_SPLIT_PY = re.compile(r"[\s!-/:-@\[-`{-~]+")

# Migration 6's trigger step after a statement's old rows were counted out: the rows of their words that no
# node holds any more.
_DROP_UNHELD_WORDS = """DELETE FROM term_df t USING (
            SELECT DISTINCT o.project_id, l.term FROM nm_old o, unnest(tsvector_to_array(o.tsv)) l(term)) g
          WHERE t.project_id = g.project_id AND t.term = g.term AND t.df <= 0;"""

MIGRATIONS: list[tuple[int, str, str]] = [
    (
        1,
        "nodes (tsvector + GIN, vector(256) + HNSW), links, deny-list, forgotten ids, audit, members",
        f"""
        CREATE EXTENSION IF NOT EXISTS vector;
        CREATE TABLE team_meta(key text PRIMARY KEY, value text NOT NULL);
        CREATE TABLE nodes(
          id text PRIMARY KEY,
          project_id text NOT NULL,
          kind text NOT NULL,
          source text NOT NULL,
          natural_key text NOT NULL,
          ref text NOT NULL,
          title text NOT NULL,
          body text NOT NULL,
          words text NOT NULL DEFAULT '',
          ts bigint NOT NULL,
          signal real NOT NULL,
          provenance text NOT NULL,
          grp text,
          meta jsonb NOT NULL DEFAULT '{{}}',
          content_hash text NOT NULL,
          files text[] NOT NULL DEFAULT '{{}}',
          trust text NOT NULL DEFAULT 'candidate' CHECK (trust IN ('candidate', 'verified', 'rejected')),
          superseded_by text,
          verdict_by text,
          author text NOT NULL,
          updated_by text NOT NULL,
          created_at bigint NOT NULL,
          updated_at bigint NOT NULL,
          emb vector({TEAM_DIM}),
          tsv tsvector GENERATED ALWAYS AS (
            setweight(to_tsvector('simple', regexp_replace(title, {_SPLIT_SQL}, ' ', 'g')), 'A') ||
            setweight(to_tsvector('simple', regexp_replace(left(body, 100000), {_SPLIT_SQL}, ' ', 'g')), 'B') ||
            setweight(to_tsvector('simple', regexp_replace(words, {_SPLIT_SQL}, ' ', 'g')), 'C')
          ) STORED
        );
        CREATE INDEX nodes_tsv ON nodes USING gin (tsv);
        CREATE INDEX nodes_emb ON nodes USING hnsw (emb vector_cosine_ops) WITH (m = 16, ef_construction = 64);
        CREATE INDEX nodes_project_ts ON nodes (project_id, ts DESC);
        CREATE INDEX nodes_files ON nodes USING gin (files);
        CREATE TABLE links(
          from_id text NOT NULL,
          to_id text NOT NULL,
          relation text NOT NULL,
          project_id text NOT NULL,
          author text NOT NULL,
          created_at bigint NOT NULL,
          PRIMARY KEY (from_id, to_id, relation)
        );
        -- forget --team: an entry is a keyed digest (literal) or a pattern (regex), never the value.
        CREATE TABLE deny_list(
          key text PRIMARY KEY,
          project_id text NOT NULL,
          kind text NOT NULL CHECK (kind IN ('literal', 'regex')),
          ignore_case boolean NOT NULL DEFAULT false,
          spec jsonb NOT NULL,
          author text NOT NULL,
          created_at bigint NOT NULL
        );
        -- ids a forget removed: a member's push that still carries one is refused row by row, server-side.
        CREATE TABLE forgotten(id text PRIMARY KEY, entry_key text NOT NULL, at bigint NOT NULL);
        CREATE TABLE audit(
          id bigserial PRIMARY KEY,
          at bigint NOT NULL,
          member text NOT NULL,
          action text NOT NULL,
          project_id text NOT NULL,
          detail jsonb NOT NULL
        );
        CREATE TABLE members(
          member text NOT NULL,
          project_id text NOT NULL,
          last_push bigint NOT NULL,
          pushed bigint NOT NULL DEFAULT 0,
          PRIMARY KEY (member, project_id)
        );
        """,
    ),
    (
        2,
        "term_df: each lexeme's document count per project, kept by triggers; backfilled",
        """
        -- A question's IDF needs each word's document count. Counting matches in the GIN index cost up to
        -- ~1 s a question at 20,000 nodes (every node holding a common word is visited); this table answers
        -- in one index lookup. Statement-level triggers keep it in the writing transaction whatever writes
        -- nodes (push, forget, verdicts), so a node another member pushed is counted once that push
        -- commits. Upserts go in (project, term) order, so concurrent pushes cannot deadlock on it. Two
        -- rows per project are not lexemes (no lexeme holds a space): ' nodes', how many nodes the project
        -- has (the IDF's N), and ' vectors', how many of them have a vector (a query asks whether any do:
        -- on a project without vectors that was a scan of every node).
        LOCK TABLE nodes IN SHARE ROW EXCLUSIVE MODE;
        CREATE TABLE term_df(
          project_id text NOT NULL,
          term text NOT NULL,
          df bigint NOT NULL,
          PRIMARY KEY (project_id, term)
        );
        CREATE FUNCTION nm_term_df_insert() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
          INSERT INTO term_df AS d (project_id, term, df)
          SELECT n.project_id, l.term, count(*) FROM nm_new n, unnest(tsvector_to_array(n.tsv)) l(term)
          GROUP BY 1, 2
          UNION ALL SELECT project_id, ' nodes', count(*) FROM nm_new GROUP BY 1
          UNION ALL SELECT project_id, ' vectors', count(*) FROM nm_new WHERE emb IS NOT NULL GROUP BY 1
          ORDER BY 1, 2
          ON CONFLICT (project_id, term) DO UPDATE SET df = d.df + excluded.df;
          RETURN NULL;
        END $$;
        CREATE FUNCTION nm_term_df_update() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
          INSERT INTO term_df AS d (project_id, term, df)
          SELECT c.project_id, c.term, sum(c.df) FROM (
            SELECT n.project_id, l.term, 1 AS df FROM nm_new n, unnest(tsvector_to_array(n.tsv)) l(term)
            UNION ALL SELECT o.project_id, l.term, -1 FROM nm_old o, unnest(tsvector_to_array(o.tsv)) l(term)
            UNION ALL SELECT project_id, ' nodes', 1 FROM nm_new
            UNION ALL SELECT project_id, ' nodes', -1 FROM nm_old
            UNION ALL SELECT project_id, ' vectors', 1 FROM nm_new WHERE emb IS NOT NULL
            UNION ALL SELECT project_id, ' vectors', -1 FROM nm_old WHERE emb IS NOT NULL) c
          GROUP BY 1, 2 HAVING sum(c.df) <> 0 ORDER BY 1, 2
          ON CONFLICT (project_id, term) DO UPDATE SET df = d.df + excluded.df;
          RETURN NULL;
        END $$;
        CREATE FUNCTION nm_term_df_delete() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
          INSERT INTO term_df AS d (project_id, term, df)
          SELECT o.project_id, l.term, -count(*) FROM nm_old o, unnest(tsvector_to_array(o.tsv)) l(term)
          GROUP BY 1, 2
          UNION ALL SELECT project_id, ' nodes', -count(*) FROM nm_old GROUP BY 1
          UNION ALL SELECT project_id, ' vectors', -count(*) FROM nm_old WHERE emb IS NOT NULL GROUP BY 1
          ORDER BY 1, 2
          ON CONFLICT (project_id, term) DO UPDATE SET df = d.df + excluded.df;
          RETURN NULL;
        END $$;
        CREATE TRIGGER nodes_term_df_insert AFTER INSERT ON nodes REFERENCING NEW TABLE AS nm_new
          FOR EACH STATEMENT EXECUTE FUNCTION nm_term_df_insert();
        CREATE TRIGGER nodes_term_df_update AFTER UPDATE ON nodes
          REFERENCING OLD TABLE AS nm_old NEW TABLE AS nm_new
          FOR EACH STATEMENT EXECUTE FUNCTION nm_term_df_update();
        CREATE TRIGGER nodes_term_df_delete AFTER DELETE ON nodes REFERENCING OLD TABLE AS nm_old
          FOR EACH STATEMENT EXECUTE FUNCTION nm_term_df_delete();
        INSERT INTO term_df(project_id, term, df)
          SELECT project_id, l.term, count(*) FROM nodes, unnest(tsvector_to_array(tsv)) l(term) GROUP BY 1, 2
          UNION ALL SELECT project_id, ' nodes', count(*) FROM nodes GROUP BY 1
          UNION ALL SELECT project_id, ' vectors', count(*) FROM nodes WHERE emb IS NOT NULL GROUP BY 1;
        """,
    ),
    (
        3,
        "two HNSW graphs: shell commands, and every other kind (replacing the one over every node)",
        """
        -- Why: see GRAPHS. Building them reads every vector once, as building nodes_emb did.
        DROP INDEX IF EXISTS nodes_emb;
        CREATE INDEX IF NOT EXISTS nodes_emb_history ON nodes USING hnsw (emb vector_cosine_ops)
          WITH (m = 16, ef_construction = 64) WHERE kind <> 'shell_command';
        CREATE INDEX IF NOT EXISTS nodes_emb_shell ON nodes USING hnsw (emb vector_cosine_ops)
          WITH (m = 16, ef_construction = 64) WHERE kind = 'shell_command';
        """,
    ),
    (
        4,
        "vector generations: a large push builds graphs over its own rows (gen, vector_gens)",
        f"""
        -- Why: see GRAPHS. Every row held so far is generation 0; its two graphs are built again with the
        -- generation in their predicate (reading every vector once, as migration 3 did).
        ALTER TABLE nodes ADD COLUMN gen int NOT NULL DEFAULT 0;
        CREATE SEQUENCE vector_gen_seq START 1;
        CREATE TABLE vector_gens(
          gen int PRIMARY KEY,
          member text NOT NULL,
          created_at bigint NOT NULL,
          ready boolean NOT NULL DEFAULT false
        );
        INSERT INTO vector_gens(gen, member, created_at, ready)
          VALUES (0, '', (extract(epoch FROM clock_timestamp()) * 1000)::bigint, true);
        DROP INDEX IF EXISTS nodes_emb_history, nodes_emb_shell;
        {graph_sql(GRAPHS[0][0], GRAPHS[0][1], 0)};
        {graph_sql(GRAPHS[1][0], GRAPHS[1][1], 0)};
        """,
    ),
    (
        5,
        "commit generations: each commit's place in the history's graph, as members' syncs numbered it",
        """
        -- Why: "when was X added?" is answered by the first change in the history's graph that holds X; author
        -- dates put a branch rebased years after it was written before what it was rebased onto.
        CREATE TABLE commit_generations(
          project_id text NOT NULL,
          sha text NOT NULL,
          gen int NOT NULL,
          PRIMARY KEY (project_id, sha)
        );
        """,
    ),
    (
        6,
        "term_df drops a word no node holds any more (forget --team left the forgotten value's words)",
        f"""
        -- Why: a word's row stayed at df 0 once the last node holding it was deleted or changed, so the words
        -- of a value `forget --team` removed stayed readable in the store. The two counts that are not words
        -- (' nodes', ' vectors') stay.
        LOCK TABLE nodes IN SHARE ROW EXCLUSIVE MODE;
        CREATE OR REPLACE FUNCTION nm_term_df_update() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
          INSERT INTO term_df AS d (project_id, term, df)
          SELECT c.project_id, c.term, sum(c.df) FROM (
            SELECT n.project_id, l.term, 1 AS df FROM nm_new n, unnest(tsvector_to_array(n.tsv)) l(term)
            UNION ALL SELECT o.project_id, l.term, -1 FROM nm_old o, unnest(tsvector_to_array(o.tsv)) l(term)
            UNION ALL SELECT project_id, ' nodes', 1 FROM nm_new
            UNION ALL SELECT project_id, ' nodes', -1 FROM nm_old
            UNION ALL SELECT project_id, ' vectors', 1 FROM nm_new WHERE emb IS NOT NULL
            UNION ALL SELECT project_id, ' vectors', -1 FROM nm_old WHERE emb IS NOT NULL) c
          GROUP BY 1, 2 HAVING sum(c.df) <> 0 ORDER BY 1, 2
          ON CONFLICT (project_id, term) DO UPDATE SET df = d.df + excluded.df;
          {_DROP_UNHELD_WORDS}
          RETURN NULL;
        END $$;
        CREATE OR REPLACE FUNCTION nm_term_df_delete() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
          INSERT INTO term_df AS d (project_id, term, df)
          SELECT o.project_id, l.term, -count(*) FROM nm_old o, unnest(tsvector_to_array(o.tsv)) l(term)
          GROUP BY 1, 2
          UNION ALL SELECT project_id, ' nodes', -count(*) FROM nm_old GROUP BY 1
          UNION ALL SELECT project_id, ' vectors', -count(*) FROM nm_old WHERE emb IS NOT NULL GROUP BY 1
          ORDER BY 1, 2
          ON CONFLICT (project_id, term) DO UPDATE SET df = d.df + excluded.df;
          {_DROP_UNHELD_WORDS}
          RETURN NULL;
        END $$;
        DELETE FROM term_df WHERE df <= 0 AND term NOT IN (' nodes', ' vectors');
        """,
    ),
]
LATEST = MIGRATIONS[-1][0]
_GENERATIONS_BATCH = 10_000  # (sha, generation) pairs per INSERT: a 10k-commit first push in one
_MIGRATE_LOCK = 0x6E6D7465616D  # pg_advisory_xact_lock key: "nmteam"

_COLUMNS = (
    "id, kind, source, natural_key, ref, title, body, ts, created_at, signal, provenance, trust,"
    " superseded_by, grp, meta::text, project_id, words, author, verdict_by"
)
_LIGHT = _COLUMNS.replace(" body,", " '',").replace(" words,", " '',")

# Columns of one pushed node, in COPY order (the temporary table nm_push has the same ones).
PUSH_COLUMNS = (
    "id",
    "kind",
    "source",
    "natural_key",
    "ref",
    "title",
    "body",
    "words",
    "ts",
    "signal",
    "provenance",
    "grp",
    "meta",
    "content_hash",
    "files",
    "trust",
    "superseded_by",
    "emb",
)


# COPY types of PUSH_COLUMNS ("vector" is looked up: an extension type's oid differs by database).
_PUSH_TYPES = (
    ["text"] * 8 + ["int8", "float4", "text", "text", "text", "text", "text[]", "text", "text"] + ["vector"]
)


class _VectorBlob:
    """A float32 blob (native byte order, as the local store keeps vectors) bound for a vector column."""

    __slots__ = ("blob",)

    def __init__(self, blob: bytes) -> None:
        self.blob = blob


def vector_binary(blob: bytes) -> bytes:
    """pgvector's binary input of a float32 blob: dimensions and a reserved 0 (int16 each), then the
    floats, all big-endian."""
    import struct
    import sys
    from array import array

    values = array("f")
    values.frombytes(blob)
    if sys.byteorder == "little":
        values.byteswap()
    return struct.pack(">HH", len(values), 0) + values.tobytes()


class TeamUnavailable(StoreError):
    """The team store cannot be reached (or not now): callers fall back to local memory."""


def now_ms() -> int:
    return int(time.time() * 1000)


def is_driver_error(exc: BaseException) -> bool:
    """Whether EXC is the PostgreSQL driver's (a statement cancelled by its timeout, a dropped connection)."""
    psycopg = sys.modules.get("psycopg")
    return psycopg is not None and isinstance(exc, psycopg.Error)


def driver_reason(exc: BaseException) -> str:
    """The first line the driver gave for EXC (never a password), or its type when it gave none."""
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def unanswered(exc: BaseException, conn: Any = None) -> str:
    """Why a read found nothing in the team store when a statement of it failed: it did not answer in time
    (see connect's STATEMENT_MS), the connection dropped, or the role may not read it (which grant it
    lacks; CONN, still open, says which role and schema)."""
    psycopg = sys.modules.get("psycopg")
    if psycopg is not None and isinstance(exc, psycopg.errors.InsufficientPrivilege):
        role, schema = "<role>", "public"
        if conn is not None:
            try:
                row = conn.execute("SELECT current_user, coalesce(current_schema(), 'public')").fetchone()
            except psycopg.Error:
                row = None
            if row:
                role, schema = str(row[0]), str(row[1])
        return (
            f"role {role} may not read it ({driver_reason(exc)}): reading takes SELECT on the team tables,"
            f" which their owner grants: `GRANT SELECT ON ALL TABLES IN SCHEMA {schema} TO {role}`"
        )
    seconds = _CUT_OFF.get(id(conn)) if conn is not None else None
    if seconds is not None:  # our own deadline cut it: the server closed nothing
        return f"no answer within {seconds:g} s (a read waits no longer)"
    return f"it did not answer in time ({driver_reason(exc)})"


def driver() -> Any:
    """The psycopg module, or a StoreError saying how to install it (the optional `nexusmem[team]` extra)."""
    try:
        import psycopg
    except ImportError as exc:
        raise StoreError(
            f"team memory needs the PostgreSQL client psycopg: pip install 'nexusmem[team]' ({exc})"
        ) from None
    return psycopg


def tsquery(match: str) -> str | None:
    """The tsquery of an FTS5 OR-of-quoted-terms expression (retrieve.search.fts_expression): each term's
    tokens as a phrase (a <-> b), the terms OR-ed; None when nothing searchable is left."""
    terms = re.findall(r'"((?:[^"]|"")*)"', match) or [match]
    parts: list[str] = []
    for term in terms:
        tokens = [t.lower() for t in _SPLIT_PY.split(term.replace('""', '"')) if t]
        if tokens:
            parts.append(" <-> ".join("'" + t.replace("'", "''").replace("\\", "\\\\") + "'" for t in tokens))
    if not parts:
        return None
    return " | ".join(f"({p})" for p in parts)


def vector_text(blob: bytes) -> str:
    """A float32 blob as pgvector's text input, '[x,y,...]'."""
    from array import array

    values = array("f")
    values.frombytes(blob)
    return "[" + ",".join(f"{v:.7g}" for v in values) + "]"


def connect(url: str, *, timeout: float = CONNECT_TIMEOUT, statement_ms: int | None = None) -> Any:
    """An autocommit psycopg connection to URL within TIMEOUT seconds, or TeamUnavailable (with the reason
    the driver gave, which never holds a password). STATEMENT_MS bounds every statement of the session,
    waits on locks included (a read that must not hold a prompt or a CI job: a server that accepts the
    connection but is busy behind a migration's lock answered after 20-40 s). Every session is one the
    server ends when it sits idle inside a transaction, and both ends probe a link that went quiet (see
    idle_in_transaction_seconds)."""
    psycopg = driver()
    option = session_options()
    if statement_ms is not None:
        option += f" -c statement_timeout={int(statement_ms)}"
    try:
        return psycopg.connect(
            url,
            autocommit=True,
            connect_timeout=max(1, int(timeout)),
            application_name="nexusmem",
            options=_with_option(url, option),
            **_keepalives(url),
        )
    except psycopg.Error as exc:
        raise TeamUnavailable(not_connected(exc)) from None


# What a server that refused a login says (libpq gives no SQLSTATE for a failed connection: its text).
_LOGIN_REFUSED = ("password", "authentication", "role ", "pg_hba.conf", "not permitted to log in")


def not_connected(exc: BaseException) -> str:
    """Why a connection was not made: the server refused the login (a wrong password, an unknown role) or
    the connection (its answer, after libpq's FATAL), or it could not be reached at all."""
    reason = driver_reason(exc)
    if "no password supplied" in reason:
        # libpq's own words (fe_sendauth), before the server says anything: no FATAL to go by.
        return (
            "the team store asked for a password and none was given: set PGPASSWORD, or add a line for this"
            " server to ~/.pgpass (host:port:database:user:password, mode 0600); never put it in the URL or"
            " the config"
        )
    _, fatal, said = reason.rpartition("FATAL:")
    if not fatal:
        return f"team store unreachable: {reason}"
    said = said.strip()
    what = "login" if any(word in said for word in _LOGIN_REFUSED) else "connection"
    return f"the team store refused the {what} ({said})"


# A client cut off inside a transaction (a dead link, a paused machine, the watchdog below cutting its own
# socket) left its server session "idle in transaction", holding the rows it had written: every push that
# met them, this member's retry and other members' pushes alike, waited on their locks (a lock wait is
# work to the watchdog) until the server's TCP keepalive gave up, ~2 h; through a link that still carries
# TCP but no data, never. So the server ends any session of NexusMem's that sits idle inside a transaction
# this many times the silence allowed to a statement (nothing NexusMem does pauses inside one), and the
# watchdog takes a lock held by a session idle in its transaction longer than that (not one of ours, which
# the server ends) for one nobody will release. TCP keepalives, both ways, notice a peer that is gone.
IDLE_IN_TRANSACTION_FACTOR = 3
KEEPALIVE_IDLE, KEEPALIVE_INTERVAL, KEEPALIVE_COUNT = 30, 10, 3


def idle_in_transaction_seconds() -> float:
    return IDLE_IN_TRANSACTION_FACTOR * silence_seconds()


def session_options() -> str:
    """The server settings (`-c` options) every team session is given: see IDLE_IN_TRANSACTION_FACTOR."""
    return (
        f"-c idle_in_transaction_session_timeout={int(idle_in_transaction_seconds() * 1000)}"
        f" -c tcp_keepalives_idle={KEEPALIVE_IDLE} -c tcp_keepalives_interval={KEEPALIVE_INTERVAL}"
        f" -c tcp_keepalives_count={KEEPALIVE_COUNT}"
    )


def _keepalives(url: str) -> dict[str, str]:
    """libpq's TCP keepalive parameters for URL's connection, those URL does not set itself."""
    from psycopg.conninfo import conninfo_to_dict

    wanted = {
        "keepalives": "1",
        "keepalives_idle": str(KEEPALIVE_IDLE),
        "keepalives_interval": str(KEEPALIVE_INTERVAL),
        "keepalives_count": str(KEEPALIVE_COUNT),
    }
    try:
        given = conninfo_to_dict(url)
    except driver().Error:
        return wanted  # psycopg.connect says what is wrong with the URL
    return {k: v for k, v in wanted.items() if k not in given}


def _with_option(url: str, option: str) -> str:
    """The server options URL's connection would have (its `options`, else PGOPTIONS) plus OPTION: an
    `options` argument replaces them (a team store in a schema of its own, `?options=-csearch_path%3Dnm`,
    was read as holding no team memory)."""
    import os

    from psycopg.conninfo import conninfo_to_dict

    try:
        given = str(conninfo_to_dict(url).get("options") or "")
    except driver().Error:
        given = ""  # psycopg.connect says what is wrong with the URL
    given = given or os.environ.get("PGOPTIONS", "")
    return f"{given} {option}".strip()


# A read session (a query, a precheck: someone waits) ends this long after it connected, whatever the
# server does. statement_timeout is the server's to enforce: a server that stopped answering after the
# connection was made (paused, a dead link) held `query --team` and a CI job's `precheck --team` forever.
READ_SESSION_SECONDS = 20.0


class _Deadline:
    """Shuts CONN's socket down SECONDS after it opened unless cancelled first: the read waiting on it then
    fails as a dropped connection does, and the caller answers without the team store."""

    def __init__(self, conn: Any, seconds: float) -> None:
        import threading

        self._conn = conn
        self._seconds = seconds
        self._lock = threading.Lock()
        self._done = False
        self._timer = threading.Timer(seconds, self._cut)
        self._timer.daemon = True
        self._timer.start()

    def _cut(self) -> None:
        with self._lock:
            if not self._done:
                _CUT_OFF[id(self._conn)] = self._seconds
                _shut(self._conn)

    def cancel(self) -> None:
        with self._lock:
            self._done = True
            _CUT_OFF.pop(id(self._conn), None)  # the id may be another connection's next
        self._timer.cancel()


# The connections (by id) a _Deadline cut, and after how many seconds: the read that failed on one says
# that this side stopped waiting, not the driver's "server closed the connection unexpectedly".
_CUT_OFF: dict[int, float] = {}


def _shut(conn: Any) -> None:
    """Shut CONN's socket down: whatever waits on it fails as on a dropped connection."""
    import os
    import socket

    try:
        sock = socket.socket(fileno=os.dup(conn.fileno()))
    except (OSError, ValueError, driver().Error):
        return  # closed meanwhile
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    finally:
        sock.close()


# A session without a time limit (team init, status, push: building a push's vector graphs, or migrating a
# large store, legitimately takes minutes) is watched instead. Once a statement has waited this long the
# server is asked, on a connection of its own, what it is doing with it; a server that does not answer
# that (paused, a dead link) within PROBE_SECONDS, or that has sat idle all that time (the statement
# never reached it), has stopped answering: the session's socket is cut and the command says so. A server
# busy with the statement (a build, a lock a working session holds) is waited for, and so is a lock held
# by a session idle in its transaction until the server would have ended one of ours (see
# IDLE_IN_TRANSACTION_FACTOR). NEXUSMEM_TEAM_SILENCE_SECONDS changes it.
SILENCE_SECONDS = 10.0
PROBE_SECONDS = 5.0
# (URL, server pid) of a session of another role, not NexusMem's, that a watched statement waited on, and
# when a statement of this process first did (Watchdog._silent): its state cannot be read, so the wait is
# bounded by how long it has held this command's statements, across the push's retries.
_HIDDEN_BLOCKERS: dict[tuple[str, int], float] = {}
# A statement that has waited this long (or the silence, when shorter) is looked at for the first time, so
# that a lock wait is said on stderr while it lasts ("waiting for a lock held by …"), once per holder.
NOTICE_SECONDS = 3.0
_NOTICED: set[tuple[str, int]] = set()


def silence_seconds() -> float:
    import os

    value = os.environ.get("NEXUSMEM_TEAM_SILENCE_SECONDS", "")
    try:
        return float(value) if value and float(value) > 0 else SILENCE_SECONDS
    except ValueError:
        return SILENCE_SECONDS


def _say_waiting(line: str) -> None:
    """A watched command's word while it waits on a lock (stderr: a post-commit push's goes to its log)."""
    try:
        sys.stderr.write(line + "\n")
        sys.stderr.flush()
    except (OSError, ValueError):  # no stderr to write to: the wait goes on unsaid
        pass


class Watchdog:
    """Watches CONN (to URL; LABEL names it in messages): see SILENCE_SECONDS. WHY is set when it cut the
    connection: the message the command gives instead of the driver's."""

    def __init__(self, conn: Any, url: str, label: str) -> None:
        import threading

        self._notice = _say_waiting
        self._conn = conn
        self._url = url
        self._label = label
        self._pid = conn.info.backend_pid
        self._seconds = silence_seconds()
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self.why = ""
        threading.Thread(target=self._watch, daemon=True, name="nexusmem-team-watchdog").start()

    def stop(self) -> None:
        with self._lock:  # before the socket goes: its number may be another's next
            self._stop.set()

    def _watch(self) -> None:
        active = driver().pq.TransactionStatus.ACTIVE
        step = min(0.25, self._seconds / 4)
        since: float | None = None  # since when every look found a statement waiting
        probed = 0.0
        looked = False  # whether this wait was looked at yet: the first look comes after NOTICE_SECONDS
        while not self._stop.wait(step):
            try:
                waiting = self._conn.pgconn.transaction_status == active
            except Exception:
                return
            now = time.monotonic()
            if not waiting:
                since = None
                continue
            if since is None:
                since = probed = now
                looked = False
                continue
            if now - probed < (self._seconds if looked else min(NOTICE_SECONDS, self._seconds)):
                continue
            why = self._silent(now - since)
            probed = time.monotonic()
            looked = True
            if why:
                with self._lock:
                    if self._stop.is_set():
                        return
                    self.why = why
                    _shut(self._conn)
                return

    def _stopped(self, why: str) -> str:
        return (
            f"the team store {self._label} stopped answering: {why}. Check that the server is up and"
            " reachable from here (VPN, firewall, a paused machine)"
        )

    def _silent(self, waited: float) -> str:
        """What the command says when a statement that waited WAITED s is taken for one that will never
        end (a server that stopped answering, a lock nobody will release), or "" (it is working)."""
        psycopg = driver()
        try:
            probe = psycopg.connect(
                self._url,
                autocommit=True,
                connect_timeout=max(1, int(CONNECT_TIMEOUT)),
                application_name="nexusmem",
                options=_with_option(
                    self._url, f"{session_options()} -c statement_timeout={int(PROBE_SECONDS * 1000)}"
                ),
                **_keepalives(self._url),
            )
        except psycopg.Error as exc:
            if getattr(exc, "sqlstate", None):
                return ""  # the server answered (too many clients, say): it is alive
            return self._stopped(
                f"a statement waited {waited:.0f} s and a new connection failed ({driver_reason(exc)})"
            )
        deadline = _Deadline(probe, PROBE_SECONDS)
        try:
            # Its state, how long it has been in it, and what a lock wait of it waits on: the longest a
            # session it waits behind has sat idle in its transaction (NULL when none has; the sessions it
            # waits behind, theirs in turn: an earlier attempt this side cut off still waits in the queue
            # on the server; a member's role sees the states of its own sessions only).
            # Also the first of them whose state this role may not read (another role's session, without
            # pg_read_all_stats: its state is NULL) that is not NexusMem's (the server ends one of ours that
            # sits idle in its transaction), with its role.
            row = probe.execute(
                "WITH RECURSIVE ahead(pid) AS (SELECT unnest(pg_blocking_pids(%s))"
                " UNION SELECT unnest(pg_blocking_pids(ahead.pid)) FROM ahead)"
                " SELECT a.state, extract(epoch FROM clock_timestamp() - a.state_change),"
                " (SELECT max(extract(epoch FROM clock_timestamp() - b.state_change)) FROM pg_stat_activity b"
                "  WHERE b.pid IN (SELECT pid FROM ahead) AND b.state LIKE 'idle in transaction%%'),"
                " h.pid, h.usename, w.pid, w.usename"
                " FROM pg_stat_activity a LEFT JOIN LATERAL (SELECT b.pid, b.usename FROM pg_stat_activity b"
                "  WHERE b.pid IN (SELECT pid FROM ahead) AND b.state IS NULL"
                "  AND b.application_name IS DISTINCT FROM 'nexusmem' ORDER BY b.pid LIMIT 1) h ON true"
                " LEFT JOIN LATERAL (SELECT b.pid, b.usename FROM pg_stat_activity b"
                "  WHERE b.pid = ANY(pg_blocking_pids(a.pid)) ORDER BY b.pid LIMIT 1) w ON true"
                " WHERE a.pid = %s",
                (self._pid, self._pid),
            ).fetchone()
        except psycopg.Error:
            return self._stopped(
                f"a statement waited {waited:.0f} s and the server did not answer a check within {PROBE_SECONDS:.0f} s"
            )
        finally:
            deadline.cancel()
            probe.close()
        if row is None:
            return self._stopped(f"a statement waited {waited:.0f} s on a session the server no longer has")
        state, idle, stuck, hidden, role, holder, holder_role = row
        if holder is not None and (self._url, int(holder)) not in _NOTICED:
            _NOTICED.add((self._url, int(holder)))
            self._notice(
                f"nexusmem: waiting for a lock on the team store {self._label} held by pid {int(holder)}"
                f' (role {holder_role or "?"})… (a push gives up on a lock nobody releases: README, "Where'
                ' team memory breaks")'
            )
        if state and str(state).startswith("idle") and idle is not None and float(idle) >= self._seconds:
            return self._stopped(
                f"a statement waited {waited:.0f} s that never reached it (its session sat idle)"
            )
        bound = idle_in_transaction_seconds() + self._seconds
        if stuck is not None and float(stuck) >= bound:
            return (
                f"the team store {self._label} holds a lock nobody will release: a statement waited"
                f" {waited:.0f} s on a session that has sat idle in its transaction for {float(stuck):.0f} s"
                " (a client cut off mid-transaction, or a transaction left open). Its owner, or the"
                " server's administrator (pg_terminate_backend), can end it"
            )
        if hidden is not None:
            # How long it has held us cannot be read from its state: from when a statement of this command
            # (this attempt's, or an earlier attempt's of the same push) first waited on it.
            since = _HIDDEN_BLOCKERS.setdefault((self._url, int(hidden)), time.monotonic() - waited)
            held = time.monotonic() - since
            if held >= bound:
                return (
                    f"the team store {self._label} holds a lock this role cannot see the holder of: statements"
                    f" waited {held:.0f} s on session {int(hidden)} of role {role or '?'}, which is not"
                    " NexusMem's and whose state is not visible to this role (reading it takes"
                    " pg_read_all_stats): a transaction left open (a psql) or a long job. Its owner, or the"
                    f" server's administrator (`SELECT pg_terminate_backend({int(hidden)})`), can end it"
                )
        return ""


def schema_version_of(conn: Any) -> int:
    """The team store's schema version, 0 when it was never set up (one round trip: a query opens the
    store for each question)."""
    psycopg = driver()
    if conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
        # Inside a transaction (migrate's) a failed statement would abort it: look the table up first.
        row = conn.execute("SELECT to_regclass('team_schema')").fetchone()
        if row is None or row[0] is None:
            return 0
    try:
        row = conn.execute("SELECT max(version) FROM team_schema").fetchone()
    except psycopg.errors.UndefinedTable:
        return 0
    return int(row[0] or 0) if row else 0


def _newer(current: int) -> StoreError:
    return StoreError(
        f"the team store's schema is version {current}, newer than this NexusMem ({LATEST}): upgrade NexusMem"
    )


def migrate(conn: Any) -> list[int]:
    """Apply the missing migrations, one transaction each, under an advisory lock (two members' first
    pushes may arrive together); returns the versions applied. A store already at this release's schema is
    only read: a member whose role was granted the team tables' rows and nothing more (PostgreSQL 15 and
    later grant no one CREATE on schema public) opens it; `CREATE TABLE IF NOT EXISTS` takes CREATE on the
    schema even when the table is there."""
    psycopg = driver()
    applied: list[int] = []
    current = 0
    try:
        current = schema_version_of(conn)
        if current > LATEST:
            raise _newer(current)
        if current == LATEST:
            return applied
        with conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (_MIGRATE_LOCK,))
            shared = _shared_owner(conn)
            if shared is not None:  # what this transaction creates belongs to every member's owner role
                conn.execute(f"SET LOCAL ROLE {_quoted(conn, shared)}")
            if current == 0:
                conn.execute(
                    "CREATE TABLE IF NOT EXISTS team_schema(version int PRIMARY KEY, name text NOT NULL,"
                    " applied_at bigint NOT NULL)"
                )
            current = schema_version_of(conn)  # again, under the lock: another member may have migrated
            if current > LATEST:
                raise _newer(current)
            for version, name, sql in MIGRATIONS:
                if version <= current:
                    continue
                conn.execute(sql)
                conn.execute(
                    "INSERT INTO team_schema(version, name, applied_at) VALUES (%s, %s, %s)",
                    (version, name, now_ms()),
                )
                applied.append(version)
    except psycopg.errors.InsufficientPrivilege as exc:
        first = str(exc).splitlines()[0]
        raise StoreError(
            f"cannot set up the team store: {first} ({_grant_advice(conn, first, current)})"
        ) from None
    except psycopg.errors.FeatureNotSupported as exc:
        raise StoreError(f"cannot set up the team store: {str(exc).splitlines()[0]}") from None
    except (
        psycopg.errors.DuplicateTable,
        psycopg.errors.DuplicateObject,
        psycopg.errors.DuplicateFunction,
    ) as exc:  # not a store of ours
        raise StoreError(
            f"cannot set up the team store: {str(exc).splitlines()[0]} (the database already holds a table"
            " of that name that is not NexusMem's: give the team store a database of its own, or a schema"
            " of its own: `CREATE SCHEMA nexusmem;` and `?options=-csearch_path%3Dnexusmem,public` in the URL)"
        ) from None
    except psycopg.errors.UndefinedObject as exc:
        first = str(exc).splitlines()[0]
        if "vector" not in first:
            raise
        # The team's schema stays first: tables are created in the first schema of the path (advice that
        # put the extension's first created them all there).
        where = _vector_schema(conn)
        path = ",".join(
            [*(_schemas_on_path(conn) or ["<the team's schema>"]), where or "<pgvector's schema>"]
        )
        raise StoreError(
            f"cannot set up the team store: {first} (pgvector is installed in"
            f" {f'schema {where}' if where else 'another schema'}, which is not on the connection's"
            f" search_path: add it after the team's schema in the URL, `?options=-csearch_path%3D{path}`)"
        ) from None
    except psycopg.errors.UndefinedFile as exc:
        raise StoreError(
            f"the PostgreSQL server has no pgvector extension ({str(exc).splitlines()[0]}):"
            " install pgvector on the server (https://github.com/pgvector/pgvector)"
        ) from None
    return applied


def _shared_owner(conn: Any) -> str | None:
    """The role a migration creates the team's tables as, when it is not the login role: the owner of the
    team tables when they exist, else the database's owner, when the login role is a member of it that may
    SET ROLE to it (README: one owner role every member is granted, `GRANT <owner> TO <member>`). Created as
    the login role, the tables belonged to the member who ran `team init` first, and every other member's
    commands were refused ("permission denied for table team_schema"). None: create as the login role."""
    option = "SET" if int(conn.info.server_version) >= 160000 else "MEMBER"  # PG 16 split SET from USAGE
    row = conn.execute(
        "SELECT o.rolname, o.rolname <> current_user AND pg_has_role(current_user, o.oid, %s)"
        " FROM pg_roles o WHERE o.oid = coalesce("
        " (SELECT relowner FROM pg_class WHERE oid = to_regclass('team_schema')),"
        " (SELECT datdba FROM pg_database WHERE datname = current_database()))",
        (option,),
    ).fetchone()
    return str(row[0]) if row and row[1] else None


def _quoted(conn: Any, name: str) -> str:
    row = conn.execute("SELECT quote_ident(%s)", (name,)).fetchone()
    return str(row[0])


def _grant_advice(conn: Any, refused: str, current: int) -> str:
    """What the role CONN logs in as lacks for the migration the server REFUSED (its first line), the store
    being at schema CURRENT (0: never set up), and who or what grant gives it."""
    if "extension" in refused:
        # pgvector is not a trusted extension: owning the database is not enough to create it.
        return "a superuser must run `CREATE EXTENSION vector;` in this database once"
    try:
        row = conn.execute(
            "SELECT current_user, current_schema(), current_schema() IS NOT NULL"
            " AND has_schema_privilege(current_schema(), 'CREATE'),"
            " (SELECT pg_get_userbyid(relowner) FROM pg_class WHERE oid = to_regclass('nodes'))"
        ).fetchone()
    except driver().Error:
        row = None
    role, schema, may_create, owner = row if row else ("<role>", None, True, None)
    where = schema or "<the team's schema>"
    what = (
        "setting up the team store creates its tables"
        if current == 0
        else f"the team store is at schema {current} and this NexusMem needs {LATEST}, which changes its tables"
    )
    tables = (
        f"the other members need only rights on its tables (`GRANT ALL ON ALL TABLES IN SCHEMA {where} TO"
        " <role>`, and on its sequences)"
    )
    if "permission denied for table" in refused or "permission denied for sequence" in refused:
        return (
            f"role {role} has no rights on the team tables: their owner{f' ({owner})' if owner else ''} grants"
            f" them (`GRANT ALL ON ALL TABLES IN SCHEMA {where} TO {role}` and `GRANT ALL ON ALL SEQUENCES IN"
            f" SCHEMA {where} TO {role}`)"
        )
    if current and owner and owner != role:
        # An upgrade changes the tables (and their triggers' functions): CREATE on the schema is not enough.
        return (
            f"{what}: only the tables' owner ({owner}) can make that change; they run `nexusmem team push`"
            f" (or `team init`) once with this NexusMem, or every member logs in as one owner role (`GRANT"
            f" {owner} TO {role}`)"
        )
    if not may_create:
        holder = f" (the tables' owner, {owner})" if owner else ""
        return (
            f"{what}: role {role} lacks CREATE on schema {where}. Grant it (`GRANT CREATE ON SCHEMA {where} TO"
            f" {role}`), or have a role that holds it{holder} run `nexusmem team init` once; {tables}"
        )
    return f"{what}; the first member to set it up needs CREATE on schema {where}; {tables}"


def _vector_schema(conn: Any) -> str:
    """The schema the vector extension lives in, or "" when that cannot be read."""
    try:
        row = conn.execute(
            "SELECT n.nspname FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace"
            " WHERE e.extname = 'vector'"
        ).fetchone()
    except driver().Error:
        return ""
    return str(row[0]) if row else ""


def _schemas_on_path(conn: Any) -> list[str]:
    """The schemas of the connection's search_path that exist, in order ([] when that cannot be read)."""
    try:
        row = conn.execute("SELECT current_schemas(false)").fetchone()
    except driver().Error:
        return []
    return [str(name) for name in row[0]] if row and row[0] else []


@dataclass
class PushCounts:
    added: int = 0
    updated: int = 0
    unchanged: int = 0
    refused: int = 0  # forgotten ids the server would not take back
    denied: int = 0  # matched a team deny-list entry recorded since the push read the list: not written


class DenyScreen(Protocol):
    """What a push knows of the team's deny-list, for push_batch to keep out of each batch what an entry
    recorded since then (a `forget --team` while the push was under way) matches."""

    def known(self) -> Collection[str]:
        """The keys of the entries the push read (and kept out of what it sends) when it began."""
        ...

    def refused(
        self, team: TeamStore, entries: list[dict[str, Any]], rows: Sequence[Sequence[Any]]
    ) -> set[str]:
        """The ids of ROWS (PUSH_COLUMNS order) that one of ENTRIES (not known) matches."""
        ...


def merge_nearest(
    first: Sequence[Sequence[Any]], second: Sequence[Sequence[Any]], k: int
) -> list[tuple[Any, ...]]:
    """The K nearest of two k-NN answers (rows of id, distance, ...), each id once at its smaller distance."""
    best: dict[Any, tuple[Any, ...]] = {}
    for row in (*first, *second):
        kept = best.get(row[0])
        if kept is None or float(row[1]) < float(kept[1]):
            best[row[0]] = tuple(row)
    return sorted(best.values(), key=lambda r: (float(r[1]), r[0]))[:k]


def knn_statement(gens: Sequence[int | None], kinds: str, where: str) -> str:
    """One k-NN statement over GENS' graphs of the graph holding KINDS: a branch per generation, each
    taking (vector, project, *WHERE's values, vector, k)."""
    branch = (
        "(SELECT id, emb <=> %s::vector AS d FROM nodes WHERE project_id = %s AND emb IS NOT NULL"
        f" AND {kinds}{{gen}}{where} ORDER BY emb <=> %s::vector LIMIT %s)"
    )
    # A generation's number is written into its branch (an int from vector_gens): a partial index is
    # chosen only when the planner can prove its predicate from the statement's text.
    return " UNION ALL ".join(
        branch.replace("{gen}", "" if gen is None else f" AND gen = {int(gen)}") for gen in gens
    )


class TeamStore:
    """One project's view of the team store (every read is filtered on PROJECT), as a SearchStore."""

    # Retrieval keeps no in-memory copy of a team store's vectors (it would mean reading them all over the
    # network); HNSW answers every k-NN.
    in_memory_copy = False

    def __init__(self, conn: Any, project: str, member: str, label: str) -> None:
        self.conn = conn
        self.project = project
        self.member = member
        self.label = label  # the URL without credentials: what messages name
        # The project id node ids were made with (nodes read from here carry it): PROJECT, unless that is a
        # digest of it (nexusmem.team.team_project).
        self.node_project = project
        self.path = Path(f"team:{label}")
        self._version: int | None = None
        self._counts: dict[str, int] = {}  # term_doc_counts' memo
        self._counts_at = 0.0
        self._vector_oid: int | None = None  # set by _copy_types
        self._identity: str | None = None  # vector_identity_json, once known (the first writer's; fixed)
        self._token_weights: str | None = None  # vector_token_weights, once read ("" for none)
        self._has_vectors = False
        self._ef_search = 0  # the hnsw.ef_search this connection was given
        # One ef_search for both graphs instead of the one derived from k (benchmarks measuring recall
        # at a given depth of search); 0: derived.
        self.fixed_ef_search = 0
        # _generations' answer, and when it was asked
        self._gens: tuple[list[tuple[int | None, bool]], float] = ([], -COUNT_MEMO_SECONDS)
        self.bulk_refused = ""  # why begin_bulk gave no generation although the push was large
        self.build_refused = ""  # why build_vector_index left a generation unbuilt (not the tables' owner)
        # The vector generation this connection's pushes write new rows into (begin_bulk; 0: row by row).
        self.push_gen = 0
        # Set when a k-NN was not run because the graphs are being rebuilt (see EXACT_KNN_MAX).
        self.knn_skipped = False
        self._deadline: _Deadline | None = None  # a read session's (open)
        self._watchdog: Watchdog | None = None  # any other session's (open)

    @classmethod
    def open(
        cls,
        url: str,
        project: str,
        member: str,
        label: str,
        *,
        create: bool = False,
        timeout: float = 2,
        statement_ms: int | None = None,
    ) -> TeamStore:
        """Connect (TeamUnavailable when the server does not answer in TIMEOUT s); CREATE migrates, else a
        store that was never set up is an error naming `team init`. STATEMENT_MS: see connect()."""
        conn = connect(url, timeout=timeout, statement_ms=statement_ms)
        # A read (STATEMENT_MS set) is someone waiting: its whole session is bounded on this side too. Any
        # other session is watched for a server that stopped answering (see SILENCE_SECONDS).
        deadline = None if statement_ms is None else _Deadline(conn, READ_SESSION_SECONDS)
        watchdog = None if deadline is not None else Watchdog(conn, url, label)
        try:
            try:
                if create:
                    migrate(conn)
                version = schema_version_of(conn)
            except driver().Error as exc:
                if watchdog is not None and watchdog.why:
                    raise TeamUnavailable(watchdog.why) from None
                if deadline is None:
                    if isinstance(exc, driver().errors.InsufficientPrivilege):
                        why = unanswered(exc, conn)
                        raise TeamUnavailable(f"the team store {label} was not read: {why}") from None
                    raise
                # A read's first statements failed (the session's timer cut a server that went silent
                # right after login, a statement timed out, the connection dropped): the caller answers
                # without the team store, as when it cannot connect.
                raise TeamUnavailable(unanswered(exc, conn)) from None
            if version == 0:
                raise StoreError(f"{label} holds no team memory yet: run `nexusmem team init --url ...`")
            if version > LATEST:
                raise StoreError(
                    f"the team store's schema is version {version}, newer than this NexusMem ({LATEST})"
                )
        except BaseException:
            if deadline is not None:
                deadline.cancel()
            if watchdog is not None:
                watchdog.stop()
            conn.close()
            raise
        store = cls(conn, project, member, label)
        store._version = version
        store._deadline = deadline
        store._watchdog = watchdog
        return store

    @property
    def silence(self) -> str:
        """Why this session's connection was cut for a server that stopped answering, or ""."""
        return self._watchdog.why if self._watchdog is not None else ""

    def close(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()  # before the socket goes: its number may be another's next
        if self._watchdog is not None:
            self._watchdog.stop()
        self.conn.close()

    def __enter__(self) -> TeamStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def schema_version(self) -> int:
        if self._version is None:
            self._version = schema_version_of(self.conn)
        return self._version

    @contextmanager
    def transaction(self) -> Iterator[None]:
        with self.conn.transaction():
            yield

    # ------------------------------------------------------------------------------------------ reads

    def _nodes(self, rows: Sequence[Sequence[Any]]) -> list[StoredNode]:
        return [
            StoredNode(
                id=r[0],
                kind=r[1],
                source=r[2],
                natural_key=r[3],
                ref=r[4],
                title=r[5],
                body=r[6],
                ts=int(r[7]),
                created_at=int(r[8]),
                signal=float(r[9]),
                provenance=r[10],
                trust=r[11],
                superseded_by=r[12],
                group=r[13],
                raw_meta=r[14] or "",
                project_id=self.node_project if r[15] == self.project else r[15],
                words=r[16] or "",
                recorded_by=r[17] or "",
                # A node pushed with its verdict already given carries its first pusher's.
                verdict_by=(r[18] or r[17] or "") if r[11] != "candidate" else "",
            )
            for r in rows
        ]

    def get(self, node_id: str) -> StoredNode | None:
        rows = self.conn.execute(
            f"SELECT {_COLUMNS} FROM nodes WHERE id = %s AND project_id = %s", (node_id, self.project)
        ).fetchall()
        found = self._nodes(rows)
        return found[0] if found else None

    def get_many(self, ids: Sequence[str], *, light: bool = False) -> dict[str, StoredNode]:
        if not ids:
            return {}
        rows = self.conn.execute(
            f"SELECT {_LIGHT if light else _COLUMNS} FROM nodes WHERE id = ANY(%s) AND project_id = %s",
            (list(ids), self.project),
        ).fetchall()
        return {n.id: n for n in self._nodes(rows)}

    def find_by_prefix(self, prefix: str) -> list[str]:
        rows = self.conn.execute(
            "SELECT id FROM nodes WHERE id >= %s AND id < %s AND project_id = %s ORDER BY id LIMIT 5",
            (prefix, prefix + "g", self.project),
        ).fetchall()
        return [r[0] for r in rows]

    def diffs_of(self, sha: str) -> list[tuple[str, str]]:
        rows = self.conn.execute(
            "SELECT id, ref FROM nodes WHERE kind = 'code_diff' AND ref >= %s AND ref < %s AND project_id = %s"
            " ORDER BY ref",
            (sha + ":", sha + ";", self.project),
        ).fetchall()
        return [(r[0], r[1]) for r in rows]

    def sections_under(self, source: str, head: str, limit: int) -> list[str]:
        """As the local store's, in natural-key order: the team store keeps no order of writing."""
        rows: list[tuple[str, str]] = []
        for after in ("#", " > ", " › "):
            start = head + after
            rows += self.conn.execute(
                "SELECT natural_key, id FROM nodes WHERE source = %s AND natural_key >= %s AND natural_key < %s"
                " AND kind = 'doc_section' AND project_id = %s ORDER BY natural_key LIMIT %s",
                (source, start, start[:-1] + chr(ord(start[-1]) + 1), self.project, limit),
            ).fetchall()
        return [r[1] for r in sorted(rows)[:limit]]

    def written_order(self, ids: Sequence[str]) -> list[str]:
        """As IDS gives them (those the team holds): the team store keeps no order of writing."""
        held = self.get_many(ids, light=True)
        return [node_id for node_id in dict.fromkeys(ids) if node_id in held]

    def commits_by_sha(self, prefix: str) -> list[str]:
        rows = self.conn.execute(
            "SELECT id FROM nodes WHERE kind = 'git_commit' AND ref >= %s AND ref < %s AND project_id = %s"
            " ORDER BY ref LIMIT 5",
            (prefix, prefix + "g", self.project),
        ).fetchall()
        return [r[0] for r in rows]

    def files_of(self, node_id: str) -> list[str]:
        row = self.conn.execute(
            "SELECT files FROM nodes WHERE id = %s AND project_id = %s", (node_id, self.project)
        ).fetchone()
        return sorted(row[0]) if row and row[0] else []

    def files_of_many(self, ids: Sequence[str]) -> list[tuple[str, str]]:
        if not ids:
            return []
        return [
            (row[0], row[1])
            for row in self.conn.execute(
                "SELECT id, unnest(files) FROM nodes WHERE id = ANY(%s) AND project_id = %s",
                (list(ids), self.project),
            )
        ]

    def recorded_by_of(self, ids: Sequence[str]) -> dict[str, str]:
        """The member who pushed each of IDS (`precheck --team` names who ran a failing command)."""
        if not ids:
            return {}
        rows = self.conn.execute(
            "SELECT id, author FROM nodes WHERE id = ANY(%s) AND project_id = %s", (list(ids), self.project)
        ).fetchall()
        return {row[0]: row[1] for row in rows}

    def links_from(self, ids: Sequence[str]) -> list[tuple[str, str, str]]:
        if not ids:
            return []
        rows = self.conn.execute(
            "SELECT from_id, to_id, relation FROM links WHERE from_id = ANY(%s) AND project_id = %s"
            " ORDER BY from_id, relation, to_id",
            (list(ids), self.project),
        ).fetchall()
        return [(r[0], r[1], r[2]) for r in rows]

    def links_to(self, node_id: str, limit: int) -> tuple[list[tuple[str, str]], int]:
        rows = self.conn.execute(
            "SELECT l.from_id, l.relation FROM links l"
            " LEFT JOIN nodes n ON n.id = l.from_id AND n.project_id = l.project_id"
            " WHERE l.to_id = %s AND l.project_id = %s"
            " ORDER BY n.ts DESC NULLS LAST, l.from_id, l.relation LIMIT %s",
            (node_id, self.project, limit),
        ).fetchall()
        total = self.conn.execute(
            "SELECT count(*) FROM links WHERE to_id = %s AND project_id = %s", (node_id, self.project)
        ).fetchone()
        return [(r[0], r[1]) for r in rows], int(total[0]) if total else 0

    def release_window(self, version: str) -> tuple[int, int | None] | None:
        """None: the team store keeps no tags (members' repositories may differ in them)."""
        return None

    def release_commit(self, version: str) -> str | None:
        """None: the team store keeps no tags."""
        return None

    def newest_release(self, until: int | None = None) -> str | None:
        """None: the team store keeps no tags."""
        return None

    def first_release(self, until: int | None = None) -> str | None:
        """None: the team store keeps no tags."""
        return None

    def release_after(self, version: str) -> str | None:
        """None: the team store keeps no tags."""
        return None

    def release_range(self, version: str, base: str | None = None) -> ReleaseRange | None:
        """None: the team store keeps no tags."""
        return None

    def range_since(self, version: str) -> ReleaseRange | None:
        """None: the team store keeps no tags."""
        return None

    def releases_within(self, shas: Iterable[str]) -> list[str]:
        """No versions: the team store keeps no tags."""
        return []

    def releases_above(self, version: str) -> list[tuple[str, str]]:
        """No versions: the team store keeps no tags."""
        return []

    def releases_between(self, found: ReleaseRange) -> list[str]:
        """No versions: the team store keeps no tags."""
        return []

    def commit_held(self, sha: str) -> bool:
        """False: the team store keeps no tags, so no release's commit is asked about."""
        return False

    def generations(self, shas: Iterable[str]) -> dict[str, int]:
        """sha → generation for those of SHAS a member's push numbered (none before schema 5, nor for
        commits only members on shallow clones pushed: there a name's first holder goes by author time)."""
        wanted = list(dict.fromkeys(shas))
        if not wanted or self.schema_version() < 5:
            return {}
        rows = self.conn.execute(
            "SELECT sha, gen FROM commit_generations WHERE project_id = %s AND sha = ANY(%s)",
            (self.project, wanted),
        ).fetchall()
        return {str(sha): int(gen) for sha, gen in rows}

    def push_generations(self, pairs: Sequence[tuple[str, int]]) -> int:
        """Add PAIRS (commit sha, generation) the team does not hold yet; returns how many were new (0 on a
        team store from before schema 5). A commit's generation follows from its ancestry, which its sha
        fixes: every full clone numbers it alike, so the first pushed is kept."""
        if not pairs or self.schema_version() < 5:
            return 0
        added = 0
        for first in range(0, len(pairs), _GENERATIONS_BATCH):
            part = pairs[first : first + _GENERATIONS_BATCH]
            with self.conn.transaction():
                added += len(
                    self.conn.execute(
                        "INSERT INTO commit_generations(project_id, sha, gen)"
                        " SELECT %s, g.s, g.n FROM unnest(%s::text[], %s::int[]) AS g(s, n)"
                        " ORDER BY g.s ON CONFLICT DO NOTHING RETURNING 1",
                        (self.project, [sha for sha, _ in part], [gen for _, gen in part]),
                    ).fetchall()
                )
        return added

    def reference_time(self, as_of: int | None = None) -> int | None:
        if as_of is None:
            row = self.conn.execute(
                "SELECT max(ts) FROM nodes WHERE project_id = %s", (self.project,)
            ).fetchone()
        else:
            row = self.conn.execute(
                "SELECT max(ts) FROM nodes WHERE project_id = %s AND created_at <= %s", (self.project, as_of)
            ).fetchone()
        return int(row[0]) if row and row[0] is not None else None

    def newest_of_kind(self, kind: str, start: int, end: int, limit: int) -> list[str]:
        """Ids of the LIMIT newest of the team's nodes of KIND with START <= ts <= END, newest first."""
        rows = self.conn.execute(
            "SELECT id FROM nodes WHERE project_id = %s AND kind = %s AND ts BETWEEN %s AND %s"
            " ORDER BY ts DESC, id LIMIT %s",
            (self.project, kind, start, end, limit),
        ).fetchall()
        return [r[0] for r in rows]

    def oldest_of_kind(self, kind: str, start: int, end: int, limit: int) -> list[str]:
        """Ids of the LIMIT oldest of the team's nodes of KIND with START <= ts <= END, oldest first."""
        rows = self.conn.execute(
            "SELECT id FROM nodes WHERE project_id = %s AND kind = %s AND ts BETWEEN %s AND %s"
            " ORDER BY ts, id LIMIT %s",
            (self.project, kind, start, end, limit),
        ).fetchall()
        return [r[0] for r in rows]

    def command_authors(self) -> list[tuple[str, str]]:
        """The distinct (author, author kind) of the team's shell commands, most commands first."""
        rows = self.conn.execute(
            "SELECT coalesce(meta->>'author', 'me') AS a, coalesce(meta->>'author_kind', 'human') AS k"
            " FROM nodes WHERE project_id = %s AND kind = 'shell_command' GROUP BY a, k"
            " ORDER BY count(*) DESC, a",
            (self.project,),
        ).fetchall()
        return [(str(r[0]), str(r[1])) for r in rows]

    def commit_paths_ending(self, name: str) -> list[str]:
        """Every distinct path one of the team's commits touched that is NAME or ends in /NAME, in any case,
        sorted."""
        escaped = name.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        rows = self.conn.execute(
            "SELECT DISTINCT f FROM nodes, unnest(files) f WHERE project_id = %s AND kind = 'git_commit'"
            " AND (f ILIKE %s OR f ILIKE %s) ORDER BY f",
            (self.project, escaped, "%/" + escaped),
        ).fetchall()
        return [r[0] for r in rows]

    def commits_touching(self, paths: Sequence[str], start: int, end: int, limit: int) -> list[str]:
        """Ids of the LIMIT newest of the team's commits that touched one of PATHS with START <= ts <= END,
        newest first (ties by id)."""
        if not paths:
            return []
        rows = self.conn.execute(
            "SELECT id FROM nodes WHERE project_id = %s AND kind = 'git_commit' AND files && %s::text[]"
            " AND ts BETWEEN %s AND %s ORDER BY ts DESC, id LIMIT %s",
            (self.project, list(paths), start, end, limit),
        ).fetchall()
        return [r[0] for r in rows]

    def renames_of(self, paths: Sequence[str]) -> list[tuple[str, str, str, int]]:
        """(old path, new path, sha, ts) of every rename from or to one of PATHS among the team's commits
        (meta `renames`), newest first (ties by sha)."""
        if not paths:
            return []
        rows = self.conn.execute(
            "SELECT r->>0, r->>1, ref, ts FROM nodes, jsonb_array_elements(CASE WHEN jsonb_typeof(meta->'renames')"
            " = 'array' THEN meta->'renames' ELSE '[]'::jsonb END) r"
            " WHERE project_id = %s AND kind = 'git_commit' AND jsonb_typeof(meta->'renames') = 'array'"
            " AND jsonb_typeof(r) = 'array' AND (r->>0 = ANY(%s::text[]) OR r->>1 = ANY(%s::text[]))"
            " ORDER BY ts DESC, ref",
            (self.project, list(paths), list(paths)),
        ).fetchall()
        return [
            (str(r[0]), str(r[1]), str(r[2]), int(r[3]))
            for r in rows
            if r[0] is not None and r[1] is not None
        ]

    def size_hint(self) -> int:
        """This project's node count from term_df (read with the question's term counts: no extra round
        trip); on a schema-1 store the planner's estimate of the table's rows, or an exact count."""
        if self.schema_version() >= 2:
            return self._project_nodes()
        row = self.conn.execute("SELECT reltuples::bigint FROM pg_class WHERE relname = 'nodes'").fetchone()
        estimate = int(row[0]) if row and row[0] is not None else -1
        if estimate > 0:
            return estimate
        return self.node_count()

    def node_count(self) -> int:
        row = self.conn.execute(
            "SELECT count(*) FROM nodes WHERE project_id = %s", (self.project,)
        ).fetchone()
        return int(row[0])

    # ------------------------------------------------------------------------------ precheck reads

    def shell_commands_between(
        self, start: int, end: int, newest: int | None = None
    ) -> list[tuple[str, str, int, str | None, int | None]]:
        """(id, command, ts, cwd, exit) of the team's shell commands with START <= ts <= END (the NEWEST of
        them only, when given), oldest first (there are some only when members share them: team.shareShell)."""
        select = (
            "SELECT id, ref, ts, meta->>'cwd' AS cwd, (meta->>'exit')::int AS exit FROM nodes"
            " WHERE project_id = %s AND kind = 'shell_command' AND ts BETWEEN %s AND %s"
        )
        if newest is None:
            rows = self.conn.execute(f"{select} ORDER BY ts, id", (self.project, start, end)).fetchall()
        else:
            rows = self.conn.execute(
                f"SELECT * FROM ({select} ORDER BY ts DESC, id DESC LIMIT %s) AS newest ORDER BY ts, id",
                (self.project, start, end, newest),
            ).fetchall()
        return [(r[0], r[1], int(r[2]), r[3], r[4]) for r in rows]

    def shell_command_authors(self, start: int, end: int) -> dict[str, dict[str, str]]:
        """id -> {author, author_kind, recorded_by} of the team's shell commands with START <= ts <= END
        (author and author_kind as their meta says them, when it does: `precheck --team --author`)."""
        rows = self.conn.execute(
            "SELECT id, meta->>'author', meta->>'author_kind', author FROM nodes WHERE project_id = %s"
            " AND kind = 'shell_command' AND ts BETWEEN %s AND %s",
            (self.project, start, end),
        ).fetchall()
        found: dict[str, dict[str, str]] = {}
        for node_id, author, author_kind, recorded_by in rows:
            meta = {"recorded_by": recorded_by or ""}
            if author:
                meta["author"] = author
            if author_kind:
                meta["author_kind"] = author_kind
            found[node_id] = meta
        return found

    def shell_neighbours(
        self, anchor: StoredNode, *, after: bool, limit: int, window_ms: int, as_of: int | None = None
    ) -> list[str]:
        """Ids of the LIMIT shell commands nearest to ANCHOR strictly after (AFTER) or before it, within
        WINDOW_MS, run in its working directory by the member who recorded it, nearest first."""
        cwd = anchor.meta.get("cwd")
        near, far = ("ts > %s", "ts <= %s") if after else ("ts < %s", "ts >= %s")
        bound = anchor.ts + window_ms if after else anchor.ts - window_ms
        sql = (
            "SELECT id FROM nodes WHERE project_id = %s AND kind = 'shell_command' AND author = %s"
            f" AND {near} AND {far}"
        )
        params: list[Any] = [self.project, anchor.recorded_by, anchor.ts, bound]
        if isinstance(cwd, str):
            sql += " AND meta->>'cwd' = %s"
            params.append(cwd)
        if as_of is not None:
            sql += " AND created_at <= %s"
            params.append(as_of)
        sql += (" ORDER BY ts, id" if after else " ORDER BY ts DESC, id DESC") + " LIMIT %s"
        return [r[0] for r in self.conn.execute(sql, (*params, limit)).fetchall()]

    def nodes_naming(
        self, paths: Sequence[str], kinds: Sequence[str], start: int, end: int
    ) -> list[tuple[str, str, str]]:
        """(path, node id, kind) for nodes of KINDS with START <= ts <= END whose files include one of PATHS."""
        if not paths or not kinds:
            return []
        rows = self.conn.execute(
            "SELECT f, id, kind FROM nodes, unnest(files) f WHERE project_id = %s AND files && %s::text[]"
            " AND f = ANY(%s) AND kind = ANY(%s) AND ts BETWEEN %s AND %s",
            (self.project, list(paths), list(paths), list(kinds), start, end),
        ).fetchall()
        return [(r[0], r[1], r[2]) for r in rows]

    def cursor(self, source: str) -> str | None:
        return None  # a team store has no local hook log to continue from

    # ------------------------------------------------------------------------------------ full text

    def _window(
        self, as_of: int | None, since: int | None = None, until: int | None = None
    ) -> tuple[str, list[Any]]:
        sql, params = "", []
        for clause, value in (
            (" AND created_at <= %s", as_of),
            (" AND ts >= %s", since),
            (" AND ts <= %s", until),
        ):
            if value is not None:
                sql += clause
                params.append(value)
        return sql, params

    def search_fts(
        self,
        match: str,
        limit: int,
        as_of: int | None = None,
        *,
        weights: Sequence[float] = (10.0, 1.0, 2.0, 2.0),
        stemmed: bool = True,
        stem_match: str | None = None,
    ) -> list[str]:
        hits = self.search_fts_scored(match, limit, as_of, weights=weights)
        return [node_id for node_id, _ in hits]

    def search_fts_scored(
        self,
        match: str,
        limit: int,
        as_of: int | None = None,
        *,
        since: int | None = None,
        until: int | None = None,
        weights: Sequence[float] = (10.0, 1.0, 2.0, 2.0),
        stemmed: bool = True,
        stem_match: str | None = None,
    ) -> list[tuple[str, float]]:
        """(id, ts_rank) best first. WEIGHTS (title, body, words, notes) become ts_rank's {D, C, B, A}
        weights scaled into 0..1 (title A, body B, words C). When the terms' document counts add up to
        more than RANK_CAP, only the matches among the project's newest nodes are ranked (see RANK_CAP),
        widened until LIMIT are found or every node is in."""
        query = tsquery(match)
        if query is None:
            return []
        top = max(float(w) for w in weights[:3]) or 1.0
        title, body, words = (float(w) / top for w in weights[:3])
        where, params = self._window(as_of, since, until)
        weighted = [0.0, words, body, title]
        postings = sum(self._term_counts(match) or [0])
        if postings > RANK_CAP:
            nodes = self._project_nodes()
            newest = -(-nodes * RANK_CAP // postings)
            # A window that reads more nodes than there are matches costs more than ranking the matches:
            # words in ~6,800 of 205,441 real nodes (a window of the newest ~150,000) took 340-620 ms that
            # way and 51-67 ms ranked outright (benchmarks/bench_team.py --from-store, load 4-6).
            while newest < min(nodes, postings):
                # The newest nodes are one walk down the (project_id, ts) index; the planner cannot push
                # the match inside the LIMIT, so it never falls back to ranking every match.
                rows = self.conn.execute(
                    "SELECT id, ts_rank(%s::real[], tsv, q, 1) AS r FROM (SELECT id, tsv FROM nodes"
                    f" WHERE project_id = %s{where} ORDER BY ts DESC LIMIT %s) n, to_tsquery('simple', %s) q"
                    " WHERE tsv @@ q ORDER BY r DESC, id LIMIT %s",
                    (weighted, self.project, *params, newest, query, limit),
                ).fetchall()
                if len(rows) >= limit:
                    return [(r[0], float(r[1])) for r in rows]
                newest *= 8  # the terms are common, but not among the newest nodes: look further back
        rows = self.conn.execute(
            "SELECT id, ts_rank(%s::real[], tsv, q, 1) AS r FROM nodes, to_tsquery('simple', %s) q"
            f" WHERE project_id = %s AND tsv @@ q{where} ORDER BY r DESC, id LIMIT %s",
            (weighted, query, self.project, *params, limit),
        ).fetchall()
        return [(r[0], float(r[1])) for r in rows]

    def _term_counts(self, match: str) -> list[int] | None:
        """The document count of each OR-ed term of MATCH (term_df); None on a schema-1 store."""
        if self.schema_version() < 2:
            return None
        terms = [t.replace('""', '"') for t in re.findall(r'"((?:[^"]|"")*)"', match)] or [match]
        counts = self.term_doc_counts(terms)
        return [counts[t] for t in terms]

    def count_matches(
        self,
        match: str,
        as_of: int | None = None,
        *,
        stemmed: bool = False,
        since: int | None = None,
        until: int | None = None,
    ) -> int:
        """How many nodes match. Counting them visits every match (~1 s for 100,000 of them here), so when
        the terms' document counts add up to more than RANK_CAP the total comes from those counts: exact
        for one word, else the size of the union if the words were independent (between the largest count
        and the sum); with a time window, counted up to COUNT_CAP."""
        query = tsquery(match)
        if query is None:
            return 0
        where, params = self._window(as_of, since, until)
        counts = self._term_counts(match)
        cap = TOTAL_CAP
        if counts is not None and sum(counts) > RANK_CAP:
            if where:
                cap = COUNT_CAP
            else:
                nodes = max(self._project_nodes(), 1)
                missed = 1.0
                for count in counts:
                    missed *= 1.0 - min(count, nodes) / nodes
                return min(max(max(counts), round(nodes * (1.0 - missed))), sum(counts), nodes)
        row = self.conn.execute(
            "SELECT count(*) FROM (SELECT 1 FROM nodes WHERE project_id = %s"
            f" AND tsv @@ to_tsquery('simple', %s){where} LIMIT %s) s",
            (self.project, query, *params, cap),
        ).fetchone()
        return int(row[0])

    def count_stemmed(self, match: str, cap: int = 1000) -> int:
        return 0  # no stemmed index in the team store (see the module docstring)

    def matching_each(self, matches: Sequence[str], ids: Sequence[str]) -> dict[str, set[str]]:
        """One round trip for every expression: each id comes back with a flag per expression."""
        found: dict[str, set[str]] = {match: set() for match in matches}
        queries = [(match, q) for match in matches if (q := tsquery(match)) is not None]
        if not queries or not ids:
            return found
        flags = ", ".join("tsv @@ to_tsquery('simple', %s)" for _ in queries)
        rows = self.conn.execute(
            f"SELECT id, {flags} FROM nodes WHERE id = ANY(%s) AND project_id = %s",
            (*(q for _, q in queries), list(ids), self.project),
        ).fetchall()
        for row in rows:
            for (match, _), hit in zip(queries, row[1:]):
                if hit:
                    found[match].add(row[0])
        return found

    def term_doc_counts(self, terms: Sequence[str]) -> dict[str, int]:
        """How many of this project's nodes hold each term: one lookup in term_df (a term of several
        tokens, "router.py", counts as its rarest token: an upper bound). Remembered for
        COUNT_MEMO_SECONDS, since one question asks for the same terms two or three times and a team store
        is often a network round trip away."""
        now = time.monotonic()
        if now - self._counts_at > COUNT_MEMO_SECONDS or len(self._counts) > 10_000:
            self._counts, self._counts_at = {}, now
        wanted = sorted({term for term in terms if term not in self._counts})
        if self.schema_version() >= 2:
            for key in (_TOTAL, _VECTORS):  # they ride along (size_hint, has_vectors)
                if key not in self._counts:
                    wanted.insert(0, key)
            if wanted:
                self._counts.update(self._read_doc_counts(wanted))
        elif wanted:
            self._counts.update(self._count_docs(wanted))
        return {term: self._counts[term] for term in terms}

    def _project_nodes(self) -> int:
        """This project's node count (term_df's empty term), through term_doc_counts' memo."""
        self.term_doc_counts([])
        return self._counts[_TOTAL]

    def _read_doc_counts(self, terms: list[str]) -> dict[str, int]:
        # Each term is made lexemes the way the tsv column makes them (split at punctuation, then the
        # `simple` configuration), so a lookup finds exactly what `tsv @@ term` would match.
        rows = self.conn.execute(
            "SELECT t.term, min(coalesce(greatest(d.df, 0), 0)) FROM unnest(%s::text[]) AS t(term)"
            " LEFT JOIN LATERAL unnest(CASE WHEN t.term = ANY(%s) THEN array[t.term] ELSE"
            f" tsvector_to_array(to_tsvector('simple', regexp_replace(t.term, {_SPLIT_SQL}, ' ', 'g'))) END)"
            " AS l(lexeme) ON true"
            " LEFT JOIN term_df d ON d.project_id = %s AND d.term = l.lexeme GROUP BY t.term",
            (terms, [_TOTAL, _VECTORS], self.project),
        ).fetchall()
        return {term: int(count or 0) for term, count in rows}

    def _count_docs(self, terms: list[str]) -> dict[str, int]:
        """Counts from the GIN index, each capped at COUNT_CAP: for a team store not yet migrated to
        term_df (schema 1), which a query never migrates."""
        out: dict[str, int] = {}
        wanted: dict[str, str] = {}
        for term in terms:
            query = tsquery('"' + term.replace('"', '""') + '"')
            if query is None:
                out[term] = 0
            else:
                wanted[term] = query
        if wanted:
            rows = self.conn.execute(
                "SELECT t.term, (SELECT count(*) FROM (SELECT 1 FROM nodes WHERE project_id = %s"
                " AND tsv @@ to_tsquery('simple', t.q) LIMIT %s) s) FROM unnest(%s::text[], %s::text[])"
                " AS t(term, q)",
                (self.project, COUNT_CAP, list(wanted), list(wanted.values())),
            ).fetchall()
            for term, count in rows:
                out[term] = int(count)
        return out

    def search_cjk(
        self, trigrams: Sequence[str], shorter: Sequence[str], limit: int, as_of: int | None = None
    ) -> list[str]:
        return []

    def search_cjk_scored(
        self, trigrams: Sequence[str], shorter: Sequence[str], limit: int, as_of: int | None = None
    ) -> list[tuple[str, float]]:
        return []

    # -------------------------------------------------------------------------------------- vectors

    def vector_identity_json(self) -> str | None:
        """The team's vector identity (set once by the first member who pushed vectors, then fixed)."""
        if self._identity is None:
            self._identity = self.get_meta("vector_identity")
        return self._identity

    def vector_token_weights(self) -> str | None:
        """The token weights the first member who pushed vectors pooled them with (then fixed). Members
        count their own over their clone's nodes; clones of one project count nearly the same."""
        if self._token_weights is None:
            self._token_weights = self.get_meta(TOKEN_WEIGHTS) or ""
        return self._token_weights or None

    def has_vectors(self) -> bool:
        if self.schema_version() >= 2:
            self.term_doc_counts([])
            return self._counts[_VECTORS] > 0
        if not self._has_vectors:
            row = self.conn.execute(
                "SELECT 1 FROM nodes WHERE project_id = %s AND emb IS NOT NULL LIMIT 1", (self.project,)
            ).fetchone()
            self._has_vectors = row is not None
        return self._has_vectors

    def vectors_generation(self) -> str:
        return "team"

    def search_vectors(
        self,
        blob: bytes,
        k: int,
        as_of: int | None = None,
        *,
        since: int | None = None,
        until: int | None = None,
    ) -> list[tuple[str, float]]:
        """(id, cosine distance) of the K nearest, nearest first: HNSW with an iterative scan, so the
        project (and time) filter still leaves K hits. Every vector generation's graphs are searched (one
        statement per kind of graph, a branch per generation); a generation whose graphs are still being
        built is scanned exactly while the project holds at most EXACT_KNN_MAX vectors, and left out (the
        question says so: knn_skipped) above that."""
        if len(blob) != TEAM_DIM * 4:
            return []
        gens = self._generations()
        building = [gen for gen, ready in gens if not ready]
        if building and self._vector_total() > EXACT_KNN_MAX:
            self.knn_skipped = True
            gens = [(gen, ready) for gen, ready in gens if ready]
            if not gens:
                return []
        where, params = self._window(as_of, since, until)
        vector = vector_text(blob)
        rows: list[tuple[Any, ...]] = []
        for graph, kinds in GRAPHS:  # the K nearest of each graph, merged
            factor = HISTORY_EF_FACTOR if graph == HISTORY_GRAPH else 1
            self._set_ef_search(
                self.fixed_ef_search or min(EF_SEARCH_MAX, max(EF_SEARCH_MIN, int(k)) * factor)
            )
            sql = knn_statement([gen for gen, _ in gens], kinds, where)
            more = self.conn.execute(
                sql, [*(vector, self.project, *params, vector, k)] * len(gens)
            ).fetchall()
            rows = merge_nearest(rows, more, k)  # sorted: a relaxed-order scan returns them unsorted
        return [(str(r[0]), float(r[1])) for r in rows]

    def vector_distances(self, blob: bytes, ids: Sequence[str]) -> dict[str, float]:
        """id → cosine distance from BLOB of those of IDS (this project's) that have a vector."""
        if not ids or len(blob) != TEAM_DIM * 4:
            return {}
        rows = self.conn.execute(
            "SELECT id, emb <=> %s::vector FROM nodes"
            " WHERE project_id = %s AND id = ANY(%s) AND emb IS NOT NULL",
            (vector_text(blob), self.project, list(ids)),
        ).fetchall()
        return {str(r[0]): float(r[1]) for r in rows}

    def vector_rows(self, ids: Sequence[str]) -> dict[str, int]:
        return {}  # no in-memory copy (in_memory_copy is False): never called

    def distances_from(self, blob: bytes, vectors: Sequence[bytes]) -> list[float]:
        return []  # no in-memory copy (in_memory_copy is False): never called

    def _vector_total(self) -> int:
        """This project's vector count (term_df's row, read with the question's term counts)."""
        if self.schema_version() < 2:
            return 0
        self.term_doc_counts([])
        return self._counts.get(_VECTORS, 0)

    def _generations(self) -> list[tuple[int | None, bool]]:
        """(generation, whether its graphs are ready) of every vector generation, oldest first, remembered
        as long as term counts are; [(None, ready)] on a store older than team migration 4 (one set of
        graphs over every row)."""
        gens, at = self._gens
        now = time.monotonic()
        if gens and now - at <= COUNT_MEMO_SECONDS:
            return gens
        if self.schema_version() < 4:
            gens = [(None, self._graphs_valid([graph_index(g, None) for g, _k in GRAPHS]))]
        else:
            gens = [
                (int(r[0]), bool(r[1]))
                for r in self.conn.execute("SELECT gen, ready FROM vector_gens ORDER BY gen").fetchall()
            ]
        self._gens = (gens, now)
        return gens

    def _forget_generations(self) -> None:
        """Make the next _generations() ask the server (a push or a build has just changed them)."""
        self._gens = ([], -COUNT_MEMO_SECONDS)

    def _graphs_valid(self, names: Sequence[str]) -> bool:
        """Whether every index of NAMES exists and is valid."""
        row = self.conn.execute(
            "SELECT count(*) FILTER (WHERE i.indisvalid) FROM pg_index i"
            " WHERE i.indexrelid = ANY(ARRAY(SELECT to_regclass(n) FROM unnest(%s::text[]) n))",
            (list(names),),
        ).fetchone()
        return bool(row and row[0] == len(names))

    def _set_ef_search(self, ef_search: int) -> None:
        """Give this connection's HNSW scans EF_SEARCH (and the iterative scan), unless it has it already.
        Set for the connection (it serves one question, or one command): a transaction with SET LOCAL took
        four more round trips on every k-NN."""
        if ef_search == self._ef_search:
            return
        self.conn.execute(
            "SELECT set_config('hnsw.ef_search', %s, false),"
            " set_config('hnsw.iterative_scan', 'relaxed_order', false)",
            (str(ef_search),),
        )
        self._ef_search = ef_search

    def exact_vectors(self, blob: bytes, k: int) -> list[tuple[str, float]]:
        """(id, cosine distance) of the exact k-NN (a sequential scan, no index), nearest first: what the
        benchmark measures HNSW recall against. The distances let it count a hit tied with the K-th
        exact distance as found: real memories hold many identical texts (one shell command run
        thousands of times), and which of those equal vectors fill the last places is arbitrary."""
        vector = vector_text(blob)
        with self.conn.transaction():
            self.conn.execute("SET LOCAL enable_indexscan = off")
            rows = self.conn.execute(
                "SELECT id, emb <=> %s::vector AS d FROM nodes WHERE project_id = %s AND emb IS NOT NULL"
                " ORDER BY d, id LIMIT %s",
                (vector, self.project, k),
            ).fetchall()
        return [(r[0], float(r[1])) for r in rows]

    def vector_hits_to_ids(
        self,
        hits: Sequence[tuple[int, float]],
        as_of: int | None = None,
        *,
        since: int | None = None,
        until: int | None = None,
    ) -> list[tuple[str, float]]:
        return []  # no in-memory copy (in_memory_copy is False): never called

    # ----------------------------------------------------------------------------------------- meta

    def get_meta(self, key: str) -> str | None:
        row = self.conn.execute("SELECT value FROM team_meta WHERE key = %s", (key,)).fetchone()
        return str(row[0]) if row else None

    def set_meta_if_absent(self, key: str, value: str) -> str:
        """Set KEY unless it is set; returns the value that holds (the first writer's)."""
        self.conn.execute(
            "INSERT INTO team_meta(key, value) VALUES (%s, %s) ON CONFLICT (key) DO NOTHING", (key, value)
        )
        current = self.get_meta(key)
        assert current is not None
        return current

    # ----------------------------------------------------------------------------------------- push

    def refresh_statistics(self) -> None:
        """ANALYZE the nodes table. Until autovacuum gets to it, a table that just grew has the planner's
        estimate of its old size: after a first push of 20,000 nodes the k-NN query was planned as an exact
        scan (175 ms p50 instead of a few ms through HNSW)."""
        with self.conn.transaction():
            self.conn.execute("ANALYZE nodes")

    def vector_count(self) -> int:
        """Nodes holding a vector, every project's (the HNSW index is one for the whole table)."""
        row = self.conn.execute("SELECT count(*) FROM nodes WHERE emb IS NOT NULL").fetchone()
        return int(row[0])

    def missing_count(self, ids: Sequence[str]) -> int:
        """How many of IDS the team store does not hold (a push's first batch: how much of it is new)."""
        row = self.conn.execute(
            "SELECT count(*) FROM unnest(%s::text[]) AS i(id) WHERE NOT EXISTS (SELECT 1 FROM nodes n"
            " WHERE n.id = i.id)",
            (list(ids),),
        ).fetchone()
        return int(row[0])

    def vector_index_ready(self) -> bool:
        """Whether every vector generation's graphs are built and valid (a bulk push that was killed, or
        one still loading, leaves its generation without them)."""
        self._forget_generations()
        gens = self._generations()
        if not all(ready for _gen, ready in gens):
            return False
        return self._graphs_valid([graph_index(g, gen) for gen, _ in gens for g, _k in GRAPHS])

    def begin_bulk(self) -> bool:
        """Give this push a vector generation of its own: its new rows go into no graph while it loads
        them, and build_vector_index builds that generation's two graphs in one pass each at the end.
        The generation is locked for this session (an advisory lock): another member's build_vector_index
        leaves it alone while this push lives, and builds it if the push dies before its build.

        Why: inserting into HNSW row by row was 38 of a 45 s 20,000-node push (vector(256), m=16,
        ef_construction=64, load 4.5 on 2 cores); loading without it took 7 s and one CREATE INDEX over the
        same 20,000 vectors ~10 s. Earlier releases dropped the one set of graphs for the load, so only the
        first push of a history could load this way; a generation leaves every other row's graphs in place.
        While a generation is being built, k-NN questions scan its rows exactly (a small project) or leave
        them out (see search_vectors)."""
        if self.schema_version() < 4:
            return False
        held = self.conn.execute("SELECT count(*) FROM vector_gens").fetchone()
        if held and int(held[0]) >= MAX_GENERATIONS and self.reclaim_empty_generations():
            held = self.conn.execute("SELECT count(*) FROM vector_gens").fetchone()
        if held and int(held[0]) >= MAX_GENERATIONS:
            self.bulk_refused = (
                f"the team store holds {int(held[0])} vector generations (the most a question searches is"
                f" {MAX_GENERATIONS}): this push went row by row into the shared graphs"
            )
            return False
        with self.conn.transaction():
            row = self.conn.execute("SELECT nextval('vector_gen_seq')").fetchone()
            gen = int(row[0])
            # Held (shared: this push's senders write into it under the same lock) from before anyone can
            # see the generation, so reclaim_empty_generations never takes it for one a push left empty.
            self.conn.execute("SELECT pg_advisory_lock_shared(%s, %s)", (_GEN_LOCK, gen))
            self.conn.execute(
                "INSERT INTO vector_gens(gen, member, created_at, ready) VALUES (%s, %s, %s, false)",
                (gen, self.member, now_ms()),
            )
        self.push_gen = gen
        self._forget_generations()
        return True

    def reclaim_empty_generations(self) -> int:
        """Drop every vector generation that holds no row and that no live push is loading (its graphs,
        its row in vector_gens); returns how many. Why: a generation counts against MAX_GENERATIONS, and
        an empty one stayed for good: two members pushing the same history at once each made one and the
        second's held nothing; a bulk push whose link went silent before its first batch left one unbuilt
        ("vector index missing"). Those a push has just made are dropped by the push (drop_generation).

        Candidates are read cheaply (a generation not built, or whose graphs index no row: pg_class), and
        each is then taken exclusively under its lock (a loading push holds it shared, and so does each of
        its batches while it writes) and looked at: only one with no row goes."""
        if self.schema_version() < 4:
            return 0
        dropped = 0
        # Graphs of a generation no longer listed (its row deleted by a role that could not drop them), read
        # before the generations: a generation's row is committed before its graphs are built.
        names = [
            str(r[0])
            for r in self.conn.execute(
                "SELECT c.relname FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid"
                " WHERE i.indrelid = to_regclass('nodes') AND c.relname ~ '^nodes_emb_[a-z]+_g[0-9]+$'"
            ).fetchall()
        ]
        rows = self.conn.execute(
            "SELECT g.gen, g.ready, (SELECT max(c.reltuples) FROM pg_class c WHERE c.oid IN ("
            + ", ".join(f"to_regclass('{graph_index(graph, None)}_g' || g.gen)" for graph, _ in GRAPHS)
            + ")) FROM vector_gens g WHERE g.gen <> 0 ORDER BY g.gen"
        ).fetchall()
        listed = {int(r[0]) for r in rows}
        orphans = [n for n in names if int(n.rsplit("_g", 1)[1]) not in listed | {0}]
        for name in orphans:
            self._drop_graph(name)
        for gen, ready, tuples in rows:
            number = int(gen)
            if number == self.push_gen or (ready and tuples is not None and float(tuples) > 0):
                continue
            got = self.conn.execute("SELECT pg_try_advisory_lock(%s, %s)", (_GEN_LOCK, number)).fetchone()
            if not (got and got[0]):
                continue  # a push is loading into it
            try:
                held = self.conn.execute("SELECT EXISTS (SELECT 1 FROM nodes WHERE gen = %s)", (number,))
                row = held.fetchone()
                if row and not row[0]:
                    self._drop_generation(number)
                    dropped += 1
            finally:
                self.conn.execute("SELECT pg_advisory_unlock(%s, %s)", (_GEN_LOCK, number))
        if dropped:
            self._forget_generations()
        return dropped

    def drop_generation(self, gen: int) -> None:
        """Drop GEN, the generation this push made, which it did not write a row into (what it sent, another
        member had sent first), instead of building graphs over nothing."""
        if not gen:
            return
        got = self.conn.execute("SELECT pg_try_advisory_lock(%s, %s)", (_GEN_LOCK, gen)).fetchone()
        if not (got and got[0]):
            return  # a batch of it is being written still (never, once the push has settled them all)
        try:
            self._drop_generation(gen)
        finally:
            self.conn.execute("SELECT pg_advisory_unlock(%s, %s)", (_GEN_LOCK, gen))
        if gen == self.push_gen:
            self.conn.execute("SELECT pg_advisory_unlock_shared(%s, %s)", (_GEN_LOCK, gen))
            self.push_gen = 0
        self._forget_generations()

    def _drop_generation(self, gen: int) -> None:
        """Delete generation GEN's row and drop its graphs (the caller holds its lock and knows it empty)."""
        self.conn.execute("DELETE FROM vector_gens WHERE gen = %s", (gen,))
        for graph, _kinds in GRAPHS:
            self._drop_graph(graph_index(graph, gen))

    def _drop_graph(self, name: str) -> None:
        """Drop the index NAME if it is there, without blocking anyone's reads or writes (CONCURRENTLY, and
        given up after a moment behind another's build); a role that does not own it leaves it to the
        owner's next push (an index over a generation no row has costs a few pages)."""
        errors = driver().errors
        try:
            self.conn.execute("SET lock_timeout = '2s'")
            self.conn.execute(f"DROP INDEX CONCURRENTLY IF EXISTS {name}")
        except (errors.InsufficientPrivilege, errors.LockNotAvailable):
            pass
        finally:
            self.conn.execute("RESET lock_timeout")

    def build_vector_index(self) -> bool:
        """Build, in one pass each, the graphs of every generation that lacks them: this connection's own
        (after begin_bulk), one a killed push left behind, and generation 0's if an index is missing or
        invalid; returns whether it built any. A generation another live push holds (it is still loading)
        is left to that push. A build blocks other members' writes, never reads, for its length."""
        built = False
        megabytes = 0  # sized on the first build (counting every vector is a scan of the table)
        self._forget_generations()
        for gen, ready in self._generations():
            number = gen or 0
            names = [graph_index(g, gen) for g, _k in GRAPHS]
            if ready and self._graphs_valid(names):
                continue
            locked = gen is not None and number != 0 and number != self.push_gen
            if locked:
                row = self.conn.execute("SELECT pg_try_advisory_lock(%s, %s)", (_GEN_LOCK, number)).fetchone()
                if not (row and row[0]):
                    continue  # its push is alive and will build it
            try:
                for (graph, kinds), name in zip(GRAPHS, names):
                    if self._graphs_valid([name]):
                        continue
                    self.conn.execute(f"DROP INDEX IF EXISTS {name}")  # an invalid one
                    if not megabytes:
                        count = self.vector_count()
                        megabytes = max(64, min(_BUILD_MEMORY_CAP_MB, count * _BUILD_BYTES_PER_NODE >> 20))
                    with self.conn.transaction():
                        self.conn.execute(f"SET LOCAL maintenance_work_mem = '{megabytes}MB'")
                        self.conn.execute(graph_sql(graph, kinds, gen))
                if gen is not None:
                    self.conn.execute("UPDATE vector_gens SET ready = true WHERE gen = %s", (number,))
                built = True
            except driver().errors.InsufficientPrivilege as exc:
                # Building an index takes the table's owner; a member logging in as a role of their own
                # that was granted its rows has pushed them all the same. Said once, not a failed push: the
                # rows are searched by words, and by vectors once the owner's next push builds the graphs.
                self.build_refused = (
                    f"the vector index of this push was not built ({driver_reason(exc)}): only the owner of"
                    " the team tables can build it; their next `nexusmem team push` does, or give every"
                    " member one owner role (`GRANT <owner role> TO <member role>`)"
                )
            finally:
                if locked:
                    self.conn.execute("SELECT pg_advisory_unlock(%s, %s)", (_GEN_LOCK, number))
        if self.push_gen:
            self.conn.execute("SELECT pg_advisory_unlock_shared(%s, %s)", (_GEN_LOCK, self.push_gen))
            self.push_gen = 0
        self._forget_generations()
        if built:
            self.refresh_statistics()
        return built

    def push_batch(
        self, rows: Sequence[Sequence[Any]], gen: int | None = None, *, screen: DenyScreen | None = None
    ) -> PushCounts:
        """Upsert ROWS (PUSH_COLUMNS order; emb a float32 blob as SQLite keeps it, or None) in one
        transaction: binary COPY into a temporary table, then one INSERT ... ON CONFLICT. A node whose
        content hash (and words, and vector) the team already holds is left alone, so re-pushing is free and
        idempotent; rows are locked in id order, so concurrent pushes of overlapping batches cannot deadlock.
        A forgotten id is refused, and so, with SCREEN, is a row a deny-list entry recorded since the push
        read the list matches (see _screened).

        Binary COPY because a vector as pgvector text ('[0.1234567,...]') cost 164 us of Python per node
        (256 formatted floats), a ceiling of ~6,000 nodes/s before the server did anything; the binary form
        is the blob byte-swapped, 2 us.

        New rows go into vector generation GEN (a bulk push's, see begin_bulk; default this connection's
        push_gen, 0 when it has none: row by row into generation 0's graphs); a row already held keeps its
        generation."""
        counts = PushCounts()
        gen = self.push_gen if gen is None else gen
        gen_column, gen_value = (", gen", ", %s") if self.schema_version() >= 4 else ("", "")
        if not rows:
            return counts
        stamp = now_ms()
        types = self._copy_types()
        self._counts.clear()  # what this store remembered of term_df is about to change
        distinct = len({row[0] for row in rows})
        with self.conn.transaction():
            rows = self._screened(rows, screen, counts)
            if gen and gen_column:
                gen = self._loading(gen)
            self.conn.execute(
                "CREATE TEMP TABLE IF NOT EXISTS nm_push(id text, kind text, source text, natural_key text,"
                " ref text, title text, body text, words text, ts bigint, signal real, provenance text,"
                f" grp text, meta text, content_hash text, files text[], trust text, superseded_by text,"
                f" emb vector({TEAM_DIM})) ON COMMIT DELETE ROWS"
            )
            with self.conn.cursor() as cur:
                with cur.copy(f"COPY nm_push ({', '.join(PUSH_COLUMNS)}) FROM STDIN (FORMAT BINARY)") as copy:
                    copy.set_types(types)
                    for row in rows:
                        blob = row[-1]
                        copy.write_row((*row[:-1], None if blob is None else _VectorBlob(blob)))
                results = cur.execute(
                    "INSERT INTO nodes AS n (id, project_id, kind, source, natural_key, ref, title, body,"
                    " words, ts, signal, provenance, grp, meta, content_hash, files, trust, superseded_by,"
                    f" emb, author, updated_by, created_at, updated_at{gen_column})"
                    " SELECT DISTINCT ON (p.id) p.id, %s, p.kind, p.source, p.natural_key, p.ref, p.title,"
                    " p.body, p.words, p.ts, p.signal, p.provenance, p.grp, p.meta::jsonb, p.content_hash,"
                    f" p.files, p.trust, p.superseded_by, p.emb, %s, %s, %s, %s{gen_value} FROM nm_push p"
                    " WHERE NOT EXISTS (SELECT 1 FROM forgotten f WHERE f.id = p.id) ORDER BY p.id"
                    " ON CONFLICT (id) DO UPDATE SET ref = excluded.ref, title = excluded.title,"
                    " body = excluded.body, words = excluded.words, ts = excluded.ts, signal = excluded.signal,"
                    " grp = excluded.grp, meta = excluded.meta, content_hash = excluded.content_hash,"
                    " files = excluded.files, emb = coalesce(excluded.emb, n.emb),"
                    " updated_by = excluded.updated_by, updated_at = excluded.updated_at"
                    " WHERE n.project_id = excluded.project_id AND (n.content_hash <> excluded.content_hash"
                    " OR n.words <> excluded.words OR (n.emb IS NULL AND excluded.emb IS NOT NULL))"
                    # A doc section dated by an older commit than the team's (a first push, or any full
                    # resend, from a checkout that lacks a teammate's pushed edit) does not roll it back.
                    " AND NOT (n.kind = 'doc_section' AND excluded.ts < n.ts)"
                    " RETURNING (xmax = 0)",
                    (self.project, self.member, self.member, stamp, stamp, *([gen] if gen_column else [])),
                ).fetchall()
                refused = cur.execute(
                    "SELECT count(DISTINCT p.id) FROM nm_push p JOIN forgotten f ON f.id = p.id"
                ).fetchone()
            counts.added = sum(1 for r in results if r[0])
            counts.updated = len(results) - counts.added
            counts.refused = int(refused[0]) if refused else 0
            counts.unchanged = distinct - counts.added - counts.updated - counts.refused - counts.denied
            self._note_member(distinct - counts.denied, stamp)
        return counts

    def _loading(self, gen: int) -> int:
        """GEN, the vector generation a bulk push loads into, locked (shared) until this batch's
        transaction ends; 0 (row by row into generation 0's graphs) when it is gone: a push whose connection
        dropped lost its session's lock, and reclaim_empty_generations may have taken the generation, still
        empty, for one a push left behind."""
        self.conn.execute("SELECT pg_advisory_xact_lock_shared(%s, %s)", (_GEN_LOCK, gen))
        row = self.conn.execute("SELECT 1 FROM vector_gens WHERE gen = %s", (gen,)).fetchone()
        return gen if row else 0

    def _screened(
        self, rows: Sequence[Sequence[Any]], screen: DenyScreen | None, counts: PushCounts
    ) -> Sequence[Sequence[Any]]:
        """ROWS without those a team deny-list entry the push did not know when it began matches (counted
        in COUNTS.denied); first, the deny-list's lock, shared, held until this batch's transaction ends.

        Why: a push reads the team's deny-list when it begins and keeps what it matches out; a `forget
        --team` that ran while the push was under way found none of the value in the team store (the
        push's batch had not committed yet), and the batch then wrote it: it stayed for good. record_deny
        takes the lock exclusively and only then does the forget look for the value, so a batch either
        commits before the entry is recorded (the forget finds its rows and deletes them) or reads the
        entry here."""
        self.conn.execute("SELECT pg_advisory_xact_lock_shared(%s, hashtext(%s))", (_DENY_LOCK, self.project))
        if screen is None:
            return rows
        late = self.deny_entries(besides=screen.known())
        if not late:
            return rows
        doomed = screen.refused(self, late, rows)
        if not doomed:
            return rows
        counts.denied = len({row[0] for row in rows if row[0] in doomed})
        return [row for row in rows if row[0] not in doomed]

    def _copy_types(self) -> list[int | str]:
        """PUSH_COLUMNS' COPY types, a binary dumper for vectors registered on this connection (once)."""
        if self._vector_oid is None:
            from psycopg.adapt import Dumper
            from psycopg.pq import Format

            row = self.conn.execute("SELECT 'vector'::regtype::oid").fetchone()
            oid = int(row[0])

            class VectorDumper(Dumper):
                format = Format.BINARY

                def dump(self, obj: Any) -> bytes:
                    return vector_binary(obj.blob)

            VectorDumper.oid = oid
            self.conn.adapters.register_dumper(_VectorBlob, VectorDumper)
            self._vector_oid = oid
        return [self._vector_oid if t == "vector" else t for t in _PUSH_TYPES]

    def note_push(self) -> None:
        """Record that this member pushed now, whatever the push sent (no node: a push with nothing new,
        links, verdicts or a deny-list only): `team status`'s "last push" is when a push last reached the
        team store."""
        self._note_member(0, now_ms())

    def _note_member(self, pushed: int, stamp: int) -> None:
        self.conn.execute(
            "INSERT INTO members(member, project_id, last_push, pushed) VALUES (%s, %s, %s, %s)"
            " ON CONFLICT (member, project_id) DO UPDATE SET last_push = excluded.last_push,"
            " pushed = members.pushed + excluded.pushed",
            (self.member, self.project, stamp, pushed),
        )

    def push_links(self, links: Sequence[tuple[str, str, str]]) -> int:
        """Add LINKS whose two ends the team holds; returns how many were new."""
        if not links:
            return 0
        stamp = now_ms()
        with self.conn.transaction():
            rows = self.conn.execute(
                "INSERT INTO links(from_id, to_id, relation, project_id, author, created_at)"
                " SELECT l.f, l.t, l.r, %s, %s, %s FROM unnest(%s::text[], %s::text[], %s::text[]) AS l(f, t, r)"
                " WHERE EXISTS (SELECT 1 FROM nodes WHERE id = l.f AND project_id = %s)"
                " AND EXISTS (SELECT 1 FROM nodes WHERE id = l.t AND project_id = %s)"
                " ORDER BY l.f, l.t, l.r ON CONFLICT DO NOTHING RETURNING 1",
                (
                    self.project,
                    self.member,
                    stamp,
                    [a for a, _, _ in links],
                    [b for _, b, _ in links],
                    [r for _, _, r in links],
                    self.project,
                    self.project,
                ),
            ).fetchall()
        return len(rows)

    def push_verdicts(self, verdicts: Sequence[tuple[str, str, str | None]]) -> int:
        """(id, trust, superseded_by) human verdicts: set on the team's copies that differ; returns how many."""
        if not verdicts:
            return 0
        with self.conn.transaction():
            rows = self.conn.execute(
                "UPDATE nodes n SET trust = v.t, superseded_by = v.s, verdict_by = %s"
                " FROM unnest(%s::text[], %s::text[], %s::text[]) AS v(i, t, s)"
                " WHERE n.id = v.i AND n.project_id = %s"
                " AND (n.trust <> v.t OR n.superseded_by IS DISTINCT FROM v.s) RETURNING 1",
                (
                    self.member,
                    [v[0] for v in verdicts],
                    [v[1] for v in verdicts],
                    [v[2] for v in verdicts],
                    self.project,
                ),
            ).fetchall()
        return len(rows)

    def retract(self, ids: Sequence[str]) -> int:
        """Delete the nodes among IDS that this member pushed first (and their links): commits a rewrite
        left unreachable in this member's clone (an amend, a rebase, a deleted branch), with their diffs.
        A node another member pushed first is theirs to retract. Returns how many went."""
        if not ids:
            return 0
        return self._delete_own("id = ANY(%s)", sorted(set(ids)))

    def _delete_own(self, where: str, value: object) -> int:
        """Delete, in one transaction, the nodes under this project that this member pushed first and that
        WHERE (SQL of one placeholder, given VALUE) holds, and their links; how many went."""
        self._counts.clear()  # term_df is about to change
        with self.conn.transaction():
            gone = [
                r[0]
                for r in self.conn.execute(
                    f"DELETE FROM nodes WHERE {where} AND project_id = %s AND author = %s RETURNING id",
                    (value, self.project, self.member),
                ).fetchall()
            ]
            if gone:
                self.conn.execute(
                    "DELETE FROM links WHERE project_id = %s AND (from_id = ANY(%s) OR to_id = ANY(%s))",
                    (self.project, gone, gone),
                )
        return len(gone)

    def pushed_of_kinds(self, kinds: Sequence[str]) -> int:
        """How many nodes of KINDS under this project this member pushed first (what `team withdraw` takes)."""
        row = self.conn.execute(
            "SELECT count(*) FROM nodes WHERE project_id = %s AND author = %s AND kind = ANY(%s)",
            (self.project, self.member, list(kinds)),
        ).fetchone()
        return int(row[0]) if row else 0

    def withdraw_kinds(self, kinds: Sequence[str]) -> int:
        """Delete the nodes of KINDS under this project that this member pushed first, and their links, in
        one transaction: what `team.shareShell` (or shareConversations) shared before it was turned off.
        Another member's rows are theirs. Returns how many nodes went."""
        return self._delete_own("kind = ANY(%s)", list(kinds))

    def adopt(self, old: str) -> int:
        """Move what the team store holds under project id OLD (a local path, as a repository without a
        remote origin was pushed before its id became a digest) to this store's project, in one
        transaction; returns how many nodes moved (0, at the cost of one lookup, when there is nothing)."""
        held = self.conn.execute(
            "SELECT EXISTS (SELECT 1 FROM nodes WHERE project_id = %s)"
            " OR EXISTS (SELECT 1 FROM members WHERE project_id = %s)"
            " OR EXISTS (SELECT 1 FROM deny_list WHERE project_id = %s)",
            (old, old, old),
        ).fetchone()
        if not held or not held[0]:
            return 0
        new = self.project
        self._counts.clear()
        with self.conn.transaction():
            moved = self.conn.execute(
                "UPDATE nodes SET project_id = %s WHERE project_id = %s", (new, old)
            ).rowcount
            for table in ("links", "deny_list", "audit"):
                self.conn.execute(f"UPDATE {table} SET project_id = %s WHERE project_id = %s", (new, old))
            self.conn.execute(
                "INSERT INTO members(member, project_id, last_push, pushed) SELECT member, %s, last_push, pushed"
                " FROM members WHERE project_id = %s ON CONFLICT (member, project_id) DO UPDATE SET"
                " last_push = greatest(members.last_push, excluded.last_push),"
                " pushed = members.pushed + excluded.pushed",
                (new, old),
            )
            self.conn.execute("DELETE FROM members WHERE project_id = %s", (old,))
            if self.schema_version() >= 5:
                self.conn.execute(
                    "INSERT INTO commit_generations(project_id, sha, gen) SELECT %s, sha, gen"
                    " FROM commit_generations WHERE project_id = %s ON CONFLICT DO NOTHING",
                    (new, old),
                )
                self.conn.execute("DELETE FROM commit_generations WHERE project_id = %s", (old,))
            # The update's trigger counted the words over; the old id's two counts that are not words stay.
            self.conn.execute("DELETE FROM term_df WHERE project_id = %s", (old,))
        return max(0, int(moved))

    def unclean_ids(self, digests: Sequence[str]) -> list[str]:
        """The project ids other than this store's whose sha256 (hex) is among DIGESTS and under which this
        member pushed (a members row): the id an older release made with a credential of the origin URL in
        it, before this memory was re-keyed (store.nodes.UNCLEAN_IDS_KEY)."""
        if not digests:
            return []
        rows = self.conn.execute(
            "SELECT project_id FROM members WHERE member = %s AND project_id <> %s"
            " AND encode(sha256(convert_to(project_id, 'UTF8')), 'hex') = ANY(%s)",
            (self.member, self.project, list(digests)),
        ).fetchall()
        return [str(r[0]) for r in rows]

    def held_project_ids(self) -> list[str]:
        """Every project id the team store holds a row under, in any table keyed by it (a forget reads them
        all: the ids are few, the scan is the one its node search makes)."""
        tables = ["members", "nodes", "links", "deny_list", "audit", "term_df"]
        tables += ["commit_generations"] if self.schema_version() >= 5 else []
        union = " UNION ".join(f"SELECT DISTINCT project_id FROM {t}" for t in tables)
        return sorted(str(r[0]) for r in self.conn.execute(union).fetchall())

    def holds_project(self) -> bool:
        """Whether the team store holds any node under this store's project (a member pushed from a clone of
        its origin); one index lookup."""
        row = self.conn.execute(
            "SELECT EXISTS (SELECT 1 FROM nodes WHERE project_id = %s)", (self.project,)
        ).fetchone()
        return bool(row and row[0])

    def nodes_under(self, old: str) -> int:
        row = self.conn.execute("SELECT count(*) FROM nodes WHERE project_id = %s", (old,)).fetchone()
        return int(row[0]) if row else 0

    def drop_project(self, old: str, *, everyone: bool, heir: str | None) -> int:
        """Delete what the team store holds under project id OLD (not this store's): this member's nodes,
        links and members row (EVERYONE: every member's), and the commit generations and word counts kept for
        OLD once no node is left under it. Deny-list entries and audit rows under OLD (this member's, or
        EVERYONE's) move to project id HEIR: a forgotten value stays forgotten; HEIR None deletes them. One
        transaction; returns how many nodes went."""
        if old == self.project:
            return 0
        who, whose = ("", ()) if everyone else (" AND author = %s", (self.member,))
        self._counts.clear()
        with self.conn.transaction():
            gone = [
                r[0]
                for r in self.conn.execute(
                    f"DELETE FROM nodes WHERE project_id = %s{who} RETURNING id", (old, *whose)
                ).fetchall()
            ]
            if everyone:
                self.conn.execute("DELETE FROM links WHERE project_id = %s", (old,))
            else:  # this member's, and another's into a node that went
                self.conn.execute(
                    "DELETE FROM links WHERE project_id = %s"
                    " AND (author = %s OR from_id = ANY(%s) OR to_id = ANY(%s))",
                    (old, self.member, gone, gone),
                )
            mine = "" if everyone else " AND member = %s"
            self.conn.execute(f"DELETE FROM members WHERE project_id = %s{mine}", (old, *whose))
            for table, column in (("deny_list", "author"), ("audit", "member")):
                by = "" if everyone else f" AND {column} = %s"
                if heir is None:
                    self.conn.execute(f"DELETE FROM {table} WHERE project_id = %s{by}", (old, *whose))
                else:
                    self.conn.execute(
                        f"UPDATE {table} SET project_id = %s WHERE project_id = %s{by}", (heir, old, *whose)
                    )
            if self.nodes_under(old) == 0:
                if self.schema_version() >= 5:
                    self.conn.execute("DELETE FROM commit_generations WHERE project_id = %s", (old,))
                # The delete's trigger counted the words out; the old id's two counts that are not words stay.
                self.conn.execute("DELETE FROM term_df WHERE project_id = %s", (old,))
        return len(gone)

    # ---------------------------------------------------------------------------------------- forget

    def deny_entries(self, *, besides: Collection[str] = ()) -> list[dict[str, Any]]:
        """The team's deny-list entries for this project (JSON objects as forget keeps them), but those
        whose key is among BESIDES."""
        rows = self.conn.execute(
            "SELECT key, kind, ignore_case, spec::text, created_at FROM deny_list WHERE project_id = %s"
            " AND NOT (key = ANY(%s)) ORDER BY created_at, key",
            (self.project, list(besides)),
        ).fetchall()
        return [
            {"key": r[0], "kind": r[1], "ignore_case": r[2], "spec": json.loads(r[3]), "created_at": r[4]}
            for r in rows
        ]

    def candidates_containing(self, needle: str, ignore_case: bool) -> Iterator[tuple[str, list[str]]]:
        """(id, texts) of the nodes whose title, body, ref or meta hold NEEDLE (server-side strpos, then
        the caller confirms with the deny entry: texts are kind, title, body, ref, meta); NEEDLE empty: every
        node (a regex entry)."""
        fold = "lower" if ignore_case else ""
        sql = "SELECT id, kind, title, body, ref, meta::text FROM nodes WHERE project_id = %s"
        params: list[Any] = [self.project]
        if needle:
            sql += (
                f" AND (strpos({fold}(title), %s) > 0 OR strpos({fold}(body), %s) > 0"
                f" OR strpos({fold}(ref), %s) > 0 OR strpos({fold}(meta::text), %s) > 0)"
            )
            value = needle.lower() if ignore_case else needle
            params += [value] * 4
        with self.conn.cursor() as cur:
            for row in cur.execute(sql, params):
                yield row[0], [row[1], row[2], row[3], row[4], row[5]]

    def _insert_deny(self, entry: dict[str, Any], stamp: int) -> None:
        self.conn.execute(
            "INSERT INTO deny_list(key, project_id, kind, ignore_case, spec, author, created_at)"
            " VALUES (%s, %s, %s, %s, %s::jsonb, %s, %s) ON CONFLICT (key) DO NOTHING",
            (
                entry["key"],
                self.project,
                entry["kind"],
                bool(entry.get("ignore_case", False)),
                json.dumps(entry["spec"]),
                self.member,
                stamp,
            ),
        )

    def record_deny(self, entry: dict[str, Any]) -> None:
        """Record ENTRY in the team deny-list, committed before the forget looks for its value: under the
        deny-list's lock, exclusively, so it waits for the push batches being written (each holds the lock
        shared to its commit: the search that follows finds their rows) and every batch after it reads the
        entry (_screened keeps what it matches out)."""
        with self.conn.transaction():
            self.conn.execute("SELECT pg_advisory_xact_lock(%s, hashtext(%s))", (_DENY_LOCK, self.project))
            self._insert_deny(entry, now_ms())

    def word_texts(self) -> list[tuple[str, str]]:
        """(id, change words) of this project's nodes that have some (a regex `forget --team` looks at them)."""
        rows = self.conn.execute(
            "SELECT id, words FROM nodes WHERE project_id = %s AND words <> ''", (self.project,)
        ).fetchall()
        return [(str(r[0]), str(r[1])) for r in rows]

    def commits_with_words(self, shas: Sequence[str]) -> list[str]:
        """Ids of this project's commits SHAS (full shas, their refs) that have change words."""
        if not shas:
            return []
        rows = self.conn.execute(
            "SELECT id FROM nodes WHERE project_id = %s AND kind = 'git_commit' AND words <> '' AND ref = ANY(%s)",
            (self.project, list(shas)),
        ).fetchall()
        return [str(r[0]) for r in rows]

    def forget(
        self, entry: dict[str, Any], ids: Sequence[str], words: str = "", word_ids: Sequence[str] = ()
    ) -> int:
        """Record ENTRY in the team deny-list (record_deny did, for `forget --team`), delete IDS (and their
        links), empty the change words of the nodes whose words hold WORDS (a literal value lower-cased, as
        they are: inside a longer word too) and of the nodes WORD_IDS (a regex's: their term counts follow),
        remember the deleted as forgotten and write an audit row (who, when, how many, the entry's key; never
        the value). One transaction."""
        stamp = now_ms()
        self._counts.clear()
        with self.conn.transaction():
            self._insert_deny(entry, stamp)
            if words:
                self.conn.execute(
                    "UPDATE nodes SET words = '' WHERE project_id = %s AND words <> '' AND strpos(words, %s) > 0",
                    (self.project, words),
                )
            if word_ids:
                self.conn.execute(
                    "UPDATE nodes SET words = '' WHERE project_id = %s AND words <> '' AND id = ANY(%s)",
                    (self.project, sorted(set(word_ids))),
                )
            removed = 0
            if ids:
                doomed = sorted(ids)
                self.conn.execute(
                    "DELETE FROM links WHERE from_id = ANY(%s) OR to_id = ANY(%s)", (doomed, doomed)
                )
                removed = len(
                    self.conn.execute(
                        "DELETE FROM nodes WHERE id = ANY(%s) AND project_id = %s RETURNING 1",
                        (doomed, self.project),
                    ).fetchall()
                )
                self.conn.execute(
                    "INSERT INTO forgotten(id, entry_key, at) SELECT i, %s, %s FROM unnest(%s::text[]) i"
                    " ON CONFLICT (id) DO NOTHING",
                    (entry["key"], stamp, doomed),
                )
            self.conn.execute(
                "INSERT INTO audit(at, member, action, project_id, detail) VALUES (%s, %s, 'forget', %s, %s)",
                (
                    stamp,
                    self.member,
                    self.project,
                    json.dumps({"entry": entry["key"][:16], "kind": entry["kind"], "removed": removed}),
                ),
            )
        return removed

    def audit_log(self) -> list[dict[str, Any]]:
        rows = self.conn.execute(
            "SELECT at, member, action, detail::text FROM audit WHERE project_id = %s ORDER BY id",
            (self.project,),
        ).fetchall()
        return [{"at": r[0], "member": r[1], "action": r[2], "detail": json.loads(r[3])} for r in rows]

    # ---------------------------------------------------------------------------------------- status

    def status(self) -> dict[str, Any]:
        """What `team status` shows: nodes by kind, members and their last push, deny entries, size. Vector
        generations a push left empty are reclaimed first (a role that may not delete rows leaves them)."""
        try:
            self.reclaim_empty_generations()
        except driver().errors.InsufficientPrivilege:
            pass
        kinds = dict(
            self.conn.execute(
                "SELECT kind, count(*) FROM nodes WHERE project_id = %s GROUP BY kind ORDER BY kind",
                (self.project,),
            ).fetchall()
        )
        # recorded: the nodes the team holds that this member pushed first (recorded_by); pushed: every node
        # their pushes sent, those the team held already (a clone's shared history) and re-sends included.
        members = [
            {"member": r[0], "last_push": int(r[1]), "recorded": int(r[3]), "pushed": int(r[2])}
            for r in self.conn.execute(
                "SELECT m.member, m.last_push, m.pushed, coalesce(c.n, 0) FROM members m LEFT JOIN"
                " (SELECT author, count(*) AS n FROM nodes WHERE project_id = %s GROUP BY author) c"
                " ON c.author = m.member WHERE m.project_id = %s ORDER BY m.member",
                (self.project, self.project),
            ).fetchall()
        ]
        deny = self.conn.execute(
            "SELECT count(*) FROM deny_list WHERE project_id = %s", (self.project,)
        ).fetchone()
        vectors = self.conn.execute(
            "SELECT count(*) FROM nodes WHERE project_id = %s AND emb IS NOT NULL", (self.project,)
        ).fetchone()
        size = self.conn.execute("SELECT pg_database_size(current_database())").fetchone()
        memory = self.conn.execute(
            "SELECT coalesce(sum(pg_relation_size(c.oid)), 0), pg_size_bytes(current_setting('shared_buffers'))"
            " FROM pg_class c WHERE c.relkind = 'i' AND c.relname LIKE 'nodes\\_emb\\_%%'"
        ).fetchone()
        return {
            "schema_version": self.schema_version(),
            "nodes": sum(int(v) for v in kinds.values()),
            "by_kind": {k: int(v) for k, v in kinds.items()},
            "vectors": int(vectors[0]),
            "vector_index": self.vector_index_ready(),
            "vector_generations": len(self._generations()),
            "members": members,
            "deny_entries": int(deny[0]),
            "database_bytes": int(size[0]),
            "vector_index_bytes": int(memory[0]),
            "shared_buffers_bytes": int(memory[1]),
        }

    def table_bytes(self, table: str = "nodes") -> int:
        """TABLE's total size on disk (heap, TOAST and every index): the benchmark's storage figure."""
        if table not in ("nodes", "term_df"):
            raise ValueError(f"not a team store table: {table}")
        row = self.conn.execute("SELECT pg_total_relation_size(%s::regclass)", (table,)).fetchone()
        return int(row[0])


if TYPE_CHECKING:
    from nexusmem.store.interface import SearchStore

    def _implements(store: TeamStore) -> SearchStore:
        """mypy checks here that TeamStore implements the SearchStore Protocol."""
        return store


__all__ = [
    "BULK_MIN",
    "LATEST",
    "PUSH_COLUMNS",
    "PushCounts",
    "TeamStore",
    "TeamUnavailable",
    "connect",
    "migrate",
]
