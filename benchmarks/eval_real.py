#!/usr/bin/env python3
"""Labelled retrieval evaluation on real public repositories (and on recent work in a generated history).

    python benchmarks/eval_real.py --repo httpx=/path/to/httpx --repo cobra=/path/to/cobra ...
        [--repo generated] [--set dev|heldout|fresh|all] [--work DIR] [--reuse] [--details] [--json OUT]
        [--check] [--no-pack] [--questions DIR] [--embed-model DIR] [--vector-weight W]

The repositories are not in the project. Each `--repo NAME=PATH` names a git directory (a clone or a bare
mirror such as /work/.mirror/encode+httpx/repo) that holds the pinned commit of the question file
benchmarks/eval/real/<set>/<NAME>.json. For each pin the script:
1. clones PATH into the work dir (a local clone: hard links, seconds) and checks out the pin detached, with
   the pin's full history; every ref that is not an ancestor of the pin is deleted, so nothing newer leaks;
2. runs a real `init` + `sync` through the library (git, diffs, docs, failure links, embeddings with the
   built-in provider; the Ollama contradiction check off), with HOME and NEXUSMEM_HOME pointed at private
   dirs under the work dir, and prints how long the sync took;
3. asks every question four ways and grades the ranked lists (up to search.CANDIDATES deep).
`--repo generated` (no path) adds the recent-work questions of benchmarks/eval/real/recent.json over a
history the script builds itself (below). `--reuse` (with `--work`) skips clone + sync when a synced store
for that pin is already there, so that a ranking change can be re-measured in seconds; it is not the
default, because a store synced by older indexing code measures that older code.

Question files (format: the project's EVAL_FORMAT, plus the `none` kind below): {"repo", "url", "commit"
(the 40-hex pin), "set", "written_by", "questions": [{"id", "kind", "q", "targets", "note"}]}. Kinds:
- symptom: a why/when question about an old commit in the words of someone who hit the problem;
- code:    the telling words are only in the code change;
- doc:     answered by a doc section at the pin (target `path#Heading`);
- multi:   several commits are defensible, all listed;
- none:    about something that never happened in that repository, `targets: []`. Graded apart: how often
           the top result is returned anyway (hybrid), and how often the result carries a "no strong match"
           flag (QueryResult.weak; not measured with --no-pack, which skips the packed answer). The flag
           rate on answerable questions is shown next to it: a flag that fires on everything is no flag.
Targets: a full commit sha (hit by its git_commit node or any of its code_diff nodes `sha:path`), `sha:path`
(hit by that diff node or by its commit node), `path#Heading` (the doc_section with that ref). A question
is hit at rank r when any of its targets is at rank r. Every target is validated on load, before any
sync: the commit is an ancestor of the pin (`git merge-base --is-ancestor`), `sha:path` is a path that
commit touched, `path#Heading` is a non-empty section of that file at the pin (the docs collector's own
splitter), or in a release-notes file a release heading whose text is in its subsections (`## 2.0.0` over
`### Features`); after the sync, a doc target is hit by its doc_section, or, in a release-notes file, by the
changelog entries under that heading (stored as "CHANGELOG.md#0.11.0 › Migration Guide": hit by a target
`CHANGELOG.md#Migration Guide` or `CHANGELOG.md#0.11.0`); one with neither
is reported (e.g. a file the docs config excludes) and counts as a miss. A bad target stops the run with an error naming the question.
`--check` runs only that validation, and prints for every symptom question the significant words it
shares with its target commits' subject + body (light stemming), so that writers can see leaks.

Modes, graded on the full ranked list:
- baseline: a naive script, independent of NexusMem: an in-memory SQLite FTS5 table (unicode61) of
            `git log` subject + body of every commit reachable from the pin; the query is the OR of the
            question's words minus a fixed stopword list, ranked by bm25(). It can only hit commits.
- bm25:     ranked_candidates(vectors=False);
- hybrid:   ranked_candidates() — what `nexusmem query` runs;
- packed:   whether a target is among the items query.run packs at the default budget (2000), for bm25
            and hybrid.
The calls into the ranking code live in one adapter (`LibraryCalls`), so that a signature change is a
one-place edit.

Generated recent work (`--repo generated`): benchmarks/eval/make_history.py (1,500 commits, 5,000
shell-log lines, seed 7, spread over two years up to now) plus the commits and shell commands planted by
recent.json at times counted back from the wall clock ("26h" = 26 hours ago), shell lines in the
shell-log contract with a cwd inside the repository. Targets are `commit:<subject>`, `shell:<command>`
(every planted invocation of it) or `shell:<command>@<ago>` (the one planted at that time).

Output: MRR, R@1, R@5 per repository and kind and overall (real repositories only; `generated` is its
own row), every mode side by side in one Markdown table. `--details` lists every question with the rank
of its first target per mode; `--json OUT` writes every number and every rank.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
QUESTIONS_DIR = HERE / "eval" / "real"
RECENT_FILE = QUESTIONS_DIR / "recent.json"
# dev: tuned on; heldout: written apart, seen after tuning; fresh: new repositories (sinatra, gson, zod),
# written by a helper who never saw a ranking result. `all` reads whichever of them a repository has.
SETS = (
    "dev",
    "heldout",
    "fresh",
    "fresh2",
    "fresh3",
    "fresh4",
    "fresh5",
    "fresh6",
    "fresh7",
    "fresh8",
    "fresh9",
    "fresh10",
    "fresh11",
    "fresh12",
    "fresh13",
    "fresh14",
    "fresh15",
    "fresh16",
    "fresh17",
    "fresh18",
    "fresh19",
    "fresh20",
    "fresh21",
    "fresh22",
    "fresh23",
    "fresh24",
    "fresh25",
    "fresh26",
    "fresh27",
    "fresh28",
    "fresh29",
    "fresh30",
    "fresh31",
    "fresh32",
    "fresh33",
    "fresh34",
    "fresh35",
    "fresh36",
    "fresh37",
    "fresh38",
    "fresh39",
    "fresh40",
    "fresh41",
    "fresh42",
    "fresh43",
    "fresh44",
    "fresh45",
    "fresh46",
    "fresh47",
    "fresh48",
    "fresh49",
    "fresh50",
    "fresh51",
    "fresh52",
    "fresh53",
    "fresh54",
    "fresh55",
    "fresh56",
    "fresh57",
    "fresh58",
    "fresh59",
    "fresh60",
    "fresh61",
    "fresh62",
    "fresh63",
    "fresh64",
    "fresh65",
    "fresh66",
    "fresh67",
    "fresh68",
    "fresh69",
    "fresh70",
    "fresh71",
    "fresh72",
    "fresh73",
    "fresh74",
    "fresh75",
    "fresh76",
    "fresh77",
    "fresh78",
    "fresh79",
    "fresh80",
    "fresh81",
    "fresh82",
    "fresh83",
    "fresh84",
    "fresh85",
    "fresh86",
    "fresh87",
    "fresh88",
    "fresh89",
    "fresh90",
    "fresh91",
    "fresh92",
    "fresh93",
    "fresh94",
    "fresh95",
    "fresh96",
    "fresh97",
    "fresh98",
    "fresh99",
    "dev2",
    "removal",
    "rst",
    "adoc",
)
KINDS = ("symptom", "code", "doc", "multi", "none", "recent")
MODES = ("baseline", "bm25", "hybrid")
PACKED_MODES = ("bm25", "hybrid")
GENERATED = "generated"
_SHA = re.compile(r"^[0-9a-f]{40}$")
_WORD = re.compile(r"\w+", re.UNICODE)
# The baseline's stopwords: fixed here on purpose, so that the bar does not move when the library's do.
_BASELINE_STOPWORDS_TEXT = """
a about after again all also an and any are as at be been before being but by can could did do does doing
done for from get gets got had has have how i if in into is it its just me my no not of on once only or our
out over so some still than that the their them then there these they this those to too under up us very
was we were what when where which while who whom why will with would you your
"""
BASELINE_STOPWORDS = frozenset(_BASELINE_STOPWORDS_TEXT.split())


class EvalError(Exception):
    """A question file, a target or a repository that cannot be evaluated: the message says which."""


# --------------------------------------------------------------------------------------- question files


@dataclass
class Question:
    id: str
    kind: str
    q: str
    targets: list[str]
    note: str = ""
    repo: str = ""  # the --repo name it belongs to
    file: str = ""


@dataclass
class QuestionFile:
    name: str  # the --repo name (the file's stem)
    path: Path
    commit: str
    set: str
    url: str
    questions: list[Question]


def load_file(path: Path, name: str | None = None) -> QuestionFile:
    """Parse and shape-check one question file (targets are checked against git by validate())."""
    where = str(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise EvalError(f"{where}: not readable JSON ({exc})") from None
    if not isinstance(data, dict) or not isinstance(data.get("questions"), list):
        raise EvalError(f"{where}: expected an object with a 'questions' list")
    commit = str(data.get("commit", ""))
    if not _SHA.match(commit):
        raise EvalError(f"{where}: 'commit' must be the full 40-hex pin, got {commit!r}")
    name = name or path.stem
    out: list[Question] = []
    for i, raw in enumerate(data["questions"]):
        qid = str(raw.get("id") or f"#{i + 1}") if isinstance(raw, dict) else f"#{i + 1}"
        if not isinstance(raw, dict):
            raise EvalError(f"{where}: question {qid} is not an object")
        kind, text, targets = raw.get("kind"), raw.get("q"), raw.get("targets")
        if kind not in KINDS or kind == "recent":
            raise EvalError(f"{where}: question {qid}: kind {kind!r} is not one of {', '.join(KINDS[:5])}")
        if not isinstance(text, str) or not text.strip():
            raise EvalError(f"{where}: question {qid}: 'q' is empty")
        if not isinstance(targets, list) or not all(isinstance(t, str) for t in targets):
            raise EvalError(f"{where}: question {qid}: 'targets' must be a list of strings")
        if (kind == "none") != (not targets):
            need = "no targets (targets: [])" if kind == "none" else "at least one target"
            raise EvalError(f"{where}: question {qid}: kind {kind} needs {need}")
        out.append(Question(qid, kind, text.strip(), list(targets), str(raw.get("note", "")), name, where))
    return QuestionFile(name, path, commit, str(data.get("set", "")), str(data.get("url", "")), out)


def target_kind(target: str) -> str:
    """'commit', 'diff' or 'doc' for a target string (EvalError when it is none of them)."""
    if _SHA.match(target):
        return "commit"
    if len(target) > 41 and _SHA.match(target[:40]) and target[40] == ":":
        return "diff"
    if "#" in target and not target.startswith("#") and not target.endswith("#"):
        return "doc"
    raise EvalError(f"target {target!r} is not a full sha, sha:path or path#Heading")


# ------------------------------------------------------------------------------------------------- git


def git(gitdir: Path, *args: str, ok: Iterable[int] = (0,)) -> tuple[int, str]:
    proc = subprocess.run(
        ["git", "-c", "core.quotepath=off", *args],
        cwd=gitdir,
        capture_output=True,
        check=False,
    )
    if proc.returncode not in tuple(ok):
        err = proc.stderr.decode("utf-8", "replace").strip()
        raise EvalError(f"git {' '.join(args)} failed in {gitdir}: {err}")
    return proc.returncode, proc.stdout.decode("utf-8", "replace")


class PinnedRepo:
    """Read-only questions about one git dir at one pin (cached: a question file asks many of them)."""

    def __init__(self, gitdir: Path, pin: str) -> None:
        self.gitdir = gitdir
        self.pin = pin
        self._touched: dict[str, set[str]] = {}
        self._sections: dict[str, set[str] | None] = {}
        code, _ = git(gitdir, "cat-file", "-e", f"{pin}^{{commit}}", ok=(0, 1, 128))
        if code != 0:
            raise EvalError(f"pin {pin} is not in {gitdir}: fetch it (git -C {gitdir} fetch origin {pin})")

    def exists(self, sha: str) -> bool:
        code, _ = git(self.gitdir, "cat-file", "-e", f"{sha}^{{commit}}", ok=(0, 1, 128))
        return code == 0

    def is_ancestor(self, sha: str) -> bool:
        code, _ = git(self.gitdir, "merge-base", "--is-ancestor", sha, self.pin, ok=(0, 1, 128))
        return code == 0

    def touched(self, sha: str) -> set[str]:
        if sha not in self._touched:
            _, out = git(self.gitdir, "diff-tree", "--no-commit-id", "--name-only", "-r", "--root", "-m", sha)
            self._touched[sha] = {line for line in out.splitlines() if line}
        return self._touched[sha]

    def headings(self, path: str) -> set[str] | None:
        """Headings of the non-empty sections of PATH at the pin, as the docs collector cuts them; in release
        notes, also each release heading whose text is all in its subsections (`## 2.0.0` over `### Features`
        and `### Fixes`): the changelog entries under it are stored as "2.0.0 › Features", and hit such a
        target (RefIndex.entry_sections)."""
        if path not in self._sections:
            code, text = git(self.gitdir, "show", f"{self.pin}:{path}", ok=(0, 128))
            if code != 0:
                self._sections[path] = None
            else:
                from nexusmem.sources.changelog import split_entries
                from nexusmem.sources.docs import doc_text, is_release_notes, sections_of

                # The collector reads a file's bytes through doc_text (CRLF and lone CR made LF) first.
                text = doc_text(text.encode("utf-8"))
                found = {s.heading for s in sections_of(text, path.rsplit("/", 1)[-1])}
                if is_release_notes(path):
                    found |= {release_of(e.version) for e in split_entries(text, path) if " › " in e.version}
                self._sections[path] = found
        return self._sections[path]

    def message(self, sha: str) -> str:
        return git(self.gitdir, "log", "-1", "--format=%s%n%b", sha)[1]


def release_of(version: str) -> str:
    """The release heading of a changelog entry's VERSION ("2.0.0" of "2.0.0 › Features")."""
    return version.split(" › ", 1)[0]


def validate(qf: QuestionFile, repo: PinnedRepo) -> list[str]:
    """Check every target of QF at the pin; raise EvalError naming the first bad question. Returns notes."""
    notes: list[str] = []
    for q in qf.questions:
        for target in q.targets:
            try:
                kind = target_kind(target)
            except EvalError as exc:
                raise EvalError(f"{qf.path}: question {q.id}: {exc}") from None
            if kind in ("commit", "diff"):
                sha = target[:40]
                if not repo.exists(sha):
                    raise EvalError(f"{qf.path}: question {q.id}: commit {sha} is not in {repo.gitdir}")
                if not repo.is_ancestor(sha):
                    raise EvalError(
                        f"{qf.path}: question {q.id}: commit {sha} is not reachable from the pin {qf.commit}"
                    )
                if kind == "diff" and target[41:] not in repo.touched(sha):
                    raise EvalError(
                        f"{qf.path}: question {q.id}: commit {sha[:12]} does not touch {target[41:]!r}"
                    )
            else:
                path, _, heading = target.partition("#")
                headings = repo.headings(path)
                if headings is None:
                    raise EvalError(
                        f"{qf.path}: question {q.id}: no file {path!r} at the pin {qf.commit[:12]}"
                    )
                if heading not in headings:
                    near = sorted(
                        h for h in headings if heading.lower() in h.lower() or h.lower() in heading.lower()
                    )
                    hint = f" (close: {', '.join(map(repr, near[:3]))})" if near else ""
                    raise EvalError(
                        f"{qf.path}: question {q.id}: no non-empty section {heading!r} in {path} at the pin{hint}"
                    )
    ids = [q.id for q in qf.questions]
    dupes = sorted({i for i in ids if ids.count(i) > 1})
    if dupes:
        raise EvalError(f"{qf.path}: duplicate question ids: {', '.join(dupes)}")
    return notes


def _stem(word: str) -> str:
    """A crude suffix strip, enough to see 'hangs' and 'hanging' leak 'hang'."""
    for suffix in ("ing", "ed", "es", "s"):
        if len(word) > len(suffix) + 2 and word.endswith(suffix):
            return word[: -len(suffix)]
    return word


def significant(text: str) -> list[str]:
    words = [w.lower() for w in _WORD.findall(text)]
    return list(dict.fromkeys(w for w in words if len(w) > 2 and w not in BASELINE_STOPWORDS))


def shared_words(question: str, message: str) -> list[str]:
    stems = {_stem(w) for w in significant(message)}
    return [w for w in significant(question) if _stem(w) in stems]


# ------------------------------------------------------------------------------------------- baseline


class Baseline:
    """The naive bar: SQLite FTS5 over every commit message at the pin, OR of the words, bm25 order."""

    def __init__(self, gitdir: Path, pin: str) -> None:
        _, out = git(gitdir, "log", "--format=%H%x1f%s%n%b%x1e", pin)
        self.db = sqlite3.connect(":memory:")
        self.db.execute("CREATE VIRTUAL TABLE m USING fts5(sha UNINDEXED, text)")
        rows = []
        for record in out.split("\x1e"):
            sha, _, text = record.strip("\n").partition("\x1f")
            if _SHA.match(sha):
                rows.append((sha, text))
        self.db.executemany("INSERT INTO m VALUES (?, ?)", rows)
        self.commits = len(rows)

    def ranked(self, text: str, limit: int = 200) -> list[str]:
        words = [w for w in (w.lower() for w in _WORD.findall(text)) if w not in BASELINE_STOPWORDS]
        if not words:
            return []
        expr = " OR ".join('"' + w.replace('"', '""') + '"' for w in dict.fromkeys(words))
        rows = self.db.execute(
            "SELECT sha FROM m WHERE m MATCH ? ORDER BY bm25(m), sha LIMIT ?", (expr, limit)
        ).fetchall()
        return [r[0] for r in rows]


# ----------------------------------------------------------------------------------- library adapter


@dataclass
class Hit:
    """One ranked node, as much as grading needs."""

    id: str
    kind: str
    ref: str


class LibraryCalls:
    """Every call into NexusMem's ranking, in one place (the ranking code is changing: edit only here)."""

    def __init__(self, store: Any, project_id: str, vector_weight: float | None = None) -> None:
        from nexusmem.retrieve import rank

        self.store = store
        self.project_id = project_id
        self.settings = rank.DEFAULT if vector_weight is None else rank.Settings(vector_weight=vector_weight)

    def ranked(self, text: str, *, vectors: bool) -> list[Hit]:
        from nexusmem.retrieve import query

        scored, _counts = query.ranked_candidates(self.store, text, vectors=vectors, settings=self.settings)
        return [Hit(node.id, node.kind, node.ref) for node, _score in scored]

    def packed(self, text: str, *, vectors: bool) -> tuple[list[Hit], bool | None]:
        """The items query.run packs at the default budget, and its "no strong match" flag (None: the
        library has no such flag)."""
        from nexusmem.retrieve import query

        result = query.run(self.store, text, project=self.project_id, vectors=vectors, settings=self.settings)
        flag = getattr(result, "no_strong_match", getattr(result, "weak", None))
        hits = [Hit(item.id, item.kind, item.ref) for item in result.items]
        # A doc section packed once for several files holding its text names the others (`also_in`): the
        # text is in the answer, under each of those refs.
        hits += [Hit("", item.kind, ref) for item in result.items for ref in getattr(item, "also_in", [])]
        return hits, None if flag is None else bool(flag)


# ------------------------------------------------------------------------------------------- grading


@dataclass
class Graded:
    question: Question
    ranks: dict[str, int | None] = field(default_factory=dict)  # mode -> 1-based rank of first target
    packed: dict[str, bool] = field(default_factory=dict)
    flagged: bool | None = None  # the hybrid result's "no strong match" flag
    top_returned: bool = False  # hybrid ranked anything at all
    folded: int = 0  # doc sections the hybrid answer packed once for another file's copy (`also_in`)
    unresolved: list[str] = field(default_factory=list)  # targets with no node in the store


@dataclass
class RepoRun:
    name: str
    pin: str
    graded: list[Graded]
    sync_seconds: float | None  # None: reused
    clone_seconds: float
    nodes: int
    root: Path
    reused: bool = False
    notes: list[str] = field(default_factory=list)


def metric_block(rows: list[Graded]) -> dict[str, Any]:
    """MRR, R@1, R@5 per mode and packed per packing mode over ROWS (answerable questions only)."""
    n = len(rows)
    out: dict[str, Any] = {"n": n}
    for mode in MODES:
        ranks = [g.ranks.get(mode) for g in rows]
        out[mode] = {
            "mrr": sum(1.0 / r for r in ranks if r) / n if n else 0.0,
            "r1": sum(1 for r in ranks if r and r <= 1) / n if n else 0.0,
            "r5": sum(1 for r in ranks if r and r <= 5) / n if n else 0.0,
        }
    for mode in PACKED_MODES:
        done = [g.packed[mode] for g in rows if mode in g.packed]  # empty with --no-pack
        out[mode]["packed"] = sum(done) / len(done) if done else None
    flags = [g.flagged for g in rows if g.flagged is not None]
    out["flagged"] = sum(flags) / len(flags) if flags else None
    return out


def none_block(rows: list[Graded]) -> dict[str, Any]:
    flags = [g.flagged for g in rows if g.flagged is not None]
    return {
        "n": len(rows),
        "top_returned": sum(g.top_returned for g in rows) / len(rows) if rows else 0.0,
        "flagged": sum(flags) / len(flags) if flags else None,
    }


def first_rank(ids: list[str], correct: set[str]) -> int | None:
    return next((i for i, node_id in enumerate(ids, start=1) if node_id in correct), None)


def grade(
    questions: list[Question],
    calls: LibraryCalls,
    resolve: Callable[[Question], tuple[set[str], list[str]]],
    baseline: Callable[[str], list[str]],
    *,
    pack: bool = True,
) -> list[Graded]:
    """Ask every question every way. RESOLVE gives (acceptable node ids, unresolved targets); BASELINE
    maps a question to the node ids its commits have (commit nodes)."""
    out: list[Graded] = []
    for q in questions:
        correct, unresolved = resolve(q)
        g = Graded(q, unresolved=unresolved)
        g.ranks["baseline"] = first_rank(baseline(q.q), correct)
        for mode, vectors in (("bm25", False), ("hybrid", True)):
            hits = calls.ranked(q.q, vectors=vectors)
            g.ranks[mode] = first_rank([h.id for h in hits], correct)
            if mode == "hybrid":
                g.top_returned = bool(hits)
            if not pack:
                continue
            items, flag = calls.packed(q.q, vectors=vectors)
            g.packed[mode] = any(h.id in correct or (not h.id and h.ref in q.targets) for h in items)
            if mode == "hybrid":
                g.flagged = flag
                g.folded = sum(1 for h in items if not h.id)
        out.append(g)
    return out


class RefIndex:
    """Node ids by ref for the kinds targets name, built once per store."""

    def __init__(self, store: Any) -> None:
        self.commits: dict[str, str] = {}
        self.diffs: dict[str, str] = {}  # "sha:path" -> id
        self.diffs_of: dict[str, set[str]] = {}  # sha -> ids
        self.docs: dict[str, set[str]] = {}
        self.entry_sections: dict[str, set[str]] = {}  # "path#Heading" -> changelog entries under it
        self.shell: dict[str, list[tuple[int, str]]] = {}  # command -> [(ts, id)]
        self.commit_by_subject: dict[str, list[str]] = {}
        for node in store.iter_nodes("git_commit"):
            self.commits[node.ref] = node.id
            self.commit_by_subject.setdefault(node.title, []).append(node.id)
        for node in store.iter_nodes("code_diff"):
            self.diffs[node.ref] = node.id
            self.diffs_of.setdefault(node.ref.split(":", 1)[0], set()).add(node.id)
        for node in store.iter_nodes("doc_section"):
            self.docs.setdefault(node.ref, set()).add(node.id)
            if node.source == "changelog" and " › " in node.ref:
                # A changelog entry under "### Migration Guide" of "## 0.11.0" is stored as
                # "CHANGELOG.md#0.11.0 › Migration Guide"; a label names the section "CHANGELOG.md#Migration Guide",
                # or the release, "CHANGELOG.md#0.11.0" (all of its entries).
                path, _, trail = node.ref.partition("#")
                self.entry_sections.setdefault(f"{path}#{trail.rsplit(' › ', 1)[-1]}", set()).add(node.id)
                self.entry_sections.setdefault(f"{path}#{release_of(trail)}", set()).add(node.id)
        for node in store.iter_nodes("shell_command"):
            self.shell.setdefault(node.ref, []).append((node.ts, node.id))

    def resolve(self, q: Question) -> tuple[set[str], list[str]]:
        ids: set[str] = set()
        missing: list[str] = []
        for target in q.targets:
            kind = target_kind(target)
            found: set[str] = set()
            sha = target[:40]
            if kind == "commit":
                found = {self.commits[sha]} if sha in self.commits else set()
                found |= self.diffs_of.get(sha, set())
            elif kind == "diff":
                found = {self.commits[sha]} if sha in self.commits else set()
                if target in self.diffs:
                    found.add(self.diffs[target])
            else:
                found = self.docs.get(target, set()) or self.entry_sections.get(target, set())
            if not found:
                missing.append(target)
            ids |= found
        return ids, missing


# ------------------------------------------------------------------------------------- checkout + sync


def private_env(slot: Path) -> None:
    """HOME and NEXUSMEM_HOME under SLOT: the sync must neither scrape the operator's shell history nor
    register the clone in their projects.json."""
    home, nhome = slot / "home", slot / "nexusmem-home"
    home.mkdir(parents=True, exist_ok=True)
    nhome.mkdir(parents=True, exist_ok=True)
    os.environ["HOME"] = str(home)
    os.environ["NEXUSMEM_HOME"] = str(nhome)


def checkout(source: Path, pin: str, dest: Path) -> None:
    """A clone of SOURCE at PIN (detached), holding the pin's history and no ref beyond it."""
    subprocess.run(
        ["git", "clone", "--quiet", "--no-checkout", str(source), str(dest)], check=True, capture_output=True
    )
    git(dest, "-c", "advice.detachedHead=false", "checkout", "--quiet", "--detach", pin)
    # The git source walks HEAD only, but prunes against every ref: no ref may point past the pin.
    git(dest, "remote", "remove", "origin")
    _, refs = git(dest, "for-each-ref", "--format=%(refname)", "refs/heads", "refs/tags")
    _, kept = git(dest, "tag", "--merged", pin)
    keep = {f"refs/tags/{t}" for t in kept.split()}
    doomed = [r for r in refs.split() if r not in keep]
    if doomed:
        proc = subprocess.run(
            ["git", "update-ref", "--no-deref", "--stdin"],
            cwd=dest,
            input="".join(f"delete {r}\n" for r in doomed).encode(),
            capture_output=True,
            check=False,
        )
        if proc.returncode != 0:
            raise EvalError(f"could not drop the refs past the pin in {dest}: {proc.stderr.decode().strip()}")


def init_and_sync(root: Path) -> tuple[float, int]:
    """`nexusmem init` + `sync` (with failure links, as the post-commit hook runs it). Returns (seconds,
    nodes)."""
    from nexusmem import project
    from nexusmem.sync import sync

    project.init(root)
    # Suggestions from a local chat model are not under test, and would try to reach Ollama.
    config_path = root / ".nexusmem" / "config.json"
    config = json.loads(config_path.read_text(encoding="utf-8"))
    config.setdefault("contradictions", {})["autoCheck"] = False
    config_path.write_text(json.dumps(config, indent=2), encoding="utf-8")
    started = time.perf_counter()
    summary = sync(root, link_failures=True)
    return time.perf_counter() - started, summary.total_nodes


def use_local_model(root: Path, model: str, name: str, log: Callable[[str], None]) -> None:
    """Point ROOT's store at the local sentence-transformer MODEL and embed every node with it, through the
    product's own embedding pass (a store already embedded by that model is left as it is)."""
    from nexusmem import project
    from nexusmem.embed.index import embed_pending

    config_path = root / ".nexusmem" / "config.json"
    data = json.loads(config_path.read_text(encoding="utf-8"))
    model = str(Path(model).expanduser().resolve())
    data.setdefault("embedding", {}).update(provider="local", model=model)
    config_path.write_text(json.dumps(data, indent=2), encoding="utf-8")
    proj = project.load(root)
    with proj.open_store() as store:
        summary = embed_pending(store, proj.config, log=lambda m: log(f"{name}: {m}"))
    if summary.unavailable:
        raise EvalError(f"{name}: the local model cannot embed: {summary.unavailable}")
    if summary.embedded:
        rate = summary.embedded / max(summary.seconds, 1e-9)
        log(
            f"{name}: embedded {summary.embedded} nodes with {model} in {summary.seconds:.1f}s ({rate:.1f}/s)"
        )


def code_version() -> str:
    proc = subprocess.run(
        ["git", "describe", "--always", "--dirty"], cwd=HERE, capture_output=True, text=True, check=False
    )
    return proc.stdout.strip() or "unknown"


def _root_in(slot: Path, recorded: Path) -> Path:
    """The store root RECORDED in SLOT's marker, found inside SLOT even when the work dir was copied
    (`cp -a /tmp/a /tmp/b`: the marker still names /tmp/a/..., and grading or re-embedding that original
    would change a store the copy was made to protect)."""
    if slot.name in recorded.parts:
        inside = slot.joinpath(*recorded.parts[recorded.parts.index(slot.name) + 1 :])
        if inside.exists():
            return inside
    return recorded


def prepare(
    name: str, slot: Path, *, reuse: bool, build: Callable[[Path], dict[str, Any]], log: Callable[[str], None]
) -> tuple[Path, dict[str, Any], bool]:
    """SLOT/repo synced (by BUILD, which clones or generates, then syncs); its marker; whether reused."""
    marker = slot / "synced.json"
    if reuse and marker.exists():
        info: dict[str, Any] = json.loads(marker.read_text(encoding="utf-8"))
        private_env(slot)
        log(
            f"{name}: reusing the store synced {info.get('synced_at', '?')} by code {info.get('code', '?')}"
            f" ({info.get('nodes', '?')} nodes; sync took {info.get('sync_seconds', 0):.1f}s)"
        )
        return _root_in(slot, Path(info.get("root", slot / "repo"))), info, True
    if slot.exists():
        shutil.rmtree(slot)
    slot.mkdir(parents=True)
    private_env(slot)
    info = build(slot)
    info.update(synced_at=time.strftime("%Y-%m-%d %H:%M:%S"), code=code_version())
    marker.write_text(json.dumps(info, indent=2), encoding="utf-8")
    return Path(info.get("root", slot / "repo")), info, False


# ---------------------------------------------------------------------------------- generated history


_AGO = re.compile(r"^(\d+)([mhd])$")


def ago_seconds(text: str) -> int:
    m = _AGO.match(text.strip())
    if not m:
        raise EvalError(f"{RECENT_FILE}: 'ago' must look like 45m, 26h or 9d, got {text!r}")
    return int(m.group(1)) * {"m": 60, "h": 3600, "d": 86400}[m.group(2)]


def load_recent(path: Path = RECENT_FILE) -> tuple[dict[str, Any], list[Question]]:
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    planted = data["planted"]
    commands = {(s["command"], s["ago"]) for s in planted["shell"]}
    subjects = {c["subject"] for c in planted["commits"]}
    out: list[Question] = []
    for raw in data["questions"]:
        q = Question(raw["id"], raw["kind"], raw["q"], list(raw["targets"]), raw.get("note", ""), GENERATED)
        q.file = str(path)
        if q.kind not in ("recent", "none") or (q.kind == "none") != (not q.targets):
            raise EvalError(f"{path}: question {q.id}: kind must be recent (with targets) or none (without)")
        for target in q.targets:
            prefix, _, rest = target.partition(":")
            if prefix == "commit" and rest in subjects:
                continue
            if prefix == "shell":
                command, at, ago = rest.rpartition("@") if "@" in rest else (rest, "", "")
                if (at and (command, ago) in commands) or (not at and any(c == command for c, _ in commands)):
                    continue
            raise EvalError(f"{path}: question {q.id}: target {target!r} names nothing planted")
        out.append(q)
    return data, out


# The planted work is dated hours before the run: run earlier in the local day than its work of the last
# SAME_DAY hours is old, some of "today's" falls on yesterday, and the questions about today score lower
# (recent .771 -> .692, recent2 .700 -> .677, recent4 .592 -> .567 at 00:38 UTC, the same on the release
# before; at 02:36 UTC recent .688 and recent2 .626, recent2's newest work going back six hours). The tests
# skip such cases, for the same reason.
SAME_DAY = 12 * 3600


def same_day_seconds(planted: dict[str, Any]) -> int:
    """How long ago the oldest of PLANTED's work (commits and commands) younger than SAME_DAY was done."""
    agos = [ago_seconds(item["ago"]) for kind in ("commits", "shell") for item in planted.get(kind, ())]
    return max((ago for ago in agos if ago < SAME_DAY), default=0)


def early_day_note(now: float, same_day: int) -> str | None:
    """What to tell someone who plants the recent work at NOW (epoch seconds, local time) too early in the
    day for figures comparable with other runs, its work of the last hours going back SAME_DAY seconds;
    None later in the day."""
    at = time.localtime(now)
    since_midnight = at.tm_hour * 3600 + at.tm_min * 60 + at.tm_sec
    if since_midnight >= same_day:
        return None
    hours, minutes = divmod(-(-same_day // 60), 60)
    return (
        f"note: the recent work is planted at {at.tm_hour:02d}:{at.tm_min:02d}, and some of it is dated up to"
        f" {hours:d}h{minutes:02d} before, so some of today's falls on yesterday and its questions score lower"
        f" than later in the day; run it again after {hours:02d}:{minutes:02d} (local time, TZ) for figures"
        " comparable with others"
    )


def build_generated(slot: Path, data: dict[str, Any]) -> dict[str, Any]:
    """make_history.py + the planted recent work in SLOT/repo and SLOT's private shell log; synced."""
    from nexusmem import paths

    hist = data["history"]
    started = time.perf_counter()
    subprocess.run(
        [
            sys.executable,
            str(HERE / "eval" / "make_history.py"),
            str(slot / "history"),
            "--commits",
            str(hist["commits"]),
            "--shell-lines",
            str(hist["shell_lines"]),
            "--seed",
            str(hist["seed"]),
        ],
        check=True,
        capture_output=True,
    )
    # Left where make_history put it: its shell log's cwd values name that path.
    repo = slot / "history" / "repo"
    now = int(time.time())
    early = early_day_note(now, same_day_seconds(data["planted"]))
    if early:
        print(early, file=sys.stderr)
    env = dict(os.environ)
    env.update(
        GIT_AUTHOR_NAME="Recent Dev",
        GIT_AUTHOR_EMAIL="recent@example.com",
        GIT_COMMITTER_NAME="Recent Dev",
        GIT_COMMITTER_EMAIL="recent@example.com",
    )
    planted = data["planted"]
    for c in sorted(planted["commits"], key=lambda c: -ago_seconds(c["ago"])):
        for rel, text in c["files"].items():
            path = repo / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            old = path.read_text(encoding="utf-8") if path.exists() else ""
            path.write_text(old + text.rstrip("\n") + "\n", encoding="utf-8")
        when = f"{now - ago_seconds(c['ago'])} +0000"
        env.update(GIT_AUTHOR_DATE=when, GIT_COMMITTER_DATE=when)
        subprocess.run(["git", "add", "--", *c["files"]], cwd=repo, check=True, env=env)
        message = c["subject"] + ("\n\n" + c["body"] if c.get("body") else "") + "\n"
        subprocess.run(
            ["git", "-c", "commit.gpgsign=false", "commit", "-q", "--no-verify", "-m", message],
            cwd=repo,
            check=True,
            env=env,
        )
    log = paths.user_dir() / "shell-history.jsonl"
    log.parent.mkdir(parents=True, exist_ok=True)
    lines = (slot / "history" / "shell-history.jsonl").read_text(encoding="utf-8").splitlines()
    stamps: dict[str, int] = {}
    root = str(repo.resolve())
    for s in planted["shell"]:
        ts = (now - ago_seconds(s["ago"])) * 1000
        stamps[f"{s['command']}@{s['ago']}"] = ts
        line = {
            "ts": ts,
            "cwd": root,
            "exit": s["exit"],
            "duration_ms": s.get("duration_ms", 3100),
            "command": s["command"],
            "shell": "zsh",
            "session": "recent",
            "v": 1,
        }
        lines.append(json.dumps(line))
    lines.sort(key=lambda text: json.loads(text)["ts"])  # the log is written in time order
    log.write_text("\n".join(lines) + "\n", encoding="utf-8")
    os.chmod(log, 0o600)
    built = time.perf_counter() - started
    seconds, nodes = init_and_sync(repo)
    return {
        "root": str(repo),
        "sync_seconds": seconds,
        "build_seconds": built,
        "nodes": nodes,
        "planted_ts": stamps,
    }


def resolve_generated(
    index: RefIndex, stamps: dict[str, int]
) -> Callable[[Question], tuple[set[str], list[str]]]:
    def resolve(q: Question) -> tuple[set[str], list[str]]:
        ids: set[str] = set()
        missing: list[str] = []
        for target in q.targets:
            prefix, _, rest = target.partition(":")
            found: set[str] = set()
            if prefix == "commit":
                for node_id in index.commit_by_subject.get(rest, []):
                    found.add(node_id)
                    sha = next((r for r, i in index.commits.items() if i == node_id), "")
                    found |= index.diffs_of.get(sha, set())
            else:
                wanted = (
                    {stamps[rest]}
                    if "@" in rest and rest in stamps
                    else {ts for key, ts in stamps.items() if key.rpartition("@")[0] == rest}
                )
                command = rest.rpartition("@")[0] if rest in stamps else rest
                found = {i for ts, i in index.shell.get(command, []) if ts in wanted}
            if not found:
                missing.append(target)
            ids |= found
        return ids, missing

    return resolve


# ------------------------------------------------------------------------------------------ one repo


def run_repo(
    name: str,
    pin: str,
    source: Path | None,
    questions: list[Question],
    work: Path,
    *,
    reuse: bool,
    pack: bool = True,
    log: Callable[[str], None],
    recent: dict[str, Any] | None = None,
    embed_model: str | None = None,
    vector_weight: float | None = None,
) -> RepoRun:
    from nexusmem import project

    if recent is not None:
        # Named after what is planted, so that --reuse never grades an edited file against an old store.
        planted = json.dumps([recent["history"], recent["planted"]], sort_keys=True).encode()
        slot = work / f"{name}-{hashlib.sha256(planted).hexdigest()[:8]}"
    else:
        slot = work / f"{name}-{pin[:12]}"
    clone_seconds = 0.0

    def build(slot_dir: Path) -> dict[str, Any]:
        nonlocal clone_seconds
        if recent is not None:
            return build_generated(slot_dir, recent)
        assert source is not None
        t0 = time.perf_counter()
        checkout(source, pin, slot_dir / "repo")
        clone_seconds = time.perf_counter() - t0
        log(f"{name}: cloned {source} at {pin[:12]} in {clone_seconds:.1f}s; syncing...")
        seconds, nodes = init_and_sync(slot_dir / "repo")
        return {"sync_seconds": seconds, "nodes": nodes, "pin": pin}

    root, info, reused = prepare(name, slot, reuse=reuse, build=build, log=log)
    if not reused:
        extra = f" (history built in {info['build_seconds']:.1f}s)" if "build_seconds" in info else ""
        log(f"{name}: sync took {info['sync_seconds']:.1f}s, {info['nodes']} nodes{extra}")
    if embed_model is not None:
        use_local_model(root, embed_model, name, log)
    proj = project.load(root)
    notes: list[str] = []
    with proj.open_store(readonly=True) as store:
        index = RefIndex(store)
        calls = LibraryCalls(store, proj.id, vector_weight)
        if recent is not None:
            resolver = resolve_generated(index, info["planted_ts"])
            base = Baseline(root, "HEAD")
        else:
            resolver = index.resolve
            base = Baseline(root, pin)

        def baseline(text: str) -> list[str]:
            return [index.commits[sha] for sha in base.ranked(text) if sha in index.commits]

        graded = grade(questions, calls, resolver, baseline, pack=pack)
        nodes = store.node_count()
    for g in graded:
        for target in g.unresolved:
            notes.append(f"{g.question.id}: target {target} has no node in the store (counted as a miss)")
    for note in notes:
        log(f"{name}: warning: {note}")
    return RepoRun(
        name, pin, graded, None if reused else info["sync_seconds"], clone_seconds, nodes, root, reused, notes
    )


# ---------------------------------------------------------------------------------------------- report


def fmt(values: list[float | None], digits: int = 2) -> str:
    def one(v: float | None) -> str:
        if v is None:
            return "–"
        text = f"{v:.{digits}f}"
        return text[1:] if text.startswith("0.") else text

    return " / ".join(one(v) for v in values)


def percent(value: float | None) -> str:
    return "–" if value is None else f"{100 * value:.0f}%"


def tables(runs: list[RepoRun]) -> str:
    head = (
        "| repository | kind | n | MRR baseline / bm25 / hybrid | R@1 baseline / bm25 / hybrid"
        " | R@5 baseline / bm25 / hybrid | packed bm25 / hybrid |"
    )
    lines = [head, "|---|---|---|---|---|---|---|"]

    def row(label: str, kind: str, rows: list[Graded]) -> None:
        if not rows:
            return
        m = metric_block(rows)
        lines.append(
            f"| {label} | {kind} | {m['n']} | {fmt([m[x]['mrr'] for x in MODES], 3)}"
            f" | {fmt([m[x]['r1'] for x in MODES])} | {fmt([m[x]['r5'] for x in MODES])}"
            f" | {fmt([m[x]['packed'] for x in PACKED_MODES])} |"
        )

    for run in runs:
        answerable = [g for g in run.graded if g.question.kind != "none"]
        kinds = sorted({g.question.kind for g in answerable}, key=KINDS.index)
        for kind in kinds:
            row(run.name, kind, [g for g in answerable if g.question.kind == kind])
        if len(kinds) > 1:
            row(run.name, "**all**", answerable)
    real = [g for run in runs if run.name != GENERATED for g in run.graded if g.question.kind != "none"]
    if len({run.name for run in runs if run.name != GENERATED}) > 1:
        for kind in sorted({g.question.kind for g in real}, key=KINDS.index):
            row("**overall**", kind, [g for g in real if g.question.kind == kind])
        row("**overall**", "**all**", real)
    nones = [(run.name, [g for g in run.graded if g.question.kind == "none"]) for run in runs]
    nones = [(name, rows) for name, rows in nones if rows]
    if nones:
        lines += [
            "",
            '| repository | `none` questions | top result returned anyway | flagged "no strong match"'
            " | flagged on answerable questions |",
            "|---|---|---|---|---|",
        ]
        for name, rows in nones:
            b = none_block(rows)
            answerable = [
                g for run in runs if run.name == name for g in run.graded if g.question.kind != "none"
            ]
            fa = metric_block(answerable)["flagged"] if answerable else None
            lines.append(
                f"| {name} | {b['n']} | {percent(b['top_returned'])} | {percent(b['flagged'])} | {percent(fa)} |"
            )
        if all(none_block(rows)["flagged"] is None for _, rows in nones):
            lines.append("\n(no flag measured: it is read from the packed answer, which --no-pack skips)")
    graded = [g for run in runs for g in run.graded if g.packed]
    if graded:
        with_twins = sum(1 for g in graded if g.folded)
        lines.append(
            f"\nHybrid answers holding a doc section packed once for its copies elsewhere: {with_twins} of"
            f" {len(graded)} ({sum(g.folded for g in graded)} copies not packed again)"
        )
    return "\n".join(lines)


def details(runs: list[RepoRun]) -> str:
    lines = [
        "| id | kind | question | baseline | bm25 | hybrid | packed bm25 / hybrid |",
        "|---|---|---|---|---|---|---|",
    ]
    for run in runs:
        for g in run.graded:
            ranks = [str(g.ranks.get(m) or "–") for m in MODES]
            packed = " / ".join(
                "–" if m not in g.packed else "yes" if g.packed[m] else "no" for m in PACKED_MODES
            )
            text = g.question.q if len(g.question.q) <= 90 else g.question.q[:89] + "…"
            lines.append(
                f"| {g.question.id} | {g.question.kind} | {text} | " + " | ".join(ranks) + f" | {packed} |"
            )
    return "\n".join(lines)


def to_json(runs: list[RepoRun]) -> dict[str, Any]:
    out: dict[str, Any] = {"repos": {}, "questions": []}
    for run in runs:
        answerable = [g for g in run.graded if g.question.kind != "none"]
        kinds = sorted({g.question.kind for g in answerable}, key=KINDS.index)
        out["repos"][run.name] = {
            "pin": run.pin,
            "sync_seconds": run.sync_seconds,
            "clone_seconds": run.clone_seconds,
            "reused": run.reused,
            "nodes": run.nodes,
            "all": metric_block(answerable) if answerable else None,
            "kinds": {k: metric_block([g for g in answerable if g.question.kind == k]) for k in kinds},
            "none": none_block([g for g in run.graded if g.question.kind == "none"]),
            "notes": run.notes,
        }
        for g in run.graded:
            out["questions"].append(
                {
                    "repo": run.name,
                    "id": g.question.id,
                    "kind": g.question.kind,
                    "q": g.question.q,
                    "ranks": g.ranks,
                    "packed": g.packed,
                    "flagged": g.flagged,
                    "unresolved": g.unresolved,
                }
            )
    real = [g for run in runs if run.name != GENERATED for g in run.graded if g.question.kind != "none"]
    out["overall"] = metric_block(real) if real else None
    return out


# ------------------------------------------------------------------------------------------------ main


def parse_repos(values: list[str]) -> dict[str, Path | None]:
    out: dict[str, Path | None] = {}
    for value in values:
        name, eq, path = value.partition("=")
        if not eq:
            if name != GENERATED:
                raise EvalError(f"--repo {value}: expected NAME=PATH (or `generated`, which needs no path)")
            out[name] = None
            continue
        gitdir = Path(path).expanduser()
        if not gitdir.exists():
            raise EvalError(f"--repo {value}: {gitdir} does not exist")
        out[name] = gitdir
    return out


def collect(root: Path, sets: tuple[str, ...], repos: dict[str, Path | None]) -> list[QuestionFile]:
    files: list[QuestionFile] = []
    for name in repos:
        if name == GENERATED:
            continue
        found = [root / s / f"{name}.json" for s in sets if (root / s / f"{name}.json").exists()]
        if not found:
            raise EvalError(f"no question file for {name!r} in {', '.join(str(root / s) for s in sets)}")
        files += [load_file(p, name) for p in found]
    return files


def synced_stores_parser(description: str | None) -> argparse.ArgumentParser:
    """The arguments of a script that reads the stores this one synced (eval_above.py,
    eval_translations.py): --repo, --set, --questions, --work."""
    ap = argparse.ArgumentParser(
        description=description, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--repo", action="append", default=[], metavar="NAME=PATH", help="repeatable")
    ap.add_argument("--set", action="append", choices=SETS, help="repeatable (default: dev)")
    ap.add_argument("--questions", type=Path, default=QUESTIONS_DIR)
    ap.add_argument("--work", type=Path, required=True, help="the work dir eval_real.py synced the stores in")
    return ap


def synced_slot(work: Path, qf: QuestionFile) -> Path | None:
    """The slot in WORK (W/<set>/<name>-<pin> or W/<name>-<pin>) holding QF's synced store, or None."""
    for slot in (work / qf.set / f"{qf.name}-{qf.commit[:12]}", work / f"{qf.name}-{qf.commit[:12]}"):
        if (slot / "synced.json").exists():
            return slot
    return None


def synced_stores(args: argparse.Namespace, script: str) -> Iterator[tuple[QuestionFile, Any, RefIndex]]:
    """Each question file ARGS names (--set, --repo, --questions) with the store `eval_real.py --work` synced
    for it, open read-only, and the index that resolves its targets; SCRIPT names the caller in the message
    that stops it when a store is missing, and in the line it prints per file."""
    from nexusmem import project

    for qf in collect(args.questions, tuple(args.set), parse_repos(args.repo)):
        slot = synced_slot(args.work, qf)
        if slot is None:
            raise SystemExit(
                f"{script}: no synced store for {qf.name} under {args.work}: run eval_real.py first"
            )
        root, _info, _ = prepare(qf.name, slot, reuse=True, build=lambda s: {}, log=lambda m: None)
        with project.load(root).open_store(readonly=True) as store:
            yield qf, store, RefIndex(store)
        print(f"{script}: {qf.set}/{qf.name}: {len(qf.questions)} questions", file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repo", action="append", default=[], metavar="NAME=PATH", help="repeatable")
    ap.add_argument("--set", choices=(*SETS, "all"), default="dev")
    ap.add_argument("--questions", type=Path, default=QUESTIONS_DIR, help="root of <set>/<name>.json")
    ap.add_argument("--recent", type=Path, default=RECENT_FILE, help="the generated-history question file")
    ap.add_argument("--work", type=Path, help="work dir (default: a temp dir, removed after)")
    ap.add_argument("--reuse", action="store_true", help="with --work: skip clone+sync of a synced pin")
    ap.add_argument("--check", action="store_true", help="validate the question files only (no sync)")
    ap.add_argument("--details", action="store_true", help="one row per question with its ranks")
    ap.add_argument(
        "--no-pack",
        action="store_true",
        help="skip the packed column (about half the time; for tuning loops)",
    )
    ap.add_argument("--json", type=Path, metavar="OUT", help="write every number to OUT")
    ap.add_argument(
        "--embed-model",
        metavar="DIR",
        help="embed every store with this local sentence-transformer model (provider 'local') before grading;"
        " use a --work dir of its own: the stores are re-embedded in place",
    )
    ap.add_argument("--vector-weight", type=float, help="ranking.vectorWeight for the hybrid modes")
    args = ap.parse_args(argv)

    def log(message: str) -> None:
        print(message, file=sys.stderr, flush=True)

    try:
        if not args.repo:
            raise EvalError("nothing to evaluate: give --repo NAME=PATH (repeatable) and/or --repo generated")
        if args.reuse and not args.work:
            raise EvalError("--reuse needs --work DIR (a temp dir holds nothing to reuse)")
        repos = parse_repos(args.repo)
        sets = SETS if args.set == "all" else (args.set,)
        files = collect(args.questions, sets, repos)
        recent = load_recent(args.recent) if GENERATED in repos else None
        checked: dict[tuple[str, str], PinnedRepo] = {}
        for qf in files:
            source = repos[qf.name]
            assert source is not None
            key = (qf.name, qf.commit)
            if key not in checked:
                checked[key] = PinnedRepo(source, qf.commit)
            validate(qf, checked[key])
            log(f"{qf.path}: {len(qf.questions)} questions, every target valid at {qf.commit[:12]}")
        all_ids = [q.id for qf in files for q in qf.questions]
        dupes = sorted({i for i in all_ids if all_ids.count(i) > 1})
        if dupes:
            raise EvalError(f"question ids used in more than one file: {', '.join(dupes)}")
        if args.check:
            for qf in files:
                repo = checked[(qf.name, qf.commit)]
                for q in qf.questions:
                    if q.kind != "symptom":
                        continue
                    message = "\n".join(repo.message(t[:40]) for t in q.targets if target_kind(t) != "doc")
                    words = shared_words(q.q, message)
                    print(f"{q.id}: shares {len(words)}: {', '.join(words) or '–'}   | {q.q}")
            return 0
        runs: list[RepoRun] = []
        with tempfile.TemporaryDirectory(prefix="nexusmem-eval-real-") as tmp:
            work = (args.work or Path(tmp)).resolve()
            work.mkdir(parents=True, exist_ok=True)
            groups: dict[tuple[str, str], list[Question]] = {}
            for qf in files:
                groups.setdefault((qf.name, qf.commit), []).extend(qf.questions)
            for (name, pin), questions in groups.items():
                runs.append(
                    run_repo(
                        name,
                        pin,
                        repos[name],
                        questions,
                        work,
                        reuse=args.reuse,
                        pack=not args.no_pack,
                        log=log,
                        embed_model=args.embed_model,
                        vector_weight=args.vector_weight,
                    )
                )
            if recent is not None:
                data, questions = recent
                runs.append(
                    run_repo(
                        GENERATED,
                        "",
                        None,
                        questions,
                        work,
                        reuse=args.reuse,
                        pack=not args.no_pack,
                        log=log,
                        recent=data,
                        embed_model=args.embed_model,
                        vector_weight=args.vector_weight,
                    )
                )
            print()
            print(f"sets: {', '.join(sets)}; ranks graded {len(runs)} store(s)")
            for run in runs:
                took = "reused" if run.sync_seconds is None else f"sync {run.sync_seconds:.1f}s"
                print(
                    f"- {run.name} {run.pin[:12] or '(built now)'}: {run.nodes} nodes, {took}, {len(run.graded)} questions"
                )
            print()
            print(tables(runs))
            if args.details:
                print()
                print(details(runs))
            if args.json:
                args.json.write_text(json.dumps(to_json(runs), indent=2), encoding="utf-8")
                log(f"wrote {args.json}")
            if args.work:
                print()
                for run in runs:
                    print(f"token savings on {run.name}: python benchmarks/token_savings.py {run.root}")
    except EvalError as exc:
        print(f"eval_real: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
