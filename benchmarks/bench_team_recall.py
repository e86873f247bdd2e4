"""Why HNSW misses on a team store of real memories: the database `bench_team.py --from-store ...
--pgdata DIR` left in DIR, examined on the same server (read-only but for its own `recall_dedup` table).

    python benchmarks/bench_team_recall.py --pgdata DIR --database bench_real_XXXXXXXX [--project ID]

Prints, for the shared questions (QUERIES, embedded as a question is):
- how the nodes are made (kinds, distinct titles, distinct vectors, the most repeated titles);
- per question, tie-aware recall@10 at each --ef-search (distance of the exact and the found 10th);
- which kinds the exact neighbours HNSW missed are, and the recall when the k-NN is merged with an exact
  scan of the doc sections (--merge-kind);
- --dedup M,EF_CONSTRUCTION (repeatable): the recall of an HNSW index over one row per distinct vector
  (built with those parameters in a table `recall_dedup`): whether duplicates are what hides neighbours;
"""

from __future__ import annotations

import argparse
import collections
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_team import start_server  # noqa: E402

from common import QUERIES  # noqa: E402


def tie_recall(hits: list[tuple[str, float]], exact: list[tuple[str, float]]) -> int:
    tenth = exact[-1][1] if exact else 0.0
    return sum(1 for _, d in hits[:10] if d <= tenth + 1e-6)


def set_ef(team: Any, ef: int) -> None:
    """Search both graphs at EF (0: at the depths search_vectors derives from k)."""
    team.fixed_ef_search = ef


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pgdata", required=True)
    ap.add_argument("--database", required=True)
    ap.add_argument("--project", default="example.com/team/app")
    ap.add_argument("--ef-search", default="40,100,200,1000")
    ap.add_argument("--merge-kind", default="doc_section")
    ap.add_argument("--dedup", action="append", default=[], metavar="M,EF_CONSTRUCTION")
    ap.add_argument("--skip-basic", action="store_true", help="only the --dedup part")
    args = ap.parse_args()

    from nexusmem import embed
    from nexusmem.store.team import TeamStore, vector_text

    server = start_server(args.pgdata)
    try:
        team = TeamStore.open(
            server.url_for(args.database), args.project, "probe@example.com", "probe", create=True
        )
        conn = team.conn
        conn.autocommit = True
        provider = embed.make("builtin")
        assert provider is not None
        blobs = {q: embed.to_blob(provider.embed([q])[0]) for q in QUERIES}
        exact = {q: team.exact_vectors(b, 10) for q, b in blobs.items()}
        print(
            "kinds (nodes, distinct titles):",
            conn.execute(
                "SELECT kind, count(*), count(DISTINCT title) FROM nodes GROUP BY kind ORDER BY 2 DESC"
            ).fetchall(),
        )
        print(
            "distinct vectors:",
            conn.execute("SELECT count(DISTINCT emb) FROM nodes WHERE emb IS NOT NULL").fetchone()[0],
        )
        print(
            "most repeated titles:",
            conn.execute(
                "SELECT title, count(*) FROM nodes GROUP BY title ORDER BY 2 DESC LIMIT 3"
            ).fetchall(),
        )
        for ef in [] if args.skip_basic else [int(v) for v in args.ef_search.split(",")]:
            set_ef(team, ef)
            total = 0
            for q, b in blobs.items():
                hits = team.search_vectors(b, 10)
                got = tie_recall(hits, exact[q])
                total += got
                if got < 10:
                    print(
                        f"  ef_search {ef}: {got}/10, exact 10th at {exact[q][-1][1]:.3f},"
                        f" found 10th at {hits[-1][1] if hits else float('nan'):.3f}: {q}"
                    )
            print(f"ef_search {ef}: questions' recall@10 (ties) {total / (10 * len(blobs)):.3f}")
        for k in () if args.skip_basic else (10, 200):
            set_ef(team, 0)
            alone = merged = 0
            missed: collections.Counter[str] = collections.Counter()
            for q, b in blobs.items():
                hits = team.search_vectors(b, k)[:10]
                alone += tie_recall(hits, exact[q])
                found = {i for i, _ in hits}
                for node_id, _ in exact[q]:
                    if node_id not in found:
                        missed[
                            conn.execute("SELECT kind FROM nodes WHERE id = %s", (node_id,)).fetchone()[0]
                        ] += 1
                conn.execute("SET enable_indexscan = off")  # an exact scan of the kind, not the graph
                extra = conn.execute(
                    "SELECT id, emb <=> %s::vector AS d FROM nodes WHERE project_id = %s AND kind = %s"
                    " AND emb IS NOT NULL ORDER BY d LIMIT 10",
                    (vector_text(b), args.project, args.merge_kind),
                ).fetchall()
                conn.execute("SET enable_indexscan = on")
                both = sorted(
                    {**dict(hits), **{r[0]: float(r[1]) for r in extra}}.items(), key=lambda t: t[1]
                )
                merged += tie_recall(both, exact[q])
            n = 10 * len(blobs)
            print(
                f"k-NN of {k}: recall@10 (ties) {alone / n:.3f}; merged with an exact scan of {args.merge_kind}:"
                f" {merged / n:.3f}; exact neighbours missed by kind {dict(missed)}"
            )
        for spec in args.dedup:
            m, efc = (int(v) for v in spec.split(","))
            if not conn.execute("SELECT 1 FROM pg_class WHERE relname = 'recall_dedup'").fetchone():
                conn.execute(
                    "CREATE TABLE recall_dedup AS SELECT DISTINCT ON (emb) id, emb FROM nodes"
                    " WHERE emb IS NOT NULL ORDER BY emb, id"
                )
            conn.execute("DROP INDEX IF EXISTS recall_dedup_emb")
            conn.execute("SET maintenance_work_mem = '512MB'")
            t0 = time.perf_counter()
            conn.execute(
                f"CREATE INDEX recall_dedup_emb ON recall_dedup USING hnsw (emb vector_cosine_ops)"
                f" WITH (m = {m}, ef_construction = {efc})"
            )
            conn.execute("ANALYZE recall_dedup")
            built = time.perf_counter() - t0
            for ef in (40, 100, 200):
                conn.execute("SELECT set_config('hnsw.ef_search', %s, false)", (str(ef),))
                team._ef_search = ef  # what this connection now has (search_vectors sets its own)
                total = 0
                for b in blobs.values():
                    v = vector_text(b)
                    conn.execute("SET enable_indexscan = off")
                    ex = [
                        float(r[0])
                        for r in conn.execute(
                            "SELECT emb <=> %s::vector AS d FROM recall_dedup ORDER BY d LIMIT 10", (v,)
                        ).fetchall()
                    ]
                    conn.execute("SET enable_indexscan = on")
                    ann = [
                        float(r[0])
                        for r in conn.execute(
                            "SELECT emb <=> %s::vector FROM recall_dedup ORDER BY emb <=> %s::vector LIMIT 10",
                            (v, v),
                        ).fetchall()
                    ]
                    total += sum(1 for d in ann if d <= ex[-1] + 1e-6)
                print(
                    f"distinct vectors only, m {m}, ef_construction {efc} (built in {built:.1f} s):"
                    f" ef_search {ef}: recall@10 (ties) {total / (10 * len(blobs)):.3f}"
                )
        team.close()
    finally:
        server.server.cleanup()


if __name__ == "__main__":
    main()
