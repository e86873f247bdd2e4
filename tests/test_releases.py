"""A question that names a release of the project ("since upgrading to 1.1.0, ...") asks about the changes
around it: the version tags are read at sync (real git tags, lightweight and annotated), kept in the store,
and the changes made after that tag and before the next one come first. Real git repositories, the real
sync and `query --json`."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from nexusmem import project
from nexusmem.retrieve import history, query, rank
from nexusmem.retrieve.intent import migration, newest_release_asked, release_named, release_version
from nexusmem.sources.git import releases

from helpers import commit, git, init_repo, query_json, run_cli

DAY = 86_400
NOW = int(time.time())


@pytest.mark.parametrize(
    ("text", "version"),
    [
        ("since upgrading to 0.30.4, my POSTs hang", "0.30.4"),
        ("after upgrading to 7.0, a mistyped subcommand complains about the flag", "7.0"),
        ("since pipx 0.15.5.0, `pipx install .[dev]` no longer works", "0.15.5.0"),
        ("with pip-tools 7.5 I cd into services/api and it aborts", "7.5"),
        ("which regressions introduced by pluggy 1.1.0 were fixed afterwards?", "1.1.0"),
        ("after moving to Python 3.12 I get a DeprecationWarning", None),  # another program's version
        ("after upgrading fish to 3.3, every run prints an error", None),  # the shell's, not the project's
        ("after updating zoxide to 0.10.0, z stopped working", "0.10.0"),
        ("since moving to pydantic 2.10 the context is lost", None),  # a library's
        ("a float input of 0.1 becomes 0.1000000000000000055", None),  # a value, not a release
        ("a command argument like `release 1.10` reaches my handler as 1.1", None),  # in code quotes
        ("the server listens on 127.0.0.1:8000", None),
        # An upgrade between two releases: the trouble came with the second.
        ("after upgrading RQ from 0.3 to 0.4, old jobs blow up", "0.4"),
        ("since going from 1.2 to v1.3 it hangs", "1.3"),
        ("upgraded pytest from 7.0 to 8.0 and now it fails", None),  # pytest's upgrade
        ("moving from Python 3.11 to 3.12 broke it", None),  # Python's
        ("after sqlmodel 0.0.11 to 0.0.12 the session is lost", "0.0.12"),
    ],
)
def test_a_question_that_names_a_release(text: str, version: str | None) -> None:
    assert release_version(text) == version


def test_version_tags_are_read_lightweight_and_annotated(repo: Path) -> None:
    first = commit(repo, "first", {"a.txt": "1"}, when=NOW - 30 * DAY)
    second = commit(repo, "second", {"a.txt": "2"}, when=NOW - 20 * DAY)
    git(repo, "tag", "v1.0.0", first)
    git(repo, "tag", "-a", "-m", "release 1.1", "release-1.1", second)
    git(repo, "tag", "nightly", second)  # not a version
    found = {r.name: r for r in releases.read(repo)}
    assert set(found) == {"v1.0.0", "release-1.1"}
    assert found["release-1.1"].sha == second  # the annotated tag, peeled to its commit
    assert (found["v1.0.0"].version, found["release-1.1"].version) == ("1.0.0", "1.1")


def fix_score(repo: Path, question: str, sha: str) -> float:
    """The score ranking gives SHA's commit itself (the learned last step, off here, hands scores out by place)."""
    with project.load(repo).open_store(readonly=True) as store:
        scored, _ = query.ranked_candidates(
            store, question, vectors=False, settings=rank.Settings(rerank=False)
        )
    return next(value for node, value in scored if node.ref == sha)


def test_a_tag_line_that_does_not_parse_is_passed_over() -> None:
    sha = "a" * 40
    out = (
        b"garbage without fields\n"
        + f"v1.0\x00\x00{sha}\x00not-a-date\n".encode()  # no date
        + f"v1.1\x00\x00{'z' * 40}\x001700000000\n".encode()  # no commit
        + f"nightly\x00\x00{sha}\x001700000000\n".encode()  # no version
        + b"\xff\xfe\x00\x00\x00\n"  # not UTF-8
        + f"v1.2.0\x00\x00{sha}\x001700000000\n".encode()
    )
    assert [(r.name, r.version, r.ts) for r in releases.parse(out)] == [
        ("v1.2.0", "1.2.0", 1_700_000_000_000)
    ]


def test_since_a_release_the_changes_that_followed_it_come_first(repo: Path) -> None:
    """The fix of a regression a release shipped goes into the next release: asked "since upgrading to 1.1.0
    the export hangs", the change made between the 1.1.0 and 1.2.0 tags comes before older and newer
    changes whose words match the question better. A tag made after the first sync is read by the next."""
    for n in range(6):
        commit(
            repo,
            f"Export: hangs on a locked file when the export is large ({n})",
            {f"e{n}.py": f"N = {n}\n"},
            when=NOW - (400 - n) * DAY,
        )
    v11 = commit(repo, "Release 1.1.0", {"VERSION": "1.1.0\n"}, when=NOW - 300 * DAY)
    git(repo, "tag", "v1.1.0", v11)
    fix = commit(
        repo,
        "Release the export writer's lock before flushing",
        {"writer.py": "LOCK = None\n"},
        when=NOW - 290 * DAY,
    )
    v12 = commit(repo, "Release 1.2.0", {"VERSION": "1.2.0\n"}, when=NOW - 280 * DAY)
    commit(repo, "Export hangs less on large files", {"e9.py": "N = 9\n"}, when=NOW - 100 * DAY)
    run_cli("-C", str(repo), "sync", "--no-embed")
    question = "since upgrading to 1.1.0 the export hangs on large files"
    before = query_json(repo, question)
    assert not before["items"][0]["ref"].startswith(fix)  # no tag 1.2.0 yet: the window runs to now
    git(repo, "tag", "v1.2.0", v12)
    run_cli("-C", str(repo), "sync", "--no-embed")
    found = query_json(repo, question)
    assert found["items"][0]["ref"].startswith(fix), [it["title"] for it in found["items"]]
    assert any(n.startswith("release 1.1.0: changes made after its tag") for n in found["notes"]), found[
        "notes"
    ]
    # Named as an upgrade, the release the trouble came with is the second one.
    upgrade = query_json(repo, "after upgrading from 1.0.0 to 1.1.0 the export hangs on large files")
    assert upgrade["items"][0]["ref"].startswith(fix), [it["title"] for it in upgrade["items"]]
    # A question that names no release is ranked as before.
    other = query_json(repo, "the export hangs on large files")
    assert not other["items"][0]["ref"].startswith(fix)
    with project.load(repo).open_store() as store:
        assert store.release_window("1.1") == store.release_window("1.1.0")
        assert store.release_window("1.2.0") is not None and store.release_window("1.2.0")[1] is None
        assert store.release_window("9.9") is None
    # A how-do-I question that names a release is left to the docs: the release's changes keep their score.
    how = "since upgrading to 1.1.0, how do I keep the export from hanging on large files?"
    what = "since upgrading to 1.1.0 the export hangs on large files"
    lifted = {q: fix_score(repo, q, fix) for q in (how, what)}
    with project.load(repo).open_store() as store, store.transaction():
        store.replace_releases([])  # as if the repository had no tags
    plain = {q: fix_score(repo, q, fix) for q in (how, what)}
    assert lifted[how] == pytest.approx(plain[how])
    assert lifted[what] == pytest.approx(plain[what] * history.RELEASE_FACTOR)


@pytest.mark.parametrize(
    ("name", "version", "family"),
    [
        ("v1.2.0", "1.2.0", ""),
        ("1.2.0", "1.2.0", ""),
        ("lib-v2.0.0", "2.0.0", "lib-"),
        ("create-app@2.0.0", "2.0.0", "create-app@"),
        ("release-2.0.1", "2.0.1", "release-"),
        ("dev2.0", "2.0", "dev"),  # a "v" ending a word is part of the name
    ],
)
def test_the_family_of_a_tag(name: str, version: str, family: str) -> None:
    from nexusmem.store.releases import tag_family

    assert tag_family(name, version) == family


def test_a_release_of_the_project_is_not_mixed_with_its_packages_releases(repo: Path) -> None:
    """A workspace that tags its library "lib-v2.0.0" long before the program's own "v2.0.0": "since 2.0"
    is the program's window (up to its 2.1.0), not the library's; a version only a package has is read in
    that package's tags."""
    lib = commit(repo, "Library 2.0", {"lib.py": "V = 2\n"}, when=NOW - 700 * DAY)
    git(repo, "tag", "lib-v2.0.0", lib)
    lib21 = commit(repo, "Library 2.1", {"lib.py": "V = 21\n"}, when=NOW - 650 * DAY)
    git(repo, "tag", "lib-v2.1.0", lib21)
    lib3 = commit(repo, "Library 3.0", {"lib.py": "V = 3\n"}, when=NOW - 600 * DAY)
    git(repo, "tag", "lib-v3.0.0", lib3)
    app = commit(repo, "Program 2.0", {"app.py": "V = 2\n"}, when=NOW - 200 * DAY)
    git(repo, "tag", "v2.0.0", app)
    app21 = commit(repo, "Program 2.1", {"app.py": "V = 21\n"}, when=NOW - 100 * DAY)
    git(repo, "tag", "v2.1.0", app21)
    run_cli("-C", str(repo), "sync", "--no-embed")
    with project.load(repo).open_store() as store:
        start, end = store.release_window("2.0") or (0, 0)
        assert (start // 1000, (end or 0) // 1000) == (NOW - 200 * DAY, NOW - 100 * DAY)
        start, end = store.release_window("3.0") or (0, 0)
        assert (start // 1000, end) == (NOW - 600 * DAY, None)


GITHUB_TOKEN = "ghp_" + "R7cMyUcU3zr1ZtoLuCr64CxqlIOdNKhiFXi9"
PASSWORD = "Sph2wJq5ty4mYw7!"


def test_a_secret_in_a_tag_name_is_redacted_and_the_tag_still_names_its_release(repo: Path) -> None:
    """Version tags were stored as named: `git tag ghp_…-9.9.9` put the token in the releases table in full,
    as did `rel/token=…/8.8.8` its password. The name is redacted as a path is; it still ends in its version,
    so the release's window is found."""
    first = commit(repo, "first", {"a.txt": "1"}, when=NOW - 30 * DAY)
    second = commit(repo, "second", {"a.txt": "2"}, when=NOW - 20 * DAY)
    git(repo, "tag", f"{GITHUB_TOKEN}-9.9.9", first)
    git(repo, "tag", f"rel/token={PASSWORD}/8.8.8", second)
    run_cli("-C", str(repo), "sync", "--no-embed")
    with project.load(repo).open_store() as store:
        assert sorted(store.release_names()) == [
            "rel/token=«redacted:token»/8.8.8",
            "«redacted:github-token»-9.9.9",
        ]
        assert store.release_window("9.9.9") == (NOW * 1000 - 30 * DAY * 1000, None)
    stored = b"".join(p.read_bytes() for p in (repo / ".nexusmem").rglob("memory.db*"))
    assert GITHUB_TOKEN.encode() not in stored and PASSWORD.encode() not in stored


@pytest.mark.parametrize(
    ("text", "version"),
    [
        ("what changed in 7.4.1", "7.4.1"),
        ("7.4.1", "7.4.1"),
        ("7.4.1 release notes", "7.4.1"),
        ("v2.0", "2.0"),
        ("what's new in version 1.7.15?", "1.7.15"),
        ("release v7.4.1", "7.4.1"),
        ("what changed in guzzle 7.4.1?", "7.4.1"),  # the project's own name
        ("what changed in Python 3.12?", None),  # another program's
        ("what changed in python 3.12?", None),
        ("since upgrading to 7.4.1, POSTs hang", None),  # a question about what followed (release_version)
        ("does retry work in 7.4.1?", None),  # more than the release
        ("what changed from 7.4.0 to 7.4.1", None),
        ("the server listens on 127.0.0.1:8000", None),
        # A pre- or post-release named is that release, not the final one.
        ("what's new in 2.0.0-alpha.1", "2.0.0-alpha.1"),
        ("what changed in 6.0.0-beta.1?", "6.0.0-beta.1"),
        ("what's new in 2.9.0.post0", "2.9.0.post0"),
        ("1.0.0rc1 release notes", "1.0.0rc1"),
        # Which of its changes matter most is still what it holds.
        ("what are the major changes in coverage 5.0?", "5.0"),
        ("what are the highlights of 5.0?", "5.0"),
    ],
)
def test_a_question_about_what_a_release_holds(text: str, version: str | None) -> None:
    assert release_named(text) == version


@pytest.mark.parametrize(
    ("text", "version"),
    [
        ("What changed in Guzzle 7.4.1?", "7.4.1"),  # the project's own name, capitalised
        ("What's new in GUZZLE 7.4.1", "7.4.1"),
        ("What changed in Symfony 6.0?", None),  # another program's
        ("what changed in Python 3.12?", None),
        ("What changed in PHP 8.1?", None),
        ("What changed in Node 18.0?", None),
    ],
)
def test_a_release_named_with_the_projects_capitalised_name(text: str, version: str | None) -> None:
    assert release_named(text, "guzzle") == version


def test_the_projects_name_capitalised_before_a_release_still_asks_what_it_holds(tmp_path: Path) -> None:
    """ "What changed in Moshi 1.1.0?" in the moshi repository: the project's name as people write it
    (capitalised) is no other program's; the release's changelog entries come first, as for "moshi 1.1.0"."""
    repo = init_repo(tmp_path / "moshi")
    changelog = "# Changelog\n\n## 1.2.0 - 2024-03-01\n\n- Changed the default timeout to 30 s\n\n"
    changelog += "## 1.1.0 - 2024-02-01\n\n- Pool: drop half-closed sockets\n- Export: stream large files\n"
    for n in range(4):
        commit(
            repo, f"Changed how things changed ({n})", {f"c{n}.py": f"N = {n}\n"}, when=NOW - (500 - n) * DAY
        )
    git(repo, "tag", "v1.1.0", commit(repo, "Prepare", {"CHANGELOG.md": changelog}, when=NOW - 300 * DAY))
    run_cli("-C", str(repo), "sync", "--no-embed")
    for question in ("What changed in Moshi 1.1.0?", "what changed in moshi 1.1.0"):
        found = query_json(repo, question)
        # One answer: not also "release 1.1.0: changes made after its tag ... come first".
        assert not any("changes made after its tag" in note for note in found["notes"]), found["notes"]
        titles = [item["title"] for item in found["items"]]
        assert [title for title in titles[:3] if title.startswith("CHANGELOG")] == [
            "CHANGELOG.md — 1.1.0 - 2024-02-01: Pool: drop half-closed sockets",
            "CHANGELOG.md — 1.1.0 - 2024-02-01: Export: stream large files",
        ], titles
        assert "first: what release 1.1.0 holds (its changelog, its commit)" in found["notes"], question


def test_what_changed_in_a_release_answers_with_its_changelog_and_release_commit(repo: Path) -> None:
    """ "What changed in 1.1.0?" (or "1.1.0", "v1.1.0 release notes"): the version is no searchable word (the
    index holds 1, 1, 0), and "changed" matched every change that says it; the changelog entries under
    1.1.0 and the commit its tag names come first, and the answer is not flagged weak."""
    changelog = "# Changelog\n\n## 1.2.0 - 2024-03-01\n\n- Changed the default timeout to 30 s\n\n"
    changelog += "## 1.1.0 - 2024-02-01\n\n- Pool: drop half-closed sockets\n- Export: stream large files\n\n"
    changelog += "## 1.0.0 - 2024-01-01\n\n- First release\n"
    for n in range(4):
        commit(
            repo, f"Changed how things changed ({n})", {f"c{n}.py": f"N = {n}\n"}, when=NOW - (500 - n) * DAY
        )
    commit(repo, "Pool: drop half-closed sockets", {"pool.py": "X = 1\n"}, when=NOW - 320 * DAY)
    v11 = commit(repo, "Prepare the next one", {"CHANGELOG.md": changelog}, when=NOW - 300 * DAY)
    git(repo, "tag", "v1.1.0", v11)
    v12 = commit(repo, "Release 1.2.0", {"VERSION": "1.2.0\n"}, when=NOW - 280 * DAY)
    git(repo, "tag", "v1.2.0", v12)
    run_cli("-C", str(repo), "sync", "--no-embed")
    for question in ("what changed in 1.1.0", "1.1.0", "v1.1.0 release notes"):
        found = query_json(repo, question)
        titles = [item["title"] for item in found["items"]]
        first = found["items"][:3]  # the two entries and the commit the tag names (which wrote them)
        assert sorted(item["title"] for item in first if item["kind"] == "doc_section") == [
            "CHANGELOG.md — 1.1.0 - 2024-02-01: Export: stream large files",
            "CHANGELOG.md — 1.1.0 - 2024-02-01: Pool: drop half-closed sockets",
        ], titles
        assert [item["ref"] for item in first if item["kind"] == "git_commit"] == [v11], titles
        assert not found["weak"], question
    # The same words about a release memory does not know change nothing.
    assert not query_json(repo, "what changed in 4.4.4")["items"][0]["title"].startswith("CHANGELOG")


def test_what_a_release_holds_lists_the_projects_page_about_it_first(repo: Path) -> None:
    """ "What are the major changes in coverage 5.0?" was read as a release named after "coverage" (what came
    after its tag: "Prep for 5.0.1" first), and the project's own page "Major changes in 5.0" came 14th. It
    asks what 5.0 holds, as "what's new in 5.0?" does; and the page whose heading names 5.0 and says what is
    new in it comes first, then the changelog's entries. A page that names 5.0 otherwise is not listed."""
    changelog = "# Changelog\n\n## 5.0.1 - 2020-01-01\n\n- Prep for 5.0.1: fix the report\n\n"
    changelog += (
        "## 5.0 - 2019-12-14\n\n- The data file is SQLite now\n\n## 4.5 - 2019-01-01\n\n- Old things\n"
    )
    for n in range(4):
        commit(
            repo, f"Changed how things changed ({n})", {f"c{n}.py": f"N = {n}\n"}, when=NOW - (500 - n) * DAY
        )
    v4 = commit(repo, "Release 4.5", {"VERSION": "4.5\n"}, when=NOW - 400 * DAY)
    git(repo, "tag", "coverage-4.5", v4)
    pages = {
        "doc/whatsnew5x.md": "# Major changes in 5.0\n\nThe data file is SQLite; contexts record who ran"
        " each line.\n\n## Bugs fixed\n\nMany.\n",
        "doc/install.md": "# Installing 5.0\n\nUse pip to get 5.0.\n",
        "CHANGES.md": changelog,
    }
    v5 = commit(repo, "Prep for 5.0", pages, when=NOW - 300 * DAY)
    git(repo, "tag", "coverage-5.0", v5)
    v501 = commit(repo, "Prep for 5.0.1", {"VERSION": "5.0.1\n"}, when=NOW - 200 * DAY)
    git(repo, "tag", "coverage-5.0.1", v501)
    run_cli("-C", str(repo), "sync", "--no-embed")
    for question in ("what are the major changes in coverage 5.0?", "what's new in 5.0?"):
        found = query_json(repo, question)
        titles = [item["title"] for item in found["items"]]
        assert titles[0] == "doc/whatsnew5x.md — Major changes in 5.0", (question, titles)
        assert titles[1] == "CHANGES.md — 5.0 - 2019-12-14: The data file is SQLite now", (question, titles)
        assert "doc/install.md — Installing 5.0" not in titles[:3], (question, titles)
        assert not any("changes made after its tag" in note for note in found["notes"]), found["notes"]


def test_what_a_release_holds_shows_all_its_entries_in_file_order(repo: Path) -> None:
    """ "What's new in 2.0.0?" about a release with eight entries: all eight are shown, in the order the
    changelog lists them, before anything else; the sibling cap on one heading's entries (two) is for an
    answer the words found, not for a release's contents asked for as a whole."""
    news = [
        "Added `Duration#removeZeros` method",
        "Added a `rounding` option to toRelative",
        "Allow escaping single quotes in format strings",
        "Accept a lowercase t as the ISO separator",
        "Reject non-finite numbers in durations",
        "Improve the documentation for Interval",
        "Added a dark theme for the documentation site",
        "Fixed the week number of 31 December",
    ]
    changelog = "# Changelog\n\n## 2.0.0 (2024-03-01)\n\n" + "".join(f"- {line}\n" for line in news)
    changelog += "\n## 1.0.0 (2024-01-01)\n\n- First release\n- Added the parser\n- Added the printer\n"
    for n in range(6):
        commit(repo, f"new printer, what's new ({n})", {f"c{n}.js": f"N = {n}\n"}, when=NOW - (500 - n) * DAY)
    v1 = commit(repo, "Release version 1.0.0", {"VERSION": "1.0.0\n"}, when=NOW - 300 * DAY)
    git(repo, "tag", "v1.0.0", v1)
    v2 = commit(repo, "Release version 2.0.0", {"CHANGELOG.md": changelog}, when=NOW - 200 * DAY)
    git(repo, "tag", "v2.0.0", v2)
    run_cli("-C", str(repo), "sync", "--no-embed")
    found = query_json(repo, "what's new in 2.0.0")
    titles = [item["title"] for item in found["items"]]
    assert titles[: len(news)] == [f"CHANGELOG.md — 2.0.0 (2024-03-01): {line}" for line in news], titles
    assert found["items"][len(news)]["ref"] == v2, titles
    assert not found["weak"]


def test_a_release_is_not_mixed_with_its_pre_and_post_releases(repo: Path) -> None:
    """ "What changed in 2.0.0?" shows 2.0.0's entries, not those of 2.0.0-beta.1 or 2.0.0.post0 (each its own
    release, with its own heading); "what's new in 2.0.0-beta.1?" names the pre-release, and is answered by its
    entries."""
    changelog = "# Changelog\n\n## 2.0.0.post0 (2024-03-02)\n\n- Pinned the build tool\n\n"
    changelog += "## 2.0.0 (2024-03-01)\n\n- Streaming uploads\n- Faster pool\n\n"
    changelog += (
        "## 2.0.0-beta.1 (2024-02-01)\n\n- Removed the collection class\n- Requires a newer runtime\n"
    )
    changelog += "- Dropped the batch results\n\n## 1.0.0 (2024-01-01)\n\n- First release\n"
    v1 = commit(repo, "Release 1.0.0", {"VERSION": "1.0.0\n"}, when=NOW - 300 * DAY)
    git(repo, "tag", "v1.0.0", v1)
    beta = commit(repo, "Release 2.0.0-beta.1", {"VERSION": "2.0.0-beta.1\n"}, when=NOW - 250 * DAY)
    git(repo, "tag", "v2.0.0-beta.1", beta)
    v2 = commit(repo, "Release 2.0.0", {"CHANGELOG.md": changelog}, when=NOW - 200 * DAY)
    git(repo, "tag", "v2.0.0", v2)
    run_cli("-C", str(repo), "sync", "--no-embed")

    # (The commit that wrote the entries follows the first, as the commit it describes.)
    found = query_json(repo, "what changed in 2.0.0")
    titles = [item["title"] for item in found["items"]]
    assert [title for title in titles if title.startswith("CHANGELOG")] == [
        "CHANGELOG.md — 2.0.0 (2024-03-01): Streaming uploads",
        "CHANGELOG.md — 2.0.0 (2024-03-01): Faster pool",
    ], titles
    assert "Release 2.0.0" in titles[:3], titles
    found = query_json(repo, "what's new in 2.0.0-beta.1?")
    titles = [item["title"] for item in found["items"]]
    assert [title for title in titles[:5] if title.startswith("CHANGELOG")] == [
        "CHANGELOG.md — 2.0.0-beta.1 (2024-02-01): Removed the collection class",
        "CHANGELOG.md — 2.0.0-beta.1 (2024-02-01): Requires a newer runtime",
        "CHANGELOG.md — 2.0.0-beta.1 (2024-02-01): Dropped the batch results",
    ], titles
    assert "Release 2.0.0-beta.1" in titles[:5], titles
    assert "first: what release 2.0.0-beta.1 holds (its changelog, its commit)" in found["notes"]


@pytest.mark.parametrize(
    ("text", "asked"),
    [
        ("what changed in the last release", True),
        ("what's new in the latest version?", True),
        ("latest release notes", True),
        ("what did the most recent release bring", True),
        ("what changed since the last release", False),  # what came after it
        ("what was the last commit", False),
        ("does retry work in the latest version?", False),  # more than the release
        ("what's new", False),
    ],
)
def test_a_question_about_the_newest_release(text: str, asked: bool) -> None:
    assert newest_release_asked(text) is asked


def test_the_last_release_is_the_highest_version_tag_answered_as_if_named(repo: Path) -> None:
    """ "What changed in the last release?" names no version: the highest version a tag names (1.10.0, above
    1.9.0 by number, and above a 1.8.1 fix tagged later) is taken, said in a note, and its entries and
    release commit come first, as for "what changed in 1.10.0"."""
    changelog = (
        "# Changelog\n\n## 1.10.0 (2024-03-01)\n\n- Streaming uploads\n- Faster pool\n- New timeout\n\n"
    )
    changelog += "## 1.9.0 (2024-02-01)\n\n- Changed the retry delay\n- Release tooling\n\n"
    changelog += "## 1.8.0 (2024-01-01)\n\n- First release\n"
    for n in range(4):
        commit(repo, f"fix the release script ({n})", {f"r{n}.sh": f"N={n}\n"}, when=NOW - (500 - n) * DAY)
    for version, days in (("1.8.0", 300), ("1.9.0", 250)):
        git(
            repo,
            "tag",
            f"v{version}",
            commit(repo, f"Release {version}", {"V": version}, when=NOW - days * DAY),
        )
    v110 = commit(repo, "Release 1.10.0", {"CHANGELOG.md": changelog}, when=NOW - 200 * DAY)
    git(repo, "tag", "v1.10.0", v110)
    git(repo, "checkout", "-q", "-b", "old", "v1.8.0")
    git(repo, "tag", "v1.8.1", commit(repo, "Release 1.8.1", {"V": "1.8.1"}, when=NOW - 100 * DAY))
    git(repo, "checkout", "-q", "-")
    run_cli("-C", str(repo), "sync", "--no-embed")
    for question in ("what changed in the last release", "what's new in the latest version?"):
        found = query_json(repo, question)
        titles = [item["title"] for item in found["items"]]
        assert [title for title in titles[:4] if title.startswith("CHANGELOG")] == [
            "CHANGELOG.md — 1.10.0 (2024-03-01): Streaming uploads",
            "CHANGELOG.md — 1.10.0 (2024-03-01): Faster pool",
            "CHANGELOG.md — 1.10.0 (2024-03-01): New timeout",
        ], titles
        assert "Release 1.10.0" in titles[:4], titles
        assert "the newest release: 1.10.0 (the highest version tag)" in found["notes"], found["notes"]
        assert not found["weak"]


@pytest.mark.parametrize(
    ("text", "versions"),
    [
        ("how do I migrate from v6 to v7", ("6", "7")),
        ("how do I upgrade from guzzle 6 to guzzle 7?", ("6", "7")),
        ("6.0 to 7.0", ("6.0", "7.0")),
        ("upgrading from 5.0 to 6.0", ("5.0", "6.0")),
        ("how do I upgrade to Moshi 2.x?", (None, "2")),
        ("migrating from 1.x", ("1", None)),
        ("after upgrading RQ from 0.3 to 0.4, old jobs blow up", None),  # what the upgrade broke
        ("since going from 1.2 to v1.3 it hangs", None),
        # "when" before an -ing form plans the move; after a past tense it reports what the move did
        ("what will I trip over when moving an app from rest-client 1.x to 2.0?", ("1", "2.0")),
        ("when I moved from 1.x to 2.0 the uploads stopped", None),
        ("what changed from 7.4.0 to 7.4.1", None),
        ("how do I run the database migrations", None),
    ],
)
def test_a_question_about_migrating_between_releases(
    text: str, versions: tuple[str | None, str | None] | None
) -> None:
    assert migration(text) == versions


def test_a_migration_question_is_answered_by_the_upgrade_guide_section_for_those_releases(repo: Path) -> None:
    """ "How do I migrate from v6 to v7?" (or the bare heading "6.0 to 7.0"): the versions are no searchable
    words, and "migrate" or "upgrade" match every commit that says it; the section of UPGRADING.md headed
    "6.0 to 7.0" comes first. "Upgrading from 5.0 to 6.0" gets "5.0 to 6.0", not the changes made after
    6.0's tag (a release window is for what an upgrade broke)."""
    guide = (
        "Upgrade Guide\n=============\n\n6.0 to 7.0\n----------\n\nThe minimum PHP version is now 7.2.\n\n"
    )
    guide += "5.0 to 6.0\n----------\n\nThe event system was replaced by handlers and middleware.\n"
    for n in range(6):
        commit(
            repo,
            f"migrate the upgrade script to v{n}",
            {f"m{n}.php": f"<?php // {n}\n"},
            when=NOW - (500 - n) * DAY,
        )
    for version, days in (("5.0.0", 400), ("6.0.0", 300)):
        git(repo, "tag", version, commit(repo, f"Release {version}", {"V": version}, when=NOW - days * DAY))
    commit(repo, "How to upgrade from 6 to 7", {"UPGRADING.md": guide}, when=NOW - 250 * DAY)
    git(repo, "tag", "7.0.0", commit(repo, "Release 7.0.0", {"V": "7.0.0"}, when=NOW - 200 * DAY))
    run_cli("-C", str(repo), "sync", "--no-embed")
    for question in (
        "how do I migrate from v6 to v7",
        "how do I upgrade from guzzle 6 to guzzle 7",
        "6.0 to 7.0",
    ):
        found = query_json(repo, question)
        assert found["items"][0]["ref"] == "UPGRADING.md#6.0 to 7.0", [item["ref"] for item in found["items"]]
        assert "first: the upgrade guide's UPGRADING.md#6.0 to 7.0" in found["notes"]
    found = query_json(repo, "upgrading from 5.0 to 6.0")
    assert found["items"][0]["ref"] == "UPGRADING.md#5.0 to 6.0", found["items"]
    assert not any(note.startswith("release 6.0") for note in found["notes"]), found["notes"]


def test_a_migration_answer_holds_the_guide_sections_subsections_in_document_order(repo: Path) -> None:
    """ "How do I migrate from v6 to v7?" about a guide whose "6.0 to 7.0" section has subsections (their
    headings name no release and no upgrade word): the section and all its subsections come first, in the
    order the file holds them, and not the next release's section."""
    guide = "# Upgrade Guide\n\n## 6.0 to 7.0\n\nThe minimum PHP version is now 7.2.\n\n"
    guide += "### Native functions calls\n\nAll internal native function calls are now namespaced.\n\n"
    guide += "### Other breaking changes\n\nThe `Client::getConfig()` method is deprecated.\n\n"
    guide += "#### Removed options\n\nThe `save_to` option is gone: use `sink`.\n\n"
    guide += "## 5.0 to 6.0\n\nThe event system was replaced by handlers and middleware.\n"
    for n in range(6):
        commit(repo, f"migrate helper v{n}", {f"m{n}.php": f"<?php // {n}\n"}, when=NOW - (500 - n) * DAY)
    commit(repo, "Upgrade guide", {"UPGRADING.md": guide}, when=NOW - 250 * DAY)
    run_cli("-C", str(repo), "sync", "--no-embed")
    found = query_json(repo, "how do I migrate from v6 to v7")
    refs = [item["ref"] for item in found["items"]]
    assert refs[:4] == [
        "UPGRADING.md#6.0 to 7.0",
        "UPGRADING.md#Native functions calls",
        "UPGRADING.md#Other breaking changes",
        "UPGRADING.md#Removed options",
    ], refs
    assert "UPGRADING.md#5.0 to 6.0" not in refs[:4], refs


def test_an_address_is_no_release_unless_one_is_so_named(repo: Path) -> None:
    """ "what is 127.0.0.1", "127.0.0.1": four numbers that no tag and no changelog heading name are an
    address, not a release whose contents are asked for (a commit's title holding it is no release)."""
    for n in range(4):
        commit(repo, f"Server: bind the test server to 127.0.0.1 ({n})", {f"s{n}.py": f"N = {n}\n"})
    commit(repo, "Changelog", {"CHANGELOG.md": "# Changelog\n\n## 1.2.3.4\n\n- Bound to the loopback\n"})
    run_cli("-C", str(repo), "sync", "--no-embed")
    for question in ("what is 127.0.0.1", "127.0.0.1"):
        found = query_json(repo, question)
        assert not any("release" in note for note in found["notes"]), (question, found["notes"])
    # A four-part release a changelog heading names is still one.
    found = query_json(repo, "what changed in 1.2.3.4")
    assert found["items"][0]["title"] == "CHANGELOG.md — 1.2.3.4: Bound to the loopback", found["items"][0]


def test_a_releases_entries_come_before_the_commits_they_describe(repo: Path) -> None:
    """ "What changed in 1.1.0?" about a release whose eight entries each name a commit ("(#3)"): its entries
    come first, all of them, then its release commit, then the commits the entries describe with what the
    budget leaves; each commit used to follow its entry, and on a busy release they crowded half the
    release's own entries out of the budget (and mostly repeat them)."""
    news = [
        f"Worker {n}: retry the upload with jittered backoff and keep the partial parts" for n in range(8)
    ]
    for n, line in enumerate(news):
        commit(repo, f"{line} (#{n + 1})", {f"w{n}.py": f"N = {n}\n"}, when=NOW - (300 - n) * DAY)
    changelog = "# Changelog\n\n## 1.1.0\n\n" + "".join(
        f"- {line} (#{n + 1})\n" for n, line in enumerate(news)
    )
    changelog += "\n## 1.0.0\n\n- First release\n"
    release = commit(repo, "Release 1.1.0", {"CHANGELOG.md": changelog}, when=NOW - 200 * DAY)
    git(repo, "tag", "v1.1.0", release)
    run_cli("-C", str(repo), "sync", "--no-embed")
    for budget in ("2000", "500"):
        found = query_json(repo, "what changed in 1.1.0", "--budget", budget)
        titles = [item["title"] for item in found["items"]]
        entries = [n for n, title in enumerate(titles) if title.startswith("CHANGELOG.md — 1.1.0")]
        commits = [n for n, item in enumerate(found["items"]) if item["kind"] == "git_commit"]
        assert entries == list(range(len(entries))) and entries, (budget, titles)
        assert not commits or commits[0] > entries[-1], (budget, titles)
    assert len(entries) < len(news)  # 500 tokens hold some of them
    found = query_json(repo, "what changed in 1.1.0")
    titles = [item["title"] for item in found["items"]]
    assert titles[: len(news)] == [f"CHANGELOG.md — 1.1.0: {line} (#{n + 1})" for n, line in enumerate(news)]
    assert titles[len(news)] == "Release 1.1.0", titles
    assert set(titles[len(news) + 1 : 2 * len(news) + 1]) == {
        f"{line} (#{n + 1})" for n, line in enumerate(news)
    }


def test_a_pre_release_spelt_as_its_tag_finds_the_heading_spelt_otherwise(repo: Path) -> None:
    """ "What changed in 3.0.0-rc.1" (the tag's spelling) about a changelog headed "3.0.0-rc1": the same
    pre-release, answered by its entries (and "3.0.0-RC-1", "beta.2" for "beta2" likewise); the final 3.0.0
    still leaves them out, and a commit saying "3.0.0 Beta2" is not the final's."""
    changelog = "# Changelog\n\n## 3.0.0 - 2024-03-01\n\n- Streaming uploads\n\n"
    changelog += "## 3.0.0-rc1 - 2024-02-01\n\n- Removed the collection class\n- Requires a newer runtime\n\n"
    changelog += "## 3.0.0-beta2 - 2024-01-15\n\n- Dropped the batch results\n"
    commit(repo, "Added changelog for 3.0.0 Beta2", {"NOTES": "b2\n"}, when=NOW - 320 * DAY)
    rc = commit(repo, "Release 3.0.0-rc.1", {"CHANGELOG.md": changelog}, when=NOW - 300 * DAY)
    git(repo, "tag", "3.0.0-rc.1", rc)
    git(repo, "tag", "3.0.0", commit(repo, "Release 3.0.0", {"V": "3.0.0\n"}, when=NOW - 200 * DAY))
    run_cli("-C", str(repo), "sync", "--no-embed")
    rc_entries = [
        "CHANGELOG.md — 3.0.0-rc1 - 2024-02-01: Removed the collection class",
        "CHANGELOG.md — 3.0.0-rc1 - 2024-02-01: Requires a newer runtime",
    ]
    for question in ("what changed in 3.0.0-rc.1", "what changed in 3.0.0-RC-1", "3.0.0-rc1 release notes"):
        titles = [item["title"] for item in query_json(repo, question)["items"]]
        assert titles[:2] == rc_entries, (question, titles)
    titles = [item["title"] for item in query_json(repo, "what changed in 3.0.0-beta.2")["items"]]
    assert titles[0] == "CHANGELOG.md — 3.0.0-beta2 - 2024-01-15: Dropped the batch results", titles
    titles = [item["title"] for item in query_json(repo, "what changed in 3.0.0")["items"]]
    assert titles[0] == "CHANGELOG.md — 3.0.0 - 2024-03-01: Streaming uploads", titles
    first = titles[: titles.index("Release 3.0.0") + 1]
    assert not set(rc_entries) & set(first) and "Added changelog for 3.0.0 Beta2" not in first, titles


def test_a_backport_tag_not_in_heads_history_is_no_window_closed_before_it_and_says_so(repo: Path) -> None:
    """A maintenance line tagged on a branch HEAD does not reach (guzzle's 6.5.8, two years after 7.0.0):
    "since upgrading to 1.0.2" read its window as closed by 2.0.0, tagged before it ("after its tag
    (2022-06-20) and before the next (2020-06-27)"), and "what changed in 1.0.1" answered with old commits,
    not flagged weak, with no note. The next release is the next one tagged after it on its line (1.0.2
    after 1.0.1; none after 1.0.2), and a tag HEAD does not reach is said to be so."""
    v1 = commit(repo, "Release 1.0.0", {"VERSION": "1.0.0\n"}, when=NOW - 500 * DAY)
    git(repo, "tag", "1.0.0", v1)
    for n in range(4):
        commit(
            repo,
            f"Redirects: follow changed hosts ({n})",
            {f"r{n}.py": f"N = {n}\n"},
            when=NOW - (480 - n) * DAY,
        )
    git(repo, "tag", "2.0.0", commit(repo, "Release 2.0.0", {"VERSION": "2.0.0\n"}, when=NOW - 400 * DAY))
    commit(repo, "Redirects: keep the method on 303", {"redirect.py": "M = 1\n"}, when=NOW - 100 * DAY)
    git(repo, "checkout", "-q", "-b", "1.0-maint", v1)
    fix = commit(repo, "Backport: redirects keep auth headers", {"auth.py": "A = 1\n"}, when=NOW - 300 * DAY)
    git(repo, "tag", "1.0.1", fix)
    v102 = commit(repo, "Backport: redirect loop guard", {"loop.py": "L = 1\n"}, when=NOW - 200 * DAY)
    git(repo, "tag", "1.0.2", v102)
    git(repo, "checkout", "-q", "main")
    run_cli("-C", str(repo), "sync", "--no-embed")
    with project.load(repo).open_store() as store:
        start, end = store.release_window("1.0.1") or (0, 0)
        assert (start // 1000, (end or 0) // 1000) == (NOW - 300 * DAY, NOW - 200 * DAY)
        assert store.release_window("1.0.2") == ((NOW - 200 * DAY) * 1000, None)  # not closed by 2.0.0
        start, end = store.release_window("1.0.0") or (0, 0)  # in HEAD's history: 1.0.1 followed it
        assert (start // 1000, (end or 0) // 1000) == (NOW - 500 * DAY, NOW - 300 * DAY)
    found = query_json(repo, "since upgrading to 1.0.2 redirects break")
    note = next(n for n in found["notes"] if n.startswith("release 1.0.2"))
    assert "before the next" not in note, note
    assert f"its tag is commit {v102[:10]}, which is not in HEAD's history" in note, note
    shipped = query_json(repo, "what changed in 1.0.1")
    assert f"release 1.0.1: its tag is commit {fix[:10]}, which is not in HEAD's history" in " ".join(
        shipped["notes"]
    ), shipped["notes"]
    assert shipped["weak"]
    # A release HEAD reaches says nothing of the kind.
    assert not any(
        "HEAD's history" in n for n in query_json(repo, "since upgrading to 1.0.0 redirects break")["notes"]
    )


@pytest.mark.parametrize(
    ("text", "span"),
    [
        ("what changed between 7.5.0 and 7.5.1?", ("7.5.0", "7.5.1")),
        ("changes from 7.5.0 to 7.5.1", ("7.5.0", "7.5.1")),
        ("7.5.0..7.5.1", ("7.5.0", "7.5.1")),
        ("what's new since guzzle 7.5.0", ("7.5.0", None)),
        ("since 7.5.0", ("7.5.0", None)),
        ("since upgrading to 7.5.0, POSTs hang", None),  # what broke (release_version)
        ("since 7.5.0 redirects break", None),
        ("what changed since Python 3.12", None),
        ("what changed in 7.5.1", None),  # what it holds (release_named)
    ],
)
def test_a_question_about_the_changes_between_releases(
    text: str, span: tuple[str, str | None] | None
) -> None:
    from nexusmem.retrieve.intent import release_span

    assert release_span(text, "guzzle") == span
    if span is not None:
        assert release_named(text, "guzzle") is None  # "since 7.5.0" is not what 7.5.0 holds


def test_what_a_release_holds_lists_the_commits_between_its_tag_and_the_previous_one(repo: Path) -> None:
    """ "What changed in 1.1.0?" gave its changelog entries and its release commit, then old commits that say
    "changed": none of the commits made between the 1.0.0 and 1.1.0 tags (guzzle's `git log 7.5.0..7.5.1`:
    c6f3a35 "Fix `NO_PROXY` settings (#3117)" was in no answer, even at --budget 8000), and "what changed
    between 1.0.0 and 1.1.0" had no release handling at all. They are listed after the entries, read from
    the commit parents memory holds (a branch merged in, whose commits are older than the tag before, too),
    newest first, the merge and the bookkeeping (a changelog-only commit, the release commit) after the
    changes, with a note naming the range; a lower version tagged later (1.0.1) is not the previous release."""
    changelog = "# Changelog\n\n## 1.1.0 - 2024-03-01\n\n- Pool: drop half-closed sockets\n\n"
    changelog += "## 1.0.0 - 2024-01-01\n\n- First release\n"
    for n in range(4):
        commit(
            repo, f"Changed how things changed ({n})", {f"c{n}.py": f"N = {n}\n"}, when=NOW - (500 - n) * DAY
        )
    git(repo, "checkout", "-q", "-b", "feature")
    side = commit(repo, "Export: stream large files", {"export.py": "S = 1\n"}, when=NOW - 450 * DAY)
    git(repo, "checkout", "-q", "main")
    v10 = commit(repo, "Release 1.0.0", {"VERSION": "1.0.0\n"}, when=NOW - 400 * DAY)
    git(repo, "tag", "v1.0.0", v10)
    pool = commit(repo, "Pool: drop half-closed sockets (#12)", {"pool.py": "X = 1\n"}, when=NOW - 390 * DAY)
    docs = commit(
        repo, "Docs: explain the pool", {"docs/pool.md": "# Pool\n\nSockets.\n"}, when=NOW - 380 * DAY
    )
    git(repo, "-c", "user.name=t", "merge", "-q", "--no-ff", "-m", "Merge branch 'feature'", "feature")
    merge = git(repo, "rev-parse", "HEAD").strip()
    notes = commit(repo, "Update changelog", {"CHANGELOG.md": changelog}, when=NOW - 310 * DAY)
    v11 = commit(repo, "Release 1.1.0", {"VERSION": "1.1.0\n"}, when=NOW - 300 * DAY)
    git(repo, "tag", "v1.1.0", v11)
    git(repo, "tag", "v1.0.1", commit(repo, "Later", {"later.py": "L = 1\n"}, when=NOW - 200 * DAY))
    run_cli("-C", str(repo), "sync", "--no-embed")
    for question in ("what changed in 1.1.0", "what's new in v1.1.0", "what changed between 1.0.0 and 1.1.0"):
        found = query_json(repo, question)
        refs = [item["ref"] for item in found["items"]]
        titles = [item["title"] for item in found["items"]]
        assert titles[0] == "CHANGELOG.md — 1.1.0 - 2024-03-01: Pool: drop half-closed sockets", titles
        assert refs[1:4] == [docs, pool, side], titles  # the changes, newest first
        assert refs[4] == v11 and set(refs[5:7]) == {merge, notes}, titles  # then the bookkeeping
        assert "release 1.1.0: the 6 commits after 1.0.0 (git log v1.0.0..v1.1.0)" in found["notes"], found
        assert not found["weak"]
    # "Since 1.0.0": every commit after its tag up to HEAD, the releases made since named.
    since = query_json(repo, "what changed since 1.0.0")
    assert (
        "since 1.0.0: the 7 commits after its tag up to HEAD (git log v1.0.0..HEAD); released since: 1.0.1, 1.1.0"
        in since["notes"]
    ), since["notes"]
    with project.load(repo).open_store() as store:
        found_range = store.release_range("1.1.0")
        assert found_range is not None and found_range.base == "1.0.0"
        assert set(found_range.shas) == {v11, notes, merge, docs, pool, side}


def test_a_changelog_only_commit_is_not_the_commit_an_entry_naming_its_prs_describes(repo: Path) -> None:
    """guzzle's entry "Implement PSR-18 and dropped PHP 5 support #2421 #2474" was linked, and shown first as
    "the commit this changelog entry describes", to 7a30f3b "Small fixes on changelog (#2522)", which only
    reworded its line (the last commit to add it). A commit that only touched the release notes (or, for the
    one that added the line, only docs) is not the change when the entry's numbers name commits: the entry
    links to the commits of #21 and #24, in the order it names them. An entry that names nothing and was
    written by a commit touching only the notes describes no commit."""
    psr = commit(repo, "Implement PSR-18 (#21)", {"src/client.py": "PSR = 18\n"}, when=NOW - 40 * DAY)
    rework = commit(
        repo, "Rework the exceptions for PSR-18 (#24)", {"src/errors.py": "E = 1\n"}, when=NOW - 30 * DAY
    )
    line = "- Implement PSR-18 and dropped PHP 5 support [#21](https://x/pull/21) [#24](https://x/pull/24)\n"
    notes = "# Changelog\n\n## 7.0.0\n\n" + line + "- Dropped the legacy adapter\n"
    prepare = commit(repo, "Prepare 7.0 (#30)", {"CHANGELOG.md": notes}, when=NOW - 20 * DAY)
    fixed = notes.replace("dropped PHP 5", "drop PHP 5").replace("Dropped the", "Drop the")
    tidy = commit(repo, "Small fixes on changelog (#52)", {"CHANGELOG.md": fixed}, when=NOW - 10 * DAY)
    run_cli("-C", str(repo), "sync", "--no-embed")
    with project.load(repo).open_store() as store:
        entries = {n.title: n for n in store.iter_nodes("doc_section") if n.source == "changelog"}
        psr_entry = next(n for title, n in entries.items() if "PSR-18" in title)
        legacy = next(n for title, n in entries.items() if "legacy" in title)
        shas = {
            n.id: n.ref
            for n in store.get_many([dst for _, dst, _ in store.links_from([psr_entry.id])]).values()
        }
        assert set(shas.values()) == {psr, rework}, shas  # not tidy's, nor prepare's
        assert psr_entry.meta["commits"] == [psr, rework]
        # Named nothing, and written by a commit that only touched the notes: no commit it describes.
        assert [dst for _, dst, _ in store.links_from([legacy.id])] == []
        ordered = history.links_of(store, [psr_entry])[psr_entry.id]
        assert [shas[dst] for dst, _ in ordered] == [psr, rework]
    found = query_json(repo, "when was PHP 5 support dropped")
    described = [
        it["ref"] for it in found["items"] if it.get("linked_from") and it.get("relation") == "changelog"
    ]
    assert tidy not in described and prepare not in described, found["items"]


def test_a_release_commit_that_bumps_the_version_is_not_what_an_entry_naming_its_pr_describes(
    repo: Path,
) -> None:
    """bytes: "which release fixed reserve over allocating the underlying buffer" showed the fix (#560), its
    1.2.1 entry, then `chore: prepare bytes v1.2.1 (#561)` as "the commit this changelog entry describes":
    the release commit wrote the entry and bumped Cargo.toml, so the rule for a commit that only touched the
    notes did not drop it. An entry that names its own change by number describes that change, not the
    commit that wrote it; an entry that names none keeps the commit that wrote it (a fix adding its line)."""
    fix = commit(
        repo, "Fix reserve over allocating underlying buffer (#560)", {"src/bytes.rs": "fn reserve() {}\n"}
    )
    other = commit(repo, "Avoid a copy in split_to (#555)", {"src/split.rs": "fn split_to() {}\n"})
    notes = "# 1.2.0 (July 19, 2022)\n\n- Avoid a copy in split_to (#555)\n"
    commit(
        repo,
        "chore: prepare bytes v1.2.0 (#556)",
        {"CHANGELOG.md": notes, "Cargo.toml": 'version = "1.2.0"\n'},
    )
    # The release commit writes its one entry, as bytes' did, and bumps the version.
    notes = "# 1.2.1 (July 30, 2022)\n\n- Fix reserve over allocating underlying buffer (#560)\n\n" + notes
    prepare = commit(
        repo,
        "chore: prepare bytes v1.2.1 (#561)",
        {"CHANGELOG.md": notes, "Cargo.toml": 'version = "1.2.1"\n'},
    )
    own = notes + "- Speed up freeze\n"
    speed = commit(repo, "Speed up freeze", {"src/freeze.rs": "fn freeze() {}\n", "CHANGELOG.md": own})
    run_cli("-C", str(repo), "sync", "--no-embed")
    with project.load(repo).open_store() as store:
        entries = {n.title: n for n in store.iter_nodes("doc_section") if n.source == "changelog"}

        def described(word: str) -> set[str]:
            entry = next(n for title, n in entries.items() if word in title)
            linked = [dst for _, dst, _ in store.links_from([entry.id])]
            return {n.ref for n in store.get_many(linked).values()}

        assert described("reserve") == {fix}  # not prepare's
        assert described("split_to") == {other}
        assert described("freeze") == {speed}
        assert prepare not in described("split_to")


def _tag(repo: Path, name: str, sha: str, when: int) -> None:
    """An annotated tag NAME on SHA made at epoch WHEN (a tag made again years later keeps its old commit)."""
    date = f"@{when} +0000"
    git(repo, "tag", "-a", "-m", name, name, sha, env={"GIT_COMMITTER_DATE": date, "GIT_AUTHOR_DATE": date})


def test_the_previous_release_is_the_highest_lower_version_reached_whenever_it_was_tagged(repo: Path) -> None:
    """moshi: "what changed in 1.13.0" and "what changed since 1.11.0" both said "the 81 commits after 1.11.0
    (git log moshi-parent-1.11.0..moshi-parent-1.13.0)", skipping 1.12.0, whose commit carries two tags:
    `parent-1.12.0` (made then) and `moshi-parent-1.12.0` (made again a minute after 1.13.0's). The previous
    release is the highest lower version whose tag 1.13.0's reaches, whatever its tag's date, its two tags one
    release; "since 1.11.0" is every commit after 1.11.0's tag up to HEAD (1.12.0 and on), and "since" the
    newest release the commits made after it, said so (dateutil's "since 2.9.0" answered "No strong match")."""
    c = [
        commit(repo, f"Adapter: step {n}", {f"a{n}.kt": f"val n = {n}\n"}, when=NOW - (100 - 10 * n) * DAY)
        for n in range(7)
    ]
    _tag(repo, "moshi-parent-1.11.0", c[0], NOW - 100 * DAY)
    _tag(repo, "parent-1.12.0", c[2], NOW - 80 * DAY)
    _tag(repo, "moshi-parent-1.13.0", c[4], NOW - 60 * DAY)
    _tag(repo, "moshi-parent-1.12.0", c[2], NOW - 60 * DAY + 60)  # made again after 1.13.0's
    run_cli("-C", str(repo), "sync", "--no-embed")
    found = query_json(repo, "what changed in 1.13.0")
    assert (
        "release 1.13.0: the 2 commits after 1.12.0 (git log moshi-parent-1.12.0..moshi-parent-1.13.0)"
        in found["notes"]
    ), found["notes"]
    assert [item["ref"] for item in found["items"][:2]] == [c[3], c[4]], found["items"]  # the change, its tag
    since = query_json(repo, "what changed since 1.11.0")
    assert (
        "since 1.11.0: the 6 commits after its tag up to HEAD (git log moshi-parent-1.11.0..HEAD); released"
        " since: 1.12.0, 1.13.0" in since["notes"]
    ), since["notes"]
    assert set([item["ref"] for item in since["items"] if item["kind"] == "git_commit"][:6]) == set(c[1:])
    newest = query_json(repo, "what changed since 1.13.0")
    assert (
        "since 1.13.0: the 2 commits after its tag up to HEAD (git log moshi-parent-1.13.0..HEAD); no release is"
        " tagged after it" in newest["notes"]
    ), newest["notes"]
    assert [item["ref"] for item in newest["items"][:2]] == [c[6], c[5]]
    assert not newest["weak"]


def test_pre_and_post_releases_are_releases_in_their_order(repo: Path) -> None:
    """dateutil: "what changed in 2.9.0.post0" had no range (`git log 2.9.0..2.9.0.post0`: 3 commits), "2.9.0..
    2.9.0.post0" no release note, "what's new in the latest version" answered 2.9.0; moshi's "what changed
    between 1.13.0 and 2.0.0-alpha.1" no release note (505 commits). A pre- or post-release tag is a release
    (PEP 440 and semver order: 2.9.0 < 2.9.0.post0 < 3.0.0-alpha.1 < 3.0.0), its range counted from the
    highest lower version its tag reaches."""
    changelog = "# Changelog\n\n## 2.9.0.post0\n\n- Pinned the build tool\n\n## 2.9.0\n\n- Parser: faster\n"
    v290 = commit(repo, "Parser: faster", {"parser.py": "F = 1\n"}, when=NOW - 50 * DAY)
    git(repo, "tag", "2.9.0", v290)
    pin = commit(repo, "Pin the build tool to <8", {"setup.cfg": "[b]\n"}, when=NOW - 40 * DAY)
    post = commit(repo, "Update news", {"NEWS.md": changelog}, when=NOW - 39 * DAY)
    git(repo, "tag", "2.9.0.post0", post)
    run_cli("-C", str(repo), "sync", "--no-embed")
    for question in (
        "what changed in 2.9.0.post0",
        "2.9.0..2.9.0.post0",
        "what changed between 2.9.0 and 2.9.0.post0",
    ):
        found = query_json(repo, question)
        assert (
            "release 2.9.0.post0: the 2 commits after 2.9.0 (git log 2.9.0..2.9.0.post0)" in found["notes"]
        ), (
            question,
            found["notes"],
        )
        assert pin in [item["ref"] for item in found["items"]]
    latest = query_json(repo, "what's new in the latest version")
    assert "the newest release: 2.9.0.post0 (the highest version tag)" in latest["notes"], latest["notes"]
    alpha = [
        commit(repo, f"Rewrite: part {n}", {f"r{n}.py": "R = 1\n"}, when=NOW - (30 - n) * DAY)
        for n in range(3)
    ]
    git(repo, "tag", "3.0.0-alpha.1", alpha[-1])
    commit(repo, "After the alpha", {"after.py": "A = 1\n"}, when=NOW - 10 * DAY)
    run_cli("-C", str(repo), "sync", "--no-embed")
    for question in (
        "what changed between 2.9.0.post0 and 3.0.0-alpha.1",
        "2.9.0.post0..3.0.0-alpha.1",
        "what's new in 3.0.0-alpha.1",
    ):
        found = query_json(repo, question)
        assert (
            "release 3.0.0-alpha.1: the 3 commits after 2.9.0.post0 (git log 2.9.0.post0..3.0.0-alpha.1)"
            in found["notes"]
        ), (question, found["notes"])
        assert [item["ref"] for item in found["items"][:3]] == alpha[::-1], question
    latest = query_json(repo, "what's new in the latest version")
    assert "the newest release: 3.0.0-alpha.1 (the highest version tag)" in latest["notes"], latest["notes"]


def test_a_release_no_tag_or_heading_names_is_said_unknown_and_weak(repo: Path) -> None:
    """PHPMailer: "what changed in 7.1.2" (no such tag yet) answered with old commits that say "changed", not
    weak, no note. Nothing names such a release: the answer says so, names the newest known, and is weak."""
    first = commit(repo, "Changed the mailer", {"m.php": "<?php 1;\n"}, when=NOW - 30 * DAY)
    git(repo, "tag", "v7.1.0", first)
    git(
        repo,
        "tag",
        "v7.1.1",
        commit(repo, "Changed the transport", {"t.php": "<?php 2;\n"}, when=NOW - 20 * DAY),
    )
    run_cli("-C", str(repo), "sync", "--no-embed")
    found = query_json(repo, "what changed in 7.1.2")
    assert (
        "release 7.1.2: no tag or changelog heading of that release is known (the newest known is 7.1.1)"
        in found["notes"]
    ), found["notes"]
    assert found["weak"]


def test_a_changelog_only_commit_outside_the_range_is_not_listed_under_it(repo: Path) -> None:
    """PHPMailer: "what changed in 7.0.2" listed 06353247 "Changelog" (made after the 7.1.0 tag, rewording
    7.0.2's entries) under "release 7.0.2: the 25 commits after 7.0.1": the commit the entries' last edit
    names. A commit an entry names outside the range that only touched the changelog is left out."""
    changelog = "# Changelog\n\n## Version 7.0.2\n\n- Reduce memory use\n\n## Version 7.0.1\n\n- First\n"
    git(repo, "tag", "v7.0.1", commit(repo, "Start", {"a.php": "<?php 1;\n"}, when=NOW - 40 * DAY))
    fix = commit(repo, "Reduce memory use", {"b.php": "<?php 2;\n"}, when=NOW - 35 * DAY)
    release = commit(repo, "Release 7.0.2", {"CHANGELOG.md": changelog}, when=NOW - 30 * DAY)
    git(repo, "tag", "v7.0.2", release)
    reworded = commit(
        repo,
        "Changelog",
        {"CHANGELOG.md": changelog.replace("memory use", "memory use.")},
        when=NOW - 10 * DAY,
    )
    run_cli("-C", str(repo), "sync", "--no-embed")
    found = query_json(repo, "what changed in 7.0.2")
    refs = [item["ref"] for item in found["items"]]
    assert "release 7.0.2: the 2 commits after 7.0.1 (git log v7.0.1..v7.0.2)" in found["notes"], found[
        "notes"
    ]
    assert fix in refs and reworded not in refs, found["items"]


def test_an_entry_links_to_the_commit_that_first_wrote_its_line_not_a_later_rewording(repo: Path) -> None:
    """PHPMailer's 2009 entry "fixed "SingleTo" property, now works with Sendmail ..." was shown with
    "spelling: sendmail -- the commit this changelog entry describes": 99137647, a 2026 typo fix touching
    only changelog.md, the last commit to add the line's current form (201 of PHPMailer's 471 changelog links
    went to such commits). The line is followed back through the commits that only reworded it to the one
    that first wrote it: the fix that also changed the code. An entry first written by a commit touching only
    the notes, naming nothing, describes no commit at all."""
    commit(repo, "init", {"src/mailer.py": "X = 0\n"}, when=NOW - 50 * DAY)
    notes = "# Changelog\n\n## 5.1\n\n- fixed SingleTo property, now works with Senmail and Qmail\n"
    fix = commit(
        repo,
        "Make SingleTo work for every transport",
        {"src/mailer.py": "X = 1\n", "CHANGELOG.md": notes},
        when=NOW - 40 * DAY,
    )
    notes += "- Dropped the legacy transport adapter\n"
    commit(repo, "Note the adapter removal", {"CHANGELOG.md": notes}, when=NOW - 30 * DAY)
    notes = notes.replace("- fixed SingleTo", "* Fixed `SingleTo`")  # a reformat, then a typo fix
    commit(repo, "Reformat the changelog", {"CHANGELOG.md": notes}, when=NOW - 20 * DAY)
    notes = notes.replace("Senmail", "Sendmail").replace("Dropped the legacy", "Dropped the old")
    typo = commit(repo, "spelling: sendmail", {"CHANGELOG.md": notes}, when=NOW - 10 * DAY)
    run_cli("-C", str(repo), "sync", "--no-embed")
    with project.load(repo).open_store() as store:
        entries = {n.title: n for n in store.iter_nodes("doc_section") if n.source == "changelog"}
        single = next(n for title, n in entries.items() if "SingleTo" in title)
        legacy = next(n for title, n in entries.items() if "adapter" in title)
        linked = store.get_many([dst for _, dst, _ in store.links_from([single.id])])
        assert [n.ref for n in linked.values()] == [fix]
        assert single.meta["commits"] == [fix]
        assert single.ts == (NOW - 40 * DAY) * 1000  # dated by the commit that wrote it
        assert [dst for _, dst, _ in store.links_from([legacy.id])] == []
        assert legacy.meta["commits"] == []
    found = query_json(repo, "SingleTo property fix in 5.1")
    refs = [it["ref"] for it in found["items"]]
    described = [
        it["ref"] for it in found["items"] if it.get("relation") == "changelog" and it.get("linked_from")
    ]
    assert typo not in described and refs[0] == fix, found["items"]  # the change, then its entry


def test_a_news_fragment_gathered_into_the_news_file_links_to_the_commit_that_added_the_fragment(
    repo: Path,
) -> None:
    """dateutil's 2.9.0.post0 entry "Pinned setuptools_scm to <8" was linked to ee6de9d "Update news to
    prepare for release", which moved towncrier's fragment into NEWS and touched nothing else, rather than
    9780d32 "Pin setuptools_scm to <8", which added the fragment with the change."""
    commit(repo, "init", {"pyproject.toml": "scm = 7\n", "NEWS": "Version 2.8.0\n=============\n\n- Old\n"})
    pin = commit(
        repo,
        "Pin setuptools_scm to <8",
        {
            "pyproject.toml": "scm = '<8'\n",
            "changelog.d/1346.bugfix.rst": "Pinned ``setuptools_scm`` to ``<8``.\n",
        },
        when=NOW - 20 * DAY,
    )
    (repo / "changelog.d" / "1346.bugfix.rst").unlink()
    news = "Version 2.9.0.post0\n===================\n\n- Pinned ``setuptools_scm`` to ``<8``.\n\n"
    gathered = commit(
        repo,
        "Update news to prepare for release",
        {"NEWS": news + "Version 2.8.0\n=============\n\n- Old\n", "changelog.d/template.rst": "{{ x }}\n"},
        when=NOW - 10 * DAY,
    )
    run_cli("-C", str(repo), "sync", "--no-embed")
    with project.load(repo).open_store() as store:
        entry = next(n for n in store.iter_nodes("doc_section") if "setuptools_scm" in n.title)
        assert entry.ref.startswith("NEWS#")
        assert entry.meta["commits"] == [pin], (entry.meta, gathered)


def _three_releases(repo: Path) -> dict[str, str]:
    """A history tagged v1.2.0, v1.3.0 and v1.4.0, whose CHANGELOG.md has a section for each, and a change after
    the last tag: the shas by name."""
    changelog = (
        "# Changelog\n\n## 1.4.0 - 2024-05-01\n\n- Proxy: honour NO_PROXY\n\n"
        "## 1.3.0 - 2024-03-01\n\n- Retry timed-out uploads\n- Pool: drop half-closed sockets\n\n"
        "## 1.2.0 - 2024-01-01\n\n- Export to CSV\n"
    )
    shas = {"csv": commit(repo, "Export to CSV", {"export.py": "CSV = 1\n"}, when=NOW - 500 * DAY)}
    shas["v12"] = commit(repo, "Release 1.2.0", {"VERSION": "1.2.0\n"}, when=NOW - 490 * DAY)
    git(repo, "tag", "v1.2.0", shas["v12"])
    shas["retry"] = commit(repo, "Retry timed-out uploads", {"upload.py": "R = 3\n"}, when=NOW - 400 * DAY)
    shas["pool"] = commit(
        repo, "Pool: drop half-closed sockets", {"pool.py": "P = 1\n"}, when=NOW - 390 * DAY
    )
    shas["v13"] = commit(repo, "Release 1.3.0", {"VERSION": "1.3.0\n"}, when=NOW - 380 * DAY)
    git(repo, "tag", "v1.3.0", shas["v13"])
    shas["proxy"] = commit(repo, "Proxy: honour NO_PROXY", {"proxy.py": "N = 1\n"}, when=NOW - 300 * DAY)
    shas["notes"] = commit(repo, "Update changelog", {"CHANGELOG.md": changelog}, when=NOW - 295 * DAY)
    shas["v14"] = commit(repo, "Release 1.4.0", {"VERSION": "1.4.0\n"}, when=NOW - 290 * DAY)
    git(repo, "tag", "v1.4.0", shas["v14"])
    shas["later"] = commit(repo, "Docs: typo", {"README.md": "# R\n"}, when=NOW - 100 * DAY)
    return shas


@pytest.mark.parametrize(
    "question",
    ["what changed between v1.2.0 and v1.4.0", "changes from 1.2.0 to 1.4.0", "1.2.0..1.4.0"],
)
def test_the_changes_across_several_releases_hold_every_releases_entries(repo: Path, question: str) -> None:
    """ "What changed between v1.2.0 and v1.4.0", with 1.3.0 between them, listed the commits of `git log
    v1.2.0..v1.4.0` but only 1.4.0's changelog entries: 1.3.0's were not in the answer. Every release tagged
    in the range has its entries listed, the later one's first (as the changelog lists them), and none of
    1.2.0's; the note names the releases between."""
    shas = _three_releases(repo)
    run_cli("-C", str(repo), "sync", "--no-embed")
    found = query_json(repo, question)
    titles = [item["title"] for item in found["items"]]
    entries = [item["title"] for item in found["items"] if item["kind"] == "doc_section"]
    assert entries[:3] == [
        "CHANGELOG.md — 1.4.0 - 2024-05-01: Proxy: honour NO_PROXY",
        "CHANGELOG.md — 1.3.0 - 2024-03-01: Retry timed-out uploads",
        "CHANGELOG.md — 1.3.0 - 2024-03-01: Pool: drop half-closed sockets",
    ], titles
    assert titles[:3] == entries[:3], titles  # first, before any commit
    refs = [item["ref"] for item in found["items"]]
    # Then the 6 commits of the range (3 changes, newest first, then 1.4.0's commit and the bookkeeping),
    # before anything its words ("1", "2", "0") match: 1.2.0's entry, or a commit made before its tag.
    assert refs[3:6] == [shas["proxy"], shas["pool"], shas["retry"]], titles
    assert set(refs[6:9]) == {shas["v14"], shas["notes"], shas["v13"]}, titles
    assert not any("1.2.0 - 2024" in title for title in titles[:9]), titles
    assert shas["later"] not in refs[:9] and shas["csv"] not in refs[:9], titles
    assert (
        "release 1.4.0: the 6 commits after 1.2.0 (git log v1.2.0..v1.4.0); released between: 1.3.0"
        in found["notes"]
    ), found["notes"]
    assert "first: what releases 1.3.0 to 1.4.0 hold (their changelog, 1.4.0's commit)" in found["notes"], (
        found["notes"]
    )
    assert not found["weak"]


def test_the_changes_between_two_adjacent_releases_and_since_one_are_as_before(repo: Path) -> None:
    """Next to the question across several releases: two adjacent ones, "since", an unknown release."""
    shas = _three_releases(repo)
    run_cli("-C", str(repo), "sync", "--no-embed")
    found = query_json(repo, "what changed between 1.3.0 and 1.4.0")
    entries = [item["title"] for item in found["items"] if item["kind"] == "doc_section"]
    assert entries == ["CHANGELOG.md — 1.4.0 - 2024-05-01: Proxy: honour NO_PROXY"], entries
    assert "release 1.4.0: the 3 commits after 1.3.0 (git log v1.3.0..v1.4.0)" in found["notes"], found[
        "notes"
    ]
    assert "first: what release 1.4.0 holds (its changelog, its commit)" in found["notes"]
    since = query_json(repo, "what changed since 1.2.0")
    assert (
        "since 1.2.0: the 7 commits after its tag up to HEAD (git log v1.2.0..HEAD); released since: 1.3.0, 1.4.0"
        in since["notes"]
    ), since["notes"]
    unknown = query_json(repo, "what changed between 1.2.0 and 1.9.0")
    assert not any(n.startswith("release 1.4.0") for n in unknown["notes"]), unknown["notes"]
    assert unknown["weak"]
    # A pre-release tagged between two releases is a release between them; asked up to it, none is between.
    git(repo, "tag", "v1.4.0-rc.1", shas["proxy"])
    run_cli("-C", str(repo), "sync", "--no-embed")
    found = query_json(repo, "1.3.0..1.4.0")
    assert (
        "release 1.4.0: the 3 commits after 1.3.0 (git log v1.3.0..v1.4.0); released between: 1.4.0-rc.1"
        in found["notes"]
    ), found["notes"]
    rc = query_json(repo, "what changed between 1.3.0 and 1.4.0-rc.1")
    assert "release 1.4.0-rc.1: the 1 commit after 1.3.0 (git log v1.3.0..v1.4.0-rc.1)" in rc["notes"], rc[
        "notes"
    ]
    assert rc["items"][0]["ref"] == shas["proxy"], rc["items"]


@pytest.mark.parametrize(
    ("text", "asked"),
    [
        ("what changed in the first release", True),
        ("what was in the initial release?", True),
        ("first release notes", True),
        ("what did the earliest version bring", True),
        ("what changed since the first release", False),  # what came after it
        ("what was the first commit", False),
        ("when was the first release", False),
        ("does retry work in the first version?", False),  # more than the release
        ("what changed in the last release", False),
    ],
)
def test_a_question_about_the_first_release(text: str, asked: bool) -> None:
    from nexusmem.retrieve.intent import first_release_asked

    assert first_release_asked(text) is asked


def test_the_first_release_lists_the_commits_from_the_start_of_history_to_its_tag(repo: Path) -> None:
    """ "What changed in 0.1.0", the first release (no lower version is tagged), gave its changelog entries and
    its release commit but no commits: there is no previous tag to count from. The commits from the start of
    history up to its tag are listed after its entries, newest first and RANGE_CHANGES at most (as any
    range), with a note; "what changed in the first release" is answered as if it named the lowest version
    tag, said so. The release after it counts from it, as before."""
    changelog = "# Changelog\n\n## 0.2.0\n\n- Proxy support\n\n## 0.1.0\n\n- Export to CSV\n- Retry uploads\n"
    early = [
        commit(repo, f"Exporter: step {n}", {f"e{n}.py": f"N = {n}\n"}, when=NOW - (500 - n) * DAY)
        for n in range(history.RANGE_CHANGES + 5)
    ]
    v01 = commit(
        repo, "Release 0.1.0", {"CHANGELOG.md": changelog.split("## 0.2.0")[0]}, when=NOW - 400 * DAY
    )
    git(repo, "tag", "v0.1.0", v01)
    proxy = commit(repo, "Proxy support", {"proxy.py": "P = 1\n"}, when=NOW - 300 * DAY)
    v02 = commit(repo, "Release 0.2.0", {"CHANGELOG.md": changelog}, when=NOW - 290 * DAY)
    git(repo, "tag", "v0.2.0", v02)
    run_cli("-C", str(repo), "sync", "--no-embed")
    count = len(early) + 1
    for question in ("what changed in 0.1.0", "what's new in v0.1.0", "what changed in the first release"):
        found = query_json(repo, question, "--budget", "8000")
        titles = [item["title"] for item in found["items"]]
        refs = [item["ref"] for item in found["items"]]
        assert titles[:2] == [
            "CHANGELOG.md — 0.1.0: Export to CSV",
            "CHANGELOG.md — 0.1.0: Retry uploads",
        ], titles
        newest = early[::-1][: history.RANGE_CHANGES]
        assert refs[2 : 2 + history.RANGE_CHANGES] == newest, titles
        assert refs[2 + history.RANGE_CHANGES] == v01, titles
        assert proxy not in refs[: 3 + history.RANGE_CHANGES], titles
        assert (
            f"release 0.1.0: the {count} commits from the start of history up to its tag, the first release"
            f" (git log v0.1.0); the newest {history.RANGE_CHANGES} changes listed" in found["notes"]
        ), found["notes"]
        assert not found["weak"]
    first = query_json(repo, "what changed in the first release")
    assert "the first release: 0.1.0 (the lowest version tag)" in first["notes"], first["notes"]
    after = query_json(repo, "what changed in 0.2.0")
    assert "release 0.2.0: the 2 commits after 0.1.0 (git log v0.1.0..v0.2.0)" in after["notes"], after[
        "notes"
    ]
    assert not any("first release" in note for note in after["notes"]), after["notes"]


def test_a_release_after_an_unreached_or_untagged_lower_one_lists_no_history(
    repo: Path, tmp_path: Path
) -> None:
    """A release with a lower version tagged on a branch its tag does not reach, or named by a changelog
    heading with no tag (released before the project tagged), is not a first release: no range is listed
    (the whole history up to it would be no answer)."""
    start = commit(repo, "Start", {"a.py": "A = 1\n"}, when=NOW - 300 * DAY)
    git(repo, "checkout", "-q", "-b", "old")
    git(repo, "tag", "v0.9.0", commit(repo, "Old line", {"b.py": "B = 1\n"}, when=NOW - 250 * DAY))
    git(repo, "checkout", "-q", "main")
    commit(repo, "Rewrite", {"c.py": "C = 1\n"}, when=NOW - 200 * DAY)
    git(repo, "tag", "v1.0.0", commit(repo, "Release 1.0.0", {"V": "1.0.0\n"}, when=NOW - 100 * DAY))
    assert start
    run_cli("-C", str(repo), "sync", "--no-embed")
    found = query_json(repo, "what changed in 1.0.0")
    assert not any(note.startswith("release 1.0.0: the") for note in found["notes"]), found["notes"]
    untagged = init_repo(tmp_path / "untagged")
    commit(untagged, "Start", {"a.py": "A = 1\n"}, when=NOW - 300 * DAY)
    notes = "# Changelog\n\n## [2.0.0] - 2024-02-01\n\n- Rewrite\n\n## [1.9.0] - 2023-01-01\n\n- Old\n"
    git(
        untagged,
        "tag",
        "v2.0.0",
        commit(untagged, "Release 2.0.0", {"CHANGELOG.md": notes}, when=NOW - 9 * DAY),
    )
    run_cli("-C", str(untagged), "sync", "--no-embed")
    found = query_json(untagged, "what changed in 2.0.0")
    assert found["items"][0]["title"] == "CHANGELOG.md — [2.0.0] - 2024-02-01: Rewrite", found["items"]
    assert not any(note.startswith("release 2.0.0: the") for note in found["notes"]), found["notes"]
    first = query_json(untagged, "what changed in the first release")  # the lowest tag, whatever it holds
    assert "the first release: 2.0.0 (the lowest version tag)" in first["notes"], first["notes"]
