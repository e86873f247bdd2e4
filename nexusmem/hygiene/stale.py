"""stale: claims old enough to doubt, and (optionally) a local model's opinion on whether a newer node
contradicts them.

An old claim is a non-observed node (a doc section, a conversation turn, a summary) older than
`stale.maxAgeDays` that nobody verified and nothing superseded. Age alone is noise (200 such claims on httpx,
led by its Code of Conduct), so a claim is listed only when something newer touches it: a commit or diff
dated after it changed a file it belongs to or names (`src/api.py` in its text), or a newer node on the same
subject exists (the neighbour below). A doc section is dated by the last commit touching its own file, so
its own file counts only once changed again. `--check-contradictions` adds content: the most similar newer node (vector k-NN when the store
has vectors, else full-text search on the candidate's title words) and a local chat model's yes/no on the
pair. Every judgment is memoised by the pair's content hashes, so a pair is never sent twice. Nothing here
ever sets superseded_by: that stays a human decision (`mark-stale`).
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nexusmem import project as project_mod
from nexusmem import timefmt
from nexusmem.store import Store, StoredNode

DAY_MS = 86_400_000
MAX_CANDIDATES = 200
# Old claims examined per run, oldest first: each costs a few indexed reads and one neighbour search.
MAX_CHECKED = 2000
# A file named in a claim's text: `src/api.py`, docs/setup.md (a dotted name with an extension, no URL).
_PATH_RE = re.compile(r"(?<![\w/:.-])((?:[\w.-]+/)*[\w-][\w.-]*\.[A-Za-z][A-Za-z0-9]{0,5})(?![\w/])")
# Characters of each node's body put in front of the model: enough for a section, bounded for a 3B model.
PROMPT_BODY_CHARS = 1500
NEIGHBOURS = 20

SYSTEM_PROMPT = (
    "You compare two notes from one software project's memory: an OLDER note and a NEWER note. "
    "Decide whether the NEWER note makes the OLDER note no longer true (a changed decision, value, command, "
    "API or behaviour). Different topics, additions and elaborations are NOT contradictions. "
    'Answer with one JSON object and nothing else: {"contradicts": true or false, "reason": "<one short '
    'sentence>"}'
)


class JudgeUnavailable(Exception):
    """The model cannot be asked now (refused, timed out, HTTP error): stop for this run."""


class JudgeBadAnswer(Exception):
    """The model answered, but not with the JSON asked for: this pair stays unjudged."""


@dataclass
class Candidate:
    id: str
    kind: str
    title: str
    ts: int
    provenance: str
    trust: str
    suggestions: list[tuple[str, str, str]] = field(default_factory=list)  # (new id, new title, reason)
    why: str = ""  # what newer touches it: "src/api.py changed since" or "newer: <title>"

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "kind": self.kind,
            "title": self.title,
            "ts": self.ts,
            "provenance": self.provenance,
            "trust": self.trust,
            "why": self.why,
            "likely_superseded_by": [{"id": i, "title": t, "reason": r} for i, t, r in self.suggestions],
        }


@dataclass
class CheckSummary:
    judged: int = 0  # new judgments made this run
    memoised: int = 0  # pairs skipped because they were judged before
    flagged: int = 0  # new judgments that said "contradicts"
    bad_answers: int = 0
    unavailable: str | None = None
    notes: list[str] = field(default_factory=list)


# ------------------------------------------------------------------------------------------------ model


class Judge:
    """A local chat model behind Ollama's HTTP API (POST /api/chat, non-streaming, JSON format).

    An older Ollama without /api/chat (HTTP 404 not naming the model) is asked through /api/generate.
    """

    def __init__(self, model: str, url: str, timeout: float) -> None:
        from nexusmem.ollama import OllamaClient

        self.model = model
        self.timeout = timeout
        self._client = OllamaClient(url, timeout=timeout)
        self.url = self._client.url

    def close(self) -> None:
        self._client.close()

    def ask(self, older: StoredNode, newer: StoredNode) -> tuple[bool, str]:
        """(contradicts, reason) for the pair, from the model."""
        prompt = f"OLDER ({timefmt.day(older.ts)}, {older.kind}):\n{_text(older)}\n\nNEWER ({timefmt.day(newer.ts)}, {newer.kind}):\n{_text(newer)}"
        options = {"temperature": 0}
        from nexusmem.ollama import OllamaBadAnswer, OllamaHTTPError, OllamaUnreachable

        try:
            content = self._client.chat_json(self.model, SYSTEM_PROMPT, prompt, options)
        except (OllamaUnreachable, OllamaHTTPError) as exc:
            raise JudgeUnavailable(str(exc)) from exc
        except OllamaBadAnswer as exc:
            raise JudgeBadAnswer(str(exc)) from exc
        return parse_verdict(content)


def parse_verdict(content: Any) -> tuple[bool, str]:
    """The model's {"contradicts": bool, "reason": str}; a code fence or prose around the object is
    tolerated, anything else is a JudgeBadAnswer."""
    from nexusmem.ollama import OllamaBadAnswer, answer_json

    try:
        verdict = answer_json(content)
    except OllamaBadAnswer as exc:
        raise JudgeBadAnswer(str(exc)) from exc
    if not isinstance(verdict, dict) or not isinstance(verdict.get("contradicts"), bool):
        raise JudgeBadAnswer('the model\'s answer has no boolean "contradicts"')
    reason = verdict.get("reason", "")
    reason = clean_reason(reason) if isinstance(reason, str) else ""
    return verdict["contradicts"], reason or "(no reason given)"


def clean_reason(text: str) -> str:
    """A model's REASON as it is stored and shown: one line of printable characters (a control character,
    a terminal escape's start among them, becomes a space), at most 300 of them, every secret it repeats
    from the notes (or makes up) replaced by its placeholder (redact). `scrub` brings older rows to this."""
    from nexusmem.redact import said_line

    return said_line(text, 300)


def _text(node: StoredNode) -> str:
    body = node.body if node.body != node.title else ""
    return f"{node.title}\n{body[:PROMPT_BODY_CHARS]}".strip()


# --------------------------------------------------------------------------------------------- finding


def named_files(text: str) -> list[str]:
    """Repository-relative file paths named in TEXT (`./` dropped), in order, without repeats."""
    return list(dict.fromkeys(m.group(1).removeprefix("./") for m in _PATH_RE.finditer(text)))


def candidates(
    store: Store,
    max_age_days: int,
    *,
    now_ms: int | None = None,
    touched_only: bool = True,
    url: str | None = None,
) -> list[Candidate]:
    """Stale candidates, oldest first, each with its standing contradiction suggestions. With TOUCHED_ONLY,
    only the old claims something newer touches (see the module docstring); else every old claim. URL: the
    trusted config's Ollama embedder (embed.ollama_url), for a store whose vectors Ollama made."""
    return _find(store, max_age_days, now_ms=now_ms, touched_only=touched_only, url=url)[0]


def _find(
    store: Store,
    max_age_days: int,
    *,
    now_ms: int | None = None,
    touched_only: bool = True,
    url: str | None = None,
) -> tuple[list[Candidate], int]:
    """(candidates, how many old claims were checked)."""
    now = int(time.time() * 1000) if now_ms is None else now_ms
    rows = store.stale_candidates(
        now - max_age_days * DAY_MS, MAX_CHECKED if touched_only else MAX_CANDIDATES
    )
    old = [Candidate(i, k, t, ts, p, trust) for i, k, t, ts, p, trust, _h in rows]
    found = _touched(store, old, url)[:MAX_CANDIDATES] if touched_only else old
    standing = store.suggestions([c.id for c in found])
    for cand in found:
        cand.suggestions = standing.get(cand.id, [])
    return found, len(old)


def _touched(store: Store, cands: list[Candidate], url: str | None = None) -> list[Candidate]:
    """Those of CANDS a later commit changed a file of (one they belong to or name), or a newer node shares
    the subject of; sets each one's why. The neighbour search's vectors are made in one batch (one at a
    time, the built-in embedder took 10 of guzzle's 15 s)."""
    unchanged: list[tuple[Candidate, StoredNode]] = []
    for cand in cands:
        node = store.get(cand.id)
        if node is None:
            continue
        changed = store.changed_after([*store.files_of(node.id), *named_files(node.body)], node.ts)
        if changed:
            cand.why = f"{', '.join(changed[:3])} changed since"
        else:
            unchanged.append((cand, node))
    vectors = None
    if unchanged and store.has_vectors():
        from nexusmem.retrieve import vector

        vectors = vector.query_vectors(store, [_similar_text(node) for _, node in unchanged], url)
    for i, (cand, node) in enumerate(unchanged):
        newer = newest_similar(store, node, url, None if vectors is None else vectors[i])
        if newer is not None:
            cand.why = f"newer: {newer.title[:80]}"
    return [cand for cand in cands if cand.why]


def subject(node: StoredNode) -> str:
    """NODE's title without its file's path ("CODE_OF_CONDUCT.md — Our Pledge" -> "Our Pledge"): words such
    as "md" or "docs" in a path would make every doc section a neighbour of every other."""
    prefix = f"{node.group} — " if node.group else ""
    return node.title.removeprefix(prefix) if prefix and node.title.startswith(prefix) else node.title


SAME_SUBJECT_COSINE = 0.6


def _similar_text(node: StoredNode) -> str:
    """What NODE's neighbours are searched by."""
    return f"{node.title}\n{node.body[:PROMPT_BODY_CHARS]}"


def newest_similar(
    store: Store, node: StoredNode, url: str | None = None, vector_of: bytes | None = None
) -> StoredNode | None:
    """The node most similar to NODE among those that happened after it (not a sibling chunk of it); URL:
    where an Ollama embedder may be reached (the trusted config's, never the one memory.db recorded).
    VECTOR_OF: the vector of NODE's text (_similar_text), when made already."""
    ids: list[str] = []
    if store.has_vectors():
        from nexusmem.retrieve import vector

        hits = vector.knn_scored(store, _similar_text(node), k=NEIGHBOURS, url=url, vector=vector_of)
        # The nearest node is not necessarily about the same thing: only a close one counts (the cosine a
        # query needs for "a strong match" too), else every old claim would have a newer neighbour.
        ids = [node_id for node_id, cosine in hits if cosine >= SAME_SUBJECT_COSINE]
    else:
        from nexusmem.retrieve import search

        expr = search.fts_expression(search.terms(subject(node)))
        ids = store.newer_fts(expr, node.ts, node.id, NEIGHBOURS) if expr else []
    found = store.get_many(ids, light=True)
    for node_id in ids:
        other = found.get(node_id)
        if other is None or other.id == node.id or other.ts <= node.ts:
            continue
        if node.group is not None and other.group == node.group:
            continue
        return store.get(other.id)
    return None


def check(
    store: Store,
    config: dict[str, Any],
    found: list[Candidate],
    *,
    max_new: int | None = None,
    judge: Judge | None = None,
) -> CheckSummary:
    """Judge each candidate against its most similar newer node (memoised); at most MAX_NEW new questions."""
    from nexusmem.embed import ollama_url

    section = config.get("contradictions", {})
    embed_url = ollama_url(config)
    summary = CheckSummary()
    owned = judge is None
    model = str(section.get("model", "qwen2.5:3b"))
    judge = judge or Judge(model, judge_url(config), float(section.get("timeoutSeconds", 60.0)))
    try:
        for cand in found:
            if max_new is not None and summary.judged + summary.bad_answers >= max_new:
                break
            older = store.get(cand.id)
            if older is None:
                continue
            newer = newest_similar(store, older, embed_url)
            if newer is None:
                continue
            old_hash = store.node_hash(older.id)
            new_hash = store.node_hash(newer.id)
            if old_hash is None or new_hash is None:
                continue
            if store.judgment(old_hash[0], new_hash[0]) is not None:
                summary.memoised += 1
                continue
            try:
                contradicts, reason = judge.ask(older, newer)
            except JudgeBadAnswer as exc:
                summary.bad_answers += 1
                summary.notes.append(f"{exc} for {older.id[:12]}; left unjudged")
                continue
            except JudgeUnavailable as exc:
                summary.unavailable = str(exc)
                summary.notes.append(f"{exc}; contradiction check skipped")
                break
            with store.transaction():
                store.put_judgment(older.id, old_hash[0], newer.id, new_hash[0], contradicts, reason, model)
            summary.judged += 1
            summary.flagged += int(contradicts)
    finally:
        if owned:
            judge.close()
    standing = store.suggestions([c.id for c in found])
    for cand in found:
        cand.suggestions = standing.get(cand.id, [])
    return summary


# ------------------------------------------------------------------------------------------- commands


def stale(
    start: Path | str | None, *, check_contradictions: bool = False
) -> tuple[list[Candidate], CheckSummary | None, int]:
    """(the project's stale candidates, the contradiction check's summary, how many old claims were
    checked); with CHECK_CONTRADICTIONS, judge every unjudged pair first."""
    project = project_mod.load(start)
    max_age = int(project.config["stale"]["maxAgeDays"])
    with project.open_store() as store:
        from nexusmem.embed import ollama_url

        found, checked = _find(store, max_age, url=ollama_url(project.config))
        summary = check(store, project.config, found) if check_contradictions and found else None
    return found, summary, checked


def judge_url(config: dict[str, Any]) -> str:
    """contradictions.url; left at its default (or empty) while the embedder is Ollama, that embedder's
    embedding.url: the Ollama the user configured, not one at a default URL they never set."""
    from nexusmem.config import DEFAULTS, url_setting
    from nexusmem.embed import ollama_url

    url = url_setting(config, "contradictions.url")
    if url == DEFAULTS["contradictions"]["url"]:
        return ollama_url(config) or url
    return url


def auto_check(
    store: Store, config: dict[str, Any], log: Callable[[str], None] | None = None
) -> CheckSummary | None:
    """The step at the end of a sync: at most contradictions.maxPerSync new judgments; None when switched
    off or there is nothing to judge. An unreachable model is one line of LOG, never an error."""
    section = config.get("contradictions", {})
    limit = int(section.get("maxPerSync", 3))
    if not section.get("autoCheck", True) or limit <= 0:
        return None
    url = judge_url(config)
    max_age = int(config.get("stale", {}).get("maxAgeDays", 45))
    from nexusmem.embed import ollama_url
    from nexusmem.ollama import listening, recently_down

    embedder_url = ollama_url(config)
    if recently_down(url) is not None:
        return None  # it did not answer in time a moment ago: the embedding pass said so, and no wait here
    if not listening(url):
        # Most machines run no model server: find that out with one socket before loading the embedder
        # or importing httpx (~0.5 s on every sync, post-commit ones included), and before listing the
        # candidates (~10-30 ms of a no-op sync at 100k nodes), which only a model could judge. Say so
        # only to someone who set up a model server (the original checked only when Ollama served its
        # embeddings too), and only when there was something to judge; everyone else would read the
        # same line after every sync. The embedder's own Ollama (judge_url's default) is said down by the
        # embedding pass: one line, not two.
        from nexusmem.config import DEFAULTS

        if (
            log
            and url not in (embedder_url, DEFAULTS["contradictions"]["url"])
            and candidates(store, max_age, touched_only=False, url=embedder_url)
        ):
            log(
                f"contradictions: Ollama at {url} is unreachable (ConnectError);"
                " skipped (suggestions only, nothing changed)"
            )
        return None
    # Every old claim, unfiltered: this runs after each sync, and check() itself skips a claim with no
    # newer neighbour.
    found = candidates(store, max_age, touched_only=False, url=embedder_url)
    if not found:
        return None
    summary = check(store, config, found, max_new=limit)
    if log:
        if summary.unavailable:
            log(f"contradictions: {summary.unavailable}; skipped (suggestions only, nothing changed)")
        for note in summary.notes:
            if not note.startswith(summary.unavailable or "\0"):
                log(f"contradictions: {note}")
        open_count = sum(len(c.suggestions) for c in found)
        if summary.judged or open_count:
            log(
                f"contradictions: {summary.judged} new judgment(s), {open_count} open suggestion(s)"
                " (see `nexusmem stale`)"
            )
    return summary
