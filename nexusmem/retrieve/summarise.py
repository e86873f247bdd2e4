"""The short text shown under an item's title: what an agent reads instead of the whole node."""

from __future__ import annotations

import re

from nexusmem.markup import RST_ADORNMENT, is_rst, rst_unseen
from nexusmem.retrieve.pack import FIRST_SCREEN_TOKENS
from nexusmem.retrieve.search import terms
from nexusmem.store import StoredNode

MAX_SUMMARY_CHARS = 320
# The most of a doc section an answer with much room shows under its title (doc_summary_chars).
MAX_DOC_SUMMARY_CHARS = 1600
MAX_HUNK_LINES = 12
_HUNK = re.compile(r"^@@ ", re.MULTILINE)


def _clip(text: str, limit: int = MAX_SUMMARY_CHARS) -> str:
    text = text.strip()
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


# The end of a paragraph, as git reads a message (a line of blanks only ends one too).
_PARAGRAPH_END = re.compile(r"\n[ \t]*\n")
_FENCE = re.compile(r"^\s*(`{3,}|~{3,})")


def _first_lines(text: str, count: int) -> str:
    lines = [ln.rstrip() for ln in text.splitlines() if ln.strip()]
    return "\n".join(lines[:count])


def best_hunk(patch: str, query: str) -> str:
    """The hunk of PATCH that mentions the most query terms (the first hunk on a tie), clipped."""
    starts = [m.start() for m in _HUNK.finditer(patch)]
    if not starts:
        return _first_lines(patch, MAX_HUNK_LINES)
    hunks = [patch[a:b] for a, b in zip(starts, [*starts[1:], len(patch)])]
    wanted = terms(query)

    def hits(hunk: str) -> int:
        low = hunk.lower()
        return sum(low.count(w) for w in wanted)

    best = max(range(len(hunks)), key=lambda i: (hits(hunks[i]), -i))
    lines = hunks[best].splitlines()
    clipped = "\n".join(line[:200] for line in lines[:MAX_HUNK_LINES])
    if len(lines) > MAX_HUNK_LINES:
        clipped += f"\n… ({len(lines) - MAX_HUNK_LINES} more lines)"
    return clipped


# A Markdown ATX heading ("## Usage"): at most three spaces in, one to six `#`, then a blank or the end. A
# `#.` (reStructuredText's auto-numbered item) or `#include` is no heading.
_ATX = re.compile(r"^ {0,3}#{1,6}(?:[ \t]|$)")
# A Markdown setext underline ("Usage" over "=====" or "-----").
_SETEXT = re.compile(r"^ {0,3}(?:=+|-+)[ \t]*$")


def _without_headings(body: str, path: str = "") -> str:
    """BODY without its title lines (the item's title says it): a Markdown heading ("## Usage", a setext
    title and its underline), outside fenced code (a Python or shell comment, a C `#include` stay); in a
    reStructuredText file (PATH), a title with its adornments and the markup a reader does not see (labels,
    comments, `.. highlight::`), its `#.` items and the comments of its literal blocks kept."""
    lines = body.splitlines()
    if is_rst(path):
        unseen = rst_unseen(lines)
        skip = [hidden or bool(RST_ADORNMENT.match(line)) for line, hidden in zip(lines, unseen, strict=True)]
        for i in range(len(lines) - 1):
            # A title: the text over an underline (and under an overline), not itself one.
            if (
                lines[i].strip()
                and not skip[i]
                and RST_ADORNMENT.match(lines[i + 1])
                and not lines[i][:1].isspace()
            ):
                skip[i] = True
        return "\n".join(line for line, dropped in zip(lines, skip, strict=True) if not dropped)
    kept: list[str] = []
    fence = ""
    for line in lines:
        found = _FENCE.match(line)
        if found and (not fence or found.group(1).startswith(fence)):
            fence = "" if fence else found.group(1)
        elif not fence and _ATX.match(line):
            continue
        elif not fence and _SETEXT.match(line) and kept and kept[-1].strip():
            kept.pop()  # the title over it
            continue
        kept.append(line)
    return "\n".join(kept)


# How a conversation turn's body reads (sources/conversation/build.py): "Q: <question>" and a blank line (none
# when the agent spoke first), "A: <answer>", then "Commands run:" and a line per command when it ran some.
_ANSWER = "\n\nA: "
_COMMANDS = "\n\nCommands run:\n"


def asked(body: str) -> str:
    """What `--author me` shows of a conversation turn with BODY: the question the person typed, and a line
    that counts the agent's answer instead of showing it ("(answer: 12 lines)")."""
    if body.startswith("Q: ") and _ANSWER in body:
        question, _, answer = body[3:].partition(_ANSWER)
    else:
        question, answer = "", body.removeprefix("A: ")
    answer = answer.rpartition(_COMMANDS)[0] if _COMMANDS in answer else answer
    lines = sum(1 for line in answer.splitlines() if line.strip())
    if answer.strip() in ("", "(no reply recorded)"):
        said = "(no answer recorded)"
    else:
        said = f"(answer: {lines} line{'' if lines == 1 else 's'})"
    return _clip(f"Q: {question.strip()}") + "\n" + said if question.strip() else said


def doc_summary_chars(budget: int) -> int:
    """How many characters of a doc section an answer of BUDGET tokens shows: MAX_SUMMARY_CHARS on the first
    screen (the default budget) and below; an answer with more room shows more of each section, in
    proportion, up to MAX_DOC_SUMMARY_CHARS."""
    if budget <= FIRST_SCREEN_TOKENS:
        return MAX_SUMMARY_CHARS
    return min(MAX_DOC_SUMMARY_CHARS, MAX_SUMMARY_CHARS * budget // FIRST_SCREEN_TOKENS)


def summary(
    node: StoredNode, query: str, doc_chars: int = MAX_SUMMARY_CHARS, *, asked_only: bool = False
) -> str:
    """The text shown under NODE's title for QUERY; DOC_CHARS: how much of a doc section (doc_summary_chars).
    ASKED_ONLY (`--author me`): a conversation turn shows the person's question, its answer only counted."""
    if node.kind == "conversation_turn" and asked_only:
        return asked(node.body)
    if node.kind == "code_diff":
        return best_hunk(node.body, query)
    if node.kind == "git_commit":
        # The title is the message's first paragraph, a wrapped one joined into one line by git: what
        # follows that paragraph (after its first line only, a wrapped subject's tail was shown again).
        parts = _PARAGRAPH_END.split(node.body, 1)
        body = parts[1] if len(parts) == 2 else ""
        return _clip(_first_lines(body, 4))
    if node.kind == "shell_command":
        meta = node.meta
        # A command scraped from a shell's own history file has no known directory (cwd None).
        parts = [f"in {meta['cwd']}"] if meta.get("cwd") is not None else []
        if meta.get("exit") is not None:
            parts.append(f"exit {meta['exit']}")
        if meta.get("pipestatus"):
            parts.append("pipestatus " + " ".join(str(x) for x in meta["pipestatus"]))
        if meta.get("duration_ms") is not None:
            parts.append(f"{int(meta['duration_ms']) / 1000:.1f}s")
        if meta.get("shell"):
            parts.append(str(meta["shell"]))
        author = meta.get("author")
        if meta.get("author_kind") == "agent" and author and author != meta.get("shell"):
            # An agent's command that atuin recorded carries the shell's name: say who ran it.
            parts.append(f"by {author}")
        command = node.ref
        text = ", ".join(parts)
        return _clip(f"$ {command}\n{text}" if "\n" in command or len(command) > 100 else text)
    if node.kind == "doc_section":
        # The heading is already the title; show what the section says (a line per 80 characters allowed).
        path = str(node.meta.get("path") or node.ref.partition("#")[0])
        return _clip(_first_lines(_without_headings(node.body, path), max(4, doc_chars // 80)), doc_chars)
    return _clip(_first_lines(node.body, 4))
