"""An upgrade that changes how doc sections and changelog entries are keyed (headings "as a reader sees
them": badges and link targets left out) gives them new ids; the sync that re-keys them must hand each old
node's review verdict, superseded mark and first-recorded time to the one node that replaces it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from nexusmem import project
from nexusmem.sources import changelog, docs

from helpers import commit, query_json, run_cli

# When the old install first recorded everything (2021-01-01, UTC), long before this test runs.
LONG_AGO = 1_609_459_200_000

README = """# Zanzibar

## Usage [![npm](https://img.shields.io/npm/v/zanzibar.svg)](https://npm.im/zanzibar)

Run the zanzibar tool with a quokka config file.

## Install

Install zanzibar with pip.
"""

CHANGELOG = """# Changelog

## [1.2.0](https://github.com/o/zanzibar/compare/v1.1.0...v1.2.0) (2024-03-02)

- Fix the quokka retry loop that never ended (#12)
- Add the wombat flag to the zanzibar tool

## [1.1.0](https://github.com/o/zanzibar/compare/v1.0.0...v1.1.0) (2024-01-02)

- First release of the numbat parser
"""


@contextmanager
def old_keys() -> Iterator[None]:
    """Key headings the way versions before "as a reader sees them" did: with their raw markup (and under
    those versions' cursors, so the next sync reads the files again, as an upgrade's does)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(docs, "heading_text", lambda raw: " ".join(raw.split()))
        mp.setattr(docs, "_CURSOR_VERSION", "docs-old")
        mp.setattr(changelog, "_CURSOR_VERSION", "changelog-old")
        yield


def setup(repo: Path, files: dict[str, str | bytes]) -> None:
    run_cli("-C", str(repo), "init")
    path = repo / ".nexusmem" / "config.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    data["embedding"]["provider"] = "none"
    path.write_text(json.dumps(data), encoding="utf-8")
    commit(repo, "docs: readme and changelog", files)
    with old_keys():
        run_cli("-C", str(repo), "sync", "-q")
    with project.load(repo).open_store() as store, store.transaction():
        store.conn.execute("UPDATE nodes SET created_at = ?", (LONG_AGO,))


def sections(repo: Path) -> list[dict[str, Any]]:
    """id, title, trust, superseded_by and created_at of every doc section."""
    with project.load(repo).open_store(readonly=True) as store:
        return [
            {
                "id": n.id,
                "title": n.title,
                "trust": n.trust,
                "superseded_by": n.superseded_by,
                "created_at": n.created_at,
            }
            for n in store.iter_nodes("doc_section")
        ]


def titled(found: list[dict[str, Any]], *parts: str) -> list[dict[str, Any]]:
    return [v for v in found if all(p in v["title"] for p in parts)]


def only(found: list[dict[str, Any]], *parts: str) -> dict[str, Any]:
    hits = titled(found, *parts)
    assert len(hits) == 1, (parts, [v["title"] for v in found])
    return hits[0]


def show(repo: Path, node_id: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(run_cli("-C", str(repo), "show", node_id, "--json").stdout)
    return data


def test_a_rekeyed_section_and_entry_keep_their_verdicts_marks_and_first_recorded_times(repo: Path) -> None:
    setup(repo, {"README.md": README, "CHANGELOG.md": CHANGELOG})
    before = sections(repo)
    usage = only(before, "README.md", "Usage [![npm]")["id"]
    install = only(before, "README.md", "Install")["id"]
    quokka = only(before, "quokka retry")["id"]
    wombat = only(before, "wombat flag")["id"]
    numbat = only(before, "numbat parser")["id"]
    run_cli("-C", str(repo), "review", usage, "--verify")
    run_cli("-C", str(repo), "review", numbat, "--reject")
    run_cli("-C", str(repo), "mark-stale", quokka, "--supersedes", wombat)  # both re-keyed
    run_cli("-C", str(repo), "mark-stale", install, "--supersedes", usage)  # Install keeps its key

    summary = json.loads(run_cli("-C", str(repo), "sync", "--json").output)
    removed = {s["name"]: s["removed"] for s in summary["sources"]}
    assert removed["docs"] == 1 and removed["changelog"] == 3  # the re-keying is real

    after = sections(repo)
    new_usage = only(after, "README.md", "› Usage")
    new_quokka = only(after, "quokka retry")
    new_wombat = only(after, "wombat flag")
    new_numbat = only(after, "numbat parser")
    assert {usage, quokka, wombat, numbat}.isdisjoint(v["id"] for v in after)
    assert only(after, "README.md", "Install")["id"] == install
    assert new_usage["trust"] == "verified"
    assert new_numbat["trust"] == "rejected"
    assert new_quokka["superseded_by"] == new_wombat["id"]  # the mark follows its target too
    assert only(after, "README.md", "Install")["superseded_by"] == new_usage["id"]
    assert new_wombat["trust"] == "candidate" and new_wombat["superseded_by"] is None
    assert {v["created_at"] for v in after} == {LONG_AGO}
    with project.load(repo).open_store(readonly=True) as store:
        assert store.verdicts() and all(store.get(by) for _, _, by in store.verdicts() if by)

    shown = show(repo, new_usage["id"])
    assert shown["trust"] == "verified" and shown["created_at"].startswith("2021-01-01")
    assert show(repo, new_quokka["id"])["superseded_by"] == new_wombat["id"]
    # --as-of reads the first-recorded time: the re-keyed sections were recorded in 2021.
    items = query_json(repo, "zanzibar quokka config", "--as-of", "2021-06-01")["items"]
    assert {it["id"]: it["trust"] for it in items}.get(new_usage["id"]) == "verified"
    entries = query_json(repo, "numbat parser release", "--as-of", "2021-06-01")["items"]
    assert {it["id"]: it["trust"] for it in entries}.get(new_numbat["id"]) == "rejected"


TWINS_README = """# Zanzibar

## Linux [![ci](https://ci.example/linux.svg)](https://ci.example)

Zanzibar runs on any Linux.

### Example [![try](https://try.example/b.svg)](https://try.example)

Run zanzibar --fast.

## macOS [![ci](https://ci.example/mac.svg)](https://ci.example)

Zanzibar runs on macOS 13 and later.

### Example [![try](https://try.example/b.svg)](https://try.example)

Run zanzibar --fast.
"""

TWINS_CHANGELOG = """# Changelog

## [1.1.0](https://github.com/o/zanzibar/compare/v1.0.0...v1.1.0)

- Bump the dependencies

## [1.0.0](https://github.com/o/zanzibar/releases/v1.0.0)

- Bump the dependencies
"""


def test_nothing_is_carried_when_two_sections_could_be_the_heir(repo: Path) -> None:
    setup(repo, {"README.md": TWINS_README, "CHANGELOG.md": TWINS_CHANGELOG})
    before = sections(repo)
    twins = [v["id"] for v in titled(before, "Example [![try]")]
    bump = [v["id"] for v in titled(before, "Bump the dependencies")]
    assert len(twins) == 2 and len(bump) == 2
    run_cli("-C", str(repo), "review", twins[0], "--verify")
    run_cli("-C", str(repo), "review", bump[0], "--reject")
    run_cli("-C", str(repo), "mark-stale", bump[1], "--supersedes", twins[1])

    summary = json.loads(run_cli("-C", str(repo), "sync", "--json").stdout)
    removed = {s["name"]: s["removed"] for s in summary["sources"]}
    assert removed["docs"] == 4 and removed["changelog"] == 2  # every heading here is re-keyed
    # The verdicts no heir could take are said to be dropped, not dropped silently.
    notes = {s["name"]: s["notes"] for s in summary["sources"]}
    assert notes["docs"] == ["1 reviewed node(s) no longer in the docs: their verdicts were dropped"]
    assert notes["changelog"] == ["2 reviewed node(s) no longer in the docs: their verdicts were dropped"]

    after = sections(repo)
    examples = titled(after, "› Example")
    bumps = titled(after, "Bump the dependencies")
    assert len(examples) == 2 and len(bumps) == 2
    # Two sections of one file with the same text: neither is known to be the verified one's heir.
    assert {v["trust"] for v in after} == {"candidate"}
    assert {v["superseded_by"] for v in after} == {None}
    # What carried nothing is first recorded by this sync.
    assert all(v["created_at"] > LONG_AGO for v in examples + bumps)
    # The sections with a text of their own (Linux, macOS: re-keyed too) still carry theirs.
    platforms = [v for v in after if v not in examples + bumps]
    assert len(platforms) == 2 and {v["created_at"] for v in platforms} == {LONG_AGO}


def test_a_rebuild_right_after_the_upgrade_keeps_them_too(repo: Path) -> None:
    setup(repo, {"README.md": README, "CHANGELOG.md": CHANGELOG})
    before = sections(repo)
    usage = only(before, "README.md", "Usage [![npm]")["id"]
    install = only(before, "README.md", "Install")["id"]
    quokka = only(before, "quokka retry")["id"]
    wombat = only(before, "wombat flag")["id"]
    numbat = only(before, "numbat parser")["id"]
    run_cli("-C", str(repo), "review", usage, "--verify")
    run_cli("-C", str(repo), "review", numbat, "--reject")
    run_cli("-C", str(repo), "mark-stale", quokka, "--supersedes", wombat)  # both re-keyed
    run_cli("-C", str(repo), "mark-stale", install, "--supersedes", usage)  # Install keeps its key

    run_cli("-C", str(repo), "sync", "--rebuild", "-q")  # the first sync after the upgrade

    after = sections(repo)
    new_usage = only(after, "README.md", "› Usage")
    new_quokka = only(after, "quokka retry")
    new_wombat = only(after, "wombat flag")
    assert {usage, quokka, wombat, numbat}.isdisjoint(v["id"] for v in after)  # the re-keying is real
    assert new_usage["trust"] == "verified"
    assert only(after, "numbat parser")["trust"] == "rejected"
    assert new_quokka["superseded_by"] == new_wombat["id"]
    assert only(after, "README.md", "Install")["superseded_by"] == new_usage["id"]
    assert new_wombat["trust"] == "candidate" and new_wombat["superseded_by"] is None
    assert {v["created_at"] for v in after} == {LONG_AGO}
    assert show(repo, new_quokka["id"])["superseded_by"] == new_wombat["id"]
    items = query_json(repo, "zanzibar quokka config", "--as-of", "2021-06-01")["items"]
    assert {it["id"]: it["trust"] for it in items}.get(new_usage["id"]) == "verified"


def test_a_rebuild_carries_nothing_when_two_sections_could_be_the_heir(repo: Path) -> None:
    setup(repo, {"README.md": TWINS_README, "CHANGELOG.md": TWINS_CHANGELOG})
    before = sections(repo)
    twins = [v["id"] for v in titled(before, "Example [![try]")]
    linux = only([v for v in before if "Example" not in v["title"]], "Linux [![ci]")["id"]
    run_cli("-C", str(repo), "review", twins[0], "--verify")
    run_cli("-C", str(repo), "review", linux, "--verify")

    run_cli("-C", str(repo), "sync", "--rebuild", "-q")

    after = sections(repo)
    assert {v["trust"] for v in titled(after, "› Example")} == {"candidate"}
    linux_after = [v for v in after if v["title"] == "README.md — Linux"]
    assert len(linux_after) == 1 and linux_after[0]["trust"] == "verified"  # a text of its own: carried


# An RST changelog as releases before the labels above a title opened its section cut it: the label of the
# next release (`.. _changes_1-0:`) ended the entry above it; and an RST page whose license comment before
# its first title was a section of its own (a "preamble").
RST_CHANGES = """Change history
==============

.. _changes_1-3:

Version 1.3 — 2024-05-02
------------------------

Only packaging metadata changes.

.. _changes_1-2:

Version 1.2 — 2024-04-02
------------------------

Only packaging metadata changes.

.. _changes_1-1:

Version 1.1 — 2024-03-02
------------------------

The quokka cache no longer leaks file handles when a wombat plugin raises.

.. _changes_1-0:

Version 1.0 — 2024-01-02
------------------------

First release of the numbat parser.
"""

RST_API = """.. Licensed under the Apache License: http://www.apache.org/licenses/LICENSE-2.0
.. For details: https://example.org/zanzibar/NOTICE.txt

API reference
=============

Call zanzibar.run() with a quokka config.
"""


@contextmanager
def old_cuts() -> Iterator[None]:
    """Cut RST files the way releases before schema 18 did: a label above a title stays at the end of the
    section before it, and anything before the first title is a section (under those releases' cursors,
    so the next sync reads the files again, as an upgrade's does)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(docs, "_labels_above", lambda body, floor: len(body))
        mp.setattr(docs, "rst_prose", lambda lines: any(line.strip() for line in lines))
        mp.setattr(docs, "_CURSOR_VERSION", "docs-old")
        mp.setattr(changelog, "_CURSOR_VERSION", "changelog-old")
        yield


@pytest.mark.parametrize("first_sync", [["sync"], ["sync", "--rebuild"]], ids=["sync", "rebuild"])
def test_an_entry_that_lost_a_trailing_label_keeps_its_verdict_and_a_dropped_one_is_said(
    repo: Path, first_sync: list[str]
) -> None:
    run_cli("-C", str(repo), "init")
    path = repo / ".nexusmem" / "config.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    data["embedding"]["provider"] = "none"
    path.write_text(json.dumps(data), encoding="utf-8")
    commit(repo, "docs: changes and api", {"CHANGES.rst": RST_CHANGES, "doc/api.rst": RST_API})
    with old_cuts():
        run_cli("-C", str(repo), "sync", "-q")
    before = sections(repo)
    quokka = only(before, "quokka cache")
    preamble = only(before, "doc/api.rst — api.rst")
    api = only(before, "API reference")
    packaging = only(before, "1.2 — 2024-04-02", "packaging metadata")  # 1.3 says the same words
    run_cli("-C", str(repo), "review", quokka["id"], "--verify")
    run_cli("-C", str(repo), "review", packaging["id"], "--reject")
    run_cli("-C", str(repo), "review", preamble["id"], "--reject")
    run_cli("-C", str(repo), "review", api["id"], "--verify")
    with project.load(repo).open_store(readonly=True) as store:
        held = store.get(quokka["id"])
        assert held is not None and held.body.endswith(".. _changes_1-0:")  # the old cut

    said = run_cli("-C", str(repo), *first_sync).output  # the first sync after the upgrade

    after = sections(repo)
    new_quokka = only(after, "quokka cache")
    assert new_quokka["id"] != quokka["id"]  # the re-keying is real: the entry's text lost the label
    assert show(repo, new_quokka["id"])["trust"] == "verified"
    assert only(after, "API reference")["trust"] == "verified"  # its id never moved
    # Words two releases share: the verdict follows the entry of its own release.
    assert only(after, "1.2 — 2024-04-02", "packaging metadata")["trust"] == "rejected"
    assert only(after, "1.3 — 2024-05-02", "packaging metadata")["trust"] == "candidate"
    assert not titled(after, "doc/api.rst — api.rst")  # the preamble is no section any more...
    # ... and its verdict is not dropped silently.
    assert "1 reviewed node(s) no longer in the docs: their verdicts were dropped" in said
    again = run_cli("-C", str(repo), "sync").output
    assert "no longer in the docs" not in again
