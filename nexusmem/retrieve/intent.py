"""What a question asks for: how to use something (the docs answer it) or what happened (history does).

"How do I get a --version flag?" is answered by a doc section; "when did the version flag start printing to
stdout?" by a commit. Doc sections no longer look new to the ranking (age does not count for them, see
rank.py), and on the dev questions of four real repositories that cost doc questions MRR .62 → .44: the
old recency prior had been a hidden doc boost. A usage question now gives doc sections that boost back
(rank.USAGE_DOC_FACTOR), and no other question does. The patterns were written from how people ask, not
from the labelled questions, and are deliberately narrow: a question matching both kinds, or neither
("rg prints an error when I pipe into head"), is `neutral` and ranked as before.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from nexusmem import lazyre
from nexusmem.sources.shell.launchers import command_start

Intent = Literal["usage", "history", "neutral"]

_USAGE = lazyre.compile(
    r"\b(how (do|can|should|would|could) (i|we|you|one)|how to|is there|are there|is it possible|"
    r"can (i|we|you)|should (i|we)|do (i|we) (need|have to)|"
    r"what('s| is) the (best|recommended|right|correct) way|what (does|do) .{1,60}\b(do|mean)|how does|"
    r"does (it|this|the \w+) (support|allow|let|force|have|work)|"
    r"where (should|can|do) (i|we) (report|find|get|put|configure|set)|"
    # and the ways a question about a setting is asked without "how do I": "which option makes it skip…",
    # "what are my options?", "is that expected?", "does undici offer a way to…", "how can my test…",
    # "where does fd read its ignore file from?"
    r"which (option|flag|setting|switch|config\w*|environment variable|env var|command|branch)s?|"
    r"what are (my|the) options|is (that|this|it) (expected|supposed|intended|normal|supported|a bug)|"
    r"does \w+ (offer|provide|support|allow|let) |"
    r"what (must|should) ((my|the|our|your|this|a) )?\w+ (be|contain|look like|include)|"
    r"how (can|should|would|could) (each|my|our|the) \w+|where does \w+ (look|read|search|store|keep) |"
    # and the ways of asking what to write or do: "what do I put in my Cargo.toml", "what should the file
    # contain", "which version do I need", "what command do I run", "how am I supposed to write it", "what
    # am I doing wrong", "is that supported at all?", "what is the difference between X and Y", and a
    # request that ends on a bare "How?"
    r"what (do|should|must|can|would) (i|we|you) (do|set|add|pass|use|run|put|write|change|call|type|need"
    r"|install|give|import)|what should (i|we|my|the|this)|(which|what) \w+( \w+)? (do|should|can|must) "
    r"(i|we|you)|(how|what|where) am i (supposed|meant|expected) to|am i (supposed|meant) to|"
    r"what am i doing wrong|supported at all|difference between|"
    # and a request for the page itself: "where is the [paths] setting documented?", "where are the docs
    # about plugins?", "the documentation for the json report", "which page documents the concurrency option?"
    r"where (is|are) .{1,80}\bdocumented|(docs|documentation) (for|about|on|of)|"
    r"which (page|doc|docs|section|file)s? (documents?|describes?|explains?|covers?))\b|"
    r"\bhow\s*\?\s*$",
    re.IGNORECASE,
)
_HISTORY = lazyre.compile(
    r"\b(when (did|was|were|has|have)|where (did|was|were)|what happened|why (did|was|were)|"
    r"how (was|were|did) .{1,80}\b(fixed|added|changed|removed|solved|resolved)|since (when|which)|"
    r"which (change|commit|pull request|pr|release|version) (added|made|removed|changed|introduced|fixed|dropped)|"
    r"which (change|commit)|(got|been|was|were) (added|removed|fixed|introduced|renamed|dropped|deprecated|reverted)|"
    r"how (has|have) .{1,80}\b(changed|evolved|developed|grown)|\bevolved\b|over (the years|time)|"
    r"what changes (were|have been) made|"
    # and the plural, the author and the cause: "which commits changed…", "who added…", "what broke…", "how
    # did X's API move…", "was there ever…"
    r"which (changes|commits|pull requests|prs|releases|versions)|who (added|wrote|introduced|changed|removed"
    r"|made|broke|fixed)|what (introduced|fixed|fixes|broke|caused)|how did|was there ever)\b",
    re.IGNORECASE,
)


# A code identifier in a question: a backticked span, camelCase, a PascalCase name with an inner capital,
# snake_case, a member (`res.json`, `words.txt`), a call (`flatten()`) or a command-line option (`--pre`,
# `-f`).
_CODE = lazyre.compile(
    r"`[^`\n]+`|\b_*[a-z]+[A-Z]\w*|\b_*[A-Z][a-z0-9]+[A-Z]\w*|\b_*[A-Z]{2,}[a-z]{2,}\w*|\b_*[A-Za-z]\w*_\w+"
    r"|\b_+[A-Za-z]\w*"
    r"|\b[A-Za-z_]\w+\.[A-Za-z_]\w*"
    r"|\b[A-Za-z_]\w*\(\)|(?<![\w-])--?[A-Za-z][\w-]*"
)
# "When was X added?", "which change introduced X?", "where did X come from?": the question asks for the
# change that brought a name in. Deliberately narrow: "when did X start failing" asks about a later change.
_ORIGIN_VERB = lazyre.compile(
    r"\b(introduc\w*|added|first|come from|came from|created|wrote)\b", re.IGNORECASE
)
_ORIGIN_ASK = lazyre.compile(
    r"\b(when|which|where|since|who|what (change|commit|version|release))\b", re.IGNORECASE
)


# "When did mocha gain a --shuffle flag?", "which version added `vi.mockRequire()`?", "since when does it
# support X?": the question asks when something arrived, and so takes for granted that it did. Broader than
# _ORIGIN_VERB ("gain", "get", "support", "start"): it only decides whether an answer is weak (query.strength),
# never the ranking.
_ARRIVAL_ASK = lazyre.compile(r"^\s*(when|which|since|in which|what version|did)\b", re.IGNORECASE)
_ARRIVAL_VERB = lazyre.compile(
    r"\b(added|add|introduc\w*|support\w*|gain\w*|get|got|start\w*)\b", re.IGNORECASE
)


# "Which release fixed X?", "from which version on does it do Y?", "what version added Z?": the question asks
# for a release by name, which a changelog entry gives (history.entries_after_commits).
_WHICH_RELEASE = lazyre.compile(r"\b(which|what|first)\s+(release|version|tag)s?\b", re.IGNORECASE)
# "Which pry version dropped Rubinius?", "in which helmet release did the options start …": a name between
# "which" and "release" is the project's when a change follows ("dropped", "added", "started"); "which Go
# version do I need", "what PHP version does it require" ask for a platform's, and name no change.
_WHICH_NAMED_RELEASE = lazyre.compile(
    r"\b(?:which|what|first)\s+[A-Za-z][\w.-]*\s+(?:release|version|tag)s?\b(?P<rest>.*)",
    re.IGNORECASE | re.DOTALL,
)
_RELEASE_CHANGE = lazyre.compile(
    r"\b(?:add(?:ed|s)?|dropp?(?:ed|s)?|remov(?:ed|es?)|fix(?:ed|es)?|introduc(?:ed|es?)|chang(?:ed|es?)"
    r"|start(?:ed|s)?|stopp?(?:ed|s)?|ship(?:ped|s)?|brought|broke|land(?:ed|s)?|switch(?:ed|es)?|mov(?:ed|es?)"
    r"|replac(?:ed|es?)|deprecat(?:ed|es?)|renam(?:ed|es?)|gain(?:ed|s)?|got|made|learn(?:ed|t)?)\b",
    re.IGNORECASE,
)


def asks_which_release(text: str) -> bool:
    """Whether TEXT asks which release (version) something happened in."""
    if _WHICH_RELEASE.search(text) is not None:
        return True
    named = _WHICH_NAMED_RELEASE.search(text)
    return named is not None and _RELEASE_CHANGE.search(named.group("rest")) is not None


def asks_arrival(text: str) -> bool:
    """Whether TEXT asks when (in which change or release) something arrived."""
    return _ARRIVAL_ASK.search(text) is not None and _ARRIVAL_VERB.search(text) is not None


def names_code(text: str) -> bool:
    """Whether TEXT names a code identifier, a file name or a command-line option."""
    return _CODE.search(text) is not None


def code_names(text: str) -> list[str]:
    """The code identifiers, file names, options and backticked spans TEXT names, as written, in order."""
    return _CODE.findall(text)


# "When was getUsDateFormat removed?", "which change dropped --foo?", "what replaced X?": the question asks for
# the change that took a name out.
_REMOVAL_VERB = lazyre.compile(
    r"\b(removed?|removing|dropped|drop|deleted?|deleting|got rid of|go away|went away|replaced?|renamed?"
    r"|stop(ped)? (shipping|supporting|exporting))\b"
)
_REMOVAL_ASK = lazyre.compile(r"\b(when|which|why|where|what)\b", re.IGNORECASE)


def _one_name(text: str) -> tuple[str | None, str]:
    """(The one code name TEXT names, None for none or several; TEXT without its names): the verbs are
    looked for in the words around the names ("remove_await_parens" is a name, not a verb)."""
    names = [m.group(0) for m in _CODE.finditer(text)]
    return (names[0] if len(names) == 1 else None), _CODE.sub(" ", text)


# "Is TOMLChar still in the code?", "does parse_config still exist?", "is X still used?": whether a name is gone,
# answered as "when was X removed?" is (the last change that holds it), with a yes or a no first.
_STILL_ASK = lazyre.compile(r"^\W*(?:is|are|does|do)\b", re.IGNORECASE)
_STILL_THERE = lazyre.compile(
    r"\bstill\s+(?:(?:in|inside)\s+(?:the\s+|our\s+)?(?:code|codebase|source|sources|repo|repository|tree|project)"
    r"|exists?|used|in\s+use|there|around|present|defined|referenced|alive|a\s+thing)\b",
    re.IGNORECASE,
)


def still_asked(text: str) -> str | None:
    """The one code name TEXT asks whether the code still holds ("is TOMLChar still in the code?" ->
    "TOMLChar"), else None."""
    name, words = _one_name(text)
    if name is None or not (_STILL_ASK.search(words) and _STILL_THERE.search(words)):
        return None
    return name


def removed_name(text: str) -> str | None:
    """The one code name TEXT asks the removal of ("when was getUsDateFormat removed?" ->
    "getUsDateFormat"), else None (also when it asks when something was added: that is the first change)."""
    name, words = _one_name(text)
    if name is None or not (_REMOVAL_VERB.search(words) and _REMOVAL_ASK.search(words)):
        return None
    return None if _ORIGIN_VERB.search(words) else name


# "Which change introduced timeSliceIndexSym, so that write() stores …", "when was InvalidSigningExecutable
# added to twine.exceptions?": a question may name other code to say what the name does or where it went;
# the name the origin verb takes as its object (or that stands between "when was" and the verb) is the one
# asked about.
_NAME_AT = "(?P<name>" + _CODE.pattern + ")"
_ORIGIN_OBJECT = lazyre.compile(
    r"\b(?i:introduc(?:ed|es|e)|added|adds|created|creates|first (?:added|introduced|used|created))\s+"
    r"(?:(?i:the|an?|its|new)\s+)?(?:(?!(?:to|into|in|from|for|by|with|on|of|at)\s)[a-z]+\s+){0,3}?"
    + _NAME_AT
)
_ORIGIN_SUBJECT = lazyre.compile(
    r"\b(?i:(?:since )?when|where) (?i:was|were|did|does|do) (?:(?i:the|an?)\s+)?(?:[a-z]+\s+){0,2}?"
    + _NAME_AT
    + r"\s+(?:\([^)]*\)\s+)?(?:[\w.]+\s+){0,4}?(?i:added|introduced|created|first|come from|came from)\b"
)
# A purpose question (_PURPOSE) with a file or a member between the name and "for" ("… in stats.rs for").
_PURPOSE_WIDE = lazyre.compile(
    r"\bwhat('s| is| are| was| were)( the| an?)? \S+( \S+){0,6}? (for|used)\b", re.IGNORECASE
)
# "What is the TypedSum struct in stats.rs for?", "what is GetStdoutQuiet in xcode_emulation.py for?": the
# name right after "what is (the)" is the one whose purpose is asked; the others say where it lives. Right
# after: "what was wrong with `x *= 2` for three-digit values?" asks no purpose.
_PURPOSE_SUBJECT = lazyre.compile(
    r"\b(?i:what)(?:'s|\s+(?i:is|are|was|were))\s+(?:(?i:the|an?)\s+)?" + _NAME_AT
)


# "Who wrote the fix for the fallback adapter in PolymorphicJsonAdapterFactory?", "who wrote the sendmail
# parameter fix?": a question about a later change of the name (its fix, a bug, what broke or changed it)
# does not ask for the change that brought the name in, whatever origin verb ("wrote") it uses.
_LATER_CHANGE = lazyre.compile(
    r"\b(fix(es|ed|ing)?|bug\w*|broke|broken|break\w*|changed|changes|changing|regress\w*|patch\w*"
    r"|refactor\w*|rewr\w*|modif\w*|updat\w*|tweak\w*)\b",
    re.IGNORECASE,
)


def origin_name(text: str) -> str | None:
    """The code name TEXT asks the origin of ("when was editDistance added?" -> "editDistance"), else None.
    With several names, the one the origin verb is about (see _ORIGIN_OBJECT); none when no name is (then
    the question is about how they meet, not where one began); none when it asks about a later change of
    it (_LATER_CHANGE: its fix, a bug, what changed it)."""
    if _LATER_CHANGE.search(_CODE.sub(" ", text)):
        return None
    name, words = _one_name(text)
    if name is None and not _CODE.search(text):
        name = _named_thing(text)
    if name is None:
        found = _ORIGIN_SUBJECT.search(text) or _ORIGIN_OBJECT.search(text)
        if found is None or not _ORIGIN_ASK.search(text):
            return None
        return found.group("name")
    if not (_ORIGIN_VERB.search(words) and _ORIGIN_ASK.search(words)):
        return None
    return name


# "What is _querycache for?", "what does shouldHideOptionExtras control?", "why is there a MinusError
# type?", "why does pipx have a _get_trash_file helper?": the question asks why one name exists, which the
# change that brought it in says (as `git log -S NAME --reverse` finds it) and later changes that touch
# it do not.
_PURPOSE = lazyre.compile(
    r"\bwhat('s| is| are)( the| an?)? \S+( \w+){0,6}? (for|used)\b"
    r"|\bwhat (does|do)\b.{1,60}\b(do|control|check|decide|describe|change|fill in|handle|mean)\b"
    r"|\bwhy (is|are) there\b|\bwhy (does|do) \S+ (have|keep|need|define)\b"
    r"|\bwhat is the (point|purpose|role|job) of\b",
    re.IGNORECASE,
)


# "When did fd start depending on humantime?", "when did it start using the argmax crate?": the change that
# brought a dependency or a helper in; the name need not look like code (a crate is a plain word).
_ADOPT = lazyre.compile(
    r"\bstart(?:ed|s)? (?:using|depending on|to use|to depend on|requiring|pulling in)"
    r"(?: the| its own| an?)? ([A-Za-z_][\w.-]*[\w])",
    re.IGNORECASE,
)


def adopted_name(text: str) -> str | None:
    """The name TEXT asks when a project started using ("when did fd start depending on humantime?" ->
    "humantime"; "start using the normpath crate's PathExt" -> its one code name, "PathExt"), else None;
    none for a call ("start using max(size, 1)" asks about the expression)."""
    found = _ADOPT.search(text)
    if found is None or text[found.end() : found.end() + 1] == "(":
        return None
    name, _ = _one_name(text)
    return name or found.group(1)


# "Since upgrading to 0.30.4, POSTs hang", "after pipx 0.15.5.0 ...": a release of the project itself. The
# word before the version says whose it is: a connector ("to 0.30.4", "since 1.1") or a lower-case name
# ("sqlmodel 0.0.12") is the project's; a capitalised one (Python 3.12, Click 8.2, Node 0.10) or a known
# runtime or library is not, and neither is a version in code quotes or one after "of" ("an input of 0.1").
_VERSION = lazyre.compile(r"(?<![\w.`'\"-])v?(\d+\.\d+(?:\.\d+){0,2})(?![\w.]*\d)(?!\.?\w)")
_RELEASE_CONNECTORS = frozenset({"to", "since", "after", "from", "past"})
_UPGRADE_VERBS = frozenset(
    {"upgrading", "upgraded", "updating", "updated", "moving", "moved", "going", "went"}
)
_NAME_LEADS = frozenset(
    {
        "to",
        "since",
        "after",
        "from",
        "with",
        "using",
        "on",
        "in",
        "by",
        "for",
        "upgrading",
        "upgraded",
        "updating",
        "updated",
    }
)
_NOT_THE_PROJECT = frozenset(
    {
        "python",
        "node",
        "nodejs",
        "ruby",
        "go",
        "golang",
        "rust",
        "rustc",
        "cargo",
        "java",
        "jdk",
        "php",
        "perl",
        "pip",
        "npm",
        "yarn",
        "pnpm",
        "deno",
        "bun",
        "gcc",
        "clang",
        "llvm",
        "ubuntu",
        "debian",
        "fedora",
        "centos",
        "alpine",
        "macos",
        "windows",
        "ios",
        "android",
        "django",
        "flask",
        "click",
        "pydantic",
        "sqlalchemy",
        "react",
        "vue",
        "webpack",
        "typescript",
        "bash",
        "zsh",
        "fish",
        "git",
        "openssl",
        "glibc",
        "linux",
        "kernel",
        "chrome",
        "firefox",
        "electron",
        "numpy",
        "pandas",
        "pytest",
        "jest",
        "mocha",
        "babel",
        "eslint",
        "docker",
        "kubernetes",
        "version",
        "release",
        "of",
        "the",
        "a",
        "an",
        "and",
        "or",
    }
)


# "from 0.3 to 0.4", "rq 1.15 to 1.16": an upgrade between two releases, named by the second version.
_TO_VERSION = lazyre.compile(r"\s+to\s+v?(\d+\.\d+(?:\.\d+){0,2})(?![\w.]*\d)(?!\.?\w)")


def release_version(text: str) -> str | None:
    """The project's own release TEXT names ("since upgrading to 0.30.4, ..." -> "0.30.4"; "after upgrading
    from 0.3 to 0.4, ..." -> "0.4", the release the trouble came with), else None."""
    skip_to = 0
    for found in _VERSION.finditer(text):
        if found.start() < skip_to or text[: found.start()].count("`") % 2:
            continue  # the second half of an upgrade already judged, or an argument in code quotes
        before = re.findall(r"[\w.+-]+|[^\w\s]", text[: found.start()])
        prev = before[-1] if before else ""
        lead = before[-2].lower() if len(before) > 1 else ""
        # A lower-case name right before the version ("sqlmodel 0.0.12"), not another program's.
        is_name = re.fullmatch(r"[a-z][\w.+-]{2,}", prev) is not None and prev not in _NOT_THE_PROJECT
        upgrade = _TO_VERSION.match(text, found.end())
        if upgrade is not None:
            # Whose upgrade: the name before "from" ("upgraded pytest from 7.0 to 8.0" is pytest's), else
            # the name right before the first version ("Python 3.11 to 3.12" is Python's).
            ours = lead not in _NOT_THE_PROJECT if prev.lower() == "from" else is_name
            if ours:
                return upgrade.group(1)
            skip_to = upgrade.end()
            continue
        if prev.lower() in _RELEASE_CONNECTORS:
            # "upgrading fish to 3.3", "moved Python to 3.12": the version of what was upgraded.
            other = lead in _NOT_THE_PROJECT or (len(before) > 1 and before[-2][:1].isupper())
            if prev.lower() == "to" and other and lead not in _UPGRADE_VERBS:
                continue
            return found.group(1)
        if is_name and (lead in _NAME_LEADS or not lead or not lead[0].isalnum()):
            return found.group(1)
    return None


# "What changed in 7.4.1?", "7.4.1 release notes", "v2.0", "what's new in version 1.7.15?": the question asks
# what a release of the project itself holds, and says nothing else. Every word but the version is one of
# these (and maybe the project's lower-case name right before it, as in release_version).
_RELEASE_WORDS = """
    what what's whats which is are was were did does the a in of for to with about tell me show list
    change changed changes changelog new news release released releases note notes version versions tag
    tagged fix fixed fixes bring brought come came ship shipped add added happened
    major main big biggest notable important key significant highlight highlights
"""
_RELEASE_ASKS = frozenset(_RELEASE_WORDS.split())
# A version as release_named reads it: _VERSION, or one with a pre- or post-release suffix ("2.0.0-alpha.1",
# "6.0.0-beta.1", "1.0.0rc1", "2.9.0.post0"), which names that release, not the final one.
_NAMED_VERSION = lazyre.compile(
    r"(?<![\w.`'\"-])v?(\d+\.\d+(?:\.\d+){0,2}(?:[-.]?(?:alpha|beta|rc|pre|preview|dev|post|a|b)[.-]?\d*)?)"
    r"(?![\w.]*\d)(?!\.?\w)",
    re.IGNORECASE,
)


def release_named(text: str, project: str | None = None) -> str | None:
    """The project's release whose contents TEXT asks for and nothing more ("what changed in 7.4.1?" -> "7.4.1";
    "v2.0 release notes" -> "2.0"; "what's new in 2.0.0-alpha.1" -> "2.0.0-alpha.1"; "What changed in Guzzle
    7.4.1?" when PROJECT is guzzle), else None (also when it names another program's version, or more)."""
    versions = list(_NAMED_VERSION.finditer(text))
    if len(versions) != 1:
        return None
    found = versions[0]
    before = re.findall(r"[\w.'+-]+", text[: found.start()].lower())
    after = re.findall(r"[\w.'+-]+", text[found.end() :].lower())
    if before and before[-1] in _SPAN_WORDS:
        return None  # "what changed since 7.4.1" asks what came after it (release_span), not what it holds
    if before and before[-1] not in _RELEASE_ASKS:
        # "guzzle 7.4.1": the project's lower-case name, not another program's ("python 3.12"); a capitalised
        # name ("Symfony 6.0") only when it is the project's own, in any case ("Guzzle 7.4.1", "PHPMailer").
        if before[-1] in _NOT_THE_PROJECT or not re.fullmatch(r"[a-z][\w.+-]{2,}", before[-1]):
            return None
        ours = project is not None and before[-1] == project.lower()
        if text[: found.start()].rstrip().split()[-1][:1].isupper() and not ours:
            return None
        before = before[:-1]
    if any(word not in _RELEASE_ASKS for word in before + after):
        return None
    return found.group(1)


# "What changed between 7.5.0 and 7.5.1?", "changes from 7.5.0 to 7.5.1", "7.5.0..7.5.1", "what's new since
# 7.5.0", "since 7.5.0": the changes between two releases, or those after one (up to the next release). Every
# other word is one of _RELEASE_ASKS or these (and maybe the project's lower-case name before a version).
_SPAN_WORDS = frozenset({"between", "and", "since", "after", "from", "to"})
# Either end may be a pre- or post-release ("1.13.0..2.0.0-alpha.1", "between 2.9.0 and 2.9.0.post0").
_SPAN_SUFFIX = r"(?:[-.]?(?:alpha|beta|rc|pre|preview|dev|post|a|b)[.-]?\d*)?"
_DOTTED_SPAN = lazyre.compile(
    rf"\s*v?(\d+(?:\.\d+){{1,3}}{_SPAN_SUFFIX})\.{{2,3}}v?(\d+(?:\.\d+){{1,3}}{_SPAN_SUFFIX})\s*\??\s*",
    re.IGNORECASE,
)


def release_span(text: str, project: str | None = None) -> tuple[str, str | None] | None:
    """(the earlier release, the later one or None for "up to the next") when TEXT asks what changed between
    two of the project's releases ("what changed between 7.5.0 and 7.5.1?", "changes from 7.5.0 to 7.5.1",
    "7.5.0..7.5.1") or after one ("what's new since 7.5.0", "since 7.5.0"), and nothing more; else None.
    "Since upgrading to 7.5.0, POSTs hang" is no such question (release_version)."""
    dotted = _DOTTED_SPAN.fullmatch(text)
    if dotted is not None:
        return dotted.group(1), dotted.group(2)
    versions = list(_NAMED_VERSION.finditer(text))
    if not 1 <= len(versions) <= 2:
        return None
    rest = text
    for found in reversed(versions):
        rest = rest[: found.start()] + " \0 " + rest[found.end() :]
    words = re.findall(r"[\w'+-]+|\0", rest.lower().replace("’", "'"))
    own = project.lower() if project else None
    words = [w for w in words if w != own]
    if any(w != "\0" and w not in _RELEASE_ASKS and w not in _SPAN_WORDS for w in words):
        return None
    at = [n for n, w in enumerate(words) if w == "\0"]
    before = [words[n - 1] if n else "" for n in at]
    first = versions[0].group(1)
    if len(versions) == 1:
        return (first, None) if before[0] in ("since", "after") else None
    second = versions[1].group(1)
    if (before == ["between", "and"]) or (before == ["from", "to"]):
        return first, second
    return None


# "What changed in the last release?", "what's new in the latest version", "latest release notes": the newest
# release's contents are asked for (answered as release_named's, once the store names that release). Every
# word is one of _RELEASE_ASKS or _NEWEST, one of _NEWEST at least, and "release", "version" or "tag" is said;
# "since the last release" asks what came after it (not one of these words).
_NEWEST = frozenset({"last", "latest", "newest", "recent", "most", "current"})
_RELEASE_NOUNS = frozenset({"release", "releases", "version", "versions", "tag", "changelog"})


def newest_release_asked(text: str) -> bool:
    """Whether TEXT asks what the project's newest release holds and nothing more ("what changed in the last
    release?", "what's new in the latest version")."""
    words = re.findall(r"[\w']+", text.lower().replace("’", "'"))
    return (
        bool(_NEWEST.intersection(words))
        and bool(_RELEASE_NOUNS.intersection(words))
        and all(word in _RELEASE_ASKS or word in _NEWEST for word in words)
    )


# "What changed in the first release?", "what was in the initial release", "first release notes": the lowest
# version's contents are asked for (answered as release_named's). Every word is one of _RELEASE_ASKS or _FIRST,
# one of _FIRST at least (but "very"), and "release", "version" or "tag" is said.
_FIRST = frozenset({"first", "initial", "earliest", "oldest", "very"})


def first_release_asked(text: str) -> bool:
    """Whether TEXT asks what the project's first release holds and nothing more ("what changed in the first
    release?", "what was in the initial release")."""
    words = re.findall(r"[\w']+", text.lower().replace("’", "'"))
    return (
        bool(_FIRST.difference({"very"}).intersection(words))
        and bool(_RELEASE_NOUNS.intersection(words))
        and all(word in _RELEASE_ASKS or word in _FIRST for word in words)
    )


# "How do I migrate from v6 to v7?", "upgrading from guzzle 5.0 to 6.0", "upgrade to Moshi 2.x", the bare
# heading "6.0 to 7.0": how to move the code that uses the project from one of its releases to another, which
# an upgrade guide answers (UPGRADING.md's "6.0 to 7.0", a changelog's "Upgrading to Moshi 2.x"). Not a
# report of what broke after an upgrade ("after upgrading from 0.3 to 0.4, old jobs blow up": release_version).
_GUIDE_VERSION = r"v?(\d+(?:\.\d+){0,3})(?:\.x)?"
_GUIDE_NAME = r"(?:[A-Za-z][\w.-]*\s+)?"  # the project's name before a version ("guzzle 6", "Moshi 2.x")
_MIGRATES = lazyre.compile(r"\b(?:migrat\w*|upgrad\w*|updat(?:e|ing)|mov(?:e|ing))\b", re.IGNORECASE)
_FROM_TO = lazyre.compile(
    rf"\bfrom\s+{_GUIDE_NAME}{_GUIDE_VERSION}\s+(?:to|->|→)\s+{_GUIDE_NAME}{_GUIDE_VERSION}(?![\w.])",
    re.IGNORECASE,
)
_BARE_FROM_TO = lazyre.compile(
    rf"\s*{_GUIDE_VERSION}\s+(?:to|->|→)\s+{_GUIDE_VERSION}\s*[?.]?\s*", re.IGNORECASE
)
_GUIDE_TO = lazyre.compile(
    rf"\b(?:migrat\w*|upgrad\w*)\s+to\s+{_GUIDE_NAME}{_GUIDE_VERSION}(?![\w.])", re.IGNORECASE
)
_GUIDE_FROM = lazyre.compile(
    rf"\b(?:migrat\w*|upgrad\w*)\s+from\s+{_GUIDE_NAME}{_GUIDE_VERSION}(?![\w.])", re.IGNORECASE
)
# "When moving an app from 1.x to 2.0, what will I trip over?" plans the move: "when" before an -ing form is
# not a report of what happened after one ("when I upgraded to 2.0, the jobs broke").
_AFTER_THE_FACT = lazyre.compile(
    r"\b(?:after|since|once|broke|breaks|broken)\b|\bwhen\b(?!\s+\w+ing\b)", re.IGNORECASE
)


def migration(text: str) -> tuple[str | None, str | None] | None:
    """The releases (from, to) a question about migrating code from one release of the project to another
    names ("how do I migrate from v6 to v7?" -> ("6", "7"); "upgrade to Moshi 2.x" -> (None, "2"); "6.0 to
    7.0" -> ("6.0", "7.0")), else None (also for a report of what an upgrade broke)."""
    bare = _BARE_FROM_TO.fullmatch(text)
    if bare is not None:
        return bare.group(1), bare.group(2)
    if _MIGRATES.search(text) is None or _AFTER_THE_FACT.search(text) or reports_failure(text):
        return None
    both = _FROM_TO.search(text)
    if both is not None:
        return both.group(1), both.group(2)
    to = _GUIDE_TO.search(text)
    if to is not None:
        return None, to.group(1)
    start = _GUIDE_FROM.search(text)
    return None if start is None else (start.group(1), None)


# A name need not look like code to be one: "what is the envwrap decorator for?" names it by what it is.
_NAMED_THING = lazyre.compile(
    r"\b(?:the|an?|this|its|their) ([A-Za-z_$][\w$]*) (?:decorator|class|function|helper|method|type|module|"
    r"wrapper|hook|macro|struct|enum|trait|interface|mixin|variable|constant|field|attribute|property|"
    r"argument|parameter|alias|fixture|middleware)s?\b",
    re.IGNORECASE,
)


def purpose_name(text: str) -> str | None:
    """The one code name TEXT asks the purpose of ("what is _querycache used for?" -> "_querycache"; "what
    is the envwrap decorator for?" -> "envwrap"), else None."""
    if not _PURPOSE.search(text):
        wide = _PURPOSE_WIDE.search(text) and _PURPOSE_SUBJECT.search(text)
        return wide.group("name") if wide else None
    name, _ = _one_name(text)
    if name is not None:
        return name
    if _CODE.search(text):
        # Several names: the one right after "what is" (see _PURPOSE_SUBJECT), else the question is about
        # how they meet.
        found = _PURPOSE_SUBJECT.search(text)
        return found.group("name") if found else None
    return _named_thing(text)


# Words that say which or what kind of thing, not its name: "the associated function that walks every
# constant", "the same arguments", "its own argument", "a decorated function", "the generated struct".
_NOT_A_NAME = frozenset(
    [
        "same",
        "own",
        "other",
        "new",
        "old",
        "first",
        "last",
        "second",
        "third",
        "next",
        "previous",
        "single",
        "real",
        "plain",
        "full",
        "short",
        "main",
        "minimal",
        "extra",
        "wrong",
        "thin",
        "local",
        "whole",
        "entire",
        "default",
        "custom",
        "generic",
        "global",
        "private",
        "public",
        "internal",
        "external",
        "inner",
        "outer",
        "standalone",
        "separate",
        "special",
        "actual",
        "original",
        "underlying",
        "corresponding",
        "given",
        "following",
        "current",
        "existing",
        "optional",
        "required",
        "positional",
        "top",
        "bottom",
    ]
)


def _named_thing(text: str) -> str | None:
    """The name before what it is ("the envwrap decorator" -> "envwrap"), else None: not a word that says
    which one or what kind (_NOT_A_NAME), nor a lowercase participle ("the associated function", "a
    decorated function")."""
    for named in _NAMED_THING.finditer(text):
        word = named.group(1)
        lower = word.lower()
        if lower in _NOT_A_NAME or (word.islower() and len(word) > 4 and word.endswith("ed")):
            continue
        return word
    return None


# "The push was rejected, what did I do next?", "what did I run before pushing again?": the answer is a
# command run next to the one the question names, not that command.
_ASKS_DONE = lazyre.compile(
    r"\b(what|which( \w+){1,2}|where) (did|do|had) (i|we)"
    r" (do|try|run|type|check|look at|look|change|inspect|open|read|start|launch|kick off|fire off)\b"
    r"|\bthing (i|we) (ran|did|tried|checked|looked at|typed)\b"
    r"|\bwhat (came|happened|ran) ((right|just|immediately) )?(next|after|before)\b|\bwhat next\b",
    re.IGNORECASE,
)
# "Before lunch", "after lunch" say when, not what came first: "what did I do before lunch" asks for the
# morning's work, not for what was run before a command named lunch. So does "the day before yesterday"
# ("what did I run before yesterday's deploy" still asks what came before the deploy).
_AFTER = lazyre.compile(
    r"\b(after(?!\s+lunch)|afterwards|next|then|once|as soon as|between|first thing|about (it|that|this)|to fix it|in response)\b",
    re.IGNORECASE,
)
_BEFORE = lazyre.compile(r"\bbefore\b(?!\s+lunch|\s+yesterday\b(?!'))", re.IGNORECASE)
Sequence = Literal["after", "before"]
# A question that reports something going wrong ("cargo refused to build", "CI went red"); "blows up" as
# "blew up". "panics", "throws" and "falls over" were tried and not kept: read as failure reports they cost
# fresh67 (hybrid MRR .643 -> .638 on its stores; the forms of "blow up" alone .642).
_FAILURE = lazyre.compile(
    r"\b(fail\w*|broke|broken|break\w*|refus\w*|reject\w*|error\w*|crash\w*|red|wouldn'?t|would not"
    r"|(blow|blows|blowing|blown|blew) up"
    r"|couldn'?t|could not|didn'?t work|did not work|exit(ed)? (with )?(code )?[1-9]\d*)\b",
    re.IGNORECASE,
)


def reports_failure(text: str) -> bool:
    """Whether TEXT reports that something went wrong."""
    return _FAILURE.search(text) is not None


# How a run that did not finish is told besides (`reports_run_failure`): "once the tests ran out of database
# connections", "the build died", "the job hung", "the rebase stopped on a conflict", "access denied", "a 502".
# Not in _FAILURE: that one decides how the learned step reads a question (retrieve.rerank's "failure"
# condition), learned as it stands.
_RUN_TROUBLE = lazyre.compile(
    r"\b(?:ran|run|runs|running) out of\b|\bout of (?:memory|disk|space)\b"
    r"|\b(?:died|dies|hung|hangs?|killed|stopped|timed? ?out|fell over|segfault\w*|oom(?:ed)?|conflicts?"
    r"|complain(?:ed|s|ing)?|chok(?:e|ed|es|ing)|barf(?:ed|s)?|denied)\b"
    # An HTTP error a request got: "answering 502", "a 403 when pushing".
    r"|(?<![\w.])(?:40[0-9]|429|50[0-9])(?![\w.])",
    re.IGNORECASE,
)


def reports_run_failure(text: str) -> bool:
    """Whether TEXT reports that something went wrong (reports_failure) or that a run did not finish."""
    return reports_failure(text) or _RUN_TROUBLE.search(text) is not None


def before_failure(text: str) -> str:
    """TEXT up to the first phrase that reports a failure (reports_run_failure) in the past tense: the run
    that failed, in "the migration that blew up four days ago" or "which training run ran out of GPU
    memory", told apart from how it failed, which a command line does not hold. "" when TEXT reports none,
    starts with it, or reports it in the present ("why does the node test fail on windows" asks about code,
    not about a run)."""
    found = [match for pattern in (_FAILURE, _RUN_TROUBLE) for match in [pattern.search(text)] if match]
    if not found:
        return ""
    first = min(found, key=lambda match: match.start())
    return text[: first.start()] if _PAST_FAILURE.match(first.group(0)) else ""


# A failure reported as an event: a verb in the past tense, and what can only be said of one.
_PAST_FAILURE = lazyre.compile(
    r"\w+ed\b|broke\b|broken\b|blew up|blown up|ran out of|died|hung|fell over|killed|red\b"
    r"|(?:could|would|did)(?:n'?t| not)",
    re.IGNORECASE,
)


# The operating systems a text names, by the words people and commits use for them: a system's names, its
# distributions, and the kernel interfaces and toolchains only it has (a change to `inotify.go` or one that
# says "kqueue" is about Linux or the BSDs and macOS, whatever its subject says). Written from general
# knowledge, not from the labelled questions.
PLATFORM_WORDS: dict[str, tuple[str, ...]] = {
    "windows": ("windows",),
    "win32": ("windows",),
    "win64": ("windows",),
    "msvc": ("windows",),
    "mingw": ("windows",),
    "cygwin": ("windows",),
    "msys": ("windows",),
    "msys2": ("windows",),
    "macos": ("macos",),
    "mac": ("macos",),
    "macintosh": ("macos",),
    "osx": ("macos",),
    "darwin": ("macos",),
    "fsevents": ("macos",),
    "linux": ("linux",),
    "inotify": ("linux",),
    "epoll": ("linux",),
    "glibc": ("linux",),
    "musl": ("linux",),
    "ubuntu": ("linux",),
    "debian": ("linux",),
    "fedora": ("linux",),
    "centos": ("linux",),
    "rhel": ("linux",),
    "alpine": ("linux",),
    "bsd": ("bsd",),
    "freebsd": ("bsd",),
    "openbsd": ("bsd",),
    "netbsd": ("bsd",),
    "dragonfly": ("bsd",),
    "dragonflybsd": ("bsd",),
    "kqueue": ("bsd", "macos"),
    "solaris": ("solaris",),
    "illumos": ("solaris",),
    "android": ("android",),
}
# A system's word followed by one of these is something else: a MAC address, Alpine.js.
_NOT_A_PLATFORM: dict[str, frozenset[str]] = {
    "mac": frozenset({"address", "addresses", "addr", "addrs"}),
    "alpine": frozenset({"js"}),
}
_WORD = lazyre.compile(r"[a-z0-9]+")


def platforms_named(text: str) -> frozenset[str]:
    """The operating systems TEXT names (PLATFORM_WORDS): "on my Mac", "backend_kqueue.go", "Ubuntu 22.04"."""
    found: set[str] = set()
    words = _WORD.findall(text.lower())
    for i, word in enumerate(words):
        systems = PLATFORM_WORDS.get(word)
        if systems is None:
            continue
        if i + 1 < len(words) and words[i + 1] in _NOT_A_PLATFORM.get(word, ()):
            continue
        found.update(systems)
    return frozenset(found)


# What a question calls a run of something, and the commands that are such runs: "which tests failed" asks
# about `npm test`, `pytest`, `node --test`… (runs.failed_runs_first lists them), "once CI went red" about
# `gh run watch`, "which migration failed" about `alembic upgrade head`, "the dev server wouldn't start"
# about `python -m app serve` (runs.with_neighbours' anchor is one of them). The one vocabulary of it:
# each entry is the question's words for the run and the runners' words. A command is such a run when its
# words hold a runner's words in a row, anywhere (`uv run pytest -x`, `vendor/bin/phpunit`, `npm run
# test:unit`, `cd web && yarn build`).
_RUNS: tuple[tuple[str, tuple[str, ...]], ...] = (
    (
        r"(?:(?:unit|integration|smoke|quick|browser|ui) )?"
        r"(?:tests?|testing|specs?|(?:test ?)?suites?)",
        ("npm test", "npm t", "npm run test", "yarn test", "yarn run test", "pnpm test", "pnpm run test",
         "bun test", "deno test", "node --test", "jest", "vitest", "mocha", "ava", "karma", "playwright test",
         "cypress run", "pytest", "py.test", "tox", "nox", "unittest", "cargo test", "cargo nextest",
         "go test", "make test", "make check", "ctest", "mvn test", "mvn verify", "mvnw test", "mvnw verify", "gradle test",
         "gradlew test", "dotnet test", "rspec", "rake test", "rails test", "phpunit", "pest",
         "composer test", "mix test", "swift test", "zig build test", "cabal test", "stack test",
         "meson test", "bats", "prove"),
    ),
    (
        r"e2e|end[- ]to[- ]end",
        ("playwright", "cypress", "npm run e2e", "npm run test:e2e", "yarn e2e", "pnpm e2e", "detox", "wdio",
         "nightwatch", "testcafe"),
    ),
    (
        r"builds?|building|compil\w*",
        ("build", "dist", "electron-builder", "make", "cmake", "ninja", "cargo build", "cargo check", "go build", "npm run build", "yarn build",
         "yarn run build", "pnpm build", "pnpm run build", "bun run build", "tsc", "webpack", "vite build",
         "docker build", "docker compose build", "docker buildx", "mvn", "mvnw", "gradle", "gradlew",
         "dotnet build", "bazel build", "meson compile", "gcc", "g++", "clang", "cc", "javac", "rustc",
         "swift build", "zig build", "xcodebuild", "msbuild", "python -m build", "setup.py build"),
    ),
    (
        r"lint\w*",
        ("eslint", "ruff", "flake8", "pylint", "golangci-lint", "cargo clippy", "shellcheck", "rubocop",
         "phpstan", "psalm", "stylelint", "npm run lint", "yarn lint", "pnpm lint", "make lint", "pre-commit"),
    ),
    (
        r"format\w*|fmt|formatters?",
        ("prettier", "black", "ruff format", "gofmt", "goimports", "cargo fmt", "rustfmt", "clang-format",
         "spotless", "ktlint", "ktfmt", "mix format", "dotnet format", "isort", "shfmt", "swiftformat",
         "php-cs-fixer", "terraform fmt", "npm run format", "yarn format", "pnpm format", "make format",
         "make fmt"),
    ),
    (
        r"config(?:uration)? ?(?:tests?|checks?)|configtest|syntax checks?",
        ("nginx -t", "apachectl configtest", "apache2ctl configtest", "apachectl -t", "httpd -t",
         "haproxy -c", "caddy validate", "sshd -t", "visudo -c", "named-checkconf", "promtool check",
         "terraform validate", "docker compose config", "systemd-analyze verify", "php-fpm -t"),
    ),
    (
        r"type ?check\w*|types",
        ("mypy", "pyright", "tsc", "flow", "pytype", "npm run typecheck", "make typecheck"),
    ),
    (
        r"ci|workflows?|pipelines?",
        ("gh run", "gh workflow", "gh pr checks", "glab ci", "circleci"),
    ),
    (
        r"deploy\w*|rollouts?",
        ("deploy", "kubectl apply", "kubectl rollout", "helm upgrade", "helm install", "terraform apply",
         "vercel", "ansible-playbook"),
    ),
    (
        r"migrat\w*",
        ("migrate", "node-pg-migrate", "typeorm migration", "alembic", "flyway", "goose", "dbmate", "liquibase",
         "ecto.migrate", "diesel migration", "sqitch"),
    ),
    (
        r"install\w*|dependenc\w*|deps",
        ("install", "npm ci", "npm i", "yarn add", "pnpm add", "poetry lock", "poetry add", "poetry update",
         "uv sync", "uv add", "bundle update", "cargo update", "cargo add", "go mod", "go get",
         "composer update", "composer require", "mix deps.get"),
    ),
    (
        r"(?:dev )?servers?",
        ("serve", "server", "runserver", "http.server", "npm run dev", "npm start", "npm run start", "yarn dev",
         "yarn start", "pnpm dev", "pnpm start", "vite", "next dev", "next start", "nuxt dev", "rails s",
         "flask run", "uvicorn", "gunicorn", "phx.server", "go run", "cargo run", "dotnet run", "nodemon", "air",
         "hypercorn", "daphne", "puma", "rackup"),
    ),
)  # fmt: skip
# The programs a word people use for a tool or a thing names ("the maven build" ran `./mvnw`, "the install
# onto my phone" `adb install`), and the commands' words an action is done by ("the docs upload": `aws s3
# sync`), from general knowledge: a command holding one of them is named by the word.
_POSTGRES = "psql pg_dump pg_restore pg_isready pg_ctl createdb dropdb postgres"
PROGRAM_NAMES: dict[str, frozenset[str]] = {
    word: frozenset(programs.split())
    for word, programs in {
        "maven": "mvn mvnw",
        "postgres": _POSTGRES,
        "postgresql": _POSTGRES,
        "mysql": "mysql mysqldump mysqladmin",
        "mariadb": "mysql mysqldump mariadb",
        "kubernetes": "kubectl helm",
        "k8s": "kubectl helm",
        "cluster": "kubectl helm",
        "pod": "kubectl",
        "pods": "kubectl",
        "phone": "adb",
        "device": "adb",
        "emulator": "adb emulator",
        "simulator": "simctl",
        "serial": "picocom minicom screen cu tio",
        "redis": "redis-cli redis-server",
        "gcs": "gsutil",
        "bucket": "gsutil s3",
        "homebrew": "brew",
        "bundler": "bundle",
        "terraform": "terraform tofu",
        "github": "gh",
        "kafka": "kcat kafka-topics kafka-consumer-groups kafka-console-consumer",
        "proxy": "nginx haproxy envoy traefik caddy squid",
        "gradle": "gradle gradlew",
        "cocoapods": "pod",
        "xcode": "xcodebuild xcrun",
        "ios": "xcodebuild xcrun pod",
        "android": "gradlew gradle adb",
        "testflight": "fastlane altool",
        "metro": "react-native expo",
        "functions": "func",
        "rust": "cargo rustc",
        "ruby": "ruby bundle gem rake",
        "gcp": "gcloud gsutil bq",
        "bigquery": "bq",
        "snowflake": "snowsql",
        "systemd": "systemctl journalctl",
        "certificate": "certbot openssl",
        "certificates": "certbot openssl",
        "cert": "certbot openssl",
        "certs": "certbot openssl",
        "dns": "dig nslookup host",
        "firewall": "ufw iptables firewall-cmd",
        "cron": "crontab",
        # What a command does, by the words of the commands that do it.
        "upload": "cp sync put rsync scp upload",
        "download": "cp sync pull get fetch rsync scp curl wget download",
        "publish": "publish release upload",
        "dump": "mysqldump pg_dump pg_dumpall mongodump jmap jstack",
    }.items()
}
# Each kind's runners as word tuples, in _RUNS' order.
_RUNNERS = tuple(tuple(tuple(r.split()) for r in runners) for _, runners in _RUNS)
# A quote or a backtick parts words as a blank does: `ssh edge-1 'sudo nginx -t'` runs `nginx -t`.
_COMMAND_SPLIT = lazyre.compile(r"[\s;&|():'\"`]+")
# The words of a command line with its `&&` and `;` kept (a leading `cd DIR &&` says where it ran).
_HEAD_WORD = lazyre.compile(r"&&|;|[^\s;&|():'\"`]+")
# ssh's options that take a value (`ssh -p 2222 -i key HOST CMD`): past them and the host is the command it
# runs there.
_SSH_VALUED = frozenset("BbcDEeFIiJLlmOoPpQRSWw")
# What runs a program a package manager installed (`bundle exec fastlane`, `npx jest`, `poetry run pytest`):
# the program is what a question names.
_WRAPPERS = (
    ("bundle", "exec"), ("poetry", "run"), ("uv", "run"), ("pipenv", "run"), ("pdm", "run"), ("hatch", "run"),
    ("pnpm", "exec"), ("pnpm", "dlx"), ("yarn", "dlx"), ("npx",), ("bunx",),
)  # fmt: skip


# The words of a kind's phrase in a question, as the question's words are split ("end-to-end": end, to).
_SPAN_WORD = lazyre.compile(r"[a-z0-9]+")


@dataclass(frozen=True)
class Runs:
    """A kind of run a question names: its words in the question, and the runners' words."""

    words: frozenset[str]
    runners: tuple[tuple[str, ...], ...]


def runs_named(text: str) -> list[Runs]:
    """The kinds of run TEXT names ("the tests", "the build", "lint", "the type check")."""
    found = []
    for (said, _), runners in zip(_RUNS, _RUNNERS):
        spans = re.findall(rf"\b(?:{said})\b", text, re.IGNORECASE)
        if spans:
            words = frozenset(w for span in spans for w in _SPAN_WORD.findall(span.lower()))
            found.append(Runs(words, runners))
    return found


# A question about the asker's own change to something: "why did I change the easter function", "what did
# I do to easter", "what did we change in the parser", "my change to within_delta". Not a fix: "how did I
# fix" is answered by memory's failure → fix links (runs.fixes_first).
# "How do I change the template?" asks how to, in the present: no change of the asker's is asked about.
_OWN_CHANGE = lazyre.compile(
    r"\b(?:did|have|had)\s+(?:i|we)\s+(?:just\s+|recently\s+)?"
    r"(?P<verb>chang\w*|do|done|touch\w*|edit\w*|modif\w*|rewr\w*|refactor\w*|renam\w*|updat\w*|tweak\w*)\b"
    r"|\b(?:my|our)\s+(?:last\s+|recent\s+)?(?:changes?|commits?|edits?|refactor\w*)\b",
    re.IGNORECASE,
)
# The verbs of such a question that say only that something changed: "why did I change the easter
# function" is about easter, and "change" matched 2018's "Change the order of params in rrule docstring"
# (its "byeaster" and "function" too) above the asker's own easter commits. A rename or a refactor is
# itself what the commit says, and stays a word of the question.
_PLAIN_CHANGE_VERB = lazyre.compile(
    r"^(?:chang\w*|touch\w*|edit\w*|modif\w*|updat\w*|tweak\w*)$", re.IGNORECASE
)


def asks_own_change(text: str) -> bool:
    """Whether TEXT asks about a change the asker made ("why did I change X", "what did we do to X")."""
    return _OWN_CHANGE.search(text) is not None


def own_change_verb(text: str) -> str | None:
    """The verb of TEXT's question about the asker's own change when it says only that something changed
    ("why did I change X" -> "change"; "why did I edit X" -> "edit"), else None ("why did I rename X")."""
    found = _OWN_CHANGE.search(text)
    verb = found.group("verb") if found else None
    return verb if verb and _PLAIN_CHANGE_VERB.match(verb) else None


def names_runs_alone(words: set[str], kinds: list[Runs]) -> bool:
    """Whether WORDS (a question's subject) are all words naming a kind of run of KINDS (runs_named): "which
    tests failed yesterday", "why did the build fail", not "why did the date test fail"."""
    return bool(words) and words <= {word for kind in kinds for word in kind.words}


def command_words(command: str) -> list[str]:
    """COMMAND's words, lowercased, each a path's last part (`./gradlew` → gradlew)."""
    return [w.rsplit("/", 1)[-1] for w in _COMMAND_SPLIT.split(command.lower()) if w.strip("/")]


def head_words(command: str) -> list[str]:
    """COMMAND's words as command_words gives them, with its `&&` and `;` kept: what command_head reads."""
    return [w.rsplit("/", 1)[-1] for w in _HEAD_WORD.findall(command.lower()) if w.strip("/")]


def command_head(words: list[str]) -> list[str]:
    """The program and its first word after it (`npm test -- x` → npm, test; `sudo make` → make), past
    `VAR=value` settings and what only launches it (sources.shell.launchers: `sudo -u deploy`, `nice -n
    10`, `time -p`, a leading `cd DIR &&` of WORDS as head_words gives them: `( cd sub && make )` → make),
    past `ssh HOST`, which runs it elsewhere (`ssh -p 2222 edge-1 'sudo nginx -t'` → nginx), and past a package
    manager's runner (`bundle exec fastlane ios beta` → fastlane, ios); an option or an operator is no such
    word."""
    start = command_start(words)
    if start < len(words) and words[start] == "ssh":
        remote = _remote_start(words, start)
        start = remote + command_start(words[remote:]) if remote > start else start
    start = _past_wrapper(words, start)
    head = words[start : start + 2]
    return head if len(head) < 2 or not head[1].startswith(("-", "&", ";")) else head[:1]


def _past_wrapper(words: list[str], at: int) -> int:
    """Where the program that a package manager's runner at WORDS[AT] runs starts, past the runner and its
    options (`bundle exec fastlane ios beta` → fastlane, `npx -y jest` → jest); AT when there is none, or it
    runs nothing."""
    for wrapper in _WRAPPERS:
        if tuple(words[at : at + len(wrapper)]) == wrapper:
            i = at + len(wrapper)
            while i < len(words) and words[i].startswith("-"):
                i += 1
            return i if i < len(words) and words[i] not in ("&&", ";") else at
    return at


def _remote_start(words: list[str], at: int) -> int:
    """Where the command that `ssh [options] HOST CMD…` at WORDS[AT] runs on HOST starts; AT when it runs
    none there (a login: ssh is the command)."""
    i = at + 1
    while i < len(words) and words[i].startswith("-"):
        i += 2 if len(words[i]) == 2 and words[i][1] in _SSH_VALUED else 1
    i += 1  # the host
    return i if i < len(words) and words[i] not in ("&&", ";") else at


def is_run(words: list[str], runs: Runs) -> bool:
    """Whether a command of WORDS (command_words) is a run of RUNS: a runner's words in a row."""
    return any(
        words[i : i + len(runner)] == list(runner)
        for runner in runs.runners
        for i in range(len(words) - len(runner) + 1)
    )


def _longest_runner(words: list[str], runners: tuple[tuple[str, ...], ...]) -> int:
    """How many words the longest of RUNNERS found in a row in WORDS has (0: none is there)."""
    return max(
        (
            len(runner)
            for runner in runners
            for i in range(len(words) - len(runner) + 1)
            if words[i : i + len(runner)] == list(runner)
        ),
        default=0,
    )


def is_run_mainly(words: list[str], runs: Runs) -> bool:
    """Whether a command of WORDS is a run of RUNS before any other kind: no kind's runner holds more of its
    words in a row (`make lint` is lint, though `make` alone is a build; `./gradlew test` is the tests)."""
    own = _longest_runner(words, runs.runners)
    return own > 0 and all(_longest_runner(words, runners) <= own for runners in _RUNNERS)


# A question that speaks of the docs themselves ("which commit documented --foo?", "the README example"):
# there a change to the docs may be the answer (rank.DOCS_ONLY_FACTOR stays off).
_DOCS = lazyre.compile(
    r"\b(docs?|document\w*|readme|manual|man ?pages?|typos?|examples?|guide|changelog|tutorial|wiki"
    r"|spelling|wording|badge|instructions|faq)\b",
    re.IGNORECASE,
)


def mentions_docs(text: str) -> bool:
    """Whether TEXT speaks of documentation."""
    return _DOCS.search(text) is not None


# A question that speaks of tests ("which commit added the test for broken symlinks?", "why does the spec
# fail on Windows?"): there a change to the tests may be the answer (rank.TESTS_ONLY_FACTOR stays off).
_TESTS = lazyre.compile(r"\b(tests?|tested|testing|specs?|fixtures?|test ?suite|snapshots?)\b", re.IGNORECASE)


def mentions_tests(text: str) -> bool:
    """Whether TEXT speaks of tests."""
    return _TESTS.search(text) is not None


def sequence(text: str) -> Sequence | None:
    """`after` when TEXT asks what was done after something it names ("what did I do after cargo failed",
    "once CI went red, what did I look at first"), `before` for what came before it ("what did I run just
    before starting git bisect"), else None."""
    if not _ASKS_DONE.search(text):
        return None
    if _BEFORE.search(text):
        return "before"
    return "after" if _AFTER.search(text) else None


def intent(text: str) -> Intent:
    """`usage` when TEXT asks how to use something and not what happened, `history` for the reverse,
    else `neutral`."""
    usage, history = _USAGE.search(text) is not None, _HISTORY.search(text) is not None
    if usage and not history:
        return "usage"
    if history and not usage:
        return "history"
    return "neutral"


@dataclass(frozen=True)
class Topic:
    """A project's practical matter a question asks about: installing it, its licence, the versions it
    supports… A project's docs give each one a section of that name ("Installation", "License",
    "Supported versions"), whatever words the question uses ("how do I get thor onto my machine?",
    "can I ship it in a closed-source product?")."""

    name: str
    words: tuple[str, ...]  # searched for such sections (as indexed: lower-case, unstemmed)
    heading: lazyre.Pattern  # a section's heading, or its file's name, that names the matter

    def heads(self, ref: str) -> bool:
        """Whether the doc section REF ("path#Heading") is about this matter, by its heading or by its
        file's name (every section of CONTRIBUTING.md is about contributing)."""
        path, _, heading = ref.partition("#")
        name = path.rsplit("/", 1)[-1].split(".", 1)[0]
        return self.heading.search(heading) is not None or self.heading.search(name) is not None


# How each matter is asked, and how docs head its section. Written from how READMEs are laid out and how
# people ask about them, then narrowed where they misread labelled questions (docs/evaluation.md, twenty-
# second wave): "how do I get tab completion" is not about installing, "the contributors' names" is not
# about contributing, "pip install X from the sdist blows up" reports a failure, "how do I download a big
# file" asks about the program's downloads. The first that matches wins.
# Each comes with the lower-case strings one of which any question it matches holds: a substring test is
# ~50x cheaper than the pattern, and most questions hold none.
_TOPICS: tuple[tuple[tuple[str, ...], lazyre.Pattern, Topic], ...] = tuple(
    (
        tuple(gate.split("|")),
        lazyre.compile(asked, re.IGNORECASE),
        Topic(name, tuple(words.split()), lazyre.compile(heading, re.IGNORECASE)),
    )
    for name, gate, asked, words, heading in (
        (
            "uninstall",
            "uninstall|remove",
            r"\b(how (do|can|should) (i|we|you) (uninstall|remove)\b.{0,40}\b(completely|entirely|cleanly|for good)"
            r"|how (do|can|should) (i|we|you) uninstall|uninstall(ing)? (it|\S+) (completely|entirely|cleanly))\b",
            "uninstall uninstalling uninstallation removal",
            r"^(uninstall\w*|removal|removing)\b",
        ),
        (
            "contributing",
            "contribut|help out|involved|pull request| pr|patch|locally|development|hack",
            r"\b(contribut(e|ing|ion)|help out|get involved|(send|open|submit|make) (a |my )?(pull request|pr"
            r"|patch)|run the (test suite|tests) locally|development (setup|environment)|for hacking|hack on)\b",
            "contributing contribute contribution contributions development",
            r"^(contribut\w*|development|developing|hacking|how to contribute)",
        ),
        (
            "install",
            "install|command|line|project|module|machine|computer|laptop|system|server|dependencies|go.mod"
            "|cargo.toml|package.json|gemfile|requirements|pyproject|composer",
            r"\b(how (do|can|should|would) (i|we|you|one) install|how to install"
            r"|(what('s| is)?|which) (the )?(\S+ )?(command|line)\b.{0,40}\b(install|add|pull in|get)"
            r"|(add|pull in|get|install) (\S+ ){0,3}(to|into|onto) (my|our|a|the) (\S+ )?(project|module"
            r"|machine|computer|laptop|system|server|dependencies|go\.mod|cargo\.toml|package\.json|gemfile"
            r"|requirements\S*|pyproject\.toml|composer\.json))\b",
            "install installation installing setup quickstart",
            r"^(install(ation|ing)?|getting started|quick ?start|setup|set(ting)? up)\b",
        ),
        (
            "license",
            "licen|closed|proprietary|commercial|copyright|terms|legal",
            r"\b(licen[cs]\w*|closed[- ]source|proprietary|commercial(ly)?|copyright|under what terms|legally)\b",
            "license licence licensing licensed copyright",
            r"^(licen[cs]\w*|copying|copyright|legal)\b",
        ),
        (
            "versions",
            "oldest|minim|earliest|lowest|version|msrv",
            r"\b((oldest|minimum|minimal|earliest|lowest)\b.{0,40}\b(versions?|releases?|node(\.js)?|python|ruby"
            r"|go|golang|rust|rustc|php|java|jdk|toolchain|compiler)|which (\S+ )?versions? (of (\S+ )?)?(do|does"
            r"|is|are|can|will|should|must)|msrv|supported (\S+ )?versions)\b",
            "supported minimum compatibility requirements msrv",
            r"(supported|minimum|compatib|requirement|msrv|version support)",
        ),
        (
            "security",
            "security|vulnerab|cve-",
            r"\b((report|disclose|tell)\b.{0,60}\b(security|vulnerabilit\w*)|(security|vulnerabilit\w*)\b.{0,60}"
            r"\b(report|disclos\w*|privately)|security (policy|contact))",
            "security vulnerability vulnerabilities",
            r"(security|vulnerabilit)",
        ),
    )
)


# A configuration file's section written in brackets ("where is the [paths] setting documented?",
# "[tool.poetry]"), asked how to use: the docs head its section with the same brackets (coverage.py's
# config.rst: "[paths]", "[run] branch"), while "paths" alone is a word every page says (the word index drops
# the brackets). A bracket that is part of a longer token is not one: an index (`data[0]`, `map[string]`,
# `Optional[T]`), an extra (`pkg[dev]`), an attribute (`#[from]`), an array of tables (`[[fruit]]`), a link
# (`[text](url)`); nor is a version (`[0.15.1]`, no letter first).
_BRACKETED = lazyre.compile(r"(?<![\w#\[\]])\[([A-Za-z_][\w.-]*)\](?![\w\[(])")


def topic(text: str) -> Topic | None:
    """The practical matter TEXT asks about (installing, licence, supported versions, contributing, security,
    uninstalling), else the configuration section it names in brackets (bracketed_section), or None."""
    low = text.lower()
    for gate, asked, found in _TOPICS:
        if any(part in low for part in gate) and asked.search(text):
            return found
    return bracketed_section(text)


def bracketed_section(text: str) -> Topic | None:
    """The first configuration section TEXT names in brackets ("[paths]") when it asks how to use something
    (intent), as the matter whose doc section is headed by it: searched by the name's words, heading it when
    its heading holds the name, brackets and all."""
    found = _BRACKETED.search(text) if "[" in text else None
    if found is None or intent(text) != "usage":
        return None
    name = f"[{found.group(1)}]"
    words = tuple(re.findall(r"[^\W_]+", found.group(1).lower()))
    return Topic(name, words, lazyre.compile(re.escape(name), re.IGNORECASE))


# A pasted stack trace: its frames (PHP's `#0 /path(12): f()`, Java's and JavaScript's `at f (file:12:3)`,
# Python's `File "x.py", line 12, in f`) are context, and its headline (the exception's class and message:
# PHP's and Java's first line, Python's last) is the question. Only an input with TRACE_FRAMES frames, or a
# Python `Traceback` and one, is read so: a one-line question never is.
TRACE_FRAMES = 2
_FRAME = lazyre.compile(
    r"^\s*(?:#\d+\s+(?:/|[A-Za-z]:\\|\[internal|\{main\})"  # PHP
    r"|at\s+\S.*(?:\([^()]*:\d+(?::\d+)?\)|:\d+(?::\d+)?|\(Native Method\)|\(Unknown Source\))\s*$"  # Java, JS
    r"|File\s+\"[^\"]+\",\s+line\s+\d+)"  # Python
)
_TRACE_START = lazyre.compile(r"^\s*Traceback \(most recent call last\):")
_NOT_HEADLINE = lazyre.compile(
    r"^\s*(?:Stack trace:|Traceback \(most recent call last\):|During handling of the above exception"
    r"|The above exception was the direct cause|\.\.\.\s*\d+\s+more|\^+\s*$|~+\s*$)",
    re.IGNORECASE,
)
# A URL in the headline is the failing request's own (`for https://api.example.com/v1/orders`), and a PHP
# headline's `in /path/file.php:210` the frame it was thrown at: neither is what memory holds.
_HEADLINE_URL = lazyre.compile(
    r"(?:\b(?:for|at|to|from|on)\s+)?\(?\b(?:see\s+)?[a-z][a-z0-9+.-]*://\S+\)?", re.IGNORECASE
)
_HEADLINE_AT = lazyre.compile(r"\s+in\s+\S+:\d+\s*$")


@dataclass(frozen=True)
class Trace:
    """A pasted trace: its HEADLINE (as searched) and its FRAMES (their lines)."""

    headline: str
    frames: str


def pasted_trace(text: str) -> Trace | None:
    """TEXT as a stack trace when it is one (multi-line, with frames); None otherwise."""
    lines = [line for line in text.splitlines() if line.strip()]
    frames = [line for line in lines if _FRAME.match(line)]
    python = any(_TRACE_START.match(line) for line in lines)
    if len(frames) < (1 if python else TRACE_FRAMES):
        return None
    rest = [line for line in lines if not _FRAME.match(line) and not _NOT_HEADLINE.match(line)]
    if python:
        # The exception is the last unindented line; the indented ones are the frames' source lines.
        said = [line for line in rest if not line[:1].isspace()]
        headline = said[-1] if said else ""
    else:
        headline = rest[0] if rest else ""
    headline = _HEADLINE_AT.sub("", _HEADLINE_URL.sub(" ", headline)).strip()
    if re.search(r"\w", headline) is None:
        return None
    return Trace(" ".join(headline.split()), "\n".join(frames))


# "What did I ask claude about Chain::advance?", "what did I tell codex about the cache?", "what did we
# discuss about the vtable?", "what did I ask the agent about X?": the conversation with a coding agent about X
# is asked for. The agent it names says whose conversation (an author hint), not what it was about: searched,
# "claude" matched every command Claude Code ran (`cargo test`, `cargo clippy`) through its author.
_AGENT_NAMED = r"(?:the|my|our)\s+(?:ai\s+|coding\s+)?(?:agent|assistant)|claude(?:[\s-]code)?|codex|gemini|aider|copilot|cursor"
_CONVERSATION_ASKED = lazyre.compile(
    r"\bwhat\s+(?:did|have|had|do)\s+(?:i|we)\s+"
    r"(?:ask|asked|tell|told|say|said|discuss|discussed|talk|talked|chat|chatted)(?:\s+(?:to|with))?"
    rf"(?:\s+(?P<who>{_AGENT_NAMED}))?"
    r"\s+(?:about|on|regarding)\b",
    re.IGNORECASE,
)
# "What did I ask claude yesterday?", "what did I tell the agent this morning?": what was asked of an agent on
# a day, with nothing named it was about; the day's questions typed to it are the answer.
_CONVERSATION_OF_DAY = lazyre.compile(
    r"^\W*what\s+(?:did|have|had|do)\s+(?:i|we)\s+(?:ask|asked|tell|told|say|said|type|typed)"
    rf"(?:\s+(?:to|with))?\s+(?P<who>{_AGENT_NAMED})"
    r"(?:\s+(?:the\s+day\s+before\s+yesterday|yesterday|last\s+night|today|tonight|earlier"
    r"|this\s+(?:morning|afternoon|evening)|(?:before|after)\s+lunch))+\W*$",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class ConversationAsk:
    """A question about what was said to an agent: the PHRASE that asks it (not searched), and the AGENT it
    names as conversations record it (claude-code, codex, ...), None for any ("the agent", or none named)."""

    phrase: str
    agent: str | None


def conversation_asked(text: str) -> ConversationAsk | None:
    """The conversation TEXT asks about ("what did I ask claude about X" -> claude-code's), else None."""
    return _conversation(_CONVERSATION_ASKED.search(text))


def conversation_of_day(text: str) -> ConversationAsk | None:
    """The agent TEXT asks what was asked of on a day it names, with nothing named beside ("what did I ask
    claude yesterday" -> claude-code's; "the agent": any), else None."""
    return _conversation(_CONVERSATION_OF_DAY.search(text))


def _conversation(found: re.Match[str] | None) -> ConversationAsk | None:
    if found is None:
        return None
    who = (found.group("who") or "").lower()
    if not who or who.split()[-1] in ("agent", "assistant"):
        return ConversationAsk(found.group(0), None)
    return ConversationAsk(found.group(0), "claude-code" if who.startswith("claude") else who)
