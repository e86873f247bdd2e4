"""Docs collector: the repository's Markdown, reStructuredText, AsciiDoc, Org and manual-page (troff)
files, one `doc_section` node per heading-delimited section.

Where a doc file becomes nodes: `scan()` lists candidate files with one `git ls-files`, skips all work when
nothing changed since the last sync (fingerprint cursor), else splits every file at its headings
(`sections_of`: Markdown's ATX and setext headings, reStructuredText's adorned titles, AsciiDoc's `==`
and underlined titles, Org's `*` headlines, troff's .SH/.SS) and dates each file by the last commit that
touched it, all in one `git log`.
"""

from __future__ import annotations

import codecs
import contextlib
import functools
import hashlib
import json
import os
import re
import stat
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from fnmatch import translate
from pathlib import Path
from typing import Any

from nexusmem import gitcmd, paths
from nexusmem.config import DEFAULTS
from nexusmem.errors import GitCommandError
from nexusmem.markup import RST_ADORNMENT, RST_LABEL, RST_SUFFIXES, rst_inline_text, rst_prose
from nexusmem.nodes import Node, redacted_path
from nexusmem.redact import cut_redacted, path_text, redact, redact_path
from nexusmem.signals import doc_signal
from nexusmem.sources.base import ScanContext, ScanResult
from nexusmem.sources.conversation.aider import CHAT_FILE as AIDER_CHAT_FILE
from nexusmem.text import content_text, one_line

TRUNCATION_MARKER = "\n…[truncated]"
# Bump when the way sections are cut or nodes are shaped changes: an old cursor then forces a re-emit.
_CURSOR_VERSION = "docs-20"
# Above this many bytes of pathspecs, ask git log with the include globs instead of literal paths
# (command-line limits: ~32 KB on Windows, 128 KB per argument on Linux).
_MAX_PATHSPEC_BYTES = 24_000

# Release notes are the changelog source's (one node per entry, linked to its commits): file names
# (case-insensitive) with no extension or a text format's, at most RELEASE_NOTES_DEPTH folders down, also
# under "version history" (golang-jwt's VERSION_HISTORY.md, anyio's docs/versionhistory.rst) and with an
# older major's number (rollup's CHANGELOG-2.md, league/commonmark's CHANGELOG-1.x.md). Code and
# configuration under those names are not release notes: `scripts/release.py`, `lib/mechanize/history.rb`,
# `.github/workflows/release.yml` (a CI workflow was read as 31 "entries" of ripgrep's release notes). While
# the changelog source is on, the docs source leaves these files to it: `docs/release-notes.md` was read
# twice, as entries and as 187 usage sections.
RELEASE_NOTES = re.compile(
    r"^(changelog|changes|news|history|version[-_ ]?history|releases?|release[-_ ]notes)"
    r"([-_ ]v?\d+(\.(\d+|x))*)?"  # an older major's notes kept apart: CHANGELOG-1.md, CHANGELOG-0.x.md
    r"(\.(md|markdown|mdx|rst|txt|text|adoc|asciidoc|org|rdoc|textile))?$",
    re.IGNORECASE,
)
RELEASE_NOTES_DEPTH = 2
_NOT_RELEASE_NOTES = re.compile(r"(^|/)(node_modules|vendor|third_party|\.git)/")
# Release notes kept as files in a folder of that name: pypa/hatch's docs/history/hatch.md and
# hatchling.md (one per package), and the news fragments towncrier collects (pytest-xdist's
# changelog/1219.feature.rst, cleo's news/334.removal.md, pypa/build's docs/changelog/1058.misc.rst: one
# unreleased entry each, added by the change it describes). The folder's README, which says how to write
# them (yarl's CHANGES/README.rst), and a hidden template are docs, not notes.
_RELEASE_NOTES_DIR = re.compile(
    r"(?:^|/)(changelogs?|changelog\.d|changes|history|releases?|release[-_ ]notes|news|newsfragments)/$",
    re.IGNORECASE,
)
_TEXT_NOTE = re.compile(
    r"^(?!readme\b)(?!\.)[^/]+\.(md|markdown|mdx|rst|txt|text|adoc|asciidoc|org|rdoc)$", re.I
)


def is_agent_transcript(path: str) -> bool:
    """Whether the repository file PATH is an agent's own record of a conversation, kept in the work tree
    as Markdown: Aider's chat history, SpecStory's saved chats. Such a file is the conversation source's
    (opt-in, and it keeps no tool output), never documentation, whatever the docs globs say."""
    folder, _, name = path.rpartition("/")
    return name == AIDER_CHAT_FILE or (folder + "/").startswith(".specstory/")


def is_release_notes(path: str) -> bool:
    """Whether the repository file PATH (posix, relative) holds release notes the changelog source reads."""
    folder, _, name = path.rpartition("/")
    if path.count("/") > RELEASE_NOTES_DEPTH or _NOT_RELEASE_NOTES.search(path) is not None:
        return False
    if RELEASE_NOTES.match(name) is not None:
        return True
    return _RELEASE_NOTES_DIR.search(folder + "/") is not None and _TEXT_NOTE.match(name) is not None


def notes_folder(path: str) -> str | None:
    """The folder of release notes kept as files (towncrier's changelog.d/, news/) PATH lies in, if any: its
    fragments, deleted once a release gathers them into the NEWS file, are where that file's lines came from."""
    folder = path.rpartition("/")[0]
    return folder if folder and _RELEASE_NOTES_DIR.search(folder + "/") is not None else None


def notes_globs(exclude: Sequence[str]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The docs source's EXCLUDE globs split in two: those that name release notes themselves (the default
    `CHANGELOG*`, `NEWS*`, `HISTORY*`), which only leave release notes to the changelog source, and the
    others (`tests/*`, `vendor/*`), which leave a file out of both."""
    names = tuple(p for p in exclude if "/" not in p and RELEASE_NOTES.match(p.rstrip("*").rstrip(".")))
    return names, tuple(p for p in exclude if p not in names)


def release_notes_excluded(path: str, exclude: Sequence[str]) -> bool:
    """Whether the docs source's EXCLUDE globs (sources.docs.exclude) keep the release notes at PATH from the
    changelog source too: a test suite's or a fixture's (`tests/*`, `fixtures/*`: a `## 9.9.9` there is no
    release of the project), a vendored copy, a folder the config leaves out. A glob that names release
    notes themselves (the default `CHANGELOG*`, `NEWS*`) only leaves them to the changelog source."""
    others = notes_globs(exclude)[1]
    return bool(others) and _glob_match(path, others)


# The docs folder at the top of a repository, and the exclude globs that keep a test suite's folders out
# (config's defaults: `tests/*`, `fixtures/*`, `spec/*`...). Under the docs folder such a folder is a page of
# the docs: pytest-asyncio's `docs/reference/fixtures/index.rst` is the reference of its fixtures.
_DOCS_ROOT = re.compile(r"^(?:docs?|documentation)/", re.IGNORECASE)
_TEST_FOLDER_GLOB = re.compile(r"^(?:test|tests|__tests__|spec|specs|testdata|fixtures)/\*$", re.IGNORECASE)


def exclusions_for(path: str, patterns: tuple[str, ...]) -> tuple[str, ...]:
    """The exclude PATTERNS that apply to the file at PATH: all of them, but those naming a test suite's
    folder for a file under the docs folder (_DOCS_ROOT)."""
    if _DOCS_ROOT.match(path) is None:
        return patterns
    return tuple(p for p in patterns if _TEST_FOLDER_GLOB.match(p) is None)


def left_to_release_notes(path: str, names: Sequence[str], *, notes: bool) -> bool:
    """Whether a glob of NAMES (notes_globs' first half) leaves the file at PATH out of the docs, NOTES saying
    whether it is release notes (is_release_notes, asked once by the caller): only the release notes the changelog source reads (is_release_notes), or would read were it on. Any other file
    those globs match is documentation nothing else reads: vuejs/router's `guide/essentials/history-mode.md`
    (HISTORY*), flake8's `docs/source/internal/releases.rst` on how it makes releases (RELEASES*), notes
    deeper than RELEASE_NOTES_DEPTH (`crates/filterer/globset/CHANGELOG.md`) or under another name
    (`ChangeLog-old.md`, `CHANGESv3.md`) were read by neither source."""
    return notes and bool(names) and _glob_match(path, names)


_ATX = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})(.*)$")
_SETEXT = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
# A line that cannot be a one-line paragraph over a setext underline (list item, quote, table, html...).
_NOT_PARAGRAPH = re.compile(r"^(?: {4,}|\t| {0,3}(?:[-*+>|<]|\d+[.)])(?:\s|$))")


# Headings that name a *kind* of section, not its subject: "Example" says nothing about what it is an example
# of, and a results list of five "Example" titles is useless. Such a section carries its parent heading in
# its title ("Retries › Example"); matched case-insensitively, ignoring a trailing colon or number. So does
# a heading its file repeats (_section_nodes). The ref stays path#Heading.
GENERIC_HEADINGS = frozenset(
    [
        "answer",
        "answers",
        "arguments",
        "background",
        "caveats",
        "context",
        "description",
        "details",
        "discussion",
        "example",
        "examples",
        "faq",
        "input",
        "intro",
        "introduction",
        "limitations",
        "note",
        "notes",
        "options",
        "output",
        "overview",
        "parameters",
        "params",
        "problem",
        "question",
        "result",
        "results",
        "returns",
        "see-also",
        "solution",
        "step",
        "steps",
        "summary",
        "syntax",
        "tip",
        "tips",
        "usage",
        "warning",
        "warnings",
    ]
)
_HEADING_TAIL = re.compile(r"[\s:.#0-9()-]+$")


def is_generic_heading(heading: str) -> bool:
    """Whether HEADING names a kind of section ("Example 2:", "Usage", "See also") rather than a subject."""
    key = _HEADING_TAIL.sub("", heading.strip().lower()).replace(" ", "-")
    return key in GENERIC_HEADINGS


@dataclass(frozen=True)
class Section:
    """One heading-delimited part of a Markdown file. Level 0 is the preamble before the first heading."""

    heading: str
    level: int
    line: int  # 1-based line of the heading (1 for the preamble)
    trail: tuple[str, ...]  # headings from the top of the file down to this one
    text: str  # the section, heading line included
    head: int = 0  # how many lines of `text` are its heading (an RST title's labels and adornments too)


# A heading's explicit anchor or attributes, `## Options {#options}` / `{#id .class}` (Pandoc, kramdown,
# VitePress, Docusaurus, MkDocs' attr_list): markup, not words of the heading a reader sees.
_HEADING_ATTRIBUTES = re.compile(r"[ \t]*\{[ \t]*[#.][^{}]*\}[ \t]*$")
# An empty HTML anchor in a heading, `## <a id="nulls"></a> Properties missing` (GitHub renders nothing):
# a link target, not words.
_HTML_ANCHOR = re.compile(
    r"""<a\s+(?:id|name)\s*=\s*(?:"[^"<>]*"|'[^'<>]*'|[^\s"'<>/]+)\s*(?:/>|>\s*</a\s*>)""", re.IGNORECASE
)


# A code span (its text is kept as written, links and all), an inline image and an inline link
# (`[text](url "title")`, `[text](<url>)`). A reference-style `[text][label]` is a link only where the
# document defines the label, and the text between brackets otherwise ("copy(src, dest[, options][,
# callback])"): a heading alone cannot tell, so it is left as written.
_CODE_SPAN = re.compile(r"(?<!`)(`{1,8})(?!`)(.+?)(?<!`)\1(?!`)")
# Longer than this, a "heading" is a damaged or generated line: kept as written (the patterns above are
# cheap on a heading, not on a megabyte of backticks).
_RENDER_MAX_CHARS = 1_000
_DESTINATION = r"\((?:<[^<>\n]*>|(?:[^()\s]|\([^()\s]*\))*)(?:\s+(?:\"[^\"]*\"|'[^']*'))?\s*\)"
_IMAGE = re.compile(r"!\[[^\[\]]*\]" + _DESTINATION)
_LINK = re.compile(r"\[([^\[\]]*)\]" + _DESTINATION)


def inline_text(text: str) -> str:
    """TEXT with its links shown as their text and its images left out, as a reader sees them; code spans
    as written."""
    if len(text) > _RENDER_MAX_CHARS or "\x00" in text:
        return text
    spans: list[str] = []

    def keep(found: re.Match[str]) -> str:
        spans.append(found.group(0))
        return f"\x00{len(spans) - 1}\x00"

    held = _CODE_SPAN.sub(keep, text)
    if "[" not in held:
        return text
    held = _LINK.sub(r"\1", _IMAGE.sub(" ", held))
    return re.sub("\x00(\\d+)\x00", lambda m: spans[int(m.group(1))], held)


def heading_text(raw: str) -> str:
    """A Markdown heading as a reader sees it: without an explicit `{#anchor}` at its end or an empty
    `<a id="…"></a>` anywhere, its links as their text and its images (badges) left out, unless nothing
    is left."""
    text = raw.strip()
    bare = " ".join(inline_text(_HTML_ANCHOR.sub(" ", _HEADING_ATTRIBUTES.sub("", text))).split())
    return bare or text


class _Cutter:
    """What every splitter keeps between its titles: the lines under the current heading, the trail of
    headings above it, and the sections closed so far. A section with nothing under its heading is dropped
    (a bare heading is noise in results) but still counts in the trail."""

    def __init__(self, file_name: str) -> None:
        self.sections: list[Section] = []
        self._stack: list[tuple[int, str]] = []
        self.heading, self.level, self.line_no = file_name, 0, 1
        self.trail: tuple[str, ...] = (file_name,)
        self.body: list[str] = []
        self.head = 0  # how many lines of `body` are the heading itself (0 for the preamble)

    def close(self) -> None:
        if "\n".join(self.body[self.head :]).strip():
            text = "\n".join(self.body).strip("\n")
            self.sections.append(Section(self.heading, self.level, self.line_no, self.trail, text, self.head))

    def open(self, heading: str, level: int, line_no: int, title_lines: list[str]) -> None:
        """Close the current section and start HEADING (LEVEL, at LINE_NO), whose TITLE_LINES begin it."""
        self.close()
        while self._stack and self._stack[-1][0] >= level:
            self._stack.pop()
        self._stack.append((level, heading))
        self.trail = tuple(h for _, h in self._stack)
        self.heading, self.level, self.line_no = heading, level, line_no
        self.body, self.head = list(title_lines), len(title_lines)

    def finish(self) -> list[Section]:
        self.close()
        return self.sections


def split_sections(text: str, file_name: str) -> list[Section]:
    """Cut Markdown TEXT at ATX (and simple setext) headings, ignoring '#' lines inside fenced code.

    A section runs from its heading to the next heading of any level. Sections with nothing under their
    heading are dropped (a bare heading is noise in results) but still count in the heading trail.
    """
    lines = text.split("\n")
    cut = _Cutter(file_name)
    fence: str | None = None
    start = 0
    # YAML front matter belongs to the preamble; its closing '---' must not read as a setext underline.
    if lines and lines[0].strip() == "---":
        for j in range(1, len(lines)):
            if lines[j].strip() in ("---", "..."):
                cut.body.extend(lines[: j + 1])
                start = j + 1
                break

    for i in range(start, len(lines)):
        line = lines[i]
        if fence is not None:
            stripped = line.strip()
            # A fence closes with the same character, at least as long, and nothing after it.
            if stripped.startswith(fence) and not stripped.lstrip(fence[0]):
                fence = None
            cut.body.append(line)
            continue
        m = _FENCE.match(line)
        if m and not (m.group(1)[0] == "`" and "`" in m.group(2)):
            fence = m.group(1)
            cut.body.append(line)
            continue
        atx = _ATX.match(line)
        if atx and (atx.group(2) or "").strip():
            cut.open(heading_text(atx.group(2)), len(atx.group(1)), i + 1, [line])
            continue
        setext = _SETEXT.match(line)
        body = cut.body
        if (
            setext
            and len(body) > cut.head
            and body[-1].strip()
            and not _NOT_PARAGRAPH.match(body[-1])
            # only a one-line paragraph: '---' under a longer paragraph is more often a rule than a heading
            and (len(body) - cut.head < 2 or not body[-2].strip())
        ):
            title_line = body.pop()
            cut.open(heading_text(title_line), 1 if setext.group(1)[0] == "=" else 2, i, [title_line, line])
            continue
        body.append(line)
    return cut.finish()


def _glob_match(path: str, patterns: Sequence[str]) -> bool:
    """gitignore-like, case-insensitive glob match.

    A pattern without '/' matches the file name at any depth; one with '/' matches the path from the root
    or from any directory ('node_modules/*' also hides a/node_modules/x.md).
    """
    by_path, by_name = _glob_regexes(tuple(patterns))
    lower = path.lower()
    if by_path is not None and by_path.match(lower):
        return True
    return by_name is not None and by_name.match(lower.rsplit("/", 1)[-1]) is not None


@functools.lru_cache(maxsize=16)
def _glob_regexes(patterns: tuple[str, ...]) -> tuple[re.Pattern[str] | None, re.Pattern[str] | None]:
    """PATTERNS as two regexes (over the lower-cased path, over the file name): one match per file instead
    of fnmatchcase per pattern and file (each is `re.match(fnmatch.translate(pattern), text)`, so the
    alternation of the translations answers as any() of them)."""
    on_path: list[str] = []
    on_name: list[str] = []
    for raw in patterns:
        pat = raw.lower().lstrip("/")
        if "/" in pat:
            on_path += [translate(pat), translate("*/" + pat)]
        else:
            on_name.append(translate(pat))

    def joined(parts: list[str]) -> re.Pattern[str] | None:
        return re.compile("|".join(f"(?:{p})" for p in parts)) if parts else None

    return joined(on_path), joined(on_name)


@dataclass(frozen=True)
class _Candidate:
    path: str  # repo-relative, posix
    tracked: bool
    size: int
    mtime_ns: int
    ctime_ns: int = 0  # changes with any write, also one that keeps the mtime (`cp -p`, `rsync -a`)


class DocsSource:
    """Markdown, reStructuredText, AsciiDoc, Org and manual-page files of the repository (tracked and
    untracked-not-ignored) as `doc_section` nodes."""

    name = "docs"
    kinds = ("doc_section",)

    def enabled(self, config: dict[str, Any]) -> bool:
        """On unless sources.docs.enabled is false."""
        return bool(config.get("sources", {}).get("docs", {}).get("enabled", True))

    def scan(self, ctx: ScanContext) -> ScanResult:
        """Emit every section when any candidate file (or HEAD, or the config) changed, else nothing."""
        settings = ctx.config.get("sources", {}).get("docs", {})
        include = list(settings.get("include", DEFAULTS["sources"]["docs"]["include"]))
        exclude = list(settings.get("exclude", []))
        max_bytes = int(settings.get("maxFileBytes", 1_000_000))
        max_body = int(ctx.config.get("limits", {}).get("maxBodyChars", 20_000))
        from nexusmem.sources.changelog import ChangelogSource  # it imports this module

        changelog = ChangelogSource().enabled(ctx.config)

        head = _head_sha(ctx.root)
        candidates, too_big, sparse = _candidates(
            ctx.root, include, exclude, max_bytes, skip_release_notes=changelog
        )
        # A clone deepened since (`git fetch --unshallow`) keeps its HEAD but not its files' dates.
        shallow = shallow_marker(ctx.root)
        settings_used = [include, exclude, max_bytes, max_body, changelog, sparse, shallow]
        fingerprint = _fingerprint(head, candidates, settings_used)
        result = ScanResult(nodes=())
        previous = _decode_cursor(ctx.cursor)
        if previous.get("fp") == fingerprint and not ctx.full:
            result.cursor = ctx.cursor
            return result
        # Named when the files are read (as a bad log line is, once): a sync that finds nothing changed
        # would otherwise add the same names to `status`'s history every time.
        for path, size in too_big:
            result.skip(too_big_problem(path, size, max_bytes))
        dated = None if ctx.full else _Dated.of(previous)
        read = _Read(fingerprint, _settings_key(settings_used))
        if dated is not None and previous.get("settings") == read.settings:
            files = previous.get("stamps")
            read.before = (
                {p: v for p, v in files.items() if isinstance(v, str)} if isinstance(files, dict) else {}
            )
        result.nodes = self._emit(
            ctx, result, head, candidates, include, max_body, read, sparse, dated, shallow
        )
        return result

    def _emit(
        self,
        ctx: ScanContext,
        result: ScanResult,
        head: str | None,
        candidates: list[_Candidate],
        include: list[str],
        max_body: int,
        read: _Read,
        sparse: list[str],
        dated: _Dated | None,
        shallow: str,
    ) -> Iterator[Node]:
        emitted: set[str] = set()
        unreadable: list[str] = []
        # A sparse checkout leaves files git still tracks out of the work tree: their sections stay.
        kept = [display_path(path) + "#" for path in sparse]
        now_dated = _file_times(ctx.root, head, candidates, include, dated, shallow)
        times = now_dated.times
        for n, cand in enumerate(candidates):
            ctx.progress("docs", n, len(candidates))
            # A file name that is not UTF-8 (caf\xe9.md) is read by its real name but stored with U+FFFD:
            # stored text must be valid UTF-8, and the mapping is the same on every scan (as in git.py).
            shown = display_path(cand.path)
            ts = times.get(cand.path, cand.mtime_ns // 1_000_000)
            if read.unchanged(cand, ts):
                # As the last sync found it (size, times, date): its sections are in memory as they are.
                kept.append(shown + "#")
                continue
            try:
                raw = (ctx.root / cand.path).read_bytes()
            except OSError as exc:
                result.skip(unreadable_problem(shown, exc))
                unreadable.append(shown + "#")
                continue
            if is_binary(raw):
                result.skip(f"{shown}: binary, not text")
                # Unstamped, it is read (and named) again by the next sync that reads the docs, as a file
                # over maxFileBytes is named each time.
                read.stamps.pop(cand.path, None)
                continue
            try:
                nodes = list(_section_nodes(ctx.project_id, shown, doc_text(raw), ts, max_body))
            except Exception as exc:  # one odd file must not stop the others (fuzzed: none known)
                result.skip(f"{shown}: cannot split into sections ({type(exc).__name__}: {str(exc)[:120]})")
                continue
            for node in nodes:
                if node.natural_key in emitted:
                    continue
                emitted.add(node.natural_key)
                yield node
        # Set only once every file was read: an interrupted scan persists nothing and prunes nothing.
        # A file that exists but could not be read this time keeps its old sections.
        # "path#": a section's key is its file's path (as a node keeps it: a secret in it redacted), "#", its
        # heading.
        files_kept = {redacted_path(name) for name in (*unreadable, *kept)}

        def keep(key: str) -> bool:
            if key in emitted:
                return True
            at = key.find("#")
            while at >= 0:  # a path may hold a "#" of its own
                if key[: at + 1] in files_kept:
                    return True
                at = key.find("#", at + 1)
            return False

        result.keep = keep
        # Not persisting the fingerprint makes the next sync try the unreadable file again.
        result.cursor = None if unreadable else now_dated.cursor(read, ctx.known.get("denied"))


# A field of a file's metadata before its first title (`:orphan:`, `:tocdepth: 2`, `:og:description: …`).
_RST_FIELD = re.compile(r"^:[\w.:-]+:(?:[ \t].*)?$")


def _labels_above(body: list[str], floor: int) -> int:
    """Where in BODY (the lines of the section being read; the first FLOOR are its title) the labels directly
    above the next title start, blank lines between them and the title allowed: len(BODY) when none is."""
    start = j = len(body)
    while j > floor and (not body[j - 1].strip() or RST_LABEL.match(body[j - 1])):
        j -= 1
        if body[j].strip():
            start = j
    return start


# A manual page's file name: "fzf.1", "git-log.1", "tmux.1", "foo.3p".
_MAN_NAME = re.compile(r"\.[1-9][a-z]?$")


def sections_of(text: str, file_name: str) -> list[Section]:
    """TEXT cut into sections by the markup its FILE_NAME says: reStructuredText for .rst, troff for a
    manual page (.1 to .9), AsciiDoc for .adoc, Org for .org and a GNU NEWS outline (no extension), RDoc for
    .rdoc (unless it says `:markup: markdown`), else Markdown."""
    return _SPLITTERS[markup_of(text, file_name)](text, file_name)


def markup_of(text: str, file_name: str) -> str:
    """The markup sections_of reads TEXT (the file FILE_NAME) in: org, rst, man, asciidoc, rdoc or markdown."""
    name = file_name.lower()
    if name.endswith(ORG_SUFFIXES) or ("." not in name and is_gnu_news(text)):
        return "org"
    if name.endswith(RST_SUFFIXES):
        return "rst"
    if _MAN_NAME.search(name):
        return "man"
    if name.endswith(ASCIIDOC_SUFFIXES):
        return "asciidoc"
    if name.endswith(RDOC_SUFFIXES) and not _RDOC_MARKDOWN.search(text[:RDOC_DIRECTIVE_CHARS]):
        return "rdoc"
    return "markdown"


# Markdown's backslash escape: a backslash before an ASCII punctuation character (CommonMark 2.4).
_MD_ESCAPE = re.compile(r"\\([!-/:-@\[-`{-~])")


def markdown_unescaped(text: str) -> str:
    """A Markdown heading (as heading_text keeps it) with its backslash escapes as a reader sees them
    ("connection\\_pool" reads "connection_pool"); a code span as written, where a backslash is itself."""
    if "\\" not in text or len(text) > _RENDER_MAX_CHARS or "\x00" in text:
        return text
    spans: list[str] = []

    def keep(found: re.Match[str]) -> str:
        spans.append(found.group(0))
        return f"\x00{len(spans) - 1}\x00"

    held = _MD_ESCAPE.sub(r"\1", _CODE_SPAN.sub(keep, text))
    return re.sub("\x00(\\d+)\x00", lambda m: spans[int(m.group(1))], held)


# GNU NEWS (coreutils, grep, Emacs' etc/NEWS): an outline, each release a `* ` heading ("* Noteworthy
# changes in release 9.5 (2024-03-28) [stable]", "* Changes in Emacs 29.1"), its parts `** ` ones ("** Bug
# fixes"), read as Org's headlines. A Markdown list's `* 1.2: …` bullets are not: the outline has parts too,
# or says it is one (`-*- outline -*-`).
_GNU_NEWS_RELEASE = re.compile(r"^\*[ \t]+\S.*\d+\.\d+", re.MULTILINE)
_GNU_NEWS_PART = re.compile(r"^\*\*[ \t]+\S", re.MULTILINE)


def is_gnu_news(text: str) -> bool:
    """Whether TEXT (a file with no extension) is a GNU NEWS outline of releases."""
    if _GNU_NEWS_RELEASE.search(text) is None:
        return False
    return "-*- outline -*-" in text.split("\n", 1)[0] or _GNU_NEWS_PART.search(text) is not None


RDOC_SUFFIXES = (".rdoc",)
# An RDoc heading ("= RAKE -- Ruby Make", "== Installation", "=== 13.2.1"): at the left margin, level by
# the number of `=`. An indented line is verbatim text (code), never a heading; Markdown's `#` means
# nothing in RDoc, so a Ruby comment in an example is not cut at. A file may say `:markup: markdown` at
# its top, and is then read as Markdown.
_RDOC_HEADING = re.compile(r"^(={1,6})[ \t]*([^=\s].*?)[ \t]*$")
_RDOC_MARKDOWN = re.compile(r"^[ \t#]*:markup:[ \t]*markdown\b", re.IGNORECASE | re.MULTILINE)
RDOC_DIRECTIVE_CHARS = 2000
# RDoc's inline markup in a heading: +code+, *bold*, _emphasis_ around one word, and `\` escapes.
_RDOC_INLINE = re.compile(r"(?<![\w\\])([+*_])(\S+?)\1(?!\w)")


def rdoc_heading_text(raw: str) -> str:
    """An RDoc heading as a reader sees it: its inline markup (+code+, *bold*, _em_) and escapes dropped."""
    text = _RDOC_INLINE.sub(r"\2", raw.strip()).replace("\\", "")
    return " ".join(text.split()) or raw.strip()


def split_rdoc_sections(text: str, file_name: str) -> list[Section]:
    """Cut RDoc markup (README.rdoc, History.rdoc, doc/*.rdoc) at its headings (`= Title`, `== Section` ...
    level = number of `=`). As split_sections otherwise."""
    cut = _Cutter(file_name)
    for number, line in enumerate(text.split("\n"), start=1):
        title = _RDOC_HEADING.match(line)
        if title is None:
            cut.body.append(line)
        else:
            cut.open(rdoc_heading_text(title.group(2)), len(title.group(1)), number, [line])
    return cut.finish()


ASCIIDOC_SUFFIXES = (".adoc", ".asciidoc")
# An AsciiDoc section title ("== Install"; Markdown's "## Install" is accepted too) and a delimited block's
# fence (listing ----, literal ...., example ====, sidebar ****, quote ____, passthrough ++++, comment ////).
_ADOC_TITLE = re.compile(r"^(={1,6}|#{1,6})[ \t]+(\S.*?)[ \t]*$")
_ADOC_FENCE = re.compile(r"^(-{4,}|\.{4,}|={4,}|\*{4,}|_{4,}|\+{4,}|/{4,})[ \t]*$")
# The older two-line title (AsciiDoc Python's, still read by Asciidoctor): a line of text underlined with
# one of these characters, level by character, the underline as long as the title give or take two.
_ADOC_UNDERLINE = re.compile(r"^(=+|-+|~+|\^+|\++)[ \t]*$")
_ADOC_UNDERLINE_LEVEL = {"=": 1, "-": 2, "~": 3, "^": 4, "+": 5}
_ADOC_SETEXT_TEXT = re.compile(r"^[^\s.\[/|+*<>-].*\w")


def _adoc_two_line_title(line: str, underline: str) -> int:
    """The level of LINE as a two-line title underlined by UNDERLINE, or 0 when it is not one."""
    title = line.rstrip()
    mark = _ADOC_UNDERLINE.match(underline)
    if mark is None or not _ADOC_SETEXT_TEXT.match(title) or _ADOC_FENCE.match(title):
        return 0
    return _ADOC_UNDERLINE_LEVEL[mark.group(1)[0]] if abs(len(mark.group(1)) - len(title)) < 3 else 0


def split_asciidoc_sections(text: str, file_name: str) -> list[Section]:
    """Cut AsciiDoc at its section titles (`= Document`, `== Section` ... level = number of `=`; or a line
    underlined with `=`, `-`, `~`, `^`, `+`), never inside a delimited block, whose fence closes with the
    same line. As split_sections otherwise."""
    lines = text.split("\n")
    cut = _Cutter(file_name)
    fence: str | None = None
    i = 0
    while i < len(lines):
        line = lines[i]
        stripped = line.rstrip()
        i += 1
        if fence is not None:
            if stripped == fence:
                fence = None
            cut.body.append(line)
            continue
        two_line = _adoc_two_line_title(line, lines[i]) if i < len(lines) else 0
        if two_line:
            cut.open(heading_text(stripped), two_line, i, [line, lines[i]])
            i += 1
            continue
        title = _ADOC_TITLE.match(line)
        if _ADOC_FENCE.match(line):
            fence = stripped
            cut.body.append(line)
        elif title is None:
            cut.body.append(line)
        else:
            cut.open(heading_text(title.group(2)), len(title.group(1)), i, [line])
    return cut.finish()


ORG_SUFFIXES = (".org",)
# An Org headline ("** TODO [#A] Title   :tag:"): level by stars; its TODO keyword, priority and tags are
# not part of the title. A block (#+BEGIN_SRC ... #+END_SRC, any name, any case) is never cut.
_ORG_HEADLINE = re.compile(r"^(\*+)[ \t]+(?:(?:TODO|DONE)[ \t]+)?(?:\[#[A-Za-z0-9]\][ \t]+)?(.*?)$")
_ORG_TAGS = re.compile(r"[ \t]+:[\w@#%:]+:[ \t]*$")
_ORG_BEGIN = re.compile(r"^[ \t]*#\+begin_(\S+)", re.IGNORECASE)


def split_org_sections(text: str, file_name: str) -> list[Section]:
    """Cut Org TEXT at its headlines (`* Title`, `** Sub` ...), never inside a #+BEGIN_/#+END_ block. As
    split_sections otherwise."""
    cut = _Cutter(file_name)
    block_end: str | None = None
    for i, line in enumerate(text.split("\n")):
        if block_end is not None:
            if line.strip().lower().startswith(block_end):
                block_end = None
            cut.body.append(line)
            continue
        begin = _ORG_BEGIN.match(line)
        if begin:
            block_end = f"#+end_{begin.group(1).lower()}"
            cut.body.append(line)
            continue
        headline = _ORG_HEADLINE.match(line)
        title = _ORG_TAGS.sub("", headline.group(2)).strip() if headline else ""
        if headline is None or not title:
            cut.body.append(line)
            continue
        cut.open(title, len(headline.group(1)), i + 1, [line])
    return cut.finish()


# troff: a section (.SH) or subsection (.SS) heading, man(7) or mdoc(7) spelling.
_MAN_HEADING = re.compile(r"^\.(SH|SS|Sh|Ss)(?:[ \t]+(.*?))?[ \t]*$")
# Requests that only lay text out (paragraphs, indents, fill modes, fonts, spacing): dropped with their
# arguments when they have none worth reading.
_MAN_LAYOUT = re.compile(
    r"^\.(PP|LP|P|TP|TQ|RS|RE|nf|fi|br|sp|ad|na|in|ft|ne|hy|nh|ti|ll|ds|de|ie|el|if|so|IX|UR|UE|MT|ME|TH|Dd|Dt|Os|Bl|El|Bd|Ed|It)\b"
)
_MAN_BREAK = re.compile(r"^\.(PP|LP|P|TP|TQ|sp|It)\b")
# A troff escape: a font change (\fB), a string (\*(xx), a named character (\(em, \[bu]) or one character.
_MAN_ESCAPE = re.compile(r"\\(f(?:\[[^\]]*\]|\(..|.)|\*(?:\[[^\]]*\]|\(..|.)|\((..)|\[([^\]]*)\]|.)")
_MAN_CHARS = {
    "em": "-",
    "en": "-",
    "hy": "-",
    "aq": "'",
    "cq": "'",
    "oq": "'",
    "dq": '"',
    "lq": '"',
    "rq": '"',
}
_MAN_CHARS |= {"bu": "*", "co": "(c)", "rg": "(R)", "mu": "x", "ti": "~", "ha": "^", "ga": "`", "rs": "\\"}
_MAN_ONE = {"-": "-", "e": "\\", "\\": "\\", " ": " ", "~": " ", "0": " ", "`": "`", "'": "'", ".": "."}


def _man_escape(m: re.Match[str]) -> str:
    escape = m.group(1)
    if escape[0] in "f*" and len(escape) > 1:
        return ""
    if m.group(2) is not None or m.group(3) is not None:
        return _MAN_CHARS.get(m.group(2) or m.group(3) or "", "")
    return _MAN_ONE.get(escape, "")


def man_text(line: str) -> str | None:
    """One troff line as plain text: escapes resolved, a text macro's arguments kept ('.B "-x, --extended"'
    -> '-x, --extended'), a paragraph break as an empty line, other layout requests and comments dropped
    (None)."""
    if line.startswith(('.\\"', "'\\\"", ".\\#")) or line.strip() in (".", "'"):
        return None
    if not line.startswith((".", "'")):
        return _MAN_ESCAPE.sub(_man_escape, line)
    request, _, rest = line.partition(" ")
    if _MAN_LAYOUT.match(line) and request != ".It":
        return "" if _MAN_BREAK.match(line) else None
    words = [quoted or bare for quoted, bare in re.findall(r'"([^"]*)"|(\S+)', rest)]
    if request == ".IP":  # ".IP tag indent": the tag only
        words = words[:1]
    if not words:
        return "" if request in (".IP", ".It") else None
    # .BI, .BR, .IR ... alternate fonts between their arguments, written with no space between.
    joined = "".join(words) if request in (".BI", ".BR", ".IB", ".IR", ".RB", ".RI") else " ".join(words)
    return _MAN_ESCAPE.sub(_man_escape, joined)


def split_man_sections(text: str, file_name: str) -> list[Section]:
    """Cut a troff manual page at its .SH (level 1) and .SS (level 2) headings, as plain text; the page
    header before the first .SH (.TH, comments) is not a section. A file with no .SH is not a manual
    page (a ".1" can be anything): no sections."""
    lines = text.split("\n")
    sections: list[Section] = []
    heading, level, line_no = "", 0, 0
    trail: tuple[str, ...] = ()
    body: list[str] = []

    def close() -> None:
        if level and "\n".join(body[1:]).strip():
            sections.append(Section(heading, level, line_no, trail, "\n".join(body).strip("\n")))

    i = 0
    while i < len(lines):
        m = _MAN_HEADING.match(lines[i])
        if m is None:
            shown = man_text(lines[i]) if level else None
            if shown is not None:
                body.append(shown)
            i += 1
            continue
        close()
        title = m.group(2) or ""
        if not title and i + 1 < len(lines) and not _MAN_HEADING.match(lines[i + 1]):
            # ".SH" alone: the title is the next line
            i += 1
            title = lines[i]
        title = (man_text(title) or "").strip().strip('"').strip()
        new_level = 1 if m.group(1).upper() == "SH" else 2
        heading, level, line_no = title or file_name, new_level, i + 1
        trail = (heading,) if new_level == 1 else (*trail[:1], heading)
        body = [heading]
        i += 1
    close()
    return sections


def split_rst_sections(text: str, file_name: str) -> list[Section]:
    """Cut reStructuredText at its section titles: a line of text under a blank line (or the start), with
    an underline of one repeated punctuation character, and optionally an overline of the same one.

    Levels follow docutils: each adornment style (character, overlined or not) gets the next level the
    first time it appears. A title is never indented and never explicit markup (`.. note::`), so literal
    blocks, directives and their content cannot be read as titles; a transition (a lone `----` between
    blank lines) has no text above it and is not one either. Sections with nothing under their title are
    dropped but count in the heading trail, as in split_sections. The labels directly above a title
    (`.. _config_run_branch:`) name its section, and open it; what comes before the first title is a
    section only when it holds more than comments, targets and directives with no content (markup.rst_prose)."""
    lines = text.split("\n")
    cut = _Cutter(file_name)
    styles: list[tuple[str, bool]] = []

    def title_at(i: int) -> tuple[str, tuple[str, bool], int] | None:
        """(title, style, lines it spans) when a section title starts at line I."""
        if i > 0 and lines[i - 1].strip():
            return None
        line = lines[i]
        over = RST_ADORNMENT.match(line)
        if over and i + 2 < len(lines):
            middle, under = lines[i + 1], RST_ADORNMENT.match(lines[i + 2])
            if (
                middle.strip()
                and not RST_ADORNMENT.match(middle)
                and under
                and under.group(1) == over.group(1)
            ):
                return middle.strip(), (over.group(1), True), 3
        if over or not line.strip() or line[0].isspace() or line.startswith(".."):
            return None
        under = RST_ADORNMENT.match(lines[i + 1]) if i + 1 < len(lines) else None
        if under is None:
            return None
        return line.strip(), (under.group(1), False), 2

    i = 0
    while i < len(lines):
        found = title_at(i)
        if found is None:
            cut.body.append(lines[i])
            i += 1
            continue
        title, style, span = found
        if style not in styles:
            styles.append(style)
        at = _labels_above(cut.body, cut.head)
        labels = cut.body[at:]
        del cut.body[at:]
        cut.open(title, styles.index(style) + 1, i + 1 + (span == 3), [*labels, *lines[i : i + span]])
        i += span
    # Before the first title, a license comment, cog's markers, a `.. highlight::` and the file's metadata
    # fields (`:orphan:`, `:tocdepth: 2`) are no section.
    return [
        sec
        for sec in cut.finish()
        if sec.level or rst_prose([line for line in sec.text.split("\n") if not _RST_FIELD.match(line)])
    ]


def too_big_problem(path: str, size: int, max_bytes: int) -> str:
    """How a skipped file over sources.docs.maxFileBytes is named (docs and changelogs alike)."""
    return f"{display_path(path)}: {size:,} bytes, over sources.docs.maxFileBytes ({max_bytes:,})"


def unreadable_problem(shown: str, exc: OSError) -> str:
    """How a file that cannot be read is named (SHOWN: its display_path)."""
    return f"{shown}: cannot be read ({exc.strerror or type(exc).__name__})"


# git's own test for a binary file (buffer_is_binary): a NUL among its first 8,000 bytes.
_BINARY_SAMPLE_BYTES = 8000


def is_binary(raw: bytes) -> bool:
    """Whether the bytes RAW of a doc file are binary (an image, an archive, random bytes) rather than
    text: git's test, a NUL among the first 8,000 bytes, unless they are otherwise UTF-8 text with few NULs
    (a stray NUL pasted into a doc leaves it a doc: doc_text reads the NUL as U+FFFD)."""
    sample = raw[:_BINARY_SAMPLE_BYTES]
    nuls = sample.count(0)
    if not nuls:
        return False
    if nuls * 10 > len(sample):  # UTF-16 text, an executable's header
        return True
    try:
        codecs.getincrementaldecoder("utf-8")().decode(sample)  # a character cut at the sample's end is fine
    except UnicodeDecodeError:
        return True
    return False


def doc_text(raw: bytes) -> str:
    """The bytes RAW of a doc or changelog file as text, the same for both sources: UTF-8, where a byte is
    not UTF-8 (a Latin-1 or Windows-1252 file's "Caf\\xe9") its Windows-1252 character, so that "café" is
    found (text.content_text, as a patch of the file is read); without a byte-order mark; every line end
    (CRLF, a lone CR) as \\n; a NUL as U+FFFD (it would end the text where SQLite and the word index read it:
    what follows was lost)."""
    text = content_text(raw).removeprefix("\ufeff")
    return text.replace("\r\n", "\n").replace("\r", "\n").replace("\x00", "\ufffd")


def display_path(path: str) -> str:
    """PATH as valid UTF-8 in the form memory keeps file names (paths.tracked_name): undecodable bytes (kept
    by os.fsdecode as lone surrogates) become `\\xNN`."""
    from nexusmem.paths import tracked_name

    return tracked_name(path.encode("utf-8", "surrogateescape"))


# Each markup's splitter (sections_of, by markup_of).
_SPLITTERS: dict[str, Callable[[str, str], list[Section]]] = {
    "org": split_org_sections,
    "rst": split_rst_sections,
    "man": split_man_sections,
    "asciidoc": split_asciidoc_sections,
    "rdoc": split_rdoc_sections,
    "markdown": split_sections,
}


def _section_nodes(project: str, path: str, text: str, ts: int, max_body: int) -> Iterator[Node]:
    file_name = path.rsplit("/", 1)[-1]
    seen: dict[str, int] = {}
    sections = sections_of(text, file_name)
    rst = file_name.lower().endswith(RST_SUFFIXES)
    markdown = markup_of(text, file_name) == "markdown"
    # A heading the file uses more than once ("Deprecations" under each upgrade) is told apart by its parent.
    times_used = Counter(sec.heading for sec in sections)
    for sec in sections:
        # Headings are redacted too: they end up in the natural key, the ref and the title.
        heading = redact(sec.heading)
        trail = " > ".join(redact(h) for h in sec.trail)
        occurrence = seen.get(trail, 0)
        seen[trail] = occurrence + 1
        body = redact(sec.text)
        if len(body) > max_body:
            body = cut_redacted(body, max_body) + TRUNCATION_MARKER
        # An RST title as a reader sees it ("HTML reporting: `coverage html`"), a Markdown one without its
        # backslash escapes ("connection\\_pool"); its ref keeps it as written.
        seen_as = rst_inline_text if rst else markdown_unescaped if markdown else str
        shown = seen_as(heading)
        # Nothing a reader sees under its title: an RST section of `.. autoclass::` and its options alone
        # (Sphinx fills it from docstrings memory does not read). Ranking counts it less (rank.BARE_DOC_FACTOR).
        bare = rst and bool(sec.level) and not rst_prose(sec.text.split("\n")[sec.head :])
        if len(sec.trail) >= 2 and (is_generic_heading(sec.heading) or times_used[sec.heading] > 1):
            shown = f"{seen_as(redact(sec.trail[-2]))} › {shown}"
        yield Node(
            project=project,
            kind="doc_section",
            source="docs",
            natural_key=f"{path}#{trail}#{occurrence}",
            ref=f"{path}#{heading}",
            title=one_line(f"{path} — {shown}"),  # a file name may hold a newline: one line still
            body=body,
            ts=ts,
            signal=doc_signal(body),
            group=path,
            files=(path,),
            meta={
                "path": path,
                "heading": heading,
                "level": sec.level,
                "line": sec.line,
                **({"bare": True} if bare else {}),
            },
        )


def _head_sha(root: Path) -> str | None:
    code, out = gitcmd.run_ok(["rev-parse", "-q", "--verify", "HEAD"], root)
    sha = out.decode("ascii", "replace").strip()
    return sha if code == 0 and sha else None


def _candidates(
    root: Path, include: Sequence[str], exclude: Sequence[str], max_bytes: int, *, skip_release_notes: bool
) -> tuple[list[_Candidate], list[tuple[str, int]], list[str]]:
    """Tracked + untracked-not-ignored files matching the globs (release notes left out when
    SKIP_RELEASE_NOTES), sorted; also the (path, size) of those over MAX_BYTES, and the tracked ones a sparse
    checkout leaves out of the work tree (tagged S, skip-worktree)."""
    # -t tags each entry: '?' untracked, anything else tracked; one process answers both questions.
    out = gitcmd.run(["ls-files", "-co", "-t", "--exclude-standard", "-z"], root)
    seen: dict[str, bool] = {}
    skipped: set[str] = set()
    names, others = notes_globs(exclude)
    for entry in out.split(b"\0"):
        if len(entry) < 3:
            continue
        path = os.fsdecode(entry[2:])
        if path in seen or not _glob_match(path, include) or _glob_match(path, exclusions_for(path, others)):
            continue
        notes = is_release_notes(path)
        if left_to_release_notes(path, names, notes=notes):
            continue
        if (skip_release_notes and notes) or is_agent_transcript(path):
            continue
        seen[path] = entry[:1] != b"?"
        if entry[:1] == b"S":
            skipped.add(path)
    found: list[_Candidate] = []
    too_big: list[tuple[str, int]] = []
    sparse: list[str] = []
    for path in sorted(seen):
        try:
            st = regular_file(root / path)
        except OSError:
            if path in skipped:
                sparse.append(path)
            continue  # tracked but deleted in the work tree
        if st is None:
            continue
        if st.st_size > max_bytes:
            too_big.append((path, st.st_size))
            continue
        found.append(_Candidate(path, seen[path], st.st_size, st.st_mtime_ns, st.st_ctime_ns))
    return found, too_big, sparse


def regular_file(path: Path) -> os.stat_result | None:
    """PATH's own status (os.lstat) when it is a regular file, else None: a symlink may point outside the
    repository, a FIFO or a device (/dev/zero) would block a read or never end, a directory may be a
    submodule. OSError when PATH is not there (tracked but deleted in the work tree). Docs and changelogs
    alike."""
    st = os.lstat(path)
    return st if stat.S_ISREG(st.st_mode) else None


def _fingerprint(head: str | None, candidates: Iterable[_Candidate], settings: list[Any]) -> str:
    h = hashlib.sha256()
    h.update(f"{_CURSOR_VERSION}\0{head or ''}\0".encode())
    h.update(json.dumps(settings, sort_keys=True).encode())
    for c in candidates:
        stamp = f"\0{c.path}\0{c.size}\0{c.mtime_ns}\0{c.ctime_ns}\0{int(c.tracked)}"
        h.update(stamp.encode("utf-8", "surrogateescape"))
    return h.hexdigest()


def _settings_key(settings: list[Any]) -> str:
    """What, besides a file itself, shapes its sections: the way they are cut and the docs settings."""
    return hashlib.sha256(f"{_CURSOR_VERSION}\0{json.dumps(settings, sort_keys=True)}".encode()).hexdigest()


@dataclass
class _Read:
    """Which doc files a scan reads. A commit moves HEAD, and every file was read, split and redacted
    again after each one (0.4–0.7 s on rust-lang/cargo's 254 doc files, 1.0–1.2 s on git/git's, in every
    post-commit sync): a file whose stamp (size, modification and change times, date) is the one the last
    sync read under the same settings (BEFORE: the cursor's "stamps") keeps its sections as they are."""

    fingerprint: str
    settings: str
    before: dict[str, str] = field(default_factory=dict)  # path (or its digest) → its stamp, last sync
    stamps: dict[str, str] = field(default_factory=dict)  # path → its stamp, this sync

    def unchanged(self, cand: _Candidate, ts: int) -> bool:
        stamp = f"{cand.size}:{cand.mtime_ns}:{cand.ctime_ns}:{ts}"
        self.stamps[cand.path] = stamp
        return (self.before.get(cand.path) or self.before.get(_hidden(cand.path))) == stamp


@dataclass
class _Dated:
    """The last commit time (epoch ms) of each tracked doc file, as of commit HEAD, kept in the cursor so
    that a sync after a commit walks only the commits since (a first walk of git/git's history to date its
    docs took 30 s, and ran again after every commit). UNDATED: files no commit of the walk names (one a
    subtree merge brought in, a history cut short), dated by their mtime and not looked for again."""

    head: str | None
    times: dict[str, int]
    undated: set[str]
    shallow: str = ""  # shallow_marker when dated

    @classmethod
    def of(cls, cursor: dict[str, Any]) -> _Dated | None:
        times, undated, head = cursor.get("times"), cursor.get("undated"), cursor.get("head")
        if not isinstance(times, dict) or not isinstance(undated, list) or not isinstance(head, str):
            return None
        good = {p: t for p, t in times.items() if isinstance(p, str) and type(t) is int}
        shallow = cursor.get("shallow")
        return cls(
            head,
            good,
            {p for p in undated if isinstance(p, str)},
            shallow if isinstance(shallow, str) else "",
        )

    def time_of(self, path: str) -> int | None:
        """PATH's time as the cursor kept it (under its own name, or the digest a secret in it is kept as)."""
        found = self.times.get(path)
        return found if found is not None else self.times.get(_hidden(path))

    def kept_undated(self, path: str) -> bool:
        return path in self.undated or _hidden(path) in self.undated

    def cursor(self, read: _Read, denied: Callable[[str], bool] | None = None) -> str:
        # The cursor is stored as it is (memory.db's sources table): a path holding a secret (a folder named
        # after a token) is kept as a digest of it, as the nodes keep it redacted; so is a name that is not
        # UTF-8 (`caf\xe9.md`, read with surrogate escapes), which stored text cannot hold, and one holding a
        # value `nexusmem forget` was told to forget (DENIED), whose nodes the sync's gate drops.
        names = list(dict.fromkeys([*self.times, *self.undated, *read.stamps]))  # a dated file is stamped too
        secret = _secret_paths(names) | {p for p in names if not _utf8(p)}
        if denied is not None:
            secret |= {p for p in names if denied(p)}
        return json.dumps(
            {
                "fp": read.fingerprint,
                "settings": read.settings,
                "stamps": {(_hidden(p) if p in secret else p): stamp for p, stamp in read.stamps.items()},
                "head": self.head,
                "times": {(_hidden(p) if p in secret else p): t for p, t in self.times.items()},
                "undated": sorted(_hidden(p) if p in secret else p for p in self.undated),
                "shallow": self.shallow,
            },
            sort_keys=True,
            ensure_ascii=False,
        )


def _hidden(path: str) -> str:
    """How the docs cursor keeps a path that holds a secret: a digest (no file name starts with "#sha256:")."""
    return "#sha256:" + hashlib.sha256(path.encode("utf-8", "surrogateescape")).hexdigest()


def _utf8(path: str) -> bool:
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _secret_paths(paths: Sequence[str]) -> set[str]:
    """Those of PATHS that hold a secret (redact_path would change them); one redaction pass over them all
    when none does."""
    joined = "\n".join(path_text(p) for p in paths if _utf8(p))
    if not paths or redact(joined) == joined:
        return set()
    return {p for p in paths if _utf8(p) and redact_path(p) != p}


def _decode_cursor(cursor: str | None) -> dict[str, Any]:
    """The docs cursor as a dict ({"fp": fingerprint, "head", "times", "undated"}); an older cursor (the bare
    fingerprint) or none gives {}: every file is dated again, once."""
    if not cursor or not cursor.startswith("{"):
        return {}
    try:
        data = json.loads(cursor)
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


def _file_times(
    root: Path,
    head: str | None,
    candidates: Sequence[_Candidate],
    include: Sequence[str],
    before: _Dated | None = None,
    shallow: str = "",
) -> _Dated:
    """Epoch ms of the last commit touching each tracked, unmodified candidate. With BEFORE (what the last
    sync found at its HEAD, an ancestor of this one), only the commits since are walked, and the files
    they do not touch keep their time; otherwise one `git log` over the history, stopping once every file
    is dated. A file no commit names is looked for once more among merges (a subtree merge adds files
    that no other commit lists); failing that, it is marked undated. SHALLOW: the clone's shallow_marker
    (BEFORE's times stand only under the same one).

    Files that are untracked, staged-new or modified since HEAD are left out: the caller uses their mtime.
    """
    if head is None:
        return _Dated(None, {}, set())
    tracked = {c.path for c in candidates if c.tracked}
    if not tracked:
        return _Dated(head, {}, set())
    changed = gitcmd.run(
        [*gitcmd.worktree_options(root), "diff", "--name-only", "--no-renames", "-z", "HEAD", "--"], root
    )
    need = tracked - {os.fsdecode(p) for p in changed.split(b"\0") if p}
    if not need:
        return _Dated(head, {}, set())
    times: dict[str, int] = {}
    undated: set[str] = set()
    try:
        # Where BEFORE's times still stand: its HEAD when this HEAD descends from it; after an amend, a
        # rebase or a reset, the commit both share (a first sync's walk to the root took 30 s on git/git
        # after every amend). The files the commits left behind touched are dated again from the top.
        since = None
        if before is not None and before.head is not None and before.shallow == shallow:
            since = (
                before.head if _descends(root, before.head, head) else _merge_base(root, before.head, head)
            )
        if before is not None and before.head is not None and since is not None:
            left: set[str] = set()
            if since != before.head:
                left = set(_walk_log(root, _pathspecs(need, include), need, since=since, tip=before.head))
            if since != head:
                times = _walk_log(root, _pathspecs(need, include), need, since=since)
                if times and _merges_since(root, since):
                    # Through a merge, which of the commits a file's history shows first depends on both
                    # sides (git follows the side whose version the merge kept): the files the new commits
                    # touch are dated by a walk from the top, as a first sync would (it stops at the first
                    # commit naming each, near the top).
                    touched = set(times)
                    times = _walk_log(root, _pathspecs(touched, include), touched)
            for path in need - times.keys() - left:
                kept = before.time_of(path)
                if kept is not None:
                    times[path] = kept
                elif before.kept_undated(path):
                    undated.add(path)
        missing = need - times.keys() - undated
        if missing:
            times.update(_walk_log(root, _pathspecs(missing, include), missing))
        missing -= times.keys()
        if missing:
            with contextlib.suppress(GitCommandError):  # a git older than 2.31 has no --diff-merges
                times.update(_walk_log(root, _pathspecs(missing, include), missing, merges=True))
            undated |= missing - times.keys()
    except GitCommandError:
        # A date is not worth failing the scan over (shallow or damaged history): fall back to mtimes.
        return _Dated(None, {}, set())
    return _Dated(head, {p: t for p, t in times.items() if p in need}, undated, shallow)


def shallow_marker(root: Path) -> str:
    """A fingerprint of the clone's shallow boundary (`.git/shallow`), "" for a full clone: deepening or
    unshallowing it brings older commits no walk since the last sync would see, so the times are found
    again from the top."""
    common = paths.git_common_dir(root)
    try:
        data = (common / "shallow").read_bytes() if common is not None else b""
    except OSError:
        return ""
    return hashlib.sha256(data).hexdigest()[:16] if data else ""


def _pathspecs(paths: set[str], include: Sequence[str]) -> list[str]:
    """PATHS as literal pathspecs, or the include globs when they would make too long a command line."""
    literal = [f":(literal){p}" for p in sorted(paths)]
    if sum(len(p) + 1 for p in literal) <= _MAX_PATHSPEC_BYTES:
        return literal
    return [f":(glob){p}" if "/" in p else f":(glob)**/{p}" for p in include]


def _merges_since(root: Path, since: str) -> bool:
    """Whether a merge commit is among HEAD's commits that SINCE does not reach."""
    code, out = gitcmd.run_ok(["rev-list", "--merges", "--max-count=1", f"^{since}", "HEAD", "--"], root)
    return code == 0 and bool(out.strip())


def _merge_base(root: Path, one: str, other: str) -> str | None:
    """The best common ancestor of commits ONE and OTHER (None: unrelated histories, or ONE is gone)."""
    code, out = gitcmd.run_ok(["merge-base", one, other, "--"], root)
    found = out.decode("ascii", "replace").strip()
    return found if code == 0 and found else None


def _descends(root: Path, ancestor: str, head: str) -> bool:
    """Whether commit ANCESTOR is HEAD or one of its ancestors (false after a rewrite or a reset back)."""
    if ancestor == head:
        return True
    code, _out = gitcmd.run_ok(["merge-base", "--is-ancestor", ancestor, head], root)
    return code == 0


def _walk_log(
    root: Path,
    pathspecs: list[str],
    need: set[str],
    *,
    since: str | None = None,
    merges: bool = False,
    tip: str = "HEAD",
) -> dict[str, int]:
    """The newest commit time of each path in NEED, walking TIP's history (only the commits SINCE is not
    an ancestor of, when given) newest first and stopping once all are found. MERGES: a merge lists what
    it changed against its first parent (files a subtree merge brought in are named by no other commit)."""
    # %x01 marks a commit header; with -z every header and file name ends in NUL, and the first file name
    # after a header carries a leading newline.
    args = ["log", "--format=%x01%ct", "--name-only", "--no-renames", "-z"]
    if merges:
        args += ["--merges", "--diff-merges=first-parent"]
    if since is not None:
        args.append(f"^{since}")
    args += [tip, "--", *pathspecs]
    times: dict[str, int] = {}
    remaining = set(need)
    current: int | None = None
    after_header = False
    buf = b""
    chunks = gitcmd.stream(args, root)
    try:
        for chunk in chunks:
            buf += chunk
            *tokens, buf = buf.split(b"\0")
            for tok in tokens:
                if tok.startswith(b"\x01"):
                    current = int(tok[1:] or b"0") * 1000
                    after_header = True
                    continue
                if after_header and tok.startswith(b"\n"):
                    tok = tok[1:]
                after_header = False
                if not tok or current is None:
                    continue
                path = os.fsdecode(tok)
                if path in remaining:
                    times[path] = current
                    remaining.discard(path)
            if not remaining:
                break  # every file dated: stop walking history (closing the stream ends git)
    finally:
        close: Callable[[], None] | None = getattr(chunks, "close", None)
        if close is not None:
            close()
    return times
