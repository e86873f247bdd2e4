#!/usr/bin/env python3
"""Token-saving benchmark against any synced repository: NexusMem's packed answer vs reading the files.

    python benchmarks/token_savings.py REPO [--queries 40] [--doc-queries N] [--budget 2000] [--no-vectors]
        [--details]

REPO must already be synced (`nexusmem -C REPO sync`); the store is opened read-only and nothing is written.
A clone synced by benchmarks/eval_real.py --work DIR is one: DIR/<name>-<pin12>/repo (the real
repositories of docs/evaluation.md section 3, at their pins).

Query set, chosen mechanically (never by hand):
- commits: every non-merge fix/feat/perf commit whose message body is longer than 120 characters, oldest
  first, sampled at even spacing; the query is the subject stripped of its conventional prefix
  ("fix(cache): key renders by locale" → "key renders by locale"). In a repository with fewer such
  commits than queries asked for (most real repositories), every non-merge commit with such a body
  qualifies instead, and the query is its subject (a conventional prefix still stripped);
- docs: every doc section whose text gives a reason (because, the reason, trade-off, instead of, rationale,
  why — the markers of the doc signal in nexusmem/signals.py), in path/line order, sampled at even spacing; the query
  is the heading text.
Sampling runs over distinct query texts (each asked once, at its first occurrence). The labelled target of a query is the commit (or doc section) it came
from, together with every other commit (section) that yields the very same query text: the text cannot tell
them apart, so any of them answers it.

For each query: the tokens of the packed answer (`tokens_used` of query.run at the budget) against two
baselines built from the files the packed items themselves touch (node_files of every packed item):
- files:   the current content of each of those files that exists in the working tree;
- history: `git log -p -- FILE` for each of them (what reading the file's history instead would cost).
Tokens ≈ characters / 4 for everything (nexusmem.retrieve.pack.estimate_tokens). Reported: the median
per-query saving and the aggregate saving (1 − Σ packed / Σ baseline) for both baselines, over the queries
whose items touch at least one file, and how often the packed answer contains the labelled target — a
saving that loses the answer is not a saving.

Limits (read before quoting a number):
- Graded against NexusMem's own ranking, not an outside answer key: the file set is whichever files the
  packed items touch. It measures what packing saves once retrieval has picked its candidates; only the
  target column checks that the pick was right, and only for the one item each query came from.
- Commit subjects and doc headings are easy queries: the words of the target are in the question. A
  person's real question shares fewer words (benchmarks/eval_retrieval.py measures that case).
- The history baseline grows with the age of the files; on an old repository it is huge and the saving
  approaches 100% whatever the ranking does. The files baseline is the conservative one.
- Items that touch no file (most shell commands) add to the packed tokens but nothing to either baseline,
  which understates the saving; a query none of whose items touches a file is left out of the savings.
"""

from __future__ import annotations

import argparse
import re
import statistics
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

CONVENTIONAL = re.compile(r"^(fix|feat|perf)(\([^)]*\))?!?:\s*(.+)$", re.IGNORECASE)
RATIONALE = re.compile(r"\b(because|the reason|trade-off|instead of|rationale|why)\b", re.IGNORECASE)
MIN_BODY = 120


@dataclass
class Probe:
    text: str
    source: str  # "commit" | "doc"
    targets: set[str] = field(default_factory=set)  # node ids that answer it


@dataclass
class Measured:
    probe: Probe
    packed: int
    files: list[str]
    file_tokens: int
    history_tokens: int
    hit: bool


def git(repo: Path, *args: str) -> str:
    proc = subprocess.run(
        ["git", "-c", "core.quotepath=off", *args], cwd=repo, capture_output=True, check=True
    )
    return proc.stdout.decode("utf-8", "replace")


def even_sample(items: list[Any], n: int) -> list[Any]:
    """N items at even spacing over ITEMS (all of them when there are no more than N)."""
    if n <= 0 or not items:
        return []
    if len(items) <= n:
        return list(items)
    step = len(items) / n
    return [items[int(i * step)] for i in range(n)]


def first_of_each(texts: list[str]) -> list[str]:
    """TEXTS without case-insensitive repeats, each at its first occurrence."""
    seen: set[str] = set()
    out: list[str] = []
    for text in texts:
        if text.lower() not in seen:
            seen.add(text.lower())
            out.append(text)
    return out


def commit_probes(repo: Path, store: Any, n: int) -> list[Probe]:
    """Evenly spaced well-explained fix/feat/perf commits, oldest first; query = subject without prefix."""
    out = git(repo, "log", "--no-merges", "--reverse", "--format=%H%x1f%s%x1f%b%x1e")
    candidates: list[tuple[str, str]] = []
    every: list[tuple[str, str]] = []  # every well-explained commit, conventional prefix stripped
    for record in out.split("\x1e"):
        parts = record.strip("\n").split("\x1f")
        if len(parts) != 3:
            continue
        sha, subject, body = parts
        if len(body.strip()) <= MIN_BODY:
            continue
        match = CONVENTIONAL.match(subject.strip())
        if match:
            candidates.append((sha, match.group(3).strip()))
        every.append((sha, match.group(3).strip() if match else subject.strip()))
    if len(candidates) < n:
        # A repository that uses conventional fix/feat/perf subjects rarely or never (httpx has one
        # well-explained one in 1,500 commits): every well-explained commit qualifies.
        candidates = every
    by_sha = {node.ref: node.id for node in store.iter_nodes("git_commit")}
    same_text: dict[str, set[str]] = {}
    for sha, text in candidates:
        if sha in by_sha:
            same_text.setdefault(text.lower(), set()).add(by_sha[sha])
    # Sampled over distinct query texts (first occurrence), so that N queries are N different questions.
    unique = first_of_each([text for sha, text in candidates if sha in by_sha])
    return [Probe(text, "commit", same_text[text.lower()]) for text in even_sample(unique, n)]


def doc_probes(store: Any, n: int) -> list[Probe]:
    """Evenly spaced rationale-bearing doc sections (path, line order); query = the heading text."""
    sections = [
        node
        for node in store.iter_nodes("doc_section")
        if node.meta.get("level", 0) > 0 and RATIONALE.search(node.body)
    ]
    sections.sort(key=lambda node: (node.meta.get("path", ""), node.meta.get("line", 0)))
    same_text: dict[str, set[str]] = {}
    for node in sections:
        same_text.setdefault(str(node.meta["heading"]).lower(), set()).add(node.id)
    headings = first_of_each([str(node.meta["heading"]) for node in sections])
    return [Probe(h, "doc", same_text[h.lower()]) for h in even_sample(headings, n)]


class Baselines:
    """Token costs of a file's current content and of its `git log -p`, computed once per file."""

    def __init__(self, repo: Path) -> None:
        self.repo = repo
        self.current: dict[str, int] = {}
        self.history: dict[str, int] = {}

    def file_tokens(self, path: str) -> int:
        from nexusmem.retrieve.pack import estimate_tokens

        if path not in self.current:
            full = self.repo / path
            if full.is_file():
                self.current[path] = estimate_tokens(full.read_bytes().decode("utf-8", "replace"))
            else:
                self.current[path] = 0  # deleted or renamed since: nothing to read now
        return self.current[path]

    def history_tokens(self, path: str) -> int:
        from nexusmem.retrieve.pack import estimate_tokens

        if path not in self.history:
            text = git(self.repo, "log", "-p", "--no-color", "--no-ext-diff", "--", path)
            self.history[path] = estimate_tokens(text) if text else 0
        return self.history[path]


def measure(repo: Path, probes: list[Probe], *, budget: int, vectors: bool) -> list[Measured]:
    from nexusmem import project
    from nexusmem.retrieve import query

    proj = project.load(repo)
    base = Baselines(proj.root)
    rows: list[Measured] = []
    with proj.open_store(readonly=True) as store:
        for probe in probes:
            result = query.run(store, probe.text, project=proj.id, budget=budget, vectors=vectors)
            files = sorted({path for item in result.items for path in store.files_of(item.id)})
            rows.append(
                Measured(
                    probe,
                    result.tokens_used,
                    files,
                    sum(base.file_tokens(p) for p in files),
                    sum(base.history_tokens(p) for p in files),
                    any(item.id in probe.targets for item in result.items),
                )
            )
    return rows


def select(repo: Path, n_commits: int, n_docs: int) -> list[Probe]:
    from nexusmem import project

    proj = project.load(repo)
    with proj.open_store(readonly=True) as store:
        return commit_probes(proj.root, store, n_commits) + doc_probes(store, n_docs)


def summarise(rows: list[Measured]) -> dict[str, float]:
    """Medians and aggregates over ROWS (savings only over the rows with a non-empty baseline)."""
    out: dict[str, float] = {"queries": len(rows)}
    if not rows:
        return out
    out["hit"] = sum(r.hit for r in rows) / len(rows)
    out["packed_median"] = statistics.median(r.packed for r in rows)
    for name, attr in (("files", "file_tokens"), ("history", "history_tokens")):
        usable = [r for r in rows if getattr(r, attr) > 0]
        out[f"{name}_n"] = len(usable)
        if not usable:
            continue
        base = [getattr(r, attr) for r in usable]
        out[f"{name}_median"] = statistics.median(base)
        out[f"{name}_saving_median"] = statistics.median(1 - r.packed / b for r, b in zip(usable, base))
        out[f"{name}_saving_aggregate"] = 1 - sum(r.packed for r in usable) / sum(base)
        # The same, counting only the queries whose packed answer kept its target.
        kept = [(r, b) for r, b in zip(usable, base) if r.hit]
        if kept:
            out[f"{name}_saving_aggregate_hit"] = 1 - sum(r.packed for r, _ in kept) / sum(b for _, b in kept)
    return out


def table(rows: list[Measured]) -> str:
    def pct(value: float | None) -> str:
        return "–" if value is None else f"{100 * value:.1f}%"

    head = (
        "| queries | target packed | packed tokens (median) | files: baseline median | files: saving median"
        " | files: saving aggregate | history: baseline median | history: saving median"
        " | history: saving aggregate |"
    )
    lines = [head, "|" + "---|" * 9]
    groups = [("all", rows), ("commit", [r for r in rows if r.probe.source == "commit"])]
    groups.append(("doc", [r for r in rows if r.probe.source == "doc"]))
    for label, group in groups:
        s = summarise(group)
        if not group:
            continue
        lines.append(
            f"| {label} {len(group)} (with files: {s.get('files_n', 0):.0f}) | {pct(s['hit'])}"
            f" | {s['packed_median']:.0f} | {s.get('files_median', 0):,.0f}"
            f" | {pct(s.get('files_saving_median'))} | {pct(s.get('files_saving_aggregate'))}"
            f" | {s.get('history_median', 0):,.0f} | {pct(s.get('history_saving_median'))}"
            f" | {pct(s.get('history_saving_aggregate'))} |"
        )
    return "\n".join(lines)


def details(rows: list[Measured]) -> str:
    lines = [
        "| source | query | hit | packed | files | file tokens | history tokens |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r.probe.source} | {r.probe.text} | {'yes' if r.hit else 'no'} | {r.packed} | {len(r.files)}"
            f" | {r.file_tokens:,} | {r.history_tokens:,} |"
        )
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("repo", type=Path)
    ap.add_argument("--queries", type=int, default=40, help="commit queries (default 40)")
    ap.add_argument("--doc-queries", type=int, help="doc-heading queries (default: a quarter of --queries)")
    ap.add_argument("--budget", type=int, default=2000)
    ap.add_argument(
        "--no-vectors", action="store_true", help="BM25 only (default: hybrid when vectors exist)"
    )
    ap.add_argument("--details", action="store_true", help="also print one row per query")
    args = ap.parse_args()
    n_docs = args.queries // 4 if args.doc_queries is None else args.doc_queries
    probes = select(args.repo, args.queries, n_docs)
    if not probes:
        sys.exit("no query candidates: no well-explained fix/feat/perf commit and no rationale-bearing doc")
    rows = measure(args.repo, probes, budget=args.budget, vectors=not args.no_vectors)
    mode = "BM25 only" if args.no_vectors else "hybrid (BM25 only when the store holds no vectors)"
    print(f"{args.repo}: {len(rows)} queries, budget {args.budget}, {mode}\n")
    print(table(rows))
    all_stats = summarise(rows)
    if "files_saving_aggregate_hit" in all_stats:
        print(
            f"\nCounting only the queries whose target was packed: aggregate saving "
            f"{100 * all_stats['files_saving_aggregate_hit']:.1f}% (files), "
            f"{100 * all_stats.get('history_saving_aggregate_hit', 0):.1f}% (history)."
        )
    if args.details:
        print()
        print(details(rows))


if __name__ == "__main__":
    main()
