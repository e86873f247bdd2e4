"""Placing ranked nodes: sorting best first, putting a rule's nodes just above the rest, and the filters a node
placed by a rule (not searched) must pass as the searched ones did."""

from __future__ import annotations

from nexusmem import authors
from nexusmem.sources.shell.launchers import runs_nexusmem
from nexusmem.store import StoredNode


def commit_author(node: StoredNode) -> str:
    """The author's name a commit NODE's metadata holds (the git source's `author`); "" for another kind."""
    if node.kind != "git_commit":
        return ""
    name = node.meta.get("author")
    return name.strip() if isinstance(name, str) else ""


def best_first(scored: list[tuple[StoredNode, float]]) -> list[tuple[StoredNode, float]]:
    """SCORED sorted in place, best score first (scores equal to 9 places tie, broken by id), and returned."""
    scored.sort(key=lambda pair: (-round(pair[1], 9), pair[0].id))
    return scored


def put_first(
    scored: list[tuple[StoredNode, float]], first: list[StoredNode]
) -> list[tuple[StoredNode, float]]:
    """FIRST, in its order, scored just above the best of the rest of SCORED, which follows as it was."""
    ids = {node.id for node in first}
    rest = [(node, score) for node, score in scored if node.id not in ids]
    top = rest[0][1] if rest else 1.0
    return [(node, above(top, len(first), step)) for step, node in enumerate(first)] + rest


def is_own_line(node: StoredNode) -> bool:
    """Whether NODE is a shell line that ran NexusMem itself (launchers.runs_nexusmem)."""
    return node.kind == "shell_command" and runs_nexusmem(node.ref)


def passes(
    node: StoredNode,
    as_of: int | None,
    since: int | None,
    until: int | None,
    author: str | None,
    asker: str = "",
) -> bool:
    """Whether a linked NODE, which rides along without being searched, passes the query's filters as the
    searched ones did: recorded by AS_OF, within SINCE..UNTIL, and AUTHOR's (nexusmem.authors; ASKER: the
    store's SearchStore.member)."""
    return within(node, as_of, since, until) and authored(author, node, asker)


def authored(author: str | None, node: StoredNode, asker: str) -> bool:
    """Whether NODE passes the --author filter AUTHOR, asked by ASKER (the team member a team store reads as;
    "" in local memory)."""
    return authors.keeps(author, node.kind, node.meta, recorded_by=node.recorded_by, asker=asker)


def within(node: StoredNode, as_of: int | None, since: int | None, until: int | None) -> bool:
    """Whether NODE was recorded by AS_OF and happened within SINCE..UNTIL (each None: no bound)."""
    if as_of is not None and node.created_at > as_of:
        return False
    return (since is None or node.ts >= since) and (until is None or node.ts <= until)


def listed_first(
    scored: list[tuple[StoredNode, float]], listed: list[StoredNode], *, keep: bool = False
) -> list[tuple[StoredNode, float]]:
    """LISTED, in its order, scored above the best of SCORED; SCORED itself when LISTED is empty. The rest of
    SCORED goes, unless KEEP: what the question's words matched besides ("what failed today": old commits
    that say "fail") is no part of the answer it asked for, and would fill the budget."""
    if not listed:
        return scored
    top = scored[0][1] if scored else 1.0
    first = [(node, above(top, len(listed), step)) for step, node in enumerate(listed)]
    if not keep:
        return first
    ids = {node.id for node in listed}
    return first + [(node, value) for node, value in scored if node.id not in ids]


def above(top: float, count: int, step: int) -> float:
    """The score of the STEPth of COUNT items a rule puts first, in its order, just above TOP (the best
    score of the rest): what was run next, a failure or recent-work listing."""
    return top * (1.0 + 0.01 * (count - step))


def pin(first: list[str], pinned: list[str]) -> list[str]:
    """FIRST, just put before everything, then what PINNED held before it (what an answer fused from several
    projects keeps first, retrieve.query.Retrieved.pinned)."""
    return [*first, *(node_id for node_id in pinned if node_id not in first)]
