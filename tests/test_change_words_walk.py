"""The first sync's one git walk (commits, numstat and change words from one `git log -z -p --numstat -U1`)
gives what the two walks before it gave: the numstat walk's records, and the words of a `-U0` patch walk
with each hunk header's function. Real git repositories, real redaction; the "before" is written out here
as an oracle (the code that ran before, kept in the test only)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from nexusmem import gitcmd, project, sync
from nexusmem.config import DEFAULTS
from nexusmem.redact import PLACEHOLDER_RE, redact
from nexusmem.sources.git.changewords import (
    MAX_CHANGE_WORDS,
    change_words,
    defined_names,
    iter_commits_with_words,
)
from nexusmem.sources.git.commits import _LOG_STABLE, iter_commits
from nexusmem.sources.git.diff import _label_path, _matches_any
from nexusmem.text import CODE_NOISE, identifier_list, identifiers, is_noise_word, split_identifier

from helpers import commit, git

SKIP: list[str] = DEFAULTS["sources"]["diff"]["skip"]
# A GitHub token the redactor knows by its shape.
TOKEN = "ghp_" + "x1Y2z3" * 6


def stored_words(repo: Path, sha: str) -> str:
    with project.load(repo).open_store() as store:
        row = store.conn.execute(
            "SELECT words FROM nodes WHERE kind = 'git_commit' AND ref = ?", (sha,)
        ).fetchone()
    assert row is not None, f"no commit node for {sha}"
    return str(row[0])


def oracle_change_words(
    funcs: Iterable[str], changed: str, cap: int = MAX_CHANGE_WORDS, defined: Iterable[str] = ()
) -> str:
    """change_words as it was written before it remembered identifiers (a set and a list, one word at a
    time); capped at the end too. DEFINED names still in the changed text go first."""
    out: list[str] = []
    seen: set[str] = set()

    def add_split(ident: str) -> None:
        for word in split_identifier(ident):
            if word not in seen and not is_noise_word(word):
                seen.add(word)
                out.append(word)

    counts = Counter(identifier_list(PLACEHOLDER_RE.sub(" ", changed)))
    for ident in defined:
        if ident in counts:
            low = ident.lower()
            if low not in seen and low not in CODE_NOISE and not low.isdigit():
                seen.add(low)
                out.append(low)
            if "_" in ident.strip("_") or not (ident.islower() or ident.isupper()):
                add_split(ident)
    for func in funcs:
        for ident in identifiers(PLACEHOLDER_RE.sub(" ", func)):
            low = ident.lower()
            if low not in seen and not is_noise_word(low):
                seen.add(low)
                out.append(low)
            add_split(ident)
    compound = [i for i in counts if "_" in i.strip("_") or not (i.islower() or i.isupper())]
    plain = [i for i in counts if i not in set(compound)]
    for group, is_compound in ((compound, True), (plain, False)):
        group.sort(key=counts.__getitem__, reverse=True)
        for ident in group:
            low = ident.lower()
            if low not in seen and low not in CODE_NOISE and not low.isdigit():
                seen.add(low)
                out.append(low)
            if is_compound:
                add_split(ident)
    return " ".join(out[:cap])


def oracle_u0_words(repo: Path) -> dict[str, str]:
    """sha → change words the way the walk before did it: a `git log -p --unified=0` of its own, the
    function context of every hunk header, the added and removed lines of the files the skip list keeps."""
    args = ["log", "-p", "--unified=0", *_LOG_STABLE, "--format=%x00NXM%H", "HEAD", "--"]
    out: dict[str, str] = {}
    sha = ""
    funcs: list[str] = []
    lines: list[bytes] = []
    keep = False
    path: bytes | None = None
    lines_signed: list[bytes] = []

    def finish() -> None:
        if sha:
            text = redact("\n".join(funcs) + "\n\x1e\n" + b"".join(lines).decode("utf-8", "replace"))
            head, _, body = text.partition("\n\x1e\n")
            plus = b"".join(line[1:] for line in lines_signed if line[:1] == b"+")
            minus = b"".join(line[1:] for line in lines_signed if line[:1] == b"-")
            defined = defined_names(plus, minus)
            out[sha] = oracle_change_words(head.splitlines(), body, defined=defined) if funcs or lines else ""

    for line in gitcmd.stream(args, repo):
        if line.startswith(b"\0NXM"):
            finish()
            sha, funcs, lines, keep, path = line[4:].strip().decode(), [], [], False, None
            lines_signed.clear()
        elif line.startswith(b"diff --git "):
            keep, path = False, None
        elif line.startswith(b"+++ "):
            path = _label_path(line[4:], b"b/")
        elif line.startswith(b"--- "):
            path = path if path is not None else _label_path(line[4:], b"a/")
        elif line.startswith(b"@@"):
            keep = path is not None and not _matches_any(path.decode("utf-8", "replace"), SKIP)
            context = line.split(b"@@", 2)[2].strip()
            if keep and context:
                funcs.append(context.decode("utf-8", "replace"))
        elif keep and line[:1] in (b"+", b"-"):
            lines.append(line[1:])
            lines_signed.append(line)
    finish()
    return out


def build_history(repo: Path) -> None:
    """Small files (git trims a long common tail before a -U0 diff only: none here), and the cases where a
    -U1 hunk differs from the -U0 ones: a change right under its `def` line (the -U1 header names the
    function above it), two changes one hunk apart with a `def` between them, a removed `def` line above a
    later change; renames, binaries, lock files, odd paths, a merge, an empty commit, a deleted file."""
    first = "def alpha():\n    return 1\n\n\ndef beta():\n    x = 2\n    return x\n\n\ndef gamma():\n    return 3\n"
    commit(repo, "init", {"src/app.py": first, "src/util.py": "def helper():\n    return 'help'\n" * 3})
    commit(
        repo,
        "touch beta and gamma",
        {
            "src/app.py": first.replace("    x = 2\n", "    x = compute_beta_value(2)\n").replace(
                "    return 3\n", "    return gammaResult(3)\n"
            )
        },
    )
    commit(
        repo,
        "runs one line apart",
        {
            "src/app.py": "def alpha():\n    return firstChange(1)\n\n\ndef beta():\n    x = secondChange(2)\n"
            "    return x\n\n\ndef gamma():\n    return gammaResult(3)\n"
        },
    )
    commit(
        repo,
        "drop a def above a change",
        {
            "src/app.py": "def alpha():\n    return firstChange(1)\n\n\n    x = secondChange(2)\n"
            "    return x + renamedTotal\n\n\ndef gamma():\n    return gammaResult(3)\n"
        },
    )
    git(repo, "mv", "src/util.py", "src/helpers.py")
    commit(
        repo, "rename with an edit", {"src/helpers.py": "def helper():\n    return 'help'\n" * 2 + "X = 1\n"}
    )
    commit(
        repo,
        "odd paths, binaries, lock files",
        {
            "docs/with space é.py": "def spaced_name():\n    pass\n",
            "yarn.lock": "lockOnlyWord 1\n",
            "logo.png": b"\x89PNG\r\n\x1a\n\x00\x00binaryquirk\x00",
            "tail.py": "no_newline_at_end = 1",
        },
    )
    git(repo, "checkout", "-q", "-b", "side")
    commit(repo, "on the side", {"side.py": "def side_branch_work():\n    pass\n"})
    git(repo, "checkout", "-q", "main")
    commit(repo, "on main", {"main.py": "def main_line_work():\n    pass\n"})
    git(repo, "merge", "-q", "--no-edit", "side")
    commit(repo, "nothing at all")
    (repo / "main.py").unlink()
    commit(
        repo,
        "token under a signature",
        {
            "tail.py": "no_newline_at_end = 2",
            "src/client.py": f"def connect(token='{TOKEN}'):\n    return openSocket(token)\n",
        },
    )
    commit(
        repo,
        "change under the signature",
        {"src/client.py": f"def connect(token='{TOKEN}'):\n    return openSocketAgain(token)\n"},
    )


def test_one_walk_gives_the_numstat_walks_records_and_the_u0_walks_words(repo: Path) -> None:
    build_history(repo)
    walked = list(iter_commits_with_words(repo, ["HEAD"], SKIP))
    assert [rec for rec, _ in walked] == list(iter_commits(repo, ["HEAD"]))
    expected = oracle_u0_words(repo)
    assert {rec.header.sha: words for rec, words in walked} == expected
    by_subject = {rec.header.subject: words.split() for rec, words in walked}
    # The -U1 header of "touch beta..." names alpha; the words name the function each change is in.
    assert {"beta", "gamma", "compute_beta_value", "gammaresult"} <= set(by_subject["touch beta and gamma"])
    assert "alpha" not in by_subject["touch beta and gamma"]
    assert not by_subject["nothing at all"] and not by_subject["Merge branch 'side'"]
    assert "lockonlyword" not in by_subject["odd paths, binaries, lock files"]
    assert "spaced_name" in by_subject["odd paths, binaries, lock files"]
    # A token in the function line above a change is redacted before it can become a word.
    assert "connect" in by_subject["change under the signature"]
    for words in by_subject.values():
        assert not any(TOKEN.lower() in word or "redacted" in word for word in words)


def test_a_secret_in_a_changed_line_never_reaches_the_store(repo: Path) -> None:
    commit(repo, "init", {"deploy.py": "def deploy():\n    pass\n"})
    sha = commit(repo, "ship it", {"deploy.py": f"def deploy():\n    push(token='{TOKEN}')\n"})
    sync.sync(repo, embed=False)
    words = stored_words(repo, sha)
    assert "deploy" in words.split() and "push" in words.split()
    assert TOKEN.lower() not in words.lower() and "x1y2z3" not in words and "redacted" not in words


pieces = st.sampled_from(
    ["parse", "HTTP", "Client", "get", "x", "id", "42", "_", "__", "user", "Name", "the", "for", "é", "«"]
)
identifier = st.lists(pieces, min_size=1, max_size=4).map("".join)
separator = st.sampled_from([" ", "\n", "(", ".", ", ", " = ", "«redacted:aws-key»", "-", "\t# "])


@settings(max_examples=300, deadline=None, database=None)
@given(
    st.lists(st.lists(identifier, max_size=4).map(" ".join), max_size=4),
    st.lists(st.tuples(identifier, separator), max_size=80),
    st.integers(min_value=1, max_value=40),
    st.lists(identifier, max_size=5),
)
def test_change_words_are_the_oracles(
    funcs: list[str], changed: list[tuple[str, str]], cap: int, defined: list[str]
) -> None:
    text = "".join(word + sep for word, sep in changed)
    assert change_words(funcs, text, cap) == oracle_change_words(funcs, text, cap)
    assert change_words(funcs, text, cap) == oracle_change_words(funcs, text, cap)  # remembered: same again
    # Names the change defines go first when the (redacted) text still holds them.
    assert change_words(funcs, text, cap, defined) == oracle_change_words(funcs, text, cap, defined)
