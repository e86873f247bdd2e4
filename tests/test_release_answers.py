"""What an answer about a release says of it: where the release's own items end, the entries' dates, a budget
that cuts them, the range read in version order, sections the changelog misheads, and the notes. Real git
repositories, the real sync and `query` (text and --json)."""

from __future__ import annotations

import time
from pathlib import Path

from nexusmem.retrieve import query

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
    assert query.RELEASE_END in text, text
    before, after = text.split(query.RELEASE_END)
    assert "Pool: drop half-closed sockets" in before and "Changed how the release changed" not in before
    assert "Changed how the release changed" in after, text
    # A question about no release has no such line nor mark.
    plain = run_cli("-C", str(repo), "query", "--", "changed how the release changed").stdout
    assert query.RELEASE_END not in plain
    assert all(item["relation"] is None for item in query_json(repo, "drop half-closed sockets")["items"])
