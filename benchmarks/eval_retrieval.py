#!/usr/bin/env python3
"""Labelled retrieval evaluation: MRR, Recall@1 and Recall@5 for BM25-only, vector-only and hybrid search.

    python benchmarks/eval_retrieval.py [--dir DIR] [--commits 1500] [--shell-lines 5000] [--seed 7] [--json]

What it builds (in DIR, a fresh temp dir by default):
- a synthetic history from benchmarks/eval/make_history.py (a ruff-formatted copy of the shared bench
  generator, vendored so that the evaluation runs from a clone alone): conventional commits over a fixed
  vocabulary of areas × things, Markdown docs, a shell log — the haystack;
- the needles of benchmarks/eval/planted.json written on top of it: commits (git commit with fixed
  author/committer dates, counted back from the generated HEAD so that every run lays them out alike), doc
  files committed the same way, and failed shell commands appended to $NEXUSMEM_HOME/shell-history.jsonl in
  the shell-log line of docs/contracts.md §2 with a cwd inside the repository;
- one `sync` (sources, then the built-in wordllama embedding pass).

Then every query of benchmarks/eval/queries.json is run three ways, and graded on the full ranked
candidate list (the order `ranked_candidates` returns, after the rank priors), not only on the packed items:
- bm25:   ranked_candidates(vectors=False) — the word index (plus the CJK trigram list, empty for English);
- vector: vector.neighbours alone, passed through the same scoring (similarity → relevance × priors; a
          helper here, not a library hook); the raw k-NN order is shown too, as a diagnostic;
- hybrid: ranked_candidates() — what `nexusmem query` uses.
"packed" is the share of queries whose answer is among the items query.run packs into the default budget.

Labels are stable handles resolved after the sync, never ids or shas (make_history dates its commits from
the wall clock, so shas change between runs): a commit is "the git_commit whose title is S" (its own code_diff
nodes count as the same answer: they are the same change), a doc section is its ref "path#heading", a shell
command its ref (the command text). Each query is "lexical" (reuses words of its answer) or "paraphrase";
a paraphrase may share at most one significant word (search.terms) with its answer's stored text — the script
checks this against the store and reports every shared word, so leakage is visible.

Limits: one generated haystack with one vocabulary; the needles were written by the same people as the
queries (though before any result was seen); the built-in 256-d static embedder is what is measured, not
Ollama; shell commands rarely share words with a natural-language question, so their paraphrases are hard
for every mode.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
EVAL_DIR = HERE / "eval"
DAY = 86_400
PLANTED_AUTHOR = {
    "GIT_AUTHOR_NAME": "Planted Dev",
    "GIT_AUTHOR_EMAIL": "planted@example.com",
    "GIT_COMMITTER_NAME": "Planted Dev",
    "GIT_COMMITTER_EMAIL": "planted@example.com",
}
MODES = ("bm25", "vector", "vector-raw", "hybrid")


@dataclass
class Query:
    text: str
    type: str  # "lexical" | "paraphrase"
    answers: list[dict[str, str]]


@dataclass
class Graded:
    query: Query
    # mode -> 1-based rank of the first correct node in that mode's ranked list (None: not in the list)
    ranks: dict[str, int | None] = field(default_factory=dict)
    # mode -> fraction of the query's answers found in the top 1 / top 5
    recall: dict[str, tuple[float, float]] = field(default_factory=dict)
    packed: dict[str, bool] = field(default_factory=dict)
    shared_words: list[str] = field(default_factory=list)


@dataclass
class Report:
    graded: list[Graded]
    nodes: int
    seconds_build: float
    seconds_sync: float
    seconds_eval: float
    sweep: list[tuple[float, float, float, float]] = field(default_factory=list)

    def metrics(self, mode: str, kind: str | None = None) -> dict[str, float]:
        rows = [g for g in self.graded if kind is None or g.query.type == kind]
        if not rows:
            return {"n": 0, "mrr": 0.0, "r1": 0.0, "r5": 0.0, "packed": 0.0}
        ranks = [g.ranks[mode] for g in rows]
        out = {
            "n": len(rows),
            "mrr": sum(1.0 / r for r in ranks if r) / len(rows),
            "r1": sum(g.recall[mode][0] for g in rows) / len(rows),
            "r5": sum(g.recall[mode][1] for g in rows) / len(rows),
        }
        if mode in rows[0].packed:
            out["packed"] = sum(g.packed[mode] for g in rows) / len(rows)
        return out

    def table(self) -> str:
        lines = [
            "| mode | queries | MRR | R@1 | R@5 | packed@2000 |",
            "|---|---|---|---|---|---|",
        ]
        for kind in (None, "lexical", "paraphrase"):
            for mode in MODES:
                m = self.metrics(mode, kind)
                packed = f"{m['packed']:.2f}" if "packed" in m else "–"
                label = f"{mode} ({kind or 'all'})"
                lines.append(
                    f"| {label} | {m['n']:.0f} | {m['mrr']:.3f} | {m['r1']:.2f} | {m['r5']:.2f} | {packed} |"
                )
        return "\n".join(lines)


def load_queries(path: Path = EVAL_DIR / "queries.json") -> list[Query]:
    data = json.loads(path.read_text(encoding="utf-8"))
    return [Query(q["q"], q["type"], q["answers"]) for q in data["queries"]]


def load_planted(path: Path = EVAL_DIR / "planted.json") -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


# --- building the history ------------------------------------------------------------------------------


def _git(repo: Path, *args: str, env: dict[str, str] | None = None) -> str:
    full = dict(os.environ)  # the caller's HOME / GIT_CONFIG_GLOBAL (tests point them at temp dirs)
    full.update(env or {})
    proc = subprocess.run(["git", *args], cwd=repo, env=full, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"git {' '.join(args)} failed in {repo}: {proc.stderr.strip()}")
    return proc.stdout


def plant(repo: Path, shell_log: Path, planted: dict[str, Any]) -> None:
    """Write the planted commits, doc files and shell failures into REPO and SHELL_LOG."""
    head_ts = int(_git(repo, "log", "-1", "--format=%ct").strip())
    events: list[tuple[int, int, dict[str, str], str]] = []  # (days_ago, order, files to append, message)
    for n, c in enumerate(planted["commits"]):
        events.append((c["days_ago"], n, c["files"], f"{c['subject']}\n\n{c['body']}\n"))
    for n, d in enumerate(planted["docs"]):
        events.append((d["days_ago"], 1000 + n, {d["path"]: d["text"]}, d["subject"] + "\n"))
    # Oldest first, so the planted commits' own order matches their dates.
    for days_ago, order, files, message in sorted(events, key=lambda e: (-e[0], e[1])):
        for rel, text in files.items():
            path = repo / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            old = path.read_text(encoding="utf-8") if path.exists() else ""
            sep = "" if not old or old.endswith("\n") else "\n"
            path.write_text(old + sep + text.rstrip("\n") + "\n", encoding="utf-8")
        _git(repo, "add", "--", *files)
        # A fixed time for each commit (minutes apart on one day keep two events of one day ordered).
        when = f"{head_ts - days_ago * DAY + order % 1000 * 60} +0000"
        env = {**PLANTED_AUTHOR, "GIT_AUTHOR_DATE": when, "GIT_COMMITTER_DATE": when}
        _git(repo, "-c", "commit.gpgsign=false", "commit", "-q", "--no-verify", "-m", message, env=env)
    root = str(repo.resolve())
    with shell_log.open("a", encoding="utf-8") as fh:
        for n, s in enumerate(planted["shell"]):
            cwd = root if s["cwd"] == "." else str(Path(root) / s["cwd"])
            ts = (head_ts - s["days_ago"] * DAY + n * 60) * 1000
            line = {
                "ts": ts,
                "cwd": cwd,
                "exit": s["exit"],
                "duration_ms": 4200,
                "command": s["command"],
                "shell": "bash",
                "session": "planted",
                "v": 1,
            }
            fh.write(json.dumps(line) + "\n")
    os.chmod(shell_log, 0o600)


def build(workdir: Path, *, commits: int, shell_lines: int, seed: int) -> Path:
    """Generate the haystack under WORKDIR, plant the needles, and return the repository path.

    The shell log goes to $NEXUSMEM_HOME/shell-history.jsonl (the caller points NEXUSMEM_HOME somewhere
    private: the user's real log must never be read or written).
    """
    from nexusmem import paths

    history = workdir / "history"
    subprocess.run(
        [
            sys.executable,
            str(EVAL_DIR / "make_history.py"),
            str(history),
            "--commits",
            str(commits),
            "--shell-lines",
            str(shell_lines),
            "--seed",
            str(seed),
        ],
        check=True,
        capture_output=True,
        env=dict(os.environ),
    )
    log = paths.user_dir() / "shell-history.jsonl"
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_bytes((history / "shell-history.jsonl").read_bytes())
    repo = history / "repo"
    plant(repo, log, load_planted())
    return repo


# --- ranking the three ways ----------------------------------------------------------------------------


def vector_ranked_ids(store: Any, text: str) -> list[str]:
    """The vector list alone, scored and ranked exactly as query.ranked_candidates scores it (similarity
    above the floor → relevance × priors), ids best first. Used for the vector-only mode, which the
    library has no switch for."""
    from nexusmem.retrieve import fuse, query, vector

    near = vector.neighbours(store, text)
    found = fuse.evidence([], near.hits, near.floor)
    # Relevance is w·semantic for every node here, so the weight does not change the order; 1 keeps it plain.
    settings = query.rank.Settings(vector_weight=1.0)
    return [node.id for node, _ in query.score_fused(store, found, settings=settings)]


def mode_rankers(store: Any) -> dict[str, Callable[[str], list[str]]]:
    from nexusmem.retrieve import query, vector

    def bm25(text: str) -> list[str]:
        return [n.id for n, _ in query.ranked_candidates(store, text, vectors=False)[0]]

    def hybrid(text: str) -> list[str]:
        return [n.id for n, _ in query.ranked_candidates(store, text)[0]]

    def vector_only(text: str) -> list[str]:
        return vector_ranked_ids(store, text)

    def vector_raw(text: str) -> list[str]:
        return vector.knn(store, text)

    return {"bm25": bm25, "vector": vector_only, "vector-raw": vector_raw, "hybrid": hybrid}


# --- labels ---------------------------------------------------------------------------------------------


def resolve(store: Any, queries: list[Query]) -> list[list[set[str]]]:
    """For each query, one set of acceptable node ids per labelled answer. Fails on a label that matches
    nothing (a renamed needle must not silently turn into a miss)."""
    by_title: dict[str, list[Any]] = {}
    for node in store.iter_nodes("git_commit"):
        by_title.setdefault(node.title, []).append(node)
    diffs: dict[str, set[str]] = {}
    for node in store.iter_nodes("code_diff"):
        diffs.setdefault(node.ref.split(":", 1)[0], set()).add(node.id)
    by_ref: dict[tuple[str, str], set[str]] = {}
    for kind in ("doc_section", "shell_command"):
        for node in store.iter_nodes(kind):
            by_ref.setdefault((kind, node.ref), set()).add(node.id)
    out: list[list[set[str]]] = []
    for q in queries:
        units: list[set[str]] = []
        for label in q.answers:
            if "commit" in label:
                found = by_title.get(label["commit"], [])
                if len(found) != 1:
                    raise LookupError(f"{len(found)} commits titled {label['commit']!r}")
                units.append({found[0].id} | diffs.get(found[0].ref, set()))
            else:
                kind = "doc_section" if "doc" in label else "shell_command"
                ids = by_ref.get((kind, label.get("doc") or label["shell"]), set())
                if not ids:
                    raise LookupError(f"no {kind} with ref {label}")
                units.append(ids)
        out.append(units)
    return out


def shared_words(store: Any, text: str, units: list[set[str]]) -> list[str]:
    """Significant words of TEXT that also occur in the stored title or body of any acceptable answer."""
    from nexusmem.retrieve import search

    ids = sorted(set().union(*units))
    answer_words: set[str] = set()
    for node in store.get_many(ids).values():
        answer_words.update(search.terms(node.title + "\n" + node.body))
    return [w for w in search.terms(text) if w in answer_words]


# --- the evaluation -------------------------------------------------------------------------------------


def evaluate(store: Any, project_id: str, queries: list[Query]) -> list[Graded]:
    from nexusmem.retrieve import query as query_mod

    labels = resolve(store, queries)
    rankers = mode_rankers(store)
    graded: list[Graded] = []
    for q, units in zip(queries, labels):
        g = Graded(q, shared_words=shared_words(store, q.text, units))
        correct = set().union(*units)
        for mode, ranker in rankers.items():
            ids = ranker(q.text)
            g.ranks[mode] = next((i for i, node_id in enumerate(ids, start=1) if node_id in correct), None)
            top1, top5 = set(ids[:1]), set(ids[:5])
            g.recall[mode] = (
                sum(bool(u & top1) for u in units) / len(units),
                sum(bool(u & top5) for u in units) / len(units),
            )
        for mode, vectors in (("bm25", False), ("hybrid", True)):
            result = query_mod.run(store, q.text, project=project_id, vectors=vectors)
            g.packed[mode] = any(item.id in correct for item in result.items)
        graded.append(g)
    return graded


def sweep_min_similarity(
    store: Any, queries: list[Query], values: Sequence[float] = (0.25, 0.2, 0.15, 0.1, 0.0)
) -> list[tuple[float, float, float, float]]:
    """(cut-off, vector-raw MRR, hybrid MRR, hybrid R@5) for each k-NN similarity cut-off in VALUES.

    A diagnostic, not a tuning loop: it shows how much of the vector list the provider's noise floor drops
    and what that costs or buys the fused ranking. The cut-off is set on the cached provider object for
    the duration of the sweep and put back after.
    """
    from nexusmem import embed
    from nexusmem.retrieve import query, vector

    identity = embed.Identity.from_json(store.vector_identity_json())
    provider = embed.for_identity(identity) if identity else None
    if provider is None:
        return []
    labels = resolve(store, queries)
    original = provider.min_similarity
    out = []
    try:
        for value in values:
            provider.min_similarity = value
            raw_rr, hyb_rr, hyb_r5 = 0.0, 0.0, 0.0
            for q, units in zip(queries, labels):
                correct = set().union(*units)
                raw = vector.knn(store, q.text)
                hyb = [n.id for n, _ in query.ranked_candidates(store, q.text)[0]]
                raw_rr += next((1 / i for i, x in enumerate(raw, 1) if x in correct), 0.0)
                hyb_rr += next((1 / i for i, x in enumerate(hyb, 1) if x in correct), 0.0)
                hyb_r5 += sum(bool(u & set(hyb[:5])) for u in units) / len(units)
            n = len(queries)
            out.append((value, raw_rr / n, hyb_rr / n, hyb_r5 / n))
    finally:
        provider.min_similarity = original
    return out


def run_eval(
    workdir: Path, *, commits: int = 1500, shell_lines: int = 5000, seed: int = 7, sweep: bool = False
) -> Report:
    """Build, sync and evaluate under WORKDIR ($NEXUSMEM_HOME must already point somewhere private)."""
    from nexusmem import project
    from nexusmem.sync import sync

    t0 = time.perf_counter()
    repo = build(workdir, commits=commits, shell_lines=shell_lines, seed=seed)
    t1 = time.perf_counter()
    project.init(repo)
    # Suggestions from a local model are not under test, and would try to reach Ollama.
    config_path = repo / ".nexusmem" / "config.json"
    config = json.loads(config_path.read_text(encoding="utf-8"))
    config.setdefault("contradictions", {})["autoCheck"] = False
    config_path.write_text(json.dumps(config, indent=2), encoding="utf-8")
    sync(repo)
    t2 = time.perf_counter()
    proj = project.load(repo)
    with proj.open_store() as store:
        graded = evaluate(store, proj.id, load_queries())
        nodes = store.node_count()
        t3 = time.perf_counter()
        swept = sweep_min_similarity(store, load_queries()) if sweep else []
    return Report(graded, nodes, t1 - t0, t2 - t1, t3 - t2, swept)


def details(report: Report) -> str:
    lines = ["| type | query | shared words | bm25 | vector | hybrid |", "|---|---|---|---|---|---|"]
    for g in report.graded:
        ranks = [str(g.ranks[m] or "–") for m in ("bm25", "vector", "hybrid")]
        shared = ", ".join(g.shared_words) or "–"
        lines.append(f"| {g.query.type} | {g.query.text} | {shared} | " + " | ".join(ranks) + " |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dir", type=Path, help="work directory (default: a fresh temp dir, removed after)")
    ap.add_argument("--commits", type=int, default=1500)
    ap.add_argument("--shell-lines", type=int, default=5000)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--details", action="store_true", help="also print every query's rank per mode")
    ap.add_argument(
        "--sweep", action="store_true", help="also sweep the k-NN similarity cut-off (diagnostic)"
    )
    ap.add_argument("--json", action="store_true", help="print the metrics as JSON instead of a table")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="nexusmem-eval-") as tmp:
        workdir = args.dir or Path(tmp)
        workdir.mkdir(parents=True, exist_ok=True)
        # A private user dir and HOME: the evaluation must neither read the user's shell log (or scrape
        # their history files) nor register its repository in their projects.json.
        os.environ["NEXUSMEM_HOME"] = str(workdir / "nexusmem-home")
        os.environ["HOME"] = str(workdir / "home")
        (workdir / "home").mkdir(exist_ok=True)
        report = run_eval(
            workdir, commits=args.commits, shell_lines=args.shell_lines, seed=args.seed, sweep=args.sweep
        )
    if args.json:
        out = {
            mode: {kind or "all": report.metrics(mode, kind) for kind in (None, "lexical", "paraphrase")}
            for mode in MODES
        }
        print(json.dumps(out, indent=2))
        return
    print(
        f"{len(report.graded)} queries, {report.nodes} nodes; build {report.seconds_build:.1f}s, "
        f"sync {report.seconds_sync:.1f}s, evaluation {report.seconds_eval:.1f}s\n"
    )
    print(report.table())
    if report.sweep:
        print("\n| k-NN cut-off | vector-raw MRR | hybrid MRR | hybrid R@5 |\n|---|---|---|---|")
        for value, raw, hyb, r5 in report.sweep:
            print(f"| {value:.2f} | {raw:.3f} | {hyb:.3f} | {r5:.2f} |")
    if args.details:
        print()
        print(details(report))


if __name__ == "__main__":
    main()
