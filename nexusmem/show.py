"""One item by id: the lookup every command shares (review, mark-stale, show, MCP get_memory) and the full
expansion `nexusmem show` and MCP `get_memory` print.

An id is 24 hex characters; a unique prefix of at least MIN_PREFIX = 6 will do. Why 6, not git's 4: a
prefix that matches exactly one node is taken as that node, so a mistyped or half-copied short prefix must
rarely hit some *other* node by chance. With n nodes, a random k-hex prefix matches one with probability
about n / 16^k: for a 10,000-node store that is 15 % at 4 characters and 0.06 % at 6 (a 100,000-node shell
history: 0.6 %). Six is still short enough to type from a query line.
"""

from __future__ import annotations

import contextlib
import json
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nexusmem import timefmt
from nexusmem.errors import NexusMemError
from nexusmem.identity import NODE_ID_LEN as ID_CHARS
from nexusmem.store import StoredNode
from nexusmem.store.interface import SearchStore
from nexusmem.store.nodes import IDS_CHANGED_KEY
from nexusmem.text import one_line, well_formed

if TYPE_CHECKING:
    from nexusmem.project import Project

MIN_PREFIX = 6
# Longer than any id by far: a pasted answer or log, said in part.
MAX_ID_CHARS = 64
# What may be a commit's sha or its start (as many characters as an id prefix needs).
_SHA = re.compile(rf"[0-9a-f]{{{MIN_PREFIX},64}}")
_HEX = re.compile(r"[0-9a-f]+")


class IdLookupError(NexusMemError):
    """No node, or not exactly one, answers to the id given."""


class UnknownId(IdLookupError):
    """No node answers to the id given (an id well formed, and no prefix of several)."""


def find(store: SearchStore, ref: str) -> StoredNode:
    """The node whose id is REF, or the only one whose id starts with it (at least MIN_PREFIX characters).

    Case and surrounding blanks do not matter. An ambiguous prefix is an error naming the candidates.
    """
    ref = well_formed(ref)  # a command-line byte that is not UTF-8 is in no id
    key = ref.strip().lower()
    if not key:
        raise IdLookupError("the id is empty: give an id from a query result (or its first characters)")
    if len(key) > MAX_ID_CHARS:  # a pasted answer, not an id: never echoed whole (an agent reads it back)
        raise IdLookupError(
            f"{ref.strip()[:40]!r}… ({len(key):,} characters) is no id: ids are {ID_CHARS} characters"
        )
    node = store.get(key)
    if node is not None:
        return node
    if not _HEX.fullmatch(key):  # in no id or sha: `show main` where no branch is named main
        raise UnknownId(
            f"no node with id {ref!r} (ids are shown in query results), nor a git revision of that name"
        )
    if len(key) < MIN_PREFIX:
        raise IdLookupError(
            f"{ref!r} is too short for an id prefix: give the whole id or at least {MIN_PREFIX} characters of it"
        )
    matches = store.find_by_prefix(key)
    if _SHA.fullmatch(key):
        # A commit's sha (`commit 1fb23b7` in an answer, a sha a note names) stands for its commit; when
        # another node's id starts with the same characters, which one was meant is not known.
        matches += [m for m in store.commits_by_sha(key) if m not in matches]
    if not matches:
        raise UnknownId(
            f"no node with id {ref!r} (ids are shown in query results), nor a commit of that sha"
            + _ids_changed(store)
        )
    if len(matches) > 1:
        found = store.get_many(matches, light=True)
        listed = "; ".join(_listed(m, found.get(m), key) for m in matches)
        more = " (and maybe more)" if len(matches) >= 5 else ""
        raise IdLookupError(f"id prefix {ref!r} is ambiguous: {listed}{more}; give more characters")
    node = store.get(matches[0])
    if node is None:  # deleted between the two reads (a concurrent rebuild)
        raise UnknownId(f"no node with id {ref!r}")
    return node


def _ids_changed(store: SearchStore) -> str:
    """What an unknown id's error adds when this memory's node ids changed (its project id did: the repository
    was moved or given a remote, or an older id held a credential; IDS_CHANGED_KEY): "" when they never did."""
    try:
        changed = json.loads(store.get_meta(IDS_CHANGED_KEY) or "null")
        at, now = int(changed["at"]), str(changed["id"])
    except (ValueError, TypeError, KeyError):
        return ""
    return (
        f"; node ids changed on {timefmt.day(at)}, when this project's id did (now {now}): an id saved before"
        " then names nothing now, find the item again with `nexusmem query`"
    )


def _revision(tree: Path, ref: str, *, hex_too: bool = False) -> str | None:
    """The commit REF names in the work tree at TREE when it is a git revision rather than an id (HEAD, a
    branch, a tag, `main~2`); None otherwise. A full sha or an id is looked up as such first (see find);
    HEX_TOO: a hex text too, once no node answered to it (a sha of a commit memory lacks)."""
    text = well_formed(ref).strip()
    if not text or len(text) > 200 or text.startswith("-") or any(c.isspace() for c in text):
        return None
    if re.fullmatch(r"[0-9a-fA-F]+", text) and not (hex_too and _SHA.fullmatch(text.lower())):
        return None  # an id or a sha, read as one (an ambiguous prefix stays so)
    from nexusmem import gitcmd

    code, out = gitcmd.run_ok(
        ["rev-parse", "--verify", "--quiet", "--end-of-options", f"{text}^{{commit}}"], tree
    )
    sha = out.decode("ascii", "replace").strip()
    return sha if code == 0 and _SHA.fullmatch(sha) else None


def _not_held(store: SearchStore, tree: Path, ref: str, sha: str) -> str:
    """Why memory lacks the commit SHA that REF names in the work tree at TREE. Memory holds the commits HEAD
    reached when it synced: one HEAD reaches is not synced yet, unless `forget` took it out (a value it holds
    is on the deny-list: no sync brings it back); one HEAD does not reach (a tag on a branch never checked
    out, `origin/release-0.13`) no sync will add."""
    from nexusmem import gitcmd

    code, _ = gitcmd.run_ok(["merge-base", "--is-ancestor", sha, "HEAD"], tree)
    if code == 1:
        return (
            f"{ref!r} is commit {sha[:12]}, which is not in HEAD's history: memory holds the commits HEAD"
            " reaches, and `nexusmem sync` will not add it (check out a branch that reaches it, then sync)"
        )
    entry = _forgotten(store, tree, sha)
    if entry is not None:
        return (
            f"{ref!r} is commit {sha[:12]}, which `nexusmem forget` took out of memory: it holds a value on"
            f" the deny-list (entry {entry}), so no sync brings it back (`nexusmem forget --list`)"
        )
    return f"{ref!r} is commit {sha[:12]}, which memory does not hold yet: run `nexusmem sync`"


# How much of a commit `show` reads to tell whether the deny-list holds a value of it (only on the path of a
# commit memory lacks).
FORGOTTEN_READ_BYTES = 8 << 20


def _forgotten(store: SearchStore, tree: Path, sha: str) -> str | None:
    """The deny-list entry (its first 12 characters) a value of the commit SHA matches, as the sync's gate
    would have dropped it (its author, message and patch, as git shows them); None when none does."""
    from nexusmem import gitcmd
    from nexusmem.errors import NexusMemError
    from nexusmem.hygiene.denylist import deny_matcher

    try:
        matcher = deny_matcher(store)
    except (NexusMemError, OSError, ValueError):
        return None
    if not matcher:
        return None
    code, out = gitcmd.run_ok(["show", "--no-color", "--no-ext-diff", "--format=%an <%ae>%n%B", sha], tree)
    if code != 0:
        return None
    found = matcher.which([out[:FORGOTTEN_READ_BYTES].decode("utf-8", "replace")])
    return None if found is None else found.key[:12]


def _listed(node_id: str, node: StoredNode | None, key: str) -> str:
    """One candidate of an ambiguous id: its id and title, and the sha when it is the commit KEY names."""
    if node is None:
        return node_id
    sha = f" (commit {node.ref[:12]})" if node.kind == "git_commit" and node.ref.startswith(key) else ""
    return f"{node_id}{sha} {node.title[:50]}"


def replacement(store: SearchStore, node: StoredNode) -> str | None:
    """The id `mark-stale` named as what replaced NODE, while memory holds that node. A later sync may have
    removed it (a heading renamed, a commit rewritten with no one heir): NODE stays superseded (a person said
    so), but an answer names no id `show` cannot open. The mark itself is kept: should that node come back
    (the heading named back, `sync --rebuild`), the mark names it again."""
    by = node.superseded_by
    return by if by is not None and store.get_many([by], light=True) else None


def expand(store: SearchStore, node: StoredNode, project: str) -> dict[str, Any]:
    """NODE in full, as MCP get_memory's MemoryItem: facts, provenance, trust, body, files and links."""
    return {
        "id": node.id,
        "kind": node.kind,
        "ts": timefmt.iso(node.ts),
        "created_at": timefmt.iso(node.created_at),
        "title": node.title,
        "provenance": node.provenance,
        "trust": node.trust,
        "ref": node.ref,
        "project": project,
        "source": node.source,
        "signal": node.signal,
        "superseded": node.superseded_by is not None,
        "superseded_by": replacement(store, node),
        "body": node.body,
        "files": store.files_of(node.id),
        "links": [{"to": dst, "relation": rel} for _, dst, rel in store.links_from([node.id])],
        **_linked_by(store, node),
        "meta": node.meta,
        # A commit's patch is kept one file at a time: the ids to read each file's diff with.
        "diffs": (
            [{"id": i, "path": r.split(":", 1)[1]} for i, r in store.diffs_of(node.ref)]
            if node.kind == "git_commit"
            else []
        ),
    }


# The header names this many of an item's files: one commit of 10,302 files made a 233,000-character answer
# (60,000 tokens in one MCP result).
FILES_SHOWN = 50
# An item lists this many of the links arriving at it, the newest linking nodes first: 3,000 failing runs of
# one test linked to the fix made its get_memory 300,662 characters (`show --json` 384 KB).
LINKED_BY_SHOWN = 50


def _linked_by(store: SearchStore, node: StoredNode) -> dict[str, Any]:
    """`linked_by`: the LINKED_BY_SHOWN newest links arriving at NODE, each with its source's title (a
    commit's GitHub threads: the issue it closed, its pull request; the changelog entries that describe it,
    the failures it fixed); `linked_by_count`: how many arrive in all."""
    arriving, total = store.links_to(node.id, LINKED_BY_SHOWN)
    titles = store.get_many([src for src, _ in arriving], light=True)
    return {
        "linked_by": [
            {"from": src, "relation": rel, "title": titles[src].title if src in titles else ""}
            for src, rel in arriving
        ],
        "linked_by_count": total,
    }


def render(item: dict[str, Any]) -> str:
    """One expanded item as plain text: a header of facts, then the whole body."""
    tags = f"[{item['provenance']}] [{item['trust']}]"
    if item.get("verdict_by"):
        tags = f"[{item['provenance']}] [{item['trust']} by {item['verdict_by']}]"
    if item.get("recorded_by"):  # an item of the team store
        tags += f" [{item['project']}] [by {item['recorded_by']}]"
    lines = [
        f"{item['title']}",
        f"id {item['id']}  {item['kind']}  {tags}",
        f"when {item['ts']} (recorded {item['created_at']})",
        f"ref {one_line(item['ref'])}",
    ]
    author = item["meta"].get("author") if isinstance(item["meta"], dict) else None
    if item["kind"] == "git_commit" and isinstance(author, str) and author.strip():
        lines.append(
            f"author {one_line(author.strip())}"
        )  # who made it; a Co-authored-by trailer is in the body
    if item["superseded_by"]:
        lines.append(f"superseded by {item['superseded_by']}")
    elif item["superseded"]:
        lines.append(
            "superseded by a node no longer in memory (a later sync removed it;"
            f" `nexusmem mark-stale {item['id']} --clear` drops the mark)"
        )
    if item["files"]:
        files = item["files"]
        shown = ", ".join(one_line(name) for name in files[:FILES_SHOWN])
        total = int(item.get("files_total", len(files)))
        more = (
            f" … and {total - FILES_SHOWN:,} more (`nexusmem show --json` lists them all)"
            if total > FILES_SHOWN
            else ""
        )
        lines.append(f"files {shown}{more}")
    lines += [f"fixed by {link['to']} ({link['relation']})" for link in item["links"]]
    linked_by = item.get("linked_by") or []
    lines += [
        f"linked from {link['from']} ({link['relation']})  {one_line(link['title'])[:120]}"
        for link in linked_by[:LINKED_BY_SHOWN]
    ]
    arriving = int(item.get("linked_by_count", len(linked_by)))
    if arriving > LINKED_BY_SHOWN:
        lines.append(f"… and {arriving - LINKED_BY_SHOWN:,} older links arriving (the newest are listed)")
    diffs = item.get("diffs") or []
    lines += [f"diff {d['id']}  {one_line(d['path'])}" for d in diffs[:FILES_SHOWN]]
    if len(diffs) > FILES_SHOWN:
        lines.append(f"… and {len(diffs) - FILES_SHOWN:,} more diffs (`nexusmem show --json` lists them all)")
    seen_in = item["meta"].get("seen_in") if isinstance(item["meta"], dict) else None
    if seen_in:  # an agent's call known only from its transcript: no hook line recorded it (yet)
        lines.append(f"seen in {seen_in} only (exit read from its text, no duration)")
    lines += ["", item["body"]]
    return "\n".join(lines)


def show(start: Path | str | None, ref: str, *, team: bool = False) -> dict[str, Any]:
    """The item REF (an id or unique prefix) of the project at START, expanded; TEAM (`show --team`): an id
    this memory does not hold is read from the team store (see lookup)."""
    from nexusmem import project as project_mod

    project = project_mod.load(start)
    here = Path(start) if start is not None else Path.cwd()  # the caller's work tree, maybe a linked one
    with project.open_store(readonly=True) as store:
        return lookup(
            project,
            store,
            ref,
            team=team,
            team_hint="nexusmem show --team ID",
            tree=here.parent if here.is_file() else here,
        )


def lookup(
    project: Project,
    store: SearchStore,
    ref: str,
    *,
    team: bool,
    team_hint: str,
    tree: Path | None = None,
) -> dict[str, Any]:
    """REF from STORE (PROJECT's memory), expanded. A git revision (HEAD, `main~2`) is read in TREE, the
    work tree the caller is in (PROJECT's root by default): a linked worktree's HEAD is its own, not the main
    work tree's whose memory it reads. An item of a `query --team` answer that only the team
    store holds has an id this memory lacks: with TEAM it is read from the team store (labelled "team", with
    `recorded_by` and `verdict_by`), every statement bounded as `query --team` bounds them; without it, a
    project with a team store configured names TEAM_HINT, how to read the team's items."""
    try:
        item = expand(store, find(store, ref), project.root.name)
    except IdLookupError as exc:
        # `show HEAD`, `show main~2`, `show v1.4.0`: the commit git names, as memory holds it; a sha no node
        # answered to (a commit made since the last sync, another branch's): why memory lacks it.
        sha = _revision(tree or project.root, ref, hex_too=isinstance(exc, UnknownId))
        if sha is not None:
            try:
                return expand(store, find(store, sha), project.root.name)
            except UnknownId:
                raise UnknownId(_not_held(store, tree or project.root, ref, sha)) from None
        if not isinstance(exc, UnknownId):
            raise
        from nexusmem import team as team_mod

        if team:
            return _from_team(project, ref)
        if team_mod.settings(project) is not None:
            raise UnknownId(f"{exc}; an id from a team answer may be the team store's: {team_hint}") from None
        raise
    if team and item["trust"] == "candidate" and not item["superseded"]:
        # What `query --team` showed of an item both hold: a teammate's verdict or stale mark when you gave
        # none (a team store that does not answer leaves the local copy as it is).
        with contextlib.suppress(NexusMemError):
            shared = _from_team(project, item["id"])
            if shared["trust"] != "candidate" or shared["superseded"]:
                item = {
                    **item,
                    "trust": shared["trust"],
                    "superseded": shared["superseded"],
                    "superseded_by": shared["superseded_by"],
                    "verdict_by": shared["verdict_by"],
                }
    return item


def _from_team(project: Project, ref: str) -> dict[str, Any]:
    from nexusmem import team as team_mod
    from nexusmem.retrieve.team import TEAM_NAME
    from nexusmem.store.team import is_driver_error, unanswered

    found = team_mod.require(project)
    with team_mod.open_team(project, found, read=True) as shared:
        try:
            node = find(shared, ref)
            item = expand(shared, node, TEAM_NAME)
        except UnknownId:
            raise UnknownId(
                f"no node with id {ref!r} in this memory nor in the team store {found.label}, nor a commit of"
                " that sha"
            ) from None
        except Exception as exc:
            if not is_driver_error(exc):
                raise
            raise team_mod.TeamError(
                f"the team store {found.label} was not read: {unanswered(exc, shared.conn)}"
            ) from None
    return {**item, "recorded_by": node.recorded_by, "verdict_by": node.verdict_by}
