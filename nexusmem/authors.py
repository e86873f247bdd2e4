"""Who ran a command: the `--author me|agents|NAME` filter of query, precheck and the MCP search tool.

A `shell_command` node's meta carries `author` ("me" for the person at the keyboard, else the agent or
tool: "claude-code", "codex", "atuin:copilot") and `author_kind` ("human" | "agent"); nodes recorded before
authors existed have neither and are the person's. In the team store "me" is the member asking: the person
at the keyboard of the machine that pushed the command, when that member is the one asking. A `conversation_turn` is its agent's, and
also the person's: its question is what they typed to the agent (`me` keeps the turns that hold one, an agent's
name the turns of that agent). Other kinds (commits, diffs, docs) have no author in this sense and always pass
the filter. Stdlib only: precheck imports it.
"""

from __future__ import annotations

import re

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (~4 ms of a cold precheck)
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any

ME, AGENTS = "me", "agents"
HELP = (
    "Only shell commands (and conversations) by this author: `me` (what you typed: your commands, and the"
    " questions you asked your agents), `agents` (any coding agent), or one agent's name in any case"
    " (claude-code, or claude; codex, ...). Commits, diffs and docs always pass."
)
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9:._-]{0,63}\Z")
# What an agent is also called (the short names `hook agent install` takes): the name it is recorded by.
ALIASES = {"claude": "claude-code", "claudecode": "claude-code", "claude_code": "claude-code"}
AUTHORED_KINDS = ("shell_command", "conversation_turn")


class AuthorError(ValueError):
    """An --author value that is neither me, agents nor a plausible name."""


def parse(value: str | None) -> str | None:
    """VALUE checked and normalised (None = no filter)."""
    if value is None:
        return None
    text = value.strip()
    if text.lower() in (ME, AGENTS):
        return text.lower()
    if not _NAME.match(text):
        raise AuthorError(
            f"--author {value!r}: expected `me`, `agents` or an agent's name such as claude-code"
            " (letters, digits, ':', '.', '_', '-'; at most 64 characters)"
        )
    return ALIASES.get(text.lower(), text.lower())  # names are matched in any case


# Words that say a command was an agent's: under `--author agents|NAME` they name whose commands are asked
# for, not what the commands were about ("what did the agent run on the migrations"). Only as a phrase of its
# own: "the agent", "my assistant", "AI agents", "agents"; not "user-agent" nor "the discord bot".
_AGENT_WORDS = (
    r"(?:(?:the|an?|my|our|your)\s+(?:ai\s+|coding\s+)?(?:agent|agents|assistant|assistants)"
    r"|(?:ai|coding)\s+(?:agent|agents|assistant|assistants)|agents)(?:'s)?"
)
# What an agent's name is called by ("claude" of claude-code, "copilot" of atuin:copilot): its parts but the
# tool that recorded it and the generic ones.
_NOT_A_NAME = frozenset({"atuin", "code", "agent", "cli"})
# A part of the name is the author only where it does something: "what did claude run", not "the claude
# API client".
_DOES = r"(?=\s+(?:ran|run|runs|running|did|do|does|tried|try|typed|type|executed|execute|changed|change)\b)"


# A question whose subject is an agent NexusMem records, doing something: "what has claude been doing", "what
# did codex run today", "which tests did gemini try". Not "what did I ask claude" (the person's questions),
# nor "the claude API" (no doing).
_AGENT_SUBJECT = re.compile(
    r"\b(?:what|which(?:\s+\w+){1,2}|when|why|how|where)\s+(?:have|has|had|did|does|do|is|was)\s+"
    r"(?P<who>claude(?:[\s-]code)?|codex|gemini|aider)\s+(?:just\s+|been\s+|last\s+)*"
    r"(?:doing|done|do|did|working|work|worked|up\s+to|busy|running|run|ran|trying|tried|try|typing|typed"
    r"|type|executing|executed|execute|changing|changed|change|committing|committed|commit)\b",
    re.IGNORECASE,
)


def subject_agent(text: str) -> str | None:
    """The agent TEXT asks about as its subject, as `--author` names it ("what has claude been doing" ->
    claude-code), else None."""
    found = _AGENT_SUBJECT.search(text)
    if found is None:
        return None
    who = " ".join(found.group("who").lower().replace("-", " ").split())
    return "claude-code" if who.startswith("claude") else parse(who)


def without_author_words(text: str, wanted: str | None) -> str:
    """TEXT without the words that name the author WANTED (a parse() result) asks for: "the agent",
    "agents", the agent's name, and a part of it ("claude" of claude-code) where it does something. Under the
    filter they say whose commands, and matched every commit and doc that speaks of agents. The text itself
    when no words are left (the question was only its author)."""
    if wanted is None or wanted == ME:
        return text
    names = [_AGENT_WORDS]
    if wanted != AGENTS:
        names.append(re.escape(wanted))
        parts = [p for p in re.split(r"[-:._]", wanted) if len(p) >= 4 and p.lower() not in _NOT_A_NAME]
        names += [re.escape(part) + _DOES for part in parts if part != wanted]
    left = re.sub(rf"(?<![\w-])(?:{'|'.join(names)})(?![\w-])", " ", text, flags=re.IGNORECASE)
    return " ".join(left.split()) if re.search(r"\w", left) else text


def of(kind: str, meta: dict[str, Any]) -> tuple[str, str] | None:
    """(author, author kind) of a node of KIND with META; None for kinds that have no author."""
    if kind == "shell_command":
        author = meta.get("author")
        if not isinstance(author, str) or not author:
            return ME, "human"
        author_kind = meta.get("author_kind")
        return author, author_kind if author_kind in ("human", "agent") else (
            "human" if author == ME else "agent"
        )
    if kind == "conversation_turn":
        agent = meta.get("author") or meta.get("agent")
        return (agent if isinstance(agent, str) and agent else "agent"), "agent"
    return None


def keeps(
    wanted: str | None, kind: str, meta: dict[str, Any], *, recorded_by: str = "", asker: str = ""
) -> bool:
    """Whether a node of KIND with META passes the filter WANTED (a parse() result). A team store's node
    carries RECORDED_BY, the member who pushed it: there `me` is the member asking (ASKER), so a teammate's
    own commands ("me" where they typed them) are theirs, not the asker's."""
    if wanted is None:
        return True
    who = of(kind, meta)
    if who is None:
        return True
    author, author_kind = who
    if wanted == ME:
        yours = author_kind == "human" or (kind == "conversation_turn" and _asked_by_the_person(meta))
        return yours and (not recorded_by or recorded_by == asker)
    if wanted == AGENTS:
        return author_kind == "agent"
    return author.lower() == wanted.lower()


def _asked_by_the_person(meta: dict[str, Any]) -> bool:
    """Whether a conversation turn's META holds a question the person typed (empty when the agent spoke
    first): that question is theirs, the answer the agent's."""
    question = meta.get("question")
    return isinstance(question, str) and question.strip() != ""


def held_by(wanted: str, recorded: list[tuple[str, str]]) -> bool:
    """Whether one of RECORDED, the (author, author kind) pairs of the commands memory holds, is WANTED's
    (a parse() result other than None)."""
    return any(keeps(wanted, "shell_command", {"author": a, "author_kind": k}) for a, k in recorded)


def recorded_names(recorded: list[tuple[str, str]]) -> str:
    """RECORDED's authors as a note lists them: the person first, then the agents in the order given."""
    names = list(dict.fromkeys(a for a, _ in recorded))
    names.sort(key=lambda name: name != ME)
    return ", ".join(names)


def git_user(root: Path) -> str | None:
    """The name git commits as in the work tree ROOT (its `user.name`), None when it has none: "I" of a
    question about a change (history.own_changes_first)."""
    from nexusmem import gitcmd

    code, out = gitcmd.run_ok(["config", "--get", "user.name"], root)
    name = out.decode("utf-8", "replace").strip()
    return name if code == 0 and name else None
