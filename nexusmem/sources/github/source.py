"""GitHub collector: one `github_thread` node per issue or pull request, its comments folded in.

Why: a bug report says what the person saw ("upload hangs after the proxy times out"); the commit that
fixed it says what the code does ("pool: drop half-closed sockets"). The thread answers such a question
itself, and its link lends its title and description to the commits that closed it (the store keeps them
in the commit's low-weight `notes` column, as changelog entries do), so the commit is found by the
symptom too.

Off by default (`sources.github.enabled`; `sync --github` for one run): it needs the network and a login,
and threads can hold secrets people pasted (every text is redacted before it is yielded).

- Calls: `gh api --method GET repos/OWNER/REPO/issues -f state=all -f sort=updated ... --paginate` (issues
  and PRs; a PR has `pull_request`, whose `merged_at` is its merged state) and, for a thread with
  comments, `repos/OWNER/REPO/issues/N/comments`. OWNER/REPO comes from `sources.github.repo` or the
  `origin` remote (the first GitHub remote otherwise).
- Cursor: the newest `updated_at` stored (`since` is inclusive, so the boundary thread is read again and
  stored as unchanged). The first sync reads the newest `maxThreads` threads; later ones read the oldest
  `maxThreads` updated since the cursor and move it to the last one read, so a burst of updates is
  spread over several syncs and nothing is skipped.
- Links (relation `github`), thread → commit: a PR to its merge commit ("Merge pull request #N") or squash
  commit ("... (#N)"); an issue to commits whose message closes it ("Fixes #N", "Closes #N", "Resolves
  #N") or ends in "(#N)", and to the commits of the PRs read with it whose description closes it.
- A missing gh or a logged-out one (exit 4) skips the source quietly; `status` shows the one-line reason.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from nexusmem import gitcmd
from nexusmem.errors import GitCommandError
from nexusmem.identity import node_id
from nexusmem.nodes import Node, ts_ok
from nexusmem.redact import cut_redacted, redact, redact_cut
from nexusmem.signals import _clamp
from nexusmem.sources.base import ScanContext, ScanResult
from nexusmem.sources.cursor import decode_cursor
from nexusmem.sources.github import gh
from nexusmem.text import content_text, one_line

RELATION = "github"
_CURSOR_VERSION = 1
# Commits one number may link to, newest first: a number named by many commits is an umbrella issue.
MAX_COMMITS_PER_NUMBER = 4
# What a thread lends the commits it links to: its title and this much of its description.
DESCRIPTION_CHARS = 1000
MAX_COMMENT_CHARS = 4000

# GitHub's closing keywords (docs: "Linking a pull request to an issue"), bare or "owner/repo#N".
_CLOSES = re.compile(
    r"\b(?:close[sd]?|fix(?:e[sd])?|resolve[sd]?)\b:?\s+(?:([\w.-]+/[\w.-]+))?#(\d{1,7})\b", re.IGNORECASE
)
_MERGE_PR = re.compile(r"^Merge pull request #(\d{1,7})\b")
_SQUASH = re.compile(r"\(#(\d{1,7})\)\s*$")


def settings(config: dict[str, Any]) -> dict[str, Any]:
    section: dict[str, Any] = config.get("sources", {}).get("github", {})
    return section


def repo_slug(root: Path, configured: str = "") -> str | None:
    """owner/repo: the configured one, else origin's, else the first GitHub remote's (None: no GitHub)."""
    if configured:
        return configured.strip("/")
    code, out = gitcmd.run_ok(["remote", "-v"], root)
    if code != 0:
        return None
    found: dict[str, str] = {}
    for line in out.decode("utf-8", "replace").splitlines():
        parts = line.split()
        if len(parts) >= 2 and (slug := gh.parse_slug(parts[1])):
            found.setdefault(parts[0], slug)
    return found.get("origin") or next(iter(found.values()), None)


def closing_numbers(text: str, slug: str) -> list[str]:
    """Issue numbers TEXT closes with a GitHub keyword ("Fixes #12", "closes owner/repo#12")."""
    out: list[str] = []
    for repo, number in _CLOSES.findall(text):
        if not repo or repo.lower() == slug.lower():
            out.append(number)
    return list(dict.fromkeys(out))


@dataclass
class CommitMap:
    """Thread number → commits, newest first: PR merges and squashes, and closing keywords."""

    pulls: dict[str, list[str]] = field(default_factory=dict)
    closes: dict[str, list[str]] = field(default_factory=dict)

    def add(self, sha: str, subject: str, body: str, slug: str) -> None:
        numbers = [m.group(1) for m in (_MERGE_PR.match(subject), _SQUASH.search(subject)) if m]
        for number in dict.fromkeys(numbers):
            self.pulls.setdefault(number, []).append(sha)
        for number in closing_numbers(f"{subject}\n{body}", slug):
            self.closes.setdefault(number, []).append(sha)

    def commits(self, number: str) -> list[str]:
        both = self.pulls.get(number, []) + self.closes.get(number, [])
        return list(dict.fromkeys(both))[:MAX_COMMITS_PER_NUMBER]


def commit_map(root: Path, slug: str, revs: list[str]) -> CommitMap:
    """Read the messages of REVS (`git log` arguments) once."""
    found = CommitMap()
    buf = b""
    args = ["log", "--no-color", "--encoding=UTF-8", "--format=%x00%H%x1f%s%x1f%b", *revs, "--"]
    for chunk in gitcmd.stream(args, root):
        buf += chunk
        *records, buf = buf.split(b"\0")
        for raw in records:
            _record(found, raw, slug)
    _record(found, buf, slug)
    return found


def _record(found: CommitMap, raw: bytes, slug: str) -> None:
    fields = content_text(raw).split("\x1f", 2)  # a Latin-1 message as the git source reads it
    if len(fields) == 3 and len(fields[0]) in (40, 64):
        found.add(fields[0], fields[1], fields[2], slug)


def _ms(value: Any) -> int | None:
    """Epoch ms of a GitHub time ("2026-11-02T10:00:00Z"), None when absent or malformed."""
    if not isinstance(value, str) or not value:
        return None
    try:
        ms = int(datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp() * 1000)
    except ValueError:
        return None
    return ms if ts_ok(ms) else None


def _count(value: Any, least: int = 0) -> bool:
    """A JSON integer (not a boolean, which Python counts as one) of at least LEAST."""
    return isinstance(value, int) and not isinstance(value, bool) and value >= least


_JSON_TYPES = {dict: "an object", list: "an array", str: "a string", bool: "a boolean", int: "a number",
               float: "a number"}  # fmt: skip


def _is(value: Any) -> str:
    return f"is {_JSON_TYPES.get(type(value), type(value).__name__)}"


def _text(value: Any) -> str | None:
    return None if value is None or isinstance(value, str) else f"{_is(value)}, not a string"


def _comment_count(value: Any) -> str | None:
    return None if value is None or _count(value) else f"{_is(value)}, not a count"


def _labels(value: Any) -> str | None:
    if value is None:
        return None
    if not isinstance(value, list):
        return f"{_is(value)}, not a list"
    for i, label in enumerate(value):
        if not isinstance(label, dict):
            return f"[{i}] {_is(label)}, not a label"
        if wrong := _text(label.get("name")):
            return f"[{i}].name {wrong}"
    return None


def _object(*fields: str) -> Callable[[Any], str | None]:
    """None or an object whose FIELDS are strings (or missing)."""

    def check(value: Any) -> str | None:
        if value is None:
            return None
        if not isinstance(value, dict):
            return f"{_is(value)}, not an object"
        for name in fields:
            if wrong := _text(value.get(name)):
                return f".{name} {wrong}"
        return None

    return check


# Every field an item's node is built from, and its check (None counts as absent): an item holding
# anything else is skipped whole, named by its first wrong field, and never stops the items after it.
_Check = tuple[str, Callable[[Any], "str | None"]]
_ITEM_FIELDS: tuple[_Check, ...] = (
    ("body", _text),
    ("state", _text),
    ("html_url", _text),
    ("created_at", _text),
    ("closed_at", _text),
    ("comments", _comment_count),
    ("labels", _labels),
    ("user", _object("login")),
    ("pull_request", _object("merged_at")),
)
_COMMENT_FIELDS: tuple[_Check, ...] = (("body", _text), ("created_at", _text), ("user", _object("login")))


def _wrong_field(item: dict[str, Any], checks: tuple[_Check, ...]) -> str | None:
    """Why ITEM cannot be read ("field labels is a number, not a list"), None when every field fits."""
    for name, check in checks:
        if wrong := check(item.get(name)):
            return f"field {name}{'' if wrong[0] in '[.' else ' '}{wrong}"
    return None


def thread_signal(*, merged: bool, comments: int, labels: Iterable[str], closed: bool) -> float:
    """.4, +.2 merged, +.15 for 3+ comments (+.05 for one), +.1 a bug/help-wanted label, -.15 closed
    without a word: the original product's priors."""
    value = 0.4 + (0.2 if merged else 0.0)
    value += 0.15 if comments >= 3 else 0.05 if comments >= 1 else 0.0
    if any(re.search(r"bug|help.wanted", label, re.IGNORECASE) for label in labels):
        value += 0.1
    if closed and comments == 0:
        value -= 0.15
    return _clamp(value)


def _cursor(raw: str | None) -> dict[str, Any]:
    return decode_cursor(raw, _CURSOR_VERSION)


@dataclass
class Thread:
    item: dict[str, Any]
    number: str
    is_pr: bool
    updated: int
    comments: list[dict[str, Any]] = field(default_factory=list)


class GithubSource:
    """Issues and pull requests of the repository's GitHub remote (see the module docstring)."""

    name = "github"
    kinds: tuple[str, ...] = ("github_thread",)
    # scan-github previews from the stored cursor: a full scan would re-read every thread over the network.
    preview_from_cursor = True

    def enabled(self, config: dict[str, Any]) -> bool:
        """Off unless sources.github.enabled is true."""
        return bool(settings(config).get("enabled", False))

    def scan(self, ctx: ScanContext) -> ScanResult:
        """Fetch now (a missing or logged-out gh skips with `state` set); yield the nodes when iterated."""
        cfg = settings(ctx.config)
        result = ScanResult(nodes=(), cursor=ctx.cursor)
        slug = repo_slug(ctx.root, str(cfg.get("repo", "")))
        if slug is None:
            return _skipped(result, "no GitHub remote: set sources.github.repo to OWNER/REPO")
        previous = {} if ctx.full else _cursor(ctx.cursor)
        since = previous.get("since") if isinstance(previous.get("since"), str) else None
        max_threads = int(cfg.get("maxThreads", 100))
        times: list[str] = []
        # Threads a capped sync read at the very time it resumes from: read again past them (a burst of more
        # than maxThreads threads updated in one second, a bulk label edit, held the cursor there for good).
        boundary = previous.get("boundary")
        already = {str(n) for n in boundary} if isinstance(boundary, list) and since is not None else set()
        try:
            threads, capped = self._threads(ctx.root, slug, since, max_threads + len(already), result, times)
            threads = [t for t in threads if not (t.number in already and t.item.get("updated_at") == since)]
            max_comments = int(cfg.get("maxCommentsPerThread", 100))
            for thread in threads:
                if max_comments and int(thread.item.get("comments") or 0) > 0:
                    comments = gh.api_items(
                        f"repos/{slug}/issues/{thread.number}/comments",
                        [("per_page", str(min(100, max_comments)))],
                        cwd=ctx.root,
                        limit=max_comments,
                    )
                    for n, c in enumerate(comments):
                        wrong = _wrong_field(c, _COMMENT_FIELDS)
                        if wrong:
                            result.skip(f"#{thread.number} comment {n}: {wrong}")
                        else:
                            thread.comments.append(c)
        except gh.GhUnavailable as exc:
            return _skipped(result, _said(exc))
        except gh.GhError as exc:
            # What gh printed is stored (status shows it) and shown: a token it echoes, a terminal escape
            # in a server's error page, never reach either.
            result.state = f"failed: {_said(exc)}"
            result.notes.append(_said(exc))
            return result
        result.state = f"read {slug}" + (
            f" (cap {max_threads} reached: the rest next sync)" if capped else ""
        )
        if capped:
            result.notes.append(f"{max_threads} threads read (sources.github.maxThreads); the rest next sync")
        if capped and since is not None and times:
            new_since: str | None = times[-1]  # ascending: resume at the last one read
        else:
            seen = ([since] if since else []) + times
            new_since = max(seen, key=lambda s: _ms(s) or 0) if seen else None
        head = self._head(ctx.root)
        try:
            if threads:
                commits = commit_map(ctx.root, slug, ["HEAD"]) if head else CommitMap()
            elif head and previous.get("head") and previous.get("head") != head:
                commits = commit_map(ctx.root, slug, [head, f"^{previous['head']}"])
            else:
                commits = CommitMap()
        except GitCommandError as exc:
            result.notes.append(f"commit links skipped: {exc}")
            commits = CommitMap()
        state: dict[str, Any] = {"v": _CURSOR_VERSION, "since": new_since, "head": head}
        if capped and new_since is not None:
            at = [t.number for t in threads if t.item.get("updated_at") == new_since]
            state["boundary"] = sorted(set(at) | (already if new_since == since else set()))
        cursor = json.dumps(state, sort_keys=True)
        result.nodes = self._emit(ctx, result, slug, threads, commits, cursor)
        return result

    @staticmethod
    def _head(root: Path) -> str:
        code, out = gitcmd.run_ok(["rev-parse", "-q", "--verify", "HEAD"], root)
        return out.decode("ascii", "replace").strip() if code == 0 else ""

    @staticmethod
    def _threads(
        root: Path, slug: str, since: str | None, limit: int, result: ScanResult, times: list[str]
    ) -> tuple[list[Thread], bool]:
        """The well-formed threads, and whether LIMIT items were read (the rest next sync). TIMES gets the
        `updated_at` of every item read in order, skipped ones too: the cursor moves past a bad item as
        past a good one, so a window of bad items never holds the sync in place."""
        params = [("state", "all"), ("sort", "updated"), ("per_page", str(max(1, min(100, limit))))]
        # The first sync takes the newest threads; later ones the oldest updated since, so none is skipped.
        params.append(("direction", "asc" if since else "desc"))
        if since:
            params.append(("since", since))
        threads: list[Thread] = []
        read = 0
        for n, item in enumerate(gh.api_items(f"repos/{slug}/issues", params, cwd=root, limit=limit)):
            read += 1
            number = item.get("number")
            updated = _ms(item.get("updated_at"))
            if updated is not None:
                times.append(str(item["updated_at"]))
            if not _count(number, least=1) or updated is None or not isinstance(item.get("title"), str):
                result.skip(f"issues item {n}: no number, title or updated_at")
                continue
            wrong = _wrong_field(item, _ITEM_FIELDS)
            if wrong:
                result.skip(f"issues item {n} (#{number}): {wrong}")
                continue
            is_pr = isinstance(item.get("pull_request"), dict)
            threads.append(Thread(item=item, number=str(number), is_pr=is_pr, updated=updated))
        return threads, read >= limit > 0

    def _emit(
        self,
        ctx: ScanContext,
        result: ScanResult,
        slug: str,
        threads: list[Thread],
        commits: CommitMap,
        cursor: str,
    ) -> Iterator[Node]:
        def thread_id(number: str) -> str:
            return node_id(ctx.project_id, "github_thread", f"{slug}#{number}")

        # PRs read now lend their commits to the issues their description closes.
        closed_by_prs: dict[str, list[str]] = {}
        pr_closes: dict[str, list[str]] = {}
        for t in threads:
            if t.is_pr:
                pr_closes[t.number] = closing_numbers(str(t.item.get("body") or ""), slug)
                for issue in pr_closes[t.number]:
                    closed_by_prs.setdefault(issue, []).append(t.number)
        # An issue read again (a comment on it) without the pull requests read earlier that close it keeps
        # them, and so its link to their commits.
        stored = ctx.known.get("thread_closers")
        earlier: dict[str, list[str]] = stored() if stored is not None else {}
        for t in threads:
            if not t.is_pr and t.number in earlier:
                mine = closed_by_prs.setdefault(t.number, [])
                mine += [pr for pr in earlier[t.number] if pr not in mine]
        links: list[tuple[str, str, str]] = []
        scope: list[str] = []
        for n, t in enumerate(threads):
            ctx.progress("github", n, len(threads))
            node = self._node(
                ctx, slug, t, commits, closed_by_prs.get(t.number, []), pr_closes.get(t.number, [])
            )
            scope.append(node.id)
            links += [
                (node.id, node_id(ctx.project_id, "git_commit", sha), RELATION)
                for sha in node.meta["commits"]
            ]
            yield node
        # Commits new since the last sync that close or merge a thread read earlier.
        emitted = {t.number for t in threads}
        for number in commits.pulls.keys() | commits.closes.keys():
            if number not in emitted:
                links += [
                    (thread_id(number), node_id(ctx.project_id, "git_commit", sha), RELATION)
                    for sha in commits.commits(number)
                ]
        # Set only after every thread was emitted: an interrupted scan replaces no links.
        result.links = links
        result.link_relation = RELATION
        result.link_scope = scope
        result.cursor = cursor

    def _node(
        self,
        ctx: ScanContext,
        slug: str,
        t: Thread,
        commits: CommitMap,
        closing_prs: list[str],
        closes: list[str],
    ) -> Node:
        item = t.item
        limit = int(ctx.config.get("limits", {}).get("maxBodyChars", 20_000))
        title = redact(str(item["title"]).strip())
        description = redact(str(item.get("body") or "").replace("\r\n", "\n").strip())
        labels = [
            redact(str(label.get("name")))
            for label in item.get("labels") or []
            if isinstance(label, dict) and label.get("name")
        ]
        user = item.get("user") if isinstance(item.get("user"), dict) else {}
        author = str(user.get("login") or "") if user else ""
        pull = item.get("pull_request") if t.is_pr else None
        merged_at = pull.get("merged_at") if isinstance(pull, dict) else None
        merged = bool(merged_at)
        state = "merged" if merged else str(item.get("state") or "open")
        what = "PR" if t.is_pr else "Issue"
        parts = [
            f"{what} #{t.number}: {title}",
            f"{state}" + (f"; labels: {', '.join(labels)}" if labels else ""),
        ]
        if description:
            parts.append(description)
        for c in t.comments:
            text = str(c.get("body") or "").replace("\r\n", "\n").strip()
            if not text:
                continue
            who = c.get("user", {}).get("login") if isinstance(c.get("user"), dict) else None
            who = redact(str(who)) if who else None  # as the thread's author is (its meta, nodes.Node)
            when = str(c.get("created_at") or "")[:10]
            # Redacted, then cut: a token the cut ended would no longer match its pattern, and be kept.
            parts.append(f"— {who or 'someone'} ({when}): {redact_cut(text, MAX_COMMENT_CHARS)}")
        body = "\n\n".join(parts)
        if len(body) > limit:
            body = cut_redacted(body, limit - 1) + "…"
        shas = commits.commits(t.number)
        for pr in closing_prs:
            shas += commits.pulls.get(pr, [])
        shas = list(dict.fromkeys(shas))[: MAX_COMMITS_PER_NUMBER * 2]
        comments = int(item.get("comments") or 0)
        return Node(
            project=ctx.project_id,
            kind="github_thread",
            source=self.name,
            natural_key=f"{slug}#{t.number}",
            ref=f"{slug}#{t.number}",
            title=one_line(f"{what} #{t.number}: {title}"),  # a title sent through the API may hold one
            body=body,
            ts=t.updated,
            signal=thread_signal(
                merged=merged, comments=comments, labels=labels, closed=item.get("state") == "closed"
            ),
            meta={
                "number": int(t.number),
                "type": "pull_request" if t.is_pr else "issue",
                "state": state,
                "merged": merged,
                "labels": labels,
                "author": author,
                "url": str(item.get("html_url") or ""),
                "comments": comments,
                "comments_kept": len(t.comments),
                "created_at": _ms(item.get("created_at")),
                "closed_at": _ms(item.get("closed_at")),
                "merged_at": _ms(merged_at),
                "closes": [int(x) for x in closes],
                "closed_by_prs": [int(x) for x in closing_prs],
                "commits": shas,
                "description": cut_redacted(description, DESCRIPTION_CHARS),
            },
        )


def _skipped(result: ScanResult, why: str) -> ScanResult:
    """RESULT as a scan that read nothing because of WHY: the sync's line and `status` say it."""
    result.skipped_because = why
    result.state = f"skipped: {why}"
    return result


def _said(exc: Exception) -> str:
    """EXC's message as one redacted line of printable characters (at most 300)."""
    from nexusmem.redact import said_line

    return said_line(str(exc), 300)
