"""What an answer about a release says of it: where the release's own items end, the entries' dates, a budget
that cuts them, the range read in version order, sections the changelog misheads, and the notes. Real git
repositories, the real sync and `query` (text and --json)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from nexusmem.retrieve import answer
from nexusmem.retrieve.intent import asks_which_release
from nexusmem.retrieve.pack import estimate_tokens

from helpers import commit, git, query_json, run_cli

DAY = 86_400
NOW = int(time.time())


def _two_releases(repo: Path) -> dict[str, str]:
    """v1.0.0 and v1.1.0, each with a changelog section, and older commits whose words ("changed", "release")
    a question about 1.1.0 matches too: the shas by name."""
    changelog = (
        "# Changelog\n\n## 1.1.0 - 2024-02-01\n\n- Pool: drop half-closed sockets\n\n"
        "## 1.0.0 - 2024-01-01\n\n- First release\n"
    )
    shas: dict[str, str] = {}
    for n in range(4):
        shas[f"old{n}"] = commit(
            repo,
            f"Changed how the release changed ({n})",
            {f"c{n}.py": f"N = {n}\n"},
            when=NOW - (500 - n) * DAY,
        )
    shas["v10"] = commit(repo, "Release 1.0.0", {"VERSION": "1.0.0\n"}, when=NOW - 400 * DAY)
    git(repo, "tag", "v1.0.0", shas["v10"])
    shas["pool"] = commit(
        repo, "Pool: drop half-closed sockets", {"pool.py": "P = 1\n"}, when=NOW - 320 * DAY
    )
    shas["v11"] = commit(repo, "Release 1.1.0", {"CHANGELOG.md": changelog}, when=NOW - 300 * DAY)
    git(repo, "tag", "v1.1.0", shas["v11"])
    return shas


def test_a_releases_items_are_marked_and_the_text_says_where_they_end(repo: Path) -> None:
    """ "What changed in 1.1.0": its entry and the commits of `git log v1.0.0..v1.1.0` carry the relation
    "release" in --json; what the question's words matched besides ("Changed how the release changed")
    follows, unmarked, with scores close to theirs, and the text block prints a line between the two."""
    shas = _two_releases(repo)
    run_cli("-C", str(repo), "sync", "--no-embed")
    found = query_json(repo, "what changed in 1.1.0")
    marks = [(item["ref"], item["relation"]) for item in found["items"]]
    released = [ref for ref, relation in marks if relation == "release"]
    assert len(released) == 3, marks  # the entry, the change, the release commit
    assert {shas["pool"], shas["v11"]} <= set(released), marks
    assert marks[: len(released)] == [(ref, "release") for ref in released], marks  # all first
    tail = marks[len(released) :]
    assert tail and all(relation is None for _, relation in tail), marks
    text = run_cli("-C", str(repo), "query", "--", "what changed in 1.1.0").stdout
    assert answer.RELEASE_END in text, text
    before, after = text.split(answer.RELEASE_END)
    assert "Pool: drop half-closed sockets" in before and "Changed how the release changed" not in before
    assert "Changed how the release changed" in after, text
    # A question about no release has no such line nor mark.
    plain = run_cli("-C", str(repo), "query", "--", "changed how the release changed").stdout
    assert answer.RELEASE_END not in plain
    assert all(item["relation"] is None for item in query_json(repo, "drop half-closed sockets")["items"])


def test_entries_a_release_commit_wrote_are_dated_by_it_not_by_the_files_last_commit(repo: Path) -> None:
    """The changelog's first version wrote 1.0.0's ten entries at once (too many for that commit to be the
    change any of them describes: no link), and a year later a commit added 1.1.0's. The ten were dated by
    the file's last commit, a year too new (and so ranked as fresh changes); each is dated by the commit that
    first wrote its line, while the one added alone keeps its commit's date and link."""
    old = [f"Added the feature number {n}" for n in range(10)]
    first = "# Changelog\n\n## 1.0.0 - 2023-01-01\n\n" + "".join(f"- {line}\n" for line in old)
    wrote = commit(repo, "Add a changelog", {"CHANGELOG.md": first}, when=NOW - 700 * DAY)
    git(repo, "tag", "v1.0.0", wrote)
    later = first.replace("## 1.0.0", "## 1.1.0 - 2024-01-01\n\n- Pool: drop half-closed sockets\n\n## 1.0.0")
    pool = commit(
        repo,
        "Pool: drop half-closed sockets",
        {"CHANGELOG.md": later, "pool.py": "P = 1\n"},
        when=NOW - 300 * DAY,
    )
    commit(
        repo,
        "Changelog: typo",
        {"CHANGELOG.md": later.replace("# Changelog", "# Change log")},
        when=NOW - DAY,
    )
    run_cli("-C", str(repo), "sync", "--no-embed")
    found = query_json(repo, "what changed in 1.0.0")
    dates = {item["title"]: item["ts"][:10] for item in found["items"] if item["kind"] == "doc_section"}
    day = time.strftime("%Y-%m-%d", time.gmtime(NOW - 700 * DAY))
    assert {title: date for title, date in dates.items() if "1.0.0" in title} == {
        f"CHANGELOG.md — 1.0.0 - 2023-01-01: {line}": day for line in old
    }, dates
    newer = query_json(repo, "what changed in 1.1.0")
    entry = next(item for item in newer["items"] if item["kind"] == "doc_section")
    assert entry["ts"][:10] == time.strftime("%Y-%m-%d", time.gmtime(NOW - 300 * DAY)), entry
    assert any(item["ref"] == pool for item in newer["items"])


def test_a_budget_that_cuts_a_releases_entries_says_so_and_starves_no_section(repo: Path) -> None:
    """2.0.0 lists twelve long "Changed" entries, then four "Fixed": under a budget that holds a few, every
    one shown was a "Changed" one and nothing said entries were left out. Each section gets its first entry
    before any gets more, in the file's order, and a note counts what was shown of how many."""
    changed = [
        f"Speed up parsing of the {n}th kind of document by scanning its character runs in bulk instead of one"
        f" character at a time, which made documents with long strings slow to read ([#{100 + n}]"
        f"(https://example.com/o/r/pull/{100 + n}))"
        for n in range(12)
    ]
    fixed = [
        f"Fix the {n}th round-trip bug ([#{200 + n}](https://example.com/o/r/issues/{200 + n}))"
        for n in range(4)
    ]
    changelog = (
        "# Changelog\n\n## [2.0.0] - 2024-03-01\n\n### Changed\n\n"
        + "".join(f"- {line}\n" for line in changed)
        + "\n### Fixed\n\n"
        + "".join(f"- {line}\n" for line in fixed)
        + "\n## [1.0.0] - 2024-01-01\n\n- First release\n"
    )
    v1 = commit(repo, "Release 1.0.0", {"VERSION": "1.0.0\n"}, when=NOW - 300 * DAY)
    git(repo, "tag", "v1.0.0", v1)
    v2 = commit(repo, "Release 2.0.0", {"CHANGELOG.md": changelog}, when=NOW - 200 * DAY)
    git(repo, "tag", "v2.0.0", v2)
    run_cli("-C", str(repo), "sync", "--no-embed")
    found = query_json(repo, "what changed in 2.0.0", "--budget", "900")
    sections = [item["ref"].rsplit(" › ", 1)[-1] for item in found["items"] if item["kind"] == "doc_section"]
    assert "Fixed" in sections and 2 < len(sections) < 16, sections
    assert sections == sorted(sections, key=["Changed", "Fixed"].index), sections  # in the file's order
    assert f"{len(sections)} of 16 changelog entries of the release shown (raise --budget)" in found["notes"]
    assert found["tokens_used"] <= 900
    whole = query_json(repo, "what changed in 2.0.0", "--budget", "8000")
    assert len([item for item in whole["items"] if item["kind"] == "doc_section"]) == 16
    assert not any("changelog entries of the release shown" in note for note in whole["notes"])


def test_a_range_named_newer_first_is_read_in_version_order(repo: Path) -> None:
    """ "What changed between 1.1.0 and 1.0.0" answered 1.0.0's entries alone, with no range: the newer named
    first is the same range as "between 1.0.0 and 1.1.0" (git log v1.0.0..v1.1.0), however it is said."""
    shas = _two_releases(repo)
    run_cli("-C", str(repo), "sync", "--no-embed")
    for question in (
        "what changed between 1.1.0 and 1.0.0",
        "changes from 1.1.0 to 1.0.0",
        "1.1.0..1.0.0",
        "what changed between 1.0.0 and 1.1.0",
    ):
        found = query_json(repo, question)
        assert "release 1.1.0: the 2 commits after 1.0.0 (git log v1.0.0..v1.1.0)" in found["notes"], (
            question,
            found["notes"],
        )
        first = [item["title"] for item in found["items"][:3]]
        assert first[0] == "CHANGELOG.md — 1.1.0 - 2024-02-01: Pool: drop half-closed sockets", first
        assert shas["pool"] in [item["ref"] for item in found["items"][:3]], first


def test_a_category_heading_written_at_a_releases_level_stays_in_that_release(repo: Path) -> None:
    """tomlkit's 0.14.0 has "## Fixed" where "### Fixed" was meant: its entry was stored with no version and
    missing from "what changed in 0.14.0". A heading that only sorts entries (Fixed, Added, Bug Fixes) at a
    release's level is still that release's; a heading that names something else ("## Contributors") is not."""
    changelog = (
        "# Change Log\n\n## [2.0.0] - 2024-03-01\n\n### Added\n\n- Add a dark theme\n\n"
        "## Fixed\n\n- Fixed the boolean() API (#442)\n\n"
        "## [1.0.0] - 2024-01-01\n\n### Added\n\n- First release\n\n"
        "## Contributors\n\n- Thanks to everyone\n"
    )
    v1 = commit(repo, "Release 1.0.0", {"VERSION": "1.0.0\n"}, when=NOW - 300 * DAY)
    git(repo, "tag", "v1.0.0", v1)
    v2 = commit(repo, "Release 2.0.0", {"CHANGELOG.md": changelog}, when=NOW - 200 * DAY)
    git(repo, "tag", "v2.0.0", v2)
    run_cli("-C", str(repo), "sync", "--no-embed")
    found = query_json(repo, "what changed in 2.0.0")
    entries = [
        item["title"]
        for item in found["items"]
        if item["relation"] == "release" and item["kind"] == "doc_section"
    ]
    assert entries == [
        "CHANGELOG.md — [2.0.0] - 2024-03-01 › Added: Add a dark theme",
        "CHANGELOG.md — [2.0.0] - 2024-03-01 › Fixed: Fixed the boolean() API (#442)",
    ], entries
    older = query_json(repo, "what changed in 1.0.0")
    titles = [item["title"] for item in older["items"] if item["relation"] == "release"]
    assert not any("Thanks" in title for title in titles), titles


def test_since_a_release_every_later_release_is_answered_and_one_off_heads_history_is_named(
    repo: Path,
) -> None:
    """ "What changed since 1.0.0" opened with "first: what release 1.1.0 holds", though 1.2.0 came after it
    too: since means up to HEAD, every release's entries, the newest first. A release tagged on a branch HEAD
    does not reach was passed over as "no release is tagged after it"."""
    changelog = (
        "# Changelog\n\n## 1.2.0 - 2024-03-01\n\n- Proxy: honour NO_PROXY\n\n"
        "## 1.1.0 - 2024-02-01\n\n- Pool: drop half-closed sockets\n\n## 1.0.0 - 2024-01-01\n\n- First release\n"
    )
    v10 = commit(repo, "Release 1.0.0", {"VERSION": "1.0.0\n"}, when=NOW - 400 * DAY)
    git(repo, "tag", "v1.0.0", v10)
    v11 = commit(repo, "Release 1.1.0", {"VERSION": "1.1.0\n"}, when=NOW - 300 * DAY)
    git(repo, "tag", "v1.1.0", v11)
    v12 = commit(repo, "Release 1.2.0", {"CHANGELOG.md": changelog}, when=NOW - 200 * DAY)
    git(repo, "tag", "v1.2.0", v12)
    git(repo, "checkout", "-q", "-b", "maint")
    v121 = commit(repo, "Release 1.2.1", {"VERSION": "1.2.1\n"}, when=NOW - 150 * DAY)
    git(repo, "tag", "v1.2.1", v121)
    git(repo, "checkout", "-q", "-")
    commit(repo, "Docs: typo", {"README.md": "# R\n"}, when=NOW - 100 * DAY)
    run_cli("-C", str(repo), "sync", "--no-embed")
    found = query_json(repo, "what changed since 1.0.0")
    assert (
        "first: what the releases since 1.0.0 hold, 1.1.0 to 1.2.0 (their changelog, 1.2.0's commit)"
        in (found["notes"])
    ), found["notes"]
    entries = [item["title"] for item in found["items"] if item["kind"] == "doc_section"]
    assert entries[:2] == [
        "CHANGELOG.md — 1.2.0 - 2024-03-01: Proxy: honour NO_PROXY",
        "CHANGELOG.md — 1.1.0 - 2024-02-01: Pool: drop half-closed sockets",
    ], entries
    newest = query_json(repo, "what changed since 1.2.0")
    said = next(note for note in newest["notes"] if note.startswith("since 1.2.0"))
    assert "no release is tagged after it in HEAD's history" in said, said
    assert f"tagged after it on commits HEAD does not reach: 1.2.1 ({v121[:10]})" in said, said


def test_release_notes_say_what_the_answer_holds_and_what_it_left_out(repo: Path) -> None:
    """A project with no changelog is not told "(its changelog, its commit)"; a range of 23 releases says it
    kept the 21 highest; a version only a changelog heading names says no tag names it (no commit range)."""
    for n in range(24):
        sha = commit(repo, f"Release 1.0.{n}", {"VERSION": f"1.0.{n}\n"}, when=NOW - (400 - n) * DAY)
        git(repo, "tag", f"1.0.{n}", sha)
    run_cli("-C", str(repo), "sync", "--no-embed")
    one = query_json(repo, "what changed in 1.0.5")
    assert "first: what release 1.0.5 holds (no changelog entry, its commit)" in one["notes"], one["notes"]
    span = query_json(repo, "what changed between 1.0.0 and 1.0.23")
    assert (
        "first: what releases 1.0.3 to 1.0.23 hold (no changelog entry, 1.0.23's commit; only the 21 highest"
        " of the 23 releases in the range)" in span["notes"]
    ), span["notes"]
    changelog = "# Changelog\n\n## 1.0.24 - 2024-05-01\n\n- Pool: drop half-closed sockets\n"
    commit(repo, "Write the notes of 1.0.24", {"CHANGELOG.md": changelog}, when=NOW - 300 * DAY)
    run_cli("-C", str(repo), "sync", "--no-embed")
    untagged = query_json(repo, "what changed in 1.0.24")
    assert "first: what release 1.0.24 holds (its changelog)" in untagged["notes"], untagged["notes"]
    assert (
        "release 1.0.24: no tag names it (a changelog heading only), so no commits are counted for it"
        in untagged["notes"]
    ), untagged["notes"]


def test_a_release_whose_entry_only_points_to_its_pre_release_lists_the_pre_releases_entries(
    repo: Path,
) -> None:
    """ "What's new in 7.0?" (coverage.py) answered only "Nothing new beyond 7.0.0b1.": the release's one
    entry points to its pre-release, a release of its own. A note names the pre-release, and its entries
    follow the release's."""
    changelog = (
        "# Changelog\n\n## Version 2.0.0 - 2024-03-01\n\nNothing new beyond 2.0.0b1.\n\n"
        "## Version 2.0.0b1 - 2024-02-01\n\n- Pool: drop half-closed sockets\n\n- Config: read the TOML file\n\n"
        "## Version 1.0.0 - 2024-01-01\n\n- First release\n"
    )
    commit(repo, "Release 1.0.0", {"VERSION": "1.0.0\n"}, when=NOW - 400 * DAY)
    git(repo, "tag", "1.0.0")
    commit(repo, "Pool: drop half-closed sockets", {"pool.py": "P = 1\n"}, when=NOW - 320 * DAY)
    commit(repo, "Release 2.0.0b1", {"VERSION": "2.0.0b1\n"}, when=NOW - 310 * DAY)
    git(repo, "tag", "2.0.0b1")
    commit(repo, "Release 2.0.0", {"CHANGELOG.md": changelog}, when=NOW - 300 * DAY)
    git(repo, "tag", "2.0.0")
    run_cli("-C", str(repo), "sync", "--no-embed")
    found = query_json(repo, "what's new in 2.0?")
    assert (
        "release 2.0: its changelog only points to 2.0.0b1; the entries of 2.0.0b1 follow" in found["notes"]
    ), found["notes"]
    titles = [item["title"] for item in found["items"]]
    assert titles[0].endswith("Nothing new beyond 2.0.0b1."), titles
    assert any("drop half-closed sockets" in t and "2.0.0b1" in t for t in titles[1:3]), titles


def test_a_small_budget_shows_a_releases_first_item_before_its_notes(repo: Path) -> None:
    """ "What changed in 2.0.0" under 80 to 200 tokens printed no item at all: the note counting the release's
    entries ("0 of 16 … shown") and the line after its items were said after packing, in the header, and
    the items gave way to them down to the first. The best item comes first (by its head alone when too
    large), the notes as they fit beside it, the rest on stderr; the count never says 0 when an item is
    shown."""
    changed = [
        f"Speed up parsing of the {n}th kind of document by scanning its character runs in bulk instead of one"
        f" character at a time, which made documents with long strings slow to read ([#{100 + n}]"
        f"(https://example.com/o/r/pull/{100 + n}))"
        for n in range(12)
    ]
    changelog = (
        "# Changelog\n\n## [2.0.0] - 2024-03-01\n\n### Changed\n\n"
        + "".join(f"- {line}\n" for line in changed)
        + "\n## [1.0.0] - 2024-01-01\n\n- First release\n"
    )
    v1 = commit(repo, "Release 1.0.0", {"VERSION": "1.0.0\n"}, when=NOW - 300 * DAY)
    git(repo, "tag", "v1.0.0", v1)
    v2 = commit(repo, "Release 2.0.0", {"CHANGELOG.md": changelog}, when=NOW - 200 * DAY)
    git(repo, "tag", "v2.0.0", v2)
    commit(repo, "Changed the changes of the document parser", {"p.py": "P = 1\n"}, when=NOW - 100 * DAY)
    run_cli("-C", str(repo), "sync", "--no-embed")
    for budget in ("80", "100", "120", "160", "200", "300"):
        found = query_json(repo, "what changed in 2.0.0", "--budget", budget)
        assert found["items"] and found["items"][0]["relation"] == "release", (budget, found)
        assert found["tokens_used"] <= int(budget), (budget, found["tokens_used"])
        shown = run_cli("-C", str(repo), "query", "--budget", budget, "--", "what changed in 2.0.0")
        stdout, stderr = shown.stdout, shown.stderr
        assert "\n- " in stdout and " 0 of " not in stdout + stderr, (budget, stdout, stderr)
        assert stdout.index("\n- ") < len(stdout), stdout
        said = [line for line in stdout.splitlines() if line.startswith("note: ")]
        assert all("changelog entries" not in line or "(raise --budget)" in line for line in said), said
        # Every note is said once: in the header, or on stderr.
        for note in found["notes"]:
            assert (f"note: {note}" in stdout) != (note in stderr), (budget, note, stdout, stderr)


def test_an_answer_with_no_item_says_its_best_match_does_not_fit_beside_it() -> None:
    """tomlkit's "what changed in 0.15.1" at 80 tokens printed no item, the notes "…not in HEAD's history"
    and "first: what release 0.15.1 holds" on stdout, and why it held nothing ("the best match (~136
    tokens) does not fit") on stderr alone. An answer with no item keeps that note in its header (shortened
    when need be), before the others that only say what was done."""
    result = answer.QueryResult(
        query="what changed in 0.15.1",
        budget=80,
        notes=[
            "release 0.15.1: its tag is commit 1bd7e3bc5b, which is not in HEAD's history (memory holds the"
            " commits HEAD reaches)",
            "first: what release 0.15.1 holds (its changelog, its commit)",
            f"{answer.TOO_LARGE_NOTE}136 tokens) does not fit",
        ],
    )
    text = answer.render(result)
    assert "note: the best match does not fit" in text and "not in HEAD's history" in text, text
    assert answer.header_tokens(result) <= 80, text


def _unreached_release(repo: Path) -> None:
    """tomlkit's shape: release 0.15.1's tag is on a branch HEAD does not reach, and the changelog on main
    lists its six long entries (each one's head alone is ~30 tokens)."""
    entries = [
        f"Speed up membership tests (`key in ...`) on `Container`, `Table` and `InlineTable` number {n} with"
        f" native `__contains__` implementations instead of the generic mapping fallback ([#{500 + n}])"
        for n in range(6)
    ]
    changelog = (
        "# Change Log\n\n## [Unreleased]\n\n## [0.15.1] - 2026-07-17\n\n### Changed\n\n"
        + "".join(f"- {line}\n" for line in entries)
        + "\n## [0.15.0] - 2026-06-01\n\n- First release\n"
    )
    v150 = commit(repo, "chore: release 0.15.0", {"VERSION": "0.15.0\n"}, when=NOW - 300 * DAY)
    git(repo, "tag", "0.15.0", v150)
    commit(repo, "Parse dotted keys in inline tables", {"p.py": "P = 1\n"}, when=NOW - 200 * DAY)
    git(repo, "checkout", "-q", "-b", "release", v150)
    v151 = commit(repo, "chore: release 0.15.1", {"VERSION": "0.15.1\n"}, when=NOW - 150 * DAY)
    git(repo, "tag", "0.15.1", v151)
    git(repo, "checkout", "-q", "main")
    commit(repo, "chore: release 0.15..1", {"CHANGELOG.md": changelog}, when=NOW - 100 * DAY)


def test_a_small_budget_shows_the_best_item_of_a_release_whose_tag_head_does_not_reach(repo: Path) -> None:
    """tomlkit's "what changed in 0.15.1" at 80 and 100 tokens showed no item at all: the note that the
    release's tag is not in HEAD's history (kept at any budget) and the head of its first entry (a title of
    160 characters) did not fit together. The best item is still shown, its title cut and the note said in
    fewer words when need be; the answer stays within the budget and still says the tag is not in HEAD's
    history."""
    _unreached_release(repo)
    run_cli("-C", str(repo), "sync", "--no-embed")
    for budget in ("80", "100"):
        found = query_json(repo, "what changed in 0.15.1", "--budget", budget)
        assert found["items"], (budget, found["notes"])
        assert "0.15.1" in found["items"][0]["title"], (budget, found["items"][0])
        assert found["tokens_used"] <= int(budget), (budget, found["tokens_used"])
        shown = run_cli("-C", str(repo), "query", "--budget", budget, "--", "what changed in 0.15.1")
        assert "\n- " in shown.stdout and "[0.15.1]" in shown.stdout, (budget, shown.stdout, shown.stderr)
        header = shown.stdout.split("\n- ", 1)[0]
        assert "not in HEAD's history" in header, (budget, shown.stdout)


def test_no_budget_is_exceeded_down_to_the_smallest_the_cli_and_mcp_accept(repo: Path) -> None:
    """tomlkit's "what changed in 0.15.1" at --budget 50 (and 60) showed no item and said ~55/50 (~65/60)
    tokens: the note that the tag is not in HEAD's history and the line that the best match does not fit
    were both kept in the header, whatever they cost. From the smallest budget up, the answer (its notes
    included) fits: the best item when it fits with the note, else the line saying it does not fit, and
    `tokens_used` never passes the budget, in the CLI's text and --json and in the MCP tool's answer."""
    from nexusmem import mcp_server

    _unreached_release(repo)
    run_cli("-C", str(repo), "sync", "--no-embed")
    question = "what changed in 0.15.1"
    for budget in range(50, 121, 5):
        found = query_json(repo, question, "--budget", str(budget))
        assert found["tokens_used"] <= budget, (budget, found["tokens_used"], found["notes"])
        shown = run_cli("-C", str(repo), "query", "--budget", str(budget), "--", question)
        text = shown.stdout.rstrip("\n")
        assert estimate_tokens(text) <= budget, (budget, text)
        assert text.endswith(f"/{budget} tokens"), text
        used = int(text.rsplit("~", 1)[1].split("/", 1)[0])
        assert used <= budget, (budget, text)
        header = text.split("\n- ", 1)[0]
        if found["items"]:
            assert "[0.15.1]" in text and "not in HEAD's history" in header, (budget, text)
        else:  # nothing fits: one clear line says so
            assert "note: the best match does not fit" in text, (budget, text, shown.stderr)
        tool_answer = mcp_server.run_search(str(repo), question, budget, None)
        structured = tool_answer.structured_content
        assert structured is not None and structured["tokens_used"] <= budget, (budget, structured)
    assert query_json(repo, question, "--budget", "120")["items"], "120 tokens hold the best item's head"


def test_an_answer_with_no_item_under_the_smallest_budget_says_so_in_one_line_within_it() -> None:
    """A binding note too long for the smallest budget even in its fewest words (a long name "is still in
    the code") was kept in the header beside the line that the best match does not fit, past the budget.
    With no item to qualify, the binding note goes beside the answer (stderr, MCP after the footer) and
    the one line saying nothing fits stays: the header and footer fit the budget."""
    name = "ConfigurationLoaderFactoryRegistryWithAVeryLongName"
    result = answer.QueryResult(
        query=f"was {name} removed",
        budget=50,
        notes=[
            f"{name} is still in the code (src/loader.py:12): no change removed it; the last that changed it:"
            " 1bd7e3bc5b",
            f"{answer.TOO_LARGE_NOTE}136 tokens) does not fit",
        ],
        packed=True,
    )
    text = answer.render(result)
    assert "note: the best match does not fit" in text, text
    assert answer.header_tokens(result) <= 50, text
    assert result.notes[0] in answer.left_out(result, text), text


def test_which_release_fixed_it_answers_with_the_changelog_entry_right_after_the_fix(repo: Path) -> None:
    """ "Which release fixed is_unique for a Bytes made from a shared BytesMut?": the fix commit matches the
    question best (its message and patch hold its words), and the changelog entry that names the release is
    next to it at the head of the list, in either order (the entry says the release asked for, the commit
    what changed), where it ranked below other commits about BytesMut (and counted half once its commit
    outranked it). A question that asks no release leaves the entry where it was."""
    for n in range(6):
        commit(
            repo,
            f"BytesMut: shared buffer bookkeeping, part {n}",
            {f"src/shared{n}.rs": f"// shared BytesMut {n}\nfn unique_{n}() {{}}\n"},
            when=NOW - (900 - n) * DAY,
        )
    git(
        repo,
        "tag",
        "v1.6.0",
        commit(repo, "chore: prepare v1.6.0 (#681)", {"VERSION": "1.6.0\n"}, when=NOW - 800 * DAY),
    )
    fix = commit(
        repo,
        "Fix `Bytes::is_unique` when created from shared `BytesMut` (#718)",
        {"src/bytes_mut.rs": "fn is_unique() -> bool { shared_bytesmut_is_unique() }\n"},
        when=NOW - 700 * DAY,
    )
    changelog = (
        "# 1.6.1 (July 13, 2024)\n\nThis release fixes a bug where `Bytes::is_unique` returns incorrect values"
        " when the `Bytes` originates from a shared `BytesMut`. (#718)\n\n"
        "# 1.6.0 (March 22, 2024)\n\n- Add `Bytes::is_unique` (#643)\n"
    )
    git(
        repo,
        "tag",
        "v1.6.1",
        commit(repo, "chore: prepare bytes v1.6.1 (#720)", {"CHANGELOG.md": changelog}, when=NOW - 699 * DAY),
    )
    run_cli("-C", str(repo), "sync", "--no-embed")
    asked = "Which release fixed is_unique giving the wrong answer for a Bytes that came out of a shared BytesMut?"
    items = query_json(repo, asked, "--budget", "4000")["items"]
    refs = [(item["kind"], item["ref"], item["title"]) for item in items]
    head = items[:2]
    assert any(item["ref"] == fix for item in head), refs
    assert any(item["kind"] == "doc_section" and "1.6.1" in item["title"] for item in head), refs


@pytest.mark.parametrize(
    ("text", "asks"),
    [
        ("Which release fixed is_unique?", True),
        ("what version added --since?", True),
        # the project's name between "which" and "version", then the change asked about
        ("Which pry version dropped Rubinius support?", True),
        ("In which helmet release did the options start accepting header names?", True),
        # a platform's version, no change: no release of the project is asked for
        ("which Go version do I need to build it?", False),
        ("What PHP version does it require now?", False),
        ("which bash version is needed for the hints?", False),
    ],
)
def test_a_question_that_asks_for_a_release_by_name(text: str, asks: bool) -> None:
    assert asks_which_release(text) is asks
