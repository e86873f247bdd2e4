"""Changelog collector: CHANGELOG / CHANGES / NEWS / HISTORY / RELEASES entries as `doc_section` nodes,
each linked to the commits it describes.

Why: people describe a problem the way release notes do ("the client hangs when the server closes the
connection"), not the way commits do ("pool: drop half-closed sockets"). An entry node answers such a
question itself, and its link lends its words to the commits it describes (the store keeps them in the
commit's low-weight `notes` column), so the commit is found by them too.

One node per entry: a top-level bullet of a version section, with its nested lines and code; a paragraph
around the bullets (a release's intro, a migration note) is one too, and a version section without
bullets is one entry. A version section of a busy project lists dozens of unrelated changes; as
one node it would match every question a little and link to every commit of the release.

An entry links to a commit when
- the entry names the commit: a commit link (".../commit/4ff8c1b", as generated changelogs write them) or
  the abbreviated id that starts a changesets entry ("- 4ff8c1b: Fix ..."), resolved when unambiguous;
- they name the same number: "#123", ".../pull/123" or a Sphinx role (":pr:`123`", ":issue:`123`") in the
  entry, and "(#123)", "Merge pull request #123", "Fixes #123" (any "#123") in the commit message; or
- the commit first wrote the entry's first line (one bounded `git log -p` over the changelog files,
  followed back through the commits that only reworded the line), unless that commit added more than
  BULK_ENTRIES entries: a release commit that writes the whole list describes none of them.
A commit that only touched the release notes is never one an entry describes (a typo fix, the commit that
wrote a release's notes): an entry with no other commit has no link.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import os
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nexusmem import gitcmd
from nexusmem.errors import GitCommandError
from nexusmem.identity import node_id
from nexusmem.markup import (
    RST_LABEL,
    RST_REFERENCE,
    RST_TARGET,
    is_rst,
    reference_name,
    rst_inline_text,
    rst_prose,
)
from nexusmem.nodes import Node, redacted_path
from nexusmem.redact import cut_redacted, redact, redact_cut
from nexusmem.signals import doc_signal
from nexusmem.sources.base import ScanContext, ScanResult
from nexusmem.sources.docs import (
    Section,
    display_path,
    doc_text,
    inline_text,
    is_release_notes,
    notes_folder,
    regular_file,
    release_notes_excluded,
    sections_of,
    shallow_marker,
    too_big_problem,
    unreadable_problem,
)
from nexusmem.sources.git.repo import boundary
from nexusmem.text import content_text, one_line

_CURSOR_VERSION = "changelog-20"
RELATION = "changelog"
# A commit that added more entries than this is a release commit: its "added by" links are dropped.
BULK_ENTRIES = 8
# Commits touching the changelog files read by the "added by" pass (newest first): bounds the pass on a
# project with a 20-year changelog; entries older than that keep their number links.
MAX_CHANGELOG_COMMITS = 5000
# Commits one number may link to: a number named by many commits is an umbrella issue, not this entry's.
MAX_COMMITS_PER_NUMBER = 4
MAX_ENTRY_CHARS = 4000

_BULLET = re.compile(r"^( {0,6})[-*+] +\S")
# A fenced code block's opening line (``` or ~~~, at any indent: a bullet's example is indented).
_CODE_FENCE = re.compile(r"^\s*(`{3,}|~{3,})")
_HTML_COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)
# A Markdown link reference definition ("[2.0.0]: https://github.com/o/r/compare/v1.1.0...v2.0.0").
_LINK_DEFINITION = re.compile(r"^ {0,3}\[[^\]]+\]:\s*\S+")
# The release not made yet, as Keep a Changelog heads it ("## [Unreleased]"): a version for the sections
# under it ("### Added").
_UNRELEASED = re.compile(r"\bunreleased\b", re.IGNORECASE)
# A heading that sorts a release's entries (Keep a Changelog's "Added", "Fixed"; "Bug Fixes", "Breaking
# changes", …): written at a release's level by mistake ("## Fixed" under "## [0.14.0]"), it is still that
# release's part.
_CATEGORY = re.compile(
    r"(?:(?:new|bug|breaking|other|minor|major|security|internal|misc(?:ellaneous)?)\s+)?"
    r"(?:added|changed|changes|deprecated|deprecations|removed|removals|fixed|fixes|bug\s*fixes|bugfixes"
    r"|security|features?|improvements?|enhancements?|performance|documentation|docs|dependencies"
    r"|internals?|refactor(?:ing)?|chores?|other|misc(?:ellaneous)?|breaking\s+changes?|notes?)\s*:?",
    re.IGNORECASE,
)
# The template towncrier renders its fragments with (dateutil's changelog.d/template.rst), beside them.
_TEMPLATE = re.compile(
    r"(?:^|/)(?:changelogs?|changelog\.d|changes|news|newsfragments)/_?template\.[^/]+$", re.IGNORECASE
)
# A line of a Jinja template: a statement or an expression ("{% for text, values in … %}", "{{ text }}").
_JINJA = re.compile(r"\{%.*%\}|\{\{.*\}\}")
# What a page that only pulls the notes in from elsewhere holds (Sphinx's docs/changelog.rst holding
# `.. include:: ../NEWS`, MyST's ```{include}, AsciiDoc's include::, MkDocs' snippets and includes): the
# directive, its options, a comment, a closing fence.
_INCLUDE = re.compile(
    r"^\s*(?:\.\.\s+(?:include|mdinclude|literalinclude)::|(?:```|:::)\{include\}|include::\S|--8<--|\{!.*!\}\s*$)",
    re.IGNORECASE,
)
_INCLUDE_PART = re.compile(r"^\s*(?::[\w-]+:.*|\.\.(?:\s+(?!\S+::).*)?|<!--.*-->|```|:::)\s*$")
# A tracked file's entry in `git ls-files -s` output: mode, blob, stage, then a tab before its path.
_STAGED = re.compile(rb"^(\d{6}) ([0-9a-f]{40,64}) \d\t")
# A commit an entry names: a commit link (".../commit/4ff8c1b…", as conventional-changelog, release-please
# and semantic-release write them), or the abbreviated id that starts a changesets entry ("- 4ff8c1b: Fix …").
_SHA = re.compile(r"/commits?/([0-9a-f]{7,64})\b|^[-*+] +([0-9a-f]{7,64}):", re.MULTILINE)
# A line that underlines (or overlines) a title: Markdown's setext `===`/`---`, any reStructuredText one.
_ADORNMENT = re.compile(r"^ {0,3}([!-/:-@\[-`{-~])\1{2,}\s*$")
# "#12", ".../pull/12", and Sphinx's issue roles (":pr:`12`", ":issue:`12`", as sphinx-issues writes them).
_NUMBER = re.compile(
    r"(?:(?<![\w/&])#|/(?:pull|issues|pulls)/|:(?:pr|pull|issue|gh)(?:issue|pull)?:`)(\d{1,7})\b"
)


@dataclass
class Entry:
    path: str
    version: str  # the section heading ("1.2.3 (2024-01-02)", "Unreleased")
    text: str  # the entry, as written
    first_line: str
    numbers: list[str] = field(default_factory=list)
    shas: list[str] = field(default_factory=list)  # commit ids it names (full or abbreviated, lower case)


def split_entries(text: str, path: str) -> list[Entry]:
    """The entries of one changelog file: top-level bullets of each section (or the section's prose)."""
    entries: list[Entry] = []
    sections: list[tuple[Section, list[str]]] = []
    for sec in sections_of(text, path.rsplit("/", 1)[-1]):
        lines = sec.text.split("\n")
        if sec.level:
            # The title's own lines: the labels above a reStructuredText title (`.. _changes_7-3-4:`), its
            # overline, the title, a setext or RST underline.
            while lines and (not lines[0].strip() or RST_LABEL.match(lines[0])):
                lines = lines[1:]
            lines = lines[2:] if _ADORNMENT.match(lines[0]) else lines[1:]
            if lines and _ADORNMENT.match(lines[0]):
                lines = lines[1:]
        sections.append((sec, lines))
    if not _notes_of_its_own([line for _, lines in sections for line in lines if line.strip()]):
        return []
    release: tuple[int, str] | None = None  # the level and heading of the release section read last
    rst = is_rst(path)
    targets = _rst_targets(text) if rst else {}
    for sec, lines in sections:
        # Keep a Changelog's compare links at the end ("[2.0.0]: https://…/compare/v1.1.0...v2.0.0") are
        # link targets, not part of the oldest release's last entry.
        while lines and (not lines[-1].strip() or _LINK_DEFINITION.match(lines[-1])):
            lines.pop()
        version = sec.heading
        depth = len(sec.trail)  # a release's depth among the headings, as its sections' trails hold it
        if depth >= 2 and not _version_like(version) and _version_like(sec.trail[-2]):
            version = f"{sec.trail[-2]} › {version}"  # "### Fixed" under "## 1.2.0" or "## [Unreleased]"
            release = (depth - 1, sec.trail[-2])
        elif sec.level and _version_like(version):
            release = (depth, version)
        elif release is not None and depth == release[0] and _CATEGORY.fullmatch(version.strip()):
            # "## Fixed" where "### Fixed" was meant, under "## [0.14.0]": a category names no release, so it
            # is still that release's (tomlkit's 0.14.0), not a section of its own with no version.
            version = f"{release[1]} › {version}"
        elif sec.level and release is not None and depth <= release[0]:
            release = None  # "## Contributors": what follows is no release's
        for chunk in _chunks(lines):
            body = "\n".join(chunk).strip()
            if not _HTML_COMMENT.sub("", body).strip():  # nothing a reader sees
                continue
            # A block of link targets after a release's bullets (`.. _issue 1732: https://…`), a label, a
            # comment (`.. start-releases`): markup, no entry.
            if rst and not rst_prose(chunk):
                continue
            # Its first line with words: a prose chunk starts with the blank line under its heading, and a
            # blank line "added" by any later commit (a release's) made that commit the entry's author.
            first = next(line.strip() for line in chunk if line.strip())
            # The URLs of the targets it names (`` `issue 1732`_ ``) are its links too.
            linked = [targets[name] for name in _references(body) if name in targets]
            numbers = list(
                dict.fromkeys([*_NUMBER.findall(body), *(n for u in linked for n in _NUMBER.findall(u))])
            )
            shas = list(
                dict.fromkeys(m.group(1) or m.group(2) for t in (body, *linked) for m in _SHA.finditer(t))
            )
            entries.append(Entry(path, version, body, first, numbers, shas))
    return entries


def _rst_targets(text: str) -> dict[str, str]:
    """The hyperlink targets of reStructuredText TEXT, name (as docutils compares them) → URL: a target's URL
    on its line (`.. _issue 1732: https://…`) or on the indented line under it."""
    found: dict[str, str] = {}
    lines = text.split("\n")
    for i, line in enumerate(lines):
        target = RST_TARGET.match(line)
        if target is not None:
            found.setdefault(reference_name(target.group(1)), target.group(2))
        elif (
            RST_LABEL.match(line)
            and i + 1 < len(lines)
            and lines[i + 1][:1].isspace()
            and lines[i + 1].strip()
        ):
            name = line.strip()[3:].strip().removesuffix(":")
            found.setdefault(reference_name(name), lines[i + 1].strip())
    return found


def _references(text: str) -> list[str]:
    """The hyperlink names reStructuredText TEXT refers to (`` `issue 1732`_ ``, `word_`), as compared."""
    return list(dict.fromkeys(reference_name(m.group(1) or m.group(2)) for m in RST_REFERENCE.finditer(text)))


def _notes_of_its_own(lines: list[str]) -> bool:
    """Whether a changelog file's non-blank LINES (under its titles) are notes: not a template (mostly Jinja,
    as towncrier's is), nor a page that only includes the notes kept elsewhere."""
    jinja = sum(1 for line in lines if _JINJA.search(line))
    if jinja >= 3 and 2 * jinja >= len(lines):
        return False
    includes = [line for line in lines if not _INCLUDE_PART.match(line)]
    return not includes or not all(_INCLUDE.match(line) for line in includes)


def _version_like(heading: str) -> bool:
    """Whether HEADING names a release: a version number or date, or the release not made yet."""
    return re.search(r"\d", heading) is not None or _UNRELEASED.search(heading) is not None


def _chunks(lines: list[str]) -> list[list[str]]:
    """A section's LINES cut into entries: each top-level bullet with its nested lines, and the prose
    around them (an intro paragraph, a paragraph after the list) on its own; a section without bullets is
    one entry. A fenced code block is never cut: it belongs to the entry or prose it follows."""
    fence = ""
    code: list[bool] = []  # per line: inside fenced code (its fences included)
    for line in lines:
        opened = None if fence else _CODE_FENCE.match(line)
        code.append(bool(fence or opened))
        if opened:
            fence = opened.group(1)
        elif fence and line.strip().startswith(fence) and not line.strip().strip(fence[0]):
            fence = ""
    tops = [None if in_code else _BULLET.match(line) for line, in_code in zip(lines, code, strict=True)]
    indents = [len(m.group(1)) for m in tops if m]
    if not indents:
        return [lines]
    top = min(indents)
    chunks: list[list[str]] = [[]]
    in_list = after_blank = False
    for line, bullet, in_code in zip(lines, tops, code, strict=True):
        if bullet and len(bullet.group(1)) == top:
            chunks.append([line])
            in_list = True
        elif (
            in_list and after_blank and not in_code and line.strip() and len(line) - len(line.lstrip()) <= top
        ):
            chunks.append([line])  # a paragraph back at the list's margin is prose of its own
            in_list = False
        else:
            chunks[-1].append(line)  # nested bullets, continuation lines and code: the entry's above
        after_blank = not line.strip()
    return [chunk for chunk in chunks if chunk]


def _changelog_files(
    root: Path, max_bytes: int, exclude: Sequence[str]
) -> tuple[list[tuple[str, str]], list[tuple[str, int]], list[str]]:
    """(path, stamp) of the changelog files (but those the docs' EXCLUDE globs leave out, and towncrier's
    template), tracked and untracked-not-ignored (a news fragment not added
    yet, as the docs source reads an untracked page), sorted; also the (path, size) of those over MAX_BYTES.
    Also the folders of news fragments (notes_folder), those holding only towncrier's template too.
    The stamp is the index's blob (none for an untracked file) and the work tree file's size, modification
    and change times: the entries are read from the work tree (an edit not yet committed is read too), and a
    commit of the file, which leaves it as it was, changes which commit added each entry."""
    # One process for both: `-s` prints "mode blob stage<TAB>path" for a tracked file, the bare path for
    # an untracked one.
    out = gitcmd.run(["ls-files", "-s", "-co", "--exclude-standard", "-z"], root)
    listed: dict[str, str] = {}
    folders: set[str] = set()
    for entry in out.split(b"\0"):
        staged = _STAGED.match(entry)
        raw = entry[staged.end() :] if staged else entry
        if not raw or (staged and not staged.group(1).startswith(b"100")):
            continue  # a link (120000), a submodule (160000)
        # A name that is not UTF-8 (caf\xe9.rst) keeps its bytes (surrogate escapes) so that the file can be
        # opened and given to git by its real name; its entries are stored under display_path(), as docs' are.
        path = os.fsdecode(raw)
        if (folder := notes_folder(path)) is not None and not release_notes_excluded(path, exclude):
            folders.add(folder)
        if (
            is_release_notes(path)
            and not release_notes_excluded(path, exclude)
            and not _TEMPLATE.search(path)
        ):
            listed.setdefault(path, staged.group(2).decode("ascii") if staged else "untracked")
    found: list[tuple[str, str]] = []
    too_big: list[tuple[str, int]] = []
    for path, blob in listed.items():
        try:
            st = regular_file(root / path)
        except OSError:
            continue  # tracked but deleted in the work tree
        if st is None:
            continue  # a link, a FIFO, a device: never read (a link may lead out of the repository)
        if st.st_size > max_bytes:
            too_big.append((path, st.st_size))
            continue
        found.append((path, f"{blob}:{st.st_size}:{st.st_mtime_ns}:{st.st_ctime_ns}"))
    return sorted(found), sorted(too_big), sorted(folders)


def _commit_numbers(
    root: Path, older: Sequence[tuple[str, int, str, str]] = ()
) -> tuple[dict[str, list[str]], dict[str, int]]:
    """Number → commits whose message names it (subject matches first), and every commit's time (ms). OLDER:
    (sha, time in ms, subject, message) of the commits memory holds behind a shallow clone's cut (see
    _behind_the_cut), after HEAD's history as git has it."""
    subject_hits: dict[str, list[str]] = {}
    body_hits: dict[str, list[str]] = {}
    times: dict[str, int] = {}
    args = ["log", "--no-color", "--encoding=UTF-8", "--format=%x00%H%x1f%ct%x1f%s%x1f%b", "HEAD", "--"]
    buf = b""
    for chunk in gitcmd.stream(args, root):
        buf += chunk
        *records, buf = buf.split(b"\0")
        for raw in records:
            _record(raw, subject_hits, body_hits, times)
    _record(buf, subject_hits, body_hits, times)
    for sha, ts_ms, subject, message in older:
        if sha not in times:
            _note(sha, ts_ms, subject, message, subject_hits, body_hits, times)
    merged: dict[str, list[str]] = {}
    for number in subject_hits.keys() | body_hits.keys():
        shas = list(dict.fromkeys(subject_hits.get(number, []) + body_hits.get(number, [])))
        merged[number] = shas[:MAX_COMMITS_PER_NUMBER]
    return merged, times


_PREFIX = 7  # git's shortest abbreviation


def _by_prefix(times: dict[str, int]) -> dict[str, list[str]]:
    """The first _PREFIX characters of every commit id → the ids (to resolve abbreviations in entries)."""
    out: dict[str, list[str]] = {}
    for sha in times:
        out.setdefault(sha[:_PREFIX], []).append(sha)
    return out


def _resolve(sha: str, by_prefix: dict[str, list[str]]) -> list[str]:
    """The commit SHA (full or abbreviated) names, if exactly one commit of HEAD's history has that prefix."""
    found = [full for full in by_prefix.get(sha[:_PREFIX], []) if full.startswith(sha)]
    return found if len(found) == 1 else []


def _record(
    raw: bytes, subject_hits: dict[str, list[str]], body_hits: dict[str, list[str]], times: dict[str, int]
) -> None:
    fields = content_text(raw).split("\x1f", 3)  # a Latin-1 message as the git source reads it
    if len(fields) != 4 or len(fields[0]) not in (40, 64):
        return
    sha, ts, subject, body = fields
    _note(sha, int(ts) * 1000 if ts.isdigit() else 0, subject, body, subject_hits, body_hits, times)


def _note(
    sha: str,
    ts_ms: int,
    subject: str,
    body: str,
    subject_hits: dict[str, list[str]],
    body_hits: dict[str, list[str]],
    times: dict[str, int],
) -> None:
    times[sha] = ts_ms
    for number in set(_NUMBER.findall(subject)):
        subject_hits.setdefault(number, []).append(sha)
    for number in set(_NUMBER.findall(body)) - set(_NUMBER.findall(subject)):
        body_hits.setdefault(number, []).append(sha)


# How alike two forms of a line must be (normalised, difflib's ratio) for the newer to be a rewording of the
# older ("Senmail" corrected to "Sendmail", a bullet's marker changed): the entry was written by whoever wrote
# the older one.
REWORDED = 0.7
# Removed lines of a hunk a wanted line is compared with, either side of its own place in the hunk: a commit
# rewriting the whole file is not compared line by line with every other.
_NEAR = 20


def _normal(text: str) -> str:
    """TEXT as compared across rewordings: lower case, words only (markup, bullets and punctuation gone)."""
    return " ".join(re.sub(r"[\W_]+", " ", text.lower()).split())


def _reworded(line: str, removed: list[str], at: int, same: dict[str, str]) -> str | None:
    """The line of REMOVED (a hunk's, LINE's place in it AT) or of SAME (every line the commit removed, by
    its normalised text) that LINE rewords, if any: the same words, or alike by REWORDED."""
    norm = _normal(line)
    if not norm:
        return None
    if norm in same:
        return same[norm]
    best, best_ratio = None, REWORDED
    low = max(0, min(at, len(removed)) - _NEAR)
    for old in removed[low : at + _NEAR + 1]:
        other = _normal(old)
        if not other:
            continue
        matcher = difflib.SequenceMatcher(None, norm, other, autojunk=False)
        if matcher.real_quick_ratio() < best_ratio or matcher.quick_ratio() < best_ratio:
            continue
        ratio = matcher.ratio()
        if ratio >= best_ratio:
            best, best_ratio = old, ratio
    return best


def _added_by(root: Path, paths: list[str], wanted: set[str]) -> tuple[dict[str, str], str, str]:
    """First line of an entry → the commit that first wrote it: the newest commit whose patch added that exact
    line (its current form), followed back through the commits that only reworded it (the line it replaced in
    the same hunk, or any line of that commit with the same words, is its older form: the commit that added
    that one wrote it, and so on); the newest commit that touched the files; and, when git could not read a
    past version of the files (a partial clone lacks them, a damaged one lost them), git's message: the pass
    stops there, and what the commits before it added is kept. A line whose older form lies past the
    commits walked keeps the oldest commit found to have reworded it."""
    found: dict[str, str] = {}
    newest = ""
    if not wanted:
        return found, newest, ""
    args = [
        "log",
        "-p",
        "--unified=0",
        "--no-color",
        "--no-ext-diff",
        "--no-textconv",
        "--no-renames",
        f"--max-count={MAX_CHANGELOG_COMMITS}",
        "--format=%x00%H",
        "HEAD",
        "--",
        *[f":(literal){p}" for p in paths],
    ]
    # The form of a line looked for → the entries' first lines it is an older (or the current) form of.
    pending: dict[str, list[str]] = {text: [text] for text in wanted}
    sha = ""
    hunks: list[tuple[list[str], list[str]]] = []  # this commit's (removed, added) lines, hunk by hunk

    def settle() -> None:
        """What the commit read (SHA, HUNKS) added of the lines looked for: written here, or reworded."""
        same = {_normal(old): old for removed, _ in hunks for old in removed}
        same.pop("", None)
        for removed, added in hunks:
            for at, text in enumerate(added):
                origins = pending.pop(text, None)
                if origins is None:
                    continue
                older = _reworded(text, removed, at, same)
                for origin in origins:
                    found[origin] = sha
                if older is not None and older != text:
                    pending.setdefault(older, []).extend(origins)
        hunks.clear()

    chunks = gitcmd.stream(args, root)
    try:
        for line in chunks:
            if line.startswith(b"\0"):
                settle()
                if not pending:
                    break
                sha = line[1:].strip().decode("ascii", "replace")
                newest = newest or sha
                continue
            if line.startswith(b"@@"):
                hunks.append(([], []))
            elif not hunks or line.startswith((b"+++ ", b"--- ")):
                continue
            elif line.startswith(b"+"):
                hunks[-1][1].append(line[1:].decode("utf-8", "replace").strip())
            elif line.startswith(b"-"):
                hunks[-1][0].append(line[1:].decode("utf-8", "replace").strip())
        else:
            settle()
    except GitCommandError as exc:
        from nexusmem.sources.git.commits import unreadable_object  # the walk's parser: not for a no-op sync

        if not unreadable_object(exc):
            raise
        # The commit git stopped in may have added more lines than it wrote: none of them is its (a release
        # commit would otherwise pass for one that added a few entries).
        return {text: by for text, by in found.items() if by != sha}, newest, str(exc)
    finally:
        close = getattr(chunks, "close", None)
        if close is not None:
            close()
    return found, newest, ""


# A file of the documentation (as the ranking counts a change to docs only, retrieve.rank).
_DOCS_FILE = re.compile(
    r"\.(md|mdx|markdown|rst|rest|adoc|asciidoc|rdoc|pod|org|txt)$|(^|/)(docs?|man|documentation)/"
    r"|(^|/)(readme|authors|contributors|contributing|license|copying)(\.\w+)?$",
    re.IGNORECASE,
)


def _docs_file(path: str) -> bool:
    return _DOCS_FILE.search(path) is not None


def _files_of(root: Path, shas: set[str]) -> dict[str, list[str]]:
    """sha -> the files each of SHAS changed (one `git log --no-walk --stdin --name-only`; a merge lists none)."""
    if not shas:
        return {}
    out = gitcmd.run(
        ["log", "--no-walk=unsorted", "--stdin", "--no-renames", "--format=%x01%H", "--name-only", "-z"],
        root,
        input="".join(f"{sha}\n" for sha in sorted(shas)).encode(),
    )
    found: dict[str, list[str]] = {}
    listed: list[str] = []
    for part in out.split(b"\0"):
        if part.startswith(b"\x01"):  # "\x01<sha>" heads a commit's names: "\n<path>", "<path>", ..., ""
            listed = found.setdefault(part[1:].decode("ascii", "replace").strip(), [])
        elif part.strip(b"\n"):
            listed.append(os.fsdecode(part.lstrip(b"\n")))
    return found


def _described(named: list[str], adder: str | None, touched: dict[str, list[str]]) -> list[str]:
    """The commits an entry describes: NAMED (the commits it names by sha, and those whose message has its
    `#123`), first, then ADDER (the commit that first wrote its line). A commit that only touched the release
    notes is bookkeeping, never the change: guzzle's "Small fixes on changelog (#2522)", which reworded the
    line of an entry naming #2421 and #2474; PHPMailer's "spelling: sendmail", which corrected a 2009 entry;
    a commit that wrote the notes of a release. An entry whose only commits are such has no commit it
    describes. The adder is left out, too, when the entry names commits of its own: bytes' "chore: prepare
    bytes v1.2.1 (#561)" wrote the entry "Fix unbounded memory growth when using `reserve` (#560)" and
    bumped Cargo.toml; the entry describes #560, not the release (a fix that writes its own line is named
    by its number too, or is the adder of an entry that names none). TOUCHED: sha -> the files it changed."""
    commits = list(dict.fromkeys([*named, *([adder] if adder else [])]))

    def only(sha: str, test: Callable[[str], bool]) -> bool:
        listed = touched.get(sha, [])
        return bool(listed) and all(test(path) for path in listed)

    commits = [c for c in commits if not only(c, is_release_notes)]
    if adder in commits and adder not in named and named:
        commits.remove(adder)
    return commits


# The object git names when it cannot read one ("could not fetch <oid> from promisor remote", "unable to read
# <oid>"): the cursor of a scan that stopped on it keeps it, and the next sync reads the files again once the
# clone holds it (`git log -p` fetched it).
_OBJECT = re.compile(r"\b([0-9a-f]{40}|[0-9a-f]{64})\b")


def _holds(root: Path, oid: str) -> bool:
    """Whether the clone at ROOT holds object OID (one `git cat-file -e`, which fetches nothing)."""
    code, _ = gitcmd.run_ok(["cat-file", "-e", oid], root)
    return code == 0


def _unlinked_note(missing: str) -> str:
    """What the changelog source says when the "added by" pass stopped at an object git cannot read."""
    from nexusmem.sources.git.commits import PROMISOR

    why = one_line(missing.rsplit(": ", 1)[-1].strip())
    if PROMISOR in missing:
        return (
            "entries not linked to the commits that added them: this partial clone lacks the changelog's"
            " past versions, and NexusMem never fetches (`git log -p >/dev/null` fetches them, and the next"
            f" sync links them; links by issue number and commit id are kept): {why}"
        )
    return (
        "entries not linked to the commits that added them: git cannot read a past version of the changelog"
        f" (a damaged or partial clone; `git fsck` tells; links by issue number and commit id are kept): {why}"
    )


def _behind_the_cut(ctx: ScanContext) -> list[tuple[str, int, str, str]]:
    """(sha, time in ms, subject, message) of the commits memory keeps behind a shallow clone's cut (recorded
    before a shallower fetch put them out of git's reach; the git source's keep), newest first: the entries
    that name them keep their links. [] for a complete clone, or outside a sync."""
    ancestors = ctx.known.get("commit_ancestors")
    texts = ctx.known.get("commit_texts")
    cut = boundary(ctx.root)
    if not cut or ancestors is None or texts is None:
        return []
    behind = ancestors(cut)  # the cut's own commits too: `.git/shallow` keeps an older cut's line
    found: list[tuple[str, int, str, str]] = texts(sorted(behind)) if behind else []
    return sorted(found, key=lambda row: row[1], reverse=True)


class ChangelogSource:
    """Release-note entries, linked to the commits they describe (see the module docstring)."""

    name = "changelog"
    kinds: tuple[str, ...] = ("doc_section",)

    def enabled(self, config: dict[str, Any]) -> bool:
        """On unless sources.changelog.enabled is false."""
        return bool(config.get("sources", {}).get("changelog", {}).get("enabled", True))

    def scan(self, ctx: ScanContext) -> ScanResult:
        """Nothing when no changelog file changed since the last sync; else every entry and its links."""
        docs = ctx.config.get("sources", {}).get("docs", {})
        max_bytes = int(docs.get("maxFileBytes", 1_000_000))
        exclude = list(docs.get("exclude", []))
        code, _ = gitcmd.run_ok(["rev-parse", "-q", "--verify", "HEAD"], ctx.root)
        files, too_big, folders = (
            _changelog_files(ctx.root, max_bytes, exclude) if code == 0 else ([], [], [])
        )
        # A shallow clone's boundary too: deepened or unshallowed, the entries' commits can be found now.
        marker = shallow_marker(ctx.root)
        key: list[Any] = [_CURSOR_VERSION, files, *([marker] if marker else [])]
        digest = hashlib.sha256(json.dumps(key).encode()).hexdigest()[:24]
        result = ScanResult(nodes=(), cursor=ctx.cursor)
        if ctx.cursor == digest and not ctx.full:
            return result
        # The files are as they were, and the object the last scan could not read is still missing.
        waiting = (ctx.cursor or "").removeprefix(f"{digest} ")
        if not ctx.full and waiting != (ctx.cursor or "") and not _holds(ctx.root, waiting):
            return result
        # Named when the files are read, as the docs source does: a sync that finds nothing changed would
        # otherwise add the same names to `status`'s history every time.
        for path, size in too_big:
            result.skip(too_big_problem(path, size, max_bytes))
        result.nodes = self._emit(ctx, result, files, digest, folders)
        return result

    def _emit(
        self,
        ctx: ScanContext,
        result: ScanResult,
        files: list[tuple[str, str]],
        digest: str,
        folders: Sequence[str] = (),
    ) -> Iterator[Node]:
        """The entries of FILES and their links; FOLDERS: the folders of news fragments (walked whole)."""
        entries: list[Entry] = []
        unreadable: list[str] = []
        for path, _stamp in files:
            try:
                raw = (ctx.root / path).read_bytes()
            except OSError as exc:
                shown = display_path(path)
                result.skip(unreadable_problem(shown, exc))
                unreadable.append(shown + "#")
                continue
            entries.extend(split_entries(doc_text(raw), display_path(path)))
        try:
            older = _behind_the_cut(ctx) if entries else []
            numbers, times = _commit_numbers(ctx.root, older) if entries else ({}, {})
        except GitCommandError as exc:
            result.notes.append(f"commit links skipped: {one_line(str(exc))}")
            numbers, times, older = {}, {}, []
        missing = ""
        try:
            wanted = {e.first_line for e in entries} if times else set()
            # A folder of news fragments as a whole: a release moves the lines of fragments it deletes into
            # the NEWS file (dateutil's "Update news to prepare for release"), and the fragment's adder wrote it.
            walked = [*(p for p, _ in files if notes_folder(p) is None), *folders]
            added, newest, missing = _added_by(ctx.root, walked, wanted)
        except GitCommandError as exc:
            result.notes.append(f"entries not linked to the commits that added them: {one_line(str(exc))}")
            added, newest = {}, ""
        if missing:
            result.notes.append(_unlinked_note(missing))
        # An entry keeps the links it had to those commits: git cannot tell any more which of them added it.
        behind = {node_id(ctx.project_id, "git_commit", sha): sha for sha, *_ in older if sha not in times}
        linked_before = ctx.known.get("links_from") if behind else None
        per_commit: dict[str, int] = {}
        for sha in added.values():
            per_commit[sha] = per_commit.get(sha, 0) + 1
        links: list[tuple[str, str, str]] = []
        emitted: set[str] = set()
        emitted_ids: list[str] = []
        seen: dict[str, int] = {}
        by_prefix = _by_prefix(times) if any(e.shas for e in entries) else {}
        candidates: list[tuple[list[str], str | None]] = []
        writers: list[
            str | None
        ] = []  # per entry: the commit that first wrote its line, however many it wrote
        for entry in entries:
            named: list[str] = [full for sha in entry.shas for full in _resolve(sha, by_prefix)]
            for number in entry.numbers:
                named.extend(numbers.get(number, []))
            named = [c for c in dict.fromkeys(named) if c in times]
            wrote = added.get(entry.first_line)
            wrote = wrote if wrote in times else None
            # A commit that wrote many entries (a release's notes, the file's first version) describes none of
            # them, but it still dates them: they were written then, not when the file was last touched.
            adder = wrote if wrote and per_commit.get(wrote, 0) <= BULK_ENTRIES else None
            candidates.append((named, adder))
            writers.append(wrote)
        try:
            touched = _files_of(ctx.root, {c for named, adder in candidates for c in [*named, adder] if c})
        except GitCommandError as exc:
            result.notes.append(f"changelog links not told from bookkeeping: {one_line(str(exc))}")
            touched = {}
        for n, entry in enumerate(entries):
            ctx.progress("changelog", n, len(entries))
            named, adder = candidates[n]
            commits = _described(named, adder, touched)
            body = redact_cut(entry.text, MAX_ENTRY_CHARS)  # cut after: a secret cut short stays unredacted
            version = redact(entry.version)
            key_base = f"{entry.path}#{version}#{hashlib.sha256(body.encode()).hexdigest()[:12]}"
            occurrence = seen.get(key_base, 0)
            seen[key_base] = occurrence + 1
            key = f"{key_base}#{occurrence}"
            if linked_before is not None:
                before = linked_before([node_id(ctx.project_id, "doc_section", key)])
                commits += [behind[to] for _id, to, rel in before if rel == RELATION and to in behind]
                commits = list(dict.fromkeys(commits))
            # The title shows the first line as a reader sees it ("Fix copy (#123)", not the link's URL); the
            # text keeps the link, whose number ties the entry to its commit.
            headline = re.sub(r"^[-*+]\s+", "", body.split("\n", 1)[0]).strip()
            headline = rst_inline_text(headline) if is_rst(entry.path) else inline_text(headline)
            if len(headline) > 120:
                headline = cut_redacted(headline, 119) + "…"  # never half a «redacted:…» placeholder
            # Dated by the commit that first wrote its line (a release commit that wrote many too), else by the
            # newest commit it names, else by the file.
            ts = times.get(writers[n] or "", 0) or max((times.get(c, 0) for c in commits), default=0)
            ts = ts or times.get(newest, 0)
            node = Node(
                project=ctx.project_id,
                kind="doc_section",
                source=self.name,
                natural_key=key,
                ref=f"{entry.path}#{version}",
                title=one_line(f"{entry.path} — {version}: {headline}"),  # a folder named with a newline
                body=body,
                ts=ts,
                signal=doc_signal(body),
                group=f"{entry.path}#{version}",
                files=(entry.path,),
                meta={
                    "path": entry.path,
                    "heading": version,
                    "changelog": True,
                    "numbers": entry.numbers,
                    "commits": commits,
                },
            )
            emitted.add(node.natural_key)  # as stored: a secret in the file's name redacted (Node)
            emitted_ids.append(node.id)
            for sha in commits:
                links.append((node.id, node_id(ctx.project_id, "git_commit", sha), RELATION))
            yield node
        # Set only after every entry was emitted: an interrupted scan replaces no links and prunes nothing.
        # A file that exists but could not be read this time keeps its old entries and their links, and
        # the digest is not persisted, so the next sync reads it again.
        # "path#": an entry's key starts with its file's path as a node keeps it (a secret in it redacted).
        prefixes = tuple(redacted_path(name) for name in unreadable)
        result.keep = lambda k: k in emitted or (bool(prefixes) and k.startswith(prefixes))
        result.links = links
        result.link_relation = RELATION
        if unreadable:
            result.link_scope = emitted_ids
        elif missing:
            # Kept with the object git could not read: once the clone holds it, the next sync reads the files
            # again and links what the commits past it added; until then nothing is read again for nothing.
            held = _OBJECT.search(missing.rsplit(": ", 1)[-1])
            result.cursor = f"{digest} {held.group(1)}" if held else ctx.cursor
        else:
            result.cursor = digest
