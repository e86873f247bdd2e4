"""Session summaries: one `session_summary` node per settled conversation session, written by a local Ollama
chat model at ingest time (what a query returns is always stored text). Off by default
(`sources.session.enabled`): it needs a model server, and a summary is derived, not recorded.

A session is the main thread of the `conversation_turn` nodes sharing one meta `session_id` (and agent),
read from the store through `ScanContext.known["conversations"]` (sources.base.ConversationReader). The
rules are the original's, which measured them on 14 real sessions with qwen2.5:3b:

- Settle: a session is summarised once no new turn began for `settleMinutes` (30), so a session in progress
  is not summarised again on every sync.
- Memo: the prompt is hashed with the model's name; a stored summary made from the same hash is kept and
  the model is not asked. A cheaper fingerprint (turn count, last turn, last rewrite, model, prompt size) is
  compared first, so a steady-state sync reads no turn at all.
- Cap: at most `maxSessions` (10) model calls per sync, newest sessions first; the others are reported as
  queued and taken by the next sync.
- Title: the model's is kept only when it reads like a title (2-12 words, at most 80 characters, no
  preamble, bullet or bare "Summary of the session"); qwen2.5:3b gave a usable one about a third of the
  time. Otherwise the first line of the question that opened the session: always specific.
- Failure: unreachable, slower than `timeoutSeconds`, an HTTP error, or an answer that is not the JSON asked
  for: that session is skipped with a note and tried again next sync; the sync itself never fails. An
  unreachable or slow server ends this sync's model calls (the next session would wait as long).
- Bounded prompt: each question at most 600 characters, each answer 1,200, the whole at most
  `maxPromptChars` (12,000, ~3,000 tokens): the opening turn and the newest turns that fit, with a line
  saying how many were left out. Ollama is asked for a context (`num_ctx`) that holds it and the answer.
- Redaction: turns are stored redacted; the prompt is redacted again before it is sent, and the model's
  title and summary before they are stored.
"""

from __future__ import annotations

import hashlib
import json
import re
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from nexusmem import timefmt
from nexusmem.nodes import Node
from nexusmem.redact import redact, redact_cut
from nexusmem.sources.base import (
    ConversationReader,
    ScanContext,
    ScanResult,
    SessionFacts,
    SummaryFacts,
    TurnFacts,
)

KIND = "session_summary"
SOURCE = "session"
# Bumped when the prompt's wording or layout changes: every summary's fingerprint then moves.
PROMPT_VERSION = "session-prompt-1"
QUESTION_CHARS = 600
ANSWER_CHARS = 1200
SUMMARY_CHARS = 4000
TITLE_CHARS = 80
SIGNAL = 0.6

SYSTEM_PROMPT = (
    "You summarise one coding session between a person and an AI coding agent, for the project's memory."
    ' Answer with one JSON object and nothing else: {"title": "...", "summary": "..."}.\n'
    "title: what the session was about, 3 to 10 words, no final punctuation.\n"
    'summary: at most 8 short lines, each starting with "- ": the decisions made and why, the problems'
    " found and how they were fixed, what was left open. Name files, commands and errors exactly as"
    " written. No preamble."
)

# First words of a conversational preamble rather than a title.
_PREAMBLE = (
    "sure",
    "here",
    "certainly",
    "okay",
    "ok",
    "of course",
    "i ",
    "i'",
    "this session",
    "the session",
    "in this session",
    "title",
    "summary:",
    "as an ai",
)
_BULLET = re.compile(r"^([-•*>+]|\d+[.)])\s*")
# A title that names no subject.
_GENERIC = {
    "summary",
    "session",
    "session summary",
    "summary of the session",
    "summary of session",
    "summary of this session",
    "summary of the conversation",
    "conversation summary",
    "coding session",
    "coding session summary",
    "session overview",
    "overview",
    "recap",
}


class ModelUnavailable(Exception):
    """No usable answer from the server this sync: unreachable, too slow, or an HTTP error."""


class ModelBadAnswer(Exception):
    """The server answered, but not with the JSON object asked for."""


@dataclass
class Pending:
    """A settled session whose summary is missing or out of date and needs the model."""

    info: SessionFacts
    key: str
    prompt: str
    prompt_hash: str
    fingerprint: str
    opening: str  # the first question, for the fallback title
    previous: SummaryFacts | None


@dataclass
class Plan:
    """What the next sync does with each session (see plan())."""

    model: str
    url: str
    keys: set[str] = field(default_factory=set)  # every session that exists: summaries of others go
    settling: int = 0  # not quiet for settleMinutes yet
    current: int = 0  # summary up to date (fingerprint unchanged): nothing read
    reused: list[Node] = field(default_factory=list)  # turns moved but the prompt did not: no model call
    pending: list[Pending] = field(default_factory=list)  # for the model, newest first, at most maxSessions
    queued: int = 0  # beyond maxSessions: the next sync
    due: int | None = None  # when the first settling session settles (epoch ms)
    state: dict[str, Any] = field(default_factory=dict)  # what the cursor keeps for the next sync's check


def session_key(agent: str, session_id: str) -> str:
    return f"{agent}:{session_id}"


def _one_line(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def _question(turn: TurnFacts) -> str:
    """What the person asked in this exchange ("" when the agent went on by itself)."""
    q = turn.meta.get("question")
    return q.strip() if isinstance(q, str) else ""


def _answer(turn: TurnFacts, question: str) -> str:
    """The agent's part of one stored piece: the conversation source writes "Q: ...\n\nA: ..." (the
    question once more in every heading-chunk of a long answer), and "A: (no reply recorded)" for none."""
    body = turn.body
    if body.startswith("Q: "):
        cut = body.find("\n\nA: ")
        body = body[cut + 5 :] if cut >= 0 else ""
    elif question and body.startswith(question):
        body = body[len(question) :]
    body = body.strip()
    return "" if body == "(no reply recorded)" else body


def exchanges(turns: Sequence[TurnFacts]) -> list[tuple[str, str]]:
    """(question, answer) per exchange, in order: the heading-chunks of one exchange (one meta `turn`) are
    put back together."""
    grouped: dict[object, list[TurnFacts]] = {}
    for n, turn in enumerate(turns):
        index = turn.meta.get("turn")
        grouped.setdefault(index if isinstance(index, int) else ("piece", n), []).append(turn)
    out = []
    for pieces in grouped.values():
        question = next((q for q in map(_question, pieces) if q), "")
        answer = "\n\n".join(a for a in (_answer(p, question) for p in pieces) if a)
        out.append((question, answer))
    return out


def opening_question(turns: Sequence[TurnFacts]) -> str:
    """The first thing the person asked in the session ("" when nothing)."""
    return next((q for q, _ in exchanges(turns) if q), "")


def build_prompt(info: SessionFacts, turns: Sequence[TurnFacts], max_chars: int) -> str:
    """The user message for one session: a header, then the opening exchange and the newest that fit."""
    pairs = exchanges(turns)
    head = (
        f"Session of {info.agent}, {len(pairs)} exchange(s), {timefmt.day(info.first_ts)} .. "
        f"{timefmt.day(info.last_ts)}.\n"
    )
    blocks = []
    for n, (question, answer) in enumerate(pairs, 1):
        block = f"\n[turn {n}]"
        if question:
            block += f" PERSON: {_one_line(question, QUESTION_CHARS)}\n"
        else:
            block += "\n"
        if answer:
            block += f"AGENT: {_one_line(answer, ANSWER_CHARS)}\n"
        blocks.append(block)
    if not blocks:
        return head[:max_chars]
    room = max_chars - len(head) - len(blocks[0])
    tail: list[str] = []
    for block in reversed(blocks[1:]):
        # Keep room for the "left out" line.
        if len(block) + 60 > room:
            break
        tail.append(block)
        room -= len(block)
    tail.reverse()
    left_out = len(blocks) - 1 - len(tail)
    gap = f"\n[… {left_out} turn(s) left out …]\n" if left_out else ""
    return (head + blocks[0] + gap + "".join(tail))[:max_chars]


def prompt_hash(model: str, prompt: str) -> str:
    return hashlib.sha256(f"{model}\0{SYSTEM_PROMPT}\0{prompt}".encode("utf-8", "surrogatepass")).hexdigest()[
        :16
    ]


def fingerprint(info: SessionFacts, model: str, max_chars: int) -> str:
    return f"{PROMPT_VERSION}|{model}|{max_chars}|{info.turns}|{info.pieces}|{info.last_ts}|{info.changed_at}"


def valid_title(text: Any) -> str | None:
    """TEXT when it reads like a title of a session, tidied (quotes, a final full stop); else None."""
    if not isinstance(text, str):
        return None
    title = text.strip().strip("\"'`*#").strip()
    if not title or "\n" in title or len(title) > TITLE_CHARS:
        return None
    title = title.rstrip(".").strip()
    low = title.lower()
    if _BULLET.match(low):
        return None  # a stray bullet or list item
    if any(low.startswith(p) for p in _PREAMBLE):
        return None
    if low.strip("!?:;, ") in _GENERIC:
        return None
    words = title.split()
    if not 2 <= len(words) <= 12:
        return None
    return title


def fallback_title(opening: str, info: SessionFacts) -> str:
    """The first line of the question that opened the session (or the session's id, without one)."""
    for line in opening.splitlines():
        if line.strip():
            return _one_line(line, TITLE_CHARS)
    return f"{info.agent} session {info.session_id[:12]}"


def parse_answer(content: Any) -> tuple[Any, str]:
    """(title as the model gave it, summary) from the model's JSON; prose or a code fence around the object is
    tolerated, anything else is a ModelBadAnswer."""
    from nexusmem.ollama import OllamaBadAnswer, answer_json

    try:
        data = answer_json(content)
    except OllamaBadAnswer as exc:
        raise ModelBadAnswer(str(exc)) from exc
    if not isinstance(data, dict):
        raise ModelBadAnswer("the model's answer is not a JSON object")
    summary = data.get("summary")
    if isinstance(summary, list) and all(isinstance(s, str) for s in summary):
        summary = "\n".join(s if s.lstrip().startswith("-") else f"- {s}" for s in summary)
    if not isinstance(summary, str) or len(summary.strip()) < 10:
        raise ModelBadAnswer('the model\'s answer has no "summary" text')
    return data.get("title"), summary.strip()  # cut to SUMMARY_CHARS once redacted (summary_node)


class SessionModel:
    """A local chat model behind Ollama's HTTP API (POST /api/chat, non-streaming, JSON format); an older
    Ollama without /api/chat (HTTP 404 not naming the model) is asked through /api/generate."""

    def __init__(self, model: str, url: str, timeout: float) -> None:
        from nexusmem.ollama import OllamaClient

        self.model = model
        self._client = OllamaClient(url, timeout=timeout)
        self.url = self._client.url

    def close(self) -> None:
        self._client.close()

    def summarise(self, prompt: str) -> tuple[Any, str]:
        """(title as given, summary) for one session's PROMPT."""
        # ~3 characters a token for prose with code in it, plus room for the answer: Ollama's default
        # context (2,048-4,096 tokens) would silently cut a 12,000-character prompt.
        num_ctx = max(4096, (len(SYSTEM_PROMPT) + len(prompt)) // 3 + 1024)
        options = {"temperature": 0, "num_ctx": num_ctx}
        from nexusmem.ollama import OllamaBadAnswer, OllamaHTTPError, OllamaUnreachable

        try:
            content = self._client.chat_json(self.model, SYSTEM_PROMPT, prompt, options)
        except (OllamaUnreachable, OllamaHTTPError) as exc:
            raise ModelUnavailable(str(exc)) from exc
        except OllamaBadAnswer as exc:
            raise ModelBadAnswer(str(exc)) from exc
        return parse_answer(content)


def messages(prompt: str) -> list[dict[str, str]]:
    """The chat messages sent for PROMPT (what `scan-session --dry-run` prints)."""
    return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": prompt}]


def settings(config: dict[str, Any]) -> dict[str, Any]:
    from nexusmem.config import DEFAULTS

    section: dict[str, Any] = {
        **DEFAULTS["sources"]["session"],
        **config.get("sources", {}).get("session", {}),
    }
    if not str(section.get("url") or "").strip():  # empty: the default, as embedding.url
        section["url"] = DEFAULTS["sources"]["session"]["url"]
    return section


def config_token(config: dict[str, Any]) -> str:
    """The settings a stored plan depends on: a change to any of them means planning afresh."""
    section = settings(config)
    keys = ("model", "maxPromptChars", "settleMinutes", "maxSessions")
    return "|".join([PROMPT_VERSION, *(str(section[k]) for k in keys)])


def _state(cursor: str | None) -> dict[str, Any]:
    """The previous sync's plan state from the cursor ({} when absent or unreadable)."""
    try:
        data = json.loads(cursor or "{}")
    except ValueError:
        return {}
    state = data.get("session") if isinstance(data, dict) else None
    return state if isinstance(state, dict) else {}


def plan(
    store: ConversationReader, project_id: str, config: dict[str, Any], now_ms: int | None = None
) -> Plan:
    """Sort every session into settling, up to date, re-used (same prompt), for the model, or queued."""
    section = settings(config)
    model, max_chars = str(section["model"]), int(section["maxPromptChars"])
    settle_ms = int(section["settleMinutes"]) * 60_000
    cap = int(section["maxSessions"])
    now = int(time.time() * 1000) if now_ms is None else now_ms
    out = Plan(model=model, url=str(section["url"]))
    stored = store.session_summaries(project_id)
    candidates: list[SessionFacts] = []  # settled, summary missing or out of date: newest first
    for info in store.conversation_sessions(project_id):
        key = session_key(info.agent, info.session_id)
        out.keys.add(key)
        previous = stored.get(key)
        if previous is not None and previous.meta.get("fingerprint") == fingerprint(info, model, max_chars):
            out.current += 1
        elif now - info.last_ts < settle_ms:
            out.settling += 1
            due = info.last_ts + settle_ms
            out.due = due if out.due is None else min(out.due, due)
        else:
            candidates.append(info)
    # Turns are read a few sessions at a time (one index range read each) until maxSessions prompts need
    # the model; a session whose prompt did not change costs no call and does not count.
    done = 0
    while done < len(candidates) and len(out.pending) < cap:
        chunk = candidates[done : done + max(cap - len(out.pending), 8)]
        done += len(chunk)
        turns_of = store.session_turns(
            project_id,
            [(c.agent, c.session_id) for c in chunk],
            min(c.first_ts for c in chunk),
            max(c.last_ts for c in chunk),
        )
        for info in chunk:
            if len(out.pending) >= cap:
                out.queued += 1
                continue
            key = session_key(info.agent, info.session_id)
            previous = stored.get(key)
            print_ = fingerprint(info, model, max_chars)
            turns = turns_of.get((info.agent, info.session_id), [])
            prompt = redact(build_prompt(info, turns, max_chars))
            digest = prompt_hash(model, prompt)
            opening = opening_question(turns)
            if previous is not None and previous.meta.get("prompt_hash") == digest:
                meta = {**previous.meta, "fingerprint": print_, "turns": info.turns}
                out.reused.append(_node(project_id, info, key, previous.title, previous.body, meta))
                continue
            out.pending.append(Pending(info, key, prompt, digest, print_, opening, previous))
    out.queued += len(candidates) - done  # their prompts are built when their turn comes
    return out


def _node(project_id: str, info: SessionFacts, key: str, title: str, body: str, meta: dict[str, Any]) -> Node:
    return Node(
        project=project_id,
        kind=KIND,
        source=SOURCE,
        natural_key=key,
        ref=f"session:{key}",
        title=title,
        body=body,
        ts=info.last_ts,
        signal=SIGNAL,
        meta=meta,
    )


def summary_node(project_id: str, p: Pending, model: str, title: Any, summary: str) -> Node:
    """The node for P from the model's answer: title checked (else the opening question), both redacted."""
    checked = valid_title(title)
    meta = {
        "agent": p.info.agent,
        "session_id": p.info.session_id,
        "turns": p.info.turns,
        "prompt_hash": p.prompt_hash,
        "model": model,
        "fingerprint": p.fingerprint,
        "first_ts": p.info.first_ts,
        "title_from": "model" if checked else "question",
    }
    final_title = redact(checked or fallback_title(p.opening, p.info))
    return _node(project_id, p.info, p.key, final_title, redact_cut(summary, SUMMARY_CHARS), meta)


class SessionSource:
    """One summary per settled conversation session (see the module docstring)."""

    name = SOURCE
    kinds: tuple[str, ...] = (KIND,)

    def enabled(self, config: dict[str, Any]) -> bool:
        """Off unless sources.session.enabled is true."""
        return bool(config.get("sources", {}).get("session", {}).get("enabled", False))

    def scan(self, ctx: ScanContext) -> ScanResult:
        store: ConversationReader | None = ctx.known.get("conversations")
        result = ScanResult(nodes=(), cursor=ctx.cursor)
        if store is None:
            result.notes.append("no store to read conversation turns from; nothing summarised")
            return result
        token = config_token(ctx.config)
        now = int(time.time() * 1000)
        last = _state(ctx.cursor)
        if not ctx.full and last.get("config") == token and last.get("queued") == 0:
            due = last.get("due")
            if not isinstance(due, int) or now < due:
                count, newer = store.turns_state(int(last.get("seen", 0)))
                if count == last.get("turns") and not newer:
                    return result  # nothing written, nothing settled, nothing queued: no turn is read
        seen = store.write_seq()
        count, _ = store.turns_state(seen)
        work = plan(store, ctx.project_id, ctx.config, now)
        work.state = {"config": token, "seen": seen, "turns": count, "due": work.due}
        # A summary goes when its session's turns went (forget, prune); a failed model call keeps the old one.
        result.keep = lambda key: key in work.keys
        result.nodes = self._emit(ctx, work, result)
        return result

    def _emit(self, ctx: ScanContext, work: Plan, result: ScanResult) -> Iterator[Node]:
        yield from work.reused
        done = failed = 0
        left = len(work.pending)
        if work.pending:
            from nexusmem.ollama import listening

            section = settings(ctx.config)
            if not listening(work.url):
                result.notes.append(
                    f"Ollama at {work.url} is unreachable; {left} session(s) left for the next sync"
                )
            else:
                model = SessionModel(work.model, work.url, float(section["timeoutSeconds"]))
                try:
                    for p in work.pending:
                        ctx.progress("session", done + failed, len(work.pending))
                        left -= 1
                        try:
                            title, summary = model.summarise(p.prompt)
                        except ModelBadAnswer as exc:
                            failed += 1
                            result.notes.append(f"{p.key}: {exc}; tried again next sync")
                            continue
                        except ModelUnavailable as exc:
                            failed += 1
                            result.notes.append(f"{exc}; {left + 1} session(s) left for the next sync")
                            break
                        done += 1
                        yield summary_node(ctx.project_id, p, work.model, title, summary)
                finally:
                    model.close()
        # The plan's state: the next sync skips planning when no turn was written, nothing settled and
        # nothing waits; `status` shows how many sessions are queued and settling.
        waiting = work.queued + failed + left
        result.cursor = json.dumps(
            {"session": {**work.state, "queued": waiting, "settling": work.settling}}, sort_keys=True
        )
        parts = [f"{done} summarised"]
        if work.reused:
            parts.append(f"{len(work.reused)} unchanged prompt(s) re-used")
        if work.settling:
            parts.append(f"{work.settling} waiting to settle")
        if work.queued:
            parts.append(f"{work.queued} queued for the next sync")
        if done or failed or work.queued or work.reused:
            result.notes.append(", ".join(parts))


def preview(
    store: ConversationReader, project_id: str, config: dict[str, Any], *, ask: bool
) -> dict[str, Any]:
    """What the next sync would do with each session, for `scan-session`. Writes nothing.

    Each prompt the next sync would send is listed with its exact messages; with ASK the model is asked
    for each and its answer (the node that would be stored) is added, else nothing leaves the process.
    """
    work = plan(store, project_id, config)
    items: list[dict[str, Any]] = []
    model = (
        SessionModel(work.model, work.url, float(settings(config)["timeoutSeconds"]))
        if ask and work.pending
        else None
    )
    gone: str | None = None  # why the model stopped answering: the rest are not asked, as a sync does
    try:
        for p in work.pending:
            item: dict[str, Any] = {
                "key": p.key,
                "agent": p.info.agent,
                "session_id": p.info.session_id,
                "turns": p.info.turns,
                "prompt_hash": p.prompt_hash,
                "replaces": p.previous.id if p.previous is not None else None,
                "messages": messages(p.prompt),
            }
            if gone is not None:
                item["error"] = f"not asked: {gone}"
            elif model is not None:
                try:
                    title, summary = model.summarise(p.prompt)
                except ModelUnavailable as exc:
                    item["error"] = str(exc)
                    gone = str(exc)
                except ModelBadAnswer as exc:
                    item["error"] = str(exc)
                else:
                    node = summary_node(project_id, p, work.model, title, summary)
                    item["title"], item["summary"] = node.title, node.body
                    item["title_from"] = node.meta["title_from"]
            items.append(item)
    finally:
        if model is not None:
            model.close()
    return {
        "model": work.model,
        "url": work.url,
        "prompts": items,
        "reused": len(work.reused),
        "settling": work.settling,
        "up_to_date": work.current,
        "queued": work.queued,
    }


def preview_of_nothing(config: dict[str, Any]) -> dict[str, Any]:
    """preview() of a project with no memory yet: no session, nothing to send."""
    section = settings(config)
    return {
        "model": str(section["model"]),
        "url": str(section["url"]),
        "prompts": [],
        "reused": 0,
        "settling": 0,
        "up_to_date": 0,
        "queued": 0,
    }
