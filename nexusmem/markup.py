"""Markup a reader of a doc does not see: reStructuredText's comments, hyperlink targets (labels and URLs)
and directives with no content of their own (`.. highlight:: python`), and its title adornments. Used by
the docs and changelog sources (what is a section, what is an entry) and by the text shown under a doc
section in an answer."""

from __future__ import annotations

import re
from collections.abc import Sequence

RST_SUFFIXES = (".rst", ".rest")
# A reStructuredText section adornment: one punctuation character repeated (docutils allows any of these).
RST_ADORNMENT = re.compile(r"^([!-/:-@\[-`{-~])\1{2,}[ \t]*$")
# An internal hyperlink target, a label (`.. _config_run_branch:`, `` .. _`a: b`: ``): it names the element
# that follows it, a section when a title does. A target with a URL (`.. _issue 12: https://…`) names that
# URL, for the references of the text around it.
RST_LABEL = re.compile(r"^\.\.[ \t]+_(?:`[^`]+`|[^`:\s][^:]*):[ \t]*$")
# A hyperlink target with its URL, `.. _issue 1732: https://…/issues/1732` (`` .. _`a: b`: url ``).
RST_TARGET = re.compile(r"^[ \t]*\.\.[ \t]+_(`[^`]+`|[^`:\s][^:]*):[ \t]+(\S+)[ \t]*$")
# The start of an explicit markup block: a comment, target, directive, footnote or substitution definition.
_EXPLICIT = re.compile(r"^([ \t]*)\.\.(?:[ \t]|$)")
_DIRECTIVE = re.compile(r"^[ \t]*\.\.[ \t]+(?:\|[^|]+\|[ \t]+)?[\w.+:-]+?::(?:[ \t]|$)")
_ANY_TARGET = re.compile(r"^[ \t]*\.\.[ \t]+_")
_FOOTNOTE = re.compile(r"^[ \t]*\.\.[ \t]+\[(?:#?[\w.:+-]*|\*)\](?:[ \t]|$)")  # `.. [1]`, not `.. [[[cog`
_OPTION = re.compile(r"^[ \t]*:[\w .+-]+:(?:[ \t]|$)")


def is_rst(path: str) -> bool:
    """Whether the file PATH is reStructuredText (by its name)."""
    return path.lower().endswith(RST_SUFFIXES)


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def rst_unseen(lines: Sequence[str]) -> list[bool]:
    """Per line of reStructuredText LINES, whether it is markup a reader does not see: a comment with its
    indented lines (a license header, cog's `.. [[[cog` markers), a hyperlink target (a label or a URL), a
    directive with nothing but options under it (`.. highlight:: python`, `.. currentmodule:: click`), or a
    blank line among those. A directive with content (`.. note::` and its text, `.. code-block::` and its
    code) and a footnote are seen."""
    unseen = [False] * len(lines)
    i = 0
    while i < len(lines):
        start = _EXPLICIT.match(lines[i])
        if start is None or _FOOTNOTE.match(lines[i]):
            i += 1
            continue
        margin = len(start.group(1))
        end = i + 1
        bare = not lines[i][start.end() :].strip()
        while end < len(lines) and (
            (not lines[end].strip() and not bare) or (lines[end].strip() and _indent(lines[end]) > margin)
        ):
            end += 1
        while end > i + 1 and not lines[end - 1].strip():
            end -= 1  # the blank lines after the block are nobody's
        body = [line for line in lines[i + 1 : end] if line.strip()]
        hidden = _ANY_TARGET.match(lines[i]) is not None or _DIRECTIVE.match(lines[i]) is None
        if not hidden:  # a directive: hidden when it holds options only
            hidden = all(_OPTION.match(line) for line in body)
        if hidden:
            for j in range(i, end):
                unseen[j] = True
        i = end
    return unseen


def rst_prose(lines: Sequence[str]) -> bool:
    """Whether reStructuredText LINES hold anything a reader sees (not only comments, targets, bare
    directives and blank lines)."""
    return any(line.strip() and not hidden for line, hidden in zip(lines, rst_unseen(lines), strict=True))


def reference_name(name: str) -> str:
    """A hyperlink name as docutils compares them: case and runs of blanks do not matter."""
    return " ".join(name.strip("`").split()).lower()


# A named hyperlink reference: `` `issue 2083`_ ``, `` `text <issue_>`_ `` is not followed, `word_`.
RST_REFERENCE = re.compile(r"`([^`<>]+)`_(?!_)|(?<![\w`])([A-Za-z0-9][\w.+-]*)_(?![\w_])")


_RST_LITERAL = re.compile(r"``(.+?)``")
_RST_ROLE = re.compile(r":[\w.+-]+(?::[\w.+-]+)*:`([^`]+)`")
_RST_INTERPRETED = re.compile(r"`([^`]+)`(?:__?|:[\w.+-]+:)?")
_RST_STRONG = re.compile(r"\*\*(\S(?:.*?\S)?)\*\*")
_RST_EMPHASIS = re.compile(r"(?<![\w*])\*(\S(?:[^*]*?\S)?)\*(?![\w*])")
_RST_EMBEDDED = re.compile(r"^(.*?)\s*<[^<>]*>$", re.DOTALL)


def _role_text(found: re.Match[str]) -> str:
    """A role's text as shown: `text <target>` → text; `~pkg.mod.run` → run."""
    text = found.group(1)
    embedded = _RST_EMBEDDED.match(text)
    if embedded is not None and embedded.group(1):
        return embedded.group(1)
    if text.startswith("~"):
        return text[1:].rsplit(".", 1)[-1]
    return text.lstrip("!")


def rst_inline_text(text: str) -> str:
    """reStructuredText inline markup as a reader sees it: a role (`:ref:`, `:class:`...) and a link as their
    text, emphasis without its stars, a literal (``` ``x`` ```) as a code span (`` `x` ``, as a Markdown
    title shows one)."""
    if "`" not in text and "*" not in text:
        return text
    literals: list[str] = []

    def keep(found: re.Match[str]) -> str:
        literals.append(f"`{found.group(1)}`")
        return f"\x00{len(literals) - 1}\x00"

    held = _RST_LITERAL.sub(keep, text)
    held = _RST_ROLE.sub(_role_text, held)
    held = _RST_INTERPRETED.sub(_role_text, held)
    held = _RST_EMPHASIS.sub(r"\1", _RST_STRONG.sub(r"\1", held))
    shown = re.sub("\x00(\\d+)\x00", lambda m: literals[int(m.group(1))], held)
    return " ".join(shown.split()) or text


def seen_text(path: str, text: str) -> str:
    """TEXT (a doc section or changelog entry of the file PATH) as a reader sees it, for telling two cuts of
    the same words apart from different words: without reStructuredText's unseen markup (rst_unseen: a
    label or link targets an older release cut with the entry above them), its blanks collapsed."""
    lines = text.split("\n")
    if is_rst(path):
        lines = [line for line, hidden in zip(lines, rst_unseen(lines), strict=True) if not hidden]
    return " ".join(" ".join(lines).split())
